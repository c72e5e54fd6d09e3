/* @hot-params: HOT_KNAME HOT_CODES HOT_TILE_M HOT_TILE_N HOT_TILE_K HOT_WARPS_M HOT_WARPS_N HOT_STAGES HOT_SEGS */
/* gemm_wgmma.cu — INT8 warpgroup GEMM for sm_90a (wgmma.mma_async m64nNk32 .s32.s8.s8, both
 * operands from shared memory) with the fused HOT dequantization epilogue (CONTRACT.md 3.5, 4.6, 7).
 *
 * Same contract as templates/gemm_int.cu — entry point and arguments (the last one, seg_kpad,
 * included), "TN" operands (A: M x Kpad, B: N x Kpad, int8, K contiguous), C =
 * HOT_MUL(HOT_I2F(acc), factor(m)) with the device-side alpha, or with HOT_SEGS = 1 the
 * segmented sum of CONTRACT 14 (C = v_0, then C = HOT_ADD(C, v_j) in segment order, v_j =
 * HOT_MUL(HOT_I2F(acc_j), c_j), c_j from alpha_a[j], alpha_b[j]; row_scale NULL, not read), any
 * M and N, writes only inside M x N — so the runtime, the CPU twin (gemm_ref.c) and the bits are
 * the same; only the tensor-core path differs. Integer products and int32 sums are
 * exact (wrap-around, no .satfinite), so the order of the wgmma K steps cannot change a bit.
 *
 * ==== Design note ===============================================================================
 *
 * Parameters (the planner's hot_gemm_plan, path wgmma_s8; static_asserts enforce them, those the
 * two sm_90a GEMMs share in hot_sm90.inl.cuh; stand-alone defaults in hot_sm90_params.cuh):
 *   HOT_CODES 0 (int8 codes only: Hopper has no INT4 tensor cores)
 *   HOT_TILE_K 128 (one 128-byte K slab per stage: the 128B-swizzle atom)
 *   HOT_TILE_M 64 or 128: HOT_TILE_M / 64 warpgroups, warpgroup g owns rows 64g .. 64g+63
 *   HOT_TILE_N 64, 128 or 256: the N of every wgmma (HOT_TILE_N / 2 int32 accumulators per thread)
 *   HOT_WARPS_M = HOT_TILE_M / 16, HOT_WARPS_N = 1 (so 32 * WARPS_M * WARPS_N = 128 per warpgroup:
 *   the launch geometry formula is gemm_int.cu's); 3 <= HOT_STAGES <= 8.
 *   HOT_SEGS 0 (one int32 sum over K; seg_kpad not read) or 1 (segmented: seg_kpad > 0,
 *   seg_kpad % 128 == 0, Kpad % seg_kpad == 0; Kpad == 0 writes C = 0 * c_0; alpha_a, alpha_b
 *   hold Kpad / seg_kpad floats each; C is read back, so nothing else may touch its M x N window
 *   during the launch).
 *
 * Launch geometry: grid = (ceil(N / HOT_TILE_N), ceil(M / HOT_TILE_M), 1); block = HOT_THREADS =
 * 128 * HOT_TILE_M / 64; dynamic shared memory HOT_SMEM_BYTES = HOT_STAGES * (HOT_TILE_M +
 * HOT_TILE_N) * 128 + 1024 (the 1024 lets the kernel align its stages to 1024 bytes, which the
 * 128B swizzle needs, whatever alignment the dynamic window gets). E.g. 128x128, 4 stages:
 * 132096; 128x256, 4 stages: 197632 (above 48 KiB: the runtime raises the attribute).
 *
 * Shared layout (PTX ISA "Shared Memory Matrix Layout", K-major, 128-byte swizzle): a stage is
 * [A: HOT_TILE_M rows][B: HOT_TILE_N rows], 128 bytes per row, rows at a 128-byte pitch; the
 * 16-byte chunk c of row r lies at chunk c ^ (r & 7) of its row. Every stage, and inside it the
 * A tile of each warpgroup (64 rows = 8 KiB) and the B tile, starts on a 1024-byte boundary, so
 * the hardware's swizzle (address bits [7, 10) XORed into [4, 7)) is exactly this pattern.
 * Descriptor of the k-th 32-byte K step of an operand tile at shared address t: start address
 * t + 32k, SBO = 1024 (8 rows x 128 bytes to the next 8-row group), LBO unused for swizzled
 * K-major layouts (1), base offset 0, layout type 1 (128B swizzle).
 *
 * Accumulators (m64nNk32 .s32): register i of lane l in warp q of the warpgroup holds row
 * 16q + l/4 + 8((i/2) % 2), column 8(i/4) + 2(l % 4) + (i % 2) of the warpgroup's 64 x N tile.
 *
 * Pipeline: every thread loads (16-byte cp.async.cg, zero-fill past M/N, one commit group per K
 * tile, LEAD = HOT_STAGES - 2 tiles ahead) and every warpgroup computes. Per K tile kt:
 *   1. cp.async.wait_group(LEAD - 1): this thread's copies of tile kt have landed;
 *   2. fence.proxy.async.shared::cta: they become visible to the async proxy (wgmma reads
 *      shared memory through it; a barrier alone does not order generic writes before it);
 *   3. __syncthreads(): every thread's part of tile kt is there, and every warpgroup has passed
 *      the wgmma.wait_group(1) of tile kt-1, i.e. its wgmmas of tile kt-2 are complete;
 *   4. prefetch tile kt + LEAD into the stage of tile kt + LEAD - HOT_STAGES = kt - 2 (free by 3);
 *   5. wgmma.fence; 4 wgmmas (K steps of 32 bytes); commit; wgmma.wait_group(1) (one group in
 *      flight across the next iteration's barrier).
 * Stages in use at once: kt-1 (wgmma in flight), kt, and LEAD loads = HOT_STAGES.
 * After the loop wgmma.wait_group(0), then the epilogue reads the accumulators; an empty asm
 * with the accumulators as "+r" operands after each wait keeps the compiler from moving their
 * reads above it.
 *
 * Segments (HOT_SEGS = 1): segment j is K tiles [j*S, (j+1)*S), S = seg_kpad / 128. After step 5
 * of a segment's last K tile (when more tiles follow): 6. wgmma.wait_group(0) (and the register
 * fence): the segment's wgmmas are complete and the accumulators hold its int32 sums; 7. each
 * thread stores HOT_MUL(HOT_I2F(acc), c_j) into C (j = 0) or adds it to what it stored there
 * before (j > 0; hot_store_or_add_pair) and zeroes the accumulators, which the next tile's
 * wgmma.fence orders before its wgmmas. The loads of the next LEAD tiles stay in flight across
 * the boundary (step 4 already issued them); the wait only drains this warpgroup's wgmmas.
 * The last segment is converted after the loop, where HOT_SEGS = 0 converts its one sum. No
 * extra register arrays: the running sum lives in C.
 * =============================================================================================
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_gemm_wgmma
#endif

#include "hot_sm90_params.cuh" /* the other parameters' stand-alone defaults */
#include "hot_math.cuh"
#include "hot_gemm.cuh"

#define HOT_WGS (HOT_TILE_M / 64)
#define HOT_THREADS (128 * HOT_WGS)
#define HOT_KB 128
#define HOT_A_BYTES (HOT_TILE_M * HOT_KB)
#define HOT_STAGE_BYTES ((HOT_TILE_M + HOT_TILE_N) * HOT_KB)
#define HOT_SMEM_BYTES (HOT_STAGES * HOT_STAGE_BYTES + 1024)
#define HOT_NREG (HOT_TILE_N / 2)
#define HOT_RSTEP (HOT_THREADS / 8) /* rows one pass of the loader covers (8 chunks per row) */
#define HOT_LEAD (HOT_STAGES - 2)

#define HOT_WG_PATH "wgmma path" /* the shared rules' messages (hot_sm90.inl.cuh) */

static_assert(HOT_STAGES >= 3 && HOT_STAGES <= 8, "wgmma path: HOT_STAGES must be in [3, 8]");
static_assert(HOT_RSTEP % 8 == 0 && HOT_TILE_M % HOT_RSTEP == 0 && HOT_TILE_N % HOT_RSTEP == 0,
              "loader rows");

/* ---- PTX wrappers ------------------------------------------------------------------------- */

/* Orders this thread's earlier generic-proxy writes to shared memory (cp.async included) before
 * later async-proxy reads (wgmma operands). */
static __device__ __forceinline__ void hot_fence_proxy_async(void) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

#include "hot_sm90.inl.cuh"

/* ---- loader --------------------------------------------------------------------------------- */

/* Per-thread loader constants: chunk c0 = tid % 8 of rows r0 + i * HOT_RSTEP (so the swizzled
 * chunk c0 ^ (r & 7) is the same for all its rows, HOT_RSTEP being a multiple of 8). */
struct hot_wg_loader {
  const signed char *a_row, *b_row; /* row r0 of the block's A / B tiles, chunk c0 */
  long long pitch;                  /* Kpad bytes */
  unsigned dst;                     /* shared offset of (row r0, swizzled chunk) in a tile */
  int a_left, b_left;               /* M - m0 - r0, N - n0 - r0: row r0 + x is real iff x < left */
  int ktiles;
};

/* ROWS rows of K tile kt from src (row r0) into the tile at shared address tile. Rows past the
 * matrix are zero-filled (src-size 0) with the address of the block's first row (`fallback`,
 * always real: m0 < M, n0 < N), so nothing outside the operand is ever addressed. */
template <int ROWS>
static __device__ __forceinline__ void hot_wg_load(const hot_wg_loader &x, unsigned tile,
                                                   const signed char *src, const signed char *fallback,
                                                   int left, long long koff) {
#pragma unroll
  for (int i = 0; i < ROWS / HOT_RSTEP; ++i) {
    const bool ok = i * HOT_RSTEP < left;
    const signed char *p = ok ? src + (long long)(i * HOT_RSTEP) * x.pitch + koff : fallback + koff;
    hot_cp_async16(tile + x.dst + (unsigned)(i * HOT_RSTEP * HOT_KB), p, ok ? 16 : 0);
  }
}

/* K tile kt into the stage at shared address st (nothing for kt >= ktiles; the caller still
 * commits, keeping one group per tile). */
static __device__ __forceinline__ void hot_wg_load_tile(const hot_wg_loader &x, const signed char *a0,
                                                        const signed char *b0, unsigned st, int kt) {
  if (kt >= x.ktiles) return;
  const long long koff = (long long)kt * HOT_KB;
  hot_wg_load<HOT_TILE_M>(x, st, x.a_row, a0, x.a_left, koff);
  hot_wg_load<HOT_TILE_N>(x, st + HOT_A_BYTES, x.b_row, b0, x.b_left, koff);
}

/* HOT_SEGS = 1, after the wgmmas of K tile kt were committed: when kt ends a segment (kt + 1 ==
 * seg_end) and more tiles follow, waits for them, C (+)= acc * c_seg, acc = 0, and the next
 * segment begins; the last segment is converted after the loop. Only seg_end is kept across the
 * K loop: the rest is recomputed here from the arguments and the thread's index. */
static __device__ __forceinline__ void hot_wg_seg_boundary(int (&acc)[HOT_NREG], int kt,
                                                           int ktiles, int &seg_end, float *C,
                                                           const float *alpha_a,
                                                           const float *alpha_b, float alpha_div,
                                                           int M, int N, int ldc, int seg_kpad) {
  if (kt + 1 != seg_end || kt + 1 >= ktiles) return;
  hot_wgmma_wait<0>();
  hot_acc_fence(acc);
  const int seg_tiles = seg_kpad / HOT_KB, seg = seg_end / seg_tiles - 1;
  const float c = hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  const int tid = hot_tid_opaque(), lane = tid & 31, warp = tid >> 5;
  const int mb = (int)blockIdx.y * HOT_TILE_M + (warp >> 2) * 64 + (warp & 3) * 16;
  hot_wg_seg_flush(acc, seg_end, seg_tiles, seg, c, C, mb, (int)blockIdx.x * HOT_TILE_N, lane, M, N,
                   ldc, vec);
}

extern "C" __global__ void __launch_bounds__(HOT_THREADS, 1)
    HOT_KNAME(const signed char *__restrict__ A, const signed char *__restrict__ B,
              float *__restrict__ C, const float *__restrict__ row_scale,
              const float *__restrict__ alpha_a, const float *__restrict__ alpha_b,
              float alpha_div, int M, int N, int Kpad, int ldc, int seg_kpad) {
  extern __shared__ __align__(1024) unsigned char hot_smem[];

  const int tid = (int)threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int wg = warp >> 2, wq = warp & 3;
  const int m0 = (int)blockIdx.y * HOT_TILE_M;
  const int n0 = (int)blockIdx.x * HOT_TILE_N;
  const unsigned smem = (hot_smem_u32(hot_smem) + 1023u) & ~1023u;
  const unsigned smem_end = smem + HOT_STAGES * HOT_STAGE_BYTES;

  hot_wg_loader x;
  const int r0 = tid >> 3, c0 = tid & 7;
  x.pitch = (long long)Kpad;
  const signed char *a0 = A + (long long)m0 * x.pitch + c0 * 16; /* first row: always real */
  const signed char *b0 = B + (long long)n0 * x.pitch + c0 * 16;
  x.a_row = a0 + (long long)r0 * x.pitch;
  x.b_row = b0 + (long long)r0 * x.pitch;
  x.dst = (unsigned)(r0 * HOT_KB + ((c0 ^ (r0 & 7)) << 4));
  x.a_left = M - m0 - r0;
  x.b_left = N - n0 - r0;
  x.ktiles = Kpad / HOT_KB;

  int acc[HOT_NREG];
#pragma unroll
  for (int i = 0; i < HOT_NREG; ++i) acc[i] = 0;

  /* prologue: tiles 0 .. LEAD-1, one group each */
#pragma unroll
  for (int s = 0; s < HOT_LEAD; ++s) {
    hot_wg_load_tile(x, a0, b0, smem + s * HOT_STAGE_BYTES, s);
    hot_cp_async_commit();
  }
  unsigned rd = smem, wr = smem + HOT_LEAD * HOT_STAGE_BYTES;
  /* HOT_SEGS = 1: the current segment ends with K tile seg_end - 1 (seg_kpad / 128 K tiles a
   * segment); HOT_SEGS = 0 never reads seg_kpad (every branch on it is dead code) */
  int seg_end = HOT_SEGS ? seg_kpad / HOT_KB : 0;
  for (int kt = 0; kt < x.ktiles; ++kt) {
    hot_cp_async_wait<HOT_LEAD - 1>();
    hot_fence_proxy_async();
    __syncthreads();
    hot_wg_load_tile(x, a0, b0, wr, kt + HOT_LEAD);
    hot_cp_async_commit();
    wr = wr + HOT_STAGE_BYTES == smem_end ? smem : wr + HOT_STAGE_BYTES;
    const unsigned ta = rd + wg * 64 * HOT_KB, tb = rd + HOT_A_BYTES;
    hot_wg_mma_slab(acc, ta, tb);
    hot_wgmma_wait<1>();
    rd = rd + HOT_STAGE_BYTES == smem_end ? smem : rd + HOT_STAGE_BYTES;
    if (HOT_SEGS)
      hot_wg_seg_boundary(acc, kt, x.ktiles, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc,
                          seg_kpad);
  }
  hot_wgmma_wait<0>();
  hot_acc_fence(acc);
  hot_cp_async_wait<0>(); /* only empty groups can remain; keep the exit clean */

  /* ---- epilogue: C = HOT_MUL(HOT_I2F(acc), factor(row)), never fused (gemm_int.cu's;
   * HOT_SEGS = 1: the last segment's v added to C) -------------------------------------------- */
  const int seg = HOT_SEGS && seg_kpad >= HOT_KB ? seg_end / (seg_kpad / HOT_KB) - 1 : 0;
  const float alpha =
      HOT_SEGS ? hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div)
               : hot_epilogue_alpha(alpha_a, alpha_b, alpha_div);
  const int g = lane >> 2, t = lane & 3;
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  hot_wg_epilogue(acc, C, HOT_SEGS ? nullptr : row_scale, alpha, m0 + wg * 64 + wq * 16, n0, g, t,
                  M, N, ldc, vec, HOT_SEGS && seg > 0);
}

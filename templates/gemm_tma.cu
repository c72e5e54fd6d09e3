/* @hot-params: HOT_KNAME HOT_CODES HOT_TILE_M HOT_TILE_N HOT_TILE_K HOT_WARPS_M HOT_WARPS_N HOT_STAGES HOT_SEGS */
/* gemm_tma.cu — INT8 warpgroup GEMM for sm_90a with TMA operand loads, warp specialisation and a
 * persistent tile schedule; the fused HOT dequantization epilogue of CONTRACT.md 3.5, 4.6, 7, 14.
 *
 * Same contract as templates/gemm_wgmma.cu — the first twelve entry-point arguments (A, B, C,
 * row_scale, alpha_a, alpha_b, alpha_div, M, N, Kpad, ldc, seg_kpad), "TN" int8 operands (A:
 * M x Kpad, B: N x Kpad, K contiguous), C = HOT_MUL(HOT_I2F(acc), factor(m)), or with HOT_SEGS = 1
 * the segmented sum of CONTRACT 14, any M and N, writes only inside M x N — and the same bits
 * (int32 sums wrap, no .satfinite: the order of the K steps cannot change a bit; the epilogue is
 * hot_gemm.cuh's). What differs is how the operands arrive and how the work is scheduled. Two
 * more arguments follow seg_kpad: the tensor maps of A and B (`const __grid_constant__`, 128 bytes
 * each, encoded on the host with cuTensorMapEncodeTiled); A and B themselves are not read.
 *
 * ==== Design note ===============================================================================
 *
 * Parameters (static_asserts enforce them, those the two sm_90a GEMMs share in hot_sm90.inl.cuh;
 * the same set as gemm_wgmma.cu's, with the same stand-alone defaults, hot_sm90_params.cuh):
 *   HOT_CODES 0; HOT_TILE_K 128 (one 128-byte K slab per stage: the 128B-swizzle atom width);
 *   HOT_TILE_M 64 or 128 (HOT_WGS = HOT_TILE_M / 64 consumer warpgroups, consumer c owns rows
 *   64c .. 64c+63 of the tile); HOT_TILE_N 64, 128 or 256 (the N of every wgmma: HOT_TILE_N / 2
 *   int32 accumulators a thread); HOT_WARPS_M = HOT_TILE_M / 16 consumer warps, HOT_WARPS_N = 1;
 *   2 <= HOT_STAGES <= 8 with the shared memory within the 227 KiB an sm_90 block may opt in to
 *   (128x256 tiles: at most 4 stages). HOT_SEGS 0 or 1 as in gemm_wgmma.cu (segments of
 *   seg_kpad codes, seg_kpad % 128 == 0, Kpad % seg_kpad == 0; C is read back).
 *
 * Launch geometry: block = HOT_THREADS = 128 * (HOT_WGS + 1) (one producer warpgroup, then the
 * consumers); grid = (min(tiles, SMs), 1, 1) with tiles = ceil(M / HOT_TILE_M) * ceil(N /
 * HOT_TILE_N) (any grid of 1 .. tiles CTAs is correct; more than tiles is also correct, the extra
 * CTAs find no tile); dynamic shared memory HOT_SMEM_BYTES = HOT_STAGES * (HOT_TILE_M +
 * HOT_TILE_N) * 128 + 1024 + 128 (the 1024 aligns the stages to the 128B-swizzle repeat, the 128
 * hold the mbarriers). E.g. 128x128, 4 stages: 132224; 128x256, 4 stages: 197760.
 *
 * Tensor maps (the host encodes them; HOT_TMA_* below are the values it must use): rank 2,
 * CU_TENSOR_MAP_DATA_TYPE_UINT8 (HOT_TMA_DTYPE; int8 bits copied unchanged), globalDim = {Kpad,
 * rows} (rows = M for A, N for B), globalStrides = {Kpad} bytes (Kpad % 128 == 0, so a multiple
 * of 16), boxDim = {128, HOT_TILE_M} for A and {128, HOT_TILE_N} for B, elementStrides = {1, 1},
 * CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B (HOT_TMA_SWIZZLE), L2 promotion 256B,
 * CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: rows past M or N arrive as zeros, so no operand padding
 * beyond Kpad is needed. Kpad == 0 issues no load, but a map must still be valid: the host then
 * encodes any valid placeholder (e.g. globalDim {16, 1} over a 16-byte buffer).
 *
 * Shared layout: [stage 0] .. [stage HOT_STAGES-1] [full barriers][empty barriers]. A stage is
 * [A: HOT_TILE_M rows][B: HOT_TILE_N rows], 128 bytes a row, 1024-aligned, and every operand box
 * (A: 8 or 16 KiB, B: 8, 16 or 32 KiB) starts on a 1024-byte boundary, so the TMA's 128-byte
 * swizzle (16-byte chunk c of row r lands at chunk c ^ (r & 7)) is exactly the pattern the wgmma
 * descriptors read (K-major, 128B swizzle, start t + 32k for K step k, SBO 1024, LBO 1 (unused),
 * base offset 0), as in gemm_wgmma.cu. Accumulator layout: gemm_wgmma.cu's (register i of lane l
 * in warp q of a consumer warpgroup: row 16q + l/4 + 8((i/2) % 2), column 8(i/4) + 2(l%4) + i%2).
 *
 * Roles: warpgroup 0 is the producer: it gives registers back (setmaxnreg.dec to
 * HOT_REG_PRODUCER = 40), and one thread (thread 0) issues every TMA load; the rest of it exits.
 * Warpgroups 1 .. HOT_WGS are the consumers (setmaxnreg.inc to HOT_REG_CONSUMER = 232): they
 * issue the wgmmas and run the epilogue. (setmaxnreg only with two consumers: ptxas pins a
 * setmaxnreg kernel's count to the launch bound, 168 at 384 threads, and 128 * (40 + 2 * 232)
 * = 384 * 168; 256 threads start at 240+ registers, more than one consumer needs.) Both walk the same tile sequence (tile = blockIdx.x, then +=
 * gridDim.x) and the same ring of stages (stage s, parity ph: ph flips each time s wraps).
 * Tiles are numbered in groups of HOT_GROUP_M tile rows (tile t -> tile row first + (t % width)
 * % rows, tile column (t % width) / rows, width = HOT_GROUP_M * tiles_n): the CTAs in flight at
 * once share a few A and B panels in L2.
 *
 * Barrier protocol (mbarrier objects in shared memory, initialised by thread 0 before a
 * __syncthreads, fence.mbarrier_init between them):
 *   full[s]  count 1: the producer's arrive.expect_tx(STAGE_BYTES) + the TMA's complete_tx of the
 *            two boxes (their full size, zero-filled rows included) complete a phase: stage s holds
 *            its K tile. Consumers wait on it with parity ph.
 *   empty[s] count 4 * HOT_WGS: lane 0 of every consumer warp arrives once its warp's
 *            wgmma.wait_group has retired the wgmmas that read stage s. The producer waits on it
 *            with parity ph ^ 1 before refilling stage s (in the first round the phase "before
 *            phase 0" counts as complete, so it does not wait).
 *   Consumer per K tile: wait full[s]; wgmma.fence; 4 wgmmas (K steps of 32 bytes); commit;
 *   wgmma.wait_group(1) — so the previous K tile's group is complete, this one may still run
 *   (two groups in flight between a commit and the next wait) — then release the previous
 *   tile's stage (empty arrive). At a tile end (and a segment end): wgmma.wait_group(0), release
 *   the last stage, convert the accumulators (an empty asm with them as "+r" operands keeps the
 *   compiler from reading them earlier). The producer never waits for the epilogue: it loads the
 *   next tile's first stages while the consumers store.
 * Segments (HOT_SEGS = 1): as gemm_wgmma.cu: at the end of a segment that is not the last one,
 * wait_group(0), release the stage, store (segment 0) or add (later) HOT_MUL(HOT_I2F(acc), c_j)
 * into C, zero the accumulators; the last segment is converted after the K loop.
 *
 * Mutants tools/tma-emu.sh builds from this file, each of which the emulator must catch:
 *   no expect_tx (a plain arrive): the full phase completes before the bytes land (stale
 *     operands), or the complete_tx of the late bytes leaves a phase that never completes;
 *   consumer waits with the wrong parity: it passes a phase not yet filled (stale operands);
 *   producer's first empty wait with parity 0: that phase never completes (deadlock, reported);
 *   stage released right after commit (before wgmma.wait_group retired its wgmmas): a TMA
 *     overwrites the stage under an in-flight wgmma;
 *   producer a stage ahead (loads issued before its empty wait): the same overwrite;
 *   tensor map without swizzle (HOT_TMA_SWIZZLE 0) under the 128B-swizzle descriptors: wrong
 *     operand bytes;
 *   no wgmma.wait_group(0) before the epilogue; accumulators not zeroed at a segment end; the
 *     empty barrier counting one consumer warp too few.
 * =============================================================================================
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_gemm_tma
#endif

#include "hot_sm90_params.cuh" /* the other parameters' stand-alone defaults */
#include "hot_math.cuh"
#include "hot_gemm.cuh"

#define HOT_WGS (HOT_TILE_M / 64)
#define HOT_THREADS (128 * (HOT_WGS + 1))
#define HOT_KB 128
#define HOT_A_BYTES (HOT_TILE_M * HOT_KB)
#define HOT_STAGE_BYTES ((HOT_TILE_M + HOT_TILE_N) * HOT_KB)
#define HOT_SMEM_BYTES (HOT_STAGES * HOT_STAGE_BYTES + 1024 + 128)
#define HOT_NREG (HOT_TILE_N / 2)
#define HOT_GROUP_M 8
/* consumer warps arriving on an empty barrier per phase */
#define HOT_EMPTY_COUNT (4 * HOT_WGS)
/* registers a thread after setmaxnreg (two consumer warpgroups only: 384 threads start with the
 * 168 that __launch_bounds__ allows; 128 * (40 + 2 * 232) = 384 * 168 = 64512). One consumer
 * warpgroup (256 threads) starts with what it needs and does not use setmaxnreg. */
#define HOT_REG_PRODUCER 40
#define HOT_REG_CONSUMER 232
/* cuTensorMapEncodeTiled values the host must use for both maps (cuda.h's enumerators) */
#define HOT_TMA_DTYPE 0       /* CU_TENSOR_MAP_DATA_TYPE_UINT8 */
#define HOT_TMA_INTERLEAVE 0  /* CU_TENSOR_MAP_INTERLEAVE_NONE */
#define HOT_TMA_SWIZZLE 3     /* CU_TENSOR_MAP_SWIZZLE_128B: the descriptors' layout type 1 */
#define HOT_TMA_L2_PROMO 3    /* CU_TENSOR_MAP_L2_PROMOTION_L2_256B */
#define HOT_TMA_OOB_FILL 0    /* CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros */
#define HOT_TMA_BOX_K HOT_KB  /* boxDim[0]; boxDim[1] = HOT_TILE_M (A), HOT_TILE_N (B) */

#define HOT_WG_PATH "tma path" /* the shared rules' messages (hot_sm90.inl.cuh) */

static_assert(HOT_STAGES >= 2 && HOT_STAGES <= 8, "tma path: HOT_STAGES must be in [2, 8]");
static_assert(HOT_SMEM_BYTES <= 232448, "tma path: stages exceed the 227 KiB of an sm_90 block");
static_assert(HOT_WGS == 1 || 128 * (HOT_REG_PRODUCER + HOT_WGS * HOT_REG_CONSUMER) <= 65536,
              "setmaxnreg: the consumers ask for more registers than the block holds");
static_assert(HOT_TILE_M <= 256 && HOT_TILE_N <= 256, "a TMA box has at most 256 rows");

/* The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned (cuda.h: CU_TENSOR_MAP_NUM_QWORDS
 * 16). Programs here include no toolkit header, so the kernel spells it itself; only its address
 * is used, as the tensor operand of cp.async.bulk.tensor and prefetch.tensormap. */
struct __align__(64) hot_tensor_map {
  unsigned long long opaque[16];
};
static_assert(sizeof(hot_tensor_map) == 128, "CUtensorMap is 128 bytes");

/* ---- PTX wrappers ------------------------------------------------------------------------- */

/* mbarrier.init: a fresh barrier at shared address bar expecting `count` arrivals a phase. */
static __device__ __forceinline__ void hot_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* Makes the initialised barriers visible to the other threads and to the async proxy (the TMA
 * unit signals them) once followed by a barrier of the block. */
static __device__ __forceinline__ void hot_fence_mbar_init(void) {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* One arrival on bar, announcing `bytes` more transaction bytes for the current phase. */
static __device__ __forceinline__ void hot_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

/* One arrival on bar. */
static __device__ __forceinline__ void hot_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* Waits until the phase of bar with parity `parity` has completed (try_wait in a loop; the
 * label is local to the braces, so every inlined copy has its own). */
static __device__ __forceinline__ void hot_mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nhot_wait:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra hot_wait;\n}\n" ::"r"(bar),
               "r"(parity)
               : "memory");
}

/* TMA: the box at coordinates {k, row} of the tensor map at `map` (a kernel parameter) into
 * shared memory at dst; its bytes are counted on bar (complete_tx) when they have landed. */
static __device__ __forceinline__ void hot_tma_load_2d(unsigned dst, const void *map, int k,
                                                       int row, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
               "l"(map), "r"(k), "r"(row), "r"(bar)
               : "memory");
}

/* Fetches a tensor map into the descriptor cache ahead of its first use. */
static __device__ __forceinline__ void hot_tma_prefetch_map(const void *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

/* setmaxnreg: the executing warpgroup's per-thread register maximum down / up to N (every warp
 * of the warpgroup executes the same one). */
template <int N>
static __device__ __forceinline__ void hot_setmaxnreg_dec(void) {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
static __device__ __forceinline__ void hot_setmaxnreg_inc(void) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

#include "hot_sm90.inl.cuh"

/* ---- schedule, barriers, segment ends ------------------------------------------------------- */

/* Shared addresses of full[s] and empty[s] (bars = the first barrier, after the stages). */
static __device__ __forceinline__ unsigned hot_full(unsigned bars, int s) {
  return bars + 8u * (unsigned)s;
}
static __device__ __forceinline__ unsigned hot_empty(unsigned bars, int s) {
  return bars + 8u * (unsigned)(HOT_STAGES + s);
}

/* Tile t of the grouped order -> its first output row m0 and column n0. */
static __device__ __forceinline__ void hot_tma_tile(long long t, int tiles_m, int tiles_n, int &m0,
                                                    int &n0) {
  const long long width = (long long)HOT_GROUP_M * tiles_n;
  const int first = (int)(t / width) * HOT_GROUP_M;
  const int rows = tiles_m - first < HOT_GROUP_M ? tiles_m - first : HOT_GROUP_M;
  const int r = (int)(t % width);
  m0 = (first + r % rows) * HOT_TILE_M;
  n0 = (r / rows) * HOT_TILE_N;
}

/* A consumer warp gives stage s back: lane 0 arrives once the warp's wgmma.wait_group has
 * retired the wgmmas that read it (the wait is warp-synchronous, so all lanes have passed it). */
static __device__ __forceinline__ void hot_tma_release(unsigned bars, int s, int lane) {
  if (lane == 0) hot_mbar_arrive(hot_empty(bars, s));
}

/* HOT_SEGS = 1, after the wgmmas of K tile kt were committed and the previous stage released:
 * when kt ends a segment and more tiles follow, waits for the wgmmas, releases their stage
 * (pend = -1 afterwards), C (+)= acc * c_seg, acc = 0, and the next segment begins. */
static __device__ __forceinline__ void hot_tma_seg_boundary(
    int (&acc)[HOT_NREG], int kt, int ktiles, int &seg_end, int &pend, unsigned bars, float *C,
    const float *alpha_a, const float *alpha_b, float alpha_div, int m0, int n0, int M, int N,
    int ldc, int seg_kpad) {
  if (kt + 1 != seg_end || kt + 1 >= ktiles) return;
  hot_wgmma_wait<0>();
  hot_acc_fence(acc);
  const int tid = hot_tid_opaque(), lane = tid & 31, warp = tid >> 5;
  hot_tma_release(bars, pend, lane);
  pend = -1;
  const int seg_tiles = seg_kpad / HOT_KB, seg = seg_end / seg_tiles - 1;
  const float c = hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  const int mb = m0 + ((warp >> 2) - 1) * 64 + (warp & 3) * 16;
  hot_wg_seg_flush(acc, seg_end, seg_tiles, seg, c, C, mb, n0, lane, M, N, ldc, vec);
}

extern "C" __global__ void __launch_bounds__(HOT_THREADS, 1)
    HOT_KNAME(const signed char *__restrict__ A, const signed char *__restrict__ B,
              float *__restrict__ C, const float *__restrict__ row_scale,
              const float *__restrict__ alpha_a, const float *__restrict__ alpha_b,
              float alpha_div, int M, int N, int Kpad, int ldc, int seg_kpad,
              const __grid_constant__ hot_tensor_map tmap_a,
              const __grid_constant__ hot_tensor_map tmap_b) {
  extern __shared__ __align__(1024) unsigned char hot_smem[];
  (void)A; /* the operands arrive through the tensor maps */
  (void)B;

  const int tid = (int)threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const unsigned smem = (hot_smem_u32(hot_smem) + 1023u) & ~1023u;
  const unsigned bars = smem + HOT_STAGES * HOT_STAGE_BYTES;
  const int tiles_m = (M + HOT_TILE_M - 1) / HOT_TILE_M, tiles_n = (N + HOT_TILE_N - 1) / HOT_TILE_N;
  const long long tiles = (long long)tiles_m * tiles_n;
  const int ktiles = Kpad / HOT_KB;

  if (tid == 0) {
    for (int s = 0; s < HOT_STAGES; ++s) {
      hot_mbar_init(hot_full(bars, s), 1);
      hot_mbar_init(hot_empty(bars, s), HOT_EMPTY_COUNT);
    }
    hot_fence_mbar_init();
  }
  __syncthreads();

  if (wg == 0) {
    /* ---- producer warpgroup: thread 0 issues the TMA loads, the others leave ---------------- */
    if (HOT_WGS > 1) hot_setmaxnreg_dec<HOT_REG_PRODUCER>();
    if (tid != 0) return;
    if (ktiles > 0) {
      hot_tma_prefetch_map(&tmap_a);
      hot_tma_prefetch_map(&tmap_b);
    }
    int s = 0;
    unsigned ph = 0;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
      int m0, n0;
      hot_tma_tile(t, tiles_m, tiles_n, m0, n0);
      for (int kt = 0; kt < ktiles; ++kt) {
        hot_mbar_wait(hot_empty(bars, s), ph ^ 1u);
        const unsigned st = smem + (unsigned)s * HOT_STAGE_BYTES;
        hot_mbar_arrive_expect_tx(hot_full(bars, s), HOT_STAGE_BYTES);
        hot_tma_load_2d(st, &tmap_a, kt * HOT_KB, m0, hot_full(bars, s));
        hot_tma_load_2d(st + HOT_A_BYTES, &tmap_b, kt * HOT_KB, n0, hot_full(bars, s));
        if (++s == HOT_STAGES) {
          s = 0;
          ph ^= 1u;
        }
      }
    }
    return;
  }

  /* ---- consumer warpgroups: wgmma on the stages, then the epilogue from the registers ------- */
  if (HOT_WGS > 1) hot_setmaxnreg_inc<HOT_REG_CONSUMER>();
  const int cw = wg - 1, wq = warp & 3;
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  int acc[HOT_NREG];
  int s = 0;
  unsigned ph = 0;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    int m0, n0;
    hot_tma_tile(t, tiles_m, tiles_n, m0, n0);
#pragma unroll
    for (int i = 0; i < HOT_NREG; ++i) acc[i] = 0;
    int pend = -1; /* the stage whose wgmmas may still run (not released yet), or -1 */
    /* HOT_SEGS = 1: the current segment ends with K tile seg_end - 1; HOT_SEGS = 0 never reads
     * seg_kpad (every branch on it is dead code) */
    int seg_end = HOT_SEGS ? seg_kpad / HOT_KB : 0;
    for (int kt = 0; kt < ktiles; ++kt) {
      hot_mbar_wait(hot_full(bars, s), ph);
      const unsigned st = smem + (unsigned)s * HOT_STAGE_BYTES;
      const unsigned ta = st + (unsigned)(cw * 64 * HOT_KB), tb = st + HOT_A_BYTES;
      hot_wg_mma_slab(acc, ta, tb);
      hot_wgmma_wait<1>();
      if (pend >= 0) hot_tma_release(bars, pend, lane);
      pend = s;
      if (++s == HOT_STAGES) {
        s = 0;
        ph ^= 1u;
      }
      if (HOT_SEGS)
        hot_tma_seg_boundary(acc, kt, ktiles, seg_end, pend, bars, C, alpha_a, alpha_b, alpha_div,
                             m0, n0, M, N, ldc, seg_kpad);
    }
    hot_wgmma_wait<0>();
    hot_acc_fence(acc);
    if (pend >= 0) hot_tma_release(bars, pend, lane);

    /* epilogue (hot_sm90.inl.cuh's; HOT_SEGS = 1: the last segment's v added to C) */
    const int seg = HOT_SEGS && seg_kpad >= HOT_KB ? seg_end / (seg_kpad / HOT_KB) - 1 : 0;
    const float alpha =
        HOT_SEGS ? hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div)
                 : hot_epilogue_alpha(alpha_a, alpha_b, alpha_div);
    hot_wg_epilogue(acc, C, HOT_SEGS ? nullptr : row_scale, alpha, m0 + cw * 64 + wq * 16, n0,
                     lane >> 2, lane & 3, M, N, ldc, vec, HOT_SEGS && seg > 0);
  }
}

/* @hot-params: HOT_KNAME HOT_CODES HOT_TILE_M HOT_TILE_N HOT_TILE_K HOT_WARPS_M HOT_WARPS_N HOT_STAGES HOT_SEGS */
/* gemm_int.cu — integer tensor-core GEMM with the fused HOT dequantization epilogue
 * (CONTRACT.md sections 3.5, 4.6 and 7).
 *
 * HOT_SEGS = 0 (one int32 sum over all of K):
 *   C[m*ldc + n] = HOT_MUL(HOT_I2F(acc[m][n]), factor(m)),   acc[m][n] = sum_k A[m][k] * B[n][k]
 *   factor(m)    = row_scale ? HOT_MUL(row_scale[m], alpha) : alpha
 *   alpha        = HOT_DIV(HOT_MUL(*alpha_a, alpha_b ? *alpha_b : 1.0f), alpha_div)
 * HOT_SEGS = 1 (segmented: the g_w GEMM of HLA scale groups, CONTRACT 9 and 14): K is cut into
 * G = Kpad / seg_kpad segments of seg_kpad codes; segment j has its own int32 sum and factor:
 *   acc_j[m][n] = sum over k in [j*seg_kpad, (j+1)*seg_kpad) of A[m][k] * B[n][k]
 *   c_j         = HOT_DIV(HOT_MUL(alpha_a[j], alpha_b ? alpha_b[j] : 1.0f), alpha_div)
 *   v_j         = HOT_MUL(HOT_I2F(acc_j[m][n]), c_j)
 *   C[m*ldc + n] = v_0, then C = HOT_ADD(C, v_j) for j = 1 .. G-1 in segment order
 * (row_scale must be NULL: it is not read).
 *
 * Entry:
 *   HOT_KNAME (const signed char *A, const signed char *B, float *C, const float *row_scale,
 *             const float *alpha_a, const float *alpha_b, float alpha_div, int M, int N,
 *             int Kpad, int ldc, int seg_kpad)
 * seg_kpad: the codes of one K segment (HOT_SEGS = 1); HOT_SEGS = 0 ignores it (the runtime
 * passes Kpad).
 * alpha is computed on the device (once per thread, from two device words), so the scales
 * written by the operand kernels never travel through the host:
 *   HQ  (CONTRACT 14): row_scale = s_g (T floats), alpha_a = &s_w,  alpha_b = NULL,  div = b
 *        -> alpha = (s_w * 1.0f) / b = s_w / b = c_w exactly (x * 1.0f == x in IEEE);
 *   HLA (CONTRACT 14): row_scale = NULL, alpha_a = &s_g^, alpha_b = &s_x^, div = p
 *        -> alpha = (s_g^ * s_x^) / p = c;
 *   HLA with scale groups (HOT_SEGS = 1): row_scale = NULL, alpha_a = s_g^, alpha_b = s_x^
 *        (hla.groups floats each), div = p, seg_kpad = the group's padded K (group_k_pad)
 *        -> c_j = (s_g^[j] * s_x^[j]) / p.
 * int32 accumulation (exact while |acc| < 2^31). Integer products are exact and the epilogue is
 * single-rounding fp32 operations in the twin's order, so every arch and tile configuration
 * gives the same bits as the CPU twin.
 *
 * ==== Design note (what the planner and the runtime must respect) ===========================
 *
 * Operands ("TN", i.e. mma .row.col): A is M x Kpad, B is N x Kpad, both row-major with K
 * contiguous. HOT_CODES = 0: one signed byte per code, row pitch Kpad bytes. HOT_CODES = 1:
 * packed two's-complement nibbles, element 2j in the low nibble of byte j, row pitch Kpad/2
 * bytes. The kernel works in BYTES of K throughout: one mma consumes 32 bytes of K per row
 * (m16n8k32 .s8 = 32 codes, m16n8k64 .s4 = 64 codes), and the fragment byte layouts of the two
 * instructions are identical (see "Fragment layouts" below).
 *
 * Constraints on the arguments (not checked at run time):
 *  - Kpad % HOT_TILE_K == 0 and Kpad >= 0 (Kpad == 0 writes C = 0 * factor); codes in
 *    [Kreal, Kpad) are zero (the planner zero-fills);
 *  - A and B 16-byte aligned (cudaMalloc gives 256); the row pitch is then a multiple of 16
 *    bytes because HOT_TILE_K bytes are a multiple of 32;
 *  - M, N >= 0 arbitrary: rows past M (A) or N (B) are zero-filled in shared memory, never read;
 *    C is written only for m < M, n < N; ldc >= N. float2 stores are used when ldc is even and
 *    C is 8-byte aligned, scalar stores otherwise;
 *  - row_scale: NULL or M floats; alpha_a: one float (never NULL); alpha_b: NULL or one float;
 *    alpha_div: a power of two (b or p), so the division is exact unless it underflows;
 *  - grid.y = ceil(M / HOT_TILE_M) <= 65535;
 *  - HOT_SEGS = 1: seg_kpad > 0, seg_kpad % HOT_TILE_K == 0, Kpad % seg_kpad == 0 (G segments;
 *    Kpad == 0 writes C = 0 * c_0); row_scale == NULL; alpha_a and alpha_b (never NULL here)
 *    hold G floats each. C is both written and read back: no other thread or kernel may touch
 *    C's M x N window during the launch (ldc >= N keeps the rows apart).
 *
 * Launch geometry:
 *   grid  = (ceil(N / HOT_TILE_N), ceil(M / HOT_TILE_M), 1)   x over N tiles, y over M tiles
 *   block = (HOT_THREADS, 1, 1),  HOT_THREADS = 32 * HOT_WARPS_M * HOT_WARPS_N
 *   dynamic shared memory (bytes), no padding (the layout is XOR-swizzled):
 *     HOT_SMEM_BYTES = HOT_STAGES * (HOT_TILE_M + HOT_TILE_N) * KB,
 *     KB = HOT_TILE_K (HOT_CODES = 0) or HOT_TILE_K / 2 (HOT_CODES = 1)   [bytes of K per row]
 *   e.g. 128x128x64 s8 (or 128x128x128 s4), 3 stages: 49152; 4 stages: 65536;
 *        64x64x64 s8 4 stages: 32768. Above 48 KiB the runtime must raise
 *        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES before the launch.
 *
 * Legal parameters (static_asserts below enforce them):
 *   HOT_CODES 0 or 1; KB in {32, 64, 96, 128, 256} bytes, i.e. HOT_TILE_K in {32, 64, 96, 128, 256}
 *   for s8 and {64, 128, 192, 256, 512} for s4; HOT_TILE_M % (16 * HOT_WARPS_M) == 0;
 *   HOT_TILE_N % (8 * HOT_WARPS_N) == 0; 1 <= HOT_WARPS_M * HOT_WARPS_N <= 8 (threads <= 256);
 *   2 <= HOT_STAGES <= 8. This covers every tile the planner accepts (tile_k = 1..4 mma K steps).
 *   tools/check-templates.sh compiles a spread of them for sm_80/86/89/90 (no spills allowed);
 *   tools/gemm-emu.sh runs them in a CPU emulator of the PTX instructions against a reference.
 *   Registers: 64x64 warp tiles (e.g. 128x128 with 2x2 warps) take ~240 (2 blocks of 4 warps
 *   per SM), 64x32 warp tiles (128x128, 2x4) ~140. __launch_bounds__(threads, 1) is deliberate:
 *   without the explicit 1, ptxas for sm_90 caps 256-thread blocks at 128 registers and spills.
 *
 * Block/warp mapping: warp w (0 .. WARPS_M*WARPS_N-1) owns the warp tile of rows
 * (w / WARPS_N) * WM ... + WM-1 and columns (w % WARPS_N) * WN ... + WN-1 of the block tile,
 * WM = TILE_M / WARPS_M, WN = TILE_N / WARPS_N; it holds MI x NI accumulator fragments of
 * 16 x 8 (MI = WM / 16, NI = WN / 8).
 *
 * Pipeline: HOT_STAGES shared-memory stages filled by 16-byte cp.async.cg (L2 only, zero-fill
 * for rows past M/N via src-size 0), one commit group per K tile, cp.async.wait_group
 * (STAGES-2) + one __syncthreads per K tile; ldmatrix fragments double-buffered in registers
 * (the fragments of the next 32-byte K step, also across the K-tile boundary, are loaded
 * before the mma of the current one).
 *
 * Segments (HOT_SEGS = 1): segment j is K tiles [j*S, (j+1)*S), S = seg_kpad / HOT_TILE_K. After
 * the mmas of a segment's last K tile (the tile step has already issued the prefetch and loaded
 * the next tile's first fragments: the pipeline runs on across the boundary untouched), each
 * thread converts its own accumulators with c_j, stores them into C (j = 0) or adds them to what
 * it stored there before (j > 0; hot_store_or_add_pair), and zeroes them. The last segment is
 * converted after the loop, where HOT_SEGS = 0 converts its one sum. No extra register arrays:
 * the running sum lives in C. Each output element has one owner thread, so the order of the
 * additions is that thread's program order (segment order), whatever the blocks and warps do.
 *
 * Shared layout per stage: [A tile: TILE_M rows x KB bytes][B tile: TILE_N rows x KB bytes],
 * rows unpadded; the 16-byte chunk c of row r is stored at chunk c ^ swz(r), where swz is chosen
 * so that the 8 row addresses of every ldmatrix phase (8 consecutive rows, one logical chunk)
 * fall into 8 distinct 16-byte bank groups:
 *   KB = 32  (2 chunks/row, 4 rows per 128 B): swz = (r >> 2) & 1
 *   KB = 64  (4 chunks/row, 2 rows per 128 B): swz = (r >> 1) & 3
 *   KB = 96  (6 chunks/row):                     swz = (r >> 2) & 1   (rows r, r+4 collide unswizzled)
 *   KB >= 128 (8+ chunks/row):                   swz = r & 7
 * swz only depends on r & 7, so with every fragment row base a multiple of 8 it is a per-lane
 * constant.
 * =============================================================================================
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_gemm_int
#define HOT_CODES 0
#define HOT_TILE_M 128
#define HOT_TILE_N 128
#define HOT_TILE_K 64
#define HOT_WARPS_M 2
#define HOT_WARPS_N 2
#define HOT_STAGES 4
#define HOT_SEGS 0
#endif

#include "hot_math.cuh"
#include "hot_gemm.cuh"

/* ---- derived compile-time quantities (macros: NVRTC makes namespace constexpr device globals) */
#define HOT_THREADS (32 * HOT_WARPS_M * HOT_WARPS_N)
#define HOT_KB (HOT_CODES ? HOT_TILE_K / 2 : HOT_TILE_K) /* bytes of K per row per stage */
#define HOT_CPR (HOT_KB / 16)                           /* 16-byte chunks per row */
#define HOT_KSTEPS (HOT_KB / 32)                        /* mma K steps per stage */
#define HOT_WM (HOT_TILE_M / HOT_WARPS_M)
#define HOT_WN (HOT_TILE_N / HOT_WARPS_N)
#define HOT_MI (HOT_WM / 16)
#define HOT_NI (HOT_WN / 8)
#define HOT_A_BYTES (HOT_TILE_M * HOT_KB)
#define HOT_STAGE_BYTES ((HOT_TILE_M + HOT_TILE_N) * HOT_KB)
#define HOT_SMEM_BYTES (HOT_STAGES * HOT_STAGE_BYTES)
#define HOT_A_CHUNKS (HOT_TILE_M * HOT_CPR)
#define HOT_B_CHUNKS (HOT_TILE_N * HOT_CPR)
#define HOT_A_ITERS ((HOT_A_CHUNKS + HOT_THREADS - 1) / HOT_THREADS)
#define HOT_B_ITERS ((HOT_B_CHUNKS + HOT_THREADS - 1) / HOT_THREADS)
/* swizzle of 16-byte chunks as a function of the row (see the design note) */
#define HOT_SWZ(r)                                                                              \
  (HOT_CPR == 4 ? (((r) >> 1) & 3) : (HOT_CPR == 2 || HOT_CPR == 6) ? (((r) >> 2) & 1) : ((r)&7))

static_assert(HOT_CODES == 0 || HOT_CODES == 1, "HOT_CODES must be 0 (int8) or 1 (packed int4)");
static_assert(HOT_CODES == 0 || HOT_TILE_K % 2 == 0, "packed int4 needs an even HOT_TILE_K");
static_assert(HOT_KB % 32 == 0, "HOT_TILE_K must be a multiple of the mma K (32 s8, 64 s4)");
static_assert(HOT_CPR == 2 || HOT_CPR == 4 || HOT_CPR == 6 || HOT_CPR == 8 || HOT_CPR == 16,
              "HOT_TILE_K bytes must be 32, 64, 96, 128 or 256 (swizzle patterns)");
static_assert(HOT_WARPS_M >= 1 && HOT_WARPS_N >= 1 && HOT_WARPS_M * HOT_WARPS_N <= 8,
              "1..8 warps per block");
static_assert(HOT_TILE_M % (16 * HOT_WARPS_M) == 0, "HOT_TILE_M must split into warps of 16 rows");
static_assert(HOT_TILE_N % (8 * HOT_WARPS_N) == 0, "HOT_TILE_N must split into warps of 8 columns");
static_assert(HOT_STAGES >= 2 && HOT_STAGES <= 8, "HOT_STAGES must be in [2, 8]");
static_assert(HOT_A_BYTES % 128 == 0 && HOT_STAGE_BYTES % 128 == 0,
              "stage and B-tile bases must stay 128-byte aligned (swizzle assumes it)");
static_assert(HOT_MI * HOT_NI <= 64, "warp tile too large for the register file");
static_assert(HOT_SEGS == 0 || HOT_SEGS == 1, "HOT_SEGS must be 0 (one K sum) or 1 (K segments)");

/* ---- PTX wrappers ------------------------------------------------------------------------- */

/* ldmatrix .m8n8 .b16: each 8x8 b16 matrix is 8 rows of 16 bytes; lanes 8j..8j+7 give the row
 * addresses of matrix j; lane l receives, from matrix j, the 32-bit word at row l/4, bytes
 * 4*(l%4) .. 4*(l%4)+3 (PTX ISA 9.7.14.5.15 ldmatrix, "fragment of the loaded matrix"). We treat
 * the data as raw bytes: 16 bytes = 16 s8 codes or 32 packed s4 codes. */
static __device__ __forceinline__ void hot_ldmatrix_x4(unsigned addr, unsigned &r0, unsigned &r1,
                                                       unsigned &r2, unsigned &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

static __device__ __forceinline__ void hot_ldmatrix_x2(unsigned addr, unsigned &r0, unsigned &r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1)
               : "r"(addr));
}

/* One 16 x 8 x (32 bytes of K) tensor-core product, d += a * b. */
static __device__ __forceinline__ void hot_mma(int *d, const unsigned *a, const unsigned *b) {
#if HOT_CODES
  asm volatile("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* ---- Fragment layouts (PTX ISA 9.7.14.5.x "Matrix Fragments for mma.m16n8k32" (.s8) and
 * "... for mma.m16n8k64" (.s4)); g = lane >> 2 (groupID), t = lane & 3 (threadID_in_group).
 * In bytes of K both instructions agree:
 *   A (16 x 32 bytes): a[0] = row g,   bytes 4t..4t+3       a[1] = row g+8, bytes 4t..4t+3
 *                      a[2] = row g,   bytes 16+4t..+3      a[3] = row g+8, bytes 16+4t..+3
 *     (.s8: a_i row g for i in [0,4)u[8,12), col 4t + (i&3) (+16 for i >= 8);
 *      .s4: a_i row g for i in [0,8)u[16,24), col 8t + (i&7) (+32 for i >= 16); nibble i of a
 *      register is element i, so the low nibble of a byte is the lower K index = our packing.)
 *   B (32 bytes x 8, stored as N rows of K): b[0] = column n = g, bytes 4t..4t+3,
 *                                            b[1] = column n = g, bytes 16+4t..+3
 *   C/D (16 x 8 s32): d[0], d[1] = row g, cols 2t, 2t+1;  d[2], d[3] = row g+8, cols 2t, 2t+1.
 * ldmatrix.x4 on A with lane l addressing row (l & 15), chunk (l >> 4) of the 16 x 32-byte
 * slice gives matrices {rows 0-7 chunk 0, rows 8-15 chunk 0, rows 0-7 chunk 1, rows 8-15
 * chunk 1} = exactly a[0..3]. ldmatrix.x4 on B with lane l addressing n-row (l & 7) + 8*(l >> 4),
 * chunk (l >> 3) & 1 gives {n 0-7 chunk 0, n 0-7 chunk 1, n 8-15 chunk 0, n 8-15 chunk 1} =
 * b[0..1] of n-block 0 then of n-block 1 (x2: lanes 0-15, the first n-block only). */

/* Per-thread constants of the main loop (kept in registers once the helpers are inlined). */
struct hot_gemm_ctx {
  unsigned smem;            /* shared-state address of stage 0 */
  /* ldmatrix: this lane's row offset in the A / B tile for mi = 0 / nj = 0 (further mi, nj add
   * compile-time multiples of 16 rows) and its 16-byte chunk within a 32-byte K step */
  unsigned a_ld, b_ld;
  int a_hi, b_hi, swz;
  /* cp.async loader: rows m0 / n0 of A / B; this thread's first chunk (row r0, chunk c0) */
  const signed char *a_tile, *b_tile;
  long long pitch;          /* row bytes: Kpad (s8) or Kpad / 2 (s4) */
  int r0, c0;
  int a_left, b_left;       /* M - m0 - r0, N - n0 - r0: rows r0 + x are real iff x < left */
  int tid, ktiles;
};

/* Rows one pass of all threads covers when THREADS is a multiple of the chunks per row (then
 * every thread keeps one chunk column c0 and steps down by HOT_RSTEP rows); else 0 and the
 * generic path below maps chunk ids one by one (KB = 96). */
#define HOT_RSTEP (HOT_THREADS % HOT_CPR == 0 ? HOT_THREADS / HOT_CPR : 0)

/* Issues the cp.async of one operand tile (ROWS rows of KB bytes) of K tile kt into the shared
 * tile at dst. Rows past the matrix are zero-filled: src-size 0, and the address used is row 0
 * of the block tile (always real: m0 < M), so nothing outside the operand is ever addressed. */
template <int ROWS>
static __device__ __forceinline__ void hot_load_operand(const hot_gemm_ctx &x, unsigned dst,
                                                        const signed char *tile, int left,
                                                        long long koff) {
  const signed char *row0 = tile + koff;
  if (HOT_RSTEP != 0) {
    /* thread -> (row r0 + i*RSTEP, chunk c0); with RSTEP % 8 == 0 the swizzle is that of r0 */
    const int sw0 = HOT_SWZ(x.r0);
    const long long off0 = (long long)x.r0 * x.pitch + x.c0 * 16;
#pragma unroll
    for (int i = 0; i < (ROWS + HOT_RSTEP - 1) / HOT_RSTEP; ++i) {
      const int r = x.r0 + i * HOT_RSTEP;
      if (ROWS % HOT_RSTEP == 0 || r < ROWS) {
        const int sw = HOT_RSTEP % 8 == 0 ? sw0 : HOT_SWZ(r);
        const bool ok = i * HOT_RSTEP < left;
        const signed char *src = row0 + (ok ? off0 + (long long)(i * HOT_RSTEP) * x.pitch : 0);
        hot_cp_async16(dst + (unsigned)(r * HOT_KB + ((x.c0 ^ sw) << 4)), src, ok ? 16 : 0);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < (ROWS * HOT_CPR + HOT_THREADS - 1) / HOT_THREADS; ++i) {
      const int id = x.tid + i * HOT_THREADS;
      if ((ROWS * HOT_CPR) % HOT_THREADS == 0 || id < ROWS * HOT_CPR) {
        const int r = id / HOT_CPR, c = id % HOT_CPR;
        const bool ok = r - x.r0 < left; /* left counts from r0 */
        const signed char *src = row0 + (ok ? (long long)r * x.pitch + c * 16 : 0);
        hot_cp_async16(dst + (unsigned)(r * HOT_KB + ((c ^ HOT_SWZ(r)) << 4)), src, ok ? 16 : 0);
      }
    }
  }
}

/* Loads K tile kt (KB bytes of every row of the A and B block tiles) into the stage at shared
 * address st, or nothing when kt >= ktiles (the caller still commits an empty group, keeping
 * the group count uniform). */
static __device__ __forceinline__ void hot_load_tile(const hot_gemm_ctx &x, unsigned st, int kt) {
  if (kt >= x.ktiles) return;
  const long long koff = (long long)kt * HOT_KB;
  hot_load_operand<HOT_TILE_M>(x, st, x.a_tile, x.a_left, koff);
  hot_load_operand<HOT_TILE_N>(x, st + HOT_A_BYTES, x.b_tile, x.b_left, koff);
}

/* Fragments of K step ks (32 bytes) of the stage at shared address st into af / bf. */
static __device__ __forceinline__ void hot_load_frags(const hot_gemm_ctx &x,
                                                      unsigned (&af)[HOT_MI][4],
                                                      unsigned (&bf)[HOT_NI][2], unsigned st,
                                                      int ks) {
  const unsigned pa = st + x.a_ld + (unsigned)(((2 * ks + x.a_hi) ^ x.swz) << 4);
  const unsigned pb = st + HOT_A_BYTES + x.b_ld + (unsigned)(((2 * ks + x.b_hi) ^ x.swz) << 4);
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
    hot_ldmatrix_x4(pa + mi * 16 * HOT_KB, af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
#pragma unroll
  for (int nj = 0; nj < HOT_NI / 2; ++nj)
    hot_ldmatrix_x4(pb + nj * 16 * HOT_KB, bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0],
                    bf[2 * nj + 1][1]);
  if (HOT_NI % 2) /* odd number of n8 blocks: the last one alone (lanes 0-15 give addresses) */
    hot_ldmatrix_x2(pb + (HOT_NI / 2) * 16 * HOT_KB, bf[HOT_NI - 1][0], bf[HOT_NI - 1][1]);
}

/* Mutable main-loop state. */
struct hot_gemm_state {
  int acc[HOT_MI][HOT_NI][4];
  unsigned af[2][HOT_MI][4];
  unsigned bf[2][HOT_NI][2];
  unsigned rd, wr; /* shared address of the stage being computed / the next prefetch target */
};

/* Every int32 accumulator of the thread to 0 (the start, and each segment end of HOT_SEGS = 1). */
static __device__ __forceinline__ void hot_acc_zero(hot_gemm_state &s) {
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < HOT_NI; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q) s.acc[mi][ni][q] = 0;
}

static __device__ __forceinline__ unsigned hot_next_stage(const hot_gemm_ctx &x, unsigned st) {
  return st + HOT_STAGE_BYTES == x.smem + HOT_SMEM_BYTES ? x.smem : st + HOT_STAGE_BYTES;
}

/* One K tile. P = register buffer that holds the fragments of its first K step; the step
 * leaves the fragments of the next tile's first K step in buffer (P + KSTEPS) & 1. With an
 * even KSTEPS that is always P = 0; with an odd one the caller alternates P = 0, 1, so every
 * buffer index is a compile-time constant (no local-memory arrays).
 *
 * Hazards: the prefetch into stage wr = (kt-1) % STAGES is issued at ks = 0; the last ldmatrix
 * from that stage (tile kt-1) happened before the __syncthreads of the previous tile's last K
 * step (or, with KSTEPS = 1, of the tile step before), so no warp still reads it. At the last K
 * step, wait_group(STAGES-2) leaves only the STAGES-2 youngest groups in flight, so tile kt+1 has
 * landed; the barrier then publishes it to all warps before its first ldmatrix. */
template <int P>
static __device__ __forceinline__ void hot_ktile(const hot_gemm_ctx &x, hot_gemm_state &s,
                                                 int kt) {
#pragma unroll
  for (int ks = 0; ks < HOT_KSTEPS; ++ks) {
    const int cur = (P + ks) & 1;
    if (ks == 0) {
      hot_load_tile(x, s.wr, kt + HOT_STAGES - 1);
      hot_cp_async_commit();
      s.wr = hot_next_stage(x, s.wr);
    }
    if (ks == HOT_KSTEPS - 1) {
      hot_cp_async_wait<HOT_STAGES - 2>();
      __syncthreads();
      s.rd = hot_next_stage(x, s.rd);
    }
    /* next K step's fragments (the next tile's first one at the last step) */
    hot_load_frags(x, s.af[cur ^ 1], s.bf[cur ^ 1], s.rd, (ks + 1) % HOT_KSTEPS);
#pragma unroll
    for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < HOT_NI; ++ni) {
        /* serpentine over n: consecutive mmas share the B fragment at the turns */
        const int nn = (mi & 1) ? HOT_NI - 1 - ni : ni;
        hot_mma(s.acc[mi][nn], s.af[cur][mi], s.bf[cur][nn]);
      }
  }
}

/* Converts this thread's accumulators into C with factor alpha (CONTRACT 14): HOT_SEGS = 0 stores
 * HOT_MUL(HOT_I2F(acc), factor(m)) (row factor as in the design note); HOT_SEGS = 1 stores
 * (add = false) or adds (add = true) HOT_MUL(HOT_I2F(acc), alpha) of one segment. mb / nb: the
 * output row / column of this thread's accumulator 0 of fragment (0, 0). */
static __device__ __forceinline__ void hot_epilogue(const int (&acc)[HOT_MI][HOT_NI][4], float *C,
                                                    const float *row_scale, float alpha, int mb,
                                                    int nb, int M, int N, int ldc, bool vec,
                                                    bool add) {
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = mb + mi * 16 + 8 * h;
      if (m >= M) continue;
      float *crow = C + (long long)m * ldc;
      /* overflow check (CONTRACT 19): HOT_SEGS = 0 once for the row's stored columns
       * (hot_row_range_check; columns past N hold acc = 0: their B rows are zero-filled),
       * HOT_SEGS = 1 element by element in hot_store_or_add_pair */
      if (HOT_SEGS) {
#pragma unroll
        for (int ni = 0; ni < HOT_NI; ++ni)
          hot_store_or_add_pair(crow, nb + ni * 8, N, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                                alpha, vec, add);
      } else {
        const float factor = hot_row_factor(row_scale, m, alpha);
        float amax = 0.0f;
#pragma unroll
        for (int ni = 0; ni < HOT_NI; ++ni) {
          hot_store_pair(crow, nb + ni * 8, N, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                         factor, vec);
          amax = hot_row_amax_pair(amax, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
        }
        hot_row_range_check(amax, factor);
      }
    }
  }
}

/* HOT_SEGS = 1, after the mmas of K tile kt: when kt ends a segment (kt + 1 == seg_end) and
 * more tiles follow, C (+)= acc * c_seg for that segment seg, acc = 0, and the next segment
 * begins; the last segment is converted after the loop. The only state kept across the K loop is
 * seg_end: everything else is recomputed here from the kernel arguments and the thread's
 * indices (the main loop has no registers to spare). */
static __device__ __forceinline__ void hot_seg_boundary(const hot_gemm_ctx &x, hot_gemm_state &s,
                                                        int kt, int &seg_end, float *C,
                                                        const float *alpha_a,
                                                        const float *alpha_b, float alpha_div,
                                                        int M, int N, int ldc, int seg_kpad) {
  if (kt + 1 != seg_end || kt + 1 >= x.ktiles) return;
  const int seg_tiles = seg_kpad / HOT_TILE_K, seg = seg_end / seg_tiles - 1;
  const float c = hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  const int tid = hot_tid_opaque(), lane = tid & 31, warp = tid >> 5;
  const int mb = (int)blockIdx.y * HOT_TILE_M + (warp / HOT_WARPS_N) * HOT_WM + (lane >> 2);
  const int nb = (int)blockIdx.x * HOT_TILE_N + (warp % HOT_WARPS_N) * HOT_WN + 2 * (lane & 3);
  hot_epilogue(s.acc, C, nullptr, c, mb, nb, M, N, ldc, vec, seg > 0);
  hot_acc_zero(s);
  seg_end += seg_tiles;
}

extern "C" __global__ void __launch_bounds__(HOT_THREADS, 1)
    HOT_KNAME(const signed char *__restrict__ A, const signed char *__restrict__ B,
              float *__restrict__ C, const float *__restrict__ row_scale,
              const float *__restrict__ alpha_a, const float *__restrict__ alpha_b,
              float alpha_div, int M, int N, int Kpad, int ldc, int seg_kpad) {
  extern __shared__ __align__(128) unsigned char hot_smem[];

  const int tid = (int)threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wm = warp / HOT_WARPS_N, wn = warp % HOT_WARPS_N;
  const int m0 = (int)blockIdx.y * HOT_TILE_M;
  const int n0 = (int)blockIdx.x * HOT_TILE_N;

  hot_gemm_ctx x;
  x.smem = hot_smem_u32(hot_smem);
  x.a_ld = (unsigned)((wm * HOT_WM + (lane & 15)) * HOT_KB);
  x.b_ld = (unsigned)((wn * HOT_WN + (lane & 7) + ((lane >> 4) << 3)) * HOT_KB);
  x.a_hi = lane >> 4;
  x.b_hi = (lane >> 3) & 1;
  /* every fragment row base is a multiple of 8 (WM % 16 == 0, WN % 8 == 0), so the row's low
   * three bits, hence its swizzle, are those of lane & 7 for A and B alike */
  x.swz = HOT_SWZ(lane & 7);
  x.pitch = HOT_CODES ? (long long)(Kpad / 2) : (long long)Kpad;
  x.a_tile = A + (long long)m0 * x.pitch;
  x.b_tile = B + (long long)n0 * x.pitch;
  x.r0 = HOT_RSTEP != 0 ? tid / HOT_CPR : 0;
  x.c0 = HOT_RSTEP != 0 ? tid % HOT_CPR : 0;
  x.a_left = M - m0 - x.r0;
  x.b_left = N - n0 - x.r0;
  x.tid = tid;
  x.ktiles = Kpad / HOT_TILE_K;

  hot_gemm_state s;
  hot_acc_zero(s);

  /* prologue: tiles 0 .. STAGES-2 in flight, one group each */
#pragma unroll
  for (int st = 0; st < HOT_STAGES - 1; ++st) {
    hot_load_tile(x, x.smem + st * HOT_STAGE_BYTES, st);
    hot_cp_async_commit();
  }
  hot_cp_async_wait<HOT_STAGES - 2>();
  __syncthreads();
  s.rd = x.smem;
  s.wr = x.smem + (HOT_STAGES - 1) * HOT_STAGE_BYTES;
  hot_load_frags(x, s.af[0], s.bf[0], s.rd, 0);

  /* HOT_SEGS = 1: the current segment ends with K tile seg_end - 1 (seg_kpad / HOT_TILE_K K
   * tiles a segment); HOT_SEGS = 0 never reads seg_kpad (every branch on it is dead code) */
  int seg_end = HOT_SEGS ? seg_kpad / HOT_TILE_K : 0;

  for (int kt = 0; kt < x.ktiles; ++kt) {
    hot_ktile<0>(x, s, kt);
    if (HOT_SEGS)
      hot_seg_boundary(x, s, kt, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc, seg_kpad);
    if (HOT_KSTEPS % 2 == 1 && kt + 1 < x.ktiles) {
      ++kt;
      hot_ktile<1>(x, s, kt);
      if (HOT_SEGS)
        hot_seg_boundary(x, s, kt, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc, seg_kpad);
    }
  }
  hot_cp_async_wait<0>(); /* only empty groups can remain; keep the exit clean */

  /* ---- epilogue: C = HOT_MUL(HOT_I2F(acc), factor(row)), never fused (HOT_SEGS = 1: the last
   * segment's v added to C) ------------------------------------------------------------------ */
  /* the epilogue constant of CONTRACT 14 from the scales on the device: product, then division */
  const int seg =
      HOT_SEGS && seg_kpad >= HOT_TILE_K ? seg_end / (seg_kpad / HOT_TILE_K) - 1 : 0;
  const float alpha =
      HOT_SEGS ? hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div)
               : hot_epilogue_alpha(alpha_a, alpha_b, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  hot_epilogue(s.acc, C, HOT_SEGS ? nullptr : row_scale, alpha, m0 + wm * HOT_WM + (lane >> 2),
               n0 + wn * HOT_WN + 2 * (lane & 3), M, N, ldc, vec, HOT_SEGS && seg > 0);
}

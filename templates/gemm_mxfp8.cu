/* @hot-params: HOT_KNAME HOT_TILE_M HOT_TILE_N HOT_TILE_K HOT_WARPS_M HOT_WARPS_N */
/* gemm_mxfp8.cu — the MXFP8 block-scaled GEMM of recipe nvfp4 (HLA's g_w; CONTRACT.md 20.5 and
 * 20.10, twin mxfp8_gemm in templates/nvfp4_ref.c) on sm_120a's warp-level block-scaled MMA:
 *   mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X
 *            .f32.e4m3.e4m3.f32.ue8m0
 * (PTX ISA 9.7.14.3 "Block Scaling for mma.sync"): D = (A * SF_A)(B * SF_B) + C over 32 values
 * of K, one E8M0 (ue8m0) scale per row of A and per column of B — exactly one MXFP8 block.
 *
 *   C[m*ldc + n] = HOT_DIV(acc[m][n], (float)div)                               (as the twin)
 *   acc[m][n]    = the MMA chain over K steps of 32 (one block each), from 0.0f, in K order.
 * One instruction is one block, so the accumulator takes the blocks one at a time in K order as
 * the twin does; the twin's block product is the exact block sum rounded once to fp32 and scaled
 * by 2^(e_a + e_b) (ldexpf). If the hardware forms that product and adds it to the accumulator
 * with one fp32 rounding (the model tools/gemm-emu/mxfp8_emu.cpp runs), acc is the twin's acc at
 * every step and the output is the twin's bits. The PTX ISA does not specify the precision of the
 * product nor whether it is rounded before the addition: CONTRACT.md 20.10 states what GPU = CPU
 * means for this path.
 * Every stored C value that is not finite raises hot_range_flag (hot_math.cuh, CONTRACT.md 19;
 * the CUDA backend watches it for g_x / g_w); the stored bits are the twin's either way.
 *
 * Entry:
 *   HOT_KNAME (const unsigned char *A, const unsigned char *SA, const unsigned char *B,
 *              const unsigned char *SB, int div, float *C, int M, int N, int Kpad, int ldc)
 * A: M rows of Kpad E4M3 codes (byte k of a row = element k, row pitch Kpad bytes:
 * mxfp8_quantize's layout with k_pad = Kpad); SA: M rows of Kpad / 32 E8M0 scale codes (the
 * biased exponent e + 127, row pitch Kpad / 32 bytes); B, SB likewise with N rows (for HLA's g_w:
 * A = g^ (O rows), B = x^ (I rows), K = HLA's K). div: a power of two (p).
 *
 * Constraints (not checked at run time): Kpad % 32 == 0 (the MXFP8 block; Kpad need not be a
 * multiple of HOT_TILE_K: the loader writes zero codes and zero scales for K >= Kpad in the last
 * K tile and reads nothing there, so the kernel reads the twin's layout with the twin's own k_pad
 * in place, e.g. ABC's saved x^); codes and scales in [k_real, Kpad) zero (as the quantisers
 * write them). A zero code makes its block's product +0, which leaves acc unchanged, so the
 * blocks past k_real and the loader's zero blocks past Kpad give the twin's bits; no E4M3 NaN code
 * (0x7F, 0xFF) and no E8M0 NaN scale (0xFF) — the quantisers write none, the twin would read a
 * NaN code as 0 where the hardware gives NaN; A, B 16-byte aligned (cudaMalloc gives 256; the
 * pitch Kpad is then a multiple of 16); M, N >= 0 arbitrary (rows past M or N are zero in shared
 * memory; C written only for m < M, n < N); ldc >= N; grid.y = ceil(M / HOT_TILE_M) <= 65535.
 *
 * Launch geometry:
 *   grid  = (ceil(N / HOT_TILE_N), ceil(M / HOT_TILE_M), 1)
 *   block = (HOT_THREADS, 1, 1), HOT_THREADS = 32 * HOT_WARPS_M * HOT_WARPS_N
 *   static shared memory: (HOT_TILE_M + HOT_TILE_N) * (HOT_TILE_K + HOT_TILE_K / 32) bytes
 *   (one stage, no dynamic shared memory).
 *
 * Data movement (one stage, as gemm_nvfp4.cu): per K tile (ceil(Kpad / HOT_TILE_K) of them)
 * every thread copies 16-byte chunks of codes and single scale bytes from global to shared memory
 * (zeros past M / N and past Kpad: Kpad is a multiple of 32, so a 16-byte chunk and a scale byte
 * lie wholly below Kpad or wholly at or above it), a barrier, then
 * each warp reads its fragments from shared memory (32-bit loads for codes, byte loads for
 * scales), runs the MMAs (K steps in order; mi outer, ni inner) and a second barrier ends the
 * tile.
 *
 * Fragment layouts (PTX ISA m16n8k32 fragments for 8-bit types; CuTe's SM120 block-scaled MMA
 * traits express the same maps, the mxfp8 layout test checks them against those definitions):
 * g = lane >> 2, t = lane & 3, K step base k0 (a multiple of 32):
 *   A: a0 = row g,   K k0+4t .. k0+4t+3 (4 bytes, byte i = element k0+4t+i)
 *      a1 = row g+8, same K; a2 = row g, K +16; a3 = row g+8, K +16
 *   B: b0 = column g, K k0+4t .. +3; b1 = column g, K +16
 *   SF_A (scale_vec::1X, selector {byte 0, thread 0}): byte 0 of the lanes with t in {0, 1} holds
 *      the scale of row g + 8t for the K step's block; lanes with t in {2, 3} are not read
 *   SF_B (selector {byte 0, thread 0}): byte 0 of the lanes with t = 0 holds the scale of
 *      column g; the other lanes are not read
 *   C/D: c0, c1 = row g, columns 2t, 2t+1; c2, c3 = row g+8.
 * Every lane loads its scale byte as if it were read (t in {2, 3} loads row g + 8 * (t & 1) for
 * A, every t loads column g for B), so no lane depends on which lanes the hardware reads.
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_gemm_mxfp8
#define HOT_TILE_M 64
#define HOT_TILE_N 64
#define HOT_TILE_K 128
#define HOT_WARPS_M 2
#define HOT_WARPS_N 2
#endif

#include "hot_math.cuh"

#define HOT_THREADS (32 * HOT_WARPS_M * HOT_WARPS_N)
#define HOT_KB HOT_TILE_K         /* code bytes of K per row per tile */
#define HOT_SB (HOT_TILE_K / 32)  /* scale bytes of K per row per tile (one per K step) */
#define HOT_CPR (HOT_KB / 16)     /* 16-byte code chunks per row */
#define HOT_KSTEPS (HOT_TILE_K / 32)
#define HOT_WM (HOT_TILE_M / HOT_WARPS_M)
#define HOT_WN (HOT_TILE_N / HOT_WARPS_N)
#define HOT_MI (HOT_WM / 16)
#define HOT_NI (HOT_WN / 8)

static_assert(HOT_TILE_K == 32 || HOT_TILE_K == 64 || HOT_TILE_K == 128,
              "HOT_TILE_K must be 1, 2 or 4 MMA K steps of 32");
static_assert(HOT_WARPS_M >= 1 && HOT_WARPS_N >= 1 && HOT_WARPS_M * HOT_WARPS_N <= 8,
              "1..8 warps per block");
static_assert(HOT_TILE_M % (16 * HOT_WARPS_M) == 0, "HOT_TILE_M must split into warps of 16 rows");
static_assert(HOT_TILE_N % (8 * HOT_WARPS_N) == 0, "HOT_TILE_N must split into warps of 8 columns");
static_assert(HOT_MI * HOT_NI <= 32, "warp tile too large for the register file");

/* ---- device wrappers (the emulator replaces the MMA's body) -------------------------------- */

/* One block-scaled MMA, d += (a * sfa)(b * sfb), selectors {0, 0} for both scale operands. */
static __device__ __forceinline__ void hot_mma_mx(float *d, const unsigned *a, const unsigned *b,
                                                  unsigned sfa, unsigned sfb) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X"
               ".f32.e4m3.e4m3.f32.ue8m0 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3}, %10, {%12, %12}, %11, {%12, %12};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(sfa),
                 "r"(sfb), "h"((unsigned short)0));
}

/* A 16-byte global load (read-only path) and a 1-byte one. */
static __device__ __forceinline__ uint4 hot_ld16(const unsigned char *p) {
  return __ldg((const uint4 *)p);
}
static __device__ __forceinline__ unsigned char hot_ld1(const unsigned char *p) { return __ldg(p); }

/* ---- the tile loader: codes and scales of K tile kt into shared memory (zeros past M / N and
 * past Kpad; kleft = Kpad - kt * HOT_TILE_K, the bytes of K from the tile's start to Kpad) ---- */
static __device__ __forceinline__ void hot_load_rows(unsigned char *s_codes,
                                                     unsigned char *s_scales,
                                                     const unsigned char *codes,
                                                     const unsigned char *scales, int rows,
                                                     int left, long long cpitch, long long spitch,
                                                     int kt, int kleft, int tid) {
  for (int i = tid; i < rows * HOT_CPR; i += HOT_THREADS) {
    const int r = i / HOT_CPR, c = i % HOT_CPR;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r < left && c * 16 < kleft) v = hot_ld16(codes + r * cpitch + (long long)kt * HOT_KB + c * 16);
    *(uint4 *)(s_codes + r * HOT_KB + c * 16) = v;
  }
  for (int i = tid; i < rows * HOT_SB; i += HOT_THREADS) {
    const int r = i / HOT_SB, c = i % HOT_SB;
    unsigned char v = 0;
    if (r < left && c * 32 < kleft) v = hot_ld1(scales + r * spitch + (long long)kt * HOT_SB + c);
    s_scales[r * HOT_SB + c] = v;
  }
}

static __device__ __forceinline__ unsigned hot_lds4(const unsigned char *s, int byte) {
  return *(const unsigned *)(s + byte);
}

extern "C" __global__ void __launch_bounds__(HOT_THREADS, 1)
    HOT_KNAME(const unsigned char *__restrict__ A, const unsigned char *__restrict__ SA,
              const unsigned char *__restrict__ B, const unsigned char *__restrict__ SB, int div,
              float *__restrict__ C, int M, int N, int Kpad, int ldc) {
  __shared__ __align__(16) unsigned char sa_codes[HOT_TILE_M * HOT_KB];
  __shared__ __align__(16) unsigned char sb_codes[HOT_TILE_N * HOT_KB];
  __shared__ __align__(16) unsigned char sa_scales[HOT_TILE_M * HOT_SB];
  __shared__ __align__(16) unsigned char sb_scales[HOT_TILE_N * HOT_SB];

  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp / HOT_WARPS_N, wn = warp % HOT_WARPS_N;
  const int m0 = (int)blockIdx.y * HOT_TILE_M, n0 = (int)blockIdx.x * HOT_TILE_N;
  const long long cpitch = Kpad, spitch = Kpad / 32;
  const unsigned char *a_tile = A + (long long)m0 * cpitch, *b_tile = B + (long long)n0 * cpitch;
  const unsigned char *sa_tile = SA + (long long)m0 * spitch, *sb_tile = SB + (long long)n0 * spitch;

  float acc[HOT_MI][HOT_NI][4];
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < HOT_NI; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mi][ni][i] = 0.0f;

  const int ktiles = (Kpad + HOT_TILE_K - 1) / HOT_TILE_K;
  for (int kt = 0; kt < ktiles; ++kt) {
    const int kleft = Kpad - kt * HOT_TILE_K;
    hot_load_rows(sa_codes, sa_scales, a_tile, sa_tile, HOT_TILE_M, M - m0, cpitch, spitch, kt,
                  kleft, tid);
    hot_load_rows(sb_codes, sb_scales, b_tile, sb_tile, HOT_TILE_N, N - n0, cpitch, spitch, kt,
                  kleft, tid);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < HOT_KSTEPS; ++ks) {
      unsigned af[HOT_MI][4], sfa[HOT_MI], bf[HOT_NI][2], sfb[HOT_NI];
#pragma unroll
      for (int mi = 0; mi < HOT_MI; ++mi) {
        const int r = wm * HOT_WM + mi * 16 + g;
        const int kb = ks * 32 + 4 * t; /* byte of K element ks * 32 + 4t in the row */
        af[mi][0] = hot_lds4(sa_codes, r * HOT_KB + kb);
        af[mi][1] = hot_lds4(sa_codes, (r + 8) * HOT_KB + kb);
        af[mi][2] = hot_lds4(sa_codes, r * HOT_KB + kb + 16);
        af[mi][3] = hot_lds4(sa_codes, (r + 8) * HOT_KB + kb + 16);
        sfa[mi] = sa_scales[(r + 8 * (t & 1)) * HOT_SB + ks];
      }
#pragma unroll
      for (int ni = 0; ni < HOT_NI; ++ni) {
        const int r = wn * HOT_WN + ni * 8 + g;
        const int kb = ks * 32 + 4 * t;
        bf[ni][0] = hot_lds4(sb_codes, r * HOT_KB + kb);
        bf[ni][1] = hot_lds4(sb_codes, r * HOT_KB + kb + 16);
        sfb[ni] = sb_scales[r * HOT_SB + ks];
      }
#pragma unroll
      for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < HOT_NI; ++ni) hot_mma_mx(acc[mi][ni], af[mi], bf[ni], sfa[mi], sfb[ni]);
    }
    __syncthreads();
  }

  /* ---- epilogue: the twin's division by the power of two div (exact unless subnormal) ------ */
  /* The overflow check (CONTRACT.md 19): nf = the sum of v * 0 over the values this thread
   * stores, each product and sum rounded once; v * 0 is +-0 for a finite v and NaN for +-inf or
   * NaN, and NaN stays NaN, so nf is NaN exactly when some stored v is not finite, and one
   * HOT_RANGE_CHECK(nf) raises hot_range_flag exactly then. The stored values are unchanged; two
   * flops a value instead of a compare and a flag store each (a smaller kernel). */
  float nf = 0.0f;
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < HOT_NI; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int m = m0 + wm * HOT_WM + mi * 16 + g + (i >= 2 ? 8 : 0);
        const int n = n0 + wn * HOT_WN + ni * 8 + 2 * t + (i & 1);
        if (m < M && n < N) {
          const float v = HOT_DIV(acc[mi][ni][i], (float)div);
          nf = HOT_ADD(nf, HOT_MUL(v, 0.0f));
          C[(long long)m * ldc + n] = v;
        }
      }
  HOT_RANGE_CHECK(nf);
}

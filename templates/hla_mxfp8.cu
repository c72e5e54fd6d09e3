/* @hot-params: HOT_KNAME HOT_MODE HOT_ROUND HOT_P HOT_R HOT_ROWS */
/* hla_mxfp8.cu — HLA's MXFP8 quantisers of recipe nvfp4 (CONTRACT.md 20.4, 20.6; twin
 * nvfp4_hla_quant with hla_fmt NVFP4_HLA_MXFP8 in templates/nvfp4_ref.c), the operands of the
 * sm_120a MXFP8 g_w GEMM (templates/gemm_mxfp8.cu):
 *   HOT_MODE 0, x^ = H_r x (RTN; ABC's saved codes, or Q_HX when the backward projects x);
 *   HOT_MODE 1, g^ = H_r g_y (SR with the word hot_rand_word(seed, tag, step, kk * cols + c),
 *               tag = layer_id * 16 + 2, or RTN when planned so).
 * The projection is section 4's with the butterflies of section 2: per token block of p tokens
 * (per sample, or across the flat batch; padded tokens are zeros) the p-point FWHT of each column
 * in hot_fwht's stage order, then the r natural rows HOT_ROWS of H_p; math row kk = blk * r + j.
 * The K x cols result is stored transposed, cols rows of k_pad = 32 * ceil(K / 32), and quantised
 * along K in blocks of 32: the E8M0 exponent e = the smallest with amax <= 448 * 2^e (clamped to
 * [-127, 127]; 0 for an all-zero block), codes E4M3 of v / 2^e (RTN ties to even or SR, saturated
 * to 448, the sign copied), the padding [K, k_pad) code 0 — every rounding as the twin's.
 * Layout (nvfp4_plan.h, Q_HG / Q_HX / the saved buffer): codes[cols * k_pad] (row c, byte kk),
 * then, at the caller's `scales`, cols rows of k_pad / 32 E8M0 bytes (e + 127).
 *
 * Entry:
 *   HOT_KNAME (const float *src, int cols, long long L, long long B, int flat, int k_pad,
 *              int phase, float *work, int *bad, unsigned char *codes, unsigned char *scales,
 *              unsigned long long seed, unsigned tag, unsigned step)
 *   src    x (T x I) or g_y (T x O), fp32 row-major, T = B * L, cols = I or O; only read.
 *   flat   0: token blocks per sample (segment s = tokens s * L .. s * L + L - 1), 1: across the
 *          flat batch (one segment of T tokens); each segment padded to seg_len = p * ceil(len /
 *          p); blocks = segments * seg_len / p, K = blocks * r (k_pad must be K rounded up to 32).
 *   work   segments * seg_len * cols floats of scratch (the caller's; phase 0 writes all of it,
 *          phase 1 reads it): the FWHT of every token block, token-major (row blk * p + j).
 *   bad    the caller zeroes it; phase 0 sets it to 1 when an input value or a selected projected
 *          value is not finite (the twin's -4): phase 1's output must not be used then.
 * Two launches, phase 0 then phase 1 (stream order):
 *   phase 0: one thread per (token block, column): load, FWHT in work, the finiteness check;
 *            grid = (ceil(blocks * cols / 256), 1, 1);
 *   phase 1: one thread per (column, 32-value block of K): gather the r selected rows from work,
 *            E8M0 scale, 32 codes (one 32-byte run), every byte of codes and scales written;
 *            grid = (ceil(cols * k_pad / 32 / 256), 1, 1).
 * block = (256, 1, 1), no shared memory. Constraints: blocks * p * cols < 2^62, k_pad * cols <
 * 2^62, codes 4-byte aligned (k_pad is a multiple of 32).
 * This is the correctness-first form: the FWHT runs through the work buffer (L1 / L2), one Philox
 * evaluation per SR code (the 32 indices of a block are cols apart); speed is not measured.
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_hla_mxfp8
#define HOT_MODE 1
#define HOT_ROUND 1
#define HOT_P 16
#define HOT_R 10
#define HOT_ROWS 0, 8, 12, 4, 14, 10, 2, 3, 11, 1
#endif

#include "hot_math.cuh"

#define HOT_MXTHREADS 256

static_assert(HOT_MODE == 0 || HOT_MODE == 1, "HOT_MODE must be 0 (x^) or 1 (g^)");
static_assert(HOT_ROUND == 0 || HOT_ROUND == 1, "HOT_ROUND must be 0 (RTN) or 1 (SR)");
static_assert(HOT_ROUND == 0 || HOT_MODE == 1, "x^ has no random stream: HOT_ROUND 0");
static_assert(HOT_P >= 1 && HOT_P <= 1024 && (HOT_P & (HOT_P - 1)) == 0,
              "p must be a power of two in [1, 1024]");
static_assert(HOT_R >= 1 && HOT_R <= HOT_P, "rank in [1, p]");

/* The selected natural rows of H_p, in the order of K. */
__constant__ unsigned short hot_mx_rows[HOT_R] = {HOT_ROWS};

/* The E4M3 code of v / 2^e as the twin's nvfp4_e4m3_encode (RTN or SR with `word`; v finite):
 * the magnitude rounded on the E4M3 grid, saturated to 448, the sign bit copied from v. */
static __device__ __forceinline__ unsigned hot_mx_e4m3(float v, unsigned word) {
  const unsigned sign = signbit(v) ? 0x80u : 0u;
  const float a = fabsf(v);
  if (a > 448.0f) return sign | 0x7Eu;
  if (!(a > 0.0f)) return sign;
  int ex;
  frexpf(a, &ex);
  const int e = ex - 1 < -6 ? -6 : ex - 1;
  const float ulp = ldexpf(1.0f, e - 3);
  float q = HOT_DIV(a, ulp); /* exact: a power of two */
  if (HOT_ROUND) {
    const float f = HOT_FLOOR(q);
    q = f + (hot_rho(word) < HOT_SUB(q, f) ? 1.0f : 0.0f);
  } else {
    q = HOT_RINT(q);
    (void)word;
  }
  const float r = fminf(HOT_MUL(q, ulp), 448.0f); /* exact; 480 saturates */
  if (r == 0.0f) return sign;
  const float fr = frexpf(r, &ex);
  if (ex - 1 < -6) return sign | (unsigned)ldexpf(r, 9); /* subnormal: man * 2^-9 */
  return sign | (unsigned)((ex - 1 + 7) << 3) | (unsigned)((fr * 2.0f - 1.0f) * 8.0f);
}

/* The E8M0 exponent of a block: the smallest e with amax <= 448 * 2^e, in [-127, 127]. */
static __device__ __forceinline__ int hot_mx_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  int ex;
  const float fr = frexpf(amax, &ex); /* 448 = 0.875 * 2^9 */
  const int e = ex - 9 + (fr > 0.875f ? 1 : 0);
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

#if HOT_ROUND == 1
/* hot_rand_word without a dynamically indexed struct (which would live in local memory). */
static __device__ __forceinline__ unsigned hot_mx_word(unsigned long long seed, unsigned tag,
                                                       unsigned step, unsigned long long idx) {
  const unsigned long long b = idx >> 2;
  const hot_philox_out o = hot_philox4x32_10((unsigned)(b & 0xffffffffull), (unsigned)(b >> 32),
                                             tag, step, (unsigned)(seed & 0xffffffffull),
                                             (unsigned)(seed >> 32));
  const unsigned w = (unsigned)(idx & 3ull);
  return w == 0 ? o.v[0] : w == 1 ? o.v[1] : w == 2 ? o.v[2] : o.v[3];
}
#endif

/* Phase 0 for token block blk, column c: the block's p values of column c (zeros for padded
 * tokens) into work, the FWHT there (hot_fwht's stages on a strided column), the check. */
static __device__ __forceinline__ void hot_mx_project(const float *__restrict__ src, int cols,
                                                      long long L, int flat, long long real,
                                                      long long per, long long blk, int c,
                                                      float *__restrict__ work, int *bad) {
  const long long s = blk / per, q = blk % per;
  const long long base = (flat ? 0 : s * L) + q * HOT_P; /* first token of the block */
  float *w = work + blk * HOT_P * (long long)cols + c;
  bool finite = true;
  for (int j = 0; j < HOT_P; ++j) {
    const float v = q * HOT_P + j < real ? src[(base + j) * cols + c] : 0.0f;
    finite = finite && isfinite(v);
    w[(long long)j * cols] = v;
  }
  for (int h = 1; h < HOT_P; h <<= 1)
    for (int j = 0; j < HOT_P; ++j) {
      if (j & h) continue;
      const float x = w[(long long)j * cols], y = w[(long long)(j + h) * cols];
      w[(long long)j * cols] = HOT_ADD(x, y);
      w[(long long)(j + h) * cols] = HOT_SUB(x, y);
    }
  for (int j = 0; j < HOT_R; ++j) finite = finite && isfinite(w[(long long)hot_mx_rows[j] * cols]);
  if (!finite) atomicOr(bad, 1);
}

extern "C" __global__ void __launch_bounds__(HOT_MXTHREADS)
    HOT_KNAME(const float *__restrict__ src, int cols, long long L, long long B, int flat,
              int k_pad, int phase, float *__restrict__ work, int *bad,
              unsigned char *__restrict__ codes, unsigned char *__restrict__ scales,
              unsigned long long seed, unsigned tag, unsigned step) {
  const long long real = flat ? B * L : L, seg_len = (real + HOT_P - 1) / HOT_P * HOT_P;
  const long long per = seg_len / HOT_P, blocks = (flat ? 1 : B) * per, K = blocks * HOT_R;
  const long long id = (long long)blockIdx.x * HOT_MXTHREADS + threadIdx.x;
  if (phase == 0) {
    if (id >= blocks * cols) return;
    hot_mx_project(src, cols, L, flat, real, per, id / cols, (int)(id % cols), work, bad);
    return;
  }
  const int nb = k_pad / 32;
  if (id >= (long long)cols * nb) return;
  const int c = (int)(id % cols), b = (int)(id / cols); /* a warp: consecutive columns */
  float v[32];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const long long kk = (long long)b * 32 + i;
    v[i] = 0.0f;
    if (kk < K) {
      const long long blk = kk / HOT_R;
      const int j = (int)(kk % HOT_R);
      v[i] = work[(blk * HOT_P + hot_mx_rows[j]) * (long long)cols + c];
    }
    amax = fmaxf(amax, fabsf(v[i]));
  }
  const int e = hot_mx_exponent(amax);
  const float X = ldexpf(1.0f, e);
  unsigned word[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
#pragma unroll
  for (int i = 0; i < 32; ++i) { /* element kk = 32 b + i: byte i of the run */
    const long long kk = (long long)b * 32 + i;
    unsigned code = 0u;
    if (kk < K) {
#if HOT_ROUND == 1
      const unsigned rw = hot_mx_word(seed, tag, step, (unsigned long long)(kk * cols + c));
#else
      const unsigned rw = 0u;
#endif
      code = hot_mx_e4m3(HOT_DIV(v[i], X), rw);
    }
    word[i >> 2] |= code << (8 * (i & 3));
  }
#if HOT_ROUND == 0
  (void)seed, (void)tag, (void)step;
#endif
  unsigned *out = (unsigned *)(codes + (long long)c * k_pad + (long long)b * 32);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = word[i];
  scales[(long long)c * nb + b] = (unsigned char)(e + 127);
}

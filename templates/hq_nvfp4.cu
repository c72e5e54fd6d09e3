/* @hot-params: HOT_KNAME HOT_OPERAND HOT_ROUND */
/* hq_nvfp4.cu — HQ's NVFP4 quantisers of recipe nvfp4 (CONTRACT.md 20.3, 20.6; twins
 * nvfp4_hq_quant_g and nvfp4_hq_quant_w in templates/nvfp4_ref.c), the operands of the sm_120a
 * NVFP4 GEMM (templates/gemm_nvfp4.cu):
 *   HOT_OPERAND 0, g': row t of g_y (T x O, row-major), element o at src[t * O + o];
 *   HOT_OPERAND 1, w': row i is column i of w (O x I, row-major), element o at src[o * rows + i];
 * each row zero-padded to o_pad = 16 * ceil(O / 16), H_16 (hot_fwht) on every 16 values, then
 * NVFP4 along the row: the tensor scale s_t = amax / 2688 (0 for amax = 0), per 16 values an
 * E4M3 scale rounded UP of (amax_b / s_t) / 6, codes E2M1 of (v / s_t) / s_b clamped to [-6, 6],
 * RTN (HOT_ROUND 0) or SR (HOT_ROUND 1) with the word hot_rand_word(seed, tag, step,
 * t * o_pad + o) (tag = layer_id * 16 + 1 for g') — every rounding as the twin's.
 *
 * Entry:
 *   HOT_KNAME (const float *src, int rows, int O, int o_pad, int phase, unsigned *amax_word,
 *              int *bad, unsigned char *codes, unsigned char *scales, float *s_t,
 *              unsigned long long seed, unsigned tag, unsigned step)
 * Two launches over the same grid, phase 0 then phase 1 (stream order):
 *   phase 0: the transformed tensor's amax into *amax_word (atomicMax on the bits of a
 *            non-negative float: exact, order-free; the caller zeroes it first) and *bad = 1
 *            when a transformed value is not finite (the twin's -4; the caller zeroes it first
 *            and must not use phase 1's output when it is set);
 *   phase 1: s_t from *amax_word (thread 0 writes *s_t), then codes[rows * o_pad / 2] (element 2j
 *            in the low nibble of byte j) and scales[rows * o_pad / 16], every byte written.
 * One thread per (row, 16-value block); the transform is recomputed in phase 1 (same bits).
 *
 * Launch geometry: grid = (ceil(rows * o_pad / 16 / 256), 1, 1), block = (256, 1, 1), no shared
 * memory. Constraints: o_pad = 16 * ceil(O / 16) <= 2^31 - 16, rows * o_pad < 2^62 (the SR
 * index), codes 4-byte aligned (o_pad / 2 is a multiple of 8 bytes).
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_hq_nvfp4
#define HOT_OPERAND 0
#define HOT_ROUND 1
#endif

#include "hot_math.cuh"

#define HOT_QTHREADS 256

static_assert(HOT_OPERAND == 0 || HOT_OPERAND == 1, "HOT_OPERAND must be 0 (g') or 1 (w')");
static_assert(HOT_ROUND == 0 || HOT_ROUND == 1, "HOT_ROUND must be 0 (RTN) or 1 (SR)");

/* ---- E4M3 and E2M1 as CONTRACT.md 20.1, 20.2 (the twin's steps, for the values used here) ---- */

/* E4M3 code of d >= 0 (not NaN), rounded UP on the E4M3 grid, saturated to 448 (0x7E). */
static __device__ __forceinline__ unsigned hot_e4m3_up(float d) {
  if (d > 448.0f) return 0x7Eu;
  if (!(d > 0.0f)) return 0u;
  const int e = ilogbf(d) < -6 ? -6 : ilogbf(d); /* ilogbf = the twin's frexpf exponent - 1 */
  const float ulp = ldexpf(1.0f, e - 3);
  const float r = fminf(HOT_MUL(ceilf(HOT_DIV(d, ulp)), ulp), 448.0f); /* exact */
  const int er = ilogbf(r);                                            /* r > 0 */
  if (er < -6) return (unsigned)ldexpf(r, 9); /* subnormal: man * 2^-9 */
  return (unsigned)((er + 7) << 3) | (unsigned)((ldexpf(r, -er) - 1.0f) * 8.0f);
}

/* The value of an E4M3 code of hot_e4m3_up (never NaN, never negative). */
static __device__ __forceinline__ float hot_e4m3_value(unsigned c) {
  const unsigned e = (c >> 3) & 15u, man = c & 7u;
  return e == 0u ? ldexpf((float)man, -9) : ldexpf(1.0f + (float)man / 8.0f, (int)e - 7);
}

/* E2M1 code of u (|u| <= 6 after the clamp): RTN ties to even, or SR with `word`. */
static __device__ __forceinline__ unsigned hot_e2m1(float u, unsigned word) {
  const float m = fminf(fabsf(u), 6.0f);
  const float d = m < 2.0f ? 0.5f : (m < 4.0f ? 1.0f : 2.0f);
  const float t = HOT_DIV(m, d); /* exact: a power of two */
  float q;
  if (HOT_ROUND) {
    const float lo = HOT_FLOOR(t);
    q = lo + (hot_rho(word) < HOT_SUB(t, lo) ? 1.0f : 0.0f);
  } else {
    q = HOT_RINT(t);
    (void)word;
  }
  /* the segment is m's (the twin's code_of(m, lo) + carry: q counts from the segment's base) */
  const unsigned mag = m < 2.0f ? (unsigned)q : (m < 4.0f ? (unsigned)q + 2u : (unsigned)q + 4u);
  return (u < 0.0f && mag != 0u) ? (mag | 8u) : mag;
}

/* The 16 transformed values of block j of row r. */
static __device__ __forceinline__ void hot_load_block(const float *__restrict__ src, int rows,
                                                      int O, long long r, int j, float *v) {
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int o = j * 16 + i;
    v[i] = 0.0f;
    if (o < O) v[i] = HOT_OPERAND == 0 ? src[r * O + o] : src[(long long)o * rows + r];
  }
  hot_fwht(v, 16);
}

extern "C" __global__ void __launch_bounds__(HOT_QTHREADS)
    HOT_KNAME(const float *__restrict__ src, int rows, int O, int o_pad, int phase,
              unsigned *amax_word, int *bad, unsigned char *__restrict__ codes,
              unsigned char *__restrict__ scales, float *s_t, unsigned long long seed,
              unsigned tag, unsigned step) {
  const long long nb = o_pad / 16;
  const long long id = (long long)blockIdx.x * HOT_QTHREADS + threadIdx.x;
  if (phase == 1 && id == 0) {
    const float amax = __uint_as_float(*amax_word);
    *s_t = amax > 0.0f ? HOT_DIV(amax, 2688.0f) : 0.0f;
  }
  if (id >= (long long)rows * nb) return;
  const long long r = id / nb;
  const int j = (int)(id % nb);
  float v[16];
  hot_load_block(src, rows, O, r, j, v);
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) amax = fmaxf(amax, fabsf(v[i]));
  if (phase == 0) {
    bool finite = true;
#pragma unroll
    for (int i = 0; i < 16; ++i) finite = finite && isfinite(v[i]);
    if (!finite) atomicOr(bad, 1);
    else if (amax > 0.0f) atomicMax(amax_word, __float_as_uint(amax));
    return;
  }
  const float amax_t = __uint_as_float(*amax_word);
  const float st = amax_t > 0.0f ? HOT_DIV(amax_t, 2688.0f) : 0.0f;
  unsigned sc = 0u, word[2] = {0u, 0u};
  float sb = 0.0f;
  if (st > 0.0f) {
    sc = hot_e4m3_up(HOT_DIV(HOT_DIV(amax, st), 6.0f));
    sb = hot_e4m3_value(sc);
  }
  /* The SR words: the block's 16 indices r * o_pad + j * 16 + c are four whole Philox blocks
   * (o_pad is a multiple of 16), so word c is v[c & 3] of counter (first index >> 2) + c / 4 —
   * hot_rand_word's word for that index, one Philox evaluation per 4 elements. */
  const hot_u64 q0 = (hot_u64)(r * o_pad + j * 16) >> 2;
#pragma unroll
  for (int g = 0; g < 4; ++g) {
    hot_philox_out ph = {{0u, 0u, 0u, 0u}};
    if (HOT_ROUND && sb > 0.0f) {
      const hot_u64 q = q0 + (hot_u64)g;
      ph = hot_philox4x32_10((hot_u32)(q & 0xffffffffu), (hot_u32)(q >> 32), tag, step,
                             (hot_u32)(seed & 0xffffffffu), (hot_u32)(seed >> 32));
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) { /* element c: nibble c % 8 of word c / 8 (2j low in byte j) */
      const int c = 4 * g + i;
      unsigned code = 0u;
      if (sb > 0.0f) {
        float u = HOT_DIV(HOT_DIV(v[c], st), sb);
        u = fmaxf(-6.0f, fminf(6.0f, u));
        code = hot_e2m1(u, ph.v[i]);
      }
      word[c >> 3] |= code << (4 * (c & 7));
    }
  }
  unsigned *out = (unsigned *)(codes + r * (o_pad / 2) + j * 8);
  out[0] = word[0];
  out[1] = word[1];
  scales[r * nb + j] = (unsigned char)sc;
}

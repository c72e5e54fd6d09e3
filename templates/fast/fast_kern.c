/* fast_kern.c — the per-element kernels of the fast CPU path: Philox words, the RTN/SR
 * quantizer, amax, the FWHT along a row and down columns, dtype loads. Each has a scalar form
 * built from hot_math.cuh (the twins' own steps) and an AVX2 form that performs, per element,
 * the very same IEEE operations (vdivps, vaddps, vsubps, vmulps and vroundps round once, like the
 * scalar code built with -ffp-contract=off), so the two give the same bits. */
#include <string.h>

#include "fast_internal.h"
#include "hot_math.cuh"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FAST_X86 1
#define AVX2_FN __attribute__((target("avx2")))
#else
#define FAST_X86 0
#endif

/* ---- Philox ------------------------------------------------------------------------------- */

static void philox_scalar(const fast_rng *r, uint64_t q0, int64_t nq, uint32_t *out) {
  for (int64_t j = 0; j < nq; ++j) {
    uint64_t q = q0 + (uint64_t)j;
    hot_philox_out o = hot_philox4x32_10((uint32_t)(q & 0xffffffffu), (uint32_t)(q >> 32), r->tag,
                                         r->step, (uint32_t)(r->seed & 0xffffffffu),
                                         (uint32_t)(r->seed >> 32));
    memcpy(out + 4 * j, o.v, sizeof o.v);
  }
}

#if FAST_X86
/* 32 x 32 -> high and low 32 bits of each lane's product with the constant m. */
AVX2_FN static inline void mul_hilo(__m256i c, __m256i m, __m256i *hi, __m256i *lo) {
  __m256i pe = _mm256_mul_epu32(c, m);                        /* lanes 0, 2, 4, 6 (64-bit) */
  __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m); /* lanes 1, 3, 5, 7 */
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
  *lo = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
}

/* Eight Philox calls (counters q0 .. q0+7) at once: 32 words in element order. */
AVX2_FN static void philox8_avx2(const fast_rng *r, uint64_t q0, uint32_t *out) {
  uint32_t lo[8], hi[8];
  for (int l = 0; l < 8; ++l) {
    uint64_t q = q0 + (uint64_t)l;
    lo[l] = (uint32_t)(q & 0xffffffffu);
    hi[l] = (uint32_t)(q >> 32);
  }
  __m256i c0 = _mm256_loadu_si256((const __m256i *)lo), c1 = _mm256_loadu_si256((const __m256i *)hi);
  __m256i c2 = _mm256_set1_epi32((int)r->tag), c3 = _mm256_set1_epi32((int)r->step);
  uint32_t k0 = (uint32_t)(r->seed & 0xffffffffu), k1 = (uint32_t)(r->seed >> 32);
  const __m256i m0 = _mm256_set1_epi32((int)0xD2511F53u), m1 = _mm256_set1_epi32((int)0xCD9E8D57u);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    __m256i hi0, lo0, hi1, lo1;
    mul_hilo(c0, m0, &hi0, &lo0);
    mul_hilo(c2, m1, &hi1, &lo1);
    __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
    __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpacklo_epi32(c2, c3);
  __m256i t2 = _mm256_unpackhi_epi32(c0, c1), t3 = _mm256_unpackhi_epi32(c2, c3);
  __m256i u0 = _mm256_unpacklo_epi64(t0, t1), u1 = _mm256_unpackhi_epi64(t0, t1);
  __m256i u2 = _mm256_unpacklo_epi64(t2, t3), u3 = _mm256_unpackhi_epi64(t2, t3);
  _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(u0, u1, 0x20));
  _mm256_storeu_si256((__m256i *)(out + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
  _mm256_storeu_si256((__m256i *)(out + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
  _mm256_storeu_si256((__m256i *)(out + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
}
#endif

void fast_philox_words(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words, int level) {
  uint32_t buf[32];
  int64_t i = 0;
  while (i < n) {
    uint64_t idx = idx0 + (uint64_t)i, q = idx >> 2;
    int64_t skip = (int64_t)(idx & 3u), take;
#if FAST_X86
    if (level >= FAST_LEVEL_AVX2) {
      if (skip == 0 && n - i >= 32) { /* a whole block: straight into words */
        philox8_avx2(r, q, words + i);
        i += 32;
        continue;
      }
      philox8_avx2(r, q, buf);
      take = 32 - skip;
    } else
#endif
    {
      philox_scalar(r, q, 1, buf);
      take = 4 - skip;
    }
    if (take > n - i) take = n - i;
    memcpy(words + i, buf + skip, (size_t)take * sizeof *words);
    i += take;
  }
}

/* ---- quantizer ---------------------------------------------------------------------------- */

static void quant_scalar(const float *v, int64_t n, float s, int qmax, int sr, const uint32_t *w,
                         int8_t *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = (int8_t)(sr ? hot_quant_sr(v[i], s, qmax, w[i]) : hot_quant_rtn(v[i], s, qmax));
}

#if FAST_X86
AVX2_FN static __m256i quant8_avx2(const float *v, __m256 s, __m256 q, __m256 nq, int sr,
                                   const uint32_t *w) {
  __m256 u = _mm256_div_ps(_mm256_loadu_ps(v), s);
  /* hot_scaled: u > q ? q : (u < -q ? -q : u), on finite u */
  u = _mm256_blendv_ps(u, nq, _mm256_cmp_ps(u, nq, _CMP_LT_OQ));
  u = _mm256_blendv_ps(u, q, _mm256_cmp_ps(u, q, _CMP_GT_OQ));
  if (!sr) return _mm256_cvttps_epi32(_mm256_round_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  __m256 f = _mm256_floor_ps(u);
  __m256 frac = _mm256_sub_ps(u, f);
  __m256i word = _mm256_srli_epi32(_mm256_loadu_si256((const __m256i *)w), 8);
  __m256 rho = _mm256_mul_ps(_mm256_cvtepi32_ps(word), _mm256_set1_ps(5.9604644775390625e-8f));
  __m256i up = _mm256_castps_si256(_mm256_cmp_ps(rho, frac, _CMP_LT_OQ)); /* -1 where rounded up */
  return _mm256_sub_epi32(_mm256_cvttps_epi32(f), up);
}

AVX2_FN static void quant_avx2(const float *v, int64_t n, float s, int qmax, int sr,
                               const uint32_t *w, int8_t *out) {
  if (!(s > 0.0f)) { /* hot_scaled gives 0: every code is 0 (SR adds rho < 0, never) */
    memset(out, 0, (size_t)n);
    return;
  }
  const __m256 vs = _mm256_set1_ps(s), q = _mm256_set1_ps(HOT_I2F(qmax)), nq = _mm256_set1_ps(-HOT_I2F(qmax));
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i a = quant8_avx2(v + i, vs, q, nq, sr, w + i);
    __m256i b = quant8_avx2(v + i + 8, vs, q, nq, sr, w + i + 8);
    __m256i c = quant8_avx2(v + i + 16, vs, q, nq, sr, w + i + 16);
    __m256i d = quant8_avx2(v + i + 24, vs, q, nq, sr, w + i + 24);
    __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    __m256i x = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), perm);
    _mm256_storeu_si256((__m256i *)(out + i), x);
  }
  for (; i + 8 <= n; i += 8) {
    int32_t t[8];
    _mm256_storeu_si256((__m256i *)t, quant8_avx2(v + i, vs, q, nq, sr, w + i));
    for (int j = 0; j < 8; ++j) out[i + j] = (int8_t)t[j];
  }
  quant_scalar(v + i, n - i, s, qmax, sr, sr ? w + i : NULL, out + i);
}
#endif

void fast_quant_run(const float *v, int64_t n, float s, int qmax, int sr, const uint32_t *words,
                    int8_t *out, int level) {
#if FAST_X86
  if (level >= FAST_LEVEL_AVX2) {
    quant_avx2(v, n, s, qmax, sr, words, out);
    return;
  }
#endif
  (void)level;
  quant_scalar(v, n, s, qmax, sr, words, out);
}

/* ---- amax --------------------------------------------------------------------------------- */

static int amax_scalar(const float *v, int64_t n, float *amax) {
  float m = *amax;
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) return 0;
    float a = fabsf(v[i]);
    if (a > m) m = a;
  }
  *amax = m;
  return 1;
}

#if FAST_X86
AVX2_FN static int amax_avx2(const float *v, int64_t n, float *amax) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 big = _mm256_set1_ps(3.40282347e+38f);
  __m256 m = _mm256_setzero_ps(), ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_and_ps(_mm256_loadu_ps(v + i), absmask);
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(a, big, _CMP_LE_OQ)); /* false for Inf and NaN */
    m = _mm256_max_ps(m, a);
  }
  if (_mm256_movemask_ps(ok) != 0xff) return 0;
  float t[8];
  _mm256_storeu_ps(t, m);
  float r = *amax;
  for (int j = 0; j < 8; ++j) r = t[j] > r ? t[j] : r; /* max is order-free on finite values */
  *amax = r;
  return amax_scalar(v + i, n - i, amax);
}
#endif

int fast_amax_run(const float *v, int64_t n, float *amax, int level) {
#if FAST_X86
  if (level >= FAST_LEVEL_AVX2) return amax_avx2(v, n, amax);
#endif
  (void)level;
  return amax_scalar(v, n, amax);
}

/* ---- FWHT --------------------------------------------------------------------------------- */

#if FAST_X86
/* The stages h = 1, 2, 4 (those below b) inside one vector of 8 consecutive entries: each
 * output is HOT_ADD(x, y) or HOT_SUB(x, y) of the same pair as in hot_fwht_stage. */
AVX2_FN static inline __m256 fwht8_avx2(__m256 v, int b) {
  if (b > 1) { /* h = 1: pairs (0,1), (2,3), ... */
    __m256 a = _mm256_moveldup_ps(v), c = _mm256_movehdup_ps(v);
    v = _mm256_blend_ps(_mm256_add_ps(a, c), _mm256_sub_ps(a, c), 0xAA);
  }
  if (b > 2) { /* h = 2 */
    __m256 a = _mm256_permute_ps(v, 0x44), c = _mm256_permute_ps(v, 0xEE);
    v = _mm256_blend_ps(_mm256_add_ps(a, c), _mm256_sub_ps(a, c), 0xCC);
  }
  if (b > 4) { /* h = 4 */
    __m256 a = _mm256_permute2f128_ps(v, v, 0x00), c = _mm256_permute2f128_ps(v, v, 0x11);
    v = _mm256_blend_ps(_mm256_add_ps(a, c), _mm256_sub_ps(a, c), 0xF0);
  }
  return v;
}

AVX2_FN static void fwht_row_avx2(float *a, const float *src, int64_t n, int b) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(a + i, fwht8_avx2(_mm256_loadu_ps(src + i), b));
  if (i < n && src != a) memcpy(a + i, src + i, (size_t)(n - i) * sizeof *a);
  for (; i < n; i += b) hot_fwht(a + i, b); /* b < 8 tail */
  for (int h = 8; h < b; h <<= 1)
    for (int64_t o = 0; o < n; o += b)
      for (int64_t j = o; j < o + b; j += 2 * h)
        for (int64_t k = j; k < j + h; k += 8) {
          __m256 x = _mm256_loadu_ps(a + k), y = _mm256_loadu_ps(a + k + h);
          _mm256_storeu_ps(a + k, _mm256_add_ps(x, y));
          _mm256_storeu_ps(a + k + h, _mm256_sub_ps(x, y));
        }
}

AVX2_FN static void fwht_cols_avx2(float *m, int p, int64_t cols, int64_t ld, int h0) {
  for (int h = h0; h < p; h <<= 1)
    for (int j = 0; j < p; ++j) {
      if (j & h) continue;
      float *x = m + (int64_t)j * ld, *y = m + (int64_t)(j + h) * ld;
      int64_t c = 0;
      for (; c + 8 <= cols; c += 8) {
        __m256 a = _mm256_loadu_ps(x + c), d = _mm256_loadu_ps(y + c);
        _mm256_storeu_ps(x + c, _mm256_add_ps(a, d));
        _mm256_storeu_ps(y + c, _mm256_sub_ps(a, d));
      }
      for (; c < cols; ++c) {
        float a = x[c], d = y[c];
        x[c] = HOT_ADD(a, d);
        y[c] = HOT_SUB(a, d);
      }
    }
}
#endif

void fast_fwht_row(float *a, const float *src, int64_t n, int b, int level) {
#if FAST_X86
  if (b > 1 && level >= FAST_LEVEL_AVX2 && (b >= 8 || n % 8 == 0)) {
    fwht_row_avx2(a, src, n, b);
    return;
  }
#endif
  (void)level;
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
  for (int64_t o = 0; b > 1 && o < n; o += b) hot_fwht(a + o, b);
}

/* The stages h0, 2 h0, ... < p of fast_fwht_cols. */
static void fwht_cols_from(float *m, int p, int64_t cols, int64_t ld, int h0, int level) {
#if FAST_X86
  if (level >= FAST_LEVEL_AVX2) {
    fwht_cols_avx2(m, p, cols, ld, h0);
    return;
  }
#endif
  (void)level;
  for (int h = h0; h < p; h <<= 1)
    for (int j = 0; j < p; ++j) {
      if (j & h) continue;
      float *x = m + (int64_t)j * ld, *y = m + (int64_t)(j + h) * ld;
      for (int64_t c = 0; c < cols; ++c) {
        float a = x[c], d = y[c];
        x[c] = HOT_ADD(a, d);
        y[c] = HOT_SUB(a, d);
      }
    }
}

void fast_fwht_cols(float *m, int p, int64_t cols, int64_t ld, int level) {
  fwht_cols_from(m, p, cols, ld, 1, level);
}

#if FAST_X86
AVX2_FN static int64_t stage1_avx2(float *x, float *y, const float *sx, const float *sy,
                                   int64_t cols) {
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    const __m256 a = sx ? _mm256_loadu_ps(sx + c) : _mm256_setzero_ps();
    const __m256 d = sy ? _mm256_loadu_ps(sy + c) : _mm256_setzero_ps();
    _mm256_storeu_ps(x + c, _mm256_add_ps(a, d));
    _mm256_storeu_ps(y + c, _mm256_sub_ps(a, d));
  }
  return c;
}
#endif

void fast_fwht_cols_src(float *m, int p, int64_t cols, int64_t ld, const float *const *src,
                        int level) {
  if (p < 2) {
    if (p == 1) {
      if (src[0]) memcpy(m, src[0], (size_t)cols * sizeof *m);
      else memset(m, 0, (size_t)cols * sizeof *m);
    }
    return;
  }
  for (int j = 0; j < p; j += 2) { /* stage h = 1 straight from the sources (+0.0 for NULL) */
    float *x = m + (int64_t)j * ld, *y = x + ld;
    const float *sx = src[j], *sy = src[j + 1];
    int64_t c = 0;
#if FAST_X86
    if (level >= FAST_LEVEL_AVX2) c = stage1_avx2(x, y, sx, sy, cols);
#endif
    for (; c < cols; ++c) {
      const float a = sx ? sx[c] : 0.0f, d = sy ? sy[c] : 0.0f;
      x[c] = HOT_ADD(a, d);
      y[c] = HOT_SUB(a, d);
    }
  }
  fwht_cols_from(m, p, cols, ld, 2, level);
}

/* ---- column sums ---------------------------------------------------------------------------- */

#if FAST_X86
AVX2_FN static int add_avx2(float *acc, const float *v, int64_t n) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 big = _mm256_set1_ps(3.40282347e+38f);
  __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(v + i);
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(x, absmask), big, _CMP_LE_OQ));
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), x));
  }
  int good = _mm256_movemask_ps(ok) == 0xff;
  for (; i < n; ++i) {
    if (!isfinite(v[i])) good = 0;
    acc[i] = HOT_ADD(acc[i], v[i]);
  }
  return good;
}
#endif

int fast_add_run(float *acc, const float *v, int64_t n, int level) {
#if FAST_X86
  if (level >= FAST_LEVEL_AVX2) return add_avx2(acc, v, n);
#endif
  (void)level;
  int good = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) good = 0;
    acc[i] = HOT_ADD(acc[i], v[i]);
  }
  return good;
}

/* ---- GEMM epilogue ---------------------------------------------------------------------------- */

#if FAST_X86
AVX2_FN static void scale_avx2(float *o, const int32_t *a, int64_t n, float f, int add) {
  const __m256 vf = _mm256_set1_ps(f);
  int64_t i = 0;
  if (!add && ((uintptr_t)o & 31) == 0) { /* fresh output: streaming stores (no read for owning) */
    for (; i + 8 <= n; i += 8)
      _mm256_stream_ps(o + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(a + i))), vf));
    _mm_sfence();
  }
  for (; i + 8 <= n; i += 8) {
    __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(a + i))), vf);
    if (add) p = _mm256_add_ps(_mm256_loadu_ps(o + i), p);
    _mm256_storeu_ps(o + i, p);
  }
  for (; i < n; ++i) o[i] = add ? HOT_ADD(o[i], HOT_MUL(HOT_I2F(a[i]), f)) : HOT_MUL(HOT_I2F(a[i]), f);
}
#endif

void fast_scale_run(float *o, const int32_t *a, int64_t n, float f, int add, int level) {
#if FAST_X86
  if (level >= FAST_LEVEL_AVX2) {
    scale_avx2(o, a, n, f, add);
    return;
  }
#endif
  (void)level;
  if (add)
    for (int64_t i = 0; i < n; ++i) o[i] = HOT_ADD(o[i], HOT_MUL(HOT_I2F(a[i]), f));
  else
    for (int64_t i = 0; i < n; ++i) o[i] = HOT_MUL(HOT_I2F(a[i]), f);
}

/* ---- loads -------------------------------------------------------------------------------- */

void fast_load_run(const void *src, hot_dtype dt, int64_t off, int64_t n, float *dst) {
  if (dt == HOT_DT_F32) {
    memcpy(dst, (const float *)src + off, (size_t)n * sizeof *dst);
  } else if (dt == HOT_DT_BF16) {
    const unsigned short *s = (const unsigned short *)src + off;
    for (int64_t i = 0; i < n; ++i) dst[i] = hot_bf16_to_f32(s[i]);
  } else {
    const unsigned short *s = (const unsigned short *)src + off;
    for (int64_t i = 0; i < n; ++i) dst[i] = hot_f16_to_f32(s[i]);
  }
}

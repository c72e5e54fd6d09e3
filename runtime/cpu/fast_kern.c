/* fast_kern.c — the per-element kernels of the fast CPU path: Philox words, the RTN/SR
 * quantizer, amax, the FWHT along a row and down columns, dtype loads. Each has a scalar form
 * built from hot_math.cuh (the twins' own steps) and an AVX2 form that performs, per element,
 * the very same IEEE operations (vdivps, vaddps, vsubps, vmulps and vroundps round once, like the
 * scalar code built with -ffp-contract=off), so the two give the same bits; Philox, the
 * quantizer and the column FWHT also have 512-bit forms (the same operations on 16 lanes) for
 * the avx512-vnni and amx-int8 levels. */
#include <string.h>

#include "fast_internal.h"
#include "hot_math.cuh"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FAST_X86 1
#define AVX2_FN __attribute__((target("avx2")))
#define AVX512_FN __attribute__((target("avx2,avx512f")))
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
/* The key schedule of one stream, as 32-bit broadcasts in 64-bit lanes: round r uses
 * k0 + r * 0x9E3779B9 and k1 + r * 0xBB67AE85 (the same for every counter, so computed once per
 * call of fast_philox_words rather than per block). */
typedef struct {
  __m256i k0[10], k1[10];
} philox_keys;

AVX2_FN static void philox_keys_init(const fast_rng *r, philox_keys *k) {
  uint32_t k0 = (uint32_t)(r->seed & 0xffffffffu), k1 = (uint32_t)(r->seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    k->k0[round] = _mm256_set1_epi64x((long long)k0);
    k->k1[round] = _mm256_set1_epi64x((long long)k1);
  }
}

/* Eight Philox calls (counters q0 .. q0+7) at once: 32 words in element order. Two groups of
 * four counters, one counter per 64-bit lane with its 32-bit state word in the low half:
 * vpmuludq then gives the whole 64-bit product (high word by one shift, low word in place), and
 * the garbage that the XORs and the kept low products leave in the high halves is never read
 * (vpmuludq reads the low halves only; the final packing drops them). The two groups are
 * independent chains, so their rounds overlap. */
AVX2_FN static void philox8_avx2(const fast_rng *r, const philox_keys *k, uint64_t q0,
                                 uint32_t *out) {
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53ll), m1 = _mm256_set1_epi64x(0xCD9E8D57ll);
  const __m256i q = _mm256_add_epi64(_mm256_set1_epi64x((long long)q0), _mm256_setr_epi64x(0, 1, 2, 3));
  const __m256i q4 = _mm256_add_epi64(q, _mm256_set1_epi64x(4));
  __m256i a0 = q, a1 = _mm256_srli_epi64(q, 32), b0 = q4, b1 = _mm256_srli_epi64(q4, 32);
  __m256i a2 = _mm256_set1_epi64x((long long)r->tag), a3 = _mm256_set1_epi64x((long long)r->step);
  __m256i b2 = a2, b3 = a3;
  /* unrolled: the state's renaming then costs nothing (as a loop GCC 12 copied five vectors per
   * round); 1.06x the words per second. Three or four groups instead of two were no faster
   * (measured: their states no longer fit the 16 registers). */
#pragma GCC unroll 10
  for (int round = 0; round < 10; ++round) {
    const __m256i pa0 = _mm256_mul_epu32(a0, m0), pa1 = _mm256_mul_epu32(a2, m1);
    const __m256i pb0 = _mm256_mul_epu32(b0, m0), pb1 = _mm256_mul_epu32(b2, m1);
    a0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(pa1, 32), a1), k->k0[round]);
    a2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(pa0, 32), a3), k->k1[round]);
    b0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(pb1, 32), b1), k->k0[round]);
    b2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(pb0, 32), b3), k->k1[round]);
    a1 = pa1, a3 = pa0, b1 = pb1, b3 = pb0;
  }
  /* per lane j: the 64-bit pairs (w0, w1) and (w2, w3), then each counter's 16 bytes */
  const __m256i a01 = _mm256_blend_epi32(a0, _mm256_slli_epi64(a1, 32), 0xAA);
  const __m256i a23 = _mm256_blend_epi32(a2, _mm256_slli_epi64(a3, 32), 0xAA);
  const __m256i b01 = _mm256_blend_epi32(b0, _mm256_slli_epi64(b1, 32), 0xAA);
  const __m256i b23 = _mm256_blend_epi32(b2, _mm256_slli_epi64(b3, 32), 0xAA);
  const __m256i al = _mm256_unpacklo_epi64(a01, a23), ah = _mm256_unpackhi_epi64(a01, a23);
  const __m256i bl = _mm256_unpacklo_epi64(b01, b23), bh = _mm256_unpackhi_epi64(b01, b23);
  _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(al, ah, 0x20));
  _mm256_storeu_si256((__m256i *)(out + 8), _mm256_permute2x128_si256(al, ah, 0x31));
  _mm256_storeu_si256((__m256i *)(out + 16), _mm256_permute2x128_si256(bl, bh, 0x20));
  _mm256_storeu_si256((__m256i *)(out + 24), _mm256_permute2x128_si256(bl, bh, 0x31));
}

typedef struct {
  const fast_rng *r;
  philox_keys k;
} philox_avx2_ctx;

AVX2_FN static void philox_block_avx2(const void *ctx, uint64_t q, uint32_t *out) {
  const philox_avx2_ctx *c = ctx;
  philox8_avx2(c->r, &c->k, q, out);
}
#endif

#if FAST_X86
/* Thirty-two Philox calls (counters q0 .. q0+31) at once: 128 words in element order. The AVX2
 * scheme on 512-bit vectors (eight counters per group, one per 64-bit lane), four independent
 * groups (32 registers hold their states), and the two XORs of each half-round as one
 * vpternlogq. */
AVX512_FN static void philox32_avx512(const fast_rng *r, uint64_t q0, uint32_t *out) {
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53ll), m1 = _mm512_set1_epi64(0xCD9E8D57ll);
  const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  __m512i x0[4], x1[4], x2[4], x3[4];
  for (int g = 0; g < 4; ++g) {
    const __m512i q = _mm512_add_epi64(_mm512_set1_epi64((long long)(q0 + 8u * (unsigned)g)), lanes);
    x0[g] = q, x1[g] = _mm512_srli_epi64(q, 32);
    x2[g] = _mm512_set1_epi64((long long)r->tag), x3[g] = _mm512_set1_epi64((long long)r->step);
  }
  uint32_t k0 = (uint32_t)(r->seed & 0xffffffffu), k1 = (uint32_t)(r->seed >> 32);
#pragma GCC unroll 10
  for (int round = 0; round < 10; ++round) {
    const __m512i kk0 = _mm512_set1_epi64((long long)k0), kk1 = _mm512_set1_epi64((long long)k1);
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      const __m512i p0 = _mm512_mul_epu32(x0[g], m0), p1 = _mm512_mul_epu32(x2[g], m1);
      x0[g] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), x1[g], kk0, 0x96);
      x2[g] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), x3[g], kk1, 0x96);
      x1[g] = p1, x3[g] = p0;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  /* per counter the 64-bit pairs (w0, w1), (w2, w3); unpacking gives counters 0, 2, 4, 6 (lo)
   * and 1, 3, 5, 7 (hi) in the four 128-bit lanes, which two permutes put in order */
  const __m512i i0 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i i1 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int g = 0; g < 4; ++g) {
    const __m512i w01 = _mm512_mask_blend_epi32(0xAAAA, x0[g], _mm512_slli_epi64(x1[g], 32));
    const __m512i w23 = _mm512_mask_blend_epi32(0xAAAA, x2[g], _mm512_slli_epi64(x3[g], 32));
    const __m512i lo = _mm512_unpacklo_epi64(w01, w23), hi = _mm512_unpackhi_epi64(w01, w23);
    _mm512_storeu_si512((void *)(out + 32 * g), _mm512_permutex2var_epi64(lo, i0, hi));
    _mm512_storeu_si512((void *)(out + 32 * g + 16), _mm512_permutex2var_epi64(lo, i1, hi));
  }
}

AVX512_FN static void philox_block_avx512(const void *ctx, uint64_t q, uint32_t *out) {
  philox32_avx512(ctx, q, out);
}
#endif

static void philox_block_scalar(const void *ctx, uint64_t q, uint32_t *out) {
  philox_scalar(ctx, q, 1, out);
}

/* words[i] = word idx0 + i of a counter-based stream made in blocks of `bw` words (bw / 4
 * counters from q, a multiple of 4, at most 128): whole aligned blocks go straight into words,
 * the ends through a buffer. */
static void fill_words(uint64_t idx0, int64_t n, uint32_t *words, int bw,
                       void (*block)(const void *ctx, uint64_t q, uint32_t *out), const void *ctx) {
  uint32_t buf[128];
  int64_t i = 0;
  while (i < n) {
    const uint64_t idx = idx0 + (uint64_t)i, q = idx >> 2;
    const int64_t skip = (int64_t)(idx & 3u);
    if (skip == 0 && n - i >= bw) {
      block(ctx, q, words + i);
      i += bw;
      continue;
    }
    block(ctx, q, buf);
    int64_t take = bw - skip;
    if (take > n - i) take = n - i;
    memcpy(words + i, buf + skip, (size_t)take * sizeof *words);
    i += take;
  }
}

/* The Philox words of one level (fast_elem_kernels.philox). */
#if FAST_X86
static void philox_words_avx512(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words) {
  fill_words(idx0, n, words, 128, philox_block_avx512, r);
}

static void philox_words_avx2(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words) {
  philox_avx2_ctx c;
  c.r = r;
  philox_keys_init(r, &c.k);
  fill_words(idx0, n, words, 32, philox_block_avx2, &c);
}
#endif

static void philox_words_scalar(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words) {
  fill_words(idx0, n, words, 4, philox_block_scalar, r);
}

/* ---- quantizer ---------------------------------------------------------------------------- */

/* The scalar steps, inlined into every caller: the AVX forms' tails then run in their own
 * encoding. A call from code that has used 512-bit registers into a function of legacy SSE
 * instructions cost about 17 us per backward of a 16-token layer on this path (the tiny layer's
 * backward 32 -> 15 us without it): such calls are kept out of the kernels (FAST_INLINE). */
#define FAST_INLINE static inline __attribute__((always_inline))
FAST_INLINE void quant_run(const float *v, int64_t n, float s, int qmax, int sr, const uint32_t *w,
                           int8_t *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = (int8_t)(sr ? hot_quant_sr(v[i], s, qmax, w[i]) : hot_quant_rtn(v[i], s, qmax));
}

static void quant_scalar(const float *v, int64_t n, float s, int qmax, int sr, const uint32_t *w,
                         int8_t *out) {
  quant_run(v, n, s, qmax, sr, w, out);
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
  quant_run(v + i, n - i, s, qmax, sr, sr ? w + i : NULL, out + i);
}
#endif


#if FAST_X86
/* The quantizer at the 512-bit levels: quant8_avx2's operations on 16 lanes (vdivps, the two
 * clamps as compare-and-blend, vrndscaleps for the floor and the nearest, the exact rho of the
 * word's top 24 bits), the codes narrowed by vpmovsdb (they lie in [-qmax, qmax], so its
 * saturation never acts, as the AVX2 form's packs). Half the instructions per code. */
AVX512_FN static inline __m512i quant16_avx512(const float *v, __m512 s, __m512 q, __m512 nq,
                                               int sr, const uint32_t *w) {
  __m512 u = _mm512_div_ps(_mm512_loadu_ps(v), s);
  u = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, nq, _CMP_LT_OQ), u, nq);
  u = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, q, _CMP_GT_OQ), u, q);
  if (!sr)
    return _mm512_cvttps_epi32(_mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  const __m512 f = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(u, f);
  const __m512i word = _mm512_srli_epi32(_mm512_loadu_si512((const void *)w), 8);
  const __m512 rho = _mm512_mul_ps(_mm512_cvtepi32_ps(word), _mm512_set1_ps(5.9604644775390625e-8f));
  const __mmask16 up = _mm512_cmp_ps_mask(rho, frac, _CMP_LT_OQ);
  const __m512i fi = _mm512_cvttps_epi32(f);
  return _mm512_mask_add_epi32(fi, up, fi, _mm512_set1_epi32(1));
}

AVX512_FN static void quant_avx512(const float *v, int64_t n, float s, int qmax, int sr,
                                   const uint32_t *w, int8_t *out) {
  if (!(s > 0.0f)) { /* hot_scaled gives 0: every code is 0 (SR adds rho < 0, never) */
    memset(out, 0, (size_t)n);
    return;
  }
  const __m512 vs = _mm512_set1_ps(s), q = _mm512_set1_ps(HOT_I2F(qmax));
  const __m512 nq = _mm512_set1_ps(-HOT_I2F(qmax));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128((__m128i *)(void *)(out + i),
                     _mm512_cvtsepi32_epi8(quant16_avx512(v + i, vs, q, nq, sr, sr ? w + i : NULL)));
  if (i < n) quant_avx2(v + i, n - i, s, qmax, sr, sr ? w + i : NULL, out + i);
}
#endif

/* ---- amax --------------------------------------------------------------------------------- */

FAST_INLINE int amax_run(const float *v, int64_t n, float *amax) {
  float m = *amax;
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) return 0;
    float a = fabsf(v[i]);
    if (a > m) m = a;
  }
  *amax = m;
  return 1;
}

static int amax_scalar(const float *v, int64_t n, float *amax) { return amax_run(v, n, amax); }

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
  return amax_run(v + i, n - i, amax);
}
#endif


#if FAST_X86
/* amax on 512-bit vectors: for values >= 0 (the absolute values' bits) the float order is the
 * unsigned integer order of the bits, and every Inf and NaN lies above FLT_MAX's 0x7f7fffff, so
 * one vpmaxud per 16 values gives both the max and the finiteness test (a max is order-free; the
 * result is the same float as amax_run's). The tail is a masked load (zeros add nothing). */
#define FAST_FLT_MAX_BITS 0x7f7fffffu
AVX512_FN static int amax_avx512(const float *v, int64_t n, float *amax) {
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  __m512i m0 = _mm512_setzero_si512(), m1 = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512((const void *)(v + i)), absmask));
    m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_loadu_si512((const void *)(v + i + 16)), absmask));
  }
  for (; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
    m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_maskz_loadu_epi32(k, v + i), absmask));
  }
  const uint32_t bits = _mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
  if (bits > FAST_FLT_MAX_BITS) return 0;
  float t;
  memcpy(&t, &bits, sizeof t);
  if (t > *amax) *amax = t;
  return 1;
}

/* add_avx2 on 16 lanes (vaddps per element as HOT_ADD), the finiteness of v by the bits' max. */
AVX512_FN static int add_avx512(float *acc, const float *v, int64_t n) {
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  __m512i m = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
    const __m512 x = _mm512_maskz_loadu_ps(k, v + i);
    m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(x), absmask));
    _mm512_mask_storeu_ps(acc + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, acc + i), x));
  }
  return _mm512_reduce_max_epu32(m) <= FAST_FLT_MAX_BITS;
}
#endif

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

/* The butterfly stages 1, 2, .. G/2 among the G values v[0..G) of type T (vectors or scalars),
 * each output ADD(x, y) or SUB(x, y) of its pair, stage by stage as in hot_fwht_stage. */
#define FWHT_STAGES(T, v, G, ADD, SUB)                                                              \
  _Pragma("GCC unroll 3") for (int d = 1; d < (G); d <<= 1)                                         \
    _Pragma("GCC unroll 8") for (int i = 0; i < (G); ++i)                                           \
      if (!(i & d)) {                                                                               \
        const T x = (v)[i], y = (v)[i + d];                                                         \
        (v)[i] = ADD(x, y);                                                                         \
        (v)[i + d] = SUB(x, y);                                                                     \
      }

/* Blocks of b = 8 G entries along a row, all of its stages in registers: h = 1, 2, 4 inside each
 * of the G vectors, then h = 8, 16, 32 between them (the same pairs in the same stage order). */
#define FWHT_ROW_BLOCKS(G)                                                                          \
  AVX2_FN static void fwht_row##G##_avx2(float *a, const float *src, int64_t n) {                  \
    for (int64_t o = 0; o < n; o += 8 * G) {                                                        \
      __m256 v[G];                                                                                  \
      _Pragma("GCC unroll 8") for (int i = 0; i < G; ++i)                                           \
        v[i] = fwht8_avx2(_mm256_loadu_ps(src + o + 8 * i), 8);                                     \
      FWHT_STAGES(__m256, v, G, _mm256_add_ps, _mm256_sub_ps)                                     \
      _Pragma("GCC unroll 8") for (int i = 0; i < G; ++i) _mm256_storeu_ps(a + o + 8 * i, v[i]);    \
    }                                                                                               \
  }
FWHT_ROW_BLOCKS(2)
FWHT_ROW_BLOCKS(4)
FWHT_ROW_BLOCKS(8)

AVX2_FN static void fwht_row_avx2(float *a, const float *src, int64_t n, int b) {
  if (b == 16 || b == 32 || b == 64) { /* n is a multiple of b */
    if (b == 16) fwht_row2_avx2(a, src, n);
    else if (b == 32) fwht_row4_avx2(a, src, n);
    else fwht_row8_avx2(a, src, n);
    return;
  }
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

/* One pass of the column FWHT: the stages h, 2h, .. (log2 G of them) on every group of G rows
 * {blk + o + i h}, kept in registers from load to store (one load and one store per element and
 * pass instead of one per stage). Rows come from src (NULL: +0.0) when src is not NULL, else
 * from m; each output is HOT_ADD / HOT_SUB of the same pair in the same stage order as
 * hot_fwht_stage, so the grouping does not change a bit. */
#define FWHT_PASS(G, SUF, FN, VT, W, LOAD, STORE, ZERO, ADD, SUB)                                  \
  FN static void fwht_pass##G##_##SUF(float *m, int p, int64_t cols, int64_t ld, int h,             \
                                      const float *const *src) {                                    \
    for (int blk = 0; blk < p; blk += G * h)                                                        \
      for (int o = 0; o < h; ++o) {                                                                 \
        float *row[G];                                                                              \
        const float *in[G];                                                                         \
        for (int i = 0; i < G; ++i) {                                                               \
          const int j = blk + o + i * h;                                                            \
          row[i] = m + (int64_t)j * ld;                                                             \
          in[i] = src ? src[j] : row[i];                                                            \
        }                                                                                           \
        int64_t c = 0;                                                                              \
        int whole = 1; /* no row of zeros: loads without tests */                                   \
        for (int i = 0; i < G; ++i) whole &= in[i] != NULL;                                         \
        for (; c + (W) <= cols; c += (W)) {                                                         \
          VT v[G];                                                                                  \
          if (whole) {                                                                              \
            _Pragma("GCC unroll 8") for (int i = 0; i < G; ++i) v[i] = LOAD(in[i] + c);             \
          } else {                                                                                  \
            _Pragma("GCC unroll 8") for (int i = 0; i < G; ++i)                                     \
              v[i] = in[i] ? LOAD(in[i] + c) : ZERO();                                              \
          }                                                                                         \
          FWHT_STAGES(VT, v, G, ADD, SUB)                                                           \
          _Pragma("GCC unroll 8") for (int i = 0; i < G; ++i) STORE(row[i] + c, v[i]);              \
        }                                                                                           \
        for (; c < cols; ++c) {                                                                     \
          float v[G];                                                                               \
          for (int i = 0; i < G; ++i) v[i] = in[i] ? in[i][c] : 0.0f;                               \
          FWHT_STAGES(float, v, G, HOT_ADD, HOT_SUB)                                              \
          for (int i = 0; i < G; ++i) row[i][c] = v[i];                                             \
        }                                                                                           \
      }                                                                                             \
  }
#define FWHT_PASS_AVX2(G)                                                                           \
  FWHT_PASS(G, avx2, AVX2_FN, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_setzero_ps,      \
            _mm256_add_ps, _mm256_sub_ps)
FWHT_PASS_AVX2(2)
FWHT_PASS_AVX2(4)
FWHT_PASS_AVX2(8)
/* The same passes on 16 columns at a time (the 512-bit levels): the same pairs, stage order and
 * IEEE operations per element, half the instructions. */
#define FWHT_PASS_AVX512(G)                                                                         \
  FWHT_PASS(G, avx512, AVX512_FN, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,                   \
            _mm512_setzero_ps, _mm512_add_ps, _mm512_sub_ps)
FWHT_PASS_AVX512(2)
FWHT_PASS_AVX512(4)
FWHT_PASS_AVX512(8)

/* The whole column FWHT of fast_fwht_cols_src: passes of three stages (two or one at the end),
 * the first one reading the sources. */
#define FWHT_COLS(SUF, FN)                                                                          \
  FN static void fwht_cols_src_##SUF(float *m, int p, int64_t cols, int64_t ld,                    \
                                     const float *const *src) {                                     \
    for (int h = 1; h < p; h *= 8) {                                                                \
      const float *const *in = h == 1 ? src : NULL;                                                 \
      if (8 * h <= p) fwht_pass8_##SUF(m, p, cols, ld, h, in);                                      \
      else if (4 * h <= p) fwht_pass4_##SUF(m, p, cols, ld, h, in);                                 \
      else fwht_pass2_##SUF(m, p, cols, ld, h, in);                                                 \
    }                                                                                               \
  }
FWHT_COLS(avx2, AVX2_FN)
FWHT_COLS(avx512, AVX512_FN)

/* One stage h (1, 2, 4 or 8) inside a vector of 16 consecutive entries: sw holds each entry's
 * partner, the first of a pair gets v + sw = x + y, the second (lanes in mask hi) sw - v = x - y;
 * the same pair and operation per element as hot_fwht_stage (an IEEE sum does not depend on the
 * order of its operands). Three instructions per stage where the AVX2 form takes five per 8. */
#define FWHT16_STAGE(v, sw, hi) _mm512_mask_sub_ps(_mm512_add_ps(v, sw), (__mmask16)(hi), sw, v)
AVX512_FN static inline __m512 fwht16_avx512(__m512 v) {
  v = FWHT16_STAGE(v, _mm512_permute_ps(v, 0xB1), 0xAAAA);        /* h = 1 */
  v = FWHT16_STAGE(v, _mm512_permute_ps(v, 0x4E), 0xCCCC);        /* h = 2 */
  v = FWHT16_STAGE(v, _mm512_shuffle_f32x4(v, v, 0xB1), 0xF0F0);  /* h = 4 */
  return FWHT16_STAGE(v, _mm512_shuffle_f32x4(v, v, 0x4E), 0xFF00); /* h = 8 */
}

/* Blocks of b = 16 G entries along a row on 512-bit vectors: h = 1 .. 8 inside each vector, then
 * h = 16, 32 between them, all in registers (one load and one store per element). */
#define FWHT_ROW_BLOCKS512(G)                                                                       \
  AVX512_FN static void fwht_row##G##_avx512(float *a, const float *src, int64_t n) {              \
    for (int64_t o = 0; o < n; o += 16 * G) {                                                       \
      __m512 v[G];                                                                                  \
      _Pragma("GCC unroll 4") for (int i = 0; i < G; ++i)                                           \
        v[i] = fwht16_avx512(_mm512_loadu_ps(src + o + 16 * i));                                    \
      FWHT_STAGES(__m512, v, G, _mm512_add_ps, _mm512_sub_ps)                                     \
      _Pragma("GCC unroll 4") for (int i = 0; i < G; ++i) _mm512_storeu_ps(a + o + 16 * i, v[i]);  \
    }                                                                                               \
  }
FWHT_ROW_BLOCKS512(1)
FWHT_ROW_BLOCKS512(2)
FWHT_ROW_BLOCKS512(4)
#endif

static void fwht_row_scalar(float *a, const float *src, int64_t n, int b) {
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
  for (int64_t o = 0; b > 1 && o < n; o += b) hot_fwht(a + o, b);
}

#if FAST_X86
/* The AVX2 level's row FWHT: the 8-wide kernel where the blocks allow it. */
static void fwht_row_level_avx2(float *a, const float *src, int64_t n, int b) {
  if (b > 1 && (b >= 8 || n % 8 == 0)) fwht_row_avx2(a, src, n, b);
  else fwht_row_scalar(a, src, n, b);
}
#endif

/* The stages h0, 2 h0, ... < p of the column FWHT, in place (scalar). */
static void fwht_cols_from(float *m, int p, int64_t cols, int64_t ld, int h0) {
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

/* p < 2: a copy of the one source row (or +0.0); returns 1 when it did the transform. */
static int fwht_cols_trivial(float *m, int p, int64_t cols, const float *const *src) {
  if (p >= 2) return 0;
  if (p == 1) {
    if (src[0]) memcpy(m, src[0], (size_t)cols * sizeof *m);
    else memset(m, 0, (size_t)cols * sizeof *m);
  }
  return 1;
}

#if FAST_X86
/* The 512-bit levels' row FWHT: b = 16, 32, 64 on 512-bit vectors, the other sizes as AVX2. */
static void fwht_row_level_avx512(float *a, const float *src, int64_t n, int b) {
  if (b == 16) fwht_row1_avx512(a, src, n);
  else if (b == 32) fwht_row2_avx512(a, src, n);
  else if (b == 64) fwht_row4_avx512(a, src, n);
  else fwht_row_level_avx2(a, src, n, b);
}

static void fwht_cols_level_avx2(float *m, int p, int64_t cols, int64_t ld, const float *const *src) {
  if (!fwht_cols_trivial(m, p, cols, src)) fwht_cols_src_avx2(m, p, cols, ld, src);
}

static void fwht_cols_level_avx512(float *m, int p, int64_t cols, int64_t ld,
                                   const float *const *src) {
  if (!fwht_cols_trivial(m, p, cols, src)) fwht_cols_src_avx512(m, p, cols, ld, src);
}
#endif

static void fwht_cols_scalar(float *m, int p, int64_t cols, int64_t ld, const float *const *src) {
  if (fwht_cols_trivial(m, p, cols, src)) return;
  for (int j = 0; j < p; j += 2) { /* stage h = 1 straight from the sources (+0.0 for NULL) */
    float *x = m + (int64_t)j * ld, *y = x + ld;
    const float *sx = src[j], *sy = src[j + 1];
    for (int64_t c = 0; c < cols; ++c) {
      const float a = sx ? sx[c] : 0.0f, d = sy ? sy[c] : 0.0f;
      x[c] = HOT_ADD(a, d);
      y[c] = HOT_SUB(a, d);
    }
  }
  fwht_cols_from(m, p, cols, ld, 2);
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

static int add_scalar(float *acc, const float *v, int64_t n) {
  int good = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) good = 0;
    acc[i] = HOT_ADD(acc[i], v[i]);
  }
  return good;
}

/* ---- GEMM epilogue ---------------------------------------------------------------------------- */

#if FAST_X86
/* One row of a tile; fresh rows starting on a 32-byte boundary take streaming stores (no read
 * for ownership of output lines that are only written), which the caller fences once. */
/* Fresh rows that start on a 32-byte boundary (torch's tensors are 64-aligned) are written with
 * streaming stores: the epilogue's CPU time 0.33-0.47x of plain stores there. Rows that do not
 * (malloc's large blocks are 16-aligned) take plain stores: peeling the head to the boundary and
 * streaming the rest was slower than plain stores (docs/cpu-backend.md). */
AVX2_FN static int scale_avx2(float *o, const int32_t *a, int64_t n, float f, int add) {
  const __m256 vf = _mm256_set1_ps(f);
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 big = _mm256_set1_ps(3.40282347e+38f);
  __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1)); /* |p| <= FLT_MAX: false for Inf, NaN */
  int64_t i = 0;
  if (!add && ((uintptr_t)o & 31) == 0)
    for (; i + 8 <= n; i += 8) {
      const __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(a + i))), vf);
      ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(p, absmask), big, _CMP_LE_OQ));
      _mm256_stream_ps(o + i, p);
    }
  for (; i + 8 <= n; i += 8) {
    __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(a + i))), vf);
    if (add) p = _mm256_add_ps(_mm256_loadu_ps(o + i), p);
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(p, absmask), big, _CMP_LE_OQ));
    _mm256_storeu_ps(o + i, p);
  }
  int good = _mm256_movemask_ps(ok) == 0xff;
  for (; i < n; ++i) {
    o[i] = add ? HOT_ADD(o[i], HOT_MUL(HOT_I2F(a[i]), f)) : HOT_MUL(HOT_I2F(a[i]), f);
    good &= isfinite(o[i]) != 0;
  }
  return good;
}
#endif

#if FAST_X86
static int scale_tile_avx2(float *out, int64_t ldo, const int32_t *acc, int64_t ldc, int64_t rows,
                           int64_t n, const float *row_f, float f, int add) {
  int good = 1;
  for (int64_t m = 0; m < rows; ++m)
    good &= scale_avx2(out + m * ldo, acc + m * ldc, n, row_f ? row_f[m] : f, add);
  _mm_sfence(); /* one fence per tile: the streaming stores are visible before the task ends */
  return good;
}
#endif

#if FAST_X86
/* scale_avx2's steps on 16 lanes (the 512-bit levels): vcvtdq2ps, vmulps (+ vaddps) round as the
 * scalar code does; fresh rows that start on a 64-byte boundary take streaming stores; the
 * overflow test is a compare into a mask. The segmented g_w GEMM runs this once per segment over
 * its tile (out += c_j acc_j), so the epilogue was up to a fifth of a backward there. */
AVX512_FN static int scale_avx512(float *o, const int32_t *a, int64_t n, float f, int add) {
  const __m512 vf = _mm512_set1_ps(f), big = _mm512_set1_ps(3.40282347e+38f);
  __mmask16 ok = 0xFFFF; /* |p| <= FLT_MAX: false for Inf, NaN */
  int64_t i = 0;
  if (!add && ((uintptr_t)o & 63) == 0)
    for (; i + 16 <= n; i += 16) {
      const __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)(a + i))), vf);
      ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(p), big, _CMP_LE_OQ);
      _mm512_stream_ps(o + i, p);
    }
  for (; i + 16 <= n; i += 16) {
    __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)(a + i))), vf);
    if (add) p = _mm512_add_ps(_mm512_loadu_ps(o + i), p);
    ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(p), big, _CMP_LE_OQ);
    _mm512_storeu_ps(o + i, p);
  }
  int good = ok == 0xFFFF;
  for (; i < n; ++i) {
    o[i] = add ? HOT_ADD(o[i], HOT_MUL(HOT_I2F(a[i]), f)) : HOT_MUL(HOT_I2F(a[i]), f);
    good &= isfinite(o[i]) != 0;
  }
  return good;
}

static int scale_tile_avx512(float *out, int64_t ldo, const int32_t *acc, int64_t ldc,
                             int64_t rows, int64_t n, const float *row_f, float f, int add) {
  int good = 1;
  for (int64_t m = 0; m < rows; ++m)
    good &= scale_avx512(out + m * ldo, acc + m * ldc, n, row_f ? row_f[m] : f, add);
  _mm_sfence(); /* one fence per tile: the streaming stores are visible before the task ends */
  return good;
}
#endif

static int scale_tile_scalar(float *out, int64_t ldo, const int32_t *acc, int64_t ldc,
                             int64_t rows, int64_t n, const float *row_f, float f, int add) {
  int good = 1;
  for (int64_t m = 0; m < rows; ++m) {
    float *o = out + m * ldo;
    const int32_t *a = acc + m * ldc;
    const float s = row_f ? row_f[m] : f;
    for (int64_t i = 0; i < n; ++i) {
      o[i] = add ? HOT_ADD(o[i], HOT_MUL(HOT_I2F(a[i]), s)) : HOT_MUL(HOT_I2F(a[i]), s);
      good &= isfinite(o[i]) != 0;
    }
  }
  return good;
}

/* ---- byte transpose ---------------------------------------------------------------------- */

#if FAST_X86
/* A 16 x 16 block of bytes, transposed in registers: four rounds of interleaving row i with row
 * i + 8 (bytes, then the same again on the results) put byte c of row r at byte r of row c. */
AVX2_FN static void transpose16_sse(const int8_t *src, int64_t ls, int8_t *dst, int64_t ld) {
  __m128i v[16], t[16];
  for (int i = 0; i < 16; ++i) v[i] = _mm_loadu_si128((const __m128i *)(const void *)(src + i * ls));
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm_unpacklo_epi8(v[i], v[i + 8]);
      t[2 * i + 1] = _mm_unpackhi_epi8(v[i], v[i + 8]);
    }
    memcpy(v, t, sizeof v);
  }
  for (int i = 0; i < 16; ++i) _mm_storeu_si128((__m128i *)(void *)(dst + i * ld), v[i]);
}
#endif

/* The bytes the 16 x 16 blocks left (rows r0.. of columns below c0, and whole columns from c0
 * on), one at a time. */
static void transpose_rest(const int8_t *src, int64_t rows, int64_t cols, int64_t ls, int8_t *dst,
                           int64_t ld, int64_t r0, int64_t c0) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = c < c0 ? r0 : 0; r < rows; ++r) dst[c * ld + r] = src[r * ls + c];
}

#if FAST_X86
static void transpose_bytes_avx2(const int8_t *src, int64_t rows, int64_t cols, int64_t ls,
                                 int8_t *dst, int64_t ld) {
  const int64_t r0 = rows / 16 * 16, c0 = cols / 16 * 16;
  for (int64_t c = 0; c < c0; c += 16)
    for (int64_t r = 0; r < r0; r += 16) transpose16_sse(src + r * ls + c, ls, dst + c * ld + r, ld);
  transpose_rest(src, rows, cols, ls, dst, ld, r0, c0);
}
#endif

static void transpose_bytes_scalar(const int8_t *src, int64_t rows, int64_t cols, int64_t ls,
                                   int8_t *dst, int64_t ld) {
  transpose_rest(src, rows, cols, ls, dst, ld, 0, 0);
}

/* ---- loads -------------------------------------------------------------------------------- */

#if FAST_X86
/* bf16 to fp32 eight at a time: hot_bf16_to_f32's shift of the bits (a move, exact for every
 * value, NaNs included), so any CPU with AVX2 runs it whatever the level (the bf16 inputs of a
 * backward are read up to five times: g' twice, w' twice, the HLA projection once; the scalar
 * loop took about a cycle per value). */
AVX2_FN static void load_bf16_avx2(const unsigned short *s, int64_t n, float *dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
    _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_slli_epi32(v, 16));
  }
  for (; i < n; ++i) dst[i] = hot_bf16_to_f32(s[i]);
}
#endif

void fast_load_run(const void *src, hot_dtype dt, int64_t off, int64_t n, float *dst) {
  if (dt == HOT_DT_F32) {
    memcpy(dst, (const float *)src + off, (size_t)n * sizeof *dst);
  } else if (dt == HOT_DT_BF16) {
    const unsigned short *s = (const unsigned short *)src + off;
#if FAST_X86
    if (__builtin_cpu_supports("avx2")) {
      load_bf16_avx2(s, n, dst);
      return;
    }
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = hot_bf16_to_f32(s[i]);
  } else {
    const unsigned short *s = (const unsigned short *)src + off;
    for (int64_t i = 0; i < n; ++i) dst[i] = hot_f16_to_f32(s[i]);
  }
}

/* ---- the tables of the levels (fast_elem_kernels) ------------------------------------------- */

static const fast_elem_kernels elem_scalar = {philox_words_scalar, quant_scalar, amax_scalar,
                                              fwht_row_scalar, fwht_cols_scalar, add_scalar,
                                              scale_tile_scalar, transpose_bytes_scalar};
#if FAST_X86
static const fast_elem_kernels elem_avx2 = {philox_words_avx2, quant_avx2, amax_avx2,
                                            fwht_row_level_avx2, fwht_cols_level_avx2, add_avx2,
                                            scale_tile_avx2, transpose_bytes_avx2};
/* the 512-bit Philox, quantizer and column FWHT (fast_level.c gives a level whose CPU lacks
 * AVX-512F the row below) */
static const fast_elem_kernels elem_avx512 = {philox_words_avx512, quant_avx512, amax_avx512,
                                              fwht_row_level_avx512, fwht_cols_level_avx512, add_avx512,
                                              scale_tile_avx512, transpose_bytes_avx2};
#endif

const fast_elem_kernels *const fast_elem_by_level[FAST_LEVELS] = {
    [FAST_LEVEL_SCALAR] = &elem_scalar,
#if FAST_X86
    [FAST_LEVEL_AVX2] = &elem_avx2,
    [FAST_LEVEL_AVX512] = &elem_avx512,
#endif
};

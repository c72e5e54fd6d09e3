/* fast_avx512.c — the kernels of the avx512-vnni level: the per-element kernels on 16 lanes
 * (Philox, the quantizer, amax, column sums, the row and column FWHT, the GEMM epilogue, the
 * E4M3 / E2M1 / NVFP4-row / MXFP8-row quantisers of recipe nvfp4; the same
 * IEEE operations per element as the scalar forms, so the same bits; fast_level.c gives the
 * level the AVX2 row where the CPU lacks AVX-512F) and the 512-bit vpdpbusd GEMM kernel, and
 * its row of the level tables at the end. */
#include <math.h>

#include "fast_gemm.h"

#if FAST_X86
/* ---- Philox ------------------------------------------------------------------------------- */

/* The ten Philox-4x32 rounds on four groups of eight counters (one per 64-bit lane: x0..x3 the
 * state words, low halves), keyed by r's seed; the two XORs of each half-round as one
 * vpternlogq. Inlined, so the 16 state vectors stay in registers. */
AVX512_FN static inline __attribute__((always_inline)) void philox_rounds_avx512(
    const fast_rng *r, __m512i x0[4], __m512i x1[4], __m512i x2[4], __m512i x3[4]) {
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53ll), m1 = _mm512_set1_epi64(0xCD9E8D57ll);
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
}

/* Thirty-two Philox calls (counters q0 .. q0+31) at once: 128 words in element order. The AVX2
 * scheme on 512-bit vectors (eight counters per group, one per 64-bit lane), four independent
 * groups (32 registers hold their states), and the two XORs of each half-round as one
 * vpternlogq. */
AVX512_FN static void philox32_avx512(const fast_rng *r, uint64_t q0, uint32_t *out) {
  const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  __m512i x0[4], x1[4], x2[4], x3[4];
  for (int g = 0; g < 4; ++g) {
    const __m512i q = _mm512_add_epi64(_mm512_set1_epi64((long long)(q0 + 8u * (unsigned)g)), lanes);
    x0[g] = q, x1[g] = _mm512_srli_epi64(q, 32);
    x2[g] = _mm512_set1_epi64((long long)r->tag), x3[g] = _mm512_set1_epi64((long long)r->step);
  }
  philox_rounds_avx512(r, x0, x1, x2, x3);
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

static void philox_words_avx512(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words) {
  fill_words(idx0, n, words, 128, philox_block_avx512, r);
}

/* words[i] = hot_rand_word(seed, tag, step, idx0 + i * stride) for i < 32 (indices modulo 2^64):
 * philox32_avx512's rounds on each index's own counter idx >> 2, then its word idx & 3 (the low
 * halves of the four state lanes hold words 0 .. 3). */
AVX512_FN static void philox_strided32_avx512(const fast_rng *r, uint64_t idx0, uint64_t stride,
                                              uint32_t *out) {
  __m512i x0[4], x1[4], x2[4], x3[4], sel[4];
  for (int g = 0; g < 4; ++g) {
    uint64_t idx[8];
    for (int l = 0; l < 8; ++l) idx[l] = idx0 + stride * (uint64_t)(8 * g + l);
    const __m512i iv = _mm512_loadu_si512((const void *)idx), q = _mm512_srli_epi64(iv, 2);
    sel[g] = _mm512_and_si512(iv, _mm512_set1_epi64(3));
    x0[g] = q, x1[g] = _mm512_srli_epi64(q, 32);
    x2[g] = _mm512_set1_epi64((long long)r->tag), x3[g] = _mm512_set1_epi64((long long)r->step);
  }
  philox_rounds_avx512(r, x0, x1, x2, x3);
  for (int g = 0; g < 4; ++g) {
    __m512i w = x0[g];
    w = _mm512_mask_mov_epi64(w, _mm512_cmpeq_epi64_mask(sel[g], _mm512_set1_epi64(1)), x1[g]);
    w = _mm512_mask_mov_epi64(w, _mm512_cmpeq_epi64_mask(sel[g], _mm512_set1_epi64(2)), x2[g]);
    w = _mm512_mask_mov_epi64(w, _mm512_cmpeq_epi64_mask(sel[g], _mm512_set1_epi64(3)), x3[g]);
    _mm256_storeu_si256((__m256i *)(void *)(out + 8 * g), _mm512_cvtepi64_epi32(w));
  }
}

/* ---- quantizer ---------------------------------------------------------------------------- */

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

/* ---- amax and column sums ------------------------------------------------------------------ */

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
    const __mmask16 k = fast_lanes16(n - i);
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
    const __mmask16 k = fast_lanes16(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(k, v + i);
    m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(x), absmask));
    _mm512_mask_storeu_ps(acc + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, acc + i), x));
  }
  return _mm512_reduce_max_epu32(m) <= FAST_FLT_MAX_BITS;
}

/* ---- FWHT --------------------------------------------------------------------------------- */

/* The same passes on 16 columns at a time (the 512-bit levels): the same pairs, stage order and
 * IEEE operations per element, half the instructions. */
#define FWHT_PASS_AVX512(G)                                                                         \
  FWHT_PASS(G, avx512, AVX512_FN, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,                   \
            _mm512_setzero_ps, _mm512_add_ps, _mm512_sub_ps)
FWHT_PASS_AVX512(2)
FWHT_PASS_AVX512(4)
FWHT_PASS_AVX512(8)
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

/* The 512-bit levels' row FWHT: b = 16, 32, 64 on 512-bit vectors, the other sizes as AVX2. */
static void fwht_row_level_avx512(float *a, const float *src, int64_t n, int b) {
  if (b == 16) fwht_row1_avx512(a, src, n);
  else if (b == 32) fwht_row2_avx512(a, src, n);
  else if (b == 64) fwht_row4_avx512(a, src, n);
  else fwht_row_level_avx2(a, src, n, b);
}

static void fwht_cols_level_avx512(float *m, int p, int64_t cols, int64_t ld,
                                   const float *const *src) {
  if (!fwht_cols_trivial(m, p, cols, src)) fwht_cols_src_avx512(m, p, cols, ld, src);
}

/* ---- GEMM epilogue ---------------------------------------------------------------------------- */

/* scale_avx2's steps on 16 lanes (the 512-bit levels): vcvtdq2ps, vmulps (+ vaddps) round as the
 * scalar code does; fresh rows that start on a 64-byte boundary take streaming stores; the
 * overflow test is a compare into a mask. The segmented g_w GEMM runs this once per segment over
 * its tile (out += c_j acc_j), so the epilogue was up to a fifth of a backward there. */
AVX512_FN static inline __attribute__((always_inline)) int scale_avx512(float *o, const int32_t *a, int64_t n,
                                                                       float f, int mode) {
  const int add = mode & FAST_EPI_ADD;
  const __m512 vf = _mm512_set1_ps(f), big = _mm512_set1_ps(3.40282347e+38f);
  __mmask16 ok = 0xFFFF; /* |p| <= FLT_MAX: false for Inf, NaN */
  int64_t i = 0;
  if (mode == 0 && ((uintptr_t)o & 63) == 0)
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

AVX512_FN static int scale_tile_avx512(float *out, int64_t ldo, const int32_t *acc, int64_t ldc,
                             int64_t rows, int64_t n, const float *row_f, float f, int mode) {
  int good = 1;
  for (int64_t m = 0; m < rows; ++m)
    good &= scale_avx512(out + m * ldo, acc + m * ldc, n, row_f ? row_f[m] : f, mode);
  if (mode == 0) /* only mode 0 streams: one fence per such tile, so that its streaming stores */
    _mm_sfence(); /* are visible before the task ends (the segmented adds issue none: no fence) */
  return good;
}

/* ---- the NVFP4 / MXFP8 element quantisers (templates/nvfp4_ref.c) ---------------------------- */

/* E4M3 codes of 16 values in int32 lanes, nvfp4_e4m3_encode's bits: for 0 < a = |v| <= 448,
 * e = max(floor(log2 a), -6) (vgetexpps: exact, subnormals included), t = a * 2^(3 - e) (exact:
 * the twin's a / ulp), q = t rounded (RTN: nearest even; UP: ceiling; SR: floor + (rho < frac)),
 * code = min(8 e + 48 + q, 0x7E) (q = 16 is the next binade's q = 8; e = -6 holds the
 * subnormals, code q; a = 0 gives q = 0, code 0); a > 448 (Inf too): 0x7E; the sign bit of v
 * (-0 too) on top; NaN: 0x7F. *val (when val is not NULL) = the code's value, decode(code):
 * min(q 2^(e - 3), 448) signed, 448 past it, NaN for NaN. */
AVX512_FN static inline __m512i e4m3_16_avx512(__m512 v, nvfp4_round mode, __m512i w, __m512 *val) {
  const __m512 a = _mm512_abs_ps(v);
  const __m512 e = _mm512_max_ps(_mm512_getexp_ps(a), _mm512_set1_ps(-6.0f)); /* getexp(0) = -Inf */
  const __m512i ei = _mm512_min_epi32(_mm512_cvttps_epi32(e), _mm512_set1_epi32(8));
  const __m512 up2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(130), ei), 23));
  const __m512 t = _mm512_mul_ps(a, up2);
  __m512 q;
  if (mode == NVFP4_ROUND_RTN) {
    q = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else if (mode == NVFP4_ROUND_UP) {
    q = _mm512_roundscale_ps(t, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  } else {
    const __m512 f = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 rho = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w, 8)),
                                     _mm512_set1_ps(5.9604644775390625e-8f));
    const __mmask16 inc = _mm512_cmp_ps_mask(rho, _mm512_sub_ps(t, f), _CMP_LT_OQ);
    q = _mm512_mask_add_ps(f, inc, f, _mm512_set1_ps(1.0f));
  }
  const __mmask16 big = _mm512_cmp_ps_mask(a, _mm512_set1_ps(448.0f), _CMP_GT_OQ);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  __m512i code = _mm512_add_epi32(_mm512_slli_epi32(ei, 3), _mm512_cvttps_epi32(q));
  code = _mm512_min_epi32(_mm512_add_epi32(code, _mm512_set1_epi32(48)), _mm512_set1_epi32(0x7E));
  code = _mm512_mask_mov_epi32(code, big, _mm512_set1_epi32(0x7E));
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(v), 24),
                                        _mm512_set1_epi32(0x80));
  code = _mm512_mask_mov_epi32(_mm512_or_si512(code, sign), nan, _mm512_set1_epi32(0x7F));
  if (val) {
    const __m512 ulp = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(ei, _mm512_set1_epi32(124)), 23));
    __m512 r = _mm512_min_ps(_mm512_mul_ps(q, ulp), _mm512_set1_ps(448.0f));
    r = _mm512_mask_mov_ps(r, big, _mm512_set1_ps(448.0f));
    r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), _mm512_slli_epi32(sign, 24)));
    *val = _mm512_mask_mov_ps(r, nan, v);
  }
  return code;
}

/* E2M1 codes of 16 values in int32 lanes, nvfp4_e2m1_rtn / _sr's bits: m = min(|u|, 6) (NaN: 6,
 * as fminf), t = m times 2, 1 or 1/2 on [0, 2), [2, 4), [4, 6] (the twin's exact division by the
 * step), q its nearest even (RTN) or floor + (rho < frac) (SR), the code q + 0, 2 or 4, and the
 * sign (u < 0, code not 0). */
AVX512_FN static inline __m512i e2m1_16_avx512(__m512 u, int sr, const uint32_t *w) {
  const __m512 m = _mm512_min_ps(_mm512_abs_ps(u), _mm512_set1_ps(6.0f));
  const __mmask16 lt2 = _mm512_cmp_ps_mask(m, _mm512_set1_ps(2.0f), _CMP_LT_OQ);
  const __mmask16 lt4 = _mm512_cmp_ps_mask(m, _mm512_set1_ps(4.0f), _CMP_LT_OQ);
  __m512 mul = _mm512_mask_mov_ps(_mm512_set1_ps(0.5f), lt4, _mm512_set1_ps(1.0f));
  mul = _mm512_mask_mov_ps(mul, lt2, _mm512_set1_ps(2.0f));
  __m512i off = _mm512_mask_mov_epi32(_mm512_set1_epi32(4), lt4, _mm512_set1_epi32(2));
  off = _mm512_mask_mov_epi32(off, lt2, _mm512_setzero_si512());
  const __m512 t = _mm512_mul_ps(m, mul);
  __m512i code;
  if (!sr) {
    code = _mm512_cvttps_epi32(_mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    const __m512 f = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512i word = _mm512_srli_epi32(_mm512_loadu_si512((const void *)w), 8);
    const __m512 rho = _mm512_mul_ps(_mm512_cvtepi32_ps(word), _mm512_set1_ps(5.9604644775390625e-8f));
    const __mmask16 inc = _mm512_cmp_ps_mask(rho, _mm512_sub_ps(t, f), _CMP_LT_OQ);
    code = _mm512_cvttps_epi32(f);
    code = _mm512_mask_add_epi32(code, inc, code, _mm512_set1_epi32(1));
  }
  code = _mm512_add_epi32(code, off);
  const __mmask16 neg = (__mmask16)(_mm512_cmp_ps_mask(u, _mm512_setzero_ps(), _CMP_LT_OQ) &
                                    _mm512_test_epi32_mask(code, code));
  return _mm512_mask_or_epi32(code, neg, code, _mm512_set1_epi32(8));
}

AVX512_FN static void e4m3_avx512(const float *v, int64_t n, nvfp4_round mode, const uint32_t *words,
                                  uint8_t *codes) {
  const int sr = mode == NVFP4_ROUND_SR && words;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = fast_lanes16(n - i);
    const __m512i w = sr ? _mm512_maskz_loadu_epi32(k, words + i) : _mm512_setzero_si512();
    const __m512i c = e4m3_16_avx512(_mm512_maskz_loadu_ps(k, v + i), mode, w, NULL);
    _mm512_mask_cvtepi32_storeu_epi8(codes + i, k, c);
  }
}

AVX512_FN static void e2m1_avx512(const float *u, int64_t n, int sr, const uint32_t *words,
                                  uint8_t *codes) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_mask_cvtepi32_storeu_epi8(codes + i, 0xFFFF, e2m1_16_avx512(_mm512_loadu_ps(u + i), sr,
                                                                       sr ? words + i : NULL));
  if (i < n) e2m1_codes_twin(u + i, n - i, sr, sr ? words + i : NULL, codes + i);
}

/* 16 E2M1 codes (int32 lanes) packed two a byte, element 2j in the low nibble of byte j. */
AVX512_FN static inline void e2m1_pack_store(__m512i c, uint8_t *dst) {
  const __m512i lo = _mm512_and_si512(c, _mm512_set1_epi64(0xF));
  const __m512i hi = _mm512_slli_epi64(_mm512_srli_epi64(c, 32), 4);
  _mm_storel_epi64((__m128i *)(void *)dst, _mm512_cvtepi64_epi8(_mm512_or_si512(lo, hi)));
}

/* Up to 16 blocks [b0, b0 + nbc) of row `row` (16 values each): the amax of each (fmaxf from +0:
 * NaN lanes ignored as fmaxf does), their scales (d = amax / s_t / 6 rounded UP in E4M3, the
 * value sb its decode), then each block's codes from u = row / s_t / sb clamped to [-6, 6]
 * (fminf, fmaxf: NaN gives 6), all 0 where !(sb > 0): nvfp4_block's operations. */
AVX512_FN static void nv_blocks_avx512(const float *row, int64_t b0, int nbc, float s_t, int sr,
                                       const uint32_t *words, uint8_t *crow, uint8_t *srow) {
  float amax[16] = {0.0f}, sb[16];
  const __m512 zero = _mm512_setzero_ps();
  for (int j = 0; j < nbc; ++j)
    amax[j] = _mm512_reduce_max_ps(
        _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(row + (b0 + j) * 16)), zero));
  const __m512 st = _mm512_set1_ps(s_t);
  const __m512 d = _mm512_div_ps(_mm512_div_ps(_mm512_loadu_ps(amax), st), _mm512_set1_ps(6.0f));
  __m512 sbv;
  const __m512i sc = e4m3_16_avx512(d, NVFP4_ROUND_UP, _mm512_setzero_si512(), &sbv);
  _mm512_mask_cvtepi32_storeu_epi8(srow + b0, (__mmask16)((1u << nbc) - 1u), sc);
  _mm512_storeu_ps(sb, sbv);
  const __m512 six = _mm512_set1_ps(6.0f), nsix = _mm512_set1_ps(-6.0f);
  for (int j = 0; j < nbc; ++j) {
    uint8_t *dst = crow + (b0 + j) * 8;
    if (!(sb[j] > 0.0f)) {
      memset(dst, 0, 8);
      continue;
    }
    __m512 u = _mm512_div_ps(_mm512_div_ps(_mm512_loadu_ps(row + (b0 + j) * 16), st),
                             _mm512_set1_ps(sb[j]));
    u = _mm512_max_ps(_mm512_min_ps(u, six), nsix);
    e2m1_pack_store(e2m1_16_avx512(u, sr, sr ? words + j * 16 : NULL), dst);
  }
}

/* nvfp4_quantize_rows at 16 lanes: 16 blocks at a time and the 512-bit Philox (NVFP4_ROWS). */
NVFP4_ROWS(nvfp4_rows_avx512, 16, philox_words_avx512, nv_blocks_avx512)

/* mx_exponent of nvfp4_ref.c: the smallest e with amax <= 448 * 2^e, clamped to [-127, 127]. */
static int mx_exponent_avx512(float amax) {
  if (!(amax > 0.0f)) return 0;
  int ex;
  const float fr = frexpf(amax, &ex);
  const int e = ex - 9 + (fr > 0.875f ? 1 : 0);
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

/* One row of mxfp8_quantize_rows: per 32-value block the amax (fmaxf from +0), the E8M0 exponent,
 * u = v / 2^e (vdivps, as the twin's division), its E4M3 codes (RTN, or SR with the stream's
 * words: idx_col = 1 by the 512-bit Philox, other strides 32 counters at a time). */
AVX512_FN static void mx_row_avx512(const float *row, int64_t r, int64_t k, int sr,
                                    const nvfp4_stream *st, uint8_t *crow, uint8_t *srow) {
  const int64_t nb = fast_cdiv(k, MXFP8_BLOCK);
  const fast_rng rng = {st ? st->seed : 0u, st ? st->tag : 0u, st ? st->step : 0u};
  uint32_t w[MXFP8_BLOCK];
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t c0 = b * MXFP8_BLOCK, n = k - c0 < MXFP8_BLOCK ? k - c0 : MXFP8_BLOCK;
    const __mmask16 k0 = fast_lanes16(n);
    const __mmask16 k1 = fast_lanes16(n - 16);
    const __m512 x0 = _mm512_maskz_loadu_ps(k0, row + c0), x1 = _mm512_maskz_loadu_ps(k1, row + c0 + 16);
    const __m512 zero = _mm512_setzero_ps();
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(
        _mm512_abs_ps(x0), _mm512_max_ps(_mm512_abs_ps(x1), zero)));
    const int e = mx_exponent_avx512(amax);
    srow[b] = (uint8_t)(e + 127);
    const __m512 X = _mm512_set1_ps(ldexpf(1.0f, e));
    __m512i w0 = _mm512_setzero_si512(), w1 = _mm512_setzero_si512();
    if (sr) {
      if (st->idx_col == 1)
        philox_words_avx512(&rng, (uint64_t)(r * st->idx_row + c0), n, w);
      else
        philox_strided32_avx512(&rng, (uint64_t)(r * st->idx_row + c0 * st->idx_col),
                                (uint64_t)st->idx_col, w);
      w0 = _mm512_maskz_loadu_epi32(k0, w), w1 = _mm512_maskz_loadu_epi32(k1, w + 16);
    }
    const nvfp4_round md = sr ? NVFP4_ROUND_SR : NVFP4_ROUND_RTN;
    _mm512_mask_cvtepi32_storeu_epi8(crow + c0, k0, e4m3_16_avx512(_mm512_div_ps(x0, X), md, w0, NULL));
    _mm512_mask_cvtepi32_storeu_epi8(crow + c0 + 16, k1, e4m3_16_avx512(_mm512_div_ps(x1, X), md, w1, NULL));
  }
}

/* mxfp8_quantize_rows at 16 lanes (row by row, mx_row_avx512). */
static void mxfp8_rows_avx512(const float *v, int64_t r0, int64_t r1, int64_t k, int sr,
                              const nvfp4_stream *st, uint8_t *codes, uint8_t *scales) {
  if (sr && !st) {
    mxfp8_quantize_rows(v, r0, r1, k, sr, st, codes, scales);
    return;
  }
  const int64_t kp = fast_round_up(k, MXFP8_BLOCK), nb = kp / MXFP8_BLOCK;
  memset(codes + r0 * kp, 0, (size_t)((r1 - r0) * kp));
  for (int64_t r = r0; r < r1; ++r) mx_row_avx512(v + r * k, r, k, sr, st, codes + r * kp, scales + r * nb);
}

/* the 512-bit Philox, quantizer, amax, sums, FWHT, epilogue and NVFP4 / MXFP8 quantisers
 * (fast_level.c gives a level whose CPU lacks AVX-512F the row below) */
static const fast_elem_kernels elem_avx512 = {philox_words_avx512, quant_avx512, amax_avx512,
                                              fwht_row_level_avx512, fwht_cols_level_avx512, add_avx512,
                                              scale_tile_avx512, fast_transpose_bytes_avx2,
                                              e4m3_avx512, e2m1_avx512, nvfp4_rows_avx512,
                                              mxfp8_rows_avx512};
#endif

/* ---- the GEMM kernel: 512-bit vpdpbusd, MR 16 ------------------------------------------------ */

#if FAST_X86
#define VNNI512_FN __attribute__((target("avx2,avx512f,avx512bw,avx512vnni")))
#define ROWS16(X)                                                                                   \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

#ifdef HOT_FAST_VNNI_EMU
EMU_VEC(vn_vec, 16, vn)
#define VNNI_FN
#else
typedef __m512i vn_vec;
#define vn_load(p) _mm512_loadu_si512((const void *)(p))
#define vn_store(p, v) _mm512_storeu_si512((void *)(p), (v))
#define vn_zero() _mm512_setzero_si512()
#define vn_set1(x) _mm512_set1_epi32(x)
#define vn_dpbusd(c, u, s) _mm512_dpbusd_epi32((c), (u), (s))
#define vn_sub(a, b) _mm512_sub_epi32((a), (b))
#define VNNI_FN VNNI512_FN
#endif

VNNI_FN static void kern_vnni(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                              int32_t *c, int accum, const uint32_t *corr) {
  const int64_t ldc = GK_LDC;
  (void)g;
  const uint8_t *a = ap;
  const int8_t *b = bp;
#define VN_INIT(m) vn_vec v##m = accum ? vn_load(c + m * ldc) : vn_zero();
  ROWS16(VN_INIT)
  for (int64_t s = 0; s < ns; ++s) {
    const vn_vec bv = vn_load(b + s * 64);
    const uint8_t *as = a + s * 64;
#define VN_STEP(m) v##m = vn_dpbusd(v##m, vn_set1(ld32(as + 4 * m)), bv);
    ROWS16(VN_STEP)
  }
  if (corr) {
    const vn_vec k = vn_load(corr);
#define VN_CORR(m) v##m = vn_sub(v##m, k);
    ROWS16(VN_CORR)
  }
#define VN_STORE(m) vn_store(c + m * ldc, v##m);
  ROWS16(VN_STORE)
}

static void gemm_setup_vnni512(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_VNNI, g->simd = 1, g->mr = 16, g->kstep = 4, g->off = 128, g->kern = kern_vnni;
  fast_gemm_pack_avx2(g);
}
#endif

/* ---- the level's row (fast_level.c) ----------------------------------------------------------- */

extern const fast_level_row fast_row_avx512;
#if FAST_X86
const fast_level_row fast_row_avx512 = {FAST_LEVEL_AVX512, &elem_avx512, gemm_setup_vnni512};
#else
const fast_level_row fast_row_avx512 = {FAST_LEVEL_AVX512, NULL, NULL};
#endif

/* fast_avx2.c — the per-element kernels of the avx2 level (Philox, amax, column sums, column
 * FWHT, the GEMM epilogue, the byte transpose, the E4M3 / E2M1 / NVFP4-row quantisers of recipe
 * nvfp4, and its quantizer and row FWHT from fast_kern.h)
 * and the bf16 load that any CPU with AVX2 runs: the scalar forms' IEEE operations per element
 * on 8 lanes (vdivps, vaddps, vsubps, vmulps and vroundps round once, like the scalar code built
 * with -ffp-contract=off), so the bits are the scalar level's. Its GEMM kernels follow
 * (fast_avx2_gemm below), and its row of the level tables at the end. */
#include "fast_gemm.h"

#if FAST_X86
/* ---- Philox ------------------------------------------------------------------------------- */

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

static void philox_words_avx2(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words) {
  philox_avx2_ctx c;
  c.r = r;
  philox_keys_init(r, &c.k);
  fill_words(idx0, n, words, 32, philox_block_avx2, &c);
}

/* ---- amax --------------------------------------------------------------------------------- */

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

/* ---- column FWHT -------------------------------------------------------------------------- */

#define FWHT_PASS_AVX2(G)                                                                           \
  FWHT_PASS(G, avx2, AVX2_FN, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_setzero_ps,      \
            _mm256_add_ps, _mm256_sub_ps)
FWHT_PASS_AVX2(2)
FWHT_PASS_AVX2(4)
FWHT_PASS_AVX2(8)
FWHT_COLS(avx2, AVX2_FN)

static void fwht_cols_level_avx2(float *m, int p, int64_t cols, int64_t ld, const float *const *src) {
  if (!fwht_cols_trivial(m, p, cols, src)) fwht_cols_src_avx2(m, p, cols, ld, src);
}

/* ---- column sums ---------------------------------------------------------------------------- */

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

/* ---- GEMM epilogue ---------------------------------------------------------------------------- */

/* One row of a tile; fresh rows starting on a 32-byte boundary take streaming stores (no read
 * for ownership of output lines that are only written), which the caller fences once. */
/* Fresh rows that start on a 32-byte boundary (torch's tensors are 64-aligned) are written with
 * streaming stores: the epilogue's CPU time 0.33-0.47x of plain stores there. Rows that do not
 * (malloc's large blocks are 16-aligned) take plain stores: peeling the head to the boundary and
 * streaming the rest was slower than plain stores (docs/cpu-backend.md). */
AVX2_FN static inline __attribute__((always_inline)) int scale_avx2(float *o, const int32_t *a, int64_t n,
                                                                   float f, int mode) {
  const int add = mode & FAST_EPI_ADD;
  const __m256 vf = _mm256_set1_ps(f);
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 big = _mm256_set1_ps(3.40282347e+38f);
  __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1)); /* |p| <= FLT_MAX: false for Inf, NaN */
  int64_t i = 0;
  if (mode == 0 && ((uintptr_t)o & 31) == 0)
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

AVX2_FN static int scale_tile_avx2(float *out, int64_t ldo, const int32_t *acc, int64_t ldc,
                                   int64_t rows, int64_t n, const float *row_f, float f, int mode) {
  int good = 1;
  for (int64_t m = 0; m < rows; ++m)
    good &= scale_avx2(out + m * ldo, acc + m * ldc, n, row_f ? row_f[m] : f, mode);
  if (mode == 0) /* only mode 0 streams: one fence per such tile, so that its streaming stores */
    _mm_sfence(); /* are visible before the task ends (the segmented adds issue none: no fence) */
  return good;
}

/* ---- byte transpose ---------------------------------------------------------------------- */

/* A 16 x 16 block of bytes, transposed in registers: four rounds of interleaving row i with row
 * i + 8 (bytes, then the same again on the results) put byte c of row r at byte r of row c. One
 * round: out[2i], out[2i + 1] interleave the bytes of v[i] and v[i + 8] (per 128-bit lane).
 * Spelled with constant indices, so the 16 rows stay in registers (a loop over rounds copying
 * through an array kept them on the stack: 38 of its 70 instructions were loads and stores). */
#define TR_ROUND(LO, HI, out, v)                                                                 \
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; ++i) {                                             \
    out[2 * i] = LO(v[i], v[i + 8]);                                                                \
    out[2 * i + 1] = HI(v[i], v[i + 8]);                                                            \
  }

/* A 16 x 16 byte transpose per 128-bit lane of VT: sixteen rows loaded, four rounds, each
 * result row stored by STORE(dst, ld, i, v) (its column i). */
#define TRANSPOSE16(NAME, VT, LOAD, LO, HI, STORE)                                                \
  AVX2_FN static inline void NAME(const int8_t *src, int64_t ls, int8_t *dst, int64_t ld) {       \
    VT v[16], t[16];                                                                              \
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i)                                         \
      v[i] = LOAD((const VT *)(const void *)(src + i * ls));                                      \
    TR_ROUND(LO, HI, t, v)                                                                    \
    TR_ROUND(LO, HI, v, t)                                                                    \
    TR_ROUND(LO, HI, t, v)                                                                    \
    TR_ROUND(LO, HI, v, t)                                                                    \
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) STORE(dst, ld, i, v[i]);                \
  }
#define STORE_SSE(dst, ld, i, v) _mm_storeu_si128((__m128i *)(void *)((dst) + (i) * (ld)), v)
/* two blocks side by side: the low lane is a column of the first, the high lane of the second */
#define STORE_2X(dst, ld, i, v)                                                                   \
  do {                                                                                            \
    STORE_SSE(dst, ld, i, _mm256_castsi256_si128(v));                                             \
    STORE_SSE(dst, ld, (i) + 16, _mm256_extracti128_si256(v, 1));                                 \
  } while (0)
TRANSPOSE16(transpose16_sse, __m128i, _mm_loadu_si128, _mm_unpacklo_epi8, _mm_unpackhi_epi8, STORE_SSE)
/* Two 16 x 16 blocks side by side (source columns c .. c + 31) at once: the unpacks work per
 * 128-bit lane, so row i's 32 bytes in one register transpose both blocks. */
TRANSPOSE16(transpose16x2_avx2, __m256i, _mm256_loadu_si256, _mm256_unpacklo_epi8,
            _mm256_unpackhi_epi8, STORE_2X)
#undef TRANSPOSE16
#undef STORE_2X
#undef STORE_SSE
#undef TR_ROUND

/* 64 x 64 byte squares, each as 16 x 16 blocks (two side by side where the columns allow): a
 * square's 64 source lines and 64 destination lines stay in L1 while its blocks are done (a
 * column strip of 16 bytes down all the rows read every source line four times from L2 and
 * wrote every destination line in four visits). */
void fast_transpose_bytes_avx2(const int8_t *src, int64_t rows, int64_t cols, int64_t ls,
                               int8_t *dst, int64_t ld) {
  const int64_t r0 = rows / 16 * 16, c0 = cols / 16 * 16;
  for (int64_t rs = 0; rs < r0; rs += 64) {
    const int64_t re = rs + 64 < r0 ? rs + 64 : r0;
    int64_t c = 0;
    for (; c + 32 <= c0; c += 32)
      for (int64_t r = rs; r < re; r += 16) transpose16x2_avx2(src + r * ls + c, ls, dst + c * ld + r, ld);
    for (; c < c0; c += 16)
      for (int64_t r = rs; r < re; r += 16) transpose16_sse(src + r * ls + c, ls, dst + c * ld + r, ld);
  }
  transpose_rest(src, rows, cols, ls, dst, ld, r0, c0);
}

/* ---- loads -------------------------------------------------------------------------------- */

/* bf16 to fp32 eight at a time: hot_bf16_to_f32's shift of the bits (a move, exact for every
 * value, NaNs included), so any CPU with AVX2 runs it whatever the level (the bf16 inputs of a
 * backward are read up to five times: g' twice, w' twice, the HLA projection once; the scalar
 * loop took about a cycle per value). */
AVX2_FN void fast_load_bf16_avx2(const unsigned short *s, int64_t n, float *dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
    _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_slli_epi32(v, 16));
  }
  for (; i < n; ++i) dst[i] = hot_bf16_to_f32(s[i]);
}

/* ---- the NVFP4 / MXFP8 element quantisers (templates/nvfp4_ref.c) ---------------------------- */

/* E4M3 codes of 8 values in int32 lanes, nvfp4_e4m3_encode's bits: fast_avx512.c's
 * e4m3_16_avx512 with e = max(floor(log2 a), -6) from the exponent field (a below 2^-6, the
 * subnormals and 0 included, has e = -6: its field is below 121), the rest the same steps:
 * t = a * 2^(3 - e) (exact), q rounded per mode, code = min(8 e + 48 + q, 0x7E), 0x7E past 448,
 * the sign bit of v, 0x7F for NaN; *val (val not NULL) the code's value. */
AVX2_FN static inline __m256i e4m3_8_avx2(__m256 v, nvfp4_round mode, __m256i w, __m256 *val) {
  const __m256 a = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  __m256i ei = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(a), 23), _mm256_set1_epi32(127));
  ei = _mm256_min_epi32(_mm256_max_epi32(ei, _mm256_set1_epi32(-6)), _mm256_set1_epi32(8));
  const __m256 up2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(130), ei), 23));
  const __m256 t = _mm256_mul_ps(a, up2);
  __m256 q;
  if (mode == NVFP4_ROUND_RTN) {
    q = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else if (mode == NVFP4_ROUND_UP) {
    q = _mm256_round_ps(t, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  } else {
    const __m256 f = _mm256_round_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m256 rho = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 8)),
                                     _mm256_set1_ps(5.9604644775390625e-8f));
    const __m256 inc = _mm256_cmp_ps(rho, _mm256_sub_ps(t, f), _CMP_LT_OQ);
    q = _mm256_add_ps(f, _mm256_and_ps(inc, _mm256_set1_ps(1.0f)));
  }
  const __m256i big = _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(448.0f), _CMP_GT_OQ));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  __m256i code = _mm256_add_epi32(_mm256_slli_epi32(ei, 3), _mm256_cvttps_epi32(q));
  code = _mm256_min_epi32(_mm256_add_epi32(code, _mm256_set1_epi32(48)), _mm256_set1_epi32(0x7E));
  code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7E), big);
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 24),
                                        _mm256_set1_epi32(0x80));
  code = _mm256_blendv_epi8(_mm256_or_si256(code, sign), _mm256_set1_epi32(0x7F), nan);
  if (val) {
    const __m256 ulp = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ei, _mm256_set1_epi32(124)), 23));
    __m256 r = _mm256_min_ps(_mm256_mul_ps(q, ulp), _mm256_set1_ps(448.0f));
    r = _mm256_blendv_ps(r, _mm256_set1_ps(448.0f), _mm256_castsi256_ps(big));
    r = _mm256_or_ps(r, _mm256_castsi256_ps(_mm256_slli_epi32(sign, 24)));
    *val = _mm256_blendv_ps(r, v, _mm256_castsi256_ps(nan));
  }
  return code;
}

/* E2M1 codes of 8 values in int32 lanes, nvfp4_e2m1_rtn / _sr's bits (fast_avx512.c's
 * e2m1_16_avx512 on 8 lanes). */
AVX2_FN static inline __m256i e2m1_8_avx2(__m256 u, int sr, const uint32_t *w) {
  const __m256 m = _mm256_min_ps(_mm256_and_ps(u, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))),
                                 _mm256_set1_ps(6.0f));
  const __m256 lt2 = _mm256_cmp_ps(m, _mm256_set1_ps(2.0f), _CMP_LT_OQ);
  const __m256 lt4 = _mm256_cmp_ps(m, _mm256_set1_ps(4.0f), _CMP_LT_OQ);
  const __m256 mul = _mm256_blendv_ps(_mm256_blendv_ps(_mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f), lt4),
                                      _mm256_set1_ps(2.0f), lt2);
  const __m256i off = _mm256_blendv_epi8(
      _mm256_blendv_epi8(_mm256_set1_epi32(4), _mm256_set1_epi32(2), _mm256_castps_si256(lt4)),
      _mm256_setzero_si256(), _mm256_castps_si256(lt2));
  const __m256 t = _mm256_mul_ps(m, mul);
  __m256i code;
  if (!sr) {
    code = _mm256_cvttps_epi32(_mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    const __m256 f = _mm256_round_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m256i word = _mm256_srli_epi32(_mm256_loadu_si256((const __m256i *)(const void *)w), 8);
    const __m256 rho = _mm256_mul_ps(_mm256_cvtepi32_ps(word), _mm256_set1_ps(5.9604644775390625e-8f));
    const __m256 inc = _mm256_cmp_ps(rho, _mm256_sub_ps(t, f), _CMP_LT_OQ);
    code = _mm256_sub_epi32(_mm256_cvttps_epi32(f), _mm256_castps_si256(inc)); /* inc: -1 */
  }
  code = _mm256_add_epi32(code, off);
  const __m256i neg = _mm256_andnot_si256(_mm256_cmpeq_epi32(code, _mm256_setzero_si256()),
                                          _mm256_castps_si256(_mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_LT_OQ)));
  return _mm256_or_si256(code, _mm256_and_si256(neg, _mm256_set1_epi32(8)));
}

/* The low bytes of 8 int32 lanes. */
AVX2_FN static inline void bytes8_avx2(__m256i c, uint8_t *dst) {
  int32_t t[8];
  _mm256_storeu_si256((__m256i *)(void *)t, c);
  for (int l = 0; l < 8; ++l) dst[l] = (uint8_t)t[l];
}

AVX2_FN static void e4m3_avx2(const float *v, int64_t n, nvfp4_round mode, const uint32_t *words,
                              uint8_t *codes) {
  const int sr = mode == NVFP4_ROUND_SR && words;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = sr ? _mm256_loadu_si256((const __m256i *)(const void *)(words + i)) : _mm256_setzero_si256();
    bytes8_avx2(e4m3_8_avx2(_mm256_loadu_ps(v + i), mode, w, NULL), codes + i);
  }
  if (i < n) e4m3_codes_twin(v + i, n - i, mode, words ? words + i : NULL, codes + i);
}

AVX2_FN static void e2m1_avx2(const float *u, int64_t n, int sr, const uint32_t *words, uint8_t *codes) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) bytes8_avx2(e2m1_8_avx2(_mm256_loadu_ps(u + i), sr, sr ? words + i : NULL), codes + i);
  if (i < n) e2m1_codes_twin(u + i, n - i, sr, sr ? words + i : NULL, codes + i);
}

/* The max of 8 non-negative lanes. */
AVX2_FN static inline float hmax8_avx2(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

/* Up to 8 NVFP4 blocks [b0, b0 + nbc) of a row: fast_avx512.c's nv_blocks_avx512 on 8 lanes (the
 * amax from +0 with NaN lanes ignored, the 8 scales at once, each block's 16 codes as two
 * vectors, nibbles packed in C). */
AVX2_FN static void nv_blocks_avx2(const float *row, int64_t b0, int nbc, float s_t, int sr,
                                   const uint32_t *words, uint8_t *crow, uint8_t *srow) {
  const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), zero = _mm256_setzero_ps();
  float amax[8] = {0.0f}, sb[8];
  for (int j = 0; j < nbc; ++j) {
    const float *x = row + (b0 + j) * 16;
    amax[j] = hmax8_avx2(_mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x), absm),
                                       _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + 8), absm), zero)));
  }
  const __m256 st = _mm256_set1_ps(s_t);
  const __m256 d = _mm256_div_ps(_mm256_div_ps(_mm256_loadu_ps(amax), st), _mm256_set1_ps(6.0f));
  __m256 sbv;
  uint8_t sc[8];
  bytes8_avx2(e4m3_8_avx2(d, NVFP4_ROUND_UP, _mm256_setzero_si256(), &sbv), sc);
  memcpy(srow + b0, sc, (size_t)nbc);
  _mm256_storeu_ps(sb, sbv);
  const __m256 six = _mm256_set1_ps(6.0f), nsix = _mm256_set1_ps(-6.0f);
  for (int j = 0; j < nbc; ++j) {
    uint8_t *dst = crow + (b0 + j) * 8;
    if (!(sb[j] > 0.0f)) {
      memset(dst, 0, 8);
      continue;
    }
    int32_t c[16];
    for (int h = 0; h < 2; ++h) {
      __m256 u = _mm256_div_ps(_mm256_div_ps(_mm256_loadu_ps(row + (b0 + j) * 16 + 8 * h), st),
                               _mm256_set1_ps(sb[j]));
      u = _mm256_max_ps(_mm256_min_ps(u, six), nsix);
      _mm256_storeu_si256((__m256i *)(void *)(c + 8 * h),
                          e2m1_8_avx2(u, sr, sr ? words + j * 16 + 8 * h : NULL));
    }
    for (int l = 0; l < 8; ++l) dst[l] = (uint8_t)(c[2 * l] | (c[2 * l + 1] << 4));
  }
}

/* nvfp4_quantize_rows on 8 lanes: 8 blocks at a time and the AVX2 Philox (NVFP4_ROWS). */
NVFP4_ROWS(nvfp4_rows_avx2, 8, philox_words_avx2, nv_blocks_avx2)

static const fast_elem_kernels elem_avx2 = {philox_words_avx2, quant_avx2, amax_avx2,
                                            fwht_row_level_avx2, fwht_cols_level_avx2, add_avx2,
                                            scale_tile_avx2, fast_transpose_bytes_avx2,
                                            e4m3_avx2, e2m1_avx2, nvfp4_rows_avx2,
                                            mxfp8_quantize_rows};
#endif

/* ---- the GEMM kernels: AVX2 "w16" and "u8" (fast_gemm.c's header comment) ---------------------- */

#if FAST_X86
AVX2_FN static void kern_w16_avx2(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                                  int32_t *c, int accum, const uint32_t *corr) {
  const int64_t ldc = GK_LDC;
  (void)g, (void)corr; /* no offset: corr is always NULL */
  const int16_t *a = ap, *b = bp;
#define W16_INIT(m)                                                                                 \
  __m256i c##m##0 = accum ? _mm256_loadu_si256((const __m256i *)(c + m * ldc)) : _mm256_setzero_si256(); \
  __m256i c##m##1 = accum ? _mm256_loadu_si256((const __m256i *)(c + m * ldc + 8)) : _mm256_setzero_si256();
  ROWS4(W16_INIT)
  for (int64_t s = 0; s < ns; ++s) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + s * 32));
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + s * 32 + 16));
    const int16_t *as = a + s * 8;
#define W16_STEP(m)                                                                                 \
  {                                                                                                 \
    const __m256i av = _mm256_set1_epi32(ld32(as + 2 * m));                                         \
    c##m##0 = _mm256_add_epi32(c##m##0, _mm256_madd_epi16(av, b0));                                 \
    c##m##1 = _mm256_add_epi32(c##m##1, _mm256_madd_epi16(av, b1));                                 \
  }
    ROWS4(W16_STEP)
  }
#define W16_STORE(m)                                                                                \
  _mm256_storeu_si256((__m256i *)(c + m * ldc), c##m##0);                                           \
  _mm256_storeu_si256((__m256i *)(c + m * ldc + 8), c##m##1);
  ROWS4(W16_STORE)
}

/* *h += p in 16-bit lanes, written into h's own register. With the plain intrinsic GCC 12 put
 * each sum in the product's register and copied it back, eight vector moves per step of the u8
 * kernel that cost about a tenth of its speed (its inner loop is bound by how many instructions
 * the core takes in per cycle, not by the multiplies). The operands are in both dialects. */
AVX2_FN static inline void add16_in_place(__m256i *h, __m256i p) {
  __asm__("vpaddw {%1, %0, %0|%0, %0, %1}" : "+x"(*h) : "x"(p));
}

AVX2_FN static void kern_u8_avx2(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                                 int32_t *c, int accum, const uint32_t *corr) {
  const int64_t ldc = GK_LDC;
  const uint8_t *a = ap;
  const int8_t *b = bp;
  const __m256i ones = _mm256_set1_epi16(1);
  if (!accum)
    for (int m = 0; m < 4; ++m) memset(c + m * ldc, 0, NR * sizeof *c);
  for (int64_t s0 = 0; s0 < ns; s0 += g->chunk) {
    const int64_t s1 = s0 + g->chunk < ns ? s0 + g->chunk : ns;
#define U8_INIT(m) __m256i h##m##0 = _mm256_setzero_si256(), h##m##1 = _mm256_setzero_si256();
    ROWS4(U8_INIT)
    for (int64_t s = s0; s < s1; ++s) {
      const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + s * 64));
      const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + s * 64 + 32));
      const uint8_t *as = a + s * 16;
#define U8_STEP(m)                                                                                  \
  {                                                                                                 \
    const __m256i av = _mm256_set1_epi32(ld32(as + 4 * m));                                         \
    add16_in_place(&h##m##0, _mm256_maddubs_epi16(av, b0));                                         \
    add16_in_place(&h##m##1, _mm256_maddubs_epi16(av, b1));                                         \
  }
      ROWS4(U8_STEP)
    }
#define U8_WIDEN(m)                                                                                 \
  {                                                                                                 \
    __m256i *p0 = (__m256i *)(c + m * ldc), *p1 = (__m256i *)(c + m * ldc + 8);                     \
    _mm256_storeu_si256(p0, _mm256_add_epi32(_mm256_loadu_si256(p0), _mm256_madd_epi16(h##m##0, ones))); \
    _mm256_storeu_si256(p1, _mm256_add_epi32(_mm256_loadu_si256(p1), _mm256_madd_epi16(h##m##1, ones))); \
  }
    ROWS4(U8_WIDEN)
  }
  if (corr) {
    const __m256i k0 = _mm256_loadu_si256((const __m256i *)corr);
    const __m256i k1 = _mm256_loadu_si256((const __m256i *)(corr + 8));
    for (int m = 0; m < 4; ++m) {
      __m256i *p0 = (__m256i *)(c + m * ldc), *p1 = (__m256i *)(c + m * ldc + 8);
      _mm256_storeu_si256(p0, _mm256_sub_epi32(_mm256_loadu_si256(p0), k0));
      _mm256_storeu_si256(p1, _mm256_sub_epi32(_mm256_loadu_si256(p1), k1));
    }
  }
}

/* ---- the AVX2 packing (every SIMD kind's) ---------------------------------------------------- */

/* The AVX2 packing of whole panels (rows == width) over k in [0, kend), kend a multiple of the
 * block each case handles; returns kend (0 when no case fits: the scalar loop does it all).
 * Layouts as pack_panel's: u8 (kstep 4, byte v + off) or w16 (kstep 2, int16 v). */
AVX2_FN static int64_t pack_whole_avx2(const gk_cfg *g, const int8_t *src, int64_t sr, int64_t sk,
                                       int64_t seg_k, int width, int off, unsigned char *dst) {
  const int w16 = g->kind == K_W16;
  const __m128i vo = _mm_set1_epi8((char)off);
  if (sk == 1 && width % 4 == 0) { /* rows along k: 4 rows x 16 bytes of codes at a time */
    const int kb = w16 ? 8 : 16;     /* k of one block: 4 steps */
    const int64_t kend = seg_k / kb * kb;
    const int64_t sbytes = (int64_t)width * 4; /* bytes of one step */
    for (int r0 = 0; r0 < width; r0 += 4)
      for (int64_t k = 0; k < kend; k += kb) {
        __m128i v[4];
        for (int i = 0; i < 4; ++i) {
          const int8_t *p = src + (r0 + i) * sr + k;
          v[i] = w16 ? _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)p))
                     : _mm_add_epi8(_mm_loadu_si128((const __m128i *)p), vo);
        }
        /* a 4 x 4 transpose of 32-bit words: word s of row i goes to step s, slot i */
        const __m128i t0 = _mm_unpacklo_epi32(v[0], v[1]), t1 = _mm_unpacklo_epi32(v[2], v[3]);
        const __m128i t2 = _mm_unpackhi_epi32(v[0], v[1]), t3 = _mm_unpackhi_epi32(v[2], v[3]);
        unsigned char *d = dst + (k / (w16 ? 2 : 4)) * sbytes + r0 * 4;
        _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(t0, t1));
        _mm_storeu_si128((__m128i *)(d + sbytes), _mm_unpackhi_epi64(t0, t1));
        _mm_storeu_si128((__m128i *)(d + 2 * sbytes), _mm_unpacklo_epi64(t2, t3));
        _mm_storeu_si128((__m128i *)(d + 3 * sbytes), _mm_unpackhi_epi64(t2, t3));
      }
    return kend;
  }
  if (sr == 1 && width == 16 && !w16) { /* rows contiguous, u8: 16 rows x 4 k per step */
    const int64_t kend = seg_k / 4 * 4;
    for (int64_t k = 0; k < kend; k += 4) {
      const __m128i k0 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + k * sk)), vo);
      const __m128i k1 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + (k + 1) * sk)), vo);
      const __m128i k2 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + (k + 2) * sk)), vo);
      const __m128i k3 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + (k + 3) * sk)), vo);
      const __m128i a = _mm_unpacklo_epi8(k0, k1), b = _mm_unpackhi_epi8(k0, k1);
      const __m128i c = _mm_unpacklo_epi8(k2, k3), d = _mm_unpackhi_epi8(k2, k3);
      unsigned char *o = dst + k * 16;
      _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(b, d));
      _mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(b, d));
    }
    return kend;
  }
  if (sr == 1 && width % 4 == 0 && w16) { /* rows contiguous, w16: 4 rows x 2 k per step */
    const int64_t kend = seg_k / 2 * 2;
    for (int64_t k = 0; k < kend; k += 2)
      for (int r0 = 0; r0 < width; r0 += 4) {
        int32_t a, b;
        memcpy(&a, src + k * sk + r0, 4);
        memcpy(&b, src + (k + 1) * sk + r0, 4);
        const __m128i p = _mm_unpacklo_epi8(_mm_cvtsi32_si128(a), _mm_cvtsi32_si128(b));
        _mm_storeu_si128((__m128i *)(dst + (k / 2 * width + r0) * 4), _mm_cvtepi8_epi16(p));
      }
    return kend;
  }
  return 0;
}

/* Four whole panels of 16 rows (64 rows) of bytes at once from a source whose rows are
 * contiguous (sr == 1, k at stride sk), each byte v + off: per step of 4 k, each of the four
 * 64-byte source runs is read once and split into the panels' steps (the layout of
 * pack_fast_avx2's second case), so each source line is read whole instead of a quarter of it by
 * each of four panels at different times (rows thousands of bytes apart defeat the prefetcher).
 * The k tail and the fill to ksteps (the byte off, as pack_panel's) are written in plain C. */
AVX2_FN static void pack4_avx2(const int8_t *src, int64_t sk, int64_t seg_k, int64_t ksteps,
                               size_t bpb, int off, unsigned char *dst) {
  const __m128i vo = _mm_set1_epi8((char)off);
  const int64_t kend = seg_k / 4 * 4;
  for (int64_t k = 0; k < kend; k += 4)
    for (int q = 0; q < 4; ++q) {
      const int8_t *sq = src + q * 16 + k * sk;
      const __m128i k0 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)sq), vo);
      const __m128i k1 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(sq + sk)), vo);
      const __m128i k2 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(sq + 2 * sk)), vo);
      const __m128i k3 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(sq + 3 * sk)), vo);
      const __m128i a = _mm_unpacklo_epi8(k0, k1), b = _mm_unpackhi_epi8(k0, k1);
      const __m128i c = _mm_unpacklo_epi8(k2, k3), d = _mm_unpackhi_epi8(k2, k3);
      unsigned char *o = dst + (size_t)q * bpb + k * 16;
      _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(b, d));
      _mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(b, d));
    }
  for (int q = 0; q < 4; ++q) {
    unsigned char *d = dst + (size_t)q * bpb;
    memset(d + kend * 16, off, (size_t)((ksteps * 4 - kend) * 16));
    for (int64_t k = kend; k < seg_k; ++k)
      for (int n = 0; n < 16; ++n)
        d[(k >> 2) * 64 + n * 4 + (k & 3)] = (unsigned char)(src[k * sk + q * 16 + n] + off);
  }
}

/* sums[r] = sum over the steps of a packed u8 panel (off 0, 16 rows) of row r's codes. */
AVX2_FN static void panel_sums_avx2(const unsigned char *p, int64_t ksteps, uint32_t *sums) {
  const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  for (int64_t s = 0; s < ksteps; ++s) {
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + s * 64));
    const __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + s * 64 + 32));
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(one8, v0), one16));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(one8, v1), one16));
  }
  _mm256_storeu_si256((__m256i *)sums, s0);
  _mm256_storeu_si256((__m256i *)(sums + 8), s1);
}

void fast_gemm_pack_avx2(gk_cfg *g) {
  g->pack_whole = pack_whole_avx2, g->pack4 = pack4_avx2, g->panel_sums = panel_sums_avx2;
}

static void gemm_setup_avx2(gk_cfg *g, int qa, int qb) {
  const int64_t s_u8 = 32767 / (4 * (int64_t)qa * qb);
  if (s_u8 >= 16 && 2 * qa <= 255) {
    g->kind = K_U8, g->simd = 1, g->mr = 4, g->kstep = 4, g->off = qa, g->kern = kern_u8_avx2;
    g->chunk = (int)(s_u8 < 1024 ? s_u8 : 1024);
  } else {
    g->kind = K_W16, g->simd = 1, g->mr = 4, g->kstep = 2, g->off = 0, g->kern = kern_w16_avx2;
  }
  fast_gemm_pack_avx2(g);
}

#endif

/* ---- the level's row (fast_level.c) ----------------------------------------------------------- */

extern const fast_level_row fast_row_avx2;
#if FAST_X86
const fast_level_row fast_row_avx2 = {FAST_LEVEL_AVX2, &elem_avx2, gemm_setup_avx2};
#else
const fast_level_row fast_row_avx2 = {FAST_LEVEL_AVX2, NULL, NULL};
#endif

/* fast_kern.h — what the files of the per-element kernels share (fast_kern.c, the scalar forms,
 * and the level files fast_avx2.c, fast_avx512.c): the scalar steps that every form inlines into
 * its tails, the FWHT's stage macros, and the AVX2 forms that the 512-bit kernels reuse inline
 * (the quantizer's and the row FWHT's, whose tails and odd block sizes run as AVX2). Each file
 * gets its own copy of what it uses (static), so no call crosses a file on a hot path. Not an
 * API: fast_internal.h holds the table of a level (fast_elem_kernels). */
#ifndef HOT_FAST_KERN_H
#define HOT_FAST_KERN_H

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

/* A helper of several files: static in each, and no warning where one does not use it. */
#define FAST_SHARED static __attribute__((unused))

/* The e4m3 and e2m1 entries of the level table as loops over the twin's element functions
 * (templates/nvfp4_ref.c): the scalar and avx2 levels' forms, and the 16-lane forms' tails. */
FAST_SHARED void e4m3_codes_twin(const float *v, int64_t n, nvfp4_round mode, const uint32_t *words,
                                 uint8_t *codes) {
  for (int64_t i = 0; i < n; ++i)
    codes[i] = (uint8_t)nvfp4_e4m3_encode(v[i], mode, words && mode == NVFP4_ROUND_SR ? words[i] : 0u);
}
FAST_SHARED void e2m1_codes_twin(const float *u, int64_t n, int sr, const uint32_t *words,
                                 uint8_t *codes) {
  for (int64_t i = 0; i < n; ++i)
    codes[i] = (uint8_t)(sr ? nvfp4_e2m1_sr(u[i], words[i]) : nvfp4_e2m1_rtn(u[i]));
}

/* The Philox words of a counter-based stream made in blocks (fast_kern.c, the level files). */
/* words[i] = word idx0 + i of a counter-based stream made in blocks of `bw` words (bw / 4
 * counters from q, a multiple of 4, at most 128): whole aligned blocks go straight into words,
 * the ends through a buffer. */
FAST_SHARED void fill_words(uint64_t idx0, int64_t n, uint32_t *words, int bw,
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

FAST_SHARED void fwht_row_scalar(float *a, const float *src, int64_t n, int b) {
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
  for (int64_t o = 0; b > 1 && o < n; o += b) hot_fwht(a + o, b);
}

/* p < 2: a copy of the one source row (or +0.0); returns 1 when it did the transform. */
FAST_SHARED int fwht_cols_trivial(float *m, int p, int64_t cols, const float *const *src) {
  if (p >= 2) return 0;
  if (p == 1) {
    if (src[0]) memcpy(m, src[0], (size_t)cols * sizeof *m);
    else memset(m, 0, (size_t)cols * sizeof *m);
  }
  return 1;
}

/* The bytes the 16 x 16 blocks left (rows r0.. of columns below c0, and whole columns from c0
 * on), one at a time. */
FAST_SHARED void transpose_rest(const int8_t *src, int64_t rows, int64_t cols, int64_t ls, int8_t *dst,
                           int64_t ld, int64_t r0, int64_t c0) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = c < c0 ? r0 : 0; r < rows; ++r) dst[c * ld + r] = src[r * ls + c];
}

#if FAST_X86
/* ---- the AVX2 forms the 512-bit levels reuse (fast_avx2.c's table names them too) ---------- */

AVX2_FN FAST_SHARED __m256i quant8_avx2(const float *v, __m256 s, __m256 q, __m256 nq, int sr,
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

AVX2_FN FAST_SHARED void quant_avx2(const float *v, int64_t n, float s, int qmax, int sr,
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

/* The stages h = 1, 2, 4 (those below b) inside one vector of 8 consecutive entries: each
 * output is HOT_ADD(x, y) or HOT_SUB(x, y) of the same pair as in hot_fwht_stage. */
AVX2_FN FAST_SHARED inline __m256 fwht8_avx2(__m256 v, int b) {
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
  AVX2_FN FAST_SHARED void fwht_row##G##_avx2(float *a, const float *src, int64_t n) {                  \
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

AVX2_FN FAST_SHARED void fwht_row_avx2(float *a, const float *src, int64_t n, int b) {
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

/* The AVX2 level's row FWHT: the 8-wide kernel where the blocks allow it. */
FAST_SHARED void fwht_row_level_avx2(float *a, const float *src, int64_t n, int b) {
  if (b > 1 && (b >= 8 || n % 8 == 0)) fwht_row_avx2(a, src, n, b);
  else fwht_row_scalar(a, src, n, b);
}

/* The AVX2 byte transpose (fast_avx2.c): the 512-bit levels' table entry too. */
void fast_transpose_bytes_avx2(const int8_t *src, int64_t rows, int64_t cols, int64_t ls,
                               int8_t *dst, int64_t ld);
/* bf16 to fp32, n values, on any CPU with AVX2 (fast_avx2.c; fast_load_run). */
void fast_load_bf16_avx2(const unsigned short *s, int64_t n, float *dst);
#endif


/* nvfp4_quantize_rows (templates/nvfp4_ref.c) on SIMD block kernels: per row, BPV blocks of 16
 * values at a time by BLOCKS (v row, first block, blocks, s_t, sr, words, codes row, scales
 * row), their SR words by PHILOX (the stream's words r * idx_row + c, so idx_col = 1: the hq
 * tensors'); other strides, a k that is not a multiple of 16, or s_t not > 0 go to the twin's
 * function. Expanded in the level files, where nvfp4_ref.h and the kernels are declared. */
#define NVFP4_ROWS(NAME, BPV, PHILOX, BLOCKS)                                                       \
  static void NAME(const float *v, int64_t r0, int64_t r1, int64_t k, float s_t, int sr,           \
                   const nvfp4_stream *st, uint8_t *codes, uint8_t *scales) {                       \
    if (k % NVFP4_BLOCK || !(s_t > 0.0f) || (sr && (!st || st->idx_col != 1))) {                   \
      nvfp4_quantize_rows(v, r0, r1, k, s_t, sr, st, codes, scales);                               \
      return;                                                                                      \
    }                                                                                              \
    const int64_t nb = k / NVFP4_BLOCK;                                                            \
    const fast_rng rng = {st ? st->seed : 0u, st ? st->tag : 0u, st ? st->step : 0u};              \
    uint32_t words[(BPV) * NVFP4_BLOCK];                                                           \
    for (int64_t r = r0; r < r1; ++r)                                                              \
      for (int64_t b0 = 0; b0 < nb; b0 += (BPV)) {                                                 \
        const int nbc = nb - b0 < (BPV) ? (int)(nb - b0) : (BPV);                                  \
        if (sr)                                                                                    \
          PHILOX(&rng, (uint64_t)(r * st->idx_row + b0 * NVFP4_BLOCK), nbc * NVFP4_BLOCK, words);  \
        BLOCKS(v + r * k, b0, nbc, s_t, sr, words, codes + r * (k / 2), scales + r * nb);          \
      }                                                                                            \
  }

#endif /* HOT_FAST_KERN_H */

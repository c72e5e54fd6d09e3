/* fast_kern.c — the per-element kernels of the fast CPU path in portable C (the scalar level's
 * row: Philox words, the RTN/SR quantizer, amax, the FWHT along a row and down columns, column
 * sums, the GEMM epilogue, the byte transpose), built from hot_math.cuh (the twins' own steps),
 * and the dtype loads. The SIMD forms live in the files of their levels (fast_avx2.c,
 * fast_avx512.c; what they share with these, fast_kern.h): each performs per element the very
 * same IEEE operations, so every level gives the same bits. */
#include "fast_kern.h"

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

static void philox_block_scalar(const void *ctx, uint64_t q, uint32_t *out) {
  philox_scalar(ctx, q, 1, out);
}

static void philox_words_scalar(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words) {
  fill_words(idx0, n, words, 4, philox_block_scalar, r);
}

/* ---- quantizer ---------------------------------------------------------------------------- */

static void quant_scalar(const float *v, int64_t n, float s, int qmax, int sr, const uint32_t *w,
                         int8_t *out) {
  quant_run(v, n, s, qmax, sr, w, out);
}

/* ---- amax --------------------------------------------------------------------------------- */

static int amax_scalar(const float *v, int64_t n, float *amax) { return amax_run(v, n, amax); }

/* ---- FWHT --------------------------------------------------------------------------------- */

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

static int add_scalar(float *acc, const float *v, int64_t n) {
  int good = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) good = 0;
    acc[i] = HOT_ADD(acc[i], v[i]);
  }
  return good;
}

/* ---- GEMM epilogue ---------------------------------------------------------------------------- */

static int scale_tile_scalar(float *out, int64_t ldo, const int32_t *acc, int64_t ldc,
                             int64_t rows, int64_t n, const float *row_f, float f, int mode) {
  const int add = mode & FAST_EPI_ADD;
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

static void transpose_bytes_scalar(const int8_t *src, int64_t rows, int64_t cols, int64_t ls,
                                   int8_t *dst, int64_t ld) {
  transpose_rest(src, rows, cols, ls, dst, ld, 0, 0);
}

/* ---- loads -------------------------------------------------------------------------------- */

void fast_load_run(const void *src, hot_dtype dt, int64_t off, int64_t n, float *dst) {
  if (dt == HOT_DT_F32) {
    memcpy(dst, (const float *)src + off, (size_t)n * sizeof *dst);
  } else if (dt == HOT_DT_BF16) {
    const unsigned short *s = (const unsigned short *)src + off;
#if FAST_X86
    if (__builtin_cpu_supports("avx2")) {
      fast_load_bf16_avx2(s, n, dst);
      return;
    }
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = hot_bf16_to_f32(s[i]);
  } else {
    const unsigned short *s = (const unsigned short *)src + off;
    for (int64_t i = 0; i < n; ++i) dst[i] = hot_f16_to_f32(s[i]);
  }
}

/* ---- the scalar level's row (fast_level.c) ------------------------------------------------------ */

const fast_elem_kernels fast_elem_scalar = {philox_words_scalar, quant_scalar, amax_scalar,
                                            fwht_row_scalar, fwht_cols_scalar, add_scalar,
                                            scale_tile_scalar, transpose_bytes_scalar,
                                            e4m3_codes_twin, e2m1_codes_twin,
                                            nvfp4_quantize_rows, mxfp8_quantize_rows};

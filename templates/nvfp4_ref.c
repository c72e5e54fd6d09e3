/* nvfp4_ref.c — the CPU twin of the NVFP4 recipe, templates/CONTRACT.md section 20 (API:
 * nvfp4_ref.h). Every rounding is one of the steps written out below; no fused operations
 * (built with -ffp-contract=off). */
#include "nvfp4_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"

enum { ST_OK = 0, ST_EARG = -1, ST_ENOMEM = -3, ST_ENONFINITE = -4 };

/* ---- E2M1 ----------------------------------------------------------------------------------- */

static const float e2m1_mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

float nvfp4_e2m1_decode(unsigned code) {
  float m = e2m1_mag[code & 7u];
  return (code & 8u) ? -m : m;
}

/* The grid in three segments of equal spacing: [0, 2) step 0.5 (codes 0..4 = q), [2, 4) step 1
 * (codes q + 2), [4, 6] step 2 (codes q + 4), q the value over the step. Within a segment the
 * parity of q is the parity of the code, so ties to even on q are ties to even on the code. */
static unsigned e2m1_code_of(float m, float q) {
  if (m < 2.0f) return (unsigned)q;
  return m < 4.0f ? (unsigned)q + 2u : (unsigned)q + 4u;
}

static float e2m1_step(float m) { return m < 2.0f ? 0.5f : (m < 4.0f ? 1.0f : 2.0f); }

static unsigned e2m1_sign(float u, unsigned mag) { return (u < 0.0f && mag != 0u) ? (mag | 8u) : mag; }

unsigned nvfp4_e2m1_rtn(float u) {
  float m = fminf(fabsf(u), 6.0f);
  float q = HOT_RINT(HOT_DIV(m, e2m1_step(m))); /* exact division by a power of two */
  return e2m1_sign(u, e2m1_code_of(m, q));
}

unsigned nvfp4_e2m1_sr(float u, uint32_t word) {
  float m = fminf(fabsf(u), 6.0f);
  float t = HOT_DIV(m, e2m1_step(m));
  float lo = HOT_FLOOR(t);
  float q = lo + (hot_rho(word) < HOT_SUB(t, lo) ? 1.0f : 0.0f); /* exact: small integers */
  return e2m1_sign(u, e2m1_code_of(m, lo) + (unsigned)(q - lo));
}

/* ---- E4M3 ----------------------------------------------------------------------------------- */

float nvfp4_e4m3_decode(unsigned code) {
  unsigned e = (code >> 3) & 15u, man = code & 7u;
  float m;
  if (e == 15u && man == 7u) return NAN;
  if (e == 0u)
    m = ldexpf((float)man, -9);
  else
    m = ldexpf(1.0f + (float)man / 8.0f, (int)e - 7);
  return (code & 0x80u) ? -m : m;
}

/* The E4M3 code of a magnitude v in [0, 448] that is on the grid. */
static unsigned e4m3_code_of(float v) {
  if (v == 0.0f) return 0u;
  int ex;
  float fr = frexpf(v, &ex); /* v = fr * 2^ex, fr in [0.5, 1) */
  int e = ex - 1;
  if (e < -6) return (unsigned)ldexpf(v, 9); /* subnormal: man * 2^-9 */
  return (unsigned)((e + 7) << 3) | (unsigned)((fr * 2.0f - 1.0f) * 8.0f);
}

unsigned nvfp4_e4m3_encode(float v, nvfp4_round mode, uint32_t word) {
  if (isnan(v)) return 0x7Fu;
  unsigned sign = signbit(v) ? 0x80u : 0u;
  float a = fabsf(v);
  if (a > 448.0f) return sign | 0x7Eu; /* saturate (also +-Inf) */
  float r = 0.0f;
  if (a > 0.0f) {
    int ex;
    frexpf(a, &ex);
    int e = ex - 1 < -6 ? -6 : ex - 1;
    float ulp = ldexpf(1.0f, e - 3);
    float q = HOT_DIV(a, ulp); /* exact: a power of two */
    if (mode == NVFP4_ROUND_RTN) {
      q = HOT_RINT(q);
    } else if (mode == NVFP4_ROUND_UP) {
      q = ceilf(q);
    } else {
      float f = HOT_FLOOR(q);
      q = f + (hot_rho(word) < HOT_SUB(q, f) ? 1.0f : 0.0f);
    }
    r = fminf(HOT_MUL(q, ulp), 448.0f); /* exact; 480 saturates */
  }
  return sign | e4m3_code_of(r);
}

/* ---- NVFP4 quantiser ------------------------------------------------------------------------ */

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

static uint32_t draw(const nvfp4_stream *st, int64_t r, int64_t c) {
  return hot_rand_word(st->seed, st->tag, st->step, (hot_u64)(r * st->idx_row + c * st->idx_col));
}

/* draw() through the last Philox block (4 words): hot_rand_word's counter and word choice, so the
 * same words (test_ref_nvfp4's sr_draws_known), one Philox evaluation per 4 consecutive indices. */
typedef struct {
  hot_u64 q; /* the cached block's counter idx >> 2; ~0: none (idx >> 2 < 2^62) */
  hot_philox_out w;
} draw_cache;

static uint32_t draw_cached(const nvfp4_stream *st, int64_t r, int64_t c, draw_cache *dc) {
  const hot_u64 idx = (hot_u64)(r * st->idx_row + c * st->idx_col), q = idx >> 2;
  if (q != dc->q) {
    dc->w = hot_philox4x32_10((hot_u32)(q & 0xffffffffu), (hot_u32)(q >> 32), st->tag, st->step,
                              (hot_u32)(st->seed & 0xffffffffu), (hot_u32)(st->seed >> 32));
    dc->q = q;
  }
  return dc->w.v[idx & 3u];
}

/* amax of the tensor; -4 for a non-finite value. */
static int tensor_amax(const float *v, int64_t n, float *amax) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) return ST_ENONFINITE;
    if (fabsf(v[i]) > m) m = fabsf(v[i]);
  }
  *amax = m;
  return ST_OK;
}

/* One block of row r: elements [c0, c0 + 16) of v (those >= k are zeros). */
static void nvfp4_block(const float *row, int64_t r, int64_t c0, int64_t k, float s_t, int sr,
                        const nvfp4_stream *st, uint8_t *crow, uint8_t *scode) {
  float amax = 0.0f;
  for (int64_t c = c0; c < c0 + NVFP4_BLOCK && c < k; ++c) amax = fmaxf(amax, fabsf(row[c]));
  float d = HOT_DIV(HOT_DIV(amax, s_t), 6.0f);
  unsigned sc = nvfp4_e4m3_encode(d, NVFP4_ROUND_UP, 0);
  float sb = nvfp4_e4m3_decode(sc);
  *scode = (uint8_t)sc;
  draw_cache dc = {~(hot_u64)0, {{0, 0, 0, 0}}};
  for (int64_t c = c0; c < c0 + NVFP4_BLOCK; ++c) {
    unsigned code = 0;
    if (c < k && sb > 0.0f) {
      float u = HOT_DIV(HOT_DIV(row[c], s_t), sb);
      u = fmaxf(-6.0f, fminf(6.0f, u));
      code = sr ? nvfp4_e2m1_sr(u, draw_cached(st, r, c, &dc)) : nvfp4_e2m1_rtn(u);
    }
    crow[c >> 1] = (uint8_t)(crow[c >> 1] | ((c & 1) ? code << 4 : code));
  }
}

float nvfp4_tensor_scale(float amax) {
  return amax > 0.0f ? HOT_DIV(amax, NVFP4_TENSOR_DIV) : 0.0f;
}

void nvfp4_quantize_rows(const float *v, int64_t r0, int64_t r1, int64_t k, float s_t, int sr,
                         const nvfp4_stream *st, uint8_t *codes, uint8_t *scales) {
  const int64_t kp = round_up(k, NVFP4_BLOCK), nb = kp / NVFP4_BLOCK;
  memset(codes + r0 * (kp / 2), 0, (size_t)((r1 - r0) * (kp / 2)));
  memset(scales + r0 * nb, 0, (size_t)((r1 - r0) * nb));
  if (!(s_t > 0.0f)) return; /* all codes and scales 0 */
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t b = 0; b < nb; ++b)
      nvfp4_block(v + r * k, r, b * NVFP4_BLOCK, k, s_t, sr, st, codes + r * (kp / 2),
                  scales + r * nb + b);
}

int nvfp4_quantize(const float *v, int64_t rows, int64_t k, int sr, const nvfp4_stream *st,
                   uint8_t *codes, uint8_t *scales, float *s_t) {
  if (!v || !codes || !scales || !s_t || rows <= 0 || k <= 0 || (sr && !st)) return ST_EARG;
  float amax;
  int rc = tensor_amax(v, rows * k, &amax);
  if (rc) return rc;
  *s_t = nvfp4_tensor_scale(amax);
  nvfp4_quantize_rows(v, 0, rows, k, *s_t, sr, st, codes, scales);
  return ST_OK;
}

/* ---- MXFP8 quantiser ------------------------------------------------------------------------ */

/* The smallest e with amax <= 448 * 2^e (exact, from the binary exponent), clamped to the E8M0
 * range [-127, 127]; 0 for amax = 0 (the block's codes are then 0 whatever e). */
static int mx_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  int ex;
  float fr = frexpf(amax, &ex); /* 448 = 0.875 * 2^9 */
  int e = ex - 9 + (fr > 0.875f ? 1 : 0);
  return e < -127 ? -127 : (e > 127 ? 127 : e);
}

int mxfp8_quantize(const float *v, int64_t rows, int64_t k, int sr, const nvfp4_stream *st,
                   uint8_t *codes, uint8_t *scales) {
  if (!v || !codes || !scales || rows <= 0 || k <= 0 || (sr && !st)) return ST_EARG;
  float amax_t;
  int rc = tensor_amax(v, rows * k, &amax_t);
  if (rc) return rc;
  mxfp8_quantize_rows(v, 0, rows, k, sr, st, codes, scales);
  return ST_OK;
}

void mxfp8_quantize_rows(const float *v, int64_t r0, int64_t r1, int64_t k, int sr,
                         const nvfp4_stream *st, uint8_t *codes, uint8_t *scales) {
  const int64_t kp = round_up(k, MXFP8_BLOCK), nb = kp / MXFP8_BLOCK;
  memset(codes + r0 * kp, 0, (size_t)((r1 - r0) * kp));
  for (int64_t r = r0; r < r1; ++r) {
    const float *row = v + r * k;
    for (int64_t b = 0; b < nb; ++b) {
      float amax = 0.0f;
      for (int64_t c = b * MXFP8_BLOCK; c < (b + 1) * MXFP8_BLOCK && c < k; ++c)
        amax = fmaxf(amax, fabsf(row[c]));
      int e = mx_exponent(amax);
      float X = ldexpf(1.0f, e);
      scales[r * nb + b] = (uint8_t)(e + 127);
      for (int64_t c = b * MXFP8_BLOCK; c < (b + 1) * MXFP8_BLOCK && c < k; ++c) {
        float u = HOT_DIV(row[c], X);
        codes[r * kp + c] = (uint8_t)(sr ? nvfp4_e4m3_encode(u, NVFP4_ROUND_SR, draw(st, r, c))
                                         : nvfp4_e4m3_encode(u, NVFP4_ROUND_RTN, 0));
      }
    }
  }
}

/* ---- GEMMs ---------------------------------------------------------------------------------- */

/* Doubled E2M1 value of a code: an integer in {0, +-1, +-2, +-3, +-4, +-6, +-8, +-12}. */
static int e2m1_x2(unsigned code) {
  static const int mag[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  return (code & 8u) ? -mag[code & 7u] : mag[code & 7u];
}

int nvfp4_gemm(const uint8_t *a, const uint8_t *sa, float s_ta, const uint8_t *b,
               const uint8_t *sb, float s_tb, int64_t M, int64_t N, int64_t k_pad, int div,
               float *out) {
  if (!a || !sa || !b || !sb || !out || M <= 0 || N <= 0 || k_pad <= 0 ||
      k_pad % NVFP4_BLOCK || div < 1 || (div & (div - 1)))
    return ST_EARG;
  const int64_t nb = k_pad / NVFP4_BLOCK, rb = k_pad / 2;
  const float c = HOT_DIV(HOT_MUL(s_ta, s_tb), (float)(4 * div));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t j = 0; j < nb; ++j) {
        int S = 0; /* |S| <= 16 * 144 */
        for (int64_t t = j * NVFP4_BLOCK; t < (j + 1) * NVFP4_BLOCK; ++t) {
          unsigned ca = ((unsigned)a[m * rb + (t >> 1)] >> ((t & 1) * 4)) & 15u;
          unsigned cb = ((unsigned)b[n * rb + (t >> 1)] >> ((t & 1) * 4)) & 15u;
          S += e2m1_x2(ca) * e2m1_x2(cb);
        }
        float ss = HOT_MUL(nvfp4_e4m3_decode(sa[m * nb + j]), nvfp4_e4m3_decode(sb[n * nb + j]));
        acc = HOT_ADD(acc, HOT_MUL(HOT_I2F(S), ss)); /* the product is exact (section 20.5) */
      }
      out[m * N + n] = HOT_MUL(acc, c);
    }
  return ST_OK;
}

/* E4M3 value in units of 2^-9: an integer of magnitude <= 448 * 512 (0 for the NaN codes, which
 * the quantisers never write). */
static int64_t e4m3_units(unsigned code) {
  float v = nvfp4_e4m3_decode(code);
  return isnan(v) ? 0 : (int64_t)ldexpf(v, 9);
}

int mxfp8_gemm(const uint8_t *a, const uint8_t *sa, const uint8_t *b, const uint8_t *sb,
               int64_t M, int64_t N, int64_t k_pad, int div, float *out) {
  if (!a || !sa || !b || !sb || !out || M <= 0 || N <= 0 || k_pad <= 0 ||
      k_pad % MXFP8_BLOCK || div < 1 || (div & (div - 1)))
    return ST_EARG;
  const int64_t nb = k_pad / MXFP8_BLOCK;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t j = 0; j < nb; ++j) {
        int64_t S = 0; /* |S| <= 32 * 229376^2 < 2^41 */
        for (int64_t t = j * MXFP8_BLOCK; t < (j + 1) * MXFP8_BLOCK; ++t)
          S += e4m3_units(a[m * k_pad + t]) * e4m3_units(b[n * k_pad + t]);
        int e = (int)sa[m * nb + j] + (int)sb[n * nb + j] - 254 - 18;
        acc = HOT_ADD(acc, ldexpf((float)S, e));
      }
      out[m * N + n] = HOT_DIV(acc, (float)div);
    }
  return ST_OK;
}

/* ---- one layer ------------------------------------------------------------------------------ */

static int layer_ok(const nvfp4_layer *ly) {
  if (!ly || ly->B <= 0 || ly->L <= 0 || ly->O <= 0 || ly->I <= 0 || !ly->rows) return 0;
  if (ly->p < 1 || ly->p > 1024 || (ly->p & (ly->p - 1)) || ly->r < 1 || ly->r > ly->p) return 0;
  if (ly->layer_id >= (1u << 27) || (ly->hla_fmt != NVFP4_HLA_NVFP4 && ly->hla_fmt != NVFP4_HLA_MXFP8))
    return 0;
  for (int j = 0; j < ly->r; ++j)
    if (ly->rows[j] < 0 || ly->rows[j] >= ly->p) return 0;
  return 1;
}

/* Token blocks: segments of seg_len positions (sample: B of round_up(L, p); flat: one of
 * round_up(T, p)); position j of segment s is token s * L + j (sample) or j (flat) when real. */
static int64_t seg_count(const nvfp4_layer *ly) { return ly->flat ? 1 : ly->B; }
static int64_t seg_len(const nvfp4_layer *ly) {
  return round_up(ly->flat ? ly->B * ly->L : ly->L, ly->p);
}

int64_t nvfp4_layer_k(const nvfp4_layer *ly) {
  if (!layer_ok(ly)) return 0;
  return seg_count(ly) * (seg_len(ly) / ly->p) * ly->r;
}

int64_t nvfp4_layer_blocks(const nvfp4_layer *ly) {
  return layer_ok(ly) ? seg_count(ly) * (seg_len(ly) / ly->p) : 0;
}

int nvfp4_hla_project(const nvfp4_layer *ly, const float *src, int64_t cols, float *out) {
  if (!layer_ok(ly) || !src || !out || cols <= 0) return ST_EARG;
  return nvfp4_hla_project_blocks(ly, src, cols, 0, nvfp4_layer_blocks(ly), out);
}

int nvfp4_hla_project_blocks(const nvfp4_layer *ly, const float *src, int64_t cols, int64_t b0,
                             int64_t b1, float *out) {
  if (!layer_ok(ly) || !src || !out || cols <= 0) return ST_EARG;
  const int p = ly->p;
  const int64_t real = ly->flat ? ly->B * ly->L : ly->L, per = seg_len(ly) / p;
  float *buf = malloc((size_t)p * sizeof(float));
  if (!buf) return ST_ENOMEM;
  for (int64_t blk = b0; blk < b1; ++blk) {
    const int64_t s = blk / per, q = blk % per;
    for (int64_t c = 0; c < cols; ++c) {
      for (int j = 0; j < p; ++j) {
        int64_t pos = q * p + j;
        buf[j] = pos < real ? src[((ly->flat ? 0 : s * ly->L) + pos) * cols + c] : 0.0f;
        if (!isfinite(buf[j])) {
          free(buf);
          return ST_ENONFINITE;
        }
      }
      hot_fwht(buf, p);
      for (int j = 0; j < ly->r; ++j) out[(blk * ly->r + j) * cols + c] = buf[ly->rows[j]];
    }
  }
  free(buf);
  return ST_OK;
}

/* The NVFP4 codes of a rows x k tensor in freshly allocated buffers. */
typedef struct {
  uint8_t *codes, *scales;
  float s_t;
} nvfp4_tensor;

static void tensor_free(nvfp4_tensor *t) {
  free(t->codes);
  free(t->scales);
  memset(t, 0, sizeof *t);
}

static int tensor_quant(const float *v, int64_t rows, int64_t k, int mx, int sr,
                        const nvfp4_stream *st, nvfp4_tensor *t) {
  const int64_t kp = round_up(k, mx ? MXFP8_BLOCK : NVFP4_BLOCK);
  memset(t, 0, sizeof *t);
  t->codes = malloc((size_t)(rows * (mx ? kp : kp / 2)));
  t->scales = malloc((size_t)(rows * kp / (mx ? MXFP8_BLOCK : NVFP4_BLOCK)));
  if (!t->codes || !t->scales) {
    tensor_free(t);
    return ST_ENOMEM;
  }
  int rc = mx ? mxfp8_quantize(v, rows, k, sr, st, t->codes, t->scales)
              : nvfp4_quantize(v, rows, k, sr, st, t->codes, t->scales, &t->s_t);
  if (rc) tensor_free(t);
  return rc;
}

/* H_16 along each row of the rows x o_pad tensor m (zeros past O already in place); -4 when a
 * value is not finite after the transform. */
static int fwht16_rows(float *m, int64_t rows, int64_t o_pad) {
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t b = 0; b < o_pad; b += 16) hot_fwht(m + t * o_pad + b, 16);
  for (int64_t n = 0; n < rows * o_pad; ++n)
    if (!isfinite(m[n])) return ST_ENONFINITE;
  return ST_OK;
}

int64_t nvfp4_layer_o_pad(const nvfp4_layer *ly) { return layer_ok(ly) ? round_up(ly->O, 16) : 0; }

int nvfp4_hq_quant_g(const nvfp4_layer *ly, const float *g_y, int sr, uint64_t seed,
                     uint32_t step, uint8_t *codes, uint8_t *scales, float *s_t) {
  if (!layer_ok(ly) || !g_y || !codes || !scales || !s_t) return ST_EARG;
  const int64_t T = ly->B * ly->L, O = ly->O, o_pad = round_up(O, 16);
  float *gt = calloc((size_t)(T * o_pad), sizeof(float));
  if (!gt) return ST_ENOMEM;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < O; ++o) gt[t * o_pad + o] = g_y[t * O + o];
  int rc = fwht16_rows(gt, T, o_pad);
  const nvfp4_stream st = {seed, ly->layer_id * 16u + HOT_TENSOR_HQ_G, step, o_pad, 1};
  if (!rc) rc = nvfp4_quantize(gt, T, o_pad, sr, sr ? &st : NULL, codes, scales, s_t);
  free(gt);
  return rc;
}

int nvfp4_hq_quant_w(const nvfp4_layer *ly, const float *w, uint8_t *codes, uint8_t *scales,
                     float *s_t) {
  if (!layer_ok(ly) || !w || !codes || !scales || !s_t) return ST_EARG;
  const int64_t O = ly->O, I = ly->I, o_pad = round_up(O, 16);
  float *wt = calloc((size_t)(I * o_pad), sizeof(float));
  if (!wt) return ST_ENOMEM;
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) wt[i * o_pad + o] = w[o * I + i];
  int rc = fwht16_rows(wt, I, o_pad);
  if (!rc) rc = nvfp4_quantize(wt, I, o_pad, 0, NULL, codes, scales, s_t);
  free(wt);
  return rc;
}

int nvfp4_hq_gx(const nvfp4_layer *ly, const float *g_y, const float *w, uint64_t seed,
                uint32_t step, float *g_x) {
  if (!layer_ok(ly) || !g_y || !w || !g_x) return ST_EARG;
  const int64_t T = ly->B * ly->L, o_pad = round_up(ly->O, 16);
  uint8_t *cg = malloc((size_t)(T * o_pad / 2)), *sg = malloc((size_t)(T * o_pad / 16));
  uint8_t *cw = malloc((size_t)(ly->I * o_pad / 2)), *sw = malloc((size_t)(ly->I * o_pad / 16));
  float tg = 0.0f, tw = 0.0f;
  int rc = cg && sg && cw && sw ? ST_OK : ST_ENOMEM;
  if (!rc) rc = nvfp4_hq_quant_g(ly, g_y, 1, seed, step, cg, sg, &tg);
  if (!rc) rc = nvfp4_hq_quant_w(ly, w, cw, sw, &tw);
  if (!rc) rc = nvfp4_gemm(cg, sg, tg, cw, sw, tw, T, ly->I, o_pad, 16, g_x);
  free(cg);
  free(sg);
  free(cw);
  free(sw);
  return rc;
}

/* src (K x cols) transposed into dst (cols x K). */
static void transpose(const float *src, int64_t K, int64_t cols, float *dst) {
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < cols; ++c) dst[c * K + k] = src[k * cols + c];
}

/* x^ or g^ of the layer, transposed (cols rows of K). */
static int hla_operand(const nvfp4_layer *ly, const float *src, int64_t cols, int64_t K,
                       float **out) {
  float *m = malloc((size_t)(K * cols) * sizeof(float));
  *out = malloc((size_t)(K * cols) * sizeof(float));
  int rc = m && *out ? nvfp4_hla_project(ly, src, cols, m) : ST_ENOMEM;
  if (!rc) transpose(m, K, cols, *out);
  free(m);
  return rc;
}

int nvfp4_hla_quant(const nvfp4_layer *ly, const float *src, int64_t cols, int is_g, int sr,
                    uint64_t seed, uint32_t step, uint8_t *codes, uint8_t *scales, float *s_t) {
  if (!layer_ok(ly) || !src || cols <= 0 || !codes || !scales || (!s_t && ly->hla_fmt != NVFP4_HLA_MXFP8))
    return ST_EARG;
  const int64_t K = nvfp4_layer_k(ly);
  float *h = NULL;
  int rc = hla_operand(ly, src, cols, K, &h);
  /* g^ is stored cols x K; its draws are those of the K x cols math tensor: idx = kk * cols + o */
  const nvfp4_stream st = {seed, ly->layer_id * 16u + (is_g ? HOT_TENSOR_HLA_G : 0u), step, 1, cols};
  if (!rc)
    rc = ly->hla_fmt == NVFP4_HLA_MXFP8
             ? mxfp8_quantize(h, cols, K, sr, sr ? &st : NULL, codes, scales)
             : nvfp4_quantize(h, cols, K, sr, sr ? &st : NULL, codes, scales, s_t);
  free(h);
  return rc;
}

int nvfp4_hla_gw(const nvfp4_layer *ly, const float *g_y, const float *x, uint64_t seed,
                 uint32_t step, float *g_w) {
  if (!layer_ok(ly) || !g_y || !x || !g_w) return ST_EARG;
  const int64_t K = nvfp4_layer_k(ly);
  const int mx = ly->hla_fmt == NVFP4_HLA_MXFP8;
  float *gh = NULL, *xh = NULL;
  nvfp4_tensor qg = {0}, qx = {0};
  int rc = hla_operand(ly, g_y, ly->O, K, &gh);
  if (!rc) rc = hla_operand(ly, x, ly->I, K, &xh);
  /* g^ is stored O x K; its draws are those of the K x O math tensor: idx = kk * O + o. */
  const nvfp4_stream st = {seed, ly->layer_id * 16u + HOT_TENSOR_HLA_G, step, 1, ly->O};
  if (!rc) rc = tensor_quant(gh, ly->O, K, mx, 1, &st, &qg);
  if (!rc) rc = tensor_quant(xh, ly->I, K, mx, 0, NULL, &qx);
  const int64_t kp = round_up(K, mx ? MXFP8_BLOCK : NVFP4_BLOCK);
  if (!rc)
    rc = mx ? mxfp8_gemm(qg.codes, qg.scales, qx.codes, qx.scales, ly->O, ly->I, kp, ly->p, g_w)
            : nvfp4_gemm(qg.codes, qg.scales, qg.s_t, qx.codes, qx.scales, qx.s_t, ly->O, ly->I,
                         kp, ly->p, g_w);
  free(gh);
  free(xh);
  tensor_free(&qg);
  tensor_free(&qx);
  return rc;
}

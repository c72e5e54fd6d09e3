/* gemm_ref.c — CPU twin of templates/gemm_int.cu (kernels HOT_K_GEMM_GX and HOT_K_GEMM_GW):
 * integer GEMMs of K-contiguous operands with int32 accumulation that wraps modulo 2^32 like the
 * tensor cores' (exact below 2^31, and any summation order gives the same bits either way) and
 * the fused dequantization epilogues of CONTRACT.md 3.5 and 4.6. */
#include <limits.h>
#include <stdlib.h>

#include "hot_math.cuh"
#include "ref.h"
#include "ref_steps.h"

/* Unpacks `rows` stored rows of k_pad codes (int8 or packed nibbles) into int8. */
static void unpack_rows(const void *src, int64_t rows, int64_t k_pad, int packed, int8_t *dst) {
  const unsigned char *s = src;
  int64_t rb = packed ? k_pad / 2 : k_pad;
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t k = 0; k < k_pad; ++k) dst[a * k_pad + k] = (int8_t)ref_code_at(s + a * rb, packed, k);
}

/* The int32 value of u (two's complement, modulo 2^32), without implementation-defined casts. */
static int32_t wrap_i32(uint32_t u) {
  return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

/* c[m][n] = sum_k a[m][k] * b[n][k] modulo 2^32 (int32 two's complement, CONTRACT 13) over a
 * 4 x 4 register block; rows past ma/nb are skipped. Each product fits int32 (|a|, |b| <= 128);
 * the sums run in uint32, whose wrap-around is defined, so every order gives the same bits. */
static void dot_block(const int8_t *a, int64_t lda, int ma, const int8_t *b, int64_t ldb, int nb,
                      int64_t k_pad, int32_t acc[4][4]) {
  for (int m = 0; m < 4; ++m)
    for (int n = 0; n < 4; ++n) acc[m][n] = 0;
  if (ma == 4 && nb == 4) {
    const int8_t *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
    const int8_t *b0 = b, *b1 = b + ldb, *b2 = b + 2 * ldb, *b3 = b + 3 * ldb;
    uint32_t c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
    uint32_t c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
#define P(x, y) ((uint32_t)((int32_t)(x) * (int32_t)(y)))
    for (int64_t k = 0; k < k_pad; ++k) {
      int32_t x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
      int32_t y0 = b0[k], y1 = b1[k], y2 = b2[k], y3 = b3[k];
      c00 += P(x0, y0); c01 += P(x0, y1); c02 += P(x0, y2); c03 += P(x0, y3);
      c10 += P(x1, y0); c11 += P(x1, y1); c12 += P(x1, y2); c13 += P(x1, y3);
      c20 += P(x2, y0); c21 += P(x2, y1); c22 += P(x2, y2); c23 += P(x2, y3);
      c30 += P(x3, y0); c31 += P(x3, y1); c32 += P(x3, y2); c33 += P(x3, y3);
    }
    acc[0][0] = wrap_i32(c00), acc[0][1] = wrap_i32(c01);
    acc[0][2] = wrap_i32(c02), acc[0][3] = wrap_i32(c03);
    acc[1][0] = wrap_i32(c10), acc[1][1] = wrap_i32(c11);
    acc[1][2] = wrap_i32(c12), acc[1][3] = wrap_i32(c13);
    acc[2][0] = wrap_i32(c20), acc[2][1] = wrap_i32(c21);
    acc[2][2] = wrap_i32(c22), acc[2][3] = wrap_i32(c23);
    acc[3][0] = wrap_i32(c30), acc[3][1] = wrap_i32(c31);
    acc[3][2] = wrap_i32(c32), acc[3][3] = wrap_i32(c33);
    return;
  }
  for (int m = 0; m < ma; ++m)
    for (int n = 0; n < nb; ++n) {
      uint32_t s = 0;
      for (int64_t k = 0; k < k_pad; ++k) s += P(a[m * lda + k], b[n * ldb + k]);
      acc[m][n] = wrap_i32(s);
    }
#undef P
}

/* out[m, n] for an M x N product of M x k_pad and N x k_pad int8 operands whose K is cut into
 * segs segments of k_pad / segs codes: segment j gives the int32 sum acc_j over its codes and
 * v_j = (float)acc_j * f_j with f_j = row_scale[m] (row_scale non-NULL; one segment) or
 * seg_scale[j]; out = v_0 (one segment), else ((v_0 + v_1) + v_2) + ... in segment order
 * (CONTRACT.md 14), each step one fp32 rounding. */
static void gemm_epilogue(const int8_t *a, int64_t M, const int8_t *b, int64_t N, int64_t k_pad,
                          int64_t segs, const float *row_scale, const float *seg_scale,
                          float *out) {
  int32_t acc[4][4];
  const int64_t seg_k = k_pad / segs;
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    int ma = (int)(M - m0 < 4 ? M - m0 : 4);
    for (int64_t n0 = 0; n0 < N; n0 += 4) {
      int nb = (int)(N - n0 < 4 ? N - n0 : 4);
      for (int64_t j = 0; j < segs; ++j) {
        dot_block(a + m0 * k_pad + j * seg_k, k_pad, ma, b + n0 * k_pad + j * seg_k, k_pad, nb,
                  seg_k, acc);
        for (int m = 0; m < ma; ++m) {
          float sc = row_scale ? row_scale[m0 + m] : seg_scale[j];
          for (int n = 0; n < nb; ++n) {
            float v = HOT_MUL(HOT_I2F(acc[m][n]), sc);
            float *o = &out[(m0 + m) * N + n0 + n];
            *o = j == 0 ? v : HOT_ADD(*o, v);
          }
        }
      }
    }
  }
}

int ref_gemm_gx(const hot_layer_plan *pl, const void *q_g, const float *s_g, const void *q_w,
                    float s_w, float *g_x) {
  if (!pl || !q_g || !s_g || !q_w || !g_x) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (!pl->hq.enabled) return HOT_REF_ESHAPE;
  int64_t T = pl->T, I = pl->I, kp = pl->hq.gemm.k_pad;
  int packed = pl->hq.codes == HOT_CODES_S4_PACKED;
  int8_t *a = malloc((size_t)(T * kp)), *b = malloc((size_t)(I * kp));
  float *rs = malloc((size_t)T * sizeof *rs);
  if (!a || !b || !rs) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  unpack_rows(q_g, T, kp, packed, a);
  unpack_rows(q_w, I, kp, packed, b);
  float c_w = HOT_DIV(s_w, HOT_I2F(pl->hq.block)); /* exact: b is a power of two */
  for (int64_t t = 0; t < T; ++t) rs[t] = HOT_MUL(s_g[t], c_w);
  gemm_epilogue(a, T, b, I, kp, 1, rs, NULL, g_x);
done:
  free(a);
  free(b);
  free(rs);
  return rc;
}

int ref_gemm_gw(const hot_layer_plan *pl, const int8_t *q_g, const float *s_g,
                    const int8_t *q_x, const float *s_x, float *g_w) {
  if (!pl || !q_g || !s_g || !q_x || !s_x || !g_w) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (!pl->hla.enabled) return HOT_REF_ESHAPE;
  const int64_t G = pl->hla.gemm.segmented ? pl->hla.groups : 1;
  float *c = malloc((size_t)G * sizeof *c);
  if (!c) return HOT_REF_ENOMEM;
  for (int64_t j = 0; j < G; ++j) /* c_j = (s_g^[j] * s_x^[j]) / p, product first */
    c[j] = HOT_DIV(HOT_MUL(s_g[j], s_x[j]), HOT_I2F(pl->hla.block));
  gemm_epilogue(q_g, pl->O, q_x, pl->I, pl->hla.gemm.k_pad, G, NULL, c, g_w);
  free(c);
  return HOT_REF_OK;
}

/* The gemm family's steps (ref_steps.h; gemm_tma's too): gemm_gx from q_g', s_g, q_w', s_w;
 * gemm_gw from q_g^, s_g^ and q_x^ (unpacked, or the saved codes in place, or without ABC x
 * projected now: abc_x's twin runs in the backward, the forward kept x). */
int ref_step_gemm(hot_ref_call *c, const hot_step *s) {
  const hot_layer_plan *pl = c->pl;
  if (pl->fmt == HOT_FMT_NVFP4) /* CONTRACT.md 20 */
    return ref_nvfp4_gemm(c, s->role == HOT_K_GEMM_GX);
  if (s->role == HOT_K_GEMM_GX) {
    const float *sw = c->buf[HOT_LB_S_W];
    if (!sw) return HOT_REF_EARG;
    c->wrote |= 1u << HOT_LB_GX;
    return ref_gemm_gx(pl, c->buf[HOT_LB_Q_G], c->buf[HOT_LB_S_G], c->buf[HOT_LB_Q_W], *sw, c->g_x);
  }
  if (s->role != HOT_K_GEMM_GW) return HOT_REF_EARG;
  const int8_t *qx = c->buf[HOT_LB_Q_HX] ? c->buf[HOT_LB_Q_HX] : c->saved->q_x;
  const float *sx = c->saved->s_x;
  if (!c->saved->q_x) {
    int8_t *q = ref_call_alloc(c, HOT_LB_Q_HX, ref_hla_x_bytes(pl));
    float *so = ref_call_alloc(c, HOT_LB_S_X, pl->hla.groups * (int64_t)sizeof(float));
    if (!q || !so) return HOT_REF_ENOMEM;
    int rc = ref_hla_quant_x(pl, c->saved->x, HOT_DT_F32, q, so);
    if (rc) return rc;
    qx = q;
    sx = so;
  } else if (!sx) {
    return HOT_REF_EARG;
  }
  c->wrote |= 1u << HOT_LB_GW;
  return ref_gemm_gw(pl, c->buf[HOT_LB_Q_HG], c->buf[HOT_LB_S_HG], qx, sx, c->g_w);
}

/* hadamard_quant_ref.c — CPU twin of templates/hadamard_quant.cu (kernels HOT_K_HQ_G and
 * HOT_K_HQ_W): the block Hadamard transform of CONTRACT.md 3 along O, then the quantizers of 6. */
#include <math.h>
#include <stdlib.h>

#include "hot_math.cuh"
#include "ref.h"
#include "ref_steps.h"

void ref_fwht_rows(float *m, int n, int64_t cols) {
  for (int h = 1; h < n; h <<= 1) {
    for (int j = 0; j < n; ++j) {
      if (j & h) continue;
      float *a = m + (int64_t)j * cols, *b = m + (int64_t)(j + h) * cols;
      for (int64_t c = 0; c < cols; ++c) {
        float x = a[c], y = b[c];
        a[c] = HOT_ADD(x, y);
        b[c] = HOT_SUB(x, y);
      }
    }
  }
}

static int hq_ready(const hot_layer_plan *pl) {
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  return pl->hq.enabled ? HOT_REF_OK : HOT_REF_ESHAPE;
}

static int all_finite(const float *v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!isfinite(v[i])) return 0;
  return 1;
}

int ref_hq_transform_g(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, float *g_t) {
  if (!pl || !g_y || !g_t || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = hq_ready(pl);
  if (rc) return rc;
  int b = pl->hq.block;
  int64_t O = pl->O, op = pl->hq.o_pad;
  for (int64_t t = 0; t < pl->T; ++t) {
    float *row = g_t + t * op;
    for (int64_t o = 0; o < op; ++o) row[o] = o < O ? ref_load(g_y, dt, t * O + o) : 0.0f;
    for (int64_t o = 0; o < op; o += b) hot_fwht(row + o, b);
    if (!all_finite(row, op)) return HOT_REF_ENONFINITE;
  }
  return HOT_REF_OK;
}

int ref_hq_transform_w(const hot_layer_plan *pl, const void *w, hot_dtype dt, float *w_t) {
  if (!pl || !w || !w_t || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = hq_ready(pl);
  if (rc) return rc;
  int b = pl->hq.block;
  int64_t O = pl->O, I = pl->I, op = pl->hq.o_pad;
  for (int64_t o = 0; o < op; ++o)
    for (int64_t i = 0; i < I; ++i) w_t[o * I + i] = o < O ? ref_load(w, dt, o * I + i) : 0.0f;
  for (int64_t o = 0; o < op; o += b) ref_fwht_rows(w_t + o * I, b, I);
  return all_finite(w_t, op * I) ? HOT_REF_OK : HOT_REF_ENONFINITE;
}

int ref_hq_quant_g(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, hot_gran gran,
                       uint64_t seed, uint32_t step, void *q_g, float *s_g) {
  if (!pl || !g_y || !q_g || !s_g ||
      (gran != HOT_GRAN_TENSOR && gran != HOT_GRAN_ROW && gran != HOT_GRAN_SAMPLE))
    return HOT_REF_EARG;
  int rc = hq_ready(pl);
  if (rc) return rc;
  int64_t T = pl->T, op = pl->hq.o_pad;
  float *g_t = malloc((size_t)(T * op) * sizeof *g_t);
  int8_t *codes = malloc((size_t)(T * op));
  if (!g_t || !codes) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  rc = ref_hq_transform_g(pl, g_y, dt, g_t);
  if (rc) goto done;
  uint32_t tag = (uint32_t)pl->layer_id * 16u + HOT_TENSOR_HQ_G;
  /* one scale per group of rows: all T (tensor), one (row), the L of a sample (sample) */
  int64_t group = gran == HOT_GRAN_ROW ? 1 : gran == HOT_GRAN_SAMPLE ? pl->L : T;
  rc = ref_quantize_groups(g_t, T, op, group, &pl->hq.g, seed, tag, step, codes, s_g);
  if (rc) goto done;
  for (int64_t t = T - 1; group > 1 && t >= 0; --t) s_g[t] = s_g[t / group]; /* expand to T */
  ref_store_codes(codes, T, op, 0, pl->hq.gemm.k_pad, pl->hq.codes == HOT_CODES_S4_PACKED, q_g);
done:
  free(g_t);
  free(codes);
  return rc;
}

int ref_hq_quant_w(const hot_layer_plan *pl, const void *w, hot_dtype dt, void *q_w,
                       float *s_w) {
  if (!pl || !w || !q_w || !s_w) return HOT_REF_EARG;
  int rc = hq_ready(pl);
  if (rc) return rc;
  int64_t I = pl->I, op = pl->hq.o_pad;
  float *w_t = malloc((size_t)(op * I) * sizeof *w_t);
  int8_t *codes = malloc((size_t)(op * I));
  if (!w_t || !codes) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  rc = ref_hq_transform_w(pl, w, dt, w_t);
  if (rc) goto done;
  hot_quant qw = pl->hq.w;
  qw.round = HOT_ROUND_RTN; /* w' is always RTN: CONTRACT.md defines no random stream for it */
  rc = ref_quantize(w_t, op, I, &qw, HOT_GRAN_TENSOR, 0, 0, 0, codes, s_w);
  if (rc) goto done;
  ref_store_codes(codes, op, I, 1, pl->hq.gemm.k_pad, pl->hq.codes == HOT_CODES_S4_PACKED, q_w);
done:
  free(w_t);
  free(codes);
  return rc;
}

/* The hq family's steps (ref_steps.h): hq_g, q_g' and s_g (T); hq_w, q_w' and s_w, with its SAWB
 * scale when the rule is SAWB (the sawb_w steps are this twin's group_scale). */
int ref_step_hq(hot_ref_call *c, const hot_step *s) {
  const hot_layer_plan *pl = c->pl;
  if (pl->fmt == HOT_FMT_NVFP4) /* CONTRACT.md 20 */
    return ref_nvfp4_hq(c, s->role == HOT_K_HQ_G);
  if (s->role == HOT_K_HQ_G) {
    void *q = ref_call_alloc(c, HOT_LB_Q_G, ref_hq_g_bytes(pl));
    float *sg = ref_call_alloc(c, HOT_LB_S_G, pl->T * (int64_t)sizeof(float));
    if (!q || !sg) return HOT_REF_ENOMEM;
    return ref_hq_quant_g(pl, c->g_y, c->dt, c->gran, c->seed, c->step, q, sg);
  }
  if (s->role != HOT_K_HQ_W) return HOT_REF_EARG;
  void *q = ref_call_alloc(c, HOT_LB_Q_W, ref_hq_w_bytes(pl));
  float *sw = ref_call_alloc(c, HOT_LB_S_W, (int64_t)sizeof(float));
  if (!q || !sw) return HOT_REF_ENOMEM;
  return ref_hq_quant_w(pl, c->w, c->dt, q, sw);
}

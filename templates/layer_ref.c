/* layer_ref.c — one HOT layer on the CPU, built from the twins: the forward save (ABC), the
 * backward (g_x by HQ, g_w by HLA, g_b exact) and the LQS calibration. This is what the
 * runtime's CPU backend runs and what the GPU layer is compared with. */
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "ref.h"

/* A freshly malloc'ed fp32 copy of n elements of a dtype-tagged array, or NULL. */
static float *load_f32(const void *src, hot_dtype dt, int64_t n) {
  float *v = malloc((size_t)n * sizeof *v);
  if (v)
    for (int64_t i = 0; i < n; ++i) v[i] = ref_load(src, dt, i);
  return v;
}

void ref_saved_free(hot_ref_saved *s) {
  if (!s) return;
  free(s->q_x);
  free(s->s_x);
  free(s->x);
  memset(s, 0, sizeof *s);
}

int ref_layer_save(const hot_layer_plan *pl, const void *x, hot_dtype dt, hot_ref_saved *out) {
  if (!out) return HOT_REF_EARG;
  memset(out, 0, sizeof *out);
  if (!pl || !x || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (pl->hla.enabled && pl->abc.enabled) {
    /* HOT_K_ABC_X writes the unpadded saved layout: the GEMM layout's codes, packed */
    int8_t *qx = malloc((size_t)ref_hla_x_bytes(pl));
    out->q_x = malloc((size_t)(pl->I * pl->hla.k));
    out->s_x = malloc((size_t)pl->hla.groups * sizeof *out->s_x);
    if (!qx || !out->q_x || !out->s_x) {
      free(qx);
      ref_saved_free(out);
      return HOT_REF_ENOMEM;
    }
    rc = ref_hla_quant_x(pl, x, dt, qx, out->s_x);
    if (!rc) rc = ref_abc_pack(pl, qx, out->q_x);
    free(qx);
    out->bytes = plan_buffer_bytes(pl, HOT_BUF_SAVED);
  } else {
    out->x = load_f32(x, dt, pl->T * pl->I);
    if (!out->x) return HOT_REF_ENOMEM;
    for (int64_t i = 0; i < pl->T * pl->I && !rc; ++i)
      if (!isfinite(out->x[i])) rc = HOT_REF_ENONFINITE;
    out->bytes = plan_buffer_bytes(pl, HOT_BUF_SAVED);
  }
  if (rc) ref_saved_free(out);
  return rc;
}

/* g_x by HQ: quantize g' and w', integer GEMM with the HQ epilogue. */
static int backward_gx(const hot_layer_plan *pl, const void *g_y, const void *w, hot_dtype dt,
                       hot_gran gran, uint64_t seed, uint32_t step, float *g_x) {
  int rc;
  void *qg = malloc((size_t)ref_hq_g_bytes(pl)), *qw = malloc((size_t)ref_hq_w_bytes(pl));
  float *sg = malloc((size_t)pl->T * sizeof *sg), sw = 0.0f;
  if (!qg || !qw || !sg) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  rc = ref_hq_quant_g(pl, g_y, dt, gran, seed, step, qg, sg);
  if (!rc) rc = ref_hq_quant_w(pl, w, dt, qw, &sw);
  if (!rc) rc = ref_gemm_gx(pl, qg, sg, qw, sw, g_x);
done:
  free(qg);
  free(qw);
  free(sg);
  return rc;
}

/* g_w by HLA: quantize g^ (and x^ when the forward kept x), integer GEMM with the HLA epilogue. */
static int backward_gw(const hot_layer_plan *pl, const hot_ref_saved *saved, const void *g_y,
                       hot_dtype dt, uint64_t seed, uint32_t step, float *g_w) {
  int rc = HOT_REF_OK;
  const size_t G = (size_t)pl->hla.groups;
  int8_t *qg = malloc((size_t)ref_hla_g_bytes(pl)), *qx = NULL;
  float *sg = malloc(G * sizeof *sg), *sxo = NULL;
  const int8_t *qxs = saved->q_x;
  const float *sx = saved->s_x;
  if (!qg || !sg) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  if (!qxs) { /* no ABC: project the kept x now (HOT_K_ABC_X runs in the backward) */
    qx = malloc((size_t)ref_hla_x_bytes(pl));
    sxo = malloc(G * sizeof *sxo);
    if (!qx || !sxo) {
      rc = HOT_REF_ENOMEM;
      goto done;
    }
    rc = ref_hla_quant_x(pl, saved->x, HOT_DT_F32, qx, sxo);
    if (rc) goto done;
    qxs = qx;
    sx = sxo;
  } else if (!sx) {
    rc = HOT_REF_EARG;
    goto done;
  } else { /* ABC: the saved codes into the GEMM's layout (HOT_K_ABC_UNPACK) */
    qx = malloc((size_t)ref_hla_x_bytes(pl));
    if (!qx) {
      rc = HOT_REF_ENOMEM;
      goto done;
    }
    rc = ref_abc_unpack(pl, qxs, qx);
    if (rc) goto done;
    qxs = qx;
  }
  rc = ref_hla_quant_g(pl, g_y, dt, seed, step, qg, sg);
  if (!rc) rc = ref_gemm_gw(pl, qg, sg, qxs, sx, g_w);
done:
  free(qg);
  free(sg);
  free(qx);
  free(sxo);
  return rc;
}

/* An fp32 product from the fp64 exact one (HQ or HLA disabled). gx != 0: g_y.w, else g_y^T.x. */
static int backward_plain(const hot_layer_plan *pl, int gx, const void *g_y, const void *other,
                          hot_dtype dt_other, hot_dtype dt, float *out) {
  int64_t T = pl->T, O = pl->O, I = pl->I, n = gx ? T * I : O * I;
  float *g = load_f32(g_y, dt, T * O), *m = load_f32(other, dt_other, gx ? O * I : T * I);
  double *r = malloc((size_t)n * sizeof *r);
  int rc = HOT_REF_ENOMEM;
  if (g && m && r) {
    rc = gx ? ref_exact_gx(T, O, I, g, m, r) : ref_exact_gw(T, O, I, g, m, r);
    for (int64_t i = 0; i < n && !rc; ++i) {
      out[i] = (float)r[i];
      if (!isfinite(out[i])) rc = HOT_REF_ENONFINITE;
    }
  }
  free(g);
  free(m);
  free(r);
  return rc;
}

int ref_layer_backward(const hot_layer_plan *pl, const hot_ref_saved *saved, const void *g_y,
                           const void *w, hot_dtype dt, hot_gran gran, uint64_t seed,
                           uint32_t step, float *g_x, float *g_w, float *g_b) {
  if (!pl || !saved || !g_y || !w || !g_x || !g_w || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (pl->hq.enabled && gran != HOT_GRAN_TENSOR && gran != HOT_GRAN_ROW && gran != HOT_GRAN_SAMPLE)
    return HOT_REF_EARG;
  if (!saved->q_x && !saved->x) return HOT_REF_EARG;
  if (!pl->hla.enabled && !saved->x) return HOT_REF_ESHAPE; /* codes cannot give g_y^T x */
  rc = pl->hq.enabled ? backward_gx(pl, g_y, w, dt, gran, seed, step, g_x)
                      : backward_plain(pl, 1, g_y, w, dt, dt, g_x);
  if (rc) return rc;
  rc = pl->hla.enabled ? backward_gw(pl, saved, g_y, dt, seed, step, g_w)
                       : backward_plain(pl, 0, g_y, saved->x, HOT_DT_F32, dt, g_w);
  if (rc) return rc;
  return g_b ? ref_bias(pl, g_y, dt, g_b) : HOT_REF_OK;
}

int ref_layer_calibrate(const hot_layer_plan *pl, const void *g_y, hot_dtype dt,
                            uint64_t seed, uint32_t step, hot_ref_lqs_result *out) {
  return ref_lqs(pl, g_y, dt, seed, step, out);
}

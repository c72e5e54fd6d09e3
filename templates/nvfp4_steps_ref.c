/* nvfp4_steps_ref.c — recipe nvfp4's reference steps (templates/CONTRACT.md 20.6): the layer
 * walk of templates/layer_ref.c runs the step table as for every recipe, and the hq, hla and gemm
 * families' step functions hand a plan whose fmt is HOT_FMT_NVFP4 to the entry points below,
 * which run the twin of nvfp4_ref.c (the bias step is the integer recipes' own). The buffers
 * between steps: nvfp4_plan.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nvfp4_plan.h"
#include "ref_steps.h"

/* A fresh fp32 copy of n elements of a dtype-tagged array (exact widening), or NULL. */
static float *load_all(const void *src, hot_dtype dt, int64_t n) {
  float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (v)
    for (int64_t i = 0; i < n; ++i) v[i] = ref_load(src, dt, i);
  return v;
}

/* hq_g / hq_w: g' (SR unless hq.round = rtn) or w' (RTN) into Q_G, S_G / Q_W, S_W. */
static int step_hq(hot_ref_call *c, const nvfp4_layer *ly, int is_g) {
  const hot_layer_plan *pl = c->pl;
  const int64_t rows = is_g ? pl->T : pl->I, kp = pl->hq.gemm.k_pad;
  uint8_t *q = ref_call_alloc(c, is_g ? HOT_LB_Q_G : HOT_LB_Q_W,
                              plan_buffer_bytes(pl, is_g ? HOT_BUF_Q_G : HOT_BUF_Q_W));
  float *st = ref_call_alloc(c, is_g ? HOT_LB_S_G : HOT_LB_S_W, (int64_t)sizeof(float));
  float *v = load_all(is_g ? c->g_y : c->w, c->dt, is_g ? pl->T * pl->O : pl->O * pl->I);
  int rc = q && st && v ? HOT_REF_OK : HOT_REF_ENOMEM;
  uint8_t *sc = q ? q + nvfp4_codes_bytes(rows, kp) : NULL;
  if (!rc)
    rc = is_g ? nvfp4_hq_quant_g(ly, v, pl->hq.g.round == HOT_ROUND_SR, c->seed, c->step, q, sc, st)
              : nvfp4_hq_quant_w(ly, v, q, sc, st);
  free(v);
  return rc;
}

/* hla_g (g^, SR unless hla.round = rtn) into Q_HG; x^ (RTN) of src (T x I, dtype dt) into dst,
 * Q_HX's layout. */
static int hla_quant(const hot_ref_call *c, const nvfp4_layer *ly, const void *src, hot_dtype dt,
                     int is_g, uint8_t *dst) {
  const hot_layer_plan *pl = c->pl;
  const int64_t cols = is_g ? pl->O : pl->I;
  float *v = load_all(src, dt, pl->T * cols);
  if (!v) return HOT_REF_ENOMEM;
  int rc = nvfp4_hla_quant(ly, v, cols, is_g, is_g && pl->hla.g.round == HOT_ROUND_SR, c->seed,
                           c->step, dst, dst + mxfp8_codes_bytes(cols, pl->hla.gemm.k_pad), NULL);
  free(v);
  return rc;
}

/* abc_x (save): the MXFP8 codes and scales of x^ into the saved result (no fp32 scale). */
static int step_abc(hot_ref_call *c, const nvfp4_layer *ly) {
  if (!c->save_out) return HOT_REF_EARG;
  const int64_t n = plan_buffer_bytes(c->pl, HOT_BUF_SAVED_CODES);
  c->save_out->q_x = malloc((size_t)n);
  if (!c->save_out->q_x) return HOT_REF_ENOMEM; /* the caller frees out */
  return hla_quant(c, ly, c->x, c->dt, 0, (uint8_t *)c->save_out->q_x);
}

/* gemm_gx: NVFP4 x NVFP4 (div 16); gemm_gw: MXFP8 x MXFP8 (div p) with x^ saved or projected
 * now from the saved x. */
static int step_gemm(hot_ref_call *c, const nvfp4_layer *ly, int gx) {
  const hot_layer_plan *pl = c->pl;
  if (gx) {
    const uint8_t *a = c->buf[HOT_LB_Q_G], *b = c->buf[HOT_LB_Q_W];
    const float *ta = c->buf[HOT_LB_S_G], *tb = c->buf[HOT_LB_S_W];
    const int64_t kp = pl->hq.gemm.k_pad;
    if (!a || !b || !ta || !tb) return HOT_REF_EARG;
    c->wrote |= 1u << HOT_LB_GX;
    return nvfp4_gemm(a, a + nvfp4_codes_bytes(pl->T, kp), *ta, b, b + nvfp4_codes_bytes(pl->I, kp),
                      *tb, pl->T, pl->I, kp, 16, c->g_x);
  }
  const int64_t kp = pl->hla.gemm.k_pad;
  const uint8_t *a = c->buf[HOT_LB_Q_HG], *b = (const uint8_t *)c->saved->q_x;
  if (!b) {
    uint8_t *q = ref_call_alloc(c, HOT_LB_Q_HX, plan_buffer_bytes(pl, HOT_BUF_Q_HX));
    if (!q) return HOT_REF_ENOMEM;
    int rc = hla_quant(c, ly, c->saved->x, HOT_DT_F32, 0, q);
    if (rc) return rc;
    b = q;
  }
  if (!a) return HOT_REF_EARG;
  c->wrote |= 1u << HOT_LB_GW;
  return mxfp8_gemm(a, a + mxfp8_codes_bytes(pl->O, kp), b, b + mxfp8_codes_bytes(pl->I, kp), pl->O,
                    pl->I, kp, pl->hla.block, c->g_w);
}

/* The entry points the hq, hla and gemm families' step functions call for a plan of fmt
 * HOT_FMT_NVFP4 (ref_steps.h). */
static int plan_of(const hot_ref_call *c, nvfp4_plan_layer *pl) {
  if (!c || !c->pl || c->pl->fmt != HOT_FMT_NVFP4) return HOT_REF_EARG;
  nvfp4_of_plan(c->pl, pl);
  return HOT_REF_OK;
}

int ref_nvfp4_hq(hot_ref_call *c, int is_g) {
  nvfp4_plan_layer pl;
  int rc = plan_of(c, &pl);
  return rc ? rc : step_hq(c, &pl.ly, is_g);
}

int ref_nvfp4_hla(hot_ref_call *c, int is_g) {
  nvfp4_plan_layer pl;
  int rc = plan_of(c, &pl);
  if (rc) return rc;
  if (!is_g) return step_abc(c, &pl.ly);
  uint8_t *q = ref_call_alloc(c, HOT_LB_Q_HG, plan_buffer_bytes(c->pl, HOT_BUF_Q_HG));
  return q ? hla_quant(c, &pl.ly, c->g_y, c->dt, 1, q) : HOT_REF_ENOMEM;
}

int ref_nvfp4_gemm(hot_ref_call *c, int gx) {
  nvfp4_plan_layer pl;
  int rc = plan_of(c, &pl);
  return rc ? rc : step_gemm(c, &pl.ly, gx);
}

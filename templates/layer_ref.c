/* layer_ref.c — one HOT layer on the CPU, built from the twins: the forward save (ABC), the
 * backward (g_x by HQ, g_w by HLA, g_b exact) and the LQS calibration, each driven by the step
 * table (kd_steps): every step that runs hands the call to its family's twin step function
 * (ref_steps.h). This is what the runtime's CPU backend runs and what the GPU layer is compared
 * with. */
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "ref_steps.h"

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

/* ---- the calls, driven by the step table ---------------------------------------------------- */

static void ref_call_free(hot_ref_call *c) {
  for (int s = 0; s < HOT_LB_COUNT; ++s) free(c->buf[s]);
}

/* The twin step function of each family (the generated list; gemm_tma's steps are gemm's). */
#define HOT_FAMILY_DECL_(f, cpu) extern const hot_kernel_desc kd_##f;
HOT_KERNEL_FAMILIES(HOT_FAMILY_DECL_)
#undef HOT_FAMILY_DECL_
#define HOT_FAMILY_ROW_(f, cpu) {&kd_##f, ref_step_##cpu},
static const struct {
  const hot_kernel_desc *desc;
  int (*run)(hot_ref_call *, const hot_step *);
} k_steps[] = {HOT_KERNEL_FAMILIES(HOT_FAMILY_ROW_)};
#undef HOT_FAMILY_ROW_

/* The outputs call c asks for (HOT_OUT_*; a save or a calibration: all). */
static unsigned ref_call_outputs(const hot_ref_call *c) {
  if (c->call != HOT_CALL_BACKWARD) return HOT_OUT_ALL;
  return kd_outputs(c->g_x, c->g_w, c->g_b);
}

/* Whether step s runs in call c (kernel_desc.h's `when`; its role must be planned), and its
 * family's descriptor into *d. */
static int step_runs(const hot_ref_call *c, const hot_step *s, const hot_kernel_desc **d) {
  const int k = plan_kernel_index(c->pl, s->role);
  if (k < 0 || !(*d = kd_of(&c->pl->kernels[k]))) return 0;
  return kd_step_runs(s->when, s->out, c->gran == HOT_GRAN_ROW, ref_call_outputs(c));
}

/* The call's step table (kd_steps: every family's steps in seq order), each role's twin step
 * function once, at its first step that runs (a twin does all of a kernel's phases in one pass).
 * *ran receives the bit per role that ran. */
static int run_steps(hot_ref_call *c, unsigned *ran) {
  hot_step st[64];
  const int n = kd_steps(c->call, st, 64);
  int rc = HOT_REF_OK;
  *ran = 0;
  for (int i = 0; i < n && !rc; ++i) {
    const hot_kernel_desc *d = NULL;
    if ((*ran & (1u << st[i].role)) || !step_runs(c, &st[i], &d)) continue;
    *ran |= 1u << st[i].role;
    rc = HOT_REF_EARG; /* a descriptor outside the generated list */
    for (size_t t = 0; t < sizeof k_steps / sizeof k_steps[0]; ++t)
      if (k_steps[t].desc == d) rc = k_steps[t].run(c, &st[i]);
  }
  return rc;
}

int ref_layer_save(const hot_layer_plan *pl, const void *x, hot_dtype dt, hot_ref_saved *out) {
  if (!out) return HOT_REF_EARG;
  memset(out, 0, sizeof *out);
  if (!pl || !x || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  hot_ref_call c;
  memset(&c, 0, sizeof c);
  c.call = HOT_CALL_SAVE, c.pl = pl, c.x = x, c.dt = dt, c.save_out = out;
  unsigned ran = 0;
  rc = run_steps(&c, &ran);
  ref_call_free(&c);
  if (!rc && !ran) { /* no ABC: the forward keeps x (no kernel: not a step) */
    out->x = load_f32(x, dt, pl->T * pl->I);
    if (!out->x) return HOT_REF_ENOMEM;
    for (int64_t i = 0; i < pl->T * pl->I && !rc; ++i)
      if (!isfinite(out->x[i])) rc = HOT_REF_ENONFINITE;
  }
  out->bytes = plan_buffer_bytes(pl, HOT_BUF_SAVED);
  if (rc) ref_saved_free(out);
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
  if (!pl || !saved || !g_y || !w || (!g_x && !g_w && !g_b) || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (pl->hq.enabled && gran != HOT_GRAN_TENSOR && gran != HOT_GRAN_ROW && gran != HOT_GRAN_SAMPLE)
    return HOT_REF_EARG;
  if (g_w && !saved->q_x && !saved->x) return HOT_REF_EARG; /* only g_w reads saved */
  if (g_w && !pl->hla.enabled && !saved->x) return HOT_REF_ESHAPE; /* codes cannot give g_y^T x */
  hot_ref_call c;
  memset(&c, 0, sizeof c);
  c.call = HOT_CALL_BACKWARD, c.pl = pl, c.saved = saved, c.g_y = g_y, c.w = w, c.dt = dt;
  c.gran = gran, c.seed = seed, c.step = step, c.g_x = g_x, c.g_w = g_w, c.g_b = g_b;
  unsigned ran = 0;
  rc = run_steps(&c, &ran);
  /* HQ / HLA disabled: the product without its GEMM is the fp32 one (no kernel: not a step) */
  if (!rc && g_x && !(c.wrote & (1u << HOT_LB_GX))) rc = backward_plain(pl, 1, g_y, w, dt, dt, g_x);
  if (!rc && g_w && !(c.wrote & (1u << HOT_LB_GW)))
    rc = backward_plain(pl, 0, g_y, saved->x, HOT_DT_F32, dt, g_w);
  ref_call_free(&c);
  return rc;
}

int ref_layer_calibrate(const hot_layer_plan *pl, const void *g_y, hot_dtype dt,
                            uint64_t seed, uint32_t step, hot_ref_lqs_result *out) {
  if (!pl || !g_y || !out || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  hot_ref_call c;
  memset(&c, 0, sizeof c);
  c.call = HOT_CALL_CALIBRATE, c.pl = pl, c.g_y = g_y, c.dt = dt, c.seed = seed, c.step = step;
  c.lqs_out = out;
  unsigned ran = 0;
  rc = run_steps(&c, &ran);
  ref_call_free(&c);
  /* a plan without an LQS kernel (g' granularity fixed): the CPU answers what no kernel asks */
  if (!rc && !ran) rc = ref_lqs(pl, g_y, dt, seed, step, out);
  return rc;
}

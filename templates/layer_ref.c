/* layer_ref.c — one HOT layer on the CPU, built from the twins: the forward save (ABC), the
 * backward (g_x by HQ, g_w by HLA, g_b exact) and the LQS calibration. This is what the
 * runtime's CPU backend runs and what the GPU layer is compared with. */
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "kernel_desc.h" /* the step table: kd_steps */
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

/* ---- the backward, driven by the step table ------------------------------------------------ */

/* The host buffers of one reference backward: what the twins read and write, step by step. */
typedef struct {
  const hot_layer_plan *pl;
  const hot_ref_saved *saved;
  const void *g_y, *w;
  hot_dtype dt;
  hot_gran gran;
  uint64_t seed;
  uint32_t step;
  float *g_x, *g_w, *g_b;
  void *qg, *qw;            /* HQ: q_g', q_w' */
  float *sg, sw;            /* s_g (T), s_w */
  int8_t *qhg;              /* HLA: q_g^ */
  float *shg;               /* s_g^ (groups) */
  int8_t *qx;               /* q_x^ in the GEMM's layout (unpacked or projected), owned */
  float *sxo;               /* s_x^ projected in the backward (no ABC), owned */
  int done_gx, done_gw;     /* the GEMMs ran */
} ref_bwd;

static void *alloc_into(void **dst, int64_t bytes) { return *dst = malloc((size_t)bytes); }

static int twin_hq_g(ref_bwd *b) {
  if (!alloc_into(&b->qg, ref_hq_g_bytes(b->pl)) || !alloc_into((void **)&b->sg, b->pl->T * 4))
    return HOT_REF_ENOMEM;
  return ref_hq_quant_g(b->pl, b->g_y, b->dt, b->gran, b->seed, b->step, b->qg, b->sg);
}
/* w' (with its SAWB scale when the rule is SAWB: the sawb_w steps are folded in here). */
static int twin_hq_w(ref_bwd *b) {
  if (!alloc_into(&b->qw, ref_hq_w_bytes(b->pl))) return HOT_REF_ENOMEM;
  return ref_hq_quant_w(b->pl, b->w, b->dt, b->qw, &b->sw);
}
static int twin_hla_g(ref_bwd *b) {
  if (!alloc_into((void **)&b->qhg, ref_hla_g_bytes(b->pl)) ||
      !alloc_into((void **)&b->shg, b->pl->hla.groups * 4))
    return HOT_REF_ENOMEM;
  return ref_hla_quant_g(b->pl, b->g_y, b->dt, b->seed, b->step, b->qhg, b->shg);
}
/* The saved codes into the GEMM's layout (abc_unpack: planned where the layouts differ). */
static int twin_unpack(ref_bwd *b) {
  if (!b->saved->q_x) return HOT_REF_OK; /* no ABC: the g_w GEMM projects the kept x */
  if (!alloc_into((void **)&b->qx, ref_hla_x_bytes(b->pl))) return HOT_REF_ENOMEM;
  return ref_abc_unpack(b->pl, b->saved->q_x, b->qx);
}
static int twin_gemm_gx(ref_bwd *b) {
  b->done_gx = 1;
  return ref_gemm_gx(b->pl, b->qg, b->sg, b->qw, b->sw, b->g_x);
}
/* g_w: q_x^ unpacked, or the saved codes in place, or without ABC x projected now (abc_x's
 * twin runs in the backward: the forward kept x). */
static int twin_gemm_gw(ref_bwd *b) {
  const int8_t *qx = b->qx ? b->qx : b->saved->q_x;
  const float *sx = b->saved->s_x;
  if (!b->saved->q_x) {
    if (!alloc_into((void **)&b->qx, ref_hla_x_bytes(b->pl)) ||
        !alloc_into((void **)&b->sxo, b->pl->hla.groups * 4))
      return HOT_REF_ENOMEM;
    int rc = ref_hla_quant_x(b->pl, b->saved->x, HOT_DT_F32, b->qx, b->sxo);
    if (rc) return rc;
    qx = b->qx;
    sx = b->sxo;
  } else if (!sx) {
    return HOT_REF_EARG;
  }
  b->done_gw = 1;
  return ref_gemm_gw(b->pl, b->qhg, b->shg, qx, sx, b->g_w);
}
static int twin_bias(ref_bwd *b) { return ref_bias(b->pl, b->g_y, b->dt, b->g_b); }

/* The twin of each role a backward launches (the sawb_w steps are folded into hq_w's). */
static const struct { hot_kernel_role role; int (*run)(ref_bwd *); } k_twins[] = {
    {HOT_K_HQ_G, twin_hq_g},         {HOT_K_HQ_W, twin_hq_w},       {HOT_K_HLA_G, twin_hla_g},
    {HOT_K_ABC_UNPACK, twin_unpack}, {HOT_K_GEMM_GX, twin_gemm_gx}, {HOT_K_GEMM_GW, twin_gemm_gw},
    {HOT_K_BIAS, twin_bias},
};

/* Whether step s runs in this backward (kernel_desc.h's `when`; its role must be planned). */
static int step_runs(const ref_bwd *b, const hot_step *s) {
  if (plan_kernel_index(b->pl, s->role) < 0) return 0;
  switch (s->when) {
  case HOT_WHEN_GRAN_ROW: return b->gran == HOT_GRAN_ROW;
  case HOT_WHEN_GRAN_NOT_ROW: return b->gran != HOT_GRAN_ROW;
  case HOT_WHEN_BIAS: return b->g_b != NULL;
  default: return 1;
  }
}

/* The backward's step table (kd_steps: every family's steps in seq order), each role's twin
 * once, at its first step that runs (a twin does all of a kernel's phases in one pass). */
static int run_backward_steps(ref_bwd *b) {
  hot_step st[64];
  const int n = kd_steps(HOT_CALL_BACKWARD, st, 64);
  unsigned ran = 0;
  int rc = HOT_REF_OK;
  for (int i = 0; i < n && !rc; ++i) {
    if ((ran & (1u << st[i].role)) || !step_runs(b, &st[i])) continue;
    ran |= 1u << st[i].role;
    for (size_t t = 0; t < sizeof k_twins / sizeof k_twins[0]; ++t)
      if (k_twins[t].role == st[i].role) rc = k_twins[t].run(b);
  }
  return rc;
}

static void ref_bwd_free(ref_bwd *b) {
  free(b->qg);
  free(b->qw);
  free(b->sg);
  free(b->qhg);
  free(b->shg);
  free(b->qx);
  free(b->sxo);
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
  ref_bwd b;
  memset(&b, 0, sizeof b);
  b.pl = pl, b.saved = saved, b.g_y = g_y, b.w = w, b.dt = dt, b.gran = gran;
  b.seed = seed, b.step = step, b.g_x = g_x, b.g_w = g_w, b.g_b = g_b;
  rc = run_backward_steps(&b);
  /* HQ / HLA disabled: the product without its GEMM is the fp32 one (no kernel: not a step) */
  if (!rc && !b.done_gx) rc = backward_plain(pl, 1, g_y, w, dt, dt, g_x);
  if (!rc && !b.done_gw) rc = backward_plain(pl, 0, g_y, saved->x, HOT_DT_F32, dt, g_w);
  ref_bwd_free(&b);
  return rc;
}

int ref_layer_calibrate(const hot_layer_plan *pl, const void *g_y, hot_dtype dt,
                            uint64_t seed, uint32_t step, hot_ref_lqs_result *out) {
  return ref_lqs(pl, g_y, dt, seed, step, out);
}

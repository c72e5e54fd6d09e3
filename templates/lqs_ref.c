/* lqs_ref.c — CPU twin of templates/lqs.cu (kernel HOT_K_LQS): layer-wise quantizer selection
 * of CONTRACT.md 6 on the raw g_y: per token against per sample (one scale for each of the B samples;
 * per tensor when B = 1). Both quantizations (per sample, per row) use the same SR draws
 * (tag = layer_id*16 + HOT_TENSOR_LQS, idx = t*O + o); the squared errors are summed in the
 * canonical fp64 order of CONTRACT.md. */
#include <stdlib.h>

#include "hot_math.cuh"
#include "ref.h"
#include "ref_steps.h"

/* Canonical fp64 sum of (v - s(row) * q)^2 over the T x O tensor, in linear index order; row t
 * has the scale s[t / group_rows]. */
static double sq_error(const float *v, const int8_t *q, const float *s, int64_t group_rows,
                       int64_t T, int64_t O) {
  ref_sum acc;
  ref_sum_init(&acc);
  for (int64_t t = 0; t < T; ++t) {
    float sc = s[t / group_rows];
    for (int64_t o = 0; o < O; ++o) {
      int64_t i = t * O + o;
      float deq = HOT_MUL(HOT_I2F((int)q[i]), sc);
      double d = HOT_DSUB((double)v[i], (double)deq);
      ref_sum_add(&acc, HOT_DMUL(d, d));
    }
  }
  return ref_sum_end(&acc);
}

int ref_lqs(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, uint64_t seed,
                uint32_t step, hot_ref_lqs_result *out) {
  if (!pl || !g_y || !out || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  int64_t T = pl->T, O = pl->O, n = T * O;
  /* the errors of g' as it will be quantized: its bits and its rounding */
  hot_quant q = {pl->hq.g.bits, pl->hq.g.round, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX};
  uint32_t tag = (uint32_t)pl->layer_id * 16u + HOT_TENSOR_LQS;
  float *v = malloc((size_t)n * sizeof *v), *s_row = malloc((size_t)T * sizeof *s_row);
  float *s_smp = malloc((size_t)pl->B * sizeof *s_smp);
  int8_t *qt = malloc((size_t)n), *qr = malloc((size_t)n);
  if (!v || !s_row || !s_smp || !qt || !qr) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  for (int64_t i = 0; i < n; ++i) v[i] = ref_load(g_y, dt, i);
  /* the coarse candidate: one scale per sample of L rows (B = 1: the tensor) */
  rc = ref_quantize_groups(v, T, O, pl->L, &q, seed, tag, step, qt, s_smp);
  if (rc) goto done;
  rc = ref_quantize(v, T, O, &q, HOT_GRAN_ROW, seed, tag, step, qr, s_row);
  if (rc) goto done;
  out->e_tensor = HOT_DSQRT(sq_error(v, qt, s_smp, pl->L, T, O));
  out->e_token = HOT_DSQRT(sq_error(v, qr, s_row, 1, T, O));
  out->choice = out->e_token < HOT_DMUL(0.5, out->e_tensor) ? HOT_GRAN_ROW : plan_lqs_coarse(pl);
done:
  free(v);
  free(s_row);
  free(s_smp);
  free(qt);
  free(qr);
  return rc;
}

/* The lqs family's step (ref_steps.h): the calibration's errors and choice. */
int ref_step_lqs(hot_ref_call *c, const hot_step *s) {
  (void)s;
  return ref_lqs(c->pl, c->g_y, c->dt, c->seed, c->step, c->lqs_out);
}

/* bias_ref.c — CPU twin of templates/bias.cu (kernel HOT_K_BIAS): g_b = column sums of g_y,
 * exact fp32 (no quantization), in the blocked order of CONTRACT.md: for each column, chunks of
 * HOT_REF_BIAS_CHUNK tokens summed sequentially from 0.0f, then the chunk partials summed
 * sequentially in chunk order from 0.0f. */
#include <stdlib.h>

#include "hot_math.cuh"
#include "ref.h"
#include "ref_steps.h"

int ref_bias(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, float *g_b) {
  if (!pl || !g_y || !g_b || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  int64_t T = pl->T, O = pl->O;
  float *part = malloc((size_t)O * sizeof *part);
  if (!part) return HOT_REF_ENOMEM;
  for (int64_t o = 0; o < O; ++o) g_b[o] = 0.0f;
  for (int64_t t0 = 0; t0 < T; t0 += HOT_REF_BIAS_CHUNK) {
    int64_t t1 = t0 + HOT_REF_BIAS_CHUNK < T ? t0 + HOT_REF_BIAS_CHUNK : T;
    for (int64_t o = 0; o < O; ++o) part[o] = 0.0f;
    for (int64_t t = t0; t < t1; ++t) /* row by row: each column still sums in token order */
      for (int64_t o = 0; o < O; ++o) {
        float v = ref_load(g_y, dt, t * O + o);
        if (!isfinite(v)) {
          free(part);
          return HOT_REF_ENONFINITE;
        }
        part[o] = HOT_ADD(part[o], v);
      }
    for (int64_t o = 0; o < O; ++o) g_b[o] = HOT_ADD(g_b[o], part[o]);
  }
  free(part);
  return HOT_REF_OK;
}

/* The bias family's step (ref_steps.h): g_b. */
int ref_step_bias(hot_ref_call *c, const hot_step *s) {
  (void)s;
  return ref_bias(c->pl, c->g_y, c->dt, c->g_b);
}

/* check.c — correctness on the CPU reference: one save + calibrate + backward through the public
 * API on a CPU-backend context (the twins of every kernel), and the relative Frobenius errors of
 * g_x, g_w (and g_b) against the fp64 products of templates/ref.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "fast.h"
#include "ref.h"

void bench_outputs_free(bench_outputs *o) {
  if (!o) return;
  free(o->gx);
  free(o->gw);
  free(o->gb);
  free(o->saved);
  memset(o, 0, sizeof *o);
}

static int fail(bench_layer *bl, hot_status st, hot_ctx *ctx, const char *what) {
  snprintf(bl->status, sizeof bl->status, "cpu %s: %s: %.250s", what, hot_status_name(st),
           hot_errmsg(ctx));
  bl->unsupported = st == HOT_ERR_UNSUPPORTED;
  return -1;
}

int bench_check_cpu(const bench_run *run, bench_layer *bl, const tooldata *d, const char *arch,
                    bench_outputs *out) {
  char err[512];
  hot_ctx *ctx = NULL;
  hot_layer *layer = NULL;
  bench_outputs o;
  memset(&o, 0, sizeof o);
  int rc = -1;
  hot_status st = bench_ctx_open(&ctx, run, HOT_BACKEND_CPU, arch, -1, NULL, err, sizeof err);
  if (st != HOT_OK) {
    snprintf(bl->status, sizeof bl->status, "cpu context: %s: %.250s", hot_status_name(st), err);
    hot_ctx_destroy(ctx);
    return -1;
  }
  st = bench_layer_open(ctx, run, bl, bl->cB, bl->cL, &layer, err, sizeof err);
  if (st != HOT_OK) {
    snprintf(bl->status, sizeof bl->status, "cpu layer: %s: %.250s", hot_status_name(st), err);
    goto done;
  }
  int64_t T = d->T, O = d->O, I = d->I;
  o.saved_bytes = hot_layer_saved_bytes(layer);
  o.gx = malloc((size_t)(T * I) * 4);
  o.gw = malloc((size_t)(O * I) * 4);
  o.gb = bl->bias ? malloc((size_t)O * 4) : NULL;
  o.saved = malloc(o.saved_bytes + 64);
  double *ex = malloc((size_t)(T * I) * 8), *ew = malloc((size_t)(O * I) * 8);
  if (!o.gx || !o.gw || (bl->bias && !o.gb) || !o.saved || !ex || !ew) {
    snprintf(bl->status, sizeof bl->status, "cpu check: out of host memory");
    free(ex);
    free(ew);
    goto done;
  }
  /* A caller-owned saved buffer (16-byte aligned: malloc's), so it can be compared later. */
  double t0 = bench_now_ms();
  hot_layer_info info;
  st = hot_layer_save(layer, tooldata_in(d, d->x), d->dt, o.saved, NULL);
  if (st != HOT_OK) { fail(bl, st, ctx, "save"); goto free_exact; }
  if (hot_layer_get_info(layer, &info) == HOT_OK && info.gran_auto) {
    st = hot_layer_calibrate(layer, tooldata_in(d, d->gy), d->dt, 0, NULL);
    if (st != HOT_OK) { fail(bl, st, ctx, "calibrate"); goto free_exact; }
  }
  st = hot_layer_backward(layer, tooldata_in(d, d->gy), tooldata_in(d, d->w), d->dt, o.saved, o.gx,
                          o.gw, o.gb, 1, NULL);
  if (st != HOT_OK) { fail(bl, st, ctx, "backward"); goto free_exact; }
  bl->cpu_ref_ms = bench_now_ms() - t0;
  hot_layer_get_info(layer, &info);
  o.gran_row = info.gran == HOT_GRAN_ROW;
  snprintf(bl->gran, sizeof bl->gran, "%s%s", info.gran == HOT_GRAN_ROW ? "token" : "tensor",
           info.gran_auto ? " (lqs)" : "");

  /* The fp64 references. */
  const fast_config *cf = tools_fast_config(NULL, 0); /* HOT_CPU_*, as the CPU backend */
  if (fast_exact_gx(cf, T, O, I, d->gy, d->w, ex) != 0 ||
      fast_exact_gw(cf, T, O, I, d->gy, d->x, ew) != 0) {
    snprintf(bl->status, sizeof bl->status, "fp64 reference failed");
    goto free_exact;
  }
  bl->gx_err = ref_rel_err(o.gx, ex, T * I);
  bl->gw_err = ref_rel_err(o.gw, ew, O * I);
  bl->gb_err = -1;
  if (o.gb) { /* fp64 column sums of g_y */
    double num = 0, den = 0;
    for (int64_t j = 0; j < O; ++j) {
      double e = 0;
      for (int64_t t = 0; t < T; ++t) e += d->gy[t * O + j];
      num += (o.gb[j] - e) * (o.gb[j] - e);
      den += e * e;
    }
    bl->gb_err = den > 0 ? sqrt(num / den) : 0;
  }
  bl->have_err = 1;
  rc = 0;
free_exact:
  free(ex);
  free(ew);
done:
  hot_ctx_destroy(ctx);
  if (rc == 0 && out) *out = o;
  else bench_outputs_free(&o);
  return rc;
}

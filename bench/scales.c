/* scales.c — hot-bench --scales: for every layer of the spec, the g_x error of the three scale
 * granularities of g' (per tensor: one scale for all B samples; per sample; per token) and what
 * LQS picks, plus the g_w error (HLA, x^ and g^ per tensor), on the CPU twins (templates/ref.h)
 * against the fp64 products, on the same seeded data of three kinds: Gaussian, channel outliers
 * (4 channels x20) and token outliers (4 tokens x20). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ref.h"

enum { KINDS = BENCH_DATA_KINDS }; /* data kinds: BENCH_DATA_GAUSS, _CHANNELS, _TOKENS */
/* channels / tokens: 4 of them x20 */
static const char *const kind_name[KINDS] = {"gaussian", "channels", "tokens"};
static const hot_gran grans[3] = {HOT_GRAN_TENSOR, HOT_GRAN_SAMPLE, HOT_GRAN_ROW};

/* Sizes of the comparison: B = --batch, else the spec's batch capped at 4; L = the layer's
 * tokens (or --tokens), else cut (not below 64, or L when smaller) until T*O*I <= cap =
 * --check-macs / 8 (the comparison runs 3 data kinds x 3 granularities). */
static void scale_sizes(const bench_opts *o, const bench_layer *bl, int64_t *B, int64_t *L) {
  *B = o->batch ? o->batch : (bl->B < 4 ? bl->B : 4);
  *L = bl->L;
  const double w = (double)bl->O * (double)bl->I, cap = o->check_macs / 8.0;
  if (!o->tokens && (double)(*B) * (double)(*L) * w > cap) {
    const int64_t floor_l = bl->L < 64 ? bl->L : 64;
    const double l = cap / ((double)(*B) * w);
    *L = l < (double)floor_l ? floor_l : (int64_t)l;
  }
}

/* g_y of the kind (T x O). */
static void make_g(float *g, int64_t T, int64_t O, int kind, uint64_t seed, int layer) {
  bench_fill_normal(g, (size_t)(T * O), seed, 1000u + (uint64_t)layer * 16u);
  bench_outliers(g, T, O, kind);
}

typedef struct {
  double gx[3], gw; /* < 0: not applicable */
  hot_gran lqs;
  int have_lqs;
} scale_row;

/* One layer, one kind. Returns 0, or -1 with *why set. */
static int run_kind(const hot_layer_plan *pl, const float *w, const float *x, int kind,
                    uint64_t seed, int layer, scale_row *r, const char **why) {
  const int64_t T = pl->T, O = pl->O, I = pl->I;
  float *g = malloc((size_t)(T * O) * sizeof *g), *gx = malloc((size_t)(T * I) * sizeof *gx);
  float *sg = malloc((size_t)T * sizeof *sg), *gw = malloc((size_t)(O * I) * sizeof *gw);
  double *ex = malloc((size_t)(T * I) * sizeof *ex), *ew = malloc((size_t)(O * I) * sizeof *ew);
  void *qg = pl->hq.enabled ? malloc((size_t)hot_ref_hq_g_bytes(pl)) : NULL;
  void *qw = pl->hq.enabled ? malloc((size_t)hot_ref_hq_w_bytes(pl)) : NULL;
  int8_t *hg = pl->hla.enabled ? malloc((size_t)hot_ref_hla_g_bytes(pl)) : NULL;
  int8_t *hx = pl->hla.enabled ? malloc((size_t)hot_ref_hla_x_bytes(pl)) : NULL;
  int rc = -1;
  *why = "out of host memory";
  if (!g || !gx || !sg || !gw || !ex || !ew || (pl->hq.enabled && (!qg || !qw)) ||
      (pl->hla.enabled && (!hg || !hx)))
    goto done;
  make_g(g, T, O, kind, seed, layer);
  *why = "reference failed";
  if (hot_ref_exact_gx(T, O, I, g, w, ex) || hot_ref_exact_gw(T, O, I, g, x, ew)) goto done;
  for (int k = 0; k < 3; ++k) r->gx[k] = -1.0;
  r->gw = -1.0;
  r->have_lqs = 0;
  if (pl->hq.enabled) {
    float sw;
    if (hot_ref_hq_quant_w(pl, w, HOT_DT_F32, qw, &sw)) goto done;
    for (int k = 0; k < 3; ++k) {
      if (hot_ref_hq_quant_g(pl, g, HOT_DT_F32, grans[k], seed, 1, qg, sg) ||
          hot_ref_gemm_gx(pl, qg, sg, qw, sw, gx))
        goto done;
      r->gx[k] = hot_ref_rel_err(gx, ex, T * I);
    }
    hot_ref_lqs_result lq;
    if (hot_ref_lqs(pl, g, HOT_DT_F32, seed, 1, &lq)) goto done;
    r->lqs = lq.choice;
    r->have_lqs = 1;
  }
  if (pl->hla.enabled) {
    float *shg = malloc((size_t)pl->hla.groups * sizeof *shg);
    float *shx = malloc((size_t)pl->hla.groups * sizeof *shx);
    int bad = !shg || !shx || hot_ref_hla_quant_g(pl, g, HOT_DT_F32, seed, 1, hg, shg) ||
              hot_ref_hla_quant_x(pl, x, HOT_DT_F32, hx, shx) ||
              hot_ref_gemm_gw(pl, hg, shg, hx, shx, gw);
    free(shg);
    free(shx);
    if (bad) goto done;
    r->gw = hot_ref_rel_err(gw, ew, O * I);
  }
  rc = 0;
done:
  free(g); free(gx); free(sg); free(gw); free(ex); free(ew);
  free(qg); free(qw); free(hg); free(hx);
  return rc;
}

static void put_err(FILE *f, double e) {
  if (e < 0) fprintf(f, " %9s", "-");
  else fprintf(f, " %9.4f", e);
}

int bench_scales(const bench_run *run, const hot_model *model, FILE *f) {
  if (!run || !model || !f) return 1;
  const bench_opts *o = &run->opt;
  fprintf(f, "hot-bench --scales: %s (recipe %s), CPU twins, seed %llu: relative g_x error with "
          "g' scaled per tensor (all B samples), per sample and per token, LQS's pick, and the g_w "
          "error (x^, g^ per tensor), against fp64\n",
          run->model, run->recipe, (unsigned long long)run->seed);
  fprintf(f, "%-16s %4s %6s %6s %6s  %-10s %9s %9s %9s  %-6s %9s\n", "layer", "B", "L", "O", "I",
          "data", "gx tensor", "gx sample", "gx token", "LQS", "g_w");
  int rc = 0, rows = 0, no_worse = 0;
  double worst = 0.0; /* largest (sample - tensor) / tensor */
  hot_layer_plan *pl = malloc(sizeof *pl);
  if (!pl) return 1;
  for (int li = 0; li < run->n; ++li) {
    const bench_layer *bl = &run->layers[li];
    const hot_layer_spec *s = &model->layers[bl->index];
    int64_t B, L;
    scale_sizes(o, bl, &B, &L);
    char err[512];
    if (plan_layer(s, B, L, model->recipe, HOT_ARCH_SM90, bl->index, pl, err, sizeof err)) {
      fprintf(f, "%-16s %4lld %6lld %6lld %6lld  not planned: %s\n", bl->name, (long long)B,
              (long long)L, (long long)bl->O, (long long)bl->I, err);
      rc = 2;
      continue;
    }
    const int64_t T = pl->T, O = pl->O, I = pl->I;
    float *w = malloc((size_t)(O * I) * sizeof *w), *x = malloc((size_t)(T * I) * sizeof *x);
    if (!w || !x) {
      free(w); free(x);
      fprintf(f, "%-16s out of host memory\n", bl->name);
      rc = 2;
      continue;
    }
    bench_fill_normal(w, (size_t)(O * I), run->seed, 2000u + (uint64_t)bl->index * 16u);
    bench_fill_normal(x, (size_t)(T * I), run->seed, 3000u + (uint64_t)bl->index * 16u);
    for (int k = 0; k < KINDS; ++k) {
      scale_row r;
      const char *why = "";
      fprintf(f, "%-16s %4lld %6lld %6lld %6lld  %-10s", bl->name, (long long)B, (long long)L,
              (long long)O, (long long)I, kind_name[k]);
      if (run_kind(pl, w, x, k, run->seed, bl->index, &r, &why)) {
        fprintf(f, " %s\n", why);
        rc = 2;
        continue;
      }
      for (int g = 0; g < 3; ++g) put_err(f, r.gx[g]);
      fprintf(f, "  %-6s", r.have_lqs ? (r.lqs == HOT_GRAN_ROW ? "token" : plan_gran_name(r.lqs))
                                      : "-");
      put_err(f, r.gw);
      fprintf(f, "\n");
      fflush(f);
      if (r.gx[0] > 0) {
        ++rows;
        no_worse += r.gx[1] <= r.gx[0];
        const double d = (r.gx[1] - r.gx[0]) / r.gx[0];
        if (d > worst) worst = d;
      }
    }
    free(w);
    free(x);
  }
  free(pl);
  fprintf(f, "per sample <= per tensor on %d of %d (layer, data) rows; largest excess of per "
          "sample over per tensor: %.2f %%\n", no_worse, rows, 100.0 * worst);
  return rc;
}

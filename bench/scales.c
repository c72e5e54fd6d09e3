/* scales.c — hot-bench --scales: for every layer of the spec, the g_x error of the three scale
 * granularities of g' (per tensor: one scale for all B samples; per sample; per token) and what
 * LQS picks, plus the g_w error of the two granularities of x^ and g^ (per tensor, per sample;
 * per sample needs layout sample, so both columns use it: a layer planned flat is compared under
 * layout sample, marked '*'), on the CPU twins (templates/ref.h) against the fp64 products, on the same
 * seeded data of three kinds: Gaussian, channel outliers (4 channels x20) and token outliers
 * (4 tokens x20), x Gaussian with every sample's magnitude drawn from 0.25 ... 4. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "fast.h"
#include "ref.h"

enum { KINDS = TOOLDATA_KINDS }; /* data kinds: TOOLDATA_GAUSS, _CHANNELS, _TOKENS */
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
  tooldata_fill_normal(g, (size_t)(T * O), seed, 1000u + (uint64_t)layer * 16u);
  tooldata_outliers(g, T, O, kind);
}

typedef struct {
  double gx[3], gw[2]; /* < 0: not applicable; gw[0] per tensor, gw[1] per sample */
  hot_gran lqs;
  int have_lqs;
} scale_row;

/* The g_w error of plan p (its HLA granularities) against the fp64 ew; gw: O x I scratch. */
static int gw_err(const hot_layer_plan *p, const float *g, const float *x, uint64_t seed,
                  const double *ew, float *gw, double *err) {
  const size_t G = (size_t)p->hla.groups;
  int8_t *hg = malloc((size_t)ref_hla_g_bytes(p)), *hx = malloc((size_t)ref_hla_x_bytes(p));
  float *shg = malloc(G * sizeof *shg), *shx = malloc(G * sizeof *shx);
  int bad = !hg || !hx || !shg || !shx || ref_hla_quant_g(p, g, HOT_DT_F32, seed, 1, hg, shg) ||
            ref_hla_quant_x(p, x, HOT_DT_F32, hx, shx) ||
            ref_gemm_gw(p, hg, shg, hx, shx, gw);
  if (!bad) *err = ref_rel_err(gw, ew, p->O * p->I);
  free(hg); free(hx); free(shg); free(shx);
  return bad ? -1 : 0;
}

/* One layer, one kind: pl as planned with x^, g^ per tensor, pl_s with them per sample (NULL:
 * not planned). Returns 0, or -1 with *why set. */
static int run_kind(const hot_layer_plan *pl, const hot_layer_plan *pl_s, const float *w,
                    const float *x, int kind, uint64_t seed, int layer, scale_row *r,
                    const char **why) {
  const int64_t T = pl->T, O = pl->O, I = pl->I;
  float *g = malloc((size_t)(T * O) * sizeof *g), *gx = malloc((size_t)(T * I) * sizeof *gx);
  float *sg = malloc((size_t)T * sizeof *sg), *gw = malloc((size_t)(O * I) * sizeof *gw);
  double *ex = malloc((size_t)(T * I) * sizeof *ex), *ew = malloc((size_t)(O * I) * sizeof *ew);
  void *qg = pl->hq.enabled ? malloc((size_t)ref_hq_g_bytes(pl)) : NULL;
  void *qw = pl->hq.enabled ? malloc((size_t)ref_hq_w_bytes(pl)) : NULL;
  int rc = -1;
  *why = "out of host memory";
  if (!g || !gx || !sg || !gw || !ex || !ew || (pl->hq.enabled && (!qg || !qw))) goto done;
  make_g(g, T, O, kind, seed, layer);
  *why = "reference failed";
  const fast_config *cf = tools_fast_config(NULL, 0); /* HOT_CPU_*, as the CPU backend */
  if (fast_exact_gx(cf, T, O, I, g, w, ex) || fast_exact_gw(cf, T, O, I, g, x, ew)) goto done;
  for (int k = 0; k < 3; ++k) r->gx[k] = -1.0;
  r->gw[0] = r->gw[1] = -1.0;
  r->have_lqs = 0;
  if (pl->hq.enabled) {
    float sw;
    if (ref_hq_quant_w(pl, w, HOT_DT_F32, qw, &sw)) goto done;
    for (int k = 0; k < 3; ++k) {
      if (ref_hq_quant_g(pl, g, HOT_DT_F32, grans[k], seed, 1, qg, sg) ||
          ref_gemm_gx(pl, qg, sg, qw, sw, gx))
        goto done;
      r->gx[k] = ref_rel_err(gx, ex, T * I);
    }
    hot_ref_lqs_result lq;
    if (ref_lqs(pl, g, HOT_DT_F32, seed, 1, &lq)) goto done;
    r->lqs = lq.choice;
    r->have_lqs = 1;
  }
  for (int k = 0; k < 2 && pl->hla.enabled; ++k) {
    const hot_layer_plan *p = k ? pl_s : pl;
    if (!p || gw_err(p, g, x, seed, ew, gw, &r->gw[k])) goto done;
  }
  rc = 0;
done:
  free(g); free(gx); free(sg); free(gw); free(ex); free(ew);
  free(qg); free(qw);
  return rc;
}

static void put_err(FILE *f, double e) {
  if (e < 0) fprintf(f, " %9s", "-");
  else fprintf(f, " %9.4f", e);
}

/* The summary counts over every (layer, data) row. */
typedef struct {
  int rows, no_worse, gw_rows, gw_no_worse;
  double worst, gw_worst; /* largest (sample - tensor) / tensor */
} scales_sum;

/* Plans the g_w columns: x^ and g^ per tensor (layout as planned) into pl and per sample into
 * pl_s (*have_s), both under the layout per sample needs (*moved: the layer is planned flat),
 * so that they differ only in the scales (the g_x columns do not depend on the HLA layout).
 * Their specs go into *st and *ss, which the plans borrow (the caller keeps them as long as
 * the plans). Returns 0, or 2 (said). */
static int scales_plans(const hot_model *model, const bench_layer *bl, int64_t B, int64_t L,
                        hot_layer_plan *pl, hot_layer_plan *pl_s, hot_layer_spec *st,
                        hot_layer_spec *ss, int *moved, int *have_s, FILE *f) {
  const hot_layer_spec *s = &model->layers[bl->index];
  char err[512];
  *st = *s, *ss = *s;
  st->hla.g.gran = st->hla.x.gran = HOT_GRAN_TENSOR;
  ss->hla.g.gran = ss->hla.x.gran = HOT_GRAN_SAMPLE;
  if (plan_layer(st, B, L, model->recipe, HOT_ARCH_DEFAULT, bl->index, pl, err, sizeof err)) {
    fprintf(f, "%-16s %4lld %6lld %6lld %6lld  not planned: %s\n", bl->name, (long long)B,
            (long long)L, (long long)bl->O, (long long)bl->I, err);
    return 2;
  }
  *moved = pl->hla.enabled && pl->hla.layout == HOT_LAYOUT_FLAT && B > 1;
  if (*moved) {
    ss->hla.layout = st->hla.layout = HOT_LAYOUT_SAMPLE;
    if (plan_layer(st, B, L, model->recipe, HOT_ARCH_DEFAULT, bl->index, pl, err, sizeof err)) {
      fprintf(f, "%-16s %4lld %6lld %6lld %6lld  not planned under layout sample: %s\n",
              bl->name, (long long)B, (long long)L, (long long)bl->O, (long long)bl->I, err);
      return 2;
    }
  }
  *have_s = pl->hla.enabled &&
            !plan_layer(ss, B, L, model->recipe, HOT_ARCH_DEFAULT, bl->index, pl_s, err, sizeof err);
  return 0;
}

/* One row's figures into the summary. */
static void scales_count(scales_sum *t, const scale_row *r) {
  if (r->gw[0] > 0 && r->gw[1] >= 0) {
    ++t->gw_rows;
    t->gw_no_worse += r->gw[1] <= r->gw[0];
    const double d = (r->gw[1] - r->gw[0]) / r->gw[0];
    if (d > t->gw_worst) t->gw_worst = d;
  }
  if (r->gx[0] > 0) {
    ++t->rows;
    t->no_worse += r->gx[1] <= r->gx[0];
    const double d = (r->gx[1] - r->gx[0]) / r->gx[0];
    if (d > t->worst) t->worst = d;
  }
}

/* One layer's rows (one per data kind). Returns 0, or 2 when a row could not be made. */
static int scales_layer(const bench_run *run, const hot_model *model, const bench_layer *bl,
                        hot_layer_plan *pl, hot_layer_plan *pl_s, scales_sum *t, FILE *f) {
  int64_t B, L;
  scale_sizes(&run->opt, bl, &B, &L);
  int moved = 0, have_s = 0, rc = 0;
  hot_layer_spec st, ss; /* borrowed by pl and pl_s */
  if (scales_plans(model, bl, B, L, pl, pl_s, &st, &ss, &moved, &have_s, f) != 0) return 2;
  const int64_t T = pl->T, O = pl->O, I = pl->I;
  float *w = malloc((size_t)(O * I) * sizeof *w), *x = malloc((size_t)(T * I) * sizeof *x);
  if (!w || !x) {
    free(w); free(x);
    fprintf(f, "%-16s out of host memory\n", bl->name);
    return 2;
  }
  tooldata_fill_normal(w, (size_t)(O * I), run->seed, 2000u + (uint64_t)bl->index * 16u);
  tooldata_fill_normal(x, (size_t)(T * I), run->seed, 3000u + (uint64_t)bl->index * 16u);
  /* samples of different magnitudes (what per-sample scales are for): 4^u, u in [-1, 1) */
  uint64_t st_rng = run->seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(unsigned)(bl->index + 1));
  for (int64_t b = 0; b < B; ++b) {
    st_rng = st_rng * 6364136223846793005ull + 1442695040888963407ull;
    const double u = (double)(st_rng >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    const float m = (float)pow(4.0, u);
    for (int64_t i = b * L * I; i < (b + 1) * L * I; ++i) x[i] *= m;
  }
  for (int k = 0; k < KINDS; ++k) {
    scale_row r;
    const char *why = "";
    fprintf(f, "%-16s %4lld %6lld %6lld %6lld  %-10s", bl->name, (long long)B, (long long)L,
            (long long)O, (long long)I, kind_name[k]);
    if (run_kind(pl, have_s ? pl_s : NULL, w, x, k, run->seed, bl->index, &r, &why)) {
      fprintf(f, " %s\n", why);
      rc = 2;
      continue;
    }
    for (int g = 0; g < 3; ++g) put_err(f, r.gx[g]);
    fprintf(f, "  %-6s", r.have_lqs ? (r.lqs == HOT_GRAN_ROW ? "token" : plan_gran_name(r.lqs))
                                    : "-");
    put_err(f, r.gw[0]);
    put_err(f, r.gw[1]);
    fprintf(f, "%s\n", moved && r.gw[0] >= 0 ? " *" : "");
    fflush(f);
    scales_count(t, &r);
  }
  free(w);
  free(x);
  return rc;
}

int bench_scales(const bench_run *run, const hot_model *model, FILE *f) {
  if (!run || !model || !f) return 1;
  fprintf(f, "hot-bench --scales: %s (recipe %s), CPU twins, seed %llu: relative g_x error with "
          "g' scaled per tensor (all B samples), per sample and per token, LQS's pick, and the g_w "
          "error with x^, g^ per tensor and per sample (both under layout sample; * = the layer is "
          "planned flat), against fp64; x: every sample's magnitude drawn from 0.25 ... 4\n",
          run->model, run->recipe, (unsigned long long)run->seed);
  fprintf(f, "%-16s %4s %6s %6s %6s  %-10s %9s %9s %9s  %-6s %9s %10s\n", "layer", "B", "L", "O",
          "I", "data", "gx tensor", "gx sample", "gx token", "LQS", "gw tensor", "gw sample");
  int rc = 0;
  scales_sum t = {0, 0, 0, 0, 0.0, 0.0};
  hot_layer_plan *pl = malloc(sizeof *pl), *pl_s = malloc(sizeof *pl_s);
  if (!pl || !pl_s) {
    free(pl);
    free(pl_s);
    return 1;
  }
  for (int li = 0; li < run->n; ++li)
    if (scales_layer(run, model, &run->layers[li], pl, pl_s, &t, f) != 0) rc = 2;
  free(pl);
  free(pl_s);
  fprintf(f, "g_x: g' per sample <= per tensor on %d of %d (layer, data) rows; largest excess of "
          "per sample over per tensor: %.2f %%\n", t.no_worse, t.rows, 100.0 * t.worst);
  fprintf(f, "g_w: x^, g^ per sample <= per tensor on %d of %d (layer, data) rows; largest excess "
          "of per sample over per tensor: %.2f %%\n", t.gw_no_worse, t.gw_rows, 100.0 * t.gw_worst);
  return rc;
}

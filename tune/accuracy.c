/* accuracy.c — the numerical error of one variant: a save + backward of the layer on the CPU twins
 * (bit for bit what the GPU kernels compute) against the fp64 products, on the seeded data kinds
 * of hot-bench --scales (Gaussian g_y; 4 channels x20; 4 tokens x20) and on captured real tensors.
 *
 * Every variant runs as its layer (the spec's Philox layer id and seed) in a fresh context, so the
 * result of a variant does not depend on which variants ran before it or in which process: a
 * sharded sweep records exactly what a single process records.
 *
 * A recipe without a GPU path (nvfp4, o->cpu_plan) is planned for the CPU backend (plan_layer_cpu)
 * and run in a context without a forced arch; the errors are those of its CPU twins all the same.
 *
 * Size: B = --batch, else the spec's batch capped at 4, lowered (not below 1) until T*O*I fits
 * --check-macs; the tokens per sample stay the layer's (HLA's blocks depend on them). The fp64
 * products are computed once per layer and data kind and kept for the next variants, and so are
 * the seeded x, w and g_y (the kinds differ only in g_y's outliers): each variant and kind starts
 * from a copy instead of drawing the normals again. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hot_tooldata.h"
#include "fast.h"
#include "ref.h"
#include "tune.h"

int tune_plan(const hot_model *m, const tune_opts *o, const hot_layer_spec *s, int64_t B,
              int64_t L, int layer, hot_layer_plan *pl, char *err, size_t errlen) {
  if (o->cpu_plan) return plan_layer_cpu(s, B, L, m->recipe, layer, pl, err, errlen);
  hot_arch arch = m->archs[0];
  if (o->plan_arch) plan_arch_parse(o->plan_arch, &arch);
  return plan_layer(s, B, L, m->recipe, arch, layer, pl, err, errlen);
}

/* The fp64 references of the last layer and size, per data kind. */
static struct {
  int layer;
  int64_t T, O, I;
  char capture[512];
  int have[HOT_TUNE_DATA_COUNT];
  double *ex[HOT_TUNE_DATA_COUNT], *ew[HOT_TUNE_DATA_COUNT];
} refs = {.layer = -1};

/* The --capture file, read once (tune_accuracy_load_capture or the first variant that needs
 * it) and kept until tune_accuracy_free_capture. */
static hot_capture g_capture;

int tune_accuracy_load_capture(const char *path, char *err, size_t errlen) {
  capture_free(&g_capture);
  if (capture_read(path, &g_capture, err, errlen) != 0) {
    capture_free(&g_capture);
    return -1;
  }
  return 0;
}

const hot_capture *tune_accuracy_capture(void) { return g_capture.x ? &g_capture : NULL; }

void tune_accuracy_free_capture(void) { capture_free(&g_capture); }

/* The seeded normals of the last layer and size (tooldata_make at f32: before the outliers of a
 * kind and the rounding to the layer's dtype), kept for the next kind and variant. */
static struct {
  int layer;
  uint64_t seed;
  tooldata d; /* d.x == NULL: none */
} seeded = {.layer = -1};

static void refs_reset(void) {
  for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) {
    free(refs.ex[k]);
    free(refs.ew[k]);
  }
  memset(&refs, 0, sizeof refs);
  refs.layer = -1;
}

void tune_accuracy_reset(void) {
  refs_reset();
  tooldata_free(&seeded.d);
  seeded.layer = -1;
}

/* b = a malloc'd copy of the seeded normals of (layer, T, O, I, seed), drawn when they are not
 * the kept ones. 0, or -1 on out-of-memory (b then holds nothing). */
static int seeded_copy(int layer, int64_t T, int64_t O, int64_t I, uint64_t seed, tooldata *b) {
  tooldata *k = &seeded.d;
  if (!k->x || seeded.layer != layer || seeded.seed != seed || k->T != T || k->O != O || k->I != I) {
    tooldata_free(k);
    seeded.layer = -1;
    if (tooldata_make(k, T, O, I, seed, layer, HOT_DT_F32) != 0) return -1;
    seeded.layer = layer;
    seeded.seed = seed;
  }
  memset(b, 0, sizeof *b);
  b->T = T, b->O = O, b->I = I, b->dt = HOT_DT_F32;
  b->x = malloc((size_t)(T * I) * sizeof *b->x);
  b->w = malloc((size_t)(O * I) * sizeof *b->w);
  b->gy = malloc((size_t)(T * O) * sizeof *b->gy);
  if (!b->x || !b->w || !b->gy) {
    tooldata_free(b);
    return -1;
  }
  memcpy(b->x, k->x, (size_t)(T * I) * sizeof *b->x);
  memcpy(b->w, k->w, (size_t)(O * I) * sizeof *b->w);
  memcpy(b->gy, k->gy, (size_t)(T * O) * sizeof *b->gy);
  return 0;
}

/* 2-adic valuation of v > 0, capped at 11: what decides, for every p <= 1024, whether p divides
 * v (layout auto, pad = false), and paper_code's p (the largest power of two dividing v; > 1024
 * refused). */
static int v2_capped(int64_t v) {
  int k = 0;
  while (k < 11 && v % 2 == 0) v /= 2, ++k;
  return k;
}

/* The size of the seeded data of layer `layer` of m, the same for every variant (so that their
 * errors compare): B = --batch, else the spec's batch capped at 4, lowered until B*L*O*I <=
 * --check-macs. Still over it at B = 1, L is cut too: to the largest L' < L with the same
 * v2_capped as L (so every variant's blocking and paper_code's p stay those at L) and
 * L'*O*I <= --check-macs, else to the smallest such L' (2^v2_capped(L): the cap cannot be met
 * without changing the blocking, the work is cut as far as it can be), provided the plan of the
 * layer as written at L' keeps its p, layout and rank; else L stays. */
static void sizes(const hot_model *m, int layer, const tune_opts *o, int64_t *B, int64_t *L) {
  const hot_layer_spec *s = &m->layers[layer];
  *L = s->tokens ? s->tokens : m->tokens;
  *B = o->batch ? o->batch : (m->batch < 4 ? m->batch : 4);
  const double oi = (double)s->out_features * (double)s->in_features;
  const double per = (double)(*L) * oi;
  while (*B > 1 && (double)(*B) * per > o->check_macs) --*B;
  if (*B > 1 || o->batch || per <= o->check_macs) return;
  const int v = v2_capped(*L);
  const int64_t step = (int64_t)1 << v, cap = (int64_t)(o->check_macs / oi);
  /* candidates k * step: k odd below 2^11, any k at 2^11 (v2 >= 11 all count as 11) */
  int64_t k = (cap < step ? 1 : cap / step);
  if (v < 11 && k % 2 == 0) --k;
  if (k < 1 || k * step >= *L) return;
  hot_layer_plan *p0 = malloc(sizeof *p0), *p1 = malloc(sizeof *p1);
  char err[256];
  const int64_t lc = k * step;
  if (p0 && p1 && tune_plan(m, o, s, 1, *L, layer, p0, err, sizeof err) == 0 &&
      tune_plan(m, o, s, 1, lc, layer, p1, err, sizeof err) == 0 &&
      p1->hla.enabled == p0->hla.enabled && p1->hla.block == p0->hla.block &&
      p1->hla.layout == p0->hla.layout && p1->hla.rank == p0->hla.rank &&
      p1->hq.block == p0->hq.block)
    *L = lc;
  free(p0);
  free(p1);
}

/* One input set: the tensors (fp32 values the layer reads, 16-bit copies for bf16/f16 layers)
 * and the samples x tokens they hold. */
typedef struct {
  int64_t B, L;
  tooldata b;
} data_set;

/* The plans of layer `layer` of m (as written) at B1 x L1 and B2 x L2 block alike: the same HQ
 * block, the same HLA on/off, p, layout and rank. 1, or 0 (also when either does not plan). */
static int same_blocking(const hot_model *m, int layer, const tune_opts *o, int64_t B1, int64_t L1,
                         int64_t B2, int64_t L2) {
  const hot_layer_spec *s = &m->layers[layer];
  hot_layer_plan *p0 = malloc(sizeof *p0), *p1 = malloc(sizeof *p1);
  char err[256];
  int same = p0 && p1 && tune_plan(m, o, s, B1, L1, layer, p0, err, sizeof err) == 0 &&
             tune_plan(m, o, s, B2, L2, layer, p1, err, sizeof err) == 0 &&
             p1->hla.enabled == p0->hla.enabled && p1->hla.block == p0->hla.block &&
             p1->hla.layout == p0->hla.layout && p1->hla.rank == p0->hla.rank &&
             p1->hq.block == p0->hq.block;
  free(p0);
  free(p1);
  return same;
}

int tune_capture_fits(const hot_model *m, int layer, const tune_opts *o, const hot_capture *c,
                      char *why, size_t whylen) {
  const hot_layer_spec *s = &m->layers[layer];
  const int64_t L = s->tokens ? s->tokens : m->tokens;
  if (c->O != s->out_features || c->I != s->in_features) {
    fileio_msgf(why, whylen, "captured O x I = %lld x %lld, layer %s is %lld x %lld",
             (long long)c->O, (long long)c->I, s->name, (long long)s->out_features,
             (long long)s->in_features);
    return 0;
  }
  /* the rule of the seeded data's size (sizes): any B, an L with the layer's blocking */
  if (v2_capped(c->L) != v2_capped(L) ||
      !same_blocking(m, layer, o, c->B, c->L, m->batch, L)) {
    fileio_msgf(why, whylen, "captured B x L = %lld x %lld blocks differently from layer %s at "
             "B x L = %lld x %lld (HQ/HLA blocks, layout or rank): its errors would be another "
             "layer's", (long long)c->B, (long long)c->L, s->name, (long long)m->batch,
             (long long)L);
    return 0;
  }
  return 1;
}

/* The seeded data of `kind` (0..2) for the layer, or the capture (kind HOT_TUNE_CAPTURE). Returns
 * 0, 1 when the capture does not fit the layer (why in err), -1 on out-of-memory. */
static int make_data(const hot_model *m, int layer, const tune_opts *o, int kind, data_set *d,
                     char *err, size_t errlen) {
  const hot_layer_spec *s = &m->layers[layer];
  memset(d, 0, sizeof *d);
  tooldata *b = &d->b;
  if (kind == HOT_TUNE_CAPTURE) {
    if (!g_capture.x) { /* not loaded up front (tune_accuracy_load_capture): read it now */
      if (capture_read(o->capture, &g_capture, err, errlen) != 0) {
        capture_free(&g_capture);
        return 1;
      }
    }
    const hot_capture *c = &g_capture;
    char why[300];
    if (!tune_capture_fits(m, layer, o, c, why, sizeof why)) {
      fileio_msgf(err, errlen, "%s: %s", o->capture, why);
      return 1;
    }
    d->B = c->B;
    d->L = c->L;
    b->T = c->T;
    b->O = c->O;
    b->I = c->I;
    /* copies: the capture stays loaded for the next variant */
    b->x = malloc((size_t)(c->T * c->I) * sizeof *b->x);
    b->w = malloc((size_t)(c->O * c->I) * sizeof *b->w);
    b->gy = malloc((size_t)(c->T * c->O) * sizeof *b->gy);
    if (!b->x || !b->w || !b->gy) {
      tooldata_free(b);
      return -1;
    }
    memcpy(b->x, c->x, (size_t)(c->T * c->I) * sizeof *b->x);
    memcpy(b->w, c->w, (size_t)(c->O * c->I) * sizeof *b->w);
    memcpy(b->gy, c->g_y, (size_t)(c->T * c->O) * sizeof *b->gy);
  } else {
    sizes(m, layer, o, &d->B, &d->L);
    if (seeded_copy(layer, d->B * d->L, s->out_features, s->in_features, m->seed, b) != 0)
      return -1;
    tooldata_outliers(b->gy, b->T, b->O, kind); /* then rounded to the layer's dtype, below */
  }
  b->dt = s->dtype;
  if (tooldata_round_to_dtype(b->x, (size_t)(b->T * b->I), b->dt, &b->x16) != 0 ||
      tooldata_round_to_dtype(b->w, (size_t)(b->O * b->I), b->dt, &b->w16) != 0 ||
      tooldata_round_to_dtype(b->gy, (size_t)(b->T * b->O), b->dt, &b->gy16) != 0) {
    tooldata_free(b);
    return -1;
  }
  return 0;
}

/* The fp64 references of d into refs (kept while layer, size and capture stay the same). */
static int reference(int layer, const tune_opts *o, int kind, const tooldata *d) {
  const char *cap = o->capture ? o->capture : "";
  if (refs.layer != layer || refs.T != d->T || refs.O != d->O || refs.I != d->I ||
      strcmp(refs.capture, cap) != 0) {
    refs_reset();
    refs.layer = layer;
    refs.T = d->T;
    refs.O = d->O;
    refs.I = d->I;
    snprintf(refs.capture, sizeof refs.capture, "%s", cap);
  }
  if (refs.have[kind]) return 0;
  refs.ex[kind] = malloc((size_t)(d->T * d->I) * sizeof(double));
  refs.ew[kind] = malloc((size_t)(d->O * d->I) * sizeof(double));
  if (!refs.ex[kind] || !refs.ew[kind] ||
      fast_exact_gx(tools_fast_config(NULL, 0), d->T, d->O, d->I, d->gy, d->w,
                    refs.ex[kind]) != 0 ||
      fast_exact_gw(tools_fast_config(NULL, 0), d->T, d->O, d->I, d->gy, d->x,
                    refs.ew[kind]) != 0)
    return -1;
  refs.have[kind] = 1;
  return 0;
}

/* One data kind: save, calibrate (scale auto), backward at step 1; errors into row. Returns 0, 1
 * when the layer refused (status/note set), -1 on out-of-memory. */
static int run_kind(const hot_model *m, int layer, const hot_layer_spec *s, const tune_opts *o,
                    int kind, hot_tune_row *row, char *err, size_t errlen) {
  data_set d;
  char why[300] = "";
  int rc = make_data(m, layer, o, kind, &d, why, sizeof why);
  if (rc < 0) {
    fileio_msgf(err, errlen, "out of memory making the data of layer %s", s->name);
    return -1;
  }
  if (rc > 0) { /* a capture that cannot serve: the row says so, the seeded kinds still count */
    fileio_msgf(row->note, sizeof row->note, "capture not used: %s", why);
    return 0;
  }
  hot_options opt;
  hot_options_init(&opt);
  opt.backend = HOT_BACKEND_CPU;
  /* plans (and refusals) for the sweep's arch, nothing is compiled; a CPU-planned recipe
   * (nvfp4) without a forced arch, so that the context plans it for the CPU backend */
  opt.arch = o->cpu_plan ? NULL : o->plan_arch;
  opt.disk_cache = -1;
  opt.seed_set = 1;
  opt.seed = m->seed;
  hot_ctx *ctx = NULL;
  hot_layer *l = NULL;
  const tooldata *b = &d.b;
  float *gx = malloc((size_t)(b->T * b->I) * sizeof *gx), *gw = malloc((size_t)(b->O * b->I) * sizeof *gw);
  hot_status st = gx && gw ? hot_ctx_create(&ctx, &opt) : HOT_ERR_NOMEM;
  if (st == HOT_OK)
    st = tools_layer_create(ctx, s, d.B, d.L, m->recipe, layer, &l);
  const char *what = "layer";
  if (st == HOT_OK) {
    what = "save";
    st = hot_layer_save(l, tooldata_in(b, b->x), b->dt, NULL, NULL);
  }
  hot_layer_info info;
  if (st == HOT_OK && hot_layer_get_info(l, &info) == HOT_OK && info.gran_auto) {
    what = "calibrate";
    st = hot_layer_calibrate(l, tooldata_in(b, b->gy), b->dt, 0, NULL);
  }
  if (st == HOT_OK) {
    what = "backward";
    st = hot_layer_backward(l, tooldata_in(b, b->gy), tooldata_in(b, b->w), b->dt, NULL, gx, gw,
                            NULL, 1, NULL);
  }
  int out = 0;
  if (st == HOT_ERR_NOMEM) {
    fileio_msgf(err, errlen, "out of memory running layer %s", s->name);
    out = -1;
  } else if (st != HOT_OK) {
    snprintf(row->status, sizeof row->status, "%s", st == HOT_ERR_PLAN ? "plan_refused" : "failed");
    fileio_msgf(row->note, sizeof row->note, "%s: %s: %s", what, hot_status_name(st),
             hot_errmsg(ctx));
    out = 1;
  } else if (reference(layer, o, kind, &d.b) != 0) {
    fileio_msgf(err, errlen, "out of memory computing the fp64 reference of layer %s", s->name);
    out = -1;
  } else {
    row->gx_err[kind] = ref_rel_err(gx, refs.ex[kind], b->T * b->I);
    row->gw_err[kind] = ref_rel_err(gw, refs.ew[kind], b->O * b->I);
    if (kind == HOT_TUNE_GAUSS && !row->note[0]) /* the seeded data's size, for the reader */
      fileio_msgf(row->note, sizeof row->note, "seeded data B=%lld L=%lld", (long long)d.B,
               (long long)d.L);
    if (kind == HOT_TUNE_CAPTURE) {
      const char *base = strrchr(o->capture, '/');
      snprintf(row->capture, sizeof row->capture, "%s", base ? base + 1 : o->capture);
      /* the capture's own shape, beside the seeded data's */
      size_t used = strlen(row->note);
      if (used < sizeof row->note)
        fileio_msgf(row->note + used, sizeof row->note - used, "%scapture B=%lld L=%lld",
                 used ? "; " : "", (long long)d.B, (long long)d.L);
    }
  }
  hot_ctx_destroy(ctx);
  free(gx);
  free(gw);
  tooldata_free(&d.b);
  return out;
}

int tune_accuracy(const hot_model *m, int layer, const hot_layer_spec *s, const tune_opts *o,
                  hot_tune_row *row, char *err, size_t errlen) {
  snprintf(row->status, sizeof row->status, "ok");
  for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) {
    if (k == HOT_TUNE_CAPTURE && !o->capture) continue;
    int rc = run_kind(m, layer, s, o, k, row, err, errlen);
    if (rc < 0) return -1;
    if (rc > 0) return 0; /* refused: the same for every kind */
  }
  return 0;
}

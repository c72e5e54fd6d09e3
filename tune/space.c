/* space.c — the variant list of a sweep: the axes (the spec's hot.sweep, else a default space),
 * their cartesian product in a fixed order, and shards (variant index modulo the shard count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h" /* spec_layer_name */
#include "tune.h"

/* Default spaces. Accuracy: what a user weighs against memory and speed — HQ block b, HLA keep
 * and the scale granularity of g'. Speed: the GEMM tiles and pipeline depth of both products,
 * restricted to what the arch's GEMM path accepts (plan.c refuses the rest). */
static const char *const acc_b[] = {"8", "16", "32", "64"};
static const char *const acc_keep[] = {"12", "25", "50"};
static const char *const acc_scale[] = {"tensor", "sample", "token"};
/* Recipe nvfp4 fixes HQ's block and every scale (CONTRACT.md 20.8): its default space is HLA's
 * token block p x keep instead. */
static const char *const acc_p[] = {"32", "64", "128"};
static const char *const mn_small[] = {"64", "128"};
static const char *const n_wide[] = {"128", "256"};
static const char *const stages[] = {"3", "4"};
/* The tile warps_n values as text (the path axis takes the GEMM-path table's values). */
static const char *const k_small[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8"};

static void axis(tune_axis *a, const char *field, const char *const *v, int n) {
  memset(a, 0, sizeof *a);
  snprintf(a->field, sizeof a->field, "%s", field);
  a->n = n;
  for (int i = 0; i < n; ++i) a->values[i] = v[i];
}

/* The path axis of `arch`: the warps_n of each warpgroup path of the GEMM-path table the arch
 * has (on an arch with wgmma and the TMA: 1 = the cp.async wgmma GEMM, 2 = the TMA GEMM;
 * docs/gemm-paths.md). Returns how many (0: the arch has no warpgroup path). */
static int path_axis(hot_arch arch, const char **v) {
  const hot_arch_caps *caps = plan_arch_caps(arch);
  int n = 0;
  for (int i = 0; i < HOT_GEMM_PATH_COUNT; ++i) {
    const hot_gemm_path_info *g = plan_gemm_path_info((hot_gemm_path)i);
    if (g->warps == HOT_WARPS_WARPGROUP && plan_gemm_path_available(g, caps) && g->warps_n >= 0 &&
        g->warps_n < (int)(sizeof k_small / sizeof k_small[0]))
      v[n++] = k_small[g->warps_n];
  }
  return n;
}

int tune_axes(const hot_model *m, hot_field_class cls, hot_arch arch, tune_axis *axes, int *n,
              char *err, size_t errlen) {
  *n = 0;
  for (int i = 0; i < m->n_sweep; ++i) {
    const hot_field *f = fields_find(m->sweep[i].field);
    if (!f) {
      fileio_msgf(err, errlen, "%s: sweep axis '%s' is not a field hot-tune knows", m->file,
               m->sweep[i].field);
      return -1;
    }
    if (fields_class(f) != cls) continue;
    tune_axis *a = &axes[(*n)++];
    memset(a, 0, sizeof *a);
    snprintf(a->field, sizeof a->field, "%s", m->sweep[i].field);
    a->n = m->sweep[i].n;
    for (int k = 0; k < a->n; ++k) a->values[k] = m->sweep[i].values[k];
  }
  if (*n) return 0;
  const char *paths[HOT_GEMM_PATH_COUNT];
  const int n_paths = cls == HOT_FIELD_ACCURACY ? 0 : path_axis(arch, paths);
  if (cls == HOT_FIELD_ACCURACY && m->recipe == HOT_RECIPE_NVFP4) {
    axis(&axes[(*n)++], "hla.block", acc_p, 3);
    axis(&axes[(*n)++], "hla.keep", acc_keep, 3);
  } else if (cls == HOT_FIELD_ACCURACY) {
    axis(&axes[(*n)++], "hq.block", acc_b, 4);
    axis(&axes[(*n)++], "hla.keep", acc_keep, 3);
    axis(&axes[(*n)++], "hq.scale", acc_scale, 3);
  } else if (n_paths > 0) {
    axis(&axes[(*n)++], "tile_gx.tile_m", mn_small, 2);
    axis(&axes[(*n)++], "tile_gx.tile_n", n_wide, 2);
    axis(&axes[(*n)++], "tile_gx.stages", stages, 2);
    axis(&axes[(*n)++], "tile_gw.tile_n", n_wide, 2);
    axis(&axes[(*n)++], "tile_gx.warps_n", paths, n_paths);
    axis(&axes[(*n)++], "tile_gw.warps_n", paths, n_paths);
  } else {
    axis(&axes[(*n)++], "tile_gx.tile_m", mn_small, 2);
    axis(&axes[(*n)++], "tile_gx.tile_n", mn_small, 2);
    axis(&axes[(*n)++], "tile_gx.stages", stages, 2);
    axis(&axes[(*n)++], "tile_gw.tile_m", mn_small, 2);
    axis(&axes[(*n)++], "tile_gw.tile_n", mn_small, 2);
  }
  return 0;
}

/* The variants of one layer and class: 1 (the layer as written) + the product of the axis sizes,
 * computed before anything is built; any count over TUNE_MAX_VARIANTS is TUNE_MAX_VARIANTS + 1
 * (no overflow, whatever the axes). */
static int64_t space_size(const tune_axis *axes, int na) {
  int64_t p = 1;
  for (int a = 0; a < na; ++a) {
    if (axes[a].n <= 0) return 1; /* an empty axis: only the layer as written */
    if (p > TUNE_MAX_VARIANTS / axes[a].n) return TUNE_MAX_VARIANTS + 1;
    p *= axes[a].n;
  }
  return p + 1 > TUNE_MAX_VARIANTS ? TUNE_MAX_VARIANTS + 1 : p + 1;
}

/* Appends the product of axes[0..na) for one layer and class to *list. */
static int product(const tune_axis *axes, int na, int layer, hot_field_class cls,
                   tune_variant **list, int *n, int *cap, char *err, size_t errlen) {
  int idx[HOT_MAX_SWEEP * 4] = {0};
  int as_written = 1; /* first the layer as the spec writes it (variant ""): the reference */
  for (;;) {
    if (*n == *cap) {
      int nc = *cap ? *cap * 2 : 64;
      tune_variant *nl = realloc(*list, (size_t)nc * sizeof **list);
      if (!nl) {
        fileio_msgf(err, errlen, "out of memory listing the variants");
        return -1;
      }
      *list = nl;
      *cap = nc;
    }
    tune_variant *v = &(*list)[*n];
    memset(v, 0, sizeof *v);
    v->layer = layer;
    v->cls = cls;
    v->index = *n;
    size_t used = 0;
    for (int a = 0; a < na && !as_written; ++a) {
      int w = snprintf(v->assign + used, sizeof v->assign - used, "%s%s=%s", a ? ";" : "",
                       axes[a].field, axes[a].values[idx[a]]);
      if (w < 0 || (size_t)w >= sizeof v->assign - used) {
        fileio_msgf(err, errlen, "variant text longer than %d bytes", HOT_TUNE_TEXT - 1);
        return -1;
      }
      used += (size_t)w;
    }
    ++*n;
    if (as_written) {
      as_written = 0;
      continue;
    }
    int a = na - 1; /* odometer: the last axis moves fastest */
    while (a >= 0 && ++idx[a] == axes[a].n) idx[a--] = 0;
    if (a < 0) return 0;
  }
}

/* Rows are per shape and numerics (the database key): a layer equal in both to an earlier one
 * would only rewrite its rows, so it is swept once. Returns that earlier layer, or -1. */
static int duplicate_of(const hot_model *m, const tune_opts *o, int l) {
  for (int e = 0; e < l; ++e) {
    if (o->layer && strcmp(o->layer, m->layers[e].name) != 0) continue;
    const hot_layer_spec *a = &m->layers[e], *b = &m->layers[l];
    char ba[HOT_TUNE_TEXT], bb[HOT_TUNE_TEXT];
    if ((a->tokens ? a->tokens : m->tokens) == (b->tokens ? b->tokens : m->tokens) &&
        a->in_features == b->in_features && a->out_features == b->out_features &&
        a->dtype == b->dtype && fields_canonical(a, HOT_FIELD_ACCURACY, ba, sizeof ba) == 0 &&
        fields_canonical(b, HOT_FIELD_ACCURACY, bb, sizeof bb) == 0 && strcmp(ba, bb) == 0)
      return e;
  }
  return -1;
}

/* Recipe nvfp4: every value of an accuracy axis applied alone to layer l must keep what the
 * format fixes (plan_nvfp4_check); a sweep over such a knob could only record refusals, so it is
 * one error naming the axis and value. Returns 0, or -1 with the message. */
static int nvfp4_axes_check(const hot_model *m, int l, const tune_axis *axes, int na, char *err,
                            size_t errlen) {
  for (int a = 0; a < na; ++a)
    for (int k = 0; k < axes[a].n; ++k) {
      hot_layer_spec s = m->layers[l];
      char assign[HOT_TUNE_TEXT], e[300];
      fileio_msgf(assign, sizeof assign, "%s=%s", axes[a].field, axes[a].values[k]);
      if (fields_apply(&s, assign, e, sizeof e) != 0) continue; /* tune_variant_spec says it */
      if (plan_nvfp4_check(&s, e, sizeof e) != 0) {
        fileio_msgf(err, errlen, "%s: sweep axis %s (layer %s): %s: the format fixes it, take "
                    "it out of hot.sweep", m->file, assign, s.name, e);
        return -1;
      }
    }
  return 0;
}

/* Appends layer l's variants of the selected kinds to *out. The layer's count (both kinds) is
 * checked against TUNE_MAX_VARIANTS before a variant is built. Returns 0, or -1 with a message. */
static int layer_variants(const hot_model *m, const tune_opts *o, hot_arch arch, int l,
                          tune_variant **out, int *n, int *cap, char *err, size_t errlen) {
  tune_axis axes[2][HOT_MAX_SWEEP * 4];
  int na[2] = {0, 0};
  int64_t total = 0;
  if (m->n_sweep > HOT_MAX_SWEEP * 4) {
    fileio_msgf(err, errlen, "%s: %d sweep axes, at most %d", m->file, m->n_sweep, HOT_MAX_SWEEP * 4);
    return -1;
  }
  for (int c = 0; c < 2; ++c) {
    const hot_field_class cls = c == 0 ? HOT_FIELD_SPEED : HOT_FIELD_ACCURACY;
    if (!(o->kinds & (c == 0 ? TUNE_SPEED : TUNE_ACCURACY))) continue;
    if (tune_axes(m, cls, arch, axes[c], &na[c], err, errlen) != 0) return -1;
    if (cls == HOT_FIELD_ACCURACY && m->recipe == HOT_RECIPE_NVFP4 &&
        nvfp4_axes_check(m, l, axes[c], na[c], err, errlen) != 0)
      return -1;
    total += space_size(axes[c], na[c]);
  }
  if (total > TUNE_MAX_VARIANTS) {
    fileio_msgf(err, errlen, "layer %s: the space has %s%lld variants, at most %d per layer: fewer "
             "axes or values (or --kind speed / accuracy alone)", m->layers[l].name,
             total > 2 * (int64_t)TUNE_MAX_VARIANTS ? "more than " : "",
             (long long)(total > 2 * (int64_t)TUNE_MAX_VARIANTS ? TUNE_MAX_VARIANTS : total),
             TUNE_MAX_VARIANTS);
    return -1;
  }
  if ((int64_t)*n + total > INT32_MAX) {
    fileio_msgf(err, errlen, "the sweep has more than %d variants in all: sweep fewer layers "
             "(--layer)", INT32_MAX);
    return -1;
  }
  for (int c = 0; c < 2; ++c) {
    const hot_field_class cls = c == 0 ? HOT_FIELD_SPEED : HOT_FIELD_ACCURACY;
    if (!(o->kinds & (c == 0 ? TUNE_SPEED : TUNE_ACCURACY))) continue;
    if (product(axes[c], na[c], l, cls, out, n, cap, err, errlen) != 0) return -1;
  }
  return 0;
}

int tune_space(const hot_model *m, const tune_opts *o, hot_arch arch, tune_variant **out,
               int *n, char *err, size_t errlen) {
  *out = NULL;
  *n = 0;
  int cap = 0, found = 0;
  for (int l = 0; l < m->n_layers; ++l) {
    if (o->layer && strcmp(o->layer, m->layers[l].name) != 0) continue;
    found = 1;
    int dup = duplicate_of(m, o, l);
    if (dup >= 0) {
      diag_fprintf(stderr, "hot-tune: layer %s has the shape and numerics of layer %s: its rows are %s's\n",
              m->layers[l].name, m->layers[dup].name, m->layers[dup].name);
      continue;
    }
    if (layer_variants(m, o, arch, l, out, n, &cap, err, errlen) != 0) {
      free(*out);
      *out = NULL;
      *n = 0;
      return -1;
    }
  }
  if (!found) {
    char names[HOT_MSG_MAX];
    fileio_msgf(err, errlen, "%s has no layer '%s' (layers: %s)", m->file, o->layer,
                diag_names(names, sizeof names, m->n_layers, spec_layer_name, m));
    return -1;
  }
  if (*n == 0) {
    fileio_msgf(err, errlen, "empty space: no variant to try (kinds: %s)",
             o->kinds == TUNE_SPEED ? "speed" : o->kinds == TUNE_ACCURACY ? "accuracy" : "none");
    return -1;
  }
  return 0;
}

int tune_variant_spec(const hot_model *m, const tune_variant *v, hot_layer_spec *out, char *err,
                      size_t errlen) {
  *out = m->layers[v->layer];
  char e[300];
  if (fields_apply(out, v->assign, e, sizeof e) != 0) {
    fileio_msgf(err, errlen, "layer %s: %s", out->name, e);
    return -1;
  }
  return 0;
}

/* layer.c — layers: from a spec file or a C description, planned for the context's arch;
 * argument checks of every per-step call; the JIT (emit_layer -> kernel cache, exactly as
 * hot-gen --compile does, so caches filled by hot-gen are hits here), whose binaries are handed
 * down to the backend (backend.h load); dispatch to the backend. Calls ctx.c (the kernel cache)
 * and the backend's table; nothing calls back. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "fileio.h"
#include "hot_internal.h"
#include "spec.h"

/* Checks a layer handle at the start of a public call and clears its context's message. */
static hot_status enter(const hot_layer *layer, const char *fn) {
  if (!layer) return HOT_ERR_INVALID; /* no context to hold a message */
  if (layer->magic == HOT_LAYER_DEAD)
    return ctx_fail(layer->ctx, HOT_ERR_MISUSE, "%s: layer '%s' was destroyed", fn,
                    layer->spec.name);
  if (layer->magic != HOT_LAYER_LIVE) return HOT_ERR_INVALID; /* not a layer handle */
  ctx_clear(layer->ctx);
  return HOT_OK;
}

static hot_status enter_ctx(hot_ctx *ctx, const char *fn) {
  if (!ctx) return HOT_ERR_INVALID;
  ctx_clear(ctx);
  if (ctx->failed)
    return ctx_fail(ctx, HOT_ERR_MISUSE, "%s: the context failed to initialise (%s)", fn,
                    ctx->fallback_reason);
  return HOT_OK;
}

/* ---- creation ---------------------------------------------------------------------------- */

/* Every enum of a layer description inside its range, else HOT_ERR_INVALID naming the field. */
static hot_status check_enums(hot_ctx *ctx, const hot_layer_spec *s, hot_recipe recipe) {
  char err[200];
  if (fields_check_enums(s, recipe, err, sizeof err) != 0) /* gen/field_list.h's every member */
    return ctx_fail(ctx, HOT_ERR_INVALID, "layer '%.*s': %s",
                    (int)utf8_complete(s->name, strnlen(s->name, HOT_NAME_MAX - 1)), s->name, err);
  return HOT_OK;
}

/* hot_layer_create's recipe (hot.h): every field the recipes set differently that the caller
 * left at the project default (plan_spec_defaults(.., HOT_RECIPE_HOT)) takes the recipe's value;
 * a field set to anything else is the caller's and stays. So plan_spec_defaults(&s, HOT_RECIPE_HOT)
 * with recipe R plans exactly like plan_spec_defaults(&s, R). */
static void apply_recipe(hot_layer_spec *s, hot_recipe recipe) {
  fields_apply_recipe(s, recipe); /* every member of gen/field_list.h */
}

/* Plans a new layer from *spec and links it into ctx. */
static hot_status layer_new(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                            int64_t tokens, hot_recipe recipe, int layer_id, uint64_t seed,
                            hot_layer **out) {
  if (batch < 1 || tokens < 1)
    return ctx_fail(ctx, HOT_ERR_SHAPE, "layer '%s': batch and tokens must be >= 1 (got %lld, %lld)",
                    spec->name, (long long)batch, (long long)tokens);
  if (spec->in_features < 1 || spec->out_features < 1)
    return ctx_fail(ctx, HOT_ERR_SHAPE,
                    "layer '%s': in_features and out_features must be >= 1 (got %lld, %lld)",
                    spec->name, (long long)spec->in_features, (long long)spec->out_features);
  hot_status st = check_enums(ctx, spec, recipe);
  if (st != HOT_OK) return st;
  hot_layer *l = calloc(1, sizeof *l);
  hot_layer_plan *pl = malloc(sizeof *pl);
  if (!l || !pl) {
    free(l);
    free(pl);
    return ctx_fail(ctx, HOT_ERR_NOMEM, "out of memory");
  }
  l->spec = *spec;
  utf8_cut(l->spec.name, HOT_NAME_MAX);
  char err[512];
  /* the tuned tiles (tuned.h) where a kernel will run: the CUDA backend or a forced arch */
  if (!ctx->tuned && (ctx->backend == HOT_BACKEND_CUDA || ctx->arch_known) &&
      (ctx->tuned = calloc(1, sizeof *ctx->tuned)) != NULL) {
    char db[1100] = "";
    if (!ctx->env.tune_db && ctx->cache_dir) snprintf(db, sizeof db, "%s/tune.db", ctx->cache_dir);
    tuned_open(ctx->tuned, &ctx->env, *db ? db : NULL);
  }
  /* recipe nvfp4 has GPU kernels for sm_120a only: the CPU backend without a forced arch plans
   * it for itself (plan_layer_cpu, no tuned tiles: they would tune no kernel); a forced arch plans
   * its GPU plan, which the CPU backend runs with the same bits */
  const int cpu_only = recipe == HOT_RECIPE_NVFP4 && ctx->backend == HOT_BACKEND_CPU &&
                       !ctx->arch_known;
  if (cpu_only) snprintf(l->tiles_origin, sizeof l->tiles_origin, "default");
  if (cpu_only ? plan_layer_cpu(&l->spec, batch, tokens, recipe, layer_id, pl, err, sizeof err)
               : tuned_plan_layer(ctx->tuned, ctx->device_name, &l->spec, batch, tokens, recipe,
                                  ctx->arch, layer_id, &l->spec, pl, l->tiles_origin,
                                  sizeof l->tiles_origin, err, sizeof err) != 0) {
    free(l);
    free(pl);
    return ctx_fail(ctx, HOT_ERR_PLAN, "layer '%s': %s (planning for %s)", spec->name, err,
                    cpu_only ? "the CPU backend" : plan_arch_caps(ctx->arch)->name);
  }
  l->magic = HOT_LAYER_LIVE;
  l->ctx = ctx;
  l->plan = pl;
  l->saved_bytes = layer_saved_bytes(pl);
  l->seed = seed;
  l->gran_auto = pl->hq.enabled && pl->hq.g.gran == HOT_GRAN_AUTO;
  /* auto: LQS's coarse candidate (per sample; per tensor when B = 1) until calibrated */
  l->gran = pl->hq.g.gran == HOT_GRAN_AUTO ? plan_lqs_coarse(pl) : pl->hq.g.gran;
  if ((st = ctx->ops->layer_init(l)) != HOT_OK) {
    free(l);
    free(pl);
    return st;
  }
  l->next = ctx->layers;
  ctx->layers = l;
  *out = l;
  return HOT_OK;
}

hot_status hot_layer_create(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                            int64_t tokens, hot_recipe recipe, hot_layer **out) {
  if (out) *out = NULL;
  hot_status st = enter_ctx(ctx, "hot_layer_create");
  if (st) return st;
  if (!spec || !out)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_create: %s is NULL", !spec ? "spec" : "out");
  hot_layer_spec own = *spec;
  utf8_cut(own.name, HOT_NAME_MAX);
  if ((st = check_enums(ctx, &own, recipe)) != HOT_OK) return st;
  apply_recipe(&own, recipe);
  st = layer_new(ctx, &own, batch, tokens, recipe, ctx->next_layer_id, ctx->seed, out);
  if (st == HOT_OK) ctx->next_layer_id++;
  return st;
}

/* hot_layer_create's checks and recipe rule on a copy of *spec, then a layer with the given
 * Philox layer id and key (the two public paths with a caller's stream identity below). */
static hot_status create_with_stream(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                     int64_t tokens, hot_recipe recipe, int layer_id,
                                     uint64_t key, hot_layer **out) {
  hot_layer_spec own = *spec;
  utf8_cut(own.name, HOT_NAME_MAX);
  hot_status st = check_enums(ctx, &own, recipe);
  if (st != HOT_OK) return st;
  apply_recipe(&own, recipe);
  return layer_new(ctx, &own, batch, tokens, recipe, layer_id, key, out);
}

/* The public path to an explicit Philox layer id (hot.h): hot_layer_create's checks and recipe
 * rule, then the caller's id instead of the context's count, which does not advance. */
hot_status hot_layer_create_with_id(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                    int64_t tokens, hot_recipe recipe, int layer_id,
                                    hot_layer **out) {
  if (out) *out = NULL;
  hot_status st = enter_ctx(ctx, "hot_layer_create_with_id");
  if (st) return st;
  if (!spec || !out)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_create_with_id: %s is NULL",
                    !spec ? "spec" : "out");
  if (layer_id < 0 || layer_id >= (1 << 27))
    return ctx_fail(ctx, HOT_ERR_INVALID,
                    "hot_layer_create_with_id: layer_id %d is outside [0, 2^27) (the Philox tag "
                    "layer_id * 16 + tensor must fit 32 bits)", layer_id);
  return create_with_stream(ctx, spec, batch, tokens, recipe, layer_id, ctx->seed, out);
}

/* The stream of a named layer (hot.h hot_layer_create_named, templates/CONTRACT.md "Random
 * stream"), the one place it is derived: h = FNV-1a 64 of the name's bytes; the layer id is h
 * xor-folded to 27 bits; the Philox key is splitmix64's finaliser of seed ^ h (a bijection, so
 * two names get one key under one seed only when their 64-bit hashes are equal). */
static void stream_of_name(const char *name, uint64_t seed, int *layer_id, uint64_t *key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)name; *p; ++p)
    h = (h ^ *p) * 0x100000001b3ull;
  *layer_id = (int)((h ^ (h >> 27) ^ (h >> 54)) & ((1u << 27) - 1u));
  uint64_t z = seed ^ h;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  *key = z ^ (z >> 31);
}

hot_status hot_layer_create_named(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                  int64_t tokens, hot_recipe recipe, const char *stream,
                                  hot_layer **out) {
  if (out) *out = NULL;
  hot_status st = enter_ctx(ctx, "hot_layer_create_named");
  if (st) return st;
  if (!spec || !stream || !out)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_create_named: %s is NULL",
                    !spec ? "spec" : !stream ? "stream" : "out");
  if (!*stream)
    return ctx_fail(ctx, HOT_ERR_INVALID,
                    "hot_layer_create_named: empty stream name (it names the layer's random "
                    "stream; give the layer's stable name)");
  int layer_id;
  uint64_t key;
  stream_of_name(stream, ctx->seed, &layer_id, &key);
  return create_with_stream(ctx, spec, batch, tokens, recipe, layer_id, key, out);
}

hot_status layer_create_resolved(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                     int64_t tokens, hot_recipe recipe, int layer_id,
                                     hot_layer **out) {
  if (out) *out = NULL;
  hot_status st = enter_ctx(ctx, "layer_create_resolved");
  if (st) return st;
  if (!spec || !out || layer_id < 0)
    return ctx_fail(ctx, HOT_ERR_INVALID, "layer_create_resolved: bad argument");
  return layer_new(ctx, spec, batch, tokens, recipe, layer_id, ctx->seed, out);
}

hot_status hot_layer_from_spec(hot_ctx *ctx, const char *path, const char *layer_name,
                               int64_t batch_override, hot_layer **out) {
  if (out) *out = NULL;
  hot_status st = enter_ctx(ctx, "hot_layer_from_spec");
  if (st) return st;
  if (!path || !layer_name || !out)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_from_spec: %s is NULL",
                    !path ? "path" : !layer_name ? "layer_name" : "out");
  if (batch_override < 0)
    return ctx_fail(ctx, HOT_ERR_SHAPE, "hot_layer_from_spec: batch_override %lld < 0",
                    (long long)batch_override);
  /* a regular file: "-" (standard input) and pipes are the tools' (hot-gen), not a library's,
   * whose process may be reading its stdin or would block on a FIFO without a writer */
  struct stat sb;
  if (!*path) return ctx_fail(ctx, HOT_ERR_IO, "hot_layer_from_spec: path is empty (no spec file)");
  if (strcmp(path, "-") == 0)
    return ctx_fail(ctx, HOT_ERR_IO, "hot_layer_from_spec: -: standard input is not a spec file "
                    "here (a path)");
  if (stat(path, &sb) != 0)
    return ctx_fail(ctx, HOT_ERR_IO, "hot_layer_from_spec: %s: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    return ctx_fail(ctx, HOT_ERR_IO, "hot_layer_from_spec: %s: not a regular file (%s)", path,
                    fileio_kind(sb.st_mode));
  hot_model m;
  hot_diag d = {0};
  int lrc = spec_load_file(path, NULL, &m, &d);
  if (lrc != 0) {
    st = ctx_fail(ctx, lrc == SPEC_ERR_NOMEM ? HOT_ERR_NOMEM : HOT_ERR_SPEC, "%s%s",
                  d.count ? d.lines[0] : path,
                  d.count > 1 ? " (and more errors)" : "");
    diag_free(&d);
    spec_model_free(&m);
    return st;
  }
  diag_free(&d);
  int idx = spec_find_layer(&m, layer_name);
  if (idx < 0) {
    char names[HOT_MSG_MAX];
    diag_names(names, sizeof names, m.n_layers, spec_layer_name, &m);
    st = ctx_fail(ctx, HOT_ERR_NOT_FOUND, "%s: no layer '%s' (layers: %s)", path, layer_name, names);
  } else {
    const hot_layer_spec *s = &m.layers[idx];
    int64_t tokens = s->tokens ? s->tokens : m.tokens;
    st = layer_new(ctx, s, batch_override > 0 ? batch_override : m.batch, tokens, m.recipe, idx,
                   ctx->seed_set ? ctx->seed : m.seed, out);
  }
  spec_model_free(&m);
  return st;
}

void hot_layer_destroy(hot_layer *layer) {
  if (!layer || layer->magic != HOT_LAYER_LIVE) return;
  layer_release(layer);
  layer->magic = HOT_LAYER_DEAD; /* the handle stays known to ctx: later use is detected */
}

/* ---- queries ----------------------------------------------------------------------------- */

size_t hot_layer_saved_bytes(const hot_layer *layer) {
  if (!layer || layer->magic != HOT_LAYER_LIVE) return 0;
  return (size_t)layer->saved_bytes;
}

const hot_layer_plan *hot_layer_get_plan(const hot_layer *layer) {
  return layer && layer->magic == HOT_LAYER_LIVE ? layer->plan : NULL;
}

hot_status hot_layer_get_spec(const hot_layer *layer, hot_layer_spec *out) {
  hot_status st = enter(layer, "hot_layer_get_spec");
  if (st) return st;
  if (!out) return ctx_fail(layer->ctx, HOT_ERR_INVALID, "hot_layer_get_spec: out is NULL");
  *out = *layer->plan->spec;
  return HOT_OK;
}

hot_status hot_layer_get_info(const hot_layer *layer, hot_layer_info *out) {
  hot_status st = enter(layer, "hot_layer_get_info");
  if (st) return st;
  if (!out) return ctx_fail(layer->ctx, HOT_ERR_INVALID, "hot_layer_get_info: out is NULL");
  const hot_layer_plan *p = layer->plan;
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", layer->spec.name);
  out->layer_id = p->layer_id;
  out->T = p->T;
  out->O = p->O;
  out->I = p->I;
  out->B = p->B;
  out->L = p->L;
  out->dtype = layer->spec.dtype;
  out->bias = layer->spec.bias;
  out->gran = layer->gran;
  out->gran_auto = layer->gran_auto;
  out->calibrated = layer->calibrated;
  out->lqs_e_tensor = layer->lqs_e_tensor;
  out->lqs_e_token = layer->lqs_e_token;
  out->saved_bytes = (size_t)layer_saved_bytes(p);
  out->fp32_bytes = p->abc.fp32_bytes;
  out->compiled = layer->compiled;
  snprintf(out->arch, sizeof out->arch, "%s", plan_arch_caps(p->arch)->name);
  out->seed = layer->seed;
  ctx_copy(out->tiles, sizeof out->tiles, layer->tiles_origin);
  return HOT_OK;
}

/* ---- JIT ----------------------------------------------------------------------------------- */

/* The compile logs of a layer's programs, one after another under a line naming the kernel
 * (malloc'd; NULL when out of memory). */
static char *joined_logs(const hot_layer *layer) {
  const hot_layer_plan *pl = layer->plan;
  size_t n = 1;
  for (int k = 0; k < pl->n_kernels; ++k)
    if (layer->jit.source[k] && layer->jit.bin[k])
      n += strlen(layer->jit.bin[k]->log) + strlen(pl->kernels[k].name) + 16;
  char *out = malloc(n), *p = out;
  if (!out) return NULL;
  *p = '\0';
  for (int k = 0; k < pl->n_kernels; ++k)
    if (layer->jit.source[k] && layer->jit.bin[k])
      p += sprintf(p, "== %s ==\n%s", pl->kernels[k].name, layer->jit.bin[k]->log);
  return out;
}

/* Emits and finds/compiles the layer's kernels for ctx->arch (once per layer, one program per
 * distinct kernel, concurrently: jit.h); sets layer->jit, layer->missing and the context's
 * compile log. HOT_JIT_DEBUG dumps are jit.c's. */
static hot_status layer_jit(hot_layer *layer) {
  if (layer->compiled) return HOT_OK;
  hot_ctx *ctx = layer->ctx;
  hot_kcache *kc;
  hot_status st = ctx_kcache(ctx, &kc);
  if (st != HOT_OK) return st;
  char err[768], *log = NULL;
  jit_free(&layer->jit);
  rt_status r = jit_layer(kc, layer->plan, ctx->jit_threads, &layer->jit, &log, err, sizeof err);
  if (r != RT_OK) {
    ctx_set_log(ctx, log);
    free(log);
    return ctx_fail(ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
  }
  layer->n_missing = layer->jit.n_missing;
  memcpy(layer->missing, layer->jit.missing, sizeof layer->missing);
  char *logs = joined_logs(layer);
  if (!logs) return ctx_fail(ctx, HOT_ERR_NOMEM, "layer '%s': out of memory", layer->spec.name);
  ctx_set_log(ctx, logs);
  free(logs);
  layer->compiled = 1;
  return HOT_OK;
}

/* The layer's kernels compiled (layer_jit) and handed to the backend (load), which makes them
 * ready to run; backends without kernels (load NULL) need nothing. */
static hot_status layer_ready(hot_layer *layer) {
  const hot_backend_ops *ops = layer->ctx->ops;
  if (!ops->load) return HOT_OK;
  hot_status st = layer_jit(layer);
  return st == HOT_OK ? ops->load(layer, &layer->jit) : st;
}

hot_status hot_layer_compile(hot_layer *layer) {
  hot_status st = enter(layer, "hot_layer_compile");
  if (st) return st;
  if (layer->ctx->ops->load) return layer_ready(layer);
  /* a backend without kernels: with a forced arch (HOT_ARCH) compiling fills the caches */
  return layer->ctx->arch_known ? layer_jit(layer) : HOT_OK;
}

/* hot_ctx_compile's first step: every distinct kernel of the n checked layers that are not
 * compiled yet, found or compiled in one pool (jit_prefetch) when ctx has an arch. Best effort:
 * any failure (a kernel that does not compile, memory) is left to the layers' own compiles,
 * which report it; nothing is set on ctx here except what ctx_kcache sets. */
static void layers_prefetch(hot_ctx *ctx, hot_layer *const *layers, size_t n) {
  if (!ctx->arch_known || n < 2) return; /* nothing to compile, or nothing to share */
  const hot_layer_plan **plans = calloc(n, sizeof *plans);
  hot_kcache *kc;
  if (!plans || ctx_kcache(ctx, &kc) != HOT_OK) {
    free(plans);
    return;
  }
  int np = 0;
  for (size_t i = 0; i < n; ++i)
    if (!layers[i]->compiled && layers[i]->plan) plans[np++] = layers[i]->plan;
  char err[512];
  if (np > 1) (void)jit_prefetch(kc, plans, np, ctx->jit_threads, NULL, err, sizeof err);
  free(plans);
}

hot_status hot_ctx_compile(hot_ctx *ctx, hot_layer *const *layers, size_t n) {
  hot_status st = enter_ctx(ctx, "hot_ctx_compile");
  if (st) return st;
  if (!layers && n) return ctx_fail(ctx, HOT_ERR_INVALID, "hot_ctx_compile: NULL layers");
  for (size_t i = 0; i < n; ++i) {
    const hot_layer *l = layers[i];
    if (!l) return ctx_fail(ctx, HOT_ERR_INVALID, "hot_ctx_compile: layers[%zu] is NULL", i);
    if (l->ctx != ctx)
      return ctx_fail(ctx, HOT_ERR_MISUSE, "hot_ctx_compile: layers[%zu] belongs to another context", i);
    if (l->magic != HOT_LAYER_LIVE)
      return ctx_fail(ctx, HOT_ERR_MISUSE, "hot_ctx_compile: layers[%zu] ('%s') was destroyed", i,
                      l->spec.name);
  }
  layers_prefetch(ctx, layers, n); /* all layers' kernels in one pool; then each layer's hits */
  for (size_t i = 0; i < n; ++i)
    if ((st = hot_layer_compile(layers[i])) != HOT_OK) return st;
  return HOT_OK;
}

/* ---- per step ------------------------------------------------------------------------------ */

static hot_status check_dtype(hot_layer *layer, hot_dtype dtype, const char *fn) {
  if ((unsigned)dtype > HOT_DT_F16)
    return ctx_fail(layer->ctx, HOT_ERR_INVALID, "%s: dtype %d is not a hot_dtype", fn, (int)dtype);
  if (dtype != layer->spec.dtype)
    return ctx_fail(layer->ctx, HOT_ERR_INVALID, "%s: dtype %s given, layer '%s' is %s (its "
                    "kernels are generated for one dtype)", fn, plan_dtype_name(dtype),
                    layer->spec.name, plan_dtype_name(layer->spec.dtype));
  return HOT_OK;
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* One pointer argument of a per-step call: its name, address, bytes, and whether the call
 * writes it. */
typedef struct {
  const char *name;
  const void *p;
  size_t bytes;
  int out;
} arg_span;

static size_t dtype_bytes(hot_dtype dt) { return dt == HOT_DT_F32 ? 4 : 2; }

/* The overlap rule of hot.h: an argument the call writes may share no byte with any other
 * pointer argument of the call (inputs may overlap each other: they are only read). The
 * results could otherwise depend on the order the backend reads and writes, so such a call is
 * refused (HOT_ERR_INVALID naming both arguments and their byte ranges) before any work. NULL
 * and empty spans take no part. */
static hot_status check_overlap(hot_ctx *ctx, const char *fn, const arg_span *a, int n) {
  for (int i = 0; i < n; ++i) {
    if (!a[i].p || !a[i].bytes) continue;
    for (int j = i + 1; j < n; ++j) {
      if (!a[j].p || !a[j].bytes || (!a[i].out && !a[j].out)) continue;
      uintptr_t b0 = (uintptr_t)a[i].p, e0 = b0 + a[i].bytes;
      uintptr_t b1 = (uintptr_t)a[j].p, e1 = b1 + a[j].bytes;
      if (b0 < e1 && b1 < e0)
        return ctx_fail(ctx, HOT_ERR_INVALID,
                        "%s: %s (%p, %zu bytes) overlaps %s (%p, %zu bytes); a buffer the call "
                        "writes may not share memory with any other argument", fn,
                        a[i].out ? a[i].name : a[j].name, a[i].out ? a[i].p : a[j].p,
                        a[i].out ? a[i].bytes : a[j].bytes, a[i].out ? a[j].name : a[i].name,
                        a[i].out ? a[j].p : a[i].p, a[i].out ? a[j].bytes : a[i].bytes);
    }
  }
  return HOT_OK;
}

hot_status hot_layer_save(hot_layer *layer, const void *x, hot_dtype dtype, void *saved,
                          void *stream) {
  hot_status st = enter(layer, "hot_layer_save");
  if (st) return st;
  hot_ctx *ctx = layer->ctx;
  layer->calls++; /* kernel times: the backend keeps this call's only, when it succeeds */
  if (!x) return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_save: x is NULL");
  if ((st = check_dtype(layer, dtype, "hot_layer_save"))) return st;
  if (saved && !aligned16(saved))
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_save: saved buffer %p is not 16-byte aligned",
                    saved);
  {
    const hot_layer_plan *pl = layer->plan;
    arg_span a[] = {{"x", x, (size_t)(pl->T * pl->I) * dtype_bytes(dtype), 0},
                    {"saved", saved, hot_layer_saved_bytes(layer), 1}};
    if ((st = check_overlap(ctx, "hot_layer_save", a, 2)) != HOT_OK) return st;
  }
  if (!saved) layer->saved_valid = 0; /* until this save succeeds */
  if ((st = layer_ready(layer)) != HOT_OK) return st;
  st = ctx->ops->save(layer, x, saved, stream);
  if (st == HOT_OK) {
    ctx->saves++;
    layer->last_saved_bytes = layer->saved_bytes;
    if (!saved) layer->saved_valid = 1;
  }
  return st;
}

hot_status hot_layer_backward(hot_layer *layer, const void *g_y, const void *w, hot_dtype dtype,
                              const void *saved, float *g_x, float *g_w, float *g_b,
                              uint32_t step, void *stream) {
  hot_status st = enter(layer, "hot_layer_backward");
  if (st) return st;
  hot_ctx *ctx = layer->ctx;
  layer->calls++; /* kernel times: the backend keeps this call's only, when it succeeds */
  if (!g_y || !w)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_backward: %s is NULL", !g_y ? "g_y" : "w");
  if (!g_x && !g_w && !g_b)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_backward: g_x, g_w and g_b are all NULL "
                    "(nothing to compute)");
  if ((st = check_dtype(layer, dtype, "hot_layer_backward"))) return st;
  if (g_b && !layer->spec.bias)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_backward: g_b given but layer '%s' has no "
                    "bias (spec bias = false): pass NULL", layer->spec.name);
  if (g_w && saved && !aligned16(saved)) /* only g_w reads the saved activations */
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_backward: saved buffer %p is not 16-byte "
                    "aligned", saved);
  {
    const hot_layer_plan *pl = layer->plan;
    size_t es = dtype_bytes(dtype), T = (size_t)pl->T, O = (size_t)pl->O, I = (size_t)pl->I;
    arg_span a[] = {{"g_y", g_y, T * O * es, 0},     {"w", w, O * I * es, 0},
                    {"saved", saved, saved ? hot_layer_saved_bytes(layer) : 0, 0},
                    {"g_x", g_x, T * I * 4, 1},      {"g_w", g_w, O * I * 4, 1},
                    {"g_b", g_b, O * 4, 1}};
    if ((st = check_overlap(ctx, "hot_layer_backward", a, 6)) != HOT_OK) return st;
  }
  if (g_w && !saved && !layer->saved_valid) /* only g_w reads the saved activations */
    return ctx_fail(ctx, HOT_ERR_MISUSE, "hot_layer_backward: layer '%s' has no saved activations "
                    "(call hot_layer_save with saved = NULL first, or pass the caller's buffer)",
                    layer->spec.name);
  if ((st = layer_ready(layer)) != HOT_OK) return st;
  st = ctx->ops->backward(layer, g_y, w, saved, g_x, g_w, g_b, step, stream);
  if (st == HOT_OK) ctx->backwards++;
  return st;
}

hot_status hot_layer_calibrate(hot_layer *layer, const void *g_y, hot_dtype dtype, uint32_t step,
                               void *stream) {
  hot_status st = enter(layer, "hot_layer_calibrate");
  if (st) return st;
  hot_ctx *ctx = layer->ctx;
  layer->calls++; /* kernel times: the backend keeps this call's only, when it succeeds */
  if (!g_y) return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_calibrate: g_y is NULL");
  if ((st = check_dtype(layer, dtype, "hot_layer_calibrate"))) return st;
  if (!layer->gran_auto)
    return ctx_fail(ctx, HOT_ERR_MISUSE, "hot_layer_calibrate: layer '%s' has a fixed g' scale "
                    "(%s%s); calibration (LQS) applies to scale = \"auto\" only", layer->spec.name,
                    layer->plan->hq.enabled ? "per " : "HQ disabled",
                    !layer->plan->hq.enabled ? ""
                    : layer->gran == HOT_GRAN_ROW ? "token"
                                                  : plan_gran_name(layer->gran));
  if ((st = layer_ready(layer)) != HOT_OK) return st;
  st = ctx->ops->calibrate(layer, g_y, step, stream);
  if (st == HOT_OK) {
    ctx->calibrations++;
    layer->calibrated = 1;
  }
  return st;
}

hot_status hot_layer_check(hot_layer *layer) {
  hot_status st = enter(layer, "hot_layer_check");
  if (st) return st;
  return layer->ctx->ops->check(layer);
}

/* ---- profiling ---------------------------------------------------------------------------- */

hot_status hot_ctx_set_profiling(hot_ctx *ctx, int on) {
  hot_status st = enter_ctx(ctx, "hot_ctx_set_profiling");
  if (st) return st;
  if (ctx->backend != HOT_BACKEND_CUDA) {
    if (!on) return HOT_OK; /* nothing to turn off */
    return ctx_fail(ctx, HOT_ERR_UNSUPPORTED, "hot_ctx_set_profiling: kernel timing needs the "
                    "CUDA backend (this context runs the CPU reference, which launches no kernels)");
  }
  ctx->profiling = on != 0;
  return HOT_OK;
}

hot_status hot_ctx_set_cpu_threads(hot_ctx *ctx, int n) {
  hot_status st = enter_ctx(ctx, "hot_ctx_set_cpu_threads");
  if (st) return st;
  if (n < 0 || n > HOT_MAX_CPU_THREADS)
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_ctx_set_cpu_threads: n = %d is not in [0, %d] (0: "
                    "the count the context started with)", n, HOT_MAX_CPU_THREADS);
  if (!ctx->ops->cpu_threads)
    return ctx_fail(ctx, HOT_ERR_UNSUPPORTED, "hot_ctx_set_cpu_threads: this context runs on a "
                    "GPU (the CUDA backend has no CPU threads to set)");
  ctx->ops->cpu_threads(ctx, n);
  return HOT_OK;
}

int hot_ctx_cpu_threads(const hot_ctx *ctx, int *pinned) {
  if (pinned) *pinned = 0;
  if (!ctx || ctx->failed || !ctx->ops->cpu_threads) return 0;
  if (pinned) *pinned = ctx->env.cpu_threads > 0;
  return ctx->ops->cpu_threads((hot_ctx *)ctx, -1);
}

hot_status hot_layer_kernel_times(const hot_layer *layer, hot_kernel_time *out, int max, int *n) {
  hot_status st = enter(layer, "hot_layer_kernel_times");
  if (st) return st;
  hot_ctx *ctx = layer->ctx;
  if (!n || max < 0 || (max > 0 && !out))
    return ctx_fail(ctx, HOT_ERR_INVALID, "hot_layer_kernel_times: %s", !n ? "n is NULL" :
                    max < 0 ? "max < 0" : "out is NULL with max > 0");
  if (!ctx->ops->times)
    return ctx_fail(ctx, HOT_ERR_UNSUPPORTED, "hot_layer_kernel_times: kernel timing needs the "
                    "CUDA backend (layer '%s' runs on the CPU reference)", layer->spec.name);
  *n = ctx->ops->times(layer, out, max);
  return HOT_OK;
}

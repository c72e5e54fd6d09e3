/* ctx.c — contexts: options and environment (read once), the backend choice (auto: CUDA when
 * usable, else the CPU reference, with the reason kept) through the backends' init and fini,
 * the kernel cache, statistics. Calls into no other file of hot.h's layers but through
 * backend.h's tables. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda_api.h" /* cuda_api_configure */
#include "hot_internal.h"

_Static_assert((int)HOT_ERR_CUDA == (int)RT_ERR_CUDA && (int)HOT_ERR_INVALID == (int)RT_ERR_INVALID &&
                   (int)HOT_ERR_NO_DRIVER == (int)RT_ERR_NO_DRIVER &&
                   (int)HOT_ERR_COMPILE == (int)RT_ERR_COMPILE &&
                   (int)RT_STATUS_COUNT == (int)HOT_ERR_SPEC,
               "hot_status must map rt_status one for one");

static const char *const k_status_names[HOT_STATUS_COUNT] = {
    "HOT_OK",           "HOT_ERR_INVALID",     "HOT_ERR_NOMEM",      "HOT_ERR_IO",
    "HOT_ERR_NO_DRIVER", "HOT_ERR_NO_DEVICE",  "HOT_ERR_NO_NVRTC",   "HOT_ERR_COMPILE",
    "HOT_ERR_BAD_BINARY", "HOT_ERR_NOT_FOUND", "HOT_ERR_DEVICE_OOM", "HOT_ERR_LAUNCH",
    "HOT_ERR_CUDA",     "HOT_ERR_SPEC",        "HOT_ERR_PLAN",       "HOT_ERR_SHAPE",
    "HOT_ERR_MISUSE",   "HOT_ERR_UNSUPPORTED", "HOT_ERR_NONFINITE",  "HOT_ERR_INTERNAL",
    "HOT_ERR_RANGE"};

const char *hot_status_name(hot_status s) {
  return ((unsigned)s < HOT_STATUS_COUNT) ? k_status_names[s] : "HOT_ERR_?";
}

const char *hot_backend_name(hot_backend b) {
  switch (b) {
  case HOT_BACKEND_DEFAULT: return "default";
  case HOT_BACKEND_AUTO: return "auto";
  case HOT_BACKEND_CUDA: return "cuda";
  case HOT_BACKEND_CPU: return "cpu";
  }
  return "?";
}

const char *hot_errmsg(const hot_ctx *ctx) { return ctx ? ctx->errmsg : "no context (NULL)"; }

const char *hot_compile_log(const hot_ctx *ctx) { return ctx && ctx->log ? ctx->log : ""; }

hot_backend hot_ctx_backend(const hot_ctx *ctx) {
  return ctx && !ctx->failed ? ctx->backend : HOT_BACKEND_DEFAULT;
}

void hot_options_init(hot_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->backend = HOT_BACKEND_DEFAULT;
  opt->device = -1;
}

/* ---- options ----------------------------------------------------------------------------- */

static char *dup_opt(const char *s) { return s ? strdup(s) : NULL; }

/* The HOT_ENV_* bits of the variables an option set in code overrides. */
static unsigned env_skip_mask(const hot_options *o) {
  return (o->backend != HOT_BACKEND_DEFAULT ? HOT_ENV_BACKEND : 0u) |
         (o->device >= 0 ? HOT_ENV_DEVICE : 0u) | (o->arch ? HOT_ENV_ARCH : 0u) |
         (o->cache_dir ? HOT_ENV_CACHE_DIR : 0u) | (o->disk_cache ? HOT_ENV_NO_DISK : 0u) |
         (o->seed_set ? HOT_ENV_SEED : 0u) | (o->jit_debug ? HOT_ENV_JIT_DEBUG : 0u) |
         (o->debug_dir ? HOT_ENV_DEBUG_DIR : 0u);
}

/* The backend: options.backend, else HOT_BACKEND, else auto. */
static hot_status resolve_backend(hot_ctx *ctx, const hot_options *o, hot_backend *backend) {
  const hot_env *e = &ctx->env;
  *backend = o->backend;
  if (*backend == HOT_BACKEND_DEFAULT) {
    *backend = HOT_BACKEND_AUTO;
    if (e->backend)
      *backend = !strcmp(e->backend, "cuda") ? HOT_BACKEND_CUDA
                 : !strcmp(e->backend, "cpu") ? HOT_BACKEND_CPU : HOT_BACKEND_AUTO;
  } else if (*backend != HOT_BACKEND_AUTO && *backend != HOT_BACKEND_CUDA &&
             *backend != HOT_BACKEND_CPU) {
    return ctx_fail(ctx, HOT_ERR_INVALID, "options.backend = %d: not a hot_backend", (int)*backend);
  }
  return HOT_OK;
}

/* The device and the arch (options first, then HOT_DEVICE / HOT_ARCH). */
static hot_status resolve_device(hot_ctx *ctx, const hot_options *o) {
  const hot_env *e = &ctx->env;
  if (o->device < -1)
    return ctx_fail(ctx, HOT_ERR_INVALID,
                    "options.device = %d: expected -1 ($HOT_DEVICE, else 0) or a device index",
                    o->device);
  ctx->device = o->device;
  if (ctx->device < 0) ctx->device = e->device_set ? e->device : 0;
  const char *arch = o->arch ? o->arch : e->arch;
  if (arch) {
    char known[128];
    if (plan_arch_parse(arch, &ctx->arch) != 0)
      return ctx_fail(ctx, HOT_ERR_INVALID, "%s '%s': unknown arch (known: %s)",
                      o->arch ? "options.arch" : "HOT_ARCH", arch,
                      plan_arch_list(known, sizeof known, ", "));
    ctx->arch_known = 1;
    ctx->arch_origin = o->arch ? "options.arch" : "HOT_ARCH";
  } else {
    ctx->arch = HOT_ARCH_CPU_STORAGE; /* until a device says otherwise */
  }
  return HOT_OK;
}

/* The cache directory, the disk cache switch and the seed. */
static hot_status resolve_cache_seed(hot_ctx *ctx, const hot_options *o) {
  const hot_env *e = &ctx->env;
  const char *dir = o->cache_dir ? o->cache_dir : e->cache_dir;
  ctx->cache_dir_origin = o->cache_dir ? "options.cache_dir" : "HOT_CACHE_DIR";
  if (dir && !(ctx->cache_dir = dup_opt(dir))) return ctx_fail(ctx, HOT_ERR_NOMEM, "out of memory");
  if (o->disk_cache < -1 || o->disk_cache > 1)
    return ctx_fail(ctx, HOT_ERR_INVALID, "options.disk_cache = %d: expected -1, 0 or 1",
                    o->disk_cache);
  ctx->disk_cache = o->disk_cache ? o->disk_cache : (e->no_disk_set && e->no_disk ? -1 : 1);
  if (o->seed_set != 0 && o->seed_set != 1)
    return ctx_fail(ctx, HOT_ERR_INVALID, "options.seed_set = %d: expected 0 or 1", o->seed_set);
  ctx->seed_set = 0;
  ctx->seed = HOT_DEFAULT_SEED;
  if (o->seed_set) {
    ctx->seed_set = 1;
    ctx->seed = o->seed;
  } else if (e->seed_set) {
    ctx->seed_set = 1;
    ctx->seed = e->seed;
  }
  return HOT_OK;
}

/* The JIT debug switch and directory, the JIT threads and the CUDA library paths. */
static hot_status resolve_jit(hot_ctx *ctx, const hot_options *o) {
  const hot_env *e = &ctx->env;
  if (o->jit_debug < -1 || o->jit_debug > 1)
    return ctx_fail(ctx, HOT_ERR_INVALID, "options.jit_debug = %d: expected -1, 0 or 1",
                    o->jit_debug);
  ctx->jit_debug = o->jit_debug ? o->jit_debug > 0 : (e->jit_debug_set && e->jit_debug);
  const char *dd = o->debug_dir ? o->debug_dir : e->debug_dir;
  if (dd && !(ctx->debug_dir = dup_opt(dd))) return ctx_fail(ctx, HOT_ERR_NOMEM, "out of memory");
  ctx->jit_threads = e->jit_threads ? e->jit_threads : jit_default_threads();
  cuda_api_configure(e->cuda_driver, e->cuda_home);
  return HOT_OK;
}

/* Resolves every option (code first, then the environment read once into ctx->env, then the
 * default). */
static hot_status resolve(hot_ctx *ctx, const hot_options *o, hot_backend *backend) {
  char err[512];
  hot_env raw;
  if (env_read(&raw, env_skip_mask(o), err, sizeof err) != RT_OK)
    return ctx_fail(ctx, HOT_ERR_INVALID, "%s", err);
  if (env_dup(&ctx->env, &raw, &ctx->env_block) != RT_OK)
    return ctx_fail(ctx, HOT_ERR_NOMEM, "out of memory");
  hot_status st = resolve_backend(ctx, o, backend);
  if (st == HOT_OK) st = resolve_device(ctx, o);
  if (st == HOT_OK) st = resolve_cache_seed(ctx, o);
  if (st == HOT_OK) st = resolve_jit(ctx, o);
  return st;
}

/* Loads the pack at path into ctx's kernel cache; `what` names where the path came from. */
static hot_status load_pack(hot_ctx *ctx, const char *path, const char *what) {
  hot_kcache *kc = NULL;
  hot_status st = ctx_kcache(ctx, &kc);
  if (st != HOT_OK) return st;
  hot_pack *p = NULL;
  char err[768];
  rt_status r = pack_load(path, &p, err, sizeof err);
  if (r == RT_OK) r = kcache_add_pack(kc, p, err, sizeof err);
  if (r != RT_OK) return ctx_fail(ctx, ctx_rt(r), "%s: %s", what, err);
  return HOT_OK;
}

hot_status ctx_create_with_compiler(hot_ctx **out, const hot_options *opt,
                                        const hot_compiler *cc) {
  if (!out) return HOT_ERR_INVALID;
  *out = NULL;
  hot_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return HOT_ERR_NOMEM;
  *out = ctx;
  ctx->compiler = cc;
  hot_options defaults;
  hot_options_init(&defaults);
  hot_backend want;
  hot_status st = resolve(ctx, opt ? opt : &defaults, &want);
  if (st == HOT_OK) {
    if (want == HOT_BACKEND_CPU) {
      st = cpu_backend_ops.init(ctx);
      if (st == HOT_OK) ctx->ops = &cpu_backend_ops;
    } else {
      st = cuda_backend_ops.init(ctx);
      if (st == HOT_OK) {
        ctx->ops = &cuda_backend_ops;
      } else if (want == HOT_BACKEND_AUTO && st != HOT_ERR_INVALID) {
        /* fall back, keeping the reason (a bad option, HOT_ERR_INVALID, stays an error) */
        ctx->fell_back = 1;
        ctx->device_name[0] = '\0'; /* the CPU runs: no device (hot_stats) */
        ctx_copy(ctx->fallback_reason, sizeof ctx->fallback_reason, ctx->errmsg);
        ctx_clear(ctx);
        const hot_status why = st;
        st = cpu_backend_ops.init(ctx);
        if (st == HOT_OK) ctx->ops = &cpu_backend_ops;
        if (st == HOT_OK && why != HOT_ERR_NO_DRIVER && why != HOT_ERR_NO_DEVICE)
          ctx_fail(ctx, HOT_OK, "warning: backend auto runs the CPU reference although a CUDA "
                   "device is present: %s", ctx->fallback_reason); /* a device hot cannot use */
      }
    }
    if (ctx->ops) ctx->backend = ctx->ops->kind;
  }
  if (st == HOT_OK && ctx->env.kernel_pack) /* HOT_KERNEL_PACK: read once, here */
    st = load_pack(ctx, ctx->env.kernel_pack, "HOT_KERNEL_PACK");
  if (st != HOT_OK) { /* the reason stays available (stats, later misuse messages) */
    ctx_copy(ctx->fallback_reason, sizeof ctx->fallback_reason, ctx->errmsg);
    ctx->failed = 1;
    ctx->backend = HOT_BACKEND_DEFAULT;
    if (ctx->ops) ctx->ops->fini(ctx); /* a backend set up before the failure (pack) */
    ctx->be = NULL;
    ctx->ops = NULL;
  }
  return st;
}

hot_status hot_ctx_load_pack(hot_ctx *ctx, const char *path) {
  if (!ctx) return HOT_ERR_INVALID;
  ctx_clear(ctx);
  if (ctx->failed)
    return ctx_fail(ctx, HOT_ERR_MISUSE, "hot_ctx_load_pack: the context failed to initialise (%s)",
                    ctx->fallback_reason);
  if (!path || !*path) return ctx_fail(ctx, HOT_ERR_INVALID, "hot_ctx_load_pack: no path given");
  return load_pack(ctx, path, "hot_ctx_load_pack");
}

hot_status hot_ctx_create(hot_ctx **out, const hot_options *opt) {
  return ctx_create_with_compiler(out, opt, NULL);
}

void hot_ctx_destroy(hot_ctx *ctx) {
  if (!ctx) return;
  hot_layer *l = ctx->layers;
  while (l) {
    hot_layer *next = l->next;
    if (l->magic == HOT_LAYER_LIVE) layer_release(l); /* backend.h, inline */
    l->magic = 0;
    free(l);
    l = next;
  }
  if (ctx->ops) ctx->ops->fini(ctx);
  ctx->be = NULL;
  kcache_close(ctx->kc);
  tuned_close(ctx->tuned);
  free(ctx->tuned);
  free(ctx->cache_dir);
  free(ctx->debug_dir);
  free(ctx->env_block);
  free(ctx->log);
  free(ctx);
}

hot_status ctx_kcache(hot_ctx *ctx, hot_kcache **out) {
  if (!ctx->kc) {
    hot_kcache_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.dir = ctx->cache_dir;
    cfg.dir_origin = ctx->cache_dir_origin;
    cfg.disk = ctx->disk_cache;
    cfg.compiler = ctx->compiler;
    cfg.env = &ctx->env;
    cfg.jit_debug = ctx->jit_debug ? 1 : -1;
    cfg.debug_dir = ctx->debug_dir;
    char err[768];
    rt_status r = kcache_open(&ctx->kc, &cfg, err, sizeof err);
    if (r != RT_OK) return ctx_fail(ctx, ctx_rt(r), "%s", err);
  }
  *out = ctx->kc;
  return HOT_OK;
}

hot_status hot_ctx_stats(hot_ctx *ctx, hot_stats *out) {
  if (!ctx || !out) return ctx_fail(ctx, HOT_ERR_INVALID, "hot_ctx_stats: out is NULL");
  if (!ctx->failed) ctx_clear(ctx); /* a failed context keeps its reason (hot_errmsg) */
  memset(out, 0, sizeof *out);
  out->backend = ctx->failed ? HOT_BACKEND_DEFAULT : ctx->backend;
  out->fell_back = ctx->fell_back;
  ctx_copy(out->fallback_reason, sizeof out->fallback_reason, ctx->fallback_reason);
  ctx_copy(out->device_name, sizeof out->device_name, ctx->device_name);
  if (ctx->arch_known) snprintf(out->arch, sizeof out->arch, "%s", plan_arch_caps(ctx->arch)->name);
  if (ctx->kc) {
    hot_kcache_stats ks;
    kcache_stats_get(ctx->kc, &ks);
    out->compiles = ks.compiles;
    out->compile_failures = ks.compile_failures;
    out->memory_hits = ks.memory_hits;
    out->disk_hits = ks.disk_hits;
    out->disk_rejects = ks.disk_rejects;
    out->compile_ms = ks.compile_ms;
    const char *d = kcache_dir(ctx->kc);
    if (d) ctx_copy(out->cache_dir, sizeof out->cache_dir, d);
  }
  for (const hot_layer *l = ctx->layers; l; l = l->next) {
    if (l->magic != HOT_LAYER_LIVE) continue;
    out->layers++;
    if (l->last_saved_bytes) {
      out->saved_bytes += l->last_saved_bytes;
      out->saved_fp32_bytes += l->plan->T * l->plan->I * 4;
    }
  }
  out->saves = ctx->saves;
  out->backwards = ctx->backwards;
  out->calibrations = ctx->calibrations;
  out->launches = ctx->launches;
  out->workspace_bytes = ctx->ops && ctx->ops->workspace_bytes && ctx->be ? ctx->ops->workspace_bytes(ctx) : 0;
  return HOT_OK;
}

/* hot_internal.h — the context and layer structs behind hot.h's handles and the message helpers
 * every file under hot.h uses; nothing of any backend. The files behind hot.h, one stage each:
 *   ctx.c          options, environment (env.h), backend choice and its init/fini, statistics,
 *                  the kernel cache (ctx_kcache)
 *   layer.c        layers (spec / C), argument checks, the JIT (jit.h): a layer's binaries are
 *                  compiled here and handed down to the backend (backend.h: load), then dispatch
 *   cpu_backend.c  cpu_backend_ops: the calls on the CPU reference twins (templates/ref.h)
 *   cuda_backend.c cuda_backend_ops: device, pointers, scratch, modules, a step's kernel order; its
 *                  state (cuda_backend.h) hangs off ctx->be / layer->be, opaque to everything else
 *   launch.c       the CUDA backend's own: one function per kernel role (launch.h)
 * Calls go one way: ctx.c -> backend.h (init, fini, layer release); layer.c -> ctx.c (cache) and
 * -> backend.h -> {cpu,cuda}_backend.c -> launch.c. No backend calls back into ctx.c or layer.c;
 * the message helpers below are inline, so they are no call target either. */
#ifndef HOT_INTERNAL_H
#define HOT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h" /* HOT_MSG_MAX */
#include "env.h"
#include "hot.h"
#include "jit.h"
#include "plan.h"
#include "status.h"
#include "tuned.h"
#include "utf8.h"

struct hot_backend_ops; /* backend.h */

#define HOT_ERRMSG_MAX HOT_MSG_MAX /* base/diag.h: the one bound of every message */
#define HOT_DEFAULT_SEED 0x243F6A8885A308D3ull /* the spec loader's default: digits of pi */
#define HOT_LAYER_LIVE 0x484f544cu /* "HOTL" */
#define HOT_LAYER_DEAD 0x44454144u /* "DEAD" */

struct hot_layer {
  uint32_t magic;            /* HOT_LAYER_LIVE / HOT_LAYER_DEAD */
  hot_ctx *ctx;
  struct hot_layer *next;    /* the context's list (live and dead handles) */
  hot_layer_spec spec;       /* own copy; plan->spec points here */
  hot_layer_plan *plan;      /* malloc'd (freed at destroy; the handle stays) */
  uint64_t seed;             /* the Philox key in use (named layers: derived, layer.c) */
  hot_gran gran;             /* in effect: TENSOR, ROW or SAMPLE */
  int gran_auto, calibrated;
  double lqs_e_tensor, lqs_e_token;
  int compiled;              /* the cache returned every binary (emit + get done) */
  hot_jit jit;               /* binaries by plan kernel index (owned by the context's cache),
                                the kernels whose template is not in this build */
  int n_missing;             /* = jit.n_missing, jit.missing */
  hot_kernel_role missing[HOT_MAX_KERNELS];
  char tiles_origin[320];    /* where the GEMM tiles came from (tuned.h: "tuned: ...", "default") */
  int saved_valid;           /* the layer-owned buffer holds a save */
  int64_t last_saved_bytes;  /* bytes of the latest save (stats) */
  int64_t saved_bytes;       /* layer_saved_bytes(plan), kept at creation: a call asks the
                                generator nothing */
  uint64_t calls;            /* save / backward / calibrate calls begun (kernel times: a backend
                                keeps the times of call number `calls` only) */
  void *be;                  /* the backend's state of the layer (backend.h layer_init; opaque) */
};

struct hot_ctx {
  int failed;                /* creation failed: only errmsg/destroy/stats are valid */
  hot_backend backend;       /* CUDA or CPU once created */
  int fell_back;
  char fallback_reason[256]; /* auto fell back: why; failed creation: the error */
  char device_name[128];
  hot_arch arch;             /* arch layers are planned for */
  int arch_known;            /* 1: CUDA device arch or forced; 0: CPU default (sm_80 storage) */
  const char *arch_origin;   /* a forced arch: "options.arch" or "HOT_ARCH" (messages); else NULL */
  int device;
  hot_env env;               /* the environment, read once at creation (strings in env_block) */
  char *env_block;
  char *cache_dir;           /* option/env value (NULL: the cache's default) */
  const char *cache_dir_origin; /* "options.cache_dir" or "HOT_CACHE_DIR" (messages) */
  int jit_threads;           /* concurrent compiles: HOT_JIT_THREADS, else the CPUs */
  int disk_cache;            /* 1 on, -1 off */
  int seed_set;
  uint64_t seed;
  int jit_debug;
  char *debug_dir;           /* option/env value, NULL: derived */
  const hot_compiler *compiler; /* NULL: NVRTC (tests inject a fake) */
  hot_kcache *kc;            /* opened on first need */
  hot_tuned *tuned;          /* the tuning databases, opened by the first layer planned (CUDA
                                backend or a forced arch; tuned.h); NULL before */
  int next_layer_id;         /* ids of hot_layer_create layers */
  hot_layer *layers;         /* every handle made by this context */
  uint64_t saves, backwards, calibrations, launches;
  int profiling;             /* hot_ctx_set_profiling (CUDA only) */
  char errmsg[HOT_ERRMSG_MAX];
  char *log;                 /* latest compile log (malloc'd), NULL = "" */
  const struct hot_backend_ops *ops; /* the backend's functions (backend.h); NULL: failed */
  void *be;                  /* the backend's state of the context (backend.h init; opaque) */
};

/* ---- ctx.c ---------------------------------------------------------------------------------- */

/* hot_ctx_create with an injected compiler (tests count compiles / force failures); cc NULL =
 * NVRTC. cc must outlive the context. */
hot_status ctx_create_with_compiler(hot_ctx **out, const hot_options *opt,
                                        const hot_compiler *cc);

/* A layer from a spec whose recipe defaults are already applied (a spec file's layer, possibly
 * changed field by field: hot-tune's variants): planned exactly as given, with Philox layer id
 * `layer_id` and the context's seed; hot_layer_create's recipe rule is NOT applied. Same
 * ownership and errors as hot_layer_create (HOT_ERR_INVALID also for layer_id < 0). */
hot_status layer_create_resolved(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                     int64_t tokens, hot_recipe recipe, int layer_id,
                                     hot_layer **out);

/* Bytes of the saved buffer: plan_buffer_bytes(pl, HOT_BUF_SAVED), what both backends allocate
 * and hot_layer_saved_bytes reports (0 for a NULL plan). */
static inline int64_t layer_saved_bytes(const hot_layer_plan *pl) {
  const int64_t n = pl ? plan_buffer_bytes(pl, HOT_BUF_SAVED) : 0;
  return n > 0 ? n : 0;
}

/* ---- messages (inline: every file may use them, none of them is a call into another file) ---- */

/* Copies src into dst[n], truncating at a UTF-8 character boundary, always NUL-terminated. */
static inline void ctx_copy(char *dst, size_t n, const char *src) {
  if (!n) return;
  size_t k = src ? strlen(src) : 0;
  if (k >= n) k = utf8_complete(src, n - 1);
  if (k) memcpy(dst, src, k);
  dst[k] = '\0';
}

/* Sets ctx's message (printf-style, one line) and returns s. ctx may be NULL. */
static inline hot_status ctx_fail(hot_ctx *ctx, hot_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline hot_status ctx_fail(hot_ctx *ctx, hot_status s, const char *fmt, ...) {
  if (ctx) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof ctx->errmsg) /* cut: not inside a character */
      ctx->errmsg[utf8_complete(ctx->errmsg, sizeof ctx->errmsg - 1)] = '\0';
    for (char *p = ctx->errmsg; *p; ++p) /* one line */
      if (*p == '\n' || *p == '\r') *p = ' ';
  }
  return s;
}

/* Clears ctx's message (start of a public call). */
static inline void ctx_clear(hot_ctx *ctx) {
  if (ctx) ctx->errmsg[0] = '\0';
}

/* Keeps a copy of a compile log as ctx's compile log (NULL clears it). */
static inline void ctx_set_log(hot_ctx *ctx, const char *log) {
  free(ctx->log);
  ctx->log = NULL;
  if (log) {
    const size_t n = strlen(log) + 1;
    if ((ctx->log = malloc(n)) != NULL) memcpy(ctx->log, log, n);
  }
}

/* rt_status -> hot_status (equal numbers: ctx.c checks it at compile time). */
static inline hot_status ctx_rt(rt_status s) { return (hot_status)s; }

/* ---- ctx.c ---------------------------------------------------------------------------------- */

/* The context's kernel cache, opened on first need. HOT_OK or the cache's error (message set). */
hot_status ctx_kcache(hot_ctx *ctx, hot_kcache **out);

#endif

/* jit.h — a layer plan's kernels to binaries through the kernel cache. Every distinct kernel of
 * the plan is its own NVRTC program (its emit_layer_select source), and the programs of a layer
 * compile concurrently. Used by libhot (layer_jit) and by hot-gen --compile, so both make exactly
 * the same cache requests and a cache seeded by hot-gen serves applications with zero compiles.
 *
 * Why one program per kernel rather than one per layer: a layer's latency becomes that of its
 * slowest kernel instead of the sum (NVRTC is thread-safe); equal kernels of different layers and
 * models (the GEMM variants, the HQ kernels) share one cache entry; and changing one template
 * recompiles only its kernels. The price is NVRTC's fixed cost (~40 ms) per extra program, paid
 * in parallel.
 */
#ifndef HOT_JIT_H
#define HOT_JIT_H

#include "cache.h"
#include "plan.h"

typedef struct {
  /* By plan kernel index; owned by the cache (valid until kcache_close); NULL for a kernel
   * whose template is not in this build. Equal kernels share one binary. */
  const hot_kernel_binary *bin[HOT_MAX_KERNELS];
  hot_kcache_origin origin[HOT_MAX_KERNELS];
  char *source[HOT_MAX_KERNELS]; /* emitted source per kernel (owned; NULL for a duplicate or a
                                    missing template) */
  int n_missing;                 /* planned kernels whose template is not in this build */
  hot_kernel_role missing[HOT_MAX_KERNELS];
  int n_programs;                /* distinct programs requested from the cache */
  int threads;                   /* compile threads used */
  double wall_ms;                /* wall time of the whole request */
} hot_jit;

/* The online CPUs, at most 16 (the default of HOT_JIT_THREADS). */
int jit_default_threads(void);

/* Emits every kernel of `pl` and finds or compiles it in `kc` for pl->arch, with up to `threads`
 * concurrent compiles (<= 0: $HOT_JIT_THREADS, 1..64, a bad value is RT_ERR_INVALID naming it;
 * else jit_default_threads()). When the cache has a debug folder (HOT_JIT_DEBUG,
 * kcache_debug_dir) writes <layer>.<arch>.cu (every program's source) and .log (their
 * compile logs, or the failing one's) there, best effort. On RT_OK *out is filled; the caller frees
 * it with jit_free. On an error (the message of the first failing kernel in plan order in err,
 * which names it; when `log` is not NULL, *log = a malloc'd copy of its compiler log or NULL)
 * *out holds nothing to free. Errors: those of emit (RT_ERR_NOMEM when it ran out of memory, else
 * RT_ERR_INVALID: a template/plan mismatch) and kcache_get, RT_ERR_NOMEM. */
rt_status jit_layer(hot_kcache *kc, const hot_layer_plan *pl, int threads, hot_jit *out,
                    char **log, char *err, size_t errlen);

/* What jit_prefetch did. */
typedef struct {
  int n_programs;   /* distinct programs over all the plans (equal sources counted once) */
  int n_compiled;   /* of them, compiled now (the rest were in memory or on disk) */
  int n_failed;     /* of them, failed (jit_layer of the plan reports the error) */
  int threads;      /* compile threads used */
  double wall_ms;   /* wall time of the whole batch */
} hot_jit_batch;

/* Finds or compiles, in ONE pool of up to `threads` concurrent compiles (as jit_layer: <= 0 means
 * $HOT_JIT_THREADS, else jit_default_threads()), every distinct kernel of all n plans (several
 * layers, several archs), so that a model's cold start costs about its slowest kernels rather
 * than the sum of its layers' slowest. Kernels equal across plans (same name, arch and source)
 * are requested once. The binaries stay in kc: a following jit_layer of each plan finds them in
 * memory. A kernel that fails to compile is only counted (out->n_failed): jit_layer of its plan
 * compiles it again and reports the error with its log. Returns RT_OK, RT_ERR_INVALID (NULL
 * arguments, a bad HOT_JIT_THREADS, an emit failure) or RT_ERR_NOMEM. out may be NULL. */
rt_status jit_prefetch(hot_kcache *kc, const hot_layer_plan *const *plans, int n, int threads,
                       hot_jit_batch *out, char *err, size_t errlen);

/* Frees the sources; *j becomes empty. NULL-safe. */
void jit_free(hot_jit *j);

#endif

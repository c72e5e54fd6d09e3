/* backend.h — the one interface through which ctx.c and layer.c reach a backend. Each backend
 * fills a hot_backend_ops: cpu_backend.c (cpu_backend_ops, host pointers, the reference twins) and
 * cuda_backend.c (cuda_backend_ops, device pointers, the generated kernels). A backend owns its
 * state: it allocates what hangs off ctx->be (init) and layer->be (layer_init) and frees it
 * (fini, release); nobody else looks inside. ctx.c picks the backend and calls init / fini and
 * release; layer.c checks the arguments of the public calls, compiles the layer's kernels itself
 * (the JIT) and hands the binaries down (load), then calls the per-step functions. A backend
 * makes its device context current itself where it needs one, and calls nothing in ctx.c or
 * layer.c (the message helpers of hot_internal.h are inline). */
#ifndef HOT_BACKEND_H
#define HOT_BACKEND_H

#include <stdint.h>

#include "hot_internal.h"

typedef struct hot_backend_ops {
  hot_backend kind; /* HOT_BACKEND_CPU or HOT_BACKEND_CUDA */
  /* The backend for ctx (the environment and options are resolved): sets ctx->be (may stay
   * NULL), and for a device ctx->device_name, ctx->arch / arch_known when not forced. On failure
   * sets ctx's message, returns the status and leaves nothing to release (ctx->be NULL). CUDA:
   * HOT_ERR_NO_DRIVER, HOT_ERR_NO_DEVICE, HOT_ERR_UNSUPPORTED (a compute capability hot has no
   * kernels for), HOT_ERR_INVALID (a forced arch the device cannot run), HOT_ERR_CUDA,
   * HOT_ERR_NOMEM. */
  hot_status (*init)(hot_ctx *ctx);
  /* Releases ctx->be; every layer is released already. NULL-safe on a NULL ctx->be. */
  void (*fini)(hot_ctx *ctx);
  /* A new layer of ctx (planned): sets layer->be (may stay NULL). HOT_OK or HOT_ERR_NOMEM
   * (message set). */
  hot_status (*layer_init)(hot_layer *layer);
  /* The layer's binaries, compiled by layer.c (jit: one per plan kernel, NULL for a template not
   * in this build, owned by the context's cache and valid while the layer lives), made ready to
   * run (CUDA: modules, kernels, scratch); called before every per-step call, so it returns at
   * once when ready. NULL: the backend runs no kernels (the CPU), and layer.c compiles only to
   * fill caches (a forced arch). */
  hot_status (*load)(hot_layer *layer, const hot_jit *jit);
  /* hot_layer_save / hot_layer_backward / hot_layer_calibrate after the argument checks (and
   * load): pointers of the backend's kind, `stream` a CUstream (ignored by the CPU). */
  hot_status (*save)(hot_layer *layer, const void *x, void *saved, void *stream);
  hot_status (*backward)(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                         float *g_x, float *g_w, float *g_b, uint32_t step, void *stream);
  hot_status (*calibrate)(hot_layer *layer, const void *g_y, uint32_t step, void *stream);
  /* hot_layer_check: the outcome of work still in flight (CUDA: overflow flags of the backwards
   * in flight, waiting for them); HOT_OK when nothing is pending. */
  hot_status (*check)(hot_layer *layer);
  /* hot_layer_kernel_times: the times of the layer's call number layer->calls (none when that
   * call ran without profiling or failed): copies min(max, total) into out, returns total.
   * NULL: the backend times nothing (the CPU). */
  int (*times)(const hot_layer *layer, hot_kernel_time *out, int max);
  /* Frees what the backend holds for the layer (buffers, scratch, modules, layer->be), once the
   * layer's work has completed. */
  void (*release)(hot_layer *layer);
  /* hot_stats.workspace_bytes: device memory the context's layers share for their calls. NULL:
   * none (the CPU). */
  int64_t (*workspace_bytes)(const hot_ctx *ctx);
  /* hot_ctx_set_cpu_threads / hot_ctx_cpu_threads: with n >= 0 (checked by the caller: at most
   * HOT_MAX_CPU_THREADS) sets the threads of the context's later calls (0: the count it started
   * with); returns the count in use. NULL: the backend runs no CPU threads (CUDA). */
  int (*cpu_threads)(hot_ctx *ctx, int n);
} hot_backend_ops;

extern const hot_backend_ops cpu_backend_ops;
extern const hot_backend_ops cuda_backend_ops;

/* Frees a layer's resources (the backend's, plan, JIT); the handle itself stays in the context's
 * list, marked dead by the caller, until hot_ctx_destroy. Inline: used by layer.c
 * (hot_layer_destroy) and ctx.c (hot_ctx_destroy) without a call between the two. */
static inline void layer_release(hot_layer *layer) {
  layer->ctx->ops->release(layer);
  layer->be = NULL;
  free(layer->plan);
  layer->plan = NULL;
  jit_free(&layer->jit);
}

#endif

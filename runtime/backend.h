/* backend.h — the one interface through which layer.c runs a layer's work on a backend. Each
 * backend fills a hot_backend_ops: cpu_backend.c (hot_cpu_ops, host pointers, the reference
 * twins) and cuda_backend.c (hot_cuda_ops, device pointers, the generated kernels). layer.c
 * checks the arguments of the public calls, then calls these; a backend makes its device
 * context current itself where it needs one. ctx.c picks the backend (hot_ctx.ops). */
#ifndef HOT_BACKEND_H
#define HOT_BACKEND_H

#include <stdint.h>

#include "hot_internal.h"

typedef struct hot_backend_ops {
  hot_backend kind; /* HOT_BACKEND_CPU or HOT_BACKEND_CUDA */
  /* hot_layer_compile after the checks: the layer's kernels ready to run (JIT, modules). */
  hot_status (*compile)(hot_layer *layer);
  /* hot_layer_save / hot_layer_backward / hot_layer_calibrate after the argument checks:
   * pointers of the backend's kind, `stream` a CUstream (ignored by the CPU). */
  hot_status (*save)(hot_layer *layer, const void *x, void *saved, void *stream);
  hot_status (*backward)(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                         float *g_x, float *g_w, float *g_b, uint32_t step, void *stream);
  hot_status (*calibrate)(hot_layer *layer, const void *g_y, uint32_t step, void *stream);
  /* hot_layer_check: the outcome of work still in flight (CUDA: the last backward's overflow
   * flags, waiting for them); HOT_OK when nothing is pending. */
  hot_status (*check)(hot_layer *layer);
  /* Frees what the backend holds for the layer (buffers, scratch, modules). */
  void (*release)(hot_layer *layer);
  /* Releases the context's backend state (device); the layers are released already. */
  void (*fini)(hot_ctx *ctx);
} hot_backend_ops;

extern const hot_backend_ops hot_cpu_ops;
extern const hot_backend_ops hot_cuda_ops;

/* cuda_backend.c: driver, device, arch, primary context of ctx (ctx.c tries it for backends cuda
 * and auto). On failure sets ctx's message and returns the status (HOT_ERR_NO_DRIVER,
 * HOT_ERR_NO_DEVICE, HOT_ERR_UNSUPPORTED, HOT_ERR_CUDA); nothing is left to release. */
hot_status cuda_ctx_init(hot_ctx *ctx);

/* ---- what layer.c offers the backends ------------------------------------------------------- */

/* Emits and finds/compiles the layer's kernels for ctx->arch (once per layer, one program per
 * distinct kernel, concurrently: jit.h); sets layer->jit, layer->missing and the context's
 * compile log. HOT_JIT_DEBUG dumps are jit.c's. */
hot_status layer_jit(hot_layer *layer);
/* "kernel hla_g: template templates/hla_project.cu not available in this build" for the first
 * missing kernel among the roles set in `need` (bit per hot_kernel_role); HOT_OK when none. */
hot_status layer_need_kernels(hot_layer *layer, unsigned need);
/* Frees a layer's resources (backend's, plan, JIT); the handle itself stays in the context's
 * list, marked dead, until hot_ctx_destroy. */
void layer_release(hot_layer *layer);

#endif

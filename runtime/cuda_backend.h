/* cuda_backend.h — the CUDA backend's state of a context and of a layer: allocated by
 * cuda_backend.c (init, layer_init) and hung off ctx->be and layer->be, which only the CUDA
 * backend's own files (cuda_backend.c, launch.c) and tests look into, through the accessors
 * below. Its functions are reached through backend.h only. */
#ifndef HOT_CUDA_BACKEND_H
#define HOT_CUDA_BACKEND_H

#include "cache.h"    /* hot_kernel_binary */
#include "cuda_api.h"
#include "hot_internal.h"
#include "module.h"
#include "kernel_desc.h" /* the layer's tables: hot_scratch_layout, hot_launch */
#include "plan.h"     /* HOT_MAX_KERNELS */

/* The CUDA side of a context (ctx->be). */
typedef struct {
  const cuda_driver *drv;
  CUdevice dev;
  CUcontext cuctx;    /* the device's primary context, retained */
  int retained;
  int cc_major, cc_minor;
  int sm_count;       /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: persistent kernels' grid.x cap */
  int versions_checked;  /* the compiler's version was compared with the driver's (once) */
  /* The workspace of every layer's calls (cuda_backend.c, "workspace"): one device allocation as
   * large as the largest layer's scratch, used by one call at a time. A call on another stream
   * than the previous user's first makes its stream wait for ws_ev (recorded after every call
   * that used the workspace), so calls from any streams never overlap in it; growing it waits
   * for ws_ev before the old allocation is freed. */
  CUdeviceptr ws;
  size_t ws_bytes;
  CUevent ws_ev;          /* created with the first allocation */
  int ws_pending;         /* ws_ev recorded and not waited for */
  CUstream ws_stream;     /* the stream of the last call that used it */
} hot_cuda_ctx;

/* Backwards whose overflow words may be on their way at once (per layer): a backward that finds
 * all slots pending waits for the oldest (cuEventSynchronize) before it runs. */
#define HOT_RANGE_SLOTS 8

/* The calls whose launches a layer keeps (hot_call: save, backward, calibrate). */
#define HOT_CALLS 3

/* The CUDA side of a layer: module, kernels by plan index, and the tables built once at load
 * (gen/kernel_desc.h): the layout of its device scratch (the pieces its kernel families declare)
 * and the launches of each call, so that a call asks the generator nothing. Scratch carries
 * nothing from one call to the next (the saved buffer is the only state between a save and its
 * backward), so it is not the layer's own: every call carves it out of the context's workspace
 * (hot_cuda_ctx.ws); cuda_layer_buf gives a piece's address during (and after) a call. */
typedef struct {
  hot_module *modules[HOT_MAX_KERNELS];  /* one per distinct binary (n_modules of them) */
  const hot_kernel_binary *module_bin[HOT_MAX_KERNELS]; /* the binary each module holds */
  int n_modules;
  int loaded;                            /* modules loaded and kernels looked up */
  const hot_kfunc *fn[HOT_MAX_KERNELS];  /* by plan kernel index; NULL: not in this build */
  int module_of[HOT_MAX_KERNELS];        /* by plan kernel index: its module, -1: none */
  hot_scratch_layout layout;             /* where each buffer of a call lies (kd_scratch_layout) */
  hot_launch *launch[HOT_CALLS];         /* each call's launches (kd_launch_list), malloc'ed */
  int n_launch[HOT_CALLS];
  int64_t saved_bytes;                   /* the saved buffer (layer_saved_bytes) */
  int64_t gap_at, gap_words;             /* the saved buffer's words a save zeroes (ABC's gap) */
  hot_gran lqs_coarse;                   /* plan_lqs_coarse: LQS's other candidate */
  const char *output[HOT_MAX_KERNELS];   /* by plan kernel index: the output it stores and that
                                            is watched for overflow ("g_x", ...), else NULL */
  CUdeviceptr scratch;                   /* the workspace during a call, carved by layout */
  size_t scratch_bytes;                  /* what the layer needs of it (layout.bytes) */
  CUdeviceptr saved;                     /* the layer-owned saved buffer (0 until first save) */
  /* Profiling (hot_ctx_set_profiling): a start and an end event per launch of the current call,
   * created on first need and kept until the layer is released; the launches of the last call. */
  CUevent prof_ev[2 * HOT_MAX_KERNEL_TIMES];
  int prof_events;                       /* events created so far */
  int prof_on;                           /* the current call records events */
  int prof_n;                            /* launches recorded by the current call */
  int prof_valid;                        /* times of the last call read back (0: none) */
  uint64_t prof_call;                    /* the layer's call number (layer->calls) they are of */
  struct { int kernel, role, phase; double ms; } prof[HOT_MAX_KERNEL_TIMES];
  /* Overflow of finite inputs (templates/CONTRACT.md): the hot_range_flag word of each module
   * that stores a backward output (g_x and g_w GEMMs, bias), zeroed before every backward and
   * copied back after it into the pinned host words of a slot of its own, followed by the slot's
   * event. Slots form a ring (oldest pending at range_head), so a backward never overwrites the
   * words of one not observed yet; an observed overflow is kept (report_*) until a call returns
   * it. The next call on the layer looks without waiting, hot_layer_check waits. */
  int range_ready;                       /* the words below are set up */
  int n_range;
  CUdeviceptr range_flag[3];
  hot_kernel_role range_role[3];         /* whose output each word watches */
  unsigned *range_host;                  /* cuMemAllocHost, HOT_RANGE_SLOTS * n_range words */
  CUevent range_ev[HOT_RANGE_SLOTS];
  uint32_t range_step[HOT_RANGE_SLOTS];  /* each pending slot's backward step */
  int range_head, range_count;           /* pending slots: range_head .. + range_count - 1 */
  int report;                            /* an observed overflow not returned yet */
  uint32_t report_step;                  /* the first such backward's step and output */
  hot_kernel_role report_role;           /* named by its descriptor's output ("g_x", ...) */
  int report_more;                       /* later overflowing backwards observed with it */
  /* Lifetime: an event recorded on the caller's stream after each save, backward and calibrate;
   * nothing of the layer (memory, modules, host words) is freed before it has completed. */
  CUevent done_ev;                       /* created at the first call */
  int done_pending;                      /* recorded and not waited for */
} hot_cuda_layer;

/* The backend's state of a context and of a layer of the CUDA backend (NULL elsewhere). */
static inline hot_cuda_ctx *cuda_ctx_of(const hot_ctx *ctx) { return (hot_cuda_ctx *)ctx->be; }
static inline hot_cuda_layer *cuda_layer_of(const hot_layer *layer) {
  return (hot_cuda_layer *)layer->be;
}

/* The address of workspace piece b of the layer's last call (0: no such piece); tests. */
static inline CUdeviceptr cuda_layer_buf(const hot_layer *layer, hot_lbuf b) {
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  return cu->layout.off[b] >= 0 && cu->scratch ? cu->scratch + (CUdeviceptr)cu->layout.off[b] : 0;
}

#endif

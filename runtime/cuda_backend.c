/* cuda_backend.c — the CUDA side (cuda_backend_ops, backend.h): driver and device at context
 * creation (primary context, arch from the compute capability, a forced arch checked against
 * it), caller pointers checked with cuPointerGetAttribute (memory type, device), the binaries
 * layer.c compiled loaded as modules with the layer's device scratch, the order of a step's
 * kernels on the caller's stream (the kernel descriptors' steps, gen/kernel_desc.h, in seq order;
 * launch.c launches them), overflow words, and the lifetime
 * event that every free waits for. Its state (cuda_backend.h) is allocated here and hung off
 * ctx->be / layer->be; it calls nothing in ctx.c or layer.c.
 *
 * Run on the recording fake driver by tests/runtime/test_api_fakecuda.c (host code only: the
 * kernels do not run) and on a device machine by test_api_gpu.c and test_api_gpu_life.c. Keep
 * it small; each driver call's failure is a status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda_backend.h"
#include "launch.h"
#include "nvrtc.h" /* nvrtc_compiler: the version of what made the cubins */
#include "ref.h"

#define ALIGN_UP(n, a) (((n) + (a) - 1) / (a) * (a))

/* A failed driver call -> the mapped status with "what: CUDA_ERROR_X (description)". */
static hot_status cu_fail(hot_ctx *ctx, CUresult r, const char *what) {
  char err[384];
  rt_status s = cuda_result_error(r, what, err, sizeof err);
  return ctx_fail(ctx, ctx_rt(s), "%s", err);
}

/* sm_XY cubins run on devices of the same major and a minor >= Y. */
static int arch_of(int major, int minor, hot_arch *out) {
  if (major == 8) {
    *out = minor >= 9 ? HOT_ARCH_SM89 : minor >= 6 ? HOT_ARCH_SM86 : HOT_ARCH_SM80;
    return 0;
  }
  if (major == 9) {
    *out = HOT_ARCH_SM90; /* sm_90a (wgmma) only when forced: HOT_ARCH=sm_90a */
    return 0;
  }
  return -1;
}

/* Whether cubins for `arch` run on a device of compute capability cc_major.cc_minor (hot.h,
 * HOT_ARCH): sm_XY on major X with minor >= Y; the arch-specific sm_90a on exactly 9.0. */
static int arch_runs_on(hot_arch arch, int cc_major, int cc_minor) {
  const hot_arch_caps *caps = plan_arch_caps(arch);
  if (!caps) return 0;
  const int a_major = caps->sm / 10, a_minor = caps->sm % 10;
  if (caps->wgmma) return cc_major == a_major && cc_minor == a_minor; /* sm_90a: exactly 9.0 */
  return cc_major == a_major && cc_minor >= a_minor;
}

/* Driver, device, compute capability and arch, primary context of ctx into *cu (backend.h
 * init's errors; nothing to release on failure). */
static hot_status cuda_ctx_setup(hot_ctx *ctx, hot_cuda_ctx *cu) {
  char err[512];
  rt_status r = cuda_driver_get(&cu->drv, err, sizeof err);
  if (r != RT_OK) return ctx_fail(ctx, ctx_rt(r), "%s", err);
  const cuda_driver *d = cu->drv;
  if (ctx->device >= d->device_count)
    return ctx_fail(ctx, HOT_ERR_NO_DEVICE, "no CUDA device: index %d requested, the driver "
                    "reports %d", ctx->device, d->device_count);
  CUresult c = d->cuDeviceGet(&cu->dev, ctx->device);
  if (c != CUDA_SUCCESS) return cu_fail(ctx, c, "cuDeviceGet");
  c = d->cuDeviceGetAttribute(&cu->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev);
  if (c == CUDA_SUCCESS)
    c = d->cuDeviceGetAttribute(&cu->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev);
  if (c != CUDA_SUCCESS) return cu_fail(ctx, c, "cuDeviceGetAttribute (compute capability)");
  c = d->cuDeviceGetAttribute(&cu->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cu->dev);
  if (c != CUDA_SUCCESS) return cu_fail(ctx, c, "cuDeviceGetAttribute (multiprocessor count)");
  if (d->cuDeviceGetName(ctx->device_name, (int)sizeof ctx->device_name, cu->dev) != CUDA_SUCCESS)
    snprintf(ctx->device_name, sizeof ctx->device_name, "device %d", ctx->device);
  hot_arch dev_arch;
  if (arch_of(cu->cc_major, cu->cc_minor, &dev_arch) != 0)
    return ctx_fail(ctx, HOT_ERR_UNSUPPORTED, "CUDA device %d (%s) has compute capability %d.%d; "
                    "hot generates kernels for 8.x and 9.0 (sm_80 ... sm_90a)", ctx->device,
                    ctx->device_name, cu->cc_major, cu->cc_minor);
  if (!ctx->arch_known) {
    ctx->arch = dev_arch;
    ctx->arch_known = 1;
  } else if (!arch_runs_on(ctx->arch, cu->cc_major, cu->cc_minor)) {
    const hot_arch_caps *caps = plan_arch_caps(ctx->arch);
    const int a_major = caps->sm / 10, a_minor = caps->sm % 10;
    if (caps->wgmma)
      return ctx_fail(ctx, HOT_ERR_INVALID, "%s '%s' cannot run on CUDA device %d (%s, compute "
                      "capability %d.%d): an arch-specific %s cubin runs only on compute "
                      "capability %d.%d", ctx->arch_origin, caps->name, ctx->device,
                      ctx->device_name, cu->cc_major, cu->cc_minor, caps->name, a_major, a_minor);
    return ctx_fail(ctx, HOT_ERR_INVALID, "%s '%s' cannot run on CUDA device %d (%s, compute "
                    "capability %d.%d): %s cubins run on compute capability %d.%d to %d.9 only "
                    "(same major, minor >= %d); leave the arch unset to use the device's (%s)",
                    ctx->arch_origin, caps->name, ctx->device, ctx->device_name, cu->cc_major,
                    cu->cc_minor, caps->name, a_major, a_minor, a_major, a_minor,
                    plan_arch_caps(dev_arch)->name);
  }
  c = d->cuDevicePrimaryCtxRetain(&cu->cuctx, cu->dev);
  if (c != CUDA_SUCCESS) return cu_fail(ctx, c, "cuDevicePrimaryCtxRetain");
  cu->retained = 1;
  return HOT_OK;
}

static hot_status ops_init(hot_ctx *ctx) {
  hot_cuda_ctx *cu = calloc(1, sizeof *cu);
  ctx->be = NULL;
  if (!cu) return ctx_fail(ctx, HOT_ERR_NOMEM, "out of memory");
  hot_status st = cuda_ctx_setup(ctx, cu);
  if (st != HOT_OK) {
    free(cu);
    return st;
  }
  ctx->be = cu;
  return HOT_OK;
}

static void ops_fini(hot_ctx *ctx) {
  hot_cuda_ctx *cu = cuda_ctx_of(ctx);
  if (!cu) return;
  if (cu->ws || cu->ws_ev) { /* the layers are gone: only the last call's work may remain */
    CUcontext prev;
    int pushed = cu->drv->cuCtxPushCurrent(cu->cuctx) == CUDA_SUCCESS;
    if (cu->ws_pending) (void)cu->drv->cuEventSynchronize(cu->ws_ev);
    if (cu->ws) cu->drv->cuMemFree(cu->ws);
    if (cu->ws_ev) cu->drv->cuEventDestroy(cu->ws_ev);
    if (pushed) cu->drv->cuCtxPopCurrent(&prev);
  }
  if (cu->retained) cu->drv->cuDevicePrimaryCtxRelease(cu->dev);
  free(cu);
  ctx->be = NULL;
}

static hot_status cuda_push(hot_ctx *ctx) {
  CUresult c = cuda_ctx_of(ctx)->drv->cuCtxPushCurrent(cuda_ctx_of(ctx)->cuctx);
  return c == CUDA_SUCCESS ? HOT_OK : cu_fail(ctx, c, "cuCtxPushCurrent");
}

static void cuda_pop(hot_ctx *ctx) {
  CUcontext prev;
  cuda_ctx_of(ctx)->drv->cuCtxPopCurrent(&prev);
}

/* p must be device (or managed) memory, of the context's device (managed memory of any). */
static hot_status check_ptr(hot_layer *layer, const void *p, const char *what) {
  unsigned int type = 0;
  CUresult c = cuda_ctx_of(layer->ctx)->drv->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                         (CUdeviceptr)(uintptr_t)p);
  if (c == CUDA_ERROR_INVALID_VALUE || (c == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST))
    return ctx_fail(layer->ctx, HOT_ERR_INVALID, "layer '%s': %s (%p) is host memory: the CUDA "
                    "backend expects device pointers", layer->spec.name, what, p);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuPointerGetAttribute");
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  int ordinal = -1;
  c = d->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                               (CUdeviceptr)(uintptr_t)p);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuPointerGetAttribute (device ordinal)");
  if (ordinal != layer->ctx->device) {
    int managed = 0; /* managed memory may be used from any device */
    if (d->cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS && managed)
      return HOT_OK;
    return ctx_fail(layer->ctx, HOT_ERR_INVALID, "layer '%s': %s (%p) is memory of CUDA device "
                    "%d, but the context runs on device %d (create a context per device)",
                    layer->spec.name, what, p, ordinal, layer->ctx->device);
  }
  return HOT_OK;
}

/* amax words of a layer: the per-tensor words, then one per sample for g' (HQ), then one per
 * scale group for x^ and for g^ where they are per sample (HLA, CONTRACT.md 6). */
static int64_t hla_sample_words(const hot_layer_plan *pl, const hot_quant *q) {
  return pl->hla.enabled && q->gran == HOT_GRAN_SAMPLE ? pl->hla.groups : 0;
}
static int64_t amax_words(const hot_layer_plan *pl) {
  return HOT_AMAX_WORDS + (pl->hq.enabled ? pl->B : 0) + hla_sample_words(pl, &pl->hla.x) +
         hla_sample_words(pl, &pl->hla.g);
}
/* The first amax word of x^ (abc_x) and of g^ (hla_g): the per-tensor word, or the group words. */
static CUdeviceptr amax_hla(const hot_layer *layer, int is_g) {
  const hot_layer_plan *pl = layer->plan;
  const hot_quant *q = is_g ? &pl->hla.g : &pl->hla.x;
  if (q->gran != HOT_GRAN_SAMPLE)
    return cuda_layer_of(layer)->amax + 4 * (CUdeviceptr)(is_g ? HOT_AMAX_HLA_G : HOT_AMAX_ABC_X);
  int64_t w = HOT_AMAX_WORDS + (pl->hq.enabled ? pl->B : 0) + (is_g ? hla_sample_words(pl, &pl->hla.x) : 0);
  return cuda_layer_of(layer)->amax + 4 * (CUdeviceptr)w;
}

/* Device scratch of the layer's calls, carved out of the context's workspace (each piece
 * 256-byte aligned):
 *   q_g, s_g      HQ g' codes (ref_hq_g_bytes) and T scales            (backward, HQ)
 *   q_w, s_w      HQ w' codes (ref_hq_w_bytes) and its scale           (backward, HQ)
 *   q_hg, s_hg    HLA g^ codes (ref_hla_g_bytes) and its hla.groups scales (backward, HLA)
 *   amax          HOT_AMAX_WORDS words, one per per-tensor amax, then B words for the
 *                 per-sample amax of g' (HQ), then hla.groups words each for x^ and g^ where
 *                 they are per sample (amax_hla)                          (every call)
 *   s_sawb        1 + hla.groups floats: SAWB scale of w', then of x^ (one, or one per group)
 *   math          fp32 math tensor read by sawb.cu: max(o_pad*I, K*I) of the planned SAWB roles
 *   partials      doubles: max(2 ceil(n/1024)) over the planned SAWB roles and LQS (n = T*O)
 *   lqs_rs, lqs_res, lqs_choice   T floats, 2 doubles, 1 int                (LQS)
 *   q_hx          the saved codes unpacked into the g_w GEMM's layout (HOT_BUF_Q_HX), when the
 *                 plan has abc_unpack (plan_saved_unpacked: K != k_pad); else the GEMM reads
 *                 the saved buffer in place                              (backward, ABC)
 * Pieces of roles the plan does not have get no room (their pointers stay 0). Every piece is
 * written by the call before it is read (the amax words are zeroed first), so nothing is carried
 * from one call to the next and layers can take turns in one allocation. */
enum { N_PIECES = 14 };

static void scratch_sizes(const hot_layer *layer, size_t sz[N_PIECES]) {
  const hot_layer_plan *pl = layer->plan;
  int sawb_w = plan_kernel_index(pl, HOT_K_SAWB_W) >= 0;
  int sawb_x = plan_kernel_index(pl, HOT_K_SAWB_X) >= 0;
  int lqs = plan_kernel_index(pl, HOT_K_LQS) >= 0;
  int unpack = plan_kernel_index(pl, HOT_K_ABC_UNPACK) >= 0;
  const size_t v[N_PIECES] = {
      (size_t)plan_buffer_bytes(pl, HOT_BUF_Q_G),            /* q_g (the plan's sizes) */
      (size_t)plan_buffer_bytes(pl, HOT_BUF_S_G),            /* s_g: T floats */
      (size_t)plan_buffer_bytes(pl, HOT_BUF_Q_W),            /* q_w */
      4,                                                     /* s_w */
      (size_t)plan_buffer_bytes(pl, HOT_BUF_Q_HG),           /* q_g^ */
      (size_t)pl->hla.groups * 4,                            /* s_g^: one per scale group */
      (size_t)amax_words(pl) * 4,                            /* amax words */
      (sawb_w || sawb_x) ? (size_t)(1 + pl->hla.groups) * 4 : 0, /* s_sawb */
      (size_t)plan_buffer_bytes(pl, HOT_BUF_MATH),           /* math */
      (size_t)plan_buffer_bytes(pl, HOT_BUF_PARTIALS),       /* partials */
      lqs ? (size_t)pl->T * 4 : 0,                           /* lqs_rs */
      lqs ? 2 * 8 : 0,                                       /* lqs_res */
      lqs ? 4 : 0,                                           /* lqs_choice */
      unpack ? (size_t)plan_buffer_bytes(pl, HOT_BUF_Q_HX) : 0}; /* q_hx */
  memcpy(sz, v, sizeof v);
}

/* The layer's pieces: offsets and the bytes it needs of the workspace (at load). */
static void scratch_layout(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  size_t sz[N_PIECES], total = 0;
  scratch_sizes(layer, sz);
  for (int i = 0; i < N_PIECES; ++i) {
    cu->scratch_off[i] = total;
    total += ALIGN_UP(sz[i], 256); /* GEMM operands need 16 bytes; 256 keeps rows apart */
  }
  cu->scratch_bytes = total;
}

/* Makes the context's workspace at least `need` bytes. Growing waits for the last call that used
 * it (ws_ev) before the old allocation is freed; on failure the workspace is empty (a later call
 * tries again) and the status names the allocation. */
static hot_status ws_reserve(hot_ctx *ctx, size_t need) {
  hot_cuda_ctx *c = cuda_ctx_of(ctx);
  const cuda_driver *d = c->drv;
  if (need <= c->ws_bytes) return HOT_OK;
  CUresult r = CUDA_SUCCESS;
  if (!c->ws_ev) r = d->cuEventCreate(&c->ws_ev, 2 /* CU_EVENT_DISABLE_TIMING */);
  if (r != CUDA_SUCCESS) {
    c->ws_ev = 0;
    return cu_fail(ctx, r, "cuEventCreate (workspace)");
  }
  if (c->ws) {
    if (c->ws_pending) (void)d->cuEventSynchronize(c->ws_ev); /* the old one may be in use */
    c->ws_pending = 0;
    d->cuMemFree(c->ws);
    c->ws = 0;
    c->ws_bytes = 0;
  }
  r = d->cuMemAlloc(&c->ws, need);
  if (r != CUDA_SUCCESS) {
    c->ws = 0;
    return cu_fail(ctx, r, "cuMemAlloc (workspace)");
  }
  c->ws_bytes = need;
  return HOT_OK;
}

/* Before a call's first launch on `stream`: the workspace is large enough for the layer, the
 * stream waits for the previous user when that was on another stream, and the layer's piece
 * pointers point into it. */
static hot_status scratch_bind(hot_layer *layer, CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  hot_cuda_ctx *c = cuda_ctx_of(layer->ctx);
  hot_status st = ws_reserve(layer->ctx, cu->scratch_bytes);
  if (st != HOT_OK) return st;
  if (c->ws_pending && c->ws_stream != stream) {
    CUresult r = c->drv->cuStreamWaitEvent(stream, c->ws_ev, 0);
    if (r != CUDA_SUCCESS) return cu_fail(layer->ctx, r, "cuStreamWaitEvent (workspace)");
  }
  size_t sz[N_PIECES];
  scratch_sizes(layer, sz);
  CUdeviceptr *dst[N_PIECES] = {&cu->q_g,  &cu->s_g,  &cu->q_w,      &cu->s_w,    &cu->q_hg,
                                &cu->s_hg, &cu->amax, &cu->s_sawb,   &cu->math,   &cu->partials,
                                &cu->lqs_rs, &cu->lqs_res, &cu->lqs_choice, &cu->q_hx};
  cu->scratch = c->ws;
  for (int i = 0; i < N_PIECES; ++i) *dst[i] = sz[i] ? c->ws + cu->scratch_off[i] : 0;
  return HOT_OK;
}

/* After a call's work is enqueued on `stream` (also after a failure midway): the next user of
 * the workspace on another stream waits for this event. When it cannot be recorded, the stream
 * is synchronised instead (its failure returned when st is HOT_OK). */
static hot_status scratch_unbind(hot_layer *layer, hot_status st, CUstream stream) {
  hot_cuda_ctx *c = cuda_ctx_of(layer->ctx);
  CUresult r = c->ws_ev ? c->drv->cuEventRecord(c->ws_ev, stream) : CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    c->ws_pending = 1;
    c->ws_stream = stream;
    return st;
  }
  c->ws_pending = 0;
  CUresult w = c->drv->cuStreamSynchronize(stream);
  if (st != HOT_OK) return st;
  return w == CUDA_SUCCESS ? HOT_OK : cu_fail(layer->ctx, w, "cuStreamSynchronize (workspace)");
}

/* The binaries layer.c compiled (jit), loaded: modules, kernels by plan index, scratch. */
static hot_status cuda_layer_load(hot_layer *layer, const hot_jit *jit) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  if (cu->loaded) return HOT_OK;
  char err[512];
  const hot_layer_plan *pl = layer->plan;
  /* One module per distinct binary (a layer's kernels are separate programs, jit.h). */
  for (int i = 0; i < pl->n_kernels; ++i) {
    const hot_kernel_binary *bin = jit->bin[i];
    if (!bin) continue; /* template not in this build */
    int m = 0;
    while (m < cu->n_modules && cu->module_bin[m] != bin) ++m;
    if (m == cu->n_modules) {
      rt_status r = module_load(&cu->modules[m], bin->cubin, bin->cubin_size, pl->kernels[i].name,
                                err, sizeof err);
      if (r != RT_OK)
        return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
      cu->module_bin[m] = bin;
      cu->n_modules++;
    }
    cu->module_of[i] = m;
    rt_status r = module_function(cu->modules[m], pl->kernels[i].name, &cu->fn[i], err, sizeof err);
    if (r != RT_OK) return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
  }
  scratch_layout(layer);
  hot_status st = ws_reserve(layer->ctx, cu->scratch_bytes); /* an allocation failure shows now */
  if (st == HOT_OK) cu->loaded = 1;
  return st;
}

static void cuda_prof_begin(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  cu->prof_on = layer->ctx->profiling;
  cu->prof_n = 0;
  cu->prof_valid = 0;
}

static hot_status cuda_prof_end(hot_layer *layer, hot_status st, CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  int on = cu->prof_on;
  cu->prof_on = 0;
  if (!on || st != HOT_OK) {
    cu->prof_n = 0;
    return st;
  }
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  CUresult c = d->cuStreamSynchronize(stream);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuStreamSynchronize (profiling)");
  for (int i = 0; i < cu->prof_n; ++i) {
    float ms = 0.0f;
    c = d->cuEventElapsedTime(&ms, cu->prof_ev[2 * i], cu->prof_ev[2 * i + 1]);
    if (c != CUDA_SUCCESS) {
      cu->prof_n = 0;
      return cu_fail(layer->ctx, c, "cuEventElapsedTime (profiling)");
    }
    cu->prof[i].ms = (double)ms;
  }
  cu->prof_valid = 1;
  cu->prof_call = layer->calls;
  return HOT_OK;
}

static void cuda_layer_free(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  for (int i = 0; i < cu->prof_events; ++i) d->cuEventDestroy(cu->prof_ev[i]);
  if (cu->saved) d->cuMemFree(cu->saved);
  for (int m = 0; m < cu->n_modules; ++m) module_unload(cu->modules[m]);
  memset(cu, 0, sizeof *cu);
}

/* What the CUDA backend cannot run (the CPU backend runs it): layers whose save keeps an fp32
 * copy of x (abc or hla disabled: the plan then has no abc_x kernel, and g_w would be an fp32
 * product), and g_x without HQ (an fp32 product). Every planned kernel role has launch code. */
static hot_status check_features(hot_layer *layer, int backward) {
  const hot_layer_plan *pl = layer->plan;
  const char *why = NULL;
  if (!pl->abc.enabled) why = "saving x without ABC (abc or hla disabled)";
  else if (backward && !pl->hq.enabled) why = "g_x without HQ (an fp32 product)";
  if (!why) return HOT_OK;
  return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': %s is not implemented on the CUDA "
                  "backend (the CPU backend runs it)", layer->spec.name, why);
}

#define ROLE(r) (1u << (r))

/* The device buffers of a call (kernel_desc.h's hot_launch_in): the caller's pointers, the
 * layer's scratch, and the amax words of each quantizer (per tensor or per sample, amax_hla). */
static void call_buffers(hot_layer *layer, const void *x, const void *saved, const void *g_y,
                         const void *w, float *g_x, float *g_w, float *g_b, uint32_t step,
                         hot_launch_in *in) {
  const hot_layer_plan *pl = layer->plan;
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  memset(in, 0, sizeof *in);
  uint64_t *b = in->buf;
  const CUdeviceptr sv = saved ? (CUdeviceptr)(uintptr_t)saved : cu->saved;
  b[HOT_LB_X] = (CUdeviceptr)(uintptr_t)x;
  b[HOT_LB_SAVED] = sv;
  b[HOT_LB_S_X] = sv && pl->abc.enabled ? sv + (CUdeviceptr)plan_saved_scale_offset(pl) : 0;
  b[HOT_LB_Q_HX] = cu->q_hx ? cu->q_hx : sv; /* the g_w GEMM's q_x^: unpacked, or in place */
  b[HOT_LB_GY] = (CUdeviceptr)(uintptr_t)g_y;
  b[HOT_LB_W] = (CUdeviceptr)(uintptr_t)w;
  b[HOT_LB_GX] = (CUdeviceptr)(uintptr_t)g_x;
  b[HOT_LB_GW] = (CUdeviceptr)(uintptr_t)g_w;
  b[HOT_LB_GB] = (CUdeviceptr)(uintptr_t)g_b;
  b[HOT_LB_Q_G] = cu->q_g, b[HOT_LB_S_G] = cu->s_g, b[HOT_LB_Q_W] = cu->q_w, b[HOT_LB_S_W] = cu->s_w;
  b[HOT_LB_Q_HG] = cu->q_hg, b[HOT_LB_S_HG] = cu->s_hg;
  /* g': per sample = one amax word a sample (after the per-tensor words), else its own word */
  in->per_sample_g = layer->gran == HOT_GRAN_SAMPLE;
  b[HOT_LB_AMAX_G] = cu->amax + 4 * (CUdeviceptr)(in->per_sample_g ? HOT_AMAX_WORDS : HOT_AMAX_HQ_G);
  b[HOT_LB_AMAX_W] = cu->amax + 4 * HOT_AMAX_HQ_W;
  b[HOT_LB_AMAX_HG] = amax_hla(layer, 1);
  b[HOT_LB_AMAX_X] = amax_hla(layer, 0);
  b[HOT_LB_AMAX_LQS] = cu->amax + 4 * HOT_AMAX_WORDS;
  b[HOT_LB_S_SAWB_W] = cu->s_sawb;
  b[HOT_LB_S_SAWB_X] = cu->s_sawb ? cu->s_sawb + 4 : 0;
  b[HOT_LB_MATH] = cu->math, b[HOT_LB_PARTIALS] = cu->partials;
  b[HOT_LB_LQS_RS] = cu->lqs_rs, b[HOT_LB_LQS_RES] = cu->lqs_res;
  b[HOT_LB_LQS_CHOICE] = cu->lqs_choice;
  in->seed = layer->seed;
  in->step = step;
}

/* Whether a step runs in this call (g_b: the caller asked for the bias gradient). */
static int step_runs(const hot_layer *layer, const hot_step *s, const void *g_b) {
  switch (s->when) {
  case HOT_WHEN_PLANNED: return plan_kernel_index(layer->plan, s->role) >= 0;
  case HOT_WHEN_GRAN_ROW: return layer->gran == HOT_GRAN_ROW;
  case HOT_WHEN_GRAN_NOT_ROW: return layer->gran != HOT_GRAN_ROW;
  case HOT_WHEN_BIAS: return g_b != NULL;
  case HOT_WHEN_ALWAYS: return 1;
  }
  return 0;
}

/* The steps of `call` that run, in order, into steps (n_out), and the roles they need. */
static unsigned call_steps(const hot_layer *layer, hot_call call, const void *g_b, hot_step *steps,
                           int *n_out) {
  hot_step all[64];
  const int n = kd_steps(call, all, 64);
  unsigned need = 0;
  *n_out = 0;
  for (int i = 0; i < n; ++i)
    if (step_runs(layer, &all[i], g_b)) {
      steps[(*n_out)++] = all[i];
      need |= ROLE(all[i].role);
    }
  return need;
}

/* Nothing is launched unless every needed kernel is compiled and launchable. */
static hot_status check_need(hot_layer *layer, unsigned need) {
  hot_status st = launch_need_kernels(layer, need);
  return st ? st : launch_check(layer, need);
}

static hot_status run_steps(hot_layer *layer, const hot_step *steps, int n, const hot_launch_in *in,
                            CUstream stream) {
  hot_status st = HOT_OK;
  for (int i = 0; i < n && !st; ++i) st = launch_step(layer, steps[i].role, steps[i].phase, in, stream);
  return st;
}

/* Forward (ABC): x -> the saved codes at dst (I rows of hla.k int8, unpadded), zero bytes up to
 * plan_saved_scale_offset and s_x^ (hla.groups floats) there, the CPU backend's layout:
 * memset(x^'s amax words) [memset of the words that hold the alignment gap, before the codes
 * that share its first word are written], then the save steps (abc_x 0 [sawb_x 0, 1] abc_x 1). */
static hot_status cuda_layer_save(hot_layer *layer, const void *x, void *saved, CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  hot_step steps[64];
  int n = 0;
  hot_status st = check_features(layer, 0);
  const unsigned need = call_steps(layer, HOT_CALL_SAVE, NULL, steps, &n);
  if (!st) st = check_need(layer, need);
  if (!st) st = check_ptr(layer, x, "x");
  if (!st && saved) st = check_ptr(layer, saved, "saved");
  if (st) return st;
  if (!saved && !cuda_layer_of(layer)->saved) { /* the layer's own buffer, kept until destroy */
    CUresult c = cuda_ctx_of(layer->ctx)->drv->cuMemAlloc(&cuda_layer_of(layer)->saved,
                                                (size_t)layer_saved_bytes(pl));
    if (c != CUDA_SUCCESS) {
      cuda_layer_of(layer)->saved = 0;
      return cu_fail(layer->ctx, c, "cuMemAlloc (saved activations)");
    }
  }
  hot_launch_in in;
  call_buffers(layer, x, saved, NULL, NULL, NULL, NULL, NULL, 0, &in);
  st = launch_zero(layer, in.buf[HOT_LB_AMAX_X],
                   (size_t)(pl->hla.x.gran == HOT_GRAN_SAMPLE ? pl->hla.groups : 1), stream);
  const int64_t nc = plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES), off = plan_saved_scale_offset(pl);
  if (!st && off > nc) /* whole words from the one holding the last code byte to the scales */
    st = launch_zero(layer, in.buf[HOT_LB_SAVED] + (CUdeviceptr)(nc & ~(int64_t)3),
                     (size_t)((off - (nc & ~(int64_t)3)) / 4), stream);
  return st ? st : run_steps(layer, steps, n, &in, stream);
}

/* Backward: memset(amax words), then the backward steps: HQ g' (per token: phase 2; per tensor /
 * sample: phases 0, 1) ; HQ w' phase 0 (SAWB: with math_out, then sawb_w phases 0, 1) and phase 1
 * (SAWB: scale_in) ; HLA g^ phases 0, 1 ; [abc_unpack: the saved codes into q_hx] ; GEMM g_x ;
 * GEMM g_w (q_x^ from q_hx or the saved buffer, s_x^ from the saved buffer) ; bias. */
static hot_status cuda_layer_backward(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                               float *g_x, float *g_w, float *g_b, uint32_t step,
                               CUstream stream) {
  hot_step steps[64];
  int n = 0;
  hot_status st = check_features(layer, 1);
  const unsigned need = call_steps(layer, HOT_CALL_BACKWARD, g_b, steps, &n);
  if (!st) st = check_need(layer, need); /* nothing is launched unless everything can be */
  if (!st) st = check_ptr(layer, g_y, "g_y");
  if (!st) st = check_ptr(layer, w, "w");
  if (!st) st = check_ptr(layer, g_x, "g_x");
  if (!st) st = check_ptr(layer, g_w, "g_w");
  if (!st && g_b) st = check_ptr(layer, g_b, "g_b");
  if (!st && saved) st = check_ptr(layer, saved, "saved");
  if (st) return st;
  hot_launch_in in;
  call_buffers(layer, NULL, saved, g_y, w, g_x, g_w, g_b, step, &in);
  st = launch_zero(layer, cuda_layer_of(layer)->amax, (size_t)amax_words(layer->plan), stream);
  return st ? st : run_steps(layer, steps, n, &in, stream);
}

/* Calibration (LQS): memset(the B per-sample amax words) ; lqs phases 0, 1, 2 ;
 * cuStreamSynchronize ; read back choice and both errors ; the layer's granularity = per token or
 * plan_lqs_coarse (ref_layer_calibrate's rule, evaluated on the device bit for bit). */
static hot_status cuda_layer_calibrate(hot_layer *layer, const void *g_y, uint32_t step,
                                CUstream stream) {
  hot_step steps[64];
  int n = 0;
  const unsigned need = call_steps(layer, HOT_CALL_CALIBRATE, NULL, steps, &n);
  hot_status st = check_need(layer, need);
  if (!st) st = check_ptr(layer, g_y, "g_y");
  if (st) return st;
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  hot_launch_in in;
  call_buffers(layer, NULL, NULL, g_y, NULL, NULL, NULL, NULL, step, &in);
  st = launch_zero(layer, in.buf[HOT_LB_AMAX_LQS], (size_t)layer->plan->B, stream);
  if (!st) st = run_steps(layer, steps, n, &in, stream);
  if (st) return st;
  CUresult c = d->cuStreamSynchronize(stream);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuStreamSynchronize (LQS)");
  double res[2];
  int choice = -1;
  c = d->cuMemcpyDtoH(res, cu->lqs_res, sizeof res);
  if (c == CUDA_SUCCESS) c = d->cuMemcpyDtoH(&choice, cu->lqs_choice, sizeof choice);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuMemcpyDtoH (LQS result)");
  if (choice != 0 && choice != 1)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': LQS kernel wrote choice %d",
                    layer->spec.name, choice);
  layer->gran = choice ? HOT_GRAN_ROW : plan_lqs_coarse(layer->plan);
  layer->lqs_e_tensor = res[0];
  layer->lqs_e_token = res[1];
  return HOT_OK;
}

/* ---- overflow flags (templates/CONTRACT.md "Overflow of finite inputs") --------------------- */

/* Finds the flag word of the output kernels' modules and the pinned words and events they are
 * copied back with (HOT_RANGE_SLOTS slots); a module without the word (an older template) is not
 * watched. */
static hot_status range_setup(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  if (cu->range_ready) return HOT_OK;
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  char err[512];
  cu->n_range = 0;
  for (int k = 0; k < layer->plan->n_kernels && cu->n_range < 3; ++k) {
    const hot_kernel_desc *kd = kd_of(&layer->plan->kernels[k]);
    if (!kd || !kd->output || !kd->output(layer->plan->kernels[k].role)) continue;
    int m = cu->module_of[k];
    if (m < 0) continue; /* no binary: template not in this build */
    size_t bytes = 0;
    CUdeviceptr p = 0;
    rt_status rs = module_global(cu->modules[m], "hot_range_flag", &p, &bytes, err, sizeof err);
    if (rs == RT_ERR_NOT_FOUND) continue;
    if (rs != RT_OK) return ctx_fail(layer->ctx, ctx_rt(rs), "layer '%s': %s", layer->spec.name, err);
    if (bytes != sizeof(unsigned))
      return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': hot_range_flag of kernel %s has "
                      "%zu bytes, expected %zu", layer->spec.name, layer->plan->kernels[k].name,
                      bytes, sizeof(unsigned));
    cu->range_flag[cu->n_range] = p;
    cu->range_role[cu->n_range++] = layer->plan->kernels[k].role;
  }
  if (cu->n_range) {
    void *h = NULL;
    CUresult c = d->cuMemAllocHost(&h, sizeof(unsigned) * (size_t)cu->n_range * HOT_RANGE_SLOTS);
    if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuMemAllocHost (overflow flags)");
    cu->range_host = h;
    for (int i = 0; i < HOT_RANGE_SLOTS; ++i) {
      c = d->cuEventCreate(&cu->range_ev[i], 2 /* CU_EVENT_DISABLE_TIMING */);
      if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuEventCreate (overflow flags)");
    }
  }
  cu->range_ready = 1;
  return HOT_OK;
}

/* Reads the words of the oldest pending slot (its event has completed) into the kept report and
 * frees the slot. */
static void range_harvest(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const int s = cu->range_head;
  const unsigned *w = cu->range_host + (size_t)s * (size_t)cu->n_range;
  for (int i = 0; i < cu->n_range; ++i)
    if (w[i]) {
      if (!cu->report) {
        cu->report = 1;
        cu->report_step = cu->range_step[s];
        cu->report_role = cu->range_role[i];
        cu->report_more = 0;
      } else {
        cu->report_more++;
      }
      break;
    }
  cu->range_head = (cu->range_head + 1) % HOT_RANGE_SLOTS;
  cu->range_count--;
}

/* Observes every pending slot whose words have arrived, oldest first (wait: all of them,
 * waiting), then returns the kept report, once: HOT_ERR_RANGE naming the first overflowing
 * backward not reported yet (and how many later ones overflowed too), else HOT_OK. */
static hot_status range_poll(hot_layer *layer, int wait) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  while (cu->range_count) {
    CUevent ev = cu->range_ev[cu->range_head];
    CUresult c = wait ? d->cuEventSynchronize(ev) : d->cuEventQuery(ev);
    if (c == CUDA_ERROR_NOT_READY) break;
    if (c != CUDA_SUCCESS)
      return cu_fail(layer->ctx, c, wait ? "cuEventSynchronize (overflow flags)"
                                         : "cuEventQuery (overflow flags)");
    range_harvest(layer);
  }
  if (!cu->report) return HOT_OK;
  cu->report = 0;
  char more[96] = "";
  if (cu->report_more)
    snprintf(more, sizeof more, " (and %d later backward%s of this layer overflowed too)",
             cu->report_more, cu->report_more > 1 ? "s" : "");
  const int rk = plan_kernel_index(layer->plan, cu->report_role);
  const hot_kernel_desc *kd = rk >= 0 ? kd_of(&layer->plan->kernels[rk]) : NULL;
  const char *out = kd && kd->output ? kd->output(cu->report_role) : NULL;
  return ctx_fail(layer->ctx, HOT_ERR_RANGE, "layer '%s': the backward of step %u overflowed "
                  "fp32: %s holds Inf/NaN (finite inputs too close to FLT_MAX); its outputs "
                  "must not be used%s", layer->spec.name, (unsigned)cu->report_step,
                  out ? out : "an output", more);
}

/* Before a backward: a free slot for its words. With every slot pending, waits for the oldest
 * and observes it; an overflow found so is returned (HOT_ERR_RANGE) and the backward does not
 * run. */
static hot_status range_reserve(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  if (!cu->n_range || cu->range_count < HOT_RANGE_SLOTS) return HOT_OK;
  CUresult c = cuda_ctx_of(layer->ctx)->drv->cuEventSynchronize(cu->range_ev[cu->range_head]);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuEventSynchronize (overflow flags)");
  range_harvest(layer);
  return range_poll(layer, 0);
}

static hot_status range_begin(hot_layer *layer, CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  for (int i = 0; i < cu->n_range; ++i) {
    CUresult c = cuda_ctx_of(layer->ctx)->drv->cuMemsetD32Async(cu->range_flag[i], 0u, 1, stream);
    if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuMemsetD32Async (overflow flag)");
  }
  return HOT_OK;
}

/* After a backward: the words back to the host into the next free slot, then the slot's event
 * (nothing waits here). */
static hot_status range_end(hot_layer *layer, uint32_t step, CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  if (!cu->n_range) return HOT_OK;
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  const int s = (cu->range_head + cu->range_count) % HOT_RANGE_SLOTS;
  unsigned *w = cu->range_host + (size_t)s * (size_t)cu->n_range;
  for (int i = 0; i < cu->n_range; ++i) {
    CUresult c = d->cuMemcpyDtoHAsync(&w[i], cu->range_flag[i], sizeof(unsigned), stream);
    if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuMemcpyDtoHAsync (overflow flag)");
  }
  CUresult c = d->cuEventRecord(cu->range_ev[s], stream);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuEventRecord (overflow flags)");
  cu->range_step[s] = step;
  cu->range_count++;
  return HOT_OK;
}

static void range_free(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  if (cu->range_host) d->cuMemFreeHost(cu->range_host);
  for (int i = 0; i < HOT_RANGE_SLOTS; ++i)
    if (cu->range_ev[i]) d->cuEventDestroy(cu->range_ev[i]);
  cu->range_host = NULL;
  memset(cu->range_ev, 0, sizeof cu->range_ev);
}

/* ---- lifetime: what the caller's stream may still use ---------------------------------------- */

/* After a call's work is enqueued on `stream` (also after a failure midway: some of it may be):
 * records the layer's event (created at the first call) and returns st. When the event cannot be
 * created or recorded, the stream is synchronised instead (its failure returned when st is
 * HOT_OK). */
static hot_status done_record(hot_layer *layer, hot_status st, CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  CUresult c = CUDA_SUCCESS;
  if (!cu->done_ev) c = d->cuEventCreate(&cu->done_ev, 2 /* CU_EVENT_DISABLE_TIMING */);
  if (c == CUDA_SUCCESS) c = d->cuEventRecord(cu->done_ev, stream);
  if (c == CUDA_SUCCESS) {
    cu->done_pending = 1;
    return st;
  }
  /* the work cannot be tracked: wait for it here instead, so nothing stays pending */
  CUresult w = d->cuStreamSynchronize(stream);
  if (st != HOT_OK) return st;
  return w == CUDA_SUCCESS ? HOT_OK : cu_fail(layer->ctx, w, "cuStreamSynchronize (layer lifetime)");
}

/* Waits until the work of the layer's last call has completed (hot.h: nothing of a layer is
 * freed while its kernels may run). Errors of the wait are ignored: the memory goes either way. */
static void done_wait(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  hot_cuda_ctx *c = cuda_ctx_of(layer->ctx);
  if (cu->done_pending && cu->done_ev) (void)c->drv->cuEventSynchronize(cu->done_ev);
  cu->done_pending = 0;
  /* and the workspace's last user (recorded after the layer's own event when that was this
   * layer; another layer's call otherwise: destroying waits for it too, a little more than
   * needed, never less) */
  if (c->ws_pending && c->ws_ev) (void)c->drv->cuEventSynchronize(c->ws_ev);
  c->ws_pending = 0;
}

/* ---- the backend interface (backend.h) ------------------------------------------------------ */

/* Once per context, before the first module is loaded: the compiler that made the cubins (when
 * it is NVRTC: its identity "nvrtc-X.Y") against the driver (cuda_versions_check). A compiler
 * that cannot say its version (no NVRTC: every kernel from a cache or a pack) is not checked. */
static hot_status cuda_versions(hot_ctx *ctx) {
  if (cuda_ctx_of(ctx)->versions_checked) return HOT_OK;
  const hot_compiler *cc = ctx->compiler ? ctx->compiler : nvrtc_compiler();
  char id[64], err[512];
  int major = 0, minor = 0;
  if (cc->version && cc->version(cc->user, id, sizeof id, err, sizeof err) == RT_OK &&
      cuda_nvrtc_version_parse(id, &major, &minor) == 0) {
    rt_status r = cuda_versions_check(cuda_ctx_of(ctx)->drv->version, major, minor, err, sizeof err);
    if (r != RT_OK) return ctx_fail(ctx, ctx_rt(r), "%s", err);
  }
  cuda_ctx_of(ctx)->versions_checked = 1;
  return HOT_OK;
}

/* The binaries layer.c compiled, loaded with the device context current (the compiler's
 * version checked against the driver's first). */
static hot_status ops_load(hot_layer *layer, const hot_jit *jit) {
  if (cuda_layer_of(layer)->loaded) return HOT_OK;
  hot_status st = cuda_push(layer->ctx);
  if (st != HOT_OK) return st;
  st = cuda_versions(layer->ctx);
  if (st == HOT_OK) st = cuda_layer_load(layer, jit);
  cuda_pop(layer->ctx);
  return st;
}

static hot_status ops_save(hot_layer *layer, const void *x, void *saved, void *stream) {
  hot_status st = cuda_push(layer->ctx);
  if (st != HOT_OK) return st;
  if ((st = range_poll(layer, 0)) == HOT_OK) {
    cuda_prof_begin(layer);
    const int bound = (st = scratch_bind(layer, (CUstream)stream)) == HOT_OK;
    if (bound) st = cuda_layer_save(layer, x, saved, (CUstream)stream);
    st = done_record(layer, st, (CUstream)stream);
    if (bound) st = scratch_unbind(layer, st, (CUstream)stream); /* the last event recorded */
    st = cuda_prof_end(layer, st, (CUstream)stream);
  }
  cuda_pop(layer->ctx);
  return st;
}

static hot_status ops_backward(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                               float *g_x, float *g_w, float *g_b, uint32_t step, void *stream) {
  hot_status st = cuda_push(layer->ctx);
  if (st != HOT_OK) return st;
  if ((st = range_poll(layer, 0)) == HOT_OK && (st = range_setup(layer)) == HOT_OK && (st = range_reserve(layer)) == HOT_OK) {
    int prof = layer->ctx->profiling;
    cuda_prof_begin(layer);
    st = range_begin(layer, (CUstream)stream);
    const int bound = st == HOT_OK && (st = scratch_bind(layer, (CUstream)stream)) == HOT_OK;
    if (bound) st = cuda_layer_backward(layer, g_y, w, saved, g_x, g_w, g_b, step, (CUstream)stream);
    if (st == HOT_OK) st = range_end(layer, step, (CUstream)stream);
    st = done_record(layer, st, (CUstream)stream);
    if (bound) st = scratch_unbind(layer, st, (CUstream)stream); /* the last event recorded */
    st = cuda_prof_end(layer, st, (CUstream)stream);
    if (st == HOT_OK && prof) st = range_poll(layer, 0); /* synchronised already: report now */
  }
  cuda_pop(layer->ctx);
  return st;
}

static hot_status ops_calibrate(hot_layer *layer, const void *g_y, uint32_t step, void *stream) {
  hot_status st = cuda_push(layer->ctx);
  if (st != HOT_OK) return st;
  if ((st = range_poll(layer, 0)) == HOT_OK) {
    cuda_prof_begin(layer);
    const int bound = (st = scratch_bind(layer, (CUstream)stream)) == HOT_OK;
    if (bound) st = cuda_layer_calibrate(layer, g_y, step, (CUstream)stream);
    st = done_record(layer, st, (CUstream)stream);
    if (bound) st = scratch_unbind(layer, st, (CUstream)stream); /* the last event recorded */
    st = cuda_prof_end(layer, st, (CUstream)stream);
  }
  cuda_pop(layer->ctx);
  return st;
}

/* Device memory, pinned words and modules are freed with the device context current, once the
 * layer's last call has completed on its stream. */
static void ops_release(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  if (!cu) return;
  int pushed = cuda_push(layer->ctx) == HOT_OK;
  done_wait(layer);
  range_free(layer);
  if (cu->done_ev) cuda_ctx_of(layer->ctx)->drv->cuEventDestroy(cu->done_ev);
  cuda_layer_free(layer);
  if (pushed) cuda_pop(layer->ctx);
  free(cu);
  layer->be = NULL;
}

static hot_status ops_layer_init(hot_layer *layer) {
  hot_cuda_layer *cu = calloc(1, sizeof *cu);
  if (!cu) return ctx_fail(layer->ctx, HOT_ERR_NOMEM, "layer '%s': out of memory", layer->spec.name);
  for (int k = 0; k < HOT_MAX_KERNELS; ++k) cu->module_of[k] = -1;
  layer->be = cu;
  return HOT_OK;
}

/* hot_layer_kernel_times: the launches timed by the layer's latest call, if that call is the
 * layer's call number layer->calls and succeeded with profiling on. */
static int ops_times(const hot_layer *layer, hot_kernel_time *out, int max) {
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  const int total = cu->prof_valid && cu->prof_call == layer->calls ? cu->prof_n : 0;
  for (int i = 0; i < total && i < max; ++i) {
    out[i].name = layer->plan->kernels[cu->prof[i].kernel].name;
    out[i].role = cu->prof[i].role;
    out[i].phase = cu->prof[i].phase;
    out[i].ms = cu->prof[i].ms;
  }
  return total;
}

/* hot_layer_check: waits for the events after the pending backwards (not the whole stream). */
static hot_status ops_check(hot_layer *layer) {
  hot_status st = cuda_push(layer->ctx);
  if (st != HOT_OK) return st;
  st = range_poll(layer, 1);
  cuda_pop(layer->ctx);
  return st;
}

static int64_t ops_workspace_bytes(const hot_ctx *ctx) {
  return (int64_t)cuda_ctx_of(ctx)->ws_bytes;
}

const hot_backend_ops cuda_backend_ops = {
    .kind = HOT_BACKEND_CUDA, .init = ops_init, .fini = ops_fini, .layer_init = ops_layer_init,
    .load = ops_load, .save = ops_save, .backward = ops_backward, .calibrate = ops_calibrate,
    .check = ops_check, .times = ops_times, .release = ops_release,
    .workspace_bytes = ops_workspace_bytes};

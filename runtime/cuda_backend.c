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
  hot_arch dev_arch = HOT_ARCH_SM80; /* set by plan_arch_for_device wherever it is read */
  /* The device's arch from the arch table: sm_XY cubins run on the same major with a minor >= Y;
   * an arch-specific row (wgmma, sm_120a) only when forced (HOT_ARCH, hot.h) — also on a device
   * no portable row takes (12.x: sm_120a named, its cubins run there). */
  const int forced_runs =
      ctx->arch_known && plan_arch_runs_on(ctx->arch, cu->cc_major, cu->cc_minor);
  if (plan_arch_for_device(cu->cc_major, cu->cc_minor, &dev_arch) != 0 && !forced_runs) {
    char known[128];
    return ctx_fail(ctx, HOT_ERR_UNSUPPORTED, "CUDA device %d (%s) has compute capability %d.%d; "
                    "hot generates kernels for %s", ctx->device, ctx->device_name, cu->cc_major,
                    cu->cc_minor, plan_arch_list(known, sizeof known, ", "));
  }
  if (!ctx->arch_known) {
    ctx->arch = dev_arch;
    ctx->arch_known = 1;
  } else if (!plan_arch_runs_on(ctx->arch, cu->cc_major, cu->cc_minor)) {
    const hot_arch_caps *caps = plan_arch_caps(ctx->arch);
    const int a_major = caps->sm / 10, a_minor = caps->sm % 10;
    if (caps->arch_specific)
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

/* p must be device (or managed) memory, 16-byte aligned (hot.h: a misaligned access of a kernel
 * would fault the device context, so it is refused before anything is launched), of the
 * context's device (managed memory of any). */
static hot_status check_ptr(hot_layer *layer, const void *p, const char *what) {
  unsigned int type = 0;
  CUresult c = cuda_ctx_of(layer->ctx)->drv->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                         (CUdeviceptr)(uintptr_t)p);
  if (c == CUDA_ERROR_INVALID_VALUE || (c == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST))
    return ctx_fail(layer->ctx, HOT_ERR_INVALID, "layer '%s': %s (%p) is host memory: the CUDA "
                    "backend expects device pointers", layer->spec.name, what, p);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuPointerGetAttribute");
  if ((uintptr_t)p & 15u)
    return ctx_fail(layer->ctx, HOT_ERR_INVALID, "layer '%s': %s (%p) is not 16-byte aligned: the "
                    "CUDA backend's kernels need 16-byte aligned tensors", layer->spec.name, what,
                    p);
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

/* Device scratch of the layer's calls: the pieces the planned kernel families declare
 * (gen/kernel_desc.h, hot_scratch: a buffer slot, its bytes from the plan, alignment, the calls
 * that use and zero it), laid out once at load by kd_scratch_layout (cu->layout) and carved out
 * of the context's workspace at every call; buffers that are places inside others (the amax
 * words of each quantizer, s_x^ in the saved buffer, q_x^ read in place) are the families' views.
 * Every piece is written by the call before it is read (the zeroed ones first), so nothing is
 * carried from one call to the next and layers can take turns in one allocation. */

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
  cu->scratch = c->ws;
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

/* The layer's tables, once (gen/kernel_desc.h): the workspace layout and the launches of a save,
 * a backward and a calibration, so that a call asks the generator nothing; and the saved
 * buffer's gap between the codes and the scales (zeroed by a save). */
static hot_status cuda_layer_tables(hot_layer *layer) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const hot_layer_plan *pl = layer->plan;
  char err[256];
  if (kd_scratch_layout(pl, &cu->layout, err, sizeof err))
    return ctx_fail(layer->ctx, HOT_ERR_PLAN, "layer '%s': %s", layer->spec.name, err);
  cu->scratch_bytes = (size_t)cu->layout.bytes;
  hot_launch_list *tmp = malloc(sizeof *tmp);
  if (!tmp) return ctx_fail(layer->ctx, HOT_ERR_NOMEM, "layer '%s': out of memory", layer->spec.name);
  hot_status st = HOT_OK;
  for (int c = 0; c < HOT_CALLS && st == HOT_OK; ++c) {
    if (kd_launch_list(pl, &cu->layout, (hot_call)c, layer->seed, tmp)) {
      st = ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': more than %d launches in one call",
                    layer->spec.name, HOT_MAX_LAUNCHES);
      break;
    }
    cu->launch[c] = malloc((size_t)(tmp->n ? tmp->n : 1) * sizeof *cu->launch[c]);
    if (!cu->launch[c]) st = ctx_fail(layer->ctx, HOT_ERR_NOMEM, "layer '%s': out of memory",
                                      layer->spec.name);
    else memcpy(cu->launch[c], tmp->l, (size_t)tmp->n * sizeof *cu->launch[c]);
    cu->n_launch[c] = tmp->n;
  }
  free(tmp);
  const int64_t nc = plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES), off = plan_saved_scale_offset(pl);
  cu->saved_bytes = layer_saved_bytes(pl);
  for (int k = 0; k < pl->n_kernels; ++k) { /* the outputs watched for overflow */
    const hot_kernel_desc *kd = kd_of(&pl->kernels[k]);
    cu->output[k] = kd && kd->output ? kd->output(pl->kernels[k].role) : NULL;
  }
  cu->lqs_coarse = plan_lqs_coarse(pl);
  cu->gap_at = nc & ~(int64_t)3; /* whole words from the one holding the last code byte */
  cu->gap_words = pl->abc.enabled && off > nc ? (off - cu->gap_at) / 4 : 0;
  return st;
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
  hot_status st = cuda_layer_tables(layer);
  if (st == HOT_OK) st = ws_reserve(layer->ctx, cu->scratch_bytes); /* a failure shows now */
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
  for (int c = 0; c < HOT_CALLS; ++c) free(cu->launch[c]);
  memset(cu, 0, sizeof *cu);
}

/* What the CUDA backend cannot run (the CPU backend runs it): layers whose save keeps an fp32
 * copy of x (abc or hla disabled: the plan then has no abc_x kernel, and g_w would be an fp32
 * product), and g_x without HQ (an fp32 product). Every planned kernel role has launch code.
 * outputs: the HOT_OUT_* bits a backward computes; a save passes HOT_OUT_ALL (it keeps x for a
 * later g_w). */
static hot_status check_features(hot_layer *layer, int backward, unsigned outputs) {
  const hot_layer_plan *pl = layer->plan;
  const char *why = NULL;
  if (!pl->abc.enabled && (outputs & HOT_OUT_GW)) why = "saving x without ABC (abc or hla disabled)";
  else if (backward && !pl->hq.enabled && (outputs & HOT_OUT_GX))
    why = "g_x without HQ (an fp32 product)";
  if (!why) return HOT_OK;
  return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': %s is not implemented on the CUDA "
                  "backend (the CPU backend runs it)", layer->spec.name, why);
}

#define ROLE(r) (1u << (r))

/* The device buffers of a call: the caller's pointers (ext, by hot_lbuf; the saved buffer: the
 * caller's or the layer's), the pieces of the workspace and the views into them (cu->layout). */
static void call_buffers(const hot_layer *layer, const uint64_t ext[HOT_LB_COUNT], int ps,
                         uint64_t buf[HOT_LB_COUNT]) {
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  const hot_scratch_layout *L = &cu->layout;
  for (int b = 0; b < HOT_LB_COUNT; ++b)
    buf[b] = L->off[b] >= 0 ? cu->scratch + (CUdeviceptr)L->off[b] : ext[b];
  if (!buf[HOT_LB_SAVED]) buf[HOT_LB_SAVED] = cu->saved;
  for (int b = 0; b < HOT_LB_COUNT; ++b) {
    const int base = L->base[ps][b];
    if (L->off[b] < 0 && base >= 0)
      buf[b] = buf[base] ? buf[base] + (uint64_t)L->view_off[ps][b] : 0;
  }
}

/* Whether a launch runs in this call (outputs: the HOT_OUT_* bits the caller asked for; a
 * HOT_WHEN_PLANNED launch is in the list only where planned, kd_launch_list). */
static int launch_runs(const hot_layer *layer, const hot_launch *l, unsigned outputs) {
  return kd_step_runs(l->when, l->out, layer->gran == HOT_GRAN_ROW, outputs);
}

/* The launches of `call` that run (outputs: the backward's HOT_OUT_* bits; HOT_OUT_ALL for a
 * save or a calibration), as indices into cu->launch[call] (run, *n_out), and the roles they
 * need. */
static unsigned call_runs(const hot_layer *layer, hot_call call, unsigned outputs, int *run,
                          int *n_out) {
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  unsigned need = 0;
  *n_out = 0;
  for (int i = 0; i < cu->n_launch[call]; ++i)
    if (launch_runs(layer, &cu->launch[call][i], outputs)) {
      run[(*n_out)++] = i;
      need |= ROLE(cu->launch[call][i].role);
    }
  return need;
}

/* Nothing is launched unless every needed kernel is compiled and launchable. */
static hot_status check_need(hot_layer *layer, hot_call call, const int *run, int n,
                             unsigned need) {
  hot_status st = launch_need_kernels(layer, need);
  for (int i = 0; i < n && !st; ++i) st = launch_check(layer, &cuda_layer_of(layer)->launch[call][run[i]]);
  return st;
}

/* Zeroes the pieces `call` zeroes first (the amax words). */
static hot_status zero_pieces(hot_layer *layer, hot_call call, const uint64_t *buf,
                              CUstream stream) {
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  hot_status st = HOT_OK;
  for (int b = 0; b < HOT_LB_COUNT && !st; ++b)
    if (cu->layout.off[b] >= 0 && (cu->layout.zero[b] & HOT_CALL_BIT(call)))
      st = launch_zero(layer, buf[b], (size_t)(cu->layout.size[b] / 4), stream);
  return st;
}

/* The launches of `call` listed in run, in order. */
static hot_status run_launches(hot_layer *layer, hot_call call, const int *run, int n,
                               const uint64_t *buf, uint32_t step, int ps, CUstream stream) {
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  hot_status st = HOT_OK;
  for (int i = 0; i < n && !st; ++i)
    st = launch_run(layer, &cu->launch[call][run[i]], buf, step, ps, stream);
  return st;
}

/* Forward (ABC): x -> the saved codes at dst (I rows of hla.k int8, unpadded), zero bytes up to
 * plan_saved_scale_offset and s_x^ (hla.groups floats) there, the CPU backend's layout:
 * memset(amax words) [memset of the words that hold the alignment gap, before the codes that
 * share its first word are written], then the save's launches (abc_x 0 [sawb_x 0, 1] abc_x 1). */
static hot_status cuda_layer_save(hot_layer *layer, const void *x, void *saved, CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  int run[HOT_MAX_LAUNCHES], n = 0;
  hot_status st = check_features(layer, 0, HOT_OUT_ALL);
  const unsigned need = call_runs(layer, HOT_CALL_SAVE, HOT_OUT_ALL, run, &n);
  if (!st) st = check_need(layer, HOT_CALL_SAVE, run, n, need);
  if (!st) st = check_ptr(layer, x, "x");
  if (!st && saved) st = check_ptr(layer, saved, "saved");
  if (st) return st;
  if (!saved && !cu->saved) { /* the layer's own buffer, kept until destroy */
    CUresult c = cuda_ctx_of(layer->ctx)->drv->cuMemAlloc(&cu->saved, (size_t)cu->saved_bytes);
    if (c != CUDA_SUCCESS) {
      cu->saved = 0;
      return cu_fail(layer->ctx, c, "cuMemAlloc (saved activations)");
    }
  }
  uint64_t ext[HOT_LB_COUNT] = {0}, buf[HOT_LB_COUNT];
  ext[HOT_LB_X] = (uint64_t)(uintptr_t)x;
  ext[HOT_LB_SAVED] = (uint64_t)(uintptr_t)saved;
  call_buffers(layer, ext, 0, buf);
  st = zero_pieces(layer, HOT_CALL_SAVE, buf, stream);
  if (!st && cu->gap_words)
    st = launch_zero(layer, buf[HOT_LB_SAVED] + (CUdeviceptr)cu->gap_at, (size_t)cu->gap_words,
                     stream);
  return st ? st : run_launches(layer, HOT_CALL_SAVE, run, n, buf, 0, 0, stream);
}

/* Backward: memset(amax words), then the backward's launches: HQ g' (per token: phase 2; per
 * tensor / sample: phases 0, 1) ; HQ w' phase 0 (SAWB: with math_out, then sawb_w phases 0, 1)
 * and phase 1 (SAWB: scale_in) ; HLA g^ phases 0, 1 ; [abc_unpack: the saved codes into q_hx] ;
 * GEMM g_x ; GEMM g_w (q_x^ from q_hx or the saved buffer, s_x^ from the saved buffer) ; bias. */
static hot_status cuda_layer_backward(hot_layer *layer, const void *g_y, const void *w,
                                      const void *saved, float *g_x, float *g_w, float *g_b,
                                      uint32_t step, CUstream stream) {
  int run[HOT_MAX_LAUNCHES], n = 0;
  const unsigned outputs = kd_outputs(g_x, g_w, g_b);
  hot_status st = check_features(layer, 1, outputs);
  const unsigned need = call_runs(layer, HOT_CALL_BACKWARD, outputs, run, &n);
  if (!st) st = check_need(layer, HOT_CALL_BACKWARD, run, n, need); /* nothing launched unless all can be */
  if (!st) st = check_ptr(layer, g_y, "g_y");
  if (!st && g_x) st = check_ptr(layer, w, "w"); /* read by HQ's w' only, for g_x */
  if (!st && g_x) st = check_ptr(layer, g_x, "g_x");
  if (!st && g_w) st = check_ptr(layer, g_w, "g_w");
  if (!st && g_b) st = check_ptr(layer, g_b, "g_b");
  if (!st && saved && g_w) st = check_ptr(layer, saved, "saved");
  if (st) return st;
  uint64_t ext[HOT_LB_COUNT] = {0}, buf[HOT_LB_COUNT];
  ext[HOT_LB_SAVED] = (uint64_t)(uintptr_t)saved;
  ext[HOT_LB_GY] = (uint64_t)(uintptr_t)g_y;
  ext[HOT_LB_W] = (uint64_t)(uintptr_t)w;
  ext[HOT_LB_GX] = (uint64_t)(uintptr_t)g_x;
  ext[HOT_LB_GW] = (uint64_t)(uintptr_t)g_w;
  ext[HOT_LB_GB] = (uint64_t)(uintptr_t)g_b;
  const int ps = layer->gran == HOT_GRAN_SAMPLE; /* g': one amax word and scale per sample */
  call_buffers(layer, ext, ps, buf);
  st = zero_pieces(layer, HOT_CALL_BACKWARD, buf, stream);
  return st ? st : run_launches(layer, HOT_CALL_BACKWARD, run, n, buf, step, ps, stream);
}

/* Calibration (LQS): memset(amax words) ; lqs phases 0, 1, 2 ; cuStreamSynchronize ; read back
 * choice and both errors ; the layer's granularity = per token or plan_lqs_coarse
 * (ref_layer_calibrate's rule, evaluated on the device bit for bit). */
static hot_status cuda_layer_calibrate(hot_layer *layer, const void *g_y, uint32_t step,
                                       CUstream stream) {
  int run[HOT_MAX_LAUNCHES], n = 0;
  const unsigned need = call_runs(layer, HOT_CALL_CALIBRATE, HOT_OUT_ALL, run, &n);
  hot_status st = check_need(layer, HOT_CALL_CALIBRATE, run, n, need);
  if (!st) st = check_ptr(layer, g_y, "g_y");
  if (st) return st;
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  uint64_t ext[HOT_LB_COUNT] = {0}, buf[HOT_LB_COUNT];
  ext[HOT_LB_GY] = (uint64_t)(uintptr_t)g_y;
  call_buffers(layer, ext, 0, buf);
  st = zero_pieces(layer, HOT_CALL_CALIBRATE, buf, stream);
  if (!st) st = run_launches(layer, HOT_CALL_CALIBRATE, run, n, buf, step, 0, stream);
  if (st) return st;
  CUresult c = d->cuStreamSynchronize(stream);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuStreamSynchronize (LQS)");
  double res[2];
  int choice = -1;
  c = d->cuMemcpyDtoH(res, buf[HOT_LB_LQS_RES], sizeof res);
  if (c == CUDA_SUCCESS) c = d->cuMemcpyDtoH(&choice, buf[HOT_LB_LQS_CHOICE], sizeof choice);
  if (c != CUDA_SUCCESS) return cu_fail(layer->ctx, c, "cuMemcpyDtoH (LQS result)");
  if (choice != 0 && choice != 1)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': LQS kernel wrote choice %d",
                    layer->spec.name, choice);
  layer->gran = choice ? HOT_GRAN_ROW : cuda_layer_of(layer)->lqs_coarse;
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
    if (!cu->output[k]) continue;
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
  const char *out = NULL;
  for (int k = 0; k < layer->plan->n_kernels; ++k)
    if (layer->plan->kernels[k].role == cu->report_role) out = cu->output[k];
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

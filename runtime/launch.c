/* launch.c — the generic launcher of the CUDA backend: a planned kernel's descriptor
 * (gen/kernels/<family>.c) lists its entry's parameter names (sig) and fills their values for
 * one launch from the call's device buffers (args); this file turns them into the kernelParams
 * array, encodes the tensor maps a TMA kernel takes (cuTensorMapEncodeTiled, passed by value as
 * __grid_constant__ parameters), and launches on the plan's geometry through module_launch.
 *
 * The launch geometry (grid, block, dynamic shared memory) is the plan's, decided once in
 * gen/plan.c (plan_kernel_grid for a phase's grid; a persistent kernel's grid.x is capped at the
 * device's SM count here); nothing here recomputes it. The test suite compares every
 * descriptor's sig with its template's entry point (emit_entry_params), so a template and its
 * launch cannot drift apart unnoticed — nothing parses template text at run time. Nothing here
 * knows a role: adding one touches gen/kernels/ only (docs/adding.md).
 */
#include <stdio.h>
#include <string.h>

#include "launch.h"

hot_status launch_need_kernels(hot_layer *layer, unsigned need) {
  for (int i = 0; i < layer->n_missing; ++i) {
    hot_kernel_role r = layer->missing[i];
    if (!(need & (1u << r))) continue;
    int k = plan_kernel_index(layer->plan, r);
    return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED,
                    "layer '%s': kernel %s: template %s not available in this build",
                    layer->spec.name, plan_role_name(r),
                    k >= 0 ? layer->plan->kernels[k].templ : "?");
  }
  return HOT_OK;
}

const char *launch_signature(hot_kernel_role role) {
  if ((int)role < 0 || role >= HOT_K_ROLE_COUNT) return NULL;
  hot_kernel_plan k;
  memset(&k, 0, sizeof k);
  k.role = role;
  const hot_kernel_desc *d = kd_of(&k);
  return d ? d->sig : NULL;
}

const char *launch_signature_of(const hot_layer_plan *pl, int k) {
  if (!pl || k < 0 || k >= pl->n_kernels) return NULL;
  const hot_kernel_desc *d = kd_of(&pl->kernels[k]);
  return d ? d->sig : NULL;
}

int64_t launch_sawb_elems(const hot_layer_plan *pl, hot_kernel_role role) {
  return plan_sawb_elems(pl, role);
}

/* HOT_OK when `role` has launch code here and the plan has a kernel for it. */
static hot_status check_role(hot_layer *layer, hot_kernel_role role) {
  int k = plan_kernel_index(layer->plan, role);
  if (k < 0)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': the plan has no kernel %s",
                    layer->spec.name, plan_role_name(role));
  const hot_kernel_desc *d = kd_of(&layer->plan->kernels[k]);
  if (!d || !d->args || !d->sig)
    return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': kernel %s: no descriptor with "
                    "launch code for %s", layer->spec.name, plan_role_name(role),
                    layer->plan->kernels[k].templ);
  return HOT_OK;
}

hot_status launch_check(hot_layer *layer, unsigned need) {
  for (int r = 0; r < HOT_K_ROLE_COUNT; ++r) {
    if (!(need & (1u << r))) continue;
    hot_status st = check_role(layer, (hot_kernel_role)r);
    if (st) return st;
  }
  return HOT_OK;
}

void launch_grid(const hot_layer_plan *pl, hot_kernel_role role, int phase, unsigned grid[3]) {
  plan_kernel_grid(pl, plan_kernel_index(pl, role), phase, grid);
}

/* Profiling: records the layer's event i on stream (created on first need, kept). */
static hot_status prof_record(hot_layer *layer, int i, CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const cuda_driver *d = cuda_ctx_of(layer->ctx)->drv;
  CUresult c = CUDA_SUCCESS;
  while (c == CUDA_SUCCESS && cu->prof_events <= i) {
    c = d->cuEventCreate(&cu->prof_ev[cu->prof_events], 0 /* CU_EVENT_DEFAULT: timed */);
    if (c == CUDA_SUCCESS) cu->prof_events++;
  }
  if (c == CUDA_SUCCESS) c = d->cuEventRecord(cu->prof_ev[i], stream);
  if (c == CUDA_SUCCESS) return HOT_OK;
  char err[256];
  rt_status r = cuda_result_error(c, "profiling: cuEventCreate / cuEventRecord", err, sizeof err);
  return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
}

/* Launches the plan's kernel of `role` for `phase` on the plan's grid of that phase, block and
 * dynamic shared memory. */
static hot_status launch_role(hot_layer *layer, hot_kernel_role role, int phase, void **args,
                              CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  hot_cuda_layer *cu = cuda_layer_of(layer);
  int k = plan_kernel_index(pl, role);
  if (k < 0 || !cu->fn[k])
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s not loaded",
                    layer->spec.name, plan_role_name(role));
  hot_status st = HOT_OK;
  const hot_kernel_plan *kp = &pl->kernels[k];
  hot_launch_cfg cfg = {{0, 0, 0}, {kp->block[0], kp->block[1], kp->block[2]}, kp->smem, stream};
  plan_kernel_grid(pl, k, phase, cfg.grid);
  const int sms = cuda_ctx_of(layer->ctx)->sm_count; /* persistent: one block per SM at most */
  if (kp->persistent && sms > 0 && cfg.grid[0] > (unsigned)sms) cfg.grid[0] = (unsigned)sms;
  char err[512];
  int prof = cu->prof_on && cu->prof_n < HOT_MAX_KERNEL_TIMES; /* off: one test, no driver call */
  if (prof && (st = prof_record(layer, 2 * cu->prof_n, stream))) return st;
  rt_status r = module_launch(cu->fn[k], &cfg, args, err, sizeof err);
  if (r != RT_OK) return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
  if (prof) {
    if ((st = prof_record(layer, 2 * cu->prof_n + 1, stream))) return st;
    cu->prof[cu->prof_n].kernel = k;
    cu->prof[cu->prof_n].role = (int)role;
    cu->prof[cu->prof_n].phase = phase;
    cu->prof[cu->prof_n].ms = 0.0;
    cu->prof_n++;
  }
  layer->ctx->launches++;
  return HOT_OK;
}

hot_status launch_zero(hot_layer *layer, CUdeviceptr p, size_t words, CUstream stream) {
  CUresult c = cuda_ctx_of(layer->ctx)->drv->cuMemsetD32Async(p, 0u, words, stream);
  if (c == CUDA_SUCCESS) return HOT_OK;
  char err[256];
  rt_status r = cuda_result_error(c, "cuMemsetD32Async (amax words)", err, sizeof err);
  return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
}

/* Encodes the tensor maps a TMA kernel's descriptor asks for into maps[] (64-byte aligned, the
 * driver's CUtensorMap): rank 2, uint8, 128B swizzle, zero fill (templates/gemm_tma.cu's
 * HOT_TMA_* values). Returns how many (0 for other kernels), or -1 with the layer's message set
 * (*st). */
static int encode_maps(hot_layer *layer, const hot_kernel_desc *d, hot_kernel_role role,
                       const hot_launch_in *in, CUtensorMap maps[2], hot_status *st) {
  if (!d->tmaps) return 0;
  hot_tmap_req req[2];
  memset(req, 0, sizeof req);
  const int n = d->tmaps(layer->plan, role, in, req);
  const cuda_driver *drv = cuda_ctx_of(layer->ctx)->drv;
  if (n > 0 && !drv->cuTensorMapEncodeTiled) {
    *st = ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': kernel %s (path tma_s8) needs "
                   "cuTensorMapEncodeTiled, which the CUDA driver %s lacks (CUDA 12.0 or newer); "
                   "plan the GEMM without tile warps_n = 2", layer->spec.name,
                   plan_role_name(role), drv->path);
    return -1;
  }
  for (int i = 0; i < n && i < 2; ++i) {
    const cuuint64_t dims[2] = {req[i].dims[0], req[i].dims[1]}, strides[1] = {req[i].stride};
    const cuuint32_t box[2] = {req[i].box[0], req[i].box[1]}, elem[2] = {1, 1};
    CUresult c = drv->cuTensorMapEncodeTiled(
        &maps[i], CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)(uintptr_t)req[i].addr, dims, strides,
        box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (c != CUDA_SUCCESS) {
      char what[160], err[384];
      snprintf(what, sizeof what, "kernel %s: cuTensorMapEncodeTiled of operand %s (%llu x %llu "
               "bytes at %p)", plan_role_name(role), req[i].what, (unsigned long long)dims[1],
               (unsigned long long)dims[0], (void *)(uintptr_t)req[i].addr);
      rt_status r = cuda_result_error(c, what, err, sizeof err);
      *st = ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
      return -1;
    }
  }
  return n;
}

hot_status launch_step(hot_layer *layer, hot_kernel_role role, int phase, const hot_launch_in *in,
                       CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  const int k = plan_kernel_index(pl, role);
  const hot_kernel_desc *d = k >= 0 ? kd_of(&pl->kernels[k]) : NULL;
  if (!d || !d->args)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': the plan has no kernel %s",
                    layer->spec.name, plan_role_name(role));
  hot_launch_in local = *in;
  CUtensorMap maps[2];
  hot_status st = HOT_OK;
  const int nm = encode_maps(layer, d, role, in, maps, &st);
  if (nm < 0) return st;
  for (int i = 0; i < nm; ++i) local.tmap[i] = &maps[i];
  hot_argv v;
  memset(&v, 0, sizeof v);
  if (d->args(pl, role, phase, &local, &v) || v.bad || v.n != kd_sig_count(d->sig))
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s phase %d: its launch "
                    "arguments cannot be built from the plan (%d of %d; a size beyond its "
                    "argument type, scratch missing, or a GEMM of another shape)",
                    layer->spec.name, plan_role_name(role), phase, v.n, kd_sig_count(d->sig));
  /* each value in storage of its own type; kernelParams points at it (a map: at its 128 bytes) */
  union { int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; float f; } val[HOT_MAX_ARGS];
  void *params[HOT_MAX_ARGS];
  for (int i = 0; i < v.n; ++i) {
    const hot_arg *a = &v.a[i];
    switch (a->type) {
    case HOT_ARG_I32: val[i].i32 = (int32_t)a->i; break;
    case HOT_ARG_U32: val[i].u32 = (uint32_t)a->u; break;
    case HOT_ARG_I64: val[i].i64 = a->i; break;
    case HOT_ARG_F32: val[i].f = a->f; break;
    case HOT_ARG_PTR:
    case HOT_ARG_U64: val[i].u64 = a->u; break;
    case HOT_ARG_MAP: break;
    }
    params[i] = a->type == HOT_ARG_MAP ? (void *)(uintptr_t)a->map : (void *)&val[i];
  }
  return launch_role(layer, role, phase, params, stream);
}

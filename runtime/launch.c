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

hot_status launch_check(hot_layer *layer, const hot_launch *l) {
  if (l->kernel < 0)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': the plan has no kernel %s",
                    layer->spec.name, l->role_name);
  if (!l->n_sig)
    return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': kernel %s: no descriptor with "
                    "launch code for %s", layer->spec.name, l->role_name,
                    layer->plan->kernels[l->kernel].templ);
  if (!l->ok)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s phase %d: its launch "
                    "arguments cannot be built from the plan (a size beyond its argument type, "
                    "scratch missing, or a GEMM of another shape)", layer->spec.name,
                    l->role_name, l->phase);
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

/* Launches l's kernel with kernelParams args on its geometry (a persistent kernel: at most one
 * block per SM), timed when the call is profiled. */
static hot_status launch_kernel(hot_layer *layer, const hot_launch *l, void **args,
                                CUstream stream) {
  hot_cuda_layer *cu = cuda_layer_of(layer);
  const int k = l->kernel;
  if (k < 0 || !cu->fn[k])
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s not loaded",
                    layer->spec.name, l->role_name);
  hot_status st = HOT_OK;
  hot_launch_cfg cfg = {{l->grid[0], l->grid[1], l->grid[2]},
                        {l->block[0], l->block[1], l->block[2]}, l->smem, stream};
  const int sms = cuda_ctx_of(layer->ctx)->sm_count; /* persistent: one block per SM at most */
  if (l->persistent && sms > 0 && cfg.grid[0] > (unsigned)sms) cfg.grid[0] = (unsigned)sms;
  char err[512];
  int prof = cu->prof_on && cu->prof_n < HOT_MAX_KERNEL_TIMES; /* off: one test, no driver call */
  if (prof && (st = prof_record(layer, 2 * cu->prof_n, stream))) return st;
  rt_status r = module_launch(cu->fn[k], &cfg, args, err, sizeof err);
  if (r != RT_OK) return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
  if (prof) {
    if ((st = prof_record(layer, 2 * cu->prof_n + 1, stream))) return st;
    cu->prof[cu->prof_n].kernel = k;
    cu->prof[cu->prof_n].role = (int)l->role;
    cu->prof[cu->prof_n].phase = l->phase;
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

/* Encodes the tensor maps launch l needs into maps[] (64-byte aligned, the driver's
 * CUtensorMap): rank 2, uint8, 128B swizzle, zero fill (templates/gemm_tma.cu's HOT_TMA_*
 * values), each over the call's buffer of its slot. Returns HOT_OK, or the status with the
 * layer's message set. */
static hot_status encode_maps(hot_layer *layer, const hot_launch *l, const uint64_t *buf,
                              CUtensorMap maps[2]) {
  const cuda_driver *drv = cuda_ctx_of(layer->ctx)->drv;
  if (l->n_maps > 0 && !drv->cuTensorMapEncodeTiled)
    return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': kernel %s (path %s) needs "
                    "cuTensorMapEncodeTiled, which the CUDA driver %s lacks (CUDA 12.0 or newer); "
                    "plan the GEMM without tile warps_n = %d", layer->spec.name, l->role_name,
                    plan_gemm_path_name(HOT_GEMM_TMA_S8), drv->path,
                    plan_gemm_path_info(HOT_GEMM_TMA_S8)->warps_select);
  for (int i = 0; i < l->n_maps && i < 2; ++i) {
    const hot_tmap_req *q = &l->maps[i];
    const uint64_t addr = buf[q->slot];
    const cuuint64_t dims[2] = {q->dims[0], q->dims[1]}, strides[1] = {q->stride};
    const cuuint32_t box[2] = {q->box[0], q->box[1]}, elem[2] = {1, 1};
    CUresult c = drv->cuTensorMapEncodeTiled(
        &maps[i], CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)(uintptr_t)addr, dims, strides, box,
        elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (c != CUDA_SUCCESS) {
      char what[160], err[384];
      snprintf(what, sizeof what, "kernel %s: cuTensorMapEncodeTiled of operand %s (%llu x %llu "
               "bytes at %p)", l->role_name, q->what, (unsigned long long)dims[1],
               (unsigned long long)dims[0], (void *)(uintptr_t)addr);
      rt_status r = cuda_result_error(c, what, err, sizeof err);
      return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
    }
  }
  return HOT_OK;
}

hot_status launch_run(hot_layer *layer, const hot_launch *l, const uint64_t *buf, uint32_t step,
                      int per_sample_g, CUstream stream) {
  hot_status st = launch_check(layer, l);
  if (st) return st;
  CUtensorMap maps[2];
  if ((st = encode_maps(layer, l, buf, maps))) return st;
  const hot_argv *v = &l->args[per_sample_g ? 1 : 0];
  /* each value in storage of its own type; kernelParams points at it (a map: at its 128 bytes);
   * what the call fills in (HOT_SYM_*): its buffers, its step, its maps */
  union { int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; float f; } val[HOT_MAX_ARGS];
  void *params[HOT_MAX_ARGS];
  for (int i = 0; i < v->n; ++i) {
    const hot_arg *a = &v->a[i];
    switch (a->type) {
    case HOT_ARG_I32: val[i].i32 = (int32_t)a->i; break;
    case HOT_ARG_U32: val[i].u32 = a->sym == HOT_SYM_STEP ? step : (uint32_t)a->u; break;
    case HOT_ARG_I64: val[i].i64 = a->i; break;
    case HOT_ARG_F32: val[i].f = a->f; break;
    case HOT_ARG_PTR:
    case HOT_ARG_U64:
      val[i].u64 = a->sym >= HOT_SYM_BUF && a->sym < HOT_SYM_STEP ? buf[a->sym - HOT_SYM_BUF] : a->u;
      break;
    case HOT_ARG_MAP: break;
    }
    params[i] = a->type == HOT_ARG_MAP ? (void *)&maps[a->sym == HOT_SYM_MAP + 1]
                                       : (void *)&val[i];
  }
  return launch_kernel(layer, l, params, stream);
}

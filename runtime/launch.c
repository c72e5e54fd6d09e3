/* launch.c — one function per kernel role: the argument list documented at the top of its
 * template, the plan's launch geometry, and the launch on the caller's stream through
 * module_launch.
 *
 * The launch geometry (grid, block, dynamic shared memory) is the plan's, decided once in
 * gen/plan.c (plan_kernel_grid for a phase's grid); nothing here recomputes it. k_sig lists the
 * parameter names each launch passes, in order; the test suite compares them with every
 * template's entry point (emit_entry_params), so a template and this file cannot drift apart
 * unnoticed — nothing parses template text at run time.
 *
 * Every planned role has launch code (abc_x, hq_g, hq_w, hla_g, gemm_gx, gemm_gw, bias, lqs,
 * sawb_w, sawb_x). Adding a role: put its parameter names in k_sig, its geometry in plan.c,
 * write a launch_<role> that fills the arguments in that order (copy launch_hq), and call it from
 * cuda_backend.c.
 */
#include <stdio.h>
#include <string.h>

#include "launch.h"
#include "hot_math.cuh"
#include "ref.h"

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

/* Parameter names of each role's entry point, in order; NULL: no launch code yet. */
static const char *const k_sig[HOT_K_ROLE_COUNT] = {
    [HOT_K_ABC_X] = "src,T,cols,ld_src,L,layout,seg_len,segments,k_real,k_pad,group_k,group_k_pad,groups,per_sample,codes,ld_codes,scale,amax_bits,scale_in,math_out,phase,seed,tag,step",
    [HOT_K_HQ_G] = "src,rows,cols,ld_src,o_pad,k_pad,codes,ld_codes,scales,amax_bits,group_rows,scale_in,math_out,phase,seed,tag,step",
    [HOT_K_HQ_W] = "src,rows,cols,ld_src,o_pad,k_pad,codes,ld_codes,scales,amax_bits,group_rows,scale_in,math_out,phase,seed,tag,step",
    [HOT_K_HLA_G] = "src,T,cols,ld_src,L,layout,seg_len,segments,k_real,k_pad,group_k,group_k_pad,groups,per_sample,codes,ld_codes,scale,amax_bits,scale_in,math_out,phase,seed,tag,step",
    [HOT_K_GEMM_GX] = "A,B,C,row_scale,alpha_a,alpha_b,alpha_div,M,N,Kpad,ldc,seg_kpad",
    [HOT_K_GEMM_GW] = "A,B,C,row_scale,alpha_a,alpha_b,alpha_div,M,N,Kpad,ldc,seg_kpad",
    [HOT_K_BIAS] = "gy,gb,T,O",
    [HOT_K_LQS] = "g_y,T,O,ld_src,amax_bits,group_rows,row_scale,partials,result,choice,phase,seed,tag,step",
    [HOT_K_SAWB_W] = "v,n,groups,partials,amax_bits,scale,phase",
    [HOT_K_SAWB_X] = "v,n,groups,partials,amax_bits,scale,phase",
};

const char *launch_signature(hot_kernel_role role) {
  return (int)role >= 0 && role < HOT_K_ROLE_COUNT ? k_sig[role] : NULL;
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
  if (!k_sig[role])
    return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': kernel %s: runtime/launch.c has "
                    "no launch code for %s", layer->spec.name, plan_role_name(role),
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

/* templates/hadamard_quant.cu. g' (HOT_K_HQ_G): rows of g_y, T x O; w' (HOT_K_HQ_W): columns
 * of w, O x I, codes stored I x k_pad. Phases: 0 amax (w' with math_out: also w' in math layout,
 * o_pad x I floats, for SAWB), 1 quantize with the group's scale (scale_in: a precomputed one,
 * SAWB), 2 per-row (g' only). per_sample (g' only): one amax word and scale per sample (amax
 * then points at B words), else one for the tensor. */
hot_status launch_hq(hot_layer *layer, hot_kernel_role role, CUdeviceptr src, CUdeviceptr codes,
                     CUdeviceptr scales, CUdeviceptr amax, int per_sample, CUdeviceptr scale_in,
                     CUdeviceptr math_out, int phase, uint32_t step, CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  int is_g = role == HOT_K_HQ_G;
  int rows = (int)(is_g ? pl->T : pl->O), cols = (int)(is_g ? pl->O : pl->I), ld_src = cols;
  int o_pad = (int)pl->hq.o_pad, k_pad = (int)pl->hq.gemm.k_pad;
  int ld_codes = pl->hq.codes == HOT_CODES_S4_PACKED ? k_pad / 2 : k_pad;
  unsigned long long seed = layer->seed;
  unsigned tag = (unsigned)pl->layer_id * 16u + (is_g ? HOT_TENSOR_HQ_G : 0u); /* w': RTN */
  unsigned st = step;
  int group_rows = is_g && per_sample ? (int)pl->L : rows; /* L <= T <= 2^31 - 1 (planner) */
  void *args[] = {&src, &rows, &cols, &ld_src, &o_pad, &k_pad, &codes, &ld_codes,
                  &scales, &amax, &group_rows, &scale_in, &math_out, &phase, &seed, &tag, &st};
  return launch_role(layer, role, phase, args, stream);
}

/* templates/hla_project.cu. x^ (HOT_K_ABC_X, RTN): x, T x I; g^ (HOT_K_HLA_G, hla.g.round
 * compiled into the kernel; SR draws with tag = layer_id*16 + 2): g_y, T x O. Codes cols x
 * hla.gemm.k_pad int8 (zero tail written by phase 1).
 * Phases: 0 amax (+ math_out K x cols floats for SAWB), 1 quantize (scale_in: SAWB's scale). */
hot_status launch_hla(hot_layer *layer, hot_kernel_role role, CUdeviceptr src, CUdeviceptr codes,
                      CUdeviceptr scale, CUdeviceptr amax, CUdeviceptr scale_in,
                      CUdeviceptr math_out, int phase, uint32_t step, CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  int is_g = role == HOT_K_HLA_G;
  int T = (int)pl->T, cols = (int)(is_g ? pl->O : pl->I), ld_src = cols, L = (int)pl->L;
  int layout = pl->hla.layout == HOT_LAYOUT_FLAT ? 1 : 0;
  long long seg_len = (long long)pl->hla.seg_len, segments = (long long)pl->hla.segments;
  int k_real = (int)pl->hla.k, k_pad = (int)pl->hla.gemm.k_pad, ld_codes = k_pad;
  unsigned long long seed = layer->seed;
  unsigned tag = (unsigned)pl->layer_id * 16u + (is_g ? HOT_TENSOR_HLA_G : 0u); /* x^: RTN */
  unsigned st = step;
  if (pl->hla.k > HOT_LIMIT_INT || pl->hla.gemm.k_pad > HOT_LIMIT_INT) /* the planner refuses */
    return ctx_fail(layer->ctx, HOT_ERR_SHAPE, "layer '%s': hla K = %lld does not fit the "
                    "kernel's int argument", layer->spec.name, (long long)pl->hla.gemm.k_pad);
  /* scale groups (CONTRACT.md 9): `scale` receives hla.groups floats; a per-sample quantizer
   * has one amax word (and one SAWB scale_in) per group, a per-tensor one a single word */
  int group_k = (int)pl->hla.group_k, group_k_pad = (int)pl->hla.group_k_pad;
  int groups = (int)pl->hla.groups;
  int per_sample = (is_g ? pl->hla.g.gran : pl->hla.x.gran) == HOT_GRAN_SAMPLE;
  void *args[] = {&src, &T, &cols, &ld_src, &L, &layout, &seg_len, &segments, &k_real, &k_pad,
                  &group_k, &group_k_pad, &groups, &per_sample, &codes, &ld_codes, &scale, &amax,
                  &scale_in, &math_out, &phase, &seed, &tag, &st};
  return launch_role(layer, role, phase, args, stream);
}

/* templates/sawb.cu: phase 0 per-chunk partials of S1 = sum |v|, S2 = sum v*v (plan's grid),
 * phase 1 the scale from them and the amax word (one block). */
hot_status launch_sawb(hot_layer *layer, hot_kernel_role role, CUdeviceptr v, CUdeviceptr partials,
                       CUdeviceptr amax, CUdeviceptr scale, int phase, CUstream stream) {
  const int64_t total = launch_sawb_elems(layer->plan, role);
  const int64_t g = plan_sawb_groups(layer->plan, role);
  if (total < 1 || g < 1 || total % g != 0 || g > HOT_LIMIT_INT)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s is not a SAWB role",
                    layer->spec.name, plan_role_name(role));
  long long n = (long long)(total / g); /* elements of one group */
  int groups = (int)g;
  void *args[] = {&v, &n, &groups, &partials, &amax, &scale, &phase};
  return launch_role(layer, role, phase, args, stream);
}

/* templates/lqs.cu on the raw g_y (T x O): phase 0 row scales + per-sample amax (B words after
 * the per-tensor ones, zeroed by the caller; groups of L rows), 1 chunk partials of both squared
 * errors, 2 result[0..1] and *choice. Scratch: the layer's lqs_rs (T floats), partials
 * (2 ceil(T*O / 1024) doubles), lqs_res, lqs_choice. */
hot_status launch_lqs(hot_layer *layer, CUdeviceptr g_y, int phase, uint32_t step,
                      CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  const hot_cuda_layer *cu = cuda_layer_of(layer);
  int T = (int)pl->T, O = (int)pl->O, ld_src = O, group_rows = (int)pl->L;
  CUdeviceptr amax = cu->amax + 4 * HOT_AMAX_WORDS, rs = cu->lqs_rs, part = cu->partials,
              res = cu->lqs_res, choice = cu->lqs_choice;
  unsigned long long seed = layer->seed;
  unsigned tag = (unsigned)pl->layer_id * 16u + HOT_TENSOR_LQS, st = step;
  if (!rs || !part || !res || !choice)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': no LQS scratch", layer->spec.name);
  void *args[] = {&g_y, &T, &O, &ld_src, &amax, &group_rows, &rs, &part, &res, &choice, &phase,
                  &seed, &tag, &st};
  return launch_role(layer, HOT_K_LQS, phase, args, stream);
}

/* templates/gemm_int.cu: C = (float)(A . B^T) * factor(m), alpha = (*alpha_a * (alpha_b ?
 * *alpha_b : 1)) / alpha_div computed on the device. HQ: A = q_g' (T x k_pad), B = q_w'
 * (I x k_pad), row_scale = s_g, alpha_a = &s_w, alpha_b = NULL, div = b. HLA: A = q_g^ (O x
 * k_pad), B = q_x^ (I x k_pad), row_scale = NULL, alpha_a = s_g^, alpha_b = s_x^ (hla.groups
 * floats each), div = p; a segmented g_w GEMM (HOT_SEGS) sums each seg_kpad codes of K apart and
 * uses alpha_a[j], alpha_b[j] for segment j. */
hot_status launch_gemm(hot_layer *layer, hot_kernel_role role, CUdeviceptr a, CUdeviceptr b,
                       CUdeviceptr c, CUdeviceptr row_scale, CUdeviceptr alpha_a,
                       CUdeviceptr alpha_b, CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  int gx = role == HOT_K_GEMM_GX;
  const hot_gemm_plan *g = gx ? &pl->hq.gemm : &pl->hla.gemm;
  float alpha_div = (float)(gx ? pl->hq.block : pl->hla.block);
  int M = (int)(gx ? pl->T : pl->O), N = (int)pl->I, Kpad = (int)g->k_pad, ldc = (int)pl->I;
  if (g->m != M || g->n != N)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': %s GEMM planned %lldx%lld, the "
                    "layer is %dx%d", layer->spec.name, gx ? "g_x" : "g_w", (long long)g->m,
                    (long long)g->n, M, N);
  int seg_kpad = (int)g->seg_k_pad; /* = Kpad unless the GEMM is segmented (HLA scale groups) */
  void *args[] = {&a, &b, &c, &row_scale, &alpha_a, &alpha_b, &alpha_div, &M, &N, &Kpad, &ldc,
                  &seg_kpad};
  return launch_role(layer, role, 0, args, stream);
}

/* templates/bias.cu: the plan's grid, ceil(O / 4) blocks of 256 threads, each owning 4 columns. */
hot_status launch_bias(hot_layer *layer, CUdeviceptr g_y, CUdeviceptr g_b, CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  int T = (int)pl->T, O = (int)pl->O;
  void *args[] = {&g_y, &g_b, &T, &O};
  return launch_role(layer, HOT_K_BIAS, 0, args, stream);
}

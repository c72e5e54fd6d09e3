/* launch.c — one function per kernel role: the argument list documented at the top of its
 * template, the plan's launch geometry (checked against the template's documented formula), and
 * the launch on the caller's stream through module_launch.
 *
 * Safety net: before a role is launched, the parameter names of the template's entry point (as
 * embedded in this build) are compared with the list this file passes (k_sig below). A template
 * whose signature changed, or one that exists but has no launch code here yet, gives
 * HOT_ERR_UNSUPPORTED naming both lists — never a launch with the wrong arguments.
 *
 * Adding a role (e.g. HOT_K_HLA_G when templates/hla_project.cu lands): put its parameter names
 * in k_sig, write a launch_<role> that fills the arguments in that order (copy launch_hq), and
 * call it from cuda_backend.c where the role's "not wired" error is returned today.
 */
#include <stdio.h>
#include <string.h>

#include "embed.h"
#include "hot_internal.h"
#include "hot_math.cuh"
#include "ref.h"

int64_t launch_saved_bytes(const hot_layer_plan *pl) {
  if (!pl) return 0;
  return pl->abc.enabled ? hot_ref_hla_x_bytes(pl) + (int64_t)sizeof(float)
                         : pl->T * pl->I * (int64_t)sizeof(float);
}

/* Parameter names of each role's entry point, in order; NULL: no launch code yet. */
static const char *const k_sig[HOT_K_ROLE_COUNT] = {
    [HOT_K_ABC_X] = NULL,
    [HOT_K_HQ_G] = "src,rows,cols,ld_src,o_pad,k_pad,codes,ld_codes,scales,amax_bits,scale_in,math_out,phase,seed,tag,step",
    [HOT_K_HQ_W] = "src,rows,cols,ld_src,o_pad,k_pad,codes,ld_codes,scales,amax_bits,scale_in,math_out,phase,seed,tag,step",
    [HOT_K_HLA_G] = NULL,
    [HOT_K_GEMM_GX] = "A,B,C,row_scale,alpha_a,alpha_b,alpha_div,M,N,Kpad,ldc",
    [HOT_K_GEMM_GW] = "A,B,C,row_scale,alpha_a,alpha_b,alpha_div,M,N,Kpad,ldc",
    [HOT_K_BIAS] = "gy,gb,T,O",
    [HOT_K_LQS] = NULL,
};

static int ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The parameter names of the first "HOT_KNAME(" entry of a template text, comma-joined. */
static int entry_params(const char *text, char *out, size_t n) {
  const char *p = strstr(text, "HOT_KNAME(");
  while (p && p > text && ident_char(p[-1])) p = strstr(p + 1, "HOT_KNAME(");
  if (!p || n == 0) return -1;
  p += strlen("HOT_KNAME(");
  size_t o = 0;
  out[0] = '\0';
  while (*p && *p != ')') {
    const char *end = p;
    while (*end && *end != ',' && *end != ')') ++end;
    const char *e = end; /* the last identifier of the piece is the parameter's name */
    while (e > p && !ident_char(e[-1])) --e;
    const char *b = e;
    while (b > p && ident_char(b[-1])) --b;
    int k = snprintf(out + o, n - o, "%s%.*s", o ? "," : "", (int)(e - b), b);
    if (k < 0 || (size_t)k >= n - o) return -1;
    o += (size_t)k;
    p = *end == ',' ? end + 1 : end;
  }
  return *p == ')' ? 0 : -1;
}

/* HOT_OK when the role has launch code here and the embedded template's entry takes exactly
 * the parameters that code passes. */
static hot_status check_role(hot_layer *layer, hot_kernel_role role) {
  int k = plan_kernel_index(layer->plan, role);
  const char *templ = k >= 0 ? layer->plan->kernels[k].templ : "?";
  const hot_embedded_file *f = embed_find(templ);
  if (!k_sig[role])
    return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': kernel %s: %s%s", layer->spec.name,
                    plan_role_name(role), templ,
                    f ? " is in this build but runtime/launch.c has no launch code for it yet"
                      : " not available in this build");
  char got[512];
  if (!f || entry_params(f->data, got, sizeof got) != 0)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s: cannot read the entry "
                    "point of %s", layer->spec.name, plan_role_name(role), templ);
  if (strcmp(got, k_sig[role]) != 0)
    return ctx_fail(layer->ctx, HOT_ERR_UNSUPPORTED, "layer '%s': kernel %s: %s's entry takes (%s) "
                    "but this runtime passes (%s): template and runtime/launch.c out of step",
                    layer->spec.name, plan_role_name(role), templ, got, k_sig[role]);
  return HOT_OK;
}

static unsigned cdiv(int64_t a, int64_t b) { return (unsigned)((a + b - 1) / b); }

/* The launch geometry each template documents in its header, from the plan's sizes. */
static void expected_geometry(const hot_layer_plan *pl, hot_kernel_role role, unsigned grid[2],
                              unsigned *block, unsigned *smem) {
  const hot_gemm_plan *g = role == HOT_K_GEMM_GX ? &pl->hq.gemm : &pl->hla.gemm;
  grid[1] = 1;
  *block = 256;
  *smem = 0;
  switch (role) {
  case HOT_K_HQ_G: /* one warp per row of g_y, 8 rows per block */
    grid[0] = cdiv(pl->T, 8);
    break;
  case HOT_K_HQ_W: /* 32 columns of w x one 256-row chunk of k_pad per block */
    grid[0] = cdiv(pl->I, 32);
    grid[1] = cdiv(pl->hq.gemm.k_pad, 256);
    break;
  case HOT_K_GEMM_GX:
  case HOT_K_GEMM_GW: /* x over N tiles, y over M tiles */
    grid[0] = cdiv(g->n, g->tile_n);
    grid[1] = cdiv(g->m, g->tile_m);
    *block = (unsigned)(32 * g->warps_m * g->warps_n);
    *smem = plan_gemm_smem(g->codes, g->tile_m, g->tile_n, g->tile_k, g->stages);
    break;
  case HOT_K_BIAS: /* 32 columns of g_y per block */
    grid[0] = cdiv(pl->O, 32);
    break;
  default:
    grid[0] = 0; /* no launch code: never matches */
    break;
  }
}

/* HOT_OK when the plan launches `role` as its template documents. */
static hot_status check_geometry(hot_layer *layer, hot_kernel_role role) {
  const hot_layer_plan *pl = layer->plan;
  int k = plan_kernel_index(pl, role);
  if (k < 0)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': the plan has no kernel %s",
                    layer->spec.name, plan_role_name(role));
  const hot_kernel_plan *kp = &pl->kernels[k];
  unsigned grid[2], block, smem;
  expected_geometry(pl, role, grid, &block, &smem);
  if (kp->grid[0] != grid[0] || kp->grid[1] != grid[1] || kp->grid[2] != 1 ||
      kp->block[0] != block || kp->block[1] != 1 || kp->block[2] != 1 || kp->smem != smem)
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s: the plan launches grid "
                    "%ux%ux%u block %u smem %u, %s documents grid %ux%u block %u smem %u "
                    "(planner and template out of step)", layer->spec.name, kp->name, kp->grid[0],
                    kp->grid[1], kp->grid[2], kp->block[0], kp->smem, kp->templ, grid[0], grid[1],
                    block, smem);
  return HOT_OK;
}

hot_status launch_check(hot_layer *layer, unsigned need) {
  for (int r = 0; r < HOT_K_ROLE_COUNT; ++r) {
    if (!(need & (1u << r))) continue;
    hot_status st = check_role(layer, (hot_kernel_role)r);
    if (!st) st = check_geometry(layer, (hot_kernel_role)r);
    if (st) return st;
  }
  return HOT_OK;
}

/* Launches the plan's kernel of `role` with the plan's geometry (checked again: cheap). */
static hot_status launch_role(hot_layer *layer, hot_kernel_role role, void **args,
                              CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  int k = plan_kernel_index(pl, role);
  if (k < 0 || !layer->cu.fn[k])
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': kernel %s not loaded",
                    layer->spec.name, plan_role_name(role));
  hot_status st = check_geometry(layer, role);
  if (st) return st;
  const hot_kernel_plan *kp = &pl->kernels[k];
  hot_launch_cfg cfg = {{kp->grid[0], kp->grid[1], kp->grid[2]},
                        {kp->block[0], kp->block[1], kp->block[2]},
                        kp->smem,
                        stream};
  char err[512];
  rt_status r = module_launch(layer->cu.fn[k], &cfg, args, err, sizeof err);
  if (r != RT_OK) return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
  layer->ctx->launches++;
  return HOT_OK;
}

hot_status launch_zero(hot_layer *layer, CUdeviceptr p, size_t words, CUstream stream) {
  CUresult c = layer->ctx->cu.drv->cuMemsetD32Async(p, 0u, words, stream);
  if (c == CUDA_SUCCESS) return HOT_OK;
  char err[256];
  rt_status r = cuda_result_error(c, "cuMemsetD32Async (amax words)", err, sizeof err);
  return ctx_fail(layer->ctx, ctx_rt(r), "layer '%s': %s", layer->spec.name, err);
}

/* templates/hadamard_quant.cu. g' (HOT_K_HQ_G): rows of g_y, T x O; w' (HOT_K_HQ_W): columns
 * of w, O x I, codes stored I x k_pad. Phases: 0 amax, 1 quantize with the tensor scale,
 * 2 per-row (g' only). */
hot_status launch_hq(hot_layer *layer, hot_kernel_role role, CUdeviceptr src, CUdeviceptr codes,
                     CUdeviceptr scales, CUdeviceptr amax, int phase, uint32_t step,
                     CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  int is_g = role == HOT_K_HQ_G;
  int rows = (int)(is_g ? pl->T : pl->O), cols = (int)(is_g ? pl->O : pl->I), ld_src = cols;
  int o_pad = (int)pl->hq.o_pad, k_pad = (int)pl->hq.gemm.k_pad;
  int ld_codes = pl->hq.codes == HOT_CODES_S4_PACKED ? k_pad / 2 : k_pad;
  unsigned long long seed = layer->seed;
  unsigned tag = (unsigned)pl->layer_id * 16u + (is_g ? HOT_TENSOR_HQ_G : 0u); /* w': RTN */
  unsigned st = step;
  CUdeviceptr scale_in = 0, math_out = 0; /* absmax scales (SAWB: not yet wired on CUDA) */
  void *args[] = {&src, &rows, &cols, &ld_src, &o_pad, &k_pad, &codes, &ld_codes,
                  &scales, &amax, &scale_in, &math_out, &phase, &seed, &tag, &st};
  return launch_role(layer, role, args, stream);
}

/* templates/gemm_int.cu: C = (float)(A . B^T) * factor(m), alpha = (*alpha_a * (alpha_b ?
 * *alpha_b : 1)) / alpha_div computed on the device. HQ: A = q_g' (T x k_pad), B = q_w'
 * (I x k_pad), row_scale = s_g, alpha_a = &s_w, alpha_b = NULL, div = b. HLA: A = q_g^ (O x
 * k_pad), B = q_x^ (I x k_pad), row_scale = NULL, alpha_a = &s_g^, alpha_b = &s_x^, div = p. */
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
  void *args[] = {&a, &b, &c, &row_scale, &alpha_a, &alpha_b, &alpha_div, &M, &N, &Kpad, &ldc};
  return launch_role(layer, role, args, stream);
}

/* templates/bias.cu: grid ceil(O / 32) blocks of 256 threads, each owning 32 columns. */
hot_status launch_bias(hot_layer *layer, CUdeviceptr g_y, CUdeviceptr g_b, CUstream stream) {
  const hot_layer_plan *pl = layer->plan;
  int T = (int)pl->T, O = (int)pl->O;
  void *args[] = {&g_y, &g_b, &T, &O};
  return launch_role(layer, HOT_K_BIAS, args, stream);
}

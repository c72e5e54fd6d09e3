/* kernels/gemm.c — the two integer GEMMs of a backward, g_x = q_g' . q_w' (gemm_gx, HQ epilogue)
 * and g_w = q_g^T . q_x^ (gemm_gw, HLA epilogue, segmented with per-sample scales), on the
 * cp.async paths (the GEMM-path table's rows without the TMA, gen/plan_tables.c): templates/
 * gemm_int.cu (mma.sync) and templates/gemm_wgmma.cu (wgmma); twin templates/gemm_ref.c. The TMA
 * path is gemm_tma.c.
 *
 * Roles (values are ABI: appended only; docs/adding.md):
 *   @hot-role HOT_K_GEMM_GX 4 gemm_gx: g_x = q_g' . q_w' with the HQ epilogue
 *   @hot-role HOT_K_GEMM_GW 5 gemm_gw: g_w = q_g^T . q_x^ with the HLA epilogue
 */
#include <stdio.h>

#include "gemm_common.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

const hot_gemm_plan *kd_gemm_plan(const hot_layer_plan *p, hot_kernel_role r) {
  return r == HOT_K_GEMM_GX ? &p->hq.gemm : &p->hla.gemm;
}

int kd_gemm_enabled(const hot_layer_plan *p, hot_kernel_role r) {
  return r == HOT_K_GEMM_GX ? p->hq.enabled : p->hla.enabled;
}

/* C = (float)(A . B^T) * factor(m), alpha = (*alpha_a * (alpha_b ? *alpha_b : 1)) / alpha_div.
 * g_x: A = q_g' (T x k_pad), B = q_w' (I x k_pad), row_scale = s_g, alpha_a = s_w, div = b.
 * g_w: A = q_g^ (O x k_pad), B = q_x^ (HOT_LB_Q_HX: unpacked by abc_unpack, or the saved buffer
 * in place), alpha_a = s_g^, alpha_b = s_x^ (hla.groups floats each), div = p; segmented:
 * seg_kpad codes of K per segment. */
int kd_gemm_args(const hot_layer_plan *p, hot_kernel_role r, const hot_launch_in *in, hot_argv *v) {
  const int gx = r == HOT_K_GEMM_GX;
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  if (g->m != (gx ? p->T : p->O) || g->n != p->I) return -1;
  kd_buf(v, in, gx ? HOT_LB_Q_G : HOT_LB_Q_HG);
  kd_buf(v, in, gx ? HOT_LB_Q_W : HOT_LB_Q_HX);
  kd_buf(v, in, gx ? HOT_LB_GX : HOT_LB_GW);
  kd_buf_if(v, in, gx, HOT_LB_S_G);
  kd_buf(v, in, gx ? HOT_LB_S_W : HOT_LB_S_HG);
  kd_buf_if(v, in, !gx, HOT_LB_S_X);
  kd_f32(v, (float)(gx ? p->hq.block : p->hla.block));
  kd_i32(v, g->m);
  kd_i32(v, g->n);
  kd_i32(v, g->k_pad);
  kd_i32(v, p->I); /* ldc */
  kd_i32(v, g->seg_k_pad); /* = Kpad unless the GEMM is segmented */
  return v->bad ? -1 : 0;
}

int kd_gemm_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                 hot_kernel_cost *c) {
  (void)gran_row;
  if (phase != 0) return -1;
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  const int row_scale = r == HOT_K_GEMM_GX;
  c->bytes_read = (g->m + g->n) * plan_code_bytes(g->codes, g->k_pad) + (row_scale ? g->m * 4 : 0);
  c->bytes_written = g->m * g->n * 4;
  if (g->segmented) { /* every later segment reads back and rewrites C (CONTRACT.md 14) */
    const int64_t more = g->k_pad / g->seg_k_pad - 1;
    c->bytes_read += more * g->m * g->n * 4;
    c->bytes_written += more * g->m * g->n * 4;
  }
  c->int_ops = 2 * g->m * g->n * g->k_pad;
  c->bound = 1;
  return 0;
}

const char *kd_gemm_output(hot_kernel_role r) { return r == HOT_K_GEMM_GX ? "g_x" : "g_w"; }

static int gemm_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  return kd_gemm_enabled(p, r) && !plan_gemm_path_info(kd_gemm_plan(p, r)->path)->need_tma &&
         !kd_block_gpu(p); /* recipe nvfp4 on sm_120a: gemm_nvfp4.c, gemm_mxfp8.c */
}

/* x over N tiles, y over M tiles; the plan's warps, its pipeline buffers as dynamic smem. */
static int gemm_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *geo) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  geo->grid_x = cdiv(g->n, g->tile_n);
  geo->grid_y = cdiv(g->m, g->tile_m);
  geo->block = (unsigned)(32 * g->warps_m * g->warps_n);
  geo->smem = g->smem;
  return 0;
}

static int gemm_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  return snprintf(out, n, "hot_gemm_%s_%dx%dx%d_w%dx%d_s%d%s", plan_gemm_path_name(g->path),
                  g->tile_m, g->tile_n, g->tile_k, g->warps_m, g->warps_n, g->stages,
                  g->segmented ? "_seg" : "");
}

static void gemm_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  kd_param(o, "HOT_CODES", "%d", (int)g->codes);
  kd_param(o, "HOT_TILE_M", "%d", g->tile_m);
  kd_param(o, "HOT_TILE_N", "%d", g->tile_n);
  kd_param(o, "HOT_TILE_K", "%d", g->tile_k);
  kd_param(o, "HOT_WARPS_M", "%d", g->warps_m);
  kd_param(o, "HOT_WARPS_N", "%d", g->warps_n);
  kd_param(o, "HOT_STAGES", "%d", g->stages);
  kd_param(o, "HOT_SEGS", "%d", g->segmented); /* 1: K segments with a scale each */
}

static int gemm_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                     hot_argv *v) {
  (void)phase;
  return kd_gemm_args(p, r, in, v);
}

const char *kd_gemm_templ(const hot_layer_plan *p, hot_kernel_role r) {
  return plan_gemm_path_info(kd_gemm_plan(p, r)->path)->templ;
}

int kd_gemm_block_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *geo) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  geo->grid_x = cdiv(g->n, g->tile_n);
  geo->grid_y = cdiv(g->m, g->tile_m);
  geo->block = (unsigned)(32 * g->warps_m * g->warps_n);
  geo->smem = 0;
  return 0;
}

int kd_gemm_block_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  return snprintf(out, n, "hot_gemm_%s_%dx%dx%d_w%dx%d", plan_gemm_path_name(g->path), g->tile_m,
                  g->tile_n, g->tile_k, g->warps_m, g->warps_n);
}

void kd_gemm_block_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  kd_param(o, "HOT_TILE_M", "%d", g->tile_m);
  kd_param(o, "HOT_TILE_N", "%d", g->tile_n);
  kd_param(o, "HOT_TILE_K", "%d", g->tile_k);
  kd_param(o, "HOT_WARPS_M", "%d", g->warps_m);
  kd_param(o, "HOT_WARPS_N", "%d", g->warps_n);
}

int kd_gemm_block_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int64_t bytes_read,
                       hot_kernel_cost *c) {
  if (phase != 0) return -1;
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  c->bytes_read = bytes_read;
  c->bytes_written = g->m * g->n * 4;
  c->int_ops = 2 * g->m * g->n * g->k_pad;
  c->bound = 1;
  return 0;
}

static const hot_step gemm_steps[] = {
    {HOT_CALL_BACKWARD, 50, HOT_K_GEMM_GX, 0, HOT_WHEN_ALWAYS, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 51, HOT_K_GEMM_GW, 0, HOT_WHEN_ALWAYS, HOT_OUT_GW},
};

/* The template follows the plan's path (every path of the table without the TMA): mma.sync
 * (gemm_int.cu) or wgmma (gemm_wgmma.cu). */
const hot_kernel_desc kd_gemm = {
    .family = "gemm",
    .roles = 1u << HOT_K_GEMM_GX | 1u << HOT_K_GEMM_GW,
    .templ = "templates/gemm_int.cu",
    .templ_for = kd_gemm_templ,
    .planned = gemm_planned,
    .geom = gemm_geom,
    .one_block_phase = -1,
    .name = gemm_name,
    .params = gemm_params,
    .sig = KD_GEMM_SIG,
    .args = gemm_args,
    .cost = kd_gemm_cost,
    .output = kd_gemm_output,
    .steps = gemm_steps,
    .n_steps = 2,
};

/* kernels/gemm_nvfp4.c — recipe nvfp4's g_x GEMM on sm_120a (path mma_nvfp4): g_x = q_g' . q_w'
 * with NVFP4 operands, templates/gemm_nvfp4.cu, twin nvfp4_gemm (templates/nvfp4_ref.c).
 * Planned where kd_block_gpu(p); the gemm family keeps every other plan.
 *
 * A = Q_G (T rows of Kpad / 2 code bytes), SA = SF_G, s_ta = S_G; B = Q_W (I rows), SB = SF_W,
 * s_tb = S_W; div = 16 (the HQ block); Kpad = hq.gemm.k_pad = o_pad, which the planner makes a
 * multiple of the K tile (the template reads K in whole tiles). One shared-memory stage, static
 * shared memory only.
 *
 * Its role is gemm.c's; its step runs gemm's CPU step function (which takes recipe nvfp4):
 *   @hot-cpu-steps gemm
 */
#include <stdio.h>

#include "gemm_common.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int nv_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  return r == HOT_K_GEMM_GX && kd_gemm_enabled(p, r) && kd_block_gpu(p);
}

/* x over N tiles, y over M tiles, the plan's warps; static shared memory (none dynamic). */
static int nv_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *geo) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  geo->grid_x = cdiv(g->n, g->tile_n);
  geo->grid_y = cdiv(g->m, g->tile_m);
  geo->block = (unsigned)(32 * g->warps_m * g->warps_n);
  geo->smem = 0;
  return 0;
}

/* One stage, no segments: the tile and the warps are every parameter. */
static int nv_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  return snprintf(out, n, "hot_gemm_%s_%dx%dx%d_w%dx%d", plan_gemm_path_name(g->path), g->tile_m,
                  g->tile_n, g->tile_k, g->warps_m, g->warps_n);
}

static void nv_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  kd_param(o, "HOT_TILE_M", "%d", g->tile_m);
  kd_param(o, "HOT_TILE_N", "%d", g->tile_n);
  kd_param(o, "HOT_TILE_K", "%d", g->tile_k);
  kd_param(o, "HOT_WARPS_M", "%d", g->warps_m);
  kd_param(o, "HOT_WARPS_N", "%d", g->warps_n);
}

static int nv_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                   hot_argv *v) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  if (phase != 0 || g->m != p->T || g->n != p->I || g->k_pad % g->tile_k) return -1;
  kd_buf(v, in, HOT_LB_Q_G);
  kd_buf(v, in, HOT_LB_SF_G);
  kd_buf(v, in, HOT_LB_S_G);
  kd_buf(v, in, HOT_LB_Q_W);
  kd_buf(v, in, HOT_LB_SF_W);
  kd_buf(v, in, HOT_LB_S_W);
  kd_i32(v, p->hq.block); /* div */
  kd_buf(v, in, HOT_LB_GX);
  kd_i32(v, g->m);
  kd_i32(v, g->n);
  kd_i32(v, g->k_pad);
  kd_i32(v, p->I); /* ldc */
  return v->bad ? -1 : 0;
}

/* Both operands' codes and block scales once, C once; 2 m n k_pad tensor-core operations. */
static int nv_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                   hot_kernel_cost *c) {
  (void)gran_row;
  if (phase != 0) return -1;
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  c->bytes_read = plan_buffer_bytes(p, HOT_BUF_Q_G) + plan_buffer_bytes(p, HOT_BUF_Q_W) + 8;
  c->bytes_written = g->m * g->n * 4;
  c->int_ops = 2 * g->m * g->n * g->k_pad;
  c->bound = 1;
  return 0;
}

/* The template of the plan's path (its row of the GEMM-path table). */
static const char *nv_templ(const hot_layer_plan *p, hot_kernel_role r) {
  return plan_gemm_path_info(kd_gemm_plan(p, r)->path)->templ;
}

static const hot_step nv_steps[] = {{HOT_CALL_BACKWARD, 50, HOT_K_GEMM_GX, 0, HOT_WHEN_ALWAYS}};

const hot_kernel_desc kd_gemm_nvfp4 = {
    .family = "gemm_nvfp4",
    .roles = 1u << HOT_K_GEMM_GX,
    .templ = "templates/gemm_nvfp4.cu",
    .templ_for = nv_templ,
    .planned = nv_planned,
    .geom = nv_geom,
    .one_block_phase = -1,
    .name = nv_name,
    .params = nv_params,
    .sig = "A,SA,s_ta,B,SB,s_tb,div,C,M,N,Kpad,ldc",
    .args = nv_args,
    .cost = nv_cost,
    .output = kd_gemm_output,
    .steps = nv_steps,
    .n_steps = 1,
};

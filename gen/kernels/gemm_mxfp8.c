/* kernels/gemm_mxfp8.c — recipe nvfp4's g_w GEMM on sm_120a (path mma_mxfp8): g_w = q_g^T . q_x^
 * with MXFP8 operands, templates/gemm_mxfp8.cu, twin mxfp8_gemm (templates/nvfp4_ref.c).
 * Planned where kd_block_gpu(p); the gemm family keeps every other plan.
 *
 * A = Q_HG (O rows of Kpad E4M3 codes), SA = S_HG (its E8M0 scales); B = Q_HX, the saved buffer
 * read in place (I rows), SB = S_X (the scales in the saved buffer); div = p (the HLA block);
 * Kpad = hla.gemm.k_pad = K rounded up to 32, not to the K tile: the template zero-fills its last
 * K tile past Kpad, so the saved x^ of the CPU twin's layout needs no unpack kernel. One
 * shared-memory stage, static shared memory only.
 *
 * Its role is gemm.c's; its step runs gemm's CPU step function (which takes recipe nvfp4):
 *   @hot-cpu-steps gemm
 */
#include <stdio.h>

#include "gemm_common.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int mx8_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  return r == HOT_K_GEMM_GW && kd_gemm_enabled(p, r) && kd_block_gpu(p);
}

/* x over N tiles, y over M tiles, the plan's warps; static shared memory (none dynamic). */
static int mx8_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *geo) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  geo->grid_x = cdiv(g->n, g->tile_n);
  geo->grid_y = cdiv(g->m, g->tile_m);
  geo->block = (unsigned)(32 * g->warps_m * g->warps_n);
  geo->smem = 0;
  return 0;
}

/* One stage, no segments (one scale group: recipe nvfp4's hla.scale is per tensor). */
static int mx8_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  return snprintf(out, n, "hot_gemm_%s_%dx%dx%d_w%dx%d", plan_gemm_path_name(g->path), g->tile_m,
                  g->tile_n, g->tile_k, g->warps_m, g->warps_n);
}

static void mx8_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  kd_param(o, "HOT_TILE_M", "%d", g->tile_m);
  kd_param(o, "HOT_TILE_N", "%d", g->tile_n);
  kd_param(o, "HOT_TILE_K", "%d", g->tile_k);
  kd_param(o, "HOT_WARPS_M", "%d", g->warps_m);
  kd_param(o, "HOT_WARPS_N", "%d", g->warps_n);
}

static int mx8_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                    hot_argv *v) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  if (phase != 0 || g->m != p->O || g->n != p->I || g->k_pad % 32 || g->segmented) return -1;
  kd_buf(v, in, HOT_LB_Q_HG);
  kd_buf(v, in, HOT_LB_S_HG);
  kd_buf(v, in, HOT_LB_Q_HX);
  kd_buf(v, in, HOT_LB_S_X);
  kd_i32(v, p->hla.block); /* div */
  kd_buf(v, in, HOT_LB_GW);
  kd_i32(v, g->m);
  kd_i32(v, g->n);
  kd_i32(v, g->k_pad);
  kd_i32(v, p->I); /* ldc */
  return v->bad ? -1 : 0;
}

/* Both operands' codes and scales once, C once; 2 m n k_pad tensor-core operations. */
static int mx8_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                    hot_kernel_cost *c) {
  (void)gran_row;
  if (phase != 0) return -1;
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  c->bytes_read = plan_buffer_bytes(p, HOT_BUF_Q_HG) + plan_buffer_bytes(p, HOT_BUF_Q_HX);
  c->bytes_written = g->m * g->n * 4;
  c->int_ops = 2 * g->m * g->n * g->k_pad;
  c->bound = 1;
  return 0;
}

/* The template of the plan's path (its row of the GEMM-path table). */
static const char *mx8_templ(const hot_layer_plan *p, hot_kernel_role r) {
  return plan_gemm_path_info(kd_gemm_plan(p, r)->path)->templ;
}

static const hot_step mx8_steps[] = {{HOT_CALL_BACKWARD, 51, HOT_K_GEMM_GW, 0, HOT_WHEN_ALWAYS}};

const hot_kernel_desc kd_gemm_mxfp8 = {
    .family = "gemm_mxfp8",
    .roles = 1u << HOT_K_GEMM_GW,
    .templ = "templates/gemm_mxfp8.cu",
    .templ_for = mx8_templ,
    .planned = mx8_planned,
    .geom = mx8_geom,
    .one_block_phase = -1,
    .name = mx8_name,
    .params = mx8_params,
    .sig = "A,SA,B,SB,div,C,M,N,Kpad,ldc",
    .args = mx8_args,
    .cost = mx8_cost,
    .output = kd_gemm_output,
    .steps = mx8_steps,
    .n_steps = 1,
};

/* kernels/gemm_nvfp4.c — recipe nvfp4's g_x GEMM on sm_120a (path mma_nvfp4): g_x = q_g' . q_w'
 * with NVFP4 operands, templates/gemm_nvfp4.cu, twin nvfp4_gemm (templates/nvfp4_ref.c).
 * Planned where kd_block_gpu(p); the gemm family keeps every other plan.
 *
 * A = Q_G (T rows of Kpad / 2 code bytes), SA = SF_G, s_ta = S_G; B = Q_W (I rows), SB = SF_W,
 * s_tb = S_W; div = 16 (the HQ block); Kpad = hq.gemm.k_pad = o_pad, which the planner makes a
 * multiple of the K tile (the template reads K in whole tiles). One shared-memory stage, static
 * shared memory only.
 *
 * Geometry, name, parameters, template and the shape of its cost are the block-scaled GEMMs' of
 * gemm_common.h: one stage, no segments.
 *
 * Its role is gemm.c's; its step runs gemm's CPU step function (which takes recipe nvfp4):
 *   @hot-cpu-steps gemm
 */
#include "gemm_common.h"

static int nv_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  return r == HOT_K_GEMM_GX && kd_gemm_enabled(p, r) && kd_block_gpu(p);
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
  const int64_t read = plan_buffer_bytes(p, HOT_BUF_Q_G) + plan_buffer_bytes(p, HOT_BUF_Q_W) + 8;
  return kd_gemm_block_cost(p, r, phase, read, c);
}

static const hot_step nv_steps[] = {
    {HOT_CALL_BACKWARD, 50, HOT_K_GEMM_GX, 0, HOT_WHEN_ALWAYS, HOT_OUT_GX}};

const hot_kernel_desc kd_gemm_nvfp4 = {
    .family = "gemm_nvfp4",
    .roles = 1u << HOT_K_GEMM_GX,
    .templ = "templates/gemm_nvfp4.cu",
    .templ_for = kd_gemm_templ,
    .planned = nv_planned,
    .geom = kd_gemm_block_geom,
    .one_block_phase = -1,
    .name = kd_gemm_block_name,
    .params = kd_gemm_block_params,
    .sig = "A,SA,s_ta,B,SB,s_tb,div,C,M,N,Kpad,ldc",
    .args = nv_args,
    .cost = nv_cost,
    .output = kd_gemm_output,
    .steps = nv_steps,
    .n_steps = 1,
};

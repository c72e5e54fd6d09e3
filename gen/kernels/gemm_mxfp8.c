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
 * Geometry, name, parameters, template and the shape of its cost are the block-scaled GEMMs' of
 * gemm_common.h: one stage, no segments (one scale group: recipe nvfp4's hla.scale is per
 * tensor).
 *
 * Its role is gemm.c's; its step runs gemm's CPU step function (which takes recipe nvfp4):
 *   @hot-cpu-steps gemm
 */
#include "gemm_common.h"

static int mx8_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  return r == HOT_K_GEMM_GW && kd_gemm_enabled(p, r) && kd_block_gpu(p);
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
  const int64_t read = plan_buffer_bytes(p, HOT_BUF_Q_HG) + plan_buffer_bytes(p, HOT_BUF_Q_HX);
  return kd_gemm_block_cost(p, r, phase, read, c);
}

static const hot_step mx8_steps[] = {
    {HOT_CALL_BACKWARD, 51, HOT_K_GEMM_GW, 0, HOT_WHEN_ALWAYS, HOT_OUT_GW}};

const hot_kernel_desc kd_gemm_mxfp8 = {
    .family = "gemm_mxfp8",
    .roles = 1u << HOT_K_GEMM_GW,
    .templ = "templates/gemm_mxfp8.cu",
    .templ_for = kd_gemm_templ,
    .planned = mx8_planned,
    .geom = kd_gemm_block_geom,
    .one_block_phase = -1,
    .name = kd_gemm_block_name,
    .params = kd_gemm_block_params,
    .sig = "A,SA,B,SB,div,C,M,N,Kpad,ldc",
    .args = mx8_args,
    .cost = mx8_cost,
    .output = kd_gemm_output,
    .steps = mx8_steps,
    .n_steps = 1,
};

/* kernels/hq_nvfp4.c — recipe nvfp4's HQ quantisers of g' (hq_g, SR or RTN) and w' (hq_w, RTN)
 * on sm_120a: templates/hq_nvfp4.cu, twins nvfp4_hq_quant_g / _w (templates/nvfp4_ref.c).
 * Planned where kd_block_gpu(p) (a GPU plan of recipe nvfp4); the hq family keeps every other
 * plan, the CPU backend's plans of the recipe included.
 *
 * Layout (templates/nvfp4_plan.h, the CPU twin's): Q_G holds T rows of o_pad / 2 code bytes,
 * then (SF_G) T rows of o_pad / 16 E4M3 scales; S_G the fp32 tensor scale; likewise Q_W, SF_W,
 * S_W with I rows. o_pad = O rounded up to 16 = hq.gemm.k_pad (the planner refuses a plan where
 * the g_x GEMM's K tile does not divide it), so the SR index t * o_pad + o is the twin's.
 *
 * Its roles are hq.c's; its steps run hq's CPU step functions (which take recipe nvfp4):
 *   @hot-cpu-steps hq
 */
#include <stdio.h>

#include "hot_math.cuh" /* HOT_TENSOR_*: the Philox tags */
#include "kernel_desc.h"

#define HQ4_THREADS 256 /* the template's HOT_QTHREADS */

static int hq4_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  (void)r;
  return p->hq.enabled && kd_block_gpu(p);
}

/* One thread per (row, 16-value block), 256 per block; both phases on the same grid. */
static int hq4_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  const int64_t rows = r == HOT_K_HQ_G ? p->T : p->I, blocks = rows * (p->hq.o_pad / 16);
  g->grid_x = (blocks + HQ4_THREADS - 1) / HQ4_THREADS;
  g->grid_y = 1;
  g->block = HQ4_THREADS;
  return 0;
}

/* Every parameter (operand, rounding) is in the name. */
static int hq4_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  if (r == HOT_K_HQ_W) return snprintf(out, n, "hot_hq_nvfp4_w");
  return snprintf(out, n, "hot_hq_nvfp4_g_%s", p->hq.g.round == HOT_ROUND_SR ? "sr" : "rtn");
}

static void hq4_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  kd_param(o, "HOT_OPERAND", "%d", r == HOT_K_HQ_W);
  kd_param(o, "HOT_ROUND", "%d", r == HOT_K_HQ_G && p->hq.g.round == HOT_ROUND_SR);
}

/* Phase 0: the tensor amax (AMAX_G / AMAX_W) and the non-finite flag (BAD); phase 1: s_t, codes
 * and block scales. Phase 2 (hq_g per row) does not exist: g' has one tensor scale here. */
static int hq4_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                    hot_argv *v) {
  const int g = r == HOT_K_HQ_G;
  if ((phase != 0 && phase != 1) || p->hq.o_pad != p->hq.gemm.k_pad) return -1;
  kd_buf(v, in, g ? HOT_LB_GY : HOT_LB_W);
  kd_i32(v, g ? p->T : p->I); /* rows */
  kd_i32(v, p->O);
  kd_i32(v, p->hq.o_pad);
  kd_i32(v, phase);
  kd_buf(v, in, g ? HOT_LB_AMAX_G : HOT_LB_AMAX_W);
  kd_buf(v, in, HOT_LB_BAD);
  kd_buf(v, in, g ? HOT_LB_Q_G : HOT_LB_Q_W);
  kd_buf(v, in, g ? HOT_LB_SF_G : HOT_LB_SF_W);
  kd_buf(v, in, g ? HOT_LB_S_G : HOT_LB_S_W);
  kd_u64(v, in->seed);
  kd_u32(v, (uint32_t)((unsigned)p->layer_id * 16u + (g ? HOT_TENSOR_HQ_G : 0u))); /* w': RTN */
  kd_step(v, in);
  return v->bad ? -1 : 0;
}

/* Phase 0 reads the source; phase 1 reads it again (the transform is recomputed) and writes the
 * codes, the block scales and s_t. */
static int hq4_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                    hot_kernel_cost *c) {
  const int g = r == HOT_K_HQ_G;
  if (phase < 0 || phase > 1 || gran_row) return -1;
  c->bytes_read = plan_buffer_bytes(p, g ? HOT_BUF_GY : HOT_BUF_W);
  if (phase == 1) c->bytes_written = plan_buffer_bytes(p, g ? HOT_BUF_Q_G : HOT_BUF_Q_W) + 4;
  return 0;
}

/* Scratch (backward): codes + block scales of g' and w', their tensor scales, the amax words. */
static int64_t hq4_q_g(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_Q_G); }
static int64_t hq4_q_w(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_Q_W); }
static int64_t hq4_scalar(const hot_layer_plan *p) {
  (void)p;
  return 4;
}
static const hot_scratch hq4_scratch[] = {
    {HOT_LB_Q_G, "q_g", hq4_q_g, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_S_G, "s_g", hq4_scalar, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_Q_W, "q_w", hq4_q_w, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_S_W, "s_w", hq4_scalar, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_AMAX, "amax", kd_amax_bytes, 256, HOT_CALLS_ALL, HOT_CALLS_ALL},
};
/* The block scales follow the codes (o_pad / 2 bytes a row: a multiple of 8, so SF_* is 8-byte
 * aligned past a 256-byte piece). */
static int64_t hq4_sf_g(const hot_layer_plan *p, int ps) {
  (void)ps;
  return p->T * (p->hq.o_pad / 2);
}
static int64_t hq4_sf_w(const hot_layer_plan *p, int ps) {
  (void)ps;
  return p->I * (p->hq.o_pad / 2);
}
static int64_t hq4_amax_g(const hot_layer_plan *p, int ps) {
  (void)p;
  (void)ps;
  return 4 * HOT_AMAX_HQ_G; /* one tensor scale: never the per-sample words */
}
static int64_t hq4_amax_w(const hot_layer_plan *p, int ps) {
  (void)p;
  (void)ps;
  return 4 * HOT_AMAX_HQ_W;
}
static int64_t hq4_bad(const hot_layer_plan *p, int ps) {
  (void)p;
  (void)ps;
  return 4 * HOT_AMAX_BAD;
}
static const hot_view hq4_views[] = {
    {HOT_LB_SF_G, HOT_LB_Q_G, hq4_sf_g},      {HOT_LB_SF_W, HOT_LB_Q_W, hq4_sf_w},
    {HOT_LB_AMAX_G, HOT_LB_AMAX, hq4_amax_g}, {HOT_LB_AMAX_W, HOT_LB_AMAX, hq4_amax_w},
    {HOT_LB_BAD, HOT_LB_AMAX, hq4_bad},
};

static const hot_step hq4_steps[] = {
    {HOT_CALL_BACKWARD, 21, HOT_K_HQ_G, 0, HOT_WHEN_GRAN_NOT_ROW, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 22, HOT_K_HQ_G, 1, HOT_WHEN_GRAN_NOT_ROW, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 30, HOT_K_HQ_W, 0, HOT_WHEN_ALWAYS, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 33, HOT_K_HQ_W, 1, HOT_WHEN_ALWAYS, HOT_OUT_GX},
};

const hot_kernel_desc kd_hq_nvfp4 = {
    .family = "hq_nvfp4",
    .roles = 1u << HOT_K_HQ_G | 1u << HOT_K_HQ_W,
    .templ = "templates/hq_nvfp4.cu",
    .planned = hq4_planned,
    .geom = hq4_geom,
    .one_block_phase = -1,
    .name = hq4_name,
    .params = hq4_params,
    .sig = "src,rows,O,o_pad,phase,amax_word,bad,codes,scales,s_t,seed,tag,step",
    .args = hq4_args,
    .cost = hq4_cost,
    .output = kd_no_output,
    .steps = hq4_steps,
    .n_steps = (int)(sizeof hq4_steps / sizeof hq4_steps[0]),
    .scratch = hq4_scratch,
    .n_scratch = (int)(sizeof hq4_scratch / sizeof hq4_scratch[0]),
    .views = hq4_views,
    .n_views = (int)(sizeof hq4_views / sizeof hq4_views[0]),
};

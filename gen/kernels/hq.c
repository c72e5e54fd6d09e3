/* kernels/hq.c — the HQ quantizers of g' (hq_g) and w' (hq_w): templates/hadamard_quant.cu, twin
 * templates/hadamard_quant_ref.c (hot_ref_hq_g / hot_ref_hq_w).
 *
 * Roles (values are ABI: appended only; docs/adding.md):
 *   @hot-role HOT_K_HQ_G 1 hq_g: backward: g_y -> block FWHT along O -> q_g' (SR) + s_g
 *   @hot-role HOT_K_HQ_W 2 hq_w: backward: w -> block FWHT along O -> q_w' (RTN) + s_w
 */
#include <stdio.h>

#include "hot_math.cuh" /* HOT_TENSOR_*: the Philox tags */
#include "kernel_desc.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int hq_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  (void)r;
  return p->hq.enabled && !kd_block_gpu(p); /* recipe nvfp4 on sm_120a: hq_nvfp4.c */
}

/* g': one warp per row of g_y, 8 rows per block; w': 32 columns of w x one 256-row chunk of k_pad
 * per block (a transposing shared tile). */
static int hq_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  if (r == HOT_K_HQ_G) g->grid_x = cdiv(p->T, 8), g->grid_y = 1;
  else g->grid_x = cdiv(p->I, 32), g->grid_y = cdiv(p->hq.gemm.k_pad, 256);
  g->block = 256;
  return 0;
}

/* g' rounds stochastically unless its name ends in "_rtn". */
static int hq_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const int g = r == HOT_K_HQ_G;
  return snprintf(out, n, "hot_hq_%s_%s_b%d_k%d_%s%s", g ? "g" : "w",
                  plan_dtype_name(p->spec->dtype), p->hq.block, g ? p->hq.g.bits : p->hq.w.bits,
                  plan_codes_name(p->hq.codes), g && p->hq.g.round == HOT_ROUND_RTN ? "_rtn" : "");
}

static void hq_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const hot_quant *q = r == HOT_K_HQ_W ? &p->hq.w : &p->hq.g;
  kd_param(o, "HOT_OPERAND", "%d", r == HOT_K_HQ_W);
  kd_param(o, "HOT_DTYPE", "%d", (int)p->spec->dtype);
  kd_param(o, "HOT_B", "%d", p->hq.block);
  kd_param(o, "HOT_BITS", "%d", q->bits);
  kd_param(o, "HOT_CODES", "%d", (int)p->hq.codes);
  kd_param(o, "HOT_ROUND", "%d", q->round == HOT_ROUND_SR); /* 0: RTN, 1: SR */
}

/* g' (hq_g): rows of g_y, T x O; w' (hq_w): columns of w, O x I, codes stored I x k_pad. Phases:
 * 0 amax (w' with SAWB: also w' in math layout, o_pad x I floats), 1 quantize with the group's
 * scale (w' with SAWB: sawb.cu's scale), 2 per-row (g' only). g' per sample: one amax word and
 * scale per sample (groups of L rows). */
static int hq_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                   hot_argv *v) {
  const int g = r == HOT_K_HQ_G;
  const int sawb = !g && plan_kernel_index(p, HOT_K_SAWB_W) >= 0;
  const int64_t rows = g ? p->T : p->O, cols = g ? p->O : p->I, k_pad = p->hq.gemm.k_pad;
  const int per_sample = g && phase != 2 && in->per_sample_g;
  kd_buf(v, in, g ? HOT_LB_GY : HOT_LB_W);
  kd_i32(v, rows);
  kd_i32(v, cols);
  kd_i32(v, cols); /* ld_src */
  kd_i32(v, p->hq.o_pad);
  kd_i32(v, k_pad);
  kd_buf(v, in, g ? HOT_LB_Q_G : HOT_LB_Q_W);
  kd_i32(v, k_pad / plan_codes_info(p->hq.codes)->per_byte); /* ld_codes */
  kd_buf(v, in, g ? HOT_LB_S_G : HOT_LB_S_W);
  kd_buf(v, in, g ? HOT_LB_AMAX_G : HOT_LB_AMAX_W);
  kd_i32(v, per_sample ? p->L : rows); /* group_rows */
  kd_buf_if(v, in, sawb && phase == 1, HOT_LB_S_SAWB_W); /* scale_in */
  kd_buf_if(v, in, sawb && phase == 0, HOT_LB_MATH);     /* math_out */
  kd_i32(v, phase);
  kd_u64(v, in->seed);
  kd_u32(v, (uint32_t)((unsigned)p->layer_id * 16u + (g ? HOT_TENSOR_HQ_G : 0u))); /* w': RTN */
  kd_step(v, in);
  return v->bad ? -1 : 0;
}

static int hq_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                   hot_kernel_cost *c) {
  if (r == HOT_K_HQ_G) { /* 0 amax; 1 quantize with the tensor scale; 2 per-row, one pass */
    if (phase < 0 || phase > 2 || (phase == 2) != (gran_row != 0)) return -1;
    c->bytes_read = plan_buffer_bytes(p, HOT_BUF_GY);
    if (phase > 0)
      c->bytes_written = plan_buffer_bytes(p, HOT_BUF_Q_G) +
                         (phase == 2 ? plan_buffer_bytes(p, HOT_BUF_S_G) : 4);
    return 0;
  }
  if (phase < 0 || phase > 1) return -1; /* w': 0 amax (+ fp32 w' for SAWB); 1 quantize */
  c->bytes_read = plan_buffer_bytes(p, HOT_BUF_W);
  if (phase == 0 && p->hq.w.rule == HOT_RULE_SAWB)
    c->bytes_written = plan_sawb_elems(p, HOT_K_SAWB_W) * 4;
  if (phase == 1) c->bytes_written = plan_buffer_bytes(p, HOT_BUF_Q_W) + 4;
  return 0;
}

/* Scratch (backward): the codes and scales of g' and w', and the amax words. */
static int64_t hq_q_g(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_Q_G); }
static int64_t hq_s_g(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_S_G); }
static int64_t hq_q_w(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_Q_W); }
static int64_t hq_s_w(const hot_layer_plan *p) {
  (void)p;
  return 4;
}
static const hot_scratch hq_scratch[] = {
    {HOT_LB_Q_G, "q_g", hq_q_g, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_S_G, "s_g", hq_s_g, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_Q_W, "q_w", hq_q_w, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_S_W, "s_w", hq_s_w, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_AMAX, "amax", kd_amax_bytes, 256, HOT_CALLS_ALL, HOT_CALLS_ALL},
};
/* g': one word a sample after the per-tensor words when per sample, else its own word. */
static int64_t hq_amax_g(const hot_layer_plan *p, int per_sample_g) {
  (void)p;
  return 4 * (per_sample_g ? HOT_AMAX_WORDS : HOT_AMAX_HQ_G);
}
static int64_t hq_amax_w(const hot_layer_plan *p, int per_sample_g) {
  (void)p;
  (void)per_sample_g;
  return 4 * HOT_AMAX_HQ_W;
}
static const hot_view hq_views[] = {
    {HOT_LB_AMAX_G, HOT_LB_AMAX, hq_amax_g},
    {HOT_LB_AMAX_W, HOT_LB_AMAX, hq_amax_w},
};

static const hot_step hq_steps[] = {
    {HOT_CALL_BACKWARD, 20, HOT_K_HQ_G, 2, HOT_WHEN_GRAN_ROW, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 21, HOT_K_HQ_G, 0, HOT_WHEN_GRAN_NOT_ROW, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 22, HOT_K_HQ_G, 1, HOT_WHEN_GRAN_NOT_ROW, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 30, HOT_K_HQ_W, 0, HOT_WHEN_ALWAYS, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 33, HOT_K_HQ_W, 1, HOT_WHEN_ALWAYS, HOT_OUT_GX},
};

const hot_kernel_desc kd_hq = {
    .family = "hq",
    .roles = 1u << HOT_K_HQ_G | 1u << HOT_K_HQ_W,
    .templ = "templates/hadamard_quant.cu",
    .planned = hq_planned,
    .geom = hq_geom,
    .one_block_phase = -1,
    .name = hq_name,
    .params = hq_params,
    .sig = "src,rows,cols,ld_src,o_pad,k_pad,codes,ld_codes,scales,amax_bits,group_rows,scale_in,"
           "math_out,phase,seed,tag,step",
    .args = hq_args,
    .cost = hq_cost,
    .output = kd_no_output,
    .steps = hq_steps,
    .n_steps = (int)(sizeof hq_steps / sizeof hq_steps[0]),
    .scratch = hq_scratch,
    .n_scratch = (int)(sizeof hq_scratch / sizeof hq_scratch[0]),
    .views = hq_views,
    .n_views = (int)(sizeof hq_views / sizeof hq_views[0]),
};

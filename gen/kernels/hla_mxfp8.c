/* kernels/hla_mxfp8.c — recipe nvfp4's HLA quantisers of x^ (abc_x, forward, RTN) and g^ (hla_g,
 * backward, SR or RTN) on sm_120a: templates/hla_mxfp8.cu, twin nvfp4_hla_quant with MXFP8
 * (templates/nvfp4_ref.c). Planned where kd_block_gpu(p); the hla family keeps every other plan.
 *
 * Layout (templates/nvfp4_plan.h, the CPU twin's): cols rows of k_pad E4M3 codes, then cols rows
 * of k_pad / 32 E8M0 scales, k_pad = hla.gemm.k_pad = K rounded up to 32 (the planner pads K to
 * the MXFP8 block, not to the g_w GEMM's K tile: templates/gemm_mxfp8.cu zero-fills its last K
 * tile). g^: O rows into Q_HG, its scales at S_HG (a view past the codes); x^: I rows into the
 * saved buffer, its scales at S_X (a view past the codes): the saved buffer is the CPU backend's
 * byte for byte, and the g_w GEMM reads it in place (Q_HX is the saved buffer).
 *
 * Its roles, its steps, HOT_ROWS and the last arguments (seed, tag, step) are hla.c's
 * (hla_common.h); its steps run hla's CPU step functions (which take recipe nvfp4):
 *   @hot-cpu-steps hla
 */
#include <stdio.h>

#include "hla_common.h"

#define MX_THREADS 256 /* the template's HOT_MXTHREADS */

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int mx_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  return kd_block_gpu(p) && (r == HOT_K_ABC_X ? p->abc.enabled : p->hla.enabled);
}

/* One grid for both phases, the larger of phase 0's (one thread per token block and column) and
 * phase 1's (one per column and 32 values of K); each phase's surplus threads return at once. */
static int mx_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  const int64_t cols = r == HOT_K_ABC_X ? p->I : p->O;
  const int64_t t0 = p->hla.blocks * cols, t1 = cols * (p->hla.gemm.k_pad / 32);
  g->grid_x = cdiv(t0 > t1 ? t0 : t1, MX_THREADS);
  g->grid_y = 1;
  g->block = MX_THREADS;
  return 0;
}

/* The mode and rounding, and the basis (p, r, selection) the rows follow from. */
static int mx_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const char *what = r == HOT_K_ABC_X ? "x" : p->hla.g.round == HOT_ROUND_SR ? "g_sr" : "g_rtn";
  return snprintf(out, n, "hot_hla_mxfp8_%s_p%d_r%d_%s", what, p->hla.block, p->hla.rank,
                  plan_selection_name(p->hla.selection));
}

static void mx_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const int g = r == HOT_K_HLA_G;
  kd_param(o, "HOT_MODE", "%d", g); /* 0: x^, 1: g^ */
  kd_param(o, "HOT_ROUND", "%d", g && p->hla.g.round == HOT_ROUND_SR);
  kd_param(o, "HOT_P", "%d", p->hla.block);
  kd_param(o, "HOT_R", "%d", p->hla.rank);
  kd_hla_rows_param(p, o);
}

/* x^ (abc_x): x (T x I) into the saved buffer; g^ (hla_g): g_y (T x O) into Q_HG. Phase 0: the
 * projection into the work buffer (MATH) and the non-finite flag (BAD); phase 1: codes and E8M0
 * scales. k_pad must be K rounded up to 32 (the template's layout). */
static int mx_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                   hot_argv *v) {
  const int g = r == HOT_K_HLA_G;
  if ((phase != 0 && phase != 1) || p->hla.gemm.k_pad != (p->hla.k + 31) / 32 * 32) return -1;
  kd_buf(v, in, g ? HOT_LB_GY : HOT_LB_X);
  kd_i32(v, g ? p->O : p->I); /* cols */
  kd_i64(v, p->L);
  kd_i64(v, p->B);
  kd_i32(v, p->hla.layout == HOT_LAYOUT_FLAT);
  kd_i32(v, p->hla.gemm.k_pad);
  kd_i32(v, phase);
  kd_buf(v, in, HOT_LB_MATH); /* work */
  kd_buf(v, in, HOT_LB_BAD);
  kd_buf(v, in, g ? HOT_LB_Q_HG : HOT_LB_SAVED);
  kd_buf(v, in, g ? HOT_LB_S_HG : HOT_LB_S_X);
  kd_hla_rng_args(p, r, in, v);
  return v->bad ? -1 : 0;
}

/* Bytes of the work buffer for `cols` columns: every token block's FWHT (segments x seg_len). */
static int64_t mx_work(const hot_layer_plan *p, int64_t cols) {
  return p->hla.segments * p->hla.seg_len * cols * 4;
}

/* Phase 0 reads the source and writes the work buffer; phase 1 reads the r selected rows of it
 * and writes the codes and scales. */
static int mx_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                   hot_kernel_cost *c) {
  (void)gran_row;
  const int g = r == HOT_K_HLA_G;
  const int64_t cols = g ? p->O : p->I;
  if (phase == 0) {
    c->bytes_read = plan_buffer_bytes(p, g ? HOT_BUF_GY : HOT_BUF_X);
    c->bytes_written = mx_work(p, cols);
  } else if (phase == 1) {
    c->bytes_read = p->hla.k * cols * 4;
    c->bytes_written = plan_buffer_bytes(p, g ? HOT_BUF_Q_HG : HOT_BUF_SAVED_CODES);
  } else {
    return -1;
  }
  return 0;
}

/* Scratch: codes + scales of g^ (backward), the work buffer (save: I columns; backward: O), the
 * amax words (the non-finite flag is one of them). */
static int64_t mx_q_hg(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_Q_HG); }
static int64_t mx_math(const hot_layer_plan *p) {
  const int64_t x = p->abc.enabled ? mx_work(p, p->I) : 0, g = mx_work(p, p->O);
  return x > g ? x : g;
}
static const hot_scratch mx_scratch[] = {
    {HOT_LB_Q_HG, "q_hg", mx_q_hg, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_MATH, "work", mx_math, 256,
     HOT_CALL_BIT(HOT_CALL_SAVE) | HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_AMAX, "amax", kd_amax_bytes, 256, HOT_CALLS_ALL, HOT_CALLS_ALL},
};
static int64_t mx_s_hg(const hot_layer_plan *p, int ps) {
  (void)ps;
  return p->O * p->hla.gemm.k_pad;
}
static int64_t mx_s_x(const hot_layer_plan *p, int ps) {
  (void)ps;
  return p->abc.enabled ? p->I * p->hla.gemm.k_pad : -1;
}
static int64_t mx_in_place(const hot_layer_plan *p, int ps) {
  (void)ps;
  return p->abc.enabled ? 0 : -1;
}
static int64_t mx_bad(const hot_layer_plan *p, int ps) {
  (void)p;
  (void)ps;
  return 4 * HOT_AMAX_BAD;
}
static const hot_view mx_views[] = {
    {HOT_LB_S_HG, HOT_LB_Q_HG, mx_s_hg},
    {HOT_LB_S_X, HOT_LB_SAVED, mx_s_x},
    {HOT_LB_Q_HX, HOT_LB_SAVED, mx_in_place},
    {HOT_LB_BAD, HOT_LB_AMAX, mx_bad},
};


const hot_kernel_desc kd_hla_mxfp8 = {
    .family = "hla_mxfp8",
    .roles = 1u << HOT_K_ABC_X | 1u << HOT_K_HLA_G,
    .templ = "templates/hla_mxfp8.cu",
    .planned = mx_planned,
    .geom = mx_geom,
    .one_block_phase = -1,
    .name = mx_name,
    .params = mx_params,
    .sig = "src,cols,L,B,flat,k_pad,phase,work,bad,codes,scales,seed,tag,step",
    .args = mx_args,
    .cost = mx_cost,
    .output = kd_no_output,
    .steps = kd_hla_steps,
    .n_steps = KD_HLA_N_STEPS,
    .scratch = mx_scratch,
    .n_scratch = (int)(sizeof mx_scratch / sizeof mx_scratch[0]),
    .views = mx_views,
    .n_views = (int)(sizeof mx_views / sizeof mx_views[0]),
};

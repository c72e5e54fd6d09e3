/* kernels/hla.c — the HLA projections of x^ (abc_x, forward, ABC) and g^ (hla_g, backward):
 * templates/hla_project.cu, twin templates/hla_project_ref.c (ref_hla_quant_x / _g).
 *
 * Roles (values are ABI: appended only; docs/adding.md):
 *   @hot-role HOT_K_ABC_X 0 abc_x: forward: x -> HLA projection -> q_x^ (RTN int8) + s_x^
 *   @hot-role HOT_K_HLA_G 3 hla_g: backward: g_y -> HLA projection -> q_g^ (SR int8) + s_g^
 */
#include <stdio.h>
#include <stdlib.h>

#include "buf.h"
#include "hot_math.cuh" /* HOT_TENSOR_*: the Philox tags */
#include "hla_common.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Columns per block (the template's HLA_COLS, handed over as HOT_COLS and checked there): the
 * p x columns fp32 tile stays within 32 KiB. */
static int64_t hla_cols(int p) { return p <= 32 ? 256 : 8192 / p; }

static int hla_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  if (kd_block_gpu(p)) return 0; /* recipe nvfp4 on sm_120a: hla_mxfp8.c */
  return r == HOT_K_ABC_X ? p->abc.enabled : p->hla.enabled;
}

/* One token block x HOT_COLS columns of x (abc_x) or g_y (hla_g) per block. */
static int hla_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  g->grid_x = p->hla.blocks;
  g->grid_y = cdiv(r == HOT_K_ABC_X ? p->I : p->O, hla_cols(p->hla.block));
  g->block = 256;
  return 0;
}

static int hla_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const char *dt = plan_dtype_name(p->spec->dtype), *sel = plan_selection_name(p->hla.selection);
  if (r == HOT_K_ABC_X)
    return snprintf(out, n, "hot_hla_x_%s_p%d_r%d_%s_k%d", dt, p->hla.block, p->hla.rank, sel,
                    p->hla.x.bits);
  /* g^: the bits are compiled in (HOT_BITS): part of the name */
  return snprintf(out, n, "hot_hla_g_%s_p%d_r%d_%s_k%d%s", dt, p->hla.block, p->hla.rank, sel,
                  p->hla.g.bits, p->hla.g.round == HOT_ROUND_RTN ? "_rtn" : "");
}

static void hla_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const hot_quant *q = r == HOT_K_HLA_G ? &p->hla.g : &p->hla.x;
  kd_param(o, "HOT_MODE", "%d", r == HOT_K_HLA_G); /* 0: x^, 1: g^ */
  kd_param(o, "HOT_DTYPE", "%d", (int)p->spec->dtype);
  kd_param(o, "HOT_P", "%d", p->hla.block);
  kd_param(o, "HOT_R", "%d", p->hla.rank);
  kd_param(o, "HOT_BITS", "%d", q->bits);
  kd_param(o, "HOT_ROUND", "%d", q->round == HOT_ROUND_SR); /* 0: RTN, 1: SR */
  kd_hla_rows_param(p, o);
  kd_param(o, "HOT_COLS", "%lld", (long long)hla_cols(p->hla.block));
}

/* x^ (abc_x, RTN): x, T x I, codes into the saved buffer, I rows of hla.k int8 (unpadded);
 * g^ (hla_g, SR with tag layer_id*16 + 2, or RTN): g_y, T x O, codes O x hla.gemm.k_pad int8
 * (zero tails written by phase 1). `groups` scales. Phases: 0 amax (+
 * math_out K x cols floats for SAWB of x^), 1 quantize (scale_in: SAWB's scales). */
static int hla_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                    hot_argv *v) {
  const int g = r == HOT_K_HLA_G;
  const int sawb = !g && plan_kernel_index(p, HOT_K_SAWB_X) >= 0;
  const int64_t cols = g ? p->O : p->I;
  kd_buf(v, in, g ? HOT_LB_GY : HOT_LB_X);
  kd_i32(v, p->T);
  kd_i32(v, cols);
  kd_i32(v, cols); /* ld_src */
  kd_i32(v, p->L);
  kd_i32(v, p->hla.layout == HOT_LAYOUT_FLAT ? 1 : 0);
  kd_i64(v, p->hla.seg_len);
  kd_i64(v, p->hla.segments);
  /* g^: the GEMM's layout (k_pad rows, groups at group_k_pad); x^: the saved layout (K rows,
   * nothing padded: plan_saved_scale_offset), i.e. the same kernel with k_pad = K per group */
  const int64_t k_pad = g ? p->hla.gemm.k_pad : p->hla.k;
  kd_i32(v, p->hla.k); /* k_real */
  kd_i32(v, k_pad);
  kd_i32(v, p->hla.group_k);
  kd_i32(v, g ? p->hla.group_k_pad : p->hla.group_k);
  kd_i32(v, p->hla.groups);
  kd_i32(v, (g ? p->hla.g.gran : p->hla.x.gran) == HOT_GRAN_SAMPLE); /* per_sample */
  kd_buf(v, in, g ? HOT_LB_Q_HG : HOT_LB_SAVED);
  kd_i32(v, k_pad); /* ld_codes */
  kd_buf(v, in, g ? HOT_LB_S_HG : HOT_LB_S_X);
  kd_buf(v, in, g ? HOT_LB_AMAX_HG : HOT_LB_AMAX_X);
  kd_buf_if(v, in, sawb && phase == 1, HOT_LB_S_SAWB_X); /* scale_in */
  kd_buf_if(v, in, sawb && phase == 0, HOT_LB_MATH);     /* math_out */
  kd_i32(v, phase);
  kd_hla_rng_args(p, r, in, v);
  return v->bad ? -1 : 0;
}

/* Phase 0 = amax (+ the fp32 math tensor K x cols when the rule is SAWB), phase 1 = quantize
 * into cols code rows (k_pad bytes for g^, K for the saved x^) and the scales. */
static int hla_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                    hot_kernel_cost *c) {
  (void)gran_row;
  const int g = r == HOT_K_HLA_G;
  const int64_t cols = g ? p->O : p->I;
  const hot_quant *q = g ? &p->hla.g : &p->hla.x;
  c->bytes_read = plan_buffer_bytes(p, g ? HOT_BUF_GY : HOT_BUF_X);
  if (phase == 0)
    c->bytes_written = q->rule == HOT_RULE_SAWB ? p->hla.k * cols * 4 : 0;
  else if (phase == 1)
    c->bytes_written = plan_buffer_bytes(p, g ? HOT_BUF_Q_HG : HOT_BUF_SAVED_CODES) + 4 * p->hla.groups;
  else
    return -1;
  return 0;
}

/* Scratch: the codes and scales of g^ (backward) and the amax words; views: the amax words of
 * g^ and x^, s_x^ in the saved buffer, q_x^ in place (unless abc_unpack gives it a piece). */
static int64_t hla_q_hg(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_Q_HG); }
static int64_t hla_s_hg(const hot_layer_plan *p) { return p->hla.groups * 4; }
static const hot_scratch hla_scratch[] = {
    {HOT_LB_Q_HG, "q_hg", hla_q_hg, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_S_HG, "s_hg", hla_s_hg, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_AMAX, "amax", kd_amax_bytes, 256, HOT_CALLS_ALL, HOT_CALLS_ALL},
};
static int64_t hla_amax_g(const hot_layer_plan *p, int ps) {
  (void)ps;
  return kd_amax_hla(p, 1);
}
static int64_t hla_amax_x(const hot_layer_plan *p, int ps) {
  (void)ps;
  return kd_amax_hla(p, 0);
}
static int64_t hla_s_x(const hot_layer_plan *p, int ps) {
  (void)ps;
  return p->abc.enabled ? plan_saved_scale_offset(p) : -1;
}
static int64_t hla_in_place(const hot_layer_plan *p, int ps) {
  (void)p;
  (void)ps;
  return 0;
}
static const hot_view hla_views[] = {
    {HOT_LB_AMAX_HG, HOT_LB_AMAX, hla_amax_g},
    {HOT_LB_AMAX_X, HOT_LB_AMAX, hla_amax_x},
    {HOT_LB_S_X, HOT_LB_SAVED, hla_s_x},
    {HOT_LB_Q_HX, HOT_LB_SAVED, hla_in_place},
};

const hot_step kd_hla_steps[KD_HLA_N_STEPS] = {
    {HOT_CALL_SAVE, 10, HOT_K_ABC_X, 0, HOT_WHEN_ALWAYS, 0},
    {HOT_CALL_SAVE, 13, HOT_K_ABC_X, 1, HOT_WHEN_ALWAYS, 0},
    {HOT_CALL_BACKWARD, 40, HOT_K_HLA_G, 0, HOT_WHEN_ALWAYS, HOT_OUT_GW},
    {HOT_CALL_BACKWARD, 41, HOT_K_HLA_G, 1, HOT_WHEN_ALWAYS, HOT_OUT_GW},
};

void kd_hla_rows_param(const hot_layer_plan *p, hot_params *o) {
  hot_buf b = {0}; /* HOT_ROWS: the rank's rows, "r0,r1,..." */
  for (int i = 0; i < p->hla.rank; ++i) buf_printf(&b, "%s%d", i ? "," : "", p->hla.rows[i]);
  char *rows = buf_take(&b);
  if (rows) kd_param(o, "HOT_ROWS", "%s", rows);
  else kd_param_oom(o);
  free(rows);
}

void kd_hla_rng_args(const hot_layer_plan *p, hot_kernel_role r, const hot_launch_in *in,
                     hot_argv *v) {
  const int g = r == HOT_K_HLA_G;
  kd_u64(v, in->seed);
  kd_u32(v, (uint32_t)((unsigned)p->layer_id * 16u + (g ? HOT_TENSOR_HLA_G : 0u))); /* x^: RTN */
  kd_step(v, in);
}

const hot_kernel_desc kd_hla = {
    .family = "hla",
    .roles = 1u << HOT_K_ABC_X | 1u << HOT_K_HLA_G,
    .templ = "templates/hla_project.cu",
    .planned = hla_planned,
    .geom = hla_geom,
    .one_block_phase = -1,
    .name = hla_name,
    .params = hla_params,
    .sig = "src,T,cols,ld_src,L,layout,seg_len,segments,k_real,k_pad,group_k,group_k_pad,groups,"
           "per_sample,codes,ld_codes,scale,amax_bits,scale_in,math_out,phase,seed,tag,step",
    .args = hla_args,
    .cost = hla_cost,
    .output = kd_no_output,
    .steps = kd_hla_steps,
    .n_steps = KD_HLA_N_STEPS,
    .scratch = hla_scratch,
    .n_scratch = (int)(sizeof hla_scratch / sizeof hla_scratch[0]),
    .views = hla_views,
    .n_views = (int)(sizeof hla_views / sizeof hla_views[0]),
};

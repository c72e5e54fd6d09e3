/* kernels/lqs.c — calibration: both errors of CONTRACT.md section 6 for scale = "auto":
 * templates/lqs.cu, twin templates/lqs_ref.c.
 *
 * Roles (values are ABI: appended only; docs/adding.md):
 *   @hot-role HOT_K_LQS 7 lqs: calibration: both errors of CONTRACT.md section 6
 */
#include <stdio.h>

#include "hot_math.cuh" /* HOT_TENSOR_LQS */
#include "kernel_desc.h"

static int lqs_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  (void)r;
  return p->hq.enabled && p->hq.g.gran == HOT_GRAN_AUTO;
}

/* One warp per row of g_y, 8 rows per block, every phase. */
static int lqs_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  (void)r;
  g->grid_x = (p->T + 7) / 8;
  g->grid_y = 1;
  g->block = 256;
  return 0;
}

static int lqs_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  (void)r;
  return snprintf(out, n, "hot_lqs_%s_k%d%s", plan_dtype_name(p->spec->dtype), p->hq.g.bits,
                  p->hq.g.round == HOT_ROUND_RTN ? "_rtn" : "");
}

/* the errors of g' as quantized: its bits and rounding */
static void lqs_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  (void)r;
  kd_param(o, "HOT_DTYPE", "%d", (int)p->spec->dtype);
  kd_param(o, "HOT_BITS", "%d", p->hq.g.bits);
  kd_param(o, "HOT_ROUND", "%d", p->hq.g.round == HOT_ROUND_SR);
}

/* On the raw g_y (T x O): phase 0 row scales + per-sample amax (groups of L rows), 1 chunk
 * partials of both squared errors, 2 result[0..1] and *choice, in the layer's LQS scratch. */
static int lqs_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                    hot_argv *v) {
  (void)r;
  if (!in->buf[HOT_LB_LQS_RS] || !in->buf[HOT_LB_PARTIALS] || !in->buf[HOT_LB_LQS_RES] ||
      !in->buf[HOT_LB_LQS_CHOICE])
    return -1; /* no LQS scratch */
  kd_buf(v, in, HOT_LB_GY);
  kd_i32(v, p->T);
  kd_i32(v, p->O);
  kd_i32(v, p->O); /* ld_src */
  kd_buf(v, in, HOT_LB_AMAX_LQS);
  kd_i32(v, p->L); /* group_rows */
  kd_buf(v, in, HOT_LB_LQS_RS);
  kd_buf(v, in, HOT_LB_PARTIALS);
  kd_buf(v, in, HOT_LB_LQS_RES);
  kd_buf(v, in, HOT_LB_LQS_CHOICE);
  kd_i32(v, phase);
  kd_u64(v, in->seed);
  kd_u32(v, (uint32_t)((unsigned)p->layer_id * 16u + HOT_TENSOR_LQS));
  kd_step(v, in);
  return v->bad ? -1 : 0;
}

/* 0: row amax (+ T scales); 1: both squared errors per chunk; 2: combine. */
static int lqs_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                    hot_kernel_cost *c) {
  (void)r;
  (void)gran_row;
  const int64_t parts = 2 * ((p->T * p->O + 1023) / 1024) * 8;
  if (phase == 0) c->bytes_read = plan_buffer_bytes(p, HOT_BUF_GY), c->bytes_written = p->T * 4;
  else if (phase == 1) c->bytes_read = plan_buffer_bytes(p, HOT_BUF_GY) + p->T * 4,
                       c->bytes_written = parts;
  else if (phase == 2) c->bytes_read = parts, c->bytes_written = 24;
  else return -1;
  return 0;
}

/* Scratch: T row scales, both errors (2 doubles), the choice (int), the chunk partials of the
 * T x O errors, the amax words (the B per-sample words of g'). */
static int64_t lqs_rs(const hot_layer_plan *p) { return p->T * 4; }
static int64_t lqs_res(const hot_layer_plan *p) {
  (void)p;
  return 16;
}
static int64_t lqs_choice(const hot_layer_plan *p) {
  (void)p;
  return 4;
}
static int64_t lqs_partials(const hot_layer_plan *p) {
  const int64_t n = p->T * p->O; /* T, O < 2^31 */
  return 2 * ((n + 1023) / 1024) * 8;
}
static const hot_scratch lqs_scratch[] = {
    {HOT_LB_AMAX, "amax", kd_amax_bytes, 256, HOT_CALLS_ALL, HOT_CALLS_ALL},
    {HOT_LB_PARTIALS, "partials", lqs_partials, 256, HOT_CALL_BIT(HOT_CALL_CALIBRATE), 0},
    {HOT_LB_LQS_RS, "lqs_rs", lqs_rs, 256, HOT_CALL_BIT(HOT_CALL_CALIBRATE), 0},
    {HOT_LB_LQS_RES, "lqs_res", lqs_res, 256, HOT_CALL_BIT(HOT_CALL_CALIBRATE), 0},
    {HOT_LB_LQS_CHOICE, "lqs_choice", lqs_choice, 256, HOT_CALL_BIT(HOT_CALL_CALIBRATE), 0},
};
static int64_t lqs_amax(const hot_layer_plan *p, int ps) {
  (void)p;
  (void)ps;
  return 4 * HOT_AMAX_WORDS;
}
static const hot_view lqs_views[] = {{HOT_LB_AMAX_LQS, HOT_LB_AMAX, lqs_amax}};

static const hot_step lqs_steps[] = {
    {HOT_CALL_CALIBRATE, 70, HOT_K_LQS, 0, HOT_WHEN_ALWAYS, 0},
    {HOT_CALL_CALIBRATE, 71, HOT_K_LQS, 1, HOT_WHEN_ALWAYS, 0},
    {HOT_CALL_CALIBRATE, 72, HOT_K_LQS, 2, HOT_WHEN_ALWAYS, 0},
};

const hot_kernel_desc kd_lqs = {
    .family = "lqs",
    .roles = 1u << HOT_K_LQS,
    .templ = "templates/lqs.cu",
    .planned = lqs_planned,
    .geom = lqs_geom,
    .one_block_phase = -1,
    .name = lqs_name,
    .params = lqs_params,
    .sig = "g_y,T,O,ld_src,amax_bits,group_rows,row_scale,partials,result,choice,phase,seed,tag,"
           "step",
    .args = lqs_args,
    .cost = lqs_cost,
    .output = kd_no_output,
    .steps = lqs_steps,
    .n_steps = 3,
    .scratch = lqs_scratch,
    .n_scratch = (int)(sizeof lqs_scratch / sizeof lqs_scratch[0]),
    .views = lqs_views,
    .n_views = 1,
};

/* kernels/bias.c — g_b = column sums of g_y (bias): templates/bias.cu, twin templates/bias_ref.c.
 *
 * Roles (values are ABI: appended only; docs/adding.md):
 *   @hot-role HOT_K_BIAS 6 bias: g_b = column sums of g_y
 */
#include <stdio.h>

#include "kernel_desc.h"

static int bias_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)p;
  (void)r;
  return s->bias;
}

/* HOT_BIAS_COLS columns per block (one 32-byte sector of a row: 8 f32 or 16 bf16/f16), 64 slots
 * of that many threads splitting the token chunks (bias.cu). */
static int bias_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  (void)r;
  const int cols = p->spec->dtype == HOT_DT_F32 ? 8 : 16;
  g->grid_x = (p->O + cols - 1) / cols;
  g->grid_y = 1;
  g->block = 64u * (unsigned)cols;
  return 0;
}

static int bias_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  (void)r;
  return snprintf(out, n, "hot_bias_%s", plan_dtype_name(p->spec->dtype));
}

static void bias_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  (void)r;
  kd_param(o, "HOT_DTYPE", "%d", (int)p->spec->dtype);
}

static int bias_args(const hot_layer_plan *p, hot_kernel_role r, int phase,
                     const hot_launch_in *in, hot_argv *v) {
  (void)r;
  (void)phase;
  kd_buf(v, in, HOT_LB_GY);
  kd_buf(v, in, HOT_LB_GB);
  kd_i32(v, p->T);
  kd_i32(v, p->O);
  return v->bad ? -1 : 0;
}

static int bias_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                     hot_kernel_cost *c) {
  (void)r;
  (void)gran_row;
  if (phase != 0) return -1;
  c->bytes_read = plan_buffer_bytes(p, HOT_BUF_GY);
  c->bytes_written = p->O * 4;
  return 0;
}

static const char *bias_output(hot_kernel_role r) {
  (void)r;
  return "g_b";
}

static const hot_step bias_steps[] = {
    {HOT_CALL_BACKWARD, 60, HOT_K_BIAS, 0, HOT_WHEN_ALWAYS, HOT_OUT_GB}};

const hot_kernel_desc kd_bias = {
    .family = "bias",
    .roles = 1u << HOT_K_BIAS,
    .templ = "templates/bias.cu",
    .planned = bias_planned,
    .geom = bias_geom,
    .one_block_phase = -1,
    .name = bias_name,
    .params = bias_params,
    .sig = "gy,gb,T,O",
    .args = bias_args,
    .cost = bias_cost,
    .output = bias_output,
    .steps = bias_steps,
    .n_steps = 1,
};

/* kernels/sawb.c — the SAWB scales of w' (sawb_w, hq.w.rule = sawb) and x^ (sawb_x,
 * hla.x.rule = sawb): templates/sawb.cu, twin templates/quant_ref.c (group_scale).
 *
 * Roles (values are ABI: appended only; docs/adding.md):
 *   @hot-role HOT_K_SAWB_W 8 sawb_w: SAWB scale of w' (when hq.w.rule = sawb) from its fp32 tensor
 *   @hot-role HOT_K_SAWB_X 9 sawb_x: SAWB scale of x^ (when hla.x.rule = sawb)
 */
#include <stdio.h>

#include "kernel_desc.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int sawb_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  if (r == HOT_K_SAWB_W) return p->hq.enabled && p->hq.w.rule == HOT_RULE_SAWB;
  return p->abc.enabled && p->hla.x.rule == HOT_RULE_SAWB;
}

/* Phase 0: one warp per 1024-element chunk, 8 warps per block; phase 1 on one block. */
static int sawb_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  g->grid_x = cdiv(cdiv(plan_sawb_elems(p, r), 1024), 8);
  g->grid_y = 1;
  g->block = 256;
  return 0;
}

static int sawb_bits(const hot_layer_plan *p, hot_kernel_role r) {
  return r == HOT_K_SAWB_W ? p->hq.w.bits : p->hla.x.bits;
}

static int sawb_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  return snprintf(out, n, "hot_sawb_k%d", sawb_bits(p, r));
}

static void sawb_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  kd_param(o, "HOT_BITS", "%d", sawb_bits(p, r));
}

/* Phase 0: per-chunk partials of S1 = sum |v|, S2 = sum v*v over the math tensor; phase 1: the
 * scales from them and the amax words (x^ per sample: one per group). */
static int sawb_args(const hot_layer_plan *p, hot_kernel_role r, int phase,
                     const hot_launch_in *in, hot_argv *v) {
  const int64_t total = plan_sawb_elems(p, r), g = plan_sawb_groups(p, r);
  if (total < 1 || g < 1 || total % g != 0) return -1;
  const int w = r == HOT_K_SAWB_W;
  kd_buf(v, in, HOT_LB_MATH);
  kd_i64(v, total / g); /* elements of one group */
  kd_i32(v, g);
  kd_buf(v, in, HOT_LB_PARTIALS);
  kd_buf(v, in, w ? HOT_LB_AMAX_W : HOT_LB_AMAX_X);
  kd_buf(v, in, w ? HOT_LB_S_SAWB_W : HOT_LB_S_SAWB_X);
  kd_i32(v, phase);
  return v->bad ? -1 : 0;
}

static int sawb_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                     hot_kernel_cost *c) {
  (void)gran_row;
  const int64_t n = plan_sawb_elems(p, r);
  const int64_t parts = 2 * ((n + 1023) / 1024) * 8;
  if (phase == 0) c->bytes_read = n * 4, c->bytes_written = parts;
  else if (phase == 1) c->bytes_read = parts, c->bytes_written = 4;
  else return -1;
  return 0;
}

/* Scratch: the scales (w' first, then x^'s one per group), the fp32 math tensor of the larger
 * planned role, the chunk partials (doubles: 2 per 1024 elements; x^ per sample: per group). */
static int planned(const hot_layer_plan *p, hot_kernel_role r) { return plan_kernel_index(p, r) >= 0; }
static int64_t sawb_scales(const hot_layer_plan *p) { return (1 + p->hla.groups) * 4; }
static int64_t sawb_math(const hot_layer_plan *p) {
  const int64_t nw = planned(p, HOT_K_SAWB_W) ? plan_sawb_elems(p, HOT_K_SAWB_W) : 0;
  const int64_t nx = planned(p, HOT_K_SAWB_X) ? plan_sawb_elems(p, HOT_K_SAWB_X) : 0;
  if (nw < 0 || nx < 0 || (nw > nx ? nw : nx) > INT64_MAX / 4) return -1;
  return 4 * (nw > nx ? nw : nx);
}
static int64_t sawb_partials(const hot_layer_plan *p) {
  int64_t r = 0;
  for (int w = 0; w < 2; ++w) {
    const hot_kernel_role role = w ? HOT_K_SAWB_W : HOT_K_SAWB_X;
    if (!planned(p, role)) continue;
    const int64_t g = plan_sawb_groups(p, role), n = plan_sawb_elems(p, role);
    if (g < 1 || n < 0) return -1;
    const int64_t b = g * 2 * cdiv(n / g, 1024) * 8;
    if (b > r) r = b;
  }
  return r;
}
static const hot_scratch sawb_scratch[] = {
    {HOT_LB_S_SAWB_W, "s_sawb", sawb_scales, 256, HOT_CALL_BIT(HOT_CALL_SAVE) | HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_MATH, "math", sawb_math, 256, HOT_CALL_BIT(HOT_CALL_SAVE) | HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
    {HOT_LB_PARTIALS, "partials", sawb_partials, 256, HOT_CALL_BIT(HOT_CALL_SAVE) | HOT_CALL_BIT(HOT_CALL_BACKWARD), 0},
};
static int64_t sawb_x_scale(const hot_layer_plan *p, int ps) {
  (void)p;
  (void)ps;
  return 4;
}
static const hot_view sawb_views[] = {{HOT_LB_S_SAWB_X, HOT_LB_S_SAWB_W, sawb_x_scale}};

static const hot_step sawb_steps[] = {
    {HOT_CALL_SAVE, 11, HOT_K_SAWB_X, 0, HOT_WHEN_PLANNED, 0},
    {HOT_CALL_SAVE, 12, HOT_K_SAWB_X, 1, HOT_WHEN_PLANNED, 0},
    {HOT_CALL_BACKWARD, 31, HOT_K_SAWB_W, 0, HOT_WHEN_PLANNED, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 32, HOT_K_SAWB_W, 1, HOT_WHEN_PLANNED, HOT_OUT_GX},
};

const hot_kernel_desc kd_sawb = {
    .family = "sawb",
    .roles = 1u << HOT_K_SAWB_W | 1u << HOT_K_SAWB_X,
    .templ = "templates/sawb.cu",
    .planned = sawb_planned,
    .geom = sawb_geom,
    .one_block_phase = 1,
    .name = sawb_name,
    .params = sawb_params,
    .sig = "v,n,groups,partials,amax_bits,scale,phase",
    .args = sawb_args,
    .cost = sawb_cost,
    .output = kd_no_output,
    .steps = sawb_steps,
    .n_steps = (int)(sizeof sawb_steps / sizeof sawb_steps[0]),
    .scratch = sawb_scratch,
    .n_scratch = (int)(sizeof sawb_scratch / sizeof sawb_scratch[0]),
    .views = sawb_views,
    .n_views = 1,
};

/* kernels/gemm_tma.c — the GEMM roles (gemm_gx, gemm_gw) on the TMA path (the GEMM-path table's
 * row that needs the TMA, asked for with tile_gx / tile_gw .warps_n = 2): its template
 * (templates/gemm_tma.cu), the same contract, bits and first twelve arguments as gemm_wgmma.cu (twin templates/gemm_ref.c), operands loaded by the
 * Tensor Memory Accelerator through two tensor maps passed by value, a persistent grid of
 * min(tiles, SMs) blocks (docs/gemm-tma.md).
 *
 * Its roles are gemm.c's; its steps run gemm's CPU step functions:
 *   @hot-cpu-steps gemm
 */
#include <stdio.h>

#include "gemm_common.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int tma_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  return kd_gemm_enabled(p, r) && plan_gemm_path_info(kd_gemm_plan(p, r)->path)->need_tma;
}

/* block = 128 (tile_m / 64 + 1): a producer warpgroup and the consumers; grid.x = the tile count,
 * launched as min(tiles, SMs) (persistent); smem = stages (tile_m + tile_n) 128 + 1152. */
static int tma_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *geo) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  geo->grid_x = cdiv(g->m, g->tile_m) * cdiv(g->n, g->tile_n);
  geo->grid_y = 1;
  geo->block = (unsigned)(128 * (g->tile_m / 64 + 1));
  geo->smem = g->smem;
  geo->persistent = 1;
  return 0;
}

/* The consumer warps (tile_m / 16 x 1) in the name, as for wgmma_s8. */
static int tma_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  return snprintf(out, n, "hot_gemm_%s_%dx%dx%d_w%dx1_s%d%s", plan_gemm_path_name(g->path),
                  g->tile_m, g->tile_n, g->tile_k, g->warps_m, g->stages,
                  g->segmented ? "_seg" : "");
}

static void tma_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  kd_param(o, "HOT_CODES", "%d", (int)g->codes);
  kd_param(o, "HOT_TILE_M", "%d", g->tile_m);
  kd_param(o, "HOT_TILE_N", "%d", g->tile_n);
  kd_param(o, "HOT_TILE_K", "%d", g->tile_k);
  kd_param(o, "HOT_WARPS_M", "%d", g->warps_m);
  kd_param(o, "HOT_WARPS_N", "%d", 1); /* consumer warps along N (warps_n = 2 chose the path) */
  kd_param(o, "HOT_STAGES", "%d", g->stages);
  kd_param(o, "HOT_SEGS", "%d", g->segmented);
}

/* The twelve arguments of gemm_wgmma.cu, then the maps of A and B by value. */
static int tma_args(const hot_layer_plan *p, hot_kernel_role r, int phase, const hot_launch_in *in,
                    hot_argv *v) {
  (void)phase;
  if (kd_gemm_args(p, r, in, v)) return -1;
  kd_map(v, in, 0);
  kd_map(v, in, 1);
  return v->bad ? -1 : 0;
}

/* A: M rows of Kpad codes, box {128, tile_m}; B: N rows, box {128, tile_n}; the row stride is
 * Kpad bytes (a multiple of 128). Kpad = 0 issues no load but needs a valid map: {16, 1}. */
static int tma_maps(const hot_layer_plan *p, hot_kernel_role r, const hot_launch_in *in,
                    hot_tmap_req out[2]) {
  const int gx = r == HOT_K_GEMM_GX;
  const hot_gemm_plan *g = kd_gemm_plan(p, r);
  const uint64_t k = g->k_pad > 0 ? (uint64_t)g->k_pad : 16u;
  out[0].what = gx ? "A (q_g')" : "A (q_g^)";
  out[0].slot = gx ? HOT_LB_Q_G : HOT_LB_Q_HG;
  out[0].addr = in->buf[out[0].slot];
  out[0].dims[0] = k;
  out[0].dims[1] = g->k_pad > 0 ? (uint64_t)g->m : 1u;
  out[0].stride = k;
  out[0].box[0] = 128;
  out[0].box[1] = (uint32_t)g->tile_m;
  out[1].what = gx ? "B (q_w')" : "B (q_x^)";
  out[1].slot = gx ? HOT_LB_Q_W : HOT_LB_Q_HX;
  out[1].addr = in->buf[out[1].slot];
  out[1].dims[0] = k;
  out[1].dims[1] = g->k_pad > 0 ? (uint64_t)g->n : 1u;
  out[1].stride = k;
  out[1].box[0] = 128;
  out[1].box[1] = (uint32_t)g->tile_n;
  return 2;
}

static const hot_step tma_steps[] = {
    {HOT_CALL_BACKWARD, 50, HOT_K_GEMM_GX, 0, HOT_WHEN_ALWAYS, HOT_OUT_GX},
    {HOT_CALL_BACKWARD, 51, HOT_K_GEMM_GW, 0, HOT_WHEN_ALWAYS, HOT_OUT_GW},
};

const hot_kernel_desc kd_gemm_tma = {
    .family = "gemm_tma",
    .roles = 1u << HOT_K_GEMM_GX | 1u << HOT_K_GEMM_GW,
    .templ = "templates/gemm_tma.cu",
    .templ_for = kd_gemm_templ,
    .planned = tma_planned,
    .geom = tma_geom,
    .one_block_phase = -1,
    .name = tma_name,
    .params = tma_params,
    .sig = KD_GEMM_SIG ",tmap_a,tmap_b",
    .args = tma_args,
    .tmaps = tma_maps,
    .cost = kd_gemm_cost,
    .output = kd_gemm_output,
    .steps = tma_steps,
    .n_steps = 2,
};

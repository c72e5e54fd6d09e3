/* kernels/abc_unpack.c — the saved codes of ABC into the g_w GEMM's operand layout (backward):
 * templates/abc_unpack.cu, twin templates/abc_unpack_ref.c (ref_abc_unpack). Planned only where
 * the layouts differ (plan_saved_unpacked: K != k_pad); elsewhere the GEMM reads the saved
 * buffer in place.
 *
 * Roles (values are ABI: appended only; docs/adding.md):
 *   @hot-role HOT_K_ABC_UNPACK 10 abc_unpack: backward: saved codes -> the g_w GEMM's k_pad layout
 */
#include <stdio.h>

#include "kernel_desc.h"

#define UNPACK_THREADS 256 /* the template's UNPACK_THREADS */

static int unpack_planned(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role r) {
  (void)s;
  (void)r;
  return plan_saved_unpacked(p);
}

/* One thread per 16 bytes of the output (I rows of k_pad), 256 threads per block. */
static int unpack_geom(const hot_layer_plan *p, hot_kernel_role r, hot_kernel_geom *g) {
  (void)r;
  const int64_t spans = p->I * (p->hla.gemm.k_pad / 16);
  g->grid_x = (spans + UNPACK_THREADS - 1) / UNPACK_THREADS;
  g->grid_y = 1;
  g->block = UNPACK_THREADS;
  return 0;
}

static int unpack_name(const hot_layer_plan *p, hot_kernel_role r, char *out, size_t n) {
  (void)p;
  (void)r;
  return snprintf(out, n, "hot_abc_unpack");
}

static void unpack_params(const hot_layer_plan *p, hot_kernel_role r, hot_params *o) {
  (void)p;
  (void)r;
  (void)o; /* no parameters: one binary serves every layer */
}

/* src = the saved buffer (I rows of K), dst = q_hx (I rows of k_pad, 16-byte aligned). The
 * template needs k_pad and group_k_pad to be multiples of 16 (every GEMM tile_k is). */
static int unpack_args(const hot_layer_plan *p, hot_kernel_role r, int phase,
                       const hot_launch_in *in, hot_argv *v) {
  (void)r;
  (void)phase;
  if (p->hla.gemm.k_pad % 16 || p->hla.group_k_pad % 16) return -1;
  kd_buf(v, in, HOT_LB_SAVED);
  kd_i32(v, p->I);
  kd_i32(v, p->hla.k); /* k_real: the saved row stride */
  kd_i32(v, p->hla.group_k);
  kd_i32(v, p->hla.group_k_pad);
  kd_i32(v, p->hla.gemm.k_pad);
  kd_buf(v, in, HOT_LB_Q_HX);
  return v->bad ? -1 : 0;
}

static int unpack_cost(const hot_layer_plan *p, hot_kernel_role r, int phase, int gran_row,
                       hot_kernel_cost *c) {
  (void)r;
  (void)gran_row;
  if (phase != 0) return -1;
  c->bytes_read = plan_buffer_bytes(p, HOT_BUF_SAVED_CODES);
  c->bytes_written = plan_buffer_bytes(p, HOT_BUF_Q_HX);
  return 0;
}

/* Scratch (backward): the saved codes in the g_w GEMM's layout. */
static int64_t unpack_q_hx(const hot_layer_plan *p) { return plan_buffer_bytes(p, HOT_BUF_Q_HX); }
static const hot_scratch unpack_scratch[] = {{HOT_LB_Q_HX, "q_hx", unpack_q_hx, 256, HOT_CALL_BIT(HOT_CALL_BACKWARD), 0}};

static const hot_step unpack_steps[] = {
    {HOT_CALL_BACKWARD, 45, HOT_K_ABC_UNPACK, 0, HOT_WHEN_PLANNED, HOT_OUT_GW}};

const hot_kernel_desc kd_abc_unpack = {
    .family = "abc_unpack",
    .roles = 1u << HOT_K_ABC_UNPACK,
    .templ = "templates/abc_unpack.cu",
    .planned = unpack_planned,
    .geom = unpack_geom,
    .one_block_phase = -1,
    .name = unpack_name,
    .params = unpack_params,
    .sig = "src,rows,k_real,group_k,group_k_pad,k_pad,dst",
    .args = unpack_args,
    .cost = unpack_cost,
    .output = kd_no_output,
    .steps = unpack_steps,
    .n_steps = 1,
    .scratch = unpack_scratch,
    .n_scratch = 1,
};

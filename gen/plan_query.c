/* plan_query.c — questions asked of a finished plan (plan.h): the names of its enumerations,
 * the bytes of every buffer the plan shapes (the scratch a family adds is its descriptor's), the
 * sizes of the SAWB reductions, where a kernel role sits. The
 * kernel descriptors (gen/kernels/) and the runtime call these; nothing here calls back into
 * the planner or a descriptor, so the planner can call the descriptors without a cycle. Pure C:
 * no allocation, no I/O. */
#include <stdint.h>
#include <stdio.h>

#include "fields.h"
#include "plan.h"
#include "plan_arith.h"

/* ---- names ----------------------------------------------------------------------------- */

/* The spec's enumerations take their one list of names from field_list.h (fields.c). */
#define ENUM_NAME_FN(fn, type, id)                                                               \
  const char *fn(type v) { return fields_enum_name(HOT_E_##id, (int)v); }
ENUM_NAME_FN(plan_dtype_name, hot_dtype, dtype)
ENUM_NAME_FN(plan_round_name, hot_round, round)
ENUM_NAME_FN(plan_gran_name, hot_gran, gran)
ENUM_NAME_FN(plan_rule_name, hot_rule, rule)
ENUM_NAME_FN(plan_selection_name, hot_selection, selection)
ENUM_NAME_FN(plan_layout_name, hot_layout, layout)
ENUM_NAME_FN(plan_recipe_name, hot_recipe, recipe)
#undef ENUM_NAME_FN

#define NAME_FN(fn, type, ...)                                              \
  const char *fn(type v) {                                                  \
    static const char *const names[] = {__VA_ARGS__};                       \
    return ((int)v >= 0 && (size_t)v < sizeof names / sizeof names[0]) ? names[v] : "?"; \
  }
#define HOT_ROLE_NAME_(c, name) name,
NAME_FN(plan_role_name, hot_kernel_role, HOT_KERNEL_ROLES(HOT_ROLE_NAME_))
#undef HOT_ROLE_NAME_
NAME_FN(plan_buffer_name, hot_buffer, "q_g", "s_g", "q_w", "q_hg", "q_hx", "saved", "g_y", "x", "w", "g_x", "g_w", "saved_codes")
#undef NAME_FN

int64_t plan_code_bytes(hot_codes codes, int64_t k) {
  const hot_codes_info *c = plan_codes_info(codes);
  const int per = c ? c->per_byte : 1;
  return (k + per - 1) / per;
}

/* ---- buffers -------------------------------------------------------------------------- */

/* One code row of k_pad codes; a block format's rows are followed by their scale bytes, one per
 * block (CONTRACT.md 20: NVFP4 E4M3, MXFP8 E8M0), so the row's share is counted with it. */
static int64_t code_row_bytes(hot_codes codes, int64_t k_pad) {
  const hot_codes_info *c = plan_codes_info(codes);
  return k_pad / (c ? c->per_byte : 1) + (c && c->block ? k_pad / c->block : 0);
}
static int64_t dtype_size(hot_dtype d) { return d == HOT_DT_F32 ? 4 : 2; }

int64_t plan_sawb_elems(const hot_layer_plan *pl, hot_kernel_role role) {
  if (!pl) return 0;
  if (role == HOT_K_SAWB_W) return mul3(pl->hq.o_pad, pl->I, 1);
  if (role == HOT_K_SAWB_X) return mul3(pl->hla.k, pl->I, 1);
  return 0;
}

int64_t plan_sawb_groups(const hot_layer_plan *pl, hot_kernel_role role) {
  if (!pl) return 0;
  if (role == HOT_K_SAWB_X) return pl->hla.x.gran == HOT_GRAN_SAMPLE ? pl->hla.groups : 1;
  return role == HOT_K_SAWB_W ? 1 : 0;
}

/* HOT_BUF_SAVED: x in fp32, or under ABC the saved codes (I rows of hla.k int8: K is not
 * padded), 16-byte alignment, then s_x^ (one fp32 scale per scale group); -1 on overflow. */
static int64_t saved_bytes(const hot_layer_plan *pl) {
  if (!pl->abc.enabled) return mul3(pl->T, pl->I, 4);
  if (pl->fmt == HOT_FMT_NVFP4) return plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES); /* no fp32 */
  int64_t off = plan_saved_scale_offset(pl), sc = mul3(pl->hla.groups, 4, 1), r;
  return off < 0 || sc < 0 || add_ok(off, sc, &r) ? -1 : r;
}

int64_t plan_saved_scale_offset(const hot_layer_plan *pl) {
  if (!pl || !pl->abc.enabled || pl->fmt == HOT_FMT_NVFP4) return -1;
  const int64_t codes = mul3(pl->I, pl->hla.k, 1);
  return codes < 0 || codes > INT64_MAX - 15 ? -1 : round_up(codes, 16);
}

int plan_saved_unpacked(const hot_layer_plan *pl) {
  return pl && pl->abc.enabled && pl->hla.enabled && pl->fmt != HOT_FMT_NVFP4 &&
         pl->hla.gemm.k_pad != pl->hla.k;
}

int64_t plan_abc_method_bytes(const hot_layer_plan *pl) {
  if (!pl || !pl->abc.enabled) return 0;
  if (pl->fmt == HOT_FMT_NVFP4) /* MXFP8: K padded to the 32-value block, a scale byte each */
    return plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES);
  int64_t codes = mul3(pl->hla.k, pl->I, 1), sc = mul3(pl->hla.groups, 4, 1), r;
  return codes < 0 || sc < 0 || add_ok(codes, sc, &r) ? -1 : r;
}

int64_t plan_buffer_bytes(const hot_layer_plan *pl, hot_buffer b) {
  if (!pl) return -1;
  const int64_t ds = pl->spec ? dtype_size(pl->spec->dtype) : 4;
  switch (b) {
  case HOT_BUF_Q_G:
    return pl->hq.enabled ? mul3(pl->T, code_row_bytes(pl->hq.codes, pl->hq.gemm.k_pad), 1) : 0;
  case HOT_BUF_S_G: /* NVFP4: the one fp32 tensor scale (the block scales follow the codes) */
    return pl->hq.enabled ? (pl->fmt == HOT_FMT_NVFP4 ? 4 : mul3(pl->T, 4, 1)) : 0;
  case HOT_BUF_Q_W:
    return pl->hq.enabled ? mul3(pl->I, code_row_bytes(pl->hq.codes, pl->hq.gemm.k_pad), 1) : 0;
  case HOT_BUF_Q_HG:
    return pl->hla.enabled ? mul3(pl->O, code_row_bytes(pl->hla.gemm.codes, pl->hla.gemm.k_pad), 1)
                           : 0;
  case HOT_BUF_Q_HX:
    return pl->hla.enabled ? mul3(pl->I, code_row_bytes(pl->hla.gemm.codes, pl->hla.gemm.k_pad), 1)
                           : 0;
  case HOT_BUF_SAVED_CODES: /* NVFP4: q_x^ as the g_w GEMM reads it (MXFP8, K padded to 32) */
    if (!pl->abc.enabled) return 0;
    return pl->fmt == HOT_FMT_NVFP4 ? plan_buffer_bytes(pl, HOT_BUF_Q_HX) : mul3(pl->I, pl->hla.k, 1);
  case HOT_BUF_SAVED: return saved_bytes(pl);
  case HOT_BUF_GY: return mul3(pl->T, pl->O, ds);
  case HOT_BUF_X: return mul3(pl->T, pl->I, ds);
  case HOT_BUF_W: return mul3(pl->O, pl->I, ds);
  case HOT_BUF_GX: return mul3(pl->T, pl->I, 4);
  case HOT_BUF_GW: return mul3(pl->O, pl->I, 4);
  default: return -1;
  }
}

int plan_kernel_index(const hot_layer_plan *plan, hot_kernel_role role) {
  if (!plan) return -1;
  for (int i = 0; i < plan->n_kernels; ++i)
    if (plan->kernels[i].role == role) return i;
  return -1;
}

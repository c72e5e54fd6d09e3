/* nvfp4_plan.h — recipe nvfp4 in a layer plan (templates/CONTRACT.md 20.6): the twin's layer
 * description taken from a plan, and where the call buffers of the step functions hold the block
 * codes. Shared by the reference step function (nvfp4_steps_ref.c) and the fast path's
 * (runtime/cpu/fast_nvfp4.c), so both read and write the same layout. Header only, no state.
 *
 * Call buffers (hot_lbuf slots) of a recipe nvfp4 backward:
 *   Q_G   codes of g' (T rows of o_pad / 2 bytes), then its E4M3 scales (T rows of o_pad / 16)
 *   S_G   the fp32 tensor scale of g' (one float)
 *   Q_W   codes of w' (I rows of o_pad / 2), then its E4M3 scales (I rows of o_pad / 16)
 *   S_W   the fp32 tensor scale of w'
 *   Q_HG  MXFP8 codes of g^ (O rows of k_pad E4M3 bytes), then its E8M0 scales (O rows of
 *         k_pad / 32)
 *   Q_HX  the same for x^ (I rows) when the backward projects x itself (no ABC)
 * and the saved buffer under ABC is Q_HX's layout (plan_buffer_bytes(HOT_BUF_SAVED)), read in
 * place by the g_w GEMM. o_pad = hq.gemm.k_pad (O rounded up to 16), k_pad = hla.gemm.k_pad (K
 * rounded up to 32). */
#ifndef HOT_NVFP4_PLAN_H
#define HOT_NVFP4_PLAN_H

#include "nvfp4_ref.h"
#include "plan.h"

typedef struct {
  nvfp4_layer ly;
  int rows[HOT_MAX_P];
} nvfp4_plan_layer;

/* The twin's description of plan pl's layer (HLA in MXFP8, its basis rows and token layout). */
static inline void nvfp4_of_plan(const hot_layer_plan *pl, nvfp4_plan_layer *out) {
  for (int j = 0; j < pl->hla.rank && j < HOT_MAX_P; ++j) out->rows[j] = pl->hla.rows[j];
  out->ly.B = pl->B;
  out->ly.L = pl->L;
  out->ly.O = pl->O;
  out->ly.I = pl->I;
  out->ly.p = pl->hla.enabled ? pl->hla.block : 1;
  out->ly.r = pl->hla.enabled ? pl->hla.rank : 1;
  out->ly.flat = pl->hla.layout == HOT_LAYOUT_FLAT;
  out->ly.rows = out->rows;
  out->ly.hla_fmt = NVFP4_HLA_MXFP8;
  out->ly.layer_id = (uint32_t)pl->layer_id;
  if (!pl->hla.enabled) out->rows[0] = 0;
}

/* Bytes of the codes of `rows` NVFP4 rows of k_pad values (the scales follow them). */
static inline int64_t nvfp4_codes_bytes(int64_t rows, int64_t k_pad) { return rows * (k_pad / 2); }
/* Bytes of the codes of `rows` MXFP8 rows of k_pad values (the scales follow them). */
static inline int64_t mxfp8_codes_bytes(int64_t rows, int64_t k_pad) { return rows * k_pad; }

#endif

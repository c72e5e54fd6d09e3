/* abc_unpack_ref.c — CPU twin of templates/abc_unpack.cu (role abc_unpack): the saved codes of ABC
 * (I rows of hla.k bytes, unpadded) into the g_w GEMM's operand layout (I rows of hla.gemm.k_pad,
 * group j at j * group_k_pad, zero tails), and the save's own layout from the GEMM layout. */
#include <string.h>

#include "ref.h"
#include "ref_steps.h"

/* The plan's saved layout is consistent: ABC on, K = groups * group_k, k_pad = groups *
 * group_k_pad, group_k <= group_k_pad. */
static int saved_ok(const hot_layer_plan *pl) {
  const int64_t K = pl->hla.k, G = pl->hla.groups, gk = pl->hla.group_k, gkp = pl->hla.group_k_pad;
  return pl->abc.enabled && pl->hla.enabled && G >= 1 && gk >= 1 && gk * G == K && gkp >= gk &&
         gkp * G == pl->hla.gemm.k_pad;
}

/* The copy both ways: unpack (saved -> GEMM layout, zero tails written) or pack (GEMM -> saved). */
static int copy_codes(const hot_layer_plan *pl, const int8_t *src, int8_t *dst, int unpack) {
  if (!pl || !src || !dst) return HOT_REF_EARG;
  if (!saved_ok(pl)) return HOT_REF_ESHAPE;
  const int64_t K = pl->hla.k, G = pl->hla.groups, gk = pl->hla.group_k, gkp = pl->hla.group_k_pad;
  const int64_t kp = pl->hla.gemm.k_pad;
  for (int64_t c = 0; c < pl->I; ++c)
    for (int64_t j = 0; j < G; ++j) {
      const int64_t saved_at = c * K + j * gk, gemm_at = c * kp + j * gkp;
      if (!unpack) {
        memcpy(dst + saved_at, src + gemm_at, (size_t)gk);
        continue;
      }
      memcpy(dst + gemm_at, src + saved_at, (size_t)gk);
      memset(dst + gemm_at + gk, 0, (size_t)(gkp - gk));
    }
  return HOT_REF_OK;
}

int ref_abc_unpack(const hot_layer_plan *pl, const int8_t *codes, int8_t *q_x) {
  return copy_codes(pl, codes, q_x, 1);
}

int ref_abc_pack(const hot_layer_plan *pl, const int8_t *q_x, int8_t *codes) {
  return copy_codes(pl, q_x, codes, 0);
}

/* The abc_unpack family's step (ref_steps.h): the saved codes into the g_w GEMM's layout, q_x^. */
int ref_step_abc_unpack(hot_ref_call *c, const hot_step *s) {
  (void)s;
  if (!c->saved || !c->saved->q_x) return HOT_REF_OK; /* no ABC: the g_w GEMM projects the kept x */
  int8_t *qx = ref_call_alloc(c, HOT_LB_Q_HX, ref_hla_x_bytes(c->pl));
  if (!qx) return HOT_REF_ENOMEM;
  return ref_abc_unpack(c->pl, c->saved->q_x, qx);
}

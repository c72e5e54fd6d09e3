/* abc_unpack_ref.c — CPU twin of templates/abc_unpack.cu (role abc_unpack): the saved codes of ABC
 * (I rows of hla.k bytes, unpadded) into the g_w GEMM's operand layout (I rows of hla.gemm.k_pad,
 * group j at j * group_k_pad, zero tails), and the save's own layout from the GEMM layout. */
#include <string.h>

#include "ref.h"

/* The plan's saved layout is consistent: ABC on, K = groups * group_k, k_pad = groups *
 * group_k_pad, group_k <= group_k_pad. */
static int saved_ok(const hot_layer_plan *pl) {
  const int64_t K = pl->hla.k, G = pl->hla.groups, gk = pl->hla.group_k, gkp = pl->hla.group_k_pad;
  return pl->abc.enabled && pl->hla.enabled && G >= 1 && gk >= 1 && gk * G == K && gkp >= gk &&
         gkp * G == pl->hla.gemm.k_pad;
}

int ref_abc_unpack(const hot_layer_plan *pl, const int8_t *codes, int8_t *q_x) {
  if (!pl || !codes || !q_x) return HOT_REF_EARG;
  if (!saved_ok(pl)) return HOT_REF_ESHAPE;
  const int64_t K = pl->hla.k, G = pl->hla.groups, gk = pl->hla.group_k, gkp = pl->hla.group_k_pad;
  const int64_t kp = pl->hla.gemm.k_pad;
  for (int64_t c = 0; c < pl->I; ++c)
    for (int64_t j = 0; j < G; ++j) {
      int8_t *d = q_x + c * kp + j * gkp;
      memcpy(d, codes + c * K + j * gk, (size_t)gk);
      memset(d + gk, 0, (size_t)(gkp - gk));
    }
  return HOT_REF_OK;
}

int ref_abc_pack(const hot_layer_plan *pl, const int8_t *q_x, int8_t *codes) {
  if (!pl || !codes || !q_x) return HOT_REF_EARG;
  if (!saved_ok(pl)) return HOT_REF_ESHAPE;
  const int64_t K = pl->hla.k, G = pl->hla.groups, gk = pl->hla.group_k, gkp = pl->hla.group_k_pad;
  const int64_t kp = pl->hla.gemm.k_pad;
  for (int64_t c = 0; c < pl->I; ++c)
    for (int64_t j = 0; j < G; ++j) memcpy(codes + c * K + j * gk, q_x + c * kp + j * gkp, (size_t)gk);
  return HOT_REF_OK;
}

/* hla_project_ref.c — CPU twin of templates/hla_project.cu (kernels HOT_K_ABC_X and
 * HOT_K_HLA_G): the per-block Walsh projection of CONTRACT.md 4 along the token axis, then the
 * 8-bit per-tensor quantizers (RTN for x^, SR for g^), stored transposed for the g_w GEMM. */
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "ref.h"
#include "ref_steps.h"

static int hla_ready(const hot_layer_plan *pl) {
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  return pl->hla.enabled ? HOT_REF_OK : HOT_REF_ESHAPE;
}

int ref_hla_transform(const hot_layer_plan *pl, const void *src, hot_dtype dt, int64_t cols,
                          float *out) {
  if (!pl || !src || !out || cols <= 0 || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = hla_ready(pl);
  if (rc) return rc;
  int p = pl->hla.block, r = pl->hla.rank;
  int flat = pl->hla.layout == HOT_LAYOUT_FLAT;
  int64_t per_seg = pl->hla.seg_len / p;
  int64_t seg_real = flat ? pl->T : pl->L; /* real tokens of a segment; the rest are zeros */
  float *buf = malloc((size_t)((int64_t)p * cols) * sizeof *buf);
  if (!buf) return HOT_REF_ENOMEM;
  for (int64_t seg = 0; seg < pl->hla.segments; ++seg) {
    int64_t base = flat ? 0 : seg * pl->L; /* token index of the segment's first position */
    for (int64_t blk = 0; blk < per_seg; ++blk) {
      for (int j = 0; j < p; ++j) {
        int64_t pos = blk * p + j;
        float *row = buf + (int64_t)j * cols;
        if (pos < seg_real) {
          for (int64_t c = 0; c < cols; ++c) row[c] = ref_load(src, dt, (base + pos) * cols + c);
        } else {
          memset(row, 0, (size_t)cols * sizeof *row);
        }
      }
      ref_fwht_rows(buf, p, cols);
      int64_t kb = (seg * per_seg + blk) * r; /* first output row of this block */
      for (int j = 0; j < r; ++j) {
        const float *srow = buf + (int64_t)pl->hla.rows[j] * cols;
        float *drow = out + (kb + j) * cols;
        for (int64_t c = 0; c < cols; ++c) {
          if (!isfinite(srow[c])) {
            free(buf);
            return HOT_REF_ENONFINITE;
          }
          drow[c] = srow[c];
        }
      }
    }
  }
  free(buf);
  return HOT_REF_OK;
}

/* Projects src (T x cols), quantizes the K x cols result with q — one scale for the tensor, or
 * one per sample (q->gran HOT_GRAN_SAMPLE: group j = math rows j*group_k ...) — and stores it
 * transposed: cols rows of hla.gemm.k_pad codes, math row kk at position
 * (kk / group_k) * group_k_pad + kk % group_k, zeros elsewhere (CONTRACT.md 9). Writes
 * scale[hla.groups] (a per-tensor scale repeated in every entry). */
static int project_quant(const hot_layer_plan *pl, const void *src, hot_dtype dt, int64_t cols,
                         const hot_quant *q, uint64_t seed, uint32_t tag, uint32_t step,
                         int8_t *dst, float *scale) {
  int rc = hla_ready(pl);
  if (rc) return rc;
  const int64_t K = pl->hla.k, G = pl->hla.groups, gk = pl->hla.group_k, gkp = pl->hla.group_k_pad;
  const int64_t kp = pl->hla.gemm.k_pad;
  const int sample = q->gran == HOT_GRAN_SAMPLE;
  if (G < 1 || gk * G != K || (G > 1 ? gkp * G != kp || gkp < gk : gkp != kp) ||
      (q->gran != HOT_GRAN_TENSOR && !sample))
    return HOT_REF_ESHAPE;
  float *t = malloc((size_t)(K * cols) * sizeof *t);
  int8_t *codes = malloc((size_t)(K * cols));
  if (!t || !codes) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  rc = ref_hla_transform(pl, src, dt, cols, t);
  if (rc) goto done;
  /* per sample: groups of group_k rows (G > 1 here; with one segment it is per tensor) */
  rc = ref_quantize_groups(t, K, cols, sample ? gk : K, q, seed, tag, step, codes, scale);
  if (rc) goto done;
  for (int64_t j = sample ? G : 1; j < G; ++j) scale[j] = scale[0];
  memset(dst, 0, (size_t)(cols * kp));
  for (int64_t kk = 0; kk < K; ++kk) {
    const int64_t pos = (kk / gk) * gkp + kk % gk;
    for (int64_t c = 0; c < cols; ++c) dst[c * kp + pos] = codes[kk * cols + c];
  }
done:
  free(t);
  free(codes);
  return rc;
}

int ref_hla_quant_x(const hot_layer_plan *pl, const void *x, hot_dtype dt, int8_t *q_x,
                        float *s_x) {
  if (!pl || !x || !q_x || !s_x) return HOT_REF_EARG;
  hot_quant q = pl->hla.x;
  q.round = HOT_ROUND_RTN; /* x^ is always RTN: CONTRACT.md defines no random stream for it */
  return project_quant(pl, x, dt, pl->I, &q, 0, 0, 0, q_x, s_x);
}

int ref_hla_quant_g(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, uint64_t seed,
                        uint32_t step, int8_t *q_g, float *s_g) {
  if (!pl || !g_y || !q_g || !s_g) return HOT_REF_EARG;
  uint32_t tag = (uint32_t)pl->layer_id * 16u + HOT_TENSOR_HLA_G;
  return project_quant(pl, g_y, dt, pl->O, &pl->hla.g, seed, tag, step, q_g, s_g);
}

/* The hla family's steps (ref_steps.h): abc_x (save), the saved layout's q_x^ codes and s_x^ into
 * the call's saved buffer (the GEMM layout's codes, packed: ref_abc_pack); hla_g, q_g^ and s_g^. */
int ref_step_hla(hot_ref_call *c, const hot_step *s) {
  const hot_layer_plan *pl = c->pl;
  if (pl->fmt == HOT_FMT_NVFP4) /* CONTRACT.md 20 */
    return ref_nvfp4_hla(c, s->role == HOT_K_HLA_G);
  if (s->role == HOT_K_HLA_G) {
    int8_t *q = ref_call_alloc(c, HOT_LB_Q_HG, ref_hla_g_bytes(pl));
    float *sg = ref_call_alloc(c, HOT_LB_S_HG, pl->hla.groups * (int64_t)sizeof(float));
    if (!q || !sg) return HOT_REF_ENOMEM;
    return ref_hla_quant_g(pl, c->g_y, c->dt, c->seed, c->step, q, sg);
  }
  if (s->role != HOT_K_ABC_X || !c->save_out) return HOT_REF_EARG;
  hot_ref_saved *out = c->save_out;
  int8_t *qx = ref_call_alloc(c, HOT_LB_Q_HX, ref_hla_x_bytes(pl));
  out->q_x = malloc((size_t)(pl->I * pl->hla.k));
  out->s_x = malloc((size_t)pl->hla.groups * sizeof *out->s_x);
  if (!qx || !out->q_x || !out->s_x) return HOT_REF_ENOMEM; /* the caller frees out */
  int rc = ref_hla_quant_x(pl, c->x, c->dt, qx, out->s_x);
  return rc ? rc : ref_abc_pack(pl, qx, out->q_x);
}

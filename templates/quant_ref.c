/* quant_ref.c — what every twin shares: status names, plan checks, buffer sizes, dtype loads,
 * the canonical fp64 sum, the Philox stream, code storage, and the quantizer of CONTRACT.md 6. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "ref.h"
#include "ref_steps.h"

const char *ref_status_name(int status) {
  switch (status) {
  case HOT_REF_OK: return "ok";
  case HOT_REF_EARG: return "bad argument";
  case HOT_REF_ESHAPE: return "inconsistent plan or shapes";
  case HOT_REF_ENOMEM: return "out of memory";
  case HOT_REF_ENONFINITE: return "non-finite value";
  default: return "unknown status";
  }
}

static int is_pow2(int64_t n) { return n >= 1 && (n & (n - 1)) == 0; }
static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

static int quant_ok(const hot_quant *q) {
  return q->bits >= 2 && q->bits <= 8 && (q->round == HOT_ROUND_RTN || q->round == HOT_ROUND_SR) &&
         (q->rule == HOT_RULE_ABSMAX || q->rule == HOT_RULE_SAWB);
}

/* HQ's block, padding, codes and quantizers. */
static int hq_plan_ok(const hot_layer_plan *pl) {
  int b = pl->hq.block;
  if (b < 1 || b > 256 || !is_pow2(b)) return 0;
  if (pl->hq.o_pad != round_up(pl->O, b) || pl->hq.gemm.k_pad < pl->hq.o_pad) return 0;
  if (pl->fmt == HOT_FMT_NVFP4) /* CONTRACT.md 20.3: one H_16 block is one scale block */
    return b == 16 && pl->hq.codes == HOT_CODES_NVFP4 && pl->hq.gemm.k_pad == pl->hq.o_pad &&
           quant_ok(&pl->hq.g) && quant_ok(&pl->hq.w);
  if (pl->hq.codes != HOT_CODES_S8 && pl->hq.codes != HOT_CODES_S4_PACKED) return 0;
  if (!quant_ok(&pl->hq.g) || !quant_ok(&pl->hq.w)) return 0;
  if (pl->hq.codes == HOT_CODES_S4_PACKED &&
      (pl->hq.gemm.k_pad % 2 != 0 || pl->hq.g.bits > 4 || pl->hq.w.bits > 4))
    return 0;
  return 1;
}

/* HLA's block p, rank r and r distinct basis rows below p. */
static int hla_rows_ok(const hot_layer_plan *pl) {
  int p = pl->hla.block, r = pl->hla.rank;
  if (p < 1 || p > HOT_MAX_P || !is_pow2(p) || r < 1 || r > p) return 0;
  unsigned char seen[HOT_MAX_P];
  memset(seen, 0, sizeof seen);
  for (int j = 0; j < r; ++j) {
    int row = pl->hla.rows[j];
    if (row >= p || seen[row]) return 0;
    seen[row] = 1;
  }
  return 1;
}

/* HLA's layout, segments, blocks and K (the block p already checked). */
static int hla_layout_ok(const hot_layer_plan *pl) {
  const int p = pl->hla.block;
  if (pl->hla.layout == HOT_LAYOUT_SAMPLE) {
    if (pl->hla.segments != pl->B || pl->hla.seg_len != round_up(pl->L, p)) return 0;
  } else if (pl->hla.layout == HOT_LAYOUT_FLAT) {
    if (pl->hla.segments != 1 || pl->hla.seg_len != round_up(pl->T, p)) return 0;
  } else {
    return 0;
  }
  return pl->hla.blocks == pl->hla.segments * (pl->hla.seg_len / p) &&
         pl->hla.k == pl->hla.blocks * pl->hla.rank && pl->hla.gemm.k_pad >= pl->hla.k;
}

/* HLA's scale groups (CONTRACT.md 9): 1, or the segments when a quantizer is per sample, and
 * the g_w GEMM's K segmentation that follows from them. */
static int hla_groups_ok(const hot_layer_plan *pl) {
  const hot_gran gg = pl->hla.g.gran, gx = pl->hla.x.gran;
  if ((gg != HOT_GRAN_TENSOR && gg != HOT_GRAN_SAMPLE) ||
      (gx != HOT_GRAN_TENSOR && gx != HOT_GRAN_SAMPLE))
    return 0;
  const int64_t G = pl->hla.groups;
  const int want = gg == HOT_GRAN_SAMPLE || gx == HOT_GRAN_SAMPLE;
  const hot_gemm_plan *gm = &pl->hla.gemm;
  if (G != (want ? pl->hla.segments : 1) || pl->hla.group_k * G != pl->hla.k) return 0;
  if (G > 1 ? (!gm->segmented || pl->hla.group_k_pad < pl->hla.group_k ||
               gm->seg_k_pad != pl->hla.group_k_pad || gm->k_pad != G * pl->hla.group_k_pad)
            : (gm->segmented || pl->hla.group_k_pad != gm->k_pad))
    return 0;
  return 1;
}

int ref_plan_check(const hot_layer_plan *pl) {
  if (!pl) return HOT_REF_EARG;
  if (pl->B <= 0 || pl->L <= 0 || pl->O <= 0 || pl->I <= 0 || pl->T != pl->B * pl->L)
    return HOT_REF_ESHAPE;
  if (pl->layer_id < 0 || pl->layer_id >= (1 << 27)) return HOT_REF_ESHAPE; /* tag fits 32 bits */
  if (pl->hq.enabled && !hq_plan_ok(pl)) return HOT_REF_ESHAPE;
  if (pl->hla.enabled) {
    if (!hla_rows_ok(pl) || !hla_layout_ok(pl)) return HOT_REF_ESHAPE;
    if (!quant_ok(&pl->hla.g) || !quant_ok(&pl->hla.x)) return HOT_REF_ESHAPE;
    if (!hla_groups_ok(pl)) return HOT_REF_ESHAPE;
    if ((pl->fmt == HOT_FMT_NVFP4) != (pl->hla.gemm.codes == HOT_CODES_MXFP8)) return HOT_REF_ESHAPE;
    if (pl->fmt == HOT_FMT_NVFP4 && /* CONTRACT.md 20.4: K padded to the 32-value block */
        (pl->hla.groups != 1 || pl->hla.gemm.k_pad != round_up(pl->hla.k, 32)))
      return HOT_REF_ESHAPE;
  }
  if (pl->fmt != HOT_FMT_INT && pl->fmt != HOT_FMT_NVFP4) return HOT_REF_ESHAPE;
  return HOT_REF_OK;
}

/* The sizes are the planner's (plan_buffer_bytes): one definition for the twins, both backends
 * and the cost model. */
static int64_t buf_bytes(const hot_layer_plan *pl, hot_buffer b) {
  const int64_t n = pl ? plan_buffer_bytes(pl, b) : 0;
  return n > 0 ? n : 0;
}
int64_t ref_hq_g_bytes(const hot_layer_plan *pl) { return buf_bytes(pl, HOT_BUF_Q_G); }
int64_t ref_hq_w_bytes(const hot_layer_plan *pl) { return buf_bytes(pl, HOT_BUF_Q_W); }
int64_t ref_hla_g_bytes(const hot_layer_plan *pl) { return buf_bytes(pl, HOT_BUF_Q_HG); }
int64_t ref_hla_x_bytes(const hot_layer_plan *pl) { return buf_bytes(pl, HOT_BUF_Q_HX); }

int ref_dt_ok(hot_dtype dt) { return dt == HOT_DT_F32 || dt == HOT_DT_BF16 || dt == HOT_DT_F16; }

float ref_load(const void *p, hot_dtype dt, int64_t i) { return hot_load_f32(p, (long long)i, (int)dt); }

void ref_sum_init(ref_sum *s) {
  s->total = 0.0;
  s->chunk = 0.0;
  s->n = 0;
}

void ref_sum_add(ref_sum *s, double v) {
  s->chunk = HOT_DADD(s->chunk, v);
  if (++s->n % HOT_REF_SUM_CHUNK == 0) { /* a full chunk: fold it, start the next at 0 */
    s->total = HOT_DADD(s->total, s->chunk);
    s->chunk = 0.0;
  }
}

double ref_sum_end(const ref_sum *s) {
  return s->n % HOT_REF_SUM_CHUNK ? HOT_DADD(s->total, s->chunk) : s->total;
}

void ref_rng_init(ref_rng *r, uint64_t seed, uint32_t tag, uint32_t step) {
  memset(r, 0, sizeof *r);
  r->seed = seed;
  r->tag = tag;
  r->step = step;
}

uint32_t ref_rng_word(ref_rng *r, uint64_t idx) {
  uint64_t q = idx >> 2;
  if (!r->valid || q != r->block) {
    hot_philox_out o = hot_philox4x32_10((uint32_t)(q & 0xffffffffu), (uint32_t)(q >> 32), r->tag,
                                         r->step, (uint32_t)(r->seed & 0xffffffffu),
                                         (uint32_t)(r->seed >> 32));
    memcpy(r->w, o.v, sizeof r->w);
    r->block = q;
    r->valid = 1;
  }
  return r->w[idx & 3u];
}

void ref_store_codes(const int8_t *codes, int64_t rows, int64_t cols, int transpose,
                     int64_t k_pad, int packed, void *dst) {
  int64_t out_rows = transpose ? cols : rows, k_len = transpose ? rows : cols;
  int64_t rb = packed ? k_pad / 2 : k_pad;
  unsigned char *d = dst;
  memset(d, 0, (size_t)(out_rows * rb));
  for (int64_t a = 0; a < out_rows; ++a) {
    unsigned char *row = d + a * rb;
    for (int64_t k = 0; k < k_len; ++k) {
      int c = transpose ? codes[k * cols + a] : codes[a * cols + k];
      if (packed) {
        unsigned char nib = (unsigned char)(c & 0xf);
        row[k >> 1] = (unsigned char)(row[k >> 1] | ((k & 1) ? nib << 4 : nib));
      } else {
        row[k] = (unsigned char)(int8_t)c;
      }
    }
  }
}

int ref_code_at(const void *row, int packed, int64_t k) {
  const unsigned char *r = row;
  return packed ? hot_unpack_s4(r[k >> 1], (int)(k & 1)) : (int)(int8_t)r[k];
}

/* Scale of one group of n values: absmax, or SAWB with its fallback (CONTRACT.md 3.4 and 11). */
static int group_scale(const float *v, int64_t n, const hot_quant *q, float *scale) {
  float amax = 0.0f;
  ref_sum s1, s2;
  ref_sum_init(&s1);
  ref_sum_init(&s2);
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) return HOT_REF_ENONFINITE;
    float a = fabsf(v[i]);
    if (a > amax) amax = a;
    if (q->rule == HOT_RULE_SAWB) {
      ref_sum_add(&s1, (double)a);
      ref_sum_add(&s2, HOT_DMUL((double)v[i], (double)v[i])); /* exact: 48-bit product */
    }
  }
  *scale = q->rule == HOT_RULE_SAWB
               ? hot_scale_sawb(ref_sum_end(&s1), ref_sum_end(&s2), (double)n, amax, q->bits)
               : hot_scale(amax, q->bits);
  return HOT_REF_OK;
}

int ref_quantize_groups(const float *v, int64_t rows, int64_t cols, int64_t group_rows,
                            const hot_quant *q, uint64_t seed, uint32_t tag, uint32_t step,
                            int8_t *codes, float *scales) {
  if (!v || !q || !codes || !scales || rows <= 0 || cols <= 0 || group_rows <= 0 ||
      rows % group_rows != 0 || !quant_ok(q))
    return HOT_REF_EARG;
  int qmax = hot_qmax(q->bits);
  int64_t groups = rows / group_rows, glen = group_rows * cols;
  ref_rng rng;
  ref_rng_init(&rng, seed, tag, step);
  for (int64_t g = 0; g < groups; ++g) {
    float s;
    int rc = group_scale(v + g * glen, glen, q, &s);
    if (rc) return rc;
    scales[g] = s;
    for (int64_t j = 0; j < glen; ++j) {
      int64_t idx = g * glen + j;
      int c = q->round == HOT_ROUND_SR ? hot_quant_sr(v[idx], s, qmax, ref_rng_word(&rng, (uint64_t)idx))
                                       : hot_quant_rtn(v[idx], s, qmax);
      codes[idx] = (int8_t)c;
    }
  }
  return HOT_REF_OK;
}

int ref_quantize(const float *v, int64_t rows, int64_t cols, const hot_quant *q, hot_gran gran,
                     uint64_t seed, uint32_t tag, uint32_t step, int8_t *codes, float *scales) {
  if (gran != HOT_GRAN_TENSOR && gran != HOT_GRAN_ROW) return HOT_REF_EARG;
  return ref_quantize_groups(v, rows, cols, gran == HOT_GRAN_ROW ? 1 : rows, q, seed, tag,
                                 step, codes, scales);
}

/* The sawb family's steps (ref_steps.h): the SAWB scales of w' (sawb_w) and x^ (sawb_x) are
 * group_scale above, computed by the quantizer of hq_w's and abc_x's twins (ref_quantize_groups
 * with rule SAWB) in their own pass, which the table runs first (seq 30 / 10 before 31 / 11): the
 * step has nothing left to do. */
int ref_step_sawb(hot_ref_call *c, const hot_step *s) {
  (void)c;
  (void)s;
  return HOT_REF_OK;
}

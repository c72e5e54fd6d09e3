/* paper_diffs.c — hot-bench --paper-diffs: the measured effect of each numerical difference that
 * remains between recipe paper_code and the HOT authors' code (docs/numerics.md):
 *
 *   a  eps     their scale divisors add 1e-11 (s = amax/qmax + 1e-11; SAWB: clip/qmax + 1e-11)
 *   b  sawb32  their SAWB statistics are fp32 sums, in two orders: sequential (the largest
 *              round-off of any fp32 order, a bound) and pairwise (b:sawb32pw, near PyTorch's
 *              blocked reductions)
 *   (c, x^ and g^ scaled per sample, was a difference until paper_code adopted it: the
 *    baseline now scales them as the plan says, per sample under paper_code)
 *   d  fsum    g_w as per-sample products of the dequantized values in fp32 (sequential in k),
 *              summed over the samples in fp32, instead of an int32 GEMM per sample (one per
 *              scale group) with its epilogue, the samples' results summed in fp32
 *   e  sr      stochastic rounding in their sign-magnitude form, sign(u)*floor(|u| + r) with r
 *              from another generator (24-bit uniforms of a splitmix64 stream), instead of the
 *              floor form with the Philox stream
 *
 * A what-if reference of one layer's backward, written here (not in templates/: the CPU twins
 * stay the contract): the transforms come from the twins (ref_hq_transform_g/_w,
 * ref_hla_transform, identical in both forms), the quantizers, the GEMMs and the epilogues
 * are this file's, each difference a flag. With no flag set it must give the bits of the twins:
 * every layer and data kind checks that against a save + calibrate + backward through the public
 * API on the CPU backend (first seed) and prints the result. Errors are relative Frobenius norms
 * against the fp64 products (ref_exact_gx/_gw), mean and spread over seeds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "hot_math.cuh"
#include "fast.h"
#include "ref.h"

enum { F_EPS = 1, F_SAWB32 = 2, F_FSUM = 8, F_SR = 16, F_REDRAW = 32, F_SAWBPW = 64 };
enum { NVAR = 8 };
/* b comes in two fp32 orders: sequential (the largest round-off of any order: a bound) and
 * pairwise (halving down to runs of 16, near what PyTorch's blocked reductions do). "redraw" is
 * hot's numerics with another Philox key: what a different draw alone does, the yardstick of e
 * (whose effect is a different draw too). "all" is a, b pairwise, d and e together. */
static const unsigned var_flags[NVAR] = {0, F_EPS, F_SAWB32, F_SAWBPW, F_FSUM, F_SR,
                                         F_REDRAW, F_EPS | F_SAWBPW | F_FSUM | F_SR};
static const char *const var_name[NVAR] = {"baseline", "a:eps", "b:sawb32", "b:sawb32pw",
                                           "d:fsum", "e:sr", "redraw", "all"};

/* Pairwise fp32 sum of |v| (sq = 0) or v*v (sq = 1) over v[0..n): halves down to runs of 16
 * summed sequentially. */
static float pw_sum(const float *v, int64_t n, int sq) {
  if (n <= 16) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s = HOT_ADD(s, sq ? HOT_MUL(v[i], v[i]) : fabsf(v[i]));
    return s;
  }
  const int64_t h = n / 2;
  return HOT_ADD(pw_sum(v, h, sq), pw_sum(v + h, n - h, sq));
}
/* The Philox key of "redraw". */
static uint64_t draw_seed(uint64_t seed, unsigned flags) {
  return flags & F_REDRAW ? seed ^ 0x9e3779b97f4a7c15ull : seed;
}
enum { KIND_GAUSS = 0, KIND_WALK, NKIND };
static const char *const kind_name[NKIND] = {"gaussian", "walks"};

static int64_t up8(int64_t n) { return (n + 7) / 8 * 8; }

static uint64_t mix64(uint64_t z) { /* splitmix64 finaliser */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- the what-if quantizer -------------------------------------------------------------- */

typedef struct {
  unsigned flags;
  uint64_t seed;
  uint32_t tag, step;
} wi_rng;

/* Canonical fp64 sum of CONTRACT.md 13 (chunks of 1024 terms), written again here. */
typedef struct {
  double total, chunk;
  int64_t n;
} csum;
static void csum_add(csum *s, double v) {
  s->chunk = HOT_DADD(s->chunk, v);
  if (++s->n % 1024 == 0) {
    s->total = HOT_DADD(s->total, s->chunk);
    s->chunk = 0.0;
  }
}
static double csum_end(const csum *s) { return s->n % 1024 ? HOT_DADD(s->total, s->chunk) : s->total; }

/* Scale of one group of n values (absmax or SAWB) in our form or theirs. */
static float group_scale(const float *v, int64_t rows, int64_t cols, int64_t ld,
                         const hot_quant *q, unsigned flags) {
  float amax = 0.0f, s1f = 0.0f, s2f = 0.0f;
  csum s1 = {0, 0, 0}, s2 = {0, 0, 0};
  const int sawb = q->rule == HOT_RULE_SAWB;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float x = v[r * ld + c], a = fabsf(x);
      if (a > amax) amax = a;
      if (!sawb || (flags & F_SAWBPW)) continue;
      if (flags & F_SAWB32) {
        s1f = HOT_ADD(s1f, a);
        s2f = HOT_ADD(s2f, HOT_MUL(x, x));
      } else {
        csum_add(&s1, (double)a);
        csum_add(&s2, HOT_DMUL((double)x, (double)x));
      }
    }
  float s;
  const double n = (double)rows * (double)cols;
  if (sawb && (flags & F_SAWBPW)) { /* the group is contiguous: ld == cols in every call */
    s1f = pw_sum(v, rows * cols, 0);
    s2f = pw_sum(v, rows * cols, 1);
  }
  if (sawb && (flags & (F_SAWB32 | F_SAWBPW))) { /* their fp32 statistics and clip */
    const float nf = (float)n, m1 = HOT_DIV(s1f, nf), m2 = HOT_DIV(s2f, nf);
    const float clip = HOT_SUB(HOT_MUL(12.1f, sqrtf(m2)), HOT_MUL(12.2f, m1));
    s = clip > 0.0f ? HOT_DIV(clip, HOT_I2F(hot_qmax(q->bits))) : hot_scale(amax, q->bits);
  } else if (sawb) {
    s = hot_scale_sawb(csum_end(&s1), csum_end(&s2), n, amax, q->bits);
  } else {
    s = hot_scale(amax, q->bits);
  }
  if (flags & F_EPS) s = HOT_ADD(s, 1e-11f);
  return s;
}

/* Quantizes the rows x cols math tensor v (row-major, leading dimension cols) in groups of
 * group_rows rows into codes (as floats, leading dimension ldc, padding untouched) and
 * scales[rows / group_rows]. The random index of element (r, c) is r * cols + c. */
static void wi_quantize(const float *v, int64_t rows, int64_t cols, int64_t group_rows,
                        const hot_quant *q, const wi_rng *rg, float *codes, int64_t ldc,
                        float *scales) {
  const int qmax = hot_qmax(q->bits);
  const uint64_t alt = mix64(rg->seed ^ mix64(((uint64_t)rg->tag << 32) | rg->step));
  hot_philox_out blk;
  uint64_t blk_q = UINT64_MAX;
  for (int64_t g = 0; g * group_rows < rows; ++g) {
    const float s = group_scale(v + g * group_rows * cols, group_rows, cols, cols, q, rg->flags);
    scales[g] = s;
    for (int64_t r = g * group_rows; r < (g + 1) * group_rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const uint64_t idx = (uint64_t)(r * cols + c);
        const float x = v[r * cols + c];
        int code;
        if (q->round == HOT_ROUND_RTN) {
          code = hot_quant_rtn(x, s, qmax);
        } else if (rg->flags & F_SR) { /* sign(u) * floor(|u| + r), r a 24-bit uniform */
          const float u = hot_scaled(x, s, qmax);
          const float rr = (float)(mix64(alt + idx) >> 40) * 5.9604644775390625e-8f;
          const int m = (int)HOT_FLOOR(HOT_ADD(fabsf(u), rr));
          code = u < 0.0f ? -m : m;
        } else {
          if (idx >> 2 != blk_q) {
            blk_q = idx >> 2;
            blk = hot_philox4x32_10((uint32_t)(blk_q & 0xffffffffu), (uint32_t)(blk_q >> 32),
                                    rg->tag, rg->step, (uint32_t)(rg->seed & 0xffffffffu),
                                    (uint32_t)(rg->seed >> 32));
          }
          code = hot_quant_sr(x, s, qmax, blk.v[idx & 3u]);
        }
        codes[r * ldc + c] = (float)code;
      }
  }
}

/* ---- GEMMs ------------------------------------------------------------------------------ */

/* C[m][n] = sum over k0 <= k < k1 of A(m, k) * B[k][n], A(m, k) = A[m*sam + k*sak], for m < M
 * and n < N8 (a multiple of 8; C has ceil(M/4)*4 rows of N8). fp32, each product and each sum
 * rounded once, k ascending. */
static void gemm_f32(const float *A, int64_t sam, int64_t sak, int64_t M, const float *B,
                     int64_t N8, int64_t k0, int64_t k1, float *C) {
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    float *c0 = C + m0 * N8, *c1 = c0 + N8, *c2 = c1 + N8, *c3 = c2 + N8;
    memset(c0, 0, (size_t)(4 * N8) * sizeof *c0);
    for (int64_t k = k0; k < k1; ++k) {
      const float a0 = A[m0 * sam + k * sak];
      const float a1 = m0 + 1 < M ? A[(m0 + 1) * sam + k * sak] : 0.0f;
      const float a2 = m0 + 2 < M ? A[(m0 + 2) * sam + k * sak] : 0.0f;
      const float a3 = m0 + 3 < M ? A[(m0 + 3) * sam + k * sak] : 0.0f;
      const float *b = B + k * N8;
      for (int64_t n = 0; n < N8; n += 8)
        for (int u = 0; u < 8; ++u) {
          const float bv = b[n + u];
          c0[n + u] = HOT_ADD(c0[n + u], HOT_MUL(a0, bv));
          c1[n + u] = HOT_ADD(c1[n + u], HOT_MUL(a1, bv));
          c2[n + u] = HOT_ADD(c2[n + u], HOT_MUL(a2, bv));
          c3[n + u] = HOT_ADD(c3[n + u], HOT_MUL(a3, bv));
        }
    }
  }
}

/* The integer GEMM of the kernels (int32 sums, wrapping modulo 2^32) on integer codes held as
 * floats: fp32 sums are exact while every partial sum stays below 2^24, so k is cut into chunks
 * whose bound (length * qa * qb) is below that, the chunks added in int64 and wrapped. C: as
 * gemm_f32, holding the int32 results as floats (what HOT_I2F gives). tmp: like C. */
static void gemm_int(const float *A, int64_t sam, int64_t sak, int64_t M, const float *B,
                     int64_t N8, int64_t k0, int64_t k1, double qab, float *C, float *tmp,
                     int64_t *acc) {
  int64_t kc = (int64_t)(16777215.0 / (qab > 1.0 ? qab : 1.0));
  if (kc < 1) kc = 1;
  if (k1 - k0 <= kc) {
    gemm_f32(A, sam, sak, M, B, N8, k0, k1, C);
    return;
  }
  const int64_t n = (M + 3) / 4 * 4 * N8;
  memset(acc, 0, (size_t)n * sizeof *acc);
  for (int64_t k = k0; k < k1; k += kc) {
    gemm_f32(A, sam, sak, M, B, N8, k, k + kc < k1 ? k + kc : k1, tmp);
    for (int64_t j = 0; j < n; ++j) acc[j] += (int64_t)tmp[j];
  }
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t u = (uint32_t)((uint64_t)acc[j] & 0xffffffffu);
    const int64_t w = u < 0x80000000u ? (int64_t)u : (int64_t)u - 4294967296LL;
    C[j] = HOT_I2F((int)w);
  }
}

/* ---- one layer ---------------------------------------------------------------------------- */

typedef struct {
  const hot_layer_plan *pl;
  hot_gran gran;              /* g' granularity (LQS's pick on the baseline) */
  int64_t T, O, I, I8, K, op; /* op = o_pad */
  /* inputs of one seed and their transforms */
  float *w, *gy, *x[NKIND];
  float *g_t, *w_t, *hg_t, *hx_t[NKIND];
  double *ex, *ew[NKIND];
  /* scratch */
  float *ca, *cb, *sa, *sb, *c, *tmp, *ctot, *da, *db;
  int64_t *acc;
  /* baseline operands (to reuse the baseline's output when a variant changes no bit of them) */
  float *gx_base_ops, *gw_base_ops[NKIND];
  size_t gx_ops_n, gw_ops_n;
} wi_layer;

static void wi_free(wi_layer *L) {
  free(L->w); free(L->gy);
  free(L->g_t); free(L->w_t); free(L->hg_t);
  free(L->ex);
  for (int k = 0; k < NKIND; ++k) {
    free(L->x[k]); free(L->hx_t[k]); free(L->ew[k]); free(L->gw_base_ops[k]);
  }
  free(L->ca); free(L->cb); free(L->sa); free(L->sb); free(L->c); free(L->tmp); free(L->ctot);
  free(L->da); free(L->db); free(L->acc); free(L->gx_base_ops);
  memset(L, 0, sizeof *L);
}

/* The per-kind inputs and fp64 products (x, e_w, x^ transposed); -1 when out of memory. */
static int wi_alloc_kinds(wi_layer *L) {
  const int64_t T = L->T, O = L->O, I = L->I, K = L->K;
  for (int k = 0; k < NKIND; ++k) {
    L->x[k] = malloc((size_t)(T * I) * 4);
    L->ew[k] = malloc((size_t)(O * I) * 8);
    L->hx_t[k] = K ? malloc((size_t)(K * I) * 4) : NULL;
    if (!L->x[k] || !L->ew[k] || (K && !L->hx_t[k])) return -1;
  }
  return 0;
}

/* The GEMM operands, scales and accumulators of the what-if backward. */
static void wi_alloc_scratch(wi_layer *L) {
  const int64_t T = L->T, O = L->O, I = L->I, I8 = L->I8, K = L->K, op = L->op;
  const int64_t mrows = ((T > O ? T : O) + 3) / 4 * 4;
  const int64_t arows = T * op > K * O ? T * op : K * O; /* A operand: g' or g^ codes */
  const int64_t brows = op > K ? op : K;                 /* B operand rows: w' or x^ codes */
  L->g_t = op ? malloc((size_t)(T * op) * 4) : NULL;
  L->w_t = op ? malloc((size_t)(op * I) * 4) : NULL;
  L->hg_t = K ? malloc((size_t)(K * O) * 4) : NULL;
  L->ca = malloc((size_t)(arows > 0 ? arows : 1) * 4);
  L->cb = calloc((size_t)(brows > 0 ? brows * I8 : 1), 4);
  L->sa = malloc((size_t)(T > K ? T : K + 1) * 4);
  L->sb = malloc((size_t)(T > K ? T : K + 1) * 4);
  L->c = malloc((size_t)(mrows * I8) * 4);
  L->tmp = malloc((size_t)(mrows * I8) * 4);
  L->ctot = malloc((size_t)(mrows * I8) * 4);
  L->acc = malloc((size_t)(mrows * I8) * 8);
}

/* The operand lists of the bit-for-bit check (g_x and per kind g_w) and HLA's GEMM inputs. */
static void wi_alloc_ops(wi_layer *L) {
  const int64_t T = L->T, O = L->O, I8 = L->I8, K = L->K, op = L->op;
  L->da = K ? malloc((size_t)(K * O) * 4) : NULL;
  L->db = K ? calloc((size_t)(K * I8), 4) : NULL;
  L->gx_ops_n = op ? (size_t)(T * op + op * I8 + T + 1) : 0;
  L->gw_ops_n = K ? (size_t)(K * O + K * I8 + 2 * (K + 1)) : 0;
  L->gx_base_ops = op ? malloc(L->gx_ops_n * 4) : NULL;
  for (int k = 0; k < NKIND; ++k) L->gw_base_ops[k] = K ? malloc(L->gw_ops_n * 4) : NULL;
}

/* 1 when every buffer the plan needs was allocated. */
static int wi_complete(const wi_layer *L) {
  if (!L->w || !L->gy || !L->ex) return 0;
  if (L->op && (!L->g_t || !L->w_t || !L->gx_base_ops)) return 0;
  if (L->K && (!L->hg_t || !L->da || !L->db || !L->gw_base_ops[0] || !L->gw_base_ops[1])) return 0;
  return L->ca && L->cb && L->sa && L->sb && L->c && L->tmp && L->ctot && L->acc;
}

static int wi_alloc(wi_layer *L, const hot_layer_plan *pl) {
  memset(L, 0, sizeof *L);
  L->pl = pl;
  L->T = pl->T; L->O = pl->O; L->I = pl->I; L->I8 = up8(pl->I);
  L->op = pl->hq.enabled ? pl->hq.o_pad : 0;
  L->K = pl->hla.enabled ? pl->hla.k : 0;
  L->w = malloc((size_t)(L->O * L->I) * 4);
  L->gy = malloc((size_t)(L->T * L->O) * 4);
  L->ex = malloc((size_t)(L->T * L->I) * 8);
  if (wi_alloc_kinds(L) != 0) return -1;
  wi_alloc_scratch(L);
  wi_alloc_ops(L);
  return wi_complete(L) ? 0 : -1;
}

/* Seeded inputs of seed s: w, g_y (times gy_scale) and Gaussian x as tooldata_fill_normal streams; the walks are
 * independent random walks along the tokens of each sample (steps N(0, 1/L), from 0). */
static void wi_inputs(wi_layer *L, uint64_t seed, int layer, float gy_scale) {
  const hot_layer_plan *pl = L->pl;
  const uint64_t s = (uint64_t)layer * 16u;
  tooldata_fill_normal(L->w, (size_t)(L->O * L->I), seed, 5000u + s);
  tooldata_fill_normal(L->gy, (size_t)(L->T * L->O), seed, 5001u + s);
  if (gy_scale != 1.0f)
    for (int64_t j = 0; j < L->T * L->O; ++j) L->gy[j] = HOT_MUL(L->gy[j], gy_scale);
  tooldata_fill_normal(L->x[KIND_GAUSS], (size_t)(L->T * L->I), seed, 5002u + s);
  float *xw = L->x[KIND_WALK];
  tooldata_fill_normal(xw, (size_t)(L->T * L->I), seed, 5003u + s);
  const float step = (float)(1.0 / sqrt((double)pl->L));
  for (int64_t b = 0; b < pl->B; ++b)
    for (int64_t l = 0; l < pl->L; ++l) {
      float *row = xw + (b * pl->L + l) * L->I;
      for (int64_t i = 0; i < L->I; ++i)
        row[i] = l ? HOT_ADD(row[i - L->I], HOT_MUL(row[i], step)) : HOT_MUL(row[i], step);
    }
}

/* g_x of one variant into gx (T x I). Returns 1 when the quantized operands equal the
 * baseline's (then gx is not touched: the caller keeps the baseline's), else 0. */
static int wi_gx(wi_layer *L, unsigned flags, uint64_t seed, uint32_t step, float *gx, int base) {
  const hot_layer_plan *pl = L->pl;
  const int64_t T = L->T, I = L->I, I8 = L->I8, op = L->op;
  const int64_t group = L->gran == HOT_GRAN_ROW ? 1 : L->gran == HOT_GRAN_SAMPLE ? pl->L : T;
  wi_rng rg = {flags, draw_seed(seed, flags), (uint32_t)pl->layer_id * 16u + HOT_TENSOR_HQ_G, step};
  wi_quantize(L->g_t, T, op, group, &pl->hq.g, &rg, L->ca, op, L->sa);
  wi_quantize(L->w_t, op, I, op, &pl->hq.w, &rg, L->cb, I8, L->sb);
  /* compare with / keep the baseline's operands */
  float *ops = L->gx_base_ops;
  const size_t na = (size_t)(T * op), nb = (size_t)(op * I8), ns = (size_t)(T / group);
  if (base) {
    memcpy(ops, L->ca, na * 4);
    memcpy(ops + na, L->cb, nb * 4);
    memcpy(ops + na + nb, L->sa, ns * 4);
    ops[na + nb + ns] = L->sb[0];
  } else if (!memcmp(ops, L->ca, na * 4) && !memcmp(ops + na, L->cb, nb * 4) &&
             !memcmp(ops + na + nb, L->sa, ns * 4) && !memcmp(ops + na + nb + ns, L->sb, 4)) {
    return 1;
  }
  const int qa = hot_qmax(pl->hq.g.bits) + 1, qb = hot_qmax(pl->hq.w.bits);
  gemm_int(L->ca, op, 1, T, L->cb, I8, 0, op, (double)qa * qb, L->c, L->tmp, L->acc);
  const float c_w = HOT_DIV(L->sb[0], HOT_I2F(pl->hq.block));
  for (int64_t t = 0; t < T; ++t) {
    const float f = HOT_MUL(L->sa[t / group], c_w);
    for (int64_t i = 0; i < I; ++i) gx[t * I + i] = HOT_MUL(L->c[t * I8 + i], f);
  }
  return 0;
}

/* g_w of one variant for data kind `kind` into gw (O x I); returns 1 as wi_gx. */
static int wi_gw(wi_layer *L, int kind, unsigned flags, uint64_t seed, uint32_t step, float *gw,
                 int base) {
  const hot_layer_plan *pl = L->pl;
  const int64_t O = L->O, I = L->I, I8 = L->I8, K = L->K, B = pl->B;
  /* the plan's granularities (paper_code: both per sample, as the authors) */
  const int g_smp = pl->hla.g.gran == HOT_GRAN_SAMPLE, x_smp = pl->hla.x.gran == HOT_GRAN_SAMPLE;
  const int per_sample = (g_smp || x_smp) && B > 1, fsum = (flags & F_FSUM) != 0;
  const int64_t Ks = K / B; /* rows of one sample (layout sample) */
  const int64_t ga = g_smp ? Ks : K, gb = x_smp ? Ks : K;
  wi_rng rg = {flags, draw_seed(seed, flags), (uint32_t)pl->layer_id * 16u + HOT_TENSOR_HLA_G, step};
  wi_quantize(L->hg_t, K, O, ga, &pl->hla.g, &rg, L->ca, O, L->sa);
  wi_quantize(L->hx_t[kind], K, I, gb, &pl->hla.x, &rg, L->cb, I8, L->sb);
  float *ops = L->gw_base_ops[kind];
  const size_t na = (size_t)(K * O), nb = (size_t)(K * I8), ns = (size_t)B;
  if (base) {
    memcpy(ops, L->ca, na * 4);
    memcpy(ops + na, L->cb, nb * 4);
    memcpy(ops + na + nb, L->sa, ns * 4);
    memcpy(ops + na + nb + ns, L->sb, ns * 4);
  } else if (!fsum && !memcmp(ops, L->ca, na * 4) &&
             !memcmp(ops + na, L->cb, nb * 4) && !memcmp(ops + na + nb, L->sa, ns * 4) &&
             !memcmp(ops + na + nb + ns, L->sb, ns * 4)) {
    return 1;
  }
  const float p = HOT_I2F(pl->hla.block);
  const int qa = hot_qmax(pl->hla.g.bits) + 1, qb = hot_qmax(pl->hla.x.bits);
  if (!per_sample && !fsum) { /* ours: one int32 GEMM over all blocks, one scale pair */
    gemm_int(L->ca, 1, O, O, L->cb, I8, 0, K, (double)qa * qb, L->c, L->tmp, L->acc);
    const float c = HOT_DIV(HOT_MUL(L->sa[0], L->sb[0]), p);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < I; ++i) gw[o * I + i] = HOT_MUL(L->c[o * I8 + i], c);
    return 0;
  }
  if (!fsum) { /* per-sample scales: one int32 GEMM per sample, its epilogue, fp32 sum */
    for (int64_t s = 0; s < B; ++s) {
      gemm_int(L->ca, 1, O, O, L->cb, I8, s * Ks, (s + 1) * Ks, (double)qa * qb, L->c, L->tmp,
               L->acc);
      const float c = HOT_DIV(HOT_MUL(L->sa[g_smp ? s : 0], L->sb[x_smp ? s : 0]), p);
      for (int64_t o = 0; o < O; ++o)
        for (int64_t i = 0; i < I; ++i) {
          const float v = HOT_MUL(L->c[o * I8 + i], c);
          gw[o * I + i] = s ? HOT_ADD(gw[o * I + i], v) : v;
        }
    }
    return 0;
  }
  /* theirs: dequantized values, per-sample fp32 products, fp32 sum over samples, then / p */
  for (int64_t k = 0; k < K; ++k) {
    const float sg = L->sa[k / ga], sx = L->sb[k / gb];
    for (int64_t o = 0; o < O; ++o) L->da[k * O + o] = HOT_MUL(L->ca[k * O + o], sg);
    for (int64_t i = 0; i < I; ++i) L->db[k * I8 + i] = HOT_MUL(L->cb[k * I8 + i], sx);
  }
  for (int64_t s = 0; s < B; ++s) {
    gemm_f32(L->da, 1, O, O, L->db, I8, s * Ks, (s + 1) * Ks, L->c);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < I; ++i)
        L->ctot[o * I8 + i] = s ? HOT_ADD(L->ctot[o * I8 + i], L->c[o * I8 + i]) : L->c[o * I8 + i];
  }
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) gw[o * I + i] = HOT_DIV(L->ctot[o * I8 + i], p);
  return 0;
}

/* ---- statistics and the table -------------------------------------------------------------- */

static void mean_sd(const double *v, int n, double *mean, double *sd) {
  double m = 0, q = 0;
  for (int i = 0; i < n; ++i) m += v[i];
  m /= n;
  for (int i = 0; i < n; ++i) q += (v[i] - m) * (v[i] - m);
  *mean = m;
  *sd = n > 1 ? sqrt(q / (n - 1)) : 0.0;
}

/* Bits of the public API's outputs against the what-if baseline: "bit-exact", or the largest
 * relative difference. Returns 1 when equal. */
static int compare(const float *a, const float *b, int64_t n, char *msg, size_t len) {
  if (!memcmp(a, b, (size_t)n * 4)) {
    snprintf(msg, len, "bit-exact");
    return 1;
  }
  double worst = 0;
  int64_t diff = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    ++diff;
    const double d = fabs((double)a[i] - b[i]) / (fabs((double)b[i]) > 1e-30 ? fabs((double)b[i]) : 1e-30);
    if (d > worst) worst = d;
  }
  snprintf(msg, len, "NOT bit-exact (%lld of %lld values differ, largest relative difference %.3g)",
           (long long)diff, (long long)n, worst);
  return 0;
}

/* Public API on the CPU backend (seed `seed`, step 1): save, calibrate when the spec says auto,
 * backward; outputs into gx, gw. Returns 0 or -1 with msg. */
static int api_run(hot_layer *layer, hot_ctx *ctx, const wi_layer *L, int kind, float *gx,
                   float *gw, char *msg, size_t len) {
  hot_layer_info info;
  hot_status st = hot_layer_save(layer, L->x[kind], HOT_DT_F32, NULL, NULL);
  if (st == HOT_OK) st = hot_layer_get_info(layer, &info);
  if (st == HOT_OK && info.gran_auto) st = hot_layer_calibrate(layer, L->gy, HOT_DT_F32, 1, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(layer, L->gy, L->w, HOT_DT_F32, NULL, gx, gw, NULL, 1, NULL);
  if (st != HOT_OK) {
    snprintf(msg, len, "public API: %s: %.150s", hot_status_name(st), hot_errmsg(ctx));
    return -1;
  }
  return 0;
}

/* One layer, every seed. Prints its header, validation lines and rows. Returns 0, or 2. */
/* One layer's what-if run: the plan, the buffers, the errors per kind, variant and seed. */
typedef struct {
  const bench_run *run;
  const bench_layer *bl;
  FILE *f;
  int seeds;
  hot_ctx *ctx;
  hot_layer *layer;
  const hot_layer_plan *pl;
  wi_layer L;
  float *gx, *gw, *gx_api, *gw_api;
  double *egx, *egw;
  int *dgx, *dgw;
  int valid;
  const char *picks[2];       /* LQS's picks over the seeds (the first, and another if any) */
} pd_run;

/* The output buffers of every variant and the per-seed errors. 0, or -1 (said). */
static int pd_alloc(pd_run *p) {
  if (wi_alloc(&p->L, p->pl) != 0) {
    fprintf(p->f, "%-10s: out of host memory\n", p->bl->name);
    return -1;
  }
  const int64_t T = p->L.T, O = p->L.O, I = p->L.I;
  const int seeds = p->seeds;
  p->gx = malloc((size_t)(NVAR * T * I) * 4);
  p->gw = malloc((size_t)(NKIND * NVAR * O * I) * 4);
  p->gx_api = malloc((size_t)(T * I) * 4);
  p->gw_api = malloc((size_t)(O * I) * 4);
  p->egx = calloc((size_t)(NKIND * NVAR * seeds), 8);
  p->egw = calloc((size_t)(NKIND * NVAR * seeds), 8);
  p->dgx = calloc((size_t)(NKIND * NVAR), sizeof *p->dgx);
  p->dgw = calloc((size_t)(NKIND * NVAR), sizeof *p->dgw);
  if (!p->gx || !p->gw || !p->gx_api || !p->gw_api || !p->egx || !p->egw || !p->dgx || !p->dgw) {
    fprintf(p->f, "%-10s: out of host memory\n", p->bl->name);
    return -1;
  }
  return 0;
}

/* The layer's line: sizes and the paper_code plan's numerics. */
static void pd_header(const pd_run *p, int64_t B, int64_t Ltok) {
  const hot_layer_plan *pl = p->pl;
  fprintf(p->f, "layer %s: B %lld L %lld T %lld O %lld I %lld; paper_code plan: b %d, p %d, r %d, "
          "K %lld, g' %d-bit SR %s, w' %d-bit %s, g^ %d-bit SR, x^ %d-bit %s\n", p->bl->name,
          (long long)B, (long long)Ltok, (long long)p->L.T, (long long)p->L.O, (long long)p->L.I,
          pl->hq.block, pl->hla.block, pl->hla.rank, (long long)p->L.K, pl->hq.g.bits,
          pl->hq.g.gran == HOT_GRAN_AUTO ? "(LQS)" : plan_gran_name(pl->hq.g.gran), pl->hq.w.bits,
          plan_rule_name(pl->hq.w.rule), pl->hla.g.bits, pl->hla.x.bits,
          plan_rule_name(pl->hla.x.rule));
  fflush(p->f);
}

/* One seed's inputs, fp64 products, transforms and (scale auto) LQS's pick, which every variant
 * keeps. 0, or -1 (said). */
static int pd_references(pd_run *p, uint64_t seed) {
  wi_layer *L = &p->L;
  const hot_layer_plan *pl = p->pl;
  const int64_t T = L->T, O = L->O, I = L->I;
  wi_inputs(L, seed, p->bl->index, (float)(p->run->opt.gy_scale > 0 ? p->run->opt.gy_scale : 1.0));
  int bad = fast_exact_gx(tools_fast_config(NULL, 0), T, O, I, L->gy, L->w, L->ex) ||
            ref_hq_transform_g(pl, L->gy, HOT_DT_F32, L->g_t) ||
            ref_hq_transform_w(pl, L->w, HOT_DT_F32, L->w_t) ||
            ref_hla_transform(pl, L->gy, HOT_DT_F32, O, L->hg_t);
  for (int k = 0; k < NKIND && !bad; ++k)
    bad = fast_exact_gw(tools_fast_config(NULL, 0), T, O, I, L->gy, L->x[k], L->ew[k]) ||
          ref_hla_transform(pl, L->x[k], HOT_DT_F32, I, L->hx_t[k]);
  if (bad) {
    fprintf(p->f, "%-10s: reference or transform failed\n", p->bl->name);
    return -1;
  }
  L->gran = pl->hq.g.gran;
  if (L->gran == HOT_GRAN_AUTO) { /* LQS on the baseline, step 1; kept for every variant */
    hot_ref_lqs_result lq;
    if (ref_lqs(pl, L->gy, HOT_DT_F32, seed, 1, &lq)) {
      fprintf(p->f, "%-10s: LQS failed\n", p->bl->name);
      return -1;
    }
    L->gran = lq.choice;
  }
  const char *pick = L->gran == HOT_GRAN_ROW ? "token" : plan_gran_name(L->gran);
  if (!p->picks[0]) p->picks[0] = pick;
  else if (strcmp(p->picks[0], pick)) p->picks[1] = pick;
  return 0;
}

/* g_x of every variant for seed index s: the data kinds share w and g_y, so one set serves both. */
static void pd_gx(pd_run *p, int s, uint64_t seed) {
  const int64_t TI = p->L.T * p->L.I;
  for (int v = 0; v < NVAR; ++v) {
    float *out = p->gx + v * TI;
    if (v && wi_gx(&p->L, var_flags[v], seed, 1, out, 0)) memcpy(out, p->gx, (size_t)TI * 4);
    else if (!v) wi_gx(&p->L, 0, seed, 1, out, 1);
    if (v && memcmp(out, p->gx, (size_t)TI * 4)) p->dgx[v] += 1;
    const double e = ref_rel_err(out, p->L.ex, TI);
    for (int k = 0; k < NKIND; ++k) p->egx[(k * NVAR + v) * p->seeds + s] = e;
  }
}

/* The what-if baseline of kind k against the twins through the public API (first seed). */
static void pd_validate(pd_run *p, int k, uint64_t seed, const float *g0) {
  char m1[240], m2[240];
  if (api_run(p->layer, p->ctx, &p->L, k, p->gx_api, p->gw_api, m1, sizeof m1) != 0) {
    fprintf(p->f, "validation %s %s: %s\n", p->bl->name, kind_name[k], m1);
    p->valid = 0;
    return;
  }
  p->valid &= compare(p->gx_api, p->gx, p->L.T * p->L.I, m1, sizeof m1);
  p->valid &= compare(p->gw_api, g0, p->L.O * p->L.I, m2, sizeof m2);
  fprintf(p->f, "validation %s %s: what-if baseline vs CPU twins (public API, CPU backend, seed "
          "0x%llx): g_x %s, g_w %s\n", p->bl->name, kind_name[k], (unsigned long long)seed, m1, m2);
  fflush(p->f);
}

/* g_w of every kind and variant for seed index s (and the validation at the first seed). */
static void pd_gw(pd_run *p, int s, uint64_t seed) {
  const int64_t OI = p->L.O * p->L.I;
  for (int k = 0; k < NKIND; ++k) {
    float *g0 = p->gw + (k * NVAR) * OI;
    for (int v = 0; v < NVAR; ++v) {
      float *out = p->gw + (k * NVAR + v) * OI;
      if (v && wi_gw(&p->L, k, var_flags[v], seed, 1, out, 0)) memcpy(out, g0, (size_t)OI * 4);
      else if (!v) wi_gw(&p->L, k, 0, seed, 1, out, 1);
      if (v && memcmp(out, g0, (size_t)OI * 4)) p->dgw[k * NVAR + v] += 1;
      p->egw[(k * NVAR + v) * p->seeds + s] = ref_rel_err(out, p->L.ew[k], OI);
    }
    if (s == 0) pd_validate(p, k, seed, g0);
  }
}

/* The table: per kind and variant the mean and sd over the seeds of the errors and of their
 * differences from the baseline, and how often the result changed. */
static void pd_table(const pd_run *p) {
  FILE *f = p->f;
  const int seeds = p->seeds;
  fprintf(f, "  g' granularity picked by LQS: %s%s%s\n", p->picks[0], p->picks[1] ? " / " : "",
          p->picks[1] ? p->picks[1] : "");
  fprintf(f, "%-10s %-8s %-9s %10s %9s %10s %9s %11s %9s %11s %9s %s\n", "layer", "data", "variant",
          "g_x err", "sd", "g_w err", "sd", "d g_x", "sd", "d g_w", "sd", "changed");
  for (int k = 0; k < NKIND; ++k)
    for (int v = 0; v < NVAR; ++v) {
      double mx, sx, mw, sw, mdx, sdx, mdw, sdw;
      const double *ex = p->egx + (k * NVAR + v) * seeds, *ew = p->egw + (k * NVAR + v) * seeds;
      const double *bx = p->egx + (k * NVAR) * seeds, *bw = p->egw + (k * NVAR) * seeds;
      double dx[256], dw[256];
      for (int s = 0; s < seeds; ++s) {
        dx[s] = ex[s] - bx[s];
        dw[s] = ew[s] - bw[s];
      }
      mean_sd(ex, seeds, &mx, &sx);
      mean_sd(ew, seeds, &mw, &sw);
      mean_sd(dx, seeds, &mdx, &sdx);
      mean_sd(dw, seeds, &mdw, &sdw);
      fprintf(f, "%-10s %-8s %-9s %10.6f %9.2e %10.6f %9.2e %+11.3e %9.2e %+11.3e %9.2e "
              "gx %d/%d gw %d/%d\n", p->bl->name, kind_name[k], var_name[v], mx, sx, mw, sw, mdx, sdx,
              mdw, sdw, p->dgx[v], seeds, p->dgw[k * NVAR + v], seeds);
    }
  fflush(f);
}

/* The layer planned under paper_code in a CPU context: 0, or -1 (said). */
static int pd_plan(pd_run *p, const hot_model *model, int64_t B, int64_t Ltok) {
  hot_layer_spec ps;
  bench_paper_spec(model, p->bl->index, &ps);
  char err[600];
  hot_status st = bench_ctx_open(&p->ctx, p->run, HOT_BACKEND_CPU, NULL, -1, NULL, err, sizeof err);
  if (st == HOT_OK) st = hot_layer_create(p->ctx, &ps, B, Ltok, HOT_RECIPE_PAPER_CODE, &p->layer);
  if (st != HOT_OK) {
    fprintf(p->f, "%-10s B %lld L %lld O %lld I %lld: not planned under paper_code: %s: %.400s\n",
            p->bl->name, (long long)B, (long long)Ltok, (long long)ps.out_features,
            (long long)ps.in_features, hot_status_name(st), p->ctx ? hot_errmsg(p->ctx) : err);
    return -1;
  }
  p->pl = hot_layer_get_plan(p->layer);
  if (!p->pl->hq.enabled || !p->pl->hla.enabled || p->pl->hla.layout != HOT_LAYOUT_SAMPLE) {
    fprintf(p->f, "%-10s: paper_code plan without HQ, HLA or the sample layout\n", p->bl->name);
    return -1;
  }
  return 0;
}

static int run_layer(const bench_run *run, const hot_model *model, const bench_layer *bl,
                     int64_t B, int64_t Ltok, int seeds, FILE *f) {
  pd_run *p = calloc(1, sizeof *p);
  if (!p) {
    fprintf(f, "%-10s: out of host memory\n", bl->name);
    return 2;
  }
  p->run = run;
  p->bl = bl;
  p->f = f;
  p->seeds = seeds;
  p->valid = 1;
  int rc = 2;
  if (pd_plan(p, model, B, Ltok) == 0 && pd_alloc(p) == 0) {
    pd_header(p, B, Ltok);
    int ok = 1;
    for (int s = 0; s < seeds && ok; ++s) {
      const uint64_t seed = run->seed + (uint64_t)s;
      ok = pd_references(p, seed) == 0;
      if (!ok) break;
      pd_gx(p, s, seed);
      pd_gw(p, s, seed);
    }
    if (ok) {
      pd_table(p);
      rc = p->valid ? 0 : 2;
    }
  }
  wi_free(&p->L);
  free(p->gx); free(p->gw); free(p->gx_api); free(p->gw_api);
  free(p->egx); free(p->egw); free(p->dgx); free(p->dgw);
  hot_ctx_destroy(p->ctx);
  free(p);
  return rc;
}

int bench_paper_diffs(const bench_run *run, const hot_model *model, FILE *f) {
  if (!run || !model || !f) return 1;
  const bench_opts *o = &run->opt;
  const int seeds = o->seeds > 0 ? o->seeds : 8;
  if (seeds > 256) {
    diag_fprintf(stderr, "hot-bench: --seeds must be at most 256 (got %d)\n", seeds);
    return 1;
  }
  const int64_t B = o->batch ? o->batch : 4;
  fprintf(f, "hot-bench --paper-diffs: %s (spec recipe %s; %s), CPU what-if, %d seeds from 0x%llx, "
          "step 1: relative Frobenius error of g_x and g_w against fp64, mean and sd over the "
          "seeds; d = variant - baseline per seed (mean, sd); changed = seeds whose output bits "
          "differ from the baseline's\n", run->model, run->recipe,
          model->recipe == HOT_RECIPE_PAPER_CODE ? "layers as written"
                                                 : "each layer's shape planned with paper_code",
          seeds, (unsigned long long)run->seed);
  fprintf(f, "variants: a:eps scales + 1e-11; b:sawb32 SAWB sums and clip in fp32, sequential (a bound), b:sawb32pw the same pairwise; "
          "d:fsum g_w as fp32 per-sample products of "
          "dequantized values summed in fp32; e:sr sign-magnitude SR with another generator; "
          "all: a, b pairwise, d, e together (x^ and g^ per sample in every row, as the plan). data: gaussian x, or walks (x independent random walks along "
          "tokens); w N(0, 1), g_y %g * N(0, 1)\n", o->gy_scale > 0 ? o->gy_scale : 1.0);
  int rc = 0;
  for (int li = 0; li < run->n; ++li) {
    const bench_layer *bl = &run->layers[li];
    const int64_t L = o->tokens ? o->tokens : bl->L;
    const int r = run_layer(run, model, bl, B, L, seeds, f);
    if (r > rc) rc = r;
  }
  return rc;
}

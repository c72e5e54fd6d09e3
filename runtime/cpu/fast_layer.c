/* fast_layer.c — the threaded driver of the fast CPU path: the layer's save, backward and
 * calibration as in layer_ref.c, driven by the same step table (kd_steps: fast_steps.h), each
 * family's fast step function split into independent tasks (rows, token blocks x column chunks,
 * 1024-term chunks, output tiles) whose elements see the same operations as in the twins. See
 * fast.h and docs/cpu-backend.md; adding a family: docs/adding.md. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fast_internal.h"
#include "fast_steps.h"
#include "hot_math.cuh"

#define COLS_CHUNK 256 /* columns of one task of the bias sums */
#define W_COLS 1024    /* columns of one task of the w' transform: runs of 4 KB of each row of w
                          (1 KB runs made that stage 1.37-1.58x slower: a new page every row) */

static int quant_ok(const hot_quant *q) {
  return q->bits >= 2 && q->bits <= 8 && (q->round == HOT_ROUND_RTN || q->round == HOT_ROUND_SR) &&
         (q->rule == HOT_RULE_ABSMAX || q->rule == HOT_RULE_SAWB);
}

/* Rows per task so that a task holds about 16K elements. */
static int64_t rows_per_task(int64_t cols) {
  int64_t r = 16384 / (cols > 0 ? cols : 1);
  return r > 0 ? r : 1;
}

/* The codes of the n values v of the elements idx .. idx + n - 1 under scale s
 * (ref_quantize_groups' steps per element: RTN, or SR with the Philox word of each element's own
 * index, so any split of a tensor into runs gives the same codes) into codes[0 .. n). */
static void quant_run(const fast_kernels *k, const fast_rng *rng, const hot_quant *q, float s,
                      const float *v, int64_t idx, int64_t n, int8_t *codes) {
  const int qmax = hot_qmax(q->bits), sr = q->round == HOT_ROUND_SR;
  uint32_t words[1024];
  for (int64_t e0 = 0; e0 < n; e0 += 1024) {
    const int64_t m = n - e0 < 1024 ? n - e0 : 1024;
    if (sr) k->e->philox(rng, (uint64_t)(idx + e0), m, words);
    k->e->quant(v + e0, m, s, qmax, sr, words, codes + e0);
  }
}

/* ---- the grouped quantizer (ref_quantize_groups, CONTRACT.md 6 and 11) ----------------- */

typedef struct {
  const float *v;
  int64_t rows, cols, group_rows;
  const hot_quant *q;
  fast_rng rng;
  const fast_kernels *k; /* the level's kernels (fast_config) */
  float *row_amax;  /* rows */
  double *part;     /* SAWB: 2 per chunk of every group */
  int64_t chunks;   /* SAWB chunks of one group */
  const float *scales;
  int8_t *codes;
  atomic_int bad;
} qctx;

static void stats_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  qctx *x = ctx;
  const int64_t rpt = rows_per_task(x->cols), r1 = (i + 1) * rpt < x->rows ? (i + 1) * rpt : x->rows;
  for (int64_t r = i * rpt; r < r1; ++r) {
    float m = 0.0f;
    if (!x->k->e->amax(x->v + r * x->cols, x->cols, &m)) atomic_store(&x->bad, 1);
    x->row_amax[r] = m;
  }
}

/* SAWB partials of chunks 4i .. 4i+3 of group g (canonical sum, CONTRACT.md 13): each chunk
 * summed sequentially from 0.0; four chunks side by side for instruction-level parallelism. */
static void sawb_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  qctx *x = ctx;
  const int64_t quads = fast_cdiv(x->chunks, 4), g = i / quads, c0 = (i % quads) * 4;
  const int64_t glen = x->group_rows * x->cols;
  const float *v = x->v + g * glen;
  for (int64_t c = c0; c < c0 + 4 && c < x->chunks; ++c) {
    const int64_t e0 = c * HOT_REF_SUM_CHUNK;
    const int64_t e1 = e0 + HOT_REF_SUM_CHUNK < glen ? e0 + HOT_REF_SUM_CHUNK : glen;
    double s1 = 0.0, s2 = 0.0;
    for (int64_t e = e0; e < e1; ++e) {
      s1 = HOT_DADD(s1, (double)fabsf(v[e]));
      s2 = HOT_DADD(s2, HOT_DMUL((double)v[e], (double)v[e]));
    }
    x->part[2 * (g * x->chunks + c)] = s1;
    x->part[2 * (g * x->chunks + c) + 1] = s2;
  }
}

static void quant_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  qctx *x = ctx;
  const int64_t rpt = rows_per_task(x->cols), r1 = (i + 1) * rpt < x->rows ? (i + 1) * rpt : x->rows;
  for (int64_t r = i * rpt; r < r1; ++r)
    quant_run(x->k, &x->rng, x->q, x->scales[r / x->group_rows], x->v + r * x->cols, r * x->cols,
              x->cols, x->codes + r * x->cols);
}

/* Row amax of the rows x cols tensor v (and the finiteness check): HOT_REF_ENONFINITE or OK. */
static int row_stats(qctx *x, const fast_config *cf) {
  atomic_store(&x->bad, 0);
  fast_parallel(fast_cdiv(x->rows, rows_per_task(x->cols)), cf->threads, stats_task, x);
  return atomic_load(&x->bad) ? HOT_REF_ENONFINITE : HOT_REF_OK;
}

/* The amax of group g (rows g * group_rows ..) from the row amax (a max: order-free). */
static float group_amax(const float *row_amax, int64_t g, int64_t group_rows) {
  float amax = 0.0f;
  for (int64_t r = g * group_rows; r < (g + 1) * group_rows; ++r)
    amax = row_amax[r] > amax ? row_amax[r] : amax;
  return amax;
}

/* ref_quantize_groups on a tensor whose row amax (row_amax, finite) is known: writes
 * scales[rows / group_rows] and codes[rows * cols]. */
static int quantize_known(const float *v, int64_t rows, int64_t cols, int64_t group_rows,
                          const hot_quant *q, uint64_t seed, uint32_t tag, uint32_t step,
                          const float *row_amax, const fast_config *cf, int8_t *codes, float *scales) {
  qctx x;
  memset(&x, 0, sizeof x);
  x.v = v, x.rows = rows, x.cols = cols, x.group_rows = group_rows, x.q = q;
  x.rng.seed = seed, x.rng.tag = tag, x.rng.step = step;
  x.k = cf->k;
  const int64_t groups = rows / group_rows, glen = group_rows * cols;
  if (q->rule == HOT_RULE_SAWB) {
    x.chunks = fast_cdiv(glen, HOT_REF_SUM_CHUNK);
    x.part = malloc((size_t)(2 * groups * x.chunks) * sizeof *x.part);
    if (!x.part) return HOT_REF_ENOMEM;
    fast_parallel(groups * fast_cdiv(x.chunks, 4), cf->threads, sawb_task, &x);
  }
  for (int64_t g = 0; g < groups; ++g) {
    const float amax = group_amax(row_amax, g, group_rows);
    if (q->rule == HOT_RULE_SAWB) {
      double s1 = 0.0, s2 = 0.0; /* the chunk partials in chunk order */
      for (int64_t c = 0; c < x.chunks; ++c) {
        s1 = HOT_DADD(s1, x.part[2 * (g * x.chunks + c)]);
        s2 = HOT_DADD(s2, x.part[2 * (g * x.chunks + c) + 1]);
      }
      scales[g] = hot_scale_sawb(s1, s2, (double)glen, amax, q->bits);
    } else {
      scales[g] = hot_scale(amax, q->bits);
    }
  }
  free(x.part);
  x.scales = scales;
  x.codes = codes;
  fast_parallel(fast_cdiv(rows, rows_per_task(cols)), cf->threads, quant_task, &x);
  return HOT_REF_OK;
}

/* out[r] = the max of amax[r * nb .. r * nb + nb) (the per-block amax the transform tasks took
 * of a row, all >= 0): a max is order-free, so the blocks' split does not matter. */
static void row_max(const float *amax, int64_t rows, int64_t nb, float *out) {
  for (int64_t r = 0; r < rows; ++r) {
    float m = 0.0f;
    for (int64_t j = 0; j < nb; ++j) m = amax[r * nb + j] > m ? amax[r * nb + j] : m;
    out[r] = m;
  }
}

/* ---- transforms ---------------------------------------------------------------------------- */

typedef struct {
  const hot_layer_plan *pl;
  const void *src;
  hot_dtype dt;
  int64_t cols;
  float *out;
  float **scratch; /* per thread: p x hcols floats (HLA) */
  const fast_kernels *k; /* the level's kernels (fast_config) */
  int64_t hcols; /* HLA: columns of one task (its p x hcols block: 64 KB); g' in one pass
                    (hq_g_group_task): tokens of one task */
  float *amax;    /* the amax of every output row's column block (HQ g': T x ncb, HLA: K x
                     chunks), computed while the row is in cache; NULL for w' */
  atomic_int *bad; /* set when an output value is not finite (with amax) */
  float *bias;     /* HQ g': the bias partial sums (token chunks x O), or NULL */
  /* HQ g' with the quantizer fused (hq_g_fused): out is NULL, and the second pass transforms each
   * row block again and writes its codes (codes not NULL) under scales[t / group] */
  int8_t *codes;
  float *scales; /* read by the second passes; hq_g_group_task writes its groups' */
  int64_t group;
  const hot_quant *q;
  fast_rng rng;
} tctx;

/* g' (ref_hq_transform_g): task i = token chunk i / ncb (HOT_REF_BIAS_CHUNK tokens) x column
 * block i % ncb (HQ_COLS columns, a multiple of every b): load, zero-pad to o_pad, H_b per block
 * of b; the block's amax per row into amax[t * ncb + j] (row_stats' amax and finiteness check,
 * while the row is in L1); with bias, the chunk's column sums of the raw g_y (ref_bias' partial
 * sums, tokens in order) into bias[chunk * O + o]. With out NULL the transformed block stays in
 * a buffer on the stack (the fused quantizer's first pass); with codes, the pass after the scales
 * are known: the same transform again, then each row block's codes (ref_quantize_groups' steps
 * per element: the Philox word of the element's own index, so any split gives the same codes). */
#define HQ_COLS 256
static void hq_g_row(const tctx *x, int64_t t, int64_t c0, int64_t w, int64_t real, float *row,
                     float *part) {
  const int64_t O = x->pl->O;
  if (x->dt == HOT_DT_F32 && real == w) { /* no copy: the first stages read g_y */
    const float *src = (const float *)x->src + t * O + c0;
    if (part) x->k->e->add(part, src, real);
    x->k->e->fwht_row(row, src, w, x->pl->hq.block);
  } else {
    /* real >= 1: o_pad is O rounded up to b, so no block of b columns is all padding */
    fast_load_run(x->src, x->dt, t * O + c0, real, row);
    if (part) x->k->e->add(part, row, real);
    memset(row + real, 0, (size_t)(w - real) * sizeof *row);
    x->k->e->fwht_row(row, row, w, x->pl->hq.block);
  }
}

static void hq_g_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const tctx *x = ctx;
  const hot_layer_plan *pl = x->pl;
  const int64_t O = pl->O, op = pl->hq.o_pad, ncb = fast_cdiv(op, HQ_COLS);
  const int64_t ch = i / ncb, j = i % ncb, c0 = j * HQ_COLS;
  const int64_t w = op - c0 < HQ_COLS ? op - c0 : HQ_COLS, real = O - c0 < w ? O - c0 : w;
  const int64_t t0 = ch * HOT_REF_BIAS_CHUNK;
  const int64_t t1 = t0 + HOT_REF_BIAS_CHUNK < pl->T ? t0 + HOT_REF_BIAS_CHUNK : pl->T;
  float part[HQ_COLS], buf[HQ_COLS];
  if (x->bias) memset(part, 0, sizeof part);
  for (int64_t t = t0; t < t1; ++t) {
    float *row = x->out ? x->out + t * op + c0 : buf;
    if (t + 2 < t1) fast_prefetch_run(x->src, x->dt, (t + 2) * O + c0, real);
    hq_g_row(x, t, c0, w, real, row, x->bias ? part : NULL);
    if (x->codes) {
      quant_run(x->k, &x->rng, x->q, x->scales[t / x->group], row, t * op + c0, w,
                x->codes + t * op + c0);
      continue;
    }
    float m = 0.0f;
    if (!x->k->e->amax(row, w, &m)) atomic_store(x->bad, 1);
    x->amax[t * ncb + j] = m;
  }
  if (x->bias) memcpy(x->bias + ch * O + c0, part, (size_t)real * sizeof *part);
}

/* g' in one pass (hq_quant_g, where a task can own whole scale groups): task i = tokens
 * [i * span, (i + 1) * span), span a multiple of the group and of HOT_REF_BIAS_CHUNK; each
 * group's rows loaded, transformed (hq_g_row over the whole padded row, the bias partials of
 * their chunk added in token order) and their amax taken into the thread's scratch (group x o_pad
 * floats, then O for the partials), then the group's scale (hot_scale of its amax, as the twin),
 * then its codes from the scratch while it is in the L1 or L2: the same operations per element as
 * the two passes, one load and one transform of g_y instead of two. A group with a value that is
 * not finite sets bad and gets no codes (the step fails with the twin's status). */
static void hq_g_group_task(void *ctx, int64_t i, int tid) {
  const tctx *x = ctx;
  const hot_layer_plan *pl = x->pl;
  const int64_t O = pl->O, op = pl->hq.o_pad, T = pl->T, span = x->hcols, group = x->group;
  const int64_t t0 = i * span, t1 = t0 + span < T ? t0 + span : T;
  float *scr = x->scratch[tid], *part = x->bias ? scr + group * op : NULL;
  for (int64_t g0 = t0; g0 < t1; g0 += group) {
    float amax = 0.0f;
    int ok = 1;
    for (int64_t t = g0; t < g0 + group; ++t) {
      float *row = scr + (t - g0) * op;
      if (part && t % HOT_REF_BIAS_CHUNK == 0) memset(part, 0, (size_t)O * sizeof *part);
      if (t + 2 < t1) fast_prefetch_run(x->src, x->dt, (t + 2) * O, O);
      hq_g_row(x, t, 0, op, O, row, part);
      if (part && ((t + 1) % HOT_REF_BIAS_CHUNK == 0 || t + 1 == T))
        memcpy(x->bias + (t / HOT_REF_BIAS_CHUNK) * O, part, (size_t)O * sizeof *part);
      ok &= x->k->e->amax(row, op, &amax);
    }
    if (!ok) {
      atomic_store(x->bad, 1);
      continue;
    }
    const float s = hot_scale(amax, x->q->bits);
    x->scales[g0 / group] = s;
    /* the group's rows are contiguous, in the scratch and in the codes */
    quant_run(x->k, &x->rng, x->q, s, scr, g0 * op, group * op, x->codes + g0 * op);
  }
}

/* w' (o_pad x I): block of b rows i / chunks, columns chunk i % chunks (ref_hq_transform_w);
 * each row's amax over the chunk into amax[o * chunks + chunk] while the block is in cache (the
 * row_stats of ref_quantize_groups, and its finiteness check). With out NULL the block is
 * transformed in the thread's scratch (b x W_COLS floats) and not stored (the fused quantizer's
 * first pass); with codes, the pass after the scale is known: the same transform again, then the
 * block's RTN codes under scales[0] (ref_quantize_groups' steps per element). */
static void hq_w_task(void *ctx, int64_t i, int tid) {
  const tctx *x = ctx;
  const hot_layer_plan *pl = x->pl;
  const int64_t I = pl->I, chunks = fast_cdiv(I, W_COLS), b = pl->hq.block;
  const int64_t o0 = (i / chunks) * b, c0 = (i % chunks) * W_COLS;
  const int64_t n = I - c0 < W_COLS ? I - c0 : W_COLS;
  float *blk = x->out ? x->out + o0 * I + c0 : x->scratch[tid];
  const int64_t ld = x->out ? I : n;
  const float *srcs[256] = {NULL}; /* hq.block <= 256 (plan.c) */
  for (int64_t o = o0; o < o0 + b; ++o) {
    float *row = blk + (o - o0) * ld;
    if (o >= pl->O) srcs[o - o0] = NULL;
    else if (x->dt == HOT_DT_F32) srcs[o - o0] = (const float *)x->src + o * I + c0;
    else {
      if (o + 2 < o0 + b && o + 2 < pl->O) fast_prefetch_run(x->src, x->dt, (o + 2) * I + c0, n);
      fast_load_run(x->src, x->dt, o * I + c0, n, row);
      srcs[o - o0] = row;
    }
  }
  x->k->e->fwht_cols_src(blk, (int)b, n, ld, srcs);
  for (int64_t o = o0; o < o0 + b; ++o) {
    const float *row = blk + (o - o0) * ld;
    if (x->codes) {
      x->k->e->quant(row, n, x->scales[0], hot_qmax(x->q->bits), 0, NULL, x->codes + o * I + c0);
      continue;
    }
    float m = 0.0f;
    if (!x->k->e->amax(row, n, &m)) atomic_store(x->bad, 1);
    x->amax[o * chunks + i % chunks] = m;
  }
}

/* HLA: token block i / chunks, column chunk i % chunks (ref_hla_transform): the block's p x n
 * transform in the thread's scratch, then each kept row (math row kb + j) either stored into out
 * with its amax (x->amax), or, with out NULL, its amax only (the fused quantizer's first pass),
 * or, with codes, its codes under scales[row / group] (the second pass, after the scales: the
 * same transform again, then ref_quantize_groups' steps per element, the Philox word of the
 * element's own index, so the split does not matter). */
/* Token block blk's p rows at columns [c0, c0 + n) of src, transformed down the block
 * (ref_hla_transform) into buf (p x n, row stride x->hcols). */
static void hla_block(const tctx *x, int64_t blk, int64_t c0, int64_t n, float *buf) {
  const hot_layer_plan *pl = x->pl;
  const int p = pl->hla.block, flat = pl->hla.layout == HOT_LAYOUT_FLAT;
  const int64_t cols = x->cols, hc = x->hcols;
  const int64_t per_seg = pl->hla.seg_len / p, seg = blk / per_seg, b = blk % per_seg;
  const int64_t seg_real = flat ? pl->T : pl->L, base = flat ? 0 : seg * pl->L;
  const float *srcs[HOT_MAX_P];
  for (int j = 0; j < p; ++j) {
    const int64_t pos = b * p + j;
    float *row = buf + (int64_t)j * hc;
    if (pos >= seg_real) srcs[j] = NULL;
    else if (x->dt == HOT_DT_F32) srcs[j] = (const float *)x->src + (base + pos) * cols + c0;
    else {
      if (j + 2 < p && pos + 2 < seg_real) fast_prefetch_run(x->src, x->dt, (base + pos + 2) * cols + c0, n);
      fast_load_run(x->src, x->dt, (base + pos) * cols + c0, n, row);
      srcs[j] = row;
    }
  }
  x->k->e->fwht_cols_src(buf, p, n, hc, srcs);
}

static void hla_task(void *ctx, int64_t i, int tid) {
  const tctx *x = ctx;
  const hot_layer_plan *pl = x->pl;
  const int r = pl->hla.rank;
  const int64_t cols = x->cols, hc = x->hcols, chunks = fast_cdiv(cols, hc);
  const int64_t blk = i / chunks, c0 = (i % chunks) * hc;
  const int64_t n = cols - c0 < hc ? cols - c0 : hc;
  float *buf = x->scratch[tid];
  hla_block(x, blk, c0, n, buf);
  const int64_t kb = blk * r;
  for (int j = 0; j < r; ++j) {
    const float *row = buf + (int64_t)pl->hla.rows[j] * hc;
    const int64_t idx = (kb + j) * cols + c0;
    if (x->codes) { /* the fused quantizer's second pass: the row's codes */
      quant_run(x->k, &x->rng, x->q, x->scales[(kb + j) / x->group], row, idx, n, x->codes + idx);
      continue;
    }
    if (x->out) memcpy(x->out + idx, row, (size_t)n * sizeof *x->out);
    float m = 0.0f;
    if (!x->k->e->amax(row, n, &m)) atomic_store(x->bad, 1);
    x->amax[(kb + j) * chunks + i % chunks] = m;
  }
}

/* The one-pass drivers' common part (hq_quant_g_groups, hla_codes_samples): n tasks of fn on x,
 * each thread with its own scratch of `per` floats (x->scratch, set here and cleared after):
 * HOT_REF_OK, HOT_REF_ENONFINITE when a task set x->bad, or HOT_REF_ENOMEM. */
static int run_with_scratch(tctx *x, const fast_config *cf, int64_t per, int64_t n,
                            fast_task_fn fn) {
  float *scr = fast_scratch((size_t)(cf->threads * per) * sizeof *scr);
  x->scratch = malloc((size_t)cf->threads * sizeof *x->scratch);
  int rc = scr && x->scratch ? HOT_REF_OK : HOT_REF_ENOMEM;
  if (!rc) {
    for (int t = 0; t < cf->threads; ++t) x->scratch[t] = scr + t * per;
    fast_parallel(n, cf->threads, fn, x);
    if (atomic_load(x->bad)) rc = HOT_REF_ENONFINITE;
  }
  free(x->scratch);
  x->scratch = NULL;
  fast_unscratch(scr);
  return rc;
}

/* HLA per sample in one pass (hla_codes, per-sample scales on the sample layout): task i =
 * sample i, whose group_k projected rows (its blocks' kept rows) are transformed block by block
 * (hla_block, in column chunks) into the thread's scratch with their amax, then the sample's
 * scale, then its codes from the scratch while it is in the L2 (ref_quantize_groups' steps per
 * element, the Philox word of the element's own index). A sample with a value that is not finite
 * sets bad and gets no codes. Scratch per thread: group_k x cols floats, then p x hcols. */
static void hla_group_task(void *ctx, int64_t i, int tid) {
  const tctx *x = ctx;
  const hot_layer_plan *pl = x->pl;
  const int p = pl->hla.block, r = pl->hla.rank;
  const int64_t cols = x->cols, hc = x->hcols, gk = pl->hla.group_k, per_seg = pl->hla.seg_len / p;
  float *rows = x->scratch[tid], *buf = rows + gk * cols;
  float amax = 0.0f;
  int ok = 1;
  for (int64_t b = 0; b < per_seg; ++b)
    for (int64_t c0 = 0; c0 < cols; c0 += hc) {
      const int64_t n = cols - c0 < hc ? cols - c0 : hc;
      hla_block(x, i * per_seg + b, c0, n, buf);
      for (int j = 0; j < r; ++j) {
        const float *row = buf + (int64_t)pl->hla.rows[j] * hc;
        memcpy(rows + (b * r + j) * cols + c0, row, (size_t)n * sizeof *row);
        ok &= x->k->e->amax(row, n, &amax);
      }
    }
  if (!ok) {
    atomic_store(x->bad, 1);
    return;
  }
  x->scales[i] = hot_scale(amax, x->q->bits);
  /* the sample's rows are contiguous, in the scratch and in the codes */
  quant_run(x->k, &x->rng, x->q, x->scales[i], rows, i * gk * cols, gk * cols,
            x->codes + i * gk * cols);
}

/* hla_codes in one pass per sample (hla_group_task) when its scales are per sample on the
 * sample layout, the rule is absmax, a sample's projected rows fit 1.5 MB and there are at least
 * two samples per thread: no projection stored, one transform. Returns HLA_TWO_PASSES when it
 * does not apply (nothing written), else the status (OK, HOT_REF_ENONFINITE, HOT_REF_ENOMEM). */
#define HLA_TWO_PASSES 1000
static int hla_codes_samples(const hot_layer_plan *pl, const void *src, hot_dtype dt, int64_t cols,
                             const hot_quant *q, uint64_t seed, uint32_t tag, uint32_t step,
                             const fast_config *cf, int8_t *codes, float *scale) {
  const int64_t G = pl->hla.groups, gk = pl->hla.group_k;
  int64_t hc = 16384 / pl->hla.block; /* hla_transform's column chunk */
  if (hc < 8) hc = 8;
  const int64_t per = gk * cols + pl->hla.block * hc; /* scratch floats per thread */
  if (q->gran != HOT_GRAN_SAMPLE || q->rule != HOT_RULE_ABSMAX || !quant_ok(q) ||
      pl->hla.layout != HOT_LAYOUT_SAMPLE || G != pl->B || G * gk != pl->hla.k ||
      per * (int64_t)sizeof(float) > ((int64_t)3 << 19) || (cf->threads > 1 && G < 2 * cf->threads))
    return HLA_TWO_PASSES;
  atomic_int bad;
  atomic_init(&bad, 0);
  tctx x = {pl, src, dt, cols, NULL, NULL, cf->k, hc, NULL, &bad, NULL, NULL, NULL, 0, NULL, {0, 0, 0}};
  x.codes = codes, x.scales = scale, x.q = q;
  x.rng.seed = seed, x.rng.tag = tag, x.rng.step = step;
  return run_with_scratch(&x, cf, per, G, hla_group_task);
}

/* The HLA projection of src (T x cols) into out (hla.k x cols), with the row amax of out in
 * row_amax[hla.k]: HOT_REF_ENONFINITE when a value of out is not finite. With out NULL, the row
 * amax only. With fq not NULL (out NULL, row_amax unused), the fused quantizer's second pass:
 * fq's codes under its scales, its rng and group set (hla_task). */
static int hla_transform(const hot_layer_plan *pl, const void *src, hot_dtype dt, int64_t cols,
                         const fast_config *cf, float *out, float *row_amax, const tctx *fq) {
  atomic_int bad;
  atomic_init(&bad, 0);
  tctx x = {pl, src, dt, cols, out, NULL, cf->k, 0, NULL, &bad, NULL, NULL, NULL, 0, NULL, {0, 0, 0}};
  if (fq) x.codes = fq->codes, x.scales = fq->scales, x.group = fq->group, x.q = fq->q, x.rng = fq->rng;
  x.hcols = 16384 / pl->hla.block; /* 64 KB of floats per task (L2): runs of 1 KB of each
                                       source row with p = 64 (256 B, at 16 KB, were too short
                                       for the prefetcher on rows a page or more apart) */
  if (x.hcols < 8) x.hcols = 8;
  const int64_t K = pl->hla.k, chunks = fast_cdiv(cols, x.hcols);
  x.amax = fq ? NULL : malloc((size_t)(K * chunks) * sizeof *x.amax);
  x.scratch = calloc((size_t)cf->threads, sizeof *x.scratch);
  int rc = x.scratch && (fq || x.amax) ? HOT_REF_OK : HOT_REF_ENOMEM;
  for (int t = 0; t < cf->threads && !rc; ++t)
    if (!(x.scratch[t] = malloc((size_t)(pl->hla.block * x.hcols) * sizeof(float))))
      rc = HOT_REF_ENOMEM;
  if (!rc) fast_parallel(pl->hla.blocks * chunks, cf->threads, hla_task, &x);
  if (!rc && atomic_load(&bad)) rc = HOT_REF_ENONFINITE;
  if (!rc && !fq) row_max(x.amax, K, chunks, row_amax);
  if (x.scratch)
    for (int t = 0; t < cf->threads; ++t) free(x.scratch[t]);
  free(x.scratch);
  free(x.amax);
  return rc;
}

/* Above this many bytes of the projection (hla.k x cols fp32) hla_codes does not store it: with
 * the absmax rule it runs the transform twice, once for the row amax and again into the codes
 * (hla_task), as hq_quant_g does for g'. A stored projection that large goes out to memory and
 * back (on the Xeon measured, its stores alone cost as much as the transform: the stage 3.75 ms,
 * 1.9 without them, at 900 x 3072); a smaller one is read back from the caches and costs less
 * than a second transform. fast_set_hla_fuse_bytes (fast.h) moves the bound (benchmarks, tests). */
static atomic_llong g_hla_fuse_bytes = FAST_HLA_FUSE_BYTES;
static int64_t hla_fuse_bytes(void) { return (int64_t)atomic_load(&g_hla_fuse_bytes); }
void fast_set_hla_fuse_bytes(int64_t n) {
  atomic_store(&g_hla_fuse_bytes, n >= 0 ? (long long)n : FAST_HLA_FUSE_BYTES);
}

/* project_quant of hla_project_ref.c up to the codes: the K x cols math codes and the
 * hla.groups scales (a per-tensor scale repeated). */
static int hla_codes(const hot_layer_plan *pl, const void *src, hot_dtype dt, int64_t cols,
                     const hot_quant *q, uint64_t seed, uint32_t tag, uint32_t step, const fast_config *cf,
                     int8_t *codes, float *scale, int prof) {
  const int64_t K = pl->hla.k, G = pl->hla.groups, gk = pl->hla.group_k;
  const int sample = q->gran == HOT_GRAN_SAMPLE;
  if (q->gran != HOT_GRAN_TENSOR && !sample) return HOT_REF_ESHAPE;
  if (sample) { /* one pass per sample where a task can own a whole sample */
    const fast_prof_t ts = fast_prof_now();
    const int rc = hla_codes_samples(pl, src, dt, cols, q, seed, tag, step, cf, codes, scale);
    if (rc != HLA_TWO_PASSES) {
      if (prof >= 0) fast_prof_add(prof + 1, ts);
      return rc;
    }
  }
  const int fuse = q->rule == HOT_RULE_ABSMAX && K * cols * (int64_t)sizeof(float) > hla_fuse_bytes();
  float *t = fuse ? NULL : fast_scratch((size_t)(K * cols) * sizeof *t);
  float *ra = malloc((size_t)K * sizeof *ra);
  int rc = (fuse || t) && ra ? HOT_REF_OK : HOT_REF_ENOMEM;
  fast_prof_t t0 = fast_prof_now();
  if (!rc) rc = hla_transform(pl, src, dt, cols, cf, t, ra, NULL); /* also the row amax */
  if (prof >= 0) t0 = fast_prof_add(prof, t0);
  const int64_t group = sample ? gk : K;
  /* ref_quantize_groups' checks in its order: arguments, then finiteness (hla_transform's) */
  if ((!rc || rc == HOT_REF_ENONFINITE) && (!quant_ok(q) || group <= 0 || K % group))
    rc = HOT_REF_EARG;
  if (!rc && !fuse) rc = quantize_known(t, K, cols, group, q, seed, tag, step, ra, cf, codes, scale);
  if (!rc && fuse) { /* absmax scales from the row amax (quantize_known's), then the codes */
    for (int64_t g = 0; g < K / group; ++g) scale[g] = hot_scale(group_amax(ra, g, group), q->bits);
    tctx fq;
    memset(&fq, 0, sizeof fq);
    fq.codes = codes, fq.scales = scale, fq.group = group, fq.q = q;
    fq.rng.seed = seed, fq.rng.tag = tag, fq.rng.step = step;
    rc = hla_transform(pl, src, dt, cols, cf, NULL, NULL, &fq);
  }
  if (prof >= 0) fast_prof_add(prof + 1, t0);
  if (!rc)
    for (int64_t j = sample ? G : 1; j < G; ++j) scale[j] = scale[0];
  fast_unscratch(t);
  free(ra);
  return rc;
}

/* Stores K x cols math codes transposed into the saved layout (plan_saved_scale_offset): code row
 * c holds the K codes of column c in math-row order, nothing padded. */
typedef struct {
  const hot_layer_plan *pl;
  const int8_t *codes;
  int64_t cols;
  int8_t *dst;
  const fast_kernels *k; /* the level's kernels (fast_config) */
} sctx;

static void store_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const sctx *x = ctx;
  const int64_t K = x->pl->hla.k, c0 = i * 64, c1 = c0 + 64 < x->cols ? c0 + 64 : x->cols;
  x->k->e->transpose_bytes(x->codes + c0, K, c1 - c0, x->cols, x->dst + c0 * K, K);
}

/* ---- GEMM epilogues (CONTRACT.md 14) ------------------------------------------------------- */

typedef struct {
  const float *row_scale; /* HQ: f_t per row */
  const float *seg_scale; /* HLA: c_j per segment */
  float *out;
  int64_t ldo;
  const fast_kernels *k; /* the level's kernels (fast_config) */
  int64_t last_seg;       /* the segment whose sums complete the output (g_w: segs - 1) */
  atomic_int *inf;        /* set when a completed output value is not finite (an overflow) */
} ectx;

static void epi_gx(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                   const int32_t *acc, int64_t ldc) {
  (void)seg;
  const ectx *e = ctx;
  if (!e->k->e->scale_tile(e->out + m0 * e->ldo + n0, e->ldo, acc, ldc, mc, nc, e->row_scale + m0,
                           0.0f, 0))
    atomic_store(e->inf, 1);
}

static void epi_gw(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                   const int32_t *acc, int64_t ldc) {
  const ectx *e = ctx;
  if (!e->k->e->scale_tile(e->out + m0 * e->ldo + n0, e->ldo, acc, ldc, mc, nc, NULL,
                           e->seg_scale[seg],
                           (seg > 0 ? FAST_EPI_ADD : 0) | (seg < e->last_seg ? FAST_EPI_MORE : 0)) &&
      seg == e->last_seg)
    atomic_store(e->inf, 1);
}

/* ---- the hq family: q_g' (hq_g) and q_w' (hq_w) -------------------------------------------- */

/* q_w' (ref_hq_quant_w): RTN, per tensor, into codes qw and its scale *sw; ra (o_pad) is the
 * caller's scratch. The row amax is taken by the transform's tasks. With the absmax rule w' is
 * never stored: the transform runs once for the amax and again, block by block in each thread's
 * scratch, into the codes (hq_w_task; the same operations, so the same bits); SAWB's sums need
 * the whole w', which is then stored and quantized as in the twin. */
static int hq_quant_w(const hot_layer_plan *pl, const void *w, hot_dtype dt,
                      const fast_config *call_cf, float *ra, int8_t *qw, float *sw) {
  const int64_t I = pl->I, op = pl->hq.o_pad, wch = fast_cdiv(I, W_COLS), b = pl->hq.block;
  /* w' is small beside g' in most layers: on one thread when it touches fewer values than the
   * config's inline bound, even where the call runs on the pool (a second thread would leave
   * half of w' in its own caches, which the GEMM's packing of w' then reads across cores: at
   * 512 x 128 that took 45 us more than the 10 us the second thread saved) */
  const fast_config w_cf = fast_config_for(call_cf, op * I), *cf = &w_cf;
  const int fuse = pl->hq.w.rule == HOT_RULE_ABSMAX;
  fast_prof_t t0 = fast_prof_now();
  atomic_int bad;
  atomic_init(&bad, 0);
  float *wt = fuse ? NULL : fast_scratch((size_t)(op * I) * sizeof *wt);
  float *scr = fuse ? fast_scratch((size_t)(cf->threads * b * W_COLS) * sizeof *scr) : NULL;
  float **per = fuse ? malloc((size_t)cf->threads * sizeof *per) : NULL;
  tctx tw = {pl, w, dt, I, wt, per, cf->k, 0, NULL, &bad, NULL, NULL, NULL, 0, NULL, {0, 0, 0}};
  tw.amax = malloc((size_t)(op * wch) * sizeof *tw.amax);
  int rc = tw.amax && (fuse ? scr && per : wt != NULL) ? HOT_REF_OK : HOT_REF_ENOMEM;
  for (int t = 0; !rc && fuse && t < cf->threads; ++t) per[t] = scr + (int64_t)t * b * W_COLS;
  if (!rc) {
    fast_parallel((op / b) * wch, cf->threads, hq_w_task, &tw);
    row_max(tw.amax, op, wch, ra);
  }
  free(tw.amax);
  t0 = fast_prof_add(FAST_ST_HQ_W, t0);
  hot_quant q = pl->hq.w;
  q.round = HOT_ROUND_RTN;
  /* ref_quantize_groups' checks in its order: arguments, then finiteness */
  if (!rc) rc = !quant_ok(&q) ? HOT_REF_EARG : atomic_load(&bad) ? HOT_REF_ENONFINITE : HOT_REF_OK;
  if (!rc && !fuse) rc = quantize_known(wt, op, I, op, &q, 0, 0, 0, ra, cf, qw, sw);
  if (!rc && fuse) {
    *sw = hot_scale(group_amax(ra, 0, op), q.bits);
    tw.amax = NULL, tw.codes = qw, tw.scales = sw, tw.q = &q;
    fast_parallel((op / b) * wch, cf->threads, hq_w_task, &tw);
  }
  if (!rc) fast_prof_add(FAST_ST_HQ_WQ, t0);
  fast_unscratch(wt);
  fast_unscratch(scr);
  free(per);
  return rc;
}

/* hq_quant_g in one pass (hq_g_group_task) when tasks can own whole groups: a span of tokens
 * that is a multiple of the group and of HOT_REF_BIAS_CHUNK (so that each bias partial is one
 * task's), at most 4096 tokens, with a group's transformed rows within 1.5 MB (of the 2 MB L2 of
 * the Xeons measured: 128 tokens of 2048 columns fit) and at least two spans per thread (else the
 * two passes' finer split is the better one). Per token (ROW) every span qualifies; per sample
 * when lcm(L, 256) <= 4096 (L = 128, not 197) and a sample's rows fit; per tensor only in small
 * layers. Returns HQ_G_TWO_PASSES when it does not apply (nothing written), else the status:
 * OK, HOT_REF_ENONFINITE (some value of g' not finite), HOT_REF_ENOMEM. */
#define HQ_G_TWO_PASSES 1000
static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    const int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}
static int hq_quant_g_groups(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, int64_t group,
                             uint64_t seed, uint32_t tag, uint32_t step, const fast_config *cf,
                             float *g_b, int8_t *qg, float *sg) {
  const int64_t T = pl->T, O = pl->O, op = pl->hq.o_pad, ch = HOT_REF_BIAS_CHUNK;
  if (group <= 0 || T % group) return HQ_G_TWO_PASSES;
  const int64_t span = group / gcd64(group, ch) * ch; /* lcm(group, ch) */
  const int64_t per = group * op + O;                 /* scratch floats per thread */
  if (span > 4096 || per * (int64_t)sizeof(float) > ((int64_t)3 << 19) ||
      (cf->threads > 1 && fast_cdiv(T, span) < 2 * cf->threads))
    return HQ_G_TWO_PASSES;
  fast_prof_t t0 = fast_prof_now();
  atomic_int bad;
  atomic_init(&bad, 0);
  const int64_t nch = fast_cdiv(T, ch);
  tctx x = {pl, g_y, dt, op, NULL, NULL, cf->k, span, NULL, &bad, NULL, NULL, NULL, 0, NULL, {0, 0, 0}};
  if (g_b) x.bias = malloc((size_t)(nch * O) * sizeof *x.bias);
  x.codes = qg, x.scales = sg, x.group = group, x.q = &pl->hq.g;
  x.rng.seed = seed, x.rng.tag = tag, x.rng.step = step;
  int rc = !g_b || x.bias ? run_with_scratch(&x, cf, per, fast_cdiv(T, span), hq_g_group_task)
                          : HOT_REF_ENOMEM;
  for (int64_t o = 0; !rc && g_b && o < O; ++o) { /* ref_bias: chunk partials in chunk order */
    float tot = 0.0f;
    for (int64_t c = 0; c < nch; ++c) tot = HOT_ADD(tot, x.bias[c * O + o]);
    g_b[o] = tot;
  }
  free(x.bias);
  if (rc) return rc;
  for (int64_t t = T - 1; group > 1 && t >= 0; --t) sg[t] = sg[t / group];
  fast_prof_add(FAST_ST_HQ_GQ, t0);
  return HOT_REF_OK;
}

/* q_g' (ref_hq_quant_g) into codes qg and the per-token scales sg[T] (a group's scale repeated
 * on its rows); with g_b not NULL, also the bias (ref_bias) from the same pass over g_y. ra (T)
 * is the caller's scratch. With the absmax rule the transform runs twice and g' is never stored:
 * once for the row amax (and the bias), and again, after the scales, block by block into the
 * codes while the block is in L1 (hq_g_task; the same operations, so the same bits). SAWB's sums
 * need the whole g', which is then stored and quantized as in the twin. */
static int hq_quant_g(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, hot_gran gran,
                      uint64_t seed, uint32_t step, const fast_config *cf, float *g_b, float *ra,
                      int8_t *qg, float *sg) {
  const int64_t T = pl->T, op = pl->hq.o_pad;
  const int fuse = pl->hq.g.rule == HOT_RULE_ABSMAX;
  const int64_t group = gran == HOT_GRAN_ROW ? 1 : gran == HOT_GRAN_SAMPLE ? pl->L : T;
  const uint32_t tag = (uint32_t)pl->layer_id * 16u + HOT_TENSOR_HQ_G;
  if (fuse && quant_ok(&pl->hq.g)) { /* one pass where tasks can own whole groups */
    const int rc = hq_quant_g_groups(pl, g_y, dt, group, seed, tag, step, cf, g_b, qg, sg);
    if (rc != HQ_G_TWO_PASSES) return rc;
  }
  float *gt = fuse ? NULL : fast_scratch((size_t)(T * op) * sizeof *gt);
  fast_prof_t t0 = fast_prof_now();
  atomic_int bad;
  atomic_init(&bad, 0);
  const int64_t ncb = fast_cdiv(op, HQ_COLS), nch = fast_cdiv(T, HOT_REF_BIAS_CHUNK);
  tctx tg = {pl, g_y, dt, op, gt, NULL, cf->k, 0, NULL, &bad, NULL, NULL, NULL, 0, NULL, {0, 0, 0}};
  tg.amax = malloc((size_t)(T * ncb) * sizeof *tg.amax);
  if (g_b) tg.bias = malloc((size_t)(nch * pl->O) * sizeof *tg.bias);
  int rc = tg.amax && (!g_b || tg.bias) && (fuse || gt) ? HOT_REF_OK : HOT_REF_ENOMEM;
  if (!rc) {
    fast_parallel(nch * ncb, cf->threads, hq_g_task, &tg);
    row_max(tg.amax, T, ncb, ra);
  }
  for (int64_t o = 0; !rc && g_b && o < pl->O; ++o) { /* ref_bias: chunk partials in chunk order */
    float tot = 0.0f;
    for (int64_t c = 0; c < nch; ++c) tot = HOT_ADD(tot, tg.bias[c * pl->O + o]);
    g_b[o] = tot;
  }
  free(tg.amax);
  free(tg.bias);
  t0 = fast_prof_add(FAST_ST_HQ_G, t0);
  if (!rc && atomic_load(&bad)) rc = HOT_REF_ENONFINITE;
  if (!rc && !quant_ok(&pl->hq.g)) rc = HOT_REF_EARG;
  if (!rc && !fuse) rc = quantize_known(gt, T, op, group, &pl->hq.g, seed, tag, step, ra, cf, qg, sg);
  if (!rc && fuse) {
    for (int64_t g = 0; g < T / group; ++g) sg[g] = hot_scale(group_amax(ra, g, group), pl->hq.g.bits);
    tg.amax = NULL, tg.bias = NULL;
    tg.codes = qg, tg.scales = sg, tg.group = group, tg.q = &pl->hq.g;
    tg.rng.seed = seed, tg.rng.tag = tag, tg.rng.step = step;
    fast_parallel(nch * ncb, cf->threads, hq_g_task, &tg);
  }
  fast_unscratch(gt);
  if (rc) return rc;
  for (int64_t t = T - 1; group > 1 && t >= 0; --t) sg[t] = sg[t / group];
  fast_prof_add(FAST_ST_HQ_GQ, t0);
  return HOT_REF_OK;
}

/* q_g' (hq_quant_g) into Q_G, s_g (one per row, T) into S_G; when the bias step runs, its
 * sums too (ref_bias' chunk partials, from the same pass over g_y) into GB: the bias step copies
 * them out once every step before it has succeeded (g_b is written only on success, as the
 * twin's; the status is this step's, which sees every non-finite g_y value first). */
static int hq_g_step(fast_call *c) {
  const hot_layer_plan *pl = c->pl;
  const int64_t T = pl->T, op = pl->hq.o_pad;
  const int with_bias = (c->runs >> HOT_K_BIAS) & 1u;
  float *ra = malloc((size_t)T * sizeof *ra);
  int8_t *qg = fast_call_alloc(c, HOT_LB_Q_G, (size_t)(T * op), 1);
  float *sg = fast_call_alloc(c, HOT_LB_S_G, (size_t)T * sizeof *sg, 0);
  float *gb = with_bias ? fast_call_alloc(c, HOT_LB_GB, (size_t)pl->O * sizeof *gb, 0) : NULL;
  int rc = HOT_REF_ENOMEM;
  if (ra && qg && sg && (!with_bias || gb)) {
    rc = hq_quant_g(pl, c->g_y, c->dt, c->gran, c->seed, c->step, c->cf, gb, ra, qg, sg);
    if (gb) c->fused |= 1u << HOT_K_BIAS;
  }
  free(ra);
  return rc;
}

/* q_w' (hq_quant_w): RTN, per tensor, into Q_W and its scale into S_W, with its SAWB scale
 * when the rule is SAWB (the sawb_w steps: quantize_known's SAWB sums). */
static int hq_w_step(fast_call *c) {
  const hot_layer_plan *pl = c->pl;
  const int64_t I = pl->I, op = pl->hq.o_pad;
  float *ra = malloc((size_t)op * sizeof *ra);
  int8_t *qw = fast_call_alloc(c, HOT_LB_Q_W, (size_t)(op * I), 1);
  float *sw = fast_call_alloc(c, HOT_LB_S_W, sizeof *sw, 0);
  int rc = ra && qw && sw ? hq_quant_w(pl, c->w, c->dt, c->cf, ra, qw, sw) : HOT_REF_ENOMEM;
  free(ra);
  return rc;
}

int fast_step_hq(fast_call *c, const hot_step *s) {
  if (c->pl->fmt == HOT_FMT_NVFP4) /* CONTRACT.md 20 */
    return fast_nvfp4_hq(c, s->role == HOT_K_HQ_G);
  return s->role == HOT_K_HQ_G ? hq_g_step(c) : s->role == HOT_K_HQ_W ? hq_w_step(c) : HOT_REF_EARG;
}

/* ---- the hla family: q_x^ (abc_x, save) and q_g^ (hla_g) ------------------------------------ */

/* abc_x: the codes of x (RTN), stored transposed into the saved layout, and s_x^. */
static int abc_x_step(fast_call *c) {
  const hot_layer_plan *pl = c->pl;
  hot_ref_saved *out = c->save_out;
  const int64_t I = pl->I, K = pl->hla.k;
  if (!out) return HOT_REF_EARG;
  int8_t *dst = c->save_codes ? c->save_codes : (out->q_x = malloc((size_t)(I * K)));
  out->s_x = malloc((size_t)pl->hla.groups * sizeof *out->s_x);
  int8_t *codes = fast_call_alloc(c, HOT_LB_Q_HX, (size_t)(K * I), 1);
  if (!dst || !out->s_x || !codes) return HOT_REF_ENOMEM; /* the caller frees out */
  hot_quant q = pl->hla.x;
  q.round = HOT_ROUND_RTN;
  int rc = hla_codes(pl, c->x, c->dt, I, &q, 0, 0, 0, c->cf, codes, out->s_x, -1);
  if (!rc) {
    sctx s = {pl, codes, I, dst, c->cf->k};
    fast_parallel(fast_cdiv(I, 64), c->cf->threads, store_task, &s);
  }
  return rc;
}

/* hla_g: q_g^ (ref_hla_quant_g) into Q_HG, s_g^ (hla.groups) into S_HG. */
static int hla_g_step(fast_call *c) {
  const hot_layer_plan *pl = c->pl;
  int8_t *qg = fast_call_alloc(c, HOT_LB_Q_HG, (size_t)(pl->hla.k * pl->O), 1);
  float *sg = fast_call_alloc(c, HOT_LB_S_HG, (size_t)pl->hla.groups * sizeof *sg, 0);
  if (!qg || !sg) return HOT_REF_ENOMEM;
  const uint32_t tag = (uint32_t)pl->layer_id * 16u + HOT_TENSOR_HLA_G;
  return hla_codes(pl, c->g_y, c->dt, pl->O, &pl->hla.g, c->seed, tag, c->step, c->cf, qg, sg,
                   FAST_ST_HLA_G);
}

int fast_step_hla(fast_call *c, const hot_step *s) {
  if (c->pl->fmt == HOT_FMT_NVFP4) /* CONTRACT.md 20 */
    return fast_nvfp4_hla(c, s->role == HOT_K_HLA_G);
  return s->role == HOT_K_HLA_G ? hla_g_step(c) : s->role == HOT_K_ABC_X ? abc_x_step(c)
                                                                         : HOT_REF_EARG;
}

/* ---- the sawb and abc_unpack families: done by the passes around them ----------------------- */

/* sawb_w / sawb_x: the SAWB scales are quantize_known's (the canonical chunk sums of
 * ref_quantize_groups), computed in hq_w's and abc_x's own pass, which the table runs first. */
int fast_step_sawb(fast_call *c, const hot_step *s) {
  (void)c;
  (void)s;
  return HOT_REF_OK;
}

/* abc_unpack: the g_w GEMM's packing reads the saved codes in place (a strided B operand: code
 * row c holds the K codes of column c), which is the layout change the unpack makes on the GPU. */
int fast_step_abc_unpack(fast_call *c, const hot_step *s) {
  (void)c;
  (void)s;
  return HOT_REF_OK;
}

/* ---- the gemm family: g_x (gemm_gx) and g_w (gemm_gw) -------------------------------------- */

/* g_x = q_g' . q_w' with the HQ epilogue (ref_gemm_gx); releases q_g' and q_w'. */
static int gemm_gx_step(fast_call *c) {
  const hot_layer_plan *pl = c->pl;
  const int64_t T = pl->T, I = pl->I, op = pl->hq.o_pad;
  float *sg = c->buf[HOT_LB_S_G];
  const float *sw = c->buf[HOT_LB_S_W];
  const int8_t *qg = c->buf[HOT_LB_Q_G], *qw = c->buf[HOT_LB_Q_W];
  if (!sg || !sw || !qg || !qw) return HOT_REF_EARG;
  const float c_w = HOT_DIV(*sw, HOT_I2F(pl->hq.block));
  for (int64_t t = 0; t < T; ++t) sg[t] = HOT_MUL(sg[t], c_w);
  ectx e = {sg, NULL, c->g_x, I, c->cf->k, 0, &c->inf_x};
  const int8_t *a_seg[1] = {qg}, *b_seg[1] = {qw};
  fast_igemm_op g = {T, I, op, 1, a_seg, op, 1, b_seg, 1, I, hot_qmax(pl->hq.g.bits),
                     hot_qmax(pl->hq.w.bits), epi_gx, &e, FAST_ST_GX_PACK};
  c->wrote |= 1u << HOT_LB_GX;
  const int rc = fast_igemm(c->cf, &g);
  fast_call_release(c, HOT_LB_Q_G);
  fast_call_release(c, HOT_LB_Q_W);
  return rc;
}

/* g_w = q_g^T . q_x^ with the HLA epilogue (ref_gemm_gw): q_x^ the saved codes in place, or
 * without ABC the codes of the kept x, projected now (abc_x's work in the backward). */
static int gemm_gw_step(fast_call *c) {
  const hot_layer_plan *pl = c->pl;
  const hot_ref_saved *saved = c->saved;
  const int64_t K = pl->hla.k, O = pl->O, I = pl->I, G = pl->hla.groups, gk = pl->hla.group_k;
  const int8_t *qg = c->buf[HOT_LB_Q_HG], *qx = NULL;
  const float *sg = c->buf[HOT_LB_S_HG], *sx = saved->s_x;
  if (!qg || !sg) return HOT_REF_EARG;
  if (!saved->q_x) { /* no ABC: the x^ codes of the kept x, used in math layout */
    int8_t *q = fast_call_alloc(c, HOT_LB_Q_HX, (size_t)(K * I), 1);
    float *so = fast_call_alloc(c, HOT_LB_S_X, (size_t)G * sizeof *so, 0);
    if (!q || !so) return HOT_REF_ENOMEM;
    hot_quant qxq = pl->hla.x;
    qxq.round = HOT_ROUND_RTN;
    const fast_prof_t t0 = fast_prof_now();
    const int rc = hla_codes(pl, saved->x, HOT_DT_F32, I, &qxq, 0, 0, 0, c->cf, q, so, -1);
    fast_prof_add(FAST_ST_HLA_X, t0);
    if (rc) return rc;
    qx = q;
    sx = so;
  } else if (!sx) {
    return HOT_REF_EARG;
  }
  float *cs = malloc((size_t)G * sizeof *cs);
  const int8_t **a_seg = malloc((size_t)G * sizeof *a_seg), **b_seg = malloc((size_t)G * sizeof *b_seg);
  int rc = HOT_REF_ENOMEM;
  if (cs && a_seg && b_seg) {
    const int64_t segs = pl->hla.gemm.segmented ? G : 1, seg_k = K / segs;
    for (int64_t j = 0; j < segs; ++j) {
      cs[j] = HOT_DIV(HOT_MUL(sg[j], sx[j]), HOT_I2F(pl->hla.block));
      a_seg[j] = qg + j * seg_k * O;
      /* the saved codes: I rows of K, segment j at j * group_k (seg_k = group_k when segmented) */
      b_seg[j] = qx ? qx + j * seg_k * I : saved->q_x + j * gk;
    }
    ectx e = {NULL, cs, c->g_w, I, c->cf->k, segs - 1, &c->inf_w};
    fast_igemm_op g = {O, I, seg_k, segs, a_seg, 1, O, b_seg, qx ? 1 : K,
                       qx ? I : 1, hot_qmax(pl->hla.g.bits), qx ? hot_qmax(pl->hla.x.bits) : 127,
                       epi_gw, &e, FAST_ST_GW_PACK};
    c->wrote |= 1u << HOT_LB_GW;
    rc = fast_igemm(c->cf, &g);
  }
  free(cs);
  free(a_seg);
  free(b_seg);
  return rc;
}

int fast_step_gemm(fast_call *c, const hot_step *s) {
  if (c->pl->fmt == HOT_FMT_NVFP4) /* CONTRACT.md 20 */
    return fast_nvfp4_gemm(c, s->role == HOT_K_GEMM_GX);
  return s->role == HOT_K_GEMM_GX ? gemm_gx_step(c) : s->role == HOT_K_GEMM_GW ? gemm_gw_step(c)
                                                                                : HOT_REF_EARG;
}

/* ---- g_b (ref_bias) ----------------------------------------------------------------------- */

typedef struct {
  const hot_layer_plan *pl;
  const void *g_y;
  hot_dtype dt;
  float *g_b;
  const fast_kernels *k; /* the level's kernels (fast_config) */
  atomic_int bad;
} bctx;

static void bias_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  bctx *x = ctx;
  const int64_t T = x->pl->T, O = x->pl->O, o0 = i * COLS_CHUNK;
  const int64_t n = O - o0 < COLS_CHUNK ? O - o0 : COLS_CHUNK;
  float part[COLS_CHUNK], tot[COLS_CHUNK], tmp[COLS_CHUNK];
  int good = 1;
  memset(tot, 0, sizeof tot);
  for (int64_t t0 = 0; t0 < T; t0 += HOT_REF_BIAS_CHUNK) {
    const int64_t t1 = t0 + HOT_REF_BIAS_CHUNK < T ? t0 + HOT_REF_BIAS_CHUNK : T;
    memset(part, 0, sizeof part);
    for (int64_t t = t0; t < t1; ++t) {
      const float *v = tmp;
      if (x->dt == HOT_DT_F32) v = (const float *)x->g_y + t * O + o0;
      else fast_load_run(x->g_y, x->dt, t * O + o0, n, tmp);
      good &= x->k->e->add(part, v, n);
    }
    for (int64_t o = 0; o < n; ++o) tot[o] = HOT_ADD(tot[o], part[o]);
  }
  if (!good) atomic_store(&x->bad, 1);
  memcpy(x->g_b + o0, tot, (size_t)n * sizeof *tot);
}

static int bias(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, const fast_config *cf, float *g_b) {
  bctx x;
  memset(&x, 0, sizeof x);
  x.pl = pl, x.g_y = g_y, x.dt = dt, x.g_b = g_b, x.k = cf->k;
  fast_parallel(fast_cdiv(pl->O, COLS_CHUNK), cf->threads, bias_task, &x);
  return atomic_load(&x.bad) ? HOT_REF_ENONFINITE : HOT_REF_OK;
}

/* g_b: the sums hq_g's pass took (when it ran), else ref_bias' own pass over g_y. */
int fast_step_bias(fast_call *c, const hot_step *s) {
  (void)s;
  const fast_prof_t t0 = fast_prof_now();
  int rc = HOT_REF_OK;
  c->wrote |= 1u << HOT_LB_GB;
  if ((c->fused >> HOT_K_BIAS) & 1u) memcpy(c->g_b, c->buf[HOT_LB_GB], (size_t)c->pl->O * sizeof *c->g_b);
  else rc = bias(c->pl, c->g_y, c->dt, c->cf, c->g_b);
  fast_prof_add(FAST_ST_BIAS, t0);
  return rc;
}

/* ---- loads and the plain (fp64) products ------------------------------------------------------ */

typedef struct {
  const void *src;
  hot_dtype dt;
  int64_t n;
  float *dst;
  atomic_int bad;
  int check;
} lctx;

static void load_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  lctx *x = ctx;
  const int64_t e0 = i * 65536, n = x->n - e0 < 65536 ? x->n - e0 : 65536;
  fast_load_run(x->src, x->dt, e0, n, x->dst + e0);
  if (x->check)
    for (int64_t e = e0; e < e0 + n; ++e)
      if (!isfinite(x->dst[e])) atomic_store(&x->bad, 1);
}

/* dst = n elements of src as fp32; with check, HOT_REF_ENONFINITE for a non-finite one. */
static int load_all(const void *src, hot_dtype dt, int64_t n, int check, const fast_config *cf, float *dst) {
  lctx x;
  memset(&x, 0, sizeof x);
  x.src = src, x.dt = dt, x.n = n, x.dst = dst, x.check = check;
  fast_parallel(fast_cdiv(n, 65536), cf->threads, load_task, &x);
  return atomic_load(&x.bad) ? HOT_REF_ENONFINITE : HOT_REF_OK;
}

/* backward_plain of layer_ref.c: the fp64 product rounded to fp32. */
static int backward_plain(const hot_layer_plan *pl, int gx, const void *g_y, const void *other,
                          hot_dtype dt_other, hot_dtype dt, const fast_config *cf, float *out) {
  const int64_t T = pl->T, O = pl->O, I = pl->I, n = gx ? T * I : O * I, nm = gx ? O * I : T * I;
  float *g = fast_scratch((size_t)(T * O) * sizeof *g), *m = fast_scratch((size_t)nm * sizeof *m);
  double *r = fast_scratch((size_t)n * sizeof *r);
  int rc = HOT_REF_ENOMEM;
  if (g && m && r) {
    load_all(g_y, dt, T * O, 0, cf, g);
    load_all(other, dt_other, nm, 0, cf, m);
    rc = gx ? fast_exact_gx(cf, T, O, I, g, m, r) : fast_exact_gw(cf, T, O, I, g, m, r);
    for (int64_t i = 0; i < n && !rc; ++i) {
      out[i] = (float)r[i];
      if (!isfinite(out[i])) rc = HOT_REF_ENONFINITE;
    }
  }
  fast_unscratch(g);
  fast_unscratch(m);
  fast_unscratch(r);
  return rc;
}

/* ---- the calls, driven by the step table ------------------------------------------------------ */

static void fast_call_init(fast_call *c, hot_call call, const fast_config *cf,
                           const fast_prepared *prep) {
  memset(c, 0, sizeof *c);
  c->call = call, c->cf = cf, c->pl = prep->pl, c->prep = prep;
  atomic_init(&c->inf_x, 0);
  atomic_init(&c->inf_w, 0);
}

static void fast_call_free(fast_call *c) {
  for (int s = 0; s < HOT_LB_COUNT; ++s) fast_call_release(c, (hot_lbuf)s);
}

/* The fast step function of each family (the generated list; gemm_tma's steps are gemm's). */
#define HOT_FAMILY_DECL_(f, cpu) extern const hot_kernel_desc kd_##f;
HOT_KERNEL_FAMILIES(HOT_FAMILY_DECL_)
#undef HOT_FAMILY_DECL_
#define HOT_FAMILY_ROW_(f, cpu) {&kd_##f, fast_step_##cpu},
static const struct {
  const hot_kernel_desc *desc;
  int (*run)(fast_call *, const hot_step *);
} k_steps[] = {HOT_KERNEL_FAMILIES(HOT_FAMILY_ROW_)};
#undef HOT_FAMILY_ROW_

/* The index in k_steps of the family that runs step s of plan pl, or -1 when its role is not
 * planned (as layer_ref.c decides). */
static int family_of(const hot_layer_plan *pl, const hot_step *s) {
  const int k = plan_kernel_index(pl, s->role);
  const hot_kernel_desc *d = k >= 0 ? kd_of(&pl->kernels[k]) : NULL;
  for (size_t t = 0; d && t < sizeof k_steps / sizeof k_steps[0]; ++t)
    if (k_steps[t].desc == d) return (int)t;
  return -1;
}

_Static_assert(FAST_CALLS == HOT_CALL_CALIBRATE + 1, "one prepared list per call");

int fast_layer_prepare(const hot_layer_plan *pl, fast_prepared *out) {
  if (!out) return HOT_REF_EARG;
  memset(out, 0, sizeof *out);
  if (!pl) return HOT_REF_EARG;
  out->pl = pl;
  for (int call = 0; call < FAST_CALLS; ++call) {
    const int n = kd_steps((hot_call)call, out->st[call], FAST_MAX_STEPS);
    if (n < 0 || n >= FAST_MAX_STEPS) return HOT_REF_EARG; /* the table outgrew the array */
    out->n[call] = n;
    for (int i = 0; i < n; ++i) out->fam[call][i] = (signed char)family_of(pl, &out->st[call][i]);
  }
  return HOT_REF_OK;
}

/* Step i of call c's prepared steps: its fast step function, or NULL when the step does not run
 * (kd_step_runs: its `when`, and its `out` against `outputs`, the call's kd_outputs; its role
 * must be planned). */
static int (*step_fn(const fast_call *c, int i, unsigned outputs))(fast_call *, const hot_step *) {
  const int fam = c->prep->fam[c->call][i];
  if (fam < 0) return NULL;
  const hot_step *s = &c->prep->st[c->call][i];
  return kd_step_runs(s->when, s->out, c->gran == HOT_GRAN_ROW, outputs) ? k_steps[fam].run : NULL;
}

/* The call's prepared steps (every family's steps in seq order): the steps that run, each role's
 * fast step function once, at its first step that runs (as the twins). c->runs is set first, so
 * that a step may do a later one's work in its own pass. *ran: the roles that ran. */
static int run_steps(fast_call *c, unsigned *ran) {
  const hot_step *st = c->prep->st[c->call];
  int (*fn[FAST_MAX_STEPS])(fast_call *, const hot_step *);
  const int n = c->prep->n[c->call];
  const unsigned outputs = kd_outputs(c->g_x, c->g_w, c->g_b); /* (save, calibrate: 0) */
  for (int i = 0; i < n; ++i) {
    fn[i] = (c->runs >> st[i].role) & 1u ? NULL : step_fn(c, i, outputs);
    if (fn[i]) c->runs |= 1u << st[i].role;
  }
  int rc = HOT_REF_OK;
  *ran = 0;
  for (int i = 0; i < n && !rc; ++i)
    if (fn[i]) {
      *ran |= 1u << st[i].role;
      rc = fn[i](c, &st[i]);
    }
  return rc;
}

static int layer_save_run(const fast_config *cf, const fast_prepared *p, const void *x, hot_dtype dt,
                          int8_t *codes, hot_ref_saved *out) {
  if (!out) return HOT_REF_EARG;
  const hot_layer_plan *pl = p ? p->pl : NULL;
  memset(out, 0, sizeof *out);
  if (!pl || !x || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  FAST_CONFIG_OR_DEFAULT(cf);
  const fast_config run = fast_config_for(cf, pl->T * pl->I); /* small calls on the caller */
  fast_call c;
  fast_call_init(&c, HOT_CALL_SAVE, &run, p);
  c.x = x, c.dt = dt, c.save_out = out;
  c.save_codes = pl->fmt == HOT_FMT_NVFP4 ? NULL : codes; /* the INT ABC step's codes only */
  unsigned ran = 0;
  rc = run_steps(&c, &ran);
  fast_call_free(&c);
  if (!rc && !ran) { /* no ABC: the forward keeps x (no kernel: not a step) */
    out->x = malloc((size_t)(pl->T * pl->I) * sizeof *out->x);
    if (!out->x) return HOT_REF_ENOMEM;
    rc = load_all(x, dt, pl->T * pl->I, 1, &run, out->x);
  }
  out->bytes = plan_buffer_bytes(pl, HOT_BUF_SAVED);
  if (rc) ref_saved_free(out);
  return rc;
}

int fast_prepared_save(const fast_config *cf, const fast_prepared *p, const void *x, hot_dtype dt,
                       hot_ref_saved *out) {
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = layer_save_run(cf, p, x, dt, NULL, out);
  fast_fpenv_leave(e);
  return rc;
}

int fast_prepared_save_into(const fast_config *cf, const fast_prepared *p, const void *x,
                            hot_dtype dt, int8_t *codes, hot_ref_saved *out) {
  const fast_fpenv e = fast_fpenv_enter();
  const int rc = layer_save_run(cf, p, x, dt, codes, out);
  fast_fpenv_leave(e);
  return rc;
}

int fast_layer_save(const fast_config *cf, const hot_layer_plan *pl, const void *x, hot_dtype dt, hot_ref_saved *out) {
  fast_prepared p;
  return fast_prepared_save(cf, fast_layer_prepare(pl, &p) ? NULL : &p, x, dt, out);
}

/* The backward's arguments as the twin checks them: 0, or the HOT_REF_* status. */
static int backward_args_check(const hot_layer_plan *pl, const hot_ref_saved *saved,
                               const void *g_y, const void *w, hot_dtype dt, hot_gran gran,
                               const float *g_x, const float *g_w, const float *g_b) {
  if (!pl || !saved || !g_y || !w || (!g_x && !g_w && !g_b) || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (pl->hq.enabled && gran != HOT_GRAN_TENSOR && gran != HOT_GRAN_ROW && gran != HOT_GRAN_SAMPLE)
    return HOT_REF_EARG;
  if (g_w && !saved->q_x && !saved->x) return HOT_REF_EARG; /* only g_w reads saved */
  if (g_w && !pl->hla.enabled && !saved->x) return HOT_REF_ESHAPE;
  return 0;
}

/* FAST_OVERFLOW_* of a finished backward: the epilogues' flags of g_x and g_w, and g_b's values
 * (O of them, when g_b is not NULL) looked at here, O being small. */
static unsigned overflow_flags(int inf_x, int inf_w, const float *g_b, int64_t O) {
  int bad_b = 0;
  for (int64_t o = 0; g_b && o < O; ++o) bad_b |= !isfinite(g_b[o]);
  return (inf_x ? FAST_OVERFLOW_GX : 0u) | (inf_w ? FAST_OVERFLOW_GW : 0u) |
         (bad_b ? FAST_OVERFLOW_GB : 0u);
}

static int layer_backward_run(const fast_config *cf, const fast_prepared *p,
                              const hot_ref_saved *saved, const void *g_y, const void *w,
                              hot_dtype dt, hot_gran gran, uint64_t seed, uint32_t step,
                              float *g_x, float *g_w, float *g_b, unsigned *overflow) {
  const hot_layer_plan *pl = p ? p->pl : NULL;
  int rc = backward_args_check(pl, saved, g_y, w, dt, gran, g_x, g_w, g_b);
  if (rc) return rc;
  FAST_CONFIG_OR_DEFAULT(cf);
  const fast_config run = fast_config_for(cf, pl->T * pl->O + pl->T * pl->I + pl->O * pl->I);
  const fast_prof_t t0 = fast_prof_now();
  fast_call c; /* small calls on the caller (run) */
  fast_call_init(&c, HOT_CALL_BACKWARD, &run, p);
  c.saved = saved, c.g_y = g_y, c.w = w, c.dt = dt, c.gran = gran, c.seed = seed, c.step = step;
  c.g_x = g_x, c.g_w = g_w, c.g_b = g_b;
  unsigned ran = 0;
  rc = run_steps(&c, &ran);
  fast_call_free(&c);
  /* HQ / HLA disabled: the product without its GEMM is the fp32 one (no kernel: not a step; the
   * plain products return HOT_REF_ENONFINITE themselves) */
  if (!rc && g_x && !(c.wrote & (1u << HOT_LB_GX))) rc = backward_plain(pl, 1, g_y, w, dt, dt, &run, g_x);
  if (!rc && g_w && !(c.wrote & (1u << HOT_LB_GW)))
    rc = backward_plain(pl, 0, g_y, saved->x, HOT_DT_F32, dt, &run, g_w);
  if (!rc && overflow)
    *overflow = overflow_flags(atomic_load(&c.inf_x), atomic_load(&c.inf_w),
                               (c.wrote >> HOT_LB_GB) & 1u ? g_b : NULL, pl->O);
  fast_prof_add(FAST_ST_TOTAL, t0);
  return rc;
}

int fast_layer_backward(const fast_config *cf, const hot_layer_plan *pl, const hot_ref_saved *saved, const void *g_y,
                        const void *w, hot_dtype dt, hot_gran gran, uint64_t seed, uint32_t step,
                        float *g_x, float *g_w, float *g_b) {
  fast_prepared p;
  const fast_prepared *pp = fast_layer_prepare(pl, &p) ? NULL : &p;
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = layer_backward_run(cf, pp, saved, g_y, w, dt, gran, seed, step, g_x, g_w, g_b,
                                    NULL);
  fast_fpenv_leave(e);
  return rc;
}

int fast_layer_backward_check(const fast_config *cf, const hot_layer_plan *pl,
                              const hot_ref_saved *saved, const void *g_y, const void *w,
                              hot_dtype dt, hot_gran gran, uint64_t seed, uint32_t step,
                              float *g_x, float *g_w, float *g_b, unsigned *overflow) {
  fast_prepared p;
  return fast_prepared_backward_check(cf, fast_layer_prepare(pl, &p) ? NULL : &p, saved, g_y, w,
                                      dt, gran, seed, step, g_x, g_w, g_b, overflow);
}

int fast_prepared_backward_check(const fast_config *cf, const fast_prepared *p,
                                 const hot_ref_saved *saved, const void *g_y, const void *w,
                                 hot_dtype dt, hot_gran gran, uint64_t seed, uint32_t step,
                                 float *g_x, float *g_w, float *g_b, unsigned *overflow) {
  if (overflow) *overflow = 0;
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = layer_backward_run(cf, p, saved, g_y, w, dt, gran, seed, step, g_x, g_w, g_b,
                                    overflow);
  fast_fpenv_leave(e);
  return rc;
}

/* ---- LQS (ref_lqs) ------------------------------------------------------------------------- */

typedef struct {
  const float *v;
  int64_t T, O, L;
  const float *s_row, *s_smp;
  hot_quant q;
  fast_rng rng;
  const fast_kernels *k; /* the level's kernels (fast_config) */
  double *part; /* 2 per chunk: per-sample error, per-row error */
} lqctx;

static void lqs_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const lqctx *x = ctx;
  const int64_t n = x->T * x->O, e0 = i * HOT_REF_SUM_CHUNK;
  const int64_t e1 = e0 + HOT_REF_SUM_CHUNK < n ? e0 + HOT_REF_SUM_CHUNK : n;
  const int qmax = hot_qmax(x->q.bits), sr = x->q.round == HOT_ROUND_SR;
  uint32_t words[HOT_REF_SUM_CHUNK];
  int8_t qt[HOT_REF_SUM_CHUNK], qr[HOT_REF_SUM_CHUNK];
  if (sr) x->k->e->philox(&x->rng, (uint64_t)e0, e1 - e0, words);
  for (int64_t e = e0; e < e1;) { /* codes, run by run within rows */
    const int64_t t = e / x->O, end = (t + 1) * x->O < e1 ? (t + 1) * x->O : e1;
    x->k->e->quant(x->v + e, end - e, x->s_smp[t / x->L], qmax, sr, words + (e - e0), qt + (e - e0));
    x->k->e->quant(x->v + e, end - e, x->s_row[t], qmax, sr, words + (e - e0), qr + (e - e0));
    e = end;
  }
  double et = 0.0, er = 0.0;
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t t = e / x->O;
    const float dt_ = HOT_MUL(HOT_I2F((int)qt[e - e0]), x->s_smp[t / x->L]);
    const float dr = HOT_MUL(HOT_I2F((int)qr[e - e0]), x->s_row[t]);
    const double d1 = HOT_DSUB((double)x->v[e], (double)dt_);
    const double d2 = HOT_DSUB((double)x->v[e], (double)dr);
    et = HOT_DADD(et, HOT_DMUL(d1, d1));
    er = HOT_DADD(er, HOT_DMUL(d2, d2));
  }
  x->part[2 * i] = et;
  x->part[2 * i + 1] = er;
}

/* The lqs family's step: the calibration's errors and choice (ref_lqs) into c->lqs_out. */
static int lqs_run(fast_call *c) {
  const hot_layer_plan *pl = c->pl;
  const fast_config *cf = c->cf;
  hot_ref_lqs_result *out = c->lqs_out;
  const int64_t T = pl->T, O = pl->O, L = pl->L, n = T * O;
  lqctx x;
  memset(&x, 0, sizeof x);
  x.q.bits = pl->hq.g.bits, x.q.round = pl->hq.g.round;
  x.q.gran = HOT_GRAN_TENSOR, x.q.rule = HOT_RULE_ABSMAX;
  if (!quant_ok(&x.q)) return HOT_REF_EARG;
  float *v = fast_scratch((size_t)n * sizeof *v), *ra = malloc((size_t)T * sizeof *ra);
  float *s_row = malloc((size_t)T * sizeof *s_row), *s_smp = malloc((size_t)pl->B * sizeof *s_smp);
  const int64_t chunks = fast_cdiv(n, HOT_REF_SUM_CHUNK);
  double *part = malloc((size_t)(2 * chunks) * sizeof *part);
  int rc = HOT_REF_ENOMEM;
  if (!v || !ra || !s_row || !s_smp || !part) goto done;
  load_all(c->g_y, c->dt, n, 0, cf, v);
  qctx st;
  memset(&st, 0, sizeof st);
  st.v = v, st.rows = T, st.cols = O, st.row_amax = ra, st.k = cf->k;
  if ((rc = row_stats(&st, cf))) goto done;
  for (int64_t b = 0; b < pl->B; ++b) {
    float amax = 0.0f;
    for (int64_t t = b * L; t < (b + 1) * L; ++t) amax = ra[t] > amax ? ra[t] : amax;
    s_smp[b] = hot_scale(amax, x.q.bits);
  }
  for (int64_t t = 0; t < T; ++t) s_row[t] = hot_scale(ra[t], x.q.bits);
  x.v = v, x.T = T, x.O = O, x.L = L, x.s_row = s_row, x.s_smp = s_smp, x.part = part;
  x.rng.seed = c->seed, x.rng.tag = (uint32_t)pl->layer_id * 16u + HOT_TENSOR_LQS;
  x.rng.step = c->step;
  x.k = cf->k;
  fast_parallel(chunks, cf->threads, lqs_task, &x);
  double et = 0.0, er = 0.0;
  for (int64_t ch = 0; ch < chunks; ++ch) {
    et = HOT_DADD(et, part[2 * ch]);
    er = HOT_DADD(er, part[2 * ch + 1]);
  }
  out->e_tensor = HOT_DSQRT(et);
  out->e_token = HOT_DSQRT(er);
  out->choice = out->e_token < HOT_DMUL(0.5, out->e_tensor) ? HOT_GRAN_ROW : plan_lqs_coarse(pl);
  rc = HOT_REF_OK;
done:
  fast_unscratch(v);
  free(ra);
  free(s_row);
  free(s_smp);
  free(part);
  return rc;
}

int fast_step_lqs(fast_call *c, const hot_step *s) {
  (void)s;
  return lqs_run(c);
}

static int layer_calibrate_run(const fast_config *cf, const fast_prepared *p, const void *g_y,
                               hot_dtype dt, uint64_t seed, uint32_t step, hot_ref_lqs_result *out) {
  const hot_layer_plan *pl = p ? p->pl : NULL;
  if (!pl || !g_y || !out || !ref_dt_ok(dt)) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  FAST_CONFIG_OR_DEFAULT(cf);
  const fast_config run = fast_config_for(cf, pl->T * pl->O); /* small calls on the caller */
  fast_call c;
  fast_call_init(&c, HOT_CALL_CALIBRATE, &run, p);
  c.g_y = g_y, c.dt = dt, c.seed = seed, c.step = step, c.lqs_out = out;
  unsigned ran = 0;
  rc = run_steps(&c, &ran);
  /* a plan without an LQS kernel (g' granularity fixed): the CPU answers what no kernel asks */
  if (!rc && !ran) rc = lqs_run(&c);
  fast_call_free(&c);
  return rc;
}

int fast_layer_calibrate(const fast_config *cf, const hot_layer_plan *pl, const void *g_y, hot_dtype dt, uint64_t seed,
                         uint32_t step, hot_ref_lqs_result *out) {
  fast_prepared p;
  return fast_prepared_calibrate(cf, fast_layer_prepare(pl, &p) ? NULL : &p, g_y, dt, seed, step,
                                 out);
}

int fast_prepared_calibrate(const fast_config *cf, const fast_prepared *p, const void *g_y,
                            hot_dtype dt, uint64_t seed, uint32_t step, hot_ref_lqs_result *out) {
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = layer_calibrate_run(cf, p, g_y, dt, seed, step, out);
  fast_fpenv_leave(e);
  return rc;
}

/* fast_exact.c — the fp64 products of exact_ref.c, blocked and threaded with the same bits.
 *
 * Each output element of exact_ref.c is a sum that starts at +0.0 and adds the exact fp64
 * products of its terms in ascending order of the contraction index k, one rounding per add
 * (CONTRACT.md 17: tests and error reports only). Here the output is cut into tiles (threads)
 * and the contraction into blocks of KC; a tile's sums are kept in the output between blocks
 * and each block adds its terms in ascending k, so every element sees the same additions in the
 * same order. (atb64's skipping of zero terms changes nothing: a sum that starts at +0.0 is never
 * -0.0 under round-to-nearest, and adding +-0 to it leaves it as it is.) When both operands are
 * fp32 each product is exact in fp64, so a fused multiply-add rounds the same single time as the
 * twins' add does (dkern_fma). The fp64 transforms of ref_hq_gx_f64 and ref_hla_gw_f64 keep their
 * stage order and run per column. */
#include <stdlib.h>
#include <string.h>

#include "fast_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FAST_X86 1
#define AVX2_FN __attribute__((target("avx2")))
#else
#define FAST_X86 0
#endif

#define DMR 4   /* rows of the register tile */
#define DNR 8   /* columns of the register tile */
#define DMC 64  /* rows of one packed A block */
#define DMS 256 /* rows of a task: DMS / DMC A blocks share each packed B block */
#define DNC 256 /* columns of a task (one packed B block) */
#define DKC 128 /* contraction block */

/* c (M x N, row-major, ldc = N) += a.b over k ascending, a(m,k) = A[m*a_sm + k*a_sk],
 * b(k,n) = B[k*b_sk + n*b_sn]; element types fp32 (f32 != 0) or fp64. */
typedef struct {
  const void *a;
  int a_f32;
  int64_t a_sm, a_sk;
  const void *b;
  int b_f32;
  int64_t b_sk, b_sn;
  int64_t M, N, K;
  double *c;
  const fast_config *cf; /* threads and the level's kernels (cf->k->f64_avx2, f64_fma) */
  int fma;          /* the fused kernel (dkern_fma): AVX2 + FMA, both operands fp32 */
  double **scratch; /* per thread: packed A (DMC x DKC), packed B (DKC x DNC), an edge tile */
} dctx;

/* A strip of a packed panel: dst[k * w + j] = v(k, j) for k < kc and j < w, the element (k, j)
 * at src[k * sk + j * sj] (fp32 when f32, else fp64), and 0.0 for j >= jn (past the matrix). */
static void pack_strip(double *dst, int w, const void *src, int f32, int64_t sk, int64_t sj,
                       int64_t kc, int64_t jn) {
  const float *sf = src;
  const double *sd = src;
  for (int64_t k = 0; k < kc; ++k)
    for (int j = 0; j < w; ++j)
      dst[k * w + j] = j >= jn ? 0.0 : f32 ? (double)sf[k * sk + j * sj] : sd[k * sk + j * sj];
}

#if FAST_X86
/* pack_strip for a whole strip along a contiguous axis (sj == 1, jn == w, w a multiple of 4). */
AVX2_FN static void pack_strip_avx2(double *dst, int w, const void *src, int f32, int64_t sk,
                                    int64_t kc) {
  const float *sf = src;
  const double *sd = src;
  for (int64_t k = 0; k < kc; ++k)
    for (int j = 0; j < w; j += 4)
      _mm256_storeu_pd(dst + k * w + j, f32 ? _mm256_cvtps_pd(_mm_loadu_ps(sf + k * sk + j))
                                            : _mm256_loadu_pd(sd + k * sk + j));
}
#endif

/* Packs rows [m0, m0 + rows) of A (or, with b, columns [m0, m0 + rows) of B) over k in
 * [k0, k0 + kc) into strips of w (DMR or DNR) in the order the kernel reads them. */
static void pack_block(const dctx *x, int b, int64_t m0, int64_t rows, int64_t k0, int64_t kc,
                       double *dst) {
  const int w = b ? DNR : DMR, f32 = b ? x->b_f32 : x->a_f32;
  const int64_t sk = b ? x->b_sk : x->a_sk, sj = b ? x->b_sn : x->a_sm;
  const int64_t lim = b ? x->N : x->M;
  const char *base = b ? x->b : x->a;
  const size_t esz = f32 ? sizeof(float) : sizeof(double);
  for (int64_t p = 0; p < fast_cdiv(rows, w); ++p) {
    const int64_t j0 = m0 + p * w, jn = lim - j0 < w ? lim - j0 : w;
    const void *src = base + (size_t)(k0 * sk + j0 * sj) * esz;
    double *d = dst + p * kc * w;
#if FAST_X86
    if (x->cf->k->f64_avx2 && sj == 1 && jn == w) {
      pack_strip_avx2(d, w, src, f32, sk, kc);
      continue;
    }
#endif
    pack_strip(d, w, src, f32, sk, sj, kc, jn);
  }
}
/* c[DMR x DNR] (row stride ldc) += the kc steps of a packed A panel and B panel. */
static void dkern_scalar(const double *ap, const double *bp, int64_t kc, double *c, int64_t ldc) {
  double acc[DMR][DNR];
  for (int m = 0; m < DMR; ++m)
    for (int n = 0; n < DNR; ++n) acc[m][n] = c[m * ldc + n];
  for (int64_t k = 0; k < kc; ++k)
    for (int m = 0; m < DMR; ++m)
      for (int n = 0; n < DNR; ++n) acc[m][n] = acc[m][n] + ap[k * DMR + m] * bp[k * DNR + n];
  for (int m = 0; m < DMR; ++m)
    for (int n = 0; n < DNR; ++n) c[m * ldc + n] = acc[m][n];
}

#if FAST_X86
/* The AVX2 kernel, as a macro over the step that adds a * b into an accumulator: mul + add, or,
 * where every product is exact, one fused multiply-add. */
#define DKERN_AVX2_BODY(STEP)                                                                       \
  __m256d c00 = _mm256_loadu_pd(c), c01 = _mm256_loadu_pd(c + 4);                                  \
  __m256d c10 = _mm256_loadu_pd(c + ldc), c11 = _mm256_loadu_pd(c + ldc + 4);                      \
  __m256d c20 = _mm256_loadu_pd(c + 2 * ldc), c21 = _mm256_loadu_pd(c + 2 * ldc + 4);              \
  __m256d c30 = _mm256_loadu_pd(c + 3 * ldc), c31 = _mm256_loadu_pd(c + 3 * ldc + 4);              \
  for (int64_t k = 0; k < kc; ++k) {                                                                \
    const __m256d b0 = _mm256_loadu_pd(bp + k * DNR), b1 = _mm256_loadu_pd(bp + k * DNR + 4);      \
    __m256d a = _mm256_broadcast_sd(ap + k * DMR);                                                  \
    c00 = STEP(c00, a, b0), c01 = STEP(c01, a, b1);                                                 \
    a = _mm256_broadcast_sd(ap + k * DMR + 1);                                                      \
    c10 = STEP(c10, a, b0), c11 = STEP(c11, a, b1);                                                 \
    a = _mm256_broadcast_sd(ap + k * DMR + 2);                                                      \
    c20 = STEP(c20, a, b0), c21 = STEP(c21, a, b1);                                                 \
    a = _mm256_broadcast_sd(ap + k * DMR + 3);                                                      \
    c30 = STEP(c30, a, b0), c31 = STEP(c31, a, b1);                                                 \
  }                                                                                                 \
  _mm256_storeu_pd(c, c00), _mm256_storeu_pd(c + 4, c01);                                          \
  _mm256_storeu_pd(c + ldc, c10), _mm256_storeu_pd(c + ldc + 4, c11);                              \
  _mm256_storeu_pd(c + 2 * ldc, c20), _mm256_storeu_pd(c + 2 * ldc + 4, c21);                      \
  _mm256_storeu_pd(c + 3 * ldc, c30), _mm256_storeu_pd(c + 3 * ldc + 4, c31);

#define MUL_ADD(acc, a, b) _mm256_add_pd((acc), _mm256_mul_pd((a), (b)))
#define FMA_ADD(acc, a, b) _mm256_fmadd_pd((a), (b), (acc))

AVX2_FN static void dkern_avx2(const double *ap, const double *bp, int64_t kc, double *c,
                               int64_t ldc) {
  DKERN_AVX2_BODY(MUL_ADD)
}

/* For fp32 operands only: the product of two fp32 values is exact in fp64 (48 significant bits,
 * exponents far inside fp64's range), so fma(a, b, acc) rounds once, exactly as acc + (a * b)
 * does; the sums keep the twins' bits with half the instructions. */
__attribute__((target("avx2,fma"))) static void dkern_fma(const double *ap, const double *bp,
                                                        int64_t kc, double *c, int64_t ldc) {
  DKERN_AVX2_BODY(FMA_ADD)
}
#endif

/* One DMR x DNR tile at (r0, c0) of c over kc steps of packed panels; edge tiles go through
 * tmp (the kernel then sees zeros past the matrix, which add nothing to what is stored). */
static void dtile(const dctx *x, const double *ap, const double *bp, int64_t kc, int64_t r0,
                  int64_t c0, double *tmp) {
  const int full = r0 + DMR <= x->M && c0 + DNR <= x->N;
  double *c = full ? x->c + r0 * x->N + c0 : tmp;
  const int64_t ldc = full ? x->N : DNR;
  if (!full)
    for (int m = 0; m < DMR; ++m)
      for (int n = 0; n < DNR; ++n)
        tmp[m * DNR + n] = r0 + m < x->M && c0 + n < x->N ? x->c[(r0 + m) * x->N + c0 + n] : 0.0;
#if FAST_X86
  if (x->fma) dkern_fma(ap, bp, kc, c, ldc);
  else if (x->cf->k->f64_avx2) dkern_avx2(ap, bp, kc, c, ldc);
  else
#endif
    dkern_scalar(ap, bp, kc, c, ldc);
  if (!full)
    for (int m = 0; m < DMR; ++m)
      for (int n = 0; n < DNR; ++n)
        if (r0 + m < x->M && c0 + n < x->N) x->c[(r0 + m) * x->N + c0 + n] = tmp[m * DNR + n];
}

/* Task i: rows [m0, m0 + DMS) x columns [n0, n0 + DNC). For each K block (ascending), B's block
 * is packed once and serves the task's DMS / DMC packed A blocks, so every element adds its terms
 * in ascending k, block after block. */
static void dtile_task(void *ctx, int64_t i, int tid) {
  const dctx *x = ctx;
  const int64_t tiles_n = fast_cdiv(x->N, DNC), ms = (i / tiles_n) * DMS, n0 = (i % tiles_n) * DNC;
  const int64_t me = x->M - ms < DMS ? x->M : ms + DMS, nc = x->N - n0 < DNC ? x->N - n0 : DNC;
  double *pa = x->scratch[tid], *pb = pa + DMC * DKC, *tmp = pb + DKC * DNC;
  for (int64_t k0 = 0; k0 < x->K; k0 += DKC) {
    const int64_t kc = x->K - k0 < DKC ? x->K - k0 : DKC;
    pack_block(x, 1, n0, nc, k0, kc, pb);
    for (int64_t m0 = ms; m0 < me; m0 += DMC) {
      const int64_t mc = me - m0 < DMC ? me - m0 : DMC;
      pack_block(x, 0, m0, mc, k0, kc, pa);
      for (int64_t q = 0; q < fast_cdiv(nc, DNR); ++q)
        for (int64_t p = 0; p < fast_cdiv(mc, DMR); ++p)
          dtile(x, pa + p * kc * DMR, pb + q * kc * DNR, kc, m0 + p * DMR, n0 + q * DNR, tmp);
    }
  }
}

/* Runs x over the pool (x->c must hold +0.0 on entry). */
static int dgemm(dctx *x) {
  const int threads = x->cf->threads;
  x->fma = x->cf->k->f64_fma && x->a_f32 && x->b_f32;
  x->scratch = calloc((size_t)threads, sizeof *x->scratch);
  int rc = x->scratch ? HOT_REF_OK : HOT_REF_ENOMEM;
  for (int t = 0; t < threads && !rc; ++t)
    if (!(x->scratch[t] = malloc((size_t)(DMC * DKC + DKC * DNC + DMR * DNR) * sizeof(double))))
      rc = HOT_REF_ENOMEM;
  if (!rc) fast_parallel(fast_cdiv(x->M, DMS) * fast_cdiv(x->N, DNC), threads, dtile_task, x);
  if (x->scratch)
    for (int t = 0; t < threads; ++t) free(x->scratch[t]);
  free(x->scratch);
  return rc;
}

static int exact_gx_run(const fast_config *cf, int64_t T, int64_t O, int64_t I, const float *g_y, const float *w, double *g_x) {
  FAST_CONFIG_OR_DEFAULT(cf);
  if (T <= 0 || O <= 0 || I <= 0 || !g_y || !w || !g_x) return HOT_REF_EARG;
  memset(g_x, 0, (size_t)(T * I) * sizeof *g_x);
  dctx x = {g_y, 1, O, 1, w, 1, I, 1, T, I, O, g_x, cf, 0, NULL};
  return dgemm(&x);
}

int fast_exact_gx(const fast_config *cf, int64_t T, int64_t O, int64_t I, const float *g_y, const float *w, double *g_x) {
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = exact_gx_run(cf, T, O, I, g_y, w, g_x);
  fast_fpenv_leave(e);
  return rc;
}

static int exact_gw_run(const fast_config *cf, int64_t T, int64_t O, int64_t I, const float *g_y, const float *x_,
                  double *g_w) {
  FAST_CONFIG_OR_DEFAULT(cf);
  if (T <= 0 || O <= 0 || I <= 0 || !g_y || !x_ || !g_w) return HOT_REF_EARG;
  memset(g_w, 0, (size_t)(O * I) * sizeof *g_w);
  dctx x = {g_y, 1, 1, O, x_, 1, I, 1, O, I, T, g_w, cf, 0, NULL};
  return dgemm(&x);
}

int fast_exact_gw(const fast_config *cf, int64_t T, int64_t O, int64_t I, const float *g_y, const float *x_,
                  double *g_w) {
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = exact_gw_run(cf, T, O, I, g_y, x_, g_w);
  fast_fpenv_leave(e);
  return rc;
}

/* ---- fp64 transforms ------------------------------------------------------------------------- */

/* fwht_rows64 of exact_ref.c on columns [c0, c0 + n) of a p x ld block. */
static void fwht64_cols(double *m, int p, int64_t ld, int64_t c0, int64_t n) {
  for (int h = 1; h < p; h <<= 1)
    for (int j = 0; j < p; ++j) {
      if (j & h) continue;
      double *a = m + (int64_t)j * ld + c0, *b = m + (int64_t)(j + h) * ld + c0;
      for (int64_t c = 0; c < n; ++c) {
        double u = a[c], v = b[c];
        a[c] = u + v;
        b[c] = u - v;
      }
    }
}

typedef struct {
  double *m;
  int p;
  int64_t blocks, cols; /* blocks of p rows, each a p x cols matrix */
} fctx;

static void f64_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const fctx *x = ctx;
  const int64_t chunks = fast_cdiv(x->cols, 256), blk = i / chunks, c0 = (i % chunks) * 256;
  fwht64_cols(x->m + blk * x->p * x->cols, x->p, x->cols, c0, x->cols - c0 < 256 ? x->cols - c0 : 256);
}

static void fwht64_blocks(const fast_config *cf, double *m, int p, int64_t blocks, int64_t cols) {
  fctx x = {m, p, blocks, cols};
  fast_parallel(blocks * fast_cdiv(cols, 256), cf->threads, f64_task, &x);
}

static void div_all(double *c, int64_t n, double div) {
  for (int64_t i = 0; i < n; ++i) c[i] /= div;
}

static int hq_gx_f64_run(const fast_config *cf, const hot_layer_plan *pl, const float *g_y, const float *w, double *g_x) {
  FAST_CONFIG_OR_DEFAULT(cf);
  if (!pl || !g_y || !w || !g_x) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (!pl->hq.enabled) return HOT_REF_ESHAPE;
  const int b = pl->hq.block;
  const int64_t T = pl->T, O = pl->O, I = pl->I, op = pl->hq.o_pad;
  double *gt = fast_scratch((size_t)(op * T) * sizeof *gt), *wt = fast_scratch((size_t)(op * I) * sizeof *wt);
  if (!gt || !wt) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  memset(gt, 0, (size_t)(op * T) * sizeof *gt); /* the padding rows O..op stay zero */
  memset(wt, 0, (size_t)(op * I) * sizeof *wt);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < O; ++o) gt[o * T + t] = g_y[t * O + o];
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) wt[o * I + i] = w[o * I + i];
  fwht64_blocks(cf, gt, b, op / b, T);
  fwht64_blocks(cf, wt, b, op / b, I);
  memset(g_x, 0, (size_t)(T * I) * sizeof *g_x);
  dctx x = {gt, 0, 1, T, wt, 0, I, 1, T, I, op, g_x, cf, 0, NULL};
  rc = dgemm(&x);
  if (!rc) div_all(g_x, T * I, (double)b);
done:
  fast_unscratch(gt);
  fast_unscratch(wt);
  return rc;
}

int fast_hq_gx_f64(const fast_config *cf, const hot_layer_plan *pl, const float *g_y, const float *w, double *g_x) {
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = hq_gx_f64_run(cf, pl, g_y, w, g_x);
  fast_fpenv_leave(e);
  return rc;
}

typedef struct {
  const hot_layer_plan *pl;
  const float *src;
  int64_t cols;
  double *out;
  double **scratch; /* per thread: p x 256 */
} pctx;

/* hla_project64 of exact_ref.c for token block i / chunks, columns chunk i % chunks. */
static void p64_task(void *ctx, int64_t i, int tid) {
  const pctx *x = ctx;
  const hot_layer_plan *pl = x->pl;
  const int p = pl->hla.block, r = pl->hla.rank, flat = pl->hla.layout == HOT_LAYOUT_FLAT;
  const int64_t chunks = fast_cdiv(x->cols, 256), blk = i / chunks, c0 = (i % chunks) * 256;
  const int64_t n = x->cols - c0 < 256 ? x->cols - c0 : 256;
  const int64_t per_seg = pl->hla.seg_len / p, seg = blk / per_seg, bb = blk % per_seg;
  const int64_t seg_real = flat ? pl->T : pl->L, base = flat ? 0 : seg * pl->L;
  double *buf = x->scratch[tid];
  for (int j = 0; j < p; ++j) {
    const int64_t pos = bb * p + j;
    for (int64_t c = 0; c < n; ++c)
      buf[(int64_t)j * 256 + c] = pos < seg_real ? (double)x->src[(base + pos) * x->cols + c0 + c] : 0.0;
  }
  fwht64_cols(buf, p, 256, 0, n);
  for (int j = 0; j < r; ++j)
    memcpy(x->out + (blk * r + j) * x->cols + c0, buf + (int64_t)pl->hla.rows[j] * 256,
           (size_t)n * sizeof *x->out);
}

static int project64(const fast_config *cf, const hot_layer_plan *pl, const float *src,
                     int64_t cols, double *out) {
  const int threads = cf->threads;
  pctx x = {pl, src, cols, out, calloc((size_t)threads, sizeof(double *))};
  int rc = x.scratch ? HOT_REF_OK : HOT_REF_ENOMEM;
  for (int t = 0; t < threads && !rc; ++t)
    if (!(x.scratch[t] = malloc((size_t)pl->hla.block * 256 * sizeof(double)))) rc = HOT_REF_ENOMEM;
  if (!rc) fast_parallel(pl->hla.blocks * fast_cdiv(cols, 256), threads, p64_task, &x);
  if (x.scratch)
    for (int t = 0; t < threads; ++t) free(x.scratch[t]);
  free(x.scratch);
  return rc;
}

static int hla_gw_f64_run(const fast_config *cf, const hot_layer_plan *pl, const float *g_y, const float *x_, double *g_w) {
  FAST_CONFIG_OR_DEFAULT(cf);
  if (!pl || !g_y || !x_ || !g_w) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (!pl->hla.enabled) return HOT_REF_ESHAPE;
  const int64_t K = pl->hla.k, O = pl->O, I = pl->I;
  double *gh = fast_scratch((size_t)(K * O) * sizeof *gh), *xh = fast_scratch((size_t)(K * I) * sizeof *xh);
  rc = HOT_REF_ENOMEM;
  if (gh && xh) rc = project64(cf, pl, g_y, O, gh);
  if (!rc) rc = project64(cf, pl, x_, I, xh);
  if (!rc) {
    memset(g_w, 0, (size_t)(O * I) * sizeof *g_w);
    dctx x = {gh, 0, 1, O, xh, 0, I, 1, O, I, K, g_w, cf, 0, NULL};
    rc = dgemm(&x);
    if (!rc) div_all(g_w, O * I, (double)pl->hla.block);
  }
  fast_unscratch(gh);
  fast_unscratch(xh);
  return rc;
}

int fast_hla_gw_f64(const fast_config *cf, const hot_layer_plan *pl, const float *g_y, const float *x_, double *g_w) {
  const fast_fpenv e = fast_fpenv_enter(); /* the twins' environment (fast_internal.h) */
  const int rc = hla_gw_f64_run(cf, pl, g_y, x_, g_w);
  fast_fpenv_leave(e);
  return rc;
}

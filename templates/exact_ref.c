/* exact_ref.c — fp64 products for tests and error reports: the exact g_y.w and g_y^T.x, and
 * HQ / HLA with the transforms done in fp64 and no quantization (the identities of CONTRACT.md 8).
 * Not a twin of any kernel; blocked loops keep real layer sizes to seconds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

int ref_exact_gx(int64_t T, int64_t O, int64_t I, const float *g_y, const float *w,
                     double *g_x) {
  if (T <= 0 || O <= 0 || I <= 0 || !g_y || !w || !g_x) return HOT_REF_EARG;
  for (int64_t t = 0; t < T; ++t) {
    double *row = g_x + t * I;
    memset(row, 0, (size_t)I * sizeof *row);
    for (int64_t o = 0; o < O; ++o) {
      double g = g_y[t * O + o];
      const float *wr = w + o * I;
      for (int64_t i = 0; i < I; ++i) row[i] += g * (double)wr[i];
    }
  }
  return HOT_REF_OK;
}

int ref_exact_gw(int64_t T, int64_t O, int64_t I, const float *g_y, const float *x,
                     double *g_w) {
  if (T <= 0 || O <= 0 || I <= 0 || !g_y || !x || !g_w) return HOT_REF_EARG;
  memset(g_w, 0, (size_t)(O * I) * sizeof *g_w);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < O; ++o) {
      double g = g_y[t * O + o];
      double *row = g_w + o * I;
      const float *xr = x + t * I;
      for (int64_t i = 0; i < I; ++i) row[i] += g * (double)xr[i];
    }
  return HOT_REF_OK;
}

/* fp64 FWHT along the rows of an n x cols matrix (any stage order is fine in fp64 tests). */
static void fwht_rows64(double *m, int n, int64_t cols) {
  for (int h = 1; h < n; h <<= 1)
    for (int j = 0; j < n; ++j) {
      if (j & h) continue;
      double *a = m + (int64_t)j * cols, *b = m + (int64_t)(j + h) * cols;
      for (int64_t c = 0; c < cols; ++c) {
        double x = a[c], y = b[c];
        a[c] = x + y;
        b[c] = x - y;
      }
    }
}

/* c[M x N] = a^T b / div for a (K x M) and b (K x N), fp64. */
static void atb64(const double *a, const double *b, int64_t K, int64_t M, int64_t N, double div,
                  double *c) {
  memset(c, 0, (size_t)(M * N) * sizeof *c);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t m = 0; m < M; ++m) {
      double v = a[k * M + m];
      if (v == 0.0) continue;
      double *row = c + m * N;
      const double *br = b + k * N;
      for (int64_t n = 0; n < N; ++n) row[n] += v * br[n];
    }
  for (int64_t i = 0; i < M * N; ++i) c[i] /= div;
}

int ref_hq_gx_f64(const hot_layer_plan *pl, const float *g_y, const float *w, double *g_x) {
  if (!pl || !g_y || !w || !g_x) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (!pl->hq.enabled) return HOT_REF_ESHAPE;
  int b = pl->hq.block;
  int64_t T = pl->T, O = pl->O, I = pl->I, op = pl->hq.o_pad;
  /* g'^T (o_pad x T) and w' (o_pad x I): both transformed along their rows (the O axis). */
  double *gt = calloc((size_t)(op * T), sizeof *gt), *wt = calloc((size_t)(op * I), sizeof *wt);
  if (!gt || !wt) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < O; ++o) gt[o * T + t] = g_y[t * O + o];
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) wt[o * I + i] = w[o * I + i];
  for (int64_t o = 0; o < op; o += b) {
    fwht_rows64(gt + o * T, b, T);
    fwht_rows64(wt + o * I, b, I);
  }
  atb64(gt, wt, op, T, I, (double)b, g_x);
done:
  free(gt);
  free(wt);
  return rc;
}

/* fp64 HLA projection of a T x cols fp32 tensor: out[hla.k x cols]. */
static void hla_project64(const hot_layer_plan *pl, const float *src, int64_t cols, double *out,
                          double *buf) {
  int p = pl->hla.block, r = pl->hla.rank, flat = pl->hla.layout == HOT_LAYOUT_FLAT;
  int64_t per_seg = pl->hla.seg_len / p, seg_real = flat ? pl->T : pl->L;
  for (int64_t seg = 0; seg < pl->hla.segments; ++seg) {
    int64_t base = flat ? 0 : seg * pl->L;
    for (int64_t blk = 0; blk < per_seg; ++blk) {
      for (int j = 0; j < p; ++j) {
        int64_t pos = blk * p + j;
        for (int64_t c = 0; c < cols; ++c)
          buf[(int64_t)j * cols + c] = pos < seg_real ? (double)src[(base + pos) * cols + c] : 0.0;
      }
      fwht_rows64(buf, p, cols);
      int64_t kb = (seg * per_seg + blk) * r;
      for (int j = 0; j < r; ++j)
        memcpy(out + (kb + j) * cols, buf + (int64_t)pl->hla.rows[j] * cols,
               (size_t)cols * sizeof *out);
    }
  }
}

int ref_hla_gw_f64(const hot_layer_plan *pl, const float *g_y, const float *x, double *g_w) {
  if (!pl || !g_y || !x || !g_w) return HOT_REF_EARG;
  int rc = ref_plan_check(pl);
  if (rc) return rc;
  if (!pl->hla.enabled) return HOT_REF_ESHAPE;
  int64_t K = pl->hla.k, O = pl->O, I = pl->I, wide = O > I ? O : I;
  double *gh = malloc((size_t)(K * O) * sizeof *gh), *xh = malloc((size_t)(K * I) * sizeof *xh);
  double *buf = malloc((size_t)((int64_t)pl->hla.block * wide) * sizeof *buf);
  if (!gh || !xh || !buf) {
    rc = HOT_REF_ENOMEM;
    goto done;
  }
  hla_project64(pl, g_y, O, gh, buf);
  hla_project64(pl, x, I, xh, buf);
  atb64(gh, xh, K, O, I, (double)pl->hla.block, g_w);
done:
  free(gh);
  free(xh);
  free(buf);
  return rc;
}

double ref_rel_err_f64(const double *a, const double *ref, int64_t n) {
  if (!a || !ref || n <= 0) return NAN;
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double d = a[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return sqrt(num / den);
}

double ref_rel_err(const float *a, const double *ref, int64_t n) {
  if (!a || !ref || n <= 0) return NAN;
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double d = (double)a[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return sqrt(num / den);
}

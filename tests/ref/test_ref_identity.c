/* test_ref_identity.c — the identities of CONTRACT.md 8: HQ without quantization equals g_y.w, HLA
 * `full` equals g_y^T.x (fp64 transforms: to fp64 round-off; the twins' fp32 transforms: to fp32
 * round-off), and the HLA projector is symmetric, idempotent, with trace blocks*r. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ref_util.h"

START_TEST(hq_without_quantization_is_exact) {
  int bs[] = {4, 8, 16, 32, 16};
  int64_t Os[] = {128, 128, 128, 128, 100}; /* the last needs padding: o_pad = 112 */
  for (int c = 0; c < 5; ++c) {
    tp_args a = tp_default(3, 197, Os[c], 137);
    a.b = bs[c];
    hot_layer_plan pl;
    ck_assert_int_eq(tp_make(&a, &pl), 0);
    int64_t T = pl.T, O = pl.O, I = pl.I, op = pl.hq.o_pad;
    float *g = malloc((size_t)(T * O) * sizeof *g), *w = malloc((size_t)(O * I) * sizeof *w);
    float *gt = malloc((size_t)(T * op) * sizeof *gt), *wt = malloc((size_t)(op * I) * sizeof *wt);
    double *ex = malloc((size_t)(T * I) * sizeof *ex), *h = malloc((size_t)(T * I) * sizeof *h);
    tp_rng r;
    tp_seed(&r, 100u + (uint64_t)c);
    tp_fill_normal(&r, g, T * O, 1.0);
    tp_fill_normal(&r, w, O * I, 0.05);
    ck_assert_int_eq(ref_exact_gx(T, O, I, g, w, ex), 0);
    ck_assert_int_eq(ref_hq_gx_f64(&pl, g, w, h), 0);
    double e64 = ref_rel_err_f64(h, ex, T * I);
    /* the twins' fp32 g' and w' (what the kernels quantize), multiplied in fp64, / b */
    ck_assert_int_eq(ref_hq_transform_g(&pl, g, HOT_DT_F32, gt), 0);
    ck_assert_int_eq(ref_hq_transform_w(&pl, w, HOT_DT_F32, wt), 0);
    ck_assert_int_eq(ref_exact_gx(T, op, I, gt, wt, h), 0);
    for (int64_t i = 0; i < T * I; ++i) h[i] /= a.b;
    double e32 = ref_rel_err_f64(h, ex, T * I);
    printf("HQ unquantized T=%lld O=%lld I=%lld b=%d (o_pad %lld): rel err fp64 transforms %.2e, "
           "fp32 transforms %.2e\n",
           (long long)T, (long long)O, (long long)I, a.b, (long long)op, e64, e32);
    ck_assert(e64 < 1e-14);
    ck_assert(e32 < 1e-6);
    free(g);
    free(w);
    free(gt);
    free(wt);
    free(ex);
    free(h);
  }
}
END_TEST

START_TEST(hla_full_is_exact) {
  hot_layout lays[] = {HOT_LAYOUT_SAMPLE, HOT_LAYOUT_FLAT, HOT_LAYOUT_SAMPLE};
  int ps[] = {16, 64, 1};
  for (int c = 0; c < 3; ++c) {
    tp_args a = tp_default(3, 197, 100, 137);
    a.sel = HOT_SEL_FULL;
    a.layout = lays[c];
    a.p = ps[c];
    hot_layer_plan pl;
    ck_assert_int_eq(tp_make(&a, &pl), 0);
    int64_t T = pl.T, O = pl.O, I = pl.I, K = pl.hla.k;
    float *g = malloc((size_t)(T * O) * sizeof *g), *x = malloc((size_t)(T * I) * sizeof *x);
    float *gh = malloc((size_t)(K * O) * sizeof *gh), *xh = malloc((size_t)(K * I) * sizeof *xh);
    double *ex = malloc((size_t)(O * I) * sizeof *ex), *h = malloc((size_t)(O * I) * sizeof *h);
    tp_rng r;
    tp_seed(&r, 200u + (uint64_t)c);
    tp_fill_normal(&r, g, T * O, 1e-3);
    tp_fill_normal(&r, x, T * I, 1.0);
    ck_assert_int_eq(ref_exact_gw(T, O, I, g, x, ex), 0);
    ck_assert_int_eq(ref_hla_gw_f64(&pl, g, x, h), 0);
    double e64 = ref_rel_err_f64(h, ex, O * I);
    ck_assert_int_eq(ref_hla_transform(&pl, g, HOT_DT_F32, O, gh), 0);
    ck_assert_int_eq(ref_hla_transform(&pl, x, HOT_DT_F32, I, xh), 0);
    ck_assert_int_eq(ref_exact_gw(K, O, I, gh, xh, h), 0);
    for (int64_t i = 0; i < O * I; ++i) h[i] /= a.p;
    double e32 = ref_rel_err_f64(h, ex, O * I);
    printf("HLA full p=%d %s T=%lld (K=%lld) O=%lld I=%lld: rel err fp64 %.2e, fp32 transforms "
           "%.2e\n",
           a.p, lays[c] == HOT_LAYOUT_FLAT ? "flat" : "sample", (long long)T, (long long)K,
           (long long)O, (long long)I, e64, e32);
    ck_assert(e64 < 1e-14);
    ck_assert(e32 < 1e-6);
    free(g);
    free(x);
    free(gh);
    free(xh);
    free(ex);
    free(h);
  }
}
END_TEST

/* P = A^T A / p with A (K x T) the projection of the identity: symmetric, P^2 = P, trace = K. */
START_TEST(projector) {
  struct { int64_t B, L; int p; hot_selection sel; int keep, rank; hot_layout lay; } cs[] = {
      {2, 32, 16, HOT_SEL_TRI, 50, 0, HOT_LAYOUT_SAMPLE},
      {3, 64, 64, HOT_SEL_TRI, 50, 0, HOT_LAYOUT_SAMPLE},
      {3, 16, 8, HOT_SEL_PREFIX, 0, 3, HOT_LAYOUT_FLAT},
      {1, 48, 16, HOT_SEL_TRI, 20, 0, HOT_LAYOUT_FLAT}};
  for (int c = 0; c < 4; ++c) {
    tp_args a = tp_default(cs[c].B, cs[c].L, 8, 8);
    a.p = cs[c].p;
    a.sel = cs[c].sel;
    a.keep = cs[c].keep;
    a.rank = cs[c].rank;
    a.layout = cs[c].lay;
    hot_layer_plan pl;
    ck_assert_int_eq(tp_make(&a, &pl), 0);
    int64_t T = pl.T, K = pl.hla.k;
    float *id = calloc((size_t)(T * T), sizeof *id), *A = malloc((size_t)(K * T) * sizeof *A);
    double *P = calloc((size_t)(T * T), sizeof *P);
    for (int64_t t = 0; t < T; ++t) id[t * T + t] = 1.0f;
    ck_assert_int_eq(ref_hla_transform(&pl, id, HOT_DT_F32, T, A), 0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) P[i * T + j] += (double)A[k * T + i] * A[k * T + j];
    double tr = 0, sym = 0, idem = 0;
    for (int64_t i = 0; i < T * T; ++i) P[i] /= a.p;
    for (int64_t i = 0; i < T; ++i) {
      tr += P[i * T + i];
      for (int64_t j = 0; j < T; ++j) {
        sym = fmax(sym, fabs(P[i * T + j] - P[j * T + i]));
        double s = 0;
        for (int64_t k = 0; k < T; ++k) s += P[i * T + k] * P[k * T + j];
        idem = fmax(idem, fabs(s - P[i * T + j]));
      }
    }
    printf("projector p=%d r=%d T=%lld: |P-P^T| %.1e, |P^2-P| %.1e, trace %.6f (blocks*r = %lld)\n",
           a.p, pl.hla.rank, (long long)T, sym, idem, tr, (long long)K);
    ck_assert(sym == 0.0 && idem < 1e-12 && fabs(tr - (double)K) < 1e-9);
    free(id);
    free(A);
    free(P);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("ref_identity");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, hq_without_quantization_is_exact);
  tcase_add_test(tc, hla_full_is_exact);
  tcase_add_test(tc, projector);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

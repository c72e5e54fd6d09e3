/* test_ref_quant.c — the quantizers of CONTRACT.md 6: SR unbiased and reproducible, RTN ties to even,
 * scales (absmax per tensor/row, SAWB with its fallback, canonical fp64 sums), int4 packing. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "ref_util.h"

START_TEST(sr_unbiased) {
  /* one row: the values under test and the amax element (4-bit: s = 0.37 * 7 / 7) */
  const float sc = 0.37f;
  float v[6] = {0.3f * sc, -2.7f * sc, 5.5f * sc, 0.999f * sc, -0.01f * sc, 7.0f * sc};
  hot_quant q = {4, HOT_ROUND_SR, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX};
  const int N = 40000;
  double sum[6] = {0}, sum2[6] = {0};
  int8_t codes[6];
  float s;
  for (int step = 0; step < N; ++step) {
    ck_assert_int_eq(ref_quantize(v, 1, 6, &q, HOT_GRAN_TENSOR, 42, 17, (uint32_t)step, codes, &s),
                     HOT_REF_OK);
    ck_assert_int_eq(codes[5], 7); /* the amax element maps to qmax */
    for (int i = 0; i < 6; ++i) {
      ck_assert_int_le(abs(codes[i]), 7);
      double d = (double)codes[i] * (double)s;
      sum[i] += d;
      sum2[i] += d * d;
    }
  }
  for (int i = 0; i < 5; ++i) {
    double mean = sum[i] / N, var = sum2[i] / N - mean * mean;
    double se = sqrt(var > 0 ? var / N : 0);
    double z = se > 0 ? fabs(mean - (double)v[i]) / se : 0;
    printf("SR mean over %d draws: v = %+.6f mean = %+.6f (|z| = %.2f standard errors)\n", N,
           (double)v[i], mean, z);
    ck_assert(z < 4.0);
  }
}
END_TEST

START_TEST(sr_reproducible_and_keyed) {
  const int64_t n = 4096;
  float *v = malloc((size_t)n * sizeof *v);
  int8_t *a = malloc((size_t)n), *b = malloc((size_t)n);
  tp_rng r;
  tp_seed(&r, 5);
  tp_fill_normal(&r, v, n, 1.0);
  hot_quant q = {4, HOT_ROUND_SR, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX};
  float sa, sb;
  ck_assert_int_eq(ref_quantize(v, 64, 64, &q, HOT_GRAN_TENSOR, 9, 49, 100, a, &sa), 0);
  ck_assert_int_eq(ref_quantize(v, 64, 64, &q, HOT_GRAN_TENSOR, 9, 49, 100, b, &sb), 0);
  ck_assert(memcmp(a, b, (size_t)n) == 0 && sa == sb);
  int64_t d_step = 0, d_tag = 0, d_seed = 0;
  ck_assert_int_eq(ref_quantize(v, 64, 64, &q, HOT_GRAN_TENSOR, 9, 49, 101, b, &sb), 0);
  for (int64_t i = 0; i < n; ++i) d_step += a[i] != b[i];
  ck_assert_int_eq(ref_quantize(v, 64, 64, &q, HOT_GRAN_TENSOR, 9, 50, 100, b, &sb), 0);
  for (int64_t i = 0; i < n; ++i) d_tag += a[i] != b[i];
  ck_assert_int_eq(ref_quantize(v, 64, 64, &q, HOT_GRAN_TENSOR, 10, 49, 100, b, &sb), 0);
  for (int64_t i = 0; i < n; ++i) d_seed += a[i] != b[i];
  printf("SR codes changed of %lld: step+1 %lld, tag+1 %lld, seed+1 %lld; same inputs: identical\n",
         (long long)n, (long long)d_step, (long long)d_tag, (long long)d_seed);
  ck_assert(d_step > n / 10 && d_tag > n / 10 && d_seed > n / 10);
  /* each code is floor or ceil of v/s, drawn with hot_rand_word(seed, tag, step, idx) */
  for (int64_t i = 0; i < n; ++i) {
    int c = hot_quant_sr(v[i], sa, 7, hot_rand_word(9, 49, 100, (uint64_t)i));
    ck_assert_int_eq(c, a[i]);
  }
  free(v);
  free(a);
  free(b);
}
END_TEST

START_TEST(rtn_ties_even_and_rows) {
  float v[12] = {2.5f, 3.5f, -2.5f, 0.5f, -7.0f, 1.49f, /* row 0: amax 7 -> s = 1 */
                 0, 0, 0, 0, 0, 0};                      /* row 1: all zero -> s = 0 */
  hot_quant q = {4, HOT_ROUND_RTN, HOT_GRAN_ROW, HOT_RULE_ABSMAX};
  int8_t c[12];
  float s[2];
  ck_assert_int_eq(ref_quantize(v, 2, 6, &q, HOT_GRAN_ROW, 0, 0, 0, c, s), 0);
  static const int8_t want[12] = {2, 4, -2, 0, -7, 1, 0, 0, 0, 0, 0, 0};
  ck_assert(memcmp(c, want, 12) == 0);
  ck_assert(s[0] == 1.0f && s[1] == 0.0f);
  /* 8-bit per row on random rows: every row's amax element maps to +-127 */
  tp_rng r;
  tp_seed(&r, 77);
  float *m = malloc(197 * 137 * sizeof *m), *sr = malloc(197 * sizeof *sr);
  int8_t *cm = malloc(197 * 137);
  tp_fill_normal(&r, m, 197 * 137, 3.0);
  hot_quant q8 = {8, HOT_ROUND_SR, HOT_GRAN_ROW, HOT_RULE_ABSMAX};
  ck_assert_int_eq(ref_quantize(m, 197, 137, &q8, HOT_GRAN_ROW, 1, 2, 3, cm, sr), 0);
  for (int t = 0; t < 197; ++t) {
    int best = 0;
    for (int i = 1; i < 137; ++i)
      if (fabsf(m[t * 137 + i]) > fabsf(m[t * 137 + best])) best = i;
    ck_assert_int_eq(abs(cm[t * 137 + best]), 127);
    ck_assert(sr[t] == fabsf(m[t * 137 + best]) / 127.0f);
  }
  printf("RTN ties to even (2.5->2, 3.5->4, -2.5->-2); per-row amax -> +-qmax on 197 rows\n");
  free(m);
  free(sr);
  free(cm);
}
END_TEST

/* Naive re-statement of CONTRACT.md's canonical sum, for the check. */
static double chunked(const float *v, int64_t n, int sq) {
  double total = 0.0;
  for (int64_t c0 = 0; c0 < n; c0 += 1024) {
    double part = 0.0;
    for (int64_t i = c0; i < n && i < c0 + 1024; ++i)
      part += sq ? (double)v[i] * (double)v[i] : fabs((double)v[i]);
    total += part;
  }
  return total;
}

START_TEST(sawb_scale) {
  const int64_t rows = 100, cols = 137, n = rows * cols; /* several chunks and a partial one */
  float *v = malloc((size_t)n * sizeof *v), s;
  int8_t *c = malloc((size_t)n);
  tp_rng r;
  tp_seed(&r, 3);
  tp_fill_normal(&r, v, n, 0.02);
  hot_quant q = {4, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_SAWB};
  ck_assert_int_eq(ref_quantize(v, rows, cols, &q, HOT_GRAN_TENSOR, 0, 0, 0, c, &s), 0);
  double s1 = chunked(v, n, 0), s2 = chunked(v, n, 1);
  float clip = (float)(12.1 * sqrt(s2 / (double)n) - 12.2 * (s1 / (double)n));
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = fmaxf(amax, fabsf(v[i]));
  printf("SAWB on N(0, 0.02^2), n = %lld: clip = %.6g (amax %.6g), s = %.6g\n", (long long)n,
         (double)clip, (double)amax, (double)s);
  ck_assert(clip > 0 && s == clip / 7.0f);
  int64_t sat = 0;
  for (int64_t i = 0; i < n; ++i) sat += abs(c[i]) == 7;
  ck_assert(sat > 0);
  /* fallback: equal magnitudes give clip = (12.1 - 12.2) a < 0 -> absmax */
  for (int64_t i = 0; i < n; ++i) v[i] = i % 3 ? 0.5f : -0.5f;
  ck_assert_int_eq(ref_quantize(v, rows, cols, &q, HOT_GRAN_TENSOR, 0, 0, 0, c, &s), 0);
  ck_assert(s == 0.5f / 7.0f);
  for (int64_t i = 0; i < n; ++i) ck_assert_int_eq(abs(c[i]), 7);
  printf("SAWB fallback (clip <= 0): s = amax/qmax = %.6g\n", (double)s);
  free(v);
  free(c);
}
END_TEST

START_TEST(int4_packing) {
  for (int lo = -8; lo <= 7; ++lo)
    for (int hi = -8; hi <= 7; ++hi) {
      unsigned char b = hot_pack_s4(lo, hi);
      ck_assert_int_eq(hot_unpack_s4(b, 0), lo);
      ck_assert_int_eq(hot_unpack_s4(b, 1), hi);
      ck_assert_int_eq(b & 0xf, lo & 0xf); /* element 2j in the low nibble */
    }
  int8_t codes[5 * 3] = {1, -2, 3, -4, 5, -6, 7, -7, 0, 1, 2, 3, -1, -3, -5};
  unsigned char s8[3 * 8], s4[3 * 4];
  ref_store_codes(codes, 5, 3, 1, 8, 0, s8); /* transposed: 3 rows of 8, k = 0..4 real */
  ref_store_codes(codes, 5, 3, 1, 8, 1, s4);
  for (int a = 0; a < 3; ++a)
    for (int k = 0; k < 8; ++k) {
      int want = k < 5 ? codes[k * 3 + a] : 0;
      ck_assert_int_eq(ref_code_at(s8 + a * 8, 0, k), want);
      ck_assert_int_eq(ref_code_at(s4 + a * 4, 1, k), want);
    }
  printf("int4 nibbles: 256 pairs round-trip, element 2j low; stored rows zero past K\n");
}
END_TEST

START_TEST(bad_arguments) {
  float v[4] = {1, 2, 3, NAN}, s[2];
  int8_t c[4];
  hot_quant q = {4, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX}, bad = q;
  ck_assert_int_eq(ref_quantize(NULL, 1, 4, &q, HOT_GRAN_TENSOR, 0, 0, 0, c, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_quantize(v, 0, 4, &q, HOT_GRAN_TENSOR, 0, 0, 0, c, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_quantize(v, 1, 4, &q, HOT_GRAN_AUTO, 0, 0, 0, c, s), HOT_REF_EARG);
  bad.bits = 9;
  ck_assert_int_eq(ref_quantize(v, 1, 4, &bad, HOT_GRAN_TENSOR, 0, 0, 0, c, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_quantize(v, 1, 4, &q, HOT_GRAN_TENSOR, 0, 0, 0, c, s),
                   HOT_REF_ENONFINITE);
  v[3] = INFINITY;
  ck_assert_int_eq(ref_quantize(v, 2, 2, &q, HOT_GRAN_ROW, 0, 0, 0, c, s), HOT_REF_ENONFINITE);
  ck_assert_str_eq(ref_status_name(HOT_REF_ENONFINITE), "non-finite value");
  ck_assert_str_eq(ref_status_name(12345), "unknown status");
  printf("quantizer: NULL, zero size, AUTO, 9 bits, NaN, Inf -> error codes\n");
}
END_TEST

int main(void) {
  Suite *s = suite_create("ref_quant");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, sr_unbiased);
  tcase_add_test(tc, sr_reproducible_and_keyed);
  tcase_add_test(tc, rtn_ties_even_and_rows);
  tcase_add_test(tc, sawb_scale);
  tcase_add_test(tc, int4_packing);
  tcase_add_test(tc, bad_arguments);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

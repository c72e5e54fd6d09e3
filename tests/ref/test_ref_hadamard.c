/* test_ref_hadamard.c — the transforms of CONTRACT.md 2 and 4.2: Philox known answers, H_n H_n = n I,
 * block application = I (x) H_b, sequency mapping, HLA basis ranks and rows. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basis.h"
#include "hot_math.cuh"
#include "ref_util.h"

static int popc(uint32_t v) {
  int c = 0;
  for (; v; v &= v - 1) ++c;
  return c;
}
static double had(uint32_t r, uint32_t c) { return popc(r & c) & 1 ? -1.0 : 1.0; }

START_TEST(philox_known_answers) {
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int i = 0; i < 3; ++i) {
    const uint32_t *k = kat[i];
    hot_philox_out o = hot_philox4x32_10(k[0], k[1], k[2], k[3], k[4], k[5]);
    printf("philox KAT %d: %08x %08x %08x %08x\n", i, o.v[0], o.v[1], o.v[2], o.v[3]);
    for (int j = 0; j < 4; ++j) ck_assert_uint_eq(o.v[j], k[6 + j]);
  }
  /* the stream: counter = {idx>>2 lo, idx>>2 hi, tag, step}, word idx & 3, key = seed */
  for (uint64_t idx = 0; idx < 4; ++idx) ck_assert_uint_eq(hot_rand_word(0, 0, 0, idx), kat[0][6 + idx]);
  uint64_t seed = 0x299f31d0a4093822ull, idx = (0x05a308d3ull << 34) | (0x243f6a88ull << 2) | 3u;
  hot_philox_out o = hot_philox4x32_10(0x243f6a88, 0x05a308d3, 77, 5, 0xa4093822, 0x299f31d0);
  ck_assert_uint_eq(hot_rand_word(seed, 77, 5, idx), o.v[3]);
}
END_TEST

START_TEST(hadamard_squared) {
  float *col = malloc(1024 * sizeof *col);
  int worst = 0;
  for (int n = 1; n <= 1024; n <<= 1)
    for (int j = 0; j < n; ++j) {
      memset(col, 0, (size_t)n * sizeof *col);
      col[j] = 1.0f;
      hot_fwht(col, n); /* column j of H_n */
      for (int i = 0; i < n; ++i)
        if ((double)col[i] != had((uint32_t)i, (uint32_t)j)) worst = 1;
      hot_fwht(col, n); /* H_n H_n e_j = n e_j */
      for (int i = 0; i < n; ++i)
        if (col[i] != (i == j ? (float)n : 0.0f)) worst = 1;
    }
  printf("H_n entries = (-1)^popcount(i&j) and H_n H_n = n I for n = 1..1024: %s\n",
         worst ? "FAIL" : "exact");
  ck_assert_int_eq(worst, 0);
  free(col);
}
END_TEST

/* g' and w' of the twin equal the dense (I (x) H_b) products, exactly on integer data. */
START_TEST(block_is_kronecker) {
  int bs[] = {1, 4, 8, 16, 32};
  for (int bi = 0; bi < 5; ++bi) {
    tp_args a = tp_default(3, 7, 100, 9);
    a.b = bs[bi];
    hot_layer_plan pl;
    ck_assert_int_eq(tp_make(&a, &pl), 0);
    int64_t T = pl.T, O = pl.O, I = pl.I, op = pl.hq.o_pad;
    float *g = malloc((size_t)(T * O) * sizeof *g), *w = malloc((size_t)(O * I) * sizeof *w);
    float *gt = malloc((size_t)(T * op) * sizeof *gt), *wt = malloc((size_t)(op * I) * sizeof *wt);
    tp_rng r;
    tp_seed(&r, 11u + (uint64_t)bi);
    for (int64_t i = 0; i < T * O; ++i) g[i] = (float)((int)(tp_u64(&r) % 201) - 100);
    for (int64_t i = 0; i < O * I; ++i) w[i] = (float)((int)(tp_u64(&r) % 201) - 100);
    ck_assert_int_eq(ref_hq_transform_g(&pl, g, HOT_DT_F32, gt), HOT_REF_OK);
    ck_assert_int_eq(ref_hq_transform_w(&pl, w, HOT_DT_F32, wt), HOT_REF_OK);
    int64_t bad = 0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t o = 0; o < op; ++o) { /* (g (I (x) H_b))[t,o], H_b symmetric */
        double s = 0.0;
        int64_t base = o / a.b * a.b;
        for (int64_t j = base; j < base + a.b && j < O; ++j)
          s += (double)g[t * O + j] * had((uint32_t)(j - base), (uint32_t)(o - base));
        if (s != (double)gt[t * op + o]) ++bad;
      }
    for (int64_t o = 0; o < op; ++o)
      for (int64_t i = 0; i < I; ++i) {
        double s = 0.0;
        int64_t base = o / a.b * a.b;
        for (int64_t j = base; j < base + a.b && j < O; ++j)
          s += had((uint32_t)(o - base), (uint32_t)(j - base)) * (double)w[j * I + i];
        if (s != (double)wt[o * I + i]) ++bad;
      }
    printf("block FWHT b=%d, O=100 (o_pad=%lld): mismatches vs I(x)H_b = %lld\n", a.b,
           (long long)op, (long long)bad);
    ck_assert_int_eq(bad, 0);
    free(g);
    free(w);
    free(gt);
    free(wt);
  }
}
END_TEST

START_TEST(sequency_mapping) {
  int64_t checked = 0;
  for (int lg = 1; lg <= 10; ++lg) {
    int n = 1 << lg;
    unsigned char *seen = calloc((size_t)n, 1);
    for (int s = 0; s < n; ++s) {
      uint32_t row = basis_seq_to_row((uint32_t)s, lg);
      ck_assert_uint_lt(row, (uint32_t)n);
      ck_assert(!seen[row]);
      seen[row] = 1;
      int changes = 0;
      for (int k = 1; k < n; ++k)
        if (had(row, (uint32_t)k) != had(row, (uint32_t)(k - 1))) ++changes;
      ck_assert_int_eq(changes, s);
      ck_assert_uint_eq(basis_row_to_seq(row, lg), (uint32_t)s);
      ++checked;
    }
    free(seen);
  }
  printf("sequency -> natural row: %lld rows for n = 2..1024, sign changes = sequency\n",
         (long long)checked);
}
END_TEST

START_TEST(basis_ranks_and_rows) {
  uint16_t rows[HOT_MAX_P];
  static const int want[][2] = {{16, 10}, {32, 10}, {64, 36}, {128, 36}, {256, 136}, {1024, 528}};
  for (int i = 0; i < 6; ++i)
    ck_assert_int_eq(basis_select(HOT_SEL_TRI, want[i][0], 50, 0, rows), want[i][1]);
  static const uint16_t p16[10] = {0, 8, 12, 4, 14, 10, 2, 3, 11, 1};
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 16, 50, 0, rows), 10);
  for (int i = 0; i < 10; ++i) ck_assert_uint_eq(rows[i], p16[i]);
  printf("tri P=50 ranks:");
  for (int lg = 1; lg <= 10; ++lg) {
    int p = 1 << lg, m2 = 1;
    while (m2 * 4 <= p) m2 *= 4;
    int m = 1;
    while (m * m < m2) ++m;
    for (int keep = 1; keep <= 50; ++keep) {
      int r = basis_select(HOT_SEL_TRI, p, keep, 0, rows);
      ck_assert_int_ge(r, 1);
      ck_assert_int_le(r, p);
      for (int j = 0; j < r; ++j) {
        ck_assert_uint_lt(rows[j], (unsigned)p);
        if (j) ck_assert_uint_lt(basis_row_to_seq(rows[j - 1], lg), basis_row_to_seq(rows[j], lg));
      }
      if (keep == 50) {
        ck_assert_int_eq(r, m * (m + 1) / 2);
        printf(" p=%d:%d", p, r);
      }
    }
    ck_assert_int_eq(basis_select(HOT_SEL_TRI, p, 51, 0, rows), -1);
    ck_assert_int_eq(basis_select(HOT_SEL_TRI, p, 0, 0, rows), -1);
    ck_assert_int_eq(basis_select(HOT_SEL_FULL, p, 0, 0, rows), p);
    ck_assert_int_eq(basis_select(HOT_SEL_PREFIX, p, 0, p / 2, rows), p / 2);
    for (int j = 0; j < p / 2; ++j) ck_assert_uint_eq(basis_row_to_seq(rows[j], lg), (unsigned)j);
  }
  printf("\n");
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 64, 50, 0, rows), 36);
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 24, 50, 0, rows), -1);
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 2048, 50, 0, rows), -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ref_hadamard");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, philox_known_answers);
  tcase_add_test(tc, hadamard_squared);
  tcase_add_test(tc, block_is_kronecker);
  tcase_add_test(tc, sequency_mapping);
  tcase_add_test(tc, basis_ranks_and_rows);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

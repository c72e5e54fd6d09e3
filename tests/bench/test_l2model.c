/* test_l2model.c — bench/l2model.c's LRU simulation of a GEMM's DRAM bytes on grids with known
 * answers (an L2 that holds everything, one that holds a single granule, a wave that shares its
 * panels, a segmented C that stays in L2 or is evicted), its refusals, and the figures of
 * bench_large's GEMM shapes in the row-major order and the grouped orders of docs/gpu-model.md
 * (printed; the row-major ones checked against the doc's table). */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "l2model.h"

static l2_gemm_grid grid(int64_t tm, int64_t tn, int64_t kt, int64_t seg, int group,
                         int64_t conc) {
  l2_gemm_grid g = {.tiles_m = tm, .tiles_n = tn, .ktiles = kt, .seg_ktiles = seg,
                    .a_bytes = 100, .b_bytes = 10, .c_bytes = 1000, .group_m = group,
                    .concurrent = conc};
  return g;
}

START_TEST(everything_fits) {
  for (int group = 0; group <= 2; group += 2)
    for (int64_t conc = 1; conc <= 9; conc += 4) {
      const l2_gemm_grid g = grid(3, 5, 4, 0, group, conc);
      double out[3], comp[3];
      ck_assert_int_eq(l2_gemm_dram(&g, 1e12, out, comp), 0);
      for (int i = 0; i < 3; ++i) ck_assert_double_eq(out[i], comp[i]);
      ck_assert_double_eq(comp[0], 3 * 4 * 100.0);
      ck_assert_double_eq(comp[1], 5 * 4 * 10.0);
      ck_assert_double_eq(comp[2], 15 * 1000.0);
    }
}
END_TEST

/* An L2 of one byte holds only the granule last touched: one tile row of two tiles in one wave,
 * one K tile: A(0) miss, B(0) miss, A(0) miss again (B evicted it), B(1) miss; both C tiles
 * written once (evicted dirty, or written back at the end). */
START_TEST(single_granule_cache) {
  const l2_gemm_grid g = grid(1, 2, 1, 0, 0, 2);
  double out[3], comp[3];
  ck_assert_int_eq(l2_gemm_dram(&g, 1.0, out, comp), 0);
  ck_assert_double_eq(out[0], 200.0);
  ck_assert_double_eq(out[1], 20.0);
  ck_assert_double_eq(out[2], 2000.0);
}
END_TEST

/* Row-major, one tile at a time (concurrent 1), C tiles of 1 byte, an L2 of 120 bytes (one A
 * granule, two B granules): the two tiles of a row share their A granule (a hit), and a row's
 * two B granules are gone by the next row (evicted by its A granule). */
START_TEST(panel_reuse) {
  l2_gemm_grid g = grid(2, 2, 1, 0, 0, 1);
  g.c_bytes = 1;
  double out[3], comp[3];
  ck_assert_int_eq(l2_gemm_dram(&g, 120.0, out, comp), 0);
  ck_assert_double_eq(out[0], 200.0); /* each A granule once */
  ck_assert_double_eq(out[1], 40.0);  /* B(0), B(1) for each row */
  ck_assert_double_eq(out[2], comp[2]);
}
END_TEST

/* Segmented: 2 segments of 2 K tiles; with an L2 that holds the wave's C tiles the segment end's
 * add hits (C once); with one that cannot, C is written back and read again at the add. */
START_TEST(segments) {
  const l2_gemm_grid g = grid(1, 2, 4, 2, 0, 2);
  double out[3], comp[3];
  ck_assert_int_eq(l2_gemm_dram(&g, 1e6, out, comp), 0);
  ck_assert_double_eq(out[2], comp[2]);
  ck_assert_int_eq(l2_gemm_dram(&g, 1.0, out, comp), 0);
  /* each tile: segment 0 stored (dirty, evicted: written), read back at the end's add, written */
  ck_assert_double_eq(out[2], 2 * 3 * 1000.0);
}
END_TEST

START_TEST(refusals) {
  double out[3] = {1, 1, 1}, comp[3] = {1, 1, 1};
  l2_gemm_grid g = grid(0, 2, 1, 0, 0, 1);
  ck_assert_int_eq(l2_gemm_dram(&g, 1e6, out, comp), -1);
  ck_assert_double_eq(out[0], 0.0);
  g = grid(2, 2, 1, 0, 0, 0);
  ck_assert_int_eq(l2_gemm_dram(&g, 1e6, out, comp), -1);
  g = grid(1 << 21, 2, 1, 0, 0, 1);
  ck_assert_int_eq(l2_gemm_dram(&g, 1e6, out, comp), -1);
  ck_assert_int_eq(l2_gemm_dram(NULL, 1e6, out, comp), -1);
}
END_TEST

/* bench_large's six GEMMs (128 x 128 x 64 tiles, int8 codes, fp32 C, 264 tiles in flight: 2
 * blocks on each of 132 SMs) through a 50 MB L2: row-major as gemm_int.cu runs them (checked: the
 * doc's table) and the grouped orders (printed). */
START_TEST(bench_large_orders) {
  static const struct {
    const char *name;
    int64_t m, n, k, seg;
    double row_major;
  } s[] = {{"square g_x", 8192, 4096, 4096, 0, 1.00},   {"square g_w", 4096, 4096, 4608, 576, 1.49},
           {"gate_up g_x", 8192, 4096, 11008, 0, 2.20}, {"gate_up g_w", 11008, 4096, 4608, 576, 1.61},
           {"down g_x", 8192, 11008, 4096, 0, 3.08},    {"down g_w", 4096, 11008, 4608, 576, 3.05}};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; ++i) {
    printf("%-12s", s[i].name);
    for (int group = 0; group <= 32; group += group ? group : 8) {
      const l2_gemm_grid g = {.tiles_m = (s[i].m + 127) / 128, .tiles_n = (s[i].n + 127) / 128,
                              .ktiles = s[i].k / 64, .seg_ktiles = s[i].seg / 64,
                              .a_bytes = 128 * 64, .b_bytes = 128 * 64, .c_bytes = 128 * 128 * 4,
                              .group_m = group, .concurrent = 264};
      double out[3], comp[3];
      ck_assert_int_eq(l2_gemm_dram(&g, 50e6, out, comp), 0);
      const double r = (out[0] + out[1] + out[2]) / (comp[0] + comp[1] + comp[2]);
      printf("  %s %.2f", group ? "grouped" : "row-major", r);
      if (group) printf(" (%d)", group);
      if (!group) ck_assert_msg(fabs(r - s[i].row_major) < 0.005, "%s: %.3f", s[i].name, r);
    }
    printf("\n");
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("l2model");
  TCase *t = tcase_create("core");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, everything_fits);
  tcase_add_test(t, single_granule_cache);
  tcase_add_test(t, panel_reuse);
  tcase_add_test(t, segments);
  tcase_add_test(t, refusals);
  tcase_add_test(t, bench_large_orders);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  const int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

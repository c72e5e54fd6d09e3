/* test_memory.c — hot-bench --memory on tests/bench/tiny.lua (label bench): checks the output of
 * the binary, not its internals:
 *  - one row per (layer, recipe hot / paper_code, batch 1, 2 (the spec's), 4), each a real save
 *    into a buffer of exactly hot_layer_saved_bytes whose bytes are the method's count K·I + 4
 *    per scale group plus at most 15 (ratio in [1, 1.05]), the context's stats equal to it ("=");
 *  - the backward column: "unpack I·K -> I·k_pad B" where K is not a multiple of the GEMM's K
 *    tile (every row of this spec), with I·K matching the row's I and K;
 *  - the summary line, exit 0; a layer of two tokens, whose K exceeds 4 T, counted as keeping
 *    more than an fp32 x; --memory with another mode is a one-line error, exit 1. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_cmd.h"

START_TEST(test_rows) {
  int st;
  char *out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --memory 2>&1", &st);
  printf("%s", out);
  ck_assert_msg(st == 0, "exit %d", st);
  ck_assert(!strncmp(out, "hot-bench --memory: bench_tiny", 30));
  static const char *const layers[3] = {"a", "b", "c"}, *const recipes[2] = {"hot", "paper_code"};
  static const long long batches[3] = {1, 2, 4};
  int seen[3][2][3] = {{{0}}}, rows = 0;
  for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    char name[64], recipe[32], eq[16];
    long long B, T, I, K, G, saved, method, up_r, up_w;
    double ratio, fp32;
    int n = sscanf(line, "%63s %31s %lld %lld %lld %lld %lld %lld %lld %lf %lf %15s unpack %lld -> %lld",
                   name, recipe, &B, &T, &I, &K, &G, &saved, &method, &ratio, &fp32, eq, &up_r,
                   &up_w);
    if (n < 12) continue;
    int li = -1, ri = -1, bi = -1;
    for (int i = 0; i < 3; ++i) li = strcmp(name, layers[i]) ? li : i;
    for (int i = 0; i < 2; ++i) ri = strcmp(recipe, recipes[i]) ? ri : i;
    for (int i = 0; i < 3; ++i) bi = B == batches[i] ? i : bi;
    ck_assert_msg(li >= 0 && ri >= 0 && bi >= 0, "row: %.200s", line);
    seen[li][ri][bi]++;
    rows++;
    ck_assert_int_eq(T, B * 197);
    ck_assert_int_eq(method, I * K + 4 * G);
    ck_assert_msg(saved >= method && saved - method <= 15, "saved %lld method %lld", saved, method);
    ck_assert_int_eq(saved, (I * K + 15) / 16 * 16 + 4 * G);
    ck_assert_msg(ratio >= 1.0 && ratio <= 1.05, "ratio %.4f: %.200s", ratio, line);
    ck_assert_str_eq(eq, "=");
    ck_assert_msg(n == 14, "no unpack column (every K here needs padding): %.200s", line);
    ck_assert_int_eq(up_r, I * K);
    ck_assert_int_gt(up_w, up_r);
    ck_assert_int_eq(up_w % (16 * I), 0); /* I rows of k_pad, a multiple of 16 */
    if (ri == 1 && B > 1) ck_assert_int_eq(G, B); /* paper_code: per sample */
  }
  for (int l = 0; l < 3; ++l)
    for (int r = 0; r < 2; ++r)
      for (int b = 0; b < 3; ++b)
        ck_assert_msg(seen[l][r][b] == 1, "row %s %s B=%lld seen %d times", layers[l], recipes[r],
                      batches[b], seen[l][r][b]);
  ck_assert_ptr_nonnull(strstr(out, "18 rows with ABC: largest saved / method "));
  ck_assert_ptr_nonnull(strstr(out, "; 0 above 1.05 or with stats != the buffer"));
  free(out);
}
END_TEST

START_TEST(test_one_batch_and_refusal) {
  int st;
  char *out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --memory --batch 3 --layer b 2>&1", &st);
  printf("%s", out);
  ck_assert_msg(st == 0, "exit %d", st);
  ck_assert_ptr_nonnull(strstr(out, "\nb            hot           3 "));
  ck_assert_ptr_nonnull(strstr(out, "\nb            paper_code    3 "));
  ck_assert_ptr_nonnull(strstr(out, "2 rows with ABC"));
  free(out);
  /* two tokens: the hot recipe's one block keeps K = 36 rows > 4 T: said in the summary */
  out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --memory --batch 1 --tokens 2 --layer a 2>&1", &st);
  printf("%s", out);
  ck_assert_msg(st == 0, "exit %d", st);
  ck_assert_ptr_nonnull(strstr(out, "\n1 rows keep more than an fp32 x (/fp32 > 1)"));
  free(out);
  out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --memory --scales 2>&1", &st);
  ck_assert_int_eq(st, 1);
  ck_assert_ptr_nonnull(strstr(out, "modes of their own"));
  free(out);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bench_memory");
  TCase *tc = tcase_create("memory");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_rows);
  tcase_add_test(tc, test_one_batch_and_refusal);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

/* test_paper_diffs.c — hot-bench --paper-diffs on tests/bench/tiny.lua (label bench): checks the
 * output of the binary, not its internals:
 *  - every layer and data kind prints a validation line saying the what-if baseline equals the
 *    CPU twins' g_x and g_w bit for bit (through the public API on the CPU backend);
 *  - the table has one row per (layer, data kind, variant): baseline, a:eps, b:sawb32,
 *    b:sawb32pw, d:fsum, e:sr, redraw, all (x^ and g^ per sample in all of them, as paper_code
 *    plans them; no c:sample row any more); errors are finite and in (0, 1); the baseline's
 *    deltas are 0; d only changes g_w (its g_x delta is 0 and no seed's g_x bits change); e,
 *    redraw and all change the bits of both on every seed;
 *  - a layer that paper_code refuses (p = 4096 for L = 4096) gets a "not planned" line naming
 *    the planner's reason, exit 2; --seeds out of range is a one-line error, exit 1. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run_cmd.h"


static const char *const layers[3] = {"a", "b", "c"};
static const char *const kinds[2] = {"gaussian", "walks"};
static const char *const variants[8] = {"baseline", "a:eps", "b:sawb32", "b:sawb32pw",
                                        "d:fsum",   "e:sr",  "redraw",   "all"};

START_TEST(test_table) {
  int st;
  char *out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --paper-diffs --seeds 3 2>&1", &st);
  printf("%s", out);
  ck_assert_msg(st == 0, "exit %d", st);
  ck_assert(!strncmp(out, "hot-bench --paper-diffs: bench_tiny", 35));
  int seen[3][2][8] = {{{0}}};
  int valid = 0;
  for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    char name[64], kind[32], var[32];
    if (!strncmp(line, "validation ", 11)) {
      ck_assert_msg(sscanf(line + 11, "%63s %31s", name, kind) == 2, "%.200s", line);
      const char *eol = strchr(line, '\n');
      const char *ok = strstr(line, "g_x bit-exact, g_w bit-exact");
      ck_assert_msg(ok && (!eol || ok < eol), "not bit-exact: %.300s", line);
      ++valid;
      continue;
    }
    double v[10];
    int gxc, gxn, gwc, gwn;
    int n = sscanf(line, "%63s %31s %31s %lf %lf %lf %lf %lf %lf %lf %lf gx %d/%d gw %d/%d", name,
                   kind, var, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &gxc, &gxn,
                   &gwc, &gwn);
    if (n < 3) continue;
    int li = -1, ki = -1, vi = -1;
    for (int i = 0; i < 3; ++i) if (!strcmp(name, layers[i])) li = i;
    for (int i = 0; i < 2; ++i) if (!strcmp(kind, kinds[i])) ki = i;
    for (int i = 0; i < 8; ++i) if (!strcmp(var, variants[i])) vi = i;
    if (li < 0 || ki < 0 || vi < 0) continue;
    ck_assert_msg(n == 15, "row: %.200s", line);
    seen[li][ki][vi] += 1;
    ck_assert_int_eq(gxn, 3);
    ck_assert_int_eq(gwn, 3);
    ck_assert_msg(v[0] > 0 && v[0] < 1 && v[2] > 0 && v[2] < 1, "errors: %.200s", line);
    if (vi == 0) ck_assert(v[4] == 0 && v[6] == 0 && gxc == 0 && gwc == 0);
    if (vi == 4) /* the g_w sum: g_x untouched, g_w changed */
      ck_assert_msg(v[4] == 0 && gxc == 0 && gwc == 3, "%.200s", line);
    if (vi >= 5) ck_assert_msg(gxc == 3 && gwc == 3, "%.200s", line); /* new draws: new bits */
  }
  for (int l = 0; l < 3; ++l)
    for (int k = 0; k < 2; ++k)
      for (int v = 0; v < 8; ++v)
        ck_assert_msg(seen[l][k][v] == 1, "row %s %s %s: %d times", layers[l], kinds[k],
                      variants[v], seen[l][k][v]);
  ck_assert_int_eq(valid, 6); /* 3 layers x 2 data kinds */
  free(out);
}
END_TEST

START_TEST(test_refusals) {
  int st;
  char *out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --paper-diffs --layer a --tokens 4096 2>&1", &st);
  printf("%s", out);
  ck_assert_msg(st == 2, "exit %d", st);
  ck_assert_msg(strstr(out, "not planned under paper_code") && strstr(out, "4096"), "%s", out);
  free(out);
  out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --paper-diffs --seeds 0 2>&1", &st);
  ck_assert_msg(st == 1 && strstr(out, "--seeds"), "exit %d: %s", st, out);
  free(out);
}
END_TEST

int main(void) {
  Suite *s = suite_create("paper_diffs");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_table);
  tcase_add_test(tc, test_refusals);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

/* test_gemm_paths.c — hot-bench --gemm-paths (bench/paths.c, label bench), run as a program on
 * tests/bench/tiny.lua:
 *  - bad arguments: --precompile without --gemm-paths, --gemm-paths with --scales, --precompile
 *    without HOT_CACHE_DIR: exit 1 with a one-line reason;
 *  - no 9.0 device: the CPU backend and the fake driver as an 8.0 device both skip the mode
 *    visibly (a "skipped" line naming why, JSON gemm_paths_skipped), exit 0;
 *  - on the fake 9.0 driver with the fake cuBLAS/cuBLASLt (kernels do not run, every event reads
 *    0.01 ms): --precompile fills a fresh cache, and the run on it compiles nothing more; per
 *    product the table has a row for each of mma_s8, wgmma_s8, tma_s8, cublas_bf16 and
 *    cublaslt_fp8; the JSON names each path's GEMM kernels (hot_gemm_mma_s8_*, hot_gemm_wgmma_s8_*,
 *    hot_gemm_tma_s8_*: the names of the launches the profiling saw, checked against the plan by
 *    hot-bench) with --iters runs each, the fake's 0.01 ms, TOP/s = the plan's ops / 0.01 ms, the
 *    INT8 share and the BF16/FP8 ratios (1: every event is 0.01 ms); the paths agree with each
 *    other (the outputs of kernels that do not run stay as filled) and not with the CPU backend,
 *    so the exit status is 2 there, with the first difference named. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_cmd.h"

#define RUN_BENCH HOT_BENCH_EXE " " HOT_BENCH_SPEC

static int count_in(const char *p, const char *needle) {
  int n = 0;
  for (const char *q = strstr(p, needle); q; q = strstr(q + 1, needle)) ++n;
  return n;
}

/* Number after "key": from p on (first occurrence); NAN for null; fails when absent. */
static double num_after(const char *p, const char *key) {
  char k[96];
  snprintf(k, sizeof k, "\"%s\": ", key);
  const char *q = strstr(p, k);
  ck_assert_msg(q != NULL, "key %s missing", key);
  q += strlen(k);
  if (!strncmp(q, "null", 4)) return NAN;
  return strtod(q, NULL);
}

static int cache_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    n += l > 5 && !strcmp(e->d_name + l - 5, ".hotk");
  }
  closedir(d);
  return n;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strdup(buf);
}

START_TEST(test_bad_arguments) {
  int st;
  char *o = run(RUN_BENCH " --precompile 2>&1", &st);
  ck_assert_msg(st == 1 && strstr(o, "--precompile is a part of --gemm-paths"), "exit %d: %s", st, o);
  free(o);
  o = run(RUN_BENCH " --gemm-paths --scales 2>&1", &st);
  ck_assert_msg(st == 1 && strstr(o, "--gemm-paths, --memory and --model are modes of their own"), "exit %d: %s", st, o);
  free(o);
  o = run("env -u HOT_CACHE_DIR " RUN_BENCH " --gemm-paths --precompile 2>&1", &st);
  ck_assert_msg(st == 1 && strstr(o, "--precompile needs HOT_CACHE_DIR"), "exit %d: %s", st, o);
  free(o);
  o = run(RUN_BENCH " --gemm-paths --iters 0 2>&1", &st);
  ck_assert_msg(st == 1 && strstr(o, "--iters='0': expected an integer in [1, 100000]"), "exit %d: %s", st, o);
  free(o);
}
END_TEST

START_TEST(test_cpu_backend_skips) {
  int st;
  unlink("paths_cpu.json");
  char *o = run(RUN_BENCH " --gemm-paths --backend cpu --out paths_cpu.json 2>&1", &st);
  ck_assert_msg(st == 0, "exit %d: %s", st, o);
  ck_assert_msg(strstr(o, "gemm paths: skipped: no GPU (CPU backend"), "%s", o);
  free(o);
  char *j = slurp("paths_cpu.json");
  ck_assert_msg(strstr(j, "\"mode\": \"gemm_paths\"") && strstr(j, "\"gemm_paths_skipped\": \"no GPU"), "%s", j);
  free(j);
}
END_TEST

#ifdef HOT_FAKE_CUDA
START_TEST(test_not_sm90_skips) {
  int st;
  char *o = run("HOT_CUDA_DRIVER=" HOT_FAKE_CUDA_SM80 " " RUN_BENCH " --gemm-paths --backend cuda --json 2>/dev/null", &st);
  ck_assert_msg(st == 0, "exit %d: %s", st, o);
  ck_assert_msg(strstr(o, "\"gemm_paths_skipped\": \"") && strstr(o, "compute capability 8.0, not 9.0"), "%s", o);
  ck_assert_msg(!strstr(o, "\"products\""), "layers ran on an 8.0 device: %s", o);
  free(o);
}
END_TEST

START_TEST(test_three_paths_on_fakes) {
  ck_assert_int_eq(system("rm -rf paths_home paths_cache paths.json && mkdir -p paths_home/lib64 paths_cache"), 0);
  ck_assert_int_eq(symlink(HOT_FAKE_CUBLASLT, "paths_home/lib64/libcublasLt.so.13"), 0);
  ck_assert_int_eq(symlink(HOT_FAKE_CUBLASLT, "paths_home/lib64/libcublas.so.13"), 0);
  int st;
  /* the check size capped below the benchmark size: the paths also run there */
  char *o = run("HOT_CACHE_DIR=paths_cache " RUN_BENCH " --layer a --check-macs 1000000 --gemm-paths --precompile 2>&1", &st);
  ck_assert_msg(st == 0 && strstr(o, "precompile a: 3 paths"), "exit %d: %s", st, o);
  free(o);
  int n0 = cache_entries("paths_cache");
  ck_assert_msg(n0 > 0, "--precompile compiled nothing");
  o = run("HOT_CUDA_DRIVER=" HOT_FAKE_CUDA " HOT_CUDA_HOME=paths_home HOT_CACHE_DIR=paths_cache " RUN_BENCH
          " --layer a --check-macs 1000000 --gemm-paths --backend cuda --iters 3 --warmup 1 --out paths.json 2>&1",
          &st);
  ck_assert_msg(st == 2, "exit %d (the fake computes nothing: the CPU comparison must fail):\n%s", st, o);
  ck_assert_int_eq(cache_entries("paths_cache"), n0); /* nothing compiled beyond --precompile */
  const char *rows[5] = {"mma_s8 ", "wgmma_s8 ", "tma_s8 ", "cublas_bf16 ", "cublaslt_fp8 "};
  const char *prods[2] = {"g_x", "g_w"};
  for (int p = 0; p < 2; ++p)
    for (int r = 0; r < 5; ++r) {
      char want[64];
      snprintf(want, sizeof want, "\n%-7s %s", prods[p], rows[r]);
      ck_assert_msg(strstr(o, want) != NULL, "no row '%s' in:\n%s", want, o);
    }
  ck_assert_msg(strstr(o, "mma_s8 vs the CPU backend (T ") && strstr(o, "g_x[0]: gpu"), "no first difference: %s", o);
  free(o);
  char *j = slurp("paths.json");
  ck_assert_msg(strstr(j, "\"mode\": \"gemm_paths\"") && strstr(j, "\"gemm_paths_skipped\": null"), "%.400s", j);
  double peak = num_after(j, "int8_tops");
  ck_assert_msg(peak > 0, "no INT8 ceiling");
  const char *pre[3] = {"hot_gemm_mma_s8_", "hot_gemm_wgmma_s8_", "hot_gemm_tma_s8_"};
  const char *names[3] = {"mma_s8", "wgmma_s8", "tma_s8"};
  const char *q = strstr(j, "\"product\": \"g_x\"");
  for (int p = 0; p < 2; ++p) {
    ck_assert_msg(q != NULL, "product %s missing", prods[p]);
    ck_assert(num_after(q, "bf16_ms") == 0.01 && num_after(q, "fp8_ms") == 0.01);
    for (int i = 0; i < 3; ++i) {
      char key[64];
      snprintf(key, sizeof key, "{\"path\": \"%s\"", names[i]);
      const char *e = strstr(q, key);
      ck_assert_msg(e != NULL, "%s %s missing", prods[p], names[i]);
      char k2[96];
      snprintf(k2, sizeof k2, "\"kernel\": \"%s", pre[i]);
      const char *kn = strstr(e, "\"kernel\": ");
      ck_assert_msg(kn && !strncmp(kn, k2, strlen(k2)), "%s %s: kernel %.60s", prods[p], names[i], kn);
      ck_assert(strstr(e, "\"status\": \"\"") != NULL && strstr(e, "\"status\": \"\"") < strchr(e, '}'));
      ck_assert(num_after(e, "ms") == 0.01 && num_after(e, "runs") == 3);
      double ops = num_after(e, "int_ops"), tops = num_after(e, "tops");
      ck_assert_msg(ops > 0 && fabs(tops - ops / 0.01 / 1e9) < 1e-5 * tops, "tops %g ops %g", tops, ops);
      ck_assert(fabs(num_after(e, "int8_pct") - 100 * tops / peak) < 1e-3 * (100 * tops / peak));
      ck_assert(num_after(e, "vs_bf16") == 1 && num_after(e, "vs_fp8") == 1);
      const char *id = strstr(e, "\"identical\": ");
      ck_assert_msg(!strncmp(id + 13, i ? "true" : "null", 4), "%s %s identical: %.10s", prods[p], names[i], id + 13);
      const char *ce = strstr(e, "\"cpu_equal\": ");
      ck_assert_msg(!strncmp(ce + 13, "false", 5), "%s %s cpu_equal: %.10s", prods[p], names[i], ce + 13);
    }
    q = strstr(q, "\"product\": \"g_w\"");
  }
  ck_assert_int_eq(count_in(j, "{\"path\": "), 6);
  free(j);
  ck_assert_int_eq(system("rm -rf paths_home paths_cache paths.json"), 0);
}
END_TEST
#endif

int main(void) {
  Suite *s = suite_create("gemm_paths");
  TCase *tc = tcase_create("paths");
  tcase_set_timeout(tc, 280);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_cpu_backend_skips);
#ifdef HOT_FAKE_CUDA
  tcase_add_test(tc, test_not_sm90_skips);
  tcase_add_test(tc, test_three_paths_on_fakes);
#endif
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

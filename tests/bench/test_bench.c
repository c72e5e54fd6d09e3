/* test_bench.c — hot-bench's CPU mode (label bench): runs the binary on tests/bench/tiny.lua and
 * checks its output, not its internals:
 *  - the first line of the table names the CPU backend and says no speed is measured;
 *  - the JSON has backend "cpu", every layer's name, errors in the bands of seeded Gaussian data
 *    (CONTRACT.md 8, widened for these sizes), ABC ratios equal to the plan's (libhot's own plan of
 *    the same layer), JIT figures (cold compile > warm disk hit), and null speed fields;
 *  - --backend cuda without a driver fails with a message naming the missing driver, exit 1;
 *  - the GPU path end to end against the recording fake driver (tests/runtime/fake_cuda.c:
 *    kernels compute nothing, every event interval is 0.01 ms): the speed fields are filled,
 *    and the per-kernel list has every launch of the plan with the compulsory bytes of
 *    gen/cost.h and the rate bytes / 0.01 ms. Numbers are the fake's, so only the plumbing is
 *    checked; bit-exactness is necessarily "false" there. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench.h"
#include "cost.h"
#include "hot.h"

/* Runs cmd under sh, output (stdout, and stderr when `both`) into a malloc'd string; *status is
 * the exit status (or -1). */
static char *run(const char *cmd, int *status) {
  FILE *p = popen(cmd, "r");
  ck_assert_msg(p != NULL, "popen %s", cmd);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  size_t k;
  while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += k;
    if (cap - n < 4096) {
      cap *= 2;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
  }
  buf[n] = 0;
  int st = pclose(p);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return buf;
}

/* The JSON object of layer `name` (from its "name" key to the next layer or the end). */
static const char *layer_obj(const char *json, const char *name, const char **end) {
  char key[96];
  snprintf(key, sizeof key, "\"name\": \"%s\"", name);
  const char *p = strstr(json, key);
  ck_assert_msg(p != NULL, "layer %s missing from the JSON", name);
  const char *e = strstr(p + 1, "\"name\": ");
  *end = e ? e : p + strlen(p);
  return p;
}

/* Number after "key": inside [obj, end); NAN for null; fails when absent. */
static double num_in(const char *obj, const char *end, const char *key) {
  char k[96];
  snprintf(k, sizeof k, "\"%s\": ", key);
  const char *p = strstr(obj, k);
  ck_assert_msg(p != NULL && p < end, "key %s missing", key);
  p += strlen(k);
  if (!strncmp(p, "null", 4)) return NAN;
  char *q;
  double v = strtod(p, &q);
  ck_assert_msg(q != p, "key %s: not a number", key);
  return v;
}

static int is_null(const char *obj, const char *end, const char *key) {
  char k[96];
  snprintf(k, sizeof k, "\"%s\": null", key);
  const char *p = strstr(obj, k);
  return p != NULL && p < end;
}

/* ABC bytes / fp32 bytes of the plan libhot makes for the layer (CPU backend, spec sizes). */
static double plan_ratio(const char *name) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_from_spec(ctx, HOT_BENCH_SPEC, name, 0, &l), HOT_OK);
  const hot_layer_plan *pl = hot_layer_get_plan(l);
  double r = (double)pl->abc.bytes / (double)pl->abc.fp32_bytes;
  hot_ctx_destroy(ctx);
  return r;
}

START_TEST(test_json_cpu) {
  int st;
  char *out = run("HOT_CUDA_DRIVER=/nonexistent/libcuda.so.1 " HOT_BENCH_EXE " " HOT_BENCH_SPEC
                  " --json --no-jit 2>/dev/null", &st);
  ck_assert_msg(st == 0, "exit %d:\n%s", st, out);
  ck_assert_msg(strstr(out, "\"backend\": \"cpu\"") != NULL, "%s", out);
  ck_assert_msg(strstr(out, "\"speed_measured\": false") != NULL, "%s", out);
  const char *names[2] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    const char *end, *o = layer_obj(out, names[i], &end);
    double gx = num_in(o, end, "gx_rel_err"), gw = num_in(o, end, "gw_rel_err");
    double ratio = num_in(o, end, "abc_fp32_ratio"), want = plan_ratio(names[i]);
    printf("layer %s: g_x %.4f g_w %.4f ABC/fp32 %.5f (plan %.5f)\n", names[i], gx, gw, ratio, want);
    /* Gaussian data: HQ 4-bit per-tensor g_x 0.27-0.30 at 128x128 (CONTRACT.md 8), larger tensors a
     * little more (the absmax grows); HLA tri 50 %: sqrt(1 - r/p) = 0.61 (p 16), 0.66 (p 64). */
    ck_assert_msg(gx > 0.2 && gx < 0.45, "g_x error %g", gx);
    ck_assert_msg(gw > 0.55 && gw < 0.72, "g_w error %g", gw);
    ck_assert_msg(fabs(ratio - want) <= 1e-5 * want, "ratio %g vs plan %g", ratio, want);
    ck_assert_msg(ratio > 0.05 && ratio < 0.3, "ratio %g", ratio);
    ck_assert(num_in(o, end, "check_T") == 394);
    ck_assert(num_in(o, end, "gx_macs") > 0 && num_in(o, end, "gw_macs") > 0);
    /* No GPU: every speed field is null, never a number. */
    const char *gpu[] = {"bitexact", "hot_ms", "bf16_ms", "fp32_ms", "speedup_bf16", "speedup_fp32"};
    for (size_t k = 0; k < sizeof gpu / sizeof gpu[0]; ++k)
      ck_assert_msg(is_null(o, end, gpu[k]), "layer %s: %s should be null", names[i], gpu[k]);
  }
  /* layer c reads f16 inputs (the bench hands it f16 data): same bands */
  {
    const char *end, *o = layer_obj(out, "c", &end);
    const char *dt = strstr(o, "\"dtype\": \"f16\""), *ok = strstr(o, "\"status\": \"ok\"");
    ck_assert_msg(dt && dt < end, "c: dtype");
    ck_assert_msg(ok && ok < end, "c: status");
    double gx = num_in(o, end, "gx_rel_err"), gw = num_in(o, end, "gw_rel_err");
    printf("layer c (f16): g_x %.4f g_w %.4f\n", gx, gw);
    ck_assert_msg(gx > 0.2 && gx < 0.45 && gw > 0.55 && gw < 0.72, "c: g_x %g g_w %g", gx, gw);
  }
  /* bias: layer a has one (fp32 sums: tiny error), b has none (null). */
  const char *end, *o = layer_obj(out, "a", &end);
  double gb = num_in(o, end, "gb_rel_err");
  ck_assert_msg(gb >= 0 && gb < 1e-5, "g_b error %g", gb);
  o = layer_obj(out, "b", &end);
  ck_assert(is_null(o, end, "gb_rel_err"));
  free(out);
}
END_TEST

START_TEST(test_table_first_line_and_jit) {
  int st;
  char *out = run("HOT_CUDA_DRIVER=/nonexistent/libcuda.so.1 " HOT_BENCH_EXE " " HOT_BENCH_SPEC
                  " --layer a --out bench_a.json 2>/dev/null", &st);
  ck_assert_msg(st == 0, "exit %d:\n%s", st, out);
  printf("%s", out);
  ck_assert_msg(!strncmp(out, "hot-bench: CPU backend", 22), "first line: %.200s", out);
  char *nl = strchr(out, '\n');
  ck_assert_ptr_nonnull(nl);
  *nl = 0;
  ck_assert_msg(strstr(out, "no speed is measured") != NULL, "%s", out);
  free(out);
  FILE *f = fopen("bench_a.json", "r");
  ck_assert_ptr_nonnull(f);
  static char buf[1 << 17];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  const char *end, *o = layer_obj(buf, "a", &end);
  double cold = num_in(o, end, "cold_ms"), warm = num_in(o, end, "warm_ms");
  double hits = num_in(o, end, "disk_hits");
  printf("JIT: cold %.1f ms, warm %.2f ms, disk hits %.0f\n", cold, warm, hits);
  ck_assert_msg(cold > 0 && warm >= 0 && warm < cold, "cold %g warm %g", cold, warm);
  ck_assert_msg(hits >= 1, "the warm context should hit the disk cache");
  ck_assert(strstr(buf, "\"name\": \"b\"") == NULL); /* --layer a only */
  /* the whole-spec cold JIT and each kernel's cold compile with NVRTC's phases */
  const char *spec = strstr(buf, "\"jit_spec_cold_ms\": ");
  ck_assert_msg(spec && atof(spec + 20) > 0, "no whole-spec cold time");
  const char *kern = strstr(o, "\"per_kernel\": [{\"kernel\": \"hot_");
  ck_assert_msg(kern && kern < end, "no per-kernel JIT figures");
  ck_assert_msg(num_in(o, end, "ptxas_ms") >= 0, "no ptxas phase");
  remove("bench_a.json");
}
END_TEST

/* --scales: one row per (layer, data kind) with the g_x errors per tensor, per sample, per
 * token, LQS's pick and g_w; B = 1 makes per sample equal per tensor (the same groups); with
 * B = 2 LQS picks per sample on Gaussian data and per token on token outliers. */
START_TEST(test_scales) {
  for (int b = 1; b <= 2; ++b) {
    int st;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s --scales --batch %d 2>&1", HOT_BENCH_EXE, HOT_BENCH_SPEC, b);
    char *out = run(cmd, &st);
    ck_assert_msg(st == 0, "exit %d:\n%s", st, out);
    printf("%s", out);
    ck_assert_msg(!strncmp(out, "hot-bench --scales: bench_tiny", 30), "%.200s", out);
    int rows = 0;
    for (char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
      char name[64], kind[32], lqs[16];
      long long B, L, O, I;
      double et, es, ek, ew;
      int n = sscanf(line + 1, "%63s %lld %lld %lld %lld %31s %lf %lf %lf %15s %lf", name, &B, &L,
                     &O, &I, kind, &et, &es, &ek, lqs, &ew);
      if (n < 6 || !strcmp(name, "layer")) continue;
      ck_assert_msg(n == 11, "row: %.200s", line + 1);
      ++rows;
      ck_assert_int_eq(B, b);
      ck_assert(et > 0 && es > 0 && ek > 0 && ew > 0);
      if (b == 1) ck_assert_msg(et == es, "%s %s: tensor %g != sample %g with B = 1", name, kind, et, es);
      if (b == 2 && !strcmp(kind, "tokens")) ck_assert_str_eq(lqs, "token");
      if (b == 2 && !strcmp(kind, "gaussian")) ck_assert_str_eq(lqs, "sample");
      if (b == 1 && !strcmp(kind, "gaussian")) ck_assert_str_eq(lqs, "tensor");
    }
    ck_assert_int_eq(rows, 9); /* 3 layers x 3 kinds */
    ck_assert(strstr(out, "per sample <= per tensor on ") != NULL);
    free(out);
  }
}
END_TEST

START_TEST(test_cuda_without_driver) {
  int st;
  char *out = run("HOT_CUDA_DRIVER=/nonexistent/libcuda.so.1 " HOT_BENCH_EXE " " HOT_BENCH_SPEC
                  " --backend cuda --no-jit 2>&1", &st);
  printf("%s", out);
  ck_assert_msg(st == 1, "exit %d", st);
  ck_assert_msg(strstr(out, "--backend cuda") && strstr(out, "no CUDA driver"), "%s", out);
  ck_assert_msg(strstr(out, "correctness") == NULL, "no table after the refusal: %s", out);
  free(out);
  /* Bad arguments: exit 1 with the usage. */
  out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --backend gpu 2>&1", &st);
  ck_assert_int_eq(st, 1);
  free(out);
  out = run(HOT_BENCH_EXE " " HOT_BENCH_SPEC " --layer nosuch --no-jit 2>&1", &st);
  ck_assert_int_eq(st, 1);
  ck_assert_msg(strstr(out, "no layer 'nosuch'") != NULL, "%s", out);
  free(out);
}
END_TEST

#ifdef HOT_FAKE_CUDA
/* Count of `needle` in [p, end). */
static int count_in(const char *p, const char *end, const char *needle) {
  int n = 0;
  for (const char *q = strstr(p, needle); q && q < end; q = strstr(q + 1, needle)) ++n;
  return n;
}

START_TEST(test_gpu_path_on_fake_driver) {
  int st;
  char *out = run("HOT_CUDA_DRIVER=" HOT_FAKE_CUDA " HOT_CACHE_DIR=bench_fake_cache " HOT_BENCH_EXE
                  " " HOT_BENCH_SPEC " --backend cuda --json --no-jit --iters 3 --warmup 1 2>/dev/null",
                  &st);
  /* exit 2: the layers ran, but cuBLAS (real library, fake driver) could not start */
  ck_assert_msg(st == 0 || st == 2, "exit %d:\n%s", st, out);
  ck_assert_msg(strstr(out, "\"backend\": \"cuda\"") != NULL, "%s", out);
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  o.arch = "sm_90"; /* the fake device's */
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  const char *names[2] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    const char *end, *ob = layer_obj(out, names[i], &end);
    ck_assert_msg(num_in(ob, end, "hot_ms") > 0, "layer %s: no HOT time", names[i]);
    ck_assert_msg(num_in(ob, end, "hot_fwd_ms") > 0, "layer %s: no forward time", names[i]);
    const char *k = strstr(ob, "\"kernels\": [");
    ck_assert_msg(k && k < end, "layer %s: no kernel list", names[i]);
    hot_layer *l = NULL;
    ck_assert_int_eq(hot_layer_from_spec(ctx, HOT_BENCH_SPEC, names[i], 0, &l), HOT_OK);
    const hot_layer_plan *pl = hot_layer_get_plan(l);
    /* every planned role appears (LQS only runs in calibration, which is not profiled) */
    for (int r = 0; r < pl->n_kernels; ++r) {
      if (pl->kernels[r].role == HOT_K_LQS) continue;
      char key[160];
      snprintf(key, sizeof key, "\"kernel\": \"%s\", \"role\": \"%s\"", pl->kernels[r].name,
               plan_role_name(pl->kernels[r].role));
      ck_assert_msg(count_in(k, end, key) >= 1, "layer %s: %s not profiled", names[i], key);
    }
    /* the GEMM g_x entry: bytes and ops from gen/cost.h, rate = ops / 0.01 ms */
    hot_kernel_cost c;
    ck_assert_int_eq(plan_kernel_cost(pl, HOT_K_GEMM_GX, 0, 0, &c), 0);
    const char *g = strstr(k, "\"role\": \"gemm_gx\"");
    ck_assert_msg(g && g < end, "no gemm_gx entry");
    const char *ge = strchr(g, '}');
    ck_assert(num_in(g, ge, "ms") == 0.01);
    ck_assert(num_in(g, ge, "bytes") == (double)(c.bytes_read + c.bytes_written));
    ck_assert(num_in(g, ge, "int_ops") == (double)c.int_ops);
    double tops = num_in(g, ge, "tops");
    ck_assert_msg(fabs(tops - (double)c.int_ops / 0.01 / 1e9) < 1e-5 * tops, "tops %g", tops);
    /* an HQ entry reports GB/s */
    const char *h = strstr(k, "\"role\": \"hq_w\", \"phase\": 1");
    ck_assert_msg(h && h < end, "no hq_w phase 1 entry");
    ck_assert_int_eq(plan_kernel_cost(pl, HOT_K_HQ_W, 1, 0, &c), 0);
    double gbs = num_in(h, strchr(h, '}'), "gbs");
    double want = (double)(c.bytes_read + c.bytes_written) / 0.01 / 1e6;
    ck_assert_msg(fabs(gbs - want) < 1e-5 * want, "gbs %g want %g", gbs, want);
    hot_layer_destroy(l);
  }
  hot_ctx_destroy(ctx);
  free(out);
}
END_TEST
#endif

/* bench_to_f16 (bench/data.c) against the compiler's own fp32 -> _Float16 conversion (round to
 * nearest even, overflow to infinity, subnormals) on every f16 value, the midpoints between
 * neighbours, and values around the limits; bench_to_bf16 rounds ties to even. */
START_TEST(test_f16_bf16_conversion) {
  long bad = 0, n = 0;
  for (uint32_t h = 0; h < 0x7c00u; ++h) { /* every finite non-negative f16 and the midpoints */
    _Float16 a, b;
    memcpy(&a, &(uint16_t){(uint16_t)h}, 2);
    memcpy(&b, &(uint16_t){(uint16_t)(h + 1)}, 2);
    float vs[4] = {(float)a, -(float)a, ((float)a + (float)b) / 2, nextafterf(((float)a + (float)b) / 2, 1e9f)};
    for (int i = 0; i < 4; ++i) {
      uint16_t got, want;
      bench_to_f16(&vs[i], &got, 1);
      _Float16 c = (_Float16)vs[i];
      memcpy(&want, &c, 2);
      bad += got != want;
      ++n;
    }
  }
  float edge[] = {65504.0f, 65519.99f, 65520.0f, 1e9f, -1e9f, INFINITY, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-30f, 0.0f, -0.0f};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; ++i, ++n) {
    uint16_t got, want;
    bench_to_f16(&edge[i], &got, 1);
    _Float16 c = (_Float16)edge[i];
    memcpy(&want, &c, 2);
    bad += got != want;
  }
  float nan = NAN;
  uint16_t hn;
  bench_to_f16(&nan, &hn, 1);
  ck_assert((hn & 0x7c00u) == 0x7c00u && (hn & 0x3ffu) != 0);
  printf("f16 conversion: %ld of %ld values differ from the compiler's\n", bad, n);
  ck_assert_int_eq(bad, 0);
  float ties[2] = {1.00390625f, 1.01171875f}; /* bf16 ties: to 1.0 (even) and 1.015625 (even) */
  uint16_t tb[2];
  bench_to_bf16(ties, tb, 2);
  ck_assert_uint_eq(tb[0], 0x3f80u);
  ck_assert_uint_eq(tb[1], 0x3f82u);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bench");
  TCase *tc = tcase_create("cpu");
  tcase_set_timeout(tc, 110);
  tcase_add_test(tc, test_json_cpu);
  tcase_add_test(tc, test_table_first_line_and_jit);
  tcase_add_test(tc, test_cuda_without_driver);
  tcase_add_test(tc, test_scales);
  tcase_add_test(tc, test_f16_bf16_conversion);
#ifdef HOT_FAKE_CUDA
  tcase_add_test(tc, test_gpu_path_on_fake_driver);
#endif
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

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
 *    checked; bit-exactness is necessarily "false" there;
 *  - the FP8 baseline: e4m3 conversion against every code, the arch rule, the cuBLASLt loader
 *    (missing library, missing symbol, failing cublasLtCreate), and its descriptor, layouts,
 *    scales, heuristic and matmul against the recording fake cuBLASLt (fake_cublaslt.c: it
 *    enforces cuBLASLt's FP8 rules and computes the product, so a wrong layout gives wrong
 *    numbers); then hot-bench end to end on the fake driver with the fake cuBLAS and cuBLASLt
 *    (fp8_ms, speedup_fp8, padded sizes, sampled errors, the calls in the fake's log). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench/fake_cublaslt.h"
#include "cost.h"
#include "hot.h"

#include "run_cmd.h"


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
    const char *gpu[] = {"bitexact", "hot_ms", "bf16_ms", "fp32_ms", "speedup_bf16", "speedup_fp32",
                         "fp8_ms", "speedup_fp8", "fp8_dims", "fp8_gx_rel_err", "fp8_gw_rel_err"};
    for (size_t k = 0; k < sizeof gpu / sizeof gpu[0]; ++k)
      ck_assert_msg(is_null(o, end, gpu[k]), "layer %s: %s should be null", names[i], gpu[k]);
    /* ... and the FP8 figure says why it is null */
    const char *why = strstr(o, "\"fp8_reason\": \"not measured: CPU backend (no GPU)\"");
    ck_assert_msg(why && why < end, "layer %s: no fp8_reason", names[i]);
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
  /* the totals: no FP8 figure either */
  {
    const char *tot = strstr(out, "\"total\": ");
    ck_assert_ptr_nonnull(tot);
    const char *tend = tot + strlen(tot);
    ck_assert(is_null(tot, tend, "fp8_ms") && is_null(tot, tend, "speedup_fp8"));
    const char *ce = strstr(out, "\"fp8_tflops\": null");
    ck_assert_msg(ce != NULL, "ceilings.fp8_tflops should be null on the CPU");
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
      double et, es, ek, ew, ews;
      int n = sscanf(line + 1, "%63s %lld %lld %lld %lld %31s %lf %lf %lf %15s %lf %lf", name, &B,
                     &L, &O, &I, kind, &et, &es, &ek, lqs, &ew, &ews);
      if (n < 6 || !strcmp(name, "layer")) continue;
      ck_assert_msg(n == 12, "row: %.200s", line + 1);
      ++rows;
      ck_assert_int_eq(B, b);
      ck_assert(et > 0 && es > 0 && ek > 0 && ew > 0 && ews > 0);
      if (b == 1) ck_assert_msg(et == es, "%s %s: tensor %g != sample %g with B = 1", name, kind, et, es);
      /* one sample: x^, g^ per sample is per tensor (the same bits) unless the layout moved */
      if (b == 1) ck_assert_msg(ew == ews, "%s %s: g_w tensor %g != sample %g with B = 1", name, kind, ew, ews);
      if (b == 2 && !strcmp(kind, "tokens")) ck_assert_str_eq(lqs, "token");
      if (b == 2 && !strcmp(kind, "gaussian")) ck_assert_str_eq(lqs, "sample");
      if (b == 1 && !strcmp(kind, "gaussian")) ck_assert_str_eq(lqs, "tensor");
    }
    ck_assert_int_eq(rows, 9); /* 3 layers x 3 kinds */
    ck_assert(strstr(out, "g_x: g' per sample <= per tensor on ") != NULL);
    ck_assert(strstr(out, "g_w: x^, g^ per sample <= per tensor on ") != NULL);
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
    /* the real cuBLASLt (if any) cannot work on the fake driver: null with a reason, never a crash */
    if (is_null(ob, end, "fp8_ms")) {
      const char *why = strstr(ob, "\"fp8_reason\": \"");
      ck_assert_msg(why && why < end && why[15] != '"', "layer %s: fp8_ms null without a reason", names[i]);
    }
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

/* The whole GPU path with the fake driver, and the fake cuBLAS and cuBLASLt found through
 * HOT_CUDA_HOME (a folder whose lib64 links both names to the fake): every layer gets BF16 and
 * FP8 figures; the FP8 GEMMs run at T, O, I rounded up to multiples of 16; the FP8 outputs,
 * computed by the fake from the operands hot-bench quantized, match fp64 on the samples to
 * e4m3's precision (a wrong layout, scale or transpose gives errors near 1 or above); and the
 * fake's log has, per layer, (warm-up + iters) matmuls of each product in the TN form with both
 * scales set and no fast accumulation, after one heuristic query each. */
START_TEST(test_gpu_fp8_on_fakes) {
  ck_assert_int_eq(system("rm -rf bench_fake_home bench_fake_lt.log && mkdir -p bench_fake_home/lib64"), 0);
  ck_assert_int_eq(symlink(HOT_FAKE_CUBLASLT, "bench_fake_home/lib64/libcublasLt.so.13"), 0);
  ck_assert_int_eq(symlink(HOT_FAKE_CUBLASLT, "bench_fake_home/lib64/libcublas.so.13"), 0);
  int st;
  char *out = run("HOT_CUDA_DRIVER=" HOT_FAKE_CUDA " HOT_CUDA_HOME=bench_fake_home "
                  "FAKE_CUBLASLT_LOG=bench_fake_lt.log HOT_CACHE_DIR=bench_fake_cache " HOT_BENCH_EXE
                  " " HOT_BENCH_SPEC " --backend cuda --json --no-jit --iters 3 --warmup 1 2>/dev/null",
                  &st);
  ck_assert_msg(st == 0, "exit %d (every baseline should run on the fakes):\n%s", st, out);
  const char *names[3] = {"a", "b", "c"};
  const long long dims[3][3] = {{400, 128, 96}, {400, 112, 144}, {400, 48, 64}}; /* T 394, O 100, I 137 padded */
  for (int i = 0; i < 3; ++i) {
    const char *end, *o = layer_obj(out, names[i], &end);
    double hot = num_in(o, end, "hot_ms"), f8 = num_in(o, end, "fp8_ms"), x8 = num_in(o, end, "speedup_fp8");
    double egx = num_in(o, end, "fp8_gx_rel_err"), egw = num_in(o, end, "fp8_gw_rel_err");
    printf("layer %s: hot %.4f ms, fp8 %.4f ms, x%.2f, FP8 sampled errors g_x %.4f g_w %.4f\n", names[i], hot,
           f8, x8, egx, egw);
    ck_assert_msg(f8 == 0.01 && hot == 0.01, "layer %s: fp8 %g hot %g (the fake's events: 0.01)", names[i], f8, hot);
    ck_assert_msg(fabs(x8 - f8 / hot) < 1e-6, "speedup_fp8 %g", x8);
    ck_assert_msg(num_in(o, end, "bf16_ms") == 0.01, "layer %s: no BF16 figure", names[i]);
    const char *why = strstr(o, "\"fp8_reason\": \"\"");
    ck_assert_msg(why && why < end, "layer %s: fp8_reason should be empty", names[i]);
    char want[96];
    snprintf(want, sizeof want, "\"fp8_dims\": {\"T\": %lld, \"O\": %lld, \"I\": %lld}", dims[i][0], dims[i][1],
             dims[i][2]);
    const char *dm = strstr(o, want);
    ck_assert_msg(dm && dm < end, "layer %s: %s missing", names[i], want);
    /* e4m3 with per-tensor scales on Gaussian data: about 3 % (bf16 output included) */
    ck_assert_msg(egx > 0.005 && egx < 0.08 && egw > 0.005 && egw < 0.08, "layer %s: g_x %g g_w %g", names[i],
                  egx, egw);
    const char *cl = strstr(o, "\"cublaslt_fp8\": {\"n\": 3");
    ck_assert_msg(cl && cl < end, "layer %s: no cublaslt_fp8 statistics", names[i]);
  }
  /* the FP8 ceiling ran (8192^3 through the same path; the fake checks it, computes nothing) */
  const char *ce = strstr(out, "\"fp8_tflops\": ");
  ck_assert_msg(ce && atof(ce + 14) > 0, "no FP8 ceiling");
  const char *tot = strstr(out, "\"total\": ");
  ck_assert_ptr_nonnull(tot);
  ck_assert_msg(fabs(num_in(tot, tot + strlen(tot), "fp8_ms") - 0.03) < 1e-9, "total fp8_ms");
  free(out);
  /* the log: one heuristic per product, then warm-up + iters matmuls, all valid */
  FILE *f = fopen("bench_fake_lt.log", "r");
  ck_assert_ptr_nonnull(f);
  char line[400];
  int heur[3][2] = {{0}}, mm[3][2] = {{0}}, bad = 0, known = 0, ceil = 0, lines = 0;
  while (fgets(line, sizeof line, f)) {
    char what[16];
    unsigned long long M, N, K, ws;
    int ta, tb, at, bt, dt, comp, sct, sa, sb, fast, rc;
    long long lda, ldb, ldd;
    int nf = sscanf(line, "%15s %llu %llu %llu %d %d %d %d %d %lld %lld %lld %d %d %d %d %d %llu %d", what, &M,
                    &N, &K, &ta, &tb, &at, &bt, &dt, &lda, &ldb, &ldd, &comp, &sct, &sa, &sb, &fast, &ws, &rc);
    ck_assert_msg(nf == 19, "log line: %s", line);
    ++lines;
    if (rc || ta != 1 || tb != 0 || at != 28 || bt != 28 || dt != 14 || comp != 68 || sct != 0 || !sa || !sb ||
        fast || ws != (32u << 20) || lda != (long long)K || ldb != (long long)K || ldd != (long long)M) {
      ++bad;
      printf("unexpected call: %s", line);
    }
    ceil += M == 8192 && N == 8192 && K == 8192;
    for (int i = 0; i < 3; ++i) {
      unsigned long long T = (unsigned long long)dims[i][0], O = (unsigned long long)dims[i][1],
                         I = (unsigned long long)dims[i][2];
      int p = (M == I && N == T && K == O) ? 0 : (M == I && N == O && K == T) ? 1 : -1; /* g_x, g_w */
      if (p < 0) continue;
      ++known;
      if (!strcmp(what, "heuristic")) heur[i][p]++;
      else mm[i][p]++;
    }
  }
  fclose(f);
  ck_assert_int_eq(bad, 0);
  ck_assert_int_eq(ceil, 1 + 3 + 10); /* heuristic, warm-up 3, timed 10 */
  ck_assert_int_eq(known + ceil, lines); /* no call of another shape */
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 2; ++p) {
      ck_assert_msg(heur[i][p] == 1, "layer %s product %d: %d heuristic queries", names[i], p, heur[i][p]);
      ck_assert_msg(mm[i][p] == 4, "layer %s product %d: %d matmuls (want warm-up 1 + iters 3)", names[i], p,
                    mm[i][p]);
    }
  ck_assert_int_eq(system("rm -rf bench_fake_home bench_fake_lt.log"), 0);
}
END_TEST

/* An 8.0 device (the fake driver reporting compute capability 8.0) with the fake cuBLAS and
 * cuBLASLt at hand: the FP8 baseline is not attempted — no cuBLASLt call, fp8_ms, speedup_fp8
 * and the FP8 ceiling null, fp8_reason naming the device's arch and sm_89 — while the layer
 * and the cuBLAS baselines run as before (exit 0). */
START_TEST(test_gpu_fp8_pre_sm89) {
  ck_assert_int_eq(system("rm -rf bench_fake_home80 bench_fake_lt80.log && mkdir -p bench_fake_home80/lib64"), 0);
  ck_assert_int_eq(symlink(HOT_FAKE_CUBLASLT, "bench_fake_home80/lib64/libcublasLt.so.13"), 0);
  ck_assert_int_eq(symlink(HOT_FAKE_CUBLASLT, "bench_fake_home80/lib64/libcublas.so.13"), 0);
  int st;
  char *out = run("HOT_CUDA_DRIVER=" HOT_FAKE_CUDA_SM80 " HOT_CUDA_HOME=bench_fake_home80 "
                  "FAKE_CUBLASLT_LOG=bench_fake_lt80.log HOT_CACHE_DIR=bench_fake_cache " HOT_BENCH_EXE
                  " " HOT_BENCH_SPEC " --backend cuda --json --no-jit --layer a --iters 2 --warmup 1 2>/dev/null",
                  &st);
  ck_assert_msg(st == 0, "exit %d:\n%s", st, out);
  ck_assert_msg(strstr(out, "\"arch\": \"sm_80\"") != NULL, "not the 8.0 fake: %.300s", out);
  const char *end, *o = layer_obj(out, "a", &end);
  ck_assert(num_in(o, end, "hot_ms") > 0 && num_in(o, end, "bf16_ms") > 0);
  const char *nulls[] = {"fp8_ms", "speedup_fp8", "fp8_dims", "fp8_gx_rel_err", "fp8_gw_rel_err", "cublaslt_fp8"};
  for (size_t k = 0; k < sizeof nulls / sizeof nulls[0]; ++k)
    ck_assert_msg(is_null(o, end, nulls[k]), "%s should be null on sm_80", nulls[k]);
  const char *why = strstr(o, "\"fp8_reason\": \"no FP8 tensor cores on sm_80");
  ck_assert_msg(why && why < end && strstr(why, "compute capability 8.9"), "fp8_reason: %.300s", o);
  ck_assert_msg(strstr(out, "\"fp8_tflops\": null") != NULL, "FP8 ceiling on sm_80");
  ck_assert_msg(access("bench_fake_lt80.log", F_OK) != 0, "cuBLASLt was called on sm_80");
  free(out);
  ck_assert_int_eq(system("rm -rf bench_fake_home80 bench_fake_lt80.log"), 0);
}
END_TEST
#endif

/* ---- the FP8 baseline ------------------------------------------------------------------- */

/* e4m3 (bench/fp8.c): every finite code decodes and encodes back to itself (both zeros kept),
 * values between two neighbours go to the nearer, ties to the even code, beyond 448 saturates,
 * the subnormal range has steps of 2^-9, NaN stays NaN. */
START_TEST(test_e4m3_conversion) {
  int bad = 0;
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue; /* NaN */
    float v = bench_e4m3_to_f32((uint8_t)c);
    bad += bench_to_e4m3(v) != (uint8_t)c;
  }
  ck_assert_int_eq(bad, 0);
  ck_assert(bench_e4m3_to_f32(0x7e) == 448.0f && bench_e4m3_to_f32(0x01) == 0x1p-9f);
  ck_assert(bench_e4m3_to_f32(0x08) == 0x1p-6f && bench_e4m3_to_f32(0x38) == 1.0f);
  for (int c = 0; c < 0x7e; ++c) { /* midpoints and points just beside them, positive codes */
    float a = bench_e4m3_to_f32((uint8_t)c), b = bench_e4m3_to_f32((uint8_t)(c + 1)), m = (a + b) / 2;
    uint8_t even = (c & 1) ? (uint8_t)(c + 1) : (uint8_t)c;
    ck_assert_msg(bench_to_e4m3(m) == even, "tie %g between %02x and %02x gave %02x", (double)m, c, c + 1,
                  bench_to_e4m3(m));
    ck_assert(bench_to_e4m3(nextafterf(m, 0)) == (uint8_t)c);
    ck_assert(bench_to_e4m3(nextafterf(m, 1e9f)) == (uint8_t)(c + 1));
    ck_assert(bench_to_e4m3(-m) == (uint8_t)(0x80 | even));
  }
  ck_assert_uint_eq(bench_to_e4m3(460.0f), 0x7e);
  ck_assert_uint_eq(bench_to_e4m3(464.0f), 0x7e);
  ck_assert_uint_eq(bench_to_e4m3(1e6f), 0x7e);
  ck_assert_uint_eq(bench_to_e4m3(-INFINITY), 0xfe);
  ck_assert_uint_eq(bench_to_e4m3(1e-30f), 0x00);
  ck_assert_uint_eq(bench_to_e4m3(0x1p-10f), 0x00); /* half of the smallest subnormal: to even 0 */
  ck_assert_uint_eq(bench_to_e4m3(0x1.8p-10f), 0x01);
  ck_assert((bench_to_e4m3(NAN) & 0x7f) == 0x7f);
  /* bench_fp8_pack: scaled, zero-padded, transposed */
  float src[6] = {1, 2, 3, -4, 5, 6}; /* 2 x 3 */
  uint8_t d[4 * 16];
  bench_fp8_pack(src, 2, 3, 2.0f, 0, d, 4, 16);
  ck_assert(bench_e4m3_to_f32(d[0 * 16 + 2]) == 6.0f && bench_e4m3_to_f32(d[1 * 16 + 0]) == -8.0f);
  ck_assert(d[0 * 16 + 3] == 0 && d[2 * 16 + 0] == 0 && d[3 * 16 + 15] == 0);
  bench_fp8_pack(src, 2, 3, 1.0f, 1, d, 16, 4); /* stored 4 x 16: d[c * 16 + r] */
  ck_assert(bench_e4m3_to_f32(d[2 * 16 + 0]) == 3.0f && bench_e4m3_to_f32(d[0 * 16 + 1]) == -4.0f);
  ck_assert(d[0 * 16 + 2] == 0 && d[3 * 16 + 0] == 0);
  ck_assert(bench_amax(src, 6) == 6.0f);
}
END_TEST

START_TEST(test_fp8_arch_rule) {
  char buf[160];
  ck_assert_ptr_null(bench_fp8_arch_reason(8, 9, buf, sizeof buf));
  ck_assert_ptr_null(bench_fp8_arch_reason(9, 0, buf, sizeof buf));
  ck_assert_ptr_null(bench_fp8_arch_reason(10, 0, buf, sizeof buf));
  const int old[][2] = {{8, 0}, {8, 6}, {8, 7}, {7, 5}};
  for (int i = 0; i < 4; ++i) {
    const char *r = bench_fp8_arch_reason(old[i][0], old[i][1], buf, sizeof buf);
    char want[16];
    snprintf(want, sizeof want, "sm_%d%d", old[i][0], old[i][1]);
    ck_assert_msg(r && strstr(r, want) && strstr(r, "compute capability 8.9"), "%d.%d: %s", old[i][0],
                  old[i][1], r ? r : "NULL");
  }
}
END_TEST

/* The fake's record, cleared (the loader opens the same file: same handle, same globals). */
static fake_cublaslt_state_t *fake_lt(void) {
  void *h = dlopen(HOT_FAKE_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "%s", dlerror());
  void *p = dlsym(h, "fake_cublaslt_state");
  ck_assert_ptr_nonnull(p);
  fake_cublaslt_state_t *(*fn)(void);
  memcpy(&fn, &p, sizeof fn);
  fake_cublaslt_state_t *st = fn();
  memset(st, 0, sizeof *st);
  return st;
}

START_TEST(test_cublaslt_loader_errors) {
  char err[800];
  /* the search order: $HOT_CUDA_HOME/lib64, the build's toolkit folder, the loader path */
  setenv("HOT_CUDA_HOME", "/opt/toolkit", 1);
  char cand[6][512];
  int n = bench_lib_candidates("libcublasLt", cand, 6);
  ck_assert_int_eq(n, 6);
  ck_assert_str_eq(cand[0], "/opt/toolkit/lib64/libcublasLt.so.13");
  ck_assert_str_eq(cand[1], "/opt/toolkit/lib64/libcublasLt.so.12");
  ck_assert_str_eq(cand[2], HOT_CUDA_LIBDIR_DEFAULT "/libcublasLt.so.13");
  ck_assert_str_eq(cand[5], "libcublasLt.so.12");
  unsetenv("HOT_CUDA_HOME");
  ck_assert_int_eq(bench_lib_candidates("libcublas", cand, 6), 4);
  ck_assert_str_eq(cand[0], HOT_CUDA_LIBDIR_DEFAULT "/libcublas.so.13");
  /* no library */
  const char *none[] = {"/nonexistent/lib64/libcublasLt.so.13", "/nonexistent/lib64/libcublasLt.so.12"};
  bench_cublaslt *c = bench_cublaslt_open_paths(none, 2, err, sizeof err);
  printf("missing library: %s\n", err);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(err, "cuBLASLt not found") && strstr(err, none[0]), "%s", err);
  /* a library without one of the functions: refused by that function's name, nothing called */
  const char *noheur[] = {HOT_FAKE_CUBLASLT_NOHEUR};
  c = bench_cublaslt_open_paths(noheur, 1, err, sizeof err);
  printf("missing symbol: %s\n", err);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(err, "missing symbol cublasLtMatmulAlgoGetHeuristic") && strstr(err, HOT_FAKE_CUBLASLT_NOHEUR),
                "%s", err);
  /* cublasLtCreate fails: its status in the message */
  fake_cublaslt_state_t *st = fake_lt();
  st->fail_create = 1;
  const char *fake[] = {"/nonexistent/libcublasLt.so.13", HOT_FAKE_CUBLASLT};
  c = bench_cublaslt_open_paths(fake, 2, err, sizeof err);
  printf("create fails: %s\n", err);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(err, "cublasLtCreate failed (cublasStatus 3)"), "%s", err);
  st->fail_create = 0;
  c = bench_cublaslt_open_paths(fake, 2, err, sizeof err); /* the first path that loads */
  ck_assert_msg(c != NULL, "%s", err);
  ck_assert_str_eq(bench_cublaslt_path(c), HOT_FAKE_CUBLASLT);
  bench_cublaslt_close(c);
  ck_assert_int_eq(st->destroys, 1);
}
END_TEST

/* One FP8 product through bench_fp8_gemm_make/run against the fake: the descriptor (compute
 * type, scale type, TN, both scale pointers, no fast accumulation), the three layouts, the
 * workspace preference, one heuristic query at setup and none per run, the operands in the
 * right slots, and C equal to the product of the e4m3 values times both scales. */
START_TEST(test_cublaslt_fp8_gemm) {
  char err[800];
  fake_cublaslt_state_t *st = fake_lt();
  const char *fake[] = {HOT_FAKE_CUBLASLT};
  bench_cublaslt *c = bench_cublaslt_open_paths(fake, 1, err, sizeof err);
  ck_assert_msg(c != NULL, "%s", err);
  const int64_t m = 32, n = 48, k = 80;
  float *xf = malloc(sizeof(float) * (size_t)(m * k)), *yf = malloc(sizeof(float) * (size_t)(k * n));
  uint8_t *X = malloc((size_t)(m * k)), *Yt = malloc((size_t)(n * k));
  uint16_t *C = calloc((size_t)(m * n), 2);
  void *ws = malloc(1 << 20);
  ck_assert(xf && yf && X && Yt && C && ws);
  tooldata_fill_normal(xf, (size_t)(m * k), 7, 1);
  tooldata_fill_normal(yf, (size_t)(k * n), 7, 2);
  float sx = 0.5f, sy = 0.125f; /* dequantization scales, "device" floats */
  bench_fp8_pack(xf, m, k, 100.0f, 0, X, m, k);  /* X row-major m x k */
  bench_fp8_pack(yf, k, n, 100.0f, 1, Yt, k, n); /* Y (k x n) stored transposed: n x k */
  bench_fp8_gemm *g = NULL;
  /* sizes that are not multiples of 16 are refused before any cuBLASLt call */
  ck_assert_int_ne(bench_fp8_gemm_make(c, m, n, 72 + 2, (uintptr_t)&sx, (uintptr_t)&sy, (uintptr_t)ws,
                                       1 << 20, &g, err, sizeof err), 0);
  ck_assert_msg(strstr(err, "multiples of 16") != NULL, "%s", err);
  ck_assert_ptr_null(g);
  ck_assert_int_eq(st->descs_live + st->n_layouts + st->heuristics, 0);
  int rc = bench_fp8_gemm_make(c, m, n, k, (uintptr_t)&sx, (uintptr_t)&sy, (uintptr_t)ws, 1 << 20, &g,
                               err, sizeof err);
  ck_assert_msg(rc == 0, "make: %d %s (fake: %s)", rc, err, st->last_error);
  ck_assert_int_eq(st->last_compute, 68); /* CUBLAS_COMPUTE_32F */
  ck_assert_int_eq(st->last_scale_type, 0); /* CUDA_R_32F */
  ck_assert_int_eq(st->n_layouts, 3);
  const fake_lt_layout want[3] = {{28, k, n, k}, {28, k, m, k}, {14, n, m, n}}; /* A = Y^T, B = X, D */
  for (int i = 0; i < 3; ++i)
    ck_assert_msg(st->layouts[i].type == want[i].type && st->layouts[i].rows == want[i].rows &&
                      st->layouts[i].cols == want[i].cols && st->layouts[i].ld == want[i].ld,
                  "layout %d: type %d %lld x %lld ld %lld", i, st->layouts[i].type,
                  (long long)st->layouts[i].rows, (long long)st->layouts[i].cols, (long long)st->layouts[i].ld);
  ck_assert_uint_eq(st->pref_ws, 1u << 20);
  ck_assert_int_eq(st->heuristics, 1);
  ck_assert_int_eq(st->prefs_live, 0);
  ck_assert_int_eq(st->refused, 0);
  for (int r = 0; r < 3; ++r) {
    rc = bench_fp8_gemm_run(g, (uintptr_t)X, (uintptr_t)Yt, (uintptr_t)C, NULL);
    ck_assert_msg(rc == 0, "run: %d (fake: %s)", rc, st->last_error);
  }
  ck_assert_int_eq(st->matmuls, 3);
  ck_assert_int_eq(st->heuristics, 1);
  ck_assert(st->last_a == Yt && st->last_b == X && st->last_d == C && st->last_ws == ws);
  ck_assert(st->last_a_scale == &sy && st->last_b_scale == &sx);
  ck_assert_int_eq(st->last_fast, 0);
  double maxrel = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t q = 0; q < k; ++q)
        ref += (double)bench_e4m3_to_f32(X[i * k + q]) * (double)bench_e4m3_to_f32(Yt[j * k + q]);
      ref *= (double)sx * (double)sy;
      uint32_t u = (uint32_t)C[i * n + j] << 16;
      float v;
      memcpy(&v, &u, 4);
      double rel = fabs((double)v - ref) / (fabs(ref) + 1e-3);
      if (rel > maxrel) maxrel = rel;
    }
  printf("FP8 GEMM on the fake: max relative difference to the e4m3 product %.2e\n", maxrel);
  ck_assert_msg(maxrel <= 0x1p-8, "C differs from X . Y: %g", maxrel); /* bf16 rounding only */
  bench_fp8_gemm_free(g);
  ck_assert_int_eq(st->descs_live, 0);
  ck_assert_int_eq(st->layouts_live, 0);
  bench_cublaslt_close(c);
  free(xf);
  free(yf);
  free(X);
  free(Yt);
  free(C);
  free(ws);
}
END_TEST

/* tooldata_to_f16 (runtime/tools/tooldata.c) against the compiler's own fp32 -> _Float16 conversion (round to
 * nearest even, overflow to infinity, subnormals) on every f16 value, the midpoints between
 * neighbours, and values around the limits; tooldata_to_bf16 rounds ties to even. */
START_TEST(test_f16_bf16_conversion) {
  long bad = 0, n = 0;
  for (uint32_t h = 0; h < 0x7c00u; ++h) { /* every finite non-negative f16 and the midpoints */
    _Float16 a, b;
    memcpy(&a, &(uint16_t){(uint16_t)h}, 2);
    memcpy(&b, &(uint16_t){(uint16_t)(h + 1)}, 2);
    float vs[4] = {(float)a, -(float)a, ((float)a + (float)b) / 2, nextafterf(((float)a + (float)b) / 2, 1e9f)};
    for (int i = 0; i < 4; ++i) {
      uint16_t got, want;
      tooldata_to_f16(&vs[i], &got, 1);
      _Float16 c = (_Float16)vs[i];
      memcpy(&want, &c, 2);
      bad += got != want;
      ++n;
    }
  }
  float edge[] = {65504.0f, 65519.99f, 65520.0f, 1e9f, -1e9f, INFINITY, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-30f, 0.0f, -0.0f};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; ++i, ++n) {
    uint16_t got, want;
    tooldata_to_f16(&edge[i], &got, 1);
    _Float16 c = (_Float16)edge[i];
    memcpy(&want, &c, 2);
    bad += got != want;
  }
  float nan = NAN;
  uint16_t hn;
  tooldata_to_f16(&nan, &hn, 1);
  ck_assert((hn & 0x7c00u) == 0x7c00u && (hn & 0x3ffu) != 0);
  printf("f16 conversion: %ld of %ld values differ from the compiler's\n", bad, n);
  ck_assert_int_eq(bad, 0);
  float ties[2] = {1.00390625f, 1.01171875f}; /* bf16 ties: to 1.0 (even) and 1.015625 (even) */
  uint16_t tb[2];
  tooldata_to_bf16(ties, tb, 2);
  ck_assert_uint_eq(tb[0], 0x3f80u);
  ck_assert_uint_eq(tb[1], 0x3f82u);
}
END_TEST

/* tooldata_fill_normal splits large fills over threads: every split gives the values of the
 * single-threaded generator, bit for bit (the FNV-1a hash of 3 * 2^19 + 5 normals of seed 7,
 * stream 1, taken from the generator before the split), with 1, 2, 3 and 7 threads, an odd
 * length, and HOT_CPU_THREADS unset or not a number. */
START_TEST(test_fill_normal_split) {
  const size_t n = (size_t)3 * (1u << 19) + 5;
  float *v = malloc(n * sizeof *v);
  ck_assert_ptr_nonnull(v);
  const char *threads[] = {"1", "2", "3", "7", "junk", NULL};
  for (int t = 0; t < 6; ++t) {
    if (threads[t]) setenv("HOT_CPU_THREADS", threads[t], 1);
    else unsetenv("HOT_CPU_THREADS");
    memset(v, 0xff, n * sizeof *v);
    tooldata_fill_normal(v, n, 7, 1);
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) {
      uint32_t u;
      memcpy(&u, &v[i], 4);
      h = (h ^ u) * 1099511628211ull;
    }
    ck_assert_msg(h == 0x2c0ea6bea3fd2a58ull, "HOT_CPU_THREADS=%s: hash %016llx",
                  threads[t] ? threads[t] : "(unset)", h);
  }
  unsetenv("HOT_CPU_THREADS");
  free(v);
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
  tcase_add_test(tc, test_fill_normal_split);
  tcase_add_test(tc, test_e4m3_conversion);
  tcase_add_test(tc, test_fp8_arch_rule);
  tcase_add_test(tc, test_cublaslt_loader_errors);
  tcase_add_test(tc, test_cublaslt_fp8_gemm);
#ifdef HOT_FAKE_CUDA
  tcase_add_test(tc, test_gpu_path_on_fake_driver);
  tcase_add_test(tc, test_gpu_fp8_on_fakes);
  tcase_add_test(tc, test_gpu_fp8_pre_sm89);
#endif
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

/* consumer.c — libhot used the way an outside application uses it: hot.h and nothing else.
 *
 * consumer_run: a context (the backend the environment asks for; the package tests set
 * HOT_BACKEND=cpu and this checks that the context runs the CPU backend), a layer described in C
 * (hot_layer_spec_defaults), one save and one backward on seeded data, the gradients measured
 * against exact fp64 products, misuse answered with an error code; then, when given, a layer
 * from a spec file (the Lua DSL must be inside the library) and a JIT compile for sm_80 (the CUDA
 * templates must be inside the library). Prints one line per step; returns 0 when every check
 * holds, else 1 with the reason on stderr. */
#include <hot.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int consumer_run(const char *spec_path, int compile);

enum { NB = 2, NL = 40, NT = NB * NL, NO = 40, NI = 48 }; /* batch, tokens, T, O, I */

static int fail(const char *what, hot_status st, const hot_ctx *ctx) {
  fprintf(stderr, "consumer: %s: %s: %s\n", what, hot_status_name(st), hot_errmsg(ctx));
  return 1;
}

/* Seeded values in [-1, 1) (a 64-bit LCG; the same on every machine). */
static float next_value(unsigned long long *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Relative Frobenius error of got (n values) against the fp64 reference. */
static double rel_err(const float *got, const double *ref, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    double d = (double)got[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static int run_layer(hot_ctx *ctx) {
  hot_layer_spec spec;
  hot_status st = hot_layer_spec_defaults(&spec, HOT_RECIPE_HOT);
  if (st != HOT_OK)
    return fail("hot_layer_spec_defaults", st, ctx);
  snprintf(spec.name, sizeof spec.name, "consumer");
  spec.in_features = NI;
  spec.out_features = NO;
  hot_layer *layer = NULL;
  st = hot_layer_create(ctx, &spec, NB, NL, HOT_RECIPE_HOT, &layer);
  if (st != HOT_OK)
    return fail("hot_layer_create", st, ctx);

  static float x[NT * NI], w[NO * NI], gy[NT * NO], gx[NT * NI], gw[NO * NI], gb[NO];
  static double ex_gx[NT * NI], ex_gw[NO * NI], ex_gb[NO];
  unsigned long long seed = 0x243F6A8885A308D3ull;
  for (size_t i = 0; i < NT * NI; ++i) x[i] = next_value(&seed);
  for (size_t i = 0; i < NO * NI; ++i) w[i] = next_value(&seed);
  for (size_t i = 0; i < NT * NO; ++i) gy[i] = next_value(&seed);

  if ((st = hot_layer_save(layer, x, HOT_DT_F32, NULL, NULL)) != HOT_OK)
    return fail("hot_layer_save", st, ctx);
  if ((st = hot_layer_backward(layer, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 1, NULL)) != HOT_OK)
    return fail("hot_layer_backward", st, ctx);

  /* Misuse is an error code and a message, never a crash. */
  st = hot_layer_backward(layer, NULL, w, HOT_DT_F32, NULL, gx, gw, gb, 1, NULL);
  if (st != HOT_ERR_INVALID || hot_errmsg(ctx)[0] == '\0') {
    fprintf(stderr, "consumer: backward with g_y = NULL returned %s, message '%s'\n",
            hot_status_name(st), hot_errmsg(ctx));
    return 1;
  }
  if ((st = hot_layer_spec_defaults(NULL, HOT_RECIPE_HOT)) != HOT_ERR_INVALID) {
    fprintf(stderr, "consumer: hot_layer_spec_defaults(NULL) returned %s\n", hot_status_name(st));
    return 1;
  }
  hot_layer_spec untouched = spec;
  if ((st = hot_layer_spec_defaults(&untouched, (hot_recipe)7)) != HOT_ERR_INVALID ||
      memcmp(&untouched, &spec, sizeof spec) != 0) {
    fprintf(stderr, "consumer: hot_layer_spec_defaults(recipe 7) returned %s or wrote the spec\n",
            hot_status_name(st));
    return 1;
  }

  /* g_x = g_y w, g_w = g_y^T x, g_b = column sums of g_y, in fp64. */
  for (int t = 0; t < NT; ++t)
    for (int i = 0; i < NI; ++i) {
      double s = 0.0;
      for (int o = 0; o < NO; ++o) s += (double)gy[t * NO + o] * w[o * NI + i];
      ex_gx[t * NI + i] = s;
    }
  for (int o = 0; o < NO; ++o) {
    double sb = 0.0;
    for (int t = 0; t < NT; ++t) sb += gy[t * NO + o];
    ex_gb[o] = sb;
    for (int i = 0; i < NI; ++i) {
      double s = 0.0;
      for (int t = 0; t < NT; ++t) s += (double)gy[t * NO + o] * x[t * NI + i];
      ex_gw[o * NI + i] = s;
    }
  }
  double e_gx = rel_err(gx, ex_gx, NT * NI), e_gw = rel_err(gw, ex_gw, NO * NI);
  double e_gb = rel_err(gb, ex_gb, NO);
  hot_layer_info info;
  if ((st = hot_layer_get_info(layer, &info)) != HOT_OK)
    return fail("hot_layer_get_info", st, ctx);
  printf("layer %s: T=%lld O=%lld I=%lld, saved %zu bytes vs fp32 x %lld (%.3f); relative error "
         "vs fp64: g_x %.4f, g_w %.4f, g_b %.2e\n",
         info.name, (long long)info.T, (long long)info.O, (long long)info.I, info.saved_bytes,
         (long long)info.fp32_bytes, (double)info.saved_bytes / (double)info.fp32_bytes, e_gx,
         e_gw, e_gb);
  /* HOT's errors on random data: 4-bit HQ near 0.3, the rank-36-of-64 HLA projection near
   * sqrt(1 - 36/64) = 0.66; g_b is an fp32 sum. Bounds with margin; NaN fails every one. */
  if (!(e_gx > 0.05 && e_gx < 0.5) || !(e_gw > 0.3 && e_gw < 0.9) || !(e_gb < 1e-5) ||
      !(info.saved_bytes > 0 && (long long)info.saved_bytes < (long long)info.fp32_bytes)) {
    fprintf(stderr, "consumer: figures out of their bands\n");
    return 1;
  }
  hot_layer_destroy(layer);
  return 0;
}

static int run_spec(hot_ctx *ctx, const char *spec_path) {
  hot_layer *layer = NULL;
  hot_status st = hot_layer_from_spec(ctx, spec_path, "fc", 0, &layer);
  if (st != HOT_OK)
    return fail("hot_layer_from_spec", st, ctx);
  hot_layer_info info;
  if ((st = hot_layer_get_info(layer, &info)) != HOT_OK)
    return fail("hot_layer_get_info", st, ctx);
  printf("spec %s: layer %s T=%lld O=%lld I=%lld\n", spec_path, info.name, (long long)info.T,
         (long long)info.O, (long long)info.I);
  hot_layer_destroy(layer);
  return 0;
}

static int run_compile(const char *spec_path) {
  hot_options opt;
  hot_options_init(&opt);
  opt.backend = HOT_BACKEND_CPU;
  opt.arch = "sm_80"; /* on the CPU backend: compile for this arch, no GPU needed */
  opt.disk_cache = -1;
  hot_ctx *ctx = NULL;
  hot_status st = hot_ctx_create(&ctx, &opt);
  if (st != HOT_OK) {
    int r = fail("hot_ctx_create (sm_80)", st, ctx);
    hot_ctx_destroy(ctx);
    return r;
  }
  hot_layer *layer = NULL;
  int r = 0;
  if ((st = hot_layer_from_spec(ctx, spec_path, "fc", 0, &layer)) != HOT_OK)
    r = fail("hot_layer_from_spec (sm_80)", st, ctx);
  else if ((st = hot_layer_compile(layer)) != HOT_OK)
    r = fail("hot_layer_compile (sm_80)", st, ctx);
  hot_stats s;
  if (r == 0 && (st = hot_ctx_stats(ctx, &s)) != HOT_OK)
    r = fail("hot_ctx_stats", st, ctx);
  if (r == 0) {
    printf("compile sm_80: %llu NVRTC compiles (%.0f ms) from the library's embedded templates\n",
           (unsigned long long)s.compiles, s.compile_ms);
    if (s.compiles == 0) {
      fprintf(stderr, "consumer: hot_layer_compile compiled nothing\n");
      r = 1;
    }
  }
  hot_ctx_destroy(ctx);
  return r;
}

int consumer_run(const char *spec_path, int compile) {
  hot_ctx *ctx = NULL;
  hot_status st = hot_ctx_create(&ctx, NULL);
  if (st != HOT_OK) {
    int r = fail("hot_ctx_create", st, ctx);
    hot_ctx_destroy(ctx);
    return r;
  }
  if (hot_ctx_backend(ctx) != HOT_BACKEND_CPU) {
    fprintf(stderr, "consumer: backend %s, expected cpu (HOT_BACKEND=cpu)\n",
            hot_backend_name(hot_ctx_backend(ctx)));
    hot_ctx_destroy(ctx);
    return 1;
  }
  printf("backend: %s\n", hot_backend_name(hot_ctx_backend(ctx)));
  int r = run_layer(ctx);
  if (r == 0 && spec_path)
    r = run_spec(ctx, spec_path);
  hot_ctx_destroy(ctx);
  if (r == 0 && spec_path && compile)
    r = run_compile(spec_path);
  return r;
}

/* fast_bench.c — the C side of bench/cpu_backward.py (loaded with ctypes; a benchmark, not a
 * test): one layer planned like the CPU backend plans it (recipe, sm_80 storage), random data,
 * the forward save, then the backward timed through the reference twins or the fast path.
 *
 *   int hot_fast_bench(int path, long long B, long long L, long long O, long long I, int recipe,
 *                      int threads, int reps, double *best_s, unsigned *checksum)
 * path 0: ref_layer_backward (single-threaded twins); 1: fast_layer_backward with `threads`
 * threads (0: fast_threads()'s default); 2: fast_exact_gx + fast_exact_gw (fp64), 3: the same
 * through ref_exact_gx/gw. Writes the best of `reps` wall times in seconds and a checksum of
 * the output bits (equal for paths 0 and 1, and for 2 and 3). Returns 0, or -1 with a message on
 * stderr. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fast.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t g_state;
static float rnd(void) { /* uniform in [-1, 1): xorshift64* */
  g_state ^= g_state >> 12;
  g_state ^= g_state << 25;
  g_state ^= g_state >> 27;
  uint64_t v = g_state * 2685821657736338717ull;
  return (float)((double)(v >> 40) / 8388608.0 - 1.0);
}

static unsigned fold(const float *v, int64_t n) {
  unsigned h = 2166136261u;
  for (int64_t i = 0; i < n; ++i) {
    unsigned u;
    memcpy(&u, &v[i], sizeof u);
    h = (h ^ u) * 16777619u;
  }
  return h;
}

int hot_fast_bench(int path, long long B, long long L, long long O, long long I, int recipe,
                   int threads, int reps, double *best_s, unsigned *checksum) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  char err[256] = "";
  plan_spec_defaults(&sp, (hot_recipe)recipe);
  snprintf(sp.name, sizeof sp.name, "bench");
  sp.in_features = I;
  sp.out_features = O;
  if (plan_layer(&sp, B, L, (hot_recipe)recipe, HOT_ARCH_SM80, 0, &pl, err, sizeof err)) {
    fprintf(stderr, "hot_fast_bench: plan_layer: %s\n", err);
    return -1;
  }
  const int64_t T = pl.T;
  float *x = malloc((size_t)(T * I) * sizeof *x), *w = malloc((size_t)(O * I) * sizeof *w);
  float *g = malloc((size_t)(T * O) * sizeof *g), *gx = malloc((size_t)(T * I) * sizeof *gx);
  float *gw = malloc((size_t)(O * I) * sizeof *gw), *gb = malloc((size_t)O * sizeof *gb);
  double *dx = path >= 2 ? malloc((size_t)(T * I) * sizeof *dx) : NULL;
  double *dw = path >= 2 ? malloc((size_t)(O * I) * sizeof *dw) : NULL;
  if (!x || !w || !g || !gx || !gw || !gb || (path >= 2 && (!dx || !dw))) {
    fprintf(stderr, "hot_fast_bench: out of memory\n");
    return -1;
  }
  g_state = 0x243F6A8885A308D3ull;
  for (int64_t i = 0; i < T * I; ++i) x[i] = rnd();
  for (int64_t i = 0; i < O * I; ++i) w[i] = 0.05f * rnd();
  for (int64_t i = 0; i < T * O; ++i) g[i] = 1e-3f * rnd();
  fast_set_threads(threads);
  hot_ref_saved s;
  int rc = fast_layer_save(&pl, x, HOT_DT_F32, &s);
  double best = 1e30;
  for (int r = 0; r < reps && !rc; ++r) {
    double t0 = now_s();
    switch (path) {
    case 0: rc = ref_layer_backward(&pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, gx, gw, gb); break;
    case 1: rc = fast_layer_backward(&pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, gx, gw, gb); break;
    case 2:
      rc = fast_exact_gx(T, O, I, g, w, dx);
      if (!rc) rc = fast_exact_gw(T, O, I, g, x, dw);
      break;
    default:
      rc = ref_exact_gx(T, O, I, g, w, dx);
      if (!rc) rc = ref_exact_gw(T, O, I, g, x, dw);
      break;
    }
    double dt = now_s() - t0;
    best = dt < best ? dt : best;
  }
  if (rc) fprintf(stderr, "hot_fast_bench: %s\n", ref_status_name(rc));
  *best_s = best;
  if (path >= 2) {
    for (int64_t i = 0; i < T * I; ++i) gx[i] = (float)dx[i];
    for (int64_t i = 0; i < O * I; ++i) gw[i] = (float)dw[i];
  }
  *checksum = fold(gx, T * I) ^ (fold(gw, O * I) * 31u) ^ (path < 2 ? fold(gb, O) * 7u : 0u);
  ref_saved_free(&s);
  fast_set_threads(0);
  free(x), free(w), free(g), free(gx), free(gw), free(gb), free(dx), free(dw);
  return rc ? -1 : 0;
}

/* api_util.h — helpers of the public-API suites: seeded inputs, a small spec file, a reference
 * run of a whole layer on the twins with the layer's own plan. */
#ifndef HOT_TESTS_API_UTIL_H
#define HOT_TESTS_API_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed.h"
#include "hot.h"
#include "ref.h"

/* A suite's environment: HOT_CUDA_DRIVER = driver (the fake one, or a path that does not exist:
 * no driver whatever the machine has), and none of the HOT_* variables a context reads that would
 * change what the suite tests (backend, arch, seed, JIT debug output, a kernel pack). */
static inline void au_suite_env(const char *driver) {
  setenv("HOT_CUDA_DRIVER", driver, 1);
  static const char *const unset[] = {"HOT_BACKEND", "HOT_ARCH", "HOT_SEED", "HOT_JIT_DEBUG",
                                      "HOT_KERNEL_PACK"};
  for (size_t i = 0; i < sizeof unset / sizeof unset[0]; ++i) unsetenv(unset[i]);
}

/* A layer description: recipe r's defaults (plan_spec_defaults), the name and the sizes. */
static inline void au_spec(hot_layer_spec *s, hot_recipe r, const char *name, int64_t in,
                           int64_t out) {
  plan_spec_defaults(s, r);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->in_features = in;
  s->out_features = out;
}

/* splitmix64 -> uniform in [-1, 1) -> approximately normal (sum of 4). */
static inline uint64_t au_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline void au_fill(uint64_t seed, float *v, int64_t n) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    double a = 0;
    for (int k = 0; k < 4; ++k) a += (double)(au_next(&s) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    v[i] = (float)(a * 0.866);
  }
}

/* f32 -> bf16 bit patterns (round to nearest even; inputs finite). */
static inline void au_to_bf16(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    memcpy(&u, &src[i], 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    dst[i] = (uint16_t)(u >> 16);
  }
}

/* A small spec: layer "fc" (O = 100, I = 137, bias) and "proj" (O = 48, I = 64, no bias,
 * per-token g'), batch 3 x 197 tokens, target sm_90, seed 12345. Written to dir/rt_small.lua. */
static const char au_spec_text[] =
    "local hot = require \"hot\"\n"
    "return hot.model {\n"
    "  name = \"rt_small\", batch = 3, tokens = 197, recipe = hot.recipe.hot, seed = 12345,\n"
    "  target = hot.target { arch = \"sm_90\" },\n"
    "  layers = {\n"
    "    hot.linear { name = \"fc\", in_features = 137, out_features = 100 },\n"
    "    hot.linear { name = \"proj\", in_features = 64, out_features = 48, bias = false,\n"
    "                 hq = hot.hq { scale = \"token\" } },\n"
    "  },\n"
    "}\n";

static inline void au_write_spec(const char *dir, char *path, size_t n) {
  snprintf(path, n, "%s/rt_small.lua", dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(au_spec_text, f);
    fclose(f);
  }
}

/* Inputs of one layer (f32) and outputs of the API and of the reference. */
typedef struct {
  int64_t T, O, I;
  float *x, *w, *gy;
  float *gx, *gw, *gb;          /* through the API */
  float *rgx, *rgw, *rgb;       /* the reference */
} au_io;

static inline void au_io_init(au_io *io, int64_t T, int64_t O, int64_t I, uint64_t seed) {
  memset(io, 0, sizeof *io);
  io->T = T;
  io->O = O;
  io->I = I;
  io->x = malloc((size_t)(T * I) * 4);
  io->w = malloc((size_t)(O * I) * 4);
  io->gy = malloc((size_t)(T * O) * 4);
  io->gx = calloc((size_t)(T * I), 4);
  io->gw = calloc((size_t)(O * I), 4);
  io->gb = calloc((size_t)O, 4);
  io->rgx = calloc((size_t)(T * I), 4);
  io->rgw = calloc((size_t)(O * I), 4);
  io->rgb = calloc((size_t)O, 4);
  au_fill(seed, io->x, T * I);
  au_fill(seed + 1, io->w, O * I);
  au_fill(seed + 2, io->gy, T * O);
}

static inline void au_io_free(au_io *io) {
  free(io->x); free(io->w); free(io->gy);
  free(io->gx); free(io->gw); free(io->gb);
  free(io->rgx); free(io->rgw); free(io->rgb);
}

/* The programs a layer's JIT asks the cache for: one per distinct kernel whose template is in
 * this build (runtime/jit.h). */
static inline unsigned au_programs(const hot_layer *l) {
  const hot_layer_plan *p = hot_layer_get_plan(l);
  unsigned n = 0;
  for (int k = 0; k < p->n_kernels; ++k) {
    int dup = 0;
    for (int j = 0; j < k; ++j) dup |= strcmp(p->kernels[j].name, p->kernels[k].name) == 0;
    if (!dup && embed_find(p->kernels[k].templ)) ++n;
  }
  return n;
}

#endif

/* data.c — the seeded inputs of hot-bench: standard-normal x, w and g_y from a counter-based
 * generator (splitmix64 of seed, stream and index), so every machine and every run gets the same
 * values, independent of the order they are generated in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static uint64_t mix(uint64_t z) { /* splitmix64 finaliser */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void bench_fill_normal(float *dst, size_t n, uint64_t seed, uint64_t stream) {
  uint64_t base = mix(seed ^ mix(stream));
  for (size_t i = 0; i < n; i += 2) { /* Box-Muller: two normals per pair of uniforms */
    uint64_t a = mix(base + 2 * (uint64_t)i), b = mix(base + 2 * (uint64_t)i + 1);
    double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53; /* (0, 1]: log is finite */
    double u2 = (double)(b >> 11) * 0x1.0p-53;
    double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u2;
    dst[i] = (float)(r * cos(t));
    if (i + 1 < n) dst[i + 1] = (float)(r * sin(t));
  }
}

void bench_to_bf16(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    memcpy(&u, &src[i], 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { /* NaN: keep it a quiet NaN */
      dst[i] = (uint16_t)((u >> 16) | 0x40u);
      continue;
    }
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    dst[i] = (uint16_t)(u >> 16);
  }
}

int bench_data_make(bench_data *d, int64_t T, int64_t O, int64_t I, uint64_t seed, int layer) {
  memset(d, 0, sizeof *d);
  d->T = T;
  d->O = O;
  d->I = I;
  d->x = malloc((size_t)(T * I) * sizeof(float));
  d->w = malloc((size_t)(O * I) * sizeof(float));
  d->gy = malloc((size_t)(T * O) * sizeof(float));
  if (!d->x || !d->w || !d->gy) {
    bench_data_free(d);
    return -1;
  }
  uint64_t s = (uint64_t)layer * 16;
  bench_fill_normal(d->x, (size_t)(T * I), seed, s + 1);
  bench_fill_normal(d->w, (size_t)(O * I), seed, s + 2);
  bench_fill_normal(d->gy, (size_t)(T * O), seed, s + 3);
  return 0;
}

void bench_data_free(bench_data *d) {
  free(d->x);
  free(d->w);
  free(d->gy);
  d->x = d->w = d->gy = NULL;
}

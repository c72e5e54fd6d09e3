/* tooldata.c — the seeded inputs of hot-bench and hot-tune (hot_tooldata.h): standard-normal x, w
 * and g_y from a counter-based generator (splitmix64 of seed, stream and index), so every machine
 * and every run gets the same values, independent of the order they are generated in (large
 * fills are split over threads). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hot_tooldata.h"
#include "hot_tools.h"

#include "hot_math.cuh"

static uint64_t mix(uint64_t z) { /* splitmix64 finaliser */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Elements [i0, i1) of the fill (i0 even): Box-Muller, two normals per pair of uniforms. */
static void fill_range(float *dst, size_t n, uint64_t base, size_t i0, size_t i1) {
  for (size_t i = i0; i < i1; i += 2) {
    uint64_t a = mix(base + 2 * (uint64_t)i), b = mix(base + 2 * (uint64_t)i + 1);
    double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53; /* (0, 1]: log is finite */
    double u2 = (double)(b >> 11) * 0x1.0p-53;
    double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u2;
    dst[i] = (float)(r * cos(t));
    if (i + 1 < n) dst[i + 1] = (float)(r * sin(t));
  }
}

typedef struct {
  float *dst;
  size_t n, i0, i1;
  uint64_t base;
} fill_part;

static void *fill_thread(void *arg) {
  const fill_part *p = arg;
  fill_range(p->dst, p->n, p->base, p->i0, p->i1);
  return NULL;
}

/* Threads of a large fill: those of the programs' CPU config (HOT_CPU_THREADS as hot_ctx_create
 * parses it, tools_fast_config), else the online CPUs; at most FILL_MAX_THREADS. The values do
 * not depend on the split. */
#define FILL_MAX_THREADS FAST_MAX_THREADS
static int fill_threads(void) {
  const fast_config *c = tools_fast_config(NULL, 0);
  long v = c ? c->threads : sysconf(_SC_NPROCESSORS_ONLN);
  return v < 1 ? 1 : v > FILL_MAX_THREADS ? FILL_MAX_THREADS : (int)v;
}

void tooldata_fill_normal(float *dst, size_t n, uint64_t seed, uint64_t stream) {
  const uint64_t base = mix(seed ^ mix(stream));
  /* every element depends on its index only, so any split gives the same values: slices of an
   * even length (whole pairs) of at least 2^18 elements, one per thread; a thread that cannot be
   * started leaves its slice to the caller */
  size_t parts = n >> 18;
  const int nt = fill_threads();
  parts = parts < 1 ? 1 : parts > (size_t)nt ? (size_t)nt : parts;
  const size_t len = ((n / parts + 1) | 1) + 1; /* even, parts * len >= n */
  fill_part p[FILL_MAX_THREADS];
  pthread_t th[FILL_MAX_THREADS];
  int started[FILL_MAX_THREADS] = {0};
  for (size_t j = 0; j < parts; ++j) {
    p[j].dst = dst, p[j].n = n, p[j].base = base;
    p[j].i0 = j * len < n ? j * len : n;
    p[j].i1 = (j + 1) * len < n ? (j + 1) * len : n;
    if (j > 0) started[j] = pthread_create(&th[j], NULL, fill_thread, &p[j]) == 0;
  }
  fill_range(dst, n, base, p[0].i0, p[0].i1);
  for (size_t j = 1; j < parts; ++j) {
    if (started[j]) pthread_join(th[j], NULL);
    else fill_range(dst, n, base, p[j].i0, p[j].i1);
  }
}

void tooldata_outliers(float *g, int64_t T, int64_t O, int kind) {
  for (int j = 0; j < 4; ++j) {
    if (kind == TOOLDATA_CHANNELS) {
      const int64_t c = (j * O) / 4 + (O > 4 ? 1 : 0);
      for (int64_t t = 0; t < T; ++t) g[t * O + c] *= 20.0f;
    } else if (kind == TOOLDATA_TOKENS) {
      const int64_t t = (j * T) / 4 + (T > 4 ? 1 : 0);
      for (int64_t c = 0; c < O; ++c) g[t * O + c] *= 20.0f;
    }
  }
}

void tooldata_to_bf16(const float *src, uint16_t *dst, size_t n) {
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

void tooldata_to_f16(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    memcpy(&u, &src[i], 4);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) { /* NaN */
      dst[i] = (uint16_t)(sign | 0x7e00u);
    } else if (a >= 0x477ff000u) { /* rounds to >= 65520: infinity */
      dst[i] = (uint16_t)(sign | 0x7c00u);
    } else if (a >= 0x38800000u) { /* normal f16: drop 13 mantissa bits, ties to even */
      uint32_t r = a - 0x38000000u; /* rebias 127 -> 15 */
      r += 0xfffu + ((r >> 13) & 1u);
      dst[i] = (uint16_t)(sign | (r >> 13));
    } else { /* subnormal f16 (or zero): the value in units of 2^-24, ties to even */
      const int e = (int)(a >> 23);
      const uint32_t m = (a & 0x7fffffu) | (e ? 0x800000u : 0u);
      const int shift = 126 - e; /* a = m * 2^(e - 150); units of 2^-24: m >> (126 - e) */
      uint32_t q = 0;
      if (shift < 32) {
        q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) ++q;
      }
      dst[i] = (uint16_t)(sign | q);
    }
  }
}

size_t tooldata_dtype_size(hot_dtype dt) { return dt == HOT_DT_F32 ? 4 : 2; }

const void *tooldata_in(const tooldata *d, const float *v) {
  if (d->dt == HOT_DT_F32) return v;
  return v == d->x ? (const void *)d->x16 : v == d->w ? (const void *)d->w16 : (const void *)d->gy16;
}

/* Rounds v[0..n) to dt in place, keeping the bit patterns in *bits (malloc'd). */
int tooldata_round_to_dtype(float *v, size_t n, hot_dtype dt, uint16_t **bits) {
  if (dt == HOT_DT_F32) return 0;
  *bits = malloc(n * sizeof **bits);
  if (!*bits) return -1;
  if (dt == HOT_DT_BF16) tooldata_to_bf16(v, *bits, n);
  else tooldata_to_f16(v, *bits, n);
  for (size_t i = 0; i < n; ++i)
    v[i] = dt == HOT_DT_BF16 ? hot_bf16_to_f32((*bits)[i]) : hot_f16_to_f32((*bits)[i]);
  return 0;
}

int tooldata_make(tooldata *d, int64_t T, int64_t O, int64_t I, uint64_t seed, int layer,
                    hot_dtype dt) {
  memset(d, 0, sizeof *d);
  d->T = T;
  d->O = O;
  d->I = I;
  d->dt = dt;
  d->x = malloc((size_t)(T * I) * sizeof(float));
  d->w = malloc((size_t)(O * I) * sizeof(float));
  d->gy = malloc((size_t)(T * O) * sizeof(float));
  if (!d->x || !d->w || !d->gy) {
    tooldata_free(d);
    return -1;
  }
  uint64_t s = (uint64_t)layer * 16;
  tooldata_fill_normal(d->x, (size_t)(T * I), seed, s + 1);
  tooldata_fill_normal(d->w, (size_t)(O * I), seed, s + 2);
  tooldata_fill_normal(d->gy, (size_t)(T * O), seed, s + 3);
  if (tooldata_round_to_dtype(d->x, (size_t)(T * I), dt, &d->x16) ||
      tooldata_round_to_dtype(d->w, (size_t)(O * I), dt, &d->w16) ||
      tooldata_round_to_dtype(d->gy, (size_t)(T * O), dt, &d->gy16)) {
    tooldata_free(d);
    return -1;
  }
  return 0;
}

void tooldata_free(tooldata *d) {
  free(d->x);
  free(d->w);
  free(d->gy);
  free(d->x16);
  free(d->w16);
  free(d->gy16);
  d->x = d->w = d->gy = NULL;
  d->x16 = d->w16 = d->gy16 = NULL;
}

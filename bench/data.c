/* data.c — the seeded inputs of hot-bench: standard-normal x, w and g_y from a counter-based
 * generator (splitmix64 of seed, stream and index), so every machine and every run gets the same
 * values, independent of the order they are generated in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "hot_math.cuh"

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

void bench_outliers(float *g, int64_t T, int64_t O, int kind) {
  for (int j = 0; j < 4; ++j) {
    if (kind == BENCH_DATA_CHANNELS) {
      const int64_t c = (j * O) / 4 + (O > 4 ? 1 : 0);
      for (int64_t t = 0; t < T; ++t) g[t * O + c] *= 20.0f;
    } else if (kind == BENCH_DATA_TOKENS) {
      const int64_t t = (j * T) / 4 + (T > 4 ? 1 : 0);
      for (int64_t c = 0; c < O; ++c) g[t * O + c] *= 20.0f;
    }
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

void bench_to_f16(const float *src, uint16_t *dst, size_t n) {
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

size_t bench_dtype_size(hot_dtype dt) { return dt == HOT_DT_F32 ? 4 : 2; }

const void *bench_data_in(const bench_data *d, const float *v) {
  if (d->dt == HOT_DT_F32) return v;
  return v == d->x ? (const void *)d->x16 : v == d->w ? (const void *)d->w16 : (const void *)d->gy16;
}

/* Rounds v[0..n) to dt in place, keeping the bit patterns in *bits (malloc'd). */
int bench_round_to_dtype(float *v, size_t n, hot_dtype dt, uint16_t **bits) {
  if (dt == HOT_DT_F32) return 0;
  *bits = malloc(n * sizeof **bits);
  if (!*bits) return -1;
  if (dt == HOT_DT_BF16) bench_to_bf16(v, *bits, n);
  else bench_to_f16(v, *bits, n);
  for (size_t i = 0; i < n; ++i)
    v[i] = dt == HOT_DT_BF16 ? hot_bf16_to_f32((*bits)[i]) : hot_f16_to_f32((*bits)[i]);
  return 0;
}

int bench_data_make(bench_data *d, int64_t T, int64_t O, int64_t I, uint64_t seed, int layer,
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
    bench_data_free(d);
    return -1;
  }
  uint64_t s = (uint64_t)layer * 16;
  bench_fill_normal(d->x, (size_t)(T * I), seed, s + 1);
  bench_fill_normal(d->w, (size_t)(O * I), seed, s + 2);
  bench_fill_normal(d->gy, (size_t)(T * O), seed, s + 3);
  if (bench_round_to_dtype(d->x, (size_t)(T * I), dt, &d->x16) ||
      bench_round_to_dtype(d->w, (size_t)(O * I), dt, &d->w16) ||
      bench_round_to_dtype(d->gy, (size_t)(T * O), dt, &d->gy16)) {
    bench_data_free(d);
    return -1;
  }
  return 0;
}

void bench_data_free(bench_data *d) {
  free(d->x);
  free(d->w);
  free(d->gy);
  free(d->x16);
  free(d->w16);
  free(d->gy16);
  d->x = d->w = d->gy = NULL;
  d->x16 = d->w16 = d->gy16 = NULL;
}

/* ---- FP8 e4m3 (the cuBLASLt baseline's operands) --------------------------------------------
 * e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN, the
 * largest finite value 448 (S.1111.110), subnormals m * 2^-9. */
uint8_t bench_to_e4m3(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint8_t)(sign | 0x7fu); /* NaN */
  if (a >= 0x43e00000u) return (uint8_t)(sign | 0x7eu); /* >= 448 (and infinity): saturate */
  if (a >= 0x3c800000u) {                                 /* >= 2^-6: normal e4m3 */
    uint32_t r = a - ((127u - 7u) << 23);                 /* rebias 127 -> 7 */
    r += 0x7ffffu + ((r >> 20) & 1u);                     /* keep 3 mantissa bits, ties to even */
    r >>= 20;
    return (uint8_t)(sign | (r > 0x7eu ? 0x7eu : r));     /* 464 and above would be NaN: 448 */
  }
  /* subnormal e4m3 (or zero): the value in units of 2^-9, ties to even */
  const int e = (int)(a >> 23);
  const uint32_t m = (a & 0x7fffffu) | (e ? 0x800000u : 0u);
  const int shift = (e ? 141 - e : 140); /* a = m * 2^(e - 150) (2^-149 for e = 0) */
  uint32_t q = 0;
  if (shift < 32) {
    q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
  }
  return (uint8_t)(sign | q); /* q = 8 is the smallest normal, 2^-6: the same bits */
}

float bench_e4m3_to_f32(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  float v;
  if ((c & 0x7f) == 0x7f) v = NAN;
  else if (!e) v = ldexpf((float)m, -9);
  else v = ldexpf((float)(8 + m), e - 10);
  return (c & 0x80) ? -v : v;
}

float bench_amax(const float *v, size_t n) {
  float a = 0;
  for (size_t i = 0; i < n; ++i) a = fmaxf(a, fabsf(v[i]));
  return a;
}

void bench_fp8_pack(const float *src, int64_t rows, int64_t cols, float q, int t, uint8_t *dst,
                    int64_t prows, int64_t pcols) {
  memset(dst, 0, (size_t)(prows * pcols));
  /* 64 x 64 tiles: the transposed writes stay within a few cache lines per row of the tile */
  for (int64_t r0 = 0; r0 < rows; r0 += 64)
    for (int64_t c0 = 0; c0 < cols; c0 += 64)
      for (int64_t r = r0; r < rows && r < r0 + 64; ++r)
        for (int64_t c = c0; c < cols && c < c0 + 64; ++c) {
          uint8_t v = bench_to_e4m3(src[r * cols + c] * q);
          if (t) dst[c * prows + r] = v;
          else dst[r * pcols + c] = v;
        }
}

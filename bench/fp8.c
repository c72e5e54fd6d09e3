/* fp8.c — FP8 e4m3 conversions of hot-bench's cuBLASLt baseline (cublaslt.c, gpu.c). */
#include <math.h>
#include <string.h>

#include "bench.h"

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

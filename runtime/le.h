/* le.h — little-endian integers in byte buffers: the on-disk formats of libhot (kernel cache
 * entries, kernel packs, layer captures) all store their integers this way; and the one stored
 * form of a time (whole microseconds) that the cache files and packs share. */
#ifndef HOT_LE_H
#define HOT_LE_H

#include <stdint.h>

/* Writes the low `bytes` bytes of v at p, least significant first. */
static inline void hot_le_put(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* Reads `bytes` bytes at p, least significant first. */
static inline uint64_t hot_le_get(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Times (a compile's wall time) are stored as whole microseconds. hot_ms_to_us rounds ms to the
 * nearest microsecond (negative, NaN or beyond 2^52 us: 0); hot_us_to_ms reads it back. A time
 * already on that grid survives the round trip exactly, so the cache puts every compile time on
 * the grid (hot_ms_on_grid) before anyone sees it: memory, disk and pack then report the same
 * double. */
static inline uint64_t hot_ms_to_us(double ms) {
  double us = ms * 1000.0 + 0.5;
  return us >= 1.0 && us < 4503599627370496.0 ? (uint64_t)us : 0;
}

static inline double hot_us_to_ms(uint64_t us) { return (double)us / 1000.0; }

static inline double hot_ms_on_grid(double ms) { return hot_us_to_ms(hot_ms_to_us(ms)); }

#endif

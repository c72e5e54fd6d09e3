/* le.h — little-endian integers in byte buffers: the on-disk formats of libhot (kernel cache
 * entries, kernel packs, layer captures) all store their integers this way. */
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

#endif

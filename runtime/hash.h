/* hash.h — SHA-256 (FIPS 180-4), written for hot's kernel cache keys and entry checksums.
 * Streaming: hash_sha256_init, any number of hash_sha256_update calls, hash_sha256_final.
 * No allocation; a context is plain data (copy it to fork a running hash). */
#ifndef HOT_HASH_H
#define HOT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_SHA256_BYTES 32

typedef struct {
  uint32_t h[8];          /* chaining state */
  uint64_t bytes;         /* message length so far */
  unsigned char buf[64];  /* pending partial block */
  size_t fill;            /* bytes pending in buf */
} hash_sha256;

void hash_sha256_init(hash_sha256 *s);
/* Adds n bytes at p (p may be NULL when n == 0). */
void hash_sha256_update(hash_sha256 *s, const void *p, size_t n);
/* Writes the digest; s must be re-initialised before reuse. */
void hash_sha256_final(hash_sha256 *s, unsigned char out[HASH_SHA256_BYTES]);
/* One-shot digest of n bytes at p. */
void hash_sha256_digest(const void *p, size_t n, unsigned char out[HASH_SHA256_BYTES]);
/* Lower-case hex of a digest into hex (65 bytes with the NUL). Returns hex. */
char *hash_hex(const unsigned char d[HASH_SHA256_BYTES], char hex[2 * HASH_SHA256_BYTES + 1]);

#endif

#ifndef HOT_BASE_UTF8_H
#define HOT_BASE_UTF8_H
/* Cutting UTF-8 text to a byte bound at a character boundary (header only: libhot, the CPU fast
 * path and the tools include it). Names and messages are bounded in bytes (HOT_NAME_MAX, the
 * error message buffer); a cut there must not leave half a character at the end. */

#include <stddef.h>

/* The length of s[0 .. len) without a multi-byte UTF-8 character that the end cuts short: the
 * trailing lead byte and continuation bytes of an incomplete sequence are dropped, anything else
 * (ASCII, complete characters, bytes that are not UTF-8 at all) is kept as it is. Reads s[0 ..
 * len) only. */
static inline size_t utf8_complete(const char *s, size_t len) {
  size_t i = len, back = 0;
  while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0u) == 0x80u) {
    --i;
    ++back;
  }
  if (i == 0) return len;
  const unsigned char lead = (unsigned char)s[i - 1];
  if (lead < 0xC0u) return len; /* ASCII, or not UTF-8 */
  const size_t need = lead >= 0xF0u ? 4u : lead >= 0xE0u ? 3u : 2u;
  return back + 1 < need ? i - 1 : len;
}

/* Cuts the NUL-terminated string buf to at most cap - 1 bytes at a character boundary (cap >= 1;
 * buf holds at least cap bytes, terminated or not). Returns the new length. */
static inline size_t utf8_cut(char *buf, size_t cap) {
  size_t n = 0;
  while (n < cap - 1 && buf[n]) ++n;
  n = buf[n] ? utf8_complete(buf, n) : n; /* cut only when something follows */
  buf[n] = '\0';
  return n;
}

#endif

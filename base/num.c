/* num.c — the one parser of user-written numbers (num.h). */
#include "num.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "diag.h"

/* The value as the message shows it: at most 40 bytes, control bytes as '?'. */
static const char *shown(const char *s, char buf[44]) {
  size_t i = 0;
  for (; s && s[i] && i < 40; ++i) buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  buf[i] = '\0';
  if (s && s[i]) buf[i++] = '.', buf[i++] = '.', buf[i++] = '.', buf[i] = '\0';
  return buf;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int num_parse_u64(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
                  char *err, size_t errlen) {
  const int hex = s && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char *d = s ? s + (hex ? 2 : 0) : "";
  const uint64_t base = hex ? 16 : 10;
  uint64_t v = 0;
  int ok = *d != '\0';
  for (; ok && *d; ++d) {
    const int k = hex ? hex_value(*d) : is_digit(*d) ? *d - '0' : -1;
    if (k < 0 || v > (UINT64_MAX - (uint64_t)k) / base) ok = 0; /* not a digit, or overflow */
    else v = v * base + (uint64_t)k;
  }
  if (!ok || v < lo || v > hi) {
    char b[44];
    return diag_errf(err, errlen, "%s='%s': expected an integer in [%llu, %llu]", name,
                     shown(s, b), (unsigned long long)lo, (unsigned long long)hi);
  }
  *out = v;
  return 0;
}

int num_parse_int(const char *name, const char *s, int lo, int hi, int *out, char *err,
                  size_t errlen) {
  uint64_t v = 0;
  if (lo < 0 || hi < lo) return diag_errf(err, errlen, "%s: bad range [%d, %d]", name, lo, hi);
  if (num_parse_u64(name, s, (uint64_t)lo, (uint64_t)hi, &v, err, errlen)) return -1;
  *out = (int)v;
  return 0;
}

/* Length of the number at s under num.h's grammar (digits [. digits] [e [+-] digits], at least
 * one digit in the mantissa), or 0. */
static size_t real_length(const char *s) {
  size_t i = 0, m = 0;
  while (is_digit(s[i])) ++i, ++m;
  if (s[i] == '.')
    for (++i; is_digit(s[i]); ++i) ++m;
  if (m == 0) return 0;
  if (s[i] == 'e' || s[i] == 'E') {
    size_t j = i + 1;
    if (s[j] == '+' || s[j] == '-') ++j;
    if (!is_digit(s[j])) return 0;
    while (is_digit(s[j])) ++j;
    i = j;
  }
  return i;
}

int num_parse_double(const char *name, const char *s, double lo, double hi, double *out, char *err,
                     size_t errlen) {
  double v = 0;
  int ok = s && *s && s[real_length(s)] == '\0' && real_length(s) > 0;
  if (ok) {
    char *end = NULL;
    errno = 0;
    v = strtod(s, &end); /* on the checked text: only its decimal form can reach it */
    ok = end && *end == '\0' && isfinite(v) && v >= lo && v <= hi;
  }
  if (!ok) {
    char b[44];
    return diag_errf(err, errlen, "%s='%s': expected a number in [%g, %g]", name, shown(s, b), lo,
                     hi);
  }
  *out = v;
  return 0;
}

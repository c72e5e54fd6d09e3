/* buf.c — growable text buffer (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(hot_buf *b, size_t extra) {
  if (b->failed) return 0;
  if (b->len + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) {
    b->failed = 1;
    return 0;
  }
  b->data = d;
  b->cap = cap;
  return 1;
}

void buf_add(hot_buf *b, const char *s, size_t n) {
  if (!b || !grow(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void buf_puts(hot_buf *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_printf(hot_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (!b || n < 0 || !grow(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

int buf_ok(const hot_buf *b) { return b && !b->failed; }

void buf_free(hot_buf *b) {
  if (!b) return;
  free(b->data);
  memset(b, 0, sizeof *b);
}

char *buf_take(hot_buf *b) {
  if (!b || b->failed) {
    buf_free(b);
    return NULL;
  }
  if (!b->data) {
    if (!grow(b, 0)) return NULL;
    b->data[0] = '\0';
  }
  char *d = b->data;
  memset(b, 0, sizeof *b);
  return d;
}

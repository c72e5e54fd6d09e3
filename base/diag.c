/* diag.c — collected diagnostics (see diag.h). */
#include "diag.h"
#include "fileio.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_add(hot_diag *d, const char *fmt, ...) {
  if (!d) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *line = n >= 0 ? malloc((size_t)n + 1) : NULL;
  char **grown = line ? realloc(d->lines, sizeof *d->lines * (size_t)(d->count + 1)) : NULL;
  if (!grown) {
    free(line);
    d->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(line, (size_t)n + 1, fmt, ap);
  va_end(ap);
  if ((size_t)n >= HOT_MSG_MAX) fileio_msg_cut(line, HOT_MSG_MAX, (size_t)n);
  d->lines = grown;
  d->lines[d->count++] = line;
}

void diag_free(hot_diag *d) {
  if (!d) return;
  for (int i = 0; i < d->count; ++i) free(d->lines[i]);
  free(d->lines);
  d->lines = NULL;
  d->count = 0;
  d->oom = 0;
}

int diag_errf(char *err, size_t n, const char *fmt, ...) {
  if (err && n) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(err, n, fmt, ap);
    va_end(ap);
    if (w > 0) fileio_msg_cut(err, n, (size_t)w); /* too long: cut at a word, "..." */
  }
  return -1;
}

const char *diag_names(char *dst, size_t n, int count, const char *(*name)(const void *ctx, int i),
                       const void *ctx) {
  if (!dst || !n) return dst;
  dst[0] = '\0';
  if (count <= 0) {
    snprintf(dst, n, "none");
    return dst;
  }
  size_t o = 0, full = 0;
  int shown = count < HOT_MSG_NAMES ? count : HOT_MSG_NAMES;
  for (int i = 0; i < shown; ++i) {
    const char *s = name(ctx, i);
    int r = snprintf(dst + o, n - o, "%s%s", i ? ", " : "", s ? s : "?");
    if (r < 0) break;
    full += (size_t)r;
    o = full < n ? full : n - 1;
  }
  if (count > shown) {
    int r = snprintf(dst + o, n - o, ", ... and %d more", count - shown);
    if (r > 0) full += (size_t)r;
  }
  if (full >= n) fileio_msg_cut(dst, n, full);
  return dst;
}

int diag_fprintf(FILE *f, const char *fmt, ...) {
  char small[HOT_MSG_MAX * 2];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0 || !f) return -1;
  char *text = small;
  if ((size_t)n >= sizeof small) { /* a long text (a usage): formatted whole, then cut per line */
    text = malloc((size_t)n + 1);
    if (!text) {
      text = small;
      n = (int)sizeof small - 1;
    } else {
      va_start(ap, fmt);
      vsnprintf(text, (size_t)n + 1, fmt, ap);
      va_end(ap);
    }
  }
  int rc = 0;
  char line[HOT_MSG_MAX];
  for (const char *p = text; *p && rc >= 0;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len < sizeof line) {
      rc = fprintf(f, "%.*s%s", (int)len, p, nl ? "\n" : "");
    } else {
      memcpy(line, p, sizeof line - 1);
      line[sizeof line - 1] = '\0';
      fileio_msg_cut(line, sizeof line, len);
      rc = fprintf(f, "%s%s", line, nl ? "\n" : "");
    }
    p += len + (nl ? 1 : 0);
  }
  if (text != small) free(text);
  return rc;
}

/* diag.c — collected diagnostics (see diag.h). */
#include "diag.h"
#include "fileio.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

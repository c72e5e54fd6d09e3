/* diag.h — a list of one-line diagnostics ("file:line: layer 'x': message"), collected so that
 * every mistake of a spec is reported together. */
#ifndef HOT_DIAG_H
#define HOT_DIAG_H
#include <stddef.h>

typedef struct {
  int count;
  char **lines; /* owned; free with diag_free */
  int oom;      /* an allocation failed: some lines were dropped */
} hot_diag;

/* Appends a formatted line (printf-style). On allocation failure sets d->oom and drops it. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void diag_add(hot_diag *d, const char *fmt, ...);

/* Writes a printf-style one-line message into err (n bytes, always NUL-terminated when n > 0;
 * nothing when err is NULL or n is 0) and returns -1, so `return diag_errf(err, n, ...)` reports
 * a failure in one line. Shared by the generator and the runtime. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int diag_errf(char *err, size_t n, const char *fmt, ...);

/* Frees every line; *d becomes empty and reusable. NULL-safe. */
void diag_free(hot_diag *d);

#endif

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

/* Frees every line; *d becomes empty and reusable. NULL-safe. */
void diag_free(hot_diag *d);

#endif

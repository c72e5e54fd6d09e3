/* diag.h — a list of one-line diagnostics ("file:line: layer 'x': message"), collected so that
 * every mistake of a spec is reported together. */
#ifndef HOT_DIAG_H
#define HOT_DIAG_H
#include <stddef.h>
#include <stdio.h>

/* The bound of every message hot prints or returns (docs/reliability.md, "Bounded messages"): one
 * line of at most HOT_MSG_MAX - 1 bytes (a longer one is cut at a word and ends with "..."), and a
 * list of names (layers, options) shows at most HOT_MSG_NAMES of them, then "... and N more". The
 * same in hot-gen, hot-bench, hot-tune, a spec's diagnostics and libhot's hot_errmsg. */
#define HOT_MSG_MAX 512
#define HOT_MSG_NAMES 8

typedef struct {
  int count;
  char **lines; /* owned; free with diag_free */
  int oom;      /* an allocation failed: some lines were dropped */
} hot_diag;

/* Appends a formatted line (printf-style), cut to HOT_MSG_MAX - 1 bytes at a word. On allocation
 * failure sets d->oom and drops it. */
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

/* Writes into dst (n bytes) the first HOT_MSG_NAMES of `count` names, name(ctx, i) for i = 0, 1,
 * ..., separated by ", " and followed by ", ... and N more" when there are more ("none" when count
 * is 0); cut like fileio_msgf when dst is too small. Returns dst. */
const char *diag_names(char *dst, size_t n, int count, const char *(*name)(const void *ctx, int i),
                       const void *ctx);

/* fprintf of a message: each line of the formatted text cut to HOT_MSG_MAX - 1 bytes at a word
 * (fileio_msgf's rule), so an echoed argument or value can never make a line longer. Returns what
 * fprintf returns for the last line written (or -1). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int diag_fprintf(FILE *f, const char *fmt, ...);

/* Frees every line; *d becomes empty and reusable. NULL-safe. */
void diag_free(hot_diag *d);

#endif

/* buf.h — a growable text buffer for emission (always NUL-terminated). */
#ifndef HOT_BUF_H
#define HOT_BUF_H
#include <stddef.h>

typedef struct {
  char *data;  /* owned; NULL until the first append */
  size_t len;  /* bytes, excluding the NUL */
  size_t cap;
  int failed;  /* an allocation failed: later appends are ignored, buf_ok() is 0 */
} hot_buf;

/* Appends n bytes of s. */
void buf_add(hot_buf *b, const char *s, size_t n);
/* Appends a NUL-terminated string. */
void buf_puts(hot_buf *b, const char *s);
/* Appends printf-style formatted text. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void buf_printf(hot_buf *b, const char *fmt, ...);
/* 1 when every append succeeded. */
int buf_ok(const hot_buf *b);
/* Frees the data; *b becomes empty. NULL-safe. */
void buf_free(hot_buf *b);
/* Hands the data to the caller (who frees it with free()); *b becomes empty. Never NULL unless
 * an allocation failed. */
char *buf_take(hot_buf *b);

#endif

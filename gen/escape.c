/* escape.c — one escaping function per output format (escape.h). */
#include "escape.h"

#include <string.h>

int esc_utf8_len(const unsigned char *p) {
  const unsigned c = p[0];
  if (c < 0x80) return 1;
  int n;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  for (int i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0; /* also the NUL at the end */
    cp = (cp << 6) | (p[i] & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

void esc_json(hot_buf *b, const char *s) {
  if (!s) {
    buf_puts(b, "null");
    return;
  }
  buf_puts(b, "\"");
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    const unsigned char c = *p;
    int k = esc_utf8_len(p);
    if (c == '"' || c == '\\') buf_printf(b, "\\%c", c);
    else if (c == '\n') buf_puts(b, "\\n");
    else if (c == '\t') buf_puts(b, "\\t");
    else if (c == '\r') buf_puts(b, "\\r");
    else if (c < 0x20 || c == 0x7f) buf_printf(b, "\\u%04x", c);
    else if (k == 0) buf_puts(b, "\\ufffd");
    else buf_add(b, (const char *)p, (size_t)k);
    p += k ? k : 1;
  }
  buf_puts(b, "\"");
}

void esc_xml(hot_buf *b, const char *s) {
  if (!s) return;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    const unsigned char c = *p;
    int k = esc_utf8_len(p);
    if (c == '&') buf_puts(b, "&amp;");
    else if (c == '<') buf_puts(b, "&lt;");
    else if (c == '>') buf_puts(b, "&gt;");
    else if (c == '"') buf_puts(b, "&quot;");
    else if (c == '\'') buf_puts(b, "&apos;");
    else if (c == '\t' || c == '\n') buf_printf(b, "&#%d;", c);
    else if (c < 0x20 || c == 0x7f || k == 0) buf_puts(b, "?"); /* XML 1.0 cannot hold it */
    else buf_add(b, (const char *)p, (size_t)k);
    p += k ? k : 1;
  }
}

void esc_sql(hot_buf *b, const char *s) {
  if (!s) {
    buf_puts(b, "NULL");
    return;
  }
  const unsigned char *p = (const unsigned char *)s;
  int open = 0, parts = 0; /* inside a '...' literal; pieces joined so far */
  buf_puts(b, "(");
  while (*p) {
    int k = esc_utf8_len(p);
    if (k > 0 && *p >= 0x20 && *p != 0x7f) {
      if (!open) buf_puts(b, parts++ ? "||'" : "'"), open = 1;
      if (*p == '\'') buf_puts(b, "''");
      else buf_add(b, (const char *)p, (size_t)k);
      p += k;
      continue;
    }
    if (open) buf_puts(b, "'"), open = 0;
    if (parts++) buf_puts(b, "||");
    /* control characters and bytes that are not UTF-8: their bytes, as text */
    buf_puts(b, "CAST(X'");
    for (; *p && !(esc_utf8_len(p) > 0 && *p >= 0x20 && *p != 0x7f); ++p) buf_printf(b, "%02X", *p);
    buf_puts(b, "' AS TEXT)");
  }
  if (open) buf_puts(b, "'");
  if (!parts) buf_puts(b, "''");
  buf_puts(b, ")");
}

void esc_text(hot_buf *b, const char *s) {
  if (!s) return;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    const unsigned char c = *p;
    int k = esc_utf8_len(p);
    if (c == '\\') buf_puts(b, "\\\\");
    else if (c == '\t') buf_puts(b, "\\t");
    else if (c == '\n') buf_puts(b, "\\n");
    else if (c == '\r') buf_puts(b, "\\r");
    else if (c < 0x20 || c == 0x7f || k == 0) buf_printf(b, "\\x%02X", c);
    else buf_add(b, (const char *)p, (size_t)k);
    p += k ? k : 1;
  }
}

int esc_fputs(FILE *f, void (*esc)(hot_buf *, const char *), const char *s) {
  hot_buf b = {0};
  esc(&b, s);
  int ok = buf_ok(&b) && (b.len == 0 || fwrite(b.data, 1, b.len, f) == b.len);
  buf_free(&b);
  return ok ? 0 : -1;
}

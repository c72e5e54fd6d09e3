/* escape.h — one escaping function per output format hot writes (docs/reliability.md, "Output
 * a database cannot forge"). Every text that comes from a user's file (a spec's names, a tuning
 * database's columns, a path) goes through the function of the format it is written in:
 *   JSON   esc_json   a string literal: '"' and '\' escaped, control characters as \n, \t or
 *                     \u00XX, valid UTF-8 kept, every byte of an invalid sequence as \ufffd
 *   XML    esc_xml    text or attribute value: & < > " ' as entities, valid UTF-8 kept, tab and
 *                     newline as character references, other control characters and invalid
 *                     bytes as '?' (XML 1.0 cannot hold them)
 *   SQL    esc_sql    a string literal: quotes doubled; control characters and invalid UTF-8
 *                     written as CAST(X'..' AS TEXT) so the text reads back byte for byte
 *   tables esc_text   one cell of a tab-separated or aligned table: \t \n \r \\ as two-character
 *                     escapes, other control characters and invalid bytes as \xHH, so a value
 *                     never adds a column or a line
 * Each appends to a hot_buf (gen/buf.h); esc_fputs writes through one of them to a stream.
 */
#ifndef HOT_ESCAPE_H
#define HOT_ESCAPE_H

#include <stdio.h>

#include "buf.h"

/* Appends "<s escaped>" (with the quotes). s NULL: null. */
void esc_json(hot_buf *b, const char *s);
/* Appends s escaped for XML text or a quoted attribute value (no quotes added). */
void esc_xml(hot_buf *b, const char *s);
/* Appends s as one SQL expression of type TEXT: '...' (quotes doubled), with ||char(N)|| for a
 * control character and ||CAST(X'..' AS TEXT)|| for bytes that are not valid UTF-8. */
void esc_sql(hot_buf *b, const char *s);
/* Appends s as one table cell (no quotes). */
void esc_text(hot_buf *b, const char *s);

/* Writes esc(s) to f. Returns 0, or -1 when out of memory or the write failed. */
int esc_fputs(FILE *f, void (*esc)(hot_buf *, const char *), const char *s);

/* The length of the valid UTF-8 sequence (1..4 bytes) that starts at p, or 0 when the bytes at p
 * are not one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, a
 * sequence cut by the end of the string). p[0] must not be NUL. */
int esc_utf8_len(const unsigned char *p);

#endif

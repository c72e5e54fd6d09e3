/* spec_lex.c — where a table field of a spec is written. Lua does not keep the line of a table
 * field, so the DSL asks for it (spec_field_line): a small tokenizer over the spec's text
 * (strings, long brackets and comments skipped) finds `kind {` (or `kind ({`) on the
 * constructor's line, then the field `key =` at the table's own level, then the next key inside
 * that field's table, and so on. Anything unexpected gives up (the constructor's line is used). */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "spec_internal.h"

enum { TK_END, TK_NAME, TK_OTHER };

typedef struct {
  const char *p, *end;
  int line;
  int tok;                  /* TK_* or a punctuation byte */
  const char *name;         /* TK_NAME: its text */
  size_t name_len;
  int tok_line;
} lexer;

/* Level of a long bracket "[==[" starting at p (its '=' count), or -1. */
static int long_bracket(const char *p, const char *end) {
  if (p >= end || *p != '[') return -1;
  int level = 0;
  ++p;
  while (p < end && *p == '=') ++p, ++level;
  return p < end && *p == '[' ? level : -1;
}

static void skip_long(lexer *x, int level) {
  x->p += level + 2;
  while (x->p < x->end) {
    if (*x->p == '\n') ++x->line;
    if (*x->p == ']') {
      const char *q = x->p + 1;
      int l = 0;
      while (q < x->end && *q == '=') ++q, ++l;
      if (l == level && q < x->end && *q == ']') {
        x->p = q + 1;
        return;
      }
    }
    ++x->p;
  }
}

/* Skips blanks and comments (line and long ones), counting lines. */
static void skip_blanks(lexer *x) {
  for (;;) {
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\r' || *x->p == '\n')) {
      if (*x->p == '\n') ++x->line;
      ++x->p;
    }
    if (!(x->p + 1 < x->end && x->p[0] == '-' && x->p[1] == '-')) return;
    x->p += 2;
    int level = long_bracket(x->p, x->end);
    if (level >= 0) skip_long(x, level);
    else
      while (x->p < x->end && *x->p != '\n') ++x->p;
  }
}

static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_alnum(char c) { return is_alpha(c) || (c >= '0' && c <= '9'); }

/* A quoted string starting at x->p (its quote q): skipped, escapes included. */
static void skip_string(lexer *x, char q) {
  ++x->p;
  while (x->p < x->end && *x->p != q && *x->p != '\n') {
    if (*x->p == '\\' && x->p + 1 < x->end) {
      if (x->p[1] == '\n') ++x->line;
      ++x->p;
    }
    ++x->p;
  }
  if (x->p < x->end) ++x->p;
}

static void next_token(lexer *x) {
  skip_blanks(x);
  x->tok_line = x->line;
  if (x->p >= x->end) {
    x->tok = TK_END;
    return;
  }
  char c = *x->p;
  if (is_alpha(c)) {
    x->name = x->p;
    while (x->p < x->end && is_alnum(*x->p)) ++x->p;
    x->name_len = (size_t)(x->p - x->name);
    x->tok = TK_NAME;
    return;
  }
  x->tok = TK_OTHER;
  if (c == '"' || c == '\'') {
    skip_string(x, c);
    return;
  }
  int level = long_bracket(x->p, x->end);
  if (level >= 0) {
    skip_long(x, level);
    return;
  }
  ++x->p;
  if (c == '=' && x->p < x->end && *x->p == '=') { /* == */
    ++x->p;
    return;
  }
  x->tok = (unsigned char)c;
}

static int is_name(const lexer *x, const char *s) {
  return x->tok == TK_NAME && strlen(s) == x->name_len && memcmp(x->name, s, x->name_len) == 0;
}

/* Inside a table (just after its '{'): finds `key =` at its level. Returns its line (the lexer
 * just after '='), or 0. */
static int find_key(lexer *x, const char *key) {
  int depth = 1;
  for (next_token(x); x->tok != TK_END; next_token(x)) {
    if (x->tok == '{' || x->tok == '(' || x->tok == '[') ++depth;
    else if (x->tok == '}' || x->tok == ')' || x->tok == ']') {
      if (--depth == 0) return 0;
    } else if (depth == 1 && is_name(x, key)) {
      int line = x->tok_line;
      next_token(x);
      if (x->tok == '=') return line;
      if (x->tok == '{' || x->tok == '(' || x->tok == '[') ++depth;
    }
  }
  return 0;
}

/* spec_field_line (spec_internal.h). */
int spec_lex_field_line(lua_State *L) {
  sandbox *sb = sandbox_of(L);
  lua_Integer start = luaL_checkinteger(L, 1);
  const char *kind = luaL_checkstring(L, 2);
  int nkeys = lua_gettop(L) - 2;
  if (!sb->text || start < 1 || nkeys < 1 || ++sb->field_lookups > 256) return 0;
  lexer x = {sb->text, sb->text + sb->text_len, 1, TK_END, NULL, 0, 1};
  while (x.line < start && x.p < x.end) { /* to the start of the constructor's line */
    const char *nl = memchr(x.p, '\n', (size_t)(x.end - x.p));
    if (!nl) return 0;
    x.p = nl + 1;
    ++x.line;
  }
  if (x.end - x.p > (1 << 20)) x.end = x.p + (1 << 20); /* a field is never that far */
  /* `kind {` or `kind ({` on that line. */
  int found = 0;
  for (next_token(&x); x.tok != TK_END && x.tok_line == start && !found; next_token(&x)) {
    if (!is_name(&x, kind)) continue;
    next_token(&x);
    if (x.tok == '(') next_token(&x);
    found = x.tok == '{';
    if (found) break;
  }
  if (!found) return 0;
  int line = 0;
  for (int k = 0; k < nkeys; ++k) {
    const char *key = lua_tostring(L, 3 + k);
    if (!key || !(line = find_key(&x, key))) return 0;
    if (k + 1 < nkeys) { /* the field's value must be a table constructor: find its '{' */
      next_token(&x);
      while (x.tok == TK_NAME || x.tok == '.' || x.tok == '(') next_token(&x);
      if (x.tok != '{') return 0;
    }
  }
  lua_pushinteger(L, line);
  return 1;
}


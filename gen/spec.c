/* spec.c — the Lua side of hot: load a spec in a sandbox, validate it with the DSL (lua/hot/),
 * copy the result into plain C structs. The only file of the project that touches lua_State. */
#define _POSIX_C_SOURCE 200809L
#include "spec.h"
#include "fields.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "embed.h"

/* ---- bounded state ----------------------------------------------------------------------- */

typedef struct {
  size_t used, limit;
  int refused;              /* the memory limit was hit: every later growth fails too */
  int host_oom;             /* the host refused memory (realloc failed) while under the limit */
  long long steps, max_steps;
  double deadline;          /* CLOCK_MONOTONIC seconds */
  int tripped;              /* the instruction/time limit was hit */
  const char *spec_source;  /* the spec chunk's source name (shared by all its functions) */
  const char *spec_file;    /* path as given, for messages */
  const char *text;         /* the spec's source (for spec_field_line) */
  size_t text_len;
  int field_lookups;        /* spec_field_line calls so far (bounded) */
  char spec_short[LUA_IDSIZE]; /* Lua's short_src of the spec chunk (how Lua's messages name it) */
  int last_line;            /* the spec line that ran last (line hook) */
} sandbox;

#define HOOK_EVERY 1000     /* VM instructions between two hook calls */

/* The allocation-failure hook of spec.h (tests only). */
static _Atomic long long g_fail_after = -1, g_alloc_count = 0;

void spec_test_fail_allocs_after(long long n) { g_fail_after = n; }
long long spec_test_alloc_count(void) { return g_alloc_count; }

/* Counts an allocation; 1 when the test hook says it must fail. */
static int injected_failure(void) {
  ++g_alloc_count;
  if (g_fail_after < 0) return 0;
  if (g_fail_after == 0) return 1;
  --g_fail_after;
  return 0;
}

/* malloc for the loader's C copies: fails like the host when the test hook says so. */
static void *spec_malloc(size_t n) { return injected_failure() ? NULL : malloc(n); }

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *bounded_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  sandbox *sb = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    sb->used -= old;
    free(ptr);
    return NULL;
  }
  if (nsize > old && (sb->refused || nsize - old > sb->limit - sb->used)) {
    sb->refused = 1;
    return NULL;
  }
  void *p = injected_failure() ? NULL : realloc(ptr, nsize);
  if (p) sb->used = sb->used - old + nsize;
  else sb->host_oom = 1;
  return p;
}

static int is_spec_source(const sandbox *sb, const char *source) {
  return sb->spec_source && source == sb->spec_source;
}

static void limit_hook(lua_State *L, lua_Debug *ar) {
  sandbox *sb;
  lua_getallocf(L, (void **)&sb);
  if (ar->event == LUA_HOOKLINE) { /* remember the spec's current line (any function of the spec) */
    if (sb->spec_source && lua_getinfo(L, "S", ar) && is_spec_source(sb, ar->source))
      sb->last_line = ar->currentline;
    return;
  }
  sb->steps += HOOK_EVERY;
  if (sb->tripped || sb->steps > sb->max_steps || now_seconds() > sb->deadline) {
    sb->tripped = 1;
    /* The message handler puts the spec's file:line in front. */
    lua_pushfstring(L, "spec exceeded its %s limit (an endless loop?)",
                    sb->steps > sb->max_steps ? "instruction" : "time");
    lua_error(L);
  }
}

/* Length of a "<short_src>:<digits>:" prefix of msg naming the spec chunk (0 if none); its line
 * in *line. */
static size_t spec_location_prefix(const sandbox *sb, const char *msg, int *line) {
  size_t n = strlen(sb->spec_short);
  if (!n || strncmp(msg, sb->spec_short, n) != 0 || msg[n] != ':') return 0;
  const char *p = msg + n + 1;
  long v = 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9' && digits < 9) v = v * 10 + (*p++ - '0'), ++digits;
  if (!digits || *p != ':') return 0;
  *line = (int)v;
  ++p;
  while (*p == ' ') ++p;
  return (size_t)(p - msg);
}

/* The message handler of every protected call: any error value becomes one string that starts
 * with the spec's "file:line: " — the line of the spec the error came from (its innermost frame on
 * the stack, else the line that ran last). Errors of the DSL keep their own location after it. */
static int msg_handler(lua_State *L) {
  sandbox *sb;
  lua_getallocf(L, (void **)&sb);
  const char *msg = lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER
                        ? lua_tostring(L, 1)
                        : lua_pushfstring(L, "error object is a %s value", luaL_typename(L, 1));
  if (!sb->spec_file) {
    lua_pushstring(L, msg);
    return 1;
  }
  int line = -1;
  lua_Debug ar;
  for (int level = 0; lua_getstack(L, level, &ar); ++level) {
    if (lua_getinfo(L, "Sl", &ar) && is_spec_source(sb, ar.source)) {
      line = ar.currentline;
      break;
    }
  }
  if (line <= 0) line = sb->last_line > 0 ? sb->last_line : 1;
  size_t skip = spec_location_prefix(sb, msg, &line);
  lua_pushfstring(L, "%s:%d: %s", sb->spec_file, line, msg + skip);
  return 1;
}


/* ---- where a field is written --------------------------------------------------------------- */
/* Lua does not keep the line of a table field, so the DSL asks for it: a small tokenizer over the
 * spec's text (strings, long brackets and comments skipped) finds `kind {` (or `kind ({`) on the
 * constructor's line, then the field `key =` at the table's own level, then the next key inside
 * that field's table, and so on. Anything unexpected gives up (the constructor's line is used). */

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

static void next_token(lexer *x) {
  for (;;) {
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\r' || *x->p == '\n')) {
      if (*x->p == '\n') ++x->line;
      ++x->p;
    }
    if (x->p + 1 < x->end && x->p[0] == '-' && x->p[1] == '-') {
      x->p += 2;
      int level = long_bracket(x->p, x->end);
      if (level >= 0) skip_long(x, level);
      else
        while (x->p < x->end && *x->p != '\n') ++x->p;
      continue;
    }
    break;
  }
  x->tok_line = x->line;
  if (x->p >= x->end) {
    x->tok = TK_END;
    return;
  }
  char c = *x->p;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
    x->name = x->p;
    while (x->p < x->end && ((*x->p >= 'a' && *x->p <= 'z') || (*x->p >= 'A' && *x->p <= 'Z') ||
                             (*x->p >= '0' && *x->p <= '9') || *x->p == '_'))
      ++x->p;
    x->name_len = (size_t)(x->p - x->name);
    x->tok = TK_NAME;
    return;
  }
  if (c == '"' || c == '\'') {
    ++x->p;
    while (x->p < x->end && *x->p != c && *x->p != '\n') {
      if (*x->p == '\\' && x->p + 1 < x->end) {
        if (x->p[1] == '\n') ++x->line;
        ++x->p;
      }
      ++x->p;
    }
    if (x->p < x->end) ++x->p;
    x->tok = TK_OTHER;
    return;
  }
  int level = long_bracket(x->p, x->end);
  if (level >= 0) {
    skip_long(x, level);
    x->tok = TK_OTHER;
    return;
  }
  ++x->p;
  if (c == '=' && x->p < x->end && *x->p == '=') { /* == */
    ++x->p;
    x->tok = TK_OTHER;
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

/* spec_field_line(line, kind, key...) for the DSL: the line of the field, or nil. */
static int l_field_line(lua_State *L) {
  sandbox *sb;
  lua_getallocf(L, (void **)&sb);
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

/* ---- environment --------------------------------------------------------------------------- */

/* spec_line() for the DSL: the spec file and the line that ran last. */
static int l_spec_line(lua_State *L) {
  sandbox *sb;
  lua_getallocf(L, (void **)&sb);
  lua_pushstring(L, sb->spec_file ? sb->spec_file : "?");
  lua_pushinteger(L, sb->last_line);
  return 2;
}

static int l_readonly(lua_State *L) { return luaL_error(L, "the hot module is read-only"); }

/* __index of the spec's view of the module: public names only (no "_" internals). */
static int l_public_index(lua_State *L) {
  const char *k = lua_tostring(L, 2);
  if (!k || k[0] == '_') return 0;
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

/* require(name) for the DSL modules, served from the embedded lua/ files. The module table is
 * cached in the registry. Modules run in the DSL environment (upvalue 1). Specs (upvalue 2 true)
 * get only "hot", as a read-only view without its internals. */
static int l_require(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *path = NULL;
  int for_spec = lua_toboolean(L, lua_upvalueindex(2));
  if (strcmp(name, "hot") == 0) path = "lua/hot/init.lua";
  else if (strcmp(name, "hot.schema") == 0 && !for_spec) path = "lua/hot/schema.lua";
  else return luaL_error(L, "module '%s' not found (specs may only require \"hot\")", name);
  if (for_spec) {
    lua_getfield(L, LUA_REGISTRYINDEX, "hot.public");
    if (!lua_isnil(L, -1)) return 1;
    lua_pop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushboolean(L, 0);
    lua_pushcclosure(L, l_require, 2);
    lua_pushstring(L, "hot");
    lua_call(L, 1, 1); /* the module itself */
    lua_newtable(L);   /* the view */
    lua_newtable(L);   /* its metatable */
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, l_public_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_readonly);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "hot.public");
    return 1;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.loaded");
  if (lua_getfield(L, -1, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  const hot_embedded_file *f = embed_find(path);
  if (!f) return luaL_error(L, "internal: %s is not embedded", path);
  char chunk[64];
  snprintf(chunk, sizeof chunk, "=%s", path);
  if (luaL_loadbufferx(L, f->data, f->size, chunk, "t") != LUA_OK) return lua_error(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_setupvalue(L, -2, 1); /* _ENV = the DSL environment */
  lua_call(L, 0, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  return 1;
}

/* Copies the fields of the library table global `lib` into a fresh table, except `skip`. */
static void push_lib_copy(lua_State *L, const char *lib, const char *const *skip) {
  lua_newtable(L);
  lua_getglobal(L, lib);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    int drop = 0;
    for (const char *const *s = skip; s && *s; ++s)
      if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), *s) == 0) drop = 1;
    if (drop) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_settable(L, -5);
  }
  lua_pop(L, 1);
}

static const char *const k_base_safe[] = {"assert", "error", "ipairs", "next", "pairs", "rawequal",
                                          "rawget", "rawlen", "select", "tonumber", "tostring",
                                          "type", NULL};
/* Pattern matching can backtrack for a long time inside one C call, beyond the hook's reach. */
static const char *const k_string_skip[] = {"dump", "find", "match", "gmatch", "gsub", NULL};

static int l_commit(lua_State *L);

/* Builds the two environments: the DSL's (registry "hot.dslenv") and the spec's (returned on the
 * stack). */
static void build_envs(lua_State *L) {
  luaL_requiref(L, "_G", luaopen_base, 1);
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
  luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
  luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
  luaL_requiref(L, LUA_DBLIBNAME, luaopen_debug, 1);
  lua_pop(L, 5);
  /* No bytecode can be produced anywhere (the string metatable reaches the real string table). */
  lua_getglobal(L, LUA_STRLIBNAME);
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);

  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.loaded");

  /* DSL environment: safe base functions, the real string/table/math, debug.getinfo. */
  lua_newtable(L);
  for (const char *const *n = k_base_safe; *n; ++n) {
    lua_getglobal(L, *n);
    lua_setfield(L, -2, *n);
  }
  for (const char *const *lib = (const char *const[]){"string", "table", "math", NULL}; *lib; ++lib) {
    lua_getglobal(L, *lib);
    lua_setfield(L, -2, *lib);
  }
  lua_newtable(L);
  lua_getglobal(L, LUA_DBLIBNAME);
  lua_getfield(L, -1, "getinfo");
  lua_setfield(L, -3, "getinfo");
  lua_pop(L, 1);
  lua_setfield(L, -2, "debug");
  lua_getglobal(L, "setmetatable"); /* the DSL freezes validated models */
  lua_setfield(L, -2, "setmetatable");
  lua_pushcfunction(L, l_spec_line);
  lua_setfield(L, -2, "spec_line");
  lua_pushcfunction(L, l_commit);
  lua_setfield(L, -2, "spec_commit");
  lua_pushcfunction(L, l_field_line);
  lua_setfield(L, -2, "spec_field_line");
  lua_pushvalue(L, -1);
  lua_pushboolean(L, 0);
  lua_pushcclosure(L, l_require, 2);
  lua_setfield(L, -2, "require");
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.dslenv");

  /* Spec environment: safe base functions, copies of string/table/math, require "hot". */
  lua_newtable(L);
  for (const char *const *n = k_base_safe; *n; ++n) {
    lua_getglobal(L, *n);
    lua_setfield(L, -2, *n);
  }
  push_lib_copy(L, "string", k_string_skip);
  /* Method calls on strings ("x"):find(...) go through the string metatable: point it at the
   * restricted copy too (no backtracking pattern search, no dump). */
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) {
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_setfield(L, -2, "string");
  push_lib_copy(L, "table", NULL);
  lua_setfield(L, -2, "table");
  push_lib_copy(L, "math", NULL);
  lua_setfield(L, -2, "math");
  lua_pushvalue(L, -2);
  lua_pushboolean(L, 1);
  lua_pushcclosure(L, l_require, 2);
  lua_setfield(L, -2, "require");
  lua_remove(L, -2); /* the DSL env stays in the registry */

  /* Nothing else reachable through globals. */
  lua_pushglobaltable(L);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, -4);
  }
  lua_pop(L, 1);
}


/* ---- the C copy of a validated model ------------------------------------------------------ */
/* hot.model (lua/hot/init.lua) calls spec_commit(m) with the normalized model it built (plain
 * tables of the DSL, no metatables, not reachable by the spec), before the spec runs again. The
 * copy lives in a userdata (so the spec's memory limit bounds it and the GC frees it); the loader
 * uses only that copy, never the Lua tables, once the spec has returned. */

enum { LAYER_OK = 1, LAYER_HAS_RANK = 2, LAYER_HAS_KEEP = 4 };

typedef struct {
  hot_model m;              /* layers and sweep point into this userdata */
  int model_ok;             /* the model's own fields validated without error */
  int line, sweep_line;     /* hot.model's and hot.sweep's lines */
  unsigned char *flags;     /* per layer: LAYER_* */
  const char *internal;     /* a value the DSL should have refused (a DSL bug), or NULL */
} spec_copy;

/* Pushes t[k] without metamethods; returns its type. */
static int raw_field(lua_State *L, int t, const char *k) {
  t = lua_absindex(L, t);
  lua_pushstring(L, k);
  return lua_rawget(L, t);
}

static int field_int(lua_State *L, int t, const char *k, int64_t *out) {
  raw_field(L, t, k);
  int isnum = 0;
  lua_Integer v = lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 1);
  if (!isnum) return 0;
  *out = (int64_t)v;
  return 1;
}

static int field_intv(lua_State *L, int t, const char *k, int *out, spec_copy *c) {
  int64_t v;
  if (!field_int(L, t, k, &v)) return 0;
  if (v < INT_MIN || v > INT_MAX) {
    c->internal = k;
    return 0;
  }
  *out = (int)v;
  return 1;
}

static void field_bool(lua_State *L, int t, const char *k, int *out) {
  if (raw_field(L, t, k) == LUA_TBOOLEAN) *out = lua_toboolean(L, -1);
  lua_pop(L, 1);
}

/* The index of the string field k among names, or -1 when absent. */
static int field_enum(lua_State *L, int t, const char *k, const char *const *names) {
  int r = -1;
  if (raw_field(L, t, k) == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    for (int i = 0; names[i]; ++i)
      if (strcmp(s, names[i]) == 0) r = i;
  }
  lua_pop(L, 1);
  return r;
}

/* A name field (model or layer): must follow spec_name_valid, else the copy is marked. */
static void field_name(lua_State *L, int t, const char *k, char *dst, size_t n, spec_copy *c) {
  if (raw_field(L, t, k) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    if (len < n && strlen(s) == len && spec_name_valid(s)) memcpy(dst, s, len + 1);
    else c->internal = "name";
  }
  lua_pop(L, 1);
}

static const char *const k_rules[] = {"absmax", "sawb", NULL};
static const char *const k_dtypes[] = {"f32", "bf16", "f16", NULL};
static const char *const k_recipes[] = {"hot", "paper", "paper_code", NULL};

static void read_rule(lua_State *L, int t, const char *k, hot_rule *out) {
  int v = field_enum(L, t, k, k_rules);
  if (v >= 0) *out = (hot_rule)v;
}

static void read_round(lua_State *L, int t, hot_round *out) {
  int v = field_enum(L, t, "round", (const char *const[]){"rtn", "sr", NULL});
  if (v >= 0) *out = (hot_round)v; /* same order as hot_round */
}

static void read_tile(lua_State *L, int t, const char *k, hot_tile *tile, spec_copy *c) {
  if (raw_field(L, t, k) == LUA_TTABLE) {
    int s = lua_gettop(L);
    field_intv(L, s, "tile_m", &tile->tile_m, c);
    field_intv(L, s, "tile_n", &tile->tile_n, c);
    field_intv(L, s, "tile_k", &tile->tile_k, c);
    field_intv(L, s, "warps_m", &tile->warps_m, c);
    field_intv(L, s, "warps_n", &tile->warps_n, c);
    field_intv(L, s, "stages", &tile->stages, c);
  }
  lua_pop(L, 1);
}

/* Layer table at index t -> spec (defaults of the recipe, then what the spec wrote); returns the
 * LAYER_HAS_* flags. */
static int read_layer(lua_State *L, int t, hot_recipe recipe, hot_layer_spec *s, spec_copy *c) {
  int flags = 0;
  plan_spec_defaults(s, recipe);
  field_name(L, t, "name", s->name, sizeof s->name, c);
  field_intv(L, t, "line", &s->line, c);
  field_int(L, t, "in_features", &s->in_features);
  field_int(L, t, "out_features", &s->out_features);
  field_int(L, t, "tokens", &s->tokens);
  field_bool(L, t, "bias", &s->bias);
  int dt = field_enum(L, t, "dtype", k_dtypes);
  if (dt >= 0) s->dtype = (hot_dtype)dt;
  if (raw_field(L, t, "hq") == LUA_TTABLE) {
    int h = lua_gettop(L);
    field_bool(L, h, "enabled", &s->hq.enabled);
    field_intv(L, h, "block", &s->hq.block, c);
    field_intv(L, h, "bits", &s->hq.g.bits, c);
    read_round(L, h, &s->hq.g.round);
    field_intv(L, h, "w_bits", &s->hq.w.bits, c);
    int g = field_enum(L, h, "scale",
                       (const char *const[]){"tensor", "token", "auto", "sample", NULL});
    if (g >= 0) s->hq.g.gran = (hot_gran)g; /* same order as hot_gran */
    read_rule(L, h, "w_scale", &s->hq.w.rule);
    field_bool(L, h, "pad", &s->hq.pad);
  }
  lua_pop(L, 1);
  if (raw_field(L, t, "hla") == LUA_TTABLE) {
    int h = lua_gettop(L);
    field_bool(L, h, "enabled", &s->hla.enabled);
    field_intv(L, h, "block", &s->hla.block, c);
    int sel = field_enum(L, h, "selection", (const char *const[]){"tri", "prefix", "full", NULL});
    if (sel >= 0) s->hla.selection = (hot_selection)sel;
    if (field_intv(L, h, "keep", &s->hla.keep, c)) flags |= LAYER_HAS_KEEP;
    if (field_intv(L, h, "rank", &s->hla.rank, c)) flags |= LAYER_HAS_RANK;
    int lay = field_enum(L, h, "layout", (const char *const[]){"sample", "flat", "auto", NULL});
    if (lay >= 0) s->hla.layout = (hot_layout)lay;
    field_bool(L, h, "pad", &s->hla.pad);
    int sc = field_enum(L, h, "scale", (const char *const[]){"tensor", "token", "auto", "sample", NULL});
    if (sc >= 0) s->hla.g.gran = s->hla.x.gran = (hot_gran)sc; /* same order as hot_gran */
    field_intv(L, h, "bits", &s->hla.g.bits, c);
    read_round(L, h, &s->hla.g.round);
    field_intv(L, h, "x_bits", &s->hla.x.bits, c);
    read_rule(L, h, "x_scale", &s->hla.x.rule);
  }
  lua_pop(L, 1);
  if (raw_field(L, t, "abc") == LUA_TTABLE) field_bool(L, lua_gettop(L), "enabled", &s->abc.enabled);
  lua_pop(L, 1);
  read_tile(L, t, "tile_gx", &s->tile_gx, c);
  read_tile(L, t, "tile_gw", &s->tile_gw, c);
  return flags;
}

/* rawlen of t[k] when it is a table, else 0. */
static lua_Integer field_len(lua_State *L, int t, const char *k) {
  lua_Integer n = raw_field(L, t, k) == LUA_TTABLE ? (lua_Integer)lua_rawlen(L, -1) : 0;
  lua_pop(L, 1);
  return n;
}

/* spec_commit(m) for the DSL: copies the normalized model into a new userdata and returns it. */
static int l_commit(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer nl = field_len(L, 1, "layers"), ns = field_len(L, 1, "sweep");
  size_t per_layer = sizeof(hot_layer_spec) + 1;
  if (nl < 0 || ns < 0 || nl > INT_MAX / 2 || ns > INT_MAX / 2 ||
      (size_t)nl > (SIZE_MAX / 2 - sizeof(spec_copy)) / per_layer ||
      (size_t)ns > (SIZE_MAX / 2) / sizeof(hot_sweep_axis))
    return luaL_error(L, "the model has too many layers");
  size_t size = sizeof(spec_copy) + (size_t)nl * sizeof(hot_layer_spec) +
                (size_t)ns * sizeof(hot_sweep_axis) + (size_t)nl;
  spec_copy *c = lua_newuserdatauv(L, size, 0);
  memset(c, 0, size);
  c->m.layers = nl ? (hot_layer_spec *)(void *)(c + 1) : NULL;
  c->m.sweep = ns ? (hot_sweep_axis *)(void *)((char *)(c + 1) + (size_t)nl * sizeof(hot_layer_spec)) : NULL;
  c->flags = (unsigned char *)(c + 1) + (size_t)nl * sizeof(hot_layer_spec) +
             (size_t)ns * sizeof(hot_sweep_axis);

  hot_model *out = &c->m;
  field_name(L, 1, "name", out->name, sizeof out->name, c);
  field_int(L, 1, "batch", &out->batch);
  field_int(L, 1, "tokens", &out->tokens);
  int rc = field_enum(L, 1, "recipe", k_recipes);
  out->recipe = rc >= 0 ? (hot_recipe)rc : HOT_RECIPE_HOT;
  int64_t seed = 0x243F6A8885A308D3LL; /* default Philox key: digits of pi */
  field_int(L, 1, "seed", &seed);
  out->seed = (uint64_t)seed;
  field_intv(L, 1, "line", &c->line, c);
  field_intv(L, 1, "sweep_line", &c->sweep_line, c);
  if (raw_field(L, 1, "model_ok") == LUA_TBOOLEAN) c->model_ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (raw_field(L, 1, "archs") == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n && out->n_archs < HOT_MAX_ARCHS; ++i) {
      hot_arch a;
      if (lua_rawgeti(L, -1, i) == LUA_TSTRING && plan_arch_parse(lua_tostring(L, -1), &a) == 0) {
        int dup = 0;
        for (int j = 0; j < out->n_archs; ++j) dup |= out->archs[j] == a;
        if (!dup) out->archs[out->n_archs++] = a;
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (out->n_archs == 0) out->archs[out->n_archs++] = HOT_ARCH_SM90;

  raw_field(L, 1, "layers");
  raw_field(L, 1, "layer_ok");
  int lt = lua_gettop(L) - 1, okt = lua_gettop(L);
  for (lua_Integer i = 1; i <= nl; ++i) {
    int flags = 0;
    if (lua_rawgeti(L, lt, i) == LUA_TTABLE)
      flags = read_layer(L, lua_gettop(L), out->recipe, &out->layers[out->n_layers], c);
    else
      c->internal = "layers";
    lua_pop(L, 1);
    if (lua_istable(L, okt) && lua_rawgeti(L, okt, i) == LUA_TBOOLEAN && lua_toboolean(L, -1))
      flags |= LAYER_OK;
    if (lua_istable(L, okt)) lua_pop(L, 1);
    c->flags[out->n_layers++] = (unsigned char)flags;
  }
  lua_pop(L, 2);

  raw_field(L, 1, "sweep");
  for (lua_Integer i = 1; i <= ns; ++i) {
    hot_sweep_axis *ax = &out->sweep[out->n_sweep++];
    if (lua_rawgeti(L, -1, i) == LUA_TTABLE) {
      int a = lua_gettop(L);
      if (raw_field(L, a, "field") == LUA_TSTRING) {
        size_t len;
        const char *f = lua_tolstring(L, -1, &len);
        if (len < sizeof ax->field && fields_find(f)) memcpy(ax->field, f, len + 1);
        else c->internal = "sweep"; /* the DSL and fields.c disagree on the sweepable fields */
      }
      lua_pop(L, 1);
      if (raw_field(L, a, "values") == LUA_TTABLE) {
        lua_Integer nv = (lua_Integer)lua_rawlen(L, -1);
        for (lua_Integer j = 1; j <= nv && ax->n < HOT_MAX_SWEEP; ++j) {
          size_t len = 0;
          const char *v = lua_rawgeti(L, -1, j) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
          if (v && len < sizeof ax->values[0]) memcpy(ax->values[ax->n++], v, len + 1);
          else c->internal = "sweep";
          lua_pop(L, 1);
        }
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 1;
}

/* ---- messages --------------------------------------------------------------------------- */

/* Appends text to diag as one line: control bytes become \ddd (a message never splits). */
static void add_line(hot_diag *diag, const char *text) {
  size_t n = strlen(text), k = 0;
  char *clean = spec_malloc(n * 4 + 1);
  if (!clean) {
    if (diag) diag->oom = 1;
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    unsigned char ch = (unsigned char)text[i];
    if (ch < 0x20 || ch == 0x7f) k += (size_t)snprintf(clean + k, 5, "\\%03u", ch);
    else clean[k++] = (char)ch;
  }
  clean[k] = '\0';
  diag_add(diag, "%s", clean);
  free(clean);
}

/* ---- after the spec: the checks that need the C defaults, and planning --------------------- */

/* Checks of the copy that need the recipe defaults: fields the chosen hla.selection ignores.
 * Returns the number of errors added; layers with one lose LAYER_OK. A value the DSL should have
 * refused (c->internal) is reported only when the DSL reported nothing (else it did already). */
static int check_copy(const spec_copy *c, const char *file, int dsl_errs, hot_diag *diag) {
  int errs = 0;
  if (c->internal && !dsl_errs) {
    diag_add(diag, "%s:%d: model: internal error: the DSL accepted an invalid %s", file, c->line,
             c->internal);
    ++errs;
  }
  for (int i = 0; i < c->m.n_layers; ++i) {
    const hot_layer_spec *s = &c->m.layers[i];
    const char *sel = plan_selection_name(s->hla.selection);
    if ((c->flags[i] & LAYER_HAS_RANK) && s->hla.selection != HOT_SEL_PREFIX) {
      diag_add(diag, "%s:%d: layer '%s': hla.rank is used only with hla.selection = \"prefix\" "
               "(selection is %s)", file, s->line, s->name, sel);
      c->flags[i] &= (unsigned char)~LAYER_OK;
      ++errs;
    }
    if ((c->flags[i] & LAYER_HAS_KEEP) && s->hla.selection != HOT_SEL_TRI) {
      diag_add(diag, "%s:%d: layer '%s': hla.keep is used only with hla.selection = \"tri\" "
               "(selection is %s)", file, s->line, s->name, sel);
      c->flags[i] &= (unsigned char)~LAYER_OK;
      ++errs;
    }
  }
  if (!errs && !dsl_errs && c->m.n_layers == 0) {
    diag_add(diag, "%s:%d: model: the model has no layers", file, c->line);
    ++errs;
  }
  return errs;
}

/* When a spec has errors, the layers without any are still planned for every target arch, so
 * their planner errors are reported in the same run. Messages as hot-gen prints them:
 * "file:line: layer 'x': <planner message> (planning for sm_80, sm_86)" (archs with the same
 * message merged). Returns -2 when memory ran out, else 0. */
static int plan_clean_layers(const spec_copy *c, const char *file, hot_diag *diag) {
  if (!c->model_ok) return 0; /* batch, tokens or the archs are unknown: nothing to plan with */
  hot_layer_plan *p = spec_malloc(sizeof *p);
  if (!p) return -2;
  for (int i = 0; i < c->m.n_layers; ++i) {
    if (!(c->flags[i] & LAYER_OK)) continue;
    const hot_layer_spec *s = &c->m.layers[i];
    char errs[HOT_MAX_ARCHS][256], archs[HOT_MAX_ARCHS][64];
    int n = 0;
    for (int a = 0; a < c->m.n_archs; ++a) {
      char err[256] = "";
      int64_t tokens = s->tokens ? s->tokens : c->m.tokens;
      if (plan_layer(s, c->m.batch, tokens, c->m.recipe, c->m.archs[a], i, p, err, sizeof err) == 0)
        continue;
      const char *an = plan_arch_caps(c->m.archs[a])->name;
      int k = 0;
      while (k < n && strcmp(errs[k], err) != 0) ++k;
      if (k == n) {
        snprintf(errs[n], sizeof errs[n], "%s", err);
        snprintf(archs[n++], sizeof archs[0], "%s", an);
      } else {
        size_t l = strlen(archs[k]);
        snprintf(archs[k] + l, sizeof archs[k] - l, ", %s", an);
      }
    }
    for (int k = 0; k < n; ++k)
      diag_add(diag, "%s:%d: layer '%s': %s (planning for %s)", file, s->line, s->name, errs[k],
               archs[k]);
  }
  free(p);
  return 0;
}

/* Copies c into *out (malloc'd arrays). Returns 0 or -2 (out of memory). */
static int copy_out(const spec_copy *c, const char *file, hot_model *out) {
  *out = c->m;
  out->layers = NULL;
  out->sweep = NULL;
  snprintf(out->file, sizeof out->file, "%s", file);
  if (c->m.n_layers) {
    out->layers = spec_malloc((size_t)c->m.n_layers * sizeof *out->layers);
    if (!out->layers) return -2;
    memcpy(out->layers, c->m.layers, (size_t)c->m.n_layers * sizeof *out->layers);
  }
  if (c->m.n_sweep) {
    out->sweep = spec_malloc((size_t)c->m.n_sweep * sizeof *out->sweep);
    if (!out->sweep) return -2;
    memcpy(out->sweep, c->m.sweep, (size_t)c->m.n_sweep * sizeof *out->sweep);
  }
  return 0;
}

/* ---- entry points ----------------------------------------------------------------------- */

spec_limits spec_default_limits(void) {
  spec_limits l = {64u << 20, 50000000LL, 5.0};
  return l;
}

/* The message of a failed protected call of the spec (status st, message on the stack top).
 * Returns SPEC_ERR_NOMEM when the host ran out of memory, else SPEC_ERR_SPEC. */
static int failed_call(lua_State *L, int st, const sandbox *sb, const char *file, hot_diag *diag) {
  if (sb->host_oom) {
    diag_add(diag, "%s: out of memory while loading the spec", file);
    return SPEC_ERR_NOMEM;
  }
  int line = sb->last_line > 0 ? sb->last_line : 1;
  if (st == LUA_ERRMEM || sb->refused) {
    diag_add(diag, "%s:%d: spec exceeded its memory limit of %zu MiB", file, line, sb->limit >> 20);
  } else if (st == LUA_ERRERR || !lua_isstring(L, -1)) {
    diag_add(diag, "%s:%d: error while handling an error (too deep a recursion?)", file, line);
  } else {
    add_line(diag, lua_tostring(L, -1));
  }
  return SPEC_ERR_SPEC;
}

/* Runs the spec chunk (already on the stack top, a function) and copies the model. */
static int run_spec(lua_State *L, sandbox *sb, const char *file, hot_model *out, hot_diag *diag) {
  /* stack: msgh, spec_env, chunk */
  lua_pushvalue(L, -2);
  lua_setupvalue(L, -2, 1); /* _ENV = spec env */
  lua_Debug ar;
  lua_pushvalue(L, -1);
  lua_getinfo(L, ">S", &ar);
  sb->spec_source = ar.source; /* kept alive by the chunk on the stack */
  /* The DSL needs to know which chunk is the spec, to name its lines. */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.dslenv");
  lua_getfield(L, -1, "require");
  lua_pushstring(L, "hot");
  int st = lua_pcall(L, 1, 1, 1);
  if (st != LUA_OK) {
    if (sb->host_oom) return failed_call(L, st, sb, file, diag);
    diag_add(diag, "%s:1: internal error loading the DSL: %s", file,
             lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
    return SPEC_ERR_SPEC;
  }
  lua_pushstring(L, ar.source);
  lua_setfield(L, -2, "_spec_source");
  /* The functions that read the verdict, kept where the spec cannot reach them. */
  lua_getfield(L, -1, "_errors");
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.errorsfn");
  lua_getfield(L, -1, "_validated");
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.validfn");
  lua_pop(L, 2);

  lua_sethook(L, limit_hook, LUA_MASKCOUNT | LUA_MASKLINE, HOOK_EVERY);
  st = lua_pcall(L, 0, 1, 1);
  lua_sethook(L, NULL, 0, 0);
  if (st != LUA_OK) return failed_call(L, st, sb, file, diag);
  int t = lua_gettop(L);
  /* The verdict: the C copy hot.model made for the returned view, and the DSL's diagnostics.
   * Nothing of the spec runs any more (the tables read are the DSL's own). */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.validfn");
  lua_pushvalue(L, t);
  st = lua_pcall(L, 1, 1, 1);
  if (st != LUA_OK) return failed_call(L, st, sb, file, diag);
  spec_copy *c = lua_touserdata(L, -1); /* kept alive at t + 1 */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.errorsfn");
  st = lua_pcall(L, 0, 1, 1);
  if (st != LUA_OK) return failed_call(L, st, sb, file, diag);
  int errs = 0;
  if (lua_istable(L, -1)) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      if (lua_rawgeti(L, -1, i) == LUA_TSTRING) add_line(diag, lua_tostring(L, -1));
      lua_pop(L, 1);
      ++errs;
    }
  }
  if (!c) {
    diag_add(diag, "%s:%d: the spec must return hot.model { ... } (got %s)", file,
             sb->last_line > 0 ? sb->last_line : 1,
             lua_type(L, t) == LUA_TTABLE ? "a table not made by hot.model" : luaL_typename(L, t));
    return SPEC_ERR_SPEC;
  }
  errs += check_copy(c, file, errs, diag);
  if (errs) {
    if (plan_clean_layers(c, file, diag) == 0) return SPEC_ERR_SPEC;
    diag_add(diag, "%s: out of memory while planning the layers without errors", file);
    return SPEC_ERR_NOMEM;
  }
  if (copy_out(c, file, out) != 0) {
    diag_add(diag, "%s: out of memory while copying the model", file);
    return SPEC_ERR_NOMEM;
  }
  return 0;
}

/* lua_load reader: the spec text one line at a time, so that a load error without a location
 * (C stack overflow in the parser) is placed at the line being read. */
typedef struct {
  const char *text;
  size_t len, pos;
  int line;                 /* line of the last piece handed out (1-based) */
} line_reader;

static const char *read_line(lua_State *L, void *ud, size_t *size) {
  (void)L;
  line_reader *r = ud;
  if (r->pos >= r->len) {
    *size = 0;
    return NULL;
  }
  const char *start = r->text + r->pos;
  const char *nl = memchr(start, '\n', r->len - r->pos);
  size_t n = nl ? (size_t)(nl - start) + 1 : r->len - r->pos;
  r->pos += n;
  r->line++;
  *size = n;
  return start;
}

typedef struct {
  sandbox *sb;
  const char *file, *text;
  size_t len;
  const char *chunk;        /* "@file" */
  hot_model *out;
  hot_diag *diag;
  int rc;                   /* the result */
} load_job;

/* The whole load as one protected function (argument: the load_job). */
static int l_load_main(lua_State *L) {
  load_job *j = lua_touserdata(L, 1);
  sandbox *sb = j->sb;
  lua_settop(L, 0);
  lua_pushcfunction(L, msg_handler); /* index 1 */
  luaL_checkstack(L, 40, "setup");
  build_envs(L);                     /* the spec env is index 2 */
  /* How Lua names the chunk in its own messages (long paths shortened with "..."). */
  lua_Debug ar;
  if (luaL_loadbufferx(L, "", 0, j->chunk, "t") != LUA_OK) return lua_error(L);
  lua_getinfo(L, ">S", &ar);
  snprintf(sb->spec_short, sizeof sb->spec_short, "%s", ar.short_src);
  sb->spec_file = j->file;
  sb->text = j->text;
  sb->text_len = j->len;
  line_reader rd = {j->text, j->len, 0, 0};
  int st = lua_load(L, read_line, &rd, j->chunk, "t");
  if (st == LUA_OK) {
    j->rc = run_spec(L, sb, j->file, j->out, j->diag);
  } else if (sb->host_oom || st == LUA_ERRMEM) {
    sb->last_line = rd.line;
    j->rc = failed_call(L, st, sb, j->file, j->diag);
  } else {
    const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "syntax error";
    int line = rd.line > 0 ? rd.line : 1;
    size_t skip = spec_location_prefix(sb, msg, &line);
    lua_pushfstring(L, "%s:%d: %s%s", j->file, line, msg + skip,
                    strcmp(msg + skip, "C stack overflow") == 0 ? " (nesting too deep)" : "");
    add_line(j->diag, lua_tostring(L, -1));
  }
  return 0;
}

static int load_common(const char *file, const char *text, size_t len, const spec_limits *lim,
                       hot_model *out, hot_diag *diag) {
  memset(out, 0, sizeof *out);
  spec_limits dl = spec_default_limits();
  if (!lim) lim = &dl;
  if (len > 0 && text[0] == LUA_SIGNATURE[0]) {
    diag_add(diag, "%s:1: precompiled (bytecode) specs are not accepted; give the Lua source", file);
    return SPEC_ERR_SPEC;
  }
  sandbox sb;
  memset(&sb, 0, sizeof sb);
  sb.limit = lim->memory_bytes;
  sb.max_steps = lim->instructions;
  sb.deadline = now_seconds() + lim->seconds;
  lua_State *L = lua_newstate(bounded_alloc, &sb);
  if (!L) {
    diag_add(diag, "%s: cannot create a Lua state (out of memory)", file);
    return SPEC_ERR_NOMEM;
  }
  char *chunk = spec_malloc(strlen(file) + 2);
  if (!chunk) {
    lua_close(L);
    diag_add(diag, "%s: out of memory while loading the spec", file);
    return SPEC_ERR_NOMEM;
  }
  chunk[0] = '@';
  memcpy(chunk + 1, file, strlen(file) + 1);
  load_job job = {&sb, file, text, len, chunk, out, diag, SPEC_ERR_SPEC};
  /* Everything runs in one protected call: any allocation failure is an error, never a panic. */
  lua_pushcfunction(L, l_load_main);
  lua_pushlightuserdata(L, &job);
  int st = lua_pcall(L, 1, 0, 0);
  if (st != LUA_OK) {
    if (sb.host_oom || sb.refused || st == LUA_ERRMEM) job.rc = failed_call(L, st, &sb, file, diag);
    else diag_add(diag, "%s:1: internal error: %s", file, lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
  }
  lua_close(L);
  free(chunk);
  if (job.rc != 0) spec_model_free(out);
  return job.rc;
}

int spec_load_string(const char *chunkname, const char *text, size_t len, const spec_limits *limits,
                     hot_model *out, hot_diag *diag) {
  if (!out || !text) {
    diag_add(diag, "spec_load_string: NULL argument");
    return SPEC_ERR_SPEC;
  }
  return load_common(chunkname ? chunkname : "spec", text, len, limits, out, diag);
}

int spec_load_file(const char *path, const spec_limits *limits, hot_model *out, hot_diag *diag) {
  if (!out || !path) {
    diag_add(diag, "spec_load_file: NULL argument");
    return SPEC_ERR_SPEC;
  }
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    diag_add(diag, "%s: cannot open: %s", path, strerror(errno));
    return SPEC_ERR_SPEC;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = spec_malloc(cap);
  int nomem = !buf;
  while (buf) {
    if (len == cap) {
      if (cap >= (16u << 20)) {
        fclose(f);
        free(buf);
        diag_add(diag, "%s: spec larger than 16 MiB", path);
        return SPEC_ERR_SPEC;
      }
      char *g = injected_failure() ? NULL : realloc(buf, cap * 2);
      if (!g) {
        nomem = 1;
        break;
      }
      buf = g;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (nomem) {
    free(buf);
    diag_add(diag, "%s: out of memory while reading the file", path);
    return SPEC_ERR_NOMEM;
  }
  if (bad) {
    free(buf);
    diag_add(diag, "%s: cannot read the file", path);
    return SPEC_ERR_SPEC;
  }
  int rc = load_common(path, buf, len, limits, out, diag);
  free(buf);
  return rc;
}

void spec_model_free(hot_model *m) {
  if (!m) return;
  free(m->layers);
  free(m->sweep);
  memset(m, 0, sizeof *m);
}

int spec_find_layer(const hot_model *m, const char *name) {
  if (!m || !name) return -1;
  for (int i = 0; i < m->n_layers; ++i)
    if (strcmp(m->layers[i].name, name) == 0) return i;
  return -1;
}

/* ---- names and paths -------------------------------------------------------------------- */

int spec_name_valid(const char *s) {
  if (!s || !*s) return 0;
  size_t n = 0;
  for (const char *p = s; *p; ++p, ++n) {
    unsigned char ch = (unsigned char)*p;
    int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    if (!(alnum || ch == '_' || (p != s && (ch == '.' || ch == '-')))) return 0;
  }
  return n < HOT_NAME_MAX;
}

int spec_path_join(char *out, size_t n, const char *dir, const char *component) {
  if (!out || !n) return -1;
  out[0] = '\0';
  if (!dir || !*dir || !component || !*component || strchr(component, '/') ||
      strcmp(component, ".") == 0 || strcmp(component, "..") == 0)
    return -1;
  for (const char *p = component; *p; ++p)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) return -1;
  size_t dl = strlen(dir);
  int r = snprintf(out, n, "%s%s%s", dir, dir[dl - 1] == '/' ? "" : "/", component);
  if (r < 0 || (size_t)r >= n) {
    out[0] = '\0';
    return -1;
  }
  return 0;
}

/* ---- help ------------------------------------------------------------------------------ */

static void set_int(lua_State *L, const char *k, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}
static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}
static void set_bool(lua_State *L, const char *k, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

/* The defaults table hot._help prints, built from plan_spec_defaults (one source of truth). */
static void push_defaults(lua_State *L) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  lua_newtable(L);
  lua_newtable(L);
  set_str(L, "recipe", "hot");
  set_str(L, "seed", "0x243F6A8885A308D3");
  lua_setfield(L, -2, "model");
  lua_newtable(L);
  set_str(L, "arch", "sm_90");
  lua_setfield(L, -2, "target");
  lua_newtable(L);
  set_bool(L, "bias", s.bias);
  set_str(L, "dtype", plan_dtype_name(s.dtype));
  set_str(L, "tokens", "model's");
  lua_setfield(L, -2, "linear");
  lua_newtable(L);
  set_bool(L, "enabled", s.hq.enabled);
  set_int(L, "block", s.hq.block);
  set_int(L, "bits", s.hq.g.bits);
  set_str(L, "round", plan_round_name(s.hq.g.round));
  set_int(L, "w_bits", s.hq.w.bits);
  set_str(L, "scale", s.hq.g.gran == HOT_GRAN_ROW ? "token" : plan_gran_name(s.hq.g.gran));
  set_str(L, "w_scale", plan_rule_name(s.hq.w.rule));
  set_bool(L, "pad", s.hq.pad);
  lua_setfield(L, -2, "hq");
  lua_newtable(L);
  set_bool(L, "enabled", s.hla.enabled);
  set_int(L, "block", s.hla.block);
  set_str(L, "selection", plan_selection_name(s.hla.selection));
  set_int(L, "keep", s.hla.keep);
  set_str(L, "rank", "-");
  set_str(L, "layout", plan_layout_name(s.hla.layout));
  set_bool(L, "pad", s.hla.pad);
  set_str(L, "scale", plan_gran_name(s.hla.g.gran));
  set_int(L, "bits", s.hla.g.bits);
  set_str(L, "round", plan_round_name(s.hla.g.round));
  set_int(L, "x_bits", s.hla.x.bits);
  set_str(L, "x_scale", plan_rule_name(s.hla.x.rule));
  lua_setfield(L, -2, "hla");
  lua_newtable(L);
  set_bool(L, "enabled", s.abc.enabled);
  lua_setfield(L, -2, "abc");
  lua_newtable(L);
  for (const char *const *k = (const char *const[]){"tile_m", "tile_n", "tile_k", "warps_m",
                                                    "warps_n", "stages", NULL};
       *k; ++k)
    set_str(L, *k, "auto");
  lua_setfield(L, -2, "tile");
  /* What each recipe changes against 'hot'. */
  lua_newtable(L);
  set_str(L, "hot", "hla.layout = auto, hla.scale = auto");
  set_str(L, "paper", "hla.layout = sample, hla.scale = tensor");
  set_str(L, "paper_code",
          "hq.pad = false, hq.w_scale = sawb, hla.block = 0 (derived), hla.pad = false, "
          "hla.layout = sample, hla.scale = sample, hla.bits = 4, hla.x_scale = sawb");
  lua_setfield(L, -2, "recipes");
}

/* The help text as one protected function (argument: where to store the malloc'd text). */
static int l_help_main(lua_State *L) {
  char **text = lua_touserdata(L, 1);
  lua_settop(L, 0);
  luaL_checkstack(L, 40, "help");
  build_envs(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.dslenv");
  lua_getfield(L, -1, "require");
  lua_pushstring(L, "hot");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "_help");
  push_defaults(L);
  lua_call(L, 1, 1);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  if (!s) return luaL_error(L, "hot._help returned no text");
  *text = spec_malloc(n + 1);
  if (!*text) return luaL_error(L, "out of memory");
  memcpy(*text, s, n + 1);
  return 0;
}

char *spec_help_text(hot_diag *diag) {
  spec_limits lim = spec_default_limits();
  sandbox sb;
  memset(&sb, 0, sizeof sb);
  sb.limit = lim.memory_bytes;
  sb.max_steps = lim.instructions;
  sb.deadline = now_seconds() + lim.seconds;
  lua_State *L = lua_newstate(bounded_alloc, &sb);
  if (!L) {
    diag_add(diag, "cannot create a Lua state (out of memory)");
    return NULL;
  }
  char *text = NULL;
  lua_pushcfunction(L, l_help_main);
  lua_pushlightuserdata(L, &text);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    diag_add(diag, "cannot build the spec help: %s",
             sb.host_oom || sb.refused ? "out of memory" : lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
    free(text);
    text = NULL;
  }
  lua_close(L);
  return text;
}

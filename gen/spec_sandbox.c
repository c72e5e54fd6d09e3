/* spec_sandbox.c — the bounded Lua state a spec runs in: an allocator with a memory limit (and
 * the tests' allocation-failure hook), the instruction and time limits, the message handler that
 * names the spec's file:line, and the two environments (the DSL's and the spec's). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "embed.h"
#include "num.h"
#include "spec_internal.h"

#define HOOK_EVERY 1000     /* VM instructions between two hook calls */


static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The Lua allocator: refuses growth beyond sb->limit. A refusal is not final: Lua then collects
 * all garbage and asks again (the limit bounds what a spec keeps, not what it has dropped); `refused`
 * tells whether the latest request was refused. */
static void *bounded_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  sandbox *sb = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    sb->used -= old;
    free(ptr);
    return NULL;
  }
  if (nsize > old && nsize - old > sb->limit - sb->used) {
    sb->refused = 1;
    return NULL;
  }
  void *p = spec_realloc(ptr, nsize);
  if (p) {
    sb->used = sb->used - old + nsize;
    sb->refused = 0;
  } else {
    sb->host_oom = 1;
  }
  return p;
}

static int is_spec_source(const sandbox *sb, const char *source) {
  return sb->spec_source && source == sb->spec_source;
}

static void limit_hook(lua_State *L, lua_Debug *ar) {
  sandbox *sb = sandbox_of(L);
  if (ar->event == LUA_HOOKLINE) { /* remember the spec's current line (any function of the spec) */
    if (sb->spec_source && lua_getinfo(L, "S", ar) && is_spec_source(sb, ar->source))
      sb->last_line = ar->currentline;
    return;
  }
  sb->steps += HOOK_EVERY;
  int out_of_steps = sb->steps > sb->max_steps;
  if (sb->tripped || out_of_steps || (sb->deadline > 0 && now_seconds() > sb->deadline)) {
    sb->tripped = 1;
    /* The message handler puts the spec's file:line in front. */
    lua_pushfstring(L, "spec exceeded its %s limit (an endless loop?)",
                    out_of_steps ? "instruction" : "time");
    lua_error(L);
  }
}

void sandbox_hook(lua_State *L, int on) {
  if (on) lua_sethook(L, limit_hook, LUA_MASKCOUNT | LUA_MASKLINE, HOOK_EVERY);
  else lua_sethook(L, NULL, 0, 0);
}


lua_State *sandbox_open(sandbox *sb, const spec_limits *lim) {
  spec_limits dl = spec_default_limits();
  if (!lim) lim = &dl;
  memset(sb, 0, sizeof *sb);
  sb->limit = sb->base_limit = lim->memory_bytes;
  sb->base_steps = sb->max_steps = lim->instructions;
  sb->deadline = lim->seconds > 0 ? now_seconds() + lim->seconds : 0;
  return lua_newstate(bounded_alloc, sb);
}

/* spec_quiet(on) for the DSL: while hot.model validates (no spec code runs then), the line hook is
 * off (the DSL's lines are not the spec's: tracking them only costs time); the instruction limit
 * still counts. */
static int l_spec_quiet(lua_State *L) {
  if (lua_gethook(L) != NULL)
    lua_sethook(L, limit_hook, LUA_MASKCOUNT | (lua_toboolean(L, 1) ? 0 : LUA_MASKLINE), HOOK_EVERY);
  return 0;
}

/* spec_layers(n) for the DSL: hot.model is validating a model of n distinct layer tables. The
 * instruction limit becomes the spec's own plus SPEC_STEPS_PER_LAYER per layer of the largest
 * model given to hot.model so far (never the sum: validating one model again and again gains
 * nothing, and the memory limit bounds how large one model can be); the memory limit grows by
 * SPEC_MEMORY_PER_LAYER per layer, up to SPEC_MEMORY_GROWTH times the first limit. */
static int l_spec_layers(lua_State *L) {
  sandbox *sb = sandbox_of(L);
  lua_Integer n = luaL_checkinteger(L, 1);
  const long long cap = (long long)1 << 40; /* no overflow below */
  if (n > sb->layers_seen) {
    sb->layers_seen = n < cap ? (long long)n : cap;
    if (sb->base_steps < cap * SPEC_STEPS_PER_LAYER)
      sb->max_steps = sb->base_steps + sb->layers_seen * SPEC_STEPS_PER_LAYER;
    size_t most = sb->base_limit < SIZE_MAX / SPEC_MEMORY_GROWTH ? sb->base_limit * SPEC_MEMORY_GROWTH
                                                                 : sb->base_limit;
    size_t want = (size_t)sb->layers_seen < (most - sb->base_limit) / SPEC_MEMORY_PER_LAYER
                      ? sb->base_limit + (size_t)sb->layers_seen * SPEC_MEMORY_PER_LAYER
                      : most;
    if (want > sb->limit && !sb->refused) sb->limit = want;
  }
  return 0;
}

/* spec_key(name, text) for the DSL: text parsed as HOT_SEED is (num.h) into an integer in
 * [0, 2^64 - 1], returned as the Lua integer with the same 64 bits (2^63 and above negative);
 * nil and num.h's one-line message ("name='text': expected an integer in [0, ...]") when it is
 * not one. */
static int l_spec_key(lua_State *L) {
  const char *name = luaL_checkstring(L, 1), *text = luaL_checkstring(L, 2);
  uint64_t v = 0;
  char err[200];
  if (num_parse_u64(name, text, 0, UINT64_MAX, &v, err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushinteger(L, v <= (uint64_t)LUA_MAXINTEGER ? (lua_Integer)v
                                                    : -(lua_Integer)(UINT64_MAX - v) - 1);
  return 1;
}

size_t sandbox_location_prefix(const sandbox *sb, const char *msg, int *line) {
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

/* The message handler (spec_internal.h): the line is the one of the spec the error came from (its
 * innermost frame on the stack, else the line that ran last). Errors of the DSL keep their own
 * location after it. */
int sandbox_msg_handler(lua_State *L) {
  sandbox *sb = sandbox_of(L);
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
  size_t skip = sandbox_location_prefix(sb, msg, &line);
  lua_pushfstring(L, "%s:%d: %s", sb->spec_file, line, msg + skip);
  return 1;
}


/* ---- environment --------------------------------------------------------------------------- */

/* spec_line() for the DSL: the spec file and the line that ran last. */
static int l_spec_line(lua_State *L) {
  sandbox *sb = sandbox_of(L);
  lua_pushstring(L, sb->spec_file ? sb->spec_file : "?");
  lua_pushinteger(L, sb->last_line);
  return 2;
}

static int l_readonly(lua_State *L) { return luaL_error(L, "the hot module is read-only"); }

/* __index of the spec's view of the module: public names only (no "_" internals); any other
 * name is an error naming it, with the closest public name (the DSL's hot._unknown). */
static int l_public_index(lua_State *L) {
  if (lua_type(L, 2) == LUA_TSTRING && lua_tostring(L, 2)[0] != '_') {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
  }
  lua_pushliteral(L, "_unknown");
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TFUNCTION) return 0;
  lua_pushliteral(L, "hot");
  lua_pushvalue(L, 2);
  lua_call(L, 2, 0); /* raises the error */
  return 0;
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

/* The environments (spec_internal.h). */
void sandbox_build_envs(lua_State *L) {
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
  lua_pushcfunction(L, spec_copy_commit);
  lua_setfield(L, -2, "spec_commit");
  lua_pushcfunction(L, spec_lex_field_line);
  lua_setfield(L, -2, "spec_field_line");
  lua_pushcfunction(L, l_spec_layers);
  lua_setfield(L, -2, "spec_layers");
  lua_pushcfunction(L, l_spec_quiet);
  lua_setfield(L, -2, "spec_quiet");
  lua_pushcfunction(L, l_spec_key);
  lua_setfield(L, -2, "spec_key");
  spec_copy_push_fields(L);
  lua_setfield(L, -2, "spec_fields");
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



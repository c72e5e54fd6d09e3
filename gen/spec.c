/* spec.c — the Lua side of hot: load a spec in a sandbox, validate it with the DSL (lua/hot/),
 * copy the result into plain C structs. The only file of the project that touches lua_State. */
#define _POSIX_C_SOURCE 200809L
#include "spec.h"

#include <errno.h>
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
  long long steps, max_steps;
  double deadline;          /* CLOCK_MONOTONIC seconds */
  int tripped;              /* the instruction/time limit was hit */
  const void *spec_fn;      /* the spec chunk's closure (NULL before it runs) */
  const char *spec_file;    /* path as given, for messages */
  int last_line;            /* the spec line that ran last (line hook) */
} sandbox;

#define HOOK_EVERY 1000     /* VM instructions between two hook calls */

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
  void *p = realloc(ptr, nsize);
  if (p) sb->used = sb->used - old + nsize;
  return p;
}

static void limit_hook(lua_State *L, lua_Debug *ar) {
  sandbox *sb;
  lua_getallocf(L, (void **)&sb);
  if (ar->event == LUA_HOOKLINE) { /* remember the spec's current line (for tail calls) */
    if (sb->spec_fn && lua_getinfo(L, "f", ar)) { /* cheap: pushes the running function */
      if (lua_topointer(L, -1) == sb->spec_fn) sb->last_line = ar->currentline;
      lua_pop(L, 1);
    }
    return;
  }
  sb->steps += HOOK_EVERY;
  if (sb->tripped || sb->steps > sb->max_steps || now_seconds() > sb->deadline) {
    sb->tripped = 1;
    lua_getinfo(L, "Sl", ar); /* name the line that was running */
    luaL_error(L, "%s:%d: spec exceeded its %s limit (an endless loop?)", ar->short_src,
               ar->currentline, sb->steps > sb->max_steps ? "instruction" : "time");
  }
}

/* ---- environment --------------------------------------------------------------------------- */

static int msg_handler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) msg = luaL_tolstring(L, 1, NULL); /* non-string error objects */
  lua_pushstring(L, msg);
  return 1;
}

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

/* build_envs as a protected call: returns the spec environment. */
static int l_setup(lua_State *L) {
  luaL_checkstack(L, 40, "setup");
  build_envs(L);
  return 1;
}

/* ---- reading the validated model ------------------------------------------------------------ */

static int field_int(lua_State *L, int t, const char *k, int64_t *out) {
  int ty = lua_getfield(L, t, k);
  int isnum = 0;
  lua_Integer v = lua_tointegerx(L, -1, &isnum);
  lua_pop(L, 1);
  if (ty == LUA_TNIL || !isnum) return 0;
  *out = (int64_t)v;
  return 1;
}

static void field_intv(lua_State *L, int t, const char *k, int *out) {
  int64_t v;
  if (field_int(L, t, k, &v)) *out = (int)v;
}

static void field_bool(lua_State *L, int t, const char *k, int *out) {
  if (lua_getfield(L, t, k) == LUA_TBOOLEAN) *out = lua_toboolean(L, -1);
  lua_pop(L, 1);
}

/* The index of the string field k among names, or -1 when absent. */
static int field_enum(lua_State *L, int t, const char *k, const char *const *names) {
  int r = -1;
  if (lua_getfield(L, t, k) == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    for (int i = 0; names[i]; ++i)
      if (strcmp(s, names[i]) == 0) r = i;
  }
  lua_pop(L, 1);
  return r;
}

static void field_str(lua_State *L, int t, const char *k, char *dst, size_t n) {
  if (lua_getfield(L, t, k) == LUA_TSTRING) snprintf(dst, n, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
}

static const char *const k_rules[] = {"absmax", "sawb", NULL};
static const char *const k_dtypes[] = {"f32", "bf16", "f16", NULL};
static const char *const k_recipes[] = {"hot", "paper", "paper_code", NULL};

static void read_rule(lua_State *L, int t, const char *k, hot_rule *out) {
  int v = field_enum(L, t, k, k_rules);
  if (v >= 0) *out = (hot_rule)v;
}

static void read_tile(lua_State *L, int t, const char *k, hot_tile *tile) {
  if (lua_getfield(L, t, k) == LUA_TTABLE) {
    int s = lua_gettop(L);
    field_intv(L, s, "tile_m", &tile->tile_m);
    field_intv(L, s, "tile_n", &tile->tile_n);
    field_intv(L, s, "tile_k", &tile->tile_k);
    field_intv(L, s, "warps_m", &tile->warps_m);
    field_intv(L, s, "warps_n", &tile->warps_n);
    field_intv(L, s, "stages", &tile->stages);
  }
  lua_pop(L, 1);
}

/* Layer table at index t -> spec (defaults of the recipe, then what the spec wrote). */
static void read_layer(lua_State *L, int t, hot_recipe recipe, hot_layer_spec *s) {
  plan_spec_defaults(s, recipe);
  field_str(L, t, "name", s->name, sizeof s->name);
  field_intv(L, t, "line", &s->line);
  field_int(L, t, "in_features", &s->in_features);
  field_int(L, t, "out_features", &s->out_features);
  field_int(L, t, "tokens", &s->tokens);
  field_bool(L, t, "bias", &s->bias);
  int dt = field_enum(L, t, "dtype", k_dtypes);
  if (dt >= 0) s->dtype = (hot_dtype)dt;
  if (lua_getfield(L, t, "hq") == LUA_TTABLE) {
    int h = lua_gettop(L);
    field_bool(L, h, "enabled", &s->hq.enabled);
    field_intv(L, h, "block", &s->hq.block);
    field_intv(L, h, "bits", &s->hq.g.bits);
    field_intv(L, h, "w_bits", &s->hq.w.bits);
    int g = field_enum(L, h, "scale", (const char *const[]){"tensor", "token", "auto", NULL});
    if (g >= 0) s->hq.g.gran = (hot_gran)g; /* same order as hot_gran */
    read_rule(L, h, "w_scale", &s->hq.w.rule);
    field_bool(L, h, "pad", &s->hq.pad);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, t, "hla") == LUA_TTABLE) {
    int h = lua_gettop(L);
    field_bool(L, h, "enabled", &s->hla.enabled);
    field_intv(L, h, "block", &s->hla.block);
    int sel = field_enum(L, h, "selection", (const char *const[]){"tri", "prefix", "full", NULL});
    if (sel >= 0) s->hla.selection = (hot_selection)sel;
    field_intv(L, h, "keep", &s->hla.keep);
    field_intv(L, h, "rank", &s->hla.rank);
    int lay = field_enum(L, h, "layout", (const char *const[]){"sample", "flat", "auto", NULL});
    if (lay >= 0) s->hla.layout = (hot_layout)lay;
    field_bool(L, h, "pad", &s->hla.pad);
    field_intv(L, h, "bits", &s->hla.g.bits);
    field_intv(L, h, "x_bits", &s->hla.x.bits);
    read_rule(L, h, "x_scale", &s->hla.x.rule);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, t, "abc") == LUA_TTABLE) field_bool(L, lua_gettop(L), "enabled", &s->abc.enabled);
  lua_pop(L, 1);
  read_tile(L, t, "tile_gx", &s->tile_gx);
  read_tile(L, t, "tile_gw", &s->tile_gw);
}

/* Model table at index t -> out. Returns 0, or -1 with messages in diag. */
static int read_model(lua_State *L, int t, const char *file, hot_model *out, hot_diag *diag) {
  snprintf(out->file, sizeof out->file, "%s", file);
  field_str(L, t, "name", out->name, sizeof out->name);
  field_int(L, t, "batch", &out->batch);
  field_int(L, t, "tokens", &out->tokens);
  int rc = field_enum(L, t, "recipe", k_recipes);
  out->recipe = rc >= 0 ? (hot_recipe)rc : HOT_RECIPE_HOT;
  int64_t seed = 0x243F6A8885A308D3LL; /* default Philox key: digits of pi */
  field_int(L, t, "seed", &seed);
  out->seed = (uint64_t)seed;
  out->n_archs = 0;
  if (lua_getfield(L, t, "archs") == LUA_TTABLE) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n && out->n_archs < HOT_MAX_ARCHS; ++i) {
      lua_geti(L, -1, i);
      hot_arch a;
      if (plan_arch_parse(lua_tostring(L, -1), &a) == 0) {
        int dup = 0;
        for (int j = 0; j < out->n_archs; ++j) dup |= out->archs[j] == a;
        if (!dup) out->archs[out->n_archs++] = a;
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (out->n_archs == 0) out->archs[out->n_archs++] = HOT_ARCH_SM90;

  lua_getfield(L, t, "layers");
  lua_Integer nl = lua_istable(L, -1) ? luaL_len(L, -1) : 0;
  if (nl < 1) {
    lua_pop(L, 1);
    diag_add(diag, "%s: the model has no layers", file);
    return -1;
  }
  out->layers = calloc((size_t)nl, sizeof *out->layers);
  if (!out->layers) {
    lua_pop(L, 1);
    diag_add(diag, "%s: out of memory", file);
    return -1;
  }
  for (lua_Integer i = 1; i <= nl; ++i) {
    lua_geti(L, -1, i);
    read_layer(L, lua_gettop(L), out->recipe, &out->layers[out->n_layers++]);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);

  if (lua_getfield(L, t, "sweep") == LUA_TTABLE) {
    lua_Integer na = luaL_len(L, -1);
    out->sweep = na > 0 ? calloc((size_t)na, sizeof *out->sweep) : NULL;
    for (lua_Integer i = 1; out->sweep && i <= na; ++i) {
      lua_geti(L, -1, i);
      hot_sweep_axis *ax = &out->sweep[out->n_sweep++];
      field_str(L, -1, "field", ax->field, sizeof ax->field);
      lua_getfield(L, -1, "values");
      lua_Integer nv = lua_istable(L, -1) ? luaL_len(L, -1) : 0;
      for (lua_Integer j = 1; j <= nv && ax->n < HOT_MAX_SWEEP; ++j) {
        lua_geti(L, -1, j);
        ax->values[ax->n++] = (int64_t)lua_tointeger(L, -1);
        lua_pop(L, 1);
      }
      lua_pop(L, 2);
    }
  }
  lua_pop(L, 1);
  return 0;
}

/* ---- entry points ----------------------------------------------------------------------- */

spec_limits spec_default_limits(void) {
  spec_limits l = {64u << 20, 50000000LL, 5.0};
  return l;
}

/* Runs the spec chunk (already on the stack top, a function) and reads the model. */
static int run_spec(lua_State *L, sandbox *sb, const char *file, hot_model *out, hot_diag *diag) {
  /* stack: msgh, spec_env, chunk */
  lua_pushvalue(L, -2);
  lua_setupvalue(L, -2, 1); /* _ENV = spec env */
  /* The DSL needs to know which chunk is the spec, to name its lines. */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.dslenv");
  lua_getfield(L, -1, "require");
  lua_pushstring(L, "hot");
  if (lua_pcall(L, 1, 1, 1) != LUA_OK) {
    diag_add(diag, "%s: internal error loading the DSL: %s", file, lua_tostring(L, -1));
    return -1;
  }
  lua_pushfstring(L, "@%s", file);
  lua_setfield(L, -2, "_spec_source");
  sb->spec_file = file;
  /* The functions that read the verdict, kept where the spec cannot reach them. */
  lua_getfield(L, -1, "_errors");
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.errorsfn");
  lua_getfield(L, -1, "_validated");
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.validfn");
  lua_pop(L, 2);

  sb->spec_fn = lua_topointer(L, -1); /* the chunk, about to run (kept alive on the stack) */
  lua_sethook(L, limit_hook, LUA_MASKCOUNT | LUA_MASKLINE, HOOK_EVERY);
  int st = lua_pcall(L, 0, 1, 1);
  lua_sethook(L, NULL, 0, 0);
  if (st != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if ((st == LUA_ERRMEM || sb->refused) && sb->last_line > 0)
      diag_add(diag, "%s:%d: spec exceeded its memory limit of %zu MiB", file, sb->last_line,
               sb->limit >> 20);
    else if (st == LUA_ERRMEM || sb->refused)
      diag_add(diag, "%s: spec exceeded its memory limit of %zu MiB", file, sb->limit >> 20);
    else
      diag_add(diag, "%s", msg ? msg : "unknown error");
    return -1;
  }
  int t = lua_gettop(L);
  int is_model = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.validfn");
  lua_pushvalue(L, t);
  if (lua_pcall(L, 1, 1, 1) == LUA_OK) is_model = lua_toboolean(L, -1);
  lua_settop(L, t);
  /* Diagnostics the DSL collected (also those outside hot.model). */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.errorsfn");
  int errs = 0;
  if (lua_pcall(L, 0, 1, 1) == LUA_OK && lua_istable(L, -1)) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, -1, i);
      diag_add(diag, "%s", lua_tostring(L, -1));
      lua_pop(L, 1);
      ++errs;
    }
  }
  lua_settop(L, t);
  if (!is_model) {
    if (!errs) diag_add(diag, "%s: the spec must return hot.model { ... }", file);
    return -1;
  }
  if (errs) return -1;
  return read_model(L, t, file, out, diag);
}

static int load_common(const char *file, const char *text, size_t len, const spec_limits *lim,
                       hot_model *out, hot_diag *diag) {
  memset(out, 0, sizeof *out);
  spec_limits dl = spec_default_limits();
  if (!lim) lim = &dl;
  if (len > 0 && text[0] == LUA_SIGNATURE[0]) {
    diag_add(diag, "%s: precompiled (bytecode) specs are not accepted; give the Lua source", file);
    return -1;
  }
  sandbox sb = {0, lim->memory_bytes, 0, 0, lim->instructions, now_seconds() + lim->seconds, 0,
                NULL, NULL, 0};
  lua_State *L = lua_newstate(bounded_alloc, &sb);
  if (!L) {
    diag_add(diag, "%s: cannot create a Lua state (out of memory)", file);
    return -1;
  }
  int rc = -1;
  lua_pushcfunction(L, msg_handler); /* index 1 */
  /* Environments are built under pcall too: an allocation failure is an error, not a panic. */
  lua_pushcfunction(L, l_setup);
  if (lua_pcall(L, 0, 1, 1) != LUA_OK) {
    diag_add(diag, "%s: cannot set up the spec environment: %s", file,
             lua_isstring(L, -1) ? lua_tostring(L, -1) : "out of memory");
  } else { /* the spec env is index 2 */
    char chunk[HOT_PATH_MAX + 2];
    snprintf(chunk, sizeof chunk, "@%s", file);
    int st = luaL_loadbufferx(L, text, len, chunk, "t");
    if (st != LUA_OK) {
      const char *msg = lua_tostring(L, -1);
      if (st == LUA_ERRMEM) diag_add(diag, "%s: spec exceeded its memory limit", file);
      else diag_add(diag, "%s", msg ? msg : "syntax error");
    } else {
      rc = run_spec(L, &sb, file, out, diag);
    }
  }
  lua_close(L);
  if (rc != 0) spec_model_free(out);
  return rc;
}

int spec_load_string(const char *chunkname, const char *text, size_t len, const spec_limits *limits,
                     hot_model *out, hot_diag *diag) {
  if (!out || !text) {
    diag_add(diag, "spec_load_string: NULL argument");
    return -1;
  }
  return load_common(chunkname ? chunkname : "spec", text, len, limits, out, diag);
}

int spec_load_file(const char *path, const spec_limits *limits, hot_model *out, hot_diag *diag) {
  if (!out || !path) {
    diag_add(diag, "spec_load_file: NULL argument");
    return -1;
  }
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    diag_add(diag, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (len == cap) {
      if (cap >= (16u << 20)) {
        fclose(f);
        free(buf);
        diag_add(diag, "%s: spec larger than 16 MiB", path);
        return -1;
      }
      char *g = realloc(buf, cap * 2);
      if (!g) break;
      buf = g;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    diag_add(diag, "%s: cannot read the file", path);
    return -1;
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
  set_int(L, "bits", s.hla.g.bits);
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
  set_str(L, "hot", "hla.layout = auto");
  set_str(L, "paper", "hla.layout = sample");
  set_str(L, "paper_code",
          "hq.pad = false, hq.w_scale = sawb, hla.block = 0 (derived), hla.pad = false, "
          "hla.layout = sample, hla.x_scale = sawb");
  lua_setfield(L, -2, "recipes");
}

char *spec_help_text(hot_diag *diag) {
  spec_limits lim = spec_default_limits();
  sandbox sb = {0, lim.memory_bytes, 0, 0, lim.instructions, now_seconds() + lim.seconds, 0,
                NULL, NULL, 0};
  lua_State *L = lua_newstate(bounded_alloc, &sb);
  if (!L) {
    diag_add(diag, "cannot create a Lua state");
    return NULL;
  }
  char *text = NULL;
  lua_pushcfunction(L, msg_handler);
  lua_pushcfunction(L, l_setup);
  if (lua_pcall(L, 0, 1, 1) != LUA_OK) {
    diag_add(diag, "cannot set up the Lua environment");
    lua_close(L);
    return NULL;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.dslenv");
  lua_getfield(L, -1, "require");
  lua_pushstring(L, "hot");
  if (lua_pcall(L, 1, 1, 1) == LUA_OK) {
    lua_getfield(L, -1, "_help");
    push_defaults(L);
    if (lua_pcall(L, 1, 1, 1) == LUA_OK && lua_isstring(L, -1)) {
      size_t n;
      const char *s = lua_tolstring(L, -1, &n);
      text = malloc(n + 1);
      if (text) memcpy(text, s, n + 1);
    }
  }
  if (!text) diag_add(diag, "internal error: %s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "help");
  lua_close(L);
  return text;
}

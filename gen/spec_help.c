/* spec_help.c — the text of `hot-gen --help-spec`. The DSL formats it (hot._help, from the schema,
 * which lua/hot/schema.lua builds from gen/field_list.h); the defaults it prints come from the same
 * table (fields_defaults), per recipe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "fields.h"
#include "spec_internal.h"

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

/* The default of row f in *s as help prints it: its spec text, "-" for an unset 0. */
static void default_text(const hot_layer_spec *s, const hot_field *f, char *buf, size_t n) {
  if ((f->flags & FL_UNSET0) && fields_value(s, f) == 0) snprintf(buf, n, "-");
  else if (fields_get(s, f, buf, n) != 0) snprintf(buf, n, "?");
}

/* Sets defaults[group][key] for every row with a spec path ("hq.block": hq.block; "bias":
 * linear.bias; the tiles of g_x stand for both GEMMs: tile.*). */
static void push_layer_defaults(lua_State *L, int defaults) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    if (!f->path || strncmp(f->path, "tile_gw.", 8) == 0) continue;
    const char *dot = strchr(f->path, '.');
    char group[16] = "linear", v[32];
    if (dot) snprintf(group, sizeof group, "%.*s", (int)(dot - f->path), f->path);
    if (strcmp(group, "tile_gx") == 0) snprintf(group, sizeof group, "tile");
    if (lua_getfield(L, defaults, group) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setfield(L, defaults, group);
    }
    default_text(&s, f, v, sizeof v);
    set_str(L, dot ? dot + 1 : f->path, v);
    lua_pop(L, 1);
  }
}

/* What recipe r changes against the project default (for hot: against paper), "path = value, ..."
 * in table order. */
static void recipe_diff(hot_recipe r, char *buf, size_t n) {
  hot_layer_spec a, b;
  plan_spec_defaults(&a, r);
  plan_spec_defaults(&b, r == HOT_RECIPE_HOT ? HOT_RECIPE_PAPER : HOT_RECIPE_HOT);
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < fields_all_count() && used < n; ++i) {
    const hot_field *f = fields_all_at(i);
    if (!f->path || fields_value(&a, f) == fields_value(&b, f)) continue;
    char v[32];
    default_text(&a, f, v, sizeof v);
    int w = snprintf(buf + used, n - used, "%s%s = %s", used ? ", " : "", f->path, v);
    used += w > 0 ? (size_t)w : 0;
  }
}

/* The defaults table hot._help prints. */
static void push_defaults(lua_State *L) {
  lua_newtable(L);
  int d = lua_gettop(L);
  lua_newtable(L);
  set_str(L, "recipe", plan_recipe_name(HOT_RECIPE_HOT));
  set_str(L, "seed", "0x243F6A8885A308D3");
  lua_setfield(L, d, "model");
  lua_newtable(L);
  set_str(L, "arch", plan_arch_caps(HOT_ARCH_DEFAULT)->name);
  lua_setfield(L, d, "target");
  lua_newtable(L);
  set_str(L, "tokens", "model's");
  lua_setfield(L, d, "linear");
  push_layer_defaults(L, d);
  lua_newtable(L);
  for (int r = 0; r < fields_enum_count(HOT_E_recipe); ++r) {
    char diff[512];
    recipe_diff((hot_recipe)r, diff, sizeof diff);
    set_str(L, plan_recipe_name((hot_recipe)r), diff);
  }
  lua_setfield(L, d, "recipes");
}

/* The help text as one protected function (argument: where to store the malloc'd text). */
static int l_help_main(lua_State *L) {
  char **text = lua_touserdata(L, 1);
  lua_settop(L, 0);
  luaL_checkstack(L, 40, "help");
  sandbox_build_envs(L);
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
  sandbox sb;
  lua_State *L = sandbox_open(&sb, NULL);
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

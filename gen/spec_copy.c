/* spec_copy.c — the C copy of a validated model. hot.model (lua/hot/init.lua) calls
 * spec_commit(m) with the normalized model it built (plain tables of the DSL, no metatables, not
 * reachable by the spec), before the spec runs again. The copy lives in a userdata (so the spec's
 * memory limit bounds it and the GC frees it); the loader uses only that copy, never the Lua
 * tables, once the spec has returned. A layer's fields are copied row by row from the table of
 * gen/field_list.h (fields.h), the same table the DSL's schema is built from (spec_fields). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "fields.h"
#include "spec_internal.h"

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

/* The value of the string field k in enumeration e, or -1 when absent. */
static int field_enum(lua_State *L, int t, const char *k, hot_enum_id e) {
  int r = -1;
  if (raw_field(L, t, k) == LUA_TSTRING) r = fields_enum_parse(e, lua_tostring(L, -1));
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

/* Reads row f of the layer table at t into *s: the group table ("hq" of "hq.block") then the key;
 * a row without a group ("bias") is a field of the layer itself. Returns 1 when the spec wrote it. */
static int read_row(lua_State *L, int t, const hot_field *f, hot_layer_spec *s, spec_copy *c) {
  const char *dot = strchr(f->path, '.');
  int top = lua_gettop(L), tab = t, present = 0, v = 0;
  if (dot) {
    lua_pushlstring(L, f->path, (size_t)(dot - f->path));
    if (lua_rawget(L, t) != LUA_TTABLE) {
      lua_settop(L, top);
      return 0;
    }
    tab = lua_gettop(L);
  }
  const char *key = dot ? dot + 1 : f->path;
  if (f->kind == HOT_FK_INT) {
    present = field_intv(L, tab, key, &v, c);
  } else if (f->kind == HOT_FK_BOOL) {
    if ((present = raw_field(L, tab, key) == LUA_TBOOLEAN)) v = lua_toboolean(L, -1);
  } else {
    present = (v = field_enum(L, tab, key, f->en)) >= 0;
  }
  if (present) fields_store(s, f, v);
  lua_settop(L, top);
  return present;
}

/* Layer table at index t -> spec (defaults of the recipe, then what the spec wrote); returns the
 * LAYER_HAS_* flags. */
static int read_layer(lua_State *L, int t, hot_recipe recipe, hot_layer_spec *s, spec_copy *c) {
  int flags = 0;
  t = lua_absindex(L, t);
  plan_spec_defaults(s, recipe);
  field_name(L, t, "name", s->name, sizeof s->name, c);
  field_intv(L, t, "line", &s->line, c);
  field_int(L, t, "in_features", &s->in_features);
  field_int(L, t, "out_features", &s->out_features);
  field_int(L, t, "tokens", &s->tokens);
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    if (!f->path || !read_row(L, t, f, s, c)) continue;
    if (strcmp(f->path, "hla.keep") == 0) flags |= LAYER_HAS_KEEP;
    if (strcmp(f->path, "hla.rank") == 0) flags |= LAYER_HAS_RANK;
  }
  return flags;
}

/* rawlen of t[k] when it is a table, else 0. */
static lua_Integer field_len(lua_State *L, int t, const char *k) {
  lua_Integer n = raw_field(L, t, k) == LUA_TTABLE ? (lua_Integer)lua_rawlen(L, -1) : 0;
  lua_pop(L, 1);
  return n;
}

/* The model's own fields (name, batch, tokens, recipe, seed, lines, archs) into c. */
static void commit_model(lua_State *L, spec_copy *c) {
  hot_model *out = &c->m;
  field_name(L, 1, "name", out->name, sizeof out->name, c);
  field_int(L, 1, "batch", &out->batch);
  field_int(L, 1, "tokens", &out->tokens);
  int rc = field_enum(L, 1, "recipe", HOT_E_recipe);
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
  if (out->n_archs == 0) out->archs[out->n_archs++] = HOT_ARCH_DEFAULT;
}

/* The nl layers (m.layers, m.layer_ok) into c. */
static void commit_layers(lua_State *L, spec_copy *c, lua_Integer nl) {
  hot_model *out = &c->m;
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
}

/* One sweep axis (the table at index a) into *ax. */
static void commit_axis(lua_State *L, int a, hot_sweep_axis *ax, spec_copy *c) {
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

/* spec_commit (spec_internal.h). */
int spec_copy_commit(lua_State *L) {
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
  commit_model(L, c);
  commit_layers(L, c, nl);
  raw_field(L, 1, "sweep");
  for (lua_Integer i = 1; i <= ns; ++i) {
    hot_sweep_axis *ax = &c->m.sweep[c->m.n_sweep++];
    if (lua_rawgeti(L, -1, i) == LUA_TTABLE) commit_axis(L, lua_gettop(L), ax, c);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 1;
}

/* ---- the schema's rows, for the DSL ------------------------------------------------------ */

static const char *const k_kinds[] = {"int", "bool", "enum"};

/* Pushes the list of names "a|b|c" as a Lua list. */
static void push_names(lua_State *L, const char *list) {
  lua_newtable(L);
  lua_Integer i = 0;
  for (const char *p = list; *p;) {
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    lua_pushlstring(L, p, n);
    lua_rawseti(L, -2, ++i);
    p += n + (bar ? 1 : 0);
  }
}

/* Pushes one row (f has a spec path) as the DSL's field descriptor. */
static void push_row(lua_State *L, const hot_field *f) {
  lua_createtable(L, 0, 8);
  lua_pushstring(L, f->path);
  lua_setfield(L, -2, "path");
  lua_pushstring(L, k_kinds[f->kind]);
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, f->doc);
  lua_setfield(L, -2, "doc");
  if (f->kind == HOT_FK_INT) {
    lua_pushinteger(L, f->min);
    lua_setfield(L, -2, "min");
    lua_pushinteger(L, f->max);
    lua_setfield(L, -2, "max");
    lua_pushboolean(L, (f->flags & FL_POW2) != 0);
    lua_setfield(L, -2, "pow2");
    lua_pushboolean(L, (f->flags & FL_ZERO) != 0);
    lua_setfield(L, -2, "zero_ok");
  }
  if (f->kind == HOT_FK_ENUM) {
    push_names(L, f->vdoc);
    lua_setfield(L, -2, "values");
  }
  lua_pushboolean(L, (f->flags & FL_SWEEP) != 0);
  lua_setfield(L, -2, "sweep");
}

void spec_copy_push_fields(lua_State *L) {
  lua_createtable(L, 0, 2);
  lua_newtable(L);
  lua_Integer k = 0;
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    if (!f->path) continue;
    push_row(L, f);
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, -2, "rows");
  lua_newtable(L);
#define ENUM_(id, type)                                                                            \
  lua_newtable(L);                                                                                 \
  for (int v = 0; v < fields_enum_count(HOT_E_##id); ++v) {                                        \
    lua_pushstring(L, fields_enum_name(HOT_E_##id, v));                                            \
    lua_rawseti(L, -2, v + 1);                                                                     \
  }                                                                                                \
  lua_setfield(L, -2, #id);
  HOT_ENUMS(ENUM_)
#undef ENUM_
  lua_setfield(L, -2, "enums");
  /* The arch table's names (plan_tables.c), the schema's one list of target archs. */
  lua_newtable(L);
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    lua_pushstring(L, plan_arch_caps((hot_arch)a)->name);
    lua_rawseti(L, -2, a + 1);
  }
  lua_setfield(L, -2, "archs");
  lua_pushstring(L, plan_arch_caps(HOT_ARCH_DEFAULT)->name);
  lua_setfield(L, -2, "default_arch");
}

/* The checks after the spec (spec_internal.h). A value the DSL should have refused (c->internal)
 * is reported only when the DSL reported nothing (else it did already). */
int spec_copy_check(const spec_copy *c, const char *file, int dsl_errs, hot_diag *diag) {
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
 * message merged). */
int spec_copy_plan_clean(const spec_copy *c, const char *file, hot_diag *diag) {
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

/* Copies c into *out (spec_internal.h). */
int spec_copy_out(const spec_copy *c, const char *file, hot_model *out) {
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


/* fields.c — the table of a layer's fields, built from field_list.h (fields.h). */
#include "fields.h"
#include "num.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enumerations are stored in int-sized objects (checked here), so one int access serves them. */
_Static_assert(sizeof(hot_gran) == sizeof(int) && sizeof(hot_round) == sizeof(int) &&
               sizeof(hot_rule) == sizeof(int) && sizeof(hot_selection) == sizeof(int) &&
               sizeof(hot_layout) == sizeof(int) && sizeof(hot_dtype) == sizeof(int),
               "enumerations must be int-sized");

/* ---- enumerations ---------------------------------------------------------------------------- */

#define NAME_(c, s) s,
#define CONST_(c, s) #c,
#define VALUE_(c, s) (int)c,
#define LISTS_(id, type)                                                                           \
  static const char *const names_##id[] = {HOT_ENUM_##id(NAME_) NULL};                             \
  static const char *const consts_##id[] = {HOT_ENUM_##id(CONST_) NULL};                           \
  static const int values_##id[] = {HOT_ENUM_##id(VALUE_)};
HOT_ENUMS(LISTS_)
#undef LISTS_

typedef struct {
  const char *type;
  const char *const *names, *const *consts;
  const int *values;
  int count;
} enum_desc;

#define DESC_(id, type)                                                                            \
  {#type, names_##id, consts_##id, values_##id, (int)(sizeof values_##id / sizeof(int))},
static const enum_desc k_enums[HOT_E_COUNT] = {HOT_ENUMS(DESC_)};
#undef DESC_
#undef NAME_
#undef CONST_
#undef VALUE_

static const enum_desc *enum_of(hot_enum_id e) {
  return (int)e >= 0 && e < HOT_E_COUNT ? &k_enums[e] : NULL;
}

int fields_enum_count(hot_enum_id e) { return enum_of(e) ? enum_of(e)->count : 0; }

/* Values are listed in order 0, 1, ... (tests/spec checks values_* against the C constants). */
const char *fields_enum_name(hot_enum_id e, int v) {
  const enum_desc *d = enum_of(e);
  return d && v >= 0 && v < d->count ? d->names[v] : "?";
}

const char *fields_enum_const(hot_enum_id e, int v) {
  const enum_desc *d = enum_of(e);
  return d && v >= 0 && v < d->count ? d->consts[v] : "?";
}

int fields_enum_value(hot_enum_id e, int i) {
  const enum_desc *d = enum_of(e);
  return d && i >= 0 && i < d->count ? d->values[i] : -1;
}

const char *fields_enum_type(hot_enum_id e) { return enum_of(e) ? enum_of(e)->type : "?"; }

int fields_enum_parse(hot_enum_id e, const char *name) {
  const enum_desc *d = enum_of(e);
  if (!d || !name) return -1;
  for (int i = 0; i < d->count; ++i)
    if (strcmp(name, d->names[i]) == 0) return i;
  return -1;
}

/* ---- the table ------------------------------------------------------------------------------- */

#define ALSO(m) offsetof(hot_layer_spec, m)
#define NOALSO 0
#define ROW_(path, member, also, kind, en, min, max, flags, d_hot, d_paper, d_code, d_nv, vdoc, doc)     \
  {path, #member, offsetof(hot_layer_spec, member), also, HOT_FK_##kind, HOT_E_##en, min, max,      \
   flags, {d_hot, d_paper, d_code, d_nv}, vdoc, doc},
static const hot_field table[] = {HOT_FIELDS(ROW_)};
#undef ROW_
#undef ALSO
#undef NOALSO

enum { N_ROWS = (int)(sizeof table / sizeof table[0]) };

/* Sweepable rows come first (field_list.h; tests/spec checks that none follows another row). */
#define COUNT_(path, member, also, kind, en, min, max, flags, d_hot, d_paper, d_code, d_nv, vdoc, doc)   \
  +(((flags) & FL_SWEEP) ? 1 : 0)
enum { N_SWEEP = 0 HOT_FIELDS(COUNT_) };
#undef COUNT_
static int sweep_count(void) { return N_SWEEP; }

int fields_count(void) { return sweep_count(); }
const hot_field *fields_at(int i) { return i >= 0 && i < sweep_count() ? &table[i] : NULL; }
int fields_all_count(void) { return N_ROWS; }
const hot_field *fields_all_at(int i) { return i >= 0 && i < N_ROWS ? &table[i] : NULL; }
const char *fields_path(const hot_field *f) { return f && f->path ? f->path : ""; }
hot_field_class fields_class(const hot_field *f) {
  return !f || (f->flags & FL_ACC) ? HOT_FIELD_ACCURACY : HOT_FIELD_SPEED;
}
const char *fields_values_doc(const hot_field *f) {
  if (!f) return "";
  if (f->kind == HOT_FK_BOOL) return "true|false";
  return f->vdoc;
}

const hot_field *fields_find_spec(const char *path) {
  if (!path) return NULL;
  for (int i = 0; i < N_ROWS; ++i)
    if (table[i].path && strcmp(table[i].path, path) == 0) return &table[i];
  return NULL;
}

const hot_field *fields_find(const char *path) {
  const hot_field *f = fields_find_spec(path);
  return f && (f->flags & FL_SWEEP) ? f : NULL;
}

int fields_value(const hot_layer_spec *s, const hot_field *f) {
  int v;
  memcpy(&v, (const char *)s + f->off, sizeof v);
  return v;
}

void fields_store(hot_layer_spec *s, const hot_field *f, int v) {
  memcpy((char *)s + f->off, &v, sizeof v);
  if (f->off2) memcpy((char *)s + f->off2, &v, sizeof v);
}

int fields_value_ok(const hot_field *f, int v, int c_caller) {
  if (f->kind == HOT_FK_BOOL) return v == 0 || v == 1;
  if (f->kind == HOT_FK_ENUM) return v >= 0 && v < fields_enum_count(f->en);
  if (v == 0 && ((f->flags & FL_ZERO) || (c_caller && (f->flags & FL_UNSET0)))) return 1;
  if (v < f->min || v > f->max) return 0;
  return !(f->flags & FL_POW2) || (v >= 1 && (v & (v - 1)) == 0);
}

int fields_set(hot_layer_spec *s, const hot_field *f, const char *value, char *err, size_t n) {
  if (!s || !f || !value) {
    snprintf(err, n, "fields_set: NULL argument");
    return -1;
  }
  int v = 0;
  if (f->kind == HOT_FK_BOOL) {
    if (strcmp(value, "true") == 0) v = 1;
    else if (strcmp(value, "false") == 0) v = 0;
    else goto bad;
  } else if (f->kind == HOT_FK_ENUM) {
    if ((v = fields_enum_parse(f->en, value)) < 0) goto bad; /* any name: the plan checks */
  } else {
    char why[160]; /* num.h: decimal or 0x hex, no sign (no field takes a negative value) */
    if (num_parse_int(fields_path(f), value, 0, INT32_MAX, &v, why, sizeof why)) goto bad;
    if (!fields_value_ok(f, v, 1)) goto bad;
  }
  fields_store(s, f, v);
  return 0;
bad:
  snprintf(err, n, "%s: bad value '%.40s' (allowed: %s)", fields_path(f), value,
           fields_values_doc(f));
  return -1;
}

int fields_get(const hot_layer_spec *s, const hot_field *f, char *buf, size_t n) {
  int v = fields_value(s, f), w;
  if (f->kind == HOT_FK_BOOL) w = snprintf(buf, n, "%s", v ? "true" : "false");
  else if (f->kind == HOT_FK_ENUM) {
    int v2 = v;
    if (f->off2) memcpy(&v2, (const char *)s + f->off2, sizeof v2);
    if (v2 != v) /* the two ints differ (a C caller set them apart): both, "first/second" */
      w = snprintf(buf, n, "%s/%s", fields_enum_name(f->en, v), fields_enum_name(f->en, v2));
    else
      w = snprintf(buf, n, "%s", fields_enum_name(f->en, v));
  } else
    w = snprintf(buf, n, "%d", v);
  return w < 0 || (size_t)w >= n ? -1 : 0;
}

int fields_apply(hot_layer_spec *s, const char *assign, char *err, size_t n) {
  const char *p = assign ? assign : "";
  while (*p) {
    const char *end = strchr(p, ';');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[160], *eq;
    if (len == 0 || len >= sizeof item) {
      snprintf(err, n, "bad assignment '%.*s' (expected path=value)", (int)(len > 60 ? 60 : len), p);
      return -1;
    }
    memcpy(item, p, len);
    item[len] = 0;
    if (!(eq = strchr(item, '='))) {
      snprintf(err, n, "bad assignment '%s' (expected path=value)", item);
      return -1;
    }
    *eq = 0;
    const hot_field *f = fields_find(item);
    if (!f) {
      snprintf(err, n, "unknown field '%s' in '%s=%s'", item, item, eq + 1);
      return -1;
    }
    if (fields_set(s, f, eq + 1, err, n) != 0) return -1;
    p += len + (end ? 1 : 0);
  }
  return 0;
}

int fields_canonical(const hot_layer_spec *s, hot_field_class cls, char *buf, size_t n) {
  size_t used = 0;
  if (n == 0) return -1;
  buf[0] = 0;
  for (int i = 0; i < sweep_count(); ++i) {
    if (fields_class(&table[i]) != cls) continue;
    char v[32];
    if (fields_get(s, &table[i], v, sizeof v) != 0) return -1;
    int w = snprintf(buf + used, n - used, "%s%s=%s", used ? ";" : "", table[i].path, v);
    if (w < 0 || (size_t)w >= n - used) return -1;
    used += (size_t)w;
  }
  return 0;
}

/* ---- whole specs ------------------------------------------------------------------------------ */

void fields_defaults(hot_layer_spec *s, hot_recipe recipe) {
  int r = (int)recipe >= 0 && (int)recipe < fields_enum_count(HOT_E_recipe) ? (int)recipe : 0;
  memset(s, 0, sizeof *s);
  for (int i = 0; i < N_ROWS; ++i) {
    int v = table[i].dflt[r];
    memcpy((char *)s + table[i].off, &v, sizeof v); /* a second member has its own row */
  }
}

int fields_check_enums(const hot_layer_spec *s, hot_recipe recipe, char *err, size_t n) {
  int rmax = fields_enum_count(HOT_E_recipe) - 1;
  if ((int)recipe < 0 || (int)recipe > rmax) {
    snprintf(err, n, "recipe = %d is not a hot_recipe (0 .. %d)", (int)recipe, rmax);
    return -1;
  }
  for (int i = 0; i < N_ROWS; ++i) {
    const hot_field *f = &table[i];
    int v = fields_value(s, f);
    if (f->kind == HOT_FK_INT || fields_value_ok(f, v, 1)) continue;
    if (f->kind == HOT_FK_BOOL)
      snprintf(err, n, "spec.%s = %d: expected 0 or 1", f->member, v);
    else
      snprintf(err, n, "spec.%s = %d is not a %s (0 .. %d)", f->member, v, fields_enum_type(f->en),
               fields_enum_count(f->en) - 1);
    return -1;
  }
  return 0;
}

void fields_apply_recipe(hot_layer_spec *s, hot_recipe recipe) {
  if ((int)recipe < 0 || (int)recipe >= fields_enum_count(HOT_E_recipe)) return;
  for (int i = 0; i < N_ROWS; ++i) {
    const hot_field *f = &table[i];
    int v = fields_value(s, f);
    if (v == f->dflt[HOT_RECIPE_HOT]) memcpy((char *)s + f->off, &f->dflt[recipe], sizeof v);
  }
}

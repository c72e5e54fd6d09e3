/* fields.c — the table of a layer's settable fields by spec path (fields.h). */
#include "fields.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { K_INT = 0, K_BOOL, K_ENUM } kind;

struct hot_field {
  const char *path;
  hot_field_class cls;
  kind k;
  size_t off;                 /* offset of the int (or enum) in hot_layer_spec */
  int min, max, pow2, zero_ok; /* K_INT: range; pow2: a power of two (0 allowed when zero_ok) */
  const char *const *names;   /* K_ENUM: names by enum value, NULL-terminated */
  const char *doc;
  size_t off2;                /* a second int that takes the same value (0: none) */
};

/* Enumerations are stored in int-sized objects (checked here), so one int access serves them. */
_Static_assert(sizeof(hot_gran) == sizeof(int) && sizeof(hot_round) == sizeof(int) &&
               sizeof(hot_rule) == sizeof(int) && sizeof(hot_selection) == sizeof(int) &&
               sizeof(hot_layout) == sizeof(int), "enumerations must be int-sized");

static const char *const n_gran[] = {"tensor", "token", "auto", "sample", NULL}; /* hot_gran */
static const char *const n_round[] = {"rtn", "sr", NULL};                        /* hot_round */
static const char *const n_rule[] = {"absmax", "sawb", NULL};                    /* hot_rule */
static const char *const n_sel[] = {"tri", "prefix", "full", NULL};              /* hot_selection */
static const char *const n_layout[] = {"sample", "flat", "auto", NULL};          /* hot_layout */

#define OFF(m) offsetof(hot_layer_spec, m)
#define A HOT_FIELD_ACCURACY
#define S HOT_FIELD_SPEED
#define TILE(g, what)                                                                               \
  {#g ".tile_m", S, K_INT, OFF(g.tile_m), 0, 256, 0, 0, NULL, "64, 128 or 256 (0 = planner's)", 0},     \
  {#g ".tile_n", S, K_INT, OFF(g.tile_n), 0, 256, 0, 0, NULL, "64, 128 or 256 (0 = planner's)", 0},     \
  {#g ".tile_k", S, K_INT, OFF(g.tile_k), 0, 512, 0, 0, NULL, "a multiple of the MMA's K (0 = default)", 0}, \
  {#g ".warps_m", S, K_INT, OFF(g.warps_m), 0, 8, 0, 0, NULL, "0..8 (0 = default)", 0},                 \
  {#g ".warps_n", S, K_INT, OFF(g.warps_n), 0, 8, 0, 0, NULL, "0..8 (0 = default)", 0},                 \
  {#g ".stages", S, K_INT, OFF(g.stages), 0, 6, 0, 0, NULL, "0..6 (0 = default)", 0}

static const struct hot_field table[] = {
  {"hq.enabled", A, K_BOOL, OFF(hq.enabled), 0, 1, 0, 0, NULL, "true|false", 0},
  {"hq.block", A, K_INT, OFF(hq.block), 2, 256, 1, 0, NULL, "power of two in [2, 256]", 0},
  {"hq.bits", A, K_INT, OFF(hq.g.bits), 2, 8, 0, 0, NULL, "2..8", 0},
  {"hq.round", A, K_ENUM, OFF(hq.g.round), 0, 0, 0, 0, n_round, "rtn|sr", 0},
  {"hq.scale", A, K_ENUM, OFF(hq.g.gran), 0, 0, 0, 0, n_gran, "tensor|token|auto|sample", 0},
  {"hq.w_bits", A, K_INT, OFF(hq.w.bits), 2, 8, 0, 0, NULL, "2..8", 0},
  {"hq.w_scale", A, K_ENUM, OFF(hq.w.rule), 0, 0, 0, 0, n_rule, "absmax|sawb", 0},
  {"hq.pad", A, K_BOOL, OFF(hq.pad), 0, 1, 0, 0, NULL, "true|false", 0},
  {"hla.enabled", A, K_BOOL, OFF(hla.enabled), 0, 1, 0, 0, NULL, "true|false", 0},
  {"hla.block", A, K_INT, OFF(hla.block), 0, 1024, 1, 1, NULL, "0 or a power of two in [2, 1024]", 0},
  {"hla.selection", A, K_ENUM, OFF(hla.selection), 0, 0, 0, 0, n_sel, "tri|prefix|full", 0},
  {"hla.keep", A, K_INT, OFF(hla.keep), 1, 50, 0, 0, NULL, "1..50 (percent, selection tri)", 0},
  {"hla.rank", A, K_INT, OFF(hla.rank), 0, 1024, 0, 0, NULL, "1..1024 (selection prefix)", 0},
  {"hla.layout", A, K_ENUM, OFF(hla.layout), 0, 0, 0, 0, n_layout, "sample|flat|auto", 0},
  {"hla.pad", A, K_BOOL, OFF(hla.pad), 0, 1, 0, 0, NULL, "true|false", 0},
  {"hla.bits", A, K_INT, OFF(hla.g.bits), 2, 8, 0, 0, NULL, "2..8", 0},
  {"hla.round", A, K_ENUM, OFF(hla.g.round), 0, 0, 0, 0, n_round, "rtn|sr", 0},
  {"hla.x_bits", A, K_INT, OFF(hla.x.bits), 2, 8, 0, 0, NULL, "2..8", 0},
  {"hla.x_scale", A, K_ENUM, OFF(hla.x.rule), 0, 0, 0, 0, n_rule, "absmax|sawb", 0},
  /* one spec field for the granularity of both HLA operands (reads back g^'s) */
  {"hla.scale", A, K_ENUM, OFF(hla.g.gran), 0, 0, 0, 0, n_gran, "tensor|sample|auto",
   OFF(hla.x.gran)},
  {"abc.enabled", A, K_BOOL, OFF(abc.enabled), 0, 1, 0, 0, NULL, "true|false", 0},
  TILE(tile_gx, "g_x"),
  TILE(tile_gw, "g_w"),
};
#undef TILE
#undef OFF
#undef A
#undef S

enum { N_FIELDS = (int)(sizeof table / sizeof table[0]) };

int fields_count(void) { return N_FIELDS; }
const hot_field *fields_at(int i) { return i >= 0 && i < N_FIELDS ? &table[i] : NULL; }
const char *fields_path(const hot_field *f) { return f ? f->path : ""; }
hot_field_class fields_class(const hot_field *f) { return f ? f->cls : HOT_FIELD_ACCURACY; }
const char *fields_values_doc(const hot_field *f) { return f ? f->doc : ""; }

const hot_field *fields_find(const char *path) {
  if (!path) return NULL;
  for (int i = 0; i < N_FIELDS; ++i)
    if (strcmp(table[i].path, path) == 0) return &table[i];
  return NULL;
}

static int *slot(hot_layer_spec *s, const hot_field *f) { return (int *)(void *)((char *)s + f->off); }
static int value_of(const hot_layer_spec *s, const hot_field *f) {
  int v;
  memcpy(&v, (const char *)s + f->off, sizeof v);
  return v;
}

int fields_set(hot_layer_spec *s, const hot_field *f, const char *value, char *err, size_t n) {
  if (!s || !f || !value) {
    snprintf(err, n, "fields_set: NULL argument");
    return -1;
  }
  int v = 0;
  if (f->k == K_BOOL) {
    if (strcmp(value, "true") == 0) v = 1;
    else if (strcmp(value, "false") == 0) v = 0;
    else goto bad;
  } else if (f->k == K_ENUM) {
    int found = -1;
    for (int i = 0; f->names[i]; ++i)
      if (strcmp(value, f->names[i]) == 0) found = i;
    if (found < 0) goto bad;
    v = found;
  } else {
    char *end;
    errno = 0;
    long long x = strtoll(value, &end, 10);
    if (!*value || *end || errno || x < f->min || x > f->max) goto bad;
    v = (int)x;
    if (f->pow2 && !(v == 0 && f->zero_ok) && (v < 1 || (v & (v - 1)) != 0)) goto bad;
  }
  *slot(s, f) = v;
  if (f->off2) *(int *)(void *)((char *)s + f->off2) = v;
  return 0;
bad:
  snprintf(err, n, "%s: bad value '%.40s' (allowed: %s)", f->path, value, f->doc);
  return -1;
}

int fields_get(const hot_layer_spec *s, const hot_field *f, char *buf, size_t n) {
  int v = value_of(s, f), w;
  if (f->k == K_BOOL) w = snprintf(buf, n, "%s", v ? "true" : "false");
  else if (f->k == K_ENUM) {
    int count = 0;
    while (f->names[count]) ++count;
    int v2 = v;
    if (f->off2) memcpy(&v2, (const char *)s + f->off2, sizeof v2);
    if (v2 != v) /* the two ints differ (a C caller set them apart): both, "first/second" */
      w = snprintf(buf, n, "%s/%s", v >= 0 && v < count ? f->names[v] : "?",
                   v2 >= 0 && v2 < count ? f->names[v2] : "?");
    else
      w = snprintf(buf, n, "%s", v >= 0 && v < count ? f->names[v] : "?");
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
  for (int i = 0; i < N_FIELDS; ++i) {
    if (table[i].cls != cls) continue;
    char v[32];
    if (fields_get(s, &table[i], v, sizeof v) != 0) return -1;
    int w = snprintf(buf + used, n - used, "%s%s=%s", used ? ";" : "", table[i].path, v);
    if (w < 0 || (size_t)w >= n - used) return -1;
    used += (size_t)w;
  }
  return 0;
}

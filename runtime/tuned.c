/* tuned.c — plan_layer with the tiles of the tuning databases (tuned.h). */
#include "tuned.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cache.h"
#include "fields.h"
#include "fileio.h"

/* A one-line message into a fixed room: cut at a word and ended with "..." when it does not fit
 * (fileio_msg_cut). */
__attribute__((format(printf, 3, 4))) static void put(char *dst, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(dst, n, fmt, ap);
  va_end(ap);
  if (w > 0) fileio_msg_cut(dst, n, (size_t)w);
}

static void note(hot_tuned *t, const char *what, const char *msg) {
  size_t used = strlen(t->notes);
  if (used < sizeof t->notes - 1)
    put(t->notes + used, sizeof t->notes - used, "%s%s: %s", used ? "; " : "", what, msg);
}

void tuned_open(hot_tuned *t, const hot_env *ev, const char *path) {
  memset(t, 0, sizeof *t);
  if (ev && ev->tune_set && !ev->tune) return; /* HOT_TUNE=0 */
  t->enabled = 1;
  char err[700];
  const char *given = path && *path ? path : ev && ev->tune_db ? ev->tune_db : NULL;
  if (given && strlen(given) >= sizeof t->user_path) {
    char sh[160];
    put(err, sizeof err, "the path %s is %zu bytes long; SQLite opens paths of at most 512 bytes",
        fileio_path_short(given, sh, 120), strlen(given));
    note(t, "user tuning DB ignored", err);
  } else if (given) put(t->user_path, sizeof t->user_path, "%s", given);
  else if (ev) {
    char dir[1024];
    const char *what;
    int n = kcache_default_dir(ev, dir, sizeof dir, &what);
    if (n > 0 && (size_t)n < sizeof dir - 16) put(t->user_path, sizeof t->user_path, "%s/tune.db", dir);
  }
  struct stat st;
  const int named = (path && *path) || (ev && ev->tune_db); /* given, not derived */
  if (named && *t->user_path && stat(t->user_path, &st) != 0)
    note(t, "user tuning DB not found", t->user_path);
  if (*t->user_path && stat(t->user_path, &st) == 0) { /* a missing default user DB is no rows */
    if (tunedb_open(&t->db[t->n], t->user_path, 1, err, sizeof err) == RT_OK) ++t->n;
    else note(t, "user tuning DB ignored", err);
  }
  if (tunedb_open_system(&t->db[t->n], err, sizeof err) == RT_OK) ++t->n;
  else note(t, "system tuning DB ignored", err);
}

void tuned_close(hot_tuned *t) {
  if (!t) return;
  for (int i = 0; i < t->n; ++i) tunedb_close(t->db[i]);
  memset(t, 0, sizeof *t);
}

static int tiles_written(const hot_layer_spec *s) {
  const hot_tile *g[2] = {&s->tile_gx, &s->tile_gw};
  for (int i = 0; i < 2; ++i)
    if (g[i]->tile_m || g[i]->tile_n || g[i]->tile_k || g[i]->warps_m || g[i]->warps_n || g[i]->stages)
      return 1;
  return 0;
}

int tuned_plan_layer(const hot_tuned *t, const char *device, const hot_layer_spec *spec,
                     int64_t batch, int64_t tokens, hot_recipe recipe, hot_arch arch, int layer_id,
                     hot_layer_spec *tuned_spec, hot_layer_plan *out, char *origin, size_t on,
                     char *err, size_t errlen) {
  char why[700] = "", o_buf[900];
  if (!origin) origin = o_buf, on = sizeof o_buf;
  if (tuned_spec != spec) *tuned_spec = *spec;
  if (tiles_written(spec)) {
    put(origin, on, "spec");
    return plan_layer(tuned_spec, batch, tokens, recipe, arch, layer_id, out, err, errlen);
  }
  hot_tune_query q;
  char base[HOT_TUNE_TEXT];
  hot_tune_choice c;
  int found = 0;
  if (t && t->enabled && t->n && plan_arch_caps(arch) &&
      fields_canonical(spec, HOT_FIELD_ACCURACY, base, sizeof base) == 0) {
    memset(&q, 0, sizeof q);
    q.arch = plan_arch_caps(arch)->name;
    q.device = device && *device ? device : NULL;
    q.dtype = plan_dtype_name(spec->dtype);
    q.recipe = plan_recipe_name(recipe);
    q.base = base;
    q.batch = batch;
    q.tokens = tokens;
    q.out_features = spec->out_features;
    q.in_features = spec->in_features;
    found = tunedb_best_speed((hot_tunedb *const *)t->db, t->n, &q, &c, why, sizeof why);
    if (found < 0) found = 0;
    else if (found == 0 && c.far)
      put(why, sizeof why, "the nearest tuned shape %lldx%lldx%lldx%lld in %s is at distance "
          "%.3g, more than %.2f (ln 8)", (long long)c.row.batch, (long long)c.row.tokens,
          (long long)c.row.out_features, (long long)c.row.in_features, c.db, c.distance,
          HOT_TUNE_NEAR_MAX);
    else why[0] = 0;
  }
  if (found == 1) {
    hot_layer_spec try = *spec;
    char e[600];
    if (fields_apply(&try, c.row.variant, e, sizeof e) == 0) {
      /* only tile fields: a row whose variant touches numerics is not a speed row to apply */
      char b2[HOT_TUNE_TEXT];
      if (fields_canonical(&try, HOT_FIELD_ACCURACY, b2, sizeof b2) != 0 || strcmp(b2, base) != 0) {
        put(why, sizeof why, "row %s of %s changes numerics", c.row.variant, c.db);
      } else if (plan_layer(&try, batch, tokens, recipe, arch, layer_id, out, e, sizeof e) == 0) {
        *tuned_spec = try;
        if (c.exact)
          put(origin, on, "tuned: %s %s %s (exact shape)", c.db, c.row.date, c.row.variant);
        else
          put(origin, on, "tuned: %s %s %s (nearest shape %lldx%lldx%lldx%lld, distance %.2f of "
              "at most %.2f)", c.db, c.row.date, c.row.variant, (long long)c.row.batch,
              (long long)c.row.tokens, (long long)c.row.out_features,
              (long long)c.row.in_features, c.distance, HOT_TUNE_NEAR_MAX);
        return 0;
      } else {
        put(why, sizeof why, "the planner refused the tuned tiles %s: %s", c.row.variant, e);
      }
    } else {
      put(why, sizeof why, "bad tuned row in %s: %s", c.db, e);
    }
  }
  /* the reason is cut (at a word, with "...") so that the closing parenthesis always fits */
  const char *reason = *why ? why : t && *t->notes ? t->notes : NULL;
  if (reason && on > 16) {
    char r[1400];
    put(r, on - 11 < sizeof r ? on - 11 : sizeof r, "%s", reason);
    put(origin, on, "default (%s)", r);
  } else {
    put(origin, on, "default");
  }
  return plan_layer(tuned_spec, batch, tokens, recipe, arch, layer_id, out, err, errlen);
}

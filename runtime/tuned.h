/* tuned.h — planning a layer with the GEMM tiles the tuning databases recorded as fastest for it
 * (runtime/tunedb.h), used by libhot (every layer it plans) and hot-gen (--plan says where each
 * layer's tiles came from).
 *
 * Rules:
 *  - only speed rows are used (tiles, warps, stages: they never change a bit of a result), and
 *    only rows that are "ok", timed and bit-exact, of the same arch, dtype, recipe and numerics
 *    (`base`), of the exact shape or else the nearest recorded one (tunedb_best_speed);
 *  - a layer whose spec writes any tile field keeps the spec's tiles (the spec wins);
 *  - a database that cannot be used (corrupt, another schema) is reported in the notes and
 *    ignored: planning never fails because of a database;
 *  - HOT_TUNE=0 turns the lookup off (every layer: the planner's defaults).
 */
#ifndef HOT_TUNED_H
#define HOT_TUNED_H

#include <stddef.h>

#include "env.h"
#include "plan.h"
#include "tunedb.h"

typedef struct {
  int enabled;              /* 0: HOT_TUNE=0 (or nothing could be opened) */
  hot_tunedb *db[2];        /* the user DB (when its file exists), the system DB; NULL = none */
  int n;
  char user_path[1024];     /* the user DB's path ("" when none could be derived) */
  char notes[600];          /* why a database is not used ("" when all are) */
} hot_tuned;

/* Opens the databases for ev: the user DB at `path` (NULL: ev->tune_db, else
 * <kernel cache dir>/tune.db) read-only when the file exists, and the system DB. Never fails;
 * what could not be opened is skipped and said in t->notes. */
void tuned_open(hot_tuned *t, const hot_env *ev, const char *path);
/* Closes both. NULL-safe; *t becomes empty. */
void tuned_close(hot_tuned *t);

/* Plans like plan_layer(spec, ...), with the tuned tiles when the rules above allow:
 * *tuned_spec receives the spec the plan borrows (it must outlive *out; it may be the same
 * object as spec). `device`: the CUDA device name, or NULL/"" for rows of any device of arch.
 * origin (may be NULL) receives one line: "tuned: <db> <date> <variant> (exact shape)" or
 * "(nearest shape BxLxOxI)", "spec" (the spec writes tiles), "default", or "default (...)" with
 * why a tuned row was not used (the planner refused its tiles; a database error).
 * Returns plan_layer's result (0, or -1 with its message in err). */
int tuned_plan_layer(const hot_tuned *t, const char *device, const hot_layer_spec *spec,
                     int64_t batch, int64_t tokens, hot_recipe recipe, hot_arch arch, int layer_id,
                     hot_layer_spec *tuned_spec, hot_layer_plan *out, char *origin, size_t on,
                     char *err, size_t errlen);

#endif

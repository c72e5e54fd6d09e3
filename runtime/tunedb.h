/* tunedb.h — the tuning database: one SQLite file of measured variants (time statistics,
 * bit-exactness, registers/spills, numerical errors), written by hot-tune and read back by the
 * planner's callers (hot-gen, libhot) to pick a layer's GEMM tiles.
 *
 * Two kinds of databases:
 *  - a file (the user DB, by default <kernel cache dir>/tune.db, or any --db FILE of hot-tune):
 *    tunedb_open. Several processes may write one file at once (WAL journal, a busy timeout,
 *    one transaction per row), and an interrupted writer leaves it consistent;
 *  - the system DB: rows shipped with hot (tune/system.sql, embedded in the library) loaded into
 *    an in-memory database by tunedb_open_system.
 * A lookup searches both; at equal shape distance a row of an earlier database in the list wins
 * (callers pass the user DB first: user rows win).
 *
 * This header is the read side, part of libhot: open (a file read-only or read-write, created
 * with its schema when missing), get, foreach, best_speed (the planner's lookup). The write side
 * (tunedb_put, tunedb_merge, tunedb_integrity_check) is hot-tune's alone: tune/tunedb_write.h.
 * Both halves share the row and schema definitions of tunedb_schema.h.
 *
 * Rows are identified by their key (the fields marked "key" below); tunedb_put replaces a row
 * of the same key. Strings are NUL-terminated and stored as given (truncation is an error).
 * Numbers read back as written, except that a NAN double is stored as NULL (and reads back as
 * NAN) and -0.0 reads back as 0.0.
 */
#ifndef HOT_TUNEDB_H
#define HOT_TUNEDB_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_api.h" /* rt_status */

#define HOT_TUNE_TEXT 512   /* variant / config / base strings, including the NUL */
#define HOT_TUNE_SCHEMA 1   /* schema version written into and required from every DB */

/* Data sets of the accuracy figures (the index into gx_err / gw_err). */
typedef enum {
  HOT_TUNE_GAUSS = 0,     /* seeded i.i.d. Gaussian inputs */
  HOT_TUNE_CHANNELS,      /* Gaussian with 4 channels of g_y x20 */
  HOT_TUNE_TOKENS,        /* Gaussian with 4 tokens of g_y x20 */
  HOT_TUNE_CAPTURE,       /* captured real tensors (row.capture names the file) */
  HOT_TUNE_DATA_COUNT
} hot_tune_data;

typedef struct {
  /* ---- key ---- */
  char device[128];         /* CUDA device name; "" when nothing ran on a GPU */
  char arch[16];            /* an arch name of the plan tables, e.g. "sm_90" */
  char driver[32];          /* CUDA driver version ("13000"), "" without a GPU */
  char nvrtc[32];           /* compiler that built the kernels ("nvrtc-13.0"), "" if none */
  char hot_version[16];     /* HOT_VERSION of the writer */
  int64_t batch, tokens, out_features, in_features; /* layer shape: B, L, O, I */
  char dtype[8];            /* "f32", "bf16", "f16" */
  char recipe[16];          /* "hot", "paper", "paper_code" */
  char base[HOT_TUNE_TEXT]; /* canonical numerics of the layer (every field that changes bits,
                               without the tiles): "hq.block=16;hq.g.bits=4;..." */
  char kind[16];            /* "speed" or "accuracy" */
  char variant[HOT_TUNE_TEXT]; /* canonical assignment of the swept axes: "tile_gx.tile_m=128;..."
                                  (axis order of the sweep); "" = the spec as written */
  /* ---- values ---- */
  char model[64], layer[64];   /* where the shape came from (informative) */
  char config[HOT_TUNE_TEXT];  /* the resolved plan: tiles of both GEMMs, b, p, r, ... */
  char status[16];          /* "ok", "pruned", "compile_failed", "not_bitexact", "plan_refused",
                               "failed" */
  char note[256];           /* why (for every status but ok), or "" */
  int timed;                /* 1: the time_* were measured on `device`; 0: not timed */
  double time_med_ms, time_p10_ms, time_p90_ms, time_min_ms; /* one backward (+ save) */
  int repeats;              /* timed runs behind the statistics */
  int bitexact;             /* -1 not checked, 0 differs from the CPU twin, 1 equal */
  int regs;                 /* most registers of any kernel of the variant; -1 unknown */
  int spills;               /* spill bytes (stores + loads) summed over its kernels; -1 unknown */
  int smem_bytes;           /* most dynamic shared memory of any kernel; -1 unknown */
  double occupancy;         /* lowest theoretical occupancy (0..1) of its GEMMs; < 0 unknown */
  double gx_err[HOT_TUNE_DATA_COUNT]; /* relative Frobenius errors against fp64; NAN = not */
  double gw_err[HOT_TUNE_DATA_COUNT]; /* measured */
  char capture[128];        /* the captured-tensor file's name (no folder), or "" */
  int64_t saved_bytes;      /* bytes the forward keeps (ABC), -1 unknown */
  char date[32];            /* UTC, ISO 8601 ("2026-11-30T23:59:59Z") */
} hot_tune_row;

typedef struct hot_tunedb hot_tunedb;

/* Fills *row with an empty row: strings "", numbers 0, bitexact/regs/spills/smem/saved_bytes -1,
 * occupancy -1, every error NAN. */
void tunedb_row_init(hot_tune_row *row);

/* Opens (read_only = 0: creating it and its schema when missing) the database file `path`.
 * On RT_OK *out is a handle the caller owns (tunedb_close). Errors (*out = NULL, one line in err
 * naming the path): RT_ERR_INVALID (NULL arguments), RT_ERR_IO (cannot be opened or created; not
 * an SQLite file; corrupt — "file is not a database", "database disk image is malformed"; a
 * schema version other than HOT_TUNE_SCHEMA; read_only and missing), RT_ERR_NOMEM.
 * The whole file is checked at open (SQLite's quick_check: time linear in its size), so damage is
 * reported here rather than by a later lookup. An SQLite file without our tables is refused and
 * left untouched (also read-write). read_only never creates the database file; like any reader of
 * a WAL database, SQLite may create its `-wal` and `-shm` companions next to it. */
rt_status tunedb_open(hot_tunedb **out, const char *path, int read_only, char *err, size_t errlen);

/* The shipped system rows (tune/system.sql, embedded) in a new in-memory database, with the same
 * schema as a file. The handle is read-only (tunedb_put and tunedb_merge refuse it). Same errors;
 * RT_ERR_IO also when system.sql holds anything but INSERT INTO results, or a row that does not
 * read back into hot_tune_row. */
rt_status tunedb_open_system(hot_tunedb **out, char *err, size_t errlen);

/* What tunedb_open_system does with the embedded text, for any text of that form: `sql` (INSERT INTO
 * results statements, optionally inside BEGIN/COMMIT; nothing else is allowed) run on a new
 * in-memory database, read-only afterwards; `name` is its tunedb_path. RT_ERR_INVALID (NULL
 * arguments), RT_ERR_IO (any other statement, an SQL error, a row that does not read back), with
 * one line naming `name`, RT_ERR_NOMEM. */
rt_status tunedb_open_sql(hot_tunedb **out, const char *name, const char *sql, char *err,
                          size_t errlen);

/* The embedded text of tune/system.sql (NUL-terminated; *size, may be NULL, = its length without
 * the NUL), or NULL when the build has none. Static storage; never free. */
const char *tunedb_system_sql(size_t *size);

/* Closes and frees. NULL-safe. */
void tunedb_close(hot_tunedb *db);

/* The file path, or "system" for the system DB. Valid until tunedb_close. */
const char *tunedb_path(const hot_tunedb *db);

/* Looks up the row with the key of *key (only its key fields are read). Returns 1 and fills *out
 * (out may be NULL), 0 when there is none, -1 on an error (message in err). */
int tunedb_get(hot_tunedb *db, const hot_tune_row *key, hot_tune_row *out, char *err,
               size_t errlen);

/* Calls fn(row, arg) for every row, ordered by model, layer, kind, shape, base, variant, then
 * the rest of the key (a total, stable order); model/layer NULL = any. fn returning nonzero
 * stops the walk. Returns the number of rows visited, or -1 on an error (message in err). */
typedef int (*tunedb_fn)(const hot_tune_row *row, void *arg);
int64_t tunedb_foreach(hot_tunedb *db, const char *model, const char *layer, tunedb_fn fn,
                       void *arg, char *err, size_t errlen);

/* What the planner asks: the fastest usable speed variant for a layer. */
typedef struct {
  const char *arch;         /* required */
  const char *device;       /* NULL or "": rows of any device of that arch */
  const char *dtype, *recipe, *base; /* required; compared for equality */
  int64_t batch, tokens, out_features, in_features;
} hot_tune_query;

typedef struct {
  hot_tune_row row;         /* the chosen row (its `variant` holds the tiles to apply) */
  char db[512];             /* tunedb_path of the database that held it */
  int exact;                /* 1: the same shape, 0: the nearest recorded shape */
  double distance;          /* sum over T = B*L, O, I of |ln(a/b)| (0 when exact) */
  int far;                  /* 1: the nearest row is beyond HOT_TUNE_NEAR_MAX (not used) */
} hot_tune_choice;

/* The nearest-shape rule's cut-off: a row of another shape is used only when its distance
 * (above) is at most ln 8, i.e. the three ratios T/T', O/O', I/I' (each taken >= 1) multiply to at
 * most 8: T 8x off, or T, O and I each 2x off. Farther rows say nothing about the layer's tiles
 * (docs/tuning.md, "Nearest shape"). */
#define HOT_TUNE_NEAR_MAX 2.0794415416798357

/* Among rows with kind "speed", status "ok", timed 1, bitexact 1 and the query's arch, dtype,
 * recipe, base (and device when given), in the databases dbs[0..n) (NULL entries skipped):
 * the shape nearest to the query's (smallest distance), then the exact shape (same B, L, O, I)
 * before one at the same distance (same T = B*L, O, I split differently), then the earlier
 * database, then the smallest time_med_ms, then the smallest variant string (a total order: the
 * answer never depends on row order). Rows with a non-positive shape or a NAN time are skipped.
 * The chosen row is used only when its distance is at most HOT_TUNE_NEAR_MAX.
 * Returns 1 with *out filled, 0 when no row qualifies (*out zeroed; or, when the nearest row is
 * beyond the cut-off, *out holds it with far = 1, for the caller to say how far it was), -1 on an error (a NULL argument or field,
 * a non-positive query shape, a row that cannot be read; message in err naming the database;
 * callers report it and plan with the defaults). */
int tunedb_best_speed(hot_tunedb *const *dbs, int n, const hot_tune_query *q,
                      hot_tune_choice *out, char *err, size_t errlen);

#endif

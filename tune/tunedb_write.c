/* tunedb_write.c — the write side of the tuning database (tunedb_write.h), hot-tune's alone:
 * storing rows, merging shards, the integrity report. The read side (open, get, foreach, the
 * planner's best_speed) is libhot's (runtime/tunedb.c); both make their SQL from the one column
 * table of tunedb_schema.h. */
#include "tunedb_write.h"

#include <string.h>

#include "diag.h"
#include "fileio.h"
#include "hot_tunedb.h"

/* ---- statements ------------------------------------------------------------------------------ */

/* Prepares the handle's write statements once (put: INSERT OR REPLACE; merge: INSERT ... ON
 * CONFLICT DO UPDATE ... WHERE the incoming date is later). A table without the key's UNIQUE
 * constraint or a column is "not a hot tuning database of this layout". */
static rt_status prepare_writes(hot_tunedb *t, char *err, size_t errlen) {
  tunedb_sql ins = {{0}, 0, 0}; /* " INTO results(<columns>) VALUES(?, ...)" */
  tunedb_sql_add(&ins, " INTO results(");
  tunedb_sql_cols(&ins, "", 0, ", ");
  tunedb_sql_add(&ins, ") VALUES(");
  for (int i = 0; i < tunedb_ncols; i++) tunedb_sql_add(&ins, i ? ", ?" : "?");
  tunedb_sql_add(&ins, ")");
  tunedb_sql b = {{0}, 0, 0};
  tunedb_sql_add(&b, "INSERT OR REPLACE");
  tunedb_sql_add(&b, ins.s);
  if (ins.overflow || b.overflow) return tunedb_too_long(t, err, errlen);
  if (!t->put && sqlite3_prepare_v2(t->db, b.s, -1, &t->put, NULL) != SQLITE_OK)
    return tunedb_fail(t->db, t->path, "not a hot tuning database of this layout", err, errlen);

  tunedb_sql m = {{0}, 0, 0};
  tunedb_sql_add(&m, "INSERT");
  tunedb_sql_add(&m, ins.s);
  tunedb_sql_add(&m, " ON CONFLICT(");
  tunedb_sql_cols(&m, "", 1, ", ");
  tunedb_sql_add(&m, ") DO UPDATE SET ");
  int first = 1;
  for (int i = 0; i < tunedb_ncols; i++) {
    if (tunedb_cols[i].key) continue;
    if (!first) tunedb_sql_add(&m, ", ");
    tunedb_sql_add(&m, tunedb_cols[i].name);
    tunedb_sql_add(&m, " = excluded.");
    tunedb_sql_add(&m, tunedb_cols[i].name);
    first = 0;
  }
  tunedb_sql_add(&m, " WHERE excluded.date > results.date");
  if (m.overflow) return tunedb_too_long(t, err, errlen);
  if (!t->merge && sqlite3_prepare_v2(t->db, m.s, -1, &t->merge, NULL) != SQLITE_OK)
    return tunedb_fail(t->db, t->path, "not a hot tuning database of this layout", err, errlen);

  return RT_OK;
}

rt_status tunedb_open_write(hot_tunedb **out, const char *path, char *err, size_t errlen) {
  rt_status s = tunedb_open(out, path, 0, err, errlen);
  if (s != RT_OK) return s;
  s = prepare_writes(*out, err, errlen);
  if (s != RT_OK) {
    tunedb_close(*out);
    *out = NULL;
  }
  return s;
}

/* ---- rows ---------------------------------------------------------------------------------- */

rt_status tunedb_put(hot_tunedb *t, const hot_tune_row *row, char *err, size_t errlen) {
  if (!t || !row) {
    fileio_msgf(err, errlen, "tunedb_put: NULL %s", !t ? "database" : "row");
    return RT_ERR_INVALID;
  }
  if (t->read_only) {
    fileio_msgf(err, errlen, "tuning database %s: opened read-only, cannot store a row", t->path);
    return RT_ERR_INVALID;
  }
  if (tunedb_check_strings(row, 0, "tunedb_put", err, errlen) != 0) return RT_ERR_INVALID;
  rt_status ps = prepare_writes(t, err, errlen);
  if (ps != RT_OK) return ps;
  if (tunedb_exec(t->db, "BEGIN IMMEDIATE") != SQLITE_OK)
    return tunedb_fail(t->db, t->path, "cannot start a write", err, errlen);
  int rc = tunedb_bind_row(t->put, 1, row, 0);
  if (rc == SQLITE_OK) rc = sqlite3_step(t->put);
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  rt_status s = RT_OK;
  if (rc != SQLITE_OK) s = tunedb_fail(t->db, t->path, "cannot store the row", err, errlen);
  sqlite3_reset(t->put);
  sqlite3_clear_bindings(t->put);
  if (s == RT_OK && tunedb_exec(t->db, "COMMIT") != SQLITE_OK)
    s = tunedb_fail(t->db, t->path, "cannot commit the row", err, errlen);
  if (s != RT_OK) tunedb_exec(t->db, "ROLLBACK");
  return s;
}

/* ---- merge ---------------------------------------------------------------------------------- */

typedef struct {
  hot_tunedb *dst;
  int rc;
} merge_ctx;

static int merge_one(const hot_tune_row *row, void *arg) {
  merge_ctx *m = arg;
  int rc = tunedb_bind_row(m->dst->merge, 1, row, 0);
  if (rc == SQLITE_OK) rc = sqlite3_step(m->dst->merge);
  sqlite3_reset(m->dst->merge);
  sqlite3_clear_bindings(m->dst->merge);
  m->rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
  return m->rc != SQLITE_OK;
}

rt_status tunedb_merge(hot_tunedb *t, const char *in_path, int64_t *n_rows, char *err,
                       size_t errlen) {
  if (n_rows) *n_rows = 0;
  if (!t || !in_path) {
    fileio_msgf(err, errlen, "tunedb_merge: NULL %s", !t ? "database" : "input path");
    return RT_ERR_INVALID;
  }
  if (t->read_only) {
    fileio_msgf(err, errlen, "tuning database %s: opened read-only, cannot merge into it", t->path);
    return RT_ERR_INVALID;
  }
  rt_status ps = prepare_writes(t, err, errlen);
  if (ps != RT_OK) return ps;
  /* The input through its own read-only connection: the same checks as any open (ours, this
   * schema version, not corrupt), and every row is decoded before it is written. */
  hot_tunedb *src = NULL;
  rt_status s = tunedb_open(&src, in_path, 1, err, errlen);
  if (s != RT_OK) return s == RT_ERR_INVALID ? RT_ERR_IO : s;
  if (tunedb_exec(t->db, "BEGIN IMMEDIATE") != SQLITE_OK) {
    s = tunedb_fail(t->db, t->path, "cannot start a write", err, errlen);
    tunedb_close(src);
    return s;
  }
  merge_ctx m = {t, SQLITE_OK};
  tunedb_sql b = {{0}, 0, 0};
  tunedb_sql_select(&b);
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (b.overflow || sqlite3_prepare_v2(src->db, b.s, -1, &st, NULL) != SQLITE_OK)
    s = tunedb_fail(src->db, src->path, "cannot read", err, errlen);
  else
    n = tunedb_walk(src, st, merge_one, &m, err, errlen);
  sqlite3_finalize(st);
  if (s == RT_OK && n < 0) s = RT_ERR_IO;
  if (s == RT_OK && m.rc != SQLITE_OK)
    s = tunedb_fail(t->db, t->path, "cannot store a merged row", err, errlen);
  if (s == RT_OK && tunedb_exec(t->db, "COMMIT") != SQLITE_OK)
    s = tunedb_fail(t->db, t->path, "cannot commit the merge", err, errlen);
  if (s != RT_OK) tunedb_exec(t->db, "ROLLBACK");
  else if (n_rows) *n_rows = n;
  tunedb_close(src);
  return s;
}

rt_status tunedb_integrity_check(hot_tunedb *t, char *err, size_t errlen) {
  if (!t) {
    fileio_msgf(err, errlen, "tunedb_integrity_check: NULL database");
    return RT_ERR_INVALID;
  }
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(t->db, "PRAGMA integrity_check(1)", -1, &st, NULL) != SQLITE_OK)
    return tunedb_fail(t->db, t->path, "checking the file", err, errlen);
  int rc = sqlite3_step(st);
  rt_status s = RT_OK;
  if (rc != SQLITE_ROW) {
    s = tunedb_fail(t->db, t->path, "checking the file", err, errlen);
  } else {
    const unsigned char *v = sqlite3_column_text(st, 0);
    if (!v || strcmp((const char *)v, "ok") != 0) {
      fileio_msgf(err, errlen, "tuning database %s: integrity check failed: %s", t->path,
               v ? (const char *)v : "?");
      tunedb_one_line(err, errlen);
      s = RT_ERR_IO;
    }
  }
  sqlite3_finalize(st);
  if (s == RT_OK && tunedb_decode_all(t, err, errlen) != 0) s = RT_ERR_IO;
  return s;
}

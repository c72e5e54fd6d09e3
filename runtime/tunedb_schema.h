/* tunedb_schema.h — the tuning database's row and schema definitions shared by its two halves:
 * the read side in libhot (runtime/tunedb.c: open, get, foreach, best_speed; what the planner
 * uses) and the write side in hot-tune (tune/tunedb_write.c: put, merge, the integrity report).
 * The core owns it; hot-tune reaches it through the tools' door (tools/hot_tunedb.h). Only those two
 * files use it; everyone else uses tunedb.h (and tune/tunedb_write.h).
 *
 * Every SQL statement is made from one table of columns (tunedb_cols), in the order of the fields
 * of hot_tune_row, so a column can never be forgotten by one statement and not another.
 */
#ifndef HOT_TUNEDB_SCHEMA_H
#define HOT_TUNEDB_SCHEMA_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "tunedb.h"

#define TUNEDB_BUSY_TIMEOUT_MS 60000 /* writers wait this long for each other */
#define TUNEDB_SQL_MAX 4096          /* longest statement made from the column table */

/* ---- the columns ---------------------------------------------------------------------------- */
typedef enum { TUNEDB_TEXT, TUNEDB_I64, TUNEDB_INT, TUNEDB_DBL } tunedb_col_type;

typedef struct {
  const char *name;
  tunedb_col_type type;
  size_t off, size; /* offset in hot_tune_row; size of the char array (TUNEDB_TEXT) */
  int key;          /* 1: part of the row's key (UNIQUE) */
} tunedb_column;

/* In the order of hot_tune_row's fields (static storage). */
extern const tunedb_column tunedb_cols[];
extern const int tunedb_ncols;

/* ---- the handle ------------------------------------------------------------------------------ */
struct hot_tunedb {
  sqlite3 *db;
  char *path;          /* the file, or "system" */
  int read_only;
  sqlite3_stmt *get;   /* SELECT <columns> WHERE <key> (prepared at open) */
  sqlite3_stmt *put;   /* INSERT OR REPLACE: prepared by the write side, NULL before */
  sqlite3_stmt *merge; /* INSERT ... ON CONFLICT DO UPDATE ... WHERE the incoming date is later:
                          prepared by the write side, NULL before */
};

/* ---- statement text ---------------------------------------------------------------------------- */
typedef struct {
  char s[TUNEDB_SQL_MAX];
  size_t n;
  int overflow;        /* 1: something did not fit (the text is cut; do not run it) */
} tunedb_sql;

/* Appends s. */
void tunedb_sql_add(tunedb_sql *b, const char *s);
/* Appends the column names (all, or the key ones), each after `prefix`, separated by `sep`. */
void tunedb_sql_cols(tunedb_sql *b, const char *prefix, int keys_only, const char *sep);
/* Appends "SELECT <every column> FROM results". */
void tunedb_sql_select(tunedb_sql *b);

/* ---- errors ---------------------------------------------------------------------------------- */
/* Writes "tuning database <path>: <what>: <SQLite's message>" (one line) into err, or, where
 * SQLite found the file corrupt and it is an SQLite file cut short, "tuning database <path>:
 * truncated: <its size and what its header counts>"; returns RT_ERR_NOMEM for SQLite's
 * out-of-memory, else RT_ERR_IO. db may be NULL (out of memory). */
rt_status tunedb_fail(sqlite3 *db, const char *path, const char *what, char *err, size_t errlen);
/* Joins a multi-line SQLite report in err into one line. */
void tunedb_one_line(char *err, size_t errlen);
/* "a statement exceeds TUNEDB_SQL_MAX bytes" for t (RT_ERR_NOMEM). */
rt_status tunedb_too_long(const hot_tunedb *t, char *err, size_t errlen);

/* ---- rows ------------------------------------------------------------------------------------ */
/* Every string field of *r holds its NUL within its array (only the key fields when keys_only);
 * 0, or -1 with a message starting with `who`. */
int tunedb_check_strings(const hot_tune_row *r, int keys_only, const char *who, char *err,
                         size_t errlen);
/* Binds the columns of *r (all, or only the key ones) from parameter `first` on; SQLite's code. */
int tunedb_bind_row(sqlite3_stmt *st, int first, const hot_tune_row *r, int keys_only);
/* Steps st (its columns in table order) to the end, reading every row back into a
 * hot_tune_row (checked) and calling fn (NULL: only decode). Returns the rows read, or -1 with
 * a message naming t's path. fn returning nonzero stops the walk. */
int64_t tunedb_walk(hot_tunedb *t, sqlite3_stmt *st, tunedb_fn fn, void *arg, char *err,
                    size_t errlen);
/* Every row of t decodes (tunedb_walk over all of them): 0, or -1 with the message. */
int tunedb_decode_all(hot_tunedb *t, char *err, size_t errlen);
/* sqlite3_exec without callback or message. */
int tunedb_exec(sqlite3 *db, const char *sql);

#endif

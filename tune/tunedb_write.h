/* tunedb_write.h — the write side of the tuning database (runtime/tunedb.h holds the read side
 * and the row), used only by hot-tune: storing rows, merging shards into one file, the integrity
 * report of `hot-tune merge`. Built into hot-tune (library hot_tunedb_write); libhot does not
 * contain it. Rows are identified by their key (tunedb.h); a handle opened read-only (or the
 * system DB) refuses every write.
 */
#ifndef HOT_TUNEDB_WRITE_H
#define HOT_TUNEDB_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "hot_tools.h" /* tunedb.h: hot_tunedb, hot_tune_row, rt_status */

/* tunedb_open(out, path, 0, ...) (the file and its schema created when missing), then the write
 * statements prepared, so that a file whose results table has another layout is refused here
 * rather than by the first row. The caller owns *out (tunedb_close). Errors: tunedb_open's, and
 * RT_ERR_IO "not a hot tuning database of this layout" (*out = NULL). */
rt_status tunedb_open_write(hot_tunedb **out, const char *path, char *err, size_t errlen);

/* Inserts *row, replacing a row of the same key, in one transaction (waits up to 60 s for other
 * writers). RT_OK, RT_ERR_INVALID (a NULL argument, a read-only DB, a string without its NUL),
 * RT_ERR_IO (SQLite's message, with the path). */
rt_status tunedb_put(hot_tunedb *db, const hot_tune_row *row, char *err, size_t errlen);

/* Copies every row of the database file `in_path` into db (one transaction; for equal keys the
 * row with the later date wins, the one already in db at equal dates). *n_rows (may be NULL) =
 * rows read. RT_OK, RT_ERR_IO (in_path cannot be read, is corrupt or of another schema: db is
 * unchanged), RT_ERR_INVALID. */
rt_status tunedb_merge(hot_tunedb *db, const char *in_path, int64_t *n_rows, char *err,
                       size_t errlen);

/* SQLite's full integrity check of the database, then every row read back into hot_tune_row.
 * RT_OK, RT_ERR_IO (one line naming the path and the first problem), RT_ERR_INVALID (NULL). */
rt_status tunedb_integrity_check(hot_tunedb *db, char *err, size_t errlen);

#endif

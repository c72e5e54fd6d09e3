/* test_reliability.c — what docs/reliability.md promises, entry point by entry point of libhot:
 * special files are refused without blocking (fileio, the tuning database and its companions,
 * packs, captures, cache entries), a database with a hot journal is never read as committed,
 * messages name the value and the limit and are cut at a word, every output format escapes what
 * it prints, and the nearest-shape rule has a cut-off. Every call that could block runs under
 * alarm(): a hang fails the test instead of stalling the suite. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache_file.h"
#include "diag.h"
#include "hot.h"
#include "capture.h"
#include "escape.h"
#include "fileio.h"
#include "pack.h"
#include "runtime/rt_util.h"
#include "tunedb.h"
#include "tunedb_write.h"

static char g_dir[256];
static void setup(void) {
  ck_assert_ptr_nonnull(tmp_dir(g_dir));
  alarm(60); /* a blocked open ends the test (SIGALRM) instead of hanging the suite */
}
static void teardown(void) {
  alarm(0);
  rm_tree(g_dir);
}
static const char *in_dir(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", g_dir, name);
  return buf;
}
static void fifo(const char *path) { ck_assert_int_eq(mkfifo(path, 0600), 0); }

/* ---- 1. special files ------------------------------------------------------------------------ */

START_TEST(fileio_regular_only) {
  char f[400], d[400], r[400], l[400], why[128];
  fifo(in_dir(f, sizeof f, "fifo"));
  ck_assert_int_eq(mkdir(in_dir(d, sizeof d, "dir"), 0700), 0);
  FILE *w = fopen(in_dir(r, sizeof r, "reg"), "w");
  fputs("x", w);
  fclose(w);
  ck_assert_int_eq(symlink(r, in_dir(l, sizeof l, "link")), 0);
  const int how[] = {HOT_FILE_READ, HOT_FILE_WRITE, HOT_FILE_WRITE_NEW};
  for (int i = 0; i < 3; ++i) {
    ck_assert_int_eq(fileio_open(f, how[i], 0600, why, sizeof why), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(why, "not a regular file (a FIFO)");
    ck_assert_int_eq(fileio_open(d, how[i], 0600, why, sizeof why), -1);
    ck_assert_str_eq(why, "not a regular file (a directory)");
    ck_assert_int_eq(fileio_open("/dev/null", how[i], 0600, why, sizeof why), -1);
    ck_assert_str_eq(why, "not a regular file (a character device)");
  }
  int fd = fileio_open(r, HOT_FILE_READ, 0, why, sizeof why);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* blocking I/O once checked */
  close(fd);
  fd = fileio_open(l, HOT_FILE_READ | HOT_FILE_NOFOLLOW, 0, why, sizeof why);
  ck_assert_int_eq(fd, -1);
  ck_assert_str_eq(why, "not a regular file (a symbolic link)");
  ck_assert_ptr_null(fileio_fopen(f, "rb", why, sizeof why));
  ck_assert_ptr_null(fileio_fopen(f, "wb", why, sizeof why));
  ck_assert_int_eq(fileio_check_regular(f, 0, why, sizeof why), -1);
  ck_assert_int_eq(fileio_check_regular(r, 1, why, sizeof why), 0);
  char m[400];
  ck_assert_int_eq(fileio_check_regular(in_dir(m, sizeof m, "missing"), 0, why, sizeof why), 0);
  ck_assert_int_eq(fileio_check_regular(m, 1, why, sizeof why), -1);
}
END_TEST

/* Streams and outputs (fileio.h): a spec may be a pipe or "-" (read once, blocking only until the
 * writer writes); a directory is not a stream; an output in a missing folder fails its check and
 * fileio_mkdir_last never creates more than the last component. */
START_TEST(fileio_streams_and_outputs) {
  char f[400], d[400], why[256], o[400];
  fifo(in_dir(f, sizeof f, "spec.fifo"));
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) { /* the writer, after a pause: the reader waits for it, as cat does */
    usleep(200000);
    int fd = open(f, O_WRONLY);
    const char text[] = "return 1\n";
    _exit(fd >= 0 && write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1) ? 0 : 1);
  }
  FILE *s = fileio_fopen_stream(f, why, sizeof why);
  ck_assert_msg(s != NULL, "%s", why);
  char buf[64] = "";
  ck_assert_uint_eq(fread(buf, 1, sizeof buf - 1, s), 9);
  ck_assert_str_eq(buf, "return 1\n");
  fclose(s);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_ptr_null(fileio_fopen_stream(g_dir, why, sizeof why));
  ck_assert_str_eq(why, "not a stream (a directory)");
  s = fileio_fopen_stream("-", why, sizeof why); /* stdin, through a copy */
  ck_assert_ptr_nonnull(s);
  fclose(s);
  ck_assert_int_ne(fcntl(0, F_GETFD), -1); /* stdin itself still open */
  /* outputs */
  in_dir(d, sizeof d, "missing/deeper");
  ck_assert_int_eq(fileio_check_output(d, 1, why, sizeof why), -1);
  ck_assert_int_eq(fileio_mkdir_last(d, why, sizeof why), -1);
  ck_assert_int_ne(access(in_dir(o, sizeof o, "missing"), F_OK), 0); /* nothing created */
  ck_assert_int_eq(fileio_check_output(in_dir(o, sizeof o, "missing/out.json"), 0, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "missing"));
  ck_assert_int_eq(fileio_check_output(f, 0, why, sizeof why), -1); /* a FIFO is no output */
  ck_assert_str_eq(why, "not a regular file (a FIFO)");
  ck_assert_int_eq(fileio_mkdir_last(in_dir(d, sizeof d, "made"), why, sizeof why), 0);
  ck_assert_int_eq(fileio_check_output(in_dir(o, sizeof o, "made/out.json"), 0, why, sizeof why), 0);
}
END_TEST

/* libhot's hot_errmsg within the one bound of every message (diag.h): a spec of 50 000 layers and
 * a layer it lacks, named with a 100 000-byte name; a spec read from a FIFO. */
static const char *nth_name(const void *ctx, int i) {
  (void)ctx;
  static char b[32];
  snprintf(b, sizeof b, "n%d", i);
  return b;
}

START_TEST(errmsg_bounded) {
  char path[400];
  FILE *w = fopen(in_dir(path, sizeof path, "big.lua"), "w");
  fputs("local hot = require \"hot\"\nlocal L = {}\nfor i = 1, 50000 do L[i] = hot.linear { name = "
        "string.format(\"layer_%06d\", i), in_features = 64, out_features = 64 } end\nreturn "
        "hot.model { name = \"big\", batch = 1, tokens = 16, recipe = hot.recipe.hot, target = "
        "hot.target { arch = \"sm_90\" }, layers = L }\n", w);
  fclose(w);
  alarm(300);
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_layer *l = NULL;
  char *name = malloc(100001);
  memset(name, 'q', 100000);
  name[100000] = '\0';
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "nope", 0, &l), HOT_ERR_NOT_FOUND);
  ck_assert_uint_lt(strlen(hot_errmsg(ctx)), HOT_MSG_MAX);
  ck_assert_msg(strstr(hot_errmsg(ctx), "layer_000008, ... and 49992 more"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, name, 0, &l), HOT_ERR_NOT_FOUND);
  ck_assert_uint_lt(strlen(hot_errmsg(ctx)), HOT_MSG_MAX);
  free(name);
  hot_ctx_destroy(ctx);
  /* diag_names: at most HOT_MSG_NAMES names, cut at a word in a small buffer */
  char b[HOT_MSG_MAX], small[40];
  ck_assert_str_eq(diag_names(b, sizeof b, 10, nth_name, NULL), "n0, n1, n2, n3, n4, n5, n6, n7, ... and 2 more");
  ck_assert_str_eq(diag_names(b, sizeof b, 0, nth_name, NULL), "none");
  diag_names(small, sizeof small, 10, nth_name, NULL);
  ck_assert_uint_lt(strlen(small), sizeof small);
  ck_assert_ptr_nonnull(strstr(small, "..."));
}
END_TEST

/* A tuning database of n speed rows (variant "v<i>", shape 8x512x3072x768). */
static void make_db(const char *path, int n) {
  hot_tunedb *t = NULL;
  char err[700];
  ck_assert_msg(tunedb_open_write(&t, path, err, sizeof err) == RT_OK, "%s", err);
  for (int i = 0; i < n; ++i) {
    hot_tune_row r;
    tunedb_row_init(&r);
    snprintf(r.arch, sizeof r.arch, "sm_90");
    snprintf(r.dtype, sizeof r.dtype, "f32");
    snprintf(r.recipe, sizeof r.recipe, "hot");
    snprintf(r.base, sizeof r.base, "b");
    snprintf(r.kind, sizeof r.kind, "speed");
    snprintf(r.status, sizeof r.status, "ok");
    snprintf(r.variant, sizeof r.variant, "v%d", i);
    snprintf(r.date, sizeof r.date, "2026-01-01T00:00:00Z");
    r.batch = 8, r.tokens = 512, r.out_features = 3072, r.in_features = 768;
    r.timed = 1, r.bitexact = 1, r.time_med_ms = 1.0 + i;
    ck_assert_msg(tunedb_put(t, &r, err, sizeof err) == RT_OK, "%s", err);
  }
  tunedb_close(t);
}

/* Counts the rows; the count goes negative when a row holds the uncommitted variant. */
static int count_one(const hot_tune_row *r, void *arg) {
  *(int *)arg += strcmp(r->variant, "uncommitted") ? 1 : -1000;
  return 0;
}

START_TEST(tunedb_special_files) {
  char p[400], err[700];
  hot_tunedb *t = NULL;
  /* the database itself, read-only and read-write */
  fifo(in_dir(p, sizeof p, "fifo.db"));
  for (int ro = 0; ro < 2; ++ro) {
    ck_assert_int_eq(tunedb_open(&t, p, ro, err, sizeof err), RT_ERR_IO);
    ck_assert_msg(strstr(err, p) && strstr(err, "not a regular file (a FIFO)"), "%s", err);
  }
  /* each companion SQLite opens beside it */
  const char *sfx[] = {"-wal", "-journal", "-shm"};
  for (int i = 0; i < 3; ++i) {
    char db[400], c[420];
    snprintf(db, sizeof db, "%s/c%d.db", g_dir, i);
    make_db(db, 1);
    snprintf(c, sizeof c, "%s%s", db, sfx[i]);
    unlink(c);
    fifo(c);
    for (int ro = 0; ro < 2; ++ro) {
      ck_assert_int_eq(tunedb_open(&t, db, ro, err, sizeof err), RT_ERR_IO);
      ck_assert_msg(strstr(err, c) && strstr(err, "(a FIFO)"), "%s", err);
    }
    /* merge: an input with a FIFO companion is refused, the output stays as it was */
    char out[400];
    snprintf(out, sizeof out, "%s/out%d.db", g_dir, i);
    hot_tunedb *o = NULL;
    ck_assert_msg(tunedb_open_write(&o, out, err, sizeof err) == RT_OK, "%s", err);
    int64_t n = -1;
    ck_assert_int_eq(tunedb_merge(o, db, &n, err, sizeof err), RT_ERR_IO);
    tunedb_close(o);
  }
}
END_TEST

/* Copies a.db into b.db with a hot journal: a transaction that changed pages of the file (cache
 * spilled) is caught before its rollback; the copy's journal is hot (no process holds it). */
static void hot_journal_copy(const char *a, const char *b) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(a, &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA cache_size=1; BEGIN;"
                                    "UPDATE results SET time_med_ms = 0.001, variant = 'uncommitted'"
                                    " WHERE variant = 'v0';"
                                    "CREATE TABLE pad(x);", NULL, NULL, NULL), SQLITE_OK);
  for (int i = 0; i < 60; ++i)
    ck_assert_int_eq(sqlite3_exec(db, "INSERT INTO pad VALUES(randomblob(3000))", NULL, NULL, NULL),
                     SQLITE_OK);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s-journal' '%s-journal'", a, b, a, b);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_int_eq(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

START_TEST(tunedb_hot_journal) {
  char a[400], b[400], err[700];
  make_db(in_dir(a, sizeof a, "a.db"), 3);
  hot_journal_copy(a, in_dir(b, sizeof b, "b.db"));
  struct stat sb;
  char j[420];
  snprintf(j, sizeof j, "%s-journal", b);
  ck_assert_int_eq(stat(j, &sb), 0);
  ck_assert_int_gt(sb.st_size, 0);
  /* a reader refuses: never the uncommitted pages, never a write */
  hot_tunedb *t = NULL;
  ck_assert_int_eq(tunedb_open(&t, b, 1, err, sizeof err), RT_ERR_IO);
  ck_assert_msg(strstr(err, "hot journal") && strstr(err, "open it once read-write to roll back"),
                "%s", err);
  ck_assert_int_eq(stat(j, &sb), 0); /* untouched */
  /* merge refuses it as an input */
  char o[400];
  hot_tunedb *out = NULL;
  ck_assert(tunedb_open_write(&out, in_dir(o, sizeof o, "o.db"), err, sizeof err) == RT_OK);
  int64_t n = -1;
  ck_assert_int_eq(tunedb_merge(out, b, &n, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "hot journal"));
  tunedb_close(out);
  /* a read-write open rolls back (SQLite's own recovery): the committed rows, none other */
  ck_assert_msg(tunedb_open(&t, b, 0, err, sizeof err) == RT_OK, "%s", err);
  int rows = 0;
  ck_assert_int_eq(tunedb_foreach(t, NULL, NULL, count_one, &rows, err, sizeof err), 3);
  ck_assert_int_eq(rows, 3);
  tunedb_close(t);
  ck_assert_msg(tunedb_open(&t, b, 1, err, sizeof err) == RT_OK, "%s", err);
  tunedb_close(t);
}
END_TEST

/* ---- 3. messages ----------------------------------------------------------------------------- */

START_TEST(messages_name_value_and_limit) {
  char p[400], err[700];
  make_db(in_dir(p, sizeof p, "s.db"), 1);
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(db, "UPDATE meta SET value = '1' WHERE key = 'schema'", NULL, NULL,
                                NULL), SQLITE_OK);
  sqlite3_close(db);
  hot_tunedb *t = NULL;
  ck_assert_int_eq(tunedb_open(&t, p, 1, err, sizeof err), RT_ERR_IO);
  ck_assert_msg(strstr(err, "schema version \"1\" (stored as text, not as an integer), this hot "
                            "reads version 1"), "%s", err);
  /* a path longer than SQLite opens: the length and the limit */
  char lp[1200];
  int n = snprintf(lp, sizeof lp, "%s/", g_dir);
  for (int i = 0; i < 6; ++i) n += snprintf(lp + n, sizeof lp - (size_t)n, "%0100d/", i);
  snprintf(lp + n, sizeof lp - (size_t)n, "tune.db");
  ck_assert_int_eq(tunedb_open(&t, lp, 1, err, sizeof err), RT_ERR_IO);
  char want[120];
  snprintf(want, sizeof want, "the path is %zu bytes long; SQLite opens paths of at most 512 bytes",
           strlen(lp));
  ck_assert_msg(strstr(err, want), "%s", err);
  /* a message cut to its buffer ends at a word with "..." */
  char small[60];
  ck_assert_int_eq(tunedb_open(&t, lp, 1, small, sizeof small), RT_ERR_IO);
  size_t sl = strlen(small);
  ck_assert_msg(sl >= 3 && !strcmp(small + sl - 3, "..."), "%s", small);
  char cut[24];
  fileio_msgf(cut, sizeof cut, "alpha beta gamma delta epsilon");
  ck_assert_str_eq(cut, "alpha beta gamma...");
  fileio_msgf(cut, sizeof cut, "%s", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
  ck_assert_str_eq(cut, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9..."); /* 10 whole characters */
  fileio_msgf(cut, sizeof cut, "short");
  ck_assert_str_eq(cut, "short");
  char sh[40];
  ck_assert_uint_le(strlen(fileio_path_short(lp, sh, 39)), 39);
  ck_assert_ptr_nonnull(strstr(sh, "..."));
}
END_TEST

/* ---- 4. escaping ----------------------------------------------------------------------------- */

static const char *const k_hostile[] = {
    "plain", "tab\there", "new\nline", "quote\"back\\slash'", "\x01\x1f\x7f", "bad\xff\xfe",
    "\xc3\xa9 valid \xe2\x82\xac \xf0\x9f\x98\x80", "over\xc0\xaflong", "sur\xed\xa0\x80rogate",
    "cut\xe2\x82", "<a&b>", "",
};
enum { K_HOSTILE = sizeof k_hostile / sizeof k_hostile[0] };

/* Every byte of s is printable ASCII or part of valid UTF-8 (no control character). */
static int clean_utf8(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int k = esc_utf8_len(p);
    if (!k || *p < 0x20 || *p == 0x7f) return 0;
    p += k;
  }
  return 1;
}

START_TEST(escaping_every_format) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  for (int i = 0; i < K_HOSTILE; ++i) {
    const char *s = k_hostile[i];
    hot_buf j = {0}, x = {0}, q = {0}, t = {0};
    esc_json(&j, s);
    esc_xml(&x, s);
    esc_sql(&q, s);
    esc_text(&t, s);
    ck_assert(buf_ok(&j) && buf_ok(&x) && buf_ok(&q) && buf_ok(&t));
    ck_assert_msg(clean_utf8(j.data) && j.data[0] == '"', "json %d: %s", i, j.data);
    ck_assert_msg(clean_utf8(x.data ? x.data : "") && !strpbrk(x.data ? x.data : "", "<>\"'"),
                  "xml %d", i);
    ck_assert_msg(!strpbrk(t.data ? t.data : "", "\t\n\r"), "text %d", i);
    ck_assert_msg(clean_utf8(t.data ? t.data : ""), "text %d", i);
    /* SQL: the expression reads back byte for byte, and calls no function */
    char sql[2048];
    snprintf(sql, sizeof sql, "SELECT %s", q.data);
    ck_assert_ptr_null(strstr(q.data, "char("));
    sqlite3_stmt *st = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sql);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_type(st, 0), SQLITE_TEXT);
    ck_assert_int_eq(sqlite3_column_bytes(st, 0), (int)strlen(s));
    ck_assert_int_eq(memcmp(sqlite3_column_text(st, 0), s, strlen(s)), 0);
    sqlite3_finalize(st);
    buf_free(&j), buf_free(&x), buf_free(&q), buf_free(&t);
  }
  sqlite3_close(db);
  hot_buf b = {0};
  esc_json(&b, "a\"\\\n\x01\xff");
  ck_assert_str_eq(b.data, "\"a\\\"\\\\\\n\\u0001\\ufffd\"");
  buf_free(&b);
  esc_text(&b, "a\tb\nc\\\x01\xff");
  ck_assert_str_eq(b.data, "a\\tb\\nc\\\\\\x01\\xFF");
  buf_free(&b);
}
END_TEST

/* ---- 8. the nearest-shape cut-off -------------------------------------------------------------- */

START_TEST(nearest_cut_off) {
  char p[400], err[700];
  make_db(in_dir(p, sizeof p, "n.db"), 1); /* one row at 8x512x3072x768 */
  hot_tunedb *t = NULL;
  ck_assert(tunedb_open(&t, p, 1, err, sizeof err) == RT_OK);
  hot_tune_query q = {"sm_90", NULL, "f32", "hot", "b", 8, 512, 3072, 768};
  hot_tune_choice c;
  ck_assert_int_eq(tunedb_best_speed(&t, 1, &q, &c, err, sizeof err), 1);
  ck_assert_int_eq(c.exact, 1);
  q.tokens = 64; /* T 8x smaller: distance ln 8, the limit itself */
  ck_assert_int_eq(tunedb_best_speed(&t, 1, &q, &c, err, sizeof err), 1);
  ck_assert_double_eq_tol(c.distance, log(8.0), 1e-12);
  q.tokens = 32; /* 16x: beyond */
  ck_assert_int_eq(tunedb_best_speed(&t, 1, &q, &c, err, sizeof err), 0);
  ck_assert_int_eq(c.far, 1);
  ck_assert_str_eq(c.row.variant, "v0");
  ck_assert_double_eq_tol(c.distance, log(16.0), 1e-12);
  q.tokens = 512, q.batch = (int64_t)1 << 40; /* the 2^62-style shape: far, never used */
  ck_assert_int_eq(tunedb_best_speed(&t, 1, &q, &c, err, sizeof err), 0);
  ck_assert_int_eq(c.far, 1);
  tunedb_close(t);
}
END_TEST

/* ---- packs, captures, cache entries ---------------------------------------------------------- */

START_TEST(other_files_special) {
  char p[400], err[700];
  fifo(in_dir(p, sizeof p, "x.fifo"));
  hot_pack *pk = NULL;
  ck_assert_int_eq(pack_load(p, &pk, err, sizeof err), RT_ERR_IO);
  ck_assert_msg(strstr(err, p) && strstr(err, "(a FIFO)"), "%s", err);
  ck_assert_int_eq(pack_write(p, NULL, 0, err, sizeof err), RT_ERR_IO);
  ck_assert_msg(strstr(err, "(a FIFO)"), "%s", err);
  hot_capture cap;
  ck_assert_int_eq(capture_read(p, &cap, err, sizeof err), HOT_ERR_IO);
  ck_assert_msg(strstr(err, "(a FIFO)"), "%s", err);
  float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 2, 3, 4, 5, 6}, gy[4] = {1, 2, 3, 4};
  ck_assert_int_eq(hot_capture_write(p, "fc", 1, 2, 2, 3, HOT_DT_F32, x, w, gy, err, sizeof err),
                   HOT_ERR_IO);
  ck_assert_msg(strstr(err, "(a FIFO)"), "%s", err);
  unsigned char h[HASH_SHA256_BYTES] = {0};
  hot_compile_result res;
  ck_assert_int_eq(cache_file_read(p, h, "v", NULL, &res), CF_REJECT); /* a miss, never a wait */
}
END_TEST

int main(void) {
  Suite *s = suite_create("reliability");
  TCase *tc = tcase_create("reliability");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, fileio_regular_only);
  tcase_add_test(tc, fileio_streams_and_outputs);
  tcase_add_test(tc, errmsg_bounded);
  tcase_add_test(tc, tunedb_special_files);
  tcase_add_test(tc, tunedb_hot_journal);
  tcase_add_test(tc, messages_name_value_and_limit);
  tcase_add_test(tc, escaping_every_format);
  tcase_add_test(tc, nearest_cut_off);
  tcase_add_test(tc, other_files_special);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

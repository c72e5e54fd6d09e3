/* test_tunedb.c — the tuning database (runtime/tunedb.h): every field through a round trip, keys
 * and replacement, the walk order, merge, the planner's lookup and its tie-breaks, broken files of
 * every kind (RT_ERR_IO naming the path, never a crash; a file cut short said to be truncated),
 * concurrent writer processes and a writer killed mid-run, the embedded system DB. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_util.h"
#include "tunedb.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static char g_dir[256];

static void setup(void) { ck_assert_ptr_nonnull(tmp_dir(g_dir)); }
static void teardown(void) { rm_tree(g_dir); }

static const char *in_dir(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", g_dir, name);
  return buf;
}

/* "<tag>-<i>-" then, when full, letters up to the field's last byte (the NUL). */
static void fill(char *dst, size_t size, const char *tag, int i, int full) {
  snprintf(dst, size, "%s-%d-", tag, i);
  if (!full) return;
  size_t n = strlen(dst);
  for (size_t k = n; k + 1 < size; k++) dst[k] = (char)('a' + (k * 7 + (size_t)i) % 26);
  dst[size - 1] = '\0';
}

#define FILLS(r, f, i, full) fill((r)->f, sizeof (r)->f, #f, i, full)

/* A row whose every field is a function of i (batch = i + 1 identifies it). */
static void make_row(hot_tune_row *r, int i, int full) {
  tunedb_row_init(r);
  FILLS(r, device, i, full);
  snprintf(r->arch, sizeof r->arch, "sm_%d", 80 + i % 11);
  FILLS(r, driver, i, full);
  FILLS(r, nvrtc, i, full);
  FILLS(r, hot_version, i, full);
  r->batch = i + 1;
  r->tokens = 3 * (int64_t)i + 7;
  r->out_features = ((int64_t)1 << 40) + i; /* beyond 32 bits */
  r->in_features = 64 + i;
  snprintf(r->dtype, sizeof r->dtype, "%s", i % 3 == 0 ? "f32" : i % 3 == 1 ? "bf16" : "f16");
  FILLS(r, recipe, i, full);
  FILLS(r, base, i, full);
  snprintf(r->kind, sizeof r->kind, "%s", i % 2 ? "accuracy" : "speed");
  FILLS(r, variant, i, full);
  FILLS(r, model, i, full);
  FILLS(r, layer, i, full);
  FILLS(r, config, i, full);
  FILLS(r, status, i, full);
  FILLS(r, note, i, full);
  r->timed = i % 2;
  r->time_med_ms = 1.0 + i / 3.0;
  r->time_p10_ms = i % 5 == 1 ? INFINITY : 0.1 * i;
  r->time_p90_ms = i % 4 == 0 ? NAN : 2.0 + i / 7.0;
  r->time_min_ms = -0.0;
  r->repeats = 100 + i;
  r->bitexact = i % 3 - 1;       /* -1, 0, 1 */
  r->regs = i % 5 == 0 ? -1 : 128 + i;
  r->spills = i % 7 == 0 ? -1 : i;
  r->smem_bytes = i % 2 ? -1 : 49152 + i;
  r->occupancy = i % 3 ? 0.25 * (i % 4) : -1.0;
  for (int d = 0; d < HOT_TUNE_DATA_COUNT; d++) {
    r->gx_err[d] = (i + d) % 3 == 0 ? NAN : 1e-3 / (1 + i + d);
    r->gw_err[d] = (i + d) % 4 == 0 ? NAN : 3.5e-7 * (1 + i + d);
  }
  FILLS(r, capture, i, full);
  r->saved_bytes = i % 2 ? -1 : ((int64_t)3 << 33) + i;
  snprintf(r->date, sizeof r->date, "2026-11-%02dT12:00:%02dZ", 1 + i % 28, i % 60);
}

/* Equal values, NAN equal to NAN (stored as NULL), infinities kept; -0.0 reads back as 0.0
 * (SQLite stores a zero REAL as the integer 0), as tunedb.h says. */
static int same_double(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == 0.0) return b == 0.0 && !signbit(b);
  return memcmp(&a, &b, sizeof a) == 0;
}

#define EQ_S(f) ck_assert_msg(strcmp(a->f, b->f) == 0, "field " #f ": '%s' != '%s'", a->f, b->f)
#define EQ_I(f) ck_assert_msg(a->f == b->f, "field " #f ": %lld != %lld", (long long)a->f, (long long)b->f)
#define EQ_D(f) ck_assert_msg(same_double(a->f, b->f), "field " #f ": %.17g != %.17g", a->f, b->f)

static void assert_rows_equal(const hot_tune_row *a, const hot_tune_row *b) {
  EQ_S(device); EQ_S(arch); EQ_S(driver); EQ_S(nvrtc); EQ_S(hot_version);
  EQ_I(batch); EQ_I(tokens); EQ_I(out_features); EQ_I(in_features);
  EQ_S(dtype); EQ_S(recipe); EQ_S(base); EQ_S(kind); EQ_S(variant);
  EQ_S(model); EQ_S(layer); EQ_S(config); EQ_S(status); EQ_S(note);
  EQ_I(timed); EQ_D(time_med_ms); EQ_D(time_p10_ms); EQ_D(time_p90_ms); EQ_D(time_min_ms);
  EQ_I(repeats); EQ_I(bitexact); EQ_I(regs); EQ_I(spills); EQ_I(smem_bytes); EQ_D(occupancy);
  for (int d = 0; d < HOT_TUNE_DATA_COUNT; d++) {
    EQ_D(gx_err[d]);
    EQ_D(gw_err[d]);
  }
  EQ_S(capture); EQ_I(saved_bytes); EQ_S(date);
}

static hot_tunedb *open_ok(const char *path, int ro) {
  char err[1024];
  hot_tunedb *db = NULL;
  rt_status s = tunedb_open(&db, path, ro, err, sizeof err);
  ck_assert_msg(s == RT_OK, "open %s: %s", path, err);
  ck_assert_ptr_nonnull(db);
  return db;
}

static void put_ok(hot_tunedb *db, const hot_tune_row *r) {
  char err[1024];
  rt_status s = tunedb_put(db, r, err, sizeof err);
  ck_assert_msg(s == RT_OK, "put: %s", err);
}

static int count_fn(const hot_tune_row *r, void *arg) {
  (void)r;
  ++*(int64_t *)arg;
  return 0;
}

static int64_t count_rows(hot_tunedb *db) {
  char err[1024];
  int64_t seen = 0;
  int64_t n = tunedb_foreach(db, NULL, NULL, count_fn, &seen, err, sizeof err);
  ck_assert_msg(n >= 0, "foreach: %s", err);
  ck_assert_int_eq(n, seen);
  return n;
}

/* Runs SQL on the file with SQLite directly (to build broken or foreign files). */
static void raw_sql(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
  sqlite3_close(db);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
  buf[len] = '\0';
  fclose(f);
  *n = (size_t)len;
  return buf;
}

/* ---- rows ----------------------------------------------------------------------------------- */

START_TEST(round_trip_every_field) {
  char path[512], err[1024];
  hot_tunedb *db = open_ok(in_dir(path, sizeof path, "rt.db"), 0);
  ck_assert_str_eq(tunedb_path(db), path);
  enum { N = 24 };
  hot_tune_row rows[N], got;
  for (int i = 0; i < N; i++) {
    make_row(&rows[i], i, i % 2); /* odd rows: every string at its field's limit */
    put_ok(db, &rows[i]);
  }
  /* the init values themselves: NAN errors, -1 fields, empty strings (one unique key) */
  hot_tune_row empty;
  tunedb_row_init(&empty);
  ck_assert(isnan(empty.gx_err[HOT_TUNE_CAPTURE]) && isnan(empty.gw_err[HOT_TUNE_GAUSS]));
  ck_assert_int_eq(empty.bitexact, -1);
  ck_assert_int_eq(empty.saved_bytes, -1);
  ck_assert(empty.occupancy < 0);
  put_ok(db, &empty);
  tunedb_close(db);

  db = open_ok(path, 1); /* read back through a new (read-only) connection */
  for (int i = 0; i < N; i++) {
    memset(&got, 0x5a, sizeof got);
    ck_assert_int_eq(tunedb_get(db, &rows[i], &got, err, sizeof err), 1);
    assert_rows_equal(&rows[i], &got);
    if (i % 2) ck_assert_uint_eq(strlen(got.variant), HOT_TUNE_TEXT - 1);
  }
  ck_assert_int_eq(tunedb_get(db, &empty, &got, err, sizeof err), 1);
  assert_rows_equal(&empty, &got);
  ck_assert_int_eq(count_rows(db), N + 1);
  tunedb_close(db);
}
END_TEST

START_TEST(string_without_nul_refused) {
  char path[512], err[1024];
  hot_tunedb *db = open_ok(in_dir(path, sizeof path, "nul.db"), 0);
  hot_tune_row r;
  /* every string field, one at a time, filled to its last byte without a NUL */
  struct { const char *name; size_t off, size; } f[] = {
#define F(x) {#x, offsetof(hot_tune_row, x), sizeof(((hot_tune_row *)0)->x)}
    F(device), F(arch), F(driver), F(nvrtc), F(hot_version), F(dtype), F(recipe), F(base),
    F(kind), F(variant), F(model), F(layer), F(config), F(status), F(note), F(capture), F(date),
#undef F
  };
  for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
    make_row(&r, 1, 0);
    memset((char *)&r + f[k].off, 'x', f[k].size);
    err[0] = '\0';
    ck_assert_int_eq(tunedb_put(db, &r, err, sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strstr(err, f[k].name) != NULL, "message does not name %s: %s", f[k].name, err);
  }
  ck_assert_int_eq(count_rows(db), 0);
  /* a key without its NUL in a lookup */
  make_row(&r, 1, 0);
  memset(r.variant, 'v', sizeof r.variant);
  ck_assert_int_eq(tunedb_get(db, &r, NULL, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "variant"));
  /* NULL arguments */
  ck_assert_int_eq(tunedb_put(NULL, &r, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(tunedb_put(db, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(tunedb_get(db, NULL, NULL, err, sizeof err), -1);
  ck_assert_int_eq(tunedb_open(NULL, path, 0, err, sizeof err), RT_ERR_INVALID);
  hot_tunedb *x = (hot_tunedb *)&r;
  ck_assert_int_eq(tunedb_open(&x, NULL, 0, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_null(x);
  ck_assert_int_eq(tunedb_foreach(db, NULL, NULL, NULL, NULL, err, sizeof err), -1);
  tunedb_close(NULL);
  ck_assert_ptr_null(tunedb_path(NULL));
  tunedb_close(db);
}
END_TEST

/* A stored string longer than its field (written by another program) is an error on reading,
 * never a silent cut: get, foreach, the lookup, the integrity check and a merge from it. */
START_TEST(overlong_string_in_file_is_an_error) {
  char path[512], dst_path[512], err[1024];
  hot_tunedb *db = open_ok(in_dir(path, sizeof path, "long.db"), 0);
  hot_tune_row r, got;
  make_row(&r, 2, 0); /* kind speed */
  snprintf(r.status, sizeof r.status, "ok");
  r.timed = 1;
  r.bitexact = 1;
  put_ok(db, &r);
  tunedb_close(db);
  char sql[512];
  snprintf(sql, sizeof sql, "UPDATE results SET device = device || '%0128d'", 0);
  raw_sql(path, sql);
  db = open_ok(path, 0);
  hot_tune_row key = r;
  snprintf(key.device, sizeof key.device, "%s", r.device);
  /* the stored key no longer equals r's; find it through foreach */
  ck_assert_int_eq(tunedb_foreach(db, NULL, NULL, count_fn, &(int64_t){0}, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "device"));
  ck_assert_ptr_nonnull(strstr(err, path));
  ck_assert_int_eq(tunedb_integrity_check(db, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "device"));
  hot_tune_query q = {r.arch, NULL, r.dtype, r.recipe, r.base, r.batch, r.tokens,
                      r.out_features, r.in_features};
  hot_tune_choice ch;
  hot_tunedb *dbs[] = {db};
  ck_assert_int_eq(tunedb_best_speed(dbs, 1, &q, &ch, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, path));
  tunedb_close(db);
  /* get: a too long value in a non-key field */
  raw_sql(path, "UPDATE results SET device = 'd'");
  char sql2[1200];
  snprintf(sql2, sizeof sql2, "UPDATE results SET note = '%0300d'", 0);
  raw_sql(path, sql2);
  db = open_ok(path, 1);
  snprintf(key.device, sizeof key.device, "d");
  ck_assert_int_eq(tunedb_get(db, &key, &got, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "note"));
  tunedb_close(db);
  /* merge from it: the destination is left as it was, also when good rows came first (the bad
   * row is the last one stored, so the merge has written the others when it meets it) */
  raw_sql(path, "DELETE FROM results");
  db = open_ok(path, 0);
  for (int i = 20; i < 23; i++) {
    hot_tune_row g;
    make_row(&g, i, 0);
    put_ok(db, &g);
  }
  put_ok(db, &key);
  tunedb_close(db);
  snprintf(sql2, sizeof sql2, "UPDATE results SET note = '%0300d' WHERE device = 'd'", 0);
  raw_sql(path, sql2);
  hot_tunedb *dst = open_ok(in_dir(dst_path, sizeof dst_path, "dst.db"), 0);
  hot_tune_row other;
  make_row(&other, 5, 0);
  put_ok(dst, &other);
  int64_t n = 77;
  ck_assert_int_eq(tunedb_merge(dst, path, &n, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "note"));
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(count_rows(dst), 1);
  tunedb_close(dst);
}
END_TEST

START_TEST(replace_on_equal_key_get_has) {
  char path[512], err[1024];
  hot_tunedb *db = open_ok(in_dir(path, sizeof path, "key.db"), 0);
  hot_tune_row a, b, got;
  make_row(&a, 3, 0);
  put_ok(db, &a);
  /* same key, every value field different: replaced */
  make_row(&b, 4, 0);
  hot_tune_row c = a;
  memcpy(c.model, b.model, sizeof c.model);
  memcpy(c.layer, b.layer, sizeof c.layer);
  memcpy(c.config, b.config, sizeof c.config);
  memcpy(c.status, b.status, sizeof c.status);
  memcpy(c.note, b.note, sizeof c.note);
  c.timed = !a.timed;
  c.time_med_ms = 99.5;
  c.repeats = 7;
  c.bitexact = 1;
  c.regs = 255;
  c.gx_err[HOT_TUNE_TOKENS] = 0.5;
  c.gw_err[HOT_TUNE_CAPTURE] = NAN;
  memcpy(c.capture, b.capture, sizeof c.capture);
  memcpy(c.date, b.date, sizeof c.date);
  put_ok(db, &c);
  ck_assert_int_eq(count_rows(db), 1);
  ck_assert_int_eq(tunedb_get(db, &a, &got, err, sizeof err), 1);
  assert_rows_equal(&c, &got);
  /* only the key fields of the key are read */
  hot_tune_row k = a;
  snprintf(k.note, sizeof k.note, "ignored");
  k.time_med_ms = -5;
  ck_assert_int_eq(tunedb_get(db, &k, NULL, err, sizeof err), 1);
  /* each key field makes a different row */
  int64_t expect = 1;
  for (int f = 0; f < 14; f++) {
    hot_tune_row d = c;
    switch (f) {
    case 0: snprintf(d.device, sizeof d.device, "other"); break;
    case 1: snprintf(d.arch, sizeof d.arch, "sm_x"); break;
    case 2: snprintf(d.driver, sizeof d.driver, "1"); break;
    case 3: snprintf(d.nvrtc, sizeof d.nvrtc, "n"); break;
    case 4: snprintf(d.hot_version, sizeof d.hot_version, "9"); break;
    case 5: d.batch++; break;
    case 6: d.tokens++; break;
    case 7: d.out_features++; break;
    case 8: d.in_features++; break;
    case 9: snprintf(d.dtype, sizeof d.dtype, "x"); break;
    case 10: snprintf(d.recipe, sizeof d.recipe, "paper"); break;
    case 11: snprintf(d.base, sizeof d.base, "hq.block=8"); break;
    case 12: snprintf(d.kind, sizeof d.kind, "other"); break;
    case 13: snprintf(d.variant, sizeof d.variant, "tile=1"); break;
    }
    ck_assert_int_eq(tunedb_get(db, &d, NULL, err, sizeof err), 0);
    put_ok(db, &d);
    ck_assert_int_eq(count_rows(db), ++expect);
    ck_assert_int_eq(tunedb_get(db, &d, &got, err, sizeof err), 1);
    assert_rows_equal(&d, &got);
  }
  /* read-only handles refuse to write */
  tunedb_close(db);
  db = open_ok(path, 1);
  ck_assert_int_eq(tunedb_put(db, &a, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "read-only"));
  ck_assert_int_eq(tunedb_merge(db, path, NULL, err, sizeof err), RT_ERR_INVALID);
  tunedb_close(db);
}
END_TEST

typedef struct {
  char got[16][64];
  int n, stop_at;
} order_ctx;

static int order_fn(const hot_tune_row *r, void *arg) {
  order_ctx *o = arg;
  if (o->n < 16) snprintf(o->got[o->n], sizeof o->got[0], "%.63s", r->variant);
  o->n++;
  return o->stop_at && o->n == o->stop_at;
}

START_TEST(foreach_order_and_filters) {
  char path[512], err[1024];
  hot_tunedb *db = open_ok(in_dir(path, sizeof path, "order.db"), 0);
  /* expected order: model, layer, kind, shape (B, L, O, I), base, variant, then the rest */
  struct { const char *model, *layer, *kind; int64_t b, l, o, i; const char *base, *variant, *device; } spec[] = {
    {"m1", "fc1", "accuracy", 8, 512, 768, 768, "b", "r00", "d"},
    {"m1", "fc1", "speed", 1, 512, 768, 768, "b", "r01", "d"},
    {"m1", "fc1", "speed", 8, 64, 768, 768, "b", "r02", "d"},
    {"m1", "fc1", "speed", 8, 512, 768, 768, "a", "r03", "d"},
    {"m1", "fc1", "speed", 8, 512, 768, 768, "b", "r04", "a"},
    {"m1", "fc1", "speed", 8, 512, 768, 768, "b", "r04", "b"},
    {"m1", "fc1", "speed", 8, 512, 768, 768, "b", "r05", "a"},
    {"m1", "fc2", "accuracy", 1, 1, 1, 1, "a", "r06", "a"},
    {"m2", "attn", "speed", 1, 1, 1, 1, "a", "r07", "a"},
  };
  const int n = (int)(sizeof spec / sizeof spec[0]);
  const int perm[] = {4, 8, 0, 6, 2, 7, 1, 5, 3}; /* stored in a scrambled order */
  for (int k = 0; k < n; k++) {
    int i = perm[k];
    hot_tune_row r;
    tunedb_row_init(&r);
    snprintf(r.model, sizeof r.model, "%s", spec[i].model);
    snprintf(r.layer, sizeof r.layer, "%s", spec[i].layer);
    snprintf(r.kind, sizeof r.kind, "%s", spec[i].kind);
    r.batch = spec[i].b; r.tokens = spec[i].l; r.out_features = spec[i].o; r.in_features = spec[i].i;
    snprintf(r.base, sizeof r.base, "%s", spec[i].base);
    snprintf(r.variant, sizeof r.variant, "%s", spec[i].variant);
    snprintf(r.device, sizeof r.device, "%s", spec[i].device);
    put_ok(db, &r);
  }
  const char *want[] = {"r00", "r01", "r02", "r03", "r04", "r04", "r05", "r06", "r07"};
  order_ctx o = {0};
  ck_assert_int_eq(tunedb_foreach(db, NULL, NULL, order_fn, &o, err, sizeof err), n);
  ck_assert_int_eq(o.n, n);
  for (int i = 0; i < n; i++) ck_assert_str_eq(o.got[i], want[i]);
  /* filters */
  memset(&o, 0, sizeof o);
  ck_assert_int_eq(tunedb_foreach(db, "m1", NULL, order_fn, &o, err, sizeof err), 8);
  memset(&o, 0, sizeof o);
  ck_assert_int_eq(tunedb_foreach(db, "m1", "fc2", order_fn, &o, err, sizeof err), 1);
  ck_assert_str_eq(o.got[0], "r06");
  memset(&o, 0, sizeof o);
  ck_assert_int_eq(tunedb_foreach(db, NULL, "attn", order_fn, &o, err, sizeof err), 1);
  ck_assert_str_eq(o.got[0], "r07");
  memset(&o, 0, sizeof o);
  ck_assert_int_eq(tunedb_foreach(db, "none", NULL, order_fn, &o, err, sizeof err), 0);
  /* fn returning nonzero stops the walk */
  memset(&o, 0, sizeof o);
  o.stop_at = 3;
  ck_assert_int_eq(tunedb_foreach(db, NULL, NULL, order_fn, &o, err, sizeof err), 3);
  ck_assert_int_eq(o.n, 3);
  tunedb_close(db);
}
END_TEST

/* ---- merge ---------------------------------------------------------------------------------- */

START_TEST(merge_later_date_wins) {
  char dpath[512], spath[512], bad[512], err[1024];
  hot_tunedb *dst = open_ok(in_dir(dpath, sizeof dpath, "dst.db"), 0);
  hot_tunedb *src = open_ok(in_dir(spath, sizeof spath, "src.db"), 0);
  hot_tune_row a, b, c, d, got;
  make_row(&a, 10, 0);
  make_row(&b, 11, 0);
  make_row(&c, 12, 0);
  make_row(&d, 13, 1);
  snprintf(a.date, sizeof a.date, "2026-01-01T00:00:00Z");
  snprintf(b.date, sizeof b.date, "2026-05-01T00:00:00Z");
  snprintf(c.date, sizeof c.date, "2026-03-01T00:00:00Z");
  put_ok(dst, &a);
  put_ok(dst, &b);
  put_ok(dst, &c);
  /* src: a newer (wins), b older (loses), c same date (the destination's stays), d new */
  hot_tune_row a2 = a, b2 = b, c2 = c;
  a2.time_med_ms = 111; snprintf(a2.date, sizeof a2.date, "2026-02-01T00:00:00Z");
  snprintf(a2.note, sizeof a2.note, "newer");
  b2.time_med_ms = 222; snprintf(b2.date, sizeof b2.date, "2026-04-30T23:59:59Z");
  c2.time_med_ms = 333;
  put_ok(src, &a2);
  put_ok(src, &b2);
  put_ok(src, &c2);
  put_ok(src, &d);
  tunedb_close(src);
  int64_t n = -1;
  ck_assert_msg(tunedb_merge(dst, spath, &n, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_int_eq(n, 4);
  ck_assert_int_eq(count_rows(dst), 4);
  ck_assert_int_eq(tunedb_get(dst, &a, &got, err, sizeof err), 1);
  assert_rows_equal(&a2, &got);
  ck_assert_int_eq(tunedb_get(dst, &b, &got, err, sizeof err), 1);
  assert_rows_equal(&b, &got);
  ck_assert_int_eq(tunedb_get(dst, &c, &got, err, sizeof err), 1);
  assert_rows_equal(&c, &got);
  ck_assert_int_eq(tunedb_get(dst, &d, &got, err, sizeof err), 1);
  assert_rows_equal(&d, &got);
  /* merging the same file again changes nothing; merging a file into itself neither */
  ck_assert_msg(tunedb_merge(dst, spath, &n, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_msg(tunedb_merge(dst, dpath, &n, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_int_eq(n, 4);
  ck_assert_int_eq(count_rows(dst), 4);
  ck_assert_int_eq(tunedb_get(dst, &a, &got, err, sizeof err), 1);
  assert_rows_equal(&a2, &got);

  /* corrupt / foreign / missing inputs: RT_ERR_IO naming the input, the destination unchanged */
  unsigned char junk[8192];
  srand(7);
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)rand();
  write_file(in_dir(bad, sizeof bad, "junk.db"), junk, sizeof junk);
  const char *inputs[] = {"junk.db", "missing.db", "v2.db"};
  hot_tunedb *v2 = open_ok(in_dir(bad, sizeof bad, "v2.db"), 0);
  put_ok(v2, &d);
  tunedb_close(v2);
  raw_sql(bad, "UPDATE meta SET value = 2 WHERE key = 'schema'");
  for (size_t k = 0; k < 3; k++) {
    in_dir(bad, sizeof bad, inputs[k]);
    n = 5;
    err[0] = '\0';
    ck_assert_int_eq(tunedb_merge(dst, bad, &n, err, sizeof err), RT_ERR_IO);
    ck_assert_msg(strstr(err, bad) != NULL, "%s", err);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(count_rows(dst), 4);
    ck_assert_int_eq(tunedb_get(dst, &a, &got, err, sizeof err), 1);
    assert_rows_equal(&a2, &got);
  }
  ck_assert_int_eq(tunedb_integrity_check(dst, err, sizeof err), RT_OK);
  tunedb_close(dst);
}
END_TEST

/* ---- the planner's lookup ------------------------------------------------------------------- */

static hot_tune_row speed(const char *variant, int64_t b, int64_t l, int64_t o, int64_t i,
                          double ms) {
  hot_tune_row r;
  tunedb_row_init(&r);
  snprintf(r.device, sizeof r.device, "NVIDIA H200");
  snprintf(r.arch, sizeof r.arch, "sm_90");
  snprintf(r.dtype, sizeof r.dtype, "bf16");
  snprintf(r.recipe, sizeof r.recipe, "hot");
  snprintf(r.base, sizeof r.base, "hq.block=16");
  snprintf(r.kind, sizeof r.kind, "speed");
  snprintf(r.status, sizeof r.status, "ok");
  snprintf(r.variant, sizeof r.variant, "%s", variant);
  r.batch = b; r.tokens = l; r.out_features = o; r.in_features = i;
  r.timed = 1;
  r.bitexact = 1;
  r.time_med_ms = ms;
  snprintf(r.date, sizeof r.date, "2026-11-30T00:00:00Z");
  return r;
}

static hot_tune_query query(void) {
  hot_tune_query q = {"sm_90", NULL, "bf16", "hot", "hq.block=16", 8, 512, 3072, 768};
  return q;
}

/* The chosen variant, "" when none, "ERR" on an error. */
static const char *best(hot_tunedb *const *dbs, int n, const hot_tune_query *q,
                        hot_tune_choice *ch) {
  char err[1024];
  int r = tunedb_best_speed(dbs, n, q, ch, err, sizeof err);
  ck_assert_msg(r >= 0, "best_speed: %s", err);
  return r ? ch->row.variant : "";
}

START_TEST(best_speed_shapes) {
  char p1[512], p2[512];
  hot_tunedb *user = open_ok(in_dir(p1, sizeof p1, "user.db"), 0);
  hot_tunedb *sys = open_ok(in_dir(p2, sizeof p2, "sys.db"), 0);
  hot_tunedb *dbs[] = {user, sys};
  hot_tune_query q = query();
  hot_tune_choice ch;
  ck_assert_str_eq(best(dbs, 2, &q, &ch), "");

  /* the nearest shape: O=4096 (|ln 4/3|) beats O=2048 (|ln 3/2|), whatever the times */
  hot_tune_row r;
  r = speed("o2048", 8, 512, 2048, 768, 0.5); put_ok(user, &r);
  r = speed("o4096", 8, 512, 4096, 768, 9.0); put_ok(sys, &r);
  ck_assert_str_eq(best(dbs, 2, &q, &ch), "o4096");
  ck_assert_int_eq(ch.exact, 0);
  ck_assert_double_eq_tol(ch.distance, log(4096.0 / 3072.0), 1e-12);
  ck_assert_str_eq(ch.db, p2);
  /* distance sums T = B*L, O and I */
  r = speed("t_and_i", 4, 512, 3072, 1024, 0.1); put_ok(user, &r); /* ln 2 + ln 4/3 */
  ck_assert_str_eq(best(dbs, 2, &q, &ch), "o4096");
  r = speed("i_only", 8, 512, 3072, 1000, 5.0); put_ok(user, &r);  /* ln 1000/768 < ln 4/3 */
  ck_assert_str_eq(best(dbs, 2, &q, &ch), "i_only");
  ck_assert_double_eq_tol(ch.distance, log(1000.0 / 768.0), 1e-12);

  /* the same T, O, I split into B, L differently: distance 0 */
  r = speed("split", 16, 256, 3072, 768, 1.0); put_ok(user, &r);
  ck_assert_str_eq(best(dbs, 2, &q, &ch), "split");
  ck_assert_int_eq(ch.exact, 0);
  ck_assert(ch.distance == 0.0);
  /* the exact shape beats it although it is slower and in the later database */
  r = speed("exact", 8, 512, 3072, 768, 4.0); put_ok(sys, &r);
  ck_assert_str_eq(best(dbs, 2, &q, &ch), "exact");
  ck_assert_int_eq(ch.exact, 1);
  ck_assert(ch.distance == 0.0);
  ck_assert_str_eq(ch.db, p2);
  ck_assert_int_eq(ch.row.batch, 8);
  ck_assert(ch.row.time_med_ms == 4.0);

  /* errors of the query */
  char err[256];
  hot_tune_query bad = q;
  bad.tokens = 0;
  ck_assert_int_eq(tunedb_best_speed(dbs, 2, &bad, &ch, err, sizeof err), -1);
  bad = q;
  bad.base = NULL;
  ck_assert_int_eq(tunedb_best_speed(dbs, 2, &bad, &ch, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "base"));
  ck_assert_int_eq(tunedb_best_speed(dbs, 2, NULL, &ch, err, sizeof err), -1);
  ck_assert_int_eq(tunedb_best_speed(NULL, 2, &q, &ch, err, sizeof err), -1);
  ck_assert_int_eq(tunedb_best_speed(NULL, 0, &q, &ch, err, sizeof err), 0);
  tunedb_close(user);
  tunedb_close(sys);
}
END_TEST

START_TEST(best_speed_tie_breaks) {
  char p1[512], p2[512];
  hot_tunedb *user = open_ok(in_dir(p1, sizeof p1, "user.db"), 0);
  hot_tunedb *sys = open_ok(in_dir(p2, sizeof p2, "sys.db"), 0);
  hot_tune_query q = query();
  hot_tune_choice ch;
  hot_tune_row r;
  /* same shape in both: the earlier database in the list wins, even when slower */
  r = speed("u", 8, 512, 3072, 768, 3.0); put_ok(user, &r);
  r = speed("s", 8, 512, 3072, 768, 1.0); put_ok(sys, &r);
  hot_tunedb *us[] = {user, sys}, *su[] = {sys, user}, *nu[] = {NULL, user, NULL, sys};
  ck_assert_str_eq(best(us, 2, &q, &ch), "u");
  ck_assert_str_eq(ch.db, p1);
  ck_assert_str_eq(best(su, 2, &q, &ch), "s");
  ck_assert_str_eq(ch.db, p2);
  ck_assert_str_eq(best(nu, 4, &q, &ch), "u");
  /* within a database: the smaller time, then the smaller variant string */
  r = speed("u2", 8, 512, 3072, 768, 2.5); put_ok(user, &r);
  ck_assert_str_eq(best(us, 2, &q, &ch), "u2");
  r = speed("u1", 8, 512, 3072, 768, 2.5); put_ok(user, &r);
  r = speed("u3", 8, 512, 3072, 768, 2.5); put_ok(user, &r);
  ck_assert_str_eq(best(us, 2, &q, &ch), "u1");
  /* the answer does not depend on the order rows were stored in */
  char p3[512];
  hot_tunedb *rev = open_ok(in_dir(p3, sizeof p3, "rev.db"), 0);
  const char *names[] = {"u3", "u1", "u2", "u"};
  const double ms[] = {2.5, 2.5, 2.5, 3.0};
  for (int i = 0; i < 4; i++) {
    r = speed(names[i], 8, 512, 3072, 768, ms[i]);
    put_ok(rev, &r);
  }
  hot_tunedb *rv[] = {rev};
  ck_assert_str_eq(best(rv, 1, &q, &ch), "u1");
  tunedb_close(rev);
  tunedb_close(user);
  tunedb_close(sys);
}
END_TEST

START_TEST(best_speed_filters) {
  char p1[512];
  hot_tunedb *db = open_ok(in_dir(p1, sizeof p1, "f.db"), 0);
  hot_tunedb *dbs[] = {db};
  hot_tune_query q = query();
  hot_tune_choice ch;
  hot_tune_row r;
  /* the one usable row has another shape (T half the query's: within the nearest-shape cut-off)
   * and is slow */
  r = speed("usable", 4, 512, 3072, 768, 50.0); put_ok(db, &r);
  ck_assert_str_eq(best(dbs, 1, &q, &ch), "usable");
  /* exact-shape, faster rows that must not be used */
  r = speed("pruned", 8, 512, 3072, 768, 0.1); snprintf(r.status, sizeof r.status, "pruned"); put_ok(db, &r);
  r = speed("failed", 8, 512, 3072, 768, 0.1); snprintf(r.status, sizeof r.status, "not_bitexact"); put_ok(db, &r);
  r = speed("untimed", 8, 512, 3072, 768, 0.1); r.timed = 0; put_ok(db, &r);
  r = speed("differs", 8, 512, 3072, 768, 0.1); r.bitexact = 0; put_ok(db, &r);
  r = speed("unchecked", 8, 512, 3072, 768, 0.1); r.bitexact = -1; put_ok(db, &r);
  r = speed("accuracy", 8, 512, 3072, 768, 0.1); snprintf(r.kind, sizeof r.kind, "accuracy"); put_ok(db, &r);
  r = speed("arch", 8, 512, 3072, 768, 0.1); snprintf(r.arch, sizeof r.arch, "sm_90a"); put_ok(db, &r);
  r = speed("dtype", 8, 512, 3072, 768, 0.1); snprintf(r.dtype, sizeof r.dtype, "f16"); put_ok(db, &r);
  r = speed("recipe", 8, 512, 3072, 768, 0.1); snprintf(r.recipe, sizeof r.recipe, "paper"); put_ok(db, &r);
  r = speed("base", 8, 512, 3072, 768, 0.1); snprintf(r.base, sizeof r.base, "hq.block=32"); put_ok(db, &r);
  r = speed("nan", 8, 512, 3072, 768, NAN); put_ok(db, &r);
  r = speed("zero_shape", 0, 512, 3072, 768, 0.1); put_ok(db, &r);
  ck_assert_str_eq(best(dbs, 1, &q, &ch), "usable");
  ck_assert_int_eq(ch.exact, 0);
  ck_assert_double_eq_tol(ch.distance, log(2.0), 1e-9);
  /* each query field selects: the rows above become the answer when asked for */
  hot_tune_query q2 = q;
  q2.arch = "sm_90a";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "arch");
  q2 = q; q2.dtype = "f16";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "dtype");
  q2 = q; q2.recipe = "paper";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "recipe");
  q2 = q; q2.base = "hq.block=32";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "base");
  q2 = q; q2.base = "hq.block=64";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "");
  /* device: given, only that device's rows; NULL or "", any device of the arch */
  r = speed("h100", 8, 512, 3072, 768, 0.2); snprintf(r.device, sizeof r.device, "NVIDIA H100"); put_ok(db, &r);
  r = speed("h200", 8, 512, 3072, 768, 0.3); put_ok(db, &r);
  ck_assert_str_eq(best(dbs, 1, &q, &ch), "h100");
  q2 = q; q2.device = "";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "h100");
  q2 = q; q2.device = "NVIDIA H200";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "h200");
  ck_assert_str_eq(ch.row.device, "NVIDIA H200");
  q2 = q; q2.device = "NVIDIA B200";
  ck_assert_str_eq(best(dbs, 1, &q2, &ch), "");
  tunedb_close(db);
  /* the lookup's equality columns are served by an index, not a scan of the table */
  sqlite3 *raw = NULL;
  ck_assert_int_eq(sqlite3_open_v2(p1, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(raw, "EXPLAIN QUERY PLAN SELECT * FROM results WHERE arch = ?1"
                   " AND dtype = ?2 AND recipe = ?3 AND base = ?4 AND kind = 'speed' AND status = 'ok'"
                   " AND timed = 1 AND bitexact = 1 AND (?5 IS NULL OR device = ?5)", -1, &st, NULL),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  const char *plan = (const char *)sqlite3_column_text(st, 3);
  ck_assert_msg(plan && strstr(plan, "USING INDEX") && strstr(plan, "status=?"), "plan: %s", plan);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}
END_TEST

/* ---- broken files --------------------------------------------------------------------------- */

/* tunedb_open refuses path (RT_ERR_IO, one line naming it); with cut 1 the message says the
 * file is truncated, with 0 it does not, with -1 either. */
static void expect_refused(const char *path, int ro, const char *what, int cut) {
  char err[1024] = "";
  hot_tunedb *db = (hot_tunedb *)&err; /* must be reset to NULL */
  rt_status s = tunedb_open(&db, path, ro, err, sizeof err);
  ck_assert_msg(s == RT_ERR_IO, "%s (%s): status %d, '%s'", what, ro ? "ro" : "rw", (int)s, err);
  ck_assert_ptr_null(db);
  ck_assert_msg(strstr(err, path) != NULL, "%s: message does not name the path: %s", what, err);
  ck_assert_msg(strchr(err, '\n') == NULL, "%s: not one line: %s", what, err);
  if (cut >= 0)
    ck_assert_msg(!strstr(err, ": truncated: ") == !cut, "%s (%s): %s", what, ro ? "ro" : "rw", err);
}

static void expect_io(const char *path, int ro, const char *what) {
  expect_refused(path, ro, what, -1);
}

START_TEST(broken_files) {
  char path[512], err[1024];
  /* random bytes */
  unsigned char junk[4096];
  srand(11);
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)rand();
  write_file(in_dir(path, sizeof path, "random.db"), junk, sizeof junk);
  for (int ro = 0; ro < 2; ro++) expect_refused(path, ro, "random bytes", 0);
  size_t n = 0;
  char *after = read_file(path, &n);
  ck_assert_uint_eq(n, sizeof junk);
  ck_assert_mem_eq(after, junk, sizeof junk); /* a read-write open did not touch it */
  free(after);
  /* a text file */
  const char *text = "device,arch\nH200,sm_90\n";
  write_file(in_dir(path, sizeof path, "text.db"), text, strlen(text));
  for (int ro = 0; ro < 2; ro++) expect_refused(path, ro, "text file", 0);
  after = read_file(path, &n);
  ck_assert_str_eq(after, text);
  free(after);
  /* a directory */
  in_dir(path, sizeof path, "adir.db");
  ck_assert_int_eq(mkdir(path, 0700), 0);
  for (int ro = 0; ro < 2; ro++) expect_io(path, ro, "directory");
  /* a truncated database: many rows, then the file cut in half */
  char full[512];
  hot_tunedb *db = open_ok(in_dir(full, sizeof full, "full.db"), 0);
  for (int i = 0; i < 200; i++) {
    hot_tune_row r;
    make_row(&r, i, 1);
    put_ok(db, &r);
  }
  tunedb_close(db); /* checkpoints: everything is in the main file */
  char *bytes = read_file(full, &n);
  ck_assert_ptr_nonnull(bytes);
  ck_assert_uint_gt(n, 200 * 2000);
  /* cut anywhere: inside SQLite's magic, inside its header, after it, after the first page, in
   * the middle, before the last page: said to be truncated (not merely "malformed") */
  const size_t cuts[] = {10, 60, 100, 4096, n / 2, n - 4096};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
    char what[64];
    snprintf(what, sizeof what, "cut at %zu of %zu bytes", cuts[c], n);
    write_file(in_dir(path, sizeof path, "truncated.db"), bytes, cuts[c]);
    for (int ro = 0; ro < 2; ro++) expect_refused(path, ro, what, 1);
  }
  /* pages in the middle overwritten (the schema pages intact: only the check at open finds it) */
  for (size_t i = n / 3; i < n / 3 + 3 * 4096; i++) bytes[i] = (char)(i * 31 + 7);
  write_file(in_dir(path, sizeof path, "overwritten.db"), bytes, n);
  for (int ro = 0; ro < 2; ro++) expect_refused(path, ro, "overwritten pages", 0);
  free(bytes);
  /* schema version 2 */
  db = open_ok(in_dir(path, sizeof path, "v2.db"), 0);
  tunedb_close(db);
  raw_sql(path, "UPDATE meta SET value = 2 WHERE key = 'schema'");
  for (int ro = 0; ro < 2; ro++) {
    expect_io(path, ro, "schema 2");
    hot_tunedb *x = NULL;
    tunedb_open(&x, path, ro, err, sizeof err);
    ck_assert_msg(strstr(err, "schema version 2") != NULL, "%s", err);
  }
  raw_sql(path, "DELETE FROM meta");
  for (int ro = 0; ro < 2; ro++) expect_io(path, ro, "no schema row");
  /* an SQLite file of another program: refused, and left exactly as it was (no WAL switch) */
  in_dir(path, sizeof path, "other.db");
  raw_sql(path, "CREATE TABLE people(name TEXT); INSERT INTO people VALUES('x')");
  char *before = read_file(path, &n);
  size_t n2 = 0;
  for (int ro = 0; ro < 2; ro++) {
    expect_io(path, ro, "foreign SQLite file");
    hot_tunedb *x = NULL;
    tunedb_open(&x, path, ro, err, sizeof err);
    ck_assert_msg(strstr(err, "not a hot tuning database") != NULL, "%s", err);
  }
  after = read_file(path, &n2);
  ck_assert_uint_eq(n, n2);
  ck_assert_mem_eq(before, after, n);
  free(before);
  free(after);
  /* our tables' names with another layout */
  in_dir(path, sizeof path, "layout.db");
  raw_sql(path, "CREATE TABLE meta(key TEXT PRIMARY KEY, value); INSERT INTO meta VALUES('schema', 1);"
                "CREATE TABLE results(device TEXT)");
  for (int ro = 0; ro < 2; ro++) expect_io(path, ro, "other layout");
  /* an empty file read-only: not a tuning database (read-write: a new one is made in it) */
  write_file(in_dir(path, sizeof path, "empty.db"), "", 0);
  expect_io(path, 1, "empty file");
  db = open_ok(path, 0);
  tunedb_close(db);
  db = open_ok(path, 1);
  ck_assert_int_eq(count_rows(db), 0);
  tunedb_close(db);
}
END_TEST

START_TEST(read_only_missing_creates_nothing) {
  char path[512], err[1024];
  in_dir(path, sizeof path, "missing.db");
  expect_io(path, 1, "missing");
  hot_tunedb *db = NULL;
  tunedb_open(&db, path, 1, err, sizeof err);
  ck_assert_msg(strstr(err, "No such file") != NULL, "%s", err);
  struct stat sb;
  ck_assert_int_ne(stat(path, &sb), 0);
  /* a read-write open where the folder is missing */
  in_dir(path, sizeof path, "no/such/folder/x.db");
  expect_io(path, 0, "missing folder");
  /* read-write creates it, read-only then reads it */
  in_dir(path, sizeof path, "new.db");
  db = open_ok(path, 0);
  tunedb_close(db);
  ck_assert_int_eq(stat(path, &sb), 0);
  db = open_ok(path, 1);
  ck_assert_int_eq(count_rows(db), 0);
  ck_assert_int_eq(tunedb_integrity_check(db, err, sizeof err), RT_OK);
  tunedb_close(db);
}
END_TEST

/* ---- several processes ---------------------------------------------------------------------- */

static void check_whole_rows(const char *path, int64_t want_min, int64_t want_max) {
  char err[1024];
  hot_tunedb *db = open_ok(path, 0);
  ck_assert_msg(tunedb_integrity_check(db, err, sizeof err) == RT_OK, "%s", err);
  int64_t n = count_rows(db);
  ck_assert_msg(n >= want_min && n <= want_max, "%lld rows, expected %lld..%lld", (long long)n,
                (long long)want_min, (long long)want_max);
  /* every row is whole: all its fields are those of the row it was made from */
  tunedb_close(db);
  db = open_ok(path, 1);
  int64_t seen = 0;
  for (int64_t i = 0; i < want_max + 1000 && seen < n; i++) {
    hot_tune_row r, got;
    make_row(&r, (int)i, 0);
    int g = tunedb_get(db, &r, &got, err, sizeof err);
    ck_assert_msg(g >= 0, "%s", err);
    if (g == 1) {
      assert_rows_equal(&r, &got);
      seen++;
    }
  }
  ck_assert_int_eq(seen, n);
  tunedb_close(db);
}

START_TEST(concurrent_writers) {
  char path[512];
  in_dir(path, sizeof path, "shared.db"); /* does not exist yet: the writers race to create it */
  enum { P = 4, ROWS = 200 };
  pid_t pids[P];
  for (int p = 0; p < P; p++) {
    pids[p] = fork();
    ck_assert_int_ge(pids[p], 0);
    if (pids[p] == 0) {
      char err[1024];
      hot_tunedb *db = NULL;
      if (tunedb_open(&db, path, 0, err, sizeof err) != RT_OK) {
        fprintf(stderr, "writer %d: %s\n", p, err);
        _exit(2);
      }
      for (int j = 0; j < ROWS; j++) {
        hot_tune_row r;
        make_row(&r, p * ROWS + j, 0);
        if (tunedb_put(db, &r, err, sizeof err) != RT_OK) {
          fprintf(stderr, "writer %d row %d: %s\n", p, j, err);
          _exit(3);
        }
      }
      tunedb_close(db);
      _exit(0);
    }
  }
  for (int p = 0; p < P; p++) {
    int st = 0;
    ck_assert_int_eq(waitpid(pids[p], &st, 0), pids[p]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d: status %d", p, st);
  }
  check_whole_rows(path, P * ROWS, P * ROWS);
}
END_TEST

START_TEST(killed_writer_leaves_whole_rows) {
  char path[512];
  in_dir(path, sizeof path, "killed.db");
  int64_t done_total = 0;
  for (int round = 0; round < 3; round++) {
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      close(fd[0]);
      char err[1024];
      hot_tunedb *db = NULL;
      if (tunedb_open(&db, path, 0, err, sizeof err) != RT_OK) _exit(2);
      for (int j = round * 100000;; j++) {
        hot_tune_row r;
        make_row(&r, j, 0);
        if (tunedb_put(db, &r, err, sizeof err) != RT_OK) _exit(3);
        if (write(fd[1], &j, sizeof j) != (ssize_t)sizeof j) _exit(4);
      }
    }
    close(fd[1]);
    int j = -1, got = 0;
    while (got < 40 && read(fd[0], &j, sizeof j) == (ssize_t)sizeof j) got++;
    ck_assert_int_eq(got, 40);
    struct timespec ts = {0, (long)(round * 700 + 300) * 1000}; /* land anywhere in a put */
    nanosleep(&ts, NULL);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "writer ended by itself: %d", st);
    /* the rows it reported are there, and nothing but whole rows */
    int last = j;
    while (read(fd[0], &j, sizeof j) == (ssize_t)sizeof j) last = j;
    close(fd[0]);
    int64_t reported = last - round * 100000 + 1;
    done_total += reported;
    char err[1024];
    hot_tunedb *db = open_ok(path, 1);
    int64_t n = count_rows(db);
    ck_assert_msg(n >= done_total && n <= done_total + 1, "%lld rows after %lld reported puts",
                  (long long)n, (long long)done_total);
    done_total = n;
    hot_tune_row r;
    make_row(&r, last, 0);
    ck_assert_int_eq(tunedb_get(db, &r, NULL, err, sizeof err), 1);
    tunedb_close(db);
  }
  /* whole rows only: every row equals the row it was made from (indices of all three rounds) */
  char err[1024];
  hot_tunedb *db = open_ok(path, 0);
  ck_assert_msg(tunedb_integrity_check(db, err, sizeof err) == RT_OK, "%s", err);
  int64_t seen = 0;
  for (int round = 0; round < 3; round++)
    for (int i = round * 100000; i < round * 100000 + 100000; i++) {
      hot_tune_row r, got;
      make_row(&r, i, 0);
      int g = tunedb_get(db, &r, &got, err, sizeof err);
      ck_assert_msg(g >= 0, "%s", err);
      if (!g) break;
      assert_rows_equal(&r, &got);
      seen++;
    }
  ck_assert_int_eq(seen, count_rows(db));
  /* and the file takes new rows */
  hot_tune_row r;
  make_row(&r, 999999, 1);
  put_ok(db, &r);
  tunedb_close(db);
}
END_TEST

/* ---- the system DB -------------------------------------------------------------------------- */

START_TEST(system_db) {
  char err[1024];
  /* the embedded text is tune/system.sql of this source tree */
  const char *root = getenv("HOT_SOURCE_DIR");
  ck_assert_ptr_nonnull(root);
  char path[1024];
  snprintf(path, sizeof path, "%s/tune/system.sql", root);
  size_t n = 0, en = 0;
  char *text = read_file(path, &n);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  const char *emb = tunedb_system_sql(&en);
  ck_assert_ptr_nonnull(emb);
  ck_assert_uint_eq(en, n);
  ck_assert_mem_eq(emb, text, n);
  /* it holds exactly its INSERT statements' rows */
  int64_t inserts = 0;
  for (const char *p = text; (p = strcasestr(p, "insert into")) != NULL; p++) {
    const char *line = p;
    while (line > text && line[-1] != '\n') line--;
    if (strncmp(line, "--", 2) != 0) inserts++;
  }
  free(text);
  hot_tunedb *sys = NULL;
  ck_assert_msg(tunedb_open_system(&sys, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_str_eq(tunedb_path(sys), "system");
  ck_assert_int_eq(count_rows(sys), inserts);
  ck_assert_int_eq(tunedb_integrity_check(sys, err, sizeof err), RT_OK);
  /* read-only */
  hot_tune_row r = speed("v", 8, 512, 3072, 768, 1.0);
  ck_assert_int_eq(tunedb_put(sys, &r, err, sizeof err), RT_ERR_INVALID);
  /* user rows and system rows in one lookup */
  char upath[512];
  hot_tunedb *user = open_ok(in_dir(upath, sizeof upath, "u.db"), 0);
  put_ok(user, &r);
  hot_tunedb *dbs[] = {user, sys};
  hot_tune_query q = query();
  hot_tune_choice ch;
  ck_assert_int_eq(tunedb_best_speed(dbs, 2, &q, &ch, err, sizeof err), 1);
  tunedb_close(user);
  tunedb_close(sys);
}
END_TEST

START_TEST(sql_text_loader) {
  char err[1024];
  hot_tunedb *db = NULL;
  const char *rows =
      "-- two rows\n"
      "BEGIN;\n"
      "INSERT INTO results(device, arch, driver, nvrtc, hot_version, batch, tokens, out_features,"
      " in_features, dtype, recipe, base, kind, variant, model, layer, config, status, note, timed,"
      " time_med_ms, repeats, bitexact, regs, spills, smem_bytes, occupancy, capture, saved_bytes,"
      " date) VALUES('NVIDIA H200', 'sm_90', '13000', 'nvrtc-13.0', '0.1.0', 8, 512, 3072, 768,"
      " 'bf16', 'hot', 'hq.block=16', 'speed', 'tile=128', 'vit', 'fc1', 'cfg', 'ok', '', 1, 0.75,"
      " 50, 1, 96, 0, 49152, 0.5, '', -1, '2026-11-30T00:00:00Z');\n"
      "INSERT INTO results(device, arch, driver, nvrtc, hot_version, batch, tokens, out_features,"
      " in_features, dtype, recipe, base, kind, variant, model, layer, config, status, note, timed,"
      " time_med_ms, repeats, bitexact, regs, spills, smem_bytes, occupancy, gx_err_tokens, capture,"
      " saved_bytes, date) VALUES('NVIDIA H200', 'sm_90', '13000', 'nvrtc-13.0', '0.1.0', 8, 512,"
      " 3072, 768, 'bf16', 'hot', 'hq.block=16', 'speed', 'tile=64', 'vit', 'fc1', 'cfg', 'ok', '',"
      " 1, 0.5, 50, 1, 96, 0, 49152, 0.5, 0.001, '', -1, '2026-11-30T00:00:00Z');\n"
      "COMMIT;\n";
  ck_assert_msg(tunedb_open_sql(&db, "shipped", rows, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_int_eq(count_rows(db), 2);
  hot_tunedb *dbs[] = {db};
  hot_tune_query q = query();
  hot_tune_choice ch;
  ck_assert_str_eq(best(dbs, 1, &q, &ch), "tile=64");
  ck_assert_str_eq(ch.db, "shipped");
  ck_assert(ch.row.gx_err[HOT_TUNE_TOKENS] == 0.001);
  ck_assert(isnan(ch.row.gx_err[HOT_TUNE_GAUSS]));
  ck_assert_int_eq(ch.row.saved_bytes, -1);
  tunedb_close(db);
  /* anything but INSERT INTO results is refused, naming the text */
  const char *refused[] = {
    "DROP TABLE results;",
    "DELETE FROM results;",
    "UPDATE meta SET value = 2;",
    "INSERT INTO meta VALUES('x', 1);",
    "CREATE TABLE t(x);",
    "PRAGMA journal_mode = WAL;",
    "ATTACH 'x.db' AS x;",
    "INSERT INTO results(device) VALUES('only one column');", /* NOT NULL columns */
    "this is not SQL",
    "BEGIN; INSERT INTO results SELECT * FROM results;",
    "BEGIN;", /* a transaction left open */
  };
  for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
    db = (hot_tunedb *)&err;
    err[0] = '\0';
    rt_status s = tunedb_open_sql(&db, "shipped", refused[k], err, sizeof err);
    ck_assert_msg(s == RT_ERR_IO, "'%s' was accepted (%d)", refused[k], (int)s);
    ck_assert_ptr_null(db);
    ck_assert_msg(strstr(err, "shipped") != NULL, "%s", err);
  }
  /* a string longer than its field */
  char big[2048];
  snprintf(big, sizeof big,
           "INSERT INTO results(device, arch, driver, nvrtc, hot_version, batch, tokens, out_features,"
           " in_features, dtype, recipe, base, kind, variant, model, layer, config, status, note,"
           " timed, repeats, bitexact, regs, spills, smem_bytes, capture, saved_bytes, date) VALUES("
           "'d', 'sm_90_way_too_long_arch', '', '', '', 1, 1, 1, 1, 'bf16', 'hot', '', 'speed', '',"
           " '', '', '', 'ok', '', 1, 1, 1, 1, 1, 1, '', 1, '');");
  ck_assert_int_eq(tunedb_open_sql(&db, "shipped", big, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "arch"));
  ck_assert_int_eq(tunedb_open_sql(&db, NULL, "", err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(tunedb_open_system(NULL, err, sizeof err), RT_ERR_INVALID);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_tunedb");
  TCase *tc = tcase_create("tunedb");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, round_trip_every_field);
  tcase_add_test(tc, string_without_nul_refused);
  tcase_add_test(tc, overlong_string_in_file_is_an_error);
  tcase_add_test(tc, replace_on_equal_key_get_has);
  tcase_add_test(tc, foreach_order_and_filters);
  tcase_add_test(tc, merge_later_date_wins);
  tcase_add_test(tc, best_speed_shapes);
  tcase_add_test(tc, best_speed_tie_breaks);
  tcase_add_test(tc, best_speed_filters);
  tcase_add_test(tc, broken_files);
  tcase_add_test(tc, read_only_missing_creates_nothing);
  tcase_add_test(tc, concurrent_writers);
  tcase_add_test(tc, killed_writer_leaves_whole_rows);
  tcase_add_test(tc, system_db);
  tcase_add_test(tc, sql_text_loader);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

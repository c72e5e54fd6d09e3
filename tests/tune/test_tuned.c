/* test_tuned.c — the pieces hot-tune and the planner share: the field table (gen/fields.c: every
 * field set and read back, bad values refused, the Lua DSL accepting exactly the table's fields as
 * sweep axes) and planning with the tuning databases (runtime/tuned.c): a tuned speed row is
 * applied (exact and nearest shape), never one that is untimed, not bit-exact, of other numerics
 * or another arch; the spec's own tiles win; tiles the planner refuses fall back to the defaults
 * with the reason; a corrupt user DB is reported and ignored; HOT_TUNE=0; and libhot's layers
 * planned through the same lookup (HOT_TUNE_DB, a forced arch). */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fields.h"
#include "hot.h"
#include "plan.h"
#include "runtime/rt_util.h"
#include "spec.h"
#include "tuned.h"
#include "tunedb.h"
#include "tunedb_write.h"

static char g_dir[256];
static void setup(void) { ck_assert_ptr_nonnull(tmp_dir(g_dir)); }
static void teardown(void) { rm_tree(g_dir); }

/* ---- fields -------------------------------------------------------------------------------- */

START_TEST(fields_round_trip_and_refusals) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  char err[300], v[32];
  ck_assert_int_gt(fields_count(), 30);
  for (int i = 0; i < fields_count(); ++i) {
    const hot_field *f = fields_at(i);
    ck_assert_ptr_eq(fields_find(fields_path(f)), f);
    ck_assert_int_eq(fields_get(&s, f, v, sizeof v), 0);
    ck_assert_msg(fields_set(&s, f, v, err, sizeof err) == 0, "%s=%s: %s", fields_path(f), v, err);
    char w[32];
    fields_get(&s, f, w, sizeof w);
    ck_assert_str_eq(v, w);
    /* garbage is refused with the path in the message */
    ck_assert_int_eq(fields_set(&s, f, "x1", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, fields_path(f)));
  }
  const struct { const char *path, *value; int ok; } cases[] = {
    {"hq.block", "16", 1}, {"hq.block", "24", 0}, {"hq.block", "512", 0}, {"hq.block", "", 0},
    {"hla.block", "0", 1}, {"hla.block", "2048", 0}, {"hq.scale", "token", 1}, {"hq.scale", "row", 0},
    {"hq.round", "rtn", 1}, {"hla.round", "sr", 1}, {"hq.pad", "true", 1}, {"hq.pad", "1", 0},
    {"tile_gx.stages", "7", 0}, {"tile_gw.tile_n", "256", 1}, {"hla.keep", "51", 0},
    {"hq.bits", "99999999999999999999", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    ck_assert_msg(fields_set(&s, fields_find(cases[i].path), cases[i].value, err, sizeof err) ==
                      (cases[i].ok ? 0 : -1), "%s=%s", cases[i].path, cases[i].value);
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  ck_assert_int_eq(fields_apply(&s, "hq.block=32;hq.scale=token;tile_gx.stages=4", err, sizeof err), 0);
  ck_assert_int_eq(s.hq.block, 32);
  ck_assert_int_eq(s.hq.g.gran, HOT_GRAN_ROW);
  ck_assert_int_eq(s.tile_gx.stages, 4);
  ck_assert_int_eq(fields_apply(&s, "", err, sizeof err), 0);
  ck_assert_int_eq(fields_apply(&s, "hq.blok=8", err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "unknown field 'hq.blok'"));
  ck_assert_int_eq(fields_apply(&s, "hq.block", err, sizeof err), -1);
  ck_assert_int_eq(fields_apply(&s, "hq.block=8;;", err, sizeof err), -1);
  /* canonical: speed and accuracy fields apart, table order, stable */
  char a[HOT_TUNE_TEXT], b[HOT_TUNE_TEXT];
  ck_assert_int_eq(fields_canonical(&s, HOT_FIELD_ACCURACY, a, sizeof a), 0);
  ck_assert_ptr_nonnull(strstr(a, "hq.block=8;")); /* the items before a bad one stay applied */
  ck_assert_ptr_null(strstr(a, "tile_"));
  ck_assert_int_eq(fields_canonical(&s, HOT_FIELD_SPEED, b, sizeof b), 0);
  ck_assert_ptr_nonnull(strstr(b, "tile_gx.stages=4"));
  ck_assert_int_eq(fields_canonical(&s, HOT_FIELD_ACCURACY, b, 10), -1);
  /* hla.scale sets g^ and x^ together; set apart by a C caller, the two stay apart in the
   * canonical text (a segmented g_w GEMM never shares the key of the per-tensor one) */
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  ck_assert_int_eq(fields_apply(&s, "hla.scale=tensor", err, sizeof err), 0);
  ck_assert_int_eq(s.hla.g.gran, HOT_GRAN_TENSOR);
  ck_assert_int_eq(s.hla.x.gran, HOT_GRAN_TENSOR);
  ck_assert_int_eq(fields_canonical(&s, HOT_FIELD_ACCURACY, a, sizeof a), 0);
  ck_assert_ptr_nonnull(strstr(a, "hla.scale=tensor;"));
  s.hla.x.gran = HOT_GRAN_SAMPLE;
  ck_assert_int_eq(fields_canonical(&s, HOT_FIELD_ACCURACY, b, sizeof b), 0);
  ck_assert_ptr_nonnull(strstr(b, "hla.scale=tensor/sample;"));
  ck_assert_str_ne(a, b);
  ck_assert_int_eq(fields_apply(&s, "hla.scale=tensor/sample", err, sizeof err), -1);
}
END_TEST

/* The DSL accepts a sweep over every field of the table (and spec.c keeps each), so the two lists
 * agree; the refusals of the other direction are in test_spec (sweep_refusals). */
START_TEST(every_field_is_sweepable_in_a_spec) {
  char text[8192];
  size_t used = (size_t)snprintf(text, sizeof text,
      "local hot = require \"hot\"\nreturn hot.model { name = \"m\", batch = 2, tokens = 64,\n"
      "  layers = { hot.linear { name = \"fc\", in_features = 64, out_features = 64 } },\n"
      "  sweep = hot.sweep {\n");
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  for (int i = 0; i < fields_count(); ++i) {
    const hot_field *f = fields_at(i);
    char v[32];
    fields_get(&s, f, v, sizeof v);
    if (!strcmp(fields_path(f), "hla.rank")) snprintf(v, sizeof v, "8"); /* 0 = unset in C */
    const int quote = (v[0] < '0' || v[0] > '9') && strcmp(v, "true") && strcmp(v, "false");
    used += (size_t)snprintf(text + used, sizeof text - used, "    [\"%s\"] = { %s%s%s },\n",
                             fields_path(f), quote ? "\"" : "", v, quote ? "\"" : "");
  }
  snprintf(text + used, sizeof text - used, "  } }\n");
  hot_model m;
  hot_diag d = {0};
  int rc = spec_load_string("sweep_all.lua", text, strlen(text), NULL, &m, &d);
  for (int i = 0; i < d.count; ++i) fprintf(stderr, "%s\n", d.lines[i]);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(m.n_sweep, fields_count());
  diag_free(&d);
  spec_model_free(&m);
}
END_TEST

/* ---- planning with the databases ------------------------------------------------------------ */

static hot_layer_spec layer_spec(void) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "fc");
  s.in_features = 256;
  s.out_features = 512;
  return s;
}

/* A speed row for s at (batch, tokens) on sm_90 with the given variant and time. */
static void speed_row(hot_tune_row *r, const hot_layer_spec *s, int64_t batch, int64_t tokens,
                      const char *variant, double ms) {
  tunedb_row_init(r);
  snprintf(r->device, sizeof r->device, "NVIDIA H200");
  snprintf(r->arch, sizeof r->arch, "sm_90");
  snprintf(r->driver, sizeof r->driver, "13000");
  snprintf(r->nvrtc, sizeof r->nvrtc, "nvrtc-13.0");
  snprintf(r->hot_version, sizeof r->hot_version, "0.1.0");
  r->batch = batch;
  r->tokens = tokens;
  r->out_features = s->out_features;
  r->in_features = s->in_features;
  snprintf(r->dtype, sizeof r->dtype, "f32");
  snprintf(r->recipe, sizeof r->recipe, "hot");
  fields_canonical(s, HOT_FIELD_ACCURACY, r->base, sizeof r->base);
  snprintf(r->kind, sizeof r->kind, "speed");
  snprintf(r->variant, sizeof r->variant, "%s", variant);
  snprintf(r->status, sizeof r->status, "ok");
  snprintf(r->date, sizeof r->date, "2026-11-30T00:00:00Z");
  r->timed = 1;
  r->bitexact = 1;
  r->time_med_ms = r->time_p10_ms = r->time_p90_ms = r->time_min_ms = ms;
  r->repeats = 20;
}

static void put(const char *path, const hot_tune_row *r) {
  hot_tunedb *db;
  char err[512];
  ck_assert_msg(tunedb_open(&db, path, 0, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_msg(tunedb_put(db, r, err, sizeof err) == RT_OK, "%s", err);
  tunedb_close(db);
}

static int plan_with(const char *db, const hot_layer_spec *s, int64_t batch, int64_t tokens,
                     const char *device, hot_layer_plan *pl, char *origin, size_t on) {
  hot_env ev;
  char err[512];
  ck_assert_int_eq(env_read(&ev, 0, err, sizeof err), RT_OK);
  hot_tuned t;
  tuned_open(&t, &ev, db);
  static hot_layer_spec keep;
  int rc = tuned_plan_layer(&t, device, s, batch, tokens, HOT_RECIPE_HOT, HOT_ARCH_SM90, 0, &keep,
                            pl, origin, on, err, sizeof err);
  tuned_close(&t);
  return rc;
}

START_TEST(tuned_rows_applied_by_the_rules) {
  char db[512], origin[900];
  snprintf(db, sizeof db, "%s/tune.db", g_dir);
  hot_layer_spec s = layer_spec();
  hot_layer_plan pl;
  /* a named database file that does not exist: defaults, and said so */
  ck_assert_int_eq(plan_with(db, &s, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_ptr_nonnull(strstr(origin, "default (user tuning DB not found: "));
  const int def_m = pl.hq.gemm.tile_m;
  /* rows that must never be used */
  hot_tune_row r;
  speed_row(&r, &s, 4, 128, "tile_gx.tile_m=128;tile_gx.stages=4", 0.5);
  r.timed = 0;
  put(db, &r);
  speed_row(&r, &s, 4, 128, "tile_gx.tile_m=256", 0.1);
  r.bitexact = 0;
  snprintf(r.status, sizeof r.status, "not_bitexact");
  put(db, &r);
  speed_row(&r, &s, 4, 128, "tile_gx.tile_n=256", 0.05);
  snprintf(r.arch, sizeof r.arch, "sm_80");
  put(db, &r);
  hot_layer_spec other = s;
  other.hq.block = 32;
  speed_row(&r, &other, 4, 128, "tile_gx.tile_n=256", 0.05);
  put(db, &r);
  ck_assert_int_eq(plan_with(db, &s, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_str_eq(origin, "default");
  ck_assert_int_eq(pl.hq.gemm.tile_m, def_m);
  /* a usable row: applied, exact shape */
  speed_row(&r, &s, 4, 128, "tile_gx.tile_m=128;tile_gx.stages=4", 0.4);
  put(db, &r);
  ck_assert_int_eq(plan_with(db, &s, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_int_eq(pl.hq.gemm.tile_m, 128);
  ck_assert_int_eq(pl.hq.gemm.stages, 4);
  ck_assert_ptr_nonnull(strstr(origin, "tuned: "));
  ck_assert_ptr_nonnull(strstr(origin, db));
  ck_assert_ptr_nonnull(strstr(origin, "2026-11-30T00:00:00Z"));
  ck_assert_ptr_nonnull(strstr(origin, "(exact shape)"));
  /* another shape: the nearest row, said so */
  ck_assert_int_eq(plan_with(db, &s, 8, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_int_eq(pl.hq.gemm.tile_m, 128);
  ck_assert_ptr_nonnull(strstr(origin, "nearest shape 4x128x512x256"));
  /* the device filter */
  ck_assert_int_eq(plan_with(db, &s, 4, 128, "NVIDIA A100", &pl, origin, sizeof origin), 0);
  ck_assert_str_eq(origin, "default");
  ck_assert_int_eq(plan_with(db, &s, 4, 128, "NVIDIA H200", &pl, origin, sizeof origin), 0);
  ck_assert_ptr_nonnull(strstr(origin, "tuned: "));
  /* the spec's own tiles win */
  hot_layer_spec own = s;
  own.tile_gx.tile_m = 64;
  ck_assert_int_eq(plan_with(db, &own, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_str_eq(origin, "spec");
  ck_assert_int_eq(pl.hq.gemm.tile_m, 64);
  /* a faster row whose tiles the planner refuses: the defaults, with the reason */
  speed_row(&r, &s, 4, 128, "tile_gx.tile_k=48", 0.01);
  put(db, &r);
  ck_assert_int_eq(plan_with(db, &s, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_ptr_nonnull(strstr(origin, "default (the planner refused the tuned tiles tile_gx.tile_k=48"));
  ck_assert_int_eq(pl.hq.gemm.tile_m, def_m);
  /* a row whose variant changes numerics is not applied */
  speed_row(&r, &s, 4, 128, "hq.block=64", 0.001);
  put(db, &r);
  ck_assert_int_eq(plan_with(db, &s, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_ptr_nonnull(strstr(origin, "changes numerics"));
  ck_assert_int_eq(pl.hq.block, s.hq.block);
}
END_TEST

START_TEST(corrupt_db_ignored_and_hot_tune_off) {
  char db[512], origin[900];
  snprintf(db, sizeof db, "%s/tune.db", g_dir);
  FILE *f = fopen(db, "w");
  ck_assert_ptr_nonnull(f);
  fputs("this is not a database, but it is long enough to be read as a header..........\n", f);
  fclose(f);
  hot_layer_spec s = layer_spec();
  hot_layer_plan pl;
  ck_assert_int_eq(plan_with(db, &s, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  ck_assert_ptr_nonnull(strstr(origin, "default (user tuning DB ignored"));
  ck_assert_ptr_nonnull(strstr(origin, db));
  /* HOT_TUNE=0: nothing is opened, plain defaults */
  unlink(db);
  hot_tune_row r;
  speed_row(&r, &s, 4, 128, "tile_gx.tile_m=128", 0.4);
  put(db, &r);
  setenv("HOT_TUNE", "0", 1);
  ck_assert_int_eq(plan_with(db, &s, 4, 128, NULL, &pl, origin, sizeof origin), 0);
  unsetenv("HOT_TUNE");
  ck_assert_str_eq(origin, "default");
  setenv("HOT_TUNE", "maybe", 1);
  hot_env ev;
  char err[300];
  ck_assert_int_eq(env_read(&ev, 0, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "HOT_TUNE"));
  unsetenv("HOT_TUNE");
}
END_TEST

/* libhot: a layer planned for a known arch takes the user DB's row (HOT_TUNE_DB). */
START_TEST(libhot_layers_use_the_db) {
  char db[512];
  snprintf(db, sizeof db, "%s/user.db", g_dir);
  hot_layer_spec s = layer_spec();
  hot_tune_row r;
  speed_row(&r, &s, 4, 128, "tile_gx.tile_m=128;tile_gx.tile_n=128;tile_gw.stages=4", 0.3);
  put(db, &r);
  setenv("HOT_TUNE_DB", db, 1);
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  o.arch = "sm_90";
  o.disk_cache = -1;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 4, 128, HOT_RECIPE_HOT, &l), HOT_OK);
  const hot_layer_plan *pl = hot_layer_get_plan(l);
  ck_assert_int_eq(pl->hq.gemm.tile_m, 128);
  ck_assert_int_eq(pl->hq.gemm.tile_n, 128);
  ck_assert_int_eq(pl->hla.gemm.stages, 4);
  hot_layer_info info;
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_msg(strstr(info.tiles, "tuned: ") && strstr(info.tiles, "user.db"), "%s", info.tiles);
  hot_ctx_destroy(ctx);
  /* HOT_TUNE=0 in the environment of the context: the defaults */
  setenv("HOT_TUNE", "0", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 4, 128, HOT_RECIPE_HOT, &l), HOT_OK);
  hot_layer_plan def;
  char err[300];
  ck_assert_int_eq(plan_layer(&s, 4, 128, HOT_RECIPE_HOT, HOT_ARCH_SM90, 0, &def, err, sizeof err), 0);
  ck_assert_int_eq(hot_layer_get_plan(l)->hq.gemm.tile_n, def.hq.gemm.tile_n);
  ck_assert_int_eq(hot_layer_get_plan(l)->hla.gemm.stages, def.hla.gemm.stages);
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_str_eq(info.tiles, "default");
  hot_ctx_destroy(ctx);
  unsetenv("HOT_TUNE");
  unsetenv("HOT_TUNE_DB");
}
END_TEST

int main(void) {
  Suite *s = suite_create("tuned");
  TCase *tc = tcase_create("all");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, fields_round_trip_and_refusals);
  tcase_add_test(tc, every_field_is_sweepable_in_a_spec);
  tcase_add_test(tc, tuned_rows_applied_by_the_rules);
  tcase_add_test(tc, corrupt_db_ignored_and_hot_tune_off);
  tcase_add_test(tc, libhot_layers_use_the_db);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

/* test_fields.c — every row of gen/field_list.h, checked in every place a field lives:
 *  - the enumerations: values listed in order, each field's spec names a subset of its enum's,
 *    the planner's plan_*_name using the same names;
 *  - the table: sweepable rows first, paths unique, each default valid, fields_set/fields_get;
 *  - the Lua schema and the C copy: a spec writing the row (a value other than the default) loads
 *    and the value lands in the member (and its second member);
 *  - `hot-gen --help-spec` names it, with its values;
 *  - the C API: hot_layer_create refuses an out-of-range BOOL/ENUM member naming it (check_enums)
 *    and merges every recipe's defaults (apply_recipe);
 *  - python/hot/_lib.py mirrors every member (hot_layer_spec's ctypes structures) and every
 *    enumeration value (its IntEnum classes).
 * A field added to one place and not another fails here, naming the row. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "hot.h"
#include "plan.h"
#include "spec.h"

static const char *src_dir(void) {
  const char *d = getenv("HOT_SOURCE_DIR");
  return d && *d ? d : ".";
}

static char *read_text(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src_dir(), rel);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

/* ---- enumerations and the table -------------------------------------------------------------- */

START_TEST(enumerations_in_order) {
  for (int e = 0; e < HOT_E_COUNT; ++e) {
    ck_assert_int_gt(fields_enum_count((hot_enum_id)e), 1);
    for (int v = 0; v < fields_enum_count((hot_enum_id)e); ++v) {
      ck_assert_msg(fields_enum_value((hot_enum_id)e, v) == v, "%s: %s is listed at %d",
                    fields_enum_type((hot_enum_id)e), fields_enum_const((hot_enum_id)e, v), v);
      ck_assert_int_eq(fields_enum_parse((hot_enum_id)e, fields_enum_name((hot_enum_id)e, v)), v);
    }
  }
  /* plan_*_name is the table's one list */
  ck_assert_str_eq(plan_gran_name(HOT_GRAN_ROW), "token");
  ck_assert_str_eq(plan_gran_name(HOT_GRAN_ROW), fields_enum_name(HOT_E_gran, HOT_GRAN_ROW));
  ck_assert_str_eq(plan_dtype_name(HOT_DT_BF16), fields_enum_name(HOT_E_dtype, HOT_DT_BF16));
  ck_assert_str_eq(plan_recipe_name(HOT_RECIPE_PAPER_CODE), "paper_code");
  ck_assert_str_eq(plan_layout_name((hot_layout)9), "?");
}
END_TEST

/* Whether `name` is one of the names of e. */
static int enum_has(hot_enum_id e, const char *name, size_t len) {
  for (int v = 0; v < fields_enum_count(e); ++v) {
    const char *n = fields_enum_name(e, v);
    if (strlen(n) == len && strncmp(n, name, len) == 0) return 1;
  }
  return 0;
}

START_TEST(table_rows_consistent) {
  int sweeping = 1, n_sweep = 0;
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    const char *who = f->path ? f->path : f->member;
    if (f->flags & FL_SWEEP) {
      ck_assert_msg(sweeping, "%s: a sweepable row after a non-sweepable one", who);
      ck_assert_ptr_eq(fields_at(n_sweep++), f);
      ck_assert_ptr_nonnull(f->path);
    } else {
      sweeping = 0;
    }
    for (int j = 0; j < i; ++j) {
      const hot_field *g = fields_all_at(j);
      ck_assert_msg(strcmp(g->member, f->member) != 0, "%s: member listed twice", f->member);
      ck_assert_msg(!f->path || !g->path || strcmp(g->path, f->path) != 0, "%s twice", who);
    }
    for (int r = 0; r < 3; ++r)
      ck_assert_msg(fields_value_ok(f, f->dflt[r], 1), "%s: default of %s out of range", who,
                    plan_recipe_name((hot_recipe)r));
    if (f->kind == HOT_FK_ENUM) {
      ck_assert_msg(f->en >= 0 && f->en < HOT_E_COUNT, "%s: no enumeration", who);
      for (const char *p = f->vdoc; *p;) { /* the spec's names: names of the enumeration */
        size_t len = strcspn(p, "|");
        ck_assert_msg(enum_has(f->en, p, len), "%s: '%.*s' is not a %s", who, (int)len, p,
                      fields_enum_type(f->en));
        p += len + (p[len] == '|');
      }
      ck_assert_msg(f->path == NULL || *f->vdoc, "%s: no spec names", who);
    }
  }
  ck_assert_int_eq(n_sweep, fields_count());
}
END_TEST

/* ---- the spec loader (Lua schema + C copy) --------------------------------------------------- */

/* A value for row f other than the default of recipe hot that a spec may write, as spec text
 * (quoted for an enum) in txt, and as an int (returned). */
static int other_value(const hot_field *f, char *txt, size_t n) {
  const int d = f->dflt[HOT_RECIPE_HOT];
  if (f->kind == HOT_FK_BOOL) {
    snprintf(txt, n, "%s", d ? "false" : "true");
    return !d;
  }
  if (f->kind == HOT_FK_ENUM) {
    for (const char *p = f->vdoc; *p;) {
      size_t len = strcspn(p, "|");
      char name[32];
      snprintf(name, sizeof name, "%.*s", (int)len, p);
      int v = fields_enum_parse(f->en, name);
      if (v != d) {
        snprintf(txt, n, "\"%s\"", name);
        return v;
      }
      p += len + (p[len] == '|');
    }
    return -1;
  }
  for (int v = f->min; v <= f->max; ++v)
    if (v != d && fields_value_ok(f, v, 0)) {
      snprintf(txt, n, "%d", v);
      return v;
    }
  return -1;
}

START_TEST(every_row_loads_from_a_spec) {
  int checked = 0;
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    if (!f->path) continue;
    char val[48], assign[160], text[1024];
    int v = other_value(f, val, sizeof val);
    ck_assert_msg(v >= 0, "%s: no value other than the default", f->path);
    const char *dot = strchr(f->path, '.');
    if (!dot) snprintf(assign, sizeof assign, "%s = %s", f->path, val);
    else
      snprintf(assign, sizeof assign, "%.*s = { %s%s = %s }", (int)(dot - f->path), f->path,
               strcmp(f->path, "hla.rank") == 0 ? "selection = \"prefix\", " : "", dot + 1, val);
    snprintf(text, sizeof text,
             "local hot = require \"hot\"\nreturn hot.model { name = \"m\", batch = 2, tokens = 64,\n"
             "  layers = { hot.linear { name = \"fc\", in_features = 64, out_features = 64,\n"
             "    %s } } }\n", assign);
    hot_model m;
    hot_diag d = {0};
    int rc = spec_load_string("row.lua", text, strlen(text), NULL, &m, &d);
    ck_assert_msg(rc == 0, "%s: a spec writing %s fails: %s", f->path, assign,
                  d.count ? d.lines[0] : "?");
    ck_assert_msg(fields_value(&m.layers[0], f) == v, "%s = %s: the C member %s holds %d",
                  f->path, val, f->member, fields_value(&m.layers[0], f));
    if (f->off2) {
      int v2;
      memcpy(&v2, (const char *)&m.layers[0] + f->off2, sizeof v2);
      ck_assert_msg(v2 == v, "%s: the second member holds %d", f->path, v2);
    }
    spec_model_free(&m);
    diag_free(&d);
    ++checked;
  }
  printf("%d spec fields load into their C members\n", checked);
  ck_assert_int_ge(checked, 35);
}
END_TEST

START_TEST(help_names_every_row) {
  hot_diag d = {0};
  char *help = spec_help_text(&d);
  ck_assert_ptr_nonnull(help);
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    if (!f->path) continue;
    char want[96];
    if (strncmp(f->path, "tile_g", 6) == 0) snprintf(want, sizeof want, "  tile.%s ", strchr(f->path, '.') + 1);
    else snprintf(want, sizeof want, "  %s ", f->path);
    const char *at = strstr(help, want);
    ck_assert_msg(at != NULL, "--help-spec does not name %s", f->path);
    const char *eol = strchr(at, '\n');
    ck_assert_ptr_nonnull(eol);
    ck_assert_msg(strstr(at, f->doc) && strstr(at, f->doc) < eol, "%s: doc missing", f->path);
    if (f->kind == HOT_FK_ENUM)
      ck_assert_msg(strstr(at, f->vdoc) && strstr(at, f->vdoc) < eol, "%s: values missing", f->path);
  }
  free(help);
  diag_free(&d);
}
END_TEST

/* ---- the C API (runtime/layer.c: check_enums, apply_recipe) --------------------------------- */

static hot_ctx *cpu_ctx(void) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  o.disk_cache = -1;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  return ctx;
}

static hot_layer_spec sized(hot_recipe r) {
  hot_layer_spec s;
  plan_spec_defaults(&s, r);
  snprintf(s.name, sizeof s.name, "fc");
  s.in_features = 64;
  s.out_features = 64;
  return s;
}

START_TEST(c_api_checks_every_member) {
  hot_ctx *ctx = cpu_ctx();
  hot_layer *l = NULL;
  int checked = 0;
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    if (f->kind == HOT_FK_INT) continue;
    const int bad[] = {-1, f->kind == HOT_FK_BOOL ? 2 : fields_enum_count(f->en)};
    for (int k = 0; k < 2; ++k) {
      hot_layer_spec s = sized(HOT_RECIPE_HOT);
      memcpy((char *)&s + f->off, &bad[k], sizeof(int));
      ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &l), HOT_ERR_INVALID);
      char want[96];
      snprintf(want, sizeof want, "spec.%s = %d", f->member, bad[k]);
      ck_assert_msg(strstr(hot_errmsg(ctx), want), "%s: '%s'", want, hot_errmsg(ctx));
      ++checked;
    }
  }
  hot_layer_spec s = sized(HOT_RECIPE_HOT);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, (hot_recipe)4, &l), HOT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(ctx), "recipe = 4 is not a hot_recipe (0 .. 3)"));
  printf("%d out-of-range members refused by hot_layer_create\n", checked);
  hot_ctx_destroy(ctx);
}
END_TEST

START_TEST(c_api_merges_every_recipe) {
  hot_ctx *ctx = cpu_ctx();
  for (int r = 0; r < fields_enum_count(HOT_E_recipe); ++r) {
    hot_layer_spec s = sized(HOT_RECIPE_HOT), want = sized((hot_recipe)r);
    fields_apply_recipe(&s, (hot_recipe)r);
    ck_assert_msg(memcmp(&s, &want, sizeof s) == 0, "recipe %s", plan_recipe_name((hot_recipe)r));
    /* through hot_layer_create: every accuracy member as the recipe's defaults */
    hot_layer *l = NULL;
    s = sized(HOT_RECIPE_HOT);
    ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, (hot_recipe)r, &l), HOT_OK);
    hot_layer_spec got;
    ck_assert_int_eq(hot_layer_get_spec(l, &got), HOT_OK);
    for (int i = 0; i < fields_all_count(); ++i) {
      const hot_field *f = fields_all_at(i);
      if (fields_class(f) != HOT_FIELD_ACCURACY) continue;
      ck_assert_msg(fields_value(&got, f) == f->dflt[r], "recipe %s: %s = %d, default %d",
                    plan_recipe_name((hot_recipe)r), f->member, fields_value(&got, f), f->dflt[r]);
    }
    /* a member the caller set stays */
    s = sized(HOT_RECIPE_HOT);
    s.hla.g.bits = 6;
    fields_apply_recipe(&s, (hot_recipe)r);
    ck_assert_int_eq(s.hla.g.bits, 6);
  }
  hot_ctx_destroy(ctx);
}
END_TEST

/* ---- python/hot/_lib.py --------------------------------------------------------------------- */

/* The text of `_fields_ = [...]` of ctypes class cls in py (NUL-terminated copy in buf): the
 * class whose base is ctypes.Structure or _lib.py's checked subclass of it, _Checked. */
static int py_fields(const char *py, const char *cls, char *buf, size_t n) {
  char head[96];
  snprintf(head, sizeof head, "class %s(ctypes.Structure):", cls);
  const char *c = strstr(py, head);
  if (!c) {
    snprintf(head, sizeof head, "class %s(_Checked):", cls);
    c = strstr(py, head);
  }
  if (!c) return -1;
  const char *a = strstr(c, "_fields_ = [");
  const char *b = a ? strstr(a, "]\n") : NULL;
  if (!b || (size_t)(b - a) >= n) return -1;
  snprintf(buf, n, "%.*s", (int)(b - a), a);
  return 0;
}

/* The type of member `name` in a _fields_ text ("hot_quant", "c_int"), or -1. */
static int py_member_type(const char *fields, const char *name, char *type, size_t n) {
  char key[64];
  snprintf(key, sizeof key, "(\"%s\", ", name);
  const char *p = strstr(fields, key);
  if (!p) return -1;
  p += strlen(key);
  size_t len = strcspn(p, ")");
  snprintf(type, n, "%.*s", (int)len, p);
  return 0;
}

START_TEST(python_mirror_has_every_row) {
  char *py = read_text("python/hot/_lib.py");
  ck_assert_msg(py != NULL, "python/hot/_lib.py not found (HOT_SOURCE_DIR)");
  for (int i = 0; i < fields_all_count(); ++i) {
    const hot_field *f = fields_all_at(i);
    char cls[64] = "hot_layer_spec", member[64], fields[2048], type[64] = "";
    snprintf(member, sizeof member, "%s", f->member);
    for (char *part = strtok(member, "."); part; part = strtok(NULL, ".")) {
      ck_assert_msg(py_fields(py, cls, fields, sizeof fields) == 0, "%s: _lib.py has no class %s",
                    f->member, cls);
      ck_assert_msg(py_member_type(fields, part, type, sizeof type) == 0,
                    "%s: _lib.py's %s has no field %s", f->member, cls, part);
      snprintf(cls, sizeof cls, "%s", type);
    }
    ck_assert_msg(strcmp(type, "c_int") == 0, "%s: _lib.py types it %s", f->member, type);
  }
  for (int e = 0; e < HOT_E_COUNT; ++e) {
    const char *c0 = fields_enum_const((hot_enum_id)e, 0);
    const char *u = strchr(c0 + 4, '_'); /* HOT_GRAN_TENSOR: prefix HOT_GRAN_ */
    ck_assert_ptr_nonnull(u);
    char key[64], cls[64], head[96];
    snprintf(key, sizeof key, "(\"%.*s\", ", (int)(u + 1 - c0), c0);
    const char *p = strstr(py, key);
    ck_assert_msg(p != NULL, "_lib.py does not map %s", key);
    p += strlen(key);
    snprintf(cls, sizeof cls, "%.*s", (int)strcspn(p, ")"), p);
    snprintf(head, sizeof head, "class %s(enum.IntEnum):", cls);
    const char *body = strstr(py, head);
    ck_assert_msg(body != NULL, "_lib.py has no %s", head);
    const char *end = strstr(body + 1, "\nclass ");
    for (int v = 0; v < fields_enum_count((hot_enum_id)e); ++v) {
      char line[96];
      snprintf(line, sizeof line, "\n    %s = %d\n", fields_enum_const((hot_enum_id)e, v) + (u + 1 - c0), v);
      const char *at = strstr(body, line);
      ck_assert_msg(at && (!end || at < end), "_lib.py's %s lacks%s", cls, line);
    }
  }
  free(py);
}
END_TEST

/* ---- scale ----------------------------------------------------------------------------------- */

/* A mixture-of-experts model written layer by layer has about 47 000 linear modules: 50 000 load
 * within the default limits (the instruction limit grows per layer, gen/spec.h). Not timed. */
START_TEST(fifty_thousand_layers) {
  const char *text =
      "local hot = require \"hot\"\n"
      "local layers = {}\n"
      "for i = 1, 50000 do\n"
      "  layers[i] = hot.linear { name = \"expert\" .. i, in_features = 256, out_features = 512,\n"
      "                           hq = { block = 32 } }\n"
      "end\n"
      "return hot.model { name = \"moe\", batch = 2, tokens = 64, layers = layers }\n";
  hot_model m;
  hot_diag d = {0};
  int rc = spec_load_string("moe.lua", text, strlen(text), NULL, &m, &d);
  ck_assert_msg(rc == 0, "%s", d.count ? d.lines[0] : "?");
  ck_assert_int_eq(m.n_layers, 50000);
  ck_assert_int_eq(m.layers[49999].hq.block, 32);
  ck_assert_int_eq(spec_find_layer(&m, "expert50000"), 49999);
  spec_model_free(&m);
  diag_free(&d);
  /* the same loop without an end still stops at the instruction limit */
  const char *endless = "local hot = require \"hot\"\nlocal l = {}\nwhile true do l[1] = hot.linear {} end\n";
  ck_assert_int_ne(spec_load_string("endless.lua", endless, strlen(endless), NULL, &m, &d), 0);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "endless.lua:3: spec exceeded its instruction limit"));
  diag_free(&d);
}
END_TEST

int main(void) {
  Suite *s = suite_create("fields");
  TCase *tc = tcase_create("rows");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, enumerations_in_order);
  tcase_add_test(tc, table_rows_consistent);
  tcase_add_test(tc, every_row_loads_from_a_spec);
  tcase_add_test(tc, help_names_every_row);
  tcase_add_test(tc, c_api_checks_every_member);
  tcase_add_test(tc, c_api_merges_every_recipe);
  tcase_add_test(tc, python_mirror_has_every_row);
  suite_add_tcase(s, tc);
  tc = tcase_create("scale");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, fifty_thousand_layers);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

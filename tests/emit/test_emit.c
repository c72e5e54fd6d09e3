/* test_emit — emission is deterministic, matches the golden sources in tests/golden/, and the
 * template contract (@hot-params, no other markers, filled parameters only) is enforced. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit.h"
#include "kernel_desc.h"
#include "spec.h"

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) {
    b[n] = '\0';
    if (len) *len = (size_t)n;
  }
  return b;
}

static void src_path(char *buf, size_t n, const char *rel) {
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(buf, n, "%s/%s", root ? root : ".", rel);
}

static void load_vit(hot_model *m) {
  char path[1024];
  src_path(path, sizeof path, "specs/vit_b16.lua");
  hot_diag d = {0};
  int rc = spec_load_file(path, NULL, m, &d);
  ck_assert_msg(rc == 0, "%s", d.count ? d.lines[0] : "?");
  diag_free(&d);
}

START_TEST(deterministic) {
  hot_model m1, m2;
  load_vit(&m1);
  load_vit(&m2);
  for (int a = 0; a < HOT_ARCH_COUNT; ++a)
    for (int l = 0; l < m1.n_layers; ++l) {
      hot_layer_plan p1, p2;
      char err[256];
      ck_assert_int_eq(plan_layer(&m1.layers[l], m1.batch, m1.tokens, m1.recipe, (hot_arch)a, l, &p1, err, sizeof err), 0);
      ck_assert_int_eq(plan_layer(&m2.layers[l], m2.batch, m2.tokens, m2.recipe, (hot_arch)a, l, &p2, err, sizeof err), 0);
      hot_emitted e1, e2;
      ck_assert_int_eq(emit_layer(&p1, &e1, err, sizeof err), 0);
      ck_assert_int_eq(emit_layer(&p2, &e2, err, sizeof err), 0);
      ck_assert_uint_eq(e1.source_len, e2.source_len);
      ck_assert_int_eq(memcmp(e1.source, e2.source, e1.source_len), 0);
      ck_assert_msg(strncmp(e1.source, "// generated from templates/", 28) == 0, "first line: %.60s",
                    e1.source);
      ck_assert_ptr_nonnull(strstr(e1.source, "do not edit"));
      for (int k = 0; k < e1.n_kernels; ++k) {
        char def[200];
        snprintf(def, sizeof def, "#define HOT_KNAME %s\n", e1.kernels[k]);
        ck_assert_msg(strstr(e1.source, def) != NULL, "kernel %s not defined", e1.kernels[k]);
      }
      ck_assert_ptr_null(strstr(e1.source, "#include \"")); /* quoted includes are hoisted */
      emit_free(&e1);
      emit_free(&e2);
    }
  spec_model_free(&m1);
  spec_model_free(&m2);
}
END_TEST

START_TEST(golden_sources) {
  const char *gen = getenv("HOT_GEN");
  ck_assert_msg(gen != NULL, "HOT_GEN not set");
  char tmpl[] = "/tmp/hot-emit-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  char cmd[4096], golden[1024];
  src_path(golden, sizeof golden, "tests/golden/vit_b16");
  /* The spec path is printed into the manifest: run from the source root with a relative path. */
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' specs/vit_b16.lua --layer fc1 --emit '%s' 2>/dev/null",
           root ? root : ".", gen, tmpl);
  ck_assert_int_eq(system(cmd), 0);
  char man[1200];
  snprintf(man, sizeof man, "%s/manifest.json", golden);
  char *manifest = read_all(man, NULL);
  ck_assert_msg(manifest != NULL, "missing %s (run: cmake --build build --target update-golden)", man);
  int files = 0;
  for (const char *p = manifest; (p = strstr(p, "\"file\":\"")); ) {
    p += 8;
    const char *e = strchr(p, '"');
    char name[256], a[1400], b[1400];
    snprintf(name, sizeof name, "%.*s", (int)(e - p), p);
    snprintf(a, sizeof a, "%s/%s", golden, name);
    snprintf(b, sizeof b, "%s/%s", tmpl, name);
    size_t la = 0, lb = 0;
    char *ga = read_all(a, &la), *gb = read_all(b, &lb);
    ck_assert_msg(ga && gb, "missing %s or %s", a, b);
    ck_assert_msg(la == lb && memcmp(ga, gb, la) == 0,
                  "%s differs from the golden file (regenerate on purpose with the update-golden target)", name);
    free(ga);
    free(gb);
    ++files;
  }
  char mb[1200];
  snprintf(mb, sizeof mb, "%s/manifest.json", tmpl);
  char *manifest2 = read_all(mb, NULL);
  ck_assert_str_eq(manifest, manifest2);
  printf("golden: %d sources and the manifest byte-identical\n", files);
  ck_assert_int_ge(files, 1);
  free(manifest);
  free(manifest2);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static const char *k_names[] = {"HOT_KNAME", "HOT_X"};
static const char *k_values[] = {"k_test", "3"};

START_TEST(markers) {
  char *src = NULL, err[256];
  const char *ok = "/* @hot-params: HOT_KNAME HOT_X */\n#include \"hot_math.cuh\"\n"
                   "#define LOCAL_Y (HOT_X + 1)\nextern \"C\" __global__ void HOT_KNAME(int *p) { *p = LOCAL_Y; }\n";
  ck_assert_int_eq(emit_template_text("t.cu", ok, k_names, k_values, 2, &src, err, sizeof err), 0);
  ck_assert_ptr_nonnull(strstr(src, "#define HOT_X 3\n"));
  ck_assert_ptr_nonnull(strstr(src, "#undef LOCAL_Y\n"));
  ck_assert_ptr_nonnull(strstr(src, "#define HOT_MATH_CUH")); /* include hoisted */
  ck_assert_ptr_nonnull(strstr(src, "namespace hot_k0 {"));
  free(src);
  /* unfilled */
  ck_assert_int_eq(emit_template_text("t.cu", ok, k_names, k_values, 1, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "HOT_X is not filled") != NULL, "%s", err);
  /* unknown parameter */
  const char *names3[] = {"HOT_KNAME", "HOT_X", "HOT_Z"}, *values3[] = {"k", "1", "2"};
  ck_assert_int_eq(emit_template_text("t.cu", ok, names3, values3, 3, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "unknown parameter HOT_Z") != NULL, "%s", err);
  /* unknown marker */
  const char *bad = "/* @hot-params: HOT_KNAME HOT_X */\n/* @hot-slot: BODY */\n";
  ck_assert_int_eq(emit_template_text("t.cu", bad, k_names, k_values, 2, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "t.cu:2: unknown marker @hot-slot") != NULL, "%s", err);
  /* no marker */
  ck_assert_int_eq(emit_template_text("t.cu", "int x;\n", k_names, k_values, 2, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "no @hot-params") != NULL, "%s", err);
  /* includes only of templates */
  const char *inc = "/* @hot-params: HOT_KNAME HOT_X */\n#include <stdint.h>\n";
  ck_assert_int_eq(emit_template_text("t.cu", inc, k_names, k_values, 2, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "t.cu:2: only #include") != NULL, "%s", err);
  const char *inc2 = "/* @hot-params: HOT_KNAME HOT_X */\n#include \"nope.cuh\"\n";
  ck_assert_int_eq(emit_template_text("t.cu", inc2, k_names, k_values, 2, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "templates/nope.cuh not found") != NULL, "%s", err);
  /* a missing template file */
  ck_assert_int_eq(emit_template("templates/none.cu", k_names, k_values, 2, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "template not found") != NULL, "%s", err);
  ck_assert_int_eq(emit_template(NULL, k_names, k_values, 2, &src, err, sizeof err), -1);
}
END_TEST

/* Every real template declares its parameters and the plan fills exactly those. */
START_TEST(real_templates_filled) {
  hot_model m;
  load_vit(&m);
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    hot_layer_plan p;
    char err[256];
    ck_assert_int_eq(plan_layer(&m.layers[0], m.batch, m.tokens, m.recipe, (hot_arch)a, 0, &p, err, sizeof err), 0);
    for (int k = 0; k < p.n_kernels; ++k) {
      hot_emitted e;
      int rc = emit_layer_select(&p, 1u << k, &e, err, sizeof err);
      ck_assert_msg(rc == 0, "%s: %s", p.kernels[k].name, err);
      ck_assert_int_eq(e.n_kernels + e.n_missing, 1);
      emit_free(&e);
    }
  }
  spec_model_free(&m);
}
END_TEST

/* The value of "#define NAME value" in the emitted source (the first one), malloc'd, or NULL. */
static char *define_value(const char *src, const char *name) {
  char key[96];
  snprintf(key, sizeof key, "\n#define %s ", name);
  const char *p = strstr(src, key);
  if (!p) return NULL;
  p += strlen(key);
  const char *e = strchr(p, '\n');
  size_t n = e ? (size_t)(e - p) : strlen(p);
  char *v = malloc(n + 1);
  memcpy(v, p, n);
  v[n] = '\0';
  return v;
}

static hot_layer_spec small_layer(void) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "t");
  s.in_features = 96;
  s.out_features = 64;
  return s;
}

/* HOT_ROWS carries every row of the plan, for every p in 2..1024 and every selection (a value
 * of any length: p = 1024 full has 1024 rows, about 4.9 KB of text). */
START_TEST(rows_every_p) {
  int checked = 0;
  for (int pb = 2; pb <= 1024; pb *= 2)
    for (int sel = 0; sel < 3; ++sel)
      for (int v = 0; v < 2; ++v) {
        hot_layer_spec s = small_layer();
        s.hla.block = pb;
        s.hla.selection = (hot_selection)sel;
        s.hla.keep = v ? 50 : 13;
        s.hla.rank = v ? pb : (pb + 1) / 3 + 1;
        hot_layer_plan pl;
        char err[256];
        ck_assert_msg(plan_layer(&s, 2, pb, HOT_RECIPE_HOT, HOT_ARCH_SM90, 0, &pl, err,
                                 sizeof err) == 0, "%s", err);
        const int k = plan_kernel_index(&pl, HOT_K_HLA_G);
        ck_assert_int_ge(k, 0);
        hot_emitted e;
        ck_assert_msg(emit_layer_select(&pl, 1u << k, &e, err, sizeof err) == 0, "%s", err);
        char *rows = define_value(e.source, "HOT_ROWS"), *r = define_value(e.source, "HOT_R");
        ck_assert_ptr_nonnull(rows);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(atoi(r), pl.hla.rank);
        const char *q = rows;
        for (int i = 0; i < pl.hla.rank; ++i) {
          char *end;
          long val = strtol(q, &end, 10);
          ck_assert_msg(end != q, "p=%d sel=%d: row %d of %d missing", pb, sel, i, pl.hla.rank);
          ck_assert_int_eq(val, pl.hla.rows[i]);
          ck_assert(*end == (i + 1 < pl.hla.rank ? ',' : '\0'));
          q = end + (*end == ',');
        }
        free(rows);
        free(r);
        emit_free(&e);
        ++checked;
      }
  ck_assert_int_eq(checked, 10 * 3 * 2);
}
END_TEST

/* The rounding mode of g' and g^ reaches the kernels (HOT_ROUND) and their names, so an RTN
 * layer never shares a binary with an SR one; w' and x^ are always RTN. */
START_TEST(round_mode_carried) {
  for (int rtn = 0; rtn < 2; ++rtn) {
    hot_layer_spec s = small_layer();
    s.hq.g.round = rtn ? HOT_ROUND_RTN : HOT_ROUND_SR;
    s.hla.g.round = rtn ? HOT_ROUND_RTN : HOT_ROUND_SR;
    hot_layer_plan pl;
    char err[256];
    ck_assert_msg(plan_layer(&s, 2, 64, HOT_RECIPE_HOT, HOT_ARCH_SM80, 0, &pl, err, sizeof err) == 0,
                  "%s", err);
    const hot_kernel_role roles[] = {HOT_K_HQ_G, HOT_K_HLA_G, HOT_K_HQ_W, HOT_K_ABC_X};
    for (int i = 0; i < 4; ++i) {
      const int k = plan_kernel_index(&pl, roles[i]);
      ck_assert_int_ge(k, 0);
      const int sr = i < 2 && !rtn; /* w' and x^: RTN */
      const char *nm = pl.kernels[k].name;
      const size_t len = strlen(nm);
      ck_assert_msg((i < 2 && rtn) == (len > 4 && strcmp(nm + len - 4, "_rtn") == 0), "%s", nm);
      hot_emitted e;
      ck_assert_msg(emit_layer_select(&pl, 1u << k, &e, err, sizeof err) == 0, "%s", err);
      char *v = define_value(e.source, "HOT_ROUND");
      ck_assert_ptr_nonnull(v);
      ck_assert_msg(atoi(v) == sr, "%s: HOT_ROUND %s", nm, v);
      free(v);
      emit_free(&e);
    }
  }
  /* SR for w' or x^ is refused (no random stream is defined for them), never ignored */
  hot_layer_spec s = small_layer();
  s.hq.w.round = HOT_ROUND_SR;
  hot_layer_plan pl;
  char err[256] = "";
  ck_assert_int_eq(plan_layer(&s, 2, 64, HOT_RECIPE_HOT, HOT_ARCH_SM80, 0, &pl, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "hq.w.round (w') must be rtn"), "%s", err);
  s = small_layer();
  s.hla.x.round = HOT_ROUND_SR;
  ck_assert_int_eq(plan_layer(&s, 2, 64, HOT_RECIPE_HOT, HOT_ARCH_SM80, 0, &pl, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "hla.x.round (x^) must be rtn"), "%s", err);
}
END_TEST

/* Values of any length pass whole; names and macros that do not fit are errors, never cut. */
START_TEST(no_truncation) {
  const char *text = "/* @hot-params: HOT_KNAME HOT_V */\n#ifndef HOT_GENERATED\n#define HOT_KNAME k\n"
                     "#define HOT_V 1\n#endif\nextern \"C\" __global__ void HOT_KNAME(int a) {}\n";
  size_t big = 20000;
  char *v = malloc(big + 1);
  for (size_t i = 0; i < big; ++i) v[i] = (char)('0' + i % 10);
  v[big] = '\0';
  const char *names[] = {"HOT_KNAME", "HOT_V"};
  const char *values[] = {"k", v};
  char *src = NULL, err[256];
  ck_assert_msg(emit_template_text("t.cu", text, names, values, 2, &src, err, sizeof err) == 0, "%s",
                err);
  char *got = define_value(src, "HOT_V");
  ck_assert_str_eq(got, v);
  free(got);
  free(src);
  free(v);
  /* a parameter name longer than the parser keeps */
  char longname[128];
  memset(longname, 'A', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  memcpy(longname, "HOT_", 4);
  char text2[512];
  snprintf(text2, sizeof text2, "/* @hot-params: HOT_KNAME %s */\nint x;\n", longname);
  const char *names2[] = {"HOT_KNAME", longname};
  const char *values2[] = {"k", "1"};
  ck_assert_int_eq(emit_template_text("t2.cu", text2, names2, values2, 2, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "longer than"), "%s", err);
  /* a macro name longer than the parser keeps (it could not be #undef'd) */
  snprintf(text2, sizeof text2, "/* @hot-params: HOT_KNAME */\n#define %s 1\nint x;\n", longname);
  ck_assert_int_eq(emit_template_text("t3.cu", text2, names, values, 1, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "t3.cu:2: a macro name longer than"), "%s", err);
  /* more macros than the parser keeps */
  size_t cap = 64 * 32 + 256;
  char *many = malloc(cap);
  size_t o = (size_t)snprintf(many, cap, "/* @hot-params: HOT_KNAME */\n");
  for (int i = 0; i < 70; ++i) o += (size_t)snprintf(many + o, cap - o, "#define M%d 1\n", i);
  ck_assert_int_eq(emit_template_text("t4.cu", many, names, values, 1, &src, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "more than 64 macros"), "%s", err);
  free(many);
}
END_TEST

/* Every planned kernel's launch signature (its descriptor's sig) is its template's entry point
 * (emit_entry_params, which accepts the TMA kernel's `const __grid_constant__` map parameters),
 * and the emitted source defines what the descriptor says: HOT_COLS for the HLA projections, the
 * consumer warps (HOT_WARPS_N 1) for the TMA GEMM. Plans cover every template: sm_80 (int4
 * mma.sync, SAWB, LQS, bias), sm_90a (wgmma), sm_90a with warps_n = 2 (TMA). */
START_TEST(descriptor_signatures) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_PAPER_CODE);
  snprintf(s.name, sizeof s.name, "sig");
  s.in_features = 768;
  s.out_features = 3072;
  s.bias = 1;
  s.hq.g.gran = HOT_GRAN_AUTO;
  s.hq.w.rule = HOT_RULE_SAWB;
  s.hla.x.rule = HOT_RULE_SAWB;
  static hot_layer_plan p;
  char err[512];
  const char *names[16];
  int n_names = 0;
  for (int v = 0; v < 3; ++v) {
    s.tile_gx.warps_n = s.tile_gw.warps_n = v == 2 ? 2 : 0;
    const hot_arch arch = v == 0 ? HOT_ARCH_SM80 : HOT_ARCH_SM90A;
    ck_assert_msg(plan_layer(&s, 4, 196, HOT_RECIPE_PAPER_CODE, arch, 0, &p, err, sizeof err) == 0,
                  "%s", err);
    for (int k = 0; k < p.n_kernels; ++k) {
      const hot_kernel_desc *d = kd_of(&p.kernels[k]);
      ck_assert_ptr_nonnull(d);
      char *want = NULL;
      ck_assert_msg(emit_entry_params(p.kernels[k].templ, &want, err, sizeof err) == 0, "%s", err);
      ck_assert_msg(!strcmp(d->sig, want), "%s (%s): descriptor %s passes\n  %s\nthe entry takes\n  %s",
                    p.kernels[k].name, p.kernels[k].templ, d->family, d->sig, want);
      free(want);
      int seen = 0;
      for (int i = 0; i < n_names; ++i) seen |= !strcmp(names[i], p.kernels[k].templ);
      if (!seen && n_names < 16) names[n_names++] = p.kernels[k].templ;
      hot_emitted e;
      ck_assert_msg(emit_layer_select(&p, 1u << k, &e, err, sizeof err) == 0, "%s", err);
      if (!strcmp(p.kernels[k].templ, "templates/hla_project.cu"))
        ck_assert_ptr_nonnull(strstr(e.source, p.hla.block <= 32 ? "#define HOT_COLS 256\n"
                                                                  : "#define HOT_COLS "));
      if (!strcmp(p.kernels[k].templ, "templates/gemm_tma.cu"))
        ck_assert_ptr_nonnull(strstr(e.source, "#define HOT_WARPS_N 1\n"));
      emit_free(&e);
    }
  }
  ck_assert_int_eq(n_names, 9); /* hadamard_quant, hla_project, sawb, lqs, bias, abc_unpack, 3 GEMMs */
}
END_TEST

int main(void) {
  Suite *s = suite_create("emit");
  TCase *tc = tcase_create("emit");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, deterministic);
  tcase_add_test(tc, golden_sources);
  tcase_add_test(tc, markers);
  tcase_add_test(tc, real_templates_filled);
  tcase_add_test(tc, rows_every_p);
  tcase_add_test(tc, round_mode_carried);
  tcase_add_test(tc, no_truncation);
  tcase_add_test(tc, descriptor_signatures);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

/* test_emit — emission is deterministic, matches the golden sources in tests/golden/, and the
 * template contract (@hot-params, no other markers, filled parameters only) is enforced. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit.h"
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

int main(void) {
  Suite *s = suite_create("emit");
  TCase *tc = tcase_create("emit");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, deterministic);
  tcase_add_test(tc, golden_sources);
  tcase_add_test(tc, markers);
  tcase_add_test(tc, real_templates_filled);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}

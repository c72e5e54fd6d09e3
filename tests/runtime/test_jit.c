/* test_jit.c — the whole-model compile pool (jit_prefetch) over a shipped spec, with the fake
 * compiler of rt_util.h: every distinct kernel of every layer and arch is compiled exactly once,
 * in one batch, and the per-layer requests after it compile nothing. */
#include "rt_util.h"

#include <check.h>

#include "cache.h"
#include "diag.h"
#include "emit.h"
#include "jit.h"
#include "spec.h"

static void load_spec(hot_model *m, const char *rel) {
  char path[1024];
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
  hot_diag d = {0};
  int rc = spec_load_file(path, NULL, m, &d);
  ck_assert_msg(rc == 0, "%s", d.count ? d.lines[0] : "?");
  diag_free(&d);
}

/* The distinct (name, arch, source) kernels of the plans whose template exists: what one pool
 * compiles (the cache key covers the source, so equal names with different sources are two). */
static int distinct_kernels(hot_layer_plan *pl, int n) {
  int count = 0, cap = n * HOT_MAX_KERNELS;
  char **src = calloc((size_t)cap, sizeof *src);
  const char **name = calloc((size_t)cap, sizeof *name);
  hot_arch *arch = calloc((size_t)cap, sizeof *arch);
  ck_assert(src && name && arch);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < pl[i].n_kernels; ++k) {
      hot_emitted e;
      char err[256];
      ck_assert_int_eq(emit_layer_select(&pl[i], 1u << k, &e, err, sizeof err), 0);
      int seen = e.n_kernels == 0;
      for (int j = 0; j < count && !seen; ++j)
        seen = arch[j] == pl[i].arch && strcmp(name[j], pl[i].kernels[k].name) == 0 &&
               strcmp(src[j], e.source) == 0;
      if (seen) {
        emit_free(&e);
        continue;
      }
      src[count] = e.source;
      name[count] = pl[i].kernels[k].name;
      arch[count++] = pl[i].arch;
    }
  for (int j = 0; j < count; ++j) free(src[j]);
  free(src);
  free(name);
  free(arch);
  return count;
}

static void prefetch_spec(const char *rel) {
  hot_model m;
  load_spec(&m, rel);
  hot_arch archs[] = {HOT_ARCH_SM80, HOT_ARCH_SM90};
  int np = 0;
  hot_layer_plan *pl = calloc((size_t)m.n_layers * 2, sizeof *pl);
  const hot_layer_plan **pp = calloc((size_t)m.n_layers * 2, sizeof *pp);
  ck_assert(pl && pp);
  char err[512];
  for (int a = 0; a < 2; ++a)
    for (int l = 0; l < m.n_layers; ++l) {
      const hot_layer_spec *s = &m.layers[l];
      ck_assert_msg(plan_layer(s, m.batch, s->tokens ? s->tokens : m.tokens, m.recipe, archs[a], l,
                               &pl[np], err, sizeof err) == 0, "%s", err);
      pp[np] = &pl[np];
      ++np;
    }
  fake_cc f = {0, 0, 0, "fake-1.0", 0};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache_config cfg = {0};
  cfg.disk = -1;
  cfg.compiler = &cc;
  hot_kcache *kc;
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  hot_jit_batch b;
  ck_assert_msg(jit_prefetch(kc, pp, np, 2, &b, err, sizeof err) == RT_OK, "%s", err);
  int want = distinct_kernels(pl, np);
  ck_assert_int_gt(want, 0);
  ck_assert_int_eq(b.n_programs, want);
  ck_assert_int_eq(b.n_compiled, want);
  ck_assert_int_eq(b.n_failed, 0);
  ck_assert_int_eq(f.compiles, want); /* once each, across layers and threads */
  ck_assert_int_eq(b.threads, 2);
  /* Again: everything in memory, nothing compiled. */
  ck_assert_int_eq(jit_prefetch(kc, pp, np, 2, &b, err, sizeof err), RT_OK);
  ck_assert_int_eq(b.n_compiled, 0);
  ck_assert_int_eq(b.n_programs, want);
  for (int i = 0; i < np; ++i) { /* each layer's own request: memory hits only */
    hot_jit j;
    ck_assert_msg(jit_layer(kc, &pl[i], 2, &j, NULL, err, sizeof err) == RT_OK, "%s", err);
    for (int k = 0; k < pl[i].n_kernels; ++k)
      if (j.bin[k]) ck_assert_int_eq(j.origin[k], HOT_KCACHE_MEMORY);
    jit_free(&j);
  }
  ck_assert_int_eq(f.compiles, want);
  printf("%s: %d plans, %d distinct kernels compiled once\n", rel, np, want);
  kcache_close(kc);
  free(pl);
  free(pp);
  spec_model_free(&m);
}

START_TEST(prefetch_vit) { prefetch_spec("specs/vit_b16.lua"); }
END_TEST

START_TEST(prefetch_efficientformer) { prefetch_spec("specs/efficientformer_l7.lua"); }
END_TEST

START_TEST(prefetch_failures_counted) {
  hot_model m;
  load_spec(&m, "specs/vit_b16.lua");
  hot_layer_plan pl;
  char err[512];
  const hot_layer_spec *s = &m.layers[0];
  ck_assert_int_eq(plan_layer(s, m.batch, s->tokens ? s->tokens : m.tokens, m.recipe, HOT_ARCH_SM90,
                              0, &pl, err, sizeof err), 0);
  fake_cc f = {0, 1, 0, "fake-1.0", 0};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache_config cfg = {0};
  cfg.disk = -1;
  cfg.compiler = &cc;
  hot_kcache *kc;
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  const hot_layer_plan *pp = &pl;
  hot_jit_batch b;
  ck_assert_int_eq(jit_prefetch(kc, &pp, 1, 1, &b, err, sizeof err), RT_OK);
  ck_assert_int_gt(b.n_failed, 0);
  ck_assert_int_eq(b.n_failed, b.n_programs);
  ck_assert_int_eq(b.n_compiled, 0);
  /* the layer's own request reports it, naming the kernel */
  hot_jit j;
  char *log = NULL;
  ck_assert_int_eq(jit_layer(kc, &pl, 1, &j, &log, err, sizeof err), RT_ERR_COMPILE);
  ck_assert_ptr_nonnull(strstr(err, "kernel hot_"));
  free(log);
  /* bad arguments */
  ck_assert_int_eq(jit_prefetch(NULL, &pp, 1, 1, &b, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(jit_prefetch(kc, NULL, 1, 1, &b, err, sizeof err), RT_ERR_INVALID);
  const hot_layer_plan *nul = NULL;
  ck_assert_int_eq(jit_prefetch(kc, &nul, 1, 1, &b, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(jit_prefetch(kc, NULL, 0, 1, &b, err, sizeof err), RT_OK);
  ck_assert_int_eq(b.n_programs, 0);
  kcache_close(kc);
  spec_model_free(&m);
}
END_TEST

/* Over every shipped spec and two archs: kernels of the same name emitted alone have the same
 * source wherever they sit in whichever layer's plan (else equal kernels miss each other's cache
 * entries and a model compiles them again). */
START_TEST(same_name_same_source) {
  const char *specs[] = {"specs/vit_b16.lua", "specs/efficientformer_l7.lua", "specs/resnet50.lua",
                         "specs/llm_block.lua", "specs/bench_large.lua"};
  hot_arch archs[] = {HOT_ARCH_SM80, HOT_ARCH_SM90};
  for (size_t si = 0; si < sizeof specs / sizeof *specs; ++si) {
    hot_model m;
    load_spec(&m, specs[si]);
    for (int a = 0; a < 2; ++a) {
      const char *name[256];
      char *src[256];
      int n = 0;
      for (int l = 0; l < m.n_layers; ++l) {
        hot_layer_plan pl;
        char err[512];
        const hot_layer_spec *s = &m.layers[l];
        ck_assert_msg(plan_layer(s, m.batch, s->tokens ? s->tokens : m.tokens, m.recipe, archs[a],
                                 l, &pl, err, sizeof err) == 0, "%s", err);
        for (int k = 0; k < pl.n_kernels; ++k) {
          hot_emitted e;
          ck_assert_int_eq(emit_layer_select(&pl, 1u << k, &e, err, sizeof err), 0);
          if (!e.n_kernels) {
            emit_free(&e);
            continue;
          }
          int j = 0;
          while (j < n && strcmp(name[j], pl.kernels[k].name) != 0) ++j;
          if (j < n) {
            ck_assert_msg(strcmp(src[j], e.source) == 0, "%s: kernel %s of layer %s (index %d) "
                          "differs from its first emission", specs[si], name[j], s->name, k);
            emit_free(&e);
          } else {
            ck_assert_int_lt(n, 256);
            name[n] = strdup(pl.kernels[k].name);
            src[n++] = e.source;
          }
        }
      }
      for (int j = 0; j < n; ++j) {
        free((char *)name[j]);
        free(src[j]);
      }
    }
    spec_model_free(&m);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_jit");
  TCase *t = tcase_create("prefetch");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, prefetch_vit);
  tcase_add_test(t, prefetch_efficientformer);
  tcase_add_test(t, prefetch_failures_counted);
  tcase_add_test(t, same_name_same_source);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

/* test_limits.c — sizes the kernels cannot address are refused with a one-line reason naming the
 * size, its value and the limit (gen/plan.h HOT_LIMIT_*), from every way in: the planner, a spec
 * inside every documented range, and the C API (hot_layer_create, hot_layer_from_spec with
 * batch_override). Built with -DHOT_SANITIZE=ON, UBSan aborts on any signed overflow on the way
 * (-fno-sanitize-recover), so a clean refusal here also proves overflow-free arithmetic. Also:
 * the largest sizes within the limits plan, and the saved-buffer bytes the plan reports are what
 * the CPU backend keeps. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hot.h"
#include "plan.h"
#include "spec.h"

static hot_layer_plan g_plan; /* large: keep off the stack */

static hot_layer_spec layer(int64_t in, int64_t out) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "big");
  s.in_features = in;
  s.out_features = out;
  return s;
}

/* plan_layer refuses with a message holding every string of want (NULL-terminated). */
static void refused(const hot_layer_spec *s, int64_t B, int64_t L, hot_arch a, const char *w1,
                    const char *w2) {
  char err[256] = "";
  int rc = plan_layer(s, B, L, HOT_RECIPE_HOT, a, 0, &g_plan, err, sizeof err);
  printf("B=%lld L=%lld O=%lld I=%lld: %s\n", (long long)B, (long long)L,
         (long long)s->out_features, (long long)s->in_features, err);
  ck_assert_msg(rc == -1, "accepted; expected \"%s\"", w1);
  ck_assert_msg(strstr(err, w1), "\"%s\" lacks \"%s\"", err, w1);
  ck_assert_msg(!w2 || strstr(err, w2), "\"%s\" lacks \"%s\"", err, w2);
}

static void accepted(const hot_layer_spec *s, int64_t B, int64_t L, hot_arch a) {
  char err[256] = "";
  ck_assert_msg(plan_layer(s, B, L, HOT_RECIPE_HOT, a, 0, &g_plan, err, sizeof err) == 0,
                "B=%lld L=%lld: %s", (long long)B, (long long)L, err);
}

START_TEST(planner_limits) {
  const int64_t e40 = (int64_t)1 << 40, e62 = (int64_t)1 << 62;
  hot_layer_spec s = layer(768, 3072);
  /* batch, tokens, features beyond a 32-bit int; T = B x L beyond it (no overflow on the way) */
  refused(&s, e40, e40, HOT_ARCH_SM90, "batch = 1099511627776 exceeds the kernels' limit",
          "2147483647");
  refused(&s, e62, 197, HOT_ARCH_SM90, "batch = 4611686018427387904 exceeds", "2147483647");
  refused(&s, 32, e62, HOT_ARCH_SM90, "tokens (L) = 4611686018427387904 exceeds", "2147483647");
  refused(&s, (int64_t)1 << 30, (int64_t)1 << 30, HOT_ARCH_SM90,
          "T = batch x tokens = 1073741824 x 1073741824 exceeds", "2147483647");
  refused(&s, (int64_t)1 << 24, (int64_t)1 << 29, HOT_ARCH_SM80, "T = batch x tokens", NULL);
  hot_layer_spec f = layer(e40, 768);
  refused(&f, 32, 197, HOT_ARCH_SM90, "in_features (I) = 1099511627776 exceeds", "2147483647");
  f = layer(768, INT64_MAX);
  refused(&f, 32, 197, HOT_ARCH_SM90, "out_features (O) = 9223372036854775807 exceeds", NULL);
  /* O just below 2^31 rounds up past it */
  f = layer(768, HOT_LIMIT_INT);
  refused(&f, 1, 64, HOT_ARCH_SM90, "hq o_pad (O rounded up to hq.block) = 2147483648 exceeds",
          NULL);
  /* every documented spec range at once: features 2^29 (x^ column tiles: 2^29 / 128 = 2^22) */
  f = layer((int64_t)1 << 29, (int64_t)1 << 29);
  refused(&f, 32, 197, HOT_ARCH_SM90, "kernel abc_x: grid.y = 4194304 exceeds the launch limit of "
          "65535", NULL);
  f.abc.enabled = 0; /* then the w' chunks: 2^29 / 256 = 2^21 */
  refused(&f, 32, 197, HOT_ARCH_SM90, "kernel hq_w: grid.y = 2097152 exceeds the launch limit of "
          "65535", NULL);
  /* grid.y of the GEMM: M tiles of 128 rows; 65535 tiles plan, 65536 are refused */
  s = layer(256, 256);
  accepted(&s, 65535, 128, HOT_ARCH_SM80);
  ck_assert_int_eq(g_plan.hq.gemm.tile_m, 128);
  ck_assert_uint_eq(g_plan.kernels[plan_kernel_index(&g_plan, HOT_K_GEMM_GX)].grid[1], 65535);
  refused(&s, 65536, 128, HOT_ARCH_SM80, "kernel gemm_gx: grid.y = 65536 exceeds the launch limit "
          "of 65535", NULL);
  /* every buffer of an accepted plan has a size */
  accepted(&s, 65535, 128, HOT_ARCH_SM80);
  for (int b = 0; b < HOT_BUF_COUNT; ++b)
    ck_assert_msg(plan_buffer_bytes(&g_plan, (hot_buffer)b) >= 0, "%s",
                  plan_buffer_name((hot_buffer)b));
  ck_assert_int_eq(plan_buffer_bytes(&g_plan, HOT_BUF_SAVED), g_plan.abc.bytes);
}
END_TEST

/* A spec whose every field is inside its documented range (features 2^29) plans to a refusal. */
START_TEST(spec_in_range_refused) {
  const char *text = "local hot = require 'hot'\n"
                     "return hot.model { name = 'big', batch = 32, tokens = 197,\n"
                     "  layers = { hot.linear { name = 'fc', in_features = 1 << 29,\n"
                     "                          out_features = 1 << 29 } } }\n";
  hot_model m;
  hot_diag d = {0};
  ck_assert_msg(spec_load_string("big.lua", text, strlen(text), NULL, &m, &d) == 0, "%s",
                d.count ? d.lines[0] : "?");
  diag_free(&d);
  refused(&m.layers[0], m.batch, m.tokens, HOT_ARCH_SM90, "exceeds the launch limit of 65535",
          NULL);
  spec_model_free(&m);
  const char *text2 = "local hot = require 'hot'\n"
                      "return hot.model { name = 'big', batch = 1 << 24, tokens = 1 << 29,\n"
                      "  layers = { hot.linear { name = 'fc', in_features = 64,\n"
                      "                          out_features = 64 } } }\n";
  ck_assert_int_eq(spec_load_string("big2.lua", text2, strlen(text2), NULL, &m, &d), 0);
  diag_free(&d);
  refused(&m.layers[0], m.batch, m.tokens, HOT_ARCH_SM80,
          "T = batch x tokens = 16777216 x 536870912 exceeds", NULL);
  spec_model_free(&m);
}
END_TEST

static hot_ctx *cpu_ctx(void) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  return ctx;
}

START_TEST(api_limits) {
  hot_ctx *ctx = cpu_ctx();
  hot_layer_spec s = layer(768, 3072);
  hot_layer *l = NULL;
  const int64_t e40 = (int64_t)1 << 40;
  ck_assert_int_eq(hot_layer_create(ctx, &s, e40, e40, HOT_RECIPE_HOT, &l), HOT_ERR_PLAN);
  ck_assert_ptr_null(l);
  printf("hot_layer_create: %s\n", hot_errmsg(ctx));
  ck_assert_msg(strstr(hot_errmsg(ctx), "batch = 1099511627776 exceeds the kernels' limit of "
                       "2147483647"), "%s", hot_errmsg(ctx));
  char path[1024];
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/specs/vit_b16.lua", root ? root : ".");
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "fc1", (int64_t)1 << 62, &l), HOT_ERR_PLAN);
  printf("hot_layer_from_spec: %s\n", hot_errmsg(ctx));
  ck_assert_msg(strstr(hot_errmsg(ctx), "batch = 4611686018427387904 exceeds"), "%s",
                hot_errmsg(ctx));
  /* within the limits: the plan's saved bytes are what the layer reports and keeps */
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 197, HOT_RECIPE_HOT, &l), HOT_OK);
  const hot_layer_plan *pl = hot_layer_get_plan(l);
  ck_assert_int_eq((int64_t)hot_layer_saved_bytes(l), pl->abc.bytes);
  ck_assert_int_eq(pl->abc.bytes, (pl->I * pl->hla.k + 15) / 16 * 16 + 4);
  hot_layer_info info;
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq((int64_t)info.saved_bytes, pl->abc.bytes);
  hot_ctx_destroy(ctx);
}
END_TEST

int main(void) {
  unsetenv("HOT_ARCH");
  Suite *su = suite_create("limits");
  TCase *tc = tcase_create("limits");
  tcase_add_test(tc, planner_limits);
  tcase_add_test(tc, spec_in_range_refused);
  tcase_add_test(tc, api_limits);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

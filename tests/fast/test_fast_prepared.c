/* test_fast_prepared.c — a prepared CPU layer (fast_layer_prepare) asks the planner nothing per
 * call, and gives the bits of the unprepared calls.
 *
 * Linked with --wrap for every gen/ function the fast path's step walk could call (kd_steps,
 * plan_kernel_index, kd_of): each wrapper counts its calls and forwards. Preparing a layer calls
 * them; a save, a backward and a calibration on the prepared layer call none, for each recipe. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fast.h"
#include "plan.h"
#include "ref.h"

static int n_gen_calls;

int __real_kd_steps(hot_call call, hot_step *out, int max);
int __real_plan_kernel_index(const hot_layer_plan *p, hot_kernel_role role);
const hot_kernel_desc *__real_kd_of(const hot_kernel_plan *k);
int __wrap_kd_steps(hot_call call, hot_step *out, int max);
int __wrap_plan_kernel_index(const hot_layer_plan *p, hot_kernel_role role);
const hot_kernel_desc *__wrap_kd_of(const hot_kernel_plan *k);

int __wrap_kd_steps(hot_call call, hot_step *out, int max) {
  ++n_gen_calls;
  return __real_kd_steps(call, out, max);
}
int __wrap_plan_kernel_index(const hot_layer_plan *p, hot_kernel_role role) {
  ++n_gen_calls;
  return __real_plan_kernel_index(p, role);
}
const hot_kernel_desc *__wrap_kd_of(const hot_kernel_plan *k) {
  ++n_gen_calls;
  return __real_kd_of(k);
}

static float *fill(int64_t n, unsigned seed) {
  float *v = malloc((size_t)n * sizeof *v);
  unsigned s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1103515245u + 12345u;
    v[i] = (float)((int)(s >> 9 & 0xffff) - 32768) / 16384.0f;
  }
  return v;
}

/* Recipe rec's layer 96 -> 160 over 2 x 64 tokens (sm_90's tables): its spec into *sp, which
 * the plan *pl borrows (the caller keeps it as long as the plan). */
static void plan_test_layer(hot_recipe rec, hot_layer_spec *sp, hot_layer_plan *pl) {
  char err[256] = "";
  plan_spec_defaults(sp, rec);
  strcpy(sp->name, "p");
  sp->in_features = 96, sp->out_features = 160;
  ck_assert_msg(plan_layer(sp, 2, 64, rec, HOT_ARCH_SM90, 5, pl, err, sizeof err) == 0, "%s", err);
}

static void check_recipe(hot_recipe rec) {
  hot_layer_spec sp; /* the plan borrows it */
  hot_layer_plan pl;
  plan_test_layer(rec, &sp, &pl);
  const int64_t T = pl.T, I = pl.I, O = pl.O;
  float *x = fill(T * I, 1), *g_y = fill(T * O, 2), *w = fill(O * I, 3);
  float *gx[2], *gw[2], *gb[2];
  for (int k = 0; k < 2; ++k) {
    gx[k] = calloc((size_t)(T * I), sizeof(float));
    gw[k] = calloc((size_t)(O * I), sizeof(float));
    gb[k] = calloc((size_t)O, sizeof(float));
  }
  fast_prepared p;
  n_gen_calls = 0;
  ck_assert_int_eq(fast_layer_prepare(&pl, &p), HOT_REF_OK);
  ck_assert_msg(n_gen_calls > 0, "preparing a layer reads the step table (the wrappers count)");
  hot_ref_saved s[2];
  hot_ref_lqs_result r[2];
  unsigned over = 0;
  n_gen_calls = 0;
  ck_assert_int_eq(fast_prepared_save(NULL, &p, x, HOT_DT_F32, &s[0]), HOT_REF_OK);
  ck_assert_int_eq(fast_prepared_backward_check(NULL, &p, &s[0], g_y, w, HOT_DT_F32, HOT_GRAN_ROW,
                                                7, 3, gx[0], gw[0], gb[0], &over), HOT_REF_OK);
  ck_assert_int_eq(fast_prepared_calibrate(NULL, &p, g_y, HOT_DT_F32, 7, 3, &r[0]), HOT_REF_OK);
  ck_assert_msg(n_gen_calls == 0, "recipe %d: a prepared layer's calls asked gen/ %d times", (int)rec,
                n_gen_calls);
  /* the unprepared calls: the same bits */
  ck_assert_int_eq(fast_layer_save(NULL, &pl, x, HOT_DT_F32, &s[1]), HOT_REF_OK);
  ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s[1], g_y, w, HOT_DT_F32, HOT_GRAN_ROW, 7, 3,
                                       gx[1], gw[1], gb[1]), HOT_REF_OK);
  ck_assert_int_eq(fast_layer_calibrate(NULL, &pl, g_y, HOT_DT_F32, 7, 3, &r[1]), HOT_REF_OK);
  ck_assert_int_eq(memcmp(gx[0], gx[1], (size_t)(T * I) * sizeof(float)), 0);
  ck_assert_int_eq(memcmp(gw[0], gw[1], (size_t)(O * I) * sizeof(float)), 0);
  ck_assert_int_eq(memcmp(gb[0], gb[1], (size_t)O * sizeof(float)), 0);
  ck_assert_int_eq(r[0].choice, r[1].choice);
  ck_assert_int_eq(memcmp(&r[0].e_tensor, &r[1].e_tensor, sizeof r[0].e_tensor), 0);
  ck_assert_int_eq(memcmp(&r[0].e_token, &r[1].e_token, sizeof r[0].e_token), 0);
  for (int k = 0; k < 2; ++k) {
    ref_saved_free(&s[k]);
    free(gx[k]), free(gw[k]), free(gb[k]);
  }
  free(x), free(g_y), free(w);
}

START_TEST(prepared_calls_ask_gen_nothing) {
  check_recipe(HOT_RECIPE_HOT);
  check_recipe(HOT_RECIPE_PAPER);
  check_recipe(HOT_RECIPE_PAPER_CODE);
}
END_TEST

/* fast_prepared_save_into: the same code bytes and scales as fast_prepared_save's q_x and s_x,
 * written into the caller's buffer (out->q_x NULL); a non-finite x writes no byte of it. */
START_TEST(save_into_caller_buffer) {
  hot_layer_spec sp; /* the plan borrows it */
  hot_layer_plan pl;
  plan_test_layer(HOT_RECIPE_HOT, &sp, &pl);
  ck_assert(pl.abc.enabled && pl.hla.enabled);
  const int64_t nc = plan_buffer_bytes(&pl, HOT_BUF_SAVED_CODES);
  ck_assert_int_eq(nc, pl.I * pl.hla.k);
  float *x = fill(pl.T * pl.I, 1);
  fast_prepared p;
  ck_assert_int_eq(fast_layer_prepare(&pl, &p), HOT_REF_OK);
  hot_ref_saved a, b;
  int8_t *codes = malloc((size_t)nc);
  memset(codes, 0x5a, (size_t)nc);
  ck_assert_int_eq(fast_prepared_save(NULL, &p, x, HOT_DT_F32, &a), HOT_REF_OK);
  ck_assert_int_eq(fast_prepared_save_into(NULL, &p, x, HOT_DT_F32, codes, &b), HOT_REF_OK);
  ck_assert_ptr_null(b.q_x);
  ck_assert_ptr_nonnull(a.q_x);
  ck_assert_int_eq(memcmp(a.q_x, codes, (size_t)nc), 0);
  ck_assert_int_eq(memcmp(a.s_x, b.s_x, (size_t)pl.hla.groups * sizeof *a.s_x), 0);
  ref_saved_free(&b);
  memset(codes, 0x5a, (size_t)nc);
  x[pl.I + 3] = 1.0f / 0.0f;
  ck_assert_int_eq(fast_prepared_save_into(NULL, &p, x, HOT_DT_F32, codes, &b), HOT_REF_ENONFINITE);
  for (int64_t i = 0; i < nc; ++i) ck_assert_int_eq(codes[i], 0x5a);
  ref_saved_free(&a);
  free(codes), free(x);
}
END_TEST

START_TEST(prepare_refuses_null) {
  fast_prepared p;
  ck_assert_int_eq(fast_layer_prepare(NULL, &p), HOT_REF_EARG);
  ck_assert_int_eq(fast_layer_prepare(NULL, NULL), HOT_REF_EARG);
  hot_ref_saved s;
  ck_assert_int_eq(fast_prepared_save(NULL, NULL, "", HOT_DT_F32, &s), HOT_REF_EARG);
}
END_TEST

int main(void) {
  Suite *su = suite_create("fast_prepared");
  TCase *tc = tcase_create("prepared");
  tcase_add_test(tc, prepared_calls_ask_gen_nothing);
  tcase_add_test(tc, prepare_refuses_null);
  tcase_add_test(tc, save_into_caller_buffer);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

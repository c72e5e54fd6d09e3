/* test_emit_oom.c — emission under allocation failure: every failing allocation of
 * emit_layer_select makes it return EMIT_ENOMEM with "out of memory" in err (what the runtime
 * maps to HOT_ERR_NOMEM), never -1, a crash or a partial source; with allocations allowed again
 * the same call succeeds. malloc, calloc and realloc of the generator's objects are wrapped
 * (-Wl,--wrap) to fail from the n-th call on. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "plan.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);

static long g_left = -1; /* allocations still allowed; -1: no limit */
static long g_calls;

static int allow(void) {
  ++g_calls;
  if (g_left < 0) return 1;
  if (g_left == 0) return 0;
  --g_left;
  return 1;
}
void *__wrap_malloc(size_t n) { return allow() ? __real_malloc(n) : NULL; }
void *__wrap_calloc(size_t a, size_t b) { return allow() ? __real_calloc(a, b) : NULL; }
void *__wrap_realloc(void *p, size_t n) { return allow() ? __real_realloc(p, n) : NULL; }

START_TEST(every_allocation_failure_is_enomem) {
  static hot_layer_plan pl;
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "oom");
  s.in_features = 96;
  s.out_features = 128;
  char err[512];
  /* per-sample HLA scales (segmented g_w GEMM) and LQS: every template's parameters */
  ck_assert_int_eq(plan_layer(&s, 2, 128, HOT_RECIPE_HOT, HOT_ARCH_SM90, 0, &pl, err, sizeof err), 0);
  hot_emitted e;
  g_left = -1;
  g_calls = 0;
  ck_assert_msg(emit_layer(&pl, &e, err, sizeof err) == 0, "%s", err);
  const long total = g_calls;
  const size_t len = e.source_len;
  emit_free(&e);
  ck_assert_int_gt(total, 0);
  long failures = 0;
  for (long n = 0; n < total; ++n) {
    g_left = n;
    err[0] = 0;
    int rc = emit_layer(&pl, &e, err, sizeof err);
    g_left = -1;
    if (rc == 0) { /* an allocation whose failure is harmless (none expected): the same text */
      ck_assert_uint_eq(e.source_len, len);
      emit_free(&e);
      continue;
    }
    ck_assert_msg(rc == EMIT_ENOMEM, "allocation %ld failing: rc %d (%s)", n, rc, err);
    ck_assert_msg(strstr(err, "out of memory") != NULL, "allocation %ld: %s", n, err);
    ck_assert_ptr_null(e.source);
    ++failures;
  }
  printf("emit_layer: %ld allocations, each failure gave EMIT_ENOMEM (%ld)\n", total, failures);
  ck_assert_int_gt(failures, 0);
}
END_TEST

int main(void) {
  Suite *su = suite_create("emit_oom");
  TCase *tc = tcase_create("oom");
  tcase_add_test(tc, every_allocation_failure_is_enomem);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_set_fork_status(sr, CK_NOFORK); /* the wrapped allocator's state is this process's */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

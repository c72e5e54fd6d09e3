#define _POSIX_C_SOURCE 200809L
/* test_cuda_api.c — the driver table fails cleanly without a (real) driver; names and statuses.
 * Check runs each test in a fresh fork, so every test sees the one-time loading anew. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_api.h"

START_TEST(driver_here) {
  /* Whatever this machine has: a working driver, or a clean "no CUDA driver/device". */
  const cuda_driver *d = (const cuda_driver *)1;
  char err[512] = "";
  rt_status st = cuda_driver_get(&d, err, sizeof err);
  if (st == RT_OK) {
    ck_assert_ptr_nonnull(d);
    ck_assert_int_ge(d->device_count, 1);
    printf("driver %d at %s, %d device(s)\n", d->version, d->path, d->device_count);
  } else {
    ck_assert_ptr_null(d);
    ck_assert_msg(st == RT_ERR_NO_DRIVER || st == RT_ERR_NO_DEVICE, "%s", rt_status_name(st));
    ck_assert_msg(strncmp(err, st == RT_ERR_NO_DRIVER ? "no CUDA driver" : "no CUDA device",
                          14) == 0, "%s", err);
    printf("as expected on this machine: %s\n", err);
  }
  /* The outcome is remembered: a second call says the same. */
  char err2[512] = "";
  ck_assert_int_eq(cuda_driver_get(NULL, err2, sizeof err2), st);
  ck_assert_str_eq(err, err2);
  ck_assert_int_eq(cuda_driver_get(NULL, NULL, 0), st);
}
END_TEST

START_TEST(driver_missing) {
  setenv("HOT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  char err[512] = "";
  ck_assert_int_eq(cuda_driver_get(NULL, err, sizeof err), RT_ERR_NO_DRIVER);
  ck_assert_ptr_nonnull(strstr(err, "no CUDA driver"));
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/libcuda.so.1"));
}
END_TEST

START_TEST(driver_stub) {
  /* The toolkit's stub libcuda answers every call with CUDA_ERROR_STUB_LIBRARY (34). */
  char stub[600];
  const char *home = getenv("HOT_CUDA_HOME");
  snprintf(stub, sizeof stub, "%s/lib64/stubs/libcuda.so", home && *home ? home : HOT_TEST_CUDA_HOME);
  if (access(stub, R_OK) != 0) {
    printf("SKIP: no stub driver at %s\n", stub);
    return;
  }
  setenv("HOT_CUDA_DRIVER", stub, 1);
  char err[512] = "";
  ck_assert_int_eq(cuda_driver_get(NULL, err, sizeof err), RT_ERR_NO_DRIVER);
  ck_assert_msg(strstr(err, "no CUDA driver") && strstr(err, "stub"), "%s", err);
}
END_TEST

START_TEST(nvrtc_missing) {
  /* With HOT_CUDA_HOME pointing nowhere, the baked folder or the loader path may still find
   * NVRTC; either way the call returns RT_OK or a message naming what it tried. */
  setenv("HOT_CUDA_HOME", "/nonexistent-toolkit", 1);
  char err[2048] = "";
  const cuda_nvrtc *nv = NULL;
  rt_status st = cuda_nvrtc_get(&nv, err, sizeof err);
  if (st == RT_OK) {
    ck_assert_int_ge(nv->major, 12);
  } else {
    ck_assert_int_eq(st, RT_ERR_NO_NVRTC);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent-toolkit/lib64/libnvrtc.so.13"));
  }
  ck_assert_str_eq(cuda_toolkit_include(), "/nonexistent-toolkit/include");
}
END_TEST

START_TEST(result_names_and_statuses) {
  char buf[32];
  ck_assert_str_eq(cuda_result_name(CUDA_ERROR_STUB_LIBRARY, buf), "CUDA_ERROR_STUB_LIBRARY");
  ck_assert_str_eq(cuda_result_name(987654, buf), "CUDA_ERROR_987654");
  ck_assert_int_eq(cuda_result_status(CUDA_SUCCESS), RT_OK);
  ck_assert_int_eq(cuda_result_status(CUDA_ERROR_STUB_LIBRARY), RT_ERR_NO_DRIVER);
  ck_assert_int_eq(cuda_result_status(CUDA_ERROR_NO_DEVICE), RT_ERR_NO_DEVICE);
  ck_assert_int_eq(cuda_result_status(CUDA_ERROR_OUT_OF_MEMORY), RT_ERR_DEVICE_OOM);
  ck_assert_int_eq(cuda_result_status(CUDA_ERROR_NO_BINARY_FOR_GPU), RT_ERR_BAD_BINARY);
  ck_assert_int_eq(cuda_result_status(CUDA_ERROR_NOT_FOUND), RT_ERR_NOT_FOUND);
  ck_assert_int_eq(cuda_result_status(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), RT_ERR_LAUNCH);
  ck_assert_int_eq(cuda_result_status(999), RT_ERR_CUDA);
  char err[256];
  ck_assert_int_eq(cuda_result_error(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc for 'x'", err,
                                     sizeof err), RT_ERR_DEVICE_OOM);
  ck_assert_ptr_nonnull(strstr(err, "cuMemAlloc for 'x': CUDA_ERROR_OUT_OF_MEMORY"));
  for (int s = 0; s < RT_STATUS_COUNT; s++)
    ck_assert_int_eq(strncmp(rt_status_name((rt_status)s), "RT_", 3), 0);
  ck_assert_str_eq(rt_status_name(RT_STATUS_COUNT), "RT_ERR_?");
}
END_TEST

START_TEST(versions) {
  /* cubins of NVRTC X.Y load in a driver of major >= X */
  char err[256] = "";
  ck_assert_int_eq(cuda_versions_check(13000, 13, 0, err, sizeof err), RT_OK);
  ck_assert_int_eq(cuda_versions_check(13020, 13, 1, err, sizeof err), RT_OK);
  ck_assert_int_eq(cuda_versions_check(12040, 12, 8, err, sizeof err), RT_OK);
  ck_assert_int_eq(cuda_versions_check(13000, 12, 8, err, sizeof err), RT_OK);
  ck_assert_int_eq(cuda_versions_check(0, 13, 0, err, sizeof err), RT_OK); /* unknown */
  ck_assert_int_eq(cuda_versions_check(12040, 13, 0, err, sizeof err), RT_ERR_BAD_BINARY);
  ck_assert_msg(strstr(err, "NVRTC 13.0") && strstr(err, "CUDA driver 12.4 (version 12040)") &&
                strstr(err, "HOT_CUDA_HOME to a CUDA 12 toolkit") && !strchr(err, '\n'), "%s", err);
  ck_assert_int_eq(cuda_versions_check(11080, 12, 2, NULL, 0), RT_ERR_BAD_BINARY);
  int ma = -1, mi = -1;
  ck_assert_int_eq(cuda_nvrtc_version_parse("nvrtc-13.0", &ma, &mi), 0);
  ck_assert(ma == 13 && mi == 0);
  ck_assert_int_eq(cuda_nvrtc_version_parse("nvrtc-12.8", &ma, &mi), 0);
  ck_assert(ma == 12 && mi == 8);
  const char *bad[] = {"fake-1", "nvrtc-13", "nvrtc-13.0x", "nvrtc-", "nvrtc-a.b", NULL};
  for (int i = 0; bad[i]; ++i) ck_assert_int_eq(cuda_nvrtc_version_parse(bad[i], &ma, &mi), -1);
  ck_assert_int_eq(cuda_nvrtc_version_parse(NULL, &ma, &mi), -1);
}
END_TEST

START_TEST(nvrtc_major_12) {
  /* A toolkit holding only libnvrtc.so.12 (here: a link to this machine's NVRTC under that
   * name) is found through HOT_CUDA_HOME, before any other folder's NVRTC 13. */
  const char *real = NULL;
  static const char *const cands[] = {HOT_TEST_CUDA_HOME "/lib64/libnvrtc.so.13",
                                      HOT_TEST_CUDA_HOME "/lib64/libnvrtc.so.12"};
  for (int i = 0; i < 2 && !real; ++i)
    if (access(cands[i], R_OK) == 0) real = cands[i];
  if (!real) {
    printf("SKIP: no NVRTC under %s\n", HOT_TEST_CUDA_HOME);
    return;
  }
  char dir[] = "/tmp/hot-nvrtc12-XXXXXX", lib[128], link[160];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(lib, sizeof lib, "%s/lib64", dir);
  ck_assert_int_eq(mkdir(lib, 0700), 0);
  snprintf(link, sizeof link, "%s/libnvrtc.so.12", lib);
  ck_assert_int_eq(symlink(real, link), 0);
  setenv("HOT_CUDA_HOME", dir, 1);
  char err[4096] = "";
  const cuda_nvrtc *nv = NULL;
  ck_assert_msg(cuda_nvrtc_get(&nv, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_str_eq(nv->path, link);
  unlink(link);
  rmdir(lib);
  rmdir(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_cuda_api");
  TCase *tc = tcase_create("driver");
  tcase_add_test(tc, driver_here);
  tcase_add_test(tc, driver_missing);
  tcase_add_test(tc, driver_stub);
  tcase_add_test(tc, nvrtc_missing);
  tcase_add_test(tc, result_names_and_statuses);
  tcase_add_test(tc, versions);
  tcase_add_test(tc, nvrtc_major_12);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);  /* each test: a fresh process, a fresh one-time init */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

/* test_module.c — module loading and launching. Without a driver (this build machine): every
 * call fails cleanly with "no CUDA driver" and argument errors are caught first. With a GPU:
 * compile through the cache, load, look up, launch (also above 48 KiB of shared memory) and
 * check the results; otherwise those tests print SKIP. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "module.h"

static const unsigned char FAKE_ELF[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};

START_TEST(arguments_checked_first) {
  hot_module *m = (hot_module *)1;
  char err[512];
  ck_assert_int_eq(module_load(NULL, FAKE_ELF, sizeof FAKE_ELF, "x", err, sizeof err),
                   RT_ERR_INVALID);
  ck_assert_int_eq(module_load(&m, NULL, 10, "x", err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(module_load(&m, "// PTX text", 11, "ptx.cu", err, sizeof err),
                   RT_ERR_BAD_BINARY);
  ck_assert_ptr_nonnull(strstr(err, "ptx.cu"));
  const hot_kfunc *f = (const hot_kfunc *)1;
  ck_assert_int_eq(module_function(NULL, "k", &f, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_null(f);
  hot_launch_cfg cfg = {{1, 1, 1}, {32, 1, 1}, 0, NULL};
  ck_assert_int_eq(module_launch(NULL, &cfg, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(module_unload(NULL), RT_OK);
}
END_TEST

START_TEST(no_driver_is_clean) {
  const cuda_driver *d;
  char err[512];
  if (cuda_driver_get(&d, err, sizeof err) == RT_OK) {
    printf("SKIP: no_driver_is_clean: this machine has a driver\n");
    return;
  }
  hot_module *m = (hot_module *)1;
  rt_status st = module_load(&m, FAKE_ELF, sizeof FAKE_ELF, "k.cu", err, sizeof err);
  ck_assert_msg(st == RT_ERR_NO_DRIVER || st == RT_ERR_NO_DEVICE, "%s", rt_status_name(st));
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(err, "no CUDA driver") || strstr(err, "no CUDA device"), "%s", err);
}
END_TEST

START_TEST(stub_driver_is_clean) {
  char stub[600], err[512];
  snprintf(stub, sizeof stub, "%s/lib64/stubs/libcuda.so", HOT_TEST_CUDA_HOME);
  if (access(stub, R_OK) != 0) {
    printf("SKIP: no stub driver at %s\n", stub);
    return;
  }
  setenv("HOT_CUDA_DRIVER", stub, 1);  /* this test runs in its own fork */
  hot_module *m;
  ck_assert_int_eq(module_load(&m, FAKE_ELF, sizeof FAKE_ELF, "k.cu", err, sizeof err),
                   RT_ERR_NO_DRIVER);
  ck_assert_ptr_nonnull(strstr(err, "stub"));
}
END_TEST

/* ---- with a GPU ----------------------------------------------------------------------------- */
static const char *GPU_SRC =
    "extern \"C\" __global__ void add_one(int *p, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += 1; }\n"
    "extern \"C\" __global__ void big_smem(int *p, int n) {\n"
    "  extern __shared__ int s[];\n"
    "  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = p[i] * 2;\n"
    "  __syncthreads();\n"
    "  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = s[n - 1 - i]; }\n";

START_TEST(gpu_load_lookup_launch) {
  const cuda_driver *d;
  char err[512];
  if (cuda_driver_get(&d, err, sizeof err) != RT_OK) {
    printf("SKIP: gpu_load_lookup_launch: %s\n", err);
    return;
  }
  CUdevice dev;
  CUcontext ctx;
  int major = 0, minor = 0;
  ck_assert_int_eq(d->cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  ck_assert_int_eq(d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), 0);
  ck_assert_int_eq(d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), 0);
  ck_assert_int_eq(d->cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  ck_assert_int_eq(d->cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
  hot_kcache_config cfg = {.disk = -1};
  hot_kcache *kc;
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  const char *names[] = {"add_one", "big_smem"};
  hot_kernel_source src = {"gpu.cu", GPU_SRC, names, 2, arch, NULL, 0};
  const hot_kernel_binary *bin;
  ck_assert_msg(kcache_get(kc, &src, &bin, NULL, NULL, err, sizeof err) == RT_OK, "%s", err);

  hot_module *m;
  ck_assert_msg(module_load(&m, bin->cubin, bin->cubin_size, "gpu.cu", err, sizeof err) == RT_OK,
                "%s", err);
  const hot_kfunc *f, *g, *again;
  ck_assert_int_eq(module_function(m, "add_one", &f, err, sizeof err), RT_OK);
  ck_assert_int_eq(module_function(m, "add_one", &again, err, sizeof err), RT_OK);
  ck_assert_ptr_eq(f, again);
  ck_assert_int_eq(f->num_regs, bin->kernels[0].registers);
  ck_assert_int_eq(module_function(m, "big_smem", &g, err, sizeof err), RT_OK);
  ck_assert_int_eq(module_function(m, "absent", &again, err, sizeof err), RT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err, "'absent'"));

  enum { N = 20000 };  /* 80 000 B of shared memory: above the 48 KiB default */
  int *host = malloc(N * sizeof *host);
  for (int i = 0; i < N; i++) host[i] = i;
  CUdeviceptr p;
  ck_assert_int_eq(d->cuMemAlloc(&p, N * sizeof *host), CUDA_SUCCESS);
  ck_assert_int_eq(d->cuMemcpyHtoD(p, host, N * sizeof *host), CUDA_SUCCESS);
  int n = N;
  void *args[] = {&p, &n};
  hot_launch_cfg lc = {{(N + 255) / 256, 1, 1}, {256, 1, 1}, 0, NULL};
  ck_assert_msg(module_launch(f, &lc, args, err, sizeof err) == RT_OK, "%s", err);
  hot_launch_cfg big = {{1, 1, 1}, {512, 1, 1}, N * sizeof(int), NULL};
  ck_assert_msg(module_launch(g, &big, args, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_int_ge(g->dyn_smem_limit, (int)(N * sizeof(int)));
  ck_assert_int_eq(d->cuCtxSynchronize(), CUDA_SUCCESS);
  ck_assert_int_eq(d->cuMemcpyDtoH(host, p, N * sizeof *host), CUDA_SUCCESS);
  for (int i = 0; i < N; i++) ck_assert_int_eq(host[i], 2 * ((N - 1 - i) + 1));
  /* Errors name the kernel. */
  hot_launch_cfg bad = {{1, 1, 1}, {4096, 1, 1}, 0, NULL};
  ck_assert_int_eq(module_launch(f, &bad, args, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "'add_one'"));
  hot_launch_cfg huge = {{1, 1, 1}, {32, 1, 1}, 4u << 20, NULL};
  rt_status st = module_launch(g, &huge, args, err, sizeof err);
  ck_assert_int_eq(st, RT_ERR_LAUNCH);
  ck_assert_ptr_nonnull(strstr(err, "'big_smem'"));
  printf("gpu: %s, add_one %d regs, big_smem ran with %d B shared; refused 4 MiB: %s\n", arch,
         f->num_regs, (int)(N * sizeof(int)), err);
  free(host);
  ck_assert_int_eq(d->cuMemFree(p), CUDA_SUCCESS);
  ck_assert_int_eq(module_unload(m), RT_OK);
  kcache_close(kc);
  ck_assert_int_eq(d->cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_module");
  TCase *tc = tcase_create("module");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, arguments_checked_first);
  tcase_add_test(tc, no_driver_is_clean);
  tcase_add_test(tc, stub_driver_is_clean);
  tcase_add_test(tc, gpu_load_lookup_launch);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

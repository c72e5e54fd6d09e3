/* gpu_check.h — the failure macros of the GPU test programs (test_gpu_kernels.c, test_api_gpu.c,
 * test_api_gpu_life.c): a failed check prints "FAIL file:line: message" and exits 1 (these
 * programs are plain executables, not Check suites, so they can skip with exit 77). */
#ifndef HOT_TESTS_GPU_CHECK_H
#define HOT_TESTS_GPU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                    \
    printf(__VA_ARGS__);                                                                           \
    printf("\n");                                                                                  \
    exit(1);                                                                                       \
  } while (0)
/* a public call that must succeed on ctx */
#define CHECK_HOT(ctx, call)                                                                       \
  do {                                                                                             \
    hot_status st_ = (call);                                                                       \
    if (st_ != HOT_OK) FAIL("%s: %s: %s", #call, hot_status_name(st_), hot_errmsg(ctx));           \
  } while (0)
/* a driver call that must succeed */
#define CHECK_CU(call)                                                                             \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) FAIL("%s: CUresult %d", #call, r_);                                    \
  } while (0)

#endif

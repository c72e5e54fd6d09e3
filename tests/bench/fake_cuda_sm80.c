/* fake_cuda_sm80.c — the recording fake driver (tests/runtime/fake_cuda.c) as a compute
 * capability 8.0 device: everything is the fake's, except that cuDeviceGetAttribute reports
 * 8.0, so hot-bench's FP8 baseline meets a GPU without FP8 tensor cores. */
#define cuDeviceGetAttribute fake_cuda_sm90_attribute
#include "runtime/fake_cuda.c"
#undef cuDeviceGetAttribute

EXPORT CUresult cuDeviceGetAttribute(int *v, int a, int d) {
  CUresult r = fake_cuda_sm90_attribute(v, a, d);
  if (a == 75) *v = 8; /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
  if (a == 76) *v = 0; /* ..._MINOR */
  return r;
}

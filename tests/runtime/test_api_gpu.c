/* test_api_gpu.c — the CUDA backend through the public API, on a GPU: a layer of awkward sizes
 * (T = 3 x 197, O = 100, I = 137) saved and back-propagated on the device must equal the CPU
 * backend bit for bit (g_x, g_w, g_b, saved buffer). Without a driver it prints
 * "SKIP: no CUDA driver" and exits 77 (counted as skipped). While a kernel's template is not in
 * the build the CUDA backend answers HOT_ERR_UNSUPPORTED: reported as a skip with the reason. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "hot_internal.h"

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                    \
    printf(__VA_ARGS__);                                                                           \
    printf("\n");                                                                                  \
    exit(1);                                                                                       \
  } while (0)
#define CHECK_HOT(ctx, call)                                                                       \
  do {                                                                                             \
    hot_status st_ = (call);                                                                       \
    if (st_ != HOT_OK) FAIL("%s: %s: %s", #call, hot_status_name(st_), hot_errmsg(ctx));           \
  } while (0)
#define CHECK_CU(call)                                                                             \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) FAIL("%s: CUresult %d", #call, r_);                                    \
  } while (0)

static const cuda_driver *d;

static CUdeviceptr upload(const void *h, size_t n) {
  CUdeviceptr p = 0;
  CHECK_CU(d->cuMemAlloc(&p, n));
  if (h) CHECK_CU(d->cuMemcpyHtoD(p, h, n));
  else CHECK_CU(d->cuMemsetD8(p, 0, n));
  return p;
}

int main(void) {
  char err[512];
  rt_status r = cuda_driver_get(&d, err, sizeof err);
  if (r == RT_ERR_NO_DRIVER) {
    printf("SKIP: no CUDA driver (%s)\n", err);
    return 77;
  }
  if (r != RT_OK) {
    printf("SKIP: no CUDA device (%s)\n", err);
    return 77;
  }
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CUDA;
  hot_ctx *ctx = NULL, *cpu = NULL;
  CHECK_HOT(ctx, hot_ctx_create(&ctx, &o));
  o.backend = HOT_BACKEND_CPU;
  CHECK_HOT(cpu, hot_ctx_create(&cpu, &o));
  hot_stats s;
  hot_ctx_stats(ctx, &s);
  printf("device: %s, arch %s\n", s.device_name, s.arch);

  hot_layer_spec spec;
  plan_spec_defaults(&spec, HOT_RECIPE_HOT);
  snprintf(spec.name, sizeof spec.name, "gpu");
  spec.in_features = 137;
  spec.out_features = 100;
  hot_layer *g = NULL, *c = NULL;
  CHECK_HOT(ctx, hot_layer_create(ctx, &spec, 3, 197, HOT_RECIPE_HOT, &g));
  CHECK_HOT(cpu, hot_layer_create(cpu, &spec, 3, 197, HOT_RECIPE_HOT, &c));
  CHECK_HOT(ctx, hot_layer_compile(g));
  hot_ctx_stats(ctx, &s);
  printf("compile: %llu compiles (%.1f ms), %llu disk hits\n", (unsigned long long)s.compiles,
         s.compile_ms, (unsigned long long)s.disk_hits);

  /* The device's primary context current for our own allocations. */
  CUcontext pc;
  CUdevice dev;
  CHECK_CU(d->cuDeviceGet(&dev, 0));
  CHECK_CU(d->cuDevicePrimaryCtxRetain(&pc, dev));
  CHECK_CU(d->cuCtxSetCurrent(pc));
  au_io io;
  au_io_init(&io, 591, 100, 137, 2024);
  size_t nb = hot_layer_saved_bytes(g);
  CUdeviceptr dx = upload(io.x, 591 * 137 * 4), dw = upload(io.w, 100 * 137 * 4);
  CUdeviceptr dgy = upload(io.gy, 591 * 100 * 4), dgx = upload(NULL, 591 * 137 * 4);
  CUdeviceptr dgw = upload(NULL, 100 * 137 * 4), dgb = upload(NULL, 100 * 4), dsv = upload(NULL, nb);

  /* host memory is refused by the CUDA backend */
  hot_status st = hot_layer_save(g, io.x, HOT_DT_F32, NULL, NULL);
  if (st != HOT_ERR_INVALID && st != HOT_ERR_UNSUPPORTED)
    FAIL("host x: %s: %s", hot_status_name(st), hot_errmsg(ctx));
  if (st == HOT_ERR_INVALID && !strstr(hot_errmsg(ctx), "host memory"))
    FAIL("host x: %s", hot_errmsg(ctx));

  st = hot_layer_save(g, (void *)(uintptr_t)dx, HOT_DT_F32, (void *)(uintptr_t)dsv, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(g, (void *)(uintptr_t)dgy, (void *)(uintptr_t)dw, HOT_DT_F32,
                            (void *)(uintptr_t)dsv, (float *)(uintptr_t)dgx,
                            (float *)(uintptr_t)dgw, (float *)(uintptr_t)dgb, 5, NULL);
  if (st == HOT_ERR_UNSUPPORTED) {
    printf("SKIP: %s\n", hot_errmsg(ctx));
    return 77;
  }
  if (st != HOT_OK) FAIL("%s: %s", hot_status_name(st), hot_errmsg(ctx));
  CHECK_CU(d->cuCtxSynchronize());
  unsigned char *saved = malloc(nb), *csaved = aligned_alloc(64, (nb + 63) & ~(size_t)63);
  CHECK_CU(d->cuMemcpyDtoH(io.gx, dgx, 591 * 137 * 4));
  CHECK_CU(d->cuMemcpyDtoH(io.gw, dgw, 100 * 137 * 4));
  CHECK_CU(d->cuMemcpyDtoH(io.gb, dgb, 100 * 4));
  CHECK_CU(d->cuMemcpyDtoH(saved, dsv, nb));
  CHECK_HOT(cpu, hot_layer_save(c, io.x, HOT_DT_F32, csaved, NULL));
  CHECK_HOT(cpu, hot_layer_backward(c, io.gy, io.w, HOT_DT_F32, csaved, io.rgx, io.rgw, io.rgb, 5, NULL));
  int bad = 0;
  if (memcmp(saved, csaved, nb)) { printf("saved buffer differs\n"); bad = 1; }
  for (int64_t i = 0; i < 591 * 137 && !bad; ++i)
    if (memcmp(&io.gx[i], &io.rgx[i], 4)) { printf("g_x[%lld] %g vs %g\n", (long long)i, io.gx[i], io.rgx[i]); bad = 1; }
  for (int64_t i = 0; i < 100 * 137 && !bad; ++i)
    if (memcmp(&io.gw[i], &io.rgw[i], 4)) { printf("g_w[%lld] %g vs %g\n", (long long)i, io.gw[i], io.rgw[i]); bad = 1; }
  for (int64_t i = 0; i < 100 && !bad; ++i)
    if (memcmp(&io.gb[i], &io.rgb[i], 4)) { printf("g_b[%lld] %g vs %g\n", (long long)i, io.gb[i], io.rgb[i]); bad = 1; }
  if (bad) FAIL("CUDA backend differs from the CPU backend");
  printf("OK: CUDA backend equals the CPU reference bit for bit (T=591, O=100, I=137)\n");
  CUdeviceptr all[] = {dx, dw, dgy, dgx, dgw, dgb, dsv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  free(saved);
  free(csaved);
  au_io_free(&io);
  hot_ctx_destroy(ctx);
  hot_ctx_destroy(cpu);
  d->cuDevicePrimaryCtxRelease(dev);
  return 0;
}

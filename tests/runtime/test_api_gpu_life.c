/* test_api_gpu_life.c — what only a real device shows about the CUDA backend's bookkeeping:
 *  - lifetime: a layer destroyed (and a context destroyed) right after its save and backward were
 *    enqueued on a stream, without any synchronisation, waits for its own work before freeing
 *    scratch, the saved buffer and modules: the stream then completes cleanly and the outputs
 *    equal the CPU backend's bit for bit;
 *  - overflow reports: an overflowing backward (x = 3e38) followed at once by a clean one is
 *    still reported (by the clean one if the device was already done, else by hot_layer_check),
 *    naming its step;
 *  - a forced arch the device cannot run is refused at creation (every known arch against the
 *    device's compute capability, sm_XY: same major, minor <= the device's; sm_90a: 9.0 only);
 *  - memory of another device is refused naming both devices (needs two devices, else noted);
 *  - the context's one workspace: two layers' saves and backwards interleaved on two streams with
 *    no synchronisation (each call waits for the previous one's event on the device) equal the
 *    CPU backend bit for bit;
 *  - the driver's and NVRTC's versions, compared.
 * Without a driver it prints "SKIP: no CUDA driver" and exits 77.
 *
 * `--precompile ARCHS` (comma list, e.g. sm_90,sm_90a) compiles every kernel a normal run
 * launches into the disk cache HOT_CACHE_DIR (CPU-backend contexts with the arch forced; no
 * driver needed) and exits 0; a normal run uses HOT_CACHE_DIR as its disk cache when set. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "cuda_api.h"
#include "hot_internal.h"
#include "gpu_check.h"

static const cuda_driver *d;

/* The two layers a run uses (the shapes of test_api_gpu.c): a default-recipe layer of awkward
 * sizes, and a small one for the overflow. */
enum { LT_B = 3, LT_L = 197, LT_I = 137, LT_O = 100, OV_B = 2, OV_L = 32, OV_I = 32, OV_O = 16 };

static hot_layer *make_layer(hot_ctx *ctx, const char *name, int64_t in, int64_t out, int64_t b,
                             int64_t l) {
  hot_layer_spec spec;
  plan_spec_defaults(&spec, HOT_RECIPE_HOT);
  snprintf(spec.name, sizeof spec.name, "%s", name);
  spec.in_features = in;
  spec.out_features = out;
  hot_layer *layer = NULL;
  CHECK_HOT(ctx, hot_layer_create(ctx, &spec, b, l, HOT_RECIPE_HOT, &layer));
  return layer;
}

static hot_ctx *make_ctx(hot_backend b, const char *arch, hot_status want) {
  hot_options o;
  hot_options_init(&o);
  o.backend = b;
  o.arch = arch;
  hot_ctx *ctx = NULL;
  hot_status st = hot_ctx_create(&ctx, &o);
  if (st != want)
    FAIL("hot_ctx_create(%s, arch %s): %s (expected %s): %s", hot_backend_name(b),
         arch ? arch : "device's", hot_status_name(st), hot_status_name(want), hot_errmsg(ctx));
  return ctx;
}

/* --precompile: both layers' kernels for each arch of the comma list, into HOT_CACHE_DIR. */
static int precompile(const char *archs) {
  char list[256];
  snprintf(list, sizeof list, "%s", archs);
  for (char *save = NULL, *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
    hot_ctx *ctx = make_ctx(HOT_BACKEND_CPU, a, HOT_OK);
    hot_layer *ls[2] = {make_layer(ctx, "life", LT_I, LT_O, LT_B, LT_L),
                        make_layer(ctx, "ovf", OV_I, OV_O, OV_B, OV_L)};
    CHECK_HOT(ctx, hot_ctx_compile(ctx, ls, 2));
    hot_stats s;
    hot_ctx_stats(ctx, &s);
    printf("precompiled %s: %llu compiles, %llu disk hits (%s)\n", a,
           (unsigned long long)s.compiles, (unsigned long long)s.disk_hits, s.cache_dir);
    hot_ctx_destroy(ctx);
  }
  return 0;
}

static CUdeviceptr upload(const void *h, size_t n) {
  CUdeviceptr p = 0;
  CHECK_CU(d->cuMemAlloc(&p, n));
  if (h) CHECK_CU(d->cuMemcpyHtoD(p, h, n));
  else CHECK_CU(d->cuMemsetD8(p, 0xA5, n));
  return p;
}
static void *dp(CUdeviceptr p) { return (void *)(uintptr_t)p; }

static void same_floats(const char *what, const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (memcmp(&a[i], &b[i], 4))
      FAIL("%s[%lld]: cuda %.9g, cpu %.9g", what, (long long)i, (double)a[i], (double)b[i]);
}

/* Save + backward enqueued on a stream, then the layer (whole_ctx: its context) destroyed before
 * anything synchronises; the stream must complete cleanly with the CPU backend's outputs. */
static void lifetime(hot_ctx *cpu, int whole_ctx) {
  hot_ctx *ctx = make_ctx(HOT_BACKEND_CUDA, NULL, HOT_OK);
  hot_layer *l = make_layer(ctx, "life", LT_I, LT_O, LT_B, LT_L);
  hot_layer *lc = make_layer(cpu, "life", LT_I, LT_O, LT_B, LT_L);
  const int64_t T = LT_B * LT_L;
  au_io io;
  au_io_init(&io, T, LT_O, LT_I, 21);
  CUstream s;
  CHECK_CU(d->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr x = upload(io.x, (size_t)(T * LT_I) * 4), w = upload(io.w, (size_t)(LT_O * LT_I) * 4),
              gy = upload(io.gy, (size_t)(T * LT_O) * 4), gx = upload(NULL, (size_t)(T * LT_I) * 4),
              gw = upload(NULL, (size_t)(LT_O * LT_I) * 4), gb = upload(NULL, (size_t)LT_O * 4);
  CHECK_HOT(ctx, hot_layer_compile(l)); /* compiles first: the enqueue below is then quick */
  CHECK_HOT(ctx, hot_layer_save(l, dp(x), HOT_DT_F32, NULL, s));
  CHECK_HOT(ctx, hot_layer_backward(l, dp(gy), dp(w), HOT_DT_F32, NULL, dp(gx), dp(gw), dp(gb), 3,
                                    s));
  if (whole_ctx) hot_ctx_destroy(ctx); /* no synchronisation in between */
  else hot_layer_destroy(l);
  CHECK_CU(d->cuStreamSynchronize(s));
  CHECK_HOT(cpu, hot_layer_save(lc, io.x, HOT_DT_F32, NULL, NULL));
  CHECK_HOT(cpu, hot_layer_backward(lc, io.gy, io.w, HOT_DT_F32, NULL, io.gx, io.gw, io.gb, 3,
                                    NULL));
  float *hx = malloc((size_t)(T * LT_I) * 4), *hw = malloc((size_t)(LT_O * LT_I) * 4),
        *hb = malloc((size_t)LT_O * 4);
  CHECK_CU(d->cuMemcpyDtoH(hx, gx, (size_t)(T * LT_I) * 4));
  CHECK_CU(d->cuMemcpyDtoH(hw, gw, (size_t)(LT_O * LT_I) * 4));
  CHECK_CU(d->cuMemcpyDtoH(hb, gb, (size_t)LT_O * 4));
  same_floats("g_x", hx, io.gx, T * LT_I);
  same_floats("g_w", hw, io.gw, LT_O * LT_I);
  same_floats("g_b", hb, io.gb, LT_O);
  free(hx);
  free(hw);
  free(hb);
  CUdeviceptr all[] = {x, w, gy, gx, gw, gb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) CHECK_CU(d->cuMemFree(all[i]));
  CHECK_CU(d->cuStreamDestroy(s));
  if (!whole_ctx) hot_ctx_destroy(ctx);
  hot_layer_destroy(lc);
  au_io_free(&io);
  printf("lifetime: %s destroyed behind its enqueued work: the stream completed, outputs equal "
         "the CPU's\n", whole_ctx ? "context" : "layer");
}

/* One layer's outputs (device) against the CPU backend's for the same inputs and step. */
static void same_as_cpu(hot_ctx *cpu, const char *name, int64_t in, int64_t out, int64_t b,
                        int64_t l, const au_io *io, CUdeviceptr gx, CUdeviceptr gw, CUdeviceptr gb,
                        uint32_t step) {
  hot_layer *lc = make_layer(cpu, name, in, out, b, l);
  const int64_t T = b * l;
  CHECK_HOT(cpu, hot_layer_save(lc, io->x, HOT_DT_F32, NULL, NULL));
  CHECK_HOT(cpu, hot_layer_backward(lc, io->gy, io->w, HOT_DT_F32, NULL, io->gx, io->gw, io->gb,
                                    step, NULL));
  float *hx = malloc((size_t)(T * in) * 4), *hw = malloc((size_t)(out * in) * 4),
        *hb = malloc((size_t)out * 4);
  CHECK_CU(d->cuMemcpyDtoH(hx, gx, (size_t)(T * in) * 4));
  CHECK_CU(d->cuMemcpyDtoH(hw, gw, (size_t)(out * in) * 4));
  CHECK_CU(d->cuMemcpyDtoH(hb, gb, (size_t)out * 4));
  same_floats("g_x", hx, io->gx, T * in);
  same_floats("g_w", hw, io->gw, out * in);
  same_floats("g_b", hb, io->gb, out);
  free(hx);
  free(hw);
  free(hb);
  hot_layer_destroy(lc);
}

/* Two layers of one context, each on its own stream, calls interleaved without any host
 * synchronisation: they take turns in the context's workspace (hot makes each stream wait for
 * the previous call's event), so both end with the CPU backend's outputs. */
static void two_streams(hot_ctx *cpu) {
  hot_ctx *ctx = make_ctx(HOT_BACKEND_CUDA, NULL, HOT_OK);
  hot_layer *la = make_layer(ctx, "life", LT_I, LT_O, LT_B, LT_L);
  hot_layer *lb = make_layer(ctx, "ovf", OV_I, OV_O, OV_B, OV_L);
  CHECK_HOT(ctx, hot_layer_compile(la));
  CHECK_HOT(ctx, hot_layer_compile(lb));
  const int64_t Ta = LT_B * LT_L, Tb = OV_B * OV_L;
  au_io ia, ib;
  au_io_init(&ia, Ta, LT_O, LT_I, 31);
  au_io_init(&ib, Tb, OV_O, OV_I, 32);
  CUstream s[2];
  CHECK_CU(d->cuStreamCreate(&s[0], CU_STREAM_NON_BLOCKING));
  CHECK_CU(d->cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
  CUdeviceptr xa = upload(ia.x, (size_t)(Ta * LT_I) * 4), wa = upload(ia.w, (size_t)(LT_O * LT_I) * 4),
              gya = upload(ia.gy, (size_t)(Ta * LT_O) * 4), gxa = upload(NULL, (size_t)(Ta * LT_I) * 4),
              gwa = upload(NULL, (size_t)(LT_O * LT_I) * 4), gba = upload(NULL, (size_t)LT_O * 4);
  CUdeviceptr xb = upload(ib.x, (size_t)(Tb * OV_I) * 4), wb = upload(ib.w, (size_t)(OV_O * OV_I) * 4),
              gyb = upload(ib.gy, (size_t)(Tb * OV_O) * 4), gxb = upload(NULL, (size_t)(Tb * OV_I) * 4),
              gwb = upload(NULL, (size_t)(OV_O * OV_I) * 4), gbb = upload(NULL, (size_t)OV_O * 4);
  for (uint32_t step = 1; step <= 3; ++step) {
    CHECK_HOT(ctx, hot_layer_save(la, dp(xa), HOT_DT_F32, NULL, s[0]));
    CHECK_HOT(ctx, hot_layer_save(lb, dp(xb), HOT_DT_F32, NULL, s[1]));
    CHECK_HOT(ctx, hot_layer_backward(lb, dp(gyb), dp(wb), HOT_DT_F32, NULL, dp(gxb), dp(gwb),
                                      dp(gbb), step, s[1]));
    CHECK_HOT(ctx, hot_layer_backward(la, dp(gya), dp(wa), HOT_DT_F32, NULL, dp(gxa), dp(gwa),
                                      dp(gba), step, s[0]));
  }
  CHECK_CU(d->cuStreamSynchronize(s[0]));
  CHECK_CU(d->cuStreamSynchronize(s[1]));
  hot_stats st;
  CHECK_HOT(ctx, hot_ctx_stats(ctx, &st));
  same_as_cpu(cpu, "life", LT_I, LT_O, LT_B, LT_L, &ia, gxa, gwa, gba, 3);
  same_as_cpu(cpu, "ovf", OV_I, OV_O, OV_B, OV_L, &ib, gxb, gwb, gbb, 3);
  CUdeviceptr all[] = {xa, wa, gya, gxa, gwa, gba, xb, wb, gyb, gxb, gwb, gbb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) CHECK_CU(d->cuMemFree(all[i]));
  CHECK_CU(d->cuStreamDestroy(s[0]));
  CHECK_CU(d->cuStreamDestroy(s[1]));
  hot_ctx_destroy(ctx);
  au_io_free(&ia);
  au_io_free(&ib);
  printf("workspace: two layers on two streams, 12 calls without a host wait, outputs equal the "
         "CPU's (one workspace of %lld bytes)\n", (long long)st.workspace_bytes);
}

/* Backward 5 overflows, backward 6 (clean, another saved buffer) follows without a wait: the
 * report of step 5 comes back either way. */
static void overflow_kept(void) {
  hot_ctx *ctx = make_ctx(HOT_BACKEND_CUDA, NULL, HOT_OK);
  hot_layer *l = make_layer(ctx, "ovf", OV_I, OV_O, OV_B, OV_L);
  enum { T = OV_B * OV_L };
  static float x[T * OV_I], w[OV_O * OV_I], gy[T * OV_O];
  au_fill(11, x, T * OV_I);
  au_fill(12, w, OV_O * OV_I);
  au_fill(13, gy, T * OV_O);
  size_t nb = hot_layer_saved_bytes(l);
  CUdeviceptr dw = upload(w, sizeof w), dgy = upload(gy, sizeof gy), dx = upload(x, sizeof x),
              gx = upload(NULL, (size_t)T * OV_I * 4), gw = upload(NULL, (size_t)OV_O * OV_I * 4),
              gb = upload(NULL, OV_O * 4), sv_ok = upload(NULL, nb), sv_big = upload(NULL, nb);
  CHECK_HOT(ctx, hot_layer_compile(l));
  CHECK_HOT(ctx, hot_layer_save(l, dp(dx), HOT_DT_F32, dp(sv_ok), NULL));
  x[5] = 3e38f;
  CHECK_CU(d->cuMemcpyHtoD(dx, x, sizeof x));
  CHECK_HOT(ctx, hot_layer_save(l, dp(dx), HOT_DT_F32, dp(sv_big), NULL));
  CHECK_HOT(ctx, hot_layer_backward(l, dp(dgy), dp(dw), HOT_DT_F32, dp(sv_big), dp(gx), dp(gw),
                                    dp(gb), 5, NULL));
  hot_status st = hot_layer_backward(l, dp(dgy), dp(dw), HOT_DT_F32, dp(sv_ok), dp(gx), dp(gw),
                                     dp(gb), 6, NULL);
  const char *path = "reported by the next backward (the device was done)";
  if (st == HOT_OK) {
    path = "reported by hot_layer_check (the host ran ahead)";
    st = hot_layer_check(l);
  }
  if (st != HOT_ERR_RANGE || !strstr(hot_errmsg(ctx), "step 5"))
    FAIL("overflow of step 5 lost: %s: %s", hot_status_name(st), hot_errmsg(ctx));
  CHECK_HOT(ctx, hot_layer_check(l)); /* once */
  CUdeviceptr all[] = {dw, dgy, dx, gx, gw, gb, sv_ok, sv_big};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) CHECK_CU(d->cuMemFree(all[i]));
  hot_ctx_destroy(ctx);
  printf("overflow: step 5 %s\n", path);
}

/* Every known arch forced on this device: accepted exactly when its cubins run here. */
static void forced_archs(int major, int minor) {
  static const struct { const char *name; int sm, specific; } archs[] = {
      {"sm_80", 80, 0}, {"sm_86", 86, 0}, {"sm_89", 89, 0}, {"sm_90", 90, 0}, {"sm_90a", 90, 1}};
  int refused = 0;
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; ++i) {
    const int am = archs[i].sm / 10, an = archs[i].sm % 10;
    const int runs = archs[i].specific ? (major == am && minor == an) : (major == am && minor >= an);
    hot_ctx *ctx = make_ctx(HOT_BACKEND_CUDA, archs[i].name, runs ? HOT_OK : HOT_ERR_INVALID);
    if (!runs && !strstr(hot_errmsg(ctx), "cannot run on CUDA device"))
      FAIL("arch %s: %s", archs[i].name, hot_errmsg(ctx));
    refused += !runs;
    hot_ctx_destroy(ctx);
  }
  printf("forced arch: %d of 5 refused on compute capability %d.%d\n", refused, major, minor);
}

/* Memory of device 1 with a context of device 0 (two devices needed). */
static void other_device(void) {
  if (d->device_count < 2) {
    printf("device ordinal: one device only, not exercised here (the fake driver's test covers "
           "it)\n");
    return;
  }
  hot_ctx *ctx = make_ctx(HOT_BACKEND_CUDA, NULL, HOT_OK);
  hot_layer *l = make_layer(ctx, "ovf", OV_I, OV_O, OV_B, OV_L);
  CUdevice dev1;
  CUcontext c1, prev;
  CHECK_CU(d->cuDeviceGet(&dev1, 1));
  CHECK_CU(d->cuDevicePrimaryCtxRetain(&c1, dev1));
  CHECK_CU(d->cuCtxPushCurrent(c1));
  CUdeviceptr x1 = upload(NULL, (size_t)OV_B * OV_L * OV_I * 4);
  CHECK_CU(d->cuCtxPopCurrent(&prev));
  hot_status st = hot_layer_save(l, dp(x1), HOT_DT_F32, NULL, NULL);
  if (st != HOT_ERR_INVALID || !strstr(hot_errmsg(ctx), "device 1") ||
      !strstr(hot_errmsg(ctx), "device 0"))
    FAIL("device 1 memory: %s: %s", hot_status_name(st), hot_errmsg(ctx));
  CHECK_CU(d->cuCtxPushCurrent(c1));
  CHECK_CU(d->cuMemFree(x1));
  CHECK_CU(d->cuCtxPopCurrent(&prev));
  d->cuDevicePrimaryCtxRelease(dev1);
  hot_ctx_destroy(ctx);
  printf("device ordinal: memory of device 1 refused by a device 0 context\n");
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--precompile")) return precompile(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: %s [--precompile ARCHS]\n", argv[0]);
    return 2;
  }
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
  CUdevice dev;
  CUcontext pc;
  int major = 0, minor = 0;
  CHECK_CU(d->cuDeviceGet(&dev, 0));
  CHECK_CU(d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK_CU(d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  if (major < 8 || major > 9) {
    printf("SKIP: compute capability %d.%d (hot has kernels for 8.x and 9.0)\n", major, minor);
    return 77;
  }
  CHECK_CU(d->cuDevicePrimaryCtxRetain(&pc, dev));
  CHECK_CU(d->cuCtxSetCurrent(pc)); /* our own allocations */
  const cuda_nvrtc *nv = NULL;
  if (cuda_nvrtc_get(&nv, err, sizeof err) == RT_OK) {
    rt_status v = cuda_versions_check(d->version, nv->major, nv->minor, err, sizeof err);
    printf("versions: driver %d, NVRTC %d.%d (%s): %s\n", d->version, nv->major, nv->minor,
           nv->path, v == RT_OK ? "compatible" : err);
  } else {
    printf("versions: driver %d, no NVRTC (%s)\n", d->version, err);
  }
  hot_ctx *cpu = make_ctx(HOT_BACKEND_CPU, NULL, HOT_OK);
  lifetime(cpu, 0);
  lifetime(cpu, 1);
  two_streams(cpu);
  overflow_kept();
  forced_archs(major, minor);
  other_device();
  hot_ctx_destroy(cpu);
  d->cuDevicePrimaryCtxRelease(dev);
  printf("OK: lifetime, shared workspace, overflow reports, forced arch and device checks on a "
         "real device\n");
  return 0;
}

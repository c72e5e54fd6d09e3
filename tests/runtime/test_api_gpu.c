/* test_api_gpu.c — the CUDA backend through the public API, on a GPU: layers of awkward sizes
 * (T = 3 x 197, O = 100, I = 137) calibrated, saved and back-propagated on the device must equal
 * the CPU backend bit for bit (LQS choice and both errors, saved buffer, g_x, g_w, g_b), for
 *  - the default recipe in f32 (p = 64 flat blocking, absmax scales), and
 *  - a paper_code layer in bf16 (p = 1 on L = 197, b = 4, SAWB scales for w' and x^),
 * each run per tensor before calibration and with the calibrated granularity after it (token
 * outliers -> per row for the first, Gaussian -> per tensor for the second), through a caller's
 * saved buffer and through the layer's own. The honest refusals of the CUDA backend (no HQ, no
 * ABC) are checked too. Without a driver it prints "SKIP: no CUDA driver" and exits 77. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "backend.h"
#include "hot_internal.h"
#include "launch.h"

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
  else CHECK_CU(d->cuMemsetD8(p, 0xA5, n)); /* garbage: kernels must write every byte */
  return p;
}

static void *dptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* First differing float of two arrays, bit for bit. */
static void same_floats(const char *case_name, const char *what, const float *gpu,
                        const float *cpu, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (memcmp(&gpu[i], &cpu[i], 4))
      FAIL("%s: %s[%lld]: cuda %.9g, cpu %.9g", case_name, what, (long long)i, (double)gpu[i],
           (double)cpu[i]);
}

static void same_bytes(const char *case_name, const char *what, const void *gpu, const void *cpu,
                       size_t n) {
  const unsigned char *a = gpu, *b = cpu;
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      FAIL("%s: %s byte %zu: cuda 0x%02x, cpu 0x%02x", case_name, what, i, a[i], b[i]);
}

/* A host tensor in the layer's dtype (f32 as is, bf16 bit patterns). */
static void *as_dtype(const float *v, int64_t n, hot_dtype dt, size_t *bytes) {
  if (dt == HOT_DT_F32) {
    *bytes = (size_t)n * 4;
    void *p = malloc(*bytes);
    memcpy(p, v, *bytes);
    return p;
  }
  *bytes = (size_t)n * 2;
  uint16_t *p = malloc(*bytes);
  au_to_bf16(v, p, n);
  return p;
}

typedef struct {
  const char *name;
  hot_recipe recipe;
  hot_dtype dtype;
  int token_outliers; /* calibration data: 4 of every 128 tokens x20 (LQS -> per row) */
  hot_gran want;      /* the granularity the calibration must give */
} api_case;

/* One backward on both backends (CUDA with the given saved buffer, 0 = the layer's own) and the
 * comparison of every output. */
static void backward_both(const api_case *c, hot_ctx *ctx, hot_ctx *cpu, hot_layer *g,
                          hot_layer *h, au_io *io, const void *gy, const void *w, CUdeviceptr dgy,
                          CUdeviceptr dw, CUdeviceptr dsv, const void *csaved, uint32_t step,
                          const char *what) {
  int64_t T = io->T, O = io->O, I = io->I;
  CUdeviceptr dgx = upload(NULL, (size_t)(T * I) * 4), dgw = upload(NULL, (size_t)(O * I) * 4),
              dgb = upload(NULL, (size_t)O * 4);
  CHECK_HOT(ctx, hot_layer_backward(g, dptr(dgy), dptr(dw), c->dtype, dsv ? dptr(dsv) : NULL,
                                    dptr(dgx), dptr(dgw), dptr(dgb), step, NULL));
  CHECK_CU(d->cuCtxSynchronize());
  CHECK_CU(d->cuMemcpyDtoH(io->gx, dgx, (size_t)(T * I) * 4));
  CHECK_CU(d->cuMemcpyDtoH(io->gw, dgw, (size_t)(O * I) * 4));
  CHECK_CU(d->cuMemcpyDtoH(io->gb, dgb, (size_t)O * 4));
  CHECK_HOT(cpu, hot_layer_backward(h, gy, w, c->dtype, csaved, io->rgx, io->rgw, io->rgb, step, NULL));
  char label[160];
  snprintf(label, sizeof label, "%s, %s, step %u", c->name, what, step);
  same_floats(label, "g_x", io->gx, io->rgx, T * I);
  same_floats(label, "g_w", io->gw, io->rgw, O * I);
  same_floats(label, "g_b", io->gb, io->rgb, O);
  d->cuMemFree(dgx);
  d->cuMemFree(dgw);
  d->cuMemFree(dgb);
  printf("  %s: g_x, g_w, g_b equal\n", label);
}

static void run_case(const api_case *c, hot_ctx *ctx, hot_ctx *cpu) {
  const int64_t B = 3, L = 197, O = 100, I = 137, T = B * L;
  hot_layer_spec spec;
  plan_spec_defaults(&spec, c->recipe);
  snprintf(spec.name, sizeof spec.name, "gpu_%s", c->name);
  spec.in_features = I;
  spec.out_features = O;
  spec.dtype = c->dtype;
  hot_layer *g = NULL, *h = NULL;
  CHECK_HOT(ctx, hot_layer_create(ctx, &spec, B, L, c->recipe, &g));
  CHECK_HOT(cpu, hot_layer_create(cpu, &spec, B, L, c->recipe, &h));
  CHECK_HOT(ctx, hot_layer_compile(g));
  const hot_layer_plan *pl = hot_layer_get_plan(g);
  printf("%s: p = %d (%s, K = %lld), b = %d, w' %s, x^ %s, %d kernels\n", c->name, pl->hla.block,
         plan_layout_name(pl->hla.layout), (long long)pl->hla.k, pl->hq.block,
         plan_rule_name(pl->hq.w.rule), plan_rule_name(pl->hla.x.rule), pl->n_kernels);

  au_io io;
  au_io_init(&io, T, O, I, 2024 + (uint64_t)c->recipe);
  float *calib = malloc((size_t)(T * O) * 4);
  memcpy(calib, io.gy, (size_t)(T * O) * 4);
  if (c->token_outliers)
    for (int64_t i = 0; i < T * O; ++i)
      if ((i / O) % 32 == 5) calib[i] *= 20.0f;
  size_t bx, bw, bg, bc;
  void *x = as_dtype(io.x, T * I, c->dtype, &bx), *w = as_dtype(io.w, O * I, c->dtype, &bw),
       *gy = as_dtype(io.gy, T * O, c->dtype, &bg), *cal = as_dtype(calib, T * O, c->dtype, &bc);
  CUdeviceptr dx = upload(x, bx), dw = upload(w, bw), dgy = upload(gy, bg), dcal = upload(cal, bc);
  size_t nb = hot_layer_saved_bytes(g);
  if (nb != hot_layer_saved_bytes(h)) FAIL("%s: saved bytes differ", c->name);
  CUdeviceptr dsv = upload(NULL, nb);
  unsigned char *saved = malloc(nb), *csaved = aligned_alloc(64, (nb + 63) & ~(size_t)63);

  /* save into the caller's buffer: q_x^ codes then s_x^, as the CPU backend writes them */
  CHECK_HOT(ctx, hot_layer_save(g, dptr(dx), c->dtype, dptr(dsv), NULL));
  CHECK_HOT(cpu, hot_layer_save(h, x, c->dtype, csaved, NULL));
  CHECK_CU(d->cuCtxSynchronize());
  CHECK_CU(d->cuMemcpyDtoH(saved, dsv, nb));
  same_bytes(c->name, "saved buffer", saved, csaved, nb);
  printf("  save: %zu bytes equal (s_x^ %.9g)\n", nb,
         (double)*(const float *)(const void *)(csaved + hot_ref_hla_x_bytes(pl)));

  /* before calibration: per tensor */
  backward_both(c, ctx, cpu, g, h, &io, gy, w, dgy, dw, dsv, csaved, 5, "uncalibrated, caller's buffer");

  /* calibration: the same choice and the same error bits on both backends */
  CHECK_HOT(ctx, hot_layer_calibrate(g, dptr(dcal), c->dtype, 9, NULL));
  CHECK_HOT(cpu, hot_layer_calibrate(h, cal, c->dtype, 9, NULL));
  hot_layer_info ig, ih;
  CHECK_HOT(ctx, hot_layer_get_info(g, &ig));
  CHECK_HOT(cpu, hot_layer_get_info(h, &ih));
  if (ig.gran != ih.gran || memcmp(&ig.lqs_e_tensor, &ih.lqs_e_tensor, 8) ||
      memcmp(&ig.lqs_e_token, &ih.lqs_e_token, 8))
    FAIL("%s: LQS cuda %s (%.17g, %.17g), cpu %s (%.17g, %.17g)", c->name, plan_gran_name(ig.gran),
         ig.lqs_e_tensor, ig.lqs_e_token, plan_gran_name(ih.gran), ih.lqs_e_tensor, ih.lqs_e_token);
  if (ih.gran != c->want)
    FAIL("%s: LQS picked %s, the data should give %s", c->name, plan_gran_name(ih.gran),
         plan_gran_name(c->want));
  printf("  calibrate: %s (e_tensor %.9g, e_token %.9g) on both\n", plan_gran_name(ig.gran),
         ig.lqs_e_tensor, ig.lqs_e_token);

  /* after calibration, through the layer-owned buffer */
  CHECK_HOT(ctx, hot_layer_save(g, dptr(dx), c->dtype, NULL, NULL));
  CHECK_HOT(cpu, hot_layer_save(h, x, c->dtype, NULL, NULL));
  backward_both(c, ctx, cpu, g, h, &io, gy, w, dgy, dw, 0, NULL, 6, "calibrated, layer's buffer");

  CUdeviceptr all[] = {dx, dw, dgy, dcal, dsv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  free(saved); free(csaved); free(calib); free(x); free(w); free(gy); free(cal);
  au_io_free(&io);
  hot_layer_destroy(g);
  hot_layer_destroy(h);
}

/* What the CUDA backend still refuses (the CPU backend runs it): HOT_ERR_UNSUPPORTED with a
 * message, nothing launched. */
static void refusals(hot_ctx *ctx) {
  hot_layer_spec spec;
  plan_spec_defaults(&spec, HOT_RECIPE_HOT);
  snprintf(spec.name, sizeof spec.name, "gpu_nohq");
  spec.in_features = 64;
  spec.out_features = 32;
  spec.hq.enabled = 0;
  hot_layer *l = NULL;
  CHECK_HOT(ctx, hot_layer_create(ctx, &spec, 2, 64, HOT_RECIPE_HOT, &l));
  CUdeviceptr x = upload(NULL, 128 * 64 * 4), w = upload(NULL, 32 * 64 * 4),
              gy = upload(NULL, 128 * 32 * 4), gx = upload(NULL, 128 * 64 * 4),
              gw = upload(NULL, 32 * 64 * 4);
  CHECK_CU(d->cuMemsetD8(x, 0, 128 * 64 * 4));
  CHECK_HOT(ctx, hot_layer_save(l, dptr(x), HOT_DT_F32, NULL, NULL));
  hot_status st = hot_layer_backward(l, dptr(gy), dptr(w), HOT_DT_F32, NULL, dptr(gx), dptr(gw),
                                     NULL, 0, NULL);
  if (st != HOT_ERR_UNSUPPORTED || !strstr(hot_errmsg(ctx), "without HQ"))
    FAIL("no-HQ backward: %s: %s", hot_status_name(st), hot_errmsg(ctx));
  hot_layer_destroy(l);
  spec.hq.enabled = 1;
  spec.abc.enabled = 0;
  snprintf(spec.name, sizeof spec.name, "gpu_noabc");
  CHECK_HOT(ctx, hot_layer_create(ctx, &spec, 2, 64, HOT_RECIPE_HOT, &l));
  st = hot_layer_save(l, dptr(x), HOT_DT_F32, NULL, NULL);
  if (st != HOT_ERR_UNSUPPORTED || !strstr(hot_errmsg(ctx), "without ABC"))
    FAIL("no-ABC save: %s: %s", hot_status_name(st), hot_errmsg(ctx));
  hot_layer_destroy(l);
  CUdeviceptr all[] = {x, w, gy, gx, gw};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  printf("refusals: no HQ (backward), no ABC (save): HOT_ERR_UNSUPPORTED\n");
}


/* Finite inputs that overflow fp32 (one x element of 3e38): the CPU backend refuses the backward
 * with HOT_ERR_RANGE; the CUDA backend's backward returns at once and hot_layer_check reports
 * the same overflow from the device flag; a later backward with ordinary data is clean. */
static void overflow(hot_ctx *ctx, hot_ctx *cpu) {
  hot_layer_spec spec;
  plan_spec_defaults(&spec, HOT_RECIPE_HOT);
  snprintf(spec.name, sizeof spec.name, "gpu_huge");
  spec.in_features = 32;
  spec.out_features = 16;
  hot_layer *l = NULL, *lc = NULL;
  CHECK_HOT(ctx, hot_layer_create(ctx, &spec, 2, 32, HOT_RECIPE_HOT, &l));
  CHECK_HOT(cpu, hot_layer_create(cpu, &spec, 2, 32, HOT_RECIPE_HOT, &lc));
  enum { T = 64, I = 32, O = 16 };
  static float x[T * I], w[O * I], gy[T * O], gx[T * I], gw[O * I], gb[O];
  au_fill(11, x, T * I);
  au_fill(12, w, O * I);
  au_fill(13, gy, T * O);
  x[5] = 3e38f;
  CHECK_HOT(cpu, hot_layer_save(lc, x, HOT_DT_F32, NULL, NULL));
  hot_status st = hot_layer_backward(lc, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 1, NULL);
  if (st != HOT_ERR_RANGE) FAIL("cpu huge x: %s: %s", hot_status_name(st), hot_errmsg(cpu));
  CUdeviceptr dx = upload(x, sizeof x), dw = upload(w, sizeof w), dgy = upload(gy, sizeof gy),
              dgx = upload(NULL, sizeof gx), dgw = upload(NULL, sizeof gw),
              dgb = upload(NULL, sizeof gb);
  CHECK_HOT(ctx, hot_layer_save(l, dptr(dx), HOT_DT_F32, NULL, NULL));
  CHECK_HOT(ctx, hot_layer_backward(l, dptr(dgy), dptr(dw), HOT_DT_F32, NULL, dptr(dgx), dptr(dgw),
                                    dptr(dgb), 1, NULL));
  st = hot_layer_check(l);
  if (st != HOT_ERR_RANGE || !strstr(hot_errmsg(ctx), "step 1"))
    FAIL("cuda huge x: hot_layer_check: %s: %s", hot_status_name(st), hot_errmsg(ctx));
  x[5] = 0.5f;
  CHECK_CU(d->cuMemcpyHtoD(dx, x, sizeof x));
  CHECK_HOT(ctx, hot_layer_save(l, dptr(dx), HOT_DT_F32, NULL, NULL));
  CHECK_HOT(ctx, hot_layer_backward(l, dptr(dgy), dptr(dw), HOT_DT_F32, NULL, dptr(dgx), dptr(dgw),
                                    dptr(dgb), 2, NULL));
  CHECK_HOT(ctx, hot_layer_check(l));
  CUdeviceptr all[] = {dx, dw, dgy, dgx, dgw, dgb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_layer_destroy(l);
  hot_layer_destroy(lc);
  printf("overflow: x = 3e38 refused on both backends (CPU at once, CUDA by hot_layer_check)\n");
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
  if (s.backend != HOT_BACKEND_CUDA) FAIL("backend %s", hot_backend_name(s.backend));

  /* The device's primary context current for our own allocations. */
  CUcontext pc;
  CUdevice dev;
  CHECK_CU(d->cuDeviceGet(&dev, 0));
  CHECK_CU(d->cuDevicePrimaryCtxRetain(&pc, dev));
  CHECK_CU(d->cuCtxSetCurrent(pc));

  /* host memory is refused by the CUDA backend */
  {
    hot_layer_spec spec;
    plan_spec_defaults(&spec, HOT_RECIPE_HOT);
    snprintf(spec.name, sizeof spec.name, "gpu_host");
    spec.in_features = spec.out_features = 32;
    hot_layer *l = NULL, *lc = NULL;
    CHECK_HOT(ctx, hot_layer_create(ctx, &spec, 1, 64, HOT_RECIPE_HOT, &l));
    CHECK_HOT(cpu, hot_layer_create(cpu, &spec, 1, 64, HOT_RECIPE_HOT, &lc)); /* same layer ids */
    float *hx = calloc(64 * 32, 4);
    hot_status st = hot_layer_save(l, hx, HOT_DT_F32, NULL, NULL);
    if (st != HOT_ERR_INVALID || !strstr(hot_errmsg(ctx), "host memory"))
      FAIL("host x: %s: %s", hot_status_name(st), hot_errmsg(ctx));
    free(hx);
    hot_layer_destroy(l);
    hot_layer_destroy(lc);
  }

  static const api_case cases[] = {
      {"default", HOT_RECIPE_HOT, HOT_DT_F32, 1, HOT_GRAN_ROW},
      {"paper_code", HOT_RECIPE_PAPER_CODE, HOT_DT_BF16, 0, HOT_GRAN_SAMPLE}, /* B = 3 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_case(&cases[i], ctx, cpu);
  refusals(ctx);
  overflow(ctx, cpu);
  hot_ctx_stats(ctx, &s);
  printf("OK: CUDA backend equals the CPU reference bit for bit (T=591, O=100, I=137; %llu "
         "launches, %llu compiles)\n", (unsigned long long)s.launches,
         (unsigned long long)s.compiles);
  hot_ctx_destroy(ctx);
  hot_ctx_destroy(cpu);
  d->cuDevicePrimaryCtxRelease(dev);
  return 0;
}

/* test_api_gpu.c — the CUDA backend through the public API, on a GPU: layers of awkward sizes
 * (T = 3 x 197, O = 100, I = 137) calibrated, saved and back-propagated on the device must equal
 * the CPU backend bit for bit (LQS choice and both errors, saved buffer, g_x, g_w, g_b), for
 *  - the default recipe in f32 (p = 64 flat blocking, absmax scales), and
 *  - a paper_code layer in bf16 (p = 1 on L = 197, b = 4, SAWB scales for w' and x^),
 * each run per tensor before calibration and with the calibrated granularity after it (token
 * outliers -> per row for the first, Gaussian -> per tensor for the second), through a caller's
 * saved buffer and through the layer's own. The honest refusals of the CUDA backend (no HQ, no
 * ABC) are checked too. Without a driver it prints "SKIP: no CUDA driver" and exits 77.
 * HOT_ARCH=sm_90a on a 9.0 device runs the same with the sm_90a plans (wgmma GEMMs); the kernel
 * cache is the library's (HOT_CACHE_DIR, HOT_NO_DISK_CACHE).
 * `--precompile ARCHS` (comma list, e.g. sm_90,sm_90a): needs no driver. For each arch it makes
 * every layer the GPU run makes, in a CPU context with that arch forced, compiles its kernels
 * into the cache of HOT_CACHE_DIR (required) and runs the CPU backend's side of each case (the
 * host share of a GPU run); exit 0, 1 on an error (tests/gpu/README.md: the convention). */
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
#include "gpu_check.h"

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
  /* one output at a time (hot.h: a NULL output is not computed): the same bits, and the device
   * memory of the outputs not asked for left as it was (all ones) */
  static const char *const names[3] = {"g_x", "g_w", "g_b"};
  const CUdeviceptr dout[3] = {dgx, dgw, dgb};
  const int64_t nout[3] = {T * I, O * I, O};
  float *host[3] = {io->gx, io->gw, io->gb};
  const float *ref[3] = {io->rgx, io->rgw, io->rgb};
  for (int k = 0; k < 3; ++k) {
    for (int j = 0; j < 3; ++j)
      CHECK_CU(d->cuMemsetD32Async(dout[j], 0xffffffffu, (size_t)nout[j], (CUstream)0));
    CHECK_CU(d->cuCtxSynchronize());
    CHECK_HOT(ctx, hot_layer_backward(g, dptr(dgy), dptr(dw), c->dtype, dsv ? dptr(dsv) : NULL,
                                      k == 0 ? dptr(dgx) : NULL, k == 1 ? dptr(dgw) : NULL,
                                      k == 2 ? dptr(dgb) : NULL, step, NULL));
    CHECK_CU(d->cuCtxSynchronize());
    for (int j = 0; j < 3; ++j) {
      CHECK_CU(d->cuMemcpyDtoH(host[j], dout[j], (size_t)nout[j] * 4));
      char sub[200];
      snprintf(sub, sizeof sub, "%s, %s alone", label, names[k]);
      if (j == k) {
        same_floats(sub, names[j], host[j], ref[j], nout[j]);
        continue;
      }
      for (int64_t i = 0; i < nout[j]; ++i) {
        uint32_t u;
        memcpy(&u, &host[j][i], 4);
        if (u != 0xffffffffu) FAIL("%s: %s[%lld] written (0x%08x)", sub, names[j], (long long)i, u);
      }
    }
  }
  d->cuMemFree(dgx);
  d->cuMemFree(dgw);
  d->cuMemFree(dgb);
  printf("  %s: g_x, g_w, g_b equal, and each alone\n", label);
}

enum { CASE_B = 3, CASE_L = 197, CASE_O = 100, CASE_I = 137 };

/* The layer of a case (T = 3 x 197, O = 100, I = 137). */
static void case_spec(const api_case *c, hot_layer_spec *spec) {
  plan_spec_defaults(spec, c->recipe);
  snprintf(spec->name, sizeof spec->name, "gpu_%s", c->name);
  spec->in_features = CASE_I;
  spec->out_features = CASE_O;
  spec->dtype = c->dtype;
}

static void run_case(const api_case *c, hot_ctx *ctx, hot_ctx *cpu) {
  const int64_t B = CASE_B, L = CASE_L, O = CASE_O, I = CASE_I, T = B * L;
  hot_layer_spec spec;
  case_spec(c, &spec);
  hot_layer *g = NULL, *h = NULL;
  CHECK_HOT(ctx, hot_layer_create(ctx, &spec, B, L, c->recipe, &g));
  CHECK_HOT(cpu, hot_layer_create(cpu, &spec, B, L, c->recipe, &h));
  CHECK_HOT(ctx, hot_layer_compile(g));
  const hot_layer_plan *pl = hot_layer_get_plan(g);
  printf("%s: p = %d (%s, K = %lld, k_pad = %lld: %s), b = %d, w' %s, x^ %s, %d kernels\n",
         c->name, pl->hla.block, plan_layout_name(pl->hla.layout), (long long)pl->hla.k,
         (long long)pl->hla.gemm.k_pad,
         plan_kernel_index(pl, HOT_K_ABC_UNPACK) >= 0 ? "abc_unpack" : "read in place",
         pl->hq.block, plan_rule_name(pl->hq.w.rule), plan_rule_name(pl->hla.x.rule),
         pl->n_kernels);

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

  /* save into the caller's buffer (it starts as garbage): the q_x^ codes unpadded (I rows of K),
   * zeros up to plan_saved_scale_offset (a multiple of 16), then s_x^, as the CPU backend
   * writes them */
  const int64_t nc = pl->I * pl->hla.k, soff = plan_saved_scale_offset(pl);
  if (soff != (nc + 15) / 16 * 16 || (int64_t)nb != soff + 4 * pl->hla.groups)
    FAIL("%s: saved buffer of %zu bytes, scales at %lld: not I x K = %lld codes, alignment and "
         "%lld scales", c->name, nb, (long long)soff, (long long)nc, (long long)pl->hla.groups);
  CHECK_HOT(ctx, hot_layer_save(g, dptr(dx), c->dtype, dptr(dsv), NULL));
  memset(csaved, 0xA5, nb); /* the same garbage on the CPU side */
  CHECK_HOT(cpu, hot_layer_save(h, x, c->dtype, csaved, NULL));
  CHECK_CU(d->cuCtxSynchronize());
  CHECK_CU(d->cuMemcpyDtoH(saved, dsv, nb));
  same_bytes(c->name, "saved buffer", saved, csaved, nb);
  for (int64_t i = nc; i < soff; ++i)
    if (saved[i] != 0)
      FAIL("%s: saved byte %lld (alignment gap) is 0x%02x", c->name, (long long)i, saved[i]);
  float sx0;
  memcpy(&sx0, csaved + soff, 4);
  printf("  save: %zu bytes equal (%lld codes, s_x^ %.9g at %lld)\n", nb, (long long)nc,
         (double)sx0, (long long)soff);

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
static void refusal_spec(int which, hot_layer_spec *spec) {
  plan_spec_defaults(spec, HOT_RECIPE_HOT);
  snprintf(spec->name, sizeof spec->name, which == 0 ? "gpu_nohq" : "gpu_noabc");
  spec->in_features = 64;
  spec->out_features = 32;
  if (which == 0) spec->hq.enabled = 0;
  else spec->abc.enabled = 0;
}

static void refusals(hot_ctx *ctx) {
  hot_layer_spec spec;
  refusal_spec(0, &spec);
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
  refusal_spec(1, &spec);
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
static void huge_spec(hot_layer_spec *spec) {
  plan_spec_defaults(spec, HOT_RECIPE_HOT);
  snprintf(spec->name, sizeof spec->name, "gpu_huge");
  spec->in_features = 32;
  spec->out_features = 16;
}

static void overflow(hot_ctx *ctx, hot_ctx *cpu) {
  hot_layer_spec spec;
  huge_spec(&spec);
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

/* The layer main() gives host memory (refused by the CUDA backend). */
static void host_spec(hot_layer_spec *spec) {
  plan_spec_defaults(spec, HOT_RECIPE_HOT);
  snprintf(spec->name, sizeof spec->name, "gpu_host");
  spec->in_features = spec->out_features = 32;
}

static const api_case k_cases[] = {
    {"default", HOT_RECIPE_HOT, HOT_DT_F32, 1, HOT_GRAN_ROW},
    {"paper_code", HOT_RECIPE_PAPER_CODE, HOT_DT_BF16, 0, HOT_GRAN_SAMPLE}, /* B = 3 */
};

/* --precompile: one layer of (spec, B, L) in ctx (CPU, arch forced), compiled into the cache;
 * with cpu (not NULL) the CPU backend's side of a case on the same layer: save, backward,
 * calibrate, save, backward. */
static void pre_layer(hot_ctx *ctx, hot_ctx *cpu, const hot_layer_spec *spec, int64_t B, int64_t L,
                      hot_recipe recipe, const api_case *c) {
  hot_layer *l = NULL;
  CHECK_HOT(ctx, hot_layer_create(ctx, spec, B, L, recipe, &l));
  CHECK_HOT(ctx, hot_layer_compile(l));
  hot_layer_destroy(l);
  if (!c) return;
  const int64_t T = B * L, O = spec->out_features, I = spec->in_features;
  hot_layer *h = NULL;
  CHECK_HOT(cpu, hot_layer_create(cpu, spec, B, L, recipe, &h));
  au_io io;
  au_io_init(&io, T, O, I, 2024 + (uint64_t)c->recipe);
  size_t bx, bw, bg;
  void *x = as_dtype(io.x, T * I, c->dtype, &bx), *w = as_dtype(io.w, O * I, c->dtype, &bw),
       *gy = as_dtype(io.gy, T * O, c->dtype, &bg);
  CHECK_HOT(cpu, hot_layer_save(h, x, c->dtype, NULL, NULL));
  CHECK_HOT(cpu, hot_layer_backward(h, gy, w, c->dtype, NULL, io.rgx, io.rgw, io.rgb, 5, NULL));
  CHECK_HOT(cpu, hot_layer_calibrate(h, gy, c->dtype, 9, NULL));
  CHECK_HOT(cpu, hot_layer_save(h, x, c->dtype, NULL, NULL));
  CHECK_HOT(cpu, hot_layer_backward(h, gy, w, c->dtype, NULL, io.rgx, io.rgw, io.rgb, 6, NULL));
  free(x); free(w); free(gy);
  au_io_free(&io);
  hot_layer_destroy(h);
}

/* --precompile ARCHS: every layer of main() for each arch, compiled in a CPU context with the
 * arch forced (the same plans and kernels as a CUDA context of that arch). */
static int precompile(const char *archs) {
  const char *dir = getenv("HOT_CACHE_DIR");
  if (!dir || !*dir) {
    fprintf(stderr, "runtime_api_gpu: --precompile needs HOT_CACHE_DIR (the cache directory to fill)\n");
    return 1;
  }
  char buf[256];
  if (snprintf(buf, sizeof buf, "%s", archs) >= (int)sizeof buf || !*buf) {
    fprintf(stderr, "runtime_api_gpu: --precompile: bad arch list '%s'\n", archs);
    return 1;
  }
  unsigned long long compiles = 0, hits = 0;
  for (char *save = NULL, *a = strtok_r(buf, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
    hot_options o;
    hot_options_init(&o);
    o.backend = HOT_BACKEND_CPU;
    o.arch = a;
    o.disk_cache = 1;
    hot_ctx *ctx = NULL, *cpu = NULL;
    hot_status st = hot_ctx_create(&ctx, &o);
    if (st != HOT_OK) {
      fprintf(stderr, "runtime_api_gpu: --precompile %s: %s: %s\n", a, hot_status_name(st), hot_errmsg(ctx));
      hot_ctx_destroy(ctx);
      return 1;
    }
    o.arch = NULL;
    CHECK_HOT(cpu, hot_ctx_create(&cpu, &o));
    hot_layer_spec spec;
    host_spec(&spec);
    pre_layer(ctx, cpu, &spec, 1, 64, HOT_RECIPE_HOT, NULL);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; ++i) {
      case_spec(&k_cases[i], &spec);
      pre_layer(ctx, cpu, &spec, CASE_B, CASE_L, k_cases[i].recipe, &k_cases[i]);
    }
    for (int which = 0; which < 2; ++which) {
      refusal_spec(which, &spec);
      pre_layer(ctx, cpu, &spec, 2, 64, HOT_RECIPE_HOT, NULL);
    }
    huge_spec(&spec);
    pre_layer(ctx, cpu, &spec, 2, 32, HOT_RECIPE_HOT, NULL);
    hot_stats s;
    hot_ctx_stats(ctx, &s);
    printf("precompile %s: %llu compiled, %llu disk hits (%s)\n", a, (unsigned long long)s.compiles,
           (unsigned long long)s.disk_hits, s.cache_dir);
    compiles += s.compiles;
    hits += s.disk_hits;
    hot_ctx_destroy(ctx);
    hot_ctx_destroy(cpu);
  }
  printf("kernel cache (precompile): %llu compiled, %llu disk hits\n", compiles, hits);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--precompile")) return precompile(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: runtime_api_gpu [--precompile ARCHS]\n");
    return 1;
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
    host_spec(&spec);
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

  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; ++i) run_case(&k_cases[i], ctx, cpu);
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

/* gpu.c — the device side of hot-bench: buffers made with libhot's driver table (cuda_api.h;
 * no CUDA runtime, no link against libcuda), bit-exactness of the CUDA backend against the CPU
 * reference, the speed of HOT's backward and forward against cuBLAS (BF16, FP32, TF32) and
 * cuBLASLt (FP8), and the ceilings of the same run (device-to-device copy bandwidth, large BF16
 * and INT8 cuBLAS GEMMs, a large FP8 cuBLASLt GEMM). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "bench.h"
#include "cost.h"
#include "plan.h"
#include "num.h"

#define ATTR_L2_CACHE_SIZE 38 /* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (cuda.h) */
#define ATTR_CC_MAJOR 75      /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define ATTR_CC_MINOR 76      /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
#define FP8_WORKSPACE ((size_t)32 << 20) /* cuBLASLt's workspace, allocated once: 32 MiB */
#define FP8_SAMPLES 128       /* sampled entries of each FP8 output checked against fp64 */
#define DP(p) ((void *)(uintptr_t)(p))
#define MAX_SETS 64

struct bench_gpu {
  const cuda_driver *d;
  CUdevice dev;
  CUcontext pctx;
  CUstream s;
  bench_cublas *cb;
  char cublas_err[400];
  bench_cublaslt *lt;             /* NULL: no FP8 baseline, lt_err says why */
  char lt_err[400];
  CUdeviceptr lt_ws;              /* cuBLASLt's workspace, FP8_WORKSPACE bytes */
  int cc_major, cc_minor;
  int l2;
  size_t free_b, total_b;
};

bench_gpu *bench_gpu_open(char *err, size_t n) {
  bench_gpu *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, n, "out of host memory");
    return NULL;
  }
  if (cuda_driver_get(&g->d, err, n) != RT_OK) {
    free(g);
    return NULL;
  }
  const char *dv = env_get("HOT_DEVICE"); /* the parser and range of hot_ctx_create (env.h) */
  uint64_t ordv = 0;
  if (dv && num_parse_u64("HOT_DEVICE", dv, 0, 1024, &ordv, err, n)) {
    free(g);
    return NULL;
  }
  int ord = (int)ordv;
  const cuda_driver *d = g->d;
  CUresult r = d->cuDeviceGet(&g->dev, ord);
  if (!r) r = d->cuDevicePrimaryCtxRetain(&g->pctx, g->dev);
  if (!r) r = d->cuCtxSetCurrent(g->pctx);
  if (!r) r = d->cuStreamCreate(&g->s, CU_STREAM_NON_BLOCKING);
  if (r) {
    cuda_result_error(r, "device setup", err, n);
    if (g->pctx) d->cuDevicePrimaryCtxRelease(g->dev);
    free(g);
    return NULL;
  }
  if (d->cuDeviceGetAttribute(&g->l2, ATTR_L2_CACHE_SIZE, g->dev)) g->l2 = 0;
  if (d->cuMemGetInfo(&g->free_b, &g->total_b)) g->free_b = g->total_b = 0;
  g->cb = bench_cublas_open(g->s, g->cublas_err, sizeof g->cublas_err);
  /* FP8 baseline: a device with FP8 tensor cores, cuBLASLt, and its workspace */
  if (d->cuDeviceGetAttribute(&g->cc_major, ATTR_CC_MAJOR, g->dev) ||
      d->cuDeviceGetAttribute(&g->cc_minor, ATTR_CC_MINOR, g->dev)) {
    snprintf(g->lt_err, sizeof g->lt_err, "compute capability unknown (cuDeviceGetAttribute failed)");
  } else if (!bench_fp8_arch_reason(g->cc_major, g->cc_minor, g->lt_err, sizeof g->lt_err)) {
    g->lt = bench_cublaslt_open(g->lt_err, sizeof g->lt_err);
    if (g->lt && d->cuMemAlloc(&g->lt_ws, FP8_WORKSPACE)) {
      snprintf(g->lt_err, sizeof g->lt_err, "cuMemAlloc of cuBLASLt's %zu MiB workspace failed",
               FP8_WORKSPACE >> 20);
      bench_cublaslt_close(g->lt);
      g->lt = NULL;
      g->lt_ws = 0;
    }
  }
  return g;
}

void bench_gpu_get_parts(bench_gpu *g, bench_gpu_parts *out) {
  memset(out, 0, sizeof *out);
  out->d = g->d;
  out->s = g->s;
  out->cb = g->cb;
  out->cublas_err = g->cublas_err;
  out->lt = g->lt;
  out->lt_err = g->lt_err;
  out->lt_ws = g->lt_ws;
  out->lt_ws_bytes = FP8_WORKSPACE;
  out->cc_major = g->cc_major;
  out->cc_minor = g->cc_minor;
}

void bench_gpu_close(bench_gpu *g) {
  if (!g) return;
  bench_cublas_close(g->cb);
  g->d->cuStreamSynchronize(g->s);
  bench_cublaslt_close(g->lt);
  if (g->lt_ws) g->d->cuMemFree(g->lt_ws);
  g->d->cuStreamDestroy(g->s);
  g->d->cuDevicePrimaryCtxRelease(g->dev);
  free(g);
}

/* ---- device allocations tracked for one stage ---------------------------------------------- */
#define ARENA_MAX (15 * MAX_SETS + 32) /* the speed stage: up to 14 buffers per rotated set + 8 */
typedef struct {
  bench_gpu *g;
  int n;
  CUdeviceptr p[ARENA_MAX];
  char err[300];
} arena;

static CUdeviceptr dalloc(arena *a, size_t bytes) {
  CUdeviceptr p = 0;
  if (a->err[0]) return 0;
  if (a->n >= ARENA_MAX) {
    snprintf(a->err, sizeof a->err, "more than %d device buffers in one stage", ARENA_MAX);
    return 0;
  }
  CUresult r = a->g->d->cuMemAlloc(&p, bytes ? (bytes + 255) & ~(size_t)255 : 256);
  if (r) {
    char what[96];
    snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
    cuda_result_error(r, what, a->err, sizeof a->err);
    return 0;
  }
  a->p[a->n++] = p;
  return p;
}

static void arena_free(arena *a) {
  a->g->d->cuStreamSynchronize(a->g->s);
  for (int i = 0; i < a->n; ++i) a->g->d->cuMemFree(a->p[i]);
  a->n = 0;
}

/* Copies `bytes` of host data into set 0 and the device copy of set 0 into the others. */
static int upload(arena *a, CUdeviceptr *sets, int nsets, const void *h, size_t bytes) {
  const cuda_driver *d = a->g->d;
  CUresult r = d->cuMemcpyHtoD(sets[0], h, bytes);
  for (int i = 1; i < nsets && !r; ++i) r = d->cuMemcpyDtoDAsync(sets[i], sets[0], bytes, a->g->s);
  if (!r) r = d->cuStreamSynchronize(a->g->s);
  if (r) cuda_result_error(r, "upload", a->err, sizeof a->err);
  return r ? -1 : 0;
}

/* ---- ceilings ------------------------------------------------------------------------------ */
typedef struct {
  bench_gpu *g;
  CUdeviceptr a, b, c;
  size_t bytes;
  int64_t m;
  int i8;
} ceil_arg;

static int run_copy(void *p, int it) {
  ceil_arg *c = p;
  (void)it;
  return c->g->d->cuMemcpyDtoDAsync(c->b, c->a, c->bytes, c->g->s) ? -1 : 0;
}

static int run_big_gemm(void *p, int it) {
  ceil_arg *c = p;
  (void)it;
  if (c->i8) return bench_cublas_gemm_i8(c->g->cb, c->m, c->a, c->b, c->c);
  return bench_cublas_gemm(c->g->cb, BENCH_BF16, 0, c->m, c->m, c->m, c->a, c->b, c->c);
}

typedef struct {
  bench_gpu *g;
  bench_fp8_gemm *f;
  CUdeviceptr a, b, c;
} fp8_ceil_arg;

static int run_fp8_ceiling(void *p, int it) {
  fp8_ceil_arg *c = p;
  (void)it;
  return bench_fp8_gemm_run(c->f, c->a, c->b, c->c, c->g->s);
}

void bench_gpu_ceilings(bench_gpu *g, bench_run *run) {
  arena a = {.g = g};
  char err[300] = "";
  bench_stat st;
  run->l2_bytes = g->l2;
  size_t bytes = (size_t)1 << 30;
  if (g->free_b && bytes > g->free_b / 4) bytes = g->free_b / 4;
  ceil_arg c = {.g = g, .bytes = bytes};
  c.a = dalloc(&a, bytes);
  c.b = dalloc(&a, bytes);
  if (!a.err[0] && !bench_time(g->d, g->s, 3, 20, run_copy, &c, &st, err, sizeof err))
    run->copy_gbs = 2.0 * (double)bytes / st.med / 1e6; /* read + write, bytes per ms -> GB/s */
  arena_free(&a);
  if (!g->cb) {
    snprintf(run->ceil_note, sizeof run->ceil_note, "no cuBLAS: %.180s", g->cublas_err);
    return;
  }
  c.m = 8192;
  size_t e = (size_t)(c.m * c.m);
  c.a = dalloc(&a, e * 2);
  c.b = dalloc(&a, e * 2);
  c.c = dalloc(&a, e * 4); /* room for the int32 output below */
  c.i8 = 0;
  if (!a.err[0] && !bench_time(g->d, g->s, 3, 10, run_big_gemm, &c, &st, err, sizeof err))
    run->bf16_tflops = 2.0 * (double)c.m * (double)c.m * (double)c.m / st.med / 1e9;
  c.i8 = 1;
  err[0] = 0;
  int rc = a.err[0] ? -1 : bench_time(g->d, g->s, 3, 10, run_big_gemm, &c, &st, err, sizeof err);
  if (!rc) run->int8_tops = 2.0 * (double)c.m * (double)c.m * (double)c.m / st.med / 1e9;
  else snprintf(run->ceil_note, sizeof run->ceil_note, "INT8 cuBLAS GEMM refused (status %d)", rc);
  /* FP8 (cuBLASLt, the FP8 baseline's GEMM): e4m3 operands in the same buffers (all 1.0), bf16 out */
  if (g->lt && !a.err[0]) {
    const float one = 1.0f;
    CUdeviceptr sc = dalloc(&a, sizeof one);
    bench_fp8_gemm *fg = NULL;
    char e8[240] = "";
    rc = a.err[0] || g->d->cuMemcpyHtoD(sc, &one, sizeof one) || g->d->cuMemsetD8(c.a, 0x38, e) ||
         g->d->cuMemsetD8(c.b, 0x38, e);
    if (rc) snprintf(e8, sizeof e8, "buffers");
    if (!rc) rc = bench_fp8_gemm_make(g->lt, c.m, c.m, c.m, sc, sc, g->lt_ws, FP8_WORKSPACE, &fg, e8, sizeof e8);
    fp8_ceil_arg fa = {g, fg, c.a, c.b, c.c};
    if (!rc) rc = bench_time(g->d, g->s, 3, 10, run_fp8_ceiling, &fa, &st, e8, sizeof e8);
    if (!rc) run->fp8_tflops = 2.0 * (double)c.m * (double)c.m * (double)c.m / st.med / 1e9;
    else snprintf(run->ceil_note, sizeof run->ceil_note, "FP8 cuBLASLt GEMM: %.150s (status %d)", e8, rc);
    bench_fp8_gemm_free(fg);
  } else if (!g->lt) {
    snprintf(run->ceil_note, sizeof run->ceil_note, "no FP8 ceiling: %.170s", g->lt_err);
  }
  if (a.err[0]) snprintf(run->ceil_note, sizeof run->ceil_note, "%.190s", a.err);
  arena_free(&a);
}

/* ---- bit-exactness ------------------------------------------------------------------------- */
static void set_status(bench_layer *bl, hot_status st, hot_ctx *ctx, const char *what) {
  if (bl->status[0]) return;
  snprintf(bl->status, sizeof bl->status, "cuda %s: %s: %.250s", what, hot_status_name(st),
           hot_errmsg(ctx));
  bl->unsupported = st == HOT_ERR_UNSUPPORTED;
}

/* Index of the first differing float, or -1. */
static int64_t first_diff(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (memcmp(&a[i], &b[i], 4) != 0) return i;
  return -1;
}

/* The GPU's outputs (saved buffer hs of sb bytes, g_x hx, g_w hw, g_b hb) against the CPU's
 * (ref) bit for bit, and LQS's choice of granularity: bl->bitexact and the first difference. */
static void compare_outputs(bench_layer *bl, const hot_layer_info *info, const bench_outputs *ref,
                            const uint8_t *hs, size_t sb, const float *hx, const float *hw,
                            const float *hb, int64_t T, int64_t O, int64_t I) {
  int64_t i;
  bl->bitexact = 1;
  if ((info->gran == HOT_GRAN_ROW) != (ref->gran_row != 0)) {
    bl->bitexact = 0;
    snprintf(bl->bitexact_note, sizeof bl->bitexact_note, "LQS chose per %s on the GPU, per %s on the CPU",
             info->gran == HOT_GRAN_ROW ? "token" : "tensor", ref->gran_row ? "token" : "tensor");
  } else if (sb != ref->saved_bytes || memcmp(hs, ref->saved, sb) != 0) {
    bl->bitexact = 0;
    snprintf(bl->bitexact_note, sizeof bl->bitexact_note, "saved ABC buffer differs");
  } else if ((i = first_diff(hx, ref->gx, T * I)) >= 0) {
    bl->bitexact = 0;
    snprintf(bl->bitexact_note, sizeof bl->bitexact_note, "g_x[%lld] gpu %.9g cpu %.9g", (long long)i,
             (double)hx[i], (double)ref->gx[i]);
  } else if ((i = first_diff(hw, ref->gw, O * I)) >= 0) {
    bl->bitexact = 0;
    snprintf(bl->bitexact_note, sizeof bl->bitexact_note, "g_w[%lld] gpu %.9g cpu %.9g", (long long)i,
             (double)hw[i], (double)ref->gw[i]);
  } else if (bl->bias && (i = first_diff(hb, ref->gb, O)) >= 0) {
    bl->bitexact = 0;
    snprintf(bl->bitexact_note, sizeof bl->bitexact_note, "g_b[%lld] gpu %.9g cpu %.9g", (long long)i,
             (double)hb[i], (double)ref->gb[i]);
  }
}

void bench_gpu_bitexact(bench_gpu *g, const bench_run *run, bench_layer *bl,
                        const tooldata *dt, const bench_outputs *ref) {
  const cuda_driver *d = g->d;
  arena a = {.g = g};
  hot_layer *layer = NULL;
  hot_ctx *ctx = NULL;
  char err[400];
  bl->bitexact = -1;
  /* A fresh context, like the CPU side's: a layer described in C (capped tokens) gets the same
   * Philox layer id (0) on both, so the stochastic rounding draws agree. */
  hot_status st = bench_ctx_open(&ctx, run, HOT_BACKEND_CUDA, NULL, 0, NULL, err, sizeof err);
  if (st == HOT_OK) st = bench_layer_open(ctx, run, bl, bl->cB, bl->cL, &layer, err, sizeof err);
  if (st != HOT_OK) {
    snprintf(bl->status, sizeof bl->status, "cuda layer: %s: %.250s", hot_status_name(st), err);
    hot_ctx_destroy(ctx);
    return;
  }
  int64_t T = dt->T, O = dt->O, I = dt->I;
  size_t sb = hot_layer_saved_bytes(layer);
  const size_t es = tooldata_dtype_size(dt->dt);
  CUdeviceptr x = dalloc(&a, (size_t)(T * I) * es), w = dalloc(&a, (size_t)(O * I) * es);
  CUdeviceptr gy = dalloc(&a, (size_t)(T * O) * es), gx = dalloc(&a, (size_t)(T * I) * 4);
  CUdeviceptr gw = dalloc(&a, (size_t)(O * I) * 4), gb = dalloc(&a, (size_t)O * 4);
  CUdeviceptr sv = dalloc(&a, sb);
  float *hx = malloc((size_t)(T * I) * 4), *hw = malloc((size_t)(O * I) * 4), *hb = malloc((size_t)O * 4);
  uint8_t *hs = malloc(sb + 1);
  if (a.err[0] || !hx || !hw || !hb || !hs) {
    snprintf(bl->status, sizeof bl->status, "bit-exactness buffers: %.250s", a.err[0] ? a.err : "out of host memory");
    goto done;
  }
  if (d->cuMemcpyHtoD(x, tooldata_in(dt, dt->x), (size_t)(T * I) * es) ||
      d->cuMemcpyHtoD(w, tooldata_in(dt, dt->w), (size_t)(O * I) * es) ||
      d->cuMemcpyHtoD(gy, tooldata_in(dt, dt->gy), (size_t)(T * O) * es)) {
    snprintf(bl->status, sizeof bl->status, "bit-exactness: upload failed");
    goto done;
  }
  st = hot_layer_save(layer, DP(x), dt->dt, DP(sv), g->s);
  if (st != HOT_OK) { set_status(bl, st, ctx, "save"); goto done; }
  hot_layer_info info;
  if (hot_layer_get_info(layer, &info) == HOT_OK && info.gran_auto) {
    st = hot_layer_calibrate(layer, DP(gy), dt->dt, 0, g->s);
    if (st == HOT_ERR_UNSUPPORTED) /* no LQS kernel yet: run uncalibrated (per tensor) */
      snprintf(bl->gpu_note, sizeof bl->gpu_note, "LQS kernel not in this build: g' per tensor");
    else if (st != HOT_OK) { set_status(bl, st, ctx, "calibrate"); goto done; }
    hot_layer_get_info(layer, &info);
  }
  st = hot_layer_backward(layer, DP(gy), DP(w), dt->dt, DP(sv), (float *)DP(gx), (float *)DP(gw),
                          bl->bias ? (float *)DP(gb) : NULL, 1, g->s);
  if (st != HOT_OK) { set_status(bl, st, ctx, "backward"); goto done; }
  CUresult r = d->cuStreamSynchronize(g->s);
  if (!r) r = d->cuMemcpyDtoH(hx, gx, (size_t)(T * I) * 4);
  if (!r) r = d->cuMemcpyDtoH(hw, gw, (size_t)(O * I) * 4);
  if (!r && bl->bias) r = d->cuMemcpyDtoH(hb, gb, (size_t)O * 4);
  if (!r) r = d->cuMemcpyDtoH(hs, sv, sb);
  if (r) {
    cuda_result_error(r, "bit-exactness: run or copy back", bl->status, sizeof bl->status);
    goto done;
  }
  compare_outputs(bl, &info, ref, hs, sb, hx, hw, hb, T, O, I);
done:
  arena_free(&a);
  hot_layer_destroy(layer);
  hot_ctx_destroy(ctx);
  free(hx);
  free(hw);
  free(hb);
  free(hs);
}

/* ---- speed --------------------------------------------------------------------------------- */
typedef struct {
  bench_gpu *g;
  hot_layer *layer;
  int nsets, bias;
  hot_dtype dt;                    /* the layer's input dtype: x, w, g_y sets are stored in it */
  CUdeviceptr x[MAX_SETS], w[MAX_SETS], gy[MAX_SETS], sv[MAX_SETS];
  CUdeviceptr gx, gw, gb;
  /* cuBLAS */
  bench_prec prec;
  int64_t T, O, I;
  CUdeviceptr bx[MAX_SETS], bw[MAX_SETS], bgy[MAX_SETS], bgx, bgw;
  CUdeviceptr fx[MAX_SETS], fw[MAX_SETS], fgy[MAX_SETS]; /* fp32 inputs (= x, w, gy for f32) */
  /* cuBLASLt FP8: e4m3 operands in the TN form (K-contiguous), sizes Tp, Op, Ip (multiples of
   * 16, zero-padded): g_y (Tp x Op) and w^T (Ip x Op) for g_x, g_y^T (Op x Tp) and x^T
   * (Ip x Tp) for g_w; bf16 outputs; dequantization scales of g_y, w, x in q_scale[0..2]. */
  int fp8;
  int64_t Tp, Op, Ip;
  CUdeviceptr q_gy[MAX_SETS], q_wt[MAX_SETS], q_gyt[MAX_SETS], q_xt[MAX_SETS];
  CUdeviceptr q_gx, q_gw, q_scale;
  bench_fp8_gemm *f_gx, *f_gw;
} speed_arg;

static int run_save(void *p, int it) {
  speed_arg *s = p;
  int k = it % s->nsets;
  return (int)hot_layer_save(s->layer, DP(s->x[k]), s->dt, DP(s->sv[k]), s->g->s);
}

static int run_backward(void *p, int it) {
  speed_arg *s = p;
  int k = it % s->nsets;
  return (int)hot_layer_backward(s->layer, DP(s->gy[k]), DP(s->w[k]), s->dt, DP(s->sv[k]),
                                 (float *)DP(s->gx), (float *)DP(s->gw),
                                 s->bias ? (float *)DP(s->gb) : NULL, (uint32_t)it + 1, s->g->s);
}

static int run_blas(void *p, int it) {
  speed_arg *s = p;
  int k = it % s->nsets;
  int bf = s->prec == BENCH_BF16;
  CUdeviceptr gy = bf ? s->bgy[k] : s->fgy[k], w = bf ? s->bw[k] : s->fw[k], x = bf ? s->bx[k] : s->fx[k];
  CUdeviceptr gx = bf ? s->bgx : s->gx, gw = bf ? s->bgw : s->gw;
  int r = bench_cublas_gemm(s->g->cb, s->prec, 0, s->T, s->I, s->O, gy, w, gx); /* g_x = g_y w */
  if (!r) r = bench_cublas_gemm(s->g->cb, s->prec, 1, s->O, s->I, s->T, gy, x, gw); /* g_w = g_y^T x */
  return r;
}

static int run_fp8(void *p, int it) {
  speed_arg *s = p;
  int k = it % s->nsets;
  int r = bench_fp8_gemm_run(s->f_gx, s->q_gy[k], s->q_wt[k], s->q_gx, s->g->s); /* g_x = g_y w */
  if (!r) r = bench_fp8_gemm_run(s->f_gw, s->q_gyt[k], s->q_xt[k], s->q_gw, s->g->s); /* g_w */
  return r;
}

static int64_t up16(int64_t v) { return (v + 15) / 16 * 16; }

/* FP8_SAMPLES entries of g_x (even slots) and of g_w (odd slots): indices and their fp64
 * values from the inputs the FP8 operands were quantized from. */
typedef struct {
  int64_t row[2 * FP8_SAMPLES], col[2 * FP8_SAMPLES];
  double ref[2 * FP8_SAMPLES];
} fp8_samples;

static void fp8_sample_refs(const tooldata *dt, fp8_samples *sm) {
  uint64_t z = 0x243f6a8885a308d3ull;
  for (int i = 0; i < 2 * FP8_SAMPLES; ++i) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t a = z >> 17;
    int gw = i & 1;
    int64_t rows = gw ? dt->O : dt->T, r = (int64_t)(a % (uint64_t)rows);
    int64_t c = (int64_t)((a / (uint64_t)rows) % (uint64_t)dt->I);
    double acc = 0;
    if (!gw)
      for (int64_t o = 0; o < dt->O; ++o) acc += (double)dt->gy[r * dt->O + o] * dt->w[o * dt->I + c];
    else
      for (int64_t t = 0; t < dt->T; ++t) acc += (double)dt->gy[t * dt->O + r] * dt->x[t * dt->I + c];
    sm->row[i] = r;
    sm->col[i] = c;
    sm->ref[i] = acc;
  }
}

/* The sampled entries of the FP8 outputs (bf16) against their fp64 values: relative error of
 * the samples (Frobenius) into bl->fp8_gx_err / fp8_gw_err; -1 when the copy back fails. */
static void fp8_sample_errors(const speed_arg *s, const fp8_samples *sm, bench_layer *bl) {
  double num[2] = {0, 0}, den[2] = {0, 0};
  for (int i = 0; i < 2 * FP8_SAMPLES; ++i) {
    int gw = i & 1;
    uint16_t h;
    CUdeviceptr src = (gw ? s->q_gw : s->q_gx) + (CUdeviceptr)((sm->row[i] * s->Ip + sm->col[i]) * 2);
    if (s->g->d->cuMemcpyDtoH(&h, src, 2)) {
      bl->fp8_gx_err = bl->fp8_gw_err = -1;
      return;
    }
    uint32_t u = (uint32_t)h << 16;
    float v;
    memcpy(&v, &u, 4);
    num[gw] += ((double)v - sm->ref[i]) * ((double)v - sm->ref[i]);
    den[gw] += sm->ref[i] * sm->ref[i];
  }
  bl->fp8_gx_err = den[0] > 0 ? sqrt(num[0] / den[0]) : -1;
  bl->fp8_gw_err = den[1] > 0 ? sqrt(num[1] / den[1]) : -1;
}

/* Per-kernel times: `runs` profiled saves and backwards (hot_ctx_set_profiling), each launch's
 * median, and the compulsory bytes / integer ops of the launch from the plan (gen/cost.h), so
 * the report can state GB/s against the copy ceiling or TOP/s against the INT8 one. Profiling
 * synchronises after every call; the end-to-end timings above ran without it. */
#define PROF_RUNS_MAX 64
static void profile_kernels(hot_ctx *ctx, speed_arg *s, bench_layer *bl, int runs) {
  static double samples[BENCH_MAX_KERNELS][PROF_RUNS_MAX];
  hot_kernel_time kt[HOT_MAX_KERNEL_TIMES];
  if (runs > PROF_RUNS_MAX) runs = PROF_RUNS_MAX;
  bl->nk = 0;
  if (hot_ctx_set_profiling(ctx, 1) != HOT_OK) {
    snprintf(bl->prof_note, sizeof bl->prof_note, "profiling refused: %.120s", hot_errmsg(ctx));
    return;
  }
  const hot_layer_plan *pl = hot_layer_get_plan(s->layer);
  int ok = 1, count[2] = {0, 0};
  for (int it = 0; it < runs && ok; ++it) {
    int base = 0;
    for (int bwd = 0; bwd < 2 && ok; ++bwd) {
      int rc = bwd ? run_backward(s, it) : run_save(s, it);
      int n = 0;
      if (rc || hot_layer_kernel_times(s->layer, kt, HOT_MAX_KERNEL_TIMES, &n) != HOT_OK) {
        snprintf(bl->prof_note, sizeof bl->prof_note, "profiled %s failed: %.120s",
                 bwd ? "backward" : "save", hot_errmsg(ctx));
        ok = 0;
        break;
      }
      if (n > HOT_MAX_KERNEL_TIMES) n = HOT_MAX_KERNEL_TIMES;
      if (it == 0) count[bwd] = n;
      if (n != count[bwd]) {
        snprintf(bl->prof_note, sizeof bl->prof_note, "launch count changed between runs");
        ok = 0;
      }
      for (int i = 0; i < n && ok; ++i) {
        bench_kernel *k = &bl->kern[base + i];
        if (it == 0) {
          memset(k, 0, sizeof *k);
          snprintf(k->name, sizeof k->name, "%s", kt[i].name ? kt[i].name : "?");
          k->role = kt[i].role;
          k->phase = kt[i].phase;
          k->bwd = bwd;
          hot_kernel_cost c;
          if (pl && plan_kernel_cost(pl, (hot_kernel_role)k->role, k->phase, k->phase == 2, &c) == 0) {
            k->bytes = c.bytes_read + c.bytes_written;
            k->ops = c.int_ops;
            k->bound = c.bound;
          } else {
            k->bytes = k->ops = -1;
          }
        } else if (k->role != kt[i].role || k->phase != kt[i].phase || k->bwd != bwd) {
          snprintf(bl->prof_note, sizeof bl->prof_note, "launch sequence changed between runs");
          ok = 0;
        }
        samples[base + i][it] = kt[i].ms;
      }
      base += n;
      if (it == 0) bl->nk = base;
    }
    if (ok) bl->prof_runs = it + 1;
  }
  hot_ctx_set_profiling(ctx, 0);
  if (!ok || !bl->prof_runs) {
    bl->nk = 0;
    return;
  }
  for (int i = 0; i < bl->nk; ++i) bench_stat_of(samples[i], bl->prof_runs, &bl->kern[i].t);
}

/* The device buffers of the speed stage: s->nsets rotated sets of every input (the layer's
 * dtype, fp32 and bf16 copies, FP8 operands when s->fp8) and the outputs, from arena a. sb: the
 * layer's saved bytes; es: its input element size. Errors are in a->err. */
static void speed_buffers(arena *a, speed_arg *s, size_t sb, size_t es) {
  const size_t bx = (size_t)(s->T * s->I), bw = (size_t)(s->O * s->I), bg = (size_t)(s->T * s->O);
  for (int k = 0; k < s->nsets; ++k) {
    s->x[k] = dalloc(a, bx * es);
    s->w[k] = dalloc(a, bw * es);
    s->gy[k] = dalloc(a, bg * es);
    s->sv[k] = dalloc(a, sb);
    /* cuBLAS FP32/TF32 read fp32 inputs: the layer's own sets when it reads f32 */
    s->fx[k] = s->dt == HOT_DT_F32 ? s->x[k] : dalloc(a, bx * 4);
    s->fw[k] = s->dt == HOT_DT_F32 ? s->w[k] : dalloc(a, bw * 4);
    s->fgy[k] = s->dt == HOT_DT_F32 ? s->gy[k] : dalloc(a, bg * 4);
    s->bx[k] = dalloc(a, bx * 2);
    s->bw[k] = dalloc(a, bw * 2);
    s->bgy[k] = dalloc(a, bg * 2);
    if (s->fp8) {
      s->q_gy[k] = dalloc(a, (size_t)(s->Tp * s->Op));
      s->q_wt[k] = dalloc(a, (size_t)(s->Ip * s->Op));
      s->q_gyt[k] = dalloc(a, (size_t)(s->Op * s->Tp));
      s->q_xt[k] = dalloc(a, (size_t)(s->Ip * s->Tp));
    }
  }
  if (s->fp8) {
    s->q_gx = dalloc(a, (size_t)(s->Tp * s->Ip) * 2);
    s->q_gw = dalloc(a, (size_t)(s->Op * s->Ip) * 2);
    s->q_scale = dalloc(a, 3 * sizeof(float));
  }
  s->gx = dalloc(a, bx * 4);
  s->gw = dalloc(a, bw * 4);
  s->gb = dalloc(a, (size_t)s->O * 4);
  s->bgx = dalloc(a, bx * 2);
  s->bgw = dalloc(a, bw * 2);
}

/* Uploads the inputs into every set: the layer's dtype, fp32 (when that is not f32) and bf16
 * (through hb, a host buffer of the largest tensor's bf16 size). 0, or nonzero with a->err. */
static int speed_upload(arena *a, speed_arg *s, const tooldata *dt, size_t es, uint16_t *hb) {
  const size_t bx = (size_t)(s->T * s->I), bw = (size_t)(s->O * s->I), bg = (size_t)(s->T * s->O);
  if (upload(a, s->x, s->nsets, tooldata_in(dt, dt->x), bx * es) ||
      upload(a, s->w, s->nsets, tooldata_in(dt, dt->w), bw * es) ||
      upload(a, s->gy, s->nsets, tooldata_in(dt, dt->gy), bg * es))
    return 1;
  if (s->dt != HOT_DT_F32 &&
      (upload(a, s->fx, s->nsets, dt->x, bx * 4) || upload(a, s->fw, s->nsets, dt->w, bw * 4) ||
       upload(a, s->fgy, s->nsets, dt->gy, bg * 4)))
    return 1;
  tooldata_to_bf16(dt->x, hb, bx);
  int up = upload(a, s->bx, s->nsets, hb, bx * 2);
  tooldata_to_bf16(dt->w, hb, bw);
  if (!up) up = upload(a, s->bw, s->nsets, hb, bw * 2);
  tooldata_to_bf16(dt->gy, hb, bg);
  if (!up) up = upload(a, s->bgy, s->nsets, hb, bg * 2);
  return up;
}

/* FP8 operands: per-tensor scales from each tensor's amax (quantization q = 448 / amax, the
 * GEMM's dequantization 1 / q), e4m3 in the TN form, zero-padded; the fp64 values of the
 * sampled output entries into *sm. All on the host, before timing: none of it is timed. On a
 * failure s->fp8 = 0 and bl->fp8_reason says why. *h8 and *sm: malloc'd here, the caller frees
 * them. */
static void fp8_operands(bench_gpu *g, arena *a, speed_arg *s, const tooldata *dt, bench_layer *bl,
                         uint8_t **h8, fp8_samples **sm) {
  if (!s->fp8) return;
  const size_t bx = (size_t)(s->T * s->I), bw = (size_t)(s->O * s->I), bg = (size_t)(s->T * s->O);
  size_t big = (size_t)(s->Tp * s->Op);
  if ((size_t)(s->Ip * s->Op) > big) big = (size_t)(s->Ip * s->Op);
  if ((size_t)(s->Ip * s->Tp) > big) big = (size_t)(s->Ip * s->Tp);
  *h8 = malloc(big);
  *sm = malloc(sizeof **sm);
  if (!*h8 || !*sm) {
    snprintf(bl->fp8_reason, sizeof bl->fp8_reason, "FP8 operands: out of host memory");
    s->fp8 = 0;
    return;
  }
  uint8_t *q8 = *h8;
  float amax[3] = {bench_amax(dt->gy, bg), bench_amax(dt->w, bw), bench_amax(dt->x, bx)}, q[3], deq[3];
  for (int i = 0; i < 3; ++i) {
    q[i] = amax[i] > 0 ? 448.0f / amax[i] : 1.0f;
    deq[i] = 1.0f / q[i];
  }
  int r8 = (int)g->d->cuMemcpyHtoD(s->q_scale, deq, sizeof deq);
  bench_fp8_pack(dt->gy, s->T, s->O, q[0], 0, q8, s->Tp, s->Op);
  if (!r8) r8 = upload(a, s->q_gy, s->nsets, q8, (size_t)(s->Tp * s->Op));
  bench_fp8_pack(dt->gy, s->T, s->O, q[0], 1, q8, s->Tp, s->Op);
  if (!r8) r8 = upload(a, s->q_gyt, s->nsets, q8, (size_t)(s->Op * s->Tp));
  bench_fp8_pack(dt->w, s->O, s->I, q[1], 1, q8, s->Op, s->Ip);
  if (!r8) r8 = upload(a, s->q_wt, s->nsets, q8, (size_t)(s->Ip * s->Op));
  bench_fp8_pack(dt->x, s->T, s->I, q[2], 1, q8, s->Tp, s->Ip);
  if (!r8) r8 = upload(a, s->q_xt, s->nsets, q8, (size_t)(s->Ip * s->Tp));
  if (r8) {
    snprintf(bl->fp8_reason, sizeof bl->fp8_reason, "FP8 operands: upload failed");
    s->fp8 = 0;
  } else {
    fp8_sample_refs(dt, *sm);
  }
}

/* HOT: calibrate (scale auto), forward on every set (the backward reads them), then time the
 * save and the backward and profile the kernels. */
static void time_hot(bench_gpu *g, hot_ctx *ctx, speed_arg *s, bench_layer *bl, int warm,
                     int iters) {
  char err[400] = "";
  hot_layer_info info;
  hot_status st = HOT_OK;
  if (hot_layer_get_info(s->layer, &info) == HOT_OK && info.gran_auto)
    st = hot_layer_calibrate(s->layer, DP(s->gy[0]), s->dt, 0, g->s);
  if (st == HOT_ERR_UNSUPPORTED) { /* no LQS kernel yet: time the uncalibrated layer */
    snprintf(bl->gpu_note, sizeof bl->gpu_note, "LQS kernel not in this build: g' per tensor");
    st = HOT_OK;
  }
  if (st != HOT_OK) set_status(bl, st, ctx, "calibrate");
  for (int k = 0; k < s->nsets && st == HOT_OK; ++k) {
    st = (hot_status)run_save(s, k);
    if (st != HOT_OK) set_status(bl, st, ctx, "save");
  }
  if (st != HOT_OK) return;
  int rc = bench_time(g->d, g->s, warm, iters, run_save, s, &bl->hot_fwd, err, sizeof err);
  if (rc > 0) set_status(bl, (hot_status)rc, ctx, "save (timed)");
  rc = rc ? rc : bench_time(g->d, g->s, warm, iters, run_backward, s, &bl->hot_bwd, err, sizeof err);
  if (rc > 0) set_status(bl, (hot_status)rc, ctx, "backward (timed)");
  if (rc < 0 && !bl->status[0]) fileio_msgf(bl->status, sizeof bl->status, "timing: %s", err);
  if (!rc) profile_kernels(ctx, s, bl, iters < 20 ? iters : 20);
}

/* cuBLAS: the same two products in BF16, FP32 (no TF32) and FP32 with TF32. */
static void time_cublas(bench_gpu *g, speed_arg *s, bench_layer *bl, int warm, int iters) {
  char err[400] = "";
  if (!g->cb) {
    if (!bl->status[0]) snprintf(bl->status, sizeof bl->status, "no cuBLAS: %.250s", g->cublas_err);
    return;
  }
  bench_prec ps[3] = {BENCH_BF16, BENCH_FP32, BENCH_TF32};
  bench_stat *out[3] = {&bl->bf16, &bl->fp32, &bl->tf32};
  for (int p = 0; p < 3; ++p) {
    s->prec = ps[p];
    err[0] = 0;
    int rc = bench_time(g->d, g->s, warm, iters, run_blas, s, out[p], err, sizeof err);
    if (rc && !bl->status[0])
      fileio_msgf(bl->status, sizeof bl->status, "cuBLAS %s: status %d %s", p == 0 ? "bf16" : p == 1 ? "fp32" : "tf32", rc, err);
  }
}

/* cuBLASLt FP8: the two GEMMs on operands already in e4m3 (an FP8 pipeline's amax, cast and
 * transpose passes are not timed); not measured -> fp8_reason, never the layer's status. */
static void time_fp8(bench_gpu *g, speed_arg *s, const fp8_samples *sm, bench_layer *bl, int warm,
                     int iters) {
  if (!s->fp8) return;
  char err[400] = "", e8[240] = "";
  bl->fp8_T = s->Tp;
  bl->fp8_O = s->Op;
  bl->fp8_I = s->Ip;
  int rc = bench_fp8_gemm_make(g->lt, s->Tp, s->Ip, s->Op, s->q_scale, s->q_scale + 4, g->lt_ws,
                               FP8_WORKSPACE, &s->f_gx, e8, sizeof e8);
  if (!rc)
    rc = bench_fp8_gemm_make(g->lt, s->Op, s->Ip, s->Tp, s->q_scale, s->q_scale + 8, g->lt_ws,
                             FP8_WORKSPACE, &s->f_gw, e8, sizeof e8);
  if (!rc) {
    err[0] = 0;
    rc = bench_time(g->d, g->s, warm, iters, run_fp8, s, &bl->fp8, err, sizeof err);
    if (rc) snprintf(e8, sizeof e8, "cublasLtMatmul FP8: status %d %.150s", rc, err);
  }
  if (!rc && g->d->cuStreamSynchronize(g->s) == CUDA_SUCCESS) fp8_sample_errors(s, sm, bl);
  if (!rc) bl->fp8_reason[0] = 0;
  if (rc) {
    bl->fp8.n = 0;
    snprintf(bl->fp8_reason, sizeof bl->fp8_reason, "%s", e8);
  }
  bench_fp8_gemm_free(s->f_gx);
  bench_fp8_gemm_free(s->f_gw);
}

/* The sizes of the speed stage into s: the layer's, FP8's rounded up to multiples of 16
 * (cuBLASLt's FP8 kernels need them), and the sets rotated so that they exceed the L2. */
static void speed_sizes(bench_gpu *g, speed_arg *s, bench_layer *bl, size_t sb, size_t es) {
  const size_t bx = (size_t)(s->T * s->I), bw = (size_t)(s->O * s->I), bg = (size_t)(s->T * s->O);
  size_t set = (bx + bw + bg) * es + sb;
  size_t budget = g->free_b ? g->free_b / 2 : ((size_t)8 << 30);
  s->fp8 = g->lt != NULL;
  if (!s->fp8) snprintf(bl->fp8_reason, sizeof bl->fp8_reason, "%.230s", g->lt_err);
  s->Tp = up16(s->T);
  s->Op = up16(s->O);
  s->Ip = up16(s->I);
  size_t q_in = s->fp8 ? (size_t)(2 * s->Tp * s->Op + s->Ip * s->Op + s->Ip * s->Tp) : 0;
  s->nsets = bench_sets_for(set + (bx + bw + bg) * (s->dt == HOT_DT_F32 ? 2 : 6) + q_in, g->l2, budget);
  bl->nsets_hot = bl->nsets_blas = s->nsets;
}

void bench_gpu_speed(bench_gpu *g, hot_ctx *ctx, const bench_run *run, bench_layer *bl) {
  arena a = {.g = g};
  speed_arg *s = calloc(1, sizeof *s);
  tooldata dt;
  memset(&dt, 0, sizeof dt);
  uint16_t *hb = NULL;
  uint8_t *h8 = NULL;
  fp8_samples *sm = NULL;
  char err[400] = "";
  hot_layer *layer = NULL;
  if (!s) return;
  snprintf(bl->fp8_reason, sizeof bl->fp8_reason, "not measured: the layer's speed stage stopped "
           "before it (see its status)");
  int64_t T = bl->T, O = bl->O, I = bl->I;
  hot_status st = bench_layer_open(ctx, run, bl, bl->B, bl->L, &layer, err, sizeof err);
  if (st != HOT_OK) {
    if (!bl->status[0])
      snprintf(bl->status, sizeof bl->status, "cuda layer: %s: %.250s", hot_status_name(st), err);
    free(s);
    return;
  }
  if (tooldata_make(&dt, T, O, I, run->seed, bl->index, bl->dt) != 0) {
    snprintf(bl->status, sizeof bl->status, "speed: out of host memory");
    goto done;
  }
  size_t sb = hot_layer_saved_bytes(layer);
  size_t bx = (size_t)(T * I), bw = (size_t)(O * I), bg = (size_t)(T * O);
  const size_t es = tooldata_dtype_size(bl->dt);
  s->g = g;
  s->layer = layer;
  s->bias = bl->bias;
  s->dt = bl->dt;
  s->T = T;
  s->O = O;
  s->I = I;
  speed_sizes(g, s, bl, sb, es);
  speed_buffers(&a, s, sb, es);
  hb = malloc((bx > bg ? (bx > bw ? bx : bw) : (bg > bw ? bg : bw)) * 2);
  if (a.err[0] || !hb) {
    fileio_msgf(bl->status, sizeof bl->status, "speed buffers: %s", a.err[0] ? a.err : "out of host memory");
    goto done;
  }
  if (speed_upload(&a, s, &dt, es, hb)) {
    fileio_msgf(bl->status, sizeof bl->status, "speed: %s", a.err);
    goto done;
  }
  fp8_operands(g, &a, s, &dt, bl, &h8, &sm);
  tooldata_free(&dt);
  time_hot(g, ctx, s, bl, run->opt.warmup, run->opt.iters);
  time_cublas(g, s, bl, run->opt.warmup, run->opt.iters);
  time_fp8(g, s, sm, bl, run->opt.warmup, run->opt.iters);
done:
  arena_free(&a);
  hot_layer_destroy(layer);
  tooldata_free(&dt);
  free(hb);
  free(h8);
  free(sm);
  free(s);
}

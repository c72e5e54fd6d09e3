/* paths.c — hot-bench --gemm-paths: on a 9.0 device the g_x (HQ) and g_w (HLA) GEMMs have three
 * implementations with the same bits (docs/gemm-paths.md), the rows of the GEMM-path table an
 * arch of compute capability 9.0 has (paths_init): mma_s8 (gemm_int.cu, arch sm_90), wgmma_s8
 * (gemm_wgmma.cu, 9.0a with tile warps_n 0/1) and tma_s8 (gemm_tma.cu, 9.0a with
 * tile_gx.warps_n = tile_gw.warps_n = 2). This stage plans every layer of the spec those three
 * ways (the spec's tiles otherwise; the arch and warps_n are set here, the spec is not edited),
 * runs save + backward on the same seeded inputs, compares g_x and g_w of the three bit for bit
 * (and with the CPU backend at hot-bench's check size), times only the two GEMM launches of each
 * path (hot_ctx_set_profiling: CUDA events around each launch), and times cuBLAS BF16 and
 * cuBLASLt FP8 GEMMs of the same products beside them. Rates are given against the INT8 cuBLAS
 * ceiling measured in the same run (bench_gpu_ceilings).
 *
 * --precompile compiles every kernel the stage launches into the kernel cache without a GPU
 * (tools/device-prep.sh), so that the device compiles none. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cost.h"
#include "escape.h"
#include "fileio.h"
#include "plan.h"

#define NPATHS HOT_GEMM_PATH_COUNT /* at most; g_npaths of them run (paths_init) */
#define DP(p) ((void *)(uintptr_t)(p))
#define MAX_BUFS 32

typedef struct {
  const char *name;      /* the plan's path name */
  const char *arch;      /* the context's arch */
  int warps_n;           /* tile_gx.warps_n and tile_gw.warps_n; -1: the spec's */
  hot_gemm_path want;    /* what the plan must give */
} path_def;

static path_def k_paths[NPATHS];
static int g_npaths;

/* The paths of a 9.0 device, from the GEMM-path and arch tables (gen/plan_tables.c): every path
 * whose operand format holds 8-bit codes, on the first arch of compute capability 9.0 where the
 * planner chooses it for the tile warps_n that asks for it (its selector, else a warpgroup path's
 * warps_n, else the spec's own). Today: mma_s8 (9.0), wgmma_s8 (9.0a, warps_n 1) and tma_s8
 * (9.0a, warps_n 2). Fills k_paths, g_npaths. */
static void paths_init(void) {
  g_npaths = 0;
  for (int i = 0; i < HOT_GEMM_PATH_COUNT; ++i) {
    const hot_gemm_path_info *g = plan_gemm_path_info((hot_gemm_path)i);
    if (plan_codes_info(g->codes)->bits < 8) continue;
    const int wn = g->warps_select ? g->warps_select : g->warps == HOT_WARPS_WARPGROUP ? g->warps_n : -1;
    for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
      const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
      if (c->sm != 90 || plan_gemm_path_choose(c, wn < 0 ? 0 : wn, 8) != g->path) continue;
      k_paths[g_npaths++] = (path_def){g->name, c->name, wn, g->path};
      break;
    }
  }
}

/* "mma_s8 (9.0), wgmma_s8 (9.0a), ..." into buf. */
static const char *paths_text(char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (int p = 0; p < g_npaths && used < n; ++p) {
    const int w = snprintf(buf + used, n - used, "%s%s (%s)", p ? ", " : "", k_paths[p].name,
                           k_paths[p].arch);
    used += w > 0 ? (size_t)w : 0;
  }
  return buf;
}
static const char *const k_products[2] = {"g_x", "g_w"};

/* One path of one layer. */
typedef struct {
  char status[320];         /* "": ran; else why not (not planned, failed) */
  char kernel[2][128];      /* the GEMM entry names (g_x, g_w) */
  char tiles[2][48];
  int64_t m[2], n[2], k[2]; /* the GEMMs' sizes (k: k_pad, what the kernel runs) */
  int64_t ops[2];           /* integer ops of one launch (gen/cost.h) */
  bench_stat t[2];          /* ms of each GEMM (all its launches in one backward) */
  int same;                 /* -1 not compared (first path that ran, or no run), 0/1 */
  char diff[160];
  int cpu;                  /* -1 not checked, 0 differs, 1 equal (check size) */
  char cpu_note[200];
} path_res;

typedef struct {
  path_res p[NPATHS];
  bench_stat bf16[2], fp8[2];
  char bf16_note[240], fp8_note[240];
  int64_t fp8_dims[3];      /* T, O, I rounded up to 16 */
  char status[320];         /* a failure of the layer's common part */
} layer_res;

/* Device buffers of one layer, freed together. */
typedef struct {
  const cuda_driver *d;
  CUstream s;
  int n;
  CUdeviceptr p[MAX_BUFS];
  char err[240];
} bufs;

static CUdeviceptr balloc(bufs *b, size_t bytes) {
  CUdeviceptr p = 0;
  if (b->err[0]) return 0;
  if (b->n == MAX_BUFS) {
    snprintf(b->err, sizeof b->err, "more than %d device buffers", MAX_BUFS);
    return 0;
  }
  CUresult r = b->d->cuMemAlloc(&p, bytes ? (bytes + 255) & ~(size_t)255 : 256);
  if (r) {
    char what[64];
    snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
    cuda_result_error(r, what, b->err, sizeof b->err);
    return 0;
  }
  b->p[b->n++] = p;
  return p;
}

static void bfree(bufs *b) {
  if (b->n) b->d->cuStreamSynchronize(b->s);
  for (int i = 0; i < b->n; ++i) b->d->cuMemFree(b->p[i]);
  b->n = 0;
}

static void bupload(bufs *b, CUdeviceptr dst, const void *src, size_t bytes) {
  if (b->err[0] || !dst) return;
  CUresult r = b->d->cuMemcpyHtoD(dst, src, bytes);
  if (r) cuda_result_error(r, "upload", b->err, sizeof b->err);
}

/* ---- the three plans ----------------------------------------------------------------------- */

/* The layer's spec with the recipe applied (as hot_layer_from_spec plans it) into *s. */
static int layer_spec(const bench_run *run, const bench_layer *bl, hot_layer_spec *s, char *err,
                      size_t n) {
  hot_ctx *c = NULL;
  hot_layer *l = NULL;
  hot_status st = bench_ctx_open(&c, run, HOT_BACKEND_CPU, NULL, -1, NULL, err, n);
  if (st == HOT_OK) st = hot_layer_from_spec(c, run->opt.spec, bl->name, 0, &l);
  if (st == HOT_OK) st = hot_layer_get_spec(l, s);
  if (st != HOT_OK && c) snprintf(err, n, "%s", hot_errmsg(c));
  hot_layer_destroy(l);
  hot_ctx_destroy(c);
  return st == HOT_OK ? 0 : -1;
}

static void path_spec(const hot_layer_spec *s, int p, hot_layer_spec *out) {
  *out = *s;
  if (k_paths[p].warps_n >= 0) out->tile_gx.warps_n = out->tile_gw.warps_n = k_paths[p].warps_n;
}

/* The check size's spec: the tiles the full-size plan resolved, so that the check runs the
 * same GEMM kernels where the size allows (tuned/default tiles depend on the shape). */
static void check_spec(const hot_layer_spec *ps, const hot_layer_plan *full, hot_layer_spec *out) {
  *out = *ps;
  const hot_gemm_plan *g[2] = {&full->hq.gemm, &full->hla.gemm};
  hot_tile *t[2] = {&out->tile_gx, &out->tile_gw};
  for (int i = 0; i < 2; ++i) {
    t[i]->tile_m = g[i]->tile_m, t[i]->tile_n = g[i]->tile_n, t[i]->tile_k = g[i]->tile_k;
    t[i]->warps_m = g[i]->warps_m, t[i]->warps_n = g[i]->warps_n, t[i]->stages = g[i]->stages;
  }
}

/* The Philox layer id hot-bench's CPU check uses at (batch, tokens): the spec index at the
 * spec's tokens (hot_layer_from_spec), else 0 (a layer described in C in a fresh context). */
static int check_layer_id(const bench_run *run, const bench_layer *bl, int64_t tokens) {
  const hot_layer_spec *s = &run->spec_model->layers[bl->index];
  int64_t spec_tokens = s->tokens ? s->tokens : run->spec_model->tokens;
  return tokens == spec_tokens ? bl->index : 0;
}

/* The GEMM kernel of `role` in plan pl, or NULL. */
static const hot_kernel_plan *gemm_kernel(const hot_layer_plan *pl, hot_kernel_role role) {
  for (int i = 0; i < pl->n_kernels; ++i)
    if (pl->kernels[i].role == role) return &pl->kernels[i];
  return NULL;
}

/* The plan's two GEMMs into r (names, tiles, sizes, ops); 0, or -1 with r->status when the plan
 * is not the path asked for. */
static int plan_gemms(const hot_layer_plan *pl, int p, path_res *r) {
  const hot_gemm_plan *g[2] = {&pl->hq.gemm, &pl->hla.gemm};
  const hot_kernel_role roles[2] = {HOT_K_GEMM_GX, HOT_K_GEMM_GW};
  for (int i = 0; i < 2; ++i) {
    const hot_kernel_plan *k = gemm_kernel(pl, roles[i]);
    if (!k) {
      fileio_msgf(r->status, sizeof r->status, "not planned: the plan has no %s GEMM", k_products[i]);
      return -1;
    }
    if (g[i]->path != k_paths[p].want) {
      fileio_msgf(r->status, sizeof r->status, "not planned as %s: the %s GEMM is %s (%s)", k_paths[p].name,
                  k_products[i], plan_gemm_path_name(g[i]->path), k->name);
      return -1;
    }
    snprintf(r->kernel[i], sizeof r->kernel[i], "%s", k->name);
    snprintf(r->tiles[i], sizeof r->tiles[i], "%dx%dx%d w%dx%d s%d", g[i]->tile_m, g[i]->tile_n,
             g[i]->tile_k, g[i]->warps_m, g[i]->warps_n, g[i]->stages);
    r->m[i] = g[i]->m, r->n[i] = g[i]->n, r->k[i] = g[i]->k_pad;
    hot_kernel_cost c;
    r->ops[i] = plan_kernel_cost(pl, roles[i], 0, 0, &c) == 0 ? c.int_ops : -1;
  }
  return 0;
}

/* ---- running one path ---------------------------------------------------------------------- */

/* Inputs (layer dtype) and outputs of one size on the device. */
typedef struct {
  CUdeviceptr x, w, gy, gx, gw, gb;
  int64_t T, O, I;
  hot_dtype dt;
  int bias;
} dev_io;

static void io_make(bufs *b, const tooldata *d, int bias, dev_io *io) {
  const size_t es = tooldata_dtype_size(d->dt);
  io->T = d->T, io->O = d->O, io->I = d->I, io->dt = d->dt, io->bias = bias;
  io->x = balloc(b, (size_t)(d->T * d->I) * es);
  io->w = balloc(b, (size_t)(d->O * d->I) * es);
  io->gy = balloc(b, (size_t)(d->T * d->O) * es);
  io->gx = balloc(b, (size_t)(d->T * d->I) * 4);
  io->gw = balloc(b, (size_t)(d->O * d->I) * 4);
  io->gb = balloc(b, (size_t)d->O * 4);
  bupload(b, io->x, tooldata_in(d, d->x), (size_t)(d->T * d->I) * es);
  bupload(b, io->w, tooldata_in(d, d->w), (size_t)(d->O * d->I) * es);
  bupload(b, io->gy, tooldata_in(d, d->gy), (size_t)(d->T * d->O) * es);
}

/* One save (+ calibration when the spec says auto) and backward at step 1 on the device, g_x and
 * g_w copied into hx, hw. The outputs are filled with 0xff bytes first (a NaN pattern), so a
 * kernel that writes nothing cannot pass for one that matches. 0, or -1 with msg. */
static int run_once(const bench_gpu_parts *gp, hot_ctx *ctx, hot_layer *l, const dev_io *io,
                    float *hx, float *hw, char *msg, size_t n) {
  const cuda_driver *d = gp->d;
  hot_status st = HOT_OK;
  hot_layer_info info;
  if (d->cuMemsetD8(io->gx, 0xff, (size_t)(io->T * io->I) * 4) ||
      d->cuMemsetD8(io->gw, 0xff, (size_t)(io->O * io->I) * 4)) {
    snprintf(msg, n, "cuMemsetD8 of the outputs failed");
    return -1;
  }
  st = hot_layer_save(l, DP(io->x), io->dt, NULL, gp->s);
  if (st == HOT_OK && hot_layer_get_info(l, &info) == HOT_OK && info.gran_auto)
    st = hot_layer_calibrate(l, DP(io->gy), io->dt, 0, gp->s);
  if (st == HOT_OK)
    st = hot_layer_backward(l, DP(io->gy), DP(io->w), io->dt, NULL, (float *)DP(io->gx),
                            (float *)DP(io->gw), io->bias ? (float *)DP(io->gb) : NULL, 1, gp->s);
  if (st != HOT_OK) {
    fileio_msgf(msg, n, "%s: %s", hot_status_name(st), hot_errmsg(ctx));
    return -1;
  }
  CUresult r = d->cuStreamSynchronize(gp->s);
  if (!r) r = d->cuMemcpyDtoH(hx, io->gx, (size_t)(io->T * io->I) * 4);
  if (!r) r = d->cuMemcpyDtoH(hw, io->gw, (size_t)(io->O * io->I) * 4);
  if (r) {
    cuda_result_error(r, "run or copy back", msg, n);
    return -1;
  }
  return 0;
}

/* "" when a equals b bit for bit (g_x then g_w), else the first difference into msg. */
static int same_bits(const float *ax, const float *bx, const float *aw, const float *bw,
                     int64_t T, int64_t O, int64_t I, const char *an, const char *bn, char *msg,
                     size_t n) {
  const float *a[2] = {ax, aw}, *b[2] = {bx, bw};
  int64_t cnt[2] = {T * I, O * I};
  for (int p = 0; p < 2; ++p)
    for (int64_t i = 0; i < cnt[p]; ++i)
      if (memcmp(&a[p][i], &b[p][i], 4) != 0) {
        snprintf(msg, n, "%s[%lld]: %s %.9g, %s %.9g", k_products[p], (long long)i, an,
                 (double)a[p][i], bn, (double)b[p][i]);
        return 0;
      }
  return 1;
}

/* The timed runs of one path: --warmup + --iters saves and backwards with profiling on; the
 * GEMM launches' times of each backward summed per product. */
static void time_path(const bench_gpu_parts *gp, hot_ctx *ctx, hot_layer *l, const dev_io *io,
                      const bench_run *run, path_res *r) {
  const int warm = run->opt.warmup, iters = run->opt.iters;
  double *ms[2] = {malloc((size_t)iters * sizeof(double)), malloc((size_t)iters * sizeof(double))};
  hot_status st = ms[0] && ms[1] ? hot_ctx_set_profiling(ctx, 1) : HOT_ERR_NOMEM;
  int got = 0;
  for (int it = 0; it < warm + iters && st == HOT_OK; ++it) {
    st = hot_layer_save(l, DP(io->x), io->dt, NULL, gp->s);
    if (st == HOT_OK)
      st = hot_layer_backward(l, DP(io->gy), DP(io->w), io->dt, NULL, (float *)DP(io->gx),
                              (float *)DP(io->gw), io->bias ? (float *)DP(io->gb) : NULL,
                              (uint32_t)it + 2, gp->s);
    hot_kernel_time kt[HOT_MAX_KERNEL_TIMES];
    int nk = 0;
    if (st == HOT_OK) st = hot_layer_kernel_times(l, kt, HOT_MAX_KERNEL_TIMES, &nk);
    if (st != HOT_OK) break;
    double t[2] = {0, 0};
    int seen[2] = {0, 0};
    for (int i = 0; i < nk && i < HOT_MAX_KERNEL_TIMES; ++i) {
      int p = kt[i].role == HOT_K_GEMM_GX ? 0 : kt[i].role == HOT_K_GEMM_GW ? 1 : -1;
      if (p < 0) continue;
      if (!kt[i].name || strcmp(kt[i].name, r->kernel[p]) != 0) {
        fileio_msgf(r->status, sizeof r->status, "launched %s as the %s GEMM, planned %s",
                    kt[i].name ? kt[i].name : "?", k_products[p], r->kernel[p]);
        break;
      }
      t[p] += kt[i].ms;
      seen[p] = 1;
    }
    if (r->status[0]) break;
    if (!seen[0] || !seen[1]) { /* every backward launches both GEMMs */
      snprintf(r->status, sizeof r->status, "profiling: a backward without its %s GEMM launch",
               seen[0] ? "g_w" : "g_x");
      break;
    }
    if (it >= warm) {
      ms[0][got] = t[0];
      ms[1][got++] = t[1];
    }
  }
  hot_ctx_set_profiling(ctx, 0);
  if (st != HOT_OK && !r->status[0])
    fileio_msgf(r->status, sizeof r->status, "timed runs: %s: %s", hot_status_name(st), hot_errmsg(ctx));
  if (!r->status[0])
    for (int p = 0; p < 2; ++p) bench_stat_of(ms[p], got, &r->t[p]);
  free(ms[0]);
  free(ms[1]);
}

/* ---- the baselines: cuBLAS BF16 and cuBLASLt FP8 of the same products ----------------------- */
typedef struct {
  const bench_gpu_parts *gp;
  int prod;
  int64_t T, O, I;
  CUdeviceptr bx, bw, bgy, bgx, bgw;             /* bf16 */
  bench_fp8_gemm *f[2];
  CUdeviceptr q_gy, q_wt, q_gyt, q_xt, q_gx, q_gw; /* e4m3 in the TN form, bf16 out */
} base_arg;

static int run_bf16(void *p, int it) {
  base_arg *a = p;
  (void)it;
  if (a->prod == 0) return bench_cublas_gemm(a->gp->cb, BENCH_BF16, 0, a->T, a->I, a->O, a->bgy, a->bw, a->bgx);
  return bench_cublas_gemm(a->gp->cb, BENCH_BF16, 1, a->O, a->I, a->T, a->bgy, a->bx, a->bgw);
}

static int run_fp8(void *p, int it) {
  base_arg *a = p;
  (void)it;
  if (a->prod == 0) return bench_fp8_gemm_run(a->f[0], a->q_gy, a->q_wt, a->q_gx, a->gp->s);
  return bench_fp8_gemm_run(a->f[1], a->q_gyt, a->q_xt, a->q_gw, a->gp->s);
}

static int64_t up16(int64_t v) { return (v + 15) / 16 * 16; }

static void time_bf16(const bench_gpu_parts *gp, bufs *b, const tooldata *d, const bench_run *run,
                      layer_res *lr) {
  if (!gp->cb) {
    fileio_msgf(lr->bf16_note, sizeof lr->bf16_note, "no cuBLAS: %s", gp->cublas_err);
    return;
  }
  const size_t nx = (size_t)(d->T * d->I), nw = (size_t)(d->O * d->I), ng = (size_t)(d->T * d->O);
  size_t big = nx > nw ? nx : nw;
  if (ng > big) big = ng;
  uint16_t *h = malloc(big * 2);
  base_arg a = {.gp = gp, .T = d->T, .O = d->O, .I = d->I};
  a.bx = balloc(b, nx * 2), a.bw = balloc(b, nw * 2), a.bgy = balloc(b, ng * 2);
  a.bgx = balloc(b, nx * 2), a.bgw = balloc(b, nw * 2);
  if (!h || b->err[0]) {
    fileio_msgf(lr->bf16_note, sizeof lr->bf16_note, "BF16 buffers: %s", h ? b->err : "out of host memory");
    free(h);
    return;
  }
  tooldata_to_bf16(d->x, h, nx);
  bupload(b, a.bx, h, nx * 2);
  tooldata_to_bf16(d->w, h, nw);
  bupload(b, a.bw, h, nw * 2);
  tooldata_to_bf16(d->gy, h, ng);
  bupload(b, a.bgy, h, ng * 2);
  free(h);
  for (int p = 0; p < 2 && !b->err[0]; ++p) {
    char err[200] = "";
    a.prod = p;
    int rc = bench_time(gp->d, gp->s, run->opt.warmup, run->opt.iters, run_bf16, &a, &lr->bf16[p], err, sizeof err);
    if (rc) {
      lr->bf16[p].n = 0;
      fileio_msgf(lr->bf16_note, sizeof lr->bf16_note, "cuBLAS BF16 %s: status %d %s", k_products[p], rc, err);
    }
  }
  if (b->err[0]) fileio_msgf(lr->bf16_note, sizeof lr->bf16_note, "BF16: %s", b->err);
}

/* FP8 operands as an FP8 recipe has them (per-tensor amax scales, e4m3, the TN form, sizes
 * rounded up to 16 with zeros), cast on the host before timing; the GEMMs alone are timed. */
static void time_fp8(const bench_gpu_parts *gp, bufs *b, const tooldata *d, const bench_run *run,
                     layer_res *lr) {
  if (!gp->lt) {
    fileio_msgf(lr->fp8_note, sizeof lr->fp8_note, "%s", gp->lt_err);
    return;
  }
  const int64_t Tp = up16(d->T), Op = up16(d->O), Ip = up16(d->I);
  lr->fp8_dims[0] = Tp, lr->fp8_dims[1] = Op, lr->fp8_dims[2] = Ip;
  size_t big = (size_t)(Tp * Op);
  if ((size_t)(Ip * Op) > big) big = (size_t)(Ip * Op);
  if ((size_t)(Ip * Tp) > big) big = (size_t)(Ip * Tp);
  uint8_t *h = malloc(big);
  base_arg a = {.gp = gp, .T = Tp, .O = Op, .I = Ip};
  a.q_gy = balloc(b, (size_t)(Tp * Op)), a.q_gyt = balloc(b, (size_t)(Op * Tp));
  a.q_wt = balloc(b, (size_t)(Ip * Op)), a.q_xt = balloc(b, (size_t)(Ip * Tp));
  a.q_gx = balloc(b, (size_t)(Tp * Ip) * 2), a.q_gw = balloc(b, (size_t)(Op * Ip) * 2);
  CUdeviceptr sc = balloc(b, 3 * sizeof(float));
  if (!h || b->err[0]) {
    fileio_msgf(lr->fp8_note, sizeof lr->fp8_note, "FP8 buffers: %s", h ? b->err : "out of host memory");
    free(h);
    return;
  }
  const float amax[3] = {bench_amax(d->gy, (size_t)(d->T * d->O)), bench_amax(d->w, (size_t)(d->O * d->I)),
                         bench_amax(d->x, (size_t)(d->T * d->I))};
  float q[3], deq[3];
  for (int i = 0; i < 3; ++i) {
    q[i] = amax[i] > 0 ? 448.0f / amax[i] : 1.0f;
    deq[i] = 1.0f / q[i];
  }
  bupload(b, sc, deq, sizeof deq);
  bench_fp8_pack(d->gy, d->T, d->O, q[0], 0, h, Tp, Op);
  bupload(b, a.q_gy, h, (size_t)(Tp * Op));
  bench_fp8_pack(d->gy, d->T, d->O, q[0], 1, h, Tp, Op);
  bupload(b, a.q_gyt, h, (size_t)(Op * Tp));
  bench_fp8_pack(d->w, d->O, d->I, q[1], 1, h, Op, Ip);
  bupload(b, a.q_wt, h, (size_t)(Ip * Op));
  bench_fp8_pack(d->x, d->T, d->I, q[2], 1, h, Tp, Ip);
  bupload(b, a.q_xt, h, (size_t)(Ip * Tp));
  free(h);
  if (b->err[0]) {
    fileio_msgf(lr->fp8_note, sizeof lr->fp8_note, "FP8 operands: %s", b->err);
    return;
  }
  char e8[240] = "";
  int rc = bench_fp8_gemm_make(gp->lt, Tp, Ip, Op, sc, sc + 4, gp->lt_ws, gp->lt_ws_bytes, &a.f[0], e8, sizeof e8);
  if (!rc) rc = bench_fp8_gemm_make(gp->lt, Op, Ip, Tp, sc, sc + 8, gp->lt_ws, gp->lt_ws_bytes, &a.f[1], e8, sizeof e8);
  for (int p = 0; p < 2 && !rc; ++p) {
    char err[200] = "";
    a.prod = p;
    rc = bench_time(gp->d, gp->s, run->opt.warmup, run->opt.iters, run_fp8, &a, &lr->fp8[p], err, sizeof err);
    if (rc) {
      lr->fp8[p].n = 0;
      snprintf(e8, sizeof e8, "cublasLtMatmul FP8 %s: status %d %.150s", k_products[p], rc, err);
    }
  }
  if (rc) fileio_msgf(lr->fp8_note, sizeof lr->fp8_note, "%s", e8);
  bench_fp8_gemm_free(a.f[0]);
  bench_fp8_gemm_free(a.f[1]);
}

/* ---- one layer ----------------------------------------------------------------------------- */

/* The CPU backend's g_x and g_w at the check size (the layer as the mma_s8 path plans it; the
 * bits do not depend on the path). 0, or -1 with msg. */
static int cpu_reference(const bench_run *run, const bench_layer *bl, const hot_layer_spec *s,
                         const tooldata *d, float *gx, float *gw, char *msg, size_t n) {
  hot_ctx *c = NULL;
  hot_layer *l = NULL;
  float *gb = malloc((size_t)d->O * 4);
  hot_status st = gb ? bench_ctx_open(&c, run, HOT_BACKEND_CPU, k_paths[0].arch, -1, NULL, msg, n) : HOT_ERR_NOMEM;
  if (st == HOT_OK)
    st = tools_layer_create(c, s, bl->cB, bl->cL, run->spec_model->recipe, check_layer_id(run, bl, bl->cL), &l);
  hot_layer_info info;
  if (st == HOT_OK) st = hot_layer_save(l, tooldata_in(d, d->x), d->dt, NULL, NULL);
  if (st == HOT_OK && hot_layer_get_info(l, &info) == HOT_OK && info.gran_auto)
    st = hot_layer_calibrate(l, tooldata_in(d, d->gy), d->dt, 0, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(l, tooldata_in(d, d->gy), tooldata_in(d, d->w), d->dt, NULL, gx, gw,
                            bl->bias ? gb : NULL, 1, NULL);
  if (st != HOT_OK) fileio_msgf(msg, n, "CPU backend: %s: %s", hot_status_name(st), c ? hot_errmsg(c) : "");
  hot_layer_destroy(l);
  hot_ctx_destroy(c);
  free(gb);
  return st == HOT_OK ? 0 : -1;
}

typedef struct {
  hot_ctx *ctx[NPATHS];
  hot_layer *full[NPATHS];
} path_set;

/* Contexts and full-size layers of the three paths; a path that cannot be had says why. */
static void open_paths(const bench_run *run, const bench_layer *bl, const hot_layer_spec *s,
                       path_set *ps, layer_res *lr) {
  for (int p = 0; p < g_npaths; ++p) {
    path_res *r = &lr->p[p];
    char err[300];
    hot_layer_spec sp;
    path_spec(s, p, &sp);
    if (bench_ctx_open(&ps->ctx[p], run, HOT_BACKEND_CUDA, k_paths[p].arch, 0, NULL, err, sizeof err) != HOT_OK) {
      fileio_msgf(r->status, sizeof r->status, "no %s context: %s", k_paths[p].arch, err);
      hot_ctx_destroy(ps->ctx[p]);
      ps->ctx[p] = NULL;
      continue;
    }
    hot_status st = tools_layer_create(ps->ctx[p], &sp, bl->B, bl->L, run->spec_model->recipe, bl->index,
                                       &ps->full[p]);
    if (st != HOT_OK) {
      fileio_msgf(r->status, sizeof r->status, "not planned: %s: %s", hot_status_name(st), hot_errmsg(ps->ctx[p]));
      continue;
    }
    if (plan_gemms(hot_layer_get_plan(ps->full[p]), p, r) != 0) {
      hot_layer_destroy(ps->full[p]);
      ps->full[p] = NULL;
    }
  }
}

static void close_paths(path_set *ps) {
  for (int p = 0; p < g_npaths; ++p) {
    hot_layer_destroy(ps->full[p]);
    hot_ctx_destroy(ps->ctx[p]);
  }
}

/* Each path at the check size against the CPU backend (ref), when the check size is not the
 * benchmark size (else the full-size run is compared, see run_full). */
static void check_small(const bench_gpu_parts *gp, const bench_run *run, const bench_layer *bl,
                        const hot_layer_spec *s, path_set *ps, const tooldata *dc, const float *rx,
                        const float *rw, layer_res *lr) {
  bufs b = {.d = gp->d, .s = gp->s};
  dev_io io;
  float *hx = malloc((size_t)(dc->T * dc->I) * 4), *hw = malloc((size_t)(dc->O * dc->I) * 4);
  io_make(&b, dc, bl->bias, &io);
  for (int p = 0; p < g_npaths; ++p) {
    path_res *r = &lr->p[p];
    if (!ps->full[p]) continue;
    if (!hx || !hw || b.err[0]) {
      fileio_msgf(r->cpu_note, sizeof r->cpu_note, "not checked: %s", b.err[0] ? b.err : "out of host memory");
      continue;
    }
    hot_layer_spec sp, cs;
    path_spec(s, p, &sp);
    check_spec(&sp, hot_layer_get_plan(ps->full[p]), &cs);
    hot_layer *l = NULL;
    char msg[200];
    hot_status st = tools_layer_create(ps->ctx[p], &cs, bl->cB, bl->cL, run->spec_model->recipe,
                                       check_layer_id(run, bl, bl->cL), &l);
    if (st != HOT_OK) {
      fileio_msgf(r->cpu_note, sizeof r->cpu_note, "not checked at T %lld: %s: %s", (long long)bl->cT,
                  hot_status_name(st), hot_errmsg(ps->ctx[p]));
    } else if (run_once(gp, ps->ctx[p], l, &io, hx, hw, msg, sizeof msg) != 0) {
      fileio_msgf(r->status, sizeof r->status, "check-size run: %s", msg);
    } else {
      r->cpu = same_bits(hx, rx, hw, rw, io.T, io.O, io.I, "gpu", "cpu", r->cpu_note, sizeof r->cpu_note);
      const hot_layer_plan *pl = hot_layer_get_plan(l);
      const hot_kernel_plan *kx = gemm_kernel(pl, HOT_K_GEMM_GX), *kw = gemm_kernel(pl, HOT_K_GEMM_GW);
      if (r->cpu && kx && kw && (strcmp(kx->name, r->kernel[0]) || strcmp(kw->name, r->kernel[1])))
        fileio_msgf(r->cpu_note, sizeof r->cpu_note, "checked with %s / %s (the check size's kernels)",
                    kx->name, kw->name);
    }
    hot_layer_destroy(l);
  }
  bfree(&b);
  free(hx);
  free(hw);
}

/* The full size: each path once (outputs compared with the first path that ran, and with the
 * CPU reference when rx is not NULL), then timed. */
static void run_full(const bench_gpu_parts *gp, const bench_run *run, const bench_layer *bl,
                     path_set *ps, bufs *b, const tooldata *d, const float *rx, const float *rw,
                     layer_res *lr) {
  dev_io io;
  const size_t nx = (size_t)(d->T * d->I), nw = (size_t)(d->O * d->I);
  float *fx = malloc(nx * 4), *fw = malloc(nw * 4), *hx = malloc(nx * 4), *hw = malloc(nw * 4);
  io_make(b, d, bl->bias, &io);
  int first = -1;
  for (int p = 0; p < g_npaths; ++p) {
    path_res *r = &lr->p[p];
    if (!ps->full[p]) continue;
    if (!fx || !fw || !hx || !hw || b->err[0]) {
      fileio_msgf(r->status, sizeof r->status, "buffers: %s", b->err[0] ? b->err : "out of host memory");
      continue;
    }
    char msg[200];
    if (run_once(gp, ps->ctx[p], ps->full[p], &io, first < 0 ? fx : hx, first < 0 ? fw : hw, msg, sizeof msg) != 0) {
      fileio_msgf(r->status, sizeof r->status, "run: %s", msg);
      continue;
    }
    if (first < 0) {
      first = p;
    } else {
      r->same = same_bits(hx, fx, hw, fw, io.T, io.O, io.I, k_paths[p].name, k_paths[first].name, r->diff,
                          sizeof r->diff);
    }
    if (rx)
      r->cpu = same_bits(first == p ? fx : hx, rx, first == p ? fw : hw, rw, io.T, io.O, io.I, "gpu", "cpu",
                         r->cpu_note, sizeof r->cpu_note);
    time_path(gp, ps->ctx[p], ps->full[p], &io, run, r);
  }
  free(fx), free(fw), free(hx), free(hw);
}

static void one_layer(const bench_gpu_parts *gp, const bench_run *run, bench_layer *bl,
                      layer_res *lr) {
  char err[300] = "";
  hot_layer_spec s;
  for (int p = 0; p < g_npaths; ++p) lr->p[p].same = lr->p[p].cpu = -1;
  if (layer_spec(run, bl, &s, err, sizeof err) != 0) {
    fileio_msgf(lr->status, sizeof lr->status, "spec: %s", err);
    return;
  }
  bl->dt = s.dtype; /* the inputs are made in the layer's dtype */
  path_set ps;
  memset(&ps, 0, sizeof ps);
  open_paths(run, bl, &s, &ps, lr);
  /* the CPU reference at the check size */
  tooldata dc, d;
  memset(&dc, 0, sizeof dc);
  memset(&d, 0, sizeof d);
  const int capped = bl->cT != bl->T;
  float *rx = malloc((size_t)(bl->cT * bl->I) * 4), *rw = malloc((size_t)(bl->O * bl->I) * 4);
  int have_ref = 0;
  if (!rx || !rw || tooldata_make(&dc, bl->cT, bl->O, bl->I, run->seed, bl->index, bl->dt) != 0) {
    snprintf(err, sizeof err, "out of host memory");
  } else {
    hot_layer_spec cs;
    path_spec(&s, 0, &cs);
    have_ref = cpu_reference(run, bl, &cs, &dc, rx, rw, err, sizeof err) == 0;
  }
  if (!have_ref)
    for (int p = 0; p < g_npaths; ++p) fileio_msgf(lr->p[p].cpu_note, sizeof lr->p[p].cpu_note, "not checked: %s", err);
  if (have_ref && capped) check_small(gp, run, bl, &s, &ps, &dc, rx, rw, lr);
  if (capped) tooldata_free(&dc);
  bufs b = {.d = gp->d, .s = gp->s};
  const tooldata *full = capped ? &d : &dc;
  if (capped && tooldata_make(&d, bl->T, bl->O, bl->I, run->seed, bl->index, bl->dt) != 0) {
    snprintf(lr->status, sizeof lr->status, "out of host memory for T=%lld", (long long)bl->T);
  } else {
    run_full(gp, run, bl, &ps, &b, full, have_ref && !capped ? rx : NULL, rw, lr);
    bfree(&b);
    time_bf16(gp, &b, full, run, lr);
    bfree(&b);
    time_fp8(gp, &b, full, run, lr);
    bfree(&b);
  }
  tooldata_free(&d);
  tooldata_free(&dc);
  free(rx);
  free(rw);
  close_paths(&ps);
}

/* ---- report -------------------------------------------------------------------------------- */

/* Floating-point operations of one full product (g_x and g_w alike: 2 T O I). */
static double fp_ops(const bench_layer *bl) { return 2.0 * (double)bl->T * (double)bl->O * (double)bl->I; }

/* The figures of one path and product: TOP/s, % of the INT8 ceiling, ratios (0: none). */
static void rates(const bench_run *run, const layer_res *lr, const path_res *r, int p, double *tops,
                  double *pct, double *xb, double *x8) {
  *tops = *pct = *xb = *x8 = 0;
  if (!r->t[p].n || r->t[p].med <= 0) return;
  if (r->ops[p] > 0) *tops = (double)r->ops[p] / r->t[p].med / 1e9;
  if (run->int8_tops > 0) *pct = 100 * *tops / run->int8_tops;
  if (lr->bf16[p].n) *xb = lr->bf16[p].med / r->t[p].med;
  if (lr->fp8[p].n) *x8 = lr->fp8[p].med / r->t[p].med;
}

static const char *fmt(double v, const char *f, char *buf, size_t n) {
  if (v > 0 && isfinite(v)) snprintf(buf, n, f, v);
  else snprintf(buf, n, "-");
  return buf;
}

static const char *yesno(int v) { return v < 0 ? "-" : v ? "yes" : "NO"; }

static void table_layer(const bench_run *run, const bench_layer *bl, const layer_res *lr, FILE *f) {
  char a[32], b[32], c[32], d[32], e[32], sh[48];
  fprintf(f, "\nlayer %s: T %lld, O %lld, I %lld", bl->name, (long long)bl->T, (long long)bl->O, (long long)bl->I);
  if (lr->status[0]) fprintf(f, " - %s", lr->status);
  fprintf(f, "\n");
  fprintf(f, "%-7s %-12s %-46s %-20s %9s %9s %7s %7s %7s %9s %5s\n", "product", "path", "kernel", "M x N x K",
          "ms", "TOP/s", "%INT8", "xBF16", "xFP8", "identical", "CPU");
  for (int p = 0; p < 2; ++p) {
    for (int i = 0; i < g_npaths; ++i) {
      const path_res *r = &lr->p[i];
      if (r->status[0] && !r->t[p].n) {
        fprintf(f, "%-7s %-12s %s\n", k_products[p], k_paths[i].name, r->status);
        continue;
      }
      double tops, pct, xb, x8;
      rates(run, lr, r, p, &tops, &pct, &xb, &x8);
      snprintf(sh, sizeof sh, "%lldx%lldx%lld", (long long)r->m[p], (long long)r->n[p], (long long)r->k[p]);
      fprintf(f, "%-7s %-12s %-46s %-20s %9s %9s %7s %7s %7s %9s %5s\n", k_products[p], k_paths[i].name, r->kernel[p],
              sh, fmt(r->t[p].med, "%.4f", a, sizeof a), fmt(tops, "%.1f", b, sizeof b),
              fmt(pct, "%.1f", c, sizeof c), fmt(xb, "%.2f", d, sizeof d), fmt(x8, "%.2f", e, sizeof e),
              i == 0 && r->same < 0 ? "(first)" : yesno(r->same), yesno(r->cpu));
    }
    const bench_stat *bs[2] = {&lr->bf16[p], &lr->fp8[p]};
    const char *bn[2] = {"cublas_bf16", "cublaslt_fp8"};
    for (int k = 0; k < 2; ++k) {
      if (!bs[k]->n) {
        fprintf(f, "%-7s %-12s not measured: %s\n", k_products[p], bn[k], k ? lr->fp8_note : lr->bf16_note);
        continue;
      }
      double fl = fp_ops(bl) / bs[k]->med / 1e9;
      int64_t T = k ? lr->fp8_dims[0] : bl->T, O = k ? lr->fp8_dims[1] : bl->O, I = k ? lr->fp8_dims[2] : bl->I;
      if (p == 0) snprintf(sh, sizeof sh, "%lldx%lldx%lld", (long long)T, (long long)I, (long long)O);
      else snprintf(sh, sizeof sh, "%lldx%lldx%lld", (long long)O, (long long)I, (long long)T);
      fprintf(f, "%-7s %-12s %-46s %-20s %9s %9s %7s\n", k_products[p], bn[k],
              k ? "e4m3 TN, fp32 accumulate, bf16 out" : "bf16, fp32 accumulate, bf16 out", sh,
              fmt(bs[k]->med, "%.4f", a, sizeof a), fmt(fl, "%.1f", b, sizeof b),
              fmt(run->int8_tops > 0 ? 100 * fl / run->int8_tops : 0, "%.1f", c, sizeof c));
    }
  }
  for (int i = 0; i < g_npaths; ++i) {
    const path_res *r = &lr->p[i];
    if (r->same == 0) fprintf(f, "  %s differs from the first path: %s\n", k_paths[i].name, r->diff);
    if (r->cpu_note[0]) fprintf(f, "  %s vs the CPU backend (T %lld): %s\n", k_paths[i].name, (long long)bl->cT, r->cpu_note);
  }
}

static void jstr(FILE *f, const char *s) { esc_fputs(f, esc_json, s); }
static void jnum(FILE *f, const char *key, double v, int ok) {
  fprintf(f, "\"%s\": ", key);
  if (ok && isfinite(v)) fprintf(f, "%.6g", v);
  else fputs("null", f);
}
static void jbool(FILE *f, const char *key, int v) {
  fprintf(f, "\"%s\": %s", key, v < 0 ? "null" : v ? "true" : "false");
}

static void json_path(const bench_run *run, const layer_res *lr, int i, int p, FILE *f) {
  const path_res *r = &lr->p[i];
  double tops, pct, xb, x8;
  rates(run, lr, r, p, &tops, &pct, &xb, &x8);
  fprintf(f, "\n          {\"path\": \"%s\", \"arch\": \"%s\", \"warps_n\": %d, \"kernel\": ", k_paths[i].name,
          k_paths[i].arch, k_paths[i].warps_n < 0 ? 0 : k_paths[i].warps_n);
  jstr(f, r->kernel[p]);
  fputs(", \"tiles\": ", f);
  jstr(f, r->tiles[p]);
  fprintf(f, ", \"m\": %lld, \"n\": %lld, \"k_pad\": %lld, \"int_ops\": %lld, ", (long long)r->m[p],
          (long long)r->n[p], (long long)r->k[p], (long long)r->ops[p]);
  jnum(f, "ms", r->t[p].med, r->t[p].n > 0);
  fputs(", ", f);
  jnum(f, "p10_ms", r->t[p].p10, r->t[p].n > 0);
  fputs(", ", f);
  jnum(f, "p90_ms", r->t[p].p90, r->t[p].n > 0);
  fprintf(f, ", \"runs\": %d, ", r->t[p].n);
  jnum(f, "tops", tops, tops > 0);
  fputs(", ", f);
  jnum(f, "int8_pct", pct, pct > 0);
  fputs(", ", f);
  jnum(f, "vs_bf16", xb, xb > 0);
  fputs(", ", f);
  jnum(f, "vs_fp8", x8, x8 > 0);
  fputs(", ", f);
  jbool(f, "identical", r->same);
  fputs(", ", f);
  jbool(f, "cpu_equal", r->cpu);
  fputs(", \"cpu_note\": ", f);
  jstr(f, r->cpu_note);
  fputs(", \"status\": ", f);
  jstr(f, r->status);
  fputs("}", f);
}

static void json_layer(const bench_run *run, const bench_layer *bl, const layer_res *lr, FILE *f) {
  fputs("\n    {\"name\": ", f);
  jstr(f, bl->name);
  fprintf(f, ", \"T\": %lld, \"O\": %lld, \"I\": %lld, \"check_T\": %lld, \"status\": ", (long long)bl->T,
          (long long)bl->O, (long long)bl->I, (long long)bl->cT);
  jstr(f, lr->status);
  fputs(", \"products\": [", f);
  for (int p = 0; p < 2; ++p) {
    double fl = fp_ops(bl);
    fprintf(f, "%s\n      {\"product\": \"%s\", ", p ? "," : "", k_products[p]);
    jnum(f, "bf16_ms", lr->bf16[p].med, lr->bf16[p].n > 0);
    fputs(", ", f);
    jnum(f, "bf16_tflops", lr->bf16[p].n ? fl / lr->bf16[p].med / 1e9 : 0, lr->bf16[p].n > 0);
    fputs(", \"bf16_note\": ", f);
    jstr(f, lr->bf16_note);
    fputs(", ", f);
    jnum(f, "fp8_ms", lr->fp8[p].med, lr->fp8[p].n > 0);
    fputs(", ", f);
    jnum(f, "fp8_tflops", lr->fp8[p].n ? fl / lr->fp8[p].med / 1e9 : 0, lr->fp8[p].n > 0);
    fputs(", \"fp8_note\": ", f);
    jstr(f, lr->fp8_note);
    if (lr->fp8_dims[0])
      fprintf(f, ", \"fp8_dims\": {\"T\": %lld, \"O\": %lld, \"I\": %lld}", (long long)lr->fp8_dims[0],
              (long long)lr->fp8_dims[1], (long long)lr->fp8_dims[2]);
    else
      fputs(", \"fp8_dims\": null", f);
    fputs(",\n        \"paths\": [", f);
    for (int i = 0; i < g_npaths; ++i) {
      if (i) fputc(',', f);
      json_path(run, lr, i, p, f);
    }
    fputs("]}", f);
  }
  fputs("]}", f);
}

static int json_all(const bench_run *run, const layer_res *lr, const char *skipped, FILE *f);

typedef struct {
  const bench_run *run;
  const layer_res *lr;
  const char *skipped;
} json_args;

static int write_json(FILE *f, const void *arg) {
  const json_args *a = arg;
  return json_all(a->run, a->lr, a->skipped, f);
}

static int json_all(const bench_run *run, const layer_res *lr, const char *skipped, FILE *f) {
  bench_report_json_head(run, f);
  for (int i = 0; lr && i < run->n; ++i) {
    if (i) fputc(',', f);
    json_layer(run, &run->layers[i], &lr[i], f);
  }
  fputs("\n  ],\n  \"mode\": \"gemm_paths\",\n  \"gemm_paths_skipped\": ", f);
  if (skipped) jstr(f, skipped);
  else fputs("null", f);
  fprintf(f, ",\n  \"wall_s\": %.3f\n}\n", run->wall_s);
  return ferror(f) ? -1 : 0;
}

static int reports(const bench_run *run, const layer_res *lr, const char *skipped) {
  int rc = 0;
  if (run->opt.json) {
    json_all(run, lr, skipped, stdout);
  } else if (skipped) {
    printf("gemm paths: skipped: %s\n", skipped);
  } else {
    char c[32];
    printf("GEMM paths on %s: median ms of %d profiled backwards after %d warm-up (the GEMM launches only, "
           "CUDA events around each); TOP/s = the plan's integer ops / time; %%INT8 of the INT8 cuBLAS "
           "8192^3 ceiling of this run (%s TOP/s); xBF16, xFP8 = cuBLAS BF16 / cuBLASLt FP8 ms of the same "
           "product / path ms (FP8: operands already cast); identical = same bits as the first path; CPU = "
           "same bits as the CPU backend at the check size\n",
           run->device, run->opt.iters, run->opt.warmup, fmt(run->int8_tops, "%.0f", c, sizeof c));
    for (int i = 0; i < run->n; ++i) table_layer(run, &run->layers[i], &lr[i], stdout);
  }
  if (run->opt.out) {
    const json_args ja = {run, lr, skipped};
    if (bench_write_out(run->opt.out, write_json, &ja) != 0) rc = 1;
  }
  return rc;
}

int bench_gemm_paths(bench_run *run, bench_gpu *gpu) {
  double t0 = bench_now_ms();
  char why[400], paths[160];
  bench_gpu_parts gp;
  paths_init();
  paths_text(paths, sizeof paths);
  if (!gpu) {
    fileio_msgf(why, sizeof why, "no GPU (CPU backend%s%s): the GEMM paths %s need a 9.0 CUDA device",
                run->fallback[0] ? ": " : "", run->fallback, paths);
    diag_fprintf(stderr, "hot-bench: --gemm-paths: %s\n", why);
    return reports(run, NULL, why);
  }
  bench_gpu_get_parts(gpu, &gp);
  if (gp.cc_major != 9 || gp.cc_minor != 0) {
    fileio_msgf(why, sizeof why, "%s is compute capability %d.%d, not 9.0: %s need a 9.0 device",
                run->device, gp.cc_major, gp.cc_minor, paths);
    diag_fprintf(stderr, "hot-bench: --gemm-paths: %s\n", why);
    return reports(run, NULL, why);
  }
  diag_fprintf(stderr, "hot-bench: ceilings (copy bandwidth, cuBLAS BF16/INT8 and cuBLASLt FP8 8192^3)...\n");
  bench_gpu_ceilings(gpu, run);
  layer_res *lr = calloc((size_t)run->n, sizeof *lr);
  if (!lr) return 1;
  int rc = 0;
  for (int i = 0; i < run->n; ++i) {
    bench_layer *bl = &run->layers[i];
    double tl = bench_now_ms();
    diag_fprintf(stderr, "[%d/%d] %s: T=%lld O=%lld I=%lld, check T=%lld", i + 1, run->n, bl->name, (long long)bl->T,
            (long long)bl->O, (long long)bl->I, (long long)bl->cT);
    one_layer(&gp, run, bl, &lr[i]);
    int bad = lr[i].status[0] != 0;
    for (int p = 0; p < g_npaths; ++p)
      bad |= lr[i].p[p].status[0] || lr[i].p[p].same == 0 || lr[i].p[p].cpu == 0;
    if (bad) rc = 2;
    diag_fprintf(stderr, " - %s (%.1f s)\n", bad ? "not all paths ran and agreed" : "ok", (bench_now_ms() - tl) / 1e3);
  }
  run->wall_s = (bench_now_ms() - t0) / 1e3;
  if (reports(run, lr, NULL) != 0) rc = 1;
  free(lr);
  return rc;
}

/* ---- --precompile -------------------------------------------------------------------------- */

/* Compiles one plan's kernels in ctx; 0, or -1 (said). */
static int compile_one(hot_ctx *c, const bench_run *run, const hot_layer_spec *s, int64_t B, int64_t L,
                       int id, const char *what, hot_layer **keep) {
  hot_layer *l = NULL;
  hot_status st = tools_layer_create(c, s, B, L, run->spec_model->recipe, id, &l);
  if (st == HOT_OK) st = hot_layer_compile(l);
  if (st != HOT_OK) {
    diag_fprintf(stderr, "hot-bench: --precompile: %s: %s: %s\n", what, hot_status_name(st), hot_errmsg(c));
    hot_layer_destroy(l);
    return -1;
  }
  if (keep) *keep = l;
  else hot_layer_destroy(l);
  return 0;
}

int bench_gemm_paths_precompile(bench_run *run) {
  const char *dir = env_get("HOT_CACHE_DIR");
  if (!dir || !*dir) {
    diag_fprintf(stderr, "hot-bench: --precompile needs HOT_CACHE_DIR (the kernel cache folder to fill)\n");
    return 1;
  }
  int rc = 0;
  uint64_t compiles = 0, hits = 0;
  char paths[160];
  paths_init();
  paths_text(paths, sizeof paths);
  for (int i = 0; i < run->n; ++i) {
    const bench_layer *bl = &run->layers[i];
    char err[300];
    hot_layer_spec s;
    if (layer_spec(run, bl, &s, err, sizeof err) != 0) {
      diag_fprintf(stderr, "hot-bench: --precompile: %s: %s\n", bl->name, err);
      rc = 2;
      continue;
    }
    for (int p = 0; p < g_npaths; ++p) {
      hot_ctx *c = NULL;
      hot_layer *full = NULL;
      hot_layer_spec sp, cs;
      char what[160];
      path_spec(&s, p, &sp);
      snprintf(what, sizeof what, "%s %s (%s)", bl->name, k_paths[p].name, k_paths[p].arch);
      if (bench_ctx_open(&c, run, HOT_BACKEND_CPU, k_paths[p].arch, 0, NULL, err, sizeof err) != HOT_OK) {
        diag_fprintf(stderr, "hot-bench: --precompile: %s: %s\n", what, err);
        hot_ctx_destroy(c);
        rc = 2;
        continue;
      }
      if (compile_one(c, run, &sp, bl->B, bl->L, bl->index, what, &full) != 0) {
        rc = 2;
      } else {
        path_res r;
        memset(&r, 0, sizeof r);
        if (plan_gemms(hot_layer_get_plan(full), p, &r) != 0) {
          diag_fprintf(stderr, "hot-bench: --precompile: %s: %s\n", what, r.status);
          rc = 2;
        } else if (bl->cT != bl->T) {
          check_spec(&sp, hot_layer_get_plan(full), &cs);
          /* a check size the tiles do not allow is reported by the GPU run, not compiled here */
          hot_layer *l = NULL;
          if (tools_layer_create(c, &cs, bl->cB, bl->cL, run->spec_model->recipe, 0, &l) == HOT_OK &&
              hot_layer_compile(l) != HOT_OK) {
            diag_fprintf(stderr, "hot-bench: --precompile: %s at the check size: %s\n", what, hot_errmsg(c));
            rc = 2;
          }
          hot_layer_destroy(l);
        }
      }
      hot_layer_destroy(full);
      hot_stats hs;
      hot_ctx_stats(c, &hs);
      compiles += hs.compiles;
      hits += hs.disk_hits + hs.memory_hits;
      hot_ctx_destroy(c);
    }
    printf("precompile %s: %d paths (%s)%s\n", bl->name, g_npaths, paths,
           bl->cT != bl->T ? ", benchmark and check sizes" : "");
  }
  printf("precompile: %llu compiled, %llu cache hits, into %s\n", (unsigned long long)compiles,
         (unsigned long long)hits, dir);
  return rc;
}

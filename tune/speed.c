/* speed.c — the speed side of a variant. Without a GPU: the variant's kernels are compiled (one
 * pool for the whole sweep, through the kernel cache, so a later JIT of the chosen variant is a
 * cache hit), their registers, spills and shared memory read from ptxas, the GEMMs' theoretical
 * occupancy computed, and variants that spill beyond what the plan allows or cannot be resident
 * pruned; the row says "not timed" — never an invented time. With a GPU, in addition: the
 * variant's save + backward are compared bit for bit with the CPU twins at a small size, then
 * timed at the model's size (CUDA events around every kernel, summed; the L2 flushed before
 * every run by writing a buffer of twice its size; the median of --repeats runs). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hot_tooldata.h"
#include "tune.h"

#define ATTR_L2_CACHE_SIZE 38 /* CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (cuda.h) */

struct tune_speed {
  const tune_opts *o;
  const tune_env *env;
  hot_kcache *kc;
  /* GPU side (env->have_gpu) */
  const cuda_driver *d;
  hot_ctx *gpu, *cpu;
  CUdeviceptr flush;
  size_t flush_bytes;
};

static int max_threads_per_sm(hot_arch a) {
  const hot_arch_caps *c = plan_arch_caps(a);
  return c ? c->threads_per_sm : 2048;
}

tune_speed *tune_speed_open(const tune_opts *o, const tune_env *env, char *err, size_t errlen) {
  tune_speed *sp = calloc(1, sizeof *sp);
  if (!sp) {
    fileio_msgf(err, errlen, "out of memory");
    return NULL;
  }
  sp->o = o;
  sp->env = env;
  hot_kcache_config cfg;
  memset(&cfg, 0, sizeof cfg);
  if (kcache_open(&sp->kc, &cfg, err, errlen) != RT_OK) {
    free(sp);
    return NULL;
  }
  if (!env->have_gpu) return sp;
  hot_options opt;
  hot_options_init(&opt);
  opt.backend = HOT_BACKEND_CUDA;
  opt.arch = plan_arch_caps(env->arch)->name;
  hot_status st = hot_ctx_create(&sp->gpu, &opt);
  if (st == HOT_OK) {
    opt.backend = HOT_BACKEND_CPU;
    st = hot_ctx_create(&sp->cpu, &opt);
  }
  if (st != HOT_OK || cuda_driver_get(&sp->d, err, errlen) != RT_OK) {
    if (st != HOT_OK)
      fileio_msgf(err, errlen, "GPU context: %s: %s", hot_status_name(st),
               hot_errmsg(sp->gpu ? sp->gpu : sp->cpu));
    tune_speed_close(sp);
    return NULL;
  }
  int l2 = 0;
  CUdevice dev;
  if (sp->d->cuDeviceGet(&dev, 0) == 0 && sp->d->cuDeviceGetAttribute(&l2, ATTR_L2_CACHE_SIZE, dev) == 0 && l2 > 0) {
    sp->flush_bytes = 2 * (size_t)l2;
    if (sp->d->cuMemAlloc(&sp->flush, sp->flush_bytes) != 0) sp->flush = 0, sp->flush_bytes = 0;
  }
  return sp;
}

void tune_speed_close(tune_speed *sp) {
  if (!sp) return;
  if (sp->flush) sp->d->cuMemFree(sp->flush);
  hot_ctx_destroy(sp->gpu);
  hot_ctx_destroy(sp->cpu);
  kcache_close(sp->kc);
  free(sp);
}

static int plan_of(const hot_model *m, int layer, const hot_layer_spec *s, hot_arch arch,
                   hot_layer_plan *pl, char *err, size_t errlen) {
  const int64_t tokens = s->tokens ? s->tokens : m->tokens;
  return plan_layer(s, m->batch, tokens, m->recipe, arch, layer, pl, err, errlen);
}

int tune_speed_prefetch(tune_speed *sp, const hot_model *m, const int *layers,
                        const hot_layer_spec *specs, int n, char *err, size_t errlen) {
  hot_layer_plan *plans = calloc((size_t)n + 1, sizeof *plans);
  const hot_layer_plan **pp = calloc((size_t)n + 1, sizeof *pp);
  int np = 0, rc = -1;
  if (!plans || !pp) {
    fileio_msgf(err, errlen, "out of memory planning the variants");
    goto done;
  }
  for (int i = 0; i < n; ++i) {
    char e[300];
    if (plan_of(m, layers[i], &specs[i], sp->env->arch, &plans[np], e, sizeof e) == 0) {
      pp[np] = &plans[np];
      ++np;
    }
  }
  if (np && jit_prefetch(sp->kc, pp, np, sp->o->jobs, NULL, err, errlen) != RT_OK) goto done;
  rc = 0;
done:
  free(plans);
  free(pp);
  return rc;
}

/* Theoretical occupancy (resident warps / the SM's maximum) of a kernel: threads, registers per
 * thread (allocated per warp in units of 256), shared memory (static + dynamic). 0: does not fit. */
static double occupancy(hot_arch arch, const hot_kernel_plan *kp, const hot_kernel_info *ki) {
  const hot_arch_caps *c = plan_arch_caps(arch);
  const int threads = (int)(kp->block[0] * kp->block[1] * kp->block[2]);
  const int warps = (threads + 31) / 32, max_warps = max_threads_per_sm(arch) / 32;
  if (threads <= 0 || threads > c->max_threads || ki->registers > c->regs_per_thread) return 0;
  int blocks = max_warps / warps;
  const int regs_warp = ((ki->registers * 32 + 255) / 256) * 256;
  if (regs_warp > 0 && 65536 / (regs_warp * warps) < blocks) blocks = 65536 / (regs_warp * warps);
  const long smem = (long)kp->smem + ki->shared_bytes;
  if (smem > 0 && smem > c->max_smem_optin) return 0;
  if (smem > 0 && c->smem_per_sm / smem < blocks) blocks = (int)(c->smem_per_sm / smem);
  if (blocks > 32) blocks = 32;
  return (double)(blocks * warps) / (double)max_warps;
}

/* ---- GPU: bit-exactness and timing ----------------------------------------------------------- */
static void *dp(CUdeviceptr p) { return (void *)(uintptr_t)p; }

typedef struct {
  const cuda_driver *d;
  CUdeviceptr x, w, gy, gx, gw;
} dev_set;

static void dev_free(dev_set *s) {
  CUdeviceptr *p[] = {&s->x, &s->w, &s->gy, &s->gx, &s->gw};
  for (int i = 0; i < 5; ++i)
    if (*p[i]) s->d->cuMemFree(*p[i]), *p[i] = 0;
}

/* Seeded inputs of (T, O, I) in dt on the host (b) and on the device (s). */
static int dev_make(const cuda_driver *d, const hot_model *m, int layer, hot_dtype dt, int64_t T,
                    int64_t O, int64_t I, tooldata *b, dev_set *s) {
  memset(s, 0, sizeof *s);
  s->d = d;
  if (tooldata_make(b, T, O, I, m->seed, layer, dt) != 0) return -1;
  const size_t e = tooldata_dtype_size(dt);
  if (d->cuMemAlloc(&s->x, (size_t)(T * I) * e) || d->cuMemAlloc(&s->w, (size_t)(O * I) * e) ||
      d->cuMemAlloc(&s->gy, (size_t)(T * O) * e) || d->cuMemAlloc(&s->gx, (size_t)(T * I) * 4) ||
      d->cuMemAlloc(&s->gw, (size_t)(O * I) * 4) ||
      d->cuMemcpyHtoD(s->x, tooldata_in(b, b->x), (size_t)(T * I) * e) ||
      d->cuMemcpyHtoD(s->w, tooldata_in(b, b->w), (size_t)(O * I) * e) ||
      d->cuMemcpyHtoD(s->gy, tooldata_in(b, b->gy), (size_t)(T * O) * e)) {
    dev_free(s);
    tooldata_free(b);
    return -1;
  }
  return 0;
}

/* Bit-exactness of save + backward, CUDA vs the CPU twins, on a small problem that runs the same
 * kernels as the variant at the spec's size: B = min(the spec's batch, 2) (two samples keep the
 * per-sample scale groups and so the segmented g_w GEMM of a batch), the layer's tokens (HLA's
 * blocking depends on them), O and I at most BITEXACT_MAX_FEATURES, and the GEMM tiles written
 * out as the full-size plan resolved them (the planner's defaults depend on the shape; kernel
 * names do not depend on O and I). The small plan's kernel names are compared with the full
 * plan's: where they differ nothing is claimed (bit-exactness unknown, not timed). `full` is the
 * variant's plan at the spec's size. */
enum { BITEXACT_MAX_FEATURES = 256 };

static void tiles_of(hot_tile *t, const hot_gemm_plan *g) {
  t->tile_m = g->tile_m, t->tile_n = g->tile_n, t->tile_k = g->tile_k;
  t->warps_m = g->warps_m, t->warps_n = g->warps_n, t->stages = g->stages;
}

/* The small problem's spec: O and I at most BITEXACT_MAX_FEATURES, the tiles of the full size. */
static void small_spec(const hot_layer_spec *full_s, const hot_layer_plan *full,
                       hot_layer_spec *small) {
  *small = *full_s;
  if (small->out_features > BITEXACT_MAX_FEATURES) {
    small->out_features = BITEXACT_MAX_FEATURES;
    if (full->hq.enabled && !full_s->hq.pad) {
      /* unpadded HQ (paper_code) shrinks b to the largest power of two dividing O: keep the
       * full size's b with O' = b times an odd number (any multiple when b is the spec's own) */
      const int64_t b = full->hq.block;
      int64_t k = BITEXACT_MAX_FEATURES / b;
      if (b < full_s->hq.block && k % 2 == 0) --k;
      small->out_features = k * b;
    }
  }
  if (small->in_features > BITEXACT_MAX_FEATURES) small->in_features = BITEXACT_MAX_FEATURES;
  if (full->hq.enabled) tiles_of(&small->tile_gx, &full->hq.gemm);
  if (full->hla.enabled) tiles_of(&small->tile_gw, &full->hla.gemm);
}

/* What differs between the small layer's kernels and the full plan's (the kernel count or the
 * first kernel name that differs), or NULL when they are the same binaries. */
static const char *kernels_differ(const hot_layer *small, const hot_layer_plan *full) {
  const hot_layer_plan *sm = hot_layer_get_plan(small);
  const char *differs = sm->n_kernels != full->n_kernels ? "the kernel count" : NULL;
  for (int k = 0; !differs && k < sm->n_kernels; ++k)
    if (strcmp(sm->kernels[k].name, full->kernels[k].name)) differs = full->kernels[k].name;
  return differs;
}

/* Save + backward of the CPU layer lc on b (into cx, cw) and of the GPU layer lg on ds (copied
 * back into hx, hw). */
static hot_status run_both(tune_speed *sp, hot_layer *lc, hot_layer *lg, hot_dtype dt,
                           const tooldata *b, const dev_set *ds, int64_t T, int64_t O, int64_t I,
                           float *cx, float *cw, float *hx, float *hw) {
  hot_status st = hot_layer_save(lc, tooldata_in(b, b->x), dt, NULL, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(lc, tooldata_in(b, b->gy), tooldata_in(b, b->w), dt, NULL, cx,
                            cw, NULL, 1, NULL);
  if (st == HOT_OK) st = hot_layer_save(lg, dp(ds->x), dt, NULL, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(lg, dp(ds->gy), dp(ds->w), dt, NULL, dp(ds->gx), dp(ds->gw), NULL, 1, NULL);
  if (st == HOT_OK) st = hot_layer_check(lg);
  if (st == HOT_OK &&
      (sp->d->cuMemcpyDtoH(hx, ds->gx, (size_t)(T * I) * 4) || sp->d->cuMemcpyDtoH(hw, ds->gw, (size_t)(O * I) * 4)))
    st = HOT_ERR_CUDA;
  return st;
}

/* g_x (T x I) and g_w (O x I) of both backends compared bit for bit into row. */
static void compare_bits(const float *hx, const float *cx, const float *hw, const float *cw,
                         int64_t T, int64_t O, int64_t I, hot_tune_row *row) {
  int64_t bad = -1;
  const char *what = "g_x";
  for (int64_t i = 0; i < T * I && bad < 0; ++i)
    if (memcmp(&hx[i], &cx[i], 4)) bad = i;
  for (int64_t i = 0; i < O * I && bad < 0; ++i)
    if (memcmp(&hw[i], &cw[i], 4)) bad = i, what = "g_w";
  row->bitexact = bad < 0;
  if (bad >= 0) {
    snprintf(row->status, sizeof row->status, "not_bitexact");
    fileio_msgf(row->note, sizeof row->note, "%s differs from the CPU twin first at element %lld", what,
             (long long)bad);
  }
}

static void bitexact(tune_speed *sp, const hot_model *m, int layer, const hot_layer_spec *full_s,
                     const hot_layer_plan *full, hot_tune_row *row) {
  hot_layer_spec small;
  small_spec(full_s, full, &small);
  const hot_layer_spec *s = &small;
  const int64_t L = s->tokens ? s->tokens : m->tokens, B = m->batch < 2 ? m->batch : 2, T = B * L,
                O = s->out_features, I = s->in_features;
  hot_layer *lc = NULL, *lg = NULL;
  tooldata b;
  dev_set ds;
  float *hx = malloc((size_t)(T * I) * 4), *hw = malloc((size_t)(O * I) * 4);
  float *cx = malloc((size_t)(T * I) * 4), *cw = malloc((size_t)(O * I) * 4);
  row->bitexact = -1;
  if (!hx || !hw || !cx || !cw || dev_make(sp->d, m, layer, s->dtype, T, O, I, &b, &ds) != 0) {
    fileio_msgf(row->note, sizeof row->note, "bit-exactness not checked: out of memory");
    free(hx), free(hw), free(cx), free(cw);
    return;
  }
  hot_status st = tools_layer_create(sp->cpu, s, B, L, m->recipe, layer, &lc);
  if (st == HOT_OK) st = tools_layer_create(sp->gpu, s, B, L, m->recipe, layer, &lg);
  const char *differs = st == HOT_OK ? kernels_differ(lg, full) : NULL;
  if (differs) { /* the same binaries as the full size, or no claim */
    fileio_msgf(row->note, sizeof row->note, "bit-exactness not checked: the small problem "
             "(B = %lld, O, I <= %d) runs other kernels than the full size (%s)",
             (long long)B, BITEXACT_MAX_FEATURES, differs);
  } else {
    if (st == HOT_OK) st = run_both(sp, lc, lg, s->dtype, &b, &ds, T, O, I, cx, cw, hx, hw);
    if (st != HOT_OK) {
      snprintf(row->status, sizeof row->status, "failed");
      fileio_msgf(row->note, sizeof row->note, "bit-exactness run: %s: %s", hot_status_name(st),
               hot_errmsg(lg ? sp->gpu : sp->cpu));
    } else {
      compare_bits(hx, cx, hw, cw, T, O, I, row);
    }
  }
  hot_layer_destroy(lc);
  hot_layer_destroy(lg);
  dev_free(&ds);
  tooldata_free(&b);
  free(hx), free(hw), free(cx), free(cw);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median (and p10, p90, min) of --repeats cold-L2 runs of save + backward at the model's size. */
static void timing(tune_speed *sp, const hot_model *m, int layer, const hot_layer_spec *s,
                   hot_tune_row *row) {
  const int64_t L = s->tokens ? s->tokens : m->tokens, T = m->batch * L, O = s->out_features,
                I = s->in_features;
  const int reps = sp->o->repeats > 0 ? sp->o->repeats : 20;
  double *ms = calloc((size_t)reps, sizeof *ms);
  hot_layer *l = NULL;
  tooldata b;
  dev_set ds;
  if (!ms || dev_make(sp->d, m, layer, s->dtype, T, O, I, &b, &ds) != 0) {
    fileio_msgf(row->note, sizeof row->note, "not timed: out of host or device memory");
    free(ms);
    return;
  }
  hot_status st = tools_layer_create(sp->gpu, s, m->batch, L, m->recipe, layer, &l);
  if (st == HOT_OK) st = hot_ctx_set_profiling(sp->gpu, 1);
  int n = 0;
  for (int r = -2; r < reps && st == HOT_OK; ++r) { /* two untimed warm-up runs */
    if (sp->flush && sp->d->cuMemsetD8(sp->flush, (unsigned char)r, sp->flush_bytes)) st = HOT_ERR_CUDA;
    double t = 0;
    for (int call = 0; call < 2 && st == HOT_OK; ++call) {
      st = call == 0 ? hot_layer_save(l, dp(ds.x), s->dtype, NULL, NULL)
                     : hot_layer_backward(l, dp(ds.gy), dp(ds.w), s->dtype, NULL, dp(ds.gx),
                                          dp(ds.gw), NULL, (uint32_t)(r + 3), NULL);
      hot_kernel_time kt[HOT_MAX_KERNEL_TIMES];
      int nk = 0;
      if (st == HOT_OK) st = hot_layer_kernel_times(l, kt, HOT_MAX_KERNEL_TIMES, &nk);
      for (int k = 0; k < nk && k < HOT_MAX_KERNEL_TIMES; ++k) t += kt[k].ms;
    }
    if (st == HOT_OK && r >= 0) ms[n++] = t;
  }
  hot_ctx_set_profiling(sp->gpu, 0);
  if (st != HOT_OK) {
    snprintf(row->status, sizeof row->status, "failed");
    fileio_msgf(row->note, sizeof row->note, "timing: %s: %s", hot_status_name(st), hot_errmsg(sp->gpu));
  } else if (n > 0) {
    qsort(ms, (size_t)n, sizeof *ms, cmp_d);
    row->timed = 1;
    row->repeats = n;
    row->time_min_ms = ms[0];
    row->time_p10_ms = ms[(n - 1) / 10];
    row->time_med_ms = ms[(n - 1) / 2];
    row->time_p90_ms = ms[(n - 1) * 9 / 10];
  }
  hot_layer_destroy(l);
  dev_free(&ds);
  tooldata_free(&b);
  free(ms);
}

int tune_speed_run(tune_speed *sp, const hot_model *m, int layer, const hot_layer_spec *s,
                   hot_tune_row *row, char *err, size_t errlen) {
  hot_layer_plan pl;
  char e[600];
  snprintf(row->status, sizeof row->status, "ok");
  if (plan_of(m, layer, s, sp->env->arch, &pl, e, sizeof e) != 0) {
    snprintf(row->status, sizeof row->status, "plan_refused");
    fileio_msgf(row->note, sizeof row->note, "%s", e);
    return 0;
  }
  hot_jit j;
  char *log = NULL;
  rt_status rs = jit_layer(sp->kc, &pl, sp->o->jobs, &j, &log, e, sizeof e);
  free(log);
  if (rs == RT_ERR_NOMEM) {
    fileio_msgf(err, errlen, "out of memory compiling layer %s", s->name);
    return -1;
  }
  if (rs != RT_OK) {
    snprintf(row->status, sizeof row->status, "compile_failed");
    fileio_msgf(row->note, sizeof row->note, "%s", e);
    return 0;
  }
  row->regs = 0;
  row->spills = 0;
  row->smem_bytes = 0;
  row->occupancy = 1.0;
  char why[256] = "";
  for (int k = 0; k < pl.n_kernels; ++k) {
    const hot_kernel_plan *kp = &pl.kernels[k];
    const hot_kernel_binary *bin = j.bin[k];
    if (!bin || bin->n_kernels < 1) continue; /* a kernel not in this build: nothing to measure */
    const hot_kernel_info *ki = &bin->kernels[0];
    const int spills = ki->spill_store_bytes + ki->spill_load_bytes;
    if (ki->registers > row->regs) row->regs = ki->registers;
    row->spills += spills;
    if ((int)kp->smem + ki->shared_bytes > row->smem_bytes) row->smem_bytes = (int)kp->smem + ki->shared_bytes;
    if (spills > kp->max_spills && !*why)
      fileio_msgf(why, sizeof why, "%s spills %d bytes (the plan allows %d)", kp->name, spills, kp->max_spills);
    if (kp->role == HOT_K_GEMM_GX || kp->role == HOT_K_GEMM_GW) {
      const double occ = occupancy(pl.arch, kp, ki);
      if (occ < row->occupancy) row->occupancy = occ;
      if (occ <= 0 && !*why) fileio_msgf(why, sizeof why, "%s cannot be resident (registers or shared memory)", kp->name);
    }
  }
  jit_free(&j);
  if (*why) {
    snprintf(row->status, sizeof row->status, "pruned");
    fileio_msgf(row->note, sizeof row->note, "%s", why);
    return 0;
  }
  if (!sp->env->have_gpu) {
    fileio_msgf(row->note, sizeof row->note, "not timed: no GPU (compiled and checked for spills only)");
    return 0;
  }
  bitexact(sp, m, layer, s, &pl, row);
  if (row->bitexact == 1) timing(sp, m, layer, s, row);
  else if (!*row->note) fileio_msgf(row->note, sizeof row->note, "not timed: bit-exactness unknown");
  return 0;
}

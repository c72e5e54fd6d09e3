/* jit.c — JIT figures of one layer, each in a fresh context so no cache of an earlier stage
 * helps the next:
 *   cold   hot_layer_compile in a memory-only context (disk cache off): emit + NVRTC (+ module
 *          load on CUDA) — what the first step of a training run pays without a disk cache;
 *   store  the same into an empty temporary disk cache (a second cold compile, plus writing the
 *          entry): it fills the cache the next stage reads;
 *   warm   hot_layer_compile in another context on that cache: a disk hit (+ module load on CUDA).
 * On the CPU backend the kernels are compiled for a forced arch (no GPU needed); the layer is
 * the benchmark-size one (its sizes are baked into the kernels' launch geometry, not the code,
 * but the plan is what the runtime would compile). */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 ? 0 : 0; /* best effort: keep walking */
}

/* The distinct kernels the layer compiled now, with NVRTC's phases, into bl->jit_kern. */
static void kernel_figures(bench_layer *bl, const hot_layer *layer) {
  enum { CAP = (int)(sizeof bl->jit_kern / sizeof bl->jit_kern[0]) };
  hot_tools_jit_kernel k[CAP];
  bl->jit_nk = tools_layer_jit_kernels(layer, k, CAP);
  for (int i = 0; i < bl->jit_nk; ++i) {
    bench_jit_kernel *o = &bl->jit_kern[i];
    snprintf(o->name, sizeof o->name, "%s", k[i].name);
    o->ms = k[i].compile_ms;
    o->phases = k[i].phases_known;
    o->front_ms = k[i].front_ms;
    o->nvvm_ms = k[i].nvvm_ms;
    o->ptxas_ms = k[i].ptxas_ms;
  }
}

/* One timed hot_layer_compile in a new context. Returns the status; stats into *s; the
 * per-kernel figures into kfig when not NULL. */
static hot_status timed_compile(const bench_run *run, const bench_layer *bl, hot_backend backend,
                                const char *arch, int disk, const char *dir, double *ms,
                                hot_stats *s, bench_layer *kfig, char *err, size_t n) {
  hot_ctx *ctx = NULL;
  hot_layer *layer = NULL;
  hot_status st = bench_ctx_open(&ctx, run, backend, arch, disk, dir, err, n);
  if (st == HOT_OK) st = bench_layer_open(ctx, run, bl, bl->B, bl->L, &layer, err, n);
  if (st == HOT_OK) {
    double t0 = bench_now_ms();
    st = hot_layer_compile(layer);
    *ms = bench_now_ms() - t0;
    if (st != HOT_OK) snprintf(err, n, "%s: %s", hot_status_name(st), hot_errmsg(ctx));
    else if (kfig) kernel_figures(kfig, layer);
    hot_ctx_stats(ctx, s);
  }
  hot_ctx_destroy(ctx);
  return st;
}

void bench_jit(const bench_run *run, bench_layer *bl, hot_backend backend, const char *arch) {
  char err[600] = "", dir[] = "/tmp/hot-bench-jit-XXXXXX";
  hot_stats s;
  memset(&s, 0, sizeof s);
  bl->have_jit = 0;
  hot_status st = timed_compile(run, bl, backend, arch, -1, NULL, &bl->jit_cold_ms, &s, bl, err,
                                 sizeof err);
  if (st == HOT_OK && s.compiles == 0) {
    snprintf(bl->jit_note, sizeof bl->jit_note, "nothing compiled (no arch forced?)");
    return;
  }
  if (st != HOT_OK) {
    snprintf(bl->jit_note, sizeof bl->jit_note, "cold: %.180s", err);
    return;
  }
  bl->jit_compiles = s.compiles;
  if (!mkdtemp(dir)) {
    snprintf(bl->jit_note, sizeof bl->jit_note, "no temporary cache directory");
    bl->have_jit = 1;
    bl->jit_store_ms = bl->jit_warm_ms = -1;
    return;
  }
  st = timed_compile(run, bl, backend, arch, 1, dir, &bl->jit_store_ms, &s, NULL, err, sizeof err);
  if (st == HOT_OK)
    st = timed_compile(run, bl, backend, arch, 1, dir, &bl->jit_warm_ms, &s, NULL, err, sizeof err);
  if (st != HOT_OK) {
    snprintf(bl->jit_note, sizeof bl->jit_note, "store/warm: %.170s", err);
    bl->jit_store_ms = bl->jit_warm_ms = -1;
  } else {
    bl->jit_disk_hits = s.disk_hits;
    if (s.disk_hits == 0 || s.compiles != 0)
      snprintf(bl->jit_note, sizeof bl->jit_note, "warm run was not a pure disk hit (%llu compiles)",
               (unsigned long long)s.compiles);
  }
  bl->have_jit = 1;
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void bench_jit_spec(bench_run *run, hot_backend backend, const char *arch) {
  char err[600] = "";
  run->have_jit_spec = 0;
  hot_ctx *ctx = NULL;
  hot_layer **layers = calloc((size_t)run->n + 1, sizeof *layers);
  int n = 0;
  hot_status st = layers ? bench_ctx_open(&ctx, run, backend, arch, -1, NULL, err, sizeof err)
                         : HOT_ERR_NOMEM;
  for (int i = 0; st == HOT_OK && i < run->n; ++i) {
    const bench_layer *bl = &run->layers[i];
    if (bl->status[0]) continue;
    st = bench_layer_open(ctx, run, bl, bl->B, bl->L, &layers[n], err, sizeof err);
    if (st == HOT_OK) ++n;
  }
  if (st == HOT_OK) {
    double t0 = bench_now_ms();
    st = hot_ctx_compile(ctx, layers, (size_t)n);
    run->jit_spec_cold_ms = bench_now_ms() - t0;
    if (st != HOT_OK) snprintf(err, sizeof err, "%s: %s", hot_status_name(st), hot_errmsg(ctx));
  }
  if (st == HOT_OK) {
    hot_stats s;
    hot_ctx_stats(ctx, &s);
    run->jit_spec_compiles = s.compiles;
    run->have_jit_spec = s.compiles > 0;
    if (!s.compiles) snprintf(run->jit_spec_note, sizeof run->jit_spec_note, "nothing compiled");
  } else {
    snprintf(run->jit_spec_note, sizeof run->jit_spec_note, "%.190s", err);
  }
  hot_ctx_destroy(ctx);
  free(layers);
}

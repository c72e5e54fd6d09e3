/* model.c — hot-bench --model: a predicted time for every kernel of a layer's forward save and
 * backward on H100 SXM and H200, from the plan alone (no GPU): occupancy from the registers
 * ptxas reported (the nvrtc tests' table, tests/nvrtc/kernel_quality.txt) and the planned shared
 * memory, waves on 132 SMs, and a roofline of the compulsory bytes (gen/cost.h), the GEMMs' L2
 * panel traffic and their integer operations. Every constant and its source: docs/gpu-model.md.
 * A prediction, never a measurement: tools/device-check.sh prints it beside the measured times. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "num.h"

#include "bench.h"
#include "cost.h"
#include "kernel_desc.h"
#include "plan.h"

typedef struct {
  const char *name;
  double hbm_gbs;   /* data sheet HBM bandwidth, GB/s */
  double l2_gbs;    /* L2 -> SM bandwidth, measured (docs/gpu-model.md) */
  double int8_tops; /* dense INT8 tensor-core peak, data sheet */
  double bf16_tf, fp8_tf;
  double l2_mb;
} gpu_spec;

static const gpu_spec k_gpus[] = {
    {"H100 SXM", 3350.0, 5500.0, 1979.0, 989.0, 1979.0, 50.0},
    {"H200", 4800.0, 5500.0, 1979.0, 989.0, 1979.0, 50.0},
};
enum { N_GPUS = 2, SMS = 132 };
/* attainable fractions (assumed until the device check measures them; docs/gpu-model.md) */
#define EFF_MMA_SYNC 0.62 /* mma.sync on sm_90 against the wgmma-based peak */
#define EFF_HBM 0.90      /* streaming kernels against the data-sheet bandwidth */
#define EFF_CUBLAS 0.75   /* cuBLAS BF16 / cuBLASLt FP8 at these sizes against the peak */
#define LAUNCH_US 2.0     /* floor of one launch (latency, ramp) */

/* Registers of `name` on arch from the kernel-quality table; -1 when absent. */
static int regs_of(const char *table, const char *arch, const char *name) {
  char why[256];
  FILE *f = table ? fileio_fopen(table, "r", why, sizeof why) : NULL;
  if (!f) return -1; /* no table: the occupancy columns say "?" */
  char line[512];
  int r = -1;
  while (r < 0 && fgets(line, sizeof line, f)) { /* "ARCH KERNEL REGISTERS ...": num.h's integer */
    char *save = NULL, *a = strtok_r(line, " \t\n", &save), *k = strtok_r(NULL, " \t\n", &save);
    const char *v = strtok_r(NULL, " \t\n", &save);
    if (a && k && v && !strcmp(a, arch) && !strcmp(k, name) &&
        num_parse_int("registers", v, 0, 255, &r, NULL, 0) != 0)
      r = -1;
  }
  fclose(f);
  return r;
}

/* Blocks of a kernel resident on one SM (sm_90: 64K registers allocated per warp in units of
 * 256, 2048 threads, 32 blocks, 228 KiB shared memory with 1 KiB reserved per block); *lim names
 * the limit. */
static int blocks_per_sm(int threads, int regs, unsigned smem, const char **lim) {
  const int warps = (threads + 31) / 32;
  int b = 32;
  *lim = "blocks";
  if (2048 / threads < b) b = 2048 / threads, *lim = "threads";
  if (regs > 0) {
    const int per_warp = ((regs * 32 + 255) / 256) * 256;
    const int br = (65536 / per_warp) / warps;
    if (br < b) b = br, *lim = "registers";
  }
  const int bs = (int)(233472u / (((smem + 127u) / 128u) * 128u + 1024u));
  if (bs < b) b = bs, *lim = "shared memory";
  return b;
}

typedef struct {
  double us, t_cmp, t_hbm, t_l2, tail;
  const char *bound;
} kpred;

/* The GEMM's L2 -> SM bytes: every block reads its A and B panels (tile_m + tile_n rows of k_pad
 * bytes); a segmented one rereads and rewrites its C tile at each segment end. HBM: A and the
 * output once, B once per wave of row panels unless B fits half the L2. */
static void gemm_bytes(const hot_gemm_plan *g, int64_t concurrent, double l2_mb, double *l2,
                       double *hbm) {
  const int64_t tm = (g->m + g->tile_m - 1) / g->tile_m, tn = (g->n + g->tile_n - 1) / g->tile_n;
  *l2 = (double)(tm * tn) * (double)(g->tile_m + g->tile_n) * (double)g->k_pad;
  const double segs = g->segmented ? (double)(g->k_pad / g->seg_k_pad) : 1.0;
  *l2 += 2.0 * (segs - 1.0) * (double)g->m * (double)g->n * 4.0;
  const double a = (double)g->m * (double)g->k_pad, b = (double)g->n * (double)g->k_pad;
  const double waves_rows = ceil((double)(tm * tn) / (double)(concurrent > 0 ? concurrent : 1));
  *hbm = a + (b <= l2_mb * 1e6 / 2 ? b : b * waves_rows) + (double)g->m * (double)g->n * 4.0;
}

static kpred predict(const gpu_spec *gs, const hot_layer_plan *pl, const hot_kernel_plan *k,
                     const unsigned grid[3], int bps, const hot_kernel_cost *c) {
  kpred p = {0};
  const double blocks = (double)grid[0] * grid[1] * grid[2];
  const double slots = (double)bps * SMS, waves = blocks / (slots > 0 ? slots : 1);
  p.tail = waves > 0 ? waves / ceil(waves) : 1.0;
  double hbm = (double)(c->bytes_read + c->bytes_written), l2 = hbm;
  const hot_gemm_plan *g = k->role == HOT_K_GEMM_GX ? &pl->hq.gemm
                           : k->role == HOT_K_GEMM_GW ? &pl->hla.gemm : NULL;
  if (g) gemm_bytes(g, (int64_t)(slots < blocks ? slots : blocks), gs->l2_mb, &l2, &hbm);
  p.t_cmp = c->int_ops > 0 ? (double)c->int_ops / (gs->int8_tops * 1e12 * EFF_MMA_SYNC) * 1e6 : 0;
  p.t_hbm = hbm / (gs->hbm_gbs * 1e9 * EFF_HBM) * 1e6;
  p.t_l2 = l2 / (gs->l2_gbs * 1e9) * 1e6;
  double t = p.t_cmp;
  p.bound = "compute";
  if (p.t_hbm > t) t = p.t_hbm, p.bound = "HBM";
  if (p.t_l2 > t) t = p.t_l2, p.bound = "L2";
  /* a partial last wave idles SMs: the work of full waves stretches by 1/tail */
  if (p.tail < 0.999 && waves < 8) {
    t /= p.tail;
    if (waves < 1) p.bound = "under one wave";
    else if (p.tail < 0.8) p.bound = "tail wave";
  }
  if (t < LAUNCH_US) t = LAUNCH_US, p.bound = "launch";
  p.us = t;
  return p;
}

/* One call's launches (save or backward) of a plan: rows of the table and their JSON. */
static void model_call(FILE *f, FILE *js, const hot_layer_plan *pl, hot_call call, const char *table,
                         const char *layer, int *first) {
  hot_step steps[64];
  const int n = kd_steps(call, steps, 64);
  for (int i = 0; i < n; ++i) {
    const hot_step *s = &steps[i];
    const int k = plan_kernel_index(pl, s->role);
    if (k < 0) continue;
    const int row = pl->hq.g.gran == HOT_GRAN_ROW;
    if ((s->when == HOT_WHEN_GRAN_ROW && !row) || (s->when == HOT_WHEN_GRAN_NOT_ROW && row) ||
        (s->when == HOT_WHEN_BIAS && !pl->spec->bias))
      continue;
    const hot_kernel_plan *kp = &pl->kernels[k];
    unsigned grid[3];
    plan_kernel_grid(pl, k, s->phase, grid);
    if (kp->persistent && grid[0] > SMS) grid[0] = SMS;
    hot_kernel_cost c;
    if (plan_kernel_cost(pl, s->role, s->phase, row, &c) != 0) memset(&c, 0, sizeof c);
    const int regs = regs_of(table, "sm_90", kp->name), threads = (int)kp->block[0];
    const char *lim;
    const int bps = blocks_per_sm(threads, regs, kp->smem, &lim);
    const double blocks = (double)grid[0] * grid[1] * grid[2];
    fprintf(f, "  %-8s %-46.46s %2d %9.0f %4d %4s %2d %-13s %6.2f", call ? "backward" : "save",
            kp->name, s->phase, blocks, threads, regs > 0 ? "" : "?", bps, lim,
            blocks / ((double)bps * SMS));
    for (int gi = 0; gi < N_GPUS; ++gi) {
      const kpred p = predict(&k_gpus[gi], pl, kp, grid, bps, &c);
      fprintf(f, " %9.1f %-14s", p.us, p.bound);
      fprintf(js, "%s\n    {\"layer\": \"%s\", \"call\": \"%s\", \"kernel\": \"%s\", \"phase\": %d, "
              "\"gpu\": \"%s\", \"blocks\": %.0f, \"threads\": %d, \"registers\": %d, "
              "\"blocks_per_sm\": %d, \"limit\": \"%s\", \"waves\": %.3f, \"us\": %.2f, "
              "\"compute_us\": %.2f, \"hbm_us\": %.2f, \"l2_us\": %.2f, \"bound\": \"%s\"}",
              *first ? "" : ",", layer, call ? "backward" : "save", kp->name, s->phase,
              k_gpus[gi].name, blocks, threads, regs, bps, lim, blocks / ((double)bps * SMS), p.us,
              p.t_cmp, p.t_hbm, p.t_l2, p.bound);
      *first = 0;
    }
    fprintf(f, "\n");
  }
}

/* The backward's total per GPU (sum of its launches) for the comparison table. */
static void call_total(const hot_layer_plan *pl, hot_call call, const char *table, double out[N_GPUS]) {
  hot_step steps[64];
  const int n = kd_steps(call, steps, 64);
  for (int gi = 0; gi < N_GPUS; ++gi) out[gi] = 0;
  for (int i = 0; i < n; ++i) {
    const int k = plan_kernel_index(pl, steps[i].role);
    const int row = pl->hq.g.gran == HOT_GRAN_ROW;
    if (k < 0 || (steps[i].when == HOT_WHEN_GRAN_ROW && !row) ||
        (steps[i].when == HOT_WHEN_GRAN_NOT_ROW && row) ||
        (steps[i].when == HOT_WHEN_BIAS && !pl->spec->bias))
      continue;
    const hot_kernel_plan *kp = &pl->kernels[k];
    unsigned grid[3];
    plan_kernel_grid(pl, k, steps[i].phase, grid);
    if (kp->persistent && grid[0] > SMS) grid[0] = SMS;
    hot_kernel_cost c;
    if (plan_kernel_cost(pl, steps[i].role, steps[i].phase, row, &c) != 0) memset(&c, 0, sizeof c);
    const char *lim;
    const int bps = blocks_per_sm((int)kp->block[0], regs_of(table, "sm_90", kp->name), kp->smem, &lim);
    for (int gi = 0; gi < N_GPUS; ++gi) out[gi] += predict(&k_gpus[gi], pl, kp, grid, bps, &c).us;
  }
}

int bench_model(const bench_run *run, const hot_model *m, FILE *f) {
  const char *table = env_get("HOT_KERNEL_QUALITY");
  if (!table || !*table) table = HOT_KERNEL_QUALITY_DEFAULT;
  char *jbuf = NULL;
  size_t jlen = 0;
  FILE *js = open_memstream(&jbuf, &jlen);
  if (!js) return 1;
  fprintf(f, "hot-bench --model %s: PREDICTED times (no GPU measured them), registers from %s\n",
          m->name, table);
  fprintf(f, "  %-8s %-46s %2s %9s %4s %4s %2s %-13s %6s %9s %-14s %9s %-14s\n", "call", "kernel",
          "ph", "blocks", "thr", "", "/SM", "limit", "waves", "H100 us", "bound", "H200 us", "bound");
  int first = 1, rc = 0;
  fprintf(js, "{\"model\": \"%s\", \"kernels\": [", m->name);
  double sum[N_GPUS] = {0}, bf16[N_GPUS] = {0}, fp8[N_GPUS] = {0};
  for (int li = 0; li < run->n; ++li) {
    hot_layer_spec s = m->layers[run->layers[li].index];
    fields_apply_recipe(&s, m->recipe);
    hot_layer_plan *pl = calloc(1, sizeof *pl);
    char err[256];
    if (!pl || plan_layer(&s, m->batch, m->tokens, m->recipe, m->archs[0], run->layers[li].index,
                          pl, err, sizeof err) != 0) {
      diag_fprintf(stderr, "hot-bench --model: layer %s: %s\n", s.name, pl ? err : "out of memory");
      free(pl);
      rc = 1;
      continue;
    }
    fprintf(f, " layer %s (T %lld, O %lld, I %lld, %s)\n", s.name, (long long)pl->T, (long long)pl->O,
            (long long)pl->I, plan_arch_caps(pl->arch) ? plan_arch_caps(pl->arch)->name : "?");
    model_call(f, js, pl, HOT_CALL_SAVE, table, s.name, &first);
    model_call(f, js, pl, HOT_CALL_BACKWARD, table, s.name, &first);
    double bw[N_GPUS];
    call_total(pl, HOT_CALL_BACKWARD, table, bw);
    const double flops = 2.0 * 2.0 * (double)pl->T * (double)pl->O * (double)pl->I; /* g_x + g_w */
    for (int gi = 0; gi < N_GPUS; ++gi) {
      sum[gi] += bw[gi];
      bf16[gi] += flops / (k_gpus[gi].bf16_tf * 1e12 * EFF_CUBLAS) * 1e6;
      fp8[gi] += flops / (k_gpus[gi].fp8_tf * 1e12 * EFF_CUBLAS) * 1e6;
    }
    free(pl);
  }
  fprintf(js, "\n  ], \"backward\": [");
  fprintf(f, "\n backward of the listed layers (sum of launches), PREDICTED:\n");
  for (int gi = 0; gi < N_GPUS; ++gi) {
    fprintf(f, "  %-9s HOT %9.1f us   cuBLAS BF16 (2 GEMMs) %9.1f us (x%.2f)   cuBLASLt FP8 %9.1f us (x%.2f)\n",
            k_gpus[gi].name, sum[gi], bf16[gi], bf16[gi] / sum[gi], fp8[gi], fp8[gi] / sum[gi]);
    fprintf(js, "%s{\"gpu\": \"%s\", \"hot_us\": %.2f, \"cublas_bf16_us\": %.2f, \"cublaslt_fp8_us\": %.2f}",
            gi ? ", " : "", k_gpus[gi].name, sum[gi], bf16[gi], fp8[gi]);
  }
  fprintf(js, "]}\n");
  fclose(js);
  fprintf(f, "JSON %s", jbuf);
  free(jbuf);
  return rc;
}

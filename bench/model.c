/* model.c — hot-bench --model: a predicted time for every kernel of a layer's forward save,
 * backward (and calibration) on H100 SXM and H200, from the plan alone (no GPU): occupancy from
 * the registers and static shared memory ptxas reported (tests/nvrtc/kernel_quality.txt), the
 * memory-access counts of the CPU emulators (bench/memstat_counts.txt, tools/memstat.sh), waves
 * on 132 SMs, and a roofline of the compulsory bytes (gen/cost.h), the L2 -> SM sector traffic,
 * the shared-memory wavefronts and the integer operations. Both tables are compiled in at build
 * time (HOT_KERNEL_QUALITY / HOT_MEMSTAT_COUNTS name other files). Every constant and its source:
 * docs/gpu-model.md. A prediction, never a measurement: tools/device-check.sh prints it beside
 * the measured times (tools/model-check.py). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

#include "bench.h"
#include "cost.h"
#include "embed.h"
#include "escape.h"
#include "kernel_desc.h"
#include "l2model.h"
#include "plan.h"

/* bench_embedded.c (cmake/embed.cmake at build time): kernel_quality.txt, memstat_counts.txt */
extern const hot_embedded_file embed_bench_files[];

typedef struct {
  const char *name;
  double hbm_gbs;   /* data sheet HBM bandwidth, GB/s */
  double l2_gbs;    /* L2 -> SM bandwidth, measured (docs/gpu-model.md) */
  double int8_tops; /* dense INT8 tensor-core peak, data sheet */
  double bf16_tf, fp8_tf;
  double l2_mb;
  double clock_ghz; /* SM boost clock: the shared-memory term's cycles */
} gpu_spec;

static const gpu_spec k_gpus[] = {
    {"H100 SXM", 3350.0, 5500.0, 1979.0, 989.0, 1979.0, 50.0, 1.98},
    {"H200", 4800.0, 5500.0, 1979.0, 989.0, 1979.0, 50.0, 1.98},
};
enum { N_GPUS = 2, SMS = 132, MAX_ROWS = 512 };
/* attainable fractions (assumed until the device check measures them; docs/gpu-model.md) */
#define EFF_MMA_SYNC 0.62 /* mma.sync on sm_90 against the wgmma-based peak */
#define EFF_WGMMA 0.80    /* wgmma (the arch-specific 9.0 paths) against the peak */
#define EFF_HBM 0.90      /* streaming kernels against the data-sheet bandwidth */
#define EFF_CUBLAS 0.75   /* cuBLAS BF16 / cuBLASLt FP8 at these sizes against the peak */
#define LAUNCH_US 2.0     /* floor of one launch (latency, ramp) */
/* the baseline's tile for the L2 check (CUTLASS's Hopper tile for large GEMMs; cuBLAS's own
 * choice is not public): BF16 operands, 2 bytes */
#define BASE_TILE_M 128.0
#define BASE_TILE_N 256.0
#define SMEM_WF_PER_CLK 1.0 /* shared-memory wavefronts one SM serves per cycle (128 B/clk) */

/* ---- the two tables ------------------------------------------------------------------------ */
typedef struct {
  char key[200];   /* kernel#phase (HLA: kernel@layout#phase) */
  double sh_req, sh_wf, sh_ideal, wsh_wf, wsh_ideal; /* shared: totals, worst site per request */
  double gl_req, gl_sect, gl_ideal, wgl_sect, wgl_ideal;
  double traffic, unique, norm;
  int norm_ops;    /* sh_wf scales with 2MNK (GEMM) rather than with the blocks run */
} ms_row;

typedef struct {
  char *quality;   /* kernel_quality.txt's text */
  ms_row *ms;      /* memstat_counts.txt's rows */
  int n_ms;
  char q_from[400], ms_from[400];
} model_tables;

/* The text of table `env` (a file it names) or of the embedded `rel`; *from says which. NULL
 * (and *from says why) when neither is there. Caller frees. */
static char *table_text(const char *env, const char *rel, char *from, size_t fn) {
  const char *path = env_get(env);
  if (path && *path) {
    char why[256];
    FILE *f = fileio_fopen(path, "r", why, sizeof why);
    if (!f) {
      snprintf(from, fn, "absent (%s: %s)", env, why);
      return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int c;
    while (m && (c = fgetc(f)) != EOF) fputc(c, m);
    fclose(f);
    if (!m) return NULL;
    fclose(m);
    snprintf(from, fn, "%s", path);
    return buf;
  }
  for (const hot_embedded_file *e = embed_bench_files; e->path; ++e)
    if (!strcmp(e->path, rel)) {
      snprintf(from, fn, "%s (compiled in)", rel);
      return strdup(e->data);
    }
  snprintf(from, fn, "absent (not compiled in; set %s)", env);
  return NULL;
}

static int tables_load(model_tables *t) {
  memset(t, 0, sizeof *t);
  t->quality = table_text("HOT_KERNEL_QUALITY", "tests/nvrtc/kernel_quality.txt", t->q_from,
                          sizeof t->q_from);
  char *ms = table_text("HOT_MEMSTAT_COUNTS", "bench/memstat_counts.txt", t->ms_from,
                        sizeof t->ms_from);
  if (!ms) return 0;
  t->ms = calloc(MAX_ROWS, sizeof *t->ms);
  if (!t->ms) {
    free(ms);
    return -1;
  }
  for (char *line = strtok(ms, "\n"); line && t->n_ms < MAX_ROWS; line = strtok(NULL, "\n")) {
    ms_row *r = &t->ms[t->n_ms];
    char kind[16];
    if (line[0] == '#' ||
        sscanf(line, "%199s %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %15s %lf", r->key,
               &r->sh_req, &r->sh_wf, &r->sh_ideal, &r->wsh_wf, &r->wsh_ideal, &r->gl_req,
               &r->gl_sect, &r->gl_ideal, &r->wgl_sect, &r->wgl_ideal, &r->traffic, &r->unique,
               kind, &r->norm) != 15)
      continue;
    r->norm_ops = !strcmp(kind, "ops");
    t->n_ms++;
  }
  free(ms);
  return 0;
}

static void tables_free(model_tables *t) {
  free(t->quality);
  free(t->ms);
}

/* Registers and static shared memory of `name` on arch from the kernel-quality table; -1 when
 * absent. */
static int regs_of(const model_tables *t, const char *arch, const char *name, unsigned *smem) {
  *smem = 0;
  if (!t->quality) return -1; /* no table: the occupancy columns say "?" */
  const char *p = t->quality;
  while (*p) {
    char a[32], k[160];
    int v, st, ss, sl;
    unsigned sm;
    if (sscanf(p, "%31s %159s %d %d %d %d %u", a, k, &v, &st, &ss, &sl, &sm) == 7 &&
        !strcmp(a, arch) && !strcmp(k, name)) {
      *smem = sm;
      return v;
    }
    const char *nl = strchr(p, '\n');
    if (!nl) break;
    p = nl + 1;
  }
  return -1;
}

/* The counts of a launch: kernel#phase, HLA kernels with their layout (@sample / @flat). */
static const ms_row *counts_of(const model_tables *t, const hot_layer_plan *pl,
                               const hot_kernel_plan *k, int phase) {
  char key[200];
  const int hla = k->role == HOT_K_ABC_X || k->role == HOT_K_HLA_G;
  snprintf(key, sizeof key, "%s%s#%d", k->name,
           hla ? (pl->hla.layout == HOT_LAYOUT_FLAT ? "@flat" : "@sample") : "", phase);
  for (int i = 0; i < t->n_ms; ++i)
    if (!strcmp(t->ms[i].key, key)) return &t->ms[i];
  return NULL;
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

/* One launch as the model sees it. */
typedef struct {
  const hot_kernel_plan *kp;
  int phase, regs, bps;
  unsigned smem;      /* dynamic + static bytes per block */
  const char *lim;
  double blocks;
  hot_kernel_cost c;
  const ms_row *ms;   /* NULL: not counted */
} launch;

typedef struct {
  double us, t_cmp, t_hbm, t_l2, t_smem, tail;
  double us_full; /* the same without the wave-fill stretch (as if every wave were full) */
  /* what-if, not built: a wgmma GEMM in clusters of two CTAs along M whose B panel is loaded once
   * by TMA multicast (per CTA tile_m + tile_n / 2 rows of L2 -> SM bytes); other launches and
   * mma.sync GEMMs (no TMA multicast): the same as t_l2 and us */
  double t_l2_mc, us_mc;
  double dram, compulsory; /* modelled DRAM bytes and the compulsory bytes (gen/cost.h) */
  int dram_modelled;       /* 1: a GEMM's L2 simulation; 0: compulsory x B/uniq (no L2 reuse) */
  const char *bound;
} kpred;

/* gemm_tma.cu's tile order: groups of HOT_GROUP_M tile rows (the template's value) */
#define TMA_GROUP_M 8

/* The GEMM's L2 -> SM bytes: every block reads its A and B panels (tile_m + tile_n rows of k_pad
 * codes); a segmented one rereads and rewrites its C tile at each segment end. *l2_mc: the same
 * if pairs of blocks along M loaded their common B panel once by TMA multicast (tile_m +
 * tile_n / 2 rows per block; the what-if of kpred.t_l2_mc). DRAM (*hbm): the
 * compulsory bytes plus what the tile order's LRU simulation (l2model.c) re-reads beyond them
 * for `concurrent` tiles in flight and the GPU's L2; *extra gets those re-read bytes (0 when the
 * simulation refuses the grid: then the compulsory bytes alone, and *modelled = 0). */
static void gemm_bytes(const hot_gemm_plan *g, int64_t concurrent, double l2_mb, double compulsory,
                       double *l2, double *l2_mc, double *hbm, double *extra, int *modelled) {
  const int64_t tm = (g->m + g->tile_m - 1) / g->tile_m, tn = (g->n + g->tile_n - 1) / g->tile_n;
  const double code = g->codes == HOT_CODES_S4_PACKED ? 0.5 : 1.0;
  const double panel = (double)(tm * tn) * (double)g->k_pad * code; /* bytes per panel row */
  *l2 = panel * (double)(g->tile_m + g->tile_n);
  *l2_mc = panel * ((double)g->tile_m + (double)g->tile_n / 2.0);
  const double segs = g->segmented ? (double)(g->k_pad / g->seg_k_pad) : 1.0;
  *l2 += 2.0 * (segs - 1.0) * (double)g->m * (double)g->n * 4.0;
  *l2_mc += 2.0 * (segs - 1.0) * (double)g->m * (double)g->n * 4.0;
  const l2_gemm_grid grid = {
      .tiles_m = tm, .tiles_n = tn, .ktiles = g->k_pad / g->tile_k,
      .seg_ktiles = g->segmented ? g->seg_k_pad / g->tile_k : 0,
      .a_bytes = (int64_t)((double)g->tile_m * g->tile_k * code),
      .b_bytes = (int64_t)((double)g->tile_n * g->tile_k * code),
      .c_bytes = (int64_t)g->tile_m * g->tile_n * 4,
      .group_m = g->path == HOT_GEMM_TMA_S8 ? TMA_GROUP_M : 0,
      .concurrent = concurrent > 0 ? concurrent : 1};
  double out[3], comp[3];
  *modelled = l2_gemm_dram(&grid, l2_mb * 1e6, out, comp) == 0;
  *extra = *modelled ? (out[0] + out[1] + out[2]) - (comp[0] + comp[1] + comp[2]) : 0.0;
  if (*extra < 0) *extra = 0;
  *hbm = compulsory + *extra;
}

/* Shared-memory wavefronts of the launch: the counted wavefronts per unit (a block of a fixed
 * tile, or a GEMM's operation: its blocks loop over K) times the plan's units; 0 when not
 * counted. */
static double smem_wavefronts(const launch *l) {
  if (!l->ms || l->ms->norm <= 0) return 0;
  const double units = l->ms->norm_ops ? (double)l->c.int_ops : l->blocks;
  return l->ms->sh_wf / l->ms->norm * units;
}

/* The time of one launch from its terms: the largest, stretched by a partial last wave (under 8
 * waves), at least LAUNCH_US; *bound names what sets it, *full gets it without the stretch. */
static double bound_time(double t_cmp, double t_hbm, double t_l2, double t_smem, double tail,
                         double waves, const char **bound, double *full) {
  double t = t_cmp;
  *bound = "compute";
  if (t_hbm > t) t = t_hbm, *bound = "HBM";
  if (t_l2 > t) t = t_l2, *bound = "L2";
  if (t_smem > t) t = t_smem, *bound = "shared memory";
  *full = t < LAUNCH_US ? LAUNCH_US : t;
  /* a partial last wave idles SMs: the work of full waves stretches by 1/tail (the shared term
   * already counts only the SMs the blocks occupy) */
  if (tail < 0.999 && waves < 8) {
    t /= tail;
    if (waves < 1) *bound = "under one wave";
    else if (tail < 0.8) *bound = "tail wave";
  }
  if (t < LAUNCH_US) t = LAUNCH_US, *bound = "launch";
  return t;
}

static kpred predict(const gpu_spec *gs, const hot_layer_plan *pl, const launch *l) {
  kpred p = {0};
  const double slots = (double)l->bps * SMS, waves = l->blocks / (slots > 0 ? slots : 1);
  p.tail = waves > 0 ? waves / ceil(waves) : 1.0;
  double hbm = (double)(l->c.bytes_read + l->c.bytes_written), l2 = hbm;
  p.compulsory = hbm;
  if (l->ms && l->ms->unique > 0) l2 = hbm * l->ms->traffic / l->ms->unique; /* sector traffic */
  double l2_mc = l2;
  p.dram = l2; /* every sector from DRAM: no reuse in L2 assumed */
  const hot_gemm_plan *g = l->kp->role == HOT_K_GEMM_GX ? &pl->hq.gemm
                           : l->kp->role == HOT_K_GEMM_GW ? &pl->hla.gemm : NULL;
  const int wgmma = g && plan_gemm_path_info(g->path)->mma == HOT_MMA_WGMMA;
  if (g) {
    /* compulsory: each input read once, C written once (gen/cost.h also counts a segmented
     * GEMM's read-back and rewrite of C at every later segment end: the L2 simulation decides
     * which of those reach DRAM) */
    if (g->segmented && g->seg_k_pad > 0)
      p.compulsory -= 2.0 * (double)(g->k_pad / g->seg_k_pad - 1) * (double)g->m * (double)g->n * 4.0;
    double extra;
    gemm_bytes(g, (int64_t)(slots < l->blocks ? slots : l->blocks), gs->l2_mb, p.compulsory, &l2,
               &l2_mc, &hbm, &extra, &p.dram_modelled);
    if (!wgmma) l2_mc = l2; /* mma.sync paths load with cp.async: no multicast */
    p.dram = hbm;
  }
  const double eff = wgmma ? EFF_WGMMA : EFF_MMA_SYNC;
  p.t_cmp = l->c.int_ops > 0 ? (double)l->c.int_ops / (gs->int8_tops * 1e12 * eff) * 1e6 : 0;
  p.t_hbm = hbm / (gs->hbm_gbs * 1e9 * EFF_HBM) * 1e6;
  p.t_l2 = l2 / (gs->l2_gbs * 1e9) * 1e6;
  p.t_l2_mc = l2_mc / (gs->l2_gbs * 1e9) * 1e6;
  const double sms = l->blocks < SMS ? l->blocks : SMS;
  p.t_smem = sms > 0 ? smem_wavefronts(l) / (sms * SMEM_WF_PER_CLK * gs->clock_ghz * 1e3) : 0;
  p.us = bound_time(p.t_cmp, p.t_hbm, p.t_l2, p.t_smem, p.tail, waves, &p.bound, &p.us_full);
  const char *b_mc;
  double full_mc;
  p.us_mc = bound_time(p.t_cmp, p.t_hbm, p.t_l2_mc, p.t_smem, p.tail, waves, &b_mc, &full_mc);
  return p;
}

/* The launches of one call of a plan, in kd_steps order; returns their number. */
static int call_launches(const hot_layer_plan *pl, hot_call call, const model_tables *t,
                         const char *arch, launch *out, int max) {
  hot_step steps[64];
  const int n = kd_steps(call, steps, 64), row = pl->hq.g.gran == HOT_GRAN_ROW;
  int m = 0;
  for (int i = 0; i < n && m < max; ++i) {
    const hot_step *s = &steps[i];
    const int k = plan_kernel_index(pl, s->role);
    /* every output of a training step: g_x, g_w, and g_b where the layer has a bias */
    const unsigned outputs = HOT_OUT_GX | HOT_OUT_GW | (pl->spec->bias ? HOT_OUT_GB : 0u);
    if (k < 0 || !kd_step_runs(s->when, s->out, row, outputs)) continue;
    launch *l = &out[m++];
    memset(l, 0, sizeof *l);
    l->kp = &pl->kernels[k];
    l->phase = s->phase;
    unsigned grid[3];
    plan_kernel_grid(pl, k, s->phase, grid);
    if (l->kp->persistent && grid[0] > SMS) grid[0] = SMS;
    l->blocks = (double)grid[0] * grid[1] * grid[2];
    if (plan_kernel_cost(pl, s->role, s->phase, row, &l->c) != 0) memset(&l->c, 0, sizeof l->c);
    unsigned st;
    l->regs = regs_of(t, arch, l->kp->name, &st);
    l->smem = l->kp->smem + st;
    l->bps = blocks_per_sm((int)l->kp->block[0], l->regs, l->smem, &l->lim);
    l->ms = counts_of(t, pl, l->kp, s->phase);
  }
  return m;
}

static const char *call_name(hot_call c) {
  return c == HOT_CALL_SAVE ? "save" : c == HOT_CALL_BACKWARD ? "backward" : "calibrate";
}

static void jstr(FILE *f, const char *s) { esc_fputs(f, esc_json, s); }

/* One launch's JSON object for one GPU. */
static void json_launch(FILE *js, const char *layer, hot_call call, const launch *l,
                        const gpu_spec *g, const kpred *p, int *first) {
  fprintf(js, "%s\n    {\"layer\": ", *first ? "" : ",");
  jstr(js, layer);
  fputs(", \"call\": ", js);
  jstr(js, call_name(call));
  fputs(", \"role\": ", js);
  jstr(js, plan_role_name(l->kp->role));
  fputs(", \"kernel\": ", js);
  jstr(js, l->kp->name);
  fprintf(js, ", \"phase\": %d, \"gpu\": ", l->phase);
  jstr(js, g->name);
  fprintf(js, ", \"blocks\": %.0f, \"threads\": %u, \"registers\": %d, \"smem\": %u, "
              "\"blocks_per_sm\": %d, \"limit\": ",
          l->blocks, l->kp->block[0], l->regs, l->smem, l->bps);
  jstr(js, l->lim);
  fprintf(js, ", \"waves\": %.3f, \"persistent\": %d", l->blocks / ((double)l->bps * SMS),
          l->kp->persistent ? 1 : 0);
  if (l->ms)
    fprintf(js, ", \"smem_wavefronts_per_request\": %.3f, \"smem_ideal_per_request\": %.3f, "
                "\"sectors_per_request\": %.3f, \"sectors_ideal_per_request\": %.3f, "
                "\"bytes_per_unique\": %.3f, \"smem_wavefronts\": %.0f",
            l->ms->wsh_wf, l->ms->wsh_ideal, l->ms->wgl_sect, l->ms->wgl_ideal,
            l->ms->unique > 0 ? l->ms->traffic / l->ms->unique : 0.0, smem_wavefronts(l));
  fprintf(js, ", \"dram_bytes\": %.0f, \"compulsory_bytes\": %.0f, \"dram_per_compulsory\": %.3f, "
              "\"dram_modelled\": ",
          p->dram, p->compulsory, p->compulsory > 0 ? p->dram / p->compulsory : 0.0);
  jstr(js, p->dram_modelled ? "l2-lru" : "sectors");
  fprintf(js, ", \"us\": %.2f, \"compute_us\": %.2f, \"hbm_us\": %.2f, \"l2_us\": %.2f, "
              "\"smem_us\": %.2f, \"l2_multicast_us\": %.2f, \"us_multicast\": %.2f, \"bound\": ",
          p->us, p->t_cmp, p->t_hbm, p->t_l2, p->t_smem, p->t_l2_mc, p->us_mc);
  jstr(js, p->bound);
  fputc('}', js);
  *first = 0;
}

/* A call's predicted time on one GPU: in all, in the two GEMMs (roles gemm_gx, gemm_gw), and in
 * the other kernels as if every wave were full (kpred.us_full). */
typedef struct {
  double us, gemm, other_full;
  double gemm_mc; /* the GEMMs with the multicast what-if (kpred.us_mc) */
} call_sum;

/* One call's launches (save, backward or calibrate): table rows and JSON; sum gets its totals
 * per GPU. */
static void model_call(FILE *f, FILE *js, const hot_layer_plan *pl, hot_call call,
                       const model_tables *t, const char *arch, const char *layer, int *first,
                       call_sum sum[N_GPUS]) {
  launch ls[64];
  const int n = call_launches(pl, call, t, arch, ls, 64);
  memset(sum, 0, N_GPUS * sizeof *sum);
  for (int i = 0; i < n; ++i) {
    const launch *l = &ls[i];
    char shw[32] = "?", sec[32] = "?", byt[24] = "?", reg[16] = "?";
    if (l->ms) {
      if (l->ms->sh_req > 0) snprintf(shw, sizeof shw, "%.2f/%.2f", l->ms->wsh_wf, l->ms->wsh_ideal);
      else snprintf(shw, sizeof shw, "-");
      snprintf(sec, sizeof sec, "%.2f/%.2f", l->ms->wgl_sect, l->ms->wgl_ideal);
      if (l->ms->unique > 0) snprintf(byt, sizeof byt, "%.2f", l->ms->traffic / l->ms->unique);
    }
    if (l->regs > 0) snprintf(reg, sizeof reg, "%d", l->regs);
    const kpred p0 = predict(&k_gpus[0], pl, l);
    fprintf(f, "  %-9s %-44.44s %2d %8.0f %4u %4s %2d %-13s %6.2f %11s %11s %5s %5.2f%s",
            call_name(call), l->kp->name, l->phase, l->blocks, l->kp->block[0], reg, l->bps,
            l->lim, l->blocks / ((double)l->bps * SMS), shw, sec, byt,
            p0.compulsory > 0 ? p0.dram / p0.compulsory : 0.0, p0.dram_modelled ? "*" : " ");
    for (int gi = 0; gi < N_GPUS; ++gi) {
      const kpred p = predict(&k_gpus[gi], pl, l);
      fprintf(f, " %9.1f %-14s", p.us, p.bound);
      json_launch(js, layer, call, l, &k_gpus[gi], &p, first);
      sum[gi].us += p.us;
      if (l->kp->role == HOT_K_GEMM_GX || l->kp->role == HOT_K_GEMM_GW) {
        sum[gi].gemm += p.us;
        sum[gi].gemm_mc += p.us_mc;
      } else {
        sum[gi].other_full += p.us_full;
      }
    }
    fprintf(f, "\n");
  }
}

/* The arch the model plans for: --arch, else $HOT_ARCH (as the runtime), else the spec's first. */
static int model_arch(const bench_run *run, const hot_model *m, hot_arch *a) {
  const char *name = run->opt.arch ? run->opt.arch : env_get("HOT_ARCH");
  if (!name || !*name) {
    *a = m->archs[0];
    return 0;
  }
  if (plan_arch_parse(name, a) != 0) {
    diag_fprintf(stderr, "hot-bench --model: unknown arch '%s' (--arch or HOT_ARCH)\n", name);
    return -1;
  }
  return 0;
}

/* Totals over the layers, per GPU: HOT's backward, its GEMMs, its other kernels at full waves,
 * cuBLAS BF16's and cuBLASLt FP8's two GEMMs. */
enum { TOT_HOT, TOT_HOT_GEMM, TOT_OTHER_FULL, TOT_BF16, TOT_FP8, TOT_HOT_GEMM_MC, N_TOT };

/* One layer: its plan, its three calls, a line per GPU splitting its predicted backward into the
 * GEMMs and the other kernels beside cuBLAS BF16's two GEMMs; adds them to the totals. */
static int model_layer(const bench_run *run, const hot_model *m, int li, hot_arch arch,
                       const model_tables *t, FILE *f, FILE *js, int *first,
                       double tot[N_TOT][N_GPUS]) {
  hot_layer_spec s = m->layers[run->layers[li].index];
  fields_apply_recipe(&s, m->recipe);
  hot_layer_plan *pl = calloc(1, sizeof *pl);
  char err[256];
  if (!pl || plan_layer(&s, m->batch, m->tokens, m->recipe, arch, run->layers[li].index, pl, err,
                        sizeof err) != 0) {
    diag_fprintf(stderr, "hot-bench --model: layer %s: %s\n", s.name, pl ? err : "out of memory");
    free(pl);
    return 1;
  }
  const hot_arch_caps *caps = plan_arch_caps(pl->arch);
  fputs(" layer ", f);
  esc_fputs(f, esc_text, s.name);
  fprintf(f, " (T %lld, O %lld, I %lld, %s)\n", (long long)pl->T, (long long)pl->O, (long long)pl->I,
          caps ? caps->name : "?");
  call_sum sv[N_GPUS], b[N_GPUS], cal[N_GPUS];
  model_call(f, js, pl, HOT_CALL_SAVE, t, caps ? caps->name : "?", s.name, first, sv);
  model_call(f, js, pl, HOT_CALL_BACKWARD, t, caps ? caps->name : "?", s.name, first, b);
  model_call(f, js, pl, HOT_CALL_CALIBRATE, t, caps ? caps->name : "?", s.name, first, cal);
  const double flops = 2.0 * 2.0 * (double)pl->T * (double)pl->O * (double)pl->I; /* g_x + g_w */
  for (int gi = 0; gi < N_GPUS; ++gi) {
    const double bf16 = flops / (k_gpus[gi].bf16_tf * 1e12 * EFF_CUBLAS) * 1e6;
    fprintf(f, "  = backward on %-8s %8.1f us: GEMMs %8.1f us, other kernels %8.1f us (%.1f at full "
               "waves); cuBLAS BF16 %8.1f us (x%.2f)\n",
            k_gpus[gi].name, b[gi].us, b[gi].gemm, b[gi].us - b[gi].gemm, b[gi].other_full, bf16,
            b[gi].us > 0 ? bf16 / b[gi].us : 0.0);
    tot[TOT_HOT][gi] += b[gi].us;
    tot[TOT_HOT_GEMM][gi] += b[gi].gemm;
    tot[TOT_HOT_GEMM_MC][gi] += b[gi].gemm_mc;
    tot[TOT_OTHER_FULL][gi] += b[gi].other_full;
    tot[TOT_BF16][gi] += bf16;
    tot[TOT_FP8][gi] += flops / (k_gpus[gi].fp8_tf * 1e12 * EFF_CUBLAS) * 1e6;
  }
  free(pl);
  return 0;
}

/* The L2 -> SM bandwidth (TB/s) cuBLAS BF16 needs to run at EFF_CUBLAS of its peak with
 * BASE_TILE_M x BASE_TILE_N tiles: each tile's K step reads its A and B panels (2-byte codes) for
 * 2 tile_m tile_n flops; with `multicast`, pairs of tiles along M share one load of B. The
 * model's own L2 term applied to the baseline, whose efficiency is otherwise an assumption. */
static double l2_need_tbs(const gpu_spec *g, int multicast) {
  const double rows = BASE_TILE_M + (multicast ? BASE_TILE_N / 2.0 : BASE_TILE_N);
  const double flop_per_byte = 2.0 * BASE_TILE_M * BASE_TILE_N / (rows * 2.0);
  return g->bf16_tf * EFF_CUBLAS / flop_per_byte; /* TFLOP/s / (flop/B) = TB/s */
}

int bench_model(const bench_run *run, const hot_model *m, FILE *f) {
  model_tables t;
  hot_arch arch;
  if (model_arch(run, m, &arch) != 0) return 1;
  if (tables_load(&t) != 0) return 1;
  char *jbuf = NULL;
  size_t jlen = 0;
  FILE *js = open_memstream(&jbuf, &jlen);
  if (!js) {
    tables_free(&t);
    return 1;
  }
  fputs("hot-bench --model ", f);
  esc_fputs(f, esc_text, m->name);
  fprintf(f, ": PREDICTED times (no GPU measured them)\n  registers: %s\n  access counts: %s\n",
          t.q_from, t.ms_from);
  fprintf(f, "  (shwf/req: shared wavefronts per request at the worst site / its ideal; sect/req: "
             "32-byte sectors per global request at the worst site / ideal; B/uniq: sector "
             "traffic / unique bytes; ?: not counted)\n");
  fprintf(f, "  (DRAM/c: DRAM bytes / compulsory bytes on the H100's L2; *: a GEMM's tile order through "
             "the LRU L2 model, else B/uniq: every sector from DRAM)\n");
  fprintf(f, "  %-9s %-44s %2s %8s %4s %4s %2s %-13s %6s %11s %11s %5s %6s %9s %-14s %9s %-14s\n",
          "call", "kernel", "ph", "blocks", "thr", "regs", "/SM", "limit", "waves", "shwf/req",
          "sect/req", "B/uniq", "DRAM/c", "H100 us", "bound", "H200 us", "bound");
  int first = 1, rc = 0;
  fputs("{\"model\": ", js);
  jstr(js, m->name);
  fputs(", \"kernels\": [", js);
  double tot[N_TOT][N_GPUS] = {{0}};
  for (int li = 0; li < run->n; ++li) rc |= model_layer(run, m, li, arch, &t, f, js, &first, tot);
  fprintf(js, "\n  ], \"backward\": [");
  fprintf(f, "\n backward of the listed layers (sum of launches), PREDICTED:\n");
  for (int gi = 0; gi < N_GPUS; ++gi) {
    const double h = tot[TOT_HOT][gi], hg = tot[TOT_HOT_GEMM][gi], of = tot[TOT_OTHER_FULL][gi],
                 b = tot[TOT_BF16][gi], e = tot[TOT_FP8][gi];
    fprintf(f, "  %-9s HOT %9.1f us   cuBLAS BF16 (2 GEMMs) %9.1f us (x%.2f)   cuBLASLt FP8 %9.1f us "
               "(x%.2f)   HOT's GEMMs %.1f us, its other kernels %.1f us (%.1f at full waves)\n",
            k_gpus[gi].name, h, b, b / h, e, e / h, hg, h - hg, of);
    const double hm = tot[TOT_HOT_GEMM_MC][gi] + (h - hg), need = l2_need_tbs(&k_gpus[gi], 0),
                 need_mc = l2_need_tbs(&k_gpus[gi], 1);
    fprintf(f, "  %-9s what-if, not built: the wgmma GEMMs in 2-CTA clusters with TMA multicast of "
               "B: HOT's GEMMs %.1f us, backward %.1f us (cuBLAS BF16 x%.2f)%s\n",
            k_gpus[gi].name, tot[TOT_HOT_GEMM_MC][gi], hm, hm > 0 ? b / hm : 0.0,
            tot[TOT_HOT_GEMM_MC][gi] < hg - 0.05 ? ""
                                                 : "; no change: these plans' GEMMs are mma.sync "
                                                   "(no TMA) or not bound by L2");
    fprintf(f, "  %-9s L2 check: cuBLAS BF16 at %.2f of its peak with %.0fx%.0f tiles needs %.2f TB/s "
               "of L2 -> SM, %.2f with a 2-CTA multicast of B; the model's L2: %.2f TB/s\n",
            k_gpus[gi].name, EFF_CUBLAS, BASE_TILE_M, BASE_TILE_N, need, need_mc,
            k_gpus[gi].l2_gbs / 1e3);
    fprintf(js, "%s{\"gpu\": ", gi ? ", " : "");
    jstr(js, k_gpus[gi].name);
    fprintf(js, ", \"hot_us\": %.2f, \"hot_gemm_us\": %.2f, \"hot_other_us\": %.2f, "
                "\"hot_other_full_waves_us\": %.2f, \"cublas_bf16_us\": %.2f, "
                "\"cublaslt_fp8_us\": %.2f, \"hot_gemm_multicast_us\": %.2f, "
                "\"hot_multicast_us\": %.2f, \"cublas_bf16_l2_need_tbs\": %.3f, "
                "\"cublas_bf16_l2_need_multicast_tbs\": %.3f}",
            h, hg, h - hg, of, b, e, tot[TOT_HOT_GEMM_MC][gi], hm, need, need_mc);
  }
  fprintf(js, "]}\n");
  fclose(js);
  fprintf(f, "JSON %s", jbuf);
  free(jbuf);
  tables_free(&t);
  return rc;
}

/* main.c — hot-bench: the CLI, the sizes of each stage, and the order of the stages. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "diag.h"
#include "num.h"
#include "fileio.h" /* --out: a regular file, opened without blocking */
#include "spec.h"

static hot_model g_model; /* the spec, loaded once: names, shapes, recipe, seed */

static const char *usage =
    "usage: hot-bench SPEC [--layer NAME] [--backend auto|cuda|cpu] [--batch N] [--tokens N]\n"
    "                 [--iters N] [--warmup N] [--json] [--out FILE] [--arch ARCH] [--no-jit]\n"
    "                 [--full] [--check-macs N] [--scales] [--paper-diffs [--seeds N] [--gy-scale F]]\n"
    "                 [--gemm-paths [--precompile]] [--memory] [--model] [--help]\n";

static const char *help_text =
    "Runs every layer of SPEC through libhot's public API (hot.h) on seeded Gaussian data and\n"
    "reports, per layer and in total:\n"
    "  correctness  relative Frobenius error of g_x, g_w (and g_b) against the fp64 products\n"
    "               (CPU reference; templates/ref.h); on a GPU also whether the CUDA backend's\n"
    "               saved buffer, g_x, g_w, g_b equal the CPU backend's bit for bit (first step)\n"
    "  memory       bytes of the saved activations (ABC) against an fp32 and a bf16 x\n"
    "  operations   the plan's integer MACs of both GEMMs, their fp32 equivalents, FWHT adds\n"
    "  JIT          cold compile (fresh memory-only cache), store (into an empty disk cache) and\n"
    "               warm load (a second context hitting that cache) of each layer's kernels;\n"
    "               on the CPU backend the kernels are compiled for --arch (NVRTC, no GPU)\n"
    "  speed (GPU)  HOT backward (all kernels) and forward (ABC) against cuBLAS g_x = g_y w and\n"
    "               g_w = g_y^T x in BF16 (fp32 accumulate), FP32 and FP32+TF32: CUDA events,\n"
    "               warm-up excluded, median and p10/p90 of --iters runs, input buffers rotated\n"
    "               over more than 2x the L2 size (cold L2); ceilings of the same run: a\n"
    "               device-to-device copy, 8192^3 BF16 and INT8 cuBLAS GEMMs and an 8192^3\n"
    "               cuBLASLt FP8 GEMM\n"
    "  FP8 (GPU)    the same two products with cuBLASLt in FP8 (compute capability 8.9 and\n"
    "               newer): e4m3 operands with per-tensor scales, fp32 accumulation, bf16 out,\n"
    "               T, O, I rounded up to multiples of 16. Timed: the two GEMMs only, on\n"
    "               operands already cast to e4m3 and transposed into cuBLASLt's TN form (the\n"
    "               amax, cast and transpose passes an FP8 pipeline also pays are not timed);\n"
    "               128 sampled entries of each output are checked against fp64. Without\n"
    "               cuBLASLt, on an older GPU or on the CPU backend the FP8 figures are null\n"
    "               with the reason (JSON fp8_reason)\n"
    "  per kernel   (GPU) each launch of up to 20 profiled saves and backwards: median ms and\n"
    "               the rate its compulsory bytes / integer ops imply (gen/cost.h), as GB/s of\n"
    "               the copy ceiling or TOP/s of the INT8 one\n"
    "Without a GPU it runs on the CPU backend, says so in its first line and measures no speed.\n"
    "\n"
    "Sizes: memory, operation counts, JIT and speed use the spec's batch and tokens (or --batch,\n"
    "--tokens). The correctness check runs the CPU reference (plain C, single thread), so it is\n"
    "capped: when T*O*I exceeds --check-macs (default 2^30) the check uses a smaller batch\n"
    "(unless --batch is given), then fewer tokens per sample (unless --tokens is given; at least\n"
    "64). The table prints the checked T. --full checks at the benchmark size whatever it costs.\n"
    "On a GPU the bit-exactness check runs at the checked size too.\n"
    "\n"
    "Options:\n"
    "  --layer NAME     only this layer\n"
    "  --backend B      auto (CUDA when a driver and a device work, else CPU), cuda (fail\n"
    "                   when CUDA is unusable), cpu; default: $HOT_BACKEND, else auto\n"
    "  --batch N        samples per step (default: the spec's; at most 16777216)\n"
    "  --tokens N       tokens per sample (default: the spec's; at most 536870912)\n"
    "  --iters N        timed runs per GPU measurement (default 50, at most 100000); --warmup N\n"
    "                   (default 5, at most 1000)\n"
    "  --json           JSON on stdout instead of the table; --out FILE also writes it to FILE\n"
    "                   (the benchmark and --gemm-paths; the other modes print their table)\n"
    "  --arch ARCH      JIT arch on the CPU backend (default $HOT_ARCH, else a spec's default)\n"
    "  --no-jit         skip the JIT figures\n"
    "  --full           correctness at the benchmark size (slow on large layers)\n"
    "  --check-macs N   cap of T*O*I for the correctness check (default 1073741824)\n"
    "  --scales         instead of the benchmark: per layer and data kind (gaussian;\n"
    "                   channels: 4 channels x20; tokens: 4 tokens x20), the g_x error with g'\n"
    "                   per tensor (one scale for all B samples), per sample and per token,\n"
    "                   LQS's pick, and the g_w error, on the CPU twins against fp64 (B = the\n"
    "                   spec's batch, at most 4, or --batch; L cut until T*O*I <= --check-macs\n"
    "                   / 8 unless --tokens)\n"
    "  --paper-diffs    instead of the benchmark: every layer planned with recipe paper_code\n"
    "                   (B = --batch, else 4; L = --tokens, else the spec's, never cut: p\n"
    "                   depends on L), the g_x and g_w errors against fp64 of a what-if\n"
    "                   backward with hot's numerics (checked bit for bit against the CPU\n"
    "                   twins) and with each remaining difference from the authors' code in\n"
    "                   their form (a: scales + 1e-11, b: SAWB sums in fp32, c: x^ and g^ per\n"
    "                   sample, d: g_w summed in fp32 per sample, e: sign-magnitude SR with\n"
    "                   another generator), alone and together, on Gaussian x and on x as\n"
    "                   random walks along tokens; mean and sd over the seeds; the row\n"
    "                   redraw (hot with another Philox key) is the yardstick of e\n"
    "  --seeds N        seeds of --paper-diffs (default 8, at most 256)\n"
    "  --gy-scale F     --paper-diffs: g_y drawn as F * N(0, 1) (default 1; real gradients are\n"
    "                   small, which is where a + 1e-11 on the scales shows)\n"
    "  --gemm-paths     instead of the benchmark (9.0 GPU): each layer planned on every GEMM\n"
    "                   path of a 9.0 device (mma.sync on the portable arch; wgmma by cp.async\n"
    "                   and by the TMA on the arch-specific one, tile_gx/tile_gw.warps_n = 1\n"
    "                   and 2; --precompile names them) and run on the same inputs: g_x and g_w\n"
    "                   compared bit for bit across the paths and with the CPU backend (at the\n"
    "                   check size), the two GEMM launches of each path timed (profiling: CUDA\n"
    "                   events around each launch; --iters, --warmup), cuBLAS BF16 and cuBLASLt\n"
    "                   FP8 GEMMs of the same products timed beside them; per layer and product\n"
    "                   a row per path: kernel, M x N x K, ms, TOP/s, % of the INT8 cuBLAS\n"
    "                   ceiling of the same run, xBF16 and xFP8 (their ms / the path's). On the\n"
    "                   CPU backend or a device that is not 9.0 it says so and skips (exit 0);\n"
    "                   exit 2 when a path cannot be planned, fails or gives other bits\n"
    "  --precompile     with --gemm-paths: compile every kernel it would launch into the kernel\n"
    "                   cache of $HOT_CACHE_DIR (no driver, no GPU) and exit\n"
    "  --model          instead of the benchmark, no GPU: per kernel of each layer's save,\n"
    "                   backward and calibration (arch: --arch, else $HOT_ARCH, else the\n"
    "                   spec's), occupancy, waves, the emulators' access counts and a\n"
    "                   PREDICTED time on H100 SXM / H200 (roofline with a shared-memory\n"
    "                   term, docs/gpu-model.md), then each layer's backward split into its\n"
    "                   GEMMs and other kernels beside cuBLAS BF16, a what-if (the wgmma\n"
    "                   GEMMs with a 2-CTA TMA multicast, not built) and the L2 bandwidth\n"
    "                   the baseline itself needs; table and a JSON line.\n"
    "                   Tables compiled in; HOT_KERNEL_QUALITY, HOT_MEMSTAT_COUNTS name\n"
    "                   other files\n"
    "  --memory         instead of the benchmark: per layer, under the spec's recipe and\n"
    "                   paper_code, at B = 1, 4 and the spec's batch (or --batch): a real save\n"
    "                   (CPU backend) into a buffer of exactly hot_layer_saved_bytes, against\n"
    "                   the method's count K.I int8 + one fp32 scale per group and an fp32 x,\n"
    "                   and whether the backward unpacks the codes for the g_w GEMM (bytes);\n"
    "                   exit 2 when a buffer exceeds 1.05x the method's count\n"
    "Environment: as libhot (HOT_DEVICE, HOT_SEED, HOT_CUDA_HOME, HOT_CUDA_DRIVER, ...).\n"
    "Exit status: 0 every layer ran; 2 a layer failed or is unsupported on this backend (the\n"
    "table says which and why); 1 bad arguments, a bad spec, or --backend cuda without CUDA.\n";

/* An integer option in [lo, hi] (num.h: decimal or 0x hex). 0, or -1 (said). */
static int parse_int_opt(const char *a, const char *v, uint64_t lo, uint64_t hi, int64_t *out) {
  uint64_t k = 0;
  char err[160];
  if (num_parse_u64(a, v, lo, hi, &k, err, sizeof err) != 0) {
    diag_fprintf(stderr, "hot-bench: %s\n", err);
    return -1;
  }
  *out = (int64_t)k;
  return 0;
}

#define NEED_VALUE                                                       \
  if (!v) {                                                              \
    diag_fprintf(stderr, "hot-bench: %s needs a value\n%s", a, usage);        \
    return -1;                                                           \
  }

/* --batch, --tokens, --iters, --warmup, --check-macs: an integer in its range (--batch and
 * --tokens: the spec's own ranges, so B * L never overflows). 0, or -1 (said). */
static int parse_count(bench_opts *o, const char *a, const char *v) {
  static const struct { const char *name; uint64_t lo, hi; } k_counts[] = {
      {"--batch", 1, (uint64_t)1 << 24}, {"--tokens", 1, (uint64_t)1 << 29},
      {"--iters", 1, 100000},           {"--warmup", 0, 1000},
      {"--check-macs", 1, (uint64_t)1 << 40}};
  size_t c = 0;
  while (strcmp(a, k_counts[c].name)) ++c; /* parse_one calls it for these names only */
  int64_t k;
  if (parse_int_opt(a, v, k_counts[c].lo, k_counts[c].hi, &k) != 0) return -1;
  if (c == 0) o->batch = k;
  else if (c == 1) o->tokens = k;
  else if (c == 2) o->iters = (int)k;
  else if (c == 3) o->warmup = (int)k;
  else o->check_macs = (double)k;
  return 0;
}

/* --backend, --arch, --seeds, --gy-scale: checked values. 0, or -1 (said). */
static int parse_checked(bench_opts *o, const char *a, const char *v) {
  int64_t k;
  if (!strcmp(a, "--backend")) {
    if (!strcmp(v, "auto")) o->backend = HOT_BACKEND_AUTO;
    else if (!strcmp(v, "cuda")) o->backend = HOT_BACKEND_CUDA;
    else if (!strcmp(v, "cpu")) o->backend = HOT_BACKEND_CPU;
    else { diag_fprintf(stderr, "hot-bench: --backend must be auto, cuda or cpu (got '%s')\n", v); return -1; }
  } else if (!strcmp(a, "--arch")) {
    hot_arch ar;
    if (plan_arch_parse(v, &ar) != 0) {
      char known[128];
      diag_fprintf(stderr, "hot-bench: --arch: unknown arch '%s' (known: %s)\n", v,
                   plan_arch_list(known, sizeof known, ", "));
      return -1;
    }
    o->arch = v;
  } else if (!strcmp(a, "--seeds")) {
    if (parse_int_opt(a, v, 1, 256, &k) != 0) return -1;
    o->seeds = (int)k;
  } else { /* --gy-scale */
    char err[160];
    if (num_parse_double(a, v, 1e-30, 1e30, &o->gy_scale, err, sizeof err) != 0) {
      diag_fprintf(stderr, "hot-bench: %s\n", err);
      return -1;
    }
  }
  return 0;
}

/* The switches without a value: 1 when `a` is one (its field set), else 0. */
static int set_flag(bench_opts *o, const char *a) {
  const struct { const char *name; int *field; int value; } flags[] = {
      {"--json", &o->json, 1},         {"--no-jit", &o->jit, 0},
      {"--full", &o->full, 1},         {"--scales", &o->scales, 1},
      {"--paper-diffs", &o->paper_diffs, 1}, {"--gemm-paths", &o->gemm_paths, 1},
      {"--precompile", &o->precompile, 1},   {"--memory", &o->memory, 1},
      {"--model", &o->model, 1}};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; ++i)
    if (!strcmp(a, flags[i].name)) {
      *flags[i].field = flags[i].value;
      return 1;
    }
  return 0;
}

/* One argument (v: the next one, or NULL); *used = 1 when v was taken. 0, or -1 (said). */
static int parse_one(bench_opts *o, const char *a, const char *v, int *used) {
  *used = 0;
  if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
    printf("%s\n%s", usage, help_text);
    exit(0);
  }
  if (!strcmp(a, "--layer") || !strcmp(a, "--out") || !strcmp(a, "--batch") ||
      !strcmp(a, "--tokens") || !strcmp(a, "--iters") || !strcmp(a, "--warmup") ||
      !strcmp(a, "--check-macs") || !strcmp(a, "--backend") || !strcmp(a, "--arch") ||
      !strcmp(a, "--seeds") || !strcmp(a, "--gy-scale")) {
    NEED_VALUE
    *used = 1;
    if (!*v && !strcmp(a, "--layer")) { /* the others' parsers name an empty value */
      diag_fprintf(stderr, "hot-bench: --layer needs a value (got an empty one)\n");
      return -1;
    }
    if (!strcmp(a, "--layer")) o->layer = v;
    else if (!strcmp(a, "--out")) o->out = v;
    else if (!strcmp(a, "--backend") || !strcmp(a, "--arch") || !strcmp(a, "--seeds") ||
             !strcmp(a, "--gy-scale"))
      return parse_checked(o, a, v);
    else return parse_count(o, a, v);
  } else if (set_flag(o, a)) { /* a switch without a value */
  } else if (a[0] == '-' && a[1]) {
    diag_fprintf(stderr, "hot-bench: unknown option %s\n%s", a, usage);
    return -1;
  } else if (!o->spec) { o->spec = a;
  } else {
    diag_fprintf(stderr, "hot-bench: one SPEC only (got '%s' and '%s')\n%s", o->spec, a, usage);
    return -1;
  }
  return 0;
}
#undef NEED_VALUE

/* 1 when the option a is one of the list ("--a, --b and --c"), else 0. */
static int option_listed(const char *list, const char *a) {
  size_t n = strlen(a);
  for (const char *p = strstr(list, a); p; p = strstr(p + 1, a))
    if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == ' ' || !p[n])) return 1;
  return 0;
}

/* An option the chosen mode would not read is refused, not ignored: --seeds and --gy-scale
 * belong to --paper-diffs; --model reads SPEC, --layer and --arch only (it plans the spec's
 * batch and tokens, at which the access counts were taken); --scales, --paper-diffs and
 * --memory the lists of unread_option; --precompile writes no report. mode, reads: the table
 * mode given and the value options it reads (NULL: none given). 0, or -1 (said). */
static int unread_value(const bench_opts *o, const char *a, const char *mode, const char *reads) {
  if (o->model && strcmp(a, "--layer") && strcmp(a, "--arch")) {
    diag_fprintf(stderr, "hot-bench: --model does not read %s (it plans the spec's batch and "
                 "tokens; it reads --layer and --arch)\n", a);
    return -1;
  }
  if (!o->paper_diffs && (!strcmp(a, "--seeds") || !strcmp(a, "--gy-scale"))) {
    diag_fprintf(stderr, "hot-bench: %s is an option of --paper-diffs (not given)\n", a);
    return -1;
  }
  if (mode && !option_listed(reads, a)) {
    diag_fprintf(stderr, "hot-bench: %s does not read %s (it reads %s)\n", mode, a, reads);
    return -1;
  }
  return 0;
}

/* The flags (--json, --full, --no-jit; --out for --precompile) under the same rules. */
static int unread_flag(const bench_opts *o, const char *mode, const char *reads) {
  const char *flag = o->json ? "--json" : o->full ? "--full" : !o->jit ? "--no-jit" : NULL;
  if (o->model && flag) {
    diag_fprintf(stderr, "hot-bench: --model does not read %s (%s)\n", flag,
                 o->json ? "its table ends with a JSON line" : "an option of the benchmark");
    return -1;
  }
  if (mode && flag) {
    diag_fprintf(stderr, "hot-bench: %s does not read %s (it reads %s)\n", mode, flag, reads);
    return -1;
  }
  if (o->precompile && (o->out || o->json)) {
    diag_fprintf(stderr, "hot-bench: --precompile does not read %s (it fills the kernel cache and "
                 "writes no report)\n", o->json ? "--json" : "--out");
    return -1;
  }
  return 0;
}

/* unread_value for each value option given (seen), then unread_flag. --scales, --paper-diffs
 * and --memory print their own table on stdout (no --json, no --out) from the CPU twins: no
 * backend, no timing, no JIT. 0, or -1 (said). */
static int unread_option(const bench_opts *o, const char *const *seen, int n_seen) {
  const char *mode = o->scales ? "--scales" : o->paper_diffs ? "--paper-diffs" : o->memory ? "--memory" : NULL;
  const char *reads = o->scales        ? "--layer, --batch, --tokens and --check-macs"
                      : o->paper_diffs ? "--layer, --batch, --tokens, --seeds and --gy-scale"
                                       : "--layer, --batch and --tokens";
  for (int k = 0; k < n_seen; ++k)
    if (unread_value(o, seen[k], mode, reads)) return -1;
  return unread_flag(o, mode, reads);
}

static int parse_args(int argc, char **argv, bench_opts *o) {
  memset(o, 0, sizeof *o);
  o->backend = HOT_BACKEND_DEFAULT; /* $HOT_BACKEND, else auto */
  o->iters = 50;
  o->warmup = 5;
  o->jit = 1;
  o->check_macs = 1073741824.0;
  const char *seen[16]; /* the value options given so far: each at most once */
  int n_seen = 0;
  for (int i = 1; i < argc; ++i) {
    int used;
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (parse_one(o, a, v, &used) != 0) return -1;
    if (used) {
      for (int k = 0; k < n_seen; ++k)
        if (!strcmp(seen[k], a)) {
          diag_fprintf(stderr, "hot-bench: %s given twice\n", a);
          return -1;
        }
      if (n_seen < (int)(sizeof seen / sizeof seen[0])) seen[n_seen++] = a;
    }
    i += used;
  }
  if (!o->spec) {
    diag_fprintf(stderr, "hot-bench: no SPEC given\n%s", usage);
    return -1;
  }
  if (o->precompile && !o->gemm_paths) {
    diag_fprintf(stderr, "hot-bench: --precompile is a part of --gemm-paths (add it)\n");
    return -1;
  }
  const int modes = o->scales + o->paper_diffs + o->gemm_paths + o->memory + o->model;
  if (modes > 1) {
    diag_fprintf(stderr, "hot-bench: --scales, --paper-diffs, --gemm-paths, --memory and --model are modes of "
            "their own: give one\n");
    return -1;
  }
  return unread_option(o, seen, n_seen);
}

/* Sizes of one layer: the benchmark's (B, L) and the correctness check's (cB, cL). */
static void layer_sizes(const bench_opts *o, bench_layer *bl, const hot_layer_spec *s) {
  bl->B = o->batch ? o->batch : g_model.batch;
  bl->L = o->tokens ? o->tokens : (s->tokens ? s->tokens : g_model.tokens);
  bl->T = bl->B * bl->L;
  bl->O = s->out_features;
  bl->I = s->in_features;
  bl->cB = bl->B;
  bl->cL = bl->L;
  double w = (double)bl->O * (double)bl->I, cap = o->check_macs;
  if (!o->full && (double)bl->T * w > cap) {
    if (!o->batch) {
      double b = cap / ((double)bl->L * w);
      bl->cB = b < 1 ? 1 : (int64_t)b;
    }
    if ((double)(bl->cB * bl->cL) * w > cap && !o->tokens) {
      double l = cap / ((double)bl->cB * w);
      int64_t floor_l = bl->L < 64 ? bl->L : 64;
      bl->cL = l < (double)floor_l ? floor_l : (int64_t)l;
    }
  }
  bl->cT = bl->cB * bl->cL;
}

static void plan_figures(bench_layer *bl, const hot_layer_plan *pl) {
  bl->dt = pl->spec->dtype;
  bl->abc_bytes = pl->abc.enabled ? pl->abc.bytes : pl->abc.fp32_bytes;
  bl->fp32_bytes = pl->abc.fp32_bytes;
  bl->bf16_bytes = pl->abc.bf16_bytes;
  bl->gx_macs = pl->ops.gx_macs;
  bl->gw_macs = pl->ops.gw_macs;
  bl->fp32_gx_macs = pl->ops.fp32_gx_macs;
  bl->fp32_gw_macs = pl->ops.fp32_gw_macs;
  bl->fwht_adds = pl->ops.fwht_adds;
  bl->hq_b = pl->hq.enabled ? pl->hq.block : 0;
  bl->hla_p = pl->hla.enabled ? pl->hla.block : 0;
  bl->hla_r = pl->hla.enabled ? pl->hla.rank : 0;
  bl->hla_blocks = pl->hla.enabled ? (int)pl->hla.blocks : 0;
}

/* Loads the spec into g_model and lists the layers to run into run->layers. Returns 0, or 1
 * (said). */
static int load_layers(bench_run *run) {
  const bench_opts *o = &run->opt;
  hot_diag dg = {0};
  if (spec_load_file(o->spec, NULL, &g_model, &dg) != 0) {
    for (int i = 0; i < dg.count; ++i) diag_fprintf(stderr, "%s\n", dg.lines[i]);
    if (!dg.count) diag_fprintf(stderr, "hot-bench: %s: cannot load the spec\n", o->spec);
    diag_free(&dg);
    return 1;
  }
  diag_free(&dg);
  snprintf(run->model, sizeof run->model, "%s", g_model.name);
  snprintf(run->recipe, sizeof run->recipe, "%s", plan_recipe_name(g_model.recipe));
  run->seed = g_model.seed;
  const char *se = env_get("HOT_SEED"); /* checked by hot_ctx_create (env.h): the same parser */
  uint64_t seed = 0;
  char serr[160];
  if (se && num_parse_u64("HOT_SEED", se, 0, UINT64_MAX, &seed, serr, sizeof serr) == 0)
    run->seed = seed;

  run->layers = calloc((size_t)g_model.n_layers + 1, sizeof *run->layers);
  if (!run->layers) {
    diag_fprintf(stderr, "hot-bench: out of memory\n");
    return 1;
  }
  for (int i = 0; i < g_model.n_layers; ++i) {
    const hot_layer_spec *s = &g_model.layers[i];
    if (o->layer && strcmp(o->layer, s->name) != 0) continue;
    bench_layer *bl = &run->layers[run->n++];
    snprintf(bl->name, sizeof bl->name, "%s", s->name);
    bl->index = i;
    bl->bias = s->bias;
    bl->bitexact = -1;
    bl->fp8_gx_err = bl->fp8_gw_err = -1;
    snprintf(bl->fp8_reason, sizeof bl->fp8_reason, "not measured: CPU backend (no GPU)");
    layer_sizes(o, bl, s);
  }
  if (!run->n) {
    char names[HOT_MSG_MAX];
    diag_fprintf(stderr, "hot-bench: %s: no layer '%s' (layers: %s)\n", o->spec, o->layer ? o->layer : "",
                 diag_names(names, sizeof names, g_model.n_layers, spec_layer_name, &g_model));
    return 1;
  }
  return 0;
}

/* The context of the run and, on CUDA, the benchmark's device side (*gpu); the run's backend,
 * device and arch, and the JIT arch on the CPU (*jit_arch). Returns 0, or 1 (said; *ctx
 * destroyed). */
static int open_backend(bench_run *run, hot_ctx **ctx, bench_gpu **gpu, const char **jit_arch) {
  const bench_opts *o = &run->opt;
  char err[600];
  hot_status st = bench_ctx_open(ctx, run, o->backend, NULL, 0, NULL, err, sizeof err);
  if (st != HOT_OK) {
    const char *eb = env_get("HOT_BACKEND");
    if (o->backend == HOT_BACKEND_DEFAULT)
      diag_fprintf(stderr, "hot-bench: HOT_BACKEND=%s: %s: %s\n", eb && *eb ? eb : "(unset: auto)",
              hot_status_name(st), err);
    else
      diag_fprintf(stderr, "hot-bench: --backend %s: %s: %s\n", hot_backend_name(o->backend),
              hot_status_name(st), err);
    hot_ctx_destroy(*ctx);
    return 1;
  }
  hot_stats hs;
  hot_ctx_stats(*ctx, &hs);
  run->backend = hs.backend;
  snprintf(run->fallback, sizeof run->fallback, "%s", hs.fell_back ? hs.fallback_reason : "");
  snprintf(run->device, sizeof run->device, "%s", hs.device_name);
  if (run->backend == HOT_BACKEND_CUDA) {
    snprintf(run->arch, sizeof run->arch, "%s", hs.arch);
    *gpu = bench_gpu_open(err, sizeof err);
    if (!*gpu) {
      diag_fprintf(stderr, "hot-bench: CUDA backend, but the benchmark's device setup failed: %s\n", err);
      hot_ctx_destroy(*ctx);
      return 1;
    }
  } else {
    const char *ea = env_get("HOT_ARCH");
    *jit_arch = o->arch ? o->arch : (ea && *ea ? ea : plan_arch_caps(HOT_ARCH_DEFAULT)->name);
    snprintf(run->arch, sizeof run->arch, "%s", *jit_arch);
  }
  return 0;
}

/* The date and host of the run, and the first line, which says which backend runs (stderr too,
 * for long runs). */
static void announce(bench_run *run) {
  time_t now = time(NULL);
  strftime(run->date, sizeof run->date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  if (gethostname(run->host, sizeof run->host) != 0) snprintf(run->host, sizeof run->host, "?");
  run->host[sizeof run->host - 1] = 0;
  char first[800];
  if (run->backend == HOT_BACKEND_CPU)
    snprintf(first, sizeof first, "hot-bench: CPU backend%s%s%s - correctness, memory, operation "
             "counts and JIT only; no speed is measured without a GPU",
             run->fallback[0] ? " (no GPU: " : "", run->fallback, run->fallback[0] ? ")" : "");
  else
    snprintf(first, sizeof first, "hot-bench: CUDA backend on %s (%s)", run->device, run->arch);
  /* once on the screen: on stderr (for long runs) unless stdout, which gets the report's first
   * line, is the same file or terminal */
  struct stat so, se;
  int same = fstat(1, &so) == 0 && fstat(2, &se) == 0 && so.st_dev == se.st_dev && so.st_ino == se.st_ino;
  if (run->opt.json || !same) diag_fprintf(stderr, "%s\n", first);
  if (!run->opt.json) {
    printf("%s\n", first);
    fflush(stdout);
  }
}

/* Every stage of one layer: plan figures, JIT, the CPU check, and on a GPU bit-exactness and
 * speed. Its status says the first failure. */
static void bench_one(bench_run *run, hot_ctx *ctx, bench_gpu *gpu, const char *jit_arch, int li) {
  bench_layer *bl = &run->layers[li];
  char err[600];
  double t0 = bench_now_ms();
  diag_fprintf(stderr, "[%d/%d] %s: T=%lld O=%lld I=%lld", li + 1, run->n, bl->name, (long long)bl->T,
          (long long)bl->O, (long long)bl->I);
  /* Plan figures at the benchmark size. */
  hot_layer *layer = NULL;
  hot_status st = bench_layer_open(ctx, run, bl, bl->B, bl->L, &layer, err, sizeof err);
  if (st != HOT_OK) {
    fileio_msgf(bl->status, sizeof bl->status, "layer: %s: %s", hot_status_name(st), err);
    diag_fprintf(stderr, " - %s\n", bl->status);
    return;
  }
  plan_figures(bl, hot_layer_get_plan(layer));
  hot_layer_destroy(layer);
  if (run->opt.jit) {
    diag_fprintf(stderr, ", jit");
    bench_jit(run, bl, run->backend, jit_arch);
    if (bl->have_jit) diag_fprintf(stderr, " %.0f ms cold, %.1f ms warm", bl->jit_cold_ms, bl->jit_warm_ms);
  }
  /* Correctness at the check size. */
  diag_fprintf(stderr, ", cpu check T=%lld", (long long)bl->cT);
  tooldata d;
  if (tooldata_make(&d, bl->cT, bl->O, bl->I, run->seed, bl->index, bl->dt) != 0) {
    snprintf(bl->status, sizeof bl->status, "out of host memory for T=%lld", (long long)bl->cT);
    diag_fprintf(stderr, " - %s\n", bl->status);
    return;
  }
  bench_outputs ref;
  memset(&ref, 0, sizeof ref);
  int ok = bench_check_cpu(run, bl, &d, gpu ? run->arch : NULL, gpu ? &ref : NULL) == 0;
  if (ok) diag_fprintf(stderr, " (%.0f ms)", bl->cpu_ref_ms);
  if (gpu) {
    diag_fprintf(stderr, ", gpu");
    if (ok) bench_gpu_bitexact(gpu, run, bl, &d, &ref);
    bench_gpu_speed(gpu, ctx, run, bl);
  }
  bench_outputs_free(&ref);
  tooldata_free(&d);
  diag_fprintf(stderr, " - %s (%.1f s)\n", bl->status[0] ? bl->status : "ok", (bench_now_ms() - t0) / 1e3);
}

static int write_json(FILE *f, const void *run) { return bench_report_json(run, f); }

/* The report on stdout (table or JSON) and in --out. Returns 1 when --out cannot be written,
 * else 0. */
static int write_reports(const bench_run *run) {
  const bench_opts *o = &run->opt;
  int rc = 0;
  if (o->json) bench_report_json(run, stdout);
  else bench_report_table(run, stdout);
  if (o->out) rc = bench_write_out(o->out, write_json, run);
  return rc;
}

int main(int argc, char **argv) {
  bench_run run;
  memset(&run, 0, sizeof run);
  run.spec_model = &g_model;
  if (parse_args(argc, argv, &run.opt) != 0) return 1;
  char owhy[256];
  if (run.opt.out && fileio_check_output(run.opt.out, 0, owhy, sizeof owhy) != 0) {
    /* said now, before any work, not after the whole run */
    diag_fprintf(stderr, "hot-bench: --out %s: %s\n", run.opt.out, owhy);
    return 1;
  }
  double t_start = bench_now_ms();
  bench_opts *o = &run.opt;
  if (load_layers(&run) != 0) {
    free(run.layers);
    spec_model_free(&g_model);
    return 1;
  }

  if (o->model) { /* predicted times from the plan (model.c): no backend at all */
    int mrc = bench_model(&run, &g_model, stdout);
    free(run.layers);
    spec_model_free(&g_model);
    return mrc;
  }

  if (o->memory) { /* saved bytes of real saves: CPU backend, no timing */
    int mrc = bench_memory(&run, &g_model, stdout);
    free(run.layers);
    spec_model_free(&g_model);
    return mrc;
  }

  if (o->scales || o->paper_diffs) { /* accuracy comparisons: CPU twins only */
    int src = o->scales ? bench_scales(&run, &g_model, stdout)
                        : bench_paper_diffs(&run, &g_model, stdout);
    free(run.layers);
    spec_model_free(&g_model);
    return src;
  }

  if (o->gemm_paths && o->precompile) { /* no driver, no GPU: the kernels into the cache */
    int prc = bench_gemm_paths_precompile(&run);
    free(run.layers);
    spec_model_free(&g_model);
    return prc;
  }

  hot_ctx *ctx = NULL;
  bench_gpu *gpu = NULL;
  const char *jit_arch = NULL;
  if (open_backend(&run, &ctx, &gpu, &jit_arch) != 0) {
    free(run.layers);
    spec_model_free(&g_model);
    return 1;
  }
  announce(&run);
  if (o->gemm_paths) { /* the GEMM paths of a 9.0 device side by side (paths.c) */
    int prc = bench_gemm_paths(&run, gpu);
    bench_gpu_close(gpu);
    hot_ctx_destroy(ctx);
    free(run.layers);
    spec_model_free(&g_model);
    return prc;
  }

  if (gpu) {
    diag_fprintf(stderr, "hot-bench: ceilings (copy bandwidth, cuBLAS BF16/INT8 and cuBLASLt FP8 8192^3)...\n");
    bench_gpu_ceilings(gpu, &run);
  }
  if (o->jit) {
    diag_fprintf(stderr, "hot-bench: whole-spec cold JIT (%s)...\n", jit_arch ? jit_arch : run.arch);
    bench_jit_spec(&run, run.backend, jit_arch);
  }
  for (int li = 0; li < run.n; ++li) bench_one(&run, ctx, gpu, jit_arch, li);
  run.wall_s = (bench_now_ms() - t_start) / 1e3;

  int rc = 0;
  for (int i = 0; i < run.n; ++i)
    if (run.layers[i].status[0]) rc = 2;
  if (write_reports(&run) != 0) rc = 1;
  bench_gpu_close(gpu);
  hot_ctx_destroy(ctx);
  free(run.layers);
  spec_model_free(&g_model);
  return rc;
}

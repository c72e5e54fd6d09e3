/* fast_bench.c — the C side of bench/cpu_backward.py (loaded with ctypes; a benchmark, not a
 * test): one layer planned like the CPU backend plans it (recipe, sm_80 storage), random data,
 * the forward save, then the backward timed through the reference twins or the fast path.
 *
 *   int hot_fast_bench(int path, long long B, long long L, long long O, long long I, int recipe,
 *                      int threads, int reps, double *best_s, unsigned *checksum)
 * path 0: ref_layer_backward (single-threaded twins); 1: fast_layer_backward with `threads`
 * threads (0: fast_threads()'s default); 2: fast_exact_gx + fast_exact_gw (fp64), 3: the same
 * through ref_exact_gx/gw. Writes the best of `reps` wall times in seconds and a checksum of
 * the output bits (equal for paths 0 and 1, and for 2 and 3). Returns 0, or -1 with a message on
 * stderr. hot_fast_bench_cpu (same arguments, then double *best_cpu) also writes the best
 * process CPU time of the timed calls (all threads).
 *
 *   void *hot_fast_bench_open(long long B, long long L, long long O, long long I, int recipe,
 *                             int threads)
 *   int hot_fast_bench_run(void *layer, int path, double *wall, double *cpu)
 *   unsigned hot_fast_bench_checksum(void *layer, int path)
 *   void hot_fast_bench_close(void *layer)
 * The same, one run at a time on a layer that stays set up between runs (data, outputs, the
 * fast path's scratch blocks): a run is the forward save (not timed), then the timed backward
 * of `path`, so that a caller can alternate runs with another library's, each in its steady
 * state.
 *
 *   int hot_fast_bench_stages(long long B, long long L, long long O, long long I, int recipe,
 *                             int threads, int reps, double *wall, double *cpu, int n, char *plan,
 *                             int cap)
 * Runs path 1 `reps` times with the stage profile on (fast_profile) and writes the per-stage
 * wall and process CPU seconds of one backward (the sums over the reps divided by reps) into
 * wall[0 .. n) and cpu[0 .. n) (n at most FAST_ST_COUNT; the names come from
 * hot_fast_stage_name) and a one-line summary of the plan
 * (block sizes, bits, GEMM sizes) into plan[cap]. Returns 0, or -1 with a message on stderr.
 *
 *   int hot_fast_bench_gemm_epi(long long M, long long N, long long K, int qa, int qb,
 *                               int b_kmajor, int epi, int threads, int reps, double *best_wall,
 *                               double *best_tiles, unsigned *checksum)
 * The integer GEMM alone (fast_igemm at the current level, one segment, random codes within qa
 * and qb, A row-major; B read k-major when b_kmajor, as the g_x GEMM reads q_w'): the best wall
 * seconds of `reps` runs, whole and of the tiles phase alone (the kernel's tiles and the
 * epilogue, without the packing; the GEMM's profile stages). epi picks the epilogue: 0 one that
 * folds the int32 sums into the checksum; 1 none (what the GEMM's own loop reaches); 2 the g_x
 * GEMM's (the level's scale_tile: int32 to fp32 times a per-row scale, into a 64-byte aligned
 * M x N fp32 output, as HOTLinear's g_x), the checksum then of the output's bits.
 *
 *   void hot_fast_bench_amx_pack_all(int on)
 * 1: the AMX GEMM packs every A panel (fast_amx_pack_all); 0 (default): it reads A's tiles in
 * place where A runs along k in whole 64-k blocks. For comparing the two in one process.
 *
 *   int hot_fast_bench_int8_peak(int reps, double *macs_s, char *name, int cap)
 * The register-only integer multiply-add rate of one thread on the GEMM instruction of the
 * current level (tdpbssd, 512- or 256-bit vpdpbusd, vpmaddubsw): the peak goal 2 measures the
 * GEMMs against.
 *
 *   int hot_fast_bench_philox(long long n, int reps, double *best_s)
 * The Philox words of the stochastic quantizers alone (fast_philox_words, one thread). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fast.h"
#include "fast_internal.h"
#include "fast_gemm.h"

/* fast_igemm with the default config (fast_set_threads, fast_set_level). */
static int igemm_default(const fast_igemm_op *op) {
  fast_config c;
  fast_config_default(&c);
  return fast_igemm(&c, op);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t g_state;
/* The granularity of g''s scales in the timed backwards (hot_fast_bench_gran): HQ's per-tensor
 * scale by default, as before the knob; LQS picks per token (ROW) or per sample in a model. */
static hot_gran g_bench_gran = HOT_GRAN_TENSOR;
static float rnd(void) { /* uniform in [-1, 1): xorshift64* */
  g_state ^= g_state >> 12;
  g_state ^= g_state << 25;
  g_state ^= g_state >> 27;
  uint64_t v = g_state * 2685821657736338717ull;
  return (float)((double)(v >> 40) / 8388608.0 - 1.0);
}

static unsigned fold(const float *v, int64_t n) {
  unsigned h = 2166136261u;
  for (int64_t i = 0; i < n; ++i) {
    unsigned u;
    memcpy(&u, &v[i], sizeof u);
    h = (h ^ u) * 16777619u;
  }
  return h;
}

/* Plans the layer into *pl, its spec into *sp (the plan borrows it: the caller keeps it as long
 * as the plan). 0, or -1 with a message on stderr. */
static int bench_plan(long long B, long long L, long long O, long long I, int recipe,
                      hot_layer_spec *sp, hot_layer_plan *pl) {
  char err[256] = "";
  plan_spec_defaults(sp, (hot_recipe)recipe);
  snprintf(sp->name, sizeof sp->name, "bench");
  sp->in_features = I;
  sp->out_features = O;
  if (plan_layer(sp, B, L, (hot_recipe)recipe, HOT_ARCH_SM80, 0, pl, err, sizeof err)) {
    fprintf(stderr, "hot_fast_bench: plan_layer: %s\n", err);
    return -1;
  }
  return 0;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One layer's state between timed runs: the plan, the data, the output buffers and the saved
 * activations, so that a run times the backward alone, as a training step sees it (its buffers
 * and the fast path's kept scratch blocks already in use), and not the setup of a fresh layer. */
typedef struct {
  hot_layer_spec sp; /* borrowed by pl */
  hot_layer_plan pl;
  float *x, *w, *g, *gx, *gw, *gb;
  double *dx, *dw;
  hot_ref_saved s;
  int saved, threads;
} bench_layer;

void hot_fast_bench_close(void *h);

/* Tensors 64-byte aligned, as torch's CPU allocator makes them (malloc's large blocks are only
 * 16-aligned), so that the fast path is timed on the addresses HOTLinear hands it. */
static void *bench_alloc(int64_t n, size_t size) {
  const size_t bytes = ((size_t)n * size + 63) / 64 * 64;
  return aligned_alloc(64, bytes ? bytes : 64);
}
#define bench_floats(n) ((float *)bench_alloc((n), sizeof(float)))

/* Plans the layer, fills x, w, g_y with fixed pseudo-random data and allocates the outputs:
 * a handle for hot_fast_bench_run, or NULL with a message on stderr. The caller closes it. */
void *hot_fast_bench_open(long long B, long long L, long long O, long long I, int recipe,
                          int threads) {
  bench_layer *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  if (bench_plan(B, L, O, I, recipe, &b->sp, &b->pl)) {
    free(b);
    return NULL;
  }
  const int64_t T = b->pl.T;
  b->threads = threads;
  b->x = bench_floats(T * I), b->w = bench_floats(O * I);
  b->g = bench_floats(T * O), b->gx = bench_floats(T * I);
  b->gw = bench_floats(O * I), b->gb = bench_floats(O);
  if (!b->x || !b->w || !b->g || !b->gx || !b->gw || !b->gb) {
    fprintf(stderr, "hot_fast_bench: out of memory\n");
    hot_fast_bench_close(b);
    return NULL;
  }
  g_state = 0x243F6A8885A308D3ull;
  for (int64_t i = 0; i < T * I; ++i) b->x[i] = rnd();
  for (int64_t i = 0; i < O * I; ++i) b->w[i] = 0.05f * rnd();
  for (int64_t i = 0; i < T * O; ++i) b->g[i] = 1e-3f * rnd();
  return b;
}

/* One step of the layer: the forward save (not timed), then the timed part: path 0
 * ref_layer_backward (single-threaded twins), 1 fast_layer_backward, 2 fast_exact_gx + _gw,
 * 3 ref_exact_gx + _gw. Writes its wall and process CPU seconds. 0, or -1 with a message. */
int hot_fast_bench_run(void *h, int path, double *wall, double *cpu) {
  bench_layer *b = h;
  const hot_layer_plan *pl = &b->pl;
  const int64_t T = pl->T, O = pl->O, I = pl->I;
  if (path >= 2 && !b->dx) { /* the fp64 products' outputs, on first use */
    b->dx = bench_alloc(T * I, sizeof *b->dx), b->dw = bench_alloc(O * I, sizeof *b->dw);
    if (!b->dx || !b->dw) {
      fprintf(stderr, "hot_fast_bench: out of memory\n");
      return -1;
    }
  }
  fast_set_threads(b->threads);
  if (b->saved) ref_saved_free(&b->s);
  int rc = fast_layer_save(NULL, pl, b->x, HOT_DT_F32, &b->s);
  b->saved = rc == 0;
  const double c0 = cpu_now(), t0 = now_s();
  if (!rc) switch (path) {
    case 0: rc = ref_layer_backward(pl, &b->s, b->g, b->w, HOT_DT_F32, g_bench_gran, 1, 1, b->gx, b->gw, b->gb); break;
    case 1: rc = fast_layer_backward(NULL, pl, &b->s, b->g, b->w, HOT_DT_F32, g_bench_gran, 1, 1, b->gx, b->gw, b->gb); break;
    case 2:
      rc = fast_exact_gx(NULL, T, O, I, b->g, b->w, b->dx);
      if (!rc) rc = fast_exact_gw(NULL, T, O, I, b->g, b->x, b->dw);
      break;
    default:
      rc = ref_exact_gx(T, O, I, b->g, b->w, b->dx);
      if (!rc) rc = ref_exact_gw(T, O, I, b->g, b->x, b->dw);
      break;
    }
  *wall = now_s() - t0;
  *cpu = cpu_now() - c0;
  fast_set_threads(0);
  if (rc) fprintf(stderr, "hot_fast_bench: %s\n", ref_status_name(rc));
  if (!rc && path >= 2) {
    for (int64_t i = 0; i < T * I; ++i) b->gx[i] = (float)b->dx[i];
    for (int64_t i = 0; i < O * I; ++i) b->gw[i] = (float)b->dw[i];
  }
  return rc ? -1 : 0;
}

/* A checksum of the last run's output bits (g_x, g_w, and g_b after a backward path 0 or 1):
 * equal for paths 0 and 1, and for 2 and 3. */
unsigned hot_fast_bench_checksum(void *h, int path) {
  const bench_layer *b = h;
  const int64_t T = b->pl.T, O = b->pl.O, I = b->pl.I;
  return fold(b->gx, T * I) ^ (fold(b->gw, O * I) * 31u) ^ (path < 2 ? fold(b->gb, O) * 7u : 0u);
}

/* Frees the layer (NULL is fine). */
void hot_fast_bench_close(void *h) {
  bench_layer *b = h;
  if (!b) return;
  if (b->saved) ref_saved_free(&b->s);
  free(b->x), free(b->w), free(b->g), free(b->gx), free(b->gw), free(b->gb), free(b->dx),
      free(b->dw);
  free(b);
}

int hot_fast_bench_cpu(int path, long long B, long long L, long long O, long long I, int recipe,
                       int threads, int reps, double *best_s, unsigned *checksum,
                       double *best_cpu) {
  void *h = hot_fast_bench_open(B, L, O, I, recipe, threads);
  if (!h) return -1;
  double best = 1e30, bestc = 1e30;
  int rc = 0;
  for (int r = 0; r < reps && !rc; ++r) {
    double dt, dc;
    rc = hot_fast_bench_run(h, path, &dt, &dc);
    best = dt < best ? dt : best;
    bestc = dc < bestc ? dc : bestc;
  }
  *best_s = best;
  *best_cpu = bestc;
  *checksum = hot_fast_bench_checksum(h, path);
  hot_fast_bench_close(h);
  return rc;
}

int hot_fast_bench(int path, long long B, long long L, long long O, long long I, int recipe,
                   int threads, int reps, double *best_s, unsigned *checksum) {
  double c;
  return hot_fast_bench_cpu(path, B, L, O, I, recipe, threads, reps, best_s, checksum, &c);
}

const char *hot_fast_stage_name(int stage) { return fast_stage_name(stage); }

int hot_fast_bench_stages(long long B, long long L, long long O, long long I, int recipe,
                          int threads, int reps, double *wall, double *cpu, int n, char *plan,
                          int cap) {
  hot_layer_spec sp; /* borrowed by pl */
  hot_layer_plan pl;
  if (bench_plan(B, L, O, I, recipe, &sp, &pl)) return -1;
  snprintf(plan, (size_t)cap,
           "T=%lld; HQ b=%d o_pad=%lld g %d-bit w %d-bit, GEMM %lldx%lldx%lld; HLA p=%d r=%d "
           "k=%lld groups=%lld g %d-bit x %d-bit, GEMM %lldx%lldx%lld",
           (long long)pl.T, pl.hq.block, (long long)pl.hq.o_pad, pl.hq.g.bits, pl.hq.w.bits,
           (long long)pl.T, (long long)pl.I, (long long)pl.hq.o_pad, pl.hla.block, pl.hla.rank,
           (long long)pl.hla.k, (long long)pl.hla.groups, pl.hla.g.bits, pl.hla.x.bits,
           (long long)pl.O, (long long)pl.I, (long long)pl.hla.k);
  const int64_t T = pl.T;
  float *x = bench_floats(T * I), *w = bench_floats(O * I);
  float *g = bench_floats(T * O), *gx = bench_floats(T * I);
  float *gw = bench_floats(O * I), *gb = bench_floats(O);
  int rc = -1;
  if (x && w && g && gx && gw && gb) {
    g_state = 0x243F6A8885A308D3ull;
    for (int64_t i = 0; i < T * I; ++i) x[i] = rnd();
    for (int64_t i = 0; i < O * I; ++i) w[i] = 0.05f * rnd();
    for (int64_t i = 0; i < T * O; ++i) g[i] = 1e-3f * rnd();
    fast_set_threads(threads);
    hot_ref_saved s;
    rc = fast_layer_save(NULL, &pl, x, HOT_DT_F32, &s);
    if (!rc) rc = fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, g_bench_gran, 1, 1, gx, gw, gb);
    fast_profile(1);
    for (int r = 0; r < reps && !rc; ++r)
      rc = fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, g_bench_gran, 1, 1, gx, gw, gb);
    fast_profile_read(wall, cpu, n);
    fast_profile(0);
    for (int i = 0; i < n; ++i) wall[i] /= reps > 0 ? reps : 1, cpu[i] /= reps > 0 ? reps : 1;
    if (rc) fprintf(stderr, "hot_fast_bench_stages: %s\n", ref_status_name(rc));
    ref_saved_free(&s);
    fast_set_threads(0);
  } else {
    fprintf(stderr, "hot_fast_bench_stages: out of memory\n");
  }
  free(x), free(w), free(g), free(gx), free(gw), free(gb);
  return rc ? -1 : 0;
}

static void epi_fold(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                     const int32_t *acc, int64_t ldc) {
  (void)seg;
  unsigned *h = ctx, t = 0;
  for (int64_t m = 0; m < mc; ++m)
    for (int64_t n = 0; n < nc; ++n)
      t += (unsigned)acc[m * ldc + n] * (unsigned)(((m0 + m) * 7919 + (n0 + n)) | 1);
  __atomic_fetch_add(h, t, __ATOMIC_RELAXED);
}


static void epi_none(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                     const int32_t *acc, int64_t ldc) {
  (void)ctx, (void)seg, (void)m0, (void)n0, (void)mc, (void)nc, (void)acc, (void)ldc;
}

typedef struct {
  const fast_elem_kernels *e;
  float *out;
  const float *row_f;
  int64_t ldo;
} epi_f32_ctx;

static void epi_f32(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                    const int32_t *acc, int64_t ldc) {
  (void)seg;
  const epi_f32_ctx *x = ctx;
  x->e->scale_tile(x->out + m0 * x->ldo + n0, x->ldo, acc, ldc, mc, nc, x->row_f + m0, 0.0f, 0);
}

int hot_fast_bench_gemm_epi(long long M, long long N, long long K, int qa, int qb, int b_kmajor,
                            int epi, int threads, int reps, double *best_wall, double *best_tiles,
                            unsigned *checksum) {
  int8_t *a = malloc((size_t)(M * K)), *b = malloc((size_t)(N * K));
  float *out = epi == 2 ? bench_alloc(M * N, sizeof(float)) : NULL;
  float *row_f = epi == 2 ? malloc((size_t)M * sizeof(float)) : NULL;
  if (!a || !b || qa < 1 || qa > 127 || qb < 1 || qb > 127 || epi < 0 || epi > 2 ||
      (epi == 2 && (!out || !row_f))) {
    free(a), free(b), free(out), free(row_f);
    fprintf(stderr, "hot_fast_bench_gemm_epi: bad arguments or out of memory\n");
    return -1;
  }
  g_state = 0x13198A2E03707344ull;
  for (int64_t i = 0; i < M * K; ++i) a[i] = (int8_t)((int)(g_state = g_state * 6364136223846793005ull + 1442695040888963407ull, g_state >> 33) % (2 * qa + 1) - qa);
  for (int64_t i = 0; i < N * K; ++i) b[i] = (int8_t)((int)(g_state = g_state * 6364136223846793005ull + 1442695040888963407ull, g_state >> 33) % (2 * qb + 1) - qb);
  for (int64_t m = 0; m < (epi == 2 ? M : 0); ++m) row_f[m] = 1.0f / (float)(m + 1);
  fast_config cfg;
  fast_config_default(&cfg);
  epi_f32_ctx ef = {cfg.k->e, out, row_f, N};
  const int8_t *as[1] = {a}, *bs[1] = {b};
  unsigned h = 0;
  const fast_epi_fn fns[3] = {epi_fold, epi_none, epi_f32};
  void *ctxs[3] = {&h, NULL, &ef};
  fast_igemm_op op = {M, N, K, 1, as, K, 1, bs, b_kmajor ? 1 : K, b_kmajor ? N : 1, qa, qb,
                      fns[epi], ctxs[epi], FAST_ST_GX_PACK};
  fast_set_threads(threads);
  double bw = 1e30, bt = 1e30;
  int rc = 0;
  for (int r = 0; r < reps && !rc; ++r) {
    h = 0;
    double pw[FAST_ST_COUNT], pc[FAST_ST_COUNT];
    fast_profile(1);
    const double w0 = now_s();
    rc = igemm_default(&op);
    const double w1 = now_s() - w0;
    fast_profile_read(pw, pc, FAST_ST_COUNT);
    fast_profile(0);
    bw = w1 < bw ? w1 : bw;
    bt = pw[FAST_ST_GX_PACK + 1] < bt ? pw[FAST_ST_GX_PACK + 1] : bt;
  }
  fast_set_threads(0);
  if (epi == 2) h = fold(out, M * N);
  *best_wall = bw, *best_tiles = bt, *checksum = h;
  free(a), free(b), free(out), free(row_f);
  return rc ? -1 : 0;
}

/* fast_philox_words alone (the current level, the calling thread): the best wall seconds of
 * `reps` fills of n words (n <= 2^24) in blocks of 1024 words, as the quantizers draw them.
 * 0, or -1 on bad arguments or no memory. */
int hot_fast_bench_philox(long long n, int reps, double *best_s) {
  if (n < 1 || n > (1ll << 24) || reps < 1) return -1;
  uint32_t *w = malloc((size_t)n * sizeof *w);
  if (!w) return -1;
  const fast_rng rng = {0x243F6A8885A308D3ull, 5u, 1u};
  fast_config cf; /* the default config's level (hot_fast_bench_level) */
  fast_config_default(&cf);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    for (long long i = 0; i < n; i += 1024)
      cf.k->e->philox(&rng, (uint64_t)i, n - i < 1024 ? n - i : 1024, w + i);
    const double dt = now_s() - t0;
    best = dt < best ? dt : best;
  }
  free(w);
  *best_s = best;
  return 0;
}

/* 1 when this CPU can run dispatch level `level` (fast_level_has), else 0. */
int hot_fast_bench_level_has(int level) { return fast_level_has(level); }

/* Caps the dispatch level of the fast path (fast_set_level) for the following calls. */
void hot_fast_bench_level(int max) { fast_set_level(max); }

/* fast_use_openmp / fast_openmp (fast.h), for bench/cpu_backward.py: the same as the CPU
 * backend's hot_cpu_use_openmp / hot_cpu_openmp (0 or -1; 1 when a runtime is in use). */
int hot_fast_bench_use_openmp(const char *runtime) { return fast_use_openmp(runtime); }
int hot_fast_bench_openmp(char *buf, size_t cap) { return fast_openmp(buf, cap); }

/* ---- the AMX-INT8 peak: tdpbssd on tiles held in registers ---------------------------------- */

#if FAST_HAVE_AMX
#include <immintrin.h>
static const struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} k_peak_cfg __attribute__((aligned(64))) = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64},
                                              {16, 16, 16, 16, 16, 16, 16, 16}};

/* iters x 4 independent tdpbssd (accumulators tmm0-3, operands tmm4-7, never reloaded): 16384
 * multiply-adds each, no memory traffic in the loop. */
__attribute__((target("amx-tile,amx-int8"))) static void peak_loop(long long iters) {
  static int8_t data[1024] __attribute__((aligned(64)));
  _tile_loadconfig(&k_peak_cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, data, 64);
  _tile_loadd(5, data, 64);
  _tile_loadd(6, data, 64);
  _tile_loadd(7, data, 64);
  for (long long i = 0; i < iters; ++i) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_release();
}
#endif

/* The AMX-INT8 rate of one thread on register-only tdpbssd (the peak a GEMM can reach on this
 * core): the best multiply-adds per second of `reps` runs of about 10 ms each into *macs_s.
 * 0; -1 when this CPU, OS or build cannot run AMX-INT8 (the caller prints "no AMX"). */
int hot_fast_bench_amx_peak(int reps, double *macs_s) {
  *macs_s = 0.0;
#if FAST_HAVE_AMX
  if (!fast_level_has(FAST_LEVEL_AMX)) return -1;
  const long long iters = 200000; /* 4 x 16384 MACs each: 13 G MACs, about 4 ms at the peak */
  peak_loop(1000);
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    peak_loop(iters);
    const double dt = now_s() - t0, rate = (double)iters * 4.0 * 16384.0 / dt;
    if (rate > *macs_s) *macs_s = rate;
  }
  return 0;
#else
  (void)reps;
  return -1;
#endif
}

/* ---- the integer peak of the levels without tiles: register-only multiply-adds ------------- */

#if defined(__x86_64__)
#include <immintrin.h>
/* A register-only loop of twelve independent chains of one multiply-add instruction OP(c, a, b)
 * on vectors of type V: the chains cover the instruction's latency on two ports, and the empty
 * asm keeps every accumulator live in a register (no chain folded or spilled). */
#define PEAK_LOOP(name, tgt, V, set1, OP, cons)                                                     \
  __attribute__((target(tgt))) static void name(long long iters) {                                    \
    const V a = set1(0x01020304), b = set1(0x05060708);                                             \
    V c0 = set1(0), c1 = set1(1), c2 = set1(2), c3 = set1(3), c4 = set1(4), c5 = set1(5);           \
    V c6 = set1(6), c7 = set1(7), c8 = set1(8), c9 = set1(9), c10 = set1(10), c11 = set1(11);       \
    for (long long i = 0; i < iters; ++i) {                                                         \
      c0 = OP(c0, a, b), c1 = OP(c1, a, b), c2 = OP(c2, a, b), c3 = OP(c3, a, b);                   \
      c4 = OP(c4, a, b), c5 = OP(c5, a, b), c6 = OP(c6, a, b), c7 = OP(c7, a, b);                   \
      c8 = OP(c8, a, b), c9 = OP(c9, a, b), c10 = OP(c10, a, b), c11 = OP(c11, a, b);               \
      __asm__ volatile("" : cons(c0), cons(c1), cons(c2), cons(c3), cons(c4), cons(c5));            \
      __asm__ volatile("" : cons(c6), cons(c7), cons(c8), cons(c9), cons(c10), cons(c11));          \
    }                                                                                               \
    __asm__ volatile("" ::"x"(c0), "x"(c1), "x"(c2), "x"(c3), "x"(c4), "x"(c5), "x"(c6), "x"(c7),  \
                     "x"(c8), "x"(c9), "x"(c10), "x"(c11));                                         \
  }
#define PEAK_CONS_Z(c) "+v"(c)
#define PEAK_CONS_Y(c) "+x"(c)
/* AVX2's pair in asm: in C the product maddubs(a, b) of the loop's constant operands is folded
 * at compile time (and would be one value for all twelve chains), leaving a loop of vpaddw; the
 * volatile asm issues both instructions for every chain in every iteration. */
__attribute__((target("avx2"))) static inline __m256i peak_avx2_pair(__m256i c, __m256i a, __m256i b) {
  __m256i t;
  __asm__ volatile("vpmaddubsw %[b], %[a], %[t]\n\tvpaddw %[t], %[c], %[c]"
                   : [c] "+x"(c), [t] "=&x"(t)
                   : [a] "x"(a), [b] "x"(b));
  return c;
}
#define PEAK_AVX2(c, a, b) peak_avx2_pair((c), (a), (b))
/* 512-bit vpdpbusd: 64 multiply-adds an instruction */
PEAK_LOOP(peak_vnni512, "avx512f,avx512bw,avx512vnni", __m512i, _mm512_set1_epi32,
          _mm512_dpbusd_epi32, PEAK_CONS_Z)
#if FAST_HAVE_AVXVNNI
/* 256-bit AVX-VNNI vpdpbusd: 32 */
PEAK_LOOP(peak_vnni256, "avx2,avxvnni", __m256i, _mm256_set1_epi32, _mm256_dpbusd_avx_epi32,
          PEAK_CONS_Y)
#endif
/* AVX2's pair as the u8 kernel runs it (vpmaddubsw, then vpaddw into 16-bit sums; the kernel's
 * occasional widening left out): 32 a pair */
PEAK_LOOP(peak_avx2, "avx2", __m256i, _mm256_set1_epi32, PEAK_AVX2, PEAK_CONS_Y)
#endif

/* The integer multiply-add rate of one thread on the GEMM instruction of the fast path's current
 * level (fast_level_now), in registers: tdpbssd (amx-int8), 512-bit vpdpbusd (avx512-vnni),
 * 256-bit vpdpbusd (avx-vnni), vpmaddubsw + vpaddw (avx2). The best of `reps` runs of 4-6 ms
 * into *macs_s and the instruction's name into name[cap] (cap > 0). 0; -1 at the scalar level,
 * where the level cannot run (the caller prints "no peak") or without a name buffer. */
int hot_fast_bench_int8_peak(int reps, double *macs_s, char *name, int cap) {
  *macs_s = 0.0;
  if (!name || cap <= 0) return -1;
  name[0] = 0;
  const int level = fast_level_now();
  if (level == FAST_LEVEL_AMX) {
    if (hot_fast_bench_amx_peak(reps, macs_s)) return -1;
    snprintf(name, (size_t)cap, "tdpbssd (amx-int8)");
    return 0;
  }
#if defined(__x86_64__)
  void (*loop)(long long) = NULL;
  double per = 0.0; /* multiply-adds per iteration */
  const char *nm = "";
  if (level == FAST_LEVEL_AVX512 && fast_cpu_avx512()) {
    loop = peak_vnni512, per = 12.0 * 64.0, nm = "512-bit vpdpbusd (avx512-vnni)";
#if FAST_HAVE_AVXVNNI
  } else if (level == FAST_LEVEL_AVXVNNI) {
    loop = peak_vnni256, per = 12.0 * 32.0, nm = "256-bit vpdpbusd (avx-vnni)";
#endif
  } else if (level == FAST_LEVEL_AVX2 || level == FAST_LEVEL_AVX512) {
    loop = peak_avx2, per = 12.0 * 32.0, nm = "vpmaddubsw + vpaddw (avx2)";
  }
  if (!loop) return -1;
  const long long iters = 2000000; /* 768 multiply-adds an iteration at 512 bits, 384 at 256: 4-6
                                     * ms a run on the Xeons measured (0.36, 0.19, 0.135 TMAC/s) */
  loop(iters); /* warm-up: the core reaches the clock it holds under this load */
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    loop(iters);
    const double dt = now_s() - t0, rate = (double)iters * per / dt;
    if (rate > *macs_s) *macs_s = rate;
  }
  snprintf(name, (size_t)cap, "%s", nm);
  return 0;
#else
  (void)reps;
  return -1;
#endif
}

/* 1: every AMX A panel packed (fast_amx_pack_all), 0: A's tiles read in place where they can be;
 * for comparing the two in one process. */
void hot_fast_bench_amx_pack_all(int on) { fast_amx_pack_all = on != 0; }

/* The 2 x 2 tile step of the AMX GEMM (fast_amx.c's kern_amx: two A and two B tiles loaded per
 * 64 k, four tdpbssd, or tdpbf16ps for bf16) on operands that come from a chosen level of the
 * memory: `calls` kernel calls over blocks of K bytes of k, each call on the next of na A pairs
 * and nb_pairs B pairs (1 KB tiles, contiguous), its four accumulators zeroed first and stored
 * after. With na = nb_pairs = 1 and 32 x K small, everything stays in the L1; with K 2048 and a
 * few pairs, in the L2; with more, beyond it. Data: dense pseudo-random bytes (AMX draws more
 * power on such data than on zeros, and the core may clock lower: the register-only peak loop
 * runs on zeros). The multiply-adds per second of the best of reps into *macs_s: the rate a GEMM
 * whose operands live at that level can reach with this blocking, for int8 and for the bf16
 * that torch's oneDNN kernels run (a 64-byte row holds 64 int8 or 32 bf16 values, and both
 * instructions take the same time per tile). 0; -1 without AMX-INT8 / AMX-BF16 or memory. */
#if FAST_HAVE_AMX
#define AMX_STEPS(DP)                                                                               \
  for (long long i = 0; i < calls; ++i) {                                                           \
    const unsigned char *ap = a + (i % na) * 2 * nb * 1024, *bp = b + (i % nbp) * 2 * nb * 1024;    \
    _tile_zero(0);                                                                                  \
    _tile_zero(1);                                                                                  \
    _tile_zero(2);                                                                                  \
    _tile_zero(3);                                                                                  \
    for (long long j = 0; j < nb; ++j) {                                                            \
      _tile_loadd(4, ap + j * 1024, 64);                                                            \
      _tile_loadd(6, bp + j * 1024, 64);                                                            \
      DP(0, 4, 6);                                                                                  \
      _tile_loadd(7, bp + (nb + j) * 1024, 64);                                                     \
      DP(1, 4, 7);                                                                                  \
      _tile_loadd(5, ap + (nb + j) * 1024, 64);                                                     \
      DP(2, 5, 6);                                                                                  \
      DP(3, 5, 7);                                                                                  \
    }                                                                                               \
    _tile_stored(0, c, 64);                                                                         \
    _tile_stored(1, c + 256, 64);                                                                   \
    _tile_stored(2, c + 512, 64);                                                                   \
    _tile_stored(3, c + 768, 64);                                                                   \
  }
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) static void amx_steps(
    int bf16, const unsigned char *a, const unsigned char *b, long long na, long long nbp,
    long long nb, long long calls, int32_t *c) {
  _tile_loadconfig(&k_peak_cfg);
  if (bf16) {
    AMX_STEPS(_tile_dpbf16ps)
  } else {
    AMX_STEPS(_tile_dpbssd)
  }
  _tile_release();
}
#endif

int hot_fast_bench_amx_kernel(int bf16, long long K, long long na, long long nb_pairs,
                              long long calls, int reps, double *macs_s) {
  *macs_s = 0.0;
#if FAST_HAVE_AMX
  if (!fast_level_has(FAST_LEVEL_AMX) || K < 64 || K % 64 || na < 1 || nb_pairs < 1 || calls < 1)
    return -1;
  if (bf16 && !__builtin_cpu_supports("amx-bf16")) return -1;
  const long long nb = K / 64;
  const size_t abytes = (size_t)(2 * na * nb * 1024), bbytes = (size_t)(2 * nb_pairs * nb * 1024);
  unsigned char *a = aligned_alloc(64, abytes), *b = aligned_alloc(64, bbytes);
  int32_t *c = aligned_alloc(64, 4096);
  if (!a || !b || !c) {
    free(a), free(b), free(c);
    return -1;
  }
  /* bf16: finite values (bits 0x3f.. / 0xbf..: exponents near 1), int8: any bytes */
  uint32_t h = 0x9E3779B9u;
  for (size_t i = 0; i < abytes; ++i) h = h * 1664525u + 1013904223u, a[i] = (unsigned char)(h >> 24);
  for (size_t i = 0; i < bbytes; ++i) h = h * 1664525u + 1013904223u, b[i] = (unsigned char)(h >> 24);
  for (size_t i = 1; bf16 && i < abytes; i += 2) a[i] = (unsigned char)((a[i] & 0x80) | 0x3f);
  for (size_t i = 1; bf16 && i < bbytes; i += 2) b[i] = (unsigned char)((b[i] & 0x80) | 0x3f);
  amx_steps(bf16, a, b, na, nb_pairs, nb, calls / 8 + 1, c); /* warm: pages, caches, clocks */
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    amx_steps(bf16, a, b, na, nb_pairs, nb, calls, c);
    const double dt = now_s() - t0;
    const double rate = (double)calls * 32.0 * 32.0 * (double)K / (bf16 ? 2.0 : 1.0) / dt;
    if (rate > *macs_s) *macs_s = rate;
  }
  free(a), free(b), free(c);
  return 0;
#else
  (void)bf16, (void)K, (void)na, (void)nb_pairs, (void)calls, (void)reps;
  return -1;
#endif
}

/* fast_set_hla_fuse_bytes (fast.h): n >= 0 the bound, n < 0 the default. */
void hot_fast_bench_hla_fuse_bytes(long long n) { fast_set_hla_fuse_bytes(n); }

/* The granularity of the timed backwards' g' scales: 0 per tensor (the default), 1 per token, 2
 * per sample (LQS's choices); -1 when g is not one of them. */
int hot_fast_bench_gran(long long g) {
  static const hot_gran k[3] = {HOT_GRAN_TENSOR, HOT_GRAN_ROW, HOT_GRAN_SAMPLE};
  if (g < 0 || g > 2) return -1;
  g_bench_gran = k[g];
  return 0;
}

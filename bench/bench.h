/* bench.h — hot-bench: runs every layer of a spec through the public API (hot.h) on seeded data
 * and reports correctness (errors against fp64, bit-exactness GPU vs CPU), memory (ABC bytes),
 * JIT times and, on a GPU, speed against cuBLAS. One stage per file:
 *
 *   main.c    CLI, sizes, orchestration          fp8.c     FP8 e4m3 conversion (cuBLASLt)
 *   common.c  contexts, layers, the clock (what  jit.c     cold/warm JIT through fresh contexts
 *             every stage shares)                check.c   CPU reference run and fp64 errors
 *   gpu.c     device buffers, HOT and cuBLAS     cublas.c  cuBLAS loaded with dlopen
 *             timings, ceilings, bit-exactness   cublaslt.c  cuBLASLt FP8 (the FP8 baseline)
 *   report.c  the table (stdout) and the JSON    timing.c  CUDA-event timing, statistics
 *
 * The seeded inputs come from hot_tooldata.h (shared with hot-tune); libhot's internals only
 * through the tools' door, hot_tools.h. Nothing here links the CUDA driver, cuBLAS or cuBLASLt:
 * all come through dlopen (the door's driver table, cublas.c, cublaslt.c).
 */
#ifndef HOT_BENCH_H
#define HOT_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diag.h" /* diag_fprintf, diag_names: bounded messages */
#include "hot.h"
#include "hot_tooldata.h"
#include "hot_tools.h"
#include "plan.h"

/* ---- options ------------------------------------------------------------------------------ */
typedef struct {
  const char *spec;        /* spec file */
  const char *layer;       /* NULL: every layer */
  hot_backend backend;     /* AUTO, CUDA or CPU */
  int64_t batch;           /* 0: the spec's */
  int64_t tokens;          /* 0: the spec's (per layer for convolutions) */
  int iters;               /* timed runs per measurement (GPU) */
  int warmup;              /* untimed runs before them */
  int json;                /* JSON on stdout instead of the table */
  const char *out;         /* also write the JSON here */
  const char *arch;        /* JIT arch on the CPU backend (NULL: $HOT_ARCH, else sm_90) */
  int jit;                 /* measure JIT */
  int full;                /* check correctness at the benchmark size, whatever it costs */
  double check_macs;       /* largest T*O*I of the correctness check (CPU reference cost) */
  int scales;              /* --scales: the scale-granularity comparison instead of the benchmark */
  int paper_diffs;         /* --paper-diffs: the remaining differences from the authors' code */
  int seeds;               /* --seeds: seeds of --paper-diffs (0: 8) */
  double gy_scale;         /* --gy-scale: g_y magnitude of --paper-diffs (0: 1) */
  int gemm_paths;          /* --gemm-paths: the three sm_90 GEMM paths timed side by side */
  int precompile;          /* --precompile (with --gemm-paths): compile its kernels, no GPU */
  int memory;              /* --memory: saved bytes against the method's count, no timing */
  int model;               /* --model: predicted kernel times on H100 / H200, no GPU */
} bench_opts;

/* ---- statistics of repeated timings ------------------------------------------------------ */
typedef struct {
  int n;                          /* samples; 0 = not measured */
  double med, p10, p90, min, max; /* milliseconds */
} bench_stat;

/* Sorts ms[0..n) in place and fills *out (n = 0 gives an empty stat). Nearest-rank percentiles. */
void bench_stat_of(double *ms, int n, bench_stat *out);

/* ---- one kernel launch of a profiled save or backward (GPU) -------------------------------- */
typedef struct {
  char name[128];                 /* kernel entry name */
  int role, phase;                /* hot_kernel_role (plan.h) and the launch's phase argument */
  int bwd;                        /* 0: in hot_layer_save, 1: in hot_layer_backward */
  bench_stat t;                   /* ms between the events around the launch (profiled runs) */
  int64_t bytes, ops;             /* compulsory bytes and integer ops (gen/cost.h); -1 unknown */
  int bound;                      /* 1: report TOP/s against the INT8 ceiling, else GB/s vs copy */
} bench_kernel;

#define BENCH_MAX_KERNELS (2 * HOT_MAX_KERNEL_TIMES)

/* One kernel of a layer's cold JIT: its compile and NVRTC's phases (phases 0: not reported). */
typedef struct {
  char name[96];
  double ms, front_ms, nvvm_ms, ptxas_ms;
  int phases;
} bench_jit_kernel;

/* ---- one layer's results ------------------------------------------------------------------ */
typedef struct {
  char name[HOT_NAME_MAX];
  int index;                      /* in the spec */
  int64_t B, L, T, O, I;          /* benchmark size (memory figures, speed) */
  int64_t cB, cL, cT;             /* correctness-check size (may be smaller, see main.c) */
  int bias;
  hot_dtype dt;                   /* the layer's input dtype (its kernels are made for it) */
  char gran[16];                  /* g' scale in effect after calibration: "tensor"/"token" */
  int hq_b, hla_p, hla_r, hla_blocks;
  /* memory (plan at the benchmark size) */
  int64_t abc_bytes, fp32_bytes, bf16_bytes;
  /* operation counts of one backward (plan) */
  int64_t gx_macs, gw_macs, fp32_gx_macs, fp32_gw_macs, fwht_adds;
  /* correctness (CPU reference at the check size) */
  int have_err;
  double gx_err, gw_err, gb_err;  /* relative Frobenius vs fp64; gb_err < 0: no bias */
  double cpu_ref_ms;              /* wall time of the CPU save + backward at the check size */
  int bitexact;                   /* -1 not checked; 0/1 GPU vs CPU, g_x, g_w, g_b, saved */
  char bitexact_note[160];
  char gpu_note[160];             /* e.g. LQS not available on the CUDA backend */
  /* JIT */
  int have_jit;
  double jit_cold_ms, jit_store_ms, jit_warm_ms;
  uint64_t jit_compiles, jit_disk_hits;
  char jit_note[200];
  int jit_nk;                     /* distinct kernels compiled in the cold run */
  bench_jit_kernel jit_kern[16];
  /* speed (GPU) */
  bench_stat hot_bwd, hot_fwd, bf16, fp32, tf32;
  /* FP8 baseline (cuBLASLt, e4m3 operands in the layouts it wants, per-tensor scales): the two
   * GEMMs only (gpu.c). fp8.n = 0: not measured, fp8_reason says why. */
  bench_stat fp8;
  char fp8_reason[240];
  int64_t fp8_T, fp8_O, fp8_I;    /* the GEMMs' sizes: T, O, I rounded up to multiples of 16 */
  double fp8_gx_err, fp8_gw_err;  /* relative error of sampled FP8 outputs vs fp64; < 0: none */
  double nsets_hot, nsets_blas;   /* buffer sets rotated (cold L2) */
  int nk;                         /* profiled launches: save's, then backward's */
  int prof_runs;                  /* profiled runs behind each median */
  bench_kernel kern[BENCH_MAX_KERNELS];
  char prof_note[160];            /* why the per-kernel figures are missing, if they are */
  /* status: "" = ok; otherwise the first error of this layer */
  char status[320];
  int unsupported;                /* the status is HOT_ERR_UNSUPPORTED (kernels not landed) */
} bench_layer;

/* ---- the run ------------------------------------------------------------------------------ */
typedef struct {
  bench_opts opt;
  const hot_model *spec_model;    /* the spec, loaded once by main.c (names, shapes, recipe, seed) */
  char model[HOT_NAME_MAX];
  char recipe[16];
  uint64_t seed;
  hot_backend backend;            /* CUDA or CPU */
  char fallback[300];             /* why the CPU when auto fell back */
  char device[128], arch[16];     /* CUDA device and arch; JIT arch on the CPU */
  char date[32], host[64];
  int n;
  bench_layer *layers;
  /* ceilings measured in the same run (GPU; 0 = not measured) */
  double copy_gbs, bf16_tflops, int8_tops, fp8_tflops;
  char ceil_note[200];
  int l2_bytes;
  /* whole-spec cold JIT: every layer in one fresh memory-only context, hot_ctx_compile (one
   * compile pool for all their distinct kernels) */
  int have_jit_spec;
  double jit_spec_cold_ms;
  uint64_t jit_spec_compiles;
  char jit_spec_note[200];
  double wall_s;
} bench_run;

/* ---- fp8.c --------------------------------------------------------------------------------- */
/* fp32 -> fp8 e4m3 (round to nearest even; beyond +-448 saturates to +-448; NaN stays NaN) and
 * back; the largest |v[i]|; and an e4m3 copy of the rows x cols row-major src scaled by q
 * (e4m3(v * q)) into dst, zero-padded to prows x pcols, or stored transposed (pcols x prows,
 * dst[c * prows + r]) when t. */
uint8_t bench_to_e4m3(float v);
float bench_e4m3_to_f32(uint8_t c);
float bench_amax(const float *v, size_t n);
void bench_fp8_pack(const float *src, int64_t rows, int64_t cols, float q, int t, uint8_t *dst,
                    int64_t prows, int64_t pcols);

/* ---- common.c: layer creation shared by every stage ------------------------------------------ */
/* A layer of the spec at (batch, tokens) in ctx: hot_layer_from_spec when tokens is the spec's,
 * else hot_layer_create with the spec's fields (same seed). Message in err on failure. */
hot_status bench_layer_open(hot_ctx *ctx, const bench_run *run, const bench_layer *bl,
                            int64_t batch, int64_t tokens, hot_layer **out, char *err, size_t n);
/* The paper_code spec of layer `index` of m into *s: as written when the spec's recipe is
 * paper_code, else its shape (features, bias, tokens, name, line) with paper_code's defaults.
 * dtype f32 either way. Plan it with recipe HOT_RECIPE_PAPER_CODE. */
void bench_paper_spec(const hot_model *m, int index, hot_layer_spec *s);
/* hot_ctx_create with the bench's seed and the given backend/arch/cache settings. */
hot_status bench_ctx_open(hot_ctx **out, const bench_run *run, hot_backend backend,
                          const char *arch, int disk_cache, const char *cache_dir, char *err,
                          size_t n);
/* Milliseconds of a monotonic clock. */
double bench_now_ms(void);
/* --out: what write(f, arg) writes (0, or non-zero when it failed) into path, through
 * "<path>.tmp.<pid>" and a rename: on a failure (said in one line naming --out and the path) an
 * existing file at path is left as it was and no partial file stays. Returns 0, or 1. */
int bench_write_out(const char *path, int (*write)(FILE *f, const void *arg), const void *arg);

/* ---- check.c ------------------------------------------------------------------------------- */
/* The CPU reference at the check size: save, calibrate (scale auto), backward at step 1 on the
 * CPU backend (arch: `arch` or NULL); errors vs fp64 into bl. Keeps the outputs in *out when out
 * is not NULL (for the GPU comparison; free with bench_outputs_free). Returns 0, -1 on error
 * (bl->status says why). */
typedef struct {
  float *gx, *gw, *gb;
  uint8_t *saved;
  size_t saved_bytes;
  int gran_row;                   /* calibration chose per token */
} bench_outputs;
int bench_check_cpu(const bench_run *run, bench_layer *bl, const tooldata *d, const char *arch,
                    bench_outputs *out);
void bench_outputs_free(bench_outputs *o);

/* ---- jit.c --------------------------------------------------------------------------------- */
/* Cold compile (fresh memory-only context), store (compile into an empty disk cache) and warm
 * (a second context hitting that cache) of the layer's kernels. Fills bl->jit_*. */
void bench_jit(const bench_run *run, bench_layer *bl, hot_backend backend, const char *arch);
/* The whole spec's cold JIT (every layer without a status, one fresh memory-only context,
 * hot_ctx_compile). Fills run->jit_spec_*. */
void bench_jit_spec(bench_run *run, hot_backend backend, const char *arch);

/* ---- gpu.c --------------------------------------------------------------------------------- */
typedef struct bench_gpu bench_gpu;
/* Driver, primary context, stream, cuBLAS, L2 size. NULL with a message on failure. */
bench_gpu *bench_gpu_open(char *err, size_t n);
void bench_gpu_close(bench_gpu *g);
/* What other stages (paths.c) use of the benchmark's device side, borrowed from g (valid until
 * bench_gpu_close): the driver table, the stream, cuBLAS (NULL: cublas_err says why), cuBLASLt
 * for FP8 (NULL: lt_err says why) with its workspace, the compute capability (0.0: unknown). */
typedef struct {
  const cuda_driver *d;
  CUstream s;
  struct bench_cublas *cb;
  const char *cublas_err;
  struct bench_cublaslt *lt;
  const char *lt_err;
  CUdeviceptr lt_ws;
  size_t lt_ws_bytes;
  int cc_major, cc_minor;
} bench_gpu_parts;
void bench_gpu_get_parts(bench_gpu *g, bench_gpu_parts *out);
/* Copy bandwidth, large BF16 and INT8 cuBLAS GEMM rates into run. */
void bench_gpu_ceilings(bench_gpu *g, bench_run *run);
/* Bit-exactness at the check size against `ref` (CPU outputs) in a fresh CUDA context. */
void bench_gpu_bitexact(bench_gpu *g, const bench_run *run, bench_layer *bl,
                        const tooldata *d, const bench_outputs *ref);
/* Speed at the benchmark size: HOT backward and forward (ctx), cuBLAS BF16/FP32/TF32, cuBLASLt
 * FP8 (fp8 null with fp8_reason when the device, the library or the sizes do not allow it). */
void bench_gpu_speed(bench_gpu *g, hot_ctx *ctx, const bench_run *run, bench_layer *bl);

/* ---- cublas.c ------------------------------------------------------------------------------ */
typedef struct bench_cublas bench_cublas;
typedef enum { BENCH_BF16 = 0, BENCH_FP32, BENCH_TF32, BENCH_INT8 } bench_prec;
/* dlopen libcublas.so.13 / .12 ($HOT_CUDA_HOME/lib64, the toolkit folder, the loader path),
 * cublasCreate, cublasSetStream. NULL with a message on failure. */
bench_cublas *bench_cublas_open(void *stream, char *err, size_t n);
void bench_cublas_close(bench_cublas *c);
const char *bench_cublas_path(const bench_cublas *c);
/* Row-major C (m x n) = A (m x k) . B (k x n), with A transposed in memory when a_t (A stored
 * k x m) — the two products of a backward: g_x = g_y . w (a_t 0), g_w = g_y^T . x (a_t 1).
 * Operands of `prec` (bf16 in, bf16 out; fp32 in/out; int8 in, int32 out); fp32 accumulate.
 * Returns the cublasStatus (0 = ok). */
int bench_cublas_gemm(bench_cublas *c, bench_prec prec, int a_t, int64_t m, int64_t n, int64_t k,
                      CUdeviceptr A, CUdeviceptr B, CUdeviceptr C);
/* The INT8 ceiling GEMM (square, TN layout as IMMA wants). */
int bench_cublas_gemm_i8(bench_cublas *c, int64_t m, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C);

/* ---- cublaslt.c: the FP8 baseline ---------------------------------------------------------- */
/* The paths to try for a CUDA library `stem` ("libcublas", "libcublasLt"), in order:
 * $HOT_CUDA_HOME/lib64 (when set), the toolkit's library folder found at build time, the
 * loader path; in each stem.so.13, then stem.so.12. Fills out[0..max), returns the count. */
int bench_lib_candidates(const char *stem, char out[][512], int max);
typedef struct bench_cublaslt bench_cublaslt;
/* dlopen the first of `paths` that loads, resolve every cuBLASLt function hot-bench calls
 * (a missing one is named in the error), cublasLtCreate. NULL with a one-line message on failure.
 * bench_cublaslt_open tries bench_lib_candidates("libcublasLt"). Close with bench_cublaslt_close
 * (the library itself stays loaded, as cuBLAS does). */
bench_cublaslt *bench_cublaslt_open_paths(const char *const *paths, int np, char *err, size_t n);
bench_cublaslt *bench_cublaslt_open(char *err, size_t n);
void bench_cublaslt_close(bench_cublaslt *c);
const char *bench_cublaslt_path(const bench_cublaslt *c);
/* NULL when compute capability major.minor has FP8 tensor cores (8.9 and newer); else the
 * reason, written into buf. */
const char *bench_fp8_arch_reason(int major, int minor, char *buf, size_t n);
/* One FP8 product, set up once (descriptor, layouts, algorithm from
 * cublasLtMatmulAlgoGetHeuristic within ws_bytes of workspace): row-major C (m x n, bf16) =
 * (*x_scale) * (*yt_scale) * X (m x k) . Y (k x n), X stored row-major m x k and Y stored
 * transposed, row-major n x k (both e4m3, K-contiguous: cuBLASLt's TN form), fp32 accumulation,
 * no fast accumulation. m, n, k must be multiples of 16. The scales are device floats (the
 * dequantization scales amax / 448), ws device memory that outlives the GEMM. Returns 0, else a
 * cublasStatus (or -1) with a message; *out is NULL then. */
typedef struct bench_fp8_gemm bench_fp8_gemm;
int bench_fp8_gemm_make(bench_cublaslt *c, int64_t m, int64_t n, int64_t k, CUdeviceptr x_scale,
                        CUdeviceptr yt_scale, CUdeviceptr ws, size_t ws_bytes,
                        bench_fp8_gemm **out, char *err, size_t en);
/* cublasLtMatmul of g on `stream`; returns the cublasStatus (0 = ok). */
int bench_fp8_gemm_run(bench_fp8_gemm *g, CUdeviceptr X, CUdeviceptr Yt, CUdeviceptr C,
                       CUstream stream);
void bench_fp8_gemm_free(bench_fp8_gemm *g);

/* ---- timing.c ------------------------------------------------------------------------------ */
/* One timed run: iteration `it` (buffer set it % nsets). Returns 0 or a nonzero error. */
typedef int (*bench_fn)(void *arg, int it);
/* warmup untimed runs, then `iters` runs each between two CUDA events on `stream`; the samples
 * into *out. Returns 0, or the first nonzero value of fn / -1 for an event error (message). */
int bench_time(const cuda_driver *d, CUstream stream, int warmup, int iters, bench_fn fn,
               void *arg, bench_stat *out, char *err, size_t n);
/* Buffer sets to rotate so that consecutive runs touch more than 2x the L2 size: at least 2. */
int bench_sets_for(size_t set_bytes, int l2_bytes, size_t budget_bytes);

/* ---- report.c ------------------------------------------------------------------------------ */
void bench_report_table(const bench_run *run, FILE *f);

/* ---- scales.c: --scales ------------------------------------------------------------------ */
/* For every layer of run->layers (model = the loaded spec): g_x errors with g' per tensor, per
 * sample and per token, LQS's pick and the g_w error on the CPU twins against fp64, on seeded
 * Gaussian, channel-outlier and token-outlier g_y; one table row per (layer, data) on f, then a
 * summary line. Returns 0, 2 when a layer could not be planned or run (its row says why), 1 on
 * bad arguments or no memory. */
int bench_scales(const bench_run *run, const hot_model *model, FILE *f);
int bench_report_json(const bench_run *run, FILE *f);
/* The JSON report's opening (tool, backend, device, arch, spec, ..., ceilings) up to and
 * including the '[' of its "layers" array: shared by the modes that write their own layers. */
void bench_report_json_head(const bench_run *run, FILE *f);

/* ---- paper_diffs.c: --paper-diffs --------------------------------------------------------- */
/* For every layer of run->layers planned with recipe paper_code (B = --batch, else 4; L =
 * --tokens, else the layer's): g_x and g_w errors against fp64 of a what-if backward with hot's
 * numerics (checked bit for bit against the CPU twins through the public API) and with each
 * remaining difference from the authors' code switched to their form, alone and all together,
 * on Gaussian and token-smooth x, over --seeds seeds; a table on f. Returns 0, 2 when a layer
 * could not be planned or run or the baseline did not match the twins (the output says which),
 * 1 on bad arguments. */
int bench_paper_diffs(const bench_run *run, const hot_model *model, FILE *f);
/* --memory: per layer, recipe (the spec's, and paper_code) and batch (--batch, else 1, 4 and
 * the spec's), the saved buffer of a real save into a buffer of exactly hot_layer_saved_bytes
 * (CPU backend) against the method's own count (plan_abc_method_bytes: K·I int8 + one fp32
 * scale per group) and an fp32 x, and the backward's unpack traffic. Table on f; 0, 1 on a
 * failure (said on f), 2 when a saved buffer exceeds 1.05 x the method's count. */
int bench_memory(const bench_run *run, const hot_model *model, FILE *f);
/* --model (model.c): per kernel of every listed layer's save and backward, occupancy, waves and a
 * roofline prediction on H100 SXM and H200, then the backward against cuBLAS BF16 / cuBLASLt FP8
 * (predicted), as a table and one JSON line on f. Needs no GPU. Returns 0, or 1 when a layer
 * cannot be planned (said on stderr). */
int bench_model(const bench_run *run, const hot_model *model, FILE *f);

/* ---- paths.c: --gemm-paths ----------------------------------------------------------------- */
/* For every layer of run->layers: the layer planned three ways on a 9.0 device — mma_s8 (arch
 * sm_90), wgmma_s8 (the 9.0a target, tile_gx/tile_gw.warps_n = 1) and tma_s8 (9.0a, warps_n = 2) —
 * run on the same inputs (g_x and g_w compared bit for bit across the paths, and with the CPU
 * backend at the check size), the two GEMM kernels of each timed (per-kernel profiling), and
 * cuBLAS BF16 and cuBLASLt FP8 GEMMs of the same sizes timed beside them; TOP/s against the INT8
 * ceiling of the same run. gpu NULL (CPU backend) or a device that is not 9.0: one line says
 * the mode is skipped and why. The table goes to stdout (JSON with --json), the JSON to --out.
 * Returns 0, 2 when a path failed, could not be planned or gave other bits, 1 when --out cannot
 * be written or memory ran out. */
int bench_gemm_paths(bench_run *run, bench_gpu *gpu);
/* --gemm-paths --precompile: every kernel bench_gemm_paths would launch (the three plans of each
 * layer at the benchmark size and, when the check is capped, at the check size) compiled into
 * the kernel cache ($HOT_CACHE_DIR, required) on CPU-backend contexts with the arch forced: no
 * driver, no GPU. Prints one line per layer and a total. Returns 0, 2 when a plan or compile
 * failed (said), 1 without HOT_CACHE_DIR. */
int bench_gemm_paths_precompile(bench_run *run);

#endif

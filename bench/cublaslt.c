/* cublaslt.c — the FP8 baseline: cuBLASLt (libcublasLt.so.13 / .12, loaded with dlopen beside
 * libcublas, never linked) multiplying e4m3 operands with per-tensor scales, fp32 accumulation
 * and a bf16 result — the GEMM an FP8 training recipe runs on Ada and Hopper.
 *
 * Layout. cuBLASLt is column-major, and its FP8 kernels on sm_89/sm_90 take only the "TN" form:
 * D (M x N) = scale_A * scale_B * op(A) . B with op(A) = A^T, A stored K x M (ld K) and B
 * stored K x N (ld K): both operands K-contiguous. A row-major C (m x n) = X (m x k) . Y (k x n)
 * is the column-major C^T (n x m) = Y^T . X^T, so it runs with M = n, N = m, K = k, A = Y^T
 * stored row-major n x k ("Yt", K-contiguous) and B = X stored row-major m x k (K-contiguous);
 * D is then C row-major with ld n. The caller stores the operands that way (bench/gpu.c).
 *
 * The few values of cublasLt.h / cublas_api.h / library_types.h used here are declared below
 * (CUDA 12 and 13 agree on them); no toolkit header is included. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum {
  LT_OP_N = 0, LT_OP_T = 1,              /* cublasOperation_t: as stored / transposed */
  LT_R_32F = 0,                          /* cudaDataType: float */
  LT_R_16BF = 14,                        /* cudaDataType: bfloat16 */
  LT_R_8F_E4M3 = 28,                     /* cudaDataType: fp8 e4m3 */
  LT_COMPUTE_32F = 68,                   /* cublasComputeType_t CUBLAS_COMPUTE_32F: fp32 sums */
  /* cublasLtMatmulDescAttributes_t */
  LT_DESC_TRANSA = 3,                    /* int32 cublasOperation_t of A */
  LT_DESC_TRANSB = 4,                    /* int32 cublasOperation_t of B */
  LT_DESC_A_SCALE_POINTER = 17,          /* device float *: A's dequantization scale */
  LT_DESC_B_SCALE_POINTER = 18,          /* device float *: B's dequantization scale */
  LT_DESC_FAST_ACCUM = 25,               /* int8: 1 = FP8 fast accumulation (less accurate) */
  /* cublasLtMatmulPreferenceAttributes_t */
  LT_PREF_MAX_WORKSPACE_BYTES = 1,       /* uint64: workspace the algorithm may use */
};

/* cublasLtMatmulAlgo_t and cublasLtMatmulHeuristicResult_t, as cublasLt.h lays them out. */
typedef struct {
  uint64_t data[8];
} lt_algo;
typedef struct {
  lt_algo algo;
  size_t workspace_size;
  int state; /* cublasStatus_t of this result */
  float waves;
  int reserved[4];
} lt_heuristic;

/* The function table: every entry point hot-bench calls, resolved when the library is opened. */
typedef struct {
  int (*create)(void **handle);
  int (*destroy)(void *handle);
  int (*desc_create)(void **desc, int compute_type, int scale_type);
  int (*desc_destroy)(void *desc);
  int (*desc_set)(void *desc, int attr, const void *buf, size_t bytes);
  int (*layout_create)(void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
  int (*layout_destroy)(void *layout);
  int (*pref_create)(void **pref);
  int (*pref_destroy)(void *pref);
  int (*pref_set)(void *pref, int attr, const void *buf, size_t bytes);
  int (*heuristic)(void *handle, void *desc, void *a, void *b, void *c, void *d, void *pref,
                   int requested, lt_heuristic *results, int *returned);
  int (*matmul)(void *handle, void *desc, const void *alpha, const void *A, void *a_layout,
                const void *B, void *b_layout, const void *beta, const void *C, void *c_layout,
                void *D, void *d_layout, const lt_algo *algo, void *workspace,
                size_t workspace_bytes, void *stream);
} lt_fns;

/* Names in the order of lt_fns' members. */
static const char *const lt_names[] = {
    "cublasLtCreate", "cublasLtDestroy", "cublasLtMatmulDescCreate", "cublasLtMatmulDescDestroy",
    "cublasLtMatmulDescSetAttribute", "cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutDestroy",
    "cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceDestroy",
    "cublasLtMatmulPreferenceSetAttribute", "cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmul"};
#define LT_NSYM ((int)(sizeof lt_names / sizeof lt_names[0]))

struct bench_cublaslt {
  void *lib, *handle;
  lt_fns f;
  char path[512];
};

struct bench_fp8_gemm {
  bench_cublaslt *c;
  void *desc, *la, *lb, *ld;
  lt_algo algo;
  int64_t m, n, k;
  CUdeviceptr ws;
  size_t ws_bytes;
};

const char *bench_cublaslt_path(const bench_cublaslt *c) { return c ? c->path : ""; }

bench_cublaslt *bench_cublaslt_open_paths(const char *const *paths, int np, char *err, size_t n) {
  bench_cublaslt *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, n, "out of host memory");
    return NULL;
  }
  const char *why = "";
  for (int i = 0; i < np && !c->lib; ++i) {
    c->lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (c->lib) snprintf(c->path, sizeof c->path, "%.500s", paths[i]);
    else why = dlerror();
  }
  if (!c->lib) {
    snprintf(err, n, "cuBLASLt not found (tried %d paths: %s%s): %.200s", np, np ? paths[0] : "",
             np > 1 ? " ..." : "", why ? why : "");
    free(c);
    return NULL;
  }
  /* Every symbol up front: a library that lacks one is refused by name, before any call. */
  void *p[LT_NSYM];
  _Static_assert(sizeof(lt_fns) == sizeof p, "lt_names and lt_fns must list the same functions");
  for (int i = 0; i < LT_NSYM; ++i) {
    p[i] = dlsym(c->lib, lt_names[i]);
    if (!p[i]) {
      snprintf(err, n, "%.300s: missing symbol %s", c->path, lt_names[i]);
      dlclose(c->lib);
      free(c);
      return NULL;
    }
  }
  /* POSIX makes dlsym's object pointers callable; the table is filled by copying them. */
  memcpy(&c->f, p, sizeof c->f);
  int s = c->f.create(&c->handle);
  if (s != 0) {
    snprintf(err, n, "%.300s: cublasLtCreate failed (cublasStatus %d)", c->path, s);
    /* the library stays loaded: its runtime may have registered exit handlers */
    free(c);
    return NULL;
  }
  return c;
}

bench_cublaslt *bench_cublaslt_open(char *err, size_t n) {
  char cand[6][512];
  const char *paths[6];
  int nc = bench_lib_candidates("libcublasLt", cand, 6);
  for (int i = 0; i < nc; ++i) paths[i] = cand[i];
  return bench_cublaslt_open_paths(paths, nc, err, n);
}

void bench_cublaslt_close(bench_cublaslt *c) {
  if (!c) return;
  if (c->handle) c->f.destroy(c->handle);
  /* like cuBLAS: leave the library loaded (exit handlers of its runtime) */
  free(c);
}

const char *bench_fp8_arch_reason(int major, int minor, char *buf, size_t n) {
  if (major > 8 || (major == 8 && minor >= 9)) return NULL;
  snprintf(buf, n, "no FP8 tensor cores on sm_%d%d (cuBLASLt FP8 needs compute capability 8.9 or newer)",
           major, minor);
  return buf;
}

void bench_fp8_gemm_free(bench_fp8_gemm *g) {
  if (!g) return;
  const lt_fns *f = &g->c->f;
  if (g->la) f->layout_destroy(g->la);
  if (g->lb) f->layout_destroy(g->lb);
  if (g->ld) f->layout_destroy(g->ld);
  if (g->desc) f->desc_destroy(g->desc);
  free(g);
}

/* The descriptor (TN, fp32 compute, the per-tensor scale pointers, split accumulation) and the
 * three layouts of g. Returns 0, or the cublasStatus with *what naming the step. */
static int fp8_describe(bench_fp8_gemm *g, CUdeviceptr x_scale, CUdeviceptr yt_scale,
                        const char **what) {
  const lt_fns *f = &g->c->f;
  const int32_t ta = LT_OP_T, tb = LT_OP_N;
  const int8_t fast = 0; /* split accumulation, as FP8 recipes run their backward GEMMs */
  const void *sa = (const void *)(uintptr_t)yt_scale, *sb = (const void *)(uintptr_t)x_scale;
  const int64_t m = g->m, n = g->n, k = g->k;
  /* M = n, N = m, K = k (see the top of the file); each step named for the error message */
  *what = "cublasLtMatmulDescCreate";
  int s = f->desc_create(&g->desc, LT_COMPUTE_32F, LT_R_32F);
  if (!s && (s = f->desc_set(g->desc, LT_DESC_TRANSA, &ta, sizeof ta))) *what = "TRANSA";
  if (!s && (s = f->desc_set(g->desc, LT_DESC_TRANSB, &tb, sizeof tb))) *what = "TRANSB";
  if (!s && (s = f->desc_set(g->desc, LT_DESC_A_SCALE_POINTER, &sa, sizeof sa))) *what = "A_SCALE_POINTER";
  if (!s && (s = f->desc_set(g->desc, LT_DESC_B_SCALE_POINTER, &sb, sizeof sb))) *what = "B_SCALE_POINTER";
  if (!s && (s = f->desc_set(g->desc, LT_DESC_FAST_ACCUM, &fast, sizeof fast))) *what = "FAST_ACCUM";
  /* A = Y^T: K x M (ld K), B = X: K x N (ld K), D: M x N (ld M) */
  if (!s && (s = f->layout_create(&g->la, LT_R_8F_E4M3, (uint64_t)k, (uint64_t)n, k))) *what = "layout of A";
  if (!s && (s = f->layout_create(&g->lb, LT_R_8F_E4M3, (uint64_t)k, (uint64_t)m, k))) *what = "layout of B";
  if (!s && (s = f->layout_create(&g->ld, LT_R_16BF, (uint64_t)n, (uint64_t)m, n))) *what = "layout of D";
  return s;
}

/* The first algorithm the heuristic offers that works within the workspace, into g->algo.
 * Returns 0, the cublasStatus, or -1 (none offered), with the message in err. */
static int fp8_pick_algo(bench_fp8_gemm *g, char *err, size_t en) {
  const lt_fns *f = &g->c->f;
  const uint64_t wsb = g->ws_bytes;
  void *pref = NULL;
  lt_heuristic res[4];
  int got = 0;
  memset(res, 0, sizeof res);
  int s = f->pref_create(&pref);
  if (!s) s = f->pref_set(pref, LT_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
  /* C is not read (beta = 0); it takes D's layout, as cuBLASLt wants for a bf16 D */
  if (!s) s = f->heuristic(g->c->handle, g->desc, g->la, g->lb, g->ld, g->ld, pref, 4, res, &got);
  if (pref) f->pref_destroy(pref);
  int pick = -1;
  for (int i = 0; !s && i < got && i < 4 && pick < 0; ++i)
    if (res[i].state == 0 && res[i].workspace_size <= g->ws_bytes) pick = i;
  if (s || pick < 0) {
    if (s) snprintf(err, en, "cublasLtMatmulAlgoGetHeuristic: cublasStatus %d", s);
    else snprintf(err, en, "cuBLASLt has no FP8 algorithm for M %lld N %lld K %lld (%d offered)",
                  (long long)g->n, (long long)g->m, (long long)g->k, got);
    return s ? s : -1;
  }
  g->algo = res[pick].algo;
  return 0;
}

int bench_fp8_gemm_make(bench_cublaslt *c, int64_t m, int64_t n, int64_t k, CUdeviceptr x_scale,
                        CUdeviceptr yt_scale, CUdeviceptr ws, size_t ws_bytes,
                        bench_fp8_gemm **out, char *err, size_t en) {
  *out = NULL;
  if (m <= 0 || n <= 0 || k <= 0 || m % 16 || n % 16 || k % 16 || m > 0x7fffffff ||
      n > 0x7fffffff || k > 0x7fffffff) {
    snprintf(err, en, "FP8 GEMM %lld x %lld x %lld: cuBLASLt FP8 needs positive multiples of 16",
             (long long)m, (long long)n, (long long)k);
    return -1;
  }
  bench_fp8_gemm *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, en, "out of host memory");
    return -1;
  }
  g->c = c;
  g->m = m;
  g->n = n;
  g->k = k;
  g->ws = ws;
  g->ws_bytes = ws_bytes;
  const char *what = "";
  int s = fp8_describe(g, x_scale, yt_scale, &what);
  if (s) {
    snprintf(err, en, "cuBLASLt FP8 setup (%s): cublasStatus %d", what, s);
    bench_fp8_gemm_free(g);
    return s;
  }
  if ((s = fp8_pick_algo(g, err, en)) != 0) {
    bench_fp8_gemm_free(g);
    return s;
  }
  *out = g;
  return 0;
}

int bench_fp8_gemm_run(bench_fp8_gemm *g, CUdeviceptr X, CUdeviceptr Yt, CUdeviceptr C,
                       CUstream stream) {
  const float one = 1.0f, zero = 0.0f;
  void *d = (void *)(uintptr_t)C;
  return g->c->f.matmul(g->c->handle, g->desc, &one, (const void *)(uintptr_t)Yt, g->la,
                        (const void *)(uintptr_t)X, g->lb, &zero, d, g->ld, d, g->ld, &g->algo,
                        (void *)(uintptr_t)g->ws, g->ws_bytes, (void *)stream);
}

/* cublas.c — the baselines: cuBLAS loaded with dlopen (never linked), cublasGemmEx on the
 * benchmark's stream. Row-major products are issued as the column-major transposes:
 * row-major C (m x n) = A . B is column-major C^T (n x m) = B^T . A^T, so B goes first.
 * Enum values below are those of cublas_api.h / library_types.h (CUDA 12 and 13). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum {
  OP_N = 0, OP_T = 1,
  R_32F = 0, R_8I = 3, R_32I = 10, R_16BF = 14,
  COMPUTE_32F = 68, COMPUTE_32I = 72, COMPUTE_32F_FAST_TF32 = 77,
  GEMM_DEFAULT = -1
};

typedef int (*create_fn)(void **handle);
typedef int (*destroy_fn)(void *handle);
typedef int (*set_stream_fn)(void *handle, void *stream);
typedef int (*gemm_ex_fn)(void *handle, int transa, int transb, int m, int n, int k,
                          const void *alpha, const void *A, int atype, int lda, const void *B,
                          int btype, int ldb, const void *beta, void *C, int ctype, int ldc,
                          int compute, int algo);

struct bench_cublas {
  void *lib, *handle;
  destroy_fn destroy;
  gemm_ex_fn gemm;
  char path[512];
};

const char *bench_cublas_path(const bench_cublas *c) { return c ? c->path : ""; }

int bench_lib_candidates(const char *stem, char out[][512], int max) {
  const char *home = env_get("HOT_CUDA_HOME");
  const char *dirs[3] = {home && *home ? home : NULL, HOT_CUDA_LIBDIR_DEFAULT, ""};
  int n = 0;
  for (int d = 0; d < 3; ++d) {
    if (!dirs[d]) continue;
    for (int v = 13; v >= 12 && n < max; --v) {
      if (d == 0) snprintf(out[n++], 512, "%.400s/lib64/%.60s.so.%d", dirs[d], stem, v);
      else if (*dirs[d]) snprintf(out[n++], 512, "%.400s/%.60s.so.%d", dirs[d], stem, v);
      else snprintf(out[n++], 512, "%.60s.so.%d", stem, v); /* the loader path */
    }
  }
  return n;
}

bench_cublas *bench_cublas_open(void *stream, char *err, size_t n) {
  bench_cublas *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, n, "out of host memory");
    return NULL;
  }
  char cand[6][512];
  int nc = bench_lib_candidates("libcublas", cand, 6);
  for (int i = 0; i < nc && !c->lib; ++i) {
    c->lib = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (c->lib) memcpy(c->path, cand[i], sizeof c->path); /* same size, NUL-terminated */
  }
  if (!c->lib) {
    snprintf(err, n, "cuBLAS not found (libcublas.so.13/.12 in $HOT_CUDA_HOME/lib64, %s, the "
             "loader path): %s", HOT_CUDA_LIBDIR_DEFAULT, dlerror());
    free(c);
    return NULL;
  }
  /* POSIX allows converting dlsym's void * to a function pointer; the memcpy keeps -Wpedantic
   * quiet on compilers that warn about the cast. */
  void *p_create = dlsym(c->lib, "cublasCreate_v2"), *p_destroy = dlsym(c->lib, "cublasDestroy_v2");
  void *p_stream = dlsym(c->lib, "cublasSetStream_v2"), *p_gemm = dlsym(c->lib, "cublasGemmEx");
  if (!p_create || !p_destroy || !p_stream || !p_gemm) {
    snprintf(err, n, "%s lacks cublasCreate_v2/cublasDestroy_v2/cublasSetStream_v2/cublasGemmEx",
             c->path);
    dlclose(c->lib);
    free(c);
    return NULL;
  }
  create_fn create;
  set_stream_fn set_stream;
  memcpy(&create, &p_create, sizeof create);
  memcpy(&c->destroy, &p_destroy, sizeof c->destroy);
  memcpy(&set_stream, &p_stream, sizeof set_stream);
  memcpy(&c->gemm, &p_gemm, sizeof c->gemm);
  int s = create(&c->handle);
  if (s == 0) s = set_stream(c->handle, stream);
  if (s != 0) {
    snprintf(err, n, "%s: cublasCreate/cublasSetStream failed (cublasStatus %d)", c->path, s);
    if (c->handle) c->destroy(c->handle);
    dlclose(c->lib);
    free(c);
    return NULL;
  }
  return c;
}

void bench_cublas_close(bench_cublas *c) {
  if (!c) return;
  if (c->handle) c->destroy(c->handle);
  /* cuBLAS registers atexit handlers of its own runtime: leave the library loaded. */
  free(c);
}

#define DP(p) ((void *)(uintptr_t)(p))

int bench_cublas_gemm(bench_cublas *c, bench_prec prec, int a_t, int64_t m, int64_t n, int64_t k,
                      CUdeviceptr A, CUdeviceptr B, CUdeviceptr C) {
  if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return -2;
  const float one = 1.0f, zero = 0.0f;
  int in = prec == BENCH_BF16 ? R_16BF : R_32F, out = in;
  int compute = prec == BENCH_TF32 ? COMPUTE_32F_FAST_TF32 : COMPUTE_32F;
  /* Column-major: C^T (n x m, ld n) = B^T (n x k, ld n) . op(A^T): A^T is k x m with ld k when A is
   * stored m x k (a_t 0, op N), or m x k stored k x m (a_t 1: ld m, op T). */
  return c->gemm(c->handle, OP_N, a_t ? OP_T : OP_N, (int)n, (int)m, (int)k, &one, DP(B), in,
                 (int)n, DP(A), in, a_t ? (int)m : (int)k, &zero, DP(C), out, (int)n, compute,
                 GEMM_DEFAULT);
}

int bench_cublas_gemm_i8(bench_cublas *c, int64_t m, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C) {
  const int32_t one = 1, zero = 0;
  int d = (int)m;
  return c->gemm(c->handle, OP_T, OP_N, d, d, d, &one, DP(A), R_8I, d, DP(B), R_8I, d, &zero,
                 DP(C), R_32I, d, COMPUTE_32I, GEMM_DEFAULT);
}

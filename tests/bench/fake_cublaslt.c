/* fake_cublaslt.c — a recording stand-in for libcublasLt.so and libcublas.so (one module, linked
 * under both names in a test folder that HOT_CUDA_HOME names), so that hot-bench's baselines run
 * against the fake driver (tests/runtime/fake_cuda.c: "device" memory is host memory).
 *
 * cuBLASLt: descriptors, layouts and preferences are real objects; every attribute hot-bench
 * sets is checked for its documented size; cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul
 * check what cuBLASLt documents for FP8 on sm_89/sm_90 — e4m3 A and B, the "TN" form (A
 * transposed, B not), CUBLAS_COMPUTE_32F with fp32 scales, a bf16 D, shapes that agree
 * (op(A) M x K, B K x N, D M x N), M, N, K and the leading dimensions multiples of 16, leading
 * dimensions >= rows — and what this benchmark must do: A and B scale pointers set, an algorithm
 * from the heuristic for the same shape, alpha 1 and beta 0 (host), a workspace at least as large
 * as the algorithm asked for. A violation returns CUBLAS_STATUS_INVALID_VALUE (7; not TN:
 * CUBLAS_STATUS_NOT_SUPPORTED, 15) and is recorded. A valid matmul is computed for real on the
 * host in column-major form: D(m, n) = bf16(scale_A * scale_B * sum_k A(k, m) * B(k, n)) with
 * A(k, m) = A[m * lda + k] (transposed) and B(k, n) = B[n * ldb + k] — so a wrong layout in the
 * caller shows up as wrong numbers, not only as a refused call. Products of more than 2^30 MACs
 * (hot-bench's 8192^3 ceiling) are checked and logged but not computed.
 *
 * cuBLAS: cublasCreate_v2 / cublasDestroy_v2 / cublasSetStream_v2 / cublasGemmEx succeed and
 * count calls (no arithmetic).
 *
 * Test side: fake_cublaslt_state() (the record), fake_cublaslt_reset(), fake_cublaslt_fail_create.
 * With $FAKE_CUBLASLT_LOG set, each heuristic query and matmul also appends one line to that file:
 *   matmul M N K ta tb atype btype dtype lda ldb ldd compute scale_type a_scale b_scale fast ws st
 * Built with FAKE_LT_WITHOUT_HEURISTIC it lacks cublasLtMatmulAlgoGetHeuristic (the missing-symbol
 * path of the loader). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cublaslt.h"

#define EXPORT __attribute__((visibility("default")))
enum { ST_OK = 0, ST_INVALID = 7, ST_NOT_SUPPORTED = 15 };
enum { MAGIC_DESC = 0x44455343, MAGIC_LAYOUT = 0x4c41594f, MAGIC_PREF = 0x50524546, MAGIC_ALGO = 0xf8f8 };

typedef struct {
  int magic, compute, scale_type, transa, transb, fast;
  const void *a_scale, *b_scale;
} desc_t;
typedef struct {
  int magic, type;
  uint64_t rows, cols;
  int64_t ld;
} layout_t;
typedef struct {
  int magic;
  uint64_t ws;
} pref_t;
typedef struct {
  uint64_t data[8];
} algo_t;
typedef struct {
  algo_t algo;
  size_t workspace_size;
  int state;
  float waves;
  int reserved[4];
} heur_t;

static fake_cublaslt_state_t g_st;
static int g_handle = 0x17;

EXPORT fake_cublaslt_state_t *fake_cublaslt_state(void) { return &g_st; }
EXPORT void fake_cublaslt_reset(void) {
  int fail = g_st.fail_create;
  memset(&g_st, 0, sizeof g_st);
  g_st.fail_create = fail;
}
EXPORT void fake_cublaslt_fail_create(int on) { g_st.fail_create = on; }

static int refuse(int st, const char *msg) {
  g_st.refused++;
  snprintf(g_st.last_error, sizeof g_st.last_error, "%s", msg);
  return st;
}

static void log_line(const char *what, const desc_t *d, const layout_t *a, const layout_t *b,
                     const layout_t *dl, uint64_t ws, int st) {
  const char *path = getenv("FAKE_CUBLASLT_LOG");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  uint64_t M = d->transa ? a->cols : a->rows, K = d->transa ? a->rows : a->cols;
  uint64_t N = d->transb ? b->rows : b->cols;
  fprintf(f, "%s %llu %llu %llu %d %d %d %d %d %lld %lld %lld %d %d %d %d %d %llu %d\n", what,
          (unsigned long long)M, (unsigned long long)N, (unsigned long long)K, d->transa, d->transb,
          a->type, b->type, dl->type, (long long)a->ld, (long long)b->ld, (long long)dl->ld,
          d->compute, d->scale_type, d->a_scale != NULL, d->b_scale != NULL, d->fast,
          (unsigned long long)ws, st);
  fclose(f);
}

/* ---- cuBLASLt --------------------------------------------------------------------------- */
EXPORT int cublasLtCreate(void **h) {
  g_st.creates++;
  if (g_st.fail_create) return 3; /* CUBLAS_STATUS_ALLOC_FAILED */
  *h = &g_handle;
  return ST_OK;
}
EXPORT int cublasLtDestroy(void *h) {
  if (h != &g_handle) return refuse(ST_INVALID, "cublasLtDestroy: not a handle");
  g_st.destroys++;
  return ST_OK;
}

EXPORT int cublasLtMatmulDescCreate(void **out, int compute, int scale_type) {
  desc_t *d = calloc(1, sizeof *d);
  if (!d) return 3;
  d->magic = MAGIC_DESC;
  d->compute = compute;
  d->scale_type = scale_type;
  g_st.descs_live++;
  g_st.last_compute = compute;
  g_st.last_scale_type = scale_type;
  *out = d;
  return ST_OK;
}
EXPORT int cublasLtMatmulDescDestroy(void *p) {
  desc_t *d = p;
  if (!d || d->magic != MAGIC_DESC) return refuse(ST_INVALID, "cublasLtMatmulDescDestroy: not a descriptor");
  d->magic = 0;
  free(d);
  g_st.descs_live--;
  return ST_OK;
}

/* cublasLtMatmulDescAttributes_t values and the size each one documents */
EXPORT int cublasLtMatmulDescSetAttribute(void *p, int attr, const void *buf, size_t n) {
  desc_t *d = p;
  if (!d || d->magic != MAGIC_DESC || !buf) return refuse(ST_INVALID, "DescSetAttribute: bad descriptor or buffer");
  g_st.desc_sets++;
  switch (attr) {
  case 3: /* TRANSA, int32 */
  case 4: /* TRANSB, int32 */
    if (n != sizeof(int32_t)) return refuse(ST_INVALID, "TRANSA/TRANSB: size is not 4");
    if (attr == 3) d->transa = *(const int32_t *)buf;
    else d->transb = *(const int32_t *)buf;
    return ST_OK;
  case 17: /* A_SCALE_POINTER, const void * */
  case 18: /* B_SCALE_POINTER */
    if (n != sizeof(void *)) return refuse(ST_INVALID, "A/B_SCALE_POINTER: size is not a pointer's");
    if (attr == 17) memcpy(&d->a_scale, buf, sizeof d->a_scale);
    else memcpy(&d->b_scale, buf, sizeof d->b_scale);
    return ST_OK;
  case 25: /* FAST_ACCUM, int8 */
    if (n != sizeof(int8_t)) return refuse(ST_INVALID, "FAST_ACCUM: size is not 1");
    d->fast = *(const int8_t *)buf;
    return ST_OK;
  default:
    return refuse(ST_INVALID, "DescSetAttribute: attribute the fake does not model");
  }
}

EXPORT int cublasLtMatrixLayoutCreate(void **out, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  layout_t *l = calloc(1, sizeof *l);
  if (!l) return 3;
  *l = (layout_t){MAGIC_LAYOUT, type, rows, cols, ld};
  g_st.layouts_live++;
  if (g_st.n_layouts < FAKE_LT_MAX_LAYOUTS) {
    fake_lt_layout *r = &g_st.layouts[g_st.n_layouts++];
    r->type = type;
    r->rows = (int64_t)rows;
    r->cols = (int64_t)cols;
    r->ld = ld;
  }
  *out = l;
  return ST_OK;
}
EXPORT int cublasLtMatrixLayoutDestroy(void *p) {
  layout_t *l = p;
  if (!l || l->magic != MAGIC_LAYOUT) return refuse(ST_INVALID, "MatrixLayoutDestroy: not a layout");
  l->magic = 0;
  free(l);
  g_st.layouts_live--;
  return ST_OK;
}

EXPORT int cublasLtMatmulPreferenceCreate(void **out) {
  pref_t *p = calloc(1, sizeof *p);
  if (!p) return 3;
  p->magic = MAGIC_PREF;
  g_st.prefs_live++;
  *out = p;
  return ST_OK;
}
EXPORT int cublasLtMatmulPreferenceDestroy(void *q) {
  pref_t *p = q;
  if (!p || p->magic != MAGIC_PREF) return refuse(ST_INVALID, "PreferenceDestroy: not a preference");
  p->magic = 0;
  free(p);
  g_st.prefs_live--;
  return ST_OK;
}
EXPORT int cublasLtMatmulPreferenceSetAttribute(void *q, int attr, const void *buf, size_t n) {
  pref_t *p = q;
  if (!p || p->magic != MAGIC_PREF || !buf) return refuse(ST_INVALID, "PreferenceSetAttribute: bad preference");
  if (attr != 1 || n != sizeof(uint64_t)) /* MAX_WORKSPACE_BYTES, uint64 */
    return refuse(ST_INVALID, "PreferenceSetAttribute: not MAX_WORKSPACE_BYTES as uint64");
  memcpy(&p->ws, buf, sizeof p->ws);
  g_st.pref_ws = p->ws;
  return ST_OK;
}

static int is16(uint64_t v) { return v > 0 && v % 16 == 0; }

/* The FP8 rules (see the top of the file); 0 or a refusal. */
static int check_fp8(const desc_t *d, const layout_t *a, const layout_t *b, const layout_t *c,
                     const layout_t *dl) {
  if (!d || d->magic != MAGIC_DESC) return refuse(ST_INVALID, "not a matmul descriptor");
  if (!a || !b || !c || !dl || a->magic != MAGIC_LAYOUT || b->magic != MAGIC_LAYOUT ||
      c->magic != MAGIC_LAYOUT || dl->magic != MAGIC_LAYOUT)
    return refuse(ST_INVALID, "not a matrix layout");
  if (d->compute != 68 || d->scale_type != 0) return refuse(ST_INVALID, "FP8: compute must be CUBLAS_COMPUTE_32F with CUDA_R_32F scales");
  if (a->type != 28 || b->type != 28) return refuse(ST_INVALID, "FP8: A and B must be CUDA_R_8F_E4M3");
  if (dl->type != 14 || c->type != dl->type) return refuse(ST_INVALID, "FP8: D (and C) must be CUDA_R_16BF");
  if (d->transa != 1 || d->transb != 0) return refuse(ST_NOT_SUPPORTED, "FP8: only the TN form (A transposed, B not)");
  uint64_t M = a->cols, K = a->rows, N = b->cols;
  if (b->rows != K) return refuse(ST_INVALID, "FP8: op(A) and B disagree on K");
  if (dl->rows != M || dl->cols != N || c->rows != M || c->cols != N) return refuse(ST_INVALID, "FP8: D is not M x N");
  if (!is16(M) || !is16(N) || !is16(K)) return refuse(ST_INVALID, "FP8: M, N, K must be multiples of 16");
  if (a->ld < (int64_t)a->rows || b->ld < (int64_t)b->rows || dl->ld < (int64_t)dl->rows || c->ld != dl->ld)
    return refuse(ST_INVALID, "leading dimension smaller than the rows");
  if (a->ld % 16 || b->ld % 16 || dl->ld % 8) return refuse(ST_INVALID, "FP8: leading dimensions not 16-byte multiples");
  if (!d->a_scale || !d->b_scale) return refuse(ST_INVALID, "A and B scale pointers must be set (per-tensor FP8 scales)");
  return ST_OK;
}

#ifndef FAKE_LT_WITHOUT_HEURISTIC
EXPORT int cublasLtMatmulAlgoGetHeuristic(void *h, void *desc, void *A, void *B, void *C, void *D,
                                          void *pref, int requested, heur_t *res, int *returned) {
  g_st.heuristics++;
  *returned = 0;
  if (h != &g_handle) return refuse(ST_INVALID, "heuristic: not a handle");
  const pref_t *p = pref;
  if (!p || p->magic != MAGIC_PREF) return refuse(ST_INVALID, "heuristic: not a preference");
  if (requested <= 0) return refuse(ST_INVALID, "heuristic: requestedAlgoCount <= 0");
  int st = check_fp8(desc, A, B, C, D);
  log_line("heuristic", desc, A, B, D, p->ws, st);
  if (st) return st;
  const layout_t *a = A, *b = B;
  memset(res, 0, sizeof *res);
  res->algo.data[0] = MAGIC_ALGO;
  res->algo.data[1] = a->cols; /* M, N, K this algorithm was chosen for */
  res->algo.data[2] = b->cols;
  res->algo.data[3] = a->rows;
  res->workspace_size = p->ws >= 4096 ? 4096 : 0;
  res->state = ST_OK;
  res->waves = 1.0f;
  *returned = 1;
  return ST_OK;
}
#endif

static float bf16_round(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  memcpy(&v, &u, 4);
  return v;
}

static float e4m3(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  float v = e ? (float)(8 + m) * (float)(1u << e) / 1024.0f : (float)m / 512.0f;
  return (c & 0x80) ? -v : v;
}

EXPORT int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *Ad,
                          const void *B, void *Bd, const void *beta, const void *C, void *Cd, void *D,
                          void *Dd, const algo_t *algo, void *ws, size_t ws_bytes, void *stream) {
  (void)stream;
  g_st.matmuls++;
  if (h != &g_handle) return refuse(ST_INVALID, "matmul: not a handle");
  const desc_t *d = desc;
  const layout_t *a = Ad, *b = Bd, *dl = Dd;
  int st = check_fp8(d, a, b, Cd, dl);
  if (!st && (!algo || algo->data[0] != MAGIC_ALGO || algo->data[1] != a->cols ||
              algo->data[2] != b->cols || algo->data[3] != a->rows))
    st = refuse(ST_INVALID, "matmul: algorithm not from the heuristic for this shape");
  if (!st && (!alpha || !beta || *(const float *)alpha != 1.0f || *(const float *)beta != 0.0f))
    st = refuse(ST_INVALID, "matmul: alpha must be 1 and beta 0 (host floats)");
  if (!st && (ws_bytes < 4096 || !ws)) st = refuse(ST_INVALID, "matmul: workspace smaller than the algorithm's");
  if (!st && (!A || !B || !D || (C && C != D))) st = refuse(ST_INVALID, "matmul: null operand or C != D");
  if (d && d->magic == MAGIC_DESC && a && b && dl) log_line("matmul", d, a, b, dl, ws_bytes, st);
  if (st) return st;
  g_st.last_a = A;
  g_st.last_b = B;
  g_st.last_d = D;
  g_st.last_ws = ws;
  g_st.last_a_scale = d->a_scale;
  g_st.last_b_scale = d->b_scale;
  g_st.last_fast = d->fast;
  const uint8_t *pa = A, *pb = B;
  uint16_t *pd = D;
  const float sa = *(const float *)d->a_scale, sb = *(const float *)d->b_scale;
  const uint64_t M = a->cols, N = b->cols, K = a->rows;
  if ((double)M * (double)N * (double)K > 0x1p30) return ST_OK;
  for (uint64_t n = 0; n < N; ++n)
    for (uint64_t m = 0; m < M; ++m) {
      double acc = 0;
      for (uint64_t k = 0; k < K; ++k)
        acc += (double)e4m3(pa[m * (uint64_t)a->ld + k]) * (double)e4m3(pb[n * (uint64_t)b->ld + k]);
      float v = bf16_round((float)(acc * sa * sb));
      uint32_t u;
      memcpy(&u, &v, 4);
      pd[n * (uint64_t)dl->ld + m] = (uint16_t)(u >> 16);
    }
  return ST_OK;
}

/* ---- cuBLAS (the BF16/FP32/TF32 baselines): calls succeed and are counted ------------------ */
EXPORT int cublasCreate_v2(void **h) { *h = &g_handle; return ST_OK; }
EXPORT int cublasDestroy_v2(void *h) { (void)h; return ST_OK; }
EXPORT int cublasSetStream_v2(void *h, void *s) { (void)h; (void)s; return ST_OK; }
EXPORT int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                        int at, int lda, const void *B, int bt, int ldb, const void *beta, void *C,
                        int ct, int ldc, int compute, int algo) {
  (void)h; (void)ta; (void)tb; (void)m; (void)n; (void)k; (void)alpha; (void)A; (void)at; (void)lda;
  (void)B; (void)bt; (void)ldb; (void)beta; (void)C; (void)ct; (void)ldc; (void)compute; (void)algo;
  g_st.gemm_ex++;
  return ST_OK;
}

/* fake_cublaslt.h — what the fake cuBLASLt / cuBLAS (fake_cublaslt.c) records, for the tests that
 * load it in-process (dlsym "fake_cublaslt_state"). */
#ifndef HOT_FAKE_CUBLASLT_H
#define HOT_FAKE_CUBLASLT_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_LT_MAX_LAYOUTS 64

typedef struct {
  int type;                 /* cudaDataType */
  int64_t rows, cols, ld;   /* as passed to cublasLtMatrixLayoutCreate */
} fake_lt_layout;

typedef struct {
  int fail_create;          /* cublasLtCreate returns CUBLAS_STATUS_ALLOC_FAILED */
  int creates, destroys;    /* cublasLtCreate / cublasLtDestroy calls */
  int descs_live, layouts_live, prefs_live; /* created minus destroyed */
  int desc_sets;            /* cublasLtMatmulDescSetAttribute calls accepted or refused */
  int last_compute, last_scale_type; /* of the last cublasLtMatmulDescCreate */
  int n_layouts;            /* layouts created, in order (up to FAKE_LT_MAX_LAYOUTS kept) */
  fake_lt_layout layouts[FAKE_LT_MAX_LAYOUTS];
  uint64_t pref_ws;         /* the last MAX_WORKSPACE_BYTES preference */
  int heuristics, matmuls;  /* calls */
  int refused;              /* calls refused (last_error says why) */
  char last_error[160];
  /* the last accepted matmul */
  const void *last_a, *last_b, *last_d, *last_ws, *last_a_scale, *last_b_scale;
  int last_fast;
  int gemm_ex;              /* cublasGemmEx calls (the cuBLAS side) */
} fake_cublaslt_state_t;

#endif

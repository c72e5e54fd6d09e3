/* ref_steps.h — the reference path's calls, driven by the step table (kernel_desc.h's kd_steps):
 * a save, backward or calibration is the state below, and each step that runs hands it to its
 * family's twin step function, ref_step_<family> (defined in the family's twin file, beside the
 * twin it runs; the families are the generated list hot_families.inc). A twin does in one pass
 * what its kernel does in phases: the reference path runs each role's step function once, at its
 * first step that runs (templates/layer_ref.c). Adding a family: docs/adding.md. */
#ifndef HOT_REF_STEPS_H
#define HOT_REF_STEPS_H

#include <stdlib.h>

#include "hot_families.inc"
#include "kernel_desc.h"
#include "ref.h"

/* One call of the reference path. The caller's arguments, and between steps the host buffers of
 * the call by slot (hot_lbuf, as the CUDA backend's: q_g', s_g, q_w', s_w, q_g^, ...): a step
 * function allocates the slots it writes with ref_call_alloc and reads those of the steps before
 * it; layer_ref.c frees them all after the call. */
/* `wrote` and the role bits are unsigned masks */
_Static_assert(HOT_LB_COUNT <= 32 && HOT_K_ROLE_COUNT <= 32, "one bit per slot and per role");

typedef struct hot_ref_call {
  hot_call call;
  const hot_layer_plan *pl;
  const void *x;                /* save: the input */
  hot_ref_saved *save_out;      /* save: the result (q_x^ and s_x^ when abc_x runs) */
  const hot_ref_saved *saved;   /* backward: the saved buffer */
  const void *g_y, *w;
  hot_dtype dt;
  hot_gran gran;                /* backward: g' granularity */
  uint64_t seed;
  uint32_t step;
  float *g_x, *g_w, *g_b;       /* backward: the outputs (each NULL when not asked for) */
  hot_ref_lqs_result *lqs_out;  /* calibrate: the result */
  void *buf[HOT_LB_COUNT];      /* the call's host buffers by slot (owned; NULL: none) */
  unsigned wrote;               /* bit per hot_lbuf output a step wrote (HOT_LB_GX, HOT_LB_GW) */
} hot_ref_call;

/* A fresh buffer of `bytes` bytes for slot s of call c (any previous one freed), owned by c; NULL
 * when out of memory (the step returns HOT_REF_ENOMEM). Inline: the twins' objects call nothing in
 * layer_ref.c, which calls them (tests/layering). */
static inline void *ref_call_alloc(hot_ref_call *c, hot_lbuf s, int64_t bytes) {
  free(c->buf[s]);
  c->buf[s] = bytes > 0 ? malloc((size_t)bytes) : NULL;
  return c->buf[s];
}

/* The twin step function of each family: runs the twin of step s's role on call c; returns a
 * HOT_REF_* status. */
#define HOT_REF_STEP_DECL_(family, cpu) int ref_step_##cpu(hot_ref_call *c, const hot_step *s);
HOT_KERNEL_FAMILIES(HOT_REF_STEP_DECL_)
#undef HOT_REF_STEP_DECL_

/* Recipe nvfp4 (plan fmt HOT_FMT_NVFP4, templates/CONTRACT.md 20.6): the hq, hla and gemm
 * families' step functions hand their steps to these (templates/nvfp4_steps_ref.c), which run the
 * NVFP4/MXFP8 twin of nvfp4_ref.c: g' (is_g) or w'; g^ (is_g) or x^ into the saved result (the
 * save); the g_x (gx) or g_w GEMM. Each returns a HOT_REF_* status. */
int ref_nvfp4_hq(hot_ref_call *c, int is_g);
int ref_nvfp4_hla(hot_ref_call *c, int is_g);
int ref_nvfp4_gemm(hot_ref_call *c, int gx);

#endif

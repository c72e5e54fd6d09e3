/* fast_steps.h — the fast CPU path's calls, driven by the step table as the reference path's
 * (templates/ref_steps.h): a save, backward or calibration is the state below, and each step
 * that runs hands it to its family's fast step function, fast_step_<family> (the families are the
 * generated list hot_families.inc), once per role, at its first step that runs. A fast step
 * function is bit-identical to its family's twin step function; it may do in its own pass the
 * work of a step that runs later (fast_layer.c: hq_g sums g_b while it reads g_y) when `runs`
 * says that step runs, and marks it in `fused`. Adding a family: docs/adding.md. */
#ifndef HOT_FAST_STEPS_H
#define HOT_FAST_STEPS_H

#include <stdatomic.h>
#include <stdlib.h>

#include "fast.h"
#include "fast_internal.h"
#include "hot_families.inc"
#include "kernel_desc.h"

/* One call of the fast path: the caller's arguments, the run's configuration, and between steps
 * the call's buffers by slot (hot_lbuf, as the CUDA backend's), owned by the call: a step
 * allocates the slots it writes with fast_call_alloc and may release those it was the last to
 * read (fast_call_release); fast_layer.c releases the rest after the call. */
/* `wrote` and the role bits are unsigned masks */
_Static_assert(HOT_LB_COUNT <= 32 && HOT_K_ROLE_COUNT <= 32, "one bit per slot and per role");

typedef struct fast_call {
  hot_call call;
  const fast_config *cf;        /* the run's (fast_config_for: small calls on the caller) */
  const hot_layer_plan *pl;      /* prep->pl */
  const fast_prepared *prep;    /* the layer's steps, resolved once (fast_layer_prepare) */
  const void *x;                /* save: the input */
  hot_ref_saved *save_out;      /* save: the result */
  int8_t *save_codes;           /* save: where the x^ codes go (the caller's, I x K bytes), or
                                   NULL: into save_out->q_x (malloc) */
  const hot_ref_saved *saved;   /* backward: the saved buffer */
  const void *g_y, *w;
  hot_dtype dt;
  hot_gran gran;
  uint64_t seed;
  uint32_t step;
  float *g_x, *g_w, *g_b;       /* backward: the outputs (each NULL when not asked for) */
  hot_ref_lqs_result *lqs_out;  /* calibrate: the result */
  void *buf[HOT_LB_COUNT];      /* the call's host buffers by slot (NULL: none) */
  unsigned char pooled[HOT_LB_COUNT]; /* 1: a fast_scratch block, 0: malloc */
  unsigned runs;                /* bit per role with a step that runs in this call */
  unsigned fused;               /* bit per role whose work an earlier step did */
  unsigned wrote;               /* bit per hot_lbuf output written (HOT_LB_GX, HOT_LB_GW) */
  atomic_int inf_x, inf_w;      /* the GEMM epilogues' overflow flags */
} fast_call;

/* Releases slot s of call c (NULL: nothing). */
static inline void fast_call_release(fast_call *c, hot_lbuf s) {
  if (c->pooled[s]) fast_unscratch(c->buf[s]);
  else free(c->buf[s]);
  c->buf[s] = NULL;
}

/* A buffer of `bytes` bytes for slot s of call c (any previous one released): from the pool of
 * large scratch blocks when pooled (fast_scratch), else malloc; NULL when out of memory. Inline,
 * as fast_call_release: a family's fast step function calls nothing in fast_layer.c, which calls
 * it (tests/layering). */
static inline void *fast_call_alloc(fast_call *c, hot_lbuf s, size_t bytes, int pooled) {
  fast_call_release(c, s);
  c->pooled[s] = (unsigned char)(pooled != 0);
  c->buf[s] = pooled ? fast_scratch(bytes) : malloc(bytes ? bytes : 1);
  return c->buf[s];
}

/* The fast step function of each family: runs step s's role on call c, bit for bit as its twin
 * step function; returns a HOT_REF_* status. */
#define HOT_FAST_STEP_DECL_(family, cpu) int fast_step_##cpu(fast_call *c, const hot_step *s);
HOT_KERNEL_FAMILIES(HOT_FAST_STEP_DECL_)
#undef HOT_FAST_STEP_DECL_

/* Recipe nvfp4 (plan fmt HOT_FMT_NVFP4): the hq, hla and gemm families' fast step functions hand
 * their steps to these (fast_nvfp4.c), bit for bit as ref_nvfp4_hq / _hla / _gemm (ref_steps.h,
 * the same arguments); each returns a HOT_REF_* status. */
int fast_nvfp4_hq(fast_call *c, int is_g);
int fast_nvfp4_hla(fast_call *c, int is_g);
int fast_nvfp4_gemm(fast_call *c, int gx);

#endif

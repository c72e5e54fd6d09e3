/* cost.h — what one kernel launch of a layer plan must move and compute, so that a measured time
 * becomes an achieved bandwidth (GB/s against a copy ceiling) or rate (TOPS against a GEMM
 * ceiling). Pure functions of the plan (no Lua, no CUDA, no allocation).
 *
 * The bytes are the COMPULSORY traffic of the launch: every input element read once, every
 * output written once, at the storage width of the plan (input dtype, int8 or packed int4 codes,
 * fp32 outputs and scales), the way a device-to-device copy of the same bytes would count them.
 * Re-reads a kernel does on purpose (HQ lines longer than 1024 elements reload their chunks from
 * L2) and atomics on single words are not counted: the figure says how close the launch comes to
 * streaming its data once, which is the goal of the fused kernels. */
#ifndef HOT_COST_H
#define HOT_COST_H

#include <stdint.h>

#include "plan.h"

typedef struct {
  int64_t bytes_read;    /* compulsory bytes read from device memory */
  int64_t bytes_written; /* compulsory bytes written */
  int64_t int_ops;       /* integer tensor-core operations (2 per multiply-add, padded K), GEMMs */
  int bound;             /* 0: memory-bound (report GB/s), 1: math-bound (report TOPS) */
} hot_kernel_cost;

/* Fills *out for one launch of `role` with the launch argument `phase` (0 for kernels without
 * phases; the phases are those of the runtime, see each template's header) in plan p. gran_row:
 * the g' scale in effect (1 = per token) — it decides the HQ g' launch (phase 2 = one pass).
 * Returns 0, or -1 when the role is not in the plan or the phase does not exist for it (*out is
 * then zeroed). Borrowed pointers only; nothing is kept. */
int plan_kernel_cost(const hot_layer_plan *p, hot_kernel_role role, int phase, int gran_row,
                     hot_kernel_cost *out);

#endif

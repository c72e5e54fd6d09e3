/* launch.h — one launch function per kernel role (launch.c): each launches on the plan's
 * geometry (gen/plan.c), builds the argument list of the template's entry and launches on the
 * caller's stream. Private to the CUDA backend (cuda_backend.c; and the tests): launch.c reads
 * the backend's state through cuda_backend.h's accessors and calls back into nothing. */
#ifndef HOT_LAUNCH_H
#define HOT_LAUNCH_H

#include "cuda_backend.h"
#include "hot_internal.h"

/* "layer 'x': kernel hla_g: template templates/hla_project.cu not available in this build"
 * (HOT_ERR_UNSUPPORTED, message set) for the first kernel the layer's JIT found missing among the
 * roles set in `need` (bit per hot_kernel_role); HOT_OK when none. */
hot_status launch_need_kernels(hot_layer *layer, unsigned need);

/* One launch per role on the plan's geometry (gen/plan.c); each builds the argument list of the
 * template's header and launches on `stream`. Device pointers as CUdeviceptr. */
/* HQ operands (templates/hadamard_quant.cu): scale_in / math_out for SAWB of w' (0 = NULL). */
hot_status launch_hq(hot_layer *layer, hot_kernel_role role, CUdeviceptr src, CUdeviceptr codes,
                     CUdeviceptr scales, CUdeviceptr amax, int per_sample, CUdeviceptr scale_in,
                     CUdeviceptr math_out, int phase, uint32_t step, CUstream stream);
/* HLA / ABC projections (templates/hla_project.cu): role HOT_K_ABC_X (x, I columns, RTN) or
 * HOT_K_HLA_G (g_y, O columns, SR); codes cols x hla.gemm.k_pad int8, scale 1 float. */
hot_status launch_hla(hot_layer *layer, hot_kernel_role role, CUdeviceptr src, CUdeviceptr codes,
                      CUdeviceptr scale, CUdeviceptr amax, CUdeviceptr scale_in,
                      CUdeviceptr math_out, int phase, uint32_t step, CUstream stream);
/* SAWB scale (templates/sawb.cu), role HOT_K_SAWB_W or HOT_K_SAWB_X, over the math tensor v of
 * launch_sawb_elems(pl, role) floats; phase 0 on the plan's grid, phase 1 on one block. */
hot_status launch_sawb(hot_layer *layer, hot_kernel_role role, CUdeviceptr v, CUdeviceptr partials,
                       CUdeviceptr amax, CUdeviceptr scale, int phase, CUstream stream);
/* LQS (templates/lqs.cu) on g_y, phases 0, 1, 2 on the plan's grid, the layer's LQS scratch. */
hot_status launch_lqs(hot_layer *layer, CUdeviceptr g_y, int phase, uint32_t step,
                      CUstream stream);
/* Elements of the math tensor a SAWB role reads: o_pad * I (w'), hla.k * I (x^); 0 otherwise. */
int64_t launch_sawb_elems(const hot_layer_plan *pl, hot_kernel_role role);
hot_status launch_gemm(hot_layer *layer, hot_kernel_role role, CUdeviceptr a, CUdeviceptr b,
                       CUdeviceptr c, CUdeviceptr row_scale, CUdeviceptr alpha_a,
                       CUdeviceptr alpha_b, CUstream stream);
hot_status launch_bias(hot_layer *layer, CUdeviceptr g_y, CUdeviceptr g_b, CUstream stream);
/* HOT_ERR_UNSUPPORTED / HOT_ERR_INTERNAL (message set) unless every role in `need` (bit per
 * hot_kernel_role) is in the plan and has launch code here. */
hot_status launch_check(hot_layer *layer, unsigned need);
/* The comma-joined parameter names the launch of `role` passes, in order (static storage), or
 * NULL when there is no launch code for it; tests compare it with the template's entry. */
const char *launch_signature(hot_kernel_role role);
/* The grid a launch of `role` in `phase` uses: plan_kernel_grid of the plan's kernel. All zeros
 * when the plan has no such kernel. */
void launch_grid(const hot_layer_plan *pl, hot_kernel_role role, int phase, unsigned grid[3]);
/* Zeroes n amax words at p on stream. */
hot_status launch_zero(hot_layer *layer, CUdeviceptr p, size_t words, CUstream stream);

#endif

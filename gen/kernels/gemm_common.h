/* kernels/gemm_common.h — what the two GEMM descriptors (gemm.c: gemm_int.cu / gemm_wgmma.cu,
 * gemm_tma.c: gemm_tma.cu) share: the plan of a GEMM role, the twelve arguments of the common
 * entry, the cost and the output's name. Defined in gemm.c. */
#ifndef HOT_KERNELS_GEMM_COMMON_H
#define HOT_KERNELS_GEMM_COMMON_H

#include "kernel_desc.h"

/* The GEMM plan of role gemm_gx (hq.gemm) or gemm_gw (hla.gemm). */
const hot_gemm_plan *kd_gemm_plan(const hot_layer_plan *p, hot_kernel_role role);
/* Whether the role's product is quantized at all (hq / hla enabled). */
int kd_gemm_enabled(const hot_layer_plan *p, hot_kernel_role role);
/* A, B, C, row_scale, alpha_a, alpha_b, alpha_div, M, N, Kpad, ldc, seg_kpad; -1 when the plan's
 * GEMM does not match the layer (an internal error). */
int kd_gemm_args(const hot_layer_plan *p, hot_kernel_role role, const hot_launch_in *in,
                 hot_argv *v);
/* Both code operands once, C once (+ row scales; a segmented GEMM reads and writes C once more
 * per segment after the first); 2 m n k_pad integer operations; phase 0 only. */
int kd_gemm_cost(const hot_layer_plan *p, hot_kernel_role role, int phase, int gran_row,
                 hot_kernel_cost *c);
const char *kd_gemm_output(hot_kernel_role role);

#define KD_GEMM_SIG "A,B,C,row_scale,alpha_a,alpha_b,alpha_div,M,N,Kpad,ldc,seg_kpad"

#endif

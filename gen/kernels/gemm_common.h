/* kernels/gemm_common.h — what the GEMM descriptors (gemm.c: gemm_int.cu / gemm_wgmma.cu,
 * gemm_tma.c: gemm_tma.cu, gemm_nvfp4.c and gemm_mxfp8.c: recipe nvfp4's block-scaled GEMMs on
 * sm_120a) share: the plan of a GEMM role, the template of its path, the twelve arguments of the
 * common entry, the cost and the output's name; and what the two block-scaled ones share (geometry,
 * name, parameters, cost). Defined in gemm.c. */
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
/* The template of the plan's path for the role (its row of the GEMM-path table; NULL for a path
 * without one). */
const char *kd_gemm_templ(const hot_layer_plan *p, hot_kernel_role role);

/* ---- the block-scaled GEMMs (gemm_nvfp4.c, gemm_mxfp8.c: one stage, no segments) ------------ */
/* x over N tiles, y over M tiles, the plan's warps; static shared memory only (smem 0).
 * Returns 0. */
int kd_gemm_block_geom(const hot_layer_plan *p, hot_kernel_role role, hot_kernel_geom *geo);
/* "hot_gemm_<path>_<tm>x<tn>x<tk>_w<wm>x<wn>" into out (n bytes): snprintf's result. */
int kd_gemm_block_name(const hot_layer_plan *p, hot_kernel_role role, char *out, size_t n);
/* HOT_TILE_M, HOT_TILE_N, HOT_TILE_K, HOT_WARPS_M, HOT_WARPS_N: the tile and the warps are every
 * parameter. */
void kd_gemm_block_params(const hot_layer_plan *p, hot_kernel_role role, hot_params *o);
/* bytes_read (both operands' codes and scales), C once, 2 m n k_pad tensor-core operations;
 * phase 0 only (-1 for another). */
int kd_gemm_block_cost(const hot_layer_plan *p, hot_kernel_role role, int phase,
                       int64_t bytes_read, hot_kernel_cost *c);

#define KD_GEMM_SIG "A,B,C,row_scale,alpha_a,alpha_b,alpha_div,M,N,Kpad,ldc,seg_kpad"

#endif

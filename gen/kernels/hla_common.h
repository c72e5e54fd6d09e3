/* kernels/hla_common.h — what the two HLA descriptors (hla.c: templates/hla_project.cu,
 * hla_mxfp8.c: templates/hla_mxfp8.cu, recipe nvfp4 on sm_120a) share: the HOT_ROWS parameter,
 * the last three arguments of both entries (seed, tag, step) and the steps of their roles.
 * Defined in hla.c. */
#ifndef HOT_KERNELS_HLA_COMMON_H
#define HOT_KERNELS_HLA_COMMON_H

#include "kernel_desc.h"

/* HOT_ROWS: the rank's rows of the HLA basis, "r0,r1,..." (kd_param_oom when out of memory). */
void kd_hla_rows_param(const hot_layer_plan *p, hot_params *o);
/* seed, tag (the layer's Philox tag of g^; x^ is RTN and gets the layer's base tag), step. */
void kd_hla_rng_args(const hot_layer_plan *p, hot_kernel_role role, const hot_launch_in *in,
                     hot_argv *v);

/* abc_x phases 0, 1 in the save call; hla_g phases 0, 1 in the backward. */
#define KD_HLA_N_STEPS 4
extern const hot_step kd_hla_steps[KD_HLA_N_STEPS];

#endif

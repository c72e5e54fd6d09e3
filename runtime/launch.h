/* launch.h — the CUDA backend's generic launcher (launch.c): one launch of a planned kernel for a
 * phase, its arguments built by the kernel's descriptor (gen/kernel_desc.h) from the call's
 * device buffers, on the plan's geometry (gen/plan.c), on the caller's stream. Private to the CUDA
 * backend (cuda_backend.c; and the tests): launch.c reads the backend's state through
 * cuda_backend.h's accessors and calls back into nothing. */
#ifndef HOT_LAUNCH_H
#define HOT_LAUNCH_H

#include "cuda_backend.h"
#include "hot_internal.h"
#include "kernel_desc.h"

/* "layer 'x': kernel hla_g: template templates/hla_project.cu not available in this build"
 * (HOT_ERR_UNSUPPORTED, message set) for the first kernel the layer's JIT found missing among the
 * roles set in `need` (bit per hot_kernel_role); HOT_OK when none. */
hot_status launch_need_kernels(hot_layer *layer, unsigned need);

/* One launch of a layer's launch list (gen/kernel_desc.h, built at load): its arguments with the
 * call's buffers (buf, by hot_lbuf), step and tensor maps (encoded here, with
 * cuTensorMapEncodeTiled, for a TMA kernel) filled in, for per_sample_g 0 / 1, on its geometry
 * (a persistent kernel: at most the device's SM count), on `stream`. Asks the generator nothing.
 * Errors (message set): launch_check's, HOT_ERR_CUDA / mapped statuses of a failed driver call
 * (naming the operand of a refused tensor map). */
hot_status launch_run(hot_layer *layer, const hot_launch *l, const uint64_t *buf, uint32_t step,
                      int per_sample_g, CUstream stream);
/* Elements of the math tensor a SAWB role reads: o_pad * I (w'), hla.k * I (x^); 0 otherwise. */
int64_t launch_sawb_elems(const hot_layer_plan *pl, hot_kernel_role role);
/* HOT_ERR_INTERNAL (message set) when l's role is not planned or its arguments could not be built
 * from the plan, HOT_ERR_UNSUPPORTED when its descriptor has no launch code; else HOT_OK. */
hot_status launch_check(hot_layer *layer, const hot_launch *l);
/* The comma-joined parameter names the launch of `role` passes, in order (static storage), on
 * the role's default path (the first descriptor listing it), or NULL for an unknown role; tests
 * compare it with the template's entry. launch_signature_of: those of plan kernel k. */
const char *launch_signature(hot_kernel_role role);
const char *launch_signature_of(const hot_layer_plan *pl, int k);
/* The grid a launch of `role` in `phase` uses: plan_kernel_grid of the plan's kernel. All zeros
 * when the plan has no such kernel. */
void launch_grid(const hot_layer_plan *pl, hot_kernel_role role, int phase, unsigned grid[3]);
/* Zeroes n amax words at p on stream. */
hot_status launch_zero(hot_layer *layer, CUdeviceptr p, size_t words, CUstream stream);

#endif

/* module.h — load a CUBIN into the current CUDA context, look kernels up by name, launch them
 * on the caller's stream. Every driver error becomes an rt_status with a message that names the
 * module (its label) and the kernel. Needs a working driver (cuda_driver_get) and a current
 * context; without them the calls fail cleanly (RT_ERR_NO_DRIVER / RT_ERR_NO_DEVICE /
 * RT_ERR_INVALID "no current CUDA context").
 *
 *   hot_module *m; const hot_kfunc *f; char err[512];
 *   module_load(&m, bin->cubin, bin->cubin_size, "vit_b16.fc2.cu", err, sizeof err);
 *   module_function(m, "hq_fwd_b16", &f, err, sizeof err);
 *   hot_launch_cfg cfg = {{blocks, 1, 1}, {256, 1, 1}, smem_bytes, stream};
 *   void *args[] = {&y, &x, &n};
 *   module_launch(f, &cfg, args, err, sizeof err);      // asynchronous, like cuLaunchKernel
 *   module_unload(m);                                    // with the same context current
 */
#ifndef HOT_MODULE_H
#define HOT_MODULE_H

#include <stddef.h>

#include "cuda_api.h"

#define HOT_DEFAULT_SMEM_LIMIT (48 * 1024) /* dynamic shared memory allowed without opt-in */

typedef struct hot_module hot_module;

/* A kernel of a module. Owned by its module: valid until module_unload. The attribute fields
 * are read once at lookup. */
typedef struct hot_kfunc {
  CUfunction fn;
  const char *name;         /* the kernel's name */
  const char *module;       /* the module's label */
  int num_regs;             /* CU_FUNC_ATTRIBUTE_NUM_REGS */
  int max_threads;          /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
  int static_smem;          /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
  int dyn_smem_limit;       /* dynamic shared memory allowed now (raised on demand by launch) */
  struct hot_module *owner;
} hot_kfunc;

/* One launch: grid and block dimensions (each >= 1), dynamic shared memory bytes, stream
 * (NULL = the context's default stream). */
typedef struct {
  unsigned int grid[3];
  unsigned int block[3];
  unsigned int shared_bytes;
  CUstream stream;
} hot_launch_cfg;

/* Loads cubin (size bytes; copied by the driver, so the caller may free it after the call) into
 * the current context. label names the module in messages (copied; NULL = "module"). On RT_OK
 * *out is a module the caller owns (module_unload). Errors (*out = NULL, message in err):
 * RT_ERR_INVALID (NULL/empty arguments, no current context), RT_ERR_NO_DRIVER,
 * RT_ERR_NO_DEVICE, RT_ERR_BAD_BINARY (a cubin not for this GPU, or damaged), RT_ERR_DEVICE_OOM,
 * RT_ERR_NOMEM, RT_ERR_CUDA. */
rt_status module_load(hot_module **out, const void *cubin, size_t size, const char *label,
                      char *err, size_t errlen);

/* Unloads the module (the context it was loaded in must be current) and frees it with every
 * hot_kfunc it handed out. NULL-safe. Returns RT_OK or the cuModuleUnload failure (the memory is
 * freed either way). */
rt_status module_unload(hot_module *m);

/* Looks a kernel up by its (extern "C") name; the result is cached, so repeated calls are cheap.
 * On RT_OK *out is owned by m. Errors: RT_ERR_INVALID, RT_ERR_NOT_FOUND ("module 'L' has no
 * kernel 'K'"), RT_ERR_NOMEM, RT_ERR_CUDA. Thread-safe per module. */
rt_status module_function(hot_module *m, const char *kernel, const hot_kfunc **out, char *err,
                          size_t errlen);

/* The device address and size of the module's global variable `name` (an extern "C"
 * __device__ variable). Errors: RT_ERR_INVALID (NULLs), RT_ERR_NOT_FOUND (no such global),
 * RT_ERR_CUDA. */
rt_status module_global(hot_module *m, const char *name, CUdeviceptr *ptr, size_t *bytes,
                        char *err, size_t errlen);

/* Launches f with cfg and the kernel parameters args (an array of pointers to each argument, as
 * cuLaunchKernel takes). When cfg->shared_bytes exceeds the function's current dynamic limit
 * (48 KiB by default), raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first. Asynchronous:
 * an error inside the kernel shows up at the next synchronisation. Errors, each naming the kernel
 * and the launch shape: RT_ERR_INVALID (zero dimensions, too many threads, NULL), RT_ERR_LAUNCH
 * (the driver refused: resources, shared memory over the device's opt-in limit), RT_ERR_CUDA. */
rt_status module_launch(const hot_kfunc *f, const hot_launch_cfg *cfg, void **args, char *err,
                        size_t errlen);

#endif

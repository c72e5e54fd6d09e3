/* hot_tools.h — the one door from hot's own programs (hot-gen, hot-bench, hot-tune) into
 * libhot's internals. It plays the role lauxlib.h plays for Lua: a program of this repository
 * includes hot.h (the public API) and this header, and nothing else of runtime/. It is not
 * installed and not exported to applications (cmake/install.cmake exports runtime/include/ only);
 * in the build tree only the targets that link hot_tools see this folder.
 *
 * What comes through it, and who uses it (docs/internals.md has the full table):
 *   rt_status, the CUDA driver table    hot-bench, hot-tune: device buffers, events, timing;
 *     and NVRTC's version (cuda_api.h)    hot-tune: the driver and compiler versions of its rows
 *   env_read (env.h)                    hot-gen, hot-tune: the HOT_* variables, parsed as libhot
 *                                         parses them
 *   the kernel cache (cache.h) and the  hot-gen --compile, hot-tune: compile a plan's kernels
 *     JIT of a plan (jit.h)               through the same cache requests libhot makes
 *   the tuning databases' read side     hot-gen --plan, hot-tune: tunedb_open/get/foreach/
 *     (tunedb.h) and the tuned planner    best_speed, tuned_open/tuned_plan_layer
 *     (tuned.h)
 *   capture files (capture.h)           hot-tune --capture
 *   the functions below                 what the programs need of a context or a layer, read
 *                                         through functions (the structs behind hot.h's handles
 *                                         stay private to runtime/)
 * The write side of the tuning database lives with its only user, hot-tune (tune/tunedb_write.h).
 * Seeded test data shared by hot-bench and hot-tune: hot_tooldata.h (library hot_tooldata).
 */
#ifndef HOT_TOOLS_H
#define HOT_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "hot.h"

#include "../cuda_api.h"
#include "../env.h"
#include "fast.h"
#include "../cache.h"
#include "../jit.h"
#include "../tunedb.h"
#include "../tuned.h"
#include "../capture.h"

/* A layer from a spec whose recipe defaults are already applied (a spec file's layer changed
 * field by field: hot-tune's variants), planned exactly as given with Philox layer id `layer_id`
 * and the context's seed; hot_layer_create's recipe rule is not applied. On HOT_OK *out is a
 * layer the caller owns (hot_layer_destroy, or with the context). Errors as hot_layer_create's
 * (message in hot_errmsg(ctx)); HOT_ERR_INVALID also for layer_id < 0. */
hot_status tools_layer_create(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                  int64_t tokens, hot_recipe recipe, int layer_id,
                                  hot_layer **out);

/* One kernel program a layer's JIT compiled (not found in memory, a pack or on disk). */
typedef struct {
  const char *name;           /* the kernel's entry name (the layer's plan: valid while the
                                 layer lives) */
  double compile_ms;          /* the compile's wall time */
  int phases_known;           /* 1: the three phase times are NVRTC's own; 0: unknown */
  double front_ms, nvvm_ms, ptxas_ms; /* front end, NVVM, ptxas */
} hot_tools_jit_kernel;

/* The distinct programs the latest compile of `layer` (hot_layer_compile, hot_ctx_compile)
 * compiled, in plan order, into out[0..cap). Returns how many were written (0 for NULL
 * arguments, an uncompiled layer, or a layer whose kernels all came from a cache). */
int tools_layer_jit_kernels(const hot_layer *layer, hot_tools_jit_kernel *out, int cap);

/* The fast CPU path's config for hot's programs (their fp64 references, the threads of the
 * seeded fills): HOT_CPU_THREADS and HOT_CPU_ISA parsed by env_read_cpu, the parser
 * hot_ctx_create uses, once per process (static storage; never freed). NULL when a variable is
 * bad: the message is then in err (when not NULL; errlen bytes), and hot_ctx_create refuses the
 * same value by name. */
const fast_config *tools_fast_config(char *err, size_t errlen);

#endif

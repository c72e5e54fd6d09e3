/* hot_internal.h — what the files behind hot.h share: the context and layer structs, the error
 * helpers, and the backends' entry points. One stage per file:
 *   ctx.c          options, environment, backend choice, messages, statistics
 *   layer.c        layers (spec / C), argument checks, JIT (emit + cache + debug dumps), dispatch
 *   cpu_backend.c  the calls on the CPU reference twins (templates/ref.h)
 *   cuda_backend.c device, pointers, scratch, modules; the order of a step's kernels
 *   launch.c       one function per kernel role: its argument list and the plan's geometry
 */
#ifndef HOT_INTERNAL_H
#define HOT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "cuda_api.h"
#include "emit.h"
#include "env.h"
#include "hot.h"
#include "jit.h"
#include "module.h"
#include "plan.h"

#define HOT_ERRMSG_MAX 1024
#define HOT_DEFAULT_SEED 0x243F6A8885A308D3ull /* the spec loader's default: digits of pi */
#define HOT_LAYER_LIVE 0x484f544cu /* "HOTL" */
#define HOT_LAYER_DEAD 0x44454144u /* "DEAD" */

/* The CUDA side of a context (cuda_backend.c). */
typedef struct {
  const cuda_driver *drv;
  CUdevice dev;
  CUcontext cuctx;    /* the device's primary context, retained */
  int retained;
  int cc_major, cc_minor;
} hot_cuda_ctx;

/* The CUDA side of a layer: module, kernels by plan index, device scratch (cuda_backend.c's
 * alloc_scratch lists every piece and its size). Scratch carries nothing from one call to the
 * next (the saved buffer is the only state between a save and its backward), so the SAWB and
 * LQS pieces are shared by save, backward and calibrate, which hot.h orders on one stream. */
typedef struct {
  hot_module *modules[HOT_MAX_KERNELS];  /* one per distinct binary (n_modules of them) */
  const hot_kernel_binary *module_bin[HOT_MAX_KERNELS]; /* the binary each module holds */
  int n_modules;
  int loaded;                            /* modules loaded and kernels looked up */
  const hot_kfunc *fn[HOT_MAX_KERNELS];  /* by plan kernel index; NULL: not in this build */
  CUdeviceptr scratch;                   /* one allocation, carved below */
  size_t scratch_bytes;
  CUdeviceptr q_g, s_g, q_w, s_w, q_hg, s_hg, amax; /* amax: HOT_AMAX_WORDS words */
  CUdeviceptr s_sawb;                    /* 2 floats: SAWB scale of w' [0] and of x^ [1] */
  CUdeviceptr math;                      /* SAWB: fp32 math tensor (o_pad x I or K x I); 0 without */
  CUdeviceptr partials;                  /* SAWB / LQS chunk partials (doubles); 0 without */
  CUdeviceptr lqs_rs, lqs_res, lqs_choice; /* LQS: T floats, 2 doubles, 1 int; 0 without */
  CUdeviceptr saved;                     /* the layer-owned saved buffer (0 until first save) */
  /* Profiling (hot_ctx_set_profiling): a start and an end event per launch of the current call,
   * created on first need and kept until the layer is released; the launches of the last call. */
  CUevent prof_ev[2 * HOT_MAX_KERNEL_TIMES];
  int prof_events;                       /* events created so far */
  int prof_on;                           /* the current call records events */
  int prof_n;                            /* launches recorded by the current call */
  int prof_valid;                        /* times of the last call read back (0: none) */
  struct { int kernel, role, phase; double ms; } prof[HOT_MAX_KERNEL_TIMES];
} hot_cuda_layer;

/* amax words of the per-tensor scales (zeroed before each phase-0 launch). */
enum { HOT_AMAX_HQ_G = 0, HOT_AMAX_HQ_W, HOT_AMAX_HLA_G, HOT_AMAX_ABC_X, HOT_AMAX_LQS,
       HOT_AMAX_WORDS = 8 };

struct hot_layer {
  uint32_t magic;            /* HOT_LAYER_LIVE / HOT_LAYER_DEAD */
  hot_ctx *ctx;
  struct hot_layer *next;    /* the context's list (live and dead handles) */
  hot_layer_spec spec;       /* own copy; plan->spec points here */
  hot_layer_plan *plan;      /* malloc'd (freed at destroy; the handle stays) */
  uint64_t seed;
  hot_gran gran;             /* in effect: TENSOR or ROW */
  int gran_auto, calibrated;
  double lqs_e_tensor, lqs_e_token;
  int compiled;              /* the cache returned every binary (emit + get done) */
  hot_jit jit;               /* binaries by plan kernel index (owned by the context's cache),
                                the kernels whose template is not in this build */
  int n_missing;             /* = jit.n_missing, jit.missing */
  hot_kernel_role missing[HOT_MAX_KERNELS];
  int saved_valid;           /* the layer-owned buffer holds a save */
  void *host_saved;          /* CPU backend: the layer-owned saved buffer */
  int64_t last_saved_bytes;  /* bytes of the latest save (stats) */
  hot_cuda_layer cu;
};

struct hot_ctx {
  int failed;                /* creation failed: only errmsg/destroy/stats are valid */
  hot_backend backend;       /* CUDA or CPU once created */
  int fell_back;
  char fallback_reason[256]; /* auto fell back: why; failed creation: the error */
  char device_name[128];
  hot_arch arch;             /* arch layers are planned for */
  int arch_known;            /* 1: CUDA device arch or forced; 0: CPU default (sm_80 storage) */
  int device;
  hot_env env;               /* the environment, read once at creation (strings in env_block) */
  char *env_block;
  char *cache_dir;           /* option/env value (NULL: the cache's default) */
  const char *cache_dir_origin; /* "options.cache_dir" or "HOT_CACHE_DIR" (messages) */
  int jit_threads;           /* concurrent compiles: HOT_JIT_THREADS, else the CPUs */
  int disk_cache;            /* 1 on, -1 off */
  int seed_set;
  uint64_t seed;
  int jit_debug;
  char *debug_dir;           /* option/env value, NULL: derived */
  const hot_compiler *compiler; /* NULL: NVRTC (tests inject a fake) */
  hot_kcache *kc;            /* opened on first need */
  int next_layer_id;         /* ids of hot_layer_create layers */
  hot_layer *layers;         /* every handle made by this context */
  uint64_t saves, backwards, calibrations, launches;
  int profiling;             /* hot_ctx_set_profiling (CUDA only) */
  char errmsg[HOT_ERRMSG_MAX];
  char *log;                 /* latest compile log (malloc'd), NULL = "" */
  hot_cuda_ctx cu;
};

/* ---- ctx.c ---------------------------------------------------------------------------------- */

/* hot_ctx_create with an injected compiler (tests count compiles / force failures); cc NULL =
 * NVRTC. cc must outlive the context. */
hot_status hot_ctx_create_with_compiler(hot_ctx **out, const hot_options *opt,
                                        const hot_compiler *cc);

/* Sets ctx's message (printf-style, one line) and returns s. ctx may be NULL. */
hot_status ctx_fail(hot_ctx *ctx, hot_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clears ctx's message (start of a public call). */
void ctx_clear(hot_ctx *ctx);
/* Keeps a copy of a compile log as ctx's compile log (NULL clears it). */
void ctx_set_log(hot_ctx *ctx, const char *log);
/* The context's kernel cache, opened on first need. HOT_OK or the cache's error (message set). */
hot_status ctx_kcache(hot_ctx *ctx, hot_kcache **out);
/* Copies src into dst[n], truncating, always NUL-terminated. */
void ctx_copy(char *dst, size_t n, const char *src);
/* rt_status -> hot_status (equal numbers). */
hot_status ctx_rt(rt_status s);

/* ---- layer.c -------------------------------------------------------------------------------- */

/* Frees a layer's resources (buffers, scratch, module, plan); the handle itself stays in the
 * context's list, marked dead, until hot_ctx_destroy. */
void layer_release(hot_layer *layer);

/* Emits and finds/compiles the layer's kernels for ctx->arch (once per layer, one program per
 * distinct kernel, concurrently: jit.h); sets layer->jit, layer->missing. With HOT_JIT_DEBUG
 * writes the sources and logs into the debug folder. */
hot_status layer_jit(hot_layer *layer);
/* "kernel hla_g: template templates/hla_project.cu not available in this build" for the first
 * missing kernel among the roles set in `need` (bit per hot_kernel_role); HOT_OK when none. */
hot_status layer_need_kernels(hot_layer *layer, unsigned need);

/* ---- cpu_backend.c -------------------------------------------------------------------------- */

hot_status cpu_layer_save(hot_layer *layer, const void *x, void *saved);
hot_status cpu_layer_backward(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                              float *g_x, float *g_w, float *g_b, uint32_t step);
hot_status cpu_layer_calibrate(hot_layer *layer, const void *g_y, uint32_t step);
void cpu_layer_free(hot_layer *layer);
/* hot_ref_status -> hot_status with a message naming the call. */
hot_status cpu_ref_status(hot_layer *layer, int rc, const char *what);

/* ---- cuda_backend.c ------------------------------------------------------------------------- */

/* Driver, device, arch, primary context. On failure sets ctx's message and returns the status
 * (HOT_ERR_NO_DRIVER, HOT_ERR_NO_DEVICE, HOT_ERR_UNSUPPORTED, HOT_ERR_CUDA). */
hot_status cuda_ctx_init(hot_ctx *ctx);
void cuda_ctx_fini(hot_ctx *ctx);
/* Loads the layer's module and looks its kernels up (after layer_jit). */
hot_status cuda_layer_load(hot_layer *layer);
hot_status cuda_layer_save(hot_layer *layer, const void *x, void *saved, CUstream stream);
hot_status cuda_layer_backward(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                               float *g_x, float *g_w, float *g_b, uint32_t step,
                               CUstream stream);
hot_status cuda_layer_calibrate(hot_layer *layer, const void *g_y, uint32_t step,
                                CUstream stream);
void cuda_layer_free(hot_layer *layer);
/* Profiling around one call of a layer (no-ops unless ctx->profiling): begin forgets the last
 * call's times; end, after a successful call, synchronises `stream` and reads each launch's
 * time (a failed call leaves no times). */
void cuda_prof_begin(hot_layer *layer);
hot_status cuda_prof_end(hot_layer *layer, hot_status st, CUstream stream);
/* Makes ctx's device context current (push) / restores the previous one (pop). */
hot_status cuda_push(hot_ctx *ctx);
void cuda_pop(hot_ctx *ctx);

/* ---- launch.c ------------------------------------------------------------------------------- */

/* Byte sizes of the device scratch pieces and the saved buffer (the CPU twin's sizes). */
int64_t launch_saved_bytes(const hot_layer_plan *pl);

/* One launch per role; each checks the plan's geometry against the template's documented one,
 * builds the argument list of the template's header and launches on `stream`. Device pointers
 * as CUdeviceptr. */
/* HQ operands (templates/hadamard_quant.cu): scale_in / math_out for SAWB of w' (0 = NULL). */
hot_status launch_hq(hot_layer *layer, hot_kernel_role role, CUdeviceptr src, CUdeviceptr codes,
                     CUdeviceptr scales, CUdeviceptr amax, CUdeviceptr scale_in,
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
/* HOT_ERR_UNSUPPORTED (message set) unless every role in `need` (bit per hot_kernel_role) has
 * launch code here and its template's entry takes the parameters that code passes. */
hot_status launch_check(hot_layer *layer, unsigned need);
/* The grid a launch of `role` in `phase` uses: the plan's (phase 0's, checked by launch_check),
 * or the template's documented grid for a phase that has its own (sawb.cu phase 1: 1 x 1 x 1).
 * All zeros when the plan has no such kernel. */
void launch_grid(const hot_layer_plan *pl, hot_kernel_role role, int phase, unsigned grid[3]);
/* Zeroes n amax words at p on stream. */
hot_status launch_zero(hot_layer *layer, CUdeviceptr p, size_t words, CUstream stream);

#endif

/* hot.h — the public C API of libhot: HOT (Hadamard-based Optimized Training) layers whose
 * kernels are generated, JIT-compiled with NVRTC, cached in memory and on disk, and launched on
 * the caller's CUDA stream — or run on the CPU reference when there is no GPU.
 *
 * Usage (error handling shortened; every call returns a hot_status):
 *
 *   hot_ctx *ctx; hot_layer *fc1;
 *   if (hot_ctx_create(&ctx, NULL) != HOT_OK) {             // options from the environment
 *     fprintf(stderr, "hot: %s\n", hot_errmsg(ctx));        // ctx may be a failed context
 *     hot_ctx_destroy(ctx); return 1;
 *   }
 *   hot_status st = hot_layer_from_spec(ctx, "specs/vit_b16.lua", "fc1", 0, &fc1);
 *   if (st != HOT_OK) die(hot_status_name(st), hot_errmsg(ctx));
 *   hot_layer_compile(fc1);                                 // optional warm-up (JIT + cache)
 *   for (uint32_t step = 0; step < steps; ++step) {
 *     // forward: y = x w^T is the framework's; hot keeps the compressed activations (ABC)
 *     hot_layer_save(fc1, x, HOT_DT_F32, NULL, stream);      // NULL: the layer owns the buffer
 *     // backward: g_y in; g_x, g_w (and g_b) out
 *     st = hot_layer_backward(fc1, g_y, w, HOT_DT_F32, NULL, g_x, g_w, g_b, step, stream);
 *     if (st != HOT_OK) die(hot_status_name(st), hot_errmsg(ctx));
 *   }
 *   hot_stats s; hot_ctx_stats(ctx, &s);
 *   printf("%s: %llu compiles, %llu disk hits\n", hot_backend_name(s.backend),
 *          (unsigned long long)s.compiles, (unsigned long long)s.disk_hits);
 *   hot_ctx_destroy(ctx);                                   // destroys fc1 too
 *
 * Conventions of every function below:
 *  - The library never prints and never exits. Every call returns a hot_status; when a context
 *    is reachable (the ctx argument, or the layer's context), a one-line message of the last
 *    call is kept there (hot_errmsg; "" after a success). The compiler log of the latest
 *    compile is kept separately (hot_compile_log).
 *  - Pointers to tensors are DEVICE pointers on the CUDA backend (cuMemAlloc / cudaMalloc /
 *    managed memory, 16-byte aligned) and HOST pointers on the CPU backend; hot_ctx_stats (or
 *    hot_ctx_backend) says which backend a context runs. The CUDA backend checks each pointer
 *    with cuPointerGetAttribute and refuses host memory, pointers not 16-byte aligned and memory
 *    of another device than the context's (HOT_ERR_INVALID naming the argument, and both devices;
 *    managed memory is accepted from any device); the CPU backend can only check NULL.
 *  - `stream` is a CUstream (as void *) of the device's primary context (the one the CUDA runtime
 *    uses); NULL is the default stream. Calls on the CUDA backend are asynchronous like kernel
 *    launches: results are ready when the stream is. The CPU backend ignores `stream` and returns
 *    when the results are written.
 *  - Tensors are row-major: x is T x I, w is O x I, g_y is T x O (T = batch * tokens, sample
 *    major), all of the layer's dtype (f32, or bf16/f16 bit patterns); outputs g_x (T x I), g_w
 *    (O x I) and g_b (O) are fp32. Inputs are only read. Numerics:
 *    templates/CONTRACT.md; both backends give the same bits.
 *  - A context and its layers are used by one thread at a time; distinct contexts are
 *    independent (the kernel cache on disk is shared safely, also across processes). On CUDA
 *    the device scratch of a call (codes, scales) is one workspace per context, as large as the
 *    largest layer's (hot_stats.workspace_bytes), which the calls of all its layers take turns
 *    in: hot orders them itself (a call on another stream than the previous call's first waits
 *    for that call's work, with an event, not the host). A save's buffer must be ready (same
 *    stream, or an event) before the backward that reads it.
 *  - Lifetime on CUDA: after each save, backward and calibrate hot records an event on the
 *    stream it was given; before it frees anything of a layer (hot_layer_destroy,
 *    hot_ctx_destroy) it waits for that event, so a layer may be destroyed while its kernels
 *    still run (the host then waits for them). Buffers the caller owns (x, g_y, a caller's
 *    saved buffer, the outputs) stay the caller's to keep alive until the stream is done.
 *
 * Environment (read once, by hot_ctx_create, into the context: later changes have no effect on
 * it; an option set in code wins over the variable, which is then not read). Every value is
 * parsed strictly: a bad one (HOT_CACHE_MAX_MB=abc, HOT_JIT_THREADS=0, HOT_CUDA_HOME naming no
 * folder, HOT_NO_DISK_CACHE=maybe) fails hot_ctx_create with HOT_ERR_INVALID naming the variable.
 * Integers: decimal or 0x hex, no sign; booleans: 0/1, true/false, yes/no, on/off.
 *
 *   | variable            | values                      | meaning                                        |
 *   |---------------------|-----------------------------|------------------------------------------------|
 *   | HOT_BACKEND         | auto (default), cuda, cpu   | auto: CUDA when a driver and device work, else |
 *   |                     |                             | the CPU reference (the reason is in the stats) |
 *   | HOT_DEVICE          | 0, 1, ... (default 0)       | CUDA device index                              |
 *   | HOT_ARCH            | an sm_XY name of the arch   | plan and compile for this arch instead of the  |
 *   |                     | table (hot-gen --help)      | device's (sm_90a: opt-in wgmma); on the CPU    |
 *   |                     |                             | backend it lets hot_layer_compile fill caches. |
 *   |                     |                             | On CUDA it must run on the device: sm_XY on    |
 *   |                     |                             | compute capability X.Y .. X.9 (cubins run on   |
 *   |                     |                             | later minors of their major), sm_90a on 9.0    |
 *   |                     |                             | only (arch-specific); else hot_ctx_create      |
 *   |                     |                             | fails with HOT_ERR_INVALID (backend auto too)  |
 *   | HOT_CACHE_DIR       | a directory                 | kernel cache (default $XDG_CACHE_HOME/hot,     |
 *   |                     |                             | else ~/.cache/hot); shared with hot-gen        |
 *   | HOT_NO_DISK_CACHE   | boolean                     | keep compiled kernels in memory only           |
 *   | HOT_CACHE_MAX_MB    | 1 .. 2^40 MiB (default 256) | size bound of the cache directory (LRU); a     |
 *   |                     |                             | read-only directory is served, never written   |
 *   | HOT_SEED            | 64-bit integer (0x.. ok)    | Philox key of stochastic rounding (default:    |
 *   |                     |                             | the spec's seed, else 0x243F6A8885A308D3)      |
 *   | HOT_JIT_DEBUG       | boolean                     | write every emitted source and compile log     |
 *   | HOT_JIT_DEBUG_DIR   | a directory                 | where (default <cache dir>/debug, or           |
 *   |                     |                             | ./hot-debug with a memory-only cache)          |
 *   | HOT_CUDA_DRIVER     | a path                      | driver library instead of libcuda.so.1         |
 *   | HOT_CUDA_HOME       | an existing toolkit root    | where NVRTC and its headers are (cache misses) |
 *   |                     |                             | NVRTC: libnvrtc.so.13, else .so.12, from here, |
 *   |                     |                             | the build's toolkit, then the loader's path.   |
 *   |                     |                             | The CUDA backend refuses cubins of an NVRTC    |
 *   |                     |                             | newer (major) than the driver: a one-line      |
 *   |                     |                             | HOT_ERR_BAD_BINARY naming both versions        |
 *   | HOT_JIT_THREADS     | 1 ... 64 (default: CPUs,    | concurrent NVRTC compiles of a layer's kernels |
 *   |                     | at most 16)                 | (one program per distinct kernel)              |
 */
#ifndef HOT_H
#define HOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "hot_types.h" /* hot_layer_spec, hot_dtype, hot_recipe, hot_gran, ... */

/* HOT_API marks the functions libhot exports. The library is built with hidden visibility, so
 * these declarations are its whole exported surface (see docs/c-api.md, "Using libhot"). */
#ifndef HOT_API
#if defined(__GNUC__) || defined(__clang__)
#define HOT_API __attribute__((visibility("default")))
#else
#define HOT_API
#endif
#endif

/* ---- status ---------------------------------------------------------------------------------
 * Codes 0..12 equal the runtime's rt_status values one for one; the rest are HOT-level. */
typedef enum {
  HOT_OK = 0,
  HOT_ERR_INVALID,      /* a NULL or malformed argument (pointer, dtype, option, env value) */
  HOT_ERR_NOMEM,        /* host memory exhausted */
  HOT_ERR_IO,           /* a file or directory could not be used (cache dir, spec file) */
  HOT_ERR_NO_DRIVER,    /* backend cuda: no usable CUDA driver ("no CUDA driver: ...") */
  HOT_ERR_NO_DEVICE,    /* backend cuda: a driver but no (such) device */
  HOT_ERR_NO_NVRTC,     /* a kernel must be compiled and NVRTC cannot be loaded */
  HOT_ERR_COMPILE,      /* NVRTC rejected a generated source (log: hot_compile_log) */
  HOT_ERR_BAD_BINARY,   /* the driver refused a cubin (wrong arch: check HOT_ARCH) */
  HOT_ERR_NOT_FOUND,    /* a kernel missing from a module, a layer missing from a spec, or an
                           OpenMP runtime not loaded in the process (hot_cpu_use_openmp) */
  HOT_ERR_DEVICE_OOM,   /* device memory exhausted */
  HOT_ERR_LAUNCH,       /* a kernel launch was refused (resources, shared memory) */
  HOT_ERR_CUDA,         /* any other CUDA error; the message names it and the kernel */
  HOT_ERR_SPEC,         /* the spec file failed to load or validate (message: file:line) */
  HOT_ERR_PLAN,         /* the planner refused the layer (sizes, tiles, limits of the arch) */
  HOT_ERR_SHAPE,        /* a size is zero, negative or too large */
  HOT_ERR_MISUSE,       /* wrong call order or handle: destroyed layer, another context's layer,
                           backward without a save, calibrate on a fixed granularity, a failed
                           context */
  HOT_ERR_UNSUPPORTED,  /* not available on this backend or in this build (e.g. a kernel whose
                           template does not exist yet) */
  HOT_ERR_NONFINITE,    /* NaN or Inf in an input (CPU backend; kernels promise nothing) */
  HOT_ERR_INTERNAL,     /* an inconsistency inside hot (a bug: please report the message) */
  HOT_ERR_RANGE,        /* finite inputs whose result does not fit fp32 (|values| near FLT_MAX:
                           a Hadamard sum, a scale or a product overflowed): the outputs hold
                           Inf/NaN and must not be used (see "overflow" below: on CUDA reported
                           by the next call or hot_layer_check) */
  HOT_STATUS_COUNT
} hot_status;

/* Static name of a status: "HOT_OK", "HOT_ERR_NO_DRIVER", ...; "HOT_ERR_?" when out of range. */
HOT_API const char *hot_status_name(hot_status s);

/* ---- options and contexts ------------------------------------------------------------------ */

typedef enum {
  HOT_BACKEND_DEFAULT = 0, /* options only: from HOT_BACKEND, else auto */
  HOT_BACKEND_AUTO,        /* CUDA when usable, else CPU (stats say why) */
  HOT_BACKEND_CUDA,
  HOT_BACKEND_CPU
} hot_backend;

/* Static name: "default", "auto", "cuda", "cpu" ("?" when out of range). */
HOT_API const char *hot_backend_name(hot_backend b);

/* Options of hot_ctx_create. Start from hot_options_init (every field "take it from the
 * environment, else the default"), then set what the code decides. Strings are copied by
 * hot_ctx_create; the struct may be discarded after the call. */
typedef struct {
  hot_backend backend;      /* HOT_BACKEND_DEFAULT: $HOT_BACKEND, else auto */
  int device;               /* -1: $HOT_DEVICE, else 0; >= 0: that device (< -1: INVALID) */
  const char *arch;         /* NULL: $HOT_ARCH, else the device's arch (CPU: none, plans use
                               sm_80's storage and hot_layer_compile does nothing) */
  const char *cache_dir;    /* NULL: $HOT_CACHE_DIR, else $XDG_CACHE_HOME/hot, ~/.cache/hot */
  int disk_cache;           /* 0: on unless HOT_NO_DISK_CACHE=1; 1: on; -1: off */
  int seed_set;             /* 1: use `seed`; 0: $HOT_SEED, else the spec's, else the default
                               (any other value: INVALID) */
  uint64_t seed;
  int jit_debug;            /* 0: $HOT_JIT_DEBUG; 1: on; -1: off */
  const char *debug_dir;    /* NULL: $HOT_JIT_DEBUG_DIR, else <cache dir>/debug or ./hot-debug */
} hot_options;

/* Fills *opt with "from the environment" for every field. opt may not be NULL. */
HOT_API void hot_options_init(hot_options *opt);

typedef struct hot_ctx hot_ctx;
typedef struct hot_layer hot_layer;

/* Creates a context: reads the environment, resolves the options, picks the backend (for
 * CUDA: loads the driver, retains the device's primary context, maps its compute capability to
 * the arch table's portable sm_XY of that major with the highest minor it reaches). opt NULL = hot_options_init. Does not load NVRTC or open the kernel cache
 * (both on first need).
 * On HOT_OK *out is a context the caller owns (hot_ctx_destroy). On an error *out is, like
 * sqlite3_open's handle, a FAILED context whose only uses are hot_errmsg and hot_ctx_destroy
 * (NULL only when out is NULL or memory ran out). Errors: HOT_ERR_INVALID (a bad option or
 * environment value, named in the message; also a forced arch the CUDA device cannot run, see
 * HOT_ARCH above, with backend auto too), HOT_ERR_NO_DRIVER / HOT_ERR_NO_DEVICE (backend
 * cuda only: auto falls back to the CPU), HOT_ERR_UNSUPPORTED (backend cuda on a device of a
 * compute capability hot has no kernels for: 10.x, 12.x, ... ; auto falls back), HOT_ERR_CUDA,
 * HOT_ERR_NOMEM.
 * Warning after success: when backend auto fell back to the CPU although a CUDA device is
 * present (an unsupported compute capability, a CUDA error), hot_ctx_create returns HOT_OK and
 * hot_errmsg(ctx) holds one line starting with "warning: " that says why (the reason stays in
 * hot_stats.fallback_reason); it is cleared by the next call, as any message. A fallback for
 * want of a driver or device is normal and leaves no warning. */
HOT_API hot_status hot_ctx_create(hot_ctx **out, const hot_options *opt);

/* Destroys every layer still alive in ctx (their handles become invalid), unloads modules,
 * frees device memory, releases the device and closes the kernel cache (the disk stays).
 * NULL-safe. Each layer's memory and modules are freed only after its last call's work has
 * completed (hot waits for the event it recorded after that call; it never synchronises whole
 * streams it does not own). An overflow not reported yet is dropped with its layer. */
HOT_API void hot_ctx_destroy(hot_ctx *ctx);

/* The message of the last call on ctx (or on one of its layers): one line, no trailing
 * newline, "" after a success. Static "no context (NULL)" when ctx is NULL. Valid until the
 * next call on ctx or its layers. */
HOT_API const char *hot_errmsg(const hot_ctx *ctx);

/* The compiler log of the latest compile in ctx (errors and ptxas lines), "" when none. Valid
 * until the next compile in ctx. NULL ctx: "". */
HOT_API const char *hot_compile_log(const hot_ctx *ctx);

/* The backend ctx runs: HOT_BACKEND_CUDA or HOT_BACKEND_CPU (HOT_BACKEND_DEFAULT for NULL or a
 * failed context). Tells which kind of pointers the layer calls expect. */
HOT_API hot_backend hot_ctx_backend(const hot_ctx *ctx);

/* What a context did so far. */
typedef struct {
  hot_backend backend;         /* CUDA or CPU */
  int fell_back;               /* 1: auto chose the CPU because CUDA was unusable */
  char fallback_reason[256];   /* why ("no CUDA driver: ..."); a failed context: its error */
  char device_name[128];       /* CUDA device name; "" on the CPU */
  char arch[16];               /* arch of the kernels ("sm_90"); "" on the CPU without HOT_ARCH */
  char cache_dir[512];         /* kernel cache directory; "" before first use or memory only */
  uint64_t compiles;           /* NVRTC compiles that succeeded */
  uint64_t compile_failures;
  uint64_t memory_hits;        /* kernel binaries found in this context's memory cache */
  uint64_t disk_hits;          /* ... and on disk */
  uint64_t disk_rejects;       /* corrupt/truncated/foreign cache entries replaced */
  double compile_ms;           /* total wall time of the compiles */
  uint64_t layers;             /* layers alive */
  uint64_t saves, backwards, calibrations, launches;  /* successful calls; kernel launches */
  int64_t saved_bytes;         /* bytes of saved activations of the live layers' last saves */
  int64_t saved_fp32_bytes;    /* what fp32 copies of those x would take */
  int64_t workspace_bytes;     /* device memory the layers' calls share (CUDA: one workspace per
                                  context, as large as the largest loaded layer's scratch; 0 on
                                  the CPU backend, whose scratch lives only during a call) */
} hot_stats;

/* Copies the statistics of ctx into *out. HOT_ERR_INVALID on NULL arguments. Works on a
 * failed context too (backend DEFAULT, reason = the error; hot_errmsg keeps the error); on a
 * live one it clears hot_errmsg, as every successful call does. */
HOT_API hot_status hot_ctx_stats(hot_ctx *ctx, hot_stats *out);

/* ---- layers -------------------------------------------------------------------------------- */

/* A layer from a spec file: loads and validates `path` (sandboxed Lua, see gen/spec.h), takes
 * layer `layer_name`, the model's batch (or `batch_override` when > 0), tokens, recipe, seed
 * (unless the context sets one) and the layer's index as its Philox layer id, and plans it for
 * the context's arch. The spec is read during the call only.
 * On HOT_OK *out is a layer owned by the caller (hot_layer_destroy) and by ctx (destroyed with
 * it). Errors (*out = NULL): HOT_ERR_INVALID (NULL arguments), HOT_ERR_IO (`path` is not a
 * regular file that exists: "-" and pipes, which hot-gen reads, are refused here, so that a
 * library never reads its process's standard input or waits on a FIFO), HOT_ERR_SPEC
 * (load/validation: "file:line: ..."), HOT_ERR_NOT_FOUND (no such layer; the message lists the
 * spec's layers), HOT_ERR_SHAPE (batch_override < 0), HOT_ERR_PLAN, HOT_ERR_MISUSE (failed
 * ctx), HOT_ERR_NOMEM.
 * Kernels are compiled at the first use or by hot_layer_compile. */
HOT_API hot_status hot_layer_from_spec(hot_ctx *ctx, const char *path, const char *layer_name,
                                       int64_t batch_override, hot_layer **out);

/* Fills *spec with the defaults of `recipe` (the same defaults a spec file gets: HQ b = 16 with
 * 4-bit codes, HLA p = 64 tri 50 %, ABC on, bias on, f32), name empty and feature counts 0: the
 * caller then sets name, in_features and out_features (and whatever else it decides).
 * Errors: HOT_ERR_INVALID (NULL spec, or recipe not a hot_recipe value; *spec untouched). */
HOT_API hot_status hot_layer_spec_defaults(hot_layer_spec *spec, hot_recipe recipe);

/* A layer described in C: `spec` filled by hot_layer_spec_defaults(&spec, HOT_RECIPE_HOT) (or
 * any recipe) and then the caller's fields (name, in_features, out_features, bias, dtype, hq/hla/abc
 * settings); copied, so the caller may discard it. T = batch * tokens.
 * `recipe` is honoured this way: every field the caller left at the project default (the value
 * hot_layer_spec_defaults(&s, HOT_RECIPE_HOT) gives it) takes the value of recipe's defaults; a field
 * set to anything else is the caller's choice and is kept. So defaults of HOT_RECIPE_HOT plus
 * recipe R plan exactly like hot_layer_spec_defaults(&s, R) plus R (e.g. HOT_RECIPE_PAPER_CODE brings
 * SAWB scales, no padding and a derived HLA block), and a spec filled for R is left as it is.
 * HOT_RECIPE_NVFP4 (NVFP4/MXFP8 codes, templates/CONTRACT.md 20) plans on the CPU backend of a
 * context without a forced arch only: elsewhere HOT_ERR_PLAN names the arch ("recipe nvfp4 has
 * no GPU path on sm_90: ..."), as it names a field the recipe fixes and the caller set otherwise.
 * The Philox layer id is the number of layers created by hot_layer_create in ctx before this one
 * (0, 1, ...), so it depends on creation order: hot_layer_create_named (a name) and
 * hot_layer_create_with_id (an id) below take a stable identity.
 * Same ownership as above.
 * Errors: HOT_ERR_INVALID (NULLs; an enum out of range, or a 0/1 flag that is neither, named:
 * "spec.hq.g.round = 7 is not a hot_round (0 .. 1)"), HOT_ERR_SHAPE (batch, tokens or a feature
 * count < 1), HOT_ERR_PLAN (the planner's reason), HOT_ERR_MISUSE, HOT_ERR_NOMEM. */
HOT_API hot_status hot_layer_create(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                    int64_t tokens, hot_recipe recipe, hot_layer **out);

/* hot_layer_create with the Philox layer id chosen by the caller instead of the creation count:
 * the layer's stochastic-rounding stream (tag = layer_id * 16 + tensor, templates/CONTRACT.md
 * "Random stream") then depends on (seed, layer_id, step) only, not on how many layers the
 * process made before, so a run reproduces across processes, restarts from a checkpoint and
 * data-parallel ranks whatever order they create layers in. The key is the context's seed, so
 * the whole identity of the stream is these 27 bits: layers of one context that share an id draw
 * the same numbers at the same element index and step (correlated rounding noise, never a wrong
 * result), and ids hashed from names collide with probability 2^-27 per pair. To key a layer by
 * its name, use hot_layer_create_named below (64 bits of identity; what hot.torch uses).
 * layer_id must lie in [0, 2^27). The count of hot_layer_create does not advance. Same spec,
 * recipe rule, ownership and errors as hot_layer_create, and HOT_ERR_INVALID for an id outside
 * [0, 2^27). */
HOT_API hot_status hot_layer_create_with_id(hot_ctx *ctx, const hot_layer_spec *spec,
                                            int64_t batch, int64_t tokens, hot_recipe recipe,
                                            int layer_id, hot_layer **out);

/* hot_layer_create with the layer's stochastic-rounding stream named by `stream`: a stable name
 * of the layer (NUL-terminated, at least one byte, any length, any bytes; hot.torch passes the
 * module's tag in UTF-8). With h = FNV-1a 64 of the name's bytes (offset 0xcbf29ce484222325,
 * prime 0x100000001b3) and s = the context's seed:
 *   layer_id = (h ^ (h >> 27) ^ (h >> 54)) & (2^27 - 1)            (the counter's tag, as before)
 *   key      = mix(s ^ h), mix(z): z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
 *                                   z = (z ^ (z >> 27)) * 0x94d049bb133111eb; z ^ (z >> 31)
 * (templates/CONTRACT.md "Random stream"; the key, not the seed, is what hot_layer_get_info
 * reports as `seed`). The stream is thus a function of (seed, name, step) alone: the same in every
 * process, rank and creation order, and two different names share it only when their 64-bit
 * hashes are equal (about n^2 / 2^65 for n names). The name is not the spec's `name` (which
 * labels messages and captures and is cut to HOT_NAME_MAX - 1 bytes); it is read during the call
 * only. The count of hot_layer_create does not advance. Same spec, recipe rule, ownership and
 * errors as hot_layer_create, and HOT_ERR_INVALID for a NULL or empty `stream`. */
HOT_API hot_status hot_layer_create_named(hot_ctx *ctx, const hot_layer_spec *spec,
                                          int64_t batch, int64_t tokens, hot_recipe recipe,
                                          const char *stream, hot_layer **out);

/* Destroys a layer: frees its buffers (including a layer-owned saved buffer), unloads its
 * module (the context's workspace stays, for the other layers). NULL-safe and safe to repeat: the small handle stays known to its
 * context until hot_ctx_destroy, so later calls with it fail with HOT_ERR_MISUSE instead of
 * touching freed memory. On CUDA it first waits for the work of the layer's last call (the event
 * recorded after it, and the workspace's last call), so kernels still running never see their
 * saved buffer or module freed. An overflow not reported yet is dropped (call hot_layer_check first to see it). */
HOT_API void hot_layer_destroy(hot_layer *layer);

/* What a layer is. Strings are copies. */
typedef struct {
  char name[HOT_NAME_MAX];
  int layer_id;                /* Philox tag = layer_id * 16 + tensor */
  int64_t T, O, I, B, L;
  hot_dtype dtype;             /* dtype the calls must pass */
  int bias;                    /* the spec computes g_b */
  hot_gran gran;               /* g' scale granularity in effect (TENSOR, ROW or SAMPLE) */
  int gran_auto;               /* 1: the spec says auto (LQS); before calibration: per sample
                                  (per tensor when B = 1) */
  int calibrated;              /* 1 after a successful hot_layer_calibrate */
  double lqs_e_tensor, lqs_e_token; /* errors measured by the last calibration (both backends,
                                       the same bits); e_tensor: one scale per sample */
  size_t saved_bytes;          /* hot_layer_saved_bytes */
  int64_t fp32_bytes;          /* T * I * 4: what keeping x in fp32 would take */
  int compiled;                /* 1 once the kernels are compiled (or found in the cache) */
  char arch[16];               /* arch the layer is planned for */
  uint64_t seed;               /* the Philox key in use: the seed (spec, context), or for a
                                  layer of hot_layer_create_named the key derived from it */
  char tiles[256];             /* where the GEMM tiles came from: "tuned: <db> <date> <variant>
                                  (exact shape)" or "(nearest shape ...)", "spec", "default" or
                                  "default (why not tuned)" (docs/tuning.md) */
} hot_layer_info;

/* Fills *out. HOT_ERR_INVALID (NULLs), HOT_ERR_MISUSE (destroyed layer). */
HOT_API hot_status hot_layer_get_info(const hot_layer *layer, hot_layer_info *out);

/* Copies the description the layer was planned from into *out (for a spec-file layer: the
 * spec's settings with its recipe applied; for hot_layer_create: the caller's spec with the
 * recipe rule applied). The caller owns *out. Errors: HOT_ERR_INVALID (NULLs), HOT_ERR_MISUSE
 * (destroyed layer). */
HOT_API hot_status hot_layer_get_spec(const hot_layer *layer, hot_layer_spec *out);

/* The plan the layer runs (planner output; read-only, valid until the layer is destroyed), or
 * NULL for a NULL or destroyed layer. For tests and tools comparing with templates/ref.h; the
 * type is opaque here (its fields are the generator's internal gen/plan.h). */
typedef struct hot_layer_plan hot_layer_plan;
HOT_API const hot_layer_plan *hot_layer_get_plan(const hot_layer *layer);

/* Bytes of the saved-activation buffer of hot_layer_save: with ABC, the q_x^ codes (I rows of
 * K = blocks * r int8, K not padded), zero bytes up to a multiple of 16, then the fp32 scales
 * s_x^ (one, or one per sample when x^ or g^ is scaled per sample: hla.scale) — the method's own
 * count plus at most 15 bytes; without ABC an fp32 copy of x (T * I * 4).
 * 0 for a NULL or destroyed layer. */
HOT_API size_t hot_layer_saved_bytes(const hot_layer *layer);

/* Explicit JIT / warm-up: emits the layer's kernels and finds or compiles them through the
 * kernel cache (memory, then disk, then NVRTC); on the CUDA backend also loads them. On the
 * CPU backend it compiles only when an arch is forced (HOT_ARCH or the option; no GPU needed,
 * e.g. to fill a cache) and is otherwise a no-op. Kernels whose template is not in this build
 * are skipped here; the calls that need them fail with HOT_ERR_UNSUPPORTED.
 * Errors: HOT_ERR_INVALID, HOT_ERR_MISUSE, HOT_ERR_COMPILE (hot_compile_log has the log),
 * HOT_ERR_NO_NVRTC, HOT_ERR_IO (cache directory), HOT_ERR_BAD_BINARY and other CUDA errors. */
HOT_API hot_status hot_layer_compile(hot_layer *layer);

/* The same for n layers of ctx: first every distinct kernel of all n layers (equal kernels of
 * different layers once) is found or compiled in ONE pool of HOT_JIT_THREADS (else the CPUs)
 * concurrent compiles, so a model's cold start costs about its slowest kernels rather than the
 * sum over layers; then each layer is made ready in order, stopping at the first error (its
 * message and log as hot_layer_compile's). HOT_ERR_MISUSE when a layer belongs to another
 * context (nothing is compiled then). */
HOT_API hot_status hot_ctx_compile(hot_ctx *ctx, hot_layer *const *layers, size_t n);

/* Loads a kernel pack (written by `hot-gen SPEC --compile ARCHS --pack FILE`: every compiled
 * kernel of a spec with its cache key) into ctx's kernel cache: a layer whose kernels are in a
 * loaded pack never compiles (hot_stats.compiles stays 0), on a machine without NVRTC too. An
 * entry whose key differs (another NVRTC version, other options, another generator or source)
 * is ignored and that kernel compiles as usual. Several packs may be loaded; they are kept until
 * hot_ctx_destroy. The environment variable HOT_KERNEL_PACK=FILE makes hot_ctx_create load one.
 * path is borrowed for the call. Errors (message names the file): HOT_ERR_INVALID (NULL ctx or
 * path; the file is not a valid pack: truncated, checksum, format version, bad field),
 * HOT_ERR_IO (missing, unreadable, not a regular file; also the cache directory), HOT_ERR_NOMEM,
 * HOT_ERR_MISUSE (ctx failed to initialise). */
HOT_API hot_status hot_ctx_load_pack(hot_ctx *ctx, const char *path);

/* Forward (ABC): x (T x I, dtype) -> the saved buffer (see hot_layer_saved_bytes). `saved` is
 * either a buffer the caller owns of hot_layer_saved_bytes(layer) bytes, 16-byte aligned, in
 * the backend's memory (device/host), which the caller keeps until the matching backward — or
 * NULL: the layer's own buffer (allocated at the first save, freed with the layer; each save
 * overwrites it). A caller's `saved` may share no byte with x (refused, HOT_ERR_INVALID).
 * Errors: HOT_ERR_INVALID (NULL x, dtype other than the layer's, a misaligned
 * or host buffer on CUDA, saved overlapping x), HOT_ERR_MISUSE, HOT_ERR_NONFINITE (CPU), HOT_ERR_UNSUPPORTED (CUDA:
 * a kernel not in this build, or a layer without ABC — abc or hla disabled — whose fp32 copy of
 * x only the CPU backend keeps), compile and CUDA errors (first use compiles). */
HOT_API hot_status hot_layer_save(hot_layer *layer, const void *x, hot_dtype dtype, void *saved,
                                  void *stream);

/* Backward: g_y (T x O), w (O x I), both of `dtype`, and the buffer written by hot_layer_save
 * (`saved`, or NULL for the layer's own) -> g_x (T x I), g_w (O x I) and g_b (O), fp32, in memory
 * the caller owns. Each output is computed only when its pointer is not NULL (at least one must
 * be): g_x NULL skips HQ and the g_x GEMM (an input that needs no gradient), g_w NULL skips HLA
 * and the g_w GEMM and reads no saved activations (a frozen weight: no hot_layer_save is needed
 * before such a call); each output's bits are the same whichever others are asked for. `step`
 * is the training step (Philox counter of the stochastic rounding: use a new value each step).
 * g' uses the layer's granularity in effect (hot_layer_get_info: a spec's auto is per sample
 * until hot_layer_calibrate).
 * Overlap: g_x, g_w and g_b (written) may share no byte with each other nor with g_y, w or
 * saved (g_y T*O, w O*I elements of dtype; saved hot_layer_saved_bytes); inputs may overlap
 * each other. An overlapping call is refused before any work (HOT_ERR_INVALID naming both
 * arguments): in place (g_x = g_y when I = O) is not supported, as its result would depend on
 * the order the backend reads and writes.
 * Errors: HOT_ERR_INVALID (g_y or w NULL, g_x, g_w and g_b all NULL, dtype, g_b given for a
 * layer whose spec has bias = false, overlapping buffers, a caller's saved not 16-byte aligned
 * (looked at only with g_w, which alone reads it), a misaligned or host buffer on CUDA: w is
 * looked at there only with g_x, which alone reads it), HOT_ERR_MISUSE (g_w asked for with
 * saved NULL before any save), HOT_ERR_NONFINITE (CPU), HOT_ERR_RANGE (finite inputs, an output
 * overflowed fp32: see "Overflow" below), HOT_ERR_UNSUPPORTED (CUDA: a kernel not in this
 * build, or g_x of a layer without HQ or g_w of one without ABC: only the CPU backend computes
 * their fp32 products), compile and CUDA errors. After an error the outputs asked for hold
 * unspecified values (one may have been written before a later step failed). */
HOT_API hot_status hot_layer_backward(hot_layer *layer, const void *g_y, const void *w,
                                      hot_dtype dtype, const void *saved, float *g_x, float *g_w,
                                      float *g_b, uint32_t step, void *stream);

/* Calibration (LQS, CONTRACT.md 6) on a calibration g_y (T x O, dtype): measures the per-sample
 * (reported as e_tensor; per tensor when B = 1) and per-token quantization errors of g_y and
 * fixes the layer's g' granularity (per token iff e_token < 0.5 e_tensor, else per sample, or
 * per tensor when B = 1). Only for layers whose spec says scale = "auto"; until calibrated they
 * run per sample. May be repeated (the latest result holds). Synchronous on the CUDA backend
 * (the stream is synchronised and the choice and both errors are read back; the same bits as the
 * CPU backend's). Errors: HOT_ERR_INVALID (NULL g_y, dtype, a misaligned or host buffer on
 * CUDA), HOT_ERR_MISUSE (granularity fixed by the spec), HOT_ERR_NONFINITE,
 * HOT_ERR_UNSUPPORTED (CUDA: LQS kernel not in this build). */
HOT_API hot_status hot_layer_calibrate(hot_layer *layer, const void *g_y, hot_dtype dtype,
                                       uint32_t step, void *stream);

/* ---- overflow (HOT_ERR_RANGE) ----------------------------------------------------------------
 * Finite inputs close to FLT_MAX can overflow fp32 inside a backward (templates/CONTRACT.md
 * "Overflow of finite inputs"); hot never reports HOT_OK for such a step once its outcome is
 * known:
 *  - CPU backend: hot_layer_backward itself returns HOT_ERR_RANGE (the outputs hold Inf/NaN).
 *  - CUDA backend: the kernels raise a device-side flag word; hot_layer_backward only enqueues
 *    its zeroing and an asynchronous copy back into host words of its own (no
 *    synchronisation), so the overflow of a backward is reported by a LATER call on the same
 *    layer (save, backward or calibrate return HOT_ERR_RANGE naming the step and the output,
 *    without running) once the stream has reached it, or at once when profiling is on (which
 *    synchronises anyway), or by hot_layer_check.
 *  - Reports are never lost when the host runs ahead of the device: each backward's words have
 *    their own slot (up to 8 backwards of a layer in flight; a 9th waits for the oldest before it
 *    runs), and an overflow once seen is kept until a call returns it. The call returns the
 *    first overflowing backward not reported yet, and says how many later ones overflowed too;
 *    each is reported once. A layer destroyed before that drops its report. */

/* Waits for the layer's backwards still in flight (CUDA: the events recorded after them, not the
 * whole stream) and returns HOT_ERR_RANGE if an output of one of them, or of an earlier backward
 * not reported yet, overflowed, else HOT_OK. The CPU backend has nothing pending: HOT_OK. Errors: HOT_ERR_INVALID (NULL layer), HOT_ERR_MISUSE
 * (destroyed layer), HOT_ERR_RANGE, HOT_ERR_CUDA. */
HOT_API hot_status hot_layer_check(hot_layer *layer);

/* ---- per-kernel timing (CUDA backend) ------------------------------------------------------
 * With profiling on, every kernel launch of a layer's save, backward and calibrate is bracketed
 * by two CUDA events (created once per layer, at most 2 * HOT_MAX_KERNEL_TIMES, destroyed with
 * the layer), and the call SYNCHRONISES its stream at its end to read the times: profiling
 * serialises the caller's stream with the host, so use it for measurement, not in training.
 * Off (the default): no event is created or recorded, no synchronisation, no cost. */
#define HOT_MAX_KERNEL_TIMES 32 /* launches timed per call; later ones are not timed */

/* Turns profiling of ctx's layers on (on != 0) or off; applies from the next call. Errors:
 * HOT_ERR_INVALID (NULL ctx), HOT_ERR_MISUSE (failed context), HOT_ERR_UNSUPPORTED (turning it
 * on in a CPU-backend context: the CPU reference launches no kernels; off is accepted). */
HOT_API hot_status hot_ctx_set_profiling(hot_ctx *ctx, int on);

/* One timed kernel launch. */
typedef struct {
  const char *name;  /* the kernel's entry name; borrowed from the layer's plan, valid until the
                        layer is destroyed */
  int role;          /* hot_kernel_role (plan.h): which kernel of the layer */
  int phase;         /* the launch's phase argument (0 for kernels without phases) */
  double ms;         /* GPU time between the events around the launch, milliseconds */
} hot_kernel_time;

/* The kernel times of the layer's LAST save, backward or calibrate, one entry per launch in
 * launch order (memsets not included). Copies min(max, total) entries into out and sets *n to
 * total, so max = 0 (out may then be NULL) asks for the count. total is 0 when that call ran
 * with profiling off, failed, or there has been no call yet. Errors: HOT_ERR_INVALID (NULL layer
 * or n, max < 0, out NULL with max > 0), HOT_ERR_MISUSE (destroyed layer), HOT_ERR_UNSUPPORTED
 * (CPU backend). */
HOT_API hot_status hot_layer_kernel_times(const hot_layer *layer, hot_kernel_time *out, int max,
                                          int *n);

/* ---- the CPU backend's threads ------------------------------------------------------------------
 * The CPU backend runs its parallel regions on HOT_CPU_THREADS threads (default: the online CPUs)
 * of a pool of its own. In a program whose other CPU work runs on an OpenMP runtime (PyTorch's
 * CPU operators run on GNU OpenMP), that runtime's workers keep spinning for a few milliseconds
 * after each of its regions, so a backward that starts right after such work shares the CPUs with
 * them. hot_cpu_use_openmp runs hot's regions on that runtime's workers instead (the Python
 * package does this by itself when it finds GNU OpenMP loaded: docs/python.md). While attached,
 * a region that one of the runtime's workers enters late (descheduled: other processes use the
 * CPUs, and the region's closing barrier would wait a scheduler time slice for it) sends the
 * regions of the next second to hot's own pool (docs/cpu-backend.md). Process-wide, for every
 * context; the results are the same bits either way. */

/* Runs the CPU backend's parallel regions on the workers of the OpenMP runtime `runtime`, which
 * must already be loaded in the process (nothing is loaded; it is kept loaded while in use),
 * named as dlopen knows it: "libgomp.so.1" (GNU), or a runtime exporting the same entry points
 * (GOMP_parallel, omp_get_thread_num: LLVM's "libomp.so", Intel's "libiomp5.so"); NULL returns to
 * hot's own pool. Waits for a region in progress. Errors: HOT_ERR_INVALID (an empty name, or one
 * of HOT_NAME_MAX bytes or more), HOT_ERR_NOT_FOUND (the runtime is not loaded in this process, or
 * lacks one of the two functions), HOT_ERR_MISUSE (called from a thread that is running one of
 * hot's CPU tasks); the setting is then unchanged. */
HOT_API hot_status hot_cpu_use_openmp(const char *runtime);

/* Copies the name of the runtime in use into buf (cap bytes, truncated to fit and NUL-terminated;
 * "" for hot's own pool; buf may be NULL when cap is 0) and returns 1 when a runtime is in use, 0
 * when the own pool is. */
HOT_API int hot_cpu_openmp(char *buf, size_t cap);

/* The largest thread count of the CPU backend (HOT_CPU_THREADS, hot_ctx_set_cpu_threads). */
#define HOT_MAX_CPU_THREADS 256

/* Sets the number of threads (the caller's included) that ctx's later CPU-backend calls run on:
 * n in [1, HOT_MAX_CPU_THREADS], or 0 for the count the context started with (HOT_CPU_THREADS,
 * else the online CPUs). The Python package sets it before each call to torch.get_num_threads()
 * unless HOT_CPU_THREADS is set (docs/python.md). The results are the same bits for any count.
 * Like every call on ctx, not while another thread uses ctx or its layers. Errors: HOT_ERR_INVALID
 * (NULL ctx, n out of range), HOT_ERR_MISUSE (failed context), HOT_ERR_UNSUPPORTED (a CUDA
 * context); the count is then unchanged. */
HOT_API hot_status hot_ctx_set_cpu_threads(hot_ctx *ctx, int n);

/* The number of threads ctx's CPU-backend calls run on now (>= 1); 0 for NULL, a failed or a
 * CUDA context. *pinned (may be NULL) is set to 1 when HOT_CPU_THREADS gave the count the context
 * started with, else 0. Never fails. */
HOT_API int hot_ctx_cpu_threads(const hot_ctx *ctx, int *pinned);

/* The number of parallel regions the CPU backend has run on more than one thread since the
 * process started (all contexts; a call small enough to run on the calling thread alone starts
 * none). A counter for benchmarks and tests: the difference across a call is its regions. Never
 * fails; safe from any thread. */
HOT_API unsigned long long hot_cpu_regions(void);

/* The number of times the CPU backend, while on an OpenMP runtime (hot_cpu_use_openmp), has
 * fallen back to its own threads for a second since the process started: two regions within
 * 100 ms whose team members entered more than 500 us late, the sign of CPUs shared with other
 * processes (docs/cpu-backend.md, Threads). A counter for benchmarks: a step whose difference is
 * not 0 ran partly on hot's own threads. Never fails; safe from any thread. */
HOT_API unsigned long long hot_cpu_openmp_fallbacks(void);

/* ---- captures ---------------------------------------------------------------------------------
 * A capture file holds the x (T x I), w (O x I) and g_y (T x O) of one backward of a linear layer,
 * in the layer's dtype, with its name and sizes, so that the error of hot's settings can be
 * measured on real tensors instead of seeded ones (format: docs/capture.md; the Python package
 * writes one with hot.capture or hot.torch.capture_next_backward). */

/* Writes a capture of layer `layer_name` (1 .. HOT_NAME_MAX-1 printable ASCII bytes) to `path`:
 * T = batch * tokens rows; x, w and g_y are HOST pointers, row-major, of `dtype` (f32, or bf16 /
 * f16 bit patterns, as the layer calls take them), only read. The file is written to a temporary
 * file beside `path` ("<path>.tmp-<pid>-<n>") and renamed over `path` once complete and flushed,
 * so a reader sees the old file or the whole new one; on an error nothing is left behind and an
 * existing file at `path` is unchanged. No context is involved: the message of a failure is
 * written to err (errlen bytes, always NUL-terminated, one line naming the path and the argument
 * or the system's reason; err may be NULL when errlen is 0), and err is set to "" on success.
 * Errors: HOT_ERR_INVALID (NULL or empty path, NULL tensor, a bad name or dtype),
 * HOT_ERR_SHAPE (a size < 1 or > 2^31-1, T > 2^31-1), HOT_ERR_NONFINITE (a NaN or Inf in a
 * tensor: the message names the tensor, row and column), HOT_ERR_IO (the file cannot be
 * created, written or renamed into place), HOT_ERR_NOMEM. */
HOT_API hot_status hot_capture_write(const char *path, const char *layer_name, int64_t batch,
                                     int64_t tokens, int64_t out_features, int64_t in_features,
                                     hot_dtype dtype, const void *x, const void *w,
                                     const void *g_y, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* HOT_H */

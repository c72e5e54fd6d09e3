/* nvrtc.h — compile one CUDA program (one source, one or more extern "C" kernels; runtime/jit.h
 * makes one program per distinct kernel of a layer) to CUBIN for one exact arch, and the
 * injectable compiler interface
 * the kernel cache calls (so tests can count compiles and force failures).
 *
 * Every compile uses, in this order:
 *   -arch=<arch>  --include-path=<toolkit include>  -std=c++17  --ptxas-options=-v  -default-device
 *   <the request's extra options>  [--time=<temp file>]
 * The last one (NVRTC >= 12.8 only; it does not change the binary, so it is not part of cache
 * keys) asks NVRTC for its phase times, read back into the result and the temp file removed.
 * where <arch> is "sm_XX" or "sm_XXa"/"sm_XXf" (CUBIN only, never PTX: a PTX-only compile accepts
 * invalid inline asm silently) and the toolkit include is cuda_toolkit_include() (HOT_CUDA_HOME or
 * the build's default). The ptxas verbose lines of the log give each kernel's registers, spills,
 * stack and shared memory (hot_kernel_info); the full log is kept as well.
 */
#ifndef HOT_NVRTC_H
#define HOT_NVRTC_H

#include <stddef.h>

#include "status.h" /* rt_status */

#define HOT_MAX_PROGRAM_KERNELS 64 /* kernels in one program */

/* What to compile. All pointers are borrowed for the duration of the call only. */
typedef struct {
  const char *program;            /* program name for messages, e.g. "vit_b16.qkv.cu"; NULL = "hot.cu" */
  const char *source;             /* the full CUDA source, NUL-terminated */
  const char *const *kernels;     /* extern "C" entry names (their lowered names are themselves) */
  size_t n_kernels;               /* 1 .. HOT_MAX_PROGRAM_KERNELS */
  const char *arch;               /* an arch name of the arch table (gen/plan_tables.c) */
  const char *const *options;     /* extra compiler options, in order; NULL when n_options == 0 */
  size_t n_options;
} hot_kernel_source;

/* What ptxas reported for one kernel. Counts are -1 when the log did not say. */
typedef struct {
  char *name;              /* the kernel's name; owned by the enclosing result */
  int found;               /* 1 when the log had a "Compiling entry function" line for it */
  int registers;           /* registers per thread */
  int stack_bytes;         /* stack frame, bytes */
  int spill_store_bytes;   /* spill stores, bytes */
  int spill_load_bytes;    /* spill loads, bytes */
  int shared_bytes;        /* static shared memory, bytes (0 when ptxas printed none) */
} hot_kernel_info;

/* A compiled program. Every pointer member is malloc'd and owned by the struct: release with
 * nvrtc_result_free. kernels[] is in the order of the request's kernels. */
typedef struct {
  unsigned char *cubin;      /* the CUBIN image (NULL after a failed compile) */
  size_t cubin_size;
  char *log;                 /* the compiler log, NUL-terminated ("" when empty; kept on failure) */
  size_t log_size;           /* strlen(log) */
  hot_kernel_info *kernels;  /* n_kernels entries (filled on success) */
  size_t n_kernels;
  double compile_ms;         /* wall time of the compile, milliseconds */
  /* NVRTC's own phase times (its --time report, NVRTC >= 12.8), milliseconds; valid only when
   * phases_known is 1 (0 for an older NVRTC, an injected compiler, or a cache/pack hit). */
  int phases_known;
  double front_ms;           /* CUDA C++ front end: preprocessing, parsing, templates */
  double nvvm_ms;            /* NVVM: LLVM optimisation and PTX generation */
  double ptxas_ms;           /* PTX to SASS (ptxas) */
} hot_compile_result;

/* Frees every member and zeroes *r. NULL-safe; safe on a zeroed struct. */
void nvrtc_result_free(hot_compile_result *r);

/* The injectable compiler. The default is nvrtc_compiler(); tests pass their own table (which may
 * wrap the default through `user`). All three functions must be thread-safe. */
typedef struct hot_compiler {
  void *user;  /* passed back to every function */
  /* The compiler's version identity for cache keys, e.g. "nvrtc-13.0", written into buf (only
   * [A-Za-z0-9._-], at most 31 characters). Returns RT_OK, or an error status (with a message)
   * when the compiler is unavailable, in which case the cache accepts entries of any version. */
  rt_status (*version)(void *user, char *buf, size_t n, char *err, size_t errlen);
  /* The options the compiler adds to every compile besides -arch and the request's options, as
   * one string hashed into cache keys. NULL counts as "". */
  const char *fixed_options;
  /* Compiles src into *out. *out is always fully written (zeroed first): on error it may still
   * hold the log, and the caller must nvrtc_result_free it either way. Returns RT_OK,
   * RT_ERR_COMPILE (one-line message naming the program, arch and first error; log in out->log),
   * RT_ERR_NO_NVRTC, RT_ERR_INVALID or RT_ERR_NOMEM. */
  rt_status (*compile)(void *user, const hot_kernel_source *src, hot_compile_result *out,
                       char *err, size_t errlen);
} hot_compiler;

/* The NVRTC compiler (static storage, never free). Loads NVRTC on the first compile or version
 * call only. */
const hot_compiler *nvrtc_compiler(void);

/* The default compile, as nvrtc_compiler()->compile without the user pointer. */
rt_status nvrtc_compile(const hot_kernel_source *src, hot_compile_result *out, char *err,
                        size_t errlen);

/* 1 when arch is "sm_" + 2 or 3 digits + an optional 'a' or 'f', else 0. */
int nvrtc_arch_valid(const char *arch);

/* Checks a request (NULLs, kernel count, arch, empty names). RT_OK or RT_ERR_INVALID + message. */
rt_status nvrtc_check_source(const hot_kernel_source *src, char *err, size_t errlen);

/* Fills k[i].found/registers/stack/spills/shared for the kernels named k[i].name (n entries)
 * from a ptxas verbose log; entries not found keep found = 0 and -1 counts (shared 0).
 * Returns the number of kernels found. Pure; exposed for tests. */
size_t nvrtc_parse_ptxas(const char *log, hot_kernel_info *k, size_t n);

/* Reads NVRTC's --time CSV (lines "<program>, <phase>, <number>, ms"; a header line and unknown
 * phases are ignored) into r->front_ms/nvvm_ms/ptxas_ms: "Frontend" phases add to front, "NVVM"
 * to nvvm, "PTX" to ptxas. Sets r->phases_known = 1 when at least one phase was read. Returns
 * the number of phase lines read. Pure; exposed for tests. */
int nvrtc_parse_time_csv(const char *csv, hot_compile_result *r);

#endif

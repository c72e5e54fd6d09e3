/* cache.h — the kernel cache: memory + disk, keyed by everything that changes the binary.
 *
 * Usage (hot-gen --compile and the runtime's contexts do this):
 *   hot_kcache *kc; char err[512];
 *   if (kcache_open(&kc, NULL, err, sizeof err) != RT_OK) die(err);  // NULL: defaults + env
 *   const char *names[] = {"hq_fwd_b16", "hq_bwd_b16"};                   // extern "C" kernels
 *   hot_kernel_source src = {"vit_b16.fc2.cu", source_text, names, 2, "sm_90", NULL, 0};
 *   const hot_kernel_binary *bin; hot_kcache_origin how; char *log = NULL;
 *   rt_status st = kcache_get(kc, &src, &bin, &how, &log, err, sizeof err);
 *   if (st != RT_OK) { report(err, log); free(log); }                   // log: compile errors only
 *   else printf("%s %.1f ms, %d regs\n", kcache_origin_name(how), bin->compile_ms,
 *               bin->kernels[0].registers);                              // bin valid until close
 *   kcache_close(kc);
 *
 * Key: SHA-256 over a format tag, the generator version, the compiler's fixed options, the arch,
 * every extra option (in order), every kernel name (in order), the program name and the full
 * source; plus the compiler version ("nvrtc-13.0", from nvrtcVersion), which is part of the file
 * name: <64 hex>-<compiler version>.hotk. NVRTC is loaded only to learn its version and on a
 * miss; when it cannot be loaded at all, a disk entry of any compiler version is accepted (a
 * filled cache works on a machine without the toolkit).
 *
 * Directory: config.dir, else $HOT_CACHE_DIR, else $XDG_CACHE_HOME/hot, else $HOME/.cache/hot
 * (created, mode 0700). HOT_NO_DISK_CACHE=1 keeps everything in memory. HOT_CACHE_MAX_MB bounds
 * the directory (default 256 MiB): after each write the least recently used entries (by mtime,
 * refreshed on every hit) are removed until the total fits.
 *
 * Entry file (cache_file.h: format, encode/decode, checksums, I/O): a 104-byte header then a
 * readable text record of the key and per-kernel ptxas figures, the CUBIN and the compile log.
 * Written to a temp file in the same directory (unique per pid and counter) and rename()d into
 * place, so readers in other processes see the old entry, the new one or none, never a torn one.
 * An entry whose length, magic, version, key or checksum is wrong, or that is not a regular file
 * (a FIFO, device, socket, symbolic link or directory in its place: opened without blocking,
 * never followed), is a miss: it is recompiled and replaced (stats: disk_rejects); a directory in
 * the way is removed when empty, else moved aside to .displaced-<name>-<pid>-<n>.
 *
 * Thread-safe: one hot_kcache may be used by several threads (compiles run outside its lock;
 * two threads missing the same key may both compile, and one result is kept).
 */
#ifndef HOT_CACHE_H
#define HOT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "nvrtc.h"
#include "pack.h"

#define HOT_KCACHE_FORMAT 1                          /* bump when the entry layout changes */
#define HOT_KCACHE_DEFAULT_MAX_BYTES (256ull << 20)  /* 256 MiB */

typedef struct hot_kcache hot_kcache;

/* How kcache_get found a binary. */
typedef enum {
  HOT_KCACHE_COMPILED = 0, HOT_KCACHE_MEMORY, HOT_KCACHE_DISK, HOT_KCACHE_PACK
} hot_kcache_origin;

/* Static name: "compiled", "memory", "disk", "pack" ("?" when out of range). */
const char *kcache_origin_name(hot_kcache_origin o);

/* Options for kcache_open; a zeroed struct (or NULL) means all defaults. Pointers are
 * borrowed during kcache_open only (strings are copied), except `compiler`, which must
 * stay valid until kcache_close. */
typedef struct {
  const char *dir;                 /* NULL: from the environment (see above) */
  const char *dir_origin;          /* what `dir` came from, for messages ("--cache-dir",
                                      "options.cache_dir"); NULL: "the configured directory" */
  int disk;                        /* 0: on unless HOT_NO_DISK_CACHE=1; 1: on; -1: off */
  uint64_t max_bytes;              /* 0: $HOT_CACHE_MAX_MB MiB, else 256 MiB */
  const hot_compiler *compiler;    /* NULL: nvrtc_compiler() */
  const char *generator_version;   /* NULL: this build's HOT_VERSION */
  const hot_env *env;              /* the environment as already read (env.h) by the caller;
                                      NULL: kcache_open reads it (env_read) */
  int read_only;                   /* 1: never write the directory (also automatic when the
                                      directory exists but is not writable) */
  int jit_debug;                   /* 0: $HOT_JIT_DEBUG; 1: on; -1: off. On: jit_layer writes
                                      every program's source and compile log (jit.h) */
  const char *debug_dir;           /* NULL: $HOT_JIT_DEBUG_DIR, else <dir>/debug, or ./hot-debug
                                      for a memory-only or read-only cache */
} hot_kcache_config;

/* A compiled program as kept by the cache. Owned by the cache; every pointer is valid until
 * kcache_close. Read-only. */
typedef struct {
  const unsigned char *cubin;      /* CUBIN image, cubin_size bytes */
  size_t cubin_size;
  const char *log;                 /* compile log (NUL-terminated; from the disk entry on a disk hit) */
  size_t log_size;
  const hot_kernel_info *kernels;  /* in the order of the request's kernel names */
  size_t n_kernels;
  double compile_ms;               /* the compile's wall time, when and wherever it happened */
  int phases_known;                /* 1: the three phase times below are NVRTC's own (compiled
                                      by this cache object); 0: unknown (a disk or pack hit) */
  double front_ms, nvvm_ms, ptxas_ms; /* front end, NVVM, ptxas (nvrtc.h) */
  hot_kcache_origin origin;        /* how it entered this cache object: COMPILED, DISK or PACK */
  char arch[16];                   /* an arch name of the plan tables */
  char compiler[32];               /* e.g. "nvrtc-13.0"; "" when unknown */
  char key[65];                    /* hex SHA-256 key (without the compiler version) */
} hot_kernel_binary;

/* Counters since open; read with kcache_stats_get. */
typedef struct {
  uint64_t compiles;          /* successful compiles (calls to the compiler that succeeded) */
  uint64_t compile_failures;  /* compiles that failed */
  uint64_t memory_hits;
  uint64_t disk_hits;
  uint64_t disk_writes;       /* entries written */
  uint64_t disk_write_errors; /* entries that could not be written (the binary is still returned) */
  uint64_t disk_rejects;      /* entries found but truncated, corrupt or of another format */
  uint64_t evictions;         /* entries removed to respect max_bytes */
  uint64_t pack_hits;         /* binaries served by a kernel pack (kcache_add_pack) */
  double compile_ms;          /* total wall time of successful compiles */
} hot_kcache_stats;

/* Opens a cache. On RT_OK *out is a new cache the caller owns (kcache_close). Errors
 * (*out = NULL, one-line message in err): RT_ERR_INVALID (NULL out, or config->env NULL and a
 * HOT_* variable with a bad value, named), RT_ERR_NOMEM, RT_ERR_IO (the disk directory cannot
 * be found, created or read; the message names the directory and where it came from:
 * HOT_CACHE_DIR, XDG_CACHE_HOME, HOME or config->dir_origin). A directory that exists and can be
 * read but not written opens READ-ONLY: its entries are served, misses are compiled into memory
 * only (kcache_read_only). Does not load NVRTC or the driver. */
rt_status kcache_open(hot_kcache **out, const hot_kcache_config *config, char *err,
                          size_t errlen);

/* The default cache directory from the environment as read (HOT_CACHE_DIR, else
 * $XDG_CACHE_HOME/hot, else $HOME/.cache/hot) into path; *what = the variable it came from.
 * Returns snprintf's count (>= n: too long), or -1 when none is set. Creates nothing. */
int kcache_default_dir(const hot_env *ev, char *path, size_t n, const char **what);

/* Frees the cache and every binary it returned. NULL-safe. Leaves the disk as it is. */
void kcache_close(hot_kcache *kc);

/* Finds or builds the binary of src (see nvrtc.h for its fields; they are borrowed for the
 * call). On RT_OK *out points at a binary owned by kc (valid until kcache_close) and, when
 * origin is not NULL, *origin says how it was found. When log is not NULL, *log is set to NULL,
 * or on RT_ERR_COMPILE to a malloc'd copy of the compiler log the caller must free.
 * Errors (*out = NULL, message in err): RT_ERR_INVALID (bad arguments: NULLs, arch, names),
 * RT_ERR_COMPILE (message names program, arch and the first error), RT_ERR_NO_NVRTC (a miss on
 * a machine without NVRTC), RT_ERR_NOMEM. Disk problems never fail a get: an unreadable entry is
 * a miss, an unwritable one is counted in disk_write_errors. */
rt_status kcache_get(hot_kcache *kc, const hot_kernel_source *src,
                         const hot_kernel_binary **out, hot_kcache_origin *origin, char **log,
                         char *err, size_t errlen);

/* Adds a kernel pack (pack.h), which kc then owns (freed by kcache_close, also on error).
 * A get that misses memory looks in the packs, in the order added, before the disk: an entry
 * with the request's key, kernel names and compiler version (any version when the compiler's
 * is unknown) is a hit of origin HOT_KCACHE_PACK (stats: pack_hits), copied into memory and
 * never written to the disk cache; anything else in a pack is ignored (a miss, not an error).
 * RT_OK, RT_ERR_INVALID (NULL), RT_ERR_NOMEM. Thread-safe. */
rt_status kcache_add_pack(hot_kcache *kc, hot_pack *pack, char *err, size_t errlen);

/* Copies the counters into *out. Both non-NULL. */
void kcache_stats_get(hot_kcache *kc, hot_kcache_stats *out);

/* The disk directory in use, or NULL when the cache is memory-only. Valid until close. */
const char *kcache_dir(const hot_kcache *kc);

/* 1 when the disk directory is only read (config.read_only, or not writable), else 0. */
int kcache_read_only(const hot_kcache *kc);

/* Where HOT_JIT_DEBUG dumps go (created on first dump), or NULL when debugging is off. */
const char *kcache_debug_dir(const hot_kcache *kc);

/* The disk path the entry for src has (or would have) under the current compiler version, into
 * buf. RT_OK, RT_ERR_INVALID (bad src, or a memory-only cache), RT_ERR_NO_NVRTC (compiler version
 * unknown). For tools and tests (e.g. to corrupt an entry on purpose). */
rt_status kcache_entry_path(hot_kcache *kc, const hot_kernel_source *src, char *buf,
                                size_t n, char *err, size_t errlen);

#endif

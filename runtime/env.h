/* env.h — the one reader of libhot's HOT_* environment variables, strict: a set variable whose
 * value does not parse is an error naming the variable, never a silent default.
 *
 * hot_ctx_create reads the whole environment once (env_read) and passes the values down: the
 * kernel cache (hot_kcache_config.env), the JIT (its thread count) and the CUDA loaders
 * (cuda_api_configure). Tools that use the lower layers directly (hot-gen --compile) get the same
 * parse when they leave a setting to the environment (kcache_open with config.env NULL).
 *
 * Accepted forms: integers as base/num.h's num_parse_u64 reads them (decimal, leading zeros
 * still decimal: "010" is 10, no octal; hex only after 0x / 0X; no sign, space or trailing
 * characters) inside the documented range; booleans 0/1, true/false, yes/no, on/off; paths non-empty. An empty variable
 * counts as unset. */
#ifndef HOT_ENV_H
#define HOT_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "status.h" /* rt_status */

/* Every HOT_* variable libhot reads. Strings point into the environment (valid until the
 * variable changes); `*_set` is 1 when the variable was set (and valid). */
typedef struct {
  const char *backend;       /* HOT_BACKEND: "auto", "cuda" or "cpu" (checked) */
  int device_set;            /* HOT_DEVICE: 0 .. 1024 */
  int device;
  const char *arch;          /* HOT_ARCH: checked by the caller (plan_arch_parse) */
  const char *cache_dir;     /* HOT_CACHE_DIR: when it exists, a directory */
  int no_disk_set;           /* HOT_NO_DISK_CACHE: boolean */
  int no_disk;
  uint64_t cache_max_bytes;  /* HOT_CACHE_MAX_MB: 1 .. 2^40 MiB, in bytes; 0 = unset */
  int seed_set;              /* HOT_SEED: 64-bit unsigned */
  uint64_t seed;
  int jit_debug_set;         /* HOT_JIT_DEBUG: boolean */
  int jit_debug;
  const char *debug_dir;     /* HOT_JIT_DEBUG_DIR: when it exists, a directory */
  const char *cuda_driver;   /* HOT_CUDA_DRIVER: a library (a missing one is the driver
                                loader's "no CUDA driver: cannot load ..." reason) */
  const char *cuda_home;     /* HOT_CUDA_HOME: an existing directory */
  int jit_threads;           /* HOT_JIT_THREADS: 1 .. 64; 0 = unset */
  const char *kernel_pack;   /* HOT_KERNEL_PACK: a kernel pack file (pack.h), loaded by
                                hot_ctx_create (a missing or bad file fails it, named) */
  int tune_set;              /* HOT_TUNE: boolean; 0 = plan with the default tiles, never the
                                tuning databases' */
  int tune;
  const char *tune_db;       /* HOT_TUNE_DB: the user tuning database (default
                                <cache dir>/tune.db); a missing file is no rows */
  int cpu_threads;           /* HOT_CPU_THREADS: 1 .. 256 (FAST_MAX_THREADS); 0 = unset */
  int cpu_isa;               /* HOT_CPU_ISA: the level cap (fast_level_by_name); -1 = unset */
  const char *xdg_cache_home; /* XDG_CACHE_HOME and HOME: where the default cache lives */
  const char *home;
} hot_env;

/* Variables a caller overrides in code (bits of `skip` of env_read): not read, not checked. */
enum {
  HOT_ENV_BACKEND = 1u << 0, HOT_ENV_DEVICE = 1u << 1, HOT_ENV_ARCH = 1u << 2,
  HOT_ENV_CACHE_DIR = 1u << 3, HOT_ENV_NO_DISK = 1u << 4, HOT_ENV_SEED = 1u << 5,
  HOT_ENV_JIT_DEBUG = 1u << 6, HOT_ENV_DEBUG_DIR = 1u << 7
};

/* Reads and checks every variable above (except those in `skip`) into *out. RT_OK, or RT_ERR_INVALID with a one-line
 * message naming the first bad variable and its value ("HOT_CACHE_MAX_MB='abc': expected an
 * integer in [1, 1099511627776] (MiB)"). */
rt_status env_read(hot_env *out, unsigned skip, char *err, size_t errlen);

/* A copy of src whose strings live in one malloc'd *block (the caller frees it; *block is set
 * even on failure, then NULL). RT_OK or RT_ERR_NOMEM. */
rt_status env_dup(hot_env *dst, const hot_env *src, char **block);

/* The boolean parser behind env_read (exposed for the tools and tests); integers go through
 * base/num.h's num_parse_u64. `name` is used in the message only. 0, or -1 with the message in
 * err. */
int env_parse_bool(const char *name, const char *s, int *out, char *err, size_t errlen);

/* The CPU backend's variables, the one parser of them (env_read's, and the tools'): *threads =
 * HOT_CPU_THREADS (1 .. 256; 0 when unset), *isa = the level HOT_CPU_ISA names (-1 when unset).
 * RT_OK, or RT_ERR_INVALID with a message naming the variable and its value. The fast path never
 * reads the environment: these values reach it through fast_config_init. */
rt_status env_read_cpu(int *threads, int *isa, char *err, size_t errlen);

/* The value of a variable, NULL when unset or empty. */
const char *env_get(const char *name);

#endif

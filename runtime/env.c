/* env.c — strict parsing of the HOT_* environment (see env.h). */
#define _POSIX_C_SOURCE 200809L
#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cuda_api.h"
#include "diag.h"
#include "fast.h"
#include "num.h"

const char *env_get(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

int env_parse_bool(const char *name, const char *s, int *out, char *err, size_t errlen) {
  static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; s && i < 4; ++i) {
    if (!strcasecmp(s, yes[i])) return *out = 1, 0;
    if (!strcasecmp(s, no[i])) return *out = 0, 0;
  }
  return diag_errf(err, errlen, "%s='%s': expected 0 or 1 (or true/false, yes/no, on/off)", name,
                  s ? s : "");
}

/* A path variable: `mode` 1 = must be a directory when it exists, 2 = must exist and be a
 * directory. */
static int check_path(const char *name, const char *v, int mode, char *err, size_t errlen) {
  if (mode == 2 && strlen(v) > HOT_CUDA_PATH_MAX) /* HOT_CUDA_HOME: built into longer paths */
    return diag_errf(err, errlen, "%s: longer than %d bytes", name, HOT_CUDA_PATH_MAX);
  struct stat sb;
  int exists = stat(v, &sb) == 0;
  int e = errno;
  if (!exists && mode == 2) return diag_errf(err, errlen, "%s='%s': %s", name, v, strerror(e));
  if (exists && !S_ISDIR(sb.st_mode))
    return diag_errf(err, errlen, "%s='%s': not a directory", name, v);
  return 0;
}

/* The backend, device, cache and debug variables (the ones `skip` can leave out). */
static rt_status env_read_selection(hot_env *o, unsigned skip, char *err, size_t errlen) {
  const char *v;
  uint64_t u;
  if (!(skip & HOT_ENV_BACKEND) && (v = env_get("HOT_BACKEND"))) {
    if (strcmp(v, "auto") && strcmp(v, "cuda") && strcmp(v, "cpu")) {
      diag_errf(err, errlen, "HOT_BACKEND='%s': expected auto, cuda or cpu", v);
      return RT_ERR_INVALID;
    }
    o->backend = v;
  }
  if (!(skip & HOT_ENV_DEVICE) && (v = env_get("HOT_DEVICE"))) {
    if (num_parse_u64("HOT_DEVICE", v, 0, 1024, &u, err, errlen)) return RT_ERR_INVALID;
    o->device_set = 1;
    o->device = (int)u;
  }
  if (!(skip & HOT_ENV_ARCH)) o->arch = env_get("HOT_ARCH");
  if (!(skip & HOT_ENV_CACHE_DIR) && (v = env_get("HOT_CACHE_DIR"))) {
    if (check_path("HOT_CACHE_DIR", v, 1, err, errlen)) return RT_ERR_INVALID;
    o->cache_dir = v;
  }
  if (!(skip & HOT_ENV_NO_DISK) && (v = env_get("HOT_NO_DISK_CACHE"))) {
    if (env_parse_bool("HOT_NO_DISK_CACHE", v, &o->no_disk, err, errlen)) return RT_ERR_INVALID;
    o->no_disk_set = 1;
  }
  if ((v = env_get("HOT_CACHE_MAX_MB"))) {
    if (num_parse_u64("HOT_CACHE_MAX_MB", v, 1, 1ull << 40, &u, err, errlen))
      return RT_ERR_INVALID;
    o->cache_max_bytes = u << 20;
  }
  if (!(skip & HOT_ENV_SEED) && (v = env_get("HOT_SEED"))) {
    if (num_parse_u64("HOT_SEED", v, 0, UINT64_MAX, &o->seed, err, errlen)) return RT_ERR_INVALID;
    o->seed_set = 1;
  }
  if (!(skip & HOT_ENV_JIT_DEBUG) && (v = env_get("HOT_JIT_DEBUG"))) {
    if (env_parse_bool("HOT_JIT_DEBUG", v, &o->jit_debug, err, errlen)) return RT_ERR_INVALID;
    o->jit_debug_set = 1;
  }
  if (!(skip & HOT_ENV_DEBUG_DIR) && (v = env_get("HOT_JIT_DEBUG_DIR"))) {
    if (check_path("HOT_JIT_DEBUG_DIR", v, 1, err, errlen)) return RT_ERR_INVALID;
    o->debug_dir = v;
  }
  return RT_OK;
}

/* The CUDA toolkit, JIT, kernel pack and tuning variables. */
static rt_status env_read_toolchain(hot_env *o, char *err, size_t errlen) {
  const char *v;
  uint64_t u;
  o->cuda_driver = env_get("HOT_CUDA_DRIVER"); /* a missing library: the loader's message */
  if (o->cuda_driver && strlen(o->cuda_driver) > HOT_CUDA_PATH_MAX) {
    diag_errf(err, errlen, "HOT_CUDA_DRIVER: longer than %d bytes", HOT_CUDA_PATH_MAX);
    return RT_ERR_INVALID;
  }
  if ((v = env_get("HOT_CUDA_HOME"))) {
    if (check_path("HOT_CUDA_HOME", v, 2, err, errlen)) return RT_ERR_INVALID;
    o->cuda_home = v;
  }
  if ((v = env_get("HOT_JIT_THREADS"))) {
    if (num_parse_u64("HOT_JIT_THREADS", v, 1, 64, &u, err, errlen)) return RT_ERR_INVALID;
    o->jit_threads = (int)u;
  }
  o->kernel_pack = env_get("HOT_KERNEL_PACK"); /* the loader names a missing or bad file */
  if ((v = env_get("HOT_TUNE"))) {
    if (env_parse_bool("HOT_TUNE", v, &o->tune, err, errlen)) return RT_ERR_INVALID;
    o->tune_set = 1;
  }
  if ((v = env_get("HOT_TUNE_DB"))) {
    /* SQLite opens paths of at most 512 bytes (its default mxPathname) */
    if (!*v || strlen(v) > 512) {
      if (*v)
        diag_errf(err, errlen, "HOT_TUNE_DB: the path is %zu bytes long; SQLite opens paths of at "
                 "most 512 bytes", strlen(v));
      else
        diag_errf(err, errlen, "HOT_TUNE_DB: expected a file path (got an empty value)");
      return RT_ERR_INVALID;
    }
    o->tune_db = v;
  }
  return RT_OK;
}

rt_status env_read_cpu(int *threads, int *isa, char *err, size_t errlen) {
  const char *v;
  uint64_t u = 0;
  *threads = 0, *isa = -1;
  if ((v = env_get("HOT_CPU_THREADS"))) {
    if (num_parse_u64("HOT_CPU_THREADS", v, 1, FAST_MAX_THREADS, &u, err, errlen))
      return RT_ERR_INVALID;
    *threads = (int)u;
  }
  if ((v = env_get("HOT_CPU_ISA")) && (*isa = fast_level_by_name(v)) < 0) {
    char names[256] = ""; /* the levels' names from fast_level.c: a new level is listed by itself */
    for (int l = 0; l < FAST_LEVELS; ++l)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", l ? ", " : "",
               fast_level_name(l));
    diag_errf(err, errlen, "HOT_CPU_ISA='%s': expected one of %s", v, names);
    return RT_ERR_INVALID;
  }
  return RT_OK;
}

rt_status env_read(hot_env *o, unsigned skip, char *err, size_t errlen) {
  memset(o, 0, sizeof *o);
  rt_status st = env_read_selection(o, skip, err, errlen);
  if (st == RT_OK) st = env_read_toolchain(o, err, errlen);
  if (st == RT_OK) st = env_read_cpu(&o->cpu_threads, &o->cpu_isa, err, errlen);
  if (st != RT_OK) return st;
  o->xdg_cache_home = env_get("XDG_CACHE_HOME");
  o->home = env_get("HOME");
  return RT_OK;
}

/* Copies one string member into the block at *p. */
static const char *put(char **p, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  memcpy(*p, s, n);
  const char *r = *p;
  *p += n;
  return r;
}

rt_status env_dup(hot_env *dst, const hot_env *src, char **block) {
  const char *const f[] = {src->backend, src->arch, src->cache_dir, src->debug_dir,
                           src->cuda_driver, src->cuda_home, src->xdg_cache_home, src->home,
                           src->kernel_pack, src->tune_db};
  size_t n = 1;
  for (size_t i = 0; i < sizeof f / sizeof *f; ++i) n += f[i] ? strlen(f[i]) + 1 : 0;
  char *b = malloc(n), *p = b;
  *block = b;
  if (!b) return RT_ERR_NOMEM;
  *dst = *src;
  dst->backend = put(&p, src->backend);
  dst->arch = put(&p, src->arch);
  dst->cache_dir = put(&p, src->cache_dir);
  dst->debug_dir = put(&p, src->debug_dir);
  dst->cuda_driver = put(&p, src->cuda_driver);
  dst->cuda_home = put(&p, src->cuda_home);
  dst->xdg_cache_home = put(&p, src->xdg_cache_home);
  dst->home = put(&p, src->home);
  dst->kernel_pack = put(&p, src->kernel_pack);
  dst->tune_db = put(&p, src->tune_db);
  return RT_OK;
}

/* cache.c — memory + disk kernel cache (see cache.h for the contract and the file format). */
#define _GNU_SOURCE
#include "cache.h"
#include "diag.h"
#include "fileio.h"
#include "le.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_file.h"
#include "env.h"
#include "hash.h"

#ifndef HOT_VERSION
#define HOT_VERSION "0"
#endif

#define STALE_TMP_SECONDS 3600       /* temp files older than this are debris of a crash */

typedef struct {
  hot_kernel_binary pub;   /* what callers see; points into res */
  hot_compile_result res;  /* owns the bytes */
  unsigned char h[HASH_SHA256_BYTES];
} entry;

struct hot_kcache {
  pthread_mutex_t mu;      /* guards v/n/cap, st, the version fields */
  entry **v;
  size_t n, cap;
  hot_kcache_stats st;
  char *dir;               /* NULL: memory only */
  int read_only;           /* the directory is read, never written (config, or not writable) */
  char *debug_dir;         /* HOT_JIT_DEBUG: where sources and logs go; NULL: off */
  uint64_t max_bytes;
  const hot_compiler *cc;
  char genver[64];
  int ver_state;           /* 0: not asked yet, 1: known (ver), -1: compiler unavailable */
  char ver[32];
  hot_pack **packs;        /* kernel packs, searched before the disk (owned; under mu) */
  size_t n_packs;
};


const char *kcache_origin_name(hot_kcache_origin o) {
  switch (o) {
  case HOT_KCACHE_COMPILED: return "compiled";
  case HOT_KCACHE_MEMORY: return "memory";
  case HOT_KCACHE_DISK: return "disk";
  case HOT_KCACHE_PACK: return "pack";
  }
  return "?";
}

/* ---- open / close ------------------------------------------------------------------------- */

/* mkdir -p with mode 0700 for the folders it creates. 0 or -1 (errno set). */
static int make_dirs(const char *path) {
  char buf[4096];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, path, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
    buf[i] = c;
  }
  struct stat sb;
  if (stat(path, &sb) != 0) return -1;
  if (!S_ISDIR(sb.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

int kcache_default_dir(const hot_env *ev, char *path, size_t n, const char **what) {
  if (ev->cache_dir) {
    *what = "HOT_CACHE_DIR";
    return snprintf(path, n, "%s", ev->cache_dir);
  }
  if (ev->xdg_cache_home && ev->xdg_cache_home[0] == '/') {
    *what = "XDG_CACHE_HOME";
    return snprintf(path, n, "%s/hot", ev->xdg_cache_home);
  }
  if (ev->home) {
    *what = "HOME";
    return snprintf(path, n, "%s/.cache/hot", ev->home);
  }
  *what = "nothing (HOME unset)";
  return -1;
}

/* The disk directory of a new cache (cfg.dir, else the environment's): found, created, checked,
 * into kc->dir and kc->read_only. RT_OK, RT_ERR_IO or RT_ERR_NOMEM with the message. */
static rt_status open_dir(hot_kcache *kc, const hot_kcache_config *cfg, const hot_env *ev,
                          char *err, size_t errlen) {
  char path[4096];
  const char *what; /* where the directory came from, for messages */
  int n;
  if (cfg->dir && *cfg->dir) {
    n = snprintf(path, sizeof path, "%s", cfg->dir);
    what = cfg->dir_origin ? cfg->dir_origin : "the configured directory";
  } else if ((n = kcache_default_dir(ev, path, sizeof path, &what)) < 0) {
    fileio_msgf(err, errlen, "kernel cache: no directory (HOME unset): set HOT_CACHE_DIR or HOT_NO_DISK_CACHE=1");
    return RT_ERR_IO;
  }
  if (n < 0 || (size_t)n >= sizeof path - 160) {  /* room for entry names */
    fileio_msgf(err, errlen, "kernel cache: directory path from %s too long", what);
    return RT_ERR_IO;
  }
  if (make_dirs(path) != 0 || access(path, R_OK | X_OK) != 0) {
    int e = errno;
    fileio_msgf(err, errlen, "kernel cache: cannot use directory %s from %s (%s): set "
        "HOT_CACHE_DIR to a usable directory, or HOT_NO_DISK_CACHE=1", path, what, strerror(e));
    return RT_ERR_IO;
  }
  /* A directory that can be read but not written serves its entries (hot-gen --compile and
   * contexts on a shared, read-only cache); misses are compiled into memory only. */
  kc->read_only = cfg->read_only > 0 || access(path, W_OK) != 0;
  kc->dir = strdup(path);
  if (!kc->dir) {
    fileio_msgf(err, errlen, "kernel cache: out of memory");
    return RT_ERR_NOMEM;
  }
  return RT_OK;
}

/* Where HOT_JIT_DEBUG dumps go, into kc->debug_dir: cfg.debug_dir, else $HOT_JIT_DEBUG_DIR, else
 * beside the entries (unless they are memory-only or read-only: ./hot-debug). RT_OK or
 * RT_ERR_NOMEM with the message. */
static rt_status open_debug(hot_kcache *kc, const hot_kcache_config *cfg, const hot_env *ev,
                            char *err, size_t errlen) {
  const char *dd = cfg->debug_dir ? cfg->debug_dir : ev->debug_dir;
  char buf[4096];
  if (!dd) {
    if (kc->dir && !kc->read_only) snprintf(buf, sizeof buf, "%s/debug", kc->dir);
    else snprintf(buf, sizeof buf, "hot-debug");
    dd = buf;
  }
  if (!(kc->debug_dir = strdup(dd))) {
    fileio_msgf(err, errlen, "kernel cache: out of memory");
    return RT_ERR_NOMEM;
  }
  return RT_OK;
}

rt_status kcache_open(hot_kcache **out, const hot_kcache_config *config, char *err,
                          size_t errlen) {
  if (!out) {
    fileio_msgf(err, errlen, "kernel cache: NULL output handle");
    return RT_ERR_INVALID;
  }
  *out = NULL;
  hot_kcache_config cfg = {0};
  if (config) cfg = *config;
  hot_env own;
  const hot_env *ev = cfg.env;
  if (!ev) { /* a tool that left settings to the environment: the same strict parse */
    rt_status es = env_read(&own, (cfg.dir ? HOT_ENV_CACHE_DIR : 0u) | (cfg.disk ? HOT_ENV_NO_DISK : 0u) |
                            (cfg.jit_debug ? HOT_ENV_JIT_DEBUG : 0u) |
                            (cfg.debug_dir ? HOT_ENV_DEBUG_DIR : 0u) | HOT_ENV_BACKEND |
                            HOT_ENV_DEVICE | HOT_ENV_ARCH | HOT_ENV_SEED,
                            err, errlen);
    if (es != RT_OK) return es;
    ev = &own;
  }
  hot_kcache *kc = calloc(1, sizeof *kc);
  if (!kc) {
    fileio_msgf(err, errlen, "kernel cache: out of memory");
    return RT_ERR_NOMEM;
  }
  pthread_mutex_init(&kc->mu, NULL);
  kc->cc = cfg.compiler ? cfg.compiler : nvrtc_compiler();
  snprintf(kc->genver, sizeof kc->genver, "%s",
           cfg.generator_version ? cfg.generator_version : HOT_VERSION);
  kc->max_bytes = cfg.max_bytes ? cfg.max_bytes
                  : ev->cache_max_bytes ? ev->cache_max_bytes : HOT_KCACHE_DEFAULT_MAX_BYTES;
  int disk = cfg.disk > 0 || (cfg.disk == 0 && !(ev->no_disk_set && ev->no_disk));
  rt_status st = disk ? open_dir(kc, &cfg, ev, err, errlen) : RT_OK;
  int debug = cfg.jit_debug > 0 || (cfg.jit_debug == 0 && ev->jit_debug_set && ev->jit_debug);
  if (st == RT_OK && debug) st = open_debug(kc, &cfg, ev, err, errlen);
  if (st != RT_OK) {
    kcache_close(kc);
    return st;
  }
  *out = kc;
  return RT_OK;
}

static void entry_free(entry *e) {
  if (!e) return;
  nvrtc_result_free(&e->res);
  free(e);
}

void kcache_close(hot_kcache *kc) {
  if (!kc) return;
  for (size_t i = 0; i < kc->n; i++) entry_free(kc->v[i]);
  free(kc->v);
  for (size_t i = 0; i < kc->n_packs; i++) pack_free(kc->packs[i]);
  free(kc->packs);
  free(kc->dir);
  free(kc->debug_dir);
  pthread_mutex_destroy(&kc->mu);
  free(kc);
}

void kcache_stats_get(hot_kcache *kc, hot_kcache_stats *out) {
  if (!kc || !out) return;
  pthread_mutex_lock(&kc->mu);
  *out = kc->st;
  pthread_mutex_unlock(&kc->mu);
}

rt_status kcache_add_pack(hot_kcache *kc, hot_pack *pack, char *err, size_t errlen) {
  if (!kc || !pack) {
    pack_free(pack);
    fileio_msgf(err, errlen, "kernel cache: NULL %s", kc ? "pack" : "cache");
    return RT_ERR_INVALID;
  }
  pthread_mutex_lock(&kc->mu);
  hot_pack **v = realloc(kc->packs, (kc->n_packs + 1) * sizeof *v);
  if (v) {
    kc->packs = v;
    kc->packs[kc->n_packs++] = pack;
  }
  pthread_mutex_unlock(&kc->mu);
  if (!v) {
    pack_free(pack);
    fileio_msgf(err, errlen, "kernel cache: out of memory");
    return RT_ERR_NOMEM;
  }
  return RT_OK;
}

/* The packs' entry for (h, ver or any when !known, src's names): CF_OK (*out a new entry, ver
 * set to its compiler), CF_MISSING or CF_NOMEM. Packs are only added, never removed, while kc
 * lives, so the ones seen under the lock stay valid after it. */
static int pack_find(hot_kcache *kc, const unsigned char h[HASH_SHA256_BYTES], int known,
                     char ver[32], const hot_kernel_source *src, entry **out) {
  pthread_mutex_lock(&kc->mu);
  size_t np = kc->n_packs;
  pthread_mutex_unlock(&kc->mu);
  if (!np) return CF_MISSING;
  char hex[65];
  hash_hex(h, hex);
  for (size_t i = 0; i < np; i++) {
    pthread_mutex_lock(&kc->mu);
    hot_pack *p = kc->packs[i]; /* re-read: the array may have moved */
    pthread_mutex_unlock(&kc->mu);
    entry *e = calloc(1, sizeof *e);
    if (!e) return CF_NOMEM;
    char got[32];
    int r = pack_lookup(p, hex, known ? ver : NULL, src->kernels, src->n_kernels, &e->res, got);
    if (r == 1) {
      memcpy(e->h, h, HASH_SHA256_BYTES);
      memcpy(ver, got, 32);
      *out = e;
      return CF_OK;
    }
    free(e);
    if (r < 0) return CF_NOMEM;
  }
  return CF_MISSING;
}

const char *kcache_dir(const hot_kcache *kc) { return kc ? kc->dir : NULL; }

int kcache_read_only(const hot_kcache *kc) { return kc && kc->read_only; }

const char *kcache_debug_dir(const hot_kcache *kc) { return kc ? kc->debug_dir : NULL; }

/* ---- keys --------------------------------------------------------------------------------- */

static void key_of(const hot_kcache *kc, const hot_kernel_source *src,
                   unsigned char h[HASH_SHA256_BYTES]) {
  cache_file_key(kc->genver, kc->cc->fixed_options, src, h);
}

/* The compiler version, asked once. 1 known (copied to ver), 0 unavailable. */
static int compiler_version(hot_kcache *kc, char ver[32]) {
  pthread_mutex_lock(&kc->mu);
  if (kc->ver_state == 0) {
    char buf[64] = "", e[256];
    if (kc->cc->version && kc->cc->version(kc->cc->user, buf, sizeof buf, e, sizeof e) == RT_OK) {
      size_t j = 0;
      for (size_t i = 0; buf[i] && j < sizeof kc->ver - 1; i++) {
        char c = buf[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        kc->ver[j++] = ok ? c : '_';
      }
      kc->ver[j] = '\0';
      if (!j) snprintf(kc->ver, sizeof kc->ver, "unknown");
      kc->ver_state = 1;
    } else {
      kc->ver_state = -1;
    }
  }
  int known = kc->ver_state == 1;
  if (known) memcpy(ver, kc->ver, sizeof kc->ver);
  else ver[0] = '\0';
  pthread_mutex_unlock(&kc->mu);
  return known;
}

/* ---- memory table (callers hold kc->mu) -------------------------------------------------- */

static entry *mem_find(hot_kcache *kc, const unsigned char h[HASH_SHA256_BYTES], const char *ver) {
  for (size_t i = 0; i < kc->n; i++) {
    entry *e = kc->v[i];
    if (memcmp(e->h, h, HASH_SHA256_BYTES) == 0 && (!ver[0] || strcmp(e->pub.compiler, ver) == 0))
      return e;
  }
  return NULL;
}

/* Adds e, or returns the entry another thread added meanwhile (then e is freed). NULL: no memory. */
static entry *mem_insert(hot_kcache *kc, entry *e) {
  entry *old = mem_find(kc, e->h, e->pub.compiler);
  if (old) {
    entry_free(e);
    return old;
  }
  if (kc->n == kc->cap) {
    size_t cap = kc->cap ? 2 * kc->cap : 16;
    entry **v = realloc(kc->v, cap * sizeof *v);
    if (!v) return NULL;
    kc->v = v;
    kc->cap = cap;
  }
  kc->v[kc->n++] = e;
  return e;
}

/* Points pub at res and fills the identity fields. */
static void entry_publish(entry *e, const hot_kernel_source *src, const char *ver,
                          hot_kcache_origin origin) {
  char hex[65];
  e->pub.cubin = e->res.cubin;
  e->pub.cubin_size = e->res.cubin_size;
  e->pub.log = e->res.log;
  e->pub.log_size = e->res.log_size;
  e->pub.kernels = e->res.kernels;
  e->pub.n_kernels = e->res.n_kernels;
  e->pub.compile_ms = e->res.compile_ms;
  e->pub.phases_known = origin == HOT_KCACHE_COMPILED && e->res.phases_known;
  e->pub.front_ms = e->res.front_ms;
  e->pub.nvvm_ms = e->res.nvvm_ms;
  e->pub.ptxas_ms = e->res.ptxas_ms;
  e->pub.origin = origin;
  snprintf(e->pub.arch, sizeof e->pub.arch, "%s", src->arch);
  snprintf(e->pub.compiler, sizeof e->pub.compiler, "%s", ver);
  snprintf(e->pub.key, sizeof e->pub.key, "%s", hash_hex(e->h, hex));
}

/* ---- entry files -------------------------------------------------------------------------- */

static void entry_path(const hot_kcache *kc, const unsigned char h[HASH_SHA256_BYTES],
                       const char *ver, char *buf, size_t n) {
  char hex[65];
  snprintf(buf, n, "%s/%s-%s.hotk", kc->dir, hash_hex(h, hex), ver);
}

/* Writes e as the entry at `path` (cache_file.h). 0 or -1. */
static int write_entry(const hot_kcache *kc, const hot_kernel_source *src, const entry *e,
                       const char *path) {
  cache_file_id id = {kc->genver, kc->cc->fixed_options, e->pub.compiler, e->pub.key};
  return cache_file_write(kc->dir, path, &id, e->h, src, &e->res);
}

/* Loads and verifies the entry at path: CF_OK (*out a new entry), CF_MISSING, CF_REJECT,
 * CF_NOMEM. */
static int read_entry(const char *path, const unsigned char h[HASH_SHA256_BYTES], const char *ver,
                      const hot_kernel_source *src, entry **out) {
  entry *e = calloc(1, sizeof *e);
  if (!e) return CF_NOMEM;
  int rc = cache_file_read(path, h, ver, src, &e->res);
  if (rc != CF_OK) {
    free(e);
    return rc;
  }
  memcpy(e->h, h, HASH_SHA256_BYTES);
  *out = e;
  return CF_OK;
}

/* Without a compiler version: the first valid entry named <hex>-*.hotk. Same codes. */
static int read_any_version(const hot_kcache *kc, const unsigned char h[HASH_SHA256_BYTES],
                            const hot_kernel_source *src, entry **out, char ver[32],
                            char *path, size_t pathlen) {
  char hex[65];
  hash_hex(h, hex);
  DIR *d = opendir(kc->dir);
  if (!d) return CF_MISSING;
  int rc = CF_MISSING;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    size_t l = strlen(nm);
    if (l <= 65 + 5 || strncmp(nm, hex, 64) != 0 || nm[64] != '-' || strcmp(nm + l - 5, ".hotk"))
      continue;
    size_t vl = l - 65 - 5;
    if (vl >= 32) continue;
    char v[32];
    memcpy(v, nm + 65, vl);
    v[vl] = '\0';
    snprintf(path, pathlen, "%s/%s", kc->dir, nm);
    int r = read_entry(path, h, v, src, out);
    if (r == CF_OK || r == CF_NOMEM) {
      if (r == CF_OK) memcpy(ver, v, sizeof v);
      rc = r;
      break;
    }
    if (r == CF_REJECT) rc = CF_REJECT;
  }
  closedir(d);
  return rc;
}

typedef struct {
  char name[300];
  off_t size;
  struct timespec mtime;
} file_info;

static int older_first(const void *a, const void *b) {
  const file_info *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Removes least recently used entries until the directory holds at most max_bytes, never
 * `keep` (the entry just written); also removes temp files left by crashed writers. Returns the
 * number of entries removed. Races with other processes are harmless (ENOENT is ignored). */
static uint64_t evict(const hot_kcache *kc, const char *keep) {
  DIR *d = opendir(kc->dir);
  if (!d) return 0;
  file_info *v = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0, removed = 0;
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    size_t l = strlen(nm);
    struct stat sb;
    if (l >= sizeof v->name || fstatat(dirfd(d), nm, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(sb.st_mode))
      continue;
    if (strncmp(nm, ".tmp-", 5) == 0) {
      if (now - sb.st_mtime > STALE_TMP_SECONDS) unlinkat(dirfd(d), nm, 0);
      continue;
    }
    if (l < 6 || strcmp(nm + l - 5, ".hotk") != 0) continue;
    total += (uint64_t)sb.st_size;
    if (keep && strcmp(nm, keep) == 0) continue;
    if (n == cap) {
      size_t c2 = cap ? 2 * cap : 64;
      file_info *v2 = realloc(v, c2 * sizeof *v2);
      if (!v2) break;
      v = v2;
      cap = c2;
    }
    memcpy(v[n].name, nm, l + 1);
    v[n].size = sb.st_size;
    v[n].mtime = sb.st_mtim;
    n++;
  }
  if (total > kc->max_bytes && n) {
    qsort(v, n, sizeof *v, older_first);
    for (size_t i = 0; i < n && total > kc->max_bytes; i++) {
      if (unlinkat(dirfd(d), v[i].name, 0) == 0) removed++;
      total -= (uint64_t)v[i].size;  /* gone either way (ENOENT: another process took it) */
    }
  }
  closedir(d);
  free(v);
  return removed;
}

/* ---- get ---------------------------------------------------------------------------------- */

rt_status kcache_entry_path(hot_kcache *kc, const hot_kernel_source *src, char *buf,
                                size_t n, char *err, size_t errlen) {
  if (!kc || !buf || !n) {
    fileio_msgf(err, errlen, "kernel cache: NULL argument");
    return RT_ERR_INVALID;
  }
  rt_status st = nvrtc_check_source(src, err, errlen);
  if (st != RT_OK) return st;
  if (!kc->dir) {
    fileio_msgf(err, errlen, "kernel cache: memory only, no entry files");
    return RT_ERR_INVALID;
  }
  char ver[32];
  if (!compiler_version(kc, ver)) {
    fileio_msgf(err, errlen, "kernel cache: the compiler's version is unknown (no NVRTC?)");
    return RT_ERR_NO_NVRTC;
  }
  unsigned char h[HASH_SHA256_BYTES];
  key_of(kc, src, h);
  entry_path(kc, h, ver, buf, n);
  return RT_OK;
}

/* Inserts e into memory and returns what the caller gets; NULL (e freed) when out of memory. */
static entry *adopt(hot_kcache *kc, entry *e) {
  pthread_mutex_lock(&kc->mu);
  entry *got = mem_insert(kc, e);
  pthread_mutex_unlock(&kc->mu);
  if (!got) entry_free(e);
  return got;
}

static rt_status out_of_memory(char *err, size_t errlen) {
  fileio_msgf(err, errlen, "kernel cache: out of memory");
  return RT_ERR_NOMEM;
}

/* Hands e to the caller: inserted into memory (adopt), `counter` (a field of kc->st, NULL for
 * none) counted, *out and *origin set. RT_OK, or RT_ERR_NOMEM (e freed). */
static rt_status deliver(hot_kcache *kc, entry *e, uint64_t *counter, hot_kcache_origin how,
                         const hot_kernel_binary **out, hot_kcache_origin *origin, char *err,
                         size_t errlen) {
  entry *got = adopt(kc, e);
  if (!got) return out_of_memory(err, errlen);
  if (counter) {
    pthread_mutex_lock(&kc->mu);
    (*counter)++;
    pthread_mutex_unlock(&kc->mu);
  }
  *out = &got->pub;
  if (origin) *origin = how;
  return RT_OK;
}

/* The disk entry of key h: under compiler version ver when known, else of any version (ver
 * then receives the entry's). Its file into path. A CF_* code; a rejected entry is counted. */
static int disk_find(hot_kcache *kc, const unsigned char h[HASH_SHA256_BYTES], int known,
                     char ver[32], const hot_kernel_source *src, entry **e, char *path,
                     size_t pathlen) {
  int rc;
  if (known) {
    entry_path(kc, h, ver, path, pathlen);
    rc = read_entry(path, h, ver, src, e);
  } else {
    rc = read_any_version(kc, h, src, e, ver, path, pathlen);
  }
  if (rc == CF_REJECT) {
    pthread_mutex_lock(&kc->mu);
    kc->st.disk_rejects++;
    pthread_mutex_unlock(&kc->mu);
  }
  return rc;
}

/* A miss: compiles src into a new entry *out of key h (counted as a compile or a failure). On
 * an error *out is NULL and, when log is not NULL, *log a copy of the compiler log. */
static rt_status compile_entry(hot_kcache *kc, const hot_kernel_source *src,
                               const unsigned char h[HASH_SHA256_BYTES], entry **out, char **log,
                               char *err, size_t errlen) {
  *out = NULL;
  entry *e = calloc(1, sizeof *e);
  if (!e) return out_of_memory(err, errlen);
  memcpy(e->h, h, HASH_SHA256_BYTES);
  rt_status st = kc->cc->compile(kc->cc->user, src, &e->res, err, errlen);
  if (st == RT_OK && (!e->res.cubin || !e->res.cubin_size || e->res.n_kernels != src->n_kernels ||
                      !e->res.kernels)) {
    fileio_msgf(err, errlen, "compile '%s' for %s: the compiler returned an incomplete result",
        src->program ? src->program : "hot.cu", src->arch);
    st = RT_ERR_COMPILE;
  }
  for (size_t i = 0; st == RT_OK && i < e->res.n_kernels; i++)  /* names are optional too */
    if (!e->res.kernels[i].name && !(e->res.kernels[i].name = strdup(src->kernels[i])))
      st = RT_ERR_NOMEM;
  if (st == RT_OK && !e->res.log) {  /* a log is optional for injected compilers */
    e->res.log = calloc(1, 1);
    if (!e->res.log) st = RT_ERR_NOMEM;
  }
  if (st == RT_ERR_NOMEM) fileio_msgf(err, errlen, "kernel cache: out of memory");
  if (st != RT_OK) {
    if (log && e->res.log) *log = strdup(e->res.log);
    pthread_mutex_lock(&kc->mu);
    kc->st.compile_failures++;
    pthread_mutex_unlock(&kc->mu);
    entry_free(e);
    return st;
  }
  e->res.compile_ms = hot_ms_on_grid(e->res.compile_ms); /* as the disk entry and packs keep it */
  pthread_mutex_lock(&kc->mu);
  kc->st.compiles++;
  kc->st.compile_ms += e->res.compile_ms;
  pthread_mutex_unlock(&kc->mu);
  *out = e;
  return RT_OK;
}

/* Writes a compiled entry to the disk (a writable cache only), then evicts; counted. */
static void store_entry(hot_kcache *kc, const hot_kernel_source *src,
                        const unsigned char h[HASH_SHA256_BYTES], const char *ver, entry *e) {
  if (!kc->dir || kc->read_only) return;
  char path[4096] = "";
  entry_path(kc, h, ver, path, sizeof path);
  int wrote = write_entry(kc, src, e, path) == 0;
  uint64_t ev = wrote ? evict(kc, strrchr(path, '/') + 1) : 0;
  pthread_mutex_lock(&kc->mu);
  if (wrote) kc->st.disk_writes++;
  else kc->st.disk_write_errors++;
  kc->st.evictions += ev;
  pthread_mutex_unlock(&kc->mu);
}

rt_status kcache_get(hot_kcache *kc, const hot_kernel_source *src,
                         const hot_kernel_binary **out, hot_kcache_origin *origin, char **log,
                         char *err, size_t errlen) {
  if (out) *out = NULL;
  if (log) *log = NULL;
  if (!kc || !out) {
    fileio_msgf(err, errlen, "kernel cache: NULL %s", kc ? "output" : "cache");
    return RT_ERR_INVALID;
  }
  rt_status st = nvrtc_check_source(src, err, errlen);
  if (st != RT_OK) return st;
  unsigned char h[HASH_SHA256_BYTES];
  key_of(kc, src, h);
  char ver[32];
  int known = compiler_version(kc, ver);

  pthread_mutex_lock(&kc->mu);
  entry *e = mem_find(kc, h, ver);
  if (e) kc->st.memory_hits++;
  pthread_mutex_unlock(&kc->mu);
  if (e) {
    if (kc->dir && !kc->read_only) { /* LRU: a memory hit is a use of the disk entry too */
      char path[4096];
      entry_path(kc, h, e->pub.compiler, path, sizeof path);
      /* none there (a pack's entry, a failed write): nothing; a link's target is never touched */
      utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
    }
    *out = &e->pub;
    if (origin) *origin = HOT_KCACHE_MEMORY;
    return RT_OK;
  }

  int prc = pack_find(kc, h, known, ver, src, &e);
  if (prc == CF_NOMEM) return out_of_memory(err, errlen);
  if (prc == CF_OK) {
    entry_publish(e, src, ver, HOT_KCACHE_PACK);
    return deliver(kc, e, &kc->st.pack_hits, HOT_KCACHE_PACK, out, origin, err, errlen);
  }
  if (!known) ver[0] = '\0';

  if (kc->dir) {
    char path[4096] = "";
    int rc = disk_find(kc, h, known, ver, src, &e, path, sizeof path);
    if (rc == CF_NOMEM) return out_of_memory(err, errlen);
    if (rc == CF_OK) {
      entry_publish(e, src, ver, HOT_KCACHE_DISK);
      if (!kc->read_only) utimensat(AT_FDCWD, path, NULL, 0); /* LRU: a hit is the newest */
      return deliver(kc, e, &kc->st.disk_hits, HOT_KCACHE_DISK, out, origin, err, errlen);
    }
  }

  /* A miss: compile. */
  st = compile_entry(kc, src, h, &e, log, err, errlen);
  if (st != RT_OK) return st;
  if (!known) snprintf(ver, sizeof ver, "unknown");  /* compiler worked, version did not */
  entry_publish(e, src, ver, HOT_KCACHE_COMPILED);
  store_entry(kc, src, h, ver, e);
  return deliver(kc, e, NULL, HOT_KCACHE_COMPILED, out, origin, err, errlen);
}

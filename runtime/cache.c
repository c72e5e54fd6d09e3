/* cache.c — memory + disk kernel cache (see cache.h for the contract and the file format). */
#define _GNU_SOURCE
#include "cache.h"
#include "diag.h"

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

#include "hash.h"

#ifndef HOT_VERSION
#define HOT_VERSION "0"
#endif

#define HEADER_BYTES 104
#define MAX_ENTRY_BYTES (1ull << 30) /* larger files are not ours: a reject */
#define STALE_TMP_SECONDS 3600       /* temp files older than this are debris of a crash */
static const char MAGIC[8] = {'H', 'O', 'T', 'K', 'C', 'A', 'C', 'H'};

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
  uint64_t max_bytes;
  const hot_compiler *cc;
  char genver[64];
  int ver_state;           /* 0: not asked yet, 1: known (ver), -1: compiler unavailable */
  char ver[32];
};


const char *hot_kcache_origin_name(hot_kcache_origin o) {
  switch (o) {
  case HOT_KCACHE_COMPILED: return "compiled";
  case HOT_KCACHE_MEMORY: return "memory";
  case HOT_KCACHE_DISK: return "disk";
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

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

rt_status hot_kcache_open(hot_kcache **out, const hot_kcache_config *config, char *err,
                          size_t errlen) {
  if (!out) {
    hot_errf(err, errlen, "kernel cache: NULL output handle");
    return RT_ERR_INVALID;
  }
  *out = NULL;
  hot_kcache_config cfg = {0};
  if (config) cfg = *config;
  hot_kcache *kc = calloc(1, sizeof *kc);
  if (!kc) {
    hot_errf(err, errlen, "kernel cache: out of memory");
    return RT_ERR_NOMEM;
  }
  pthread_mutex_init(&kc->mu, NULL);
  kc->cc = cfg.compiler ? cfg.compiler : nvrtc_compiler();
  snprintf(kc->genver, sizeof kc->genver, "%s",
           cfg.generator_version ? cfg.generator_version : HOT_VERSION);
  kc->max_bytes = cfg.max_bytes;
  if (!kc->max_bytes) {
    const char *mb = getenv("HOT_CACHE_MAX_MB");
    char *end = NULL;
    unsigned long long v = mb && *mb ? strtoull(mb, &end, 10) : 0;
    kc->max_bytes = (v > 0 && end && *end == '\0') ? (uint64_t)v << 20 : HOT_KCACHE_DEFAULT_MAX_BYTES;
  }
  int disk = cfg.disk > 0 || (cfg.disk == 0 && !env_on("HOT_NO_DISK_CACHE"));
  if (disk) {
    char path[4096];
    const char *env_dir = getenv("HOT_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (cfg.dir && *cfg.dir)
      n = snprintf(path, sizeof path, "%s", cfg.dir);
    else if (env_dir && *env_dir)
      n = snprintf(path, sizeof path, "%s", env_dir);
    else if (xdg && xdg[0] == '/')
      n = snprintf(path, sizeof path, "%s/hot", xdg);
    else if (home && *home)
      n = snprintf(path, sizeof path, "%s/.cache/hot", home);
    else {
      hot_kcache_close(kc);
      hot_errf(err, errlen, "kernel cache: no directory (HOME unset): set HOT_CACHE_DIR or HOT_NO_DISK_CACHE=1");
      return RT_ERR_IO;
    }
    if (n < 0 || (size_t)n >= sizeof path - 160) {  /* room for entry names */
      hot_kcache_close(kc);
      hot_errf(err, errlen, "kernel cache: directory path too long");
      return RT_ERR_IO;
    }
    if (make_dirs(path) != 0 || access(path, W_OK | X_OK) != 0) {
      int e = errno;
      hot_kcache_close(kc);
      hot_errf(err, errlen, "kernel cache: cannot use directory %s (%s): set HOT_CACHE_DIR or "
          "HOT_NO_DISK_CACHE=1", path, strerror(e));
      return RT_ERR_IO;
    }
    kc->dir = strdup(path);
    if (!kc->dir) {
      hot_kcache_close(kc);
      hot_errf(err, errlen, "kernel cache: out of memory");
      return RT_ERR_NOMEM;
    }
  }
  *out = kc;
  return RT_OK;
}

static void entry_free(entry *e) {
  if (!e) return;
  hot_compile_result_free(&e->res);
  free(e);
}

void hot_kcache_close(hot_kcache *kc) {
  if (!kc) return;
  for (size_t i = 0; i < kc->n; i++) entry_free(kc->v[i]);
  free(kc->v);
  free(kc->dir);
  pthread_mutex_destroy(&kc->mu);
  free(kc);
}

void hot_kcache_stats_get(hot_kcache *kc, hot_kcache_stats *out) {
  if (!kc || !out) return;
  pthread_mutex_lock(&kc->mu);
  *out = kc->st;
  pthread_mutex_unlock(&kc->mu);
}

const char *hot_kcache_dir(const hot_kcache *kc) { return kc ? kc->dir : NULL; }

/* ---- keys --------------------------------------------------------------------------------- */

/* One length-prefixed field: the tag (with its NUL), a 64-bit little-endian length, the bytes. */
static void field(hash_sha256 *s, const char *tag, const void *p, size_t n) {
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)n >> (8 * i));
  hash_sha256_update(s, tag, strlen(tag) + 1);
  hash_sha256_update(s, len, sizeof len);
  hash_sha256_update(s, p, n);
}

static void str_field(hash_sha256 *s, const char *tag, const char *v) {
  field(s, tag, v ? v : "", v ? strlen(v) : 0);
}

static void key_of(const hot_kcache *kc, const hot_kernel_source *src,
                   unsigned char h[HASH_SHA256_BYTES]) {
  hash_sha256 s;
  char fmt[16];
  hash_sha256_init(&s);
  snprintf(fmt, sizeof fmt, "%d", HOT_KCACHE_FORMAT);
  str_field(&s, "hot-kcache", fmt);
  str_field(&s, "generator", kc->genver);
  str_field(&s, "compiler-options", kc->cc->fixed_options);
  str_field(&s, "arch", src->arch);
  for (size_t i = 0; i < src->n_options; i++) str_field(&s, "option", src->options[i]);
  for (size_t i = 0; i < src->n_kernels; i++) str_field(&s, "kernel", src->kernels[i]);
  str_field(&s, "program", src->program ? src->program : "hot.cu");
  str_field(&s, "source", src->source);
  hash_sha256_final(&s, h);
}

/* The digest stored in an entry's header: the key and the compiler version together. */
static void entry_key(const unsigned char h[HASH_SHA256_BYTES], const char *ver,
                      unsigned char out[HASH_SHA256_BYTES]) {
  hash_sha256 s;
  hash_sha256_init(&s);
  field(&s, "hot-kcache-entry", h, HASH_SHA256_BYTES);
  str_field(&s, "compiler", ver);
  hash_sha256_final(&s, out);
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
  e->pub.origin = origin;
  snprintf(e->pub.arch, sizeof e->pub.arch, "%s", src->arch);
  snprintf(e->pub.compiler, sizeof e->pub.compiler, "%s", ver);
  snprintf(e->pub.key, sizeof e->pub.key, "%s", hash_hex(e->h, hex));
}

/* ---- entry files -------------------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void entry_path(const hot_kcache *kc, const unsigned char h[HASH_SHA256_BYTES],
                       const char *ver, char *buf, size_t n) {
  char hex[65];
  snprintf(buf, n, "%s/%s-%s.hotk", kc->dir, hash_hex(h, hex), ver);
}

/* Writes s with newlines escaped (options and names are one line each in the record). */
static void put_line_value(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '\n') fputs("\\n", f);
    else if (*s == '\\') fputs("\\\\", f);
    else fputc(*s, f);
  }
}

/* The readable key record. malloc'd text in *out (length *len); 0, or -1 when out of memory. */
static int make_record(const hot_kcache *kc, const hot_kernel_source *src, const entry *e,
                       char **out, size_t *len) {
  FILE *f = open_memstream(out, len);
  if (!f) return -1;
  unsigned char sh[HASH_SHA256_BYTES];
  char hex[65];
  hash_sha256_digest(src->source, strlen(src->source), sh);
  fprintf(f, "hot kernel cache entry\nformat %d\nkey %s\ngenerator %s\ncompiler %s\narch %s\n",
          HOT_KCACHE_FORMAT, e->pub.key, kc->genver, e->pub.compiler, src->arch);
  fputs("compiler-options ", f);
  put_line_value(f, kc->cc->fixed_options);
  fputs("\nprogram ", f);
  put_line_value(f, src->program ? src->program : "hot.cu");
  fputc('\n', f);
  for (size_t i = 0; i < src->n_options; i++) {
    fputs("option ", f);
    put_line_value(f, src->options[i]);
    fputc('\n', f);
  }
  fprintf(f, "source-sha256 %s\nsource-bytes %zu\ncubin-bytes %zu\ncompile-us %lld\nkernels %zu\n",
          hash_hex(sh, hex), strlen(src->source), e->res.cubin_size,
          (long long)(e->res.compile_ms * 1000.0), e->res.n_kernels);
  for (size_t i = 0; i < e->res.n_kernels; i++) {
    const hot_kernel_info *k = &e->res.kernels[i];
    fprintf(f, "kernel %s registers %d stack %d spill-stores %d spill-loads %d shared %d\n",
            k->name, k->registers, k->stack_bytes, k->spill_store_bytes, k->spill_load_bytes,
            k->shared_bytes);
  }
  if (fclose(f) != 0) {
    free(*out);
    *out = NULL;
    return -1;
  }
  return 0;
}

static int write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

static unsigned long tmp_counter;

/* Writes e as the entry at `path` (temp file + rename). 0 or -1. */
static int write_entry(const hot_kcache *kc, const hot_kernel_source *src, const entry *e,
                       const char *path) {
  char *rec = NULL;
  size_t rec_len = 0;
  if (make_record(kc, src, e, &rec, &rec_len) != 0) return -1;
  unsigned char hdr[HEADER_BYTES], ek[HASH_SHA256_BYTES], pd[HASH_SHA256_BYTES];
  size_t log_len = e->res.log_size;
  hash_sha256 s;
  hash_sha256_init(&s);
  hash_sha256_update(&s, rec, rec_len);
  hash_sha256_update(&s, e->res.cubin, e->res.cubin_size);
  hash_sha256_update(&s, e->res.log, log_len);
  hash_sha256_final(&s, pd);
  entry_key(e->h, e->pub.compiler, ek);
  memcpy(hdr, MAGIC, 8);
  put_u32(hdr + 8, HOT_KCACHE_FORMAT);
  put_u32(hdr + 12, HEADER_BYTES);
  put_u64(hdr + 16, rec_len);
  put_u64(hdr + 24, e->res.cubin_size);
  put_u64(hdr + 32, log_len);
  memcpy(hdr + 40, ek, 32);
  memcpy(hdr + 72, pd, 32);

  char tmp[4096];
  unsigned long c = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
  snprintf(tmp, sizeof tmp, "%s/.tmp-%.16s-%ld-%lu", kc->dir, e->pub.key, (long)getpid(), c);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    free(rec);
    return -1;
  }
  int bad = write_all(fd, hdr, sizeof hdr) || write_all(fd, rec, rec_len) ||
            write_all(fd, e->res.cubin, e->res.cubin_size) || write_all(fd, e->res.log, log_len);
  free(rec);
  if (close(fd) != 0) bad = 1;
  if (bad || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* Reads a whole file. 0 (malloc'd *buf, *len), -1 missing/unreadable, -2 not an entry size. */
static int read_file(const char *path, unsigned char **buf, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    close(fd);
    return -1;
  }
  if (sb.st_size < HEADER_BYTES || (uint64_t)sb.st_size > MAX_ENTRY_BYTES) {
    close(fd);
    return -2;
  }
  size_t n = (size_t)sb.st_size;
  unsigned char *b = malloc(n);
  size_t got = 0;
  while (b && got < n) {
    ssize_t r = read(fd, b + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!b) return -1;
  if (got != n) {
    free(b);
    return -2;
  }
  *buf = b;
  *len = n;
  return 0;
}

/* Parses "kernel NAME registers R stack S spill-stores A spill-loads B shared M" lines and
 * "compile-us N" from the record into e->res (kernels in the request's order). 0 or -1. */
static int parse_record(const char *rec, size_t len, const hot_kernel_source *src, entry *e) {
  char *text = malloc(len + 1);
  if (!text) return -1;
  memcpy(text, rec, len);
  text[len] = '\0';
  e->res.kernels = calloc(src->n_kernels, sizeof *e->res.kernels);
  if (!e->res.kernels) {
    free(text);
    return -1;
  }
  e->res.n_kernels = src->n_kernels;
  size_t nk = 0;
  int ok = 1;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line && ok; line = strtok_r(NULL, "\n", &save)) {
    long long us;
    if (sscanf(line, "compile-us %lld", &us) == 1) {
      e->res.compile_ms = (double)us / 1000.0;
    } else if (strncmp(line, "kernel ", 7) == 0) {
      char *name = line + 7;
      char *sp = strchr(name, ' ');
      if (!sp || nk >= src->n_kernels) {
        ok = 0;
        break;
      }
      *sp = '\0';
      hot_kernel_info *k = &e->res.kernels[nk];
      if (strcmp(name, src->kernels[nk]) != 0 ||
          sscanf(sp + 1, "registers %d stack %d spill-stores %d spill-loads %d shared %d",
                 &k->registers, &k->stack_bytes, &k->spill_store_bytes, &k->spill_load_bytes,
                 &k->shared_bytes) != 5 ||
          !(k->name = strdup(name))) {
        ok = 0;
        break;
      }
      k->found = 1;
      nk++;
    }
  }
  free(text);
  return ok && nk == src->n_kernels ? 0 : -1;
}

/* Loads and verifies the entry at path. 0 (*out a new entry), -1 missing, -2 rejected. */
static int read_entry(const char *path, const unsigned char h[HASH_SHA256_BYTES], const char *ver,
                      const hot_kernel_source *src, entry **out) {
  unsigned char *b = NULL;
  size_t n = 0;
  int rc = read_file(path, &b, &n);
  if (rc != 0) return rc;
  rc = -2;
  entry *e = NULL;
  unsigned char ek[HASH_SHA256_BYTES], pd[HASH_SHA256_BYTES];
  if (memcmp(b, MAGIC, 8) != 0 || get_u32(b + 8) != HOT_KCACHE_FORMAT ||
      get_u32(b + 12) != HEADER_BYTES)
    goto done;
  uint64_t rl = get_u64(b + 16), cl = get_u64(b + 24), ll = get_u64(b + 32);
  if (rl > n || cl > n || ll > n || HEADER_BYTES + rl + cl + ll != n || cl == 0) goto done;
  entry_key(h, ver, ek);
  if (memcmp(ek, b + 40, 32) != 0) goto done;
  hash_sha256_digest(b + HEADER_BYTES, n - HEADER_BYTES, pd);
  if (memcmp(pd, b + 72, 32) != 0) goto done;
  e = calloc(1, sizeof *e);
  if (!e) goto done;
  memcpy(e->h, h, HASH_SHA256_BYTES);
  const unsigned char *rec = b + HEADER_BYTES;
  if (parse_record((const char *)rec, (size_t)rl, src, e) != 0) goto done;
  e->res.cubin = malloc((size_t)cl);
  e->res.log = malloc((size_t)ll + 1);
  if (!e->res.cubin || !e->res.log) goto done;
  memcpy(e->res.cubin, rec + rl, (size_t)cl);
  e->res.cubin_size = (size_t)cl;
  memcpy(e->res.log, rec + rl + cl, (size_t)ll);
  e->res.log[ll] = '\0';
  e->res.log_size = strlen(e->res.log);
  *out = e;
  e = NULL;
  rc = 0;
done:
  entry_free(e);
  free(b);
  return rc;
}

/* Without a compiler version: the first valid entry named <hex>-*.hotk. Same codes. */
static int read_any_version(const hot_kcache *kc, const unsigned char h[HASH_SHA256_BYTES],
                            const hot_kernel_source *src, entry **out, char ver[32],
                            char *path, size_t pathlen) {
  char hex[65];
  hash_hex(h, hex);
  DIR *d = opendir(kc->dir);
  if (!d) return -1;
  int rc = -1;
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
    if (r == 0) {
      memcpy(ver, v, sizeof v);
      rc = 0;
      break;
    }
    if (r == -2) rc = -2;
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

rt_status hot_kcache_entry_path(hot_kcache *kc, const hot_kernel_source *src, char *buf,
                                size_t n, char *err, size_t errlen) {
  if (!kc || !buf || !n) {
    hot_errf(err, errlen, "kernel cache: NULL argument");
    return RT_ERR_INVALID;
  }
  rt_status st = nvrtc_check_source(src, err, errlen);
  if (st != RT_OK) return st;
  if (!kc->dir) {
    hot_errf(err, errlen, "kernel cache: memory only, no entry files");
    return RT_ERR_INVALID;
  }
  char ver[32];
  if (!compiler_version(kc, ver)) {
    hot_errf(err, errlen, "kernel cache: the compiler's version is unknown (no NVRTC?)");
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

rt_status hot_kcache_get(hot_kcache *kc, const hot_kernel_source *src,
                         const hot_kernel_binary **out, hot_kcache_origin *origin, char **log,
                         char *err, size_t errlen) {
  if (out) *out = NULL;
  if (log) *log = NULL;
  if (!kc || !out) {
    hot_errf(err, errlen, "kernel cache: NULL %s", kc ? "output" : "cache");
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
    *out = &e->pub;
    if (origin) *origin = HOT_KCACHE_MEMORY;
    return RT_OK;
  }

  char path[4096] = "";
  if (kc->dir) {
    int rc;
    if (known) {
      entry_path(kc, h, ver, path, sizeof path);
      rc = read_entry(path, h, ver, src, &e);
    } else {
      rc = read_any_version(kc, h, src, &e, ver, path, sizeof path);
    }
    if (rc == 0) {
      entry_publish(e, src, ver, HOT_KCACHE_DISK);
      utimensat(AT_FDCWD, path, NULL, 0);  /* LRU: a hit makes the entry the newest */
      entry *got = adopt(kc, e);
      if (!got) {
        hot_errf(err, errlen, "kernel cache: out of memory");
        return RT_ERR_NOMEM;
      }
      pthread_mutex_lock(&kc->mu);
      kc->st.disk_hits++;
      pthread_mutex_unlock(&kc->mu);
      *out = &got->pub;
      if (origin) *origin = HOT_KCACHE_DISK;
      return RT_OK;
    }
    if (rc == -2) {
      pthread_mutex_lock(&kc->mu);
      kc->st.disk_rejects++;
      pthread_mutex_unlock(&kc->mu);
    }
  }

  /* A miss: compile. */
  e = calloc(1, sizeof *e);
  if (!e) {
    hot_errf(err, errlen, "kernel cache: out of memory");
    return RT_ERR_NOMEM;
  }
  memcpy(e->h, h, HASH_SHA256_BYTES);
  st = kc->cc->compile(kc->cc->user, src, &e->res, err, errlen);
  if (st == RT_OK && (!e->res.cubin || !e->res.cubin_size || e->res.n_kernels != src->n_kernels ||
                      !e->res.kernels)) {
    hot_errf(err, errlen, "compile '%s' for %s: the compiler returned an incomplete result",
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
  if (st == RT_ERR_NOMEM) hot_errf(err, errlen, "kernel cache: out of memory");
  if (st != RT_OK) {
    if (log && e->res.log) *log = strdup(e->res.log);
    pthread_mutex_lock(&kc->mu);
    kc->st.compile_failures++;
    pthread_mutex_unlock(&kc->mu);
    entry_free(e);
    return st;
  }
  pthread_mutex_lock(&kc->mu);
  kc->st.compiles++;
  kc->st.compile_ms += e->res.compile_ms;
  pthread_mutex_unlock(&kc->mu);
  if (!known) snprintf(ver, sizeof ver, "unknown");  /* compiler worked, version did not */
  entry_publish(e, src, ver, HOT_KCACHE_COMPILED);

  if (kc->dir) {
    entry_path(kc, h, ver, path, sizeof path);
    int wrote = write_entry(kc, src, e, path) == 0;
    uint64_t ev = wrote ? evict(kc, strrchr(path, '/') + 1) : 0;
    pthread_mutex_lock(&kc->mu);
    if (wrote) kc->st.disk_writes++;
    else kc->st.disk_write_errors++;
    kc->st.evictions += ev;
    pthread_mutex_unlock(&kc->mu);
  }
  entry *got = adopt(kc, e);
  if (!got) {
    hot_errf(err, errlen, "kernel cache: out of memory");
    return RT_ERR_NOMEM;
  }
  *out = &got->pub;
  if (origin) *origin = HOT_KCACHE_COMPILED;
  return RT_OK;
}

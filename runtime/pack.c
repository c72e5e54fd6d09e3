/* pack.c — the kernel pack file: write, parse with bounds checks, look up (see pack.h). */
#define _GNU_SOURCE
#include "pack.h"
#include "le.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "fileio.h"
#include "hash.h"

static const unsigned char MAGIC[8] = {'H', 'O', 'T', 'P', 'A', 'C', 'K', 0};

typedef struct {
  char key[65];
  char compiler[32];
  char arch[16];
  hot_kernel_info *kernels; /* names owned */
  size_t n_kernels;
  const unsigned char *cubin; /* into the pack's image */
  size_t cubin_size;
  const char *log;            /* into the image, log_size bytes, not NUL-terminated */
  size_t log_size;
  double compile_ms;
} pentry;

struct hot_pack {
  unsigned char *data; /* the image */
  size_t size;
  pentry *e;
  size_t n;
};

/* ---- little-endian helpers ---------------------------------------------------------------- */

static int ident_ok(const char *s, size_t max) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > max) return 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

static int hex_ok(const char *s) {
  if (!s || strlen(s) != 64) return 0;
  for (int i = 0; i < 64; ++i)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

/* ---- write -------------------------------------------------------------------------------- */

/* Bytes entry e takes in the body. */
static size_t entry_bytes(const hot_pack_entry *e) {
  size_t n = 64 + 1 + strlen(e->compiler) + 1 + strlen(e->arch) + 4;
  for (size_t k = 0; k < e->n_kernels; ++k) n += 2 + strlen(e->kernels[k].name) + 20;
  return n + 8 + 8 + e->cubin_size + 8 + (e->log ? strlen(e->log) : 0);
}

static int entry_check(const hot_pack_entry *e, size_t i, char *err, size_t errlen) {
  const char *why = NULL;
  if (!hex_ok(e->key)) why = "key is not 64 lower-case hex digits";
  else if (!ident_ok(e->compiler, 31)) why = "compiler version empty, too long or not [A-Za-z0-9._-]";
  else if (!nvrtc_arch_valid(e->arch) || strlen(e->arch) > 15) why = "arch not of the form sm_XX[a|f]";
  else if (!e->kernels || e->n_kernels == 0 || e->n_kernels > HOT_MAX_PROGRAM_KERNELS)
    why = "kernel count not in 1..64";
  else if (!e->cubin || e->cubin_size == 0 || e->cubin_size > HOT_PACK_MAX_BYTES) why = "no CUBIN";
  for (size_t k = 0; !why && k < e->n_kernels; ++k) {
    const hot_kernel_info *ki = &e->kernels[k];
    if (!ki->name || !ki->name[0] || strlen(ki->name) > 255) why = "kernel name empty or too long";
    else if (ki->registers < -1 || ki->stack_bytes < -1 || ki->spill_store_bytes < -1 ||
             ki->spill_load_bytes < -1 || ki->shared_bytes < -1)
      why = "kernel figure below -1";
  }
  if (why) fileio_msgf(err, errlen, "pack entry %zu: %s", i, why);
  return why ? -1 : 0;
}

static unsigned char *put_str(unsigned char *p, const char *s, int lenbytes) {
  size_t n = strlen(s);
  hot_le_put(p, n, lenbytes);
  memcpy(p + lenbytes, s, n);
  return p + lenbytes + n;
}

static unsigned char *put_blob(unsigned char *p, const void *d, size_t n) {
  hot_le_put(p, n, 8);
  if (n) memcpy(p + 8, d, n);
  return p + 8 + n;
}

/* Checks every entry and marks in keep[] the first of each (key, compiler); *count and *body
 * get the kept entries and their body bytes. -1 (err filled) on a bad entry. */
static int select_entries(const hot_pack_entry *entries, size_t n, char *keep, size_t *count,
                          size_t *body, char *err, size_t errlen) {
  *body = 0;
  *count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (entry_check(&entries[i], i, err, errlen)) return -1;
    int dup = 0;
    for (size_t j = 0; j < i && !dup; ++j)
      dup = keep[j] && !strcmp(entries[j].key, entries[i].key) &&
            !strcmp(entries[j].compiler, entries[i].compiler);
    if (dup) continue;
    keep[i] = 1;
    ++*count;
    *body += entry_bytes(&entries[i]);
  }
  return 0;
}

/* Serializes entry e at p (entry_bytes(e) bytes); returns the end. */
static unsigned char *put_entry(unsigned char *p, const hot_pack_entry *e) {
  memcpy(p, e->key, 64);
  p = put_str(p + 64, e->compiler, 1);
  p = put_str(p, e->arch, 1);
  hot_le_put(p, e->n_kernels, 4);
  p += 4;
  for (size_t k = 0; k < e->n_kernels; ++k) {
    const hot_kernel_info *ki = &e->kernels[k];
    p = put_str(p, ki->name, 2);
    int v[5] = {ki->registers, ki->stack_bytes, ki->spill_store_bytes, ki->spill_load_bytes,
                ki->shared_bytes};
    for (int j = 0; j < 5; ++j, p += 4) hot_le_put(p, (uint32_t)v[j], 4);
  }
  hot_le_put(p, hot_ms_to_us(e->compile_ms), 8);
  p = put_blob(p + 8, e->cubin, e->cubin_size);
  return put_blob(p, e->log ? e->log : "", e->log ? strlen(e->log) : 0);
}

static unsigned long tmp_counter;

/* Writes the total bytes of img to path through a temporary file of its own (a new name per
 * writer: process and call, created exclusively, so concurrent writers of one pack never share
 * one and a link planted in its place is never followed) and a rename; the caller keeps img. */
static rt_status write_image(const char *path, const unsigned char *img, size_t total, char *err,
                             size_t errlen) {
  char tmp[4200];
  char why[128] = "";
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) { /* a stale name: take the next */
    unsigned long c = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%lu", path, (long)getpid(), c) >= (int)sizeof tmp) {
      fileio_msgf(err, errlen, "pack %s: path too long", path);
      return RT_ERR_IO;
    }
    fd = fileio_open(tmp, HOT_FILE_WRITE_NEW | HOT_FILE_NOFOLLOW, 0644, why, sizeof why);
    if (fd < 0 && errno != EEXIST) break;
  }
  size_t done = 0;
  while (fd >= 0 && done < total) {
    ssize_t w = write(fd, img + done, total - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  int e = errno;
  int ok = fd >= 0 && done == total;
  if (fd >= 0 && close(fd) != 0) ok = 0, e = errno;
  if (ok && rename(tmp, path) != 0) ok = 0, e = errno;
  if (!ok) {
    if (fd >= 0) unlink(tmp); /* only a file this call made */
    fileio_msgf(err, errlen, "pack %s: cannot write: %s", path, fd < 0 && *why ? why : strerror(e));
    return RT_ERR_IO;
  }
  return RT_OK;
}

rt_status pack_write(const char *path, const hot_pack_entry *entries, size_t n, char *err,
                     size_t errlen) {
  if (!path || !*path || (n && !entries)) {
    fileio_msgf(err, errlen, "pack: no file or entries given");
    return RT_ERR_INVALID;
  }
  char twhy[128];
  if (fileio_check_regular(path, 0, twhy, sizeof twhy) != 0 && errno == EINVAL) {
    fileio_msgf(err, errlen, "pack %s: cannot write: %s", path, twhy);
    return RT_ERR_IO;
  }
  char *keep = calloc(n + 1, 1); /* 1: written (not a duplicate) */
  if (!keep) {
    fileio_msgf(err, errlen, "pack %s: out of memory", path);
    return RT_ERR_NOMEM;
  }
  size_t body = 0, count = 0;
  if (select_entries(entries, n, keep, &count, &body, err, errlen)) {
    free(keep);
    return RT_ERR_INVALID;
  }
  if (count > HOT_PACK_MAX_ENTRIES || body > HOT_PACK_MAX_BYTES - HOT_PACK_HEADER_BYTES) {
    free(keep);
    fileio_msgf(err, errlen, "pack %s: too large (%zu entries, %zu bytes)", path, count, body);
    return RT_ERR_INVALID;
  }
  unsigned char *img = malloc(HOT_PACK_HEADER_BYTES + body);
  if (!img) {
    free(keep);
    fileio_msgf(err, errlen, "pack %s: out of memory", path);
    return RT_ERR_NOMEM;
  }
  unsigned char *p = img + HOT_PACK_HEADER_BYTES;
  for (size_t i = 0; i < n; ++i)
    if (keep[i]) p = put_entry(p, &entries[i]);
  free(keep);
  memcpy(img, MAGIC, 8);
  hot_le_put(img + 8, HOT_PACK_VERSION, 4);
  hot_le_put(img + 12, count, 4);
  hot_le_put(img + 16, body, 8);
  hash_sha256_digest(img + HOT_PACK_HEADER_BYTES, body, img + 24);
  rt_status st = write_image(path, img, HOT_PACK_HEADER_BYTES + body, err, errlen);
  free(img);
  return st;
}

/* ---- parse -------------------------------------------------------------------------------- */

/* A cursor over [p, end) that refuses to read past the end. */
typedef struct {
  const unsigned char *base, *p, *end;
} cur;

static int take(cur *c, size_t n, const unsigned char **out) {
  if ((size_t)(c->end - c->p) < n) return -1;
  *out = c->p;
  c->p += n;
  return 0;
}

static int take_u(cur *c, int bytes, uint64_t *v) {
  const unsigned char *q;
  if (take(c, (size_t)bytes, &q)) return -1;
  *v = hot_le_get(q, bytes);
  return 0;
}

#define TRUNCATED (-2) /* a field the body ends inside (take_str, take_blob) */

/* A length-prefixed string into buf (cap bytes with the NUL): 0; TRUNCATED when the body ends
 * inside its length or its bytes; -1 when it is longer than its field. */
static int take_str(cur *c, int lenbytes, char *buf, size_t cap) {
  uint64_t n;
  const unsigned char *q;
  if (take_u(c, lenbytes, &n)) return TRUNCATED;
  if (n >= cap) return -1;
  if (take(c, (size_t)n, &q)) return TRUNCATED;
  memcpy(buf, q, (size_t)n);
  buf[n] = '\0';
  return 0;
}

/* A length-prefixed blob at c (*q its *n bytes): 0; TRUNCATED when the body ends inside its
 * length or its bytes; -1 when the length exceeds HOT_PACK_MAX_BYTES (no writer makes that). */
static int take_blob(cur *c, const unsigned char **q, uint64_t *n) {
  if (take_u(c, 8, n)) return TRUNCATED;
  if (*n > HOT_PACK_MAX_BYTES) return -1;
  if (*n > (uint64_t)(c->end - c->p) || take(c, (size_t)*n, q)) return TRUNCATED;
  return 0;
}

static void entries_free(pentry *e, size_t n) {
  for (size_t i = 0; e && i < n; ++i) {
    for (size_t k = 0; k < e[i].n_kernels && e[i].kernels; ++k) free(e[i].kernels[k].name);
    free(e[i].kernels);
  }
  free(e);
}

void pack_free(hot_pack *p) {
  if (!p) return;
  entries_free(p->e, p->n);
  free(p->data);
  free(p);
}

/* Parses entry i at c into *e. NULL, or what is wrong (static text): "truncated ..." when the
 * body ends inside the entry (a pack cut short, its header rewritten to match), another text
 * for a field whose value is wrong. NOMEM: "out of memory". */
static const char *parse_entry(cur *c, pentry *e) {
  const unsigned char *q;
  uint64_t v;
  char name[256];
  int r;
  if (take(c, 64, &q)) return "truncated key";
  memcpy(e->key, q, 64);
  e->key[64] = '\0';
  if (!hex_ok(e->key)) return "key is not hex";
  if ((r = take_str(c, 1, e->compiler, sizeof e->compiler)) == TRUNCATED)
    return "truncated compiler version";
  if (r || !ident_ok(e->compiler, 31)) return "bad compiler version";
  if ((r = take_str(c, 1, e->arch, sizeof e->arch)) == TRUNCATED) return "truncated arch";
  if (r || !nvrtc_arch_valid(e->arch)) return "bad arch";
  if (take_u(c, 4, &v)) return "truncated kernel count";
  if (v == 0 || v > HOT_MAX_PROGRAM_KERNELS) return "kernel count not in 1..64";
  e->kernels = calloc((size_t)v, sizeof *e->kernels);
  if (!e->kernels) return "out of memory";
  for (uint64_t k = 0; k < v; ++k) {
    hot_kernel_info *ki = &e->kernels[k];
    if ((r = take_str(c, 2, name, sizeof name)) == TRUNCATED) return "truncated kernel name";
    if (r || !name[0]) return "bad kernel name";
    if (!(ki->name = strdup(name))) return "out of memory";
    e->n_kernels = (size_t)k + 1;
    int *f[5] = {&ki->registers, &ki->stack_bytes, &ki->spill_store_bytes, &ki->spill_load_bytes,
                 &ki->shared_bytes};
    for (int j = 0; j < 5; ++j) {
      uint64_t x;
      if (take_u(c, 4, &x)) return "truncated kernel figures";
      int32_t s = (int32_t)(uint32_t)x;
      if (s < -1) return "kernel figure below -1";
      *f[j] = s;
    }
    ki->found = 1;
  }
  if (take_u(c, 8, &v)) return "truncated compile time";
  e->compile_ms = hot_us_to_ms(v);
  if ((r = take_blob(c, &q, &v)) == TRUNCATED) return "truncated CUBIN";
  if (r || v == 0) return "bad CUBIN length";
  e->cubin = q;
  e->cubin_size = (size_t)v;
  if ((r = take_blob(c, &q, &v)) == TRUNCATED) return "truncated compile log";
  if (r) return "bad compile log length";
  e->log = (const char *)q;
  e->log_size = (size_t)v;
  return NULL;
}

rt_status pack_parse(const unsigned char *data, size_t size, const char *name, hot_pack **out,
                     char *err, size_t errlen) {
  if (out) *out = NULL;
  if (!name) name = "(pack)";
  if (!out || (!data && size)) {
    fileio_msgf(err, errlen, "%s: NULL argument", name);
    return RT_ERR_INVALID;
  }
  if (size == 0) {
    fileio_msgf(err, errlen, "%s: not a kernel pack (an empty file)", name);
    return RT_ERR_INVALID;
  }
  if (memcmp(data, MAGIC, size < 8 ? size : 8) != 0) {
    fileio_msgf(err, errlen, "%s: not a kernel pack (wrong magic)", name);
    return RT_ERR_INVALID;
  }
  if (size < HOT_PACK_HEADER_BYTES) {
    fileio_msgf(err, errlen, "%s: truncated kernel pack (%zu bytes, its header alone has %d)", name,
             size, HOT_PACK_HEADER_BYTES);
    return RT_ERR_INVALID;
  }
  uint64_t ver = hot_le_get(data + 8, 4), n = hot_le_get(data + 12, 4), body = hot_le_get(data + 16, 8);
  if (ver != HOT_PACK_VERSION) {
    fileio_msgf(err, errlen, "%s: kernel pack format %llu, this build reads %d", name,
             (unsigned long long)ver, HOT_PACK_VERSION);
    return RT_ERR_INVALID;
  }
  if (body != size - HOT_PACK_HEADER_BYTES) {
    fileio_msgf(err, errlen, "%s: truncated or extended kernel pack (%zu bytes, header says %llu)",
             name, size, (unsigned long long)(body + HOT_PACK_HEADER_BYTES));
    return RT_ERR_INVALID;
  }
  if (n > HOT_PACK_MAX_ENTRIES) {
    fileio_msgf(err, errlen, "%s: %llu entries, at most %d", name, (unsigned long long)n,
             HOT_PACK_MAX_ENTRIES);
    return RT_ERR_INVALID;
  }
  unsigned char h[HASH_SHA256_BYTES];
  hash_sha256_digest(data + HOT_PACK_HEADER_BYTES, (size_t)body, h);
  if (memcmp(h, data + 24, HASH_SHA256_BYTES) != 0) {
    fileio_msgf(err, errlen, "%s: kernel pack checksum mismatch (corrupt file)", name);
    return RT_ERR_INVALID;
  }
  hot_pack *p = calloc(1, sizeof *p);
  if (p) p->data = malloc(size);
  if (p && p->data && n) p->e = calloc((size_t)n, sizeof *p->e);
  if (!p || !p->data || (n && !p->e)) {
    pack_free(p);
    fileio_msgf(err, errlen, "%s: out of memory", name);
    return RT_ERR_NOMEM;
  }
  memcpy(p->data, data, size);
  p->size = size;
  cur c = {p->data, p->data + HOT_PACK_HEADER_BYTES, p->data + size};
  for (uint64_t i = 0; i < n; ++i) {
    size_t at = (size_t)(c.p - c.base);
    p->n = (size_t)i + 1;
    const char *why = parse_entry(&c, &p->e[i]);
    if (why) {
      int nomem = !strcmp(why, "out of memory");
      fileio_msgf(err, errlen, "%s: kernel pack entry %llu (byte %zu): %s", name,
               (unsigned long long)i, at, why);
      pack_free(p);
      return nomem ? RT_ERR_NOMEM : RT_ERR_INVALID;
    }
  }
  if (c.p != c.end) {
    fileio_msgf(err, errlen, "%s: %zu stray bytes after the last kernel pack entry", name,
             (size_t)(c.end - c.p));
    pack_free(p);
    return RT_ERR_INVALID;
  }
  *out = p;
  return RT_OK;
}

rt_status pack_load(const char *path, hot_pack **out, char *err, size_t errlen) {
  if (out) *out = NULL;
  if (!path || !*path || !out) {
    fileio_msgf(err, errlen, "kernel pack: no file given");
    return RT_ERR_INVALID;
  }
  char why[128] = "";
  int fd = fileio_open(path, HOT_FILE_READ, 0, why, sizeof why);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    fileio_msgf(err, errlen, "kernel pack %s: cannot open: %s", path, fd < 0 ? why : strerror(e));
    return RT_ERR_IO;
  }
  if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > HOT_PACK_MAX_BYTES) {
    close(fd);
    fileio_msgf(err, errlen, "kernel pack %s: %s", path,
             !S_ISREG(sb.st_mode) ? "not a regular file" : "larger than 4 GiB");
    return RT_ERR_IO;
  }
  size_t size = (size_t)sb.st_size, got = 0;
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) {
    close(fd);
    fileio_msgf(err, errlen, "kernel pack %s: out of memory", path);
    return RT_ERR_NOMEM;
  }
  while (got < size) {
    ssize_t r = read(fd, buf + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  int e = errno;
  close(fd);
  if (got != size) {
    free(buf);
    fileio_msgf(err, errlen, "kernel pack %s: cannot read: %s", path,
             got < size ? (e ? strerror(e) : "file shrank") : "?");
    return RT_ERR_IO;
  }
  rt_status st = pack_parse(buf, size, path, out, err, errlen);
  free(buf);
  return st;
}

size_t pack_count(const hot_pack *p) { return p ? p->n : 0; }

void pack_entry(const hot_pack *p, size_t i, hot_pack_entry *out) {
  memset(out, 0, sizeof *out);
  if (!p || i >= p->n) return;
  const pentry *e = &p->e[i];
  out->key = e->key;
  out->compiler = e->compiler;
  out->arch = e->arch;
  out->kernels = e->kernels;
  out->n_kernels = e->n_kernels;
  out->cubin = e->cubin;
  out->cubin_size = e->cubin_size;
  out->log = NULL; /* not NUL-terminated in the image: see pack_lookup for a copy */
  out->compile_ms = e->compile_ms;
}

int pack_lookup(const hot_pack *p, const char *key, const char *compiler,
                const char *const *names, size_t n, hot_compile_result *res,
                char compiler_out[32]) {
  memset(res, 0, sizeof *res);
  if (!p || !key) return 0;
  for (size_t i = 0; i < p->n; ++i) {
    const pentry *e = &p->e[i];
    if (strcmp(e->key, key) != 0) continue;
    if (compiler && compiler[0] && strcmp(e->compiler, compiler) != 0) continue;
    if (e->n_kernels != n) continue;
    int same = 1;
    for (size_t k = 0; k < n && same; ++k) same = names && names[k] && !strcmp(names[k], e->kernels[k].name);
    if (!same) continue;
    res->cubin = malloc(e->cubin_size);
    res->log = malloc(e->log_size + 1);
    res->kernels = calloc(n, sizeof *res->kernels);
    if (!res->cubin || !res->log || !res->kernels) {
      nvrtc_result_free(res);
      return -1;
    }
    memcpy(res->cubin, e->cubin, e->cubin_size);
    res->cubin_size = e->cubin_size;
    memcpy(res->log, e->log, e->log_size);
    res->log[e->log_size] = '\0';
    res->log_size = strlen(res->log);
    res->n_kernels = n;
    for (size_t k = 0; k < n; ++k) {
      res->kernels[k] = e->kernels[k];
      if (!(res->kernels[k].name = strdup(e->kernels[k].name))) {
        nvrtc_result_free(res);
        return -1;
      }
    }
    res->compile_ms = e->compile_ms;
    snprintf(compiler_out, 32, "%s", e->compiler);
    return 1;
  }
  return 0;
}

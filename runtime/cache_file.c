/* cache_file.c — kernel cache entry files: keys, encode/decode, checksums, safe I/O (see
 * cache_file.h for the format and the rules on what is found in an entry's place). */
#define _GNU_SOURCE
#include "cache_file.h"
#include "fileio.h"
#include "le.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h" /* HOT_KCACHE_FORMAT */
#include "num.h"

static const char MAGIC[8] = {'H', 'O', 'T', 'K', 'C', 'A', 'C', 'H'};

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

void cache_file_key(const char *generator, const char *fixed_options, const hot_kernel_source *src,
                    unsigned char h[HASH_SHA256_BYTES]) {
  hash_sha256 s;
  char fmt[16];
  hash_sha256_init(&s);
  snprintf(fmt, sizeof fmt, "%d", HOT_KCACHE_FORMAT);
  str_field(&s, "hot-kcache", fmt);
  str_field(&s, "generator", generator);
  str_field(&s, "compiler-options", fixed_options);
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

/* ---- encoding ------------------------------------------------------------------------------ */

static void put_u32(unsigned char *p, uint32_t v) { hot_le_put(p, v, 4); }
static void put_u64(unsigned char *p, uint64_t v) { hot_le_put(p, v, 8); }
static uint32_t get_u32(const unsigned char *p) { return (uint32_t)hot_le_get(p, 4); }
static uint64_t get_u64(const unsigned char *p) { return hot_le_get(p, 8); }

/* Writes s with newlines escaped (options and names are one line each in the record). */
static void put_line_value(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '\n') fputs("\\n", f);
    else if (*s == '\\') fputs("\\\\", f);
    else fputc(*s, f);
  }
}

/* The readable key record. malloc'd text in *out (length *len); 0, or -1 when out of memory. */
static int make_record(const cache_file_id *id, const hot_kernel_source *src,
                       const hot_compile_result *res, char **out, size_t *len) {
  FILE *f = open_memstream(out, len);
  if (!f) return -1;
  unsigned char sh[HASH_SHA256_BYTES];
  char hex[65];
  hash_sha256_digest(src->source, strlen(src->source), sh);
  fprintf(f, "hot kernel cache entry\nformat %d\nkey %s\ngenerator %s\ncompiler %s\narch %s\n",
          HOT_KCACHE_FORMAT, id->key_hex, id->generator, id->compiler, src->arch);
  fputs("compiler-options ", f);
  put_line_value(f, id->fixed_options);
  fputs("\nprogram ", f);
  put_line_value(f, src->program ? src->program : "hot.cu");
  fputc('\n', f);
  for (size_t i = 0; i < src->n_options; i++) {
    fputs("option ", f);
    put_line_value(f, src->options[i]);
    fputc('\n', f);
  }
  fprintf(f, "source-sha256 %s\nsource-bytes %zu\ncubin-bytes %zu\ncompile-us %llu\nkernels %zu\n",
          hash_hex(sh, hex), strlen(src->source), res->cubin_size,
          (unsigned long long)hot_ms_to_us(res->compile_ms), res->n_kernels);
  for (size_t i = 0; i < res->n_kernels; i++) {
    const hot_kernel_info *k = &res->kernels[i];
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

/* Reads "KEY0 V0 KEY1 V1 ..." from s (space-separated: exactly keys[0..n), in order) into v[],
 * each value an integer in [0, hi] (num.h). 0, or -1. */
static int read_keyed(char *s, const char *const *keys, int n, uint64_t hi, uint64_t *v) {
  char *save = NULL;
  for (int i = 0; i < n; ++i) {
    char *k = strtok_r(i ? NULL : s, " ", &save), *x = strtok_r(NULL, " ", &save);
    if (!k || !x || strcmp(k, keys[i]) != 0 || num_parse_u64(keys[i], x, 0, hi, &v[i], NULL, 0))
      return -1;
  }
  return strtok_r(NULL, " ", &save) ? -1 : 0;
}

/* Parses "kernel NAME registers R stack S spill-stores A spill-loads B shared M" lines and
 * "compile-us N" from the record into res (kernels in the request's order). CF_OK, CF_REJECT or
 * CF_NOMEM. */
static int parse_record(const char *rec, size_t len, const hot_kernel_source *src,
                        hot_compile_result *res) {
  char *text = malloc(len + 1);
  if (!text) return CF_NOMEM;
  memcpy(text, rec, len);
  text[len] = '\0';
  res->kernels = calloc(src->n_kernels, sizeof *res->kernels);
  if (!res->kernels) {
    free(text);
    return CF_NOMEM;
  }
  res->n_kernels = src->n_kernels;
  size_t nk = 0;
  int rc = CF_OK;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line && rc == CF_OK;
       line = strtok_r(NULL, "\n", &save)) {
    static const char *const k_us[] = {"compile-us"},
                             *const k_kern[] = {"registers", "stack", "spill-stores",
                                                "spill-loads", "shared"};
    uint64_t v[5];
    if (strncmp(line, "compile-us ", 11) == 0) {
      if (read_keyed(line, k_us, 1, UINT64_MAX, v) != 0) {
        rc = CF_REJECT;
        break;
      }
      res->compile_ms = hot_us_to_ms(v[0]);
    } else if (strncmp(line, "kernel ", 7) == 0) {
      char *name = line + 7;
      char *sp = strchr(name, ' ');
      if (!sp || nk >= src->n_kernels) {
        rc = CF_REJECT;
        break;
      }
      *sp = '\0';
      hot_kernel_info *k = &res->kernels[nk];
      if (strcmp(name, src->kernels[nk]) != 0 || read_keyed(sp + 1, k_kern, 5, INT32_MAX, v) != 0) {
        rc = CF_REJECT;
        break;
      }
      k->registers = (int)v[0], k->stack_bytes = (int)v[1], k->spill_store_bytes = (int)v[2];
      k->spill_load_bytes = (int)v[3], k->shared_bytes = (int)v[4];
      if (!(k->name = strdup(name))) {
        rc = CF_NOMEM;
        break;
      }
      k->found = 1;
      nk++;
    }
  }
  free(text);
  if (rc == CF_OK && nk != src->n_kernels) rc = CF_REJECT;
  return rc;
}

/* ---- I/O ----------------------------------------------------------------------------------- */

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

/* A directory holds the entry's name: remove it when empty, else move it aside. 0 or -1. */
static int clear_directory(const char *dir, const char *path) {
  if (rmdir(path) == 0) return 0;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char aside[4096];
  unsigned long c = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
  if (snprintf(aside, sizeof aside, "%s/.displaced-%s-%ld-%lu", dir, base, (long)getpid(), c) >=
      (int)sizeof aside)
    return -1;
  return rename(path, aside);
}

int cache_file_write(const char *dir, const char *path, const cache_file_id *id,
                     const unsigned char h[HASH_SHA256_BYTES], const hot_kernel_source *src,
                     const hot_compile_result *res) {
  char *rec = NULL;
  size_t rec_len = 0;
  if (make_record(id, src, res, &rec, &rec_len) != 0) return -1;
  unsigned char hdr[CACHE_FILE_HEADER_BYTES], ek[HASH_SHA256_BYTES], pd[HASH_SHA256_BYTES];
  size_t log_len = res->log_size;
  hash_sha256 s;
  hash_sha256_init(&s);
  hash_sha256_update(&s, rec, rec_len);
  hash_sha256_update(&s, res->cubin, res->cubin_size);
  hash_sha256_update(&s, res->log, log_len);
  hash_sha256_final(&s, pd);
  entry_key(h, id->compiler, ek);
  memcpy(hdr, MAGIC, 8);
  put_u32(hdr + 8, HOT_KCACHE_FORMAT);
  put_u32(hdr + 12, CACHE_FILE_HEADER_BYTES);
  put_u64(hdr + 16, rec_len);
  put_u64(hdr + 24, res->cubin_size);
  put_u64(hdr + 32, log_len);
  memcpy(hdr + 40, ek, 32);
  memcpy(hdr + 72, pd, 32);

  char tmp[4096];
  unsigned long c = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
  snprintf(tmp, sizeof tmp, "%s/.tmp-%.16s-%ld-%lu", dir, id->key_hex, (long)getpid(), c);
  int fd = fileio_open(tmp, HOT_FILE_WRITE_NEW | HOT_FILE_NOFOLLOW, 0644, NULL, 0);
  if (fd < 0) {
    free(rec);
    return -1;
  }
  int bad = write_all(fd, hdr, sizeof hdr) || write_all(fd, rec, rec_len) ||
            write_all(fd, res->cubin, res->cubin_size) || write_all(fd, res->log, log_len);
  free(rec);
  if (close(fd) != 0) bad = 1;
  if (!bad && rename(tmp, path) != 0) {
    struct stat sb;
    bad = 1;
    if ((errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) && lstat(path, &sb) == 0 &&
        S_ISDIR(sb.st_mode) && clear_directory(dir, path) == 0)
      bad = rename(tmp, path) != 0;
  }
  if (bad) {
    int e = errno;
    unlink(tmp);
    errno = e;
    return -1;
  }
  return 0;
}

/* Reads a whole regular file without blocking on what is not one. CF_OK (malloc'd *buf, *len),
 * CF_MISSING, CF_REJECT (not a regular file, or not an entry's size), CF_NOMEM. */
static int read_regular(const char *path, unsigned char **buf, size_t *len) {
  int fd = fileio_open(path, HOT_FILE_READ | HOT_FILE_NOFOLLOW, 0, NULL, 0);
  if (fd < 0) return errno == EINVAL || errno == ELOOP || errno == ENXIO ? CF_REJECT : CF_MISSING;
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    close(fd);
    return CF_MISSING;
  }
  if (!S_ISREG(sb.st_mode) || sb.st_size < CACHE_FILE_HEADER_BYTES ||
      (uint64_t)sb.st_size > CACHE_FILE_MAX_BYTES) {
    close(fd);
    return CF_REJECT;
  }
  size_t n = (size_t)sb.st_size;
  unsigned char *b = malloc(n);
  if (!b) {
    close(fd);
    return CF_NOMEM;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, b + got, n - got);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != n) {
    free(b);
    return CF_REJECT;
  }
  *buf = b;
  *len = n;
  return CF_OK;
}

int cache_file_read(const char *path, const unsigned char h[HASH_SHA256_BYTES], const char *ver,
                    const hot_kernel_source *src, hot_compile_result *out) {
  memset(out, 0, sizeof *out);
  unsigned char *b = NULL;
  size_t n = 0;
  int rc = read_regular(path, &b, &n);
  if (rc != CF_OK) return rc;
  rc = CF_REJECT;
  unsigned char ek[HASH_SHA256_BYTES], pd[HASH_SHA256_BYTES];
  if (memcmp(b, MAGIC, 8) != 0 || get_u32(b + 8) != HOT_KCACHE_FORMAT ||
      get_u32(b + 12) != CACHE_FILE_HEADER_BYTES)
    goto done;
  uint64_t rl = get_u64(b + 16), cl = get_u64(b + 24), ll = get_u64(b + 32);
  if (rl > n || cl > n || ll > n || CACHE_FILE_HEADER_BYTES + rl + cl + ll != n || cl == 0)
    goto done;
  entry_key(h, ver, ek);
  if (memcmp(ek, b + 40, 32) != 0) goto done;
  hash_sha256_digest(b + CACHE_FILE_HEADER_BYTES, n - CACHE_FILE_HEADER_BYTES, pd);
  if (memcmp(pd, b + 72, 32) != 0) goto done;
  const unsigned char *rec = b + CACHE_FILE_HEADER_BYTES;
  if ((rc = parse_record((const char *)rec, (size_t)rl, src, out)) != CF_OK) goto done;
  rc = CF_NOMEM;
  out->cubin = malloc((size_t)cl);
  out->log = malloc((size_t)ll + 1);
  if (!out->cubin || !out->log) goto done;
  memcpy(out->cubin, rec + rl, (size_t)cl);
  out->cubin_size = (size_t)cl;
  memcpy(out->log, rec + rl + cl, (size_t)ll);
  out->log[ll] = '\0';
  out->log_size = strlen(out->log);
  rc = CF_OK;
done:
  if (rc != CF_OK) nvrtc_result_free(out);
  free(b);
  return rc;
}

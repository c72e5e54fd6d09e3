/* rt_util.h — helpers shared by the runtime suites: temporary folders and a fake compiler that
 * counts its calls and can be told to fail (the injectable compiler of nvrtc.h). */
#ifndef HOT_TESTS_RT_UTIL_H
#define HOT_TESTS_RT_UTIL_H

#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hash.h"
#include "nvrtc.h"

static inline int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb; (void)flag; (void)f;
  return remove(p);
}

/* A fresh folder under $TMPDIR or /tmp; the path is static per call site's buffer. */
static inline char *tmp_dir(char buf[256]) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, 256, "%s/hot-rt-XXXXXX", t && *t ? t : "/tmp");
  return mkdtemp(buf);
}

static inline void rm_tree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* The fake compiler: a "cubin" of `size` bytes derived from the source, so its content can be
 * checked after a round trip; counts calls; fails (RT_ERR_COMPILE) while `fail` is set. */
typedef struct {
  int compiles;
  int fail;
  size_t size;
  const char *version;  /* NULL: version unavailable */
  double ms;            /* the compile time it reports; 0: 1.5 ms */
} fake_cc;

static inline void fake_bytes(const hot_kernel_source *src, size_t size, unsigned char *out) {
  unsigned char d[HASH_SHA256_BYTES];
  hash_sha256_digest(src->source, strlen(src->source), d);
  for (size_t i = 0; i < size; i++) out[i] = (unsigned char)(d[i % 32] ^ (unsigned char)(i / 32));
}

static inline rt_status fake_version(void *user, char *buf, size_t n, char *err, size_t errlen) {
  fake_cc *f = user;
  if (!f->version) {
    snprintf(err, errlen, "fake: no version");
    return RT_ERR_NO_NVRTC;
  }
  snprintf(buf, n, "%s", f->version);
  return RT_OK;
}

static inline rt_status fake_compile(void *user, const hot_kernel_source *src, hot_compile_result *out,
                              char *err, size_t errlen) {
  fake_cc *f = user;
  memset(out, 0, sizeof *out);
  __atomic_fetch_add(&f->compiles, 1, __ATOMIC_RELAXED);  /* threads share one fake */
  out->log = strdup(f->fail ? "fake.cu(3): error: forced failure\n" : "fake log\n");
  out->log_size = strlen(out->log);
  if (f->fail) {
    snprintf(err, errlen, "compile '%s' for %s failed: forced", src->program, src->arch);
    return RT_ERR_COMPILE;
  }
  size_t size = f->size ? f->size : 1000;
  out->cubin = malloc(size);
  out->cubin_size = size;
  fake_bytes(src, size, out->cubin);
  out->n_kernels = src->n_kernels;
  out->kernels = calloc(src->n_kernels, sizeof *out->kernels);
  for (size_t i = 0; i < src->n_kernels; i++) {
    out->kernels[i].name = strdup(src->kernels[i]);
    out->kernels[i].found = 1;
    out->kernels[i].registers = 32 + (int)i;
    out->kernels[i].stack_bytes = 0;
    out->kernels[i].spill_store_bytes = 0;
    out->kernels[i].spill_load_bytes = 0;
    out->kernels[i].shared_bytes = 1024;
  }
  out->compile_ms = f->ms != 0 ? f->ms : 1.5;
  return RT_OK;
}

#define FAKE_COMPILER(f) {&(f), fake_version, "fake-options", fake_compile}

/* fake_compile with an ELF magic at the start of the "cubin", so that module_load hands it to
 * the (fake) driver instead of taking it for PTX. */
static inline rt_status fake_elf_compile(void *user, const hot_kernel_source *src,
                                         hot_compile_result *out, char *err, size_t errlen) {
  rt_status r = fake_compile(user, src, out, err, errlen);
  if (r == RT_OK) memcpy(out->cubin, "\177ELF", 4);
  return r;
}
#define FAKE_ELF_COMPILER(f) {&(f), fake_version, "fake-options", fake_elf_compile}

#endif

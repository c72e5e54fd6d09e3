/* test_pack.c — kernel packs (pack.h): round trip, duplicates, every kind of damage (truncation
 * at every byte, each byte flipped, lengths broken under a valid checksum), truncation told
 * apart from corruption in every field, files that are not packs, concurrent writers of one
 * pack, and the kernel cache serving a pack: hits without compiles, key and compiler mismatches
 * are misses. */
#include "rt_util.h"

#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>

#include "cache.h"
#include "le.h"
#include "pack.h"

static const char *SRC_A = "extern \"C\" __global__ void ka(float *x) { x[0] = 1.f; }\n";
static const char *SRC_B = "extern \"C\" __global__ void kb(float *x) { x[0] = 2.f; }\n";
static const char *NAME_A[] = {"ka"};
static const char *NAME_B[] = {"kb"};

/* A cache with the fake compiler of version `ver`, memory only. */
static hot_kcache *open_cache(fake_cc *f, hot_compiler *cc) {
  hot_kcache_config cfg = {0};
  cfg.disk = -1;
  cfg.compiler = cc;
  (void)f;
  hot_kcache *kc = NULL;
  char err[512];
  ck_assert_msg(kcache_open(&kc, &cfg, err, sizeof err) == RT_OK, "%s", err);
  return kc;
}

/* Compiles A and B (sm_90) with a fake compiler and writes them into a pack at path. */
static void make_pack(const char *path, const char *version) {
  fake_cc f = {0, 0, 300, version, 0};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache *kc = open_cache(&f, &cc);
  hot_kernel_source a = {"hot.cu", SRC_A, NAME_A, 1, "sm_90", NULL, 0};
  hot_kernel_source b = {"hot.cu", SRC_B, NAME_B, 1, "sm_90", NULL, 0};
  const hot_kernel_binary *ba, *bb;
  char err[512];
  ck_assert_int_eq(kcache_get(kc, &a, &ba, NULL, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_get(kc, &b, &bb, NULL, NULL, err, sizeof err), RT_OK);
  hot_pack_entry e[3];
  const hot_kernel_binary *bins[3] = {ba, bb, ba}; /* the duplicate is written once */
  for (int i = 0; i < 3; ++i)
    e[i] = (hot_pack_entry){bins[i]->key, bins[i]->compiler, bins[i]->arch, bins[i]->kernels,
                            bins[i]->n_kernels, bins[i]->cubin, bins[i]->cubin_size,
                            bins[i]->log, bins[i]->compile_ms};
  ck_assert_msg(pack_write(path, e, 3, err, sizeof err) == RT_OK, "%s", err);
  kcache_close(kc);
}

/* A fresh folder (dir, 256 bytes) holding a pack made by make_pack at path ("DIR/k.hotpack"). */
static void new_pack(char *dir, char *path, size_t n) {
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, n, "%s/k.hotpack", dir);
  make_pack(path, "fake-1.0");
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  ck_assert_ptr_nonnull(fp);
  fseek(fp, 0, SEEK_END);
  long sz = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *d = malloc((size_t)sz);
  ck_assert_uint_eq(fread(d, 1, (size_t)sz, fp), (size_t)sz);
  fclose(fp);
  *n = (size_t)sz;
  return d;
}

START_TEST(round_trip) {
  char dir[256], path[400];
  new_pack(dir, path, sizeof path);
  hot_pack *p = NULL;
  char err[512];
  ck_assert_msg(pack_load(path, &p, err, sizeof err) == RT_OK, "%s", err);
  ck_assert_uint_eq(pack_count(p), 2);
  hot_kernel_source a = {"hot.cu", SRC_A, NAME_A, 1, "sm_90", NULL, 0};
  unsigned char want[300];
  fake_bytes(&a, 300, want);
  hot_pack_entry e;
  pack_entry(p, 0, &e);
  ck_assert_str_eq(e.compiler, "fake-1.0");
  ck_assert_str_eq(e.arch, "sm_90");
  ck_assert_uint_eq(e.n_kernels, 1);
  ck_assert_str_eq(e.kernels[0].name, "ka");
  ck_assert_int_eq(e.kernels[0].registers, 32);
  ck_assert_int_eq(e.kernels[0].shared_bytes, 1024);
  ck_assert_uint_eq(e.cubin_size, 300);
  ck_assert_mem_eq(e.cubin, want, 300);
  ck_assert(e.compile_ms > 1.49 && e.compile_ms < 1.51);
  hot_compile_result r;
  char ver[32];
  ck_assert_int_eq(pack_lookup(p, e.key, "fake-1.0", NAME_A, 1, &r, ver), 1);
  ck_assert_str_eq(ver, "fake-1.0");
  ck_assert_mem_eq(r.cubin, want, 300);
  ck_assert_str_eq(r.log, "fake log\n");
  ck_assert_int_eq(r.phases_known, 0);
  nvrtc_result_free(&r);
  ck_assert_int_eq(pack_lookup(p, e.key, NULL, NAME_A, 1, &r, ver), 1); /* any version */
  nvrtc_result_free(&r);
  ck_assert_int_eq(pack_lookup(p, e.key, "fake-2.0", NAME_A, 1, &r, ver), 0);
  ck_assert_int_eq(pack_lookup(p, e.key, "fake-1.0", NAME_B, 1, &r, ver), 0);
  char other[65];
  memcpy(other, e.key, 65);
  other[0] = other[0] == '0' ? '1' : '0';
  ck_assert_int_eq(pack_lookup(p, other, NULL, NAME_A, 1, &r, ver), 0);
  pack_free(p);
  /* an empty pack is valid */
  ck_assert_int_eq(pack_write(path, NULL, 0, err, sizeof err), RT_OK);
  ck_assert_int_eq(pack_load(path, &p, err, sizeof err), RT_OK);
  ck_assert_uint_eq(pack_count(p), 0);
  pack_free(p);
  rm_tree(dir);
}
END_TEST

START_TEST(bad_entries_refused) {
  char err[512];
  hot_kernel_info k = {(char *)"ka", 1, 32, 0, 0, 0, 0};
  unsigned char cubin[4] = {1, 2, 3, 4};
  char key[65];
  memset(key, 'a', 64);
  key[64] = '\0';
  hot_pack_entry good = {key, "nvrtc-13.0", "sm_90", &k, 1, cubin, 4, "", 1.0};
  hot_pack_entry e = good;
  e.key = "XYZ";
  ck_assert_int_eq(pack_write("/tmp/never.hotpack", &e, 1, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "entry 0: key"));
  e = good;
  e.arch = "gfx90";
  ck_assert_int_eq(pack_write("/tmp/never.hotpack", &e, 1, err, sizeof err), RT_ERR_INVALID);
  e = good;
  e.compiler = "nv rtc";
  ck_assert_int_eq(pack_write("/tmp/never.hotpack", &e, 1, err, sizeof err), RT_ERR_INVALID);
  e = good;
  e.cubin_size = 0;
  ck_assert_int_eq(pack_write("/tmp/never.hotpack", &e, 1, err, sizeof err), RT_ERR_INVALID);
  e = good;
  e.n_kernels = 0;
  ck_assert_int_eq(pack_write("/tmp/never.hotpack", &e, 1, err, sizeof err), RT_ERR_INVALID);
  struct stat sb;
  ck_assert_int_ne(stat("/tmp/never.hotpack", &sb), 0);
  ck_assert_int_eq(pack_write("/nonexistent-dir/x.hotpack", &good, 1, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/x.hotpack"));
}
END_TEST

START_TEST(damaged_packs) {
  char dir[256], path[400], err[512];
  new_pack(dir, path, sizeof path);
  size_t n;
  unsigned char *d = read_all(path, &n);
  hot_pack *p = NULL;
  ck_assert_int_eq(pack_parse(d, n, "k.hotpack", &p, err, sizeof err), RT_OK);
  pack_free(p);
  /* truncated at every byte */
  for (size_t len = 0; len < n; ++len) {
    ck_assert_int_eq(pack_parse(d, len, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
    ck_assert_ptr_null(p);
    ck_assert_msg(strncmp(err, "k.hotpack: ", 11) == 0, "%s", err);
  }
  /* a byte appended */
  unsigned char *longer = malloc(n + 1);
  memcpy(longer, d, n);
  longer[n] = 0;
  ck_assert_int_eq(pack_parse(longer, n + 1, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
  free(longer);
  /* every byte flipped: the header's checks or the checksum refuse it */
  for (size_t i = 0; i < n; ++i) {
    d[i] ^= 0x5a;
    ck_assert_msg(pack_parse(d, n, "k.hotpack", &p, err, sizeof err) == RT_ERR_INVALID,
                  "byte %zu flipped was accepted", i);
    d[i] ^= 0x5a;
  }
  /* every body byte changed under a recomputed checksum: the field checks, never a crash or an
   * out-of-bounds read (valgrind runs this suite too) */
  int refused = 0;
  for (size_t i = HOT_PACK_HEADER_BYTES; i < n; ++i) {
    for (int v = 0; v < 2; ++v) {
      unsigned char old = d[i];
      d[i] = v ? 0xff : (unsigned char)(old + 1);
      hash_sha256_digest(d + HOT_PACK_HEADER_BYTES, n - HOT_PACK_HEADER_BYTES, d + 24);
      rt_status st = pack_parse(d, n, "k.hotpack", &p, err, sizeof err);
      ck_assert(st == RT_OK || st == RT_ERR_INVALID);
      if (st == RT_OK) pack_free(p);
      else refused++;
      d[i] = old;
    }
  }
  hash_sha256_digest(d + HOT_PACK_HEADER_BYTES, n - HOT_PACK_HEADER_BYTES, d + 24);
  ck_assert_int_gt(refused, 100);
  /* header fields */
  d[8] = 2;
  ck_assert_int_eq(pack_parse(d, n, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "format 2"));
  d[8] = 1;
  d[0] = 'X';
  ck_assert_int_eq(pack_parse(d, n, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "not a kernel pack"));
  d[0] = 'H';
  /* a damaged file on disk: named in the message */
  d[n / 2] ^= 1;
  FILE *fp = fopen(path, "wb");
  fwrite(d, 1, n, fp);
  fclose(fp);
  ck_assert_int_eq(pack_load(path, &p, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, path) && strstr(err, "checksum"), "%s", err);
  free(d);
  /* not a file */
  ck_assert_int_eq(pack_load(dir, &p, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
  snprintf(path, sizeof path, "%s/missing.hotpack", dir);
  ck_assert_int_eq(pack_load(path, &p, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err, path));
  ck_assert_int_eq(pack_load(NULL, &p, err, sizeof err), RT_ERR_INVALID);
  rm_tree(dir);
}
END_TEST

/* The pack's body cut at byte `len` under a header rewritten to match (its size and checksum;
 * the entry count kept): what a reader meets when an entry ends early. */
static rt_status parse_cut(const unsigned char *d, size_t len, char *err, size_t errlen) {
  unsigned char *c = malloc(HOT_PACK_HEADER_BYTES + len + 1);
  memcpy(c, d, HOT_PACK_HEADER_BYTES + len);
  hot_le_put(c + 16, len, 8);
  hash_sha256_digest(c + HOT_PACK_HEADER_BYTES, len, c + 24);
  hot_pack *p = NULL;
  rt_status st = pack_parse(c, HOT_PACK_HEADER_BYTES + len, "k.hotpack", &p, err, errlen);
  ck_assert_ptr_null(p);
  free(c);
  return st;
}

/* Truncation is reported as truncation, in every field of an entry and in the header, and a
 * field whose value is wrong as corruption: never one for the other. */
START_TEST(truncation_named) {
  char dir[256], path[400], err[512];
  new_pack(dir, path, sizeof path);
  size_t n;
  unsigned char *d = read_all(path, &n);
  const size_t body = n - HOT_PACK_HEADER_BYTES;
  /* every field of an entry, each met by some cut */
  static const char *const field[] = {"truncated key", "truncated compiler version",
                                      "truncated arch", "truncated kernel count",
                                      "truncated kernel name", "truncated kernel figures",
                                      "truncated compile time", "truncated CUBIN",
                                      "truncated compile log"};
  enum { NF = sizeof field / sizeof field[0] };
  int seen[NF] = {0};
  for (size_t len = 0; len < body; ++len) {
    ck_assert_int_eq(parse_cut(d, len, err, sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strncmp(err, "k.hotpack: kernel pack entry ", 29) == 0, "cut at %zu: %s", len,
                  err);
    int which = -1;
    for (int f = 0; f < NF; ++f)
      if (strstr(err, field[f]) && (which < 0 || strlen(field[f]) > strlen(field[which])))
        which = f;
    ck_assert_msg(which >= 0 && !strstr(err, "bad"), "cut at %zu: %s", len, err);
    seen[which]++;
  }
  for (int f = 0; f < NF; ++f) ck_assert_msg(seen[f] > 0, "no cut met '%s'", field[f]);
  /* the header cut short: an empty file, then every prefix of it */
  hot_pack *p = NULL;
  ck_assert_int_eq(pack_parse(d, 0, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "empty file"), "%s", err);
  for (size_t len = 1; len < HOT_PACK_HEADER_BYTES; ++len) {
    ck_assert_int_eq(pack_parse(d, len, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strstr(err, "k.hotpack: truncated kernel pack"), "%zu bytes: %s", len, err);
  }
  /* the file cut short, its header as written */
  ck_assert_int_eq(pack_parse(d, n - 1, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "truncated"), "%s", err);
  /* a foreign file of any length from its first byte unlike the magic: not a pack, never
   * "truncated" */
  static const char foreign[] = "HOTPACX and more than fifty-six bytes of something else entirely";
  for (size_t len = 7; len < sizeof foreign; ++len) {
    ck_assert_int_eq(pack_parse((const unsigned char *)foreign, len, "k.hotpack", &p, err,
                                sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strstr(err, "not a kernel pack (wrong magic)"), "%zu bytes: %s", len, err);
  }
  /* corrupt values under a valid checksum: "bad ...", never "truncated" */
  const size_t at_comp = HOT_PACK_HEADER_BYTES + 64, at_arch = at_comp + 1 + d[at_comp],
               at_count = at_arch + 1 + d[at_arch], at_name = at_count + 4;
  const size_t at_time = at_name + 2 + (d[at_name] | (size_t)d[at_name + 1] << 8) + 20,
               at_cubin = at_time + 8;
  const struct { size_t at; int bytes; uint64_t v; const char *want; } bad[] = {
      {at_comp, 1, 200, "bad compiler version"}, {at_arch, 1, 200, "bad arch"},
      {at_name, 2, 0, "bad kernel name"}, {at_name, 2, 300, "bad kernel name"},
      {at_cubin, 8, 0, "bad CUBIN length"}, {at_cubin, 8, (uint64_t)1 << 40, "bad CUBIN length"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    unsigned char *c = malloc(n);
    memcpy(c, d, n);
    hot_le_put(c + bad[i].at, bad[i].v, bad[i].bytes);
    hash_sha256_digest(c + HOT_PACK_HEADER_BYTES, body, c + 24);
    ck_assert_int_eq(pack_parse(c, n, "k.hotpack", &p, err, sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strstr(err, bad[i].want) && !strstr(err, "truncated"), "case %zu: %s", i, err);
    free(c);
  }
  free(d);
  rm_tree(dir);
}
END_TEST

/* Writers of one pack at once (threads here; processes alike): each writes through a file of its
 * own renamed into place, so every write succeeds, the pack is always one writer's whole image,
 * and no temporary file is left. Even threads write both entries, odd ones the second alone. */
enum { WRITERS = 4, WRITES = 25 };
typedef struct {
  const char *path;
  hot_pack_entry e[2];
  int t, failed;
  char err[512];
} pack_writer;

static void *write_many(void *arg) {
  pack_writer *w = arg;
  for (int i = 0; i < WRITES && !w->failed; ++i)
    w->failed = pack_write(w->path, w->t % 2 ? &w->e[1] : w->e, w->t % 2 ? 1 : 2, w->err,
                           sizeof w->err) != RT_OK;
  return NULL;
}

START_TEST(concurrent_writers) {
  char dir[256], path[400], err[512];
  new_pack(dir, path, sizeof path);
  hot_pack *src = NULL;
  ck_assert_msg(pack_load(path, &src, err, sizeof err) == RT_OK, "%s", err);
  pack_writer w[WRITERS];
  pthread_t th[WRITERS];
  for (int t = 0; t < WRITERS; ++t) {
    memset(&w[t], 0, sizeof w[t]);
    w[t].path = path;
    w[t].t = t;
    pack_entry(src, 0, &w[t].e[0]);
    pack_entry(src, 1, &w[t].e[1]);
    ck_assert_int_eq(pthread_create(&th[t], NULL, write_many, &w[t]), 0);
  }
  for (int t = 0; t < WRITERS; ++t) {
    pthread_join(th[t], NULL);
    ck_assert_msg(!w[t].failed, "writer %d: %s", t, w[t].err);
  }
  hot_pack *p = NULL;
  ck_assert_msg(pack_load(path, &p, err, sizeof err) == RT_OK, "%s", err);
  ck_assert(pack_count(p) == 1 || pack_count(p) == 2);
  pack_free(p);
  pack_free(src);
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int files = 0;
  for (struct dirent *de; (de = readdir(d)) != NULL;)
    if (de->d_name[0] != '.') {
      ck_assert_msg(strcmp(de->d_name, "k.hotpack") == 0, "left behind: %s", de->d_name);
      ++files;
    }
  closedir(d);
  ck_assert_int_eq(files, 1);
  rm_tree(dir);
}
END_TEST

START_TEST(cache_serves_pack) {
  char dir[256], path[400], err[512];
  new_pack(dir, path, sizeof path);
  hot_kernel_source a = {"hot.cu", SRC_A, NAME_A, 1, "sm_90", NULL, 0};
  hot_kernel_source b = {"hot.cu", SRC_B, NAME_B, 1, "sm_90", NULL, 0};
  hot_kernel_source a80 = {"hot.cu", SRC_A, NAME_A, 1, "sm_80", NULL, 0}; /* not in the pack */
  const hot_kernel_binary *bin;
  hot_kcache_origin how;
  hot_kcache_stats st;
  unsigned char want[300];
  fake_bytes(&a, 300, want);

  /* same compiler: hits, no compiles */
  fake_cc f = {0, 0, 300, "fake-1.0", 0};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache *kc = open_cache(&f, &cc);
  hot_pack *p;
  ck_assert_int_eq(pack_load(path, &p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_add_pack(kc, p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_get(kc, &a, &bin, &how, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(how, HOT_KCACHE_PACK);
  ck_assert_int_eq(bin->origin, HOT_KCACHE_PACK);
  ck_assert_mem_eq(bin->cubin, want, 300);
  ck_assert_int_eq(bin->kernels[0].registers, 32);
  ck_assert_int_eq(kcache_get(kc, &a, &bin, &how, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(how, HOT_KCACHE_MEMORY);
  ck_assert_int_eq(kcache_get(kc, &b, &bin, &how, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(how, HOT_KCACHE_PACK);
  ck_assert_int_eq(f.compiles, 0);
  ck_assert_int_eq(kcache_get(kc, &a80, &bin, &how, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(how, HOT_KCACHE_COMPILED); /* another arch: another key, a miss */
  ck_assert_int_eq(f.compiles, 1);
  kcache_stats_get(kc, &st);
  ck_assert_uint_eq(st.pack_hits, 2);
  ck_assert_uint_eq(st.compiles, 1);
  ck_assert_str_eq(kcache_origin_name(HOT_KCACHE_PACK), "pack");
  ck_assert_int_eq(kcache_add_pack(kc, NULL, err, sizeof err), RT_ERR_INVALID);
  kcache_close(kc);

  /* another compiler version: the pack is not used (a miss, no error) */
  fake_cc g = {0, 0, 300, "fake-2.0", 0};
  hot_compiler cg = FAKE_COMPILER(g);
  kc = open_cache(&g, &cg);
  ck_assert_int_eq(pack_load(path, &p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_add_pack(kc, p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_get(kc, &a, &bin, &how, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(how, HOT_KCACHE_COMPILED);
  ck_assert_int_eq(g.compiles, 1);
  kcache_close(kc);

  /* no compiler at all (version unknown): the pack serves, as the disk cache does */
  fake_cc n0 = {0, 1, 300, NULL, 0};
  hot_compiler cn = FAKE_COMPILER(n0);
  kc = open_cache(&n0, &cn);
  ck_assert_int_eq(pack_load(path, &p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_add_pack(kc, p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_get(kc, &b, &bin, &how, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(how, HOT_KCACHE_PACK);
  ck_assert_str_eq(bin->compiler, "fake-1.0");
  ck_assert_int_eq(n0.compiles, 0);
  /* a different source (other generator output): a miss, compiled (here: fails, forced) */
  hot_kernel_source b2 = {"hot.cu", SRC_A, NAME_B, 1, "sm_90", NULL, 0};
  ck_assert_int_eq(kcache_get(kc, &b2, &bin, &how, NULL, err, sizeof err), RT_ERR_COMPILE);
  kcache_close(kc);

  /* a disk cache is not written by pack hits */
  char cdir[256];
  ck_assert_ptr_nonnull(tmp_dir(cdir));
  hot_kcache_config cfg = {0};
  cfg.dir = cdir;
  cfg.compiler = &cc;
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  ck_assert_int_eq(pack_load(path, &p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_add_pack(kc, p, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_get(kc, &a, &bin, &how, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(how, HOT_KCACHE_PACK);
  kcache_stats_get(kc, &st);
  ck_assert_uint_eq(st.disk_writes, 0);
  kcache_close(kc);
  rm_tree(cdir);
  rm_tree(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_pack");
  TCase *t = tcase_create("pack");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, round_trip);
  tcase_add_test(t, bad_entries_refused);
  tcase_add_test(t, damaged_packs);
  tcase_add_test(t, truncation_named);
  tcase_add_test(t, concurrent_writers);
  tcase_add_test(t, cache_serves_pack);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

/* test_cache.c — the kernel cache: real NVRTC round trip (compile -> memory -> disk in a fresh
 * cache object with zero compiles), corrupt/truncated/wrong-format entries, concurrent fill by
 * forked processes, LRU eviction (a memory hit refreshes the entry too), HOT_NO_DISK_CACHE, key
 * sensitivity, forced failures. */
#include "rt_util.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "cache.h"
#include "cuda_api.h" /* HOT_CUDA_PATH_MAX */
#include "env.h"
#include "pack.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *NAMES[] = {"k_one", "k_two"};

static hot_kernel_source fake_src(const char *text) {
  hot_kernel_source s = {"fake.cu", text, NAMES, 2, "sm_90", NULL, 0};
  return s;
}

static hot_kcache *open_fake(const char *dir, fake_cc *f, const hot_compiler *cc, uint64_t max) {
  (void)f;
  hot_kcache_config cfg = {.dir = dir, .disk = 1, .compiler = cc, .max_bytes = max};
  hot_kcache *kc = NULL;
  char err[512];
  ck_assert_msg(kcache_open(&kc, &cfg, err, sizeof err) == RT_OK, "%s", err);
  return kc;
}

static int count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name), sl = strlen(suffix);
    if (de->d_name[0] == '.' && strcmp(suffix, ".tmp") != 0) continue;
    if (strcmp(suffix, ".tmp") == 0 ? strncmp(de->d_name, ".tmp-", 5) == 0
                                    : (l > sl && strcmp(de->d_name + l - sl, suffix) == 0))
      n++;
  }
  if (d) closedir(d);
  return n;
}

/* ---- a real NVRTC compile through the cache, counted by a wrapping compiler ----------------- */
typedef struct {
  int compiles;
} counting;

static rt_status count_version(void *u, char *b, size_t n, char *e, size_t el) {
  (void)u;
  return nvrtc_compiler()->version(NULL, b, n, e, el);
}
static rt_status count_compile(void *u, const hot_kernel_source *s, hot_compile_result *r, char *e,
                               size_t el) {
  ((counting *)u)->compiles++;
  return nvrtc_compile(s, r, e, el);
}

START_TEST(real_nvrtc_roundtrip) {
  char err[512];
  if (cuda_nvrtc_get(NULL, err, sizeof err) != RT_OK) {
    printf("SKIP: real_nvrtc_roundtrip: %s\n", err);
    return;
  }
  char dir[256];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  counting cnt = {0};
  hot_compiler cc = {&cnt, count_version, nvrtc_compiler()->fixed_options, count_compile};
  const char *text = "extern \"C\" __global__ void scale(float *y, float a, int n) {\n"
                     "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= a; }\n";
  const char *names[] = {"scale"};
  hot_kernel_source src = {"scale.cu", text, names, 1, "sm_80", NULL, 0};

  hot_kcache *kc = open_fake(dir, NULL, &cc, 0);
  const hot_kernel_binary *b1 = NULL, *b2 = NULL, *b3 = NULL;
  hot_kcache_origin how;
  double t0 = now_ms();
  ck_assert_msg(kcache_get(kc, &src, &b1, &how, NULL, err, sizeof err) == RT_OK, "%s", err);
  double t1 = now_ms();
  ck_assert_int_eq(how, HOT_KCACHE_COMPILED);
  ck_assert_int_eq(cnt.compiles, 1);
  ck_assert_int_gt(b1->kernels[0].registers, 0);
  ck_assert_int_eq(b1->kernels[0].spill_store_bytes, 0);
  ck_assert_ptr_nonnull(strstr(b1->compiler, "nvrtc-"));
  ck_assert_msg(kcache_get(kc, &src, &b2, &how, NULL, err, sizeof err) == RT_OK, "%s", err);
  double t2 = now_ms();
  ck_assert_int_eq(how, HOT_KCACHE_MEMORY);
  ck_assert_ptr_eq(b1, b2);
  ck_assert_int_eq(cnt.compiles, 1);

  /* A second cache object: fresh memory, same directory -> found on disk, nothing compiled. */
  hot_kcache *kc2 = open_fake(dir, NULL, &cc, 0);
  double t3 = now_ms();
  ck_assert_msg(kcache_get(kc2, &src, &b3, &how, NULL, err, sizeof err) == RT_OK, "%s", err);
  double t4 = now_ms();
  ck_assert_int_eq(how, HOT_KCACHE_DISK);
  ck_assert_int_eq(cnt.compiles, 1);
  ck_assert_uint_eq(b3->cubin_size, b1->cubin_size);
  ck_assert_mem_eq(b3->cubin, b1->cubin, b1->cubin_size);
  ck_assert_str_eq(b3->log, b1->log);
  ck_assert_int_eq(b3->kernels[0].registers, b1->kernels[0].registers);
  ck_assert_str_eq(b3->kernels[0].name, "scale");
  ck_assert_str_eq(b3->key, b1->key);
  ck_assert(b3->compile_ms == b1->compile_ms); /* one stored grid: memory and disk agree */
  hot_kcache_stats st;
  kcache_stats_get(kc2, &st);
  ck_assert_uint_eq(st.compiles, 0);
  ck_assert_uint_eq(st.disk_hits, 1);
  kcache_stats_get(kc, &st);
  ck_assert_uint_eq(st.compiles, 1);
  ck_assert_uint_eq(st.memory_hits, 1);
  ck_assert_uint_eq(st.disk_writes, 1);
  printf("cache: compile+store %.1f ms (nvrtc %.1f ms), memory hit %.3f ms, disk hit %.3f ms\n",
         t1 - t0, b1->compile_ms, t2 - t1, t4 - t3);

  /* The readable record is in the entry. */
  char path[4096];
  ck_assert_int_eq(kcache_entry_path(kc2, &src, path, sizeof path, err, sizeof err), RT_OK);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  static char body[65536];
  size_t n = fread(body, 1, sizeof body - 1, f);
  fclose(f);
  body[n] = '\0';
  ck_assert_ptr_nonnull(strstr(body + 104, "arch sm_80\n"));
  ck_assert_ptr_nonnull(strstr(body + 104, "kernel scale registers "));
  kcache_close(kc);
  kcache_close(kc2);
  rm_tree(dir);
}
END_TEST

/* ---- damaged entries ---------------------------------------------------------------------- */
typedef enum { FLIP_PAYLOAD, TRUNCATE, WRONG_FORMAT, EMPTY, FLIP_KEY } damage;

static void damage_and_recover(damage how_bad) {
  char dir[256], err[512], path[4096];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1", .size = 5000};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kernel_source src = fake_src("damaged entry test");
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  const hot_kernel_binary *b;
  ck_assert_int_eq(kcache_get(kc, &src, &b, NULL, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_entry_path(kc, &src, path, sizeof path, err, sizeof err), RT_OK);
  kcache_close(kc);

  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  unsigned char byte;
  off_t at = how_bad == WRONG_FORMAT ? 8 : how_bad == FLIP_KEY ? 50 : sb.st_size - 2500;
  switch (how_bad) {
  case TRUNCATE: ck_assert_int_eq(ftruncate(fd, sb.st_size - 100), 0); break;
  case EMPTY: ck_assert_int_eq(ftruncate(fd, 0), 0); break;
  default:
    ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
    byte ^= 0x5a;
    ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
  }
  close(fd);

  f.compiles = 0;
  kc = open_fake(dir, &f, &cc, 0);
  hot_kcache_origin o;
  ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(o, HOT_KCACHE_COMPILED);  /* the damaged entry was a miss */
  ck_assert_int_eq(f.compiles, 1);
  unsigned char expect[5000];
  fake_bytes(&src, sizeof expect, expect);
  ck_assert_mem_eq(b->cubin, expect, sizeof expect);
  hot_kcache_stats st;
  kcache_stats_get(kc, &st);
  ck_assert_uint_eq(st.disk_rejects, 1);
  ck_assert_uint_eq(st.disk_writes, 1);
  kcache_close(kc);

  /* ... and replaced: the next fresh cache finds a good entry. */
  f.compiles = 0;
  kc = open_fake(dir, &f, &cc, 0);
  ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(o, HOT_KCACHE_DISK);
  ck_assert_int_eq(f.compiles, 0);
  ck_assert_mem_eq(b->cubin, expect, sizeof expect);
  kcache_close(kc);
  ck_assert_int_eq(count_files(dir, ".tmp"), 0);
  rm_tree(dir);
}

START_TEST(corrupt_entry) { damage_and_recover(FLIP_PAYLOAD); }
END_TEST
START_TEST(truncated_entry) { damage_and_recover(TRUNCATE); }
END_TEST
START_TEST(wrong_format_entry) { damage_and_recover(WRONG_FORMAT); }
END_TEST
START_TEST(empty_entry) { damage_and_recover(EMPTY); }
END_TEST
START_TEST(wrong_key_entry) { damage_and_recover(FLIP_KEY); }
END_TEST

/* ---- concurrent fill ---------------------------------------------------------------------- */
#define PROCS 6
#define KEYS 10

static void key_text(int k, char buf[64]) { snprintf(buf, 64, "concurrent key %d", k); }

START_TEST(concurrent_fill) {
  char dir[256];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  const size_t size = 300000;  /* big enough that writes overlap */
  pid_t kids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      fake_cc f = {.version = "fake-1", .size = size};
      hot_compiler cc = FAKE_COMPILER(f);
      hot_kcache_config cfg = {.dir = dir, .disk = 1, .compiler = &cc};
      hot_kcache *kc = NULL;
      char err[512];
      int bad = kcache_open(&kc, &cfg, err, sizeof err) != RT_OK;
      /* keys 0..5 shared by all (in a different order per process), 6..9: two processes each */
      for (int i = 0; i < KEYS && !bad; i++) {
        int k = (i + p) % KEYS;
        if (k >= 6 && k % PROCS != p % 4 && (k + 1) % PROCS != p % 4) continue;
        char text[64];
        key_text(k, text);
        hot_kernel_source src = fake_src(text);
        const hot_kernel_binary *b;
        if (kcache_get(kc, &src, &b, NULL, NULL, err, sizeof err) != RT_OK) bad = 1;
        unsigned char *want = malloc(size);
        fake_bytes(&src, size, want);
        if (!bad && (b->cubin_size != size || memcmp(b->cubin, want, size) != 0)) bad = 1;
        free(want);
      }
      kcache_close(kc);
      _exit(bad);
    }
    kids[p] = pid;
  }
  for (int p = 0; p < PROCS; p++) {
    int ws = 0;
    ck_assert_int_eq(waitpid(kids[p], &ws, 0), kids[p]);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child %d failed", p);
  }
  ck_assert_int_eq(count_files(dir, ".tmp"), 0);

  /* Every entry loads and verifies, with zero compiles. */
  fake_cc f = {.version = "fake-1", .size = size};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  unsigned char *want = malloc(size);
  int loaded = 0;
  for (int k = 0; k < KEYS; k++) {
    char text[64], err[512], path[4096];
    key_text(k, text);
    hot_kernel_source src = fake_src(text);
    ck_assert_int_eq(kcache_entry_path(kc, &src, path, sizeof path, err, sizeof err), RT_OK);
    if (access(path, F_OK) != 0) continue;  /* a key no process asked for */
    const hot_kernel_binary *b;
    hot_kcache_origin o;
    ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
    ck_assert_int_eq(o, HOT_KCACHE_DISK);
    fake_bytes(&src, size, want);
    ck_assert_mem_eq(b->cubin, want, size);
    loaded++;
  }
  free(want);
  ck_assert_int_eq(f.compiles, 0);
  ck_assert_int_ge(loaded, 6);
  ck_assert_int_eq(count_files(dir, ".hotk"), loaded);
  kcache_close(kc);
  rm_tree(dir);
}
END_TEST

/* ---- threads sharing one cache -------------------------------------------------------------- */
typedef struct {
  hot_kcache *kc;
  int id;
  int bad;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int i = 0; i < 12; i++) {
    char text[64], err[512];
    key_text((i + w->id) % 6, text);
    hot_kernel_source src = fake_src(text);
    const hot_kernel_binary *b;
    unsigned char want[2000];
    if (kcache_get(w->kc, &src, &b, NULL, NULL, err, sizeof err) != RT_OK) w->bad = 1;
    fake_bytes(&src, sizeof want, want);
    if (!w->bad && (b->cubin_size != sizeof want || memcmp(b->cubin, want, sizeof want))) w->bad = 1;
  }
  return NULL;
}

START_TEST(threads_share_a_cache) {
  char dir[256];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1", .size = 2000};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  pthread_t t[8];
  worker w[8];
  for (int i = 0; i < 8; i++) {
    w[i] = (worker){kc, i, 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < 8; i++) {
    ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    ck_assert_int_eq(w[i].bad, 0);
  }
  hot_kcache_stats st;
  kcache_stats_get(kc, &st);
  ck_assert_uint_eq(st.compiles + st.memory_hits + st.disk_hits, 8 * 12);
  ck_assert_uint_ge(st.compiles, 6);  /* a race may compile a key twice; one result is kept */
  ck_assert_int_eq(count_files(dir, ".hotk"), 6);
  kcache_close(kc);
  rm_tree(dir);
}
END_TEST

/* ---- LRU ---------------------------------------------------------------------------------- */
/* Adds texts[0..2] as entries A, B, C (src, their paths) and ages them explicitly, A oldest, so
 * the LRU order does not depend on the file system's timestamp resolution. */
static void add_aged(hot_kcache *kc, hot_kernel_source src[4], const char *const texts[4],
                     char path[4][4096]) {
  char err[512];
  const hot_kernel_binary *b;
  for (int i = 0; i < 3; i++) {
    src[i] = fake_src(texts[i]);
    ck_assert_int_eq(kcache_get(kc, &src[i], &b, NULL, NULL, err, sizeof err), RT_OK);
    ck_assert_int_eq(kcache_entry_path(kc, &src[i], path[i], sizeof path[i], err, sizeof err),
                     RT_OK);
    struct timespec ts[2] = {{1000000 + i * 10, 0}, {1000000 + i * 10, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path[i], ts, 0), 0);
  }
}

/* A, B, C added and aged (A oldest), then A hit — from a fresh cache (reopen: a disk hit) or in
 * the process that holds it in memory (a memory hit refreshes its entry on disk too) — makes A
 * the most recent, so adding D evicts B, the least recently used; asking for B again compiles
 * it. */
static void lru_case(int reopen) {
  char dir[256], err[512], path[4][4096];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1", .size = 100000};
  hot_compiler cc = FAKE_COMPILER(f);
  const uint64_t bound = 350000; /* three entries fit, four do not */
  hot_kernel_source src[4];
  const char *texts[4] = {"lru A", "lru B", "lru C", "lru D"};
  hot_kcache *kc = open_fake(dir, &f, &cc, bound);
  const hot_kernel_binary *b;
  add_aged(kc, src, texts, path);
  if (reopen) {
    kcache_close(kc);
    ck_assert_int_eq(count_files(dir, ".hotk"), 3);
    kc = open_fake(dir, &f, &cc, bound);
  }
  hot_kcache_origin o;
  ck_assert_int_eq(kcache_get(kc, &src[0], &b, &o, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(o, reopen ? HOT_KCACHE_DISK : HOT_KCACHE_MEMORY);
  src[3] = fake_src(texts[3]);
  ck_assert_int_eq(kcache_get(kc, &src[3], &b, NULL, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_entry_path(kc, &src[3], path[3], sizeof path[3], err, sizeof err),
                   RT_OK);
  ck_assert_msg(access(path[0], F_OK) == 0, "A, used a moment ago, was evicted (reopen %d)", reopen);
  ck_assert_int_ne(access(path[1], F_OK), 0);
  ck_assert_int_eq(access(path[2], F_OK), 0);
  ck_assert_int_eq(access(path[3], F_OK), 0);
  hot_kcache_stats st;
  kcache_stats_get(kc, &st);
  ck_assert_uint_eq(st.evictions, 1);
  if (reopen) { /* B is gone from the disk (and was never in this cache's memory): compiled */
    int before = f.compiles;
    ck_assert_int_eq(kcache_get(kc, &src[1], &b, &o, NULL, err, sizeof err), RT_OK);
    ck_assert_int_eq(o, HOT_KCACHE_COMPILED);
    ck_assert_int_eq(f.compiles, before + 1);
  }
  kcache_close(kc);
  rm_tree(dir);
}

START_TEST(lru_eviction) { lru_case(1); }
END_TEST

START_TEST(lru_memory_hit) { lru_case(0); }
END_TEST

START_TEST(env_max_mb) {
  char dir[256], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  setenv("HOT_CACHE_MAX_MB", "1", 1);
  fake_cc f = {.version = "fake-1", .size = 400000};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  const hot_kernel_binary *b;
  char text[4][16];
  for (int i = 0; i < 4; i++) {
    snprintf(text[i], sizeof text[i], "mb %d", i);
    hot_kernel_source s = fake_src(text[i]);
    ck_assert_int_eq(kcache_get(kc, &s, &b, NULL, NULL, err, sizeof err), RT_OK);
  }
  ck_assert_int_eq(count_files(dir, ".hotk"), 2);  /* 2 x 400 kB fit in 1 MiB, 3 do not */
  kcache_close(kc);
  rm_tree(dir);
}
END_TEST

/* ---- no disk, directories ----------------------------------------------------------------- */
START_TEST(no_disk_cache_env) {
  char dir[256], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  setenv("HOT_NO_DISK_CACHE", "1", 1);
  fake_cc f = {.version = "fake-1"};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache_config cfg = {.dir = dir, .compiler = &cc};
  hot_kcache *kc = NULL;
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  ck_assert_ptr_null(kcache_dir(kc));
  hot_kernel_source src = fake_src("memory only");
  const hot_kernel_binary *b;
  hot_kcache_origin o;
  ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(o, HOT_KCACHE_COMPILED);
  ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(o, HOT_KCACHE_MEMORY);
  char path[4096];
  ck_assert_int_eq(kcache_entry_path(kc, &src, path, sizeof path, err, sizeof err),
                   RT_ERR_INVALID);
  kcache_close(kc);
  ck_assert_int_eq(count_files(dir, ".hotk"), 0);
  /* disk = 1 overrides the variable. */
  cfg.disk = 1;
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  ck_assert_str_eq(kcache_dir(kc), dir);
  kcache_close(kc);
  rm_tree(dir);
}
END_TEST

START_TEST(directory_from_env) {
  char dir[256], want[512], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  unsetenv("HOT_NO_DISK_CACHE");
  unsetenv("HOT_CACHE_DIR");
  setenv("XDG_CACHE_HOME", dir, 1);
  hot_kcache *kc = NULL;
  ck_assert_int_eq(kcache_open(&kc, NULL, err, sizeof err), RT_OK);
  snprintf(want, sizeof want, "%s/hot", dir);
  ck_assert_str_eq(kcache_dir(kc), want);
  kcache_close(kc);
  snprintf(want, sizeof want, "%s/a/b/c", dir);
  setenv("HOT_CACHE_DIR", want, 1);
  ck_assert_int_eq(kcache_open(&kc, NULL, err, sizeof err), RT_OK);
  ck_assert_str_eq(kcache_dir(kc), want);  /* created with its parents */
  kcache_close(kc);
  /* A directory that cannot exist: a clear error naming it and the way out. */
  snprintf(want, sizeof want, "%s/hot/file", dir);
  FILE *fp = fopen(want, "w");
  ck_assert_ptr_nonnull(fp);
  fclose(fp);
  char sub[600];
  snprintf(sub, sizeof sub, "%s/below", want);
  hot_kcache_config cfg = {.dir = sub};
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_ERR_IO);
  ck_assert_ptr_null(kc);
  ck_assert_ptr_nonnull(strstr(err, sub));
  ck_assert_ptr_nonnull(strstr(err, "HOT_NO_DISK_CACHE"));
  rm_tree(dir);
}
END_TEST


/* ---- what may stand in an entry's place ---------------------------------------------------- */
typedef enum { ODD_FIFO, ODD_EMPTY_DIR, ODD_FULL_DIR, ODD_LINK_TO_FIFO, ODD_LINK_TO_DEVICE } odd;

static void odd_entry(odd what) {
  char dir[256], err[512], path[4096], other[4400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1", .size = 3000};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kernel_source src = fake_src("odd entry test");
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  ck_assert_int_eq(kcache_entry_path(kc, &src, path, sizeof path, err, sizeof err), RT_OK);
  kcache_close(kc);
  switch (what) {
  case ODD_FIFO: ck_assert_int_eq(mkfifo(path, 0600), 0); break;
  case ODD_EMPTY_DIR: ck_assert_int_eq(mkdir(path, 0700), 0); break;
  case ODD_FULL_DIR:
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(other, sizeof other, "%s/keep-me", path);
    fclose(fopen(other, "w"));
    break;
  case ODD_LINK_TO_FIFO:
    snprintf(other, sizeof other, "%s/a-fifo", dir);
    ck_assert_int_eq(mkfifo(other, 0600), 0);
    ck_assert_int_eq(symlink(other, path), 0);
    break;
  case ODD_LINK_TO_DEVICE: ck_assert_int_eq(symlink("/dev/zero", path), 0); break;
  }
  alarm(20); /* a blocking open would hang here: fail instead */
  for (int round = 0; round < 2; ++round) {
    f.compiles = 0;
    kc = open_fake(dir, &f, &cc, 0);
    const hot_kernel_binary *b;
    hot_kcache_origin o;
    ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
    hot_kcache_stats st;
    kcache_stats_get(kc, &st);
    if (round == 0) { /* a miss, counted as a reject, and the entry written in its place */
      ck_assert_int_eq(o, HOT_KCACHE_COMPILED);
      ck_assert_int_eq(f.compiles, 1);
      ck_assert_uint_eq(st.disk_rejects, 1);
      ck_assert_uint_eq(st.disk_writes, 1);
    } else { /* repaired: the next run is a disk hit */
      ck_assert_int_eq(o, HOT_KCACHE_DISK);
      ck_assert_int_eq(f.compiles, 0);
    }
    kcache_close(kc);
  }
  alarm(0);
  struct stat sb;
  ck_assert_int_eq(lstat(path, &sb), 0);
  ck_assert(S_ISREG(sb.st_mode));
  if (what == ODD_FULL_DIR) { /* moved aside with its content, never deleted */
    DIR *d = opendir(dir);
    struct dirent *de;
    int found = 0;
    while ((de = readdir(d)) != NULL)
      if (strncmp(de->d_name, ".displaced-", 11) == 0) {
        snprintf(other, sizeof other, "%s/%s/keep-me", dir, de->d_name);
        found = access(other, F_OK) == 0;
      }
    closedir(d);
    ck_assert_msg(found, "the directory in the way was not kept aside");
  }
  ck_assert_int_eq(count_files(dir, ".tmp"), 0);
  rm_tree(dir);
}

START_TEST(fifo_in_entry_place) { odd_entry(ODD_FIFO); }
END_TEST
START_TEST(empty_dir_in_entry_place) { odd_entry(ODD_EMPTY_DIR); }
END_TEST
START_TEST(full_dir_in_entry_place) { odd_entry(ODD_FULL_DIR); }
END_TEST
START_TEST(link_to_fifo_in_entry_place) { odd_entry(ODD_LINK_TO_FIFO); }
END_TEST
START_TEST(link_to_device_in_entry_place) { odd_entry(ODD_LINK_TO_DEVICE); }
END_TEST

/* A cache whose directory may not be written still serves what it holds. Root ignores file
 * modes, so the mode check runs only for other users; the read-only open itself (what a
 * non-writable directory turns into) is checked for everyone through config.read_only. */
START_TEST(read_only_cache) {
  char dir[256], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1", .size = 2000};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kernel_source src = fake_src("read only test"), miss = fake_src("read only miss");
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  const hot_kernel_binary *b;
  hot_kcache_origin o;
  ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
  kcache_close(kc);
  int as_root = geteuid() == 0;
  for (int how = as_root ? 1 : 0; how < 2; ++how) {
    if (how == 0) ck_assert_int_eq(chmod(dir, 0555), 0);
    f.compiles = 0;
    hot_kcache_config cfg = {.dir = dir, .disk = 1, .compiler = &cc, .read_only = how};
    ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
    ck_assert_int_eq(kcache_read_only(kc), 1);
    ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
    ck_assert_int_eq(o, HOT_KCACHE_DISK);
    ck_assert_int_eq(kcache_get(kc, &miss, &b, &o, NULL, err, sizeof err), RT_OK);
    ck_assert_int_eq(o, HOT_KCACHE_COMPILED); /* compiled into memory only */
    ck_assert_int_eq(f.compiles, 1);
    hot_kcache_stats st;
    kcache_stats_get(kc, &st);
    ck_assert_uint_eq(st.disk_writes, 0);
    kcache_close(kc);
    if (how == 0) ck_assert_int_eq(chmod(dir, 0700), 0);
    ck_assert_int_eq(count_files(dir, ".hotk"), 1);
  }
  if (as_root) printf("NOTE: read_only_cache runs as root: chmod cannot stop root's writes, so "
                      "the non-writable directory is simulated with config.read_only\n");
  rm_tree(dir);
}
END_TEST

/* Every cache variable is parsed strictly: a bad value is an error naming it, never ignored. */
START_TEST(strict_environment) {
  char dir[256], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  setenv("HOT_CACHE_DIR", dir, 1);
  unsetenv("HOT_NO_DISK_CACHE");
  const char *bad_mb[] = {"-1", "abc", "17592186044416", "0", "1x", " 5"};
  hot_kcache *kc = NULL;
  for (size_t i = 0; i < sizeof bad_mb / sizeof *bad_mb; ++i) {
    setenv("HOT_CACHE_MAX_MB", bad_mb[i], 1);
    ck_assert_int_eq(kcache_open(&kc, NULL, err, sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strstr(err, "HOT_CACHE_MAX_MB") && strstr(err, bad_mb[i]), "%s", err);
    ck_assert_ptr_null(kc);
  }
  setenv("HOT_CACHE_MAX_MB", "0x10", 1);
  ck_assert_int_eq(kcache_open(&kc, NULL, err, sizeof err), RT_OK);
  kcache_close(kc);
  unsetenv("HOT_CACHE_MAX_MB");
  setenv("HOT_NO_DISK_CACHE", "maybe", 1);
  ck_assert_int_eq(kcache_open(&kc, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "HOT_NO_DISK_CACHE='maybe'"), "%s", err);
  unsetenv("HOT_NO_DISK_CACHE");
  /* HOT_CACHE_DIR naming a file: the error names the variable */
  char file[300];
  snprintf(file, sizeof file, "%s/plain", dir);
  fclose(fopen(file, "w"));
  setenv("HOT_CACHE_DIR", file, 1);
  ck_assert_int_eq(kcache_open(&kc, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "HOT_CACHE_DIR") && strstr(err, "not a directory"), "%s", err);
  /* ... and below a file: cannot be created, named as the cause */
  char below[400];
  snprintf(below, sizeof below, "%s/sub", file);
  setenv("HOT_CACHE_DIR", below, 1);
  ck_assert_int_eq(kcache_open(&kc, NULL, err, sizeof err), RT_ERR_IO);
  ck_assert_msg(strstr(err, "from HOT_CACHE_DIR"), "%s", err);
  unsetenv("HOT_CACHE_DIR");
  /* the other parsers */
  hot_env e;
  const char *bad_threads[] = {"0", "abc", "65", "-2"};
  for (size_t i = 0; i < 4; ++i) {
    setenv("HOT_JIT_THREADS", bad_threads[i], 1);
    ck_assert_int_eq(env_read(&e, 0, err, sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strstr(err, "HOT_JIT_THREADS"), "%s", err);
  }
  setenv("HOT_JIT_THREADS", "3", 1);
  ck_assert_int_eq(env_read(&e, 0, err, sizeof err), RT_OK);
  ck_assert_int_eq(e.jit_threads, 3);
  unsetenv("HOT_JIT_THREADS");
  /* the CPU backend's variables: refused by name, accepted when valid */
  const char *bad_cpu[][2] = {{"HOT_CPU_THREADS", "0"},    {"HOT_CPU_THREADS", "abc"},
                              {"HOT_CPU_THREADS", "257"},  {"HOT_CPU_THREADS", "-2"},
                              {"HOT_CPU_ISA", "avx3"},     {"HOT_CPU_ISA", "AVX2"},
                              {"HOT_CPU_ISA", "avx512 "}};
  for (size_t i = 0; i < sizeof bad_cpu / sizeof *bad_cpu; ++i) {
    setenv(bad_cpu[i][0], bad_cpu[i][1], 1);
    ck_assert_int_eq(env_read(&e, 0, err, sizeof err), RT_ERR_INVALID);
    ck_assert_msg(strstr(err, bad_cpu[i][0]) && strstr(err, bad_cpu[i][1]), "%s", err);
    unsetenv(bad_cpu[i][0]);
  }
  const char *good_isa[] = {"scalar", "avx2", "avxvnni", "avx-vnni", "avx512", "avx512-vnni",
                            "amx", "amx-int8"};
  setenv("HOT_CPU_THREADS", "256", 1);
  for (size_t i = 0; i < sizeof good_isa / sizeof *good_isa; ++i) {
    setenv("HOT_CPU_ISA", good_isa[i], 1);
    ck_assert_msg(env_read(&e, 0, err, sizeof err) == RT_OK, "HOT_CPU_ISA=%s: %s", good_isa[i], err);
  }
  unsetenv("HOT_CPU_ISA");
  unsetenv("HOT_CPU_THREADS");
  const char *home = getenv("HOT_CUDA_HOME");
  char keep[600] = "";
  if (home) snprintf(keep, sizeof keep, "%s", home);
  setenv("HOT_CUDA_HOME", "/nonexistent-toolkit-folder", 1);
  ck_assert_int_eq(env_read(&e, 0, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "HOT_CUDA_HOME='/nonexistent-toolkit-folder'"), "%s", err);
  /* paths longer than the loaders' buffers are refused, never cut (an existing folder: "/" plus
   * HOT_CUDA_PATH_MAX slashes) */
  static char longp[HOT_CUDA_PATH_MAX + 2];
  memset(longp, '/', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  setenv("HOT_CUDA_HOME", longp, 1);
  ck_assert_int_eq(env_read(&e, 0, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "HOT_CUDA_HOME: longer than"), "%s", err);
  unsetenv("HOT_CUDA_HOME");
  setenv("HOT_CUDA_DRIVER", longp, 1);
  ck_assert_int_eq(env_read(&e, 0, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "HOT_CUDA_DRIVER: longer than"), "%s", err);
  unsetenv("HOT_CUDA_DRIVER");
  if (keep[0]) setenv("HOT_CUDA_HOME", keep, 1);
  else unsetenv("HOT_CUDA_HOME");
  setenv("HOT_JIT_DEBUG", "2", 1);
  ck_assert_int_eq(env_read(&e, 0, err, sizeof err), RT_ERR_INVALID);
  ck_assert_msg(strstr(err, "HOT_JIT_DEBUG='2'"), "%s", err);
  ck_assert_int_eq(env_read(&e, HOT_ENV_JIT_DEBUG, err, sizeof err), RT_OK); /* overridden */
  unsetenv("HOT_JIT_DEBUG");
  rm_tree(dir);
}
END_TEST

/* ---- keys, failures, misuse --------------------------------------------------------------- */
START_TEST(key_covers_everything) {
  char dir[256], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1"};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  const char *names_b[] = {"k_one", "k_three"};
  const char *opt_a[] = {"-DX=1"}, *opt_b[] = {"-DX=2"};
  hot_kernel_source base = fake_src("key test");
  hot_kernel_source v[7];
  for (int i = 0; i < 7; i++) v[i] = base;
  v[1].arch = "sm_90a";
  v[2].kernels = names_b;
  v[3].options = opt_a, v[3].n_options = 1;
  v[4].options = opt_b, v[4].n_options = 1;
  v[5].source = "key test ";
  v[6].program = "other.cu";
  const hot_kernel_binary *b[7];
  for (int i = 0; i < 7; i++)
    ck_assert_int_eq(kcache_get(kc, &v[i], &b[i], NULL, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(f.compiles, 7);
  for (int i = 0; i < 7; i++)
    for (int j = i + 1; j < 7; j++) ck_assert_str_ne(b[i]->key, b[j]->key);
  ck_assert_str_eq(b[1]->arch, "sm_90a");
  kcache_close(kc);
  /* Another generator version or compiler version: other entries, old ones kept. */
  hot_kcache_config cfg = {.dir = dir, .disk = 1, .compiler = &cc, .generator_version = "9.9"};
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_get(kc, &base, &b[0], NULL, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(f.compiles, 8);
  kcache_close(kc);
  f.version = "fake-2";
  kc = open_fake(dir, &f, &cc, 0);
  ck_assert_int_eq(kcache_get(kc, &base, &b[0], NULL, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(f.compiles, 9);
  ck_assert_str_eq(b[0]->compiler, "fake-2");
  kcache_close(kc);
  ck_assert_int_eq(count_files(dir, ".hotk"), 9);
  rm_tree(dir);
}
END_TEST

START_TEST(no_compiler_version_uses_any_entry) {
  /* A machine without NVRTC: the version is unknown, but a filled cache still works. */
  char dir[256], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1"};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kernel_source src = fake_src("seeded elsewhere");
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  const hot_kernel_binary *b;
  ck_assert_int_eq(kcache_get(kc, &src, &b, NULL, NULL, err, sizeof err), RT_OK);
  kcache_close(kc);
  fake_cc g = {.version = NULL, .fail = 1};
  hot_compiler cg = FAKE_COMPILER(g);
  kc = open_fake(dir, &g, &cg, 0);
  hot_kcache_origin o;
  ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(o, HOT_KCACHE_DISK);
  ck_assert_str_eq(b->compiler, "fake-1");
  ck_assert_int_eq(g.compiles, 0);
  ck_assert_int_eq(kcache_get(kc, &src, &b, &o, NULL, err, sizeof err), RT_OK);
  ck_assert_int_eq(o, HOT_KCACHE_MEMORY);
  kcache_close(kc);
  rm_tree(dir);
}
END_TEST

START_TEST(forced_compile_failure) {
  char dir[256], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {.version = "fake-1", .fail = 1};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache *kc = open_fake(dir, &f, &cc, 0);
  hot_kernel_source src = fake_src("will fail first");
  const hot_kernel_binary *b = (const hot_kernel_binary *)1;
  char *log = (char *)1;
  ck_assert_int_eq(kcache_get(kc, &src, &b, NULL, &log, err, sizeof err), RT_ERR_COMPILE);
  ck_assert_ptr_null(b);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(strstr(log, "forced failure"));
  ck_assert_ptr_nonnull(strstr(err, "fake.cu"));
  free(log);
  ck_assert_int_eq(count_files(dir, ".hotk"), 0);
  f.fail = 0;  /* a failure is not cached */
  ck_assert_int_eq(kcache_get(kc, &src, &b, NULL, &log, err, sizeof err), RT_OK);
  ck_assert_ptr_null(log);
  hot_kcache_stats st;
  kcache_stats_get(kc, &st);
  ck_assert_uint_eq(st.compile_failures, 1);
  ck_assert_uint_eq(st.compiles, 1);
  ck_assert_int_eq(f.compiles, 2);
  kcache_close(kc);
  rm_tree(dir);
}
END_TEST

/* Every place a compile time is kept (the entry in memory, the disk entry read by a fresh cache
 * object, a kernel pack) reports the same double, including times that sit just off the stored
 * microsecond grid, where truncation once made disk and memory differ by a microsecond. */
START_TEST(compile_time_same_everywhere) {
  static const double times[] = {65.258499999, 65.2585, 0.0004, 0.0005, 1.0005, 12345.6789012,
                                 0.999999, 3.0};
  char err[512];
  for (size_t t = 0; t < sizeof times / sizeof times[0]; t++) {
    char dir[256], pack_path[400];
    ck_assert_ptr_nonnull(tmp_dir(dir));
    fake_cc f = {0, 0, 200, "fake-1.0", times[t]};
    hot_compiler cc = FAKE_COMPILER(f);
    hot_kernel_source src = fake_src("timed source");
    const hot_kernel_binary *mem = NULL, *hit = NULL, *disk = NULL;
    hot_kcache_origin how;
    hot_kcache *kc = open_fake(dir, &f, &cc, 0);
    ck_assert_msg(kcache_get(kc, &src, &mem, &how, NULL, err, sizeof err) == RT_OK, "%s", err);
    ck_assert_int_eq(how, HOT_KCACHE_COMPILED);
    ck_assert_msg(kcache_get(kc, &src, &hit, &how, NULL, err, sizeof err) == RT_OK, "%s", err);
    ck_assert_int_eq(how, HOT_KCACHE_MEMORY);
    hot_kcache *kc2 = open_fake(dir, &f, &cc, 0);
    ck_assert_msg(kcache_get(kc2, &src, &disk, &how, NULL, err, sizeof err) == RT_OK, "%s", err);
    ck_assert_int_eq(how, HOT_KCACHE_DISK);
    snprintf(pack_path, sizeof pack_path, "%s/t.hotpack", dir);
    hot_pack_entry pe = {mem->key, mem->compiler, mem->arch, mem->kernels, mem->n_kernels,
                         mem->cubin, mem->cubin_size, mem->log, mem->compile_ms};
    ck_assert_msg(pack_write(pack_path, &pe, 1, err, sizeof err) == RT_OK, "%s", err);
    hot_pack *p = NULL;
    ck_assert_msg(pack_load(pack_path, &p, err, sizeof err) == RT_OK, "%s", err);
    hot_compile_result r;
    char ver[32];
    ck_assert_int_eq(pack_lookup(p, mem->key, "fake-1.0", NAMES, 2, &r, ver), 1);
    ck_assert_msg(mem->compile_ms == hit->compile_ms && mem->compile_ms == disk->compile_ms &&
                      mem->compile_ms == r.compile_ms,
                  "reported %.17g ms: memory %.17g, disk %.17g, pack %.17g", times[t],
                  mem->compile_ms, disk->compile_ms, r.compile_ms);
    ck_assert(fabs(mem->compile_ms - times[t]) <= 0.0005 + 1e-12); /* nearest microsecond */
    nvrtc_result_free(&r);
    pack_free(p);
    kcache_close(kc2);
    kcache_close(kc);
    rm_tree(dir);
  }
}
END_TEST

START_TEST(misuse) {
  char err[512];
  hot_kcache *kc = NULL;
  ck_assert_int_eq(kcache_open(NULL, NULL, err, sizeof err), RT_ERR_INVALID);
  fake_cc f = {.version = "fake-1"};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_kcache_config cfg = {.disk = -1, .compiler = &cc};
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  hot_kernel_source src = fake_src("x");
  const hot_kernel_binary *b;
  ck_assert_int_eq(kcache_get(NULL, &src, &b, NULL, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(kcache_get(kc, NULL, &b, NULL, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(kcache_get(kc, &src, NULL, NULL, NULL, err, sizeof err), RT_ERR_INVALID);
  src.arch = "sm_9";
  ck_assert_int_eq(kcache_get(kc, &src, &b, NULL, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "sm_9"));
  ck_assert_int_eq(f.compiles, 0);
  kcache_close(kc);
  kcache_close(NULL);
  ck_assert_str_eq(kcache_origin_name(HOT_KCACHE_DISK), "disk");
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_cache");
  TCase *tc = tcase_create("cache");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, real_nvrtc_roundtrip);
  tcase_add_test(tc, corrupt_entry);
  tcase_add_test(tc, truncated_entry);
  tcase_add_test(tc, wrong_format_entry);
  tcase_add_test(tc, empty_entry);
  tcase_add_test(tc, wrong_key_entry);
  tcase_add_test(tc, concurrent_fill);
  tcase_add_test(tc, threads_share_a_cache);
  tcase_add_test(tc, lru_eviction);
  tcase_add_test(tc, lru_memory_hit);
  tcase_add_test(tc, env_max_mb);
  tcase_add_test(tc, no_disk_cache_env);
  tcase_add_test(tc, directory_from_env);
  tcase_add_test(tc, key_covers_everything);
  tcase_add_test(tc, no_compiler_version_uses_any_entry);
  tcase_add_test(tc, forced_compile_failure);
  tcase_add_test(tc, misuse);
  tcase_add_test(tc, compile_time_same_everywhere);
  tcase_add_test(tc, fifo_in_entry_place);
  tcase_add_test(tc, empty_dir_in_entry_place);
  tcase_add_test(tc, full_dir_in_entry_place);
  tcase_add_test(tc, link_to_fifo_in_entry_place);
  tcase_add_test(tc, link_to_device_in_entry_place);
  tcase_add_test(tc, read_only_cache);
  tcase_add_test(tc, strict_environment);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);  /* tests set environment variables */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

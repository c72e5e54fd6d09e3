/* test_alloc_fail.c — host memory exhaustion through the public API: every allocation of a whole
 * run (context, layer, compile through the cache with a disk directory, save, backward, stats)
 * is failed in turn (the Nth call to malloc/calloc/realloc/strdup/strndup, N = 1, 2, ... until a
 * run completes without reaching N). Each call must return HOT_OK or HOT_ERR_NOMEM (never
 * INVALID, INTERNAL, a crash), and after hot_ctx_destroy no block the wrappers handed out during
 * the run is still allocated. The allocator functions are wrapped at link time
 * (-Wl,--wrap=...: every object of the test and of the static libraries). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_util.h"
#include "hot_internal.h"
#include "rt_util.h"

static long g_count, g_fail_at; /* g_fail_at 0: never fail */
static int g_failed;

/* Live blocks handed out by the wrappers (pointer set, open addressing): a block still in it
 * after hot_ctx_destroy is a leak. Blocks libc allocates for itself are not wrapped, not
 * counted. */
#define LIVE_SLOTS (1u << 16)
static void *g_live[LIVE_SLOTS];
static long g_nlive;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t slot(void *p) { return ((uintptr_t)p >> 4) * 2654435761u % LIVE_SLOTS; }
static void live_add(void *p) {
  if (!p) return;
  pthread_mutex_lock(&g_mu);
  size_t i = slot(p);
  while (g_live[i] && g_live[i] != (void *)1) i = (i + 1) % LIVE_SLOTS;
  g_live[i] = p;
  g_nlive++;
  pthread_mutex_unlock(&g_mu);
}
static void live_del(void *p) {
  if (!p) return;
  pthread_mutex_lock(&g_mu);
  for (size_t i = slot(p), k = 0; g_live[i] && k < LIVE_SLOTS; i = (i + 1) % LIVE_SLOTS, ++k)
    if (g_live[i] == p) {
      g_live[i] = (void *)1; /* tombstone */
      g_nlive--;
      break;
    }
  pthread_mutex_unlock(&g_mu);
}

void __real_free(void *p);
void __wrap_free(void *p);
void __wrap_free(void *p) {
  live_del(p);
  __real_free(p);
}
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static void *g_where; /* the caller of the failed allocation (printed with a finding) */
static int fail_now(void *where) {
  long c = __atomic_add_fetch(&g_count, 1, __ATOMIC_RELAXED);
  if (g_fail_at && c == g_fail_at) {
    g_failed = 1;
    g_where = where;
    return 1;
  }
  return 0;
}
#define RA __builtin_return_address(0)

/* The offset of g_where in its object file (for addr2line). */
static unsigned long where_off(void) {
  Dl_info di;
  if (g_where && dladdr(g_where, &di) && di.dli_fbase)
    return (unsigned long)((char *)g_where - (char *)di.dli_fbase);
  return 0;
}
static void *keep(void *p) {
  live_add(p);
  return p;
}
void *__wrap_malloc(size_t n) { return fail_now(RA) ? NULL : keep(__real_malloc(n)); }
void *__wrap_calloc(size_t a, size_t b) { return fail_now(RA) ? NULL : keep(__real_calloc(a, b)); }
void *__wrap_realloc(void *p, size_t n) {
  if (fail_now(RA)) return NULL;
  void *q = __real_realloc(p, n);
  if (q || !n) live_del(p);
  return keep(q);
}
char *__wrap_strdup(const char *s) { return fail_now(RA) ? NULL : keep(__real_strdup(s)); }
char *__wrap_strndup(const char *s, size_t n) {
  return fail_now(RA) ? NULL : keep(__real_strndup(s, n));
}

/* A compiler that allocates like a real one and reports its own allocation failures. */
static rt_status ver(void *u, char *b, size_t n, char *e, size_t el) {
  (void)u; (void)e; (void)el;
  snprintf(b, n, "alloc-1");
  return RT_OK;
}
static rt_status comp(void *u, const hot_kernel_source *src, hot_compile_result *out, char *e,
                      size_t el) {
  (void)u;
  memset(out, 0, sizeof *out);
  out->cubin = malloc(256);
  out->log = strdup("ok\n");
  out->kernels = calloc(src->n_kernels, sizeof *out->kernels);
  if (!out->cubin || !out->log || !out->kernels) {
    snprintf(e, el, "alloc compiler: out of memory");
    return RT_ERR_NOMEM;
  }
  out->cubin_size = 256;
  memset(out->cubin, 0x5a, 256);
  memcpy(out->cubin, "\177ELF", 4); /* the fake driver loads ELF images only */
  out->log_size = 3;
  out->n_kernels = src->n_kernels;
  for (size_t i = 0; i < src->n_kernels; ++i) {
    out->kernels[i].found = 1;
    if (!(out->kernels[i].name = strdup(src->kernels[i]))) {
      snprintf(e, el, "alloc compiler: out of memory");
      return RT_ERR_NOMEM;
    }
  }
  return RT_OK;
}
static const hot_compiler k_cc = {NULL, ver, "-alloc", comp};

static int bad;
#define CHECK(call)                                                                             \
  do {                                                                                          \
    hot_status st_ = (call);                                                                    \
    if (st_ != HOT_OK && st_ != HOT_ERR_NOMEM) {                                                \
      fprintf(stderr, "FAIL: N=%ld (allocation at +0x%lx): %s -> %s (%s)\n", g_fail_at, where_off(),   \
              #call, hot_status_name(st_), hot_errmsg(ctx));                                    \
      bad = 1;                                                                                  \
    }                                                                                           \
    if (st_ != HOT_OK) goto out;                                                                \
  } while (0)

/* One run; the cache directory is fresh per run (so compiles and disk writes happen). On the
 * CUDA backend (the fake driver) the tensors are device buffers of the fake. */
static int g_cuda;
static int g_nvfp4; /* recipe nvfp4 on the CPU backend (no forced arch: it has no GPU path) */
static void run(const char *root, long n, const float *x, const float *w, const float *gy,
                float *gx, float *gw, float *gb) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/c%ld", root, n);
  hot_options o;
  hot_options_init(&o);
  o.backend = g_cuda ? HOT_BACKEND_CUDA : HOT_BACKEND_CPU;
  o.arch = g_cuda ? "sm_90" : "sm_80"; /* the fake device is 9.0: sm_80 cubins do not run there */
  if (g_nvfp4) o.arch = NULL;
  o.cache_dir = dir;
  const hot_recipe recipe = g_nvfp4 ? HOT_RECIPE_NVFP4 : HOT_RECIPE_HOT;
  hot_layer_spec s;
  au_spec(&s, recipe, "nomem", 32, 16);
  hot_ctx *ctx = NULL;
  hot_layer *l = NULL;
  hot_stats stats;
  g_count = 0;
  g_failed = 0;
  g_fail_at = n;
  hot_status st = ctx_create_with_compiler(&ctx, &o, &k_cc);
  if (st != HOT_OK && st != HOT_ERR_NOMEM) {
    fprintf(stderr, "FAIL: N=%ld: hot_ctx_create -> %s\n", n, hot_status_name(st));
    bad = 1;
  }
  if (st != HOT_OK) goto out;
  CHECK(hot_layer_create(ctx, &s, 2, 32, recipe, &l));
  if (!g_nvfp4) CHECK(hot_layer_compile(l)); /* nvfp4: no kernel to compile */
  CHECK(hot_layer_save(l, x, HOT_DT_F32, NULL, NULL));
  CHECK(hot_layer_backward(l, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 1, NULL));
  if (!g_cuda && !g_nvfp4) CHECK(hot_layer_calibrate(l, gy, HOT_DT_F32, 2, NULL)); /* LQS */
  CHECK(hot_ctx_stats(ctx, &stats));
out:
  hot_ctx_destroy(ctx);
  g_fail_at = 0;
  rm_tree(dir);
}

/* Every allocation of a run failed in turn; 0 or 1 (a finding printed). */
static int sweep(const char *root, const char *what, const float *x, const float *w,
                 const float *gy, float *gx, float *gw, float *gb) {
  bad = 0;
  run(root, 0, x, w, gy, gx, gw, gb); /* warm-up: one-time allocations of libc and the loaders */
  run(root, 0, x, w, gy, gx, gw, gb);
  long total = g_count;
  long before = g_nlive;
  long n = 1;
  for (; n <= total + 1; ++n) {
    run(root, n, x, w, gy, gx, gw, gb);
    if (g_nlive != before) {
      fprintf(stderr, "FAIL: N=%ld (allocation at +0x%lx): %ld blocks still allocated after "
              "hot_ctx_destroy\n", n, where_off(), g_nlive - before);
      bad = 1;
      before = g_nlive;
    }
    if (!g_failed) break; /* the run never reached allocation N: every point was tried */
  }
  printf("alloc_fail (%s): %ld allocations per run, each failed in turn: %s\n", what, total,
         bad ? "FAILED" : "OK or HOT_ERR_NOMEM every time, nothing leaked");
  return bad;
}

int main(void) {
  char root[256], err[512];
  if (!tmp_dir(root)) return 1;
  setenv("HOT_CUDA_DRIVER", HOT_FAKE_CUDA, 1); /* read by every hot_ctx_create */
  static float hx[64 * 32], hw[16 * 32], hgy[64 * 16], hgx[64 * 32], hgw[16 * 32], hgb[16];
  au_fill(1, hx, 64 * 32);
  au_fill(2, hw, 16 * 32);
  au_fill(3, hgy, 64 * 16);
  int failed = sweep(root, "cpu", hx, hw, hgy, hgx, hgw, hgb);
  g_nvfp4 = 1;
  failed |= sweep(root, "cpu, recipe nvfp4", hx, hw, hgy, hgx, hgw, hgb);
  g_nvfp4 = 0;
  /* The CUDA backend's host code on the recording fake driver. */
  const cuda_driver *d = NULL;
  if (cuda_driver_get(&d, err, sizeof err) != RT_OK) {
    fprintf(stderr, "FAIL: fake driver: %s\n", err);
    return 1;
  }
  CUdeviceptr p[6];
  const size_t sz[6] = {sizeof hx, sizeof hw, sizeof hgy, sizeof hgx, sizeof hgw, sizeof hgb};
  for (int i = 0; i < 6; ++i)
    if (d->cuMemAlloc(&p[i], sz[i]) != CUDA_SUCCESS) return 1;
  g_cuda = 1;
  failed |= sweep(root, "cuda (fake driver)", (const float *)(uintptr_t)p[0],
                  (const float *)(uintptr_t)p[1], (const float *)(uintptr_t)p[2],
                  (float *)(uintptr_t)p[3], (float *)(uintptr_t)p[4], (float *)(uintptr_t)p[5]);
  for (int i = 0; i < 6; ++i) d->cuMemFree(p[i]);
  rm_tree(root);
  return failed;
}

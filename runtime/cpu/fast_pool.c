/* fast_pool.c — the settings of the fast CPU path (threads, dispatch level) and its thread pool:
 * workers created on first use and kept for the life of the process, one parallel region at a
 * time, tasks handed out by an atomic counter; or, when asked (fast_use_openmp), the same regions
 * on the workers of an OpenMP runtime loaded in the process. */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fast_internal.h"
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if FAST_HAVE_AMX
#include <sys/syscall.h>
#endif


/* ---- settings ------------------------------------------------------------------------------ */

static atomic_int g_threads;        /* 0: default */
static atomic_int g_level_cap = -1; /* -1: none set here */

void fast_set_threads(int n) { atomic_store(&g_threads, n > 0 ? n : 0); }

/* A positive integer from the environment variable `name`, or 0. */
static int env_int(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  return (*end == '\0' && v > 0 && v <= FAST_MAX_THREADS) ? (int)v : 0;
}

int fast_threads(void) {
  int n = atomic_load(&g_threads);
  if (n <= 0) n = env_int("HOT_CPU_THREADS");
  if (n <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)(c < FAST_MAX_THREADS ? c : FAST_MAX_THREADS) : 1;
  }
  return n < FAST_MAX_THREADS ? n : FAST_MAX_THREADS;
}

void fast_set_level(int max) {
  atomic_store(&g_level_cap, max >= FAST_LEVEL_SCALAR && max < FAST_LEVELS ? max : -1);
}

#if FAST_HAVE_AMX && !defined(HOT_FAST_VNNI_EMU)
/* AMX-INT8 can be used: CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), the OS saves the
 * tile state (OSXSAVE, XCR0 bits 17 and 18), and Linux grants this process the tile data
 * (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA: process-wide, refused for instance when a thread
 * has a signal stack too small for the tile state; the level is then not offered). */
static int amx_usable(void) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1u) || !(d >> 25 & 1u)) return 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1u)) return 0;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo >> 17 & 3u) != 3u) return 0;
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
}
#endif

/* 1 when this CPU can run `level` (level in [0, FAST_LEVELS)): asked of the CPU each time. */
static int cpu_has(int level) {
  if (level == FAST_LEVEL_SCALAR) return 1;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const int avx2 = __builtin_cpu_supports("avx2");
#ifdef HOT_FAST_VNNI_EMU /* a test build: the VNNI GEMM kernels in portable C (fast_gemm.c) */
  return avx2;
#else
  if (level == FAST_LEVEL_AVX2) return avx2;
#if FAST_HAVE_AVXVNNI
  if (level == FAST_LEVEL_AVXVNNI) { /* CPUID leaf 7 subleaf 1, EAX bit 4 (not every compiler's
                                        __builtin_cpu_supports knows "avxvnni") */
    unsigned a = 0, b = 0, c = 0, d = 0;
    return avx2 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1u);
  }
#endif
  if (level == FAST_LEVEL_AVX512)
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
#if FAST_HAVE_AMX
  if (level == FAST_LEVEL_AMX) return avx2 && amx_usable();
#endif
#endif
#endif
  return 0;
}

int fast_cpu_avx512(void) {
  static atomic_int has = -1;
  int h = atomic_load(&has);
  if (h < 0) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx512f") != 0;
#else
    h = 0;
#endif
    atomic_store(&has, h);
  }
  return h;
}

_Static_assert(FAST_LEVEL_AMX == FAST_LEVELS - 1, "fast_level_has keeps AMX apart as the last level");

int fast_level_has(int level) {
  /* the levels this CPU has, one bit each, found once: fast_level_now runs at every stage, and
   * CPUID traps to the hypervisor on virtual machines */
  static atomic_int mask = -1;
  /* AMX apart, and only when asked: its check asks Linux for the tile data (amx_usable), which a
   * process capped below it (HOT_CPU_ISA, fast_set_level) never needs to do */
  static atomic_int amx = -1;
  if (level == FAST_LEVEL_AMX) {
    int a = atomic_load(&amx);
    if (a < 0) {
      a = cpu_has(FAST_LEVEL_AMX) != 0;
      atomic_store(&amx, a);
    }
    return a;
  }
  int m = atomic_load(&mask);
  if (m < 0) {
    m = 0;
    for (int l = 0; l < FAST_LEVEL_AMX; ++l) m |= (cpu_has(l) != 0) << l;
    atomic_store(&mask, m);
  }
  return level >= 0 && level < FAST_LEVELS && (m >> level & 1);
}

/* The highest level at most `cap` that this CPU has (scalar always is). */
static fast_level best_up_to(int cap) {
  int l = cap < FAST_LEVELS ? cap : FAST_LEVELS - 1;
  while (l > FAST_LEVEL_SCALAR && !fast_level_has(l)) --l;
  return (fast_level)l;
}

fast_level fast_level_cpu(void) { return best_up_to(FAST_LEVELS - 1); }

fast_level fast_level_now(void) {
  int cap = atomic_load(&g_level_cap);
  if (cap < 0) {
    cap = fast_level_by_name(getenv("HOT_CPU_ISA"));
    if (cap < 0) cap = FAST_LEVELS - 1;
  }
  return best_up_to(cap);
}

int fast_level_by_name(const char *s) {
  static const char *const short_names[FAST_LEVELS] = {"scalar", "avx2", "avxvnni", "avx512", "amx"};
  for (int l = 0; s && l < FAST_LEVELS; ++l)
    if (!strcmp(s, short_names[l]) || !strcmp(s, fast_level_name(l))) return l;
  return -1;
}

const char *fast_level_name(int level) {
  switch (level) {
  case FAST_LEVEL_SCALAR: return "scalar";
  case FAST_LEVEL_AVX2: return "avx2";
  case FAST_LEVEL_AVXVNNI: return "avx-vnni";
  case FAST_LEVEL_AVX512: return "avx512-vnni";
  case FAST_LEVEL_AMX: return "amx-int8";
  default: return "unknown level";
  }
}

/* ---- scratch blocks ----------------------------------------------------------------------------- */

#define SCRATCH_MIN ((size_t)1 << 16) /* smaller blocks are plain malloc / free */
#define SCRATCH_HDR 64                /* header: the block's usable size; keeps 64-byte alignment */

static pthread_mutex_t g_scr_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *g_scr[FAST_SCRATCH_KEEP]; /* kept blocks (header addresses) */

static size_t scr_size(const unsigned char *h) {
  size_t n;
  memcpy(&n, h, sizeof n);
  return n;
}

void *fast_scratch(size_t bytes) {
  if (bytes < SCRATCH_MIN) bytes = SCRATCH_MIN;
  unsigned char *h = NULL;
  pthread_mutex_lock(&g_scr_mu);
  int best = -1; /* the smallest kept block that fits and wastes at most half of itself */
  for (int i = 0; i < FAST_SCRATCH_KEEP; ++i)
    if (g_scr[i] && scr_size(g_scr[i]) >= bytes && scr_size(g_scr[i]) / 2 <= bytes &&
        (best < 0 || scr_size(g_scr[i]) < scr_size(g_scr[best])))
      best = i;
  if (best >= 0) {
    h = g_scr[best];
    g_scr[best] = NULL;
  }
  pthread_mutex_unlock(&g_scr_mu);
  if (!h) {
    if (bytes > SIZE_MAX - SCRATCH_HDR) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, SCRATCH_HDR, bytes + SCRATCH_HDR)) return NULL;
    h = p;
    memcpy(h, &bytes, sizeof bytes);
  }
  return h + SCRATCH_HDR;
}

void fast_unscratch(void *p) {
  if (!p) return;
  unsigned char *h = (unsigned char *)p - SCRATCH_HDR;
  pthread_mutex_lock(&g_scr_mu);
  int slot = -1; /* an empty slot, else the smallest kept block if it is smaller than this one */
  for (int i = 0; i < FAST_SCRATCH_KEEP && slot < 0; ++i)
    if (!g_scr[i]) slot = i;
  if (slot < 0) {
    slot = 0;
    for (int i = 1; i < FAST_SCRATCH_KEEP; ++i)
      if (scr_size(g_scr[i]) < scr_size(g_scr[slot])) slot = i;
    if (scr_size(g_scr[slot]) < scr_size(h)) {
      unsigned char *t = g_scr[slot];
      g_scr[slot] = h;
      h = t;
    }
  } else {
    g_scr[slot] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&g_scr_mu);
  free(h);
}

void fast_release_scratch(void) {
  pthread_mutex_lock(&g_scr_mu);
  for (int i = 0; i < FAST_SCRATCH_KEEP; ++i) {
    free(g_scr[i]);
    g_scr[i] = NULL;
  }
  pthread_mutex_unlock(&g_scr_mu);
}

/* ---- stage profile -------------------------------------------------------------------------- */

int fast_prof_on;
static double g_prof[2][FAST_ST_COUNT]; /* wall, CPU */

fast_prof_t fast_prof_now(void) {
  fast_prof_t t = {0.0, 0.0};
  if (!fast_prof_on) return t;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  t.wall = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  t.cpu = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  return t;
}

fast_prof_t fast_prof_add(int st, fast_prof_t t0) {
  if (!fast_prof_on || st < 0 || st >= FAST_ST_COUNT) return t0;
  const fast_prof_t t = fast_prof_now();
  g_prof[0][st] += t.wall - t0.wall;
  g_prof[1][st] += t.cpu - t0.cpu;
  return t;
}

double fast_prof_thread_cpu(void) {
  if (!fast_prof_on) return 0.0;
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fast_prof_sum(int st, double s) {
  if (fast_prof_on && st >= 0 && st < FAST_ST_COUNT) g_prof[0][st] += s, g_prof[1][st] += s;
}

void fast_profile(int on) {
  memset(g_prof, 0, sizeof g_prof);
  fast_prof_on = on != 0;
}

void fast_profile_read(double *wall, double *cpu, int n) {
  for (int i = 0; i < n && i < FAST_ST_COUNT; ++i) {
    if (wall) wall[i] = g_prof[0][i];
    if (cpu) cpu[i] = g_prof[1][i];
  }
}

const char *fast_stage_name(int stage) {
#define FAST_ST_NAME_(c, name) case c: return name;
  switch (stage) {
    FAST_STAGES(FAST_ST_NAME_)
  default: return "unknown stage";
  }
#undef FAST_ST_NAME_
}

/* ---- the pool ------------------------------------------------------------------------------ */

static pthread_mutex_t g_region = PTHREAD_MUTEX_INITIALIZER; /* one region at a time */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static int g_nworkers;          /* workers created (tids 1 .. g_nworkers) */
static unsigned long g_gen;     /* region number, bumped to wake the workers */
static atomic_ulong g_gen_seen; /* g_gen, for the workers' spin before they sleep */
static int g_open;              /* the current region still takes workers */
static int g_running;           /* workers inside the current region's tasks */
static int g_job_threads;
static int64_t g_job_n;
static fast_task_fn g_job_fn;
static void *g_job_ctx;
static atomic_llong g_next;
static atomic_ullong g_regions; /* regions run on more than one thread (fast_regions) */
static unsigned long g_born[FAST_MAX_THREADS]; /* g_gen when worker tid was created */
static _Thread_local int g_in_region; /* set on workers and on a caller inside its region */

unsigned long long fast_regions(void) { return atomic_load(&g_regions); }

static atomic_llong g_inline_elems = FAST_INLINE_ELEMS;

void fast_set_inline_elems(int64_t n) { atomic_store(&g_inline_elems, n >= 0 ? n : FAST_INLINE_ELEMS); }

int fast_threads_for(int64_t elems) {
  return elems < atomic_load(&g_inline_elems) ? 1 : fast_threads();
}

/* Takes tasks of the current region until none is left; the thread counts as inside a region
 * meanwhile (a region inside a task runs inline; fast_use_openmp is refused). */
static void run_tasks(int64_t n, fast_task_fn fn, void *ctx, int tid) {
  const int was = g_in_region;
  g_in_region = 1;
  for (;;) {
    long long i = atomic_fetch_add(&g_next, 1);
    if (i >= n) break;
    fn(ctx, (int64_t)i, tid);
  }
  g_in_region = was;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* How long an idle worker watches for the next region before it sleeps: about 20-50 us (a
 * pause is 10-140 cycles, by CPU), so that the regions of one backward, which follow each
 * other within microseconds, find it awake, while a worker of an idle pool, or of a pool whose
 * CPUs other processes want, gives its CPU back soon. */
#define SPIN_PAUSES 2000

/* Waking: a region is entered under g_mu while g_open; the caller closes it when its own tasks
 * run out and then waits only for the workers inside (g_running). A worker that wakes after
 * that (descheduled, or still spinning) sees the region closed and skips it, so the caller
 * never waits for a worker that has not started: with more threads than free CPUs, a region
 * costs the work, not a scheduler time slice. */
static void *worker(void *arg) {
  const int tid = (int)(intptr_t)arg;
  g_in_region = 1;
  unsigned long seen = g_born[tid]; /* the region that created it is still to be run */
  for (;;) {
    for (int i = 0; i < SPIN_PAUSES && atomic_load_explicit(&g_gen_seen, memory_order_acquire) == seen; ++i)
      cpu_relax();
    pthread_mutex_lock(&g_mu);
    while (g_gen == seen) pthread_cond_wait(&g_work, &g_mu);
    seen = g_gen;
    if (tid >= g_job_threads || !g_open) { /* not needed in this region, or too late for it */
      pthread_mutex_unlock(&g_mu);
      continue;
    }
    ++g_running;
    const int64_t n = g_job_n;
    fast_task_fn fn = g_job_fn;
    void *ctx = g_job_ctx;
    pthread_mutex_unlock(&g_mu);
    run_tasks(n, fn, ctx, tid);
    pthread_mutex_lock(&g_mu);
    if (--g_running == 0 && !g_open) pthread_cond_signal(&g_done);
    pthread_mutex_unlock(&g_mu);
  }
  return NULL;
}

/* ---- an OpenMP runtime's workers instead of the pool's ------------------------------------------ */

typedef void (*omp_parallel_fn)(void (*body)(void *), void *data, unsigned num_threads,
                                unsigned flags);
typedef int (*omp_thread_num_fn)(void);
static struct {
  void *handle; /* dlopen's reference: keeps the runtime loaded while it is used */
  omp_parallel_fn parallel;
  omp_thread_num_fn thread_num;
  char name[64];
} g_omp; /* written under g_region and g_omp_mu; fast_parallel reads it under g_region, fast_openmp
            under g_omp_mu (so that it may be called from inside a task) */
static pthread_mutex_t g_omp_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
  int64_t n;
  fast_task_fn fn;
  void *ctx;
  int threads;
  omp_thread_num_fn thread_num;
} omp_job;

/* The body every thread of the OpenMP team runs. A team has at most `threads` members, numbered
 * from 0; a member whose number is out of range (a misbehaving runtime) takes no task, so no two
 * threads ever share a tid (and its per-thread scratch); the caller, member 0, runs whatever is
 * left. */
static void omp_body(void *p) {
  const omp_job *j = p;
  const int tid = j->thread_num();
  if (tid >= 0 && tid < j->threads) run_tasks(j->n, j->fn, j->ctx, tid);
}

int fast_use_openmp(const char *runtime) {
  if (g_in_region) return -2; /* inside a task this thread's region holds g_region */
  void *h = NULL;
  omp_parallel_fn par = NULL;
  omp_thread_num_fn num = NULL;
  if (runtime) {
    if (!*runtime || strlen(runtime) >= sizeof g_omp.name) return -3;
    h = dlopen(runtime, RTLD_NOW | RTLD_NOLOAD); /* only a runtime the process has loaded */
    if (!h) return -1;
    void *p = dlsym(h, "GOMP_parallel"), *q = dlsym(h, "omp_get_thread_num");
    if (!p || !q) {
      dlclose(h);
      return -1;
    }
    memcpy(&par, &p, sizeof par); /* object to function pointer: POSIX guarantees it works */
    memcpy(&num, &q, sizeof num);
  }
  pthread_mutex_lock(&g_region);
  pthread_mutex_lock(&g_omp_mu);
  void *old = g_omp.handle;
  g_omp.handle = h, g_omp.parallel = par, g_omp.thread_num = num;
  memset(g_omp.name, 0, sizeof g_omp.name);
  if (runtime) memcpy(g_omp.name, runtime, strlen(runtime));
  pthread_mutex_unlock(&g_omp_mu);
  pthread_mutex_unlock(&g_region);
  if (old) dlclose(old);
  return 0;
}

int fast_openmp(char *buf, size_t cap) {
  pthread_mutex_lock(&g_omp_mu);
  const int on = g_omp.parallel != NULL;
  if (buf && cap > 0) {
    const size_t len = strlen(g_omp.name) < cap - 1 ? strlen(g_omp.name) : cap - 1;
    memcpy(buf, g_omp.name, len);
    buf[len] = '\0';
  }
  pthread_mutex_unlock(&g_omp_mu);
  return on;
}

void fast_parallel(int64_t n, int threads, fast_task_fn fn, void *ctx) {
  if (n <= 0) return;
  if (threads <= 0) threads = fast_threads();
  if (threads > n) threads = (int)n;
  if (threads <= 1 || g_in_region) { /* single-threaded, or nested: inline on this thread */
    const int was = g_in_region;
    g_in_region = 1; /* a task is a task: what it may not do (fast_use_openmp) holds here too */
    for (int64_t i = 0; i < n; ++i) fn(ctx, i, 0);
    g_in_region = was;
    return;
  }
  pthread_mutex_lock(&g_region);
  atomic_fetch_add(&g_regions, 1);
  if (g_omp.parallel) {
    omp_job j = {n, fn, ctx, threads, g_omp.thread_num};
    atomic_store(&g_next, 0);
    g_omp.parallel(omp_body, &j, (unsigned)threads, 0);
    /* the caller is member 0 of its team (or, nested in a region of the runtime, the whole team
     * of one): whatever a team left undone runs here */
    run_tasks(n, fn, ctx, 0);
    pthread_mutex_unlock(&g_region);
    return;
  }
  pthread_mutex_lock(&g_mu);
  while (g_nworkers < threads - 1) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    g_born[g_nworkers + 1] = g_gen;
    int bad = pthread_create(&th, &at, worker, (void *)(intptr_t)(g_nworkers + 1));
    pthread_attr_destroy(&at);
    if (bad) break;
    ++g_nworkers;
  }
  if (threads > g_nworkers + 1) threads = g_nworkers + 1; /* what could be had */
  g_job_threads = threads;
  g_job_n = n;
  g_job_fn = fn;
  g_job_ctx = ctx;
  atomic_store(&g_next, 0);
  g_open = 1;
  g_running = 0;
  ++g_gen;
  atomic_store_explicit(&g_gen_seen, g_gen, memory_order_release);
  pthread_cond_broadcast(&g_work);
  pthread_mutex_unlock(&g_mu);
  run_tasks(n, fn, ctx, 0);
  pthread_mutex_lock(&g_mu);
  g_open = 0; /* no task is left to take: workers that have not entered stay out */
  while (g_running > 0) pthread_cond_wait(&g_done, &g_mu);
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_region);
}

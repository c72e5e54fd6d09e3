/* fast_pool.c — the thread pool of the fast CPU path:
 * workers created on first use and kept for the life of the process, one parallel region at a
 * time, its tasks dealt in contiguous ranges per thread (taken from the back by a thread whose
 * range is done); or, when asked (fast_use_openmp), the same regions on the workers of an OpenMP
 * runtime loaded in the process. */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fast_internal.h"
#include "utf8.h"


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

void fast_scratch_kept(int *blocks, size_t *bytes) {
  int n = 0;
  size_t b = 0;
  pthread_mutex_lock(&g_scr_mu);
  for (int i = 0; i < FAST_SCRATCH_KEEP; ++i)
    if (g_scr[i]) ++n, b += scr_size(g_scr[i]);
  pthread_mutex_unlock(&g_scr_mu);
  if (blocks) *blocks = n;
  if (bytes) *bytes = b;
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

double fast_prof_clock(void) {
  if (!fast_prof_on) return 0.0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
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
/* The tasks of a region, dealt in contiguous ranges: thread t owns tasks [n t / T, n (t + 1) / T)
 * and takes them from the front; a thread whose range is empty takes the others' from their
 * back. So a thread mostly runs the same part of the data in consecutive regions (the stages of
 * a backward split tokens and columns alike), which then stays in its own caches, while a thread
 * that comes late or runs slow loses its tasks to the others. A range is one word, next in the
 * low and end in the high 32 bits, changed by compare-and-swap; regions of more than 2^31 tasks
 * (none in this library) take one shared counter instead. */
typedef struct {
  _Alignas(64) atomic_ullong r;
} task_range;
static task_range g_ranges[FAST_MAX_THREADS];
static int g_nranges; /* ranges dealt for the current region (its threads), 0: the shared counter */
static atomic_llong g_next;

static void deal_tasks(int64_t n, int threads) {
  atomic_store(&g_next, 0);
  if (n > INT32_MAX || threads < 2 || threads > FAST_MAX_THREADS) {
    g_nranges = 0;
    return;
  }
  for (int t = 0; t < threads; ++t) {
    const unsigned long long lo = (unsigned long long)(n * t / threads);
    const unsigned long long hi = (unsigned long long)(n * (t + 1) / threads);
    atomic_store_explicit(&g_ranges[t].r, lo | hi << 32, memory_order_relaxed);
  }
  g_nranges = threads;
}

/* One task of range t: from its front (front != 0) or back; -1 when the range is empty. */
static int64_t take_task(int t, int front) {
  unsigned long long v = atomic_load_explicit(&g_ranges[t].r, memory_order_relaxed);
  for (;;) {
    const unsigned long long lo = v & 0xffffffffu, hi = v >> 32;
    if (lo >= hi) return -1;
    const unsigned long long nv = front ? (lo + 1) | hi << 32 : lo | (hi - 1) << 32;
    if (atomic_compare_exchange_weak_explicit(&g_ranges[t].r, &v, nv, memory_order_acq_rel,
                                              memory_order_relaxed))
      return (int64_t)(front ? lo : hi - 1);
  }
}
static atomic_ullong g_regions; /* regions run on more than one thread (fast_regions) */
static unsigned long g_born[FAST_MAX_THREADS]; /* g_gen when worker tid was created */
static _Thread_local int g_in_region; /* set on workers and on a caller inside its region */

unsigned long long fast_regions(void) { return atomic_load(&g_regions); }

/* Takes tasks of the current region until none is left; the thread counts as inside a region
 * meanwhile (a region inside a task runs inline; fast_use_openmp is refused). */
static void run_tasks(int64_t n, fast_task_fn fn, void *ctx, int tid) {
  const int was = g_in_region;
  g_in_region = 1;
  const fast_fpenv env = fast_fpenv_enter(); /* every task in the one environment */
  const int nr = g_nranges;
  if (nr == 0) {
    for (;;) {
      long long i = atomic_fetch_add(&g_next, 1);
      if (i >= n) break;
      fn(ctx, (int64_t)i, tid);
    }
  } else {
    for (int k = 0; k < nr; ++k) { /* its own range first, then the others' from their back */
      const int t = (tid + k) % nr;
      for (int64_t i; (i = take_task(t, k == 0)) >= 0;) fn(ctx, i, tid);
    }
  }
  fast_fpenv_leave(env);
  g_in_region = was;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* How long an idle worker watches for the next region before it sleeps: 100 us, by the clock
 * (a pause takes 10-140 cycles, by CPU). The regions of one backward follow each other within
 * microseconds, but a worker is idle from when its own tasks end until the next region opens,
 * which is the caller's remaining tasks plus the gap: at 22 us of watching, a worker slept in
 * about half of a small layer's regions and took 20-35 us to wake in the next. A worker of an
 * idle pool still gives its CPU back soon. While an OpenMP runtime is attached the own pool runs
 * only in a back-off, that is while other processes want the CPUs, beside the runtime's own
 * spinning workers: there a worker watches 20 us. */
#define SPIN_NS 100000
#define SPIN_SHARED_NS 20000
static atomic_int g_attached; /* an OpenMP runtime is attached (fast_use_openmp) */

static int64_t fast_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Returns when the region after `seen` has opened or SPIN_NS have passed. */
static void watch_for_region(unsigned long seen) {
  const int64_t t0 = fast_now_ns();
  const int64_t limit = atomic_load_explicit(&g_attached, memory_order_relaxed) ? SPIN_SHARED_NS
                                                                                : SPIN_NS;
  for (unsigned i = 1; atomic_load_explicit(&g_gen_seen, memory_order_acquire) == seen; ++i) {
    cpu_relax();
    if (i % 64 == 0 && fast_now_ns() - t0 > limit) return;
  }
}

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
    watch_for_region(seen);
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
  int64_t t0;        /* when the caller started the team (fast_now_ns) */
  atomic_int late;   /* a member entered more than g_omp_late_ns after t0 */
} omp_job;

/* Attached, but not while others use the CPUs: an OpenMP region ends with a barrier that waits
 * for every member of its team, so where a member has been descheduled (other processes on the
 * CPUs) each region costs a scheduler time slice, several milliseconds, where the own pool
 * closes the region and runs that member's tasks on the caller. A member that enters a region
 * more than g_omp_late_ns after its start marks it late; a late region within g_omp_window_ns of
 * the previous late one sends the regions of the next g_omp_backoff_ns to the own pool, after
 * which the runtime is tried again (two late regions per back-off at worst). Waking a sleeping
 * worker takes tens of microseconds, a descheduled one a time slice: 500 us between the two.
 * One late region alone is a hiccup (a page fault, the hypervisor taking the CPU for a moment),
 * not shared CPUs: falling back on it cost a torch training step a second on the own pool,
 * whose workers there compete with the runtime's spinning ones (hot's calls 1.4x slower); under
 * a competing process late regions come every few milliseconds, within the 100 ms window. The
 * bits do not depend on which threads run the tasks. */
static atomic_llong g_omp_late_ns = 500000;
static atomic_llong g_omp_window_ns = 100000000;
static atomic_llong g_omp_backoff_ns = 1000000000;
static atomic_llong g_omp_own_until;  /* fast_now_ns before which regions use the own pool */
static atomic_llong g_omp_last_late = INT64_MIN; /* fast_now_ns of the last late region, if
                                                    not followed by a back-off */
static atomic_ullong g_omp_fallbacks; /* back-offs since the process started */

void fast_openmp_fallback(int64_t late_ns, int64_t window_ns, int64_t backoff_ns) {
  atomic_store(&g_omp_late_ns, late_ns);
  atomic_store(&g_omp_window_ns, window_ns);
  atomic_store(&g_omp_backoff_ns, backoff_ns);
  atomic_store(&g_omp_own_until, 0);
  atomic_store(&g_omp_last_late, INT64_MIN);
}

/* A late region at fast_now_ns `now` (under g_region): the back-off when the previous late one
 * lies within the window, else only remembered. */
static void omp_late(int64_t now) {
  const int64_t last = atomic_load(&g_omp_last_late);
  if (last != INT64_MIN && now - last <= atomic_load(&g_omp_window_ns)) {
    atomic_store(&g_omp_own_until, now + atomic_load(&g_omp_backoff_ns));
    atomic_fetch_add(&g_omp_fallbacks, 1);
    atomic_store(&g_omp_last_late, INT64_MIN);
  } else {
    atomic_store(&g_omp_last_late, now);
  }
}

unsigned long long fast_openmp_fallbacks(void) { return atomic_load(&g_omp_fallbacks); }

/* The body every thread of the OpenMP team runs. A team has at most `threads` members, numbered
 * from 0; a member whose number is out of range (a misbehaving runtime) takes no task, so no two
 * threads ever share a tid (and its per-thread scratch); the caller, member 0, runs whatever is
 * left. */
static void omp_body(void *p) {
  omp_job *j = p;
  const int tid = j->thread_num();
  if (tid > 0 && fast_now_ns() - j->t0 > atomic_load_explicit(&g_omp_late_ns, memory_order_relaxed))
    atomic_store_explicit(&j->late, 1, memory_order_relaxed);
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
  atomic_store(&g_attached, par != NULL);
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
    const size_t len = strlen(g_omp.name) < cap - 1 ? strlen(g_omp.name)
                                                     : utf8_complete(g_omp.name, cap - 1);
    memcpy(buf, g_omp.name, len);
    buf[len] = '\0';
  }
  pthread_mutex_unlock(&g_omp_mu);
  return on;
}

void fast_parallel(int64_t n, int threads, fast_task_fn fn, void *ctx) {
  if (n <= 0) return;
  if (threads > n) threads = (int)n;
  if (threads <= 1 || g_in_region) { /* single-threaded, or nested: inline on this thread */
    const int was = g_in_region;
    g_in_region = 1; /* a task is a task: what it may not do (fast_use_openmp) holds here too */
    const fast_fpenv env = fast_fpenv_enter();
    for (int64_t i = 0; i < n; ++i) fn(ctx, i, 0);
    fast_fpenv_leave(env);
    g_in_region = was;
    return;
  }
  pthread_mutex_lock(&g_region);
  atomic_fetch_add(&g_regions, 1);
  const int64_t now = g_omp.parallel ? fast_now_ns() : 0;
  if (g_omp.parallel && now >= atomic_load(&g_omp_own_until)) {
    omp_job j = {n, fn, ctx, threads, g_omp.thread_num, now, 0};
    deal_tasks(n, threads);
    g_omp.parallel(omp_body, &j, (unsigned)threads, 0);
    /* the caller is member 0 of its team (or, nested in a region of the runtime, the whole team
     * of one): whatever a team left undone runs here */
    run_tasks(n, fn, ctx, 0);
    if (atomic_load(&j.late)) omp_late(fast_now_ns()); /* shared CPUs, or a hiccup */
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
  deal_tasks(n, threads);
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

/* ---- fork ------------------------------------------------------------------------------------ */

/* The process-wide state of this file across fork(): the child has only the forking thread, so
 * the pool's workers are gone. Before the fork every lock is taken (no region, scratch or
 * OpenMP switch is half done, so the child inherits a consistent state); the parent releases
 * them and keeps its workers; the child releases them too and forgets its workers (the next
 * region creates new ones). A fork from inside a task leaves the region lock alone (its region
 * holds it): that child then runs its regions inline (g_in_region stays set on its thread). */
static _Thread_local int g_fork_region; /* prepare took g_region on this thread */

static void fork_prepare(void) {
  g_fork_region = !g_in_region;
  if (g_fork_region) pthread_mutex_lock(&g_region);
  pthread_mutex_lock(&g_omp_mu);
  pthread_mutex_lock(&g_scr_mu);
  pthread_mutex_lock(&g_mu);
}

static void fork_parent(void) {
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_scr_mu);
  pthread_mutex_unlock(&g_omp_mu);
  if (g_fork_region) pthread_mutex_unlock(&g_region);
}

static void fork_child(void) {
  g_nworkers = 0; /* the workers did not come along */
  g_open = 0;
  g_running = 0;
  pthread_cond_init(&g_work, NULL);
  pthread_cond_init(&g_done, NULL);
  fork_parent();
}

__attribute__((constructor)) static void fork_handlers(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

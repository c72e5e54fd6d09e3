/* jit.c — one cache request per distinct kernel of a layer, compiled concurrently (see jit.h). */
#define _POSIX_C_SOURCE 200809L
#include "jit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "emit.h"
#include "fileio.h"
#include "env.h"
#include "num.h"

int jit_default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > 16 ? 16 : (int)n);
}

/* ---- HOT_JIT_DEBUG dumps --------------------------------------------------------------------- */

static int mkdirs(const char *path) {
  char tmp[1024];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
  for (char *p = tmp + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return (mkdir(tmp, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

static void write_text(const char *dir, const char *base, const char *ext, const char *text) {
  char path[1400];
  snprintf(path, sizeof path, "%s/%s%s", dir, base, ext);
  char why[64];
  FILE *f = fileio_fopen(path, "w", why, sizeof why); /* a FIFO there must not block us */
  if (!f) return;
  fputs(text ? text : "", f);
  fclose(f);
}

/* <dir>/<layer>.<arch>.cu (the programs' sources one after another) and .log (their compile
 * logs, or the failing one's). Best effort: a dump that cannot be written never fails a compile
 * (the library does not print, so it stays silent). */
static void debug_dump(const char *dir, const hot_layer_plan *pl, const hot_jit *j,
                       const char *const *logs, const char *const *names, int n) {
  if (mkdirs(dir) != 0) return;
  char base[HOT_NAME_MAX + 32];
  const char *lname = pl->spec && pl->spec->name[0] ? pl->spec->name : "layer";
  snprintf(base, sizeof base, "%s.%s", lname, plan_arch_caps(pl->arch)->name);
  for (char *p = base; *p; ++p) /* names from C may hold anything */
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '-' || *p == '.'))
      *p = '_';
  size_t len = 1, llen = 1;
  for (int k = 0; k < HOT_MAX_KERNELS; ++k)
    if (j->source[k]) len += strlen(j->source[k]) + 64;
  for (int u = 0; u < n; ++u) llen += (logs[u] ? strlen(logs[u]) : 0) + strlen(names[u]) + 16;
  char *src = malloc(len), *log = malloc(llen);
  if (src && log) {
    char *p = src, *q = log;
    *p = *q = '\0';
    for (int k = 0, prog = 0; k < HOT_MAX_KERNELS; ++k)
      if (j->source[k]) p += sprintf(p, "// ==== program %d ====\n%s", ++prog, j->source[k]);
    for (int u = 0; u < n; ++u)
      if (logs[u]) q += sprintf(q, "== %s ==\n%s", names[u], logs[u]);
    write_text(dir, base, ".cu", src);
    write_text(dir, base, ".log", log);
  }
  free(src);
  free(log);
}

/* One program: a kernel of the plan (its index), its request and its outcome. */
typedef struct {
  int k;
  const char *name;
  hot_kernel_source src;
  const hot_kernel_binary *bin;
  hot_kcache_origin origin;
  rt_status st;
  char *log;
  char err[512];
} unit;

typedef struct {
  hot_kcache *kc;
  unit *units;
  const int *order; /* the units in the order they are taken */
  int n;
  int next; /* next position in order to take (atomic) */
} pool;

static void *worker(void *arg) {
  pool *p = arg;
  for (;;) {
    int i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
    if (i >= p->n) return NULL;
    unit *u = &p->units[p->order[i]];
    u->st = kcache_get(p->kc, &u->src, &u->bin, &u->origin, &u->log, u->err, sizeof u->err);
  }
}

/* Longest first: a compile's cost grows with its source (the GEMMs' unrolled tiles are the
 * longest and slowest programs), and starting the slowest ones first keeps a short program from
 * delaying the end of the batch (measured on 2 cores: a layer's wall time falls from ~1.3 s to
 * ~1.1 s for the same compiles). Ties keep the request order. */
static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER; /* guards g_sort_units */
/* fork(): the child gets g_sort_units consistent (the lock is held across the fork, then released on
 * both sides; pthread_atfork, registered at load). */
static void sort_mu_lock(void) { pthread_mutex_lock(&sort_mu); }
static void sort_mu_unlock(void) { pthread_mutex_unlock(&sort_mu); }
__attribute__((constructor)) static void sort_mu_atfork(void) {
  pthread_atfork(sort_mu_lock, sort_mu_unlock, sort_mu_unlock);
}
static const unit *g_sort_units; /* the units being sorted (qsort has no context argument) */
static int longer_first(const void *a, const void *b) {
  const unit *x = &g_sort_units[*(const int *)a], *y = &g_sort_units[*(const int *)b];
  size_t lx = strlen(x->src.source) / 1024, ly = strlen(y->src.source) / 1024;
  if (lx != ly) return lx > ly ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

/* Runs the n units on up to `threads` threads (the caller's is one), longest source first.
 * Returns the threads used. */
static int run_pool(hot_kcache *kc, unit *units, int n, int threads) {
  if (threads > n) threads = n;
  if (threads > 64) threads = 64;
  int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
  int inplace[HOT_MAX_KERNELS];
  if (!order && n <= HOT_MAX_KERNELS) order = inplace; /* no memory: still run, unsorted */
  if (!order) { /* a large batch without memory: one by one, in request order */
    for (int i = 0; i < n; ++i)
      units[i].st = kcache_get(kc, &units[i].src, &units[i].bin, &units[i].origin,
                                   &units[i].log, units[i].err, sizeof units[i].err);
    return 1;
  }
  for (int i = 0; i < n; ++i) order[i] = i;
  if (order != inplace) {
    pthread_mutex_lock(&sort_mu);
    g_sort_units = units;
    qsort(order, (size_t)n, sizeof *order, longer_first);
    g_sort_units = NULL;
    pthread_mutex_unlock(&sort_mu);
  }
  pool p = {kc, units, order, n, 0};
  pthread_t tids[64];
  int started = 0;
  for (int t = 1; t < threads; ++t) /* the caller's thread is worker 0 */
    if (pthread_create(&tids[started], NULL, worker, &p) == 0) ++started;
  worker(&p);
  for (int t = 0; t < started; ++t) pthread_join(tids[t], NULL);
  if (order != inplace) free(order);
  return started + 1;
}

/* threads > 0 as given, else $HOT_JIT_THREADS (strict, 1..64), else the CPUs. -1: a bad value
 * (message in err). */
static int resolve_threads(int threads, char *err, size_t errlen) {
  if (threads > 0) return threads;
  const char *ev = env_get("HOT_JIT_THREADS");
  uint64_t v = 0;
  if (ev && num_parse_u64("HOT_JIT_THREADS", ev, 1, 64, &v, err, errlen) != 0) return -1;
  return ev ? (int)v : jit_default_threads();
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void jit_free(hot_jit *j) {
  if (!j) return;
  for (int i = 0; i < HOT_MAX_KERNELS; ++i) free(j->source[i]);
  memset(j, 0, sizeof *j);
}

/* Emits kernel k of pl alone into *e (the caller frees it with emit_free; e->n_kernels == 0: its
 * template is not in this build). Errors: RT_ERR_NOMEM (emit ran out of memory), RT_ERR_INVALID
 * (a template/plan mismatch: a bug, reported as is), message in err naming the kernel. */
static rt_status emit_kernel(const hot_layer_plan *pl, int k, hot_emitted *e, char *err,
                             size_t errlen) {
  char eerr[512];
  const int rc = emit_layer_select(pl, 1u << k, e, eerr, sizeof eerr);
  if (rc == 0) return RT_OK;
  diag_errf(err, errlen, "kernel %s: emit: %s", pl->kernels[k].name, eerr);
  return rc == EMIT_ENOMEM ? RT_ERR_NOMEM : RT_ERR_INVALID;
}

rt_status jit_layer(hot_kcache *kc, const hot_layer_plan *pl, int threads, hot_jit *out,
                    char **log, char *err, size_t errlen) {
  if (log) *log = NULL;
  if (!kc || !pl || !out) {
    diag_errf(err, errlen, "jit_layer: NULL argument");
    return RT_ERR_INVALID;
  }
  memset(out, 0, sizeof *out);
  double t0 = now_ms();
  unit units[HOT_MAX_KERNELS];
  memset(units, 0, sizeof units);
  int n = 0;
  rt_status st = RT_OK;
  const char *arch = plan_arch_caps(pl->arch)->name;
  for (int k = 0; k < pl->n_kernels && st == RT_OK; ++k) {
    int dup = -1;
    for (int u = 0; u < n; ++u)
      if (strcmp(units[u].name, pl->kernels[k].name) == 0) dup = u;
    if (dup >= 0) continue;
    hot_emitted e;
    if ((st = emit_kernel(pl, k, &e, err, errlen)) != RT_OK) break;
    if (e.n_kernels == 0) { /* template not in this build */
      out->missing[out->n_missing++] = pl->kernels[k].role;
      emit_free(&e);
      continue;
    }
    out->source[k] = e.source; /* kept: the request borrows it */
    unit *u = &units[n++];
    u->k = k;
    u->name = pl->kernels[k].name;
    u->src.program = "hot.cu";
    u->src.source = e.source;
    u->src.kernels = &u->name;
    u->src.n_kernels = 1;
    u->src.arch = arch;
  }
  if (st != RT_OK) {
    jit_free(out);
    return st;
  }
  if ((threads = resolve_threads(threads, err, errlen)) <= 0) {
    jit_free(out);
    return RT_ERR_INVALID;
  }
  out->threads = run_pool(kc, units, n, threads);
  out->n_programs = n;
  const char *ddir = kcache_debug_dir(kc);
  if (ddir) {
    const char *logs[HOT_MAX_KERNELS], *names[HOT_MAX_KERNELS];
    for (int u = 0; u < n; ++u) {
      names[u] = units[u].name;
      logs[u] = units[u].st == RT_OK ? (units[u].bin ? units[u].bin->log : NULL)
                                     : (units[u].log ? units[u].log : units[u].err);
    }
    debug_dump(ddir, pl, out, logs, names, n);
  }
  for (int u = 0; u < n && st == RT_OK; ++u)
    if (units[u].st != RT_OK) {
      st = units[u].st;
      diag_errf(err, errlen, "kernel %s: %s", units[u].name, units[u].err);
      if (log) {
        *log = units[u].log;
        units[u].log = NULL;
      }
    }
  for (int u = 0; u < n; ++u) free(units[u].log);
  if (st != RT_OK) {
    jit_free(out);
    return st;
  }
  for (int k = 0; k < pl->n_kernels; ++k)
    for (int u = 0; u < n; ++u)
      if (strcmp(units[u].name, pl->kernels[k].name) == 0) {
        out->bin[k] = units[u].bin;
        out->origin[k] = units[u].origin;
      }
  out->wall_ms = now_ms() - t0;
  return RT_OK;
}

rt_status jit_prefetch(hot_kcache *kc, const hot_layer_plan *const *plans, int n, int threads,
                       hot_jit_batch *out, char *err, size_t errlen) {
  hot_jit_batch b;
  memset(&b, 0, sizeof b);
  if (out) *out = b;
  if (!kc || (n > 0 && !plans) || n < 0) {
    diag_errf(err, errlen, "jit_prefetch: NULL argument");
    return RT_ERR_INVALID;
  }
  double t0 = now_ms();
  if ((threads = resolve_threads(threads, err, errlen)) <= 0) return RT_ERR_INVALID;
  size_t cap = (size_t)n * HOT_MAX_KERNELS + 1;
  unit *units = calloc(cap, sizeof *units);
  char **srcs = calloc(cap, sizeof *srcs);
  if (!units || !srcs) {
    free(units);
    free(srcs);
    diag_errf(err, errlen, "jit_prefetch: out of memory");
    return RT_ERR_NOMEM;
  }
  int m = 0;
  rt_status st = RT_OK;
  for (int i = 0; i < n && st == RT_OK; ++i) {
    const hot_layer_plan *pl = plans[i];
    if (!pl) {
      diag_errf(err, errlen, "jit_prefetch: plans[%d] is NULL", i);
      st = RT_ERR_INVALID;
      break;
    }
    const char *arch = plan_arch_caps(pl->arch)->name;
    for (int k = 0; k < pl->n_kernels && st == RT_OK; ++k) {
      hot_emitted e;
      if ((st = emit_kernel(pl, k, &e, err, errlen)) != RT_OK) break;
      if (e.n_kernels == 0) { /* template not in this build */
        emit_free(&e);
        continue;
      }
      int dup = 0;
      for (int u = 0; u < m && !dup; ++u)
        dup = strcmp(units[u].name, pl->kernels[k].name) == 0 &&
              strcmp(units[u].src.arch, arch) == 0 && strcmp(srcs[u], e.source) == 0;
      if (dup) {
        emit_free(&e);
        continue;
      }
      unit *u = &units[m];
      srcs[m++] = e.source; /* owned here; the request borrows it */
      u->k = k;
      u->name = pl->kernels[k].name;
      u->src.program = "hot.cu";
      u->src.source = e.source;
      u->src.kernels = &u->name;
      u->src.n_kernels = 1;
      u->src.arch = arch;
    }
  }
  if (st == RT_OK) {
    b.threads = m ? run_pool(kc, units, m, threads) : 0;
    b.n_programs = m;
    for (int u = 0; u < m; ++u) {
      if (units[u].st != RT_OK) b.n_failed++;
      else if (units[u].origin == HOT_KCACHE_COMPILED) b.n_compiled++;
    }
    b.wall_ms = now_ms() - t0;
    if (out) *out = b;
  }
  for (int u = 0; u < m; ++u) {
    free(units[u].log);
    free(srcs[u]);
  }
  free(units);
  free(srcs);
  return st;
}

/* jit.c — one cache request per distinct kernel of a layer, compiled concurrently (see jit.h). */
#define _POSIX_C_SOURCE 200809L
#include "jit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "emit.h"

int jit_default_threads(void) {
  const char *e = getenv("HOT_JIT_THREADS");
  if (e && *e) {
    char *end;
    long v = strtol(e, &end, 10);
    if (*end == '\0' && v >= 1 && v <= 64) return (int)v;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > 16 ? 16 : (int)n);
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
  int n;
  int next; /* next unit to take (atomic) */
} pool;

static void *worker(void *arg) {
  pool *p = arg;
  for (;;) {
    int i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
    if (i >= p->n) return NULL;
    unit *u = &p->units[i];
    u->st = hot_kcache_get(p->kc, &u->src, &u->bin, &u->origin, &u->log, u->err, sizeof u->err);
  }
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

rt_status jit_layer(hot_kcache *kc, const hot_layer_plan *pl, int threads, hot_jit *out,
                    char **log, char *err, size_t errlen) {
  if (log) *log = NULL;
  if (!kc || !pl || !out) {
    hot_errf(err, errlen, "jit_layer: NULL argument");
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
    char eerr[512];
    if (emit_layer_select(pl, 1u << k, &e, eerr, sizeof eerr) != 0) {
      hot_errf(err, errlen, "kernel %s: emit: %s", pl->kernels[k].name, eerr);
      st = RT_ERR_INVALID;
      break;
    }
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
  if (threads <= 0) threads = jit_default_threads();
  if (threads > n) threads = n;
  pool p = {kc, units, n, 0};
  pthread_t tids[HOT_MAX_KERNELS];
  int started = 0;
  for (int t = 1; t < threads; ++t) /* the caller's thread is worker 0 */
    if (pthread_create(&tids[started], NULL, worker, &p) == 0) ++started;
  worker(&p);
  for (int t = 0; t < started; ++t) pthread_join(tids[t], NULL);
  out->threads = started + 1;
  out->n_programs = n;
  for (int u = 0; u < n && st == RT_OK; ++u)
    if (units[u].st != RT_OK) {
      st = units[u].st;
      hot_errf(err, errlen, "kernel %s: %s", units[u].name, units[u].err);
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

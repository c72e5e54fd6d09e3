/* timing.c — how hot-bench times GPU work: CUDA events on the benchmark's stream around each
 * run (so launch gaps inside a run count, host time between runs does not), warm-up runs
 * excluded, the median of many runs with p10/p90 and min/max, and buffer rotation so that
 * every run reads inputs that are not in L2 (cold L2). */
#include <stdlib.h>

#include "bench.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile q in [0, 1] of the sorted v[0..n). */
static double pct(const double *v, int n, double q) {
  int i = (int)(q * (double)(n - 1) + 0.5);
  return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

void bench_stat_of(double *ms, int n, bench_stat *out) {
  out->n = n > 0 ? n : 0;
  out->med = out->p10 = out->p90 = out->min = out->max = 0;
  if (n <= 0) return;
  qsort(ms, (size_t)n, sizeof *ms, cmp_double);
  out->med = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  out->p10 = pct(ms, n, 0.10);
  out->p90 = pct(ms, n, 0.90);
  out->min = ms[0];
  out->max = ms[n - 1];
}

int bench_sets_for(size_t set_bytes, int l2_bytes, size_t budget_bytes) {
  size_t want = 2 * (size_t)(l2_bytes > 0 ? l2_bytes : 64 << 20); /* unknown L2: assume 64 MiB */
  size_t n = set_bytes ? (want + set_bytes - 1) / set_bytes : 2;
  if (n < 2) n = 2;
  if (set_bytes && budget_bytes && n * set_bytes > budget_bytes) n = budget_bytes / set_bytes;
  if (n < 1) n = 1;
  return n > 64 ? 64 : (int)n;
}

int bench_time(const cuda_driver *d, CUstream stream, int warmup, int iters, bench_fn fn,
               void *arg, bench_stat *out, char *err, size_t n) {
  out->n = 0;
  if (iters < 1) iters = 1;
  CUevent *ev = calloc((size_t)iters + 1, sizeof *ev);
  double *ms = calloc((size_t)iters, sizeof *ms);
  int rc = 0, made = 0;
  if (!ev || !ms) {
    snprintf(err, n, "out of host memory");
    rc = -1;
    goto done;
  }
  for (; made <= iters; ++made)
    if (d->cuEventCreate(&ev[made], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      snprintf(err, n, "cuEventCreate failed");
      rc = -1;
      goto done;
    }
  for (int i = 0; i < warmup && !rc; ++i) rc = fn(arg, i);
  if (!rc && d->cuStreamSynchronize(stream) != CUDA_SUCCESS) {
    snprintf(err, n, "cuStreamSynchronize after warm-up failed");
    rc = -1;
  }
  /* Back-to-back runs: event i+1 ends run i and starts run i+1. */
  if (!rc && d->cuEventRecord(ev[0], stream) != CUDA_SUCCESS) rc = -1;
  for (int i = 0; i < iters && !rc; ++i) {
    rc = fn(arg, warmup + i);
    if (!rc && d->cuEventRecord(ev[i + 1], stream) != CUDA_SUCCESS) rc = -1;
  }
  if (!rc && d->cuEventSynchronize(ev[iters]) != CUDA_SUCCESS) rc = -1;
  for (int i = 0; i < iters && !rc; ++i) {
    float t = 0;
    if (d->cuEventElapsedTime(&t, ev[i], ev[i + 1]) != CUDA_SUCCESS) rc = -1;
    ms[i] = t;
  }
  if (rc == -1 && err && n && !err[0]) snprintf(err, n, "CUDA event timing failed");
  if (!rc) bench_stat_of(ms, iters, out);
done:
  for (int i = 0; i < made; ++i) d->cuEventDestroy(ev[i]);
  free(ev);
  free(ms);
  return rc;
}

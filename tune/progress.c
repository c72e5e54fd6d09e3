/* progress.c — a sweep's progress: on a terminal one line redrawn in place (bar, count, ETA, the
 * last variant), elsewhere (logs, Slurm output files) one plain line per variant. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

double tune_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void tune_progress_start(tune_progress *p, FILE *f, int mode, int total) {
  memset(p, 0, sizeof *p);
  p->f = f;
  p->bar = mode < 0 ? isatty(fileno(f)) : mode;
  p->total = total;
  p->t0_ms = tune_now_ms();
  p->width = 30;
}

static void fmt_time(char *buf, size_t n, double s) {
  if (s < 60) snprintf(buf, n, "%.0fs", s);
  else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), ((int)s % 3600) / 60);
}

void tune_progress_step(tune_progress *p, const char *label) {
  ++p->done;
  const double el = (tune_now_ms() - p->t0_ms) / 1000.0;
  char eta[32] = "?", spent[32];
  if (p->done > 0 && p->total > p->done) fmt_time(eta, sizeof eta, el / p->done * (p->total - p->done));
  else snprintf(eta, sizeof eta, "0s");
  fmt_time(spent, sizeof spent, el);
  if (p->bar) {
    const int fill = p->total ? p->width * p->done / p->total : p->width;
    char bar[64];
    for (int i = 0; i < p->width; ++i) bar[i] = i < fill ? '#' : '.';
    bar[p->width] = 0;
    fprintf(p->f, "\r\033[K[%s] %d/%d ETA %s  %s", bar, p->done, p->total, eta, tune_cell(label, 60));
  } else {
    fprintf(p->f, "hot-tune: %d/%d (%s, ETA %s) %s\n", p->done, p->total, spent, eta, label);
  }
  fflush(p->f);
}

void tune_progress_end(tune_progress *p) {
  if (p->bar && p->done) fputc('\n', p->f);
  fflush(p->f);
}

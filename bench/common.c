/* common.c — what every stage of hot-bench shares: the clock, a context with the run's seed and
 * cache settings, and a layer of the spec at a given size. Called by main.c and the stages
 * (check.c, gpu.c, jit.c, scales.c, paper_diffs.c, memory.c); calls only libhot's public API. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "diag.h"
#include "fileio.h" /* --out: a regular file, opened without blocking */

double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

hot_status bench_ctx_open(hot_ctx **out, const bench_run *run, hot_backend backend,
                          const char *arch, int disk_cache, const char *cache_dir, char *err,
                          size_t n) {
  hot_options o;
  hot_options_init(&o);
  o.backend = backend;
  o.arch = arch;
  o.disk_cache = disk_cache;
  o.cache_dir = cache_dir;
  o.seed_set = 1;
  o.seed = run->seed;
  o.jit_debug = 0; /* $HOT_JIT_DEBUG */
  hot_status st = hot_ctx_create(out, &o);
  if (st != HOT_OK) snprintf(err, n, "%s", hot_errmsg(*out));
  return st;
}

hot_status bench_layer_open(hot_ctx *ctx, const bench_run *run, const bench_layer *bl,
                            int64_t batch, int64_t tokens, hot_layer **out, char *err, size_t n) {
  const hot_layer_spec *s = &run->spec_model->layers[bl->index];
  int64_t spec_tokens = s->tokens ? s->tokens : run->spec_model->tokens;
  hot_status st;
  if (tokens == spec_tokens)
    st = hot_layer_from_spec(ctx, run->opt.spec, s->name, batch, out);
  else /* fewer tokens than the spec: describe the layer in C (same fields, same seed) */
    st = hot_layer_create(ctx, s, batch, tokens, run->spec_model->recipe, out);
  if (st != HOT_OK) snprintf(err, n, "%s", hot_errmsg(ctx));
  return st;
}

void bench_paper_spec(const hot_model *m, int index, hot_layer_spec *s) {
  const hot_layer_spec *src = &m->layers[index];
  if (m->recipe == HOT_RECIPE_PAPER_CODE) {
    *s = *src;
  } else {
    hot_layer_spec_defaults(s, HOT_RECIPE_PAPER_CODE);
    memcpy(s->name, src->name, sizeof s->name);
    s->line = src->line;
    s->tokens = src->tokens;
    s->in_features = src->in_features;
    s->out_features = src->out_features;
    s->bias = src->bias;
  }
  s->dtype = HOT_DT_F32;
}

int bench_write_out(const char *path, int (*write)(FILE *f, const void *arg), const void *arg) {
  size_t pl = strlen(path);
  char *tmp = malloc(pl + 32), why[128] = "";
  int bad = 1, e = 0;
  if (tmp) {
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = NULL; /* regular files only: a FIFO at path or at tmp is refused, not waited on */
    if (fileio_check_regular(path, 0, why, sizeof why) == 0)
      f = fileio_fopen(tmp, "wb", why, sizeof why);
    if (f) {
      bad = write(f, arg) != 0;
      e = errno;
      if (fclose(f) != 0 && !bad) bad = 1, e = errno;
      if (!bad && rename(tmp, path) != 0) bad = 1, e = errno;
      if (bad) {
        snprintf(why, sizeof why, "%s", strerror(e ? e : EIO));
        remove(tmp);
      }
    }
  } else {
    snprintf(why, sizeof why, "out of memory");
  }
  if (bad) diag_fprintf(stderr, "hot-bench: --out %s: cannot write: %s\n", path, why);
  free(tmp);
  return bad;
}

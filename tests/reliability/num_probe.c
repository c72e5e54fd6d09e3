/* num_probe.c — the C side of tests/reliability/test_numbers.py (numbers parsed one way):
 *   num_probe int LO HI VALUE...     each VALUE through num_parse_u64 in [LO, HI]
 *   num_probe double LO HI VALUE...  each VALUE through num_parse_double
 *   num_probe threads                the call site HOT_CPU_THREADS: hot_ctx_create on the CPU
 *                                    backend with the environment as it is, one backward, and
 *                                    the threads the process then has (/proc/self/task)
 * One line per value: "ok N" or "error MESSAGE". Exit 0 (the lines say the results), 2 on a
 * usage error. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hot.h"
#include "num.h"
#include "plan.h" /* plan_spec_defaults */
#include "runtime/api_util.h"

static int task_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

/* The thread count a CPU context created now runs its backward on. */
static int threads_site(void) {
  hot_ctx *ctx = NULL;
  setenv("HOT_BACKEND", "cpu", 1);
  if (hot_ctx_create(&ctx, NULL) != HOT_OK) {
    printf("error %s\n", ctx ? hot_errmsg(ctx) : "hot_ctx_create failed");
    hot_ctx_destroy(ctx);
    return 0;
  }
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 2048;
  s.out_features = 2048;
  hot_layer *l = NULL;
  au_io io;
  au_io_init(&io, 4 * 256, 2048, 2048, 5);
  hot_status st = hot_layer_create(ctx, &s, 4, 256, HOT_RECIPE_HOT, &l);
  if (st == HOT_OK) st = hot_layer_save(l, io.x, HOT_DT_F32, NULL, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(l, io.gy, io.w, HOT_DT_F32, NULL, io.gx, io.gw, io.gb, 3, NULL);
  if (st == HOT_OK) printf("ok %d\n", task_count());
  else printf("error backward: %s\n", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  au_io_free(&io);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "threads")) return threads_site();
  uint64_t lo = 0, hi = 0;
  char err[200];
  if (argc < 4 || (strcmp(argv[1], "int") && strcmp(argv[1], "double")) ||
      num_parse_u64("LO", argv[2], 0, UINT64_MAX, &lo, err, sizeof err) ||
      num_parse_u64("HI", argv[3], lo, UINT64_MAX, &hi, err, sizeof err)) {
    fprintf(stderr, "usage: num_probe int|double LO HI VALUE... | num_probe threads\n");
    return 2;
  }
  for (int i = 4; i < argc; ++i) {
    uint64_t u = 0;
    double d = 0;
    if (argv[1][0] == 'i' ? num_parse_u64("N", argv[i], lo, hi, &u, err, sizeof err) == 0
                          : num_parse_double("N", argv[i], (double)lo, (double)hi, &d, err,
                                             sizeof err) == 0) {
      if (argv[1][0] == 'i') printf("ok %llu\n", (unsigned long long)u);
      else printf("ok %.17g\n", d);
    } else {
      printf("error %s\n", err);
    }
  }
  return 0;
}

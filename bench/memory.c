/* memory.c — hot-bench --memory: what ABC keeps, measured on real saves. For every layer of the
 * spec, under the spec's recipe and under paper_code, at B = 1, 4 and the spec's batch (or
 * --batch alone): the layer is planned in a CPU context, x (seeded Gaussian) is saved into a
 * buffer of exactly hot_layer_saved_bytes (so a write past it is a heap overflow the sanitizers
 * and valgrind see), and the table compares that buffer with the method's own count K·I int8 +
 * one fp32 scale per scale group (plan_abc_method_bytes), with an fp32 x, and shows what the
 * backward pays for it: where the g_w GEMM's operand layout (I rows of k_pad, K padded to its K
 * tile per group) differs from the saved one, abc_unpack reads the I·K saved codes and writes
 * I·k_pad bytes into the context's workspace. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MEM_GOAL 1.05 /* saved bytes at most this many times the method's count */

typedef struct {
  int rows, over, above_x; /* above_x: rows that keep more than an fp32 x (T < K / 4) */
  double worst;
  char worst_at[96];
} mem_sum;

/* One (layer, recipe, B) row. 0 (also for a shape paper_code cannot plan: said and skipped), or 1
 * when the layer could not be planned under its own recipe or saved (said). */
static int mem_row(const bench_run *run, const hot_model *model, hot_ctx *ctx, const bench_layer *bl,
                   int paper, int64_t B, mem_sum *sum, FILE *f) {
  const hot_layer_spec *s = &model->layers[bl->index];
  const int64_t L = run->opt.tokens ? run->opt.tokens : (s->tokens ? s->tokens : model->tokens);
  hot_layer *layer = NULL;
  hot_status st;
  char err[400] = "";
  if (paper) {
    hot_layer_spec ps;
    bench_paper_spec(model, bl->index, &ps);
    st = hot_layer_create(ctx, &ps, B, L, HOT_RECIPE_PAPER_CODE, &layer);
    if (st != HOT_OK) snprintf(err, sizeof err, "%s", hot_errmsg(ctx));
  } else {
    st = bench_layer_open(ctx, run, bl, B, L, &layer, err, sizeof err);
  }
  const char *recipe = paper ? "paper_code" : run->recipe;
  if (st != HOT_OK) { /* paper_code may not fit a shape (p beyond 1024): a skip, said */
    fprintf(f, "%-12s %-10s %4lld: %s: %s: %.300s\n", bl->name, recipe, (long long)B,
            paper && st == HOT_ERR_PLAN ? "skipped, not plannable" : "not planned",
            hot_status_name(st), err);
    return paper && st == HOT_ERR_PLAN ? 0 : 1;
  }
  const hot_layer_plan *pl = hot_layer_get_plan(layer);
  const size_t nb = hot_layer_saved_bytes(layer);
  const int64_t method = plan_abc_method_bytes(pl), fp32 = pl->T * pl->I * 4;
  const size_t nx = (size_t)(pl->T * pl->I);
  float *x = malloc(nx * sizeof *x);
  void *buf = malloc(nb ? nb : 1); /* exactly the reported size (malloc: 16-byte aligned) */
  int rc = 0;
  if (!x || !buf) {
    fprintf(f, "%-12s %-10s %4lld: out of host memory\n", bl->name, recipe, (long long)B);
    rc = 1;
    goto done;
  }
  tooldata_fill_normal(x, nx, run->seed, 7000u + (uint64_t)bl->index);
  hot_layer_info info;
  uint16_t *half = NULL; /* x in the layer's dtype when it is bf16 or f16 */
  st = hot_layer_get_info(layer, &info);
  if (st == HOT_OK && tooldata_round_to_dtype(x, nx, info.dtype, &half) != 0) {
    fprintf(f, "%-12s %-10s %4lld: out of host memory\n", bl->name, recipe, (long long)B);
    rc = 1;
    goto done;
  }
  if (st == HOT_OK) st = hot_layer_save(layer, half ? (const void *)half : x, info.dtype, buf, NULL);
  free(half);
  hot_stats stats;
  if (st == HOT_OK) st = hot_ctx_stats(ctx, &stats);
  if (st != HOT_OK) {
    fprintf(f, "%-12s %-10s %4lld: save failed: %s: %.300s\n", bl->name, recipe, (long long)B,
            hot_status_name(st), hot_errmsg(ctx));
    rc = 1;
    goto done;
  }
  if (!pl->abc.enabled) {
    fprintf(f, "%-12s %-10s %4lld %7lld %5lld %12zu %12s %8s %7.3f  (no ABC: fp32 x)\n", bl->name,
            recipe, (long long)B, (long long)pl->T, (long long)pl->I, nb, "-", "-",
            (double)nb / (double)fp32);
    goto done;
  }
  const double ratio = (double)nb / (double)method;
  const int unpack = plan_saved_unpacked(pl);
  const int64_t up_w = unpack ? plan_buffer_bytes(pl, HOT_BUF_Q_HX) : 0;
  fprintf(f, "%-12s %-10s %4lld %7lld %5lld %6lld %3lld %12zu %12lld %8.4f %7.4f  %s",
          bl->name, recipe, (long long)B, (long long)pl->T, (long long)pl->I, (long long)pl->hla.k,
          (long long)pl->hla.groups, nb, (long long)method, ratio, (double)nb / (double)fp32,
          stats.saved_bytes == (int64_t)nb ? "=" : "MISMATCH");
  if (unpack && pl->hla.groups > 1)
    fprintf(f, "  unpack %lld -> %lld B (k_pad %lld = %lld groups x %lld)\n",
            (long long)(pl->I * pl->hla.k), (long long)up_w, (long long)pl->hla.gemm.k_pad,
            (long long)pl->hla.groups, (long long)pl->hla.group_k_pad);
  else if (unpack)
    fprintf(f, "  unpack %lld -> %lld B (k_pad %lld)\n", (long long)(pl->I * pl->hla.k),
            (long long)up_w, (long long)pl->hla.gemm.k_pad);
  else
    fprintf(f, "  in place\n");
  sum->rows++;
  sum->above_x += (int64_t)nb > fp32;
  if (ratio > MEM_GOAL || stats.saved_bytes != (int64_t)nb) sum->over++;
  if (ratio > sum->worst) {
    sum->worst = ratio;
    snprintf(sum->worst_at, sizeof sum->worst_at, "%s %s B=%lld", bl->name, recipe, (long long)B);
  }
done:
  free(x);
  free(buf);
  hot_layer_destroy(layer);
  return rc;
}

int bench_memory(const bench_run *run, const hot_model *model, FILE *f) {
  if (!run || !model || !f) return 1;
  int64_t batches[3] = {1, 4, 4}; /* 1, 4 and the spec's batch, ascending, each once */
  int nbatch = 2;
  if (run->opt.batch) {
    batches[0] = run->opt.batch;
    nbatch = 1;
  } else if (model->batch != 1 && model->batch != 4) {
    const int at = model->batch < 4 ? 1 : 2;
    if (at == 1) batches[2] = 4;
    batches[at] = model->batch;
    nbatch = 3;
  }
  const int recipes = model->recipe == HOT_RECIPE_PAPER_CODE ? 1 : 2;
  char err[400];
  hot_ctx *ctx = NULL;
  if (bench_ctx_open(&ctx, run, HOT_BACKEND_CPU, NULL, -1, NULL, err, sizeof err) != HOT_OK) {
    fprintf(f, "hot-bench --memory: CPU context: %s\n", err);
    hot_ctx_destroy(ctx);
    return 1;
  }
  fprintf(f, "hot-bench --memory: %s, saved activations of real saves (CPU backend, buffers of "
          "exactly the reported size) against the method's own count K.I int8 + one fp32 scale "
          "per group; goal <= %.2fx\n", run->model, MEM_GOAL);
  fprintf(f, "%-12s %-10s %4s %7s %5s %6s %3s %12s %12s %8s %7s  %s\n", "layer", "recipe", "B", "T",
          "I", "K", "grp", "saved B", "method B", "/method", "/fp32",
          "stats  backward (g_w GEMM operand)");
  int rc = 0;
  mem_sum sum = {0, 0, 0, 0.0, ""};
  for (int li = 0; li < run->n; ++li)
    for (int r = 0; r < recipes; ++r)
      for (int b = 0; b < nbatch; ++b)
        if (mem_row(run, model, ctx, &run->layers[li], r == 1 || model->recipe == HOT_RECIPE_PAPER_CODE,
                    batches[b], &sum, f))
          rc = 1;
  hot_ctx_destroy(ctx);
  fprintf(f, "%d rows with ABC: largest saved / method %.4f (%s); %d above %.2f or with stats "
          "!= the buffer\n", sum.rows, sum.worst, sum.worst_at[0] ? sum.worst_at : "-", sum.over,
          MEM_GOAL);
  if (sum.above_x)
    fprintf(f, "%d rows keep more than an fp32 x (/fp32 > 1): fewer tokens T than K / 4, the "
            "method's K = blocks.r code rows (a head at a small batch)\n", sum.above_x);
  return rc ? 1 : sum.over ? 2 : 0;
}

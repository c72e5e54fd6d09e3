/* tools.c — the functions of the tools' door (hot_tools.h): what hot-gen, hot-bench and hot-tune
 * read of a context or a layer, so that only this file (and runtime/) knows the structs behind
 * hot.h's handles. */
#include "hot_tools.h"

#include <pthread.h>
#include <stdio.h>

#include "../hot_internal.h"

hot_status tools_layer_create(hot_ctx *ctx, const hot_layer_spec *spec, int64_t batch,
                                  int64_t tokens, hot_recipe recipe, int layer_id,
                                  hot_layer **out) {
  return layer_create_resolved(ctx, spec, batch, tokens, recipe, layer_id, out);
}

int tools_layer_jit_kernels(const hot_layer *layer, hot_tools_jit_kernel *out, int cap) {
  if (!layer || !out || cap <= 0 || !layer->plan) return 0;
  const hot_layer_plan *pl = layer->plan;
  int n = 0;
  for (int k = 0; k < pl->n_kernels && n < cap; ++k) {
    const hot_kernel_binary *b = layer->jit.bin[k];
    if (!b || !layer->jit.source[k] || b->origin != HOT_KCACHE_COMPILED) continue;
    hot_tools_jit_kernel *o = &out[n++];
    o->name = pl->kernels[k].name;
    o->compile_ms = b->compile_ms;
    o->phases_known = b->phases_known;
    o->front_ms = b->front_ms;
    o->nvvm_ms = b->nvvm_ms;
    o->ptxas_ms = b->ptxas_ms;
  }
  return n;
}

static struct {
  pthread_once_t once;
  int ok;
  fast_config cfg;
  char err[256];
} g_fast = {PTHREAD_ONCE_INIT, 0, {0, 0, FAST_LEVEL_SCALAR, NULL}, ""};

static void fast_config_read(void) {
  int threads = 0, isa = -1;
  if (env_read_cpu(&threads, &isa, g_fast.err, sizeof g_fast.err) != RT_OK) return;
  fast_config_init(&g_fast.cfg, threads, isa);
  g_fast.ok = 1;
}

const fast_config *tools_fast_config(char *err, size_t errlen) {
  pthread_once(&g_fast.once, fast_config_read);
  if (!g_fast.ok && err && errlen) snprintf(err, errlen, "%s", g_fast.err);
  return g_fast.ok ? &g_fast.cfg : NULL;
}

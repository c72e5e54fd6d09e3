/* tools.c — the functions of the tools' door (hot_tools.h): what hot-gen, hot-bench and hot-tune
 * read of a context or a layer, so that only this file (and runtime/) knows the structs behind
 * hot.h's handles. */
#include "hot_tools.h"

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

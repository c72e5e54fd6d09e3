/* cpu_backend.c — the per-step calls of the CPU backend: the fast CPU path (runtime/cpu/fast.h:
 * threaded, SIMD; the context's HOT_CPU_THREADS and HOT_CPU_ISA, read once) whose results are the reference twins' (templates/ref.h)
 * bit for bit, so they are also what the GPU kernels are compared with.
 *
 * The saved buffer holds what hot_ref_saved holds, flat: with ABC the saved codes (I rows of
 * hla.k int8, unpadded) followed by s_x^ (hla.groups fp32 scales) at plan_saved_scale_offset;
 * without ABC the fp32 copy of x (T * I floats). The same layout as the CUDA backend's. Recipe
 * nvfp4 (CPU only): with ABC x^'s MXFP8 codes and E8M0 scales as the g_w GEMM reads them
 * (templates/nvfp4_plan.h, CONTRACT.md 20.6), nothing else. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fast.h"
#include "ref.h"

/* The CPU side of a layer (layer->be): its calls' steps, resolved once when the layer is created
 * (a call asks the planner nothing), and the layer-owned saved buffer. */
typedef struct {
  fast_prepared prep;
  void *host_saved; /* allocated at the first save into the layer's own buffer */
} cpu_layer;

static cpu_layer *CPU(const hot_layer *layer) { return layer->be; }

/* The context's fast_config (ctx->be): HOT_CPU_THREADS and HOT_CPU_ISA as hot_ctx_create read
 * them (ctx->env), fixed for the life of the context. */
static const fast_config *CFG(const hot_layer *layer) { return layer->ctx->be; }

static hot_status cpu_ref_status(hot_layer *layer, int rc, const char *what) {
  hot_ctx *ctx = layer->ctx;
  const char *n = layer->spec.name;
  switch (rc) {
  case HOT_REF_OK: return HOT_OK;
  case HOT_REF_EARG: return ctx_fail(ctx, HOT_ERR_INVALID, "layer '%s': %s: bad argument", n, what);
  case HOT_REF_ENOMEM: return ctx_fail(ctx, HOT_ERR_NOMEM, "layer '%s': %s: out of memory", n, what);
  case HOT_REF_ENONFINITE:
    return ctx_fail(ctx, HOT_ERR_NONFINITE, "layer '%s': %s: NaN or Inf in the input (or the "
                    "transform overflowed fp32)", n, what);
  case HOT_REF_ESHAPE:
  default:
    return ctx_fail(ctx, HOT_ERR_INTERNAL, "layer '%s': %s: %s (plan inconsistent)", n, what,
                    ref_status_name(rc));
  }
}

/* Offset of s_x^ in an ABC buffer (the codes' bytes rounded up to 16). */
static int64_t scale_offset(const hot_layer_plan *pl) { return plan_saved_scale_offset(pl); }

/* The layer's own buffer, allocated on first use (16-byte aligned). */
static void *own_buffer(hot_layer *layer) {
  cpu_layer *c = CPU(layer);
  if (!c->host_saved) {
    size_t n = (size_t)layer_saved_bytes(layer->plan);
    n = (n + 63) & ~(size_t)63;
    c->host_saved = aligned_alloc(64, n ? n : 64);
  }
  return c->host_saved;
}

static hot_status cpu_layer_save(hot_layer *layer, const void *x, void *saved) {
  const hot_layer_plan *pl = layer->plan;
  void *dst = saved ? saved : own_buffer(layer);
  if (!dst) return ctx_fail(layer->ctx, HOT_ERR_NOMEM, "hot_layer_save: out of memory");
  hot_ref_saved s;
  /* INT codes go straight into dst (no copy); recipe nvfp4's come back in s.q_x */
  int rc = fast_prepared_save_into(CFG(layer), &CPU(layer)->prep, x, layer->spec.dtype, dst, &s);
  if (rc) return cpu_ref_status(layer, rc, "save");
  if (s.q_x && pl->fmt == HOT_FMT_NVFP4) { /* the MXFP8 codes and scales, no fp32 scale */
    memcpy(dst, s.q_x, (size_t)plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES));
  } else if (s.s_x) { /* the codes are in dst already */
    const int64_t nc = plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES), off = scale_offset(pl);
    memset((char *)dst + nc, 0, (size_t)(off - nc)); /* the alignment gap: no stale bytes */
    memcpy((char *)dst + off, s.s_x, (size_t)pl->hla.groups * sizeof *s.s_x);
  } else {
    memcpy(dst, s.x, (size_t)(pl->T * pl->I) * sizeof(float));
  }
  ref_saved_free(&s);
  return HOT_OK;
}

static hot_status cpu_layer_backward(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                              float *g_x, float *g_w, float *g_b, uint32_t step) {
  const hot_layer_plan *pl = layer->plan;
  const void *src = saved ? saved : CPU(layer)->host_saved;
  /* A view of the flat buffer as the twin's struct (nothing is freed through it). */
  hot_ref_saved s;
  memset(&s, 0, sizeof s);
  float *sx = NULL; /* the scales, copied out: a caller's buffer need not be aligned for floats */
  if (!g_w) {
    /* no g_w: the saved activations are not read (there may be none) */
  } else if (pl->hla.enabled && pl->abc.enabled && pl->fmt == HOT_FMT_NVFP4) {
    s.q_x = (int8_t *)(uintptr_t)src; /* the MXFP8 codes and scales (templates/nvfp4_plan.h) */
  } else if (pl->hla.enabled && pl->abc.enabled) {
    const size_t nb = (size_t)pl->hla.groups * sizeof *sx;
    sx = malloc(nb);
    if (!sx) return ctx_fail(layer->ctx, HOT_ERR_NOMEM, "hot_layer_backward: out of memory");
    s.q_x = (int8_t *)(uintptr_t)src;
    memcpy(sx, (const char *)src + scale_offset(pl), nb);
    s.s_x = sx;
  } else {
    s.x = (float *)(uintptr_t)src;
  }
  s.bytes = layer_saved_bytes(pl);
  unsigned over = 0;
  int rc = fast_prepared_backward_check(CFG(layer), &CPU(layer)->prep, &s, g_y, w, layer->spec.dtype, layer->gran,
                                     layer->seed, step, g_x, g_w, g_b, &over);
  free(sx);
  if (rc) return cpu_ref_status(layer, rc, "backward");
  /* The inputs were finite (the twins refuse others): a non-finite output is an overflow, found
   * by the fast path's GEMM epilogues while they wrote it. */
  const char *which = over & FAST_OVERFLOW_GX ? "g_x"
                      : over & FAST_OVERFLOW_GW ? "g_w"
                      : over & FAST_OVERFLOW_GB ? "g_b" : NULL;
  if (which)
    return ctx_fail(layer->ctx, HOT_ERR_RANGE, "hot_layer_backward: layer '%s': %s overflowed "
                    "fp32 (finite inputs too close to FLT_MAX for the transforms and scales)",
                    layer->spec.name, which);
  return HOT_OK;
}

static hot_status cpu_layer_calibrate(hot_layer *layer, const void *g_y, uint32_t step) {
  hot_ref_lqs_result r;
  int rc = fast_prepared_calibrate(CFG(layer), &CPU(layer)->prep, g_y, layer->spec.dtype, layer->seed, step, &r);
  if (rc) return cpu_ref_status(layer, rc, "calibrate");
  layer->gran = r.choice;
  layer->lqs_e_tensor = r.e_tensor;
  layer->lqs_e_token = r.e_token;
  return HOT_OK;
}

/* ---- whose threads run the CPU backend (hot.h) ------------------------------------------------ */

/* fast_use_openmp refuses names of 64 bytes or more (-3): hot.h promises HOT_NAME_MAX */
_Static_assert(HOT_NAME_MAX == 64, "fast_use_openmp's name limit is HOT_NAME_MAX");

hot_status hot_cpu_use_openmp(const char *runtime) {
  switch (fast_use_openmp(runtime)) {
  case 0: return HOT_OK;
  case -2: return HOT_ERR_MISUSE;
  case -3: return HOT_ERR_INVALID;
  default: return HOT_ERR_NOT_FOUND;
  }
}

int hot_cpu_openmp(char *buf, size_t cap) { return fast_openmp(cap ? buf : NULL, cap); }

unsigned long long hot_cpu_regions(void) { return fast_regions(); }

unsigned long long hot_cpu_openmp_fallbacks(void) { return fast_openmp_fallbacks(); }

/* ---- the backend interface (backend.h) ------------------------------------------------------ */

static hot_status ops_init(hot_ctx *ctx) {
  fast_config *c = malloc(sizeof *c);
  ctx->be = c;
  if (!c) return ctx_fail(ctx, HOT_ERR_NOMEM, "hot_ctx_create: out of memory");
  fast_config_init(c, ctx->env.cpu_threads, ctx->env.cpu_isa);
  return HOT_OK;
}

/* The fast path keeps its large temporary blocks between calls (process-wide); a context going
 * away hands them back, so a finished model does not keep its scratch (other contexts simply
 * allocate again). */
static void ops_fini(hot_ctx *ctx) {
  free(ctx->be);
  ctx->be = NULL;
  fast_release_scratch();
}

_Static_assert(HOT_MAX_CPU_THREADS == FAST_MAX_THREADS, "hot.h's thread bound is the fast path's");

/* hot_ctx_set_cpu_threads: the context's config takes n threads (0: HOT_CPU_THREADS as read at
 * creation, else the online CPUs, as ops_init set it); fast_config_init clamps and resolves. */
static int ops_cpu_threads(hot_ctx *ctx, int n) {
  fast_config *c = ctx->be;
  if (n >= 0) {
    fast_config t;
    fast_config_init(&t, n > 0 ? n : ctx->env.cpu_threads, ctx->env.cpu_isa);
    c->threads = t.threads;
  }
  return c->threads;
}

static hot_status ops_layer_init(hot_layer *layer) {
  cpu_layer *c = calloc(1, sizeof *c);
  if (!(layer->be = c))
    return ctx_fail(layer->ctx, HOT_ERR_NOMEM, "layer '%s': out of memory", layer->spec.name);
  if (fast_layer_prepare(layer->plan, &c->prep)) {
    free(c);
    layer->be = NULL;
    return ctx_fail(layer->ctx, HOT_ERR_INTERNAL, "layer '%s': the planner's step table does not "
                    "fit the CPU backend (more than %d steps in a call)", layer->spec.name,
                    FAST_MAX_STEPS - 1);
  }
  return HOT_OK;
}

static hot_status ops_save(hot_layer *layer, const void *x, void *saved, void *stream) {
  (void)stream;
  return cpu_layer_save(layer, x, saved);
}

static hot_status ops_backward(hot_layer *layer, const void *g_y, const void *w, const void *saved,
                               float *g_x, float *g_w, float *g_b, uint32_t step, void *stream) {
  (void)stream;
  return cpu_layer_backward(layer, g_y, w, saved, g_x, g_w, g_b, step);
}

static hot_status ops_calibrate(hot_layer *layer, const void *g_y, uint32_t step, void *stream) {
  (void)stream;
  return cpu_layer_calibrate(layer, g_y, step);
}

/* Every CPU call reports its own overflow: nothing is pending. */
static hot_status ops_check(hot_layer *layer) {
  (void)layer;
  return HOT_OK;
}

static void ops_release(hot_layer *layer) {
  cpu_layer *c = CPU(layer);
  if (c) free(c->host_saved);
  free(c);
  layer->be = NULL;
  layer->saved_valid = 0;
}

/* No kernels to load (load NULL: layer.c compiles only to fill caches under a forced arch), no
 * kernel times. */
const hot_backend_ops cpu_backend_ops = {
    .kind = HOT_BACKEND_CPU, .init = ops_init, .fini = ops_fini, .layer_init = ops_layer_init,
    .load = NULL, .save = ops_save, .backward = ops_backward, .calibrate = ops_calibrate,
    .check = ops_check, .times = NULL, .release = ops_release, .cpu_threads = ops_cpu_threads};

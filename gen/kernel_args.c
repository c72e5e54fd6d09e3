/* kernel_args.c — the argument appenders of kernel_desc.h (kd_ptr, kd_i32, ...): each appends one
 * typed argument to a kernel's argument vector, or marks the vector bad (too many arguments, a
 * value out of its type's range, a missing tensor map); the amax words' layout; kd_block_gpu;
 * kd_no_output.
 * Called by the descriptors (gen/kernels/); calls nothing of the generator but the GEMM-path
 * table (plan_tables.c). */
#include <string.h>

#include "kernel_desc.h"

/* ---- argument appenders ---------------------------------------------------------------------- */

static hot_arg *next(hot_argv *v, hot_arg_type t) {
  if (v->n >= HOT_MAX_ARGS) {
    v->bad = 1;
    return NULL;
  }
  hot_arg *a = &v->a[v->n++];
  memset(a, 0, sizeof *a);
  a->type = t;
  return a;
}

void kd_ptr(hot_argv *v, uint64_t p) {
  hot_arg *a = next(v, HOT_ARG_PTR);
  if (a) a->u = p;
}
void kd_i32(hot_argv *v, int64_t x) {
  hot_arg *a = next(v, HOT_ARG_I32);
  if (!a) return;
  if (x < INT32_MIN || x > INT32_MAX) v->bad = 1;
  a->i = x;
}
void kd_u32(hot_argv *v, uint64_t x) {
  hot_arg *a = next(v, HOT_ARG_U32);
  if (!a) return;
  if (x > UINT32_MAX) v->bad = 1;
  a->u = x;
}
void kd_i64(hot_argv *v, int64_t x) {
  hot_arg *a = next(v, HOT_ARG_I64);
  if (a) a->i = x;
}
void kd_u64(hot_argv *v, uint64_t x) {
  hot_arg *a = next(v, HOT_ARG_U64);
  if (a) a->u = x;
}
void kd_f32(hot_argv *v, float x) {
  hot_arg *a = next(v, HOT_ARG_F32);
  if (a) a->f = x;
}
void kd_map(hot_argv *v, const hot_launch_in *in, int i) {
  hot_arg *a = next(v, HOT_ARG_MAP);
  if (!a) return;
  if (i < 0 || i > 1 || !in->tmap[i]) {
    v->bad = 1;
    return;
  }
  a->map = in->tmap[i];
  a->sym = HOT_SYM_MAP + i;
}
void kd_buf(hot_argv *v, const hot_launch_in *in, hot_lbuf b) {
  hot_arg *a = next(v, HOT_ARG_PTR);
  if (!a) return;
  if ((int)b < 0 || b >= HOT_LB_COUNT) {
    v->bad = 1;
    return;
  }
  a->u = in->buf[b];
  a->sym = HOT_SYM_BUF + (int)b;
}
void kd_buf_if(hot_argv *v, const hot_launch_in *in, int cond, hot_lbuf b) {
  if (cond) kd_buf(v, in, b);
  else kd_ptr(v, 0);
}
void kd_step(hot_argv *v, const hot_launch_in *in) {
  hot_arg *a = next(v, HOT_ARG_U32);
  if (!a) return;
  a->u = in->step;
  a->sym = HOT_SYM_STEP;
}

/* ---- amax words ------------------------------------------------------------------------------ */

static int64_t hla_sample_words(const hot_layer_plan *p, const hot_quant *q) {
  return p->hla.enabled && q->gran == HOT_GRAN_SAMPLE ? p->hla.groups : 0;
}

int64_t kd_amax_bytes(const hot_layer_plan *p) {
  return 4 * (HOT_AMAX_WORDS + (p->hq.enabled ? p->B : 0) + hla_sample_words(p, &p->hla.x) +
              hla_sample_words(p, &p->hla.g));
}

int64_t kd_amax_hla(const hot_layer_plan *p, int is_g) {
  const hot_quant *q = is_g ? &p->hla.g : &p->hla.x;
  if (q->gran != HOT_GRAN_SAMPLE) return 4 * (is_g ? HOT_AMAX_HLA_G : HOT_AMAX_ABC_X);
  return 4 * (HOT_AMAX_WORDS + (p->hq.enabled ? p->B : 0) +
              (is_g ? hla_sample_words(p, &p->hla.x) : 0));
}

/* ---- recipe nvfp4 on the GPU ------------------------------------------------------------- */

int kd_block_gpu(const hot_layer_plan *p) {
  const hot_gemm_path_info *g = p ? plan_gemm_path_info(p->hq.gemm.path) : NULL;
  return p && p->fmt == HOT_FMT_NVFP4 && g && g->templ != NULL;
}

const char *kd_no_output(hot_kernel_role role) {
  (void)role;
  return NULL;
}

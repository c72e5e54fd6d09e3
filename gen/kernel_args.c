/* kernel_args.c — the argument appenders of kernel_desc.h (kd_ptr, kd_i32, ...): each appends one
 * typed argument to a kernel's argument vector, or marks the vector bad (too many arguments, a
 * value out of its type's range, a missing tensor map). Called by the descriptors
 * (gen/kernels/); calls nothing of the generator. */
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
void kd_map(hot_argv *v, const void *map128) {
  hot_arg *a = next(v, HOT_ARG_MAP);
  if (!a) return;
  if (!map128) v->bad = 1;
  a->map = map128;
}

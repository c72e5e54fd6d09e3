/* kernel_params.c — the #define list of a kernel instance (kernel_params.h) and kd_param
 * (kernel_desc.h). */
#include "kernel_params.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void params_free(params *p) {
  for (int i = 0; i < p->n; ++i) free(p->value[i]);
  p->n = 0;
}

static void param_vset(params *p, const char *name, const char *fmt, va_list ap0) {
  if (p->failed) return;
  if (p->n >= MAX_PARAMS || strlen(name) >= PARAM_LEN) {
    p->failed = 2; /* a bug of the caller: more parameters or a longer name than the table takes */
    return;
  }
  va_list ap;
  va_copy(ap, ap0);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *v = len < 0 ? NULL : malloc((size_t)len + 1);
  if (v) {
    va_copy(ap, ap0);
    vsnprintf(v, (size_t)len + 1, fmt, ap);
    va_end(ap);
  }
  if (!v) {
    p->failed = 1;
    return;
  }
  memcpy(p->name[p->n], name, strlen(name) + 1);
  p->value[p->n++] = v;
}

void param_set(params *p, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  param_vset(p, name, fmt, ap);
  va_end(ap);
}

void kd_param(hot_params *p, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  param_vset(p, name, fmt, ap);
  va_end(ap);
}

void kd_param_oom(hot_params *p) {
  if (!p->failed) p->failed = 1;
}


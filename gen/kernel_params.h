/* kernel_params.h — the #define list of one kernel instance (struct hot_params, kernel_desc.h's
 * opaque type), shared by the emitter (emit.c) and the descriptors' params() (through kd_param).
 * Kept apart from emit.c so that the planner and descriptors link without the embedded
 * templates. */
#ifndef HOT_KERNEL_PARAMS_H
#define HOT_KERNEL_PARAMS_H

#include "kernel_desc.h"

#define MAX_PARAMS 24
#define PARAM_LEN 48

/* The parameters of one kernel instance: names are identifiers of at most PARAM_LEN - 1
 * characters (longer ones are an error), values are heap strings of any length. */
struct hot_params {
  int n;
  int failed;               /* 1: out of memory; 2: too many parameters or a name too long */
  char name[MAX_PARAMS][PARAM_LEN];
  char *value[MAX_PARAMS];  /* owned */
};
typedef struct hot_params params;

/* Frees the values (owned by p) and empties it. */
void params_free(params *p);
/* Appends name = printf text; sets p->failed (1 out of memory, 2 table full or name too long)
 * instead, and does nothing once failed. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void param_set(params *p, const char *name, const char *fmt, ...);

#endif

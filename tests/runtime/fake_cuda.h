/* fake_cuda.h — what the recording fake driver (fake_cuda.c) shows the test. */
#ifndef HOT_TESTS_FAKE_CUDA_H
#define HOT_TESTS_FAKE_CUDA_H
#include <stdint.h>

#define FAKE_CUDA_MAX_LAUNCHES 256
#define FAKE_CUDA_MAX_ARGS 24

typedef struct {
  char name[128];          /* kernel name, or "memset32" for cuMemsetD32Async */
  unsigned grid[3], block[3], smem;
  int n_args;
  int64_t arg[FAKE_CUDA_MAX_ARGS]; /* integers and pointers (memset32: dst, words) */
  float farg[FAKE_CUDA_MAX_ARGS];  /* float arguments */
} fake_cuda_launch;

typedef struct {
  int n;                   /* launches recorded in l[] (at most FAKE_CUDA_MAX_LAUNCHES) */
  long total;              /* kernel launches in all (recorded or not) */
  int syncs;               /* cuStreamSynchronize calls */
  int events_created;      /* cuEventCreate calls */
  int events_recorded;     /* cuEventRecord calls */
  int events_destroyed;    /* cuEventDestroy calls */
  int dyn_smem_max;        /* largest max-dynamic-shared-memory attribute set on a function */
  int range_resets;        /* memsets of a module's hot_range_flag word */
  int untimed_created, untimed_recorded, untimed_destroyed; /* CU_EVENT_DISABLE_TIMING events */
  fake_cuda_launch l[FAKE_CUDA_MAX_LAUNCHES];
} fake_cuda_log_t;

typedef fake_cuda_log_t *(*fake_cuda_log_fn)(void);
typedef void (*fake_cuda_reset_fn)(void);
typedef void (*fake_cuda_set_lqs_fn)(double e_tensor, double e_token, int choice);
#include <stddef.h>
typedef size_t (*fake_cuda_alloc_size_fn)(uintptr_t p); /* bytes of the allocation at p, or 0 */
typedef void (*fake_cuda_raise_range_fn)(int on);

#endif

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
  int64_t arg[FAKE_CUDA_MAX_ARGS]; /* integers and pointers (memset32: dst, words); a tensor
                                      map passed by value: its index in tmaps[], -1 when its
                                      bytes are not a map the fake encoded */
  float farg[FAKE_CUDA_MAX_ARGS];  /* float arguments */
  uint64_t stream;                 /* the stream it was enqueued on */
} fake_cuda_launch;

/* One cuTensorMapEncodeTiled call, as the caller passed it (rank 2 entries; the fake refuses
 * what the driver documents as invalid and records the call either way). */
#define FAKE_CUDA_MAX_TMAPS 64
typedef struct {
  int data_type;           /* CU_TENSOR_MAP_DATA_TYPE_*: 0 = UINT8 */
  unsigned rank;
  uint64_t addr;
  uint64_t dims[2];        /* globalDim (the first rank entries) */
  uint64_t strides[1];     /* globalStrides (rank - 1 entries) */
  unsigned box[2], elem[2];
  int interleave, swizzle, l2, oob; /* 0 none, 3 = 128B, 3 = 256B, 0 = zero fill */
  int refused;             /* 1: CUDA_ERROR_INVALID_VALUE returned (why: refused_why) */
  char refused_why[64];
} fake_cuda_tmap;

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
  int event_syncs;         /* cuEventSynchronize calls */
  int event_queries_busy;  /* cuEventQuery calls answered CUDA_ERROR_NOT_READY */
  int stream_waits;        /* cuStreamWaitEvent calls */
  uint64_t wait_stream, wait_event; /* the last cuStreamWaitEvent's stream and event */
  int wait_at;             /* n (launches recorded) when it was made */
  int frees;               /* cuMemFree / cuMemFreeHost / cuModuleUnload calls */
  int frees_while_running; /* cuMemFree / cuMemFreeHost / cuModuleUnload while an event recorded
                              in "running" mode was not waited for (fake_cuda_set_running) */
  int n_tmaps;              /* cuTensorMapEncodeTiled calls recorded in tmaps[] */
  fake_cuda_tmap tmaps[FAKE_CUDA_MAX_TMAPS];
  fake_cuda_launch l[FAKE_CUDA_MAX_LAUNCHES];
} fake_cuda_log_t;

typedef fake_cuda_log_t *(*fake_cuda_log_fn)(void);
typedef void (*fake_cuda_reset_fn)(void);
typedef void (*fake_cuda_set_lqs_fn)(double e_tensor, double e_token, int choice);
#include <stddef.h>
typedef size_t (*fake_cuda_alloc_size_fn)(uintptr_t p); /* bytes of the allocation at p, or 0 */
typedef void (*fake_cuda_raise_range_fn)(int on);
/* on = 1: every later cuTensorMapEncodeTiled is refused (CUDA_ERROR_INVALID_VALUE, recorded with
 * refused_why "refused by the test"), for the runtime's error path. */
typedef void (*fake_cuda_refuse_tmaps_fn)(int on);
/* "Kernels still running": with on = 1 every event recorded afterwards stays pending (cuEventQuery
 * answers CUDA_ERROR_NOT_READY) until cuEventSynchronize on it, or cuStreamSynchronize /
 * cuCtxSynchronize, completes it; freeing memory or unloading a module while one is pending is
 * counted (frees_while_running). on = 0 completes every pending event. */
typedef void (*fake_cuda_set_running_fn)(int on);
/* The machine the fake reports, effective for later calls (the device count is read by the
 * loader once: call it before the first cuda_driver_get): n_devices ordinals 0 .. n-1, all of
 * compute capability cc_major.cc_minor, driver version (cuDriverGetVersion, e.g. 12040). Memory
 * belongs to the device of the current context (device 0 without one); cuPointerGetAttribute
 * reports that ordinal. Defaults: 1 device, 9.0, 13000. */
typedef void (*fake_cuda_configure_fn)(int n_devices, int cc_major, int cc_minor,
                                       int driver_version);

#endif

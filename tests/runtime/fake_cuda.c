/* fake_cuda.c — a recording stand-in for libcuda.so.1 (loaded through HOT_CUDA_DRIVER) so that
 * the CUDA backend's host code (runtime/cuda_backend.c, launch.c) runs on a machine without a
 * GPU: one device of compute capability 9.0, "device" memory = host memory it tracks (any other
 * pointer is reported as host memory), memsets and copies done for real, and every kernel launch
 * recorded with its geometry and its arguments decoded by the kernel's name prefix (the entry
 * signatures of the templates). Kernels do not run; an LQS phase-2 launch writes the result and
 * choice that the test asks for (fake_cuda_set_lqs), so the read-back path is exercised.
 * Every module has the word hot_range_flag (cuModuleGetGlobal) that the templates' epilogues
 * raise on a non-finite output; fake_cuda_raise_range(1) makes every GEMM and bias launch raise
 * it. Memsets of those words are counted (range_resets), not logged as launches.
 * Devices, contexts and memory: fake_cuda_configure sets the device count, compute capability and
 * driver version; each device has a primary context, pushed / set contexts form a stack, and an
 * allocation belongs to the device of the current context (cuPointerGetAttribute: memory type and
 * device ordinal). Events: with fake_cuda_set_running(1) a recorded event stays pending ("the
 * kernels before it still run") until it is synchronised; frees and module unloads meanwhile are
 * counted (frees_while_running).
 * Tensor maps: cuTensorMapEncodeTiled checks its arguments against the driver's documented rules
 * (data type, rank, 16-byte address, dims, strides, box, element strides, swizzle span, enums),
 * records every call (log tmaps[]) and writes a map that names its record; a TMA GEMM launch
 * (hot_gemm_tma_*) reads its two maps by value and logs the record indices (-1: not a map).
 * Test-side API: fake_cuda_log (the launches so far), fake_cuda_reset, fake_cuda_set_lqs,
 * fake_cuda_raise_range, fake_cuda_set_running, fake_cuda_configure. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define OK 0
#define EXPORT __attribute__((visibility("default")))

static fake_cuda_log_t g_log;
static double g_lqs_res[2] = {2.0, 0.5};
static int g_lqs_choice = 1;
struct alloc { uintptr_t p; size_t n; int device; };
static struct alloc g_allocs[4096];
static int g_n_allocs;
#define FAKE_MAX_DEVICES 8
static int g_n_devices = 1, g_cc_major = 9, g_cc_minor = 0, g_driver_version = 13000;
static int g_primary[FAKE_MAX_DEVICES]; /* primary contexts: their addresses are the handles */
static int *g_stack[16];                /* current-context stack (top = current) */
static int g_ctx_depth;                 /* 0: no current context */
static int cur_device(void) { return g_ctx_depth ? (int)(g_stack[g_ctx_depth - 1] - g_primary) : 0; }

EXPORT void fake_cuda_configure(int n_devices, int cc_major, int cc_minor, int driver_version) {
  g_n_devices = n_devices < 1 ? 1 : n_devices > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : n_devices;
  g_cc_major = cc_major;
  g_cc_minor = cc_minor;
  g_driver_version = driver_version;
}

EXPORT fake_cuda_log_t *fake_cuda_log(void) { return &g_log; }
EXPORT void fake_cuda_reset(void) { memset(&g_log, 0, sizeof g_log); }
EXPORT void fake_cuda_set_lqs(double e_tensor, double e_token, int choice) {
  g_lqs_res[0] = e_tensor;
  g_lqs_res[1] = e_token;
  g_lqs_choice = choice;
}

/* Modules: each owns a 4-byte "device" word, its hot_range_flag. */
#define FAKE_MAX_MODULES 256
static unsigned *g_flags[FAKE_MAX_MODULES];
static int g_raise_range;
EXPORT void fake_cuda_raise_range(int on) { g_raise_range = on; }
static int is_flag(CUdeviceptr d) {
  for (int i = 0; i < FAKE_MAX_MODULES; ++i)
    if (g_flags[i] && (uintptr_t)g_flags[i] == (uintptr_t)d) return 1;
  return 0;
}

EXPORT CUresult cuInit(unsigned flags) { (void)flags; return OK; }
EXPORT CUresult cuDriverGetVersion(int *v) { *v = g_driver_version; return OK; }
EXPORT CUresult cuGetErrorName(CUresult e, const char **s) { (void)e; *s = "CUDA_ERROR_FAKE"; return OK; }
EXPORT CUresult cuGetErrorString(CUresult e, const char **s) { (void)e; *s = "fake driver"; return OK; }
EXPORT CUresult cuDeviceGetCount(int *c) { *c = g_n_devices; return OK; }
EXPORT CUresult cuDeviceGet(int *d, int i) { *d = i; return i >= 0 && i < g_n_devices ? OK : 101; }
EXPORT CUresult cuDeviceGetName(char *n, int len, int d) {
  (void)d;
  if (g_cc_major == 9 && g_cc_minor == 0)
    strncpy(n, "fake sm_90", (size_t)len);
  else
    snprintf(n, (size_t)len, "fake cc %d.%d", g_cc_major, g_cc_minor);
  n[len - 1] = '\0';
  return OK;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int a, int d) {
  (void)d;
  *v = a == 75 ? g_cc_major : a == 76 ? g_cc_minor : a == 16 ? 132 : a == 97 ? 232448 : 0;
  return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  if (d < 0 || d >= g_n_devices) return 101;
  *c = &g_primary[d];
  return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return OK; }
EXPORT CUresult cuCtxGetCurrent(void **c) { *c = g_ctx_depth ? g_stack[g_ctx_depth - 1] : NULL; return OK; }
EXPORT CUresult cuCtxSetCurrent(void *c) {
  if (!c) {
    if (g_ctx_depth) g_ctx_depth--;
    return OK;
  }
  if (!g_ctx_depth) g_ctx_depth = 1;
  g_stack[g_ctx_depth - 1] = c;
  return OK;
}
EXPORT CUresult cuCtxPushCurrent_v2(void *c) {
  if (g_ctx_depth == 16) return 1;
  g_stack[g_ctx_depth++] = c ? c : &g_primary[0];
  return OK;
}
EXPORT CUresult cuCtxPopCurrent_v2(void **c) {
  if (c) *c = g_ctx_depth ? g_stack[g_ctx_depth - 1] : NULL;
  if (g_ctx_depth > 0) g_ctx_depth--;
  return OK;
}
static void complete_all_events(void);
EXPORT CUresult cuCtxSynchronize(void) { complete_all_events(); return OK; }
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
EXPORT CUresult cuMemFree_v2(CUdeviceptr p);
EXPORT CUresult cuModuleLoadData(void **m, const void *img) {
  (void)img;
  for (int i = 0; i < FAKE_MAX_MODULES; ++i)
    if (!g_flags[i]) {
      CUdeviceptr w;
      if (cuMemAlloc_v2(&w, sizeof(unsigned)) != OK) return 2;
      g_flags[i] = (unsigned *)(uintptr_t)w;
      *g_flags[i] = 0;
      *m = &g_flags[i];
      return OK;
    }
  return 2;
}
static void note_free(void);
EXPORT CUresult cuModuleUnload(void *m) {
  note_free();
  unsigned **slot = m;
  cuMemFree_v2((CUdeviceptr)(uintptr_t)*slot);
  *slot = NULL;
  return OK;
}
EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, void *m, const char *name) {
  if (strcmp(name, "hot_range_flag") != 0) return 500; /* CUDA_ERROR_NOT_FOUND */
  *p = (CUdeviceptr)(uintptr_t) * (unsigned **)m;
  *bytes = sizeof(unsigned);
  return OK;
}
static char g_names[256][128]; /* function handles: interned kernel names */
static int g_n_names;
EXPORT CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  (void)m;
  for (int i = 0; i < g_n_names; ++i)
    if (!strcmp(g_names[i], name)) {
      *f = g_names[i];
      return OK;
    }
  if (g_n_names == 256 || strlen(name) >= sizeof g_names[0]) return 2;
  strcpy(g_names[g_n_names], name);
  *f = g_names[g_n_names++];
  return OK;
}
EXPORT CUresult cuFuncGetAttribute(int *v, int a, void *f) {
  (void)f;
  *v = a == 0 ? 1024 : a == 8 ? 49152 : a == 4 ? 64 : 0;
  return OK;
}
/* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8): the largest value set is logged. */
EXPORT CUresult cuFuncSetAttribute(void *f, int a, int v) {
  (void)f;
  if (a == 8 && v > g_log.dyn_smem_max) g_log.dyn_smem_max = v;
  return OK;
}

/* Argument types by entry point (templates' headers): p pointer, i int, l long long / u64,
 * u unsigned, f float. */
static const char *sig_of(const char *name) {
  if (!strncmp(name, "hot_gemm_tma_", 13)) return "ppppppfiiiii" "mm";
  /* recipe nvfp4 on sm_120a (gen/kernels/hq_nvfp4.c, hla_mxfp8.c, gemm_nvfp4.c, gemm_mxfp8.c) */
  if (!strncmp(name, "hot_hq_nvfp4_", 13)) return "piiiippppp" "luu";
  if (!strncmp(name, "hot_hla_mxfp8_", 14)) return "pilliiipppp" "luu";
  if (!strncmp(name, "hot_gemm_mma_nvfp4_", 19)) return "ppppppipiiii";
  if (!strncmp(name, "hot_gemm_mma_mxfp8_", 19)) return "ppppipiiii";
  if (!strncmp(name, "hot_hq_", 7)) return "piiiiipipp" "ipp" "iluu";
  if (!strncmp(name, "hot_hla_", 8)) return "piiiiilliiiiiipipppp" "iluu";
  if (!strncmp(name, "hot_gemm_", 9)) return "ppppppfiiii";
  if (!strncmp(name, "hot_bias_", 9)) return "ppii";
  if (!strncmp(name, "hot_lqs_", 8)) return "piiipi" "ppppiluu";
  if (!strncmp(name, "hot_sawb_", 9)) return "plipppi";
  if (!strncmp(name, "hot_abc_unpack", 14)) return "piiiiip";
  return "";
}

/* Tensor maps: 128 bytes, 64-byte aligned; the fake's encoding is a magic word and the index of
 * the call's record. */
#define FAKE_TMAP_MAGIC 0x686f74746d6170ull /* "hottmap" */
static int g_refuse_tmaps;
EXPORT void fake_cuda_refuse_tmaps(int on) { g_refuse_tmaps = on; }
static int64_t map_record(const void *p) {
  uint64_t w[2];
  if (((uintptr_t)p & 63u) != 0) return -1; /* kernelParams must point at an aligned map copy */
  memcpy(w, p, sizeof w);
  return w[0] == FAKE_TMAP_MAGIC && w[1] < (uint64_t)g_log.n_tmaps ? (int64_t)w[1] : -1;
}
EXPORT CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr,
                                       const uint64_t *dims, const uint64_t *strides,
                                       const unsigned *box, const unsigned *elem, int interleave,
                                       int swizzle, int l2, int oob) {
  static fake_cuda_tmap spare;
  fake_cuda_tmap *t = g_log.n_tmaps < FAKE_CUDA_MAX_TMAPS ? &g_log.tmaps[g_log.n_tmaps] : &spare;
  memset(t, 0, sizeof *t);
  t->data_type = dtype;
  t->rank = rank;
  t->addr = (uint64_t)(uintptr_t)addr;
  for (unsigned i = 0; i < rank && i < 2; ++i) {
    t->dims[i] = dims[i];
    t->box[i] = box[i];
    t->elem[i] = elem[i];
  }
  if (rank >= 2) t->strides[0] = strides[0];
  t->interleave = interleave, t->swizzle = swizzle, t->l2 = l2, t->oob = oob;
  const char *why = NULL;
  const unsigned span = swizzle == 1 ? 32u : swizzle == 2 ? 64u : swizzle == 3 ? 128u : 0u;
  if (g_refuse_tmaps) why = "refused by the test";
  else if (!map || ((uintptr_t)map & 63u)) why = "map not 64-byte aligned";
  else if (dtype < 0 || dtype > 12) why = "data type";
  else if (rank < 1 || rank > 5) why = "rank";
  else if (rank != 2) why = "rank (hot encodes rank 2 only)";
  else if (!addr || ((uintptr_t)addr & 15u)) why = "global address not 16-byte aligned";
  else if (dims[0] < 1 || dims[1] < 1 || dims[0] > (1ull << 32) || dims[1] > (1ull << 32))
    why = "globalDim out of [1, 2^32]";
  else if (strides[0] % 16 || strides[0] >= (1ull << 40) || strides[0] < dims[0])
    why = "globalStrides";
  else if (box[0] < 1 || box[0] > 256 || box[1] < 1 || box[1] > 256) why = "boxDim out of [1, 256]";
  else if (box[0] % 16) why = "boxDim[0] bytes not a multiple of 16";
  else if (elem[0] < 1 || elem[0] > 8 || elem[1] < 1 || elem[1] > 8) why = "elementStrides";
  else if (interleave < 0 || interleave > 2 || swizzle < 0 || swizzle > 3 || l2 < 0 || l2 > 3 ||
           oob < 0 || oob > 1)
    why = "enumerator out of range";
  else if (interleave == 0 && span && box[0] > span) why = "inner box beyond the swizzle span";
  else if (oob == 1 && dtype <= 6) why = "NaN fill of an integer type";
  if (g_log.n_tmaps < FAKE_CUDA_MAX_TMAPS) g_log.n_tmaps++;
  if (why) {
    t->refused = 1;
    snprintf(t->refused_why, sizeof t->refused_why, "%s", why);
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  }
  uint64_t w[16] = {FAKE_TMAP_MAGIC, t == &spare ? UINT64_MAX : (uint64_t)(t - g_log.tmaps)};
  memcpy(map, w, sizeof w);
  return OK;
}

EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned smem, void *stream,
                               void **params, void **extra) {
  (void)extra;
  /* beyond the log's capacity launches are counted, not recorded (long runs: hot-bench) */
  g_log.total++;
  static fake_cuda_launch spare;
  fake_cuda_launch *l = g_log.n < FAKE_CUDA_MAX_LAUNCHES ? &g_log.l[g_log.n++] : &spare;
  memset(l, 0, sizeof *l);
  l->stream = (uint64_t)(uintptr_t)stream;
  strncpy(l->name, (const char *)f, sizeof l->name - 1);
  if (g_raise_range && (!strncmp(l->name, "hot_gemm", 8) || !strncmp(l->name, "hot_bias", 8)))
    for (int i = 0; i < FAKE_MAX_MODULES; ++i)
      if (g_flags[i]) *g_flags[i] = 1u;
  l->grid[0] = gx; l->grid[1] = gy; l->grid[2] = gz;
  l->block[0] = bx; l->block[1] = by; l->block[2] = bz;
  l->smem = smem;
  const char *sig = sig_of(l->name);
  l->n_args = (int)strlen(sig);
  for (int i = 0; i < l->n_args; ++i) {
    switch (sig[i]) {
    case 'p': { unsigned long long v; memcpy(&v, params[i], 8); l->arg[i] = (int64_t)v; break; }
    case 'l': { long long v; memcpy(&v, params[i], 8); l->arg[i] = v; break; }
    case 'i': { int v; memcpy(&v, params[i], 4); l->arg[i] = v; break; }
    case 'u': { unsigned v; memcpy(&v, params[i], 4); l->arg[i] = v; break; }
    case 'f': { float v; memcpy(&v, params[i], 4); l->farg[i] = v; break; }
    case 'm': l->arg[i] = map_record(params[i]); break;
    }
  }
  /* LQS phase 2 writes result[0..1] and *choice */
  if (!strncmp(l->name, "hot_lqs_", 8) && l->arg[10] == 2) {
    memcpy((void *)(uintptr_t)l->arg[8], g_lqs_res, sizeof g_lqs_res);
    memcpy((void *)(uintptr_t)l->arg[9], &g_lqs_choice, sizeof g_lqs_choice);
  }
  return OK;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (g_n_allocs >= 4096) return 2;
  void *m = aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (!m) return 2;
  g_allocs[g_n_allocs].p = (uintptr_t)m;
  g_allocs[g_n_allocs].device = cur_device();
  g_allocs[g_n_allocs++].n = n;
  *p = (CUdeviceptr)(uintptr_t)m;
  return OK;
}
/* Bytes of the live allocation starting at p, 0 when there is none. */
EXPORT size_t fake_cuda_alloc_size(uintptr_t p) {
  for (int i = 0; i < g_n_allocs; ++i)
    if (g_allocs[i].p == p) return g_allocs[i].n;
  return 0;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  note_free();
  for (int i = 0; i < g_n_allocs; ++i)
    if (g_allocs[i].p == (uintptr_t)p) {
      free((void *)g_allocs[i].p);
      g_allocs[i] = g_allocs[--g_n_allocs];
      return OK;
    }
  return 1;
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return OK; }
EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return OK; }
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return OK; }
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *s) {
  unsigned *p = (unsigned *)(uintptr_t)d;
  for (size_t i = 0; i < n; ++i) p[i] = v;
  if (is_flag(d)) {
    g_log.range_resets++;
    return OK;
  }
  if (g_log.n < FAKE_CUDA_MAX_LAUNCHES) { /* recorded in launch order as "memset32" */
    fake_cuda_launch *l = &g_log.l[g_log.n++];
    memset(l, 0, sizeof *l);
    strcpy(l->name, "memset32");
    l->stream = (uint64_t)(uintptr_t)s;
    l->arg[0] = (int64_t)d;
    l->arg[1] = (int64_t)n;
  }
  return OK;
}
/* Attributes 2 (memory type: device), 8 (is managed: never) and 9 (device ordinal). */
EXPORT CUresult cuPointerGetAttribute(void *data, int a, CUdeviceptr p) {
  for (int i = 0; i < g_n_allocs; ++i)
    if ((uintptr_t)p >= g_allocs[i].p && (uintptr_t)p < g_allocs[i].p + g_allocs[i].n + 1) {
      if (a == 2) *(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
      else if (a == 8) *(int *)data = 0;
      else if (a == 9) *(int *)data = g_allocs[i].device;
      else return 1;
      return OK;
    }
  return 1; /* CUDA_ERROR_INVALID_VALUE: not device memory */
}
EXPORT CUresult cuStreamCreate(void **s, unsigned f) { (void)f; *s = malloc(1); return OK; }
EXPORT CUresult cuStreamDestroy_v2(void *s) { free(s); return OK; }
/* Events: created / recorded / destroyed counted in the log (fake_cuda_reset zeroes them); every
 * timed interval reads 0.01 ms, a plausible kernel time. */
/* Events made with CU_EVENT_DISABLE_TIMING (2) are counted apart (untimed_*): the profiling
 * counters see timing events only. */
typedef struct fake_event {
  unsigned char untimed;
  unsigned char pending; /* recorded in running mode, not synchronised yet */
  unsigned long seq;     /* order of the latest record (one stream: earlier records are before) */
  struct fake_event *next;
} fake_event;
static fake_event *g_events; /* every live event */
static unsigned long g_seq;  /* records so far */
static int g_running;

static void complete_all_events(void) {
  for (fake_event *e = g_events; e; e = e->next) e->pending = 0;
}
static void note_free(void) {
  g_log.frees++;
  for (fake_event *e = g_events; e; e = e->next)
    if (e->pending) {
      g_log.frees_while_running++;
      return;
    }
}
EXPORT void fake_cuda_set_running(int on) {
  g_running = on;
  if (!on) complete_all_events();
}
EXPORT CUresult cuStreamSynchronize(void *s) {
  (void)s;
  g_log.syncs++;
  complete_all_events(); /* one stream in these tests: everything recorded is behind it */
  return OK;
}
EXPORT CUresult cuEventCreate(void **e, unsigned f) {
  fake_event *b = calloc(1, sizeof *b);
  if (!b) return 2;
  b->untimed = (unsigned char)(f & 2u);
  b->next = g_events;
  g_events = b;
  *e = b;
  if (b->untimed) g_log.untimed_created++;
  else g_log.events_created++;
  return OK;
}
EXPORT CUresult cuEventDestroy_v2(void *e) {
  fake_event *ev = e;
  if (ev->untimed) g_log.untimed_destroyed++;
  else g_log.events_destroyed++;
  for (fake_event **p = &g_events; *p; p = &(*p)->next)
    if (*p == ev) {
      *p = ev->next;
      break;
    }
  free(ev);
  return OK;
}
EXPORT CUresult cuEventRecord(void *e, void *s) {
  (void)s;
  fake_event *ev = e;
  if (ev->untimed) g_log.untimed_recorded++;
  else g_log.events_recorded++;
  ev->pending = (unsigned char)(g_running != 0);
  ev->seq = ++g_seq;
  return OK;
}
/* A stream waiting for an event: recorded (the stream's later work is behind it). */
EXPORT CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
  if (!e || flags) return 1; /* CUDA_ERROR_INVALID_VALUE */
  g_log.stream_waits++;
  g_log.wait_stream = (uint64_t)(uintptr_t)s;
  g_log.wait_event = (uint64_t)(uintptr_t)e;
  g_log.wait_at = g_log.n;
  return OK;
}
/* Waiting for an event completes it and everything recorded before it (one stream). */
EXPORT CUresult cuEventSynchronize(void *e) {
  g_log.event_syncs++;
  const unsigned long upto = ((fake_event *)e)->seq;
  for (fake_event *x = g_events; x; x = x->next)
    if (x->seq <= upto) x->pending = 0;
  return OK;
}
EXPORT CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0.01f; return OK; }
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
  (void)st;
  memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return OK;
}
EXPORT CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = (size_t)1 << 34; *t = (size_t)1 << 35; return OK; }
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  (void)st;
  memcpy(d, (const void *)(uintptr_t)s, n);
  return OK;
}
EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? OK : 2; }
EXPORT CUresult cuMemFreeHost(void *p) {
  note_free();
  free(p);
  return OK;
}
EXPORT CUresult cuEventQuery(void *e) {
  if (!((fake_event *)e)->pending) return OK;
  g_log.event_queries_busy++;
  return 600; /* CUDA_ERROR_NOT_READY */
}

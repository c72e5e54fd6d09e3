/* cuda_api.h — the CUDA driver (libcuda.so.1) and NVRTC (libnvrtc.so.13, else .so.12), loaded
 * with dlopen on first need and called through one function table per library. Nothing in hot links either
 * library ("the stub trap"): a binary that NEEDs libcuda.so.1 dies before main on a
 * machine without a driver, so the tables below are the only way in.
 *
 * Loading is done once per process per library (pthread_once) and is thread-safe; the outcome,
 * success or failure with its message, is remembered and returned by every later call.
 *
 * Environment (read once, at the first call):
 *   HOT_CUDA_DRIVER  path of the driver library to load instead of "libcuda.so.1" (tests, odd installs)
 *   HOT_CUDA_HOME    toolkit root; NVRTC is tried as $HOT_CUDA_HOME/lib64/libnvrtc.so.<major>
 *                    first, then in the toolkit library folder baked at build time, then by the
 *                    loader path; in each place every supported major, newest first
 *                    (HOT_NVRTC_MAJORS: 13, then 12). So HOT_CUDA_HOME naming a CUDA 12 toolkit
 *                    serves a machine whose driver predates CUDA 13, whatever else is installed.
 *
 * Versions: cubins made by NVRTC X.Y load only in a driver of major >= X (CUDA's minor version
 * compatibility covers cubins within a major; a driver of an older major refuses them), so the
 * CUDA backend compares the two (cuda_versions_check) before it loads what NVRTC made.
 */
#ifndef HOT_CUDA_API_H
#define HOT_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#include "status.h" /* rt_status */

/* ---- the few driver types and constants hot needs (ABI-compatible with cuda.h) ------------- */
typedef int CUresult;                       /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;     /* 64-bit platforms only */
/* Longest HOT_CUDA_HOME / HOT_CUDA_DRIVER accepted (bytes, without the NUL): the paths built
 * from them (home + "/lib64/libnvrtc.so.13", home + "/include") then always fit their buffers;
 * a longer value is refused with a message naming the variable, never cut. */
#define HOT_CUDA_PATH_MAX 1024

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_DEINITIALIZED 4
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_NO_BINARY_FOR_GPU 209
#define CUDA_ERROR_UNSUPPORTED_PTX_VERSION 222
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES 701
#define CUDA_ERROR_LAUNCH_TIMEOUT 702
#define CUDA_ERROR_LAUNCH_FAILED 719

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define CU_FUNC_ATTRIBUTE_NUM_REGS 4
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_ARRAY 3
#define CU_MEMORYTYPE_UNIFIED 4
#define CU_STREAM_NON_BLOCKING 0x1u
/* Tensor maps (CUDA 12.0+, cuTensorMapEncodeTiled): the driver's opaque 128-byte, 64-byte aligned
 * CUtensorMap and the enumerator values hot uses (cuda.h's; templates/gemm_tma.cu's HOT_TMA_*). */
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef struct {
  _Alignas(64) unsigned long long opaque[16];
} CUtensorMap;
#define CU_TENSOR_MAP_DATA_TYPE_UINT8 0
#define CU_TENSOR_MAP_INTERLEAVE_NONE 0
#define CU_TENSOR_MAP_SWIZZLE_128B 3
#define CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3
#define CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0
#define CU_EVENT_DEFAULT 0x0u

/* ---- the driver table: X(return type, member, exported symbol, parameter list) -------------
 * The symbol is the ABI name (cuda.h #defines many API names to _v2 symbols). Every entry is
 * required: a driver lacking one is reported as "no CUDA driver" with the symbol named. */
#define CUDA_DRIVER_FUNCS(X)                                                                     \
  X(CUresult, cuInit, "cuInit", (unsigned int flags))                                            \
  X(CUresult, cuDriverGetVersion, "cuDriverGetVersion", (int *version))                          \
  X(CUresult, cuGetErrorName, "cuGetErrorName", (CUresult error, const char **name))             \
  X(CUresult, cuGetErrorString, "cuGetErrorString", (CUresult error, const char **text))         \
  X(CUresult, cuDeviceGetCount, "cuDeviceGetCount", (int *count))                                \
  X(CUresult, cuDeviceGet, "cuDeviceGet", (CUdevice * device, int ordinal))                      \
  X(CUresult, cuDeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice dev))           \
  X(CUresult, cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *value, int attrib, CUdevice dev)) \
  X(CUresult, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext * ctx, CUdevice dev)) \
  X(CUresult, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))         \
  X(CUresult, cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext * ctx))                             \
  X(CUresult, cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext ctx))                               \
  X(CUresult, cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext ctx))                          \
  X(CUresult, cuCtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext * ctx))                          \
  X(CUresult, cuCtxSynchronize, "cuCtxSynchronize", (void))                                      \
  X(CUresult, cuModuleLoadData, "cuModuleLoadData", (CUmodule * module, const void *image))      \
  X(CUresult, cuModuleUnload, "cuModuleUnload", (CUmodule module))                               \
  X(CUresult, cuModuleGetFunction, "cuModuleGetFunction",                                        \
    (CUfunction * fn, CUmodule module, const char *name))                                        \
  X(CUresult, cuFuncGetAttribute, "cuFuncGetAttribute", (int *value, int attrib, CUfunction fn)) \
  X(CUresult, cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction fn, int attrib, int value))  \
  X(CUresult, cuLaunchKernel, "cuLaunchKernel",                                                  \
    (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,          \
     unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,              \
     void **params, void **extra))                                                               \
  X(CUresult, cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr * ptr, size_t bytes))                    \
  X(CUresult, cuMemFree, "cuMemFree_v2", (CUdeviceptr ptr))                                      \
  X(CUresult, cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr dst, const void *src, size_t bytes)) \
  X(CUresult, cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *dst, CUdeviceptr src, size_t bytes))       \
  X(CUresult, cuMemsetD8, "cuMemsetD8_v2", (CUdeviceptr dst, unsigned char value, size_t n))     \
  X(CUresult, cuMemsetD32Async, "cuMemsetD32Async",                                              \
    (CUdeviceptr dst, unsigned int value, size_t n, CUstream stream))                            \
  X(CUresult, cuPointerGetAttribute, "cuPointerGetAttribute",                                    \
    (void *data, int attribute, CUdeviceptr ptr))                                                \
  X(CUresult, cuStreamCreate, "cuStreamCreate", (CUstream * stream, unsigned int flags))         \
  X(CUresult, cuStreamDestroy, "cuStreamDestroy_v2", (CUstream stream))                          \
  X(CUresult, cuStreamSynchronize, "cuStreamSynchronize", (CUstream stream))                     \
  X(CUresult, cuEventCreate, "cuEventCreate", (CUevent * event, unsigned int flags))             \
  X(CUresult, cuEventDestroy, "cuEventDestroy_v2", (CUevent event))                              \
  X(CUresult, cuEventRecord, "cuEventRecord", (CUevent event, CUstream stream))                  \
  X(CUresult, cuEventSynchronize, "cuEventSynchronize", (CUevent event))                         \
  X(CUresult, cuStreamWaitEvent, "cuStreamWaitEvent", (CUstream stream, CUevent event,           \
                                                        unsigned int flags))                     \
  X(CUresult, cuEventElapsedTime, "cuEventElapsedTime", (float *ms, CUevent start, CUevent end)) \
  X(CUresult, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                         \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))                           \
  X(CUresult, cuMemGetInfo, "cuMemGetInfo_v2", (size_t *free_bytes, size_t *total_bytes))      \
  X(CUresult, cuModuleGetGlobal, "cuModuleGetGlobal_v2",                                         \
    (CUdeviceptr * dptr, size_t *bytes, CUmodule module, const char *name))                      \
  X(CUresult, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                         \
    (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))                                 \
  X(CUresult, cuMemAllocHost, "cuMemAllocHost_v2", (void **p, size_t bytes))                     \
  X(CUresult, cuMemFreeHost, "cuMemFreeHost", (void *p))                                         \
  X(CUresult, cuEventQuery, "cuEventQuery", (CUevent event))

/* Optional entries: resolved when the driver has them, NULL otherwise (the one feature that needs
 * it reports the driver as too old). cuTensorMapEncodeTiled: CUDA 12.0+, the TMA GEMM's maps. */
#define CUDA_DRIVER_OPTIONAL_FUNCS(X)                                                            \
  X(CUresult, cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled",                                  \
    (CUtensorMap * map, int data_type, cuuint32_t rank, void *global_address,                    \
     const cuuint64_t *global_dim, const cuuint64_t *global_strides, const cuuint32_t *box_dim,  \
     const cuuint32_t *element_strides, int interleave, int swizzle, int l2_promotion,           \
     int oob_fill))

/* ---- NVRTC: types and table ---------------------------------------------------------------- */
typedef int nvrtcResult;                    /* NVRTC_SUCCESS = 0 */
typedef struct _nvrtcProgram *nvrtcProgram;
#define NVRTC_SUCCESS 0
#define NVRTC_ERROR_COMPILATION 6

#define CUDA_NVRTC_FUNCS(X)                                                                      \
  X(nvrtcResult, nvrtcVersion, "nvrtcVersion", (int *major, int *minor))                         \
  X(const char *, nvrtcGetErrorString, "nvrtcGetErrorString", (nvrtcResult result))              \
  X(nvrtcResult, nvrtcCreateProgram, "nvrtcCreateProgram",                                       \
    (nvrtcProgram * prog, const char *src, const char *name, int num_headers,                    \
     const char *const *headers, const char *const *include_names))                              \
  X(nvrtcResult, nvrtcDestroyProgram, "nvrtcDestroyProgram", (nvrtcProgram * prog))              \
  X(nvrtcResult, nvrtcCompileProgram, "nvrtcCompileProgram",                                     \
    (nvrtcProgram prog, int num_options, const char *const *options))                            \
  X(nvrtcResult, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", (nvrtcProgram prog, size_t *n)) \
  X(nvrtcResult, nvrtcGetProgramLog, "nvrtcGetProgramLog", (nvrtcProgram prog, char *log))       \
  X(nvrtcResult, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", (nvrtcProgram prog, size_t *n))         \
  X(nvrtcResult, nvrtcGetCUBIN, "nvrtcGetCUBIN", (nvrtcProgram prog, char *cubin))

#define CUDA_API_MEMBER(ret, name, sym, params) ret(*name) params;

/* The driver, loaded and initialised. Static storage, valid for the life of the process. */
typedef struct {
  CUDA_DRIVER_FUNCS(CUDA_API_MEMBER)
  CUDA_DRIVER_OPTIONAL_FUNCS(CUDA_API_MEMBER) /* NULL when the driver lacks them */
  int version;        /* cuDriverGetVersion, e.g. 13000 */
  int device_count;   /* >= 1 */
  char path[HOT_CUDA_PATH_MAX + 64]; /* the library that was loaded */
} cuda_driver;

/* NVRTC, loaded. Static storage, valid for the life of the process. */
typedef struct {
  CUDA_NVRTC_FUNCS(CUDA_API_MEMBER)
  int major, minor;   /* nvrtcVersion */
  char path[HOT_CUDA_PATH_MAX + 64]; /* the library that was loaded */
} cuda_nvrtc;

/* The driver table. Loads libcuda.so.1 (or $HOT_CUDA_DRIVER), resolves every entry, calls
 * cuInit(0) and counts devices, once per process. On success sets *out and returns RT_OK.
 * Errors (message in err, one line, always NUL-terminated when errlen > 0; *out = NULL):
 *   RT_ERR_NO_DRIVER  "no CUDA driver: ..." — library missing, stub library (CUresult 34),
 *                     a missing symbol, or cuInit failing;
 *   RT_ERR_NO_DEVICE  "no CUDA device: ..." — the driver works but reports zero devices.
 * err may be NULL. Thread-safe. Never prints. */

/* Sets the driver library (HOT_CUDA_DRIVER) and the toolkit root (HOT_CUDA_HOME) the loaders
 * below use, as read once by hot_ctx_create (NULL: the default: libcuda.so.1; the build's
 * toolkit). Process-wide, and effective only before the first load (the driver and NVRTC are
 * loaded once per process). Without a call the loaders read the two variables themselves. */
void cuda_api_configure(const char *driver, const char *home);

rt_status cuda_driver_get(const cuda_driver **out, char *err, size_t errlen);

/* The NVRTC table, loaded once per process (see the search order above). RT_ERR_NO_NVRTC with
 * "NVRTC not found: ..." naming the paths tried when it cannot be loaded. Thread-safe. */
rt_status cuda_nvrtc_get(const cuda_nvrtc **out, char *err, size_t errlen);

/* The NVRTC majors searched, in order (13 first, then 12), and how many there are. */
#define HOT_NVRTC_MAJORS {13, 12}
#define HOT_NVRTC_N_MAJORS 2

/* Whether cubins of NVRTC nvrtc_major.nvrtc_minor load in a driver of version driver_version
 * (cuDriverGetVersion: 1000 * major + 10 * minor, e.g. 12040 = 12.4): RT_OK when the driver's
 * major is at least NVRTC's, else RT_ERR_BAD_BINARY with one line naming both versions and the
 * two ways out (a newer driver, or HOT_CUDA_HOME at an older toolkit). driver_version <= 0
 * (unknown) is RT_OK. Pure; err may be NULL. */
rt_status cuda_versions_check(int driver_version, int nvrtc_major, int nvrtc_minor, char *err,
                              size_t errlen);

/* Parses a compiler version identity of the form "nvrtc-<major>.<minor>" (hot_compiler.version)
 * into *major, *minor: 0, or -1 when it is not one (another compiler). Pure. */
int cuda_nvrtc_version_parse(const char *id, int *major, int *minor);

/* The toolkit's include folder for NVRTC's --include-path: $HOT_CUDA_HOME/include when the
 * variable is set and non-empty, else the folder baked at build time. Static storage. */
const char *cuda_toolkit_include(void);

/* Name of a driver result, e.g. "CUDA_ERROR_OUT_OF_MEMORY": from cuGetErrorName when the driver
 * is loaded, else from a small built-in list, else "CUDA_ERROR_<n>" (written into buf).
 * Returns buf or a static string; buf must hold 32 bytes. */
const char *cuda_result_name(CUresult r, char buf[32]);

/* The runtime status a driver result maps to (RT_OK for CUDA_SUCCESS). Pure; no driver needed. */
rt_status cuda_result_status(CUresult r);

/* Writes "<what>: <CUDA_ERROR_NAME> (<driver's description>)" into err and returns
 * cuda_result_status(r). For callers turning a failed driver call into a message. */
rt_status cuda_result_error(CUresult r, const char *what, char *err, size_t errlen);

#endif

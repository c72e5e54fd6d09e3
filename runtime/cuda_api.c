/* cuda_api.c — dlopen tables for the CUDA driver and NVRTC (see cuda_api.h). */
#define _GNU_SOURCE
#include "cuda_api.h"
#include "diag.h"
#include "env.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef HOT_CUDA_HOME_DEFAULT
#define HOT_CUDA_HOME_DEFAULT "/usr/local/cuda"
#endif
#ifndef HOT_CUDA_INCLUDE_DEFAULT
#define HOT_CUDA_INCLUDE_DEFAULT "/usr/local/cuda/include"
#endif
#ifndef HOT_CUDA_LIBDIR_DEFAULT
#define HOT_CUDA_LIBDIR_DEFAULT "/usr/local/cuda/lib64"
#endif

static const char *const status_names[RT_STATUS_COUNT] = {
    "RT_OK",           "RT_ERR_INVALID",   "RT_ERR_NOMEM",      "RT_ERR_IO",
    "RT_ERR_NO_DRIVER", "RT_ERR_NO_DEVICE", "RT_ERR_NO_NVRTC",   "RT_ERR_COMPILE",
    "RT_ERR_BAD_BINARY", "RT_ERR_NOT_FOUND", "RT_ERR_DEVICE_OOM", "RT_ERR_LAUNCH",
    "RT_ERR_CUDA",
};

const char *rt_status_name(rt_status s) {
  if ((int)s < 0 || s >= RT_STATUS_COUNT) return "RT_ERR_?";
  return status_names[s];
}


/* dlsym returns an object pointer; copying its bytes is the portable way to a function pointer. */
static int resolve(void *lib, const char *sym, void *fnp, size_t fnsize) {
  void *p = dlsym(lib, sym);
  if (!p) return -1;
  memcpy(fnp, &p, fnsize);
  return 0;
}

/* ---- configuration -------------------------------------------------------------------------- */
static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER;
/* fork(): the child gets the configured CUDA paths consistent (the lock is held across the fork, then released on
 * both sides; pthread_atfork, registered at load). */
static void cfg_mu_lock(void) { pthread_mutex_lock(&cfg_mu); }
static void cfg_mu_unlock(void) { pthread_mutex_unlock(&cfg_mu); }
__attribute__((constructor)) static void cfg_mu_atfork(void) {
  pthread_atfork(cfg_mu_lock, cfg_mu_unlock, cfg_mu_unlock);
}
static int cfg_set;
static char cfg_driver[HOT_CUDA_PATH_MAX + 1], cfg_home[HOT_CUDA_PATH_MAX + 1];
static int cfg_long[2]; /* a configured value was longer than HOT_CUDA_PATH_MAX */

void cuda_api_configure(const char *driver, const char *home) {
  pthread_mutex_lock(&cfg_mu);
  cfg_long[1] = driver && strlen(driver) > HOT_CUDA_PATH_MAX;
  cfg_long[0] = home && strlen(home) > HOT_CUDA_PATH_MAX;
  snprintf(cfg_driver, sizeof cfg_driver, "%s", driver && !cfg_long[1] ? driver : "");
  snprintf(cfg_home, sizeof cfg_home, "%s", home && !cfg_long[0] ? home : "");
  cfg_set = 1;
  pthread_mutex_unlock(&cfg_mu);
}

/* The configured value, else the variable (tools that never configure), copied into buf (at
 * least HOT_CUDA_PATH_MAX + 1 bytes). *too_long is set (and NULL returned) when the value is
 * longer than HOT_CUDA_PATH_MAX: the caller reports it instead of using a cut path. */
static const char *configured(int driver, char *buf, size_t n, int *too_long) {
  pthread_mutex_lock(&cfg_mu);
  const char *v = cfg_set ? (driver ? cfg_driver : cfg_home)
                          : env_get(driver ? "HOT_CUDA_DRIVER" : "HOT_CUDA_HOME");
  *too_long = cfg_set ? cfg_long[driver] : (v && strlen(v) > HOT_CUDA_PATH_MAX);
  snprintf(buf, n, "%s", v && !*too_long ? v : "");
  pthread_mutex_unlock(&cfg_mu);
  return buf[0] ? buf : NULL;
}

/* ---- driver ------------------------------------------------------------------------------- */
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static cuda_driver drv;
static rt_status drv_status;
static char drv_msg[HOT_CUDA_PATH_MAX + 512];
static int drv_loaded; /* the table is resolved (error names usable), even if cuInit failed */

static void drv_load(void) {
  char buf[HOT_CUDA_PATH_MAX + 1];
  int too_long;
  const char *env = configured(1, buf, sizeof buf, &too_long);
  if (too_long) {
    drv_status = RT_ERR_NO_DRIVER;
    snprintf(drv_msg, sizeof drv_msg, "no CUDA driver: HOT_CUDA_DRIVER is longer than %d bytes",
             HOT_CUDA_PATH_MAX);
    return;
  }
  const char *path = (env && *env) ? env : "libcuda.so.1";
  snprintf(drv.path, sizeof drv.path, "%s", path);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    drv_status = RT_ERR_NO_DRIVER;
    snprintf(drv_msg, sizeof drv_msg, "no CUDA driver: cannot load %s (%s)", path,
             why ? why : "unknown reason");
    return;
  }
#define LOAD(ret, name, sym, params)                                                           \
  if (resolve(lib, sym, &drv.name, sizeof drv.name) != 0) {                                    \
    drv_status = RT_ERR_NO_DRIVER;                                                             \
    snprintf(drv_msg, sizeof drv_msg, "no CUDA driver: %s lacks %s (driver too old?)", path, sym); \
    return;                                                                                    \
  }
  CUDA_DRIVER_FUNCS(LOAD)
#undef LOAD
#define LOAD_OPTIONAL(ret, name, sym, params)                                                  \
  if (resolve(lib, sym, &drv.name, sizeof drv.name) != 0) drv.name = NULL;
  CUDA_DRIVER_OPTIONAL_FUNCS(LOAD_OPTIONAL)
#undef LOAD_OPTIONAL
  __atomic_store_n(&drv_loaded, 1, __ATOMIC_RELEASE);  /* error names usable from here on */
  /* The library stays loaded for the life of the process (the table points into it). */
  CUresult r = drv.cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    drv_status = RT_ERR_NO_DRIVER;
    snprintf(drv_msg, sizeof drv_msg,
             "no CUDA driver: %s is the toolkit's stub library (CUDA_ERROR_STUB_LIBRARY)", path);
    return;
  }
  if (r == CUDA_ERROR_NO_DEVICE) {
    drv_status = RT_ERR_NO_DEVICE;
    snprintf(drv_msg, sizeof drv_msg, "no CUDA device: cuInit reports CUDA_ERROR_NO_DEVICE");
    return;
  }
  if (r != CUDA_SUCCESS) {
    char nb[32];
    drv_status = RT_ERR_NO_DRIVER;
    snprintf(drv_msg, sizeof drv_msg, "no CUDA driver: cuInit failed with %s",
             cuda_result_name(r, nb));
    return;
  }
  int count = 0;
  r = drv.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count <= 0) {
    drv_status = RT_ERR_NO_DEVICE;
    snprintf(drv_msg, sizeof drv_msg, "no CUDA device: the driver reports %d devices", count);
    return;
  }
  drv.device_count = count;
  if (drv.cuDriverGetVersion(&drv.version) != CUDA_SUCCESS) drv.version = 0;
  drv_status = RT_OK;
}

rt_status cuda_driver_get(const cuda_driver **out, char *err, size_t errlen) {
  pthread_once(&drv_once, drv_load);
  if (out) *out = drv_status == RT_OK ? &drv : NULL;
  if (drv_status != RT_OK) diag_errf(err, errlen, "%s", drv_msg);
  return drv_status;
}

/* ---- NVRTC -------------------------------------------------------------------------------- */
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static cuda_nvrtc nv;
static rt_status nv_status;
static char nv_msg[7 * HOT_CUDA_PATH_MAX + 512];

static void nv_load(void) {
  static const int majors[HOT_NVRTC_N_MAJORS] = HOT_NVRTC_MAJORS;
  char cand[3 * HOT_NVRTC_N_MAJORS][HOT_CUDA_PATH_MAX + 64];
  int nc = 0;
  char hbuf[HOT_CUDA_PATH_MAX + 1];
  int too_long;
  const char *home = configured(0, hbuf, sizeof hbuf, &too_long);
  if (too_long) {
    snprintf(nv_msg, sizeof nv_msg, "NVRTC not found: HOT_CUDA_HOME is longer than %d bytes",
             HOT_CUDA_PATH_MAX);
    nv_status = RT_ERR_NO_NVRTC;
    return;
  }
  /* place by place (HOT_CUDA_HOME, the baked folder, the loader path), each supported major,
   * newest first: the toolkit HOT_CUDA_HOME names wins whatever its major */
  for (int m = 0; m < HOT_NVRTC_N_MAJORS && home && *home; ++m)
    snprintf(cand[nc++], sizeof cand[0], "%s/lib64/libnvrtc.so.%d", home, majors[m]);
  for (int m = 0; m < HOT_NVRTC_N_MAJORS; ++m)
    snprintf(cand[nc++], sizeof cand[0], "%s/libnvrtc.so.%d", HOT_CUDA_LIBDIR_DEFAULT, majors[m]);
  for (int m = 0; m < HOT_NVRTC_N_MAJORS; ++m)
    snprintf(cand[nc++], sizeof cand[0], "libnvrtc.so.%d", majors[m]);
  void *lib = NULL;
  size_t used = 0;
  nv_msg[0] = '\0';
  used = (size_t)snprintf(nv_msg, sizeof nv_msg, "NVRTC not found: tried");
  for (int i = 0; i < nc && !lib; i++) {
    lib = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      memcpy(nv.path, cand[i], sizeof nv.path);  /* same size; cand[i] is NUL-terminated */
    } else if (used < sizeof nv_msg) {
      used += (size_t)snprintf(nv_msg + used, sizeof nv_msg - used, "%s %s", i ? "," : "", cand[i]);
    }
  }
  if (!lib) {
    if (used < sizeof nv_msg)
      snprintf(nv_msg + used, sizeof nv_msg - used,
               " (set HOT_CUDA_HOME to a CUDA 13 or 12 toolkit)");
    nv_status = RT_ERR_NO_NVRTC;
    return;
  }
#define LOAD(ret, name, sym, params)                                                           \
  if (resolve(lib, sym, &nv.name, sizeof nv.name) != 0) {                                      \
    nv_status = RT_ERR_NO_NVRTC;                                                               \
    snprintf(nv_msg, sizeof nv_msg, "NVRTC not usable: %s lacks %s", nv.path, sym);            \
    return;                                                                                    \
  }
  CUDA_NVRTC_FUNCS(LOAD)
#undef LOAD
  if (nv.nvrtcVersion(&nv.major, &nv.minor) != NVRTC_SUCCESS) {
    nv_status = RT_ERR_NO_NVRTC;
    snprintf(nv_msg, sizeof nv_msg, "NVRTC not usable: nvrtcVersion failed (%s)", nv.path);
    return;
  }
  nv_status = RT_OK;
}

rt_status cuda_nvrtc_get(const cuda_nvrtc **out, char *err, size_t errlen) {
  pthread_once(&nv_once, nv_load);
  if (out) *out = nv_status == RT_OK ? &nv : NULL;
  if (nv_status != RT_OK) diag_errf(err, errlen, "%s", nv_msg);
  return nv_status;
}

int cuda_nvrtc_version_parse(const char *id, int *major, int *minor) {
  int a = 0, b = 0, n = 0;
  if (!id || strncmp(id, "nvrtc-", 6) != 0) return -1;
  if (sscanf(id + 6, "%d.%d%n", &a, &b, &n) != 2 || id[6 + n] != '\0' || a < 1 || b < 0) return -1;
  *major = a;
  *minor = b;
  return 0;
}

rt_status cuda_versions_check(int driver_version, int nvrtc_major, int nvrtc_minor, char *err,
                              size_t errlen) {
  if (driver_version <= 0) return RT_OK;
  const int dmaj = driver_version / 1000, dmin = driver_version % 1000 / 10;
  if (dmaj >= nvrtc_major) return RT_OK;
  diag_errf(err, errlen, "NVRTC %d.%d makes cubins that the CUDA driver %d.%d (version %d) cannot "
           "load: update the driver to CUDA %d or later, or set HOT_CUDA_HOME to a CUDA %d "
           "toolkit", nvrtc_major, nvrtc_minor, dmaj, dmin, driver_version, nvrtc_major, dmaj);
  return RT_ERR_BAD_BINARY;
}

static pthread_once_t inc_once = PTHREAD_ONCE_INIT;
static char inc_path[HOT_CUDA_PATH_MAX + 64];

static void inc_load(void) {
  char hbuf[HOT_CUDA_PATH_MAX + 1];
  int too_long; /* then NVRTC itself is refused (nv_load); the default folder is harmless */
  const char *home = configured(0, hbuf, sizeof hbuf, &too_long);
  if (home && *home)
    snprintf(inc_path, sizeof inc_path, "%s/include", home);
  else
    snprintf(inc_path, sizeof inc_path, "%s", HOT_CUDA_INCLUDE_DEFAULT);
}

const char *cuda_toolkit_include(void) {
  pthread_once(&inc_once, inc_load);
  return inc_path;
}

/* ---- results ------------------------------------------------------------------------------ */
static const struct {
  CUresult r;
  const char *name;
} known[] = {
    {0, "CUDA_SUCCESS"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
};

const char *cuda_result_name(CUresult r, char buf[32]) {
  if (__atomic_load_n(&drv_loaded, __ATOMIC_ACQUIRE)) {
    const char *s = NULL;
    if (drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  }
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].r == r) return known[i].name;
  snprintf(buf, 32, "CUDA_ERROR_%d", r);
  return buf;
}

rt_status cuda_result_status(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return RT_OK;
  case CUDA_ERROR_INVALID_VALUE:
  case CUDA_ERROR_INVALID_HANDLE:
  case CUDA_ERROR_INVALID_CONTEXT: return RT_ERR_INVALID;
  case CUDA_ERROR_OUT_OF_MEMORY: return RT_ERR_DEVICE_OOM;
  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_DEINITIALIZED:
  case CUDA_ERROR_STUB_LIBRARY: return RT_ERR_NO_DRIVER;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE: return RT_ERR_NO_DEVICE;
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return RT_ERR_BAD_BINARY;
  case CUDA_ERROR_NOT_FOUND: return RT_ERR_NOT_FOUND;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_LAUNCH_FAILED: return RT_ERR_LAUNCH;
  default: return RT_ERR_CUDA;
  }
}

rt_status cuda_result_error(CUresult r, const char *what, char *err, size_t errlen) {
  char nb[32];
  const char *name = cuda_result_name(r, nb);
  const char *text = NULL;
  if (__atomic_load_n(&drv_loaded, __ATOMIC_ACQUIRE) &&
      drv.cuGetErrorString(r, &text) != CUDA_SUCCESS)
    text = NULL;
  if (text)
    diag_errf(err, errlen, "%s: %s (%s)", what ? what : "CUDA", name, text);
  else
    diag_errf(err, errlen, "%s: %s", what ? what : "CUDA", name);
  return cuda_result_status(r);
}

/* status.h — the status codes of the runtime's lower layers (cache, pack, module, NVRTC, the
 * CUDA tables, the environment reader): stable numbers that hot.h's hot_status repeats one for
 * one (codes 0 .. RT_STATUS_COUNT - 1). Include this where only the status type is needed. */
#ifndef HOT_STATUS_H
#define HOT_STATUS_H

typedef enum {
  RT_OK = 0,
  RT_ERR_INVALID,      /* a NULL or malformed argument, or misuse */
  RT_ERR_NOMEM,        /* host allocation failed */
  RT_ERR_IO,           /* a file or directory operation failed (cache) */
  RT_ERR_NO_DRIVER,    /* no usable CUDA driver: missing, stub (error 34) or cuInit failed */
  RT_ERR_NO_DEVICE,    /* a driver, but zero devices (or the asked-for index does not exist) */
  RT_ERR_NO_NVRTC,     /* NVRTC could not be loaded (needed only on a cache miss) */
  RT_ERR_COMPILE,      /* the kernel source failed to compile; the log is kept separately */
  RT_ERR_BAD_BINARY,   /* a cubin the driver refuses (wrong arch, corrupt) */
  RT_ERR_NOT_FOUND,    /* a kernel name absent from a module */
  RT_ERR_DEVICE_OOM,   /* device memory exhausted */
  RT_ERR_LAUNCH,       /* a launch was refused or failed (resources, configuration) */
  RT_ERR_CUDA,         /* any other CUDA driver error; the message names it */
  RT_STATUS_COUNT
} rt_status;

/* Static name of a status ("RT_OK", "RT_ERR_NO_DRIVER", ...); "RT_ERR_?" when out of range.
 * (Defined in cuda_api.c.) */
const char *rt_status_name(rt_status s);

#endif

/* module.c — CUBIN loading, kernel lookup and launch through the driver table (see module.h). */
#define _POSIX_C_SOURCE 200809L
#include "module.h"
#include "diag.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hot_module {
  CUmodule mod;
  char *label;
  const cuda_driver *drv;
  pthread_mutex_t mu;  /* guards fns and each function's dyn_smem_limit */
  hot_kfunc **fns;
  size_t n, cap;
};


rt_status module_load(hot_module **out, const void *cubin, size_t size, const char *label,
                      char *err, size_t errlen) {
  if (out) *out = NULL;
  if (!label) label = "module";
  if (!out || !cubin || size < 4) {
    diag_errf(err, errlen, "load of module '%s': %s", label, !out ? "NULL output" : "no CUBIN given");
    return RT_ERR_INVALID;
  }
  if (memcmp(cubin, "\177ELF", 4) != 0) {  /* PTX or garbage would be JIT-compiled or refused */
    diag_errf(err, errlen, "load of module '%s': not a CUBIN (ELF) image", label);
    return RT_ERR_BAD_BINARY;
  }
  const cuda_driver *drv = NULL;
  rt_status st = cuda_driver_get(&drv, err, errlen);
  if (st != RT_OK) return st;
  CUcontext ctx = NULL;
  CUresult r = drv->cuCtxGetCurrent(&ctx);
  if (r != CUDA_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "load of module '%s': cuCtxGetCurrent", label);
    return cuda_result_error(r, what, err, errlen);
  }
  if (!ctx) {
    diag_errf(err, errlen, "load of module '%s': no current CUDA context", label);
    return RT_ERR_INVALID;
  }
  hot_module *m = calloc(1, sizeof *m);
  char *lab = strdup(label);
  if (!m || !lab) {
    free(m);
    free(lab);
    diag_errf(err, errlen, "load of module '%s': out of memory", label);
    return RT_ERR_NOMEM;
  }
  r = drv->cuModuleLoadData(&m->mod, cubin);
  if (r != CUDA_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "load of module '%s' (%zu-byte CUBIN)", label, size);
    free(m);
    free(lab);
    return cuda_result_error(r, what, err, errlen);
  }
  m->label = lab;
  m->drv = drv;
  pthread_mutex_init(&m->mu, NULL);
  *out = m;
  return RT_OK;
}

rt_status module_unload(hot_module *m) {
  if (!m) return RT_OK;
  CUresult r = m->drv->cuModuleUnload(m->mod);
  for (size_t i = 0; i < m->n; i++) free(m->fns[i]);
  free(m->fns);
  free(m->label);
  pthread_mutex_destroy(&m->mu);
  free(m);
  return cuda_result_status(r);
}

rt_status module_function(hot_module *m, const char *kernel, const hot_kfunc **out, char *err,
                          size_t errlen) {
  if (out) *out = NULL;
  if (!m || !kernel || !*kernel || !out) {
    diag_errf(err, errlen, "kernel lookup: NULL %s", !m ? "module" : !out ? "output" : "kernel name");
    return RT_ERR_INVALID;
  }
  rt_status st = RT_OK;
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->fns[i]->name, kernel) == 0) {
      *out = m->fns[i];
      pthread_mutex_unlock(&m->mu);
      return RT_OK;
    }
  size_t nl = strlen(kernel);
  hot_kfunc *f = calloc(1, sizeof *f + nl + 1);  /* the name lives right after the struct */
  if (!f) {
    free(f);
    pthread_mutex_unlock(&m->mu);
    diag_errf(err, errlen, "kernel '%s' of module '%s': out of memory", kernel, m->label);
    return RT_ERR_NOMEM;
  }
  char *name = (char *)(f + 1);
  memcpy(name, kernel, nl + 1);
  f->name = name;
  f->module = m->label;
  f->owner = m;
  CUresult r = m->drv->cuModuleGetFunction(&f->fn, m->mod, kernel);
  if (r == CUDA_ERROR_NOT_FOUND) {
    diag_errf(err, errlen, "module '%s' has no kernel '%s'", m->label, kernel);
    st = RT_ERR_NOT_FOUND;
  } else if (r != CUDA_SUCCESS) {
    char what[300];
    snprintf(what, sizeof what, "lookup of kernel '%s' in module '%s'", kernel, m->label);
    st = cuda_result_error(r, what, err, errlen);
  } else {
    const struct {
      int attr;
      int *dst;
    } attrs[] = {{CU_FUNC_ATTRIBUTE_NUM_REGS, &f->num_regs},
                 {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &f->max_threads},
                 {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &f->static_smem},
                 {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &f->dyn_smem_limit}};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0] && st == RT_OK; i++) {
      r = m->drv->cuFuncGetAttribute(attrs[i].dst, attrs[i].attr, f->fn);
      if (r != CUDA_SUCCESS) {
        char what[300];
        snprintf(what, sizeof what, "attributes of kernel '%s' in module '%s'", kernel, m->label);
        st = cuda_result_error(r, what, err, errlen);
      }
    }
  }
  if (st == RT_OK && m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 8;
    hot_kfunc **v = realloc(m->fns, cap * sizeof *v);
    if (!v) {
      diag_errf(err, errlen, "kernel '%s' of module '%s': out of memory", kernel, m->label);
      st = RT_ERR_NOMEM;
    } else {
      m->fns = v;
      m->cap = cap;
    }
  }
  if (st == RT_OK) {
    m->fns[m->n++] = f;
    *out = f;
  } else {
    free(f);
  }
  pthread_mutex_unlock(&m->mu);
  return st;
}

rt_status module_launch(const hot_kfunc *f, const hot_launch_cfg *cfg, void **args, char *err,
                        size_t errlen) {
  if (!f || !cfg || !f->owner) {
    diag_errf(err, errlen, "launch: NULL %s", !f ? "kernel" : "configuration");
    return RT_ERR_INVALID;
  }
  char shape[160];
  snprintf(shape, sizeof shape, "grid %ux%ux%u, block %ux%ux%u, %u B dynamic shared",
           cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0], cfg->block[1], cfg->block[2],
           cfg->shared_bytes);
  unsigned long long threads =
      (unsigned long long)cfg->block[0] * cfg->block[1] * (unsigned long long)cfg->block[2];
  if (!cfg->grid[0] || !cfg->grid[1] || !cfg->grid[2] || !threads) {
    diag_errf(err, errlen, "launch of kernel '%s' (module '%s'): a zero dimension (%s)", f->name,
        f->module, shape);
    return RT_ERR_INVALID;
  }
  if (threads > (unsigned long long)f->max_threads) {
    diag_errf(err, errlen, "launch of kernel '%s' (module '%s'): %llu threads per block, the kernel "
        "allows %d (%s)", f->name, f->module, threads, f->max_threads, shape);
    return RT_ERR_INVALID;
  }
  hot_module *m = f->owner;
  hot_kfunc *mf = (hot_kfunc *)f;  /* owned by m; only dyn_smem_limit changes, under m->mu */
  pthread_mutex_lock(&m->mu);
  if ((long long)cfg->shared_bytes > (long long)mf->dyn_smem_limit) {
    /* Above the default 48 KiB a kernel must opt in; the driver checks the device limit. */
    CUresult r = m->drv->cuFuncSetAttribute(mf->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            (int)cfg->shared_bytes);
    if (r != CUDA_SUCCESS) {
      pthread_mutex_unlock(&m->mu);
      char what[400];
      snprintf(what, sizeof what,
               "raising the shared memory limit of kernel '%s' (module '%s') to %u B "
               "(static %d B)", f->name, f->module, cfg->shared_bytes, f->static_smem);
      rt_status st = cuda_result_error(r, what, err, errlen);
      return st == RT_ERR_INVALID ? RT_ERR_LAUNCH : st;  /* over the device's opt-in limit */
    }
    mf->dyn_smem_limit = (int)cfg->shared_bytes;
  }
  pthread_mutex_unlock(&m->mu);
  CUresult r = m->drv->cuLaunchKernel(f->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2],
                                      cfg->block[0], cfg->block[1], cfg->block[2],
                                      cfg->shared_bytes, cfg->stream, args, NULL);
  if (r != CUDA_SUCCESS) {
    char what[400];
    snprintf(what, sizeof what, "launch of kernel '%s' (module '%s'; %s)", f->name, f->module,
             shape);
    rt_status st = cuda_result_error(r, what, err, errlen);
    return st == RT_ERR_INVALID ? RT_ERR_LAUNCH : st;
  }
  return RT_OK;
}

rt_status module_global(hot_module *m, const char *name, CUdeviceptr *ptr, size_t *bytes,
                        char *err, size_t errlen) {
  if (!m || !name || !ptr || !bytes) {
    diag_errf(err, errlen, "module_global: NULL argument");
    return RT_ERR_INVALID;
  }
  CUresult r = m->drv->cuModuleGetGlobal(ptr, bytes, m->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND) {
    diag_errf(err, errlen, "module '%s' has no global '%s'", m->label, name);
    return RT_ERR_NOT_FOUND;
  }
  char what[300];
  snprintf(what, sizeof what, "cuModuleGetGlobal '%s' of module '%s'", name, m->label);
  return r == CUDA_SUCCESS ? RT_OK : cuda_result_error(r, what, err, errlen);
}

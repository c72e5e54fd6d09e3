/* nvrtc.c — NVRTC to CUBIN, ptxas info parsing, the default injectable compiler (see nvrtc.h). */
#define _POSIX_C_SOURCE 200809L
#include "nvrtc.h"
#include "cuda_api.h" /* the NVRTC table, the toolkit include folder */
#include "diag.h"
#include "env.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FIXED_OPTIONS "-std=c++17 --ptxas-options=-v -default-device --include-path=<toolkit>"


void nvrtc_result_free(hot_compile_result *r) {
  if (!r) return;
  free(r->cubin);
  free(r->log);
  for (size_t i = 0; i < r->n_kernels && r->kernels; i++) free(r->kernels[i].name);
  free(r->kernels);
  memset(r, 0, sizeof *r);
}

int nvrtc_arch_valid(const char *arch) {
  if (!arch || strncmp(arch, "sm_", 3) != 0) return 0;
  const char *p = arch + 3;
  size_t d = 0;
  while (isdigit((unsigned char)p[d])) d++;
  if (d < 2 || d > 3) return 0;
  p += d;
  if (*p == 'a' || *p == 'f') p++;
  return *p == '\0';
}

rt_status nvrtc_check_source(const hot_kernel_source *src, char *err, size_t errlen) {
  if (!src || !src->source) {
    diag_errf(err, errlen, "compile: no source given");
    return RT_ERR_INVALID;
  }
  if (!src->kernels || src->n_kernels == 0 || src->n_kernels > HOT_MAX_PROGRAM_KERNELS) {
    diag_errf(err, errlen, "compile: a program needs 1..%d kernel names (got %zu)",
        HOT_MAX_PROGRAM_KERNELS, src->kernels ? src->n_kernels : 0);
    return RT_ERR_INVALID;
  }
  for (size_t i = 0; i < src->n_kernels; i++)
    if (!src->kernels[i] || !src->kernels[i][0]) {
      diag_errf(err, errlen, "compile: kernel name %zu is empty", i);
      return RT_ERR_INVALID;
    }
  if (!nvrtc_arch_valid(src->arch)) {
    diag_errf(err, errlen, "compile: arch '%s' is not of the form sm_XX or sm_XXa",
        src->arch ? src->arch : "(null)");
    return RT_ERR_INVALID;
  }
  if (src->n_options && !src->options) {
    diag_errf(err, errlen, "compile: %zu options announced but none given", src->n_options);
    return RT_ERR_INVALID;
  }
  for (size_t i = 0; i < src->n_options; i++)
    if (!src->options[i]) {
      diag_errf(err, errlen, "compile: option %zu is NULL", i);
      return RT_ERR_INVALID;
    }
  return RT_OK;
}

/* ---- ptxas info ----------------------------------------------------------------------------
 * The lines of interest (ptxas -v through NVRTC):
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
 *   ptxas info    : Function properties for NAME
 *       8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]
 * "Used" belongs to the last entry function named; the stack line to the last "Function
 * properties" name (which may be a non-entry device function, then ignored). */
static hot_kernel_info *find_kernel(hot_kernel_info *k, size_t n, const char *name, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (k[i].name && strlen(k[i].name) == len && memcmp(k[i].name, name, len) == 0) return &k[i];
  return NULL;
}

/* The integer just before `word` in [line, end), or -1. */
static int number_before(const char *line, const char *end, const char *word) {
  size_t wl = strlen(word);
  for (const char *p = line; p + wl <= end; p++) {
    if (memcmp(p, word, wl) != 0) continue;
    const char *q = p;
    while (q > line && q[-1] == ' ') q--;
    const char *digits_end = q;
    while (q > line && isdigit((unsigned char)q[-1])) q--;
    if (q == digits_end) return -1;
    long v = strtol(q, NULL, 10);
    return v > 0x7fffffff ? 0x7fffffff : (int)v;
  }
  return -1;
}

size_t nvrtc_parse_ptxas(const char *log, hot_kernel_info *k, size_t n) {
  for (size_t i = 0; i < n; i++) {
    k[i].found = 0;
    k[i].registers = k[i].stack_bytes = k[i].spill_store_bytes = k[i].spill_load_bytes = -1;
    k[i].shared_bytes = 0;
  }
  if (!log) return 0;
  hot_kernel_info *entry = NULL, *props = NULL;
  for (const char *line = log; *line;) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    static const char ce[] = "Compiling entry function '";
    static const char fp[] = "Function properties for ";
    const char *p;
    size_t len = (size_t)(end - line);
    char buf[1024];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    if ((p = strstr(buf, ce)) != NULL) {
      const char *name = p + sizeof ce - 1;
      const char *q = strchr(name, '\'');
      entry = q ? find_kernel(k, n, name, (size_t)(q - name)) : NULL;
      if (entry) entry->found = 1;
    } else if ((p = strstr(buf, fp)) != NULL) {
      const char *name = p + sizeof fp - 1;
      size_t nl = strcspn(name, " \r");
      props = find_kernel(k, n, name, nl);
    } else if (strstr(buf, "bytes stack frame")) {
      if (props) {
        const char *be = buf + len;
        props->stack_bytes = number_before(buf, be, "bytes stack frame");
        props->spill_store_bytes = number_before(buf, be, "bytes spill stores");
        props->spill_load_bytes = number_before(buf, be, "bytes spill loads");
      }
      props = NULL;
    } else if ((p = strstr(buf, "Used ")) != NULL && strstr(buf, "registers")) {
      if (entry) {
        const char *be = buf + len;
        entry->registers = number_before(buf, be, "registers");
        int smem = number_before(buf, be, "bytes smem");
        entry->shared_bytes = smem > 0 ? smem : 0;
      }
    }
    line = *end ? end + 1 : end;
  }
  size_t found = 0;
  for (size_t i = 0; i < n; i++) found += k[i].found ? 1u : 0u;
  return found;
}

/* ---- NVRTC phase times ------------------------------------------------------------------- */
int nvrtc_parse_time_csv(const char *csv, hot_compile_result *r) {
  if (!csv || !r) return 0;
  int lines = 0;
  double f = 0, v = 0, p = 0;
  for (const char *line = csv; *line;) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    char buf[512];
    size_t len = (size_t)(end - line);
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    /* <program>, <phase>, <number>, <unit>: the phase is the second field from the end but
     * two, so that a program name holding a comma does not shift it. */
    char *c3 = strrchr(buf, ',');
    char *c2 = NULL, *c1 = NULL;
    if (c3) {
      *c3 = '\0';
      c2 = strrchr(buf, ',');
    }
    if (c2) {
      *c2 = '\0';
      c1 = strrchr(buf, ',');
    }
    if (c1 && c2 && c3) {
      const char *phase = c1 + 1, *num = c2 + 1, *unit = c3 + 1;
      while (*unit == ' ') unit++;
      char *e = NULL;
      double ms = strtod(num, &e);
      while (e && (*e == ' ' || *e == '\r')) e++;
      if (e && e != num && *e == '\0' && ms >= 0 && strncmp(unit, "ms", 2) == 0) {
        if (strstr(phase, "Frontend")) f += ms, lines++;
        else if (strstr(phase, "NVVM")) v += ms, lines++;
        else if (strstr(phase, "PTX")) p += ms, lines++;
      }
    }
    line = *end ? end + 1 : end;
  }
  if (lines) {
    r->phases_known = 1;
    r->front_ms = f;
    r->nvvm_ms = v;
    r->ptxas_ms = p;
  }
  return lines;
}

/* A new empty temp file for NVRTC's --time report: its path into buf (0), or -1 (no report). */
static int time_file(char *buf, size_t n) {
  const char *dir = env_get("TMPDIR");
  if (!dir || dir[0] != '/') dir = "/tmp";
  if (snprintf(buf, n, "%s/hot-nvrtc-time-XXXXXX", dir) >= (int)n) return -1;
  int fd = mkstemp(buf);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

/* Reads the report at path into r (best effort) and removes the file. */
static void read_time_file(const char *path, hot_compile_result *r) {
  FILE *f = fopen(path, "r");
  if (f) {
    char text[4096];
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = '\0';
    fclose(f);
    nvrtc_parse_time_csv(text, r);
  }
  unlink(path);
}

/* ---- compile ------------------------------------------------------------------------------ */
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The first line of the log that reports an error (else its first non-empty line), copied. */
static void first_error(const char *log, char *buf, size_t n) {
  buf[0] = '\0';
  if (!log) return;
  const char *pick = NULL;
  for (const char *line = log; *line;) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    size_t len = (size_t)(end - line);
    if (len && !pick) pick = line;
    const char *e = strstr(line, "error");
    if (e && e < end) {
      pick = line;
      break;
    }
    line = *end ? end + 1 : end;
  }
  if (!pick) return;
  size_t len = strcspn(pick, "\r\n");
  if (len >= n) len = n - 1;
  memcpy(buf, pick, len);
  buf[len] = '\0';
}

/* Copies the CUBIN of a compiled program into out->cubin and destroys *prog on every path. */
static rt_status take_cubin(const cuda_nvrtc *nv, nvrtcProgram *prog, hot_compile_result *out,
                            const char *prog_name, const char *arch, char *err, size_t errlen) {
  size_t cn = 0;
  if (nv->nvrtcGetCUBINSize(*prog, &cn) != NVRTC_SUCCESS || cn == 0) {
    nv->nvrtcDestroyProgram(prog);
    diag_errf(err, errlen, "compile '%s' for %s: NVRTC produced no CUBIN", prog_name, arch);
    return RT_ERR_COMPILE;
  }
  out->cubin = malloc(cn);
  if (!out->cubin) {
    nv->nvrtcDestroyProgram(prog);
    diag_errf(err, errlen, "compile '%s': out of memory", prog_name);
    return RT_ERR_NOMEM;
  }
  if (nv->nvrtcGetCUBIN(*prog, (char *)out->cubin) != NVRTC_SUCCESS) {
    nv->nvrtcDestroyProgram(prog);
    free(out->cubin);
    out->cubin = NULL;
    diag_errf(err, errlen, "compile '%s' for %s: nvrtcGetCUBIN failed", prog_name, arch);
    return RT_ERR_COMPILE;
  }
  out->cubin_size = cn;
  nv->nvrtcDestroyProgram(prog);
  return RT_OK;
}

/* Fills the per-kernel ptxas figures from out->log; a requested kernel that ptxas did not
 * report fails the compile and drops the CUBIN. */
static rt_status check_entry_points(hot_compile_result *out, const char *prog_name,
                                    const char *arch, char *err, size_t errlen) {
  size_t found = nvrtc_parse_ptxas(out->log, out->kernels, out->n_kernels);
  if (found == out->n_kernels) return RT_OK;
  /* A kernel name absent from ptxas' output is not an entry point: a typo or a missing
   * extern "C" (the cubin would fail at lookup on the GPU, so fail here, without one). */
  for (size_t i = 0; i < out->n_kernels; i++)
    if (!out->kernels[i].found) {
      diag_errf(err, errlen,
          "compile '%s' for %s: no kernel '%s' in the program (missing extern \"C\" "
          "__global__?)", prog_name, arch, out->kernels[i].name);
      break;
    }
  free(out->cubin);
  out->cubin = NULL;
  out->cubin_size = 0;
  return RT_ERR_COMPILE;
}

rt_status nvrtc_compile(const hot_kernel_source *src, hot_compile_result *out, char *err,
                        size_t errlen) {
  if (!out) {
    diag_errf(err, errlen, "compile: no result given");
    return RT_ERR_INVALID;
  }
  memset(out, 0, sizeof *out);
  rt_status st = nvrtc_check_source(src, err, errlen);
  if (st != RT_OK) return st;
  const cuda_nvrtc *nv = NULL;
  st = cuda_nvrtc_get(&nv, err, errlen);
  if (st != RT_OK) return st;
  const char *prog_name = src->program ? src->program : "hot.cu";

  size_t nopt = 5 + src->n_options;
  const char **opts = calloc(nopt + 1, sizeof *opts);
  char arch_opt[32], inc_opt[600], tpath[512], time_opt[600];
  int timed = 0;
  out->kernels = calloc(src->n_kernels, sizeof *out->kernels);
  if (!opts || !out->kernels) {
    free(opts);
    diag_errf(err, errlen, "compile '%s': out of memory", prog_name);
    return RT_ERR_NOMEM;
  }
  out->n_kernels = src->n_kernels;
  for (size_t i = 0; i < src->n_kernels; i++) {
    out->kernels[i].name = strdup(src->kernels[i]);
    if (!out->kernels[i].name) {
      free(opts);
      diag_errf(err, errlen, "compile '%s': out of memory", prog_name);
      return RT_ERR_NOMEM;
    }
  }
  snprintf(arch_opt, sizeof arch_opt, "-arch=%s", src->arch);
  snprintf(inc_opt, sizeof inc_opt, "--include-path=%s", cuda_toolkit_include());
  opts[0] = arch_opt;
  opts[1] = inc_opt;
  opts[2] = "-std=c++17";
  opts[3] = "--ptxas-options=-v";
  opts[4] = "-default-device";
  for (size_t i = 0; i < src->n_options; i++) opts[5 + i] = src->options[i];
  if (nv->major * 100 + nv->minor >= 1208 && time_file(tpath, sizeof tpath) == 0) {
    snprintf(time_opt, sizeof time_opt, "--time=%s", tpath);
    opts[nopt++] = time_opt;
    timed = 1;
  }

  double t0 = now_ms();
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv->nvrtcCreateProgram(&prog, src->source, prog_name, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    free(opts);
    if (timed) unlink(tpath);
    diag_errf(err, errlen, "compile '%s' for %s: nvrtcCreateProgram failed (%s)", prog_name, src->arch,
        nv->nvrtcGetErrorString(r));
    return RT_ERR_COMPILE;
  }
  nvrtcResult cr = nv->nvrtcCompileProgram(prog, (int)nopt, opts);
  free(opts);
  if (timed) read_time_file(tpath, out);
  size_t log_n = 0;
  if (nv->nvrtcGetProgramLogSize(prog, &log_n) != NVRTC_SUCCESS) log_n = 0;
  out->log = malloc(log_n + 1);
  if (!out->log) {
    nv->nvrtcDestroyProgram(&prog);
    diag_errf(err, errlen, "compile '%s': out of memory", prog_name);
    return RT_ERR_NOMEM;
  }
  out->log[0] = '\0';
  if (log_n && nv->nvrtcGetProgramLog(prog, out->log) != NVRTC_SUCCESS) out->log[0] = '\0';
  out->log[log_n] = '\0';
  out->log_size = strlen(out->log);
  if (cr != NVRTC_SUCCESS) {
    char first[240];
    first_error(out->log, first, sizeof first);
    nv->nvrtcDestroyProgram(&prog);
    out->compile_ms = now_ms() - t0;
    diag_errf(err, errlen, "compile '%s' for %s failed (%s)%s%s", prog_name, src->arch,
        nv->nvrtcGetErrorString(cr), first[0] ? ": " : "", first);
    return RT_ERR_COMPILE;
  }
  st = take_cubin(nv, &prog, out, prog_name, src->arch, err, errlen);
  if (st != RT_OK) return st;
  out->compile_ms = now_ms() - t0;
  return check_entry_points(out, prog_name, src->arch, err, errlen);
}

static rt_status nv_version(void *user, char *buf, size_t n, char *err, size_t errlen) {
  (void)user;
  const cuda_nvrtc *nv = NULL;
  rt_status st = cuda_nvrtc_get(&nv, err, errlen);
  if (st != RT_OK) return st;
  snprintf(buf, n, "nvrtc-%d.%d", nv->major, nv->minor);
  return RT_OK;
}

static rt_status nv_compile(void *user, const hot_kernel_source *src, hot_compile_result *out,
                            char *err, size_t errlen) {
  (void)user;
  return nvrtc_compile(src, out, err, errlen);
}

static const hot_compiler nvrtc_table = {NULL, nv_version, FIXED_OPTIONS, nv_compile};

const hot_compiler *nvrtc_compiler(void) { return &nvrtc_table; }

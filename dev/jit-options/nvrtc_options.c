/* nvrtc_options.c — what NVRTC options do to the compile work of the programs the runtime
 * compiles: each program of a HOT_JIT_DEBUG dump (hot-gen ... --compile ARCH with
 * HOT_JIT_DEBUG=1 HOT_JIT_DEBUG_DIR=DIR writes DIR/<layer>.<arch>.cu and .log) compiled by NVRTC
 * in this one process, with the runtime's options (runtime/nvrtc.c) plus each variant's, the
 * variants alternated back to back in every round (their order rotated from round to round).
 *
 * Per program and variant it prints the CPU time of the compile (min and median over the
 * rounds), NVRTC's --time phases (medians), ptxas' registers, stack and spill bytes, and the SASS
 * counts of the CUBIN as test_nvrtc_sass counts them (`cuobjdump -sass`: every instruction but
 * NOP, then IMMA, *GMMA, LDL, STL), and whether its SASS is identical to the first variant's
 * (the CUBINs themselves differ: they record the options). Then the sum over the programs per variant (the compile work of the layer), min and
 * median over the rounds, and the median of the per-round ratios to the first variant. A
 * benchmark: it prints figures and checks nothing.
 *
 * Not part of the CMake build (the .c files directly in bench/ make hot-bench); dev/jit-options/run.sh builds and runs
 * it:  cc -O2 -std=c11 -o nvrtc-options nvrtc_options.c -I$CUDA/include -L$CUDA/lib64 -lnvrtc
 *
 * Usage: nvrtc-options [--rounds N] [--cuobjdump PATH] [--empty ARCH] [--only SUBSTR]
 *                      [--variant NAME=OPT[,OPT...]]... DUMP.cu...
 * Without --variant: base (no extra option), -Ofc=min, -Ofc=mid, -Ofc=max, ptxas -O2, ptxas -O1,
 * ptxas -O0, ptxas --allow-expensive-optimizations=false. --empty adds a program with one empty
 * kernel for ARCH (the fixed cost of a program). --only keeps the programs whose kernel name
 * contains SUBSTR. --batch N instead compiles all the programs on N threads, longest source first
 * (as the runtime's pool does), and prints each variant's wall and CPU time per batch. */
#define _POSIX_C_SOURCE 200809L
#include <nvrtc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "num.h" /* base/: the one parser of numbers */

#define MAX_PROGS 64
#define MAX_VARIANTS 16
#define MAX_OPTS 8
#define MAX_ROUNDS 16
#define SASS_COLS 5 /* instructions, IMMA, *GMMA, LDL, STL */

typedef struct {
  char name[32];
  char *opts[MAX_OPTS];
  int n;
} variant;

typedef struct {
  char kernel[160], arch[16];
  char *src; /* owned */
} program;

typedef struct {
  int ok;
  double cpu_ms, front_ms, nvvm_ms, ptxas_ms;
  int regs, stack, spill_st, spill_ld;
  int sass[SASS_COLS];
  uint64_t hash; /* FNV-1a of the SASS code lines (addresses and encodings included) */
} sample;

static program g_prog[MAX_PROGS];
static int g_nprog;
static variant g_var[MAX_VARIANTS];
static int g_nvar;
static sample g_s[MAX_PROGS][MAX_VARIANTS][MAX_ROUNDS];
static char g_cuobjdump[1024], g_tmp[256];

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double wall_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void loadavg(char *buf, size_t n) {
  FILE *f = fopen("/proc/loadavg", "r");
  buf[0] = '\0';
  if (f) {
    if (!fgets(buf, (int)n, f)) buf[0] = '\0';
    fclose(f);
  }
  buf[strcspn(buf, " ")] = '\0'; /* the 1-minute figure */
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  for (size_t got; b && (got = fread(b + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (cap - n < 2) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) free(b);
      b = nb;
    }
  }
  fclose(f);
  if (b) b[n] = '\0';
  return b;
}

/* Adds the programs of a dump: DUMP.cu split at its "// ==== program N ====" lines, the kernel
 * names from DUMP.log's "== NAME ==" lines (same order), the arch from the file name. */
static int add_dump(const char *path, const char *only) {
  char logpath[1200], arch[16] = "";
  size_t pl = strlen(path);
  if (pl < 4 || strcmp(path + pl - 3, ".cu") || pl + 2 > sizeof logpath) {
    fprintf(stderr, "nvrtc-options: %s: expected a dump <layer>.<arch>.cu\n", path);
    return -1;
  }
  snprintf(logpath, sizeof logpath, "%.*s.log", (int)(pl - 3), path);
  const char *a = strstr(path, ".sm_");
  if (!a || sscanf(a + 1, "%15[a-z0-9_]", arch) != 1) {
    fprintf(stderr, "nvrtc-options: %s: no .sm_XX in the file name\n", path);
    return -1;
  }
  char *src = read_file(path), *log = read_file(logpath);
  if (!src || !log) {
    fprintf(stderr, "nvrtc-options: cannot read %s or %s\n", path, logpath);
    free(src);
    free(log);
    return -1;
  }
  static const char sep[] = "// ==== program ";
  const char *lp = log;
  for (char *p = strstr(src, sep); p;) {
    char *body = strchr(p, '\n');
    if (!body) break;
    ++body;
    char *next = strstr(body, sep);
    size_t len = next ? (size_t)(next - body) : strlen(body);
    const char *h = strstr(lp, "== ");
    char name[160] = "";
    while (h && h != log && h[-1] != '\n') h = strstr(h + 1, "== ");
    if (!h || sscanf(h + 3, "%159s", name) != 1) {
      fprintf(stderr, "nvrtc-options: %s: fewer kernel names than programs\n", logpath);
      break;
    }
    lp = h + 3;
    if (g_nprog == MAX_PROGS) break;
    if (!only || strstr(name, only)) {
      program *g = &g_prog[g_nprog++];
      snprintf(g->kernel, sizeof g->kernel, "%s", name);
      snprintf(g->arch, sizeof g->arch, "%s", arch);
      g->src = malloc(len + 1);
      if (!g->src) return -1;
      memcpy(g->src, body, len);
      g->src[len] = '\0';
    }
    p = next;
  }
  free(src);
  free(log);
  return 0;
}

static int add_variant(const char *spec) {
  if (g_nvar == MAX_VARIANTS) return -1;
  variant *v = &g_var[g_nvar];
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof v->name) return -1;
  snprintf(v->name, sizeof v->name, "%.*s", (int)(eq - spec), spec);
  v->n = 0;
  for (const char *p = eq + 1; *p && v->n < MAX_OPTS;) {
    size_t l = strcspn(p, ",");
    if (l) {
      v->opts[v->n] = malloc(l + 1);
      if (!v->opts[v->n]) return -1;
      memcpy(v->opts[v->n], p, l);
      v->opts[v->n++][l] = '\0';
    }
    p += l + (p[l] == ',');
  }
  ++g_nvar;
  return 0;
}

/* The integer just before `word` in line, or -1. */
static int number_before(const char *line, const char *word) {
  const char *w = strstr(line, word);
  if (!w) return -1;
  while (w > line && w[-1] == ' ') --w;
  const char *d = w;
  while (d > line && d[-1] >= '0' && d[-1] <= '9') --d;
  return d == w ? -1 : atoi(d);
}

static void parse_ptxas(const char *log, sample *s) {
  s->regs = s->stack = s->spill_st = s->spill_ld = 0;
  for (const char *l = log; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t n = e ? (size_t)(e - l) : strlen(l);
    char b[512];
    snprintf(b, sizeof b, "%.*s", (int)(n < sizeof b ? n : sizeof b - 1), l);
    int v;
    if ((v = number_before(b, "registers")) > s->regs && strstr(b, "Used ")) s->regs = v;
    if ((v = number_before(b, "bytes stack frame")) > s->stack) s->stack = v;
    if ((v = number_before(b, "bytes spill stores")) > s->spill_st) s->spill_st = v;
    if ((v = number_before(b, "bytes spill loads")) > s->spill_ld) s->spill_ld = v;
    l = e ? e + 1 : l + n;
  }
}

static void parse_time(const char *path, sample *s) {
  char *t = read_file(path);
  s->front_ms = s->nvvm_ms = s->ptxas_ms = 0;
  for (char *l = t; l && *l;) {
    char *e = strchr(l, '\n');
    if (e) *e = '\0';
    char *c3 = strrchr(l, ','), *c2 = NULL, *c1 = NULL;
    if (c3) *c3 = '\0', c2 = strrchr(l, ',');
    if (c2) *c2 = '\0', c1 = strrchr(l, ',');
    if (c1 && strstr(c3 + 1, "ms")) {
      double ms = atof(c2 + 1);
      if (strstr(c1, "Frontend")) s->front_ms += ms;
      else if (strstr(c1, "NVVM")) s->nvvm_ms += ms;
      else if (strstr(c1, "PTX")) s->ptxas_ms += ms;
    }
    l = e ? e + 1 : NULL;
  }
  free(t);
  unlink(path);
}

/* One line of `cuobjdump -sass`: an instruction line (an address in a comment, an optional
 * predicate, the opcode) is hashed into *hv and counted into c (all, IMMA, *GMMA, LDL, STL; NOP excluded), as test_nvrtc_sass does. */
static void sass_line(const char *line, int *c, uint64_t *hv) {
  const char *q = line + strspn(line, " \t");
  if (q[0] != '/' || q[1] != '*') return;
  for (const char *x = q; *x; ++x) *hv = (*hv ^ (unsigned char)*x) * 1099511628211ull;
  q += 2;
  const char *h = q;
  while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')) ++q;
  if (q == h || q[0] != '*' || q[1] != '/') return;
  q += 2 + strspn(q + 2, " \t");
  if (*q == '@') q += strcspn(q, " "), q += strspn(q, " ");
  size_t k = 0;
  while ((q[k] >= 'A' && q[k] <= 'Z') || (q[k] >= '0' && q[k] <= '9') || q[k] == '_') ++k;
  if (k == 0 || (k == 3 && !strncmp(q, "NOP", 3))) return;
  ++c[0];
  if (k == 4 && !strncmp(q, "IMMA", 4)) ++c[1];
  if (k > 4 && !strncmp(q + k - 4, "GMMA", 4)) ++c[2];
  if (k == 3 && !strncmp(q, "LDL", 3)) ++c[3];
  if (k == 3 && !strncmp(q, "STL", 3)) ++c[4];
}

/* SASS counts of the CUBIN (as test_nvrtc_sass counts them) and a hash of its code lines into
 * *hash; all -1 without a disassembler. */
static void sass_counts(const char *cubin, size_t n, int *c, uint64_t *hash) {
  for (int i = 0; i < SASS_COLS; ++i) c[i] = -1;
  if (!g_cuobjdump[0]) return;
  char path[400], cmd[3000], dir[1024];
  snprintf(path, sizeof path, "%s/k.cubin", g_tmp);
  FILE *f = fopen(path, "wb");
  if (!f) return;
  size_t w = fwrite(cubin, 1, n, f);
  if (fclose(f) != 0 || w != n) return;
  snprintf(dir, sizeof dir, "%s", g_cuobjdump);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  snprintf(cmd, sizeof cmd, "PATH='%s':\"$PATH\" '%s' -sass '%s' 2>/dev/null", dir, g_cuobjdump,
           path);
  FILE *p = popen(cmd, "r");
  if (!p) return;
  for (int i = 0; i < SASS_COLS; ++i) c[i] = 0;
  char line[1024];
  uint64_t hv = 1469598103934665603ull;
  while (fgets(line, sizeof line, p)) sass_line(line, c, &hv);
  pclose(p);
  unlink(path);
  *hash = hv;
}

/* One compile of program g with variant v into *s; sass: count the CUBIN's SASS too. */
static void compile(const program *g, const variant *v, sample *s, int sass) {
  memset(s, 0, sizeof *s);
  char arch[40], inc[600], tpath[300], topt[340];
  const char *opts[6 + MAX_OPTS];
  int n = 0;
  snprintf(arch, sizeof arch, "-arch=%s", g->arch);
  const char *home = getenv("CUDA_HOME");
  snprintf(inc, sizeof inc, "--include-path=%s/include", home ? home : "/usr/local/cuda");
  static int serial;
  snprintf(tpath, sizeof tpath, "%s/time-%d.csv", g_tmp,
           __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED));
  snprintf(topt, sizeof topt, "--time=%s", tpath);
  opts[n++] = arch;
  opts[n++] = inc;
  opts[n++] = "-std=c++17";
  opts[n++] = "--ptxas-options=-v";
  opts[n++] = "-default-device";
  for (int i = 0; i < v->n; ++i) opts[n++] = v->opts[i];
  opts[n++] = topt;
  double t0 = cpu_ms();
  nvrtcProgram p = NULL;
  if (nvrtcCreateProgram(&p, g->src, "hot.cu", 0, NULL, NULL) != NVRTC_SUCCESS) return;
  nvrtcResult r = nvrtcCompileProgram(p, n, opts);
  s->cpu_ms = cpu_ms() - t0;
  size_t ln = 0;
  nvrtcGetProgramLogSize(p, &ln);
  char *log = malloc(ln + 1);
  if (log) {
    log[0] = '\0';
    if (ln) nvrtcGetProgramLog(p, log);
    log[ln] = '\0';
  }
  parse_time(tpath, s);
  size_t cn = 0;
  char *cubin = NULL;
  if (r == NVRTC_SUCCESS && nvrtcGetCUBINSize(p, &cn) == NVRTC_SUCCESS && cn &&
      (cubin = malloc(cn)) && nvrtcGetCUBIN(p, cubin) == NVRTC_SUCCESS) {
    s->ok = 1;
    parse_ptxas(log, s);
    if (sass) sass_counts(cubin, cn, s->sass, &s->hash);
  } else {
    fprintf(stderr, "nvrtc-options: %s %s [%s]: %s\n%s\n", g->arch, g->kernel, v->name,
            nvrtcGetErrorString(r), log ? log : "");
  }
  free(cubin);
  free(log);
  nvrtcDestroyProgram(&p);
}

/* --batch: every program compiled by `threads` threads, longest source first (as the runtime's
 * pool does); the batch's wall time is what a layer's cold compile waits for. */
typedef struct {
  const variant *v;
  const int *order;
  int next;
  sample *out;
} batch;

static void *batch_worker(void *arg) {
  batch *b = arg;
  for (int i; (i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < g_nprog;)
    compile(&g_prog[b->order[i]], b->v, &b->out[b->order[i]], 0);
  return NULL;
}

static int longer_first(const void *a, const void *b) {
  size_t x = strlen(g_prog[*(const int *)a].src) / 1024, y = strlen(g_prog[*(const int *)b].src) / 1024;
  return x != y ? (x > y ? -1 : 1) : *(const int *)a - *(const int *)b;
}

/* Wall and CPU ms of one batch of every program with variant v on `threads` threads; 0 when a
 * compile failed. */
static int run_batch(const variant *v, int threads, double *wall, double *cpu) {
  int order[MAX_PROGS];
  sample out[MAX_PROGS];
  for (int i = 0; i < g_nprog; ++i) order[i] = i;
  qsort(order, (size_t)g_nprog, sizeof *order, longer_first);
  batch b = {v, order, 0, out};
  pthread_t t[16];
  int started = 0;
  double w0 = wall_ms(), c0 = cpu_ms();
  for (int i = 1; i < threads && i < 16; ++i)
    if (pthread_create(&t[started], NULL, batch_worker, &b) == 0) ++started;
  batch_worker(&b);
  for (int i = 0; i < started; ++i) pthread_join(t[i], NULL);
  *wall = wall_ms() - w0;
  *cpu = cpu_ms() - c0;
  for (int i = 0; i < g_nprog; ++i)
    if (!out[i].ok) return 0;
  return 1;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The command line: options into the globals and *rounds, *threads, *empty_arch; returns the
 * index of the first dump file, or -1 (said: exit 2). */
static int parse_args(int argc, char **argv, int *rounds, int *threads, const char **only,
                      const char **empty_arch) {
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    if ((!strcmp(argv[i], "--rounds") || !strcmp(argv[i], "--batch")) && i + 1 < argc) {
      char err[160]; /* base/num.h, as hot's programs */
      const int r = !strcmp(argv[i], "--rounds");
      if (num_parse_int(argv[i], argv[i + 1], r ? 1 : 0, r ? MAX_ROUNDS : 16, r ? rounds : threads,
                        err, sizeof err)) {
        fprintf(stderr, "nvrtc-options: %s\n", err);
        return -1;
      }
      ++i;
    }
    else if (!strcmp(argv[i], "--cuobjdump") && i + 1 < argc)
      snprintf(g_cuobjdump, sizeof g_cuobjdump, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) *only = argv[++i];
    else if (!strcmp(argv[i], "--empty") && i + 1 < argc) *empty_arch = argv[++i];
    else if (!strcmp(argv[i], "--variant") && i + 1 < argc) {
      if (add_variant(argv[++i])) {
        fprintf(stderr, "nvrtc-options: --variant '%s': expected NAME=OPT[,OPT...]\n", argv[i]);
        return -1;
      }
    } else {
      fprintf(stderr, "usage: nvrtc-options [--rounds N] [--cuobjdump PATH] [--empty ARCH] "
                      "[--only SUBSTR] [--batch THREADS] [--variant NAME=OPT[,OPT...]]... "
                      "DUMP.cu...\n");
      return -1;
    }
  }
  return i;
}

/* The default variants when none was given. */
static void default_variants(void) {
  static const char *const def[] = {
      "base=", "ofc-min=-Ofc=min", "ofc-mid=-Ofc=mid", "ofc-max=-Ofc=max",
      "ptxas-O2=--ptxas-options=-O2", "ptxas-O1=--ptxas-options=-O1",
      "ptxas-O0=--ptxas-options=-O0",
      "no-expensive=--ptxas-options=--allow-expensive-optimizations=false"};
  for (size_t k = 0; k < sizeof def / sizeof *def; ++k) add_variant(def[k]);
}

/* --batch: every variant's batch once per round (order rotated), then the table. */
static void batch_mode(int rounds, int threads) {
  double wall[MAX_VARIANTS][MAX_ROUNDS], cpu[MAX_VARIANTS][MAX_ROUNDS];
  int okv[MAX_VARIANTS];
  for (int v = 0; v < g_nvar; ++v) okv[v] = 1;
  for (int r = 0; r < rounds; ++r) {
    char l0[32], l1[32];
    loadavg(l0, sizeof l0);
    for (int k = 0; k < g_nvar; ++k) {
      int v = (k + r) % g_nvar;
      okv[v] &= run_batch(&g_var[v], threads, &wall[v][r], &cpu[v][r]);
    }
    loadavg(l1, sizeof l1);
    printf("# round %d: load average %s -> %s\n", r + 1, l0, l1);
    fflush(stdout);
  }
  printf("# %d programs on %d threads, longest source first: ms per batch, min / median over "
         "the rounds (every round: wall (CPU))\n", g_nprog, threads);
  for (int v = 0; v < g_nvar; ++v) {
    printf("batch %-13s", g_var[v].name);
    if (!okv[v]) {
      printf(" (a compile failed)\n");
      continue;
    }
    double w[MAX_ROUNDS], c[MAX_ROUNDS], m = wall[v][0];
    for (int r = 0; r < rounds; ++r) {
      w[r] = wall[v][r], c[r] = cpu[v][r];
      m = w[r] < m ? w[r] : m;
      printf(" %6.0f (%6.0f)", wall[v][r], cpu[v][r]);
    }
    printf("  wall min %6.0f median %6.0f  CPU median %6.0f\n", m, median(w, rounds),
           median(c, rounds));
  }
}

/* Every program with every variant once per round (order rotated: no variant always runs
 * first); SASS counted in the first round. */
static void compile_rounds(int rounds) {
  for (int r = 0; r < rounds; ++r) {
    char l0[32], l1[32];
    loadavg(l0, sizeof l0);
    for (int p = 0; p < g_nprog; ++p)
      for (int k = 0; k < g_nvar; ++k) {
        int v = (k + r) % g_nvar;
        compile(&g_prog[p], &g_var[v], &g_s[p][v][r], r == 0);
      }
    loadavg(l1, sizeof l1);
    printf("# round %d: load average %s -> %s\n", r + 1, l0, l1);
    fflush(stdout);
  }
}

/* Sums over the programs of one variant, per round: CPU ms and the three phases. */
typedef struct {
  double tot[MAX_ROUNDS], ph[3][MAX_ROUNDS];
  int bad;
} var_sum;

/* One row per program and variant (medians over the rounds), summed into sums[]. */
static void program_rows(int rounds, var_sum *sums) {
  printf("%-7s %-42s %-13s %7s %7s %6s %6s %6s %4s %5s %5s %6s %4s %4s %3s %3s %s\n", "arch",
         "kernel", "variant", "cpu_min", "cpu_med", "front", "nvvm", "ptxas", "regs", "stack",
         "spill", "instr", "imma", "gmma", "ldl", "stl", "sass");
  for (int p = 0; p < g_nprog; ++p)
    for (int v = 0; v < g_nvar; ++v) {
      double c[MAX_ROUNDS], f[MAX_ROUNDS], n[MAX_ROUNDS], x[MAX_ROUNDS];
      int ok = 1;
      for (int r = 0; r < rounds; ++r) {
        const sample *s = &g_s[p][v][r];
        ok &= s->ok;
        c[r] = s->cpu_ms, f[r] = s->front_ms, n[r] = s->nvvm_ms, x[r] = s->ptxas_ms;
        sums[v].tot[r] += s->cpu_ms;
        sums[v].ph[0][r] += s->front_ms, sums[v].ph[1][r] += s->nvvm_ms;
        sums[v].ph[2][r] += s->ptxas_ms;
      }
      const sample *s0 = &g_s[p][v][0], *b0 = &g_s[p][0][0];
      if (!ok) {
        sums[v].bad = 1;
        printf("%-7s %-42s %-13s failed\n", g_prog[p].arch, g_prog[p].kernel, g_var[v].name);
        continue;
      }
      double cmin = c[0];
      for (int r = 1; r < rounds; ++r) cmin = c[r] < cmin ? c[r] : cmin;
      printf("%-7s %-42s %-13s %7.0f %7.0f %6.0f %6.0f %6.0f %4d %5d %5d %6d %4d %4d %3d %3d %s\n",
             g_prog[p].arch, g_prog[p].kernel, g_var[v].name, cmin, median(c, rounds),
             median(f, rounds), median(n, rounds), median(x, rounds), s0->regs, s0->stack,
             s0->spill_st + s0->spill_ld, s0->sass[0], s0->sass[1], s0->sass[2], s0->sass[3],
             s0->sass[4],
             v == 0 ? "-" : (s0->hash == b0->hash ? "same" : "differs"));
    }
}

/* One total row per variant: min and median of the sums, phase medians, ratio to variant 0. */
static void total_rows(int rounds, var_sum *sums) {
  printf("# sum over the %d programs (CPU ms): min, median over rounds; phases: medians; ratio: "
         "median of the per-round ratios to %s\n", g_nprog, g_var[0].name);
  for (int v = 0; v < g_nvar; ++v) {
    if (sums[v].bad) {
      printf("total %-13s (a compile failed)\n", g_var[v].name);
      continue;
    }
    double t[MAX_ROUNDS], q[MAX_ROUNDS], m = sums[v].tot[0];
    for (int r = 0; r < rounds; ++r) {
      t[r] = sums[v].tot[r];
      q[r] = sums[0].tot[r] > 0 ? sums[v].tot[r] / sums[0].tot[r] : 0;
      m = t[r] < m ? t[r] : m;
    }
    printf("total %-13s min %7.0f  median %7.0f  front %6.0f  nvvm %6.0f  ptxas %6.0f  ratio %.2f\n",
           g_var[v].name, m, median(t, rounds), median(sums[v].ph[0], rounds),
           median(sums[v].ph[1], rounds), median(sums[v].ph[2], rounds), median(q, rounds));
  }
}

int main(int argc, char **argv) {
  int rounds = 3, threads = 0;
  const char *only = NULL, *empty_arch = NULL;
  int i = parse_args(argc, argv, &rounds, &threads, &only, &empty_arch);
  if (i < 0) return 2;
  if (!g_nvar) default_variants();
  if (empty_arch && g_nprog < MAX_PROGS) {
    program *g = &g_prog[g_nprog++];
    snprintf(g->kernel, sizeof g->kernel, "empty");
    snprintf(g->arch, sizeof g->arch, "%s", empty_arch);
    g->src = strdup("extern \"C\" __global__ void empty(void) {}\n");
  }
  for (; i < argc; ++i)
    if (add_dump(argv[i], only)) return 1;
  if (!g_nprog) {
    fprintf(stderr, "nvrtc-options: no programs\n");
    return 2;
  }
  const char *td = getenv("TMPDIR");
  snprintf(g_tmp, sizeof g_tmp, "%s/nvrtc-options-XXXXXX", td && *td == '/' ? td : "/tmp");
  if (!mkdtemp(g_tmp)) {
    fprintf(stderr, "nvrtc-options: cannot make a temporary folder\n");
    return 1;
  }
  int maj = 0, min = 0;
  nvrtcVersion(&maj, &min);
  printf("# NVRTC %d.%d, %d programs, %d variants, %d rounds; CPU ms of one compile\n", maj, min,
         g_nprog, g_nvar, rounds);
  sample warm; /* NVRTC's first compile in a process also loads and sets itself up: not counted */
  double w0 = cpu_ms();
  compile(&g_prog[g_nprog - 1], &g_var[0], &warm, 0);
  printf("# first compile in the process (%s %s, NVRTC's set-up included): %.0f CPU ms\n",
         g_prog[g_nprog - 1].arch, g_prog[g_nprog - 1].kernel, cpu_ms() - w0);
  if (threads) {
    batch_mode(rounds, threads);
  } else {
    static var_sum sums[MAX_VARIANTS];
    compile_rounds(rounds);
    program_rows(rounds, sums);
    total_rows(rounds, sums);
  }
  rmdir(g_tmp);
  for (int p = 0; p < g_nprog; ++p) free(g_prog[p].src);
  return 0;
}

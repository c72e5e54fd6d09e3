/* fast_level.c — the dispatch levels of the fast CPU path: what the CPU (and Linux, for AMX)
 * offers, the names of the levels, and one kernel table per level (struct fast_kernels), put
 * together once from the row that the file of each level gives (fast_level_row: fast_avx2.c,
 * fast_avxvnni.c, fast_avx512.c, fast_amx.c; the scalar level's kernels are fast_kern.c's and
 * fast_gemm.c's): a level without per-element kernels or without a GEMM runs those of the level
 * below. A config (fast_config_init) points to the table of its level, so the call sites never
 * test a level.
 *
 * A new level: its enum value in fast.h, its CPU test, names and row in k_rows here, and its own
 * file with its kernels and that row (docs/adding.md). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "fast_internal.h"
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if FAST_HAVE_AMX
#include <sys/syscall.h>
#endif

/* ---- the default config's settings and the CPU's levels ------------------------------------------------------------------------------ */

static atomic_int g_threads;        /* the default config's threads; 0: the online CPUs */
static atomic_int g_level_cap = -1; /* the default config's level cap; -1: none */
static atomic_llong g_inline_elems = FAST_INLINE_ELEMS; /* the default config's small-call bound */

void fast_set_threads(int n) { atomic_store(&g_threads, n > 0 ? n : 0); }

void fast_set_inline_elems(int64_t n) {
  atomic_store(&g_inline_elems, n >= 0 ? (long long)n : FAST_INLINE_ELEMS);
}

/* The online CPUs, at most FAST_MAX_THREADS (1 when unknown). */
static int online_cpus(void) {
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c > 0 ? (int)(c < FAST_MAX_THREADS ? c : FAST_MAX_THREADS) : 1;
}

int fast_threads(void) {
  int n = atomic_load(&g_threads);
  if (n <= 0) n = online_cpus();
  return n < FAST_MAX_THREADS ? n : FAST_MAX_THREADS;
}

void fast_set_level(int max) {
  atomic_store(&g_level_cap, max >= FAST_LEVEL_SCALAR && max < FAST_LEVELS ? max : -1);
}

#if FAST_HAVE_AMX && !defined(HOT_FAST_VNNI_EMU)
/* AMX-INT8 can be used: CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), the OS saves the
 * tile state (OSXSAVE, XCR0 bits 17 and 18), and Linux grants this process the tile data
 * (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA: process-wide, refused for instance when a thread
 * has a signal stack too small for the tile state; the level is then not offered). */
static int amx_usable(void) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1u) || !(d >> 25 & 1u)) return 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1u)) return 0;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo >> 17 & 3u) != 3u) return 0;
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
}
#endif

/* 1 when this CPU can run `level` (level in [0, FAST_LEVELS)): asked of the CPU each time. */
static int cpu_has(int level) {
  if (level == FAST_LEVEL_SCALAR) return 1;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const int avx2 = __builtin_cpu_supports("avx2");
#ifdef HOT_FAST_VNNI_EMU /* a test build: the VNNI and AMX GEMM kernels in portable C */
  return avx2;
#else
  if (level == FAST_LEVEL_AVX2) return avx2;
#if FAST_HAVE_AVXVNNI
  if (level == FAST_LEVEL_AVXVNNI) { /* CPUID leaf 7 subleaf 1, EAX bit 4 (not every compiler's
                                        __builtin_cpu_supports knows "avxvnni") */
    unsigned a = 0, b = 0, c = 0, d = 0;
    return avx2 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1u);
  }
#endif
  if (level == FAST_LEVEL_AVX512)
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
#if FAST_HAVE_AMX
  if (level == FAST_LEVEL_AMX) return avx2 && amx_usable();
#endif
#endif
#endif
  return 0;
}

int fast_cpu_avx512(void) {
  static atomic_int has = -1;
  int h = atomic_load(&has);
  if (h < 0) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    h = __builtin_cpu_supports("avx512f") != 0;
#else
    h = 0;
#endif
    atomic_store(&has, h);
  }
  return h;
}

_Static_assert(FAST_LEVEL_AMX == FAST_LEVELS - 1, "fast_level_has keeps AMX apart as the last level");

int fast_level_has(int level) {
  /* the levels this CPU has, one bit each, found once: fast_level_now runs at every stage, and
   * CPUID traps to the hypervisor on virtual machines */
  static atomic_int mask = -1;
  /* AMX apart, and only when asked: its check asks Linux for the tile data (amx_usable), which a
   * process capped below it (HOT_CPU_ISA, fast_set_level) never needs to do */
  static atomic_int amx = -1;
  if (level == FAST_LEVEL_AMX) {
    int a = atomic_load(&amx);
    if (a < 0) {
      a = cpu_has(FAST_LEVEL_AMX) != 0;
      atomic_store(&amx, a);
    }
    return a;
  }
  int m = atomic_load(&mask);
  if (m < 0) {
    m = 0;
    for (int l = 0; l < FAST_LEVEL_AMX; ++l) m |= (cpu_has(l) != 0) << l;
    atomic_store(&mask, m);
  }
  return level >= 0 && level < FAST_LEVELS && (m >> level & 1);
}

/* The highest level at most `cap` that this CPU has (scalar always is). */
static fast_level best_up_to(int cap) {
  int l = cap < FAST_LEVELS ? cap : FAST_LEVELS - 1;
  while (l > FAST_LEVEL_SCALAR && !fast_level_has(l)) --l;
  return (fast_level)l;
}

fast_level fast_level_cpu(void) { return best_up_to(FAST_LEVELS - 1); }

fast_level fast_level_now(void) {
  const int cap = atomic_load(&g_level_cap);
  return best_up_to(cap < 0 ? FAST_LEVELS - 1 : cap);
}

int fast_level_by_name(const char *s) {
  static const char *const short_names[FAST_LEVELS] = {"scalar", "avx2", "avxvnni", "avx512", "amx"};
  for (int l = 0; s && l < FAST_LEVELS; ++l)
    if (!strcmp(s, short_names[l]) || !strcmp(s, fast_level_name(l))) return l;
  return -1;
}

const char *fast_level_name(int level) {
  switch (level) {
  case FAST_LEVEL_SCALAR: return "scalar";
  case FAST_LEVEL_AVX2: return "avx2";
  case FAST_LEVEL_AVXVNNI: return "avx-vnni";
  case FAST_LEVEL_AVX512: return "avx512-vnni";
  case FAST_LEVEL_AMX: return "amx-int8";
  default: return "unknown level";
  }
}

/* ---- the kernel tables ------------------------------------------------------------------------- */

/* The rows of the levels' files, one per level above scalar. */
extern const fast_level_row fast_row_avx2, fast_row_avxvnni, fast_row_avx512, fast_row_amx;
static const fast_level_row *const k_rows[] = {&fast_row_avx2, &fast_row_avxvnni, &fast_row_avx512,
                                               &fast_row_amx};

static fast_kernels g_tables[FAST_LEVELS];
static pthread_once_t g_tables_once = PTHREAD_ONCE_INIT;

/* The per-element kernels of `level`: the highest at or below it; those of the 512-bit levels
 * only where the CPU runs AVX-512F (the emulated GEMM levels of HOT_FAST_VNNI_EMU run anywhere). */
static const fast_elem_kernels *elem_row(const fast_level_row *const *rows, int level) {
  for (int l = level; l > FAST_LEVEL_SCALAR; --l)
    if (rows[l] && rows[l]->e && (l < FAST_LEVEL_AVX512 || fast_cpu_avx512())) return rows[l]->e;
  return &fast_elem_scalar;
}

static fast_gemm_setup_fn gemm_row(const fast_level_row *const *rows, int level) {
  for (int l = level; l > FAST_LEVEL_SCALAR; --l)
    if (rows[l] && rows[l]->gemm) return rows[l]->gemm;
  return fast_gemm_setup_scalar;
}

static void tables_build(void) {
  int fma = 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  fma = __builtin_cpu_supports("fma") != 0;
#endif
  const fast_level_row *rows[FAST_LEVELS] = {NULL};
  for (size_t i = 0; i < sizeof k_rows / sizeof k_rows[0]; ++i)
    if (k_rows[i]->level > FAST_LEVEL_SCALAR && k_rows[i]->level < FAST_LEVELS)
      rows[k_rows[i]->level] = k_rows[i];
  for (int l = 0; l < FAST_LEVELS; ++l) {
    fast_kernels *k = &g_tables[l];
    k->level = (fast_level)l;
    k->e = elem_row(rows, l);
    k->gemm = gemm_row(rows, l);
    k->f64_avx2 = l >= FAST_LEVEL_AVX2; /* every level above scalar includes AVX2 (fast.h) */
    k->f64_fma = k->f64_avx2 && fma;
    k->avx512 = l >= FAST_LEVEL_AVX512 && fast_cpu_avx512();
  }
}

void fast_config_init(fast_config *c, int threads, int cap) {
  pthread_once(&g_tables_once, tables_build);
  c->threads = threads > 0 ? (threads < FAST_MAX_THREADS ? threads : FAST_MAX_THREADS) : online_cpus();
  c->inline_elems = FAST_INLINE_ELEMS;
  c->level = best_up_to(cap >= FAST_LEVEL_SCALAR && cap < FAST_LEVELS ? cap : FAST_LEVELS - 1);
  c->k = &g_tables[c->level];
}

void fast_config_default(fast_config *c) {
  fast_config_init(c, atomic_load(&g_threads), atomic_load(&g_level_cap));
  c->inline_elems = (int64_t)atomic_load(&g_inline_elems);
}

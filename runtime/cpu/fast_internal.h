/* fast_internal.h — what the files of runtime/cpu/ share: the thread pool, the integer GEMM
 * driver and the per-element kernels (transforms, quantizers) of the fast CPU path. Not an API:
 * fast.h is. */
#ifndef HOT_FAST_INTERNAL_H
#define HOT_FAST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "fast.h"
#include "nvfp4_ref.h"

/* Whether this compiler can emit AVX-VNNI (the VEX-encoded 256-bit vpdpbusd): GCC 11 and clang 12
 * on. Without it the avx-vnni level is never offered (fast_level_has). */
#if (defined(__x86_64__) || defined(__i386__)) &&                                                   \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11))
#define FAST_HAVE_AVXVNNI 1
#else
#define FAST_HAVE_AVXVNNI 0
#endif

/* Whether this build can emit and use AMX-INT8 (tile instructions; GCC 11 and clang 12 on, and
 * Linux, whose permission the level needs: fast_pool.c). */
#if FAST_HAVE_AVXVNNI && defined(__linux__) && defined(__x86_64__)
#define FAST_HAVE_AMX 1
#else
#define FAST_HAVE_AMX 0
#endif

/* 1 when the CPU itself runs AVX-512F (asked once): the per-element kernels' 512-bit forms run
 * at the avx512-vnni and amx-int8 levels only where it does, so that the test build that
 * emulates the GEMM levels (HOT_FAST_VNNI_EMU) never runs them on a CPU without it (the level's
 * table then takes the AVX2 forms, fast_level.c). */
int fast_cpu_avx512(void);

/* The entry points' NULL config: `cf` (a const fast_config * parameter) then points to the
 * process default (fast_config_default), held in a local of the calling function. */
#define FAST_CONFIG_OR_DEFAULT(cf)                                                                 \
  fast_config cf##_default_;                                                                      \
  if (!(cf)) {                                                                                    \
    fast_config_default(&cf##_default_);                                                          \
    (cf) = &cf##_default_;                                                                        \
  }

/* ---- the floating-point environment ---------------------------------------------------------- */

/* Every operation of the fast path runs in one floating-point environment, the C default: round
 * to nearest even, no flush of subnormal results to zero (FTZ), no subnormal inputs read as
 * zero (DAZ), exceptions masked; the twins' results are defined in it (CONTRACT.md). A caller
 * may have set another (torch.set_flush_denormal(True) sets FTZ and DAZ in MXCSR): the entry
 * points of fast.h and every thread that runs tasks (pool workers, an OpenMP runtime's, the
 * caller inline) enter the default with fast_fpenv_enter and give the thread its own back with
 * fast_fpenv_leave (the exception flags raised meanwhile are dropped). */
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
typedef struct {
  unsigned csr;
} fast_fpenv;
static inline fast_fpenv fast_fpenv_enter(void) {
  fast_fpenv e = {_mm_getcsr()};
  if (e.csr != 0x1F80u) _mm_setcsr(0x1F80u); /* the power-on default: nearest, masked, no FTZ/DAZ */
  return e;
}
static inline void fast_fpenv_leave(fast_fpenv e) {
  if (_mm_getcsr() != e.csr) _mm_setcsr(e.csr);
}
#else
#include <fenv.h>
typedef struct {
  fenv_t env;
} fast_fpenv;
static inline fast_fpenv fast_fpenv_enter(void) {
  fast_fpenv e;
  fegetenv(&e.env);
  fesetenv(FE_DFL_ENV);
  return e;
}
static inline void fast_fpenv_leave(fast_fpenv e) { fesetenv(&e.env); }
#endif

/* ---- thread pool (fast_pool.c) ------------------------------------------------------------ */

/* One task of a parallel region: index i in [0, n), run by thread tid in [0, threads). */
typedef void (*fast_task_fn)(void *ctx, int64_t i, int tid);

/* Runs fn(ctx, i, tid) for every i in [0, n) on up to `threads` threads (the caller is tid 0)
 * and returns when all are done (threads <= 0 counts as 1: callers pass their config's). Tasks must not fail: they
 * record errors in ctx. A call from another thread waits for the running region; a call from
 * inside a task runs all its tasks on the calling thread with tid 0 (the fast path never nests
 * regions). */
void fast_parallel(int64_t n, int threads, fast_task_fn fn, void *ctx);

/* The AVX-512 mask (a __mmask16's bits) of the first min(n, 16) lanes; 0 when n <= 0. One
 * function for every tail of a 16-lane loop: a conditional of two masks is promoted to int and
 * narrowed again (-Wconversion). */
static inline unsigned short fast_lanes16(int64_t n) {
  if (n >= 16) return (unsigned short)0xFFFFu;
  if (n <= 0) return (unsigned short)0u;
  return (unsigned short)((1u << n) - 1u);
}

/* The threads for a call of config cf whose stages touch about `elems` values in all (a GEMM
 * counts its multiply-adds / 128): 1 below cf->inline_elems (a region's start and end, a few
 * microseconds with awake workers and tens when they sleep, would cost more than the second
 * thread saves), else cf->threads. */
static inline int fast_threads_for(const fast_config *cf, int64_t elems) {
  return elems < cf->inline_elems ? 1 : cf->threads;
}
/* *cf with the threads of fast_threads_for(cf, elems): what an entry point hands down. */
static inline fast_config fast_config_for(const fast_config *cf, int64_t elems) {
  fast_config c = *cf;
  c.threads = fast_threads_for(cf, elems);
  return c;
}

/* Ceil division and rounding up, for sizes. */
static inline int64_t fast_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t fast_round_up(int64_t a, int64_t b) { return fast_cdiv(a, b) * b; }

/* ---- scratch blocks (fast_pool.c) ------------------------------------------------------------ */

/* Like malloc(bytes) (NULL when out of memory), but may hand out a block that an earlier
 * fast_unscratch kept: large scratch buffers are reused from call to call instead of being
 * mapped, faulted in and unmapped every time. The block is aligned to 64 bytes. */
void *fast_scratch(size_t bytes);
/* Like free(p) for a block of fast_scratch (NULL is ignored): keeps up to FAST_SCRATCH_KEEP
 * blocks for later calls (fast_release_scratch frees them), the largest handed back: with every
 * slot taken, p replaces the smallest kept block if it is larger, else it is freed. By size, not
 * by recency: a miss costs the page faults of its bytes, and the layers of a training step cycle
 * through more blocks than are kept, where keeping the last ones handed back would fault in the
 * large ones every step (docs/cpu-backend.md). */
void fast_unscratch(void *p);
/* The blocks kept now and their usable bytes (either pointer may be NULL); for tests. */
void fast_scratch_kept(int *blocks, size_t *bytes);

/* ---- stage profile (fast_pool.c) ------------------------------------------------------------ */

/* Nonzero while fast_profile is on. */
extern int fast_prof_on;
/* A point in time: monotonic wall and process CPU seconds (zeros while the profile is off, so
 * that the calls cost nothing). */
typedef struct {
  double wall, cpu;
} fast_prof_t;
fast_prof_t fast_prof_now(void);
/* Adds the wall and CPU time since t0 to stage st (nothing while the profile is off, or for
 * st < 0); returns now. */
fast_prof_t fast_prof_add(int st, fast_prof_t t0);
/* The monotonic clock's seconds (0.0 while the profile is off): for spans inside one task,
 * where a thread's wall time is its CPU time but for preemption, and too short and too many for
 * the thread's CPU clock (a system call each, where the monotonic clock's read is not). */
double fast_prof_clock(void);
/* Adds s seconds of wall and of CPU time to stage st (nothing while the profile is off). */
void fast_prof_sum(int st, double s);

/* ---- integer GEMM (fast_gemm.c) ----------------------------------------------------------- */

/* C = A.B^T over K-segments: for segment j, acc[m][n] = sum over k < seg_k of
 * a_seg[j][m*a_sm + k*a_sk] * b_seg[j][n*b_sn + k*b_sk], int32 modulo 2^32 (exact in any order).
 * After each segment's int32 tile is ready, epi is called with the tile (rows m0.., cols n0..,
 * valid mc x nc, row stride ldc); tiles of one (m0, n0) come in segment order from the same
 * thread. |a| <= qa and |b| <= qb must hold (they pick the kernel: small codes use 8-bit
 * products with 16-bit partial sums; any int8 is exact on the 16-bit product kernels). */
typedef void (*fast_epi_fn)(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                            const int32_t *acc, int64_t ldc);
typedef struct {
  int64_t M, N, seg_k, segs;
  const int8_t *const *a_seg; /* segs base pointers */
  int64_t a_sm, a_sk;
  const int8_t *const *b_seg;
  int64_t b_sn, b_sk;
  int qa, qb;
  fast_epi_fn epi;
  void *ctx;
  int prof; /* profile stage of the packing (tiles: prof + 1, epilogue: prof + 2), or -1 */
} fast_igemm_op;

/* Runs op with cf's threads and its level's GEMM (cf->k->gemm; cf not NULL). Returns HOT_REF_OK or
 * HOT_REF_ENOMEM. */
int fast_igemm(const fast_config *cf, const fast_igemm_op *op);

/* The blocking and kernel of one GEMM (fast_gemm.h; opaque elsewhere), and the function of a
 * level that fills it for codes bounded by qa, qb. */
struct fast_gk_cfg;
typedef void (*fast_gemm_setup_fn)(struct fast_gk_cfg *g, int qa, int qb);
/* The scalar level's setup (fast_gemm.c): the portable kernel. */
void fast_gemm_setup_scalar(struct fast_gk_cfg *g, int qa, int qb);

/* ---- per-element kernels (fast_kern.c and the level files) ----------------------------------- */

typedef struct {
  uint64_t seed;
  uint32_t tag, step;
} fast_rng;

/* The per-element kernels of one level (fast_kern.c: scalar; fast_avx2.c, fast_avx512.c). Their
 * contracts:
 *  philox: words[i] = the Philox word of element idx0 + i, i < n (CONTRACT.md 6);
 *  quant: codes of n values v[0..n) under scale s (RTN when sr == 0, else SR with words[i]), as
 *    hot_quant_rtn / hot_quant_sr do;
 *  amax: amax over v[0..n) (max with *amax on entry) and whether all are finite (0 when one is
 *    not);
 *  fwht_row: a[0..n) = src[0..n) with every run of b consecutive entries (n a multiple of b)
 *    transformed by the length-b FWHT (hot_fwht's operations per element); src may be a;
 *  fwht_cols_src: the length-p FWHT down the p rows (stride ld) of a p x cols block, per column
 *    (ref_fwht_rows' operations per element), on rows first read from src[j] (cols values;
 *    NULL: a row of +0.0, as the twins' zero padding): row j of m gets the transform of the rows
 *    src[0..p); p is a power of two; m must not overlap the sources unless src[j] is row j;
 *  add: acc[i] = HOT_ADD(acc[i], v[i]) for i < n; returns 0 when a v[i] is not finite;
 *  scale_tile: the GEMM epilogues' step on a rows x n tile: out[m][i] (row stride ldo) =
 *    HOT_MUL(HOT_I2F(acc[m][i]), s_m), or HOT_ADD(out[m][i], that) when mode has FAST_EPI_ADD,
 *    acc with row stride ldc, s_m = row_f[m] (row_f not NULL) or f; stores to fresh rows of a
 *    final tile (mode 0) may stream past the caches, a tile that later calls add to
 *    (FAST_EPI_MORE: the segmented g_w GEMM's segments but the last) stays in the caches for
 *    them; the tile is fenced before return, so the caller may hand it over at once; returns 1 when
 *    every value written is finite, else 0 (the output's overflow check, taken while the values
 *    are in registers instead of in a pass of its own);
 *  transpose_bytes: dst[c * ld + r] = src[r * ls + c] for r < rows, c < cols;
 *  e4m3: codes[i] = nvfp4_e4m3_encode(v[i], mode, words ? words[i] : 0) for i < n (words read
 *    by NVFP4_ROUND_SR only);
 *  e2m1: codes[i] = nvfp4_e2m1_sr(u[i], words[i]) (sr) or nvfp4_e2m1_rtn(u[i]), one code a byte;
 *  nvfp4_rows, mxfp8_rows: nvfp4_quantize_rows / mxfp8_quantize_rows (templates/nvfp4_ref.h),
 *    the same arguments and bits (the scalar level: those functions themselves). */
/* scale_tile's mode bits: add to the tile instead of writing it; more calls add to this tile
 * later (so no store may bypass the caches). */
enum { FAST_EPI_ADD = 1, FAST_EPI_MORE = 2 };

typedef struct {
  void (*philox)(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words);
  void (*quant)(const float *v, int64_t n, float s, int qmax, int sr, const uint32_t *words,
                int8_t *out);
  int (*amax)(const float *v, int64_t n, float *amax);
  void (*fwht_row)(float *a, const float *src, int64_t n, int b);
  void (*fwht_cols_src)(float *m, int p, int64_t cols, int64_t ld, const float *const *src);
  int (*add)(float *acc, const float *v, int64_t n);
  int (*scale_tile)(float *out, int64_t ldo, const int32_t *acc, int64_t ldc, int64_t rows,
                    int64_t n, const float *row_f, float f, int mode);
  void (*transpose_bytes)(const int8_t *src, int64_t rows, int64_t cols, int64_t ls, int8_t *dst,
                          int64_t ld);
  void (*e4m3)(const float *v, int64_t n, nvfp4_round mode, const uint32_t *words, uint8_t *codes);
  void (*e2m1)(const float *u, int64_t n, int sr, const uint32_t *words, uint8_t *codes);
  void (*nvfp4_rows)(const float *v, int64_t r0, int64_t r1, int64_t k, float s_t, int sr,
                     const nvfp4_stream *st, uint8_t *codes, uint8_t *scales);
  void (*mxfp8_rows)(const float *v, int64_t r0, int64_t r1, int64_t k, int sr,
                     const nvfp4_stream *st, uint8_t *codes, uint8_t *scales);
} fast_elem_kernels;

/* The scalar level's per-element kernels (fast_kern.c). */
extern const fast_elem_kernels fast_elem_scalar;

/* What the file of a level (fast_avx2.c, fast_avxvnni.c, fast_avx512.c, fast_amx.c) gives the
 * level tables, as `const fast_level_row fast_row_<name>` (declared where fast_level.c lists the
 * rows): its per-element kernels and its GEMM setup, each NULL where the level runs those of the
 * level below it or where this build cannot run the level (fast_level_has never offers it). */
typedef struct {
  fast_level level;
  const fast_elem_kernels *e;
  fast_gemm_setup_fn gemm;
} fast_level_row;

/* ---- the kernel table of a level (fast_level.c) ---------------------------------------------- */

/* Everything that depends on the dispatch level, picked once per config (fast_config_init):
 * call sites run k->e->amax(...), k->gemm(...), never test the level. */
struct fast_kernels {
  fast_level level;
  const fast_elem_kernels *e;
  fast_gemm_setup_fn gemm;
  int f64_avx2; /* fast_exact.c: the AVX2 kernels */
  int f64_fma;  /* fast_exact.c: the fused kernel (with f64_avx2 and a CPU with FMA) */
  int avx512;   /* fast_nvfp4.c: its 512-bit GEMM tile and epilogue (the 512-bit levels on a CPU
                   with AVX-512F, as their per-element kernels) */
};

/* dst[0..n) = elements off.. of a dtype-tagged array, as fp32 (exact, as ref_load). */
void fast_load_run(const void *src, hot_dtype dt, int64_t off, int64_t n, float *dst);
/* A prefetch hint for elements off..off+n of a dtype-tagged array (fp32 or 16-bit): the passes
 * that walk a tensor a row chunk at a time, each row on a new page, ask for a later row while
 * they work on this one (the hardware prefetcher does not follow a page-sized stride). */
static inline void fast_prefetch_run(const void *src, hot_dtype dt, int64_t off, int64_t n) {
  const int64_t es = dt == HOT_DT_F32 ? 4 : 2;
  const char *p = (const char *)src + off * es;
  for (int64_t b = 0; b < n * es; b += 64) __builtin_prefetch(p + b);
}

#endif /* HOT_FAST_INTERNAL_H */

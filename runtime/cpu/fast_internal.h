/* fast_internal.h — what the files of runtime/cpu/ share: the thread pool, the integer GEMM
 * driver and the per-element kernels (transforms, quantizers) of the fast CPU path. Not an API:
 * fast.h is. */
#ifndef HOT_FAST_INTERNAL_H
#define HOT_FAST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "fast.h"

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
 * emulates the GEMM levels (HOT_FAST_VNNI_EMU) never runs them on a CPU without it. */
int fast_cpu_avx512(void);

/* ---- thread pool (fast_pool.c) ------------------------------------------------------------ */

/* One task of a parallel region: index i in [0, n), run by thread tid in [0, threads). */
typedef void (*fast_task_fn)(void *ctx, int64_t i, int tid);

/* Runs fn(ctx, i, tid) for every i in [0, n) on up to `threads` threads (the caller is tid 0)
 * and returns when all are done. threads <= 0 means fast_threads(). Tasks must not fail: they
 * record errors in ctx. A call from another thread waits for the running region; a call from
 * inside a task runs all its tasks on the calling thread with tid 0 (the fast path never nests
 * regions). */
void fast_parallel(int64_t n, int threads, fast_task_fn fn, void *ctx);

/* Regions run on more than one thread since the process started (a counter for benchmarks). */
unsigned long long fast_regions(void);

/* The threads for a call whose stages touch about `elems` values in all (a GEMM counts its
 * multiply-adds / 128): 1 below fast_inline_elems() (a region's start and end, a few
 * microseconds with awake workers and tens when they sleep, would cost more than the second
 * thread saves), else fast_threads(). */
int fast_threads_for(int64_t elems);
/* The bound of fast_threads_for: n >= 0 sets it (0: every call may use the pool, which the
 * tests set so that small layers run on all their thread counts), n < 0 returns to the default
 * FAST_INLINE_ELEMS. */
void fast_set_inline_elems(int64_t n);
#define FAST_INLINE_ELEMS ((int64_t)1 << 17)

/* Ceil division and rounding up, for sizes. */
static inline int64_t fast_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t fast_round_up(int64_t a, int64_t b) { return fast_cdiv(a, b) * b; }

/* ---- scratch blocks (fast_pool.c) ------------------------------------------------------------ */

/* Like malloc(bytes) (NULL when out of memory), but may hand out a block that an earlier
 * fast_unscratch kept: large scratch buffers are reused from call to call instead of being
 * mapped, faulted in and unmapped every time. The block is aligned to 64 bytes. */
void *fast_scratch(size_t bytes);
/* Like free(p) for a block of fast_scratch (NULL is ignored): keeps up to a few large blocks
 * for later calls (fast_release_scratch frees them). */
void fast_unscratch(void *p);

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
/* The calling thread's CPU seconds (0.0 while the profile is off). */
double fast_prof_thread_cpu(void);
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

/* Runs op at the current level with the pool. Returns HOT_REF_OK or HOT_REF_ENOMEM. */
int fast_igemm(const fast_igemm_op *op);

/* ---- per-element kernels (fast_kern.c) ---------------------------------------------------- */

typedef struct {
  uint64_t seed;
  uint32_t tag, step;
} fast_rng;

/* Fills words[i] = the Philox word of element idx0 + i, i < n (CONTRACT.md 6). */
void fast_philox_words(const fast_rng *r, uint64_t idx0, int64_t n, uint32_t *words, int level);

/* Codes of n values v[0..n) under scale s (RTN when sr == 0, else SR with words[i]), as
 * hot_quant_rtn / hot_quant_sr do. */
void fast_quant_run(const float *v, int64_t n, float s, int qmax, int sr, const uint32_t *words,
                    int8_t *out, int level);

/* amax over v[0..n) and whether all are finite (returns 0 when one is not). */
int fast_amax_run(const float *v, int64_t n, float *amax, int level);

/* a[0..n) = src[0..n) with every run of b consecutive entries (n a multiple of b) transformed
 * by the length-b FWHT (hot_fwht's operations per element); src may be a (in place). */
void fast_fwht_row(float *a, const float *src, int64_t n, int b, int level);

/* The length-p FWHT down the p rows (stride ld) of a p x cols block, per column (ref_fwht_rows'
 * operations per element), on rows first read from src[j] (cols values; NULL: a row of +0.0, as
 * the twins' zero padding): row j of m gets the transform of the rows src[0..p); p is a power
 * of two. m must not overlap the sources unless src[j] is row j (in place). */
void fast_fwht_cols_src(float *m, int p, int64_t cols, int64_t ld, const float *const *src,
                        int level);

/* acc[i] = HOT_ADD(acc[i], v[i]) for i < n; returns 0 when a v[i] is not finite. */
int fast_add_run(float *acc, const float *v, int64_t n, int level);

/* The GEMM epilogues' per-element steps on a rows x n tile: out[m][i] (row stride ldo) =
 * HOT_MUL(HOT_I2F(acc[m][i]), s_m) (add == 0) or HOT_ADD(out[m][i], that) (add != 0), acc with
 * row stride ldc, s_m = row_f[m] (row_f not NULL) or f. Stores to fresh rows may stream past the
 * caches; the tile is fenced before return, so the caller may hand it over at once. Returns 1
 * when every value written is finite, else 0 (the output's overflow check, taken while the values
 * are in registers instead of in a pass of its own). */
int fast_scale_tile(float *out, int64_t ldo, const int32_t *acc, int64_t ldc, int64_t rows,
                    int64_t n, const float *row_f, float f, int add, int level);

/* dst[c * ld + r] = src[r * ls + c] for r < rows, c < cols (a transpose of bytes). */
void fast_transpose_bytes(const int8_t *src, int64_t rows, int64_t cols, int64_t ls, int8_t *dst,
                          int64_t ld, int level);

/* dst[0..n) = elements off.. of a dtype-tagged array, as fp32 (exact, as ref_load). */
void fast_load_run(const void *src, hot_dtype dt, int64_t off, int64_t n, float *dst);

#endif /* HOT_FAST_INTERNAL_H */

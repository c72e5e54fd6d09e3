/* fast.h — the fast CPU path of hot: the whole-layer operations of templates/ref.h
 * (ref_layer_save / _backward / _calibrate) and the fp64 exact products of exact_ref.c, with
 * the same signatures and the same results bit for bit, computed by threads (a pool sized by
 * fast_set_threads, HOT_CPU_THREADS or the online CPUs) with SIMD kernels picked at run time
 * (scalar, AVX2, AVX-512 VNNI; the build needs no -march flag).
 *
 * Why the bits do not change (docs/cpu-backend.md): the integer GEMMs sum int32 modulo 2^32,
 * exact in any order; every fp32/fp64 element keeps the operation sequence of its twin
 * (CONTRACT.md 2, 6, 13, 14): transforms are vectorised across independent columns or run the
 * same butterfly per element, the Philox stream is counter based, and the canonical fp64 sums
 * are cut into the contract's 1024-term chunks, summed chunk by chunk and then in chunk order.
 *
 * Conventions are those of ref.h: the plan is checked with ref_plan_check, inputs are only
 * read, outputs are written into the caller's buffers, scratch memory is malloc'ed and given
 * back before returning (the large blocks to a small process-wide cache that the next call
 * reuses, see fast_release_scratch), the status codes are HOT_REF_*; the functions never print or exit. They may
 * be called from several threads at once (the pool runs one parallel region at a time; a call
 * made from inside a worker runs single-threaded).
 */
#ifndef HOT_FAST_H
#define HOT_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "kernel_desc.h"
#include "ref.h"

/* ---- settings ----------------------------------------------------------------------------- */

/* Dispatch levels of the SIMD kernels, lowest first. Every level above scalar includes AVX2; a
 * CPU may have AVX-512 VNNI without AVX-VNNI, so "has level l" does not imply "has every level
 * below l" (fast_level_has). */
typedef enum {
  FAST_LEVEL_NONE = -1,   /* no cap (fast_set_level); also makes the enum's type int everywhere */
  FAST_LEVEL_SCALAR = 0,  /* portable C */
  FAST_LEVEL_AVX2 = 1,    /* AVX2: vpmaddubsw / vpmaddwd GEMMs, 8-wide transforms and quantizers */
  FAST_LEVEL_AVXVNNI = 2, /* AVX-VNNI: 256-bit vpdpbusd GEMMs (the rest as AVX2) */
  FAST_LEVEL_AVX512 = 3,  /* AVX-512F/BW + VNNI: 512-bit vpdpbusd GEMMs, Philox, quantizer and
                             column FWHT (the rest as AVX2) */
  FAST_LEVEL_AMX = 4      /* AMX-INT8 (Linux, with the kernel's permission): tdpbssd GEMMs on
                             16 x 16 int32 tiles (the rest as avx512-vnni) */
} fast_level;
#define FAST_LEVELS 5

/* The most threads a parallel region runs on (HOT_CPU_THREADS above it is not a thread count). */
#define FAST_MAX_THREADS 256

/* The kernels of one dispatch level (fast_internal.h): one table per level, picked once. */
typedef struct fast_kernels fast_kernels;

/* What a call of the fast path runs with, fixed when it is built (fast_config_init): the thread
 * count of its parallel regions, the bound below which a call runs on the caller alone, the
 * dispatch level and that level's kernel table. Nothing of
 * it is read from the environment: HOT_CPU_THREADS and HOT_CPU_ISA are parsed once, by
 * runtime/env.c (env_read_cpu), which hot_ctx_create and the tools call, and their values are
 * handed to fast_config_init. A plain struct the caller owns; copying it is fine. */
typedef struct {
  int threads;           /* 1 .. FAST_MAX_THREADS */
  int64_t inline_elems;  /* calls on fewer values (a GEMM: multiply-adds / 128) run on the
                            caller with no parallel region; FAST_INLINE_ELEMS by default, 0: every
                            call may use the threads (a caller may set it after init) */
  fast_level level;      /* the level the kernels run at */
  const fast_kernels *k; /* that level's kernel table (static: never freed) */
} fast_config;

/* The default small-call bound of a config (2^17 values, 2^24 multiply-adds of a GEMM): below it
 * a region's start and end (a few microseconds with awake workers, tens when they sleep) would
 * cost more than a second thread saves. */
#define FAST_INLINE_ELEMS ((int64_t)1 << 17)

/* Builds *c: `threads` > 0 threads (at most FAST_MAX_THREADS), else the online CPUs (at most
 * FAST_MAX_THREADS); the highest level at most `cap` (FAST_LEVEL_*, or -1 for no cap) that the
 * CPU has, with its kernel table; inline_elems = FAST_INLINE_ELEMS. Asks the CPU (and, for the amx-int8 level, Linux: only when
 * cap allows it) once per process; never reads the environment. */
void fast_config_init(fast_config *c, int threads, int cap);

/* The process default that the fast path's functions use when given a NULL config: built by
 * fast_config_init from fast_set_threads (else the online CPUs) and fast_set_level (else no cap);
 * the environment plays no part (a program that wants HOT_CPU_THREADS / HOT_CPU_ISA parses them
 * with env_read_cpu and builds its own config, as hot_ctx_create does). */
void fast_config_default(fast_config *c);

/* The thread count of the default config: n > 0 sets it, n <= 0 returns to the online CPUs (at
 * most 256). Process-wide; meant for tests and benchmarks. */
void fast_set_threads(int n);
/* The default config's thread count (>= 1). */
int fast_threads(void);
/* The default config's small-call bound (fast_config.inline_elems): n >= 0 sets it (0: every
 * call may use the pool, which the tests set so that small layers run on all their thread
 * counts), n < 0 returns to FAST_INLINE_ELEMS. Process-wide; meant for tests and benchmarks. */
void fast_set_inline_elems(int64_t n);

/* Above this many bytes of an HLA projection (hla.k x cols fp32) the fast path does not store
 * it: with the absmax rule it transforms twice, once for the row amax and again into the codes
 * (the same bits either way). */
#define FAST_HLA_FUSE_BYTES ((long long)4 << 20)
/* n >= 0 sets that bound (0: every projection fused), n < 0 returns to FAST_HLA_FUSE_BYTES.
 * Process-wide; meant for tests and benchmarks. */
void fast_set_hla_fuse_bytes(int64_t n);

/* Runs the parallel regions on the workers of an OpenMP runtime that is already loaded in the
 * process, instead of the fast path's own pool: `runtime` is the runtime's library as dlopen names
 * it ("libgomp.so.1", "libomp.so", "libiomp5.so"), NULL to return to the own pool. The runtime is
 * entered through GOMP_parallel (the GNU OpenMP entry point, which LLVM's and Intel's runtimes
 * also export) and omp_get_thread_num, and is kept loaded while in use. Why: in a process whose
 * other work is OpenMP (PyTorch's CPU operators), that runtime's workers stay awake for a while
 * after each of its regions; the fast path's own threads would then share the CPUs with them,
 * while the runtime's workers start its regions at once. The results are the same bits either
 * way (tasks are independent; nothing depends on which thread runs one). 0 on success; -1 when
 * the runtime is not loaded in this process or lacks one of the two functions; -2 when called
 * from inside a task of a parallel region; -3 when the name is empty or longer than 63 bytes (the
 * setting is then unchanged). Process-wide; waits for a region in progress. */
int fast_use_openmp(const char *runtime);
/* Copies the name given to fast_use_openmp that is in use into buf (cap bytes, truncated to fit;
 * nothing is written when buf is NULL or cap 0) and returns 1, or writes "" and returns 0 when the
 * own pool is in use. Safe anywhere, also inside a task. */
int fast_openmp(char *buf, size_t cap);
/* While attached: a region one of whose team members entered more than late_ns after its start
 * (a member descheduled: other processes use the CPUs) is late; a late region within window_ns
 * of the previous late one sends the regions of the next backoff_ns to the own pool, after which
 * the runtime is tried again (defaults 500 us, 100 ms and 1 s, fast_pool.c). Sets the three,
 * ends a back-off in progress and forgets the last late region; meant for tests (a late_ns above
 * any region's length turns the fall-back off, 0 makes every region of more than one thread late;
 * a window of 0 never falls back on lateness that is not simultaneous). */
void fast_openmp_fallback(int64_t late_ns, int64_t window_ns, int64_t backoff_ns);
/* Back-offs to the own pool since the process started (a counter for tests and benchmarks). */
unsigned long long fast_openmp_fallbacks(void);

/* Caps the default config's dispatch level: `max` in FAST_LEVEL_*, or -1 for no cap (the
 * default). Process-wide; meant for tests and benchmarks. */
void fast_set_level(int max);
/* The default config's level: the highest level at most the cap that the CPU supports. */
fast_level fast_level_now(void);
/* The highest level this CPU supports. */
fast_level fast_level_cpu(void);
/* 1 when this CPU (and this build's compiler) can run `level`, else 0 (also for a level out of
 * range). */
int fast_level_has(int level);
/* Static name of a level ("scalar", "avx2", "avx-vnni", "avx512-vnni", "amx-int8"; "unknown
 * level"). */
/* The level a HOT_CPU_ISA value names: "scalar", "avx2", "avxvnni", "avx512", "amx", or a name of
 * fast_level_name; -1 for NULL or any other string. */
int fast_level_by_name(const char *s);
const char *fast_level_name(int level);

/* Parallel regions run on more than one thread since the process started, by any config (a
 * counter for benchmarks and tests; a call that runs on the caller alone adds none). */
unsigned long long fast_regions(void);

/* Frees the scratch blocks the fast path keeps between calls (its large temporary buffers are
 * reused from one call to the next; at most FAST_SCRATCH_KEEP blocks, the largest handed back:
 * with every slot taken a block handed back replaces the smallest kept one if it is larger, else
 * is freed; fast_internal.h). Safe at any time; later calls allocate again. */
void fast_release_scratch(void);
#define FAST_SCRATCH_KEEP 12

/* ---- stage timing (benchmarks only) -------------------------------------------------------- */

/* Stages of fast_layer_backward whose wall time the profile adds up (fast_profile_read's
 * order). GEMM "pack" is the packing of both operands into panels, "tiles" the microkernels
 * and the epilogue; "epilogue" is the CPU time of the epilogue within "tiles", summed over the
 * threads (its wall and CPU entries are both that sum). */
#define FAST_STAGES(S)                                                                            \
  S(FAST_ST_HQ_G, "hq g' load+FWHT (+g_b sums)")                                               \
  S(FAST_ST_HQ_GQ, "hq g' amax+quant(SR,Philox)")                                               \
  S(FAST_ST_HQ_W, "hq w' load+FWHT")                                                            \
  S(FAST_ST_HQ_WQ, "hq w' amax+quant")                                                          \
  S(FAST_ST_GX_PACK, "gemm g_x pack")                                                           \
  S(FAST_ST_GX_TILES, "gemm g_x tiles")                                                         \
  S(FAST_ST_GX_EPI, "  of which epilogue (CPU)")                                              \
  S(FAST_ST_HLA_X, "hla x^ codes (no ABC)")                                                     \
  S(FAST_ST_HLA_G, "hla g^ load+FWHT")                                                          \
  S(FAST_ST_HLA_GQ, "hla g^ amax+quant(SR,Philox)")                                             \
  S(FAST_ST_GW_PACK, "gemm g_w pack")                                                           \
  S(FAST_ST_GW_TILES, "gemm g_w tiles")                                                         \
  S(FAST_ST_GW_EPI, "  of which epilogue (CPU)")                                              \
  S(FAST_ST_BIAS, "g_b (sums here without HQ)")                                                \
  S(FAST_ST_TOTAL, "whole backward")
#define FAST_ST_ENUM_(c, name) c,
typedef enum { FAST_STAGES(FAST_ST_ENUM_) FAST_ST_COUNT } fast_stage;
#undef FAST_ST_ENUM_

/* Switches the stage profile on (on != 0; the sums are reset) or off. While on, every
 * fast_layer_backward adds its stages' wall and process CPU times (seconds) to process-wide sums
 * (the epilogue rows add thread CPU seconds to both). The sums are not synchronised: profile one
 * backward at a time. */
void fast_profile(int on);
/* Copies the sums of the stages 0 .. n-1 (n <= FAST_ST_COUNT) into wall[] and cpu[] (either may
 * be NULL). */
void fast_profile_read(double *wall, double *cpu, int n);
/* Static name of a stage, or "unknown stage". */
const char *fast_stage_name(int stage);

/* ---- whole layer: the same contract as hot_ref_layer_* (ref.h) ------------------------------ */

/* Every function below takes the config it runs with first: its threads and its level's
 * kernels (NULL: fast_config_default). */

/* A layer's calls prepared once: the steps of save, backward and calibrate from the planner's
 * step table (kd_steps), each with the index of the family function that runs it for this plan
 * (-1: its role is not planned). fast_layer_prepare fills *out (no allocation; the plan must
 * outlive it) and returns 0, or HOT_REF_EARG for a NULL argument or a step table longer than
 * FAST_MAX_STEPS. The fast_prepared_* calls then ask the planner nothing: the CPU backend
 * prepares each layer when it is created. The fast_layer_* calls prepare on the stack per call. */
#define FAST_MAX_STEPS 64
#define FAST_CALLS 3 /* HOT_CALL_SAVE, HOT_CALL_BACKWARD, HOT_CALL_CALIBRATE */
typedef struct fast_prepared {
  const hot_layer_plan *pl;
  int n[FAST_CALLS];
  hot_step st[FAST_CALLS][FAST_MAX_STEPS];
  signed char fam[FAST_CALLS][FAST_MAX_STEPS];
} fast_prepared;
int fast_layer_prepare(const hot_layer_plan *pl, fast_prepared *out);

/* fast_layer_save, fast_layer_backward_check and fast_layer_calibrate on a prepared layer (p
 * NULL: HOT_REF_EARG, with the outputs as those calls leave them on a bad argument). */
int fast_prepared_save(const fast_config *cf, const fast_prepared *p, const void *x, hot_dtype dt,
                       hot_ref_saved *out);
/* fast_prepared_save writing the x^ codes of an INT plan with ABC (not recipe nvfp4) straight
 * into codes (caller-owned, plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES) = I * hla.k bytes, the
 * saved layout) instead of a malloc'd out->q_x, which stays NULL; out->s_x (owned by out, release
 * with ref_saved_free) holds the scales. Any other plan (codes unused, may be NULL): as
 * fast_prepared_save. On an error nothing is written to codes (the
 * codes are stored last, once every check has passed). Errors: as fast_prepared_save. */
int fast_prepared_save_into(const fast_config *cf, const fast_prepared *p, const void *x,
                            hot_dtype dt, int8_t *codes, hot_ref_saved *out);
int fast_prepared_backward_check(const fast_config *cf, const fast_prepared *p,
                                 const hot_ref_saved *saved, const void *g_y, const void *w,
                                 hot_dtype dt, hot_gran gran, uint64_t seed, uint32_t step,
                                 float *g_x, float *g_w, float *g_b, unsigned *overflow);
int fast_prepared_calibrate(const fast_config *cf, const fast_prepared *p, const void *g_y,
                            hot_dtype dt, uint64_t seed, uint32_t step, hot_ref_lqs_result *out);

/* As ref_layer_save: the saved buffer (q_x^ and s_x^ with ABC, else an fp32 copy of x)
 * with the same bytes; release it with ref_saved_free. */
int fast_layer_save(const fast_config *cf, const hot_layer_plan *pl, const void *x, hot_dtype dt, hot_ref_saved *out);

/* As ref_layer_backward: g_x[T*I], g_w[O*I] and g_b[O], each when not NULL, bit for bit. */
int fast_layer_backward(const fast_config *cf, const hot_layer_plan *pl, const hot_ref_saved *saved, const void *g_y,
                        const void *w, hot_dtype dt, hot_gran gran, uint64_t seed, uint32_t step,
                        float *g_x, float *g_w, float *g_b);

/* fast_layer_backward, and on success *overflow (when not NULL; 0 on failure) = which outputs
 * hold a value that is not finite, FAST_OVERFLOW_* bits: with finite inputs (the only ones the
 * backward accepts) that is an fp32 overflow of the transforms or scales. Taken in the GEMM
 * epilogues, where each value is in a register anyway (the g_b vector in one short loop), so a
 * caller needs no pass of its own over g_x and g_w. */
#define FAST_OVERFLOW_GX 1u
#define FAST_OVERFLOW_GW 2u
#define FAST_OVERFLOW_GB 4u
int fast_layer_backward_check(const fast_config *cf, const hot_layer_plan *pl,
                              const hot_ref_saved *saved, const void *g_y, const void *w,
                              hot_dtype dt, hot_gran gran, uint64_t seed, uint32_t step,
                              float *g_x, float *g_w, float *g_b, unsigned *overflow);

/* As ref_layer_calibrate (ref_lqs): the same errors and choice, bit for bit. */
int fast_layer_calibrate(const fast_config *cf, const hot_layer_plan *pl, const void *g_y, hot_dtype dt, uint64_t seed,
                         uint32_t step, hot_ref_lqs_result *out);

/* ---- fp64 exact products: the same contract and bits as exact_ref.c ----------------------- */

int fast_exact_gx(const fast_config *cf, int64_t T, int64_t O, int64_t I, const float *g_y, const float *w, double *g_x);
int fast_exact_gw(const fast_config *cf, int64_t T, int64_t O, int64_t I, const float *g_y, const float *x, double *g_w);
int fast_hq_gx_f64(const fast_config *cf, const hot_layer_plan *pl, const float *g_y, const float *w, double *g_x);
int fast_hla_gw_f64(const fast_config *cf, const hot_layer_plan *pl, const float *g_y, const float *x, double *g_w);

#endif /* HOT_FAST_H */

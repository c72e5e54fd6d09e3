/* fast_gemm.h — what the integer GEMM's driver (fast_gemm.c) and the level files that hold its
 * kernels (fast_avx2.c, fast_avxvnni.c, fast_avx512.c, fast_amx.c) share: the blocking and kernel
 * of one GEMM (gk_cfg), which a level's setup fills (fast_gemm_setup_fn), its kernel kinds and
 * tile shape, and the vector steps that the VNNI kernels spell in portable C in the test build
 * HOT_FAST_VNNI_EMU. Not an API: fast_internal.h declares fast_igemm. */
#ifndef HOT_FAST_GEMM_H
#define HOT_FAST_GEMM_H

#include "fast_kern.h"

enum { K_W16 = 0, K_U8 = 1, K_VNNI = 2, K_VNNI256 = 3, K_AMX = 4 };
#define NR 16
#define MC 64  /* rows of an output tile: a multiple of every MR (4, 16) */
#define NCP 8 /* B panels (of NR columns) of an output tile: 128 columns, whose B panels (K x 128
                  codes) stay in a 512 KB L2 for K up to 4096 (u8) or 2048 (w16) */

struct fast_gk_cfg;
/* The row stride of the int32 tile that the kernels write (tile_task's scratch: NCP panels of NR
 * columns): a constant of every kernel, so its addressing folds into the instructions (a stride
 * passed through the kernel pointer would be a register of every store). */
#define GK_LDC ((int64_t)NCP * NR)

/* One MR x 16 tile over steps [0, ns) of packed panels; c (row stride GK_LDC) is overwritten
 * (accum == 0) or added to (accum != 0), then, when corr is not NULL, corr[n] is subtracted from
 * column n (the offset correction, after a tile's last K block); all modulo 2^32. */
typedef void (*gk_kern_fn)(const struct fast_gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                           int32_t *c, int accum, const uint32_t *corr);

typedef struct fast_gk_cfg {
  int kind, simd, mr, kstep, off, chunk; /* chunk: u8 steps between widenings */
  int64_t kc;                           /* packed steps of one K block */
  int64_t ksteps, npa, npb;
  size_t apb, bpb; /* bytes of one packed A panel, B panel */
  gk_kern_fn kern; /* the microkernel (every kind but K_AMX) */
  /* the SIMD packing (NULL: the portable loops): whole panels over k in [0, kend), returning
   * kend (fast_avx2.c); four panels of 16 rows at once from contiguous rows; a u8 panel's row
   * sums */
  int64_t (*pack_whole)(const struct fast_gk_cfg *g, const int8_t *src, int64_t sr, int64_t sk,
                        int64_t seg_k, int width, int off, unsigned char *dst);
  void (*pack4)(const int8_t *src, int64_t sk, int64_t seg_k, int64_t ksteps, size_t bpb, int off,
                unsigned char *dst);
  void (*panel_sums)(const unsigned char *p, int64_t ksteps, uint32_t *sums);
  /* K_AMX (fast_amx.c): the 32 x 32 tile kernel over nb blocks of 64 k of two A and two B
   * panels, the tile state's start and end around a task's tiles, an A panel from rows along k,
   * and an A panel of the VNNI layout turned into tiles in place */
  void (*tiles)(const unsigned char *a0, const unsigned char *a1, int64_t a_ld, int64_t a_step,
                const unsigned char *b0, const unsigned char *b1, int64_t nb, int32_t *c, int accum);
  void (*tiles_begin)(void);
  void (*tiles_end)(void);
  void (*a_rows)(const int8_t *src, int64_t sr, int64_t rows, int64_t seg_k, int64_t nblocks,
                 unsigned char *dst);
  void (*a_tiles)(unsigned char *p, int64_t nblocks);
} gk_cfg;

static inline int32_t ld32(const void *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Four rows, two accumulators each, spelled out so that they stay in registers (with six, GCC
 * spills the accumulators). */
#define ROWS4(X) X(0) X(1) X(2) X(3)

/* Test and benchmark switch: 1 packs every AMX A panel (no A tile read in place). */
extern int fast_amx_pack_all;

#if FAST_X86
/* The AVX2 packing (fast_avx2.c) into g's pointers: every SIMD kind packs with it. */
void fast_gemm_pack_avx2(gk_cfg *g);
#endif

/* The VNNI kernels' vector steps, vn_* on 16 int32 lanes (AVX-512) and va_* on 8 (AVX-VNNI).
 * HOT_FAST_VNNI_EMU (a test build, tests/fast) spells them in portable C, following the
 * instruction's definition (vpdpbusd: per lane, the accumulator plus the four products of unsigned
 * bytes of the second operand and signed bytes of the third, no saturation, modulo 2^32), so that
 * the kernels, their packing and their offset correction run and are checked on CPUs without
 * AVX-512 or AVX-VNNI; otherwise they are the intrinsics. */
#ifdef HOT_FAST_VNNI_EMU
#define EMU_VEC(T, N, P)                                                                            \
  typedef struct {                                                                                  \
    uint32_t w[N];                                                                                  \
  } T;                                                                                              \
  static inline T P##_load(const void *p) {                                                         \
    T v;                                                                                            \
    memcpy(v.w, p, sizeof v.w);                                                                     \
    return v;                                                                                       \
  }                                                                                                 \
  static inline void P##_store(void *p, T v) { memcpy(p, v.w, sizeof v.w); }                       \
  static inline T P##_set1(int32_t x) {                                                             \
    T v;                                                                                            \
    for (int i = 0; i < N; ++i) v.w[i] = (uint32_t)x;                                               \
    return v;                                                                                       \
  }                                                                                                 \
  static inline T P##_zero(void) { return P##_set1(0); }                                            \
  static inline T P##_dpbusd(T c, T u, T s) {                                                       \
    for (int i = 0; i < N; ++i)                                                                     \
      for (int j = 0; j < 4; ++j)                                                                   \
        c.w[i] += (uint32_t)((int32_t)(uint8_t)(u.w[i] >> (8 * j)) *                                \
                             (int8_t)(uint8_t)(s.w[i] >> (8 * j)));                                 \
    return c;                                                                                       \
  }                                                                                                 \
  static inline T P##_sub(T a, T b) {                                                               \
    for (int i = 0; i < N; ++i) a.w[i] -= b.w[i];                                                   \
    return a;                                                                                       \
  }
#endif

#endif /* HOT_FAST_GEMM_H */

/* fast_gemm.c — the integer GEMM of the fast CPU path: C = A.B^T of int8 codes with int32 sums
 * modulo 2^32 (CONTRACT.md 13), so any blocking, order, thread split or SIMD kernel gives the
 * bits of the twin (gemm_ref.c). Both operands are packed into panels first (rows of A in
 * panels of MR, rows of B in panels of 16), then every thread computes whole output tiles and
 * hands each to the caller's epilogue.
 *
 * Kernels (picked by the level's setup, fast_gemm_by_level, and the code bounds qa, qb):
 *  - scalar: 16-bit packed pairs, uint32 sums (portable; what every level falls back to);
 *  - AVX2 "w16": vpmaddwd on sign-extended 16-bit pairs: exact for any int8 codes;
 *  - AVX2 "u8": vpmaddubsw on (a + qa) as u8 times b as s8, 16-bit partial sums widened by
 *    vpmaddwd every S steps, then minus qa * sum_k b per column: used when 4 * qa * qb * S fits
 *    16 bits for S >= 16 (4-bit codes: S = 167), so neither the pair sums nor the 16-bit partial
 *    sums saturate; the correction is exact modulo 2^32;
 *  - AVX-VNNI ("vnni256"): vpdpbusd on 256-bit vectors, MR 4, on the u8 kernel's panels with
 *    a + 128 as u8 times b as s8 into int32, minus 128 * sum_k b: exact modulo 2^32 for any int8
 *    codes, and one instruction per 32 products where u8 needs two and w16 four;
 *  - AVX-512 VNNI: the same on 512-bit vectors, MR 16;
 *  - AMX-INT8: tdpbssd (signed bytes times signed bytes into int32, modulo 2^32: no offset) on
 *    2 x 2 tiles of 16 x 16 int32; B panels as the VNNI kernels' (steps of 4 k: a 64-k block of
 *    a panel is one 16 x 64-byte B tile), A panels with each 64-k block stored row by row (one
 *    A tile); K padded with zeros to a multiple of 64. */
#include <stdlib.h>
#include <string.h>

#include "fast_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FAST_X86 1
#define AVX2_FN __attribute__((target("avx2")))
#define AVX512_FN __attribute__((target("avx2,avx512f,avx512bw,avx512vnni")))
#define AVXVNNI_FN __attribute__((target("avx2,avxvnni")))
#define AMX_FN __attribute__((target("amx-tile,amx-int8")))
#else
#define FAST_X86 0
#endif

enum { K_W16 = 0, K_U8 = 1, K_VNNI = 2, K_VNNI256 = 3, K_AMX = 4 };
#define NR 16
#define MC 64  /* rows of an output tile: a multiple of every MR (4, 16) */
#define NCP 8 /* B panels (of NR columns) of an output tile: 128 columns, whose B panels (K x 128
                  codes) stay in a 512 KB L2 for K up to 4096 (u8) or 2048 (w16) */

typedef struct fast_gk_cfg {
  int kind, simd, mr, kstep, off, chunk; /* chunk: u8 steps between widenings */
  int64_t kc;                           /* packed steps of one K block */
  int64_t ksteps, npa, npb;
  size_t apb, bpb; /* bytes of one packed A panel, B panel */
} gk_cfg;

/* ---- kernels: one MR x 16 tile over steps [0, ns) of packed panels; c (row stride ldc) is
 * overwritten (acc == 0) or added to (acc != 0), then, when corr is not NULL, corr[n] is
 * subtracted from column n (the offset correction, after a tile's last K block); all modulo
 * 2^32 ------------------------------------------------------------------------------------------ */

static void kern_scalar(const gk_cfg *g, const void *ap, const void *bp, int64_t ns, int32_t *c,
                        int64_t ldc, int accum, const uint32_t *corr) {
  const int16_t *a = ap, *b = bp;
  const int mr = g->mr;
  uint32_t acc[16][NR];
  for (int m = 0; m < mr; ++m)
    for (int n = 0; n < NR; ++n) {
      acc[m][n] = 0;
      if (accum) memcpy(&acc[m][n], &c[m * ldc + n], sizeof(int32_t));
    }
  for (int64_t s = 0; s < ns; ++s) {
    const int16_t *as = a + s * mr * 2, *bs = b + s * NR * 2;
    for (int m = 0; m < mr; ++m)
      for (int n = 0; n < NR; ++n)
        acc[m][n] += (uint32_t)((int32_t)as[2 * m] * bs[2 * n]) +
                     (uint32_t)((int32_t)as[2 * m + 1] * bs[2 * n + 1]);
  }
  for (int m = 0; m < mr; ++m)
    for (int n = 0; n < NR; ++n) {
      if (corr) acc[m][n] -= corr[n];
      memcpy(&c[m * ldc + n], &acc[m][n], sizeof(int32_t));
    }
}

#if FAST_X86
static inline int32_t ld32(const void *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Four rows, two accumulators each, spelled out so that they stay in registers (with six, GCC
 * spills the accumulators). */
#define ROWS4(X) X(0) X(1) X(2) X(3)

AVX2_FN static void kern_w16_avx2(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                                  int32_t *c, int64_t ldc, int accum, const uint32_t *corr) {
  (void)g, (void)corr; /* no offset: corr is always NULL */
  const int16_t *a = ap, *b = bp;
#define W16_INIT(m)                                                                                 \
  __m256i c##m##0 = accum ? _mm256_loadu_si256((const __m256i *)(c + m * ldc)) : _mm256_setzero_si256(); \
  __m256i c##m##1 = accum ? _mm256_loadu_si256((const __m256i *)(c + m * ldc + 8)) : _mm256_setzero_si256();
  ROWS4(W16_INIT)
  for (int64_t s = 0; s < ns; ++s) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + s * 32));
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + s * 32 + 16));
    const int16_t *as = a + s * 8;
#define W16_STEP(m)                                                                                 \
  {                                                                                                 \
    const __m256i av = _mm256_set1_epi32(ld32(as + 2 * m));                                         \
    c##m##0 = _mm256_add_epi32(c##m##0, _mm256_madd_epi16(av, b0));                                 \
    c##m##1 = _mm256_add_epi32(c##m##1, _mm256_madd_epi16(av, b1));                                 \
  }
    ROWS4(W16_STEP)
  }
#define W16_STORE(m)                                                                                \
  _mm256_storeu_si256((__m256i *)(c + m * ldc), c##m##0);                                           \
  _mm256_storeu_si256((__m256i *)(c + m * ldc + 8), c##m##1);
  ROWS4(W16_STORE)
}

/* *h += p in 16-bit lanes, written into h's own register. With the plain intrinsic GCC 12 put
 * each sum in the product's register and copied it back, eight vector moves per step of the u8
 * kernel that cost about a tenth of its speed (its inner loop is bound by how many instructions
 * the core takes in per cycle, not by the multiplies). The operands are in both dialects. */
AVX2_FN static inline void add16_in_place(__m256i *h, __m256i p) {
  __asm__("vpaddw {%1, %0, %0|%0, %0, %1}" : "+x"(*h) : "x"(p));
}

AVX2_FN static void kern_u8_avx2(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                                 int32_t *c, int64_t ldc, int accum, const uint32_t *corr) {
  const uint8_t *a = ap;
  const int8_t *b = bp;
  const __m256i ones = _mm256_set1_epi16(1);
  if (!accum)
    for (int m = 0; m < 4; ++m) memset(c + m * ldc, 0, NR * sizeof *c);
  for (int64_t s0 = 0; s0 < ns; s0 += g->chunk) {
    const int64_t s1 = s0 + g->chunk < ns ? s0 + g->chunk : ns;
#define U8_INIT(m) __m256i h##m##0 = _mm256_setzero_si256(), h##m##1 = _mm256_setzero_si256();
    ROWS4(U8_INIT)
    for (int64_t s = s0; s < s1; ++s) {
      const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + s * 64));
      const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + s * 64 + 32));
      const uint8_t *as = a + s * 16;
#define U8_STEP(m)                                                                                  \
  {                                                                                                 \
    const __m256i av = _mm256_set1_epi32(ld32(as + 4 * m));                                         \
    add16_in_place(&h##m##0, _mm256_maddubs_epi16(av, b0));                                         \
    add16_in_place(&h##m##1, _mm256_maddubs_epi16(av, b1));                                         \
  }
      ROWS4(U8_STEP)
    }
#define U8_WIDEN(m)                                                                                 \
  {                                                                                                 \
    __m256i *p0 = (__m256i *)(c + m * ldc), *p1 = (__m256i *)(c + m * ldc + 8);                     \
    _mm256_storeu_si256(p0, _mm256_add_epi32(_mm256_loadu_si256(p0), _mm256_madd_epi16(h##m##0, ones))); \
    _mm256_storeu_si256(p1, _mm256_add_epi32(_mm256_loadu_si256(p1), _mm256_madd_epi16(h##m##1, ones))); \
  }
    ROWS4(U8_WIDEN)
  }
  if (corr) {
    const __m256i k0 = _mm256_loadu_si256((const __m256i *)corr);
    const __m256i k1 = _mm256_loadu_si256((const __m256i *)(corr + 8));
    for (int m = 0; m < 4; ++m) {
      __m256i *p0 = (__m256i *)(c + m * ldc), *p1 = (__m256i *)(c + m * ldc + 8);
      _mm256_storeu_si256(p0, _mm256_sub_epi32(_mm256_loadu_si256(p0), k0));
      _mm256_storeu_si256(p1, _mm256_sub_epi32(_mm256_loadu_si256(p1), k1));
    }
  }
}

#define ROWS16(X)                                                                                   \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

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
EMU_VEC(vn_vec, 16, vn)
EMU_VEC(va_vec, 8, va)
#define VNNI_FN
#define VNNI256_FN
#define HAVE_VNNI256 1
#else
typedef __m512i vn_vec;
#define vn_load(p) _mm512_loadu_si512((const void *)(p))
#define vn_store(p, v) _mm512_storeu_si512((void *)(p), (v))
#define vn_zero() _mm512_setzero_si512()
#define vn_set1(x) _mm512_set1_epi32(x)
#define vn_dpbusd(c, u, s) _mm512_dpbusd_epi32((c), (u), (s))
#define vn_sub(a, b) _mm512_sub_epi32((a), (b))
#define VNNI_FN AVX512_FN
#define HAVE_VNNI256 FAST_HAVE_AVXVNNI
#if FAST_HAVE_AVXVNNI
typedef __m256i va_vec;
#define va_load(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define va_store(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define va_zero() _mm256_setzero_si256()
#define va_set1(x) _mm256_set1_epi32(x)
#define va_dpbusd(c, u, s) _mm256_dpbusd_avx_epi32((c), (u), (s))
#define va_sub(a, b) _mm256_sub_epi32((a), (b))
#define VNNI256_FN AVXVNNI_FN
#endif
#endif

#if HAVE_VNNI256
/* AVX-VNNI: four rows x 16 columns (two vectors), the u8 kernel's panels (steps of 4 k). */
VNNI256_FN static void kern_vnni256(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                                    int32_t *c, int64_t ldc, int accum, const uint32_t *corr) {
  (void)g;
  const uint8_t *a = ap;
  const int8_t *b = bp;
#define VA_INIT(m)                                                                                  \
  va_vec c##m##0 = accum ? va_load(c + m * ldc) : va_zero();                                        \
  va_vec c##m##1 = accum ? va_load(c + m * ldc + 8) : va_zero();
  ROWS4(VA_INIT)
  for (int64_t s = 0; s < ns; ++s) {
    const va_vec b0 = va_load(b + s * 64), b1 = va_load(b + s * 64 + 32);
    const uint8_t *as = a + s * 16;
#define VA_STEP(m)                                                                                  \
  {                                                                                                 \
    const va_vec av = va_set1(ld32(as + 4 * m));                                                    \
    c##m##0 = va_dpbusd(c##m##0, av, b0);                                                           \
    c##m##1 = va_dpbusd(c##m##1, av, b1);                                                           \
  }
    ROWS4(VA_STEP)
  }
  if (corr) {
    const va_vec k0 = va_load(corr), k1 = va_load(corr + 8);
#define VA_CORR(m) c##m##0 = va_sub(c##m##0, k0), c##m##1 = va_sub(c##m##1, k1);
    ROWS4(VA_CORR)
  }
#define VA_STORE(m) va_store(c + m * ldc, c##m##0), va_store(c + m * ldc + 8, c##m##1);
  ROWS4(VA_STORE)
}
#endif

VNNI_FN static void kern_vnni(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                              int32_t *c, int64_t ldc, int accum, const uint32_t *corr) {
  (void)g;
  const uint8_t *a = ap;
  const int8_t *b = bp;
#define VN_INIT(m) vn_vec v##m = accum ? vn_load(c + m * ldc) : vn_zero();
  ROWS16(VN_INIT)
  for (int64_t s = 0; s < ns; ++s) {
    const vn_vec bv = vn_load(b + s * 64);
    const uint8_t *as = a + s * 64;
#define VN_STEP(m) v##m = vn_dpbusd(v##m, vn_set1(ld32(as + 4 * m)), bv);
    ROWS16(VN_STEP)
  }
  if (corr) {
    const vn_vec k = vn_load(corr);
#define VN_CORR(m) v##m = vn_sub(v##m, k);
    ROWS16(VN_CORR)
  }
#define VN_STORE(m) vn_store(c + m * ldc, v##m);
  ROWS16(VN_STORE)
}
#endif

/* ---- AMX-INT8 -------------------------------------------------------------------------------- */

/* Tiles: 0-3 the 2 x 2 int32 accumulators (C[i][j] in tile 2i + j), 4-5 two A tiles, 6-7 two B
 * tiles, each 16 rows of 64 bytes. HOT_FAST_VNNI_EMU spells the tile steps in portable C after
 * the instructions' definitions (tdpbssd: C[m][n] plus, for each of the 16 dwords k4 of A's row
 * m, the four products of A's signed bytes 4k4..4k4+3 and B's signed bytes 4n..4n+3 of row k4, no
 * saturation, modulo 2^32), so that the kernel, its packing and the tile walk are checked on CPUs
 * without AMX. */
#if defined(HOT_FAST_VNNI_EMU)
#define HAVE_AMX 1
typedef struct {
  unsigned char b[16][64];
} emu_tile;
static void emu_tload(emu_tile *t, const void *p, int64_t stride) {
  for (int r = 0; r < 16; ++r) memcpy(t->b[r], (const unsigned char *)p + r * stride, 64);
}
static void emu_tstore(const emu_tile *t, void *p, int64_t stride) {
  for (int r = 0; r < 16; ++r) memcpy((unsigned char *)p + r * stride, t->b[r], 64);
}
static void emu_tdpbssd(emu_tile *c, const emu_tile *a, const emu_tile *b) {
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      uint32_t acc;
      memcpy(&acc, &c->b[m][4 * n], 4);
      for (int k4 = 0; k4 < 16; ++k4)
        for (int j = 0; j < 4; ++j)
          acc += (uint32_t)((int32_t)(int8_t)a->b[m][4 * k4 + j] * (int8_t)b->b[k4][4 * n + j]);
      memcpy(&c->b[m][4 * n], &acc, 4);
    }
}
#define AMX_KERNEL_FN
#define AMX_TILES emu_tile T_[8]
#define TILE_LOAD(t, p, s) emu_tload(&T_[t], (p), (s))
#define TILE_STORE(t, p, s) emu_tstore(&T_[t], (p), (s))
#define TILE_ZERO(t) memset(&T_[t], 0, sizeof T_[t])
#define TILE_DP(c, a, b) emu_tdpbssd(&T_[c], &T_[a], &T_[b])
static void amx_begin(void) {}
static void amx_end(void) {}
#elif FAST_HAVE_AMX
#define HAVE_AMX 1
#define AMX_KERNEL_FN AMX_FN
#define AMX_TILES (void)0
#define TILE_LOAD(t, p, s) _tile_loadd(t, (p), (s))
#define TILE_STORE(t, p, s) _tile_stored(t, (p), (s))
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_DP(c, a, b) _tile_dpbssd(c, a, b)
/* The tile configuration (palette 1, 8 tiles of 16 rows x 64 bytes): loaded by each task that
 * runs the kernel, released at its end, so that no tile state outlives a task on any thread. A
 * constant in memory: GCC 12 dropped the stores of a local one as dead (it does not see that
 * ldtilecfg reads all 64 bytes), and the load faulted on a configuration of zero tiles. */
static const struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} k_amx_cfg __attribute__((aligned(64))) = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64},
                                             {16, 16, 16, 16, 16, 16, 16, 16}};
AMX_FN static void amx_begin(void) { _tile_loadconfig(&k_amx_cfg); }
AMX_FN static void amx_end(void) { _tile_release(); }
#else
#define HAVE_AMX 0
#endif

#if HAVE_AMX
/* C (32 x 32 int32 at c, row stride ldc) = or += A panels a0, a1 (16 rows each) times B panels
 * b0, b1 (16 columns each) over nb blocks of 64 k (1 KB per panel and block). */
AMX_KERNEL_FN static void kern_amx(const unsigned char *a0, const unsigned char *a1,
                                   const unsigned char *b0, const unsigned char *b1, int64_t nb,
                                   int32_t *c, int64_t ldc, int accum) {
  AMX_TILES;
  const int64_t cs = ldc * (int64_t)sizeof *c;
  if (accum) {
    TILE_LOAD(0, c, cs);
    TILE_LOAD(1, c + 16, cs);
    TILE_LOAD(2, c + 16 * ldc, cs);
    TILE_LOAD(3, c + 16 * ldc + 16, cs);
  } else {
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
  }
  for (int64_t j = 0; j < nb; ++j) {
    TILE_LOAD(4, a0 + j * 1024, 64);
    TILE_LOAD(6, b0 + j * 1024, 64);
    TILE_DP(0, 4, 6);
    TILE_LOAD(7, b1 + j * 1024, 64);
    TILE_DP(1, 4, 7);
    TILE_LOAD(5, a1 + j * 1024, 64);
    TILE_DP(2, 5, 6);
    TILE_DP(3, 5, 7);
  }
  TILE_STORE(0, c, cs);
  TILE_STORE(1, c + 16, cs);
  TILE_STORE(2, c + 16 * ldc, cs);
  TILE_STORE(3, c + 16 * ldc + 16, cs);
}
#endif

static void run_kernel(const gk_cfg *g, const void *ap, const void *bp, int64_t ns, int32_t *c,
                       int64_t ldc, int accum, const uint32_t *corr) {
#if FAST_X86
  if (g->simd) {
    if (g->kind == K_VNNI) kern_vnni(g, ap, bp, ns, c, ldc, accum, corr);
#if HAVE_VNNI256
    else if (g->kind == K_VNNI256) kern_vnni256(g, ap, bp, ns, c, ldc, accum, corr);
#endif
    else if (g->kind == K_U8) kern_u8_avx2(g, ap, bp, ns, c, ldc, accum, corr);
    else kern_w16_avx2(g, ap, bp, ns, c, ldc, accum, corr);
    return;
  }
#endif
  kern_scalar(g, ap, bp, ns, c, ldc, accum, corr);
}

/* ---- packing -------------------------------------------------------------------------------- */

typedef struct {
  const fast_igemm_op *op;
  const gk_cfg *g;
  unsigned char *pa, *pb;
  uint32_t *corr; /* segs x npb*16: off * sum_k b, or NULL */
  int32_t **scratch;
  double *epi_s; /* per thread: CPU seconds in the epilogue (profile), or NULL */
  int64_t tiles_m;
  int agroup, bgroup; /* A, B panels per packing task: 4 where the rows of A (columns of B) are
                         contiguous and the panels are 16 rows of 4-k steps (pack4_avx2) */
  int64_t nbt; /* packing tasks of B per segment */
} gctx;

#if FAST_X86
/* The AVX2 packing of whole panels (rows == width) over k in [0, kend), kend a multiple of the
 * block each case handles; returns kend (0 when no case fits: the scalar loop does it all).
 * Layouts as pack_panel's: u8 (kstep 4, byte v + off) or w16 (kstep 2, int16 v). */
AVX2_FN static int64_t pack_fast_avx2(const gk_cfg *g, const int8_t *src, int64_t sr, int64_t sk,
                                      int64_t seg_k, int width, int off, unsigned char *dst) {
  const int w16 = g->kind == K_W16;
  const __m128i vo = _mm_set1_epi8((char)off);
  if (sk == 1 && width % 4 == 0) { /* rows along k: 4 rows x 16 bytes of codes at a time */
    const int kb = w16 ? 8 : 16;     /* k of one block: 4 steps */
    const int64_t kend = seg_k / kb * kb;
    const int64_t sbytes = (int64_t)width * 4; /* bytes of one step */
    for (int r0 = 0; r0 < width; r0 += 4)
      for (int64_t k = 0; k < kend; k += kb) {
        __m128i v[4];
        for (int i = 0; i < 4; ++i) {
          const int8_t *p = src + (r0 + i) * sr + k;
          v[i] = w16 ? _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)p))
                     : _mm_add_epi8(_mm_loadu_si128((const __m128i *)p), vo);
        }
        /* a 4 x 4 transpose of 32-bit words: word s of row i goes to step s, slot i */
        const __m128i t0 = _mm_unpacklo_epi32(v[0], v[1]), t1 = _mm_unpacklo_epi32(v[2], v[3]);
        const __m128i t2 = _mm_unpackhi_epi32(v[0], v[1]), t3 = _mm_unpackhi_epi32(v[2], v[3]);
        unsigned char *d = dst + (k / (w16 ? 2 : 4)) * sbytes + r0 * 4;
        _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(t0, t1));
        _mm_storeu_si128((__m128i *)(d + sbytes), _mm_unpackhi_epi64(t0, t1));
        _mm_storeu_si128((__m128i *)(d + 2 * sbytes), _mm_unpacklo_epi64(t2, t3));
        _mm_storeu_si128((__m128i *)(d + 3 * sbytes), _mm_unpackhi_epi64(t2, t3));
      }
    return kend;
  }
  if (sr == 1 && width == 16 && !w16) { /* rows contiguous, u8: 16 rows x 4 k per step */
    const int64_t kend = seg_k / 4 * 4;
    for (int64_t k = 0; k < kend; k += 4) {
      const __m128i k0 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + k * sk)), vo);
      const __m128i k1 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + (k + 1) * sk)), vo);
      const __m128i k2 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + (k + 2) * sk)), vo);
      const __m128i k3 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(src + (k + 3) * sk)), vo);
      const __m128i a = _mm_unpacklo_epi8(k0, k1), b = _mm_unpackhi_epi8(k0, k1);
      const __m128i c = _mm_unpacklo_epi8(k2, k3), d = _mm_unpackhi_epi8(k2, k3);
      unsigned char *o = dst + k * 16;
      _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(b, d));
      _mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(b, d));
    }
    return kend;
  }
  if (sr == 1 && width % 4 == 0 && w16) { /* rows contiguous, w16: 4 rows x 2 k per step */
    const int64_t kend = seg_k / 2 * 2;
    for (int64_t k = 0; k < kend; k += 2)
      for (int r0 = 0; r0 < width; r0 += 4) {
        int32_t a, b;
        memcpy(&a, src + k * sk + r0, 4);
        memcpy(&b, src + (k + 1) * sk + r0, 4);
        const __m128i p = _mm_unpacklo_epi8(_mm_cvtsi32_si128(a), _mm_cvtsi32_si128(b));
        _mm_storeu_si128((__m128i *)(dst + (k / 2 * width + r0) * 4), _mm_cvtepi8_epi16(p));
      }
    return kend;
  }
  return 0;
}

/* Four whole panels of 16 rows (64 rows) of bytes at once from a source whose rows are
 * contiguous (sr == 1, k at stride sk), each byte v + off: per step of 4 k, each of the four
 * 64-byte source runs is read once and split into the panels' steps (the layout of
 * pack_fast_avx2's second case), so each source line is read whole instead of a quarter of it by
 * each of four panels at different times (rows thousands of bytes apart defeat the prefetcher).
 * The k tail and the fill to ksteps (the byte off, as pack_panel's) are written in plain C. */
AVX2_FN static void pack4_avx2(const int8_t *src, int64_t sk, int64_t seg_k, int64_t ksteps,
                               size_t bpb, int off, unsigned char *dst) {
  const __m128i vo = _mm_set1_epi8((char)off);
  const int64_t kend = seg_k / 4 * 4;
  for (int64_t k = 0; k < kend; k += 4)
    for (int q = 0; q < 4; ++q) {
      const int8_t *sq = src + q * 16 + k * sk;
      const __m128i k0 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)sq), vo);
      const __m128i k1 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(sq + sk)), vo);
      const __m128i k2 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(sq + 2 * sk)), vo);
      const __m128i k3 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(sq + 3 * sk)), vo);
      const __m128i a = _mm_unpacklo_epi8(k0, k1), b = _mm_unpackhi_epi8(k0, k1);
      const __m128i c = _mm_unpacklo_epi8(k2, k3), d = _mm_unpackhi_epi8(k2, k3);
      unsigned char *o = dst + (size_t)q * bpb + k * 16;
      _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(a, c));
      _mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(b, d));
      _mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(b, d));
    }
  for (int q = 0; q < 4; ++q) {
    unsigned char *d = dst + (size_t)q * bpb;
    memset(d + kend * 16, off, (size_t)((ksteps * 4 - kend) * 16));
    for (int64_t k = kend; k < seg_k; ++k)
      for (int n = 0; n < 16; ++n)
        d[(k >> 2) * 64 + n * 4 + (k & 3)] = (unsigned char)(src[k * sk + q * 16 + n] + off);
  }
}

/* sums[r] = sum over the steps of a packed u8 panel (off 0, 16 rows) of row r's codes. */
AVX2_FN static void panel_sums_avx2(const unsigned char *p, int64_t ksteps, uint32_t *sums) {
  const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  for (int64_t s = 0; s < ksteps; ++s) {
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + s * 64));
    const __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + s * 64 + 32));
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(one8, v0), one16));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(one8, v1), one16));
  }
  _mm256_storeu_si256((__m256i *)sums, s0);
  _mm256_storeu_si256((__m256i *)(sums + 8), s1);
}
#endif

/* Packs rows r0 .. r0+rows-1 (rows <= width of the panel) of a source with element (r, k) at
 * src[r*sr + k*sk] into a panel of `width` rows: step s holds, for each row, kstep consecutive k;
 * entries past the source (rows or k) are `fill`; values are stored as int16 (w16) or as the byte
 * v + off. Returns sum_k v per panel row in sums (when not NULL). Whole panels take the AVX2
 * transposes (with g->simd); the rest runs along whichever source axis is contiguous. */
static void pack_panel(const gk_cfg *g, const int8_t *src, int64_t sr, int64_t sk, int64_t rows,
                       int64_t seg_k, int width, int off, unsigned char *dst, uint32_t *sums) {
  const int ks = g->kstep;
  const int64_t n = g->ksteps * width * ks;
  const int w16 = g->kind == K_W16;
  int16_t *d16 = (int16_t *)(void *)dst;
  int64_t k0 = 0; /* k below k0 are packed by the AVX2 path */
#if FAST_X86
  if (g->simd && rows == width) k0 = pack_fast_avx2(g, src, sr, sk, seg_k, width, off, dst);
#endif
  if (k0 < g->ksteps * ks) { /* the fill of what the loops below do not write */
    const int64_t b0 = (k0 / ks) * width * ks;
    if (w16) memset(dst + 2 * b0, 0, (size_t)(n - b0) * 2);
    else memset(dst + b0, off, (size_t)(n - b0));
  }
  const int sh = ks == 4 ? 2 : 1; /* kstep is 2 or 4: shifts, not divisions */
#define AT(r, k) (((((k) >> sh) * width + (r)) << sh) + ((k) & (ks - 1)))
  if (sk == 1 || sr != 1) { /* along k, row by row */
    for (int64_t r = 0; r < rows; ++r) {
      const int8_t *row = src + r * sr;
      for (int64_t k = k0; k < seg_k; ++k) {
        const int v = row[k * sk];
        if (w16) d16[AT(r, k)] = (int16_t)v;
        else dst[AT(r, k)] = (unsigned char)(v + off);
      }
    }
  } else { /* rows contiguous (sr == 1): along the rows, k by k */
    for (int64_t k = k0; k < seg_k; ++k) {
      const int8_t *col = src + k * sk;
      for (int64_t r = 0; r < rows; ++r) {
        const int v = col[r];
        if (w16) d16[AT(r, k)] = (int16_t)v;
        else dst[AT(r, k)] = (unsigned char)(v + off);
      }
    }
  }
#undef AT
  if (!sums) return;
#if FAST_X86
  if (g->simd && !w16 && off == 0 && width == 16) {
    panel_sums_avx2(dst, g->ksteps, sums);
    return;
  }
#endif
  for (int r = 0; r < width; ++r) { /* the fill adds nothing: off is 0 when sums are asked */
    uint32_t sum = 0;
    for (int64_t k = 0; k < g->ksteps * ks; ++k) {
      const int64_t at = (((k >> sh) * width + r) << sh) + (k & (ks - 1));
      const int v = w16 ? d16[at] : (int8_t)dst[at];
      sum += (uint32_t)v;
    }
    sums[r] = sum;
  }
}

/* Rows that panel p of width w holds out of n: from 0 (a panel past the end, which the AMX
 * kernel's pairs of panels may need: all fill) to w. */
static int64_t panel_rows(int64_t n, int64_t p, int w) {
  const int64_t r = n - p * w;
  return r < 0 ? 0 : r < w ? r : w;
}

/* An AMX A panel (16 rows; each block of 64 k stored row by row, 1 KB, zero past the source) of
 * a source whose rows run along k (sk == 1): a copy of 64-byte runs. */
static void pack_a_rows_amx(const int8_t *src, int64_t sr, int64_t rows, int64_t seg_k,
                            int64_t nblocks, unsigned char *dst) {
  for (int64_t j = 0; j < nblocks; ++j)
    for (int64_t r = 0; r < 16; ++r) {
      unsigned char *d = dst + j * 1024 + r * 64;
      const int64_t k0 = j * 64, n = r < rows && seg_k > k0 ? (seg_k - k0 < 64 ? seg_k - k0 : 64) : 0;
      if (n == 64) { /* a copy of constant size, inlined (a library call per 64 bytes cost more than the copy) */
        memcpy(d, src + r * sr + k0, 64);
        continue;
      }
      if (n) memcpy(d, src + r * sr + k0, (size_t)n);
      memset(d + n, 0, (size_t)(64 - n));
    }
}

/* An AMX A panel from the VNNI layout, in place: each 1 KB block holds dword [step][row] (16 x
 * 16) and becomes dword [row][step], each row's 64 k contiguous. */
static void transpose_blocks_amx(unsigned char *p, int64_t nblocks) {
  for (int64_t j = 0; j < nblocks; ++j) {
    uint32_t *d = (uint32_t *)(void *)(p + j * 1024);
    for (int s = 1; s < 16; ++s)
      for (int r = 0; r < s; ++r) {
        const uint32_t t = d[s * 16 + r];
        d[s * 16 + r] = d[r * 16 + s];
        d[r * 16 + s] = t;
      }
  }
}

static void pack_a(const gctx *x, int64_t seg, int64_t p) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int64_t r0 = p * g->mr, rows = panel_rows(op->M, p, g->mr);
  const int8_t *src = op->a_seg[seg] + (rows ? r0 * op->a_sm : 0);
  unsigned char *dst = x->pa + (size_t)(seg * g->npa + p) * g->apb;
  if (g->kind == K_AMX && op->a_sk == 1) {
    pack_a_rows_amx(src, op->a_sm, rows, op->seg_k, g->ksteps / 16, dst);
    return;
  }
  pack_panel(g, src, op->a_sm, op->a_sk, rows, op->seg_k, g->mr, g->off, dst, NULL);
  if (g->kind == K_AMX) transpose_blocks_amx(dst, g->ksteps / 16);
}

static void pack_b(const gctx *x, int64_t seg, int64_t p) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int64_t rows = panel_rows(op->N, p, NR), r0 = rows ? p * NR : 0;
  uint32_t sum[NR];
  pack_panel(g, op->b_seg[seg] + r0 * op->b_sn, op->b_sn, op->b_sk, rows, op->seg_k, NR, 0,
             x->pb + (size_t)(seg * g->npb + p) * g->bpb, x->corr ? sum : NULL);
  if (x->corr)
    for (int n = 0; n < NR; ++n) x->corr[seg * g->npb * NR + p * NR + n] = (uint32_t)g->off * sum[n];
}

/* B panels p0 .. p0 + bgroup - 1 (those below npb): four whole ones at once by pack_b4_avx2,
 * else one by one. */
static void pack_b_group(const gctx *x, int64_t seg, int64_t p0) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  int64_t p1 = p0 + x->bgroup < g->npb ? p0 + x->bgroup : g->npb;
#if FAST_X86
  if (x->bgroup == 4 && p1 - p0 == 4 && (p0 + 4) * NR <= op->N) {
    unsigned char *dst = x->pb + (size_t)(seg * g->npb + p0) * g->bpb;
    pack4_avx2(op->b_seg[seg] + p0 * NR, op->b_sk, op->seg_k, g->ksteps, g->bpb, 0, dst);
    for (int64_t p = p0; x->corr && p < p1; ++p) {
      uint32_t sum[NR];
      panel_sums_avx2(x->pb + (size_t)(seg * g->npb + p) * g->bpb, g->ksteps, sum);
      for (int n = 0; n < NR; ++n) x->corr[seg * g->npb * NR + p * NR + n] = (uint32_t)g->off * sum[n];
    }
    return;
  }
#endif
  for (int64_t p = p0; p < p1; ++p) pack_b(x, seg, p);
}

/* A panels p0 .. p0 + agroup - 1 (those below npa), as pack_b_group (the AMX ones then turned
 * into tiles block by block). */
static void pack_a_group(const gctx *x, int64_t seg, int64_t p0) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  int64_t p1 = p0 + x->agroup < g->npa ? p0 + x->agroup : g->npa;
#if FAST_X86
  if (x->agroup == 4 && p1 - p0 == 4 && (p0 + 4) * 16 <= op->M) {
    unsigned char *dst = x->pa + (size_t)(seg * g->npa + p0) * g->apb;
    pack4_avx2(op->a_seg[seg] + p0 * 16, op->a_sk, op->seg_k, g->ksteps, g->apb, g->off, dst);
    for (int64_t p = 0; g->kind == K_AMX && p < 4; ++p)
      transpose_blocks_amx(dst + (size_t)p * g->apb, g->ksteps / 16);
    return;
  }
#endif
  for (int64_t p = p0; p < p1; ++p) pack_a(x, seg, p);
}

static void pack_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const gctx *x = ctx;
  const int64_t nat = fast_cdiv(x->g->npa, x->agroup);
  const int64_t per = nat + x->nbt, seg = i / per, j = i % per;
  if (j < nat) pack_a_group(x, seg, j * x->agroup);
  else pack_b_group(x, seg, (j - nat) * x->bgroup);
}

/* ---- tiles ---------------------------------------------------------------------------------- */

static void tile_task(void *ctx, int64_t i, int tid) {
  const gctx *x = ctx;
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int64_t tm = i % x->tiles_m, tn = i / x->tiles_m; /* down a column of tiles: same B */
  const int64_t m0 = tm * MC, n0 = tn * NCP * NR;
  const int64_t mc = op->M - m0 < MC ? op->M - m0 : MC;
  const int64_t nc = op->N - n0 < NCP * NR ? op->N - n0 : NCP * NR;
  const int64_t pa0 = m0 / g->mr, pa1 = fast_cdiv(m0 + mc, g->mr);
  const int64_t pb0 = n0 / NR, pb1 = fast_cdiv(n0 + nc, NR);
  const int64_t ldc = NCP * NR;
  int32_t *c = x->scratch[tid];
  const size_t esz = g->kind == K_W16 ? 2 : 1;
  const size_t astep = (size_t)(g->mr * g->kstep) * esz, bstep = (size_t)(NR * g->kstep) * esz;
  const int amx = g->kind == K_AMX, pstep = amx ? 2 : 1; /* AMX: pairs of panels */
#if HAVE_AMX
  if (amx) amx_begin();
#endif
  for (int64_t seg = 0; seg < op->segs; ++seg) {
    for (int64_t s0 = 0; s0 < g->ksteps; s0 += g->kc) { /* K blocks of g->kc steps */
      const int64_t ns = g->ksteps - s0 < g->kc ? g->ksteps - s0 : g->kc;
      const int last = s0 + ns >= g->ksteps;
      for (int64_t pb = pb0; pb < pb1; pb += pstep) {
        const unsigned char *bp = x->pb + (size_t)(seg * g->npb + pb) * g->bpb + (size_t)s0 * bstep;
        const uint32_t *cr = x->corr && last ? x->corr + (seg * g->npb + pb) * NR : NULL;
        for (int64_t pa = pa0; pa < pa1; pa += pstep) {
          const unsigned char *ap = x->pa + (size_t)(seg * g->npa + pa) * g->apb + (size_t)s0 * astep;
          int32_t *cp = c + (pa - pa0) * g->mr * ldc + (pb - pb0) * NR;
#if HAVE_AMX
          if (amx) {
            kern_amx(ap, ap + g->apb, bp, bp + g->bpb, ns / 16, cp, ldc, s0 > 0);
            continue;
          }
#endif
          run_kernel(g, ap, bp, ns, cp, ldc, s0 > 0, cr);
        }
      }
    }
    const double te = x->epi_s ? fast_prof_thread_cpu() : 0.0;
    op->epi(op->ctx, seg, m0, n0, mc, nc, c, ldc);
    if (x->epi_s) x->epi_s[tid] += fast_prof_thread_cpu() - te;
  }
#if HAVE_AMX
  if (amx) amx_end();
#endif
}

/* ---- the kernel of each level (fast_gemm_by_level): g's kind and panel shape ------------------- */

static void setup_scalar(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_W16, g->simd = 0, g->mr = 4, g->kstep = 2, g->off = 0;
}

#if FAST_X86
static void setup_avx2(gk_cfg *g, int qa, int qb) {
  const int64_t s_u8 = 32767 / (4 * (int64_t)qa * qb);
  if (s_u8 >= 16 && 2 * qa <= 255) {
    g->kind = K_U8, g->simd = 1, g->mr = 4, g->kstep = 4, g->off = qa;
    g->chunk = (int)(s_u8 < 1024 ? s_u8 : 1024);
  } else {
    g->kind = K_W16, g->simd = 1, g->mr = 4, g->kstep = 2, g->off = 0;
  }
}

static void setup_vnni512(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_VNNI, g->simd = 1, g->mr = 16, g->kstep = 4, g->off = 128;
}
#endif

#if HAVE_VNNI256
static void setup_vnni256(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_VNNI256, g->simd = 1, g->mr = 4, g->kstep = 4, g->off = 128;
}
#endif

#if HAVE_AMX
static void setup_amx(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_AMX, g->simd = 1, g->mr = 16, g->kstep = 4, g->off = 0;
}
#endif

/* A level this build cannot run stays NULL: fast_level_has never offers it (HAVE_VNNI256 and
 * HAVE_AMX follow FAST_HAVE_AVXVNNI and FAST_HAVE_AMX). */
const fast_gemm_setup_fn fast_gemm_by_level[FAST_LEVELS] = {
    [FAST_LEVEL_SCALAR] = setup_scalar,
#if FAST_X86
    [FAST_LEVEL_AVX2] = setup_avx2,
    [FAST_LEVEL_AVX512] = setup_vnni512,
#endif
#if HAVE_VNNI256
    [FAST_LEVEL_AVXVNNI] = setup_vnni256,
#endif
#if HAVE_AMX
    [FAST_LEVEL_AMX] = setup_amx,
#endif
};

/* The panels of one packing task: four where the rows of A (columns of B) are contiguous and
 * the panels are bytes of 4 k per step (every SIMD kind but w16; A panels of 16 rows). */
static void pack_groups(gctx *x) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int bytes4 = g->simd && g->kstep == 4;
  x->bgroup = bytes4 && op->b_sn == 1 && op->b_sk != 1 ? 4 : 1;
  x->agroup = bytes4 && g->mr == 16 && op->a_sm == 1 && op->a_sk != 1 ? 4 : 1;
  x->nbt = fast_cdiv(g->npb, x->bgroup);
}

int fast_igemm(const fast_config *cf, const fast_igemm_op *op) {
  gk_cfg g;
  memset(&g, 0, sizeof g);
  cf->k->gemm(&g, op->qa < 1 ? 1 : op->qa, op->qb < 1 ? 1 : op->qb);
  const size_t esz = g.kind == K_W16 ? 2 : 1;
  /* K blocks: the AVX2 kernels take 512 steps at a time (2048 k of u8, 1024 of w16), so a tile's
   * B panels (128 columns) stay within 256 KB, half the L2, and the kernel's calls (zeroing,
   * widening, storing its tile) come once per 512 steps; measured 1.03-1.18x faster than 64-step
   * blocks (docs/cpu-backend.md). The AMX kernel takes 512 too (32 of its 64-k tile blocks per
   * call, the tile accumulators stored once per call); the VNNI kernels keep 64 (512 made no
   * difference beyond the noise for the 512-bit one, GEMMs alone, alternated). */
  g.kc = g.kind == K_U8 || g.kind == K_W16 || g.kind == K_AMX ? 512 : 64;
  g.ksteps = fast_cdiv(op->seg_k, g.kstep);
  g.npa = fast_cdiv(op->M, g.mr);
  g.npb = fast_cdiv(op->N, NR);
  if (g.kind == K_AMX) { /* whole 64-k blocks, and pairs of panels */
    g.ksteps = fast_round_up(g.ksteps, 16);
    g.npa = fast_round_up(g.npa, 2);
    g.npb = fast_round_up(g.npb, 2);
  }
  g.apb = (size_t)(g.ksteps * g.mr * g.kstep) * esz;
  g.bpb = (size_t)(g.ksteps * NR * g.kstep) * esz;
  /* a small product runs on the caller alone (at the default bound, 2^24 multiply-adds: about
   * 16 us of AMX work, and as long as a small layer's other stages) */
  const int threads = fast_threads_for(cf, op->M * op->N * op->seg_k * op->segs / 128);
  gctx x;
  memset(&x, 0, sizeof x);
  x.op = op;
  x.g = &g;
  x.tiles_m = fast_cdiv(op->M, MC);
  int rc = HOT_REF_ENOMEM;
  x.pa = fast_scratch((size_t)(op->segs * g.npa) * g.apb + 64);
  x.pb = fast_scratch((size_t)(op->segs * g.npb) * g.bpb + 64);
  x.corr = g.off ? malloc((size_t)(op->segs * g.npb * NR) * sizeof *x.corr) : NULL;
  x.scratch = calloc((size_t)threads, sizeof *x.scratch);
  if (!x.pa || !x.pb || (g.off && !x.corr) || !x.scratch) goto done;
  for (int t = 0; t < threads; ++t)
    if (!(x.scratch[t] = malloc((size_t)(MC * NCP * NR) * sizeof(int32_t)))) goto done;
  if (fast_prof_on && op->prof >= 0) x.epi_s = calloc((size_t)threads, sizeof *x.epi_s);
  fast_prof_t t0 = fast_prof_now();
  pack_groups(&x);
  fast_parallel(op->segs * (fast_cdiv(g.npa, x.agroup) + x.nbt), threads, pack_task, &x);
  t0 = fast_prof_add(op->prof, t0);
  fast_parallel(x.tiles_m * fast_cdiv(op->N, NCP * NR), threads, tile_task, &x);
  fast_prof_add(op->prof + 1, t0);
  if (x.epi_s) {
    for (int t = 0; t < threads; ++t) fast_prof_sum(op->prof + 2, x.epi_s[t]);
    free(x.epi_s);
  }
  rc = HOT_REF_OK;
done:
  if (x.scratch)
    for (int t = 0; t < threads; ++t) free(x.scratch[t]);
  free(x.scratch);
  fast_unscratch(x.pa);
  fast_unscratch(x.pb);
  free(x.corr);
  return rc;
}

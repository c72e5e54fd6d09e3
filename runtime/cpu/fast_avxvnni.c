/* fast_avxvnni.c — the kernels of the avx-vnni level: the 256-bit vpdpbusd GEMM kernel (MR 4,
 * the u8 kernel's panels with a + 128 as u8, minus 128 * sum_k b); its per-element kernels are
 * the AVX2 ones (fast_level.c takes the row below), and its row of the level tables at the end. */
#include "fast_gemm.h"

#if defined(HOT_FAST_VNNI_EMU) /* a test build: the vector steps in portable C (fast_gemm.h) */
EMU_VEC(va_vec, 8, va)
#define VNNI256_FN
#define HAVE_VNNI256 1
#elif FAST_HAVE_AVXVNNI
#define AVXVNNI_FN __attribute__((target("avx2,avxvnni")))
typedef __m256i va_vec;
#define va_load(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define va_store(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define va_zero() _mm256_setzero_si256()
#define va_set1(x) _mm256_set1_epi32(x)
#define va_dpbusd(c, u, s) _mm256_dpbusd_avx_epi32((c), (u), (s))
#define va_sub(a, b) _mm256_sub_epi32((a), (b))
#define VNNI256_FN AVXVNNI_FN
#define HAVE_VNNI256 1
#else
#define HAVE_VNNI256 0
#endif

#if HAVE_VNNI256
/* AVX-VNNI: four rows x 16 columns (two vectors), the u8 kernel's panels (steps of 4 k). */
VNNI256_FN static void kern_vnni256(const gk_cfg *g, const void *ap, const void *bp, int64_t ns,
                                    int32_t *c, int accum, const uint32_t *corr) {
  const int64_t ldc = GK_LDC;
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

static void gemm_setup_vnni256(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_VNNI256, g->simd = 1, g->mr = 4, g->kstep = 4, g->off = 128, g->kern = kern_vnni256;
  fast_gemm_pack_avx2(g);
}
#endif

/* ---- the level's row (fast_level.c): NULL where this build cannot run it, which
 * fast_level_has then never offers ------------------------------------------------------------- */

extern const fast_level_row fast_row_avxvnni;
#if HAVE_VNNI256
const fast_level_row fast_row_avxvnni = {FAST_LEVEL_AVXVNNI, NULL, gemm_setup_vnni256};
#else
const fast_level_row fast_row_avxvnni = {FAST_LEVEL_AVXVNNI, NULL, NULL};
#endif

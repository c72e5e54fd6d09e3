/* fast_gemm.c — the integer GEMM of the fast CPU path: C = A.B^T of int8 codes with int32 sums
 * modulo 2^32 (CONTRACT.md 13), so any blocking, order, thread split or SIMD kernel gives the
 * bits of the twin (gemm_ref.c). Both operands are packed into panels first (rows of A in
 * panels of MR, rows of B in panels of 16), then every thread computes whole output tiles and
 * hands each to the caller's epilogue.
 *
 * Kernels (picked by fast_level_now() and the code bounds qa, qb):
 *  - scalar: 16-bit packed pairs, uint32 sums (portable; what every level falls back to);
 *  - AVX2 "w16": vpmaddwd on sign-extended 16-bit pairs: exact for any int8 codes;
 *  - AVX2 "u8": vpmaddubsw on (a + qa) as u8 times b as s8, 16-bit partial sums widened by
 *    vpmaddwd every S steps, then minus qa * sum_k b per column: used when 4 * qa * qb * S fits
 *    16 bits for S >= 16 (4-bit codes: S = 167), so neither the pair sums nor the 16-bit partial
 *    sums saturate; the correction is exact modulo 2^32;
 *  - AVX-512 VNNI: vpdpbusd on (a + 128) as u8 times b as s8 into int32, minus 128 * sum_k b:
 *    exact modulo 2^32 for any int8 codes. */
#include <stdlib.h>
#include <string.h>

#include "fast_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FAST_X86 1
#define AVX2_FN __attribute__((target("avx2")))
#define AVX512_FN __attribute__((target("avx2,avx512f,avx512bw,avx512vnni")))
#else
#define FAST_X86 0
#endif

enum { K_W16 = 0, K_U8 = 1, K_VNNI = 2 };
#define NR 16
#define MC 48  /* rows of an output tile: a multiple of every MR (6, 16) */
#define NCP 16 /* B panels (of NR columns) of an output tile */

typedef struct {
  int kind, simd, mr, kstep, off, chunk; /* chunk: u8 steps between widenings */
  int64_t ksteps, npa, npb;
  size_t apb, bpb; /* bytes of one packed A panel, B panel */
} gk_cfg;

/* ---- kernels: a full MR x 16 tile over ksteps packed steps, written to c (row stride ldc) --- */

static void kern_scalar(const gk_cfg *g, const void *ap, const void *bp, int32_t *c, int64_t ldc) {
  const int16_t *a = ap, *b = bp;
  const int mr = g->mr;
  uint32_t acc[16][NR];
  memset(acc, 0, sizeof acc);
  for (int64_t s = 0; s < g->ksteps; ++s) {
    const int16_t *as = a + s * mr * 2, *bs = b + s * NR * 2;
    for (int m = 0; m < mr; ++m)
      for (int n = 0; n < NR; ++n)
        acc[m][n] += (uint32_t)((int32_t)as[2 * m] * bs[2 * n]) +
                     (uint32_t)((int32_t)as[2 * m + 1] * bs[2 * n + 1]);
  }
  for (int m = 0; m < mr; ++m)
    for (int n = 0; n < NR; ++n) memcpy(&c[m * ldc + n], &acc[m][n], sizeof(int32_t));
}

#if FAST_X86
AVX2_FN static void kern_w16_avx2(const gk_cfg *g, const void *ap, const void *bp, int32_t *c,
                                  int64_t ldc) {
  const int16_t *a = ap, *b = bp;
  __m256i acc[6][2];
  for (int m = 0; m < 6; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_si256();
  for (int64_t s = 0; s < g->ksteps; ++s) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + s * 32));
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + s * 32 + 16));
    const int16_t *as = a + s * 12;
    for (int m = 0; m < 6; ++m) {
      int32_t pair;
      memcpy(&pair, as + 2 * m, sizeof pair);
      const __m256i av = _mm256_set1_epi32(pair);
      acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_madd_epi16(av, b0));
      acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (int m = 0; m < 6; ++m) {
    _mm256_storeu_si256((__m256i *)(c + m * ldc), acc[m][0]);
    _mm256_storeu_si256((__m256i *)(c + m * ldc + 8), acc[m][1]);
  }
}

AVX2_FN static void kern_u8_avx2(const gk_cfg *g, const void *ap, const void *bp, int32_t *c,
                                 int64_t ldc) {
  const uint8_t *a = ap;
  const int8_t *b = bp;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i tot[6][2];
  for (int m = 0; m < 6; ++m) tot[m][0] = tot[m][1] = _mm256_setzero_si256();
  for (int64_t s0 = 0; s0 < g->ksteps; s0 += g->chunk) {
    const int64_t s1 = s0 + g->chunk < g->ksteps ? s0 + g->chunk : g->ksteps;
    __m256i acc[6][2];
    for (int m = 0; m < 6; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_si256();
    for (int64_t s = s0; s < s1; ++s) {
      const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + s * 64));
      const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + s * 64 + 32));
      const uint8_t *as = a + s * 24;
      for (int m = 0; m < 6; ++m) {
        int32_t quad;
        memcpy(&quad, as + 4 * m, sizeof quad);
        const __m256i av = _mm256_set1_epi32(quad);
        acc[m][0] = _mm256_add_epi16(acc[m][0], _mm256_maddubs_epi16(av, b0));
        acc[m][1] = _mm256_add_epi16(acc[m][1], _mm256_maddubs_epi16(av, b1));
      }
    }
    for (int m = 0; m < 6; ++m) {
      tot[m][0] = _mm256_add_epi32(tot[m][0], _mm256_madd_epi16(acc[m][0], ones));
      tot[m][1] = _mm256_add_epi32(tot[m][1], _mm256_madd_epi16(acc[m][1], ones));
    }
  }
  for (int m = 0; m < 6; ++m) {
    _mm256_storeu_si256((__m256i *)(c + m * ldc), tot[m][0]);
    _mm256_storeu_si256((__m256i *)(c + m * ldc + 8), tot[m][1]);
  }
}

AVX512_FN static void kern_vnni(const gk_cfg *g, const void *ap, const void *bp, int32_t *c,
                                int64_t ldc) {
  const uint8_t *a = ap;
  const int8_t *b = bp;
  __m512i acc[16];
  for (int m = 0; m < 16; ++m) acc[m] = _mm512_setzero_si512();
  for (int64_t s = 0; s < g->ksteps; ++s) {
    const __m512i bv = _mm512_loadu_si512((const void *)(b + s * 64));
    const uint8_t *as = a + s * 64;
    for (int m = 0; m < 16; ++m) {
      int32_t quad;
      memcpy(&quad, as + 4 * m, sizeof quad);
      acc[m] = _mm512_dpbusd_epi32(acc[m], _mm512_set1_epi32(quad), bv);
    }
  }
  for (int m = 0; m < 16; ++m) _mm512_storeu_si512((void *)(c + m * ldc), acc[m]);
}
#endif

static void run_kernel(const gk_cfg *g, const void *ap, const void *bp, int32_t *c, int64_t ldc) {
#if FAST_X86
  if (g->simd) {
    if (g->kind == K_VNNI) kern_vnni(g, ap, bp, c, ldc);
    else if (g->kind == K_U8) kern_u8_avx2(g, ap, bp, c, ldc);
    else kern_w16_avx2(g, ap, bp, c, ldc);
    return;
  }
#endif
  kern_scalar(g, ap, bp, c, ldc);
}

/* ---- packing -------------------------------------------------------------------------------- */

typedef struct {
  const fast_igemm_op *op;
  const gk_cfg *g;
  unsigned char *pa, *pb;
  uint32_t *corr; /* segs x npb*16: off * sum_k b, or NULL */
  int32_t **scratch;
  int64_t tiles_n;
} gctx;

static void pack_a(const gctx *x, int64_t seg, int64_t p) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int8_t *a = op->a_seg[seg];
  const int mr = g->mr, ks = g->kstep;
  unsigned char *dst = x->pa + (size_t)(seg * g->npa + p) * g->apb;
  for (int64_t s = 0; s < g->ksteps; ++s)
    for (int m = 0; m < mr; ++m)
      for (int kk = 0; kk < ks; ++kk) {
        const int64_t row = p * mr + m, k = s * ks + kk;
        const int v = row < op->M && k < op->seg_k ? a[row * op->a_sm + k * op->a_sk] : 0;
        const int64_t at = (s * mr + m) * ks + kk;
        if (g->kind == K_W16) ((int16_t *)(void *)dst)[at] = (int16_t)v;
        else dst[at] = (unsigned char)(v + g->off);
      }
}

static void pack_b(const gctx *x, int64_t seg, int64_t p) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int8_t *b = op->b_seg[seg];
  const int ks = g->kstep;
  unsigned char *dst = x->pb + (size_t)(seg * g->npb + p) * g->bpb;
  uint32_t sum[NR] = {0};
  for (int64_t s = 0; s < g->ksteps; ++s)
    for (int n = 0; n < NR; ++n)
      for (int kk = 0; kk < ks; ++kk) {
        const int64_t col = p * NR + n, k = s * ks + kk;
        const int v = col < op->N && k < op->seg_k ? b[col * op->b_sn + k * op->b_sk] : 0;
        const int64_t at = (s * NR + n) * ks + kk;
        if (g->kind == K_W16) ((int16_t *)(void *)dst)[at] = (int16_t)v;
        else dst[at] = (unsigned char)(int8_t)v;
        sum[n] += (uint32_t)v;
      }
  if (x->corr)
    for (int n = 0; n < NR; ++n) x->corr[seg * g->npb * NR + p * NR + n] = (uint32_t)g->off * sum[n];
}

static void pack_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const gctx *x = ctx;
  const int64_t per = x->g->npa + x->g->npb, seg = i / per, j = i % per;
  if (j < x->g->npa) pack_a(x, seg, j);
  else pack_b(x, seg, j - x->g->npa);
}

/* ---- tiles ---------------------------------------------------------------------------------- */

static void tile_task(void *ctx, int64_t i, int tid) {
  const gctx *x = ctx;
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int64_t tm = i / x->tiles_n, tn = i % x->tiles_n;
  const int64_t m0 = tm * MC, n0 = tn * NCP * NR;
  const int64_t mc = op->M - m0 < MC ? op->M - m0 : MC;
  const int64_t nc = op->N - n0 < NCP * NR ? op->N - n0 : NCP * NR;
  const int64_t pa0 = m0 / g->mr, pa1 = fast_cdiv(m0 + mc, g->mr);
  const int64_t pb0 = n0 / NR, pb1 = fast_cdiv(n0 + nc, NR);
  const int64_t ldc = NCP * NR;
  int32_t *c = x->scratch[tid];
  for (int64_t seg = 0; seg < op->segs; ++seg) {
    for (int64_t pb = pb0; pb < pb1; ++pb) {
      const unsigned char *bp = x->pb + (size_t)(seg * g->npb + pb) * g->bpb;
      for (int64_t pa = pa0; pa < pa1; ++pa) {
        const unsigned char *ap = x->pa + (size_t)(seg * g->npa + pa) * g->apb;
        run_kernel(g, ap, bp, c + (pa - pa0) * g->mr * ldc + (pb - pb0) * NR, ldc);
      }
    }
    if (x->corr) {
      const uint32_t *cr = x->corr + seg * g->npb * NR + n0;
      for (int64_t m = 0; m < mc; ++m)
        for (int64_t n = 0; n < nc; ++n) {
          uint32_t u;
          memcpy(&u, &c[m * ldc + n], sizeof u);
          u -= cr[n];
          memcpy(&c[m * ldc + n], &u, sizeof u);
        }
    }
    op->epi(op->ctx, seg, m0, n0, mc, nc, c, ldc);
  }
}

int fast_igemm(const fast_igemm_op *op) {
  gk_cfg g;
  memset(&g, 0, sizeof g);
  const int level = fast_level_now();
  const int qa = op->qa < 1 ? 1 : op->qa, qb = op->qb < 1 ? 1 : op->qb;
  const int64_t s_u8 = 32767 / (4 * (int64_t)qa * qb);
  if (level >= FAST_LEVEL_AVX512) {
    g.kind = K_VNNI, g.simd = 1, g.mr = 16, g.kstep = 4, g.off = 128;
  } else if (level >= FAST_LEVEL_AVX2 && s_u8 >= 16 && 2 * qa <= 255) {
    g.kind = K_U8, g.simd = 1, g.mr = 6, g.kstep = 4, g.off = qa;
    g.chunk = (int)(s_u8 < 1024 ? s_u8 : 1024);
  } else {
    g.kind = K_W16, g.simd = level >= FAST_LEVEL_AVX2, g.mr = 6, g.kstep = 2, g.off = 0;
  }
  const size_t esz = g.kind == K_W16 ? 2 : 1;
  g.ksteps = fast_cdiv(op->seg_k, g.kstep);
  g.npa = fast_cdiv(op->M, g.mr);
  g.npb = fast_cdiv(op->N, NR);
  g.apb = (size_t)(g.ksteps * g.mr * g.kstep) * esz;
  g.bpb = (size_t)(g.ksteps * NR * g.kstep) * esz;
  const int threads = fast_threads();
  gctx x;
  memset(&x, 0, sizeof x);
  x.op = op;
  x.g = &g;
  x.tiles_n = fast_cdiv(op->N, NCP * NR);
  int rc = HOT_REF_ENOMEM;
  x.pa = malloc((size_t)(op->segs * g.npa) * g.apb + 64);
  x.pb = malloc((size_t)(op->segs * g.npb) * g.bpb + 64);
  x.corr = g.off ? malloc((size_t)(op->segs * g.npb * NR) * sizeof *x.corr) : NULL;
  x.scratch = calloc((size_t)threads, sizeof *x.scratch);
  if (!x.pa || !x.pb || (g.off && !x.corr) || !x.scratch) goto done;
  for (int t = 0; t < threads; ++t)
    if (!(x.scratch[t] = malloc((size_t)(MC * NCP * NR) * sizeof(int32_t)))) goto done;
  fast_parallel(op->segs * (g.npa + g.npb), threads, pack_task, &x);
  fast_parallel(fast_cdiv(op->M, MC) * x.tiles_n, threads, tile_task, &x);
  rc = HOT_REF_OK;
done:
  if (x.scratch)
    for (int t = 0; t < threads; ++t) free(x.scratch[t]);
  free(x.scratch);
  free(x.pa);
  free(x.pb);
  free(x.corr);
  return rc;
}

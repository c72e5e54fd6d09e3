/* fast_nvfp4.c — recipe nvfp4 on the fast path (templates/CONTRACT.md 20): the hq, hla and gemm
 * families' fast step functions hand a plan of fmt HOT_FMT_NVFP4 to fast_nvfp4_hq / _hla / _gemm,
 * bit for bit as the twin's ref_nvfp4_* (templates/nvfp4_steps_ref.c), buffers as nvfp4_plan.h
 * lays them out. The quantisers are the level's nvfp4_rows / mxfp8_rows (fast_internal.h: the
 * twin's own row functions at the scalar level, SIMD forms above it, the same bits), rows split
 * among threads; the tensors' FWHTs are the level's kernels too. The NVFP4 GEMM (g_x) runs on the
 * level's integer GEMM (fast_igemm, with VNNI or AMX where the CPU has them) with one K segment
 * per 16-value block: each block's dot product of doubled E2M1 values is an exact int
 * (|S| <= 2304) whatever the kernel; its epilogue runs 16 lanes at the 512-bit levels. The MXFP8
 * GEMM (g_w) sums each 32-value block of E4M3 values (integers in units of 2^-9) in double, exact
 * in any order, threaded over output rows, 4 x 16 outputs at a time in AVX-512 (with exact FMAs)
 * at the 512-bit levels, 4 x 8 in AVX2 where the level has it (the config's f64_avx2, as
 * fast_exact.c's kernels), else portable C. Both add the blocks' products in block order in fp32
 * per output element, the very operations and order of nvfp4_gemm / mxfp8_gemm (CONTRACT.md
 * 20.5, 20.8), whatever the thread count or ISA level. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_steps.h"
#include "hot_math.cuh"
#include "nvfp4_plan.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FAST_NV_X86 1
#else
#define FAST_NV_X86 0
#endif

enum { ROWS_PER_TASK = 4 };

/* ---- the block-scaled GEMMs ---------------------------------------------------------------- */

/* One GEMM: out[m * N + n] for m < M, n < N from row-major rows of k_pad values: the operands'
 * values as integers (NVFP4: doubled E2M1, int8; MXFP8: E4M3 in units of 2^-9, as doubles) and
 * their block scales (NVFP4: the decoded E4M3 floats; MXFP8: the E8M0 exponents e + 127). */
typedef struct {
  int64_t M, N, k_pad, nb;
  int mx;                    /* 0: NVFP4 (block 16), 1: MXFP8 (block 32) */
  const int8_t *a4, *b4;     /* NVFP4 values */
  const double *a8, *b8;     /* MXFP8 values (integers, exact in double) */
  const double *p2;          /* MXFP8: p2[ea + eb] = 2^(ea + eb - 254 - 18) */
  const float *a_sf, *b_sf;  /* NVFP4 block scales */
  const uint8_t *a_e, *b_e;  /* MXFP8 block exponents */
  float c;                   /* NVFP4: (s_ta * s_tb) / (4 * div); MXFP8: div */
  float *out;
  atomic_int *inf;
  const float *bt;           /* MXFP8 with AVX2: b in groups of bw rows, per block t-major */
  int bw;                    /* 8 (AVX2) or 16 (AVX-512: then bte too) */
  const uint8_t *bte;        /* AVX-512: b's block exponents the same way, bte[(q * nb + j) * 16 + l] */
} bs_gemm;

/* out[m, n] of MXFP8 x MXFP8: acc += ldexpf((float)S_b, ea + eb - 254 - 18) per block in order;
 * out = acc / div (mxfp8_gemm). */
static float mx_dot(const bs_gemm *g, int64_t m, int64_t n) {
  const double *a = g->a8 + m * g->k_pad, *b = g->b8 + n * g->k_pad;
  const uint8_t *ea = g->a_e + m * g->nb, *eb = g->b_e + n * g->nb;
  float acc = 0.0f;
  for (int64_t j = 0; j < g->nb; ++j, a += MXFP8_BLOCK, b += MXFP8_BLOCK) {
    /* every product and partial sum is an integer below 2^41: exact in double in any order */
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (int t = 0; t < MXFP8_BLOCK; t += 4) {
      s0 += a[t] * b[t];
      s1 += a[t + 1] * b[t + 1];
      s2 += a[t + 2] * b[t + 2];
      s3 += a[t + 3] * b[t + 3];
    }
    /* (float)S_b, then S_b * 2^(ea + eb - 254 - 18) rounded once: ldexpf's result (both round the
     * exact product of a float and a power of two once, to nearest even) */
    const float fs = (float)((s0 + s1) + (s2 + s3));
    acc = HOT_ADD(acc, (float)((double)fs * g->p2[ea[j] + eb[j]]));
  }
  return HOT_DIV(acc, g->c);
}

/* The NVFP4 GEMM on the level's integer GEMM (fast_igemm: VNNI / AMX where the CPU has them):
 * one K segment per 16-value block, so each segment's int32 tile holds the blocks' exact sums
 * S_b; the epilogue gets a tile's segments in block order from one thread and keeps the fp32
 * accumulator in the output itself: out = 0 + P_0, out += P_b, then out *= c at the last block
 * (nvfp4_gemm's operations, element by element: P_b = (float)S_b * (sa_b * sb_b)). */
typedef struct {
  const bs_gemm *g;
  int64_t last;
  const float *sb_t; /* b's block scales transposed: sb_t[j * N + n] */
  int simd;          /* 2: the AVX-512 row step, 0: portable C (an AVX2 form was slower here) */
} nv_epi_ctx;

/* One row of a tile: o[n] = HOT_ADD(first ? 0 : o[n], HOT_MUL(HOT_I2F(s[n]), HOT_MUL(sa, sb[n])))
 * for n < nc, then at the last block o[n] = HOT_MUL(o[n], c); returns 0 when a value of the last
 * block's is not finite, else 1. */
static int nv_epi_row(float *restrict o, const int32_t *restrict s, const float *restrict sb,
                      int64_t nc, float sa, int first, int last, float c) {
  int good = 1;
  for (int64_t n = 0; n < nc; ++n) {
    float v = HOT_ADD(first ? 0.0f : o[n], HOT_MUL(HOT_I2F(s[n]), HOT_MUL(sa, sb[n])));
    if (last) {
      v = HOT_MUL(v, c);
      good &= isfinite(v) != 0;
    }
    o[n] = v;
  }
  return good;
}

#if FAST_NV_X86
/* nv_epi_row on 16 lanes (the tail masked): the same operations, lane by lane (vcvtdq2ps is
 * exact on |S| <= 2304; the first block adds to +0 as the twin's 0.0f + P). */
__attribute__((target("avx2,avx512f"))) static int nv_epi_row_avx512(
    float *o, const int32_t *s, const float *sb, int64_t nc, float sa, int first, int last, float c) {
  const __m512 vsa = _mm512_set1_ps(sa), vc = _mm512_set1_ps(c), inf = _mm512_set1_ps(INFINITY);
  __mmask16 bad = 0;
  for (int64_t n = 0; n < nc; n += 16) {
    const __mmask16 k = fast_lanes16(nc - n);
    const __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k, s + n)),
                                   _mm512_mul_ps(vsa, _mm512_maskz_loadu_ps(k, sb + n)));
    __m512 v = _mm512_add_ps(first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k, o + n), p);
    if (last) {
      v = _mm512_mul_ps(v, vc);
      bad |= (__mmask16)(k & ~_mm512_cmp_ps_mask(_mm512_abs_ps(v), inf, _CMP_LT_OQ));
    }
    _mm512_mask_storeu_ps(o + n, k, v);
  }
  return bad == 0;
}

#endif

static void nv_epi(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                   const int32_t *acc, int64_t ldc) {
  const nv_epi_ctx *e = ctx;
  const bs_gemm *g = e->g;
  const float *sb = e->sb_t + seg * g->N + n0; /* b's scales of this block, by column */
  const int first = seg == 0, last = seg == e->last;
  int good = 1;
  for (int64_t m = 0; m < mc; ++m) {
    const float sa = g->a_sf[(m0 + m) * g->nb + seg];
    float *o = g->out + (m0 + m) * g->N + n0;
    const int32_t *s = acc + m * ldc;
#if FAST_NV_X86
    if (e->simd == 2) good &= nv_epi_row_avx512(o, s, sb, nc, sa, first, last, g->c);
    else
#endif
      good &= nv_epi_row(o, s, sb, nc, sa, first, last, g->c);
  }
  if (!good) atomic_store(g->inf, 1);
}

static int nv_igemm(fast_call *c, const bs_gemm *g) {
  const int8_t **a_seg = malloc((size_t)g->nb * sizeof *a_seg);
  const int8_t **b_seg = malloc((size_t)g->nb * sizeof *b_seg);
  float *sb_t = fast_scratch((size_t)(g->nb * g->N) * sizeof *sb_t);
  int rc = HOT_REF_ENOMEM;
  if (a_seg && b_seg && sb_t) {
    for (int64_t j = 0; j < g->nb; ++j) {
      a_seg[j] = g->a4 + j * NVFP4_BLOCK;
      b_seg[j] = g->b4 + j * NVFP4_BLOCK;
    }
    for (int64_t n = 0; n < g->N; ++n)
      for (int64_t j = 0; j < g->nb; ++j) sb_t[j * g->N + n] = g->b_sf[n * g->nb + j];
    nv_epi_ctx e = {g, g->nb - 1, sb_t, c->cf->k->avx512 ? 2 : 0};
    /* doubled E2M1 values: |v| <= 12 */
    fast_igemm_op op = {g->M, g->N, NVFP4_BLOCK, g->nb, a_seg, g->k_pad, 1, b_seg, g->k_pad, 1,
                        12, 12, nv_epi, &e, -1};
    rc = fast_igemm(c->cf, &op);
  }
  free(a_seg);
  free(b_seg);
  fast_unscratch(sb_t);
  return rc;
}

#if FAST_NV_X86
/* B of the MXFP8 GEMM for mx_dot4x8_avx2 (bw 8) and mx_dot4x16_avx512 (bw 16): rows in groups of
 * bw (the last one padded with zeros), each group block after block, each block value t of the
 * bw rows together, as floats (E4M3 values in units of 2^-9 are integers below 2^18: exact):
 * bt[((n / bw) * nb + j) * 32 * bw + t * bw + n % bw] = b[n * k_pad + j * 32 + t]. */
static void mx_pack_b(const double *b, int64_t N, int64_t k_pad, int bw, float *bt) {
  const int64_t nb = k_pad / MXFP8_BLOCK, groups = (N + bw - 1) / bw;
  for (int64_t q = 0; q < groups; ++q)
    for (int64_t j = 0; j < nb; ++j)
      for (int t = 0; t < MXFP8_BLOCK; ++t)
        for (int l = 0; l < bw; ++l) {
          const int64_t n = q * bw + l;
          bt[((q * nb + j) * MXFP8_BLOCK + t) * bw + l] =
              n < N ? (float)b[n * k_pad + j * MXFP8_BLOCK + t] : 0.0f;
        }
}

/* b's block exponents in the groups of 16 of mx_pack_b: bte[(q * nb + j) * 16 + l] = b_e[n * nb
 * + j], n = q * 16 + l (0 past N: those columns' sums are 0). */
static void mx_pack_e16(const uint8_t *b_e, int64_t N, int64_t nb, uint8_t *bte) {
  for (int64_t q = 0; q < (N + 15) / 16; ++q)
    for (int64_t j = 0; j < nb; ++j)
      for (int l = 0; l < 16; ++l) {
        const int64_t n = q * 16 + l;
        bte[(q * nb + j) * 16 + l] = n < N ? b_e[n * nb + j] : 0u;
      }
}

/* out[r][0 .. 16) = out[m0 + r, q * 16 ..) for r < 4: mx_dot4x8_avx2's operations on 16 columns
 * in 512-bit vectors, the block sums by FMA (each product and partial sum an integer below 2^41:
 * the fused step is exact, as the separate ones), the power of two 2^(ea + eb - 254 - 18) built
 * from its exponent bits (a normal double for every pair of E8M0 codes 0..254). */
__attribute__((target("avx2,avx512f"))) static void mx_dot4x16_avx512(const bs_gemm *g, int64_t m0,
                                                                     int64_t q, float out[4][16]) {
  const int64_t kp = g->k_pad, nb = g->nb;
  const float *bt = g->bt + q * nb * MXFP8_BLOCK * 16;
  const uint8_t *bte = g->bte + q * nb * 16;
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  for (int64_t j = 0; j < nb; ++j, bt += MXFP8_BLOCK * 16) {
    __m512d s[4][2];
    for (int r = 0; r < 4; ++r) s[r][0] = s[r][1] = _mm512_setzero_pd();
    const double *a = g->a8 + m0 * kp + j * MXFP8_BLOCK;
    for (int t = 0; t < MXFP8_BLOCK; ++t) {
      const __m512d b0 = _mm512_cvtps_pd(_mm256_loadu_ps(bt + t * 16));
      const __m512d b1 = _mm512_cvtps_pd(_mm256_loadu_ps(bt + t * 16 + 8));
      for (int r = 0; r < 4; ++r) {
        const __m512d av = _mm512_set1_pd(a[r * kp + t]);
        s[r][0] = _mm512_fmadd_pd(av, b0, s[r][0]);
        s[r][1] = _mm512_fmadd_pd(av, b1, s[r][1]);
      }
    }
    const __m128i eb = _mm_loadu_si128((const __m128i *)(const void *)(bte + j * 16));
    const __m512i e0 = _mm512_cvtepu8_epi64(eb), e1 = _mm512_cvtepu8_epi64(_mm_srli_si128(eb, 8));
    for (int r = 0; r < 4; ++r) {
      const __m512i base = _mm512_set1_epi64((long long)g->a_e[(m0 + r) * nb + j] + 1023 - 254 - 18);
      const __m512d p0 = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(e0, base), 52));
      const __m512d p1 = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(e1, base), 52));
      const __m256 q0 = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_cvtpd_ps(s[r][0])), p0));
      const __m256 q1 = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_cvtpd_ps(s[r][1])), p1));
      const __m512 prod = _mm512_castpd_ps(_mm512_insertf64x4(
          _mm512_castpd256_pd512(_mm256_castps_pd(q0)), _mm256_castps_pd(q1), 1));
      acc[r] = _mm512_add_ps(acc[r], prod);
    }
  }
  for (int r = 0; r < 4; ++r) _mm512_storeu_ps(out[r], _mm512_div_ps(acc[r], _mm512_set1_ps(g->c)));
}

/* out[r][0 .. 8) = out[m0 + r, q * 8 ..) of MXFP8 x MXFP8 for r < 4 (rows m0 .. m0 + 3 exist;
 * columns past N: zero operands, never stored), mx_dot's operations lane by lane: the block sums
 * in double (exact: any order), (float) of the sum and the power-of-two scale in double then
 * (float) (cvtpd_ps rounds to nearest even as the casts), the fp32 accumulator from +0 in block
 * order, the division by p. */
__attribute__((target("avx2"))) static void mx_dot4x8_avx2(const bs_gemm *g, int64_t m0, int64_t q,
                                                           float out[4][8]) {
  const int64_t kp = g->k_pad, nb = g->nb;
  const float *bt = g->bt + q * nb * MXFP8_BLOCK * 8;
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  for (int64_t j = 0; j < nb; ++j, bt += MXFP8_BLOCK * 8) {
    __m256d s[4][2];
    for (int r = 0; r < 4; ++r) s[r][0] = s[r][1] = _mm256_setzero_pd();
    const double *a = g->a8 + m0 * kp + j * MXFP8_BLOCK;
    for (int t = 0; t < MXFP8_BLOCK; ++t) {
      const __m256d b0 = _mm256_cvtps_pd(_mm_loadu_ps(bt + t * 8));
      const __m256d b1 = _mm256_cvtps_pd(_mm_loadu_ps(bt + t * 8 + 4));
      for (int r = 0; r < 4; ++r) {
        const __m256d av = _mm256_broadcast_sd(a + r * kp + t);
        s[r][0] = _mm256_add_pd(s[r][0], _mm256_mul_pd(av, b0));
        s[r][1] = _mm256_add_pd(s[r][1], _mm256_mul_pd(av, b1));
      }
    }
    double eb[8];
    for (int l = 0; l < 8; ++l) { /* padded columns: scale 0 (their sums are 0 anyway) */
      const int64_t n = q * 8 + l;
      eb[l] = n < g->N ? (double)g->b_e[n * nb + j] : -1.0;
    }
    for (int r = 0; r < 4; ++r) {
      const int ea = g->a_e[(m0 + r) * nb + j];
      double p2[8];
      for (int l = 0; l < 8; ++l) p2[l] = eb[l] < 0.0 ? 0.0 : g->p2[ea + (int)eb[l]];
      const __m256d f0 = _mm256_cvtps_pd(_mm256_cvtpd_ps(s[r][0]));
      const __m256d f1 = _mm256_cvtps_pd(_mm256_cvtpd_ps(s[r][1]));
      const __m128 p0 = _mm256_cvtpd_ps(_mm256_mul_pd(f0, _mm256_loadu_pd(p2)));
      const __m128 p1 = _mm256_cvtpd_ps(_mm256_mul_pd(f1, _mm256_loadu_pd(p2 + 4)));
      acc[r] = _mm256_add_ps(acc[r], _mm256_set_m128(p1, p0));
    }
  }
  for (int r = 0; r < 4; ++r) _mm256_storeu_ps(out[r], _mm256_div_ps(acc[r], _mm256_set1_ps(g->c)));
}
#endif

/* The MXFP8 GEMM: ROWS_PER_TASK rows of output per task; 4 x 16 outputs at a time in AVX-512
 * (bw 16: the config's avx512), 4 x 8 in AVX2 (bw 8: f64_avx2, as fast_exact.c's), else mx_dot. */
static void bs_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const bs_gemm *g = ctx;
  const int64_t m0 = i * ROWS_PER_TASK, m1 = m0 + ROWS_PER_TASK < g->M ? m0 + ROWS_PER_TASK : g->M;
  int bad = 0;
  int64_t m = m0;
#if FAST_NV_X86
  for (; g->bt && g->bw == 16 && m + 4 <= m1; m += 4)
    for (int64_t q = 0; q * 16 < g->N; ++q) {
      float v[4][16];
      mx_dot4x16_avx512(g, m, q, v);
      for (int r = 0; r < 4; ++r)
        for (int l = 0; l < 16 && q * 16 + l < g->N; ++l) {
          bad |= !isfinite(v[r][l]);
          g->out[(m + r) * g->N + q * 16 + l] = v[r][l];
        }
    }
  for (; g->bt && g->bw == 8 && m + 4 <= m1; m += 4)
    for (int64_t q = 0; q * 8 < g->N; ++q) {
      float v[4][8];
      mx_dot4x8_avx2(g, m, q, v);
      for (int r = 0; r < 4; ++r)
        for (int l = 0; l < 8 && q * 8 + l < g->N; ++l) {
          bad |= !isfinite(v[r][l]);
          g->out[(m + r) * g->N + q * 8 + l] = v[r][l];
        }
    }
#endif
  for (; m < m1; ++m)
    for (int64_t n = 0; n < g->N; ++n) {
      const float v = mx_dot(g, m, n);
      bad |= !isfinite(v);
      g->out[m * g->N + n] = v;
    }
  if (bad) atomic_store(g->inf, 1);
}

/* Doubled E2M1 values of rows x k_pad packed codes (element 2j in the low nibble of byte j). */
static void nv_unpack(const uint8_t *codes, int64_t n, int8_t *val) {
  static const int8_t x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int64_t t = 0; t < n; ++t) val[t] = x2[((unsigned)codes[t >> 1] >> ((t & 1) * 4)) & 15u];
}

/* E4M3 values in units of 2^-9, as doubles (the NaN codes, never written by the quantisers, as
 * 0). */
static void mx_unpack(const uint8_t *codes, int64_t n, double *val) {
  double tab[256];
  for (unsigned c = 0; c < 256; ++c) {
    const float v = nvfp4_e4m3_decode(c);
    tab[c] = isnan(v) ? 0.0 : (double)ldexpf(v, 9);
  }
  for (int64_t t = 0; t < n; ++t) val[t] = tab[codes[t]];
}

/* The E4M3 block scales as floats (nvfp4_e4m3_decode: exact). */
static void sf_decode(const uint8_t *sc, int64_t n, float *out) {
  for (int64_t t = 0; t < n; ++t) out[t] = nvfp4_e4m3_decode(sc[t]);
}

/* NVFP4 (mx = 0) or MXFP8 (mx = 1) GEMM of a (M rows) and b (N rows), each code rows then
 * scale bytes (nvfp4_plan.h); c as bs_gemm's. */
static int bs_run(fast_call *c, int mx, const uint8_t *a, const uint8_t *b, int64_t M, int64_t N,
                  int64_t k_pad, float cf, float *out, atomic_int *inf) {
  const int64_t nb = k_pad / (mx ? MXFP8_BLOCK : NVFP4_BLOCK);
  const int64_t ca = mx ? mxfp8_codes_bytes(M, k_pad) : nvfp4_codes_bytes(M, k_pad);
  const int64_t cb = mx ? mxfp8_codes_bytes(N, k_pad) : nvfp4_codes_bytes(N, k_pad);
  const size_t vsz = mx ? sizeof(double) : sizeof(int8_t);
  void *av = fast_scratch((size_t)(M * k_pad) * vsz), *bv = fast_scratch((size_t)(N * k_pad) * vsz);
  float *asf = mx ? NULL : fast_scratch((size_t)(M * nb) * sizeof(float));
  float *bsf = mx ? NULL : fast_scratch((size_t)(N * nb) * sizeof(float));
  double p2[509];
  int rc = HOT_REF_ENOMEM;
  if (av && bv && (mx || (asf && bsf))) {
    bs_gemm g = {M, N, k_pad, nb, mx, NULL, NULL, NULL, NULL, NULL, asf, bsf, a + ca, b + cb, cf,
                 out, inf, NULL, 8, NULL};
    if (mx) {
      for (int k = 0; k < 509; ++k) p2[k] = ldexp(1.0, k - 254 - 18); /* E8M0 codes 0..254 */
      mx_unpack(a, M * k_pad, av);
      mx_unpack(b, N * k_pad, bv);
      g.a8 = av, g.b8 = bv, g.p2 = p2;
      float *bt = NULL;
      uint8_t *bte = NULL;
#if FAST_NV_X86
      g.bw = c->cf->k->avx512 ? 16 : 8;
      if (g.bw == 16 && (bte = fast_scratch((size_t)(fast_round_up(N, 16) * nb))) == NULL) g.bw = 8;
      if (c->cf->k->f64_avx2 &&
          (bt = fast_scratch((size_t)(fast_round_up(N, g.bw) * k_pad) * sizeof *bt)) != NULL)
        mx_pack_b(bv, N, k_pad, g.bw, bt);
      if (bte) mx_pack_e16(g.b_e, N, nb, bte);
#endif
      g.bt = bt, g.bte = bte; /* bt NULL: the portable mx_dot (also when out of memory: the same bits) */
      fast_parallel(fast_cdiv(M, ROWS_PER_TASK), c->cf->threads, bs_task, &g);
      fast_unscratch(bt);
      fast_unscratch(bte);
      rc = HOT_REF_OK;
    } else {
      nv_unpack(a, M * k_pad, av);
      nv_unpack(b, N * k_pad, bv);
      sf_decode(a + ca, M * nb, asf);
      sf_decode(b + cb, N * nb, bsf);
      g.a4 = av, g.b4 = bv;
      rc = nv_igemm(c, &g);
    }
  }
  fast_unscratch(av);
  fast_unscratch(bv);
  fast_unscratch(asf);
  fast_unscratch(bsf);
  return rc;
}

/* ---- the steps ----------------------------------------------------------------------------- */

/* ---- the quantisers, threaded over rows ---------------------------------------------------- */

enum { QROWS = 16 }; /* rows per task */

/* The state of one threaded operand: what the tasks read and write, and what they report. */
typedef struct {
  const nvfp4_layer *ly;
  const void *src;           /* the caller's input (dtype dt) */
  hot_dtype dt;
  const float *in;           /* hla: src as fp32 (T x cols) */
  int64_t rows, k, cols;     /* the quantised tensor: rows x k (hla: cols rows of K) */
  int is_g, sr;
  float *m;                  /* the fp32 tensor to quantise (rows x k), or hla's K x cols math */
  float *mt;                 /* hla: m transposed (cols x K) */
  float *amax;               /* hq: one per task */
  float s_t;
  nvfp4_stream st;
  uint8_t *codes, *scales;
  atomic_int bad;            /* a non-finite value (HOT_REF_ENONFINITE) */
  atomic_int nomem;
  const fast_elem_kernels *e; /* the level's quantisers (nvfp4_rows, mxfp8_rows) */
  float *pbuf;                /* hla: p x cols floats per thread (the projection's blocks) */
  const float **psrc;         /* hla: p source rows per thread */
} qctx;

static int64_t rows_end(int64_t i, int64_t per, int64_t n) { return (i + 1) * per < n ? (i + 1) * per : n; }

/* hq: rows [i * QROWS, ..) of g' = g_y (I (x) H_16) or of w' = ((I (x) H_16) w)^T, O padded with
 * zeros to k = o_pad (nvfp4_hq_quant_g / _w), by the level's row FWHT, and their amax (exact in
 * any order) and finiteness by the level's amax. */
static void hq_rows_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  qctx *x = ctx;
  const int64_t O = x->ly->O, I = x->ly->I, k = x->k, r1 = rows_end(i, QROWS, x->rows);
  float amax = 0.0f;
  int good = 1;
  for (int64_t r = i * QROWS; r < r1; ++r) {
    float *row = x->m + r * k;
    memset(row, 0, (size_t)k * sizeof *row);
    if (x->is_g) fast_load_run(x->src, x->dt, r * O, O, row);
    else
      for (int64_t o = 0; o < O; ++o) row[o] = ref_load(x->src, x->dt, o * I + r);
    x->e->fwht_row(row, row, k, 16); /* hot_fwht(row + b, 16) per block, the same operations */
    good &= x->e->amax(row, k, &amax) != 0;
  }
  x->amax[i] = amax;
  if (!good) atomic_store(&x->bad, 1);
}

static void nv_quant_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  qctx *x = ctx;
  x->e->nvfp4_rows(x->m, i * QROWS, rows_end(i, QROWS, x->rows), x->k, x->s_t, x->sr, &x->st,
                   x->codes, x->scales);
}

/* hq_g / hq_w: g' (SR unless hq.round = rtn) or w' (RTN) into Q_G, S_G / Q_W, S_W: the tensor
 * and its amax by row tasks, s_t, then the rows' codes by row tasks (nvfp4_hq_quant_g / _w). */
static int step_hq(fast_call *c, const nvfp4_layer *ly, int is_g) {
  const hot_layer_plan *pl = c->pl;
  const int64_t rows = is_g ? pl->T : pl->I, kp = pl->hq.gemm.k_pad, tasks = fast_cdiv(rows, QROWS);
  uint8_t *q = fast_call_alloc(c, is_g ? HOT_LB_Q_G : HOT_LB_Q_W,
                               (size_t)plan_buffer_bytes(pl, is_g ? HOT_BUF_Q_G : HOT_BUF_Q_W), 1);
  float *st = fast_call_alloc(c, is_g ? HOT_LB_S_G : HOT_LB_S_W, sizeof(float), 0);
  qctx x;
  memset(&x, 0, sizeof x);
  x.ly = ly, x.src = is_g ? c->g_y : c->w, x.dt = c->dt, x.rows = rows, x.k = kp, x.is_g = is_g;
  x.e = c->cf->k->e;
  x.sr = is_g && pl->hq.g.round == HOT_ROUND_SR;
  x.st = (nvfp4_stream){c->seed, ly->layer_id * 16u + HOT_TENSOR_HQ_G, c->step, kp, 1};
  x.m = fast_scratch((size_t)(rows * kp) * sizeof *x.m);
  x.amax = malloc((size_t)tasks * sizeof *x.amax);
  atomic_init(&x.bad, 0);
  atomic_init(&x.nomem, 0);
  int rc = q && st && x.m && x.amax ? HOT_REF_OK : HOT_REF_ENOMEM;
  if (!rc) {
    fast_parallel(tasks, c->cf->threads, hq_rows_task, &x);
    float amax = 0.0f;
    for (int64_t t = 0; t < tasks; ++t) amax = x.amax[t] > amax ? x.amax[t] : amax;
    if (atomic_load(&x.bad)) rc = HOT_REF_ENONFINITE;
    if (!rc) {
      *st = x.s_t = nvfp4_tensor_scale(amax);
      x.codes = q, x.scales = q + nvfp4_codes_bytes(rows, kp);
      fast_parallel(tasks, c->cf->threads, nv_quant_task, &x);
    }
  }
  fast_unscratch(x.m);
  free(x.amax);
  return rc;
}

/* hla: the fp32 copy of the input (rows of T x cols), exact widening. */
static void load_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  qctx *x = ctx;
  const int64_t T = x->ly->B * x->ly->L, r1 = rows_end(i, QROWS, T);
  fast_load_run(x->src, x->dt, i * QROWS * x->cols, (r1 - i * QROWS) * x->cols, (float *)x->in + i * QROWS * x->cols);
}

/* hla: token blocks [i * 4, ..) projected: nvfp4_hla_project_blocks' values, by the level's
 * fwht_cols_src (per column the operations of hot_fwht, as ref_fwht_rows: the same bits) on the
 * block's p token rows (NULL past the segment's real tokens: the twin's zeros), the selected rows
 * copied out. The twin's error for a non-finite input is reported by mx_rows_task: a NaN or Inf
 * input makes every value of its column's transform non-finite (a sum or difference of all p
 * inputs), which that task checks. */
static void project_task(void *ctx, int64_t i, int tid) {
  qctx *x = ctx;
  const nvfp4_layer *ly = x->ly;
  const int p = ly->p;
  const int64_t cols = x->cols, real = ly->flat ? ly->B * ly->L : ly->L;
  const int64_t per = fast_round_up(real, p) / p, b1 = rows_end(i, 4, nvfp4_layer_blocks(ly));
  float *buf = x->pbuf + (int64_t)tid * p * cols;
  const float **srcs = x->psrc + (int64_t)tid * p;
  for (int64_t blk = i * 4; blk < b1; ++blk) {
    const int64_t seg = blk / per, q = blk % per, base = ly->flat ? 0 : seg * ly->L;
    for (int j = 0; j < p; ++j) srcs[j] = q * p + j < real ? x->in + (base + q * p + j) * cols : NULL;
    x->e->fwht_cols_src(buf, p, cols, cols, srcs);
    for (int j = 0; j < ly->r; ++j)
      memcpy(x->m + (blk * ly->r + j) * cols, buf + (int64_t)ly->rows[j] * cols,
             (size_t)cols * sizeof *buf);
  }
}

/* hla: rows [i * QROWS, ..) of the transposed operand (cols rows of K), checked finite, then
 * their MXFP8 codes (mxfp8_quantize_rows). */
static void mx_rows_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  qctx *x = ctx;
  const int64_t K = x->k, r1 = rows_end(i, QROWS, x->rows);
  int good = 1;
  for (int64_t r = i * QROWS; r < r1; ++r)
    for (int64_t kk = 0; kk < K; ++kk) {
      const float v = x->m[kk * x->cols + r];
      good &= isfinite(v) != 0;
      x->mt[r * K + kk] = v;
    }
  if (!good) {
    atomic_store(&x->bad, 1);
    return;
  }
  x->e->mxfp8_rows(x->mt, i * QROWS, r1, K, x->sr, &x->st, x->codes, x->scales);
}

/* g^ (is_g, SR unless hla.round = rtn) or x^ (RTN) of src (T x cols, dtype dt) into dst, the
 * layout of Q_HG / Q_HX (nvfp4_hla_quant: the projection, its transpose, MXFP8 along K). */
static int hla_quant(const fast_call *c, const nvfp4_layer *ly, const void *src, hot_dtype dt,
                     int is_g, uint8_t *dst) {
  const hot_layer_plan *pl = c->pl;
  const int64_t cols = is_g ? pl->O : pl->I, K = nvfp4_layer_k(ly), T = pl->T;
  qctx x;
  memset(&x, 0, sizeof x);
  x.ly = ly, x.src = src, x.dt = dt, x.rows = cols, x.k = K, x.cols = cols, x.is_g = is_g;
  x.e = c->cf->k->e;
  x.sr = is_g && pl->hla.g.round == HOT_ROUND_SR;
  x.st = (nvfp4_stream){c->seed, ly->layer_id * 16u + (is_g ? HOT_TENSOR_HLA_G : 0u), c->step, 1,
                        cols};
  x.codes = dst, x.scales = dst + mxfp8_codes_bytes(cols, pl->hla.gemm.k_pad);
  float *in = fast_scratch((size_t)(T * cols) * sizeof *in);
  x.in = in;
  x.m = fast_scratch((size_t)(K * cols) * sizeof *x.m);
  x.mt = fast_scratch((size_t)(K * cols) * sizeof *x.mt);
  const int threads = c->cf->threads > 0 ? c->cf->threads : 1;
  x.pbuf = fast_scratch((size_t)((int64_t)threads * ly->p * cols) * sizeof *x.pbuf);
  x.psrc = malloc((size_t)threads * (size_t)ly->p * sizeof *x.psrc);
  atomic_init(&x.bad, 0);
  atomic_init(&x.nomem, 0);
  int rc = in && x.m && x.mt && x.pbuf && x.psrc ? HOT_REF_OK : HOT_REF_ENOMEM;
  if (!rc) {
    fast_parallel(fast_cdiv(T, QROWS), c->cf->threads, load_task, &x);
    fast_parallel(fast_cdiv(nvfp4_layer_blocks(ly), 4), c->cf->threads, project_task, &x);
    rc = atomic_load(&x.nomem) ? HOT_REF_ENOMEM : atomic_load(&x.bad) ? HOT_REF_ENONFINITE : 0;
  }
  if (!rc) {
    fast_parallel(fast_cdiv(cols, QROWS), c->cf->threads, mx_rows_task, &x);
    if (atomic_load(&x.bad)) rc = HOT_REF_ENONFINITE;
  }
  fast_unscratch(in);
  fast_unscratch(x.m);
  fast_unscratch(x.mt);
  fast_unscratch(x.pbuf);
  free((void *)x.psrc);
  return rc;
}

static int step_gemm(fast_call *c, const nvfp4_layer *ly, int gx) {
  const hot_layer_plan *pl = c->pl;
  if (gx) {
    const uint8_t *a = c->buf[HOT_LB_Q_G], *b = c->buf[HOT_LB_Q_W];
    const float *ta = c->buf[HOT_LB_S_G], *tb = c->buf[HOT_LB_S_W];
    if (!a || !b || !ta || !tb) return HOT_REF_EARG;
    const float cf = HOT_DIV(HOT_MUL(*ta, *tb), (float)(4 * 16)); /* nvfp4_gemm's c, div 16 */
    c->wrote |= 1u << HOT_LB_GX;
    int rc = bs_run(c, 0, a, b, pl->T, pl->I, pl->hq.gemm.k_pad, cf, c->g_x, &c->inf_x);
    fast_call_release(c, HOT_LB_Q_G);
    fast_call_release(c, HOT_LB_Q_W);
    return rc;
  }
  const uint8_t *a = c->buf[HOT_LB_Q_HG], *b = (const uint8_t *)c->saved->q_x;
  if (!b) { /* no ABC: x^ of the kept x, projected now */
    uint8_t *q = fast_call_alloc(c, HOT_LB_Q_HX, (size_t)plan_buffer_bytes(pl, HOT_BUF_Q_HX), 1);
    if (!q) return HOT_REF_ENOMEM;
    int rc = hla_quant(c, ly, c->saved->x, HOT_DT_F32, 0, q);
    if (rc) return rc;
    b = q;
  }
  if (!a) return HOT_REF_EARG;
  c->wrote |= 1u << HOT_LB_GW;
  return bs_run(c, 1, a, b, pl->O, pl->I, pl->hla.gemm.k_pad, (float)pl->hla.block, c->g_w,
                &c->inf_w);
}

/* The entry points the hq, hla and gemm families' fast step functions call for a plan of fmt
 * HOT_FMT_NVFP4 (fast_steps.h). */
static int plan_of(const fast_call *c, nvfp4_plan_layer *pl) {
  if (!c || !c->pl || c->pl->fmt != HOT_FMT_NVFP4) return HOT_REF_EARG;
  nvfp4_of_plan(c->pl, pl);
  return HOT_REF_OK;
}

int fast_nvfp4_hq(fast_call *c, int is_g) {
  nvfp4_plan_layer pl;
  int rc = plan_of(c, &pl);
  return rc ? rc : step_hq(c, &pl.ly, is_g);
}

int fast_nvfp4_hla(fast_call *c, int is_g) {
  nvfp4_plan_layer pl;
  int rc = plan_of(c, &pl);
  if (rc) return rc;
  if (is_g) {
    uint8_t *q = fast_call_alloc(c, HOT_LB_Q_HG, (size_t)plan_buffer_bytes(c->pl, HOT_BUF_Q_HG), 1);
    return q ? hla_quant(c, &pl.ly, c->g_y, c->dt, 1, q) : HOT_REF_ENOMEM;
  }
  if (!c->save_out) return HOT_REF_EARG; /* x^ (abc_x, the save) */
  c->save_out->q_x = malloc((size_t)plan_buffer_bytes(c->pl, HOT_BUF_SAVED_CODES));
  if (!c->save_out->q_x) return HOT_REF_ENOMEM; /* the caller frees out */
  return hla_quant(c, &pl.ly, c->x, c->dt, 0, (uint8_t *)c->save_out->q_x);
}

int fast_nvfp4_gemm(fast_call *c, int gx) {
  nvfp4_plan_layer pl;
  int rc = plan_of(c, &pl);
  return rc ? rc : step_gemm(c, &pl.ly, gx);
}

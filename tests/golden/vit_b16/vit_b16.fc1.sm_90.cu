// generated from templates/hla_project.cu, templates/hadamard_quant.cu, templates/abc_unpack.cu, templates/gemm_int.cu, templates/bias.cu, templates/lqs.cu by hot-gen 0.1.0 for sm_90; do not edit
#define HOT_GENERATED 1
#line 1 "templates/hot_math.cuh"
/* hot_math.cuh — the scalar numerics of CONTRACT.md, written once for both sides: included by the CUDA
 * templates (compiled by NVRTC) and by the CPU twins (compiled as C11). Every rounding step is
 * spelled out with explicit single-rounding operations, so the two sides give the same bits.
 *
 * Contract (CONTRACT.md sections 2 and 6):
 *  - butterflies are fp32 add/sub, round-to-nearest, never fused;
 *  - scale s = amax / qmax (IEEE division), s = 0 when amax = 0 (all codes 0);
 *  - u = v / s (IEEE division), clamped to [-qmax, qmax];
 *  - RTN = rint (ties to even); SR = floor(u) + (rho < u - floor(u)), rho = (word >> 8) * 2^-24;
 *  - Philox4x32-10, key = seed, counter = {idx>>2 low, idx>>2 high, tag, step}, word idx & 3.
 */
#ifndef HOT_MATH_CUH
#define HOT_MATH_CUH

#ifdef __CUDACC__
#define HOT_FN static __device__ __forceinline__
typedef unsigned int hot_u32;
typedef unsigned long long hot_u64;
#define HOT_ADD(a, b) __fadd_rn((a), (b))
#define HOT_SUB(a, b) __fsub_rn((a), (b))
#define HOT_MUL(a, b) __fmul_rn((a), (b))
#define HOT_DIV(a, b) __fdiv_rn((a), (b))
#define HOT_FLOOR(a) floorf(a)
#define HOT_RINT(a) rintf(a)
#define HOT_I2F(a) __int2float_rn(a)
#define HOT_MULHI(a, b) __umulhi((a), (b))
#else
#include <math.h>
#include <stdint.h>
#define HOT_FN static inline
typedef uint32_t hot_u32;
typedef uint64_t hot_u64;
/* Built with -ffp-contract=off and SSE arithmetic: each operator rounds once. */
#define HOT_ADD(a, b) ((float)((a) + (b)))
#define HOT_SUB(a, b) ((float)((a) - (b)))
#define HOT_MUL(a, b) ((float)((a) * (b)))
#define HOT_DIV(a, b) ((float)((a) / (b)))
#define HOT_FLOOR(a) floorf(a)
#define HOT_RINT(a) rintf(a)
#define HOT_I2F(a) ((float)(a))
#define HOT_MULHI(a, b) ((hot_u32)(((hot_u64)(a) * (hot_u64)(b)) >> 32))
#endif

/* Philox tensor ids of CONTRACT.md section 6: tag = layer_id * 16 + tensor. */
#define HOT_TENSOR_HQ_G 1
#define HOT_TENSOR_HLA_G 2
#define HOT_TENSOR_LQS 3

typedef struct { hot_u32 v[4]; } hot_philox_out;

/* Philox4x32-10 (Salmon et al., SC'11): ten rounds, multipliers and Weyl key increments of the
 * published algorithm. Checked against Random123's known-answer vectors in tests/ref. */
HOT_FN hot_philox_out hot_philox4x32_10(hot_u32 c0, hot_u32 c1, hot_u32 c2, hot_u32 c3,
                                         hot_u32 k0, hot_u32 k1) {
  hot_philox_out o;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    hot_u32 hi0 = HOT_MULHI(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    hot_u32 hi1 = HOT_MULHI(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    hot_u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  o.v[0] = c0;
  o.v[1] = c1;
  o.v[2] = c2;
  o.v[3] = c3;
  return o;
}

/* The 32-bit random word of element idx of tensor `tag` at training step `step`. */
HOT_FN hot_u32 hot_rand_word(hot_u64 seed, hot_u32 tag, hot_u32 step, hot_u64 idx) {
  hot_u64 q = idx >> 2;
  hot_philox_out o = hot_philox4x32_10((hot_u32)(q & 0xffffffffu), (hot_u32)(q >> 32), tag, step,
                                       (hot_u32)(seed & 0xffffffffu), (hot_u32)(seed >> 32));
  return o.v[idx & 3u];
}

/* rho in [0, 1): the top 24 bits of the word, exact in fp32. */
HOT_FN float hot_rho(hot_u32 word) { return HOT_I2F((int)(word >> 8)) * 5.9604644775390625e-8f; }

/* qmax = 2^(bits-1) - 1 */
HOT_FN int hot_qmax(int bits) { return (1 << (bits - 1)) - 1; }

/* s = amax / qmax; 0 when amax is 0. */
HOT_FN float hot_scale(float amax, int bits) {
  return amax > 0.0f ? HOT_DIV(amax, HOT_I2F(hot_qmax(bits))) : 0.0f;
}

/* u = clamp(v / s, -qmax, qmax); 0 when s is 0. */
HOT_FN float hot_scaled(float v, float s, int qmax) {
  if (!(s > 0.0f)) return 0.0f;
  float u = HOT_DIV(v, s);
  float q = HOT_I2F(qmax);
  return u > q ? q : (u < -q ? -q : u);
}

/* Round-to-nearest-even code of v under scale s. */
HOT_FN int hot_quant_rtn(float v, float s, int qmax) {
  return (int)HOT_RINT(hot_scaled(v, s, qmax));
}

/* Stochastic-rounding code of v under scale s with random word `word`. */
HOT_FN int hot_quant_sr(float v, float s, int qmax, hot_u32 word) {
  float u = hot_scaled(v, s, qmax);
  float f = HOT_FLOOR(u);
  float frac = HOT_SUB(u, f); /* exact: |u| <= qmax < 2^7 */
  return (int)f + (hot_rho(word) < frac ? 1 : 0);
}

/* One butterfly stage h of a length-n FWHT on a[0..n), in place (CONTRACT.md stage order:
 * callers run h = 1, 2, 4, ..., n/2). */
HOT_FN void hot_fwht_stage(float *a, int n, int h) {
  for (int j = 0; j < n; ++j) {
    if (j & h) continue;
    float x = a[j], y = a[j + h];
    a[j] = HOT_ADD(x, y);
    a[j + h] = HOT_SUB(x, y);
  }
}

/* The full length-n FWHT (n a power of two) of a[0..n), in place, natural order, unnormalized. */
HOT_FN void hot_fwht(float *a, int n) {
  for (int h = 1; h < n; h <<= 1) hot_fwht_stage(a, n, h);
}

/* bf16 and f16 bit patterns to f32 (exact). */
HOT_FN float hot_bf16_to_f32(unsigned short b) {
  union { hot_u32 u; float f; } c;
  c.u = ((hot_u32)b) << 16;
  return c.f;
}

HOT_FN float hot_f16_to_f32(unsigned short h) {
  hot_u32 sign = ((hot_u32)h & 0x8000u) << 16, e = ((hot_u32)h >> 10) & 0x1fu, m = (hot_u32)h & 0x3ffu;
  union { hot_u32 u; float f; } c;
  if (e == 0x1fu) {
    c.u = sign | 0x7f800000u | (m << 13);            /* inf / nan */
  } else if (e != 0) {
    c.u = sign | ((e + 112u) << 23) | (m << 13);     /* normal */
  } else if (m == 0) {
    c.u = sign;                                       /* +-0 */
  } else {                                            /* subnormal: m * 2^-24, exact */
    c.f = HOT_I2F((int)m) * 5.9604644775390625e-8f;
    c.u |= sign;
  }
  return c.f;
}

/* ---- appended for the CPU reference and the kernels that follow it (templates/CONTRACT.md) -- */

/* fp64 operations that round once (no FMA contraction under nvcc either). */
/* Element off of a tensor of dtype dt (0 = f32, 1 = bf16, 2 = f16 bit patterns) as fp32, exact.
 * Kernels pass their compile-time HOT_DTYPE, so the branches fold away; read-only loads on the GPU. */
HOT_FN float hot_load_f32(const void *p, long long off, int dt) {
#ifdef __CUDACC__
  if (dt == 0) return __ldg((const float *)p + off);
  const unsigned short h = __ldg((const unsigned short *)p + off);
#else
  if (dt == 0) return ((const float *)p)[off];
  const unsigned short h = ((const unsigned short *)p)[off];
#endif
  return dt == 1 ? hot_bf16_to_f32(h) : hot_f16_to_f32(h);
}

#ifdef __CUDACC__
#define HOT_DADD(a, b) __dadd_rn((a), (b))
#define HOT_DSUB(a, b) __dsub_rn((a), (b))
#define HOT_DMUL(a, b) __dmul_rn((a), (b))
#define HOT_DDIV(a, b) __ddiv_rn((a), (b))
#define HOT_DSQRT(a) __dsqrt_rn(a)
#else
#define HOT_DADD(a, b) ((double)((a) + (b)))
#define HOT_DSUB(a, b) ((double)((a) - (b)))
#define HOT_DMUL(a, b) ((double)((a) * (b)))
#define HOT_DDIV(a, b) ((double)((a) / (b)))
#define HOT_DSQRT(a) sqrt(a)
#endif

/* SAWB clip of CONTRACT.md 3.4 from the canonical fp64 sums s1 = sum |v|, s2 = sum v^2 over n
 * elements: (float)(12.1 * sqrt(s2 / n) - 12.2 * (s1 / n)), each fp64 step rounded once. */
HOT_FN float hot_sawb_clip(double s1, double s2, double n) {
  double a = HOT_DMUL(12.1, HOT_DSQRT(HOT_DDIV(s2, n)));
  double b = HOT_DMUL(12.2, HOT_DDIV(s1, n));
  return (float)HOT_DSUB(a, b);
}

/* SAWB scale: clip / qmax when clip > 0, else the absmax scale. */
HOT_FN float hot_scale_sawb(double s1, double s2, double n, float amax, int bits) {
  float clip = hot_sawb_clip(s1, s2, n);
  return clip > 0.0f ? HOT_DIV(clip, HOT_I2F(hot_qmax(bits))) : hot_scale(amax, bits);
}

#if defined(__CUDACC__) || defined(HOT_HAVE_SYNCWARP)
/* The ordered fp64 pass over n (S1, S2) partial pairs stored interleaved at p[0 .. 2n) (CONTRACT
 * 13's second level): s1 = sum of p[2j], s2 = sum of p[2j + 1], each sequentially in j from 0.0.
 * A warp collective (the kernels, and the SIMT emulator of tools/kernel-emu/kemu.h, which
 * defines HOT_HAVE_SYNCWARP; every lane of the warp calls it with the same arguments): the lanes load 64 consecutive doubles a round (two coalesced
 * requests, 8 sectors each) into the warp's 64-double shared scratch t, and lane 0 adds them in
 * order, so one request moves 32 useful doubles instead of one. On return lane 0 holds the sums
 * (the other lanes' are unspecified). */
HOT_FN void hot_warp_pair_sum(const double *p, long long n, double *t, int lane, double &s1,
                              double &s2) {
  s1 = 0.0;
  s2 = 0.0;
  for (long long j0 = 0; j0 < n; j0 += 32) {
    const long long e = 2 * j0 + lane, ne = 2 * n;
    t[lane] = e < ne ? p[e] : 0.0;
    t[32 + lane] = e + 32 < ne ? p[e + 32] : 0.0;
    __syncwarp();
    if (lane == 0) {
      const int cnt = n - j0 < 32 ? (int)(n - j0) : 32;
      for (int k = 0; k < cnt; ++k) {
        s1 = HOT_DADD(s1, t[2 * k]);
        s2 = HOT_DADD(s2, t[2 * k + 1]);
      }
    }
    __syncwarp();
  }
}
#endif

/* Two's-complement nibble packing (CONTRACT.md 6): element 2j in the low nibble of byte j. */
HOT_FN unsigned char hot_pack_s4(int lo, int hi) {
  return (unsigned char)((lo & 0xf) | ((hi & 0xf) << 4));
}

/* Nibble `hi` (0: low, 1: high) of a packed byte, sign-extended. */
HOT_FN int hot_unpack_s4(unsigned char byte, int hi) {
  int v = (hi ? (byte >> 4) : byte) & 0xf;
  return v >= 8 ? v - 16 : v;
}

/* ---- overflow flag (CONTRACT.md "Overflow of finite inputs") --------------------------------
 * HOT_RANGE_CHECK(v): a kernel storing an fp32 output v of a step raises its module's word
 * hot_range_flag when v is not finite; the runtime zeroes the word before the step and copies it
 * back after it, asynchronously. Outputs are unchanged. Without the CUDA compiler (the CPU twins,
 * the emulators) a no-op: the CPU backend checks the twins' outputs itself. */
#ifdef __CUDACC__
extern "C" {
__device__ unsigned int hot_range_flag;
}
#define HOT_RANGE_CHECK(v)                                                                        \
  do {                                                                                            \
    if (!(fabsf(v) <= 3.40282347e+38f)) hot_range_flag = 1u;                                      \
  } while (0)
#else
#define HOT_RANGE_CHECK(v) ((void)0)
#endif

#endif /* HOT_MATH_CUH */
#line 1 "templates/hot_gemm.cuh"
/* hot_gemm.cuh — what the GEMM templates (gemm_int.cu, gemm_wgmma.cu, gemm_tma.cu) share: the
 * cp.async wrappers (shared-state addresses, 16-byte global -> shared copies with zero fill,
 * commit and wait) and the dequantization epilogue (alpha, row factor, the store of two adjacent
 * outputs, the overflow check of a stored row, and the store-or-accumulate of a segmented GEMM).
 * tools/gemm-emu/mkemu.py inlines this file and replaces the wrappers' bodies with its
 * emulator's. */

/* 32-bit shared-state address of a generic pointer into shared memory. */
static __device__ __forceinline__ unsigned hot_smem_u32(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

/* cp.async.cg: 16 bytes global -> shared, bypassing L1; src_bytes = 0 writes 16 zero bytes and
 * reads nothing (PTX ISA 9.7.9.25.3.1 cp.async: "src-size ... remaining bytes are zero-filled"). */
static __device__ __forceinline__ void hot_cp_async16(unsigned dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}

static __device__ __forceinline__ void hot_cp_async_commit(void) {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Waits until at most N of this thread's committed groups are still in flight. */
template <int N>
static __device__ __forceinline__ void hot_cp_async_wait(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* threadIdx.x, read so that the compiler cannot move the read (or what is computed from it) out
 * of a loop: a segment end inside the K loop recomputes its output addresses from it instead of
 * keeping them in registers across the whole loop. */
static __device__ __forceinline__ int hot_tid_opaque(void) {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

/* ---- the epilogue of CONTRACT 14, once for every GEMM path (single-rounding fp32 steps in the
 * twin's order, never fused; needs hot_math.cuh, included before this file) ---------------------
 * alpha = (*alpha_a * (alpha_b ? *alpha_b : 1)) / alpha_div, computed on the device from the
 * scales the operand kernels wrote (x * 1.0f == x, so HQ's alpha is s_w / b exactly). */
static __device__ __forceinline__ float hot_epilogue_alpha(const float *alpha_a, const float *alpha_b,
                                                           float alpha_div) {
  return HOT_DIV(HOT_MUL(*alpha_a, alpha_b ? *alpha_b : 1.0f), alpha_div);
}

/* factor(m) = row_scale ? row_scale[m] * alpha : alpha */
static __device__ __forceinline__ float hot_row_factor(const float *row_scale, int m, float alpha) {
  return row_scale ? HOT_MUL(row_scale[m], alpha) : alpha;
}

/* C[n], C[n + 1] of one output row (crow = &C[m * ldc]) = (float)acc * factor where they are
 * inside N: one 8-byte store when vec (ldc even and C 8-byte aligned) and both are inside, else
 * scalars. No overflow check here: the caller checks the whole row once (hot_row_amax_pair,
 * hot_row_range_check). */
static __device__ __forceinline__ void hot_store_pair(float *crow, int n, int N, int acc0, int acc1,
                                                      float factor, bool vec) {
  const float v0 = HOT_MUL(HOT_I2F(acc0), factor), v1 = HOT_MUL(HOT_I2F(acc1), factor);
  if (vec && n + 1 < N) {
    *reinterpret_cast<float2 *>(crow + n) = make_float2(v0, v1);
  } else {
    if (n < N) crow[n] = v0;
    if (n + 1 < N) crow[n + 1] = v1;
  }
}

/* ---- the overflow check of a stored output row (CONTRACT 19) --------------------------------
 * A thread that stores v = HOT_MUL(HOT_I2F(acc_n), factor) for its columns n of one output row
 * (one factor for the whole row) checks the row once: amax = max over its columns of
 * |HOT_I2F(acc_n)| (hot_row_amax_pair, from 0), then HOT_RANGE_CHECK(HOT_MUL(amax, |factor|))
 * (hot_row_range_check). It raises hot_range_flag exactly when one of the stored v is not finite:
 * HOT_I2F is exact or rounds monotonically and is always finite, and a round-to-nearest product
 * is symmetric in the signs and monotone in |a|, so HOT_MUL(amax, |factor|) is the largest |v|
 * of the row (and a NaN or infinite factor makes it NaN or infinite, as it makes every v, acc = 0
 * included). The columns past N that the thread holds but does not store must hold acc = 0 (every
 * GEMM path zero-fills the B rows past N: cp.async src-size 0, the TMA's out-of-bounds fill):
 * they never raise amax (|0| = 0) and change the check only when the factor is not finite, and
 * then column 0 of the same row, stored by some thread, is not finite either: the flag word ends
 * the same. Only for a factor that depends on the row alone; the segmented store-or-add checks
 * element by element. */
static __device__ __forceinline__ float hot_row_amax_pair(float amax, int acc0, int acc1) {
  return fmaxf(amax, fmaxf(fabsf(HOT_I2F(acc0)), fabsf(HOT_I2F(acc1))));
}

static __device__ __forceinline__ void hot_row_range_check(float amax, float factor) {
  HOT_RANGE_CHECK(HOT_MUL(amax, fabsf(factor)));
}

/* The segmented epilogue of CONTRACT 14 (HOT_SEGS = 1) for C[n], C[n + 1] of one output row
 * (crow = &C[m * ldc]): v = HOT_MUL(HOT_I2F(acc), factor) with factor = c_j of the segment just
 * finished; add = false (segment 0) stores v, add = true stores HOT_ADD(C_old, v) where C_old is
 * what this same thread stored there at the previous segment end (each output element has one
 * owner thread; its own earlier store is ordered before this load by program order). Same
 * vector / scalar choice as hot_store_pair. Every stored value is range-checked, element by
 * element (a sum of two finite values can overflow, so a row check cannot cover the adds; one
 * for the plain stores of segment 0 alone made the kernels larger, see docs/cold-start.md): a
 * running sum that is not finite stays so, hence this flags exactly the outputs whose final
 * value is not. */
static __device__ __forceinline__ void hot_store_or_add_pair(float *crow, int n, int N, int acc0,
                                                             int acc1, float factor, bool vec,
                                                             bool add) {
  float v0 = HOT_MUL(HOT_I2F(acc0), factor), v1 = HOT_MUL(HOT_I2F(acc1), factor);
  if (vec && n + 1 < N) {
    float2 *p = reinterpret_cast<float2 *>(crow + n);
    if (add) {
      const float2 old = *p;
      v0 = HOT_ADD(old.x, v0);
      v1 = HOT_ADD(old.y, v1);
    }
    HOT_RANGE_CHECK(v0);
    HOT_RANGE_CHECK(v1);
    *p = make_float2(v0, v1);
  } else {
    if (n < N) {
      if (add) v0 = HOT_ADD(crow[n], v0);
      HOT_RANGE_CHECK(v0);
      crow[n] = v0;
    }
    if (n + 1 < N) {
      if (add) v1 = HOT_ADD(crow[n + 1], v1);
      HOT_RANGE_CHECK(v1);
      crow[n + 1] = v1;
    }
  }
}

/* ---- hot_hla_x_f32_p64_r36_tri_k8 from templates/hla_project.cu */
#define HOT_KNAME hot_hla_x_f32_p64_r36_tri_k8
#define HOT_MODE 0
#define HOT_DTYPE 0
#define HOT_P 64
#define HOT_R 36
#define HOT_BITS 8
#define HOT_ROUND 0
#define HOT_ROWS 0,32,48,16,24,56,40,8,44,60,28,20,52,36,4,6,38,54,22,30,62,26,18,50,34,2,3,35,51,19,55,39,7,5,37,1
#define HOT_COLS 128
namespace hot_k0 {
#line 1 "templates/hla_project.cu"
/* @hot-params: HOT_KNAME HOT_MODE HOT_DTYPE HOT_P HOT_R HOT_BITS HOT_ROUND HOT_ROWS HOT_COLS */
/* hla_project.cu — HLA / ABC projection kernels (CONTRACT.md sections 4, 5 and 9-12):
 * per token block, the p-point FWHT down every column (fp32, CONTRACT.md 2 stage order), the gather of
 * the r selected natural rows of H_p, an 8-bit quantizer with one scale per tensor or per sample
 * (RTN for x^, SR or RTN for g^) and the codes stored TRANSPOSED for the g_w GEMM, one run of
 * group_k_pad codes per scale group. CPU twins: ref_hla_quant_x /
 * ref_hla_quant_g (templates/hla_project_ref.c).
 *
 * Parameters (the generator defines them; the defaults below let the file compile alone):
 *   HOT_KNAME  entry point name
 *   HOT_MODE   0 = x^ (role HOT_K_ABC_X), 1 = g^ (role HOT_K_HLA_G)
 *   HOT_ROUND  1 = stochastic rounding (g^ only: Philox tag = layer_id*16 + 2, idx = k*cols + c of
 *              the K x cols math tensor), 0 = round to nearest (x^ always; g^ when planned so)
 *   HOT_DTYPE  0 = f32, 1 = bf16, 2 = f16 input
 *   HOT_P      token block p (power of two, 1..1024; 1 = identity, paper_code on prime L)
 *   HOT_R      rank r (1..p)
 *   HOT_BITS   code bits (8 in every shipped recipe; 2..8 accepted)
 *   HOT_ROWS   the r selected natural rows of H_p, ascending sequency, comma-separated
 *   HOT_COLS   columns per block as the planner computed it (gen/kernels/hla.c), for the launch
 *              geometry; checked against HLA_COLS below (a build that defines HOT_GENERATED
 *              itself may leave it out)
 *
 * Entry (one signature for both modes):
 *   extern "C" __global__ void HOT_KNAME (const void *src, int T, int cols, int ld_src, int L,
 *       int layout, long long seg_len, long long segments, int k_real, int k_pad, int group_k,
 *       int group_k_pad, int groups, int per_sample, unsigned char *codes, int ld_codes,
 *       float *scale, unsigned int *amax_bits, const float *scale_in, float *math_out,
 *       int phase, unsigned long long seed, unsigned tag, unsigned step)
 *   src       x (T x I) or g_y (T x O), row-major, dtype HOT_DTYPE, row stride ld_src elements;
 *             cols = I or O. Only read; padded tokens are never materialized (read as zeros).
 *   L, layout plan T = B*L; layout 0 = sample (segment s = sample s, real tokens s*L + j for
 *             j < L), 1 = flat (one segment, real tokens j < T). seg_len = hla.seg_len,
 *             segments = hla.segments; block beta = blockIdx.x in [0, segments*seg_len/p).
 *   k_real    K = hla.k = blocks * r;  k_pad = hla.gemm.k_pad;  ld_codes = bytes per code row
 *             (k_pad). k_real and k_pad describe the whole buffer; the kernel places codes
 *             by the group values below (with groups = 1 they are the same numbers).
 *   group_k, group_k_pad, groups
 *             the plan's scale groups (CONTRACT.md 9): groups = 1 (group_k = k_real,
 *             group_k_pad = k_pad), or groups = segments > 1 (layout sample only: group j =
 *             segment j = sample j, group_k = K / groups math rows, group_k_pad >= group_k,
 *             k_pad = groups * group_k_pad). A token block lies in exactly one segment, so in
 *             one group: grp = segment when groups > 1, else 0.
 *   per_sample 1: THIS tensor's quantizer has one scale per sample (then groups == segments),
 *             0: one scale for the tensor (groups may still be > 1: the other operand is per
 *             sample; the codes are segmented all the same and the scale is replicated).
 *   codes     cols rows, column c of the math tensor is code row c; math row kk = beta*r + rho
 *             (rho: index into HOT_ROWS) goes to position (kk / group_k) * group_k_pad +
 *             kk % group_k = kk + grp * (group_k_pad - group_k); every other position of
 *             [0, k_pad) is 0.
 *   scale     `groups` floats out (s_x^ / s_g^): entry j = the scale of group j; per tensor, the
 *             one scale in every entry. Written in phase 1 by thread 0 of the CTA
 *             (first token block of group j, blockIdx.y = 0).
 *   amax_bits per_sample: `groups` words (word j = group j), else 1 word; zeroed by the caller
 *             before phase 0 (cuMemsetD32Async); phase 0 does atomicMax of the fp32 bits of |v|
 *             into its group's word (amax >= 0, so bit order = value order).
 *   scale_in  NULL, or per_sample ? `groups` floats : 1 float: phase 1 quantizes with the
 *             group's scale_in entry instead of hot_scale(amax) (SAWB: the scales from
 *             templates/sawb.cu, run with the same groups).
 *   math_out  NULL, or K x cols floats: phase 0 also writes the fp32 math tensor x^ / g^ in
 *             linear index order kk*cols + c (the input of templates/sawb.cu; a group is the
 *             contiguous run of group_k*cols elements).
 *   seed, tag, step  Philox key, tag, step (HOT_ROUND 1; ignored by HOT_ROUND 0); idx =
 *             kk*cols + c of the math tensor, independent of the groups.
 *
 * Phases (same grid for both, stream-ordered):
 *   0: transform, block max |v| -> atomicMax(amax_bits[per_sample ? grp : 0]); math_out when
 *      non-NULL. No codes.
 *   1: transform again (the input is re-read: an L2 hit for moderate sizes), s = scale_in ?
 *      scale_in[w] : hot_scale(amax_bits[w]) with w = per_sample ? grp : 0, quantize, store
 *      codes; the CTA of the first token block of group grp (blockIdx.y = 0) writes
 *      scale[grp] = s; the CTAs of the LAST token block of group grp also write zeros at
 *      positions [grp*group_k_pad + group_k, (grp+1)*group_k_pad) of their columns (groups =
 *      1: [k_real, k_pad)), so code buffers never need clearing.
 *   absmax:  memset(amax_bits) ; phase 0 ; phase 1 (scale_in = NULL)
 *   SAWB:    memset(amax_bits) ; phase 0 with math_out ; sawb.cu phase 0, 1 with groups =
 *            per_sample ? groups : 1 (reads amax_bits, writes s) ; phase 1 with scale_in = s
 *
 * Launch geometry:
 *   grid  = (hla.blocks, ceil(cols / HLA_COLS), 1),  block = (256, 1, 1), no dynamic smem;
 *   HLA_COLS = 256 for p <= 32, else 8192 / p (p = 64: 128, 128: 64, 256: 32, 512: 16,
 *   1024: 8), so the fp32 tile p x HLA_COLS is at most 32 KiB (static shared memory: at most
 *   32 KiB tile + r*HLA_COLS <= 8 KiB of codes + 2r bytes of rows + 32 B).
 *
 * Mapping. A CTA owns one token block and HLA_COLS consecutive columns; thread t of a pass works
 * on column c = id % HLA_COLS, so a warp's loads of one token row are consecutive columns
 * (coalesced: 128 B f32 / 64 B bf16 and f16 per warp per row). The FWHT of each column runs
 * in radix-8 passes: pass 0 loads 8 consecutive tokens per column into registers (zeros for
 * padded tokens and columns >= cols) and runs stages h = 1, 2, 4 there; each further pass
 * (bits 3-5, 6-8, 9) reads the 8 elements that differ in its three token bits from the shared
 * tile, runs its stages in registers and writes them back — stage order h = 1, 2, 4, ..., p/2
 * exactly as CONTRACT.md 2, so the bits equal the twin's. The gather reads the r selected rows; the
 * codes go through a small shared byte tile so that each column's r codes (and, in the group's
 * last block, its zero tail) are stored as one contiguous run of bytes: one warp per column, one
 * store request per 32-byte sector of the run (the run is not sector-aligned: a request that
 * straddled two columns' runs touched up to 4 sectors for 32 bytes).
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_hla_project
#define HOT_MODE 1
#define HOT_DTYPE 0
#define HOT_P 16
#define HOT_R 10
#define HOT_BITS 8
#define HOT_ROUND 1
#define HOT_ROWS 0, 8, 12, 4, 14, 10, 2, 3, 11, 1
#define HOT_COLS 256
#endif



#define HLA_THREADS 256
#define HLA_COLS (HOT_P <= 32 ? 256 : 8192 / HOT_P)
#ifdef HOT_COLS
static_assert(HOT_COLS == HLA_COLS, "HOT_COLS (the planner's grid.y divisor) != HLA_COLS");
#endif
#define HLA_QMAX ((1 << (HOT_BITS - 1)) - 1)
#define HLA_LP                                                                                  \
  (HOT_P >= 1024 ? 10 : HOT_P >= 512 ? 9 : HOT_P >= 256 ? 8 : HOT_P >= 128 ? 7 : HOT_P >= 64 ? 6 \
   : HOT_P >= 32 ? 5 : HOT_P >= 16 ? 4 : HOT_P >= 8 ? 3 : HOT_P >= 4 ? 2 : HOT_P >= 2 ? 1 : 0)
/* token bits handled by the pass starting at bit b (1 when the pass does not exist: keeps the
 * template arguments legal in branches that are compiled out) */
#define HLA_NB(b) (HLA_LP > (b) ? (HLA_LP - (b) < 3 ? HLA_LP - (b) : 3) : 1)
#define HLA_NB0 (HLA_LP < 3 ? HLA_LP : 3)
#define HLA_E0 (1 << HLA_NB0)
#define HLA_ITEMS0 (HOT_P * HLA_COLS / HLA_E0 / HLA_THREADS)

static_assert(HOT_MODE == 0 || HOT_MODE == 1, "HOT_MODE 0 (x^) or 1 (g^)");
static_assert(HOT_ROUND == 0 || HOT_ROUND == 1, "HOT_ROUND 0 (RTN) or 1 (SR)");
static_assert(HOT_ROUND == 0 || HOT_MODE == 1, "x^ has no random stream: HOT_ROUND 0");
static_assert(HOT_DTYPE >= 0 && HOT_DTYPE <= 2, "HOT_DTYPE 0 (f32), 1 (bf16) or 2 (f16)");
static_assert(HOT_P >= 1 && HOT_P <= 1024 && (HOT_P & (HOT_P - 1)) == 0,
              "p must be a power of two in [1, 1024]");
static_assert((1 << HLA_LP) == HOT_P, "log2 p");
static_assert(HOT_R >= 1 && HOT_R <= HOT_P, "rank in [1, p]");
static_assert(HOT_BITS >= 2 && HOT_BITS <= 8, "bits in [2, 8]");
static_assert(HLA_ITEMS0 >= 1 && HOT_P * HLA_COLS % (HLA_E0 * HLA_THREADS) == 0,
              "tile must split evenly into pass-0 items");

/* The selected natural rows of H_p (ascending sequency). */
__constant__ unsigned short hla_rows[HOT_R] = {HOT_ROWS};

/* Element off of src as fp32 (exact conversions of hot_math.cuh). */
static __device__ __forceinline__ float hla_load1(const void *__restrict__ src, long long off) {
  return hot_load_f32(src, off, HOT_DTYPE);
}

#if HOT_ROUND == 1
/* hot_rand_word without the dynamically indexed struct (which would live in local memory). */
static __device__ __forceinline__ unsigned hla_rand_word(unsigned long long seed, unsigned tag,
                                                         unsigned step, unsigned long long idx) {
  const unsigned long long b = idx >> 2;
  const hot_philox_out o = hot_philox4x32_10((unsigned)(b & 0xffffffffull), (unsigned)(b >> 32),
                                             tag, step, (unsigned)(seed & 0xffffffffull),
                                             (unsigned)(seed >> 32));
  const unsigned w = (unsigned)(idx & 3ull);
  return w == 0 ? o.v[0] : w == 1 ? o.v[1] : w == 2 ? o.v[2] : o.v[3];
}
#endif

/* Stages h = 1, 2, ..., E/2 of the E elements held by a thread (local index order). */
template <int E>
static __device__ __forceinline__ void hla_fwht_regs(float (&v)[E]) {
#pragma unroll
  for (int h = 1; h < E; h <<= 1) {
#pragma unroll
    for (int j = 0; j < E; ++j) {
      if (j & h) continue;
      const float a = v[j], b = v[j + h];
      v[j] = HOT_ADD(a, b);
      v[j + h] = HOT_SUB(a, b);
    }
  }
}

/* One radix-2^NB pass on the shared tile (p rows x HLA_COLS columns): stages h = 2^B0 ...
 * 2^(B0+NB-1). Item = (column, base token with bits B0 .. B0+NB-1 clear); items are disjoint,
 * so the pass is race-free between barriers. */
template <int B0, int NB>
static __device__ __forceinline__ void hla_pass(float *tile, int tid) {
  enum { E = 1 << NB, ITEMS = HOT_P * HLA_COLS / E / HLA_THREADS };
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int id = tid + it * HLA_THREADS;
    const int c = id % HLA_COLS, rest = id / HLA_COLS;
    const int base = ((rest >> B0) << (B0 + NB)) | (rest & ((1 << B0) - 1));
    float v[E];
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = tile[(base + (i << B0)) * HLA_COLS + c];
    hla_fwht_regs<E>(v);
#pragma unroll
    for (int i = 0; i < E; ++i) tile[(base + (i << B0)) * HLA_COLS + c] = v[i];
  }
}

extern "C" __global__ void __launch_bounds__(HLA_THREADS, 2) /* <= 128 registers: 2 CTAs per SM */
HOT_KNAME(const void *__restrict__ src, int T, int cols, int ld_src, int L, int layout,
          long long seg_len, long long segments, int k_real, int k_pad, int group_k,
          int group_k_pad, int groups, int per_sample, unsigned char *__restrict__ codes,
          int ld_codes, float *__restrict__ scale, unsigned int *__restrict__ amax_bits,
          const float *__restrict__ scale_in, float *__restrict__ math_out, int phase,
          unsigned long long seed, unsigned tag, unsigned step) {
  __shared__ __align__(16) float tile[HOT_P * HLA_COLS];
  __shared__ unsigned char qtile[HOT_R * HLA_COLS];
  __shared__ unsigned short rows_s[HOT_R];
  __shared__ float red[HLA_THREADS / 32];

  const int tid = (int)threadIdx.x;
  const long long per_seg = seg_len / HOT_P;
  const long long beta = (long long)blockIdx.x;
  if (beta >= segments * per_seg) return; /* whole CTA: no barrier is skipped by part of it */
  const long long seg = beta / per_seg, blk = beta % per_seg;
  const long long seg_real = layout == 1 ? (long long)T : (long long)L;
  const long long seg_base = layout == 1 ? 0ll : seg * (long long)L; /* token of position 0 */
  const long long pos0 = blk * HOT_P;                                /* first position */
  const int col0 = (int)blockIdx.y * HLA_COLS;
  const long long k0 = beta * HOT_R; /* first math row of this block */
  (void)k_real; /* the buffer's sizes; positions follow group_k and group_k_pad */
  (void)k_pad;

  for (int i = tid; i < HOT_R; i += HLA_THREADS) rows_s[i] = hla_rows[i];

  /* ---- pass 0: global -> registers (stages 1, 2, 4) -> shared tile ---------------------- */
  {
    float v[HLA_ITEMS0][HLA_E0];
#pragma unroll
    for (int it = 0; it < HLA_ITEMS0; ++it) { /* all loads first: memory-level parallelism */
      const int id = tid + it * HLA_THREADS;
      const int c = id % HLA_COLS, base = (id / HLA_COLS) * HLA_E0;
      const int col = col0 + c;
#pragma unroll
      for (int i = 0; i < HLA_E0; ++i) {
        const long long pos = pos0 + base + i;
        v[it][i] = (col < cols && pos < seg_real)
                       ? hla_load1(src, (seg_base + pos) * (long long)ld_src + col)
                       : 0.0f;
      }
    }
#pragma unroll
    for (int it = 0; it < HLA_ITEMS0; ++it) {
      const int id = tid + it * HLA_THREADS;
      const int c = id % HLA_COLS, base = (id / HLA_COLS) * HLA_E0;
      hla_fwht_regs<HLA_E0>(v[it]);
#pragma unroll
      for (int i = 0; i < HLA_E0; ++i) tile[(base + i) * HLA_COLS + c] = v[it][i];
    }
  }
  /* ---- passes over token bits 3-5, 6-8, 9 ----------------------------------------------- */
  if (HLA_LP > 3) {
    __syncthreads();
    hla_pass<3, HLA_NB(3)>(tile, tid);
  }
  if (HLA_LP > 6) {
    __syncthreads();
    hla_pass<6, HLA_NB(6)>(tile, tid);
  }
  if (HLA_LP > 9) {
    __syncthreads();
    hla_pass<9, HLA_NB(9)>(tile, tid);
  }
  __syncthreads(); /* the tile and rows_s are complete */

  /* scale group: segment j when groups > 1 (layout sample), else the one group (computed
   * here, after the transform, so that nothing of it is live across the passes) */
  const int grp = groups > 1 ? (int)(blockIdx.x / (unsigned)per_seg) : 0;
  const int word = per_sample ? grp : 0; /* amax word / scale_in entry of this block */

  if (phase == 0) {
    /* ---- amax (and the math tensor) over the gathered rows; c fastest: coalesced -------- */
    float amax = 0.0f;
    for (int id = tid; id < HOT_R * HLA_COLS; id += HLA_THREADS) {
      const int c = id % HLA_COLS, rho = id / HLA_COLS;
      const int col = col0 + c;
      if (col >= cols) continue;
      const float val = tile[(int)rows_s[rho] * HLA_COLS + c];
      amax = fmaxf(amax, fabsf(val));
      if (math_out) math_out[(k0 + rho) * (long long)cols + col] = val;
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, d));
    if ((tid & 31) == 0) red[tid >> 5] = amax;
    __syncthreads();
    if (tid == 0) {
      float m = red[0];
#pragma unroll
      for (int w = 1; w < HLA_THREADS / 32; ++w) m = fmaxf(m, red[w]);
      atomicMax(amax_bits + word, __float_as_uint(m));
    }
    return;
  }

  /* ---- phase 1: quantize into the byte tile (c fastest), then store runs of r codes ------ */
  const float s =
      scale_in ? scale_in[word] : hot_scale(__uint_as_float(amax_bits[word]), HOT_BITS);
  const int kb = (int)k0; /* K and k_pad fit an int (the launcher refuses more): int positions */
  const int g_first = grp * group_k;   /* first math row of the group */
  if (kb == g_first && blockIdx.y == 0 && tid == 0) scale[grp] = s;
  for (int id = tid; id < HOT_R * HLA_COLS; id += HLA_THREADS) {
    const int c = id % HLA_COLS, rho = id / HLA_COLS;
    const float val = tile[(int)rows_s[rho] * HLA_COLS + c];
#if HOT_ROUND == 1
    const unsigned long long idx =
        (unsigned long long)(k0 + rho) * (unsigned long long)cols + (unsigned long long)(col0 + c);
    const int q = hot_quant_sr(val, s, HLA_QMAX, hla_rand_word(seed, tag, step, idx));
#else
    const int q = hot_quant_rtn(val, s, HLA_QMAX);
#endif
    qtile[c * HOT_R + rho] = (unsigned char)q;
  }
#if HOT_ROUND == 0
  (void)seed; (void)tag; (void)step;
#endif
  __syncthreads();
  /* code position of math row k0: k0 + grp * (group_k_pad - group_k) */
  const int gap = group_k_pad - group_k;
  const int kc0 = kb + grp * gap;
  /* the last block of the group also zeroes the group's tail [group_k, group_k_pad), which
   * follows its r codes: one run of bytes per column */
  const int run = HOT_R + (kb + HOT_R == g_first + group_k ? gap : 0);
  const int lane = tid & 31;
  for (int c = tid >> 5; c < HLA_COLS; c += HLA_THREADS / 32) { /* one warp per column */
    const int col = col0 + c;
    if (col >= cols) break; /* warp-uniform */
    unsigned char *dst = codes + (long long)col * ld_codes + kc0;
    /* one request per 32-byte sector the run touches: lane l writes byte lo + l, lanes outside
     * the run repeat its nearest byte of this sector (same address, same value) */
    const int a = (int)((unsigned long long)dst & 31ull);
    for (int lo = -a; lo < run; lo += 32) {
      const int first = lo < 0 ? 0 : lo, last = lo + 31 < run ? lo + 31 : run - 1;
      const int rho = lo + lane < first ? first : (lo + lane > last ? last : lo + lane);
      dst[rho] = rho < HOT_R ? qtile[c * HOT_R + rho] : (unsigned char)0;
    }
  }
}
} /* namespace hot_k0 */
#undef HOT_KNAME
#undef HOT_MODE
#undef HOT_DTYPE
#undef HOT_P
#undef HOT_R
#undef HOT_BITS
#undef HOT_ROUND
#undef HOT_ROWS
#undef HOT_COLS
#undef HLA_THREADS
#undef HLA_COLS
#undef HLA_QMAX
#undef HLA_LP
#undef HLA_NB
#undef HLA_NB0
#undef HLA_E0
#undef HLA_ITEMS0

/* ---- hot_hq_g_f32_b16_k4_s8 from templates/hadamard_quant.cu */
#define HOT_KNAME hot_hq_g_f32_b16_k4_s8
#define HOT_OPERAND 0
#define HOT_DTYPE 0
#define HOT_B 16
#define HOT_BITS 4
#define HOT_CODES 0
#define HOT_ROUND 1
namespace hot_k1 {
#line 1 "templates/hadamard_quant.cu"
/* @hot-params: HOT_KNAME HOT_OPERAND HOT_DTYPE HOT_B HOT_BITS HOT_CODES HOT_ROUND */
/* hadamard_quant.cu — HQ operand kernels (CONTRACT.md section 3): block FWHT of size b along O, amax
 * (per row or per tensor), quantization (SR with the Philox stream or RTN for g', RTN for w'), int8
 * codes or packed int4 nibbles, and the scales. CPU twin: templates/hadamard_quant_ref.c.
 *
 * Parameters (the generator defines them; the defaults below let the file compile alone):
 *   HOT_KNAME    entry point name
 *   HOT_OPERAND  0 = g' (rows of g_y, T x O, rounding HOT_ROUND, scale per row, sample or tensor)
 *                1 = w' (columns of w, O x I, round to nearest, scale per tensor, stored I x k_pad)
 *   HOT_DTYPE    0 = f32, 1 = bf16, 2 = f16 input
 *   HOT_B        Hadamard block b (power of two, 1..256; 1 = no transform, paper_code on odd O)
 *   HOT_BITS     code bits (qmax = 2^(bits-1) - 1)
 *   HOT_CODES    0 = one int8 per code, 1 = packed int4 (element 2j in the low nibble of byte j)
 *   HOT_ROUND    1 = stochastic rounding (Philox, g' only), 0 = round to nearest (w' always; g'
 *                when the plan asks for it: seed/tag/step are then ignored)
 *
 * Mapping. A "line" is one row of g_y (operand 0) or one column of w (operand 1), transformed and
 * quantized along O. One warp owns one line; each lane holds 8 consecutive elements of a
 * 256-element chunk, so stages h = 1, 2, 4 run in registers and stages h = 8 ... b/2 run as warp
 * shuffles between lanes lane ^ (h / 8) — the stage order of CONTRACT.md section 2, so the bits equal
 * the CPU twin's. Lines of up to 4 chunks (O <= 1024) stay in registers between the amax and the quantization
 * (one pass over memory); longer lines reload their chunks (L2 hits). The number of 256-element
 * chunks, ceil(k_pad / 256), is a run-time value: one kernel serves every O.
 *   operand 0: block 256 = 8 warps = 8 rows; grid.x = ceil(T / 8). 16-byte loads when aligned,
 *     consecutive float4s of the warp's lanes, shuffled into place (hq_load8).
 *   operand 1: block 256 handles 32 columns x one 256-row slab of w through a transposing shared
 *     tile (coalesced loads along I; XOR-swizzled, HQ_TILE, so that neither its stores nor the
 *     transform's reads meet a bank conflict); grid = (ceil(I / 32), ceil(k_pad / 256)); a slab
 *     is a chunk.
 *
 * Phases (argument `phase`): 0 = amax only (atomicMax of the float bits into the group's word
 * amax_bits[row / group_rows], which the caller zeroes first); 1 = quantize with the group's scale
 * amax_bits[row / group_rows] -> s; 2 = per-row scale, one launch (operand 0 only).
 * Groups (operand 0): group_rows = rows gives one scale per tensor (one word), group_rows = L
 * one per sample (B words: a segmented amax); every row stores its group's scale in scales[row].
 * Operand 1 has one group (the tensor) and ignores group_rows.
 * SAWB (operand 1, hq.w.rule = sawb): phase 0 with math_out != NULL also writes w' in math
 * layout (o_pad x I floats, linear idx o*I + i); templates/sawb.cu (n = o_pad*I) turns it and
 * amax_bits into s_w; phase 1 with scale_in = &s_w quantizes with it. Operand 0 ignores both.
 * Codes are written for every position in [0, k_pad): zeros beyond O, so code buffers need no
 * clearing.
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_hq_standalone
#define HOT_OPERAND 0
#define HOT_DTYPE 0
#define HOT_B 16
#define HOT_BITS 4
#define HOT_CODES 1
#define HOT_ROUND 1
#endif



#define HQ_LANE_ELEMS 8
#define HQ_CHUNK 256
#define HQ_REG_CHUNKS 4 /* kept in registers: 64 registers per thread, a short NVRTC compile */
#define HQ_QMAX ((1 << (HOT_BITS - 1)) - 1)
#define HQ_TILE_COLS 32
/* The w' tile: 32 columns of 256 floats; element (col, r) sits at HQ_TILE(col, r), r's low five
 * bits XORed with col ^ (r / 8): the loads' stores (32 columns, one r) and the transform's reads
 * (one column, lane l reading r = 8 l + j) each hit 32 distinct banks. */
#define HQ_TILE(col, r) ((col) * HQ_CHUNK + ((r) ^ (((col) ^ ((r) >> 3)) & 31)))

static_assert(HOT_B >= 1 && HOT_B <= 256 && (HOT_B & (HOT_B - 1)) == 0, "b must be a power of two in [1, 256] (1: the paper code's shrinking rule left no transform)");
static_assert(HOT_BITS >= 2 && HOT_BITS <= 8, "bits in [2, 8]");
static_assert(HOT_CODES == 0 || HOT_BITS <= 4, "packed int4 codes need bits <= 4");
static_assert(HOT_ROUND == 0 || HOT_ROUND == 1, "HOT_ROUND 0 (RTN) or 1 (SR)");
static_assert(HOT_ROUND == 0 || HOT_OPERAND == 0, "w' has no random stream: HOT_ROUND 0");

/* Loads element e of line `line` as f32 (0 beyond the real length). */
static __device__ __forceinline__ float hq_load1(const void *src, long long off) {
  return hot_load_f32(src, off, HOT_DTYPE);
}

/* Eight consecutive elements [c, c + 8) of a row of length n starting at row_off (0 beyond n),
 * c = chunk start + lane * 8. A warp collective: every lane of the warp calls it for the same
 * chunk. f32: the lanes load the chunk's two 128-element halves as consecutive float4s (lane l:
 * elements 4 l .. 4 l + 3 of each half, 16 sectors per 512-byte request: a lane's own 32 bytes
 * as two float4s would touch 32), then take elements 8 l .. 8 l + 7 (float4s 2 l and 2 l + 1 of
 * the chunk, held by lanes 2 l and 2 l + 1 mod 32 in half l / 16) by shuffles. bf16/f16: one
 * 16-byte load of the lane's own 8 elements (consecutive lanes, already coalesced). */
static __device__ __forceinline__ void hq_load8(const void *src, long long row_off, int c, int n,
                                                bool vec_ok, float v[8]) {
#if HOT_DTYPE == 0
  const int lane = threadIdx.x & 31;
  float h[2][4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int q = c - lane * 8 + half * (HQ_CHUNK / 2) + lane * 4;
    if (vec_ok && q + 4 <= n) {
      const float4 a = __ldg((const float4 *)((const float *)src + row_off + q));
      h[half][0] = a.x; h[half][1] = a.y; h[half][2] = a.z; h[half][3] = a.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) h[half][i] = (q + i < n) ? hq_load1(src, row_off + q + i) : 0.0f;
    }
  }
  const int s0 = (2 * lane) & 31;
  const bool upper = lane >= 16;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float a0 = __shfl_sync(0xffffffffu, h[0][i], s0);
    const float a1 = __shfl_sync(0xffffffffu, h[1][i], s0);
    const float b0 = __shfl_sync(0xffffffffu, h[0][i], s0 + 1);
    const float b1 = __shfl_sync(0xffffffffu, h[1][i], s0 + 1);
    v[i] = upper ? a1 : a0;
    v[4 + i] = upper ? b1 : b0;
  }
#else
  if (vec_ok && c + 8 <= n) {
    uint4 a = __ldg((const uint4 *)((const unsigned short *)src + row_off + c));
    unsigned w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if HOT_DTYPE == 1
      v[2 * i] = hot_bf16_to_f32((unsigned short)(w[i] & 0xffffu));
      v[2 * i + 1] = hot_bf16_to_f32((unsigned short)(w[i] >> 16));
#else
      v[2 * i] = hot_f16_to_f32((unsigned short)(w[i] & 0xffffu));
      v[2 * i + 1] = hot_f16_to_f32((unsigned short)(w[i] >> 16));
#endif
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = (c + i < n) ? hq_load1(src, row_off + c + i) : 0.0f;
  }
#endif
}

/* The block FWHT of one chunk held as 8 elements per lane, in CONTRACT.md stage order. */
static __device__ __forceinline__ void hq_fwht_chunk(float v[8], int lane) {
#pragma unroll
  for (int h = 1; h < HOT_B && h < HQ_LANE_ELEMS; h <<= 1) {
#pragma unroll
    for (int j = 0; j < HQ_LANE_ELEMS; ++j) {
      if (j & h) continue;
      float a = v[j], b = v[j + h];
      v[j] = HOT_ADD(a, b);
      v[j + h] = HOT_SUB(a, b);
    }
  }
#pragma unroll
  for (int h = HQ_LANE_ELEMS; h < HOT_B; h <<= 1) {
    int d = h / HQ_LANE_ELEMS;
    bool upper = (lane & d) != 0;
#pragma unroll
    for (int j = 0; j < HQ_LANE_ELEMS; ++j) {
      float other = __shfl_xor_sync(0xffffffffu, v[j], d);
      /* lower half: a + b (a = mine); upper half: a - b (a = other, b = mine) */
      v[j] = upper ? HOT_SUB(other, v[j]) : HOT_ADD(v[j], other);
    }
  }
}

static __device__ __forceinline__ float hq_warp_max(float m) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
  return m;
}

static __device__ __forceinline__ float hq_chunk_amax(const float v[8]) {
  float m = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) m = fmaxf(m, fabsf(v[j]));
  return m;
}

/* Quantizes 8 elements and stores their codes at position c of a code row. idx0 is the Philox
 * index of element c (line * o_pad + c for g'). */
static __device__ __forceinline__ void hq_store8(unsigned char *code_row, int c, const float v[8],
                                                 float s, unsigned long long idx0,
                                                 unsigned long long seed, unsigned tag,
                                                 unsigned step) {
  int q[8];
#if HOT_ROUND == 1
  hot_philox_out r;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    unsigned long long idx = idx0 + (unsigned long long)j;
    if (j == 0 || (idx & 3ull) == 0) {
      unsigned long long b = idx >> 2;
      r = hot_philox4x32_10((unsigned)(b & 0xffffffffull), (unsigned)(b >> 32), tag, step,
                            (unsigned)(seed & 0xffffffffull), (unsigned)(seed >> 32));
    }
    q[j] = hot_quant_sr(v[j], s, HQ_QMAX, r.v[idx & 3ull]);
  }
#else
  (void)idx0; (void)seed; (void)tag; (void)step;
#pragma unroll
  for (int j = 0; j < 8; ++j) q[j] = hot_quant_rtn(v[j], s, HQ_QMAX);
#endif
#if HOT_CODES == 1
  unsigned packed = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) packed |= ((unsigned)q[j] & 0xfu) << (4 * j);
  *(unsigned *)(code_row + c / 2) = packed;
#else
  unsigned lo = 0, hi = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    lo |= ((unsigned)q[j] & 0xffu) << (8 * j);
    hi |= ((unsigned)q[j + 4] & 0xffu) << (8 * j);
  }
  *(uint2 *)(code_row + c) = make_uint2(lo, hi);
#endif
}

#if HOT_OPERAND == 0
/* g': rows of g_y (rows x cols, leading dimension ld_src elements). o_pad = cols rounded up to b;
 * codes rows hold ceil(k_pad / 256) * 256 >= k_pad positions of which [0, k_pad) are stored
 * (ld_codes bytes per row). scales: one per row. */
extern "C" __global__ void __launch_bounds__(256)
HOT_KNAME(const void *__restrict__ src, int rows, int cols, int ld_src, int o_pad, int k_pad,
          unsigned char *__restrict__ codes, int ld_codes, float *__restrict__ scales,
          unsigned int *__restrict__ amax_bits, int group_rows, const float *__restrict__ scale_in,
          float *__restrict__ math_out, int phase, unsigned long long seed, unsigned tag,
          unsigned step) {
  (void)scale_in; (void)math_out; /* SAWB applies to w' only (CONTRACT 11) */
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const long long row_off = (long long)row * ld_src;
#if HOT_DTYPE == 0
  const bool vec_ok = ((ld_src & 3) == 0) && ((((unsigned long long)src) & 15ull) == 0);
#else
  const bool vec_ok = ((ld_src & 7) == 0) && ((((unsigned long long)src) & 15ull) == 0);
#endif
  const int chunks = (k_pad + HQ_CHUNK - 1) / HQ_CHUNK; /* warp-uniform */
  float cache[HQ_REG_CHUNKS][8];
  float amax = 0.0f;
  if (phase != 1) {
#pragma unroll
    for (int k = 0; k < HQ_REG_CHUNKS; ++k) {
      if (k < chunks) {
        float v[8];
        hq_load8(src, row_off, k * HQ_CHUNK + lane * 8, cols, vec_ok, v);
        hq_fwht_chunk(v, lane);
        amax = fmaxf(amax, hq_chunk_amax(v));
#pragma unroll
        for (int j = 0; j < 8; ++j) cache[k][j] = v[j];
      }
    }
    for (int k = HQ_REG_CHUNKS; k < chunks; ++k) { /* long lines: transformed twice */
      float v[8];
      hq_load8(src, row_off, k * HQ_CHUNK + lane * 8, cols, vec_ok, v);
      hq_fwht_chunk(v, lane);
      amax = fmaxf(amax, hq_chunk_amax(v));
    }
    amax = hq_warp_max(amax);
    if (phase == 0) {
      if (lane == 0) atomicMax(amax_bits + row / group_rows, __float_as_uint(amax));
      return;
    }
  } else {
    amax = __uint_as_float(amax_bits[row / group_rows]);
  }
  const float s = hot_scale(amax, HOT_BITS);
  if (lane == 0) scales[row] = s;
  unsigned char *code_row = codes + (long long)row * ld_codes;
  const unsigned long long idx_row = (unsigned long long)row * (unsigned long long)o_pad;
  if (phase != 1) {
#pragma unroll
    for (int k = 0; k < HQ_REG_CHUNKS; ++k) {
      const int c = k * HQ_CHUNK + lane * 8;
      if (k < chunks && c < k_pad)
        hq_store8(code_row, c, cache[k], s, idx_row + (unsigned long long)c, seed, tag, step);
    }
  }
  for (int k = phase != 1 ? HQ_REG_CHUNKS : 0; k < chunks; ++k) {
    const int c = k * HQ_CHUNK + lane * 8;
    float v[8]; /* every lane takes part: the transform shuffles across the warp */
    hq_load8(src, row_off, c, cols, vec_ok, v);
    hq_fwht_chunk(v, lane);
    if (c < k_pad) hq_store8(code_row, c, v, s, idx_row + (unsigned long long)c, seed, tag, step);
  }
}
#else
/* w': w is rows x cols = O x I (leading dimension ld_src); lines are its columns. Codes are
 * stored transposed: cols rows of ld_codes bytes, positions [0, k_pad). scales[0] = s_w. */
extern "C" __global__ void __launch_bounds__(256)
HOT_KNAME(const void *__restrict__ src, int rows, int cols, int ld_src, int o_pad, int k_pad,
          unsigned char *__restrict__ codes, int ld_codes, float *__restrict__ scales,
          unsigned int *__restrict__ amax_bits, int group_rows, const float *__restrict__ scale_in,
          float *__restrict__ math_out, int phase, unsigned long long seed, unsigned tag,
          unsigned step) {
  (void)group_rows; /* w' has one scale */
  __shared__ float tile[HQ_TILE_COLS * HQ_CHUNK];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int col0 = blockIdx.x * HQ_TILE_COLS;
  const int row0 = blockIdx.y * HQ_CHUNK;
  /* Coalesced load of the 256 x 32 slab (rows row0.., columns col0..), transposed into tile. */
  for (int r = warp; r < HQ_CHUNK; r += 8) {
    const int o = row0 + r, i = col0 + lane;
    tile[HQ_TILE(lane, r)] = (o < rows && i < cols) ? hq_load1(src, (long long)o * ld_src + i) : 0.0f;
  }
  __syncthreads();
  float amax = 0.0f;
  float s = 0.0f;
  if (phase == 1) s = scale_in ? *scale_in : hot_scale(__uint_as_float(*amax_bits), HOT_BITS);
  if (phase == 1 && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) scales[0] = s;
  /* Each warp transforms 4 of the 32 columns. */
#pragma unroll
  for (int cc = 0; cc < HQ_TILE_COLS / 8; ++cc) {
    const int lc = warp * (HQ_TILE_COLS / 8) + cc;
    const int i = col0 + lc;
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = tile[HQ_TILE(lc, lane * 8 + j)];
    hq_fwht_chunk(v, lane);
    if (phase == 0) {
      amax = fmaxf(amax, hq_chunk_amax(v));
      if (math_out) { /* back into this warp's own tile column, stored coalesced below */
#pragma unroll
        for (int j = 0; j < 8; ++j) tile[HQ_TILE(lc, lane * 8 + j)] = v[j];
      }
    } else if (i < cols) {
      const int c = row0 + lane * 8;
      if (c < k_pad) hq_store8(codes + (long long)i * ld_codes, c, v, s, 0ull, seed, tag, step);
    }
  }
  if (phase == 0) {
    amax = hq_warp_max(amax);
    if (lane == 0) atomicMax(amax_bits, __float_as_uint(amax));
    if (math_out) { /* w' in math layout o_pad x I (linear idx o*I + i), rows < o_pad only */
      __syncthreads();
      for (int r = warp; r < HQ_CHUNK; r += 8) {
        const int o = row0 + r, i = col0 + lane;
        if (o < o_pad && i < cols) math_out[(long long)o * cols + i] = tile[HQ_TILE(lane, r)];
      }
    }
  }
}
#endif
} /* namespace hot_k1 */
#undef HOT_KNAME
#undef HOT_OPERAND
#undef HOT_DTYPE
#undef HOT_B
#undef HOT_BITS
#undef HOT_CODES
#undef HOT_ROUND
#undef HQ_LANE_ELEMS
#undef HQ_CHUNK
#undef HQ_REG_CHUNKS
#undef HQ_QMAX
#undef HQ_TILE_COLS
#undef HQ_TILE

/* ---- hot_hq_w_f32_b16_k4_s8 from templates/hadamard_quant.cu */
#define HOT_KNAME hot_hq_w_f32_b16_k4_s8
#define HOT_OPERAND 1
#define HOT_DTYPE 0
#define HOT_B 16
#define HOT_BITS 4
#define HOT_CODES 0
#define HOT_ROUND 0
namespace hot_k2 {
#line 1 "templates/hadamard_quant.cu"
/* @hot-params: HOT_KNAME HOT_OPERAND HOT_DTYPE HOT_B HOT_BITS HOT_CODES HOT_ROUND */
/* hadamard_quant.cu — HQ operand kernels (CONTRACT.md section 3): block FWHT of size b along O, amax
 * (per row or per tensor), quantization (SR with the Philox stream or RTN for g', RTN for w'), int8
 * codes or packed int4 nibbles, and the scales. CPU twin: templates/hadamard_quant_ref.c.
 *
 * Parameters (the generator defines them; the defaults below let the file compile alone):
 *   HOT_KNAME    entry point name
 *   HOT_OPERAND  0 = g' (rows of g_y, T x O, rounding HOT_ROUND, scale per row, sample or tensor)
 *                1 = w' (columns of w, O x I, round to nearest, scale per tensor, stored I x k_pad)
 *   HOT_DTYPE    0 = f32, 1 = bf16, 2 = f16 input
 *   HOT_B        Hadamard block b (power of two, 1..256; 1 = no transform, paper_code on odd O)
 *   HOT_BITS     code bits (qmax = 2^(bits-1) - 1)
 *   HOT_CODES    0 = one int8 per code, 1 = packed int4 (element 2j in the low nibble of byte j)
 *   HOT_ROUND    1 = stochastic rounding (Philox, g' only), 0 = round to nearest (w' always; g'
 *                when the plan asks for it: seed/tag/step are then ignored)
 *
 * Mapping. A "line" is one row of g_y (operand 0) or one column of w (operand 1), transformed and
 * quantized along O. One warp owns one line; each lane holds 8 consecutive elements of a
 * 256-element chunk, so stages h = 1, 2, 4 run in registers and stages h = 8 ... b/2 run as warp
 * shuffles between lanes lane ^ (h / 8) — the stage order of CONTRACT.md section 2, so the bits equal
 * the CPU twin's. Lines of up to 4 chunks (O <= 1024) stay in registers between the amax and the quantization
 * (one pass over memory); longer lines reload their chunks (L2 hits). The number of 256-element
 * chunks, ceil(k_pad / 256), is a run-time value: one kernel serves every O.
 *   operand 0: block 256 = 8 warps = 8 rows; grid.x = ceil(T / 8). 16-byte loads when aligned,
 *     consecutive float4s of the warp's lanes, shuffled into place (hq_load8).
 *   operand 1: block 256 handles 32 columns x one 256-row slab of w through a transposing shared
 *     tile (coalesced loads along I; XOR-swizzled, HQ_TILE, so that neither its stores nor the
 *     transform's reads meet a bank conflict); grid = (ceil(I / 32), ceil(k_pad / 256)); a slab
 *     is a chunk.
 *
 * Phases (argument `phase`): 0 = amax only (atomicMax of the float bits into the group's word
 * amax_bits[row / group_rows], which the caller zeroes first); 1 = quantize with the group's scale
 * amax_bits[row / group_rows] -> s; 2 = per-row scale, one launch (operand 0 only).
 * Groups (operand 0): group_rows = rows gives one scale per tensor (one word), group_rows = L
 * one per sample (B words: a segmented amax); every row stores its group's scale in scales[row].
 * Operand 1 has one group (the tensor) and ignores group_rows.
 * SAWB (operand 1, hq.w.rule = sawb): phase 0 with math_out != NULL also writes w' in math
 * layout (o_pad x I floats, linear idx o*I + i); templates/sawb.cu (n = o_pad*I) turns it and
 * amax_bits into s_w; phase 1 with scale_in = &s_w quantizes with it. Operand 0 ignores both.
 * Codes are written for every position in [0, k_pad): zeros beyond O, so code buffers need no
 * clearing.
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_hq_standalone
#define HOT_OPERAND 0
#define HOT_DTYPE 0
#define HOT_B 16
#define HOT_BITS 4
#define HOT_CODES 1
#define HOT_ROUND 1
#endif



#define HQ_LANE_ELEMS 8
#define HQ_CHUNK 256
#define HQ_REG_CHUNKS 4 /* kept in registers: 64 registers per thread, a short NVRTC compile */
#define HQ_QMAX ((1 << (HOT_BITS - 1)) - 1)
#define HQ_TILE_COLS 32
/* The w' tile: 32 columns of 256 floats; element (col, r) sits at HQ_TILE(col, r), r's low five
 * bits XORed with col ^ (r / 8): the loads' stores (32 columns, one r) and the transform's reads
 * (one column, lane l reading r = 8 l + j) each hit 32 distinct banks. */
#define HQ_TILE(col, r) ((col) * HQ_CHUNK + ((r) ^ (((col) ^ ((r) >> 3)) & 31)))

static_assert(HOT_B >= 1 && HOT_B <= 256 && (HOT_B & (HOT_B - 1)) == 0, "b must be a power of two in [1, 256] (1: the paper code's shrinking rule left no transform)");
static_assert(HOT_BITS >= 2 && HOT_BITS <= 8, "bits in [2, 8]");
static_assert(HOT_CODES == 0 || HOT_BITS <= 4, "packed int4 codes need bits <= 4");
static_assert(HOT_ROUND == 0 || HOT_ROUND == 1, "HOT_ROUND 0 (RTN) or 1 (SR)");
static_assert(HOT_ROUND == 0 || HOT_OPERAND == 0, "w' has no random stream: HOT_ROUND 0");

/* Loads element e of line `line` as f32 (0 beyond the real length). */
static __device__ __forceinline__ float hq_load1(const void *src, long long off) {
  return hot_load_f32(src, off, HOT_DTYPE);
}

/* Eight consecutive elements [c, c + 8) of a row of length n starting at row_off (0 beyond n),
 * c = chunk start + lane * 8. A warp collective: every lane of the warp calls it for the same
 * chunk. f32: the lanes load the chunk's two 128-element halves as consecutive float4s (lane l:
 * elements 4 l .. 4 l + 3 of each half, 16 sectors per 512-byte request: a lane's own 32 bytes
 * as two float4s would touch 32), then take elements 8 l .. 8 l + 7 (float4s 2 l and 2 l + 1 of
 * the chunk, held by lanes 2 l and 2 l + 1 mod 32 in half l / 16) by shuffles. bf16/f16: one
 * 16-byte load of the lane's own 8 elements (consecutive lanes, already coalesced). */
static __device__ __forceinline__ void hq_load8(const void *src, long long row_off, int c, int n,
                                                bool vec_ok, float v[8]) {
#if HOT_DTYPE == 0
  const int lane = threadIdx.x & 31;
  float h[2][4];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int q = c - lane * 8 + half * (HQ_CHUNK / 2) + lane * 4;
    if (vec_ok && q + 4 <= n) {
      const float4 a = __ldg((const float4 *)((const float *)src + row_off + q));
      h[half][0] = a.x; h[half][1] = a.y; h[half][2] = a.z; h[half][3] = a.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) h[half][i] = (q + i < n) ? hq_load1(src, row_off + q + i) : 0.0f;
    }
  }
  const int s0 = (2 * lane) & 31;
  const bool upper = lane >= 16;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float a0 = __shfl_sync(0xffffffffu, h[0][i], s0);
    const float a1 = __shfl_sync(0xffffffffu, h[1][i], s0);
    const float b0 = __shfl_sync(0xffffffffu, h[0][i], s0 + 1);
    const float b1 = __shfl_sync(0xffffffffu, h[1][i], s0 + 1);
    v[i] = upper ? a1 : a0;
    v[4 + i] = upper ? b1 : b0;
  }
#else
  if (vec_ok && c + 8 <= n) {
    uint4 a = __ldg((const uint4 *)((const unsigned short *)src + row_off + c));
    unsigned w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if HOT_DTYPE == 1
      v[2 * i] = hot_bf16_to_f32((unsigned short)(w[i] & 0xffffu));
      v[2 * i + 1] = hot_bf16_to_f32((unsigned short)(w[i] >> 16));
#else
      v[2 * i] = hot_f16_to_f32((unsigned short)(w[i] & 0xffffu));
      v[2 * i + 1] = hot_f16_to_f32((unsigned short)(w[i] >> 16));
#endif
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = (c + i < n) ? hq_load1(src, row_off + c + i) : 0.0f;
  }
#endif
}

/* The block FWHT of one chunk held as 8 elements per lane, in CONTRACT.md stage order. */
static __device__ __forceinline__ void hq_fwht_chunk(float v[8], int lane) {
#pragma unroll
  for (int h = 1; h < HOT_B && h < HQ_LANE_ELEMS; h <<= 1) {
#pragma unroll
    for (int j = 0; j < HQ_LANE_ELEMS; ++j) {
      if (j & h) continue;
      float a = v[j], b = v[j + h];
      v[j] = HOT_ADD(a, b);
      v[j + h] = HOT_SUB(a, b);
    }
  }
#pragma unroll
  for (int h = HQ_LANE_ELEMS; h < HOT_B; h <<= 1) {
    int d = h / HQ_LANE_ELEMS;
    bool upper = (lane & d) != 0;
#pragma unroll
    for (int j = 0; j < HQ_LANE_ELEMS; ++j) {
      float other = __shfl_xor_sync(0xffffffffu, v[j], d);
      /* lower half: a + b (a = mine); upper half: a - b (a = other, b = mine) */
      v[j] = upper ? HOT_SUB(other, v[j]) : HOT_ADD(v[j], other);
    }
  }
}

static __device__ __forceinline__ float hq_warp_max(float m) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
  return m;
}

static __device__ __forceinline__ float hq_chunk_amax(const float v[8]) {
  float m = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) m = fmaxf(m, fabsf(v[j]));
  return m;
}

/* Quantizes 8 elements and stores their codes at position c of a code row. idx0 is the Philox
 * index of element c (line * o_pad + c for g'). */
static __device__ __forceinline__ void hq_store8(unsigned char *code_row, int c, const float v[8],
                                                 float s, unsigned long long idx0,
                                                 unsigned long long seed, unsigned tag,
                                                 unsigned step) {
  int q[8];
#if HOT_ROUND == 1
  hot_philox_out r;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    unsigned long long idx = idx0 + (unsigned long long)j;
    if (j == 0 || (idx & 3ull) == 0) {
      unsigned long long b = idx >> 2;
      r = hot_philox4x32_10((unsigned)(b & 0xffffffffull), (unsigned)(b >> 32), tag, step,
                            (unsigned)(seed & 0xffffffffull), (unsigned)(seed >> 32));
    }
    q[j] = hot_quant_sr(v[j], s, HQ_QMAX, r.v[idx & 3ull]);
  }
#else
  (void)idx0; (void)seed; (void)tag; (void)step;
#pragma unroll
  for (int j = 0; j < 8; ++j) q[j] = hot_quant_rtn(v[j], s, HQ_QMAX);
#endif
#if HOT_CODES == 1
  unsigned packed = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) packed |= ((unsigned)q[j] & 0xfu) << (4 * j);
  *(unsigned *)(code_row + c / 2) = packed;
#else
  unsigned lo = 0, hi = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    lo |= ((unsigned)q[j] & 0xffu) << (8 * j);
    hi |= ((unsigned)q[j + 4] & 0xffu) << (8 * j);
  }
  *(uint2 *)(code_row + c) = make_uint2(lo, hi);
#endif
}

#if HOT_OPERAND == 0
/* g': rows of g_y (rows x cols, leading dimension ld_src elements). o_pad = cols rounded up to b;
 * codes rows hold ceil(k_pad / 256) * 256 >= k_pad positions of which [0, k_pad) are stored
 * (ld_codes bytes per row). scales: one per row. */
extern "C" __global__ void __launch_bounds__(256)
HOT_KNAME(const void *__restrict__ src, int rows, int cols, int ld_src, int o_pad, int k_pad,
          unsigned char *__restrict__ codes, int ld_codes, float *__restrict__ scales,
          unsigned int *__restrict__ amax_bits, int group_rows, const float *__restrict__ scale_in,
          float *__restrict__ math_out, int phase, unsigned long long seed, unsigned tag,
          unsigned step) {
  (void)scale_in; (void)math_out; /* SAWB applies to w' only (CONTRACT 11) */
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const long long row_off = (long long)row * ld_src;
#if HOT_DTYPE == 0
  const bool vec_ok = ((ld_src & 3) == 0) && ((((unsigned long long)src) & 15ull) == 0);
#else
  const bool vec_ok = ((ld_src & 7) == 0) && ((((unsigned long long)src) & 15ull) == 0);
#endif
  const int chunks = (k_pad + HQ_CHUNK - 1) / HQ_CHUNK; /* warp-uniform */
  float cache[HQ_REG_CHUNKS][8];
  float amax = 0.0f;
  if (phase != 1) {
#pragma unroll
    for (int k = 0; k < HQ_REG_CHUNKS; ++k) {
      if (k < chunks) {
        float v[8];
        hq_load8(src, row_off, k * HQ_CHUNK + lane * 8, cols, vec_ok, v);
        hq_fwht_chunk(v, lane);
        amax = fmaxf(amax, hq_chunk_amax(v));
#pragma unroll
        for (int j = 0; j < 8; ++j) cache[k][j] = v[j];
      }
    }
    for (int k = HQ_REG_CHUNKS; k < chunks; ++k) { /* long lines: transformed twice */
      float v[8];
      hq_load8(src, row_off, k * HQ_CHUNK + lane * 8, cols, vec_ok, v);
      hq_fwht_chunk(v, lane);
      amax = fmaxf(amax, hq_chunk_amax(v));
    }
    amax = hq_warp_max(amax);
    if (phase == 0) {
      if (lane == 0) atomicMax(amax_bits + row / group_rows, __float_as_uint(amax));
      return;
    }
  } else {
    amax = __uint_as_float(amax_bits[row / group_rows]);
  }
  const float s = hot_scale(amax, HOT_BITS);
  if (lane == 0) scales[row] = s;
  unsigned char *code_row = codes + (long long)row * ld_codes;
  const unsigned long long idx_row = (unsigned long long)row * (unsigned long long)o_pad;
  if (phase != 1) {
#pragma unroll
    for (int k = 0; k < HQ_REG_CHUNKS; ++k) {
      const int c = k * HQ_CHUNK + lane * 8;
      if (k < chunks && c < k_pad)
        hq_store8(code_row, c, cache[k], s, idx_row + (unsigned long long)c, seed, tag, step);
    }
  }
  for (int k = phase != 1 ? HQ_REG_CHUNKS : 0; k < chunks; ++k) {
    const int c = k * HQ_CHUNK + lane * 8;
    float v[8]; /* every lane takes part: the transform shuffles across the warp */
    hq_load8(src, row_off, c, cols, vec_ok, v);
    hq_fwht_chunk(v, lane);
    if (c < k_pad) hq_store8(code_row, c, v, s, idx_row + (unsigned long long)c, seed, tag, step);
  }
}
#else
/* w': w is rows x cols = O x I (leading dimension ld_src); lines are its columns. Codes are
 * stored transposed: cols rows of ld_codes bytes, positions [0, k_pad). scales[0] = s_w. */
extern "C" __global__ void __launch_bounds__(256)
HOT_KNAME(const void *__restrict__ src, int rows, int cols, int ld_src, int o_pad, int k_pad,
          unsigned char *__restrict__ codes, int ld_codes, float *__restrict__ scales,
          unsigned int *__restrict__ amax_bits, int group_rows, const float *__restrict__ scale_in,
          float *__restrict__ math_out, int phase, unsigned long long seed, unsigned tag,
          unsigned step) {
  (void)group_rows; /* w' has one scale */
  __shared__ float tile[HQ_TILE_COLS * HQ_CHUNK];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int col0 = blockIdx.x * HQ_TILE_COLS;
  const int row0 = blockIdx.y * HQ_CHUNK;
  /* Coalesced load of the 256 x 32 slab (rows row0.., columns col0..), transposed into tile. */
  for (int r = warp; r < HQ_CHUNK; r += 8) {
    const int o = row0 + r, i = col0 + lane;
    tile[HQ_TILE(lane, r)] = (o < rows && i < cols) ? hq_load1(src, (long long)o * ld_src + i) : 0.0f;
  }
  __syncthreads();
  float amax = 0.0f;
  float s = 0.0f;
  if (phase == 1) s = scale_in ? *scale_in : hot_scale(__uint_as_float(*amax_bits), HOT_BITS);
  if (phase == 1 && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) scales[0] = s;
  /* Each warp transforms 4 of the 32 columns. */
#pragma unroll
  for (int cc = 0; cc < HQ_TILE_COLS / 8; ++cc) {
    const int lc = warp * (HQ_TILE_COLS / 8) + cc;
    const int i = col0 + lc;
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = tile[HQ_TILE(lc, lane * 8 + j)];
    hq_fwht_chunk(v, lane);
    if (phase == 0) {
      amax = fmaxf(amax, hq_chunk_amax(v));
      if (math_out) { /* back into this warp's own tile column, stored coalesced below */
#pragma unroll
        for (int j = 0; j < 8; ++j) tile[HQ_TILE(lc, lane * 8 + j)] = v[j];
      }
    } else if (i < cols) {
      const int c = row0 + lane * 8;
      if (c < k_pad) hq_store8(codes + (long long)i * ld_codes, c, v, s, 0ull, seed, tag, step);
    }
  }
  if (phase == 0) {
    amax = hq_warp_max(amax);
    if (lane == 0) atomicMax(amax_bits, __float_as_uint(amax));
    if (math_out) { /* w' in math layout o_pad x I (linear idx o*I + i), rows < o_pad only */
      __syncthreads();
      for (int r = warp; r < HQ_CHUNK; r += 8) {
        const int o = row0 + r, i = col0 + lane;
        if (o < o_pad && i < cols) math_out[(long long)o * cols + i] = tile[HQ_TILE(lane, r)];
      }
    }
  }
}
#endif
} /* namespace hot_k2 */
#undef HOT_KNAME
#undef HOT_OPERAND
#undef HOT_DTYPE
#undef HOT_B
#undef HOT_BITS
#undef HOT_CODES
#undef HOT_ROUND
#undef HQ_LANE_ELEMS
#undef HQ_CHUNK
#undef HQ_REG_CHUNKS
#undef HQ_QMAX
#undef HQ_TILE_COLS
#undef HQ_TILE

/* ---- hot_hla_g_f32_p64_r36_tri_k8 from templates/hla_project.cu */
#define HOT_KNAME hot_hla_g_f32_p64_r36_tri_k8
#define HOT_MODE 1
#define HOT_DTYPE 0
#define HOT_P 64
#define HOT_R 36
#define HOT_BITS 8
#define HOT_ROUND 1
#define HOT_ROWS 0,32,48,16,24,56,40,8,44,60,28,20,52,36,4,6,38,54,22,30,62,26,18,50,34,2,3,35,51,19,55,39,7,5,37,1
#define HOT_COLS 128
namespace hot_k3 {
#line 1 "templates/hla_project.cu"
/* @hot-params: HOT_KNAME HOT_MODE HOT_DTYPE HOT_P HOT_R HOT_BITS HOT_ROUND HOT_ROWS HOT_COLS */
/* hla_project.cu — HLA / ABC projection kernels (CONTRACT.md sections 4, 5 and 9-12):
 * per token block, the p-point FWHT down every column (fp32, CONTRACT.md 2 stage order), the gather of
 * the r selected natural rows of H_p, an 8-bit quantizer with one scale per tensor or per sample
 * (RTN for x^, SR or RTN for g^) and the codes stored TRANSPOSED for the g_w GEMM, one run of
 * group_k_pad codes per scale group. CPU twins: ref_hla_quant_x /
 * ref_hla_quant_g (templates/hla_project_ref.c).
 *
 * Parameters (the generator defines them; the defaults below let the file compile alone):
 *   HOT_KNAME  entry point name
 *   HOT_MODE   0 = x^ (role HOT_K_ABC_X), 1 = g^ (role HOT_K_HLA_G)
 *   HOT_ROUND  1 = stochastic rounding (g^ only: Philox tag = layer_id*16 + 2, idx = k*cols + c of
 *              the K x cols math tensor), 0 = round to nearest (x^ always; g^ when planned so)
 *   HOT_DTYPE  0 = f32, 1 = bf16, 2 = f16 input
 *   HOT_P      token block p (power of two, 1..1024; 1 = identity, paper_code on prime L)
 *   HOT_R      rank r (1..p)
 *   HOT_BITS   code bits (8 in every shipped recipe; 2..8 accepted)
 *   HOT_ROWS   the r selected natural rows of H_p, ascending sequency, comma-separated
 *   HOT_COLS   columns per block as the planner computed it (gen/kernels/hla.c), for the launch
 *              geometry; checked against HLA_COLS below (a build that defines HOT_GENERATED
 *              itself may leave it out)
 *
 * Entry (one signature for both modes):
 *   extern "C" __global__ void HOT_KNAME (const void *src, int T, int cols, int ld_src, int L,
 *       int layout, long long seg_len, long long segments, int k_real, int k_pad, int group_k,
 *       int group_k_pad, int groups, int per_sample, unsigned char *codes, int ld_codes,
 *       float *scale, unsigned int *amax_bits, const float *scale_in, float *math_out,
 *       int phase, unsigned long long seed, unsigned tag, unsigned step)
 *   src       x (T x I) or g_y (T x O), row-major, dtype HOT_DTYPE, row stride ld_src elements;
 *             cols = I or O. Only read; padded tokens are never materialized (read as zeros).
 *   L, layout plan T = B*L; layout 0 = sample (segment s = sample s, real tokens s*L + j for
 *             j < L), 1 = flat (one segment, real tokens j < T). seg_len = hla.seg_len,
 *             segments = hla.segments; block beta = blockIdx.x in [0, segments*seg_len/p).
 *   k_real    K = hla.k = blocks * r;  k_pad = hla.gemm.k_pad;  ld_codes = bytes per code row
 *             (k_pad). k_real and k_pad describe the whole buffer; the kernel places codes
 *             by the group values below (with groups = 1 they are the same numbers).
 *   group_k, group_k_pad, groups
 *             the plan's scale groups (CONTRACT.md 9): groups = 1 (group_k = k_real,
 *             group_k_pad = k_pad), or groups = segments > 1 (layout sample only: group j =
 *             segment j = sample j, group_k = K / groups math rows, group_k_pad >= group_k,
 *             k_pad = groups * group_k_pad). A token block lies in exactly one segment, so in
 *             one group: grp = segment when groups > 1, else 0.
 *   per_sample 1: THIS tensor's quantizer has one scale per sample (then groups == segments),
 *             0: one scale for the tensor (groups may still be > 1: the other operand is per
 *             sample; the codes are segmented all the same and the scale is replicated).
 *   codes     cols rows, column c of the math tensor is code row c; math row kk = beta*r + rho
 *             (rho: index into HOT_ROWS) goes to position (kk / group_k) * group_k_pad +
 *             kk % group_k = kk + grp * (group_k_pad - group_k); every other position of
 *             [0, k_pad) is 0.
 *   scale     `groups` floats out (s_x^ / s_g^): entry j = the scale of group j; per tensor, the
 *             one scale in every entry. Written in phase 1 by thread 0 of the CTA
 *             (first token block of group j, blockIdx.y = 0).
 *   amax_bits per_sample: `groups` words (word j = group j), else 1 word; zeroed by the caller
 *             before phase 0 (cuMemsetD32Async); phase 0 does atomicMax of the fp32 bits of |v|
 *             into its group's word (amax >= 0, so bit order = value order).
 *   scale_in  NULL, or per_sample ? `groups` floats : 1 float: phase 1 quantizes with the
 *             group's scale_in entry instead of hot_scale(amax) (SAWB: the scales from
 *             templates/sawb.cu, run with the same groups).
 *   math_out  NULL, or K x cols floats: phase 0 also writes the fp32 math tensor x^ / g^ in
 *             linear index order kk*cols + c (the input of templates/sawb.cu; a group is the
 *             contiguous run of group_k*cols elements).
 *   seed, tag, step  Philox key, tag, step (HOT_ROUND 1; ignored by HOT_ROUND 0); idx =
 *             kk*cols + c of the math tensor, independent of the groups.
 *
 * Phases (same grid for both, stream-ordered):
 *   0: transform, block max |v| -> atomicMax(amax_bits[per_sample ? grp : 0]); math_out when
 *      non-NULL. No codes.
 *   1: transform again (the input is re-read: an L2 hit for moderate sizes), s = scale_in ?
 *      scale_in[w] : hot_scale(amax_bits[w]) with w = per_sample ? grp : 0, quantize, store
 *      codes; the CTA of the first token block of group grp (blockIdx.y = 0) writes
 *      scale[grp] = s; the CTAs of the LAST token block of group grp also write zeros at
 *      positions [grp*group_k_pad + group_k, (grp+1)*group_k_pad) of their columns (groups =
 *      1: [k_real, k_pad)), so code buffers never need clearing.
 *   absmax:  memset(amax_bits) ; phase 0 ; phase 1 (scale_in = NULL)
 *   SAWB:    memset(amax_bits) ; phase 0 with math_out ; sawb.cu phase 0, 1 with groups =
 *            per_sample ? groups : 1 (reads amax_bits, writes s) ; phase 1 with scale_in = s
 *
 * Launch geometry:
 *   grid  = (hla.blocks, ceil(cols / HLA_COLS), 1),  block = (256, 1, 1), no dynamic smem;
 *   HLA_COLS = 256 for p <= 32, else 8192 / p (p = 64: 128, 128: 64, 256: 32, 512: 16,
 *   1024: 8), so the fp32 tile p x HLA_COLS is at most 32 KiB (static shared memory: at most
 *   32 KiB tile + r*HLA_COLS <= 8 KiB of codes + 2r bytes of rows + 32 B).
 *
 * Mapping. A CTA owns one token block and HLA_COLS consecutive columns; thread t of a pass works
 * on column c = id % HLA_COLS, so a warp's loads of one token row are consecutive columns
 * (coalesced: 128 B f32 / 64 B bf16 and f16 per warp per row). The FWHT of each column runs
 * in radix-8 passes: pass 0 loads 8 consecutive tokens per column into registers (zeros for
 * padded tokens and columns >= cols) and runs stages h = 1, 2, 4 there; each further pass
 * (bits 3-5, 6-8, 9) reads the 8 elements that differ in its three token bits from the shared
 * tile, runs its stages in registers and writes them back — stage order h = 1, 2, 4, ..., p/2
 * exactly as CONTRACT.md 2, so the bits equal the twin's. The gather reads the r selected rows; the
 * codes go through a small shared byte tile so that each column's r codes (and, in the group's
 * last block, its zero tail) are stored as one contiguous run of bytes: one warp per column, one
 * store request per 32-byte sector of the run (the run is not sector-aligned: a request that
 * straddled two columns' runs touched up to 4 sectors for 32 bytes).
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_hla_project
#define HOT_MODE 1
#define HOT_DTYPE 0
#define HOT_P 16
#define HOT_R 10
#define HOT_BITS 8
#define HOT_ROUND 1
#define HOT_ROWS 0, 8, 12, 4, 14, 10, 2, 3, 11, 1
#define HOT_COLS 256
#endif



#define HLA_THREADS 256
#define HLA_COLS (HOT_P <= 32 ? 256 : 8192 / HOT_P)
#ifdef HOT_COLS
static_assert(HOT_COLS == HLA_COLS, "HOT_COLS (the planner's grid.y divisor) != HLA_COLS");
#endif
#define HLA_QMAX ((1 << (HOT_BITS - 1)) - 1)
#define HLA_LP                                                                                  \
  (HOT_P >= 1024 ? 10 : HOT_P >= 512 ? 9 : HOT_P >= 256 ? 8 : HOT_P >= 128 ? 7 : HOT_P >= 64 ? 6 \
   : HOT_P >= 32 ? 5 : HOT_P >= 16 ? 4 : HOT_P >= 8 ? 3 : HOT_P >= 4 ? 2 : HOT_P >= 2 ? 1 : 0)
/* token bits handled by the pass starting at bit b (1 when the pass does not exist: keeps the
 * template arguments legal in branches that are compiled out) */
#define HLA_NB(b) (HLA_LP > (b) ? (HLA_LP - (b) < 3 ? HLA_LP - (b) : 3) : 1)
#define HLA_NB0 (HLA_LP < 3 ? HLA_LP : 3)
#define HLA_E0 (1 << HLA_NB0)
#define HLA_ITEMS0 (HOT_P * HLA_COLS / HLA_E0 / HLA_THREADS)

static_assert(HOT_MODE == 0 || HOT_MODE == 1, "HOT_MODE 0 (x^) or 1 (g^)");
static_assert(HOT_ROUND == 0 || HOT_ROUND == 1, "HOT_ROUND 0 (RTN) or 1 (SR)");
static_assert(HOT_ROUND == 0 || HOT_MODE == 1, "x^ has no random stream: HOT_ROUND 0");
static_assert(HOT_DTYPE >= 0 && HOT_DTYPE <= 2, "HOT_DTYPE 0 (f32), 1 (bf16) or 2 (f16)");
static_assert(HOT_P >= 1 && HOT_P <= 1024 && (HOT_P & (HOT_P - 1)) == 0,
              "p must be a power of two in [1, 1024]");
static_assert((1 << HLA_LP) == HOT_P, "log2 p");
static_assert(HOT_R >= 1 && HOT_R <= HOT_P, "rank in [1, p]");
static_assert(HOT_BITS >= 2 && HOT_BITS <= 8, "bits in [2, 8]");
static_assert(HLA_ITEMS0 >= 1 && HOT_P * HLA_COLS % (HLA_E0 * HLA_THREADS) == 0,
              "tile must split evenly into pass-0 items");

/* The selected natural rows of H_p (ascending sequency). */
__constant__ unsigned short hla_rows[HOT_R] = {HOT_ROWS};

/* Element off of src as fp32 (exact conversions of hot_math.cuh). */
static __device__ __forceinline__ float hla_load1(const void *__restrict__ src, long long off) {
  return hot_load_f32(src, off, HOT_DTYPE);
}

#if HOT_ROUND == 1
/* hot_rand_word without the dynamically indexed struct (which would live in local memory). */
static __device__ __forceinline__ unsigned hla_rand_word(unsigned long long seed, unsigned tag,
                                                         unsigned step, unsigned long long idx) {
  const unsigned long long b = idx >> 2;
  const hot_philox_out o = hot_philox4x32_10((unsigned)(b & 0xffffffffull), (unsigned)(b >> 32),
                                             tag, step, (unsigned)(seed & 0xffffffffull),
                                             (unsigned)(seed >> 32));
  const unsigned w = (unsigned)(idx & 3ull);
  return w == 0 ? o.v[0] : w == 1 ? o.v[1] : w == 2 ? o.v[2] : o.v[3];
}
#endif

/* Stages h = 1, 2, ..., E/2 of the E elements held by a thread (local index order). */
template <int E>
static __device__ __forceinline__ void hla_fwht_regs(float (&v)[E]) {
#pragma unroll
  for (int h = 1; h < E; h <<= 1) {
#pragma unroll
    for (int j = 0; j < E; ++j) {
      if (j & h) continue;
      const float a = v[j], b = v[j + h];
      v[j] = HOT_ADD(a, b);
      v[j + h] = HOT_SUB(a, b);
    }
  }
}

/* One radix-2^NB pass on the shared tile (p rows x HLA_COLS columns): stages h = 2^B0 ...
 * 2^(B0+NB-1). Item = (column, base token with bits B0 .. B0+NB-1 clear); items are disjoint,
 * so the pass is race-free between barriers. */
template <int B0, int NB>
static __device__ __forceinline__ void hla_pass(float *tile, int tid) {
  enum { E = 1 << NB, ITEMS = HOT_P * HLA_COLS / E / HLA_THREADS };
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int id = tid + it * HLA_THREADS;
    const int c = id % HLA_COLS, rest = id / HLA_COLS;
    const int base = ((rest >> B0) << (B0 + NB)) | (rest & ((1 << B0) - 1));
    float v[E];
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = tile[(base + (i << B0)) * HLA_COLS + c];
    hla_fwht_regs<E>(v);
#pragma unroll
    for (int i = 0; i < E; ++i) tile[(base + (i << B0)) * HLA_COLS + c] = v[i];
  }
}

extern "C" __global__ void __launch_bounds__(HLA_THREADS, 2) /* <= 128 registers: 2 CTAs per SM */
HOT_KNAME(const void *__restrict__ src, int T, int cols, int ld_src, int L, int layout,
          long long seg_len, long long segments, int k_real, int k_pad, int group_k,
          int group_k_pad, int groups, int per_sample, unsigned char *__restrict__ codes,
          int ld_codes, float *__restrict__ scale, unsigned int *__restrict__ amax_bits,
          const float *__restrict__ scale_in, float *__restrict__ math_out, int phase,
          unsigned long long seed, unsigned tag, unsigned step) {
  __shared__ __align__(16) float tile[HOT_P * HLA_COLS];
  __shared__ unsigned char qtile[HOT_R * HLA_COLS];
  __shared__ unsigned short rows_s[HOT_R];
  __shared__ float red[HLA_THREADS / 32];

  const int tid = (int)threadIdx.x;
  const long long per_seg = seg_len / HOT_P;
  const long long beta = (long long)blockIdx.x;
  if (beta >= segments * per_seg) return; /* whole CTA: no barrier is skipped by part of it */
  const long long seg = beta / per_seg, blk = beta % per_seg;
  const long long seg_real = layout == 1 ? (long long)T : (long long)L;
  const long long seg_base = layout == 1 ? 0ll : seg * (long long)L; /* token of position 0 */
  const long long pos0 = blk * HOT_P;                                /* first position */
  const int col0 = (int)blockIdx.y * HLA_COLS;
  const long long k0 = beta * HOT_R; /* first math row of this block */
  (void)k_real; /* the buffer's sizes; positions follow group_k and group_k_pad */
  (void)k_pad;

  for (int i = tid; i < HOT_R; i += HLA_THREADS) rows_s[i] = hla_rows[i];

  /* ---- pass 0: global -> registers (stages 1, 2, 4) -> shared tile ---------------------- */
  {
    float v[HLA_ITEMS0][HLA_E0];
#pragma unroll
    for (int it = 0; it < HLA_ITEMS0; ++it) { /* all loads first: memory-level parallelism */
      const int id = tid + it * HLA_THREADS;
      const int c = id % HLA_COLS, base = (id / HLA_COLS) * HLA_E0;
      const int col = col0 + c;
#pragma unroll
      for (int i = 0; i < HLA_E0; ++i) {
        const long long pos = pos0 + base + i;
        v[it][i] = (col < cols && pos < seg_real)
                       ? hla_load1(src, (seg_base + pos) * (long long)ld_src + col)
                       : 0.0f;
      }
    }
#pragma unroll
    for (int it = 0; it < HLA_ITEMS0; ++it) {
      const int id = tid + it * HLA_THREADS;
      const int c = id % HLA_COLS, base = (id / HLA_COLS) * HLA_E0;
      hla_fwht_regs<HLA_E0>(v[it]);
#pragma unroll
      for (int i = 0; i < HLA_E0; ++i) tile[(base + i) * HLA_COLS + c] = v[it][i];
    }
  }
  /* ---- passes over token bits 3-5, 6-8, 9 ----------------------------------------------- */
  if (HLA_LP > 3) {
    __syncthreads();
    hla_pass<3, HLA_NB(3)>(tile, tid);
  }
  if (HLA_LP > 6) {
    __syncthreads();
    hla_pass<6, HLA_NB(6)>(tile, tid);
  }
  if (HLA_LP > 9) {
    __syncthreads();
    hla_pass<9, HLA_NB(9)>(tile, tid);
  }
  __syncthreads(); /* the tile and rows_s are complete */

  /* scale group: segment j when groups > 1 (layout sample), else the one group (computed
   * here, after the transform, so that nothing of it is live across the passes) */
  const int grp = groups > 1 ? (int)(blockIdx.x / (unsigned)per_seg) : 0;
  const int word = per_sample ? grp : 0; /* amax word / scale_in entry of this block */

  if (phase == 0) {
    /* ---- amax (and the math tensor) over the gathered rows; c fastest: coalesced -------- */
    float amax = 0.0f;
    for (int id = tid; id < HOT_R * HLA_COLS; id += HLA_THREADS) {
      const int c = id % HLA_COLS, rho = id / HLA_COLS;
      const int col = col0 + c;
      if (col >= cols) continue;
      const float val = tile[(int)rows_s[rho] * HLA_COLS + c];
      amax = fmaxf(amax, fabsf(val));
      if (math_out) math_out[(k0 + rho) * (long long)cols + col] = val;
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, d));
    if ((tid & 31) == 0) red[tid >> 5] = amax;
    __syncthreads();
    if (tid == 0) {
      float m = red[0];
#pragma unroll
      for (int w = 1; w < HLA_THREADS / 32; ++w) m = fmaxf(m, red[w]);
      atomicMax(amax_bits + word, __float_as_uint(m));
    }
    return;
  }

  /* ---- phase 1: quantize into the byte tile (c fastest), then store runs of r codes ------ */
  const float s =
      scale_in ? scale_in[word] : hot_scale(__uint_as_float(amax_bits[word]), HOT_BITS);
  const int kb = (int)k0; /* K and k_pad fit an int (the launcher refuses more): int positions */
  const int g_first = grp * group_k;   /* first math row of the group */
  if (kb == g_first && blockIdx.y == 0 && tid == 0) scale[grp] = s;
  for (int id = tid; id < HOT_R * HLA_COLS; id += HLA_THREADS) {
    const int c = id % HLA_COLS, rho = id / HLA_COLS;
    const float val = tile[(int)rows_s[rho] * HLA_COLS + c];
#if HOT_ROUND == 1
    const unsigned long long idx =
        (unsigned long long)(k0 + rho) * (unsigned long long)cols + (unsigned long long)(col0 + c);
    const int q = hot_quant_sr(val, s, HLA_QMAX, hla_rand_word(seed, tag, step, idx));
#else
    const int q = hot_quant_rtn(val, s, HLA_QMAX);
#endif
    qtile[c * HOT_R + rho] = (unsigned char)q;
  }
#if HOT_ROUND == 0
  (void)seed; (void)tag; (void)step;
#endif
  __syncthreads();
  /* code position of math row k0: k0 + grp * (group_k_pad - group_k) */
  const int gap = group_k_pad - group_k;
  const int kc0 = kb + grp * gap;
  /* the last block of the group also zeroes the group's tail [group_k, group_k_pad), which
   * follows its r codes: one run of bytes per column */
  const int run = HOT_R + (kb + HOT_R == g_first + group_k ? gap : 0);
  const int lane = tid & 31;
  for (int c = tid >> 5; c < HLA_COLS; c += HLA_THREADS / 32) { /* one warp per column */
    const int col = col0 + c;
    if (col >= cols) break; /* warp-uniform */
    unsigned char *dst = codes + (long long)col * ld_codes + kc0;
    /* one request per 32-byte sector the run touches: lane l writes byte lo + l, lanes outside
     * the run repeat its nearest byte of this sector (same address, same value) */
    const int a = (int)((unsigned long long)dst & 31ull);
    for (int lo = -a; lo < run; lo += 32) {
      const int first = lo < 0 ? 0 : lo, last = lo + 31 < run ? lo + 31 : run - 1;
      const int rho = lo + lane < first ? first : (lo + lane > last ? last : lo + lane);
      dst[rho] = rho < HOT_R ? qtile[c * HOT_R + rho] : (unsigned char)0;
    }
  }
}
} /* namespace hot_k3 */
#undef HOT_KNAME
#undef HOT_MODE
#undef HOT_DTYPE
#undef HOT_P
#undef HOT_R
#undef HOT_BITS
#undef HOT_ROUND
#undef HOT_ROWS
#undef HOT_COLS
#undef HLA_THREADS
#undef HLA_COLS
#undef HLA_QMAX
#undef HLA_LP
#undef HLA_NB
#undef HLA_NB0
#undef HLA_E0
#undef HLA_ITEMS0

/* ---- hot_abc_unpack from templates/abc_unpack.cu */
#define HOT_KNAME hot_abc_unpack
namespace hot_k4 {
#line 1 "templates/abc_unpack.cu"
/* @hot-params: HOT_KNAME */
/* abc_unpack.cu — the saved codes of ABC into the g_w GEMM's operand layout (CONTRACT.md 5 and 9).
 * The forward keeps q_x^ unpadded: I code rows of K = hla.k bytes, the scale groups as consecutive
 * runs of group_k codes. The GEMM reads I rows of k_pad bytes in which group j's codes start at
 * j * group_k_pad and positions [j * group_k_pad + group_k, (j + 1) * group_k_pad) are zero (one
 * group: group_k = K, group_k_pad = k_pad). This kernel writes every byte of that buffer, so it
 * needs no clearing. A pure copy: the bytes equal the twin's (ref_abc_unpack, abc_unpack_ref.c).
 *
 * Entry:
 *   extern "C" __global__ void HOT_KNAME(const unsigned char *src, int rows, int k_real,
 *       int group_k, int group_k_pad, int k_pad, unsigned char *dst)
 *   src    rows x k_real bytes (row stride k_real = groups * group_k); any alignment
 *   dst    rows x k_pad bytes, 16-byte aligned; k_pad = groups * group_k_pad
 *   Requires k_pad % 16 == 0 and group_k_pad % 16 == 0 (every GEMM tile_k is a multiple of 32;
 *   the descriptor refuses other plans), 1 <= group_k <= group_k_pad.
 *
 * Launch: grid = (ceil(rows * k_pad / 16 / 256), 1, 1), block = (256, 1, 1), no dynamic shared
 * memory (4160 bytes static). Thread id writes the 16 bytes [16 c, 16 c + 16) of dst row
 * id / (k_pad / 16), c = id % (k_pad / 16), as one 16-byte store; such a span never straddles two
 * groups (group_k_pad % 16 == 0). A block's 256 spans read at most 4096 consecutive source bytes
 * (padding has no source bytes, so rows and groups follow each other): the block first stages
 * them in shared memory, from the 32-byte boundary below the first, as byte loads of consecutive
 * lanes (one 32-byte sector per warp request), then every thread gathers its span as five 4-byte
 * words (funnel-shifted when the span is not 4-byte aligned) and zeroes the bytes past group_k.
 * The staged words are XOR-swizzled (UNPACK_SWZ) so that the gather, whose lanes read words 4
 * apart, and the staging stores meet no bank conflict.
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_abc_unpack
#endif

#define UNPACK_THREADS 256
/* the staged source bytes: a block's 256 spans come from at most 4096 consecutive source bytes,
 * staged from the 32-byte boundary below the first (+31) with room for the last span's fifth
 * word (+20), rounded up to whole 32-byte requests */
#define UNPACK_SH_WORDS ((UNPACK_THREADS * 16 + 64) / 4)
/* word w of the staged bytes sits at UNPACK_SWZ(w): the low two bits XORed with bits 5..6, so 32
 * lanes reading words a + 4 * lane (any a) hit 32 distinct banks, and 32 consecutive bytes (8
 * words in one 32-word line) stay in 8 distinct banks */
#define UNPACK_SWZ(w) ((w) ^ (((w) >> 5) & 3))

/* Source index of position `add` of span `id` (clamped to its group's real codes): every span's
 * bytes lie in [unpack_src(id, 0), unpack_src(id, 16)), increasing with id. */
static __device__ __forceinline__ long long unpack_src(long long id, long long spans, int k_real,
                                                       int group_k, int group_k_pad, int add) {
  const long long row = id / spans;
  const int pos0 = (int)(id - row * spans) * 16;
  const int grp = pos0 / group_k_pad, off = pos0 - grp * group_k_pad + add;
  return row * (long long)k_real + (long long)grp * group_k + (off < group_k ? off : group_k);
}

extern "C" __global__ void __launch_bounds__(UNPACK_THREADS)
    HOT_KNAME(const unsigned char *__restrict__ src, int rows, int k_real, int group_k,
              int group_k_pad, int k_pad, unsigned char *__restrict__ dst) {
  __shared__ __align__(16) unsigned stage[UNPACK_SH_WORDS];
  const long long spans = (long long)(k_pad / 16); /* 16-byte spans per row */
  const long long total = (long long)rows * spans;
  const long long id0 = (long long)blockIdx.x * UNPACK_THREADS;
  const long long id = id0 + (long long)threadIdx.x;
  const long long id_last = (id0 + UNPACK_THREADS < total ? id0 + UNPACK_THREADS : total) - 1;
  /* the block's source bytes [s_lo, s_hi), staged from a0 (32-byte aligned address) */
  const long long s_lo = unpack_src(id0, spans, k_real, group_k, group_k_pad, 0);
  const long long s_hi = unpack_src(id_last, spans, k_real, group_k, group_k_pad, 16);
  const long long a0 = s_lo - (long long)(((unsigned long long)(src + s_lo)) & 31ull);
  const int n_load = s_hi > s_lo ? (int)((s_hi - a0 + 31) & ~31ll) : 0; /* whole warps load */
  const int n_fill = (int)((s_hi - a0 + 20 + 31) & ~31ll);
  unsigned char *stage_b = (unsigned char *)stage;
  for (int b = (int)threadIdx.x; b < n_fill; b += UNPACK_THREADS) {
    const long long i = a0 + b;
    unsigned char v = 0;
    if (b < n_load) { /* every lane loads (one sector per request); bytes outside become 0 */
      v = src[i < s_lo ? s_lo : (i >= s_hi ? s_hi - 1 : i)];
      if (i < s_lo || i >= s_hi) v = 0;
    }
    stage_b[UNPACK_SWZ(b >> 2) * 4 + (b & 3)] = v;
  }
  __syncthreads();
  if (id > id_last) return;
  const long long row = id / spans;
  const int pos0 = (int)(id - row * spans) * 16; /* first position of the span in its row */
  const int off0 = pos0 - pos0 / group_k_pad * group_k_pad;
  const int nv = group_k - off0 < 0 ? 0 : (group_k - off0 > 16 ? 16 : group_k - off0);
  unsigned w[4] = {0u, 0u, 0u, 0u};
  if (nv > 0) {
    const int r = (int)(unpack_src(id, spans, k_real, group_k, group_k_pad, 0) - a0);
    const int w0 = r >> 2, sh = (r & 3) * 8;
    unsigned x[5];
#pragma unroll
    for (int k = 0; k < 5; ++k) x[k] = stage[UNPACK_SWZ(w0 + k)];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned v = sh ? (x[j] >> sh) | (x[j + 1] << (32 - sh)) : x[j];
      const int vb = nv - 4 * j; /* real bytes of this word; the rest are zeros */
      w[j] = vb >= 4 ? v : (vb <= 0 ? 0u : v & ((1u << (8 * vb)) - 1u));
    }
  }
  *(uint4 *)(dst + row * (long long)k_pad + pos0) = make_uint4(w[0], w[1], w[2], w[3]);
}
} /* namespace hot_k4 */
#undef HOT_KNAME
#undef UNPACK_THREADS
#undef UNPACK_SH_WORDS
#undef UNPACK_SWZ

/* ---- hot_gemm_mma_s8_128x128x64_w2x2_s3 from templates/gemm_int.cu */
#define HOT_KNAME hot_gemm_mma_s8_128x128x64_w2x2_s3
#define HOT_CODES 0
#define HOT_TILE_M 128
#define HOT_TILE_N 128
#define HOT_TILE_K 64
#define HOT_WARPS_M 2
#define HOT_WARPS_N 2
#define HOT_STAGES 3
#define HOT_SEGS 0
namespace hot_k5 {
#line 1 "templates/gemm_int.cu"
/* @hot-params: HOT_KNAME HOT_CODES HOT_TILE_M HOT_TILE_N HOT_TILE_K HOT_WARPS_M HOT_WARPS_N HOT_STAGES HOT_SEGS */
/* gemm_int.cu — integer tensor-core GEMM with the fused HOT dequantization epilogue
 * (CONTRACT.md sections 3.5, 4.6 and 7).
 *
 * HOT_SEGS = 0 (one int32 sum over all of K):
 *   C[m*ldc + n] = HOT_MUL(HOT_I2F(acc[m][n]), factor(m)),   acc[m][n] = sum_k A[m][k] * B[n][k]
 *   factor(m)    = row_scale ? HOT_MUL(row_scale[m], alpha) : alpha
 *   alpha        = HOT_DIV(HOT_MUL(*alpha_a, alpha_b ? *alpha_b : 1.0f), alpha_div)
 * HOT_SEGS = 1 (segmented: the g_w GEMM of HLA scale groups, CONTRACT 9 and 14): K is cut into
 * G = Kpad / seg_kpad segments of seg_kpad codes; segment j has its own int32 sum and factor:
 *   acc_j[m][n] = sum over k in [j*seg_kpad, (j+1)*seg_kpad) of A[m][k] * B[n][k]
 *   c_j         = HOT_DIV(HOT_MUL(alpha_a[j], alpha_b ? alpha_b[j] : 1.0f), alpha_div)
 *   v_j         = HOT_MUL(HOT_I2F(acc_j[m][n]), c_j)
 *   C[m*ldc + n] = v_0, then C = HOT_ADD(C, v_j) for j = 1 .. G-1 in segment order
 * (row_scale must be NULL: it is not read).
 *
 * Entry:
 *   HOT_KNAME (const signed char *A, const signed char *B, float *C, const float *row_scale,
 *             const float *alpha_a, const float *alpha_b, float alpha_div, int M, int N,
 *             int Kpad, int ldc, int seg_kpad)
 * seg_kpad: the codes of one K segment (HOT_SEGS = 1); HOT_SEGS = 0 ignores it (the runtime
 * passes Kpad).
 * alpha is computed on the device (once per thread, from two device words), so the scales
 * written by the operand kernels never travel through the host:
 *   HQ  (CONTRACT 14): row_scale = s_g (T floats), alpha_a = &s_w,  alpha_b = NULL,  div = b
 *        -> alpha = (s_w * 1.0f) / b = s_w / b = c_w exactly (x * 1.0f == x in IEEE);
 *   HLA (CONTRACT 14): row_scale = NULL, alpha_a = &s_g^, alpha_b = &s_x^, div = p
 *        -> alpha = (s_g^ * s_x^) / p = c;
 *   HLA with scale groups (HOT_SEGS = 1): row_scale = NULL, alpha_a = s_g^, alpha_b = s_x^
 *        (hla.groups floats each), div = p, seg_kpad = the group's padded K (group_k_pad)
 *        -> c_j = (s_g^[j] * s_x^[j]) / p.
 * int32 accumulation (exact while |acc| < 2^31). Integer products are exact and the epilogue is
 * single-rounding fp32 operations in the twin's order, so every arch and tile configuration
 * gives the same bits as the CPU twin.
 *
 * ==== Design note (what the planner and the runtime must respect) ===========================
 *
 * Operands ("TN", i.e. mma .row.col): A is M x Kpad, B is N x Kpad, both row-major with K
 * contiguous. HOT_CODES = 0: one signed byte per code, row pitch Kpad bytes. HOT_CODES = 1:
 * packed two's-complement nibbles, element 2j in the low nibble of byte j, row pitch Kpad/2
 * bytes. The kernel works in BYTES of K throughout: one mma consumes 32 bytes of K per row
 * (m16n8k32 .s8 = 32 codes, m16n8k64 .s4 = 64 codes), and the fragment byte layouts of the two
 * instructions are identical (see "Fragment layouts" below).
 *
 * Constraints on the arguments (not checked at run time):
 *  - Kpad % HOT_TILE_K == 0 and Kpad >= 0 (Kpad == 0 writes C = 0 * factor); codes in
 *    [Kreal, Kpad) are zero (the planner zero-fills);
 *  - A and B 16-byte aligned (cudaMalloc gives 256); the row pitch is then a multiple of 16
 *    bytes because HOT_TILE_K bytes are a multiple of 32;
 *  - M, N >= 0 arbitrary: rows past M (A) or N (B) are zero-filled in shared memory, never read;
 *    C is written only for m < M, n < N; ldc >= N. float2 stores are used when ldc is even and
 *    C is 8-byte aligned, scalar stores otherwise;
 *  - row_scale: NULL or M floats; alpha_a: one float (never NULL); alpha_b: NULL or one float;
 *    alpha_div: a power of two (b or p), so the division is exact unless it underflows;
 *  - grid.y = ceil(M / HOT_TILE_M) <= 65535;
 *  - HOT_SEGS = 1: seg_kpad > 0, seg_kpad % HOT_TILE_K == 0, Kpad % seg_kpad == 0 (G segments;
 *    Kpad == 0 writes C = 0 * c_0); row_scale == NULL; alpha_a and alpha_b (never NULL here)
 *    hold G floats each. C is both written and read back: no other thread or kernel may touch
 *    C's M x N window during the launch (ldc >= N keeps the rows apart).
 *
 * Launch geometry:
 *   grid  = (ceil(N / HOT_TILE_N), ceil(M / HOT_TILE_M), 1)   x over N tiles, y over M tiles
 *   block = (HOT_THREADS, 1, 1),  HOT_THREADS = 32 * HOT_WARPS_M * HOT_WARPS_N
 *   dynamic shared memory (bytes), no padding (the layout is XOR-swizzled):
 *     HOT_SMEM_BYTES = HOT_STAGES * (HOT_TILE_M + HOT_TILE_N) * KB,
 *     KB = HOT_TILE_K (HOT_CODES = 0) or HOT_TILE_K / 2 (HOT_CODES = 1)   [bytes of K per row]
 *   e.g. 128x128x64 s8 (or 128x128x128 s4), 3 stages: 49152; 4 stages: 65536;
 *        64x64x64 s8 4 stages: 32768. Above 48 KiB the runtime must raise
 *        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES before the launch.
 *
 * Legal parameters (static_asserts below enforce them):
 *   HOT_CODES 0 or 1; KB in {32, 64, 96, 128, 256} bytes, i.e. HOT_TILE_K in {32, 64, 96, 128, 256}
 *   for s8 and {64, 128, 192, 256, 512} for s4; HOT_TILE_M % (16 * HOT_WARPS_M) == 0;
 *   HOT_TILE_N % (8 * HOT_WARPS_N) == 0; 1 <= HOT_WARPS_M * HOT_WARPS_N <= 8 (threads <= 256);
 *   2 <= HOT_STAGES <= 8. This covers every tile the planner accepts (tile_k = 1..4 mma K steps).
 *   tools/check-templates.sh compiles a spread of them for sm_80/86/89/90 (no spills allowed);
 *   tools/gemm-emu.sh runs them in a CPU emulator of the PTX instructions against a reference.
 *   Registers: 64x64 warp tiles (e.g. 128x128 with 2x2 warps) take ~240 (2 blocks of 4 warps
 *   per SM), 64x32 warp tiles (128x128, 2x4) ~140. __launch_bounds__(threads, 1) is deliberate:
 *   without the explicit 1, ptxas for sm_90 caps 256-thread blocks at 128 registers and spills.
 *
 * Block/warp mapping: warp w (0 .. WARPS_M*WARPS_N-1) owns the warp tile of rows
 * (w / WARPS_N) * WM ... + WM-1 and columns (w % WARPS_N) * WN ... + WN-1 of the block tile,
 * WM = TILE_M / WARPS_M, WN = TILE_N / WARPS_N; it holds MI x NI accumulator fragments of
 * 16 x 8 (MI = WM / 16, NI = WN / 8).
 *
 * Pipeline: HOT_STAGES shared-memory stages filled by 16-byte cp.async.cg (L2 only, zero-fill
 * for rows past M/N via src-size 0), one commit group per K tile, cp.async.wait_group
 * (STAGES-2) + one __syncthreads per K tile; ldmatrix fragments double-buffered in registers
 * (the fragments of the next 32-byte K step, also across the K-tile boundary, are loaded
 * before the mma of the current one).
 *
 * Segments (HOT_SEGS = 1): segment j is K tiles [j*S, (j+1)*S), S = seg_kpad / HOT_TILE_K. After
 * the mmas of a segment's last K tile (the tile step has already issued the prefetch and loaded
 * the next tile's first fragments: the pipeline runs on across the boundary untouched), each
 * thread converts its own accumulators with c_j, stores them into C (j = 0) or adds them to what
 * it stored there before (j > 0; hot_store_or_add_pair), and zeroes them. The last segment is
 * converted after the loop, where HOT_SEGS = 0 converts its one sum. No extra register arrays:
 * the running sum lives in C. Each output element has one owner thread, so the order of the
 * additions is that thread's program order (segment order), whatever the blocks and warps do.
 *
 * Shared layout per stage: [A tile: TILE_M rows x KB bytes][B tile: TILE_N rows x KB bytes],
 * rows unpadded; the 16-byte chunk c of row r is stored at chunk c ^ swz(r), where swz is chosen
 * so that the 8 row addresses of every ldmatrix phase (8 consecutive rows, one logical chunk)
 * fall into 8 distinct 16-byte bank groups:
 *   KB = 32  (2 chunks/row, 4 rows per 128 B): swz = (r >> 2) & 1
 *   KB = 64  (4 chunks/row, 2 rows per 128 B): swz = (r >> 1) & 3
 *   KB = 96  (6 chunks/row):                     swz = (r >> 2) & 1   (rows r, r+4 collide unswizzled)
 *   KB >= 128 (8+ chunks/row):                   swz = r & 7
 * swz only depends on r & 7, so with every fragment row base a multiple of 8 it is a per-lane
 * constant.
 * =============================================================================================
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_gemm_int
#define HOT_CODES 0
#define HOT_TILE_M 128
#define HOT_TILE_N 128
#define HOT_TILE_K 64
#define HOT_WARPS_M 2
#define HOT_WARPS_N 2
#define HOT_STAGES 4
#define HOT_SEGS 0
#endif




/* ---- derived compile-time quantities (macros: NVRTC makes namespace constexpr device globals) */
#define HOT_THREADS (32 * HOT_WARPS_M * HOT_WARPS_N)
#define HOT_KB (HOT_CODES ? HOT_TILE_K / 2 : HOT_TILE_K) /* bytes of K per row per stage */
#define HOT_CPR (HOT_KB / 16)                           /* 16-byte chunks per row */
#define HOT_KSTEPS (HOT_KB / 32)                        /* mma K steps per stage */
#define HOT_WM (HOT_TILE_M / HOT_WARPS_M)
#define HOT_WN (HOT_TILE_N / HOT_WARPS_N)
#define HOT_MI (HOT_WM / 16)
#define HOT_NI (HOT_WN / 8)
#define HOT_A_BYTES (HOT_TILE_M * HOT_KB)
#define HOT_STAGE_BYTES ((HOT_TILE_M + HOT_TILE_N) * HOT_KB)
#define HOT_SMEM_BYTES (HOT_STAGES * HOT_STAGE_BYTES)
#define HOT_A_CHUNKS (HOT_TILE_M * HOT_CPR)
#define HOT_B_CHUNKS (HOT_TILE_N * HOT_CPR)
#define HOT_A_ITERS ((HOT_A_CHUNKS + HOT_THREADS - 1) / HOT_THREADS)
#define HOT_B_ITERS ((HOT_B_CHUNKS + HOT_THREADS - 1) / HOT_THREADS)
/* swizzle of 16-byte chunks as a function of the row (see the design note) */
#define HOT_SWZ(r)                                                                              \
  (HOT_CPR == 4 ? (((r) >> 1) & 3) : (HOT_CPR == 2 || HOT_CPR == 6) ? (((r) >> 2) & 1) : ((r)&7))

static_assert(HOT_CODES == 0 || HOT_CODES == 1, "HOT_CODES must be 0 (int8) or 1 (packed int4)");
static_assert(HOT_CODES == 0 || HOT_TILE_K % 2 == 0, "packed int4 needs an even HOT_TILE_K");
static_assert(HOT_KB % 32 == 0, "HOT_TILE_K must be a multiple of the mma K (32 s8, 64 s4)");
static_assert(HOT_CPR == 2 || HOT_CPR == 4 || HOT_CPR == 6 || HOT_CPR == 8 || HOT_CPR == 16,
              "HOT_TILE_K bytes must be 32, 64, 96, 128 or 256 (swizzle patterns)");
static_assert(HOT_WARPS_M >= 1 && HOT_WARPS_N >= 1 && HOT_WARPS_M * HOT_WARPS_N <= 8,
              "1..8 warps per block");
static_assert(HOT_TILE_M % (16 * HOT_WARPS_M) == 0, "HOT_TILE_M must split into warps of 16 rows");
static_assert(HOT_TILE_N % (8 * HOT_WARPS_N) == 0, "HOT_TILE_N must split into warps of 8 columns");
static_assert(HOT_STAGES >= 2 && HOT_STAGES <= 8, "HOT_STAGES must be in [2, 8]");
static_assert(HOT_A_BYTES % 128 == 0 && HOT_STAGE_BYTES % 128 == 0,
              "stage and B-tile bases must stay 128-byte aligned (swizzle assumes it)");
static_assert(HOT_MI * HOT_NI <= 64, "warp tile too large for the register file");
static_assert(HOT_SEGS == 0 || HOT_SEGS == 1, "HOT_SEGS must be 0 (one K sum) or 1 (K segments)");

/* ---- PTX wrappers ------------------------------------------------------------------------- */

/* ldmatrix .m8n8 .b16: each 8x8 b16 matrix is 8 rows of 16 bytes; lanes 8j..8j+7 give the row
 * addresses of matrix j; lane l receives, from matrix j, the 32-bit word at row l/4, bytes
 * 4*(l%4) .. 4*(l%4)+3 (PTX ISA 9.7.14.5.15 ldmatrix, "fragment of the loaded matrix"). We treat
 * the data as raw bytes: 16 bytes = 16 s8 codes or 32 packed s4 codes. */
static __device__ __forceinline__ void hot_ldmatrix_x4(unsigned addr, unsigned &r0, unsigned &r1,
                                                       unsigned &r2, unsigned &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

static __device__ __forceinline__ void hot_ldmatrix_x2(unsigned addr, unsigned &r0, unsigned &r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1)
               : "r"(addr));
}

/* One 16 x 8 x (32 bytes of K) tensor-core product, d += a * b. */
static __device__ __forceinline__ void hot_mma(int *d, const unsigned *a, const unsigned *b) {
#if HOT_CODES
  asm volatile("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* ---- Fragment layouts (PTX ISA 9.7.14.5.x "Matrix Fragments for mma.m16n8k32" (.s8) and
 * "... for mma.m16n8k64" (.s4)); g = lane >> 2 (groupID), t = lane & 3 (threadID_in_group).
 * In bytes of K both instructions agree:
 *   A (16 x 32 bytes): a[0] = row g,   bytes 4t..4t+3       a[1] = row g+8, bytes 4t..4t+3
 *                      a[2] = row g,   bytes 16+4t..+3      a[3] = row g+8, bytes 16+4t..+3
 *     (.s8: a_i row g for i in [0,4)u[8,12), col 4t + (i&3) (+16 for i >= 8);
 *      .s4: a_i row g for i in [0,8)u[16,24), col 8t + (i&7) (+32 for i >= 16); nibble i of a
 *      register is element i, so the low nibble of a byte is the lower K index = our packing.)
 *   B (32 bytes x 8, stored as N rows of K): b[0] = column n = g, bytes 4t..4t+3,
 *                                            b[1] = column n = g, bytes 16+4t..+3
 *   C/D (16 x 8 s32): d[0], d[1] = row g, cols 2t, 2t+1;  d[2], d[3] = row g+8, cols 2t, 2t+1.
 * ldmatrix.x4 on A with lane l addressing row (l & 15), chunk (l >> 4) of the 16 x 32-byte
 * slice gives matrices {rows 0-7 chunk 0, rows 8-15 chunk 0, rows 0-7 chunk 1, rows 8-15
 * chunk 1} = exactly a[0..3]. ldmatrix.x4 on B with lane l addressing n-row (l & 7) + 8*(l >> 4),
 * chunk (l >> 3) & 1 gives {n 0-7 chunk 0, n 0-7 chunk 1, n 8-15 chunk 0, n 8-15 chunk 1} =
 * b[0..1] of n-block 0 then of n-block 1 (x2: lanes 0-15, the first n-block only). */

/* Per-thread constants of the main loop (kept in registers once the helpers are inlined). */
struct hot_gemm_ctx {
  unsigned smem;            /* shared-state address of stage 0 */
  /* ldmatrix: this lane's row offset in the A / B tile for mi = 0 / nj = 0 (further mi, nj add
   * compile-time multiples of 16 rows) and its 16-byte chunk within a 32-byte K step */
  unsigned a_ld, b_ld;
  int a_hi, b_hi, swz;
  /* cp.async loader: rows m0 / n0 of A / B; this thread's first chunk (row r0, chunk c0) */
  const signed char *a_tile, *b_tile;
  long long pitch;          /* row bytes: Kpad (s8) or Kpad / 2 (s4) */
  int r0, c0;
  int a_left, b_left;       /* M - m0 - r0, N - n0 - r0: rows r0 + x are real iff x < left */
  int tid, ktiles;
};

/* Rows one pass of all threads covers when THREADS is a multiple of the chunks per row (then
 * every thread keeps one chunk column c0 and steps down by HOT_RSTEP rows); else 0 and the
 * generic path below maps chunk ids one by one (KB = 96). */
#define HOT_RSTEP (HOT_THREADS % HOT_CPR == 0 ? HOT_THREADS / HOT_CPR : 0)

/* Issues the cp.async of one operand tile (ROWS rows of KB bytes) of K tile kt into the shared
 * tile at dst. Rows past the matrix are zero-filled: src-size 0, and the address used is row 0
 * of the block tile (always real: m0 < M), so nothing outside the operand is ever addressed. */
template <int ROWS>
static __device__ __forceinline__ void hot_load_operand(const hot_gemm_ctx &x, unsigned dst,
                                                        const signed char *tile, int left,
                                                        long long koff) {
  const signed char *row0 = tile + koff;
  if (HOT_RSTEP != 0) {
    /* thread -> (row r0 + i*RSTEP, chunk c0); with RSTEP % 8 == 0 the swizzle is that of r0 */
    const int sw0 = HOT_SWZ(x.r0);
    const long long off0 = (long long)x.r0 * x.pitch + x.c0 * 16;
#pragma unroll
    for (int i = 0; i < (ROWS + HOT_RSTEP - 1) / HOT_RSTEP; ++i) {
      const int r = x.r0 + i * HOT_RSTEP;
      if (ROWS % HOT_RSTEP == 0 || r < ROWS) {
        const int sw = HOT_RSTEP % 8 == 0 ? sw0 : HOT_SWZ(r);
        const bool ok = i * HOT_RSTEP < left;
        const signed char *src = row0 + (ok ? off0 + (long long)(i * HOT_RSTEP) * x.pitch : 0);
        hot_cp_async16(dst + (unsigned)(r * HOT_KB + ((x.c0 ^ sw) << 4)), src, ok ? 16 : 0);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < (ROWS * HOT_CPR + HOT_THREADS - 1) / HOT_THREADS; ++i) {
      const int id = x.tid + i * HOT_THREADS;
      if ((ROWS * HOT_CPR) % HOT_THREADS == 0 || id < ROWS * HOT_CPR) {
        const int r = id / HOT_CPR, c = id % HOT_CPR;
        const bool ok = r - x.r0 < left; /* left counts from r0 */
        const signed char *src = row0 + (ok ? (long long)r * x.pitch + c * 16 : 0);
        hot_cp_async16(dst + (unsigned)(r * HOT_KB + ((c ^ HOT_SWZ(r)) << 4)), src, ok ? 16 : 0);
      }
    }
  }
}

/* Loads K tile kt (KB bytes of every row of the A and B block tiles) into the stage at shared
 * address st, or nothing when kt >= ktiles (the caller still commits an empty group, keeping
 * the group count uniform). */
static __device__ __forceinline__ void hot_load_tile(const hot_gemm_ctx &x, unsigned st, int kt) {
  if (kt >= x.ktiles) return;
  const long long koff = (long long)kt * HOT_KB;
  hot_load_operand<HOT_TILE_M>(x, st, x.a_tile, x.a_left, koff);
  hot_load_operand<HOT_TILE_N>(x, st + HOT_A_BYTES, x.b_tile, x.b_left, koff);
}

/* Fragments of K step ks (32 bytes) of the stage at shared address st into af / bf. */
static __device__ __forceinline__ void hot_load_frags(const hot_gemm_ctx &x,
                                                      unsigned (&af)[HOT_MI][4],
                                                      unsigned (&bf)[HOT_NI][2], unsigned st,
                                                      int ks) {
  const unsigned pa = st + x.a_ld + (unsigned)(((2 * ks + x.a_hi) ^ x.swz) << 4);
  const unsigned pb = st + HOT_A_BYTES + x.b_ld + (unsigned)(((2 * ks + x.b_hi) ^ x.swz) << 4);
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
    hot_ldmatrix_x4(pa + mi * 16 * HOT_KB, af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
#pragma unroll
  for (int nj = 0; nj < HOT_NI / 2; ++nj)
    hot_ldmatrix_x4(pb + nj * 16 * HOT_KB, bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0],
                    bf[2 * nj + 1][1]);
  if (HOT_NI % 2) /* odd number of n8 blocks: the last one alone (lanes 0-15 give addresses) */
    hot_ldmatrix_x2(pb + (HOT_NI / 2) * 16 * HOT_KB, bf[HOT_NI - 1][0], bf[HOT_NI - 1][1]);
}

/* Mutable main-loop state. */
struct hot_gemm_state {
  int acc[HOT_MI][HOT_NI][4];
  unsigned af[2][HOT_MI][4];
  unsigned bf[2][HOT_NI][2];
  unsigned rd, wr; /* shared address of the stage being computed / the next prefetch target */
};

/* Every int32 accumulator of the thread to 0 (the start, and each segment end of HOT_SEGS = 1). */
static __device__ __forceinline__ void hot_acc_zero(hot_gemm_state &s) {
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < HOT_NI; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q) s.acc[mi][ni][q] = 0;
}

static __device__ __forceinline__ unsigned hot_next_stage(const hot_gemm_ctx &x, unsigned st) {
  return st + HOT_STAGE_BYTES == x.smem + HOT_SMEM_BYTES ? x.smem : st + HOT_STAGE_BYTES;
}

/* One K tile. P = register buffer that holds the fragments of its first K step; the step
 * leaves the fragments of the next tile's first K step in buffer (P + KSTEPS) & 1. With an
 * even KSTEPS that is always P = 0; with an odd one the caller alternates P = 0, 1, so every
 * buffer index is a compile-time constant (no local-memory arrays).
 *
 * Hazards: the prefetch into stage wr = (kt-1) % STAGES is issued at ks = 0; the last ldmatrix
 * from that stage (tile kt-1) happened before the __syncthreads of the previous tile's last K
 * step (or, with KSTEPS = 1, of the tile step before), so no warp still reads it. At the last K
 * step, wait_group(STAGES-2) leaves only the STAGES-2 youngest groups in flight, so tile kt+1 has
 * landed; the barrier then publishes it to all warps before its first ldmatrix. */
template <int P>
static __device__ __forceinline__ void hot_ktile(const hot_gemm_ctx &x, hot_gemm_state &s,
                                                 int kt) {
#pragma unroll
  for (int ks = 0; ks < HOT_KSTEPS; ++ks) {
    const int cur = (P + ks) & 1;
    if (ks == 0) {
      hot_load_tile(x, s.wr, kt + HOT_STAGES - 1);
      hot_cp_async_commit();
      s.wr = hot_next_stage(x, s.wr);
    }
    if (ks == HOT_KSTEPS - 1) {
      hot_cp_async_wait<HOT_STAGES - 2>();
      __syncthreads();
      s.rd = hot_next_stage(x, s.rd);
    }
    /* next K step's fragments (the next tile's first one at the last step) */
    hot_load_frags(x, s.af[cur ^ 1], s.bf[cur ^ 1], s.rd, (ks + 1) % HOT_KSTEPS);
#pragma unroll
    for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < HOT_NI; ++ni) {
        /* serpentine over n: consecutive mmas share the B fragment at the turns */
        const int nn = (mi & 1) ? HOT_NI - 1 - ni : ni;
        hot_mma(s.acc[mi][nn], s.af[cur][mi], s.bf[cur][nn]);
      }
  }
}

/* Converts this thread's accumulators into C with factor alpha (CONTRACT 14): HOT_SEGS = 0 stores
 * HOT_MUL(HOT_I2F(acc), factor(m)) (row factor as in the design note); HOT_SEGS = 1 stores
 * (add = false) or adds (add = true) HOT_MUL(HOT_I2F(acc), alpha) of one segment. mb / nb: the
 * output row / column of this thread's accumulator 0 of fragment (0, 0). */
static __device__ __forceinline__ void hot_epilogue(const int (&acc)[HOT_MI][HOT_NI][4], float *C,
                                                    const float *row_scale, float alpha, int mb,
                                                    int nb, int M, int N, int ldc, bool vec,
                                                    bool add) {
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = mb + mi * 16 + 8 * h;
      if (m >= M) continue;
      float *crow = C + (long long)m * ldc;
      /* overflow check (CONTRACT 19): HOT_SEGS = 0 once for the row's stored columns
       * (hot_row_range_check; columns past N hold acc = 0: their B rows are zero-filled),
       * HOT_SEGS = 1 element by element in hot_store_or_add_pair */
      if (HOT_SEGS) {
#pragma unroll
        for (int ni = 0; ni < HOT_NI; ++ni)
          hot_store_or_add_pair(crow, nb + ni * 8, N, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                                alpha, vec, add);
      } else {
        const float factor = hot_row_factor(row_scale, m, alpha);
        float amax = 0.0f;
#pragma unroll
        for (int ni = 0; ni < HOT_NI; ++ni) {
          hot_store_pair(crow, nb + ni * 8, N, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                         factor, vec);
          amax = hot_row_amax_pair(amax, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
        }
        hot_row_range_check(amax, factor);
      }
    }
  }
}

/* HOT_SEGS = 1, after the mmas of K tile kt: when kt ends a segment (kt + 1 == seg_end) and
 * more tiles follow, C (+)= acc * c_seg for that segment seg, acc = 0, and the next segment
 * begins; the last segment is converted after the loop. The only state kept across the K loop is
 * seg_end: everything else is recomputed here from the kernel arguments and the thread's
 * indices (the main loop has no registers to spare). */
static __device__ __forceinline__ void hot_seg_boundary(const hot_gemm_ctx &x, hot_gemm_state &s,
                                                        int kt, int &seg_end, float *C,
                                                        const float *alpha_a,
                                                        const float *alpha_b, float alpha_div,
                                                        int M, int N, int ldc, int seg_kpad) {
  if (kt + 1 != seg_end || kt + 1 >= x.ktiles) return;
  const int seg_tiles = seg_kpad / HOT_TILE_K, seg = seg_end / seg_tiles - 1;
  const float c = hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  const int tid = hot_tid_opaque(), lane = tid & 31, warp = tid >> 5;
  const int mb = (int)blockIdx.y * HOT_TILE_M + (warp / HOT_WARPS_N) * HOT_WM + (lane >> 2);
  const int nb = (int)blockIdx.x * HOT_TILE_N + (warp % HOT_WARPS_N) * HOT_WN + 2 * (lane & 3);
  hot_epilogue(s.acc, C, nullptr, c, mb, nb, M, N, ldc, vec, seg > 0);
  hot_acc_zero(s);
  seg_end += seg_tiles;
}

extern "C" __global__ void __launch_bounds__(HOT_THREADS, 1)
    HOT_KNAME(const signed char *__restrict__ A, const signed char *__restrict__ B,
              float *__restrict__ C, const float *__restrict__ row_scale,
              const float *__restrict__ alpha_a, const float *__restrict__ alpha_b,
              float alpha_div, int M, int N, int Kpad, int ldc, int seg_kpad) {
  extern __shared__ __align__(128) unsigned char hot_smem[];

  const int tid = (int)threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wm = warp / HOT_WARPS_N, wn = warp % HOT_WARPS_N;
  const int m0 = (int)blockIdx.y * HOT_TILE_M;
  const int n0 = (int)blockIdx.x * HOT_TILE_N;

  hot_gemm_ctx x;
  x.smem = hot_smem_u32(hot_smem);
  x.a_ld = (unsigned)((wm * HOT_WM + (lane & 15)) * HOT_KB);
  x.b_ld = (unsigned)((wn * HOT_WN + (lane & 7) + ((lane >> 4) << 3)) * HOT_KB);
  x.a_hi = lane >> 4;
  x.b_hi = (lane >> 3) & 1;
  /* every fragment row base is a multiple of 8 (WM % 16 == 0, WN % 8 == 0), so the row's low
   * three bits, hence its swizzle, are those of lane & 7 for A and B alike */
  x.swz = HOT_SWZ(lane & 7);
  x.pitch = HOT_CODES ? (long long)(Kpad / 2) : (long long)Kpad;
  x.a_tile = A + (long long)m0 * x.pitch;
  x.b_tile = B + (long long)n0 * x.pitch;
  x.r0 = HOT_RSTEP != 0 ? tid / HOT_CPR : 0;
  x.c0 = HOT_RSTEP != 0 ? tid % HOT_CPR : 0;
  x.a_left = M - m0 - x.r0;
  x.b_left = N - n0 - x.r0;
  x.tid = tid;
  x.ktiles = Kpad / HOT_TILE_K;

  hot_gemm_state s;
  hot_acc_zero(s);

  /* prologue: tiles 0 .. STAGES-2 in flight, one group each */
#pragma unroll
  for (int st = 0; st < HOT_STAGES - 1; ++st) {
    hot_load_tile(x, x.smem + st * HOT_STAGE_BYTES, st);
    hot_cp_async_commit();
  }
  hot_cp_async_wait<HOT_STAGES - 2>();
  __syncthreads();
  s.rd = x.smem;
  s.wr = x.smem + (HOT_STAGES - 1) * HOT_STAGE_BYTES;
  hot_load_frags(x, s.af[0], s.bf[0], s.rd, 0);

  /* HOT_SEGS = 1: the current segment ends with K tile seg_end - 1 (seg_kpad / HOT_TILE_K K
   * tiles a segment); HOT_SEGS = 0 never reads seg_kpad (every branch on it is dead code) */
  int seg_end = HOT_SEGS ? seg_kpad / HOT_TILE_K : 0;

  for (int kt = 0; kt < x.ktiles; ++kt) {
    hot_ktile<0>(x, s, kt);
    if (HOT_SEGS)
      hot_seg_boundary(x, s, kt, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc, seg_kpad);
    if (HOT_KSTEPS % 2 == 1 && kt + 1 < x.ktiles) {
      ++kt;
      hot_ktile<1>(x, s, kt);
      if (HOT_SEGS)
        hot_seg_boundary(x, s, kt, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc, seg_kpad);
    }
  }
  hot_cp_async_wait<0>(); /* only empty groups can remain; keep the exit clean */

  /* ---- epilogue: C = HOT_MUL(HOT_I2F(acc), factor(row)), never fused (HOT_SEGS = 1: the last
   * segment's v added to C) ------------------------------------------------------------------ */
  /* the epilogue constant of CONTRACT 14 from the scales on the device: product, then division */
  const int seg =
      HOT_SEGS && seg_kpad >= HOT_TILE_K ? seg_end / (seg_kpad / HOT_TILE_K) - 1 : 0;
  const float alpha =
      HOT_SEGS ? hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div)
               : hot_epilogue_alpha(alpha_a, alpha_b, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  hot_epilogue(s.acc, C, HOT_SEGS ? nullptr : row_scale, alpha, m0 + wm * HOT_WM + (lane >> 2),
               n0 + wn * HOT_WN + 2 * (lane & 3), M, N, ldc, vec, HOT_SEGS && seg > 0);
}
} /* namespace hot_k5 */
#undef HOT_KNAME
#undef HOT_CODES
#undef HOT_TILE_M
#undef HOT_TILE_N
#undef HOT_TILE_K
#undef HOT_WARPS_M
#undef HOT_WARPS_N
#undef HOT_STAGES
#undef HOT_SEGS
#undef HOT_THREADS
#undef HOT_KB
#undef HOT_CPR
#undef HOT_KSTEPS
#undef HOT_WM
#undef HOT_WN
#undef HOT_MI
#undef HOT_NI
#undef HOT_A_BYTES
#undef HOT_STAGE_BYTES
#undef HOT_SMEM_BYTES
#undef HOT_A_CHUNKS
#undef HOT_B_CHUNKS
#undef HOT_A_ITERS
#undef HOT_B_ITERS
#undef HOT_SWZ
#undef HOT_RSTEP

/* ---- hot_gemm_mma_s8_64x64x64_w2x2_s4 from templates/gemm_int.cu */
#define HOT_KNAME hot_gemm_mma_s8_64x64x64_w2x2_s4
#define HOT_CODES 0
#define HOT_TILE_M 64
#define HOT_TILE_N 64
#define HOT_TILE_K 64
#define HOT_WARPS_M 2
#define HOT_WARPS_N 2
#define HOT_STAGES 4
#define HOT_SEGS 0
namespace hot_k6 {
#line 1 "templates/gemm_int.cu"
/* @hot-params: HOT_KNAME HOT_CODES HOT_TILE_M HOT_TILE_N HOT_TILE_K HOT_WARPS_M HOT_WARPS_N HOT_STAGES HOT_SEGS */
/* gemm_int.cu — integer tensor-core GEMM with the fused HOT dequantization epilogue
 * (CONTRACT.md sections 3.5, 4.6 and 7).
 *
 * HOT_SEGS = 0 (one int32 sum over all of K):
 *   C[m*ldc + n] = HOT_MUL(HOT_I2F(acc[m][n]), factor(m)),   acc[m][n] = sum_k A[m][k] * B[n][k]
 *   factor(m)    = row_scale ? HOT_MUL(row_scale[m], alpha) : alpha
 *   alpha        = HOT_DIV(HOT_MUL(*alpha_a, alpha_b ? *alpha_b : 1.0f), alpha_div)
 * HOT_SEGS = 1 (segmented: the g_w GEMM of HLA scale groups, CONTRACT 9 and 14): K is cut into
 * G = Kpad / seg_kpad segments of seg_kpad codes; segment j has its own int32 sum and factor:
 *   acc_j[m][n] = sum over k in [j*seg_kpad, (j+1)*seg_kpad) of A[m][k] * B[n][k]
 *   c_j         = HOT_DIV(HOT_MUL(alpha_a[j], alpha_b ? alpha_b[j] : 1.0f), alpha_div)
 *   v_j         = HOT_MUL(HOT_I2F(acc_j[m][n]), c_j)
 *   C[m*ldc + n] = v_0, then C = HOT_ADD(C, v_j) for j = 1 .. G-1 in segment order
 * (row_scale must be NULL: it is not read).
 *
 * Entry:
 *   HOT_KNAME (const signed char *A, const signed char *B, float *C, const float *row_scale,
 *             const float *alpha_a, const float *alpha_b, float alpha_div, int M, int N,
 *             int Kpad, int ldc, int seg_kpad)
 * seg_kpad: the codes of one K segment (HOT_SEGS = 1); HOT_SEGS = 0 ignores it (the runtime
 * passes Kpad).
 * alpha is computed on the device (once per thread, from two device words), so the scales
 * written by the operand kernels never travel through the host:
 *   HQ  (CONTRACT 14): row_scale = s_g (T floats), alpha_a = &s_w,  alpha_b = NULL,  div = b
 *        -> alpha = (s_w * 1.0f) / b = s_w / b = c_w exactly (x * 1.0f == x in IEEE);
 *   HLA (CONTRACT 14): row_scale = NULL, alpha_a = &s_g^, alpha_b = &s_x^, div = p
 *        -> alpha = (s_g^ * s_x^) / p = c;
 *   HLA with scale groups (HOT_SEGS = 1): row_scale = NULL, alpha_a = s_g^, alpha_b = s_x^
 *        (hla.groups floats each), div = p, seg_kpad = the group's padded K (group_k_pad)
 *        -> c_j = (s_g^[j] * s_x^[j]) / p.
 * int32 accumulation (exact while |acc| < 2^31). Integer products are exact and the epilogue is
 * single-rounding fp32 operations in the twin's order, so every arch and tile configuration
 * gives the same bits as the CPU twin.
 *
 * ==== Design note (what the planner and the runtime must respect) ===========================
 *
 * Operands ("TN", i.e. mma .row.col): A is M x Kpad, B is N x Kpad, both row-major with K
 * contiguous. HOT_CODES = 0: one signed byte per code, row pitch Kpad bytes. HOT_CODES = 1:
 * packed two's-complement nibbles, element 2j in the low nibble of byte j, row pitch Kpad/2
 * bytes. The kernel works in BYTES of K throughout: one mma consumes 32 bytes of K per row
 * (m16n8k32 .s8 = 32 codes, m16n8k64 .s4 = 64 codes), and the fragment byte layouts of the two
 * instructions are identical (see "Fragment layouts" below).
 *
 * Constraints on the arguments (not checked at run time):
 *  - Kpad % HOT_TILE_K == 0 and Kpad >= 0 (Kpad == 0 writes C = 0 * factor); codes in
 *    [Kreal, Kpad) are zero (the planner zero-fills);
 *  - A and B 16-byte aligned (cudaMalloc gives 256); the row pitch is then a multiple of 16
 *    bytes because HOT_TILE_K bytes are a multiple of 32;
 *  - M, N >= 0 arbitrary: rows past M (A) or N (B) are zero-filled in shared memory, never read;
 *    C is written only for m < M, n < N; ldc >= N. float2 stores are used when ldc is even and
 *    C is 8-byte aligned, scalar stores otherwise;
 *  - row_scale: NULL or M floats; alpha_a: one float (never NULL); alpha_b: NULL or one float;
 *    alpha_div: a power of two (b or p), so the division is exact unless it underflows;
 *  - grid.y = ceil(M / HOT_TILE_M) <= 65535;
 *  - HOT_SEGS = 1: seg_kpad > 0, seg_kpad % HOT_TILE_K == 0, Kpad % seg_kpad == 0 (G segments;
 *    Kpad == 0 writes C = 0 * c_0); row_scale == NULL; alpha_a and alpha_b (never NULL here)
 *    hold G floats each. C is both written and read back: no other thread or kernel may touch
 *    C's M x N window during the launch (ldc >= N keeps the rows apart).
 *
 * Launch geometry:
 *   grid  = (ceil(N / HOT_TILE_N), ceil(M / HOT_TILE_M), 1)   x over N tiles, y over M tiles
 *   block = (HOT_THREADS, 1, 1),  HOT_THREADS = 32 * HOT_WARPS_M * HOT_WARPS_N
 *   dynamic shared memory (bytes), no padding (the layout is XOR-swizzled):
 *     HOT_SMEM_BYTES = HOT_STAGES * (HOT_TILE_M + HOT_TILE_N) * KB,
 *     KB = HOT_TILE_K (HOT_CODES = 0) or HOT_TILE_K / 2 (HOT_CODES = 1)   [bytes of K per row]
 *   e.g. 128x128x64 s8 (or 128x128x128 s4), 3 stages: 49152; 4 stages: 65536;
 *        64x64x64 s8 4 stages: 32768. Above 48 KiB the runtime must raise
 *        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES before the launch.
 *
 * Legal parameters (static_asserts below enforce them):
 *   HOT_CODES 0 or 1; KB in {32, 64, 96, 128, 256} bytes, i.e. HOT_TILE_K in {32, 64, 96, 128, 256}
 *   for s8 and {64, 128, 192, 256, 512} for s4; HOT_TILE_M % (16 * HOT_WARPS_M) == 0;
 *   HOT_TILE_N % (8 * HOT_WARPS_N) == 0; 1 <= HOT_WARPS_M * HOT_WARPS_N <= 8 (threads <= 256);
 *   2 <= HOT_STAGES <= 8. This covers every tile the planner accepts (tile_k = 1..4 mma K steps).
 *   tools/check-templates.sh compiles a spread of them for sm_80/86/89/90 (no spills allowed);
 *   tools/gemm-emu.sh runs them in a CPU emulator of the PTX instructions against a reference.
 *   Registers: 64x64 warp tiles (e.g. 128x128 with 2x2 warps) take ~240 (2 blocks of 4 warps
 *   per SM), 64x32 warp tiles (128x128, 2x4) ~140. __launch_bounds__(threads, 1) is deliberate:
 *   without the explicit 1, ptxas for sm_90 caps 256-thread blocks at 128 registers and spills.
 *
 * Block/warp mapping: warp w (0 .. WARPS_M*WARPS_N-1) owns the warp tile of rows
 * (w / WARPS_N) * WM ... + WM-1 and columns (w % WARPS_N) * WN ... + WN-1 of the block tile,
 * WM = TILE_M / WARPS_M, WN = TILE_N / WARPS_N; it holds MI x NI accumulator fragments of
 * 16 x 8 (MI = WM / 16, NI = WN / 8).
 *
 * Pipeline: HOT_STAGES shared-memory stages filled by 16-byte cp.async.cg (L2 only, zero-fill
 * for rows past M/N via src-size 0), one commit group per K tile, cp.async.wait_group
 * (STAGES-2) + one __syncthreads per K tile; ldmatrix fragments double-buffered in registers
 * (the fragments of the next 32-byte K step, also across the K-tile boundary, are loaded
 * before the mma of the current one).
 *
 * Segments (HOT_SEGS = 1): segment j is K tiles [j*S, (j+1)*S), S = seg_kpad / HOT_TILE_K. After
 * the mmas of a segment's last K tile (the tile step has already issued the prefetch and loaded
 * the next tile's first fragments: the pipeline runs on across the boundary untouched), each
 * thread converts its own accumulators with c_j, stores them into C (j = 0) or adds them to what
 * it stored there before (j > 0; hot_store_or_add_pair), and zeroes them. The last segment is
 * converted after the loop, where HOT_SEGS = 0 converts its one sum. No extra register arrays:
 * the running sum lives in C. Each output element has one owner thread, so the order of the
 * additions is that thread's program order (segment order), whatever the blocks and warps do.
 *
 * Shared layout per stage: [A tile: TILE_M rows x KB bytes][B tile: TILE_N rows x KB bytes],
 * rows unpadded; the 16-byte chunk c of row r is stored at chunk c ^ swz(r), where swz is chosen
 * so that the 8 row addresses of every ldmatrix phase (8 consecutive rows, one logical chunk)
 * fall into 8 distinct 16-byte bank groups:
 *   KB = 32  (2 chunks/row, 4 rows per 128 B): swz = (r >> 2) & 1
 *   KB = 64  (4 chunks/row, 2 rows per 128 B): swz = (r >> 1) & 3
 *   KB = 96  (6 chunks/row):                     swz = (r >> 2) & 1   (rows r, r+4 collide unswizzled)
 *   KB >= 128 (8+ chunks/row):                   swz = r & 7
 * swz only depends on r & 7, so with every fragment row base a multiple of 8 it is a per-lane
 * constant.
 * =============================================================================================
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_gemm_int
#define HOT_CODES 0
#define HOT_TILE_M 128
#define HOT_TILE_N 128
#define HOT_TILE_K 64
#define HOT_WARPS_M 2
#define HOT_WARPS_N 2
#define HOT_STAGES 4
#define HOT_SEGS 0
#endif




/* ---- derived compile-time quantities (macros: NVRTC makes namespace constexpr device globals) */
#define HOT_THREADS (32 * HOT_WARPS_M * HOT_WARPS_N)
#define HOT_KB (HOT_CODES ? HOT_TILE_K / 2 : HOT_TILE_K) /* bytes of K per row per stage */
#define HOT_CPR (HOT_KB / 16)                           /* 16-byte chunks per row */
#define HOT_KSTEPS (HOT_KB / 32)                        /* mma K steps per stage */
#define HOT_WM (HOT_TILE_M / HOT_WARPS_M)
#define HOT_WN (HOT_TILE_N / HOT_WARPS_N)
#define HOT_MI (HOT_WM / 16)
#define HOT_NI (HOT_WN / 8)
#define HOT_A_BYTES (HOT_TILE_M * HOT_KB)
#define HOT_STAGE_BYTES ((HOT_TILE_M + HOT_TILE_N) * HOT_KB)
#define HOT_SMEM_BYTES (HOT_STAGES * HOT_STAGE_BYTES)
#define HOT_A_CHUNKS (HOT_TILE_M * HOT_CPR)
#define HOT_B_CHUNKS (HOT_TILE_N * HOT_CPR)
#define HOT_A_ITERS ((HOT_A_CHUNKS + HOT_THREADS - 1) / HOT_THREADS)
#define HOT_B_ITERS ((HOT_B_CHUNKS + HOT_THREADS - 1) / HOT_THREADS)
/* swizzle of 16-byte chunks as a function of the row (see the design note) */
#define HOT_SWZ(r)                                                                              \
  (HOT_CPR == 4 ? (((r) >> 1) & 3) : (HOT_CPR == 2 || HOT_CPR == 6) ? (((r) >> 2) & 1) : ((r)&7))

static_assert(HOT_CODES == 0 || HOT_CODES == 1, "HOT_CODES must be 0 (int8) or 1 (packed int4)");
static_assert(HOT_CODES == 0 || HOT_TILE_K % 2 == 0, "packed int4 needs an even HOT_TILE_K");
static_assert(HOT_KB % 32 == 0, "HOT_TILE_K must be a multiple of the mma K (32 s8, 64 s4)");
static_assert(HOT_CPR == 2 || HOT_CPR == 4 || HOT_CPR == 6 || HOT_CPR == 8 || HOT_CPR == 16,
              "HOT_TILE_K bytes must be 32, 64, 96, 128 or 256 (swizzle patterns)");
static_assert(HOT_WARPS_M >= 1 && HOT_WARPS_N >= 1 && HOT_WARPS_M * HOT_WARPS_N <= 8,
              "1..8 warps per block");
static_assert(HOT_TILE_M % (16 * HOT_WARPS_M) == 0, "HOT_TILE_M must split into warps of 16 rows");
static_assert(HOT_TILE_N % (8 * HOT_WARPS_N) == 0, "HOT_TILE_N must split into warps of 8 columns");
static_assert(HOT_STAGES >= 2 && HOT_STAGES <= 8, "HOT_STAGES must be in [2, 8]");
static_assert(HOT_A_BYTES % 128 == 0 && HOT_STAGE_BYTES % 128 == 0,
              "stage and B-tile bases must stay 128-byte aligned (swizzle assumes it)");
static_assert(HOT_MI * HOT_NI <= 64, "warp tile too large for the register file");
static_assert(HOT_SEGS == 0 || HOT_SEGS == 1, "HOT_SEGS must be 0 (one K sum) or 1 (K segments)");

/* ---- PTX wrappers ------------------------------------------------------------------------- */

/* ldmatrix .m8n8 .b16: each 8x8 b16 matrix is 8 rows of 16 bytes; lanes 8j..8j+7 give the row
 * addresses of matrix j; lane l receives, from matrix j, the 32-bit word at row l/4, bytes
 * 4*(l%4) .. 4*(l%4)+3 (PTX ISA 9.7.14.5.15 ldmatrix, "fragment of the loaded matrix"). We treat
 * the data as raw bytes: 16 bytes = 16 s8 codes or 32 packed s4 codes. */
static __device__ __forceinline__ void hot_ldmatrix_x4(unsigned addr, unsigned &r0, unsigned &r1,
                                                       unsigned &r2, unsigned &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

static __device__ __forceinline__ void hot_ldmatrix_x2(unsigned addr, unsigned &r0, unsigned &r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1)
               : "r"(addr));
}

/* One 16 x 8 x (32 bytes of K) tensor-core product, d += a * b. */
static __device__ __forceinline__ void hot_mma(int *d, const unsigned *a, const unsigned *b) {
#if HOT_CODES
  asm volatile("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* ---- Fragment layouts (PTX ISA 9.7.14.5.x "Matrix Fragments for mma.m16n8k32" (.s8) and
 * "... for mma.m16n8k64" (.s4)); g = lane >> 2 (groupID), t = lane & 3 (threadID_in_group).
 * In bytes of K both instructions agree:
 *   A (16 x 32 bytes): a[0] = row g,   bytes 4t..4t+3       a[1] = row g+8, bytes 4t..4t+3
 *                      a[2] = row g,   bytes 16+4t..+3      a[3] = row g+8, bytes 16+4t..+3
 *     (.s8: a_i row g for i in [0,4)u[8,12), col 4t + (i&3) (+16 for i >= 8);
 *      .s4: a_i row g for i in [0,8)u[16,24), col 8t + (i&7) (+32 for i >= 16); nibble i of a
 *      register is element i, so the low nibble of a byte is the lower K index = our packing.)
 *   B (32 bytes x 8, stored as N rows of K): b[0] = column n = g, bytes 4t..4t+3,
 *                                            b[1] = column n = g, bytes 16+4t..+3
 *   C/D (16 x 8 s32): d[0], d[1] = row g, cols 2t, 2t+1;  d[2], d[3] = row g+8, cols 2t, 2t+1.
 * ldmatrix.x4 on A with lane l addressing row (l & 15), chunk (l >> 4) of the 16 x 32-byte
 * slice gives matrices {rows 0-7 chunk 0, rows 8-15 chunk 0, rows 0-7 chunk 1, rows 8-15
 * chunk 1} = exactly a[0..3]. ldmatrix.x4 on B with lane l addressing n-row (l & 7) + 8*(l >> 4),
 * chunk (l >> 3) & 1 gives {n 0-7 chunk 0, n 0-7 chunk 1, n 8-15 chunk 0, n 8-15 chunk 1} =
 * b[0..1] of n-block 0 then of n-block 1 (x2: lanes 0-15, the first n-block only). */

/* Per-thread constants of the main loop (kept in registers once the helpers are inlined). */
struct hot_gemm_ctx {
  unsigned smem;            /* shared-state address of stage 0 */
  /* ldmatrix: this lane's row offset in the A / B tile for mi = 0 / nj = 0 (further mi, nj add
   * compile-time multiples of 16 rows) and its 16-byte chunk within a 32-byte K step */
  unsigned a_ld, b_ld;
  int a_hi, b_hi, swz;
  /* cp.async loader: rows m0 / n0 of A / B; this thread's first chunk (row r0, chunk c0) */
  const signed char *a_tile, *b_tile;
  long long pitch;          /* row bytes: Kpad (s8) or Kpad / 2 (s4) */
  int r0, c0;
  int a_left, b_left;       /* M - m0 - r0, N - n0 - r0: rows r0 + x are real iff x < left */
  int tid, ktiles;
};

/* Rows one pass of all threads covers when THREADS is a multiple of the chunks per row (then
 * every thread keeps one chunk column c0 and steps down by HOT_RSTEP rows); else 0 and the
 * generic path below maps chunk ids one by one (KB = 96). */
#define HOT_RSTEP (HOT_THREADS % HOT_CPR == 0 ? HOT_THREADS / HOT_CPR : 0)

/* Issues the cp.async of one operand tile (ROWS rows of KB bytes) of K tile kt into the shared
 * tile at dst. Rows past the matrix are zero-filled: src-size 0, and the address used is row 0
 * of the block tile (always real: m0 < M), so nothing outside the operand is ever addressed. */
template <int ROWS>
static __device__ __forceinline__ void hot_load_operand(const hot_gemm_ctx &x, unsigned dst,
                                                        const signed char *tile, int left,
                                                        long long koff) {
  const signed char *row0 = tile + koff;
  if (HOT_RSTEP != 0) {
    /* thread -> (row r0 + i*RSTEP, chunk c0); with RSTEP % 8 == 0 the swizzle is that of r0 */
    const int sw0 = HOT_SWZ(x.r0);
    const long long off0 = (long long)x.r0 * x.pitch + x.c0 * 16;
#pragma unroll
    for (int i = 0; i < (ROWS + HOT_RSTEP - 1) / HOT_RSTEP; ++i) {
      const int r = x.r0 + i * HOT_RSTEP;
      if (ROWS % HOT_RSTEP == 0 || r < ROWS) {
        const int sw = HOT_RSTEP % 8 == 0 ? sw0 : HOT_SWZ(r);
        const bool ok = i * HOT_RSTEP < left;
        const signed char *src = row0 + (ok ? off0 + (long long)(i * HOT_RSTEP) * x.pitch : 0);
        hot_cp_async16(dst + (unsigned)(r * HOT_KB + ((x.c0 ^ sw) << 4)), src, ok ? 16 : 0);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < (ROWS * HOT_CPR + HOT_THREADS - 1) / HOT_THREADS; ++i) {
      const int id = x.tid + i * HOT_THREADS;
      if ((ROWS * HOT_CPR) % HOT_THREADS == 0 || id < ROWS * HOT_CPR) {
        const int r = id / HOT_CPR, c = id % HOT_CPR;
        const bool ok = r - x.r0 < left; /* left counts from r0 */
        const signed char *src = row0 + (ok ? (long long)r * x.pitch + c * 16 : 0);
        hot_cp_async16(dst + (unsigned)(r * HOT_KB + ((c ^ HOT_SWZ(r)) << 4)), src, ok ? 16 : 0);
      }
    }
  }
}

/* Loads K tile kt (KB bytes of every row of the A and B block tiles) into the stage at shared
 * address st, or nothing when kt >= ktiles (the caller still commits an empty group, keeping
 * the group count uniform). */
static __device__ __forceinline__ void hot_load_tile(const hot_gemm_ctx &x, unsigned st, int kt) {
  if (kt >= x.ktiles) return;
  const long long koff = (long long)kt * HOT_KB;
  hot_load_operand<HOT_TILE_M>(x, st, x.a_tile, x.a_left, koff);
  hot_load_operand<HOT_TILE_N>(x, st + HOT_A_BYTES, x.b_tile, x.b_left, koff);
}

/* Fragments of K step ks (32 bytes) of the stage at shared address st into af / bf. */
static __device__ __forceinline__ void hot_load_frags(const hot_gemm_ctx &x,
                                                      unsigned (&af)[HOT_MI][4],
                                                      unsigned (&bf)[HOT_NI][2], unsigned st,
                                                      int ks) {
  const unsigned pa = st + x.a_ld + (unsigned)(((2 * ks + x.a_hi) ^ x.swz) << 4);
  const unsigned pb = st + HOT_A_BYTES + x.b_ld + (unsigned)(((2 * ks + x.b_hi) ^ x.swz) << 4);
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
    hot_ldmatrix_x4(pa + mi * 16 * HOT_KB, af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
#pragma unroll
  for (int nj = 0; nj < HOT_NI / 2; ++nj)
    hot_ldmatrix_x4(pb + nj * 16 * HOT_KB, bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0],
                    bf[2 * nj + 1][1]);
  if (HOT_NI % 2) /* odd number of n8 blocks: the last one alone (lanes 0-15 give addresses) */
    hot_ldmatrix_x2(pb + (HOT_NI / 2) * 16 * HOT_KB, bf[HOT_NI - 1][0], bf[HOT_NI - 1][1]);
}

/* Mutable main-loop state. */
struct hot_gemm_state {
  int acc[HOT_MI][HOT_NI][4];
  unsigned af[2][HOT_MI][4];
  unsigned bf[2][HOT_NI][2];
  unsigned rd, wr; /* shared address of the stage being computed / the next prefetch target */
};

/* Every int32 accumulator of the thread to 0 (the start, and each segment end of HOT_SEGS = 1). */
static __device__ __forceinline__ void hot_acc_zero(hot_gemm_state &s) {
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < HOT_NI; ++ni)
#pragma unroll
      for (int q = 0; q < 4; ++q) s.acc[mi][ni][q] = 0;
}

static __device__ __forceinline__ unsigned hot_next_stage(const hot_gemm_ctx &x, unsigned st) {
  return st + HOT_STAGE_BYTES == x.smem + HOT_SMEM_BYTES ? x.smem : st + HOT_STAGE_BYTES;
}

/* One K tile. P = register buffer that holds the fragments of its first K step; the step
 * leaves the fragments of the next tile's first K step in buffer (P + KSTEPS) & 1. With an
 * even KSTEPS that is always P = 0; with an odd one the caller alternates P = 0, 1, so every
 * buffer index is a compile-time constant (no local-memory arrays).
 *
 * Hazards: the prefetch into stage wr = (kt-1) % STAGES is issued at ks = 0; the last ldmatrix
 * from that stage (tile kt-1) happened before the __syncthreads of the previous tile's last K
 * step (or, with KSTEPS = 1, of the tile step before), so no warp still reads it. At the last K
 * step, wait_group(STAGES-2) leaves only the STAGES-2 youngest groups in flight, so tile kt+1 has
 * landed; the barrier then publishes it to all warps before its first ldmatrix. */
template <int P>
static __device__ __forceinline__ void hot_ktile(const hot_gemm_ctx &x, hot_gemm_state &s,
                                                 int kt) {
#pragma unroll
  for (int ks = 0; ks < HOT_KSTEPS; ++ks) {
    const int cur = (P + ks) & 1;
    if (ks == 0) {
      hot_load_tile(x, s.wr, kt + HOT_STAGES - 1);
      hot_cp_async_commit();
      s.wr = hot_next_stage(x, s.wr);
    }
    if (ks == HOT_KSTEPS - 1) {
      hot_cp_async_wait<HOT_STAGES - 2>();
      __syncthreads();
      s.rd = hot_next_stage(x, s.rd);
    }
    /* next K step's fragments (the next tile's first one at the last step) */
    hot_load_frags(x, s.af[cur ^ 1], s.bf[cur ^ 1], s.rd, (ks + 1) % HOT_KSTEPS);
#pragma unroll
    for (int mi = 0; mi < HOT_MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < HOT_NI; ++ni) {
        /* serpentine over n: consecutive mmas share the B fragment at the turns */
        const int nn = (mi & 1) ? HOT_NI - 1 - ni : ni;
        hot_mma(s.acc[mi][nn], s.af[cur][mi], s.bf[cur][nn]);
      }
  }
}

/* Converts this thread's accumulators into C with factor alpha (CONTRACT 14): HOT_SEGS = 0 stores
 * HOT_MUL(HOT_I2F(acc), factor(m)) (row factor as in the design note); HOT_SEGS = 1 stores
 * (add = false) or adds (add = true) HOT_MUL(HOT_I2F(acc), alpha) of one segment. mb / nb: the
 * output row / column of this thread's accumulator 0 of fragment (0, 0). */
static __device__ __forceinline__ void hot_epilogue(const int (&acc)[HOT_MI][HOT_NI][4], float *C,
                                                    const float *row_scale, float alpha, int mb,
                                                    int nb, int M, int N, int ldc, bool vec,
                                                    bool add) {
#pragma unroll
  for (int mi = 0; mi < HOT_MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = mb + mi * 16 + 8 * h;
      if (m >= M) continue;
      float *crow = C + (long long)m * ldc;
      /* overflow check (CONTRACT 19): HOT_SEGS = 0 once for the row's stored columns
       * (hot_row_range_check; columns past N hold acc = 0: their B rows are zero-filled),
       * HOT_SEGS = 1 element by element in hot_store_or_add_pair */
      if (HOT_SEGS) {
#pragma unroll
        for (int ni = 0; ni < HOT_NI; ++ni)
          hot_store_or_add_pair(crow, nb + ni * 8, N, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                                alpha, vec, add);
      } else {
        const float factor = hot_row_factor(row_scale, m, alpha);
        float amax = 0.0f;
#pragma unroll
        for (int ni = 0; ni < HOT_NI; ++ni) {
          hot_store_pair(crow, nb + ni * 8, N, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                         factor, vec);
          amax = hot_row_amax_pair(amax, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
        }
        hot_row_range_check(amax, factor);
      }
    }
  }
}

/* HOT_SEGS = 1, after the mmas of K tile kt: when kt ends a segment (kt + 1 == seg_end) and
 * more tiles follow, C (+)= acc * c_seg for that segment seg, acc = 0, and the next segment
 * begins; the last segment is converted after the loop. The only state kept across the K loop is
 * seg_end: everything else is recomputed here from the kernel arguments and the thread's
 * indices (the main loop has no registers to spare). */
static __device__ __forceinline__ void hot_seg_boundary(const hot_gemm_ctx &x, hot_gemm_state &s,
                                                        int kt, int &seg_end, float *C,
                                                        const float *alpha_a,
                                                        const float *alpha_b, float alpha_div,
                                                        int M, int N, int ldc, int seg_kpad) {
  if (kt + 1 != seg_end || kt + 1 >= x.ktiles) return;
  const int seg_tiles = seg_kpad / HOT_TILE_K, seg = seg_end / seg_tiles - 1;
  const float c = hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  const int tid = hot_tid_opaque(), lane = tid & 31, warp = tid >> 5;
  const int mb = (int)blockIdx.y * HOT_TILE_M + (warp / HOT_WARPS_N) * HOT_WM + (lane >> 2);
  const int nb = (int)blockIdx.x * HOT_TILE_N + (warp % HOT_WARPS_N) * HOT_WN + 2 * (lane & 3);
  hot_epilogue(s.acc, C, nullptr, c, mb, nb, M, N, ldc, vec, seg > 0);
  hot_acc_zero(s);
  seg_end += seg_tiles;
}

extern "C" __global__ void __launch_bounds__(HOT_THREADS, 1)
    HOT_KNAME(const signed char *__restrict__ A, const signed char *__restrict__ B,
              float *__restrict__ C, const float *__restrict__ row_scale,
              const float *__restrict__ alpha_a, const float *__restrict__ alpha_b,
              float alpha_div, int M, int N, int Kpad, int ldc, int seg_kpad) {
  extern __shared__ __align__(128) unsigned char hot_smem[];

  const int tid = (int)threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wm = warp / HOT_WARPS_N, wn = warp % HOT_WARPS_N;
  const int m0 = (int)blockIdx.y * HOT_TILE_M;
  const int n0 = (int)blockIdx.x * HOT_TILE_N;

  hot_gemm_ctx x;
  x.smem = hot_smem_u32(hot_smem);
  x.a_ld = (unsigned)((wm * HOT_WM + (lane & 15)) * HOT_KB);
  x.b_ld = (unsigned)((wn * HOT_WN + (lane & 7) + ((lane >> 4) << 3)) * HOT_KB);
  x.a_hi = lane >> 4;
  x.b_hi = (lane >> 3) & 1;
  /* every fragment row base is a multiple of 8 (WM % 16 == 0, WN % 8 == 0), so the row's low
   * three bits, hence its swizzle, are those of lane & 7 for A and B alike */
  x.swz = HOT_SWZ(lane & 7);
  x.pitch = HOT_CODES ? (long long)(Kpad / 2) : (long long)Kpad;
  x.a_tile = A + (long long)m0 * x.pitch;
  x.b_tile = B + (long long)n0 * x.pitch;
  x.r0 = HOT_RSTEP != 0 ? tid / HOT_CPR : 0;
  x.c0 = HOT_RSTEP != 0 ? tid % HOT_CPR : 0;
  x.a_left = M - m0 - x.r0;
  x.b_left = N - n0 - x.r0;
  x.tid = tid;
  x.ktiles = Kpad / HOT_TILE_K;

  hot_gemm_state s;
  hot_acc_zero(s);

  /* prologue: tiles 0 .. STAGES-2 in flight, one group each */
#pragma unroll
  for (int st = 0; st < HOT_STAGES - 1; ++st) {
    hot_load_tile(x, x.smem + st * HOT_STAGE_BYTES, st);
    hot_cp_async_commit();
  }
  hot_cp_async_wait<HOT_STAGES - 2>();
  __syncthreads();
  s.rd = x.smem;
  s.wr = x.smem + (HOT_STAGES - 1) * HOT_STAGE_BYTES;
  hot_load_frags(x, s.af[0], s.bf[0], s.rd, 0);

  /* HOT_SEGS = 1: the current segment ends with K tile seg_end - 1 (seg_kpad / HOT_TILE_K K
   * tiles a segment); HOT_SEGS = 0 never reads seg_kpad (every branch on it is dead code) */
  int seg_end = HOT_SEGS ? seg_kpad / HOT_TILE_K : 0;

  for (int kt = 0; kt < x.ktiles; ++kt) {
    hot_ktile<0>(x, s, kt);
    if (HOT_SEGS)
      hot_seg_boundary(x, s, kt, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc, seg_kpad);
    if (HOT_KSTEPS % 2 == 1 && kt + 1 < x.ktiles) {
      ++kt;
      hot_ktile<1>(x, s, kt);
      if (HOT_SEGS)
        hot_seg_boundary(x, s, kt, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc, seg_kpad);
    }
  }
  hot_cp_async_wait<0>(); /* only empty groups can remain; keep the exit clean */

  /* ---- epilogue: C = HOT_MUL(HOT_I2F(acc), factor(row)), never fused (HOT_SEGS = 1: the last
   * segment's v added to C) ------------------------------------------------------------------ */
  /* the epilogue constant of CONTRACT 14 from the scales on the device: product, then division */
  const int seg =
      HOT_SEGS && seg_kpad >= HOT_TILE_K ? seg_end / (seg_kpad / HOT_TILE_K) - 1 : 0;
  const float alpha =
      HOT_SEGS ? hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div)
               : hot_epilogue_alpha(alpha_a, alpha_b, alpha_div);
  const bool vec = ((ldc & 1) == 0) && ((((unsigned long long)C) & 7ull) == 0);
  hot_epilogue(s.acc, C, HOT_SEGS ? nullptr : row_scale, alpha, m0 + wm * HOT_WM + (lane >> 2),
               n0 + wn * HOT_WN + 2 * (lane & 3), M, N, ldc, vec, HOT_SEGS && seg > 0);
}
} /* namespace hot_k6 */
#undef HOT_KNAME
#undef HOT_CODES
#undef HOT_TILE_M
#undef HOT_TILE_N
#undef HOT_TILE_K
#undef HOT_WARPS_M
#undef HOT_WARPS_N
#undef HOT_STAGES
#undef HOT_SEGS
#undef HOT_THREADS
#undef HOT_KB
#undef HOT_CPR
#undef HOT_KSTEPS
#undef HOT_WM
#undef HOT_WN
#undef HOT_MI
#undef HOT_NI
#undef HOT_A_BYTES
#undef HOT_STAGE_BYTES
#undef HOT_SMEM_BYTES
#undef HOT_A_CHUNKS
#undef HOT_B_CHUNKS
#undef HOT_A_ITERS
#undef HOT_B_ITERS
#undef HOT_SWZ
#undef HOT_RSTEP

/* ---- hot_bias_f32 from templates/bias.cu */
#define HOT_KNAME hot_bias_f32
#define HOT_DTYPE 0
namespace hot_k7 {
#line 1 "templates/bias.cu"
/* @hot-params: HOT_KNAME HOT_DTYPE */
/* bias.cu — the bias gradient g_b[o] = sum_t g_y[t, o] in fp32 (CONTRACT.md section 1), bit-identical
 * to the CPU twin templates/bias_ref.c.
 *
 * Summation order (fixed, shared with the twin; HOT_BIAS_CHUNK == HOT_REF_BIAS_CHUNK of ref.h):
 * for each column o, the tokens are cut into chunks of HOT_BIAS_CHUNK; chunk c's partial is
 *   p_c = (((0.0f + g[c*CH, o]) + g[c*CH+1, o]) + ...)          (token order, HOT_ADD)
 * and g_b[o] = (((0.0f + p_0) + p_1) + ...)                      (chunk order, HOT_ADD).
 * T = 0 gives g_b = 0. Every add is a single-rounding __fadd_rn, so the bits match the twin.
 *
 * Parallel schedule (any schedule that keeps the order above gives the same bits): a block owns
 * HOT_BIAS_COLS consecutive columns, one 32-byte sector of a row (8 f32 or 16 bf16/f16 columns:
 * a warp's request reads 4 or 2 rows of whole sectors; fewer columns per block would leave half
 * of every sector to the next block); its HOT_BIAS_THREADS threads (512 or 1024) are
 * HOT_BIAS_SLOTS = 64 slots of HOT_BIAS_COLS lanes (lane = column), so the threads of a layer
 * are 64 O as with any width, O = 768 f32 on 96 blocks. In round j, slot s sums chunk
 * j*HOT_BIAS_SLOTS + s (loads unrolled HOT_BIAS_UNROLL deep for memory-level parallelism, the
 * adds stay in token order), writes its partial to shared memory, and after one barrier the
 * threads of slot 0 fold the round's partials into the running total in chunk order. Partials are
 * double-buffered so one barrier per round suffices.
 *
 * Launch: grid = (ceil(O / HOT_BIAS_COLS), 1, 1) (gen/kernels/bias.c), block = (HOT_BIAS_THREADS,
 * 1, 1) = 512 (f32) or 1024 (bf16, f16), no dynamic shared memory (4 or 8 KiB static). gy: T x O row-major, dtype HOT_DTYPE (0 f32,
 * 1 bf16, 2 f16), 4-byte (f32) / 2-byte aligned; gb: O floats. T, O >= 0; T * O may exceed 2^31.
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_bias
#define HOT_DTYPE 0
#endif



#define HOT_BIAS_CHUNK 256 /* tokens per partial sum: must equal HOT_REF_BIAS_CHUNK (ref.h) */
/* columns per block, one 32-byte sector of a row: the plan's grid is ceil(O / HOT_BIAS_COLS) */
#define HOT_BIAS_COLS (HOT_DTYPE == 0 ? 8 : 16)
#define HOT_BIAS_SLOTS 64 /* chunks summed at once */
#define HOT_BIAS_THREADS (HOT_BIAS_SLOTS * HOT_BIAS_COLS) /* the plan's block */
#define HOT_BIAS_UNROLL 16 /* loads in flight per lane */

static_assert(HOT_DTYPE >= 0 && HOT_DTYPE <= 2, "HOT_DTYPE must be 0 (f32), 1 (bf16) or 2 (f16)");
static_assert(HOT_BIAS_CHUNK % HOT_BIAS_UNROLL == 0, "chunk must split into unrolled batches");
static_assert(HOT_BIAS_THREADS % HOT_BIAS_COLS == 0 && 32 % HOT_BIAS_COLS == 0,
              "a warp holds whole slots");

/* Element idx of g_y as fp32 (exact conversions of hot_math.cuh). */
static __device__ __forceinline__ float hot_bias_load(const void *__restrict__ gy, long long idx) {
  return hot_load_f32(gy, idx, HOT_DTYPE);
}

extern "C" __global__ void __launch_bounds__(HOT_BIAS_THREADS)
    HOT_KNAME(const void *__restrict__ gy, float *__restrict__ gb, int T, int O) {
  __shared__ float part[2][HOT_BIAS_SLOTS][HOT_BIAS_COLS];
  const int lane = (int)threadIdx.x % HOT_BIAS_COLS, slot = (int)threadIdx.x / HOT_BIAS_COLS;
  const int o = (int)blockIdx.x * HOT_BIAS_COLS + lane;
  const bool col_ok = o < O;
  const int nchunks = (T + HOT_BIAS_CHUNK - 1) / HOT_BIAS_CHUNK;
  const int rounds = (nchunks + HOT_BIAS_SLOTS - 1) / HOT_BIAS_SLOTS;
  float total = 0.0f; /* meaningful in slot 0 only */

  for (int j = 0; j < rounds; ++j) {
    const int c = j * HOT_BIAS_SLOTS + slot;
    float p = 0.0f;
    if (col_ok && c < nchunks) {
      const int t0 = c * HOT_BIAS_CHUNK;
      const int t1 = min(T, t0 + HOT_BIAS_CHUNK);
      const long long base = (long long)t0 * O + o;
      int t = t0;
      /* full batches: HOT_BIAS_UNROLL independent loads, then the adds in token order */
      for (; t + HOT_BIAS_UNROLL <= t1; t += HOT_BIAS_UNROLL) {
        float v[HOT_BIAS_UNROLL];
        const long long b = base + (long long)(t - t0) * O;
#pragma unroll
        for (int u = 0; u < HOT_BIAS_UNROLL; ++u) v[u] = hot_bias_load(gy, b + (long long)u * O);
#pragma unroll
        for (int u = 0; u < HOT_BIAS_UNROLL; ++u) p = HOT_ADD(p, v[u]);
      }
      for (; t < t1; ++t) p = HOT_ADD(p, hot_bias_load(gy, base + (long long)(t - t0) * O));
    }
    part[j & 1][slot][lane] = p;
    __syncthreads();
    /* slot 0 folds this round's partials in chunk order; the buffer (j & 1) is rewritten only in
     * round j + 2, after the barrier of round j + 1, which slot 0 reaches after this fold */
    if (slot == 0) {
      const int n = min(HOT_BIAS_SLOTS, nchunks - j * HOT_BIAS_SLOTS);
      for (int w = 0; w < n; ++w) total = HOT_ADD(total, part[j & 1][w][lane]);
    }
  }
  if (slot == 0 && col_ok) {
    HOT_RANGE_CHECK(total);
    gb[o] = total;
  }
}
} /* namespace hot_k7 */
#undef HOT_KNAME
#undef HOT_DTYPE
#undef HOT_BIAS_CHUNK
#undef HOT_BIAS_COLS
#undef HOT_BIAS_SLOTS
#undef HOT_BIAS_THREADS
#undef HOT_BIAS_UNROLL

/* ---- hot_lqs_f32_k4 from templates/lqs.cu */
#define HOT_KNAME hot_lqs_f32_k4
#define HOT_DTYPE 0
#define HOT_BITS 4
#define HOT_ROUND 1
namespace hot_k8 {
#line 1 "templates/lqs.cu"
/* @hot-params: HOT_KNAME HOT_DTYPE HOT_BITS HOT_ROUND */
/* lqs.cu — layer-wise quantizer selection (CONTRACT.md 6 and 15) on the raw g_y (T x O, no
 * transform): e_tensor = ||g - deq(Q_sample(g))||_F (one scale per group of group_rows rows: per
 * sample with group_rows = L, per tensor with group_rows = T) and e_token = ||g - deq(Q_row(g))||_F with
 * HOT_BITS-bit codes rounded as g' is (HOT_ROUND: SR or RTN), absmax; choice = per-row iff e_token < 0.5 * e_tensor. Bit-identical to the
 * CPU twin ref_lqs (templates/lqs_ref.c): both quantizations use the same Philox draws
 * (tag = layer_id*16 + 3, idx = t*O + o), the squared errors are summed by the canonical fp64
 * sum of CONTRACT 13 (chunks of 1024 terms in idx order, each summed sequentially from 0.0,
 * then the partials sequentially in chunk order from 0.0).
 *
 * Parameters: HOT_KNAME entry name; HOT_DTYPE 0 = f32, 1 = bf16, 2 = f16; HOT_BITS = hq.g.bits;
 * HOT_ROUND = g's rounding: 1 = SR (the Philox draws below), 0 = RTN (seed/tag/step ignored).
 *
 * Entry:
 *   extern "C" __global__ void HOT_KNAME (const void *g_y, int T, int O, int ld_src,
 *       unsigned int *amax_bits, int group_rows, float *row_scale, double *partials, double *result,
 *       int *choice, int phase, unsigned long long seed, unsigned tag, unsigned step)
 *   g_y        T x O, row-major, row stride ld_src elements (idx = t*O + o regardless of ld_src)
 *   amax_bits  T / group_rows words (one per group), zeroed by the caller before phase 0
 *   group_rows rows per coarse group (L: per sample; T: per tensor); divides T
 *   row_scale  scratch, T floats (phase 0 writes the per-row scales s_t = hot_scale(amax_t))
 *   partials   scratch, 2 * ceil(T*O / 1024) doubles: [2j] = chunk j of e_tensor^2,
 *              [2j + 1] = chunk j of e_token^2
 *   result     2 doubles out: e_tensor, e_token (phase 2)
 *   choice     1 int out: 1 = per row (HOT_GRAN_ROW), 0 = the coarse candidate (per sample)
 *
 * Phases (three launches, same geometry, stream-ordered):
 *   0: one warp per row t (grid-stride over rows): amax_t (lanes stride over O, coalesced),
 *      row_scale[t] = hot_scale(amax_t); one atomicMax(amax_bits + t / group_rows, amax_t) per
 *      row (a group's amax = max of its row maxima);
 *   1: one warp per 1024-term chunk (grid-stride over chunks): in rounds of 32 consecutive
 *      idx, each lane computes its term's two squared errors (Philox word, both SR codes, both
 *      dequantizations; the row's two scales loaded when the lane's row changes, not each round)
 *      into shared memory, then lane 0 adds the 32 terms in idx order to its
 *      running chunk sums; lane 0 writes the chunk's two partials;
 *   2: warp 0 of block 0 loads the partials (64 doubles a round, coalesced: hot_warp_pair_sum)
 *      and its lane 0 sums them in chunk order, takes the square roots and writes result[0..1]
 *      and *choice. (Other warps and blocks do nothing; the block needs at least one full warp.)
 *
 * Launch geometry (the planner's, unchanged): grid = (ceil(T / 8), 1, 1), block = (256, 1, 1),
 * 4 KiB static shared memory. Phases 0 and 1 loop over rows / chunks with a grid stride, so any grid works
 * (ceil(T/8) blocks give T warps >= ceil(T*O/1024) chunks whenever O <= 1024).
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_lqs
#define HOT_DTYPE 0
#define HOT_BITS 4
#define HOT_ROUND 1
#endif



#define LQS_THREADS 256
#define LQS_WARPS (LQS_THREADS / 32)
#define LQS_CHUNK 1024 /* HOT_REF_SUM_CHUNK of ref.h */
#define LQS_QMAX ((1 << (HOT_BITS - 1)) - 1)

static_assert(HOT_DTYPE >= 0 && HOT_DTYPE <= 2, "HOT_DTYPE 0 (f32), 1 (bf16) or 2 (f16)");
static_assert(HOT_BITS >= 2 && HOT_BITS <= 8, "bits in [2, 8]");
static_assert(HOT_ROUND == 0 || HOT_ROUND == 1, "HOT_ROUND 0 (RTN) or 1 (SR)");

static __device__ __forceinline__ float lqs_load1(const void *__restrict__ src, long long off) {
  return hot_load_f32(src, off, HOT_DTYPE);
}

#if HOT_ROUND == 1
/* hot_rand_word without the dynamically indexed struct (which would live in local memory). */
static __device__ __forceinline__ unsigned lqs_rand_word(unsigned long long seed, unsigned tag,
                                                         unsigned step, unsigned long long idx) {
  const unsigned long long b = idx >> 2;
  const hot_philox_out o = hot_philox4x32_10((unsigned)(b & 0xffffffffull), (unsigned)(b >> 32),
                                             tag, step, (unsigned)(seed & 0xffffffffull),
                                             (unsigned)(seed >> 32));
  const unsigned w = (unsigned)(idx & 3ull);
  return w == 0 ? o.v[0] : w == 1 ? o.v[1] : w == 2 ? o.v[2] : o.v[3];
}
#endif

/* (v - deq(q, s))^2 in fp64, deq = fp32 q * s (CONTRACT 15). */
static __device__ __forceinline__ double lqs_sq(float v, int q, float s) {
  const float deq = HOT_MUL(HOT_I2F(q), s);
  const double d = HOT_DSUB((double)v, (double)deq);
  return HOT_DMUL(d, d);
}

extern "C" __global__ void __launch_bounds__(LQS_THREADS)
HOT_KNAME(const void *__restrict__ g_y, int T, int O, int ld_src,
          unsigned int *__restrict__ amax_bits, int group_rows, float *__restrict__ row_scale,
          double *__restrict__ partials, double *__restrict__ result, int *__restrict__ choice,
          int phase, unsigned long long seed, unsigned tag, unsigned step) {
  __shared__ double terms[LQS_WARPS][2][32];
  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
#if HOT_ROUND == 0
  (void)seed; (void)tag; (void)step;
#endif

  if (phase == 0) {
    /* whole warps per row (grid-stride over rows); no block barrier in this phase */
    for (int t = (int)blockIdx.x * LQS_WARPS + warp; t < T; t += (int)gridDim.x * LQS_WARPS) {
      const long long off = (long long)t * ld_src;
      float m = 0.0f;
      for (int o = lane; o < O; o += 32) m = fmaxf(m, fabsf(lqs_load1(g_y, off + o)));
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
      if (lane == 0) {
        row_scale[t] = hot_scale(m, HOT_BITS);
        if (m > 0.0f) atomicMax(amax_bits + t / group_rows, __float_as_uint(m));
      }
    }
    return;
  }

  const long long n = (long long)T * O;
  const long long nchunks = (n + LQS_CHUNK - 1) / LQS_CHUNK;

  if (phase == 1) {
    const long long wstride = (long long)gridDim.x * LQS_WARPS;
    for (long long j = (long long)blockIdx.x * LQS_WARPS + warp; j < nchunks; j += wstride) {
      const long long i0 = j * LQS_CHUNK;
      const long long i1 = i0 + LQS_CHUNK < n ? i0 + LQS_CHUNK : n;
      double e_ten = 0.0, e_row = 0.0; /* lane 0's running chunk sums */
      int t_have = -1;                 /* the row whose two scales the lane holds */
      float s_row = 0.0f, s_ten = 0.0f;
      for (long long r0 = i0; r0 < i1; r0 += 32) {
        const long long idx = r0 + lane;
        double a = 0.0, b = 0.0;
        if (idx < i1) {
          const int t = (int)(idx / O), o = (int)(idx % O);
          const float v = lqs_load1(g_y, (long long)t * ld_src + o);
          if (t != t_have) { /* once per row, not per round: the loads are the same words */
            s_row = row_scale[t];
            s_ten = hot_scale(__uint_as_float(amax_bits[t / group_rows]), HOT_BITS);
            t_have = t;
          }
#if HOT_ROUND == 1
          const unsigned word = lqs_rand_word(seed, tag, step, (unsigned long long)idx);
          a = lqs_sq(v, hot_quant_sr(v, s_ten, LQS_QMAX, word), s_ten);
          b = lqs_sq(v, hot_quant_sr(v, s_row, LQS_QMAX, word), s_row);
#else
          a = lqs_sq(v, hot_quant_rtn(v, s_ten, LQS_QMAX), s_ten);
          b = lqs_sq(v, hot_quant_rtn(v, s_row, LQS_QMAX), s_row);
#endif
        }
        terms[warp][0][lane] = a;
        terms[warp][1][lane] = b;
        __syncwarp();
        if (lane == 0) {
          const int cnt = i1 - r0 < 32 ? (int)(i1 - r0) : 32;
          for (int k = 0; k < cnt; ++k) { /* idx order: sequential, as the canonical sum */
            e_ten = HOT_DADD(e_ten, terms[warp][0][k]);
            e_row = HOT_DADD(e_row, terms[warp][1][k]);
          }
        }
        __syncwarp();
      }
      if (lane == 0) {
        partials[2 * j] = e_ten;
        partials[2 * j + 1] = e_row;
      }
    }
    return;
  }

  /* phase 2: the ordered pass over the partials, loaded by warp 0 of block 0 (coalesced),
   * summed by its lane 0 */
  if (blockIdx.x != 0 || warp != 0) return;
  double e_ten, e_row;
  hot_warp_pair_sum(partials, nchunks, &terms[0][0][0], lane, e_ten, e_row);
  if (lane != 0) return;
  const double et = HOT_DSQRT(e_ten), er = HOT_DSQRT(e_row);
  result[0] = et;
  result[1] = er;
  *choice = er < HOT_DMUL(0.5, et) ? 1 : 0;
}
} /* namespace hot_k8 */
#undef HOT_KNAME
#undef HOT_DTYPE
#undef HOT_BITS
#undef HOT_ROUND
#undef LQS_THREADS
#undef LQS_WARPS
#undef LQS_CHUNK
#undef LQS_QMAX

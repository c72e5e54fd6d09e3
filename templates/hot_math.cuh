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

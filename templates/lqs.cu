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

#include "hot_math.cuh"

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

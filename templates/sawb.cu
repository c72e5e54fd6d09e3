/* @hot-params: HOT_KNAME HOT_BITS */
/* sawb.cu — the SAWB scales of CONTRACT.md 3.4 and 11 on the GPU, bit-identical to the CPU
 * twin's group_scale (templates/quant_ref.c): over each of `groups` groups of n elements of an
 * fp32 math tensor (group g = v[g*n .. g*n + n), linear index order), S1 = sum |v| and
 * S2 = sum v*v (each term exact in fp64) by the canonical fp64 sum of CONTRACT 13 with the
 * chunks starting at the GROUP's first element (chunks of 1024 terms summed sequentially from
 * 0.0, the group's partials sequentially in chunk order from 0.0), then s_g =
 * hot_scale_sawb(S1, S2, n, amax_g, HOT_BITS): clip / qmax when clip > 0, else the absmax scale.
 * groups = 1 is the per-tensor scale; groups > 1 the per-sample scales of x^ (hla.groups).
 *
 * Inputs come from an operand kernel's phase 0 run with a math_out buffer (hla_project.cu for
 * x^, hadamard_quant.cu for w'): v = the math tensor, amax_bits = the words that phase 0
 * filled (one per group). The operand kernel's phase 1 then takes `scale` as scale_in.
 *
 * Parameters: HOT_KNAME entry name; HOT_BITS code bits (qmax = 2^(bits-1) - 1).
 *
 * Entry:
 *   extern "C" __global__ void HOT_KNAME (const float *v, long long n, int groups,
 *       double *partials, const unsigned int *amax_bits, float *scale, int phase)
 *   v          groups * n floats (n >= 1, groups >= 1), the math tensor in linear index order
 *   n          elements of ONE group
 *   partials   scratch, groups * 2 * ceil(n / 1024) doubles: chunk j of group g is global chunk
 *              gj = g * ceil(n / 1024) + j, [2 gj] its S1 partial, [2 gj + 1] its S2 partial
 *   amax_bits  `groups` words: the fp32 bits of max |v| of each group (the operand kernel's
 *              phase 0)
 *   scale      `groups` floats out: scale[g] = the SAWB scale of group g
 *
 * Phases (two launches, stream-ordered):
 *   0: one warp per chunk over the groups * ceil(n / 1024) chunks (grid-stride): lanes compute
 *      |v| and v*v of 32 consecutive elements into shared memory, lane 0 adds them in index
 *      order; lane 0 writes the chunk's two partials. A chunk never crosses a group boundary
 *      (a group's last chunk may be short).
 *   1: block 0 only; warp w handles groups w, w + 8, ...: its lanes load the group's partials
 *      (64 doubles a round, coalesced: hot_warp_pair_sum), lane 0 sums them in chunk order and
 *      writes scale[g] (other blocks return at once).
 * Launch geometry: block = (256, 1, 1); phase 0 grid = (ceil(ceil(n*groups / 1024) / 8), 1, 1)
 * (any grid is correct), phase 1 grid = (1, 1, 1) (any grid works; only block 0 acts).
 * 4 KiB static shared memory.
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_sawb
#define HOT_BITS 4
#endif

#include "hot_math.cuh"

#define SAWB_THREADS 256
#define SAWB_WARPS (SAWB_THREADS / 32)
#define SAWB_CHUNK 1024 /* HOT_REF_SUM_CHUNK of ref.h */

static_assert(HOT_BITS >= 2 && HOT_BITS <= 8, "bits in [2, 8]");

extern "C" __global__ void __launch_bounds__(SAWB_THREADS)
HOT_KNAME(const float *__restrict__ v, long long n, int groups, double *__restrict__ partials,
          const unsigned int *__restrict__ amax_bits, float *__restrict__ scale, int phase) {
  __shared__ double terms[SAWB_WARPS][2][32];
  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const long long nchunks = (n + SAWB_CHUNK - 1) / SAWB_CHUNK; /* chunks of one group */

  if (phase == 0) {
    const long long wstride = (long long)gridDim.x * SAWB_WARPS;
    const long long all = nchunks * groups;
    for (long long j = (long long)blockIdx.x * SAWB_WARPS + warp; j < all; j += wstride) {
      const long long g = j / nchunks;   /* the chunk's group */
      const long long g0 = g * n;        /* the group's first element */
      const long long i0 = g0 + (j - g * nchunks) * SAWB_CHUNK;
      const long long i1 = i0 + SAWB_CHUNK < g0 + n ? i0 + SAWB_CHUNK : g0 + n;
      double s1 = 0.0, s2 = 0.0; /* lane 0's running chunk sums */
      for (long long r0 = i0; r0 < i1; r0 += 32) {
        const long long idx = r0 + lane;
        double a = 0.0, b = 0.0;
        if (idx < i1) {
          const float x = __ldg(v + idx);
          a = (double)fabsf(x);
          b = HOT_DMUL((double)x, (double)x); /* exact: a 48-bit product */
        }
        terms[warp][0][lane] = a;
        terms[warp][1][lane] = b;
        __syncwarp();
        if (lane == 0) {
          const int cnt = i1 - r0 < 32 ? (int)(i1 - r0) : 32;
          for (int k = 0; k < cnt; ++k) {
            s1 = HOT_DADD(s1, terms[warp][0][k]);
            s2 = HOT_DADD(s2, terms[warp][1][k]);
          }
        }
        __syncwarp();
      }
      if (lane == 0) {
        partials[2 * j] = s1;
        partials[2 * j + 1] = s2;
      }
    }
    return;
  }

  if (blockIdx.x != 0) return;
  for (int g = warp; g < groups; g += SAWB_WARPS) { /* warp-uniform: one warp per group */
    double s1, s2;
    hot_warp_pair_sum(partials + 2 * (long long)g * nchunks, nchunks, &terms[warp][0][0], lane, s1,
                      s2);
    if (lane == 0)
      scale[g] = hot_scale_sawb(s1, s2, (double)n, __uint_as_float(amax_bits[g]), HOT_BITS);
  }
}

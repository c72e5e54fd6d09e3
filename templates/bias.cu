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

#include "hot_math.cuh"

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

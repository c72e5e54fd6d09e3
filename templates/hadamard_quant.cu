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

#include "hot_math.cuh"

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

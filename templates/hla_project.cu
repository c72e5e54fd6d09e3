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

#include "hot_math.cuh"

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

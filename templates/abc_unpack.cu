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

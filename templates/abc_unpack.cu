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
 * Launch: grid = (ceil(rows * k_pad / 16 / 256), 1, 1), block = (256, 1, 1), no shared memory.
 * Thread id writes the 16 bytes [16 c, 16 c + 16) of dst row id / (k_pad / 16), c = id % (k_pad /
 * 16), as one 16-byte store; such a span never straddles two groups (group_k_pad % 16 == 0), and
 * consecutive threads read consecutive bytes of a row (coalesced byte loads).
 */
#ifndef HOT_GENERATED
#define HOT_KNAME hot_abc_unpack
#endif

#define UNPACK_THREADS 256

extern "C" __global__ void __launch_bounds__(UNPACK_THREADS)
    HOT_KNAME(const unsigned char *__restrict__ src, int rows, int k_real, int group_k,
              int group_k_pad, int k_pad, unsigned char *__restrict__ dst) {
  const long long spans = (long long)(k_pad / 16); /* 16-byte spans per row */
  const long long id = (long long)blockIdx.x * UNPACK_THREADS + (long long)threadIdx.x;
  if (id >= (long long)rows * spans) return;
  const long long row = id / spans;
  const int pos0 = (int)(id - row * spans) * 16; /* first position of the span in its row */
  const int grp = pos0 / group_k_pad, off0 = pos0 - grp * group_k_pad;
  const unsigned char *s = src + row * (long long)k_real + (long long)grp * group_k;
  unsigned w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    unsigned v = 0u;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int off = off0 + 4 * j + b; /* position in the group's run */
      if (off < group_k) v |= (unsigned)s[off] << (8 * b);
    }
    w[j] = v;
  }
  *(uint4 *)(dst + row * (long long)k_pad + pos0) = make_uint4(w[0], w[1], w[2], w[3]);
}

/* twin_dump.c — the C twin's codes of a tensor, for check_twin.py: reads rows, k and rows*k
 * fp32 from stdin (binary), writes the decoded values of NVFP4 RTN, NVFP4 SR (seed 7, tag 17,
 * step 3, idx = r*k + c), MXFP8 RTN and MXFP8 SR (same stream) as fp32 to stdout, then the block
 * scales of the two NVFP4 runs (decoded) and the tensor scale. */
#include <stdio.h>
#include <stdlib.h>

#include "nvfp4_ref.h"

int main(void) {
  long long rows, k;
  if (fread(&rows, 8, 1, stdin) != 1 || fread(&k, 8, 1, stdin) != 1 || rows <= 0 || k <= 0 ||
      k % 32) return 2;
  float *v = malloc((size_t)(rows * k) * 4), *o = malloc((size_t)(rows * k) * 4);
  unsigned char *c = malloc((size_t)(rows * k)), *s = malloc((size_t)(rows * k / 16));
  if (!v || !o || !c || !s || fread(v, 4, (size_t)(rows * k), stdin) != (size_t)(rows * k)) return 2;
  nvfp4_stream st = {7, 17, 3, k, 1};
  for (int sr = 0; sr < 2; ++sr) {
    float s_t;
    if (nvfp4_quantize(v, rows, k, sr, &st, c, s, &s_t)) return 3;
    for (long long r = 0; r < rows; ++r)
      for (long long j = 0; j < k; ++j) {
        unsigned code = ((unsigned)c[r * (k / 2) + j / 2] >> ((j & 1) * 4)) & 15u;
        o[r * k + j] = nvfp4_e2m1_decode(code);
      }
    fwrite(o, 4, (size_t)(rows * k), stdout);
    for (long long b = 0; b < rows * k / 16; ++b) o[b] = nvfp4_e4m3_decode(s[b]);
    fwrite(o, 4, (size_t)(rows * k / 16), stdout);
    fwrite(&s_t, 4, 1, stdout);
  }
  for (int sr = 0; sr < 2; ++sr) {
    if (mxfp8_quantize(v, rows, k, sr, &st, c, s)) return 3;
    for (long long i = 0; i < rows * k; ++i) o[i] = nvfp4_e4m3_decode(c[i]);
    fwrite(o, 4, (size_t)(rows * k), stdout);
    for (long long b = 0; b < rows * k / 32; ++b) o[b] = (float)s[b] - 127.0f;
    fwrite(o, 4, (size_t)(rows * k / 32), stdout);
  }
  return 0;
}

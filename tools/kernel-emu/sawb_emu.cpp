// sawb_emu.cpp — runs templates/sawb.cu (two phases) in the SIMT model of kemu.h and compares the
// scale with the twin's SAWB rule (hot_ref_quantize with HOT_RULE_SAWB, one group), bit for bit.
// Usage: sawb_emu n kind(0 random, 1 constant magnitude: clip <= 0, the absmax fallback) grid
#include "kemu.h"

#include "hot_math.cuh"
extern "C" {
#include "ref.h"
}
#include "sawb.cu"

static int emu_run(int argc, char **argv) {
  if (argc < 4) emu_die("usage: sawb_emu n kind grid");
  long long n = atoll(argv[1]);
  int kind = atoi(argv[2]), gx = atoi(argv[3]);
  std::vector<float> v((size_t)n);
  for (long long i = 0; i < n; ++i) {
    if (kind == 1) v[i] = (emu_rand() & 1) ? 0.75f : -0.75f;
    else emu_fill(v.data(), 0, i, i % 101 == 3);
  }
  float amax = 0.0f;
  for (float x : v) amax = std::fabs(x) > amax ? std::fabs(x) : amax;
  hot_quant q = {HOT_BITS, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_SAWB};
  std::vector<int8_t> codes((size_t)n);
  float want = -1;
  if (hot_ref_quantize(v.data(), 1, n, &q, HOT_GRAN_TENSOR, 0, 0, 0, codes.data(), &want))
    emu_die("twin failed");
  unsigned amax_bits = __float_as_uint(amax);
  long long nch = (n + 1023) / 1024;
  std::vector<double> part((size_t)(2 * nch), std::nan("5"));
  float got = -2;
  emu_launch({(unsigned)(gx ? gx : (nch + 7) / 8), 1, 1}, 256,
             [&] { HOT_KNAME(v.data(), n, part.data(), &amax_bits, &got, 0); });
  emu_launch({1, 1, 1}, 256, [&] { HOT_KNAME(v.data(), n, part.data(), &amax_bits, &got, 1); });
  bool ok = std::memcmp(&got, &want, 4) == 0;
  std::printf("sawb bits=%d n=%lld kind=%d: scale %.9g (absmax scale %.9g) %s\n", HOT_BITS, n, kind,
              want, hot_scale(amax, HOT_BITS), ok ? "ok" : "FAIL");
  if (!ok) std::printf("  got %.9g\n", got);
  return ok ? 0 : 1;
}
EMU_MAIN()

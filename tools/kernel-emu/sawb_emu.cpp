// sawb_emu.cpp — runs templates/sawb.cu (two phases) in the SIMT model of kemu.h and compares the
// scales with the twin's SAWB rule (ref_quantize_groups with HOT_RULE_SAWB: `groups` groups
// of n elements, each group's canonical sums chunked from its own first element), bit for bit.
// Usage: sawb_emu n kind(0 random, 1 constant magnitude: clip <= 0, the absmax fallback) grid
//                 [groups (default 1)]
//   grid 0: the planner's phase-0 grid, ceil(ceil(groups * n / 1024) / 8) blocks; else that
//   many blocks (grid-stride). Group g's values are multiplied by 1 + g/4 when they are filled
//   (kernel and twin read the same floats), so every group has its own scale.
#include "kemu.h"

#include "hot_math.cuh"
extern "C" {
#include "ref.h"
}
#include "sawb.cu"

static int emu_run(int argc, char **argv) {
  if (argc < 4) emu_die("usage: sawb_emu n kind grid [groups]");
  long long n = atoll(argv[1]);
  int kind = atoi(argv[2]), gx = atoi(argv[3]);
  int groups = argc > 4 ? atoi(argv[4]) : 1;
  if (n < 1 || groups < 1) emu_die("n and groups must be >= 1");
  const long long total = n * groups;
  std::vector<float> v((size_t)total);
  for (long long i = 0; i < total; ++i) {
    if (kind == 1) v[(size_t)i] = (emu_rand() & 1) ? 0.75f : -0.75f;
    else emu_fill(v.data(), 0, i, i % 101 == 3);
    v[(size_t)i] *= 1.0f + (float)(i / n) * 0.25f; // group g: its own magnitude
  }
  std::vector<unsigned> amax_bits((size_t)groups + 1, 0u);
  const unsigned kGuardBits = 0x7fc0dead;
  amax_bits[(size_t)groups] = kGuardBits; // never a group's word: sawb.cu must not use it
  for (long long i = 0; i < total; ++i) {
    unsigned &w = amax_bits[(size_t)(i / n)];
    const unsigned a = __float_as_uint(std::fabs(v[(size_t)i]));
    if (a > w) w = a;
  }
  hot_quant q = {HOT_BITS, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_SAWB};
  std::vector<int8_t> codes((size_t)total);
  std::vector<float> want((size_t)groups, -1.0f);
  if (ref_quantize_groups(v.data(), groups, n, 1, &q, 0, 0, 0, codes.data(), want.data()))
    emu_die("twin failed");
  long long nch = (n + 1023) / 1024;
  std::vector<double> part((size_t)(2 * nch * groups), std::nan("5"));
  std::vector<float> got((size_t)groups + 1, -2.0f);
  std::memcpy(&got[(size_t)groups], &kGuardBits, 4);
  EMU_PHASE(0);
  emu_launch({(unsigned)(gx ? gx : (nch * groups + 7) / 8), 1, 1}, 256, [&] {
    HOT_KNAME(v.data(), n, groups, part.data(), amax_bits.data(), got.data(), 0);
  });
  EMU_PHASE(1);
  emu_launch({1, 1, 1}, 256, [&] {
    HOT_KNAME(v.data(), n, groups, part.data(), amax_bits.data(), got.data(), 1);
  });
  int bad = 0;
  for (int g = 0; g < groups; ++g)
    if (std::memcmp(&got[(size_t)g], &want[(size_t)g], 4) != 0 && bad++ < 5)
      std::printf("  group %d: got %.9g want %.9g\n", g, got[(size_t)g], want[(size_t)g]);
  if (std::memcmp(&got[(size_t)groups], &kGuardBits, 4) != 0 && bad++ < 5)
    std::printf("  scale written past the %d group(s)\n", groups);
  if (groups > 1 && want[0] == want[(size_t)groups - 1])
    emu_die("the twin's first and last group scales are equal: inputs too weak");
  std::printf("sawb bits=%d n=%lld groups=%d kind=%d: scale[0] %.9g (absmax scale %.9g) "
              "scale[last] %.9g %s\n", HOT_BITS, n, groups, kind, want[0],
              hot_scale(__uint_as_float(amax_bits[0]), HOT_BITS), want[(size_t)groups - 1],
              bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}
EMU_MAIN()

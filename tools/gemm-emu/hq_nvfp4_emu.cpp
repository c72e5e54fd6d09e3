// hq_nvfp4_emu.cpp — runs templates/hq_nvfp4.cu (HQ's NVFP4 quantisers for sm_120a) on the CPU:
// every CUDA thread a fiber of the deterministic scheduler of tools/kernel-emu/emu_sched.h (its
// atomics yield first, so schedules interleave them), blocks in a seeded order, phase 0 then
// phase 1 as the launch order requires; compared bit for bit with the twin (nvfp4_hq_quant_g for
// HOT_OPERAND 0 with HOT_ROUND's rounding, nvfp4_hq_quant_w for 1): codes, block scales and the
// tensor scale, and the non-finite flag against the twin's -4.
// Usage: hq_nvfp4_emu ROWS O DATA   (DATA 0: random, wide range, zero blocks; 1: all zero;
//                                    2: random with one NaN)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "emu_sched.h"

extern "C" {
#include "nvfp4_ref.h"
}

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
static inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
static inline unsigned atomicMax(unsigned *p, unsigned v) {
  emu::yield();
  const unsigned old = *p;
  if (v > old) *p = v;
  return old;
}
static inline int atomicOr(int *p, int v) {
  emu::yield();
  const int old = *p;
  *p = old | v;
  return old;
}

#include "kernel_hq_nvfp4.inc"

static unsigned g_rng = 2024;
static unsigned rnd() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: hq_nvfp4_emu ROWS O DATA\n");
    return 2;
  }
  const int rows = std::atoi(argv[1]), O = std::atoi(argv[2]), data = std::atoi(argv[3]);
  const int o_pad = (O + 15) / 16 * 16;
  std::vector<float> src((size_t)rows * O, 0.0f);
  if (data != 1)
    for (size_t i = 0; i < src.size(); ++i) {
      const int blk = (int)((i % (size_t)O) / 16);
      if ((blk + (int)(i / (size_t)O)) % 7 == 3) continue; // some zero blocks
      src[i] = ((float)(int)(rnd() & 0xFFFF) - 32768.0f) * std::ldexp(1.0f, (int)(rnd() % 40) - 30);
    }
  if (data == 2) src[src.size() / 2] = NAN;
  // the twin
  const int rows_basis[1] = {0};
  nvfp4_layer ly;
  std::memset(&ly, 0, sizeof ly);
  ly.B = 1;
  ly.p = 1;
  ly.r = 1;
  ly.rows = rows_basis;
  ly.hla_fmt = NVFP4_HLA_MXFP8;
  ly.layer_id = 5;
  std::vector<uint8_t> wc((size_t)rows * o_pad / 2), ws((size_t)rows * o_pad / 16);
  float wst = -1.0f;
  const uint64_t seed = 0x1234567890abcdefull;
  const uint32_t step = 77, tag = ly.layer_id * 16u + HOT_TENSOR_HQ_G;
  int rc;
  if (HOT_OPERAND == 0) {
    ly.L = rows, ly.O = O, ly.I = 1;
    rc = nvfp4_hq_quant_g(&ly, src.data(), HOT_ROUND, seed, step, wc.data(), ws.data(), &wst);
  } else {
    ly.L = 1, ly.O = O, ly.I = rows; // src is w (O x I): w[o * I + i]
    rc = nvfp4_hq_quant_w(&ly, src.data(), wc.data(), ws.data(), &wst);
  }
  const long long threads = (long long)rows * (o_pad / 16);
  const long blocks = (long)((threads + HOT_QTHREADS - 1) / HOT_QTHREADS);
  long bad = 0;
  for (uint64_t sd : emu::seeds_from_env("0 1 2 3")) {
    emu::set_seed(sd);
    std::vector<uint8_t> codes(wc.size() + 4, 0xAB), scales(ws.size() + 1, 0xAB);
    unsigned amax_word = 0;
    int flag = 0;
    float st = -1.0f;
    for (int phase = 0; phase < 2; ++phase) {
      const std::function<void()> kernel = [&] {
        HOT_KNAME(src.data(), rows, O, o_pad, phase, &amax_word, &flag, codes.data(), scales.data(),
                  &st, seed, tag, step);
      };
      for (long b : emu::block_order(blocks)) {
        blockIdx = {(unsigned)b, 0, 0};
        emu::run_block(HOT_QTHREADS, kernel, [](int) {});
      }
    }
    long bad1 = 0;
    if (rc == -4 || flag) {
      if (!(rc == -4 && flag)) {
        std::printf("  non-finite: twin %d, kernel flag %d\n", rc, flag);
        ++bad1;
      }
    } else {
      if (rc != 0) emu_fatal("the twin failed");
      for (size_t i = 0; i < wc.size(); ++i)
        if (codes[i] != wc[i] && bad1++ < 5)
          std::printf("  code byte %zu (row %zu): got %02x want %02x\n", i, i / (size_t)(o_pad / 2),
                      codes[i], wc[i]);
      for (size_t i = 0; i < ws.size(); ++i)
        if (scales[i] != ws[i] && bad1++ < 5)
          std::printf("  scale %zu: got %02x want %02x\n", i, scales[i], ws[i]);
      if (std::memcmp(&st, &wst, 4) != 0) {
        std::printf("  s_t: got %.9g want %.9g\n", st, wst);
        ++bad1;
      }
      if (codes[wc.size()] != 0xAB || scales[ws.size()] != 0xAB) {
        std::printf("  wrote past the codes or scales\n");
        ++bad1;
      }
    }
    std::printf("hq_nvfp4 %s %s rows=%d O=%d (o_pad %d) data %d schedule %llu (%s): %s, trace %016llx\n",
                HOT_OPERAND ? "w'" : "g'", HOT_ROUND ? "SR" : "RTN", rows, O, o_pad, data,
                (unsigned long long)sd, emu::policy_name(), bad1 ? "FAIL" : "ok",
                (unsigned long long)emu::trace());
    std::fflush(stdout);
    bad += bad1;
  }
  return bad ? 1 : 0;
}

// hla_mxfp8_emu.cpp — runs templates/hla_mxfp8.cu (HLA's MXFP8 quantisers for sm_120a) on the
// CPU: every CUDA thread a fiber of the deterministic scheduler of tools/kernel-emu/emu_sched.h
// (its atomics yield first, so schedules interleave them), blocks in a seeded order, phase 0 then
// phase 1 as the launch order requires; compared bit for bit with the twin (nvfp4_hla_quant with
// hla_fmt NVFP4_HLA_MXFP8: x^ RTN for HOT_MODE 0, g^ with HOT_ROUND's rounding for 1): every code
// and E8M0 scale byte, nothing written past them, and the non-finite flag against the twin's -4.
// Usage: hla_mxfp8_emu B L COLS FLAT DATA   (DATA 0: random, exponents from subnormal to large,
//                                           zero stretches, -0.0; 1: all zero; 2: random with
//                                           one NaN)
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
#define __constant__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
static inline int atomicOr(int *p, int v) {
  emu::yield();
  const int old = *p;
  *p = old | v;
  return old;
}
using std::isfinite;
using std::signbit;

#include "kernel_hla_mxfp8.inc"

static unsigned g_rng = 4048;
static unsigned rnd() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: hla_mxfp8_emu B L COLS FLAT DATA\n");
    return 2;
  }
  const long long B = std::atoll(argv[1]), L = std::atoll(argv[2]);
  const int cols = std::atoi(argv[3]), flat = std::atoi(argv[4]), data = std::atoi(argv[5]);
  if (B < 1 || L < 1 || cols < 1 || (flat != 0 && flat != 1) || data < 0 || data > 2)
    emu_fatal("bad arguments");
  const long long T = B * L;
  std::vector<float> src((size_t)(T * cols), 0.0f);
  if (data != 1)
    for (size_t i = 0; i < src.size(); ++i) {
      const long long t = (long long)(i / (size_t)cols), c = (long long)(i % (size_t)cols);
      if ((t / 8 + c) % 11 == 5) continue; // zero stretches: all-zero 32-blocks of some columns
      if (rnd() % 97 == 0) {
        src[i] = -0.0f;
        continue;
      }
      // per column a scale from deep subnormal blocks (E8M0 clamp at -127) to large values
      const int ex = (int)((c * 37) % 180) - 160 + (int)(rnd() % 6);
      src[i] = ((float)(int)(rnd() & 0xFFFF) - 32768.0f) * std::ldexp(1.0f, ex);
    }
  if (data == 2) src[src.size() / 2] = NAN;
  // the twin
  const int rows_basis[HOT_R] = {HOT_ROWS};
  nvfp4_layer ly;
  std::memset(&ly, 0, sizeof ly);
  ly.B = B;
  ly.L = L;
  ly.O = cols;
  ly.I = cols;
  ly.p = HOT_P;
  ly.r = HOT_R;
  ly.flat = flat;
  ly.rows = rows_basis;
  ly.hla_fmt = NVFP4_HLA_MXFP8;
  ly.layer_id = 9;
  const long long K = nvfp4_layer_k(&ly), k_pad = (K + 31) / 32 * 32, nb = k_pad / 32;
  if (K <= 0) emu_fatal("the twin rejects the layer");
  std::vector<uint8_t> wc((size_t)(cols * k_pad)), ws((size_t)(cols * nb));
  const uint64_t seed = 0x0fedcba987654321ull;
  const uint32_t step = 31, tag = HOT_MODE ? ly.layer_id * 16u + HOT_TENSOR_HLA_G : 0u;
  const int rc = nvfp4_hla_quant(&ly, src.data(), cols, HOT_MODE, HOT_ROUND, seed, step, wc.data(),
                                 ws.data(), NULL);
  const long long blocks = nvfp4_layer_blocks(&ly);
  const long grid[2] = {(long)((blocks * cols + HOT_MXTHREADS - 1) / HOT_MXTHREADS),
                        (long)((cols * nb + HOT_MXTHREADS - 1) / HOT_MXTHREADS)};
  long bad = 0;
  for (uint64_t sd : emu::seeds_from_env("0 1 2 3")) {
    emu::set_seed(sd);
    std::vector<uint8_t> codes(wc.size() + 4, 0xAB), scales(ws.size() + 1, 0xAB);
    std::vector<float> work((size_t)(blocks * HOT_P * cols), NAN);
    int flag = 0;
    for (int phase = 0; phase < 2; ++phase) {
      const std::function<void()> kernel = [&] {
        HOT_KNAME(src.data(), cols, L, B, flat, (int)k_pad, phase, work.data(), &flag,
                  codes.data(), scales.data(), seed, tag, step);
      };
      for (long b : emu::block_order(grid[phase])) {
        blockIdx = {(unsigned)b, 0, 0};
        emu::run_block(HOT_MXTHREADS, kernel, [](int) {});
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
          std::printf("  code byte %zu (column %zu, kk %zu): got %02x want %02x\n", i,
                      i / (size_t)k_pad, i % (size_t)k_pad, codes[i], wc[i]);
      for (size_t i = 0; i < ws.size(); ++i)
        if (scales[i] != ws[i] && bad1++ < 5)
          std::printf("  scale %zu: got %02x want %02x\n", i, scales[i], ws[i]);
      if (codes[wc.size()] != 0xAB || scales[ws.size()] != 0xAB) {
        std::printf("  wrote past the codes or scales\n");
        ++bad1;
      }
    }
    std::printf("hla_mxfp8 %s %s p=%d r=%d B=%lld L=%lld cols=%d %s (K %lld, k_pad %lld) data %d "
                "schedule %llu (%s): %s, trace %016llx\n",
                HOT_MODE ? "g^" : "x^", HOT_ROUND ? "SR" : "RTN", HOT_P, HOT_R, B, L, cols,
                flat ? "flat" : "sample", K, k_pad, data, (unsigned long long)sd,
                emu::policy_name(), bad1 ? "FAIL" : "ok", (unsigned long long)emu::trace());
    std::fflush(stdout);
    bad += bad1;
  }
  return bad ? 1 : 0;
}

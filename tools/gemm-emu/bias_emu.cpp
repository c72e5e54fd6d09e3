// bias_emu.cpp — runs templates/bias.cu on the CPU (every CUDA thread a fiber of the deterministic
// scheduler of tools/kernel-emu/emu_sched.h, once per schedule seed of EMU_SEEDS, blocks in
// sequence; tools/gemm-emu.sh builds it from a copy whose __shared__ array is made static) and
// compares g_b bit for bit with the summation order of templates/bias_ref.c, written out here:
// per column, chunks of 256 tokens summed from 0.0f in token order, the partials summed from
// 0.0f in chunk order. Usage: bias_emu T O
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "emu_sched.h"

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
template <class T> static inline T __ldg(const T *p) {
  emu::yield();
  return *p;
}
static inline int min(int a, int b) { return a < b ? a : b; }

static emu::barrier g_bar;
static void __syncthreads() {
  emu::yield();
  g_bar.wait();
}

#include "bias.inc"

static float load(const void *gy, long long i) {
#if HOT_DTYPE == 0
  return ((const float *)gy)[i];
#elif HOT_DTYPE == 1
  return hot_bf16_to_f32(((const unsigned short *)gy)[i]);
#else
  return hot_f16_to_f32(((const unsigned short *)gy)[i]);
#endif
}

int main(int argc, char **argv) {
  int T = std::atoi(argv[1]), O = std::atoi(argv[2]);
  std::vector<unsigned char> buf((size_t)T * O * 4 + 4);
  unsigned s = 777;
  for (size_t i = 0; i < buf.size(); i += 2) {
    s = s * 1664525u + 1013904223u;
    unsigned short h = (unsigned short)(s >> 16);
    if (HOT_DTYPE != 0 && ((h >> 10) & 0x1f) == 0x1f) h &= 0xbfff; // f16: no inf/nan
    if (HOT_DTYPE == 1 && ((h >> 7) & 0xff) == 0xff) h &= 0xbfff;  // bf16: no inf/nan
    std::memcpy(&buf[i], &h, 2);
  }
  if (HOT_DTYPE == 0) { // f32: moderate values of mixed sign, so rounding order matters
    float *f = (float *)buf.data();
    for (long long i = 0; i < (long long)T * O; ++i) {
      s = s * 1664525u + 1013904223u;
      f[i] = ((float)(int)(s >> 8) - 8388608.0f) * 1.1920929e-7f * (1.0f + (float)(i % 7));
    }
  }
  std::vector<float> want((size_t)O);
  for (int o = 0; o < O; ++o) {
    float total = 0.0f;
    for (int t0 = 0; t0 < T; t0 += 256) {
      float p = 0.0f;
      for (int t = t0; t < T && t < t0 + 256; ++t) p = HOT_ADD(p, load(buf.data(), (long long)t * O + o));
      total = HOT_ADD(total, p);
    }
    want[(size_t)o] = total;
  }
  std::vector<float> gb((size_t)O + 1);
  const int blocks = (O + HOT_BIAS_COLS - 1) / HOT_BIAS_COLS; // the plan's grid (gen/kernels/bias.c)
  const std::function<void()> kernel = [&] { HOT_KNAME(buf.data(), gb.data(), T, O); };
  long bad = 0;
  for (uint64_t seed : emu::seeds_from_env("0 1 2 3")) {
    emu::set_seed(seed);
    std::fill(gb.begin(), gb.end(), -1.0f);
    for (long b : emu::block_order(blocks)) {
      blockIdx = {(unsigned)b, 0, 0};
      g_bar.init(HOT_BIAS_THREADS, "__syncthreads");
      emu::run_block(HOT_BIAS_THREADS, kernel, [](int) { g_bar.leave(); });
    }
    long bad1 = 0;
    for (int o = 0; o < O; ++o)
      if (std::memcmp(&want[(size_t)o], &gb[(size_t)o], 4) != 0 && bad1++ < 5)
        std::printf("  mismatch g_b[%d]: got %.9g want %.9g\n", o, gb[(size_t)o], want[(size_t)o]);
    if (gb[(size_t)O] != -1.0f) { std::printf("  wrote past g_b[O-1]\n"); ++bad1; }
    std::printf("bias dtype %d T=%d O=%d schedule %llu (%s): %s, trace %016llx\n", HOT_DTYPE, T, O,
                (unsigned long long)seed, emu::policy_name(), bad1 ? "FAIL" : "ok",
                (unsigned long long)emu::trace());
    std::fflush(stdout);
    bad += bad1;
  }
  return bad ? 1 : 0;
}

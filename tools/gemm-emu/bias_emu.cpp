// bias_emu.cpp — runs templates/bias.cu on the CPU (one OS thread per CUDA thread, blocks in
// sequence; tools/gemm-emu.sh builds it from a copy whose __shared__ array is made static) and
// compares g_b bit for bit with the summation order of templates/bias_ref.c, written out here:
// per column, chunks of 256 tokens summed from 0.0f in token order, the partials summed from
// 0.0f in chunk order. Usage: bias_emu T O
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
struct emu_dim3 { unsigned x, y, z; };
static thread_local emu_dim3 threadIdx, blockIdx;
template <class T> static inline T __ldg(const T *p) { return *p; }
static inline int min(int a, int b) { return a < b ? a : b; }

struct emu_barrier {
  std::mutex mu;
  std::condition_variable cv;
  int n = 0, count = 0;
  unsigned long gen = 0;
  void wait() {
    std::unique_lock<std::mutex> lk(mu);
    unsigned long g = gen;
    if (++count == n) { count = 0; ++gen; cv.notify_all(); }
    else cv.wait(lk, [&] { return gen != g; });
  }
};
static emu_barrier g_bar;
static void __syncthreads() { g_bar.wait(); }

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
  std::vector<float> gb(O + 1, -1.0f);
  int blocks = (O + 31) / 32;
  for (int b = 0; b < blocks; ++b) {
    g_bar.n = HOT_BIAS_THREADS;
    std::vector<std::thread> th;
    for (int t = 0; t < HOT_BIAS_THREADS; ++t)
      th.emplace_back([&, t, b] {
        threadIdx = {(unsigned)t, 0, 0};
        blockIdx = {(unsigned)b, 0, 0};
        HOT_KNAME(buf.data(), gb.data(), T, O);
      });
    for (auto &x : th) x.join();
  }
  long bad = 0;
  for (int o = 0; o < O; ++o) {
    float total = 0.0f;
    for (int t0 = 0; t0 < T; t0 += 256) {
      float p = 0.0f;
      for (int t = t0; t < T && t < t0 + 256; ++t) p = HOT_ADD(p, load(buf.data(), (long long)t * O + o));
      total = HOT_ADD(total, p);
    }
    if (std::memcmp(&total, &gb[o], 4) != 0 && bad++ < 5)
      std::printf("  mismatch g_b[%d]: got %.9g want %.9g\n", o, gb[o], total);
  }
  if (gb[O] != -1.0f) { std::printf("  wrote past g_b[O-1]\n"); ++bad; }
  std::printf("bias dtype %d T=%d O=%d: %s\n", HOT_DTYPE, T, O, bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}

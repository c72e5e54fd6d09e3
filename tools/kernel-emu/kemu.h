// kemu.h — a SIMT model for running the element-wise / transform templates (hla_project.cu,
// lqs.cu, sawb.cu) on the CPU, unchanged: one OS thread per CUDA thread of a block, the blocks of
// a grid one after another. Modelled:
//  - __syncthreads: a barrier over the block's threads that have not exited (as on sm_70+);
//  - __syncwarp, __shfl_xor_sync: per-warp barriers and an exchange; a warp collective reached
//    while a lane of that warp has exited is reported as an error (undefined behaviour on a GPU);
//  - __shared__ arrays: function-local statics, shared by the block's threads and left holding
//    the previous block's data (stale, like real shared memory);
//  - atomicMax on unsigned: a mutex;
//  - __ldg: a plain load, with a random pause now and then (EMU jitter) so that threads drift
//    apart and a missing barrier shows up as a wrong result rather than a lucky schedule;
//  - a watchdog: a barrier that never completes (divergent __syncthreads) aborts after 600 s.
// Not modelled: memory ordering beyond what the barriers give (the OS threads see a coherent
// memory), bank conflicts, timing. Numerics: the templates are compiled as host C++ without
// __CUDACC__, so hot_math.cuh uses its host branch (the twins' macros): what this checks is the
// kernels' indexing, padding, phase protocol, order of every rounding sum, and synchronization.
#pragma once
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <unistd.h>
#include <vector>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n)
#define __restrict__ __restrict
#define __shared__ static
#define __constant__

struct emu_dim3 { unsigned x, y, z; };
static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 gridDim, blockDim;

static void emu_die(const char *m) {
  std::fprintf(stderr, "EMU ERROR: %s\n", m);
  std::exit(2);
}

// A barrier over `live` participants; exited participants are removed (arrive-less).
struct emu_bar {
  std::mutex mu;
  std::condition_variable cv;
  int live = 0, count = 0, exited = 0;
  unsigned long gen = 0;
  void init(int n) { live = n; count = 0; exited = 0; gen = 0; }
  void release() { count = 0; ++gen; cv.notify_all(); }
  void wait() {
    std::unique_lock<std::mutex> lk(mu);
    unsigned long g = gen;
    if (++count == live) release();
    else cv.wait(lk, [&] { return gen != g; });
  }
  void leave() {
    std::unique_lock<std::mutex> lk(mu);
    --live;
    ++exited;
    if (count > 0 && count == live) release();
  }
};

static emu_bar g_block_bar;
struct emu_warp {
  emu_bar bar;
  unsigned long long slot[32];
};
static std::vector<emu_warp> g_warps(32);
static std::mutex g_atomic_mu;
static thread_local unsigned t_rng;

static void emu_jitter() {
  t_rng = t_rng * 1103515245u + 12345u;
  unsigned r = (t_rng >> 16) & 255u;
  if (r == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  else if (r < 8) std::this_thread::yield();
}

template <class T> static inline T __ldg(const T *p) {
  emu_jitter();
  return *p;
}
static void __syncthreads() {
  emu_jitter();
  g_block_bar.wait();
}
static emu_warp &emu_my_warp() {
  emu_warp &w = g_warps[threadIdx.x >> 5];
  if (w.bar.exited) emu_die("warp collective with an exited lane");
  return w;
}
static void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) emu_die("__syncwarp: only full masks are modelled");
  emu_jitter();
  emu_my_warp().bar.wait();
}
template <class T> static T __shfl_xor_sync(unsigned mask, T v, int d) {
  static_assert(sizeof(T) <= 8, "shuffle of a scalar");
  if (mask != 0xffffffffu) emu_die("__shfl_xor_sync: only full masks are modelled");
  emu_warp &w = emu_my_warp();
  int lane = (int)(threadIdx.x & 31);
  unsigned long long raw = 0;
  std::memcpy(&raw, &v, sizeof v);
  w.slot[lane] = raw;
  w.bar.wait();
  raw = w.slot[lane ^ d];
  w.bar.wait();
  T out;
  std::memcpy(&out, &raw, sizeof out);
  return out;
}
static unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static unsigned atomicMax(unsigned *a, unsigned v) {
  std::lock_guard<std::mutex> lk(g_atomic_mu);
  unsigned old = *a;
  if (v > old) *a = v;
  return old;
}

// Runs kernel() for every block of `grid` (x fastest, then y, then z) with `threads` threads a
// block (a multiple of 32, at most 1024), one OS thread per CUDA thread.
static void emu_launch(emu_dim3 grid, unsigned threads, const std::function<void()> &kernel) {
  if (threads % 32 || threads > 1024) emu_die("block size");
  static bool armed = false;
  if (!armed) { armed = true; std::signal(SIGALRM, [](int) { emu_die("watchdog: deadlock?"); }); }
  alarm(600);
  gridDim = grid;
  blockDim = {threads, 1, 1};
  emu_bar end_bar;
  end_bar.init((int)threads);
  std::atomic<long> next{0};
  const long nblocks = (long)grid.x * grid.y * grid.z;
  auto setup = [&](long b) {
    g_block_bar.init((int)threads);
    for (unsigned w = 0; w < threads / 32; ++w) g_warps[w].bar.init(32);
    (void)b;
  };
  setup(0);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      threadIdx = {t, 0, 0};
      for (long b = 0; b < nblocks; ++b) {
        blockIdx = {(unsigned)(b % grid.x), (unsigned)((b / grid.x) % grid.y),
                    (unsigned)(b / ((long)grid.x * grid.y))};
        t_rng = 0x9e3779b9u * (t + 1) + 7919u * (unsigned)b;
        kernel();
        g_block_bar.leave();
        g_warps[t >> 5].bar.leave();
        end_bar.wait();           // every thread of the block is done
        if (t == 0) setup(b + 1); // fresh barriers for the next block
        end_bar.wait();
      }
    });
  for (auto &th : pool) th.join();
  alarm(0);
}

// ---- small helpers for the drivers -------------------------------------------------------
static unsigned long long g_lcg = 88172645463325252ull;
static unsigned emu_rand() {
  g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(g_lcg >> 33);
}
// A random finite value of dtype dt (0 f32, 1 bf16, 2 f16) as raw bits into buf[i]; `mag`
// widens the exponent range (outliers).
static void emu_fill(void *buf, int dt, long long i, int big) {
  unsigned r = emu_rand(), s = r & 1u;
  if (dt == 0) {
    unsigned e = 120u + (r >> 1) % 10u + (big ? 6u : 0u);
    unsigned u = (s << 31) | (e << 23) | (emu_rand() & 0x7fffffu);
    std::memcpy((float *)buf + i, &u, 4);
  } else if (dt == 1) {
    unsigned e = 120u + (r >> 1) % 10u + (big ? 6u : 0u);
    ((unsigned short *)buf)[i] = (unsigned short)((s << 15) | (e << 7) | (emu_rand() & 0x7fu));
  } else {
    unsigned e = 8u + (r >> 1) % 10u + (big ? 6u : 0u); // also subnormal-free normals
    if ((r >> 8) % 97 == 0) e = 0;                       // a few subnormals
    ((unsigned short *)buf)[i] = (unsigned short)((s << 15) | (e << 10) | (emu_rand() & 0x3ffu));
  }
}

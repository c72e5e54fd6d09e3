// kemu.h — a SIMT model for running the element-wise / transform templates (hadamard_quant.cu,
// hla_project.cu, lqs.cu, sawb.cu) on the CPU, unchanged: every CUDA thread of a block is a
// fiber of the deterministic scheduler of emu_sched.h (one OS thread, a seeded schedule), the
// blocks of a grid one after another. Modelled:
//  - __syncthreads: a barrier over the block's threads that have not exited (as on sm_70+);
//  - __syncwarp, __shfl_xor_sync, __shfl_sync: per-warp barriers and an exchange; a warp collective reached
//    while a lane of that warp has exited is reported as an error (undefined behaviour on a GPU);
//  - __shared__ arrays: function-local statics, shared by the block's threads and left holding
//    the previous block's data (stale, like real shared memory);
//  - atomicMax on unsigned;
//  - scheduling points: every barrier and collective, every __ldg and atomic; which thread runs
//    next is the schedule's decision (EMU_SEEDS), so a missing barrier shows up as a wrong result
//    under the schedules that run one thread or warp ahead — the same way on every run;
//  - a barrier that can never complete (divergent __syncthreads) stops the run at once.
// Not modelled: memory ordering beyond what the barriers give (the fibers see a coherent
// memory), timing. Built with -DEMU_MEMSTAT (tools/memstat.sh), every shared and global access
// of the template is counted by memstat.h (bank wavefronts, sectors; docs/gpu-model.md): each
// __shared__ array is then placed on a 128-byte boundary of an emulated shared window. Numerics: the templates are compiled as host C++ without
// __CUDACC__, so hot_math.cuh uses its host branch (the twins' macros): what this checks is the
// kernels' indexing, padding, phase protocol, order of every rounding sum, and synchronization.
//
// A driver defines `static int emu_run(int argc, char **argv)` (one complete check, returning
// its exit status) and `EMU_MAIN()`: main runs it once per schedule seed of EMU_SEEDS (default
// "0 1 2 3") with the same inputs and fails when any seed fails.
#pragma once
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <unistd.h>
#include <vector>

#include "emu_sched.h"
#include "memstat.h"

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n)
#define __restrict__ __restrict
#ifdef EMU_MEMSTAT
#define __shared__ static __attribute__((section("emu_shared"), aligned(128)))
// weak: a kernel without __shared__ arrays has no such section (an empty window)
extern "C" char __start_emu_shared[] __attribute__((weak)), __stop_emu_shared[] __attribute__((weak));
#ifndef EMU_MEMSTAT_NAME
#define EMU_MEMSTAT_NAME "kernel"
#endif
#define EMU_PHASE(p) memstat::set_phase(p) /* counted per kernel and phase */
#define EMU_NOTE_GLOBAL(p, kind)                                                                   \
  memstat::note((uintptr_t)__builtin_return_address(0), memstat::S_GLOBAL, kind,                   \
                (unsigned long long)(uintptr_t)(p), (int)sizeof *(p), (int)threadIdx.x)
#else
#define __shared__ static
#define EMU_PHASE(p) ((void)0)
#define EMU_NOTE_GLOBAL(p, kind) ((void)0)
#endif
#ifdef EMU_MEMSTAT
#define EMU_HOOK_FN __attribute__((noinline, no_sanitize_thread)) static
#else
#define EMU_HOOK_FN static inline
#endif
#define __constant__

static void emu_die(const char *m) { emu_fatal(m); }

static emu::barrier g_block_bar;
struct emu_warp {
  emu::barrier bar;
  unsigned long long slot[2][32]; // double-buffered: collective n uses slot[n & 1]
  unsigned seq[32];               // collectives each lane has entered
};
static std::vector<emu_warp> g_warps(32);

// (EMU_MEMSTAT: not inlined, so that the return address is the template's load site)
template <class T> EMU_HOOK_FN T __ldg(const T *p) {
  EMU_NOTE_GLOBAL(p, memstat::K_LD);
  emu::yield();
  return *p;
}
static void __syncthreads() {
  emu::yield();
  g_block_bar.wait();
}
static emu_warp &emu_my_warp() {
  emu_warp &w = g_warps[threadIdx.x >> 5];
  if (w.bar.exited) emu_die("warp collective with an exited lane");
  return w;
}
// templates/hot_math.cuh's warp collectives are compiled where __syncwarp exists
#define HOT_HAVE_SYNCWARP 1
static void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) emu_die("__syncwarp: only full masks are modelled");
  emu::yield();
  emu_my_warp().bar.wait();
}
// One barrier per exchange: lane values go to the slot set of this collective's parity; a lane
// can only write that set again two collectives later, after every lane has passed the next
// collective, i.e. after every lane has read this one.
// emu_shfl: lane `src` of the warp's values (CUDA's width 32: src taken modulo 32).
template <class T> static T emu_shfl(T v, int src) {
  static_assert(sizeof(T) <= 8, "shuffle of a scalar");
  emu::yield();
  emu_warp &w = emu_my_warp();
  int lane = (int)(threadIdx.x & 31);
  unsigned par = w.seq[lane]++ & 1u;
  unsigned long long raw = 0;
  std::memcpy(&raw, &v, sizeof v);
  w.slot[par][lane] = raw;
  w.bar.wait();
  raw = w.slot[par][src & 31];
  T out;
  std::memcpy(&out, &raw, sizeof out);
  return out;
}
template <class T> static T __shfl_xor_sync(unsigned mask, T v, int d) {
  if (mask != 0xffffffffu) emu_die("__shfl_xor_sync: only full masks are modelled");
  return emu_shfl(v, (int)(threadIdx.x & 31) ^ d);
}
template <class T> static T __shfl_sync(unsigned mask, T v, int src) {
  if (mask != 0xffffffffu) emu_die("__shfl_sync: only full masks are modelled");
  return emu_shfl(v, src);
}
static unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
EMU_HOOK_FN unsigned atomicMax(unsigned *a, unsigned v) {
  EMU_NOTE_GLOBAL(a, memstat::K_ATOM);
  emu::yield();
  unsigned old = *a;
  if (v > old) *a = v;
  return old;
}

static void emu_thread_exit(int tid) {
  g_block_bar.leave();
  g_warps[(size_t)tid >> 5].bar.leave();
}

// Runs kernel() for every block of `grid` (in the schedule's block order) with `threads` threads
// a block (a multiple of 32, at most 1024).
static void emu_launch(emu_dim3 grid, unsigned threads, const std::function<void()> &kernel) {
  if (threads % 32 || threads > 1024) emu_die("block size");
  static bool armed = false; // a livelock (a kernel spinning forever) still ends
  if (!armed) { armed = true; std::signal(SIGALRM, [](int) { emu_die("watchdog: no end after 600 s"); }); }
  alarm(600);
  gridDim = grid;
  blockDim = {threads, 1, 1};
  const long nblocks = (long)grid.x * grid.y * grid.z;
#ifdef EMU_MEMSTAT
  memstat::set_shared_window(__start_emu_shared, (size_t)(__stop_emu_shared - __start_emu_shared));
  memstat::launch_begin(EMU_MEMSTAT_NAME);
#endif
  for (long b : emu::block_order(nblocks)) {
    blockIdx = {(unsigned)(b % grid.x), (unsigned)((b / grid.x) % grid.y),
                (unsigned)(b / ((long)grid.x * grid.y))};
    g_block_bar.init((int)threads, "__syncthreads");
    for (unsigned w = 0; w < threads / 32; ++w) {
      g_warps[w].bar.init(32, "warp collective");
      std::memset(g_warps[w].seq, 0, sizeof g_warps[w].seq);
    }
    emu::run_block((int)threads, kernel, emu_thread_exit);
#ifdef EMU_MEMSTAT
    memstat::block_end();
#endif
  }
#ifdef EMU_MEMSTAT
  memstat::launch_end();
#endif
  alarm(0);
}

static unsigned long long g_lcg;
static int emu_run(int argc, char **argv);
// main: the check once per schedule seed, the same inputs each time.
#define EMU_MAIN()                                                                                \
  int main(int argc, char **argv) {                                                               \
    int rc = 0;                                                                                   \
    for (uint64_t seed : emu::seeds_from_env("0 1 2 3")) {                                        \
      emu::set_seed(seed);                                                                        \
      g_lcg = 88172645463325252ull;                                                               \
      int r = emu_run(argc, argv);                                                                \
      std::printf("  schedule %llu (%s): %s, trace %016llx\n", (unsigned long long)seed,          \
                  emu::policy_name(), r ? "FAIL" : "ok", (unsigned long long)emu::trace());       \
      std::fflush(stdout);                                                                        \
      if (r > rc) rc = r;                                                                         \
    }                                                                                             \
    return rc;                                                                                    \
  }

// ---- small helpers for the drivers -------------------------------------------------------
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

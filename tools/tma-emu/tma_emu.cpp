// tma_emu.cpp — runs templates/gemm_tma.cu on the CPU: every CUDA thread a fiber of the
// deterministic scheduler of tools/kernel-emu/emu_sched.h, plus one more fiber that plays the TMA
// unit. Modelled from the PTX ISA and the CUDA driver API, independently of the kernel:
//   - cuTensorMapEncodeTiled (host side, emu_encode_tiled): the documented requirements on data
//     type, rank, global address, globalDim, globalStrides, boxDim, elementStrides, interleave,
//     swizzle, L2 promotion and OOB fill are checked; the fields go into the 128 opaque bytes in
//     an encoding of this emulator's own (the driver's is not documented);
//   - cp.async.bulk.tensor.2d ... mbarrier::complete_tx::bytes: the box at the coordinates, rows
//     and columns past globalDim filled with zeros (OOB fill NONE), written into shared memory
//     with the map's swizzle (128B: address bits [7, 10) XORed into [4, 7); 64B: [7, 9) into
//     [4, 6); 32B: bit 7 into bit 4) from a destination that must be 128-byte aligned and aligned
//     to the swizzle's repeat (1024, 512, 256 bytes: where the pattern of the swizzle and the
//     wgmma descriptor's base offset 0 agree), then complete_tx of the box's full size on the
//     mbarrier. The copy is performed by the TMA fiber, whenever the schedule runs it (seed 0:
//     only when every thread waits — as late as possible; seed 1: as soon as issued; other
//     seeds: random, completions out of order), or at issue with tma_early = 1;
//   - mbarrier: init (count), arrive, arrive.expect_tx, complete_tx, try_wait.parity: a phase
//     completes when its pending arrivals and its transaction count are both zero; a wait on
//     parity P returns once the current phase's parity differs from P. A wait that can never be
//     satisfied blocks its fiber; when no fiber can run the scheduler reports the deadlock with
//     the waits named (the emulator itself never hangs). Use before init, init without
//     fence.mbarrier_init before others use it, a transaction count out of range, and a barrier
//     left mid-phase at the end of the block are errors;
//   - wgmma.mma_async m64nNk32 .s32.s8.s8 with K-major 128B-swizzle descriptors (the layout of
//     tools/gemm-emu/emu.cpp's model, written again here): a warpgroup collective; its shared
//     memory is read and the accumulators written at issue (wg_late = 0) or when a
//     wgmma.wait_group of each warp retires it (wg_late = 1); wgmma.fence required after every
//     wait_group before the next wgmma; fence / commit / wait per thread;
//   - setmaxnreg: counts in [24, 256], multiples of 8, the same in the 4 warps of a warpgroup,
//     and the per-CTA register pool (launch registers 65536 / threads rounded down to 8, at most
//     248): .inc waits until the pool holds what it asks (forever: a reported deadlock).
// Races it reports at once (besides wrong bits): a wgmma issued on shared memory whose TMA load
// has not landed; a TMA landing on shared memory an in-flight (unretired) wgmma reads; two TMA
// loads in flight into the same bytes; a TMA or wgmma touching an mbarrier's bytes.
// Checked bit for bit against a reference GEMM (CONTRACT 14, also segmented) for each seed of
// EMU_SEEDS; writes outside C's M x N window are errors.
//
// What it cannot check: that these models match the hardware (the swizzle and OOB rules, the
// undocumented tensor-map encoding, wgmma's layouts, the mbarrier's implementation); timing,
// occupancy, L2 behaviour or the grouped order's benefit; what the compiler reorders (the
// wrappers are calls here); cluster scope (one CTA, no multicast).
//
// The overflow flag (CONTRACT 19): every run compares the kernel's flag with "some output is not
// finite"; over=J / under=J put output (m*, n*) = (M / 2, N - 1) just past / just below the edge
// of fp32 through row m*'s scale (J = 0, with a row scale) or segment J's s_a[J], as
// tools/gemm-emu/emu.cpp does (see range_edge.h).
//
// Usage: tma_emu M N Kpad ldc use_row_scale [tma_early [wg_late]] [segs=G] [sms=S]
//                [over=J | under=J]
//   grid = min(tiles, S) persistent CTAs (default S = 3, so CTAs run several tiles).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "emu_sched.h"
#include "memstat.h"
// EMU_MEMSTAT builds (tools/memstat.sh, -O0 -fsanitize=thread): the site of an emulated PTX
// instruction is the return address of its wrapper (frame 1 of the emulator function); the
// emulator's own work is not counted
#ifdef EMU_MEMSTAT
#define EMU_SITE() ((uintptr_t)__builtin_return_address(1))
#define EMU_PLAIN __attribute__((no_sanitize_thread))
#else
#define EMU_PLAIN
#endif

// ---- CUDA spellings on the host -------------------------------------------------------------
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __restrict__ __restrict
#define __shared__
#define __grid_constant__
#ifdef EMU_MEMSTAT
// one access of 8 bytes per copy (memstat.h's EMU_VEC_COPY), as the epilogue's float2 stores are
struct alignas(8) float2 {
  float x, y;
  float2(float a, float b) : x(a), y(b) {}
  EMU_VEC_COPY(float2)
};
#else
struct float2 { float x, y; };
#endif
static inline float2 make_float2(float a, float b) { return float2{a, b}; }
#define HOT_STR2(x) #x
#define HOT_STR(x) HOT_STR2(x)

static void die(const std::string &m) { emu_fatal(m.c_str()); }

static bool g_tma_early = false; // TMA copies at issue (else by the TMA fiber)
static bool g_wg_late = true;    // wgmma computes at the wait_group retiring it (else at issue)

// ---- the emulated block ------------------------------------------------------------------------
static std::vector<unsigned char> g_smem;
static size_t g_smem_bytes;
#ifndef EMU_SMEM_SKEW
#define EMU_SMEM_SKEW 256
#endif
static unsigned char *emu_smem() { return g_smem.data() + EMU_SMEM_SKEW; }
static unsigned emu_smem_u32(const void *p) {
  const unsigned char *q = (const unsigned char *)p;
  if (q < g_smem.data() || q > g_smem.data() + g_smem_bytes) die("cvta of a non-shared pointer");
  return (unsigned)(q - g_smem.data());
}
static emu::barrier g_block_bar;
static void __syncthreads() {
  emu::yield();
  g_block_bar.wait();
}
// per 16-byte chunk of shared memory: TMA loads in flight into it, in-flight wgmmas reading it,
// and whether an mbarrier lives there
static std::vector<int> g_tma_pending, g_wg_readers;
static std::vector<unsigned char> g_bar_mem;
static void chunk_range(unsigned a, unsigned bytes, const char *what) {
  if ((size_t)a + bytes > g_smem_bytes) die(std::string(what) + ": outside shared memory");
}

// cp.async is not used by this template (hot_gemm.cuh's wrappers still compile)
static void emu_cp_async16(unsigned, const void *, int) { die("cp.async in the TMA GEMM"); }
static void emu_cp_commit() { die("cp.async.commit_group in the TMA GEMM"); }
static void emu_cp_wait(int) { die("cp.async.wait_group in the TMA GEMM"); }

// ---- mbarrier ------------------------------------------------------------------------------------
struct emu_mbar {
  int count = 0, pending = 0;
  long long tx = 0;
  unsigned long phase = 0; // completed phases
  int init_by = -1;
  bool fenced = false;
  std::vector<int> waiters;
};
static std::map<unsigned, emu_mbar> g_mbar;
static std::vector<std::string> g_what; // per fiber: what it waits for (deadlock reports)
static unsigned g_bar_base; // the first barrier's address (names in messages)

static std::string bar_name(unsigned a) {
  long i = ((long)a - (long)g_bar_base) / 8;
  char b[64];
  if (a >= g_bar_base && i < 2 * HOT_STAGES)
    std::snprintf(b, sizeof b, "%s[%ld]", i < HOT_STAGES ? "full" : "empty", i % HOT_STAGES);
  else
    std::snprintf(b, sizeof b, "mbarrier@%u", a);
  return b;
}
static emu_mbar &mbar_get(unsigned a, bool from_async) {
  auto it = g_mbar.find(a);
  if (it == g_mbar.end()) die("mbarrier operation on " + bar_name(a) + " before mbarrier.init");
  emu_mbar &m = it->second;
  if (!m.fenced && (from_async || (int)threadIdx.x != m.init_by))
    die("mbarrier " + bar_name(a) + " used by another thread or the TMA unit before "
        "fence.mbarrier_init");
  return m;
}
static void emu_mbar_init(unsigned a, unsigned count) {
  emu::yield();
  if (a % 8) die("mbarrier.init: address not 8-byte aligned");
  chunk_range(a, 8, "mbarrier.init");
  if (count < 1 || count > (1u << 20) - 1) die("mbarrier.init: count outside [1, 2^20 - 1]");
  if (g_tma_pending[a / 16] || g_wg_readers[a / 16])
    die("mbarrier.init on bytes a TMA load or a wgmma uses");
  emu_mbar &m = g_mbar[a];
  if (!m.waiters.empty()) die("mbarrier.init of a barrier with waiting threads");
  m = emu_mbar();
  m.count = m.pending = (int)count;
  m.init_by = (int)threadIdx.x;
  g_bar_mem[a / 16] = 1;
}
static void emu_fence_mbar_init() {
  emu::yield();
  for (auto &kv : g_mbar)
    if (kv.second.init_by == (int)threadIdx.x) kv.second.fenced = true;
}
// completes the current phase when nothing is pending; wakes its waiters
static void mbar_check(emu_mbar &m) {
  if (m.tx > (1 << 20) - 1 || m.tx < -((1 << 20) - 1)) die("mbarrier transaction count out of range");
  if (m.pending != 0 || m.tx != 0) return;
  ++m.phase;
  m.pending = m.count;
  for (int t : m.waiters) emu::wake(t);
  m.waiters.clear();
  emu::reschedule();
}
static void emu_mbar_arrive(unsigned a, unsigned bytes, bool expect) {
  emu::yield();
  emu_mbar &m = mbar_get(a, false);
  if (expect) m.tx += bytes;
  if (m.pending <= 0) die("mbarrier " + bar_name(a) + ": more arrivals in one phase than its count (the phase still waits for transaction bytes)");
  --m.pending;
  mbar_check(m);
}
static void mbar_complete_tx(unsigned a, unsigned bytes) {
  emu_mbar &m = mbar_get(a, true);
  m.tx -= bytes;
  mbar_check(m);
}
static void emu_mbar_wait(unsigned a, unsigned parity) {
  emu::yield();
  if (parity > 1) die("mbarrier.try_wait.parity: parity must be 0 or 1");
  for (;;) {
    emu_mbar &m = mbar_get(a, false);
    if ((m.phase & 1) != parity) return; // the phase of that parity has completed
    m.waiters.push_back((int)threadIdx.x);
    char b[96];
    std::snprintf(b, sizeof b, "mbarrier wait %s parity %u", bar_name(a).c_str(), parity);
    g_what[threadIdx.x] = b;
    emu::block(g_what[threadIdx.x].c_str());
  }
}

// ---- tensor maps (host encoding) and the TMA unit -----------------------------------------------
// The emulator's private encoding of the 128 opaque bytes (struct hot_tensor_map of the kernel).
struct emu_tmap {
  uint64_t magic;
  const unsigned char *addr;
  uint64_t dim[2], stride1; // elements; bytes between rows
  uint32_t box[2];
  int32_t dtype, swizzle, oob, placeholder;
};
static const uint64_t k_tmap_magic = 0x686f742d746d6170ull;
static_assert(sizeof(emu_tmap) <= 128, "tensor map encoding too large");
static const unsigned char *g_buf_lo[3], *g_buf_hi[3]; // buffers a map may describe

static int dtype_size(int dt) {
  static const int sz[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return dt >= 0 && dt <= 12 ? sz[dt] : 0;
}
// cuTensorMapEncodeTiled's documented requirements (cuda.h), then the private encoding. Returns
// an empty string or the violated requirement. placeholder: a map the kernel must never load
// through (Kpad = 0).
static std::string emu_encode_tiled(void *map, int dtype, unsigned rank, const void *gaddr,
                                    const uint64_t *gdim, const uint64_t *gstride,
                                    const uint32_t *box, const uint32_t *estride, int interleave,
                                    int swizzle, int l2, int oob, bool placeholder) {
  if ((uintptr_t)map % 64) return "tensorMap address not 64-byte aligned";
  const int es = dtype_size(dtype);
  if (!es) return "tensorDataType not one of CUtensorMapDataType (0..12 modelled)";
  if (rank < 1 || rank > 5) return "tensorRank outside [1, 5]";
  if (interleave < 0 || interleave > 2) return "interleave not a CUtensorMapInterleave";
  if (interleave != 0 && rank < 3) return "interleave needs tensorRank >= 3";
  if ((uintptr_t)gaddr % (interleave == 2 ? 32 : 16)) return "globalAddress misaligned";
  for (unsigned i = 0; i < rank; ++i)
    if (gdim[i] == 0 || gdim[i] > (1ull << 32)) return "globalDim outside [1, 2^32]";
  for (unsigned i = 0; i + 1 < rank; ++i) {
    if (gstride[i] % (interleave == 2 ? 32 : 16) || gstride[i] >= (1ull << 40))
      return "globalStrides not a multiple of 16 below 2^40";
    if (gstride[i] < (i == 0 ? gdim[0] * (uint64_t)es : gstride[i - 1] * gdim[i]))
      return "globalStrides smaller than the dimension below it";
  }
  for (unsigned i = 0; i < rank; ++i) {
    if (box[i] == 0 || box[i] > 256) return "boxDim outside [1, 256]";
    if (estride[i] == 0 || estride[i] > 8) return "elementStrides outside [1, 8]";
  }
  if (interleave == 0 && (box[0] * (uint32_t)es) % 16) return "boxDim[0] * element size not a multiple of 16";
  if (swizzle < 0 || swizzle > 6) return "swizzle not a CUtensorMapSwizzle";
  if (interleave == 2 && swizzle != 1) return "INTERLEAVE_32B needs SWIZZLE_32B";
  const unsigned span[] = {0, 32, 64, 128, 128, 128, 128};
  if (interleave == 0 && swizzle != 0 && box[0] * (uint32_t)es > span[swizzle])
    return "the box's inner dimension exceeds the swizzle span";
  if (l2 < 0 || l2 > 3) return "l2Promotion not a CUtensorMapL2promotion";
  if (oob < 0 || oob > 1) return "oobFill not a CUtensorMapFloatOOBfill";
  if (oob == 1 && !(dtype >= 6 && dtype <= 12 && dtype != 9 + 100))
    if (!(dtype == 6 || dtype == 7 || dtype == 8 || dtype == 9 || dtype == 10 || dtype == 11 || dtype == 12))
      return "OOB_FILL_NAN_REQUEST_ZERO_FMA needs a floating-point data type";
  // what this emulator models
  if (rank != 2 || interleave != 0 || swizzle > 3 || estride[0] != 1 || estride[1] != 1 || es != 1)
    return "not modelled here: only rank 2, 1-byte elements, no interleave, element strides 1, "
           "swizzle NONE/32B/64B/128B";
  if (!placeholder) { // the map must stay inside a buffer the driver registered
    const unsigned char *lo = (const unsigned char *)gaddr;
    const unsigned char *hi = lo + (gdim[1] - 1) * gstride[0] + gdim[0];
    bool in = false;
    for (int i = 0; i < 3; ++i) in |= g_buf_lo[i] && lo >= g_buf_lo[i] && hi <= g_buf_hi[i];
    if (!in) return "the tensor reaches outside its buffer";
  }
  emu_tmap t{};
  t.magic = k_tmap_magic;
  t.addr = (const unsigned char *)gaddr;
  t.dim[0] = gdim[0];
  t.dim[1] = gdim[1];
  t.stride1 = gstride[0];
  t.box[0] = box[0];
  t.box[1] = box[1];
  t.dtype = dtype;
  t.swizzle = swizzle;
  t.oob = oob;
  t.placeholder = placeholder;
  std::memset(map, 0, 128);
  std::memcpy(map, &t, sizeof t);
  return "";
}
static emu_tmap tmap_decode(const void *map) {
  emu_tmap t;
  std::memcpy(&t, map, sizeof t);
  if (t.magic != k_tmap_magic) die("TMA through bytes that are not an encoded tensor map");
  return t;
}
static void emu_tma_prefetch(const void *map) {
  emu::yield();
  tmap_decode(map);
}

struct emu_tma_op {
  emu_tmap map;
  unsigned dst, bar;
  int k, row;
  uintptr_t site; // EMU_MEMSTAT: the issuing instruction
  int warp;       // and its warp
};
static std::vector<emu_tma_op> g_tma_q; // issued, not landed
static bool g_engine_blocked = false;
static int g_engine_tid; // the TMA unit's fiber: HOT_THREADS (set in main)
static int g_kernel_live = 0;
static unsigned box_bytes(const emu_tmap &t) { return t.box[0] * t.box[1]; }

#ifdef EMU_MEMSTAT
// A landing box as requests (docs/gpu-model.md): each 128-byte-or-narrower box row is one shared
// write of 16-byte chunks at their swizzled places, and one global read of its in-bounds bytes.
EMU_PLAIN static void tma_note(const emu_tma_op &op) {
  const emu_tmap &t = op.map;
  const unsigned rowb = t.box[0];
  for (unsigned r = 0; r < t.box[1]; ++r) {
    std::vector<memstat::lane_access> sh, gl;
    for (unsigned x = 0; x < rowb; x += 16) {
      unsigned o = r * rowb + x;
      if (t.swizzle == 3) o ^= ((o >> 7) & 7) << 4;
      else if (t.swizzle == 2) o ^= ((o >> 7) & 3) << 4;
      else if (t.swizzle == 1) o ^= ((o >> 7) & 1) << 4;
      sh.push_back(memstat::lane_access{(int)(x / 16), op.dst + o, 16});
      const long long gx = (long long)op.k + x, gy = (long long)op.row + r;
      const long long in = gy < (long long)t.dim[1] && gx < (long long)t.dim[0]
                               ? std::min<long long>(16, (long long)t.dim[0] - gx) : 0;
      if (in > 0)
        gl.push_back(memstat::lane_access{
            (int)(x / 16), (unsigned long long)(uintptr_t)(t.addr + (uint64_t)gy * t.stride1 + (uint64_t)gx),
            (int)in});
    }
    memstat::note_request(op.site, memstat::S_SHARED, memstat::K_TMA, op.warp, sh);
    if (!gl.empty()) memstat::note_request(op.site, memstat::S_GLOBAL, memstat::K_TMA, op.warp, gl);
  }
}
#endif

// The box lands: bytes (zeros past globalDim) in swizzled order, then complete_tx.
EMU_PLAIN static void tma_land(const emu_tma_op &op) {
#ifdef EMU_MEMSTAT
  tma_note(op);
#endif
  const emu_tmap &t = op.map;
  const unsigned n = box_bytes(t);
  for (unsigned c = op.dst / 16; c < (op.dst + n) / 16; ++c) {
    if (g_wg_readers[c])
      die("a TMA load lands on shared memory an in-flight wgmma reads (a stage released or "
          "refilled before the wgmma.wait_group that retires its wgmmas)");
    --g_tma_pending[c];
  }
  const unsigned rowb = t.box[0];
  for (unsigned r = 0; r < t.box[1]; ++r)
    for (unsigned x = 0; x < rowb; ++x) {
      const long long gx = (long long)op.k + x, gy = (long long)op.row + r;
      const bool in = gx >= 0 && gx < (long long)t.dim[0] && gy >= 0 && gy < (long long)t.dim[1];
      const unsigned char v = in ? t.addr[(uint64_t)gy * t.stride1 + (uint64_t)gx] : 0;
      unsigned o = r * rowb + x;
      if (t.swizzle == 3) o ^= ((o >> 7) & 7) << 4;
      else if (t.swizzle == 2) o ^= ((o >> 7) & 3) << 4;
      else if (t.swizzle == 1) o ^= ((o >> 7) & 1) << 4;
      g_smem[op.dst + o] = v;
    }
  mbar_complete_tx(op.bar, n);
}

static void emu_tma_load_2d(unsigned dst, const void *map, int k, int row, unsigned bar) {
  emu::yield();
#ifdef EMU_MEMSTAT
  emu_tma_op op{tmap_decode(map), dst, bar, k, row, EMU_SITE(), (int)threadIdx.x >> 5};
#else
  emu_tma_op op{tmap_decode(map), dst, bar, k, row, 0, 0};
#endif
  const emu_tmap &t = op.map;
  if (t.placeholder) die("TMA load through the placeholder map (Kpad = 0 must issue no load)");
  if (dst % 128) die("cp.async.bulk.tensor: shared destination not 128-byte aligned");
  const unsigned repeat[] = {128, 256, 512, 1024};
  if (dst % repeat[t.swizzle])
    die("cp.async.bulk.tensor: destination not aligned to its swizzle's repeat (128B swizzle: "
        "1024 bytes)");
  if (t.swizzle && t.box[0] != 16u << t.swizzle)
    die("not modelled: a swizzled box whose rows are narrower than the swizzle span");
  const unsigned n = box_bytes(t);
  chunk_range(dst, n, "cp.async.bulk.tensor destination");
  if (bar % 8) die("cp.async.bulk.tensor: mbarrier not 8-byte aligned");
  mbar_get(bar, true);
  for (unsigned c = dst / 16; c < (dst + n) / 16; ++c) {
    if (g_bar_mem[c]) die("a TMA box overlaps an mbarrier");
    if (g_tma_pending[c]) die("two TMA loads in flight into the same shared memory");
    ++g_tma_pending[c];
  }
  if (g_tma_early) {
    tma_land(op);
    return;
  }
  g_tma_q.push_back(op);
  if (g_engine_blocked) {
    g_engine_blocked = false;
    emu::wake(g_engine_tid);
    emu::reschedule();
  }
}
// The TMA unit (fiber g_engine_tid): lands the queued loads, oldest first under the first two
// schedules, in a random order otherwise; idles (blocked) while the queue is empty.
static void tma_engine() {
  for (;;) {
    if (!g_tma_q.empty()) {
      size_t i = g_emu_seed_shown >= 2 ? (size_t)(emu::rng() % g_tma_q.size()) : 0;
      const emu_tma_op op = g_tma_q[i];
      g_tma_q.erase(g_tma_q.begin() + (long)i);
      tma_land(op);
      emu::yield();
      continue;
    }
    if (g_kernel_live == 0) return;
    g_engine_blocked = true;
    emu::block("TMA unit idle (no load in flight)");
  }
}

// ---- setmaxnreg ------------------------------------------------------------------------------
static int g_pool, g_warp_regs[32], g_wg_setmax[8];
static std::vector<int> g_pool_waiters;
static void emu_setmaxnreg(int n, bool inc) {
  emu::yield();
  if (n < 24 || n > 256 || n % 8) die("setmaxnreg: count outside [24, 256] or not a multiple of 8");
  const int tid = (int)threadIdx.x, w = tid >> 5, g = tid >> 7;
  const int sig = inc ? n : -n;
  if (g_wg_setmax[g] == 0) g_wg_setmax[g] = sig;
  else if (g_wg_setmax[g] != sig) die("setmaxnreg differs between the warps of a warpgroup");
  if (tid & 31) return; // one accounting per warp
  const int delta = (n - g_warp_regs[w]) * 32;
  if (inc ? delta <= 0 : delta >= 0) die("setmaxnreg: .inc must raise, .dec must lower the count");
  while (inc && g_pool < delta) { // .inc waits until the pool holds enough (a deadlock if never)
    g_pool_waiters.push_back(tid);
    emu::block("setmaxnreg.inc (registers the CTA's pool does not hold)");
  }
  g_pool -= delta;
  g_warp_regs[w] = n;
  if (!inc) {
    for (int t : g_pool_waiters) emu::wake(t);
    g_pool_waiters.clear();
    emu::reschedule();
  }
}

// ---- wgmma -----------------------------------------------------------------------------------------
struct emu_wg_op {
  unsigned long long da, db;
  int n;
  int *d[128];
  bool done[4];   // warp retired it (its lanes' parts computed)
  bool computed[128];
  std::vector<unsigned> chunks; // 16-byte chunks it reads
  bool live;
};
static std::vector<emu_wg_op> g_ops;
struct emu_wg_stage { emu::barrier bar; unsigned long long da[128], db[128]; int *d[128]; long op; };
static std::vector<emu_wg_stage> g_wgs(3);
struct emu_thr {
  std::vector<std::pair<long, long>> ops; // (op, group; -1 = not committed)
  long group = 0;
  bool fenced = false;
};
static std::vector<emu_thr> g_thr; // per fiber

// Address of element (row r, K byte c < 32) of a K-major 128B-swizzle descriptor (layout type 1,
// base offset 0): rows of 128 bytes, 8-row groups SBO apart, address bits [7, 10) XORed into
// [4, 7). Other layouts stop the run.
EMU_PLAIN static unsigned desc_addr(unsigned long long desc, int r, int c) {
  unsigned start = (unsigned)(desc & 0x3FFF) << 4, sbo = (unsigned)((desc >> 32) & 0x3FFF) << 4;
  if ((desc >> 62) != 1) die("wgmma descriptor: only the 128-byte swizzle (layout type 1) is modelled");
  if ((desc >> 49) & 7) die("wgmma descriptor: base offset must be 0 here");
  if ((desc >> 14 & 3) || (desc >> 30 & 3) || (desc >> 46 & 7) || (desc >> 52 & 0x3FF))
    die("wgmma descriptor: reserved bits set");
  unsigned a = start + (unsigned)(r / 8) * sbo + (unsigned)(r % 8) * 128 + (unsigned)c;
  a ^= ((a >> 7) & 7) << 4;
  if ((size_t)a >= g_smem_bytes) die("wgmma operand outside shared memory");
  return a;
}
// The 32 bytes of row r of a descriptor's matrix (one 128-byte row: the swizzle's XOR is the
// same for all 32, since a K step starts 32-byte aligned inside its row).
EMU_PLAIN static void desc_row(unsigned long long desc, int r, signed char out[32]) {
  const unsigned a0 = desc_addr(desc, r, 0);
  for (int c = 0; c < 32; ++c) {
    const unsigned a = desc_addr(desc, r, c);
    if ((a & ~127u) != (a0 & ~127u)) die("wgmma K step crosses a 128-byte row (internal)");
    out[c] = (signed char)g_smem[a];
  }
}
// the lanes of warp wq (0..3) of op: accumulators += their rows of A . B^T, shared memory read now
EMU_PLAIN static void wg_warp(emu_wg_op &op, int wq) {
  static signed char Ar[16][32], Br[256][32];
  for (int r = 0; r < 16; ++r) desc_row(op.da, 16 * wq + r, Ar[r]);
  for (int r = 0; r < 2 * op.n; ++r) desc_row(op.db, r, Br[r]);
  for (int l = 32 * wq; l < 32 * wq + 32; ++l) {
    if (op.computed[l]) continue;
    op.computed[l] = true;
    const int lane = l & 31;
    for (int i = 0; i < op.n; ++i) {
      // register i of lane: row 16q + lane/4 + 8((i/2)%2), column 8(i/4) + 2(lane%4) + i%2
      const int row = lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4) + (i % 2);
      int s = 0;
      for (int k = 0; k < 32; ++k) s += (int)Ar[row][k] * (int)Br[col][k];
      op.d[l][i] = (int)((unsigned)op.d[l][i] + (unsigned)s); // .s32, no .satfinite: wraps
    }
  }
}
static void emu_wgmma_fence() { g_thr[threadIdx.x].fenced = true; }
#ifdef EMU_MEMSTAT
// The shared reads of one m64nNk32 through its descriptors (memstat::note_wgmma_reads).
EMU_PLAIN static void wg_note_reads(uintptr_t pc, int warp, unsigned long long da,
                                    unsigned long long db, int n) {
  memstat::note_wgmma_reads(pc, warp, da, db, n, [](unsigned long long d, int r, int c) {
    return (unsigned long long)desc_addr(d, r, c);
  });
}
#endif
static void emu_wgmma(int *d, int n, unsigned long long da, unsigned long long db) {
  const int tid = (int)threadIdx.x, l = tid & 127;
  if (!g_thr[tid].fenced) die("wgmma.mma_async without a wgmma.fence since the last wait_group");
  emu::yield();
  emu_wg_stage &w = g_wgs[tid >> 7];
  w.da[l] = da;
  w.db[l] = db;
  w.d[l] = d;
  if (w.bar.count + 1 == w.bar.live) { // the last of the warpgroup: the op is issued
    if (w.bar.live != 128) die("wgmma with an exited thread in the warpgroup");
    emu_wg_op op{};
    op.da = da;
    op.db = db;
    op.n = n;
    op.live = true;
    for (int i = 0; i < 128; ++i) {
      if (w.da[i] != da || w.db[i] != db) die("wgmma descriptors differ within the warpgroup");
      op.d[i] = w.d[i];
    }
#ifdef EMU_MEMSTAT
    wg_note_reads(EMU_SITE(), tid >> 5, da, db, n);
#endif
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 32; c += 16) op.chunks.push_back(desc_addr(da, r, c) / 16);
    for (int r = 0; r < 2 * n; ++r)
      for (int c = 0; c < 32; c += 16) op.chunks.push_back(desc_addr(db, r, c) / 16);
    for (unsigned c : op.chunks) {
      if (g_tma_pending[c])
        die("wgmma issued on shared memory whose TMA load has not landed (a full barrier passed "
            "too early)");
      if (g_bar_mem[c]) die("wgmma reads an mbarrier's bytes");
      ++g_wg_readers[c];
    }
    g_ops.push_back(op);
    w.op = (long)g_ops.size() - 1;
    if (!g_wg_late)
      for (int q = 0; q < 4; ++q) wg_warp(g_ops.back(), q);
  }
  w.bar.wait();
  g_thr[tid].ops.push_back({w.op, -1});
}
static void emu_wgmma_commit() {
  emu_thr &t = g_thr[threadIdx.x];
  for (auto &o : t.ops)
    if (o.second < 0) o.second = t.group;
  ++t.group;
}
// groups older than the n youngest retire, for the whole warp (wait_group is warp-synchronous)
static void emu_wgmma_wait(int n) {
  emu::yield();
  const int tid = (int)threadIdx.x, wq = (tid >> 5) & 3;
  emu_thr &t = g_thr[tid];
  t.fenced = false;
  std::vector<std::pair<long, long>> keep;
  for (auto &o : t.ops) {
    if (o.second < 0 || o.second >= t.group - n) {
      keep.push_back(o);
      continue;
    }
    emu_wg_op &op = g_ops[(size_t)o.first];
    if (op.done[wq]) continue;
    wg_warp(op, wq);
    op.done[wq] = true;
    if (op.done[0] && op.done[1] && op.done[2] && op.done[3]) {
      op.live = false;
      for (unsigned c : op.chunks) --g_wg_readers[c];
    }
  }
  t.ops.swap(keep);
}
static void thr_exit(int t) {
  if (t == g_engine_tid) return; // the TMA unit
  for (auto &o : g_thr[t].ops)
    if (!g_ops[(size_t)o.first].done[(t >> 5) & 3])
      die("a thread exits with wgmmas its warp never retired (no wgmma.wait_group 0)");
  g_block_bar.leave();
  g_wgs[t >> 7].bar.leave();
  if (--g_kernel_live == 0 && g_engine_blocked) {
    g_engine_blocked = false;
    emu::wake(g_engine_tid);
  }
}

// ---- the overflow flag (HOT_RANGE_CHECK, redirected by tools/gemm-emu/mkemu.py) ------------------
#include "../gemm-emu/range_edge.h"

// ---- the kernel, compiled from the template ------------------------------------------------------
#include "kernel.inc"
#include "../gemm-emu/seg_ref.h"

// ---- driver ------------------------------------------------------------------------------------
static unsigned rng_state = 12345;
static unsigned rnd() { rng_state = rng_state * 1664525u + 1013904223u; return rng_state >> 8; }

int main(int argc, char **argv) {
  int G = 1, sms = 3, npos = argc, edge = 0, edge_seg = 0; // edge: +1 over, -1 under
  for (int i = 1; i < argc; ++i)
    if (!std::strncmp(argv[i], "segs=", 5) || !std::strncmp(argv[i], "sms=", 4) ||
        !std::strncmp(argv[i], "over=", 5) || !std::strncmp(argv[i], "under=", 6)) {
      if (npos == argc) npos = i;
      if (argv[i][1] == 'e') G = std::atoi(argv[i] + 5);
      else if (argv[i][1] == 'm') sms = std::atoi(argv[i] + 4);
      else if (argv[i][0] == 'o') edge = 1, edge_seg = std::atoi(argv[i] + 5);
      else edge = -1, edge_seg = std::atoi(argv[i] + 6);
    } else if (npos != argc) {
      die("segs=G, sms=S, over=J and under=J must follow the positional arguments");
    }
  if (npos < 6)
    die("usage: tma_emu M N Kpad ldc use_row_scale [tma_early [wg_late]] [segs=G] [sms=S] "
        "[over=J | under=J]");
  const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), Kpad = std::atoi(argv[3]);
  const int ldc = std::atoi(argv[4]), use_rs = std::atoi(argv[5]);
  g_tma_early = npos > 6 && std::atoi(argv[6]) != 0;
  g_wg_late = npos > 7 ? std::atoi(argv[7]) != 0 : true;
  if (M < 1 || N < 1 || ldc < N || Kpad < 0 || sms < 1) die("need M, N >= 1, ldc >= N, Kpad >= 0, sms >= 1");
  if (Kpad % HOT_TILE_K) die("Kpad must be a multiple of HOT_TILE_K");
  if (G < 1 || Kpad % G || (Kpad / G) % HOT_TILE_K) die("segs=G: Kpad / G must be a multiple of 128");
  if (!HOT_SEGS && G != 1) die("segs=G > 1 needs a HOT_SEGS=1 build");
  if (HOT_SEGS && use_rs) die("a segmented GEMM has no row scale");
  if (edge && (Kpad < 1 || edge_seg < 0 || edge_seg >= G || (use_rs && edge_seg)))
    die("over=J / under=J need Kpad >= 1 and 0 <= J < G (J = 0 with a row scale)");
  const int seg_k = Kpad / G, seg_kpad = HOT_SEGS ? seg_k : -1;

  // operands exactly as large as the matrices, 16-byte aligned (any stray read is caught)
  const size_t asz = (size_t)M * Kpad, bsz = (size_t)N * Kpad;
  // (EMU_MEMSTAT: on 256-byte boundaries, as cudaMalloc and the runtime's workspace place them)
#ifdef EMU_MEMSTAT
  const size_t al = 256;
#else
  const size_t al = 16;
#endif
  signed char *Ad = (signed char *)std::aligned_alloc(al, (asz + 16 + al - 1) / al * al);
  signed char *Bd = (signed char *)std::aligned_alloc(al, (bsz + 16 + al - 1) / al * al);
  for (size_t i = 0; i < asz; ++i) Ad[i] = (signed char)((int)(rnd() % 255) - 127);
  for (size_t i = 0; i < bsz; ++i) Bd[i] = (signed char)((int)(rnd() % 255) - 127);
  const int m_edge = M / 2, n_edge = N - 1;
  if (edge) { // the largest product of every K step at (m*, n*): 127 * 127
    std::memset(Ad + (size_t)m_edge * Kpad, 127, (size_t)Kpad);
    std::memset(Bd + (size_t)n_edge * Kpad, 127, (size_t)Kpad);
  }
  alignas(16) static unsigned char dummy[16];
  g_buf_lo[0] = (const unsigned char *)Ad, g_buf_hi[0] = g_buf_lo[0] + asz;
  g_buf_lo[1] = (const unsigned char *)Bd, g_buf_hi[1] = g_buf_lo[1] + bsz;
  g_buf_lo[2] = dummy, g_buf_hi[2] = dummy + 16;
  std::vector<float> rs((size_t)M);
  for (auto &v : rs) v = (float)(rnd() % 1000 + 1) * 1.37e-4f;
  // scales as in tools/gemm-emu: HQ style (row scale, div 16) or HLA style (alpha_b, div 64);
  // per segment different magnitudes, plus one past the end that must never be used
  std::vector<float> s_a((size_t)G + 1), s_b((size_t)G + 1);
  for (int j = 0; j <= G; ++j) {
    s_a[(size_t)j] = 0.0123f * 1.7f * (float)(1 + 3 * j) / (float)(1 + (j % 2) * 5);
    s_b[(size_t)j] = 3.3e-3f * (j % 3 == 2 ? 37.0f : 1.0f) / (float)(1 + j);
  }
  const float *alpha_b = use_rs ? nullptr : s_b.data();
  const float alpha_div = use_rs ? 16.0f : 64.0f;

  // tensor maps, with the values the template names (HOT_TMA_*)
  static hot_tensor_map map_a, map_b;
  const uint32_t es1[2] = {1, 1};
  for (int w = 0; w < 2; ++w) {
    hot_tensor_map *mp = w ? &map_b : &map_a;
    const int rows = w ? N : M;
    std::string err;
    if (Kpad == 0) {
      const uint64_t gd[2] = {16, 1}, gs[1] = {16};
      const uint32_t bx[2] = {16, 1};
      err = emu_encode_tiled(mp, HOT_TMA_DTYPE, 2, dummy, gd, gs, bx, es1, HOT_TMA_INTERLEAVE, 0,
                             HOT_TMA_L2_PROMO, HOT_TMA_OOB_FILL, true);
    } else {
      const uint64_t gd[2] = {(uint64_t)Kpad, (uint64_t)rows}, gs[1] = {(uint64_t)Kpad};
      const uint32_t bx[2] = {HOT_TMA_BOX_K, (uint32_t)(w ? HOT_TILE_N : HOT_TILE_M)};
      err = emu_encode_tiled(mp, HOT_TMA_DTYPE, 2, w ? (void *)Bd : (void *)Ad, gd, gs, bx, es1,
                             HOT_TMA_INTERLEAVE, HOT_TMA_SWIZZLE, HOT_TMA_L2_PROMO,
                             HOT_TMA_OOB_FILL, false);
    }
    if (!err.empty()) die("cuTensorMapEncodeTiled (" + std::string(w ? "B" : "A") + "): " + err);
  }

  // the reference (CONTRACT 14): per segment the int32 sum modulo 2^32, v_j = (float)acc_j *
  // factor_j, C = v_0 then C = C + v_j in segment order
  const size_t MN = (size_t)M * (size_t)N;
  const std::vector<int> accs = seg_ref_sums(
      M, N, G, seg_k, [&](int m, int k) { return (int)Ad[(size_t)m * Kpad + k]; },
      [&](int n, int k) { return (int)Bd[(size_t)n * Kpad + k]; });
  std::vector<float> want(MN);
  // want from accs and the current scales; returns whether some output is not finite
  const auto reference = [&] {
    return seg_ref_out(accs, M, N, G, [&](int m, int j) {
      const float c = use_rs ? HOT_DIV(s_a[(size_t)j], 16.0f)
                             : HOT_DIV(HOT_MUL(s_a[(size_t)j], s_b[(size_t)j]), 64.0f);
      return use_rs ? HOT_MUL(rs[(size_t)m], c) : c;
    }, want);
  };
  if (edge) { // scale row m* (row scale) or segment J (s_a[J]) to the edge of fp32
    float &x = use_rs ? rs[(size_t)m_edge] : s_a[(size_t)edge_seg];
    float below, above;
    if (!range_edge(x, [&](float t) { x = t; return reference(); }, &below, &above))
      die("over / under: no fp32 edge found for the scale");
    x = edge > 0 ? above : below;
  }
  const unsigned want_flag = reference() ? 1u : 0u;

  const float NaNpat = std::nanf("7");
  const size_t csz = (size_t)(M - 1) * ldc + N + 64;
  std::vector<float> C(csz);
  const long tiles = (long)((M + HOT_TILE_M - 1) / HOT_TILE_M) * ((N + HOT_TILE_N - 1) / HOT_TILE_N);
  const long grid = tiles < sms ? tiles : sms;
  g_smem_bytes = HOT_SMEM_BYTES + EMU_SMEM_SKEW;
  g_what.assign(HOT_THREADS + 1, "");
  g_thr.assign(HOT_THREADS + 1, emu_thr());
  g_engine_tid = HOT_THREADS;
  const std::function<void()> kernel = [&] {
    if ((int)threadIdx.x == HOT_THREADS) {
      tma_engine();
      return;
    }
    HOT_KNAME(Ad, Bd, C.data(), use_rs ? rs.data() : nullptr, s_a.data(), alpha_b, alpha_div, M,
              N, Kpad, ldc, seg_kpad, map_a, map_b);
  };
  const std::vector<uint64_t> seeds = emu::seeds_from_env("0 1 2 3");
  int rc = 0;
  for (uint64_t seed : seeds) {
    emu::set_seed(seed);
    g_range_flag = 0;
    std::fill(C.begin(), C.end(), NaNpat);
    gridDim = {(unsigned)grid, 1, 1};
#ifdef EMU_MEMSTAT // counted under the first schedule only (the addresses do not depend on it)
    if (seed == seeds[0]) memstat::launch_begin(HOT_STR(HOT_KNAME));
#endif
    for (long b : emu::block_order(grid)) {
      g_smem.assign(g_smem_bytes, 0xCD); // stale garbage, like real shared memory
#ifdef EMU_MEMSTAT
      memstat::set_shared_window(g_smem.data(), g_smem_bytes);
#endif
      g_tma_pending.assign(g_smem_bytes / 16 + 1, 0);
      g_wg_readers.assign(g_smem_bytes / 16 + 1, 0);
      g_bar_mem.assign(g_smem_bytes / 16 + 1, 0);
      g_mbar.clear();
      g_tma_q.clear();
      g_ops.clear();
      g_engine_blocked = false;
      g_kernel_live = HOT_THREADS;
      g_bar_base = ((emu_smem_u32(emu_smem()) + 1023u) & ~1023u) + HOT_STAGES * HOT_STAGE_BYTES;
      int launch = (65536 / HOT_THREADS) & ~7;
      if (launch > 248) launch = 248;
      g_pool = 0;
      g_pool_waiters.clear();
      for (int w = 0; w < 32; ++w) g_warp_regs[w] = launch;
      for (int g = 0; g < 8; ++g) g_wg_setmax[g] = 0;
      g_block_bar.init(HOT_THREADS, "__syncthreads");
      for (int g = 0; g < HOT_THREADS / 128; ++g) g_wgs[(size_t)g].bar.init(128, "wgmma (warpgroup)");
      for (auto &t : g_thr) t = emu_thr();
      blockIdx = {(unsigned)b, 0, 0};
      emu::run_block(HOT_THREADS + 1, kernel, thr_exit);
#ifdef EMU_MEMSTAT
      memstat::block_end();
#endif
      if (!g_tma_q.empty()) die("TMA loads still in flight when the block ended");
      for (auto &kv : g_mbar)
        if (kv.second.pending != kv.second.count || kv.second.tx != 0)
          die("mbarrier " + bar_name(kv.first) + " left mid-phase at the end of the block (" +
              std::to_string(kv.second.count - kv.second.pending) + " of " +
              std::to_string(kv.second.count) + " arrivals, tx " + std::to_string(kv.second.tx) +
              "): unmatched arrivals or transaction bytes");
    }
#ifdef EMU_MEMSTAT
    memstat::launch_end();
#endif
    long bad = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        const float w = want[(size_t)m * N + n], got = C[(size_t)m * ldc + n];
        if (std::memcmp(&w, &got, 4) != 0 && bad++ < 5)
          std::printf("  mismatch C[%d,%d]: got %.9g want %.9g\n", m, n, got, w);
      }
    // the overflow flag: raised exactly when some output is not finite (CONTRACT 19)
    if (g_range_flag != want_flag && bad++ < 5)
      std::printf("  overflow flag %u, want %u (%s)\n", g_range_flag, want_flag,
                  want_flag ? "an output is not finite" : "every output is finite");
    for (size_t i = 0; i < csz; ++i) {
      const long m = (long)(i / (size_t)ldc), n = (long)(i % (size_t)ldc);
      if (!(m < M && n < N) && std::memcmp(&C[i], &NaNpat, 4) != 0 && bad++ < 5)
        std::printf("  write outside C's window at m=%ld n=%ld\n", m, n);
    }
    char segs_txt[64] = "";
    if (HOT_SEGS) std::snprintf(segs_txt, sizeof segs_txt, " segs=%d", G);
    if (edge)
      std::snprintf(segs_txt + std::strlen(segs_txt), sizeof segs_txt - std::strlen(segs_txt),
                    " %s=%d", edge > 0 ? "over" : "under", edge_seg);
    std::printf("%s M=%d N=%d Kpad=%d ldc=%d rs=%d%s grid=%ld/%ld tma=%s wgmma=%s schedule %llu "
                "(%s): %s, trace %016llx\n",
                HOT_STR(HOT_KNAME), M, N, Kpad, ldc, use_rs, segs_txt, grid, tiles,
                g_tma_early ? "early" : "unit", g_wg_late ? "late" : "early",
                (unsigned long long)seed, emu::policy_name(), bad ? "FAIL" : "ok",
                (unsigned long long)emu::trace());
    std::fflush(stdout);
    if (bad) rc = 1;
  }
  std::free(Ad);
  std::free(Bd);
  return rc;
}

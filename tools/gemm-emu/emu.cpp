// emu.cpp — a small SIMT emulator that runs templates/gemm_int.cu (or, with EMU_WGMMA,
// templates/gemm_wgmma.cu) on the CPU, every CUDA thread a fiber of the deterministic scheduler
// of tools/kernel-emu/emu_sched.h, with the warp-collective PTX instructions (ldmatrix,
// mma.sync; wgmma.mma_async with shared-memory descriptors, its fence / commit / wait,
// fence.proxy.async) and the cp.async pipeline implemented from the PTX ISA definitions,
// independently of the kernel's own reasoning. It checks the kernel's index arithmetic (loader,
// swizzle, fragment bookkeeping, pipeline order, predicates, epilogue) against a plain reference
// GEMM, bit for bit, once per schedule seed of EMU_SEEDS (default "0 1 2 3"). Built with
// HOT_SEGS=1 it runs the segmented GEMM (HLA scale groups) against CONTRACT.md 14's formula:
// per segment j an int32 sum acc_j, v_j = (float)acc_j * c_j with c_j = (s_g^[j] * s_x^[j]) / p,
// C = v_0, then C = C + v_j in segment order, every step one fp32 rounding.
//
// What it cannot check: that the PTX definitions encoded here (ldmatrix lane mapping, mma
// fragment layouts; wgmma descriptors, swizzle and accumulator layout) match the hardware; they
// are written from PTX ISA 9.7.14.5.x, 9.7.14.5.15 and 9.7.15, the same sections the kernels
// cite, so a GPU run remains the final word. Nor what the CUDA compiler may reorder: the
// emulated wrappers are calls, so e.g. gemm_wgmma.cu's register fence after wgmma.wait_group
// (which keeps nvcc from reading the accumulators before the wait) makes no difference here.
//
// Usage: emu M N Kpad ldc use_row_scale [cp_late [wg_late]] [segs=G] [over=J | under=J]
// segs=G (HOT_SEGS=1 builds only, default 1): G segments of Kpad / G codes (seg_kpad, a multiple
// of HOT_TILE_K; use_row_scale must be 0). HOT_SEGS=0 builds pass seg_kpad = -1, which the
// kernel must not read.
// The overflow flag (CONTRACT 19, range_edge.h): every run compares the kernel's flag with "some
// output is not finite". over=J / under=J make row m* = M / 2 of A and row n* = N - 1 of B all
// codes +max, so output (m*, n*) has the largest |acc| of its row and of the matrix, then scale
// it to the edge of fp32: with a row scale (J = 0) row m*'s scale, else s_a[J] (segment J's
// scale); over = the smallest scale for which some output is not finite (flag expected),
// under = the float below it (every output finite, at most FLT_MAX: no flag).
// cp.async: cp_late = 1 (default) performs each group's copies only when a wait_group retires it
// (exposes a wait that is too weak: a stage read before its data landed); cp_late = 0 copies at
// issue (exposes a prefetch that overwrites a stage other warps may still read, under the
// schedules that let the issuing warp run ahead). wgmma (EMU_WGMMA builds): wg_late = 1
// (default: as cp_late) computes each thread's part of a wgmma when a wait_group retires it
// (shared memory read then, accumulators written then), 0 at issue. tools/gemm-emu.sh runs
// copies late with wgmma early (a stage read before its data landed), copies early with wgmma
// late (a stage overwritten while a wgmma may still read it; accumulators read before the
// wait), and both late.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "emu_sched.h"
#include "memstat.h"
// EMU_MEMSTAT builds (tools/memstat.sh, -O0 -fsanitize=thread): the site of an emulated PTX
// instruction is the return address of its wrapper (frame 1 of the emulator function).
#ifdef EMU_MEMSTAT
#define EMU_SITE() ((uintptr_t)__builtin_return_address(1))
#define EMU_PLAIN __attribute__((no_sanitize_thread)) // the emulator's own work: not counted
#else
#define EMU_PLAIN
#endif
#ifdef EMU_MEMSTAT
#define EMU_VEC_ALIGN(n) alignas(n)
#else
#define EMU_VEC_ALIGN(n)
#endif

// ---- CUDA spellings on the host -------------------------------------------------------------
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n)
#define __restrict__ __restrict
#define __shared__
struct EMU_VEC_ALIGN(8) float2 {
  float x, y;
#ifdef EMU_MEMSTAT
  float2(float a, float b) : x(a), y(b) {}
  EMU_VEC_COPY(float2)
#endif
};
static inline float2 make_float2(float a, float b) { return float2{a, b}; }

#define HOT_STR2(x) #x
#define HOT_STR(x) HOT_STR2(x)

static bool g_cp_late = true; // cp.async completes at wait_group (else at issue)
static bool g_wg_late = true; // wgmma computes at wait_group (else at issue)

static void die(const char *m) { emu_fatal(m); }

// ---- the emulated block ------------------------------------------------------------------------
static std::vector<unsigned char> g_smem;
static size_t g_smem_bytes;
static emu::barrier g_block_bar;
// A warp collective completes when its 32nd lane arrives: that lane computes every lane's
// result (the inputs all deposited), then all continue. One buffer suffices: the next
// collective completes only after every lane has arrived at it, i.e. has read this one's result.
enum { COLL_LDMATRIX2 = 1, COLL_LDMATRIX4, COLL_MMA };
struct emu_warp {
  emu::barrier bar;
  int kind[32];
  unsigned addr[32];
  unsigned a[32][4], b[32][2];
  int c[32][4];
  unsigned out[32][4];
};
static std::vector<emu_warp> g_warps(8);
static const unsigned char *g_lo[2], *g_hi[2]; // the operand buffers (A, B): legal cp.async sources

// The dynamic window starts EMU_SMEM_SKEW bytes into the emulated shared space, so a kernel that
// needs a stronger alignment than the window's (gemm_wgmma.cu: 1024) must align it itself.
#ifndef EMU_SMEM_SKEW
#define EMU_SMEM_SKEW 0
#endif
static unsigned char *emu_smem() { return g_smem.data() + EMU_SMEM_SKEW; }
static unsigned emu_smem_u32(const void *p) {
  const unsigned char *q = (const unsigned char *)p;
  if (q < g_smem.data() || q > g_smem.data() + g_smem_bytes) die("cvta of a non-shared pointer");
  return (unsigned)(q - g_smem.data());
}
static void __syncthreads() {
  emu::yield();
  g_block_bar.wait();
}
// Arrival of this lane at a collective of `kind`; the last lane checks that all lanes are at
// the same collective and runs complete(w).
static void emu_collective(emu_warp &w, int kind, void (*complete)(emu_warp &)) {
  w.kind[threadIdx.x & 31] = kind;
  if (w.bar.count + 1 == w.bar.live) {
    if (w.bar.live != 32) die("warp collective with an exited lane");
    for (int l = 0; l < 32; ++l)
      if (w.kind[l] != kind) die("lanes of a warp at different collectives (divergence)");
    complete(w);
  }
  w.bar.wait();
}

// cp.async: per-thread queue of (group, dst, src, bytes)
struct emu_copy { long group; unsigned dst; const unsigned char *src; int bytes; };
#ifdef EMU_WGMMA
struct emu_wg_op { long group; unsigned long long da, db; int *d; int n; };
#endif
// Per CUDA thread state of the asynchronous operations (indexed by threadIdx.x).
struct emu_thr {
  std::vector<emu_copy> copies; // issued, not yet landed
  long group = 0;               // cp.async commit groups so far
#ifdef EMU_WGMMA
  std::vector<emu_wg_op> wg_ops;  // issued, not yet retired
  long wg_group = 0;              // wgmma commit groups so far
  bool wg_fenced = false;
  std::vector<unsigned> unfenced; // chunks this thread wrote, not yet fenced
#endif
};
static std::vector<emu_thr> g_thr(1024);
static emu_thr &me() { return g_thr[threadIdx.x]; }

#ifdef EMU_WGMMA
static void emu_mark_written(unsigned dst);
#endif
EMU_PLAIN static void do_copy(const emu_copy &c) {
  if (c.dst % 16 || (size_t)c.dst + 16 > g_smem_bytes) die("cp.async destination outside smem");
  if ((uintptr_t)c.src % 16) die("cp.async source not 16-byte aligned");
  bool in = false;
  for (int i = 0; i < 2; ++i) in |= c.src >= g_lo[i] && c.src + 16 <= g_hi[i];
  if (!in) die("cp.async source address outside the operands (even with src-size 0)");
  for (int i = 0; i < 16; ++i) g_smem[c.dst + i] = i < c.bytes ? c.src[i] : 0;
#ifdef EMU_WGMMA
  emu_mark_written(c.dst);
#endif
}
static void emu_cp_async16(unsigned dst, const void *src, int bytes) {
  if (bytes != 0 && bytes != 16) die("cp.async src-size must be 0 or 16 here");
#ifdef EMU_MEMSTAT
  memstat::note(EMU_SITE(), memstat::S_SHARED, memstat::K_CP_ASYNC, dst, 16, (int)threadIdx.x);
  if (bytes) // src-size 0 reads nothing
    memstat::note(EMU_SITE(), memstat::S_GLOBAL, memstat::K_CP_ASYNC,
                  (unsigned long long)(uintptr_t)src, 16, (int)threadIdx.x);
#endif
  emu::yield();
  emu_copy c{me().group, dst, (const unsigned char *)src, bytes};
  if (g_cp_late) me().copies.push_back(c);
  else do_copy(c);
}
static void emu_cp_commit() { ++me().group; }
static void emu_cp_wait(int n) { // groups older than the n youngest committed ones complete
  emu::yield();
  emu_thr &t = me();
  std::vector<emu_copy> keep;
  for (const emu_copy &c : t.copies)
    if (c.group < t.group - n) do_copy(c);
    else keep.push_back(c);
  t.copies.swap(keep);
}

// ldmatrix.sync.aligned.m8n8.{x2,x4}.shared.b16 (PTX ISA 9.7.14.5.15): lanes 8j..8j+7 hold the
// row addresses of matrix j (rows of 8 b16 = 16 bytes); lane l receives, of matrix j, row l/4,
// b16 elements 2*(l%4) and 2*(l%4)+1, i.e. bytes 4*(l%4) .. 4*(l%4)+3 of that row.
EMU_PLAIN static void ldmatrix_complete(emu_warp &w) {
  const int num = w.kind[0] == COLL_LDMATRIX4 ? 4 : 2;
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < num; ++j) {
      unsigned ra = w.addr[8 * j + lane / 4];
      if (ra % 16 || (size_t)ra + 16 > g_smem_bytes) die("ldmatrix row address invalid");
      std::memcpy(&w.out[lane][j], &g_smem[ra + 4 * (lane % 4)], 4);
    }
}
static void emu_ldmatrix(unsigned addr, int num, unsigned *r0, unsigned *r1, unsigned *r2,
                         unsigned *r3) {
  int tid = (int)threadIdx.x, lane = tid & 31;
  emu::yield();
  emu_warp &w = g_warps[tid >> 5];
#ifdef EMU_MEMSTAT
  if (lane < 8 * num) // the lanes that give row addresses
    memstat::note(EMU_SITE(), memstat::S_SHARED, memstat::K_LDMATRIX, addr, 16, tid);
#endif
  w.addr[lane] = addr;
  emu_collective(w, num == 4 ? COLL_LDMATRIX4 : COLL_LDMATRIX2, ldmatrix_complete);
  unsigned *out[4] = {r0, r1, r2, r3};
  for (int j = 0; j < num; ++j) *out[j] = w.out[lane][j];
}

// mma.sync.aligned.{m16n8k32 .s8, m16n8k64 .s4}.row.col.s32 (PTX ISA 9.7.14.5.x), element-wise
// definitions of the fragment layouts, groupID g = lane >> 2, threadID_in_group t = lane % 4.
// Scatter the warp's A and B fragments into full matrices (each element must be covered once).
EMU_PLAIN static void gather_ab(const unsigned (*a)[4], const unsigned (*b)[2], int (*Am)[64], int (*Bm)[8]) {
  int cov_a[16][64] = {}, cov_b[64][8] = {};
  for (int l = 0; l < 32; ++l) {
    int g = l >> 2, t = l & 3;
#if HOT_CODES
    for (int i = 0; i < 32; ++i) { // m16n8k64 .s4: A element a_i = nibble i%8 of register i/8
      int r = (i < 8 || (i >= 16 && i < 24)) ? g : g + 8;
      int c = t * 8 + (i & 7) + (i >= 16 ? 32 : 0);
      int nib = (int)((a[l][i / 8] >> (4 * (i % 8))) & 0xf);
      Am[r][c] = nib >= 8 ? nib - 16 : nib;
      ++cov_a[r][c];
    }
    for (int i = 0; i < 16; ++i) { // B element b_i: row (k) t*8 + (i&7) (+32 for i >= 8), col g
      int r = t * 8 + (i & 7) + (i >= 8 ? 32 : 0);
      int nib = (int)((b[l][i / 8] >> (4 * (i % 8))) & 0xf);
      Bm[r][g] = nib >= 8 ? nib - 16 : nib;
      ++cov_b[r][g];
    }
#else
    for (int i = 0; i < 16; ++i) { // m16n8k32 .s8: a_i = byte i%4 of register i/4
      int r = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
      int c = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
      Am[r][c] = (int)(signed char)((a[l][i / 4] >> (8 * (i % 4))) & 0xff);
      ++cov_a[r][c];
    }
    for (int i = 0; i < 8; ++i) { // b_i: row (k) t*4 + (i&3) (+16 for i >= 4), col g
      int r = t * 4 + (i & 3) + (i >= 4 ? 16 : 0);
      Bm[r][g] = (int)(signed char)((b[l][i / 4] >> (8 * (i % 4))) & 0xff);
      ++cov_b[r][g];
    }
#endif
  }
  const int K = HOT_CODES ? 64 : 32;
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < K; ++k)
      if (cov_a[r][k] != 1) die("A fragment layout does not cover the matrix once");
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < 8; ++n)
      if (cov_b[k][n] != 1) die("B fragment layout does not cover the matrix once");
}
EMU_PLAIN static void mma_complete(emu_warp &w) {
  const int K = HOT_CODES ? 64 : 32;
  static int Am[16][64], Bm[64][8];
  gather_ab(w.a, w.b, Am, Bm);
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) { // C/D: row g (+8 for i >= 2), col 2t + (i & 1)
      int r = g + (i >= 2 ? 8 : 0), c = 2 * t + (i & 1);
      int s = w.c[lane][i];
      for (int k = 0; k < K; ++k) s += Am[r][k] * Bm[k][c];
      w.out[lane][i] = (unsigned)s;
    }
  }
}
static void emu_mma(int *d, const unsigned *a, const unsigned *b) {
  int tid = (int)threadIdx.x, lane = tid & 31;
  emu::yield();
  emu_warp &w = g_warps[tid >> 5];
  for (int i = 0; i < 4; ++i) w.a[lane][i] = a[i], w.c[lane][i] = d[i];
  for (int i = 0; i < 2; ++i) w.b[lane][i] = b[i];
  emu_collective(w, COLL_MMA, mma_complete);
  for (int i = 0; i < 4; ++i) d[i] = (int)w.out[lane][i];
}

#ifdef EMU_WGMMA
// ---- wgmma (PTX ISA 9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate") -------
// Proxy rule: shared memory written through the generic proxy (cp.async, stores) must be
// ordered before a wgmma reads it by fence.proxy.async in the writing thread. Each 16-byte chunk
// a copy lands in is marked "unfenced" until its writer fences; a wgmma reading a marked chunk
// fails the run.
static std::vector<unsigned char> g_unfenced; // per 16-byte chunk of g_smem
// A copy lands in the thread that issued it (do_copy runs in the issuing fiber).
static void emu_mark_written(unsigned dst) {
  g_unfenced[dst / 16] = 1;
  me().unfenced.push_back(dst / 16);
}
static void emu_fence_proxy_async() {
  emu::yield();
  for (unsigned c : me().unfenced) g_unfenced[c] = 0;
  me().unfenced.clear();
}

struct emu_wg {
  emu::barrier bar;
  unsigned long long da[128], db[128];
};
static std::vector<emu_wg> g_wgs(2);

// Byte address of element (row r, K byte c < 32) of the matrix a descriptor describes: only the
// layout this project uses is modelled — K-major, 128-byte swizzle (layout type 1), base offset
// 0: rows of 128 bytes, 8-row groups SBO apart, then the swizzle on the address bits (bits
// [7, 10) XORed into [4, 7)). Anything else stops the run.
EMU_PLAIN static unsigned desc_addr_of(unsigned long long desc, int r, int c) {
  unsigned start = (unsigned)(desc & 0x3FFF) << 4;
  unsigned sbo = (unsigned)((desc >> 32) & 0x3FFF) << 4;
  unsigned base_off = (unsigned)((desc >> 49) & 7);
  unsigned type = (unsigned)(desc >> 62);
  if (type != 1) die("wgmma descriptor: only the 128-byte swizzle (layout type 1) is modelled");
  if (base_off != 0) die("wgmma descriptor: base offset must be 0 here");
  if ((desc >> 14 & 3) || (desc >> 30 & 3) || (desc >> 46 & 7) || (desc >> 52 & 0x3FF))
    die("wgmma descriptor: reserved bits set");
  unsigned a = start + (unsigned)(r / 8) * sbo + (unsigned)(r % 8) * 128 + (unsigned)c;
  a ^= ((a >> 7) & 7) << 4;
  if ((size_t)a >= g_smem_bytes) die("wgmma operand outside shared memory");
  return a;
}
// The same, for a read now: the bytes must have been fenced since written.
EMU_PLAIN static unsigned desc_addr(unsigned long long desc, int r, int c) {
  const unsigned a = desc_addr_of(desc, r, c);
  if (g_unfenced[a / 16])
    die("wgmma reads shared memory written after its writer's last fence.proxy.async (a missing "
        "fence, or a stage overwritten while a wgmma may still read it)");
  return a;
}

// This thread's part of one m64nNk32 .s32.s8.s8 (D += A . B^T): register i of lane l in warp q
// of the warpgroup is row 16q + l/4 + 8((i/2)%2), column 8(i/4) + 2(l%4) + i%2.
EMU_PLAIN static void wg_compute(const emu_wg_op &op) {
  int tid = (int)threadIdx.x, lane = tid & 31, q = (tid >> 5) & 3;
  for (int i = 0; i < op.n; ++i) {
    int row = 16 * q + lane / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (lane % 4) + (i % 2);
    int s = 0;
    for (int k = 0; k < 32; ++k)
      s += (int)(signed char)g_smem[desc_addr(op.da, row, k)] *
           (int)(signed char)g_smem[desc_addr(op.db, col, k)];
    op.d[i] = (int)((unsigned)op.d[i] + (unsigned)s); // .s32 without .satfinite: wraps
  }
}

static void emu_wgmma_fence() { me().wg_fenced = true; }

#ifdef EMU_MEMSTAT
// The shared reads of one m64nNk32 through its descriptors (memstat::note_wgmma_reads).
EMU_PLAIN static void wg_note_reads(uintptr_t pc, int warp, unsigned long long da,
                                    unsigned long long db, int n) {
  memstat::note_wgmma_reads(pc, warp, da, db, n, [](unsigned long long d, int r, int c) {
    return (unsigned long long)desc_addr_of(d, r, c);
  });
}
#endif

// The warpgroup's 128 threads meet (the last to arrive checks that all gave the same
// descriptors); each then computes its own part, at issue or at the wait_group retiring it.
static void emu_wgmma(int *d, int n, unsigned long long da, unsigned long long db) {
  int tid = (int)threadIdx.x;
  if (!me().wg_fenced) die("wgmma.mma_async before any wgmma.fence");
  emu::yield();
  emu_wg &w = g_wgs[tid >> 7];
  w.da[tid & 127] = da;
  w.db[tid & 127] = db;
  if (w.bar.count + 1 == w.bar.live) {
    if (w.bar.live != 128) die("wgmma with an exited thread in the warpgroup");
    for (int i = 0; i < 128; ++i)
      if (w.da[i] != da || w.db[i] != db) die("wgmma descriptors differ within the warpgroup");
#ifdef EMU_MEMSTAT
    wg_note_reads(EMU_SITE(), tid >> 5, da, db, n);
#endif
  }
  w.bar.wait();
  emu_wg_op op{-1, da, db, d, n};
  if (g_wg_late) me().wg_ops.push_back(op);
  else wg_compute(op);
}
static void emu_wgmma_commit() {
  emu_thr &t = me();
  for (emu_wg_op &o : t.wg_ops)
    if (o.group < 0) o.group = t.wg_group;
  ++t.wg_group;
}
static void emu_wgmma_wait(int n) { // groups older than the n youngest committed ones retire
  emu::yield();
  emu_thr &t = me();
  std::vector<emu_wg_op> keep;
  for (const emu_wg_op &o : t.wg_ops)
    if (o.group >= 0 && o.group < t.wg_group - n) wg_compute(o);
    else keep.push_back(o);
  t.wg_ops.swap(keep);
}
#endif

// ---- the overflow flag (HOT_RANGE_CHECK, redirected by mkemu.py) -------------------------------
#include "range_edge.h"

// ---- the kernel, compiled from the template ------------------------------------------------
#include "kernel.inc"
#include "seg_ref.h"

// ---- driver ------------------------------------------------------------------------------------
static unsigned rng_state = 12345;
static unsigned rnd() { rng_state = rng_state * 1664525u + 1013904223u; return rng_state >> 8; }

static int code_at(const signed char *row, int k) {
#if HOT_CODES
  int byte = (unsigned char)row[k / 2];
  int nib = k % 2 ? byte >> 4 : byte & 0xf;
  return nib >= 8 ? nib - 16 : nib;
#else
  return row[k];
#endif
}

int main(int argc, char **argv) {
  // positional arguments, then named ones (segs=G, over=J, under=J)
  int G = 1, npos = argc, edge = 0, edge_seg = 0; // edge: +1 over, -1 under
  for (int i = 1; i < argc; ++i) {
    const bool o = std::strncmp(argv[i], "over=", 5) == 0, u = std::strncmp(argv[i], "under=", 6) == 0;
    if (std::strncmp(argv[i], "segs=", 5) == 0) G = std::atoi(argv[i] + 5);
    else if (o || u) edge = o ? 1 : -1, edge_seg = std::atoi(argv[i] + (o ? 5 : 6));
    else if (npos != argc) die("segs=G, over=J, under=J must follow the positional arguments");
    else continue;
    if (npos == argc) npos = i;
  }
  if (npos < 6)
    die("usage: emu M N Kpad ldc use_row_scale [cp_late [wg_late]] [segs=G] [over=J | under=J]");
  int M = std::atoi(argv[1]), N = std::atoi(argv[2]), Kpad = std::atoi(argv[3]);
  int ldc = std::atoi(argv[4]), use_rs = std::atoi(argv[5]);
  g_cp_late = npos > 6 ? std::atoi(argv[6]) != 0 : true;
  g_wg_late = npos > 7 ? std::atoi(argv[7]) != 0 : g_cp_late;
  if (Kpad % HOT_TILE_K) die("Kpad must be a multiple of HOT_TILE_K");
  if (G < 1 || Kpad % G || (Kpad / G) % HOT_TILE_K)
    die("segs=G: Kpad / G must be a multiple of HOT_TILE_K");
  if (!HOT_SEGS && G != 1) die("segs=G > 1 needs a HOT_SEGS=1 build");
  if (HOT_SEGS && use_rs) die("a segmented GEMM has no row scale (use_row_scale must be 0)");
  if (edge && (M < 1 || N < 1 || Kpad < 1 || edge_seg < 0 || edge_seg >= G || (use_rs && edge_seg)))
    die("over=J / under=J need M, N, Kpad >= 1 and 0 <= J < G (J = 0 with a row scale)");
  const int seg_k = Kpad / G;                  // codes per segment
  const int seg_kpad = HOT_SEGS ? seg_k : -1;  // HOT_SEGS = 0 must ignore it
  long pitch = HOT_CODES ? Kpad / 2 : Kpad;
  // operands exactly as large as the matrices (no slack), so any stray read is caught
  std::vector<signed char> A((size_t)M * pitch + 1), B((size_t)N * pitch + 1); // +1: non-empty
  for (auto &v : A) v = (signed char)(HOT_CODES ? rnd() & 0xff : (int)(rnd() % 255) - 127);
  for (auto &v : B) v = (signed char)(HOT_CODES ? rnd() & 0xff : (int)(rnd() % 255) - 127);
  const int m_edge = M / 2, n_edge = N - 1;
  if (edge) { // the largest product of every K step at (m*, n*): +max times +max
    const signed char top = HOT_CODES ? (signed char)0x77 : (signed char)127;
    std::memset(&A[(size_t)m_edge * pitch], top, (size_t)pitch);
    std::memset(&B[(size_t)n_edge * pitch], top, (size_t)pitch);
  }
  // 16-byte aligned copies (EMU_MEMSTAT: 256, as cudaMalloc and the runtime's workspace place
  // the operands, so that the counted sectors are not an artifact of the host allocator)
#ifdef EMU_MEMSTAT
  const size_t oal = 256;
#else
  const size_t oal = 16;
#endif
  size_t asz = (size_t)M * pitch, bsz = (size_t)N * pitch;
  signed char *Ad = (signed char *)std::aligned_alloc(oal, (asz + oal) / oal * oal);
  signed char *Bd = (signed char *)std::aligned_alloc(oal, (bsz + oal) / oal * oal);
  std::memcpy(Ad, A.data(), asz);
  std::memcpy(Bd, B.data(), bsz);
  g_lo[0] = (const unsigned char *)Ad; g_hi[0] = g_lo[0] + asz;
  g_lo[1] = (const unsigned char *)Bd; g_hi[1] = g_lo[1] + bsz;
  std::vector<float> rs(M);
  for (auto &v : rs) v = (float)(rnd() % 1000 + 1) * 1.37e-4f;
  // epilogue constant from device words (CONTRACT 14): HQ style (row scale, alpha_b = NULL,
  // div = b = 16) when use_rs, HLA style (no row scale, alpha_b = s_x, div = p = 64) otherwise;
  // segmented: G scales of each operand, of different magnitudes (so that a wrong scale or a
  // wrong order of the fp32 additions changes bits), plus one more past the end, never to be used
  std::vector<float> s_a(G + 1), s_b(G + 1);
  for (int j = 0; j <= G; ++j) {
    s_a[j] = 0.0123f * 1.7f * (float)(1 + 3 * j) / (float)(1 + (j % 2) * 5);
    s_b[j] = 3.3e-3f * (j % 3 == 2 ? 37.0f : 1.0f) / (float)(1 + j);
  }
  const float *alpha_b = use_rs ? nullptr : s_b.data();
  float alpha_div = use_rs ? 16.0f : 64.0f;
  // the twins' formulas (gemm_ref.c), not the kernel's: c_w = s_w / b; c_j = (s_g[j] * s_x[j]) / p
  std::vector<float> cj(G);
  const auto set_cj = [&] {
    for (int j = 0; j < G; ++j)
      cj[j] = use_rs ? HOT_DIV(s_a[j], 16.0f) : HOT_DIV(HOT_MUL(s_a[j], s_b[j]), 64.0f);
  };
  set_cj();
  const float NaNpat = std::nanf("7");
  size_t csz = (size_t)(M ? (M - 1) : 0) * ldc + N + 64;
  std::vector<float> C(csz);
  const std::vector<uint64_t> seeds = emu::seeds_from_env("0 1 2 3");

  g_smem_bytes = HOT_SMEM_BYTES + EMU_SMEM_SKEW;
  g_smem.assign(g_smem_bytes, 0xCD);
  const int gx = (N + HOT_TILE_N - 1) / HOT_TILE_N, gy = (M + HOT_TILE_M - 1) / HOT_TILE_M;
  // the kernel as every fiber runs it
  const std::function<void()> kernel = [&] {
    HOT_KNAME(Ad, Bd, C.data(), use_rs ? rs.data() : nullptr, s_a.data(), alpha_b, alpha_div, M,
              N, Kpad, ldc, seg_kpad);
  };
  // the reference, once (CONTRACT 14): per segment j the int32 sum (modulo 2^32) over its codes,
  // v_j = (float)acc_j * factor_j; C = v_0, then C = C + v_j for j = 1 .. G-1 in segment order
  const size_t MN = (size_t)M * (size_t)N;
  const std::vector<int> accs = seg_ref_sums(
      M, N, G, seg_k, [&](int m, int k) { return code_at(Ad + (size_t)m * pitch, k); },
      [&](int n, int k) { return code_at(Bd + (size_t)n * pitch, k); });
  std::vector<float> want(MN);
  // want from accs and the current scales; returns whether some output is not finite
  const auto reference = [&] {
    return seg_ref_out(accs, M, N, G, [&](int m, int j) {
      return use_rs ? HOT_MUL(rs[m], cj[j]) : cj[j];
    }, want);
  };
  if (edge) { // scale row m* (row scale) or segment J (s_a[J]) to the edge of fp32
    float &x = use_rs ? rs[m_edge] : s_a[edge_seg];
    float below, above;
    const bool ok = range_edge(x, [&](float t) {
      x = t;
      set_cj();
      return reference();
    }, &below, &above);
    if (!ok) die("over / under: no fp32 edge found for the scale");
    x = edge > 0 ? above : below;
    set_cj();
  }
  const unsigned want_flag = reference() ? 1u : 0u;
  const int *wacc = &accs[(size_t)(G - 1) * MN]; // the last segment's sums (for the messages)
#ifdef EMU_WGMMA
  const char *wgm = g_wg_late ? " wgmma=late" : " wgmma=early";
#else
  const char *wgm = "";
#endif
  char segs_txt[64] = "";
  if (HOT_SEGS) std::snprintf(segs_txt, sizeof segs_txt, " segs=%d", G);
  if (edge)
    std::snprintf(segs_txt + std::strlen(segs_txt), sizeof segs_txt - std::strlen(segs_txt),
                  " %s=%d", edge > 0 ? "over" : "under", edge_seg);
  int rc = 0;
  for (uint64_t seed : seeds) {
    emu::set_seed(seed);
#ifdef EMU_MEMSTAT // counted under the first schedule only (the addresses do not depend on it)
    memstat::set_shared_window(g_smem.data(), g_smem_bytes);
    if (seed == seeds[0]) memstat::launch_begin(HOT_STR(HOT_KNAME));
#endif
    std::fill(C.begin(), C.end(), NaNpat);
    g_range_flag = 0;
    for (long b : emu::block_order((long)gx * gy)) {
      const int bx = (int)(b % gx), by = (int)(b / gx);
      std::fill(g_smem.begin(), g_smem.end(), 0xCD); // stale garbage, like real smem
#ifdef EMU_WGMMA
      g_unfenced.assign(g_smem_bytes / 16 + 1, 0);
      for (int w = 0; w < HOT_THREADS / 128; ++w) g_wgs[w].bar.init(128, "wgmma (warpgroup)");
#endif
      g_block_bar.init(HOT_THREADS, "__syncthreads");
      for (int w = 0; w < HOT_THREADS / 32; ++w) g_warps[w].bar.init(32, "warp collective");
      for (int t = 0; t < HOT_THREADS; ++t) g_thr[t] = emu_thr();
      blockIdx = {(unsigned)bx, (unsigned)by, 0};
      emu::run_block(HOT_THREADS, kernel, [](int t) {
        if (!g_thr[t].copies.empty()) die("cp.async copies still pending at exit");
#ifdef EMU_WGMMA
        if (!g_thr[t].wg_ops.empty()) die("wgmma operations not retired by a wait_group at exit");
        g_wgs[t >> 7].bar.leave();
#endif
        g_block_bar.leave();
        g_warps[t >> 5].bar.leave();
      });
#ifdef EMU_MEMSTAT
      memstat::block_end();
#endif
    }
#ifdef EMU_MEMSTAT
    memstat::launch_end();
#endif

    long bad = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float w = want[(size_t)m * N + n], got = C[(size_t)m * ldc + n];
        if (std::memcmp(&w, &got, 4) != 0 && bad++ < 5)
          std::printf("  mismatch C[%d,%d]: got %.9g want %.9g (%s %d)\n", m, n, got, w,
                      HOT_SEGS ? "last segment's acc" : "acc",
                      wacc[(size_t)m * N + n]);
      }
    // the overflow flag: raised exactly when some output is not finite (CONTRACT 19)
    if (g_range_flag != want_flag && bad++ < 5)
      std::printf("  overflow flag %u, want %u (%s)\n", g_range_flag, want_flag,
                  want_flag ? "an output is not finite" : "every output is finite");
    // nothing outside the M x N window of C may be written
    for (size_t i = 0; i < csz; ++i) {
      long m = (long)(i / ldc), n = (long)(i % ldc);
      bool inside = m < M && n < N;
      if (!inside && std::memcmp(&C[i], &NaNpat, 4) != 0 && bad++ < 5)
        std::printf("  write outside C's window at m=%ld n=%ld\n", m, n);
    }
    std::printf("%s M=%d N=%d Kpad=%d ldc=%d rs=%d%s cp=%s%s schedule %llu (%s): %s, "
                "trace %016llx\n",
                HOT_STR(HOT_KNAME), M, N, Kpad, ldc, use_rs, segs_txt,
                g_cp_late ? "late" : "early", wgm,
                (unsigned long long)seed, emu::policy_name(), bad ? "FAIL" : "ok",
                (unsigned long long)emu::trace());
    std::fflush(stdout);
    if (bad) rc = 1;
  }
  std::free(Ad);
  std::free(Bd);
  return rc;
}

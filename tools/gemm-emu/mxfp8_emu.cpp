// mxfp8_emu.cpp — runs templates/gemm_mxfp8.cu (the MXFP8 block-scaled g_w GEMM for sm_120a) on
// the CPU: every CUDA thread a fiber of the deterministic scheduler of tools/kernel-emu/emu_sched.h,
// once per schedule seed of EMU_SEEDS, blocks in a seeded order; the one PTX instruction, the
// block-scaled mma.sync of kind::mxf8f6f4, is implemented here from its definition (PTX ISA
// 9.7.14.3 and the m16n8k32 fragment layouts of 8-bit types), independently of the kernel. The
// result is compared bit for bit with the twin, mxfp8_gemm of templates/nvfp4_ref.c (linked in,
// not re-implemented), on the twin's own layout (k_pad = K rounded up to 32) while the kernel
// gets K padded to its tile, or (pad "block") the twin's buffers themselves with Kpad = the
// twin's k_pad, which need not be a multiple of the tile: the kernel's last K tile then reaches
// past Kpad, and the memory past each operand's end is filled with nonzero codes and scales (and
// is legal to read), so a kernel that loads past Kpad instead of writing zeros gets wrong bits.
//
// The MMA model (what "the block-scaled MMA's definition" means here, CONTRACT.md 20.10):
//   A 16x32 and B 32x8 E4M3 values from the fragments (byte i of a register = K element 4t + i of
//   its half); SF_A[m] = byte 0 of the scale word of lane 4 * (m % 8) + m / 8 (selector
//   {byte 0, thread 0}: lanes with t in {0, 1}), SF_B[n] = byte 0 of lane 4 * n's word (t = 0);
//   every element read must not be an E4M3 NaN (0x7F, 0xFF) and every scale read not the E8M0
//   NaN (0xFF); the other bytes of a scale word are not read. Per output, S = the exact sum of
//   the 32 products (an integer in units of 2^-18, |S| < 2^41), P = the fp32 rounding (nearest
//   even) of S, scaled by 2^(SF_A + SF_B - 254 - 18) (ldexpf: exact unless the result is
//   subnormal or overflows), d = fp32(c + P): the block product rounded once, then one rounding
//   of the addition.
// Every A and B element and every read scale is checked to come from exactly one lane and
// register (the layouts cover the operands once).
//
// The overflow flag: nvfp4-emu.sh turns the kernel's HOT_RANGE_CHECK(v) into emu_range_check(v)
// (range_edge.h); after every run the flag must equal "some output of the twin is not finite".
// Mode "overflowing" (scales 2^53 .. 2^78) makes many outputs overflow fp32 from finite inputs; the
// other modes' outputs are finite, so there the flag must stay clear.
//
// What it cannot check: that the hardware rounds the block product to fp32 before adding it
// (the PTX ISA does not say; CONTRACT.md 20.10), or that these layouts are the hardware's (the
// layout test compares them with CuTe's SM120 traits; a GPU run is the final word).
//
// Usage: mxfp8_emu M N K ldc [div [pad]]  (div: a power of two, default 64; pad: "tile", the
//                                          default, or "block")
//        mxfp8_emu --layout           (the fragment and scale maps against CuTe's; see layout_check)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "cute_layout.h"
#include "emu_sched.h"

extern "C" {
#include "nvfp4_ref.h"
}

// ---- CUDA spellings on the host -------------------------------------------------------------
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n)
#define __restrict__ __restrict
#define __shared__ static
struct uint4 {
  unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
static const unsigned char *g_lo[4], *g_hi[4]; // the operand buffers: legal global sources
static void check_src(const void *p, int bytes) {
  const unsigned char *q = (const unsigned char *)p;
  if ((uintptr_t)q % (uintptr_t)bytes) emu_fatal("global load not aligned to its size");
  for (int i = 0; i < 4; ++i)
    if (q >= g_lo[i] && q + bytes <= g_hi[i]) return;
  emu_fatal("global load outside the operands");
}
static inline uint4 __ldg(const uint4 *p) {
  check_src(p, 16);
  emu::yield();
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
}
static inline unsigned char __ldg(const unsigned char *p) {
  check_src(p, 1);
  emu::yield();
  return *p;
}

static emu::barrier g_block_bar;
static void __syncthreads() {
  emu::yield();
  g_block_bar.wait();
}

// ---- the block-scaled mma.sync, a warp collective -------------------------------------------
struct emu_warp {
  emu::barrier bar;
  unsigned a[32][4], b[32][2], sfa[32], sfb[32];
  float c[32][4], out[32][4];
};
static std::vector<emu_warp> g_warps(8);

// E4M3 code to its value in units of 2^-9 (an integer, |.| <= 448 * 512); NaN codes are fatal.
static int64_t e4m3_units(unsigned code) {
  if ((code & 0x7Fu) == 0x7Fu) emu_fatal("E4M3 NaN code read by the MMA");
  const unsigned e = (code >> 3) & 15u, man = code & 7u;
  const int64_t mag = e == 0 ? (int64_t)man : (int64_t)(8u + man) << (e - 1u);
  return (code & 0x80u) ? -mag : mag;
}
static int ue8m0(unsigned code) {
  if (code == 0xFFu) emu_fatal("ue8m0 scale NaN (0xFF)");
  return (int)code;
}

// The instruction's fragment maps, the one copy the model and the layout check (--layout) use;
// g = lane >> 2, t = lane & 3. Element i of A (byte i % 4 of register i / 4) is (m, k):
static void a_elem(int lane, int i, int *m, int *k) {
  *m = (lane >> 2) + ((i / 4) & 1) * 8;
  *k = 4 * (lane & 3) + (i & 3) + (i >= 8 ? 16 : 0);
}
// element i of B (byte i % 4 of register i / 4) is (k, n):
static void b_elem(int lane, int i, int *k, int *n) {
  *k = 4 * (lane & 3) + (i & 3) + (i >= 4 ? 16 : 0);
  *n = lane >> 2;
}
// the row of A whose scale byte 0 of lane's word is (-1: the hardware reads none of this lane's
// word, selector thread-id-a 0); likewise the column of B
static int sfa_row(int lane) { return (lane & 3) < 2 ? (lane >> 2) + 8 * (lane & 3) : -1; }
static int sfb_col(int lane) { return (lane & 3) == 0 ? lane >> 2 : -1; }
// accumulator i of lane is (m, n):
static void c_elem(int lane, int i, int *m, int *n) {
  *m = (lane >> 2) + (i >= 2 ? 8 : 0);
  *n = 2 * (lane & 3) + (i & 1);
}

static void mma_mx_complete(emu_warp &w) {
  int64_t Am[16][32], Bm[32][8];
  int SA[16], SB[8];
  int cov_a[16][32] = {}, cov_b[32][8] = {}, cov_sa[16] = {}, cov_sb[8] = {};
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 16; ++i) {
      int r, k;
      a_elem(l, i, &r, &k);
      Am[r][k] = e4m3_units((w.a[l][i / 4] >> (8 * (i % 4))) & 0xFFu);
      ++cov_a[r][k];
    }
    for (int i = 0; i < 8; ++i) {
      int k, n;
      b_elem(l, i, &k, &n);
      Bm[k][n] = e4m3_units((w.b[l][i / 4] >> (8 * (i % 4))) & 0xFFu);
      ++cov_b[k][n];
    }
    const int ra = sfa_row(l), cb = sfb_col(l);
    if (ra >= 0) SA[ra] = ue8m0(w.sfa[l] & 0xFFu), ++cov_sa[ra];
    if (cb >= 0) SB[cb] = ue8m0(w.sfb[l] & 0xFFu), ++cov_sb[cb];
  }
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 32; ++k)
      if (cov_a[r][k] != 1) emu_fatal("A fragment layout does not cover the matrix once");
  for (int k = 0; k < 32; ++k)
    for (int n = 0; n < 8; ++n)
      if (cov_b[k][n] != 1) emu_fatal("B fragment layout does not cover the matrix once");
  for (int r = 0; r < 16; ++r)
    if (cov_sa[r] != 1) emu_fatal("SF_A does not cover the rows once");
  for (int n = 0; n < 8; ++n)
    if (cov_sb[n] != 1) emu_fatal("SF_B does not cover the columns once");
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      int r, c;
      c_elem(l, i, &r, &c);
      int64_t S = 0; // exact: |S| < 32 * 229376^2 < 2^41
      for (int k = 0; k < 32; ++k) S += Am[r][k] * Bm[k][c];
      volatile float sf = (float)S; // the block sum rounded once (nearest even)
      volatile float p = ldexpf(sf, SA[r] + SB[c] - 254 - 18);
      w.out[l][i] = w.c[l][i] + p; // one fp32 rounding of the addition
    }
}

static void emu_mma_mx(float *d, const unsigned *a, const unsigned *b, unsigned sfa, unsigned sfb) {
  const int tid = (int)threadIdx.x, lane = tid & 31;
  emu::yield();
  emu_warp &w = g_warps[(size_t)(tid >> 5)];
  for (int i = 0; i < 4; ++i) w.a[lane][i] = a[i], w.c[lane][i] = d[i];
  for (int i = 0; i < 2; ++i) w.b[lane][i] = b[i];
  w.sfa[lane] = sfa;
  w.sfb[lane] = sfb;
  if (w.bar.count + 1 == w.bar.live) {
    if (w.bar.live != 32) emu_fatal("warp collective with an exited lane");
    mma_mx_complete(w);
  }
  w.bar.wait();
  for (int i = 0; i < 4; ++i) d[i] = w.out[lane][i];
}

#include "range_edge.h"

#include "kernel_mxfp8.inc"

// ---- --layout: the maps above against CuTe's SM120 block-scaled MMA traits ------------------
// CUTLASS include/cute/atom/mma_traits_sm120.hpp, MMA_Traits<SM120::BLOCKSCALED::
// SM120_16x8x32_TN_VS<...>> (the m16n8k32 atom of kind::mxf8f6f4 with scale_vec::1X, VS = 32):
// A, B and C are those of its underlying MMA_Traits<SM80_16x8x32_S32S8S8S32_TN>
// (mma_traits_sm80.hpp, C = SM80_16x8_Row), SFA / SFB its own; each a CuTe layout (T32, V) ->
// index, the index column-major in the operand ((M16,K32): m + 16k; (N8,K32): n + 8k; (M16,N8):
// m + 16n). They are written here as their shapes and strides, evaluated the CuTe way (a flat
// coordinate split colexicographically over a mode's shape, dotted with its strides).
static const cute_layout k_cute_a = {"ALayout (T32,V16)->(M16,K32)", {2, {4, 8}, {64, 1}}, {3, {4, 2, 2}, {16, 8, 256}}};
static const cute_layout k_cute_b = {"BLayout (T32,V8)->(N8,K32)", {2, {4, 8}, {32, 1}}, {2, {4, 2}, {8, 128}}};
static const cute_layout k_cute_sfa = {"SFALayout (T32,V32)->(M16,K32)", {3, {2, 2, 8}, {8, 0, 1}}, {1, {32}, {16}}};
static const cute_layout k_cute_sfb = {"SFBLayout (T32,V32)->(N8,K32)", {2, {4, 8}, {0, 1}}, {1, {32}, {8}}};
static const cute_layout k_cute_c = {"SM80_16x8_Row (T32,V4)->(M16,N8)", {2, {4, 8}, {32, 1}}, {2, {2, 2}, {16, 8}}};

// The scale byte each lane of the kernel loads (templates/gemm_mxfp8.cu: every lane loads one,
// read or not): A row g + 8 * (t & 1), B column g.
static int kernel_sfa_row(int lane) { return (lane >> 2) + 8 * (lane & 1); }
static int kernel_sfb_col(int lane) { return lane >> 2; }

static int layout_check() {
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 16; ++i) { // A: value i of CuTe = byte i % 4 of register i / 4
      int m, k, x = cute_at(k_cute_a, l, i);
      a_elem(l, i, &m, &k);
      layout_expect(k_cute_a.name, l, i, m, k, x % 16, x / 16);
    }
    for (int i = 0; i < 8; ++i) {
      int k, n, x = cute_at(k_cute_b, l, i);
      b_elem(l, i, &k, &n);
      layout_expect(k_cute_b.name, l, i, n, k, x % 8, x / 8);
    }
    for (int v = 0; v < 32; ++v) { // scales: value v is K element v, all of the one block (VS 32)
      int x = cute_at(k_cute_sfa, l, v);
      layout_expect("SFALayout (kernel's loaded row, block)", l, v, kernel_sfa_row(l), v / 32,
                    x % 16, (x / 16) / 32);
      if (sfa_row(l) >= 0)
        layout_expect("SFALayout (model's read row, block)", l, v, sfa_row(l), v / 32, x % 16,
                      (x / 16) / 32);
      x = cute_at(k_cute_sfb, l, v);
      layout_expect("SFBLayout (kernel's loaded column, block)", l, v, kernel_sfb_col(l), v / 32,
                    x % 8, (x / 8) / 32);
      if (sfb_col(l) >= 0)
        layout_expect("SFBLayout (model's read column, block)", l, v, sfb_col(l), v / 32, x % 8,
                      (x / 8) / 32);
    }
    for (int i = 0; i < 4; ++i) {
      int m, n, x = cute_at(k_cute_c, l, i);
      c_elem(l, i, &m, &n);
      layout_expect(k_cute_c.name, l, i, m, n, x % 16, x / 16);
    }
  }
  // the scale lanes the model reads are one per row / column (the stride-0 modes of CuTe's
  // SFA / SFB layouts: lanes 4g + 2, 4g + 3 repeat 4g, 4g + 1; lanes 4g + 1..3 repeat 4g)
  int rows = 0, cols = 0;
  for (int l = 0; l < 32; ++l) rows += sfa_row(l) >= 0, cols += sfb_col(l) >= 0;
  if (rows != 16 || cols != 8) {
    std::printf("  the model reads %d SF_A bytes (16 rows) and %d SF_B bytes (8 columns)\n", rows, cols);
    ++g_layout_bad;
  }
  std::printf("mxfp8 layout: A, B, SF_A, SF_B and C of the m16n8k32 block-scaled MMA against CuTe's "
              "SM120 traits: %s\n", g_layout_bad ? "FAIL" : "ok");
  return g_layout_bad ? 1 : 0;
}

static unsigned g_rng = 54321;
static unsigned rnd() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

// An operand as the twin lays it out (rows x kp codes, kp = K rounded up to 32). mode 0: random
// codes (every E4M3 code but the NaNs) in the first K, zeros after, scales 2^-27 .. 2^27 around
// 127; mode 1: the twin's own quantiser on random fp32 data (RTN; realistic scales and signs);
// mode 2: random codes with scales near 2^-85 (biased 30 .. 55), so that block products land in
// fp32's subnormal range or underflow (the twin's ldexpf rounds there a second time); mode 3:
// random codes with scales 2^53 .. 2^78 (biased 180 .. 205), so that most block products, and so
// the outputs, overflow fp32 (+-inf, NaN where infinities of both signs meet).
static void make_operand(int mode, int rows, int K, int kp, std::vector<uint8_t> &codes,
                         std::vector<uint8_t> &scales) {
  codes.assign((size_t)rows * kp, 0);
  scales.assign((size_t)rows * kp / 32, 0);
  if (mode == 1) {
    std::vector<float> v((size_t)rows * K);
    for (float &x : v) x = ((float)(int)(rnd() & 0xFFFF) - 32768.0f) * (1.0f + (float)(rnd() % 97));
    if (mxfp8_quantize(v.data(), rows, K, 0, nullptr, codes.data(), scales.data()) != 0)
      emu_fatal("mxfp8_quantize failed");
    return;
  }
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < K; ++k) {
      unsigned c;
      do c = rnd() & 0xFFu; while ((c & 0x7Fu) == 0x7Fu);
      codes[(size_t)r * kp + k] = (uint8_t)c;
    }
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < (K + 31) / 32; ++j)
      scales[(size_t)r * kp / 32 + j] =
          (uint8_t)(mode == 0   ? 100u + rnd() % 55u
                    : mode == 2 ? 30u + rnd() % 26u
                                : 180u + rnd() % 26u);
}

// The same operand with rows of `to` bytes (kernel layout; zeros past `from`).
static void repitch(const std::vector<uint8_t> &src, int rows, int from, int to,
                    std::vector<uint8_t> &dst) {
  dst.assign((size_t)rows * to, 0);
  for (int r = 0; r < rows; ++r) std::memcpy(&dst[(size_t)r * to], &src[(size_t)r * from], (size_t)from);
}

static const char *const k_mode_name[4] = {"raw codes", "quantised", "subnormal products",
                                           "overflowing"};

// Appends the bytes past an operand's end: `zeros` zero bytes (the tile padding's slack, never
// read), or (block padding) `tail` nonzero bytes the kernel may legally address but must not
// use: codes random non-NaN E4M3 (code = true), scales 2^0 .. 2^15 (biased 127 .. 142).
static void add_tail(std::vector<uint8_t> &v, bool block, size_t zeros, size_t tail, bool code) {
  if (!block) {
    v.resize(v.size() + zeros);
    return;
  }
  for (size_t i = 0; i < tail; ++i) {
    unsigned c;
    if (code)
      do c = rnd() & 0xFFu; while ((c & 0x7Fu) == 0x7Fu || c == 0u);
    else
      c = 127u + rnd() % 16u;
    v.push_back((uint8_t)c);
  }
}

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--layout") == 0) return layout_check();
  if (argc < 5) {
    std::fprintf(stderr, "usage: mxfp8_emu M N K ldc [div [tile|block]] | mxfp8_emu --layout\n");
    return 2;
  }
  const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]);
  const int ldc = std::atoi(argv[4]), div = argc > 5 ? std::atoi(argv[5]) : 64;
  const char *pad = argc > 6 ? argv[6] : "tile";
  if (std::strcmp(pad, "tile") != 0 && std::strcmp(pad, "block") != 0) {
    std::fprintf(stderr, "mxfp8_emu: pad '%s' is neither tile nor block\n", pad);
    return 2;
  }
  const bool block = pad[0] == 'b';
  const int kp = (K + 31) / 32 * 32;
  const int Kpad = block ? kp : (K + HOT_TILE_K - 1) / HOT_TILE_K * HOT_TILE_K;
  long bad = 0;
  for (int mode = 0; mode < 4; ++mode) {
    std::vector<uint8_t> a, sa, b, sb, ka, ksa, kb, ksb;
    make_operand(mode, M, K, kp, a, sa);
    make_operand(mode, N, K, kp, b, sb);
    std::vector<float> want((size_t)M * N);
    if (mxfp8_gemm(a.data(), sa.data(), b.data(), sb.data(), M, N, kp, div, want.data()))
      emu_fatal("mxfp8_gemm failed");
    long subnormal = 0;
    for (float x : want) subnormal += x != 0.0f && std::fabs(x) < 1.17549435e-38f;
    long overflow = 0;
    for (float x : want) overflow += !std::isfinite(x);
    const unsigned want_flag = overflow ? 1u : 0u;
    repitch(a, M, kp, Kpad, ka);
    repitch(sa, M, kp / 32, Kpad / 32, ksa);
    repitch(b, N, kp, Kpad, kb);
    repitch(sb, N, kp / 32, Kpad / 32, ksb);
    // never empty, even for M = 0 or Kpad = 0; with block padding, the last row's last K tile
    // reaches up to HOT_TILE_K - 32 code bytes and HOT_TILE_K / 32 - 1 scale bytes past the end
    add_tail(ka, block, 16, HOT_TILE_K, true);
    add_tail(kb, block, 16, HOT_TILE_K, true);
    add_tail(ksa, block, 4, HOT_TILE_K / 32, false);
    add_tail(ksb, block, 4, HOT_TILE_K / 32, false);
    const std::vector<uint8_t> *ops[4] = {&ka, &ksa, &kb, &ksb};
    for (int i = 0; i < 4; ++i) g_lo[i] = ops[i]->data(), g_hi[i] = ops[i]->data() + ops[i]->size();
    std::vector<float> C((size_t)(M > 0 ? M : 1) * ldc + 1);
    const int gx = (N + HOT_TILE_N - 1) / HOT_TILE_N, gy = (M + HOT_TILE_M - 1) / HOT_TILE_M;
    const std::function<void()> kernel = [&] {
      HOT_KNAME(ka.data(), ksa.data(), kb.data(), ksb.data(), div, C.data(), M, N, Kpad, ldc);
    };
    for (uint64_t seed : emu::seeds_from_env("0 1 2 3")) {
      emu::set_seed(seed);
      std::fill(C.begin(), C.end(), -7.0f);
      g_range_flag = 0;
      for (long blk : emu::block_order((long)gx * gy)) {
        blockIdx = {(unsigned)(blk % gx), (unsigned)(blk / gx), 0};
        g_block_bar.init(HOT_THREADS, "__syncthreads");
        for (int w = 0; w < HOT_THREADS / 32; ++w) g_warps[(size_t)w].bar.init(32, "mma.sync");
        emu::run_block(HOT_THREADS, kernel, [](int t) {
          g_block_bar.leave();
          g_warps[(size_t)(t >> 5)].bar.leave();
        });
      }
      long bad1 = 0;
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < ldc; ++n) {
          const float got = C[(size_t)m * ldc + n];
          if (n >= N) {
            if (got != -7.0f && bad1++ < 5) std::printf("  wrote C[%d][%d] past N\n", m, n);
            continue;
          }
          if (std::memcmp(&got, &want[(size_t)m * N + n], 4) != 0 && bad1++ < 5)
            std::printf("  mismatch C[%d][%d]: got %.9g want %.9g\n", m, n, got,
                        want[(size_t)m * N + n]);
        }
      if (C[(size_t)(M > 0 ? M : 1) * ldc] != -7.0f) { std::printf("  wrote past C\n"); ++bad1; }
      if (g_range_flag != want_flag && bad1++ < 5)
        std::printf("  overflow flag %u, want %u (%ld outputs not finite)\n", g_range_flag,
                    want_flag, overflow);
      std::printf("mxfp8 %dx%dx%d_w%dx%d M=%d N=%d K=%d (Kpad %d%s, twin k_pad %d) ldc=%d div=%d %s "
                  "(%ld subnormal outputs, %ld not finite, flag %u) schedule %llu (%s): %s, "
                  "trace %016llx\n",
                  HOT_TILE_M, HOT_TILE_N, HOT_TILE_K, HOT_WARPS_M, HOT_WARPS_N, M, N, K, Kpad,
                  block ? " = the twin's buffers, nonzero bytes past them" : "", kp, ldc, div,
                  k_mode_name[mode], subnormal, overflow, g_range_flag, (unsigned long long)seed,
                  emu::policy_name(), bad1 ? "FAIL" : "ok", (unsigned long long)emu::trace());
      std::fflush(stdout);
      bad += bad1;
    }
  }
  return bad ? 1 : 0;
}

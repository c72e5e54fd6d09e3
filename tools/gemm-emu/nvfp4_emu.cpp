// nvfp4_emu.cpp — runs templates/gemm_nvfp4.cu (the NVFP4 block-scaled GEMM for sm_120a) on the
// CPU: every CUDA thread a fiber of the deterministic scheduler of tools/kernel-emu/emu_sched.h,
// once per schedule seed of EMU_SEEDS, blocks in a seeded order; the one PTX instruction, the
// block-scaled mma.sync, is implemented here from its definition (PTX ISA 9.7.14.3 and the
// m16n8k64 fragment layouts), independently of the kernel. The result is compared bit for bit
// with the twin, nvfp4_gemm of templates/nvfp4_ref.c (linked in, not re-implemented), on the
// twin's own layout (k_pad = K rounded up to 16) while the kernel gets K padded to its tile.
//
// The MMA model (what "the block-scaled MMA's definition" means here, CONTRACT.md 20.9):
//   A 16x64 and B 64x8 E2M1 values from the fragments; SF_A[m][i] = byte i of the scale word of
//   lane 4 * (m % 8) + m / 8 (selector thread-id 0: lanes with t in {0, 1}), SF_B[i][n] = byte i
//   of lane 4 * n's word (t = 0); every scale byte read must be a ue4m3 code (bit 7 clear, not
//   0x7F); d = c, then for block i = 0..3 in K order d = fp32(d + P_i) with
//   P_i = sum over the 16 k of block i of A[m][k] * B[k][n] * SF_A[m][i] * SF_B[i][n], exact.
// Every A and B element and every read scale is checked to come from exactly one lane and
// register (the layouts cover the operands once).
//
// The overflow flag: nvfp4-emu.sh turns the kernel's HOT_RANGE_CHECK(v) into emu_range_check(v)
// (range_edge.h); after every run the flag must equal "some output of the twin is not finite".
// Mode "overflowing" (raw codes with tensor scales of 2^63) makes many outputs overflow fp32 from
// finite inputs; the other modes' outputs are finite, so there the flag must stay clear.
//
// What it cannot check: that the hardware accumulates in that order with fp32 rounding (the PTX
// ISA does not say; CONTRACT.md 20.9), or that these layouts are the hardware's (the layout test
// compares them with CuTe's SM120 traits; a GPU run is the final word).
//
// Usage: nvfp4_emu M N K ldc [div]    (div: a power of two, default 16)
//        nvfp4_emu --layout           (the fragment and scale maps against CuTe's; see layout_check)
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
static inline unsigned __ldg(const unsigned *p) {
  check_src(p, 4);
  emu::yield();
  unsigned v;
  std::memcpy(&v, p, 4);
  return v;
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

static float e2m1(unsigned code) {
  static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8u) ? -mag[code & 7u] : mag[code & 7u];
}
static float ue4m3(unsigned code) {
  if (code & 0x80u) emu_fatal("ue4m3 scale with bit 7 set");
  if (code == 0x7Fu) emu_fatal("ue4m3 scale NaN (0x7F)");
  return nvfp4_e4m3_decode(code);
}

// The instruction's fragment maps, the one copy the model and the layout check (--layout) use;
// g = lane >> 2, t = lane & 3. Element i of A (nibble i % 8 of register i / 8) is (m, k):
static void a_elem(int lane, int i, int *m, int *k) {
  *m = (lane >> 2) + ((i / 8) & 1) * 8;
  *k = 8 * (lane & 3) + (i & 7) + (i >= 16 ? 32 : 0);
}
// element i of B (nibble i % 8 of register i / 8) is (k, n):
static void b_elem(int lane, int i, int *k, int *n) {
  *k = 8 * (lane & 3) + (i & 7) + (i >= 8 ? 32 : 0);
  *n = lane >> 2;
}
// the row of A whose scales lane holds (-1: the hardware reads none of this lane's word, selector
// thread-id-a 0), byte j of the word being block j of the K step; likewise the column of B
static int sfa_row(int lane) { return (lane & 3) < 2 ? (lane >> 2) + 8 * (lane & 3) : -1; }
static int sfb_col(int lane) { return (lane & 3) == 0 ? lane >> 2 : -1; }
// accumulator i of lane is (m, n):
static void c_elem(int lane, int i, int *m, int *n) {
  *m = (lane >> 2) + (i >= 2 ? 8 : 0);
  *n = 2 * (lane & 3) + (i & 1);
}

static void mma_bs_complete(emu_warp &w) {
  float Am[16][64], Bm[64][8], SA[16][4], SB[4][8];
  int cov_a[16][64] = {}, cov_b[64][8] = {}, cov_sa[16] = {}, cov_sb[8] = {};
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 32; ++i) {
      int r, k;
      a_elem(l, i, &r, &k);
      Am[r][k] = e2m1((w.a[l][i / 8] >> (4 * (i % 8))) & 15u);
      ++cov_a[r][k];
    }
    for (int i = 0; i < 16; ++i) {
      int k, n;
      b_elem(l, i, &k, &n);
      Bm[k][n] = e2m1((w.b[l][i / 8] >> (4 * (i % 8))) & 15u);
      ++cov_b[k][n];
    }
    const int ra = sfa_row(l), cb = sfb_col(l);
    if (ra >= 0) {
      for (int i = 0; i < 4; ++i) SA[ra][i] = ue4m3((w.sfa[l] >> (8 * i)) & 0xFFu);
      ++cov_sa[ra];
    }
    if (cb >= 0) {
      for (int i = 0; i < 4; ++i) SB[i][cb] = ue4m3((w.sfb[l] >> (8 * i)) & 0xFFu);
      ++cov_sb[cb];
    }
  }
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 64; ++k)
      if (cov_a[r][k] != 1) emu_fatal("A fragment layout does not cover the matrix once");
  for (int k = 0; k < 64; ++k)
    for (int n = 0; n < 8; ++n)
      if (cov_b[k][n] != 1) emu_fatal("B fragment layout does not cover the matrix once");
  for (int r = 0; r < 16; ++r)
    if (cov_sa[r] != 1) emu_fatal("SF_A does not cover the rows once");
  for (int n = 0; n < 8; ++n)
    if (cov_sb[n] != 1) emu_fatal("SF_B does not cover the columns once");
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 4; ++i) {
      int r, c;
      c_elem(l, i, &r, &c);
      float d = w.c[l][i];
      for (int blk = 0; blk < 4; ++blk) {
        double p = 0.0; // exact: 16 products of quarter-integers
        for (int k = 16 * blk; k < 16 * blk + 16; ++k) p += (double)Am[r][k] * (double)Bm[k][c];
        p *= (double)SA[r][blk] * (double)SB[blk][c]; // exact: <= 20 significant bits
        if ((double)(float)p != p) emu_fatal("block product not exact in fp32");
        volatile float pf = (float)p;
        d = d + pf; // one fp32 rounding per block, in K order
      }
      w.out[l][i] = d;
    }
  }
}

static void emu_mma_bs(float *d, const unsigned *a, const unsigned *b, unsigned sfa, unsigned sfb) {
  const int tid = (int)threadIdx.x, lane = tid & 31;
  emu::yield();
  emu_warp &w = g_warps[(size_t)(tid >> 5)];
  for (int i = 0; i < 4; ++i) w.a[lane][i] = a[i], w.c[lane][i] = d[i];
  for (int i = 0; i < 2; ++i) w.b[lane][i] = b[i];
  w.sfa[lane] = sfa;
  w.sfb[lane] = sfb;
  if (w.bar.count + 1 == w.bar.live) {
    if (w.bar.live != 32) emu_fatal("warp collective with an exited lane");
    mma_bs_complete(w);
  }
  w.bar.wait();
  for (int i = 0; i < 4; ++i) d[i] = w.out[lane][i];
}

#include "range_edge.h"

#include "kernel_nvfp4.inc"

// ---- --layout: the maps above against CuTe's SM120 block-scaled MMA traits ------------------
// CUTLASS include/cute/atom/mma_traits_sm120.hpp, MMA_Traits<SM120::BLOCKSCALED::
// SM120_16x8x64_TN_VS<...>> (the m16n8k64 atom of kind::mxf4nvf4 with scale_vec::4X, VS = 16), and
// SM80_16x8_Row (mma_traits_sm80.hpp) for C: each a CuTe layout (T32, V) -> index, the index
// column-major in the operand ((M16,K64): m + 16k; (N8,K64): n + 8k; (M16,N8): m + 16n). They are
// written here as their shapes and strides, evaluated the CuTe way (a flat coordinate split
// colexicographically over a mode's shape, dotted with its strides).
static const cute_layout k_cute_a = {"ALayout (T32,V32)->(M16,K64)", {2, {4, 8}, {128, 1}}, {3, {8, 2, 2}, {16, 8, 512}}};
static const cute_layout k_cute_b = {"BLayout (T32,V16)->(N8,K64)", {2, {4, 8}, {64, 1}}, {2, {8, 2}, {8, 256}}};
static const cute_layout k_cute_sfa = {"SFALayout (T32,V64)->(M16,K64)", {3, {2, 2, 8}, {8, 0, 1}}, {1, {64}, {16}}};
static const cute_layout k_cute_sfb = {"SFBLayout (T32,V64)->(N8,K64)", {2, {4, 8}, {0, 1}}, {1, {64}, {8}}};
static const cute_layout k_cute_c = {"SM80_16x8_Row (T32,V4)->(M16,N8)", {2, {4, 8}, {32, 1}}, {2, {2, 2}, {16, 8}}};

// The scale word each lane of the kernel loads (templates/gemm_nvfp4.cu: every lane loads one,
// read or not): A row g + 8 * (t & 1), B column g.
static int kernel_sfa_row(int lane) { return (lane >> 2) + 8 * (lane & 1); }
static int kernel_sfb_col(int lane) { return lane >> 2; }

static int layout_check() {
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 32; ++i) { // A: value i of CuTe = nibble i % 8 of register i / 8
      int m, k, x = cute_at(k_cute_a, l, i);
      a_elem(l, i, &m, &k);
      layout_expect(k_cute_a.name, l, i, m, k, x % 16, x / 16);
    }
    for (int i = 0; i < 16; ++i) {
      int k, n, x = cute_at(k_cute_b, l, i);
      b_elem(l, i, &k, &n);
      layout_expect(k_cute_b.name, l, i, n, k, x % 8, x / 8);
    }
    for (int v = 0; v < 64; ++v) { // scales: value v is K element v, of byte v / 16 (VS = 16)
      int x = cute_at(k_cute_sfa, l, v);
      layout_expect("SFALayout (kernel's loaded row, byte)", l, v, kernel_sfa_row(l), v / 16,
                    x % 16, (x / 16) / 16);
      if (sfa_row(l) >= 0)
        layout_expect("SFALayout (model's read row, byte)", l, v, sfa_row(l), v / 16, x % 16,
                      (x / 16) / 16);
      x = cute_at(k_cute_sfb, l, v);
      layout_expect("SFBLayout (kernel's loaded column, byte)", l, v, kernel_sfb_col(l), v / 16,
                    x % 8, (x / 8) / 16);
      if (sfb_col(l) >= 0)
        layout_expect("SFBLayout (model's read column, byte)", l, v, sfb_col(l), v / 16, x % 8,
                      (x / 8) / 16);
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
    std::printf("  the model reads %d SF_A words (16 rows) and %d SF_B words (8 columns)\n", rows, cols);
    ++g_layout_bad;
  }
  std::printf("nvfp4 layout: A, B, SF_A, SF_B and C of the m16n8k64 block-scaled MMA against CuTe's "
              "SM120 traits: %s\n", g_layout_bad ? "FAIL" : "ok");
  return g_layout_bad ? 1 : 0;
}

static unsigned g_rng = 12345;
static unsigned rnd() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

// An operand as the twin lays it out (rows x kp codes, kp = K rounded up to 16): random codes and
// scales (every E2M1 code, ue4m3 scales 0 .. 0x7E) in the first K, zeros after; mode 1 instead
// quantises random fp32 data with the twin's own quantiser (realistic scales and signs); mode 2
// is mode 0 with the tensor scale 2^63, so that c = 2^126 / (4 div) and most outputs overflow.
static void make_operand(int mode, int rows, int K, int kp, std::vector<uint8_t> &codes,
                         std::vector<uint8_t> &scales, float *s_t) {
  codes.assign((size_t)rows * kp / 2, 0);
  scales.assign((size_t)rows * kp / 16, 0);
  if (mode == 1) {
    std::vector<float> v((size_t)rows * K);
    for (float &x : v) x = ((float)(int)(rnd() & 0xFFFF) - 32768.0f) * (1.0f + (float)(rnd() % 97));
    if (nvfp4_quantize(v.data(), rows, K, 0, nullptr, codes.data(), scales.data(), s_t) != 0)
      emu_fatal("nvfp4_quantize failed");
    return;
  }
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < K; ++k)
      codes[(size_t)r * kp / 2 + k / 2] |= (uint8_t)((rnd() & 15u) << (4 * (k & 1)));
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < (K + 15) / 16; ++j) scales[(size_t)r * kp / 16 + j] = (uint8_t)(rnd() % 0x7F);
  *s_t = mode == 2 ? 0x1p63f : 0.75f + (float)(rnd() % 1000) / 512.0f;
}

static const char *const k_mode_name[3] = {"raw codes", "quantised", "overflowing"};

// The same operand with rows of Kpad codes (kernel layout; zeros past kp).
static void repitch(const std::vector<uint8_t> &src, int rows, int from, int to,
                    std::vector<uint8_t> &dst) {
  dst.assign((size_t)rows * to, 0);
  for (int r = 0; r < rows; ++r) std::memcpy(&dst[(size_t)r * to], &src[(size_t)r * from], (size_t)from);
}

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--layout") == 0) return layout_check();
  if (argc < 5) {
    std::fprintf(stderr, "usage: nvfp4_emu M N K ldc [div] | nvfp4_emu --layout\n");
    return 2;
  }
  const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]);
  const int ldc = std::atoi(argv[4]), div = argc > 5 ? std::atoi(argv[5]) : 16;
  const int kp = (K + 15) / 16 * 16, Kpad = (K + HOT_TILE_K - 1) / HOT_TILE_K * HOT_TILE_K;
  long bad = 0;
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<uint8_t> a, sa, b, sb, ka, ksa, kb, ksb;
    float s_ta = 1.0f, s_tb = 1.0f;
    make_operand(mode, M, K, kp, a, sa, &s_ta);
    make_operand(mode, N, K, kp, b, sb, &s_tb);
    std::vector<float> want((size_t)M * N);
    if (nvfp4_gemm(a.data(), sa.data(), s_ta, b.data(), sb.data(), s_tb, M, N, kp, div, want.data()))
      emu_fatal("nvfp4_gemm failed");
    long overflow = 0;
    for (float x : want) overflow += !std::isfinite(x);
    const unsigned want_flag = overflow ? 1u : 0u;
    repitch(a, M, kp / 2, Kpad / 2, ka);
    repitch(sa, M, kp / 16, Kpad / 16, ksa);
    repitch(b, N, kp / 2, Kpad / 2, kb);
    repitch(sb, N, kp / 16, Kpad / 16, ksb);
    ka.resize(ka.size() + 16); // never empty, even for M = 0 or Kpad = 0
    kb.resize(kb.size() + 16);
    ksa.resize(ksa.size() + 4);
    ksb.resize(ksb.size() + 4);
    const std::vector<uint8_t> *ops[4] = {&ka, &ksa, &kb, &ksb};
    for (int i = 0; i < 4; ++i) g_lo[i] = ops[i]->data(), g_hi[i] = ops[i]->data() + ops[i]->size();
    std::vector<float> C((size_t)(M > 0 ? M : 1) * ldc + 1);
    const int gx = (N + HOT_TILE_N - 1) / HOT_TILE_N, gy = (M + HOT_TILE_M - 1) / HOT_TILE_M;
    const std::function<void()> kernel = [&] {
      HOT_KNAME(ka.data(), ksa.data(), &s_ta, kb.data(), ksb.data(), &s_tb, div, C.data(), M, N,
                Kpad, ldc);
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
      std::printf("nvfp4 %dx%dx%d_w%dx%d M=%d N=%d K=%d (Kpad %d, twin k_pad %d) ldc=%d div=%d %s "
                  "(%ld outputs not finite, flag %u) schedule %llu (%s): %s, trace %016llx\n",
                  HOT_TILE_M, HOT_TILE_N, HOT_TILE_K, HOT_WARPS_M, HOT_WARPS_N, M, N, K, Kpad, kp,
                  ldc, div, k_mode_name[mode], overflow, g_range_flag, (unsigned long long)seed,
                  emu::policy_name(), bad1 ? "FAIL" : "ok", (unsigned long long)emu::trace());
      std::fflush(stdout);
      bad += bad1;
    }
  }
  return bad ? 1 : 0;
}

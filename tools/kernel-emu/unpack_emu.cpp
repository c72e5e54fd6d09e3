// unpack_emu.cpp — runs templates/abc_unpack.cu (role abc_unpack: the saved codes of ABC, I rows
// of K = groups * group_k bytes, into the g_w GEMM's layout, I rows of k_pad = groups *
// group_k_pad bytes with zero tails) in the SIMT model of kemu.h with the grid and block of its
// descriptor (gen/kernels/abc_unpack.c, which must equal the template's documented launch:
// ceil(rows * k_pad / 16 / 256) blocks of 256 threads) and the descriptor's arguments, and
// compares every byte of dst with the twin ref_abc_unpack, bit for bit; then packs dst back with
// ref_abc_pack, which must give the source rows again.
// The cases of one run: `rows` code rows and `groups` scale groups, group_k in 1, 15, 16, 17, 36,
// 197, 255, group_k_pad = group_k rounded up to 16, 32, 64 and 128 (the distinct values; equal
// to group_k when group_k % 16 == 0), the source at base + 1, + 2 and + 3 (unaligned), filled
// with random non-zero bytes (a tail not zeroed shows), dst 16-byte aligned, pre-filled with
// 0xAB and framed by guard bytes (16 before, 4096 after) that must stay intact. A 16-byte store
// to an address that is not a multiple of 16 (a fault on the device) stops the run.
// Built by tools/kernel-emu.sh with -DHOT_GENERATED -DHOT_KNAME=<entry> (as the generator would).
// Usage: unpack_emu rows groups [group_k group_k_pad off]   (the last three: that one case only,
// e.g. a plan's geometry for tools/memstat.sh; in its EMU_MEMSTAT build dst is 256-byte aligned,
// as the runtime's workspace places it)
#include "kemu.h"

#define HOT_STR2(x) #x
#define HOT_STR(x) HOT_STR2(x)

// CUDA's vector type of the 16-byte store: a store to an address that is not a multiple of 16
// faults on the device, so it stops the run here
struct uint4 {
  unsigned x, y, z, w;
#ifdef EMU_MEMSTAT
  __attribute__((noinline, no_sanitize_thread))
#endif
  uint4 &operator=(const uint4 &o) {
    if ((uintptr_t)this & 15u) emu_die("16-byte store to an address not a multiple of 16");
#ifdef EMU_MEMSTAT
    memstat_plain((uintptr_t)__builtin_return_address(0), this, 16, true);
#endif
    x = o.x, y = o.y, z = o.z, w = o.w;
    return *this;
  }
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return uint4{x, y, z, w};
}

extern "C" {
#include "kernel_desc.h"
#include "ref.h"
extern const hot_kernel_desc kd_abc_unpack;
}

namespace k_unp {
#include "abc_unpack.cu"
}

static const int k_group_k[] = {1, 15, 16, 17, 36, 197, 255};
static const int k_steps[] = {16, 32, 64, 128};
static const size_t k_guard_before = 16, k_guard_after = 4096;

static unsigned char guard_byte(size_t i) { return (unsigned char)(0xC3u ^ (unsigned)(i * 7u)); }

// One case; returns the number of mismatches (printing the first few).
static long one_case(int rows, int groups, int gk, int gkp, int off, long long *bytes) {
  static hot_layer_plan pl;
  std::memset(&pl, 0, sizeof pl);
  pl.I = rows;
  pl.abc.enabled = 1;
  pl.hla.enabled = 1;
  pl.hla.k = (int64_t)groups * gk;
  pl.hla.groups = groups;
  pl.hla.group_k = gk;
  pl.hla.group_k_pad = gkp;
  pl.hla.gemm.k_pad = (int64_t)groups * gkp;
  const long long K = pl.hla.k, kp = pl.hla.gemm.k_pad;
  const size_t n_src = (size_t)(rows * K), n_dst = (size_t)(rows * kp);
  char what[160];
  std::snprintf(what, sizeof what, "rows=%d groups=%d group_k=%d group_k_pad=%d src+%d", rows,
                groups, gk, gkp, off);

  // src: `off` bytes before the rows, and room after them for a kernel that reads too far (a
  // wrong row stride or group offset stays inside the buffer and shows as wrong bytes)
  std::vector<unsigned char> srcb((size_t)off + (size_t)(rows * kp) + (size_t)kp + 64);
  for (auto &b : srcb) b = (unsigned char)(1u + emu_rand() % 255u);
  const unsigned char *src = srcb.data() + off;
  // dst: 16-byte aligned, guards around it, garbage in it
#ifdef EMU_MEMSTAT
  const uintptr_t align = 256;
#else
  const uintptr_t align = 16;
#endif
  std::vector<unsigned char> dstb(k_guard_before + n_dst + k_guard_after + align);
  unsigned char *dst = dstb.data() + k_guard_before;
  dst += (align - ((uintptr_t)dst & (align - 1))) & (align - 1);
  unsigned char *base = dst - k_guard_before;
  for (size_t i = 0; i < k_guard_before; ++i) base[i] = guard_byte(i + 1000);
  std::memset(dst, 0xAB, n_dst);
  for (size_t i = 0; i < k_guard_after; ++i) dst[n_dst + i] = guard_byte(i);

  // the twin
  std::vector<int8_t> want(n_dst, 0x11), back(n_src, 0x22);
  int rc = ref_abc_unpack(&pl, (const int8_t *)src, want.data());
  if (rc != HOT_REF_OK) {
    std::printf("  %s: ref_abc_unpack: %s\n", what, ref_status_name(rc));
    return 1;
  }

  // the descriptor's geometry and arguments, against the template's documented launch
  hot_kernel_geom g;
  std::memset(&g, 0, sizeof g);
  if (kd_abc_unpack.geom(&pl, HOT_K_ABC_UNPACK, &g) != 0) emu_die("abc_unpack geom failed");
  const long long blocks = (rows * (kp / 16) + 255) / 256;
  if (g.grid_x != blocks || g.grid_y != 1 || g.block != 256 || g.smem != 0) {
    std::printf("  %s: descriptor grid %lld x %lld, block %u, smem %u; documented %lld x 1, "
                "256, 0\n", what, (long long)g.grid_x, (long long)g.grid_y, g.block, g.smem,
                blocks);
    return 1;
  }
  hot_launch_in in;
  std::memset(&in, 0, sizeof in);
  in.buf[HOT_LB_SAVED] = (uint64_t)(uintptr_t)src;
  in.buf[HOT_LB_Q_HX] = (uint64_t)(uintptr_t)dst;
  static hot_argv v;
  std::memset(&v, 0, sizeof v);
  if (kd_abc_unpack.args(&pl, HOT_K_ABC_UNPACK, 0, &in, &v) != 0 || v.n != 7)
    emu_die("abc_unpack args failed");
  const long long doc[7] = {(long long)(uintptr_t)src, rows, K, gk, gkp, kp,
                            (long long)(uintptr_t)dst};
  for (int i = 0; i < 7; ++i) {
    const bool ptr = i == 0 || i == 6;
    const long long got = ptr ? (long long)v.a[i].u : (long long)v.a[i].i;
    if ((v.a[i].type == HOT_ARG_PTR) != ptr || got != doc[i]) {
      std::printf("  %s: descriptor argument %d is %lld, the template's is %lld\n", what, i, got,
                  doc[i]);
      return 1;
    }
  }
  const unsigned char *a_src = (const unsigned char *)(uintptr_t)v.a[0].u;
  unsigned char *a_dst = (unsigned char *)(uintptr_t)v.a[6].u;
  const int a_rows = (int)v.a[1].i, a_k = (int)v.a[2].i, a_gk = (int)v.a[3].i;
  const int a_gkp = (int)v.a[4].i, a_kp = (int)v.a[5].i;
  emu_launch({(unsigned)g.grid_x, 1, 1}, g.block, [&] {
    k_unp::HOT_KNAME(a_src, a_rows, a_k, a_gk, a_gkp, a_kp, a_dst);
  });

  long bad = 0;
  for (size_t i = 0; i < n_dst; ++i)
    if (dst[i] != (unsigned char)want[i] && bad++ < 5)
      std::printf("  %s: dst row %lld byte %lld (group %lld, offset %lld): got 0x%02x want "
                  "0x%02x\n", what, (long long)i / kp, (long long)i % kp,
                  (long long)i % kp / gkp, (long long)i % kp % gkp, dst[i],
                  (unsigned char)want[i]);
  for (size_t i = 0; i < k_guard_before; ++i)
    if (base[i] != guard_byte(i + 1000) && bad++ < 5)
      std::printf("  %s: guard byte %lld before dst overwritten\n", what,
                  (long long)k_guard_before - (long long)i);
  for (size_t i = 0; i < k_guard_after; ++i)
    if (dst[n_dst + i] != guard_byte(i) && bad++ < 5)
      std::printf("  %s: guard byte %lld after dst overwritten\n", what, (long long)i);
  // the round trip: the GEMM layout packed again is the saved rows
  rc = ref_abc_pack(&pl, (const int8_t *)dst, back.data());
  if (rc != HOT_REF_OK || std::memcmp(back.data(), src, n_src) != 0) {
    if (bad++ < 5) std::printf("  %s: ref_abc_pack(dst) is not the source rows\n", what);
  }
  *bytes += (long long)n_dst;
  return bad;
}

static int emu_run(int argc, char **argv) {
  if (argc < 3) emu_die("usage: unpack_emu rows groups");
  const int rows = atoi(argv[1]), groups = atoi(argv[2]);
  if (rows < 1 || groups < 1) emu_die("unpack_emu: rows and groups must be >= 1");
  long bad = 0;
  int cases = 0;
  long long bytes = 0;
  if (argc >= 6) { // one case
    const int gk = atoi(argv[3]), gkp = atoi(argv[4]), off = atoi(argv[5]);
    if (gk < 1 || gkp < gk || gkp % 16 || off < 0) emu_die("unpack_emu: bad group_k, group_k_pad or off");
    bad = one_case(rows, groups, gk, gkp, off, &bytes);
    std::printf("%s rows=%d groups=%d group_k=%d group_k_pad=%d src+%d: %s\n", HOT_STR(HOT_KNAME),
                rows, groups, gk, gkp, off, bad ? "FAIL" : "ok");
    return bad ? 1 : 0;
  }
  for (int gk : k_group_k) {
    int done[4], n_done = 0;
    for (int st : k_steps) {
      const int gkp = (gk + st - 1) / st * st;
      bool seen = false;
      for (int j = 0; j < n_done; ++j) seen |= done[j] == gkp;
      if (seen) continue;
      done[n_done++] = gkp;
      for (int off = 1; off <= 3; ++off) {
        bad += one_case(rows, groups, gk, gkp, off, &bytes);
        ++cases;
      }
    }
  }
  std::printf("%s rows=%d groups=%d: %d cases (group_k 1 ... 255, group_k_pad to 16 ... 128, "
              "src +1 ... +3), %lld dst bytes compared: %s\n",
              HOT_STR(HOT_KNAME), rows, groups, cases, bytes, bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}
EMU_MAIN()

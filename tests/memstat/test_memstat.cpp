// test_memstat.cpp — the bank and sector rules of tools/kernel-emu/memstat.h on hand-made warp
// requests whose answers are known (docs/gpu-model.md): conflict-free, 2-way and 32-way shared
// accesses, ldmatrix with and without the XOR swizzle of gemm_int.cu, 8- and 16-byte accesses
// per half / quarter warp, broadcasts, and coalesced vs strided global loads.
#include <cstdio>
#include <vector>

#include "memstat.h"

using memstat::lane_access;
static int fails = 0;
static void expect(const char *what, int got, int want) {
  std::printf("%-58s %4d (want %d)%s\n", what, got, want, got == want ? "" : "  FAIL");
  if (got != want) ++fails;
}
template <class F> static std::vector<lane_access> warp(int bytes, F addr) {
  std::vector<lane_access> v;
  for (int l = 0; l < 32; ++l) v.push_back(lane_access{l, addr(l), bytes});
  return v;
}
// ldmatrix.x4 row addresses of a 16 x 32-byte A slice of a tile with KB bytes per row (the
// fragment addressing of gemm_int.cu: lane l -> row l & 15, chunk l >> 4), swizzled or not.
static std::vector<lane_access> ldm(int kb, bool swz) {
  return warp(16, [&](int l) {
    const int r = l & 15, c = l >> 4, cpr = kb / 16;
    const int s = !swz ? 0 : cpr == 4 ? (r >> 1) & 3 : cpr == 2 ? (r >> 2) & 1 : r & 7;
    return (unsigned long long)(r * kb + ((c ^ s) << 4));
  });
}

int main() {
  int ideal = 0, w;
  w = memstat::smem_wavefronts(warp(4, [](int l) { return 4ull * l; }), &ideal);
  expect("32 lanes x 4 B consecutive: wavefronts", w, 1);
  expect("  ideal", ideal, 1);
  w = memstat::smem_wavefronts(warp(4, [](int l) { return 8ull * l; }), &ideal);
  expect("stride 8 B (2 lanes a bank): 2-way", w, 2);
  w = memstat::smem_wavefronts(warp(4, [](int l) { return 128ull * l; }), &ideal);
  expect("stride 128 B (one bank): 32-way", w, 32);
  expect("  ideal", ideal, 1);
  w = memstat::smem_wavefronts(warp(4, [](int) { return 64ull; }), &ideal);
  expect("one word for all lanes (broadcast)", w, 1);
  w = memstat::smem_wavefronts(warp(4, [](int l) { return 132ull * l; }), &ideal);
  expect("stride 33 words (padded rows)", w, 1);
  w = memstat::smem_wavefronts(warp(16, [](int l) { return 16ull * l; }), &ideal);
  expect("32 lanes x 16 B consecutive: 4 quarter warps", w, 4);
  expect("  ideal", ideal, 4);
  w = memstat::smem_wavefronts(warp(16, [](int l) { return 32ull * l; }), &ideal);
  expect("16 B at stride 32 B: 2-way in each quarter", w, 8);
  w = memstat::smem_wavefronts(warp(8, [](int l) { return 8ull * l; }), &ideal);
  expect("32 lanes x 8 B consecutive: 2 half warps", w, 2);
  // ldmatrix on the GEMM tiles: KB = 64 and 128 bytes a row
  w = memstat::ldmatrix_wavefronts(ldm(64, true), &ideal);
  expect("ldmatrix.x4, KB 64, swizzled: conflict-free", w, 4);
  expect("  ideal", ideal, 4);
  w = memstat::ldmatrix_wavefronts(ldm(64, false), &ideal);
  expect("ldmatrix.x4, KB 64, swizzle removed: 4-way", w, 16);
  w = memstat::ldmatrix_wavefronts(ldm(128, true), &ideal);
  expect("ldmatrix.x4, KB 128, swizzled: conflict-free", w, 4);
  w = memstat::ldmatrix_wavefronts(ldm(128, false), &ideal);
  expect("ldmatrix.x4, KB 128, swizzle removed: 8-way", w, 32);
  // wgmma core matrices (8 rows x 16 bytes) of a K-major operand with 128-byte rows, as
  // gemm_wgmma.cu / gemm_tma.cu lay them out: with the 128-byte swizzle (address bits [7, 10)
  // XORed into [4, 7)) row r's chunk c sits at chunk c ^ r, so the 8 rows fill all 32 banks
  for (int c = 0; c < 8; ++c) {
    std::vector<lane_access> swz, flat;
    for (int r = 0; r < 8; ++r) {
      swz.push_back(lane_access{r, 1024ull + 128ull * r + 16ull * (unsigned)(c ^ r), 16});
      flat.push_back(lane_access{r, 1024ull + 128ull * r + 16ull * (unsigned)c, 16});
    }
    w = memstat::core_matrix_wavefronts(swz, &ideal);
    expect("wgmma core matrix, 128B swizzle: conflict-free", w, 1);
    expect("  ideal", ideal, 1);
    w = memstat::core_matrix_wavefronts(flat, &ideal);
    expect("wgmma core matrix, swizzle removed (rows 128 B apart): 8-way", w, 8);
  }
  // a TMA box row of 128 bytes written as 8 chunks of 16 (any permutation within the row, as
  // the swizzle makes it): one wavefront
  w = memstat::smem_wavefronts(warp(16, [](int l) { return 2048ull + 16ull * (unsigned)((l % 8) ^ 5); }), &ideal);
  expect("32 x 16 B, each quarter warp one swizzled 128-byte row", w, 4);
  // global
  w = memstat::gmem_sectors(warp(4, [](int l) { return 4096ull + 4ull * l; }), &ideal);
  expect("coalesced 4 B loads: sectors", w, 4);
  expect("  ideal", ideal, 4);
  w = memstat::gmem_sectors(warp(4, [](int l) { return 4096ull + 4ull * l + 16; }), &ideal);
  expect("coalesced but 16 B off a sector: sectors", w, 5);
  w = memstat::gmem_sectors(warp(4, [](int l) { return 4096ull * l; }), &ideal);
  expect("4 B at a row stride (a column read): sectors", w, 32);
  expect("  ideal", ideal, 4);
  w = memstat::gmem_sectors(warp(16, [](int l) { return 16ull * l; }), &ideal);
  expect("32 lanes x 16 B consecutive: sectors", w, 16);
  std::printf("%s\n", fails ? "FAIL" : "ok");
  return fails ? 1 : 0;
}

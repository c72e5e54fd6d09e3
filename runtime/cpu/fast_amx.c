/* fast_amx.c — the kernels of the amx-int8 level: tdpbssd (signed bytes times signed bytes into
 * int32, modulo 2^32: no offset) on 2 x 2 tiles of 16 x 16 int32, its A panels (each 64-k block
 * stored row by row: one A tile) and the tile state's start and end; B panels as the VNNI
 * kernels' (fast_avx2.c's packing); its per-element kernels are the avx512-vnni level's
 * (fast_level.c takes the row below), and its row of the level tables at the end. */
#include "fast_gemm.h"

#if FAST_X86
#define AMX_FN __attribute__((target("amx-tile,amx-int8")))
#endif

/* Tiles: 0-3 the 2 x 2 int32 accumulators (C[i][j] in tile 2i + j), 4-5 two A tiles, 6-7 two B
 * tiles, each 16 rows of 64 bytes. HOT_FAST_VNNI_EMU spells the tile steps in portable C after
 * the instructions' definitions (tdpbssd: C[m][n] plus, for each of the 16 dwords k4 of A's row
 * m, the four products of A's signed bytes 4k4..4k4+3 and B's signed bytes 4n..4n+3 of row k4, no
 * saturation, modulo 2^32), so that the kernel, its packing and the tile walk are checked on CPUs
 * without AMX. */
#if defined(HOT_FAST_VNNI_EMU)
#define HAVE_AMX 1
typedef struct {
  unsigned char b[16][64];
} emu_tile;
static void emu_tload(emu_tile *t, const void *p, int64_t stride) {
  for (int r = 0; r < 16; ++r) memcpy(t->b[r], (const unsigned char *)p + r * stride, 64);
}
static void emu_tstore(const emu_tile *t, void *p, int64_t stride) {
  for (int r = 0; r < 16; ++r) memcpy((unsigned char *)p + r * stride, t->b[r], 64);
}
static void emu_tdpbssd(emu_tile *c, const emu_tile *a, const emu_tile *b) {
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      uint32_t acc;
      memcpy(&acc, &c->b[m][4 * n], 4);
      for (int k4 = 0; k4 < 16; ++k4)
        for (int j = 0; j < 4; ++j)
          acc += (uint32_t)((int32_t)(int8_t)a->b[m][4 * k4 + j] * (int8_t)b->b[k4][4 * n + j]);
      memcpy(&c->b[m][4 * n], &acc, 4);
    }
}
#define AMX_KERNEL_FN
#define AMX_TILES emu_tile T_[8]
#define TILE_LOAD(t, p, s) emu_tload(&T_[t], (p), (s))
#define TILE_STORE(t, p, s) emu_tstore(&T_[t], (p), (s))
#define TILE_ZERO(t) memset(&T_[t], 0, sizeof T_[t])
#define TILE_DP(c, a, b) emu_tdpbssd(&T_[c], &T_[a], &T_[b])
static void amx_begin(void) {}
static void amx_end(void) {}
#elif FAST_HAVE_AMX
#define HAVE_AMX 1
#define AMX_KERNEL_FN AMX_FN
#define AMX_TILES (void)0
#define TILE_LOAD(t, p, s) _tile_loadd(t, (p), (s))
#define TILE_STORE(t, p, s) _tile_stored(t, (p), (s))
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_DP(c, a, b) _tile_dpbssd(c, a, b)
/* The tile configuration (palette 1, 8 tiles of 16 rows x 64 bytes): loaded by each task that
 * runs the kernel, released at its end, so that no tile state outlives a task on any thread. A
 * constant in memory: GCC 12 dropped the stores of a local one as dead (it does not see that
 * ldtilecfg reads all 64 bytes), and the load faulted on a configuration of zero tiles. */
static const struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} k_amx_cfg __attribute__((aligned(64))) = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64},
                                             {16, 16, 16, 16, 16, 16, 16, 16}};
AMX_FN static void amx_begin(void) { _tile_loadconfig(&k_amx_cfg); }
AMX_FN static void amx_end(void) { _tile_release(); }
#else
#define HAVE_AMX 0
#endif

#if HAVE_AMX
/* C (32 x 32 int32 at c, row stride GK_LDC) = or += A tiles at a0, a1 (16 rows each, row stride
 * a_ld, block j at j * a_step: 64 and 1024 for packed panels, the source's row stride and 64 for
 * A read in place) times B panels b0, b1 (16 columns each) over nb blocks of 64 k (1 KB per B
 * panel and block). */
AMX_KERNEL_FN static void kern_amx(const unsigned char *a0, const unsigned char *a1, int64_t a_ld,
                                   int64_t a_step, const unsigned char *b0, const unsigned char *b1,
                                   int64_t nb, int32_t *c, int accum) {
  const int64_t ldc = GK_LDC;
  AMX_TILES;
  const int64_t cs = ldc * (int64_t)sizeof *c;
  if (accum) {
    TILE_LOAD(0, c, cs);
    TILE_LOAD(1, c + 16, cs);
    TILE_LOAD(2, c + 16 * ldc, cs);
    TILE_LOAD(3, c + 16 * ldc + 16, cs);
  } else {
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
  }
  for (int64_t j = 0; j < nb; ++j) {
    TILE_LOAD(4, a0 + j * a_step, a_ld);
    TILE_LOAD(6, b0 + j * 1024, 64);
    TILE_DP(0, 4, 6);
    TILE_LOAD(7, b1 + j * 1024, 64);
    TILE_DP(1, 4, 7);
    TILE_LOAD(5, a1 + j * a_step, a_ld);
    TILE_DP(2, 5, 6);
    TILE_DP(3, 5, 7);
  }
  TILE_STORE(0, c, cs);
  TILE_STORE(1, c + 16, cs);
  TILE_STORE(2, c + 16 * ldc, cs);
  TILE_STORE(3, c + 16 * ldc + 16, cs);
}
#endif

#if HAVE_AMX
/* An AMX A panel (16 rows; each block of 64 k stored row by row, 1 KB, zero past the source) of
 * a source whose rows run along k (sk == 1): a copy of 64-byte runs. */
static void pack_a_rows_amx(const int8_t *src, int64_t sr, int64_t rows, int64_t seg_k,
                            int64_t nblocks, unsigned char *dst) {
  for (int64_t j = 0; j < nblocks; ++j)
    for (int64_t r = 0; r < 16; ++r) {
      unsigned char *d = dst + j * 1024 + r * 64;
      const int64_t k0 = j * 64, n = r < rows && seg_k > k0 ? (seg_k - k0 < 64 ? seg_k - k0 : 64) : 0;
      if (n == 64) { /* a copy of constant size, inlined (a library call per 64 bytes cost more than the copy) */
        memcpy(d, src + r * sr + k0, 64);
        continue;
      }
      if (n) memcpy(d, src + r * sr + k0, (size_t)n);
      memset(d + n, 0, (size_t)(64 - n));
    }
}

/* An AMX A panel from the VNNI layout, in place: each 1 KB block holds dword [step][row] (16 x
 * 16) and becomes dword [row][step], each row's 64 k contiguous. */
static void transpose_blocks_amx(unsigned char *p, int64_t nblocks) {
  for (int64_t j = 0; j < nblocks; ++j) {
    uint32_t *d = (uint32_t *)(void *)(p + j * 1024);
    for (int s = 1; s < 16; ++s)
      for (int r = 0; r < s; ++r) {
        const uint32_t t = d[s * 16 + r];
        d[s * 16 + r] = d[r * 16 + s];
        d[r * 16 + s] = t;
      }
  }
}

static void gemm_setup_amx(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_AMX, g->simd = 1, g->mr = 16, g->kstep = 4, g->off = 0;
  g->tiles = kern_amx, g->tiles_begin = amx_begin, g->tiles_end = amx_end;
  g->a_rows = pack_a_rows_amx, g->a_tiles = transpose_blocks_amx;
  fast_gemm_pack_avx2(g);
}
#endif

/* ---- the level's row (fast_level.c): NULL where this build cannot run it, which
 * fast_level_has then never offers ------------------------------------------------------------- */

extern const fast_level_row fast_row_amx;
#if HAVE_AMX
const fast_level_row fast_row_amx = {FAST_LEVEL_AMX, NULL, gemm_setup_amx};
#else
const fast_level_row fast_row_amx = {FAST_LEVEL_AMX, NULL, NULL};
#endif

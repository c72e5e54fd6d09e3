/* fast_gemm.c — the integer GEMM of the fast CPU path: C = A.B^T of int8 codes with int32 sums
 * modulo 2^32 (CONTRACT.md 13), so any blocking, order, thread split or SIMD kernel gives the
 * bits of the twin (gemm_ref.c). Both operands are packed into panels first (rows of A in
 * panels of MR, rows of B in panels of 16), then every thread computes whole output tiles and
 * hands each to the caller's epilogue.
 *
 * Kernels (picked by the level's setup, the GEMM entry of its row in fast_level.c, and the code
 * bounds qa, qb; each lives in its level's file, the scalar one here):
 *  - scalar: 16-bit packed pairs, uint32 sums (portable; what every level falls back to);
 *  - AVX2 "w16": vpmaddwd on sign-extended 16-bit pairs: exact for any int8 codes;
 *  - AVX2 "u8": vpmaddubsw on (a + qa) as u8 times b as s8, 16-bit partial sums widened by
 *    vpmaddwd every S steps, then minus qa * sum_k b per column: used when 4 * qa * qb * S fits
 *    16 bits for S >= 16 (4-bit codes: S = 167), so neither the pair sums nor the 16-bit partial
 *    sums saturate; the correction is exact modulo 2^32;
 *  - AVX-VNNI ("vnni256"): vpdpbusd on 256-bit vectors, MR 4, on the u8 kernel's panels with
 *    a + 128 as u8 times b as s8 into int32, minus 128 * sum_k b: exact modulo 2^32 for any int8
 *    codes, and one instruction per 32 products where u8 needs two and w16 four;
 *  - AVX-512 VNNI: the same on 512-bit vectors, MR 16;
 *  - AMX-INT8: tdpbssd (signed bytes times signed bytes into int32, modulo 2^32: no offset) on
 *    2 x 2 tiles of 16 x 16 int32; B panels as the VNNI kernels' (steps of 4 k: a 64-k block of
 *    a panel is one 16 x 64-byte B tile), A panels with each 64-k block stored row by row (one
 *    A tile); K padded with zeros to a multiple of 64. */
#include <stdlib.h>
#include <string.h>

#include "fast_gemm.h"


/* ---- kernels: one MR x 16 tile over steps [0, ns) of packed panels; c (row stride ldc) is
 * overwritten (acc == 0) or added to (acc != 0), then, when corr is not NULL, corr[n] is
 * subtracted from column n (the offset correction, after a tile's last K block); all modulo
 * 2^32 ------------------------------------------------------------------------------------------ */

static void kern_scalar(const gk_cfg *g, const void *ap, const void *bp, int64_t ns, int32_t *c,
                        int accum, const uint32_t *corr) {
  const int64_t ldc = GK_LDC;
  const int16_t *a = ap, *b = bp;
  const int mr = g->mr;
  uint32_t acc[16][NR];
  for (int m = 0; m < mr; ++m)
    for (int n = 0; n < NR; ++n) {
      acc[m][n] = 0;
      if (accum) memcpy(&acc[m][n], &c[m * ldc + n], sizeof(int32_t));
    }
  for (int64_t s = 0; s < ns; ++s) {
    const int16_t *as = a + s * mr * 2, *bs = b + s * NR * 2;
    for (int m = 0; m < mr; ++m)
      for (int n = 0; n < NR; ++n)
        acc[m][n] += (uint32_t)((int32_t)as[2 * m] * bs[2 * n]) +
                     (uint32_t)((int32_t)as[2 * m + 1] * bs[2 * n + 1]);
  }
  for (int m = 0; m < mr; ++m)
    for (int n = 0; n < NR; ++n) {
      if (corr) acc[m][n] -= corr[n];
      memcpy(&c[m * ldc + n], &acc[m][n], sizeof(int32_t));
    }
}

/* ---- packing -------------------------------------------------------------------------------- */

typedef struct {
  const fast_igemm_op *op;
  const gk_cfg *g;
  unsigned char *pa, *pb;
  uint32_t *corr; /* segs x npb*16: off * sum_k b, or NULL */
  int32_t **scratch;
  double *epi_s; /* per thread: seconds in the epilogue (profile), or NULL */
  int64_t tiles_m;
  int agroup, bgroup; /* A, B panels per packing task: 4 where the rows of A (columns of B) are
                         contiguous and the panels are 16 rows of 4-k steps (pack4_avx2) */
  int64_t nbt; /* packing tasks of B per segment */
  int64_t tiles_n, cgroup; /* tile columns; tile columns of one task (tile_task) */
  int64_t a_direct; /* AMX: A panels below this read in place (not packed) */
} gctx;


/* Packs rows r0 .. r0+rows-1 (rows <= width of the panel) of a source with element (r, k) at
 * src[r*sr + k*sk] into a panel of `width` rows: step s holds, for each row, kstep consecutive k;
 * entries past the source (rows or k) are `fill`; values are stored as int16 (w16) or as the byte
 * v + off. Returns sum_k v per panel row in sums (when not NULL). Whole panels take the AVX2
 * transposes (with g->simd); the rest runs along whichever source axis is contiguous. */
static void pack_panel(const gk_cfg *g, const int8_t *src, int64_t sr, int64_t sk, int64_t rows,
                       int64_t seg_k, int width, int off, unsigned char *dst, uint32_t *sums) {
  const int ks = g->kstep;
  const int64_t n = g->ksteps * width * ks;
  const int w16 = g->kind == K_W16;
  int16_t *d16 = (int16_t *)(void *)dst;
  int64_t k0 = 0; /* k below k0 are packed by the SIMD path */
  if (g->pack_whole && rows == width) k0 = g->pack_whole(g, src, sr, sk, seg_k, width, off, dst);
  if (k0 < g->ksteps * ks) { /* the fill of what the loops below do not write */
    const int64_t b0 = (k0 / ks) * width * ks;
    if (w16) memset(dst + 2 * b0, 0, (size_t)(n - b0) * 2);
    else memset(dst + b0, off, (size_t)(n - b0));
  }
  const int sh = ks == 4 ? 2 : 1; /* kstep is 2 or 4: shifts, not divisions */
#define AT(r, k) (((((k) >> sh) * width + (r)) << sh) + ((k) & (ks - 1)))
  if (sk == 1 || sr != 1) { /* along k, row by row */
    for (int64_t r = 0; r < rows; ++r) {
      const int8_t *row = src + r * sr;
      for (int64_t k = k0; k < seg_k; ++k) {
        const int v = row[k * sk];
        if (w16) d16[AT(r, k)] = (int16_t)v;
        else dst[AT(r, k)] = (unsigned char)(v + off);
      }
    }
  } else { /* rows contiguous (sr == 1): along the rows, k by k */
    for (int64_t k = k0; k < seg_k; ++k) {
      const int8_t *col = src + k * sk;
      for (int64_t r = 0; r < rows; ++r) {
        const int v = col[r];
        if (w16) d16[AT(r, k)] = (int16_t)v;
        else dst[AT(r, k)] = (unsigned char)(v + off);
      }
    }
  }
#undef AT
  if (!sums) return;
  if (g->panel_sums && !w16 && off == 0 && width == 16) {
    g->panel_sums(dst, g->ksteps, sums);
    return;
  }
  for (int r = 0; r < width; ++r) { /* the fill adds nothing: off is 0 when sums are asked */
    uint32_t sum = 0;
    for (int64_t k = 0; k < g->ksteps * ks; ++k) {
      const int64_t at = (((k >> sh) * width + r) << sh) + (k & (ks - 1));
      const int v = w16 ? d16[at] : (int8_t)dst[at];
      sum += (uint32_t)v;
    }
    sums[r] = sum;
  }
}

/* Rows that panel p of width w holds out of n: from 0 (a panel past the end, which the AMX
 * kernel's pairs of panels may need: all fill) to w. */
static int64_t panel_rows(int64_t n, int64_t p, int w) {
  const int64_t r = n - p * w;
  return r < 0 ? 0 : r < w ? r : w;
}


static void pack_a(const gctx *x, int64_t seg, int64_t p) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int64_t r0 = p * g->mr, rows = panel_rows(op->M, p, g->mr);
  const int8_t *src = op->a_seg[seg] + (rows ? r0 * op->a_sm : 0);
  unsigned char *dst = x->pa + (size_t)(seg * g->npa + p) * g->apb;
  if (g->a_rows && op->a_sk == 1) {
    g->a_rows(src, op->a_sm, rows, op->seg_k, g->ksteps / 16, dst);
    return;
  }
  pack_panel(g, src, op->a_sm, op->a_sk, rows, op->seg_k, g->mr, g->off, dst, NULL);
  if (g->a_tiles) g->a_tiles(dst, g->ksteps / 16);
}

static void pack_b(const gctx *x, int64_t seg, int64_t p) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int64_t rows = panel_rows(op->N, p, NR), r0 = rows ? p * NR : 0;
  uint32_t sum[NR];
  pack_panel(g, op->b_seg[seg] + r0 * op->b_sn, op->b_sn, op->b_sk, rows, op->seg_k, NR, 0,
             x->pb + (size_t)(seg * g->npb + p) * g->bpb, x->corr ? sum : NULL);
  if (x->corr)
    for (int n = 0; n < NR; ++n) x->corr[seg * g->npb * NR + p * NR + n] = (uint32_t)g->off * sum[n];
}

/* B panels p0 .. p0 + bgroup - 1 (those below npb): four whole ones at once by pack_b4_avx2,
 * else one by one. */
static void pack_b_group(const gctx *x, int64_t seg, int64_t p0) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  int64_t p1 = p0 + x->bgroup < g->npb ? p0 + x->bgroup : g->npb;
  if (x->bgroup == 4 && p1 - p0 == 4 && (p0 + 4) * NR <= op->N) { /* bgroup 4: g->pack4 */
    unsigned char *dst = x->pb + (size_t)(seg * g->npb + p0) * g->bpb;
    g->pack4(op->b_seg[seg] + p0 * NR, op->b_sk, op->seg_k, g->ksteps, g->bpb, 0, dst);
    for (int64_t p = p0; x->corr && p < p1; ++p) {
      uint32_t sum[NR];
      g->panel_sums(x->pb + (size_t)(seg * g->npb + p) * g->bpb, g->ksteps, sum);
      for (int n = 0; n < NR; ++n) x->corr[seg * g->npb * NR + p * NR + n] = (uint32_t)g->off * sum[n];
    }
    return;
  }
  for (int64_t p = p0; p < p1; ++p) pack_b(x, seg, p);
}

/* A panels p0 .. p0 + agroup - 1 (those below npa), as pack_b_group (the AMX ones then turned
 * into tiles block by block). */
static void pack_a_group(const gctx *x, int64_t seg, int64_t p0) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  int64_t p1 = p0 + x->agroup < g->npa ? p0 + x->agroup : g->npa;
  if (x->agroup == 4 && p1 - p0 == 4 && (p0 + 4) * 16 <= op->M) { /* agroup 4: g->pack4 */
    unsigned char *dst = x->pa + (size_t)(seg * g->npa + p0) * g->apb;
    g->pack4(op->a_seg[seg] + p0 * 16, op->a_sk, op->seg_k, g->ksteps, g->apb, g->off, dst);
    for (int64_t p = 0; g->a_tiles && p < 4; ++p) g->a_tiles(dst + (size_t)p * g->apb, g->ksteps / 16);
    return;
  }
  for (int64_t p = p0; p < p1; ++p) pack_a(x, seg, p);
}

static void pack_task(void *ctx, int64_t i, int tid) {
  (void)tid;
  const gctx *x = ctx;
  const int64_t nat = fast_cdiv(x->g->npa - x->a_direct, x->agroup);
  const int64_t per = nat + x->nbt, seg = i / per, j = i % per;
  if (j < nat) pack_a_group(x, seg, x->a_direct + j * x->agroup);
  else pack_b_group(x, seg, (j - nat) * x->bgroup);
}

int fast_amx_pack_all = 0;

/* ---- tiles ---------------------------------------------------------------------------------- */

/* The K blocks of one kernel step (a pair of A and B panels on AMX, one of each elsewhere) of
 * segment seg, into c. */
static void tile_step(const gctx *x, int64_t seg, int64_t pa, int64_t pb, int32_t *c) {
  const gk_cfg *g = x->g;
  const size_t esz = g->kind == K_W16 ? 2 : 1;
  const size_t astep = (size_t)(g->mr * g->kstep) * esz, bstep = (size_t)(NR * g->kstep) * esz;
  const unsigned char *a = x->pa + (size_t)(seg * g->npa + pa) * g->apb;
  const unsigned char *b = x->pb + (size_t)(seg * g->npb + pb) * g->bpb;
  for (int64_t s0 = 0; s0 < g->ksteps; s0 += g->kc) { /* K blocks of g->kc steps */
    const int64_t ns = g->ksteps - s0 < g->kc ? g->ksteps - s0 : g->kc;
    const unsigned char *ap = a + (size_t)s0 * astep, *bp = b + (size_t)s0 * bstep;
    if (g->tiles && pa < x->a_direct) { /* A's tiles straight from its rows (a_sk == 1) */
      const fast_igemm_op *op = x->op;
      const unsigned char *ad = (const unsigned char *)op->a_seg[seg] + pa * 16 * op->a_sm + s0 * 4;
      g->tiles(ad, ad + 16 * op->a_sm, op->a_sm, 64, bp, bp + g->bpb, ns / 16, c, s0 > 0);
    } else if (g->tiles) {
      g->tiles(ap, ap + g->apb, 64, 1024, bp, bp + g->bpb, ns / 16, c, s0 > 0);
    } else {
      const int last = s0 + ns >= g->ksteps;
      const uint32_t *cr = x->corr && last ? x->corr + (seg * g->npb + pb) * NR : NULL;
      g->kern(g, ap, bp, ns, c, s0 > 0, cr);
    }
  }
}

/* B panels of one group of the segmented tile (tile_one): 64 columns, a multiple of the AMX
 * pairs. Its int32 sums and output rows (MC x 64 of each, 16 KB) stay in L1 between segments. */
#define SEG_PANELS 4

/* One output tile (MC rows x NCP * NR columns, tile tm down, tn across) into the thread's
 * scratch c, then its epilogue. One segment: each kernel step over all its K blocks (one block
 * up to 2048 k on AMX and the AVX2 kernels), B panels outer and A panels inner, then the
 * epilogue on the whole tile (its fresh rows may stream past the caches). Several segments (the
 * per-sample g_w GEMM: each segment's sums scaled and added in turn): a group of SEG_PANELS B
 * panels at a time, all its kernel steps of one segment and then one epilogue on its MC rows,
 * segment after segment, so that its int32 sums and the output rows they add to stay in L1
 * between the segments' adds (a whole tile per segment went out to L2 and back once per
 * segment; one kernel step's 16 x 16 block per epilogue call spent more in the calls than in
 * the adds: at 8 x 128 tokens, 128 -> 512, 8 segments of 72 k, 0.17 of the g_w GEMM's 0.41 ms
 * on one thread). Each output element still takes its segments in order: the same bits.
 * Returns the seconds spent in the epilogue when profiling (else 0). */
static double tile_one(const gctx *x, int64_t tm, int64_t tn, int32_t *c) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int64_t m0 = tm * MC, n0 = tn * NCP * NR;
  const int64_t mc = op->M - m0 < MC ? op->M - m0 : MC;
  const int64_t nc = op->N - n0 < NCP * NR ? op->N - n0 : NCP * NR;
  const int64_t pa0 = m0 / g->mr, pa1 = fast_cdiv(m0 + mc, g->mr);
  const int64_t pb0 = n0 / NR, pb1 = fast_cdiv(n0 + nc, NR);
  const int64_t ldc = GK_LDC;
  const int pstep = g->tiles ? 2 : 1; /* AMX: pairs of panels */
  double epi = 0.0;
  if (op->segs == 1) {
    for (int64_t pb = pb0; pb < pb1; pb += pstep)
      for (int64_t pa = pa0; pa < pa1; pa += pstep)
        tile_step(x, 0, pa, pb, c + (pa - pa0) * g->mr * ldc + (pb - pb0) * NR);
    const double te = x->epi_s ? fast_prof_clock() : 0.0;
    op->epi(op->ctx, 0, m0, n0, mc, nc, c, ldc);
    if (x->epi_s) epi += fast_prof_clock() - te;
    return epi;
  }
  for (int64_t pg = pb0; pg < pb1; pg += SEG_PANELS) {
    const int64_t pg1 = pg + SEG_PANELS < pb1 ? pg + SEG_PANELS : pb1, c0 = (pg - pb0) * NR;
    const int64_t cols = nc - c0 < SEG_PANELS * NR ? nc - c0 : SEG_PANELS * NR;
    for (int64_t seg = 0; seg < op->segs; ++seg) {
      for (int64_t pb = pg; pb < pg1; pb += pstep)
        for (int64_t pa = pa0; pa < pa1; pa += pstep)
          tile_step(x, seg, pa, pb, c + (pa - pa0) * g->mr * ldc + (pb - pb0) * NR);
      const double te = x->epi_s ? fast_prof_clock() : 0.0;
      op->epi(op->ctx, seg, m0, n0 + c0, mc, cols, c + c0, ldc);
      if (x->epi_s) epi += fast_prof_clock() - te;
    }
  }
  return epi;
}

/* Task i: the tiles of row block tm = i % tiles_m in the tile columns of group i / tiles_m
 * (cgroup columns of tiles; the tasks of a group go down its rows: same B panels). The group's
 * B panels stay in the L2 while each row block's A panels, read from memory once per group
 * rather than once per tile column, serve all its columns from the L2. */
static void tile_task(void *ctx, int64_t i, int tid) {
  const gctx *x = ctx;
  const gk_cfg *g = x->g;
  const int64_t tm = i % x->tiles_m, q = i / x->tiles_m;
  const int64_t tn1 = (q + 1) * x->cgroup < x->tiles_n ? (q + 1) * x->cgroup : x->tiles_n;
  double epi = 0.0;
  if (g->tiles) g->tiles_begin();
  for (int64_t tn = q * x->cgroup; tn < tn1; ++tn) epi += tile_one(x, tm, tn, x->scratch[tid]);
  if (g->tiles) g->tiles_end();
  if (x->epi_s) x->epi_s[tid] += epi;
}

/* Tile columns per task (tile_task): as many as keep their B panels (all segments) within 1 MB,
 * half a core's 2 MB L2 on the Xeons measured (the rest holds the row block's A panels, the
 * tile and its output rows), at least one. Beyond the L2 this machine's memory delivered about
 * 30 GB/s to one core, which an AMX tile pair outruns by 8x (a register-only tdpbssd loop did
 * 3.4 TMAC/s; from L1 2.8, from L2 2.2, from memory 0.47); one tile column per task read every
 * A panel from memory once per 128 output columns. Fewer columns where the tasks would not give
 * each of `threads` threads four. GEMMs alone, AMX, 1 and 2 threads: the tiles 3-25 % faster on
 * the backward's shapes (docs/cpu-backend.md); bits unchanged (int32 sums modulo 2^32, each
 * tile's epilogue as before). */
static int64_t tile_cgroup(const gk_cfg *g, int64_t segs, int64_t tiles_m, int64_t tiles_n,
                           int threads) {
  const size_t col = (size_t)segs * NCP * g->bpb; /* B panels of one tile column */
  int64_t n = col ? (int64_t)(((size_t)1 << 20) / col) : 1;
  n = n < 1 ? 1 : n > tiles_n ? tiles_n : n;
  while (n > 1 && tiles_m * fast_cdiv(tiles_n, n) < 4 * (int64_t)threads) --n;
  return n;
}

/* ---- the scalar level's setup (fast_level.c) ------------------------------------------------------ */

void fast_gemm_setup_scalar(gk_cfg *g, int qa, int qb) {
  (void)qa, (void)qb;
  g->kind = K_W16, g->simd = 0, g->mr = 4, g->kstep = 2, g->off = 0, g->kern = kern_scalar;
}

/* The panels of one packing task: four where the rows of A (columns of B) are contiguous and
 * the panels are bytes of 4 k per step (every SIMD kind but w16; A panels of 16 rows). */
static void pack_groups(gctx *x) {
  const fast_igemm_op *op = x->op;
  const gk_cfg *g = x->g;
  const int bytes4 = g->pack4 && g->kstep == 4;
  x->bgroup = bytes4 && op->b_sn == 1 && op->b_sk != 1 ? 4 : 1;
  x->agroup = bytes4 && g->mr == 16 && op->a_sm == 1 && op->a_sk != 1 ? 4 : 1;
  x->nbt = fast_cdiv(g->npb, x->bgroup);
}

int fast_igemm(const fast_config *cf, const fast_igemm_op *op) {
  gk_cfg g;
  memset(&g, 0, sizeof g);
  cf->k->gemm(&g, op->qa < 1 ? 1 : op->qa, op->qb < 1 ? 1 : op->qb);
  const size_t esz = g.kind == K_W16 ? 2 : 1;
  /* K blocks: the AVX2 kernels take 512 steps at a time (2048 k of u8, 1024 of w16), so a tile's
   * B panels (128 columns) stay within 256 KB, half the L2, and the kernel's calls (zeroing,
   * widening, storing its tile) come once per 512 steps; measured 1.03-1.18x faster than 64-step
   * blocks (docs/cpu-backend.md). The AMX kernel takes 512 too (32 of its 64-k tile blocks per
   * call, the tile accumulators stored once per call), and so does the 512-bit VNNI kernel: on
   * a Xeon without AMX, where the GEMMs run on it, the backward's GEMMs alone were 1-11 % faster
   * at 2 threads than with 64 steps (alternated in one process; at 1 thread 0-9 %; on the AMX
   * Xeon it made no difference beyond the noise). The 256-bit VNNI kernel keeps 64 (the same
   * within 1 % there). */
  g.kc = g.kind == K_VNNI256 ? 64 : 512;
  g.ksteps = fast_cdiv(op->seg_k, g.kstep);
  g.npa = fast_cdiv(op->M, g.mr);
  g.npb = fast_cdiv(op->N, NR);
  if (g.kind == K_AMX) { /* whole 64-k blocks, and pairs of panels */
    g.ksteps = fast_round_up(g.ksteps, 16);
    g.npa = fast_round_up(g.npa, 2);
    g.npb = fast_round_up(g.npb, 2);
  }
  g.apb = (size_t)(g.ksteps * g.mr * g.kstep) * esz;
  g.bpb = (size_t)(g.ksteps * NR * g.kstep) * esz;
  /* a small product runs on the caller alone (at the default bound, 2^24 multiply-adds: about
   * 16 us of AMX work, and as long as a small layer's other stages) */
  const int threads = fast_threads_for(cf, op->M * op->N * op->seg_k * op->segs / 128);
  gctx x;
  memset(&x, 0, sizeof x);
  x.op = op;
  x.g = &g;
  x.tiles_m = fast_cdiv(op->M, MC);
  x.tiles_n = fast_cdiv(op->N, NCP * NR);
  x.cgroup = tile_cgroup(&g, op->segs, x.tiles_m, x.tiles_n, threads);
  int rc = HOT_REF_ENOMEM;
  x.pa = fast_scratch((size_t)(op->segs * g.npa) * g.apb + 64);
  x.pb = fast_scratch((size_t)(op->segs * g.npb) * g.bpb + 64);
  x.corr = g.off ? malloc((size_t)(op->segs * g.npb * NR) * sizeof *x.corr) : NULL;
  x.scratch = calloc((size_t)threads, sizeof *x.scratch);
  if (!x.pa || !x.pb || (g.off && !x.corr) || !x.scratch) goto done;
  for (int t = 0; t < threads; ++t)
    if (!(x.scratch[t] = malloc((size_t)(MC * NCP * NR) * sizeof(int32_t)))) goto done;
  if (fast_prof_on && op->prof >= 0) x.epi_s = calloc((size_t)threads, sizeof *x.epi_s);
  fast_prof_t t0 = fast_prof_now();
  pack_groups(&x);
  /* AMX reads A's tiles in place where its rows run along k in whole 64-k blocks: every full
   * pair of 16-row panels (the last rows, if any, are packed with their zero fill) */
  if (g.kind == K_AMX && op->a_sk == 1 && op->seg_k % 64 == 0 && !fast_amx_pack_all)
    x.a_direct = op->M / 32 * 2;
  /* the packing on one thread when it moves fewer bytes than the config's inline bound: its tasks
   * are few and unequal (an A group, a B group), and a second thread reads its part across cores */
  const int64_t pack_bytes =
      op->segs * ((g.npa - x.a_direct) * (int64_t)g.apb + g.npb * (int64_t)g.bpb);
  const int pth = threads == 1 ? 1 : fast_threads_for(cf, pack_bytes);
  fast_parallel(op->segs * (fast_cdiv(g.npa - x.a_direct, x.agroup) + x.nbt), pth, pack_task, &x);
  t0 = fast_prof_add(op->prof, t0);
  fast_parallel(x.tiles_m * fast_cdiv(x.tiles_n, x.cgroup), threads, tile_task, &x);
  fast_prof_add(op->prof + 1, t0);
  if (x.epi_s) {
    for (int t = 0; t < threads; ++t) fast_prof_sum(op->prof + 2, x.epi_s[t]);
    free(x.epi_s);
  }
  rc = HOT_REF_OK;
done:
  if (x.scratch)
    for (int t = 0; t < threads; ++t) free(x.scratch[t]);
  free(x.scratch);
  fast_unscratch(x.pa);
  fast_unscratch(x.pb);
  free(x.corr);
  return rc;
}

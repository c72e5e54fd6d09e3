/* test_plan.c — the pure planner (gen/plan.c, gen/basis.c) against templates/CONTRACT.md:
 * HLA ranks and rows (section 4.2) for p = 2..1024 and keep in {10, 25, 40, 50}, the sequency
 * mapping, padding and layout rules (3.1, 4.1), GEMM paths per arch (7), K padding, ABC bytes (5),
 * illegal requests, and deterministic kernel names. No Lua: layers are described in C. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "basis.h"
#include "cost.h"
#include "plan.h"
#include "kernel_desc.h"

/* Bytes of the workspace piece the planned families declare for buffer b (0: none). */
static int64_t scratch_bytes(const hot_layer_plan *p, hot_lbuf b) {
  hot_scratch_layout L;
  char err[200];
  ck_assert_msg(kd_scratch_layout(p, &L, err, sizeof err) == 0, "%s", err);
  return L.size[b];
}

static hot_layer_plan g_plan, g_plan2; /* large: keep off the stack */

static int ilog2i(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

/* A layer with the recipe's defaults. */
static hot_layer_spec layer(hot_recipe r, int64_t in, int64_t out) {
  hot_layer_spec s;
  plan_spec_defaults(&s, r);
  snprintf(s.name, sizeof s.name, "t");
  s.line = 1;
  s.in_features = in;
  s.out_features = out;
  return s;
}

static void plan_ok(const hot_layer_spec *s, int64_t B, int64_t L, hot_recipe r, hot_arch a,
                    hot_layer_plan *p) {
  char err[256] = "";
  int rc = plan_layer(s, B, L, r, a, 0, p, err, sizeof err);
  ck_assert_msg(rc == 0, "plan_layer failed: %s", err);
}

/* Expects a planner error containing `want`. */
static void plan_err(const hot_layer_spec *s, int64_t B, int64_t L, hot_arch a, const char *want) {
  char err[256] = "";
  int rc = plan_layer(s, B, L, HOT_RECIPE_HOT, a, 0, &g_plan, err, sizeof err);
  printf("%s: %s\n", plan_arch_caps(a)->name, err);
  ck_assert_msg(rc != 0, "accepted; expected an error containing \"%s\"", want);
  ck_assert_msg(strstr(err, want) != NULL, "error \"%s\" lacks \"%s\"", err, want);
}

/* ---- sequency ------------------------------------------------------------------------------ */

static int popc(uint32_t v) {
  int c = 0;
  for (; v; v &= v - 1) ++c;
  return c;
}
/* Sign changes along natural row r of the Sylvester H_n: H[r][c] = (-1)^popcount(r & c). */
static uint32_t sign_changes(uint32_t r, uint32_t n) {
  uint32_t ch = 0;
  for (uint32_t c = 1; c < n; ++c) ch += (popc(r & c) & 1) != (popc(r & (c - 1)) & 1);
  return ch;
}

START_TEST(sequency_bijection) {
  static unsigned char seen[HOT_MAX_P];
  for (int lg = 0; lg <= 10; ++lg) {
    uint32_t n = 1u << lg;
    memset(seen, 0, sizeof seen);
    for (uint32_t r = 0; r < n; ++r) {
      uint32_t s = basis_row_to_seq(r, lg);
      ck_assert_uint_lt(s, n);
      ck_assert_msg(!seen[s], "n=%u: sequency %u twice", n, s);
      seen[s] = 1;
      ck_assert_uint_eq(s, sign_changes(r, n));
      ck_assert_uint_eq(basis_seq_to_row(s, lg), r);
    }
  }
}
END_TEST

/* ---- HLA ranks and rows ---------------------------------------------------------------- */

/* CONTRACT.md 4.2, written out again: the sequencies `tri` keeps, ascending. */
static int tri_expected(int p, int keep, uint32_t *seq) {
  int m2 = 1;
  while (m2 * 4 <= p) m2 *= 4;
  int m = (int)lround(sqrt((double)m2));
  int sf = (int)(0.1 * (-sqrt(2.0 * m * m * keep + 25.0) + 10.0 * m + 5.0));
  int r = 0;
  for (int i = 0; i < m; ++i) {
    int lo = i % 2 == 0 ? m * i : m * i + i + sf;
    int hi = i % 2 == 0 ? m * (i + 1) - (i + sf) : m * (i + 1);
    for (int s = lo; s < hi; ++s) seq[r++] = (uint32_t)s;
  }
  return r;
}

static void check_rows(const uint16_t *rows, int r, int p) {
  static unsigned char seen[HOT_MAX_P];
  memset(seen, 0, sizeof seen);
  int lg = ilog2i(p);
  for (int i = 0; i < r; ++i) {
    ck_assert_int_lt(rows[i], p);
    ck_assert_msg(!seen[rows[i]], "p=%d: row %u twice", p, rows[i]);
    seen[rows[i]] = 1;
    if (i > 0)
      ck_assert_msg(basis_row_to_seq(rows[i], lg) > basis_row_to_seq(rows[i - 1], lg),
                    "p=%d: rows not ascending in sequency at %d", p, i);
  }
}

START_TEST(tri_ranks_and_rows) {
  static uint16_t rows[HOT_MAX_P];
  static uint32_t seq[HOT_MAX_P];
  const int keeps[] = {10, 25, 40, 50};
  for (int p = 2; p <= 1024; p *= 2) {
    int prev = 0;
    printf("p=%4d:", p);
    for (int k = 0; k < 4; ++k) {
      int r = basis_select(HOT_SEL_TRI, p, keeps[k], 0, rows);
      int want = tri_expected(p, keeps[k], seq);
      printf(" keep %d -> r %d", keeps[k], r);
      ck_assert_int_eq(r, want);
      ck_assert_int_ge(r, 1);
      ck_assert_int_ge(r, prev); /* more keep, no fewer rows */
      prev = r;
      check_rows(rows, r, p);
      for (int i = 0; i < r; ++i) ck_assert_uint_eq(rows[i], basis_seq_to_row(seq[i], ilog2i(p)));
      /* The planner carries the same rows. */
      hot_layer_spec s = layer(HOT_RECIPE_HOT, 32, 32);
      s.hla.block = p;
      s.hla.keep = keeps[k];
      plan_ok(&s, 2, p, HOT_RECIPE_HOT, HOT_ARCH_SM80, &g_plan);
      ck_assert_int_eq(g_plan.hla.rank, r);
      ck_assert(memcmp(g_plan.hla.rows, rows, (size_t)r * sizeof *rows) == 0);
    }
    printf("\n");
  }
  /* Figures of CONTRACT.md 4.2 at keep 50: r = m(m+1)/2. */
  const int ps[] = {16, 32, 64, 128, 256, 1024}, rs[] = {10, 10, 36, 36, 136, 528};
  for (int i = 0; i < 6; ++i) ck_assert_int_eq(basis_select(HOT_SEL_TRI, ps[i], 50, 0, rows), rs[i]);
  const uint16_t p16[] = {0, 8, 12, 4, 14, 10, 2, 3, 11, 1};
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 16, 50, 0, rows), 10);
  for (int i = 0; i < 10; ++i) ck_assert_uint_eq(rows[i], p16[i]);
  const uint32_t s16[] = {0, 1, 2, 3, 5, 6, 7, 8, 9, 15};
  for (int i = 0; i < 10; ++i) ck_assert_uint_eq(basis_row_to_seq(rows[i], 4), s16[i]);
  /* Invalid requests. */
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 16, 51, 0, rows), -1);
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 16, 0, 0, rows), -1);
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 24, 50, 0, rows), -1);
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 2048, 50, 0, rows), -1);
  ck_assert_int_eq(basis_select(HOT_SEL_TRI, 1, 50, 0, rows), -1);
}
END_TEST

START_TEST(prefix_and_full) {
  static uint16_t rows[HOT_MAX_P];
  for (int p = 2; p <= 1024; p *= 2) {
    int lg = ilog2i(p);
    ck_assert_int_eq(basis_select(HOT_SEL_FULL, p, 0, 0, rows), p);
    check_rows(rows, p, p);
    for (int i = 0; i < p; ++i) ck_assert_uint_eq(basis_row_to_seq(rows[i], lg), (uint32_t)i);
    const int ranks[] = {1, p / 4 ? p / 4 : 1, p / 2, p};
    for (int k = 0; k < 4; ++k) {
      ck_assert_int_eq(basis_select(HOT_SEL_PREFIX, p, 0, ranks[k], rows), ranks[k]);
      check_rows(rows, ranks[k], p);
      for (int i = 0; i < ranks[k]; ++i) ck_assert_uint_eq(basis_row_to_seq(rows[i], lg), (uint32_t)i);
    }
    ck_assert_int_eq(basis_select(HOT_SEL_PREFIX, p, 0, p + 1, rows), -1);
    ck_assert_int_eq(basis_select(HOT_SEL_PREFIX, p, 0, 0, rows), -1);
  }
  /* The planner: prefix rank > block is an error, full keeps p rows. */
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 64, 64);
  s.hla.block = 16;
  s.hla.selection = HOT_SEL_PREFIX;
  s.hla.rank = 32;
  plan_err(&s, 2, 64, HOT_ARCH_SM90, "hla.rank must be in [1, 16] for hla.block 16 (got 32)");
  s.hla.rank = 16;
  plan_ok(&s, 2, 64, HOT_RECIPE_HOT, HOT_ARCH_SM90, &g_plan);
  ck_assert_int_eq(g_plan.hla.rank, 16);
  s.hla.selection = HOT_SEL_FULL;
  plan_ok(&s, 2, 64, HOT_RECIPE_HOT, HOT_ARCH_SM90, &g_plan);
  ck_assert_int_eq(g_plan.hla.rank, 16);
}
END_TEST

/* ---- padding and layouts -------------------------------------------------------------------- */

START_TEST(padding_rules) {
  hot_layer_plan *p = &g_plan;
  /* HQ: O = 100, b = 16 -> o_pad 112; the g_x GEMM's K is o_pad. */
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 64, 100);
  plan_ok(&s, 2, 64, HOT_RECIPE_HOT, HOT_ARCH_SM80, p);
  ck_assert_int_eq(p->hq.block, 16);
  ck_assert_int_eq(p->hq.o_pad, 112);
  ck_assert_int_eq(p->hq.gemm.k, 112);
  ck_assert_int_eq(p->hq.gemm.m, p->T);
  ck_assert_int_eq(p->hq.gemm.n, 64);
  /* HLA, sample layout: L = 197, p = 64 -> each sample padded to 256 = 4 blocks. */
  s = layer(HOT_RECIPE_PAPER, 768, 768);
  plan_ok(&s, 3, 197, HOT_RECIPE_PAPER, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.layout, HOT_LAYOUT_SAMPLE);
  ck_assert_int_eq(p->hla.block, 64);
  ck_assert_int_eq(p->hla.seg_len, 256);
  ck_assert_int_eq(p->hla.segments, 3);
  ck_assert_int_eq(p->hla.blocks, 12);
  ck_assert_int_eq(p->hla.rank, 36);
  ck_assert_int_eq(p->hla.k, 12 * 36);
  ck_assert_int_eq(p->hla.gemm.k, 12 * 36);
  ck_assert_int_eq(p->hla.gemm.m, 768);
  ck_assert_int_eq(p->T, 3 * 197);
  /* flat: T = 591 tokens cut across samples, the tail padded: 640 = 10 blocks. */
  s.hla.layout = HOT_LAYOUT_FLAT;
  plan_ok(&s, 3, 197, HOT_RECIPE_PAPER, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.layout, HOT_LAYOUT_FLAT);
  ck_assert_int_eq(p->hla.segments, 1);
  ck_assert_int_eq(p->hla.seg_len, 640);
  ck_assert_int_eq(p->hla.blocks, 10);
  /* auto (recipe hot): flat when p does not divide L, sample when it does. */
  s = layer(HOT_RECIPE_HOT, 768, 768);
  ck_assert_int_eq(s.hla.layout, HOT_LAYOUT_AUTO);
  plan_ok(&s, 3, 197, HOT_RECIPE_HOT, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.layout, HOT_LAYOUT_FLAT);
  ck_assert_int_eq(p->hla.seg_len, 640);
  plan_ok(&s, 3, 256, HOT_RECIPE_HOT, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.layout, HOT_LAYOUT_SAMPLE);
  ck_assert_int_eq(p->hla.seg_len, 256);
  ck_assert_int_eq(p->hla.segments, 3);
  ck_assert_int_eq(p->hla.blocks, 12);
  /* paper_code on L = 197 (prime): p = 1, r = 1, HLA is the identity. */
  s = layer(HOT_RECIPE_PAPER_CODE, 768, 2304);
  plan_ok(&s, 4, 197, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM86, p);
  ck_assert_int_eq(p->hla.block, 1);
  ck_assert_int_eq(p->hla.rank, 1);
  ck_assert_uint_eq(p->hla.rows[0], 0);
  ck_assert_int_eq(p->hla.k, 4 * 197);
  ck_assert_int_eq(p->hla.blocks, 4 * 197);
  /* paper_code: p = largest power of two dividing L, as the authors' code, without a cap: up to
   * the kernels' 1024 it is planned; beyond it (L = 2048: p = 2048; L = 4096: p = 4096) the
   * layer is refused with the reason, never planned with another p. g^ has 4 bits there. */
  ck_assert_int_eq(s.hla.g.bits, 4);
  plan_ok(&s, 4, 196, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM86, p);
  ck_assert_int_eq(p->hla.block, 4);
  ck_assert_int_eq(p->hla.g.bits, 4);
  ck_assert_ptr_nonnull(strstr(p->kernels[plan_kernel_index(p, HOT_K_HLA_G)].name, "_k4"));
  plan_ok(&s, 4, 256, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM86, p);
  ck_assert_int_eq(p->hla.block, 256);
  ck_assert_int_eq(p->hla.rank, 136);
  plan_ok(&s, 1, 3072, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM86, p); /* 3072 = 3 * 1024 */
  ck_assert_int_eq(p->hla.block, 1024);
  ck_assert_int_eq(p->hla.rank, 528);
  {
    const int64_t Ls[] = {2048, 4096, 6144};
    const char *want[] = {"gives p = 2048 for L = 2048, beyond the HLA kernels' p <= 1024",
                          "gives p = 4096 for L = 4096, beyond the HLA kernels' p <= 1024",
                          "gives p = 2048 for L = 6144"};
    for (int i = 0; i < 3; ++i) {
      char e2[512] = "";
      ck_assert_int_ne(plan_layer(&s, 1, Ls[i], HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM86, 0, p, e2,
                                  sizeof e2), 0);
      ck_assert_msg(strstr(e2, want[i]) && strstr(e2, "hla.block = 0 (the authors' rule"), "%s",
                    e2);
    }
  }
  /* the 8-bit g^ of the other recipes and the 4-bit one of paper_code never share a binary */
  {
    hot_layer_spec h = layer(HOT_RECIPE_HOT, 768, 2304);
    hot_layer_plan ph;
    plan_ok(&h, 4, 256, HOT_RECIPE_HOT, HOT_ARCH_SM86, &ph);
    ck_assert_ptr_nonnull(strstr(ph.kernels[plan_kernel_index(&ph, HOT_K_HLA_G)].name, "_k8"));
    ck_assert_ptr_nonnull(strstr(ph.kernels[plan_kernel_index(&ph, HOT_K_ABC_X)].name, "_k8"));
  }
  /* paper_code, pad = 0: b shrinks to the largest power of two (<= b) dividing O. */
  const int64_t os[] = {2304, 100, 96, 97, 24};
  const int bs[] = {16, 4, 16, 1, 8};
  for (int i = 0; i < 5; ++i) {
    s = layer(HOT_RECIPE_PAPER_CODE, 64, os[i]);
    plan_ok(&s, 2, 64, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, p);
    ck_assert_int_eq(p->hq.block, bs[i]);
    ck_assert_int_eq(p->hq.o_pad, os[i]);
  }
  /* No padding with a p that does not divide L is an error, never a silent change. */
  s = layer(HOT_RECIPE_PAPER_CODE, 64, 64);
  s.hla.block = 64;
  char err[256] = "";
  ck_assert_int_ne(plan_layer(&s, 2, 197, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, 0, p, err, sizeof err), 0);
  ck_assert_ptr_nonnull(strstr(err, "hla.block 64 does not divide the sample length 197 and padding is off"));
  s.hla.layout = HOT_LAYOUT_FLAT; /* T = 394 is not a multiple of 64 either */
  s.hla.g.gran = s.hla.x.gran = HOT_GRAN_TENSOR; /* flat blocks mix samples: no per-sample scales */
  ck_assert_int_ne(plan_layer(&s, 2, 197, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, 0, p, err, sizeof err), 0);
  ck_assert_ptr_nonnull(strstr(err, "batch length 394"));
  plan_ok(&s, 64, 197, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, p); /* T = 12608 = 197 * 64 */
  ck_assert_int_eq(p->hla.seg_len, 64 * 197);
}
END_TEST

/* ---- GEMM paths, K padding ------------------------------------------------------------------ */

START_TEST(gemm_paths_per_arch) {
  hot_layer_plan *p = &g_plan;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
    ck_assert_ptr_nonnull(c);
    hot_arch back;
    ck_assert_int_eq(plan_arch_parse(c->name, &back), 0);
    ck_assert_int_eq(back, a);
    hot_layer_spec s = layer(HOT_RECIPE_HOT, 768, 3072);
    plan_ok(&s, 32, 197, HOT_RECIPE_HOT, (hot_arch)a, p);
    int s4 = a == HOT_ARCH_SM80 || a == HOT_ARCH_SM86 || a == HOT_ARCH_SM89;
    printf("%s: g_x %s/%s, g_w %s/%s\n", c->name, plan_gemm_path_name(p->hq.gemm.path),
           plan_codes_name(p->hq.codes), plan_gemm_path_name(p->hla.gemm.path),
           plan_codes_name(p->hla.gemm.codes));
    const int wg = a == HOT_ARCH_SM90A;
    const hot_gemm_path p8 = wg ? HOT_GEMM_WGMMA_S8 : HOT_GEMM_MMA_S8;
    ck_assert_int_eq(p->hq.gemm.path, s4 ? HOT_GEMM_MMA_S4 : p8);
    ck_assert_int_eq(p->hq.codes, s4 ? HOT_CODES_S4_PACKED : HOT_CODES_S8);
    ck_assert_int_eq(p->hq.gemm.codes, p->hq.codes);
    ck_assert_int_eq(p->hla.gemm.path, p8);
    ck_assert_int_eq(p->hla.gemm.codes, HOT_CODES_S8);
    ck_assert_int_eq(p->hq.gemm.tile_k % (s4 ? 64 : 32), 0);
    const char *gt = wg ? "templates/gemm_wgmma.cu" : "templates/gemm_int.cu";
    ck_assert_str_eq(p->kernels[plan_kernel_index(p, HOT_K_GEMM_GX)].templ, gt);
    ck_assert_str_eq(p->kernels[plan_kernel_index(p, HOT_K_GEMM_GW)].templ, gt);
    /* 8-bit HQ: INT8 everywhere; one 8-bit operand is enough. */
    s.hq.g.bits = 8;
    plan_ok(&s, 32, 197, HOT_RECIPE_HOT, (hot_arch)a, p);
    ck_assert_int_eq(p->hq.gemm.path, p8);
    ck_assert_int_eq(p->hq.codes, HOT_CODES_S8);
    s.hq.g.bits = 4;
    s.hq.w.bits = 8;
    plan_ok(&s, 32, 197, HOT_RECIPE_HOT, (hot_arch)a, p);
    ck_assert_int_eq(p->hq.gemm.path, p8);
  }
  hot_arch x;
  ck_assert_int_eq(plan_arch_parse("sm_75", &x), -1);
  ck_assert_int_eq(plan_arch_parse(NULL, &x), -1);
  ck_assert_ptr_null(plan_arch_caps(HOT_ARCH_COUNT));
  ck_assert_int_eq(plan_arch_caps(HOT_ARCH_SM90A)->wgmma, 1);
  ck_assert_int_eq(plan_arch_caps(HOT_ARCH_SM90)->int4_mma, 0);
}
END_TEST

/* The arch table's queries: the list every message prints, the device match of the runtime. */
START_TEST(arch_table_queries) {
  char buf[128], want[128] = "";
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    strcat(want, a ? "|" : "");
    strcat(want, plan_arch_caps((hot_arch)a)->name);
    hot_arch back;
    ck_assert_int_eq(plan_arch_parse(plan_arch_caps((hot_arch)a)->name, &back), 0);
    ck_assert_int_eq(back, a);
  }
  ck_assert_str_eq(plan_arch_list(buf, sizeof buf, "|"), want);
  ck_assert_uint_lt(strlen(plan_arch_list(buf, 8, NULL)), 8); /* cut short, terminated */
  /* Every portable row is the default of its own compute capability and runs on later minors;
   * an arch-specific row is nobody's default (its capability may have no default at all:
   * sm_120a, whose 12.x devices stay unsupported) and runs on exactly its own. */
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
    hot_arch d = HOT_ARCH_COUNT;
    const int found = plan_arch_for_device(c->sm / 10, c->sm % 10, &d) == 0;
    ck_assert(found || c->arch_specific);
    ck_assert_int_eq(found && d == (hot_arch)a, !c->arch_specific);
    ck_assert(plan_arch_runs_on((hot_arch)a, c->sm / 10, c->sm % 10));
    ck_assert_int_eq(plan_arch_runs_on((hot_arch)a, c->sm / 10, c->sm % 10 + 1), !c->arch_specific);
    ck_assert(!plan_arch_runs_on((hot_arch)a, c->sm / 10 + 1, 0));
  }
  hot_arch d;
  ck_assert_int_eq(plan_arch_for_device(8, 7, &d), 0);
  ck_assert_int_eq(d, HOT_ARCH_SM86);
  ck_assert_int_eq(plan_arch_for_device(7, 5, &d), -1);
  ck_assert_int_eq(plan_arch_for_device(10, 0, &d), -1);
}
END_TEST

/* The GEMM-path table chooses what the planner's rule was before the table: wgmma where the arch
 * has it (the TMA path when warps_n asks for it), else INT4 mma.sync where the tensor cores have
 * it and the codes fit 4 bits, else INT8 mma.sync; and every row names its template, emulator and
 * a format that its MMA kind takes. */
START_TEST(gemm_path_table) {
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
    for (int wn = 0; wn <= 8; ++wn)
      for (int bits = 2; bits <= 8; ++bits) {
        const hot_gemm_path want = c->wgmma ? (wn == 2 ? HOT_GEMM_TMA_S8 : HOT_GEMM_WGMMA_S8)
                                   : c->int4_mma && bits <= 4 ? HOT_GEMM_MMA_S4 : HOT_GEMM_MMA_S8;
        ck_assert_int_eq(plan_gemm_path_choose(c, wn, bits), want);
      }
  }
  for (int i = 0; i < HOT_GEMM_PATH_COUNT; ++i) {
    const hot_gemm_path_info *g = plan_gemm_path_info((hot_gemm_path)i);
    ck_assert_int_eq(g->path, i);
    ck_assert(plan_codes_info(g->codes)->mma & g->mma);
    /* a path without a template (recipe nvfp4's block-scaled GEMMs) runs on no arch */
    ck_assert_int_eq(g->templ == NULL, g->emulator == NULL);
    for (int a = 0; a < HOT_ARCH_COUNT && !g->templ; ++a)
      ck_assert(!plan_gemm_path_available(g, plan_arch_caps((hot_arch)a)));
    hot_gemm_path back;
    ck_assert_int_eq(plan_gemm_path_parse(g->name, &back), 0);
    ck_assert_int_eq(back, i);
  }
  hot_gemm_path x;
  ck_assert_int_eq(plan_gemm_path_parse("nope", &x), -1);
  ck_assert_ptr_null(plan_gemm_path_info(HOT_GEMM_PATH_COUNT));
  ck_assert_ptr_null(plan_codes_info(HOT_CODES_COUNT));
  for (int i = 0; i < HOT_CODES_COUNT; ++i)
    ck_assert_int_eq(plan_codes_info((hot_codes)i)->codes, i);
}
END_TEST

/* The GPU path of a block-scaled GEMM per arch: NVFP4 takes mma_nvfp4 (templates/gemm_nvfp4.cu)
 * and MXFP8 mma_mxfp8 (templates/gemm_mxfp8.cu) exactly on the archs with the block-scaled
 * mma.sync (sm_120a), every other arch none; a path the chooser names has a template and an
 * emulator, takes the format asked and is available. */
START_TEST(block_paths_per_arch) {
  int bs_archs = 0;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
    const hot_gemm_path nv = plan_block_path_choose(c, HOT_CODES_NVFP4);
    const hot_gemm_path mx = plan_block_path_choose(c, HOT_CODES_MXFP8);
    ck_assert_int_eq(nv, c->mma_sync_nvfp4 ? HOT_GEMM_MMA_NVFP4 : HOT_GEMM_PATH_COUNT);
    ck_assert_int_eq(mx, c->mma_sync_nvfp4 ? HOT_GEMM_MMA_MXFP8 : HOT_GEMM_PATH_COUNT);
    if (nv == HOT_GEMM_PATH_COUNT) continue;
    const hot_gemm_path_info *g = plan_gemm_path_info(nv), *h = plan_gemm_path_info(mx);
    ck_assert(g->templ && g->emulator && g->codes == HOT_CODES_NVFP4);
    ck_assert(h->templ && h->emulator && h->codes == HOT_CODES_MXFP8);
    ck_assert(plan_gemm_path_available(g, c) && plan_gemm_path_available(h, c) && c->arch_specific);
    printf("%s: NVFP4 GEMM path %s (%s), MXFP8 GEMM path %s (%s)\n", c->name, g->name, g->templ,
           h->name, h->templ);
    ++bs_archs;
  }
  ck_assert_int_eq(bs_archs, 1);
  ck_assert_int_eq(plan_block_path_choose(plan_arch_caps(HOT_ARCH_SM120A), HOT_CODES_NVFP4),
                   HOT_GEMM_MMA_NVFP4);
  ck_assert_int_eq(plan_block_path_choose(plan_arch_caps(HOT_ARCH_SM120A), HOT_CODES_MXFP8),
                   HOT_GEMM_MMA_MXFP8);
  /* the INT chooser never takes a block format */
  ck_assert_int_eq(plan_gemm_path_choose(plan_arch_caps(HOT_ARCH_SM120A), 0, 4), HOT_GEMM_MMA_S8);
}
END_TEST

static void check_gemm(const hot_gemm_plan *g) {
  ck_assert_int_eq(g->k_pad % g->tile_k, 0);
  ck_assert_int_ge(g->k_pad, g->k);
  ck_assert_int_lt(g->k_pad, g->k + g->tile_k);
  ck_assert_int_eq(g->tile_m % (16 * g->warps_m), 0);
  ck_assert_int_eq(g->tile_n % (8 * g->warps_n), 0);
  ck_assert_uint_eq(g->smem, plan_gemm_smem(g->path, g->codes, g->tile_m, g->tile_n, g->tile_k, g->stages));
}

START_TEST(k_pad_multiple_of_tile_k) {
  const int64_t shapes[][4] = {{32, 197, 768, 2304}, {32, 197, 3072, 768}, {1, 4096, 11008, 4096},
                               {3, 100, 40, 100},    {1, 1, 8, 8},          {7, 13, 97, 33}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i)
    for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
      hot_layer_spec s = layer(HOT_RECIPE_HOT, shapes[i][2], shapes[i][3]);
      plan_ok(&s, shapes[i][0], shapes[i][1], HOT_RECIPE_HOT, (hot_arch)a, &g_plan);
      check_gemm(&g_plan.hq.gemm);
      check_gemm(&g_plan.hla.gemm);
      ck_assert_uint_le(g_plan.hq.gemm.smem, (unsigned)plan_arch_caps((hot_arch)a)->max_smem_optin);
      /* explicit tile_k (64x64 tiles: 128x128x128 with 3 stages exceeds sm_86's shared memory) */
      s.tile_gw = (hot_tile){64, 64, 128, 0, 0, 0};
      plan_ok(&s, shapes[i][0], shapes[i][1], HOT_RECIPE_HOT, (hot_arch)a, &g_plan);
      ck_assert_int_eq(g_plan.hla.gemm.tile_k, 128);
      check_gemm(&g_plan.hla.gemm);
    }
}
END_TEST

/* ---- ABC bytes ------------------------------------------------------------------------------ */

START_TEST(abc_bytes) {
  hot_layer_plan *p = &g_plan;
  static uint16_t rows[HOT_MAX_P];
  int checked = 0;
  /* Blocks divide L evenly; every selection with r/p <= 1/2 saves at least 7/8 of fp32. */
  for (int pb = 2; pb <= 1024; pb *= 2)
    for (int sel = 0; sel < 3; ++sel) {
      hot_layer_spec s = layer(HOT_RECIPE_HOT, 96, 64);
      s.hla.block = pb;
      s.hla.selection = (hot_selection)sel;
      s.hla.keep = 25;
      s.hla.rank = pb / 2;
      plan_ok(&s, 2, 2 * pb, HOT_RECIPE_HOT, HOT_ARCH_SM90, p);
      ck_assert_int_eq(p->abc.enabled, 1);
      ck_assert_int_eq(p->abc.fp32_bytes, p->T * 96 * 4);
      ck_assert_int_eq(p->abc.bf16_bytes, p->T * 96 * 2);
      /* int8 codes in rows of K (unpadded), 16-byte alignment, + one fp32 scale per sample
       * (the hot recipe: x^ per sample under layout sample) */
      ck_assert_int_eq(p->hla.groups, 2);
      ck_assert_int_eq(p->abc.bytes, (p->hla.k * 96 + 15) / 16 * 16 + 2 * 4);
      ck_assert_int_le(p->abc.bytes, plan_abc_method_bytes(p) + 15);
      ck_assert_int_eq(p->hla.k * pb, p->T * p->hla.rank);
      if (2 * p->hla.rank <= pb) {
        ck_assert_int_le(8 * p->hla.k * 96, p->abc.fp32_bytes);
        ++checked;
      }
      (void)rows;
    }
  ck_assert_int_ge(checked, 15);
  /* ViT-B fc1 (hot recipe, flat layout): 36/64 rows of 6304 -> 6336 padded tokens. */
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 768, 3072);
  plan_ok(&s, 32, 197, HOT_RECIPE_HOT, HOT_ARCH_SM80, p);
  ck_assert_int_eq(p->hla.k, (6336 / 64) * 36);                 /* K = 3564 */
  ck_assert_int_eq(p->hla.gemm.k_pad, 3584);                     /* rows the GEMM reads */
  ck_assert_int_eq(p->abc.bytes, 3564 * 768 + 4);                /* rows the save keeps */
  ck_assert_int_eq(plan_abc_method_bytes(p), 3564 * 768 + 4);
  ck_assert_double_lt((double)p->abc.bytes / (double)p->abc.fp32_bytes, 0.15);
  /* ABC off: the fp32 buffer stays. */
  s.abc.enabled = 0;
  plan_ok(&s, 32, 197, HOT_RECIPE_HOT, HOT_ARCH_SM80, p);
  ck_assert_int_eq(p->abc.enabled, 0);
  ck_assert_int_eq(p->abc.bytes, p->abc.fp32_bytes);
  ck_assert_int_eq(plan_kernel_index(p, HOT_K_ABC_X), -1);
}
END_TEST

/* ---- HLA scale groups (per-sample scales of g^ and x^) -------------------------------------- */

START_TEST(hla_scale_groups) {
  hot_layer_plan *p = &g_plan;
  /* per sample under layout sample: one group per sample, each padded to the K tile */
  hot_layer_spec s = layer(HOT_RECIPE_PAPER, 96, 64);
  s.hla.g.gran = s.hla.x.gran = HOT_GRAN_SAMPLE;
  for (int a = HOT_ARCH_SM80; a <= HOT_ARCH_SM90A; ++a) {
    plan_ok(&s, 3, 100, HOT_RECIPE_PAPER, (hot_arch)a, p); /* L_p = 128: 2 blocks x 36 rows */
    const hot_gemm_plan *g = &p->hla.gemm;
    ck_assert_int_eq(p->hla.groups, 3);
    ck_assert_int_eq(p->hla.group_k, 72);
    ck_assert_int_eq(p->hla.k, 216);
    ck_assert_int_eq(g->segmented, 1);
    ck_assert_int_eq(p->hla.group_k_pad, g->seg_k_pad);
    ck_assert_int_eq(g->seg_k_pad % g->tile_k, 0);
    ck_assert_int_ge(g->seg_k_pad, 72);
    ck_assert_int_lt(g->seg_k_pad - 72, g->tile_k);
    ck_assert_int_eq(g->k_pad, 3 * g->seg_k_pad);
    /* the saved buffer: unpadded codes (K = 3 * 72), then one scale per group; the backward
     * unpacks them into the segmented GEMM's layout */
    ck_assert_int_eq(p->abc.bytes, 3 * 72 * 96 + 3 * 4);
    ck_assert_int_eq(plan_saved_unpacked(p), 1);
    ck_assert_int_ge(plan_kernel_index(p, HOT_K_ABC_UNPACK), 0);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_Q_HG), 64 * g->k_pad);
    int k = plan_kernel_index(p, HOT_K_GEMM_GW);
    ck_assert_ptr_nonnull(strstr(p->kernels[k].name, "_seg"));
    k = plan_kernel_index(p, HOT_K_GEMM_GX);
    ck_assert_ptr_null(strstr(p->kernels[k].name, "_seg"));
    ck_assert_int_eq(p->hq.gemm.segmented, 0);
  }
  /* only one of the two per sample: still one group per sample (the other scale repeated) */
  s.hla.x.gran = HOT_GRAN_TENSOR;
  plan_ok(&s, 3, 100, HOT_RECIPE_PAPER, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.groups, 3);
  /* per tensor: one group, the unsegmented layout and kernel of before */
  s.hla.g.gran = HOT_GRAN_TENSOR;
  plan_ok(&s, 3, 100, HOT_RECIPE_PAPER, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.groups, 1);
  ck_assert_int_eq(p->hla.group_k, p->hla.k);
  ck_assert_int_eq(p->hla.group_k_pad, p->hla.gemm.k_pad);
  ck_assert_int_eq(p->hla.gemm.segmented, 0);
  ck_assert_ptr_null(strstr(p->kernels[plan_kernel_index(p, HOT_K_GEMM_GW)].name, "_seg"));
  /* B = 1: per sample is one group (per tensor bit for bit), no segments */
  s.hla.g.gran = s.hla.x.gran = HOT_GRAN_SAMPLE;
  plan_ok(&s, 1, 100, HOT_RECIPE_PAPER, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.groups, 1);
  ck_assert_int_eq(p->hla.gemm.segmented, 0);
  /* auto: sample under layout sample, tensor under flat */
  s.hla.g.gran = s.hla.x.gran = HOT_GRAN_AUTO;
  s.hla.layout = HOT_LAYOUT_AUTO;
  plan_ok(&s, 4, 128, HOT_RECIPE_HOT, HOT_ARCH_SM80, p); /* 64 | 128: sample */
  ck_assert_int_eq(p->hla.layout, HOT_LAYOUT_SAMPLE);
  ck_assert_int_eq(p->hla.g.gran, HOT_GRAN_SAMPLE);
  ck_assert_int_eq(p->hla.x.gran, HOT_GRAN_SAMPLE);
  ck_assert_int_eq(p->hla.groups, 4);
  plan_ok(&s, 4, 197, HOT_RECIPE_HOT, HOT_ARCH_SM80, p); /* ViT's L: flat */
  ck_assert_int_eq(p->hla.layout, HOT_LAYOUT_FLAT);
  ck_assert_int_eq(p->hla.g.gran, HOT_GRAN_TENSOR);
  ck_assert_int_eq(p->hla.x.gran, HOT_GRAN_TENSOR);
  ck_assert_int_eq(p->hla.groups, 1);
  /* refused: per sample under flat with B > 1, per token, junk values */
  s.hla.layout = HOT_LAYOUT_FLAT;
  s.hla.x.gran = HOT_GRAN_SAMPLE;
  plan_err(&s, 4, 197, HOT_ARCH_SM80, "hla.scale = sample (x^) needs hla.layout = sample");
  plan_ok(&s, 1, 197, HOT_RECIPE_HOT, HOT_ARCH_SM80, p); /* one sample: fine, one group */
  ck_assert_int_eq(p->hla.groups, 1);
  s.hla.x.gran = HOT_GRAN_ROW;
  plan_err(&s, 4, 256, HOT_ARCH_SM80, "cannot be per token");
  s.hla.x.gran = (hot_gran)9;
  plan_err(&s, 4, 256, HOT_ARCH_SM80, "must be tensor, sample or auto");
  /* SAWB of x^ per sample: partials for every group's chunks */
  s = layer(HOT_RECIPE_PAPER, 96, 64);
  s.hla.g.gran = s.hla.x.gran = HOT_GRAN_SAMPLE;
  s.hla.x.rule = HOT_RULE_SAWB;
  plan_ok(&s, 5, 1000, HOT_RECIPE_PAPER, HOT_ARCH_SM90, p);
  ck_assert_int_eq(plan_sawb_groups(p, HOT_K_SAWB_X), 5);
  ck_assert_int_eq(plan_sawb_groups(p, HOT_K_SAWB_W), 1);
  const int64_t per_group = p->hla.group_k * 96;
  ck_assert_int_ge(scratch_bytes(p, HOT_LB_PARTIALS), 5 * 2 * ((per_group + 1023) / 1024) * 8);
  /* the paper_code recipe scales g^ and x^ per sample */
  s = layer(HOT_RECIPE_PAPER_CODE, 96, 64);
  plan_ok(&s, 2, 256, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM90, p);
  ck_assert_int_eq(p->hla.g.gran, HOT_GRAN_SAMPLE);
  ck_assert_int_eq(p->hla.x.gran, HOT_GRAN_SAMPLE);
  ck_assert_int_eq(p->hla.groups, 2);
}
END_TEST

/* ---- illegal requests ---------------------------------------------------------------------- */

START_TEST(illegal_requests) {
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 1024, 1024);
  /* K = 4096 blocks x 36 = 147456 8-bit products may exceed int32 in the worst case: accepted,
   * the sums wrap on every path alike (CONTRACT 13). */
  plan_ok(&s, 64, 4096, HOT_RECIPE_HOT, HOT_ARCH_SM90, &g_plan);
  ck_assert_int_eq(g_plan.hla.k, 147456);
  /* A tile that fits sm_80's and sm_90's shared memory but not sm_86's / sm_89's. */
  s.tile_gw = (hot_tile){256, 128, 128, 2, 2, 3};
  plan_ok(&s, 8, 256, HOT_RECIPE_HOT, HOT_ARCH_SM80, &g_plan);
  plan_ok(&s, 8, 256, HOT_RECIPE_HOT, HOT_ARCH_SM90, &g_plan);
  char want[160];
  snprintf(want, sizeof want, "tile_gw: tile 256x128x128 with 3 stages needs %u bytes of shared memory, sm_86 allows 101376",
           plan_gemm_smem(HOT_GEMM_MMA_S8, HOT_CODES_S8, 256, 128, 128, 3));
  ck_assert_uint_gt(plan_gemm_smem(HOT_GEMM_MMA_S8, HOT_CODES_S8, 256, 128, 128, 3), 101376);
  plan_err(&s, 8, 256, HOT_ARCH_SM86, want);
  plan_err(&s, 8, 256, HOT_ARCH_SM89, "sm_89 allows 101376");
  /* Scale granularities: g' any of the four (sample plans the same kernels as tensor), w' only
   * per tensor, unknown values refused with the field's name. */
  s = layer(HOT_RECIPE_HOT, 256, 256);
  s.hq.g.gran = HOT_GRAN_SAMPLE;
  plan_ok(&s, 4, 64, HOT_RECIPE_HOT, HOT_ARCH_SM80, &g_plan);
  ck_assert_int_eq(g_plan.hq.g.gran, HOT_GRAN_SAMPLE);
  ck_assert_int_eq(plan_kernel_index(&g_plan, HOT_K_LQS), -1);
  ck_assert_str_eq(plan_gran_name(HOT_GRAN_SAMPLE), "sample");
  s.hq.g.gran = (hot_gran)4;
  plan_err(&s, 4, 64, HOT_ARCH_SM80, "hq.g.gran (scale of g') must be tensor, token, auto or sample (got 4)");
  s.hq.g.gran = HOT_GRAN_TENSOR;
  s.hq.w.gran = HOT_GRAN_SAMPLE;
  plan_err(&s, 4, 64, HOT_ARCH_SM80, "hq.w.gran (scale of w') must be tensor (got sample)");
  /* Warps that do not divide the tile. */
  s = layer(HOT_RECIPE_HOT, 256, 256);
  s.tile_gx = (hot_tile){64, 64, 0, 8, 1, 0};
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "tile_gx: tile 64x64 does not split into 8x1 warps of mma tiles");
  s.tile_gx = (hot_tile){64, 64, 0, 3, 3, 0};
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "warps_m x warps_n must be in [1, 8] (got 3 x 3)");
  s.tile_gx = (hot_tile){96, 64, 0, 0, 0, 0};
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "tile_gx.tile_m must be 64, 128 or 256 (got 96)");
  s.tile_gx = (hot_tile){0, 0, 96, 0, 0, 0};
  plan_err(&s, 8, 64, HOT_ARCH_SM86, "tile_gx.tile_k must be a multiple of 64 in [64, 256] for mma_s4 (got 96)");
  s.tile_gx = (hot_tile){0, 0, 0, 0, 0, 7};
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "tile_gx.stages must be in [2, 6] (got 7)");
  /* Bits out of range (a layer described in C; the DSL rejects these earlier). The message
   * names the field: "hq.bits" (the exact wording is checked by the spec known-issue suite). */
  s = layer(HOT_RECIPE_HOT, 256, 256);
  s.hq.g.bits = 9;
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "hq.bits");
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "(got 9)");
  s = layer(HOT_RECIPE_HOT, 256, 256);
  s.hla.x.bits = 1;
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "(got 1)");
  /* Blocks, keep, sizes. */
  s = layer(HOT_RECIPE_HOT, 256, 256);
  s.hq.block = 24;
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "hq.block must be a power of two in [2, 256] (got 24)");
  s = layer(HOT_RECIPE_HOT, 256, 256);
  s.hla.block = 2048;
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "hla.block must be a power of two in [2, 1024] (got 2048)");
  s = layer(HOT_RECIPE_HOT, 256, 256);
  s.hla.keep = 60;
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "hla.keep must be in [1, 50] (got 60)");
  s = layer(HOT_RECIPE_HOT, 256, 256);
  plan_err(&s, 0, 64, HOT_ARCH_SM80, "batch and tokens must be >= 1");
  plan_err(&s, (int64_t)1 << 20, (int64_t)1 << 12, HOT_ARCH_SM80,
           "T = batch x tokens = 1048576 x 4096 exceeds the kernels' limit of 2147483647");
  s.in_features = 0;
  plan_err(&s, 8, 64, HOT_ARCH_SM80, "in_features and out_features must be >= 1");
  char err[64];
  ck_assert_int_ne(plan_layer(&s, 8, 64, HOT_RECIPE_HOT, HOT_ARCH_COUNT, 0, &g_plan, err, sizeof err), 0);
}
END_TEST

/* ---- kernels ------------------------------------------------------------------------------ */

static int is_c_ident(const char *s) {
  if (!s[0] || (s[0] >= '0' && s[0] <= '9')) return 0;
  for (; *s; ++s)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

START_TEST(kernel_names) {
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 768, 3072);
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    plan_ok(&s, 32, 197, HOT_RECIPE_HOT, (hot_arch)a, &g_plan);
    plan_ok(&s, 32, 197, HOT_RECIPE_HOT, (hot_arch)a, &g_plan2);
    ck_assert_int_eq(g_plan.n_kernels, g_plan2.n_kernels);
    /* All roles in launch order: abc_x, hq_g, hq_w, hla_g, abc_unpack (only where K is not a
     * multiple of the g_w GEMM's K tile: plan_saved_unpacked), gemm_gx, gemm_gw, bias, lqs. */
    static const hot_kernel_role order[] = {HOT_K_ABC_X, HOT_K_HQ_G, HOT_K_HQ_W, HOT_K_HLA_G,
                                            HOT_K_ABC_UNPACK, HOT_K_GEMM_GX, HOT_K_GEMM_GW,
                                            HOT_K_BIAS, HOT_K_LQS};
    const int unpack = plan_saved_unpacked(&g_plan);
    ck_assert_int_eq(g_plan.n_kernels, 8 + unpack);
    for (int k = 0, j = 0; k < g_plan.n_kernels; ++k, ++j) {
      const hot_kernel_plan *kp = &g_plan.kernels[k];
      if (!unpack && order[j] == HOT_K_ABC_UNPACK) ++j;
      ck_assert_int_eq(kp->role, order[j]);
      ck_assert_str_eq(kp->name, g_plan2.kernels[k].name); /* deterministic */
      ck_assert_msg(is_c_ident(kp->name), "kernel name %s is not a C identifier", kp->name);
      ck_assert_ptr_nonnull(kp->templ);
      ck_assert_uint_ge(kp->block[0], 32);
      ck_assert_uint_le(kp->block[0], 1024);
      ck_assert_uint_ge(kp->grid[0], 1);
      ck_assert_int_eq(plan_kernel_index(&g_plan, kp->role), k);
      if (a == 0) printf("%-8s %-40s %s grid %ux%u block %u smem %u\n", plan_role_name(kp->role),
                         kp->name, kp->templ, kp->grid[0], kp->grid[1], kp->block[0], kp->smem);
    }
  }
  /* Names encode the parameters. */
  plan_ok(&s, 32, 197, HOT_RECIPE_HOT, HOT_ARCH_SM80, &g_plan);
  const char *hq_g = g_plan.kernels[plan_kernel_index(&g_plan, HOT_K_HQ_G)].name;
  ck_assert_ptr_nonnull(strstr(hq_g, "_b16"));
  ck_assert_ptr_nonnull(strstr(hq_g, "_k4"));
  ck_assert_ptr_nonnull(strstr(hq_g, "f32"));
  ck_assert_ptr_nonnull(strstr(hq_g, "s4_packed"));
  const char *hla_g = g_plan.kernels[plan_kernel_index(&g_plan, HOT_K_HLA_G)].name;
  ck_assert_ptr_nonnull(strstr(hla_g, "_p64"));
  ck_assert_ptr_nonnull(strstr(hla_g, "_r36"));
  ck_assert_ptr_nonnull(strstr(hla_g, "tri"));
  const char *gx = g_plan.kernels[plan_kernel_index(&g_plan, HOT_K_GEMM_GX)].name;
  ck_assert_ptr_nonnull(strstr(gx, "mma_s4"));
  hot_layer_spec t = s;
  t.hq.block = 32;
  t.dtype = HOT_DT_BF16;
  t.hla.block = 16;
  plan_ok(&t, 32, 197, HOT_RECIPE_HOT, HOT_ARCH_SM90, &g_plan2);
  const char *hq_g2 = g_plan2.kernels[plan_kernel_index(&g_plan2, HOT_K_HQ_G)].name;
  ck_assert_ptr_nonnull(strstr(hq_g2, "_b32"));
  ck_assert_ptr_nonnull(strstr(hq_g2, "bf16"));
  ck_assert_ptr_nonnull(strstr(hq_g2, "_s8"));
  ck_assert_str_ne(hq_g, hq_g2);
  const char *hla_g2 = g_plan2.kernels[plan_kernel_index(&g_plan2, HOT_K_HLA_G)].name;
  ck_assert_ptr_nonnull(strstr(hla_g2, "_p16_r10"));
  ck_assert_ptr_nonnull(strstr(g_plan2.kernels[plan_kernel_index(&g_plan2, HOT_K_GEMM_GX)].name, "mma_s8"));
  /* Disabled parts have no kernels; bias and LQS only when asked for. */
  t = s;
  t.hq.enabled = 0;
  t.hla.enabled = 0;
  t.bias = 0;
  plan_ok(&t, 32, 197, HOT_RECIPE_HOT, HOT_ARCH_SM80, &g_plan2);
  ck_assert_int_eq(g_plan2.n_kernels, 0);
  t = s;
  t.hq.g.gran = HOT_GRAN_ROW;
  plan_ok(&t, 32, 197, HOT_RECIPE_HOT, HOT_ARCH_SM80, &g_plan2);
  ck_assert_int_eq(plan_kernel_index(&g_plan2, HOT_K_LQS), -1);
  ck_assert_int_eq(plan_kernel_index(&g_plan2, HOT_K_BIAS), 7); /* abc_unpack: K 3564, k_pad 3584 */
}
END_TEST

START_TEST(op_counts) {
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 768, 3072);
  plan_ok(&s, 32, 197, HOT_RECIPE_HOT, HOT_ARCH_SM90, &g_plan);
  const hot_layer_plan *p = &g_plan;
  ck_assert_int_eq(p->ops.fp32_gx_macs, p->T * 768 * 3072);
  ck_assert_int_eq(p->ops.fp32_gw_macs, p->T * 768 * 3072);
  ck_assert_int_eq(p->ops.gx_macs, p->T * 768 * p->hq.o_pad);
  ck_assert_int_eq(p->ops.gw_macs, 3072 * 768 * p->hla.k);
  ck_assert_int_lt(p->ops.gw_macs, p->ops.fp32_gw_macs); /* r/p < 1 with little padding */
  ck_assert_int_gt(p->ops.fwht_adds, 0);
  ck_assert_int_eq(p->layer_id, 0);
  ck_assert_ptr_eq(p->spec, &s);
}
END_TEST

/* Compulsory traffic of each launch (gen/cost.c), by hand for a ViT fc1 layer (B = 2, L = 197,
 * O = 3072, I = 768, f32, b = 16, p = 16 tri: r = 10) on sm_80 (packed int4 HQ codes) and sm_90
 * (int8 codes); illegal role/phase pairs refused. */
START_TEST(kernel_costs) {
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 768, 3072);
  s.bias = 1;
  s.hq.g.gran = HOT_GRAN_AUTO;
  for (int a = 0; a < 2; ++a) {
    plan_ok(&s, 2, 197, HOT_RECIPE_HOT, a ? HOT_ARCH_SM90 : HOT_ARCH_SM80, &g_plan);
    const hot_layer_plan *p = &g_plan;
    const int64_t T = 394, O = 3072, I = 768, kq = p->hq.gemm.k_pad, kh = p->hla.gemm.k_pad;
    const int64_t cb = a ? kq : kq / 2; /* code bytes per HQ row */
    ck_assert_int_eq(p->hq.codes, a ? HOT_CODES_S8 : HOT_CODES_S4_PACKED);
    hot_kernel_cost c;
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_HQ_G, 0, 0, &c), 0);
    ck_assert_int_eq(c.bytes_read, T * O * 4);
    ck_assert_int_eq(c.bytes_written, 0);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_HQ_G, 1, 0, &c), 0);
    ck_assert_int_eq(c.bytes_written, T * cb + 4);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_HQ_G, 2, 1, &c), 0);
    ck_assert_int_eq(c.bytes_written, T * cb + T * 4);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_HQ_G, 2, 0, &c), -1); /* phase 2 is per token */
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_HQ_W, 1, 0, &c), 0);
    ck_assert_int_eq(c.bytes_read, O * I * 4);
    ck_assert_int_eq(c.bytes_written, I * cb + 4);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_ABC_X, 1, 0, &c), 0);
    ck_assert_int_eq(c.bytes_read, T * I * 4);
    ck_assert_int_eq(c.bytes_written, I * p->hla.k + 4); /* the saved codes: K, unpadded */
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_HLA_G, 1, 0, &c), 0);
    ck_assert_int_eq(c.bytes_written, O * kh + 4);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_GEMM_GX, 0, 0, &c), 0);
    ck_assert_int_eq(c.bound, 1);
    ck_assert_int_eq(c.int_ops, 2 * T * I * kq);
    ck_assert_int_eq(c.bytes_read, (T + I) * cb + T * 4);
    ck_assert_int_eq(c.bytes_written, T * I * 4);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_GEMM_GW, 0, 0, &c), 0);
    ck_assert_int_eq(c.int_ops, 2 * O * I * kh);
    ck_assert_int_eq(c.bytes_read, (O + I) * kh);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_BIAS, 0, 0, &c), 0);
    ck_assert_int_eq(c.bytes_read, T * O * 4);
    ck_assert_int_eq(c.bytes_written, O * 4);
    ck_assert_int_eq(c.bound, 0);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_LQS, 1, 0, &c), 0);
    ck_assert_int_eq(c.bytes_read, T * O * 4 + T * 4);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_GEMM_GX, 1, 0, &c), -1);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_LQS, 3, 0, &c), -1);
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_SAWB_W, 0, 0, &c), -1); /* absmax: no SAWB */
    ck_assert_int_eq(c.bytes_read + c.bytes_written + c.int_ops, 0);   /* zeroed on error */
  }
  ck_assert_int_eq(plan_kernel_cost(NULL, HOT_K_BIAS, 0, 0, &(hot_kernel_cost){0}), -1);
}
END_TEST

/* The wgmma path (sm_90a, templates/gemm_wgmma.cu): tiles of warpgroups, K slab 128, its own
 * shared-memory formula, defaults by problem size, and its illegal requests. */
START_TEST(wgmma_tiles) {
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 4096, 4096);
  plan_ok(&s, 1, 8192, HOT_RECIPE_HOT, HOT_ARCH_SM90A, &g_plan); /* big: 128 x 256 */
  const hot_gemm_plan *g = &g_plan.hq.gemm;
  ck_assert_int_eq(g->path, HOT_GEMM_WGMMA_S8);
  ck_assert_int_eq(g->tile_m, 128);
  ck_assert_int_eq(g->tile_n, 256);
  ck_assert_int_eq(g->tile_k, 128);
  ck_assert_int_eq(g->warps_m, 8);
  ck_assert_int_eq(g->warps_n, 1);
  ck_assert_uint_eq(g->smem, 4u * (128 + 256) * 128 + 1024); /* 197632 */
  ck_assert_int_eq(g->k_pad % 128, 0);
  const hot_kernel_plan *k = &g_plan.kernels[plan_kernel_index(&g_plan, HOT_K_GEMM_GX)];
  ck_assert_uint_eq(k->block[0], 256);
  ck_assert_uint_eq(k->grid[0], 4096 / 256);
  ck_assert_uint_eq(k->grid[1], 8192 / 128);
  ck_assert_str_eq(k->name, "hot_gemm_wgmma_s8_128x256x128_w8x1_s4");
  s = layer(HOT_RECIPE_HOT, 137, 100); /* small: 128 x 128 */
  plan_ok(&s, 3, 197, HOT_RECIPE_HOT, HOT_ARCH_SM90A, &g_plan);
  ck_assert_int_eq(g_plan.hq.gemm.tile_n, 128);
  ck_assert_int_eq(g_plan.hq.gemm.k_pad, 128); /* o_pad 112 -> one K slab */
  s.tile_gx.tile_m = 64;
  s.tile_gx.tile_n = 64;
  s.tile_gx.stages = 3;
  plan_ok(&s, 3, 197, HOT_RECIPE_HOT, HOT_ARCH_SM90A, &g_plan);
  ck_assert_int_eq(g_plan.hq.gemm.warps_m, 4);
  ck_assert_uint_eq(g_plan.hq.gemm.smem, 3u * 128 * 128 + 1024);
  s.tile_gx.tile_k = 64;
  plan_err(&s, 3, 197, HOT_ARCH_SM90A, "tile_gx.tile_k must be 128 for wgmma_s8");
  s.tile_gx.tile_k = 0;
  s.tile_gx.warps_m = 2;
  plan_err(&s, 3, 197, HOT_ARCH_SM90A, "wgmma_s8 uses 4 x 1 warps for tile_m = 64");
  s.tile_gx.warps_m = 0;
  s.tile_gx.tile_m = 256;
  plan_err(&s, 3, 197, HOT_ARCH_SM90A, "tile_gx.tile_m must be 64 or 128 for wgmma_s8");
  s.tile_gx.tile_m = 0;
  s.tile_gx.stages = 2;
  plan_err(&s, 3, 197, HOT_ARCH_SM90A, "tile_gx.stages must be in [3, 8] for wgmma_s8");
  s.tile_gx.stages = 0;
  s.tile_gw.tile_n = 256;
  s.tile_gw.stages = 6; /* 6 x 384 x 128 + 1024 = 295936 > 232448 */
  plan_err(&s, 3, 197, HOT_ARCH_SM90A, "needs 295936 bytes of shared memory");
}
END_TEST

/* The TMA path (sm_90a, templates/gemm_tma.cu), asked for per GEMM with warps_n = 2: the tiles of
 * wgmma_s8, 2..8 stages, a producer warpgroup beside the consumers, +1152 bytes of shared memory,
 * a persistent grid (the tile count, launched as at most the SM count), the same cost; warps_n 2
 * on other archs stays a mma.sync warp layout. */
START_TEST(tma_tiles) {
  hot_layer_spec s = layer(HOT_RECIPE_HOT, 4096, 4096);
  s.tile_gx.warps_n = 2;
  plan_ok(&s, 1, 8192, HOT_RECIPE_HOT, HOT_ARCH_SM90A, &g_plan);
  const hot_gemm_plan *g = &g_plan.hq.gemm;
  ck_assert_int_eq(g->path, HOT_GEMM_TMA_S8);
  ck_assert_int_eq(g_plan.hla.gemm.path, HOT_GEMM_WGMMA_S8); /* tile_gw not asked */
  ck_assert_int_eq(g->tile_m, 128);
  ck_assert_int_eq(g->tile_n, 256);
  ck_assert_int_eq(g->warps_m, 8);
  ck_assert_int_eq(g->warps_n, 2);
  ck_assert_uint_eq(g->smem, 4u * (128 + 256) * 128 + 1024 + 128); /* 197760 */
  ck_assert_uint_eq(g->smem, plan_gemm_smem(HOT_GEMM_TMA_S8, HOT_CODES_S8, 128, 256, 128, 4));
  const int k = plan_kernel_index(&g_plan, HOT_K_GEMM_GX);
  const hot_kernel_plan *kp = &g_plan.kernels[k];
  ck_assert_str_eq(kp->templ, "templates/gemm_tma.cu");
  ck_assert_str_eq(kp->name, "hot_gemm_tma_s8_128x256x128_w8x1_s4");
  ck_assert_uint_eq(kp->block[0], 384);
  ck_assert_int_eq(kp->persistent, 1);
  ck_assert_uint_eq(kp->grid[0], (8192 / 128) * (4096 / 256));
  ck_assert_uint_eq(kp->grid[1], 1);
  unsigned grid[3];
  plan_kernel_grid(&g_plan, k, 0, grid);
  ck_assert_uint_eq(grid[0], kp->grid[0]);
  hot_kernel_cost tc, wc;
  ck_assert_int_eq(plan_kernel_cost(&g_plan, HOT_K_GEMM_GX, 0, 0, &tc), 0);
  s.tile_gx.warps_n = 0;
  plan_ok(&s, 1, 8192, HOT_RECIPE_HOT, HOT_ARCH_SM90A, &g_plan2);
  ck_assert_int_eq(plan_kernel_cost(&g_plan2, HOT_K_GEMM_GX, 0, 0, &wc), 0);
  ck_assert_int_eq(tc.bytes_read, wc.bytes_read);
  ck_assert_int_eq(tc.bytes_written, wc.bytes_written);
  ck_assert_int_eq(tc.int_ops, wc.int_ops);
  ck_assert_int_eq(tc.bound, 1);
  /* both GEMMs, small tiles, 2 stages, segmented g_w (per-sample scales) */
  s = layer(HOT_RECIPE_HOT, 137, 100);
  s.tile_gx = (hot_tile){64, 64, 0, 0, 2, 2};
  s.tile_gw.warps_n = 2;
  s.hla.layout = HOT_LAYOUT_SAMPLE;
  s.hla.g.gran = HOT_GRAN_SAMPLE;
  plan_ok(&s, 3, 196, HOT_RECIPE_HOT, HOT_ARCH_SM90A, &g_plan);
  ck_assert_int_eq(g_plan.hq.gemm.stages, 2);
  ck_assert_uint_eq(g_plan.hq.gemm.smem, 2u * 128 * 128 + 1152);
  ck_assert_uint_eq(g_plan.kernels[plan_kernel_index(&g_plan, HOT_K_GEMM_GX)].block[0], 256);
  ck_assert_int_eq(g_plan.hla.gemm.path, HOT_GEMM_TMA_S8);
  ck_assert_int_eq(g_plan.hla.gemm.segmented, 1);
  ck_assert_str_eq(g_plan.kernels[plan_kernel_index(&g_plan, HOT_K_GEMM_GW)].name,
                   "hot_gemm_tma_s8_128x128x128_w8x1_s4_seg");
  /* illegal requests */
  s.tile_gx.stages = 9;
  plan_err(&s, 3, 196, HOT_ARCH_SM90A, "tile_gx.stages must be in [2, 8] for tma_s8");
  s.tile_gx.stages = 1;
  plan_err(&s, 3, 196, HOT_ARCH_SM90A, "tile_gx.stages must be in [2, 8] for tma_s8");
  s.tile_gx.stages = 0;
  s.tile_gx.warps_m = 8;
  plan_err(&s, 3, 196, HOT_ARCH_SM90A, "tile_gx: tma_s8 uses 4 x 2 warps for tile_m = 64");
  s.tile_gx.warps_m = 0;
  s.tile_gx.warps_n = 3;
  plan_err(&s, 3, 196, HOT_ARCH_SM90A, "wgmma_s8 uses 4 x 1 warps for tile_m = 64");
  s.tile_gx = (hot_tile){128, 256, 0, 0, 2, 5}; /* 5 x 384 x 128 + 1152 = 246912 */
  plan_err(&s, 3, 196, HOT_ARCH_SM90A, "needs 246912 bytes of shared memory");
  /* warps_n = 2 elsewhere: the mma.sync layout it always was */
  s.tile_gx = (hot_tile){0, 0, 0, 0, 2, 0};
  plan_ok(&s, 3, 196, HOT_RECIPE_HOT, HOT_ARCH_SM90, &g_plan);
  ck_assert_int_eq(g_plan.hq.gemm.path, HOT_GEMM_MMA_S8);
  ck_assert_int_eq(g_plan.hq.gemm.warps_n, 2);
}
END_TEST

/* The descriptors: the plan's kernel order (each role's first step), one descriptor per planned
 * kernel whose roles include it, every role has steps, and no step names a role its descriptor
 * does not implement. */
START_TEST(kernel_descriptors) {
  static const hot_kernel_role want[HOT_K_ROLE_COUNT] = {
      HOT_K_ABC_X, HOT_K_SAWB_X, HOT_K_HQ_G, HOT_K_HQ_W, HOT_K_SAWB_W,
      HOT_K_HLA_G, HOT_K_ABC_UNPACK, HOT_K_GEMM_GX, HOT_K_GEMM_GW, HOT_K_BIAS, HOT_K_LQS};
  const hot_kernel_role *order = kd_plan_order();
  for (int i = 0; i < HOT_K_ROLE_COUNT; ++i)
    ck_assert_msg(order[i] == want[i], "plan order %d: %s, expected %s", i,
                  plan_role_name(order[i]), plan_role_name(want[i]));
  int n = 0;
  const hot_kernel_desc *const *all = kd_all(&n);
  unsigned roles = 0, stepped = 0, outs = 0, role_out[HOT_K_ROLE_COUNT] = {0};
  for (int i = 0; i < n; ++i) {
    roles |= all[i]->roles;
    for (int s = 0; s < all[i]->n_steps; ++s) {
      const hot_step *st = &all[i]->steps[s];
      ck_assert_msg(all[i]->roles & (1u << st->role), "%s: step of %s",
                    all[i]->family, plan_role_name(st->role));
      stepped |= 1u << st->role;
      /* a backward step names the one output its work ends in (and every step of a role the
       * same one, in every family that implements it); a save or calibration step none */
      if (st->call == HOT_CALL_BACKWARD)
        ck_assert_msg(st->out == HOT_OUT_GX || st->out == HOT_OUT_GW || st->out == HOT_OUT_GB,
                      "%s: backward step %d of %s names output %#x", all[i]->family, st->seq,
                      plan_role_name(st->role), st->out);
      else
        ck_assert_msg(st->out == 0, "%s: step %d of %s (not a backward) names output %#x",
                      all[i]->family, st->seq, plan_role_name(st->role), st->out);
      ck_assert_msg(!role_out[st->role] || role_out[st->role] == st->out,
                    "%s: role %s ends in outputs %#x and %#x", all[i]->family,
                    plan_role_name(st->role), role_out[st->role], st->out);
      role_out[st->role] = st->out;
      outs |= st->out;
    }
    ck_assert_int_gt(kd_sig_count(all[i]->sig), 0);
  }
  ck_assert_uint_eq(roles, (1u << HOT_K_ROLE_COUNT) - 1);
  ck_assert_uint_eq(stepped, (1u << HOT_K_ROLE_COUNT) - 1);
  ck_assert_uint_eq(outs, HOT_OUT_ALL);
  /* the rule every walker shares: an output not asked for stops its steps, `when` the rest */
  ck_assert(!kd_step_runs(HOT_WHEN_ALWAYS, HOT_OUT_GW, 0, HOT_OUT_GX | HOT_OUT_GB));
  ck_assert(kd_step_runs(HOT_WHEN_ALWAYS, HOT_OUT_GW, 0, HOT_OUT_GW));
  ck_assert(kd_step_runs(HOT_WHEN_ALWAYS, 0, 0, 0));
  ck_assert(!kd_step_runs(HOT_WHEN_GRAN_ROW, HOT_OUT_GX, 0, HOT_OUT_ALL));
  ck_assert(kd_step_runs(HOT_WHEN_GRAN_ROW, HOT_OUT_GX, 1, HOT_OUT_GX));
  ck_assert(!kd_step_runs(HOT_WHEN_GRAN_NOT_ROW, HOT_OUT_GX, 1, HOT_OUT_ALL));
  hot_step st[64];
  const int nb = kd_steps(HOT_CALL_BACKWARD, st, 64);
  ck_assert_int_eq(nb, 13); /* hq_g 2, 0, 1, hq_w 0, sawb_w 0,1, hq_w 1, hla_g 0,1, abc_unpack,
                               gx, gw, bias */
  for (int i = 1; i < nb; ++i) ck_assert_int_lt(st[i - 1].seq, st[i].seq);
  hot_layer_spec s = layer(HOT_RECIPE_PAPER_CODE, 137, 100);
  s.bias = 1;
  plan_ok(&s, 3, 197, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, &g_plan);
  for (int k = 0; k < g_plan.n_kernels; ++k) {
    const hot_kernel_plan *kp = &g_plan.kernels[k];
    ck_assert_ptr_nonnull(kp->desc);
    ck_assert_ptr_eq(kd_of(kp), kp->desc);
    ck_assert(kp->desc->roles & (1u << kp->role));
  }
}
END_TEST

/* Every buffer size has one definition (plan_buffer_bytes): the cost model's traffic is built
 * from it, the plan's ABC figure is it, and the per-phase grids come from the plan. */
START_TEST(buffers_and_grids) {
  static const struct { hot_recipe r; hot_arch a; int64_t in, out, B, L; hot_dtype dt; } cs[] = {
      {HOT_RECIPE_HOT, HOT_ARCH_SM80, 137, 100, 3, 197, HOT_DT_F32},
      {HOT_RECIPE_HOT, HOT_ARCH_SM90A, 768, 3072, 32, 197, HOT_DT_BF16},
      {HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM90, 96, 64, 2, 197, HOT_DT_F16},
      {HOT_RECIPE_PAPER, HOT_ARCH_SM86, 64, 64, 1, 64, HOT_DT_F32}, /* I == O */
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
    hot_layer_spec s = layer(cs[i].r, cs[i].in, cs[i].out);
    s.dtype = cs[i].dt;
    hot_layer_plan *p = &g_plan;
    plan_ok(&s, cs[i].B, cs[i].L, cs[i].r, cs[i].a, p);
    const int64_t ds = cs[i].dt == HOT_DT_F32 ? 4 : 2;
    const int64_t row = p->hq.codes == HOT_CODES_S4_PACKED ? p->hq.gemm.k_pad / 2 : p->hq.gemm.k_pad;
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_Q_G), p->T * row);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_Q_W), p->I * row);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_Q_HG), p->O * p->hla.gemm.k_pad);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_Q_HX), p->I * p->hla.gemm.k_pad);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_SAVED), p->abc.bytes);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_SAVED_CODES), p->I * p->hla.k);
    ck_assert_int_eq(plan_saved_scale_offset(p), (p->I * p->hla.k + 15) / 16 * 16);
    ck_assert_int_eq(p->abc.bytes, plan_saved_scale_offset(p) + 4 * p->hla.groups);
    ck_assert_int_le(p->abc.bytes, plan_abc_method_bytes(p) + 15); /* the method's count */
    ck_assert_int_eq(plan_saved_unpacked(p), p->hla.gemm.k_pad != p->hla.k);
    ck_assert_int_eq(plan_kernel_index(p, HOT_K_ABC_UNPACK) >= 0, plan_saved_unpacked(p));
    if (plan_saved_unpacked(p)) {
      ck_assert_int_eq(plan_kernel_cost(p, HOT_K_ABC_UNPACK, 0, 0, &(hot_kernel_cost){0}), 0);
    }
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_GY), p->T * p->O * ds);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_W), p->O * p->I * ds);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_GW), p->O * p->I * 4);
    ck_assert_int_eq(plan_buffer_bytes(NULL, HOT_BUF_Q_G), -1);
    ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_COUNT), -1);
    hot_kernel_cost c;
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_HLA_G, 1, 0, &c), 0);
    ck_assert_int_eq(c.bytes_written, plan_buffer_bytes(p, HOT_BUF_Q_HG) + 4 * p->hla.groups);
    ck_assert_int_eq(c.bytes_read, plan_buffer_bytes(p, HOT_BUF_GY));
    ck_assert_int_eq(plan_kernel_cost(p, HOT_K_ABC_X, 1, 0, &c), 0);
    ck_assert_int_eq(c.bytes_written, plan_buffer_bytes(p, HOT_BUF_SAVED_CODES) + 4 * p->hla.groups);
    ck_assert_int_eq(c.bytes_read, plan_buffer_bytes(p, HOT_BUF_X));
    const int sawb = cs[i].r == HOT_RECIPE_PAPER_CODE;
    ck_assert_int_eq(scratch_bytes(p, HOT_LB_MATH),
                     sawb ? 4 * (p->hq.o_pad * p->I > p->hla.k * p->I ? p->hq.o_pad * p->I
                                                                       : p->hla.k * p->I) : 0);
    int64_t parts = 2 * ((p->T * p->O + 1023) / 1024) * 8; /* LQS (hq.g.gran auto) */
    if (sawb) {
      const int64_t nw = 2 * ((p->hq.o_pad * p->I + 1023) / 1024) * 8;
      /* x^ per sample: each group's chunks on their own */
      const int64_t gx = p->hla.x.gran == HOT_GRAN_SAMPLE ? p->hla.groups : 1;
      const int64_t nx = gx * 2 * ((p->hla.k / gx * p->I + 1023) / 1024) * 8;
      parts = parts > nw ? parts : nw;
      parts = parts > nx ? parts : nx;
    }
    ck_assert_int_eq(scratch_bytes(p, HOT_LB_PARTIALS), parts);
    /* grids: the plan's for every phase, sawb.cu's phase 1 one block */
    for (int k = 0; k < p->n_kernels; ++k)
      for (int ph = 0; ph < 3; ++ph) {
        unsigned g[3];
        plan_kernel_grid(p, k, ph, g);
        const int one = ph == 1 && (p->kernels[k].role == HOT_K_SAWB_W ||
                                    p->kernels[k].role == HOT_K_SAWB_X);
        ck_assert_uint_eq(g[0], one ? 1u : p->kernels[k].grid[0]);
        ck_assert_uint_eq(g[1], one ? 1u : p->kernels[k].grid[1]);
        ck_assert_uint_eq(g[2], 1u);
      }
    unsigned g[3] = {7, 7, 7};
    plan_kernel_grid(p, p->n_kernels, 0, g);
    ck_assert(g[0] == 0 && g[1] == 0 && g[2] == 0);
  }
}
END_TEST

/* plan_spec_defaults comes from gen/field_list.h's columns: the defaults of every recipe, written
 * out by hand here (as plan.c wrote them before the table), so a column edited by mistake fails. */
static void defaults_by_hand(hot_layer_spec *s, hot_recipe recipe) {
  memset(s, 0, sizeof *s);
  s->bias = 1;
  s->dtype = HOT_DT_F32;
  s->hq.enabled = 1;
  s->hq.block = 16;
  s->hq.g = (hot_quant){4, HOT_ROUND_SR, HOT_GRAN_AUTO, HOT_RULE_ABSMAX};
  s->hq.w = (hot_quant){4, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX};
  s->hq.pad = 1;
  s->hla.enabled = 1;
  s->hla.block = 64;
  s->hla.selection = HOT_SEL_TRI;
  s->hla.keep = 50;
  s->hla.layout = HOT_LAYOUT_SAMPLE;
  s->hla.pad = 1;
  s->hla.g = (hot_quant){8, HOT_ROUND_SR, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX};
  s->hla.x = (hot_quant){8, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX};
  s->abc.enabled = 1;
  if (recipe == HOT_RECIPE_HOT) {
    s->hla.layout = HOT_LAYOUT_AUTO;
    s->hla.g.gran = s->hla.x.gran = HOT_GRAN_AUTO;
  } else if (recipe == HOT_RECIPE_NVFP4) { /* hot's, with the granularities the formats fix */
    s->hla.layout = HOT_LAYOUT_AUTO;
    s->hq.g.gran = HOT_GRAN_TENSOR;
  } else if (recipe == HOT_RECIPE_PAPER_CODE) {
    s->hq.pad = 0;
    s->hq.w.rule = HOT_RULE_SAWB;
    s->hla.block = 0;
    s->hla.pad = 0;
    s->hla.x.rule = HOT_RULE_SAWB;
    s->hla.g.bits = 4;
    s->hla.g.gran = s->hla.x.gran = HOT_GRAN_SAMPLE;
  }
}

START_TEST(defaults_match_the_recipes) {
  for (int r = HOT_RECIPE_HOT; r <= HOT_RECIPE_NVFP4; ++r) {
    hot_layer_spec a, b;
    plan_spec_defaults(&a, (hot_recipe)r);
    defaults_by_hand(&b, (hot_recipe)r);
    ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "defaults of recipe %s", plan_recipe_name((hot_recipe)r));
  }
}
END_TEST

/* Recipe nvfp4 (CONTRACT.md 20): sm_120a (the arch with the block-scaled mma.sync) plans it on
 * the GPU (nvfp4_gpu_plan checks that plan); every other GPU arch of the table refuses it in one
 * line naming the arch, the recipe and the kernels it lacks; the CPU planner plans NVFP4 x NVFP4
 * for g_x (K = o_pad, a multiple of 16) and MXFP8 x MXFP8 for g_w (K rounded up to 32), the saved
 * buffer holding the MXFP8 codes and E8M0 scales as the GEMM reads them; a field the formats fix,
 * set otherwise, is refused. */
START_TEST(nvfp4_recipe) {
  hot_layer_spec s = layer(HOT_RECIPE_NVFP4, 40, 50);
  hot_layer_plan p;
  char err[512];
  int planned = 0;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
    char miss[256];
    plan_nvfp4_missing(c, miss, sizeof miss);
    const int rc = plan_layer(&s, 2, 70, HOT_RECIPE_NVFP4, (hot_arch)a, 0, &p, err, sizeof err);
    /* the arch with the block-scaled mma.sync has every kernel (both GEMMs, both quantisers; ABC
     * needs none: the g_w GEMM reads the saved x^ in place) and plans the recipe; elsewhere the
     * message names the kernels that arch lacks */
    ck_assert_int_eq(miss[0] == '\0', c->mma_sync_nvfp4);
    ck_assert_msg(strstr(miss, "not wired") == NULL && strstr(miss, "unpack") == NULL, "%s", miss);
    if (c->mma_sync_nvfp4) {
      ck_assert_msg(rc == 0, "%s: %s", c->name, err);
      ck_assert_int_eq(p.fmt, HOT_FMT_NVFP4);
      ++planned;
      continue;
    }
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err, c->name) && strstr(err, "recipe nvfp4") && !strchr(err, '\n'), "%s", err);
    ck_assert(strstr(err, miss) != NULL);
    ck_assert_msg(strstr(miss, "not written for that arch yet: the NVFP4 g_x GEMM, the MXFP8 g_w "
                               "GEMM, HQ's NVFP4 quantisers, HLA's MXFP8 quantisers") != NULL,
                  "%s", miss);
    printf("%s\n", err);
  }
  ck_assert_int_eq(planned, 1);
  /* a short buffer truncates, never overflows */
  char tiny[8];
  ck_assert_uint_eq(strlen(plan_nvfp4_missing(plan_arch_caps(HOT_ARCH_SM80), tiny, sizeof tiny)), 7);
  ck_assert_int_eq(plan_layer_cpu(&s, 2, 70, HOT_RECIPE_NVFP4, 3, &p, err, sizeof err), 0);
  ck_assert_int_eq(p.fmt, HOT_FMT_NVFP4);
  ck_assert_int_eq(p.hq.gemm.path, HOT_GEMM_BS_NVFP4);
  ck_assert_int_eq(p.hq.codes, HOT_CODES_NVFP4);
  ck_assert_int_eq(p.hq.o_pad, 64);
  ck_assert_int_eq(p.hq.gemm.k_pad, 64);
  ck_assert_int_eq(p.hla.gemm.path, HOT_GEMM_BS_MXFP8);
  ck_assert_int_eq(p.hla.groups, 1);
  ck_assert_int_eq(p.hla.gemm.k_pad, (p.hla.k + 31) / 32 * 32);
  ck_assert_int_eq(plan_buffer_bytes(&p, HOT_BUF_Q_G), 2 * 70 * (32 + 4));
  ck_assert_int_eq(plan_buffer_bytes(&p, HOT_BUF_S_G), 4);
  ck_assert_int_eq(plan_buffer_bytes(&p, HOT_BUF_Q_HX), 40 * (p.hla.gemm.k_pad + p.hla.gemm.k_pad / 32));
  ck_assert_int_eq(plan_buffer_bytes(&p, HOT_BUF_SAVED), plan_buffer_bytes(&p, HOT_BUF_Q_HX));
  ck_assert_int_eq(plan_abc_method_bytes(&p), plan_buffer_bytes(&p, HOT_BUF_SAVED));
  ck_assert_int_eq(plan_saved_unpacked(&p), 0);
  ck_assert_int_eq(plan_saved_scale_offset(&p), -1);
  ck_assert_int_lt(plan_kernel_index(&p, HOT_K_LQS), 0);
  ck_assert_int_ge(plan_kernel_index(&p, HOT_K_GEMM_GX), 0);
  /* the integer recipes plan on the CPU exactly as for its storage arch */
  hot_layer_spec h = layer(HOT_RECIPE_HOT, 40, 50);
  hot_layer_plan q1, q2;
  ck_assert_int_eq(plan_layer_cpu(&h, 2, 70, HOT_RECIPE_HOT, 3, &q1, err, sizeof err), 0);
  ck_assert_int_eq(plan_layer(&h, 2, 70, HOT_RECIPE_HOT, HOT_ARCH_CPU_STORAGE, 3, &q2, err, sizeof err), 0);
  ck_assert_int_eq(memcmp(&q1, &q2, sizeof q1), 0);
  /* what the formats fix */
  const struct { const char *field; } bad[] = {
      {"hq.block"}, {"hq.bits"}, {"hla.bits"}, {"absmax"}, {"hq.scale"},
  };
  for (int i = 0; i < 5; ++i) {
    hot_layer_spec t = s;
    if (i == 0) t.hq.block = 32;
    if (i == 1) t.hq.g.bits = 3;
    if (i == 2) t.hla.x.bits = 6;
    if (i == 3) t.hq.w.rule = HOT_RULE_SAWB;
    if (i == 4) t.hq.g.gran = HOT_GRAN_AUTO;
    ck_assert_int_eq(plan_layer_cpu(&t, 2, 70, HOT_RECIPE_NVFP4, 0, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, bad[i].field) && strstr(err, "recipe nvfp4"), "%s", err);
    printf("%s\n", err);
    /* plan_nvfp4_check alone (what hot-tune asks of a sweep's values): the same line */
    char e2[512];
    ck_assert_int_eq(plan_nvfp4_check(&t, e2, sizeof e2), -1);
    ck_assert_str_eq(e2, err);
  }
  ck_assert_int_eq(plan_nvfp4_check(&s, err, sizeof err), 0);
  ck_assert_int_eq(plan_nvfp4_check(NULL, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "NULL"), "%s", err);
}
END_TEST

/* One GPU plan of recipe nvfp4 on sm_120a against the CPU planner's plan of the same layer: the
 * kernels (families, templates, names) in step order, the block-scaled GEMM paths and K tiles, the
 * workspace pieces and views, every launch's geometry and buffer arguments, the costs, and the
 * byte layout of every buffer both backends hold (q_g', q_w', q_g^, the saved x^) the same. */
static void nvfp4_gpu_case(int64_t B, int64_t L, int64_t I, int64_t O, int bias, hot_layout layout,
                           int want_tile_k) {
  hot_layer_spec s = layer(HOT_RECIPE_NVFP4, I, O);
  s.bias = bias;
  s.hla.layout = layout;
  char err[512];
  ck_assert_msg(plan_layer(&s, B, L, HOT_RECIPE_NVFP4, HOT_ARCH_SM120A, 2, &g_plan, err,
                           sizeof err) == 0, "%s", err);
  ck_assert_int_eq(plan_layer_cpu(&s, B, L, HOT_RECIPE_NVFP4, 2, &g_plan2, err, sizeof err), 0);
  const hot_layer_plan *p = &g_plan, *c = &g_plan2;
  const int64_t T = B * L, o_pad = (O + 15) / 16 * 16, kp = (p->hla.k + 31) / 32 * 32;
  /* the kernels in step order: GPU families, and the CPU plan's unchanged */
  static const struct { hot_kernel_role r; const char *gpu, *cpu, *templ; } k[] = {
      {HOT_K_ABC_X, "hla_mxfp8", "hla", "templates/hla_mxfp8.cu"},
      {HOT_K_HQ_G, "hq_nvfp4", "hq", "templates/hq_nvfp4.cu"},
      {HOT_K_HQ_W, "hq_nvfp4", "hq", "templates/hq_nvfp4.cu"},
      {HOT_K_HLA_G, "hla_mxfp8", "hla", "templates/hla_mxfp8.cu"},
      {HOT_K_GEMM_GX, "gemm_nvfp4", "gemm", "templates/gemm_nvfp4.cu"},
      {HOT_K_GEMM_GW, "gemm_mxfp8", "gemm", "templates/gemm_mxfp8.cu"},
      {HOT_K_BIAS, "bias", "bias", "templates/bias.cu"},
  };
  const int nk = bias ? 7 : 6;
  ck_assert_int_eq(p->n_kernels, nk);
  ck_assert_int_eq(c->n_kernels, nk);
  for (int i = 0; i < nk; ++i) {
    ck_assert_int_eq(p->kernels[i].role, k[i].r);
    ck_assert_str_eq(kd_of(&p->kernels[i])->family, k[i].gpu);
    ck_assert_str_eq(p->kernels[i].templ, k[i].templ);
    ck_assert_int_eq(c->kernels[i].role, k[i].r);
    ck_assert_str_eq(kd_of(&c->kernels[i])->family, k[i].cpu);
  }
  char want[128];
  const char *sel = plan_selection_name(p->hla.selection);
  snprintf(want, sizeof want, "hot_hla_mxfp8_x_p%d_r%d_%s", p->hla.block, p->hla.rank, sel);
  ck_assert_str_eq(p->kernels[0].name, want);
  ck_assert_str_eq(p->kernels[1].name, "hot_hq_nvfp4_g_sr");
  ck_assert_str_eq(p->kernels[2].name, "hot_hq_nvfp4_w");
  snprintf(want, sizeof want, "hot_hla_mxfp8_g_sr_p%d_r%d_%s", p->hla.block, p->hla.rank, sel);
  ck_assert_str_eq(p->kernels[3].name, want);
  snprintf(want, sizeof want, "hot_gemm_mma_nvfp4_%dx%dx%d_w2x2", p->hq.gemm.tile_m,
           p->hq.gemm.tile_n, want_tile_k);
  ck_assert_str_eq(p->kernels[4].name, want);
  snprintf(want, sizeof want, "hot_gemm_mma_mxfp8_%dx%dx128_w2x2", p->hla.gemm.tile_m,
           p->hla.gemm.tile_n);
  ck_assert_str_eq(p->kernels[5].name, want);
  /* paths, K tiles, and the layout of every buffer the CPU backend lays out the same way */
  ck_assert_int_eq(p->hq.gemm.path, HOT_GEMM_MMA_NVFP4);
  ck_assert_int_eq(p->hla.gemm.path, HOT_GEMM_MMA_MXFP8);
  ck_assert_int_eq(p->hq.gemm.tile_k, want_tile_k);
  ck_assert_int_eq(p->hq.gemm.k_pad, o_pad);
  ck_assert_int_eq(c->hq.gemm.k_pad, o_pad);
  ck_assert_int_eq(p->hla.gemm.k_pad, kp);
  ck_assert_int_eq(c->hla.gemm.k_pad, kp);
  for (int b = 0; b < HOT_BUF_COUNT; ++b)
    ck_assert_int_eq(plan_buffer_bytes(p, (hot_buffer)b), plan_buffer_bytes(c, (hot_buffer)b));
  ck_assert_int_eq(plan_buffer_bytes(p, HOT_BUF_SAVED), I * (kp + kp / 32));
  /* the workspace: pieces and views */
  hot_scratch_layout S;
  ck_assert_int_eq(kd_scratch_layout(p, &S, err, sizeof err), 0);
  const int64_t work = p->hla.segments * p->hla.seg_len * (I > O ? I : O) * 4;
  const struct { hot_lbuf b; int64_t bytes; } piece[] = {
      {HOT_LB_Q_G, T * (o_pad / 2 + o_pad / 16)}, {HOT_LB_S_G, 4},
      {HOT_LB_Q_W, I * (o_pad / 2 + o_pad / 16)}, {HOT_LB_S_W, 4},
      {HOT_LB_Q_HG, O * (kp + kp / 32)},          {HOT_LB_MATH, work},
      {HOT_LB_AMAX, 4 * (HOT_AMAX_WORDS + B)},
  };
  int64_t sum = 0;
  for (size_t i = 0; i < sizeof piece / sizeof piece[0]; ++i) {
    ck_assert_msg(S.size[piece[i].b] == piece[i].bytes, "piece %d: %lld bytes, expected %lld",
                  (int)piece[i].b, (long long)S.size[piece[i].b], (long long)piece[i].bytes);
    ck_assert_int_eq(S.off[piece[i].b] % 256, 0);
    sum += (piece[i].bytes + 255) / 256 * 256;
  }
  ck_assert_int_eq(S.bytes, sum); /* nothing else */
  ck_assert_uint_eq(S.zero[HOT_LB_AMAX], HOT_CALLS_ALL);
  const struct { hot_lbuf b, base; int64_t off; } view[] = {
      {HOT_LB_SF_G, HOT_LB_Q_G, T * (o_pad / 2)}, {HOT_LB_SF_W, HOT_LB_Q_W, I * (o_pad / 2)},
      {HOT_LB_S_HG, HOT_LB_Q_HG, O * kp},         {HOT_LB_S_X, HOT_LB_SAVED, I * kp},
      {HOT_LB_Q_HX, HOT_LB_SAVED, 0},             {HOT_LB_AMAX_G, HOT_LB_AMAX, 0},
      {HOT_LB_AMAX_W, HOT_LB_AMAX, 4},            {HOT_LB_BAD, HOT_LB_AMAX, 4 * HOT_AMAX_BAD},
  };
  for (size_t i = 0; i < sizeof view / sizeof view[0]; ++i)
    for (int ps = 0; ps < 2; ++ps) {
      ck_assert_int_eq(S.base[ps][view[i].b], (int)view[i].base);
      ck_assert_int_eq(S.view_off[ps][view[i].b], view[i].off);
    }
  /* the launches: save = x^ (2 phases); backward = g' (2), w' (2), g^ (2), g_x, g_w (+ g_b) */
  static hot_launch_list ll;
  ck_assert_int_eq(kd_launch_list(p, &S, HOT_CALL_SAVE, 7, &ll), 0);
  ck_assert_int_eq(ll.n, 2);
  const int64_t mx_x = (I * p->hla.blocks > I * (kp / 32) ? I * p->hla.blocks : I * (kp / 32));
  for (int i = 0; i < 2; ++i) {
    const hot_launch *l = &ll.l[i];
    ck_assert(l->ok && l->role == HOT_K_ABC_X && l->phase == i && l->n_sig == 14);
    ck_assert_uint_eq(l->grid[0], (unsigned)((mx_x + 255) / 256));
    ck_assert_uint_eq(l->block[0], 256);
    ck_assert_int_eq(l->args[0].a[0].sym, HOT_SYM_BUF + HOT_LB_X);
    ck_assert_int_eq(l->args[0].a[5].i, kp);
    ck_assert_int_eq(l->args[0].a[6].i, i);
    ck_assert_int_eq(l->args[0].a[7].sym, HOT_SYM_BUF + HOT_LB_MATH);
    ck_assert_int_eq(l->args[0].a[8].sym, HOT_SYM_BUF + HOT_LB_BAD);
    ck_assert_int_eq(l->args[0].a[9].sym, HOT_SYM_BUF + HOT_LB_SAVED);
    ck_assert_int_eq(l->args[0].a[10].sym, HOT_SYM_BUF + HOT_LB_S_X);
  }
  ck_assert_int_eq(kd_launch_list(p, &S, HOT_CALL_BACKWARD, 7, &ll), 0);
  static const struct { hot_kernel_role r; int phase; } run[] = {
      {HOT_K_HQ_G, 0}, {HOT_K_HQ_G, 1}, {HOT_K_HQ_W, 0}, {HOT_K_HQ_W, 1}, {HOT_K_HLA_G, 0},
      {HOT_K_HLA_G, 1}, {HOT_K_GEMM_GX, 0}, {HOT_K_GEMM_GW, 0}, {HOT_K_BIAS, 0}};
  int nr = 0;
  for (int i = 0; i < ll.n; ++i) {
    const hot_launch *l = &ll.l[i];
    if (l->when == HOT_WHEN_GRAN_ROW) { /* g' per row: never (one tensor scale), never built */
      ck_assert(l->role == HOT_K_HQ_G && l->phase == 2 && !l->ok);
      continue;
    }
    if (l->role == HOT_K_BIAS && !bias) {
      ck_assert_int_lt(l->kernel, 0);
      continue;
    }
    ck_assert_int_lt(nr, bias ? 9 : 8);
    ck_assert_msg(l->ok && l->role == run[nr].r && l->phase == run[nr].phase, "launch %d: %s %d",
                  i, l->role_name, l->phase);
    ++nr;
  }
  ck_assert_int_eq(nr, bias ? 9 : 8);
  const hot_launch *gx = NULL, *gw = NULL, *hg = NULL;
  for (int i = 0; i < ll.n; ++i) {
    if (ll.l[i].role == HOT_K_GEMM_GX) gx = &ll.l[i];
    if (ll.l[i].role == HOT_K_GEMM_GW) gw = &ll.l[i];
    if (ll.l[i].role == HOT_K_HQ_G && ll.l[i].phase == 1) hg = &ll.l[i];
  }
  ck_assert(gx && gw && hg);
  static const hot_lbuf gx_buf[] = {HOT_LB_Q_G, HOT_LB_SF_G, HOT_LB_S_G, HOT_LB_Q_W, HOT_LB_SF_W,
                                    HOT_LB_S_W};
  for (int i = 0; i < 6; ++i) ck_assert_int_eq(gx->args[0].a[i].sym, HOT_SYM_BUF + gx_buf[i]);
  ck_assert_int_eq(gx->args[0].a[6].i, 16);
  ck_assert_int_eq(gx->args[0].a[7].sym, HOT_SYM_BUF + HOT_LB_GX);
  ck_assert_int_eq(gx->args[0].a[8].i, T);
  ck_assert_int_eq(gx->args[0].a[9].i, I);
  ck_assert_int_eq(gx->args[0].a[10].i, o_pad);
  ck_assert_int_eq(gx->args[0].a[11].i, I);
  ck_assert_uint_eq(gx->grid[0], (unsigned)((I + p->hq.gemm.tile_n - 1) / p->hq.gemm.tile_n));
  ck_assert_uint_eq(gx->grid[1], (unsigned)((T + p->hq.gemm.tile_m - 1) / p->hq.gemm.tile_m));
  ck_assert_uint_eq(gx->block[0], 128);
  ck_assert_uint_eq(gx->smem, 0);
  static const hot_lbuf gw_buf[] = {HOT_LB_Q_HG, HOT_LB_S_HG, HOT_LB_Q_HX, HOT_LB_S_X};
  for (int i = 0; i < 4; ++i) ck_assert_int_eq(gw->args[0].a[i].sym, HOT_SYM_BUF + gw_buf[i]);
  ck_assert_int_eq(gw->args[0].a[4].i, p->hla.block);
  ck_assert_int_eq(gw->args[0].a[5].sym, HOT_SYM_BUF + HOT_LB_GW);
  ck_assert_int_eq(gw->args[0].a[6].i, O);
  ck_assert_int_eq(gw->args[0].a[8].i, kp);
  ck_assert_uint_eq(hg->grid[0], (unsigned)((T * (o_pad / 16) + 255) / 256));
  ck_assert_int_eq(hg->args[0].a[3].i, o_pad);
  ck_assert_int_eq(hg->args[0].a[5].sym, HOT_SYM_BUF + HOT_LB_AMAX_G);
  ck_assert_int_eq(hg->args[0].a[8].sym, HOT_SYM_BUF + HOT_LB_SF_G);
  ck_assert_uint_eq(hg->args[0].a[11].u, 2u * 16u + 1u); /* layer 2's g' Philox tag */
  /* costs: every launched phase has one; the GEMMs count 2 m n k_pad */
  for (int i = 0; i < nr; ++i) {
    hot_kernel_cost kc;
    ck_assert_int_eq(plan_kernel_cost(p, run[i].r, run[i].phase, 0, &kc), 0);
    if (run[i].r == HOT_K_GEMM_GX) ck_assert_int_eq(kc.int_ops, 2 * T * I * o_pad);
    if (run[i].r == HOT_K_GEMM_GW) ck_assert_int_eq(kc.int_ops, 2 * O * I * kp);
  }
  printf("nvfp4 sm_120a B %lld L %lld I %lld O %lld: %d kernels, g_x K tile %d, workspace %lld "
         "bytes\n", (long long)B, (long long)L, (long long)I, (long long)O, p->n_kernels,
         p->hq.gemm.tile_k, (long long)S.bytes);
}

START_TEST(nvfp4_gpu_plan) {
  nvfp4_gpu_case(2, 70, 40, 50, 0, HOT_LAYOUT_AUTO, 64);     /* ragged T, I, O; o_pad 64 */
  nvfp4_gpu_case(1, 64, 256, 256, 1, HOT_LAYOUT_AUTO, 128);  /* whole tiles, bias */
  nvfp4_gpu_case(3, 33, 129, 250, 1, HOT_LAYOUT_FLAT, 128);  /* ragged everything, flat HLA */
  nvfp4_gpu_case(5, 17, 7, 950, 0, HOT_LAYOUT_SAMPLE, 64);   /* o_pad 960 = 64 x 15 */
  /* the HLA bases at the planner's limits plan too: the MXFP8 quantiser takes p in [1, 1024] and
   * any r <= p, the MXFP8 GEMM any K (padded to 32) — p = 1 (the authors' rule for an odd L) and
   * the full basis of p = 1024 */
  char err[512];
  hot_layer_spec s = layer(HOT_RECIPE_NVFP4, 40, 64);
  s.hla.block = 0;
  ck_assert_msg(plan_layer(&s, 2, 35, HOT_RECIPE_NVFP4, HOT_ARCH_SM120A, 0, &g_plan, err,
                           sizeof err) == 0, "%s", err);
  ck_assert_str_eq(g_plan.kernels[0].name, "hot_hla_mxfp8_x_p1_r1_tri");
  ck_assert_int_eq(g_plan.hla.gemm.k_pad, (70 + 31) / 32 * 32);
  s.hla.block = 1024;
  s.hla.selection = HOT_SEL_FULL;
  ck_assert_msg(plan_layer(&s, 2, 35, HOT_RECIPE_NVFP4, HOT_ARCH_SM120A, 0, &g_plan, err,
                           sizeof err) == 0, "%s", err);
  ck_assert_int_eq(g_plan.hla.rank, 1024);
  ck_assert_str_eq(g_plan.kernels[0].name, "hot_hla_mxfp8_x_p1024_r1024_full");
  ck_assert_int_eq(g_plan.hla.gemm.k_pad, g_plan.hla.k);
}
END_TEST

/* What sm_120a's kernels cannot take, refused in one line naming the field or the size: an
 * o_pad (out_features rounded up to 16) no K tile of the NVFP4 GEMM divides, a tile_k that does
 * not divide it, a 16-bit dtype (the GPU quantisers read fp32), the block-scaled paths' tile
 * limits. Each layer still plans on the CPU backend where the refusal is the GPU's alone. */
START_TEST(nvfp4_gpu_refusals) {
  static const struct {
    int64_t O;
    int tile_k_gx, tile_k_gw, stages_gx, tile_m_gw;
    hot_dtype dt;
    int cpu_plans;
    const char *want;
  } bad[] = {
      {100, 0, 0, 0, 0, HOT_DT_F32, 1,
       "recipe nvfp4 on sm_120a needs out_features rounded up to 16 to be a multiple of 64 (got "
       "out_features 100, o_pad 112)"},
      {50, 128, 0, 0, 0, HOT_DT_F32, 0, "tile_gx.tile_k = 128 does not divide o_pad = 64"},
      {50, 0, 0, 0, 0, HOT_DT_BF16, 1, "recipe nvfp4 on sm_120a takes dtype f32 only (got bf16)"},
      {50, 0, 256, 0, 0, HOT_DT_F32, 0, "tile_gw.tile_k must be a multiple of 32 in [32, 128]"},
      {50, 0, 0, 2, 0, HOT_DT_F32, 0, "tile_gx.stages must be in [1, 1]"},
      {50, 0, 0, 0, 256, HOT_DT_F32, 1, "tile_gw.tile_m must be 64 or 128"},
  };
  char err[512];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    hot_layer_spec s = layer(HOT_RECIPE_NVFP4, 40, bad[i].O);
    s.tile_gx.tile_k = bad[i].tile_k_gx;
    s.tile_gw.tile_k = bad[i].tile_k_gw;
    s.tile_gx.stages = bad[i].stages_gx;
    s.tile_gw.tile_m = bad[i].tile_m_gw;
    s.dtype = bad[i].dt;
    ck_assert_int_eq(plan_layer(&s, 2, 70, HOT_RECIPE_NVFP4, HOT_ARCH_SM120A, 0, &g_plan, err,
                                sizeof err), -1);
    printf("sm_120a: %s\n", err);
    ck_assert_msg(strstr(err, bad[i].want) && !strchr(err, '\n'), "%s", err);
    if (bad[i].cpu_plans) { /* the CPU backend's plan of the same layer */
      ck_assert_msg(plan_layer_cpu(&s, 2, 70, HOT_RECIPE_NVFP4, 0, &g_plan2, err, sizeof err) == 0,
                    "%s", err);
      ck_assert_int_eq(g_plan2.hq.gemm.path, HOT_GEMM_BS_NVFP4);
    }
  }
}
END_TEST

int main(void) {
  Suite *su = suite_create("plan");
  TCase *tc = tcase_create("basis");
  tcase_add_test(tc, sequency_bijection);
  tcase_add_test(tc, tri_ranks_and_rows);
  tcase_add_test(tc, prefix_and_full);
  suite_add_tcase(su, tc);
  tc = tcase_create("layer");
  tcase_add_test(tc, defaults_match_the_recipes);
  tcase_add_test(tc, padding_rules);
  tcase_add_test(tc, gemm_paths_per_arch);
  tcase_add_test(tc, arch_table_queries);
  tcase_add_test(tc, gemm_path_table);
  tcase_add_test(tc, block_paths_per_arch);
  tcase_add_test(tc, k_pad_multiple_of_tile_k);
  tcase_add_test(tc, abc_bytes);
  tcase_add_test(tc, hla_scale_groups);
  tcase_add_test(tc, illegal_requests);
  tcase_add_test(tc, kernel_names);
  tcase_add_test(tc, op_counts);
  tcase_add_test(tc, kernel_costs);
  tcase_add_test(tc, wgmma_tiles);
  tcase_add_test(tc, tma_tiles);
  tcase_add_test(tc, kernel_descriptors);
  tcase_add_test(tc, buffers_and_grids);
  tcase_add_test(tc, nvfp4_recipe);
  tcase_add_test(tc, nvfp4_gpu_plan);
  tcase_add_test(tc, nvfp4_gpu_refusals);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

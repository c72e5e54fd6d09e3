/* test_ref_layer.c — whole layers on plans from plan_layer: awkward sizes (T = 197*3, O = 100,
 * I = 137, K not a multiple of 32), int4-packed vs int8 codes, dtypes, the GEMM against a naive
 * int64 product, g_b order, ABC bytes, ABC's saved layout (unpack / pack), the paper_code
 * recipe's p = 1, a real ViT-B layer, and bad arguments. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "ref_util.h"

/* one scale group of value 1 (the ref_gemm_gw scale arrays of a per-tensor plan) */
static const float k_one[1] = {1.0f};

static void make_plan(hot_layer_spec *sp, hot_layer_plan *pl, hot_recipe rec, hot_arch arch,
                      int64_t B, int64_t L, int64_t O, int64_t I) {
  char err[256] = "";
  plan_spec_defaults(sp, rec);
  strcpy(sp->name, "t");
  sp->in_features = I;
  sp->out_features = O;
  int rc = plan_layer(sp, B, L, rec, arch, 2, pl, err, sizeof err);
  ck_assert_msg(rc == 0, "plan_layer: %s", err);
}

typedef struct {
  float *x, *w, *g, *gx, *gw, *gb;
} bufs;

static void bufs_make(bufs *b, const hot_layer_plan *pl, uint64_t seed) {
  int64_t T = pl->T, O = pl->O, I = pl->I;
  b->x = malloc((size_t)(T * I) * sizeof(float));
  b->w = malloc((size_t)(O * I) * sizeof(float));
  b->g = malloc((size_t)(T * O) * sizeof(float));
  b->gx = malloc((size_t)(T * I) * sizeof(float));
  b->gw = malloc((size_t)(O * I) * sizeof(float));
  b->gb = malloc((size_t)O * sizeof(float));
  tp_rng r;
  tp_seed(&r, seed);
  tp_fill_normal(&r, b->x, T * I, 1.0);
  tp_fill_normal(&r, b->w, O * I, 0.05);
  tp_fill_normal(&r, b->g, T * O, 1e-3);
}

static void bufs_free(bufs *b) {
  free(b->x);
  free(b->w);
  free(b->g);
  free(b->gx);
  free(b->gw);
  free(b->gb);
}

/* save + calibrate + backward; returns the LQS choice. */
static hot_gran run_layer(const hot_layer_plan *pl, const void *x, const void *w, const void *g,
                          hot_dtype dt, float *gx, float *gw, float *gb) {
  hot_ref_saved sv;
  hot_ref_lqs_result lq;
  ck_assert_int_eq(ref_layer_save(pl, x, dt, &sv), HOT_REF_OK);
  ck_assert_int_eq(ref_layer_calibrate(pl, g, dt, 99, 0, &lq), HOT_REF_OK);
  ck_assert_int_eq(ref_layer_backward(pl, &sv, g, w, dt, lq.choice, 99, 1, gx, gw, gb),
                   HOT_REF_OK);
  ref_saved_free(&sv);
  ref_saved_free(&sv); /* idempotent */
  return lq.choice;
}

START_TEST(awkward_layer) {
  hot_layer_spec s80, s90;
  hot_layer_plan p80, p90;
  make_plan(&s80, &p80, HOT_RECIPE_HOT, HOT_ARCH_SM80, 3, 197, 100, 137);
  make_plan(&s90, &p90, HOT_RECIPE_HOT, HOT_ARCH_SM90, 3, 197, 100, 137);
  ck_assert_int_eq(ref_plan_check(&p80), HOT_REF_OK);
  ck_assert_int_eq(p80.hq.codes, HOT_CODES_S4_PACKED);
  ck_assert_int_eq(p90.hq.codes, HOT_CODES_S8);
  printf("plan sm_80: T=%lld O=%lld I=%lld b=%d o_pad=%lld k_pad=%lld | p=%d r=%d %s K=%lld "
         "k_pad=%lld (K %% 32 = %lld)\n",
         (long long)p80.T, (long long)p80.O, (long long)p80.I, p80.hq.block, (long long)p80.hq.o_pad,
         (long long)p80.hq.gemm.k_pad, p80.hla.block, p80.hla.rank,
         p80.hla.layout == HOT_LAYOUT_FLAT ? "flat" : "sample", (long long)p80.hla.k,
         (long long)p80.hla.gemm.k_pad, (long long)(p80.hla.k % 32));
  ck_assert(p80.hla.k % 32 != 0);
  bufs b;
  bufs_make(&b, &p80, 4242);
  int64_t T = p80.T, O = p80.O, I = p80.I;
  hot_gran ch = run_layer(&p80, b.x, b.w, b.g, HOT_DT_F32, b.gx, b.gw, b.gb);
  /* int8-stored codes (sm_90) give the same bits as packed nibbles (sm_80) */
  float *gx2 = malloc((size_t)(T * I) * sizeof *gx2), *gw2 = malloc((size_t)(O * I) * sizeof *gw2);
  float *gb2 = malloc((size_t)O * sizeof *gb2);
  run_layer(&p90, b.x, b.w, b.g, HOT_DT_F32, gx2, gw2, gb2);
  ck_assert(memcmp(b.gx, gx2, (size_t)(T * I) * sizeof *gx2) == 0);
  ck_assert(memcmp(b.gw, gw2, (size_t)(O * I) * sizeof *gw2) == 0);
  ck_assert(memcmp(b.gb, gb2, (size_t)O * sizeof *gb2) == 0);
  /* errors against fp64 */
  double *ex = malloc((size_t)(T * I) * sizeof *ex), *ew = malloc((size_t)(O * I) * sizeof *ew);
  ck_assert_int_eq(ref_exact_gx(T, O, I, b.g, b.w, ex), 0);
  ck_assert_int_eq(ref_exact_gw(T, O, I, b.g, b.x, ew), 0);
  double egx = ref_rel_err(b.gx, ex, T * I), egw = ref_rel_err(b.gw, ew, O * I);
  double gbx[100] = {0};
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < O; ++o) gbx[o] += b.g[t * O + o];
  double egb = ref_rel_err(b.gb, gbx, O);
  printf("layer (LQS -> %s): rel err g_x %.4f, g_w %.4f (sqrt(1-r/p) = %.4f), g_b %.2e; s4 == s8 "
         "bit for bit\n",
         ch == HOT_GRAN_ROW ? "row" : "tensor", egx, egw,
         sqrt(1.0 - (double)p80.hla.rank / p80.hla.block), egb);
  ck_assert(egx < 0.35);
  ck_assert(fabs(egw - sqrt(1.0 - (double)p80.hla.rank / p80.hla.block)) < 0.05);
  ck_assert(egb < 1e-6);
  free(gx2);
  free(gw2);
  free(gb2);
  free(ex);
  free(ew);
  bufs_free(&b);
}
END_TEST

/* g_x of one granularity: q_g' (gran), q_w', GEMM. */
static void gx_with(const hot_layer_plan *pl, const float *g, const float *w, hot_gran gran,
                    void *qg, float *sg, float *gx) {
  void *qw = malloc((size_t)ref_hq_w_bytes(pl));
  float sw;
  ck_assert_int_eq(ref_hq_quant_g(pl, g, HOT_DT_F32, gran, 11, 3, qg, sg), HOT_REF_OK);
  ck_assert_int_eq(ref_hq_quant_w(pl, w, HOT_DT_F32, qw, &sw), HOT_REF_OK);
  ck_assert_int_eq(ref_gemm_gx(pl, qg, sg, qw, sw, gx), HOT_REF_OK);
  free(qw);
}

/* Per-sample scales (HOT_GRAN_SAMPLE): with one extreme sample (x30) among B = 4, the others
 * keep their own scale, so their g_x error falls far below the per-tensor one; the extreme
 * sample (it holds the tensor's amax) gets the very codes and scale of per tensor (the Philox
 * index does not depend on the groups); s_g[t] is the scale of sample t / L; and with B = 1
 * per sample is per tensor bit for bit. */
START_TEST(per_sample_scales) {
  const int64_t L = 64, O = 96, I = 48, hot = 2;
  for (int64_t B = 1; B <= 4; B += 3) {
    hot_layer_spec sp;
    hot_layer_plan pl;
    make_plan(&sp, &pl, HOT_RECIPE_HOT, HOT_ARCH_SM86, B, L, O, I);
    bufs b;
    bufs_make(&b, &pl, 21);
    const int64_t T = pl.T, gb = ref_hq_g_bytes(&pl), rb = gb / T;
    if (B > 1)
      for (int64_t i = hot * L * O; i < (hot + 1) * L * O; ++i) b.g[i] *= 30.0f;
    unsigned char *qt = malloc((size_t)gb), *qs = malloc((size_t)gb);
    float *st = malloc((size_t)T * sizeof *st), *ss = malloc((size_t)T * sizeof *ss);
    float *gxs = malloc((size_t)(T * I) * sizeof *gxs);
    double *ex = malloc((size_t)(T * I) * sizeof *ex);
    gx_with(&pl, b.g, b.w, HOT_GRAN_TENSOR, qt, st, b.gx);
    gx_with(&pl, b.g, b.w, HOT_GRAN_SAMPLE, qs, ss, gxs);
    for (int64_t t = 0; t < T; ++t) ck_assert(ss[t] == ss[t / L * L]); /* one scale a sample */
    if (B == 1) {
      ck_assert_mem_eq(qt, qs, (size_t)gb);
      ck_assert_mem_eq(st, ss, (size_t)T * sizeof *st);
      ck_assert_mem_eq(b.gx, gxs, (size_t)(T * I) * sizeof *gxs);
    } else {
      ck_assert_int_eq(ref_exact_gx(T, O, I, b.g, b.w, ex), 0);
      ck_assert_mem_eq(qt + hot * L * rb, qs + hot * L * rb, (size_t)(L * rb));
      ck_assert(ss[hot * L] == st[0]);
      for (int64_t s = 0; s < B; ++s) {
        if (s == hot) continue;
        ck_assert(ss[s * L] < st[0] / 10.0f);
        double et = ref_rel_err(b.gx + s * L * I, ex + s * L * I, L * I);
        double es = ref_rel_err(gxs + s * L * I, ex + s * L * I, L * I);
        printf("per sample: sample %lld of 4 (sample %lld x30): g_x rel err per tensor %.3f, "
               "per sample %.3f\n", (long long)s, (long long)hot, et, es);
        ck_assert_msg(es < 0.5 * et, "sample %lld: per sample %.3f, per tensor %.3f", (long long)s,
                      es, et);
      }
    }
    free(qt); free(qs); free(st); free(ss); free(gxs); free(ex);
    bufs_free(&b);
  }
  /* the grouped quantizer refuses groups that do not tile the rows */
  float v[12] = {1};
  int8_t c[12];
  float sc[12];
  hot_quant q = {4, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_ABSMAX};
  ck_assert_int_eq(ref_quantize_groups(v, 6, 2, 4, &q, 0, 0, 0, c, sc), HOT_REF_EARG);
  ck_assert_int_eq(ref_quantize_groups(v, 6, 2, 0, &q, 0, 0, 0, c, sc), HOT_REF_EARG);
  ck_assert_int_eq(ref_quantize_groups(v, 6, 2, 3, &q, 0, 0, 0, c, sc), HOT_REF_OK);
  ck_assert_int_eq(ref_quantize(v, 6, 2, &q, HOT_GRAN_SAMPLE, 0, 0, 0, c, sc), HOT_REF_EARG);
}
END_TEST

/* The GEMM twins against a naive int64 product of the stored codes + the epilogue formula. */
START_TEST(gemm_matches_naive) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&sp, &pl, HOT_RECIPE_HOT, HOT_ARCH_SM86, 2, 97, 100, 37);
  bufs b;
  bufs_make(&b, &pl, 7);
  int64_t T = pl.T, O = pl.O, I = pl.I, kq = pl.hq.gemm.k_pad, kh = pl.hla.gemm.k_pad;
  void *qg = malloc((size_t)ref_hq_g_bytes(&pl)), *qw = malloc((size_t)ref_hq_w_bytes(&pl));
  int8_t *hg = malloc((size_t)ref_hla_g_bytes(&pl)), *hx = malloc((size_t)ref_hla_x_bytes(&pl));
  float *sg = malloc((size_t)T * sizeof *sg), sw, shg, shx;
  ck_assert_int_eq(ref_hq_quant_g(&pl, b.g, HOT_DT_F32, HOT_GRAN_ROW, 5, 6, qg, sg), 0);
  ck_assert_int_eq(ref_hq_quant_w(&pl, b.w, HOT_DT_F32, qw, &sw), 0);
  ck_assert_int_eq(ref_gemm_gx(&pl, qg, sg, qw, sw, b.gx), 0);
  int packed = pl.hq.codes == HOT_CODES_S4_PACKED;
  int64_t rb = packed ? kq / 2 : kq, bad = 0;
  float cw = sw / (float)pl.hq.block;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < I; ++i) {
      int64_t acc = 0;
      for (int64_t k = 0; k < kq; ++k)
        acc += (int64_t)ref_code_at((const unsigned char *)qg + t * rb, packed, k) *
               ref_code_at((const unsigned char *)qw + i * rb, packed, k);
      float want = (float)acc * (sg[t] * cw);
      bad += want != b.gx[t * I + i];
    }
  ck_assert_int_eq(ref_hla_quant_g(&pl, b.g, HOT_DT_F32, 5, 6, hg, &shg), 0);
  ck_assert_int_eq(ref_hla_quant_x(&pl, b.x, HOT_DT_F32, hx, &shx), 0);
  ck_assert_int_eq(ref_gemm_gw(&pl, hg, &shg, hx, &shx, b.gw), 0);
  float c = (shg * shx) / (float)pl.hla.block;
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      int64_t acc = 0;
      for (int64_t k = 0; k < kh; ++k) acc += (int64_t)hg[o * kh + k] * hx[i * kh + k];
      bad += (float)acc * c != b.gw[o * I + i];
    }
  /* zeros past the math extent */
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = pl.hq.o_pad; k < kq; ++k)
      bad += ref_code_at((const unsigned char *)qg + t * rb, packed, k) != 0;
  for (int64_t o = 0; o < O; ++o)
    for (int64_t k = pl.hla.k; k < kh; ++k) bad += hg[o * kh + k] != 0;
  printf("GEMM twins vs naive int64 + epilogue (T=%lld O=%lld I=%lld, %s): %lld mismatches\n",
         (long long)T, (long long)O, (long long)I, packed ? "s4 packed" : "s8", (long long)bad);
  ck_assert_int_eq(bad, 0);
  free(qg);
  free(qw);
  free(hg);
  free(hx);
  free(sg);
  bufs_free(&b);
}
END_TEST

/* int32 sums wrap modulo 2^32 (CONTRACT 13), as the tensor cores do without .satfinite: a g_w
 * contraction of K > 133 144 codes all at +127 overflows, and the twin gives the wrapped value
 * (no undefined signed overflow: the sums run in uint32). */
START_TEST(gemm_wraps_like_the_tensor_cores) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&sp, &pl, HOT_RECIPE_HOT, HOT_ARCH_SM90, 1, 256000, 3, 2);
  const int64_t kh = pl.hla.gemm.k_pad, O = pl.O, I = pl.I;
  ck_assert_int_gt(pl.hla.k * 127 * 127, INT32_MAX);
  int8_t *hg = malloc((size_t)(O * kh)), *hx = malloc((size_t)(I * kh));
  float gw[6];
  ck_assert_ptr_nonnull(hg);
  ck_assert_ptr_nonnull(hx);
  memset(hg, 0, (size_t)(O * kh));
  memset(hx, 0, (size_t)(I * kh));
  for (int64_t k = 0; k < pl.hla.k; ++k) {
    for (int64_t o = 0; o < O; ++o) hg[o * kh + k] = (int8_t)(o == 2 ? -127 : 127);
    for (int64_t i = 0; i < I; ++i) hx[i * kh + k] = 127;
  }
  ck_assert_int_eq(ref_gemm_gw(&pl, hg, k_one, hx, k_one, gw), 0);
  const int64_t full = pl.hla.k * 127 * 127;               /* the true sum, > 2^31 */
  const int64_t wrapped = full - ((int64_t)1 << 32);       /* its int32 residue */
  ck_assert_int_lt(wrapped, 0);
  const float c = 1.0f / (float)pl.hla.block;
  printf("K = %lld: sum %lld wraps to %lld; g_w[0] = %.6g\n", (long long)pl.hla.k,
         (long long)full, (long long)wrapped, gw[0]);
  ck_assert(gw[0] == (float)wrapped * c);
  ck_assert(gw[1] == (float)wrapped * c);
  ck_assert(gw[4] == (float)(-wrapped) * c); /* o = 2: -127 codes, the negated residue */
  free(hg);
  free(hx);
}
END_TEST

START_TEST(bias_order) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&sp, &pl, HOT_RECIPE_HOT, HOT_ARCH_SM80, 3, 197, 100, 8);
  bufs b;
  bufs_make(&b, &pl, 31);
  ck_assert_int_eq(ref_bias(&pl, b.g, HOT_DT_F32, b.gb), 0);
  int64_t bad = 0;
  for (int64_t o = 0; o < pl.O; ++o) {
    float total = 0.0f;
    for (int64_t c0 = 0; c0 < pl.T; c0 += 256) {
      float part = 0.0f;
      for (int64_t t = c0; t < pl.T && t < c0 + 256; ++t) part += b.g[t * pl.O + o];
      total += part;
    }
    bad += total != b.gb[o];
  }
  printf("g_b: chunks of %d tokens in order, partials in order: %lld mismatches over %lld columns\n",
         HOT_REF_BIAS_CHUNK, (long long)bad, (long long)pl.O);
  ck_assert_int_eq(bad, 0);
  bufs_free(&b);
}
END_TEST

/* bf16 / f16 inputs give the same bits as f32 inputs holding the converted values. */
START_TEST(dtypes) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&sp, &pl, HOT_RECIPE_HOT, HOT_ARCH_SM89, 2, 50, 40, 24);
  bufs b;
  bufs_make(&b, &pl, 77);
  int64_t T = pl.T, O = pl.O, I = pl.I;
  for (int64_t i = 0; i < O * I; ++i) b.w[i] *= 20.0f; /* keep f16 values normal */
  for (int64_t i = 0; i < T * O; ++i) b.g[i] *= 1000.0f;
  for (int d = 1; d <= 2; ++d) {
    hot_dtype dt = d == 1 ? HOT_DT_BF16 : HOT_DT_F16;
    unsigned short *x16 = malloc((size_t)(T * I) * 2), *w16 = malloc((size_t)(O * I) * 2);
    unsigned short *g16 = malloc((size_t)(T * O) * 2);
    float *xf = malloc((size_t)(T * I) * 4), *wf = malloc((size_t)(O * I) * 4);
    float *gf = malloc((size_t)(T * O) * 4);
#define CONV(src, dst16, dstf, n)                                                                  \
  for (int64_t i = 0; i < (n); ++i) {                                                              \
    dst16[i] = dt == HOT_DT_BF16 ? tp_f32_to_bf16(src[i]) : tp_f32_to_f16(src[i]);                 \
    dstf[i] = dt == HOT_DT_BF16 ? hot_bf16_to_f32(dst16[i]) : hot_f16_to_f32(dst16[i]);            \
  }
    CONV(b.x, x16, xf, T * I)
    CONV(b.w, w16, wf, O * I)
    CONV(b.g, g16, gf, T * O)
#undef CONV
    float *gx2 = malloc((size_t)(T * I) * 4), *gw2 = malloc((size_t)(O * I) * 4), *gb2 = malloc((size_t)O * 4);
    run_layer(&pl, x16, w16, g16, dt, b.gx, b.gw, b.gb);
    run_layer(&pl, xf, wf, gf, HOT_DT_F32, gx2, gw2, gb2);
    ck_assert(memcmp(b.gx, gx2, (size_t)(T * I) * 4) == 0);
    ck_assert(memcmp(b.gw, gw2, (size_t)(O * I) * 4) == 0);
    ck_assert(memcmp(b.gb, gb2, (size_t)O * 4) == 0);
    printf("%s inputs: g_x, g_w, g_b identical to f32 inputs of the same values\n",
           dt == HOT_DT_BF16 ? "bf16" : "f16");
    free(x16);
    free(w16);
    free(g16);
    free(xf);
    free(wf);
    free(gf);
    free(gx2);
    free(gw2);
    free(gb2);
  }
  bufs_free(&b);
}
END_TEST

START_TEST(abc_bytes) {
  struct { int64_t L; int p; hot_layout lay; int rank; } cs[] = {
      {256, 16, HOT_LAYOUT_SAMPLE, 0}, {256, 32, HOT_LAYOUT_SAMPLE, 0},
      {256, 64, HOT_LAYOUT_SAMPLE, 0}, {256, 128, HOT_LAYOUT_SAMPLE, 0},
      {1024, 512, HOT_LAYOUT_SAMPLE, 0}, {1024, 1024, HOT_LAYOUT_SAMPLE, 0},
      {256, 16, HOT_LAYOUT_SAMPLE, 8}, {197, 16, HOT_LAYOUT_SAMPLE, 0},
      {197, 64, HOT_LAYOUT_FLAT, 0}, {197, 16, HOT_LAYOUT_FLAT, 0}};
  for (int c = 0; c < 10; ++c) {
    hot_layer_spec sp;
    hot_layer_plan pl;
    char err[256];
    plan_spec_defaults(&sp, HOT_RECIPE_HOT);
    sp.in_features = 768;
    sp.out_features = 768;
    sp.hla.block = cs[c].p;
    sp.hla.layout = cs[c].lay;
    if (cs[c].rank) {
      sp.hla.selection = HOT_SEL_PREFIX;
      sp.hla.rank = cs[c].rank;
    }
    ck_assert_int_eq(plan_layer(&sp, 8, cs[c].L, HOT_RECIPE_HOT, HOT_ARCH_SM80, 0, &pl, err, sizeof err), 0);
    hot_ref_saved sv;
    float *x = calloc((size_t)(pl.T * pl.I), sizeof *x);
    ck_assert_int_eq(ref_layer_save(&pl, x, HOT_DT_F32, &sv), 0);
    double ratio = (double)(pl.hla.k * pl.I + 4 * pl.hla.groups) / (double)pl.abc.fp32_bytes;
    double kept = (double)sv.bytes / (double)pl.abc.fp32_bytes;
    printf("ABC L=%lld p=%d r=%d %s: codes+scale / fp32 = %.4f (stored: %.4f)\n",
           (long long)cs[c].L, pl.hla.block, pl.hla.rank,
           pl.hla.layout == HOT_LAYOUT_FLAT ? "flat" : "sample", ratio, kept);
    /* the plan reports what is stored: I rows of K codes (unpadded), 16-byte alignment and
     * one scale per scale group: the method's count + at most 15 bytes */
    ck_assert_int_eq(pl.abc.bytes, (pl.I * pl.hla.k + 15) / 16 * 16 + 4 * pl.hla.groups);
    ck_assert_int_le(pl.abc.bytes - plan_abc_method_bytes(&pl), 15);
    ck_assert_int_eq(sv.bytes, pl.abc.bytes);
    if (pl.L % pl.hla.block == 0) { /* no padding: exactly (r/p)/4 + the scales */
      double rp = (double)pl.hla.rank / pl.hla.block;
      ck_assert(fabs(ratio - rp / 4) < 1e-5); /* the scales: 4 * groups bytes */
      const double scales = 4.0 * (double)pl.hla.groups / (double)pl.abc.fp32_bytes;
      if (2 * pl.hla.rank <= pl.hla.block) ck_assert(ratio <= 0.125 + scales + 1e-12);
    }
    ref_saved_free(&sv);
    free(x);
  }
}
END_TEST

/* The saved codes of ABC (ref_abc_unpack / ref_abc_pack): unpacking writes every byte of the
 * GEMM layout (group j's codes at j * group_k_pad, zeros in each tail, whatever was there
 * before), packing is its inverse; on hand-made layouts (one group padded, several groups
 * padded, group_k_pad = group_k, group_k = 1) and on x^ of hand-built plans (per tensor and per
 * sample: ref_hla_quant_x's codes survive the round trip); ESHAPE for a plan without ABC or HLA
 * or with inconsistent groups / k_pad, EARG for NULL. */
static void abc_plan(hot_layer_plan *pl, int64_t I, int64_t G, int64_t gk, int64_t gkp) {
  memset(pl, 0, sizeof *pl);
  pl->I = I;
  pl->abc.enabled = 1;
  pl->hla.enabled = 1;
  pl->hla.k = G * gk;
  pl->hla.groups = G;
  pl->hla.group_k = gk;
  pl->hla.group_k_pad = gkp;
  pl->hla.gemm.k_pad = G * gkp;
}

START_TEST(abc_unpack_pack) {
  static const int64_t cs[][4] = {/* I, groups, group_k, group_k_pad */
                                  {5, 1, 37, 64}, {4, 3, 20, 32}, {3, 4, 16, 16},
                                  {7, 2, 1, 16},  {1, 5, 255, 256}, {2, 1, 48, 48}};
  tp_rng r;
  tp_seed(&r, 77);
  for (size_t c = 0; c < sizeof cs / sizeof cs[0]; ++c) {
    hot_layer_plan pl;
    abc_plan(&pl, cs[c][0], cs[c][1], cs[c][2], cs[c][3]);
    const int64_t I = pl.I, K = pl.hla.k, G = pl.hla.groups, gk = pl.hla.group_k;
    const int64_t gkp = pl.hla.group_k_pad, kp = pl.hla.gemm.k_pad;
    int8_t *codes = malloc((size_t)(I * K)), *back = malloc((size_t)(I * K));
    int8_t *q = malloc((size_t)(I * kp)), *q2 = malloc((size_t)(I * kp));
    for (int64_t i = 0; i < I * K; ++i) codes[i] = (int8_t)(1 + tp_u64(&r) % 255); /* non-zero */
    memset(q, 0x5a, (size_t)(I * kp));
    memset(back, 0x33, (size_t)(I * K));
    ck_assert_int_eq(ref_abc_unpack(&pl, codes, q), HOT_REF_OK);
    int64_t tail = 0;
    for (int64_t i = 0; i < I; ++i)
      for (int64_t j = 0; j < G; ++j)
        for (int64_t o = 0; o < gkp; ++o) {
          const int8_t want = o < gk ? codes[i * K + j * gk + o] : 0;
          tail += o >= gk;
          ck_assert_msg(q[i * kp + j * gkp + o] == want,
                        "case %zu: row %lld group %lld offset %lld: %d, want %d", c, (long long)i,
                        (long long)j, (long long)o, q[i * kp + j * gkp + o], want);
        }
    ck_assert_int_eq(tail, I * (kp - K));
    ck_assert_int_eq(ref_abc_pack(&pl, q, back), HOT_REF_OK);
    ck_assert_mem_eq(back, codes, (size_t)(I * K));
    /* and the other way: a GEMM-layout buffer with zero tails is unpacked from its packing */
    memset(q2, 0x77, (size_t)(I * kp));
    ck_assert_int_eq(ref_abc_unpack(&pl, back, q2), HOT_REF_OK);
    ck_assert_mem_eq(q2, q, (size_t)(I * kp));
    free(codes);
    free(back);
    free(q);
    free(q2);
  }
  /* x^ of hand-built plans, per tensor (one group, k_pad > K) and per sample (B groups) */
  for (int sample = 0; sample < 2; ++sample) {
    tp_args a = tp_default(3, 197, 24, 37);
    a.hla_x_gran = sample ? HOT_GRAN_SAMPLE : HOT_GRAN_TENSOR;
    hot_layer_plan pl;
    ck_assert_int_eq(tp_make(&a, &pl), 0);
    ck_assert_int_eq(pl.hla.groups, sample ? 3 : 1);
    ck_assert(pl.hla.group_k_pad > pl.hla.group_k);
    const int64_t n = ref_hla_x_bytes(&pl), nc = pl.I * pl.hla.k;
    ck_assert_int_eq(n, pl.I * pl.hla.gemm.k_pad);
    float *x = malloc((size_t)(pl.T * pl.I) * sizeof *x), s[8];
    int8_t *q = malloc((size_t)n), *q2 = malloc((size_t)n), *codes = malloc((size_t)nc);
    tp_fill_normal(&r, x, pl.T * pl.I, 1.0);
    ck_assert_int_eq(ref_hla_quant_x(&pl, x, HOT_DT_F32, q, s), HOT_REF_OK);
    ck_assert_int_eq(ref_abc_pack(&pl, q, codes), HOT_REF_OK);
    memset(q2, 0x7f, (size_t)n);
    ck_assert_int_eq(ref_abc_unpack(&pl, codes, q2), HOT_REF_OK);
    ck_assert_mem_eq(q2, q, (size_t)n);
    /* the saved buffer's scales start at the 16-byte boundary after the I rows of K codes */
    ck_assert_int_eq(plan_saved_scale_offset(&pl), (nc + 15) / 16 * 16);
    ck_assert(plan_saved_unpacked(&pl));
    /* bad plans and arguments */
    hot_layer_plan bad = pl;
    bad.abc.enabled = 0;
    ck_assert_int_eq(ref_abc_unpack(&bad, codes, q2), HOT_REF_ESHAPE);
    ck_assert_int_eq(ref_abc_pack(&bad, q, codes), HOT_REF_ESHAPE);
    bad = pl;
    bad.hla.enabled = 0;
    ck_assert_int_eq(ref_abc_unpack(&bad, codes, q2), HOT_REF_ESHAPE);
    ck_assert_int_eq(ref_abc_pack(&bad, q, codes), HOT_REF_ESHAPE);
    bad = pl;
    bad.hla.gemm.k_pad += 16; /* k_pad != groups * group_k_pad */
    ck_assert_int_eq(ref_abc_unpack(&bad, codes, q2), HOT_REF_ESHAPE);
    ck_assert_int_eq(ref_abc_pack(&bad, q, codes), HOT_REF_ESHAPE);
    bad = pl;
    bad.hla.groups = pl.hla.groups + 1; /* groups * group_k != K */
    ck_assert_int_eq(ref_abc_unpack(&bad, codes, q2), HOT_REF_ESHAPE);
    ck_assert_int_eq(ref_abc_pack(&bad, q, codes), HOT_REF_ESHAPE);
    bad = pl;
    bad.hla.group_k_pad = pl.hla.group_k - 1; /* a group longer than its room */
    bad.hla.gemm.k_pad = bad.hla.groups * bad.hla.group_k_pad;
    ck_assert_int_eq(ref_abc_unpack(&bad, codes, q2), HOT_REF_ESHAPE);
    ck_assert_int_eq(ref_abc_pack(&bad, q, codes), HOT_REF_ESHAPE);
    bad = pl;
    bad.hla.groups = 0;
    ck_assert_int_eq(ref_abc_unpack(&bad, codes, q2), HOT_REF_ESHAPE);
    ck_assert_int_eq(ref_abc_pack(&bad, q, codes), HOT_REF_ESHAPE);
    ck_assert_int_eq(ref_abc_unpack(NULL, codes, q2), HOT_REF_EARG);
    ck_assert_int_eq(ref_abc_unpack(&pl, NULL, q2), HOT_REF_EARG);
    ck_assert_int_eq(ref_abc_unpack(&pl, codes, NULL), HOT_REF_EARG);
    ck_assert_int_eq(ref_abc_pack(NULL, q, codes), HOT_REF_EARG);
    ck_assert_int_eq(ref_abc_pack(&pl, NULL, codes), HOT_REF_EARG);
    ck_assert_int_eq(ref_abc_pack(&pl, q, NULL), HOT_REF_EARG);
    free(x);
    free(q);
    free(q2);
    free(codes);
  }
  printf("abc unpack/pack: 6 layouts and 2 plans round trip, tails zero; 6 bad plans, NULLs\n");
}
END_TEST

/* paper_code: p = largest power of two dividing L = 197 -> 1, HLA is the identity (its g_w equals
 * the exact product); the default recipe projects (p = 64 here) and does not. */
START_TEST(paper_code_no_op) {
  hot_layer_spec sp, sd;
  hot_layer_plan pc, pd;
  make_plan(&sp, &pc, HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, 2, 197, 96, 40);
  make_plan(&sd, &pd, HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 197, 96, 40);
  ck_assert_int_eq(pc.hla.block, 1);
  ck_assert_int_eq(pc.hla.k, pc.T);
  bufs b;
  bufs_make(&b, &pc, 555);
  int64_t T = pc.T, O = pc.O, I = pc.I;
  double *ex = malloc((size_t)(O * I) * sizeof *ex), *h = malloc((size_t)(O * I) * sizeof *h);
  ck_assert_int_eq(ref_exact_gw(T, O, I, b.g, b.x, ex), 0);
  ck_assert_int_eq(ref_hla_gw_f64(&pc, b.g, b.x, h), 0);
  double e_pc = ref_rel_err_f64(h, ex, O * I);
  ck_assert_int_eq(ref_hla_gw_f64(&pd, b.g, b.x, h), 0);
  double e_def = ref_rel_err_f64(h, ex, O * I);
  run_layer(&pc, b.x, b.w, b.g, HOT_DT_F32, b.gx, b.gw, b.gb);
  double e_pc8 = ref_rel_err(b.gw, ex, O * I);
  printf("paper_code L=197: p=%d (b=%d, SAWB), unquantized HLA rel err %.1e, INT8 %.4f; default "
         "recipe p=%d r=%d: %.4f\n",
         pc.hla.block, pc.hq.block, e_pc, e_pc8, pd.hla.block, pd.hla.rank, e_def);
  ck_assert(e_pc == 0.0);
  ck_assert(e_def > 0.3);
  free(ex);
  free(h);
  bufs_free(&b);
}
END_TEST

/* A real ViT-B layer (fc1: O = 3072, I = 768, L = 197) at batch 2: prints the time. */
START_TEST(real_layer_time) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&sp, &pl, HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 197, 3072, 768);
  bufs b;
  bufs_make(&b, &pl, 8);
  double t0 = tp_seconds();
  run_layer(&pl, b.x, b.w, b.g, HOT_DT_F32, b.gx, b.gw, b.gb);
  double t1 = tp_seconds();
  printf("ViT-B fc1 T=%lld O=%lld I=%lld: save + calibrate + backward on the CPU twin %.2f s\n",
         (long long)pl.T, (long long)pl.O, (long long)pl.I, t1 - t0);
  bufs_free(&b);
}
END_TEST

START_TEST(bad_arguments) {
  hot_layer_spec sp;
  hot_layer_plan pl, bad;
  make_plan(&sp, &pl, HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 20, 24, 16);
  float f[4096] = {0}, s[64];
  int8_t c8[8192];
  hot_ref_saved sv;
  hot_ref_lqs_result lq;
  /* NULL */
  ck_assert_int_eq(ref_plan_check(NULL), HOT_REF_EARG);
  ck_assert_int_eq(ref_hq_quant_g(NULL, f, HOT_DT_F32, HOT_GRAN_ROW, 0, 0, c8, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_hq_quant_g(&pl, NULL, HOT_DT_F32, HOT_GRAN_ROW, 0, 0, c8, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_hq_quant_w(&pl, f, HOT_DT_F32, NULL, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_hla_quant_x(&pl, f, HOT_DT_F32, c8, NULL), HOT_REF_EARG);
  ck_assert_int_eq(ref_hla_quant_g(&pl, NULL, HOT_DT_F32, 0, 0, c8, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_gemm_gx(&pl, c8, NULL, c8, 1.0f, f), HOT_REF_EARG);
  ck_assert_int_eq(ref_gemm_gw(&pl, c8, k_one, NULL, k_one, f), HOT_REF_EARG);
  ck_assert_int_eq(ref_bias(&pl, f, HOT_DT_F32, NULL), HOT_REF_EARG);
  ck_assert_int_eq(ref_lqs(&pl, f, HOT_DT_F32, 0, 0, NULL), HOT_REF_EARG);
  ck_assert_int_eq(ref_layer_save(&pl, NULL, HOT_DT_F32, &sv), HOT_REF_EARG);
  ck_assert(sv.q_x == NULL && sv.x == NULL);
  ck_assert_int_eq(ref_layer_save(&pl, f, HOT_DT_F32, NULL), HOT_REF_EARG);
  ck_assert_int_eq(ref_layer_backward(&pl, NULL, f, f, HOT_DT_F32, HOT_GRAN_ROW, 0, 0, f, f, f),
                   HOT_REF_EARG);
  ck_assert_int_eq(ref_exact_gx(0, 1, 1, f, f, (double *)(void *)c8), HOT_REF_EARG);
  ck_assert_int_eq(ref_exact_gw(1, 1, 1, f, NULL, (double *)(void *)c8), HOT_REF_EARG);
  ck_assert(isnan(ref_rel_err(NULL, NULL, 3)));
  ref_saved_free(NULL);
  ck_assert_int_eq(ref_bias(&pl, f, (hot_dtype)7, s), HOT_REF_EARG);
  ck_assert_int_eq(ref_layer_save(&pl, f, (hot_dtype)-1, &sv), HOT_REF_EARG);
  /* AUTO granularity must be resolved first */
  ck_assert_int_eq(ref_hq_quant_g(&pl, f, HOT_DT_F32, HOT_GRAN_AUTO, 0, 0, c8, s), HOT_REF_EARG);
  /* zero sizes and mismatched shapes */
  bad = pl; bad.T = 0; bad.B = 0;
  ck_assert_int_eq(ref_plan_check(&bad), HOT_REF_ESHAPE);
  ck_assert_int_eq(ref_bias(&bad, f, HOT_DT_F32, s), HOT_REF_ESHAPE);
  bad = pl; bad.T = pl.T + 1;
  ck_assert_int_eq(ref_hq_quant_w(&bad, f, HOT_DT_F32, c8, s), HOT_REF_ESHAPE);
  bad = pl; bad.hq.o_pad = pl.O;
  ck_assert_int_eq(ref_hq_quant_g(&bad, f, HOT_DT_F32, HOT_GRAN_ROW, 0, 0, c8, s), HOT_REF_ESHAPE);
  bad = pl; bad.hq.gemm.k_pad = pl.hq.o_pad - 2;
  ck_assert_int_eq(ref_gemm_gx(&bad, c8, s, c8, 1.0f, f), HOT_REF_ESHAPE);
  bad = pl; bad.hq.block = 12;
  ck_assert_int_eq(ref_plan_check(&bad), HOT_REF_ESHAPE);
  bad = pl; bad.hla.rank = pl.hla.block + 1;
  ck_assert_int_eq(ref_hla_quant_x(&bad, f, HOT_DT_F32, c8, s), HOT_REF_ESHAPE);
  bad = pl; bad.hla.rows[1] = bad.hla.rows[0];
  ck_assert_int_eq(ref_hla_quant_g(&bad, f, HOT_DT_F32, 0, 0, c8, s), HOT_REF_ESHAPE);
  bad = pl; bad.hla.k = pl.hla.k + 1;
  ck_assert_int_eq(ref_gemm_gw(&bad, c8, k_one, c8, k_one, f), HOT_REF_ESHAPE);
  bad = pl; bad.hla.seg_len = pl.hla.seg_len + 1;
  ck_assert_int_eq(ref_lqs(&bad, f, HOT_DT_F32, 0, 0, &lq), HOT_REF_ESHAPE);
  bad = pl; bad.hla.enabled = 0;
  ck_assert_int_eq(ref_gemm_gw(&bad, c8, k_one, c8, k_one, f), HOT_REF_ESHAPE);
  ck_assert_int_eq(ref_hla_transform(&bad, f, HOT_DT_F32, 16, f), HOT_REF_ESHAPE);
  bad = pl; bad.hq.g.bits = 1;
  ck_assert_int_eq(ref_plan_check(&bad), HOT_REF_ESHAPE);
  /* non-finite input */
  f[5] = NAN;
  ck_assert_int_eq(ref_bias(&pl, f, HOT_DT_F32, s), HOT_REF_ENONFINITE);
  ck_assert_int_eq(ref_hq_quant_w(&pl, f, HOT_DT_F32, c8, s), HOT_REF_ENONFINITE);
  ck_assert_int_eq(ref_layer_save(&pl, f, HOT_DT_F32, &sv), HOT_REF_ENONFINITE);
  ck_assert(sv.q_x == NULL && sv.x == NULL);
  printf("bad arguments: NULLs, zero sizes, 12 kinds of mismatched plans, overflow, NaN -> codes\n");
}
END_TEST

int main(void) {
  Suite *s = suite_create("ref_layer");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, awkward_layer);
  tcase_add_test(tc, gemm_matches_naive);
  tcase_add_test(tc, per_sample_scales);
  tcase_add_test(tc, gemm_wraps_like_the_tensor_cores);
  tcase_add_test(tc, bias_order);
  tcase_add_test(tc, dtypes);
  tcase_add_test(tc, abc_bytes);
  tcase_add_test(tc, abc_unpack_pack);
  tcase_add_test(tc, paper_code_no_op);
  tcase_add_test(tc, real_layer_time);
  tcase_add_test(tc, bad_arguments);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* test_ref_sample.c — per-sample scales of the HLA operands g^ and x^ (CONTRACT.md 6, 9, 11,
 * 14): the twins' scale groups, the grouped code layout, the segmented g_w epilogue, B = 1 equal
 * to per tensor bit for bit, and the accuracy that per-sample scales exist for. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "ref_util.h"

/* A plan of B samples of L tokens with g^ / x^ granularities gg / gx (tri 50 %, p = 16). */
static hot_layer_plan make(int64_t B, int64_t L, int64_t O, int64_t I, hot_gran gg, hot_gran gx,
                           int kstep) {
  tp_args a = tp_default(B, L, O, I);
  a.hla_g_gran = gg;
  a.hla_x_gran = gx;
  a.hla_kstep = kstep;
  hot_layer_plan pl;
  ck_assert_int_eq(tp_make(&a, &pl), 0);
  return pl;
}

static float *normal(int64_t n, uint64_t seed, double sd) {
  float *v = malloc((size_t)n * sizeof *v);
  tp_rng r;
  tp_seed(&r, seed);
  tp_fill_normal(&r, v, n, sd);
  return v;
}

/* Multiplies the rows of sample b (L rows of cols) by f. */
static void scale_sample(float *v, int64_t L, int64_t cols, int64_t b, float f) {
  for (int64_t i = b * L * cols; i < (b + 1) * L * cols; ++i) v[i] *= f;
}

/* Scale groups: scales are the per-sample amax scales, codes sit at the grouped positions with
 * zeros in every group's tail, both quantizers, both granularities of the other operand. */
START_TEST(groups_scales_and_layout) {
  const int64_t B = 3, L = 40, O = 24, I = 20; /* L_p = 48: 3 blocks x 10 rows = 30 per sample */
  for (int other = 0; other < 2; ++other) {
    hot_gran go = other ? HOT_GRAN_TENSOR : HOT_GRAN_SAMPLE;
    hot_layer_plan pl = make(B, L, O, I, HOT_GRAN_SAMPLE, go, 32);
    ck_assert_int_eq(pl.hla.groups, 3);
    ck_assert_int_eq(pl.hla.group_k, 30);
    ck_assert_int_eq(pl.hla.group_k_pad, 32);
    ck_assert_int_eq(pl.hla.gemm.k_pad, 96);
    float *g = normal(B * L * O, 7, 1.0);
    scale_sample(g, L, O, 1, 50.0f); /* sample 1 dominates */
    float *t = malloc((size_t)(pl.hla.k * O) * sizeof *t);
    ck_assert_int_eq(ref_hla_transform(&pl, g, HOT_DT_F32, O, t), 0);
    int8_t *q = malloc((size_t)(O * pl.hla.gemm.k_pad));
    memset(q, 0x55, (size_t)(O * pl.hla.gemm.k_pad)); /* garbage: the twin writes every byte */
    float s[3];
    ck_assert_int_eq(ref_hla_quant_g(&pl, g, HOT_DT_F32, 9, 2, q, s), 0);
    int64_t tail_bad = 0, code_bad = 0;
    for (int64_t j = 0; j < 3; ++j) {
      float amax = 0.0f;
      for (int64_t k = j * 30; k < (j + 1) * 30; ++k)
        for (int64_t o = 0; o < O; ++o) amax = fmaxf(amax, fabsf(t[k * O + o]));
      ck_assert_float_eq(s[j], hot_scale(amax, 8));
      ref_rng rng;
      ref_rng_init(&rng, 9, (uint32_t)pl.layer_id * 16u + HOT_TENSOR_HLA_G, 2);
      for (int64_t o = 0; o < O; ++o) {
        for (int64_t k = 0; k < 30; ++k) {
          const int64_t kk = j * 30 + k, idx = kk * O + o;
          const int want = hot_quant_sr(t[idx], s[j], 127, ref_rng_word(&rng, (uint64_t)idx));
          code_bad += q[o * 96 + j * 32 + k] != want;
        }
        for (int64_t k = 30; k < 32; ++k) tail_bad += q[o * 96 + j * 32 + k] != 0;
      }
    }
    printf("g^ per sample (x^ %s): scales %.4g %.4g %.4g, %lld wrong codes, %lld non-zero tail\n",
           other ? "per tensor" : "per sample", s[0], s[1], s[2], (long long)code_bad,
           (long long)tail_bad);
    ck_assert_int_eq(code_bad, 0);
    ck_assert_int_eq(tail_bad, 0);
    ck_assert_float_gt(s[1], 10.0f * s[0]); /* the dominating sample has its own scale */
    /* x^ in the same plan: per sample or one scale repeated, codes in the same grouped layout */
    float *x = normal(B * L * I, 8, 1.0), sx[3], sx1;
    int8_t *qx = malloc((size_t)(I * 96)), *q1 = malloc((size_t)(I * 96));
    ck_assert_int_eq(ref_hla_quant_x(&pl, x, HOT_DT_F32, qx, sx), 0);
    if (other) {
      ck_assert(sx[0] == sx[1] && sx[1] == sx[2]);
      /* the per-tensor plan's codes, moved to the grouped positions */
      hot_layer_plan pt = make(B, L, O, I, HOT_GRAN_TENSOR, HOT_GRAN_TENSOR, 32);
      ck_assert_int_eq(pt.hla.gemm.k_pad, 96); /* 90 rounded up to 32 */
      ck_assert_int_eq(ref_hla_quant_x(&pt, x, HOT_DT_F32, q1, &sx1), 0);
      ck_assert_float_eq(sx1, sx[0]);
      for (int64_t i = 0; i < I; ++i)
        for (int64_t kk = 0; kk < 90; ++kk)
          ck_assert_int_eq(qx[i * 96 + (kk / 30) * 32 + kk % 30], q1[i * 96 + kk]);
    } else {
      ck_assert(sx[0] != sx[1] || sx[1] != sx[2]);
    }
    free(g); free(t); free(q); free(x); free(qx); free(q1);
  }
}
END_TEST

/* One sample: per sample is per tensor bit for bit (codes, scale, g_w), whatever the layout. */
START_TEST(one_sample_is_per_tensor) {
  for (int flat = 0; flat < 2; ++flat) {
    tp_args a = tp_default(1, 70, 33, 17);
    a.layout = flat ? HOT_LAYOUT_FLAT : HOT_LAYOUT_SAMPLE;
    hot_layer_plan pt, ps;
    ck_assert_int_eq(tp_make(&a, &pt), 0);
    a.hla_g_gran = a.hla_x_gran = HOT_GRAN_SAMPLE;
    ck_assert_int_eq(tp_make(&a, &ps), 0);
    ck_assert_int_eq(ps.hla.groups, 1);
    ck_assert_int_eq(ps.hla.gemm.segmented, 0);
    float *g = normal(70 * 33, 3, 1.0), *x = normal(70 * 17, 4, 2.0);
    size_t ng = (size_t)(33 * pt.hla.gemm.k_pad), nx = (size_t)(17 * pt.hla.gemm.k_pad);
    int8_t *g1 = malloc(ng), *g2 = malloc(ng), *x1 = malloc(nx), *x2 = malloc(nx);
    float sg1, sg2, sx1, sx2, *w1 = malloc(33 * 17 * 4), *w2 = malloc(33 * 17 * 4);
    ck_assert_int_eq(ref_hla_quant_g(&pt, g, HOT_DT_F32, 5, 1, g1, &sg1), 0);
    ck_assert_int_eq(ref_hla_quant_g(&ps, g, HOT_DT_F32, 5, 1, g2, &sg2), 0);
    ck_assert_int_eq(ref_hla_quant_x(&pt, x, HOT_DT_F32, x1, &sx1), 0);
    ck_assert_int_eq(ref_hla_quant_x(&ps, x, HOT_DT_F32, x2, &sx2), 0);
    ck_assert(memcmp(g1, g2, ng) == 0 && memcmp(x1, x2, nx) == 0);
    ck_assert(sg1 == sg2 && sx1 == sx2);
    ck_assert_int_eq(ref_gemm_gw(&pt, g1, &sg1, x1, &sx1, w1), 0);
    ck_assert_int_eq(ref_gemm_gw(&ps, g2, &sg2, x2, &sx2, w2), 0);
    ck_assert(memcmp(w1, w2, 33 * 17 * 4) == 0);
    free(g); free(x); free(g1); free(g2); free(x1); free(x2); free(w1); free(w2);
  }
}
END_TEST

/* The segmented epilogue of CONTRACT 14, recomputed here element by element with plain loops:
 * int32 sum per group (mod 2^32), v_j = (float)acc_j * c_j, fp32 sum in group order. Odd M/N
 * exercise the twin's 4 x 4 blocks and their ragged edges; codes at +-127 make the sums big. */
START_TEST(segmented_epilogue) {
  const int64_t B = 5, L = 16, O = 7, I = 9;
  hot_layer_plan pl = make(B, L, O, I, HOT_GRAN_SAMPLE, HOT_GRAN_SAMPLE, 32);
  const int64_t G = pl.hla.groups, kp = pl.hla.gemm.k_pad, gkp = pl.hla.group_k_pad;
  ck_assert_int_eq(G, 5);
  int8_t *a = malloc((size_t)(O * kp)), *b = malloc((size_t)(I * kp));
  tp_rng r;
  tp_seed(&r, 11);
  for (int64_t i = 0; i < O * kp; ++i) a[i] = (int8_t)((int)(tp_u64(&r) % 255) - 127);
  for (int64_t i = 0; i < I * kp; ++i) b[i] = (int8_t)((int)(tp_u64(&r) % 255) - 127);
  float sg[5] = {1e-3f, 3e-2f, 7.5e-4f, 0.25f, 1e-5f}, sx[5] = {2e-2f, 1e-3f, 0.5f, 3e-4f, 9.0f};
  float *w = malloc((size_t)(O * I) * sizeof *w);
  ck_assert_int_eq(ref_gemm_gw(&pl, a, sg, b, sx, w), 0);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      float want = 0.0f;
      for (int64_t j = 0; j < G; ++j) {
        uint32_t acc = 0;
        for (int64_t k = j * gkp; k < (j + 1) * gkp; ++k)
          acc += (uint32_t)((int32_t)a[o * kp + k] * (int32_t)b[i * kp + k]);
        const float c = HOT_DIV(HOT_MUL(sg[j], sx[j]), (float)pl.hla.block);
        const float v = HOT_MUL(HOT_I2F((int32_t)acc), c);
        want = j == 0 ? v : HOT_ADD(want, v);
      }
      ck_assert_msg(w[o * I + i] == want, "g_w[%lld,%lld] = %a, want %a", (long long)o,
                    (long long)i, (double)w[o * I + i], (double)want);
    }
  free(a); free(b); free(w);
}
END_TEST

/* Relative g_w error against fp64 of per-tensor and per-sample HLA scales on B x L data. */
static void gw_errors(const float *g, const float *x, int64_t B, int64_t L, int64_t O, int64_t I,
                      double *e_tensor, double *e_sample) {
  const int64_t T = B * L;
  double *ex = malloc((size_t)(O * I) * sizeof *ex);
  ck_assert_int_eq(ref_exact_gw(T, O, I, g, x, ex), 0);
  for (int k = 0; k < 2; ++k) {
    hot_gran gr = k ? HOT_GRAN_SAMPLE : HOT_GRAN_TENSOR;
    tp_args a = tp_default(B, L, O, I);
    a.p = 16;
    a.sel = HOT_SEL_FULL; /* no rank cut: the error is the quantizers' */
    a.hla_g_gran = a.hla_x_gran = gr;
    hot_layer_plan pl;
    ck_assert_int_eq(tp_make(&a, &pl), 0);
    int8_t *qg = malloc((size_t)(O * pl.hla.gemm.k_pad)), *qx = malloc((size_t)(I * pl.hla.gemm.k_pad));
    float *sg = malloc((size_t)pl.hla.groups * 4), *sx = malloc((size_t)pl.hla.groups * 4);
    float *w = malloc((size_t)(O * I) * sizeof *w);
    ck_assert_int_eq(ref_hla_quant_g(&pl, g, HOT_DT_F32, 1, 1, qg, sg), 0);
    ck_assert_int_eq(ref_hla_quant_x(&pl, x, HOT_DT_F32, qx, sx), 0);
    ck_assert_int_eq(ref_gemm_gw(&pl, qg, sg, qx, sx, w), 0);
    *(k ? e_sample : e_tensor) = ref_rel_err(w, ex, O * I);
    free(qg); free(qx); free(sg); free(sx); free(w);
  }
  free(ex);
}

/* What per-sample scales are for: samples of different magnitude. With g of sample 0 x30 and
 * its x /30, every sample's term of g_w = sum_b g_b^T x_b has a similar size, but one scale per
 * tensor is set by sample 0 for g^ (the others get a few codes) and by samples 1..3 for x^
 * (sample 0 gets a few codes); per-sample scales give every sample the full range. On samples of
 * one magnitude the two are close. */
START_TEST(per_sample_accuracy) {
  const int64_t B = 4, L = 64, O = 48, I = 40;
  float *g = normal(B * L * O, 21, 1.0), *x = normal(B * L * I, 22, 1.0);
  double et, es;
  gw_errors(g, x, B, L, O, I, &et, &es);
  printf("g_w, i.i.d. samples:         per tensor %.4f, per sample %.4f\n", et, es);
  ck_assert_double_lt(fabs(es - et), 0.25 * et);
  scale_sample(g, L, O, 0, 30.0f);
  scale_sample(x, L, I, 0, 1.0f / 30.0f);
  gw_errors(g, x, B, L, O, I, &et, &es);
  printf("g_w, sample 0: g x30, x /30: per tensor %.4f, per sample %.4f\n", et, es);
  ck_assert_double_lt(es, 0.5 * et);
  free(g); free(x);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ref_sample");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, groups_scales_and_layout);
  tcase_add_test(tc, one_sample_is_per_tensor);
  tcase_add_test(tc, segmented_epilogue);
  tcase_add_test(tc, per_sample_accuracy);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

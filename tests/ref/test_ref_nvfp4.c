/* test_ref_nvfp4.c — the NVFP4 twin (templates/nvfp4_ref.c) against CONTRACT.md section 20:
 * hand-computed code tables, exhaustive E2M1/E4M3 round trips and boundaries, SR's mean and
 * range, a block-scaled GEMM with a known answer, one layer against fp64, and mutants of the
 * codecs (swapped nibbles, an E4M3 rounding one ulp off, ties away from zero, SR with <=) that
 * the same checks must reject. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hot_math.cuh"
#include "nvfp4_ref.h"
#include "plan.h"
#include "ref.h"

/* ---- the codecs under test, as a table of functions (the real ones or a mutant) ---------- */

typedef struct {
  const char *name;
  unsigned (*e2m1_rtn)(float);
  unsigned (*e2m1_sr)(float, uint32_t);
  unsigned (*e4m3)(float, nvfp4_round, uint32_t);
  int nibble_hi_first; /* packing: 0 = element 2j in the low nibble (the contract) */
} codec;

static unsigned mut_e2m1_away(float u) { /* ties away from zero */
  float m = fminf(fabsf(u), 6.0f);
  unsigned best = 0;
  for (unsigned c = 0; c < 8; ++c)
    if (fabsf(nvfp4_e2m1_decode(c) - m) <= fabsf(nvfp4_e2m1_decode(best) - m)) best = c;
  return (u < 0 && best) ? best | 8u : best;
}
static unsigned mut_e2m1_sr_le(float u, uint32_t w) { /* rho <= frac instead of < */
  float m = fminf(fabsf(u), 6.0f), step = m < 2 ? 0.5f : (m < 4 ? 1.0f : 2.0f);
  float t = m / step, lo = floorf(t);
  unsigned c = nvfp4_e2m1_rtn((lo + (hot_rho(w) <= t - lo ? 1.0f : 0.0f)) * step);
  return (u < 0 && c) ? c | 8u : c;
}
static unsigned mut_e4m3_ulp(float v, nvfp4_round mode, uint32_t w) { /* one ulp high above 1 */
  unsigned c = nvfp4_e4m3_encode(v, mode, w);
  return (fabsf(v) > 1.0f && (c & 0x7Fu) < 0x7Eu) ? c + 1u : c;
}

static const codec REAL = {"contract", nvfp4_e2m1_rtn, nvfp4_e2m1_sr, nvfp4_e4m3_encode, 0};
static const codec MUTANTS[] = {
    {"E2M1 ties away from zero", mut_e2m1_away, nvfp4_e2m1_sr, nvfp4_e4m3_encode, 0},
    {"E2M1 SR with rho <= frac", nvfp4_e2m1_rtn, mut_e2m1_sr_le, nvfp4_e4m3_encode, 0},
    {"E4M3 one ulp high", nvfp4_e2m1_rtn, nvfp4_e2m1_sr, mut_e4m3_ulp, 0},
    {"nibbles swapped", nvfp4_e2m1_rtn, nvfp4_e2m1_sr, nvfp4_e4m3_encode, 1},
};

/* ---- the checks, each returning the number of failures (printing the first few) ---------- */

static int fails(int *n, const char *what) {
  if (++*n <= 3) printf("    fails: %s\n", what);
  return 0;
}

/* Hand table: E2M1 RTN of the midpoints (ties to the even code) and around them. */
static int check_e2m1_table(const codec *c) {
  static const struct { float u; unsigned code; } T[] = {
      {0.0f, 0x0}, {-0.0f, 0x0}, {0.1f, 0x0}, {0.25f, 0x0}, {0.26f, 0x1}, {0.5f, 0x1},
      {0.75f, 0x2}, {1.0f, 0x2}, {1.25f, 0x2}, {1.26f, 0x3}, {1.75f, 0x4}, {2.5f, 0x4},
      {2.51f, 0x5}, {3.5f, 0x6}, {4.99f, 0x6}, {5.0f, 0x6}, {5.01f, 0x7}, {6.0f, 0x7},
      {7.0f, 0x7}, {1e30f, 0x7}, {-0.2f, 0x0}, {-0.3f, 0x9}, {-1.75f, 0xC}, {-5.0f, 0xE},
      {-6.5f, 0xF}};
  int n = 0;
  char buf[96];
  for (size_t i = 0; i < sizeof T / sizeof T[0]; ++i)
    if (c->e2m1_rtn(T[i].u) != T[i].code) {
      snprintf(buf, sizeof buf, "E2M1 RTN(%g) = 0x%x, want 0x%x", (double)T[i].u,
               c->e2m1_rtn(T[i].u), T[i].code);
      fails(&n, buf);
    }
  for (unsigned k = 0; k < 16; ++k) { /* every value round-trips (-0 to +0) */
    unsigned want = k == 8 ? 0 : k;
    if (c->e2m1_rtn(nvfp4_e2m1_decode(k)) != want || c->e2m1_sr(nvfp4_e2m1_decode(k), 0xffffffffu) != want)
      fails(&n, "E2M1 round trip");
  }
  return n;
}

/* Every E4M3 code round-trips under RTN, UP and SR; midpoints of neighbours go to the even
 * code, one float either side to the nearer; UP takes the upper neighbour of anything between;
 * 448, saturation, NaN and Inf. */
static int check_e4m3(const codec *c) {
  int n = 0;
  char buf[96];
  for (unsigned k = 0; k < 256; ++k) {
    float v = nvfp4_e4m3_decode(k);
    unsigned want = (k & 0x7F) == 0x7F ? 0x7F : k;
    for (int mode = 0; mode < 3; ++mode)
      if (c->e4m3(v, (nvfp4_round)mode, 0x12345678u) != want) {
        snprintf(buf, sizeof buf, "E4M3 code 0x%02x mode %d", k, mode);
        fails(&n, buf);
      }
  }
  for (unsigned k = 0; k < 0x7E; ++k) { /* positive neighbours k, k+1 */
    float lo = nvfp4_e4m3_decode(k), hi = nvfp4_e4m3_decode(k + 1), mid = (lo + hi) / 2;
    unsigned even = (k & 1) ? k + 1 : k;
    if (c->e4m3(mid, NVFP4_ROUND_RTN, 0) != even || c->e4m3(-mid, NVFP4_ROUND_RTN, 0) != (even | 0x80u) ||
        c->e4m3(nextafterf(mid, 0.0f), NVFP4_ROUND_RTN, 0) != k ||
        c->e4m3(nextafterf(mid, 1e9f), NVFP4_ROUND_RTN, 0) != k + 1 ||
        c->e4m3(nextafterf(lo, 1e9f), NVFP4_ROUND_UP, 0) != k + 1) {
      snprintf(buf, sizeof buf, "E4M3 between 0x%02x and 0x%02x", k, k + 1);
      fails(&n, buf);
    }
  }
  if (c->e4m3(448.0f, NVFP4_ROUND_RTN, 0) != 0x7E || c->e4m3(464.0f, NVFP4_ROUND_RTN, 0) != 0x7E ||
      c->e4m3(1e30f, NVFP4_ROUND_UP, 0) != 0x7E || c->e4m3(-INFINITY, NVFP4_ROUND_RTN, 0) != 0xFE ||
      c->e4m3(NAN, NVFP4_ROUND_RTN, 0) != 0x7F || c->e4m3(0x1p-10f, NVFP4_ROUND_RTN, 0) != 0x00 ||
      c->e4m3(0x1p-10f, NVFP4_ROUND_UP, 0) != 0x01 || c->e4m3(0x1p-20f, NVFP4_ROUND_UP, 0) != 0x01 ||
      c->e4m3(1.0f, NVFP4_ROUND_RTN, 0) != 0x38 || c->e4m3(17.0f, NVFP4_ROUND_RTN, 0) != 0x58 ||
      c->e4m3(17.0f, NVFP4_ROUND_UP, 0) != 0x59 || c->e4m3(0.3f, NVFP4_ROUND_RTN, 0) != 0x2A)
    fails(&n, "E4M3 hand table (448, saturation, Inf, NaN, subnormals, 1, 17, 0.3)");
  return n;
}

/* SR: unbiased (the mean of 4096 Philox draws within 4 standard errors of u), never outside the
 * two neighbours; the same for E4M3's SR. */
static int check_sr(const codec *c) {
  static const float U[] = {0.1f, 0.3f, 0.7f, 1.1f, 1.9f, 2.2f, 3.7f, 4.5f, 5.9f, -2.6f};
  int n = 0;
  char buf[96];
  for (size_t i = 0; i < sizeof U / sizeof U[0]; ++i) {
    double s = 0, s2 = 0;
    float m = fabsf(U[i]);
    for (uint32_t k = 0; k < 4096; ++k) {
      float v = nvfp4_e2m1_decode(c->e2m1_sr(U[i], hot_rand_word(7, 1, 3, k)));
      float gap = m < 2 ? 0.5f : (m < 4 ? 1.0f : 2.0f);
      if (fabsf(fabsf(v) - m) >= gap) fails(&n, "E2M1 SR outside the neighbours");
      s += v;
      s2 += (double)v * v;
    }
    double mean = s / 4096, sd = sqrt(fmax(s2 / 4096 - mean * mean, 1e-12) / 4096);
    if (fabs(mean - U[i]) > 4 * sd + 1e-9) {
      snprintf(buf, sizeof buf, "E2M1 SR mean %.4f for u = %g", mean, (double)U[i]);
      fails(&n, buf);
    }
  }
  /* exact fractions: u = 0.375 is 3/4 of the way from 0 to 0.5: with the 2^24 possible rho,
   * rounds up for exactly rho < 0.75, i.e. word >> 8 < 0xC00000. */
  if (nvfp4_e2m1_decode(c->e2m1_sr(0.375f, 0xBFFFFFFFu)) != 0.5f ||
      nvfp4_e2m1_decode(c->e2m1_sr(0.375f, 0xC0000000u)) != 0.0f)
    fails(&n, "E2M1 SR threshold at rho = frac");
  double s = 0;
  for (uint32_t k = 0; k < 4096; ++k) s += nvfp4_e4m3_decode(c->e4m3(17.3f, NVFP4_ROUND_SR, hot_rand_word(7, 2, 3, k)));
  if (fabs(s / 4096 - 17.3) > 0.05) fails(&n, "E4M3 SR mean");
  return n;
}

/* Packs 16 E2M1 codes the codec's way. */
static void pack(const codec *c, const unsigned *codes, int k, uint8_t *row) {
  memset(row, 0, (size_t)k / 2);
  for (int t = 0; t < k; ++t) {
    int hi = (t & 1) ^ c->nibble_hi_first;
    row[t >> 1] = (uint8_t)(row[t >> 1] | (hi ? codes[t] << 4 : codes[t]));
  }
}

/* The quantiser's layout and a hand-computed block: s_t = 1 (amax 2688), one block of amax 6
 * (scale 1.0 = 0x38), one of amax 5 (scale UP(5/6) = 0.875 = 0x36), one zero block (scale 0). */
static int check_quant_layout(const codec *c) {
  float v[64] = {0};
  v[0] = 6.0f, v[1] = -3.0f, v[2] = 1.25f, v[3] = 0.75f, v[15] = -0.25f; /* block 0 */
  v[16] = 5.0f, v[17] = 1.0f, v[18] = -2.0f;                           /* block 1 */
  v[48] = 2688.0f;                                                       /* block 3 */
  uint8_t codes[32], scales[4];
  float s_t;
  int n = 0;
  if (nvfp4_quantize(v, 1, 64, 0, NULL, codes, scales, &s_t) != 0 || s_t != 1.0f) return fails(&n, "quantize"), 1;
  unsigned want[64] = {0};
  want[0] = 0x7, want[1] = 0xD, want[2] = 0x2, want[3] = 0x2, want[15] = 0x0;
  want[16] = c->e2m1_rtn(5.0f / 0.875f), want[17] = c->e2m1_rtn(1.0f / 0.875f),
  want[18] = c->e2m1_rtn(-2.0f / 0.875f), want[48] = 0x7;
  uint8_t row[32];
  pack(c, want, 64, row);
  if (memcmp(row, codes, 32) != 0) fails(&n, "NVFP4 codes (values, ties, nibble order)");
  if (scales[0] != c->e4m3(1.0f, NVFP4_ROUND_UP, 0) || scales[1] != c->e4m3(5.0f / 6.0f, NVFP4_ROUND_UP, 0) ||
      scales[1] != 0x36 || scales[2] != 0 || scales[3] != c->e4m3(448.0f, NVFP4_ROUND_RTN, 0))
    fails(&n, "NVFP4 block scales (1.0, UP(5/6) = 0.875, zero block 0, 448)");
  return n;
}

/* GEMM with an exact answer: 64 codes of 1.5 against 64 of -0.5, but one pair 6 * 0.5 in
 * block 0; block scales 2 and 0.25, tensor scales 3 and 0.5, div 1. Block sums -8.25, -12, -12,
 * -12 (exact), total -44.25, times 2 * 0.25 and (3 * 0.5) / 4 on doubled values: -33.1875. */
static int check_gemm(const codec *c) {
  unsigned ca[64], cb[64];
  for (int t = 0; t < 64; ++t) ca[t] = 0x3, cb[t] = 0x9;
  ca[5] = 0x7, cb[5] = 0x1; /* one product 6 * 0.5 = 3 in block 0 instead of -0.75 */
  uint8_t a[32], b[32], sa[4], sb[4];
  pack(c, ca, 64, a);
  pack(c, cb, 64, b);
  for (int j = 0; j < 4; ++j) sa[j] = (uint8_t)c->e4m3(2.0f, NVFP4_ROUND_RTN, 0), sb[j] = (uint8_t)c->e4m3(0.25f, NVFP4_ROUND_RTN, 0);
  float out;
  int n = 0;
  if (nvfp4_gemm(a, sa, 3.0f, b, sb, 0.5f, 1, 1, 64, 1, &out) != 0) return fails(&n, "gemm"), 1;
  /* block 0: 15 * -0.75 + 3 = -8.25; blocks 1..3: -12; total -44.25; * 2 * 0.25 * 3 * 0.5 */
  float want = (float)(-44.25 * 0.5 * 1.5);
  if (out != want) {
    char buf[64];
    snprintf(buf, sizeof buf, "GEMM %g, want %g", (double)out, (double)want);
    fails(&n, buf);
  }
  return n;
}

static int run_all(const codec *c) {
  return check_e2m1_table(c) + check_e4m3(c) + check_sr(c) + check_quant_layout(c) + check_gemm(c);
}

START_TEST(contract_passes) {
  int n = run_all(&REAL);
  printf("  contract codecs: %d failures\n", n);
  ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(mutants_caught) {
  for (size_t i = 0; i < sizeof MUTANTS / sizeof MUTANTS[0]; ++i) {
    printf("  mutant '%s':\n", MUTANTS[i].name);
    int n = run_all(&MUTANTS[i]);
    printf("  mutant '%s': %d failures (must be > 0)\n", MUTANTS[i].name, n);
    ck_assert_msg(n > 0, "mutant '%s' passed every check", MUTANTS[i].name);
  }
}
END_TEST

/* ---- one layer ------------------------------------------------------------------------------ */

static double rel_err(const float *a, const double *ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return sqrt(num / den);
}

static uint64_t lcg = 0x9E3779B97F4A7C15ull;
static float normal(void) { /* Box-Muller on a 64-bit LCG: test data only */
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  double u1 = ((double)(lcg >> 11) + 0.5) / 9007199254740992.0;
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  double u2 = (double)(lcg >> 11) / 9007199254740992.0;
  return (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
}

enum { B_ = 2, L_ = 64, O_ = 128, I_ = 64, T_ = B_ * L_ };

/* x, g_y: independent random walks along each sample's tokens (smooth, as activations and
 * gradients of neighbouring tokens are) or i.i.d. normals; w normals. */
static void layer_data(int walks, float *x, float *w, float *g) {
  for (int i = 0; i < O_ * I_; ++i) w[i] = normal();
  for (int t = 0; t < T_; ++t) {
    for (int i = 0; i < I_; ++i) x[t * I_ + i] = (walks && t % L_ ? x[(t - 1) * I_ + i] : 0.0f) + normal();
    for (int o = 0; o < O_; ++o) g[t * O_ + o] = (walks && t % L_ ? g[(t - 1) * O_ + o] : 0.0f) + normal();
  }
}

START_TEST(layer_against_fp64) {
  static float x[T_ * I_], w[O_ * I_], g[T_ * O_], gx[T_ * I_], gx2[T_ * I_], gw[O_ * I_];
  static double ex[T_ * I_], ew[O_ * I_];
  int rows[64];
  for (int s = 0; s < 64; ++s) { /* full basis in ascending sequency */
    int gc = s ^ (s >> 1), r = 0;
    for (int b = 0; b < 6; ++b) r |= ((gc >> b) & 1) << (5 - b);
    rows[s] = r;
  }
  for (int walks = 0; walks < 2; ++walks) {
    layer_data(walks, x, w, g);
    for (int t = 0; t < T_; ++t)
      for (int i = 0; i < I_; ++i) {
        double a = 0;
        for (int o = 0; o < O_; ++o) a += (double)g[t * O_ + o] * w[o * I_ + i];
        ex[t * I_ + i] = a;
      }
    for (int o = 0; o < O_; ++o)
      for (int i = 0; i < I_; ++i) {
        double a = 0;
        for (int t = 0; t < T_; ++t) a += (double)g[t * O_ + o] * x[t * I_ + i];
        ew[o * I_ + i] = a;
      }
    nvfp4_layer ly = {B_, L_, O_, I_, 64, 64, 0, rows, NVFP4_HLA_MXFP8, 5};
    ck_assert_int_eq(nvfp4_hq_gx(&ly, g, w, 11, 1, gx), 0);
    ck_assert_int_eq(nvfp4_hq_gx(&ly, g, w, 11, 1, gx2), 0);
    ck_assert_msg(memcmp(gx, gx2, sizeof gx) == 0, "same seed and step, different bits");
    double e_gx = rel_err(gx, ex, T_ * I_);
    ck_assert_int_eq(nvfp4_hq_gx(&ly, g, w, 11, 2, gx2), 0);
    ck_assert_msg(memcmp(gx, gx2, sizeof gx) != 0, "another step drew the same SR");
    ck_assert_int_eq(nvfp4_hla_gw(&ly, g, x, 11, 1, gw), 0);
    double e_mx = rel_err(gw, ew, O_ * I_);
    ly.hla_fmt = NVFP4_HLA_NVFP4;
    ck_assert_int_eq(nvfp4_hla_gw(&ly, g, x, 11, 1, gw), 0);
    double e_fp4 = rel_err(gw, ew, O_ * I_);
    printf("  %s data: g_x %.4f (HQ b = 16, NVFP4); g_w full basis p = 64: MXFP8 %.4f, NVFP4 %.4f\n",
           walks ? "walks" : "gaussian", e_gx, e_mx, e_fp4);
    ck_assert_msg(e_gx > 0.12 && e_gx < 0.25, "g_x error %.4f outside 0.12..0.25", e_gx);
    ck_assert_msg(e_mx < 0.06, "MXFP8 g_w error %.4f above 0.06", e_mx);
    ck_assert_msg(e_fp4 > 1.5 * e_mx, "NVFP4 HLA (%.4f) not clearly worse than MXFP8 (%.4f)", e_fp4, e_mx);
  }
}
END_TEST

/* Recipe nvfp4 through the layer walk (templates/layer_ref.c: the step table hands the hq, hla
 * and gemm steps of a plan_layer_cpu plan to ref_step_nvfp4) gives the bits of the whole-layer
 * twin nvfp4_hq_gx / nvfp4_hla_gw on the same layer, seed, step and id: save (ABC keeps the MXFP8
 * codes of x^) and backward, with and without ABC, layouts sample and flat, padded O and K. */
START_TEST(layer_walk_is_the_twin) {
  static const struct { int64_t B, L, O, I; int abc; hot_layout lay; } k[] = {
      {2, 70, 40, 24, 1, HOT_LAYOUT_AUTO}, {1, 64, 33, 17, 0, HOT_LAYOUT_SAMPLE},
      {3, 20, 16, 50, 1, HOT_LAYOUT_FLAT}};
  for (size_t c = 0; c < sizeof k / sizeof k[0]; ++c) {
    hot_layer_spec sp;
    plan_spec_defaults(&sp, HOT_RECIPE_NVFP4);
    sp.in_features = k[c].I, sp.out_features = k[c].O, sp.abc.enabled = k[c].abc;
    sp.hla.layout = k[c].lay, sp.bias = 0;
    hot_layer_plan pl;
    char err[256];
    ck_assert_msg(plan_layer_cpu(&sp, k[c].B, k[c].L, HOT_RECIPE_NVFP4, 9, &pl, err, sizeof err) == 0,
                  "%s", err);
    const int64_t T = pl.T, O = pl.O, I = pl.I;
    float *x = malloc((size_t)(T * I) * 4), *w = malloc((size_t)(O * I) * 4);
    float *g = malloc((size_t)(T * O) * 4), *gx = malloc((size_t)(T * I) * 4);
    float *gw = malloc((size_t)(O * I) * 4), *tx = malloc((size_t)(T * I) * 4);
    float *tw = malloc((size_t)(O * I) * 4);
    for (int64_t i = 0; i < T * I; ++i) x[i] = normal();
    for (int64_t i = 0; i < O * I; ++i) w[i] = 0.05f * normal();
    for (int64_t i = 0; i < T * O; ++i) g[i] = 1e-3f * normal();
    hot_ref_saved sv;
    ck_assert_int_eq(ref_layer_save(&pl, x, HOT_DT_F32, &sv), HOT_REF_OK);
    ck_assert(k[c].abc ? sv.q_x && !sv.s_x && !sv.x : sv.x && !sv.q_x);
    ck_assert_int_eq(sv.bytes, plan_buffer_bytes(&pl, HOT_BUF_SAVED));
    ck_assert_int_eq(ref_layer_backward(&pl, &sv, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 0x1234, 7, gx,
                                        gw, NULL), HOT_REF_OK);
    int rows[HOT_MAX_P];
    for (int j = 0; j < pl.hla.rank; ++j) rows[j] = pl.hla.rows[j];
    nvfp4_layer ly = {pl.B, pl.L, O, I, pl.hla.block, pl.hla.rank, pl.hla.layout == HOT_LAYOUT_FLAT,
                      rows, NVFP4_HLA_MXFP8, 9};
    ck_assert_int_eq(nvfp4_hq_gx(&ly, g, w, 0x1234, 7, tx), 0);
    ck_assert_int_eq(nvfp4_hla_gw(&ly, g, x, 0x1234, 7, tw), 0);
    ck_assert_msg(memcmp(gx, tx, (size_t)(T * I) * 4) == 0, "case %zu: g_x differs", c);
    ck_assert_msg(memcmp(gw, tw, (size_t)(O * I) * 4) == 0, "case %zu: g_w differs", c);
    printf("  layer walk = twin: B=%lld L=%lld O=%lld I=%lld %s %s K=%lld k_pad=%lld, saved %lld "
           "bytes\n", (long long)pl.B, (long long)pl.L, (long long)O, (long long)I,
           k[c].abc ? "abc" : "no-abc", pl.hla.layout == HOT_LAYOUT_FLAT ? "flat" : "sample",
           (long long)pl.hla.k, (long long)pl.hla.gemm.k_pad, (long long)sv.bytes);
    ref_saved_free(&sv);
    free(x), free(w), free(g), free(gx), free(gw), free(tx), free(tw);
  }
}
END_TEST

/* The SR draws of both quantisers, element by element: code (r, c) is the codec's SR of its
 * scaled value with Philox word idx = r * idx_row + c * idx_col of (seed, tag, step), written
 * out here from hot_rand_word (CONTRACT.md 20.3, 20.4: g' idx = t * o_pad + o, g^ idx = kk * O + o
 * of the K x O math tensor, stored transposed). */
START_TEST(sr_draws_known) {
  enum { R = 5, K = 40 };
  static float v[R * K];
  for (int i = 0; i < R * K; ++i) v[i] = normal() * (i % 7 == 0 ? 30.0f : 1.0f);
  const nvfp4_stream st = {0x243F6A8885A308D3ull, 7u * 16u + 1u, 3u, 48, 1};
  uint8_t c4[R * 24], s4[R * 3], c8[R * 64], s8[R * 2];
  float s_t;
  ck_assert_int_eq(nvfp4_quantize(v, R, K, 1, &st, c4, s4, &s_t), 0);
  const nvfp4_stream sg = {0x243F6A8885A308D3ull, 7u * 16u + 2u, 3u, 1, R};
  ck_assert_int_eq(mxfp8_quantize(v, R, K, 1, &sg, c8, s8), 0);
  int n = 0;
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < K; ++c, ++n) {
      const float sb = nvfp4_e4m3_decode(s4[r * 3 + c / 16]);
      const float u = fmaxf(-6.0f, fminf(6.0f, HOT_DIV(HOT_DIV(v[r * K + c], s_t), sb)));
      const unsigned want4 = nvfp4_e2m1_sr(u, hot_rand_word(st.seed, st.tag, st.step,
                                                            (hot_u64)(r * 48 + c)));
      ck_assert_uint_eq(((unsigned)c4[r * 24 + c / 2] >> ((c & 1) * 4)) & 15u, want4);
      const float X = ldexpf(1.0f, (int)s8[r * 2 + c / 32] - 127);
      const unsigned want8 = nvfp4_e4m3_encode(HOT_DIV(v[r * K + c], X), NVFP4_ROUND_SR,
                                               hot_rand_word(sg.seed, sg.tag, sg.step,
                                                             (hot_u64)(r + c * R)));
      ck_assert_uint_eq(c8[r * 64 + c], want8);
    }
  printf("  SR draws: %d NVFP4 and %d MXFP8 codes as hot_rand_word's words give them\n", n, n);
}
END_TEST

START_TEST(bad_input) {
  float v[16] = {0};
  uint8_t c[8], s[1];
  float st;
  v[3] = NAN;
  ck_assert_int_eq(nvfp4_quantize(v, 1, 16, 0, NULL, c, s, &st), -4);
  ck_assert_int_eq(nvfp4_quantize(v, 0, 16, 0, NULL, c, s, &st), -1);
  ck_assert_int_eq(nvfp4_quantize(v, 1, 16, 1, NULL, c, s, &st), -1); /* SR without a stream */
  v[3] = 0.0f;
  ck_assert_int_eq(nvfp4_quantize(v, 1, 16, 0, NULL, c, s, &st), 0); /* all zero: codes 0 */
  ck_assert(st == 0.0f && s[0] == 0 && c[0] == 0 && c[7] == 0);
  int rows[1] = {0};
  nvfp4_layer ly = {1, 16, 16, 16, 3, 1, 0, rows, NVFP4_HLA_MXFP8, 0}; /* p not a power of two */
  ck_assert_int_eq(nvfp4_layer_k(&ly), 0);
  ck_assert_int_eq(nvfp4_hq_gx(&ly, v, v, 0, 0, v), -1);
  ck_assert_int_eq(nvfp4_gemm(c, s, 1, c, s, 1, 1, 1, 16, 3, v), -1); /* div not a power of two */
}
END_TEST

int main(void) {
  Suite *s = suite_create("ref_nvfp4");
  TCase *tc = tcase_create("nvfp4");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, contract_passes);
  tcase_add_test(tc, mutants_caught);
  tcase_add_test(tc, layer_against_fp64);
  tcase_add_test(tc, layer_walk_is_the_twin);
  tcase_add_test(tc, sr_draws_known);
  tcase_add_test(tc, bad_input);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf == 0 ? 0 : 1;
}

/* test_fast.c — the fast CPU path (runtime/cpu/fast.h) equals the reference twins bit for
 * bit: saved buffers (codes and scales, or the fp32 copy), g_x, g_w, g_b, the LQS errors and
 * choice, and the fp64 exact products, over awkward shapes (1, 3, 17, 137, 197, 260), B > 1, the
 * recipes hot / paper / paper_code, every granularity, SAWB, both HLA layouts, per-sample HLA
 * scales, RTN and SR, 2..8 bits, s4 and s8 codes, f32 / bf16 / f16 inputs and HQ / HLA / ABC
 * switched off; each at every dispatch level this CPU has (scalar, AVX2, AVX-VNNI, AVX-512 VNNI)
 * and with 1, 2 and 3 threads. The integer GEMM is also checked alone against a plain int32 sum,
 * on every kernel's tails, both operand orientations, segments and saturating code bounds, and
 * the Philox words alone against hot_rand_word (block phases, counters past 2^32); the scratch
 * blocks kept between calls are the largest handed back. Also bad arguments and non-finite
 * inputs give the twins' status, and every kernel-table entry that reports non-finite values
 * (amax, add, scale_tile) reports them at every level.
 *
 * Built a second time as test_fast_openmp (HOT_FAST_TEST_OPENMP): the same tests with every
 * parallel region on GNU OpenMP's workers (fast_use_openmp("libgomp.so.1"), the runtime loaded
 * here as an OpenMP program or PyTorch would have it), plus the pool's own checks of that mode:
 * every task once, thread numbers in range and the runtime's, nesting inline, bad names refused.
 * Without a loadable libgomp.so.1 it prints SKIP and exits 77 (CTest counts it skipped). */
#define _GNU_SOURCE /* RTLD_NOLOAD (test_fast_openmp) */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fast.h"
#include "fast_internal.h"
#include "fast_gemm.h" /* gk_cfg: which levels pack 16-bit values */
#include "hot_math.cuh" /* hot_rand_word, the definition of a Philox word */
#include "ref/ref_util.h"
#if FAST_HAVE_AMX
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* ---- cases -------------------------------------------------------------------------------- */

enum {
  M_SAWB_W = 1,      /* hq.w.rule = sawb */
  M_SAWB_X = 2,      /* hla.x.rule = sawb */
  M_FLAT = 4,        /* hla.layout = flat */
  M_SAMPLE_LAY = 8,  /* hla.layout = sample */
  M_HLA_SAMPLE = 16, /* hla scales per sample (layout sample) */
  M_NO_HQ = 32,
  M_NO_HLA = 64,
  M_NO_ABC = 128,
  M_RTN = 256,       /* g' and g^ rounded to nearest */
  M_BITS8 = 512,     /* hq.bits = hq.w_bits = 8 (s8 codes) */
  M_BITS3 = 1024,    /* hq.bits = 3, hla.bits = 6, x_bits = 5 */
  M_P64 = 2048,      /* hla.block = 64 */
  M_B4 = 4096,       /* hq.block = 4 */
  M_FULL = 8192,     /* hla.selection = full */
  M_B32 = 16384,     /* hq.block = 32 */
  M_B64 = 32768,     /* hq.block = 64 */
  M_TINY = 65536,    /* f32 x and g_y scaled by 1e-17: block products near fp32's subnormals */
  M_P32 = 131072,    /* hla.block = 32 (the column FWHT's last pass of 4 rows) */
  M_P8 = 262144,     /* hla.block = 8 (one pass from the sources to the kept rows) */
  M_P2 = 524288      /* hla.block = 2 (one pass of 2 rows) */
};

typedef struct {
  hot_recipe rec;
  hot_arch arch;
  int64_t B, L, O, I;
  hot_dtype dt;
  int mods;
} fcase;

/* fast_igemm with the default config (fast_set_threads, fast_set_level). */
static int igemm_default(const fast_igemm_op *op) {
  fast_config c;
  fast_config_default(&c);
  return fast_igemm(&c, op);
}

static const fcase k_cases[] = {
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 1, 1, 1, HOT_DT_F32, 0},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 3, 3, 17, HOT_DT_F32, 0},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 17, 137, 3, HOT_DT_BF16, 0},
    {HOT_RECIPE_HOT, HOT_ARCH_SM90, 3, 17, 17, 260, HOT_DT_F16, M_SAMPLE_LAY | M_HLA_SAMPLE},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 137, 260, 197, HOT_DT_F32, M_P64},
    {HOT_RECIPE_HOT, HOT_ARCH_SM90A, 2, 197, 197, 137, HOT_DT_F32, M_P64 | M_FLAT},
    {HOT_RECIPE_HOT, HOT_ARCH_SM86, 2, 64, 260, 137, HOT_DT_F32, M_P64 | M_SAMPLE_LAY | M_HLA_SAMPLE},
    {HOT_RECIPE_HOT, HOT_ARCH_SM90, 4, 33, 96, 48, HOT_DT_BF16, M_SAMPLE_LAY | M_HLA_SAMPLE | M_SAWB_X},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 260, 137, 17, HOT_DT_F32, M_SAWB_W | M_SAWB_X},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 100, 260, 300, HOT_DT_F32, M_SAWB_W | M_FLAT},
    {HOT_RECIPE_HOT, HOT_ARCH_SM90, 1, 197, 137, 197, HOT_DT_F16, M_BITS8 | M_RTN},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 3, 17, 100, 37, HOT_DT_F32, M_BITS3 | M_B4},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 137, 17, 137, HOT_DT_F32, M_FULL},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 33, 100, 70, HOT_DT_F32, M_B32},
    {HOT_RECIPE_HOT, HOT_ARCH_SM90, 1, 137, 256, 96, HOT_DT_F32, M_B64 | M_P64},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 64, 200, 33, HOT_DT_BF16, M_B64},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 17, 33, 1100, HOT_DT_F32, 0}, /* w' tasks: 1024 + 76 cols */
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 17, 137, 17, HOT_DT_F32, M_NO_ABC},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 17, 137, 17, HOT_DT_BF16, M_NO_HQ},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 17, 137, 17, HOT_DT_F32, M_NO_HLA | M_NO_ABC},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 3, 1, 260, HOT_DT_F32, M_NO_HQ | M_NO_HLA | M_NO_ABC},
    {HOT_RECIPE_PAPER, HOT_ARCH_SM80, 2, 197, 260, 137, HOT_DT_F32, 0},
    {HOT_RECIPE_PAPER, HOT_ARCH_SM90, 1, 137, 17, 260, HOT_DT_BF16, 0},
    {HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, 2, 197, 260, 137, HOT_DT_F32, 0},
    {HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM90, 1, 64, 137, 96, HOT_DT_F16, 0},
    {HOT_RECIPE_PAPER_CODE, HOT_ARCH_SM80, 3, 32, 100, 17, HOT_DT_F32, M_NO_ABC},
    /* recipe nvfp4 (CONTRACT.md 20; planned by plan_layer_cpu, the arch is not read) */
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 2, 17, 137, 33, HOT_DT_F32, 0},
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 1, 70, 64, 96, HOT_DT_BF16, M_NO_ABC},
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 3, 33, 100, 48, HOT_DT_F16, M_P64 | M_FLAT},
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 2, 64, 17, 130, HOT_DT_F32, M_P64 | M_SAMPLE_LAY | M_RTN},
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 1, 137, 260, 197, HOT_DT_F32, M_FULL},
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 2, 17, 33, 17, HOT_DT_BF16, M_NO_HQ},
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 2, 17, 33, 17, HOT_DT_F32, M_NO_HLA | M_NO_ABC},
    {HOT_RECIPE_NVFP4, HOT_ARCH_SM80, 1, 64, 48, 40, HOT_DT_F32, M_TINY | M_FULL},
    /* HLA blocks whose column FWHT ends in a pass of 4 rows (32), is one pass (8, 2) */
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 97, 130, 70, HOT_DT_BF16, M_P32},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 40, 64, 33, HOT_DT_F32, M_P8 | M_FLAT},
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 9, 20, 18, HOT_DT_F32, M_P2},
    /* 2048 tokens of 128: g' in one pass (hq_g_group_task) at every thread count for the ROW and
     * SAMPLE granularities (spans of 256 tokens, eight of them), the bias partials per span */
    {HOT_RECIPE_HOT, HOT_ARCH_SM80, 16, 128, 40, 24, HOT_DT_BF16, 0},
};

static void make_plan(const fcase *c, hot_layer_spec *sp, hot_layer_plan *pl) {
  char err[256] = "";
  plan_spec_defaults(sp, c->rec);
  strcpy(sp->name, "f");
  sp->in_features = c->I;
  sp->out_features = c->O;
  const int m = c->mods;
  if (m & M_SAWB_W) sp->hq.w.rule = HOT_RULE_SAWB;
  if (m & M_SAWB_X) sp->hla.x.rule = HOT_RULE_SAWB;
  if (m & M_FLAT) sp->hla.layout = HOT_LAYOUT_FLAT;
  if (m & M_SAMPLE_LAY) sp->hla.layout = HOT_LAYOUT_SAMPLE;
  if (m & M_HLA_SAMPLE) sp->hla.g.gran = sp->hla.x.gran = HOT_GRAN_SAMPLE;
  if (m & M_NO_HQ) sp->hq.enabled = 0;
  if (m & M_NO_HLA) sp->hla.enabled = 0;
  if (m & M_NO_ABC) sp->abc.enabled = 0;
  if (m & M_RTN) sp->hq.g.round = sp->hla.g.round = HOT_ROUND_RTN;
  if (m & M_BITS8) sp->hq.g.bits = sp->hq.w.bits = 8;
  if (m & M_BITS3) sp->hq.g.bits = 3, sp->hla.g.bits = 6, sp->hla.x.bits = 5;
  if (m & M_P64) sp->hla.block = 64;
  if (m & M_P32) sp->hla.block = 32;
  if (m & M_P8) sp->hla.block = 8;
  if (m & M_P2) sp->hla.block = 2;
  if (m & M_B4) sp->hq.block = 4;
  if (m & M_FULL) sp->hla.selection = HOT_SEL_FULL;
  if (m & M_B32) sp->hq.block = 32;
  if (m & M_B64) sp->hq.block = 64;
  int rc = c->rec == HOT_RECIPE_NVFP4 ? plan_layer_cpu(sp, c->B, c->L, c->rec, 5, pl, err, sizeof err)
                                       : plan_layer(sp, c->B, c->L, c->rec, c->arch, 5, pl, err, sizeof err);
  ck_assert_msg(rc == 0, "plan_layer: %s", err);
  ck_assert_int_eq(ref_plan_check(pl), HOT_REF_OK);
}

/* Inputs of dtype dt: n values N(0, sd), as bit patterns of dt. */
static void *make_input(tp_rng *r, int64_t n, double sd, hot_dtype dt, float *f32) {
  tp_fill_normal(r, f32, n, sd);
  if (dt == HOT_DT_F32) {
    float *v = malloc((size_t)n * sizeof *v);
    memcpy(v, f32, (size_t)n * sizeof *v);
    return v;
  }
  unsigned short *h = malloc((size_t)n * sizeof *h);
  for (int64_t i = 0; i < n; ++i) { /* tp_f32_to_f16 takes normals: f16's subnormals become 0 */
    if (dt == HOT_DT_F16 && fabsf(f32[i]) < 6.103515625e-05f) f32[i] = 0.0f;
    h[i] = dt == HOT_DT_BF16 ? tp_f32_to_bf16(f32[i]) : tp_f32_to_f16(f32[i]);
  }
  return h;
}

static int same_saved(const hot_layer_plan *pl, const hot_ref_saved *a, const hot_ref_saved *b) {
  if (a->bytes != b->bytes || !a->q_x != !b->q_x || !a->x != !b->x) return 0;
  if (a->q_x && pl->fmt == HOT_FMT_NVFP4) /* MXFP8 codes and scales, no fp32 scale */
    return !a->s_x && !b->s_x &&
           memcmp(a->q_x, b->q_x, (size_t)plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES)) == 0;
  if (a->q_x)
    return memcmp(a->q_x, b->q_x, (size_t)plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES)) == 0 &&
           memcmp(a->s_x, b->s_x, (size_t)pl->hla.groups * sizeof(float)) == 0;
  return memcmp(a->x, b->x, (size_t)(pl->T * pl->I) * sizeof(float)) == 0;
}

static int g_levels_run[FAST_LEVELS];

/* The backward with only some outputs asked for (hot.h: a NULL output is not computed): for
 * each proper non-empty subset of g_x, g_w, g_b (g_b only where the plan has it), the outputs
 * asked for equal the full call's bits (rx, rw, rb) and the others keep the 0xff bytes they were
 * given; `fast` picks fast_layer_backward (at the level and threads set) or the twin; the saved
 * activations are passed empty when g_w is not asked for (they are not read). Returns the calls
 * made. */
static int check_subsets(const hot_layer_plan *pl, const hot_ref_saved *rs, const void *g,
                         const void *w, hot_dtype dt, hot_gran gran, uint32_t step, const float *rx,
                         const float *rw, const float *rb, int fast, int idx, const char *where) {
  const int64_t T = pl->T, O = pl->O, I = pl->I;
  const size_t nx = (size_t)(T * I) * sizeof(float), nw = (size_t)(O * I) * sizeof(float),
               nb = (size_t)O * sizeof(float);
  float *ox = malloc(nx), *ow = malloc(nw), *ob = malloc(nb);
  unsigned char *ff = malloc(nx > nw ? nx : nw);
  memset(ff, 0xff, nx > nw ? nx : nw);
  hot_ref_saved empty;
  memset(&empty, 0, sizeof empty);
  int calls = 0;
  for (unsigned m = 1; m < 7u; ++m) { /* bit 0 g_x, bit 1 g_w, bit 2 g_b */
    memset(ox, 0xff, nx), memset(ow, 0xff, nw), memset(ob, 0xff, nb);
    float *ax = m & 1u ? ox : NULL, *aw = m & 2u ? ow : NULL, *ab = m & 4u ? ob : NULL;
    const hot_ref_saved *sv = aw ? rs : &empty;
    const int rc = fast ? fast_layer_backward(NULL, pl, sv, g, w, dt, gran, 77, step, ax, aw, ab)
                        : ref_layer_backward(pl, sv, g, w, dt, gran, 77, step, ax, aw, ab);
    ck_assert_msg(rc == HOT_REF_OK, "case %d: outputs %#x: status %d (%s)", idx, m, rc, where);
    ck_assert_msg(!memcmp(ox, ax ? (const void *)rx : ff, nx), "case %d: outputs %#x: g_x %s (%s)",
                  idx, m, ax ? "differs" : "written", where);
    ck_assert_msg(!memcmp(ow, aw ? (const void *)rw : ff, nw), "case %d: outputs %#x: g_w %s (%s)",
                  idx, m, aw ? "differs" : "written", where);
    ck_assert_msg(!memcmp(ob, ab ? (const void *)rb : ff, nb), "case %d: outputs %#x: g_b %s (%s)",
                  idx, m, ab ? "differs" : "written", where);
    ++calls;
  }
  free(ox), free(ow), free(ob), free(ff);
  return calls;
}

/* One case: the twins once per granularity, the fast path at every level and thread count. */
static void run_case(const fcase *c, int idx) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(c, &sp, &pl);
  const int64_t T = pl.T, O = pl.O, I = pl.I;
  tp_rng r;
  tp_seed(&r, 1000u + (uint64_t)idx);
  float *tmp = malloc((size_t)((T * I > O * I ? T * I : O * I) + T * O) * sizeof *tmp);
  void *x = make_input(&r, T * I, 1.0, c->dt, tmp);
  void *w = make_input(&r, O * I, 0.05, c->dt, tmp);
  void *g = make_input(&r, T * O, 1e-3, c->dt, tmp);
  if (c->mods & M_TINY) { /* f32 only: the MXFP8 g_w blocks' products round into subnormals */
    ck_assert_int_eq(c->dt, HOT_DT_F32);
    for (int64_t i = 0; i < T * I; ++i) ((float *)x)[i] *= 1e-17f;
    for (int64_t i = 0; i < T * O; ++i) ((float *)g)[i] *= 1e-17f;
  }
  float *rx = malloc((size_t)(T * I) * sizeof *rx), *rw = malloc((size_t)(O * I) * sizeof *rw);
  float *fx = malloc((size_t)(T * I) * sizeof *fx), *fw = malloc((size_t)(O * I) * sizeof *fw);
  float *rb = malloc((size_t)O * sizeof *rb), *fb = malloc((size_t)O * sizeof *fb);
  hot_ref_saved rs, fs;
  ck_assert_int_eq(ref_layer_save(&pl, x, c->dt, &rs), HOT_REF_OK);
  hot_ref_lqs_result rl, fl;
  int rlc = ref_layer_calibrate(&pl, g, c->dt, 77, 9, &rl);
  const hot_gran grans[3] = {HOT_GRAN_TENSOR, HOT_GRAN_ROW, HOT_GRAN_SAMPLE};
  const int ngran = pl.hq.enabled ? 3 : 1;
  int runs = 0;
  for (int gi = 0; gi < ngran; ++gi) {
    ck_assert_int_eq(ref_layer_backward(&pl, &rs, g, w, c->dt, grans[gi], 77, 9 + (uint32_t)gi,
                                            rx, rw, rb),
                     HOT_REF_OK);
    int subsets = check_subsets(&pl, &rs, g, w, c->dt, grans[gi], 9 + (uint32_t)gi, rx, rw, rb, 0,
                                idx, "twin");
    if (c->mods & M_TINY) { /* the case covers what it is for: subnormal g_w values */
      int64_t sub = 0;
      for (int64_t i = 0; i < O * I; ++i) sub += rw[i] != 0.0f && fabsf(rw[i]) < 1.17549435e-38f;
      ck_assert_msg(sub > 0, "case %d: no subnormal g_w value", idx);
    }
    for (int level = 0; level < FAST_LEVELS; ++level)
      if (fast_level_has(level))
      for (int th = 1; th <= 3; ++th) {
        fast_set_level(level);
        fast_set_threads(th);
        fast_set_hla_fuse_bytes(th == 2 ? 0 : -1); /* 2 threads: every HLA projection fused */
        ck_assert_int_eq(fast_level_now(), level);
        g_levels_run[level] = 1;
        if (gi == 0) { /* save and calibration do not depend on the granularity */
          ck_assert_int_eq(fast_layer_save(NULL, &pl, x, c->dt, &fs), HOT_REF_OK);
          ck_assert_msg(same_saved(&pl, &rs, &fs), "case %d: saved buffer differs (%s, %d threads)",
                        idx, fast_level_name(level), th);
          ref_saved_free(&fs);
          int flc = fast_layer_calibrate(NULL, &pl, g, c->dt, 77, 9, &fl);
          ck_assert_int_eq(flc, rlc);
          if (!rlc) {
            ck_assert_msg(memcmp(&fl.e_tensor, &rl.e_tensor, sizeof(double)) == 0 &&
                              memcmp(&fl.e_token, &rl.e_token, sizeof(double)) == 0 &&
                              fl.choice == rl.choice,
                          "case %d: LQS differs (%s, %d threads): %.17g %.17g vs %.17g %.17g", idx,
                          fast_level_name(level), th, fl.e_tensor, fl.e_token, rl.e_tensor,
                          rl.e_token);
          }
        }
        memset(fx, 0xff, (size_t)(T * I) * sizeof *fx);
        memset(fw, 0xff, (size_t)(O * I) * sizeof *fw);
        memset(fb, 0xff, (size_t)O * sizeof *fb);
        ck_assert_int_eq(fast_layer_backward(NULL, &pl, &rs, g, w, c->dt, grans[gi], 77, 9 + (uint32_t)gi,
                                             fx, fw, fb),
                         HOT_REF_OK);
        ck_assert_msg(memcmp(fx, rx, (size_t)(T * I) * sizeof *fx) == 0,
                      "case %d: g_x differs (gran %d, %s, %d threads)", idx, gi,
                      fast_level_name(level), th);
        ck_assert_msg(memcmp(fw, rw, (size_t)(O * I) * sizeof *fw) == 0,
                      "case %d: g_w differs (gran %d, %s, %d threads)", idx, gi,
                      fast_level_name(level), th);
        ck_assert_msg(memcmp(fb, rb, (size_t)O * sizeof *fb) == 0,
                      "case %d: g_b differs (gran %d, %s, %d threads)", idx, gi,
                      fast_level_name(level), th);
        ++runs;
        if (th == 2) /* the outputs one by one: at each level, projections fused */
          subsets += check_subsets(&pl, &rs, g, w, c->dt, grans[gi], 9 + (uint32_t)gi, rx, rw, rb,
                                   1, idx, fast_level_name(level));
      }
    ck_assert_int_gt(subsets, 0);
  }
  printf("case %2d %-10s %-6s B=%lld L=%lld O=%lld I=%lld %s mods=%#x: hq b=%d o_pad=%lld %s | "
         "hla %s p=%d r=%d %s groups=%lld K=%lld | %d fast runs bit-identical\n",
         idx, plan_recipe_name(c->rec), plan_dtype_name(c->dt), (long long)c->B, (long long)c->L,
         (long long)O, (long long)I, pl.abc.enabled ? "abc" : "no-abc", c->mods,
         pl.hq.enabled ? pl.hq.block : 0, (long long)pl.hq.o_pad,
         pl.hq.enabled ? plan_codes_name(pl.hq.codes) : "off", pl.hla.enabled ? "on" : "off",
         pl.hla.block, pl.hla.rank, plan_layout_name(pl.hla.layout), (long long)pl.hla.groups,
         (long long)pl.hla.k, runs);
  ref_saved_free(&rs);
  free(tmp), free(x), free(w), free(g), free(rx), free(rw), free(fx), free(fw), free(rb), free(fb);
  fast_set_level(-1);
  fast_set_threads(0);
  fast_set_hla_fuse_bytes(-1);
}

START_TEST(layers_bit_identical) {
  run_case(&k_cases[_i], _i);
}
END_TEST

/* Recipe nvfp4 (k_cases 26 with ABC, 27 without): all-zero data (tensor scale 0, E8M0 exponent
 * 0) gives the twins' bits, and a NaN or Inf in g_y, w or x the twins' status from the backward
 * and the save, at every level. */
START_TEST(nvfp4_statuses_match) {
  const fcase *fc = &k_cases[26 + _i];
  ck_assert_int_eq(fc->rec, HOT_RECIPE_NVFP4);
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(fc, &sp, &pl);
  const int64_t T = pl.T, O = pl.O, I = pl.I;
  float *x = calloc((size_t)(T * I), sizeof *x), *w = calloc((size_t)(O * I), sizeof *w);
  float *g = calloc((size_t)(T * O), sizeof *g), *gx = malloc((size_t)(T * I) * sizeof *gx);
  float *gw = malloc((size_t)(O * I) * sizeof *gw), *rx = malloc((size_t)(T * I) * sizeof *rx);
  float *rw = malloc((size_t)(O * I) * sizeof *rw);
  hot_ref_saved s, f;
  ck_assert_int_eq(ref_layer_save(&pl, x, HOT_DT_F32, &s), HOT_REF_OK);
  ck_assert_int_eq(ref_layer_backward(&pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, rx, rw, NULL), 0);
  for (int level = 0; level < FAST_LEVELS; ++level) {
    if (!fast_level_has(level)) continue;
    fast_set_level(level);
    ck_assert_int_eq(fast_layer_save(NULL, &pl, x, HOT_DT_F32, &f), HOT_REF_OK);
    ck_assert(same_saved(&pl, &s, &f));
    ref_saved_free(&f);
    ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, gx, gw, NULL), 0);
    ck_assert_mem_eq(rx, gx, (size_t)(T * I) * sizeof *gx);
    ck_assert_mem_eq(rw, gw, (size_t)(O * I) * sizeof *gw);
    g[5] = NAN;
    ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, gx, gw, NULL),
                     ref_layer_backward(&pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, rx, rw, NULL));
    ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, gx, gw, NULL),
                     HOT_REF_ENONFINITE);
    g[5] = 0.0f;
    w[3] = INFINITY;
    ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_TENSOR, 1, 1, gx, gw, NULL),
                     HOT_REF_ENONFINITE);
    w[3] = 0.0f;
    x[7] = NAN;
    ck_assert_int_eq(fast_layer_save(NULL, &pl, x, HOT_DT_F32, &f), HOT_REF_ENONFINITE);
    ck_assert_ptr_null(f.q_x);
    ck_assert_int_eq(ref_layer_save(&pl, x, HOT_DT_F32, &f), HOT_REF_ENONFINITE);
    x[7] = 0.0f;
  }
  fast_set_level(-1);
  ref_saved_free(&s);
  free(x), free(w), free(g), free(gx), free(gw), free(rx), free(rw);
}
END_TEST

/* ---- fp64 exact products ------------------------------------------------------------------ */

START_TEST(exact_bit_identical) {
  static const int64_t dims[][3] = {{1, 1, 1},    {3, 17, 137},  {197, 3, 17},
                                    {137, 260, 3}, {70, 130, 260}, {300, 261, 270}};
  for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d) {
    const int64_t T = dims[d][0], O = dims[d][1], I = dims[d][2];
    tp_rng r;
    tp_seed(&r, 5 + d);
    float *g = malloc((size_t)(T * O) * sizeof *g), *w = malloc((size_t)(O * I) * sizeof *w);
    float *x = malloc((size_t)(T * I) * sizeof *x);
    tp_fill_normal(&r, g, T * O, 1.0);
    tp_fill_normal(&r, w, O * I, 1.0);
    tp_fill_normal(&r, x, T * I, 1.0);
    double *a = malloc((size_t)(T * I + O * I) * sizeof *a), *b = malloc((size_t)(T * I + O * I) * sizeof *b);
    ck_assert_int_eq(ref_exact_gx(T, O, I, g, w, a), 0);
    ck_assert_int_eq(ref_exact_gw(T, O, I, g, x, a + T * I), 0);
    for (int level = 0; level <= (int)fast_level_cpu() && level <= FAST_LEVEL_AVX2; ++level)
      for (int th = 1; th <= 3; ++th) {
        fast_set_level(level);
        fast_set_threads(th);
        ck_assert_int_eq(fast_exact_gx(NULL, T, O, I, g, w, b), 0);
        ck_assert_int_eq(fast_exact_gw(NULL, T, O, I, g, x, b + T * I), 0);
        ck_assert_msg(memcmp(a, b, (size_t)(T * I + O * I) * sizeof *a) == 0,
                      "exact %lld x %lld x %lld differs (%s, %d threads)", (long long)T,
                      (long long)O, (long long)I, fast_level_name(level), th);
      }
    free(g), free(w), free(x), free(a), free(b);
  }
  /* the HQ / HLA fp64 paths on planned layers (both layouts, padded O, p = 64) */
  for (int ci = 0; ci < 10; ++ci) {
    const fcase *c = &k_cases[ci];
    hot_layer_spec sp;
    hot_layer_plan pl;
    make_plan(c, &sp, &pl);
    const int64_t T = pl.T, O = pl.O, I = pl.I;
    tp_rng r;
    tp_seed(&r, 50u + (uint64_t)ci);
    float *g = malloc((size_t)(T * O) * sizeof *g), *w = malloc((size_t)(O * I) * sizeof *w);
    float *x = malloc((size_t)(T * I) * sizeof *x);
    tp_fill_normal(&r, g, T * O, 1.0);
    tp_fill_normal(&r, w, O * I, 1.0);
    tp_fill_normal(&r, x, T * I, 1.0);
    double *a = malloc((size_t)(T * I + O * I) * sizeof *a), *b = malloc((size_t)(T * I + O * I) * sizeof *b);
    ck_assert_int_eq(ref_hq_gx_f64(&pl, g, w, a), 0);
    ck_assert_int_eq(ref_hla_gw_f64(&pl, g, x, a + T * I), 0);
    for (int th = 1; th <= 3; ++th) {
      fast_set_threads(th);
      ck_assert_int_eq(fast_hq_gx_f64(NULL, &pl, g, w, b), 0);
      ck_assert_int_eq(fast_hla_gw_f64(NULL, &pl, g, x, b + T * I), 0);
      ck_assert_msg(memcmp(a, b, (size_t)(T * I + O * I) * sizeof *a) == 0,
                    "case %d: HQ/HLA fp64 differs (%d threads)", ci, th);
    }
    free(g), free(w), free(x), free(a), free(b);
  }
  fast_set_level(-1);
  fast_set_threads(0);
}
END_TEST

/* ---- the integer GEMM alone ------------------------------------------------------------------ */

/* Where gemm_epi puts the tiles: out[seg][m][n] for M x N, segment by segment. */
typedef struct {
  int64_t M, N;
  int32_t *out;
} gemm_sink;

static void gemm_epi(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                     const int32_t *acc, int64_t ldc) {
  const gemm_sink *k = ctx;
  for (int64_t m = 0; m < mc; ++m)
    memcpy(k->out + (seg * k->M + m0 + m) * k->N + n0, acc + m * ldc, (size_t)nc * sizeof *acc);
}

/* A code in [-q, q], the bounds a third of the time (saturation edges of the 8-bit kernels). */
static int8_t gemm_code(tp_rng *r, int q) {
  const double u = tp_uniform(r);
  if (u < 0.17) return (int8_t)-q;
  if (u < 0.34) return (int8_t)q;
  int v = (int)(tp_uniform(r) * (2 * q + 1)) - q;
  return (int8_t)(v > q ? q : v);
}

/* fast_igemm against a plain uint32 sum (the definition, CONTRACT.md 13) on shapes with M, N and
 * K tails of every kernel (MR 4 and 16, NR 16, K steps of 2 and 4, K blocks of 64 steps (VNNI)
 * and 512 steps (AVX2: the last two shapes cross them, the u8 one several times), tiles of
 * 64 x 128), both operand orientations, K segments, code bounds picking each kernel (u8: 4-bit,
 * w16: 8-bit or mixed), at every level and with 1 to 3 threads. 130 x 600 x 2100: tasks of
 * several tile columns (B panels of 1 MB) with a shorter last group (fast_gemm.c's
 * tile_cgroup). K a multiple of 64 with A along k (the last three): AMX reads A's full pairs of
 * 16-row panels in place and packs only the rows past them (none at M = 64, all at M = 31).
 * Both operands end at an inaccessible page: a read past either faults. */
/* n bytes that end where an inaccessible page begins, so that a read past them faults (the
 * GEMM reads its operands in place where it can); release with guard_free. */
typedef struct {
  void *base;
  size_t len;
} guarded;
static int8_t *guard_alloc(size_t n, guarded *g) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (n + page - 1) / page * page;
  g->len = body + page;
  g->base = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert(g->base != MAP_FAILED);
  ck_assert_int_eq(mprotect((char *)g->base + body, page, PROT_NONE), 0);
  return (int8_t *)g->base + body - n;
}
static void guard_free(guarded *g) { munmap(g->base, g->len); }

START_TEST(gemm_exact) {
  static const int64_t dims[][4] = {/* M, N, seg_k, segs */
                                    {1, 1, 1, 1},      {5, 17, 3, 1},     {4, 16, 16, 1},
                                    {49, 257, 257, 1}, {67, 300, 700, 1}, {16, 33, 130, 3},
                                    {100, 31, 9, 2},   {3, 530, 513, 1},  {130, 18, 1023, 1},
                                    {37, 21, 4500, 1}, {9, 20, 2100, 2},   {130, 600, 2100, 1},
                                    {100, 40, 192, 1}, {64, 33, 128, 1},   {31, 17, 64, 1},
                                    /* segments over several groups of 64 columns, the last
                                       one partial (tile_one's SEG_PANELS) */
                                    {70, 150, 40, 3},  {65, 97, 300, 2}};
  static const int qs[][2] = {{7, 7}, {127, 127}, {7, 127}, {1, 3}, {3, 7}};
  for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d)
    for (size_t qi = 0; qi < sizeof qs / sizeof qs[0]; ++qi)
      for (int orient = 0; orient < 4; ++orient) {
        const int64_t M = dims[d][0], N = dims[d][1], K = dims[d][2], S = dims[d][3];
        const int qa = qs[qi][0], qb = qs[qi][1];
        const int a_kmaj = orient & 1, b_kmaj = (orient >> 1) & 1; /* (r, k) at k*rows + r */
        tp_rng r;
        tp_seed(&r, 700u + 31u * d + 7u * qi + (uint64_t)orient);
        guarded ga, gb; /* a read past either operand faults */
        int8_t *a = guard_alloc((size_t)(S * M * K), &ga), *b = guard_alloc((size_t)(S * N * K), &gb);
        for (int64_t i = 0; i < S * M * K; ++i) a[i] = gemm_code(&r, qa);
        for (int64_t i = 0; i < S * N * K; ++i) b[i] = gemm_code(&r, qb);
        uint32_t *want = malloc((size_t)(S * M * N) * sizeof *want);
        for (int64_t sg = 0; sg < S; ++sg)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              uint32_t acc = 0;
              for (int64_t k = 0; k < K; ++k) {
                const int va = a[sg * M * K + (a_kmaj ? k * M + m : m * K + k)];
                const int vb = b[sg * N * K + (b_kmaj ? k * N + n : n * K + k)];
                acc += (uint32_t)(va * vb);
              }
              want[(sg * M + m) * N + n] = acc;
            }
        const int8_t **as = malloc((size_t)S * sizeof *as), **bs = malloc((size_t)S * sizeof *bs);
        for (int64_t sg = 0; sg < S; ++sg) as[sg] = a + sg * M * K, bs[sg] = b + sg * N * K;
        int32_t *got = malloc((size_t)(S * M * N) * sizeof *got);
        gemm_sink sink = {M, N, got};
        fast_igemm_op op = {M,  N,  K,  S,  as, a_kmaj ? 1 : K, a_kmaj ? M : 1, bs, b_kmaj ? 1 : K,
                            b_kmaj ? N : 1, qa, qb, gemm_epi, &sink, -1};
        for (int level = 0; level < FAST_LEVELS; ++level)
      if (fast_level_has(level))
          for (int th = 1; th <= 3; ++th) {
            fast_set_level(level);
            fast_set_threads(th);
            memset(got, 0x5a, (size_t)(S * M * N) * sizeof *got);
            ck_assert_int_eq(igemm_default(&op), HOT_REF_OK);
            ck_assert_msg(memcmp(got, want, (size_t)(S * M * N) * sizeof *got) == 0,
                          "GEMM %lld x %lld x %lld (%lld segments), q %d/%d, orientation %d "
                          "differs (%s, %d threads)",
                          (long long)M, (long long)N, (long long)K, (long long)S, qa, qb, orient,
                          fast_level_name(level), th);
          }
        if (d % 3 == 0) fast_release_scratch(); /* kept blocks and fresh ones give the same sums */
        guard_free(&ga), guard_free(&gb);
        free(want), free(got), free(as), free(bs);
      }
  fast_set_level(-1);
  fast_set_threads(0);
}
END_TEST

/* Sums past 2^31 wrap modulo 2^32 at every level (CONTRACT.md 13): all codes at +-127, so that
 * every product is +-16129 and a column of K = 140000 sums to +-2258060000; with the signs
 * mixed by row and column, both directions wrap. */
START_TEST(gemm_wraps) {
  const int64_t M = 18, N = 20, K = 140000;
  int8_t *a = malloc((size_t)(M * K)), *b = malloc((size_t)(N * K));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) a[m * K + k] = (int8_t)(m % 3 == 2 && k % 5 == 0 ? -127 : 127);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) b[n * K + k] = (int8_t)(n % 2 ? -127 : 127);
  uint32_t *want = malloc((size_t)(M * N) * sizeof *want);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      uint32_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (uint32_t)(a[m * K + k] * b[n * K + k]);
      want[m * N + n] = acc;
    }
  ck_assert_uint_eq(want[0], 2258060000u); /* past 2^31: negative as int32 */
  const int8_t *as[1] = {a}, *bs[1] = {b};
  int32_t *got = malloc((size_t)(M * N) * sizeof *got);
  gemm_sink sink = {M, N, got};
  fast_igemm_op op = {M, N, K, 1, as, K, 1, bs, K, 1, 127, 127, gemm_epi, &sink, -1};
  for (int level = 0; level < FAST_LEVELS; ++level)
    if (fast_level_has(level)) {
      fast_set_level(level);
      fast_set_threads(2);
      memset(got, 0x5a, (size_t)(M * N) * sizeof *got);
      ck_assert_int_eq(igemm_default(&op), HOT_REF_OK);
      ck_assert_msg(memcmp(got, want, (size_t)(M * N) * sizeof *got) == 0,
                    "sums past 2^31 differ at level %s", fast_level_name(level));
    }
  fast_set_level(-1);
  fast_set_threads(0);
  free(a), free(b), free(want), free(got);
}
END_TEST

/* ---- Philox words ---------------------------------------------------------------------------- */

/* fast_philox_words against hot_rand_word element by element, at every level: starts at each
 * phase of a Philox block (idx0 mod 4) and around counters 2^32 - 1 / 2^32 (the counter's high
 * word), lengths around the AVX2 block of 32 words, keys and tags with high bits set. */
START_TEST(philox_words_exact) {
  static const uint64_t starts[] = {0, 1, 2, 3, 37, 1000003, (1ull << 34) - 70, (1ull << 34) - 3,
                                    (1ull << 34), (1ull << 40) + 5, ~0ull - 200};
  static const int64_t lens[] = {1, 2, 3, 5, 31, 32, 33, 63, 64, 65, 100, 1031};
  static const fast_rng rngs[] = {{0, 0, 0}, {0x243F6A8885A308D3ull, 0x13198A2Eu, 7u},
                                  {~0ull, 0xFFFFFFFFu, 0xFFFFFFFFu}};
  uint32_t got[1031];
  for (int level = 0; level < FAST_LEVELS; ++level) {
    if (!fast_level_has(level)) continue;
    fast_config cf; /* the level's table, as a config of that level picks it */
    fast_config_init(&cf, 1, level);
    ck_assert_int_eq(cf.level, level);
    for (size_t r = 0; r < sizeof rngs / sizeof rngs[0]; ++r)
      for (size_t i = 0; i < sizeof starts / sizeof starts[0]; ++i)
        for (size_t j = 0; j < sizeof lens / sizeof lens[0]; ++j) {
          const int64_t n = lens[j];
          if (starts[i] > ~0ull - (uint64_t)n) continue; /* the index would wrap */
          memset(got, 0xA5, sizeof got);
          cf.k->e->philox(&rngs[r], starts[i], n, got);
          for (int64_t e = 0; e < n; ++e) {
            const uint32_t want = hot_rand_word(rngs[r].seed, rngs[r].tag, rngs[r].step,
                                                starts[i] + (uint64_t)e);
            ck_assert_msg(got[e] == want,
                          "level %s, key set %zu, word %lld of %lld from %llu: %08x, want %08x",
                          fast_level_name(level), r, (long long)e, (long long)n,
                          (unsigned long long)starts[i], got[e], want);
          }
          if (n < 1031) ck_assert_uint_eq(got[n], 0xA5A5A5A5u); /* nothing past n written */
        }
  }
}
END_TEST

/* ---- the quantizer's division --------------------------------------------------------------- */

/* A float from a 64-bit LCG state: sign, an exponent in [elo, ehi] and 23 random mantissa bits. */
static float rand_float(uint64_t *st, int elo, int ehi) {
  *st = *st * 6364136223846793005ull + 1442695040888963407ull;
  const uint32_t h = (uint32_t)(*st >> 32);
  const int e = elo + (int)(h % (uint32_t)(ehi - elo + 1));
  *st = *st * 6364136223846793005ull + 1442695040888963407ull;
  const uint32_t m = (uint32_t)(*st >> 41), sign = (uint32_t)(*st >> 40) & 1u;
  const uint32_t bits = sign << 31 | (uint32_t)(e + 127) << 23 | m;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static float ulps_from(float f, int k) { /* f moved k units in the last place (same sign) */
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  b = (uint32_t)((int64_t)b + k);
  memcpy(&f, &b, sizeof f);
  return f;
}

/* The values a quantizer's division is checked on under scale s: near each integer and each
 * half-integer multiple of s (the floor's and the nearest's edges) and a few ulps around them,
 * random quotients from 2^-110 to 2^110, binade edges,
 * +-0, subnormals, the largest finite values, Inf and NaN. n = 4096. */
static void division_values(float s, uint64_t *st, float *v) {
  int64_t i = 0;
  for (int k = -128; k <= 128; ++k) /* 2570 values */
    for (int half = 0; half < 2; ++half)
      for (int d = -2; d <= 2; ++d) v[i++] = ulps_from(((float)k + 0.5f * (float)half) * s, d);
  while (i < 3900) v[i] = rand_float(st, -110, 110) * s, ++i;
  static const float edge[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1.fffffcp-127f,
                               0x1p-100f, 0x1.fffffep-101f, 0x1p100f, 0x1.fffffep127f,
                               -0x1.fffffep127f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f};
  for (int r = 0; i < 4096; ++r) v[i++] = edge[r % 16] * (r >= 16 ? s : 1.0f);
}


/* The quantizers' division v / s is the IEEE quotient at every level (never a multiplication by
 * a rounded reciprocal, which differs in the last bit for some v): every level's quantizer (RTN
 * and SR, 4- and 8-bit codes; not on NaN, which the amax pass refuses first) against the scalar
 * level, with SR words whose rho sits just below, at and above each value's own fraction (a
 * quotient one ulp off changes the code). Scales: the ends of the exponent range, a subnormal,
 * the largest float, and 400 random ones. */
START_TEST(quant_division_exact) {
  enum { N = 4096, NS = 416 };
  static float v[N], scales[NS];
  static uint32_t words[N];
  static int8_t got[N], want[N];
  static const float fixed[] = {0x1p-125f, 0x1p125f, 0x1.fffffep-126f, 0x1.000002p125f, 1e-39f,
                                0x1.fffffep127f, 1.0f, 0x1.fffffep-1f, 0x1.000002p0f, 1.0f / 7.0f,
                                1.0f / 127.0f, 3.3e-5f, 12345.678f, 0x1p-100f, 0x1p100f, 0.5f};
  uint64_t st = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < NS; ++i) scales[i] = i < 16 ? fixed[i] : fabsf(rand_float(&st, -124, 124));
  fast_config sc;
  fast_config_init(&sc, 1, FAST_LEVEL_SCALAR);
  for (int k = 0; k < NS; ++k) {
    const float s = scales[k];
    division_values(s, &st, v);
    for (int qi = 0; qi < 2; ++qi) {
      const int qmax = qi ? 127 : 7;
      for (int64_t i = 0; i < N; ++i) { /* rho = frac + (i % 3 - 1) * 2^-24, clamped */
        const float u = hot_scaled(v[i], s, qmax);
        const float frac = isfinite(u) ? u - floorf(u) : 0.0f;
        int64_t t = (int64_t)(frac * 0x1p24f) + i % 3 - 1;
        t = t < 0 ? 0 : (t > 0xFFFFFF ? 0xFFFFFF : t);
        words[i] = (uint32_t)t << 8 | (uint32_t)(i & 0xFF);
      }
      for (int sr = 0; sr < 2; ++sr) {
        sc.k->e->quant(v, N, s, qmax, sr, sr ? words : NULL, want);
        for (int level = 1; level < FAST_LEVELS; ++level) {
          if (!fast_level_has(level)) continue;
          fast_config cf;
          fast_config_init(&cf, 1, level);
          memset(got, 0x5A, sizeof got);
          cf.k->e->quant(v, N, s, qmax, sr, sr ? words : NULL, got);
          for (int64_t i = 0; i < N; ++i) /* NaN: no quantizer sees one (amax refuses it) */
            ck_assert_msg(got[i] == want[i] || isnan(v[i]), "level %s, %s, qmax %d: %a / %a gives %d, want %d",
                          fast_level_name(level), sr ? "SR" : "RTN", qmax, (double)v[i], (double)s,
                          got[i], want[i]);
        }
      }
    }
  }
}
END_TEST

/* ---- statuses ------------------------------------------------------------------------------- */

START_TEST(statuses_match) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&k_cases[3], &sp, &pl);
  const int64_t T = pl.T, O = pl.O, I = pl.I;
  float *x = calloc((size_t)(T * I), sizeof *x), *w = calloc((size_t)(O * I), sizeof *w);
  float *g = calloc((size_t)(T * O), sizeof *g), *gx = malloc((size_t)(T * I) * sizeof *gx);
  float *gw = malloc((size_t)(O * I) * sizeof *gw), *gb = malloc((size_t)O * sizeof *gb);
  hot_ref_saved s, f;
  hot_ref_lqs_result lq;
  /* bad arguments */
  ck_assert_int_eq(fast_layer_save(NULL, NULL, x, HOT_DT_F32, &f), HOT_REF_EARG);
  ck_assert_int_eq(fast_layer_save(NULL, &pl, x, (hot_dtype)7, &f), HOT_REF_EARG);
  ck_assert_int_eq(fast_layer_save(NULL, &pl, x, HOT_DT_F32, NULL), HOT_REF_EARG);
  ck_assert_int_eq(ref_layer_save(&pl, x, HOT_DT_F32, &s), HOT_REF_OK);
  ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_AUTO, 1, 1, gx, gw, gb),
                   HOT_REF_EARG);
  ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, NULL, NULL,
                                       NULL),
                   HOT_REF_EARG); /* no output asked for */
  ck_assert_int_eq(ref_layer_backward(&pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, NULL, NULL, NULL),
                   HOT_REF_EARG);
  ck_assert_int_eq(fast_layer_calibrate(NULL, &pl, NULL, HOT_DT_F32, 1, 1, &lq), HOT_REF_EARG);
  hot_layer_plan bad = pl;
  bad.hq.o_pad += 1;
  ck_assert_int_eq(fast_layer_backward(NULL, &bad, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, gx, gw, gb),
                   ref_layer_backward(&bad, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, gx, gw, gb));
  /* all-zero data: zero scales, zero outputs, like the twins */
  float *rx = malloc((size_t)(T * I) * sizeof *rx), *rw = malloc((size_t)(O * I) * sizeof *rw);
  ck_assert_int_eq(ref_layer_backward(&pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, rx, rw, NULL), 0);
  ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, gx, gw, NULL), 0);
  ck_assert_mem_eq(rx, gx, (size_t)(T * I) * sizeof *gx);
  ck_assert_mem_eq(rw, gw, (size_t)(O * I) * sizeof *gw);
  /* non-finite inputs: the twins' status from every entry point */
  g[5] = NAN;
  ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, gx, gw, gb),
                   HOT_REF_ENONFINITE);
  ck_assert_int_eq(fast_layer_calibrate(NULL, &pl, g, HOT_DT_F32, 1, 1, &lq), HOT_REF_ENONFINITE);
  g[5] = 0.0f;
  w[3] = INFINITY;
  ck_assert_int_eq(fast_layer_backward(NULL, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, gx, gw, gb),
                   HOT_REF_ENONFINITE);
  w[3] = 0.0f;
  x[7] = NAN;
  for (int fuse = 0; fuse < 2; ++fuse) { /* the HLA projection stored, then fused */
    fast_set_hla_fuse_bytes(fuse ? 0 : -1);
    ck_assert_int_eq(fast_layer_save(NULL, &pl, x, HOT_DT_F32, &f), HOT_REF_ENONFINITE);
    ck_assert_ptr_null(f.q_x);
  }
  fast_set_hla_fuse_bytes(-1);
  ref_saved_free(&s);
  free(x), free(w), free(g), free(gx), free(gw), free(gb), free(rx), free(rw);
}
END_TEST

/* ---- the kernels that report non-finite values ---------------------------------------------- */

/* Every entry of the per-element table that reports a non-finite value (fast_internal.h: amax,
 * add, scale_tile; the others return nothing: the NVFP4 / MXFP8 quantisers' classes are
 * test_fast_nvfp4_kernels'), at every level: NaN, +Inf or -Inf at each position
 * of lengths around the 8- and 16-lane bodies and their tails must give 0, finite data 1, and the
 * values written must be the scalar level's (the non-finite element itself only as non-finite).
 * A new entry changes the table's size and stops this build until it is sorted here. */
_Static_assert(sizeof(fast_elem_kernels) == 12 * sizeof(void (*)(void)),
               "fast_elem_kernels changed: list a new entry that reports non-finite values in "
               "nonfinite_kernels");
static int same_or_nonfinite(float a, float b) {
  return isfinite(a) ? memcmp(&a, &b, sizeof a) == 0 : !isfinite(b);
}

START_TEST(nonfinite_kernels) {
  static const int64_t lens[] = {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 64, 70};
  static const float bad[] = {NAN, INFINITY, -INFINITY};
  enum { NMAX = 70, ROWS = 3 };
  fast_config sc;
  fast_config_init(&sc, 1, FAST_LEVEL_SCALAR);
  int tested = 0;
  for (int level = 0; level < FAST_LEVELS; ++level) {
    if (!fast_level_has(level)) continue;
    fast_config cf;
    fast_config_init(&cf, 1, level);
    ck_assert_int_eq(cf.level, level);
    const fast_elem_kernels *e = cf.k->e, *s = sc.k->e;
    for (size_t j = 0; j < sizeof lens / sizeof lens[0]; ++j) {
      const int64_t n = lens[j];
      float v[NMAX], acc[NMAX], want[NMAX];
      for (int64_t i = 0; i < n; ++i) v[i] = (float)(i % 13) * 0.37f - 2.0f, acc[i] = 0.25f * (float)i;
      for (int64_t p = -1; p < n; ++p)
        for (size_t b = 0; b < (p < 0 ? 1u : 3u); ++b) {
          const float keep = p >= 0 ? v[p] : 0.0f;
          if (p >= 0) v[p] = bad[b];
          const int ok = p < 0;
          float m = 0.5f, mw = 0.5f;
          ck_assert_msg(e->amax(v, n, &m) == ok, "%s amax n %lld, %g at %lld", fast_level_name(level),
                        (long long)n, (double)(p >= 0 ? v[p] : 0.0f), (long long)p);
          if (ok) {
            ck_assert_int_eq(s->amax(v, n, &mw), 1);
            ck_assert_float_eq(m, mw);
          }
          float got[NMAX];
          memcpy(got, acc, sizeof got), memcpy(want, acc, sizeof want);
          ck_assert_msg(e->add(got, v, n) == ok, "%s add n %lld, %g at %lld", fast_level_name(level),
                        (long long)n, (double)(p >= 0 ? v[p] : 0.0f), (long long)p);
          ck_assert_int_eq(s->add(want, v, n), ok);
          for (int64_t i = 0; i < n; ++i)
            ck_assert_msg(same_or_nonfinite(want[i], got[i]), "%s add n %lld: element %lld",
                          fast_level_name(level), (long long)n, (long long)i);
          if (p >= 0) v[p] = keep;
          ++tested;
        }
      /* scale_tile: an int32 tile whose product overflows at one element (a huge scale on one
       * row, or a value that adds up to Inf), in every mode (fresh or accumulating, final or
       * with more segments to come), aligned or not */
      int32_t a[ROWS * NMAX];
      float out[ROWS * NMAX + 16] __attribute__((aligned(64))), ref[ROWS * NMAX + 16];
      for (int64_t i = 0; i < ROWS * n; ++i) a[i] = (int32_t)(i * 7919 % 2001) - 1000;
      for (int add = 0; add < 4; ++add) /* the mode bits FAST_EPI_ADD | FAST_EPI_MORE */
        for (int shift = 0; shift < 2; ++shift)
          for (int64_t p = -1; p < ROWS * n; p += (p < 0 ? 1 : 5)) {
            float rf[ROWS] = {1e-3f, 2e-3f, -3e-3f};
            float *o = out + shift, *r = ref + shift;
            for (int64_t i = 0; i < ROWS * n; ++i) o[i] = r[i] = 1.5f;
            if (p >= 0) {
              rf[p / n] = 3e38f;
              a[p] = a[p] == 0 || a[p] == 1 || a[p] == -1 ? 2 : a[p];
            }
            const int ok = p < 0;
            ck_assert_msg(e->scale_tile(o, n, a, n, ROWS, n, rf, 0.0f, add) == ok,
                          "%s scale_tile n %lld, add %d, overflow at %lld", fast_level_name(level),
                          (long long)n, add, (long long)p);
            ck_assert_int_eq(s->scale_tile(r, n, a, n, ROWS, n, rf, 0.0f, add), ok);
            for (int64_t i = 0; i < ROWS * n; ++i)
              ck_assert_msg(same_or_nonfinite(r[i], o[i]), "%s scale_tile n %lld: element %lld",
                            fast_level_name(level), (long long)n, (long long)i);
          }
    }
  }
  ck_assert_int_gt(tested, 0);
}
END_TEST

/* A plan without HQ sums g_b in its own pass (fast_step_bias: the table's add), so a non-finite
 * g_y must be reported there: plans with the bias as the only check of g_y before the products
 * (no HQ; no HLA, or HLA too) with NaN, +Inf or -Inf in g_y at several places (inside the 8- and
 * 16-lane bodies of a row, the tail, the last token), f32 and bf16, at every level and thread
 * count: the status is the twin's. (g_b's contents are unspecified after an error, ref.h: the twin
 * leaves the sums of the chunks before the first non-finite value, the fast path its own.) */
START_TEST(nonfinite_bias_no_hq) {
  static const fcase cases[] = {
      {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 17, 137, 17, HOT_DT_F32, M_NO_HQ | M_NO_HLA | M_NO_ABC},
      {HOT_RECIPE_HOT, HOT_ARCH_SM80, 2, 17, 137, 17, HOT_DT_BF16, M_NO_HQ},
      {HOT_RECIPE_HOT, HOT_ARCH_SM80, 1, 40, 50, 33, HOT_DT_F32, M_NO_HQ | M_NO_HLA}};
  static const float bad[] = {NAN, INFINITY, -INFINITY};
  const fcase *c = &cases[_i % 3];
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(c, &sp, &pl);
  const int64_t T = pl.T, O = pl.O, I = pl.I;
  ck_assert(!pl.hq.enabled);
  tp_rng r;
  tp_seed(&r, 99u + (uint64_t)_i);
  float *tmp = malloc((size_t)((T * I > O * I ? T * I : O * I) + T * O) * sizeof *tmp);
  float *x = make_input(&r, T * I, 1.0, HOT_DT_F32, tmp);
  void *w = make_input(&r, O * I, 0.05, c->dt, tmp);
  float *gy = malloc((size_t)(T * O) * sizeof *gy);
  tp_fill_normal(&r, gy, T * O, 1e-3);
  const int64_t at[] = {3, O + 9, 2 * O + 17, O - 1, T * O - 1};
  unsigned short *h = malloc((size_t)(T * O) * sizeof *h);
  float *rx = malloc((size_t)(T * I) * sizeof *rx), *rw = malloc((size_t)(O * I) * sizeof *rw);
  float *fx = malloc((size_t)(T * I) * sizeof *fx), *fw = malloc((size_t)(O * I) * sizeof *fw);
  float *rb = malloc((size_t)O * sizeof *rb), *fb = malloc((size_t)O * sizeof *fb);
  hot_ref_saved rs;
  ck_assert_int_eq(ref_layer_save(&pl, x, HOT_DT_F32, &rs), HOT_REF_OK);
  for (size_t k = 0; k < sizeof at / sizeof at[0]; ++k) {
    const size_t b = k % 3;
    const float keep = gy[at[k]];
    gy[at[k]] = bad[b];
    const void *g = gy;
    if (c->dt == HOT_DT_BF16) {
      for (int64_t i = 0; i < T * O; ++i) h[i] = tp_f32_to_bf16(gy[i]);
      g = h;
    }
    const int rrc = ref_layer_backward(&pl, &rs, g, w, c->dt, HOT_GRAN_ROW, 3, 4, rx, rw, rb);
    ck_assert_int_eq(rrc, HOT_REF_ENONFINITE);
    for (int level = 0; level < FAST_LEVELS; ++level)
      for (int th = 1; th <= 3 && fast_level_has(level); th += 2) {
        fast_set_level(level);
        fast_set_threads(th);
        fast_set_hla_fuse_bytes(th == 3 ? 0 : -1); /* the HLA projection fused, and not */
        const int frc = fast_layer_backward(NULL, &pl, &rs, g, w, c->dt, HOT_GRAN_ROW, 3, 4, fx, fw, fb);
        ck_assert_msg(frc == rrc, "case %d, %g at %lld, %s, %d threads: status %d, the twin's %d",
                      _i % 3, (double)bad[b], (long long)at[k], fast_level_name(level), th, frc, rrc);
      }
    gy[at[k]] = keep;
  }
  ref_saved_free(&rs);
  fast_set_level(-1);
  fast_set_threads(0);
  fast_set_hla_fuse_bytes(-1);
  free(tmp), free(x), free(w), free(gy), free(h), free(rx), free(rw), free(fx), free(fw), free(rb),
      free(fb);
}
END_TEST

/* ---- the epilogues' overflow flags (fast_layer_backward_check) ------------------------------ */

static unsigned scan_overflow(const float *gx, int64_t nx, const float *gw, int64_t nw,
                              const float *gb, int64_t nb) {
  unsigned m = 0;
  for (int64_t i = 0; i < nx; ++i) m |= isfinite(gx[i]) ? 0u : FAST_OVERFLOW_GX;
  for (int64_t i = 0; i < nw; ++i) m |= isfinite(gw[i]) ? 0u : FAST_OVERFLOW_GW;
  for (int64_t i = 0; i < nb; ++i) m |= isfinite(gb[i]) ? 0u : FAST_OVERFLOW_GB;
  return m;
}

/* Finite inputs near FLT_MAX (none, in x, in w, in g_y; large w and g_y whose g_x overflows): at every level and thread count the
 * flags equal a scan of the outputs, and the outputs equal the twins'; cases with per-sample
 * HLA scales (a segmented g_w GEMM, whose flag only the last segment may set) and without HQ or
 * HLA (the plain products, which refuse an overflow themselves) included. */
START_TEST(overflow_flags) {
  static const int cases[] = {6, 5, 19, 17};
  const int ci = cases[_i % 4], where = _i / 4;
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&k_cases[ci], &sp, &pl);
  const int64_t T = pl.T, O = pl.O, I = pl.I;
  tp_rng r;
  tp_seed(&r, 77u + (uint64_t)_i);
  float *tmp = malloc((size_t)((T * I > O * I ? T * I : O * I) + T * O) * sizeof *tmp);
  float *x = make_input(&r, T * I, 1.0, HOT_DT_F32, tmp), *w = make_input(&r, O * I, 0.05, HOT_DT_F32, tmp);
  float *g = make_input(&r, T * O, 1e-3, HOT_DT_F32, tmp);
  if (where == 1) x[5] = 3e38f, x[T * I - 1] = -3e38f;
  if (where == 2) w[3] = 3e38f;
  if (where == 3) g[2] = 3e38f;
  if (where == 4)
    for (int64_t i = 0; i < O * I; ++i) w[i] *= 1e24f, g[i % (T * O)] *= 1e16f;
  float *rx = malloc((size_t)(T * I) * sizeof *rx), *rw = malloc((size_t)(O * I) * sizeof *rw);
  float *fx = malloc((size_t)(T * I) * sizeof *fx), *fw = malloc((size_t)(O * I) * sizeof *fw);
  float *rb = malloc((size_t)O * sizeof *rb), *fb = malloc((size_t)O * sizeof *fb);
  hot_ref_saved rs;
  const int src = ref_layer_save(&pl, x, HOT_DT_F32, &rs);
  const int rrc = src ? src : ref_layer_backward(&pl, &rs, g, w, HOT_DT_F32, HOT_GRAN_ROW, 3, 4, rx, rw, rb);
  for (int level = 0; level < FAST_LEVELS && !src; ++level)
    for (int th = 1; th <= 3 && fast_level_has(level); ++th) {
      fast_set_level(level);
      fast_set_threads(th);
      unsigned over = 99;
      const int frc = fast_layer_backward_check(NULL, &pl, &rs, g, w, HOT_DT_F32, HOT_GRAN_ROW, 3, 4,
                                                fx, fw, fb, &over);
      ck_assert_int_eq(frc, rrc);
      if (frc) {
        ck_assert_uint_eq(over, 0);
        continue;
      }
      ck_assert_mem_eq(fx, rx, (size_t)(T * I) * sizeof *fx);
      ck_assert_mem_eq(fw, rw, (size_t)(O * I) * sizeof *fw);
      ck_assert_mem_eq(fb, rb, (size_t)O * sizeof *fb);
      ck_assert_msg(over == scan_overflow(fx, T * I, fw, O * I, fb, O),
                    "case %d, input %d, %s, %d threads: flags %#x, outputs %#x", ci, where,
                    fast_level_name(level), th, over, scan_overflow(fx, T * I, fw, O * I, fb, O));
      if (where == 3 && pl.hla.enabled) ck_assert_uint_ne(over & FAST_OVERFLOW_GW, 0);
      if (where == 4 && ci == 6) ck_assert_uint_ne(over & FAST_OVERFLOW_GX, 0);
    }
  if (!src) ref_saved_free(&rs);
  fast_set_level(-1);
  fast_set_threads(0);
  free(tmp), free(x), free(w), free(g), free(rx), free(rw), free(fx), free(fw), free(rb), free(fb);
}
END_TEST

/* ---- small calls on the caller alone (fast_threads_for) ---------------------------------- */

static void noop_epi(void *ctx, int64_t seg, int64_t m0, int64_t n0, int64_t mc, int64_t nc,
                     const int32_t *acc, int64_t ldc) {
  (void)ctx, (void)seg, (void)m0, (void)n0, (void)mc, (void)nc, (void)acc, (void)ldc;
}

/* With a config's default bound (fast_config_init: FAST_INLINE_ELEMS) a small layer's save,
 * backward and calibration start no region on 2 threads, and the same calls with the config's
 * bound 0 do; a large GEMM does either way. The default config takes fast_set_inline_elems. */
START_TEST(inline_small_calls) {
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&k_cases[4], &sp, &pl);
  const int64_t T = pl.T, O = pl.O, I = pl.I;
  ck_assert_int_lt(T * O + T * I + O * I, FAST_INLINE_ELEMS);
  tp_rng r;
  tp_seed(&r, 5u);
  float *tmp = malloc((size_t)((T * I > O * I ? T * I : O * I) + T * O) * sizeof *tmp);
  float *x = make_input(&r, T * I, 1.0, HOT_DT_F32, tmp), *w = make_input(&r, O * I, 0.05, HOT_DT_F32, tmp);
  float *g = make_input(&r, T * O, 1e-3, HOT_DT_F32, tmp);
  float *gx = malloc((size_t)(T * I) * sizeof *gx), *gw = malloc((size_t)(O * I) * sizeof *gw);
  float *gb = malloc((size_t)O * sizeof *gb);
  fast_config cf;
  fast_config_init(&cf, 2, -1);
  ck_assert_int_eq(cf.inline_elems, FAST_INLINE_ELEMS);
  for (int pass = 0; pass < 2; ++pass) {
    cf.inline_elems = pass ? 0 : FAST_INLINE_ELEMS;
    const unsigned long long r0 = fast_regions();
    hot_ref_saved s;
    hot_ref_lqs_result lq;
    ck_assert_int_eq(fast_layer_save(&cf, &pl, x, HOT_DT_F32, &s), HOT_REF_OK);
    ck_assert_int_eq(fast_layer_calibrate(&cf, &pl, g, HOT_DT_F32, 1, 1, &lq), HOT_REF_OK);
    ck_assert_int_eq(fast_layer_backward(&cf, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, gx, gw, gb), 0);
    ref_saved_free(&s);
    if (pass) ck_assert_uint_gt(fast_regions(), r0);
    else ck_assert_uint_eq(fast_regions(), r0);
  }
  cf.inline_elems = FAST_INLINE_ELEMS;
  const unsigned long long r0 = fast_regions();
  int8_t *a = calloc(512 * 512, 1), *b = calloc(512 * 512, 1);
  const int8_t *as[1] = {a}, *bs[1] = {b};
  fast_igemm_op op = {512, 512, 512, 1, as, 512, 1, bs, 512, 1, 1, 1, noop_epi, NULL, -1};
  ck_assert_int_eq(fast_igemm(&cf, &op), HOT_REF_OK);
  ck_assert_uint_gt(fast_regions(), r0);
  /* the default config's bound */
  fast_config d;
  fast_set_inline_elems(-1);
  fast_config_default(&d);
  ck_assert_int_eq(d.inline_elems, FAST_INLINE_ELEMS);
  fast_set_inline_elems(0);
  fast_config_default(&d);
  ck_assert_int_eq(d.inline_elems, 0);
  free(a), free(b), free(tmp), free(x), free(w), free(g), free(gx), free(gw), free(gb);
}
END_TEST

/* A call large enough for the pool still keeps its small stages on the caller: w' (O I values)
 * and a GEMM's packing below the config's inline bound start no region. The 2048-token layer of
 * width 24 -> 40 (per-token scales) then starts two regions, g' and HLA's projection of g_y (each
 * T O values), where w''s two passes and the GEMMs (tiles below the bound too) would add their
 * own; with the bound 0 every stage starts one; the bits are the same. */
START_TEST(small_stages_inline) {
  size_t k = 0;
  while (k < sizeof k_cases / sizeof k_cases[0] && !(k_cases[k].B == 16 && k_cases[k].L == 128)) ++k;
  ck_assert_uint_lt(k, sizeof k_cases / sizeof k_cases[0]);
  hot_layer_spec sp;
  hot_layer_plan pl;
  make_plan(&k_cases[k], &sp, &pl);
  const int64_t T = pl.T, O = pl.O, I = pl.I;
  ck_assert_int_ge(T * O + T * I + O * I, FAST_INLINE_ELEMS); /* the call: on the pool */
  ck_assert_int_lt(O * I, FAST_INLINE_ELEMS);                 /* w': on the caller */
  tp_rng r;
  tp_seed(&r, 11u);
  float *tmp = malloc((size_t)(T * I + T * O) * sizeof *tmp);
  float *x = make_input(&r, T * I, 1.0, HOT_DT_F32, tmp), *w = make_input(&r, O * I, 0.05, HOT_DT_F32, tmp);
  float *g = make_input(&r, T * O, 1e-3, HOT_DT_F32, tmp);
  float *out[2];
  unsigned long long regions[2];
  for (int pass = 0; pass < 2; ++pass) {
    fast_config cf;
    fast_config_init(&cf, 2, -1);
    cf.inline_elems = pass ? 0 : FAST_INLINE_ELEMS;
    out[pass] = calloc((size_t)(T * I + O * I + O), sizeof(float));
    hot_ref_saved s;
    ck_assert_int_eq(fast_layer_save(&cf, &pl, x, HOT_DT_F32, &s), HOT_REF_OK);
    const unsigned long long r0 = fast_regions();
    ck_assert_int_eq(fast_layer_backward(&cf, &pl, &s, g, w, HOT_DT_F32, HOT_GRAN_ROW, 1, 1, out[pass],
                                         out[pass] + T * I, out[pass] + T * I + O * I), 0);
    regions[pass] = fast_regions() - r0;
    ref_saved_free(&s);
  }
  ck_assert_msg(regions[0] == 2 && regions[1] > regions[0],
                "regions: %llu with the default bound (want 2), %llu with 0", regions[0], regions[1]);
  ck_assert_int_eq(memcmp(out[0], out[1], (size_t)(T * I + O * I + O) * sizeof(float)), 0);
  free(out[0]), free(out[1]), free(tmp), free(x), free(w), free(g);
  /* a GEMM on the pool (512 x 256 x 128: multiply-adds / 128 at the bound) whose packing moves
   * at most 96 KiB of bytes: its tiles start a region, its packing none (with the bound 0, both),
   * at every level this CPU has; the levels that pack 16-bit values (192 KiB) pack on the pool */
  int8_t *a = calloc(512 * 128, 1), *b = calloc(256 * 128, 1);
  const int8_t *as[1] = {a}, *bs[1] = {b};
  const fast_igemm_op op = {512, 256, 128, 1, as, 128, 1, bs, 128, 1, 1, 1, noop_epi, NULL, -1};
  for (int level = 0; level < FAST_LEVELS; ++level)
    for (int pass = 0; pass < 2 && fast_level_has(level); ++pass) {
      fast_config cf;
      fast_config_init(&cf, 2, level);
      cf.inline_elems = pass ? 0 : FAST_INLINE_ELEMS;
      const unsigned long long r0 = fast_regions();
      ck_assert_int_eq(fast_igemm(&cf, &op), HOT_REF_OK);
      gk_cfg gk;
      memset(&gk, 0, sizeof gk);
      cf.k->gemm(&gk, 1, 1);
      const unsigned long long want = pass || gk.kind == K_W16 ? 2u : 1u;
      ck_assert_msg(fast_regions() - r0 == want, "level %s, bound %lld: %llu regions",
                    fast_level_name(level), (long long)cf.inline_elems, fast_regions() - r0);
    }
  free(a), free(b);
}
END_TEST

/* ---- how a region deals its tasks --------------------------------------------------------- */

/* Every task of a region runs once, on a thread numbered below the region's threads, for task
 * counts below, at and above the thread count. With two threads and 16 tasks, thread 1 owns
 * 8..15: it takes them from the front (8, 9, ...), and thread 0, its own 0..7 done, takes them
 * from the back (15, 14, ...). Task 8 on thread 1 waits until thread 0 has taken one, so that the
 * back-taking happens in every run (with a thread that never comes, thread 0 takes all of them,
 * from the back too). */
enum { DEAL_MAX = 997 };
typedef struct {
  atomic_int done[DEAL_MAX], tid_of[DEAL_MAX], seq_of[DEAL_MAX];
  atomic_int bad_tid, seq, stolen, waited_out;
  int threads;
  int64_t n;
  int block; /* task 8 waits for a steal */
} deal_probe;

static void deal_task(void *ctx, int64_t i, int tid) {
  deal_probe *d = ctx;
  atomic_fetch_add(&d->done[i], 1);
  atomic_store(&d->tid_of[i], tid);
  atomic_store(&d->seq_of[i], atomic_fetch_add(&d->seq, 1));
  if (tid < 0 || tid >= d->threads) atomic_store(&d->bad_tid, 1);
  if (!d->block) return;
  if (i > 8 && tid == 0) atomic_store(&d->stolen, 1);
  if (i == 8 && tid != 0) {
    for (int k = 0; k < 20000 && !atomic_load(&d->stolen); ++k) {
      const struct timespec nap = {0, 100000};
      nanosleep(&nap, NULL);
    }
    if (!atomic_load(&d->stolen)) atomic_store(&d->waited_out, 1);
  }
}

START_TEST(pool_deals_ranges) {
  static deal_probe d;
  const int64_t ns[] = {1, 2, 3, 5, 8, 64, DEAL_MAX};
  for (int th = 1; th <= 5; ++th)
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k) {
      memset(&d, 0, sizeof d);
      d.threads = th, d.n = ns[k];
      fast_parallel(d.n, th, deal_task, &d);
      for (int64_t i = 0; i < d.n; ++i)
        ck_assert_msg(atomic_load(&d.done[i]) == 1, "%d threads, %lld tasks: task %lld ran %d times",
                      th, (long long)d.n, (long long)i, atomic_load(&d.done[i]));
      ck_assert_msg(!atomic_load(&d.bad_tid), "%d threads, %lld tasks: a tid out of range", th,
                    (long long)d.n);
    }
  memset(&d, 0, sizeof d);
  d.threads = 2, d.n = 16, d.block = 1;
  fast_parallel(d.n, 2, deal_task, &d);
  ck_assert_msg(!atomic_load(&d.waited_out), "no thread took the tasks left in another's range");
  int order[8]; /* the tasks 8..15 in the order they started */
  for (int k = 0; k < 8; ++k) {
    int j = k;
    for (; j > 0 && atomic_load(&d.seq_of[order[j - 1]]) > atomic_load(&d.seq_of[8 + k]); --j)
      order[j] = order[j - 1];
    order[j] = 8 + k;
  }
  int last0 = 16, last1 = 7; /* per thread, the last of them it took */
  for (int k = 0; k < 8; ++k) {
    const int i = order[k];
    if (atomic_load(&d.tid_of[i]) == 0) {
      ck_assert_msg(i == last0 - 1, "thread 0 took task %d of thread 1's range after %d", i, last0);
      last0 = i;
    } else {
      ck_assert_msg(i == last1 + 1, "thread 1 took task %d of its range after %d", i, last1);
      last1 = i;
    }
  }
  ck_assert_int_lt(last0, 16); /* thread 0 took at least one */
  for (int64_t i = 0; i < d.n; ++i) ck_assert_int_eq(atomic_load(&d.done[i]), 1);
}
END_TEST

/* The scratch blocks kept between calls are the largest handed back (fast_internal.h): a free
 * slot keeps any block; with every slot taken a block smaller than all kept is freed, a larger
 * one replaces the smallest. Sizes 1 .. FAST_SCRATCH_KEEP quarter MiB, all different, so the
 * bytes kept tell which blocks stay. */
START_TEST(scratch_keeps_largest) {
  enum { Q = 1 << 18, SMALL = 1 << 16 };
  fast_release_scratch();
  void *b[FAST_SCRATCH_KEEP];
  size_t sum = 0, bytes;
  int n;
  for (int i = 0; i < FAST_SCRATCH_KEEP; ++i) {
    ck_assert_ptr_nonnull(b[i] = fast_scratch((size_t)(i + 1) * Q));
    sum += (size_t)(i + 1) * Q;
  }
  for (int i = 0; i < FAST_SCRATCH_KEEP; ++i) fast_unscratch(b[i]);
  fast_scratch_kept(&n, &bytes);
  ck_assert_int_eq(n, FAST_SCRATCH_KEEP);
  ck_assert_uint_eq(bytes, sum);
  fast_unscratch(fast_scratch(SMALL)); /* smaller than all kept: freed */
  fast_scratch_kept(&n, &bytes);
  ck_assert_uint_eq(bytes, sum);
  fast_unscratch(fast_scratch((size_t)(FAST_SCRATCH_KEEP + 1) * Q)); /* replaces the 1 Q block */
  sum += (size_t)FAST_SCRATCH_KEEP * Q;
  fast_scratch_kept(&n, &bytes);
  ck_assert_int_eq(n, FAST_SCRATCH_KEEP);
  ck_assert_uint_eq(bytes, sum);
  void *two = fast_scratch(2 * (size_t)Q); /* the kept 2 Q block, a slot free */
  ck_assert_ptr_eq(two, b[1]);
  fast_unscratch(fast_scratch(SMALL)); /* a free slot keeps it */
  fast_scratch_kept(&n, &bytes);
  ck_assert_int_eq(n, FAST_SCRATCH_KEEP);
  ck_assert_uint_eq(bytes, sum - 2 * (size_t)Q + SMALL);
  fast_unscratch(two); /* larger than the small one: replaces it */
  fast_scratch_kept(&n, &bytes);
  ck_assert_uint_eq(bytes, sum);
  fast_release_scratch();
  fast_scratch_kept(&n, &bytes);
  ck_assert_int_eq(n, 0);
  ck_assert_uint_eq(bytes, 0);
}
END_TEST

/* ---- parallel regions on an OpenMP runtime (test_fast_openmp) ----------------------------- */

#ifdef HOT_FAST_TEST_OPENMP
#define OMP_RT "libgomp.so.1"
static void *g_gomp;              /* this program's reference to the runtime */
static int (*g_omp_num)(void);    /* its omp_get_thread_num */
enum { OMP_TASKS = 997 };
typedef struct {
  atomic_int done[OMP_TASKS];
  atomic_int bad_tid, foreign, nested_moved, in_task_set; /* in_task_set: a switch inside a task
                                                             was not refused */
  int threads;
  pthread_t caller;
  atomic_int others; /* tasks run by a thread other than the caller */
} omp_probe;

static void inner_task(void *ctx, int64_t i, int tid) {
  (void)i;
  omp_probe *p = ctx;
  if (tid != 0) atomic_store(&p->nested_moved, 1); /* nested regions run inline as tid 0 */
}

static void probe_task(void *ctx, int64_t i, int tid) {
  omp_probe *p = ctx;
  atomic_fetch_add(&p->done[i], 1);
  if (tid < 0 || tid >= p->threads) atomic_store(&p->bad_tid, 1);
  if (g_omp_num() != tid) atomic_store(&p->foreign, 1); /* tid is the runtime's thread number */
  if (!pthread_equal(pthread_self(), p->caller)) atomic_fetch_add(&p->others, 1);
  if (i == 5) { /* inside a task: switching is refused (it would wait on this region), reading
                   the setting works */
    char nm[16];
    if (fast_use_openmp(NULL) != -2 || fast_openmp(nm, sizeof nm) != 1) atomic_store(&p->in_task_set, 1);
  }
  if (i % 100 == 0) {
    omp_probe q;
    memset(&q, 0, sizeof q);
    fast_parallel(8, p->threads, inner_task, &q);
    if (atomic_load(&q.nested_moved)) atomic_store(&p->nested_moved, 1);
  }
}

START_TEST(openmp_runtime) {
  fast_openmp_fallback(INT64_MAX, 100000000, 1000000000); /* every region on the runtime, however late */
  char name[64];
  ck_assert_int_eq(fast_openmp(name, sizeof name), 1);
  ck_assert_str_eq(name, OMP_RT);
  ck_assert_int_eq(fast_openmp(name, 4), 1); /* truncated to fit */
  ck_assert_str_eq(name, "lib");
  for (int th = 1; th <= 4; ++th) {
    static omp_probe p;
    memset(&p, 0, sizeof p);
    p.threads = th;
    p.caller = pthread_self();
    fast_parallel(OMP_TASKS, th, probe_task, &p);
    for (int i = 0; i < OMP_TASKS; ++i)
      ck_assert_msg(atomic_load(&p.done[i]) == 1, "%d threads: task %d ran %d times", th, i,
                    atomic_load(&p.done[i]));
    ck_assert_msg(!atomic_load(&p.bad_tid), "%d threads: a task's tid out of range", th);
    ck_assert_msg(!atomic_load(&p.foreign), "%d threads: a tid that is not the runtime's", th);
    ck_assert_msg(!atomic_load(&p.nested_moved), "%d threads: a nested region left its thread", th);
    ck_assert_msg(!atomic_load(&p.in_task_set), "%d threads: a switch inside a task", th);
    if (th == 1) ck_assert_int_eq(atomic_load(&p.others), 0);
    printf("openmp %d threads: %d tasks, %d on the runtime's other threads\n", th, OMP_TASKS,
           atomic_load(&p.others));
  }
  /* names that cannot be used leave the setting alone */
  ck_assert_int_eq(fast_use_openmp("libhot-no-such-runtime.so.9"), -1);
  ck_assert_int_eq(fast_use_openmp(""), -3);
  ck_assert_int_eq(fast_use_openmp("libm.so.6"), -1); /* loaded, but no GOMP_parallel */
  char longname[80];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  ck_assert_int_eq(fast_use_openmp(longname), -3);
  ck_assert_int_eq(fast_openmp(name, sizeof name), 1);
  ck_assert_str_eq(name, OMP_RT);
  /* back to the own pool and again to the runtime */
  ck_assert_int_eq(fast_use_openmp(NULL), 0);
  ck_assert_int_eq(fast_openmp(name, sizeof name), 0);
  ck_assert_str_eq(name, "");
  ck_assert_int_eq(fast_use_openmp(OMP_RT), 0);
  ck_assert_int_eq(fast_openmp(NULL, 0), 1);
  fast_openmp_fallback(500000, 100000000, 1000000000); /* the defaults */
}
END_TEST

/* The fall-back to the own pool while the CPUs are shared (fast_openmp_fallback): with a late
 * bound of 0 every region attached to the runtime marks itself late (its second member enters
 * after its start), so the fall-back counter tells which regions ran attached and fell back:
 * the first late region is only remembered, the second (within the window) starts the back-off,
 * the regions within it run on the own pool, after it the runtime is tried again and again needs
 * two late regions; with a window of 0 late regions never fall back (none are simultaneous), nor
 * any with the bound above any region. A task of an attached region never runs on an own-pool
 * worker, nor one of a region within the back-off on a member of the runtime's team; the tasks
 * all run once either way. */
typedef struct {
  atomic_int done[40];
  atomic_int on_team, on_pool; /* tasks run by a thread other than the caller: whose */
} where_probe;

static void where_task(void *ctx, int64_t i, int tid) {
  where_probe *w = ctx;
  atomic_fetch_add(&w->done[i], 1);
  const struct timespec nap = {0, 100000};
  nanosleep(&nap, NULL); /* long enough for the other thread to take some */
  if (tid == 0) return;
  if (g_omp_num() == tid) atomic_fetch_add(&w->on_team, 1);
  else atomic_fetch_add(&w->on_pool, 1);
}

static unsigned long long where_region(int expect_attached) {
  static where_probe w;
  memset(&w, 0, sizeof w);
  const unsigned long long f0 = fast_openmp_fallbacks();
  fast_parallel(40, 2, where_task, &w);
  for (int i = 0; i < 40; ++i) ck_assert_int_eq(atomic_load(&w.done[i]), 1);
  if (expect_attached) ck_assert_int_eq(atomic_load(&w.on_pool), 0);
  else ck_assert_int_eq(atomic_load(&w.on_team), 0);
  return fast_openmp_fallbacks() - f0;
}

START_TEST(openmp_fallback) {
  ck_assert_int_eq(fast_openmp(NULL, 0), 1);
  /* every attached region late, any two within the window; 1 s on the own pool */
  fast_openmp_fallback(0, INT64_MAX, 1000000000);
  ck_assert_uint_eq(where_region(1), 0); /* attached, late: remembered */
  ck_assert_uint_eq(where_region(1), 1); /* attached, late again: the back-off starts */
  ck_assert_uint_eq(where_region(0), 0); /* within it: the own pool */
  ck_assert_uint_eq(where_region(0), 0);
  const struct timespec wait = {1, 100000000};
  nanosleep(&wait, NULL);
  ck_assert_uint_eq(where_region(1), 0); /* after it: the runtime again, one late region */
  ck_assert_uint_eq(where_region(1), 1); /* and a second one */
  ck_assert_uint_eq(where_region(0), 0);
  fast_openmp_fallback(0, 0, 1000000000); /* late regions, none within 0 ns of another */
  for (int i = 0; i < 3; ++i) ck_assert_uint_eq(where_region(1), 0);
  fast_openmp_fallback(INT64_MAX, INT64_MAX, 1000000000); /* never late: attached, no back-off */
  ck_assert_uint_eq(where_region(1), 0);
  ck_assert_uint_eq(where_region(1), 0);
  fast_openmp_fallback(500000, 100000000, 1000000000); /* the defaults */
}
END_TEST
#endif

/* ---- settings ------------------------------------------------------------------------------- */

START_TEST(settings) {
  /* the fast path never reads the environment: HOT_CPU_* reach it through a config only */
  fast_set_threads(0);
  setenv("HOT_CPU_THREADS", "3", 1);
  setenv("HOT_CPU_ISA", "scalar", 1);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  ck_assert_int_eq(fast_threads(), online < 1 ? 1 : online > FAST_MAX_THREADS ? FAST_MAX_THREADS
                                                                              : (int)online);
  ck_assert_int_eq(fast_level_now(), fast_level_cpu());
  unsetenv("HOT_CPU_THREADS");
  unsetenv("HOT_CPU_ISA");
  fast_set_threads(5);
  ck_assert_int_eq(fast_threads(), 5);
  fast_set_threads(0);
  fast_set_level(FAST_LEVEL_SCALAR);
  ck_assert_int_eq(fast_level_now(), FAST_LEVEL_SCALAR);
  fast_set_level(-1);
  ck_assert_int_eq(fast_level_now(), fast_level_cpu());
  /* a config: its threads (bounded), its level (the highest under the cap) and that table */
  fast_config c;
  fast_config_init(&c, 3, FAST_LEVEL_SCALAR);
  ck_assert_int_eq(c.threads, 3);
  ck_assert_int_eq(c.level, FAST_LEVEL_SCALAR);
  ck_assert_ptr_nonnull(c.k);
  fast_config_init(&c, 100000, FAST_LEVEL_AVX512);
  ck_assert_int_eq(c.threads, FAST_MAX_THREADS);
  ck_assert_int_le(c.level, FAST_LEVEL_AVX512);
  ck_assert(fast_level_has(c.level));
  fast_config_init(&c, 0, -1);
  ck_assert_int_eq(c.level, fast_level_cpu());
  ck_assert_int_eq(c.threads, fast_threads());
  fast_config d;
  fast_config_init(&d, 1, c.level);
  ck_assert_ptr_eq(d.k, c.k); /* one table per level */
  /* a cap gives the highest level under it that the CPU has (AVX-512 VNNI without AVX-VNNI
   * exists, so a level's presence says nothing of the one below) */
  ck_assert(fast_level_has(FAST_LEVEL_SCALAR));
  ck_assert(!fast_level_has(-1) && !fast_level_has(FAST_LEVELS));
  for (int l = 0; l < FAST_LEVELS; ++l) {
    fast_set_level(l);
    const int now = (int)fast_level_now();
    ck_assert_int_le(now, l);
    ck_assert(fast_level_has(now));
    if (fast_level_has(l)) ck_assert_int_eq(now, l);
    for (int k = now + 1; k <= l; ++k) ck_assert(!fast_level_has(k));
  }
  fast_set_level(-1);
  ck_assert_str_eq(fast_level_name(FAST_LEVEL_AVX2), "avx2");
  ck_assert_str_eq(fast_level_name(FAST_LEVEL_AVXVNNI), "avx-vnni");
  ck_assert_str_eq(fast_level_name(FAST_LEVEL_AMX), "amx-int8");
  for (int l = 0; l < FAST_LEVELS; ++l) ck_assert_int_eq(fast_level_by_name(fast_level_name(l)), l);
  ck_assert_int_eq(fast_level_by_name("avx512"), FAST_LEVEL_AVX512);
  ck_assert_int_eq(fast_level_by_name("amx"), FAST_LEVEL_AMX);
  ck_assert_int_eq(fast_level_by_name("avxvnni"), FAST_LEVEL_AVXVNNI);
  ck_assert_int_eq(fast_level_by_name("AVX2"), -1);
  ck_assert_int_eq(fast_level_by_name(NULL), -1);
  ck_assert_str_eq(fast_level_name(FAST_LEVELS), "unknown level");
  printf("this CPU: %s; threads by default: %d\n", fast_level_name(fast_level_cpu()), fast_threads());
}
END_TEST

/* The AMX level asks Linux for the tile data only when it may be picked: a config capped below
 * it (HOT_CPU_ISA=avx512, parsed into the config) runs its GEMMs without the request, whatever
 * the environment says later. Must run first in the process
 * (the permission, once granted, stays); returns the number of failures. */
static int amx_asked_only_when_uncapped(void) {
#if FAST_HAVE_AMX && !defined(HOT_FAST_VNNI_EMU)
  setenv("HOT_CPU_ISA", "avx512", 1);
  int8_t a[64 * 70], b[48 * 70];
  for (int i = 0; i < 64 * 70; ++i) a[i] = (int8_t)(i % 15 - 7);
  for (int i = 0; i < 48 * 70; ++i) b[i] = (int8_t)(i % 13 - 6);
  const int8_t *as[1] = {a}, *bs[1] = {b};
  int32_t got[64 * 48];
  gemm_sink sink = {64, 48, got};
  fast_igemm_op op = {64, 48, 70, 1, as, 70, 1, bs, 70, 1, 7, 7, gemm_epi, &sink, -1};
  fast_config cf;
  fast_config_init(&cf, 2, FAST_LEVEL_AVX512);
  unsetenv("HOT_CPU_ISA"); /* the config keeps its cap */
  const int rc = fast_igemm(&cf, &op);
  unsigned long long perm = 0;
  const long g = syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &perm);
  if (rc != HOT_REF_OK || (g == 0 && (perm >> 18 & 1u))) {
    printf("capped at avx512, a GEMM asked for the AMX tile data (or failed: %d)\n", rc);
    return 1;
  }
#endif
  return 0;
}

int main(void) {
  const int amx_fail = amx_asked_only_when_uncapped();
#ifdef HOT_FAST_TEST_OPENMP
  g_gomp = dlopen(OMP_RT, RTLD_NOW | RTLD_GLOBAL);
  if (!g_gomp) {
    printf("SKIP: %s cannot be loaded (%s): the fast path on an OpenMP runtime is not tested\n",
           OMP_RT, dlerror());
    return 77;
  }
  void *num = dlsym(g_gomp, "omp_get_thread_num");
  if (num) memcpy(&g_omp_num, &num, sizeof g_omp_num);
  if (!num || fast_use_openmp(OMP_RT) != 0) {
    printf("fast_use_openmp(\"%s\") failed with the runtime loaded\n", OMP_RT);
    return 1;
  }
  printf("parallel regions on %s\n", OMP_RT);
#endif
  /* every call of the suite on the pool, small layers included (fast_threads_for), so that each
   * case runs on 1, 2 and 3 threads; inline_small_calls checks the default bound */
  fast_set_inline_elems(0);
  Suite *s = suite_create("fast");
  TCase *tc = tcase_create("fast");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, settings);
  tcase_add_loop_test(tc, layers_bit_identical, 0, (int)(sizeof k_cases / sizeof k_cases[0]));
  tcase_add_test(tc, exact_bit_identical);
  tcase_add_test(tc, gemm_exact);
  tcase_add_test(tc, gemm_wraps);
  tcase_add_test(tc, philox_words_exact);
  tcase_add_test(tc, quant_division_exact);
  tcase_add_test(tc, statuses_match);
  tcase_add_loop_test(tc, nvfp4_statuses_match, 0, 2);
  tcase_add_test(tc, nonfinite_kernels);
  tcase_add_loop_test(tc, nonfinite_bias_no_hq, 0, 3);
  tcase_add_loop_test(tc, overflow_flags, 0, 20);
  tcase_add_test(tc, inline_small_calls);
  tcase_add_test(tc, small_stages_inline);
  tcase_add_test(tc, pool_deals_ranges);
  tcase_add_test(tc, scratch_keeps_largest);
#ifdef HOT_FAST_TEST_OPENMP
  tcase_add_test(tc, openmp_runtime);
  tcase_add_test(tc, openmp_fallback);
#endif
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr) + amx_fail;
  srunner_free(sr);
#ifdef HOT_FAST_VNNI_EMU
  static const char *const k_run2 = "tested with its GEMM kernels emulated in portable C";
#else
  static const char *const k_run2 = "tested";
#endif
  /* a level the CPU has must have been run: checked against the compiler's own CPU test, so a
   * broken fast_level_has cannot make the suite quietly test less */
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    int need[FAST_LEVELS] = {1, 1, 0, 0, 0};
#ifdef HOT_FAST_VNNI_EMU
    need[FAST_LEVEL_AVXVNNI] = need[FAST_LEVEL_AVX512] = need[FAST_LEVEL_AMX] = 1;
#endif
    for (int l = 0; l < FAST_LEVELS; ++l)
      if (need[l] && !g_levels_run[l]) {
        printf("level %s: this CPU has it, but it was not tested\n", fast_level_name(l));
        failed = 1;
      }
  }
#endif
  for (int l = 0; l < FAST_LEVELS; ++l)
    printf("level %s: %s\n", fast_level_name(l),
           g_levels_run[l] ? (l >= FAST_LEVEL_AVXVNNI ? k_run2 : "tested")
                           : "not on this CPU (not tested here)");
  return failed ? 1 : 0;
}

/* test_fast_nvfp4_kernels.c — the NVFP4 / MXFP8 element quantisers of every dispatch level the CPU
 * has (fast_internal.h's e4m3, e2m1, nvfp4_rows, mxfp8_rows) against the twin's scalar functions
 * (templates/nvfp4_ref.c), bit for bit: every E4M3 value and its neighbours and midpoints, every
 * float class (zeros, subnormals, the largest finite values, Inf, NaN) in both signs, the E2M1
 * grid and its ties, SR words 0, 0xFFFFFFFF and around each value's rounding threshold, random
 * values over many binades; and whole row sets whose block scales hit every E4M3 scale byte and
 * its neighbours, RTN and SR, with tails and strides that the 16-lane forms hand to the twin. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fast.h"
#include "fast_internal.h"
#include "nvfp4_ref.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}
/* A random float of magnitude about 2^e (random mantissa and sign). */
static float rnd_at(int e) {
  const float m = 1.0f + (float)(rnd() & 0x7FFFFF) / 8388608.0f;
  return (rnd() & 1u ? -1.0f : 1.0f) * ldexpf(m, e);
}

/* ---- value lists ---------------------------------------------------------------------------- */

typedef struct {
  float *v;
  int64_t n, cap;
} vlist;

static void push(vlist *l, float x) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 1024;
    l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
    ck_assert_ptr_nonnull(l->v);
  }
  l->v[l->n++] = x;
}
/* x, -x and their two float neighbours on each side. */
static void push_around(vlist *l, float x) {
  for (int s = 0; s < 2; ++s) {
    const float y = s ? -x : x;
    push(l, y);
    float up = y, dn = y;
    for (int k = 0; k < 2; ++k) {
      up = nextafterf(up, INFINITY), dn = nextafterf(dn, -INFINITY);
      push(l, up), push(l, dn);
    }
  }
}

static void push_classes(vlist *l) {
  const float special[] = {0.0f, FLT_TRUE_MIN, 2.0f * FLT_TRUE_MIN, FLT_MIN - FLT_TRUE_MIN, FLT_MIN,
                           FLT_MAX, 1.0f, 448.0f, 464.0f, 480.0f, 512.0f, 1e30f};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; ++i) push_around(l, special[i]);
  push(l, INFINITY), push(l, -INFINITY), push(l, NAN), push(l, -NAN);
  for (int e = -150; e <= 128; ++e)
    for (int k = 0; k < 8; ++k) push(l, rnd_at(e));
}

/* Every finite E4M3 value, the midpoints between neighbours (the RTN ties), around each. */
static void push_e4m3_grid(vlist *l) {
  for (unsigned c = 0; c < 0x7F; ++c) {
    const float a = nvfp4_e4m3_decode(c), b = nvfp4_e4m3_decode(c + 1);
    push_around(l, a);
    if (c + 1 < 0x7F) push_around(l, 0.5f * (a + b));
  }
  push_classes(l);
}

/* The E2M1 grid (0 .. 6), its midpoints, the segment edges, past 6. */
static void push_e2m1_grid(vlist *l) {
  const float g[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int i = 0; i < 8; ++i) {
    push_around(l, g[i]);
    if (i < 7) push_around(l, 0.5f * (g[i] + g[i + 1]));
  }
  push_around(l, 7.0f);
  push_classes(l);
  for (int i = 0; i < 4000; ++i) push(l, (float)(int32_t)rnd() * (8.0f / 2147483648.0f));
}

/* ---- SR words ------------------------------------------------------------------------------- */

/* The fraction of a value's scaled magnitude t that SR compares rho with (E4M3: t = a / ulp of
 * the twin; E2M1: t = m / step), or -1 where SR does not apply. */
static float e4m3_frac(float v) {
  const float a = fabsf(v);
  if (!(a > 0.0f) || a > 448.0f) return -1.0f;
  int ex;
  frexpf(a, &ex);
  const float t = a / ldexpf(1.0f, (ex - 1 < -6 ? -6 : ex - 1) - 3);
  return t - floorf(t);
}
static float e2m1_frac(float u) {
  const float m = fminf(fabsf(u), 6.0f);
  const float t = m / (m < 2.0f ? 0.5f : (m < 4.0f ? 1.0f : 2.0f));
  return t - floorf(t);
}

/* Words for value i: 0, 0xFFFFFFFF, and around the threshold word (rho = frac exactly, where SR
 * stops rounding up): W - 256, W - 1, W, W + 255, W + 256; and a random word. */
enum { NWORDS = 8 };
static uint32_t word_of(float frac, int j) {
  const int64_t w = frac >= 0.0f ? (int64_t)ldexpf(frac, 24) << 8 : 0x80000000ll;
  const int64_t d[] = {-256, -1, 0, 255, 256};
  int64_t x;
  switch (j) {
  case 0: return 0u;
  case 1: return 0xFFFFFFFFu;
  case 7: return rnd();
  default: x = w + d[j - 2];
  }
  return x < 0 ? 0u : x > 0xFFFFFFFFll ? 0xFFFFFFFFu : (uint32_t)x;
}

static int levels_checked;

/* ---- e4m3 and e2m1 ---------------------------------------------------------------------------- */

/* One element kernel under test: the twin's code of v (mode: e4m3's nvfp4_round, or e2m1's sr),
 * the level's codes of v[0..n), the word fraction that places SR's thresholds, and the modes. */
typedef struct {
  const char *name;
  int modes, sr_mode; /* modes 0 .. modes - 1; the one that takes words */
  unsigned (*twin)(float v, int mode, uint32_t w);
  void (*level)(const fast_elem_kernels *e, const float *v, int64_t n, int mode, const uint32_t *w,
                uint8_t *codes);
  float (*frac)(float v);
} elem_case;

static unsigned twin_e4m3(float v, int mode, uint32_t w) {
  return nvfp4_e4m3_encode(v, (nvfp4_round)mode, w);
}
static void level_e4m3(const fast_elem_kernels *e, const float *v, int64_t n, int mode,
                       const uint32_t *w, uint8_t *codes) {
  e->e4m3(v, n, (nvfp4_round)mode, mode == NVFP4_ROUND_SR ? w : NULL, codes);
}
static unsigned twin_e2m1(float v, int sr, uint32_t w) {
  return sr ? nvfp4_e2m1_sr(v, w) : nvfp4_e2m1_rtn(v);
}
static void level_e2m1(const fast_elem_kernels *e, const float *v, int64_t n, int sr,
                       const uint32_t *w, uint8_t *codes) {
  e->e2m1(v, n, sr, w, codes);
}

/* Every value of l through c at every level this CPU has, every mode, SR with each of the
 * NWORDS words around each value's threshold, for the first 40 lengths and the whole list (the
 * byte past the length untouched). */
static void check_elem(const elem_case *c, vlist *l) {
  const int64_t n = l->n;
  uint8_t *got = malloc((size_t)n), *want = malloc((size_t)n);
  uint32_t *w = malloc((size_t)n * sizeof *w);
  ck_assert(got && want && w);
  for (int level = 0; level < FAST_LEVELS; ++level) {
    if (!fast_level_has(level)) continue;
    fast_config cf;
    fast_config_init(&cf, 1, level);
    for (int mode = 0; mode < c->modes; ++mode)
      for (int j = 0; j < (mode == c->sr_mode ? NWORDS : 1); ++j) {
        for (int64_t i = 0; i < n; ++i) {
          w[i] = word_of(c->frac(l->v[i]), j);
          want[i] = (uint8_t)c->twin(l->v[i], mode, w[i]);
        }
        for (int64_t len = 1; len <= n; len = len < 40 ? len + 1 : (len == n ? n + 1 : n)) {
          memset(got, 0xAB, (size_t)n);
          c->level(cf.k->e, l->v, len, mode, w, got);
          for (int64_t i = 0; i < len; ++i)
            ck_assert_msg(got[i] == want[i], "%s %s mode %d word %08x: %a -> %02x, twin %02x",
                          fast_level_name(level), c->name, mode, w[i], (double)l->v[i], got[i],
                          want[i]);
          if (len < n) ck_assert_uint_eq(got[len], 0xAB);
        }
      }
    levels_checked |= 1 << level;
  }
  free(got), free(want), free(w), free(l->v);
}

START_TEST(e4m3_every_value) {
  vlist l = {0};
  push_e4m3_grid(&l);
  const elem_case c = {"e4m3", NVFP4_ROUND_SR + 1, NVFP4_ROUND_SR, twin_e4m3, level_e4m3, e4m3_frac};
  check_elem(&c, &l);
}
END_TEST

START_TEST(e2m1_every_value) {
  vlist l = {0};
  push_e2m1_grid(&l);
  const elem_case c = {"e2m1", 2, 1, twin_e2m1, level_e2m1, e2m1_frac};
  check_elem(&c, &l);
}
END_TEST

/* ---- whole rows ----------------------------------------------------------------------------- */

/* A rows x k tensor whose 16-value blocks (NVFP4 with s_t = 1) have their scale d = amax / 6 on,
 * or one float beside, E4M3 value number b % 126 + 1 (every scale byte), with some all-zero,
 * subnormal, huge and special blocks; kind 1 adds Inf and NaN elements. */
static void fill_rows(float *v, int64_t rows, int64_t k, int kind) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c0 = 0; c0 < k; c0 += 16) {
      const int64_t b = (r * k + c0) / 16;
      float amax = 6.0f * nvfp4_e4m3_decode((unsigned)(b % 126 + 1));
      if ((b / 126) % 3 == 1) amax = nextafterf(amax, INFINITY);
      if ((b / 126) % 3 == 2) amax = nextafterf(amax, 0.0f);
      const int sp = (int)(b % 29);
      for (int64_t c = c0; c < c0 + 16 && c < k; ++c) {
        float x = amax * (float)(int32_t)rnd() / 2147483648.0f;
        if (sp == 3) x = 0.0f;
        if (sp == 5) x = (float)((int)(rnd() % 64u) - 32) * FLT_TRUE_MIN;
        if (sp == 7) x = rnd_at(100);
        if (sp == 11) x = rnd_at((int)(rnd() % 280u) - 150);
        if (sp == 13) x = (float)((int)(rnd() % 25u) - 12) * 0.25f * amax / 6.0f; /* ties */
        v[r * k + c] = c == c0 + (b % 16) ? (b & 1 ? -amax : amax) : x;
      }
      if (kind == 1 && b % 7 == 0) v[r * k + c0] = (b & 8) ? NAN : -INFINITY;
    }
}

/* One case of the row quantisers' checks: the level's table e, K columns, the input kind, SR
 * or RTN, and a strided or contiguous SR word stream. */
typedef void (*rows_case_fn)(const fast_elem_kernels *e, int level, int64_t k, int kind, int sr,
                             int stride);

/* Every level the CPU has x every K of ks x kinds input kinds x SR/RTN x both word strides. */
static void rows_cases(const int64_t *ks, size_t nk, int kinds, rows_case_fn fn) {
  for (int level = 0; level < FAST_LEVELS; ++level) {
    if (!fast_level_has(level)) continue;
    fast_config cf;
    fast_config_init(&cf, 1, level);
    for (size_t ki = 0; ki < nk; ++ki)
      for (int kind = 0; kind < kinds; ++kind)
        for (int sr = 0; sr < 2; ++sr)
          for (int stride = 0; stride < 2; ++stride) fn(cf.k->e, level, ks[ki], kind, sr, stride);
    levels_checked |= 1 << level;
  }
}

enum { NV_ROWS = 40, MX_ROWS = 24 };

static void nvfp4_rows_case(const fast_elem_kernels *e, int level, int64_t k, int kind, int sr,
                            int stride) {
  const int64_t kp = (k + 15) / 16 * 16, cb = NV_ROWS * kp / 2, sb = NV_ROWS * kp / 16;
  float *v = malloc((size_t)(NV_ROWS * k) * sizeof *v);
  uint8_t *got = malloc((size_t)(cb + sb)), *want = malloc((size_t)(cb + sb));
  ck_assert(v && got && want);
  fill_rows(v, NV_ROWS, k, kind);
  const nvfp4_stream st = {0x1234567890ABCDEFull + (uint64_t)k, 77u, 5u, stride ? 1 : kp,
                           stride ? NV_ROWS : 1};
  const float s_ts[] = {1.0f, 0.75f, 3e-3f, 0.0f};
  for (size_t si = 0; si < sizeof s_ts / sizeof s_ts[0]; ++si) {
    memset(got, 0x5A, (size_t)(cb + sb)), memset(want, 0x5A, (size_t)(cb + sb));
    nvfp4_quantize_rows(v, 3, NV_ROWS, k, s_ts[si], sr, &st, want, want + cb);
    e->nvfp4_rows(v, 3, NV_ROWS, k, s_ts[si], sr, &st, got, got + cb);
    for (int64_t i = 0; i < cb + sb; ++i)
      ck_assert_msg(got[i] == want[i], "%s nvfp4_rows k %lld kind %d sr %d stride %d s_t %g: "
                    "byte %lld (%s) %02x, twin %02x", fast_level_name(level), (long long)k, kind,
                    sr, stride, (double)s_ts[si], (long long)(i < cb ? i : i - cb),
                    i < cb ? "codes" : "scales", got[i], want[i]);
  }
  free(v), free(got), free(want);
}

START_TEST(nvfp4_rows_every_scale) {
  static const int64_t ks[] = {16, 32, 48, 256, 272, 512, 20};
  rows_cases(ks, sizeof ks / sizeof ks[0], 2, nvfp4_rows_case);
}
END_TEST

static void mxfp8_rows_case(const fast_elem_kernels *e, int level, int64_t k, int kind, int sr,
                            int stride) {
  const int64_t kp = (k + 31) / 32 * 32, cb = MX_ROWS * kp, sb = MX_ROWS * kp / 32;
  float *v = malloc((size_t)(MX_ROWS * k) * sizeof *v);
  uint8_t *got = malloc((size_t)(cb + sb)), *want = malloc((size_t)(cb + sb));
  ck_assert(v && got && want);
  fill_rows(v, MX_ROWS, k, kind == 1);
  if (kind == 2) /* block amax from 2^-149 to 2^127: the E8M0 clamps */
    for (int64_t i = 0; i < MX_ROWS * k; ++i) v[i] = rnd_at((int)((i / 32) % 277) - 149);
  const nvfp4_stream st = {0xFEDCBA0987654321ull + (uint64_t)k, 3u, 9u, stride ? 1 : k,
                           stride ? MX_ROWS : 1};
  memset(got, 0x5A, (size_t)(cb + sb)), memset(want, 0x5A, (size_t)(cb + sb));
  mxfp8_quantize_rows(v, 2, MX_ROWS, k, sr, &st, want, want + cb);
  e->mxfp8_rows(v, 2, MX_ROWS, k, sr, &st, got, got + cb);
  for (int64_t i = 0; i < cb + sb; ++i)
    ck_assert_msg(got[i] == want[i], "%s mxfp8_rows k %lld kind %d sr %d stride %d: byte %lld "
                  "(%s) %02x, twin %02x", fast_level_name(level), (long long)k, kind, sr, stride,
                  (long long)(i < cb ? i : i - cb), i < cb ? "codes" : "scales", got[i], want[i]);
  free(v), free(got), free(want);
}

START_TEST(mxfp8_rows_every_scale) {
  static const int64_t ks[] = {32, 64, 96, 512, 17, 40, 70};
  rows_cases(ks, sizeof ks / sizeof ks[0], 3, mxfp8_rows_case);
}
END_TEST

/* Which levels ran (visible in the log: on a CPU without AVX-512F the 512-bit levels' table
 * holds the AVX2 row's functions). */
START_TEST(levels_reported) {
  for (int level = 0; level < FAST_LEVELS; ++level)
    if (fast_level_has(level)) {
      fast_config cf;
      fast_config_init(&cf, 1, level);
      printf("nvfp4 element kernels checked at level %s (%s forms)\n", fast_level_name(level),
             cf.k->e->nvfp4_rows == nvfp4_quantize_rows ? "the twin's" : "SIMD");
    }
  ck_assert_int_ne(levels_checked, 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("fast_nvfp4_kernels");
  TCase *tc = tcase_create("kernels");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, e4m3_every_value);
  tcase_add_test(tc, e2m1_every_value);
  tcase_add_test(tc, nvfp4_rows_every_scale);
  tcase_add_test(tc, mxfp8_rows_every_scale);
  tcase_add_test(tc, levels_reported);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

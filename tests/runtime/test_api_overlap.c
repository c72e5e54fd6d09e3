/* test_api_overlap.c — the overlap rule of hot.h for every pointer argument of the per-step
 * calls (CPU backend): a buffer the call writes may share no byte with any other pointer
 * argument, and such a call is refused with HOT_ERR_INVALID before any work; inputs may overlap
 * each other. Every pair is enumerated: for hot_layer_save (x, saved) and for
 * hot_layer_backward (g_y, w, saved, g_x, g_w, g_b) each pair of which at least one is written
 * is placed so that the two share one byte, in both orders, and must be refused naming both;
 * the same placement shifted by one byte must run and give the bits of separate buffers; and
 * pairs of inputs placed on the same bytes must run and give the same bits. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "hot.h"
#include "plan.h"

/* A layer with T = O = I (so g_y, w, g_x, g_w all have T*T elements), bias on. */
enum { B = 2, L = 32, N = 64 };
#define T (B * L)

enum { A_GY, A_W, A_SAVED, A_GX, A_GW, A_GB, A_N };
static const char *const names[A_N] = {"g_y", "w", "saved", "g_x", "g_w", "g_b"};
static const int writes[A_N] = {0, 0, 0, 1, 1, 1};

static size_t bytes_of(int a, size_t saved_bytes) {
  switch (a) {
  case A_GY: return (size_t)T * N * 4;
  case A_W: return (size_t)N * N * 4;
  case A_SAVED: return saved_bytes;
  case A_GB: return (size_t)N * 4;
  default: return (size_t)T * N * 4; /* g_x: T x I, g_w: O x I */
  }
}

static void fill(float *v, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = (float)((int)(s >> 9) - (1 << 22)) / (float)(1 << 22);
  }
}

typedef struct {
  hot_ctx *ctx;
  hot_layer *l;
  size_t saved_bytes;
  float *x, *gy, *w;
  float *gx, *gw, *gb; /* separate buffers: the expected bits */
} fixture;

static void setup(fixture *f) {
  memset(f, 0, sizeof *f);
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  ck_assert_int_eq(hot_ctx_create(&f->ctx, &o), HOT_OK);
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  strcpy(s.name, "square");
  s.in_features = N;
  s.out_features = N;
  s.bias = 1;
  ck_assert_int_eq(hot_layer_create(f->ctx, &s, B, L, HOT_RECIPE_HOT, &f->l), HOT_OK);
  f->saved_bytes = hot_layer_saved_bytes(f->l);
  size_t tn = (size_t)T * N;
  f->x = malloc(tn * 4);
  f->gy = malloc(tn * 4);
  f->w = malloc((size_t)N * N * 4);
  f->gx = malloc(tn * 4);
  f->gw = malloc((size_t)N * N * 4);
  f->gb = malloc((size_t)N * 4);
  fill(f->x, tn, 1);
  fill(f->gy, tn, 2);
  fill(f->w, (size_t)N * N, 3);
  void *sv = aligned_alloc(16, (f->saved_bytes + 15) & ~(size_t)15);
  ck_assert_int_eq(hot_layer_save(f->l, f->x, HOT_DT_F32, sv, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_backward(f->l, f->gy, f->w, HOT_DT_F32, sv, f->gx, f->gw, f->gb, 5,
                                      NULL), HOT_OK);
  free(sv);
}

static void teardown(fixture *f) {
  hot_layer_destroy(f->l);
  hot_ctx_destroy(f->ctx);
  free(f->x); free(f->gy); free(f->w); free(f->gx); free(f->gw); free(f->gb);
}

/* Lays out the six arguments in one arena: every argument at its own 64-byte-aligned slot,
 * except `b`, which starts `shift` bytes before the end of `a` (shift > 0: they share `shift`
 * bytes; shift = 0: b follows a directly; shift rounds nothing: saved must stay 16-aligned, so
 * shift is a multiple of 16). Copies the inputs in, calls backward, and returns its status;
 * outputs are copied out to gx/gw/gb when the call succeeds. */
static hot_status run_backward(fixture *f, int a, int b, size_t shift, const char **msg,
                               float *gx, float *gw, float *gb) {
  size_t sz[A_N], off[A_N], total = 0;
  for (int i = 0; i < A_N; ++i) sz[i] = bytes_of(i, f->saved_bytes);
  for (int i = 0; i < A_N; ++i) {
    if (i == b) continue;
    off[i] = total;
    total += (sz[i] + 63) & ~(size_t)63;
    if (i == a) { /* b right behind a, overlapping by shift */
      off[b] = off[i] + sz[i] - shift;
      total = off[b] + ((sz[b] + 63) & ~(size_t)63);
    }
  }
  total = (total + 63) & ~(size_t)63; /* aligned_alloc: a multiple of the alignment */
  unsigned char *arena = aligned_alloc(64, total + 64);
  memset(arena, 0, total + 64);
  void *p[A_N];
  for (int i = 0; i < A_N; ++i) p[i] = arena + off[i];
  /* inputs (the saved buffer from a save of x into a separate buffer, copied in) */
  void *sv = aligned_alloc(16, (f->saved_bytes + 15) & ~(size_t)15);
  ck_assert_int_eq(hot_layer_save(f->l, f->x, HOT_DT_F32, sv, NULL), HOT_OK);
  /* the later argument of an overlapping pair wins the shared bytes; an input that loses bytes
   * to an output would not be what was meant anyway: the call must refuse before reading */
  memcpy(p[A_GY], f->gy, sz[A_GY]);
  memcpy(p[A_W], f->w, sz[A_W]);
  memcpy(p[A_SAVED], sv, sz[A_SAVED]);
  free(sv);
  hot_status st = hot_layer_backward(f->l, p[A_GY], p[A_W], HOT_DT_F32, p[A_SAVED], p[A_GX],
                                     p[A_GW], p[A_GB], 5, NULL);
  *msg = hot_errmsg(f->ctx);
  if (st == HOT_OK) {
    memcpy(gx, p[A_GX], sz[A_GX]);
    memcpy(gw, p[A_GW], sz[A_GW]);
    memcpy(gb, p[A_GB], sz[A_GB]);
  }
  free(arena);
  return st;
}

START_TEST(backward_every_pair) {
  fixture f;
  setup(&f);
  size_t tn = (size_t)T * N;
  float *gx = malloc(tn * 4), *gw = malloc((size_t)N * N * 4), *gb = malloc((size_t)N * 4);
  int refused = 0, ran = 0;
  for (int a = 0; a < A_N; ++a)
    for (int b = 0; b < A_N; ++b) {
      if (a == b || (!writes[a] && !writes[b])) continue;
      const char *msg = NULL;
      /* 16 shared bytes: refused, naming both */
      hot_status st = run_backward(&f, a, b, 16, &msg, gx, gw, gb);
      ck_assert_msg(st == HOT_ERR_INVALID, "%s overlapping %s: status %d (%s)", names[b],
                    names[a], (int)st, msg);
      ck_assert_msg(strstr(msg, names[a]) && strstr(msg, names[b]) && strstr(msg, "overlaps"),
                    "message names neither %s nor %s: %s", names[a], names[b], msg);
      ++refused;
      /* adjacent, no byte shared: runs, same bits as separate buffers */
      st = run_backward(&f, a, b, 0, &msg, gx, gw, gb);
      ck_assert_msg(st == HOT_OK, "%s right after %s: %s", names[b], names[a], msg);
      ck_assert(memcmp(gx, f.gx, tn * 4) == 0);
      ck_assert(memcmp(gw, f.gw, (size_t)N * N * 4) == 0);
      ck_assert(memcmp(gb, f.gb, (size_t)N * 4) == 0);
      ++ran;
    }
  ck_assert_int_eq(refused, 24); /* 30 ordered pairs minus the 6 of two inputs */
  ck_assert_int_eq(ran, 24);
  free(gx); free(gw); free(gb);
  teardown(&f);
}
END_TEST

START_TEST(backward_inputs_may_share) {
  fixture f;
  setup(&f);
  /* g_y and w the same bytes (T x N == N x N here? T = 64 = N): allowed, same bits as two copies */
  ck_assert_int_eq(T, N);
  size_t tn = (size_t)T * N;
  float *gx = malloc(tn * 4), *gw = malloc(tn * 4), *gb = malloc((size_t)N * 4);
  float *gx2 = malloc(tn * 4), *gw2 = malloc(tn * 4), *gb2 = malloc((size_t)N * 4);
  float *both = malloc(tn * 4), *copy = malloc(tn * 4);
  memcpy(both, f.gy, tn * 4);
  memcpy(copy, f.gy, tn * 4);
  void *sv = aligned_alloc(16, (f.saved_bytes + 15) & ~(size_t)15);
  ck_assert_int_eq(hot_layer_save(f.l, f.x, HOT_DT_F32, sv, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_backward(f.l, both, both, HOT_DT_F32, sv, gx, gw, gb, 6, NULL),
                   HOT_OK);
  ck_assert_int_eq(hot_layer_backward(f.l, both, copy, HOT_DT_F32, sv, gx2, gw2, gb2, 6, NULL),
                   HOT_OK);
  ck_assert(memcmp(gx, gx2, tn * 4) == 0 && memcmp(gw, gw2, tn * 4) == 0 &&
            memcmp(gb, gb2, (size_t)N * 4) == 0);
  free(sv); free(gx); free(gw); free(gb); free(gx2); free(gw2); free(gb2); free(both); free(copy);
  teardown(&f);
}
END_TEST

START_TEST(save_x_and_saved) {
  fixture f;
  setup(&f);
  size_t xb = (size_t)T * N * 4, sb = (f.saved_bytes + 15) & ~(size_t)15;
  unsigned char *arena = aligned_alloc(64, ((xb + sb + 127) / 64) * 64);
  /* saved starts 16 bytes before the end of x, and x starts 16 bytes before the end of saved */
  float *x = (float *)arena;
  memcpy(x, f.x, xb);
  ck_assert_int_eq(hot_layer_save(f.l, x, HOT_DT_F32, arena + xb - 16, NULL), HOT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(f.ctx), "overlaps"));
  ck_assert_int_eq(hot_layer_save(f.l, arena + sb - 16, HOT_DT_F32, arena, NULL),
                   HOT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(f.ctx), "x ("));
  /* adjacent: fine */
  ck_assert_int_eq(hot_layer_save(f.l, x, HOT_DT_F32, arena + xb, NULL), HOT_OK);
  free(arena);
  teardown(&f);
}
END_TEST

int main(void) {
  au_suite_env("/nonexistent/libcuda.so.1");
  Suite *s = suite_create("runtime_api_overlap");
  TCase *tc = tcase_create("overlap");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, backward_every_pair);
  tcase_add_test(tc, backward_inputs_may_share);
  tcase_add_test(tc, save_x_and_saved);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

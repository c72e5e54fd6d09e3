/* test_api_cpu.c — the public API (hot.h) without a GPU: backend choice and fallback, the CPU
 * backend bit for bit against the reference twins at awkward sizes, specs, options and the
 * environment, the JIT through an injected compiler, and misuse.
 *
 * main() points HOT_CUDA_DRIVER at a missing library before anything runs, so the suite behaves
 * the same on a GPU machine ("no CUDA driver" is what it tests). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dlfcn.h>
#include <stddef.h>
#include <sys/stat.h>

#include "api_util.h"
#include "embed.h"
#include "backend.h"
#include "emit.h"
#include "hot_internal.h"
#include "launch.h"
#include "pack.h"
#include "rt_util.h"

/* ---- backend choice ---------------------------------------------------------------------- */

START_TEST(cuda_without_driver) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CUDA;
  hot_ctx *ctx = NULL;
  hot_status st = hot_ctx_create(&ctx, &o);
  ck_assert_int_eq(st, HOT_ERR_NO_DRIVER);
  ck_assert_ptr_nonnull(ctx); /* a failed context, for the message */
  ck_assert_msg(strstr(hot_errmsg(ctx), "no CUDA driver"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_ctx_backend(ctx), HOT_BACKEND_DEFAULT);
  hot_layer *l = NULL;
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = s.out_features = 16;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 16, HOT_RECIPE_HOT, &l), HOT_ERR_MISUSE);
  ck_assert_ptr_null(l);
  hot_stats stats;
  ck_assert_int_eq(hot_ctx_stats(ctx, &stats), HOT_OK);
  ck_assert_msg(strstr(stats.fallback_reason, "no CUDA driver"), "%s", stats.fallback_reason);
  hot_ctx_destroy(ctx);
  /* the same through the environment */
  setenv("HOT_BACKEND", "cuda", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_ERR_NO_DRIVER);
  hot_ctx_destroy(ctx);
}
END_TEST

START_TEST(auto_falls_back_to_cpu) {
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  ck_assert_int_eq(hot_ctx_backend(ctx), HOT_BACKEND_CPU);
  ck_assert_str_eq(hot_errmsg(ctx), "");
  hot_stats s;
  ck_assert_int_eq(hot_ctx_stats(ctx, &s), HOT_OK);
  ck_assert_int_eq(s.backend, HOT_BACKEND_CPU);
  ck_assert_int_eq(s.fell_back, 1);
  ck_assert_msg(strstr(s.fallback_reason, "no CUDA driver"), "%s", s.fallback_reason);
  ck_assert_str_eq(s.arch, "");
  hot_ctx_destroy(ctx);
  /* an explicit cpu backend is not a fallback */
  setenv("HOT_BACKEND", "cpu", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  ck_assert_int_eq(hot_ctx_stats(ctx, &s), HOT_OK);
  ck_assert_int_eq(s.fell_back, 0);
  ck_assert_str_eq(s.fallback_reason, "");
  hot_ctx_destroy(ctx);
  hot_ctx_destroy(NULL); /* NULL-safe */
}
END_TEST

/* ---- bit for bit against the reference ----------------------------------------------------- */

/* Runs save + backward through the API and through the twins (same plan, seed, granularity)
 * and compares every output byte. own: let the layer own the saved buffer. */
static void compare_layer(hot_ctx *ctx, hot_layer *l, const au_io *io_in, int own, uint32_t step,
                          int with_bias) {
  au_io *io = (au_io *)io_in;
  const hot_layer_plan *pl = hot_layer_get_plan(l);
  ck_assert_ptr_nonnull(pl);
  hot_layer_info info;
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  const void *x = io->x, *w = io->w, *gy = io->gy;
  uint16_t *hx = NULL, *hw = NULL, *hgy = NULL;
  if (info.dtype == HOT_DT_BF16) {
    hx = malloc((size_t)(io->T * io->I) * 2);
    hw = malloc((size_t)(io->O * io->I) * 2);
    hgy = malloc((size_t)(io->T * io->O) * 2);
    au_to_bf16(io->x, hx, io->T * io->I);
    au_to_bf16(io->w, hw, io->O * io->I);
    au_to_bf16(io->gy, hgy, io->T * io->O);
    x = hx;
    w = hw;
    gy = hgy;
  }
  size_t nb = hot_layer_saved_bytes(l);
  ck_assert_uint_gt(nb, 0);
  void *buf = own ? NULL : aligned_alloc(64, (nb + 63) & ~(size_t)63);
  ck_assert_int_eq(hot_layer_save(l, x, info.dtype, buf, NULL), HOT_OK);
  float *gb = with_bias ? io->gb : NULL;
  hot_status st = hot_layer_backward(l, gy, w, info.dtype, buf, io->gx, io->gw, gb, step, NULL);
  ck_assert_msg(st == HOT_OK, "%s: %s", hot_status_name(st), hot_errmsg(ctx));

  hot_ref_saved rs;
  ck_assert_int_eq(ref_layer_save(pl, x, info.dtype, &rs), HOT_REF_OK);
  ck_assert_int_eq((int64_t)nb, rs.bytes);
  if (buf) { /* the caller's buffer holds exactly the twin's saved state */
    if (rs.q_x && pl->fmt == HOT_FMT_NVFP4) { /* MXFP8 codes and E8M0 scales, nothing more */
      ck_assert_int_eq((int64_t)nb, plan_buffer_bytes(pl, HOT_BUF_SAVED_CODES));
      ck_assert_int_eq(memcmp(buf, rs.q_x, nb), 0);
    } else if (rs.q_x) { /* the codes, zeros up to 16-byte alignment, one scale per scale group */
      const size_t ns = 4 * (size_t)pl->hla.groups;
      const size_t nc = (size_t)(pl->I * pl->hla.k), off = (size_t)plan_saved_scale_offset(pl);
      ck_assert_uint_eq(off, (nc + 15) / 16 * 16);
      ck_assert_uint_eq(nb, off + ns);
      ck_assert_int_eq(memcmp(buf, rs.q_x, nc), 0);
      for (size_t i = nc; i < off; ++i) ck_assert_int_eq(((const unsigned char *)buf)[i], 0);
      ck_assert_int_eq(memcmp((char *)buf + off, rs.s_x, ns), 0);
    } else {
      ck_assert_int_eq(memcmp(buf, rs.x, nb), 0);
    }
  }
  ck_assert_int_eq(ref_layer_backward(pl, &rs, gy, w, info.dtype, info.gran, info.seed, step,
                                          io->rgx, io->rgw, with_bias ? io->rgb : NULL),
                   HOT_REF_OK);
  ck_assert_int_eq(memcmp(io->gx, io->rgx, (size_t)(io->T * io->I) * 4), 0);
  ck_assert_int_eq(memcmp(io->gw, io->rgw, (size_t)(io->O * io->I) * 4), 0);
  if (with_bias) ck_assert_int_eq(memcmp(io->gb, io->rgb, (size_t)io->O * 4), 0);
  /* sanity: not all zero */
  double sx = 0, sw = 0;
  for (int64_t i = 0; i < io->T * io->I; ++i) sx += fabs(io->gx[i]);
  for (int64_t i = 0; i < io->O * io->I; ++i) sw += fabs(io->gw[i]);
  ck_assert(sx > 0 && sw > 0);
  ref_saved_free(&rs);
  free(buf);
  free(hx);
  free(hw);
  free(hgy);
}

START_TEST(cpu_equals_reference) {
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK); /* auto -> CPU */
  au_io io;
  au_io_init(&io, 3 * 197, 100, 137, 42);
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "awkward", 137, 100);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 3, 197, HOT_RECIPE_HOT, &l), HOT_OK);
  hot_layer_info info;
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq(info.T, 591);
  ck_assert_int_eq(info.gran_auto, 1);
  /* auto before calibration = LQS's coarse candidate: per sample (B = 3) */
  ck_assert_int_eq(info.gran, HOT_GRAN_SAMPLE);
  ck_assert_int_eq(info.layer_id, 0);
  ck_assert_uint_eq(info.seed, HOT_DEFAULT_SEED);
  compare_layer(ctx, l, &io, 0, 7, 1); /* caller's buffer */
  compare_layer(ctx, l, &io, 1, 8, 1); /* layer's buffer */
  compare_layer(ctx, l, &io, 1, 9, 0); /* no g_b */

  /* calibrate: the LQS choice is used by the next backward */
  ck_assert_int_eq(hot_layer_calibrate(l, io.gy, HOT_DT_F32, 3, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq(info.calibrated, 1);
  hot_ref_lqs_result r;
  ck_assert_int_eq(ref_layer_calibrate(hot_layer_get_plan(l), io.gy, HOT_DT_F32, info.seed, 3, &r),
                   HOT_REF_OK);
  ck_assert_int_eq(info.gran, r.choice);
  ck_assert(info.lqs_e_tensor == r.e_tensor && info.lqs_e_token == r.e_token);
  compare_layer(ctx, l, &io, 0, 10, 1);

  /* token outliers: LQS picks per token, and the backward follows */
  for (int64_t t = 0; t < io.T; t += 37)
    for (int64_t o = 0; o < io.O; ++o) io.gy[t * io.O + o] *= 20.0f;
  ck_assert_int_eq(hot_layer_calibrate(l, io.gy, HOT_DT_F32, 4, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq(info.gran, HOT_GRAN_ROW);
  compare_layer(ctx, l, &io, 1, 11, 1);

  hot_stats st;
  ck_assert_int_eq(hot_ctx_stats(ctx, &st), HOT_OK);
  ck_assert_uint_eq(st.saves, 5);
  ck_assert_uint_eq(st.backwards, 5);
  ck_assert_uint_eq(st.calibrations, 2);
  ck_assert_uint_eq(st.layers, 1);
  ck_assert_int_eq(st.saved_bytes, (int64_t)hot_layer_saved_bytes(l));
  ck_assert_int_eq(st.saved_fp32_bytes, 591 * 137 * 4);
  ck_assert(st.saved_bytes * 4 < st.saved_fp32_bytes); /* ABC: well under fp32 */
  ck_assert_int_eq(st.workspace_bytes, 0);             /* no device workspace on the CPU */
  ck_assert_uint_eq(st.compiles, 0);
  hot_layer_destroy(l);
  au_io_free(&io);
  hot_ctx_destroy(ctx);
}
END_TEST

START_TEST(cpu_equals_reference_variants) {
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  au_io io;
  au_io_init(&io, 2 * 61, 33, 45, 7);
  hot_layer_spec s;
  /* bf16, per-token g', sm_80 storage (packed int4) */
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 45;
  s.out_features = 33;
  s.dtype = HOT_DT_BF16;
  s.hq.g.gran = HOT_GRAN_ROW;
  hot_layer *a = NULL, *b = NULL, *c = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 61, HOT_RECIPE_HOT, &a), HOT_OK);
  compare_layer(ctx, a, &io, 0, 1, 1);
  /* paper_code: SAWB scales, p from L, b shrinking */
  plan_spec_defaults(&s, HOT_RECIPE_PAPER_CODE);
  s.in_features = 45;
  s.out_features = 33;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_PAPER_CODE, &b), HOT_OK);
  au_io io2;
  au_io_init(&io2, 2 * 64, 33, 45, 8);
  compare_layer(ctx, b, &io2, 1, 2, 1);
  /* no ABC: the saved buffer is x in fp32 */
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 45;
  s.out_features = 33;
  s.abc.enabled = 0;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 61, HOT_RECIPE_HOT, &c), HOT_OK);
  ck_assert_uint_eq(hot_layer_saved_bytes(c), 2 * 61 * 45 * 4);
  compare_layer(ctx, c, &io, 0, 3, 1);
  hot_layer_info ia, ib, ic;
  hot_layer_get_info(a, &ia);
  hot_layer_get_info(b, &ib);
  hot_layer_get_info(c, &ic);
  ck_assert_int_eq(ia.layer_id, 0);
  ck_assert_int_eq(ib.layer_id, 1);
  ck_assert_int_eq(ic.layer_id, 2);
  au_io_free(&io);
  au_io_free(&io2);
  hot_ctx_destroy(ctx); /* destroys a, b, c */
}
END_TEST

/* Recipe nvfp4 (CONTRACT.md 20) through the C API on the CPU backend: the twins' bits, the
 * caller's and the layer's saved buffer, bf16, no ABC; no calibration (its scales are fixed); a
 * context forced to a GPU arch without its kernels refuses it in one line naming the arch and the
 * recipe; one forced to sm_120a runs its GPU plan with the CPU plan's bits. */
START_TEST(cpu_nvfp4_equals_reference) {
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  au_io io;
  au_io_init(&io, 2 * 70, 40, 45, 17);
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT); /* the recipe merge turns it into nvfp4's */
  s.in_features = 45;
  s.out_features = 40;
  hot_layer *a = NULL, *b = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 70, HOT_RECIPE_NVFP4, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_get_plan(a)->fmt, HOT_FMT_NVFP4);
  compare_layer(ctx, a, &io, 0, 1, 1);
  compare_layer(ctx, a, &io, 1, 2, 1);
  compare_layer(ctx, a, &io, 1, 3, 0);
  ck_assert_int_eq(hot_layer_calibrate(a, io.gy, HOT_DT_F32, 3, NULL), HOT_ERR_MISUSE);
  s.abc.enabled = 0;
  s.dtype = HOT_DT_BF16;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 70, HOT_RECIPE_NVFP4, &b), HOT_OK);
  ck_assert_uint_eq(hot_layer_saved_bytes(b), 2 * 70 * 45 * 4);
  compare_layer(ctx, b, &io, 0, 4, 1);
  hot_ctx_destroy(ctx);

  /* a spec of recipe nvfp4 (hot.recipe.nvfp4) on the CPU backend; a field it fixes, refused */
  char dir[256], path[300];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  for (int bad = 0; bad < 2; ++bad) {
    snprintf(path, sizeof path, "%s/nv%d.lua", dir, bad);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "local hot = require \"hot\"\nreturn hot.model { name = \"nv\", batch = 2, "
               "tokens = 70, recipe = hot.recipe.nvfp4, layers = { hot.linear { name = \"fc\", "
               "in_features = 45, out_features = 40%s } } }\n",
            bad ? ", hq = hot.hq { block = 32 }" : "");
    fclose(f);
    ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
    hot_status st = hot_layer_from_spec(ctx, path, "fc", 0, &a);
    if (bad) {
      ck_assert_int_eq(st, HOT_ERR_PLAN);
      ck_assert_msg(strstr(hot_errmsg(ctx), "recipe nvfp4 needs hq.block = 16"), "%s",
                    hot_errmsg(ctx));
      printf("spec with hq.block 32: %s\n", hot_errmsg(ctx));
    } else {
      ck_assert_msg(st == HOT_OK, "%s", hot_errmsg(ctx));
      ck_assert_int_eq(hot_layer_get_plan(a)->fmt, HOT_FMT_NVFP4);
      compare_layer(ctx, a, &io, 0, 5, 1);
    }
    hot_ctx_destroy(ctx);
  }
  rm_tree(dir);

  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  o.arch = "sm_90";
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 70, HOT_RECIPE_NVFP4, &a), HOT_ERR_PLAN);
  const char *m = hot_errmsg(ctx);
  ck_assert_msg(strstr(m, "recipe nvfp4") && strstr(m, "sm_90") && !strchr(m, '\n'), "%s", m);
  printf("forced sm_90: %s\n", m);
  hot_ctx_destroy(ctx);
  au_io_free(&io);

  /* forced sm_120a: the GPU plan of the recipe (the families hq_nvfp4, hla_mxfp8, gemm_nvfp4,
   * gemm_mxfp8, whose steps run the hq, hla and gemm step functions) gives on the CPU backend the
   * twin's bits and the bits of the CPU backend's own plan (the same buffer layouts) */
  au_io_init(&io, 2 * 70, 50, 45, 19);
  s.abc.enabled = 1;
  s.dtype = HOT_DT_F32;
  s.out_features = 50;
  const size_t ngx = (size_t)(io.T * io.I) * 4, ngw = (size_t)(io.O * io.I) * 4;
  float *gx = malloc(ngx), *gw = malloc(ngw);
  ck_assert(gx && gw);
  for (int forced = 0; forced < 2; ++forced) {
    o.arch = forced ? "sm_120a" : NULL;
    ck_assert_int_eq(hot_ctx_create(&ctx, forced ? &o : NULL), HOT_OK);
    ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 70, HOT_RECIPE_NVFP4, &a), HOT_OK);
    const hot_layer_plan *pl = hot_layer_get_plan(a);
    ck_assert_int_eq(pl->hq.gemm.path, forced ? HOT_GEMM_MMA_NVFP4 : HOT_GEMM_BS_NVFP4);
    ck_assert_int_eq(pl->hla.gemm.path, forced ? HOT_GEMM_MMA_MXFP8 : HOT_GEMM_BS_MXFP8);
    ck_assert_str_eq(pl->kernels[1].name, forced ? "hot_hq_nvfp4_g_sr" : "hot_hq_g_f32_b16_k4_nvfp4");
    compare_layer(ctx, a, &io, 0, 6, 1);
    if (!forced) {
      memcpy(gx, io.gx, ngx);
      memcpy(gw, io.gw, ngw);
    } else {
      ck_assert_int_eq(memcmp(gx, io.gx, ngx), 0);
      ck_assert_int_eq(memcmp(gw, io.gw, ngw), 0);
      printf("forced sm_120a: %s ... %s: g_x and g_w equal the CPU plan's bits\n",
             pl->kernels[0].name, pl->kernels[5].name);
    }
    hot_ctx_destroy(ctx);
  }
  free(gx);
  free(gw);
  au_io_free(&io);
}
END_TEST

/* ---- specs, options, environment --------------------------------------------------------- */

START_TEST(layer_from_spec) {
  char dir[256], path[300];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  au_write_spec(dir, path, sizeof path);
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  hot_layer *fc = NULL, *proj = NULL;
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "fc", 0, &fc), HOT_OK);
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "proj", 2, &proj), HOT_OK);
  hot_layer_info i;
  ck_assert_int_eq(hot_layer_get_info(fc, &i), HOT_OK);
  ck_assert_str_eq(i.name, "fc");
  ck_assert_int_eq(i.T, 3 * 197);
  ck_assert_int_eq(i.O, 100);
  ck_assert_int_eq(i.I, 137);
  ck_assert_int_eq(i.layer_id, 0);
  ck_assert_uint_eq(i.seed, 12345); /* the spec's */
  ck_assert_int_eq(hot_layer_get_info(proj, &i), HOT_OK);
  ck_assert_int_eq(i.T, 2 * 197); /* batch override */
  ck_assert_int_eq(i.layer_id, 1);
  ck_assert_int_eq(i.gran, HOT_GRAN_ROW);
  ck_assert_int_eq(i.bias, 0);
  au_io io;
  au_io_init(&io, 3 * 197, 100, 137, 99);
  compare_layer(ctx, fc, &io, 0, 5, 1);
  au_io_free(&io);
  hot_ctx_destroy(ctx);

  /* HOT_SEED overrides the spec's seed; an option overrides HOT_SEED */
  setenv("HOT_SEED", "0x10", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "fc", 0, &fc), HOT_OK);
  hot_layer_get_info(fc, &i);
  ck_assert_uint_eq(i.seed, 16);
  hot_ctx_destroy(ctx);
  hot_options o;
  hot_options_init(&o);
  o.seed_set = 1;
  o.seed = 77;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "fc", 0, &fc), HOT_OK);
  hot_layer_get_info(fc, &i);
  ck_assert_uint_eq(i.seed, 77);
  hot_ctx_destroy(ctx);
  rm_tree(dir);
}
END_TEST

START_TEST(bad_options_and_environment) {
  hot_ctx *ctx = NULL;
  setenv("HOT_BACKEND", "gpu", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "HOT_BACKEND='gpu'"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU; /* code wins over the environment */
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_ctx_destroy(ctx);
  unsetenv("HOT_BACKEND");
  setenv("HOT_ARCH", "sm_70", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "HOT_ARCH 'sm_70'"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  setenv("HOT_ARCH", "sm_90a", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  hot_stats s;
  hot_ctx_stats(ctx, &s);
  ck_assert_str_eq(s.arch, "sm_90a");
  hot_ctx_destroy(ctx);
  unsetenv("HOT_ARCH");
  setenv("HOT_SEED", "-3", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "HOT_SEED"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  unsetenv("HOT_SEED");
  setenv("HOT_DEVICE", "one", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_ERR_INVALID);
  hot_ctx_destroy(ctx);
  unsetenv("HOT_DEVICE");
  o.backend = (hot_backend)9;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_ERR_INVALID);
  hot_ctx_destroy(ctx);
  o.backend = HOT_BACKEND_CPU;
  o.device = -5; /* -1 (the environment's, else 0) or an index */
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "options.device = -5"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  o.device = -1;
  o.seed_set = 7; /* 0 or 1 */
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "options.seed_set = 7"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  o.seed_set = 0;
  ck_assert_int_eq(hot_ctx_create(NULL, NULL), HOT_ERR_INVALID);
  /* every variable strictly: a bad value is refused, naming it (these were ignored) */
  const struct { const char *var, *val; } bad[] = {
      {"HOT_CACHE_MAX_MB", "-1"}, {"HOT_CACHE_MAX_MB", "abc"},
      {"HOT_CACHE_MAX_MB", "17592186044416"}, {"HOT_JIT_THREADS", "0"},
      {"HOT_JIT_THREADS", "abc"}, {"HOT_CUDA_HOME", "/nonexistent-toolkit-folder"},
      {"HOT_NO_DISK_CACHE", "maybe"}, {"HOT_JIT_DEBUG", "yes please"},
      {"HOT_DEVICE", "-1"}, {"HOT_SEED", "12abc"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    const char *old = getenv(bad[i].var);
    char keep[600] = "";
    if (old) snprintf(keep, sizeof keep, "%s", old);
    setenv(bad[i].var, bad[i].val, 1);
    ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_ERR_INVALID);
    ck_assert_msg(strstr(hot_errmsg(ctx), bad[i].var) && strstr(hot_errmsg(ctx), bad[i].val),
                  "%s=%s: %s", bad[i].var, bad[i].val, hot_errmsg(ctx));
    hot_ctx_destroy(ctx);
    if (old) setenv(bad[i].var, keep, 1);
    else unsetenv(bad[i].var);
  }
}
END_TEST

/* The environment is read once, by hot_ctx_create: changing it later does not reach the
 * context's cache or JIT (they were read again at first use). */
START_TEST(environment_read_once) {
  char a[256], b[256];
  ck_assert_ptr_nonnull(tmp_dir(a));
  ck_assert_ptr_nonnull(tmp_dir(b));
  fake_cc f = {0, 0, 0, "fake-1", 0};
  hot_compiler cc = FAKE_COMPILER(f);
  setenv("HOT_CACHE_DIR", a, 1);
  setenv("HOT_ARCH", "sm_80", 1);
  setenv("HOT_JIT_THREADS", "2", 1);
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, NULL, &cc), HOT_OK);
  setenv("HOT_CACHE_DIR", b, 1);        /* too late */
  setenv("HOT_JIT_THREADS", "abc", 1);  /* too late, and would be refused */
  setenv("HOT_CACHE_MAX_MB", "abc", 1); /* likewise */
  setenv("HOT_NO_DISK_CACHE", "1", 1);
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 32;
  s.out_features = 16;
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_OK);
  ck_assert_msg(hot_layer_compile(l) == HOT_OK, "%s", hot_errmsg(ctx));
  hot_stats st;
  hot_ctx_stats(ctx, &st);
  ck_assert_str_eq(st.cache_dir, a);
  ck_assert_uint_gt(st.compiles, 0);
  hot_ctx_destroy(ctx);
  unsetenv("HOT_CACHE_DIR");
  unsetenv("HOT_ARCH");
  unsetenv("HOT_JIT_THREADS");
  unsetenv("HOT_CACHE_MAX_MB");
  unsetenv("HOT_NO_DISK_CACHE");
  /* an unusable HOT_CACHE_DIR is named as the cause */
  char file[300];
  snprintf(file, sizeof file, "%s/plain", a);
  fclose(fopen(file, "w"));
  char below[400];
  snprintf(below, sizeof below, "%s/sub", file);
  setenv("HOT_CACHE_DIR", below, 1);
  hot_options o;
  hot_options_init(&o);
  o.arch = "sm_80";
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_OK);
  ck_assert_int_eq(hot_layer_compile(l), HOT_ERR_IO);
  ck_assert_msg(strstr(hot_errmsg(ctx), "from HOT_CACHE_DIR"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  unsetenv("HOT_CACHE_DIR");
  rm_tree(a);
  rm_tree(b);
}
END_TEST

/* ---- JIT through an injected compiler ------------------------------------------------------ */


/* Every enum (and 0/1 flag) of a layer description is checked at creation, naming the field,
 * instead of failing later inside a backend; hot_layer_create honours its recipe. */
START_TEST(layer_create_enums_and_recipe) {
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  hot_layer_spec s;
  hot_layer *l = NULL;
  struct { const char *field; size_t off; int bad; } e[] = {
      {"spec.dtype", offsetof(hot_layer_spec, dtype), 3},
      {"spec.hq.g.round", offsetof(hot_layer_spec, hq.g.round), 2},
      {"spec.hq.g.gran", offsetof(hot_layer_spec, hq.g.gran), 4}, /* 3 = SAMPLE */
      {"spec.hq.g.rule", offsetof(hot_layer_spec, hq.g.rule), -1},
      {"spec.hq.w.round", offsetof(hot_layer_spec, hq.w.round), 9},
      {"spec.hq.w.gran", offsetof(hot_layer_spec, hq.w.gran), 4},
      {"spec.hq.w.rule", offsetof(hot_layer_spec, hq.w.rule), 2},
      {"spec.hla.selection", offsetof(hot_layer_spec, hla.selection), 3},
      {"spec.hla.layout", offsetof(hot_layer_spec, hla.layout), 3},
      {"spec.hla.g.round", offsetof(hot_layer_spec, hla.g.round), 2},
      {"spec.hla.g.gran", offsetof(hot_layer_spec, hla.g.gran), 7},
      {"spec.hla.g.rule", offsetof(hot_layer_spec, hla.g.rule), 5},
      {"spec.hla.x.round", offsetof(hot_layer_spec, hla.x.round), 2},
      {"spec.hla.x.gran", offsetof(hot_layer_spec, hla.x.gran), 4}, /* 3 = SAMPLE */
      {"spec.hla.x.rule", offsetof(hot_layer_spec, hla.x.rule), 2},
      {"spec.bias", offsetof(hot_layer_spec, bias), 2},
      {"spec.hq.enabled", offsetof(hot_layer_spec, hq.enabled), -1},
      {"spec.abc.enabled", offsetof(hot_layer_spec, abc.enabled), 5},
  };
  for (size_t i = 0; i < sizeof e / sizeof *e; ++i) {
    au_spec(&s, HOT_RECIPE_HOT, "en", 32, 16);
    int v = e[i].bad;
    memcpy((char *)&s + e[i].off, &v, sizeof v); /* every enum and flag is int-sized */
    ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_ERR_INVALID);
    ck_assert_msg(strstr(hot_errmsg(ctx), e[i].field), "%s: %s", e[i].field, hot_errmsg(ctx));
    ck_assert_ptr_null(l);
  }
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 32;
  s.out_features = 16;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, (hot_recipe)4, &l), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "recipe = 4"), "%s", hot_errmsg(ctx));

  /* the recipe: project defaults + R plan like R's defaults + R, for every R */
  for (int r = HOT_RECIPE_HOT; r <= HOT_RECIPE_NVFP4; ++r) {
    hot_layer_spec hs, rs;
    plan_spec_defaults(&hs, HOT_RECIPE_HOT);
    plan_spec_defaults(&rs, (hot_recipe)r);
    hs.in_features = rs.in_features = 48;
    hs.out_features = rs.out_features = 24;
    hot_layer *a = NULL, *b = NULL;
    ck_assert_int_eq(hot_layer_create(ctx, &hs, 2, 40, (hot_recipe)r, &a), HOT_OK);
    ck_assert_int_eq(hot_layer_create(ctx, &rs, 2, 40, (hot_recipe)r, &b), HOT_OK);
    const hot_layer_plan *pa = hot_layer_get_plan(a), *pb = hot_layer_get_plan(b);
    ck_assert_int_eq(pa->hq.w.rule, pb->hq.w.rule);
    ck_assert_int_eq(pa->hla.x.rule, pb->hla.x.rule);
    ck_assert_int_eq(pa->hla.block, pb->hla.block);
    ck_assert_int_eq(pa->hq.block, pb->hq.block);
    ck_assert_int_eq(pa->hla.layout, pb->hla.layout);
    ck_assert_int_eq((int)hot_layer_saved_bytes(a), (int)hot_layer_saved_bytes(b));
    if (r == HOT_RECIPE_PAPER_CODE) { /* what the recipe changes did change */
      ck_assert_int_eq(pa->hq.w.rule, HOT_RULE_SAWB);
      ck_assert_int_eq(pa->hla.x.rule, HOT_RULE_SAWB);
      ck_assert_int_eq(pa->hla.block, 8); /* largest power of two dividing L = 40, no padding */
      ck_assert_int_eq(pa->hla.g.bits, 4); /* g^ with the g_x bit width, as the authors' code */
    }
    if (r == HOT_RECIPE_NVFP4) { /* the block formats, one tensor scale for g' */
      ck_assert_int_eq(pa->fmt, HOT_FMT_NVFP4);
      ck_assert_int_eq(pa->hq.g.gran, HOT_GRAN_TENSOR);
      ck_assert_int_eq(pa->hla.gemm.codes, HOT_CODES_MXFP8);
    }
    hot_layer_destroy(a);
    hot_layer_destroy(b);
  }
  /* a field the caller set is kept: RTN/absmax w' with paper_code stays absmax */
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 48;
  s.out_features = 24;
  s.hla.block = 4; /* explicit p */
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 40, HOT_RECIPE_PAPER_CODE, &l), HOT_OK);
  ck_assert_int_eq(hot_layer_get_plan(l)->hla.block, 4);
  hot_ctx_destroy(ctx);
}
END_TEST


/* Finite inputs near FLT_MAX: never HOT_OK with an Inf/NaN output. Each case either completes
 * with every output finite, or is refused (save: HOT_ERR_NONFINITE when a transform of the input
 * overflows; backward: HOT_ERR_RANGE). x = 3e38 gave g_w = -inf with HOT_OK. */
START_TEST(huge_finite_inputs) {
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "huge", 32, 16);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 32, HOT_RECIPE_HOT, &l), HOT_OK);
  enum { T = 64, I = 32, O = 16 };
  static float x[T * I], w[O * I], gy[T * O], gx[T * I], gw[O * I], gb[O];
  const float huge[] = {3e38f, -3e38f, 1e38f, 2e37f};
  int refused = 0;
  for (int which = 0; which < 5; ++which)
    for (size_t h = 0; h < sizeof huge / sizeof *huge; ++h) {
      au_fill(11, x, T * I);
      au_fill(12, w, O * I);
      au_fill(13, gy, T * O);
      float *v = which == 0 || which == 3 ? x : which == 1 ? w : gy;
      int64_t n = which == 0 ? T * I : which == 1 ? O * I : T * O;
      if (which >= 3) { /* one huge element among ordinary ones (x; then g_y too) */
        x[5] = huge[h];
        if (which == 4) gy[7] = huge[h];
      } else {
        for (int64_t i = 0; i < n; ++i) v[i] = (i % 3 == 0) ? huge[h] : huge[h] * (v[i] / 4.0f);
      }
      hot_status st = hot_layer_save(l, x, HOT_DT_F32, NULL, NULL);
      if (st == HOT_OK) st = hot_layer_backward(l, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 1, NULL);
      if (st == HOT_OK) {
        for (int i = 0; i < T * I; ++i) ck_assert_msg(isfinite(gx[i]), "g_x[%d] = %g", i, gx[i]);
        for (int i = 0; i < O * I; ++i) ck_assert_msg(isfinite(gw[i]), "g_w[%d] = %g", i, gw[i]);
        for (int i = 0; i < O; ++i) ck_assert_msg(isfinite(gb[i]), "g_b[%d] = %g", i, gb[i]);
      } else {
        ck_assert_msg(st == HOT_ERR_RANGE || st == HOT_ERR_NONFINITE, "%s: %s",
                      hot_status_name(st), hot_errmsg(ctx));
        refused++;
      }
    }
  ck_assert_int_gt(refused, 0); /* x = 3e38 does overflow fp32 somewhere */
  ck_assert_str_eq(hot_status_name(HOT_ERR_RANGE), "HOT_ERR_RANGE");
  hot_ctx_destroy(ctx);
}
END_TEST

/* A compiler that takes 40 ms and records how many of its calls ran at once. */
static int slow_inflight, slow_max, slow_calls;
static rt_status slow_compile(void *user, const hot_kernel_source *src, hot_compile_result *out,
                              char *err, size_t errlen) {
  int now = __atomic_add_fetch(&slow_inflight, 1, __ATOMIC_SEQ_CST);
  int seen = __atomic_load_n(&slow_max, __ATOMIC_SEQ_CST);
  while (now > seen && !__atomic_compare_exchange_n(&slow_max, &seen, now, 0, __ATOMIC_SEQ_CST,
                                                    __ATOMIC_SEQ_CST)) {
  }
  usleep(40000);
  __atomic_add_fetch(&slow_calls, 1, __ATOMIC_SEQ_CST);
  rt_status st = fake_compile(user, src, out, err, errlen);
  __atomic_sub_fetch(&slow_inflight, 1, __ATOMIC_SEQ_CST);
  return st;
}

/* hot_ctx_compile compiles the distinct kernels of ALL its layers in one pool: with enough
 * threads, more compiles run at once than any one layer has kernels (layer by layer, the pool
 * of a layer never exceeds its own kernels). */
START_TEST(ctx_compile_one_pool) {
  fake_cc f = {0, 0, 0, "fake-1", 0};
  hot_compiler cc = {&f, fake_version, "fake-options", slow_compile};
  slow_inflight = slow_max = slow_calls = 0;
  setenv("HOT_JIT_THREADS", "64", 1);
  hot_options o;
  hot_options_init(&o);
  o.disk_cache = -1;
  o.arch = "sm_90";
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  unsetenv("HOT_JIT_THREADS");
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 64;
  s.out_features = 32;
  hot_layer *l[2] = {NULL, NULL};
  snprintf(s.name, sizeof s.name, "a");
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &l[0]), HOT_OK);
  snprintf(s.name, sizeof s.name, "b");
  s.dtype = HOT_DT_F16; /* other kernels (their names carry the dtype) */
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &l[1]), HOT_OK);
  unsigned n0 = au_programs(l[0]), n1 = au_programs(l[1]);
  ck_assert_int_eq(hot_ctx_compile(ctx, l, 2), HOT_OK);
  ck_assert_int_eq(slow_calls, f.compiles);
  ck_assert_int_le(f.compiles, (int)(n0 + n1));
  ck_assert_int_gt(f.compiles, (int)(n0 > n1 ? n0 : n1));
  ck_assert_msg(slow_max > (int)(n0 > n1 ? n0 : n1), "at most %d compiles at once (layers: %u, %u)",
                slow_max, n0, n1);
  hot_stats st;
  hot_ctx_stats(ctx, &st);
  ck_assert_uint_eq(st.compiles, (uint64_t)f.compiles);
  hot_layer_info i;
  for (int k = 0; k < 2; ++k) {
    hot_layer_get_info(l[k], &i);
    ck_assert_int_eq(i.compiled, 1);
  }
  hot_ctx_destroy(ctx);
}
END_TEST

/* Kernel packs through the API: a pack written from one context's kernels makes another
 * context compile nothing (hot_ctx_load_pack, HOT_KERNEL_PACK); a pack of another compiler
 * version is a miss; a missing or corrupt pack is an error naming the file. */
START_TEST(kernel_pack_api) {
  char dir[256], path[400], bad[400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/m.hotpack", dir);
  snprintf(bad, sizeof bad, "%s/bad.hotpack", dir);
  fake_cc f = {0, 0, 0, "fake-1", 0};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_options o;
  hot_options_init(&o);
  o.disk_cache = -1;
  o.arch = "sm_90";
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "fc", 64, 32);
  hot_ctx *ctx = NULL;
  hot_layer *a = NULL;
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_compile(a), HOT_OK);
  int compiled = f.compiles;
  ck_assert_int_gt(compiled, 0);
  hot_pack_entry e[HOT_MAX_KERNELS];
  size_t n = 0;
  for (int k = 0; k < a->plan->n_kernels; ++k) {
    const hot_kernel_binary *b = a->jit.bin[k];
    if (!b) continue;
    e[n++] = (hot_pack_entry){b->key, b->compiler, b->arch, b->kernels, b->n_kernels, b->cubin,
                              b->cubin_size, b->log, b->compile_ms};
  }
  char err[512];
  ck_assert_int_eq(pack_write(path, e, n, err, sizeof err), RT_OK);
  hot_ctx_destroy(ctx);

  /* hot_ctx_load_pack: zero compiles */
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  ck_assert_int_eq(hot_ctx_load_pack(ctx, path), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_compile(a), HOT_OK);
  hot_stats st;
  hot_ctx_stats(ctx, &st);
  ck_assert_uint_eq(st.compiles, 0);
  ck_assert_int_eq(f.compiles, compiled);
  ck_assert_int_eq(hot_ctx_load_pack(ctx, NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_ctx_load_pack(NULL, path), HOT_ERR_INVALID);
  snprintf(bad, sizeof bad, "%s/missing.hotpack", dir);
  ck_assert_int_eq(hot_ctx_load_pack(ctx, bad), HOT_ERR_IO);
  ck_assert_msg(strstr(hot_errmsg(ctx), bad), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);

  /* HOT_KERNEL_PACK, read once by hot_ctx_create */
  setenv("HOT_KERNEL_PACK", path, 1);
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  unsetenv("HOT_KERNEL_PACK");
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_compile(a), HOT_OK);
  hot_ctx_stats(ctx, &st);
  ck_assert_uint_eq(st.compiles, 0);
  hot_ctx_destroy(ctx);

  /* another compiler version: every kernel compiles, no error */
  fake_cc g = {0, 0, 0, "fake-2", 0};
  hot_compiler cg = FAKE_COMPILER(g);
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cg), HOT_OK);
  ck_assert_int_eq(hot_ctx_load_pack(ctx, path), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_compile(a), HOT_OK);
  ck_assert_int_eq(g.compiles, compiled);
  hot_ctx_destroy(ctx);

  /* a corrupt HOT_KERNEL_PACK fails hot_ctx_create, naming the variable and the file */
  snprintf(bad, sizeof bad, "%s/bad.hotpack", dir);
  FILE *fp = fopen(bad, "wb");
  fputs("HOTPACK", fp);
  fclose(fp);
  setenv("HOT_KERNEL_PACK", bad, 1);
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_ERR_INVALID);
  unsetenv("HOT_KERNEL_PACK");
  ck_assert_msg(strstr(hot_errmsg(ctx), "HOT_KERNEL_PACK") && strstr(hot_errmsg(ctx), bad),
                "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  rm_tree(dir);
}
END_TEST

START_TEST(compile_with_fake_compiler) {
  char dir[256];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  fake_cc f = {0, 0, 0, "fake-1", 0};
  hot_compiler cc = FAKE_COMPILER(f);
  hot_options o;
  hot_options_init(&o);
  o.cache_dir = dir;
  hot_ctx *ctx = NULL;
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "fc/1"); /* a name that is no file name */
  s.in_features = 64;
  s.out_features = 32;
  hot_layer *a = NULL, *b = NULL;

  /* CPU without a forced arch: nothing to compile */
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_compile(a), HOT_OK);
  ck_assert_int_eq(f.compiles, 0);
  hot_ctx_destroy(ctx);

  /* forced arch: emit + cache; a second layer with the same kernels is a memory hit */
  o.arch = "sm_90";
  o.jit_debug = 1;
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &b), HOT_OK);
  hot_layer *both[] = {a, b};
  ck_assert_int_eq(hot_ctx_compile(ctx, both, 2), HOT_OK);
  const unsigned np = au_programs(a); /* one program per distinct kernel (runtime/jit.h) */
  ck_assert_uint_ge(np, 5);
  ck_assert_int_eq(f.compiles, (int)np);
  hot_stats st;
  hot_ctx_stats(ctx, &st);
  ck_assert_uint_eq(st.compiles, np);
  ck_assert_uint_eq(st.memory_hits, 2 * np); /* the batch compiled them; both layers then hit */
  ck_assert_str_eq(st.cache_dir, dir);
  ck_assert_msg(strstr(hot_compile_log(ctx), "fake log\n") && strstr(hot_compile_log(ctx), "== hot_"),
                "%s", hot_compile_log(ctx));
  hot_layer_info i;
  hot_layer_get_info(a, &i);
  ck_assert_int_eq(i.compiled, 1);
  ck_assert_str_eq(i.arch, "sm_90");
  char p[600];
  struct stat sb;
  snprintf(p, sizeof p, "%s/debug/fc_1.sm_90.cu", dir);
  ck_assert_msg(stat(p, &sb) == 0 && sb.st_size > 1000, "%s", p);
  snprintf(p, sizeof p, "%s/debug/fc_1.sm_90.log", dir);
  ck_assert_msg(stat(p, &sb) == 0, "%s", p);
  /* kernels whose template is not in this build: a clear refusal for the calls needing them */
  if (!embed_find("templates/hla_project.cu")) {
    ck_assert_int_eq(launch_need_kernels(a, 1u << HOT_K_HLA_G), HOT_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(hot_errmsg(ctx), "kernel hla_g: template templates/hla_project.cu not "
                         "available in this build"), "%s", hot_errmsg(ctx));
  }
  ck_assert_int_eq(launch_need_kernels(a, 1u << HOT_K_HQ_G | 1u << HOT_K_GEMM_GX), HOT_OK);
  /* compiling again does nothing */
  ck_assert_int_eq(hot_layer_compile(a), HOT_OK);
  ck_assert_int_eq(f.compiles, (int)np);
  hot_ctx_destroy(ctx);

  /* a new context finds the entry on disk */
  o.jit_debug = -1;
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  ck_assert_int_eq(hot_layer_compile(a), HOT_OK);
  ck_assert_int_eq(f.compiles, (int)np);
  hot_ctx_stats(ctx, &st);
  ck_assert_uint_eq(st.disk_hits, np);
  hot_ctx_destroy(ctx);

  /* a compile failure: status, message, log kept separately; memory-only cache */
  f.fail = 1;
  o.disk_cache = -1;
  s.out_features = 48; /* other kernels: a miss */
  ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, &cc), HOT_OK);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &a), HOT_OK);
  hot_status r = hot_layer_compile(a);
  ck_assert_int_eq(r, HOT_ERR_COMPILE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "forced"), "%s", hot_errmsg(ctx));
  ck_assert_msg(strstr(hot_compile_log(ctx), "forced failure"), "%s", hot_compile_log(ctx));
  ck_assert_ptr_null(strchr(hot_errmsg(ctx), '\n'));
  hot_ctx_stats(ctx, &st);
  ck_assert_uint_ge(st.compile_failures, 1); /* every program that was tried */
  ck_assert_str_eq(st.cache_dir, "");
  hot_ctx_destroy(ctx);
  rm_tree(dir);
}
END_TEST

/* ---- misuse ------------------------------------------------------------------------------ */

START_TEST(misuse) {
  char dir[256], path[300];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  au_write_spec(dir, path, sizeof path);
  hot_ctx *ctx = NULL, *other = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  ck_assert_int_eq(hot_ctx_create(&other, NULL), HOT_OK);
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "m", 40, 24);
  hot_layer *l = NULL, *x_l = NULL;
  float x[64 * 40] = {0}, w[24 * 40] = {0}, gy[64 * 24] = {0}, gx[64 * 40], gw[24 * 40], gb[24];

  /* creation */
  ck_assert_int_eq(hot_layer_create(NULL, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_create(ctx, NULL, 1, 64, HOT_RECIPE_HOT, &l), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 0, 64, HOT_RECIPE_HOT, &l), HOT_ERR_SHAPE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "batch and tokens must be >= 1"), "%s", hot_errmsg(ctx));
  ck_assert_ptr_null(l);
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 0, HOT_RECIPE_HOT, &l), HOT_ERR_SHAPE);
  s.in_features = 0;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_ERR_SHAPE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "in_features"), "%s", hot_errmsg(ctx));
  s.in_features = 40;
  s.hq.block = 24; /* not a power of two: the planner says why */
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_ERR_PLAN);
  ck_assert_msg(strstr(hot_errmsg(ctx), "layer 'm'"), "%s", hot_errmsg(ctx));
  s.hq.block = 16;
  s.dtype = (hot_dtype)7;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_ERR_INVALID);
  hot_stats stats;
  ck_assert_int_eq(hot_ctx_stats(ctx, &stats), HOT_OK);
  ck_assert_str_eq(hot_errmsg(ctx), ""); /* hot_ctx_stats succeeds: cleared as by any success */
  s.dtype = HOT_DT_F32;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_OK);
  ck_assert_str_eq(hot_errmsg(ctx), ""); /* cleared by the success */

  /* specs */
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "nope", 0, &x_l), HOT_ERR_NOT_FOUND);
  ck_assert_msg(strstr(hot_errmsg(ctx), "no layer 'nope' (layers: fc, proj)"), "%s", hot_errmsg(ctx));
  ck_assert_ptr_null(x_l);
  ck_assert_int_eq(hot_layer_from_spec(ctx, "/nonexistent/x.lua", "fc", 0, &x_l), HOT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(ctx), "/nonexistent/x.lua: No such file"));
  /* a library reads no standard input and waits on no FIFO: regular files only */
  ck_assert_int_eq(hot_layer_from_spec(ctx, "-", "fc", 0, &x_l), HOT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(ctx), "standard input"));
  ck_assert_int_eq(hot_layer_from_spec(ctx, "/dev/null", "fc", 0, &x_l), HOT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(ctx), "not a regular file"));
  ck_assert_ptr_null(x_l);
  ck_assert_int_eq(hot_layer_from_spec(ctx, NULL, "fc", 0, &x_l), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "fc", -1, &x_l), HOT_ERR_SHAPE);

  /* per-step arguments */
  ck_assert_int_eq(hot_layer_save(NULL, x, HOT_DT_F32, NULL, NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_save(l, NULL, HOT_DT_F32, NULL, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "x is NULL"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_save(l, x, HOT_DT_BF16, NULL, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "dtype bf16 given, layer 'm' is f32"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_save(l, x, (hot_dtype)5, NULL, NULL), HOT_ERR_INVALID);
  char *raw = malloc(hot_layer_saved_bytes(l) + 32);
  ck_assert_int_eq(hot_layer_save(l, x, HOT_DT_F32, raw + 1 + (16 - ((uintptr_t)raw & 15)) % 16, NULL),
                   HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "16-byte aligned"), "%s", hot_errmsg(ctx));
  free(raw);
  ck_assert_int_eq(hot_layer_backward(l, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 0, NULL), HOT_ERR_MISUSE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "no saved activations"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_save(l, x, HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_backward(l, NULL, w, HOT_DT_F32, NULL, gx, gw, gb, 0, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "g_y is NULL"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_backward(l, gy, w, HOT_DT_F32, NULL, NULL, NULL, NULL, 0, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "nothing to compute"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_backward(l, gy, w, HOT_DT_F16, NULL, gx, gw, gb, 0, NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_backward(l, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 0, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_calibrate(l, NULL, HOT_DT_F32, 0, NULL), HOT_ERR_INVALID);

  /* non-finite input */
  x[5] = NAN;
  ck_assert_int_eq(hot_layer_save(l, x, HOT_DT_F32, NULL, NULL), HOT_ERR_NONFINITE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "NaN"), "%s", hot_errmsg(ctx));
  x[5] = 0;
  /* a failed save of the layer's buffer invalidates it */
  ck_assert_int_eq(hot_layer_backward(l, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 0, NULL), HOT_ERR_MISUSE);

  /* calibrate on a fixed granularity; g_b on a layer without bias */
  hot_layer *proj = NULL;
  ck_assert_int_eq(hot_layer_from_spec(ctx, path, "proj", 0, &proj), HOT_OK);
  float *pgy = calloc(3 * 197 * 48, 4), *px = calloc(3 * 197 * 64, 4), *pw = calloc(48 * 64, 4);
  float *pgx = malloc(3 * 197 * 64 * 4), *pgw = malloc(48 * 64 * 4), pgb[48];
  ck_assert_int_eq(hot_layer_calibrate(proj, pgy, HOT_DT_F32, 0, NULL), HOT_ERR_MISUSE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "fixed g' scale (per token)"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_save(proj, px, HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_backward(proj, pgy, pw, HOT_DT_F32, NULL, pgx, pgw, pgb, 0, NULL),
                   HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "no bias"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_backward(proj, pgy, pw, HOT_DT_F32, NULL, pgx, pgw, NULL, 0, NULL), HOT_OK);
  free(pgy); free(px); free(pw); free(pgx); free(pgw);

  /* a layer of another context */
  hot_layer *foreign = NULL;
  ck_assert_int_eq(hot_layer_create(other, &s, 1, 64, HOT_RECIPE_HOT, &foreign), HOT_OK);
  hot_layer *mix[] = {l, foreign};
  ck_assert_int_eq(hot_ctx_compile(ctx, mix, 2), HOT_ERR_MISUSE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "layers[1] belongs to another context"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_ctx_compile(ctx, NULL, 1), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_ctx_compile(ctx, mix, 1), HOT_OK);

  /* destroyed handles: detected until the context goes */
  hot_layer_destroy(l);
  hot_layer_destroy(l); /* harmless */
  ck_assert_int_eq(hot_layer_save(l, x, HOT_DT_F32, NULL, NULL), HOT_ERR_MISUSE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "layer 'm' was destroyed"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_backward(l, gy, w, HOT_DT_F32, NULL, gx, gw, gb, 0, NULL), HOT_ERR_MISUSE);
  ck_assert_int_eq(hot_layer_compile(l), HOT_ERR_MISUSE);
  ck_assert_uint_eq(hot_layer_saved_bytes(l), 0);
  ck_assert_ptr_null(hot_layer_get_plan(l));
  ck_assert_int_eq(hot_ctx_compile(ctx, &l, 1), HOT_ERR_MISUSE);
  hot_stats st;
  hot_ctx_stats(ctx, &st);
  ck_assert_uint_eq(st.layers, 1); /* proj */

  /* NULLs everywhere else */
  ck_assert_int_eq(hot_ctx_stats(NULL, &st), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_ctx_stats(ctx, NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_get_info(NULL, NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_compile(NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_calibrate(NULL, gy, HOT_DT_F32, 0, NULL), HOT_ERR_INVALID);
  ck_assert_uint_eq(hot_layer_saved_bytes(NULL), 0);
  ck_assert_str_eq(hot_errmsg(NULL), "no context (NULL)");
  ck_assert_str_eq(hot_compile_log(NULL), "");
  hot_layer_destroy(NULL);
  ck_assert_str_eq(hot_status_name(HOT_ERR_MISUSE), "HOT_ERR_MISUSE");
  ck_assert_str_eq(hot_status_name(HOT_ERR_NO_DRIVER), "HOT_ERR_NO_DRIVER");
  ck_assert_str_eq(hot_status_name((hot_status)99), "HOT_ERR_?");
  for (int i = 0; i < RT_STATUS_COUNT; ++i) /* 1:1 with the runtime's codes */
    ck_assert_str_eq(hot_status_name((hot_status)i) + 4, rt_status_name((rt_status)i) + 3);
  ck_assert_str_eq(hot_backend_name(HOT_BACKEND_CPU), "cpu");
  hot_ctx_destroy(other);
  hot_ctx_destroy(ctx);
  rm_tree(dir);
}
END_TEST


/* ---- the CUDA launch code's safety net, checked on the CPU ---------------------------------- */

/* Every launch of every call of l's plan (the tables a CUDA layer builds at load): OK from
 * launch_check (planned, arguments built, launch code). Returns the mask of roles checked; every
 * planned role is launched by some call. */
static unsigned check_all_roles(hot_layer *l) {
  const hot_layer_plan *pl = hot_layer_get_plan(l);
  hot_scratch_layout L;
  char err[256];
  ck_assert_msg(kd_scratch_layout(pl, &L, err, sizeof err) == 0, "%s", err);
  static hot_launch_list list;
  unsigned all = 0, planned = 0;
  for (int c = 0; c < 3; ++c) {
    ck_assert_int_eq(kd_launch_list(pl, &L, (hot_call)c, 1, &list), 0);
    for (int i = 0; i < list.n; ++i) {
      if (list.l[i].kernel < 0) continue; /* a step of a role this plan lacks: refused below */
      all |= 1u << list.l[i].role;
      hot_status st = launch_check(l, &list.l[i]);
      ck_assert_msg(st == HOT_OK, "%s phase %d: %s: %s", list.l[i].role_name, list.l[i].phase,
                    hot_status_name(st), hot_errmsg(l->ctx));
    }
  }
  for (int i = 0; i < pl->n_kernels; ++i) planned |= 1u << pl->kernels[i].role;
  ck_assert_uint_eq(all, planned);
  return all;
}

/* hot_cpu_use_openmp / hot_cpu_openmp: the statuses of names that cannot be used, and the
 * switch to a loaded GNU OpenMP and back (the results on it: test_fast_openmp, torch_hotlinear). */
START_TEST(cpu_openmp_api) {
  char buf[64];
  const unsigned long long fallbacks = hot_cpu_openmp_fallbacks(); /* never attached: none */
  ck_assert_uint_eq(fallbacks, 0);
  ck_assert_int_eq(hot_cpu_openmp(NULL, 0), 0);
  ck_assert_int_eq(hot_cpu_openmp(buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "");
  ck_assert_int_eq(hot_cpu_use_openmp(""), HOT_ERR_INVALID);
  char longname[HOT_NAME_MAX + 1];
  memset(longname, 'x', HOT_NAME_MAX);
  longname[HOT_NAME_MAX] = '\0';
  ck_assert_int_eq(hot_cpu_use_openmp(longname), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_cpu_use_openmp("libhot-no-such-runtime.so.9"), HOT_ERR_NOT_FOUND);
  ck_assert_int_eq(hot_cpu_use_openmp("libm.so.6"), HOT_ERR_NOT_FOUND); /* loaded, not OpenMP */
  ck_assert_int_eq(hot_cpu_openmp(buf, sizeof buf), 0);
  ck_assert_int_eq(hot_cpu_use_openmp(NULL), HOT_OK);
  void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!gomp) {
    printf("cpu_openmp_api: libgomp.so.1 cannot be loaded here: the switch to it is not tested "
           "(test_fast_openmp says SKIP)\n");
    return;
  }
  ck_assert_int_eq(hot_cpu_use_openmp("libgomp.so.1"), HOT_OK);
  ck_assert_int_eq(hot_cpu_openmp(buf, sizeof buf), 1);
  ck_assert_str_eq(buf, "libgomp.so.1");
  ck_assert_int_eq(hot_cpu_openmp(buf, 4), 1);
  ck_assert_str_eq(buf, "lib");
  ck_assert_int_eq(hot_cpu_use_openmp(NULL), HOT_OK);
  ck_assert_int_eq(hot_cpu_openmp(buf, sizeof buf), 0);
  ck_assert_uint_eq(hot_cpu_openmp_fallbacks(), 0); /* no region ran attached */
  dlclose(gomp);
}
END_TEST

/* hot_ctx_set_cpu_threads / hot_ctx_cpu_threads: the count a context starts with (the online
 * CPUs, or HOT_CPU_THREADS, then pinned), what the setter takes and refuses (the count unchanged
 * and a message naming the argument), 0 going back to the start, and the count in effect: one
 * thread runs a backward of 2^19 values without a parallel region, two run it with regions, and
 * the bits are the same. A CUDA context has no CPU threads (test_api_fakecuda). */
START_TEST(cpu_threads_api) {
  unsetenv("HOT_CPU_THREADS");
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  int pinned = -1;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int start = hot_ctx_cpu_threads(ctx, &pinned);
  ck_assert_int_eq(start, online < 1 ? 1 : online > HOT_MAX_CPU_THREADS ? HOT_MAX_CPU_THREADS : (int)online);
  ck_assert_int_eq(pinned, 0);
  ck_assert_int_eq(hot_ctx_cpu_threads(NULL, &pinned), 0);
  ck_assert_int_eq(pinned, 0);
  ck_assert_int_eq(hot_ctx_set_cpu_threads(NULL, 1), HOT_ERR_INVALID);
  static const int bad[] = {-1, HOT_MAX_CPU_THREADS + 1, -2147483647 - 1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    ck_assert_int_eq(hot_ctx_set_cpu_threads(ctx, bad[i]), HOT_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(hot_errmsg(ctx), "hot_ctx_set_cpu_threads: n = "));
    ck_assert_int_eq(hot_ctx_cpu_threads(ctx, NULL), start);
  }
  ck_assert_int_eq(hot_ctx_set_cpu_threads(ctx, HOT_MAX_CPU_THREADS), HOT_OK);
  ck_assert_int_eq(hot_ctx_cpu_threads(ctx, NULL), HOT_MAX_CPU_THREADS);
  ck_assert_int_eq(hot_ctx_set_cpu_threads(ctx, 0), HOT_OK);
  ck_assert_int_eq(hot_ctx_cpu_threads(ctx, NULL), start);

  /* the count in effect: T*O + T*I + O*I = 2^19 values (over the small-call bound, 2^17) */
  au_io io;
  au_io_init(&io, 1024, 256, 128, 77);
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "threads", 128, 256);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 8, 128, HOT_RECIPE_HOT, &l), HOT_OK);
  float *gx1 = malloc(sizeof(float) * 1024 * 128), *gw1 = malloc(sizeof(float) * 256 * 128);
  for (int n = 1; n <= 2; ++n) {
    ck_assert_int_eq(hot_ctx_set_cpu_threads(ctx, n), HOT_OK);
    const unsigned long long before = hot_cpu_regions();
    ck_assert_int_eq(hot_layer_save(l, io.x, HOT_DT_F32, NULL, NULL), HOT_OK);
    ck_assert_int_eq(hot_layer_backward(l, io.gy, io.w, HOT_DT_F32, NULL, n == 1 ? gx1 : io.gx,
                                        n == 1 ? gw1 : io.gw, NULL, 1, NULL), HOT_OK);
    const unsigned long long regions = hot_cpu_regions() - before;
    if (n == 1) ck_assert_uint_eq(regions, 0);
    else ck_assert_uint_gt(regions, 0);
  }
  ck_assert_mem_eq(gx1, io.gx, sizeof(float) * 1024 * 128);
  ck_assert_mem_eq(gw1, io.gw, sizeof(float) * 256 * 128);
  free(gx1), free(gw1);
  hot_layer_destroy(l);
  au_io_free(&io);
  hot_ctx_destroy(ctx);

  /* HOT_CPU_THREADS pins the start; the setter still sets, 0 goes back to it */
  setenv("HOT_CPU_THREADS", "3", 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  ck_assert_int_eq(hot_ctx_cpu_threads(ctx, &pinned), 3);
  ck_assert_int_eq(pinned, 1);
  ck_assert_int_eq(hot_ctx_set_cpu_threads(ctx, 1), HOT_OK);
  ck_assert_int_eq(hot_ctx_cpu_threads(ctx, NULL), 1);
  ck_assert_int_eq(hot_ctx_set_cpu_threads(ctx, 0), HOT_OK);
  ck_assert_int_eq(hot_ctx_cpu_threads(ctx, NULL), 3);
  hot_ctx_destroy(ctx);
  unsetenv("HOT_CPU_THREADS");
}
END_TEST

/* Every place a name or message is bounded in bytes cuts at a UTF-8 character boundary:
 * utf8_complete on a table, a layer name of 32 "ß" (64 bytes, no NUL: cut to 31 of them) through
 * hot_layer_create, hot_layer_create_with_id and hot_layer_create_named, and a message longer
 * than the buffer. */
START_TEST(names_cut_at_character_boundaries) {
  static const struct {
    const char *s;
    size_t len, want;
  } cases[] = {
      {"abc", 3, 3},          {"a\xc3\x9f", 3, 3},     {"a\xc3\x9f", 2, 1},
      {"\xe2\x82\xac", 2, 0}, {"\xe2\x82\xac", 3, 3}, {"\xf0\x9f\x98\x80", 3, 0},
      {"\xf0\x9f\x98\x80", 4, 4}, {"\x80\x80", 2, 2},      {"", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    ck_assert_msg(utf8_complete(cases[i].s, cases[i].len) == cases[i].want, "case %zu", i);
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  for (int path = 0; path < 3; ++path) {
    hot_layer_spec s;
    ck_assert_int_eq(hot_layer_spec_defaults(&s, HOT_RECIPE_HOT), HOT_OK);
    for (int i = 0; i < HOT_NAME_MAX / 2; ++i) memcpy(s.name + 2 * i, "\xc3\x9f", 2);
    s.in_features = 8;
    s.out_features = 4;
    hot_layer *l = NULL;
    ck_assert_int_eq(path == 2   ? hot_layer_create_named(ctx, &s, 1, 8, HOT_RECIPE_HOT, "n", &l)
                     : path == 1 ? hot_layer_create_with_id(ctx, &s, 1, 8, HOT_RECIPE_HOT, 7, &l)
                                 : hot_layer_create(ctx, &s, 1, 8, HOT_RECIPE_HOT, &l),
                     HOT_OK);
    hot_layer_info info;
    ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
    ck_assert_uint_eq(strlen(info.name), HOT_NAME_MAX - 2);
    ck_assert_int_eq(memcmp(info.name, s.name, HOT_NAME_MAX - 2), 0);
    hot_layer_destroy(l);
  }
  char longname[4 * 1024];
  for (size_t i = 0; i + 2 < sizeof longname; i += 2) memcpy(longname + i, "\xc3\x9f", 2);
  longname[sizeof longname - 2] = '\0';
  for (int shift = 0; shift < 2; ++shift) {
    ctx_fail(ctx, HOT_ERR_INVALID, "%.*s%s", shift, "x", longname);
    const char *m = hot_errmsg(ctx);
    ck_assert_uint_eq(utf8_complete(m, strlen(m)), strlen(m));
    ck_assert_uint_ge(strlen(m), 100);
  }
  hot_ctx_destroy(ctx);
}
END_TEST

START_TEST(launch_signatures_and_geometry) {
  hot_options o;
  hot_options_init(&o);
  o.arch = "sm_90";
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "sig", 137, 100);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 3, 197, HOT_RECIPE_HOT, &l), HOT_OK);
  /* the default recipe: abc_x, hq_g, hq_w, hla_g, both GEMMs, bias and lqs all have launch code
   * whose arguments match the templates' entries, and the planner's geometry matches theirs */
  unsigned all = check_all_roles(l);
  const hot_kernel_role want[] = {HOT_K_ABC_X, HOT_K_HQ_G, HOT_K_HQ_W, HOT_K_HLA_G,
                                  HOT_K_GEMM_GX, HOT_K_GEMM_GW, HOT_K_BIAS, HOT_K_LQS};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i)
    ck_assert_msg(all & 1u << want[i], "plan lacks %s", plan_role_name(want[i]));
  ck_assert(!(all & (1u << HOT_K_SAWB_W | 1u << HOT_K_SAWB_X))); /* absmax: no SAWB kernels */
  /* the grid of each launch: the plan's, except sawb.cu's phase 1 (one block) */
  const hot_layer_plan *pl = hot_layer_get_plan(l);
  unsigned g[3];
  for (int ph = 0; ph < 3; ++ph) {
    launch_grid(pl, HOT_K_LQS, ph, g);
    ck_assert(g[0] == (unsigned)((pl->T + 7) / 8) && g[1] == 1 && g[2] == 1);
  }
  launch_grid(pl, HOT_K_HLA_G, 1, g);
  ck_assert_uint_eq(g[0], (unsigned)pl->hla.blocks);
  ck_assert_uint_eq(g[1], (unsigned)((pl->O + 127) / 128)); /* p = 64: 128 columns a block */
  launch_grid(pl, HOT_K_SAWB_W, 0, g);
  ck_assert(g[0] == 0 && g[1] == 0 && g[2] == 0); /* not in this plan */

  /* every launch passes exactly the parameters its template's entry takes (checked here, not
   * by parsing template text at run time); the launch geometry is the plan's */
  for (int i = 0; i < pl->n_kernels; ++i) {
    char *want_sig = NULL, eerr[256];
    ck_assert_msg(emit_entry_params(pl->kernels[i].templ, &want_sig, eerr, sizeof eerr) == 0, "%s",
                  eerr);
    const char *got = launch_signature(pl->kernels[i].role);
    ck_assert_msg(got && strcmp(got, want_sig) == 0, "%s: template (%s), launch.c (%s)",
                  pl->kernels[i].templ, want_sig, got ? got : "none");
    free(want_sig);
  }
  /* a role the plan lacks is refused, never launched */
  hot_launch lacking;
  memset(&lacking, 0, sizeof lacking);
  lacking.kernel = -1;
  lacking.role = HOT_K_SAWB_W;
  lacking.role_name = "sawb_w";
  ck_assert_int_eq(launch_check(l, &lacking), HOT_ERR_INTERNAL);
  ck_assert_uint_ne(all, 0);

  /* other blockings: p = 16 / 256 / 1024, both layouts, a prefix basis */
  const int ps[] = {16, 256, 1024};
  for (size_t i = 0; i < 3; ++i)
    for (int lay = 0; lay < 2; ++lay) {
      hot_layer_spec v = s;
      v.hla.block = ps[i];
      v.hla.layout = (hot_layout)lay;
      if (i == 1) {
        v.hla.selection = HOT_SEL_PREFIX;
        v.hla.rank = 7;
      }
      hot_layer *lv = NULL;
      ck_assert_int_eq(hot_layer_create(ctx, &v, 3, 197, HOT_RECIPE_HOT, &lv), HOT_OK);
      check_all_roles(lv);
      hot_layer_destroy(lv);
    }

  /* paper_code on L = 197: p = 1 (identity projection), b = 4, SAWB scales for w' and x^ */
  hot_layer_spec pc;
  au_spec(&pc, HOT_RECIPE_PAPER_CODE, "sig_pc", 137, 100);
  hot_layer *lp = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &pc, 3, 197, HOT_RECIPE_PAPER_CODE, &lp), HOT_OK);
  pl = hot_layer_get_plan(lp);
  ck_assert_int_eq(pl->hla.block, 1);
  ck_assert_int_eq(pl->hq.block, 4);
  all = check_all_roles(lp);
  ck_assert(all & 1u << HOT_K_SAWB_W);
  ck_assert(all & 1u << HOT_K_SAWB_X);
  ck_assert_int_eq(launch_sawb_elems(pl, HOT_K_SAWB_W), pl->hq.o_pad * pl->I);
  ck_assert_int_eq(launch_sawb_elems(pl, HOT_K_SAWB_X), pl->hla.k * pl->I);
  ck_assert_int_eq(pl->hla.k, pl->T);
  launch_grid(pl, HOT_K_SAWB_X, 0, g);
  ck_assert_uint_eq(g[0], (unsigned)(((pl->T * pl->I + 1023) / 1024 + 7) / 8));
  launch_grid(pl, HOT_K_SAWB_X, 1, g);
  ck_assert(g[0] == 1 && g[1] == 1 && g[2] == 1);
  launch_grid(pl, HOT_K_SAWB_W, 1, g);
  ck_assert(g[0] == 1 && g[1] == 1 && g[2] == 1);
  launch_grid(pl, HOT_K_ABC_X, 1, g);
  ck_assert(g[0] == (unsigned)pl->T && g[1] == 1); /* p = 1: 256 columns a block, I = 137 */
  for (int i = 0; i < pl->n_kernels; ++i) { /* the SAWB entries too */
    char *want_sig = NULL, eerr[256];
    ck_assert_int_eq(emit_entry_params(pl->kernels[i].templ, &want_sig, eerr, sizeof eerr), 0);
    ck_assert_str_eq(launch_signature(pl->kernels[i].role), want_sig);
    free(want_sig);
  }
  hot_ctx_destroy(ctx);
}
END_TEST

/* ---- named streams (hot_layer_create_named) ---------------------------------------------- */

/* Known answers of the stream of a named layer, computed apart from the runtime (FNV-1a 64 of
 * the name's bytes, then splitmix64's finaliser of seed ^ hash; python/tests/test_api.py holds
 * the same table and checks the Python package's derivation against it). Its components are
 * checked against their published values there too: FNV-1a 64("foobar") = 0x85944171f73967e8,
 * splitmix64's first output from state 0 = 0xe220a8397b1dcdaf. The second and third names share
 * a 27-bit layer id. */
static const struct {
  uint64_t seed;
  const char *name;
  int id;
  uint64_t key;
} named_kat[] = {
    {HOT_DEFAULT_SEED, "a", 41576353, 0x0fd241ae7ec49a2dull},
    {HOT_DEFAULT_SEED, "fc67872285", 80537823, 0xf6a20ddae06d0664ull},
    {HOT_DEFAULT_SEED, "att.in_proj.qkv", 80537823, 0xbb945fada8d79c92ull},
    {HOT_DEFAULT_SEED, "blocks.0.fc1", 89103491, 0x9c35486e283c698eull},
    {HOT_DEFAULT_SEED, "encoder.\xe5\xb1\xa4.0.\xc3\x9f", 119246768, 0x79410c28649abefeull},
    {HOT_DEFAULT_SEED, "\xf0\x9f\x98\x80", 48424573, 0x66fb657361959eb1ull},
    {42, "a", 41576353, 0x2c987fe0b5e27e11ull},
    {42, "fc67872285", 80537823, 0x65762b991ba8d6bcull},
    {42, "att.in_proj.qkv", 80537823, 0x640a6c24ce3456aeull},
    {42, "blocks.0.fc1", 89103491, 0x12ba69159f298cb1ull},
    {42, "encoder.\xe5\xb1\xa4.0.\xc3\x9f", 119246768, 0x548100635e45a27cull},
    {42, "\xf0\x9f\x98\x80", 48424573, 0x87d381fb085f1226ull},
};

static hot_ctx *seeded_cpu_ctx(uint64_t seed) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  o.seed_set = 1;
  o.seed = seed;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  return ctx;
}

static hot_layer *named_layer(hot_ctx *ctx, const char *stream, int64_t I, int64_t O,
                              int64_t T) {
  hot_layer_spec s;
  ck_assert_int_eq(hot_layer_spec_defaults(&s, HOT_RECIPE_HOT), HOT_OK);
  snprintf(s.name, sizeof s.name, "fc");
  s.in_features = I;
  s.out_features = O;
  hot_layer *l = NULL;
  hot_status st = hot_layer_create_named(ctx, &s, 1, T, HOT_RECIPE_HOT, stream, &l);
  ck_assert_msg(st == HOT_OK, "%s: %s", hot_status_name(st), hot_errmsg(ctx));
  return l;
}

/* The table through the runtime, in two contexts that create the layers in opposite orders
 * (the second after other layers): every layer's id and key are the table's. */
START_TEST(named_stream_known_answers) {
  const int n = (int)(sizeof named_kat / sizeof named_kat[0]);
  for (int order = 0; order < 2; ++order) {
    hot_ctx *ctx[2] = {seeded_cpu_ctx(HOT_DEFAULT_SEED), seeded_cpu_ctx(42)};
    if (order) /* layers of hot_layer_create and of another name first */
      for (int c = 0; c < 2; ++c) {
        named_layer(ctx[c], "other", 8, 4, 8);
        hot_layer_spec s;
        ck_assert_int_eq(hot_layer_spec_defaults(&s, HOT_RECIPE_HOT), HOT_OK);
        s.in_features = 8, s.out_features = 4;
        hot_layer *l = NULL;
        ck_assert_int_eq(hot_layer_create(ctx[c], &s, 1, 8, HOT_RECIPE_HOT, &l), HOT_OK);
      }
    for (int k = 0; k < n; ++k) {
      const int i = order ? n - 1 - k : k;
      hot_ctx *c = ctx[named_kat[i].seed == 42];
      hot_layer_info info;
      ck_assert_int_eq(hot_layer_get_info(named_layer(c, named_kat[i].name, 8, 4, 8), &info),
                       HOT_OK);
      ck_assert_msg(info.layer_id == named_kat[i].id && info.seed == named_kat[i].key,
                    "case %d (order %d): id %d key 0x%016llx", i, order, info.layer_id,
                    (unsigned long long)info.seed);
      ck_assert_str_eq(info.name, "fc"); /* the spec's name labels; the stream name keys */
    }
    /* hot_layer_create's count did not advance for named layers */
    hot_layer_spec s;
    ck_assert_int_eq(hot_layer_spec_defaults(&s, HOT_RECIPE_HOT), HOT_OK);
    s.in_features = 8, s.out_features = 4;
    hot_layer *l = NULL;
    hot_layer_info info;
    ck_assert_int_eq(hot_layer_create(ctx[0], &s, 1, 8, HOT_RECIPE_HOT, &l), HOT_OK);
    ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
    ck_assert_int_eq(info.layer_id, order);
    ck_assert_uint_eq(info.seed, HOT_DEFAULT_SEED);
    hot_ctx_destroy(ctx[0]);
    hot_ctx_destroy(ctx[1]);
  }
}
END_TEST

/* Two names with one 27-bit id: different keys, hence different SR codes (the backward of each
 * equals the twins run with its reported key, and the two differ), where two layers given that
 * id by hot_layer_create_with_id draw the same. Bad stream names are refused. */
START_TEST(named_streams_separate_colliding_ids) {
  hot_ctx *ctx = seeded_cpu_ctx(HOT_DEFAULT_SEED);
  au_io io[2];
  float *gw[2];
  const char *names[2] = {"fc67872285", "att.in_proj.qkv"};
  for (int v = 0; v < 4; ++v) { /* 0, 1: the two names; 2, 3: the shared id */
    au_io_init(&io[v & 1], 64, 24, 40, 5);
    hot_layer *l = NULL;
    if (v < 2) {
      l = named_layer(ctx, names[v], 40, 24, 64);
    } else {
      hot_layer_spec s;
      ck_assert_int_eq(hot_layer_spec_defaults(&s, HOT_RECIPE_HOT), HOT_OK);
      s.in_features = 40, s.out_features = 24;
      ck_assert_int_eq(hot_layer_create_with_id(ctx, &s, 1, 64, HOT_RECIPE_HOT, 80537823, &l),
                       HOT_OK);
    }
    hot_layer_info info;
    ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
    ck_assert_int_eq(info.layer_id, 80537823);
    compare_layer(ctx, l, &io[v & 1], 1, 3, 1); /* the backend uses the reported key */
    gw[v & 1] = io[v & 1].gw;
    if (v & 1) {
      const int same = memcmp(gw[0], gw[1], (size_t)(24 * 40) * 4) == 0;
      ck_assert_msg(same == (v == 3), "%s", v == 1 ? "two names drew the same SR codes"
                                                  : "one id drew different SR codes");
      au_io_free(&io[0]);
      au_io_free(&io[1]);
    }
  }
  hot_layer_spec s;
  ck_assert_int_eq(hot_layer_spec_defaults(&s, HOT_RECIPE_HOT), HOT_OK);
  s.in_features = 8, s.out_features = 4;
  hot_layer *l = (hot_layer *)&s;
  ck_assert_int_eq(hot_layer_create_named(ctx, &s, 1, 8, HOT_RECIPE_HOT, "", &l), HOT_ERR_INVALID);
  ck_assert_ptr_null(l);
  ck_assert_msg(strstr(hot_errmsg(ctx), "empty stream name"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_create_named(ctx, &s, 1, 8, HOT_RECIPE_HOT, NULL, &l),
                   HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_create_named(NULL, &s, 1, 8, HOT_RECIPE_HOT, "a", &l),
                   HOT_ERR_INVALID);
  s.in_features = 0; /* hot_layer_create's checks */
  ck_assert_int_eq(hot_layer_create_named(ctx, &s, 1, 8, HOT_RECIPE_HOT, "a", &l), HOT_ERR_SHAPE);
  hot_ctx_destroy(ctx);
}
END_TEST

int main(void) {
  /* No driver, whatever the machine has: this suite tests the fallback. */
  au_suite_env("/nonexistent/libcuda.so.1");
  Suite *s = suite_create("runtime_api_cpu");
  TCase *tc = tcase_create("api");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, cuda_without_driver);
  tcase_add_test(tc, auto_falls_back_to_cpu);
  tcase_add_test(tc, cpu_equals_reference);
  tcase_add_test(tc, cpu_equals_reference_variants);
  tcase_add_test(tc, cpu_nvfp4_equals_reference);
  tcase_add_test(tc, layer_from_spec);
  tcase_add_test(tc, bad_options_and_environment);
  tcase_add_test(tc, compile_with_fake_compiler);
  tcase_add_test(tc, ctx_compile_one_pool);
  tcase_add_test(tc, kernel_pack_api);
  tcase_add_test(tc, misuse);
  tcase_add_test(tc, environment_read_once);
  tcase_add_test(tc, huge_finite_inputs);
  tcase_add_test(tc, layer_create_enums_and_recipe);
  tcase_add_test(tc, launch_signatures_and_geometry);
  tcase_add_test(tc, cpu_openmp_api);
  tcase_add_test(tc, cpu_threads_api);
  tcase_add_test(tc, names_cut_at_character_boundaries);
  tcase_add_test(tc, named_stream_known_answers);
  tcase_add_test(tc, named_streams_separate_colliding_ids);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK); /* tests set environment variables */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

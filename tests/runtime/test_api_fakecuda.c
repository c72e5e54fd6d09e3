/* test_api_fakecuda.c — the CUDA backend's host code without a GPU: HOT_CUDA_DRIVER points at
 * the recording fake driver (fake_cuda.c), kernels are "compiled" by the fake compiler of
 * rt_util.h, and every save / backward / calibrate is checked launch by launch: which kernels,
 * in which order, which phase, on which grid, with which pointers (codes and scales into the
 * saved buffer, SAWB math tensor and scale handed from one kernel to the next, scratch pieces
 * inside the layer's allocation), Philox tags and steps; the LQS read-back sets the layer's
 * granularity. Kernels do not run here: their numerics are tests/gpu's (on a GPU). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dlfcn.h>

#include "api_util.h"
#include "fake_cuda.h"
#include "backend.h"
#include "cuda_backend.h" /* the backend's layer state: cuda_layer_of */
#include "hot_internal.h"
#include "launch.h"
#include "hot_math.cuh" /* HOT_TENSOR_* tags */
#include "rt_util.h"

static fake_cuda_log_t *g_log;
static fake_cuda_reset_fn g_reset;
static fake_cuda_set_lqs_fn g_set_lqs;
static fake_cuda_raise_range_fn g_raise_range;
static const cuda_driver *d;
static fake_cc g_fcc = {0, 0, 0, "fake-1", 0};

static hot_compiler g_cc = FAKE_ELF_COMPILER(g_fcc);

static void setup(void) {
  char err[512];
  ck_assert_msg(cuda_driver_get(&d, err, sizeof err) == RT_OK, "%s", err);
  void *h = dlopen(HOT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(h);
  g_log = ((fake_cuda_log_fn)dlsym(h, "fake_cuda_log"))();
  g_reset = (fake_cuda_reset_fn)dlsym(h, "fake_cuda_reset");
  g_set_lqs = (fake_cuda_set_lqs_fn)dlsym(h, "fake_cuda_set_lqs");
  g_raise_range = (fake_cuda_raise_range_fn)dlsym(h, "fake_cuda_raise_range");
  ck_assert_ptr_nonnull(g_raise_range);
  ck_assert(g_log && g_reset && g_set_lqs);
}

static hot_ctx *cuda_ctx(void) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CUDA;
  o.disk_cache = -1;
  hot_ctx *ctx = NULL;
  hot_status st = ctx_create_with_compiler(&ctx, &o, &g_cc);
  ck_assert_msg(st == HOT_OK, "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_ctx_backend(ctx), HOT_BACKEND_CUDA);
  return ctx;
}

static hot_layer *layer(hot_ctx *ctx, hot_recipe recipe, const char *name) {
  hot_layer_spec s;
  plan_spec_defaults(&s, recipe);
  snprintf(s.name, sizeof s.name, "%s", name);
  s.in_features = 137;
  s.out_features = 100;
  hot_layer *l = NULL;
  hot_status st = hot_layer_create(ctx, &s, 3, 197, recipe, &l);
  ck_assert_msg(st == HOT_OK, "%s", hot_errmsg(ctx));
  st = hot_layer_compile(l);
  ck_assert_msg(st == HOT_OK, "%s", hot_errmsg(ctx));
  return l;
}

static CUdeviceptr dalloc(size_t n) {
  CUdeviceptr p = 0;
  ck_assert_int_eq(d->cuMemAlloc(&p, n), CUDA_SUCCESS);
  return p;
}
static void *vp(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* The i-th recorded launch, which must be `prefix...` (phase checked when >= 0 at arg index). */
static const fake_cuda_launch *at(int i, const char *prefix, int phase_arg, int phase) {
  ck_assert_msg(i < g_log->n, "launch %d missing (only %d recorded)", i, g_log->n);
  const fake_cuda_launch *l = &g_log->l[i];
  ck_assert_msg(!strncmp(l->name, prefix, strlen(prefix)), "launch %d: %s, expected %s", i, l->name,
                prefix);
  if (phase_arg >= 0)
    ck_assert_msg(l->arg[phase_arg] == phase, "launch %d (%s): phase %lld, expected %d", i, l->name,
                  (long long)l->arg[phase_arg], phase);
  return l;
}

/* The grid of the plan's kernel of `role`, block 256 (every non-GEMM role). */
static void plan_grid(const fake_cuda_launch *l, const hot_layer_plan *pl, hot_kernel_role role) {
  const hot_kernel_plan *kp = &pl->kernels[plan_kernel_index(pl, role)];
  ck_assert_msg(l->grid[0] == kp->grid[0] && l->grid[1] == kp->grid[1] && l->grid[2] == 1,
                "%s: grid %ux%ux%u, plan %ux%u", l->name, l->grid[0], l->grid[1], l->grid[2],
                kp->grid[0], kp->grid[1]);
  ck_assert_uint_eq(l->block[0], kp->block[0]);
  ck_assert_str_eq(l->name, kp->name);
}

/* A pointer inside the layer's scratch allocation, with n bytes available from it. */
static void in_scratch(const hot_layer *l, int64_t p, int64_t n) {
  int64_t lo = (int64_t)cuda_layer_of(l)->scratch, hi = lo + (int64_t)cuda_layer_of(l)->scratch_bytes;
  ck_assert_msg(p >= lo && p + n <= hi, "pointer %llx (+%lld) outside scratch [%llx, %llx)",
                (unsigned long long)p, (long long)n, (unsigned long long)lo, (unsigned long long)hi);
}

/* The saved layout (plan_saved_scale_offset): the codes, I rows of K; s_x^ at this offset. */
static int64_t sx_off(const hot_layer_plan *pl) {
  const int64_t off = plan_saved_scale_offset(pl);
  ck_assert_int_eq(off, (pl->I * pl->hla.k + 15) / 16 * 16);
  return off;
}
/* 1 when the save clears the words of the alignment gap between codes and scales: a second
 * memset after the amax one, checked here (log entry i). */
static int save_gap(const hot_layer_plan *pl, int i, CUdeviceptr sv) {
  const int64_t nc = pl->I * pl->hla.k, off = sx_off(pl);
  if (off == nc) return 0;
  const fake_cuda_launch *m = at(i, "memset32", -1, 0);
  ck_assert_int_eq(m->arg[0], (int64_t)sv + (nc & ~(int64_t)3));
  ck_assert_int_eq(m->arg[1], (off - (nc & ~(int64_t)3)) / 4);
  return 1;
}
/* The abc_unpack launch of a backward when the plan has one (log entry i; 0 launches else):
 * the saved codes (sv) into q_hx of the scratch. Returns the g_w GEMM's B operand. */
static int64_t unpack_at(int i, const hot_layer *l, CUdeviceptr sv, int *launches) {
  const hot_layer_plan *pl = l->plan;
  *launches = plan_saved_unpacked(pl);
  if (!*launches) return (int64_t)sv;
  const fake_cuda_launch *u = at(i, "hot_abc_unpack", -1, 0);
  plan_grid(u, pl, HOT_K_ABC_UNPACK);
  ck_assert_int_eq(u->arg[0], (int64_t)sv);
  ck_assert_int_eq(u->arg[1], pl->I);
  ck_assert_int_eq(u->arg[2], pl->hla.k);
  ck_assert_int_eq(u->arg[3], pl->hla.group_k);
  ck_assert_int_eq(u->arg[4], pl->hla.group_k_pad);
  ck_assert_int_eq(u->arg[5], pl->hla.gemm.k_pad);
  ck_assert_int_eq(u->arg[6], (int64_t)cuda_layer_buf(l, HOT_LB_Q_HX));
  in_scratch(l, u->arg[6], pl->I * pl->hla.gemm.k_pad);
  return u->arg[6];
}

/* HLA argument indexes (hla_project.cu): 0 src 1 T 2 cols 3 ld 4 L 5 layout 6 seg_len
 * 7 segments 8 k_real 9 k_pad 10 group_k 11 group_k_pad 12 groups 13 per_sample 14 codes
 * 15 ld_codes 16 scale 17 amax 18 scale_in 19 math_out 20 phase 21 seed 22 tag 23 step. */
static void hla_args(const fake_cuda_launch *l, const hot_layer *ly, int is_g, CUdeviceptr src) {
  const hot_layer_plan *pl = ly->plan;
  int64_t cols = is_g ? pl->O : pl->I;
  ck_assert_int_eq(l->arg[0], (int64_t)src);
  ck_assert_int_eq(l->arg[1], pl->T);
  ck_assert_int_eq(l->arg[2], cols);
  ck_assert_int_eq(l->arg[3], cols);
  ck_assert_int_eq(l->arg[4], pl->L);
  ck_assert_int_eq(l->arg[5], pl->hla.layout == HOT_LAYOUT_FLAT);
  ck_assert_int_eq(l->arg[6], pl->hla.seg_len);
  ck_assert_int_eq(l->arg[7], pl->hla.segments);
  /* g^: the GEMM's layout; x^: the saved one (k_pad = K, group_k_pad = group_k) */
  ck_assert_int_eq(l->arg[8], pl->hla.k);
  ck_assert_int_eq(l->arg[9], is_g ? pl->hla.gemm.k_pad : pl->hla.k);
  ck_assert_int_eq(l->arg[10], pl->hla.group_k);
  ck_assert_int_eq(l->arg[11], is_g ? pl->hla.group_k_pad : pl->hla.group_k);
  ck_assert_int_eq(l->arg[12], pl->hla.groups);
  ck_assert_int_eq(l->arg[13], (is_g ? pl->hla.g.gran : pl->hla.x.gran) == HOT_GRAN_SAMPLE);
  ck_assert_int_eq(l->arg[15], is_g ? pl->hla.gemm.k_pad : pl->hla.k);
  ck_assert_int_eq(l->arg[21], (int64_t)ly->seed);
  ck_assert_int_eq(l->arg[22], pl->layer_id * 16 + (is_g ? HOT_TENSOR_HLA_G : 0));
}

START_TEST(default_recipe_sequence) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "fc");
  const hot_layer_plan *pl = l->plan;
  int64_t T = pl->T, O = pl->O, I = pl->I, xb = sx_off(pl);
  size_t nb = hot_layer_saved_bytes(l);
  ck_assert_int_eq((int64_t)nb, xb + 4);
  ck_assert_int_eq(plan_saved_unpacked(pl), 1); /* K = 3 * 4 * 36 = 432 is no tile_k multiple */
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), gb = dalloc((size_t)O * 4), sv = dalloc(nb);

  /* save into the caller's buffer: memset(amax) ; memset(gap) ; hla_x 0 ; hla_x 1 */
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  /* the scratch of the call, carved out of the context's workspace */
  ck_assert_ptr_nonnull((void *)(uintptr_t)cuda_layer_buf(l, HOT_LB_LQS_RES)); /* auto: LQS scratch */
  ck_assert(!cuda_layer_buf(l, HOT_LB_MATH));                                   /* absmax: no SAWB scratch */
  ck_assert_int_eq((int64_t)cuda_layer_of(l)->scratch, (int64_t)cuda_ctx_of(ctx)->ws);
  const fake_cuda_launch *m = at(0, "memset32", -1, 0);
  ck_assert_int_eq(m->arg[0], (int64_t)cuda_layer_buf(l, HOT_LB_AMAX)); /* every amax word */
  ck_assert_int_eq(m->arg[1], kd_amax_bytes(pl) / 4);
  const int gap = save_gap(pl, 1, sv);
  ck_assert_int_eq(gap, 1); /* I * K = 137 * 432 is no multiple of 16 */
  ck_assert_int_eq(g_log->n, 3 + gap);
  for (int ph = 0; ph < 2; ++ph) {
    const fake_cuda_launch *k = at(1 + gap + ph, "hot_hla_x_", 20, ph);
    plan_grid(k, pl, HOT_K_ABC_X);
    hla_args(k, l, 0, x);
    ck_assert_int_eq(k->arg[14], (int64_t)sv);      /* codes at the buffer's start */
    ck_assert_int_eq(k->arg[16], (int64_t)sv + xb); /* s_x^ after them */
    ck_assert_int_eq(k->arg[17], m->arg[0] + kd_amax_hla(pl, 0));
    ck_assert_int_eq(k->arg[18], 0);
    ck_assert_int_eq(k->arg[19], 0);
  }

  /* backward, auto before calibration */
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), vp(gb),
                                      7, NULL), HOT_OK);
  int up = 0;
  const int64_t qx = unpack_at(7, l, sv, &up);
  ck_assert_int_eq(g_log->n, 10 + up);
  m = at(0, "memset32", -1, 0);
  ck_assert_int_eq(m->arg[0], (int64_t)cuda_layer_buf(l, HOT_LB_AMAX));
  ck_assert_int_eq(m->arg[1], HOT_AMAX_WORDS + pl->B); /* + one word a sample (g' per sample) */
  const fake_cuda_launch *g0 = at(1, "hot_hq_g_", 13, 0), *g1 = at(2, "hot_hq_g_", 13, 1);
  const fake_cuda_launch *w0 = at(3, "hot_hq_w_", 13, 0), *w1 = at(4, "hot_hq_w_", 13, 1);
  const fake_cuda_launch *h0 = at(5, "hot_hla_g_", 20, 0), *h1 = at(6, "hot_hla_g_", 20, 1);
  const fake_cuda_launch *mx = at(7 + up, "hot_gemm_", -1, 0), *mw = at(8 + up, "hot_gemm_", -1, 0);
  const fake_cuda_launch *b = at(9 + up, "hot_bias_", -1, 0);
  plan_grid(g0, pl, HOT_K_HQ_G);
  plan_grid(w1, pl, HOT_K_HQ_W);
  plan_grid(h0, pl, HOT_K_HLA_G);
  plan_grid(h1, pl, HOT_K_HLA_G);
  plan_grid(mx, pl, HOT_K_GEMM_GX);
  plan_grid(mw, pl, HOT_K_GEMM_GW);
  plan_grid(b, pl, HOT_K_BIAS);
  ck_assert_int_eq(g1->arg[15], pl->layer_id * 16 + HOT_TENSOR_HQ_G);
  ck_assert_int_eq(g1->arg[16], 7);
  /* auto, not calibrated: per sample (B = 3), B words after the per-tensor ones, groups of L */
  ck_assert_int_eq(g0->arg[9], (int64_t)(cuda_layer_buf(l, HOT_LB_AMAX) + 4 * HOT_AMAX_WORDS));
  ck_assert_int_eq(g0->arg[10], pl->L);
  ck_assert_int_eq(g1->arg[10], pl->L);
  ck_assert_int_eq(w0->arg[11], 0); /* absmax: no scale_in, no math_out */
  ck_assert_int_eq(w0->arg[12], 0);
  ck_assert_int_eq(w1->arg[11], 0);
  hla_args(h0, l, 1, gy);
  hla_args(h1, l, 1, gy);
  ck_assert_int_eq(h1->arg[23], 7);
  ck_assert_int_eq(h1->arg[17], (int64_t)(cuda_layer_buf(l, HOT_LB_AMAX) + 4 * HOT_AMAX_HLA_G));
  ck_assert_int_eq(h1->arg[18], 0);
  in_scratch(l, h1->arg[14], ref_hla_g_bytes(pl));
  /* GEMM g_x: A = q_g', B = q_w', row_scale = s_g, alpha_a = s_w, div = b */
  ck_assert_int_eq(mx->arg[0], g1->arg[6]);
  ck_assert_int_eq(mx->arg[1], w1->arg[6]);
  ck_assert_int_eq(mx->arg[2], (int64_t)gx);
  ck_assert_int_eq(mx->arg[3], g1->arg[8]);
  ck_assert_int_eq(mx->arg[4], w1->arg[8]);
  ck_assert_int_eq(mx->arg[5], 0);
  ck_assert(mx->farg[6] == (float)pl->hq.block);
  /* GEMM g_w: A = q_g^, B = q_x^ (unpacked from the saved codes), alpha_a = s_g^, alpha_b =
   * s_x^ (saved), div = p */
  ck_assert_int_eq(mw->arg[0], h1->arg[14]);
  ck_assert_int_eq(mw->arg[1], qx);
  ck_assert_int_eq(mw->arg[2], (int64_t)gw);
  ck_assert_int_eq(mw->arg[3], 0);
  ck_assert_int_eq(mw->arg[4], h1->arg[16]);
  ck_assert_int_eq(mw->arg[5], (int64_t)sv + xb);
  ck_assert(mw->farg[6] == (float)pl->hla.block);
  ck_assert_int_eq(mw->arg[7], O);
  ck_assert_int_eq(b->arg[0], (int64_t)gy);
  ck_assert_int_eq(b->arg[1], (int64_t)gb);

  /* calibrate: memset ; lqs 0, 1, 2 (plan's grid) ; sync ; read back -> per row */
  g_reset();
  g_set_lqs(3.0, 1.25, 1);
  ck_assert_int_eq(hot_layer_calibrate(l, vp(gy), HOT_DT_F32, 9, NULL), HOT_OK);
  ck_assert_int_eq(g_log->n, 4);
  m = at(0, "memset32", -1, 0);
  ck_assert_int_eq(m->arg[0], (int64_t)cuda_layer_buf(l, HOT_LB_AMAX)); /* every amax word */
  ck_assert_int_eq(m->arg[1], kd_amax_bytes(pl) / 4); /* the B per-sample ones among them */
  for (int ph = 0; ph < 3; ++ph) {
    const fake_cuda_launch *q = at(1 + ph, "hot_lqs_", 10, ph);
    plan_grid(q, pl, HOT_K_LQS);
    ck_assert_int_eq(q->arg[0], (int64_t)gy);
    ck_assert_int_eq(q->arg[1], T);
    ck_assert_int_eq(q->arg[2], O);
    ck_assert_int_eq(q->arg[3], O);
    ck_assert_int_eq(q->arg[4], m->arg[0] + 4 * HOT_AMAX_WORDS); /* the B per-sample words */
    ck_assert_int_eq(q->arg[5], pl->L); /* groups of one sample */
    in_scratch(l, q->arg[6], T * 4);
    in_scratch(l, q->arg[7], 2 * ((T * O + 1023) / 1024) * 8);
    in_scratch(l, q->arg[8], 16);
    in_scratch(l, q->arg[9], 4);
    ck_assert_int_eq(q->arg[12], pl->layer_id * 16 + HOT_TENSOR_LQS);
    ck_assert_int_eq(q->arg[13], 9);
  }
  ck_assert_int_ge(g_log->syncs, 1);
  hot_layer_info info;
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq(info.gran, HOT_GRAN_ROW);
  ck_assert(info.lqs_e_tensor == 3.0 && info.lqs_e_token == 1.25);
  ck_assert_int_eq(info.calibrated, 1);

  /* per row: g' in one phase-2 launch; through the layer's own buffer */
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_ne((int64_t)cuda_layer_of(l)->saved, 0);
  { /* the layer allocates exactly what it and the plan report: I rows of K codes + s_x^ */
    fake_cuda_alloc_size_fn asz = (fake_cuda_alloc_size_fn)dlsym(
        dlopen(HOT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD), "fake_cuda_alloc_size");
    ck_assert_ptr_nonnull(asz);
    ck_assert_uint_eq(asz((uintptr_t)cuda_layer_of(l)->saved), hot_layer_saved_bytes(l));
    ck_assert_int_eq((int64_t)hot_layer_saved_bytes(l), pl->abc.bytes);
    ck_assert_int_eq(pl->abc.bytes, plan_buffer_bytes(pl, HOT_BUF_SAVED));
    ck_assert_int_eq(pl->abc.bytes, sx_off(pl) + 4);
  }
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw), NULL, 8,
                                      NULL), HOT_OK);
  /* memset, hq_g 2, hq_w 0/1, hla_g 0/1, abc_unpack, 2 GEMMs; no bias */
  ck_assert_int_eq(g_log->n, 9);
  at(1, "hot_hq_g_", 13, 2);
  at(2, "hot_hq_w_", 13, 0);
  mw = at(8, "hot_gemm_", -1, 0);
  ck_assert_int_eq(mw->arg[1], unpack_at(6, l, cuda_layer_of(l)->saved, &up));
  ck_assert_int_eq(mw->arg[5], (int64_t)cuda_layer_of(l)->saved + xb);

  /* a calibration that picks the coarse candidate: per sample (B = 3); then the backward runs
   * g' per sample; an invalid choice is an internal error */
  g_set_lqs(1.0, 0.75, 0);
  ck_assert_int_eq(hot_layer_calibrate(l, vp(gy), HOT_DT_F32, 10, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq(info.gran, HOT_GRAN_SAMPLE);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw), NULL, 8,
                                      NULL), HOT_OK);
  ck_assert_int_eq(at(1, "hot_hq_g_", 13, 0)->arg[10], pl->L);
  ck_assert_int_eq(at(2, "hot_hq_g_", 13, 1)->arg[9], (int64_t)(cuda_layer_buf(l, HOT_LB_AMAX) + 4 * HOT_AMAX_WORDS));
  g_set_lqs(1.0, 0.75, 7);
  ck_assert_int_eq(hot_layer_calibrate(l, vp(gy), HOT_DT_F32, 10, NULL), HOT_ERR_INTERNAL);
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq(info.gran, HOT_GRAN_SAMPLE);

  /* host memory is refused before anything is launched */
  float *hx = calloc((size_t)(T * I), 4);
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, hx, HOT_DT_F32, NULL, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "host memory"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(g_log->n, 0);
  free(hx);
  hot_stats s;
  hot_ctx_stats(ctx, &s);
  ck_assert_uint_eq(s.calibrations, 2);
  CUdeviceptr all[] = {x, w, gy, gx, gw, gb, sv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);
}
END_TEST

/* sawb.cu's arguments (0 v 1 n 2 groups 3 partials 4 amax 5 scale 6 phase) and grid: n = the
 * elements of one group (the whole math tensor per tensor; x^ per sample under paper_code:
 * plan_sawb_groups groups of K / groups rows). */
static void sawb_launch(const fake_cuda_launch *k, const hot_layer *l, hot_kernel_role role,
                        int phase, int64_t math, int64_t amax) {
  const hot_layer_plan *pl = l->plan;
  const int64_t total = role == HOT_K_SAWB_W ? pl->hq.o_pad * pl->I : pl->hla.k * pl->I;
  const int64_t g = plan_sawb_groups(pl, role), n = total / g;
  ck_assert_int_ge(g, 1);
  ck_assert_int_eq(k->arg[6], phase);
  ck_assert_int_eq(k->arg[0], math);
  ck_assert_int_eq(k->arg[1], n);
  ck_assert_int_eq(k->arg[2], g);
  ck_assert_int_eq(k->arg[4], amax);
  in_scratch(l, k->arg[0], total * 4);
  in_scratch(l, k->arg[3], g * 2 * ((n + 1023) / 1024) * 8);
  in_scratch(l, k->arg[5], 4 * g);
  if (phase == 0) plan_grid(k, pl, role);
  else ck_assert(k->grid[0] == 1 && k->grid[1] == 1 && k->grid[2] == 1);
  ck_assert_uint_eq(k->block[0], 256);
}

/* g' per sample (spec scale = "sample"): the backward zeroes the per-tensor words and one word a
 * sample, and both g' phases take the B words after the per-tensor ones with groups of L rows. */
START_TEST(per_sample_sequence) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "ps", 137, 100);
  s.hq.g.gran = HOT_GRAN_SAMPLE;
  hot_layer *l = NULL;
  ck_assert_msg(hot_layer_create(ctx, &s, 3, 197, HOT_RECIPE_HOT, &l) == HOT_OK, "%s",
                hot_errmsg(ctx));
  ck_assert_msg(hot_layer_compile(l) == HOT_OK, "%s", hot_errmsg(ctx));
  const hot_layer_plan *pl = l->plan;
  hot_layer_info info;
  ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
  ck_assert_int_eq(info.gran, HOT_GRAN_SAMPLE);
  ck_assert_int_eq(info.gran_auto, 0);
  int64_t T = pl->T, O = pl->O, I = pl->I;
  size_t nb = hot_layer_saved_bytes(l);
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), sv = dalloc(nb);
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL,
                                      3, NULL), HOT_OK);
  const fake_cuda_launch *m = at(0, "memset32", -1, 0);
  ck_assert_int_eq(m->arg[0], (int64_t)cuda_layer_buf(l, HOT_LB_AMAX));
  ck_assert_int_eq(m->arg[1], HOT_AMAX_WORDS + pl->B);
  in_scratch(l, m->arg[0], (HOT_AMAX_WORDS + pl->B) * 4);
  const fake_cuda_launch *g0 = at(1, "hot_hq_g_", 13, 0), *g1 = at(2, "hot_hq_g_", 13, 1);
  for (int i = 0; i < 2; ++i) {
    const fake_cuda_launch *g = i ? g1 : g0;
    ck_assert_int_eq(g->arg[9], (int64_t)(cuda_layer_buf(l, HOT_LB_AMAX) + 4 * HOT_AMAX_WORDS));
    ck_assert_int_eq(g->arg[10], pl->L);
    plan_grid(g, pl, HOT_K_HQ_G);
  }
  ck_assert_int_eq(at(3, "hot_hq_w_", 13, 0)->arg[10], pl->O); /* w': one group */
  CUdeviceptr all[] = {x, w, gy, gx, gw, sv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);
}
END_TEST

/* HLA scale groups: layout sample (L = 197: padded segments), x^ per sample and g^ per tensor,
 * groups = B = 3. The save zeroes one amax word a group and both x^ phases get the plan's group
 * arguments with per_sample = 1; the saved buffer ends with the 3 scales of x^; g^ gets the same
 * groups with per_sample = 0 (one amax word, its scale repeated) in the backward. */
START_TEST(hla_groups_sequence) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "hg", 137, 100);
  s.hla.layout = HOT_LAYOUT_SAMPLE;
  s.hla.x.gran = HOT_GRAN_AUTO; /* per sample under layout sample */
  s.hla.g.gran = HOT_GRAN_TENSOR;
  hot_layer *l = NULL;
  ck_assert_msg(hot_layer_create(ctx, &s, 3, 197, HOT_RECIPE_HOT, &l) == HOT_OK, "%s",
                hot_errmsg(ctx));
  ck_assert_msg(hot_layer_compile(l) == HOT_OK, "%s", hot_errmsg(ctx));
  const hot_layer_plan *pl = l->plan;
  ck_assert_int_eq(pl->hla.groups, 3);
  ck_assert(pl->hla.x.gran == HOT_GRAN_SAMPLE && pl->hla.g.gran == HOT_GRAN_TENSOR);
  ck_assert_int_gt(pl->hla.group_k_pad, pl->hla.group_k);
  int64_t T = pl->T, O = pl->O, I = pl->I, xb = sx_off(pl);
  size_t nb = hot_layer_saved_bytes(l);
  ck_assert_int_eq((int64_t)nb, xb + 4 * pl->hla.groups);
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), sv = dalloc(nb);
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  const fake_cuda_launch *m = at(0, "memset32", -1, 0);
  ck_assert_int_eq(m->arg[1], kd_amax_bytes(pl) / 4); /* every amax word: x^'s, one a group */
  ck_assert_int_ge(kd_amax_bytes(pl) - kd_amax_hla(pl, 0), 4 * pl->hla.groups);
  const int gap = save_gap(pl, 1, sv);
  for (int ph = 0; ph < 2; ++ph) {
    const fake_cuda_launch *k = at(1 + gap + ph, "hot_hla_x_", 20, ph);
    hla_args(k, l, 0, x);
    ck_assert_int_eq(k->arg[13], 1);
    ck_assert_int_eq(k->arg[16], (int64_t)sv + xb); /* the groups' scales after the codes */
    ck_assert_int_eq(k->arg[17], m->arg[0] + kd_amax_hla(pl, 0));
    in_scratch(l, k->arg[17], 4 * pl->hla.groups);
  }
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL,
                                      3, NULL), HOT_OK);
  int seen = 0, unpacked = 0;
  for (int i = 0; i < g_log->n; ++i) {
    const fake_cuda_launch *k = &g_log->l[i];
    if (!strcmp(k->name, "hot_abc_unpack")) { /* the segmented GEMM's layout: groups padded */
      int up = 0;
      ck_assert_int_eq(unpack_at(i, l, sv, &up), (int64_t)cuda_layer_buf(l, HOT_LB_Q_HX));
      ck_assert_int_eq(g_log->l[i + 2].arg[1], (int64_t)cuda_layer_buf(l, HOT_LB_Q_HX)); /* gemm_gw */
      unpacked += up;
    }
    if (strncmp(k->name, "hot_hla_g_", 10)) continue;
    hla_args(k, l, 1, gy);
    ck_assert_int_eq(k->arg[13], 0);
    ck_assert_int_eq(k->arg[20], seen++);
  }
  ck_assert_int_eq(seen, 2);
  ck_assert_int_eq(unpacked, 1);
  CUdeviceptr all[] = {x, w, gy, gx, gw, sv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);
}
END_TEST

START_TEST(paper_code_sawb_sequence) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer *l = layer(ctx, HOT_RECIPE_PAPER_CODE, "pc");
  const hot_layer_plan *pl = l->plan;
  ck_assert_int_eq(pl->hla.block, 1);
  ck_assert_int_ge(plan_kernel_index(pl, HOT_K_SAWB_W), 0);
  ck_assert_int_ge(plan_kernel_index(pl, HOT_K_SAWB_X), 0);
  int64_t T = pl->T, O = pl->O, I = pl->I, xb = sx_off(pl);
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), sv = dalloc(hot_layer_saved_bytes(l));

  /* save: memset ; [memset(gap)] ; hla_x 0 (math_out) ; sawb_x 0 ; sawb_x 1 (one block) ;
   * hla_x 1 (scale_in) */
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  const fake_cuda_launch *m = at(0, "memset32", -1, 0);
  const int gap = save_gap(pl, 1, sv);
  ck_assert_int_eq(g_log->n, 5 + gap);
  const fake_cuda_launch *h0 = at(1 + gap, "hot_hla_x_", 20, 0),
                         *s0 = at(2 + gap, "hot_sawb_k8", 6, 0),
                         *s1 = at(3 + gap, "hot_sawb_k8", 6, 1),
                         *h1 = at(4 + gap, "hot_hla_x_", 20, 1);
  hla_args(h0, l, 0, x);
  hla_args(h1, l, 0, x);
  plan_grid(h0, pl, HOT_K_ABC_X);
  ck_assert_int_ne(h0->arg[19], 0);
  ck_assert_int_eq(h0->arg[18], 0);
  sawb_launch(s0, l, HOT_K_SAWB_X, 0, h0->arg[19], m->arg[0] + kd_amax_hla(pl, 0));
  sawb_launch(s1, l, HOT_K_SAWB_X, 1, h0->arg[19], m->arg[0] + kd_amax_hla(pl, 0));
  ck_assert_int_eq(s0->arg[5], s1->arg[5]);
  ck_assert_int_eq(h1->arg[18], s1->arg[5]); /* scale_in = the SAWB scale */
  ck_assert_int_eq(h1->arg[19], 0);
  ck_assert_int_eq(h1->arg[16], (int64_t)sv + xb);
  ck_assert_int_ne(h1->arg[18], h1->arg[16]); /* read and written scales are distinct words */

  /* backward: ... hq_w 0 (math_out) ; sawb_w 0 ; sawb_w 1 ; hq_w 1 (scale_in) ... */
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL, 3,
                                      NULL), HOT_OK);
  int up = 0;
  unpack_at(9, l, sv, &up); /* paper_code: the samples' runs of L codes padded per group */
  ck_assert_int_eq(up, 1);
  ck_assert_int_eq(g_log->n, 12);
  at(1, "hot_hq_g_", 13, 0);
  at(2, "hot_hq_g_", 13, 1);
  const fake_cuda_launch *w0 = at(3, "hot_hq_w_", 13, 0), *t0 = at(4, "hot_sawb_k4", 6, 0),
                         *t1 = at(5, "hot_sawb_k4", 6, 1), *w1 = at(6, "hot_hq_w_", 13, 1);
  at(7, "hot_hla_g_", 20, 0);
  at(8, "hot_hla_g_", 20, 1);
  const fake_cuda_launch *mx = at(10, "hot_gemm_", -1, 0);
  at(11, "hot_gemm_", -1, 0);
  ck_assert_int_ne(w0->arg[12], 0);
  ck_assert_int_eq(w0->arg[11], 0);
  sawb_launch(t0, l, HOT_K_SAWB_W, 0, w0->arg[12], w0->arg[9]);
  sawb_launch(t1, l, HOT_K_SAWB_W, 1, w0->arg[12], w0->arg[9]);
  ck_assert_int_eq(w1->arg[11], t1->arg[5]);
  ck_assert_int_eq(w1->arg[12], 0);
  ck_assert_int_ne(w1->arg[11], w1->arg[8]);
  ck_assert_int_eq(mx->arg[4], w1->arg[8]); /* the GEMM reads s_w as written by phase 1 */
  ck_assert(mx->farg[6] == (float)pl->hq.block);
  CUdeviceptr all[] = {x, w, gy, gx, gw, sv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);
}
END_TEST

START_TEST(refusals) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "nohq", 64, 32);
  s.hq.enabled = 0;
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &l), HOT_OK);
  CUdeviceptr x = dalloc(128 * 64 * 4), w = dalloc(32 * 64 * 4), gy = dalloc(128 * 32 * 4),
              gx = dalloc(128 * 64 * 4), gw = dalloc(32 * 64 * 4);
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw), NULL, 0,
                                      NULL), HOT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(hot_errmsg(ctx), "g_x without HQ"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(g_log->n, 0);
  s.hq.enabled = 1;
  s.abc.enabled = 0;
  snprintf(s.name, sizeof s.name, "noabc");
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &l), HOT_OK);
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(hot_errmsg(ctx), "without ABC"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(g_log->n, 0);
  CUdeviceptr all[] = {x, w, gy, gx, gw};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);
}
END_TEST

/* Each kernel launch of the last call (memsets excluded) by its name's prefix, in order, against
 * want (NULL-terminated prefixes). */
static void launches_are(const char *const *want, const char *what) {
  int j = 0;
  for (int i = 0; i < g_log->n; ++i) {
    const char *nm = g_log->l[i].name;
    if (!strcmp(nm, "memset32")) continue;
    ck_assert_msg(want[j] != NULL, "%s: launch %d (%s) not expected", what, i, nm);
    ck_assert_msg(!strncmp(nm, want[j], strlen(want[j])), "%s: launch %d is %s, expected %s*", what,
                  i, nm, want[j]);
    ++j;
  }
  ck_assert_msg(want[j] == NULL, "%s: %s* not launched", what, want[j]);
}

/* hot_layer_backward with only some outputs (hot.h: a NULL output is not computed): the
 * launches of the others are not made, the saved activations are needed only for g_w (a layer
 * never saved runs g_x and g_b), and the features a skipped output would need are not asked
 * for (no HQ: g_w and g_b run, g_x is refused). */
START_TEST(output_subsets_sequence) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "fc");
  const hot_layer_plan *pl = l->plan;
  const int64_t T = pl->T, O = pl->O, I = pl->I;
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), gb = dalloc((size_t)O * 4);
  const char *const gx_b[] = {"hot_hq_g_", "hot_hq_g_", "hot_hq_w_", "hot_hq_w_", "hot_gemm_",
                              "hot_bias_", NULL};
  const char *const gx_only[] = {"hot_hq_g_", "hot_hq_g_", "hot_hq_w_", "hot_hq_w_", "hot_gemm_",
                                 NULL};
  const char *const gb_only[] = {"hot_bias_", NULL};
  /* no save yet: g_x and g_b run (the save is read only for g_w), g_w is refused */
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), NULL, vp(gb), 3,
                                      NULL), HOT_OK);
  launches_are(gx_b, "g_x, g_b before a save");
  ck_assert_int_eq(at(5, "hot_gemm_", -1, 0)->arg[2], (int64_t)gx);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), NULL, NULL, 3,
                                      NULL), HOT_OK);
  launches_are(gx_only, "g_x alone");
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, NULL, NULL, vp(gb), 3,
                                      NULL), HOT_OK);
  launches_are(gb_only, "g_b alone");
  /* w is read for g_x only: without g_x, a w that is not 16-byte aligned (a weight that is a
   * view into a larger tensor) is not refused; with g_x it is */
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w + 4), HOT_DT_F32, NULL, NULL, NULL, vp(gb),
                                      3, NULL), HOT_OK);
  launches_are(gb_only, "g_b alone, w not aligned");
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w + 4), HOT_DT_F32, NULL, vp(gx), NULL, NULL,
                                      3, NULL), HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "w (") && strstr(hot_errmsg(ctx), "aligned"), "%s",
                hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, NULL, vp(gw), NULL, 3,
                                      NULL), HOT_ERR_MISUSE);
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, NULL, NULL, NULL, 3,
                                      NULL), HOT_ERR_INVALID);
  /* after a save: g_w alone is HLA, [abc_unpack,] the g_w GEMM */
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, NULL, vp(gw), NULL, 3,
                                      NULL), HOT_OK);
  const int up = plan_saved_unpacked(pl);
  const char *const gw_only[] = {"hot_hla_g_", "hot_hla_g_", up ? "hot_abc_unpack" : "hot_gemm_",
                                 up ? "hot_gemm_" : NULL, NULL};
  launches_are(gw_only, "g_w alone");
  ck_assert_int_eq(at(g_log->n - 1, "hot_gemm_", -1, 0)->arg[2], (int64_t)gw);

  /* no HQ: g_w and g_b run on the device; g_x (an fp32 product) only on the CPU backend */
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "nohq", 64, 32);
  s.hq.enabled = 0;
  hot_layer *n = NULL;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 2, 64, HOT_RECIPE_HOT, &n), HOT_OK);
  ck_assert_int_eq(hot_layer_save(n, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(n, vp(gy), vp(w), HOT_DT_F32, NULL, NULL, vp(gw), vp(gb), 3,
                                      NULL), HOT_OK);
  for (int i = 0; i < g_log->n; ++i)
    ck_assert_msg(strncmp(g_log->l[i].name, "hot_hq_", 7), "no HQ kernel: %s", g_log->l[i].name);
  ck_assert_int_eq(hot_layer_backward(n, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), NULL, NULL, 3,
                                      NULL), HOT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(hot_errmsg(ctx), "g_x without HQ"), "%s", hot_errmsg(ctx));
  CUdeviceptr all[] = {x, w, gy, gx, gw, gb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);
}
END_TEST

/* The phase argument of a recorded launch, by the template's argument list (0: no phases). */
static int64_t rec_phase(const fake_cuda_launch *l) {
  if (!strncmp(l->name, "hot_hq_", 7)) return l->arg[13];
  if (!strncmp(l->name, "hot_hla_", 8)) return l->arg[20];
  if (!strncmp(l->name, "hot_lqs_", 8)) return l->arg[10];
  if (!strncmp(l->name, "hot_sawb_", 9)) return l->arg[6];
  return 0;
}

/* hot_layer_kernel_times against the fake's record of the last call: one entry per kernel
 * launch (memsets excluded), same names and phases, the plan's roles, the fake's 0.01 ms. */
static void times_match_log(const hot_layer *l, int expect_n) {
  hot_kernel_time t[HOT_MAX_KERNEL_TIMES];
  int n = -1;
  ck_assert_int_eq(hot_layer_kernel_times(l, t, HOT_MAX_KERNEL_TIMES, &n), HOT_OK);
  ck_assert_int_eq(n, expect_n);
  const hot_layer_plan *pl = hot_layer_get_plan(l);
  int j = 0;
  for (int i = 0; i < g_log->n; ++i) {
    const fake_cuda_launch *rec = &g_log->l[i];
    if (!strcmp(rec->name, "memset32")) continue;
    ck_assert_msg(j < n, "launch %d (%s) has no time", i, rec->name);
    ck_assert_str_eq(t[j].name, rec->name);
    ck_assert_int_eq(t[j].phase, rec_phase(rec));
    int k = plan_kernel_index(pl, (hot_kernel_role)t[j].role);
    ck_assert_int_ge(k, 0);
    ck_assert_str_eq(pl->kernels[k].name, rec->name);
    ck_assert_msg(t[j].ms > 0.0099 && t[j].ms < 0.0101, "%s: %g ms", t[j].name, t[j].ms);
    ++j;
  }
  ck_assert_int_eq(j, n);
}

START_TEST(profiling) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "fc");
  const hot_layer_plan *pl = l->plan;
  int64_t T = pl->T, O = pl->O, I = pl->I;
  size_t nb = hot_layer_saved_bytes(l);
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), gb = dalloc((size_t)O * 4), sv = dalloc(nb);
  hot_kernel_time t[HOT_MAX_KERNEL_TIMES];
  int n = -1;

  /* off (the default): no event created or recorded, no synchronisation, no times */
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), vp(gb),
                                      1, NULL), HOT_OK);
  /* save: memset, memset(gap), hla_x 0/1; backward: memset, 9 launches + abc_unpack */
  ck_assert_int_eq(g_log->n, 15);
  ck_assert_int_eq(g_log->events_created, 0);
  ck_assert_int_eq(g_log->events_recorded, 0);
  ck_assert_int_eq(g_log->syncs, 0);
  ck_assert_int_eq(hot_layer_kernel_times(l, t, HOT_MAX_KERNEL_TIMES, &n), HOT_OK);
  ck_assert_int_eq(n, 0);

  /* on: a backward times each of its 10 launches (not the memset), in the recorded order */
  ck_assert_int_eq(hot_ctx_set_profiling(ctx, 1), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), vp(gb),
                                      2, NULL), HOT_OK);
  ck_assert_int_eq(g_log->n, 11);
  times_match_log(l, 10);
  ck_assert_int_eq(g_log->events_created, 20);
  ck_assert_int_eq(g_log->events_recorded, 20);
  ck_assert_int_eq(g_log->syncs, 1); /* profiling serialises: one sync at the call's end */
  n = -1;
  ck_assert_int_eq(hot_layer_kernel_times(l, NULL, 0, &n), HOT_OK); /* the count only */
  ck_assert_int_eq(n, 10);
  memset(t, 0, sizeof t);
  ck_assert_int_eq(hot_layer_kernel_times(l, t, 2, &n), HOT_OK);
  ck_assert_int_eq(n, 10);
  ck_assert_int_eq(t[0].role, HOT_K_HQ_G);
  ck_assert_int_eq(t[0].phase, 0);
  ck_assert_int_eq(t[1].role, HOT_K_HQ_G);
  ck_assert_int_eq(t[1].phase, 1);
  ck_assert_ptr_null(t[2].name); /* only max entries written */

  /* a second call reuses the layer's events; a save replaces the times (abc_x phases 0, 1) */
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL,
                                      3, NULL), HOT_OK);
  times_match_log(l, 9);
  ck_assert_int_eq(g_log->events_created, 0);
  ck_assert_int_eq(g_log->events_recorded, 18);
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  times_match_log(l, 2);
  ck_assert_int_eq(g_log->events_created, 0);

  /* a failed call leaves no times (the layer's own buffer was never saved) */
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw), NULL, 4,
                                      NULL), HOT_ERR_MISUSE);
  ck_assert_int_eq(hot_layer_kernel_times(l, t, HOT_MAX_KERNEL_TIMES, &n), HOT_OK);
  ck_assert_int_eq(n, 0);

  /* off again: nothing recorded, no times */
  ck_assert_int_eq(hot_ctx_set_profiling(ctx, 0), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL,
                                      5, NULL), HOT_OK);
  ck_assert_int_eq(g_log->events_recorded, 0);
  ck_assert_int_eq(g_log->syncs, 0);
  ck_assert_int_eq(hot_layer_kernel_times(l, t, HOT_MAX_KERNEL_TIMES, &n), HOT_OK);
  ck_assert_int_eq(n, 0);

  /* argument errors; the events are destroyed with the layer; a destroyed layer is refused */
  ck_assert_int_eq(hot_layer_kernel_times(l, t, HOT_MAX_KERNEL_TIMES, NULL), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_kernel_times(l, NULL, 1, &n), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_kernel_times(l, t, -1, &n), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_layer_kernel_times(NULL, t, 1, &n), HOT_ERR_INVALID);
  ck_assert_int_eq(hot_ctx_set_profiling(NULL, 1), HOT_ERR_INVALID);
  /* a CUDA context has no CPU threads: refused by name, read as 0 */
  ck_assert_int_eq(hot_ctx_set_cpu_threads(ctx, 2), HOT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(ctx), "hot_ctx_set_cpu_threads: this context runs on a GPU"));
  int pinned = -1;
  ck_assert_int_eq(hot_ctx_cpu_threads(ctx, &pinned), 0);
  ck_assert_int_eq(pinned, 0);
  g_reset();
  hot_layer_destroy(l);
  ck_assert_int_eq(g_log->events_destroyed, 20);
  ck_assert_int_eq(hot_layer_kernel_times(l, t, HOT_MAX_KERNEL_TIMES, &n), HOT_ERR_MISUSE);
  CUdeviceptr all[] = {x, w, gy, gx, gw, gb, sv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);

  /* the CPU backend refuses, saying why */
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  o.disk_cache = -1;
  hot_ctx *cpu = NULL;
  ck_assert_int_eq(hot_ctx_create(&cpu, &o), HOT_OK);
  ck_assert_int_eq(hot_ctx_set_profiling(cpu, 1), HOT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(cpu), "CUDA backend"));
  ck_assert_int_eq(hot_ctx_set_profiling(cpu, 0), HOT_OK);
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "cpu", 64, 32);
  hot_layer *c = NULL;
  ck_assert_int_eq(hot_layer_create(cpu, &s, 1, 16, HOT_RECIPE_HOT, &c), HOT_OK);
  ck_assert_int_eq(hot_layer_kernel_times(c, t, HOT_MAX_KERNEL_TIMES, &n), HOT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(hot_errmsg(cpu), "CUDA backend"));
  hot_ctx_destroy(cpu);
}
END_TEST

/* sm_90a (options.arch): both GEMMs are the wgmma kernels (templates/gemm_wgmma.cu) with the
 * plan's geometry — two warpgroups, 132096 bytes of dynamic shared memory (the module raises the
 * function's limit for it) — and the same arguments as the mma.sync path. */
START_TEST(wgmma_gemms) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CUDA;
  o.disk_cache = -1;
  o.arch = "sm_90a";
  hot_ctx *ctx = NULL;
  g_reset();
  ck_assert_msg(ctx_create_with_compiler(&ctx, &o, &g_cc) == HOT_OK, "%s", hot_errmsg(ctx));
  hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "fc");
  const hot_layer_plan *pl = l->plan;
  ck_assert_int_eq(pl->arch, HOT_ARCH_SM90A);
  int64_t T = pl->T, O = pl->O, I = pl->I;
  size_t nb = hot_layer_saved_bytes(l);
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), sv = dalloc(nb);
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL,
                                      3, NULL), HOT_OK);
  /* memset, hq_g x2, hq_w x2, hla_g x2, abc_unpack (k_pad: K to 128), two GEMMs (no bias) */
  int up = 0;
  const int64_t qx = unpack_at(7, l, sv, &up);
  ck_assert_int_eq(up, 1);
  ck_assert_int_eq(g_log->n, 10);
  ck_assert_int_ge(g_log->dyn_smem_max, 132096); /* raised at the GEMMs' first launch */
  const fake_cuda_launch *mx = at(8, "hot_gemm_wgmma_s8_", -1, 0);
  const fake_cuda_launch *mw = at(9, "hot_gemm_wgmma_s8_", -1, 0);
  ck_assert_int_eq(mw->arg[1], qx);
  plan_grid(mx, pl, HOT_K_GEMM_GX);
  plan_grid(mw, pl, HOT_K_GEMM_GW);
  ck_assert_uint_eq(mx->block[0], 256);
  ck_assert_uint_eq(mx->smem, pl->hq.gemm.smem);
  ck_assert_uint_eq(mx->smem, 132096);
  ck_assert_uint_eq(mw->smem, pl->hla.gemm.smem);
  ck_assert_int_eq(mx->arg[2], (int64_t)gx);
  ck_assert_int_eq(mx->arg[7], T);
  ck_assert_int_eq(mx->arg[8], I);
  ck_assert_int_eq(mx->arg[9], pl->hq.gemm.k_pad);
  ck_assert_int_eq(pl->hq.gemm.k_pad % 128, 0);
  ck_assert_int_eq(mw->arg[2], (int64_t)gw);
  ck_assert_int_eq(mw->arg[9], pl->hla.gemm.k_pad);
  ck_assert_int_eq(pl->hla.gemm.k_pad % 128, 0);
  hot_ctx_destroy(ctx);
}
END_TEST


/* The tensor map record of a TMA launch's argument i: encoded by the fake, accepted, and with the
 * layout templates/gemm_tma.cu documents (uint8, rank 2, {Kpad, rows}, stride Kpad, box {128,
 * tile rows}, element strides 1, no interleave, 128B swizzle, L2 256B, zero fill). */
static void tma_map(const fake_cuda_launch *l, int i, int64_t addr, int64_t kpad, int64_t rows,
                    int box_rows) {
  ck_assert_msg(l->arg[i] >= 0 && l->arg[i] < g_log->n_tmaps, "%s: argument %d is not a map the "
                "driver encoded (%lld)", l->name, i, (long long)l->arg[i]);
  const fake_cuda_tmap *t = &g_log->tmaps[l->arg[i]];
  ck_assert_int_eq(t->refused, 0);
  ck_assert_int_eq(t->data_type, CU_TENSOR_MAP_DATA_TYPE_UINT8);
  ck_assert_uint_eq(t->rank, 2);
  ck_assert_int_eq((int64_t)t->addr, addr);
  ck_assert_int_eq((int64_t)t->dims[0], kpad);
  ck_assert_int_eq((int64_t)t->dims[1], rows);
  ck_assert_int_eq((int64_t)t->strides[0], kpad);
  ck_assert_uint_eq(t->box[0], 128);
  ck_assert_uint_eq(t->box[1], (unsigned)box_rows);
  ck_assert_uint_eq(t->elem[0], 1);
  ck_assert_uint_eq(t->elem[1], 1);
  ck_assert_int_eq(t->interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
  ck_assert_int_eq(t->swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  ck_assert_int_eq(t->l2, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  ck_assert_int_eq(t->oob, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* sm_90a with tile warps_n = 2: both GEMMs on the TMA path (templates/gemm_tma.cu): a producer
 * warpgroup plus the consumers (384 threads at tile_m 128), a persistent grid of min(tiles, SM
 * count = 132 in the fake), the plan's shared memory, the twelve arguments of the wgmma path and
 * two tensor maps by value, encoded by cuTensorMapEncodeTiled over the operands (the fake's
 * encoder refuses what the driver documents as invalid). */
START_TEST(tma_gemms) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CUDA;
  o.disk_cache = -1;
  o.arch = "sm_90a";
  hot_ctx *ctx = NULL;
  g_reset();
  ck_assert_msg(ctx_create_with_compiler(&ctx, &o, &g_cc) == HOT_OK, "%s", hot_errmsg(ctx));
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "tma", 4096, 100);
  s.tile_gx.warps_n = 2;
  s.tile_gw.warps_n = 2;
  hot_layer *l = NULL;
  ck_assert_msg(hot_layer_create(ctx, &s, 3, 197, HOT_RECIPE_HOT, &l) == HOT_OK, "%s",
                hot_errmsg(ctx));
  ck_assert_msg(hot_layer_compile(l) == HOT_OK, "%s", hot_errmsg(ctx));
  const hot_layer_plan *pl = l->plan;
  ck_assert_int_eq(pl->hq.gemm.path, HOT_GEMM_TMA_S8);
  ck_assert_int_eq(pl->hla.gemm.path, HOT_GEMM_TMA_S8);
  int64_t T = pl->T, O = pl->O, I = pl->I;
  size_t nb = hot_layer_saved_bytes(l);
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), sv = dalloc(nb + 64);
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL,
                                      3, NULL), HOT_OK);
  /* memset, hq_g x2, hq_w x2, hla_g x2, abc_unpack, two GEMMs (no bias) */
  int up = 0;
  const int64_t qx = unpack_at(7, l, sv, &up);
  ck_assert_int_eq(up, 1);
  ck_assert_int_eq(g_log->n, 10);
  ck_assert_int_eq(g_log->n_tmaps, 4); /* A and B of each GEMM, encoded per launch */
  const fake_cuda_launch *mx = at(8, "hot_gemm_tma_s8_", -1, 0);
  const fake_cuda_launch *mw = at(9, "hot_gemm_tma_s8_", -1, 0);
  const hot_kernel_plan *kx = &pl->kernels[plan_kernel_index(pl, HOT_K_GEMM_GX)];
  const hot_kernel_plan *kw = &pl->kernels[plan_kernel_index(pl, HOT_K_GEMM_GW)];
  ck_assert_str_eq(mx->name, kx->name);
  ck_assert_str_eq(mw->name, kw->name);
  ck_assert_int_eq(kx->persistent, 1);
  const hot_gemm_plan *g = &pl->hq.gemm;
  const int64_t tiles_x = ((T + g->tile_m - 1) / g->tile_m) * ((I + g->tile_n - 1) / g->tile_n);
  ck_assert_int_gt(tiles_x, 132); /* more tiles than SMs: the grid is the SM count */
  ck_assert_uint_eq(kx->grid[0], (unsigned)tiles_x);
  ck_assert_uint_eq(mx->grid[0], 132);
  ck_assert_uint_eq(mx->grid[1], 1);
  ck_assert_uint_eq(mw->grid[0], kw->grid[0] < 132 ? kw->grid[0] : 132);
  ck_assert_uint_eq(mx->block[0], (unsigned)(128 * (g->tile_m / 64 + 1)));
  ck_assert_uint_eq(mx->block[0], kx->block[0]);
  ck_assert_uint_eq(mx->smem, g->smem);
  ck_assert_uint_eq(mx->smem, (unsigned)(g->stages * (g->tile_m + g->tile_n) * 128 + 1152));
  ck_assert_int_ge(g_log->dyn_smem_max, (int)g->smem);
  ck_assert_int_eq(mx->arg[0], (int64_t)cuda_layer_buf(l, HOT_LB_Q_G));
  ck_assert_int_eq(mx->arg[1], (int64_t)cuda_layer_buf(l, HOT_LB_Q_W));
  ck_assert_int_eq(mx->arg[2], (int64_t)gx);
  ck_assert_int_eq(mx->arg[3], (int64_t)cuda_layer_buf(l, HOT_LB_S_G));
  ck_assert_int_eq(mx->arg[7], T);
  ck_assert_int_eq(mx->arg[8], I);
  ck_assert_int_eq(mx->arg[9], g->k_pad);
  ck_assert_int_eq(mx->arg[11], g->seg_k_pad);
  tma_map(mx, 12, (int64_t)cuda_layer_buf(l, HOT_LB_Q_G), g->k_pad, T, g->tile_m);
  tma_map(mx, 13, (int64_t)cuda_layer_buf(l, HOT_LB_Q_W), g->k_pad, I, g->tile_n);
  ck_assert_int_eq(mw->arg[0], (int64_t)cuda_layer_buf(l, HOT_LB_Q_HG));
  ck_assert_int_eq(mw->arg[1], qx); /* the unpacked codes in the workspace (16-byte aligned) */
  ck_assert_int_eq(mw->arg[2], (int64_t)gw);
  ck_assert_int_eq(mw->arg[5], (int64_t)(sv + (CUdeviceptr)sx_off(pl)));
  tma_map(mw, 12, (int64_t)cuda_layer_buf(l, HOT_LB_Q_HG), pl->hla.gemm.k_pad, O, pl->hla.gemm.tile_m);
  tma_map(mw, 13, qx, pl->hla.gemm.k_pad, I, pl->hla.gemm.tile_n);
  /* the driver table's encoder is the fake's, which refuses what the driver documents as
   * invalid: an operand that is not 16-byte aligned, a 128-byte box under the 64B swizzle */
  ck_assert_ptr_nonnull(d->cuTensorMapEncodeTiled);
  CUtensorMap m;
  const cuuint64_t dims[2] = {256, 64}, strides[1] = {256};
  const cuuint32_t box[2] = {128, 64}, elem[2] = {1, 1};
  ck_assert_int_eq(d->cuTensorMapEncodeTiled(&m, 0, 2, vp(sv + 8), dims, strides, box, elem, 0, 3,
                                             3, 0), CUDA_ERROR_INVALID_VALUE);
  ck_assert_str_eq(g_log->tmaps[g_log->n_tmaps - 1].refused_why,
                   "global address not 16-byte aligned");
  ck_assert_int_eq(d->cuTensorMapEncodeTiled(&m, 0, 2, vp(sv), dims, strides, box, elem, 0, 2, 3,
                                             0), CUDA_ERROR_INVALID_VALUE);
  ck_assert_str_eq(g_log->tmaps[g_log->n_tmaps - 1].refused_why,
                   "inner box beyond the swizzle span");
  ck_assert_int_eq(d->cuTensorMapEncodeTiled(&m, 0, 2, vp(sv), dims, strides, box, elem, 0, 3, 3,
                                             0), CUDA_SUCCESS);
  /* a map the driver refuses: the backward fails naming the kernel and the operand */
  void *h = dlopen(HOT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  fake_cuda_refuse_tmaps_fn refuse = (fake_cuda_refuse_tmaps_fn)dlsym(h, "fake_cuda_refuse_tmaps");
  ck_assert_ptr_nonnull(refuse);
  refuse(1);
  hot_status st = hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL, 4,
                                     NULL);
  refuse(0);
  ck_assert_int_ne(st, HOT_OK);
  ck_assert_msg(strstr(hot_errmsg(ctx), "layer 'tma': kernel gemm_gx: cuTensorMapEncodeTiled of "
                       "operand A (q_g')"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);
  hot_ctx_destroy(ctx);
}
END_TEST

/* Overflow of finite inputs on CUDA: the output kernels' flag words are zeroed before each
 * backward and copied back behind it without any synchronisation; a raised flag is reported
 * once, by the next call on the layer (which then does not run), by hot_layer_check, or at once
 * under profiling. */
START_TEST(overflow_flags) {
  hot_ctx *ctx = cuda_ctx();
  hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "ov");
  const hot_layer_plan *pl = l->plan;
  /* the emitted kernels that store g_x, g_w and g_b test what they store */
  const hot_kernel_role out_roles[3] = {HOT_K_GEMM_GX, HOT_K_GEMM_GW, HOT_K_BIAS};
  for (int r = 0; r < 3; ++r) {
    int k = plan_kernel_index(pl, out_roles[r]);
    ck_assert_int_ge(k, 0);
    const char *src = l->jit.source[k];
    for (int j = 0; !src && j < pl->n_kernels; ++j) /* a duplicate kernel: the first's source */
      if (!strcmp(pl->kernels[j].name, pl->kernels[k].name)) src = l->jit.source[j];
    ck_assert_ptr_nonnull(src);
    ck_assert_msg(strstr(src, "hot_range_flag") && strstr(src, "HOT_RANGE_CHECK("), "%s",
                  pl->kernels[k].name);
  }
  int64_t T = pl->T, O = pl->O, I = pl->I;
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), gb = dalloc((size_t)O * 4);
#define BACKWARD(step)                                                                            \
  hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw), vp(gb), step, NULL)
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
  g_reset();
  ck_assert_int_eq(BACKWARD(1), HOT_OK);
  ck_assert_int_eq(g_log->range_resets, 3);     /* g_x, g_w and g_b words zeroed */
  ck_assert_int_eq(g_log->untimed_recorded, 3); /* the slot's event behind the copies back, the
                                                   workspace's and the layer's lifetime event */
  ck_assert_int_eq(g_log->syncs, 0);            /* and no synchronisation */
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);

  /* an overflowing backward returns (asynchronously) OK; the next call reports it, once */
  g_raise_range(1);
  ck_assert_int_eq(BACKWARD(5), HOT_OK);
  g_raise_range(0);
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_ERR_RANGE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "step 5") && strstr(hot_errmsg(ctx), "g_x"), "%s",
                hot_errmsg(ctx));
  ck_assert_int_eq(g_log->n, 0); /* the save did not run */
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq(BACKWARD(6), HOT_OK);
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);

  /* hot_layer_check waits for it; reported once */
  g_raise_range(1);
  ck_assert_int_eq(BACKWARD(7), HOT_OK);
  g_raise_range(0);
  ck_assert_int_eq(hot_layer_check(l), HOT_ERR_RANGE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "step 7"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);
  ck_assert_int_eq(BACKWARD(8), HOT_OK);

  /* profiling synchronises anyway: the backward itself reports it */
  ck_assert_int_eq(hot_ctx_set_profiling(ctx, 1), HOT_OK);
  g_raise_range(1);
  ck_assert_int_eq(BACKWARD(9), HOT_ERR_RANGE);
  g_raise_range(0);
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);
#undef BACKWARD
  g_reset();
  hot_layer_destroy(l);
  ck_assert_int_eq(g_log->untimed_destroyed, HOT_RANGE_SLOTS + 1); /* slots + lifetime event */
  hot_ctx_destroy(ctx);
  /* the CPU backend has nothing pending */
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = 32;
  s.out_features = 16;
  ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_OK);
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);
  hot_ctx_destroy(ctx);
  ck_assert_int_eq(hot_layer_check(NULL), HOT_ERR_INVALID);
}
END_TEST

/* ---- the machine the fake reports (fake_cuda_configure before the driver is loaded) ---------- */

static fake_cuda_set_running_fn g_set_running;

/* The fake as a machine of n devices of compute capability maj.min and driver version ver; then
 * the driver table and the log (each test runs in a fresh process: the driver loads anew). */
static void boot(int n, int maj, int min, int ver) {
  void *h = dlopen(HOT_FAKE_CUDA, RTLD_NOW);
  ck_assert_ptr_nonnull(h);
  fake_cuda_configure_fn cfg = (fake_cuda_configure_fn)dlsym(h, "fake_cuda_configure");
  ck_assert_ptr_nonnull(cfg);
  cfg(n, maj, min, ver);
  setup();
  g_set_running = (fake_cuda_set_running_fn)dlsym(h, "fake_cuda_set_running");
  ck_assert_ptr_nonnull(g_set_running);
}

static hot_ctx *ctx_on(hot_backend b, int device, const char *arch, hot_status want) {
  hot_options o;
  hot_options_init(&o);
  o.backend = b;
  o.device = device;
  o.arch = arch;
  o.disk_cache = -1;
  hot_ctx *ctx = NULL;
  hot_status st = ctx_create_with_compiler(&ctx, &o, &g_cc);
  ck_assert_msg(st == want, "%s: %s", hot_status_name(st), hot_errmsg(ctx));
  return ctx;
}

/* Device memory of device `dev`: allocated with that device's primary context current. */
static CUdeviceptr dalloc_on(int dev, size_t n) {
  CUcontext c = NULL, prev = NULL;
  CUdevice dv;
  ck_assert_int_eq(d->cuDeviceGet(&dv, dev), CUDA_SUCCESS);
  ck_assert_int_eq(d->cuDevicePrimaryCtxRetain(&c, dv), CUDA_SUCCESS);
  ck_assert_int_eq(d->cuCtxPushCurrent(c), CUDA_SUCCESS);
  CUdeviceptr p = dalloc(n);
  ck_assert_int_eq(d->cuCtxPopCurrent(&prev), CUDA_SUCCESS);
  return p;
}

/* Nothing of a layer is freed while its kernels may still run: with the fake's events pending
 * ("running"), destroying a layer, or the context with a live layer, waits for the layer's event
 * (recorded after each save, backward, calibrate) before any cuMemFree / cuModuleUnload. */
START_TEST(lifetime_waits) {
  boot(1, 9, 0, 13000);
  for (int whole_ctx = 0; whole_ctx < 2; ++whole_ctx) {
    hot_ctx *ctx = cuda_ctx();
    hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "life");
    const hot_layer_plan *pl = l->plan;
    int64_t T = pl->T, O = pl->O, I = pl->I;
    CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
                gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
                gw = dalloc((size_t)(O * I) * 4), gb = dalloc((size_t)O * 4);
    g_set_running(1);
    g_reset();
    ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
    ck_assert_int_eq(hot_layer_calibrate(l, vp(gy), HOT_DT_F32, 1, NULL), HOT_OK); /* syncs */
    ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw),
                                        vp(gb), 1, NULL), HOT_OK);
    ck_assert_int_eq(g_log->event_syncs, 0); /* nothing waited for so far */
    ck_assert_int_eq(g_log->frees, 0);
    if (whole_ctx) hot_ctx_destroy(ctx);
    else hot_layer_destroy(l);
    ck_assert_int_gt(g_log->frees, 3);       /* saved buffer, scratch, modules, host words */
    ck_assert_int_ge(g_log->event_syncs, 1); /* the layer's event, waited for first */
    ck_assert_int_eq(g_log->frees_while_running, 0);
    g_set_running(0);
    if (!whole_ctx) hot_ctx_destroy(ctx);
    CUdeviceptr all[] = {x, w, gy, gx, gw, gb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  }
  /* a layer that never ran has nothing to wait for */
  hot_ctx *ctx = cuda_ctx();
  hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "idle");
  g_reset();
  hot_layer_destroy(l);
  ck_assert_int_eq(g_log->event_syncs, 0);
  hot_ctx_destroy(ctx);
}
END_TEST

/* Overflow reports survive a host running ahead: each backward's words land in a slot of their
 * own, so step 5's overflow is still reported after step 6 ran (nothing synchronised between);
 * two overflows are reported once, the first named with a count of the later ones; a 9th
 * backward in flight waits for the oldest. */
START_TEST(overflow_ring) {
  boot(1, 9, 0, 13000);
  hot_ctx *ctx = cuda_ctx();
  hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "ring");
  const hot_layer_plan *pl = l->plan;
  int64_t T = pl->T, O = pl->O, I = pl->I;
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), gb = dalloc((size_t)O * 4);
#define BACKWARD(step)                                                                            \
  hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw), vp(gb), step, NULL)
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
  g_set_running(1);
  g_raise_range(1);
  ck_assert_int_eq(BACKWARD(5), HOT_OK);
  g_raise_range(0);
  ck_assert_int_eq(BACKWARD(6), HOT_OK); /* step 5 still "running": not observed yet */
  ck_assert_int_ge(g_log->event_queries_busy, 1);
  ck_assert_int_eq(hot_layer_check(l), HOT_ERR_RANGE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "step 5") && strstr(hot_errmsg(ctx), "g_x") &&
                !strstr(hot_errmsg(ctx), "later"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_check(l), HOT_OK); /* once */

  /* two overflowing steps in flight, then a clean one: the next call reports 7 (and 1 more) */
  g_raise_range(1);
  ck_assert_int_eq(BACKWARD(7), HOT_OK);
  ck_assert_int_eq(BACKWARD(8), HOT_OK);
  g_raise_range(0);
  ck_assert_int_eq(BACKWARD(9), HOT_OK);
  g_set_running(0); /* the device catches up: the next call sees the words */
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_ERR_RANGE);
  ck_assert_int_eq(g_log->n, 0); /* the save did not run */
  ck_assert_msg(strstr(hot_errmsg(ctx), "step 7") && strstr(hot_errmsg(ctx), "1 later backward"),
                "%s", hot_errmsg(ctx));
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK); /* the refused
                                                                   save left no saved buffer */

  /* HOT_RANGE_SLOTS backwards in flight: the next one waits for the oldest slot first */
  g_set_running(1);
  for (uint32_t s = 10; s < 10 + HOT_RANGE_SLOTS; ++s) ck_assert_int_eq(BACKWARD(s), HOT_OK);
  g_reset();
  ck_assert_int_eq(BACKWARD(100), HOT_OK);
  ck_assert_int_eq(g_log->event_syncs, 1);
  /* ... and an overflow found by that wait is returned by it, without running */
  for (uint32_t s = 0; s < HOT_RANGE_SLOTS - 1; ++s) ck_assert_int_eq(BACKWARD(200 + s), HOT_OK);
  g_raise_range(1);
  ck_assert_int_eq(BACKWARD(300), HOT_OK); /* overwrites nothing: slot of its own */
  g_raise_range(0);
  for (uint32_t s = 0; s < HOT_RANGE_SLOTS - 1; ++s) ck_assert_int_eq(BACKWARD(400 + s), HOT_OK);
  g_reset();
  ck_assert_int_eq(BACKWARD(500), HOT_ERR_RANGE);
  ck_assert_msg(strstr(hot_errmsg(ctx), "step 300"), "%s", hot_errmsg(ctx));
  ck_assert_int_eq(g_log->n, 0);
  g_set_running(0);
  ck_assert_int_eq(hot_layer_check(l), HOT_OK);
#undef BACKWARD
  CUdeviceptr all[] = {x, w, gy, gx, gw, gb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  hot_ctx_destroy(ctx);
}
END_TEST

/* A context runs on one device: memory of another device is refused, naming the argument and
 * both devices, before anything is launched; the same call on the right device runs. */
START_TEST(device_ordinals) {
  boot(2, 9, 0, 13000);
  for (int dev = 0; dev < 2; ++dev) {
    hot_ctx *ctx = ctx_on(HOT_BACKEND_CUDA, dev, NULL, HOT_OK);
    hot_layer *l = layer(ctx, HOT_RECIPE_HOT, "ord");
    const hot_layer_plan *pl = l->plan;
    int64_t T = pl->T, O = pl->O, I = pl->I;
    const int other = 1 - dev;
    CUdeviceptr x = dalloc_on(dev, (size_t)(T * I) * 4), w = dalloc_on(dev, (size_t)(O * I) * 4),
                gy = dalloc_on(dev, (size_t)(T * O) * 4), gx = dalloc_on(dev, (size_t)(T * I) * 4),
                gw = dalloc_on(dev, (size_t)(O * I) * 4), gb = dalloc_on(dev, (size_t)O * 4);
    CUdeviceptr x_o = dalloc_on(other, (size_t)(T * I) * 4),
                gw_o = dalloc_on(other, (size_t)(O * I) * 4);
    g_reset();
    ck_assert_int_eq(hot_layer_save(l, vp(x_o), HOT_DT_F32, NULL, NULL), HOT_ERR_INVALID);
    char want[128];
    snprintf(want, sizeof want, "is memory of CUDA device %d, but the context runs on device %d",
             other, dev);
    ck_assert_msg(strstr(hot_errmsg(ctx), want) && strstr(hot_errmsg(ctx), "x ("), "%s",
                  hot_errmsg(ctx));
    ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, NULL, NULL), HOT_OK);
    g_reset();
    ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw_o),
                                        vp(gb), 1, NULL), HOT_ERR_INVALID);
    ck_assert_msg(strstr(hot_errmsg(ctx), "g_w (") && strstr(hot_errmsg(ctx), want), "%s",
                  hot_errmsg(ctx));
    ck_assert_int_eq(g_log->n, 0);
    ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, NULL, vp(gx), vp(gw),
                                        vp(gb), 1, NULL), HOT_OK);
    hot_ctx_destroy(ctx);
    CUdeviceptr all[] = {x, w, gy, gx, gw, gb, x_o, gw_o};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  }
}
END_TEST

/* A forced arch must run on the device: sm_XY on X.Y .. X.9, sm_90a on 9.0 only; anything else
 * fails creation with HOT_ERR_INVALID naming the option, for backend auto too. */
START_TEST(forced_arch_vs_device) {
  boot(1, 8, 0, 13000);
  hot_ctx *ctx = ctx_on(HOT_BACKEND_CUDA, 0, "sm_90a", HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "options.arch 'sm_90a' cannot run on CUDA device 0") &&
                strstr(hot_errmsg(ctx), "compute capability 8.0") &&
                strstr(hot_errmsg(ctx), "only on compute capability 9.0"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  ctx = ctx_on(HOT_BACKEND_AUTO, 0, "sm_86", HOT_ERR_INVALID); /* no silent CPU fallback */
  ck_assert_msg(strstr(hot_errmsg(ctx), "'sm_86' cannot run") &&
                strstr(hot_errmsg(ctx), "8.6 to 8.9") && strstr(hot_errmsg(ctx), "(sm_80)"),
                "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  setenv("HOT_ARCH", "sm_90", 1);
  ctx = ctx_on(HOT_BACKEND_CUDA, 0, NULL, HOT_ERR_INVALID);
  ck_assert_msg(strstr(hot_errmsg(ctx), "HOT_ARCH 'sm_90' cannot run"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  unsetenv("HOT_ARCH");
  hot_ctx_destroy(ctx_on(HOT_BACKEND_CUDA, 0, "sm_80", HOT_OK));
  /* what a device of each compute capability accepts */
  static const struct { int maj, min; const char *arch; int ok; } rule[] = {
      {8, 6, "sm_80", 1}, {8, 6, "sm_86", 1}, {8, 6, "sm_89", 0}, {8, 9, "sm_86", 1},
      {8, 9, "sm_89", 1}, {8, 9, "sm_90", 0}, {9, 0, "sm_89", 0}, {9, 0, "sm_80", 0},
      {9, 0, "sm_90", 1}, {9, 0, "sm_90a", 1}, {8, 9, "sm_90a", 0}, {12, 0, "sm_120a", 1},
      {9, 0, "sm_120a", 0}};
  void *h = dlopen(HOT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  fake_cuda_configure_fn cfg = (fake_cuda_configure_fn)dlsym(h, "fake_cuda_configure");
  for (size_t i = 0; i < sizeof rule / sizeof rule[0]; ++i) {
    cfg(1, rule[i].maj, rule[i].min, 13000);
    ctx = ctx_on(HOT_BACKEND_CUDA, 0, rule[i].arch, rule[i].ok ? HOT_OK : HOT_ERR_INVALID);
    hot_ctx_destroy(ctx);
  }
  /* a 12.x device runs hot's kernels only with sm_120a named (and 12.0 only: arch-specific) */
  static const struct { int min; const char *arch; } none[] = {{0, "sm_90"}, {1, "sm_120a"}};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; ++i) {
    cfg(1, 12, none[i].min, 13000);
    ctx = ctx_on(HOT_BACKEND_CUDA, 0, none[i].arch, HOT_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(hot_errmsg(ctx), "compute capability 12."), "%s", hot_errmsg(ctx));
    hot_ctx_destroy(ctx);
  }
}
END_TEST

/* A device hot has no kernels for (compute capability 10.x, 12.x): backend cuda refuses it
 * (HOT_ERR_UNSUPPORTED); backend auto runs the CPU but says so: a "warning: " line in hot_errmsg
 * after the successful creation, the reason in the stats. No driver at all: no warning. */
START_TEST(unsupported_device_warns) {
  boot(1, 10, 0, 13000);
  hot_ctx *ctx = ctx_on(HOT_BACKEND_CUDA, 0, NULL, HOT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(hot_errmsg(ctx), "compute capability 10.0"), "%s", hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  ctx = ctx_on(HOT_BACKEND_AUTO, 0, NULL, HOT_OK);
  ck_assert_int_eq(hot_ctx_backend(ctx), HOT_BACKEND_CPU);
  ck_assert_msg(!strncmp(hot_errmsg(ctx), "warning: ", 9) &&
                strstr(hot_errmsg(ctx), "compute capability 10.0"), "%s", hot_errmsg(ctx));
  hot_stats s;
  ck_assert_int_eq(hot_ctx_stats(ctx, &s), HOT_OK);
  ck_assert_int_eq(s.fell_back, 1);
  ck_assert_ptr_nonnull(strstr(s.fallback_reason, "10.0"));
  ck_assert_str_eq(s.device_name, "");
  ck_assert_int_eq(hot_ctx_set_profiling(ctx, 0), HOT_OK);
  ck_assert_str_eq(hot_errmsg(ctx), ""); /* cleared by the next call, as any message */
  hot_ctx_destroy(ctx);
  void *h = dlopen(HOT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ((fake_cuda_configure_fn)dlsym(h, "fake_cuda_configure"))(1, 12, 0, 13000);
  ctx = ctx_on(HOT_BACKEND_AUTO, 0, NULL, HOT_OK);
  ck_assert_msg(strstr(hot_errmsg(ctx), "warning: ") && strstr(hot_errmsg(ctx), "12.0"), "%s",
                hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  ctx = ctx_on(HOT_BACKEND_AUTO, 5, NULL, HOT_OK); /* no such device: a plain fallback */
  ck_assert_str_eq(hot_errmsg(ctx), "");
  hot_ctx_destroy(ctx);
}
END_TEST

/* Recipe nvfp4 on a compute capability 12.0 device with sm_120a named: the save and the backward
 * launch the sm_120a plan's kernels (gen/kernels/hq_nvfp4.c, hla_mxfp8.c, gemm_nvfp4.c,
 * gemm_mxfp8.c) in step order with the plan's buffers: codes then block scales in one piece
 * (templates/nvfp4_plan.h), the saved x^ written and then read in place by the g_w GEMM with its
 * E8M0 scales after the codes, the tensor amax and the non-finite flag in the amax words zeroed
 * by each call. The kernels do not run here and have not run on a GPU. */
START_TEST(nvfp4_sm120a_sequence) {
  boot(1, 12, 0, 13000);
  hot_ctx *ctx = ctx_on(HOT_BACKEND_CUDA, 0, "sm_120a", HOT_OK);
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_NVFP4);
  snprintf(s.name, sizeof s.name, "nv");
  s.in_features = 137;
  s.out_features = 250; /* o_pad 256 */
  hot_layer *l = NULL;
  ck_assert_msg(hot_layer_create(ctx, &s, 3, 70, HOT_RECIPE_NVFP4, &l) == HOT_OK, "%s",
                hot_errmsg(ctx));
  ck_assert_msg(hot_layer_compile(l) == HOT_OK, "%s", hot_errmsg(ctx));
  const hot_layer_plan *pl = l->plan;
  ck_assert_int_eq(pl->arch, HOT_ARCH_SM120A);
  const int64_t T = pl->T, O = pl->O, I = pl->I, op = pl->hq.o_pad, kp = pl->hla.gemm.k_pad;
  ck_assert_int_eq(op, 256);
  ck_assert_int_eq(kp, (pl->hla.k + 31) / 32 * 32);
  const size_t nb = hot_layer_saved_bytes(l);
  ck_assert_int_eq((int64_t)nb, I * (kp + kp / 32)); /* the CPU backend's saved layout */
  CUdeviceptr x = dalloc((size_t)(T * I) * 4), w = dalloc((size_t)(O * I) * 4),
              gy = dalloc((size_t)(T * O) * 4), gx = dalloc((size_t)(T * I) * 4),
              gw = dalloc((size_t)(O * I) * 4), sv = dalloc(nb);
  /* save: memset(amax) ; x^ phase 0 (projection into the work buffer) ; phase 1 (codes, scales) */
  g_reset();
  ck_assert_int_eq(hot_layer_save(l, vp(x), HOT_DT_F32, vp(sv), NULL), HOT_OK);
  ck_assert_int_eq(g_log->n, 3);
  const int64_t amax = (int64_t)cuda_layer_buf(l, HOT_LB_AMAX);
  const fake_cuda_launch *m = at(0, "memset32", -1, 0);
  ck_assert_int_eq(m->arg[0], amax);
  ck_assert_int_eq(m->arg[1], kd_amax_bytes(pl) / 4);
  const int64_t work = pl->hla.segments * pl->hla.seg_len * (I > O ? I : O) * 4;
  for (int ph = 0; ph < 2; ++ph) { /* src cols L B flat k_pad phase work bad codes scales .. tag */
    const fake_cuda_launch *k = at(1 + ph, "hot_hla_mxfp8_x_", 6, ph);
    plan_grid(k, pl, HOT_K_ABC_X);
    const int64_t want[] = {(int64_t)x, I, pl->L, pl->B, pl->hla.layout == HOT_LAYOUT_FLAT, kp};
    for (int i = 0; i < 6; ++i) ck_assert_int_eq(k->arg[i], want[i]);
    in_scratch(l, k->arg[7], work);
    ck_assert_int_eq(k->arg[8], amax + 4 * HOT_AMAX_BAD);
    ck_assert_int_eq(k->arg[9], (int64_t)sv);
    ck_assert_int_eq(k->arg[10], (int64_t)sv + I * kp);
    ck_assert_int_eq(k->arg[12], pl->layer_id * 16);
  }
  /* backward: memset ; g' 0, 1 ; w' 0, 1 ; g^ 0, 1 ; g_x (NVFP4) ; g_w (MXFP8, saved x^ in place) */
  g_reset();
  ck_assert_int_eq(hot_layer_backward(l, vp(gy), vp(w), HOT_DT_F32, vp(sv), vp(gx), vp(gw), NULL,
                                      5, NULL), HOT_OK);
  ck_assert_int_eq(g_log->n, 9);
  ck_assert_int_eq(at(0, "memset32", -1, 0)->arg[0], amax);
  static const char *q_name[2] = {"hot_hq_nvfp4_g_sr", "hot_hq_nvfp4_w"};
  int64_t codes[2], sc[2], st[2];
  for (int q = 0; q < 2; ++q) /* src rows O o_pad phase amax bad codes scales s_t seed tag step */
    for (int ph = 0; ph < 2; ++ph) {
      const fake_cuda_launch *k = at(1 + 2 * q + ph, q_name[q], 4, ph);
      plan_grid(k, pl, q ? HOT_K_HQ_W : HOT_K_HQ_G);
      const int64_t rows = q ? I : T;
      ck_assert_int_eq(k->arg[0], (int64_t)(q ? w : gy));
      ck_assert_int_eq(k->arg[1], rows);
      ck_assert_int_eq(k->arg[2], O);
      ck_assert_int_eq(k->arg[3], op);
      ck_assert_int_eq(k->arg[5], amax + 4 * (q ? HOT_AMAX_HQ_W : HOT_AMAX_HQ_G));
      ck_assert_int_eq(k->arg[6], amax + 4 * HOT_AMAX_BAD);
      in_scratch(l, k->arg[7], rows * (op / 2 + op / 16));
      ck_assert_int_eq(k->arg[8], k->arg[7] + rows * (op / 2));
      in_scratch(l, k->arg[9], 4);
      ck_assert_int_eq(k->arg[11], q ? 0 : pl->layer_id * 16 + HOT_TENSOR_HQ_G);
      ck_assert_int_eq(k->arg[12], 5);
      codes[q] = k->arg[7], sc[q] = k->arg[8], st[q] = k->arg[9];
    }
  int64_t qhg = 0;
  for (int ph = 0; ph < 2; ++ph) {
    const fake_cuda_launch *k = at(5 + ph, "hot_hla_mxfp8_g_sr_", 6, ph);
    plan_grid(k, pl, HOT_K_HLA_G);
    ck_assert_int_eq(k->arg[0], (int64_t)gy);
    ck_assert_int_eq(k->arg[1], O);
    in_scratch(l, k->arg[7], work);
    in_scratch(l, k->arg[9], O * (kp + kp / 32));
    ck_assert_int_eq(k->arg[10], k->arg[9] + O * kp);
    ck_assert_int_eq(k->arg[12], pl->layer_id * 16 + HOT_TENSOR_HLA_G);
    qhg = k->arg[9];
  }
  const fake_cuda_launch *mx = at(7, "hot_gemm_mma_nvfp4_", -1, 0);
  plan_grid(mx, pl, HOT_K_GEMM_GX);
  const int64_t wx[] = {codes[0], sc[0], st[0], codes[1], sc[1], st[1], 16, (int64_t)gx, T, I, op, I};
  for (int i = 0; i < 12; ++i) ck_assert_int_eq(mx->arg[i], wx[i]);
  ck_assert_uint_eq(mx->smem, 0); /* static shared memory only */
  const fake_cuda_launch *mw = at(8, "hot_gemm_mma_mxfp8_", -1, 0);
  plan_grid(mw, pl, HOT_K_GEMM_GW);
  const int64_t ww[] = {qhg, qhg + O * kp, (int64_t)sv, (int64_t)sv + I * kp, pl->hla.block,
                        (int64_t)gw, O, I, kp, I};
  for (int i = 0; i < 10; ++i) ck_assert_int_eq(mw->arg[i], ww[i]);
  printf("nvfp4 sm_120a (fake driver): save %s x2, backward %d launches, workspace %lld bytes\n",
         pl->kernels[0].name, g_log->n, (long long)cuda_layer_of(l)->scratch_bytes);
  hot_ctx_destroy(ctx);
}
END_TEST

/* The compiler's version against the driver's: cubins of NVRTC 13.0 on a 12.4 driver are
 * refused before any module is loaded, naming both; NVRTC 12.8 there, or a compiler that is not
 * NVRTC, passes. */
START_TEST(nvrtc_vs_driver) {
  boot(1, 9, 0, 12040);
  fake_cc nv13 = {0, 0, 0, "nvrtc-13.0", 0}, nv12 = {0, 0, 0, "nvrtc-12.8", 0};
  hot_compiler c13 = FAKE_ELF_COMPILER(nv13);
  hot_compiler c12 = FAKE_ELF_COMPILER(nv12);
  const hot_compiler *ccs[3] = {&c13, &c12, &g_cc};
  for (int i = 0; i < 3; ++i) {
    hot_options o;
    hot_options_init(&o);
    o.backend = HOT_BACKEND_CUDA;
    o.disk_cache = -1;
    hot_ctx *ctx = NULL;
    ck_assert_int_eq(ctx_create_with_compiler(&ctx, &o, ccs[i]), HOT_OK);
    hot_layer_spec s;
    plan_spec_defaults(&s, HOT_RECIPE_HOT);
    s.in_features = 64;
    s.out_features = 32;
    hot_layer *l = NULL;
    ck_assert_int_eq(hot_layer_create(ctx, &s, 1, 64, HOT_RECIPE_HOT, &l), HOT_OK);
    g_reset();
    hot_status st = hot_layer_compile(l);
    if (i == 0) {
      ck_assert_int_eq(st, HOT_ERR_BAD_BINARY);
      ck_assert_msg(strstr(hot_errmsg(ctx), "NVRTC 13.0") &&
                    strstr(hot_errmsg(ctx), "CUDA driver 12.4 (version 12040)") &&
                    !strchr(hot_errmsg(ctx), '\n'), "%s", hot_errmsg(ctx));
      ck_assert_int_eq(g_log->frees, 0);
    } else {
      ck_assert_msg(st == HOT_OK, "%s", hot_errmsg(ctx));
    }
    hot_ctx_destroy(ctx);
  }
}
END_TEST

/* Every layer's scratch lives in one workspace of the context, as large as the largest layer's:
 * layers take turns in it, a call on another stream than the last user's first waits for the
 * workspace's event (before its first launch), and growing it waits for that event before the
 * old allocation is freed. */
static hot_layer *sized_layer(hot_ctx *ctx, const char *name, int64_t in, int64_t out, int64_t B) {
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "%s", name);
  s.in_features = in;
  s.out_features = out;
  hot_layer *l = NULL;
  hot_status st = hot_layer_create(ctx, &s, B, 197, HOT_RECIPE_HOT, &l);
  if (st == HOT_OK) st = hot_layer_compile(l);
  ck_assert_msg(st == HOT_OK, "%s", hot_errmsg(ctx));
  return l;
}

START_TEST(shared_workspace) {
  boot(1, 9, 0, 13000);
  void *h = dlopen(HOT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  fake_cuda_alloc_size_fn asz = (fake_cuda_alloc_size_fn)dlsym(h, "fake_cuda_alloc_size");
  ck_assert_ptr_nonnull(asz);
  hot_ctx *ctx = cuda_ctx();
  hot_cuda_ctx *c = cuda_ctx_of(ctx);
  hot_layer *a = sized_layer(ctx, "a", 137, 100, 3), *b = sized_layer(ctx, "b", 64, 300, 2);
  const size_t na = cuda_layer_of(a)->scratch_bytes, nb = cuda_layer_of(b)->scratch_bytes;
  ck_assert(na > 0 && nb > 0 && na != nb);
  ck_assert_uint_eq(c->ws_bytes, na > nb ? na : nb); /* one allocation: the larger need */
  ck_assert_uint_eq(asz((uintptr_t)c->ws), c->ws_bytes);
  hot_stats stats;
  ck_assert_int_eq(hot_ctx_stats(ctx, &stats), HOT_OK);
  ck_assert_int_eq(stats.workspace_bytes, (int64_t)c->ws_bytes);

  const hot_layer_plan *pa = a->plan, *pb = b->plan;
  CUdeviceptr xa = dalloc((size_t)(pa->T * pa->I) * 4), xb = dalloc((size_t)(pb->T * pb->I) * 4);
  CUdeviceptr wa = dalloc((size_t)(pa->O * pa->I) * 4), gya = dalloc((size_t)(pa->T * pa->O) * 4),
              gxa = dalloc((size_t)(pa->T * pa->I) * 4), gwa = dalloc((size_t)(pa->O * pa->I) * 4);
  CUstream s2 = NULL;
  ck_assert_int_eq(d->cuStreamCreate(&s2, 0), CUDA_SUCCESS);

  /* one stream: no waits, both layers' pieces in the same allocation */
  g_reset();
  ck_assert_int_eq(hot_layer_save(a, vp(xa), HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq((int64_t)cuda_layer_of(a)->scratch, (int64_t)c->ws);
  ck_assert_int_eq(hot_layer_save(b, vp(xb), HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq((int64_t)cuda_layer_of(b)->scratch, (int64_t)c->ws);
  ck_assert_int_eq(g_log->stream_waits, 0);
  ck_assert_int_eq(c->ws_pending, 1);

  /* another stream: it waits for the workspace's event before its first launch */
  const int before = g_log->n;
  ck_assert_int_eq(hot_layer_backward(a, vp(gya), vp(wa), HOT_DT_F32, NULL, vp(gxa), vp(gwa),
                                      NULL, 1, s2), HOT_OK);
  ck_assert_int_eq(g_log->stream_waits, 1);
  ck_assert_int_eq((int64_t)g_log->wait_stream, (int64_t)(uintptr_t)s2);
  ck_assert_int_eq((int64_t)g_log->wait_event, (int64_t)(uintptr_t)c->ws_ev);
  ck_assert_int_eq(g_log->wait_at, before);
  ck_assert_int_gt(g_log->n, before);
  for (int i = before; i < g_log->n; ++i)
    ck_assert_int_eq((int64_t)g_log->l[i].stream, (int64_t)(uintptr_t)s2);
  /* and back on the default stream: one more wait */
  ck_assert_int_eq(hot_layer_save(a, vp(xa), HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq(g_log->stream_waits, 2);

  /* a larger layer grows the workspace: the old allocation is freed only after its event */
  g_set_running(1);
  ck_assert_int_eq(hot_layer_save(a, vp(xa), HOT_DT_F32, NULL, NULL), HOT_OK);
  g_reset();
  const size_t old = c->ws_bytes;
  hot_layer *big = sized_layer(ctx, "big", 512, 1024, 4);
  ck_assert_uint_gt(c->ws_bytes, old);
  ck_assert_uint_eq(c->ws_bytes, cuda_layer_of(big)->scratch_bytes);
  ck_assert_int_ge(g_log->event_syncs, 1);
  ck_assert_int_eq(g_log->frees_while_running, 0);
  ck_assert_int_eq(hot_layer_save(a, vp(xa), HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq((int64_t)cuda_layer_of(a)->scratch, (int64_t)c->ws);

  /* the context goes last: its workspace after the last call's event */
  hot_ctx_destroy(ctx);
  ck_assert_int_eq(g_log->frees_while_running, 0);
  g_set_running(0);
  d->cuStreamDestroy(s2);
  CUdeviceptr all[] = {xa, xb, wa, gya, gxa, gwa};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
}
END_TEST

int main(void) {
  au_suite_env(HOT_FAKE_CUDA);
  Suite *su = suite_create("runtime_api_fakecuda");
  TCase *tc = tcase_create("fake driver");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, default_recipe_sequence);
  tcase_add_test(tc, paper_code_sawb_sequence);
  tcase_add_test(tc, per_sample_sequence);
  tcase_add_test(tc, hla_groups_sequence);
  tcase_add_test(tc, refusals);
  tcase_add_test(tc, output_subsets_sequence);
  tcase_add_test(tc, profiling);
  tcase_add_test(tc, wgmma_gemms);
  tcase_add_test(tc, tma_gemms);
  tcase_add_test(tc, overflow_flags);
  suite_add_tcase(su, tc);
  TCase *tm = tcase_create("machines"); /* each test configures the fake before loading it */
  tcase_set_timeout(tm, 120);
  tcase_add_test(tm, lifetime_waits);
  tcase_add_test(tm, shared_workspace);
  tcase_add_test(tm, overflow_ring);
  tcase_add_test(tm, device_ordinals);
  tcase_add_test(tm, forced_arch_vs_device);
  tcase_add_test(tm, unsupported_device_warns);
  tcase_add_test(tm, nvfp4_sm120a_sequence);
  tcase_add_test(tm, nvrtc_vs_driver);
  suite_add_tcase(su, tm);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

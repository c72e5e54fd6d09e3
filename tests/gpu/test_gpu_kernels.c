/* test_gpu_kernels — every generated kernel against its CPU twin, bit for bit, on the GPU: fresh
 * seeded inputs (with outliers), awkward sizes (T = 197 x 3, O = 100 with b = 16, I = 137,
 * K not a multiple of 32), both HLA layouts, f32/bf16/f16, per-row and per-tensor scales. The
 * first mismatch is reported with its index and both values. Kernels run one at a time through
 * the same emit -> NVRTC -> cache -> module path the runtime uses, with the plan's geometry.
 * Covered: HQ g' / w' (absmax and, on a paper_code plan, SAWB through sawb.cu), HLA x^ / g^
 * (p = 16 and 64, both layouts; p = 1 on a paper_code plan with L = 197, x^ with SAWB; x^ also
 * as the save launches it, k_pad = K, against ref_abc_pack, and abc_unpack against
 * ref_abc_unpack on every such plan that has it), LQS
 * (errors and choice; token outliers pick per row, Gaussian data per tensor), both GEMMs, bias.
 * Without a driver: "SKIP: no CUDA driver", exit 77 (counted as skipped by CTest).
 *
 * Arch: the device's plans, and on a 9.0 device also the sm_90a plans (wgmma GEMMs). HOT_ARCH
 * picks one of them (HOT_ARCH=sm_90 or HOT_ARCH=sm_90a on a 9.0 device: only those plans; an arch
 * the device cannot load: SKIP, exit 77).
 * Kernel cache: with HOT_CACHE_DIR set, that directory is the disk cache (HOT_NO_DISK_CACHE=1
 * still turns it off); unset, kernels are compiled in memory only.
 * `--precompile ARCHS` (comma list, e.g. sm_90,sm_90a): needs no driver or GPU. For each arch it
 * walks the same plans and checks with host memory standing in for device memory: every kernel
 * the GPU run would launch is compiled (or found) in the cache of HOT_CACHE_DIR (required), the
 * CPU twins run as on the GPU (so its time is the host share of a GPU run), no kernel runs and
 * nothing is compared with the GPU. Prints the cache's figures; exit 0, 1 on an error
 * (tests/gpu/README.md: the convention every GPU test program follows). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "emit.h"
#include "hot_math.cuh"
#include "module.h"
#include "ref.h"
#include "runtime/gpu_check.h" /* FAIL */

#define CK(call)                                                                                   \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    char nb_[32];                                                                                  \
    if (r_ != CUDA_SUCCESS) FAIL("%s: %s", #call, cuda_result_name(r_, nb_));                      \
  } while (0)
#define CKRT(call)                                                                                 \
  do {                                                                                             \
    if ((call) != RT_OK) FAIL("%s: %s", #call, err);                                               \
  } while (0)

static const cuda_driver *d;
static hot_kcache *kc;
static hot_arch g_arch;
static char err[2048];
static int g_checks, g_kernels;
static int g_dry; /* --precompile: host memory for device memory, no module, no launch, no compare */
static const uint64_t k_seed = 0x9E3779B97F4A7C15ull;

/* ---- data ------------------------------------------------------------------------------- */

static uint64_t rng_state;
static double uniform(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) * 0x1.0p-53;
}
static float gaussian(void) {
  double u = uniform() + 1e-300, v = uniform();
  return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* Round-to-nearest-even f32 -> bf16 / f16 bit patterns (inputs are finite and moderate). */
static unsigned short to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
static unsigned short to_f16(float f) {
  /* f16 has 10 mantissa bits; values here are |f| < 65504 (no overflow handling needed). */
  float a = fabsf(f);
  unsigned short sign = f < 0 ? 0x8000u : 0;
  if (a < 6.103515625e-05f) { /* subnormal: multiples of 2^-24 */
    long m = lrintf(a * 16777216.0f);
    return (unsigned short)(sign | (unsigned short)m);
  }
  int e;
  float mant = frexpf(a, &e); /* a = mant * 2^e, mant in [0.5, 1) */
  long m = lrintf(mant * 2048.0f); /* 11 significant bits */
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  return (unsigned short)(sign | (unsigned short)((e + 14) << 10) | (unsigned short)(m - 1024));
}

/* A T x C tensor of dtype dt (f32 or bf16/f16 bits): Gaussian with a few x20 outliers. */
static void *make_tensor(int64_t rows, int64_t cols, hot_dtype dt, int outliers) {
  size_t es = dt == HOT_DT_F32 ? 4 : 2;
  unsigned char *p = malloc((size_t)(rows * cols) * es);
  if (!p) FAIL("out of memory");
  for (int64_t i = 0; i < rows * cols; ++i) {
    float v = gaussian();
    if (outliers && (i % cols) % 37 == 3) v *= 20.0f;
    if (dt == HOT_DT_F32) memcpy(p + 4 * i, &v, 4);
    else {
      unsigned short b = dt == HOT_DT_BF16 ? to_bf16(v) : to_f16(v);
      memcpy(p + 2 * i, &b, 2);
    }
  }
  return p;
}

/* ---- device helpers ------------------------------------------------------------------- */

static CUdeviceptr dev_alloc(size_t n, const void *h) {
  CUdeviceptr p = 0;
  CK(d->cuMemAlloc(&p, n ? n : 4));
  if (h) CK(d->cuMemcpyHtoD(p, h, n));
  else CK(d->cuMemsetD8(p, 0xA5, n ? n : 4)); /* garbage: kernels must write every byte */
  return p;
}

static void *dev_fetch(CUdeviceptr p, size_t n) {
  void *h = malloc(n ? n : 1);
  if (!h) FAIL("out of memory");
  CK(d->cuCtxSynchronize());
  CK(d->cuMemcpyDtoH(h, p, n));
  return h;
}

typedef struct {
  hot_module *mod;
  const hot_kfunc *fn;
  const hot_kernel_plan *kp;
} kernel;

/* Compiles (through the cache) and loads the plan's kernel of `role`. */
static kernel load_kernel(const hot_layer_plan *pl, hot_kernel_role role) {
  kernel k = {0};
  int idx = plan_kernel_index(pl, role);
  if (idx < 0) FAIL("plan has no %s kernel", plan_role_name(role));
  k.kp = &pl->kernels[idx];
  hot_emitted e;
  if (emit_layer_select(pl, 1u << idx, &e, err, sizeof err) != 0) FAIL("emit: %s", err);
  if (e.n_kernels != 1) FAIL("%s: template %s not in this build", k.kp->name, k.kp->templ);
  hot_kernel_source src = {"hot.cu", e.source, e.kernels, 1, plan_arch_caps(pl->arch)->name, NULL, 0};
  const hot_kernel_binary *bin;
  char *log = NULL;
  if (kcache_get(kc, &src, &bin, NULL, &log, err, sizeof err) != RT_OK)
    FAIL("compile %s: %s\n%s", k.kp->name, err, log ? log : "");
  if (!g_dry) {
    CKRT(module_load(&k.mod, bin->cubin, bin->cubin_size, k.kp->name, err, sizeof err));
    CKRT(module_function(k.mod, k.kp->name, &k.fn, err, sizeof err));
  }
  emit_free(&e);
  ++g_kernels;
  return k;
}

static void launch(const kernel *k, const unsigned *grid, void **args) {
  if (g_dry) return;
  hot_launch_cfg cfg = {{grid ? grid[0] : k->kp->grid[0], grid ? grid[1] : k->kp->grid[1],
                         grid ? grid[2] : k->kp->grid[2]},
                        {k->kp->block[0], k->kp->block[1], k->kp->block[2]}, k->kp->smem, NULL};
  CKRT(module_launch(k->fn, &cfg, args, err, sizeof err));
}

/* ---- comparisons -------------------------------------------------------------------------- */

static void same_bytes(const char *what, const void *gpu, const void *cpu, size_t n) {
  if (g_dry) return; /* nothing ran: only the twins' side is real */
  const unsigned char *a = gpu, *b = cpu;
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) FAIL("%s: first mismatch at byte %zu: gpu 0x%02x, cpu 0x%02x", what, i, a[i], b[i]);
  ++g_checks;
}

static void same_doubles(const char *what, const double *gpu, const double *cpu, size_t n) {
  if (g_dry) return; /* nothing ran: only the twins' side is real */
  for (size_t i = 0; i < n; ++i)
    if (memcmp(&gpu[i], &cpu[i], 8) != 0)
      FAIL("%s: first mismatch at [%zu]: gpu %.17g, cpu %.17g", what, i, gpu[i], cpu[i]);
  ++g_checks;
}

static void same_floats(const char *what, const float *gpu, const float *cpu, size_t n) {
  if (g_dry) return; /* nothing ran: only the twins' side is real */
  for (size_t i = 0; i < n; ++i)
    if (memcmp(&gpu[i], &cpu[i], 4) != 0)
      FAIL("%s: first mismatch at [%zu]: gpu %.9g, cpu %.9g", what, i, (double)gpu[i], (double)cpu[i]);
  ++g_checks;
}

/* ---- the plan of a test layer ---------------------------------------------------------- */

static hot_layer_spec g_spec;

/* The hot recipe with the scale granularities gg (g^) and gx (x^) of HLA. */
static hot_layer_plan plan_scales(int64_t B, int64_t L, int64_t O, int64_t I, hot_dtype dt,
                                  hot_layout layout, int p, hot_gran gg, hot_gran gx) {
  plan_spec_defaults(&g_spec, HOT_RECIPE_HOT);
  snprintf(g_spec.name, sizeof g_spec.name, "gpu");
  g_spec.in_features = I;
  g_spec.out_features = O;
  g_spec.dtype = dt;
  g_spec.hla.layout = layout;
  g_spec.hla.block = p;
  g_spec.hla.g.gran = gg;
  g_spec.hla.x.gran = gx;
  hot_layer_plan pl;
  if (plan_layer(&g_spec, B, L, HOT_RECIPE_HOT, g_arch, 3, &pl, err, sizeof err) != 0)
    FAIL("plan: %s", err);
  return pl;
}

/* The hot recipe as it plans (hla.scale auto: x^, g^ per sample under layout sample). */
static hot_layer_plan plan_for(int64_t B, int64_t L, int64_t O, int64_t I, hot_dtype dt,
                               hot_layout layout, int p) {
  return plan_scales(B, L, O, I, dt, layout, p, HOT_GRAN_AUTO, HOT_GRAN_AUTO);
}

/* The paper_code recipe (b shrinks to divide O, p = largest power of two dividing L, SAWB for
 * w' and x^): on L = 197, p = 1 and K = T. */
static hot_layer_plan plan_paper_code(int64_t B, int64_t L, int64_t O, int64_t I, hot_dtype dt) {
  plan_spec_defaults(&g_spec, HOT_RECIPE_PAPER_CODE);
  snprintf(g_spec.name, sizeof g_spec.name, "gpu_pc");
  g_spec.in_features = I;
  g_spec.out_features = O;
  g_spec.dtype = dt;
  hot_layer_plan pl;
  if (plan_layer(&g_spec, B, L, HOT_RECIPE_PAPER_CODE, g_arch, 5, &pl, err, sizeof err) != 0)
    FAIL("plan (paper_code): %s", err);
  if (pl.hq.w.rule != HOT_RULE_SAWB || pl.hla.x.rule != HOT_RULE_SAWB)
    FAIL("paper_code plan without SAWB rules");
  return pl;
}

static size_t code_row_bytes(const hot_layer_plan *pl) {
  return (size_t)(pl->hq.codes == HOT_CODES_S4_PACKED ? pl->hq.gemm.k_pad / 2 : pl->hq.gemm.k_pad);
}

/* ---- kernels ----------------------------------------------------------------------------- */

/* HQ g': per row, per tensor or per sample (B amax words, group_rows = L). */
static void check_hq_g(const hot_layer_plan *pl, const void *gy, hot_gran gran) {
  kernel k = load_kernel(pl, HOT_K_HQ_G);
  size_t es = pl->spec->dtype == HOT_DT_F32 ? 4 : 2, rb = code_row_bytes(pl);
  int rows = (int)pl->T, cols = (int)pl->O, ld = cols, o_pad = (int)pl->hq.o_pad,
      k_pad = (int)pl->hq.gemm.k_pad, ldc = (int)rb;
  CUdeviceptr src = dev_alloc((size_t)(pl->T * pl->O) * es, gy);
  CUdeviceptr codes = dev_alloc((size_t)pl->T * rb, NULL), scales = dev_alloc((size_t)pl->T * 4, NULL);
  CUdeviceptr amax = dev_alloc((size_t)pl->B * 4, NULL);
  CK(d->cuMemsetD8(amax, 0, (size_t)pl->B * 4));
  unsigned long long seed = k_seed;
  unsigned tag = (unsigned)pl->layer_id * 16u + HOT_TENSOR_HQ_G, step = 7;
  int phase, group_rows = gran == HOT_GRAN_SAMPLE ? (int)pl->L : rows;
  CUdeviceptr none = 0;
  void *args[] = {&src, &rows, &cols, &ld, &o_pad, &k_pad, &codes, &ldc, &scales, &amax,
                  &group_rows, &none, &none, &phase, &seed, &tag, &step};
  if (gran == HOT_GRAN_ROW) {
    phase = 2;
    launch(&k, NULL, args);
  } else {
    phase = 0;
    launch(&k, NULL, args);
    phase = 1;
    launch(&k, NULL, args);
  }
  void *gc = dev_fetch(codes, (size_t)pl->T * rb);
  float *gs = dev_fetch(scales, (size_t)pl->T * 4);
  void *cc = malloc((size_t)pl->T * rb);
  float *cs = malloc((size_t)pl->T * 4);
  int rc = ref_hq_quant_g(pl, gy, pl->spec->dtype, gran, seed, step, cc, cs);
  if (rc != HOT_REF_OK) FAIL("twin: %s", ref_status_name(rc));
  char what[160];
  snprintf(what, sizeof what, "%s (%s) codes", k.kp->name, plan_gran_name(gran));
  same_bytes(what, gc, cc, (size_t)pl->T * rb);
  snprintf(what, sizeof what, "%s (%s) scales", k.kp->name, plan_gran_name(gran));
  same_floats(what, gs, cs, (size_t)pl->T);
  free(gc); free(gs); free(cc); free(cs);
  d->cuMemFree(src); d->cuMemFree(codes); d->cuMemFree(scales); d->cuMemFree(amax);
  module_unload(k.mod);
}

static void check_hq_w(const hot_layer_plan *pl, const void *w) {
  kernel k = load_kernel(pl, HOT_K_HQ_W);
  size_t es = pl->spec->dtype == HOT_DT_F32 ? 4 : 2, rb = code_row_bytes(pl);
  int rows = (int)pl->O, cols = (int)pl->I, ld = cols, o_pad = (int)pl->hq.o_pad,
      k_pad = (int)pl->hq.gemm.k_pad, ldc = (int)rb;
  CUdeviceptr src = dev_alloc((size_t)(pl->O * pl->I) * es, w);
  CUdeviceptr codes = dev_alloc((size_t)pl->I * rb, NULL), scale = dev_alloc(4, NULL),
              amax = dev_alloc(4, NULL);
  CK(d->cuMemsetD8(amax, 0, 4));
  unsigned long long seed = 0;
  unsigned tag = 0, step = 0;
  int phase = 0;
  CUdeviceptr none = 0;
  int group_rows = rows; /* w': one scale */
  void *args[] = {&src, &rows, &cols, &ld, &o_pad, &k_pad, &codes, &ldc, &scale, &amax,
                  &group_rows, &none, &none, &phase, &seed, &tag, &step};
  launch(&k, NULL, args);
  phase = 1;
  launch(&k, NULL, args);
  void *gc = dev_fetch(codes, (size_t)pl->I * rb);
  float *gs = dev_fetch(scale, 4);
  void *cc = malloc((size_t)pl->I * rb);
  float cs;
  int rc = ref_hq_quant_w(pl, w, pl->spec->dtype, cc, &cs);
  if (rc != HOT_REF_OK) FAIL("twin: %s", ref_status_name(rc));
  same_bytes(k.kp->name, gc, cc, (size_t)pl->I * rb);
  same_floats("s_w", gs, &cs, 1);
  free(gc); free(gs); free(cc);
  d->cuMemFree(src); d->cuMemFree(codes); d->cuMemFree(scale); d->cuMemFree(amax);
  module_unload(k.mod);
}

/* sawb.cu over the math tensor v (groups groups of n floats) with the amax words of the
 * operand's phase 0: phase 0 on the plan's grid, phase 1 on one block (as the header
 * documents). */
static void run_sawb(const kernel *k, CUdeviceptr v, long long n, int groups, CUdeviceptr amax,
                     CUdeviceptr scale) {
  CUdeviceptr parts = dev_alloc((size_t)groups * (size_t)(2 * ((n + 1023) / 1024)) * 8, NULL);
  int phase = 0;
  void *args[] = {&v, &n, &groups, &parts, &amax, &scale, &phase};
  launch(k, NULL, args);
  phase = 1;
  const unsigned one[3] = {1, 1, 1};
  launch(k, one, args);
  CK(d->cuCtxSynchronize());
  d->cuMemFree(parts);
}

/* HQ w' with the SAWB rule (paper_code plan): phase 0 with math_out (compared with the twin's
 * w' transform), sawb.cu phases 0 and 1 (scale compared with the twin's s_w), phase 1 with
 * scale_in (codes compared). */
static void check_hq_w_sawb(const hot_layer_plan *pl, const void *w) {
  kernel k = load_kernel(pl, HOT_K_HQ_W), ks = load_kernel(pl, HOT_K_SAWB_W);
  size_t es = pl->spec->dtype == HOT_DT_F32 ? 4 : 2, rb = code_row_bytes(pl);
  size_t nm = (size_t)(pl->hq.o_pad * pl->I);
  int rows = (int)pl->O, cols = (int)pl->I, ld = cols, o_pad = (int)pl->hq.o_pad,
      k_pad = (int)pl->hq.gemm.k_pad, ldc = (int)rb;
  CUdeviceptr src = dev_alloc((size_t)(pl->O * pl->I) * es, w);
  CUdeviceptr codes = dev_alloc((size_t)pl->I * rb, NULL), scale = dev_alloc(4, NULL),
              amax = dev_alloc(4, NULL), math = dev_alloc(nm * 4, NULL),
              sawb_s = dev_alloc(4, NULL);
  CK(d->cuMemsetD8(amax, 0, 4));
  unsigned long long seed = 0;
  unsigned tag = 0, step = 0;
  int phase = 0;
  CUdeviceptr none = 0, math_out = math, scale_in = 0;
  void *args[] = {&src, &rows, &cols, &ld, &o_pad, &k_pad, &codes, &ldc, &scale, &amax, &scale_in,
                  &math_out, &phase, &seed, &tag, &step};
  launch(&k, NULL, args);
  float *gm = dev_fetch(math, nm * 4), *cm = malloc(nm * 4);
  if (ref_hq_transform_w(pl, w, pl->spec->dtype, cm)) FAIL("twin transform_w");
  same_floats("w' math tensor (hadamard_quant.cu math_out)", gm, cm, nm);
  run_sawb(&ks, math, (long long)nm, 1, amax, sawb_s);
  void *cc = malloc((size_t)pl->I * rb);
  float cs;
  int rc = ref_hq_quant_w(pl, w, pl->spec->dtype, cc, &cs);
  if (rc != HOT_REF_OK) FAIL("twin: %s", ref_status_name(rc));
  float *gss = dev_fetch(sawb_s, 4);
  same_floats("s_w (sawb.cu)", gss, &cs, 1);
  phase = 1;
  math_out = none;
  scale_in = sawb_s;
  launch(&k, NULL, args);
  void *gc = dev_fetch(codes, (size_t)pl->I * rb);
  float *gs = dev_fetch(scale, 4);
  char what[200];
  snprintf(what, sizeof what, "%s (sawb) codes", k.kp->name);
  same_bytes(what, gc, cc, (size_t)pl->I * rb);
  same_floats("s_w (hadamard_quant.cu phase 1, scale_in)", gs, &cs, 1);
  free(gm); free(cm); free(cc); free(gss); free(gc); free(gs);
  CUdeviceptr all[] = {src, codes, scale, amax, math, sawb_s};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  module_unload(k.mod);
  module_unload(ks.mod);
}

/* HLA projection x^ (HOT_K_ABC_X, RTN) or g^ (HOT_K_HLA_G, SR): absmax = phases 0, 1; x^ with
 * the SAWB rule = phase 0 with math_out (compared with the twin's transform), sawb.cu, phase 1
 * with scale_in. Codes (cols x k_pad, the zero tail included: the buffer starts as garbage) and
 * the scale are compared with ref_hla_quant_x / _g. compact (x^ only): launched as the save
 * launches it (k_pad = ld_codes = K, group_k_pad = group_k, codes and scales in one buffer of
 * plan_buffer_bytes(HOT_BUF_SAVED), the scales at plan_saved_scale_offset), the codes compared
 * with ref_abc_pack of the twin's. */
static void check_hla_as(const hot_layer_plan *pl, const void *src_h, hot_kernel_role role,
                         int compact) {
  kernel k = load_kernel(pl, role);
  int is_g = role == HOT_K_HLA_G;
  if (compact && is_g) FAIL("check_hla_as: the compact layout is x^'s (the save)");
  int sawb = !is_g && pl->hla.x.rule == HOT_RULE_SAWB;
  size_t es = pl->spec->dtype == HOT_DT_F32 ? 4 : 2;
  int T = (int)pl->T, cols = (int)(is_g ? pl->O : pl->I), ld = cols, L = (int)pl->L;
  int layout = pl->hla.layout == HOT_LAYOUT_FLAT ? 1 : 0;
  long long seg_len = pl->hla.seg_len, segments = pl->hla.segments;
  int k_real = (int)pl->hla.k, k_pad = (int)(compact ? pl->hla.k : pl->hla.gemm.k_pad), ldc = k_pad;
  int group_k = (int)pl->hla.group_k;
  int group_k_pad = (int)(compact ? pl->hla.group_k : pl->hla.group_k_pad);
  int groups = (int)pl->hla.groups;
  int per_sample = (is_g ? pl->hla.g.gran : pl->hla.x.gran) == HOT_GRAN_SAMPLE;
  size_t nw = per_sample ? (size_t)groups : 1; /* amax words and SAWB scales */
  size_t ncodes = (size_t)cols * (size_t)k_pad, nm = (size_t)pl->hla.k * (size_t)cols;
  size_t ngemm = (size_t)cols * (size_t)pl->hla.gemm.k_pad; /* the twin's codes (GEMM layout) */
  int64_t saved_n = compact ? plan_buffer_bytes(pl, HOT_BUF_SAVED) : 0;
  int64_t scale_off = compact ? plan_saved_scale_offset(pl) : 0;
  if (compact && (saved_n <= 0 || scale_off < (int64_t)ncodes ||
                  scale_off + 4 * (int64_t)groups > saved_n))
    FAIL("%s: saved buffer of %lld bytes, scales at %lld: not room for %zu codes and %d scales",
         k.kp->name, (long long)saved_n, (long long)scale_off, ncodes, groups);
  CUdeviceptr src = dev_alloc((size_t)(pl->T * cols) * es, src_h);
  CUdeviceptr codes = dev_alloc(compact ? (size_t)saved_n : ncodes, NULL);
  CUdeviceptr scale = compact ? codes + (CUdeviceptr)scale_off : dev_alloc(4 * (size_t)groups, NULL);
  CUdeviceptr amax = dev_alloc(4 * nw, NULL);
  CUdeviceptr math = sawb ? dev_alloc(nm * 4, NULL) : 0, sawb_s = sawb ? dev_alloc(4 * nw, NULL) : 0;
  CK(d->cuMemsetD8(amax, 0, 4 * nw));
  unsigned long long seed = k_seed;
  unsigned tag = (unsigned)pl->layer_id * 16u + (is_g ? HOT_TENSOR_HLA_G : 0u), step = 11;
  int phase = 0;
  CUdeviceptr scale_in = 0, math_out = math;
  void *args[] = {&src, &T, &cols, &ld, &L, &layout, &seg_len, &segments, &k_real, &k_pad,
                  &group_k, &group_k_pad, &groups, &per_sample, &codes, &ldc, &scale, &amax,
                  &scale_in, &math_out, &phase, &seed, &tag, &step};
  launch(&k, NULL, args);
  int8_t *cc = malloc(ngemm);
  float *cs = malloc(4 * (size_t)groups);
  if (!cc || !cs) FAIL("out of memory");
  int rc = is_g ? ref_hla_quant_g(pl, src_h, pl->spec->dtype, seed, step, cc, cs)
                : ref_hla_quant_x(pl, src_h, pl->spec->dtype, cc, cs);
  if (rc != HOT_REF_OK) FAIL("twin: %s", ref_status_name(rc));
  if (compact) { /* the save's layout: the twin's codes packed */
    int8_t *cp = malloc(ncodes);
    if (!cp) FAIL("out of memory");
    rc = ref_abc_pack(pl, cc, cp);
    if (rc != HOT_REF_OK) FAIL("twin abc_pack: %s", ref_status_name(rc));
    free(cc);
    cc = cp;
  }
  char what[200];
  if (sawb) {
    kernel ks = load_kernel(pl, HOT_K_SAWB_X);
    float *gm = dev_fetch(math, nm * 4), *cm = malloc(nm * 4);
    if (ref_hla_transform(pl, src_h, pl->spec->dtype, pl->I, cm)) FAIL("twin hla_transform");
    snprintf(what, sizeof what, "%s x^ math tensor (math_out)", k.kp->name);
    same_floats(what, gm, cm, nm);
    run_sawb(&ks, math, (long long)(nm / nw), (int)nw, amax, sawb_s);
    float *gss = dev_fetch(sawb_s, 4 * nw);
    same_floats("s_x^ (sawb.cu)", gss, cs, nw);
    free(gm); free(cm); free(gss);
    module_unload(ks.mod);
    scale_in = sawb_s;
    math_out = 0;
  }
  phase = 1;
  launch(&k, NULL, args);
  void *gc = dev_fetch(codes, ncodes);
  float *gs = dev_fetch(scale, 4 * (size_t)groups);
  snprintf(what, sizeof what, "%s (%s, p=%d, %s, %d scale groups%s) codes", k.kp->name,
           sawb ? "sawb" : "absmax", pl->hla.block, plan_layout_name(pl->hla.layout), groups,
           compact ? ", the save's layout: k_pad = K" : "");
  same_bytes(what, gc, cc, ncodes);
  snprintf(what, sizeof what, "%s (p=%d%s) scales", k.kp->name, pl->hla.block,
           compact ? ", at plan_saved_scale_offset" : "");
  same_floats(what, gs, cs, (size_t)groups);
  free(cc); free(cs); free(gc); free(gs);
  d->cuMemFree(src); d->cuMemFree(codes); d->cuMemFree(amax);
  if (!compact) d->cuMemFree(scale); /* else inside codes */
  if (sawb) { d->cuMemFree(math); d->cuMemFree(sawb_s); }
  module_unload(k.mod);
}

static void check_hla(const hot_layer_plan *pl, const void *src_h, hot_kernel_role role) {
  check_hla_as(pl, src_h, role, 0);
}

/* abc_unpack (HOT_K_ABC_UNPACK, planned where K != k_pad) on the saved buffer of the twin's x^
 * codes (ref_abc_pack of ref_hla_quant_x, at the start of a plan_buffer_bytes(HOT_BUF_SAVED)
 * buffer) into q_hx, which starts as garbage (0xA5 from dev_alloc, then 0x5B) and is followed
 * by 256 guard bytes: every byte of I x k_pad against ref_abc_unpack (which must give the
 * twin's GEMM-layout codes again), the guard untouched. Returns 1 when the plan has the kernel. */
static int check_unpack(const hot_layer_plan *pl, const void *x_h) {
  if (plan_kernel_index(pl, HOT_K_ABC_UNPACK) < 0) return 0;
  kernel k = load_kernel(pl, HOT_K_ABC_UNPACK);
  const size_t nq = (size_t)(pl->I * pl->hla.gemm.k_pad), nc = (size_t)(pl->I * pl->hla.k);
  const size_t guard = 256;
  const int64_t saved_n = plan_buffer_bytes(pl, HOT_BUF_SAVED);
  if (saved_n < (int64_t)nc) FAIL("%s: saved buffer of %lld bytes < %zu codes", k.kp->name,
                                  (long long)saved_n, nc);
  int8_t *q = malloc(nq), *codes = calloc((size_t)saved_n, 1), *want = malloc(nq);
  float *s = malloc(4 * (size_t)pl->hla.groups);
  if (!q || !codes || !want || !s) FAIL("out of memory");
  int rc = ref_hla_quant_x(pl, x_h, pl->spec->dtype, q, s);
  if (!rc) rc = ref_abc_pack(pl, q, codes);
  if (!rc) rc = ref_abc_unpack(pl, codes, want);
  if (rc != HOT_REF_OK) FAIL("twins (quant_x, abc_pack, abc_unpack): %s", ref_status_name(rc));
  if (memcmp(want, q, nq) != 0) FAIL("ref_abc_unpack(ref_abc_pack(q_x^)) is not q_x^");
  CUdeviceptr src = dev_alloc((size_t)saved_n, codes), dst = dev_alloc(nq + guard, NULL);
  CK(d->cuMemsetD8(dst, 0x5B, nq)); /* garbage in q_hx, 0xA5 in the guard */
  int rows = (int)pl->I, k_real = (int)pl->hla.k, group_k = (int)pl->hla.group_k;
  int group_k_pad = (int)pl->hla.group_k_pad, k_pad = (int)pl->hla.gemm.k_pad;
  void *args[] = {&src, &rows, &k_real, &group_k, &group_k_pad, &k_pad, &dst};
  launch(&k, NULL, args);
  unsigned char *g = dev_fetch(dst, nq + guard);
  char what[200];
  snprintf(what, sizeof what, "%s (I=%d, K=%d, k_pad=%d, %lld groups of %d padded to %d)",
           k.kp->name, rows, k_real, k_pad, (long long)pl->hla.groups, group_k, group_k_pad);
  same_bytes(what, g, want, nq);
  if (!g_dry) {
    for (size_t i = 0; i < guard; ++i)
      if (g[nq + i] != 0xA5) FAIL("%s: wrote byte %zu past its I x k_pad", k.kp->name, i);
    ++g_checks;
  }
  free(q); free(codes); free(want); free(s); free(g);
  d->cuMemFree(src); d->cuMemFree(dst);
  module_unload(k.mod);
  return 1;
}

/* x^ of ABC: the GEMM layout (as ref_hla_quant_x), the save's compact layout, and the backward's
 * abc_unpack where the plan has it. Returns 1 when abc_unpack ran. */
static int check_abc_x(const hot_layer_plan *pl, const void *x_h) {
  check_hla_as(pl, x_h, HOT_K_ABC_X, 0);
  check_hla_as(pl, x_h, HOT_K_ABC_X, 1);
  return check_unpack(pl, x_h);
}

/* g_y with 4 of every 128 tokens (rows) scaled x20: LQS must pick per row there. */
static void *make_token_outliers(int64_t rows, int64_t cols, hot_dtype dt) {
  size_t es = dt == HOT_DT_F32 ? 4 : 2;
  unsigned char *p = malloc((size_t)(rows * cols) * es);
  if (!p) FAIL("out of memory");
  for (int64_t i = 0; i < rows * cols; ++i) {
    float v = gaussian();
    if ((i / cols) % 32 == 5) v *= 20.0f;
    if (dt == HOT_DT_F32) memcpy(p + 4 * i, &v, 4);
    else {
      unsigned short b = dt == HOT_DT_BF16 ? to_bf16(v) : to_f16(v);
      memcpy(p + 2 * i, &b, 2);
    }
  }
  return p;
}

/* LQS: phases 0, 1, 2 on the plan's grid; e_tensor, e_token (fp64 bits) and the choice against
 * ref_lqs. want: the choice the data must give (-1: no expectation). */
static void check_lqs(const hot_layer_plan *pl, const void *gy, int want, const char *label) {
  kernel k = load_kernel(pl, HOT_K_LQS);
  size_t es = pl->spec->dtype == HOT_DT_F32 ? 4 : 2;
  long long n = pl->T * pl->O, nch = (n + 1023) / 1024;
  int T = (int)pl->T, O = (int)pl->O, ld = O;
  CUdeviceptr src = dev_alloc((size_t)n * es, gy), amax = dev_alloc((size_t)pl->B * 4, NULL),
              rs = dev_alloc((size_t)pl->T * 4, NULL), parts = dev_alloc((size_t)(2 * nch) * 8, NULL),
              res = dev_alloc(16, NULL), choice = dev_alloc(4, NULL);
  CK(d->cuMemsetD8(amax, 0, (size_t)pl->B * 4));
  unsigned long long seed = k_seed;
  unsigned tag = (unsigned)pl->layer_id * 16u + HOT_TENSOR_LQS, step = 3;
  int phase = 0, group_rows = (int)pl->L; /* per sample against per token */
  void *args[] = {&src, &T, &O, &ld, &amax, &group_rows, &rs, &parts, &res, &choice, &phase,
                  &seed, &tag, &step};
  for (phase = 0; phase < 3; ++phase) launch(&k, NULL, args);
  double *gr = dev_fetch(res, 16);
  int *gch = dev_fetch(choice, 4);
  hot_ref_lqs_result r;
  int rc = ref_lqs(pl, gy, pl->spec->dtype, seed, step, &r);
  if (rc != HOT_REF_OK) FAIL("twin lqs: %s", ref_status_name(rc));
  double cr[2] = {r.e_tensor, r.e_token};
  char what[200];
  snprintf(what, sizeof what, "%s (%s) [e_tensor, e_token]", k.kp->name, label);
  same_doubles(what, gr, cr, 2);
  if (!g_dry) {
    if (*gch != (r.choice == HOT_GRAN_ROW ? 1 : 0))
      FAIL("%s (%s) choice: gpu %d, cpu %s", k.kp->name, label, *gch, plan_gran_name(r.choice));
    ++g_checks;
  }
  if (want >= 0 && (int)r.choice != want)
    FAIL("%s: LQS picked %s (e_tensor %g, e_token %g), CONTRACT.md 8 says %s", label,
         plan_gran_name(r.choice), r.e_tensor, r.e_token, plan_gran_name((hot_gran)want));
  free(gr); free(gch);
  CUdeviceptr all[] = {src, amax, rs, parts, res, choice};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) d->cuMemFree(all[i]);
  module_unload(k.mod);
}

/* The two GEMMs on the twins' codes (random codes would do; these are the real ones). */
static void check_gemms(const hot_layer_plan *pl, const void *gy, const void *w, const void *x) {
  hot_dtype dt = pl->spec->dtype;
  size_t rb = code_row_bytes(pl);
  /* g_x */
  void *qg = malloc((size_t)pl->T * rb), *qw = malloc((size_t)pl->I * rb);
  float *sg = malloc((size_t)pl->T * 4), sw;
  if (ref_hq_quant_g(pl, gy, dt, HOT_GRAN_ROW, k_seed, 1, qg, sg) ||
      ref_hq_quant_w(pl, w, dt, qw, &sw))
    FAIL("twin quantizers");
  float *cx = malloc((size_t)(pl->T * pl->I) * 4);
  if (ref_gemm_gx(pl, qg, sg, qw, sw, cx)) FAIL("twin gemm_gx");
  kernel k = load_kernel(pl, HOT_K_GEMM_GX);
  CUdeviceptr A = dev_alloc((size_t)pl->T * rb, qg), Bm = dev_alloc((size_t)pl->I * rb, qw),
              C = dev_alloc((size_t)(pl->T * pl->I) * 4, NULL), rs = dev_alloc((size_t)pl->T * 4, sg),
              aa = dev_alloc(4, &sw), ab = 0;
  float div = (float)pl->hq.block;
  int M = (int)pl->T, N = (int)pl->I, Kp = (int)pl->hq.gemm.k_pad, ldc = (int)pl->I;
  int skp_x = Kp; /* one segment */
  void *args[] = {&A, &Bm, &C, &rs, &aa, &ab, &div, &M, &N, &Kp, &ldc, &skp_x};
  launch(&k, NULL, args);
  float *gx = dev_fetch(C, (size_t)(pl->T * pl->I) * 4);
  same_floats(k.kp->name, gx, cx, (size_t)(pl->T * pl->I));
  module_unload(k.mod);
  d->cuMemFree(A); d->cuMemFree(Bm); d->cuMemFree(C); d->cuMemFree(rs); d->cuMemFree(aa);
  free(qg); free(qw); free(sg); free(cx); free(gx);

  /* g_w */
  size_t kp = (size_t)pl->hla.gemm.k_pad;
  int8_t *qgh = malloc((size_t)pl->O * kp), *qx = malloc((size_t)pl->I * kp);
  size_t gb = 4 * (size_t)pl->hla.groups;
  float *sgh = malloc(gb), *sx = malloc(gb);
  if (ref_hla_quant_g(pl, gy, dt, k_seed, 1, qgh, sgh) || ref_hla_quant_x(pl, x, dt, qx, sx))
    FAIL("twin HLA quantizers");
  float *cw = malloc((size_t)(pl->O * pl->I) * 4);
  if (ref_gemm_gw(pl, qgh, sgh, qx, sx, cw)) FAIL("twin gemm_gw");
  k = load_kernel(pl, HOT_K_GEMM_GW);
  A = dev_alloc((size_t)pl->O * kp, qgh);
  Bm = dev_alloc((size_t)pl->I * kp, qx);
  C = dev_alloc((size_t)(pl->O * pl->I) * 4, NULL);
  aa = dev_alloc(gb, sgh);
  ab = dev_alloc(gb, sx);
  CUdeviceptr none = 0;
  div = (float)pl->hla.block;
  M = (int)pl->O;
  N = (int)pl->I;
  Kp = (int)kp;
  ldc = (int)pl->I;
  int skp = (int)pl->hla.gemm.seg_k_pad;
  void *args2[] = {&A, &Bm, &C, &none, &aa, &ab, &div, &M, &N, &Kp, &ldc, &skp};
  launch(&k, NULL, args2);
  float *gw = dev_fetch(C, (size_t)(pl->O * pl->I) * 4);
  same_floats(k.kp->name, gw, cw, (size_t)(pl->O * pl->I));
  module_unload(k.mod);
  d->cuMemFree(A); d->cuMemFree(Bm); d->cuMemFree(C); d->cuMemFree(aa); d->cuMemFree(ab);
  free(qgh); free(qx); free(cw); free(gw); free(sgh); free(sx);
}

static void check_bias(const hot_layer_plan *pl, const void *gy) {
  kernel k = load_kernel(pl, HOT_K_BIAS);
  size_t es = pl->spec->dtype == HOT_DT_F32 ? 4 : 2;
  CUdeviceptr src = dev_alloc((size_t)(pl->T * pl->O) * es, gy), gb = dev_alloc((size_t)pl->O * 4, NULL);
  int T = (int)pl->T, O = (int)pl->O;
  void *args[] = {&src, &gb, &T, &O};
  launch(&k, NULL, args);
  float *g = dev_fetch(gb, (size_t)pl->O * 4), *c = malloc((size_t)pl->O * 4);
  if (ref_bias(pl, gy, pl->spec->dtype, c)) FAIL("twin bias");
  same_floats(k.kp->name, g, c, (size_t)pl->O);
  free(g); free(c);
  d->cuMemFree(src); d->cuMemFree(gb);
  module_unload(k.mod);
}

/* Progress lines of run_all: printed on a GPU run only (a --precompile run compares nothing). */
#define REPORT(...)                                                                                \
  do {                                                                                             \
    if (!g_dry) printf(__VA_ARGS__);                                                               \
  } while (0)

static void run_all(void);

/* ---- --precompile: host memory stands in for device memory ------------------------------- */

static CUresult dry_alloc(CUdeviceptr *p, size_t n) {
  void *h = malloc(n ? n : 1);
  if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)h;
  return CUDA_SUCCESS;
}
static CUresult dry_free(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
static CUresult dry_htod(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
static CUresult dry_dtoh(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
static CUresult dry_memset(CUdeviceptr dst, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)dst, v, n);
  return CUDA_SUCCESS;
}
static CUresult dry_sync(void) { return CUDA_SUCCESS; }

/* Opens the kernel cache: the disk cache of HOT_CACHE_DIR when set (HOT_NO_DISK_CACHE=1 still
 * wins), else memory only. */
static void open_cache(void) {
  const char *dir = getenv("HOT_CACHE_DIR");
  hot_kcache_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.disk = dir && *dir ? 0 : -1;
  CKRT(kcache_open(&kc, &cfg, err, sizeof err));
}

static void print_cache(const char *what) {
  hot_kcache_stats st;
  kcache_stats_get(kc, &st);
  printf("kernel cache (%s): %llu compiled (%.0f ms), %llu disk hits, %llu memory hits, %s\n", what,
         (unsigned long long)st.compiles, st.compile_ms, (unsigned long long)st.disk_hits,
         (unsigned long long)st.memory_hits, kcache_dir(kc) ? kcache_dir(kc) : "memory only");
}

/* --precompile ARCHS: every plan and kernel of run_all for each arch, no driver. */
static int precompile(const char *archs) {
  const char *dir = getenv("HOT_CACHE_DIR");
  if (!dir || !*dir) {
    fprintf(stderr, "test_gpu_kernels: --precompile needs HOT_CACHE_DIR (the cache directory to fill)\n");
    return 1;
  }
  hot_arch list[8];
  int n = 0;
  char buf[256];
  if (snprintf(buf, sizeof buf, "%s", archs) >= (int)sizeof buf) {
    fprintf(stderr, "test_gpu_kernels: --precompile: arch list too long\n");
    return 1;
  }
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == 8 || plan_arch_parse(t, &list[n]) != 0) {
      fprintf(stderr, "test_gpu_kernels: --precompile: unknown arch '%s' (sm_80 sm_86 sm_89 sm_90 sm_90a)\n", t);
      return 1;
    }
    ++n;
  }
  if (n == 0) {
    fprintf(stderr, "test_gpu_kernels: --precompile: no arch given (e.g. sm_90,sm_90a)\n");
    return 1;
  }
  static cuda_driver dry;
  dry.cuMemAlloc = dry_alloc;
  dry.cuMemFree = dry_free;
  dry.cuMemcpyHtoD = dry_htod;
  dry.cuMemcpyDtoH = dry_dtoh;
  dry.cuMemsetD8 = dry_memset;
  dry.cuCtxSynchronize = dry_sync;
  d = &dry;
  g_dry = 1;
  open_cache();
  for (int i = 0; i < n; ++i) {
    g_arch = list[i];
    int before = g_kernels;
    run_all();
    printf("precompile %s: %d kernel loads\n", plan_arch_caps(g_arch)->name, g_kernels - before);
  }
  print_cache("precompile");
  kcache_close(kc);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--precompile")) return precompile(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: test_gpu_kernels [--precompile ARCHS]   (HOT_ARCH, HOT_CACHE_DIR: see the file's header)\n");
    return 1;
  }
  /* HOT_ARCH: only these plans (checked before the driver, so a bad value is named anywhere) */
  const char *forced = getenv("HOT_ARCH");
  hot_arch want = HOT_ARCH_SM80;
  int have_want = forced && *forced;
  if (have_want && plan_arch_parse(forced, &want) != 0) {
    printf("FAIL: HOT_ARCH=%s is not an arch hot plans for (sm_80 sm_86 sm_89 sm_90 sm_90a)\n", forced);
    return 1;
  }
  rt_status r = cuda_driver_get(&d, err, sizeof err);
  if (r != RT_OK) {
    printf("SKIP: %s (%s)\n", r == RT_ERR_NO_DRIVER ? "no CUDA driver" : "no CUDA device", err);
    return 77;
  }
  CUdevice dev;
  CUcontext ctx;
  int major = 0, minor = 0;
  CK(d->cuDeviceGet(&dev, 0));
  CK(d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR + 1, dev));
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
  if (plan_arch_parse(arch, &g_arch) != 0) {
    printf("SKIP: %s is not an arch hot plans for (sm_80, sm_86, sm_89, sm_90)\n", arch);
    return 77;
  }
  /* the arch list: the device's, and on a 9.0 device also sm_90a (wgmma); HOT_ARCH: one of them */
  hot_arch runs[2] = {g_arch, HOT_ARCH_SM90A};
  int nruns = g_arch == HOT_ARCH_SM90 ? 2 : 1;
  if (have_want) {
    if (want != g_arch && !(want == HOT_ARCH_SM90A && g_arch == HOT_ARCH_SM90)) {
      printf("SKIP: HOT_ARCH=%s: its kernels do not load on this %s device\n", forced, arch);
      return 77;
    }
    runs[0] = want;
    nruns = 1;
  }
  CK(d->cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(d->cuCtxSetCurrent(ctx));
  open_cache();
  for (int i = 0; i < nruns; ++i) {
    g_arch = runs[i];
    if (g_arch == HOT_ARCH_SM90A)
      printf("device arch %s: the sm_90a plans (wgmma GEMMs, templates/gemm_wgmma.cu)\n", arch);
    else
      printf("device arch %s\n", arch);
    run_all();
  }
  print_cache("run");
  kcache_close(kc);
  d->cuDevicePrimaryCtxRelease(dev);
  printf("PASS: %d kernel loads, %d bit-exact comparisons on %s (plans:", g_kernels, g_checks, arch);
  for (int i = 0; i < nruns; ++i) printf(" %s", plan_arch_caps(runs[i])->name);
  printf(")\n");
  return 0;
}

/* Every check of this file for the plans of g_arch. */
static void run_all(void) {
  static const hot_dtype dts[] = {HOT_DT_F32, HOT_DT_BF16, HOT_DT_F16};
  for (size_t t = 0; t < 3; ++t) {
    for (int layout = 0; layout < 2; ++layout) {
      rng_state = 0x1234u + t * 7u + (uint64_t)layout;
      hot_dtype dt = dts[t];
      /* T = 3 x 197, O = 100 (b = 16 pads to 112), I = 137; p = 64 gives K = 4 x 36 x 3 = 432
       * (sample) or 10 x 36 = 360 (flat): not multiples of 32. */
      hot_layer_plan pl = plan_for(3, 197, 100, 137, dt, (hot_layout)layout, 64);
      void *gy = make_tensor(pl.T, pl.O, dt, 1), *w = make_tensor(pl.O, pl.I, dt, 0),
           *x = make_tensor(pl.T, pl.I, dt, 1);
      check_hq_g(&pl, gy, HOT_GRAN_ROW);
      check_hq_g(&pl, gy, HOT_GRAN_TENSOR);
      check_hq_g(&pl, gy, HOT_GRAN_SAMPLE);
      check_hq_w(&pl, w);
      check_gemms(&pl, gy, w, x);
      check_bias(&pl, gy);
      check_lqs(&pl, gy, -1, "awkward sizes");
      REPORT("dtype %s layout %s: HQ g (row, tensor, sample), HQ w, GEMM g_x, GEMM g_w, bias, LQS "
             "bit-exact\n", plan_dtype_name(dt), plan_layout_name(pl.hla.layout));
      /* HLA x^ and g^ for p = 16 and 64 (p = 16: K = 3 x 13 x 10 = 390 / 37 x 10 = 370) */
      static const int ps[] = {16, 64};
      for (int i = 0; i < 2; ++i) {
        hot_layer_plan ph = plan_for(3, 197, 100, 137, dt, (hot_layout)layout, ps[i]);
        int unp = check_abc_x(&ph, x);
        check_hla(&ph, gy, HOT_K_HLA_G);
        REPORT("dtype %s layout %s p %d: HLA x^ (GEMM and saved layouts), g^%s bit-exact (K = "
               "%lld, %lld scale groups)\n", plan_dtype_name(dt), plan_layout_name(ph.hla.layout),
               ps[i], unp ? ", abc_unpack" : "", (long long)ph.hla.k, (long long)ph.hla.groups);
      }
      /* under layout sample also per tensor (one group, unsegmented GEMM) and mixed (g^ per
       * sample, x^ per tensor: grouped layout, the x^ scale repeated) */
      if (layout == HOT_LAYOUT_SAMPLE) {
        static const hot_gran gs[2][2] = {{HOT_GRAN_TENSOR, HOT_GRAN_TENSOR},
                                          {HOT_GRAN_SAMPLE, HOT_GRAN_TENSOR}};
        for (int i = 0; i < 2; ++i) {
          hot_layer_plan pg = plan_scales(3, 197, 100, 137, dt, HOT_LAYOUT_SAMPLE, 64, gs[i][0],
                                          gs[i][1]);
          int unp = check_abc_x(&pg, x);
          check_hla(&pg, gy, HOT_K_HLA_G);
          check_gemms(&pg, gy, w, x);
          REPORT("dtype %s layout sample, g^ %s, x^ %s: HLA x^ (both layouts), g^%s, GEMMs "
                 "bit-exact (%lld groups)\n", plan_dtype_name(dt), plan_gran_name(pg.hla.g.gran),
                 plan_gran_name(pg.hla.x.gran), unp ? ", abc_unpack" : "",
                 (long long)pg.hla.groups);
        }
      }
      free(gy); free(w); free(x);
    }
    /* paper_code on L = 197: p = 1 (K = T), b = 4, SAWB for w' and x^ */
    {
      rng_state = 0x777u + t;
      hot_dtype dt = dts[t];
      hot_layer_plan pl = plan_paper_code(3, 197, 100, 137, dt);
      if (pl.hla.block != 1 || pl.hla.k != pl.T) FAIL("paper_code plan: p = %d", pl.hla.block);
      void *gy = make_tensor(pl.T, pl.O, dt, 1), *w = make_tensor(pl.O, pl.I, dt, 0),
           *x = make_tensor(pl.T, pl.I, dt, 1);
      int unp = check_abc_x(&pl, x); /* SAWB */
      check_hla(&pl, gy, HOT_K_HLA_G);
      check_hq_w_sawb(&pl, w);
      check_hq_g(&pl, gy, HOT_GRAN_TENSOR);
      check_gemms(&pl, gy, w, x);
      REPORT("dtype %s paper_code (p = 1, b = %d): HLA x^ (sawb, both layouts), g^%s, HQ w' "
             "(sawb), g', GEMMs bit-exact\n", plan_dtype_name(dt), pl.hq.block,
             unp ? ", abc_unpack" : "");
      free(gy); free(w); free(x);
    }
    /* LQS picks per row on token outliers and the coarse candidate (per sample, B = 2) on
     * Gaussian data (CONTRACT.md 6, 8) */
    {
      rng_state = 0x5150u + t;
      hot_dtype dt = dts[t];
      hot_layer_plan pl = plan_for(2, 64, 128, 64, dt, HOT_LAYOUT_SAMPLE, 64);
      void *tok = make_token_outliers(pl.T, pl.O, dt), *gau = make_tensor(pl.T, pl.O, dt, 0);
      check_lqs(&pl, tok, HOT_GRAN_ROW, "token outliers");
      check_lqs(&pl, gau, HOT_GRAN_SAMPLE, "gaussian");
      REPORT("dtype %s: LQS token outliers -> row, gaussian -> sample, bit-exact\n",
             plan_dtype_name(dt));
      free(tok); free(gau);
    }
  }
  /* A large layer: many chunks per row (O = 3072 > 8 x 256 register chunks) and big tiles. */
  {
    rng_state = 99;
    hot_layer_plan pl = plan_for(8, 256, 3072, 768, HOT_DT_BF16, HOT_LAYOUT_SAMPLE, 64);
    void *gy = make_tensor(pl.T, pl.O, HOT_DT_BF16, 1), *w = make_tensor(pl.O, pl.I, HOT_DT_BF16, 0),
         *x = make_tensor(pl.T, pl.I, HOT_DT_BF16, 1);
    check_hq_g(&pl, gy, HOT_GRAN_ROW);
    check_hq_g(&pl, gy, HOT_GRAN_TENSOR);
    check_hq_w(&pl, w);
    check_gemms(&pl, gy, w, x);
    int unp = check_abc_x(&pl, x);
    check_hla(&pl, gy, HOT_K_HLA_G);
    check_lqs(&pl, gy, -1, "large");
    REPORT("large layer (T=2048, O=3072, I=768, bf16) bit-exact (HLA%s and LQS included)\n",
           unp ? ", abc_unpack" : "");
    free(gy); free(w); free(x);
  }
}

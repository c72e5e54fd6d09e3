/* plan.c — from a layer spec and a target arch to everything the kernels, their CPU twins and
 * the runtime need (padded sizes, ranks and rows, quantizers, GEMM paths, tiles, launch geometry,
 * ABC bytes, operation counts). Pure C: no Lua, no allocation, no I/O. */
#include "plan.h"

#include <stdint.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basis.h"
#include "diag.h"
#include "fields.h"
#include "kernel_desc.h"
#include "plan_arith.h"

/* ---- defaults -------------------------------------------------------------------------- */

/* The defaults of every recipe are the columns of field_list.h (fields_defaults). */
void plan_spec_defaults(hot_layer_spec *s, hot_recipe recipe) { fields_defaults(s, recipe); }

/* ---- helpers --------------------------------------------------------------------------- */

static int is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
static int ilog2(int64_t v) {
  int k = 0;
  while (((int64_t)1 << k) < v) ++k;
  return k;
}
/* Largest power of two dividing v (v >= 1), capped at cap. */
static int64_t pow2_dividing(int64_t v, int64_t cap) {
  int64_t p = 1;
  while (p < cap && v % (2 * p) == 0) p *= 2;
  return p;
}

static int quant_ok(const hot_quant *q, const char *what, char *err, size_t n) {
  if (q->bits < 2 || q->bits > 8)
    return diag_errf(err, n, "%s must be in [2, 8] (got %d)", what, q->bits);
  return 0;
}

unsigned plan_gemm_smem(hot_gemm_path path, hot_codes codes, int tile_m, int tile_n, int tile_k,
                        int stages) {
  /* Per stage one A tile (tile_m rows) and one B tile (tile_n rows) of tile_k codes each (the
   * headers of the path's template), plus what the path adds (alignment, barriers). */
  const hot_gemm_path_info *g = plan_gemm_path_info(path);
  const hot_codes_info *c = plan_codes_info(codes);
  if (!g || !c) return 0;
  const int64_t row_bytes = tile_k / c->per_byte;
  return (unsigned)((int64_t)stages * (tile_m + tile_n) * row_bytes + g->smem_extra);
}

/* Problems with fewer 128x128 tiles than about two waves of 100+ SMs use smaller tiles. */
static int gemm_is_big(const hot_gemm_plan *g) { return cdiv(g->m, 128) * cdiv(g->n, 128) >= 200; }

/* Whether v is in the 0-terminated list `allowed`; writes the list as "64, 128 or 256". */
static int tile_allowed(const int allowed[4], int v) {
  for (int i = 0; i < 4 && allowed[i]; ++i)
    if (allowed[i] == v) return 1;
  return 0;
}
static const char *tile_list(const int allowed[4], char *buf, size_t n) {
  int count = 0;
  while (count < 4 && allowed[count]) ++count;
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < count && used < n; ++i) {
    const char *sep = i == 0 ? "" : i == count - 1 ? " or " : ", ";
    const int w = snprintf(buf + used, n - used, "%s%d", sep, allowed[i]);
    used += w > 0 ? (size_t)w : 0;
  }
  return buf;
}

/* "warps_n 1: wgmma_s8, 2: tma_s8": the warpgroup paths by the warps_n they use. */
static const char *warpgroup_list(char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < HOT_GEMM_PATH_COUNT && used < n; ++i) {
    const hot_gemm_path_info *g = plan_gemm_path_info((hot_gemm_path)i);
    if (g->warps != HOT_WARPS_WARPGROUP) continue;
    const int w = snprintf(buf + used, n - used, "%s%d: %s", used ? ", " : "warps_n ", g->warps_n,
                           g->name);
    used += w > 0 ? (size_t)w : 0;
  }
  return buf;
}

/* The tile of a warpgroup path (the table's row): warpgroups of 64 rows, one K slab per stage;
 * warps follow from tile_m (4 per warpgroup) and the row's warps_n, so requests for them must
 * agree. The shared memory is checked against the arch by plan_gemm. */
static int plan_gemm_wgmma(hot_gemm_plan *g, const hot_tile *req, const hot_gemm_path_info *pi,
                           const char *what, char *err, size_t n) {
  const int big = gemm_is_big(g);
  const char *pn = pi->name;
  char list[64];
  g->tile_m = req->tile_m ? req->tile_m : pi->tile_m_def[big];
  g->tile_n = req->tile_n ? req->tile_n : pi->tile_n_def[big];
  g->tile_k = req->tile_k ? req->tile_k : pi->tile_k_def;
  g->stages = req->stages ? req->stages : pi->stages_def[big];
  if (!tile_allowed(pi->tile_m, g->tile_m))
    return diag_errf(err, n, "%s.tile_m must be %s for %s (got %d)", what,
                    tile_list(pi->tile_m, list, sizeof list), pn, g->tile_m);
  if (!tile_allowed(pi->tile_n, g->tile_n))
    return diag_errf(err, n, "%s.tile_n must be %s for %s (got %d)", what,
                    tile_list(pi->tile_n, list, sizeof list), pn, g->tile_n);
  if (g->tile_k != pi->k_step)
    return diag_errf(err, n, "%s.tile_k must be %d for %s (one %d-byte swizzled slab; got "
                    "%d)", what, pi->k_step, pn, pi->k_step / plan_codes_info(pi->codes)->per_byte,
                    g->tile_k);
  g->warps_m = g->tile_m / 16;
  g->warps_n = pi->warps_n;
  if ((req->warps_m && req->warps_m != g->warps_m) || (req->warps_n && req->warps_n != g->warps_n))
    return diag_errf(err, n, "%s: %s uses %d x %d warps for tile_m = %d (4 warps per 64-row "
                    "warpgroup; %s; got %d x %d)", what, pn, g->warps_m, g->warps_n, g->tile_m,
                    warpgroup_list(list, sizeof list), req->warps_m, req->warps_n);
  if (g->stages < pi->stages_min || g->stages > pi->stages_max)
    return diag_errf(err, n, "%s.stages must be in [%d, %d] for %s (got %d)", what, pi->stages_min,
                    pi->stages_max, pn, g->stages);
  return 0;
}

/* The path of a GEMM on `caps` (CONTRACT.md 7), from the GEMM-path table: the tile's warps_n may
 * ask for a path (tma_s8: 2); codes of `bits` bits take the narrowest format that holds them. */
static hot_gemm_path gemm_path(const hot_arch_caps *caps, const hot_tile *req, int bits) {
  return plan_gemm_path_choose(caps, req->warps_n, bits);
}

/* Defaults and checks the tile of an mma.sync GEMM (the table's row: INT8 or INT4 codes); warps
 * are free (default 2 x 2, at most 8), each a grid of 16 x 8 mma tiles. */
static int plan_gemm_mma(hot_gemm_plan *g, const hot_tile *req, const hot_gemm_path_info *pi,
                         const char *what, char *err, size_t n) {
  const int big = gemm_is_big(g);
  char list[64];
  g->tile_m = req->tile_m ? req->tile_m : pi->tile_m_def[big];
  g->tile_n = req->tile_n ? req->tile_n : pi->tile_n_def[big];
  const int k_step = pi->k_step, k_max = pi->k_max_steps * pi->k_step;
  g->tile_k = req->tile_k ? req->tile_k : pi->tile_k_def;
  g->warps_m = req->warps_m ? req->warps_m : 2;
  g->warps_n = req->warps_n ? req->warps_n : 2;
  g->stages = req->stages ? req->stages : pi->stages_def[big];
  if (!tile_allowed(pi->tile_m, g->tile_m))
    return diag_errf(err, n, "%s.tile_m must be %s (got %d)", what,
                    tile_list(pi->tile_m, list, sizeof list), g->tile_m);
  if (!tile_allowed(pi->tile_n, g->tile_n))
    return diag_errf(err, n, "%s.tile_n must be %s (got %d)", what,
                    tile_list(pi->tile_n, list, sizeof list), g->tile_n);
  if (g->tile_k % k_step != 0 || g->tile_k < k_step || g->tile_k > k_max)
    return diag_errf(err, n, "%s.tile_k must be a multiple of %d in [%d, %d] for %s (got %d)",
                    what, k_step, k_step, k_max, pi->name, g->tile_k);
  if (g->warps_m < 1 || g->warps_n < 1 || g->warps_m * g->warps_n > 8)
    return diag_errf(err, n, "%s: warps_m x warps_n must be in [1, 8] (got %d x %d)", what,
                    g->warps_m, g->warps_n);
  if (g->tile_m % (16 * g->warps_m) != 0 || g->tile_n % (8 * g->warps_n) != 0)
    return diag_errf(err, n, "%s: tile %dx%d does not split into %dx%d warps of mma tiles", what,
                    g->tile_m, g->tile_n, g->warps_m, g->warps_n);
  if (g->stages < pi->stages_min || g->stages > pi->stages_max)
    return diag_errf(err, n, "%s.stages must be in [%d, %d] (got %d)", what, pi->stages_min,
                    pi->stages_max, g->stages);
  return 0;
}

/* Chooses and checks the tile configuration of one GEMM (m x n x k) by its path's row. */
static int plan_gemm(hot_gemm_plan *g, const hot_tile *req, const hot_arch_caps *caps,
                     hot_gemm_path path, const char *what, char *err, size_t n) {
  const hot_gemm_path_info *pi = plan_gemm_path_info(path);
  g->path = path;
  g->codes = pi->codes;
  if (pi->warps == HOT_WARPS_WARPGROUP) {
    if (plan_gemm_wgmma(g, req, pi, what, err, n)) return -1;
  } else if (plan_gemm_mma(g, req, pi, what, err, n)) {
    return -1;
  }
  /* a path that zero-fills its last K tile reads K padded to its format's block only (recipe
   * nvfp4's MXFP8 g_w GEMM: the quantisers' layout, read in place) */
  const int kb = plan_codes_info(g->codes)->block;
  g->k_pad = round_up(g->k, pi->k_ragged && kb > 0 ? kb : g->tile_k);
  g->segmented = 0;
  g->seg_k_pad = g->k_pad;
  g->smem = plan_gemm_smem(path, g->codes, g->tile_m, g->tile_n, g->tile_k, g->stages);
  if (g->smem > (unsigned)caps->max_smem_optin)
    return diag_errf(err, n, "%s: tile %dx%dx%d with %d stages needs %u bytes of shared memory, %s "
                "allows %d", what, g->tile_m, g->tile_n, g->tile_k, g->stages, g->smem,
                caps->name, caps->max_smem_optin);
  return 0;
}

static hot_kernel_plan *add_kernel(hot_layer_plan *p, hot_kernel_role role,
                                   const hot_kernel_desc *d) {
  hot_kernel_plan *k = &p->kernels[p->n_kernels++];
  memset(k, 0, sizeof *k);
  k->role = role;
  k->desc = d;
  k->templ = d->templ_for ? d->templ_for(p, role) : d->templ;
  k->block[0] = k->block[1] = k->block[2] = 1;
  k->grid[0] = k->grid[1] = k->grid[2] = 1;
  return k;
}

/* Kernel names encode every parameter that changes the generated code, so two layers with
 * the same parameters share one binary and the name alone identifies it (each descriptor's
 * name()). A name that does not fit is an error. */
static int name_kernels(hot_layer_plan *p, char *err, size_t errlen) {
  for (int i = 0; i < p->n_kernels; ++i) {
    hot_kernel_plan *k = &p->kernels[i];
    const int w = k->desc->name(p, k->role, k->name, sizeof k->name);
    if (w < 0 || (size_t)w >= sizeof k->name)
      return diag_errf(err, errlen, "kernel %s: its name does not fit %zu bytes",
                      plan_role_name(k->role), sizeof k->name);
  }
  return 0;
}

/* ---- the planner, in stages ------------------------------------------------------------ */

/* Refuses a size the kernels cannot address (an int argument or index). */
static int int_limit(const char *what, int64_t v, char *err, size_t n) {
  if (v >= 0 && v <= HOT_LIMIT_INT) return 0;
  return diag_errf(err, n, "%s = %lld exceeds the kernels' limit of %lld (2^31 - 1: a 32-bit int "
                  "argument/index)", what, (long long)v, HOT_LIMIT_INT);
}

/* Stage 1: arguments, T = B * L, and the sizes every kernel takes as int arguments. */
static int plan_sizes(const hot_layer_spec *s, int64_t batch, int64_t tokens, hot_layer_plan *p,
                      char *err, size_t n) {
  if (batch < 1 || tokens < 1)
    return diag_errf(err, n, "batch and tokens must be >= 1 (got %lld, %lld)", (long long)batch,
                    (long long)tokens);
  if (s->in_features < 1 || s->out_features < 1)
    return diag_errf(err, n, "in_features and out_features must be >= 1 (got %lld, %lld)",
                    (long long)s->in_features, (long long)s->out_features);
  if (int_limit("batch", batch, err, n) || int_limit("tokens (L)", tokens, err, n) ||
      int_limit("out_features (O)", s->out_features, err, n) ||
      int_limit("in_features (I)", s->in_features, err, n))
    return -1;
  if (mul_ok(batch, tokens, &p->T) || p->T > HOT_LIMIT_INT)
    return diag_errf(err, n, "T = batch x tokens = %lld x %lld exceeds the kernels' limit of %lld "
                    "(2^31 - 1: a 32-bit int argument/index)", (long long)batch, (long long)tokens,
                    HOT_LIMIT_INT);
  p->B = batch;
  p->L = tokens;
  p->O = s->out_features;
  p->I = s->in_features;
  return 0;
}

/* w' and x^ have no random stream (CONTRACT.md 3, 5): only g' and g^ may round stochastically. */
static int quant_round_ok(const hot_quant *q, int sr_allowed, const char *what, char *err,
                          size_t n) {
  if (q->round != HOT_ROUND_RTN && q->round != HOT_ROUND_SR)
    return diag_errf(err, n, "%s must be rtn or sr (got %d)", what, (int)q->round);
  if (!sr_allowed && q->round != HOT_ROUND_RTN)
    return diag_errf(err, n, "%s must be rtn (no random stream is defined for it)", what);
  return 0;
}

/* Recipe nvfp4's GEMM path for `codes` on caps: the arch's block-scaled path with a template
 * (sm_120a: mma_nvfp4 / mma_mxfp8), else the CPU backend's row `cpu` (plan_layer refuses the
 * recipe on a GPU arch without one before this). */
static hot_gemm_path block_path(const hot_arch_caps *caps, hot_codes codes, hot_gemm_path cpu) {
  const hot_gemm_path g = plan_block_path_choose(caps, codes);
  return g == HOT_GEMM_PATH_COUNT ? cpu : g;
}

/* The K tile of recipe nvfp4's g_x GEMM on a path that reads K in whole tiles (mma_nvfp4): the
 * GEMM reads the codes of g' and w' in the quantisers' layout, rows of o_pad = O rounded up to 16
 * (the SR index of g' is t * o_pad + o: CONTRACT.md 20.3), so its K tile must divide o_pad. An
 * unset tile_k takes the path's default, halved while it does not divide o_pad (down to the K
 * step); a set one, or o_pad that no allowed K tile divides, is refused naming both. */
static int nvfp4_gx_tile_k(hot_gemm_path path, const hot_layer_plan *p, const char *arch,
                           hot_tile *req, char *err, size_t n) {
  const hot_gemm_path_info *pi = plan_gemm_path_info(path);
  const int64_t o_pad = p->hq.o_pad;
  if (pi->k_step <= plan_codes_info(pi->codes)->block) return 0; /* one block per K step */
  if (req->tile_k) {
    if (o_pad % req->tile_k == 0) return 0;
    return diag_errf(err, n, "tile_gx.tile_k = %d does not divide o_pad = %lld (out_features %lld "
                     "rounded up to 16): recipe nvfp4's g_x GEMM (%s) reads the rows of g' and "
                     "w' in whole K tiles", req->tile_k, (long long)o_pad, (long long)p->O,
                     pi->name);
  }
  for (int t = pi->tile_k_def; t >= pi->k_step; t /= 2)
    if (o_pad % t == 0) {
      req->tile_k = t;
      return 0;
    }
  return diag_errf(err, n, "recipe nvfp4 on %s needs out_features rounded up to 16 to be a "
                   "multiple of %d (got out_features %lld, o_pad %lld): its g_x GEMM (%s) reads "
                   "the rows of g' and w' in whole K tiles of %d to %d values", arch, pi->k_step,
                   (long long)p->O, (long long)o_pad, pi->name, pi->k_step,
                   pi->k_step * pi->k_max_steps);
}

/* Stage 2: HQ (CONTRACT.md 3): block, padding, quantizers, the g_x GEMM. */
static int plan_hq(const hot_layer_spec *s, const hot_arch_caps *caps, hot_layer_plan *p,
                   char *err, size_t n) {
  p->hq.enabled = s->hq.enabled;
  p->hq.g = s->hq.g;
  p->hq.w = s->hq.w;
  if (quant_ok(&s->hq.g, "hq.bits", err, n) || quant_ok(&s->hq.w, "hq.w_bits", err, n) ||
      quant_round_ok(&s->hq.g, 1, "hq.g.round (g')", err, n) ||
      quant_round_ok(&s->hq.w, 0, "hq.w.round (w')", err, n))
    return -1;
  /* g': one scale per tensor, sample or row (AUTO: LQS); w' has one per tensor (CONTRACT 3). */
  if ((int)s->hq.g.gran < 0 || (int)s->hq.g.gran > (int)HOT_GRAN_SAMPLE)
    return diag_errf(err, n, "hq.g.gran (scale of g') must be tensor, token, auto or sample (got %d)",
                    (int)s->hq.g.gran);
  if (s->hq.w.gran != HOT_GRAN_TENSOR)
    return diag_errf(err, n, "hq.w.gran (scale of w') must be tensor (got %s): w' has one scale",
                    plan_gran_name(s->hq.w.gran));
  if (s->hq.pad) {
    if (!is_pow2(s->hq.block) || s->hq.block < 2 || s->hq.block > 256)
      return diag_errf(err, n, "hq.block must be a power of two in [2, 256] (got %d)", s->hq.block);
    p->hq.block = s->hq.block;
  } else {
    if (!is_pow2(s->hq.block) || s->hq.block > 256)
      return diag_errf(err, n, "hq.block must be a power of two in [1, 256] (got %d)", s->hq.block);
    p->hq.block = (int)pow2_dividing(p->O, s->hq.block); /* the paper code's shrinking rule */
  }
  p->hq.o_pad = round_up(p->O, p->hq.block); /* O <= 2^31 - 1: no overflow */
  if (int_limit("hq o_pad (O rounded up to hq.block)", p->hq.o_pad, err, n)) return -1;
  const hot_gemm_path gx_path =
      p->fmt == HOT_FMT_NVFP4
          ? block_path(caps, HOT_CODES_NVFP4, HOT_GEMM_BS_NVFP4)
          : gemm_path(caps, &s->tile_gx, p->hq.g.bits > p->hq.w.bits ? p->hq.g.bits : p->hq.w.bits);
  p->hq.gemm.m = p->T;
  p->hq.gemm.n = p->I;
  p->hq.gemm.k = p->hq.o_pad;
  hot_tile req = s->tile_gx;
  if (p->fmt == HOT_FMT_NVFP4 && p->hq.enabled &&
      nvfp4_gx_tile_k(gx_path, p, caps->name, &req, err, n))
    return -1;
  if (plan_gemm(&p->hq.gemm, &req, caps, gx_path, "tile_gx", err, n)) return -1;
  p->hq.codes = p->hq.gemm.codes;
  return int_limit("hq k_pad (g_x GEMM K)", p->hq.gemm.k_pad, err, n);
}

/* The scale granularity of g^ or x^ (CONTRACT.md 6): per tensor, or per sample where the layout
 * keeps the samples apart; auto resolves to sample under layout sample, else tensor. */
static int plan_hla_gran(hot_quant *q, const char *what, hot_layout layout, const hot_layer_plan *p,
                         int pb, char *err, size_t n) {
  if (q->gran == HOT_GRAN_AUTO) q->gran = layout == HOT_LAYOUT_SAMPLE ? HOT_GRAN_SAMPLE : HOT_GRAN_TENSOR;
  if (q->gran == HOT_GRAN_ROW)
    return diag_errf(err, n, "hla.scale (%s) cannot be per token: tokens are the contraction axis of "
                    "the integer g_w GEMM, where a per-token scale cannot stay outside it; use "
                    "tensor, sample or auto", what);
  if (q->gran != HOT_GRAN_TENSOR && q->gran != HOT_GRAN_SAMPLE)
    return diag_errf(err, n, "hla.scale (%s) must be tensor, sample or auto (got %d)", what,
                    (int)q->gran);
  if (q->gran == HOT_GRAN_SAMPLE && layout == HOT_LAYOUT_FLAT && p->B > 1)
    return diag_errf(err, n, "hla.scale = sample (%s) needs hla.layout = sample: layout flat cuts "
                    "token blocks across the %lld samples (L = %lld, p = %d), so no block belongs "
                    "to one sample; use hla.layout = \"sample\", hla.scale = \"tensor\" or "
                    "\"auto\"", what, (long long)p->B, (long long)p->L, pb);
  return 0;
}

/* The HLA block p into p->hla.block: the spec's, or under hla.block = 0 the authors' rule. */
static int plan_hla_block(const hot_layer_spec *s, hot_layer_plan *p, char *err, size_t n) {
  int pb = s->hla.block;
  if (pb == 0) {
    /* the authors' rule, uncapped: may be 1 (HLA is then a no-op) or beyond the kernels' p */
    const int64_t pa = pow2_dividing(p->L, (int64_t)1 << 62);
    if (pa > HOT_MAX_P)
      return diag_errf(err, n, "hla.block = 0 (the authors' rule: the largest power of two dividing "
                      "L) gives p = %lld for L = %lld, beyond the HLA kernels' p <= %d; the "
                      "authors' choice cannot be reproduced: set hla.block (e.g. %d) or use the "
                      "recipe hot or paper", (long long)pa, (long long)p->L, HOT_MAX_P, HOT_MAX_P);
    pb = (int)pa;
  } else if (!is_pow2(pb) || pb < 2 || pb > HOT_MAX_P) {
    return diag_errf(err, n, "hla.block must be a power of two in [2, %d] (got %d)", HOT_MAX_P, pb);
  }
  p->hla.block = pb;
  return 0;
}

/* The kept Hadamard basis rows (p->hla.rank, p->hla.rows) for block p->hla.block. */
static int plan_hla_rows(const hot_layer_spec *s, hot_layer_plan *p, char *err, size_t n) {
  const int pb = p->hla.block;
  if (pb == 1) {
    p->hla.rank = 1; /* H_1 = [1]: the projection is the identity */
    p->hla.rows[0] = 0;
    return 0;
  }
  if (s->hla.selection == HOT_SEL_TRI && (s->hla.keep < 1 || s->hla.keep > 50))
    return diag_errf(err, n, "hla.keep must be in [1, 50] (got %d)", s->hla.keep);
  if (s->hla.selection == HOT_SEL_PREFIX && (s->hla.rank < 1 || s->hla.rank > pb))
    return diag_errf(err, n, "hla.rank must be in [1, %d] for hla.block %d (got %d)", pb, pb,
                    s->hla.rank);
  p->hla.rank = basis_select(s->hla.selection, pb, s->hla.keep, s->hla.rank, p->hla.rows);
  if (p->hla.rank < 1) return diag_errf(err, n, "hla: invalid basis selection");
  return 0;
}

/* group_k, and with several scale groups one K segment per group, each padded to the K tile. */
static int plan_hla_groups_k(hot_layer_plan *p, char *err, size_t n) {
  p->hla.group_k = p->hla.k / p->hla.groups; /* groups divides blocks: segments of equal size */
  if (p->hla.groups > 1) {
    hot_gemm_plan *g = &p->hla.gemm;
    g->segmented = 1;
    g->seg_k_pad = round_up(p->hla.group_k, g->tile_k); /* group_k <= 2^31 - 1: no overflow */
    if (mul_ok(p->hla.groups, g->seg_k_pad, &g->k_pad))
      return diag_errf(err, n, "hla k_pad = %lld groups x %lld overflows int64",
                      (long long)p->hla.groups, (long long)g->seg_k_pad);
  }
  return 0;
}

/* Stage 3: HLA (CONTRACT.md 4): block, layout, segments, basis rows, the g_w GEMM. */
static int plan_hla(const hot_layer_spec *s, const hot_arch_caps *caps, hot_layer_plan *p,
                    char *err, size_t n) {
  p->hla.enabled = s->hla.enabled;
  p->hla.selection = s->hla.selection;
  p->hla.keep = s->hla.keep;
  p->hla.g = s->hla.g;
  p->hla.x = s->hla.x;
  if (quant_ok(&s->hla.g, "hla.bits", err, n) || quant_ok(&s->hla.x, "hla.x_bits", err, n) ||
      quant_round_ok(&s->hla.g, 1, "hla.g.round (g^)", err, n) ||
      quant_round_ok(&s->hla.x, 0, "hla.x.round (x^)", err, n))
    return -1;
  if (plan_hla_block(s, p, err, n)) return -1;
  const int pb = p->hla.block;
  hot_layout layout = s->hla.layout;
  if (layout == HOT_LAYOUT_AUTO) layout = p->L % pb == 0 ? HOT_LAYOUT_SAMPLE : HOT_LAYOUT_FLAT;
  p->hla.layout = layout;
  int64_t seg = layout == HOT_LAYOUT_SAMPLE ? p->L : p->T;
  if (!s->hla.pad && seg % pb != 0)
    return diag_errf(err, n, "hla.block %d does not divide the %s length %lld and padding is off",
                    pb, layout == HOT_LAYOUT_SAMPLE ? "sample" : "batch", (long long)seg);
  p->hla.segments = layout == HOT_LAYOUT_SAMPLE ? p->B : 1;
  if (plan_hla_gran(&p->hla.g, "g^", layout, p, pb, err, n) ||
      plan_hla_gran(&p->hla.x, "x^", layout, p, pb, err, n))
    return -1;
  p->hla.groups = p->hla.g.gran == HOT_GRAN_SAMPLE || p->hla.x.gran == HOT_GRAN_SAMPLE
                      ? p->hla.segments : 1;
  p->hla.seg_len = round_up(seg, pb); /* seg <= 2^31 - 1, pb <= 1024: no overflow */
  if (int_limit("hla seg_len (padded segment)", p->hla.seg_len, err, n)) return -1;
  if (mul_ok(p->hla.segments, p->hla.seg_len / pb, &p->hla.blocks))
    return diag_errf(err, n, "hla blocks = %lld x %lld overflows int64", (long long)p->hla.segments,
                    (long long)(p->hla.seg_len / pb));
  if (plan_hla_rows(s, p, err, n)) return -1;
  if (mul_ok(p->hla.blocks, p->hla.rank, &p->hla.k) || p->hla.k > HOT_LIMIT_INT)
    return diag_errf(err, n, "hla K = blocks x r = %lld x %d exceeds the kernels' limit of %lld "
                    "(2^31 - 1: a 32-bit int argument/index)", (long long)p->hla.blocks,
                    p->hla.rank, HOT_LIMIT_INT);
  p->hla.gemm.m = p->O;
  p->hla.gemm.n = p->I;
  p->hla.gemm.k = p->hla.k;
  /* The g_w GEMM takes INT8 codes whatever hla.bits (CONTRACT.md 7); MXFP8 under nvfp4. */
  const hot_gemm_path gw_path = p->fmt == HOT_FMT_NVFP4
                                     ? block_path(caps, HOT_CODES_MXFP8, HOT_GEMM_BS_MXFP8)
                                     : gemm_path(caps, &s->tile_gw, 8);
  if (plan_gemm(&p->hla.gemm, &s->tile_gw, caps, gw_path, "tile_gw", err, n)) return -1;
  if (plan_hla_groups_k(p, err, n)) return -1;
  p->hla.group_k_pad = p->hla.gemm.seg_k_pad;
  p->abc.enabled = s->abc.enabled && s->hla.enabled; /* ABC keeps x^: it needs HLA */
  return int_limit("hla k_pad (g_w GEMM K)", p->hla.gemm.k_pad, err, n);
}

/* Stage 5: ABC's byte figures (CONTRACT.md 5) and the operation counts of one backward; every
 * product checked. */
static int plan_abc_ops(hot_layer_plan *p, char *err, size_t n) {
  p->abc.fp32_bytes = mul3(p->T, p->I, 4);
  p->abc.bf16_bytes = mul3(p->T, p->I, 2);
  int64_t lb = ilog2(p->hq.block), lp = ilog2(p->hla.block);
  int64_t tio, oi, fw1, fw2;
  p->ops.gx_macs = mul3(p->T, p->I, p->hq.o_pad);
  p->ops.gw_macs = mul3(p->O, p->I, p->hla.k);
  p->ops.fp32_gx_macs = mul3(p->T, p->I, p->O);
  p->ops.fp32_gw_macs = mul3(p->O, p->I, p->T);
  /* fwht_adds = (T + I) * o_pad * log2 b + segments * seg_len * (O + I) * log2 p */
  int bad = add_ok(p->T, p->I, &tio) || add_ok(p->O, p->I, &oi);
  fw1 = bad ? -1 : mul3(tio, p->hq.o_pad, lb);
  fw2 = bad ? -1 : mul3(p->hla.segments, p->hla.seg_len, 1);
  fw2 = fw2 < 0 ? -1 : mul3(fw2, oi, lp);
  if (fw1 < 0 || fw2 < 0 || add_ok(fw1, fw2, &p->ops.fwht_adds)) p->ops.fwht_adds = -1;
  /* The cost model counts 2 * m * n * k_pad integer operations per GEMM. */
  const int64_t gx_ops = mul3(2 * p->T, p->I, p->hq.gemm.k_pad);
  const int64_t gw_ops = mul3(2 * p->O, p->I, p->hla.gemm.k_pad);
  const struct { const char *what; int64_t v; } ops[] = {
      {"g_x MACs (T x I x o_pad)", p->ops.gx_macs},      {"g_w MACs (O x I x K)", p->ops.gw_macs},
      {"fp32 g_x MACs (T x I x O)", p->ops.fp32_gx_macs}, {"fp32 g_w MACs", p->ops.fp32_gw_macs},
      {"FWHT additions", p->ops.fwht_adds},              {"g_x GEMM operations", gx_ops},
      {"g_w GEMM operations", gw_ops},
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i)
    if (ops[i].v < 0)
      return diag_errf(err, n, "%s overflows int64 (T = %lld, O = %lld, I = %lld): too large",
                      ops[i].what, (long long)p->T, (long long)p->O, (long long)p->I);
  return 0;
}

/* Sets a kernel's launch geometry, refusing grids beyond CUDA's launch limits (a persistent
 * kernel's tile count is capped at the grid.x limit instead: it loops over its tiles). */
static int set_geom(hot_kernel_plan *k, const hot_kernel_geom *g, char *err, size_t n) {
  int64_t gx = g->grid_x;
  if (g->persistent && gx > HOT_LIMIT_GRID_X) gx = HOT_LIMIT_GRID_X;
  if (gx < 1 || gx > HOT_LIMIT_GRID_X)
    return diag_errf(err, n, "kernel %s: grid.x = %lld exceeds the launch limit of %lld",
                    plan_role_name(k->role), (long long)gx, HOT_LIMIT_GRID_X);
  if (g->grid_y < 1 || g->grid_y > HOT_LIMIT_GRID_YZ)
    return diag_errf(err, n, "kernel %s: grid.y = %lld exceeds the launch limit of %lld",
                    plan_role_name(k->role), (long long)g->grid_y, HOT_LIMIT_GRID_YZ);
  k->grid[0] = (unsigned)gx;
  k->grid[1] = (unsigned)g->grid_y;
  k->block[0] = g->block;
  k->smem = g->smem;
  k->persistent = g->persistent;
  return 0;
}

/* Stage 4: the kernels in launch order of one step (kd_plan_order) and their geometry, the one
 * place the grid, block and dynamic shared memory of every launch is decided: each role's
 * descriptor (gen/kernels/) gives it, the template documents it in its header, and the runtime,
 * the cost model and the CPU backend read it from here. */
static int plan_kernels(const hot_layer_spec *s, hot_layer_plan *p, char *err, size_t n) {
  const hot_kernel_role *order = kd_plan_order();
  for (int i = 0; i < HOT_K_ROLE_COUNT; ++i) {
    const hot_kernel_desc *d = kd_select(s, p, order[i]);
    if (!d) continue;
    if (p->n_kernels >= HOT_MAX_KERNELS)
      return diag_errf(err, n, "more than %d kernels in one plan", HOT_MAX_KERNELS);
    hot_kernel_plan *k = add_kernel(p, order[i], d);
    hot_kernel_geom g = {0, 0, 0, 0, 0};
    if (d->geom(p, order[i], &g) || set_geom(k, &g, err, n)) return -1;
  }
  return 0;
}

/* Stage 6: the block and shared memory against the arch, every buffer's bytes against int64. */
static int plan_check(const hot_arch_caps *caps, hot_layer_plan *p, char *err, size_t n) {
  for (int i = 0; i < p->n_kernels; ++i) {
    const hot_kernel_plan *k = &p->kernels[i];
    if (k->block[0] > (unsigned)caps->max_threads || k->smem > (unsigned)caps->max_smem_optin)
      return diag_errf(err, n, "kernel %s: block of %u threads / %u bytes of shared memory "
                      "exceeds %s", plan_role_name(k->role), k->block[0], k->smem, caps->name);
  }
  for (int b = 0; b < HOT_BUF_COUNT; ++b)
    if (plan_buffer_bytes(p, (hot_buffer)b) < 0)
      return diag_errf(err, n, "buffer %s: its size overflows int64 (T = %lld, O = %lld, I = %lld)",
                      plan_buffer_name((hot_buffer)b), (long long)p->T, (long long)p->O,
                      (long long)p->I);
  hot_scratch_layout L; /* the families' scratch pieces (kernel_desc.h) against int64 */
  if (kd_scratch_layout(p, &L, err, n)) return -1;
  p->abc.bytes = plan_buffer_bytes(p, HOT_BUF_SAVED);
  return 0;
}

hot_gran plan_lqs_coarse(const hot_layer_plan *pl) {
  return pl && pl->B > 1 ? HOT_GRAN_SAMPLE : HOT_GRAN_TENSOR;
}

/* Recipe nvfp4 (CONTRACT.md 20) fixes what its block formats decide: HQ b = 16 (one Hadamard
 * block is one scale block), 4-bit codes for g' and w' (E2M1), 8 bits for g^ and x^ (E4M3),
 * absmax scales and per-tensor granularity (the fp32 tensor scale; the block scales are the
 * format's). Anything else is refused, naming the field: nothing changes silently. */
int plan_nvfp4_check(const hot_layer_spec *s, char *err, size_t n) {
  if (!s) return diag_errf(err, n, "plan_nvfp4_check: NULL spec");
  const struct { int bad; const char *what; } k[] = {
      {s->hq.enabled && (s->hq.block != 16 || !s->hq.pad), "hq.block = 16 with hq.pad = true"},
      {s->hq.g.bits != 4 || s->hq.w.bits != 4, "hq.bits = hq.w_bits = 4 (E2M1)"},
      {s->hla.g.bits != 8 || s->hla.x.bits != 8, "hla.bits = hla.x_bits = 8 (E4M3)"},
      {s->hq.g.rule != HOT_RULE_ABSMAX || s->hq.w.rule != HOT_RULE_ABSMAX ||
           s->hla.g.rule != HOT_RULE_ABSMAX || s->hla.x.rule != HOT_RULE_ABSMAX,
       "absmax scale rules (hq.w_scale, hla.x_scale)"},
      {s->hq.g.gran != HOT_GRAN_TENSOR || s->hla.g.gran != HOT_GRAN_TENSOR ||
           s->hla.x.gran != HOT_GRAN_TENSOR,
       "hq.scale = hla.scale = \"tensor\" (the fp32 tensor scale; the block scales are the "
       "format's)"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i)
    if (k[i].bad)
      return diag_errf(err, n, "recipe nvfp4 needs %s (templates/CONTRACT.md 20)", k[i].what);
  return 0;
}

/* Both planners: cpu = 1 plans for the CPU backend (the storage arch's tables; recipe nvfp4's
 * block-scaled paths, which no arch has, run there). */
static int plan_layer_for(const hot_layer_spec *s, int64_t batch, int64_t tokens,
                          hot_recipe recipe, hot_arch arch, int cpu, int layer_id,
                          hot_layer_plan *p, char *err, size_t n) {
  if (!s || !p) return diag_errf(err, n, "plan_layer: NULL argument");
  memset(p, 0, sizeof *p);
  const hot_arch_caps *caps = plan_arch_caps(arch);
  if (!caps) return diag_errf(err, n, "unknown arch %d", (int)arch);
  /* the recipe's defaults are already in the spec (plan_spec_defaults); nvfp4 also sets the
   * code format */
  if (recipe == HOT_RECIPE_NVFP4) {
    char missing[256];
    if (!cpu && plan_nvfp4_missing(caps, missing, sizeof missing)[0])
      return diag_errf(err, n, "recipe nvfp4 has no GPU path on %s: %s; it runs on the CPU "
                       "backend only", caps->name, missing);
    if (plan_nvfp4_check(s, err, n)) return -1;
    if (!cpu && s->dtype != HOT_DT_F32)
      return diag_errf(err, n, "recipe nvfp4 on %s takes dtype f32 only (got %s): its GPU "
                       "quantisers (templates/hq_nvfp4.cu, hla_mxfp8.cu) read fp32; the CPU "
                       "backend takes every dtype", caps->name, plan_dtype_name(s->dtype));
    p->fmt = HOT_FMT_NVFP4;
  }
  p->spec = s;
  p->arch = arch;
  p->layer_id = layer_id;
  if (plan_sizes(s, batch, tokens, p, err, n) || plan_hq(s, caps, p, err, n) ||
      plan_hla(s, caps, p, err, n) || plan_kernels(s, p, err, n) || plan_abc_ops(p, err, n) ||
      plan_check(caps, p, err, n) || name_kernels(p, err, n))
    return -1;
  return 0;
}

int plan_layer(const hot_layer_spec *s, int64_t batch, int64_t tokens, hot_recipe recipe,
               hot_arch arch, int layer_id, hot_layer_plan *p, char *err, size_t n) {
  return plan_layer_for(s, batch, tokens, recipe, arch, 0, layer_id, p, err, n);
}

int plan_layer_cpu(const hot_layer_spec *s, int64_t batch, int64_t tokens, hot_recipe recipe,
                   int layer_id, hot_layer_plan *p, char *err, size_t n) {
  return plan_layer_for(s, batch, tokens, recipe, HOT_ARCH_CPU_STORAGE, 1, layer_id, p, err, n);
}

void plan_kernel_grid(const hot_layer_plan *pl, int k, int phase, unsigned grid[3]) {
  kd_kernel_grid(pl, k, phase, grid);
}

/* kernel_launch.c — the per-layer tables a backend builds once, when a layer is loaded
 * (kernel_desc.h): the layout of a call's workspace from the pieces and views the planned
 * families declare, and the launches of each call (the step table: every family's steps of that
 * call in seq order) with their geometry and arguments, marked where a call fills in its
 * buffers, its step and its tensor maps. A call then replays them without asking the generator
 * anything. Calls the registry (kernel_desc.c) and the descriptors; nothing calls back. */
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "kernel_desc.h"

/* The distinct descriptors of p's planned kernels into out (max HOT_MAX_KERNELS); their count. */
static int planned_descs(const hot_layer_plan *p, const hot_kernel_desc **out) {
  int n = 0;
  for (int k = 0; k < p->n_kernels; ++k) {
    const hot_kernel_desc *d = kd_of(&p->kernels[k]);
    int seen = !d;
    for (int j = 0; j < n && !seen; ++j) seen = out[j] == d;
    if (!seen) out[n++] = d;
  }
  return n;
}

/* Every planned family's pieces merged into out's sizes (the largest request of a slot). */
static int merge_pieces(const hot_layer_plan *p, const hot_kernel_desc *const *ds, int nd,
                        hot_scratch_layout *out, unsigned align[HOT_LB_COUNT], char *err,
                        size_t n) {
  for (int i = 0; i < nd; ++i)
    for (int j = 0; j < ds[i]->n_scratch; ++j) {
      const hot_scratch *s = &ds[i]->scratch[j];
      const int64_t b = s->bytes(p);
      if (b < 0)
        return diag_errf(err, n, "scratch %s of %s: its size overflows int64", s->name,
                        ds[i]->family);
      if (!s->align || (s->align & (s->align - 1)))
        return diag_errf(err, n, "scratch %s of %s: alignment %u is not a power of two", s->name,
                        ds[i]->family, s->align);
      if (b > out->size[s->slot]) out->size[s->slot] = b;
      if (s->align > align[s->slot]) align[s->slot] = s->align;
      out->zero[s->slot] |= s->zero;
    }
  return 0;
}

/* The views of the planned families, for per_sample_g 0 and 1 (a slot with a piece keeps it). */
static void place_views(const hot_layer_plan *p, const hot_kernel_desc *const *ds, int nd,
                        hot_scratch_layout *out) {
  for (int i = 0; i < nd; ++i)
    for (int j = 0; j < ds[i]->n_views; ++j) {
      const hot_view *v = &ds[i]->views[j];
      if (out->off[v->slot] >= 0) continue;
      for (int ps = 0; ps < 2; ++ps) {
        const int64_t o = v->offset(p, ps);
        out->base[ps][v->slot] = o < 0 ? -1 : (int)v->base;
        out->view_off[ps][v->slot] = o < 0 ? 0 : o;
      }
    }
}

int kd_scratch_layout(const hot_layer_plan *p, hot_scratch_layout *out, char *err, size_t n) {
  if (!p || !out) return diag_errf(err, n, "kd_scratch_layout: NULL argument");
  memset(out, 0, sizeof *out);
  unsigned align[HOT_LB_COUNT] = {0};
  for (int b = 0; b < HOT_LB_COUNT; ++b) out->off[b] = -1, out->base[0][b] = out->base[1][b] = -1;
  const hot_kernel_desc *ds[HOT_MAX_KERNELS];
  const int nd = planned_descs(p, ds);
  if (merge_pieces(p, ds, nd, out, align, err, n)) return -1;
  int64_t total = 0;
  for (int b = 0; b < HOT_LB_COUNT; ++b) { /* in hot_lbuf order, each at its alignment */
    if (!out->size[b]) continue;
    const int64_t a = (int64_t)align[b];
    if (out->size[b] > INT64_MAX / 2 - a || total > INT64_MAX / 2 - out->size[b] - 2 * a)
      return diag_errf(err, n, "the workspace of the layer overflows int64");
    total = (total + a - 1) / a * a;
    out->off[b] = total;
    total += (out->size[b] + a - 1) / a * a;
  }
  out->bytes = total;
  place_views(p, ds, nd, out);
  return 0;
}

/* Whether buffer b has an address in a call: a piece, a view of one that has, or the caller's. */
static int has_address(const hot_scratch_layout *L, int ps, int b) {
  switch (b) {
  case HOT_LB_X: case HOT_LB_SAVED: case HOT_LB_GY: case HOT_LB_W: case HOT_LB_GX: case HOT_LB_GW:
  case HOT_LB_GB:
    return 1;
  default:
    if (L->off[b] >= 0) return 1;
    return L->base[ps][b] >= 0 && L->base[ps][b] != b && has_address(L, ps, L->base[ps][b]);
  }
}

/* Launch l of plan kernel k (descriptor d) for per_sample_g = ps: its arguments with every
 * buffer that has an address marked nonzero (the replay fills in the real ones). */
static int build_args(const hot_layer_plan *p, const hot_scratch_layout *L, const hot_kernel_desc *d,
                      uint64_t seed, int ps, hot_launch *l) {
  static const unsigned char map_stub[2][128];
  hot_launch_in in;
  memset(&in, 0, sizeof in);
  for (int b = 0; b < HOT_LB_COUNT; ++b) in.buf[b] = has_address(L, ps, b) ? 1u + (uint64_t)b : 0;
  in.seed = seed;
  in.per_sample_g = ps;
  in.tmap[0] = map_stub[0];
  in.tmap[1] = map_stub[1];
  hot_argv *v = &l->args[ps];
  memset(v, 0, sizeof *v);
  if (d->args(p, l->role, l->phase, &in, v) || v->bad || v->n != l->n_sig) return -1;
  if (ps == 0 && d->tmaps) {
    memset(l->maps, 0, sizeof l->maps);
    l->n_maps = d->tmaps(p, l->role, &in, l->maps);
  }
  return 0;
}

void kd_kernel_grid(const hot_layer_plan *pl, int k, int phase, unsigned grid[3]) {
  grid[0] = grid[1] = grid[2] = 0;
  if (!pl || k < 0 || k >= pl->n_kernels) return;
  const hot_kernel_plan *kp = &pl->kernels[k];
  const hot_kernel_desc *d = kd_of(kp);
  const int one_block = d && d->one_block_phase >= 0 && phase == d->one_block_phase;
  grid[0] = one_block ? 1u : kp->grid[0];
  grid[1] = one_block ? 1u : kp->grid[1];
  grid[2] = one_block ? 1u : kp->grid[2];
}

/* Step s of a call into l: the planned kernel, its geometry for the phase, its arguments. */
static void build_launch(const hot_layer_plan *p, const hot_scratch_layout *L, const hot_step *s,
                         uint64_t seed, hot_launch *l) {
  memset(l, 0, sizeof *l);
  l->role = s->role;
  l->role_name = plan_role_name(s->role);
  l->phase = s->phase;
  l->when = s->when;
  l->out = s->out;
  l->kernel = plan_kernel_index(p, s->role);
  if (l->kernel < 0) return;
  const hot_kernel_plan *kp = &p->kernels[l->kernel];
  const hot_kernel_desc *d = kd_of(kp);
  if (!d || !d->args || !d->sig) return;
  kd_kernel_grid(p, l->kernel, s->phase, l->grid);
  memcpy(l->block, kp->block, sizeof l->block);
  l->smem = kp->smem;
  l->persistent = kp->persistent;
  l->n_sig = kd_sig_count(d->sig);
  l->ok = build_args(p, L, d, seed, 0, l) == 0 && build_args(p, L, d, seed, 1, l) == 0;
}

int kd_launch_list(const hot_layer_plan *p, const hot_scratch_layout *L, hot_call call,
                   uint64_t seed, hot_launch_list *out) {
  hot_step st[64];
  const int n = kd_steps(call, st, 64);
  out->n = 0;
  for (int i = 0; i < n; ++i) {
    if (st[i].when == HOT_WHEN_PLANNED && plan_kernel_index(p, st[i].role) < 0) continue;
    if (out->n >= HOT_MAX_LAUNCHES) return -1;
    build_launch(p, L, &st[i], seed, &out->l[out->n++]);
  }
  return 0;
}

/* kernel_desc.c — the registry of kernel descriptors (kernel_desc.h); the argument appenders are
 * in kernel_args.c. The list of families is generated from the files present in gen/kernels/
 * (hot_families.inc, cmake/families.cmake): a new family file adds no line here. */
#include "kernel_desc.h"

#include <string.h>

#include "hot_families.inc"

/* The role values are ABI: each generated constant has the value its descriptor declares. */
#define HOT_ROLE_VALUE_(c, v) _Static_assert((int)(c) == (v), #c " has the value its @hot-role says");
HOT_KERNEL_ROLE_VALUES(HOT_ROLE_VALUE_)
#undef HOT_ROLE_VALUE_

/* The families, one per file gen/kernels/<family>.c. */
#define HOT_FAMILY_DECL_(f, cpu) extern const hot_kernel_desc kd_##f;
HOT_KERNEL_FAMILIES(HOT_FAMILY_DECL_)
#undef HOT_FAMILY_DECL_

/* Every family, in file-name order; for a role served by two (the GEMMs: gemm, gemm_tma) the
 * plan's choice decides (planned()); the first by name is the default of hand-built plans. */
#define HOT_FAMILY_PTR_(f, cpu) &kd_##f,
static const hot_kernel_desc *const k_desc[] = {HOT_KERNEL_FAMILIES(HOT_FAMILY_PTR_)};
#undef HOT_FAMILY_PTR_
enum { N_DESC = (int)(sizeof k_desc / sizeof k_desc[0]) };

const hot_kernel_desc *const *kd_all(int *n) {
  if (n) *n = N_DESC;
  return k_desc;
}

const hot_kernel_desc *kd_select(const hot_layer_spec *s, const hot_layer_plan *p,
                                 hot_kernel_role role) {
  for (int i = 0; i < N_DESC; ++i)
    if ((k_desc[i]->roles & (1u << role)) && k_desc[i]->planned(s, p, role)) return k_desc[i];
  return NULL;
}

const hot_kernel_desc *kd_of(const hot_kernel_plan *k) {
  if (!k) return NULL;
  if (k->desc) return k->desc;
  for (int i = 0; i < N_DESC; ++i)
    if ((int)k->role >= 0 && k->role < HOT_K_ROLE_COUNT && (k_desc[i]->roles & (1u << k->role)))
      return k_desc[i];
  return NULL;
}

/* A role's place in the plan: its smallest step seq over the descriptors (every role has steps). */
static int role_seq(hot_kernel_role r) {
  int best = 1 << 30;
  for (int i = 0; i < N_DESC; ++i)
    for (int s = 0; s < k_desc[i]->n_steps; ++s)
      if (k_desc[i]->steps[s].role == r && k_desc[i]->steps[s].seq < best)
        best = k_desc[i]->steps[s].seq;
  return best;
}

const hot_kernel_role *kd_plan_order(void) {
  static hot_kernel_role order[HOT_K_ROLE_COUNT];
  static int ready;
  if (!ready) { /* the same result on every call: computing it twice at once is harmless */
    hot_kernel_role tmp[HOT_K_ROLE_COUNT];
    for (int r = 0; r < HOT_K_ROLE_COUNT; ++r) tmp[r] = (hot_kernel_role)r;
    for (int i = 1; i < HOT_K_ROLE_COUNT; ++i) /* insertion sort by seq: 10 entries */
      for (int j = i; j > 0 && role_seq(tmp[j]) < role_seq(tmp[j - 1]); --j) {
        hot_kernel_role t = tmp[j];
        tmp[j] = tmp[j - 1];
        tmp[j - 1] = t;
      }
    memcpy(order, tmp, sizeof order);
    ready = 1;
  }
  return order;
}

int kd_steps(hot_call call, hot_step *out, int max) {
  int n = 0;
  for (int i = 0; i < N_DESC; ++i)
    for (int s = 0; s < k_desc[i]->n_steps; ++s) {
      const hot_step *st = &k_desc[i]->steps[s];
      if (st->call != call) continue;
      int dup = 0; /* two descriptors of one role (gemm, gemm_tma) list the same steps */
      for (int j = 0; j < n; ++j)
        dup |= out[j].seq == st->seq && out[j].role == st->role && out[j].phase == st->phase;
      if (dup || n >= max) continue;
      int j = n++;
      while (j > 0 && out[j - 1].seq > st->seq) {
        out[j] = out[j - 1];
        --j;
      }
      out[j] = *st;
    }
  return n;
}

int kd_sig_count(const char *sig) {
  if (!sig || !*sig) return 0;
  int n = 1;
  for (const char *c = sig; *c; ++c) n += *c == ',';
  return n;
}


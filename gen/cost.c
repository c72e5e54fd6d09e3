/* cost.c — compulsory traffic and integer operations of one kernel launch (see cost.h): each
 * kernel's descriptor (gen/kernels/) computes its own. The phases are those the runtime launches
 * (the descriptors' steps) and each template documents. */
#include "cost.h"

#include <string.h>

#include "kernel_desc.h"



int plan_kernel_cost(const hot_layer_plan *p, hot_kernel_role role, int phase, int gran_row,
                     hot_kernel_cost *out) {
  if (!out) return -1;
  memset(out, 0, sizeof *out);
  const int k = p && p->spec ? plan_kernel_index(p, role) : -1;
  if (k < 0) return -1;
  const hot_kernel_desc *d = kd_of(&p->kernels[k]);
  hot_kernel_cost c;
  memset(&c, 0, sizeof c);
  if (!d || d->cost(p, role, phase, gran_row, &c)) return -1;
  *out = c;
  return 0;
}

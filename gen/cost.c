/* cost.c — compulsory traffic and integer operations of one kernel launch (see cost.h). The
 * phases are those the runtime launches (runtime/cuda_backend.c) and each template documents. */
#include "cost.h"

#include <string.h>


int64_t plan_code_bytes(hot_codes codes, int64_t k) {
  return codes == HOT_CODES_S4_PACKED ? (k + 1) / 2 : k;
}

/* An HLA projection (hla_project.cu) of a T x cols source: phase 0 = amax (+ the fp32 math
 * tensor K x cols when its rule is SAWB), phase 1 = quantize into cols code rows of k_pad. */
static int hla_cost(const hot_layer_plan *p, int64_t cols, hot_buffer src_buf, hot_buffer code_buf,
                    const hot_quant *q, int phase, hot_kernel_cost *c) {
  const int64_t src = plan_buffer_bytes(p, src_buf);
  if (phase == 0) {
    c->bytes_read = src;
    c->bytes_written = q->rule == HOT_RULE_SAWB ? p->hla.k * cols * 4 : 0;
  } else if (phase == 1) { /* the code buffer (cols rows of k_pad) and the scale */
    c->bytes_read = src;
    c->bytes_written = plan_buffer_bytes(p, code_buf) + 4 * p->hla.groups; /* codes + scales */
  } else {
    return -1;
  }
  return 0;
}

/* A GEMM (gemm_int.cu / gemm_wgmma.cu): both code operands once, C once (+ row scales; a
 * segmented GEMM reads and writes C once more per segment after the first). */
static void gemm_cost(const hot_gemm_plan *g, int row_scale, hot_kernel_cost *c) {
  c->bytes_read = (g->m + g->n) * plan_code_bytes(g->codes, g->k_pad) + (row_scale ? g->m * 4 : 0);
  c->bytes_written = g->m * g->n * 4;
  if (g->segmented) { /* every later segment reads back and rewrites C (CONTRACT.md 14) */
    const int64_t more = g->k_pad / g->seg_k_pad - 1;
    c->bytes_read += more * g->m * g->n * 4;
    c->bytes_written += more * g->m * g->n * 4;
  }
  c->int_ops = 2 * g->m * g->n * g->k_pad;
  c->bound = 1;
}

int plan_kernel_cost(const hot_layer_plan *p, hot_kernel_role role, int phase, int gran_row,
                     hot_kernel_cost *out) {
  if (!out) return -1;
  memset(out, 0, sizeof *out);
  if (!p || !p->spec || plan_kernel_index(p, role) < 0) return -1;
  hot_kernel_cost c;
  memset(&c, 0, sizeof c);
  int rc = 0;
  switch (role) {
  case HOT_K_ABC_X:
    rc = hla_cost(p, p->I, HOT_BUF_X, HOT_BUF_Q_HX, &p->hla.x, phase, &c);
    break;
  case HOT_K_HLA_G:
    rc = hla_cost(p, p->O, HOT_BUF_GY, HOT_BUF_Q_HG, &p->hla.g, phase, &c);
    break;
  case HOT_K_HQ_G: /* phase 0 amax; 1 quantize with the tensor scale; 2 per-row, one pass */
    if (phase < 0 || phase > 2 || (phase == 2) != (gran_row != 0)) return -1;
    c.bytes_read = plan_buffer_bytes(p, HOT_BUF_GY);
    if (phase > 0)
      c.bytes_written = plan_buffer_bytes(p, HOT_BUF_Q_G) +
                        (phase == 2 ? plan_buffer_bytes(p, HOT_BUF_S_G) : 4);
    break;
  case HOT_K_HQ_W: /* phase 0 amax (+ fp32 w' for SAWB); 1 quantize, codes I x k_pad */
    if (phase < 0 || phase > 1) return -1;
    c.bytes_read = plan_buffer_bytes(p, HOT_BUF_W);
    if (phase == 0 && p->hq.w.rule == HOT_RULE_SAWB)
      c.bytes_written = plan_sawb_elems(p, HOT_K_SAWB_W) * 4;
    if (phase == 1) c.bytes_written = plan_buffer_bytes(p, HOT_BUF_Q_W) + 4;
    break;
  case HOT_K_SAWB_W:
  case HOT_K_SAWB_X: { /* phase 0 reads the fp32 math tensor; 1 sums the chunk partials */
    const int64_t n = plan_sawb_elems(p, role);
    const int64_t parts = 2 * ((n + 1023) / 1024) * 8;
    if (phase == 0) c.bytes_read = n * 4, c.bytes_written = parts;
    else if (phase == 1) c.bytes_read = parts, c.bytes_written = 4;
    else return -1;
    break;
  }
  case HOT_K_GEMM_GX:
  case HOT_K_GEMM_GW:
    if (phase != 0) return -1;
    gemm_cost(role == HOT_K_GEMM_GX ? &p->hq.gemm : &p->hla.gemm, role == HOT_K_GEMM_GX, &c);
    break;
  case HOT_K_BIAS:
    if (phase != 0) return -1;
    c.bytes_read = plan_buffer_bytes(p, HOT_BUF_GY);
    c.bytes_written = p->O * 4;
    break;
  case HOT_K_LQS: /* 0: row amax (+ T scales); 1: both squared errors per chunk; 2: combine */
    if (phase == 0) c.bytes_read = plan_buffer_bytes(p, HOT_BUF_GY), c.bytes_written = p->T * 4;
    else if (phase == 1) c.bytes_read = plan_buffer_bytes(p, HOT_BUF_GY) + p->T * 4,
                         c.bytes_written = 2 * ((p->T * p->O + 1023) / 1024) * 8;
    else if (phase == 2) c.bytes_read = 2 * ((p->T * p->O + 1023) / 1024) * 8, c.bytes_written = 24;
    else return -1;
    break;
  default:
    return -1;
  }
  if (rc) return -1;
  *out = c;
  return 0;
}

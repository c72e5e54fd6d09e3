/* ref_util.c — see ref_util.h. */
#include "ref_util.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "basis.h"

static int64_t rup(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

tp_args tp_default(int64_t B, int64_t L, int64_t O, int64_t I) {
  tp_args a;
  memset(&a, 0, sizeof a);
  a.B = B;
  a.L = L;
  a.O = O;
  a.I = I;
  a.b = 16;
  a.p = 16;
  a.sel = HOT_SEL_TRI;
  a.keep = 50;
  a.rank = 0;
  a.layout = HOT_LAYOUT_SAMPLE;
  a.codes = HOT_CODES_S4_PACKED;
  a.hq_kstep = 64;
  a.hla_kstep = 32;
  a.layer_id = 3;
  a.w_rule = HOT_RULE_ABSMAX;
  a.hla_g_gran = HOT_GRAN_TENSOR;
  a.hla_x_gran = HOT_GRAN_TENSOR;
  return a;
}

int tp_make(const tp_args *a, hot_layer_plan *pl) {
  memset(pl, 0, sizeof *pl);
  pl->arch = HOT_ARCH_SM80;
  pl->layer_id = a->layer_id;
  pl->B = a->B;
  pl->L = a->L;
  pl->T = a->B * a->L;
  pl->O = a->O;
  pl->I = a->I;
  pl->hq.enabled = 1;
  pl->hq.block = a->b;
  pl->hq.o_pad = rup(a->O, a->b);
  pl->hq.g = (hot_quant){4, HOT_ROUND_SR, HOT_GRAN_AUTO, HOT_RULE_ABSMAX};
  pl->hq.w = (hot_quant){4, HOT_ROUND_RTN, HOT_GRAN_TENSOR, a->w_rule};
  pl->hq.codes = a->codes;
  pl->hq.gemm.m = pl->T;
  pl->hq.gemm.n = a->I;
  pl->hq.gemm.k = pl->hq.o_pad;
  pl->hq.gemm.k_pad = rup(pl->hq.o_pad, a->hq_kstep);
  pl->hla.enabled = 1;
  pl->hla.block = a->p;
  pl->hla.selection = a->sel;
  pl->hla.keep = a->keep;
  pl->hla.layout = a->layout;
  if (a->p == 1) {
    pl->hla.rank = 1;
    pl->hla.rows[0] = 0;
  } else {
    int r = basis_select(a->sel, a->p, a->keep, a->rank, pl->hla.rows);
    if (r < 1) return -1;
    pl->hla.rank = r;
  }
  if (a->layout == HOT_LAYOUT_FLAT) {
    pl->hla.segments = 1;
    pl->hla.seg_len = rup(pl->T, a->p);
  } else {
    pl->hla.segments = a->B;
    pl->hla.seg_len = rup(a->L, a->p);
  }
  pl->hla.blocks = pl->hla.segments * pl->hla.seg_len / a->p;
  pl->hla.k = pl->hla.blocks * pl->hla.rank;
  pl->hla.g = (hot_quant){8, HOT_ROUND_SR, a->hla_g_gran, HOT_RULE_ABSMAX};
  pl->hla.x = (hot_quant){8, HOT_ROUND_RTN, a->hla_x_gran, HOT_RULE_ABSMAX};
  pl->hla.gemm.m = a->O;
  pl->hla.gemm.n = a->I;
  pl->hla.gemm.k = pl->hla.k;
  pl->hla.gemm.codes = HOT_CODES_S8;
  /* scale groups as plan_hla makes them (CONTRACT.md 9) */
  int sample = a->hla_g_gran == HOT_GRAN_SAMPLE || a->hla_x_gran == HOT_GRAN_SAMPLE;
  pl->hla.groups = sample ? pl->hla.segments : 1;
  pl->hla.group_k = pl->hla.k / pl->hla.groups;
  if (pl->hla.groups > 1) {
    pl->hla.gemm.segmented = 1;
    pl->hla.gemm.seg_k_pad = rup(pl->hla.group_k, a->hla_kstep);
    pl->hla.gemm.k_pad = pl->hla.groups * pl->hla.gemm.seg_k_pad;
  } else {
    pl->hla.gemm.k_pad = rup(pl->hla.k, a->hla_kstep);
    pl->hla.gemm.seg_k_pad = pl->hla.gemm.k_pad;
  }
  pl->hla.group_k_pad = pl->hla.gemm.seg_k_pad;
  pl->hq.gemm.seg_k_pad = pl->hq.gemm.k_pad;
  pl->abc.enabled = 1;
  pl->abc.bytes = plan_buffer_bytes(pl, HOT_BUF_SAVED);
  pl->abc.fp32_bytes = pl->T * a->I * 4;
  pl->abc.bf16_bytes = pl->T * a->I * 2;
  return 0;
}

void tp_seed(tp_rng *r, uint64_t seed) { r->s = seed; }

uint64_t tp_u64(tp_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double tp_uniform(tp_rng *r) { return (double)(tp_u64(r) >> 11) * 0x1.0p-53; }

double tp_normal(tp_rng *r) {
  double u1 = tp_uniform(r), u2 = tp_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tp_fill_normal(tp_rng *r, float *v, int64_t n, double sd) {
  for (int64_t i = 0; i < n; ++i) v[i] = (float)(sd * tp_normal(r));
}

void tp_fill_walks(tp_rng *r, float *v, int64_t B, int64_t L, int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t c = 0; c < C; ++c) {
        int64_t t = b * L + l;
        double prev = l ? (double)v[(t - 1) * C + c] : 0.0;
        v[t * C + c] = (float)(prev + tp_normal(r));
      }
}

unsigned short tp_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

unsigned short tp_f32_to_f16(float f) {
  /* via the exact f32 value: scale into the f16 grid and round to nearest even (normals only:
   * the tests keep |f| within [2^-14, 65504] or zero) */
  if (f == 0.0f) return signbit(f) ? 0x8000 : 0;
  uint32_t sign = signbit(f) ? 0x8000u : 0u;
  double a = fabs((double)f);
  int e;
  double m = frexp(a, &e);                 /* a = m * 2^e, m in [0.5, 1) */
  double mant = rint(ldexp(m, 11));        /* 11 significant bits */
  if (mant >= 2048.0) {
    mant /= 2.0;
    ++e;
  }
  uint32_t be = (uint32_t)(e - 1 + 15);    /* biased exponent of 1.f * 2^(e-1) */
  return (unsigned short)(sign | (be << 10) | ((uint32_t)mant - 1024u));
}

double tp_seconds(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

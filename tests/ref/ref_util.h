/* ref_util.h — helpers of the ref test suites: a hand-built plan (the fields the twins read, as
 * plan_layer would set them), seeded synthetic data, and small matrix utilities. */
#ifndef HOT_REF_UTIL_H
#define HOT_REF_UTIL_H

#include <stdint.h>

#include "plan.h"
#include "ref.h"

typedef struct {
  int64_t B, L, O, I;
  int b;                /* HQ block (1 = no Hadamard) */
  int p;                /* HLA block (1 = no-op projection) */
  hot_selection sel;
  int keep, rank;
  hot_layout layout;
  hot_codes codes;      /* HQ storage */
  int hq_kstep;         /* k_pad = o_pad rounded up to this (64 for packed s4, 32 for s8) */
  int hla_kstep;        /* 32 */
  int layer_id;
  hot_rule w_rule;
  hot_gran hla_g_gran;  /* HOT_GRAN_TENSOR (default) or HOT_GRAN_SAMPLE: scale groups of g^ */
  hot_gran hla_x_gran;  /* the same for x^ */
} tp_args;

/* HOT defaults on B x L tokens, O outputs, I inputs: b = 16, p = 16 tri 50 %, sample, s4. */
tp_args tp_default(int64_t B, int64_t L, int64_t O, int64_t I);
/* Fills *pl from *a; returns 0, or -1 when basis selection rejects the request. */
int tp_make(const tp_args *a, hot_layer_plan *pl);

/* Deterministic data: splitmix64 stream. */
typedef struct { uint64_t s; } tp_rng;
void tp_seed(tp_rng *r, uint64_t seed);
uint64_t tp_u64(tp_rng *r);
double tp_uniform(tp_rng *r);  /* [0, 1) */
double tp_normal(tp_rng *r);   /* N(0, 1), Box-Muller */
void tp_fill_normal(tp_rng *r, float *v, int64_t n, double sd);
/* Independent random walks along the rows (tokens) of a T x C matrix, each column its own walk,
 * steps N(0,1), restarted at 0 at every sample boundary of L tokens. */
void tp_fill_walks(tp_rng *r, float *v, int64_t B, int64_t L, int64_t C);

/* fp32 -> bf16 / f16 bit patterns, round to nearest even (test inputs only). */
unsigned short tp_f32_to_bf16(float f);
unsigned short tp_f32_to_f16(float f);

double tp_seconds(void);

#endif

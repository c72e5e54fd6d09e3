/* hot_types.h — the public value types of libhot: the enumerations a layer is described with and
 * hot_layer_spec, the C description of one layer (hot_layer_create). Included by hot.h; the
 * generator's internal plan structures (gen/plan.h) build on these and are not part of the API.
 *
 * The numeric values of every enumeration are part of the ABI (language bindings mirror them):
 * new values are only ever appended. */
#ifndef HOT_TYPES_H
#define HOT_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HOT_NAME_MAX 64 /* longest model/layer name, including the NUL */

/* ---- enumerations (the static names: plan_*_name in the generator; "f32", "sr", "row", ...) */

typedef enum { HOT_DT_F32 = 0, HOT_DT_BF16, HOT_DT_F16 } hot_dtype;
typedef enum { HOT_ROUND_RTN = 0, HOT_ROUND_SR } hot_round;
/* Scale granularity: one scale per tensor (all B samples of the call), one per row (token), AUTO,
 * or one per sample (the rows of each of the B samples; appended last so that the older values
 * keep their numbers). AUTO means, for g' (hq.g): chosen by LQS (per token or per sample); for
 * g^ and x^ (hla.g, hla.x): per sample under layout sample, else per tensor. g^ and x^ take
 * TENSOR, SAMPLE or AUTO (ROW is refused: tokens are the g_w GEMM's contraction axis; SAMPLE
 * under layout flat with B > 1 too); w' takes TENSOR only. */
typedef enum { HOT_GRAN_TENSOR = 0, HOT_GRAN_ROW, HOT_GRAN_AUTO, HOT_GRAN_SAMPLE } hot_gran;
typedef enum { HOT_RULE_ABSMAX = 0, HOT_RULE_SAWB } hot_rule;
typedef enum { HOT_SEL_TRI = 0, HOT_SEL_PREFIX, HOT_SEL_FULL } hot_selection;
/* Token blocking of HLA. AUTO (spec only; the plan resolves it): sample when p divides L, else flat. */
typedef enum { HOT_LAYOUT_SAMPLE = 0, HOT_LAYOUT_FLAT, HOT_LAYOUT_AUTO } hot_layout;
/* The recipe: a layer's defaults, and for NVFP4 the code format. HOT_RECIPE_NVFP4 (appended): HQ's
 * g' and w' as NVFP4 (E2M1 codes, an E4M3 scale per 16 values, an fp32 tensor scale), HLA's g^
 * and x^ as MXFP8 (E4M3 codes, an E8M0 scale per 32), templates/CONTRACT.md 20. It runs on the CPU
 * backend only: no GPU arch of the table has its GEMMs (planning it for one is an error). */
typedef enum { HOT_RECIPE_HOT = 0, HOT_RECIPE_PAPER, HOT_RECIPE_PAPER_CODE, HOT_RECIPE_NVFP4 } hot_recipe;

/* One quantizer: bits, rounding, scale granularity and scale rule. */
typedef struct {
  int bits;          /* 2..8; qmax = 2^(bits-1) - 1 */
  hot_round round;
  hot_gran gran;
  hot_rule rule;
} hot_quant;

/* ---- a layer as written in a spec (the spec loader fills it from the validated Lua tables;
 * C callers start from hot_layer_spec_defaults) ----------------------------------------------- */

typedef struct {
  int tile_m, tile_n, tile_k;  /* GEMM block tile; 0 = planner default */
  int warps_m, warps_n;        /* warps per block along M and N; 0 = default */
  int stages;                  /* cp.async pipeline depth; 0 = default */
} hot_tile;

typedef struct {
  char name[HOT_NAME_MAX];
  int line;                 /* line of the spec that declared the layer (for messages) */
  int64_t tokens;           /* L of this layer; 0 = the model's (convolutions set their own) */
  int64_t in_features;      /* I */
  int64_t out_features;     /* O */
  int bias;                 /* compute g_b */
  hot_dtype dtype;          /* dtype of x, w and g_y as handed to the kernels */
  struct {
    int enabled;            /* 0: g_x is an fp32 product (for ablations and tests) */
    int block;              /* b, power of two 2..256 (1 allowed only when pad = 0) */
    hot_quant g;            /* g' quantizer: bits (default 4), SR, gran tensor/row/auto */
    hot_quant w;            /* w' quantizer: bits (default 4), RTN, per tensor, absmax/sawb */
    int pad;                /* 1: zero-pad O to a multiple of b; 0: shrink b to divide O (paper code) */
  } hq;
  struct {
    int enabled;            /* 0: g_w is an fp32 product */
    int block;              /* p, power of two 2..1024; 0 = derived (paper_code: largest 2^k | L) */
    hot_selection selection;
    int keep;               /* tri: percentage 1..50 */
    int rank;               /* prefix: r in 1..p */
    hot_layout layout;
    int pad;                /* 1: zero-pad tokens to a multiple of p; 0: no padding (p must divide) */
    hot_quant g;            /* g^ quantizer: 8-bit SR; per tensor, per sample or auto (gran) */
    hot_quant x;            /* x^ quantizer: 8-bit RTN, absmax/sawb; gran as g^ */
  } hla;
  struct {
    int enabled;            /* keep q_x^ instead of x in the forward pass */
  } abc;
  hot_tile tile_gx;         /* GEMM tiles of the g_x product */
  hot_tile tile_gw;         /* GEMM tiles of the g_w product */
} hot_layer_spec;

#ifdef __cplusplus
}
#endif

#endif /* HOT_TYPES_H */

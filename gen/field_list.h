/* field_list.h — every field of a layer (hot_layer_spec) and every enumeration, declared once.
 *
 * This header is the one source of truth; everything else is derived from it:
 *  - gen/fields.c builds its table from HOT_FIELDS (sweeps, hot-tune's variants, the tuning
 *    database's canonical text, the C API's checks and recipe merge, plan_spec_defaults);
 *  - gen/plan.c's plan_*_name and gen/spec*.c take the enumeration names from HOT_ENUMS;
 *  - gen/spec_copy.c copies a validated spec into hot_layer_spec row by row;
 *  - lua/hot/schema.lua builds hq, hla, abc, tile and the layer's bias/dtype from the rows
 *    (gen/spec_sandbox.c hands them to the DSL as `spec_fields`), so `hot-gen --help-spec` and
 *    the spec's checks follow the table too;
 *  - tests/spec (fields_everywhere) checks each row against python/hot/_lib.py (the ctypes
 *    mirror of hot_layer_spec and the enumerations) and the loader.
 * docs/adding.md ("Adding a field") says what to change for a new field.
 *
 * Enumerations: HOT_ENUM_<id>(V) lists V(C constant, spec name) in value order (the values are
 * part of the ABI: append only). HOT_ENUMS(E) lists E(id, C type).
 *
 * Fields: F(path, member, also, kind, enum id, min, max, flags, hot, paper, paper_code, nvfp4, vdoc,
 *          doc)
 *  - path: the spec path ("hq.block", or "bias" for a field of hot.linear itself); NULL for a C
 *    member no spec writes directly (it still has a default, a check and a recipe value);
 *  - member: the hot_layer_spec member; also: ALSO(member), a second member set to the same
 *    value, or NOALSO;
 *  - kind INT, BOOL or ENUM; enum id (ENUM only, else none): the enumeration;
 *  - min, max (INT): the range a spec and a sweep may write;
 *  - flags: FL_ACC (accuracy class, else speed: changes no bit of a result), FL_POW2 (a power of
 *    two), FL_ZERO (0 is also allowed, in specs too), FL_UNSET0 (0 means "unset" in C: a C
 *    caller and a sweep may write it, a spec may not), FL_SWEEP (hot.sweep and hot-tune may vary
 *    it; sweepable rows come first, in the order of the tuning database's canonical text);
 *  - hot, paper, paper_code, nvfp4: the default under each recipe (plan_spec_defaults); nvfp4
 *    takes hot's everywhere but the scale granularities, which its block formats fix (per tensor:
 *    the fp32 tensor scale of NVFP4; templates/CONTRACT.md 20);
 *  - vdoc: the allowed values in one short phrase; for an ENUM row the names a spec may write,
 *    "a|b|c", in the order messages list them (a subset of the enumeration's names; "" for a C
 *    member: all of them); "" for BOOL (true|false);
 *  - doc: the one-line description `hot-gen --help-spec` prints. */
#ifndef HOT_FIELD_LIST_H
#define HOT_FIELD_LIST_H

#define HOT_ENUM_dtype(V) V(HOT_DT_F32, "f32") V(HOT_DT_BF16, "bf16") V(HOT_DT_F16, "f16")
#define HOT_ENUM_round(V) V(HOT_ROUND_RTN, "rtn") V(HOT_ROUND_SR, "sr")
/* HOT_GRAN_ROW: one scale per row of g', i.e. per token: the spec's word is the name. */
#define HOT_ENUM_gran(V)                                                                           \
  V(HOT_GRAN_TENSOR, "tensor") V(HOT_GRAN_ROW, "token") V(HOT_GRAN_AUTO, "auto")                   \
  V(HOT_GRAN_SAMPLE, "sample")
#define HOT_ENUM_rule(V) V(HOT_RULE_ABSMAX, "absmax") V(HOT_RULE_SAWB, "sawb")
#define HOT_ENUM_selection(V) V(HOT_SEL_TRI, "tri") V(HOT_SEL_PREFIX, "prefix") V(HOT_SEL_FULL, "full")
#define HOT_ENUM_layout(V)                                                                         \
  V(HOT_LAYOUT_SAMPLE, "sample") V(HOT_LAYOUT_FLAT, "flat") V(HOT_LAYOUT_AUTO, "auto")
#define HOT_ENUM_recipe(V)                                                                         \
  V(HOT_RECIPE_HOT, "hot") V(HOT_RECIPE_PAPER, "paper") V(HOT_RECIPE_PAPER_CODE, "paper_code")   \
  V(HOT_RECIPE_NVFP4, "nvfp4")

#define HOT_ENUMS(E)                                                                               \
  E(dtype, hot_dtype) E(round, hot_round) E(gran, hot_gran) E(rule, hot_rule)                      \
  E(selection, hot_selection) E(layout, hot_layout) E(recipe, hot_recipe)

/* The six tiles of one GEMM (tile_gx or tile_gw): speed fields, 0 = the planner's choice. */
#define HOT_TILE_FIELDS(F, g)                                                                      \
  F(#g ".tile_m", g.tile_m, NOALSO, INT, none, 0, 256, FL_SWEEP, 0, 0, 0, 0,                       \
    "64, 128 or 256 (0 = planner's)",                                                              \
    "GEMM block tile along M (64, 128 or 256; wgmma paths: 64 or 128; 0 = planner's choice)")      \
  F(#g ".tile_n", g.tile_n, NOALSO, INT, none, 0, 256, FL_SWEEP, 0, 0, 0, 0,                       \
    "64, 128 or 256 (0 = planner's)", "GEMM block tile along N (64, 128 or 256; 0 = planner's choice)") \
  F(#g ".tile_k", g.tile_k, NOALSO, INT, none, 0, 512, FL_SWEEP, 0, 0, 0, 0,                       \
    "a multiple of the MMA's K (0 = default)",                                                     \
    "GEMM block tile along K in elements (a multiple of the MMA's K; wgmma paths: 128; 0 = default)") \
  F(#g ".warps_m", g.warps_m, NOALSO, INT, none, 0, 8, FL_SWEEP, 0, 0, 0, 0, "0..8 (0 = default)", \
    "warps per block along M (0 = default 2; wgmma paths: tile_m / 16, the planner's)")            \
  F(#g ".warps_n", g.warps_n, NOALSO, INT, none, 0, 8, FL_SWEEP, 0, 0, 0, 0, "0..8 (0 = default)", \
    "warps per block along N (0 = default 2; with wgmma: 1 = wgmma via cp.async, 2 = the TMA GEMM)") \
  F(#g ".stages", g.stages, NOALSO, INT, none, 0, 6, FL_SWEEP, 0, 0, 0, 0, "0..6 (0 = default)",   \
    "cp.async pipeline stages (0 = default; 2..6; wgmma via cp.async: 3..6)")

#define HOT_FIELDS(F)                                                                              \
  /* ---- sweepable, in the tuning database's order: HQ, HLA, ABC, then the tiles ---- */          \
  F("hq.enabled", hq.enabled, NOALSO, BOOL, none, 0, 1, FL_SWEEP | FL_ACC, 1, 1, 1, 1, "",         \
    "quantize the g_x GEMM with HQ (false: fp32 product, for ablations)")                          \
  F("hq.block", hq.block, NOALSO, INT, none, 2, 256, FL_SWEEP | FL_ACC | FL_POW2, 16, 16, 16, 16,  \
    "power of two in [2, 256]", "Hadamard block b along O (power of two in [2, 256])")             \
  F("hq.bits", hq.g.bits, NOALSO, INT, none, 2, 8, FL_SWEEP | FL_ACC, 4, 4, 4, 4, "2..8",          \
    "bits of the g' codes")                                                                        \
  F("hq.round", hq.g.round, NOALSO, ENUM, round, 0, 0, FL_SWEEP | FL_ACC, HOT_ROUND_SR,            \
    HOT_ROUND_SR, HOT_ROUND_SR, HOT_ROUND_SR, "sr|rtn",                                            \
    "rounding of the g' codes: sr (stochastic, unbiased) or rtn (to nearest, ties to even)")       \
  F("hq.scale", hq.g.gran, NOALSO, ENUM, gran, 0, 0, FL_SWEEP | FL_ACC, HOT_GRAN_AUTO,             \
    HOT_GRAN_AUTO, HOT_GRAN_AUTO, HOT_GRAN_TENSOR, "auto|tensor|sample|token",                     \
    "scale granularity of g': per tensor (all samples), per sample, "                              \
    "per token, or auto (LQS decides)")                                                            \
  F("hq.w_bits", hq.w.bits, NOALSO, INT, none, 2, 8, FL_SWEEP | FL_ACC, 4, 4, 4, 4, "2..8",        \
    "bits of the w' codes (round to nearest)")                                                     \
  F("hq.w_scale", hq.w.rule, NOALSO, ENUM, rule, 0, 0, FL_SWEEP | FL_ACC, HOT_RULE_ABSMAX,         \
    HOT_RULE_ABSMAX, HOT_RULE_SAWB, HOT_RULE_ABSMAX, "absmax|sawb", "scale rule of w': absmax or sawb") \
  F("hq.pad", hq.pad, NOALSO, BOOL, none, 0, 1, FL_SWEEP | FL_ACC, 1, 1, 0, 1, "",                 \
    "zero-pad O to a multiple of b (false: shrink b to divide O, as the paper's code)")            \
  F("hla.enabled", hla.enabled, NOALSO, BOOL, none, 0, 1, FL_SWEEP | FL_ACC, 1, 1, 1, 1, "",       \
    "project the g_w GEMM with HLA (false: fp32 product)")                                         \
  F("hla.block", hla.block, NOALSO, INT, none, 0, 1024, FL_SWEEP | FL_ACC | FL_POW2 | FL_ZERO, 64, \
    64, 0, 64, "0 or a power of two in [2, 1024]",                                                 \
    "token block p (power of two in [2, 1024]; 0 = largest power of two dividing L)")              \
  F("hla.selection", hla.selection, NOALSO, ENUM, selection, 0, 0, FL_SWEEP | FL_ACC, HOT_SEL_TRI, \
    HOT_SEL_TRI, HOT_SEL_TRI, HOT_SEL_TRI, "tri|prefix|full",                                      \
    "Walsh basis kept: tri (LBP-WHT triangle), prefix (lowest sequencies), full")                  \
  F("hla.keep", hla.keep, NOALSO, INT, none, 1, 50, FL_SWEEP | FL_ACC, 50, 50, 50, 50,             \
    "1..50 (percent, selection tri)",                                                              \
    "tri: percentage P of the low-pass triangle (only with selection tri)")                        \
  F("hla.rank", hla.rank, NOALSO, INT, none, 1, 1024, FL_SWEEP | FL_ACC | FL_UNSET0, 0, 0, 0, 0,   \
    "1..1024 (selection prefix)",                                                                  \
    "prefix: number r of lowest sequencies kept (only with selection prefix)")                     \
  F("hla.layout", hla.layout, NOALSO, ENUM, layout, 0, 0, FL_SWEEP | FL_ACC, HOT_LAYOUT_AUTO,      \
    HOT_LAYOUT_SAMPLE, HOT_LAYOUT_SAMPLE, HOT_LAYOUT_AUTO, "sample|flat|auto",                     \
    "token blocking: per sample, across the flat batch, or auto (sample when p "                   \
    "divides L)")                                                                                  \
  F("hla.pad", hla.pad, NOALSO, BOOL, none, 0, 1, FL_SWEEP | FL_ACC, 1, 1, 0, 1, "",               \
    "zero-pad the token axis to a multiple of p (false: p must divide it)")                        \
  F("hla.bits", hla.g.bits, NOALSO, INT, none, 2, 8, FL_SWEEP | FL_ACC, 8, 8, 4, 8, "2..8",        \
    "bits of the g^ codes")                                                                        \
  F("hla.round", hla.g.round, NOALSO, ENUM, round, 0, 0, FL_SWEEP | FL_ACC, HOT_ROUND_SR,          \
    HOT_ROUND_SR, HOT_ROUND_SR, HOT_ROUND_SR, "sr|rtn",                                            \
    "rounding of the g^ codes: sr (stochastic, unbiased) or rtn (to nearest, ties to even)")       \
  F("hla.x_bits", hla.x.bits, NOALSO, INT, none, 2, 8, FL_SWEEP | FL_ACC, 8, 8, 8, 8, "2..8",      \
    "bits of the x^ codes saved by ABC (round to nearest)")                                        \
  F("hla.x_scale", hla.x.rule, NOALSO, ENUM, rule, 0, 0, FL_SWEEP | FL_ACC, HOT_RULE_ABSMAX,       \
    HOT_RULE_ABSMAX, HOT_RULE_SAWB, HOT_RULE_ABSMAX, "absmax|sawb", "scale rule of x^: absmax or sawb") \
  /* one spec field for the granularity of both HLA operands (reads back g^'s) */                  \
  F("hla.scale", hla.g.gran, ALSO(hla.x.gran), ENUM, gran, 0, 0, FL_SWEEP | FL_ACC, HOT_GRAN_AUTO, \
    HOT_GRAN_TENSOR, HOT_GRAN_SAMPLE, HOT_GRAN_TENSOR, "auto|tensor|sample",                       \
    "scale granularity of g^ and x^: per tensor (all samples), per sample "                        \
    "(layout sample only), or auto (sample under layout sample, else tensor)")                     \
  F("abc.enabled", abc.enabled, NOALSO, BOOL, none, 0, 1, FL_SWEEP | FL_ACC, 1, 1, 1, 1, "",       \
    "keep the int8 HLA projection of x in the forward pass instead of x")                          \
  HOT_TILE_FIELDS(F, tile_gx)                                                                      \
  HOT_TILE_FIELDS(F, tile_gw)                                                                      \
  /* ---- fields of hot.linear itself (not sweepable) ---- */                                      \
  F("bias", bias, NOALSO, BOOL, none, 0, 1, FL_ACC, 1, 1, 1, 1, "", "compute the bias gradient g_b") \
  F("dtype", dtype, NOALSO, ENUM, dtype, 0, 0, FL_ACC, HOT_DT_F32, HOT_DT_F32, HOT_DT_F32, HOT_DT_F32, "f32|bf16|f16", \
    "dtype of x, w and g_y as the kernels receive them")                                           \
  /* ---- C members no spec writes (fixed by the method; C callers may set them) ---- */           \
  F(NULL, hq.g.rule, NOALSO, ENUM, rule, 0, 0, FL_ACC, HOT_RULE_ABSMAX, HOT_RULE_ABSMAX,           \
    HOT_RULE_ABSMAX, HOT_RULE_ABSMAX, "", "scale rule of g'")                                      \
  F(NULL, hq.w.round, NOALSO, ENUM, round, 0, 0, FL_ACC, HOT_ROUND_RTN, HOT_ROUND_RTN,             \
    HOT_ROUND_RTN, HOT_ROUND_RTN, "", "rounding of w'")                                            \
  F(NULL, hq.w.gran, NOALSO, ENUM, gran, 0, 0, FL_ACC, HOT_GRAN_TENSOR, HOT_GRAN_TENSOR,           \
    HOT_GRAN_TENSOR, HOT_GRAN_TENSOR, "", "scale granularity of w'")                               \
  F(NULL, hla.g.rule, NOALSO, ENUM, rule, 0, 0, FL_ACC, HOT_RULE_ABSMAX, HOT_RULE_ABSMAX,          \
    HOT_RULE_ABSMAX, HOT_RULE_ABSMAX, "", "scale rule of g^")                                      \
  F(NULL, hla.x.round, NOALSO, ENUM, round, 0, 0, FL_ACC, HOT_ROUND_RTN, HOT_ROUND_RTN,            \
    HOT_ROUND_RTN, HOT_ROUND_RTN, "", "rounding of x^")                                            \
  F(NULL, hla.x.gran, NOALSO, ENUM, gran, 0, 0, FL_ACC, HOT_GRAN_AUTO, HOT_GRAN_TENSOR,            \
    HOT_GRAN_SAMPLE, HOT_GRAN_TENSOR, "", "scale granularity of x^ (hla.scale sets it with g^'s)")

#endif

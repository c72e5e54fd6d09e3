/* hot_sm90_params.cuh — the stand-alone defaults of the @hot-params the two sm_90a GEMM templates
 * (gemm_wgmma.cu, gemm_tma.cu) share, for reading and compiling a template by hand: int8 codes, a
 * 128 x 128 tile of one 128-byte K slab, two consumer warpgroups, 4 stages, one K sum. Each
 * template names its own HOT_KNAME. Generated programs define HOT_GENERATED above every included
 * file (the generator hoists this one to the top), so there it defines nothing. */
#ifndef HOT_GENERATED
#define HOT_CODES 0
#define HOT_TILE_M 128
#define HOT_TILE_N 128
#define HOT_TILE_K 128
#define HOT_WARPS_M 8
#define HOT_WARPS_N 1
#define HOT_STAGES 4
#define HOT_SEGS 0
#endif

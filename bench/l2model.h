/* l2model.h — DRAM traffic of a tiled GEMM through an L2 of a given size (hot-bench --model,
 * docs/gpu-model.md "DRAM traffic of the GEMMs"). */
#ifndef HOT_BENCH_L2MODEL_H
#define HOT_BENCH_L2MODEL_H

#include <stdint.h>

/* A GEMM's grid as the L2 sees it. Tiles run in the order of the template: group_m = 0 is
 * row-major with the N tile fastest (gemm_int.cu, gemm_wgmma.cu: blockIdx.x = N tile,
 * blockIdx.y = M tile, launched x fastest); group_m > 0 is gemm_tma.cu's grouped order (tile t ->
 * tile row first + (t % width) % rows, column (t % width) / rows, width = group_m * tiles_n).
 * `concurrent` tiles are in flight at once (blocks per SM x SMs, or a persistent grid's CTAs);
 * they advance through their K tiles in step (one wave after another). */
typedef struct {
  int64_t tiles_m, tiles_n, ktiles;
  int64_t seg_ktiles;    /* K tiles of one segment (a segmented GEMM re-reads and re-writes its C
                            tile at each segment end); 0 or >= ktiles: one sum over all of K */
  int64_t a_bytes;       /* one A granule: tile_m rows x tile_k codes */
  int64_t b_bytes;       /* one B granule: tile_n rows x tile_k codes */
  int64_t c_bytes;       /* one C tile: tile_m x tile_n fp32 */
  int group_m;           /* 0: row-major, N fastest; > 0: groups of group_m tile rows */
  int64_t concurrent;    /* tiles in flight, >= 1 */
} l2_gemm_grid;

/* DRAM bytes of A, B and C (out[0..2]) when every K-tile granule of A and B and every C tile
 * passes through an LRU cache of l2_bytes (reads allocate; C is write-allocated, written back
 * once when evicted or at the end; a segment end's read of C misses only when C was evicted).
 * comp[0..2] gets the compulsory bytes of the same granules (each read or written once).
 * Returns 0, or -1 when the grid is empty or invalid or memory runs out (out and comp zeroed). */
int l2_gemm_dram(const l2_gemm_grid *g, double l2_bytes, double out[3], double comp[3]);

#endif

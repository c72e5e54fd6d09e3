/* l2model.c — the DRAM bytes of a tiled GEMM through an LRU L2 (l2model.h; the model and its
 * assumptions: docs/gpu-model.md "DRAM traffic of the GEMMs"). A simulation, not a formula: the
 * tiles of each wave walk their K tiles in step, every granule (an A or B panel's K tile, a C tile)
 * is looked up in an LRU list of the L2's size, and the misses (plus C's write-backs) are the DRAM
 * bytes. */
#include "l2model.h"

#include <stdlib.h>
#include <string.h>

enum { L2_KIND_A = 0, L2_KIND_B = 1, L2_KIND_C = 2 };

typedef struct {
  int64_t *prev, *next; /* LRU list over granule ids; head = least recently used */
  unsigned char *in, *dirty;
  int64_t head, tail, n_a, n_b;
  double used, cap, size[3], out[3];
} l2_lru;

static int kind_of(const l2_lru *c, int64_t id) {
  return id < c->n_a ? L2_KIND_A : id < c->n_a + c->n_b ? L2_KIND_B : L2_KIND_C;
}

static void lru_unlink(l2_lru *c, int64_t id) {
  if (c->prev[id] >= 0) c->next[c->prev[id]] = c->next[id];
  else c->head = c->next[id];
  if (c->next[id] >= 0) c->prev[c->next[id]] = c->prev[id];
  else c->tail = c->prev[id];
}

static void lru_push(l2_lru *c, int64_t id) {
  c->prev[id] = c->tail;
  c->next[id] = -1;
  if (c->tail >= 0) c->next[c->tail] = id;
  else c->head = id;
  c->tail = id;
}

/* One access of granule id: read (a miss costs its bytes), write (allocates, no read) or both
 * (read-modify-write: a segment end's add into C). */
static void lru_access(l2_lru *c, int64_t id, int read, int write) {
  const int k = kind_of(c, id);
  if (c->in[id]) {
    lru_unlink(c, id);
  } else {
    if (read) c->out[k] += c->size[k];
    c->in[id] = 1;
    c->used += c->size[k];
    while (c->used > c->cap && c->head >= 0 && c->head != id) {
      const int64_t v = c->head;
      lru_unlink(c, v);
      c->in[v] = 0;
      c->used -= c->size[kind_of(c, v)];
      if (c->dirty[v]) c->out[L2_KIND_C] += c->size[L2_KIND_C], c->dirty[v] = 0;
    }
  }
  lru_push(c, id);
  if (write) c->dirty[id] = 1;
}

/* Tile t of the grid's order -> tile row *mt, tile column *nt. */
static void tile_of(const l2_gemm_grid *g, int64_t t, int64_t *mt, int64_t *nt) {
  if (g->group_m <= 0) {
    *mt = t / g->tiles_n;
    *nt = t % g->tiles_n;
    return;
  }
  const int64_t width = (int64_t)g->group_m * g->tiles_n, first = (t / width) * g->group_m;
  const int64_t rows = g->tiles_m - first < g->group_m ? g->tiles_m - first : g->group_m;
  const int64_t r = t % width;
  *mt = first + r % rows;
  *nt = r / rows;
}

/* One wave: tiles [t0, t1) through their K tiles in step, C at each segment end and at the end. */
static void run_wave(const l2_gemm_grid *g, l2_lru *c, int64_t t0, int64_t t1) {
  const int64_t seg = g->seg_ktiles > 0 && g->seg_ktiles < g->ktiles ? g->seg_ktiles : 0;
  for (int64_t kt = 0; kt < g->ktiles; ++kt) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t mt, nt;
      tile_of(g, t, &mt, &nt);
      lru_access(c, mt * g->ktiles + kt, 1, 0);
      lru_access(c, c->n_a + nt * g->ktiles + kt, 1, 0);
    }
    if (seg && (kt + 1) % seg == 0 && kt + 1 < g->ktiles)
      for (int64_t t = t0; t < t1; ++t) { /* segment 0 stores C, later segments add into it */
        int64_t mt, nt;
        tile_of(g, t, &mt, &nt);
        lru_access(c, c->n_a + c->n_b + mt * g->tiles_n + nt, kt + 1 > seg, 1);
      }
  }
  for (int64_t t = t0; t < t1; ++t) {
    int64_t mt, nt;
    tile_of(g, t, &mt, &nt);
    lru_access(c, c->n_a + c->n_b + mt * g->tiles_n + nt, seg != 0, 1);
  }
}

int l2_gemm_dram(const l2_gemm_grid *g, double l2_bytes, double out[3], double comp[3]) {
  memset(out, 0, 3 * sizeof *out);
  memset(comp, 0, 3 * sizeof *comp);
  if (!g || g->tiles_m < 1 || g->tiles_n < 1 || g->ktiles < 1 || g->concurrent < 1 ||
      g->a_bytes < 1 || g->b_bytes < 1 || g->c_bytes < 1 || g->tiles_m > (1 << 20) ||
      g->tiles_n > (1 << 20) || g->ktiles > (1 << 20))
    return -1;
  l2_lru c;
  memset(&c, 0, sizeof c);
  c.n_a = g->tiles_m * g->ktiles;
  c.n_b = g->tiles_n * g->ktiles;
  const int64_t n = c.n_a + c.n_b + g->tiles_m * g->tiles_n;
  if (n > ((int64_t)1 << 26)) return -1; /* beyond any shipped shape: refuse, do not guess */
  c.prev = malloc((size_t)n * sizeof *c.prev);
  c.next = malloc((size_t)n * sizeof *c.next);
  c.in = calloc((size_t)n, 1);
  c.dirty = calloc((size_t)n, 1);
  int rc = -1;
  if (c.prev && c.next && c.in && c.dirty) {
    c.head = c.tail = -1;
    c.cap = l2_bytes;
    c.size[L2_KIND_A] = (double)g->a_bytes;
    c.size[L2_KIND_B] = (double)g->b_bytes;
    c.size[L2_KIND_C] = (double)g->c_bytes;
    const int64_t tiles = g->tiles_m * g->tiles_n;
    for (int64_t t0 = 0; t0 < tiles; t0 += g->concurrent)
      run_wave(g, &c, t0, t0 + g->concurrent < tiles ? t0 + g->concurrent : tiles);
    for (int64_t id = c.n_a + c.n_b; id < n; ++id) /* C still in the cache is written back */
      if (c.dirty[id]) c.out[L2_KIND_C] += c.size[L2_KIND_C];
    memcpy(out, c.out, sizeof c.out);
    comp[0] = (double)c.n_a * c.size[L2_KIND_A];
    comp[1] = (double)c.n_b * c.size[L2_KIND_B];
    comp[2] = (double)tiles * c.size[L2_KIND_C];
    rc = 0;
  }
  free(c.prev);
  free(c.next);
  free(c.in);
  free(c.dirty);
  return rc;
}

/* basis.c — HLA basis selection of CONTRACT.md section 4.2 (tri, prefix, full). */
#include "basis.h"

#include <math.h>

static int log2_exact(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return (1 << k) == n ? k : -1;
}

static uint32_t bitrev(uint32_t v, int bits) {
  uint32_t r = 0;
  for (int i = 0; i < bits; ++i) r |= ((v >> i) & 1u) << (bits - 1 - i);
  return r;
}

uint32_t basis_seq_to_row(uint32_t s, int log2n) { return bitrev(s ^ (s >> 1), log2n); }

uint32_t basis_row_to_seq(uint32_t row, int log2n) {
  uint32_t g = bitrev(row, log2n), s = 0;
  for (; g; g >>= 1) s ^= g; /* inverse Gray code */
  return s;
}

/* Sequencies kept by `tri` at percentage P, in ascending order: the 2-D low-pass triangle of
 * LBP-WHT on an m x m folding of the first m^2 sequencies. sf is evaluated in double, as the
 * formula is written (CONTRACT.md 4.2). */
static int tri_sequencies(int p, int keep, uint32_t *seq) {
  int m2 = 1;
  while (m2 * 4 <= p) m2 *= 4;
  int m = (int)lround(sqrt((double)m2));
  double sfd = 0.1 * (-sqrt(2.0 * m * m * keep + 25.0) + 10.0 * m + 5.0);
  int sf = (int)sfd; /* trunc */
  int r = 0;
  for (int i = 0; i < m; ++i) {
    int lo, hi;
    if (i % 2 == 0) {
      lo = m * i;
      hi = m * (i + 1) - (i + sf);
    } else {
      lo = m * i + i + sf;
      hi = m * (i + 1);
    }
    for (int s = lo; s < hi; ++s) seq[r++] = (uint32_t)s;
  }
  return r;
}

int basis_select(hot_selection sel, int p, int keep, int rank, uint16_t *rows) {
  int lg = log2_exact(p);
  if (lg < 1 || p > HOT_MAX_P || !rows) return -1;
  uint32_t seq[HOT_MAX_P];
  int r = 0;
  switch (sel) {
  case HOT_SEL_TRI:
    if (keep < 1 || keep > 50) return -1;
    r = tri_sequencies(p, keep, seq);
    break;
  case HOT_SEL_PREFIX:
    if (rank < 1 || rank > p) return -1;
    for (r = 0; r < rank; ++r) seq[r] = (uint32_t)r;
    break;
  case HOT_SEL_FULL:
    for (r = 0; r < p; ++r) seq[r] = (uint32_t)r;
    break;
  default:
    return -1;
  }
  if (r < 1) return -1;
  for (int i = 0; i < r; ++i) rows[i] = (uint16_t)basis_seq_to_row(seq[i], lg);
  return r;
}

/* basis.h — HLA basis selection (CONTRACT.md section 4.2): which Walsh functions of length p are kept,
 * as natural-order rows of the Sylvester matrix H_p, in ascending sequency. Pure, no allocation. */
#ifndef HOT_BASIS_H
#define HOT_BASIS_H
#include <stdint.h>
#include "plan.h"

/* Natural-order row of H_n (n = 2^log2n) that has sequency s: bitrev_{log2n}(s ^ (s >> 1)). */
uint32_t basis_seq_to_row(uint32_t s, int log2n);

/* Sequency (number of sign changes) of natural row `row` of H_n: the inverse of the above. */
uint32_t basis_row_to_seq(uint32_t row, int log2n);

/* Fills rows[0..r) with the selected rows for block p (a power of two in 2..HOT_MAX_P) and returns
 * r >= 1. tri uses `keep` (1..50), prefix uses `rank` (1..p), full keeps all p rows.
 * Returns -1 for an invalid request (p not a power of two in range, keep or rank out of range);
 * the caller owns `rows`, which must hold HOT_MAX_P entries. */
int basis_select(hot_selection sel, int p, int keep, int rank, uint16_t *rows);

#endif

/* plan_arith.h — the checked int64 arithmetic of the planner (plan.c) and of the plan queries
 * (plan_query.c). Private to gen/. Every function is pure; none allocates or fails other than
 * by its return value. */
#ifndef HOT_PLAN_ARITH_H
#define HOT_PLAN_ARITH_H

#include <stdint.h>

/* v rounded up to a multiple of m (m > 0; the caller keeps v + m within int64_t). */
static inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
/* ceil(a / b) for a >= 0, b > 0. */
static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* a * b into *out; 0, or -1 when a product leaves int64_t (or an operand is negative). */
static inline int mul_ok(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return -1;
  return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}
/* a + b into *out; 0, or -1 on overflow. */
static inline int add_ok(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out) ? -1 : 0;
}
/* a * b * c, -1 on overflow. */
static inline int64_t mul3(int64_t a, int64_t b, int64_t c) {
  int64_t ab, r;
  if (mul_ok(a, b, &ab) || mul_ok(ab, c, &r)) return -1;
  return r;
}

#endif

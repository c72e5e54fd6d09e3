/* hot_tooldata.h — seeded test data shared by hot-bench and hot-tune (library hot_tooldata, built
 * from tooldata.c below both programs): standard-normal inputs from a counter-based generator, the
 * same values on every machine and in every run, and their rounding to a layer's dtype. Needs only
 * the public types (hot.h); nothing of libhot's internals.
 */
#ifndef HOT_TOOLDATA_H
#define HOT_TOOLDATA_H

#include <stddef.h>
#include <stdint.h>

#include "hot.h"

/* n standard-normal floats from (seed, stream): the same values on every machine. */
void tooldata_fill_normal(float *dst, size_t n, uint64_t seed, uint64_t stream);
/* The data kinds of the accuracy comparisons (hot-bench --scales, hot-tune): Gaussian g_y, or 4
 * channels (columns) / 4 tokens (rows) of it multiplied by 20. */
enum { TOOLDATA_GAUSS = 0, TOOLDATA_CHANNELS, TOOLDATA_TOKENS, TOOLDATA_KINDS };
/* Applies `kind` to g (T x O) in place (GAUSS: unchanged). */
void tooldata_outliers(float *g, int64_t T, int64_t O, int kind);
/* Rounds v[0..n) in place to the values a dt tensor holds and, for bf16/f16, sets *bits to a
 * malloc'd copy of the 16-bit patterns (f32: *bits untouched, nothing allocated). 0, or -1 on
 * out-of-memory. */
int tooldata_round_to_dtype(float *v, size_t n, hot_dtype dt, uint16_t **bits);
/* fp32 -> bf16 bit patterns, round to nearest even (NaN kept quiet). */
void tooldata_to_bf16(const float *src, uint16_t *dst, size_t n);
/* fp32 -> f16 bit patterns, round to nearest even (overflow to infinity, subnormals kept, NaN
 * kept quiet). */
void tooldata_to_f16(const float *src, uint16_t *dst, size_t n);
/* Seeded inputs of one layer at size (T, O, I) in the layer's input dtype: x T*I, w O*I, g_y T*O.
 * The float arrays hold the values the layer reads (rounded to dt, so the fp64 reference sees
 * exactly the layer's inputs); for bf16/f16 layers the 16-bit patterns are kept beside them.
 * malloc'd (the caller frees them with tooldata_free); tooldata_make returns 0, or -1 on OOM
 * (nothing left allocated). */
typedef struct {
  int64_t T, O, I;
  hot_dtype dt;
  float *x, *w, *gy;
  uint16_t *x16, *w16, *gy16; /* NULL for f32 */
} tooldata;
int tooldata_make(tooldata *d, int64_t T, int64_t O, int64_t I, uint64_t seed, int layer,
                  hot_dtype dt);
/* What the layer reads for one of d's tensors (d->x, d->w or d->gy): that float array for f32,
 * else its 16-bit copy; tooldata_dtype_size gives its element size. */
const void *tooldata_in(const tooldata *d, const float *v);
/* Bytes of one element of a dt tensor (4 for f32, 2 for bf16 and f16). */
size_t tooldata_dtype_size(hot_dtype dt);
/* Frees d's arrays and sets them to NULL (safe to call twice). */
void tooldata_free(tooldata *d);

#endif

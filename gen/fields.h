/* fields.h — a layer's settable fields by their spec path ("hq.block", "tile_gx.stages"): the one
 * table that sweeps (hot.sweep in a spec), hot-tune's variants and the tuning database's rows
 * use to read and write a hot_layer_spec. Pure C, no allocation.
 *
 * Every field has a class:
 *  - SPEED: changes only how a kernel runs (GEMM tiles, warps, stages), never a bit of a result;
 *  - ACCURACY: changes the numbers (HQ b, HLA p/keep/rank, bits, scale granularity, rounding, ...).
 * Values are written as in a spec: integers in decimal, booleans true/false, enumerations by
 * name ("token", "sr", "tri", ...).
 *
 * An assignment list is "path=value;path=value" (no spaces); fields_apply sets each in order.
 */
#ifndef HOT_FIELDS_H
#define HOT_FIELDS_H

#include <stddef.h>

#include "plan.h"

typedef enum { HOT_FIELD_SPEED = 0, HOT_FIELD_ACCURACY } hot_field_class;

typedef struct hot_field hot_field; /* one row of the table (fields.c) */

/* Number of fields, and the i-th (0 <= i < count) in table order: accuracy fields first (HQ, HLA,
 * ABC), then the tiles of g_x and g_w. */
int fields_count(void);
const hot_field *fields_at(int i);
/* The field named `path`, or NULL. */
const hot_field *fields_find(const char *path);
const char *fields_path(const hot_field *f);
hot_field_class fields_class(const hot_field *f);
/* One-line description of the allowed values ("power of two in [2, 256]", "tensor|sample|..."). */
const char *fields_values_doc(const hot_field *f);

/* Sets field f of *s from the text `value`. Returns 0, or -1 with a one-line message naming the
 * path and the value (not an integer, out of range, unknown name). The plan still checks the
 * combination (plan_layer). */
int fields_set(hot_layer_spec *s, const hot_field *f, const char *value, char *err, size_t n);
/* Writes the value of field f of *s into buf (NUL-terminated). Returns 0, -1 if buf is too small. */
int fields_get(const hot_layer_spec *s, const hot_field *f, char *buf, size_t n);

/* Applies "path=value;path=value" to *s (an empty string changes nothing). Returns 0, or -1 with
 * a message naming the first bad item (unknown path, missing '=', bad value). On an error *s may
 * hold the items before it. */
int fields_apply(hot_layer_spec *s, const char *assign, char *err, size_t n);

/* The canonical text of every field of class `cls` of *s, "path=value;..." in table order (the
 * tuning database's `base` for ACCURACY, the tiles for SPEED). Returns 0, -1 if buf is too small. */
int fields_canonical(const hot_layer_spec *s, hot_field_class cls, char *buf, size_t n);

#endif

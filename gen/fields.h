/* fields.h — a layer's fields by their spec path ("hq.block", "tile_gx.stages"): the table built
 * from field_list.h (the one place a field and an enumeration are declared). Sweeps (hot.sweep in
 * a spec), hot-tune's variants and the tuning database's rows read and write a hot_layer_spec
 * through it; the spec loader, plan_spec_defaults, the planner's enumeration names and the C API's
 * checks and recipe merge are driven by it too. Pure C, no allocation.
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

#include "field_list.h"
#include "plan.h"

typedef enum { HOT_FIELD_SPEED = 0, HOT_FIELD_ACCURACY } hot_field_class;
typedef enum { HOT_FK_INT = 0, HOT_FK_BOOL, HOT_FK_ENUM } hot_field_kind;

/* The enumerations of field_list.h: HOT_E_dtype, HOT_E_round, ...; HOT_E_none for no enum. */
#define HOT_ENUM_ID_(id, type) HOT_E_##id,
typedef enum { HOT_E_none = -1, HOT_ENUMS(HOT_ENUM_ID_) HOT_E_COUNT } hot_enum_id;
#undef HOT_ENUM_ID_

/* Row flags (field_list.h). */
enum {
  FL_ACC = 1u,    /* class ACCURACY (else SPEED) */
  FL_POW2 = 2u,   /* INT: a power of two */
  FL_ZERO = 4u,   /* INT: 0 is allowed too (specs included) */
  FL_UNSET0 = 8u, /* INT: 0 means unset in C; fields_set takes it, a spec may not write it */
  FL_SWEEP = 16u  /* hot.sweep and hot-tune may vary it */
};

/* One row of the table (one hot_layer_spec member). */
typedef struct hot_field {
  const char *path;     /* spec path ("hq.block", "bias"), or NULL: a member no spec writes */
  const char *member;   /* the C member ("hq.g.bits") */
  size_t off;           /* offset of the int (or enum) in hot_layer_spec */
  size_t off2;          /* a second int that takes the same value (0: none) */
  hot_field_kind kind;
  hot_enum_id en;       /* HOT_FK_ENUM: the enumeration */
  int min, max;         /* HOT_FK_INT: the range a spec may write */
  unsigned flags;       /* FL_* */
  int dflt[4];          /* default per hot_recipe */
  const char *vdoc;     /* allowed values, one phrase; ENUM: the spec's names "a|b|c" */
  const char *doc;      /* one-line description (hot-gen --help-spec) */
} hot_field;

/* ---- the sweepable fields (the tuning database's view; unchanged order) ------------------- */

/* Number of sweepable fields, and the i-th (0 <= i < count) in table order: accuracy fields first
 * (HQ, HLA, ABC), then the tiles of g_x and g_w. */
int fields_count(void);
const hot_field *fields_at(int i);
/* The sweepable field named `path`, or NULL. */
const hot_field *fields_find(const char *path);
const char *fields_path(const hot_field *f);
hot_field_class fields_class(const hot_field *f);
/* One-line description of the allowed values ("power of two in [2, 256]", "sr|rtn", ...). */
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

/* The canonical text of every sweepable field of class `cls` of *s, "path=value;..." in table
 * order (the tuning database's `base` for ACCURACY, the tiles for SPEED). Returns 0, -1 if buf is
 * too small. */
int fields_canonical(const hot_layer_spec *s, hot_field_class cls, char *buf, size_t n);

/* ---- every row ----------------------------------------------------------------------------- */

/* Number of rows (sweepable ones first, then the layer's own, then C-only members) and the i-th. */
int fields_all_count(void);
const hot_field *fields_all_at(int i);
/* The row whose spec path is `path` (sweepable or not), or NULL. */
const hot_field *fields_find_spec(const char *path);
/* The int value of row f in *s (an enum as its number). */
int fields_value(const hot_layer_spec *s, const hot_field *f);
/* Sets row f (and its second member) of *s to v, unchecked. */
void fields_store(hot_layer_spec *s, const hot_field *f, int v);
/* 1 when v is a value a spec (or, with c_caller, a C caller or a sweep) may give row f: in range
 * (INT, with FL_POW2/FL_ZERO/FL_UNSET0), 0/1 (BOOL), a value of the enumeration (ENUM). */
int fields_value_ok(const hot_field *f, int v, int c_caller);

/* ---- enumerations -------------------------------------------------------------------------- */

/* Number of values of enumeration e (0 for an unknown e). */
int fields_enum_count(hot_enum_id e);
/* Static name of value v of e ("token"), "?" when out of range. One list per enumeration. */
const char *fields_enum_name(hot_enum_id e, int v);
/* The value of e named `name`, or -1. */
int fields_enum_parse(hot_enum_id e, const char *name);
/* Static C names: the type ("hot_gran") and a value's constant ("HOT_GRAN_ROW"; "?" if none). */
const char *fields_enum_type(hot_enum_id e);
const char *fields_enum_const(hot_enum_id e, int v);
/* The C value of the i-th listed constant of e (-1 out of range): i itself, when field_list.h
 * lists the values in order (tests/spec checks it). */
int fields_enum_value(hot_enum_id e, int i);

/* ---- whole specs --------------------------------------------------------------------------- */

/* Fills *s with the defaults of `recipe` (name empty, sizes 0): plan_spec_defaults. A recipe out
 * of range gives HOT_RECIPE_HOT's. */
void fields_defaults(hot_layer_spec *s, hot_recipe recipe);
/* fields_check_enums and fields_apply_recipe (the C API's checks and recipe merge) are declared
 * in plan.h, which libhot's sources include. */

#endif

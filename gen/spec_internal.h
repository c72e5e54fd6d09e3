/* spec_internal.h — what the files of the spec loader share (not part of spec.h's API):
 *   spec.c          the entry points (load a file or a string, run the spec, report);
 *   spec_sandbox.c  the bounded Lua state: allocator, limits, message handler, environments;
 *   spec_lex.c      spec_field_line: the line of a table field, from the spec's text;
 *   spec_copy.c     the C copy of a validated model (driven by gen/field_list.h), its checks;
 *   spec_help.c     the text of `hot-gen --help-spec`.
 * Only these files touch lua_State. */
#ifndef HOT_SPEC_INTERNAL_H
#define HOT_SPEC_INTERNAL_H

#include <stddef.h>

#include <lua.h>

#include "spec.h"

/* ---- the bounded state (spec_sandbox.c) -------------------------------------------------- */

typedef struct {
  size_t used, limit;
  size_t base_limit;        /* the memory limit before any layer */
  int refused;              /* the latest allocation was refused (the memory limit) */
  int host_oom;             /* the host refused memory (realloc failed) while under the limit */
  long long steps;          /* VM instructions run so far (counted HOOK_EVERY at a time) */
  long long base_steps;     /* the instruction limit before any layer (spec_limits.instructions) */
  long long max_steps;      /* base_steps + SPEC_STEPS_PER_LAYER * most layers given hot.model */
  long long layers_seen;    /* the most layers one hot.model call was given (spec_layers) */
  double deadline;          /* CLOCK_MONOTONIC seconds; 0: none */
  int tripped;              /* the instruction/time limit was hit */
  const char *spec_source;  /* the spec chunk's source name (shared by all its functions) */
  const char *spec_file;    /* path as given, for messages */
  const char *text;         /* the spec's source (for spec_field_line) */
  size_t text_len;
  int field_lookups;        /* spec_field_line calls so far (bounded) */
  char spec_short[LUA_IDSIZE]; /* Lua's short_src of the spec chunk (how Lua's messages name it) */
  int last_line;            /* the spec line that ran last (line hook) */
} sandbox;

/* VM instructions the loader allows per layer of a model, on top of the spec's own limit: what
 * the DSL's validation of one layer and the C copy need, with a wide margin (a layer with every
 * field written takes about 2 500). */
#define SPEC_STEPS_PER_LAYER 20000LL

/* Bytes of Lua heap the loader allows per byte of spec text, on top of spec_limits.memory_bytes:
 * a spec that lists 50 000 layers one by one (5 MB of text) needs about 110 MiB in all. */
#define SPEC_MEMORY_PER_BYTE ((size_t)16)

/* Bytes of Lua heap allowed per layer of the largest model given to hot.model (the DSL's normalized
 * copy, the read-only view and the C copy of a layer), at most SPEC_MEMORY_GROWTH times the
 * memory limit the spec started with. */
#define SPEC_MEMORY_PER_LAYER ((size_t)2048)
#define SPEC_MEMORY_GROWTH ((size_t)4)

/* Opens a Lua state bounded by *lim (NULL: the defaults), its sandbox in *sb (zeroed first).
 * Returns the state (the caller closes it with lua_close), or NULL when out of memory. */
lua_State *sandbox_open(sandbox *sb, const spec_limits *lim);

/* Sets (on = 1) or clears the instruction/time hook and the line hook on L. */
void sandbox_hook(lua_State *L, int on);

/* Builds the two environments on L: the DSL's (registry "hot.dslenv") and the spec's (pushed).
 * Raises a Lua error when out of memory (call it inside a protected call). */
void sandbox_build_envs(lua_State *L);

/* The message handler of every protected call: any error value becomes one string that starts
 * with the spec's "file:line: ". */
int sandbox_msg_handler(lua_State *L);

/* Length of a "<short_src>:<digits>:" prefix of msg naming the spec chunk (0 if none); its line
 * in *line. */
size_t sandbox_location_prefix(const sandbox *sb, const char *msg, int *line);

/* The sandbox of L (the allocator's user data). */
sandbox *sandbox_of(lua_State *L);

/* malloc for the loader's C copies: fails like the host when the test hook
 * (spec_test_fail_allocs_after) says so. The caller frees the result. */
void *spec_malloc(size_t n);
/* realloc with the same test hook. */
void *spec_realloc(void *p, size_t n);

/* ---- the field line (spec_lex.c) --------------------------------------------------------- */

/* spec_field_line(line, kind, key...) for the DSL: the line where field key... of the `kind {`
 * constructor on `line` is written, or nothing. */
int spec_lex_field_line(lua_State *L);

/* ---- the C copy (spec_copy.c) ------------------------------------------------------------ */

enum { LAYER_OK = 1, LAYER_HAS_RANK = 2, LAYER_HAS_KEEP = 4 };

typedef struct {
  hot_model m;              /* layers and sweep point into this userdata */
  int model_ok;             /* the model's own fields validated without error */
  int line, sweep_line;     /* hot.model's and hot.sweep's lines */
  unsigned char *flags;     /* per layer: LAYER_* */
  const char *internal;     /* a value the DSL should have refused (a DSL bug), or NULL */
} spec_copy;

/* spec_commit(m) for the DSL: copies the normalized model into a new userdata and returns it. */
int spec_copy_commit(lua_State *L);

/* Pushes the table `spec_fields` the DSL's schema is built from: one entry per row of
 * field_list.h with a spec path, in table order ({path, kind, min, max, pow2, zero_ok, values,
 * doc}), and `enums` (name -> list of names). Raises a Lua error when out of memory. */
void spec_copy_push_fields(lua_State *L);

/* Checks of the copy that need the recipe defaults (fields the chosen hla.selection ignores).
 * Returns the number of errors added; layers with one lose LAYER_OK. */
int spec_copy_check(const spec_copy *c, const char *file, int dsl_errs, hot_diag *diag);

/* Plans the layers without errors of a spec with errors, adding their planner errors. Returns
 * -2 when memory ran out, else 0. */
int spec_copy_plan_clean(const spec_copy *c, const char *file, hot_diag *diag);

/* Copies c into *out (malloc'd arrays, the caller frees them with spec_model_free). Returns 0 or
 * -2 (out of memory). */
int spec_copy_out(const spec_copy *c, const char *file, hot_model *out);

/* ---- messages (spec.c) ------------------------------------------------------------------- */

/* Appends text to diag as one line: control bytes become \ddd (a message never splits). */
void spec_add_line(hot_diag *diag, const char *text);

#endif

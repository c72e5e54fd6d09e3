/* spec.h — loading a Lua spec into a hot_model (spec.c is the only file that touches lua_State).
 *
 * A spec runs sandboxed: text chunks only (bytecode is rejected), an environment holding only
 * string, table, math (copies), a few safe base functions and `require "hot"`; an instruction
 * limit, a wall-clock limit and a memory limit bound it; everything runs under lua_pcall and the
 * state is closed on every path. The validated result is copied once into plain C structs.
 */
#ifndef HOT_SPEC_H
#define HOT_SPEC_H

#include <stddef.h>

#include "diag.h"
#include "plan.h"

typedef struct {
  size_t memory_bytes;       /* Lua heap limit (default 64 MiB) */
  long long instructions;    /* VM instruction limit (default 50 million) */
  double seconds;            /* wall-clock limit (default 5 s) */
} spec_limits;

/* The default limits. */
spec_limits spec_default_limits(void);

/* Loads and validates the spec file at `path` into *out (zeroed first).
 * Returns 0 on success; -1 on any error, with every message appended to *diag as
 * "path:line: ..." (a file that cannot be read gives "path: <reason>"). `limits` may be NULL
 * (defaults). On success the caller owns *out and frees it with spec_model_free; on failure
 * *out holds nothing to free (freeing it is still safe). */
int spec_load_file(const char *path, const spec_limits *limits, hot_model *out, hot_diag *diag);

/* The same for a spec held in memory; `chunkname` names it in messages (e.g. "test.lua"). */
int spec_load_string(const char *chunkname, const char *text, size_t len, const spec_limits *limits,
                     hot_model *out, hot_diag *diag);

/* Frees what a model owns and zeroes it. NULL-safe. */
void spec_model_free(hot_model *m);

/* The reference text of every spec field (kind, range, default, doc) that `hot-gen --help-spec`
 * prints. Returns a malloc'd string the caller frees, or NULL on error (message in *diag). */
char *spec_help_text(hot_diag *diag);

/* The index of layer `name` in m, or -1. */
int spec_find_layer(const hot_model *m, const char *name);

#endif

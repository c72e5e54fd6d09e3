/* spec.h — loading a Lua spec into a hot_model (spec.c and spec_*.c are the only files that
 * touch lua_State; spec_internal.h says which does what).
 *
 * A spec runs sandboxed: text chunks only (bytecode is rejected), an environment holding only
 * string, table, math (copies), a few safe base functions and `require "hot"`; an instruction
 * limit, a memory limit and a wall-clock backstop bound it; everything runs under lua_pcall and
 * the state is closed on every path. The validated result is copied once into plain C structs.
 *
 * The limits are what stop an endless loop or a bomb, deterministically: the instruction limit
 * counts every VM instruction (the spec's and the DSL's validation) and grows by a fixed
 * allowance per layer of the largest model given to hot.model (spec_internal.h,
 * SPEC_STEPS_PER_LAYER), so a model of any size that fits the memory limit loads, whatever the
 * machine's load; validating the same model again gains nothing. The memory limit grows with the
 * spec's text (at most 16 MiB), for models written layer by layer. The wall clock only guards
 * against a C function running long (it is far above what any honest spec takes).
 */
#ifndef HOT_SPEC_H
#define HOT_SPEC_H

#include <stddef.h>

#include "diag.h"
#include "plan.h"

typedef struct {
  size_t memory_bytes;       /* Lua heap limit (default 64 MiB), plus 16 bytes per byte of the
                                spec's text (a model listed layer by layer needs more) */
  long long instructions;    /* VM instruction limit before any layer (default 50 million),
                                plus 20 000 per layer of the largest model validated */
  double seconds;            /* wall-clock backstop (default 60 s; <= 0: none) */
} spec_limits;

/* The default limits. */
spec_limits spec_default_limits(void);

/* Return codes of spec_load_file / spec_load_string (0 = success). */
#define SPEC_ERR_SPEC (-1)  /* the spec is wrong (or cannot be read): messages in *diag */
#define SPEC_ERR_NOMEM (-2) /* the host ran out of memory (the Lua heap or a C copy could not
                               grow while under the spec's memory limit); a spec that exceeds
                               its own memory limit is a SPEC_ERR_SPEC */

/* Loads and validates the spec file at `path` into *out (zeroed first). The file is a stream,
 * read once from start to end (fileio_fopen_stream): a regular file, a pipe (`<(cmd)`,
 * /dev/stdin) or "-" for standard input (named "stdin" in messages); at most 16 MiB.
 * Returns 0 on success; SPEC_ERR_SPEC or SPEC_ERR_NOMEM on an error, with every message appended
 * to *diag, each one line naming "path:line: ..." (a file that cannot be opened gives
 * "path: <reason>"). When a spec has errors, the layers without any are still planned for every
 * target arch and their planner errors are added ("... (planning for sm_86)"). On success *diag
 * may receive warnings ("path:line: warning: ..."). `limits` may be NULL (defaults). On success
 * the caller owns *out and frees it with spec_model_free; on failure *out holds nothing to free
 * (freeing it is still safe).
 *
 * The model is copied into *out from a C copy made by hot.model at the moment it validated: a
 * spec cannot change a validated model afterwards. Model and layer names satisfy
 * spec_name_valid. */
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
/* The name of layer i of the model m (a const hot_model *), for diag_names. */
const char *spec_layer_name(const void *m, int i);

int spec_find_layer(const hot_model *m, const char *name);

/* 1 when s is a valid model or layer name, else 0: [A-Za-z0-9_][A-Za-z0-9_.-]{0,62}, so a name
 * is always a safe file-name component (never empty, ".", "..", an option or a path). */
int spec_name_valid(const char *s);

/* Joins dir and one file-name component into out (n bytes): "dir/component". Returns 0, or -1
 * (out = "") when component is empty, ".", "..", holds a '/' or a control byte, or the result
 * does not fit: whatever the component, the path stays directly inside dir. */
int spec_path_join(char *out, size_t n, const char *dir, const char *component);

/* Test hook: the loader's next `n` allocations (the Lua heap and its C copies) succeed, then every
 * one fails as if the host had no memory, until called again; n < 0 (the default) turns it off.
 * Process-wide; for tests only (tests/spec drives it to check that every allocation failure is
 * reported as SPEC_ERR_NOMEM, without a crash or a leak). */
void spec_test_fail_allocs_after(long long n);

/* The number of allocations the loader has made in this process (tests size the hook with it). */
long long spec_test_alloc_count(void);

#endif

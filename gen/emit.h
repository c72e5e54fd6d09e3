/* emit.h — from a layer plan to CUDA source: all of the layer's kernels in one file (hot-gen
 * --emit), or any subset (emit_layer_select: the runtime compiles one program per distinct
 * kernel, runtime/jit.h). Deterministic: the same plan gives byte-identical text.
 *
 * Templates are real .cu files under templates/ (embedded at build time). Each starts with
 *   / * @hot-params: NAME NAME ... * /
 * listing every macro the generator must define, followed by an #ifndef HOT_GENERATED block of
 * stand-alone defaults. The generator defines HOT_GENERATED, hoists the templates' #include "x"
 * files to the top (once) — except "x.inl.cuh" files, which may use the kernel's parameters and
 * are spliced in place of their #include line into every instance, between #line directives
 * (hot_sm90.inl.cuh, shared by the two 9.0a wgmma GEMMs) — and for each kernel writes its #defines,
 * the template body inside
 * its own namespace (extern "C" keeps the entry name), and #undefs of every macro the template
 * defines. A parameter the plan does not provide, a parameter the template does not declare, or
 * any other @hot- marker is an error.
 */
#ifndef HOT_EMIT_H
#define HOT_EMIT_H

#include <stddef.h>

#include "plan.h"

typedef struct {
  char *source;                       /* owned: the CUDA source (NUL-terminated) */
  size_t source_len;
  int n_kernels;                      /* distinct kernels emitted */
  const char *kernels[HOT_MAX_KERNELS];      /* their entry names (borrowed from the plan) */
  const char *templates[HOT_MAX_KERNELS];    /* and template files */
  int n_missing;                      /* planned kernels whose template does not exist yet */
  hot_kernel_role missing[HOT_MAX_KERNELS];
} hot_emitted;

/* Emits the source of every kernel of `plan` whose template exists. The first line names the
 * templates ("// generated from templates/x.cu, ... by hot-gen V for sm_XX; do not edit"); the
 * text depends only on the kernels, so layers with equal kernels share a cached binary.
 * Returns 0, EMIT_ENOMEM with "out of memory" in err, or -1 with a one-line reason in err
 * (unknown/unfilled marker, unreadable template, a plan the templates cannot take). On success
 * the caller owns out->source and frees it with emit_free; `plan` must outlive out (names are
 * borrowed). */
#define EMIT_ENOMEM (-2)
int emit_layer(const hot_layer_plan *plan, hot_emitted *out, char *err, size_t errlen);

/* The same for the kernels i of the plan with bit i set in `mask` (tests, per-kernel compiles). */
int emit_layer_select(const hot_layer_plan *plan, unsigned mask, hot_emitted *out, char *err,
                      size_t errlen);

/* The parameter names of the entry point (the first "HOT_KNAME(" of embedded template `templ`),
 * comma-joined in order, in *out (malloc'd; the caller frees it). Returns 0, or -1 with a reason
 * in err. For the check that runtime/launch.c passes what each template takes. */
int emit_entry_params(const char *templ, char **out, char *err, size_t errlen);

/* Frees out->source; NULL-safe. */
void emit_free(hot_emitted *out);

/* Emits one template with explicit parameters (names[i] = values[i], n of them) as a stand-alone
 * source; used by tests and tools. Same errors and ownership as emit_layer (*source is malloc'd). */
int emit_template(const char *templ, const char *const *names, const char *const *values, int n,
                  char **source, char *err, size_t errlen);

/* The same for a template given as text (named `templ` in messages); its #include files still
 * come from the embedded templates/. For tests of the marker rules. */
int emit_template_text(const char *templ, const char *text, const char *const *names,
                       const char *const *values, int n, char **source, char *err, size_t errlen);

#endif

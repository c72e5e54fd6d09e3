/* emit.c — templates + plan -> CUDA source (see emit.h for the template contract). */
#include "emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "diag.h"
#include "embed.h"
#include "kernel_desc.h"
#include "kernel_params.h"

#ifndef HOT_VERSION
#define HOT_VERSION "0"
#endif

#define MAX_DEFINES 64
#define MAX_INCLUDES 8

/* The template parameters of one planned kernel: HOT_KNAME, then its descriptor's. Returns 0, or
 * -1 with p->failed set. */
static int kernel_params(const hot_layer_plan *pl, const hot_kernel_plan *k, params *p) {
  p->n = 0;
  p->failed = 0;
  param_set(p, "HOT_KNAME", "%s", k->name);
  const hot_kernel_desc *d = kd_of(k);
  if (d) d->params(pl, k->role, p);
  return p->failed ? -1 : 0;
}

/* ---- template parsing ------------------------------------------------------------------ */

typedef struct {
  const hot_embedded_file *file;
  int n_params;
  char params[MAX_PARAMS][PARAM_LEN];
  int n_defines;
  char defines[MAX_DEFINES][PARAM_LEN];
  int n_includes;
  char includes[MAX_INCLUDES][128];
  int spliced[MAX_INCLUDES]; /* 1: a "*.inl.cuh" file, spliced in place into every instance */
} templ_info;

/* Whether an included file is spliced in place (it may use the kernel's parameters) rather than
 * hoisted once above the kernels: its name ends in ".inl.cuh". */
static int is_spliced(const char *name) {
  const size_t n = strlen(name), k = strlen(".inl.cuh");
  return n > k && strcmp(name + n - k, ".inl.cuh") == 0;
}

static int is_ident(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Reads the identifier at s into dst (at most n-1 chars); returns its length, or 0 with dst
 * empty when the identifier does not fit (never a silently shortened name). */
static size_t read_ident(const char *s, char *dst, size_t n) {
  size_t i = 0;
  while (is_ident(s[i]) && i + 1 < n) {
    dst[i] = s[i];
    ++i;
  }
  if (is_ident(s[i])) i = 0;
  dst[i] = '\0';
  return i;
}

/* Reads the parameter names after "@hot-params:" from q up to the line's end (or a '*'). */
static int parse_param_list(const char *path, int line, const char *q, const char *end,
                            templ_info *t, char *err, size_t n) {
  while (q < end) {
    while (q < end && !is_ident(*q)) {
      if (*q == '*') break;
      ++q;
    }
    if (q >= end || *q == '*') break;
    if (t->n_params >= MAX_PARAMS)
      return diag_errf(err, n, "%s:%d: more than %d parameters", path, line, MAX_PARAMS);
    size_t got = read_ident(q, t->params[t->n_params++], PARAM_LEN);
    if (!got)
      return diag_errf(err, n, "%s:%d: a parameter name longer than %d characters", path, line,
                      PARAM_LEN - 1);
    q += got;
  }
  return 0;
}

/* The @hot- markers of line l (len bytes): exactly one @hot-params in the whole template. */
static int parse_markers(const char *path, int line, const char *l, size_t len, templ_info *t,
                         int *seen_params, char *err, size_t n) {
  const char *m = l;
  while ((m = strstr(m, "@hot-")) && m < l + len) {
    if (strncmp(m, "@hot-params:", 12) != 0) {
      const char *b = m + 5, *e2 = b;
      while (is_ident(*e2)) ++e2;
      return diag_errf(err, n, "%s:%d: unknown marker @hot-%.*s", path, line, (int)(e2 - b), b);
    }
    if (*seen_params) return diag_errf(err, n, "%s:%d: second @hot-params marker", path, line);
    *seen_params = 1;
    if (parse_param_list(path, line, m + 12, l + len, t, err, n)) return -1;
    m += 12;
  }
  return 0;
}

/* "#define NAME": records NAME (once) so it can be #undef'd after the kernel. d: after
 * "define". */
static int parse_define(const char *path, int line, const char *d, templ_info *t, char *err,
                        size_t n) {
  while (*d == ' ' || *d == '\t') ++d;
  char name[PARAM_LEN] = ""; /* a bare "#define" records nothing */
  if (is_ident(*d) && !read_ident(d, name, sizeof name))
    return diag_errf(err, n, "%s:%d: a macro name longer than %d characters", path, line,
                    PARAM_LEN - 1);
  int dup = 0;
  for (int i = 0; i < t->n_defines; ++i) dup |= strcmp(t->defines[i], name) == 0;
  if (!dup && name[0]) {
    if (t->n_defines >= MAX_DEFINES) /* each is #undef'd after the kernel: none may be lost */
      return diag_errf(err, n, "%s:%d: more than %d macros defined", path, line, MAX_DEFINES);
    memcpy(t->defines[t->n_defines++], name, strlen(name) + 1);
  }
  return 0;
}

/* "#include \"file.cuh\"" (d: at "include", end: the line's end): records templates/file.cuh. */
static int parse_include(const char *path, int line, const char *d, const char *end,
                         templ_info *t, char *err, size_t n) {
  const char *q = strchr(d, '"');
  const char *r = q ? strchr(q + 1, '"') : NULL;
  if (!q || !r || r > end || (size_t)(r - q - 1) >= 100)
    return diag_errf(err, n, "%s:%d: only #include \"file.cuh\" of templates/ is allowed", path,
                line);
  if (t->n_includes >= MAX_INCLUDES)
    return diag_errf(err, n, "%s:%d: more than %d includes", path, line, MAX_INCLUDES);
  snprintf(t->includes[t->n_includes], 128, "templates/%.*s", (int)(r - q - 1), q + 1);
  t->spliced[t->n_includes] = is_spliced(t->includes[t->n_includes]);
  t->n_includes++;
  return 0;
}

/* The preprocessor directive of line l (len bytes), if any: #define and #include. */
static int parse_directive(const char *path, int line, const char *l, size_t len, templ_info *t,
                           char *err, size_t n) {
  const char *d = l;
  while (d < l + len && (*d == ' ' || *d == '\t')) ++d;
  if (*d != '#') return 0;
  ++d;
  while (*d == ' ' || *d == '\t') ++d;
  if (strncmp(d, "define", 6) == 0 && (d[6] == ' ' || d[6] == '\t'))
    return parse_define(path, line, d + 6, t, err, n);
  if (strncmp(d, "include", 7) == 0) return parse_include(path, line, d, l + len, t, err, n);
  return 0;
}

/* Parses template `path` (its text: `file`, or the embedded file when NULL). */
static int parse_template(const char *path, const hot_embedded_file *file, templ_info *t,
                          char *err, size_t n) {
  memset(t, 0, sizeof *t);
  t->file = file ? file : embed_find(path);
  if (!t->file) return diag_errf(err, n, "%s: template not found", path);
  const char *s = t->file->data;
  int line = 1, seen_params = 0;
  for (const char *l = s; *l; ++line) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (parse_markers(path, line, l, len, t, &seen_params, err, n) ||
        parse_directive(path, line, l, len, t, err, n))
      return -1;
    if (!e) break;
    l = e + 1;
  }
  if (!seen_params) return diag_errf(err, n, "%s: no @hot-params marker", path);
  for (int i = 0; i < t->n_includes; ++i)
    if (!embed_find(t->includes[i]))
      return diag_errf(err, n, "%s: included file %s not found", path, t->includes[i]);
  return 0;
}

/* Every declared parameter is provided, and nothing else. */
static int check_params(const templ_info *t, const params *p, const char *path, char *err,
                        size_t n) {
  for (int i = 0; i < t->n_params; ++i) {
    int found = 0;
    for (int j = 0; j < p->n; ++j) found |= strcmp(t->params[i], p->name[j]) == 0;
    if (!found) return diag_errf(err, n, "%s: parameter %s is not filled by the plan", path, t->params[i]);
  }
  for (int j = 0; j < p->n; ++j) {
    int found = 0;
    for (int i = 0; i < t->n_params; ++i) found |= strcmp(t->params[i], p->name[j]) == 0;
    if (!found) return diag_errf(err, n, "%s: unknown parameter %s (not in @hot-params)", path, p->name[j]);
  }
  return 0;
}

/* Appends the text of a spliced file (a "*.inl.cuh") in place of line `line` of template path,
 * between #line directives that keep both files' line numbers. */
static void add_spliced(hot_buf *b, const char *name, const char *path, int line) {
  const hot_embedded_file *f = embed_find(name); /* parse_template checked it exists */
  buf_printf(b, "#line 1 \"%s\"\n", name);
  buf_add(b, f->data, f->size);
  if (f->size && f->data[f->size - 1] != '\n') buf_add(b, "\n", 1);
  buf_printf(b, "#line %d \"%s\"\n", line + 1, path);
}

/* Appends the template body: #include lines of hoisted files become blank lines, those of
 * spliced files (is_spliced) their text. */
static void add_body(hot_buf *b, const templ_info *t, const char *path) {
  buf_printf(b, "#line 1 \"%s\"\n", path);
  const char *s = t->file->data;
  int line = 1, inc = 0;
  for (const char *l = s; *l; ++line) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    const char *d = l;
    while (d < l + len && (*d == ' ' || *d == '\t')) ++d;
    int is_inc = 0;
    if (*d == '#') {
      ++d;
      while (*d == ' ' || *d == '\t') ++d;
      is_inc = strncmp(d, "include", 7) == 0;
    }
    if (is_inc && inc < t->n_includes && t->spliced[inc]) {
      add_spliced(b, t->includes[inc], path, line);
    } else {
      if (!is_inc) buf_add(b, l, len);
      buf_add(b, "\n", 1);
    }
    inc += is_inc;
    if (!e) break;
    l = e + 1;
  }
}

#define MAX_HOISTED (MAX_INCLUDES * 2)
/* Adds the files templates include, each once (hoisted above every kernel). Returns 0, or -1
 * when more than MAX_HOISTED distinct files would be needed. */
static int add_includes(hot_buf *b, const templ_info *t, char done[][128], int *n_done) {
  for (int i = 0; i < t->n_includes; ++i) {
    int seen = t->spliced[i]; /* spliced into the body instead */
    for (int j = 0; j < *n_done; ++j) seen |= strcmp(done[j], t->includes[i]) == 0;
    if (seen) continue;
    if (*n_done >= MAX_HOISTED) return -1;
    memcpy(done[(*n_done)++], t->includes[i], strlen(t->includes[i]) + 1); /* < 128: parsed so */
    const hot_embedded_file *f = embed_find(t->includes[i]);
    buf_printf(b, "#line 1 \"%s\"\n", t->includes[i]);
    buf_add(b, f->data, f->size);
    if (f->size && f->data[f->size - 1] != '\n') buf_add(b, "\n", 1);
  }
  return 0;
}

static void add_instance(hot_buf *b, const templ_info *t, const params *p, const char *path,
                         int ns) {
  buf_printf(b, "\n/* ---- %s from %s */\n", p->value[0], path);
  for (int j = 0; j < p->n; ++j) buf_printf(b, "#define %s %s\n", p->name[j], p->value[j]);
  buf_printf(b, "namespace hot_k%d {\n", ns);
  add_body(b, t, path);
  buf_printf(b, "} /* namespace hot_k%d */\n", ns);
  for (int j = 0; j < p->n; ++j) buf_printf(b, "#undef %s\n", p->name[j]);
  for (int i = 0; i < t->n_defines; ++i) {
    int is_param = 0;
    for (int j = 0; j < p->n; ++j) is_param |= strcmp(p->name[j], t->defines[i]) == 0;
    if (!is_param) buf_printf(b, "#undef %s\n", t->defines[i]);
  }
}

/* ---- entry points ---------------------------------------------------------------------- */

/* "out of memory" in err; EMIT_ENOMEM, so that callers tell it from a bad plan or template. */
static int emit_oom(char *err, size_t n) {
  diag_errf(err, n, "out of memory");
  return EMIT_ENOMEM;
}

int emit_layer(const hot_layer_plan *plan, hot_emitted *out, char *err, size_t n) {
  return emit_layer_select(plan, ~0u, out, err, n);
}

/* Stage 1 of emission: for each selected kernel (bit i of mask) with a template, its parsed
 * template and parameters; use[i] = 1 for the distinct ones to emit. */
static int collect_kernels(const hot_layer_plan *plan, unsigned mask, templ_info *infos,
                           params *ps, int *use, hot_emitted *out, char *err, size_t n) {
  for (int i = 0; i < plan->n_kernels; ++i) {
    const hot_kernel_plan *k = &plan->kernels[i];
    if (!(mask & (1u << i))) continue;
    if (!embed_find(k->templ)) { /* not written yet: reported, not emitted */
      out->missing[out->n_missing++] = k->role;
      continue;
    }
    int dup = 0;
    for (int j = 0; j < out->n_kernels; ++j) dup |= strcmp(out->kernels[j], k->name) == 0;
    if (dup) continue;
    if (parse_template(k->templ, NULL, &infos[i], err, n)) return -1;
    if (kernel_params(plan, k, &ps[i])) {
      if (ps[i].failed == 2)
        return diag_errf(err, n, "kernel %s: more than %d template parameters or a name of %d "
                        "characters or more", k->name, MAX_PARAMS, PARAM_LEN);
      diag_errf(err, n, "kernel %s: cannot build its parameters (out of memory)", k->name);
      return EMIT_ENOMEM;
    }
    if (check_params(&infos[i], &ps[i], k->templ, err, n)) return -1;
    use[i] = 1;
    out->kernels[out->n_kernels] = k->name;
    out->templates[out->n_kernels++] = k->templ;
  }
  return 0;
}

/* Stage 2: the source text of the collected kernels into out->source. The text depends only on
 * the kernels (not on the layer or spec name), so layers with the same kernels share one cached
 * binary. */
static int assemble_source(const hot_layer_plan *plan, const templ_info *infos, const params *ps,
                           const int *use, hot_emitted *out, char *err, size_t n) {
  hot_buf b = {0};
  buf_puts(&b, "// generated from");
  for (int i = 0; i < out->n_kernels; ++i) {
    int seen = 0;
    for (int j = 0; j < i; ++j) seen |= strcmp(out->templates[j], out->templates[i]) == 0;
    if (!seen) buf_printf(&b, "%s %s", i ? "," : "", out->templates[i]);
  }
  buf_printf(&b, " by hot-gen %s for %s; do not edit\n", HOT_VERSION,
             plan_arch_caps(plan->arch)->name);
  buf_puts(&b, "#define HOT_GENERATED 1\n");
  char done[MAX_HOISTED][128];
  int n_done = 0;
  for (int i = 0; i < plan->n_kernels; ++i)
    if (use[i] && add_includes(&b, &infos[i], done, &n_done)) {
      buf_free(&b);
      return diag_errf(err, n, "%s: more than %d distinct included files in one source",
                      plan->kernels[i].templ, MAX_HOISTED);
    }
  /* Namespaces numbered by emission order, not plan index: a kernel emitted alone (jit.h's one
   * program per kernel) has the same source wherever it sits in a plan, so layers share it. */
  for (int i = 0, ns = 0; i < plan->n_kernels; ++i)
    if (use[i]) add_instance(&b, &infos[i], &ps[i], plan->kernels[i].templ, ns++);
  if (!buf_ok(&b)) {
    buf_free(&b);
    return emit_oom(err, n);
  }
  out->source_len = b.len;
  out->source = buf_take(&b);
  return 0;
}

int emit_layer_select(const hot_layer_plan *plan, unsigned mask, hot_emitted *out, char *err,
                      size_t n) {
  if (!plan || !out || !plan->spec) return diag_errf(err, n, "emit_layer: NULL argument");
  memset(out, 0, sizeof *out);
  templ_info *infos = calloc(HOT_MAX_KERNELS, sizeof *infos);
  params *ps = calloc(HOT_MAX_KERNELS, sizeof *ps);
  int use[HOT_MAX_KERNELS] = {0};
  int rc = (!infos || !ps) ? emit_oom(err, n)
                           : collect_kernels(plan, mask, infos, ps, use, out, err, n);
  if (rc == 0) rc = assemble_source(plan, infos, ps, use, out, err, n);
  for (int i = 0; ps && i < HOT_MAX_KERNELS; ++i) params_free(&ps[i]);
  free(infos);
  free(ps);
  if (rc) memset(out, 0, sizeof *out);
  return rc;
}

int emit_entry_params(const char *templ, char **out, char *err, size_t n) {
  if (!templ || !out) return diag_errf(err, n, "emit_entry_params: NULL argument");
  *out = NULL;
  const hot_embedded_file *f = embed_find(templ);
  if (!f) return diag_errf(err, n, "%s: template not found", templ);
  const char *p = strstr(f->data, "HOT_KNAME(");
  while (p && p > f->data && is_ident(p[-1])) p = strstr(p + 1, "HOT_KNAME(");
  if (!p) return diag_errf(err, n, "%s: no entry point HOT_KNAME(...)", templ);
  p += strlen("HOT_KNAME(");
  hot_buf b = {0};
  int first = 1;
  while (*p && *p != ')') {
    const char *end = p;
    while (*end && *end != ',' && *end != ')') ++end;
    const char *e = end; /* the last identifier of the piece is the parameter's name */
    while (e > p && !is_ident(e[-1])) --e;
    const char *s0 = e;
    while (s0 > p && is_ident(s0[-1])) --s0;
    buf_printf(&b, "%s%.*s", first ? "" : ",", (int)(e - s0), s0);
    first = 0;
    p = *end == ',' ? end + 1 : end;
  }
  if (*p != ')') {
    buf_free(&b);
    return diag_errf(err, n, "%s: unterminated entry point parameter list", templ);
  }
  *out = buf_take(&b);
  return *out ? 0 : diag_errf(err, n, "out of memory");
}

void emit_free(hot_emitted *out) {
  if (!out) return;
  free(out->source);
  out->source = NULL;
  out->source_len = 0;
}

int emit_template(const char *templ, const char *const *names, const char *const *values, int n,
                  char **source, char *err, size_t errlen) {
  return emit_template_text(templ, NULL, names, values, n, source, err, errlen);
}

int emit_template_text(const char *templ, const char *text, const char *const *names,
                       const char *const *values, int n, char **source, char *err, size_t errlen) {
  if (!templ || !source || (n > 0 && (!names || !values)))
    return diag_errf(err, errlen, "emit_template: NULL argument");
  *source = NULL;
  if (n > MAX_PARAMS) return diag_errf(err, errlen, "emit_template: too many parameters");
  hot_embedded_file given = {templ, text, text ? strlen(text) : 0};
  templ_info *t = calloc(1, sizeof *t);
  params *p = calloc(1, sizeof *p);
  int rc = (!t || !p) ? diag_errf(err, errlen, "out of memory")
                      : parse_template(templ, text ? &given : NULL, t, err, errlen);
  if (rc == 0) {
    for (int i = 0; i < n; ++i) param_set(p, names[i], "%s", values[i] ? values[i] : "");
    if (p->failed)
      rc = diag_errf(err, errlen, "emit_template: a parameter name longer than %d characters, or "
                    "out of memory", PARAM_LEN - 1);
    /* HOT_KNAME first: it names the instance in the emitted comment. */
    for (int i = 1; i < p->n && rc == 0; ++i)
      if (strcmp(p->name[i], "HOT_KNAME") == 0) {
        char nm[PARAM_LEN], *val = p->value[0];
        memcpy(nm, p->name[0], sizeof nm);
        memcpy(p->name[0], p->name[i], sizeof nm);
        p->value[0] = p->value[i];
        memcpy(p->name[i], nm, sizeof nm);
        p->value[i] = val;
      }
    if (rc == 0) rc = check_params(t, p, templ, err, errlen);
  }
  if (rc == 0) {
    hot_buf b = {0};
    buf_printf(&b, "// generated from %s by hot-gen %s; do not edit\n#define HOT_GENERATED 1\n",
               templ, HOT_VERSION);
    char done[MAX_HOISTED][128];
    int n_done = 0;
    add_includes(&b, t, done, &n_done); /* one template: at most MAX_INCLUDES files */
    add_instance(&b, t, p, templ, 0);
    *source = buf_take(&b);
    if (!*source) rc = diag_errf(err, errlen, "out of memory");
  }
  if (p) params_free(p);
  free(t);
  free(p);
  return rc;
}

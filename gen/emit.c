/* emit.c — templates + plan -> CUDA source (see emit.h for the template contract). */
#include "emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "diag.h"
#include "embed.h"

#ifndef HOT_VERSION
#define HOT_VERSION "0"
#endif

#define MAX_PARAMS 24
#define MAX_DEFINES 64
#define MAX_INCLUDES 8
#define PARAM_LEN 48

typedef struct {
  int n;
  char name[MAX_PARAMS][PARAM_LEN];
  char value[MAX_PARAMS][1024];
} params;

static void param_set(params *p, const char *name, const char *fmt, ...) {
  if (p->n >= MAX_PARAMS) return;
  snprintf(p->name[p->n], PARAM_LEN, "%s", name);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->value[p->n], sizeof p->value[0], fmt, ap);
  va_end(ap);
  p->n++;
}

/* The template parameters of one planned kernel. */
static void kernel_params(const hot_layer_plan *pl, const hot_kernel_plan *k, params *p) {
  p->n = 0;
  param_set(p, "HOT_KNAME", "%s", k->name);
  int dt = (int)pl->spec->dtype;
  switch (k->role) {
  case HOT_K_HQ_G:
  case HOT_K_HQ_W:
    param_set(p, "HOT_OPERAND", "%d", k->role == HOT_K_HQ_W);
    param_set(p, "HOT_DTYPE", "%d", dt);
    param_set(p, "HOT_B", "%d", pl->hq.block);
    param_set(p, "HOT_BITS", "%d", k->role == HOT_K_HQ_W ? pl->hq.w.bits : pl->hq.g.bits);
    param_set(p, "HOT_CODES", "%d", (int)pl->hq.codes);
    break;
  case HOT_K_ABC_X:
  case HOT_K_HLA_G: {
    param_set(p, "HOT_MODE", "%d", k->role == HOT_K_HLA_G); /* 0: x^ (RTN), 1: g^ (SR) */
    param_set(p, "HOT_DTYPE", "%d", dt);
    param_set(p, "HOT_P", "%d", pl->hla.block);
    param_set(p, "HOT_R", "%d", pl->hla.rank);
    param_set(p, "HOT_BITS", "%d", k->role == HOT_K_HLA_G ? pl->hla.g.bits : pl->hla.x.bits);
    char rows[1024 * 6];
    size_t o = 0;
    for (int i = 0; i < pl->hla.rank && o + 8 < sizeof rows; ++i)
      o += (size_t)snprintf(rows + o, sizeof rows - o, "%s%d", i ? "," : "", pl->hla.rows[i]);
    param_set(p, "HOT_ROWS", "%s", rows);
    break;
  }
  case HOT_K_GEMM_GX:
  case HOT_K_GEMM_GW: {
    const hot_gemm_plan *g = k->role == HOT_K_GEMM_GX ? &pl->hq.gemm : &pl->hla.gemm;
    param_set(p, "HOT_CODES", "%d", (int)g->codes);
    param_set(p, "HOT_TILE_M", "%d", g->tile_m);
    param_set(p, "HOT_TILE_N", "%d", g->tile_n);
    param_set(p, "HOT_TILE_K", "%d", g->tile_k);
    param_set(p, "HOT_WARPS_M", "%d", g->warps_m);
    param_set(p, "HOT_WARPS_N", "%d", g->warps_n);
    param_set(p, "HOT_STAGES", "%d", g->stages);
    break;
  }
  case HOT_K_BIAS:
    param_set(p, "HOT_DTYPE", "%d", dt);
    break;
  case HOT_K_LQS:
    param_set(p, "HOT_DTYPE", "%d", dt);
    param_set(p, "HOT_BITS", "%d", pl->hq.g.bits);
    break;
  case HOT_K_SAWB_W:
  case HOT_K_SAWB_X:
    param_set(p, "HOT_BITS", "%d", k->role == HOT_K_SAWB_W ? pl->hq.w.bits : pl->hla.x.bits);
    break;
  default:
    break;
  }
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
} templ_info;

static int is_ident(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Reads the identifier at s into dst (at most n-1 chars); returns its length. */
static size_t read_ident(const char *s, char *dst, size_t n) {
  size_t i = 0;
  while (is_ident(s[i]) && i + 1 < n) {
    dst[i] = s[i];
    ++i;
  }
  dst[i] = '\0';
  return i;
}

/* Parses template `path` (its text: `file`, or the embedded file when NULL). */
static int parse_template(const char *path, const hot_embedded_file *file, templ_info *t,
                          char *err, size_t n) {
  memset(t, 0, sizeof *t);
  t->file = file ? file : embed_find(path);
  if (!t->file) return hot_errf(err, n, "%s: template not found", path);
  const char *s = t->file->data;
  int line = 1, seen_params = 0;
  for (const char *l = s; *l; ++line) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    const char *m = l;
    while ((m = strstr(m, "@hot-")) && m < l + len) {
      if (strncmp(m, "@hot-params:", 12) != 0) {
        char bad[32];
        read_ident(m + 5, bad, sizeof bad);
        return hot_errf(err, n, "%s:%d: unknown marker @hot-%s", path, line, bad);
      }
      if (seen_params) return hot_errf(err, n, "%s:%d: second @hot-params marker", path, line);
      seen_params = 1;
      const char *q = m + 12;
      while (q < l + len) {
        while (q < l + len && !is_ident(*q)) {
          if (*q == '*') break;
          ++q;
        }
        if (q >= l + len || *q == '*') break;
        if (t->n_params >= MAX_PARAMS) return hot_errf(err, n, "%s: too many parameters", path);
        q += read_ident(q, t->params[t->n_params++], PARAM_LEN);
      }
      m += 12;
    }
    const char *d = l;
    while (d < l + len && (*d == ' ' || *d == '\t')) ++d;
    if (*d == '#') {
      ++d;
      while (*d == ' ' || *d == '\t') ++d;
      if (strncmp(d, "define", 6) == 0 && (d[6] == ' ' || d[6] == '\t')) {
        d += 6;
        while (*d == ' ' || *d == '\t') ++d;
        char name[PARAM_LEN];
        read_ident(d, name, sizeof name);
        int dup = 0;
        for (int i = 0; i < t->n_defines; ++i) dup |= strcmp(t->defines[i], name) == 0;
        if (!dup && name[0] && t->n_defines < MAX_DEFINES)
          snprintf(t->defines[t->n_defines++], PARAM_LEN, "%s", name);
      } else if (strncmp(d, "include", 7) == 0) {
        const char *q = strchr(d, '"');
        const char *r = q ? strchr(q + 1, '"') : NULL;
        if (!q || !r || r > l + len || (size_t)(r - q - 1) >= 100)
          return hot_errf(err, n, "%s:%d: only #include \"file.cuh\" of templates/ is allowed", path,
                      line);
        if (t->n_includes >= MAX_INCLUDES) return hot_errf(err, n, "%s: too many includes", path);
        snprintf(t->includes[t->n_includes++], 128, "templates/%.*s", (int)(r - q - 1), q + 1);
      }
    }
    if (!e) break;
    l = e + 1;
  }
  if (!seen_params) return hot_errf(err, n, "%s: no @hot-params marker", path);
  for (int i = 0; i < t->n_includes; ++i)
    if (!embed_find(t->includes[i]))
      return hot_errf(err, n, "%s: included file %s not found", path, t->includes[i]);
  return 0;
}

/* Every declared parameter is provided, and nothing else. */
static int check_params(const templ_info *t, const params *p, const char *path, char *err,
                        size_t n) {
  for (int i = 0; i < t->n_params; ++i) {
    int found = 0;
    for (int j = 0; j < p->n; ++j) found |= strcmp(t->params[i], p->name[j]) == 0;
    if (!found) return hot_errf(err, n, "%s: parameter %s is not filled by the plan", path, t->params[i]);
  }
  for (int j = 0; j < p->n; ++j) {
    int found = 0;
    for (int i = 0; i < t->n_params; ++i) found |= strcmp(t->params[i], p->name[j]) == 0;
    if (!found) return hot_errf(err, n, "%s: unknown parameter %s (not in @hot-params)", path, p->name[j]);
  }
  return 0;
}

/* Appends the template body: #include lines become blank lines (the files are hoisted). */
static void add_body(hot_buf *b, const templ_info *t, const char *path) {
  buf_printf(b, "#line 1 \"%s\"\n", path);
  const char *s = t->file->data;
  for (const char *l = s; *l;) {
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
    if (!is_inc) buf_add(b, l, len);
    buf_add(b, "\n", 1);
    if (!e) break;
    l = e + 1;
  }
}

/* Adds the files templates include, each once (hoisted above every kernel). */
static void add_includes(hot_buf *b, const templ_info *t, char done[][128], int *n_done) {
  for (int i = 0; i < t->n_includes; ++i) {
    int seen = 0;
    for (int j = 0; j < *n_done; ++j) seen |= strcmp(done[j], t->includes[i]) == 0;
    if (seen || *n_done >= MAX_INCLUDES * 2) continue;
    snprintf(done[(*n_done)++], 128, "%s", t->includes[i]);
    const hot_embedded_file *f = embed_find(t->includes[i]);
    buf_printf(b, "#line 1 \"%s\"\n", t->includes[i]);
    buf_add(b, f->data, f->size);
    if (f->size && f->data[f->size - 1] != '\n') buf_add(b, "\n", 1);
  }
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

int emit_layer(const hot_layer_plan *plan, hot_emitted *out, char *err, size_t n) {
  return emit_layer_select(plan, ~0u, out, err, n);
}

int emit_layer_select(const hot_layer_plan *plan, unsigned mask, hot_emitted *out, char *err,
                      size_t n) {
  if (!plan || !out || !plan->spec) return hot_errf(err, n, "emit_layer: NULL argument");
  memset(out, 0, sizeof *out);
  templ_info *infos = calloc(HOT_MAX_KERNELS, sizeof *infos);
  params *ps = calloc(HOT_MAX_KERNELS, sizeof *ps);
  if (!infos || !ps) {
    free(infos);
    free(ps);
    return hot_errf(err, n, "out of memory");
  }
  int use[HOT_MAX_KERNELS] = {0}, rc = 0;
  for (int i = 0; i < plan->n_kernels && rc == 0; ++i) {
    const hot_kernel_plan *k = &plan->kernels[i];
    if (!(mask & (1u << i))) continue;
    if (!embed_find(k->templ)) { /* not written yet: reported, not emitted */
      out->missing[out->n_missing++] = k->role;
      continue;
    }
    int dup = 0;
    for (int j = 0; j < out->n_kernels; ++j) dup |= strcmp(out->kernels[j], k->name) == 0;
    if (dup) continue;
    if (parse_template(k->templ, NULL, &infos[i], err, n)) {
      rc = -1;
      break;
    }
    kernel_params(plan, k, &ps[i]);
    if (check_params(&infos[i], &ps[i], k->templ, err, n)) {
      rc = -1;
      break;
    }
    use[i] = 1;
    out->kernels[out->n_kernels] = k->name;
    out->templates[out->n_kernels++] = k->templ;
  }
  if (rc == 0) {
    hot_buf b = {0};
    /* The text depends only on the kernels (not on the layer or spec name), so layers with the
     * same kernels share one cached binary. */
    buf_puts(&b, "// generated from");
    for (int i = 0; i < out->n_kernels; ++i) {
      int seen = 0;
      for (int j = 0; j < i; ++j) seen |= strcmp(out->templates[j], out->templates[i]) == 0;
      if (!seen) buf_printf(&b, "%s %s", i ? "," : "", out->templates[i]);
    }
    buf_printf(&b, " by hot-gen %s for %s; do not edit\n", HOT_VERSION,
               plan_arch_caps(plan->arch)->name);
    buf_puts(&b, "#define HOT_GENERATED 1\n");
    char done[MAX_INCLUDES * 2][128];
    int n_done = 0;
    for (int i = 0; i < plan->n_kernels; ++i)
      if (use[i]) add_includes(&b, &infos[i], done, &n_done);
    for (int i = 0; i < plan->n_kernels; ++i)
      if (use[i]) add_instance(&b, &infos[i], &ps[i], plan->kernels[i].templ, i);
    if (!buf_ok(&b)) {
      buf_free(&b);
      rc = hot_errf(err, n, "out of memory");
    } else {
      out->source_len = b.len;
      out->source = buf_take(&b);
    }
  }
  free(infos);
  free(ps);
  if (rc) memset(out, 0, sizeof *out);
  return rc;
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
    return hot_errf(err, errlen, "emit_template: NULL argument");
  *source = NULL;
  if (n > MAX_PARAMS) return hot_errf(err, errlen, "emit_template: too many parameters");
  hot_embedded_file given = {templ, text, text ? strlen(text) : 0};
  templ_info *t = calloc(1, sizeof *t);
  params *p = calloc(1, sizeof *p);
  int rc = (!t || !p) ? hot_errf(err, errlen, "out of memory")
                      : parse_template(templ, text ? &given : NULL, t, err, errlen);
  if (rc == 0) {
    for (int i = 0; i < n; ++i) param_set(p, names[i], "%s", values[i]);
    /* HOT_KNAME first: it names the instance in the emitted comment. */
    for (int i = 1; i < p->n; ++i)
      if (strcmp(p->name[i], "HOT_KNAME") == 0) {
        char nm[PARAM_LEN], val[1024];
        memcpy(nm, p->name[0], sizeof nm);
        memcpy(val, p->value[0], sizeof val);
        memcpy(p->name[0], p->name[i], sizeof nm);
        memcpy(p->value[0], p->value[i], sizeof val);
        memcpy(p->name[i], nm, sizeof nm);
        memcpy(p->value[i], val, sizeof val);
      }
    rc = check_params(t, p, templ, err, errlen);
  }
  if (rc == 0) {
    hot_buf b = {0};
    buf_printf(&b, "// generated from %s by hot-gen %s; do not edit\n#define HOT_GENERATED 1\n",
               templ, HOT_VERSION);
    char done[MAX_INCLUDES * 2][128];
    int n_done = 0;
    add_includes(&b, t, done, &n_done);
    add_instance(&b, t, p, templ, 0);
    *source = buf_take(&b);
    if (!*source) rc = hot_errf(err, errlen, "out of memory");
  }
  free(t);
  free(p);
  return rc;
}

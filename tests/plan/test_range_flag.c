/* test_range_flag.c — every kernel whose output the CUDA backend watches raises its overflow flag
 * (hot_range_flag).
 *
 * The CUDA backend watches the module word hot_range_flag of each planned kernel whose descriptor
 * names an output (kd->output(role) != NULL, runtime/cuda_backend.c range_setup); a template that
 * never raises it reports no overflow at all. For every descriptor of the registry (kd_all) and
 * every role with an output, each template the family can plan (its templ and, for a family with
 * one template per GEMM path, templ_for over every row of the GEMM-path table) is scanned: every
 * __global__ entry must reach a raise of the flag (HOT_RANGE_CHECK, or a write of hot_range_flag)
 * through the functions defined in the template and the project headers it includes (not
 * hot_math.cuh, which defines the flag and its macro). Comments and preprocessor lines do not
 * count. The selftest feeds the scan samples it must accept and reject. */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_desc.h"
#include "plan.h"

#define MAX_FN 512
#define MAX_TEXT (4 << 20)

typedef struct {
  char name[96];
  const char *body, *end; /* [body, end) inside the scanned text */
  int global, raises;
} fn_def;

typedef struct {
  char *text; /* every scanned file, comments and directives blanked, concatenated */
  size_t len;
  fn_def fn[MAX_FN];
  int n_fn;
  char seen[16][96]; /* the headers already included */
  int n_seen;
} scan;

/* Blanks comments, and preprocessor lines with their continuations, keeping string and character
 * literals; appends the result to sc->text and returns the start of the appended part. Each
 * `#include "x"` it blanks is written into incs (up to 8 names of 96 bytes); *n_inc their count. */
static void strip_append(scan *sc, const char *src, char incs[8][96], int *n_inc) {
  const size_t n = strlen(src);
  ck_assert_msg(sc->len + n + 2 < MAX_TEXT, "scanned text too large");
  char *o = sc->text + sc->len;
  int line_start = 1;
  for (size_t i = 0; i < n;) {
    if (line_start) {
      size_t j = i;
      while (j < n && (src[j] == ' ' || src[j] == '\t')) ++j;
      if (j < n && src[j] == '#') { /* a directive: blank to its last continued line */
        const char *inc = strstr(src + j, "include");
        const char *eol = strchr(src + j, '\n');
        if (inc && (!eol || inc < eol) && *n_inc < 8) {
          const char *q = strchr(inc, '"');
          const char *q2 = q ? strchr(q + 1, '"') : NULL;
          if (q && q2 && (!eol || q2 < eol) && q2 - q - 1 < 96) {
            memcpy(incs[*n_inc], q + 1, (size_t)(q2 - q - 1));
            incs[(*n_inc)++][q2 - q - 1] = '\0';
          }
        }
        while (j < n && !(src[j] == '\n' && src[j - 1] != '\\')) *o++ = ' ', ++j;
        i = j;
        continue;
      }
    }
    line_start = 0;
    if (src[i] == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n') *o++ = ' ', ++i;
    } else if (src[i] == '/' && i + 1 < n && src[i + 1] == '*') {
      *o++ = ' ', *o++ = ' ', i += 2;
      while (i < n && !(src[i] == '*' && i + 1 < n && src[i + 1] == '/'))
        *o++ = src[i] == '\n' ? '\n' : ' ', ++i;
      if (i < n) *o++ = ' ', *o++ = ' ', i += 2;
    } else if (src[i] == '"' || src[i] == '\'') {
      const char q = src[i];
      *o++ = src[i++];
      while (i < n && src[i] != q) {
        if (src[i] == '\\' && i + 1 < n) *o++ = src[i++];
        *o++ = src[i++];
      }
      if (i < n) *o++ = src[i++];
    } else {
      if (src[i] == '\n') line_start = 1;
      *o++ = src[i++];
    }
  }
  *o++ = '\n';
  *o = '\0';
  sc->len = (size_t)(o - sc->text);
}

static int is_id(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The end of the bracketed group that starts at p (*p is open), or NULL. */
static const char *match(const char *p, const char *end, char open, char close) {
  int d = 0;
  for (; p < end; ++p) {
    if (*p == '"' || *p == '\'') { /* skip literals */
      const char q = *p++;
      while (p < end && *p != q) p += *p == '\\' ? 2 : 1;
      continue;
    }
    if (*p == open) ++d;
    else if (*p == close && --d == 0) return p;
  }
  return NULL;
}

/* The function definitions of the whole text: a '{' outside any function whose header (the text
 * since the last ';', '{' or '}') holds a parameter list starts one; other braces (extern "C",
 * namespaces, structs, initialisers) are looked through. */
static void find_functions(scan *sc) {
  const char *t = sc->text, *end = sc->text + sc->len, *head = t;
  for (const char *p = t; p < end; ++p) {
    if (*p == '"' || *p == '\'') {
      const char q = *p++;
      while (p < end && *p != q) p += *p == '\\' ? 2 : 1;
      continue;
    }
    if (*p == ';' || *p == '}') {
      head = p + 1;
      continue;
    }
    if (*p != '{') continue;
    const char *rp = NULL;
    for (const char *q = head; q < p; ++q)
      if (*q == ')') rp = q;
    if (!rp) { /* looked through */
      head = p + 1;
      continue;
    }
    int d = 0;
    const char *lp = rp;
    for (; lp >= head; --lp) { /* the '(' of that last ')' */
      if (*lp == ')') ++d;
      else if (*lp == '(' && --d == 0) break;
    }
    const char *ne = lp;
    while (ne > head && isspace((unsigned char)ne[-1])) --ne;
    const char *nb = ne;
    while (nb > head && is_id(nb[-1])) --nb;
    const char *close = match(p, end, '{', '}');
    ck_assert_msg(close != NULL, "unbalanced braces in the scanned text");
    if (lp >= head && nb < ne && ne - nb < 96) {
      ck_assert_int_lt(sc->n_fn, MAX_FN);
      fn_def *f = &sc->fn[sc->n_fn++];
      memcpy(f->name, nb, (size_t)(ne - nb));
      f->name[ne - nb] = '\0';
      f->body = p;
      f->end = close + 1;
      f->global = 0;
      for (const char *q = head; q + 10 <= nb; ++q)
        if (!strncmp(q, "__global__", 10) && (q == head || !is_id(q[-1])) && !is_id(q[10]))
          f->global = 1;
      f->raises = 0;
    }
    p = close;
    head = close + 1;
  }
}

/* 1 when [b, e) holds identifier id (as a whole word), followed by '(' when call is set. */
static int has_word(const char *b, const char *e, const char *id, int call) {
  const size_t n = strlen(id);
  for (const char *q = b; q + n <= e; ++q) {
    if (strncmp(q, id, n) || (q > b && is_id(q[-1])) || (q + n < e && is_id(q[n]))) continue;
    if (!call) return 1;
    const char *r = q + n;
    while (r < e && isspace((unsigned char)*r)) ++r;
    if (r < e && *r == '(') return 1;
  }
  return 0;
}

/* Marks every function that raises the flag, directly or through another (a fixpoint). */
static void mark_raisers(scan *sc) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < sc->n_fn; ++i) {
      fn_def *f = &sc->fn[i];
      if (f->raises) continue;
      int r = has_word(f->body, f->end, "HOT_RANGE_CHECK", 1) ||
              has_word(f->body, f->end, "hot_range_flag", 0);
      for (int j = 0; !r && j < sc->n_fn; ++j)
        if (j != i && sc->fn[j].raises) r = has_word(f->body, f->end, sc->fn[j].name, 1);
      if (r) f->raises = 1, changed = 1;
    }
  }
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(MAX_TEXT);
  ck_assert_ptr_nonnull(buf);
  const size_t n = fread(buf, 1, MAX_TEXT - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* Appends src and, recursively, the project headers it includes (dir/name when it exists; never
 * hot_math.cuh). */
static void add_source(scan *sc, const char *dir, const char *src) {
  char incs[8][96];
  int n_inc = 0;
  strip_append(sc, src, incs, &n_inc);
  for (int i = 0; i < n_inc; ++i) {
    if (!strcmp(incs[i], "hot_math.cuh") || !dir) continue;
    int dup = 0;
    for (int j = 0; j < sc->n_seen; ++j) dup |= !strcmp(sc->seen[j], incs[i]);
    if (dup || sc->n_seen == 16) continue;
    strcpy(sc->seen[sc->n_seen++], incs[i]);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, incs[i]);
    char *h = slurp(path);
    if (!h) continue; /* a system or generated header */
    add_source(sc, dir, h);
    free(h);
  }
}

/* Scans template source src (its headers under dir; NULL: none). Returns the number of __global__
 * entries that raise the flag, or -1 when some entry does not (or there is none); the first such
 * entry's name into bad. */
static int scan_template(const char *dir, const char *src, char bad[96]) {
  scan *sc = calloc(1, sizeof *sc);
  ck_assert_ptr_nonnull(sc);
  sc->text = malloc(MAX_TEXT);
  ck_assert_ptr_nonnull(sc->text);
  add_source(sc, dir, src);
  find_functions(sc);
  mark_raisers(sc);
  int ok = 0, entries = 0;
  strcpy(bad, "(no __global__ entry)");
  for (int i = 0; i < sc->n_fn; ++i) {
    if (!sc->fn[i].global) continue;
    ++entries;
    if (sc->fn[i].raises) {
      ++ok;
    } else if (ok >= 0) {
      strcpy(bad, sc->fn[i].name);
      ok = -1;
    }
  }
  free(sc->text);
  free(sc);
  return entries ? ok : -1;
}

/* The scan accepts and rejects what it must. */
START_TEST(selftest) {
  static const struct {
    const char *src;
    int want; /* entries that raise, or -1 */
  } cs[] = {
      /* direct */
      {"extern \"C\" __global__ void __launch_bounds__(64, 1) k(float *c) {\n"
       "  const float v = c[0] * 2.0f;\n  HOT_RANGE_CHECK(v);\n  c[0] = v;\n}\n", 1},
      /* through two helpers */
      {"static __device__ void inner(float v) { if (v > 1.0f) hot_range_flag = 1u; }\n"
       "static __device__ void outer(float v) { inner(v); }\n"
       "extern \"C\" __global__ void k(float *c) { outer(c[0]); }\n", 1},
      /* the helper exists but the entry never calls it */
      {"static __device__ void check(float v) { HOT_RANGE_CHECK(v); }\n"
       "extern \"C\" __global__ void k(float *c) { c[0] = 1.0f; }\n", -1},
      /* only in a comment, or only in a directive */
      {"extern \"C\" __global__ void k(float *c) {\n  c[0] = 1.0f; /* HOT_RANGE_CHECK(c[0]); */\n"
       "  // HOT_RANGE_CHECK(c[0]);\n#define X HOT_RANGE_CHECK(c[0])\n}\n", -1},
      /* a name that only starts like the helper */
      {"static __device__ void check(float v) { HOT_RANGE_CHECK(v); }\n"
       "static __device__ void check2(float v) { (void)v; }\n"
       "extern \"C\" { __device__ unsigned w; }\n"
       "extern \"C\" __global__ void k(float *c) { check2(c[0]); }\n", -1},
      /* two entries, one without */
      {"extern \"C\" __global__ void a(float *c) { HOT_RANGE_CHECK(c[0]); }\n"
       "extern \"C\" __global__ void b(float *c) { c[0] = 0.0f; }\n", -1},
      /* no entry at all */
      {"static __device__ void check(float v) { HOT_RANGE_CHECK(v); }\n", -1},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
    char bad[96];
    ck_assert_msg(scan_template(NULL, cs[i].src, bad) == cs[i].want, "sample %zu: %d, want %d", i,
                  scan_template(NULL, cs[i].src, bad), cs[i].want);
  }
}
END_TEST

/* Every template a family with an output can plan raises the flag from each entry. */
START_TEST(output_templates_raise_flag) {
  const char *root = getenv("HOT_SOURCE_DIR");
  ck_assert_msg(root != NULL, "HOT_SOURCE_DIR not set (ctest sets it)");
  int n = 0, checked = 0;
  const hot_kernel_desc *const *all = kd_all(&n);
  hot_layer_plan *p = calloc(1, sizeof *p);
  ck_assert_ptr_nonnull(p);
  for (int i = 0; i < n; ++i) {
    const hot_kernel_desc *d = all[i];
    for (int r = 0; r < HOT_K_ROLE_COUNT; ++r) {
      if (!(d->roles & (1u << r)) || !d->output || !d->output((hot_kernel_role)r)) continue;
      const char *tpl[HOT_GEMM_PATH_COUNT + 1];
      int nt = 0;
      if (d->templ) tpl[nt++] = d->templ;
      for (int g = 0; d->templ_for && g < HOT_GEMM_PATH_COUNT; ++g) {
        p->hq.gemm.path = p->hla.gemm.path = (hot_gemm_path)g;
        const char *t = d->templ_for(p, (hot_kernel_role)r);
        int dup = !t;
        for (int k = 0; !dup && k < nt; ++k) dup = !strcmp(tpl[k], t);
        if (!dup) tpl[nt++] = t;
      }
      ck_assert_msg(nt > 0, "%s: role %s has an output but no template", d->family,
                    plan_role_name((hot_kernel_role)r));
      for (int k = 0; k < nt; ++k) {
        char path[1024], dir[1024], bad[96];
        snprintf(path, sizeof path, "%s/%s", root, tpl[k]);
        snprintf(dir, sizeof dir, "%s/templates", root);
        char *src = slurp(path);
        ck_assert_msg(src != NULL, "%s: cannot read %s", d->family, path);
        const int got = scan_template(dir, src, bad);
        free(src);
        ck_assert_msg(got > 0, "%s (role %s, output %s): %s: entry %s never raises hot_range_flag "
                      "(HOT_RANGE_CHECK of its stored values)", d->family,
                      plan_role_name((hot_kernel_role)r), d->output((hot_kernel_role)r), tpl[k],
                      bad);
        printf("range flag: %-10s %-8s %-4s %s (%d entr%s)\n", d->family,
               plan_role_name((hot_kernel_role)r), d->output((hot_kernel_role)r), tpl[k], got,
               got == 1 ? "y" : "ies");
        ++checked;
      }
    }
  }
  free(p);
  ck_assert_int_gt(checked, 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("range_flag");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, selftest);
  tcase_add_test(tc, output_templates_raise_flag);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

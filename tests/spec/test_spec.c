/* test_spec.c — the spec language and its sandboxed loader (gen/spec.c, lua/hot/).
 *
 * - every shipped spec (specs/ *.lua) loads and plans for each of its archs;
 * - defaults of every field per recipe (the loaded hot_layer_spec equals plan_spec_defaults) and
 *   every field's override lands in the C structs;
 * - every bad spec (tests/specs/bad/ *.lua) fails with the message(s) its leading
 *   `-- expect: <substring>` lines name (`-- expect-lines: N` also fixes the number of lines), either
 *   when loading or when planning; planner messages are formatted by plan_message() below as
 *   `<file>:<line>: layer '<name>': <plan message>`, the format hot-gen uses too. Bad specs are loaded
 *   by basename after a chdir into their folder, so the printed path is the basename;
 * - the limits are bounded in time; `spec_help_text` mentions every field of lua/hot/schema.lua;
 * - a validated model is final (captured tables, the read-only views, pairs, replaced library
 *   functions, forged models); names and paths (spec_name_valid, spec_path_join) and hot-gen
 *   (HOT_GEN) never writing outside --emit DIR, planning every target arch, refusing --dump-cubin
 *   without --compile; every allocation failure of the loader (spec_test_fail_allocs_after) is
 *   SPEC_ERR_NOMEM, and HOT_ERR_NOMEM through hot_layer_from_spec.
 *
 * Modes (argv[1]):
 *   (none)          the Check suite `spec` (CTest: test_spec);
 *   --known-issues  the Check suite of known loader/DSL problems (CTest: test_spec_known_issues):
 *                   the sandbox escapes of tests/specs/escape/ (each run with a 20 s timeout) and
 *                   the `-- known-issue:` bad specs, checked with their full file:line expectation.
 *                   It fails until gen/spec.c and lua/hot/init.lua are fixed;
 *   --valgrind      runs `--bad-specs` under valgrind (CTest: test_spec_valgrind); prints
 *                   "SKIP: valgrind not installed" and exits 77 (skipped) without valgrind. We chose
 *                   valgrind over an ASan build so the leak/memory check runs in every normal
 *                   build; a -DHOT_SANITIZE=ON build runs the whole suite under ASan as well;
 *   --bad-specs     loads every bad spec once, in-process and without Check (what valgrind runs).
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "env.h"
#include "hot.h"
#include "plan.h"
#include "spec.h"
#include "fields.h"

#define MAX_FILES 128
#define MAX_EXPECT 8

/* ---- helpers ------------------------------------------------------------------------------ */

static const char *src_dir(void) {
  const char *d = getenv("HOT_SOURCE_DIR");
  return d && *d ? d : ".";
}

/* snprintf without the truncation warnings: every text here is short; truncation only shortens
 * a message. */
static void fmt(char *buf, size_t n, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, n, f, ap);
  va_end(ap);
}

static char *path_join(char *buf, size_t n, const char *a, const char *b) {
  fmt(buf, n, "%s/%s", a, b);
  return buf;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (len + 1 == cap) {
      char *g = realloc(buf, cap * 2);
      if (!g) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = g;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf) buf[len] = '\0';
  return buf;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names of the files in dir ending with suffix; returns the count. */
static int list_files(const char *dir, const char *suffix, char names[][128], int max) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  char *tmp[MAX_FILES];
  int n = 0;
  struct dirent *e;
  size_t sl = strlen(suffix);
  while ((e = readdir(d)) && n < max && n < MAX_FILES) {
    size_t l = strlen(e->d_name);
    if (l > sl && l < 128 && strcmp(e->d_name + l - sl, suffix) == 0) tmp[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_str);
  for (int i = 0; i < n; ++i) {
    fmt(names[i], 128, "%s", tmp[i]);
    free(tmp[i]);
  }
  return n;
}

/* The planner message of one layer, in the format hot-gen prints too:
 * "<file>:<line>: layer '<name>': <plan message>". The arch is not added: the planner names it
 * where it matters (the shared-memory message does), so one mistake reads the same for every arch
 * and plan_all prints it once. */
static void plan_message(char *out, size_t n, const hot_model *m, const hot_layer_spec *s,
                         const char *plan_err) {
  fmt(out, n, "%s:%d: layer '%s': %s", m->file, s->line, s->name, plan_err);
}

static int64_t layer_tokens(const hot_model *m, const hot_layer_spec *s) {
  return s->tokens ? s->tokens : m->tokens;
}

/* Plans every layer for every arch of m; appends each failure (deduplicated) to d. Returns the
 * number of failures. */
static int plan_all(const hot_model *m, hot_diag *d) {
  static hot_layer_plan p;
  int fails = 0;
  for (int i = 0; i < m->n_layers; ++i)
    for (int a = 0; a < m->n_archs; ++a) {
      char err[256] = "", line[512];
      if (plan_layer(&m->layers[i], m->batch, layer_tokens(m, &m->layers[i]), m->recipe,
                     m->archs[a], i, &p, err, sizeof err) == 0)
        continue;
      ++fails;
      plan_message(line, sizeof line, m, &m->layers[i], err);
      int dup = 0;
      for (int k = 0; k < d->count; ++k) dup |= strcmp(d->lines[k], line) == 0;
      if (!dup) diag_add(d, "%s", line);
    }
  return fails;
}

typedef struct {
  int n;
  char text[MAX_EXPECT][256];
  int lines;            /* expect-lines, or -1 */
  char issue[256];      /* known-issue text, or "" */
} expectation;

static void parse_expect(const char *text, expectation *e) {
  memset(e, 0, sizeof *e);
  e->lines = -1;
  const char *p = text;
  while (p && strncmp(p, "--", 2) == 0) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char line[300];
    fmt(line, sizeof line, "%.*s", (int)(len < 299 ? len : 299), p);
    if (strncmp(line, "-- expect: ", 11) == 0 && e->n < MAX_EXPECT)
      fmt(e->text[e->n++], sizeof e->text[0], "%s", line + 11);
    else if (strncmp(line, "-- expect-lines: ", 17) == 0)
      e->lines = atoi(line + 17);
    else if (strncmp(line, "-- known-issue: ", 16) == 0)
      fmt(e->issue, sizeof e->issue, "%s", line + 16);
    p = eol ? eol + 1 : NULL;
  }
}

/* "file.lua:12: msg" -> "msg" (the part after the location), for known-issue files. */
static const char *strip_location(const char *s) {
  const char *c = strstr(s, ".lua:");
  if (!c) return s;
  c += 5;
  while (*c >= '0' && *c <= '9') ++c;
  if (*c == ':') ++c;
  while (*c == ' ') ++c;
  return c;
}

/* Loads and plans dir/name (chdir'd, by basename); returns 0 when every expectation holds, else 1
 * with the reason in why. `loose`: match known-issue files without their location prefix. */
/* Limits of the loads in check_bad_spec: the defaults, except under valgrind (--bad-specs),
 * where everything runs ~50x slower and a memory bomb would otherwise meet the 5 s time limit
 * before the memory limit. */
static const spec_limits *g_limits;

static int check_bad_spec(const char *dir, const char *name, int loose, char *why, size_t wn) {
  char path[1024];
  char *text = read_text(path_join(path, sizeof path, dir, name));
  if (!text) {
    fmt(why, wn, "%s: cannot read", name);
    return 1;
  }
  expectation e;
  parse_expect(text, &e);
  free(text);
  if (e.n == 0) {
    fmt(why, wn, "%s: no '-- expect: ' line at the top", name);
    return 1;
  }
  char cwd[1024];
  if (!getcwd(cwd, sizeof cwd) || chdir(dir) != 0) {
    fmt(why, wn, "%s: chdir failed", name);
    return 1;
  }
  hot_model m;
  hot_diag d = {0};
  int rc = spec_load_file(name, g_limits, &m, &d);
  int planned_fail = 0;
  if (rc == 0) planned_fail = plan_all(&m, &d);
  spec_model_free(&m);
  if (chdir(cwd) != 0) {
    diag_free(&d);
    fmt(why, wn, "chdir back failed");
    return 1;
  }
  int bad = 0;
  why[0] = '\0';
  if (rc == 0 && planned_fail == 0) {
    fmt(why, wn, "%s: accepted (expected: %s)", name, e.text[0]);
    bad = 1;
  }
  for (int i = 0; i < e.n && !bad; ++i) {
    const char *want = (loose && e.issue[0]) ? strip_location(e.text[i]) : e.text[i];
    int found = 0;
    for (int k = 0; k < d.count; ++k) found |= strstr(d.lines[k], want) != NULL;
    if (!found) {
      fmt(why, wn, "%s: no message contains \"%s\"; got %d line(s): %s", name, want, d.count,
               d.count ? d.lines[0] : "(none)");
      bad = 1;
    }
  }
  if (!bad && e.lines >= 0 && d.count != e.lines) {
    fmt(why, wn, "%s: %d message lines, expected %d (first: %s)", name, d.count, e.lines,
             d.count ? d.lines[0] : "(none)");
    bad = 1;
  }
  for (int k = 0; k < d.count; ++k) printf("  %s\n", d.lines[k]);
  diag_free(&d);
  return bad;
}

static char g_bad_dir[1024], g_escape_dir[1024], g_specs_dir[1024];
static char g_bad[MAX_FILES][128], g_escape[MAX_FILES][128], g_shipped[MAX_FILES][128];
static int g_nbad, g_nescape, g_nshipped;

static void find_files(void) {
  path_join(g_bad_dir, sizeof g_bad_dir, src_dir(), "tests/specs/bad");
  path_join(g_escape_dir, sizeof g_escape_dir, src_dir(), "tests/specs/escape");
  path_join(g_specs_dir, sizeof g_specs_dir, src_dir(), "specs");
  g_nbad = list_files(g_bad_dir, ".lua", g_bad, MAX_FILES);
  g_nescape = list_files(g_escape_dir, ".lua", g_escape, MAX_FILES);
  g_nshipped = list_files(g_specs_dir, ".lua", g_shipped, MAX_FILES);
}

static int load_string(const char *text, hot_model *m, hot_diag *d) {
  return spec_load_string("inline.lua", text, strlen(text), NULL, m, d);
}

static void dump_diag(const hot_diag *d) {
  for (int i = 0; i < d->count; ++i) printf("  %s\n", d->lines[i]);
}

/* ---- the DSL's archs are the C arch table's ------------------------------------------------ */

/* hot.target takes every arch of the table (in one list, in table order), a spec without a target
 * plans for HOT_ARCH_DEFAULT, and the DSL's unknown-arch message lists exactly the table. */
START_TEST(dsl_archs_are_the_table) {
  char text[1024], list[256] = "", known[256], want[300];
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    char q[32];
    snprintf(q, sizeof q, "%s\"%s\"", a ? ", " : "", plan_arch_caps((hot_arch)a)->name);
    strcat(list, q);
  }
  const char *fmt_spec = "local hot = require \"hot\"\nreturn hot.model { name = \"m\", batch = 2, "
                         "tokens = 64,%s layers = { hot.linear { name = \"fc\", in_features = 64, "
                         "out_features = 64 } } }\n";
  char target[300];
  snprintf(target, sizeof target, " target = hot.target { arch = { %s } },", list);
  snprintf(text, sizeof text, fmt_spec, target);
  hot_model m;
  hot_diag d = {0};
  ck_assert_msg(load_string(text, &m, &d) == 0, "every arch of the table: %s", d.count ? d.lines[0] : "");
  ck_assert_int_eq(m.n_archs, HOT_ARCH_COUNT);
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) ck_assert_int_eq(m.archs[a], a);
  spec_model_free(&m);
  diag_free(&d);
  snprintf(text, sizeof text, fmt_spec, "");
  ck_assert_int_eq(load_string(text, &m, &d), 0);
  ck_assert_int_eq(m.n_archs, 1);
  ck_assert_int_eq(m.archs[0], HOT_ARCH_DEFAULT);
  spec_model_free(&m);
  diag_free(&d);
  snprintf(text, sizeof text, fmt_spec, " target = hot.target { arch = \"sm_00\" },");
  ck_assert_int_ne(load_string(text, &m, &d), 0);
  snprintf(want, sizeof want, "(known: %s)", plan_arch_list(known, sizeof known, ", "));
  ck_assert_msg(d.count >= 1 && strstr(d.lines[0], want), "want \"%s\" in: %s", want,
                d.count ? d.lines[0] : "(none)");
  diag_free(&d);
}
END_TEST

/* ---- shipped specs ------------------------------------------------------------------------ */

START_TEST(shipped_specs_load_and_plan) {
  ck_assert_int_ge(g_nshipped, 4);
  const char *required[] = {"vit_b16.lua", "resnet50.lua", "efficientformer_l7.lua", "llm_block.lua"};
  for (size_t r = 0; r < sizeof required / sizeof *required; ++r) {
    int found = 0;
    for (int i = 0; i < g_nshipped; ++i) found |= strcmp(g_shipped[i], required[r]) == 0;
    ck_assert_msg(found, "specs/%s is missing", required[r]);
  }
  for (int i = 0; i < g_nshipped; ++i) {
    char path[1200];
    hot_model m;
    hot_diag d = {0};
    int rc = spec_load_file(path_join(path, sizeof path, g_specs_dir, g_shipped[i]), NULL, &m, &d);
    dump_diag(&d);
    ck_assert_msg(rc == 0, "specs/%s does not load: %s", g_shipped[i], d.count ? d.lines[0] : "?");
    ck_assert_int_ge(m.n_layers, 1);
    ck_assert_int_ge(m.n_archs, 1);
    int fails = plan_all(&m, &d);
    dump_diag(&d);
    ck_assert_msg(fails == 0, "specs/%s does not plan: %s", g_shipped[i], d.count ? d.lines[0] : "?");
    printf("specs/%s: %d layers x %d archs planned\n", g_shipped[i], m.n_layers, m.n_archs);
    diag_free(&d);
    spec_model_free(&m);
  }
}
END_TEST

/* Loads specs/<name> and returns layer `layer` (the model stays in *m; caller frees). */
static const hot_layer_spec *shipped_layer(const char *name, const char *layer, hot_model *m) {
  char path[1200], file[256];
  fmt(file, sizeof file, "%s", name);
  hot_diag d = {0};
  ck_assert_int_eq(spec_load_file(path_join(path, sizeof path, g_specs_dir, file), NULL, m, &d), 0);
  diag_free(&d);
  int i = spec_find_layer(m, layer);
  ck_assert_msg(i >= 0, "%s: no layer %s", name, layer);
  return &m->layers[i];
}

START_TEST(shipped_spec_shapes) {
  hot_model m;
  const hot_layer_spec *s;
  const hot_arch want[] = {HOT_ARCH_SM80, HOT_ARCH_SM86, HOT_ARCH_SM89, HOT_ARCH_SM90};
  /* ResNet-50: im2col convolutions, T = B * H_out * W_out, I = C_in * k^2. */
  s = shipped_layer("resnet50.lua", "conv1", &m);
  ck_assert_int_eq(s->in_features, 3 * 7 * 7);
  ck_assert_int_eq(s->out_features, 64);
  ck_assert_int_eq(s->tokens, 112 * 112);
  s = &m.layers[spec_find_layer(&m, "conv4_1_3x3")];
  ck_assert_int_eq(s->in_features, 256 * 9);
  ck_assert_int_eq(s->out_features, 256);
  ck_assert_int_eq(s->tokens, 14 * 14);
  s = &m.layers[spec_find_layer(&m, "fc")];
  ck_assert_int_eq(s->in_features, 2048);
  ck_assert_int_eq(s->out_features, 1000);
  ck_assert_int_eq(m.n_archs, 4);
  for (int a = 0; a < 4; ++a) ck_assert_int_eq(m.archs[a], want[a]);
  spec_model_free(&m);
  /* EfficientFormer-L7: stage 4 attention at 49 tokens, MLP ratio 4. */
  s = shipped_layer("efficientformer_l7.lua", "s4_qkv", &m);
  ck_assert_int_eq(m.tokens, 49);
  ck_assert_int_eq(s->in_features, 768);
  ck_assert_int_eq(s->out_features, 1536);
  s = &m.layers[spec_find_layer(&m, "s4_fc1")];
  ck_assert_int_eq(s->out_features, 4 * 768);
  s = &m.layers[spec_find_layer(&m, "s1_fc1")];
  ck_assert_int_eq(s->in_features, 96);
  ck_assert_int_eq(s->out_features, 4 * 96);
  ck_assert_int_eq(s->tokens, 56 * 56);
  ck_assert_int_eq(m.n_archs, 4);
  spec_model_free(&m);
  /* LLM block. */
  s = shipped_layer("llm_block.lua", "down_proj", &m);
  ck_assert_int_eq(m.batch, 1);
  ck_assert_int_eq(m.tokens, 4096);
  ck_assert_int_eq(s->in_features, 11008);
  ck_assert_int_eq(s->out_features, 4096);
  s = &m.layers[spec_find_layer(&m, "gate_proj")];
  ck_assert_int_eq(s->out_features, 11008);
  const char *names[] = {"q_proj", "k_proj", "v_proj", "o_proj", "up_proj"};
  for (int i = 0; i < 5; ++i) ck_assert_int_ge(spec_find_layer(&m, names[i]), 0);
  spec_model_free(&m);
}
END_TEST

/* ---- defaults and overrides ------------------------------------------------------------- */

static const char *const k_recipe_names[] = {"hot", "paper", "paper_code"};

START_TEST(defaults_per_recipe) {
  for (int r = 0; r < 3; ++r) {
    char text[512];
    fmt(text, sizeof text,
             "local hot = require \"hot\"\n"
             "return hot.model { name = \"d\", batch = 2, tokens = 64, recipe = hot.recipe.%s,\n"
             "  layers = { hot.linear { name = \"fc\", in_features = 48, out_features = 80 } } }\n",
             k_recipe_names[r]);
    hot_model m;
    hot_diag d = {0};
    ck_assert_int_eq(load_string(text, &m, &d), 0);
    ck_assert_int_eq(m.recipe, (hot_recipe)r);
    ck_assert_int_eq(m.n_archs, 1);
    ck_assert_int_eq(m.archs[0], HOT_ARCH_SM90); /* default target */
    ck_assert(m.seed == 0x243F6A8885A308D3ull);
    ck_assert_int_eq(m.n_sweep, 0);
    hot_layer_spec want;
    plan_spec_defaults(&want, (hot_recipe)r);
    fmt(want.name, sizeof want.name, "fc");
    want.line = 3;
    want.in_features = 48;
    want.out_features = 80;
    ck_assert_int_eq(m.n_layers, 1);
    ck_assert_msg(memcmp(&want, &m.layers[0], sizeof want) == 0,
                  "recipe %s: the loaded layer differs from plan_spec_defaults", k_recipe_names[r]);
    /* The values CONTRACT.md fixes (3, 4, 5) and what each recipe changes. */
    const hot_layer_spec *s = &m.layers[0];
    ck_assert_int_eq(s->bias, 1);
    ck_assert_int_eq(s->dtype, HOT_DT_F32);
    ck_assert_int_eq(s->tokens, 0);
    ck_assert_int_eq(s->hq.enabled, 1);
    ck_assert_int_eq(s->hq.block, 16);
    ck_assert_int_eq(s->hq.g.bits, 4);
    ck_assert_int_eq(s->hq.g.round, HOT_ROUND_SR);
    ck_assert_int_eq(s->hq.g.gran, HOT_GRAN_AUTO);
    ck_assert_int_eq(s->hq.w.bits, 4);
    ck_assert_int_eq(s->hq.w.round, HOT_ROUND_RTN);
    ck_assert_int_eq(s->hq.w.gran, HOT_GRAN_TENSOR);
    ck_assert_int_eq(s->hq.w.rule, r == HOT_RECIPE_PAPER_CODE ? HOT_RULE_SAWB : HOT_RULE_ABSMAX);
    ck_assert_int_eq(s->hq.pad, r != HOT_RECIPE_PAPER_CODE);
    ck_assert_int_eq(s->hla.enabled, 1);
    ck_assert_int_eq(s->hla.block, r == HOT_RECIPE_PAPER_CODE ? 0 : 64);
    ck_assert_int_eq(s->hla.selection, HOT_SEL_TRI);
    ck_assert_int_eq(s->hla.keep, 50);
    ck_assert_int_eq(s->hla.layout, r == HOT_RECIPE_HOT ? HOT_LAYOUT_AUTO : HOT_LAYOUT_SAMPLE);
    ck_assert_int_eq(s->hla.pad, r != HOT_RECIPE_PAPER_CODE);
    ck_assert_int_eq(s->hla.g.bits, r == HOT_RECIPE_PAPER_CODE ? 4 : 8); /* the authors' g^ */
    ck_assert_int_eq(s->hla.g.round, HOT_ROUND_SR);
    /* the authors scale g^ and x^ per sample */
    const hot_gran hg = r == HOT_RECIPE_PAPER_CODE ? HOT_GRAN_SAMPLE
                        : r == HOT_RECIPE_HOT      ? HOT_GRAN_AUTO
                                                   : HOT_GRAN_TENSOR;
    ck_assert_int_eq(s->hla.g.gran, hg);
    ck_assert_int_eq(s->hla.x.gran, hg);
    ck_assert_int_eq(s->hla.x.bits, 8);
    ck_assert_int_eq(s->hla.x.round, HOT_ROUND_RTN);
    ck_assert_int_eq(s->hla.x.rule, r == HOT_RECIPE_PAPER_CODE ? HOT_RULE_SAWB : HOT_RULE_ABSMAX);
    ck_assert_int_eq(s->abc.enabled, 1);
    const hot_tile zero = {0, 0, 0, 0, 0, 0};
    ck_assert(memcmp(&s->tile_gx, &zero, sizeof zero) == 0);
    ck_assert(memcmp(&s->tile_gw, &zero, sizeof zero) == 0);
    diag_free(&d);
    spec_model_free(&m);
  }
}
END_TEST

START_TEST(overrides_land) {
  const char *text =
      "local hot = require \"hot\"\n"
      "return hot.model { name = \"o\", batch = 3, tokens = 100, recipe = hot.recipe.paper,\n"
      "  seed = 12345, target = hot.target { arch = { \"sm_86\", \"sm_90a\", \"sm_86\" } },\n"
      "  layers = {\n"
      "    hot.linear { name = \"a.b-c_1\", in_features = 40, out_features = 24, tokens = 50,\n"
      "      bias = false, dtype = \"bf16\",\n"
      "      hq = hot.hq { enabled = false, block = 8, bits = 6, w_bits = 5, scale = \"token\",\n"
      "                    w_scale = \"sawb\", pad = false },\n"
      "      hla = hot.hla { enabled = false, block = 32, selection = \"prefix\", rank = 7,\n"
      "                      layout = \"flat\", pad = false, bits = 7, x_bits = 6, x_scale = \"sawb\" },\n"
      "      abc = hot.abc { enabled = false },\n"
      "      tile_gx = hot.tile { tile_m = 128, tile_n = 64, tile_k = 128, warps_m = 4, warps_n = 1, stages = 3 },\n"
      "      tile_gw = { tile_m = 256, tile_n = 128, tile_k = 64, warps_m = 2, warps_n = 4, stages = 5 } },\n"
      "    hot.conv2d { name = \"conv\", in_channels = 3, out_channels = 16, kernel = 3, out_h = 8, out_w = 4,\n"
      "      hq = { scale = \"tensor\" }, hla = { selection = \"full\" }, dtype = \"f16\" },\n"
      "  },\n"
      "  sweep = hot.sweep { [\"hla.block\"] = { 16, 32, 64 }, [\"hq.bits\"] = { 4, 8 } },\n"
      "}\n";
  hot_model m;
  hot_diag d = {0};
  int rc = load_string(text, &m, &d);
  dump_diag(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_str_eq(m.name, "o");
  ck_assert_str_eq(m.file, "inline.lua");
  ck_assert_int_eq(m.batch, 3);
  ck_assert_int_eq(m.tokens, 100);
  ck_assert_int_eq(m.recipe, HOT_RECIPE_PAPER);
  ck_assert(m.seed == 12345u);
  ck_assert_int_eq(m.n_archs, 2); /* duplicates dropped */
  ck_assert_int_eq(m.archs[0], HOT_ARCH_SM86);
  ck_assert_int_eq(m.archs[1], HOT_ARCH_SM90A);
  ck_assert_int_eq(m.n_layers, 2);
  const hot_layer_spec *s = &m.layers[0];
  ck_assert_str_eq(s->name, "a.b-c_1");
  ck_assert_int_eq(s->line, 5);
  ck_assert_int_eq(s->in_features, 40);
  ck_assert_int_eq(s->out_features, 24);
  ck_assert_int_eq(s->tokens, 50);
  ck_assert_int_eq(s->bias, 0);
  ck_assert_int_eq(s->dtype, HOT_DT_BF16);
  ck_assert_int_eq(s->hq.enabled, 0);
  ck_assert_int_eq(s->hq.block, 8);
  ck_assert_int_eq(s->hq.g.bits, 6);
  ck_assert_int_eq(s->hq.w.bits, 5);
  ck_assert_int_eq(s->hq.g.gran, HOT_GRAN_ROW);
  ck_assert_int_eq(s->hq.w.rule, HOT_RULE_SAWB);
  ck_assert_int_eq(s->hq.pad, 0);
  ck_assert_int_eq(s->hla.enabled, 0);
  ck_assert_int_eq(s->hla.block, 32);
  ck_assert_int_eq(s->hla.selection, HOT_SEL_PREFIX);
  ck_assert_int_eq(s->hla.keep, 50); /* the default: keep applies to selection tri only */
  ck_assert_int_eq(s->hla.rank, 7);
  ck_assert_int_eq(s->hla.layout, HOT_LAYOUT_FLAT);
  ck_assert_int_eq(s->hla.pad, 0);
  ck_assert_int_eq(s->hla.g.bits, 7);
  ck_assert_int_eq(s->hla.x.bits, 6);
  ck_assert_int_eq(s->hla.x.rule, HOT_RULE_SAWB);
  ck_assert_int_eq(s->abc.enabled, 0);
  ck_assert_int_eq(s->tile_gx.tile_m, 128);
  ck_assert_int_eq(s->tile_gx.tile_n, 64);
  ck_assert_int_eq(s->tile_gx.tile_k, 128);
  ck_assert_int_eq(s->tile_gx.warps_m, 4);
  ck_assert_int_eq(s->tile_gx.warps_n, 1);
  ck_assert_int_eq(s->tile_gx.stages, 3);
  ck_assert_int_eq(s->tile_gw.tile_m, 256);
  ck_assert_int_eq(s->tile_gw.tile_n, 128);
  ck_assert_int_eq(s->tile_gw.tile_k, 64);
  ck_assert_int_eq(s->tile_gw.warps_m, 2);
  ck_assert_int_eq(s->tile_gw.warps_n, 4);
  ck_assert_int_eq(s->tile_gw.stages, 5);
  /* hot.conv2d: I = C_in k^2, O = C_out, L = H_out W_out; the rest from the recipe. */
  s = &m.layers[1];
  ck_assert_str_eq(s->name, "conv");
  ck_assert_int_eq(s->line, 14);
  ck_assert_int_eq(s->in_features, 27);
  ck_assert_int_eq(s->out_features, 16);
  ck_assert_int_eq(s->tokens, 32);
  ck_assert_int_eq(s->dtype, HOT_DT_F16);
  ck_assert_int_eq(s->hq.g.gran, HOT_GRAN_TENSOR);
  ck_assert_int_eq(s->hla.selection, HOT_SEL_FULL);
  ck_assert_int_eq(s->hq.block, 16);
  ck_assert_int_eq(s->bias, 1);
  /* sweep axes, sorted by field path */
  ck_assert_int_eq(m.n_sweep, 2);
  ck_assert_str_eq(m.sweep[0].field, "hla.block");
  ck_assert_int_eq(m.sweep[0].n, 3);
  ck_assert_str_eq(m.sweep[0].values[2], "64");
  ck_assert_str_eq(m.sweep[1].field, "hq.bits");
  ck_assert_int_eq(m.sweep[1].n, 2);
  ck_assert_str_eq(m.sweep[1].values[1], "8");
  diag_free(&d);
  spec_model_free(&m);
  /* hq.scale = "sample": one scale per sample (the value appended last to hot_gran) */
  const char *text2 =
      "local hot = require 'hot'\n"
      "return hot.model { name = 's', batch = 4, tokens = 64, layers = {\n"
      "  hot.linear { name = 'l', in_features = 32, out_features = 32, hq = { scale = 'sample' } } } }\n";
  hot_diag d2 = {0};
  rc = load_string(text2, &m, &d2);
  dump_diag(&d2);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(m.layers[0].hq.g.gran, HOT_GRAN_SAMPLE);
  diag_free(&d2);
  spec_model_free(&m);
}
END_TEST

/* ---- bad specs --------------------------------------------------------------------------- */

START_TEST(bad_spec_count) {
  printf("%d bad specs in %s\n", g_nbad, g_bad_dir);
  ck_assert_int_ge(g_nbad, 22);
}
END_TEST

/* One loop iteration per bad spec (each in its own process under Check's fork mode). */
START_TEST(bad_spec) {
  ck_assert_int_lt(_i, g_nbad);
  char why[1024];
  printf("%s\n", g_bad[_i]);
  int bad = check_bad_spec(g_bad_dir, g_bad[_i], 1, why, sizeof why);
  ck_assert_msg(!bad, "%s", why);
}
END_TEST

START_TEST(bytecode_rejected) {
  /* A real chunk made by luac5.4 from a valid spec (tests/specs/bytecode.luac). */
  char path[1200], dir[1100];
  path_join(dir, sizeof dir, src_dir(), "tests/specs");
  path_join(path, sizeof path, dir, "bytecode.luac");
  hot_model m;
  hot_diag d = {0};
  ck_assert_int_ne(spec_load_file(path, NULL, &m, &d), 0);
  ck_assert_int_eq(d.count, 1);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "bytecode.luac:1: precompiled (bytecode) specs are not accepted"));
  diag_free(&d);
  /* Only the signature, written at run time, named like a source file. */
  char tmpl[] = "/tmp/hot_bytecode_XXXXXX";
  int fd = mkstemp(tmpl);
  ck_assert_int_ge(fd, 0);
  const char sig[] = "\x1bLuaT\x00\x19\x93\r\n\x1a\n";
  ck_assert_int_eq(write(fd, sig, sizeof sig - 1), (ssize_t)(sizeof sig - 1));
  close(fd);
  ck_assert_int_ne(spec_load_file(tmpl, NULL, &m, &d), 0);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "precompiled (bytecode)"));
  ck_assert_ptr_nonnull(strstr(d.lines[0], tmpl));
  unlink(tmpl);
  diag_free(&d);
  /* The same from memory. */
  ck_assert_int_ne(spec_load_string("mem.lua", sig, sizeof sig - 1, NULL, &m, &d), 0);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "mem.lua:1: precompiled (bytecode)"));
  diag_free(&d);
}
END_TEST

START_TEST(missing_file) {
  hot_model m;
  hot_diag d = {0};
  ck_assert_int_ne(spec_load_file("/nonexistent/hot/spec.lua", NULL, &m, &d), 0);
  ck_assert_int_eq(d.count, 1);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "/nonexistent/hot/spec.lua: cannot open"));
  spec_model_free(&m); /* safe after a failure */
  diag_free(&d);
  ck_assert_int_ne(spec_load_file(NULL, NULL, &m, &d), 0);
  diag_free(&d);
}
END_TEST

START_TEST(errors_reported_together) {
  /* The bad spec three_errors.lua checks the exact lines; here one more from memory: four
   * mistakes in three layers and the model, reported in one go. */
  const char *text =
      "local hot = require \"hot\"\n"
      "return hot.model { name = \"m\", batch = 2, tokens = 64, layers = {\n"
      "  hot.linear { name = \"a\", in_features = 0, out_features = 8 },\n"
      "  hot.linear { name = \"b\", in_features = 8, out_features = 8, dtype = \"fp8\" },\n"
      "  hot.linear { name = \"c\", in_features = 8, out_features = 8, hla = { layout = \"tiled\" },\n"
      "               hq = { w_scale = \"max\" } },\n"
      "} }\n";
  hot_model m;
  hot_diag d = {0};
  ck_assert_int_ne(load_string(text, &m, &d), 0);
  dump_diag(&d);
  ck_assert_int_eq(d.count, 4);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "inline.lua:3: layer 'a': in_features must be in [1, "));
  ck_assert_ptr_nonnull(strstr(d.lines[1], "inline.lua:4: layer 'b': dtype must be one of f32, bf16, f16 (got \"fp8\")"));
  ck_assert_ptr_nonnull(strstr(d.lines[2], "inline.lua:5: layer 'c': hla.layout must be one of sample, flat, auto (got \"tiled\")"));
  ck_assert_ptr_nonnull(strstr(d.lines[3], "inline.lua:6: layer 'c': hq.w_scale must be one of absmax, sawb (got \"max\")"));
  diag_free(&d);
}
END_TEST


/* ---- a validated model is final ------------------------------------------------------------ */

/* Every way a spec could reach the tables behind a validated model, tried after hot.model: the
 * loaded model must hold the validated values (or the attempt fails with "read-only"). */
START_TEST(mutation_after_validation) {
  /* Captured inner tables and constructor results, mutated after validation; the spec's own
   * copies of string/table/math replaced (functions left behind for the DSL to call). */
  const char *quiet =
      "local hot = require \"hot\"\n"
      "local hq = { block = 16 }\n"
      "local fc = hot.linear { name = \"fc\", in_features = 64, out_features = 64, hq = hq }\n"
      "local layers = { fc }\n"
      "local model = { name = \"m\", batch = 2, tokens = 64, layers = layers }\n"
      "local m = hot.model(model)\n"
      "hq.block = 3; fc.name = \"../../evil\"; fc.in_features = 1 << 62; layers[2] = fc\n"
      "model.batch = 1 << 62; model.name = \"..\"\n"
      "string.format = function() return \"\" end; table.concat = function() return \"\" end\n"
      "math.min = function() return 0 end; string.match = function() return true end\n"
      "for k, v in pairs(m) do local _ = v end\n"
      "local it, view = pairs(m)\n"
      "local k, v = it(view, nil)\n"
      "assert(rawget(m, \"name\") == nil and next(m) == nil)\n"
      "assert(#m.layers == 1 and m.layers[1].name == \"fc\")\n"
      "return m\n";
  hot_model m;
  hot_diag d = {0};
  int rc = load_string(quiet, &m, &d);
  dump_diag(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_str_eq(m.name, "m");
  ck_assert_int_eq(m.batch, 2);
  ck_assert_int_eq(m.n_layers, 1);
  ck_assert_str_eq(m.layers[0].name, "fc");
  ck_assert_int_eq(m.layers[0].in_features, 64);
  ck_assert_int_eq(m.layers[0].hq.block, 16);
  spec_model_free(&m);
  diag_free(&d);
  /* Writes through the view, at any depth, through the table pairs() returns, and through the
   * iterator's results: each one fails. */
  const char *writes[] = {"m.name = \"..\"", "m.layers[1].name = \"..\"",
                          "m.layers[1].hq.block = 3", "local _, v = pairs(m); v.batch = 1 << 62",
                          "for k, v in pairs(m.layers) do v.name = \"..\" end",
                          "local it, v = pairs(m); for k, l in it, v do if k == \"layers\" then l[1] = 1 end end",
                          "m.archs[1] = \"sm_99\"", "table.insert(m.layers, m.layers[1])"};
  for (size_t i = 0; i < sizeof writes / sizeof *writes; ++i) {
    char text[1024];
    fmt(text, sizeof text,
        "local hot = require \"hot\"\n"
        "local m = hot.model { name = \"m\", batch = 2, tokens = 64, target = hot.target { arch = \"sm_80\" },\n"
        "  layers = { hot.linear { name = \"fc\", in_features = 64, out_features = 64, hq = { block = 16 } } } }\n"
        "%s\n"
        "return m\n",
        writes[i]);
    rc = load_string(text, &m, &d);
    dump_diag(&d);
    ck_assert_msg(rc != 0, "'%s' was accepted", writes[i]);
    ck_assert_msg(d.count >= 1 && strstr(d.lines[0], "inline.lua:4: ") == d.lines[0] &&
                      strstr(d.lines[0], "read-only") != NULL,
                  "'%s': %s", writes[i], d.count ? d.lines[0] : "(no message)");
    diag_free(&d);
  }
  /* Functions the spec leaves behind before validation (its string/table/math, and the string
   * methods through the string metatable) are never called by the DSL: the messages come out
   * right. */
  const char *tampered =
      "local hot = require \"hot\"\n"
      "local bad = function() error(\"spec function called\") end\n"
      "for _, lib in ipairs({ string, table, math }) do for k in pairs(lib) do lib[k] = bad end end\n"
      "return hot.model { name = \"m\", batch = 2, tokens = 64, layers = {\n"
      "  hot.linear { name = \"fc\", in_features = 64, out_features = 64, hq = { blok = 16 }, bias = 1 } } }\n";
  ck_assert_int_ne(load_string(tampered, &m, &d), 0);
  dump_diag(&d);
  ck_assert_int_eq(d.count, 2);
  ck_assert_str_eq(d.lines[0], "inline.lua:5: layer 'fc': bias must be true or false (got 1)");
  ck_assert_str_eq(d.lines[1], "inline.lua:5: layer 'fc': unknown field hq.blok (did you mean 'block'?)");
  diag_free(&d);
  /* A forged model: a table that looks like a validated one is refused. */
  ck_assert_int_ne(load_string("local hot = require \"hot\"\n"
                               "local m = hot.model { name = \"m\", batch = 2, tokens = 64, layers = {\n"
                               "  hot.linear { name = \"fc\", in_features = 64, out_features = 64 } } }\n"
                               "local f = {} for k, v in pairs(m) do f[k] = v end\n"
                               "return f\n",
                               &m, &d),
                   0);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "inline.lua:5: the spec must return hot.model"));
  diag_free(&d);
}
END_TEST

/* The spec's path in messages is the one given, also when Lua would shorten it ("...tail"). */
START_TEST(long_path_in_messages) {
  char dir[] = "/tmp/hot_spec_long_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[512];
  fmt(path, sizeof path, "%s/a_rather_long_folder_name_for_a_spec/another_long_folder_name", dir);
  char cmd[700];
  fmt(cmd, sizeof cmd, "mkdir -p %s", path);
  ck_assert_int_eq(system(cmd), 0);
  const char *bodies[] = {"local hot = require \"hot\"\nlocal x = nil + 1\n",
                          "local hot = require \"hot\"\nlocal x = {\n",
                          "local hot = require \"hot\"\nreturn hot.model { name = \"m\", batch = 0, tokens = 1,\n"
                          "  layers = { hot.linear { name = \"fc\", in_features = 8, out_features = 8 } } }\n"};
  const int lines[] = {2, 3, 2};
  for (int i = 0; i < 3; ++i) {
    char file[700];
    fmt(file, sizeof file, "%s/spec%d.lua", path, i);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs(bodies[i], f);
    fclose(f);
    hot_model m;
    hot_diag d = {0};
    ck_assert_int_ne(spec_load_file(file, NULL, &m, &d), 0);
    dump_diag(&d);
    char want[760];
    fmt(want, sizeof want, "%s:%d: ", file, lines[i]);
    ck_assert_msg(d.count >= 1 && strncmp(d.lines[0], want, strlen(want)) == 0, "want '%s', got '%s'",
                  want, d.count ? d.lines[0] : "");
    diag_free(&d);
  }
  fmt(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A spec file is read as the lua interpreter reads one: a UTF-8 byte-order mark is skipped and a
 * first line starting with '#' is a comment (a "#!" line), the other lines keeping their numbers;
 * '#' on any later line is Lua's syntax error. */
START_TEST(bom_and_first_line_comment) {
  static const char model[] = "local hot = require \"hot\"\n"
                              "return hot.model { name = \"m\", batch = 2, tokens = 64, layers = {\n"
                              "  hot.linear { name = \"fc\", in_features = 8, out_features = 8 } } }\n";
  const char *heads[] = {"", "\xEF\xBB\xBF", "#!/usr/bin/env hot-gen\n", "\xEF\xBB\xBF# a spec\n"};
  for (int i = 0; i < 4; ++i) {
    char text[512];
    fmt(text, sizeof text, "%s%s", heads[i], model);
    hot_model m;
    hot_diag d = {0};
    int rc = load_string(text, &m, &d);
    dump_diag(&d);
    ck_assert_msg(rc == 0 && m.n_layers == 1, "head %d: rc %d", i, rc);
    spec_model_free(&m);
    diag_free(&d);
  }
  /* an error keeps its line: line 3 of the file, after the '#' line */
  const char *bad[] = {"#!/usr/bin/env hot-gen\nlocal hot = require \"hot\"\nlocal x = nil + 1\n",
                       "\xEF\xBB\xBF#!x\nlocal hot = require \"hot\"\nlocal x = nil + 1\n",
                       "local hot = require \"hot\"\n#!x\n", "#"};
  const char *want[] = {"inline.lua:3: ", "inline.lua:3: ", "inline.lua:2: ", NULL};
  for (int i = 0; i < 4; ++i) {
    hot_model m;
    hot_diag d = {0};
    int rc = load_string(bad[i], &m, &d);
    dump_diag(&d);
    ck_assert_msg(rc != 0 && d.count >= 1, "bad %d loaded", i);
    if (want[i])
      ck_assert_msg(strncmp(d.lines[0], want[i], strlen(want[i])) == 0, "bad %d: want '%s', got '%s'",
                    i, want[i], d.lines[0]);
    diag_free(&d);
  }
}
END_TEST

START_TEST(sweep_axes_of_every_kind) {
  /* int, enum and bool fields of every group, as their spec text; no warning (hot-tune reads it);
   * every axis names a field of gen/fields.c */
  hot_model m;
  hot_diag d = {0};
  ck_assert_int_eq(load_string("local hot = require \"hot\"\n"
                               "return hot.model { name = \"m\", batch = 2, tokens = 64,\n"
                               "  layers = { hot.linear { name = \"fc\", in_features = 64, out_features = 64 } },\n"
                               "  sweep = hot.sweep { [\"hla.block\"] = { 16, 32 }, [\"hq.scale\"] = { \"token\", \"sample\" },\n"
                               "    [\"hq.round\"] = { \"rtn\" }, [\"hla.pad\"] = { true, false }, [\"tile_gx.stages\"] = { 3, 4 } } }\n",
                               &m, &d),
                   0);
  dump_diag(&d);
  ck_assert_int_eq(d.count, 0);
  ck_assert_int_eq(m.n_sweep, 5);
  ck_assert_str_eq(m.sweep[0].field, "hla.block");
  ck_assert_str_eq(m.sweep[1].field, "hla.pad");
  ck_assert_str_eq(m.sweep[1].values[0], "true");
  ck_assert_str_eq(m.sweep[1].values[1], "false");
  ck_assert_str_eq(m.sweep[2].field, "hq.round");
  ck_assert_str_eq(m.sweep[3].field, "hq.scale");
  ck_assert_str_eq(m.sweep[3].values[0], "token");
  ck_assert_str_eq(m.sweep[4].field, "tile_gx.stages");
  for (int i = 0; i < m.n_sweep; ++i) ck_assert_ptr_nonnull(fields_find(m.sweep[i].field));
  spec_model_free(&m);
  diag_free(&d);
}
END_TEST

START_TEST(sweep_refusals) {
  static const char *const cases[][2] = {
    {"[\"hq.block\"] = { 16, 16 }", "sweep[hq.block][2]: 16 is listed twice"},
    {"[\"hq.scale\"] = { \"row\" }", "sweep[hq.scale][1] must be one of"},
    {"[\"in_features\"] = { 64 }", "is not a sweepable field"},
    {"[\"hq.g.bits\"] = { 4 }", "is not a sweepable field"},
    {"[\"tile_gx.stages\"] = { 9 }", "sweep[tile_gx.stages][1] must be in [0, 6]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char text[512];
    snprintf(text, sizeof text,
             "local hot = require \"hot\"\n"
             "return hot.model { name = \"m\", batch = 2, tokens = 64,\n"
             "  layers = { hot.linear { name = \"fc\", in_features = 64, out_features = 64 } },\n"
             "  sweep = hot.sweep { %s } }\n", cases[i][0]);
    hot_model m;
    hot_diag d = {0};
    ck_assert_int_ne(load_string(text, &m, &d), 0);
    int found = 0;
    for (int k = 0; k < d.count; ++k) found |= strstr(d.lines[k], cases[i][1]) != NULL;
    if (!found) dump_diag(&d);
    ck_assert_msg(found, "case %zu: no '%s'", i, cases[i][1]);
    diag_free(&d);
  }
}
END_TEST

/* ---- names and paths -------------------------------------------------------------------- */

START_TEST(names_and_paths) {
  const char *good[] = {"a", "fc1", "_x", "9", "a.b-c_1", "vit_b16.fc1"};
  const char *bad[] = {"", ".", "..", ".hidden", "-rf", "a/b", "a b", "a\nb", "../x", "é"};
  for (size_t i = 0; i < sizeof good / sizeof *good; ++i) ck_assert_msg(spec_name_valid(good[i]), "%s", good[i]);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) ck_assert_msg(!spec_name_valid(bad[i]), "%s", bad[i]);
  char n64[65];
  memset(n64, 'a', 64);
  n64[64] = '\0';
  ck_assert(!spec_name_valid(n64));
  n64[63] = '\0';
  ck_assert(spec_name_valid(n64));
  char out[64];
  ck_assert_int_eq(spec_path_join(out, sizeof out, "dir", "m.fc.sm_90.cu"), 0);
  ck_assert_str_eq(out, "dir/m.fc.sm_90.cu");
  ck_assert_int_eq(spec_path_join(out, sizeof out, "dir/", "x"), 0);
  ck_assert_str_eq(out, "dir/x");
  const char *refused[] = {"", ".", "..", "../x", "a/b", "/etc/passwd", "a\nb"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; ++i) {
    ck_assert_int_eq(spec_path_join(out, sizeof out, "dir", refused[i]), -1);
    ck_assert_str_eq(out, "");
  }
  ck_assert_int_eq(spec_path_join(out, 8, "dir", "too_long_name"), -1);
  ck_assert_int_eq(spec_path_join(out, sizeof out, "", "x"), -1);
}
END_TEST

/* Runs `hot-gen ARGS` (HOT_GEN), returns its exit status; stderr+stdout into out. */
static int run_gen(const char *args, char *out, size_t n) {
  const char *gen = getenv("HOT_GEN");
  ck_assert_msg(gen && *gen, "HOT_GEN not set");
  char cmd[2048];
  fmt(cmd, sizeof cmd, "%s %s 2>&1", gen, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t len = fread(out, 1, n - 1, p);
  out[len] = '\0';
  char sink[4096]; /* the rest (hot-gen must not die of SIGPIPE) */
  while (fread(sink, 1, sizeof sink, p) > 0) {
  }
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Counts the regular files under dir (recursively). */
static int count_files(const char *dir) {
  char cmd[1200], buf[64];
  fmt(cmd, sizeof cmd, "find %s -type f | wc -l", dir);
  FILE *p = popen(cmd, "r");
  if (!p || !fgets(buf, sizeof buf, p)) return -1;
  pclose(p);
  return atoi(buf);
}

/* A hostile spec that rewrites names after validation (every way it has) cannot make hot-gen
 * write outside --emit DIR; --plan checks every target arch; --dump-cubin needs --compile. */
START_TEST(hot_gen_stays_inside) {
  char root[] = "/tmp/hot_gen_escape_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(root));
  char spec[1200], emit[1200];
  static char out[1 << 18];
  fmt(spec, sizeof spec, "%s/hostile.lua", root);
  fmt(emit, sizeof emit, "%s/a/b/out", root);
  char ab[1200]; /* --emit creates its last component only: the folders above exist */
  fmt(ab, sizeof ab, "%s/a", root);
  ck_assert_int_eq(mkdir(ab, 0700), 0);
  fmt(ab, sizeof ab, "%s/a/b", root);
  ck_assert_int_eq(mkdir(ab, 0700), 0);
  FILE *f = fopen(spec, "w");
  ck_assert_ptr_nonnull(f);
  fputs("local hot = require \"hot\"\n"
        "local fc = hot.linear { name = \"fc\", in_features = 64, out_features = 64 }\n"
        "local t = { name = \"m\", batch = 2, tokens = 64, layers = { fc } }\n"
        "local m = hot.model(t)\n"
        "fc.name = \"../../escaped\"; t.name = \"../..\"\n"
        "local it, view = pairs(m)\n"
        "for k, v in it, view do if type(v) == \"table\" then local _ = #v end end\n"
        "return m\n",
        f);
  fclose(f);
  char args[3000];
  fmt(args, sizeof args, "%s --emit %s", spec, emit);
  int rc = run_gen(args, out, sizeof out);
  printf("%s", out);
  ck_assert_int_eq(rc, 0);
  char want[1300];
  fmt(want, sizeof want, "%s/m.fc.sm_90.cu", emit);
  ck_assert_int_eq(access(want, F_OK), 0);
  ck_assert_int_eq(count_files(root), 3); /* the spec, the .cu and manifest.json */
  /* The exploit of a leaking view (pairs() handed out the model's table): renaming the model
   * after validation wrote DIR/../../escaped.fc.sm_90.cu. Now the write fails, nothing is written. */
  char spec2[1200], emit2[1200];
  fmt(spec2, sizeof spec2, "%s/exploit.lua", root);
  fmt(emit2, sizeof emit2, "%s/a/b/out2", root);
  f = fopen(spec2, "w");
  ck_assert_ptr_nonnull(f);
  fputs("local hot = require \"hot\"\n"
        "local m = hot.model { name = \"m\", batch = 2, tokens = 64,\n"
        "  layers = { hot.linear { name = \"fc\", in_features = 64, out_features = 64 } } }\n"
        "local _, inner = pairs(m)\n"
        "inner.name = \"/../../escaped\"\n"
        "return m\n",
        f);
  fclose(f);
  fmt(args, sizeof args, "%s --emit %s", spec2, emit2);
  rc = run_gen(args, out, sizeof out);
  printf("%s", out);
  ck_assert_int_eq(rc, 1);
  ck_assert_ptr_nonnull(strstr(out, "exploit.lua:5: a validated hot.model is read-only"));
  ck_assert_int_eq(count_files(root), 4); /* + exploit.lua, nothing else */
  /* The second target arch cannot be planned: --plan fails and names it. */
  fmt(args, sizeof args, "%s/tests/specs/bad/smem_sm86.lua --plan", src_dir());
  rc = run_gen(args, out, sizeof out);
  printf("%s", out);
  ck_assert_int_eq(rc, 1);
  ck_assert_ptr_nonnull(strstr(out, "sm_86 allows 101376 (planning for sm_86)"));
  /* --plan prints every target arch. */
  fmt(args, sizeof args, "%s/specs/resnet50.lua --plan --layer fc", src_dir());
  ck_assert_int_eq(run_gen(args, out, sizeof out), 0);
  const char *archs[] = {"arch sm_80\n", "arch sm_86\n", "arch sm_89\n", "arch sm_90\n"};
  for (int i = 0; i < 4; ++i) ck_assert_msg(strstr(out, archs[i]) != NULL, "--plan lacks %s", archs[i]);
  fmt(args, sizeof args, "%s/specs/resnet50.lua --json --layer fc", src_dir());
  ck_assert_int_eq(run_gen(args, out, sizeof out), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"plan_archs\":[\"sm_80\",\"sm_86\",\"sm_89\",\"sm_90\"]"));
  int entries = 0;
  for (const char *q = out; (q = strstr(q, "\"name\":\"fc\"")) != NULL; ++q) ++entries;
  ck_assert_int_eq(entries, 4); /* one layers[] entry per arch */
  /* --dump-cubin alone is a usage error, not silently ignored. */
  fmt(args, sizeof args, "%s --dump-cubin %s/cubins", spec, root);
  ck_assert_int_eq(run_gen(args, out, sizeof out), 2);
  ck_assert_ptr_nonnull(strstr(out, "--dump-cubin needs --compile"));
  char cmd[1300];
  fmt(cmd, sizeof cmd, "rm -rf %s", root);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- out of memory ------------------------------------------------------------------------ */

/* Every allocation of the loader failing in turn (the first N succeed): the load fails with
 * SPEC_ERR_NOMEM and a one-line message, or succeeds; never a spec error, a crash or a leak
 * (valgrind/ASan runs of this suite check the leaks). */
START_TEST(alloc_failures_are_nomem) {
  const char *text =
      "local hot = require \"hot\"\n"
      "return hot.model { name = \"m\", batch = 2, tokens = 64, layers = {\n"
      "  hot.linear { name = \"fc\", in_features = 64, out_features = 64 },\n"
      "  hot.linear { name = \"bad\", in_features = 64, out_features = 64, bias = 1 } } }\n";
  hot_model m;
  hot_diag d = {0};
  long long before = spec_test_alloc_count();
  ck_assert_int_eq(load_string(text, &m, &d), SPEC_ERR_SPEC);
  long long total = spec_test_alloc_count() - before;
  diag_free(&d);
  printf("a failing load makes %lld allocations\n", total);
  ck_assert_int_gt(total, 100);
  int nomem = 0;
  for (long long n = 0; n <= total; n += (n < 400 ? 1 : 7)) {
    spec_test_fail_allocs_after(n);
    int rc = load_string(text, &m, &d);
    spec_test_fail_allocs_after(-1);
    ck_assert_msg(rc == SPEC_ERR_NOMEM || rc == SPEC_ERR_SPEC, "n=%lld: rc %d", n, rc);
    if (rc == SPEC_ERR_NOMEM) {
      ++nomem;
      int said = d.oom;
      for (int k = 0; k < d.count; ++k) said |= strstr(d.lines[k], "out of memory") != NULL;
      ck_assert_msg(said, "n=%lld: %s", n, d.count ? d.lines[0] : "(none)");
    } else {
      /* Only possible once every allocation succeeded: the spec's own error. */
      ck_assert_msg(d.count >= 1 && strstr(d.lines[0], "bias must be true or false"), "n=%lld: %s",
                    n, d.count ? d.lines[0] : "(none)");
    }
    spec_model_free(&m);
    diag_free(&d);
  }
  printf("%d injected failures gave SPEC_ERR_NOMEM\n", nomem);
  ck_assert_int_gt(nomem, 100);
  /* A good spec: the copy into C fails last. */
  char path[1200];
  path_join(path, sizeof path, g_specs_dir, "vit_b16.lua");
  before = spec_test_alloc_count();
  ck_assert_int_eq(spec_load_file(path, NULL, &m, &d), 0);
  total = spec_test_alloc_count() - before;
  spec_model_free(&m);
  diag_free(&d);
  /* Lua seeds its string hashes at random, so the count varies a little from run to run: fail
   * each of the last ~60 allocations (the final C copy among them). */
  int late_nomem = 0;
  for (long long n = total - 60; n <= total + 5; ++n) {
    spec_test_fail_allocs_after(n);
    int rc = spec_load_file(path, NULL, &m, &d);
    spec_test_fail_allocs_after(-1);
    ck_assert_msg(rc == 0 || rc == SPEC_ERR_NOMEM, "n=%lld: rc %d: %s", n, rc,
                  d.count ? d.lines[0] : "");
    late_nomem += rc == SPEC_ERR_NOMEM;
    spec_model_free(&m);
    diag_free(&d);
  }
  ck_assert_int_gt(late_nomem, 10);
}
END_TEST

/* The runtime maps the loader's out-of-memory to HOT_ERR_NOMEM (hot_layer_from_spec). */
START_TEST(runtime_nomem) {
  setenv("HOT_BACKEND", "cpu", 1);
  setenv("HOT_NO_DISK_CACHE", "1", 1);
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  char path[1200];
  path_join(path, sizeof path, g_specs_dir, "vit_b16.lua");
  const long long after[] = {0, 60, 600, 1500}; /* the file buffer, the state, the DSL, the spec */
  for (int i = 0; i < 4; ++i) {
    hot_layer *layer = NULL;
    spec_test_fail_allocs_after(after[i]);
    hot_status st = hot_layer_from_spec(ctx, path, "fc1", 0, &layer);
    spec_test_fail_allocs_after(-1);
    printf("allocation %lld fails: %s: %s\n", after[i], hot_status_name(st), hot_errmsg(ctx));
    ck_assert_int_eq(st, HOT_ERR_NOMEM);
    ck_assert_ptr_null(layer);
  }
  hot_ctx_destroy(ctx);
}
END_TEST

/* The spec's seed takes HOT_SEED's range and syntax: [0, 2^64 - 1], a string parsed as HOT_SEED
 * is (num.h) where a Lua integer cannot hold the value; each text below is accepted or refused by
 * both paths alike, with the same value. A layer from a spec file keeps the whole 64-bit key. */
START_TEST(seed_range_is_hot_seeds) {
  static const struct { const char *text; int ok; uint64_t value; } cases[] = {
      {"0", 1, 0},
      {"9223372036854775807", 1, 9223372036854775807ull},
      {"9223372036854775808", 1, 9223372036854775808ull},
      {"0xC000000000000000", 1, 0xC000000000000000ull},
      {"18446744073709551615", 1, UINT64_MAX},
      {"0xFFFFFFFFFFFFFFFF", 1, UINT64_MAX},
      {"18446744073709551616", 0, 0},
      {"0x10000000000000000", 0, 0},
      {"-1", 0, 0},
      {"12x", 0, 0},
      {"1e3", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
    char text[512];
    fmt(text, sizeof text, "local hot = require \"hot\"\nreturn hot.model { name = \"m\", batch = 1, "
        "tokens = 16, seed = \"%s\",\n  layers = { hot.linear { name = \"fc\", in_features = 16, "
        "out_features = 16 } } }\n", cases[i].text);
    hot_model m;
    hot_diag d = {0};
    int rc = load_string(text, &m, &d);
    dump_diag(&d);
    setenv("HOT_SEED", cases[i].text, 1);
    hot_env ev;
    char err[256] = "";
    rt_status st = env_read(&ev, 0, err, sizeof err);
    unsetenv("HOT_SEED");
    printf("seed \"%s\": spec %s, HOT_SEED %s %s\n", cases[i].text, rc ? "refused" : "accepted",
           st == RT_OK ? "accepted" : "refused", err);
    ck_assert_msg((rc == 0) == cases[i].ok, "spec seed \"%s\"", cases[i].text);
    ck_assert_msg((st == RT_OK) == cases[i].ok, "HOT_SEED=%s", cases[i].text);
    if (cases[i].ok) {
      ck_assert(m.seed == cases[i].value);
      ck_assert(ev.seed == cases[i].value);
    } else {
      char want[160]; /* one message, HOT_SEED's words, with the field's name */
      fmt(want, sizeof want, "inline.lua:2: model: seed='%s': expected an integer in [0, "
          "18446744073709551615]", cases[i].text);
      ck_assert_int_eq(d.count, 1);
      ck_assert_str_eq(d.lines[0], want);
      ck_assert_ptr_nonnull(strstr(err, "expected an integer in [0, 18446744073709551615]"));
    }
    spec_model_free(&m);
    diag_free(&d);
  }

  /* through libhot: the spec's key, then HOT_SEED's, both the largest */
  char dir[] = "/tmp/hot-seed-XXXXXX", path[128];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  fmt(path, sizeof path, "%s/s.lua", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("local hot = require \"hot\"\nreturn hot.model { name = \"m\", batch = 1, tokens = 16, "
        "seed = \"0xFFFFFFFFFFFFFFFF\",\n  layers = { hot.linear { name = \"fc\", in_features = 16, "
        "out_features = 16 } } }\n", f);
  ck_assert_int_eq(fclose(f), 0);
  setenv("HOT_BACKEND", "cpu", 1);
  setenv("HOT_NO_DISK_CACHE", "1", 1);
  for (int env = 0; env < 2; ++env) {
    if (env) setenv("HOT_SEED", "18446744073709551614", 1);
    hot_ctx *ctx = NULL;
    ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
    hot_layer *l = NULL;
    ck_assert_int_eq(hot_layer_from_spec(ctx, path, "fc", 0, &l), HOT_OK);
    hot_layer_info info;
    ck_assert_int_eq(hot_layer_get_info(l, &info), HOT_OK);
    ck_assert(info.seed == (env ? UINT64_MAX - 1 : UINT64_MAX));
    hot_ctx_destroy(ctx);
  }
  unsetenv("HOT_SEED");
  unlink(path);
  rmdir(dir);
}
END_TEST

/* ---- limits ------------------------------------------------------------------------------ */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

START_TEST(loop_bounded_time) {
  char path[1200];
  path_join(path, sizeof path, g_bad_dir, "infinite_loop.lua");
  hot_model m;
  hot_diag d = {0};
  double t0 = now();
  ck_assert_int_ne(spec_load_file(path, NULL, &m, &d), 0);
  double dt = now() - t0;
  printf("endless loop stopped after %.2f s: %s\n", dt, d.lines[0]);
  ck_assert_double_lt(dt, 60.0); /* only a hang fails: the instruction limit stops it, not a clock */
  ck_assert_ptr_nonnull(strstr(d.lines[0], "infinite_loop.lua:4: spec exceeded its instruction limit"));
  diag_free(&d);
  /* With a huge instruction budget the wall-clock limit stops it. */
  spec_limits lim = spec_default_limits();
  lim.instructions = (long long)1 << 60;
  lim.seconds = 0.3;
  t0 = now();
  ck_assert_int_ne(spec_load_file(path, &lim, &m, &d), 0);
  dt = now() - t0;
  printf("time limit 0.3 s: stopped after %.2f s: %s\n", dt, d.lines[0]);
  ck_assert_double_lt(dt, 30.0);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "time limit"));
  diag_free(&d);
}
END_TEST

START_TEST(memory_limit_configurable) {
  char path[1200];
  path_join(path, sizeof path, g_bad_dir, "memory_bomb.lua");
  spec_limits lim = spec_default_limits();
  lim.memory_bytes = 8u << 20;
  hot_model m;
  hot_diag d = {0};
  double t0 = now();
  ck_assert_int_ne(spec_load_file(path, &lim, &m, &d), 0);
  double dt = now() - t0;
  printf("memory bomb stopped after %.2f s: %s\n", dt, d.lines[0]);
  ck_assert_double_lt(dt, 5.0);
  ck_assert_ptr_nonnull(strstr(d.lines[0], "spec exceeded its memory limit of 8 MiB"));
  diag_free(&d);
  /* A good spec still loads under a small limit (the DSL itself fits in 4 MiB). */
  lim.memory_bytes = 4u << 20;
  path_join(path, sizeof path, g_specs_dir, "vit_b16.lua");
  ck_assert_int_eq(spec_load_file(path, &lim, &m, &d), 0);
  spec_model_free(&m);
  diag_free(&d);
}
END_TEST

/* ---- help ------------------------------------------------------------------------------- */

START_TEST(help_mentions_every_field) {
  hot_diag d = {0};
  char *help = spec_help_text(&d);
  ck_assert_ptr_nonnull(help);
  char path[1200];
  char *schema = read_text(path_join(path, sizeof path, src_dir(), "lua/hot/schema.lua"));
  ck_assert_ptr_nonnull(schema);
  /* The fields schema.lua writes itself: "  <key> = f(\"<kind>\"" lines (model, target, the
   * layer's sizes and sub-tables). The layer's fields from gen/field_list.h: tests/spec/test_fields. */
  int fields = 0;
  for (char *line = strtok(schema, "\n"); line; line = strtok(NULL, "\n")) {
    char key[64], kind[16];
    if (sscanf(line, " %63[a-z_] = f(\"%15[a-z]\"", key, kind) != 2) continue;
    ck_assert_msg(strstr(help, key) != NULL, "--help-spec does not mention %s", key);
    ++fields;
  }
  for (int i = 0; i < fields_all_count(); ++i)
    if (fields_all_at(i)->path) ++fields;
  printf("help mentions all %d schema fields\n", fields);
  ck_assert_int_ge(fields, 40);
  const char *extra[] = {"in_channels", "out_channels", "kernel", "out_h", "out_w", "paper_code",
                         "paper", "sm_90a", "tri", "prefix", "full", "hla.scale = sample"};
  for (size_t i = 0; i < sizeof extra / sizeof *extra; ++i)
    ck_assert_msg(strstr(help, extra[i]) != NULL, "--help-spec does not mention %s", extra[i]);
  free(schema);
  free(help);
  diag_free(&d);
}
END_TEST

/* ---- known issues (own CTest entry) -------------------------------------------------------- */

/* Runs check_bad_spec in a child with a timeout: a hang is a failure, not a stuck suite. */
static int check_in_child(const char *dir, const char *name, int seconds, char *why, size_t wn) {
  int fds[2];
  if (pipe(fds) != 0) { fmt(why, wn, "pipe failed"); return 1; }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    signal(SIGALRM, SIG_DFL); /* Check's own SIGALRM handler would kill the whole group */
    char w[1024] = "";
    int bad = check_bad_spec(dir, name, 0, w, sizeof w);
    if (write(fds[1], w, strlen(w)) < 0) _exit(3);
    _exit(bad);
  }
  close(fds[1]);
  /* The parent keeps the clock: poll, then SIGKILL the child at the deadline. */
  int st = 0, killed = 0;
  double t0 = now();
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (now() - t0 > seconds) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      killed = 1;
      break;
    }
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
  }
  ssize_t got = read(fds[0], why, wn - 1);
  why[got > 0 ? got : 0] = '\0';
  close(fds[0]);
  if (killed || WIFSIGNALED(st)) {
    fmt(why, wn, "%s: still running after %d s (killed): the limits do not stop it", name, seconds);
    return 1;
  }
  return WEXITSTATUS(st) != 0;
}

START_TEST(escape_spec) {
  char why[1024];
  printf("%s\n", g_escape[_i]);
  int bad = check_in_child(g_escape_dir, g_escape[_i], 10, why, sizeof why);
  ck_assert_msg(!bad, "%s", why);
}
END_TEST

START_TEST(known_issue_locations) {
  int n = 0, failed = 0;
  char all[4096] = "";
  for (int i = 0; i < g_nbad; ++i) {
    char path[1200];
    char *text = read_text(path_join(path, sizeof path, g_bad_dir, g_bad[i]));
    expectation e;
    parse_expect(text ? text : "", &e);
    free(text);
    if (!e.issue[0]) continue;
    ++n;
    char why[1024];
    if (check_in_child(g_bad_dir, g_bad[i], 10, why, sizeof why)) {
      ++failed;
      size_t l = strlen(all);
      fmt(all + l, sizeof all - l, "\n  %s [%s]", why, e.issue);
    }
  }
  printf("%d known-issue bad specs, %d still failing\n", n, failed);
  ck_assert_msg(failed == 0, "%d bad spec(s) with a known issue:%s", failed, all);
}
END_TEST

START_TEST(plan_bits_message) {
  /* gen/plan.c quant_ok is called with what = "hq.bits" and formats "%s.bits ...". */
  static hot_layer_plan p;
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = s.out_features = 64;
  s.hq.g.bits = 9;
  char err[256] = "";
  ck_assert_int_ne(plan_layer(&s, 2, 64, HOT_RECIPE_HOT, HOT_ARCH_SM80, 0, &p, err, sizeof err), 0);
  ck_assert_msg(strstr(err, "hq.bits must be in [2, 8] (got 9)") != NULL,
                "planner message \"%s\": expected \"hq.bits must be in [2, 8] (got 9)\"", err);
}
END_TEST

/* ---- modes -------------------------------------------------------------------------------- */

static int run_bad_specs_plain(void) {
  static spec_limits slow;
  slow = spec_default_limits();
  slow.seconds = 60.0;
  g_limits = &slow;
  int failed = 0;
  for (int i = 0; i < g_nbad; ++i) {
    char why[1024];
    printf("%s\n", g_bad[i]);
    if (check_bad_spec(g_bad_dir, g_bad[i], 1, why, sizeof why)) {
      printf("FAIL: %s\n", why);
      ++failed;
    }
  }
  printf("%d bad specs, %d failed\n", g_nbad, failed);
  return failed ? 1 : 0;
}

static int run_under_valgrind(const char *self) {
  const char *path = getenv("PATH");
  char vg[1024] = "";
  if (path) {
    char *copy = strdup(path);
    for (char *dir = strtok(copy, ":"); dir && !vg[0]; dir = strtok(NULL, ":")) {
      char cand[1024];
      fmt(cand, sizeof cand, "%s/valgrind", dir);
      if (access(cand, X_OK) == 0) fmt(vg, sizeof vg, "%s", cand);
    }
    free(copy);
  }
  if (!vg[0]) {
    printf("SKIP: valgrind not installed\n");
    return 77;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    execl(vg, "valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect", self,
          "--bad-specs", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  printf("valgrind %s --bad-specs: exit %d (%s)\n", self, rc,
         rc == 0 ? "no errors, no leaks" : rc == 99 ? "memory errors or leaks" : "failed");
  return rc == 0 ? 0 : 1;
}

static Suite *spec_suite(void) {
  Suite *s = suite_create("spec");
  TCase *tc = tcase_create("shipped");
  tcase_add_test(tc, shipped_specs_load_and_plan);
  tcase_add_test(tc, dsl_archs_are_the_table);
  tcase_add_test(tc, shipped_spec_shapes);
  suite_add_tcase(s, tc);
  tc = tcase_create("fields");
  tcase_add_test(tc, defaults_per_recipe);
  tcase_add_test(tc, overrides_land);
  tcase_add_test(tc, help_mentions_every_field);
  suite_add_tcase(s, tc);
  tc = tcase_create("bad");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, bad_spec_count);
  tcase_add_loop_test(tc, bad_spec, 0, g_nbad);
  tcase_add_test(tc, bytecode_rejected);
  tcase_add_test(tc, missing_file);
  tcase_add_test(tc, errors_reported_together);
  tcase_add_test(tc, long_path_in_messages);
  tcase_add_test(tc, bom_and_first_line_comment);
  tcase_add_test(tc, sweep_axes_of_every_kind);
  tcase_add_test(tc, sweep_refusals);
  tcase_add_test(tc, seed_range_is_hot_seeds);
  suite_add_tcase(s, tc);
  tc = tcase_create("final");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, mutation_after_validation);
  tcase_add_test(tc, names_and_paths);
  tcase_add_test(tc, hot_gen_stays_inside);
  tcase_add_test(tc, alloc_failures_are_nomem);
  tcase_add_test(tc, runtime_nomem);
  suite_add_tcase(s, tc);
  tc = tcase_create("limits");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, loop_bounded_time);
  tcase_add_test(tc, memory_limit_configurable);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *known_issues_suite(void) {
  Suite *s = suite_create("spec_known_issues");
  TCase *tc = tcase_create("escapes");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, escape_spec, 0, g_nescape);
  tcase_add_test(tc, known_issue_locations);
  tcase_add_test(tc, plan_bits_message);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  find_files();
  if (argc > 1 && strcmp(argv[1], "--bad-specs") == 0) return run_bad_specs_plain();
  if (argc > 1 && strcmp(argv[1], "--valgrind") == 0) {
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = '\0';
    return run_under_valgrind(self);
  }
  int known = argc > 1 && strcmp(argv[1], "--known-issues") == 0;
  SRunner *sr = srunner_create(known ? known_issues_suite() : spec_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

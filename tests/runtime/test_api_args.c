/* test_api_args.c — every function of hot.h called with bad arguments, from one table. The
 * HOT_API declarations are read from runtime/include/hot.h when the test runs (name and
 * parameter names), and the suite fails when a declared function has no case in the table, when
 * a case names a function hot.h does not declare, or when a case's argument is not one of its
 * function's parameters: a function added to hot.h without a case here fails this test.
 * Each case calls its function with one bad argument (NULL, a size < 1 or whose product
 * overflows, an enum out of range, a dtype other than the layer's, a misaligned, overlapping or
 * host buffer, a destroyed layer, a layer of another context, a failed context, a backward
 * before any save, too long or non-ASCII strings) and checks the status hot.h documents and,
 * where the function has a message (hot_errmsg of the context, the err buffer of
 * hot_capture_write), that it is one non-empty line naming the argument. Functions without a
 * message (no context reachable, or no status) are checked for their documented result. The
 * CPU backend and the recording fake driver (fake_cuda.c, for the checks of device pointers)
 * run it; HOT_SOURCE_DIR locates hot.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "cuda_api.h"
#include "hot_internal.h" /* ctx_create_with_compiler: the fake compiler for the fake driver */
#include "rt_util.h"

/* ---- hot.h's declarations -------------------------------------------------------------------- */

#define MAX_FNS 128
#define MAX_PARAMS 16

typedef struct {
  char name[64];
  int n_params;
  char params[MAX_PARAMS][32];
} api_fn;

static api_fn g_fns[MAX_FNS];
static int g_n_fns;

/* The last identifier of s[0 .. n) (a parameter's name after its type), or "" when none. */
static void last_ident(const char *s, size_t n, char out[32]) {
  size_t e = n;
  while (e > 0 && !(isalnum((unsigned char)s[e - 1]) || s[e - 1] == '_')) --e;
  size_t b = e;
  while (b > 0 && (isalnum((unsigned char)s[b - 1]) || s[b - 1] == '_')) --b;
  snprintf(out, 32, "%.*s", (int)(e - b), s + b);
}

/* Every declaration starting "HOT_API " at the beginning of a line of text: the function name
 * (the identifier before the first '(') and its parameters' names ("void": none). */
static void parse_api(const char *text) {
  for (const char *p = text; (p = strstr(p, "HOT_API ")) != NULL; p += 8) {
    if (p != text && p[-1] != '\n') continue; /* the macro's own definition and comments */
    const char *open = strchr(p, '('), *close = open ? strchr(open, ')') : NULL;
    ck_assert_msg(open && close && g_n_fns < MAX_FNS, "hot.h: cannot parse '%.40s'", p);
    api_fn *f = &g_fns[g_n_fns++];
    memset(f, 0, sizeof *f);
    last_ident(p, (size_t)(open - p), f->name);
    for (const char *a = open + 1; a < close;) {
      const char *end = a;
      while (end < close && *end != ',') ++end;
      char id[32];
      last_ident(a, (size_t)(end - a), id);
      if (strcmp(id, "void") != 0) {
        ck_assert_int_lt(f->n_params, MAX_PARAMS);
        snprintf(f->params[f->n_params++], 32, "%s", id);
      }
      a = end + 1;
    }
  }
}

static char *read_text(const char *path) {
  FILE *fp = fopen(path, "rb");
  ck_assert_msg(fp != NULL, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_uint_eq(fread(s, 1, (size_t)n, fp), (size_t)n);
  s[n] = '\0';
  fclose(fp);
  return s;
}

static const api_fn *find_fn(const char *name) {
  for (int i = 0; i < g_n_fns; ++i)
    if (!strcmp(g_fns[i].name, name)) return &g_fns[i];
  return NULL;
}

/* ---- the fixture ------------------------------------------------------------------------- */

enum { B = 2, L = 32, T = B * L, O = 24, I = 40 };

typedef struct {
  char dir[256], spec[512], pack[512];
  hot_ctx *cpu, *other, *failed, *cuda;
  hot_layer *l;       /* cpu: f32, bias, g' scale auto; saved once */
  hot_layer *fresh;   /* cpu: never saved */
  hot_layer *nobias;  /* cpu: bias = false, g' per token (calibration refused) */
  hot_layer *dead;    /* cpu: destroyed */
  hot_layer *foreign; /* of `other` */
  hot_layer *cl;      /* cuda (fake driver) */
  float *x, *w, *gy, *gx, *gw, *gb;
  unsigned char *saved; /* 16-byte aligned, hot_layer_saved_bytes(l) + 32 bytes */
  CUdeviceptr dx, dw, dgy, dgx, dgw, dgb, dsv; /* the fake driver's "device" memory */
  const cuda_driver *drv;
} fx;

static fake_cc g_fcc = {0, 0, 0, "fake-1", 0};

static hot_compiler g_cc = FAKE_ELF_COMPILER(g_fcc); /* the fake driver loads its "cubin" */

static hot_layer *new_layer(hot_ctx *ctx, const char *name, int bias, hot_gran g) {
  hot_layer_spec s;
  ck_assert_int_eq(hot_layer_spec_defaults(&s, HOT_RECIPE_HOT), HOT_OK);
  snprintf(s.name, sizeof s.name, "%s", name);
  s.in_features = I;
  s.out_features = O;
  s.bias = bias;
  s.hq.g.gran = g;
  hot_layer *l = NULL;
  ck_assert_msg(hot_layer_create(ctx, &s, B, L, HOT_RECIPE_HOT, &l) == HOT_OK, "%s",
                hot_errmsg(ctx));
  return l;
}

static CUdeviceptr dalloc(const fx *f, size_t n) {
  CUdeviceptr p = 0;
  ck_assert_int_eq(f->drv->cuMemAlloc(&p, n), CUDA_SUCCESS);
  return p;
}

static void fx_init(fx *f) {
  memset(f, 0, sizeof *f);
  ck_assert_ptr_nonnull(tmp_dir(f->dir));
  au_write_spec(f->dir, f->spec, sizeof f->spec);
  snprintf(f->pack, sizeof f->pack, "%s/not_a_pack.bin", f->dir);
  FILE *fp = fopen(f->pack, "wb");
  ck_assert_ptr_nonnull(fp);
  fputs("not a kernel pack\n", fp);
  fclose(fp);
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  ck_assert_int_eq(hot_ctx_create(&f->cpu, &o), HOT_OK);
  ck_assert_int_eq(hot_ctx_create(&f->other, &o), HOT_OK);
  o.device = -7;
  ck_assert_int_eq(hot_ctx_create(&f->failed, &o), HOT_ERR_INVALID);
  ck_assert_ptr_nonnull(f->failed);
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CUDA;
  o.disk_cache = -1;
  ck_assert_msg(ctx_create_with_compiler(&f->cuda, &o, &g_cc) == HOT_OK, "%s", hot_errmsg(f->cuda));
  char err[256];
  ck_assert_msg(cuda_driver_get(&f->drv, err, sizeof err) == RT_OK, "%s", err);

  f->l = new_layer(f->cpu, "args", 1, HOT_GRAN_AUTO);
  f->fresh = new_layer(f->cpu, "fresh", 1, HOT_GRAN_AUTO);
  f->nobias = new_layer(f->cpu, "nobias", 0, HOT_GRAN_ROW);
  f->dead = new_layer(f->cpu, "dead", 1, HOT_GRAN_AUTO);
  hot_layer_destroy(f->dead);
  f->foreign = new_layer(f->other, "foreign", 1, HOT_GRAN_AUTO);
  f->cl = new_layer(f->cuda, "device", 1, HOT_GRAN_AUTO);

  f->x = calloc((size_t)T * I, 4);
  f->w = calloc((size_t)O * I, 4);
  f->gy = calloc((size_t)T * O, 4);
  f->gx = calloc((size_t)T * I, 4);
  f->gw = calloc((size_t)O * I, 4);
  f->gb = calloc(O, 4);
  au_fill(1, f->x, (int64_t)T * I);
  au_fill(2, f->w, (int64_t)O * I);
  au_fill(3, f->gy, (int64_t)T * O);
  f->saved = aligned_alloc(16, (hot_layer_saved_bytes(f->l) + 32 + 15) / 16 * 16);
  ck_assert_ptr_nonnull(f->saved);
  ck_assert_int_eq(hot_layer_save(f->l, f->x, HOT_DT_F32, NULL, NULL), HOT_OK);

  f->dx = dalloc(f, (size_t)T * I * 4);
  f->dw = dalloc(f, (size_t)O * I * 4);
  f->dgy = dalloc(f, (size_t)T * O * 4);
  f->dgx = dalloc(f, (size_t)T * I * 4);
  f->dgw = dalloc(f, (size_t)O * I * 4);
  f->dgb = dalloc(f, (size_t)O * 4);
  f->dsv = dalloc(f, hot_layer_saved_bytes(f->cl) + 32);
}

static void fx_free(fx *f) {
  hot_ctx_destroy(f->cpu);
  hot_ctx_destroy(f->other);
  hot_ctx_destroy(f->failed);
  hot_ctx_destroy(f->cuda);
  CUdeviceptr d[] = {f->dx, f->dw, f->dgy, f->dgx, f->dgw, f->dgb, f->dsv};
  for (size_t i = 0; i < sizeof d / sizeof d[0]; ++i) f->drv->cuMemFree(d[i]);
  free(f->x);
  free(f->w);
  free(f->gy);
  free(f->gx);
  free(f->gw);
  free(f->gb);
  free(f->saved);
  rm_tree(f->dir);
}

static void *dev(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* ---- the cases ------------------------------------------------------------------------------ */

/* What a case saw: the status (for functions without one: HOT_OK when the documented result
 * came back, else HOT_ERR_INTERNAL) and the message (NULL: the function has none). */
typedef struct {
  hot_status st;
  char msg[HOT_MSG_MAX + 64];
  int has_msg;
} got;

static void from_ctx(got *g, hot_status st, const hot_ctx *ctx) {
  g->st = st;
  g->has_msg = 1;
  snprintf(g->msg, sizeof g->msg, "%s", hot_errmsg(ctx));
}

static void no_msg(got *g, hot_status st) {
  g->st = st;
  g->has_msg = 0;
}

static void result(got *g, int as_documented) {
  no_msg(g, as_documented ? HOT_OK : HOT_ERR_INTERNAL);
}

#define CTX(call, ctx) from_ctx(g, (call), (ctx))
#define NOMSG(call) no_msg(g, (call))

/* status and names */
static void status_name_neg(fx *f, got *g) {
  (void)f;
  result(g, !strcmp(hot_status_name((hot_status)-1), "HOT_ERR_?"));
}
static void status_name_count(fx *f, got *g) {
  (void)f;
  result(g, !strcmp(hot_status_name(HOT_STATUS_COUNT), "HOT_ERR_?"));
}
static void backend_name_bad(fx *f, got *g) {
  (void)f;
  result(g, !strcmp(hot_backend_name((hot_backend)9), "?"));
}
static void backend_name_neg(fx *f, got *g) {
  (void)f;
  result(g, !strcmp(hot_backend_name((hot_backend)-1), "?"));
}

/* options and contexts */
static void options_init_null(fx *f, got *g) {
  (void)f;
  hot_options_init(NULL);
  result(g, 1);
}

static void create_out_null(fx *f, got *g) {
  (void)f;
  NOMSG(hot_ctx_create(NULL, NULL));
}

/* hot_ctx_create with o changed by `set`: the status and the failed context's message. */
static void create_with(got *g, void (*set)(hot_options *)) {
  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  set(&o);
  hot_ctx *c = (hot_ctx *)&o; /* overwritten: *out is always set */
  hot_status st = hot_ctx_create(&c, &o);
  CTX(st, c);
  hot_ctx_destroy(c);
}
static void set_backend(hot_options *o) { o->backend = (hot_backend)9; }
static void set_backend_neg(hot_options *o) { o->backend = (hot_backend)-3; }
static void set_device(hot_options *o) { o->device = -2; }
static void set_arch(hot_options *o) { o->arch = "sm_99x"; }
static void set_arch_long(hot_options *o) {
  static char a[4096];
  memset(a, 'a', sizeof a - 1);
  o->arch = a;
}
static void set_arch_utf8(hot_options *o) { o->arch = "sm_\xff\xfe\n9"; }
static void set_disk(hot_options *o) { o->disk_cache = 2; }
static void set_seed(hot_options *o) { o->seed_set = -1; }
static void set_jit_debug(hot_options *o) { o->jit_debug = 5; }
/* create_NAME: hot_ctx_create with set_NAME's bad option */
#define CREATE_CASE(NAME)                                                                         \
  static void create_##NAME(fx *f, got *g) {                                                     \
    (void)f;                                                                                     \
    create_with(g, set_##NAME);                                                                  \
  }
CREATE_CASE(backend)
CREATE_CASE(backend_neg)
CREATE_CASE(device)
CREATE_CASE(arch)
CREATE_CASE(arch_long)
CREATE_CASE(arch_utf8)
CREATE_CASE(disk)
CREATE_CASE(seed)
CREATE_CASE(jit_debug)

static void destroy_null(fx *f, got *g) {
  (void)f;
  hot_ctx_destroy(NULL);
  result(g, 1);
}
static void errmsg_null(fx *f, got *g) {
  (void)f;
  result(g, !strcmp(hot_errmsg(NULL), "no context (NULL)"));
}
static void compile_log_null(fx *f, got *g) {
  (void)f;
  result(g, !strcmp(hot_compile_log(NULL), ""));
}
static void backend_null(fx *f, got *g) {
  (void)f;
  result(g, hot_ctx_backend(NULL) == HOT_BACKEND_DEFAULT);
}
static void backend_failed(fx *f, got *g) {
  result(g, hot_ctx_backend(f->failed) == HOT_BACKEND_DEFAULT);
}

static void stats_ctx_null(fx *f, got *g) {
  (void)f;
  hot_stats s;
  NOMSG(hot_ctx_stats(NULL, &s));
}
static void stats_out_null(fx *f, got *g) { CTX(hot_ctx_stats(f->cpu, NULL), f->cpu); }

/* layers from specs */
static hot_layer *g_out_sentinel; /* *out must be NULL after an error */
static void check_out(got *g, hot_layer *out) {
  if (out != NULL && g->st != HOT_OK)
    snprintf(g->msg, sizeof g->msg, "*out not NULL after an error");
}
#define SPEC_CALL(ctx, path, name, batch)                                                          \
  do {                                                                                             \
    hot_layer *out = (hot_layer *)&g_out_sentinel;                                                 \
    CTX(hot_layer_from_spec((ctx), (path), (name), (batch), &out), (ctx));                         \
    check_out(g, out);                                                                             \
    hot_layer_destroy(out);                                                                        \
  } while (0)
static void spec_ctx_null(fx *f, got *g) {
  hot_layer *out;
  NOMSG(hot_layer_from_spec(NULL, f->spec, "fc", 0, &out));
}
static void spec_failed(fx *f, got *g) { SPEC_CALL(f->failed, f->spec, "fc", 0); }
static void spec_path_null(fx *f, got *g) { SPEC_CALL(f->cpu, NULL, "fc", 0); }
static void spec_path_empty(fx *f, got *g) { SPEC_CALL(f->cpu, "", "fc", 0); }
static void spec_path_dir(fx *f, got *g) { SPEC_CALL(f->cpu, f->dir, "fc", 0); }
static void spec_name_null(fx *f, got *g) { SPEC_CALL(f->cpu, f->spec, NULL, 0); }
static void spec_name_long(fx *f, got *g) {
  static char n[3000];
  memset(n, 'q', sizeof n - 1);
  SPEC_CALL(f->cpu, f->spec, n, 0);
}
static void spec_name_utf8(fx *f, got *g) { SPEC_CALL(f->cpu, f->spec, "f\xc3\n\xff", 0); }
static void spec_out_null(fx *f, got *g) {
  CTX(hot_layer_from_spec(f->cpu, f->spec, "fc", 0, NULL), f->cpu);
}
static void spec_batch_neg(fx *f, got *g) { SPEC_CALL(f->cpu, f->spec, "fc", -1); }
static void spec_batch_huge(fx *f, got *g) { SPEC_CALL(f->cpu, f->spec, "fc", INT64_MAX); }

/* layers described in C */
static void spec_defaults_null(fx *f, got *g) {
  (void)f;
  NOMSG(hot_layer_spec_defaults(NULL, HOT_RECIPE_HOT));
}
static void spec_defaults_recipe(fx *f, got *g) {
  (void)f;
  hot_layer_spec s, before;
  memset(&s, 0x5a, sizeof s);
  before = s;
  NOMSG(hot_layer_spec_defaults(&s, (hot_recipe)4));
  if (memcmp(&s, &before, sizeof s)) g->st = HOT_ERR_INTERNAL; /* *spec untouched */
}
static void spec_defaults_recipe_neg(fx *f, got *g) {
  (void)f;
  hot_layer_spec s;
  NOMSG(hot_layer_spec_defaults(&s, (hot_recipe)-1));
}

static hot_layer_spec good_spec(void) {
  hot_layer_spec s;
  au_spec(&s, HOT_RECIPE_HOT, "bad", I, O);
  return s;
}

/* hot_layer_create (which = 0), _with_id (1, id) or _named (2, stream) with the given spec. */
static void create3(fx *f, got *g, int which, hot_ctx *ctx, const hot_layer_spec *s, int64_t batch,
                    int64_t tokens, hot_recipe r, int id, const char *stream, int out_null) {
  (void)f;
  hot_layer *out = (hot_layer *)&g_out_sentinel;
  hot_layer **po = out_null ? NULL : &out;
  hot_status st = which == 0   ? hot_layer_create(ctx, s, batch, tokens, r, po)
                  : which == 1 ? hot_layer_create_with_id(ctx, s, batch, tokens, r, id, po)
                               : hot_layer_create_named(ctx, s, batch, tokens, r, stream, po);
  if (ctx)
    CTX(st, ctx);
  else
    NOMSG(st);
  if (!out_null) check_out(g, out);
  if (!out_null && st == HOT_OK) hot_layer_destroy(out);
}

#define C0(ctx, s, b, t, r) create3(f, g, 0, (ctx), (s), (b), (t), (r), 0, NULL, 0)
static void create_ctx_null(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(NULL, &s, B, L, HOT_RECIPE_HOT);
}
static void create_failed(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(f->failed, &s, B, L, HOT_RECIPE_HOT);
}
static void create_spec_null(fx *f, got *g) { C0(f->cpu, NULL, B, L, HOT_RECIPE_HOT); }
static void create_out_null_l(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  create3(f, g, 0, f->cpu, &s, B, L, HOT_RECIPE_HOT, 0, NULL, 1);
}
static void create_batch0(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(f->cpu, &s, 0, L, HOT_RECIPE_HOT);
}
static void create_tokens_neg(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(f->cpu, &s, B, -5, HOT_RECIPE_HOT);
}
static void create_bl_overflow(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(f->cpu, &s, INT64_C(1) << 40, INT64_C(1) << 40, HOT_RECIPE_HOT);
}
static void create_bl_max(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(f->cpu, &s, INT64_MAX, INT64_MAX, HOT_RECIPE_HOT);
}
static void create_in0(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  s.in_features = 0;
  C0(f->cpu, &s, B, L, HOT_RECIPE_HOT);
}
static void create_out_huge(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  s.out_features = INT64_MAX;
  C0(f->cpu, &s, B, L, HOT_RECIPE_HOT);
}
static void create_to_overflow(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  s.out_features = INT32_MAX - 15; /* T and O near the kernels' limit: T * O near 2^62 */
  C0(f->cpu, &s, 1, INT32_MAX, HOT_RECIPE_HOT);
}
static void create_recipe(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(f->cpu, &s, B, L, (hot_recipe)7);
}
static void create_recipe_neg(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C0(f->cpu, &s, B, L, (hot_recipe)-1);
}
static void create_dtype(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  s.dtype = (hot_dtype)9;
  C0(f->cpu, &s, B, L, HOT_RECIPE_HOT);
}
static void create_bias(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  s.bias = 2;
  C0(f->cpu, &s, B, L, HOT_RECIPE_HOT);
}
static void create_round(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  s.hq.g.round = (hot_round)7;
  C0(f->cpu, &s, B, L, HOT_RECIPE_HOT);
}
static void create_name_unterminated(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  memset(s.name, 'n', sizeof s.name); /* no NUL: read as HOT_NAME_MAX - 1 bytes */
  s.in_features = -1;
  C0(f->cpu, &s, B, L, HOT_RECIPE_HOT);
}

#define C1(ctx, s, id) create3(f, g, 1, (ctx), (s), B, L, HOT_RECIPE_HOT, (id), NULL, 0)
static void with_id_ctx_null(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C1(NULL, &s, 1);
}
static void with_id_spec_null(fx *f, got *g) { C1(f->cpu, NULL, 1); }
static void with_id_neg(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C1(f->cpu, &s, -1);
}
static void with_id_big(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C1(f->cpu, &s, 1 << 27);
}
static void with_id_out_null(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  create3(f, g, 1, f->cpu, &s, B, L, HOT_RECIPE_HOT, 1, NULL, 1);
}
static void with_id_batch(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  create3(f, g, 1, f->cpu, &s, -1, L, HOT_RECIPE_HOT, 1, NULL, 0);
}
static void with_id_recipe(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  create3(f, g, 1, f->cpu, &s, B, L, (hot_recipe)5, 1, NULL, 0);
}

#define C2(ctx, s, stream) create3(f, g, 2, (ctx), (s), B, L, HOT_RECIPE_HOT, 0, (stream), 0)
static void named_ctx_null(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C2(NULL, &s, "a");
}
static void named_spec_null(fx *f, got *g) { C2(f->cpu, NULL, "a"); }
static void named_stream_null(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C2(f->cpu, &s, NULL);
}
static void named_stream_empty(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  C2(f->cpu, &s, "");
}
static void named_out_null(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  create3(f, g, 2, f->cpu, &s, B, L, HOT_RECIPE_HOT, 0, "a", 1);
}
static void named_tokens(fx *f, got *g) {
  hot_layer_spec s = good_spec();
  create3(f, g, 2, f->cpu, &s, B, 0, HOT_RECIPE_HOT, 0, "a", 0);
}

static void layer_destroy_null(fx *f, got *g) {
  (void)f;
  hot_layer_destroy(NULL);
  result(g, 1);
}
static void layer_destroy_dead(fx *f, got *g) {
  hot_layer_destroy(f->dead);
  result(g, hot_layer_saved_bytes(f->dead) == 0);
}

/* queries */
static void info_null(fx *f, got *g) {
  (void)f;
  hot_layer_info i;
  NOMSG(hot_layer_get_info(NULL, &i));
}
static void info_out_null(fx *f, got *g) { CTX(hot_layer_get_info(f->l, NULL), f->cpu); }
static void info_dead(fx *f, got *g) {
  hot_layer_info i;
  CTX(hot_layer_get_info(f->dead, &i), f->cpu);
}
static void get_spec_null(fx *f, got *g) {
  (void)f;
  hot_layer_spec s;
  NOMSG(hot_layer_get_spec(NULL, &s));
}
static void get_spec_out_null(fx *f, got *g) { CTX(hot_layer_get_spec(f->l, NULL), f->cpu); }
static void get_spec_dead(fx *f, got *g) {
  hot_layer_spec s;
  CTX(hot_layer_get_spec(f->dead, &s), f->cpu);
}
static void plan_null(fx *f, got *g) {
  (void)f;
  result(g, hot_layer_get_plan(NULL) == NULL);
}
static void plan_dead(fx *f, got *g) { result(g, hot_layer_get_plan(f->dead) == NULL); }
static void saved_bytes_null(fx *f, got *g) {
  (void)f;
  result(g, hot_layer_saved_bytes(NULL) == 0);
}
static void saved_bytes_dead(fx *f, got *g) { result(g, hot_layer_saved_bytes(f->dead) == 0); }

/* JIT, packs */
static void compile_null(fx *f, got *g) {
  (void)f;
  NOMSG(hot_layer_compile(NULL));
}
static void compile_dead(fx *f, got *g) { CTX(hot_layer_compile(f->dead), f->cpu); }
static void ctx_compile_null(fx *f, got *g) { NOMSG(hot_ctx_compile(NULL, &f->l, 1)); }
static void ctx_compile_failed(fx *f, got *g) {
  CTX(hot_ctx_compile(f->failed, &f->l, 1), f->failed);
}
static void ctx_compile_layers_null(fx *f, got *g) {
  CTX(hot_ctx_compile(f->cpu, NULL, 2), f->cpu);
}
static void ctx_compile_elem_null(fx *f, got *g) {
  hot_layer *ls[] = {f->l, NULL};
  CTX(hot_ctx_compile(f->cpu, ls, 2), f->cpu);
}
static void ctx_compile_foreign(fx *f, got *g) {
  hot_layer *ls[] = {f->l, f->foreign};
  CTX(hot_ctx_compile(f->cpu, ls, 2), f->cpu);
}
static void ctx_compile_dead(fx *f, got *g) {
  hot_layer *ls[] = {f->dead};
  CTX(hot_ctx_compile(f->cpu, ls, 1), f->cpu);
}
static void pack_ctx_null(fx *f, got *g) { NOMSG(hot_ctx_load_pack(NULL, f->pack)); }
static void pack_failed(fx *f, got *g) { CTX(hot_ctx_load_pack(f->failed, f->pack), f->failed); }
static void pack_path_null(fx *f, got *g) { CTX(hot_ctx_load_pack(f->cpu, NULL), f->cpu); }
static void pack_path_empty(fx *f, got *g) { CTX(hot_ctx_load_pack(f->cpu, ""), f->cpu); }
static void pack_missing(fx *f, got *g) {
  CTX(hot_ctx_load_pack(f->cpu, "/nonexistent/k.pack"), f->cpu);
}
static void pack_dir(fx *f, got *g) { CTX(hot_ctx_load_pack(f->cpu, f->dir), f->cpu); }
static void pack_garbage(fx *f, got *g) { CTX(hot_ctx_load_pack(f->cpu, f->pack), f->cpu); }

/* per step */
#define CPU(call) CTX((call), f->cpu)
#define DEV(call) CTX((call), f->cuda)
static void *misaligned(fx *f) { return f->saved + 8; }
static void save_null(fx *f, got *g) { NOMSG(hot_layer_save(NULL, f->x, HOT_DT_F32, NULL, NULL)); }
static void save_dead(fx *f, got *g) { CPU(hot_layer_save(f->dead, f->x, HOT_DT_F32, NULL, NULL)); }
static void save_x_null(fx *f, got *g) { CPU(hot_layer_save(f->l, NULL, HOT_DT_F32, NULL, NULL)); }
static void save_dtype_range(fx *f, got *g) {
  CPU(hot_layer_save(f->l, f->x, (hot_dtype)5, NULL, NULL));
}
static void save_dtype_neg(fx *f, got *g) {
  CPU(hot_layer_save(f->l, f->x, (hot_dtype)-1, NULL, NULL));
}
static void save_dtype_other(fx *f, got *g) {
  CPU(hot_layer_save(f->l, f->x, HOT_DT_BF16, NULL, NULL));
}
static void save_saved_misaligned(fx *f, got *g) {
  CPU(hot_layer_save(f->l, f->x, HOT_DT_F32, misaligned(f), NULL));
}
static void save_saved_overlap(fx *f, got *g) {
  CPU(hot_layer_save(f->l, f->x, HOT_DT_F32, f->x + 4, NULL));
}
static void save_x_host_cuda(fx *f, got *g) {
  DEV(hot_layer_save(f->cl, f->x, HOT_DT_F32, NULL, NULL));
}
static void save_x_misaligned_cuda(fx *f, got *g) {
  DEV(hot_layer_save(f->cl, dev(f->dx + 4), HOT_DT_F32, NULL, NULL));
}
static void save_saved_host_cuda(fx *f, got *g) {
  DEV(hot_layer_save(f->cl, dev(f->dx), HOT_DT_F32, f->saved, NULL));
}

#define BWD(l, gy, w, dt, sv, gx, gw, gb)                                                          \
  CPU(hot_layer_backward((l), (gy), (w), (dt), (sv), (gx), (gw), (gb), 0, NULL))
static void bwd_null(fx *f, got *g) {
  NOMSG(hot_layer_backward(NULL, f->gy, f->w, HOT_DT_F32, NULL, f->gx, f->gw, f->gb, 0, NULL));
}
static void bwd_dead(fx *f, got *g) {
  BWD(f->dead, f->gy, f->w, HOT_DT_F32, NULL, f->gx, f->gw, f->gb);
}
static void bwd_gy_null(fx *f, got *g) {
  BWD(f->l, NULL, f->w, HOT_DT_F32, NULL, f->gx, f->gw, f->gb);
}
static void bwd_w_null(fx *f, got *g) {
  BWD(f->l, f->gy, NULL, HOT_DT_F32, NULL, f->gx, f->gw, f->gb);
}
/* no output asked for (each alone may be NULL: that output is not computed) */
static void bwd_outputs_null(fx *f, got *g) {
  BWD(f->l, f->gy, f->w, HOT_DT_F32, NULL, NULL, NULL, NULL);
}
static void bwd_dtype(fx *f, got *g) {
  BWD(f->l, f->gy, f->w, (hot_dtype)3, NULL, f->gx, f->gw, f->gb);
}
static void bwd_dtype_other(fx *f, got *g) {
  BWD(f->l, f->gy, f->w, HOT_DT_F16, NULL, f->gx, f->gw, f->gb);
}
static void bwd_gb_nobias(fx *f, got *g) {
  float *gy = calloc((size_t)T * O, 4);
  ck_assert_int_eq(hot_layer_save(f->nobias, f->x, HOT_DT_F32, NULL, NULL), HOT_OK);
  BWD(f->nobias, gy, f->w, HOT_DT_F32, NULL, f->gx, f->gw, f->gb);
  free(gy);
}
static void bwd_saved_misaligned(fx *f, got *g) {
  BWD(f->l, f->gy, f->w, HOT_DT_F32, misaligned(f), f->gx, f->gw, f->gb);
}
/* saved is read by g_w alone: without g_w a misaligned one is not looked at (accepted) */
static void bwd_saved_misaligned_nogw(fx *f, got *g) {
  NOMSG(hot_layer_backward(f->l, f->gy, f->w, HOT_DT_F32, misaligned(f), f->gx, NULL, f->gb, 0,
                           NULL));
}
static void bwd_gx_overlap(fx *f, got *g) {
  float *buf = calloc((size_t)T * I + (size_t)T * O, 4);
  BWD(f->l, buf, f->w, HOT_DT_F32, NULL, buf + T * O - 1, f->gw, f->gb);
  free(buf);
}
static void bwd_gb_overlap(fx *f, got *g) {
  BWD(f->l, f->gy, f->w, HOT_DT_F32, NULL, f->gx, f->gw, f->gw + 3);
}
static void bwd_before_save(fx *f, got *g) {
  BWD(f->fresh, f->gy, f->w, HOT_DT_F32, NULL, f->gx, f->gw, f->gb);
}
static void bwd_gx_host_cuda(fx *f, got *g) {
  DEV(hot_layer_backward(f->cl, dev(f->dgy), dev(f->dw), HOT_DT_F32, dev(f->dsv), f->gx,
                         (float *)dev(f->dgw), (float *)dev(f->dgb), 0, NULL));
}
static void bwd_w_host_cuda(fx *f, got *g) {
  DEV(hot_layer_backward(f->cl, dev(f->dgy), f->w, HOT_DT_F32, dev(f->dsv), (float *)dev(f->dgx),
                         (float *)dev(f->dgw), (float *)dev(f->dgb), 0, NULL));
}
static void bwd_gb_host_cuda(fx *f, got *g) {
  DEV(hot_layer_backward(f->cl, dev(f->dgy), dev(f->dw), HOT_DT_F32, dev(f->dsv),
                         (float *)dev(f->dgx), (float *)dev(f->dgw), f->gb, 0, NULL));
}
static void bwd_gw_misaligned_cuda(fx *f, got *g) {
  DEV(hot_layer_backward(f->cl, dev(f->dgy), dev(f->dw), HOT_DT_F32, dev(f->dsv),
                         (float *)dev(f->dgx), (float *)dev(f->dgw + 8), (float *)dev(f->dgb), 0,
                         NULL));
}
static void bwd_saved_misaligned_cuda(fx *f, got *g) {
  DEV(hot_layer_backward(f->cl, dev(f->dgy), dev(f->dw), HOT_DT_F32, dev(f->dsv + 4),
                         (float *)dev(f->dgx), (float *)dev(f->dgw), (float *)dev(f->dgb), 0,
                         NULL));
}

static void cal_null(fx *f, got *g) {
  NOMSG(hot_layer_calibrate(NULL, f->gy, HOT_DT_F32, 0, NULL));
}
static void cal_dead(fx *f, got *g) {
  CPU(hot_layer_calibrate(f->dead, f->gy, HOT_DT_F32, 0, NULL));
}
static void cal_gy_null(fx *f, got *g) {
  CPU(hot_layer_calibrate(f->l, NULL, HOT_DT_F32, 0, NULL));
}
static void cal_dtype(fx *f, got *g) {
  CPU(hot_layer_calibrate(f->l, f->gy, (hot_dtype)3, 0, NULL));
}
static void cal_gy_host_cuda(fx *f, got *g) {
  DEV(hot_layer_calibrate(f->cl, f->gy, HOT_DT_F32, 0, NULL));
}
static void cal_gy_misaligned_cuda(fx *f, got *g) {
  DEV(hot_layer_calibrate(f->cl, dev(f->dgy + 2), HOT_DT_F32, 0, NULL));
}
static void cal_fixed(fx *f, got *g) {
  CPU(hot_layer_calibrate(f->nobias, f->gy, HOT_DT_F32, 0, NULL));
}

static void check_null(fx *f, got *g) {
  (void)f;
  NOMSG(hot_layer_check(NULL));
}
static void check_dead(fx *f, got *g) { CPU(hot_layer_check(f->dead)); }

/* profiling, threads */
static void prof_null(fx *f, got *g) {
  (void)f;
  NOMSG(hot_ctx_set_profiling(NULL, 1));
}
static void prof_failed(fx *f, got *g) { CTX(hot_ctx_set_profiling(f->failed, 1), f->failed); }
static void prof_cpu(fx *f, got *g) { CPU(hot_ctx_set_profiling(f->cpu, 1)); }
static void times_null(fx *f, got *g) {
  (void)f;
  int n;
  NOMSG(hot_layer_kernel_times(NULL, NULL, 0, &n));
}
static void times_dead(fx *f, got *g) {
  int n;
  CPU(hot_layer_kernel_times(f->dead, NULL, 0, &n));
}
static void times_n_null(fx *f, got *g) { DEV(hot_layer_kernel_times(f->cl, NULL, 0, NULL)); }
static void times_max_neg(fx *f, got *g) {
  int n;
  hot_kernel_time t[2];
  DEV(hot_layer_kernel_times(f->cl, t, -1, &n));
}
static void times_out_null(fx *f, got *g) {
  int n;
  DEV(hot_layer_kernel_times(f->cl, NULL, 2, &n));
}
static void times_cpu(fx *f, got *g) {
  int n;
  CPU(hot_layer_kernel_times(f->l, NULL, 0, &n));
}

static void omp_empty(fx *f, got *g) {
  (void)f;
  NOMSG(hot_cpu_use_openmp(""));
}
static void omp_long(fx *f, got *g) {
  (void)f;
  char n[HOT_NAME_MAX + 1];
  memset(n, 'o', HOT_NAME_MAX);
  n[HOT_NAME_MAX] = '\0';
  NOMSG(hot_cpu_use_openmp(n));
}
static void omp_not_loaded(fx *f, got *g) {
  (void)f;
  NOMSG(hot_cpu_use_openmp("libhot-no-such-omp.so.9"));
}
static void openmp_cap0(fx *f, got *g) {
  (void)f;
  char buf[4] = "abc";
  int on = hot_cpu_openmp(buf, 0);
  result(g, (on == 0 || on == 1) && !strcmp(buf, "abc") && hot_cpu_openmp(NULL, 0) == on);
}
static void openmp_cap1(fx *f, got *g) {
  (void)f;
  char buf[4] = "abc";
  hot_cpu_openmp(buf, 1);
  result(g, buf[0] == '\0' && buf[1] == 'b');
}

static void threads_null(fx *f, got *g) {
  (void)f;
  NOMSG(hot_ctx_set_cpu_threads(NULL, 1));
}
static void threads_failed(fx *f, got *g) { CTX(hot_ctx_set_cpu_threads(f->failed, 1), f->failed); }
static void threads_neg(fx *f, got *g) { CPU(hot_ctx_set_cpu_threads(f->cpu, -1)); }
static void threads_big(fx *f, got *g) {
  CPU(hot_ctx_set_cpu_threads(f->cpu, HOT_MAX_CPU_THREADS + 1));
}
static void threads_cuda(fx *f, got *g) { DEV(hot_ctx_set_cpu_threads(f->cuda, 1)); }
static void get_threads_null(fx *f, got *g) {
  (void)f;
  int pinned = 5;
  result(g, hot_ctx_cpu_threads(NULL, &pinned) == 0 && pinned == 0);
}
static void get_threads_failed(fx *f, got *g) {
  result(g, hot_ctx_cpu_threads(f->failed, NULL) == 0);
}
static void get_threads_cuda(fx *f, got *g) { result(g, hot_ctx_cpu_threads(f->cuda, NULL) == 0); }
static void regions(fx *f, got *g) {
  (void)f;
  unsigned long long a = hot_cpu_regions();
  result(g, hot_cpu_regions() >= a);
}
static void fallbacks(fx *f, got *g) {
  (void)f;
  unsigned long long a = hot_cpu_openmp_fallbacks();
  result(g, hot_cpu_openmp_fallbacks() >= a);
}

/* captures: the message is written to err */
typedef struct {
  const char *path, *name;
  int64_t b, t, o, i;
  hot_dtype dt;
  const void *x, *w, *gy;
} cap_args;

static void cap_call(fx *f, got *g, void (*set)(fx *, cap_args *)) {
  char path[600];
  snprintf(path, sizeof path, "%s/c.cap", f->dir);
  cap_args a = {path, "fc", B, L, O, I, HOT_DT_F32, f->x, f->w, f->gy};
  set(f, &a);
  char err[HOT_MSG_MAX + 16];
  memset(err, 'Z', sizeof err);
  g->st =
      hot_capture_write(a.path, a.name, a.b, a.t, a.o, a.i, a.dt, a.x, a.w, a.gy, err, HOT_MSG_MAX);
  g->has_msg = 1;
  snprintf(g->msg, sizeof g->msg, "%s", err);
  for (size_t k = HOT_MSG_MAX; k < sizeof err; ++k)
    if (err[k] != 'Z') snprintf(g->msg, sizeof g->msg, "wrote past err[errlen]");
  if (!access(path, F_OK)) snprintf(g->msg, sizeof g->msg, "a file was left at the path");
}
static void s_path_null(fx *f, cap_args *a) {
  (void)f;
  a->path = NULL;
}
static void s_path_empty(fx *f, cap_args *a) {
  (void)f;
  a->path = "";
}
static void s_path_nodir(fx *f, cap_args *a) {
  (void)f;
  a->path = "/nonexistent/dir/c.cap";
}
static void s_name_null(fx *f, cap_args *a) {
  (void)f;
  a->name = NULL;
}
static void s_name_empty(fx *f, cap_args *a) {
  (void)f;
  a->name = "";
}
static void s_name_long(fx *f, cap_args *a) {
  (void)f;
  static char n[HOT_NAME_MAX + 10];
  memset(n, 'l', sizeof n - 1);
  a->name = n;
}
static void s_name_utf8(fx *f, cap_args *a) {
  (void)f;
  a->name = "fc\xc3\xa9";
}
static void s_batch0(fx *f, cap_args *a) {
  (void)f;
  a->b = 0;
}
static void s_tokens_neg(fx *f, cap_args *a) {
  (void)f;
  a->t = -1;
}
static void s_out_big(fx *f, cap_args *a) {
  (void)f;
  a->o = INT64_C(1) << 31;
}
static void s_in_max(fx *f, cap_args *a) {
  (void)f;
  a->i = INT64_MAX;
}
static void s_bl_overflow(fx *f, cap_args *a) {
  (void)f;
  a->b = 1 << 20, a->t = 1 << 20;
}
static void s_dtype(fx *f, cap_args *a) {
  (void)f;
  a->dt = (hot_dtype)3;
}
static void s_x_null(fx *f, cap_args *a) {
  (void)f;
  a->x = NULL;
}
static void s_w_null(fx *f, cap_args *a) {
  (void)f;
  a->w = NULL;
}
static void s_gy_null(fx *f, cap_args *a) {
  (void)f;
  a->gy = NULL;
}
#define CAP(fn, set)                                                                               \
  static void fn(fx *f, got *g) { cap_call(f, g, set); }
CAP(cap_path_null, s_path_null)
CAP(cap_path_empty, s_path_empty)
CAP(cap_path_nodir, s_path_nodir)
CAP(cap_name_null, s_name_null)
CAP(cap_name_empty, s_name_empty)
CAP(cap_name_long, s_name_long)
CAP(cap_name_utf8, s_name_utf8)
CAP(cap_batch0, s_batch0)
CAP(cap_tokens_neg, s_tokens_neg)
CAP(cap_out_big, s_out_big)
CAP(cap_in_max, s_in_max)
CAP(cap_bl_overflow, s_bl_overflow)
CAP(cap_dtype, s_dtype)
CAP(cap_x_null, s_x_null)
CAP(cap_w_null, s_w_null)
CAP(cap_gy_null, s_gy_null)
static void cap_err_null(fx *f, got *g) {
  char path[600];
  snprintf(path, sizeof path, "%s/c.cap", f->dir);
  NOMSG(hot_capture_write(path, "fc", 0, L, O, I, HOT_DT_F32, f->x, f->w, f->gy, NULL, 0));
}

/* ---- the table ---------------------------------------------------------------------------- */

#define NO_MSG "" /* `says` of a case whose function has no message */

typedef struct {
  const char *fn;   /* the function, as hot.h declares it */
  const char *arg;  /* the bad parameter, as hot.h names it ("-": the function has none) */
  hot_status want;  /* documented status (HOT_OK: the documented result of a function without) */
  const char *says; /* what the message must name: NULL = arg itself; NO_MSG: no message */
  void (*run)(fx *, got *);
} api_case;

static const api_case k_cases[] = {
    {"hot_status_name", "s", HOT_OK, NO_MSG, status_name_neg},
    {"hot_status_name", "s", HOT_OK, NO_MSG, status_name_count},
    {"hot_backend_name", "b", HOT_OK, NO_MSG, backend_name_bad},
    {"hot_backend_name", "b", HOT_OK, NO_MSG, backend_name_neg},
    {"hot_options_init", "opt", HOT_OK, NO_MSG, options_init_null},
    {"hot_ctx_create", "out", HOT_ERR_INVALID, NO_MSG, create_out_null},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.backend", create_backend},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.backend", create_backend_neg},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.device", create_device},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.arch", create_arch},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.arch", create_arch_long},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.arch", create_arch_utf8},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.disk_cache", create_disk},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.seed_set", create_seed},
    {"hot_ctx_create", "opt", HOT_ERR_INVALID, "options.jit_debug", create_jit_debug},
    {"hot_ctx_destroy", "ctx", HOT_OK, NO_MSG, destroy_null},
    {"hot_errmsg", "ctx", HOT_OK, NO_MSG, errmsg_null},
    {"hot_compile_log", "ctx", HOT_OK, NO_MSG, compile_log_null},
    {"hot_ctx_backend", "ctx", HOT_OK, NO_MSG, backend_null},
    {"hot_ctx_backend", "ctx", HOT_OK, NO_MSG, backend_failed},
    {"hot_ctx_stats", "ctx", HOT_ERR_INVALID, NO_MSG, stats_ctx_null},
    {"hot_ctx_stats", "out", HOT_ERR_INVALID, NULL, stats_out_null},
    {"hot_layer_from_spec", "ctx", HOT_ERR_INVALID, NO_MSG, spec_ctx_null},
    {"hot_layer_from_spec", "ctx", HOT_ERR_MISUSE, "context", spec_failed},
    {"hot_layer_from_spec", "path", HOT_ERR_INVALID, NULL, spec_path_null},
    {"hot_layer_from_spec", "path", HOT_ERR_IO, NULL, spec_path_empty},
    {"hot_layer_from_spec", "path", HOT_ERR_IO, "not a regular file", spec_path_dir},
    {"hot_layer_from_spec", "layer_name", HOT_ERR_INVALID, NULL, spec_name_null},
    {"hot_layer_from_spec", "layer_name", HOT_ERR_NOT_FOUND, "no layer", spec_name_long},
    {"hot_layer_from_spec", "layer_name", HOT_ERR_NOT_FOUND, "no layer", spec_name_utf8},
    {"hot_layer_from_spec", "out", HOT_ERR_INVALID, NULL, spec_out_null},
    {"hot_layer_from_spec", "batch_override", HOT_ERR_SHAPE, NULL, spec_batch_neg},
    {"hot_layer_from_spec", "batch_override", HOT_ERR_PLAN, "batch", spec_batch_huge},
    {"hot_layer_spec_defaults", "spec", HOT_ERR_INVALID, NO_MSG, spec_defaults_null},
    {"hot_layer_spec_defaults", "recipe", HOT_ERR_INVALID, NO_MSG, spec_defaults_recipe},
    {"hot_layer_spec_defaults", "recipe", HOT_ERR_INVALID, NO_MSG, spec_defaults_recipe_neg},
    {"hot_layer_create", "ctx", HOT_ERR_INVALID, NO_MSG, create_ctx_null},
    {"hot_layer_create", "ctx", HOT_ERR_MISUSE, "context", create_failed},
    {"hot_layer_create", "spec", HOT_ERR_INVALID, NULL, create_spec_null},
    {"hot_layer_create", "out", HOT_ERR_INVALID, NULL, create_out_null_l},
    {"hot_layer_create", "batch", HOT_ERR_SHAPE, NULL, create_batch0},
    {"hot_layer_create", "tokens", HOT_ERR_SHAPE, NULL, create_tokens_neg},
    {"hot_layer_create", "batch", HOT_ERR_PLAN, NULL, create_bl_overflow},
    {"hot_layer_create", "batch", HOT_ERR_PLAN, NULL, create_bl_max},
    {"hot_layer_create", "spec", HOT_ERR_SHAPE, "in_features", create_in0},
    {"hot_layer_create", "spec", HOT_ERR_PLAN, "out_features", create_out_huge},
    {"hot_layer_create", "spec", HOT_ERR_PLAN, "kernels' limit", create_to_overflow},
    {"hot_layer_create", "recipe", HOT_ERR_INVALID, NULL, create_recipe},
    {"hot_layer_create", "recipe", HOT_ERR_INVALID, NULL, create_recipe_neg},
    {"hot_layer_create", "spec", HOT_ERR_INVALID, "spec.dtype", create_dtype},
    {"hot_layer_create", "spec", HOT_ERR_INVALID, "spec.bias", create_bias},
    {"hot_layer_create", "spec", HOT_ERR_INVALID, "spec.hq.g.round", create_round},
    {"hot_layer_create", "spec", HOT_ERR_SHAPE, "in_features", create_name_unterminated},
    {"hot_layer_create_with_id", "ctx", HOT_ERR_INVALID, NO_MSG, with_id_ctx_null},
    {"hot_layer_create_with_id", "spec", HOT_ERR_INVALID, NULL, with_id_spec_null},
    {"hot_layer_create_with_id", "layer_id", HOT_ERR_INVALID, NULL, with_id_neg},
    {"hot_layer_create_with_id", "layer_id", HOT_ERR_INVALID, NULL, with_id_big},
    {"hot_layer_create_with_id", "out", HOT_ERR_INVALID, NULL, with_id_out_null},
    {"hot_layer_create_with_id", "batch", HOT_ERR_SHAPE, NULL, with_id_batch},
    {"hot_layer_create_with_id", "recipe", HOT_ERR_INVALID, NULL, with_id_recipe},
    {"hot_layer_create_named", "ctx", HOT_ERR_INVALID, NO_MSG, named_ctx_null},
    {"hot_layer_create_named", "spec", HOT_ERR_INVALID, NULL, named_spec_null},
    {"hot_layer_create_named", "stream", HOT_ERR_INVALID, NULL, named_stream_null},
    {"hot_layer_create_named", "stream", HOT_ERR_INVALID, NULL, named_stream_empty},
    {"hot_layer_create_named", "out", HOT_ERR_INVALID, NULL, named_out_null},
    {"hot_layer_create_named", "tokens", HOT_ERR_SHAPE, NULL, named_tokens},
    {"hot_layer_destroy", "layer", HOT_OK, NO_MSG, layer_destroy_null},
    {"hot_layer_destroy", "layer", HOT_OK, NO_MSG, layer_destroy_dead},
    {"hot_layer_get_info", "layer", HOT_ERR_INVALID, NO_MSG, info_null},
    {"hot_layer_get_info", "out", HOT_ERR_INVALID, NULL, info_out_null},
    {"hot_layer_get_info", "layer", HOT_ERR_MISUSE, "destroyed", info_dead},
    {"hot_layer_get_spec", "layer", HOT_ERR_INVALID, NO_MSG, get_spec_null},
    {"hot_layer_get_spec", "out", HOT_ERR_INVALID, NULL, get_spec_out_null},
    {"hot_layer_get_spec", "layer", HOT_ERR_MISUSE, "destroyed", get_spec_dead},
    {"hot_layer_get_plan", "layer", HOT_OK, NO_MSG, plan_null},
    {"hot_layer_get_plan", "layer", HOT_OK, NO_MSG, plan_dead},
    {"hot_layer_saved_bytes", "layer", HOT_OK, NO_MSG, saved_bytes_null},
    {"hot_layer_saved_bytes", "layer", HOT_OK, NO_MSG, saved_bytes_dead},
    {"hot_layer_compile", "layer", HOT_ERR_INVALID, NO_MSG, compile_null},
    {"hot_layer_compile", "layer", HOT_ERR_MISUSE, "destroyed", compile_dead},
    {"hot_ctx_compile", "ctx", HOT_ERR_INVALID, NO_MSG, ctx_compile_null},
    {"hot_ctx_compile", "ctx", HOT_ERR_MISUSE, "context", ctx_compile_failed},
    {"hot_ctx_compile", "layers", HOT_ERR_INVALID, NULL, ctx_compile_layers_null},
    {"hot_ctx_compile", "layers", HOT_ERR_INVALID, "layers[1]", ctx_compile_elem_null},
    {"hot_ctx_compile", "layers", HOT_ERR_MISUSE, "another context", ctx_compile_foreign},
    {"hot_ctx_compile", "layers", HOT_ERR_MISUSE, "destroyed", ctx_compile_dead},
    {"hot_ctx_load_pack", "ctx", HOT_ERR_INVALID, NO_MSG, pack_ctx_null},
    {"hot_ctx_load_pack", "ctx", HOT_ERR_MISUSE, "context", pack_failed},
    {"hot_ctx_load_pack", "path", HOT_ERR_INVALID, NULL, pack_path_null},
    {"hot_ctx_load_pack", "path", HOT_ERR_INVALID, NULL, pack_path_empty},
    {"hot_ctx_load_pack", "path", HOT_ERR_IO, "/nonexistent/k.pack", pack_missing},
    {"hot_ctx_load_pack", "path", HOT_ERR_IO, "hot_ctx_load_pack", pack_dir},
    {"hot_ctx_load_pack", "path", HOT_ERR_INVALID, "not_a_pack.bin", pack_garbage},
    {"hot_layer_save", "layer", HOT_ERR_INVALID, NO_MSG, save_null},
    {"hot_layer_save", "layer", HOT_ERR_MISUSE, "destroyed", save_dead},
    {"hot_layer_save", "x", HOT_ERR_INVALID, NULL, save_x_null},
    {"hot_layer_save", "dtype", HOT_ERR_INVALID, NULL, save_dtype_range},
    {"hot_layer_save", "dtype", HOT_ERR_INVALID, NULL, save_dtype_neg},
    {"hot_layer_save", "dtype", HOT_ERR_INVALID, NULL, save_dtype_other},
    {"hot_layer_save", "saved", HOT_ERR_INVALID, NULL, save_saved_misaligned},
    {"hot_layer_save", "saved", HOT_ERR_INVALID, NULL, save_saved_overlap},
    {"hot_layer_save", "x", HOT_ERR_INVALID, NULL, save_x_host_cuda},
    {"hot_layer_save", "saved", HOT_ERR_INVALID, NULL, save_saved_host_cuda},
    {"hot_layer_save", "x", HOT_ERR_INVALID, NULL, save_x_misaligned_cuda},
    {"hot_layer_backward", "layer", HOT_ERR_INVALID, NO_MSG, bwd_null},
    {"hot_layer_backward", "layer", HOT_ERR_MISUSE, "destroyed", bwd_dead},
    {"hot_layer_backward", "g_y", HOT_ERR_INVALID, NULL, bwd_gy_null},
    {"hot_layer_backward", "w", HOT_ERR_INVALID, NULL, bwd_w_null},
    {"hot_layer_backward", "g_x", HOT_ERR_INVALID, NULL, bwd_outputs_null},
    {"hot_layer_backward", "g_w", HOT_ERR_INVALID, NULL, bwd_outputs_null},
    {"hot_layer_backward", "dtype", HOT_ERR_INVALID, NULL, bwd_dtype},
    {"hot_layer_backward", "dtype", HOT_ERR_INVALID, NULL, bwd_dtype_other},
    {"hot_layer_backward", "g_b", HOT_ERR_INVALID, NULL, bwd_gb_nobias},
    {"hot_layer_backward", "saved", HOT_ERR_INVALID, NULL, bwd_saved_misaligned},
    {"hot_layer_backward", "saved", HOT_OK, NO_MSG, bwd_saved_misaligned_nogw},
    {"hot_layer_backward", "g_x", HOT_ERR_INVALID, NULL, bwd_gx_overlap},
    {"hot_layer_backward", "g_b", HOT_ERR_INVALID, NULL, bwd_gb_overlap},
    {"hot_layer_backward", "saved", HOT_ERR_MISUSE, NULL, bwd_before_save},
    {"hot_layer_backward", "g_x", HOT_ERR_INVALID, NULL, bwd_gx_host_cuda},
    {"hot_layer_backward", "saved", HOT_ERR_INVALID, NULL, bwd_saved_misaligned_cuda},
    {"hot_layer_backward", "w", HOT_ERR_INVALID, NULL, bwd_w_host_cuda},
    {"hot_layer_backward", "g_b", HOT_ERR_INVALID, NULL, bwd_gb_host_cuda},
    {"hot_layer_backward", "g_w", HOT_ERR_INVALID, NULL, bwd_gw_misaligned_cuda},
    {"hot_layer_calibrate", "layer", HOT_ERR_INVALID, NO_MSG, cal_null},
    {"hot_layer_calibrate", "layer", HOT_ERR_MISUSE, "destroyed", cal_dead},
    {"hot_layer_calibrate", "g_y", HOT_ERR_INVALID, NULL, cal_gy_null},
    {"hot_layer_calibrate", "dtype", HOT_ERR_INVALID, NULL, cal_dtype},
    {"hot_layer_calibrate", "g_y", HOT_ERR_INVALID, NULL, cal_gy_host_cuda},
    {"hot_layer_calibrate", "g_y", HOT_ERR_INVALID, NULL, cal_gy_misaligned_cuda},
    {"hot_layer_calibrate", "layer", HOT_ERR_MISUSE, "fixed g' scale", cal_fixed},
    {"hot_layer_check", "layer", HOT_ERR_INVALID, NO_MSG, check_null},
    {"hot_layer_check", "layer", HOT_ERR_MISUSE, "destroyed", check_dead},
    {"hot_ctx_set_profiling", "ctx", HOT_ERR_INVALID, NO_MSG, prof_null},
    {"hot_ctx_set_profiling", "ctx", HOT_ERR_MISUSE, "context", prof_failed},
    {"hot_ctx_set_profiling", "on", HOT_ERR_UNSUPPORTED, "CUDA backend", prof_cpu},
    {"hot_layer_kernel_times", "layer", HOT_ERR_INVALID, NO_MSG, times_null},
    {"hot_layer_kernel_times", "layer", HOT_ERR_MISUSE, "destroyed", times_dead},
    {"hot_layer_kernel_times", "n", HOT_ERR_INVALID, NULL, times_n_null},
    {"hot_layer_kernel_times", "max", HOT_ERR_INVALID, NULL, times_max_neg},
    {"hot_layer_kernel_times", "out", HOT_ERR_INVALID, NULL, times_out_null},
    {"hot_layer_kernel_times", "layer", HOT_ERR_UNSUPPORTED, "CUDA backend", times_cpu},
    {"hot_cpu_use_openmp", "runtime", HOT_ERR_INVALID, NO_MSG, omp_empty},
    {"hot_cpu_use_openmp", "runtime", HOT_ERR_INVALID, NO_MSG, omp_long},
    {"hot_cpu_use_openmp", "runtime", HOT_ERR_NOT_FOUND, NO_MSG, omp_not_loaded},
    {"hot_cpu_openmp", "cap", HOT_OK, NO_MSG, openmp_cap0},
    {"hot_cpu_openmp", "cap", HOT_OK, NO_MSG, openmp_cap1},
    {"hot_ctx_set_cpu_threads", "ctx", HOT_ERR_INVALID, NO_MSG, threads_null},
    {"hot_ctx_set_cpu_threads", "ctx", HOT_ERR_MISUSE, "context", threads_failed},
    {"hot_ctx_set_cpu_threads", "n", HOT_ERR_INVALID, NULL, threads_neg},
    {"hot_ctx_set_cpu_threads", "n", HOT_ERR_INVALID, NULL, threads_big},
    {"hot_ctx_set_cpu_threads", "ctx", HOT_ERR_UNSUPPORTED, "GPU", threads_cuda},
    {"hot_ctx_cpu_threads", "ctx", HOT_OK, NO_MSG, get_threads_null},
    {"hot_ctx_cpu_threads", "ctx", HOT_OK, NO_MSG, get_threads_failed},
    {"hot_ctx_cpu_threads", "ctx", HOT_OK, NO_MSG, get_threads_cuda},
    {"hot_cpu_regions", "-", HOT_OK, NO_MSG, regions},
    {"hot_cpu_openmp_fallbacks", "-", HOT_OK, NO_MSG, fallbacks},
    {"hot_capture_write", "path", HOT_ERR_INVALID, NULL, cap_path_null},
    {"hot_capture_write", "path", HOT_ERR_INVALID, NULL, cap_path_empty},
    {"hot_capture_write", "path", HOT_ERR_IO, "/nonexistent/dir/c.cap", cap_path_nodir},
    {"hot_capture_write", "layer_name", HOT_ERR_INVALID, NULL, cap_name_null},
    {"hot_capture_write", "layer_name", HOT_ERR_INVALID, NULL, cap_name_empty},
    {"hot_capture_write", "layer_name", HOT_ERR_INVALID, NULL, cap_name_long},
    {"hot_capture_write", "layer_name", HOT_ERR_INVALID, NULL, cap_name_utf8},
    {"hot_capture_write", "batch", HOT_ERR_SHAPE, NULL, cap_batch0},
    {"hot_capture_write", "tokens", HOT_ERR_SHAPE, NULL, cap_tokens_neg},
    {"hot_capture_write", "out_features", HOT_ERR_SHAPE, NULL, cap_out_big},
    {"hot_capture_write", "in_features", HOT_ERR_SHAPE, NULL, cap_in_max},
    {"hot_capture_write", "batch", HOT_ERR_SHAPE, NULL, cap_bl_overflow},
    {"hot_capture_write", "dtype", HOT_ERR_INVALID, NULL, cap_dtype},
    {"hot_capture_write", "x", HOT_ERR_INVALID, NULL, cap_x_null},
    {"hot_capture_write", "w", HOT_ERR_INVALID, NULL, cap_w_null},
    {"hot_capture_write", "g_y", HOT_ERR_INVALID, NULL, cap_gy_null},
    {"hot_capture_write", "err", HOT_ERR_SHAPE, NO_MSG, cap_err_null},
};

/* 1 when `word` occurs in s with no identifier character right before or after it. */
static int names(const char *s, const char *word) {
  const size_t n = strlen(word);
  for (const char *p = s; (p = strstr(p, word)) != NULL; ++p) {
    const int before = p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
    const int after = isalnum((unsigned char)p[n]) || p[n] == '_';
    if (!before && !after) return 1;
  }
  return 0;
}

/* What is wrong with case c's outcome (NULL: nothing). */
static const char *judge(const api_case *c, const got *g, char *why, size_t n) {
  if (g->st != c->want) {
    snprintf(why, n, "returned %s, hot.h documents %s", hot_status_name(g->st),
             hot_status_name(c->want));
    return why;
  }
  const int wants_msg = !(c->says && !*c->says);
  if (!wants_msg) {
    if (g->has_msg) snprintf(why, n, "has a message, the table says none: '%s'", g->msg);
    return g->has_msg ? why : NULL;
  }
  const char *says = c->says ? c->says : c->arg;
  if (!g->has_msg)
    snprintf(why, n, "no message");
  else if (!*g->msg)
    snprintf(why, n, "empty message");
  else if (strlen(g->msg) >= HOT_MSG_MAX)
    snprintf(why, n, "message of %zu bytes", strlen(g->msg));
  else if (strpbrk(g->msg, "\r\n"))
    snprintf(why, n, "message of more than one line: '%s'", g->msg);
  else if (!names(g->msg, says))
    snprintf(why, n, "message does not name '%s': '%s'", says, g->msg);
  else
    return NULL;
  return why;
}

START_TEST(every_function_has_cases) {
  char path[1024];
  const char *src = getenv("HOT_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/runtime/include/hot.h", src && *src ? src : ".");
  char *text = read_text(path);
  parse_api(text);
  free(text);
  ck_assert_int_ge(g_n_fns, 30); /* the parser found the declarations */
  const int n_cases = (int)(sizeof k_cases / sizeof k_cases[0]);
  int bad = 0;
  for (int i = 0; i < g_n_fns; ++i) {
    int n = 0;
    for (int k = 0; k < n_cases; ++k) n += !strcmp(k_cases[k].fn, g_fns[i].name);
    if (!n) {
      fprintf(stderr, "hot.h declares %s but the table has no bad-argument case for it\n",
              g_fns[i].name);
      ++bad;
    }
  }
  for (int k = 0; k < n_cases; ++k) {
    const api_fn *fn = find_fn(k_cases[k].fn);
    if (!fn) {
      fprintf(stderr, "case %d: hot.h declares no %s\n", k, k_cases[k].fn);
      ++bad;
      continue;
    }
    int found = !strcmp(k_cases[k].arg, "-") && fn->n_params == 0;
    for (int j = 0; j < fn->n_params; ++j) found |= !strcmp(fn->params[j], k_cases[k].arg);
    if (!found) {
      fprintf(stderr, "case %d: %s has no parameter '%s'\n", k, k_cases[k].fn, k_cases[k].arg);
      ++bad;
    }
  }
  ck_assert_msg(bad == 0, "%d problems with the table against hot.h (above)", bad);
}
END_TEST

START_TEST(bad_arguments) {
  fx f;
  fx_init(&f);
  const int n_cases = (int)(sizeof k_cases / sizeof k_cases[0]);
  int bad = 0;
  for (int k = 0; k < n_cases; ++k) {
    const api_case *c = &k_cases[k];
    /* a stale message of an earlier call must not pass for this one */
    hot_stats s;
    hot_ctx *live[] = {f.cpu, f.other, f.cuda};
    for (int j = 0; j < 3; ++j) ck_assert_int_eq(hot_ctx_stats(live[j], &s), HOT_OK);
    got g;
    memset(&g, 0, sizeof g);
    c->run(&f, &g);
    char why[HOT_MSG_MAX + 200];
    if (judge(c, &g, why, sizeof why)) {
      fprintf(stderr, "case %d, %s(%s): %s\n", k, c->fn, c->arg, why);
      ++bad;
    }
  }
  /* the layers are intact: a save and a backward still run */
  ck_assert_int_eq(hot_layer_save(f.l, f.x, HOT_DT_F32, NULL, NULL), HOT_OK);
  ck_assert_int_eq(hot_layer_backward(f.l, f.gy, f.w, HOT_DT_F32, NULL, f.gx, f.gw, f.gb, 1, NULL),
                   HOT_OK);
  fx_free(&f);
  ck_assert_msg(bad == 0, "%d of %d cases failed (above)", bad, n_cases);
}
END_TEST

int main(void) {
  au_suite_env(HOT_FAKE_CUDA);
  Suite *su = suite_create("runtime_api_args");
  TCase *tc = tcase_create("api");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, every_function_has_cases);
  tcase_add_test(tc, bad_arguments);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

/* main.c — hot-gen: validate a spec, print its plan (table or JSON), emit the CUDA sources and
 * compile them with NVRTC into the kernel cache, without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "diag.h"
#include "emit.h"
#include "escape.h"
#include "fileio.h"
#include "num.h"
#include "hot_tools.h" /* libhot's internals: the kernel cache, the JIT, the tuned planner */
#include "plan.h"
#include "spec.h"

#ifndef HOT_VERSION
#define HOT_VERSION "0"
#endif

static const char *k_usage =
    "usage: hot-gen SPEC [options]      (SPEC: a file, a pipe, or - for stdin)\n"
    "\n"
    "Validates a Lua spec, plans every layer, emits specialized CUDA sources and compiles them\n"
    "with NVRTC (no GPU needed). Without an action option, --plan is implied.\n"
    "\n"
    "options:\n"
    "  --plan               validate and print the plan of every layer for every target arch of\n"
    "                       the spec, as a table (default action)\n"
    "  --json               the same plan as one JSON object on stdout (layers[]: one entry per\n"
    "                       arch and layer, each with its \"arch\")\n"
    "  --arch ARCH          plan for ARCH only (one of the archs listed below) instead of\n"
    "                       the spec's target archs (--plan, --json)\n"
    "  --layer NAME         only this layer\n"
    "  --emit DIR           write one .cu per layer and arch (<model>.<layer>.<arch>.cu) plus\n"
    "                       manifest.json into DIR; nothing is ever written outside DIR\n"
    "  --compile ARCHS      compile every emitted kernel to CUBIN for each arch of the\n"
    "                       comma-separated list ('target' = the spec's archs) through the kernel\n"
    "                       cache, and report time, registers and spills per kernel (no item\n"
    "                       empty or listed twice; an arch 'target' also gives is compiled once)\n"
    "  --cache-dir DIR      kernel cache directory (default: $HOT_CACHE_DIR, else\n"
    "                       $XDG_CACHE_HOME/hot, else ~/.cache/hot)\n"
    "  --no-disk-cache      keep compiled kernels in memory only (as HOT_NO_DISK_CACHE=1)\n"
    "  --dump-cubin DIR     with --compile (required): also write each kernel's CUBIN to\n"
    "                       DIR/<kernel>.<arch>.cubin (for cuobjdump)\n"
    "  --pack FILE          with --compile (required): also write every compiled kernel of the\n"
    "                       spec for those archs, with its cache key, into one kernel pack FILE\n"
    "                       (load it with HOT_KERNEL_PACK or hot_ctx_load_pack: no compiles)\n"
    "  --jobs N             concurrent NVRTC compiles (default: $HOT_JIT_THREADS, else the CPUs)\n"
    "  --tune-db FILE       the user tuning database (default: $HOT_TUNE_DB, else\n"
    "                       <cache dir>/tune.db); with the system DB shipped with hot it gives\n"
    "                       each layer the fastest bit-exact GEMM tiles hot-tune recorded for its\n"
    "                       shape (or the nearest); the plan says \"tiles: tuned: <db> <date> ...\"\n"
    "                       or \"default\" (the spec's own tiles always win: \"spec\")\n"
    "  --device NAME        use only tuning rows measured on this CUDA device (default: any\n"
    "                       device of the arch)\n"
    "  --no-tune            ignore the tuning databases (as HOT_TUNE=0)\n"
    "  --help-spec          print every spec field with its kind, range, default and doc\n"
    "  --version            print the version\n"
    "  -h, --help           this text\n"
    "\n"
    "Model and layer names are file-name components: [A-Za-z0-9_][A-Za-z0-9_.-]{0,62}.\n"
    "\n"
    "exit status: 0 success; 1 the spec, a plan or a compile failed (messages on stderr,\n"
    "'file:line: layer 'name': ...'; warnings 'file:line: warning: ...' do not fail);\n"
    "2 bad command line.\n";

typedef struct {
  const char *spec;
  int plan, json, help_spec;
  const char *arch, *layer, *emit_dir, *compile, *cache_dir, *dump_dir, *jobs, *pack;
  const char *tune_db, *device;
  int no_disk, threads, no_tune;
} options;

static int usage_error(const char *fmt, const char *arg) {
  char line[HOT_MSG_MAX]; /* one line, "hot-gen: " included, within the bound */
  int k = snprintf(line, sizeof line, "hot-gen: ");
  fileio_msgf(line + k, sizeof line - (size_t)k, fmt, arg);
  diag_fprintf(stderr, "%s\n(try 'hot-gen --help')\n", line);
  return 2;
}

static int check_compile_list(const char *list);

/* The option that takes a value, named a: the field that receives it, or NULL. */
static const char **value_slot(options *o, const char *a) {
  static const char *const k_names[] = {"--tune-db", "--device", "--arch", "--layer", "--emit",
                                        "--compile", "--cache-dir", "--dump-cubin", "--jobs",
                                        "--pack"};
  const char **slots[] = {&o->tune_db, &o->device, &o->arch, &o->layer, &o->emit_dir,
                          &o->compile, &o->cache_dir, &o->dump_dir, &o->jobs, &o->pack};
  _Static_assert(sizeof k_names / sizeof k_names[0] == sizeof slots / sizeof slots[0],
                 "one field per option");
  for (size_t k = 0; k < sizeof slots / sizeof slots[0]; ++k)
    if (!strcmp(a, k_names[k])) return slots[k];
  return NULL;
}

/* The options checked together once all are read. 0, or usage_error's status. */
static int check_args(options *o) {
  if (!o->spec && !o->help_spec) return usage_error("%s", "no spec given");
  if (o->jobs) {
    char err[160];
    if (num_parse_int("--jobs", o->jobs, 1, 64, &o->threads, err, sizeof err))
      return usage_error("%s", err);
  }
  if (o->compile && check_compile_list(o->compile) != 0) return 2;
  if (o->dump_dir && !o->compile)
    return usage_error("%s", "--dump-cubin needs --compile (it writes the compiled CUBINs)");
  if (o->pack && !o->compile)
    return usage_error("%s", "--pack needs --compile (it packs the compiled kernels)");
  if (o->pack && !*o->pack) return usage_error("%s", "--pack needs a file name");
  if (!o->plan && !o->json && !o->emit_dir && !o->compile) o->plan = 1;
  /* every output checked before any work: a folder hot-gen may create (the last component only)
   * or a file it may write */
  const struct { const char *opt, *path; int is_dir; } outs[] = {
      {"--emit", o->emit_dir, 1}, {"--dump-cubin", o->dump_dir, 1}, {"--pack", o->pack, 0}};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; ++i) {
    char why[256], line[HOT_MSG_MAX];
    if (!outs[i].path || fileio_check_output(outs[i].path, outs[i].is_dir, why, sizeof why) == 0)
      continue;
    fileio_msgf(line, sizeof line, "%s %s: %s", outs[i].opt, outs[i].path, why);
    return usage_error("%s", line);
  }
  return 0;
}

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char **slot = NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      char archs[128];
      printf("%s\narchs: %s\n", k_usage, plan_arch_list(archs, sizeof archs, ", "));
      exit(0);
    } else if (!strcmp(a, "--version")) {
      printf("hot-gen %s\n", HOT_VERSION);
      exit(0);
    } else if (!strcmp(a, "--plan")) o->plan = 1;
    else if (!strcmp(a, "--json")) o->json = 1;
    else if (!strcmp(a, "--help-spec")) o->help_spec = 1;
    else if (!strcmp(a, "--no-disk-cache")) o->no_disk = 1;
    else if (!strcmp(a, "--no-tune")) o->no_tune = 1;
    else if ((slot = value_slot(o, a)) != NULL) {
      if (i + 1 >= argc) return usage_error("option '%s' needs a value", a);
      if (*slot) return usage_error("option '%s' given twice", a);
      if (!*argv[i + 1] && slot != &o->jobs) /* --jobs: num.h's message (numbers.tsv) */
        return usage_error("option '%s' needs a value (got an empty one)", a);
      *slot = argv[++i];
    } else if (a[0] == '-' && a[1]) return usage_error("unknown option '%s'", a);
    else if (!o->spec) o->spec = a;
    else return usage_error("more than one spec given ('%s')", a);
  }
  return check_args(o);
}

/* ---- planning ----------------------------------------------------------------------------- */

/* Plans `layer` of m for `arch`; on failure appends "file:line: layer 'x': msg (arch)" to d
 * (NULL when validate_plans has already planned it successfully). */
/* The tuning databases and, per (arch, layer), the spec each plan borrows and where its tiles
 * came from (tuned.h). Set up by main before anything is planned. */
static struct {
  hot_tuned t;
  const char *device;
  int n_layers;
  hot_layer_spec *specs;     /* [arch * n_layers + layer] */
  char (*origin)[1400];     /* tuned.h's origin line: two paths of up to 512 bytes fit whole */
} g_tune;

static int plan_one(const hot_model *m, int layer, hot_arch arch, hot_layer_plan *p, hot_diag *d) {
  const hot_layer_spec *s = &m->layers[layer];
  char err[512];
  int64_t tokens = s->tokens ? s->tokens : m->tokens;
  const size_t at = (size_t)arch * (size_t)g_tune.n_layers + (size_t)layer;
  if (tuned_plan_layer(&g_tune.t, g_tune.device, s, m->batch, tokens, m->recipe, arch, layer,
                       &g_tune.specs[at], p, g_tune.origin[at], sizeof g_tune.origin[at], err,
                       sizeof err) == 0)
    return 0;
  diag_add(d, "%s:%d: layer '%s': %s (planning for %s)", m->file, s->line, s->name, err,
           plan_arch_caps(arch)->name);
  return -1;
}

static const char *tiles_origin(const hot_layer_plan *p) {
  return g_tune.origin[(size_t)p->arch * (size_t)g_tune.n_layers + (size_t)p->layer_id];
}

static int layer_selected(const options *o, const hot_layer_spec *s) {
  return !o->layer || strcmp(o->layer, s->name) == 0;
}

/* ---- the plan as a table ------------------------------------------------------------------- */

static double mib(int64_t b) { return (double)b / (1024.0 * 1024.0); }

static void print_quant(const char *what, const hot_quant *q) {
  printf("%s %d-bit %s %s/%s", what, q->bits, plan_round_name(q->round), plan_gran_name(q->gran),
         plan_rule_name(q->rule));
}

static void print_gemm(const hot_gemm_plan *g) {
  printf("gemm %s %lldx%lldx%lld (k_pad %lld) tile %dx%dx%d warps %dx%d stages %d smem %u",
         plan_gemm_path_name(g->path), (long long)g->m, (long long)g->n, (long long)g->k,
         (long long)g->k_pad, g->tile_m, g->tile_n, g->tile_k, g->warps_m, g->warps_n, g->stages,
         g->smem);
  if (g->segmented)
    printf(" segmented: %lld segments of %lld", (long long)(g->k_pad / g->seg_k_pad),
           (long long)g->seg_k_pad);
}

static void print_plan(const hot_layer_plan *p) {
  const hot_layer_spec *s = p->spec;
  printf("layer %s: O=%lld I=%lld T=%lld (B=%lld x L=%lld) dtype %s%s\n", s->name, (long long)p->O,
         (long long)p->I, (long long)p->T, (long long)p->B, (long long)p->L,
         plan_dtype_name(s->dtype), s->bias ? ", bias" : "");
  if (p->hq.enabled) {
    printf("  HQ   b=%d o_pad=%lld codes %s; ", p->hq.block, (long long)p->hq.o_pad,
           plan_codes_name(p->hq.codes));
    print_quant("g'", &p->hq.g);
    printf("; ");
    print_quant("w'", &p->hq.w);
    printf("\n       ");
    print_gemm(&p->hq.gemm);
    printf("\n");
  } else {
    printf("  HQ   off (g_x in fp32)\n");
  }
  if (p->hla.enabled) {
    printf("  HLA  p=%d %s", p->hla.block, plan_selection_name(p->hla.selection));
    if (p->hla.selection == HOT_SEL_TRI) printf(" keep %d", p->hla.keep);
    printf(" r=%d layout %s: %lld segment(s) of %lld tokens, %lld blocks, K=%lld; ", p->hla.rank,
           plan_layout_name(p->hla.layout), (long long)p->hla.segments, (long long)p->hla.seg_len,
           (long long)p->hla.blocks, (long long)p->hla.k);
    if (p->hla.groups > 1)
      printf("%lld scale groups of %lld rows, %lld codes each; ", (long long)p->hla.groups,
             (long long)p->hla.group_k, (long long)p->hla.group_k_pad);
    print_quant("g^", &p->hla.g);
    printf("; ");
    print_quant("x^", &p->hla.x);
    printf("\n       rows (ascending sequency):");
    for (int i = 0; i < p->hla.rank; ++i) {
      if (i == 24 && p->hla.rank > 28) {
        printf(" ... (%d more)", p->hla.rank - 24);
        break;
      }
      printf(" %u", p->hla.rows[i]);
    }
    printf("\n       ");
    print_gemm(&p->hla.gemm);
    printf("\n");
  } else {
    printf("  HLA  off (g_w in fp32)\n");
  }
  if (p->abc.enabled) {
    const int64_t method = plan_abc_method_bytes(p);
    printf("  ABC  %.2f MiB saved buffer vs fp32 x %.2f MiB (%.3f) and bf16 x %.2f MiB (%.3f); "
           "%.3f x the method's K.I + scales (%.2f MiB)\n",
           mib(p->abc.bytes), mib(p->abc.fp32_bytes), (double)p->abc.bytes / (double)p->abc.fp32_bytes,
           mib(p->abc.bf16_bytes), (double)p->abc.bytes / (double)p->abc.bf16_bytes,
           method > 0 ? (double)p->abc.bytes / (double)method : 0.0, mib(method));
    if (p->abc.bytes > p->abc.fp32_bytes) /* K > 4 T: fewer tokens than kept rows (a head) */
      printf("       note: ABC keeps more than an fp32 x here: K = %lld code rows (blocks of p = %d "
             "tokens, r = %d kept) for T = %lld tokens\n", (long long)p->hla.k, p->hla.block,
             p->hla.rank, (long long)p->T);
  } else
    printf("  ABC  off (x kept in full: %.2f MiB fp32)\n", mib(p->abc.fp32_bytes));
  printf("  tiles %s\n", tiles_origin(p));
  printf("  ops  g_x %.3f G int MACs (fp32 %.3f G), g_w %.3f G int MACs (fp32 %.3f G), FWHT %.3f G adds\n",
         (double)p->ops.gx_macs * 1e-9, (double)p->ops.fp32_gx_macs * 1e-9,
         (double)p->ops.gw_macs * 1e-9, (double)p->ops.fp32_gw_macs * 1e-9,
         (double)p->ops.fwht_adds * 1e-9);
  for (int i = 0; i < p->n_kernels; ++i) {
    const hot_kernel_plan *k = &p->kernels[i];
    printf("  %-8s %-44s grid %ux%u block %u smem %u  %s\n", plan_role_name(k->role), k->name,
           k->grid[0], k->grid[1], k->block[0], k->smem, k->templ);
  }
}

/* ---- the plan as JSON ---------------------------------------------------------------------- */

static void json_str(hot_buf *b, const char *s) { esc_json(b, s); }

static void json_quant(hot_buf *b, const hot_quant *q) {
  buf_printf(b, "{\"bits\":%d,\"round\":\"%s\",\"scale\":\"%s\",\"rule\":\"%s\"}", q->bits,
             plan_round_name(q->round), plan_gran_name(q->gran), plan_rule_name(q->rule));
}

static void json_gemm(hot_buf *b, const hot_gemm_plan *g) {
  buf_printf(b,
             "{\"path\":\"%s\",\"codes\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"k_pad\":%lld,"
             "\"tile\":[%d,%d,%d],\"warps\":[%d,%d],\"stages\":%d,\"smem\":%u,"
             "\"segmented\":%s,\"seg_k_pad\":%lld}",
             plan_gemm_path_name(g->path), plan_codes_name(g->codes), (long long)g->m,
             (long long)g->n, (long long)g->k, (long long)g->k_pad, g->tile_m, g->tile_n, g->tile_k,
             g->warps_m, g->warps_n, g->stages, g->smem, g->segmented ? "true" : "false",
             (long long)g->seg_k_pad);
}

static void json_plan(hot_buf *b, const hot_layer_plan *p) {
  const hot_layer_spec *s = p->spec;
  buf_puts(b, "{\"name\":");
  json_str(b, s->name);
  buf_printf(b, ",\"line\":%d,\"arch\":\"%s\",\"dtype\":\"%s\",\"bias\":%s,\"T\":%lld,\"B\":%lld,"
                "\"L\":%lld,\"O\":%lld,\"I\":%lld,",
             s->line, plan_arch_caps(p->arch)->name, plan_dtype_name(s->dtype),
             s->bias ? "true" : "false", (long long)p->T, (long long)p->B, (long long)p->L,
             (long long)p->O, (long long)p->I);
  buf_printf(b, "\"hq\":{\"enabled\":%s,\"block\":%d,\"o_pad\":%lld,\"g\":",
             p->hq.enabled ? "true" : "false", p->hq.block, (long long)p->hq.o_pad);
  json_quant(b, &p->hq.g);
  buf_puts(b, ",\"w\":");
  json_quant(b, &p->hq.w);
  buf_puts(b, ",\"gemm\":");
  json_gemm(b, &p->hq.gemm);
  buf_printf(b, "},\"hla\":{\"enabled\":%s,\"block\":%d,\"selection\":\"%s\",\"keep\":%d,"
                "\"rank\":%d,\"layout\":\"%s\",\"segments\":%lld,\"seg_len\":%lld,\"blocks\":%lld,"
                "\"k\":%lld,\"groups\":%lld,\"group_k\":%lld,\"group_k_pad\":%lld,\"rows\":[",
             p->hla.enabled ? "true" : "false", p->hla.block, plan_selection_name(p->hla.selection),
             p->hla.keep, p->hla.rank, plan_layout_name(p->hla.layout), (long long)p->hla.segments,
             (long long)p->hla.seg_len, (long long)p->hla.blocks, (long long)p->hla.k,
             (long long)p->hla.groups, (long long)p->hla.group_k, (long long)p->hla.group_k_pad);
  for (int i = 0; i < p->hla.rank; ++i) buf_printf(b, "%s%u", i ? "," : "", p->hla.rows[i]);
  buf_puts(b, "],\"g\":");
  json_quant(b, &p->hla.g);
  buf_puts(b, ",\"x\":");
  json_quant(b, &p->hla.x);
  buf_puts(b, ",\"gemm\":");
  json_gemm(b, &p->hla.gemm);
  buf_printf(b, "},\"abc\":{\"enabled\":%s,\"bytes\":%lld,\"fp32_bytes\":%lld,\"bf16_bytes\":%lld,"
                "\"fp32_ratio\":%.6f,\"method_bytes\":%lld},",
             p->abc.enabled ? "true" : "false", (long long)p->abc.bytes,
             (long long)p->abc.fp32_bytes, (long long)p->abc.bf16_bytes,
             (double)p->abc.bytes / (double)p->abc.fp32_bytes,
             (long long)plan_abc_method_bytes(p));
  buf_puts(b, "\"tiles\":");
  json_str(b, tiles_origin(p));
  buf_puts(b, ",");
  buf_printf(b, "\"ops\":{\"gx_macs\":%lld,\"gw_macs\":%lld,\"fp32_gx_macs\":%lld,"
                "\"fp32_gw_macs\":%lld,\"fwht_adds\":%lld},\"kernels\":[",
             (long long)p->ops.gx_macs, (long long)p->ops.gw_macs, (long long)p->ops.fp32_gx_macs,
             (long long)p->ops.fp32_gw_macs, (long long)p->ops.fwht_adds);
  for (int i = 0; i < p->n_kernels; ++i) {
    const hot_kernel_plan *k = &p->kernels[i];
    buf_printf(b, "%s{\"name\":\"%s\",\"role\":\"%s\",\"template\":\"%s\",\"grid\":[%u,%u,%u],"
                  "\"block\":[%u,%u,%u],\"smem\":%u}",
               i ? "," : "", k->name, plan_role_name(k->role), k->templ, k->grid[0], k->grid[1],
               k->grid[2], k->block[0], k->block[1], k->block[2], k->smem);
  }
  buf_puts(b, "]}");
}

/* ---- emission ----------------------------------------------------------------------------- */

/* Writes text to path through a temp file and rename (never a torn file). Regular files only:
 * a FIFO, device or directory at path (or at the temp file's name) is refused, not replaced. */
static int write_file(const char *path, const char *text, size_t len, hot_diag *d) {
  char tmp[HOT_PATH_MAX + 32], why[128];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = NULL;
  if (fileio_check_regular(path, 0, why, sizeof why) == 0)
    f = fileio_fopen(tmp, "wb", why, sizeof why);
  if (!f) {
    diag_add(d, "%s: cannot write: %s", path, why);
    return -1;
  }
  size_t w = fwrite(text, 1, len, f);
  int bad = w != len;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    diag_add(d, "%s: cannot write: %s", path, strerror(errno));
    remove(tmp);
    return -1;
  }
  return 0;
}

/* ---- the steps of main ------------------------------------------------------------------- */

/* Item i of the comma-separated --compile list into item (n bytes; cut when longer). Returns
 * the item's length in the list, or -1 when the list has fewer items. */
static int compile_item(const char *list, int i, char *item, size_t n) {
  const char *p = list;
  for (int k = 0; k < i; ++k) {
    p += strcspn(p, ",");
    if (!*p++) return -1;
  }
  int len = (int)strcspn(p, ",");
  snprintf(item, n, "%.*s", len, p);
  return len;
}

/* Checks the --compile list before any work: comma-separated items, each an arch name or
 * "target", none empty and none listed twice. 0, or usage_error's status. */
static int check_compile_list(const char *list) {
  char item[32], other[32], known[128], line[HOT_MSG_MAX];
  int len;
  for (int i = 0; (len = compile_item(list, i, item, sizeof item)) >= 0; ++i) {
    hot_arch a;
    if (len == 0)
      fileio_msgf(line, sizeof line, "--compile '%s': item %d is empty (expected comma-separated "
                  "archs, %s, or 'target')", list, i + 1, plan_arch_list(known, sizeof known, ", "));
    else if ((size_t)len >= sizeof item || (strcmp(item, "target") && plan_arch_parse(item, &a)))
      fileio_msgf(line, sizeof line, "--compile: unknown arch '%s%s' (known: %s, or 'target')",
                  item, (size_t)len >= sizeof item ? "..." : "",
                  plan_arch_list(known, sizeof known, ", "));
    else {
      int dup = 0;
      for (int j = 0; j < i && !dup; ++j) dup = compile_item(list, j, other, sizeof other) == len &&
                                              !strcmp(other, item);
      if (!dup) continue;
      fileio_msgf(line, sizeof line, "--compile '%s': '%s' is listed twice", list, item);
    }
    return usage_error("%s", line);
  }
  return 0;
}

/* The --compile list (checked by check_compile_list) as archs: "target" = the spec's archs; an
 * arch that "target" gives too is compiled once. */
static void parse_archs(const char *list, const hot_model *m, hot_arch *archs, int *n) {
  char item[32];
  *n = 0;
  for (int i = 0; compile_item(list, i, item, sizeof item) >= 0; ++i) {
    hot_arch add[HOT_MAX_ARCHS];
    int na = 0;
    if (!strcmp(item, "target"))
      for (; na < m->n_archs && na < HOT_MAX_ARCHS; ++na) add[na] = m->archs[na];
    else if (plan_arch_parse(item, &add[0]) == 0)
      na = 1;
    for (int k = 0; k < na; ++k) {
      int dup = 0;
      for (int j = 0; j < *n; ++j) dup |= archs[j] == add[k];
      if (!dup && *n < HOT_MAX_ARCHS) archs[(*n)++] = add[k];
    }
  }
}

static void print_diag(const hot_diag *d) {
  for (int i = 0; i < d->count; ++i) diag_fprintf(stderr, "%s\n", d->lines[i]);
  if (d->oom) diag_fprintf(stderr, "hot-gen: out of memory (some messages were lost)\n");
}

/* Prints d's lines and the error count line; returns 1. */
static int fail_with(const char *spec, hot_diag *d) {
  print_diag(d);
  diag_fprintf(stderr, "hot-gen: %s: %d error%s\n", spec, d->count, d->count == 1 ? "" : "s");
  diag_free(d);
  return 1;
}

/* --help-spec. Returns 0 or 1. */
static int help_spec(void) {
  hot_diag d = {0};
  char *t = spec_help_text(&d);
  if (!t) {
    print_diag(&d);
    diag_free(&d);
    return 1;
  }
  fputs(t, stdout);
  free(t);
  return 0;
}

/* Loads the spec (warnings printed). Returns 0 or the exit status. */
static int load_model(const options *o, hot_model *m) {
  hot_diag d = {0};
  if (spec_load_file(o->spec, NULL, m, &d) != 0) return fail_with(o->spec, &d);
  print_diag(&d); /* warnings */
  diag_free(&d);
  if (o->layer && spec_find_layer(m, o->layer) < 0) {
    char names[HOT_MSG_MAX];
    diag_fprintf(stderr, "hot-gen: %s has no layer '%s' (layers: %s)\n", o->spec, o->layer,
                 diag_names(names, sizeof names, m->n_layers, spec_layer_name, m));
    return 2;
  }
  return 0;
}

/* The archs each action uses. */
typedef struct {
  hot_arch plan[HOT_MAX_ARCHS];    /* --plan / --json: --arch, else the spec's targets */
  int n_plan;
  hot_arch compile[HOT_MAX_ARCHS]; /* --compile */
  int n_compile;
} arch_sets;

static int resolve_archs(const options *o, const hot_model *m, arch_sets *as) {
  memset(as, 0, sizeof *as);
  if (o->arch) {
    if (plan_arch_parse(o->arch, &as->plan[0]) != 0) {
      char known[128];
      diag_fprintf(stderr, "hot-gen: --arch: unknown arch '%s' (known: %s)\n", o->arch,
                   plan_arch_list(known, sizeof known, ", "));
      return 2;
    }
    as->n_plan = 1;
  } else {
    for (int i = 0; i < m->n_archs; ++i) as->plan[as->n_plan++] = m->archs[i];
  }
  if (o->compile) parse_archs(o->compile, m, as->compile, &as->n_compile);
  return 0;
}

/* Plans every selected layer for every arch any action will use and reports all failures at once.
 * Returns 0 or 1. */
static int validate_plans(const options *o, const hot_model *m, const arch_sets *as,
                          hot_layer_plan *plan) {
  int want[HOT_ARCH_COUNT] = {0};
  if (o->plan || o->json)
    for (int i = 0; i < as->n_plan; ++i) want[as->plan[i]] = 1;
  if (o->emit_dir)
    for (int i = 0; i < m->n_archs; ++i) want[m->archs[i]] = 1;
  for (int i = 0; i < as->n_compile; ++i) want[as->compile[i]] = 1;
  hot_diag d = {0};
  for (int a = 0; a < HOT_ARCH_COUNT; ++a)
    for (int l = 0; want[a] && l < m->n_layers; ++l)
      if (layer_selected(o, &m->layers[l])) plan_one(m, l, (hot_arch)a, plan, &d);
  if (d.count) return fail_with(o->spec, &d);
  diag_free(&d);
  return 0;
}

/* --plan: the table, for each plan arch. */
static void print_plans(const options *o, const hot_model *m, const arch_sets *as, hot_layer_plan *plan) {
  for (int a = 0; a < as->n_plan; ++a) {
    hot_arch arch = as->plan[a];
    printf("%smodel %s (%s): batch %lld, tokens %lld, recipe %s, seed 0x%016llx, arch %s\n",
           a ? "\n" : "", m->name, m->file, (long long)m->batch, (long long)m->tokens,
           plan_recipe_name(m->recipe), (unsigned long long)m->seed, plan_arch_caps(arch)->name);
    int64_t abc = 0, fp32 = 0;
    for (int l = 0; l < m->n_layers; ++l) {
      if (!layer_selected(o, &m->layers[l])) continue;
      plan_one(m, l, arch, plan, NULL);
      print_plan(plan);
      abc += plan->abc.bytes;
      fp32 += plan->abc.fp32_bytes;
    }
    printf("total saved activations: %.2f MiB vs fp32 %.2f MiB (%.3f)\n", mib(abc), mib(fp32),
           fp32 ? (double)abc / (double)fp32 : 0.0);
  }
}

/* --json: one object; layers[] holds each (arch, layer). Returns 0 or 1. */
static int print_json(const options *o, const hot_model *m, const arch_sets *as, hot_layer_plan *plan) {
  hot_buf b = {0};
  buf_puts(&b, "{\"generator\":\"hot-gen " HOT_VERSION "\",\"model\":");
  json_str(&b, m->name);
  buf_puts(&b, ",\"file\":");
  json_str(&b, m->file);
  buf_printf(&b, ",\"batch\":%lld,\"tokens\":%lld,\"recipe\":\"%s\",\"seed\":%llu,\"arch\":\"%s\","
                 "\"archs\":[",
             (long long)m->batch, (long long)m->tokens, plan_recipe_name(m->recipe),
             (unsigned long long)m->seed, plan_arch_caps(as->plan[0])->name);
  for (int i = 0; i < m->n_archs; ++i)
    buf_printf(&b, "%s\"%s\"", i ? "," : "", plan_arch_caps(m->archs[i])->name);
  buf_puts(&b, "],\"plan_archs\":[");
  for (int i = 0; i < as->n_plan; ++i)
    buf_printf(&b, "%s\"%s\"", i ? "," : "", plan_arch_caps(as->plan[i])->name);
  buf_puts(&b, "],\"layers\":[");
  int first = 1;
  for (int a = 0; a < as->n_plan; ++a)
    for (int l = 0; l < m->n_layers; ++l) {
      if (!layer_selected(o, &m->layers[l])) continue;
      plan_one(m, l, as->plan[a], plan, NULL);
      if (!first) buf_puts(&b, ",");
      first = 0;
      json_plan(&b, plan);
    }
  buf_puts(&b, "]}\n");
  int rc = 0;
  if (!buf_ok(&b)) {
    diag_fprintf(stderr, "hot-gen: out of memory\n");
    rc = 1;
  } else {
    fputs(b.data, stdout);
  }
  buf_free(&b);
  return rc;
}

/* Joins dir and a file name that must stay a single component of it; reports a refusal. */
static int safe_path(char *out, size_t n, const char *dir, const char *name, hot_diag *d) {
  if (spec_path_join(out, n, dir, name) == 0) return 0;
  diag_add(d, "hot-gen: refusing to write '%s' into %s: not a plain file name inside it", name, dir);
  return -1;
}

/* One manifest entry for an emitted file. */
static void manifest_entry(hot_buf *man, int first, const char *file, const char *layer,
                           const char *arch, const hot_emitted *e) {
  buf_puts(man, first ? "{\"file\":" : ",{\"file\":");
  json_str(man, file);
  buf_puts(man, ",\"layer\":");
  json_str(man, layer);
  buf_printf(man, ",\"arch\":\"%s\",\"kernels\":[", arch);
  for (int k = 0; k < e->n_kernels; ++k)
    buf_printf(man, "%s{\"name\":\"%s\",\"template\":\"%s\"}", k ? "," : "", e->kernels[k],
               e->templates[k]);
  buf_puts(man, "],\"pending\":[");
  for (int k = 0; k < e->n_missing; ++k)
    buf_printf(man, "%s\"%s\"", k ? "," : "", plan_role_name(e->missing[k]));
  buf_puts(man, "]}");
}

/* --emit DIR: a .cu per (arch, layer) and manifest.json, every path checked to stay in DIR.
 * Returns 0 or 1. */
static int emit_sources(const options *o, const hot_model *m, hot_layer_plan *plan) {
  char why[256];
  if (fileio_mkdir_last(o->emit_dir, why, sizeof why) != 0) {
    diag_fprintf(stderr, "hot-gen: --emit %s: cannot create it: %s\n", o->emit_dir, why);
    return 1;
  }
  hot_diag d = {0};
  hot_buf man = {0};
  buf_puts(&man, "{\"generator\":\"hot-gen " HOT_VERSION "\",\"spec\":");
  json_str(&man, m->file);
  buf_puts(&man, ",\"model\":");
  json_str(&man, m->name);
  buf_puts(&man, ",\"files\":[");
  int nfiles = 0, nmissing = 0, rc = 0;
  for (int a = 0; a < m->n_archs && rc == 0; ++a) {
    const char *arch = plan_arch_caps(m->archs[a])->name;
    for (int l = 0; l < m->n_layers && rc == 0; ++l) {
      if (!layer_selected(o, &m->layers[l])) continue;
      plan_one(m, l, m->archs[a], plan, NULL);
      hot_emitted e;
      char err[512];
      if (emit_layer(plan, &e, err, sizeof err) != 0) {
        diag_fprintf(stderr, "hot-gen: layer '%s' (%s): %s\n", m->layers[l].name, arch, err);
        rc = 1;
        break;
      }
      char name[HOT_NAME_MAX * 2 + 16], path[HOT_PATH_MAX * 2];
      snprintf(name, sizeof name, "%s.%s.%s.cu", m->name, m->layers[l].name, arch);
      if (safe_path(path, sizeof path, o->emit_dir, name, &d) != 0 ||
          write_file(path, e.source, e.source_len, &d) != 0)
        rc = 1;
      manifest_entry(&man, nfiles++ == 0, name, m->layers[l].name, arch, &e);
      nmissing += e.n_missing;
      emit_free(&e);
    }
  }
  buf_puts(&man, "]}\n");
  char mpath[HOT_PATH_MAX + 32];
  if (rc == 0 && (!buf_ok(&man) || safe_path(mpath, sizeof mpath, o->emit_dir, "manifest.json", &d) != 0 ||
                  write_file(mpath, man.data, man.len, &d) != 0))
    rc = 1;
  buf_free(&man);
  if (rc == 0)
    diag_fprintf(stderr, "hot-gen: wrote %d source%s and manifest.json to %s%s\n", nfiles,
            nfiles == 1 ? "" : "s", o->emit_dir,
            nmissing ? " (some kernels have no template yet: see \"pending\" in the manifest)" : "");
  print_diag(&d);
  diag_free(&d);
  return rc;
}

/* One layer's compile for one arch: the per-kernel rows, spill checks and --dump-cubin.
 * Returns the number of failures. */
/* The binaries going into --pack (borrowed from the cache; duplicates are dropped on write). */
typedef struct {
  const hot_kernel_binary **v;
  size_t n, cap;
  int nomem;
} bin_list;

static void bin_add(bin_list *b, const hot_kernel_binary *bin) {
  for (size_t i = 0; i < b->n; ++i)
    if (b->v[i] == bin) return;
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    const hot_kernel_binary **v = realloc(b->v, cap * sizeof *v);
    if (!v) {
      b->nomem = 1;
      return;
    }
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n++] = bin;
}

/* --pack: every collected binary into one kernel pack file. Returns 0/1. */
static int write_pack(const char *path, const bin_list *b) {
  char err[1024];
  hot_pack_entry *e = calloc(b->n + 1, sizeof *e);
  if (!e || b->nomem) {
    free(e);
    diag_fprintf(stderr, "hot-gen: %s: out of memory\n", path);
    return 1;
  }
  for (size_t i = 0; i < b->n; ++i) {
    const hot_kernel_binary *k = b->v[i];
    e[i] = (hot_pack_entry){k->key, k->compiler, k->arch, k->kernels, k->n_kernels, k->cubin,
                            k->cubin_size, k->log, k->compile_ms};
  }
  rt_status st = pack_write(path, e, b->n, err, sizeof err);
  free(e);
  if (st != RT_OK) {
    diag_fprintf(stderr, "hot-gen: %s\n", err);
    return 1;
  }
  diag_fprintf(stderr, "hot-gen: wrote %zu kernel%s to the pack %s\n", b->n, b->n == 1 ? "" : "s", path);
  return 0;
}

static int compile_layer(const options *o, const hot_model *m, int l, hot_kcache *kc,
                         const hot_layer_plan *plan, bin_list *packed, hot_diag *d) {
  const char *arch = plan_arch_caps(plan->arch)->name;
  const char *lname = m->layers[l].name;
  char err[1024];
  /* Exactly the runtime's requests (jit.h): one program per distinct kernel. */
  hot_jit j;
  char *log = NULL;
  if (jit_layer(kc, plan, o->threads, &j, &log, err, sizeof err) != RT_OK) {
    diag_fprintf(stderr, "hot-gen: layer '%s' (%s): %s\n", lname, arch, err);
    if (log && *log) diag_fprintf(stderr, "%s\n", log);
    free(log);
    return 1;
  }
  int failures = 0;
  for (int k = 0; k < plan->n_kernels; ++k) {
    const hot_kernel_plan *kp = &plan->kernels[k];
    const hot_kernel_binary *bin = j.bin[k];
    if (!bin) {
      printf("%-7s %-8s %-44s %9s %-8s\n", arch, lname, kp->name, "-", "pending");
      continue;
    }
    const hot_kernel_info *ki = &bin->kernels[0];
    int spills = ki->spill_store_bytes + ki->spill_load_bytes;
    if (packed) bin_add(packed, bin);
    char ph[3][16];
    double pv[3] = {bin->front_ms, bin->nvvm_ms, bin->ptxas_ms};
    for (int i = 0; i < 3; ++i) /* NVRTC's own phases, known for kernels compiled now */
      snprintf(ph[i], sizeof ph[i], bin->phases_known ? "%.0f" : "-", pv[i]);
    /* origin: how the binary entered the cache (compiled now, or read from disk), not this
     * layer's lookup, which the whole-spec batch before it has always warmed */
    printf("%-7s %-8s %-44s %9.1f %6s %6s %6s %-8s %5d %7d %6d\n", arch, lname, ki->name,
           bin->compile_ms, ph[0], ph[1], ph[2], kcache_origin_name(bin->origin),
           ki->registers, spills, ki->shared_bytes);
    if (spills > kp->max_spills) {
      diag_fprintf(stderr, "hot-gen: kernel %s spills %d bytes on %s (the plan allows %d)\n", ki->name,
              spills, arch, kp->max_spills);
      ++failures;
    }
    if (o->dump_dir && j.source[k]) { /* once per distinct kernel */
      char cname[256], cpath[HOT_PATH_MAX * 2];
      snprintf(cname, sizeof cname, "%s.%s.cubin", ki->name, arch);
      char dwhy[256];
      if (fileio_mkdir_last(o->dump_dir, dwhy, sizeof dwhy) != 0) {
        diag_add(d, "--dump-cubin %s: cannot create it: %s", o->dump_dir, dwhy);
        ++failures;
      } else if (safe_path(cpath, sizeof cpath, o->dump_dir, cname, d) != 0 ||
                 write_file(cpath, (const char *)bin->cubin, bin->cubin_size, d) != 0) {
        ++failures;
      }
    }
  }
  printf("%-7s %-8s %d program%s, %d thread%s, %.1f ms wall\n", arch, lname, j.n_programs,
         j.n_programs == 1 ? "" : "s", j.threads, j.threads == 1 ? "" : "s", j.wall_ms);
  jit_free(&j);
  return failures;
}

/* --compile: every selected layer for every compile arch through the kernel cache. Returns 0/1. */
static int compile_all(const options *o, const hot_model *m, const arch_sets *as) {
  hot_kcache_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.dir = o->cache_dir;
  cfg.disk = o->no_disk ? -1 : 0;
  hot_kcache *kc = NULL;
  char err[1024];
  if (kcache_open(&kc, &cfg, err, sizeof err) != RT_OK) {
    diag_fprintf(stderr, "hot-gen: %s\n", err);
    return 1;
  }
  /* Every selected layer for every arch, planned first, then all their distinct kernels
   * compiled in one pool (jit_prefetch): the spec's cold time is its slowest kernels', not the
   * sum of its layers'. The per-layer requests after it are memory hits. */
  int np = 0, *lidx = NULL;
  hot_layer_plan *plans = calloc((size_t)(as->n_compile * m->n_layers) + 1, sizeof *plans);
  const hot_layer_plan **pp = calloc((size_t)(as->n_compile * m->n_layers) + 1, sizeof *pp);
  lidx = calloc((size_t)(as->n_compile * m->n_layers) + 1, sizeof *lidx);
  if (!plans || !pp || !lidx) {
    diag_fprintf(stderr, "hot-gen: out of memory\n");
    free(plans), free(pp), free(lidx);
    kcache_close(kc);
    return 1;
  }
  for (int a = 0; a < as->n_compile; ++a)
    for (int l = 0; l < m->n_layers; ++l)
      if (layer_selected(o, &m->layers[l]) && plan_one(m, l, as->compile[a], &plans[np], NULL) == 0) {
        pp[np] = &plans[np];
        lidx[np++] = l;
      }
  hot_jit_batch batch;
  if (jit_prefetch(kc, pp, np, o->threads, &batch, err, sizeof err) != RT_OK) {
    diag_fprintf(stderr, "hot-gen: %s\n", err);
    free(plans), free(pp), free(lidx);
    kcache_close(kc);
    return 1;
  }
  printf("%-7s %-8s %-44s %9s %6s %6s %6s %-8s %5s %7s %6s\n", "arch", "layer", "kernel", "ms",
         "front", "nvvm", "ptxas", "origin", "regs", "spills", "smem");
  hot_diag d = {0};
  int failures = 0;
  bin_list packed = {0};
  for (int i = 0; i < np; ++i)
    failures += compile_layer(o, m, lidx[i], kc, &plans[i], o->pack ? &packed : NULL, &d);
  free(plans), free(pp), free(lidx);
  int pack_failed = 0;
  if (o->pack && !failures) pack_failed = write_pack(o->pack, &packed);
  else if (o->pack) diag_fprintf(stderr, "hot-gen: %s not written (compile failures)\n", o->pack);
  free(packed.v);
  printf("whole spec: %d layer plan%s, %d distinct program%s (%d compiled now), %d thread%s, "
         "%.1f ms wall\n", np, np == 1 ? "" : "s", batch.n_programs,
         batch.n_programs == 1 ? "" : "s", batch.n_compiled, batch.threads,
         batch.threads == 1 ? "" : "s", batch.wall_ms);
  hot_kcache_stats st;
  kcache_stats_get(kc, &st);
  printf("compiles %llu (%.1f ms), memory hits %llu, disk hits %llu, cache %s\n",
         (unsigned long long)st.compiles, st.compile_ms, (unsigned long long)st.memory_hits,
         (unsigned long long)st.disk_hits, kcache_dir(kc) ? kcache_dir(kc) : "(memory only)");
  kcache_close(kc);
  print_diag(&d);
  diag_free(&d);
  if (failures) {
    diag_fprintf(stderr, "hot-gen: %d compile failure%s\n", failures, failures == 1 ? "" : "s");
    return 1;
  }
  return pack_failed;
}

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  options o;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  if (o.help_spec && ((rc = help_spec()) != 0 || !o.spec)) return rc;
  hot_model m;
  if ((rc = load_model(&o, &m)) != 0) {
    spec_model_free(&m);
    return rc;
  }
  /* the tuning databases (read-only; a bad one is reported in each plan's tiles line) */
  hot_env ev;
  char eerr[512];
  if (env_read(&ev, 0, eerr, sizeof eerr) != RT_OK) {
    diag_fprintf(stderr, "hot-gen: %s\n", eerr);
    spec_model_free(&m);
    return 1;
  }
  if (o.no_tune) memset(&g_tune.t, 0, sizeof g_tune.t);
  else {
    char cdb[1100] = ""; /* --cache-dir moves the default user DB with the kernel cache */
    if (!o.tune_db && !ev.tune_db && o.cache_dir) snprintf(cdb, sizeof cdb, "%s/tune.db", o.cache_dir);
    tuned_open(&g_tune.t, &ev, o.tune_db ? o.tune_db : *cdb ? cdb : NULL);
  }
  g_tune.device = o.device;
  g_tune.n_layers = m.n_layers;
  g_tune.specs = calloc((size_t)HOT_ARCH_COUNT * (size_t)m.n_layers + 1, sizeof *g_tune.specs);
  g_tune.origin = calloc((size_t)HOT_ARCH_COUNT * (size_t)m.n_layers + 1, sizeof *g_tune.origin);
  arch_sets as;
  hot_layer_plan *plan = NULL;
  if (!g_tune.specs || !g_tune.origin) {
    diag_fprintf(stderr, "hot-gen: out of memory\n");
    rc = 1;
  } else if ((rc = resolve_archs(&o, &m, &as)) == 0) {
    plan = malloc(sizeof *plan);
    if (!plan) {
      diag_fprintf(stderr, "hot-gen: out of memory\n");
      rc = 1;
    }
  }
  if (rc == 0) rc = validate_plans(&o, &m, &as, plan);
  if (rc == 0 && o.plan) print_plans(&o, &m, &as, plan);
  if (rc == 0 && o.json) rc = print_json(&o, &m, &as, plan);
  if (rc == 0 && o.emit_dir) rc = emit_sources(&o, &m, plan);
  if (rc == 0 && o.compile) rc = compile_all(&o, &m, &as);
  free(plan);
  tuned_close(&g_tune.t);
  free(g_tune.specs);
  free(g_tune.origin);
  spec_model_free(&m);
  return rc;
}

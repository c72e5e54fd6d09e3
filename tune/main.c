/* main.c — hot-tune: sweeps (speed and accuracy variants of a spec's layers into a tuning
 * database), `merge` (shards into one database) and `show` (best variants, Pareto front, plot). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "num.h"
#include "plot.h" /* hot_plot_format: show --plot checked before any work */
#include "spec.h"
#include "tune.h"

#ifndef HOT_VERSION
#define HOT_VERSION "0"
#endif

static const char *k_usage =
    "usage: hot-tune SPEC [options]            sweep the spec's layers into a tuning database\n"
    "       hot-tune merge OUT.db IN.db...     merge databases (shards) into OUT.db (inputs are\n"
    "                                          checked first; none readable: OUT not created)\n"
    "       hot-tune show DB [show options]    best variants per layer, Pareto front, plot\n"
    "\n"
    "A sweep tries variants of each layer and records each in the tuning database (SQLite):\n"
    "  speed variants (GEMM tiles, warps, stages: never change a bit) are compiled in one pool\n"
    "    through the kernel cache, pruned on spills and occupancy, and on a GPU checked bit for\n"
    "    bit against the CPU twins and timed (CUDA events, cold L2, median); without a GPU they\n"
    "    are recorded as not timed;\n"
    "  accuracy variants (HQ b, HLA p/keep/rank, bits, scale granularity, rounding) get their g_x\n"
    "    and g_w errors against fp64 on seeded data (Gaussian, channel outliers, token outliers)\n"
    "    and on --capture tensors, on any machine; and their time on a GPU.\n"
    "The spec's hot.sweep { [\"field\"] = { values } } declares the axes; without one, defaults:\n"
    "  accuracy hq.block {8,16,32,64} x hla.keep {12,25,50} x hq.scale {tensor,sample,token};\n"
    "  speed tile_gx.tile_m/tile_n, tile_gx.stages, tile_gw.tile_m/tile_n (per GEMM path).\n"
    "libhot and hot-gen then plan each layer with the fastest bit-exact variant recorded for its\n"
    "shape (or the nearest shape): the user DB first, then the system DB shipped with hot.\n"
    "\n"
    "sweep options:\n"
    "  --layer NAME       only this layer\n"
    "  --db FILE          the database to write (default: $HOT_TUNE_DB, else <cache dir>/tune.db,\n"
    "                     the user DB the planner reads)\n"
    "  --kind K           speed, accuracy or all (default all)\n"
    "  --shard I/N        take only variants whose index modulo N is I (0 <= I < N): a\n"
    "                     deterministic slice, for array jobs (tools/slurm/)\n"
    "  --resume           skip variants already in the database\n"
    "  --budget SECONDS   start no variant after this many seconds (the rest: --resume later)\n"
    "  --arch ARCH        plan for ARCH (default: the GPU's, else the spec's first target)\n"
    "  --capture FILE     also measure errors on captured tensors (docs/capture.md); read and\n"
    "                     checked before anything runs\n"
    "  --batch N          accuracy data: samples (default: the spec's, at most 4)\n"
    "  --check-macs N     accuracy data: fewer samples until T*O*I <= N (default 1e9); at one\n"
    "                     sample fewer tokens too, as far as the blocking allows (L keeps its\n"
    "                     largest power-of-two divisor up to 2048)\n"
    "  --repeats N        GPU: timed runs per variant (default 20)\n"
    "  --jobs N           concurrent NVRTC compiles (default: $HOT_JIT_THREADS, else the CPUs)\n"
    "  --no-gpu           never use a GPU (speed variants: not timed)\n"
    "  --gpu              require a GPU (an error without one)\n"
    "  --progress MODE    bar, plain or auto (default: bar on a terminal, else plain lines)\n"
    "  --json             a JSON summary of the run on stdout\n"
    "\n"
    "show options:\n"
    "  --layer NAME       only this layer\n"
    "  --rows             every row, sorted, one line each, without the date (compare two DBs)\n"
    "  --plot FILE        draw error against time (or saved bytes when not timed) per layer:\n"
    "                     FILE.svg or FILE.png; the Pareto front joined, the chosen point ringed;\n"
    "                     at most 8 layers (the rest named: draw them with --layer)\n"
    "  --json             the rows as JSON\n"
    "  --sql              the rows fit for the system DB (speed, ok, timed, bit-exact) as the\n"
    "                     INSERT statements of tune/system.sql\n"
    "  (--rows, --json and --sql: one of them, without --plot, instead of the summary)\n"
    "\n"
    "exit status: 0 success; 1 a failure (message on stderr); 2 bad command line;\n"
    "130 interrupted (Ctrl-C): the rows written so far are complete; --resume continues.\n";

static int usage_error(const char *fmt, const char *arg) {
  char line[HOT_MSG_MAX]; /* one line, "hot-tune: " included, within the bound */
  int k = snprintf(line, sizeof line, "hot-tune: ");
  fileio_msgf(line + k, sizeof line - (size_t)k, fmt, arg);
  diag_fprintf(stderr, "%s\n(hot-tune --help for the options)\n", line);
  return 2;
}

static volatile sig_atomic_t g_stop = 0;
static void on_sigint(int sig) {
  (void)sig;
  g_stop = 1;
}

/* An option's value through num.h: an integer in [lo, hi] (integer != 0; *out its value), else
 * a number in [lo, hi]. 0, or -1 (said). */
static int parse_num(const char *opt, const char *s, double lo, double hi, int integer, double *out) {
  char err[160];
  uint64_t u = 0;
  const int rc = integer ? num_parse_u64(opt, s, (uint64_t)lo, (uint64_t)hi, &u, err, sizeof err)
                         : num_parse_double(opt, s, lo, hi, out, err, sizeof err);
  if (rc != 0) {
    diag_fprintf(stderr, "hot-tune: %s\n", err);
    return -1;
  }
  if (integer) *out = (double)u;
  return 0;
}

static void iso_now(char *buf, size_t n) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- the machine ------------------------------------------------------------------------------ */
const char *tune_env_arch_name(const tune_env *env) {
  return env->cpu_plan ? "cpu" : plan_arch_caps(env->arch)->name;
}

/* Recipe nvfp4 is tuned on the CPU backend only (its sm_120a plan is not verified on a GPU:
 * docs/nvfp4-gpu.md): its variants are planned for and measured there, and its rows say arch
 * "cpu". What needs a GPU or an arch is refused in one line. 0 or -1 (said). */
static int probe_cpu_recipe(const tune_opts *o, const hot_model *m, tune_env *env) {
  const char *r = plan_recipe_name(m->recipe);
  if (o->kinds & TUNE_SPEED) {
    diag_fprintf(stderr, "hot-tune: %s: recipe %s runs on the CPU backend only, it has no GPU "
                 "kernels to compile or time: sweep it with --kind accuracy\n", o->spec, r);
    return -1;
  }
  if (o->arch || o->gpu == 1) {
    diag_fprintf(stderr, "hot-tune: %s: recipe %s is tuned on the CPU backend only, its variants "
                 "are planned for it: leave out %s\n", o->spec, r, o->arch ? "--arch" : "--gpu");
    return -1;
  }
  env->cpu_plan = 1;
  env->arch = HOT_ARCH_CPU_STORAGE;
  return 0;
}

static int probe_env(const tune_opts *o, const hot_model *m, tune_env *env) {
  memset(env, 0, sizeof *env);
  if (m->recipe == HOT_RECIPE_NVFP4) return probe_cpu_recipe(o, m, env);
  env->arch = m->archs[0];
  if (o->gpu != 0) {
    hot_options opt;
    hot_options_init(&opt);
    opt.backend = HOT_BACKEND_CUDA;
    opt.arch = o->arch;
    hot_ctx *ctx = NULL;
    hot_status st = hot_ctx_create(&ctx, &opt);
    hot_stats s;
    const cuda_driver *d;
    if (st == HOT_OK && hot_ctx_stats(ctx, &s) == HOT_OK && cuda_driver_get(&d, NULL, 0) == RT_OK) {
      env->have_gpu = 1;
      snprintf(env->device, sizeof env->device, "%s", s.device_name);
      snprintf(env->driver, sizeof env->driver, "%d", d->version);
      if (plan_arch_parse(s.arch, &env->arch) != 0) env->arch = m->archs[0];
    } else if (o->gpu == 1) {
      diag_fprintf(stderr, "hot-tune: --gpu: no usable GPU: %s\n", hot_errmsg(ctx));
      hot_ctx_destroy(ctx);
      return -1;
    }
    hot_ctx_destroy(ctx);
  }
  if (o->arch && plan_arch_parse(o->arch, &env->arch) != 0) {
    char known[128];
    diag_fprintf(stderr, "hot-tune: --arch: unknown arch '%s' (%s)\n", o->arch,
                 plan_arch_list(known, sizeof known, ", "));
    return -1;
  }
  const cuda_nvrtc *nv;
  char err[512];
  if (cuda_nvrtc_get(&nv, err, sizeof err) == RT_OK)
    snprintf(env->nvrtc, sizeof env->nvrtc, "nvrtc-%d.%d", nv->major, nv->minor);
  else if (o->kinds & TUNE_SPEED) {
    diag_fprintf(stderr, "hot-tune: speed variants need NVRTC: %s (use --kind accuracy without it)\n", err);
    return -1;
  }
  return 0;
}

/* The row key of a variant (values are filled by the stages). */
static void row_key(hot_tune_row *r, const tune_env *env, const hot_model *m, const tune_variant *v,
                    const hot_layer_spec *s) {
  tunedb_row_init(r);
  const hot_layer_spec *l = &m->layers[v->layer];
  snprintf(r->device, sizeof r->device, "%s", env->have_gpu ? env->device : "");
  snprintf(r->arch, sizeof r->arch, "%s", tune_env_arch_name(env));
  snprintf(r->driver, sizeof r->driver, "%s", env->have_gpu ? env->driver : "");
  snprintf(r->nvrtc, sizeof r->nvrtc, "%s", v->cls == HOT_FIELD_SPEED || env->have_gpu ? env->nvrtc : "");
  snprintf(r->hot_version, sizeof r->hot_version, "%s", HOT_VERSION);
  r->batch = m->batch;
  r->tokens = l->tokens ? l->tokens : m->tokens;
  r->out_features = l->out_features;
  r->in_features = l->in_features;
  snprintf(r->dtype, sizeof r->dtype, "%s", plan_dtype_name(l->dtype));
  snprintf(r->recipe, sizeof r->recipe, "%s", plan_recipe_name(m->recipe));
  fields_canonical(s, HOT_FIELD_ACCURACY, r->base, sizeof r->base);
  snprintf(r->kind, sizeof r->kind, "%s", v->cls == HOT_FIELD_SPEED ? "speed" : "accuracy");
  snprintf(r->variant, sizeof r->variant, "%s", v->assign);
  snprintf(r->model, sizeof r->model, "%s", m->name);
  snprintf(r->layer, sizeof r->layer, "%s", l->name);
}

/* The resolved plan in one line (tiles of both GEMMs, b, p, r) into r->config. */
static int row_config(hot_tune_row *r, const hot_model *m, const tune_env *env, int layer,
                      const hot_layer_spec *s) {
  hot_layer_plan pl;
  char e[300];
  const int64_t L = s->tokens ? s->tokens : m->tokens;
  if ((env->cpu_plan ? plan_layer_cpu(s, m->batch, L, m->recipe, layer, &pl, e, sizeof e)
                     : plan_layer(s, m->batch, L, m->recipe, env->arch, layer, &pl, e, sizeof e)) != 0) {
    snprintf(r->status, sizeof r->status, "plan_refused");
    fileio_msgf(r->note, sizeof r->note, "%s", e);
    return -1;
  }
  r->saved_bytes = pl.abc.enabled ? pl.abc.bytes : pl.abc.fp32_bytes; /* at the spec's size */
  const hot_gemm_plan *g[2] = {&pl.hq.gemm, &pl.hla.gemm};
  size_t used = 0;
  for (int i = 0; i < 2; ++i) {
    int w = snprintf(r->config + used, sizeof r->config - used, "%sg%s=%s:%dx%dx%d/w%dx%d/s%d",
                     i ? ";" : "", i ? "w" : "x", plan_gemm_path_name(g[i]->path), g[i]->tile_m,
                     g[i]->tile_n, g[i]->tile_k, g[i]->warps_m, g[i]->warps_n, g[i]->stages);
    if (w < 0 || (size_t)w >= sizeof r->config - used) return 0;
    used += (size_t)w;
  }
  snprintf(r->config + used, sizeof r->config - used, ";b=%d;p=%d;r=%d", pl.hq.block,
           pl.hla.block, pl.hla.rank);
  return 0;
}

/* ---- sweep -------------------------------------------------------------------------------------- */
enum { PF_CHUNK = 16 }; /* speed variants whose kernels compile in one pool */
typedef struct {
  int done, skipped, ok, not_ok, timed;
  double best_ms;
} sweep_sum;

/* What one sweep holds between its stages. */
typedef struct {
  tune_opts *o;
  hot_model m;
  tune_env env;
  tune_variant *vars;
  int nv;
  char dbpath[1024];
  hot_tunedb *db;
  tune_speed *sp;
  hot_layer_spec *specs;      /* this shard's variants to run: their specs, */
  int *todo, *layers;         /* indices into vars and layer indices */
  int n_mine, n_skip;         /* to run; already recorded (--resume) */
  char err[1024];
} sweep_state;

/* A bad HOT_* value fails every layer later: say it once, now. 0 or -1 (said). */
static int check_environment(void) {
  hot_env ev;
  char eerr[600];
  if (env_read(&ev, 0, eerr, sizeof eerr) != RT_OK) {
    diag_fprintf(stderr, "hot-tune: %s\n", eerr);
    return -1;
  }
  return 0;
}

/* --capture, read and checked once: one error now, not a note per row (speed variants never use
 * it); it must fit a layer being swept. 0 or -1 (said; nothing left loaded). */
static int load_capture(const tune_opts *o, const hot_model *m) {
  char cerr[1024];
  if (tune_accuracy_load_capture(o->capture, cerr, sizeof cerr) != 0) {
    diag_fprintf(stderr, "hot-tune: --capture: %s\n", cerr);
    return -1;
  }
  const hot_capture *c = tune_accuracy_capture();
  int fits = 0;
  char why[300] = "", w[300];
  for (int i = 0; i < m->n_layers; ++i)
    if (!o->layer || !strcmp(o->layer, m->layers[i].name)) {
      if (tune_capture_fits(m, i, o, c, w, sizeof w)) fits = 1;
      else if (!*why) fileio_msgf(why, sizeof why, "%s", w);
    }
  if (!fits) {
    diag_fprintf(stderr, "hot-tune: --capture: %s (layer '%s', B x L x O x I = %lld x %lld x %lld x "
            "%lld) fits no layer being swept%s%s%s: %s\n", o->capture, c->name, (long long)c->B,
            (long long)c->L, (long long)c->O, (long long)c->I, o->layer ? " (--layer " : "",
            o->layer ? o->layer : "", o->layer ? ")" : "", why);
    tune_accuracy_free_capture();
    return -1;
  }
  return 0;
}

/* The database to write: --db, else the user DB the planner reads. 0 or -1 (said). */
static int find_db_path(sweep_state *w) {
  if (w->o->db) {
    snprintf(w->dbpath, sizeof w->dbpath, "%s", w->o->db);
    return 0;
  }
  hot_env ev;
  if (env_read(&ev, 0, w->err, sizeof w->err) != RT_OK) {
    diag_fprintf(stderr, "hot-tune: %s\n", w->err);
    return -1;
  }
  hot_tuned paths;
  memset(&paths, 0, sizeof paths);
  tuned_open(&paths, &ev, NULL);
  snprintf(w->dbpath, sizeof w->dbpath, "%s", paths.user_path);
  tuned_close(&paths);
  if (!*w->dbpath) {
    diag_fprintf(stderr, "hot-tune: no user DB path (HOME unset): give --db FILE or set HOT_TUNE_DB\n");
    return -1;
  }
  /* the default DB lives in hot's cache folder, created as the kernel cache's is, and said */
  char dir[sizeof w->dbpath], made[sizeof w->dbpath], why[512];
  snprintf(dir, sizeof dir, "%s", w->dbpath);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    if (fileio_mkdir_default(dir, made, sizeof made, why, sizeof why) != 0) {
      diag_fprintf(stderr, "hot-tune: the default tuning database %s: %s\n", w->dbpath, why);
      return -1;
    }
    if (*made) diag_fprintf(stderr, "hot-tune: created %s for the default tuning database %s\n", made, w->dbpath);
  }
  return 0;
}

/* This shard's variants, minus those already recorded (--resume), into specs/todo/layers.
 * 0 or -1 (said). */
static int select_variants(sweep_state *w) {
  const int nv = w->nv;
  w->specs = calloc((size_t)nv + 1, sizeof *w->specs);
  w->todo = calloc((size_t)nv + 1, sizeof *w->todo);
  w->layers = calloc((size_t)nv + 1, sizeof *w->layers);
  if (!w->specs || !w->todo || !w->layers) {
    diag_fprintf(stderr, "hot-tune: out of memory\n");
    return -1;
  }
  for (int i = 0; i < nv; ++i) {
    if (w->vars[i].index % w->o->shard_n != w->o->shard_i) continue;
    hot_layer_spec s;
    if (tune_variant_spec(&w->m, &w->vars[i], &s, w->err, sizeof w->err) != 0) {
      diag_fprintf(stderr, "hot-tune: %s\n", w->err);
      return -1;
    }
    if (w->o->resume) {
      hot_tune_row key;
      row_key(&key, &w->env, &w->m, &w->vars[i], &s);
      int have = tunedb_get(w->db, &key, NULL, w->err, sizeof w->err);
      if (have < 0) {
        diag_fprintf(stderr, "hot-tune: %s\n", w->err);
        return -1;
      }
      if (have) {
        ++w->n_skip;
        continue;
      }
    }
    w->specs[w->n_mine] = s;
    w->layers[w->n_mine] = w->vars[i].layer;
    w->todo[w->n_mine++] = i;
  }
  return 0;
}

/* Everything before the run: the spec's machine, variants, database, speed side. 0 or -1
 * (said). */
static int sweep_prepare(sweep_state *w) {
  tune_opts *o = w->o;
  if (probe_env(o, &w->m, &w->env) != 0) return -1;
  o->plan_arch = plan_arch_caps(w->env.arch)->name;
  o->cpu_plan = w->env.cpu_plan;
  if (tune_space(&w->m, o, w->env.arch, &w->vars, &w->nv, w->err, sizeof w->err) != 0) {
    diag_fprintf(stderr, "hot-tune: %s\n", w->err);
    return -1;
  }
  if (tunedb_open_write(&w->db, w->dbpath, w->err, sizeof w->err) != RT_OK) {
    diag_fprintf(stderr, "hot-tune: %s\n", w->err);
    return -1;
  }
  if (select_variants(w) != 0) return -1;
  diag_fprintf(stderr, "hot-tune: %s: %d variant%s in all, %d in shard %d/%d, %d already recorded, %d to "
          "run; arch %s, %s; database %s\n", o->spec, w->nv, w->nv == 1 ? "" : "s",
          w->n_mine + w->n_skip, o->shard_i, o->shard_n, w->n_skip, w->n_mine,
          tune_env_arch_name(&w->env), w->env.have_gpu ? w->env.device : "no GPU",
          w->dbpath);
  /* speed variants compile in one pool per chunk of PF_CHUNK (the run loop, below): distinct
   * kernels of a chunk compile in parallel, and --budget / Ctrl-C are seen between chunks */
  int n_speed = 0;
  for (int k = 0; k < w->n_mine; ++k) n_speed += w->vars[w->todo[k]].cls == HOT_FIELD_SPEED;
  if ((n_speed || w->env.have_gpu) && !(w->sp = tune_speed_open(o, &w->env, w->err, sizeof w->err))) {
    diag_fprintf(stderr, "hot-tune: %s\n", w->err);
    return -1;
  }
  return 0;
}

/* Compiles the kernels of the next PF_CHUNK speed variants from k on; *next_pf = the first
 * variant after them. 0 or -1 (message in w->err). */
static int prefetch_chunk(sweep_state *w, int k, int *next_pf) {
  hot_layer_spec ss[PF_CHUNK];
  int sl[PF_CHUNK], c = 0, e = k;
  for (; e < w->n_mine && c < PF_CHUNK; ++e)
    if (w->vars[w->todo[e]].cls == HOT_FIELD_SPEED) ss[c] = w->specs[e], sl[c++] = w->layers[e];
  *next_pf = e;
  return tune_speed_prefetch(w->sp, &w->m, sl, ss, c, w->err, sizeof w->err);
}

/* An accuracy row that is "ok" on a GPU: its time there (and bit-exactness) from t; what the GPU
 * run found wins over the CPU's "ok". */
static void take_gpu_time(hot_tune_row *row, const hot_tune_row *t) {
  row->timed = t->timed, row->time_med_ms = t->time_med_ms, row->time_p10_ms = t->time_p10_ms;
  row->time_p90_ms = t->time_p90_ms, row->time_min_ms = t->time_min_ms, row->repeats = t->repeats;
  row->bitexact = t->bitexact, row->regs = t->regs, row->spills = t->spills;
  row->smem_bytes = t->smem_bytes, row->occupancy = t->occupancy;
  if (strcmp(t->status, "ok") != 0) {
    snprintf(row->status, sizeof row->status, "%s", t->status);
    fileio_msgf(row->note, sizeof row->note, "%s", t->note);
  }
}

/* Variant k into *row (key and values). 0 (row filled, whatever its status), -1 on an error
 * (message in w->err). */
static int run_variant(sweep_state *w, int k, hot_tune_row *row) {
  const tune_variant *v = &w->vars[w->todo[k]];
  const hot_layer_spec *s = &w->specs[k];
  row_key(row, &w->env, &w->m, v, s);
  /* a variant the planner refuses at the spec's own size is recorded as refused, not run */
  int src = row_config(row, &w->m, &w->env, v->layer, s) != 0 ? 0
            : v->cls == HOT_FIELD_SPEED
                ? tune_speed_run(w->sp, &w->m, v->layer, s, row, w->err, sizeof w->err)
                : tune_accuracy(&w->m, v->layer, s, w->o, row, w->err, sizeof w->err);
  if (src == 0 && v->cls == HOT_FIELD_ACCURACY && w->env.have_gpu && !strcmp(row->status, "ok")) {
    hot_tune_row t = *row;
    if (tune_speed_run(w->sp, &w->m, v->layer, s, &t, w->err, sizeof w->err) == 0)
      take_gpu_time(row, &t);
  }
  return src;
}

static void tally(sweep_sum *sum, const hot_tune_row *row) {
  ++sum->done;
  if (!strcmp(row->status, "ok")) ++sum->ok;
  else ++sum->not_ok;
  if (row->timed) {
    ++sum->timed;
    if (row->time_med_ms < sum->best_ms) sum->best_ms = row->time_med_ms;
  }
}

/* The run: every selected variant until the end, Ctrl-C, --budget or an error (*failed). */
static void run_variants(sweep_state *w, tune_progress *pr, double t0, sweep_sum *sum,
                         int *budget_hit, int *failed) {
  int next_pf = 0; /* variants before this index are prefetched */
  for (int k = 0; k < w->n_mine && !g_stop; ++k) {
    if (w->o->budget_s > 0 && (tune_now_ms() - t0) / 1000.0 >= w->o->budget_s) {
      *budget_hit = 1;
      break;
    }
    hot_tune_row row;
    int bad = w->vars[w->todo[k]].cls == HOT_FIELD_SPEED && k >= next_pf &&
              prefetch_chunk(w, k, &next_pf) != 0;
    if (!bad) bad = run_variant(w, k, &row) != 0;
    if (!bad) {
      iso_now(row.date, sizeof row.date);
      bad = tunedb_put(w->db, &row, w->err, sizeof w->err) != RT_OK;
    }
    if (bad) {
      diag_fprintf(stderr, "%shot-tune: %s\n", pr->bar ? "\n" : "", w->err);
      *failed = 1;
      break;
    }
    tally(sum, &row);
    char label[HOT_TUNE_TEXT + 128];
    snprintf(label, sizeof label, "%s %s %s: %s", row.layer, row.kind, row.variant, row.status);
    tune_progress_step(pr, label);
  }
}

/* The summary: JSON on stdout (--json), lines on stderr. */
static void sweep_report(const sweep_state *w, const sweep_sum *sum, double wall, int budget_hit,
                         int failed) {
  const tune_opts *o = w->o;
  const int left = w->n_mine - sum->done;
  if (o->json) {
    fputs("{\"spec\":", stdout);
    tune_json_str(stdout, o->spec);
    fputs(",\"db\":", stdout);
    tune_json_str(stdout, w->dbpath);
    fputs(",\"device\":", stdout);
    tune_json_str(stdout, w->env.device);
    printf(",\"arch\":\"%s\",\"variants\":%d,\"shard\":\"%d/%d\",\"skipped\":%d,\"done\":%d,"
           "\"ok\":%d,\"not_ok\":%d,\"timed\":%d,\"left\":%d,\"interrupted\":%s,"
           "\"budget_reached\":%s,\"wall_s\":%.3f}\n",
           tune_env_arch_name(&w->env), w->nv, o->shard_i, o->shard_n, w->n_skip, sum->done,
           sum->ok, sum->not_ok, sum->timed, left, g_stop ? "true" : "false",
           budget_hit ? "true" : "false", wall);
  }
  diag_fprintf(stderr, "hot-tune: %d variant%s recorded in %.1f s (%d ok, %d not ok, %d timed)%s\n",
          sum->done, sum->done == 1 ? "" : "s", wall, sum->ok, sum->not_ok, sum->timed,
          w->env.have_gpu || !(o->kinds & TUNE_SPEED) ? "" : "; no GPU: speed variants compiled, not timed");
  if (left && !failed)
    diag_fprintf(stderr, "hot-tune: %s: %d variant%s left; run again with --resume to continue\n",
            g_stop ? "interrupted" : "budget reached", left, left == 1 ? "" : "s");
}

/* The run with Ctrl-C caught, the progress shown, and the summary. Returns the exit status. */
static int sweep_run(sweep_state *w) {
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  tune_progress pr;
  tune_progress_start(&pr, stderr, w->o->progress, w->n_mine);
  const double t0 = tune_now_ms();
  sweep_sum sum = {0};
  sum.best_ms = INFINITY;
  int failed = 0, budget_hit = 0;
  run_variants(w, &pr, t0, &sum, &budget_hit, &failed);
  tune_progress_end(&pr);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sweep_report(w, &sum, (tune_now_ms() - t0) / 1000.0, budget_hit, failed);
  return failed ? 1 : g_stop ? 130 : 0;
}

static int sweep(tune_opts *o) {
  if (check_environment() != 0) return 1;
  sweep_state *w = calloc(1, sizeof *w);
  if (!w) {
    diag_fprintf(stderr, "hot-tune: out of memory\n");
    return 1;
  }
  w->o = o;
  /* The database to write, found and checked before any work, and while the tuning environment
   * is still the user's (the default path is the planner's user DB). */
  char owhy[256];
  if (find_db_path(w) != 0) {
    free(w);
    return 1;
  }
  if (o->db && fileio_check_output(o->db, 0, owhy, sizeof owhy) != 0) {
    diag_fprintf(stderr, "hot-tune: --db %s: %s\n", o->db, owhy);
    free(w);
    return 1;
  }
  /* Variants are planned exactly as given: the contexts hot-tune opens must not replace the
   * default tiles of the layer as written by a row of an earlier sweep. */
  setenv("HOT_TUNE", "0", 1);
  hot_diag d = {0};
  int rc = spec_load_file(o->spec, NULL, &w->m, &d);
  for (int i = 0; i < d.count; ++i) diag_fprintf(stderr, "%s\n", d.lines[i]);
  diag_free(&d);
  int status = 1;
  if (rc == 0 && (!o->capture || !(o->kinds & TUNE_ACCURACY) || load_capture(o, &w->m) == 0)) {
    if (sweep_prepare(w) == 0) status = sweep_run(w);
    tune_speed_close(w->sp);
    tunedb_close(w->db);
    tune_accuracy_reset();
    tune_accuracy_free_capture();
  }
  free(w->specs), free(w->todo), free(w->layers);
  free(w->vars);
  spec_model_free(&w->m);
  free(w);
  return status;
}

/* ---- merge ------------------------------------------------------------------------------------ */
static int merge(int argc, char **argv) {
  for (int i = 0; i < argc; ++i) { /* no options but --help: a database named -x is ./-x */
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(k_usage, stdout);
      exit(0);
    }
    if (argv[i][0] == '-') return usage_error("merge: unknown option %s", argv[i]);
    if (!argv[i][0]) return usage_error("%s", "merge: an empty database path");
  }
  if (argc < 2) return usage_error("%s", "merge needs OUT.db and at least one IN.db");
  hot_tunedb *db = NULL;
  char err[1024];
  /* Every input is checked before OUT is opened (created): inputs that cannot be read are
   * reported and skipped; when none can, OUT is left as it was (not created). */
  char owhy[256];
  if (fileio_check_output(argv[0], 0, owhy, sizeof owhy) != 0) { /* OUT first: before any work */
    diag_fprintf(stderr, "hot-tune: merge: %s: %s\n", argv[0], owhy);
    return 1;
  }
  int status = 0, usable = 0;
  char *ok = calloc((size_t)argc, 1);
  if (!ok) {
    diag_fprintf(stderr, "hot-tune: out of memory\n");
    return 1;
  }
  for (int i = 1; i < argc; ++i) {
    hot_tunedb *src = NULL;
    if (tunedb_open(&src, argv[i], 1, err, sizeof err) != RT_OK) {
      diag_fprintf(stderr, "hot-tune: %s\n", err);
      status = 1;
      continue;
    }
    tunedb_close(src);
    ok[i] = 1;
    ++usable;
  }
  if (!usable) {
    diag_fprintf(stderr, "hot-tune: merge: no input could be read; %s left as it was\n", argv[0]);
    free(ok);
    return 1;
  }
  if (tunedb_open_write(&db, argv[0], err, sizeof err) != RT_OK) {
    diag_fprintf(stderr, "hot-tune: %s\n", err);
    free(ok);
    return 1;
  }
  for (int i = 1; i < argc; ++i) {
    if (!ok[i]) continue;
    int64_t n = 0;
    if (tunedb_merge(db, argv[i], &n, err, sizeof err) != RT_OK) {
      diag_fprintf(stderr, "hot-tune: %s\n", err);
      status = 1;
      continue;
    }
    diag_fprintf(stderr, "hot-tune: merged %lld row%s from %s\n", (long long)n, n == 1 ? "" : "s", argv[i]);
  }
  tunedb_close(db);
  free(ok);
  return status;
}

/* show's one output: the rows in one format (--rows, --json, --sql), or the summary with its
 * plot (--plot). 0, or 2 (said). */
static int show_outputs_clash(const show_opts *so) {
  if (so->rows + so->json + so->sql > 1)
    return usage_error("show: --rows, --json and --sql are formats of the rows: give one (got %s)",
                       so->rows && so->json  ? "--rows and --json"
                       : so->sql && so->json ? "--json and --sql"
                                             : "--rows and --sql");
  if (so->plot && (so->rows || so->json || so->sql))
    return usage_error("show: --plot draws the summary, not the rows of %s (give it alone)",
                       so->rows ? "--rows" : so->json ? "--json" : "--sql");
  return 0;
}

/* hot-tune show [options] DB: argv[0] is the first argument after "show". */
static int show_main(int argc, char **argv) {
  show_opts so;
  memset(&so, 0, sizeof so);
  for (int i = 0; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(k_usage, stdout);
      exit(0);
    } else if (!strcmp(a, "--rows")) so.rows = 1;
    else if (!strcmp(a, "--json")) so.json = 1;
    else if (!strcmp(a, "--sql")) so.sql = 1;
    else if (!strcmp(a, "--layer") || !strcmp(a, "--plot")) {
      const char **slot = !strcmp(a, "--layer") ? &so.layer : &so.plot;
      if (i + 1 >= argc) return usage_error("%s needs a value", a);
      if (*slot) return usage_error("%s given twice", a);
      if (!*argv[i + 1]) return usage_error("%s needs a value (got an empty one)", a);
      *slot = argv[++i];
    } else if (a[0] == '-') return usage_error("show: unknown option %s", a);
    else if (so.db) return usage_error("show: more than one DB (%s)", a);
    else so.db = a;
  }
  if (!so.db) return usage_error("%s", "show needs a DB");
  if (show_outputs_clash(&so)) return 2;
  char owhy[256];
  if (so.plot && hot_plot_format(so.plot, owhy, sizeof owhy) < 0)
    return usage_error("--%s", owhy); /* "plot: FILE: unsupported extension ..." */
  if (so.plot && fileio_check_output(so.plot, 0, owhy, sizeof owhy) != 0) {
    diag_fprintf(stderr, "hot-tune: --plot %s: %s\n", so.plot, owhy);
    return 2;
  }
  return tune_show(&so, stdout);
}

/* The sweep options that take a word: --kind, --shard, --progress. 0, or 2 (said). */
static int sweep_word(tune_opts *o, const char *a, const char *val) {
  if (!strcmp(a, "--kind")) {
    if (!strcmp(val, "speed")) o->kinds = TUNE_SPEED;
    else if (!strcmp(val, "accuracy")) o->kinds = TUNE_ACCURACY;
    else if (!strcmp(val, "all")) o->kinds = TUNE_SPEED | TUNE_ACCURACY;
    else return usage_error("--kind: '%s' is not speed, accuracy or all", val);
  } else if (!strcmp(a, "--shard")) {
    /* I and N through num.h (each an integer, N in [1, 1000000]) */
    char part[32], err[160];
    const char *slash = strchr(val, '/');
    int si = -1, sn = 0;
    if (slash && (size_t)(slash - val) < sizeof part) {
      memcpy(part, val, (size_t)(slash - val));
      part[slash - val] = '\0';
      if (num_parse_int("--shard N", slash + 1, 1, 1000000, &sn, err, sizeof err) ||
          num_parse_int("--shard I", part, 0, sn - 1, &si, err, sizeof err))
        si = -1;
    }
    if (si < 0) return usage_error("--shard: '%s' is not I/N with 0 <= I < N", val);
    o->shard_i = si;
    o->shard_n = sn;
  } else {
    if (!strcmp(val, "bar")) o->progress = 1;
    else if (!strcmp(val, "plain")) o->progress = 0;
    else if (!strcmp(val, "auto")) o->progress = -1;
    else return usage_error("--progress: '%s' is not bar, plain or auto", val);
  }
  return 0;
}

/* The sweep options that take a value (sweep_value reads each). */
static const char *const k_sweep_values[] = {"--layer", "--db", "--arch", "--capture", "--kind",
                                             "--shard", "--progress", "--budget", "--batch",
                                             "--check-macs", "--repeats", "--jobs"};

/* The index of a in k_sweep_values, or -1. */
static int sweep_value_index(const char *a) {
  for (int k = 0; k < (int)(sizeof k_sweep_values / sizeof *k_sweep_values); ++k)
    if (!strcmp(a, k_sweep_values[k])) return k;
  return -1;
}

/* One sweep option with its value. 0, or 2 (said). */
static int sweep_value(tune_opts *o, const char *a, const char *val) {
  double v;
  if (!*val && (!strcmp(a, "--layer") || !strcmp(a, "--db") || !strcmp(a, "--arch") ||
                !strcmp(a, "--capture"))) /* the other options' parsers name an empty value */
    return usage_error("%s needs a value (got an empty one)", a);
  if (!strcmp(a, "--layer")) o->layer = val;
  else if (!strcmp(a, "--db")) o->db = val;
  else if (!strcmp(a, "--arch")) o->arch = val;
  else if (!strcmp(a, "--capture")) o->capture = val;
  else if (!strcmp(a, "--kind") || !strcmp(a, "--shard") || !strcmp(a, "--progress"))
    return sweep_word(o, a, val);
  else if (!strcmp(a, "--budget")) {
    if (parse_num(a, val, 1e-3, 1e9, 0, &v)) return 2;
    o->budget_s = v;
  } else if (!strcmp(a, "--batch")) {
    if (parse_num(a, val, 1, 1 << 24, 1, &v)) return 2;
    o->batch = (int64_t)v;
  } else if (!strcmp(a, "--check-macs")) {
    if (parse_num(a, val, 1, 1e15, 0, &v)) return 2;
    o->check_macs = v;
  } else if (!strcmp(a, "--repeats")) {
    if (parse_num(a, val, 1, 10000, 1, &v)) return 2;
    o->repeats = (int)v;
  } else if (!strcmp(a, "--jobs")) {
    if (parse_num(a, val, 1, 64, 1, &v)) return 2;
    o->jobs = (int)v;
  } else return usage_error("unknown option %s", a);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(k_usage, stderr);
    return 2;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    fputs(k_usage, stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("hot-tune %s\n", HOT_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "merge")) return merge(argc - 2, argv + 2);
  if (!strcmp(argv[1], "show")) return show_main(argc - 2, argv + 2);
  tune_opts o;
  memset(&o, 0, sizeof o);
  o.shard_n = 1;
  o.kinds = TUNE_SPEED | TUNE_ACCURACY;
  o.check_macs = 1e9;
  o.repeats = 20;
  o.progress = -1;
  o.gpu = -1;
  unsigned given = 0; /* the value options seen (bit k: k_sweep_values[k]): each at most once */
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    int k;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(k_usage, stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("hot-tune %s\n", HOT_VERSION);
      return 0;
    } else if (!strcmp(a, "--resume")) o.resume = 1;
    else if (!strcmp(a, "--json")) o.json = 1;
    else if (!strcmp(a, "--no-gpu") || !strcmp(a, "--gpu")) {
      const int gpu = !strcmp(a, "--gpu");
      if (o.gpu == !gpu) return usage_error("%s", "--gpu and --no-gpu contradict each other");
      o.gpu = gpu;
    } else if ((k = sweep_value_index(a)) >= 0) {
      if (i + 1 >= argc) return usage_error("%s needs a value", a);
      if (given & 1u << k) return usage_error("%s given twice", a);
      given |= 1u << k;
      int rc = sweep_value(&o, a, argv[++i]);
      if (rc) return rc;
    } else if (a[0] == '-' && a[1]) return usage_error("unknown option %s", a);
    else if (o.spec) return usage_error("more than one SPEC (%s)", a);
    else o.spec = a;
  }
  if (!o.spec) return usage_error("%s", "no SPEC given");
  if (o.capture && access(o.capture, R_OK) != 0)
    return usage_error("--capture: cannot read '%s'", o.capture);
  return sweep(&o);
}

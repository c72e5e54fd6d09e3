/* tune.h — hot-tune: autotuning sweeps that record, per variant of a layer, its speed (GPU) and
 * its numerical error next to each other in the tuning database (runtime/tunedb.h read side,
 * tunedb_write.h write side). One stage per file:
 *
 *   main.c      CLI: sweep, merge, show; options, the run loop, Ctrl-C, budget, resume
 *   space.c     the variant list: axes from the spec's hot.sweep or the default spaces, the
 *               cartesian product in a fixed order, shards
 *   accuracy.c  errors of a variant against fp64 on seeded and captured data (CPU twins)
 *   speed.c     compile (one pool), registers/spills/occupancy and pruning; on a GPU the
 *               bit-exactness against the CPU twin and CUDA-event timings with a cold L2
 *   progress.c  a progress bar with ETA on a terminal, plain lines otherwise
 *   show.c      the best variants per layer, the Pareto front, the plot (plot.c draws it)
 */
#ifndef HOT_TUNE_H
#define HOT_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "fields.h"
#include "hot.h"
#include "hot_tools.h" /* libhot's internals: capture files, the tuning DB, the JIT */
#include "plan.h"
#include "buf.h"
#include "diag.h" /* diag_fprintf, diag_names: bounded messages */
#include "escape.h"
#include "fileio.h"
#include "tunedb_write.h"

/* ---- options of a sweep ------------------------------------------------------------------- */
enum { TUNE_SPEED = 1, TUNE_ACCURACY = 2 };

typedef struct {
  const char *spec;         /* spec file */
  const char *layer;        /* NULL: every layer */
  const char *db;           /* NULL: the user DB ($HOT_TUNE_DB, else <cache dir>/tune.db) */
  const char *arch;         /* NULL: the device's on a GPU, else the spec's first target */
  const char *plan_arch;    /* set by the sweep: the arch it resolved (accuracy variants are
                               planned for it too, so refusals name the arch of the sweep) */
  int cpu_plan;             /* set by the sweep: 1 when the recipe has no GPU path (nvfp4):
                               variants are planned for the CPU backend (plan_layer_cpu) and
                               run there without a forced arch; plan_arch is then unused */
  const char *capture;      /* captured tensors of the layer (docs/capture.md), or NULL */
  int shard_i, shard_n;     /* this process takes variants with index % shard_n == shard_i */
  int kinds;                /* TUNE_SPEED | TUNE_ACCURACY */
  int resume;               /* skip variants whose row exists */
  int json;                 /* a JSON summary on stdout instead of the table */
  double budget_s;          /* stop starting variants after this many seconds (0: none) */
  int64_t batch;            /* accuracy data: samples (0: the spec's batch, at most 4) */
  double check_macs;        /* accuracy data: largest T*O*I per product (tokens cut to fit) */
  int repeats;              /* GPU: timed runs per variant */
  int jobs;                 /* concurrent NVRTC compiles (0: default) */
  int progress;             /* -1 auto (bar on a terminal), 0 plain lines, 1 bar */
  int gpu;                  /* -1 auto (CUDA when usable), 0 never, 1 required */
} tune_opts;

/* ---- what a run knows about its machine ---------------------------------------------------- */
typedef struct {
  char device[128];         /* CUDA device name, "" without a GPU */
  char driver[32];          /* cuDriverGetVersion as text, "" without a GPU */
  char nvrtc[32];           /* "nvrtc-13.0", "" when NVRTC cannot be loaded */
  hot_arch arch;
  int have_gpu;
  int cpu_plan;             /* the recipe has no GPU path (nvfp4): CPU plans, rows say arch "cpu" */
} tune_env;

/* The arch a sweep's rows name: "cpu" for a CPU-planned recipe, else the arch's table name. */
const char *tune_env_arch_name(const tune_env *env);

/* ---- space.c ------------------------------------------------------------------------------ */
/* Most variants of one layer (both kinds together, the layer as written included): a space
 * beyond it is refused before a variant is built. */
#define TUNE_MAX_VARIANTS (1 << 20)

typedef struct {
  int layer;                 /* index in the model */
  hot_field_class cls;       /* SPEED or ACCURACY */
  int index;                 /* position in the whole list (shards slice by it) */
  char assign[HOT_TUNE_TEXT];/* "path=value;..." in axis order */
} tune_variant;

typedef struct {
  char field[HOT_NAME_MAX];
  int n;
  const char *values[HOT_MAX_SWEEP];
} tune_axis;

/* The axes of class `cls` for a layer planned for `arch`: the spec's sweep axes of that class,
 * or the default space when the spec declares none (tiles that suit the arch's GEMM path; HQ
 * block x HLA keep x g' scale; recipe nvfp4, which fixes HQ's block and the scales: HLA block p
 * x HLA keep). Fills axes[0..*n). Returns 0, or -1 with a message (an axis
 * whose field is unknown). */
int tune_axes(const hot_model *m, hot_field_class cls, hot_arch arch, tune_axis *axes, int *n,
              char *err, size_t errlen);

/* Every variant of the selected layers and kinds, in a fixed order (layers in spec order; speed
 * variants, then accuracy; per class first the layer as the spec writes it — variant "", the
 * reference a sweep is compared with — then the cartesian product with the last axis fastest). *out malloc'd (the
 * caller frees it), *n its length. Returns 0, or -1 with a message (unknown layer, an empty
 * space, no memory). */
int tune_space(const hot_model *m, const tune_opts *o, hot_arch arch, tune_variant **out,
               int *n, char *err, size_t errlen);

/* The layer's spec with a variant applied (a copy). Returns 0 or -1 with a message. */
int tune_variant_spec(const hot_model *m, const tune_variant *v, hot_layer_spec *out, char *err,
                      size_t errlen);

/* ---- accuracy.c --------------------------------------------------------------------------- */
/* Plans layer `layer` of m with spec s at B x L as the sweep plans it: for the CPU backend when
 * o->cpu_plan, else for o->plan_arch (the model's first target when unset). Returns 0, or -1
 * with the planner's one-line reason in err. *pl borrows s. */
int tune_plan(const hot_model *m, const tune_opts *o, const hot_layer_spec *s, int64_t B,
              int64_t L, int layer, hot_layer_plan *pl, char *err, size_t errlen);
/* Errors of one variant (spec `s` of layer index `layer` of m) on the CPU twins against fp64:
 * g_x and g_w relative Frobenius errors on the seeded data kinds and the capture (when o->capture
 * is set). Fills row->gx_err/gw_err/capture, status "ok" or
 * "plan_refused"/"failed" with a note. Returns 0 (row filled, whatever the status), -1 only on
 * out-of-memory (message in err). */
int tune_accuracy(const hot_model *m, int layer, const hot_layer_spec *s, const tune_opts *o,
                  hot_tune_row *row, char *err, size_t errlen);
/* Frees the fp64 references and the seeded inputs kept between variants. */
void tune_accuracy_reset(void);
/* Reads and validates the --capture file once, up front (the variants then copy its tensors).
 * Returns 0, or -1 with the reader's one-line message in err. tune_accuracy_capture: the loaded
 * capture (borrowed) or NULL; tune_accuracy_free_capture releases it. */
int tune_accuracy_load_capture(const char *path, char *err, size_t errlen);
/* 1 when capture c can measure layer `layer` of m: the layer's O and I, and a B x L whose plan
 * blocks as the layer's at the spec's B x L (any B; L with the layer's HQ/HLA blocking, layout
 * and rank: the rule of the seeded data's size). Else 0 with why (docs/capture.md). */
int tune_capture_fits(const hot_model *m, int layer, const tune_opts *o, const hot_capture *c,
                      char *why, size_t whylen);
const hot_capture *tune_accuracy_capture(void);
void tune_accuracy_free_capture(void);

/* ---- speed.c ------------------------------------------------------------------------------ */
typedef struct tune_speed tune_speed;
/* Opens the compile side (kernel cache, NVRTC) and, when env->have_gpu, the GPU side. NULL with a
 * message on failure. */
tune_speed *tune_speed_open(const tune_opts *o, const tune_env *env, char *err, size_t errlen);
void tune_speed_close(tune_speed *sp);
/* Compiles, in one pool, every distinct kernel of the given specs (planned for env->arch at the
 * model's sizes); a spec the planner refuses is skipped (its variant reports it), a kernel that
 * fails to compile too (tune_speed_run records it). Returns 0, -1 with a message (no memory, a bad
 * HOT_JIT_THREADS). */
int tune_speed_prefetch(tune_speed *sp, const hot_model *m, const int *layers,
                        const hot_layer_spec *specs, int n, char *err, size_t errlen);
/* One variant: plan, compile (cache hits after the prefetch), registers/spills/shared
 * memory/occupancy, pruning; on a GPU bit-exactness at a small size and the median time of a
 * save + backward at the model's size with a cold L2. Fills the speed fields, status and note of
 * row. Returns 0 (row filled), -1 on out-of-memory. */
int tune_speed_run(tune_speed *sp, const hot_model *m, int layer, const hot_layer_spec *s,
                   hot_tune_row *row, char *err, size_t errlen);

/* ---- progress.c --------------------------------------------------------------------------- */
typedef struct {
  FILE *f;
  int bar;                  /* 1: one redrawn line; 0: a plain line per step */
  int total, done;
  double t0_ms;
  int width;
} tune_progress;
void tune_progress_start(tune_progress *p, FILE *f, int mode, int total);
/* One step done (label: what it was). */
void tune_progress_step(tune_progress *p, const char *label);
void tune_progress_end(tune_progress *p);
double tune_now_ms(void);

/* ---- show.c ------------------------------------------------------------------------------- */
typedef struct {
  const char *db;
  const char *layer;        /* NULL: every layer */
  const char *plot;         /* FILE.svg / FILE.png, or NULL */
  int rows;                 /* --rows: every row, canonical and sorted, without the date */
  int json;
  int sql;                  /* --sql: INSERT statements of the rows fit for tune/system.sql */
} show_opts;
/* hot-tune show. Returns the exit status (0, 1 on an error, message on stderr). */
int tune_show(const show_opts *o, FILE *out);

/* Writes s as a JSON string (quoted, escaped). */
void tune_json_str(FILE *f, const char *s);
/* s as one cell of a table printed for people (esc_text: control characters and invalid UTF-8
 * escaped), cut to width bytes with "..." when width > 3 and it is longer (0: never cut). The
 * text lives in one of 8 rotating buffers: valid until 8 more calls. "?" when out of memory. */
const char *tune_cell(const char *s, int width);

/* The combined error of an accuracy row: sqrt((gx^2 + gw^2) / 2) averaged over the data kinds it
 * has; NAN when it has none. */
double tune_row_error(const hot_tune_row *r);

#endif

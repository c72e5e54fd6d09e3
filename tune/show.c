/* show.c — hot-tune show: what a tuning database holds, for people. Per layer: the fastest
 * bit-exact speed variants (what the planner picks) against the layer as the spec writes it, the
 * accuracy variants on the Pareto front of error against cost (GPU time when every accuracy row
 * of the layer is timed, else the bytes the forward saves), and the chosen point: the layer as
 * the spec writes it (variant ""), so a reader sees where the current choice sits against the
 * front. --plot draws that (plot.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "tune.h"

double tune_row_error(const hot_tune_row *r) {
  double s = 0;
  int n = 0;
  for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) {
    if (isnan(r->gx_err[k]) || isnan(r->gw_err[k])) continue;
    s += sqrt((r->gx_err[k] * r->gx_err[k] + r->gw_err[k] * r->gw_err[k]) / 2.0);
    ++n;
  }
  return n ? s / n : NAN;
}

typedef struct {
  hot_tune_row *r;
  int n, cap;
} row_list;

static int collect(const hot_tune_row *row, void *arg) {
  row_list *l = arg;
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 64;
    hot_tune_row *nr = realloc(l->r, (size_t)nc * sizeof *nr);
    if (!nr) return 1;
    l->r = nr;
    l->cap = nc;
  }
  l->r[l->n++] = *row;
  return 0;
}

static void print_num(FILE *f, double v) {
  if (isnan(v)) fputs("nan", f);
  else fprintf(f, "%.17g", v);
}

const char *tune_cell(const char *s, int width) {
  static hot_buf ring[8];
  static int next;
  hot_buf *b = &ring[next];
  next = (next + 1) % 8;
  b->len = 0;
  if (b->data) b->data[0] = '\0';
  esc_text(b, s ? s : "");
  if (!buf_ok(b) || !b->data) return "?";
  if (width > 3 && b->len > (size_t)width) { /* cut at a whole character, then "..." */
    size_t cut = (size_t)width - 3;
    while (cut > 0 && ((unsigned char)b->data[cut] & 0xC0) == 0x80) --cut;
    memcpy(b->data + cut, "...", 4);
    b->len = cut + 3;
  }
  return b->data;
}

/* One text cell of --rows: escaped (a tab or newline in a value never adds a column or a line),
 * then a tab. */
static void cell(FILE *f, const char *s) {
  esc_fputs(f, esc_text, s);
  fputc('\t', f);
}

/* --rows: every field but the date, tab-separated, in the database's total order. */
static void print_rows(const row_list *l, FILE *f) {
  for (int i = 0; i < l->n; ++i) {
    const hot_tune_row *r = &l->r[i];
    const char *const k1[] = {r->device, r->arch, r->driver, r->nvrtc, r->hot_version};
    for (int k = 0; k < 5; ++k) cell(f, k1[k]);
    fprintf(f, "%lld\t%lld\t%lld\t%lld\t", (long long)r->batch, (long long)r->tokens,
            (long long)r->out_features, (long long)r->in_features);
    const char *const k2[] = {r->dtype, r->recipe, r->base, r->kind, r->variant, r->model,
                              r->layer, r->config, r->status, r->note};
    for (int k = 0; k < 10; ++k) cell(f, k2[k]);
    fprintf(f, "%d\t", r->timed);
    const double t[4] = {r->time_med_ms, r->time_p10_ms, r->time_p90_ms, r->time_min_ms};
    for (int k = 0; k < 4; ++k) print_num(f, r->timed ? t[k] : NAN), fputc('\t', f);
    fprintf(f, "%d\t%d\t%d\t%d\t%d\t", r->repeats, r->bitexact, r->regs, r->spills, r->smem_bytes);
    print_num(f, r->occupancy);
    for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) fputc('\t', f), print_num(f, r->gx_err[k]);
    for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) fputc('\t', f), print_num(f, r->gw_err[k]);
    fputc('\t', f);
    cell(f, r->capture);
    fprintf(f, "%lld\n", (long long)r->saved_bytes);
  }
}

/* --sql: the rows fit for the system DB (speed, ok, timed, bit-exact) as the INSERT statements
 * tune/system.sql holds (one per row; NULL for a figure not measured). */
static void sql_str(FILE *f, const char *s) { esc_fputs(f, esc_sql, s); }

static void sql_num(FILE *f, double v) {
  if (isnan(v) || isinf(v)) fputs("NULL", f);
  else fprintf(f, "%.17g", v);
}

static int print_sql(const row_list *l, FILE *f) {
  int n = 0;
  fputs("-- rows of kind speed, status ok, timed and bit-exact (hot-tune show --sql)\n", f);
  for (int i = 0; i < l->n; ++i) {
    const hot_tune_row *r = &l->r[i];
    if (strcmp(r->kind, "speed") || strcmp(r->status, "ok") || !r->timed || r->bitexact != 1) continue;
    fputs("INSERT INTO results(device, arch, driver, nvrtc, hot_version, batch, tokens, "
          "out_features, in_features, dtype, recipe, base, kind, variant, model, layer, config, "
          "status, note, timed, time_med_ms, time_p10_ms, time_p90_ms, time_min_ms, repeats, "
          "bitexact, regs, spills, smem_bytes, occupancy, gx_err_gauss, gx_err_channels, "
          "gx_err_tokens, gx_err_capture, gw_err_gauss, gw_err_channels, gw_err_tokens, "
          "gw_err_capture, capture, saved_bytes, date) VALUES(", f);
    const char *const s1[] = {r->device, r->arch, r->driver, r->nvrtc, r->hot_version};
    for (int k = 0; k < 5; ++k) sql_str(f, s1[k]), fputs(", ", f);
    fprintf(f, "%lld, %lld, %lld, %lld, ", (long long)r->batch, (long long)r->tokens,
            (long long)r->out_features, (long long)r->in_features);
    const char *const s2[] = {r->dtype, r->recipe, r->base, r->kind, r->variant, r->model,
                              r->layer, r->config, r->status, r->note};
    for (int k = 0; k < 10; ++k) sql_str(f, s2[k]), fputs(", ", f);
    fprintf(f, "%d, ", r->timed);
    const double t[4] = {r->time_med_ms, r->time_p10_ms, r->time_p90_ms, r->time_min_ms};
    for (int k = 0; k < 4; ++k) sql_num(f, t[k]), fputs(", ", f);
    fprintf(f, "%d, %d, %d, %d, %d, ", r->repeats, r->bitexact, r->regs, r->spills, r->smem_bytes);
    sql_num(f, r->occupancy < 0 ? NAN : r->occupancy);
    for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) fputs(", ", f), sql_num(f, r->gx_err[k]);
    for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) fputs(", ", f), sql_num(f, r->gw_err[k]);
    fputs(", ", f);
    sql_str(f, r->capture);
    fprintf(f, ", %lld, ", (long long)r->saved_bytes);
    sql_str(f, r->date);
    fputs(");\n", f);
    ++n;
  }
  return n;
}

void tune_json_str(FILE *f, const char *s) { esc_fputs(f, esc_json, s); }

static void json_num(FILE *f, double v) {
  if (isnan(v) || isinf(v)) fputs("null", f);
  else fprintf(f, "%.9g", v);
}

static void print_json(const row_list *l, FILE *f) {
  static const char *const data[HOT_TUNE_DATA_COUNT] = {"gaussian", "channels", "tokens", "capture"};
  fputs("{\"rows\":[", f);
  for (int i = 0; i < l->n; ++i) {
    const hot_tune_row *r = &l->r[i];
    fputs(i ? ",\n{" : "\n{", f);
    const char *const sk[] = {"device", "arch", "driver", "nvrtc", "hot_version", "dtype", "recipe",
                              "base", "kind", "variant", "model", "layer", "config", "status", "note",
                              "capture", "date"};
    const char *const sv[] = {r->device, r->arch, r->driver, r->nvrtc, r->hot_version, r->dtype,
                              r->recipe, r->base, r->kind, r->variant, r->model, r->layer,
                              r->config, r->status, r->note, r->capture, r->date};
    for (size_t k = 0; k < sizeof sk / sizeof *sk; ++k) {
      fprintf(f, "%s\"%s\":", k ? "," : "", sk[k]);
      tune_json_str(f, sv[k]);
    }
    fprintf(f, ",\"batch\":%lld,\"tokens\":%lld,\"out_features\":%lld,\"in_features\":%lld,"
            "\"timed\":%s,\"time_med_ms\":", (long long)r->batch, (long long)r->tokens,
            (long long)r->out_features, (long long)r->in_features, r->timed ? "true" : "false");
    json_num(f, r->timed ? r->time_med_ms : NAN);
    fputs(",\"time_p10_ms\":", f);
    json_num(f, r->timed ? r->time_p10_ms : NAN);
    fputs(",\"time_p90_ms\":", f);
    json_num(f, r->timed ? r->time_p90_ms : NAN);
    fprintf(f, ",\"repeats\":%d,\"bitexact\":%s,\"regs\":%d,\"spills\":%d,\"smem_bytes\":%d,"
            "\"occupancy\":", r->repeats,
            r->bitexact < 0 ? "null" : r->bitexact ? "true" : "false", r->regs, r->spills,
            r->smem_bytes);
    json_num(f, r->occupancy < 0 ? NAN : r->occupancy);
    fputs(",\"gx_err\":{", f);
    for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) {
      fprintf(f, "%s\"%s\":", k ? "," : "", data[k]);
      json_num(f, r->gx_err[k]);
    }
    fputs("},\"gw_err\":{", f);
    for (int k = 0; k < HOT_TUNE_DATA_COUNT; ++k) {
      fprintf(f, "%s\"%s\":", k ? "," : "", data[k]);
      json_num(f, r->gw_err[k]);
    }
    fprintf(f, "},\"error\":");
    json_num(f, tune_row_error(r));
    fprintf(f, ",\"saved_bytes\":%lld}", (long long)r->saved_bytes);
  }
  fputs("\n]}\n", f);
}

/* One layer's accuracy points: cost, error, front, knee. */
typedef struct {
  const hot_tune_row *r;
  double cost, err;
  int front, chosen;
} acc_point;

/* Marks the Pareto front (no other point is at most as costly and at most as wrong, one of them
 * strictly; of equal points the first) and the chosen point (the spec as written). Returns 1 when
 * the costs are times, 0 when bytes. */
static int front(acc_point *p, int n) {
  int timed = n > 0;
  for (int i = 0; i < n; ++i) timed &= p[i].r->timed;
  for (int i = 0; i < n; ++i) {
    p[i].cost = timed ? p[i].r->time_med_ms : (double)p[i].r->saved_bytes;
    p[i].err = tune_row_error(p[i].r);
    p[i].chosen = p[i].r->variant[0] == 0;
  }
  for (int i = 0; i < n; ++i) {
    p[i].front = !isnan(p[i].err) && p[i].cost >= 0;
    for (int j = 0; j < n && p[i].front; ++j) {
      if (j == i || isnan(p[j].err)) continue;
      if (p[j].cost <= p[i].cost && p[j].err <= p[i].err &&
          (p[j].cost < p[i].cost || p[j].err < p[i].err))
        p[i].front = 0;
      else if (p[j].cost == p[i].cost && p[j].err == p[i].err && j < i)
        p[i].front = 0; /* equal points: the first stands for them */
    }
  }
  return timed;
}

static int cmp_cost(const void *a, const void *b) {
  const acc_point *x = a, *y = b;
  if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  return x->err < y->err ? -1 : x->err > y->err;
}

static int cmp_time(const void *a, const void *b) {
  const hot_tune_row *x = *(const hot_tune_row *const *)a, *y = *(const hot_tune_row *const *)b;
  if (x->time_med_ms != y->time_med_ms) return x->time_med_ms < y->time_med_ms ? -1 : 1;
  return strcmp(x->variant, y->variant);
}

static void fmt_err(char *buf, size_t n, double v) {
  if (isnan(v)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%.4f", v);
}

/* Rows of one layer at one shape (model, layer, B, L, O, I, dtype, recipe) form a group; a layer
 * swept at two shapes (another batch, a changed spec) is two groups, never one front. */
static int cmp_shape(const hot_tune_row *x, const hot_tune_row *y) {
  int c;
  if ((c = strcmp(x->model, y->model)) || (c = strcmp(x->layer, y->layer))) return c;
  if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
  if (x->tokens != y->tokens) return x->tokens < y->tokens ? -1 : 1;
  if (x->out_features != y->out_features) return x->out_features < y->out_features ? -1 : 1;
  if (x->in_features != y->in_features) return x->in_features < y->in_features ? -1 : 1;
  if ((c = strcmp(x->dtype, y->dtype)) || (c = strcmp(x->recipe, y->recipe))) return c;
  return 0;
}
/* Within a group: speed rows by (device, arch) — times of different GPUs never compete — then
 * accuracy rows; the database's total order (index) breaks ties. */
typedef struct {
  hot_tune_row r;
  int index;
} ordered_row;
static int cmp_group(const void *a, const void *b) {
  const ordered_row *x = a, *y = b;
  int c = cmp_shape(&x->r, &y->r);
  if (c) return c;
  if ((c = strcmp(x->r.kind, y->r.kind)) || (c = strcmp(x->r.device, y->r.device)) ||
      (c = strcmp(x->r.arch, y->r.arch)))
    return c;
  return x->index - y->index;
}
static int sort_groups(row_list *l) {
  ordered_row *o = malloc((size_t)(l->n ? l->n : 1) * sizeof *o);
  if (!o) return -1;
  for (int i = 0; i < l->n; ++i) o[i] = (ordered_row){l->r[i], i};
  qsort(o, (size_t)l->n, sizeof *o, cmp_group);
  for (int i = 0; i < l->n; ++i) l->r[i] = o[i].r;
  free(o);
  return 0;
}

/* The points gathered for --plot: one series per layer (at most 8 drawn). */
typedef struct {
  hot_plot_point *pp;
  int npp, nseries, timed; /* timed: -1 until the first series sets the plot's x axis */
  int not_drawn_full, not_drawn_axis;
  const char *series[8];
} plot_points;

/* The speed rows of one (device, arch) from si on (rows [si, j) of one layer and shape, sorted
 * by sort_groups): a summary and the five fastest. sp: scratch of l->n entries. Returns the
 * index after the block. */
static int show_speed_block(const row_list *l, int si, int j, const hot_tune_row **sp, FILE *out) {
  int sj = si;
  while (sj < j && !strcmp(l->r[sj].kind, "speed") && !strcmp(l->r[sj].device, l->r[si].device) &&
         !strcmp(l->r[sj].arch, l->r[si].arch))
    ++sj;
  int ns = 0, n_speed = 0, n_pruned = 0, n_bad = 0;
  for (int k = si; k < sj; ++k) {
    ++n_speed;
    if (!strcmp(l->r[k].status, "pruned")) ++n_pruned;
    else if (strcmp(l->r[k].status, "ok")) ++n_bad;
    if (!strcmp(l->r[k].status, "ok") && l->r[k].timed && l->r[k].bitexact == 1) sp[ns++] = &l->r[k];
  }
  qsort(sp, (size_t)ns, sizeof *sp, cmp_time);
  fprintf(out, "  speed, %s on %s: %d variant%s (%d pruned, %d failed or refused, %d timed and "
          "bit-exact)\n", tune_cell(l->r[si].arch, 0),
          l->r[si].device[0] ? tune_cell(l->r[si].device, 0) : "no GPU", n_speed,
          n_speed == 1 ? "" : "s", n_pruned, n_bad, ns);
  const hot_tune_row *ref = NULL;
  for (int k = 0; k < ns; ++k)
    if (!sp[k]->variant[0]) ref = sp[k];
  if (!ns) {
    fprintf(out, "    not timed (no GPU in the sweeps so far): the planner keeps its defaults for this layer\n");
    return sj;
  }
  if (ref)
    fprintf(out, "    as written (default tiles): %.4f ms; the fastest: %.4f ms (%.2fx)\n",
            ref->time_med_ms, sp[0]->time_med_ms, ref->time_med_ms / sp[0]->time_med_ms);
  fprintf(out, "    %-3s %10s %10s %6s %6s  %s\n", "#", "median ms", "p90 ms", "regs", "occ", "variant");
  for (int k = 0; k < ns && k < 5; ++k)
    fprintf(out, "    %-3d %10.4f %10.4f %6d %6.2f  %s%s\n", k + 1, sp[k]->time_med_ms,
            sp[k]->time_p90_ms, sp[k]->regs, sp[k]->occupancy,
            sp[k]->variant[0] ? tune_cell(sp[k]->variant, 0) : "(as written)",
            k == 0 ? "   <- the planner's choice" : "");
  return sj;
}

/* The accuracy table of na points (sorted by cost): the Pareto front and the layer as written. */
static void show_front(const acc_point *pts, int na, int n_acc_bad, int timed, FILE *out) {
  int nf = 0;
  for (int k = 0; k < na; ++k) nf += pts[k].front;
  fprintf(out, "  accuracy: %d variant%s (%d refused or failed); Pareto front of error vs %s: %d point%s,\n"
          "  and the layer as written (*)\n",
          na + n_acc_bad, na + n_acc_bad == 1 ? "" : "s", n_acc_bad, timed ? "time" : "saved bytes",
          nf, nf == 1 ? "" : "s");
  fprintf(out, "    %-2s %-44s %8s %8s %8s %8s %8s %8s %8s %12s\n", "", "variant", "gx gauss",
          "gx chan", "gx tok", "gw gauss", "gw chan", "gw tok", "error", timed ? "ms" : "saved B");
  for (int k = 0; k < na; ++k) {
    if (!pts[k].front && !pts[k].chosen) continue;
    const hot_tune_row *r = pts[k].r;
    char e[7][16];
    fmt_err(e[0], 16, r->gx_err[0]), fmt_err(e[1], 16, r->gx_err[1]), fmt_err(e[2], 16, r->gx_err[2]);
    fmt_err(e[3], 16, r->gw_err[0]), fmt_err(e[4], 16, r->gw_err[1]), fmt_err(e[5], 16, r->gw_err[2]);
    fmt_err(e[6], 16, pts[k].err);
    fprintf(out, "    %-2s %-44s %8s %8s %8s %8s %8s %8s %8s %12.*f\n", pts[k].chosen ? "*" : "",
            r->variant[0] ? tune_cell(r->variant, 44) : "(as written)", e[0], e[1], e[2], e[3], e[4], e[5], e[6], timed ? 4 : 0, pts[k].cost);
  }
  if (na && pts[0].r->capture[0])
    fprintf(out, "    (errors on captured tensors %s are in --json / --rows)\n",
            tune_cell(pts[0].r->capture, 0));
  fprintf(out, "    error = mean over the data sets of sqrt((gx^2 + gw^2) / 2)\n");
}

/* A layer's na accuracy points as the next plot series, when the plot has room and the same x
 * axis; else counted as not drawn. */
static void plot_add(plot_points *p, const char *layer, const acc_point *pts, int na, int timed) {
  if (p->timed < 0) p->timed = timed;
  if (p->nseries < 8 && p->timed == timed) {
    p->series[p->nseries] = layer;
    for (int k = 0; k < na; ++k)
      p->pp[p->npp++] = (hot_plot_point){pts[k].cost, pts[k].err, pts[k].chosen ? "as written" : NULL,
                                         p->nseries, pts[k].front, pts[k].chosen};
    ++p->nseries;
  } else if (p->timed != timed) {
    ++p->not_drawn_axis; /* another x axis (time vs bytes) than the plot's */
  } else {
    ++p->not_drawn_full;
  }
}

/* The accuracy rows [i, j) of one layer and shape: the table, and the plot's points (--plot).
 * pts: scratch of l->n entries. */
static void show_accuracy(const show_opts *o, const row_list *l, int i, int j, acc_point *pts,
                          plot_points *p, FILE *out) {
  int na = 0;
  for (int k = i; k < j; ++k)
    if (!strcmp(l->r[k].kind, "accuracy") && !strcmp(l->r[k].status, "ok"))
      pts[na++] = (acc_point){&l->r[k], 0, 0, 0, 0};
  int n_acc_bad = 0;
  for (int k = i; k < j; ++k) n_acc_bad += !strcmp(l->r[k].kind, "accuracy") && strcmp(l->r[k].status, "ok");
  if (!na && !n_acc_bad) return;
  int timed = front(pts, na);
  qsort(pts, (size_t)na, sizeof *pts, cmp_cost);
  show_front(pts, na, n_acc_bad, timed, out);
  if (o->plot && na) plot_add(p, l->r[i].layer, pts, na, timed);
}

/* Writes the plot (--plot) and says so. Returns 0, or 1 on an error (said). */
static int write_plot(const show_opts *o, const plot_points *p, FILE *out) {
  if (p->npp == 0) {
    diag_fprintf(stderr, "hot-tune: --plot: no accuracy rows with errors to draw in %s\n", o->db);
    return 1;
  }
  char err[1024];
  hot_plot_opts po;
  memset(&po, 0, sizeof po);
  po.title = "hot-tune: error vs cost (ringed: the spec as written)";
  po.x_label = p->timed ? "save + backward time (ms)" : "bytes saved by the forward (ABC)";
  po.y_label = "error (mean over data of sqrt((gx^2+gw^2)/2))";
  for (int s = 0; s < p->nseries; ++s) po.series_names[s] = p->series[s];
  po.n_series = p->nseries;
  if (hot_plot_write(o->plot, p->pp, p->npp, &po, err, sizeof err) != 0) {
    diag_fprintf(stderr, "hot-tune: --plot: %s\n", err);
    return 1;
  }
  fprintf(out, "\nplot: %s (%d points, %d layer%s)\n", o->plot, p->npp, p->nseries, p->nseries == 1 ? "" : "s");
  if (p->not_drawn_full)
    fprintf(out, "plot: %d more layer%s not drawn (at most 8 per plot): draw them with "
            "--layer NAME\n", p->not_drawn_full, p->not_drawn_full == 1 ? "" : "s");
  if (p->not_drawn_axis)
    fprintf(out, "plot: %d layer%s not drawn: timed and untimed layers do not share an "
            "x axis (draw them with --layer NAME)\n", p->not_drawn_axis,
            p->not_drawn_axis == 1 ? "" : "s");
  return 0;
}

/* The summary of l (sorted by sort_groups): per layer and shape, the speed blocks and the
 * accuracy table; then the plot. Returns the exit status. */
static int show_summary(const show_opts *o, const row_list *l, FILE *out) {
  const size_t nr = l->n > 0 ? (size_t)l->n : 1; /* (the caller has rows) */
  acc_point *pts = calloc(nr, sizeof *pts);
  const hot_tune_row **sp = calloc(nr, sizeof *sp);
  plot_points p = {calloc(nr, sizeof *p.pp), 0, 0, -1, 0, 0, {0}};
  if (!pts || !sp || !p.pp) {
    diag_fprintf(stderr, "hot-tune: out of memory\n");
    free(pts), free(sp), free(p.pp);
    return 1;
  }
  for (int i = 0; i < l->n;) { /* rows come grouped by layer and shape (sort_groups) */
    int j = i;
    while (j < l->n && !cmp_shape(&l->r[j], &l->r[i])) ++j;
    const hot_tune_row *first = &l->r[i];
    fprintf(out, "\n%s / %s  (B x L x O x I = %lld x %lld x %lld x %lld, %s, recipe %s)\n",
            tune_cell(first->model, 0), tune_cell(first->layer, 0), (long long)first->batch, (long long)first->tokens,
            (long long)first->out_features, (long long)first->in_features, tune_cell(first->dtype, 0),
            tune_cell(first->recipe, 0));
    /* speed: one block per (device, arch) — rows come sorted that way (sort_groups) */
    for (int si = i; si < j;)
      si = strcmp(l->r[si].kind, "speed") ? si + 1 : show_speed_block(l, si, j, sp, out);
    show_accuracy(o, l, i, j, pts, &p, out);
    i = j;
  }
  int status = o->plot ? write_plot(o, &p, out) : 0;
  free(pts), free(sp), free(p.pp);
  return status;
}

int tune_show(const show_opts *o, FILE *out) {
  hot_tunedb *db = NULL;
  char err[1024];
  if (tunedb_open(&db, o->db, 1, err, sizeof err) != RT_OK) {
    diag_fprintf(stderr, "hot-tune: %s\n", err);
    return 1;
  }
  row_list l = {0};
  int64_t n = tunedb_foreach(db, NULL, o->layer, collect, &l, err, sizeof err);
  tunedb_close(db);
  int status = 0;
  if (n < 0 || n != l.n) {
    diag_fprintf(stderr, "hot-tune: %s\n", n < 0 ? err : "out of memory reading the rows");
    status = 1;
  } else if (o->rows) {
    print_rows(&l, out);
  } else if (o->sql) {
    int n_sql = print_sql(&l, out);
    diag_fprintf(stderr, "hot-tune: %d row%s fit for the system DB (of %d)\n", n_sql, n_sql == 1 ? "" : "s", l.n);
  } else if (o->json) {
    print_json(&l, out);
  } else if (l.n == 0) {
    fprintf(out, "%s: no rows%s%s\n", o->db, o->layer ? " of layer " : "", o->layer ? o->layer : "");
    status = o->plot ? 1 : 0;
  } else if (sort_groups(&l) != 0) {
    diag_fprintf(stderr, "hot-tune: out of memory\n");
    status = 1;
  } else {
    status = show_summary(o, &l, out);
  }
  free(l.r);
  return status;
}

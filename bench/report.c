/* report.c — what hot-bench prints: a readable table on stdout (sections: correctness, memory
 * and operations, JIT, and on a GPU the speed table last) and the same figures as JSON. A
 * figure that was not measured is printed as "-" (JSON null), never estimated. */
#include <math.h>
#include <string.h>

#include "bench.h"
#include "escape.h"
#include "plan.h"

static double ratio(int64_t a, int64_t b) { return b > 0 ? (double)a / (double)b : 0; }
static double speedup(const bench_stat *base, const bench_stat *hot) {
  return base->n && hot->n && hot->med > 0 ? base->med / hot->med : 0;
}

static const char *gops(double v, char *buf, size_t n) { /* 1.23 G */
  if (v >= 1e12) snprintf(buf, n, "%.2f T", v / 1e12);
  else if (v >= 1e9) snprintf(buf, n, "%.2f G", v / 1e9);
  else snprintf(buf, n, "%.1f M", v / 1e6);
  return buf;
}

static const char *num(double v, const char *fmt, int ok, char *buf, size_t n) {
  if (!ok || !isfinite(v)) snprintf(buf, n, "-");
  else snprintf(buf, n, fmt, v);
  return buf;
}

static int gpu_ran(const bench_run *r) { return r->backend == HOT_BACKEND_CUDA; }

/* Achieved rate of one profiled launch: TOP/s (math-bound) or GB/s, and its share of the
 * ceiling measured in the same run (0 when that ceiling or the cost is unknown). */
static double kernel_rate(const bench_kernel *k, const bench_run *r, double *pct) {
  *pct = 0;
  if (!k->t.n || k->t.med <= 0 || k->bytes < 0) return 0;
  double v = k->bound ? (double)k->ops / k->t.med / 1e9 : (double)k->bytes / k->t.med / 1e6;
  double ceil = k->bound ? r->int8_tops : r->copy_gbs;
  if (ceil > 0) *pct = 100 * v / ceil;
  return v;
}

/* Per-kernel medians of the profiled runs, against the ceilings of the same run. */
static void kernel_table(const bench_run *r, FILE *f) {
  int any = 0;
  for (int i = 0; i < r->n; ++i) any |= r->layers[i].nk > 0 || r->layers[i].prof_note[0];
  if (!any) return;
  fprintf(f, "\nper kernel (median ms of the profiled runs, events around each launch; rate = "
             "compulsory bytes / time vs the copy ceiling, or integer ops / time vs INT8 cuBLAS)\n");
  fprintf(f, "%-12s %-4s %-8s %2s %-44s %9s %12s %7s\n", "layer", "call", "role", "ph", "kernel",
          "ms", "rate", "ceil%");
  for (int i = 0; i < r->n; ++i) {
    const bench_layer *l = &r->layers[i];
    if (!l->nk && l->prof_note[0]) fprintf(f, "%-12s   no per-kernel figures: %s\n", l->name, l->prof_note);
    for (int j = 0; j < l->nk; ++j) {
      const bench_kernel *k = &l->kern[j];
      double pct, v = kernel_rate(k, r, &pct);
      char rate[32] = "-", pc[16] = "-";
      if (v > 0) snprintf(rate, sizeof rate, "%.1f %s", v, k->bound ? "TOP/s" : "GB/s");
      if (pct > 0) snprintf(pc, sizeof pc, "%.0f%%", pct);
      fprintf(f, "%-12s %-4s %-8s %2d %-44.44s %9.4f %12s %7s\n", j ? "" : l->name, k->bwd ? "bwd" : "fwd",
              plan_role_name((hot_kernel_role)k->role), k->phase, k->name, k->t.med, rate, pc);
    }
  }
}

/* The correctness table: errors against fp64 per layer, and their maxima. */
static void table_correctness(const bench_run *r, FILE *f) {
  char a[32], b[32], c[32], d[32];
  fprintf(f, "\ncorrectness: relative Frobenius error vs fp64 (CPU reference, seeded N(0,1) data, "
             "step 1; 'check T' < T: capped, see --help)\n");
  fprintf(f, "%-12s %7s %6s %6s %8s %-14s %8s %8s %9s %9s\n", "layer", "T", "O", "I", "check T",
          "g' scale", "g_x err", "g_w err", "g_b err", "ref ms");
  double mgx = 0, mgw = 0;
  for (int i = 0; i < r->n; ++i) {
    const bench_layer *l = &r->layers[i];
    if (l->have_err) {
      mgx = fmax(mgx, l->gx_err);
      mgw = fmax(mgw, l->gw_err);
    }
    fprintf(f, "%-12s %7lld %6lld %6lld %8lld %-14s %8s %8s %9s %9s\n", l->name, (long long)l->T,
            (long long)l->O, (long long)l->I, (long long)l->cT, l->have_err ? l->gran : "-",
            num(l->gx_err, "%.4f", l->have_err, a, sizeof a),
            num(l->gw_err, "%.4f", l->have_err, b, sizeof b),
            num(l->gb_err, "%.2e", l->have_err && l->gb_err >= 0, c, sizeof c),
            num(l->cpu_ref_ms, "%.0f", l->have_err, d, sizeof d));
  }
  fprintf(f, "%-12s %7s %6s %6s %8s %-14s %8s %8s  (max)\n", "all", "", "", "", "", "",
          num(mgx, "%.4f", 1, a, sizeof a), num(mgw, "%.4f", 1, b, sizeof b));

}

/* Memory (ABC) and operation counts per layer, and the totals. */
static void table_memory(const bench_run *r, FILE *f) {
  char a[32], b[32], c[32], d[32];
  fprintf(f, "\nmemory (saved activations, ABC) and operations of one backward (plan, at T)\n");
  fprintf(f, "%-12s %10s %10s %7s %7s %4s %9s %10s %10s %10s %10s\n", "layer", "ABC KiB", "fp32 KiB",
          "/fp32", "/bf16", "b", "p r", "g_x MACs", "g_w MACs", "fp32 MACs", "FWHT adds");
  int64_t sa = 0, s32 = 0, s16 = 0;
  double smx = 0, smw = 0, smf = 0;
  for (int i = 0; i < r->n; ++i) {
    const bench_layer *l = &r->layers[i];
    if (!l->fp32_bytes) continue;
    sa += l->abc_bytes;
    s32 += l->fp32_bytes;
    s16 += l->bf16_bytes;
    smx += (double)l->gx_macs;
    smw += (double)l->gw_macs;
    smf += (double)(l->fp32_gx_macs + l->fp32_gw_macs);
    char pr[24];
    snprintf(pr, sizeof pr, "%d %d", l->hla_p, l->hla_r);
    fprintf(f, "%-12s %10.1f %10.1f %7.3f %7.3f %4d %9s %10s %10s %10s %10s\n", l->name,
            (double)l->abc_bytes / 1024, (double)l->fp32_bytes / 1024, ratio(l->abc_bytes, l->fp32_bytes),
            ratio(l->abc_bytes, l->bf16_bytes), l->hq_b, pr, gops((double)l->gx_macs, a, sizeof a),
            gops((double)l->gw_macs, b, sizeof b),
            gops((double)(l->fp32_gx_macs + l->fp32_gw_macs), c, sizeof c),
            gops((double)l->fwht_adds, d, sizeof d));
  }
  fprintf(f, "%-12s %10.1f %10.1f %7.3f %7.3f %4s %9s %10s %10s %10s\n", "total", (double)sa / 1024,
          (double)s32 / 1024, ratio(sa, s32), ratio(sa, s16), "", "", gops(smx, a, sizeof a),
          gops(smw, b, sizeof b), gops(smf, c, sizeof c));

}

/* The JIT table: per layer and the whole spec. */
static void table_jit(const bench_run *r, FILE *f) {
  char a[32], b[32], c[32], d[32];
  fprintf(f, "\nJIT (%s, NVRTC; cold = fresh memory-only cache, store = into an empty disk cache, "
             "warm = a second context hitting it%s)\n", r->arch,
          gpu_ran(r) ? "; includes the module load" : "");
  fprintf(f, "%-12s %9s %9s %9s %8s  %s\n", "layer", "cold ms", "store ms", "warm ms", "compiles", "note");
  double sc = 0, sw = 0;
  for (int i = 0; i < r->n; ++i) {
    const bench_layer *l = &r->layers[i];
    if (l->have_jit) {
      sc += l->jit_cold_ms;
      sw += l->jit_warm_ms > 0 ? l->jit_warm_ms : 0;
    }
    fprintf(f, "%-12s %9s %9s %9s %8s  %s\n", l->name, num(l->jit_cold_ms, "%.0f", l->have_jit, a, sizeof a),
            num(l->jit_store_ms, "%.0f", l->have_jit && l->jit_store_ms >= 0, b, sizeof b),
            num(l->jit_warm_ms, "%.2f", l->have_jit && l->jit_warm_ms >= 0, c, sizeof c),
            num((double)l->jit_compiles, "%.0f", l->have_jit, d, sizeof d), l->jit_note);
  }
  fprintf(f, "%-12s %9.0f %9s %9.2f\n", "total", sc, "", sw);
  if (r->have_jit_spec)
    fprintf(f, "%-12s %9.0f %9s %9s %8llu  all layers in one context, one compile pool\n",
            "whole spec", r->jit_spec_cold_ms, "", "", (unsigned long long)r->jit_spec_compiles);
  else if (r->jit_spec_note[0])
    fprintf(f, "%-12s %9s  %s\n", "whole spec", "-", r->jit_spec_note);
}

/* Each cold-compiled kernel with NVRTC's phases. */
static void table_jit_kernels(const bench_run *r, FILE *f) {
  char a[32], b[32], c[32];
  fprintf(f, "\nJIT per kernel (cold run of each layer; front end, NVVM and ptxas as NVRTC "
             "reports them)\n%-12s %-44s %9s %7s %7s %7s\n", "layer", "kernel", "ms", "front",
          "nvvm", "ptxas");
  for (int i = 0; i < r->n; ++i) {
    const bench_layer *l = &r->layers[i];
    for (int k = 0; l->have_jit && k < l->jit_nk; ++k) {
      const bench_jit_kernel *kk = &l->jit_kern[k];
      fprintf(f, "%-12s %-44s %9.0f %7s %7s %7s\n", l->name, kk->name, kk->ms,
              num(kk->front_ms, "%.0f", kk->phases, a, sizeof a),
              num(kk->nvvm_ms, "%.0f", kk->phases, b, sizeof b),
              num(kk->ptxas_ms, "%.0f", kk->phases, c, sizeof c));
    }
  }
}

/* The layers whose status holds an error. */
static void table_failures(const bench_run *r, FILE *f) {
  int bad = 0;
  for (int i = 0; i < r->n; ++i) bad |= r->layers[i].status[0] != 0;
  if (bad) {
    fprintf(f, "\nlayers that did not run completely\n");
    for (int i = 0; i < r->n; ++i)
      if (r->layers[i].status[0]) fprintf(f, "  %-12s %s%s\n", r->layers[i].name, r->layers[i].status,
                                          r->layers[i].unsupported ? "  [not implemented yet]" : "");
  }
}

/* One layer's row of the speed table, with its notes. */
static void speed_row(const bench_run *r, const bench_layer *l, FILE *f) {
  char a[32], b[32], c[32], d[32], e[32], g[32], h[32], p8[32], x8[32];
  char hb[48] = "-";
  if (l->hot_bwd.n) snprintf(hb, sizeof hb, "%.3f [%.3f-%.3f]", l->hot_bwd.med, l->hot_bwd.p10, l->hot_bwd.p90);
  double tops = l->hot_bwd.n ? 2.0 * (double)(l->gx_macs + l->gw_macs) / l->hot_bwd.med / 1e9 : 0;
  double gbs = l->hot_fwd.n ? (double)(l->T * l->I * 4 + l->abc_bytes) / l->hot_fwd.med / 1e6 : 0;
  char tp[32] = "-", gb[32] = "-";
  if (tops > 0) snprintf(tp, sizeof tp, "%.1f (%.0f%%)", tops, r->int8_tops > 0 ? 100 * tops / r->int8_tops : 0);
  if (gbs > 0) snprintf(gb, sizeof gb, "%.0f (%.0f%%)", gbs, r->copy_gbs > 0 ? 100 * gbs / r->copy_gbs : 0);
  double s8 = speedup(&l->fp8, &l->hot_bwd);
  fprintf(f, "%-12s %-22s %9s %9s %9s %9s %9s %7s %7s %7s %7s %9s %13s %13s\n", l->name, hb,
          num(l->hot_fwd.med, "%.3f", l->hot_fwd.n, a, sizeof a),
          num(l->bf16.med, "%.3f", l->bf16.n, b, sizeof b), num(l->fp32.med, "%.3f", l->fp32.n, c, sizeof c),
          num(l->tf32.med, "%.3f", l->tf32.n, d, sizeof d), num(l->fp8.med, "%.3f", l->fp8.n, p8, sizeof p8),
          num(speedup(&l->bf16, &l->hot_bwd), "%.2f", speedup(&l->bf16, &l->hot_bwd) > 0, e, sizeof e),
          num(speedup(&l->fp32, &l->hot_bwd), "%.2f", speedup(&l->fp32, &l->hot_bwd) > 0, g, sizeof g),
          num(speedup(&l->tf32, &l->hot_bwd), "%.2f", speedup(&l->tf32, &l->hot_bwd) > 0, h, sizeof h),
          num(s8, "%.2f", s8 > 0, x8, sizeof x8), l->bitexact < 0 ? "-" : l->bitexact ? "yes" : "NO", tp, gb);
  if (l->bitexact == 0) fprintf(f, "%-12s   first difference: %s\n", "", l->bitexact_note);
  if (l->gpu_note[0]) fprintf(f, "%-12s   note: %s\n", "", l->gpu_note);
  if (!l->fp8.n) {
    fprintf(f, "%-12s   FP8: %s\n", "", l->fp8_reason);
  } else {
    fprintf(f, "%-12s   FP8: GEMMs at T %lld, O %lld, I %lld%s; sampled error vs fp64 g_x %s, g_w %s\n", "",
            (long long)l->fp8_T, (long long)l->fp8_O, (long long)l->fp8_I,
            l->fp8_T != l->T || l->fp8_O != l->O || l->fp8_I != l->I ? " (zero-padded to multiples of 16)" : "",
            num(l->fp8_gx_err, "%.4f", l->fp8_gx_err >= 0, a, sizeof a),
            num(l->fp8_gw_err, "%.4f", l->fp8_gw_err >= 0, b, sizeof b));
  }
}

/* The speed table: the ceilings of the run, a row per layer and the totals. */
static void table_speed(const bench_run *r, FILE *f) {
  char a[32], b[32], c[32], d[32], e[32], g[32], h[32], p8[32], x8[32];
  fprintf(f, "\nceilings measured in this run: copy %s GB/s (device to device, read + write), "
             "cuBLAS 8192^3 BF16 %s TFLOP/s, INT8 %s TOP/s, cuBLASLt FP8 %s TFLOP/s; L2 %d MiB%s%s\n",
          num(r->copy_gbs, "%.0f", r->copy_gbs > 0, a, sizeof a),
          num(r->bf16_tflops, "%.0f", r->bf16_tflops > 0, b, sizeof b),
          num(r->int8_tops, "%.0f", r->int8_tops > 0, c, sizeof c),
          num(r->fp8_tflops, "%.0f", r->fp8_tflops > 0, d, sizeof d), r->l2_bytes >> 20,
          r->ceil_note[0] ? "; " : "", r->ceil_note);
  fprintf(f, "\nspeed on %s (median ms of %d runs after %d warm-up, [p10-p90], cold L2; HOT bwd = all "
             "backward kernels incl. g_b; cuBLAS = g_x and g_w; FP8 = cuBLASLt e4m3 g_x and g_w GEMMs "
             "only, operands already cast and transposed)\n", r->device, r->opt.iters, r->opt.warmup);
  fprintf(f, "%-12s %-22s %9s %9s %9s %9s %9s %7s %7s %7s %7s %9s %13s %13s\n", "layer",
          "HOT bwd ms [p10-p90]", "fwd ms", "BF16 ms", "FP32 ms", "TF32 ms", "FP8 ms", "xBF16", "xFP32",
          "xTF32", "xFP8", "bit-exact", "bwd TOP/s", "fwd GB/s");
  bench_stat th = {0}, tb = {0}, tf = {0}, tt = {0}, t8 = {0};
  int all = 1, all8 = 1;
  for (int i = 0; i < r->n; ++i) {
    const bench_layer *l = &r->layers[i];
    speed_row(r, l, f);
    all &= l->hot_bwd.n && l->bf16.n && l->fp32.n && l->tf32.n;
    all8 &= l->hot_bwd.n && l->fp8.n;
    th.med += l->hot_bwd.med;
    tb.med += l->bf16.med;
    tf.med += l->fp32.med;
    tt.med += l->tf32.med;
    t8.med += l->fp8.med;
  }
  th.n = tb.n = tf.n = tt.n = all;
  t8.n = all8;
  bench_stat th8 = th;
  th8.n = all8;
  fprintf(f, "%-12s %-22s %9s %9s %9s %9s %9s %7s %7s %7s %7s\n", "total",
          num(th.med, "%.3f", all || all8, a, sizeof a), "", num(tb.med, "%.3f", all, b, sizeof b),
          num(tf.med, "%.3f", all, c, sizeof c), num(tt.med, "%.3f", all, d, sizeof d),
          num(t8.med, "%.3f", all8, p8, sizeof p8), num(speedup(&tb, &th), "%.2f", all, e, sizeof e),
          num(speedup(&tf, &th), "%.2f", all, g, sizeof g), num(speedup(&tt, &th), "%.2f", all, h, sizeof h),
          num(speedup(&t8, &th8), "%.2f", all8, x8, sizeof x8));
}

void bench_report_table(const bench_run *r, FILE *f) {
  fprintf(f, "spec %s: model %s, recipe %s, seed 0x%llx; %s, host %s\n", r->opt.spec, r->model,
          r->recipe, (unsigned long long)r->seed, r->date, r->host);
  table_correctness(r, f);
  table_memory(r, f);
  if (r->opt.jit) {
    table_jit(r, f);
    table_jit_kernels(r, f);
  }
  table_failures(r, f);
  if (!gpu_ran(r)) {
    fprintf(f, "\nspeed: not measured (CPU backend: no GPU). %d layer(s), %.1f s.\n", r->n, r->wall_s);
    return;
  }
  table_speed(r, f);
  kernel_table(r, f);
  fprintf(f, "%d layer(s), %.1f s\n", r->n, r->wall_s);
}

/* ---- JSON ----------------------------------------------------------------------------------- */
static void jstr(FILE *f, const char *s) { esc_fputs(f, esc_json, s); }

static void jnum(FILE *f, double v, int ok) {
  if (ok && isfinite(v)) fprintf(f, "%.6g", v);
  else fputs("null", f);
}

static void jstat(FILE *f, const char *key, const bench_stat *s) {
  fprintf(f, ",\n      ");
  jstr(f, key);
  if (!s->n) {
    fputs(": null", f);
    return;
  }
  fprintf(f, ": {\"n\": %d, \"median\": %.6g, \"p10\": %.6g, \"p90\": %.6g, \"min\": %.6g, \"max\": %.6g}",
          s->n, s->med, s->p10, s->p90, s->min, s->max);
}

#define KEY(k) fprintf(f, ",\n      \"%s\": ", k)

/* The run's header fields and the ceilings, up to the layers' array. */
static void json_head(const bench_run *r, int gpu, FILE *f) {
  fprintf(f, "{\n  \"tool\": \"hot-bench\",\n  \"backend\": ");
  jstr(f, gpu ? "cuda" : "cpu");
  fprintf(f, ",\n  \"fallback_reason\": ");
  jstr(f, r->fallback);
  fprintf(f, ",\n  \"device\": ");
  jstr(f, r->device);
  fprintf(f, ",\n  \"arch\": ");
  jstr(f, r->arch);
  fprintf(f, ",\n  \"spec\": ");
  jstr(f, r->opt.spec);
  fprintf(f, ",\n  \"model\": ");
  jstr(f, r->model);
  fprintf(f, ",\n  \"recipe\": ");
  jstr(f, r->recipe);
  fprintf(f, ",\n  \"seed\": %llu,\n  \"date\": ", (unsigned long long)r->seed);
  jstr(f, r->date);
  fprintf(f, ",\n  \"host\": ");
  jstr(f, r->host);
  fprintf(f, ",\n  \"speed_measured\": %s,\n  \"iters\": %d,\n  \"warmup\": %d,\n  \"ceilings\": {\"copy_gbs\": ",
          gpu ? "true" : "false", r->opt.iters, r->opt.warmup);
  jnum(f, r->copy_gbs, r->copy_gbs > 0);
  fprintf(f, ", \"bf16_tflops\": ");
  jnum(f, r->bf16_tflops, r->bf16_tflops > 0);
  fprintf(f, ", \"int8_tops\": ");
  jnum(f, r->int8_tops, r->int8_tops > 0);
  fprintf(f, ", \"fp8_tflops\": ");
  jnum(f, r->fp8_tflops, r->fp8_tflops > 0);
  fprintf(f, ", \"l2_bytes\": %d},\n  \"layers\": [", r->l2_bytes);
}

void bench_report_json_head(const bench_run *r, FILE *f) { json_head(r, gpu_ran(r), f); }

/* A layer's JIT figures (null when not measured) and note. */
static void json_jit(const bench_layer *l, FILE *f) {
  KEY("jit");
  if (!l->have_jit) {
    fputs("null", f);
  } else {
    fputs("{\"cold_ms\": ", f);
    jnum(f, l->jit_cold_ms, 1);
    fputs(", \"store_ms\": ", f);
    jnum(f, l->jit_store_ms, l->jit_store_ms >= 0);
    fputs(", \"warm_ms\": ", f);
    jnum(f, l->jit_warm_ms, l->jit_warm_ms >= 0);
    fprintf(f, ", \"compiles\": %llu, \"disk_hits\": %llu, \"per_kernel\": [", (unsigned long long)l->jit_compiles,
            (unsigned long long)l->jit_disk_hits);
    for (int k = 0; k < l->jit_nk; ++k) {
      const bench_jit_kernel *kk = &l->jit_kern[k];
      fputs(k ? ", {\"kernel\": " : "{\"kernel\": ", f);
      jstr(f, kk->name);
      fputs(", \"ms\": ", f);
      jnum(f, kk->ms, 1);
      fputs(", \"front_ms\": ", f);
      jnum(f, kk->front_ms, kk->phases);
      fputs(", \"nvvm_ms\": ", f);
      jnum(f, kk->nvvm_ms, kk->phases);
      fputs(", \"ptxas_ms\": ", f);
      jnum(f, kk->ptxas_ms, kk->phases);
      fputs("}", f);
    }
    fputs("]}", f);
  }
  if (l->jit_note[0]) {
    KEY("jit_note");
    jstr(f, l->jit_note);
  }
}

/* A layer's GPU fields: present on every backend, null where not measured. */
static void json_gpu(const bench_layer *l, FILE *f) {
  /* GPU fields: present on every backend, null where not measured. */
  KEY("bitexact");
  fputs(l->bitexact < 0 ? "null" : l->bitexact ? "true" : "false", f);
  if (l->bitexact == 0) {
    KEY("bitexact_note");
    jstr(f, l->bitexact_note);
  }
  if (l->gpu_note[0]) {
    KEY("gpu_note");
    jstr(f, l->gpu_note);
  }
  KEY("hot_ms"); jnum(f, l->hot_bwd.med, l->hot_bwd.n);
  KEY("hot_fwd_ms"); jnum(f, l->hot_fwd.med, l->hot_fwd.n);
  KEY("bf16_ms"); jnum(f, l->bf16.med, l->bf16.n);
  KEY("fp32_ms"); jnum(f, l->fp32.med, l->fp32.n);
  KEY("tf32_ms"); jnum(f, l->tf32.med, l->tf32.n);
  KEY("speedup_bf16"); jnum(f, speedup(&l->bf16, &l->hot_bwd), speedup(&l->bf16, &l->hot_bwd) > 0);
  KEY("speedup_fp32"); jnum(f, speedup(&l->fp32, &l->hot_bwd), speedup(&l->fp32, &l->hot_bwd) > 0);
  KEY("speedup_tf32"); jnum(f, speedup(&l->tf32, &l->hot_bwd), speedup(&l->tf32, &l->hot_bwd) > 0);
  /* FP8 (cuBLASLt): the two GEMMs only; null with fp8_reason when not measured */
  KEY("fp8_ms"); jnum(f, l->fp8.med, l->fp8.n);
  KEY("speedup_fp8"); jnum(f, speedup(&l->fp8, &l->hot_bwd), speedup(&l->fp8, &l->hot_bwd) > 0);
  KEY("fp8_reason");
  jstr(f, l->fp8.n ? "" : l->fp8_reason[0] ? l->fp8_reason : "not measured");
  KEY("fp8_dims");
  if (l->fp8.n)
    fprintf(f, "{\"T\": %lld, \"O\": %lld, \"I\": %lld}", (long long)l->fp8_T, (long long)l->fp8_O,
            (long long)l->fp8_I);
  else
    fputs("null", f);
  KEY("fp8_gx_rel_err"); jnum(f, l->fp8_gx_err, l->fp8.n && l->fp8_gx_err >= 0);
  KEY("fp8_gw_rel_err"); jnum(f, l->fp8_gw_err, l->fp8.n && l->fp8_gw_err >= 0);
  jstat(f, "hot_bwd", &l->hot_bwd);
  jstat(f, "hot_fwd", &l->hot_fwd);
  jstat(f, "cublas_bf16", &l->bf16);
  jstat(f, "cublas_fp32", &l->fp32);
  jstat(f, "cublas_tf32", &l->tf32);
  jstat(f, "cublaslt_fp8", &l->fp8);
  KEY("buffer_sets"); jnum(f, l->nsets_hot, l->nsets_hot > 0);
}

/* A layer's profiled kernels and their note. */
static void json_kernels(const bench_run *r, const bench_layer *l, FILE *f) {
  KEY("kernels");
  fputc('[', f);
  for (int j = 0; j < l->nk; ++j) {
    const bench_kernel *k = &l->kern[j];
    double pct, v = kernel_rate(k, r, &pct);
    fprintf(f, "%s\n        {\"kernel\": ", j ? "," : "");
    jstr(f, k->name);
    fprintf(f, ", \"role\": \"%s\", \"phase\": %d, \"call\": \"%s\", \"ms\": ",
            plan_role_name((hot_kernel_role)k->role), k->phase, k->bwd ? "backward" : "save");
    jnum(f, k->t.med, k->t.n);
    fprintf(f, ", \"bytes\": %lld, \"int_ops\": %lld, \"%s\": ", (long long)k->bytes,
            (long long)k->ops, k->bound ? "tops" : "gbs");
    jnum(f, v, v > 0);
    fputs(", \"ceiling_pct\": ", f);
    jnum(f, pct, pct > 0);
    fputc('}', f);
  }
  fputs(l->nk ? "\n      ]" : "]", f);
  if (l->prof_note[0]) {
    KEY("kernels_note");
    jstr(f, l->prof_note);
  }
}

/* One layer's object. */
static void json_layer(const bench_run *r, int i, FILE *f) {
  const bench_layer *l = &r->layers[i];
  fprintf(f, "%s\n    {\n      \"name\": ", i ? "," : "");
  jstr(f, l->name);
  fprintf(f, ",\n      \"B\": %lld, \"L\": %lld, \"T\": %lld, \"O\": %lld, \"I\": %lld, \"check_T\": %lld",
          (long long)l->B, (long long)l->L, (long long)l->T, (long long)l->O, (long long)l->I,
          (long long)l->cT);
  KEY("status");
  jstr(f, l->status[0] ? l->status : "ok");
  KEY("unsupported");
  fputs(l->unsupported ? "true" : "false", f);
  KEY("dtype");
  jstr(f, plan_dtype_name(l->dt));
  KEY("gran");
  jstr(f, l->have_err ? l->gran : "");
  KEY("gx_rel_err"); jnum(f, l->gx_err, l->have_err);
  KEY("gw_rel_err"); jnum(f, l->gw_err, l->have_err);
  KEY("gb_rel_err"); jnum(f, l->gb_err, l->have_err && l->gb_err >= 0);
  KEY("cpu_ref_ms"); jnum(f, l->cpu_ref_ms, l->have_err);
  fprintf(f, ",\n      \"abc_bytes\": %lld, \"fp32_bytes\": %lld, \"bf16_bytes\": %lld",
          (long long)l->abc_bytes, (long long)l->fp32_bytes, (long long)l->bf16_bytes);
  KEY("abc_fp32_ratio"); jnum(f, ratio(l->abc_bytes, l->fp32_bytes), l->fp32_bytes > 0);
  KEY("abc_bf16_ratio"); jnum(f, ratio(l->abc_bytes, l->bf16_bytes), l->bf16_bytes > 0);
  fprintf(f, ",\n      \"hq_block\": %d, \"hla_block\": %d, \"hla_rank\": %d, \"hla_blocks\": %d",
          l->hq_b, l->hla_p, l->hla_r, l->hla_blocks);
  fprintf(f, ",\n      \"ops\": {\"gx_macs\": %lld, \"gw_macs\": %lld, \"fp32_gx_macs\": %lld, "
             "\"fp32_gw_macs\": %lld, \"fwht_adds\": %lld}",
          (long long)l->gx_macs, (long long)l->gw_macs, (long long)l->fp32_gx_macs,
          (long long)l->fp32_gw_macs, (long long)l->fwht_adds);
  json_jit(l, f);
  json_gpu(l, f);
  json_kernels(r, l, f);
  fputs("\n    }", f);
}

int bench_report_json(const bench_run *r, FILE *f) {
  int gpu = gpu_ran(r);
  json_head(r, gpu, f);
  double sh = 0, sb = 0, s32 = 0, s8 = 0;
  int64_t sa = 0, sf = 0;
  int all = gpu, all8 = gpu;
  for (int i = 0; i < r->n; ++i) {
    const bench_layer *l = &r->layers[i];
    json_layer(r, i, f);
    sa += l->abc_bytes;
    sf += l->fp32_bytes;
    sh += l->hot_bwd.med;
    sb += l->bf16.med;
    s32 += l->fp32.med;
    all &= l->hot_bwd.n && l->bf16.n && l->fp32.n;
    s8 += l->fp8.med;
    all8 &= l->hot_bwd.n && l->fp8.n;
  }
  fprintf(f, "\n  ],\n  \"total\": {\"abc_bytes\": %lld, \"fp32_bytes\": %lld, \"abc_fp32_ratio\": ",
          (long long)sa, (long long)sf);
  jnum(f, ratio(sa, sf), sf > 0);
  fputs(", \"hot_ms\": ", f);
  jnum(f, sh, all);
  fputs(", \"bf16_ms\": ", f);
  jnum(f, sb, all);
  fputs(", \"fp32_ms\": ", f);
  jnum(f, s32, all);
  fputs(", \"speedup_bf16\": ", f);
  jnum(f, sh > 0 ? sb / sh : 0, all && sh > 0);
  fputs(", \"speedup_fp32\": ", f);
  jnum(f, sh > 0 ? s32 / sh : 0, all && sh > 0);
  fputs(", \"fp8_ms\": ", f);
  jnum(f, s8, all8);
  fputs(", \"speedup_fp8\": ", f);
  jnum(f, sh > 0 ? s8 / sh : 0, all8 && sh > 0);
  fputs("},\n  \"jit_spec_cold_ms\": ", f);
  jnum(f, r->jit_spec_cold_ms, r->have_jit_spec);
  fprintf(f, ",\n  \"wall_s\": %.3f\n}\n", r->wall_s);
  return ferror(f) ? -1 : 0;
}

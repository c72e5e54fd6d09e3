/* test_nvrtc_kernels — compiles, without a GPU, (1) the first template (hadamard_quant.cu) alone
 * over a grid of its parameters and (2) every distinct kernel of every shipped spec, for sm_80,
 * sm_86, sm_89, sm_90 and sm_90a, and on sm_90a once more with the GEMMs on the opt-in TMA path
 * (tile warps_n = 2: templates/gemm_tma.cu), and recipe nvfp4's NVFP4 GEMM (templates/gemm_nvfp4.cu)
 * at its path's tiles, HQ's NVFP4 quantisers (templates/hq_nvfp4.cu) and HLA's MXFP8 quantisers
 * (templates/hla_mxfp8.cu) for sm_120a, and every kernel of the recipe nvfp4 plans of
 * tests/specs/nvfp4_sm120a.lua on sm_120a, to CUBIN through the kernel cache; asserts zero spills (the
 * plans allow none) and that each kernel's registers, threads and shared memory fit the arch.
 * Prints per kernel: arch, name, ms, registers, spills. Compiles are cached in
 * $HOT_TEST_KCACHE (a build-tree folder), so reruns only recompile what changed.
 *
 * test_nvrtc_kernels --sass (CTest test_nvrtc_sass) runs only (2) and compares each kernel's SASS
 * instruction counts (cuobjdump -sass of its CUBIN) with tests/nvrtc/kernel_sass.txt; without a
 * disassembler it prints SKIP and exits 77 (CTest: skipped). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "emit.h"
#include "spec.h"

static hot_kcache *g_kc;

/* ---- kernel quality baseline ----------------------------------------------------------------
 * tests/nvrtc/kernel_quality.txt: one line per distinct shipped kernel and arch,
 *   <arch> <kernel> <registers> <stack bytes> <spill store bytes> <spill load bytes> <smem bytes>
 * as ptxas reported them when the file was written. every_shipped_kernel compares each compile
 * with it: a change in any figure (a compile-speed change that cost kernel quality, or a template
 * change) fails, naming the kernel, until the file is regenerated on purpose
 * (HOT_UPDATE_KERNEL_QUALITY=1, or `cmake --build build --target update-kernel-quality`) and the
 * diff reviewed. */
/* The SASS count columns (see "SASS counts" below). */
enum { SASS_COLS = 10 };
static const char *const k_sass_col[SASS_COLS] = {"instructions", "imma", "hmma", "gmma", "ldgsts",
                                                  "ldsm", "ldl", "stl", "bar", "shfl"};

typedef struct {
  char arch[16], name[96];
  int regs, stack, st, ld, smem;
  int sass[SASS_COLS];
  int in_baseline; /* sass_check: a baseline line names it */
} quality;
static quality *g_q;
static int g_nq, g_capq, g_record;

/* ---- SASS counts ------------------------------------------------------------------------------
 * tests/nvrtc/kernel_sass.txt: one line per distinct shipped kernel and arch,
 *   <arch> <kernel> <instructions> <imma> <hmma> <gmma> <ldgsts> <ldsm> <ldl> <stl> <bar> <shfl>
 * counted in `cuobjdump -sass` of the kernel's CUBIN (every function in it): instructions = all
 * but NOP (the padding after the code); the others count the instructions whose opcode (before its
 * first '.') is IMMA (integer mma.sync), HMMA (float mma.sync), *GMMA (wgmma: IGMMA, HGMMA, ...),
 * LDGSTS (cp.async), LDSM (ldmatrix), LDL / STL (local memory), BAR (barriers), SHFL (shuffles).
 * Written and compared by `test_nvrtc_kernels --sass` like kernel_quality.txt. */
/* --sass: the disassembler (cuobjdump, and the folder of the nvdisasm it runs) and a private
 * temporary folder for the CUBIN it reads. */
static int g_sass;
static char g_cuobjdump[1024], g_nvdisasm_dir[1024], g_tmpdir[256];

/* Index of the column counting opcode op (its text before the first '.'), or -1. */
static int sass_class(const char *op, size_t n) {
  static const char *const ops[] = {"IMMA", "HMMA", NULL, "LDGSTS", "LDSM", "LDL", "STL", "BAR",
                                    "SHFL"};
  for (int c = 0; c < (int)(sizeof ops / sizeof ops[0]); ++c)
    if (ops[c] && strlen(ops[c]) == n && !strncmp(op, ops[c], n)) return c + 1;
  if (n > 4 && !strncmp(op + n - 4, "GMMA", 4)) return 3;
  return -1;
}

/* Counts one `cuobjdump -sass` line into counts: a line of code is a hex address in a comment,
 * an optional guard predicate (@P0), OPCODE[.MOD...], the operands and ";". Returns 1 for an
 * instruction (NOP included, not counted), 0 for any other line. */
static int sass_count_line(const char *line, int *counts) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') ++p;
  if (p[0] != '/' || p[1] != '*') return 0;
  p += 2;
  const char *h = p;
  while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')) ++p;
  if (p == h || p[0] != '*' || p[1] != '/') return 0;
  p += 2;
  while (*p == ' ' || *p == '\t') ++p;
  if (*p == '@') { /* a guard predicate: @P0, @!PT, @UP1 */
    while (*p && *p != ' ') ++p;
    while (*p == ' ') ++p;
  }
  size_t n = 0;
  while ((p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9') || p[n] == '_') ++n;
  if (n == 0) return 0;
  if (n == 3 && !strncmp(p, "NOP", 3)) return 1;
  ++counts[0];
  int c = sass_class(p, n);
  if (c > 0) ++counts[c];
  return 1;
}

/* Writes bin's CUBIN to the temporary folder and counts its SASS into counts (zeroed first). */
static void sass_counts(const char *arch, const char *kernel, const hot_kernel_binary *bin,
                        int *counts) {
  char path[400], cmd[3000];
  snprintf(path, sizeof path, "%s/kernel.cubin", g_tmpdir);
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert_msg(fwrite(bin->cubin, 1, bin->cubin_size, f) == bin->cubin_size && fclose(f) == 0,
                "cannot write %s", path);
  /* every path is single-quoted (main refuses a tool path containing a quote; g_tmpdir has none) */
  snprintf(cmd, sizeof cmd, "PATH='%s':\"$PATH\" '%s' -sass '%s' 2>&1", g_nvdisasm_dir, g_cuobjdump,
           path);
  FILE *p = popen(cmd, "r");
  ck_assert_msg(p != NULL, "cannot run %s", g_cuobjdump);
  memset(counts, 0, SASS_COLS * sizeof *counts);
  char line[1024], last[256] = ""; /* the last line that is not code: an error, if any */
  int code = 0;
  while (fgets(line, sizeof line, p)) {
    int is_code = sass_count_line(line, counts);
    code += is_code;
    if (!is_code && line[strspn(line, " \t\r\n")] != '\0')
      snprintf(last, sizeof last, "%.200s", line + strspn(line, " \t"));
  }
  last[strcspn(last, "\n")] = '\0';
  int rc = pclose(p);
  ck_assert_msg(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0 && code > 0,
                "%s %s: `%s -sass` of its CUBIN failed (exit %d, %d lines of code): %s", arch,
                kernel, g_cuobjdump, rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, code, last);
}

static void quality_add(const char *arch, const hot_kernel_info *ki,
                        const hot_kernel_binary *bin) {
  if (!g_record) return;
  if (g_nq == g_capq) {
    g_capq = g_capq ? 2 * g_capq : 256;
    g_q = realloc(g_q, (size_t)g_capq * sizeof *g_q);
    ck_assert_ptr_nonnull(g_q);
  }
  quality *q = &g_q[g_nq++];
  memset(q, 0, sizeof *q);
  snprintf(q->arch, sizeof q->arch, "%s", arch);
  snprintf(q->name, sizeof q->name, "%s", ki->name);
  q->regs = ki->registers;
  q->stack = ki->stack_bytes;
  q->st = ki->spill_store_bytes;
  q->ld = ki->spill_load_bytes;
  q->smem = ki->shared_bytes;
  if (g_sass) {
    ck_assert_msg(bin->n_kernels == 1, "%s: SASS counts need one kernel per CUBIN, not %zu",
                  ki->name, bin->n_kernels);
    sass_counts(arch, ki->name, bin, q->sass);
  }
}

static int quality_order(const void *a, const void *b) {
  const quality *x = a, *y = b;
  int c = strcmp(x->arch, y->arch);
  return c ? c : strcmp(x->name, y->name);
}

/* Compares g_q with the baseline file (or rewrites it when asked). */
static void quality_check(void) {
  char path[1200];
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/nvrtc/kernel_quality.txt", root ? root : ".");
  qsort(g_q, (size_t)g_nq, sizeof *g_q, quality_order);
  const char *upd = getenv("HOT_UPDATE_KERNEL_QUALITY");
  if (upd && !strcmp(upd, "1")) {
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fprintf(f, "# arch kernel registers stack spill_stores spill_loads smem (ptxas, via NVRTC; "
               "written by test_nvrtc_kernels with HOT_UPDATE_KERNEL_QUALITY=1)\n");
    for (int i = 0; i < g_nq; ++i)
      fprintf(f, "%s %s %d %d %d %d %d\n", g_q[i].arch, g_q[i].name, g_q[i].regs, g_q[i].stack,
              g_q[i].st, g_q[i].ld, g_q[i].smem);
    fclose(f);
    printf("kernel quality baseline rewritten: %s (%d kernels)\n", path, g_nq);
    return;
  }
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no kernel quality baseline %s (write it with "
                "HOT_UPDATE_KERNEL_QUALITY=1)", path);
  char line[512];
  int n = 0, lineno = 0, bad = 0, matched = 0;
  while (fgets(line, sizeof line, f)) {
    ++lineno;
    if (line[0] == '#' || line[0] == '\n') continue;
    quality b;
    ck_assert_msg(sscanf(line, "%15s %95s %d %d %d %d %d", b.arch, b.name, &b.regs, &b.stack, &b.st,
                         &b.ld, &b.smem) == 7, "%s:%d: malformed line", path, lineno);
    ++n;
    const quality *q = bsearch(&b, g_q, (size_t)g_nq, sizeof *g_q, quality_order);
    if (!q) {
      printf("kernel quality: %s %s is in %s:%d but no longer compiled\n", b.arch, b.name, path,
             lineno);
      ++bad;
      continue;
    }
    ++matched;
    if (q->regs != b.regs || q->stack != b.stack || q->st != b.st || q->ld != b.ld ||
        q->smem != b.smem) {
      printf("kernel quality: %s %s: registers %d stack %d spills %d/%d smem %d, baseline (%s:%d) "
             "%d %d %d/%d %d\n", q->arch, q->name, q->regs, q->stack, q->st, q->ld, q->smem, path,
             lineno, b.regs, b.stack, b.st, b.ld, b.smem);
      ++bad;
    }
  }
  fclose(f);
  if (matched != g_nq) {
    printf("kernel quality: %d compiled kernels have no baseline line in %s\n", g_nq - matched,
           path);
    ++bad;
  }
  printf("kernel quality: %d kernels compared with %s, %d difference%s\n", n, path, bad,
         bad == 1 ? "" : "s");
  fflush(stdout); /* the lines above survive the failing check's exit */
  ck_assert_msg(bad == 0, "%d kernel quality difference(s) against %s (see the lines above; "
                "after review, regenerate with HOT_UPDATE_KERNEL_QUALITY=1)", bad, path);
}

/* Compares the SASS counts of g_q with tests/nvrtc/kernel_sass.txt (or rewrites it when asked);
 * a difference names the arch, the kernel, the column, the baseline's value and the new one. */
static void sass_check(void) {
  char path[1200];
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/nvrtc/kernel_sass.txt", root ? root : ".");
  qsort(g_q, (size_t)g_nq, sizeof *g_q, quality_order);
  const char *upd = getenv("HOT_UPDATE_KERNEL_QUALITY");
  if (upd && !strcmp(upd, "1")) {
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fprintf(f, "# arch kernel");
    for (int c = 0; c < SASS_COLS; ++c) fprintf(f, " %s", k_sass_col[c]);
    fprintf(f, " (cuobjdump -sass of the CUBIN from NVRTC: instructions but NOP, then the "
               "IMMA, HMMA, *GMMA, LDGSTS, LDSM, LDL, STL, BAR, SHFL opcodes; written by "
               "test_nvrtc_kernels --sass with HOT_UPDATE_KERNEL_QUALITY=1)\n");
    for (int i = 0; i < g_nq; ++i) {
      fprintf(f, "%s %s", g_q[i].arch, g_q[i].name);
      for (int c = 0; c < SASS_COLS; ++c) fprintf(f, " %d", g_q[i].sass[c]);
      fprintf(f, "\n");
    }
    ck_assert_msg(fclose(f) == 0, "cannot write %s", path);
    printf("kernel SASS baseline rewritten: %s (%d kernels)\n", path, g_nq);
    return;
  }
  fflush(stdout); /* the per-kernel lines survive a failing check below */
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no kernel SASS baseline %s (write it with HOT_UPDATE_KERNEL_QUALITY=1 "
                "test_nvrtc_kernels --sass)", path);
  char line[512];
  int n = 0, lineno = 0, bad = 0;
  while (fgets(line, sizeof line, f)) {
    ++lineno;
    if (line[0] == '#' || line[0] == '\n') continue;
    quality b;
    int *v = b.sass, used = 0;
    ck_assert_msg(sscanf(line, "%15s %95s %d %d %d %d %d %d %d %d %d %d %n", b.arch, b.name, &v[0],
                         &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
                         &used) == 2 + SASS_COLS && line[used] == '\0',
                  "%s:%d: malformed line (want: arch kernel and %d counts)", path, lineno,
                  SASS_COLS);
    ++n;
    quality *q = bsearch(&b, g_q, (size_t)g_nq, sizeof *g_q, quality_order);
    if (!q) {
      printf("kernel SASS: %s %s is in %s:%d but no longer compiled\n", b.arch, b.name, path,
             lineno);
      ++bad;
      continue;
    }
    if (q->in_baseline) {
      printf("kernel SASS: %s %s is in %s twice (again at line %d)\n", b.arch, b.name, path,
             lineno);
      ++bad;
      continue;
    }
    q->in_baseline = 1;
    for (int c = 0; c < SASS_COLS; ++c)
      if (q->sass[c] != v[c]) {
        printf("kernel SASS: %s %s: %s %d, baseline %d (%s:%d)\n", q->arch, q->name,
               k_sass_col[c], q->sass[c], v[c], path, lineno);
        ++bad;
      }
  }
  fclose(f);
  for (int i = 0; i < g_nq; ++i)
    if (!g_q[i].in_baseline) {
      printf("kernel SASS: %s %s is compiled but has no line in %s\n", g_q[i].arch, g_q[i].name,
             path);
      ++bad;
    }
  printf("kernel SASS: %d kernels compared with %s, %d difference%s\n", n, path, bad,
         bad == 1 ? "" : "s");
  fflush(stdout); /* the lines above survive the failing check's exit */
  ck_assert_msg(bad == 0, "%d kernel SASS difference(s) against %s (see the lines above; after "
                "review, regenerate with `cmake --build build --target update-kernel-quality`)",
                bad, path);
}

static void open_cache(void) {
  hot_kcache_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.dir = getenv("HOT_TEST_KCACHE");
  cfg.disk = cfg.dir ? 1 : -1;
  char err[512];
  ck_assert_msg(kcache_open(&g_kc, &cfg, err, sizeof err) == RT_OK, "%s", err);
}

/* Compiles src (kernels names) for arch; checks spills and limits against caps. */
static void compile_check(const char *src, const char *const *names, size_t n, hot_arch arch,
                          const unsigned *threads, const unsigned *dyn_smem) {
  const hot_arch_caps *caps = plan_arch_caps(arch);
  hot_kernel_source ks = {"hot.cu", src, names, n, caps->name, NULL, 0};
  const hot_kernel_binary *bin = NULL;
  char err[1024], *log = NULL;
  hot_kcache_origin how;
  rt_status st = kcache_get(g_kc, &ks, &bin, &how, &log, err, sizeof err);
  ck_assert_msg(st == RT_OK, "%s\n%s", err, log ? log : "");
  free(log);
  for (size_t k = 0; k < bin->n_kernels; ++k) {
    const hot_kernel_info *ki = &bin->kernels[k];
    int spills = ki->spill_store_bytes + ki->spill_load_bytes;
    printf("%-6s %-46s %8.1f ms %-8s regs %3d spills %d smem %d+%u\n", caps->name, ki->name,
           bin->compile_ms, kcache_origin_name(how), ki->registers, spills, ki->shared_bytes,
           dyn_smem[k]);
    ck_assert_msg(ki->found, "%s: no ptxas info", ki->name);
    quality_add(caps->name, ki, bin);
    ck_assert_msg(spills == 0, "%s spills %d bytes on %s", ki->name, spills, caps->name);
    ck_assert_int_le(ki->registers, caps->regs_per_thread);
    ck_assert_msg((long)ki->registers * (long)threads[k] <= 65536, "%s: %d regs x %u threads",
                  ki->name, ki->registers, threads[k]);
    ck_assert_msg((unsigned)ki->shared_bytes + dyn_smem[k] <= (unsigned)caps->max_smem_optin,
                  "%s: %d + %u bytes of shared memory on %s", ki->name, ki->shared_bytes,
                  dyn_smem[k], caps->name);
  }
}

static const hot_arch k_archs[] = {HOT_ARCH_SM80, HOT_ARCH_SM86, HOT_ARCH_SM89, HOT_ARCH_SM90,
                                   HOT_ARCH_SM90A};

START_TEST(first_template_alone) {
  open_cache();
  /* operand, dtype, b, bits, codes, round (1 = SR: g' only) */
  static const int sets[][6] = {{0, 0, 16, 4, 1, 1}, {0, 1, 256, 4, 0, 1}, {0, 2, 2, 8, 0, 1},
                                {1, 0, 16, 4, 1, 0}, {1, 1, 32, 4, 0, 0},  {0, 0, 1, 4, 0, 1},
                                {0, 0, 16, 4, 1, 0}, {0, 1, 64, 4, 0, 0}};
  for (size_t a = 0; a < 4; ++a) {
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; ++i) {
      const int *v = sets[i];
      if (v[4] == 1 && !plan_arch_caps(k_archs[a])->int4_mma) continue;
      char name[64], vals[6][16];
      snprintf(name, sizeof name, "hq_t%zu", i);
      for (int j = 0; j < 6; ++j) snprintf(vals[j], sizeof vals[j], "%d", v[j]);
      const char *names[] = {"HOT_KNAME", "HOT_OPERAND", "HOT_DTYPE", "HOT_B", "HOT_BITS",
                             "HOT_CODES", "HOT_ROUND"};
      const char *values[] = {name, vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]};
      char *src = NULL, err[256];
      ck_assert_msg(emit_template("templates/hadamard_quant.cu", names, values, 7, &src, err,
                                  sizeof err) == 0, "%s", err);
      const char *kn[] = {name};
      unsigned thr[] = {256}, smem[] = {0};
      compile_check(src, kn, 1, k_archs[a], thr, smem);
      free(src);
    }
  }
  kcache_close(g_kc);
}
END_TEST

/* g' and g^ rounded to nearest (a C API choice no shipped spec makes): the planned hq_g, hla_g
 * and lqs kernels compile with HOT_ROUND 0 and zero spills. */
START_TEST(rtn_kernels) {
  open_cache();
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "rtn");
  s.in_features = 768;
  s.out_features = 3072;
  s.hq.g.round = HOT_ROUND_RTN;
  s.hla.g.round = HOT_ROUND_RTN;
  const hot_arch archs[] = {HOT_ARCH_SM80, HOT_ARCH_SM90};
  for (size_t a = 0; a < 2; ++a) {
    hot_layer_plan p;
    char err[512];
    ck_assert_msg(plan_layer(&s, 4, 197, HOT_RECIPE_HOT, archs[a], 0, &p, err, sizeof err) == 0,
                  "%s", err);
    const hot_kernel_role roles[] = {HOT_K_HQ_G, HOT_K_HLA_G, HOT_K_LQS};
    for (int r = 0; r < 3; ++r) {
      int k = plan_kernel_index(&p, roles[r]);
      ck_assert_int_ge(k, 0);
      ck_assert_msg(strstr(p.kernels[k].name, "_rtn"), "%s", p.kernels[k].name);
      hot_emitted e;
      ck_assert_msg(emit_layer_select(&p, 1u << k, &e, err, sizeof err) == 0, "%s", err);
      ck_assert_msg(strstr(e.source, "#define HOT_ROUND 0\n"), "%s", p.kernels[k].name);
      unsigned thr[] = {p.kernels[k].block[0]}, smem[] = {p.kernels[k].smem};
      compile_check(e.source, e.kernels, 1, archs[a], thr, smem);
      emit_free(&e);
    }
  }
  kcache_close(g_kc);
}
END_TEST

/* Per-sample scales of g^ and x^ (a C API choice no shipped spec makes yet): the g_w GEMM is
 * segmented (one K segment per sample, HOT_SEGS 1, name ending in _seg) and compiles through the
 * emitter and NVRTC with zero spills on every arch, mma.sync and wgmma alike, at the planned
 * tile and (mma.sync) at the 128x128x64 2x2-warp tile, the one with the most accumulators. */
START_TEST(segmented_gw_kernels) {
  open_cache();
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  snprintf(s.name, sizeof s.name, "seg");
  s.in_features = 768;
  s.out_features = 3072;
  s.hla.layout = HOT_LAYOUT_SAMPLE;
  s.hla.g.gran = HOT_GRAN_SAMPLE;
  s.hla.x.gran = HOT_GRAN_SAMPLE;
  for (size_t i = 0; i < 2 * sizeof k_archs / sizeof k_archs[0]; ++i) {
    const hot_arch arch = k_archs[i / 2];
    const hot_tile big = {128, 128, 64, 2, 2, 3}, planned = {0, 0, 0, 0, 0, 0};
    if (i % 2 == 1 && plan_arch_caps(arch)->wgmma) continue;
    s.tile_gw = i % 2 ? big : planned;
    hot_layer_plan p;
    char err[512];
    ck_assert_msg(plan_layer(&s, 4, 196, HOT_RECIPE_HOT, arch, 0, &p, err, sizeof err) == 0, "%s",
                  err);
    int k = plan_kernel_index(&p, HOT_K_GEMM_GW);
    ck_assert_int_ge(k, 0);
    ck_assert_int_eq(p.hla.gemm.segmented, 1);
    ck_assert_msg(strstr(p.kernels[k].name, "_seg"), "%s", p.kernels[k].name);
    hot_emitted e;
    ck_assert_msg(emit_layer_select(&p, 1u << k, &e, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(strstr(e.source, "#define HOT_SEGS 1\n"), "%s", p.kernels[k].name);
    unsigned thr[] = {p.kernels[k].block[0] * p.kernels[k].block[1] * p.kernels[k].block[2]};
    unsigned smem[] = {p.kernels[k].smem};
    compile_check(e.source, e.kernels, 1, arch, thr, smem);
    emit_free(&e);
  }
  kcache_close(g_kc);
}
END_TEST

/* Distinct (arch, kernel name) pairs already compiled. */
static char (*g_seen)[160];
static int g_nseen, g_capseen;

static int seen(const char *arch, const char *name) {
  char key[160];
  snprintf(key, sizeof key, "%s/%s", arch, name);
  for (int i = 0; i < g_nseen; ++i)
    if (!strcmp(g_seen[i], key)) return 1;
  if (g_nseen == g_capseen) {
    g_capseen = g_capseen ? 2 * g_capseen : 64;
    g_seen = realloc(g_seen, sizeof *g_seen * (size_t)g_capseen);
    ck_assert_ptr_nonnull(g_seen);
  }
  snprintf(g_seen[g_nseen++], sizeof g_seen[0], "%s", key);
  return 0;
}

/* Emits and compiles every kernel of plan p for arch not compiled yet (the same module source
 * the runtime compiles: emit_layer_select); returns how many were compiled. */
static int compile_plan(const hot_layer_plan *p, hot_arch arch) {
  int n = 0;
  char err[512];
  for (int k = 0; k < p->n_kernels; ++k) {
    if (seen(plan_arch_caps(arch)->name, p->kernels[k].name)) continue;
    hot_emitted e;
    ck_assert_msg(emit_layer_select(p, 1u << k, &e, err, sizeof err) == 0, "%s", err);
    if (e.n_kernels == 1) {
      unsigned thr[] = {p->kernels[k].block[0] * p->kernels[k].block[1] * p->kernels[k].block[2]};
      unsigned smem[] = {p->kernels[k].smem};
      compile_check(e.source, e.kernels, 1, arch, thr, smem);
      ++n;
    } else {
      printf("%-6s %-46s pending (no template yet)\n", plan_arch_caps(arch)->name,
             p->kernels[k].name);
    }
    emit_free(&e);
  }
  return n;
}

/* Recipe nvfp4's block-scaled GEMMs (paths mma_nvfp4 and mma_mxfp8, templates/gemm_nvfp4.cu and
 * gemm_mxfp8.cu) on every arch that has the path (sm_120a), emitted from the path row's tiles
 * besides those a plan takes (nvfp4_spec_kernels) — the defaults for small and large problems,
 * each with 2x2 warps and the default K tile — and compiled through NVRTC with zero spills; their ptxas figures and SASS counts are baselines like
 * the shipped kernels'. Returns how many were compiled. */
static int block_gemm_kernels(hot_gemm_path path) {
  const hot_gemm_path_info *g = plan_gemm_path_info(path);
  const int tiles[][3] = {{g->tile_m_def[0], g->tile_n_def[0], g->tile_k_def},
                          {g->tile_m_def[1], g->tile_n_def[1], g->tile_k_def}};
  int n = 0;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
    if (!plan_gemm_path_available(g, c)) continue;
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; ++t) {
      char name[64], v[5][16];
      snprintf(name, sizeof name, "hot_gemm_%s_%dx%dx%d_w2x2", g->name, tiles[t][0], tiles[t][1],
               tiles[t][2]);
      if (seen(c->name, name)) continue;
      for (int j = 0; j < 3; ++j) snprintf(v[j], sizeof v[j], "%d", tiles[t][j]);
      const char *names[] = {"HOT_KNAME", "HOT_TILE_M", "HOT_TILE_N", "HOT_TILE_K", "HOT_WARPS_M",
                             "HOT_WARPS_N"};
      const char *values[] = {name, v[0], v[1], v[2], "2", "2"};
      char *src = NULL, err[256];
      ck_assert_msg(emit_template(g->templ, names, values, 6, &src, err, sizeof err) == 0, "%s",
                    err);
      const char *kn[] = {name};
      unsigned thr[] = {128}, smem[] = {0};
      compile_check(src, kn, 1, (hot_arch)a, thr, smem);
      free(src);
      ++n;
    }
  }
  return n;
}

/* HLA's MXFP8 quantisers (templates/hla_mxfp8.cu), the MXFP8 g_w GEMM's operands: g^ SR and
 * RTN, x^ RTN, each on the basis p = 16, r = 10 (the loops over p and r are not unrolled, so the
 * figures hardly depend on it), on every arch with path g (sm_120a). Returns how many were
 * compiled. */
static int hla_mxfp8_kernels(const hot_gemm_path_info *g) {
  static const struct {
    const char *name, *mode, *round;
  } q[] = {{"hot_hla_mxfp8_g_sr", "1", "1"}, {"hot_hla_mxfp8_g_rtn", "1", "0"},
           {"hot_hla_mxfp8_x", "0", "0"}};
  int n = 0;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    if (!plan_gemm_path_available(g, plan_arch_caps((hot_arch)a))) continue;
    for (size_t i = 0; i < sizeof q / sizeof q[0]; ++i) {
      if (seen(plan_arch_caps((hot_arch)a)->name, q[i].name)) continue;
      const char *names[] = {"HOT_KNAME", "HOT_MODE", "HOT_ROUND", "HOT_P", "HOT_R", "HOT_ROWS"};
      const char *values[] = {q[i].name, q[i].mode, q[i].round, "16", "10",
                              "0, 8, 12, 4, 14, 10, 2, 3, 11, 1"};
      char *src = NULL, err[256];
      ck_assert_msg(emit_template("templates/hla_mxfp8.cu", names, values, 6, &src, err,
                                  sizeof err) == 0, "%s", err);
      const char *kn[] = {q[i].name};
      unsigned thr[] = {256}, smem[] = {0};
      compile_check(src, kn, 1, (hot_arch)a, thr, smem);
      free(src);
      ++n;
    }
  }
  return n;
}

/* The layers of tests/specs/nvfp4_sm120a.lua (recipe nvfp4), planned by plan_layer for every arch
 * with the block-scaled mma.sync (sm_120a) and their kernels compiled as the runtime would emit
 * them; every other arch refuses the recipe in one line naming it. Returns how many kernels were
 * compiled (those not compiled yet under the same name). */
static int nvfp4_spec_kernels(void) {
  char path[1200];
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/specs/nvfp4_sm120a.lua", root ? root : ".");
  hot_model m;
  hot_diag dg = {0};
  ck_assert_msg(spec_load_file(path, NULL, &m, &dg) == 0, "%s", dg.count ? dg.lines[0] : path);
  ck_assert_int_eq(m.recipe, HOT_RECIPE_NVFP4);
  int n = 0, archs = 0;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = plan_arch_caps((hot_arch)a);
    for (int l = 0; l < m.n_layers; ++l) {
      hot_layer_plan p;
      char err[512];
      const int64_t tokens = m.layers[l].tokens ? m.layers[l].tokens : m.tokens;
      const int rc = plan_layer(&m.layers[l], m.batch, tokens, m.recipe, (hot_arch)a, l, &p, err,
                                sizeof err);
      if (!c->mma_sync_nvfp4) {
        ck_assert_msg(rc == -1 && strstr(err, "recipe nvfp4 has no GPU path") && strstr(err, c->name),
                      "%s: %s", c->name, err);
        continue;
      }
      ck_assert_msg(rc == 0, "%s layer %s: %s", c->name, m.layers[l].name, err);
      n += compile_plan(&p, (hot_arch)a);
    }
    archs += c->mma_sync_nvfp4;
  }
  ck_assert_int_ge(archs, 1);
  spec_model_free(&m);
  diag_free(&dg);
  return n;
}

/* The block-scaled GEMMs (block_gemm_kernels), HQ's NVFP4 quantisers (templates/hq_nvfp4.cu) and
 * HLA's MXFP8 quantisers (hla_mxfp8_kernels) from their parameters, then the planned kernels of
 * tests/specs/nvfp4_sm120a.lua (nvfp4_spec_kernels; a planned kernel of the same name as one
 * above is that kernel: its name encodes every parameter). */
static void nvfp4_kernels(void) {
  const hot_gemm_path_info *g = plan_gemm_path_info(HOT_GEMM_MMA_NVFP4);
  int n = block_gemm_kernels(HOT_GEMM_MMA_NVFP4) + block_gemm_kernels(HOT_GEMM_MMA_MXFP8);
  /* HQ's NVFP4 quantisers (templates/hq_nvfp4.cu), the GEMM's operands: g' SR and RTN, w' RTN */
  static const struct {
    const char *name, *operand, *round;
  } q[] = {{"hot_hq_nvfp4_g_sr", "0", "1"}, {"hot_hq_nvfp4_g_rtn", "0", "0"},
           {"hot_hq_nvfp4_w", "1", "0"}};
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    if (!plan_gemm_path_available(g, plan_arch_caps((hot_arch)a))) continue;
    for (size_t i = 0; i < sizeof q / sizeof q[0]; ++i) {
      if (seen(plan_arch_caps((hot_arch)a)->name, q[i].name)) continue;
      const char *names[] = {"HOT_KNAME", "HOT_OPERAND", "HOT_ROUND"};
      const char *values[] = {q[i].name, q[i].operand, q[i].round};
      char *src = NULL, err[256];
      ck_assert_msg(emit_template("templates/hq_nvfp4.cu", names, values, 3, &src, err,
                                  sizeof err) == 0, "%s", err);
      const char *kn[] = {q[i].name};
      unsigned thr[] = {256}, smem[] = {0};
      compile_check(src, kn, 1, (hot_arch)a, thr, smem);
      free(src);
      ++n;
    }
  }
  n += hla_mxfp8_kernels(g);
  const int planned = nvfp4_spec_kernels();
  printf("%d NVFP4 kernels (GEMM paths %s and %s, HQ and HLA quantisers), %d of them planned from "
         "tests/specs/nvfp4_sm120a.lua\n", n + planned, g->name,
         plan_gemm_path_info(HOT_GEMM_MMA_MXFP8)->name, planned);
}

START_TEST(every_shipped_kernel) {
  open_cache();
  g_record = 1;
  char dir[1024];
  const char *root = getenv("HOT_SOURCE_DIR");
  snprintf(dir, sizeof dir, "%s/specs", root ? root : ".");
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  char *names[64];
  int nspec = 0;
  for (struct dirent *e; (e = readdir(d)) && nspec < 64;) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".lua")) names[nspec++] = strdup(e->d_name);
  }
  closedir(d);
  int kernels = 0;
  for (int s = 0; s < nspec; ++s) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, names[s]);
    hot_model m;
    hot_diag dg = {0};
    ck_assert_msg(spec_load_file(path, NULL, &m, &dg) == 0, "%s", dg.count ? dg.lines[0] : path);
    /* every arch, then sm_90a once more with both GEMMs on the TMA path (tile warps_n = 2,
     * opt-in: docs/gemm-paths.md) */
    const size_t n_archs = sizeof k_archs / sizeof k_archs[0];
    for (size_t a = 0; a <= n_archs; ++a)
      for (int l = 0; l < m.n_layers; ++l) {
        hot_layer_plan p;
        char err[512];
        const hot_arch arch = a < n_archs ? k_archs[a] : HOT_ARCH_SM90A;
        hot_layer_spec ls = m.layers[l];
        if (a == n_archs) ls.tile_gx.warps_n = ls.tile_gw.warps_n = 2;
        int64_t tokens = ls.tokens ? ls.tokens : m.tokens;
        ck_assert_msg(plan_layer(&ls, m.batch, tokens, m.recipe, arch, l, &p, err, sizeof err) == 0,
                      "%s layer %s: %s", names[s], ls.name, err);
        kernels += compile_plan(&p, arch);
      }
    spec_model_free(&m);
    diag_free(&dg);
    free(names[s]);
  }
  nvfp4_kernels();
  hot_kcache_stats st;
  kcache_stats_get(g_kc, &st);
  printf("%d distinct kernels from %d specs: %llu compiled (%.1f s), %llu from the disk cache\n",
         kernels, nspec, (unsigned long long)st.compiles, st.compile_ms / 1000.0,
         (unsigned long long)st.disk_hits);
  ck_assert_int_gt(kernels, 10);
  kcache_close(g_kc);
  free(g_seen);
  if (g_sass)
    sass_check();
  else
    quality_check();
  free(g_q);
}
END_TEST

/* Finds tool with tools/find-cuda-tool.sh into out (size n); 0 when it is not found. */
static int find_tool(const char *tool, char *out, size_t n) {
  const char *root = getenv("HOT_SOURCE_DIR");
  char cmd[1400];
  if (strchr(root ? root : ".", '\'')) return 0;
  snprintf(cmd, sizeof cmd, "'%s/tools/find-cuda-tool.sh' %s 2>/dev/null", root ? root : ".", tool);
  FILE *p = popen(cmd, "r");
  if (!p) return 0;
  out[0] = '\0';
  char *got = fgets(out, (int)n, p);
  int rc = pclose(p);
  if (!got || rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) return 0;
  out[strcspn(out, "\n")] = '\0';
  return out[0] != '\0' && !strchr(out, '\'');
}

/* --sass: finds cuobjdump and nvdisasm and makes the temporary folder. Returns 0 when ready, 77
 * (skipped) without a disassembler, 1 on an error (also a missing disassembler when rewriting the
 * baseline was asked: that must not pass silently). */
static int sass_setup(void) {
  const char *upd = getenv("HOT_UPDATE_KERNEL_QUALITY");
  int update = upd && !strcmp(upd, "1");
  const char *tools[2] = {"cuobjdump", "nvdisasm"};
  char *paths[2] = {g_cuobjdump, g_nvdisasm_dir};
  for (int t = 0; t < 2; ++t)
    if (!find_tool(tools[t], paths[t], sizeof g_cuobjdump)) {
      printf("%s: no %s (tools/install-python-deps.sh installs it)\n",
             update ? "test_nvrtc_kernels --sass: ERROR: cannot rewrite kernel_sass.txt"
                    : "SKIP", tools[t]);
      return update ? 1 : 77;
    }
  char *slash = strrchr(g_nvdisasm_dir, '/');
  if (slash) *slash = '\0';
  const char *tmp = getenv("TMPDIR");
  snprintf(g_tmpdir, sizeof g_tmpdir, "%s/hot-sass-XXXXXX",
           tmp && tmp[0] && !strchr(tmp, '\'') && strlen(tmp) < 200 ? tmp : "/tmp");
  if (!mkdtemp(g_tmpdir)) {
    printf("test_nvrtc_kernels --sass: cannot make a temporary folder %s\n", g_tmpdir);
    return 1;
  }
  printf("SASS from %s (nvdisasm in %s)\n", g_cuobjdump, g_nvdisasm_dir);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && strcmp(argv[1], "--sass"))) {
    fprintf(stderr, "usage: test_nvrtc_kernels [--sass]\n"
                    "  (no option)  every kernel compiles within its limits; registers, stack,\n"
                    "               spills and shared memory equal tests/nvrtc/kernel_quality.txt\n"
                    "  --sass       the shipped kernels' SASS instruction counts equal\n"
                    "               tests/nvrtc/kernel_sass.txt (exit 77: no cuobjdump)\n"
                    "  HOT_UPDATE_KERNEL_QUALITY=1 rewrites the baseline file instead\n");
    return 2;
  }
  g_sass = argc == 2;
  if (g_sass) {
    int rc = sass_setup();
    if (rc) return rc;
  }
  Suite *s = suite_create("nvrtc");
  TCase *tc = tcase_create("nvrtc");
  tcase_set_timeout(tc, 1800);
  if (!g_sass) {
    tcase_add_test(tc, first_template_alone);
    tcase_add_test(tc, rtn_kernels);
    tcase_add_test(tc, segmented_gw_kernels);
  }
  tcase_add_test(tc, every_shipped_kernel);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  if (g_sass) {
    char path[400];
    snprintf(path, sizeof path, "%s/kernel.cubin", g_tmpdir);
    unlink(path);
    rmdir(g_tmpdir);
  }
  return failed ? 1 : 0;
}

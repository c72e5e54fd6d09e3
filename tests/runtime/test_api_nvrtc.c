/* test_api_nvrtc.c — real NVRTC compiles through the public API (no GPU: the CPU backend with a
 * forced arch compiles into the kernel cache): a second context finds the binary on disk with
 * zero compiles; a truncated or corrupted entry is recompiled; hot-gen --compile fills the same
 * cache, so an application then starts with zero compiles. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/time.h>
#include <unistd.h>

#include "api_util.h"
#include "emit.h"
#include "hot_internal.h"
#include "rt_util.h"

static double now_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

/* A context compiling for sm_90 into dir, one layer "fc" of the small spec, compiled. Returns
 * the stats after the compile and the compile's wall time. */
static unsigned g_np; /* programs of the "fc" layer (one per distinct kernel) */

static void compile_once(const char *dir, const char *spec, hot_stats *st, double *ms) {
  hot_options o;
  hot_options_init(&o);
  o.arch = "sm_90";
  o.cache_dir = dir;
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_from_spec(ctx, spec, "fc", 0, &l), HOT_OK);
  double t0 = now_ms();
  hot_status r = hot_layer_compile(l);
  *ms = now_ms() - t0;
  ck_assert_msg(r == HOT_OK, "%s: %s\n%s", hot_status_name(r), hot_errmsg(ctx), hot_compile_log(ctx));
  ck_assert_int_eq(hot_ctx_stats(ctx, st), HOT_OK);
  g_np = au_programs(l);
  /* the log of a real compile holds ptxas's lines */
  if (st->compiles) ck_assert_msg(strstr(hot_compile_log(ctx), "registers"), "%s", hot_compile_log(ctx));
  hot_ctx_destroy(ctx);
}

/* The cache entry path of the "fc" layer's first program (what hot_layer_compile asks the
 * cache for its first kernel). */
static void entry_path(const char *dir, const char *spec, char *path, size_t n) {
  hot_options o;
  hot_options_init(&o);
  o.arch = "sm_90";
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, &o), HOT_OK);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_from_spec(ctx, spec, "fc", 0, &l), HOT_OK);
  hot_emitted e;
  char err[512];
  ck_assert_int_eq(emit_layer_select(hot_layer_get_plan(l), 1u, &e, err, sizeof err), 0);
  hot_kernel_source src = {"hot.cu", e.source, e.kernels, (size_t)e.n_kernels, "sm_90", NULL, 0};
  hot_kcache_config cfg = {0};
  cfg.dir = dir;
  hot_kcache *kc = NULL;
  ck_assert_int_eq(kcache_open(&kc, &cfg, err, sizeof err), RT_OK);
  ck_assert_int_eq(kcache_entry_path(kc, &src, path, n, err, sizeof err), RT_OK);
  kcache_close(kc);
  emit_free(&e);
  hot_ctx_destroy(ctx);
}

START_TEST(compile_then_disk_then_corrupt) {
  char dir[256], sdir[256], spec[300];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  ck_assert_ptr_nonnull(tmp_dir(sdir));
  au_write_spec(sdir, spec, sizeof spec);
  hot_stats st;
  double ms;
  compile_once(dir, spec, &st, &ms);
  ck_assert_uint_ge(g_np, 5);
  ck_assert_uint_eq(st.compiles, g_np);
  ck_assert_uint_eq(st.disk_hits, 0);
  printf("api_nvrtc: first use: %u NVRTC programs, %.1f ms of compiles (hot_layer_compile %.1f ms wall)\n",
         g_np, st.compile_ms, ms);
  compile_once(dir, spec, &st, &ms);
  ck_assert_uint_eq(st.compiles, 0);
  ck_assert_uint_eq(st.disk_hits, g_np);
  printf("api_nvrtc: second context: disk hit, hot_layer_compile %.1f ms\n", ms);

  char path[1024];
  entry_path(dir, spec, path, sizeof path);
  ck_assert_int_eq(access(path, R_OK), 0);
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  /* truncated: a miss, recompiled and replaced */
  ck_assert_int_eq(truncate(path, size / 2), 0);
  compile_once(dir, spec, &st, &ms);
  ck_assert_uint_eq(st.compiles, 1);
  ck_assert_uint_eq(st.disk_rejects, 1);
  /* corrupted in the middle: the same */
  f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, size / 2, SEEK_SET);
  int c = fgetc(f);
  fseek(f, size / 2, SEEK_SET);
  fputc(c ^ 0x5a, f);
  fclose(f);
  compile_once(dir, spec, &st, &ms);
  ck_assert_uint_eq(st.compiles, 1);
  ck_assert_uint_eq(st.disk_rejects, 1);
  /* and the replacement is good */
  compile_once(dir, spec, &st, &ms);
  ck_assert_uint_eq(st.compiles, 0);
  ck_assert_uint_eq(st.disk_hits, g_np);
  rm_tree(dir);
  rm_tree(sdir);
}
END_TEST

#ifdef HOT_GEN_EXE
/* Runs hot-gen; returns its exit status and its stdout in out. */
static int run_hotgen(const char *args, char *out, size_t n) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", HOT_GEN_EXE, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t k = fread(out, 1, n - 1, p);
  out[k] = '\0';
  return pclose(p);
}

START_TEST(hotgen_fills_the_same_cache) {
  char dir[256], sdir[256], spec[300], args[1024], out[8192];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  ck_assert_ptr_nonnull(tmp_dir(sdir));
  au_write_spec(sdir, spec, sizeof spec);
  snprintf(args, sizeof args, "'%s' --layer fc --compile sm_90 --cache-dir '%s'", spec, dir);
  ck_assert_msg(run_hotgen(args, out, sizeof out) == 0, "%s", out);
  ck_assert_msg(!strstr(out, "compiles 0 "), "%s", out);
  /* the second run finds everything; HOT_JIT_DEBUG reaches hot-gen (through the cache) */
  char dbg[300], f[400];
  snprintf(dbg, sizeof dbg, "%s/dbg", sdir);
  setenv("HOT_JIT_DEBUG", "1", 1);
  setenv("HOT_JIT_DEBUG_DIR", dbg, 1);
  ck_assert_msg(run_hotgen(args, out, sizeof out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "compiles 0 "), "%s", out);
  snprintf(f, sizeof f, "%s/fc.sm_90.cu", dbg);
  ck_assert_msg(access(f, R_OK) == 0, "HOT_JIT_DEBUG wrote no %s", f);
  unsetenv("HOT_JIT_DEBUG");
  unsetenv("HOT_JIT_DEBUG_DIR");
  /* a bad value is refused by hot-gen too, naming the variable */
  setenv("HOT_CACHE_MAX_MB", "abc", 1);
  ck_assert_int_ne(run_hotgen(args, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "HOT_CACHE_MAX_MB='abc'"), "%s", out);
  unsetenv("HOT_CACHE_MAX_MB");
  /* a cache directory that cannot be written still serves --compile (root ignores modes) */
  if (geteuid() != 0) {
    ck_assert_int_eq(chmod(dir, 0555), 0);
    int rc = run_hotgen(args, out, sizeof out);
    chmod(dir, 0700);
    ck_assert_msg(rc == 0 && strstr(out, "compiles 0 "), "%s", out);
  } else {
    printf("NOTE: running as root: the read-only cache directory for hot-gen is covered by "
           "runtime_cache's read_only_cache (config.read_only), not by chmod here\n");
  }
  /* an application with HOT_ARCH and HOT_CACHE_DIR starts with zero compiles */
  setenv("HOT_ARCH", "sm_90", 1);
  setenv("HOT_CACHE_DIR", dir, 1);
  hot_ctx *ctx = NULL;
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  hot_layer *l = NULL;
  ck_assert_int_eq(hot_layer_from_spec(ctx, spec, "fc", 0, &l), HOT_OK);
  hot_status r = hot_layer_compile(l);
  ck_assert_msg(r == HOT_OK, "%s: %s", hot_status_name(r), hot_errmsg(ctx));
  hot_stats st;
  ck_assert_int_eq(hot_ctx_stats(ctx, &st), HOT_OK);
  ck_assert_uint_eq(st.compiles, 0);
  ck_assert_uint_gt(st.disk_hits, 0);
  ck_assert_str_eq(st.arch, "sm_90");
  ck_assert_str_eq(st.cache_dir, dir);
  hot_ctx_destroy(ctx);
  unsetenv("HOT_CACHE_DIR");
  /* a kernel pack from hot-gen (entries from the cache it just filled): an application without
   * any cache directory starts with zero compiles */
  char pack[400];
  snprintf(pack, sizeof pack, "%s/fc.hotpack", sdir);
  snprintf(args, sizeof args, "'%s' --layer fc --compile sm_90 --cache-dir '%s' --pack '%s'", spec,
           dir, pack);
  ck_assert_msg(run_hotgen(args, out, sizeof out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "to the pack"), "%s", out);
  setenv("HOT_NO_DISK_CACHE", "1", 1);
  setenv("HOT_KERNEL_PACK", pack, 1);
  ck_assert_int_eq(hot_ctx_create(&ctx, NULL), HOT_OK);
  unsetenv("HOT_KERNEL_PACK");
  unsetenv("HOT_NO_DISK_CACHE");
  ck_assert_int_eq(hot_layer_from_spec(ctx, spec, "fc", 0, &l), HOT_OK);
  r = hot_layer_compile(l);
  ck_assert_msg(r == HOT_OK, "%s: %s", hot_status_name(r), hot_errmsg(ctx));
  ck_assert_int_eq(hot_ctx_stats(ctx, &st), HOT_OK);
  ck_assert_uint_eq(st.compiles, 0);
  ck_assert_uint_eq(st.disk_hits, 0);
  ck_assert_str_eq(st.cache_dir, "");
  hot_ctx_destroy(ctx);
  unsetenv("HOT_ARCH");
  /* --pack without --compile is a usage error */
  snprintf(args, sizeof args, "'%s' --pack '%s'", spec, pack);
  ck_assert_int_ne(run_hotgen(args, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "--pack needs --compile"), "%s", out);
  /* a pack that cannot be written: exit 1 before any compile (outputs are checked first), the
   * file and the missing folder named, not called a compile failure */
  snprintf(args, sizeof args, "'%s' --layer fc --compile sm_90 --cache-dir '%s' --pack '%s/no/x.hotpack'",
           spec, dir, sdir);
  ck_assert_int_ne(run_hotgen(args, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "/no/x.hotpack") && strstr(out, "/no: No such file or directory") &&
                    !strstr(out, "compile failure"),
                "%s", out);
  rm_tree(dir);
  rm_tree(sdir);
}
END_TEST
#endif

int main(void) {
  /* The CPU backend with a forced arch compiles without a GPU, whatever the machine has. */
  setenv("HOT_BACKEND", "cpu", 1);
  unsetenv("HOT_ARCH");
  unsetenv("HOT_CACHE_DIR");
  unsetenv("HOT_NO_DISK_CACHE");
  Suite *s = suite_create("runtime_api_nvrtc");
  TCase *tc = tcase_create("nvrtc");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, compile_then_disk_then_corrupt);
#ifdef HOT_GEN_EXE
  tcase_add_test(tc, hotgen_fills_the_same_cache);
#endif
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

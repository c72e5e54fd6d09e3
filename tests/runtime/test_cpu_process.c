/* test_cpu_process.c — the CPU backend and the state of the process around it:
 *   - settings read once: HOT_CPU_THREADS and HOT_CPU_ISA are parsed by hot_ctx_create and kept
 *     in the context; changing or unsetting them later changes nothing (the thread count the
 *     backward runs on, counted in /proc/self/task; no AMX permission request from a context
 *     capped at avx512: ARCH_GET_XCOMP_PERM bit 18 stays clear);
 *   - fork: after a multi-threaded backward the child's first backward finishes (the pool's
 *     workers do not exist there) with the parent's bits, and the parent's pool keeps working;
 *   - the floating-point environment: with FTZ and DAZ set on the calling thread (what
 *     torch.set_flush_denormal(True) does) and inputs in the subnormal range, every backward at
 *     1, 2 and 3 threads gives the twins' bits (computed in the default environment).
 * Check forks each test (CK_FORK), so each one starts without pool workers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "api_util.h"
#include "hot_internal.h"

/* Threads of this process. */
static int task_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

typedef struct {
  hot_ctx *ctx;
  hot_layer *l;
  au_io io;
} run_t;

/* A CPU context (from the environment as it is now) and a layer of T x O x I on fresh inputs. */
static void run_open(run_t *r, int64_t O, int64_t I, uint64_t seed) {
  memset(r, 0, sizeof *r);
  setenv("HOT_BACKEND", "cpu", 1);
  ck_assert_int_eq(hot_ctx_create(&r->ctx, NULL), HOT_OK);
  hot_layer_spec s;
  plan_spec_defaults(&s, HOT_RECIPE_HOT);
  s.in_features = I;
  s.out_features = O;
  ck_assert_int_eq(hot_layer_create(r->ctx, &s, 4, 256, HOT_RECIPE_HOT, &r->l), HOT_OK);
  au_io_init(&r->io, 4 * 256, O, I, seed);
}

static hot_status run_backward(run_t *r) {
  hot_status st = hot_layer_save(r->l, r->io.x, HOT_DT_F32, NULL, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(r->l, r->io.gy, r->io.w, HOT_DT_F32, NULL, r->io.gx, r->io.gw,
                            r->io.gb, 3, NULL);
  return st;
}

/* The twins' g_x, g_w, g_b for r's inputs, in the default floating-point environment. */
static void run_reference(run_t *r) {
  const hot_layer_plan *pl = hot_layer_get_plan(r->l);
  hot_layer_info info;
  ck_assert_int_eq(hot_layer_get_info(r->l, &info), HOT_OK);
  hot_ref_saved rs;
  ck_assert_int_eq(ref_layer_save(pl, r->io.x, HOT_DT_F32, &rs), HOT_REF_OK);
  ck_assert_int_eq(ref_layer_backward(pl, &rs, r->io.gy, r->io.w, HOT_DT_F32, info.gran, info.seed,
                                      3, r->io.rgx, r->io.rgw, r->io.rgb),
                   HOT_REF_OK);
  ref_saved_free(&rs);
}

static int run_equal(const run_t *r) {
  const au_io *io = &r->io;
  return !memcmp(io->gx, io->rgx, (size_t)(io->T * io->I) * 4) &&
         !memcmp(io->gw, io->rgw, (size_t)(io->O * io->I) * 4) &&
         !memcmp(io->gb, io->rgb, (size_t)io->O * 4);
}

static void run_close(run_t *r) {
  hot_ctx_destroy(r->ctx);
  au_io_free(&r->io);
}

/* ---- settings read once --------------------------------------------------------------------- */

START_TEST(threads_fixed_at_creation) {
  const int before = task_count();
  ck_assert_int_eq(before, 1);
  setenv("HOT_CPU_THREADS", "1", 1);
  run_t r;
  run_open(&r, 256, 512, 11);
  setenv("HOT_CPU_THREADS", "4", 1); /* too late for this context */
  ck_assert_int_eq(run_backward(&r), HOT_OK);
  ck_assert_int_eq(task_count(), 1); /* one thread: the pool never started a worker */
  run_close(&r);
  /* the control: a context created with 3 threads does start workers */
  setenv("HOT_CPU_THREADS", "3", 1);
  run_open(&r, 256, 512, 11);
  unsetenv("HOT_CPU_THREADS");
  ck_assert_int_eq(run_backward(&r), HOT_OK);
  ck_assert_int_eq(task_count(), 3);
  run_close(&r);
}
END_TEST

START_TEST(isa_cap_fixed_at_creation) {
#if defined(__x86_64__) && defined(__linux__)
  setenv("HOT_CPU_ISA", "avx512", 1);
  run_t r;
  run_open(&r, 64, 128, 5);
  unsetenv("HOT_CPU_ISA"); /* the context keeps its cap */
  ck_assert_int_eq(run_backward(&r), HOT_OK);
  unsigned long long perm = 0;
  const long g = syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &perm);
  ck_assert_msg(g != 0 || !(perm >> 18 & 1u),
                "a context capped at avx512 asked Linux for the AMX tile data");
  run_close(&r);
#else
  printf("isa_cap_fixed_at_creation: not x86-64 Linux, no AMX to ask for\n");
#endif
}
END_TEST

/* ---- fork ------------------------------------------------------------------------------------- */

/* Waits up to `secs` for pid; its exit status, or -1 (killed: it hung). */
static int wait_bounded(pid_t pid, int secs) {
  for (int i = 0; i < secs * 20; ++i) {
    int ws = 0;
    if (waitpid(pid, &ws, WNOHANG) == pid) return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    const struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

START_TEST(fork_after_threaded_backward) {
  setenv("HOT_CPU_THREADS", "2", 1);
  run_t r;
  run_open(&r, 256, 512, 21);
  ck_assert_int_eq(run_backward(&r), HOT_OK);
  ck_assert_int_ge(task_count(), 2); /* the pool's worker exists */
  run_reference(&r);
  ck_assert(run_equal(&r));
  const pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) { /* the child: its first hot call must not wait for the parent's workers */
    memset(r.io.gx, 0, (size_t)(r.io.T * r.io.I) * 4);
    const int ok = run_backward(&r) == HOT_OK && run_equal(&r) && run_backward(&r) == HOT_OK &&
                   run_equal(&r);
    _exit(ok ? 0 : 3);
  }
  const int rc = wait_bounded(pid, 60);
  ck_assert_msg(rc == 0, "the child's backward after fork %s", rc < 0 ? "hung" : "differed");
  memset(r.io.gx, 0, (size_t)(r.io.T * r.io.I) * 4);
  ck_assert_int_eq(run_backward(&r), HOT_OK); /* the parent's pool still works */
  ck_assert(run_equal(&r));
  run_close(&r);
  unsetenv("HOT_CPU_THREADS");
}
END_TEST

/* ---- the floating-point environment -------------------------------------------------------------- */

START_TEST(ftz_daz_caller_gives_the_twins_bits) {
#if defined(__x86_64__)
  for (int threads = 1; threads <= 3; ++threads) {
    char v[8];
    snprintf(v, sizeof v, "%d", threads);
    setenv("HOT_CPU_THREADS", v, 1);
    run_t r;
    run_open(&r, 128, 256, 31);
    /* inputs in the subnormal range: products and transforms of them are subnormal too */
    for (int64_t i = 0; i < r.io.T * r.io.O; ++i) r.io.gy[i] *= 1e-38f;
    for (int64_t i = 0; i < r.io.T * r.io.I; ++i) r.io.x[i] *= 1e-38f;
    run_reference(&r); /* the default environment */
    const unsigned csr = _mm_getcsr();
    for (int k = 0; k < 8; ++k) {
      _mm_setcsr(csr | 0x8040u); /* FTZ (bit 15) and DAZ (bit 6) on the calling thread */
      memset(r.io.gx, 0xff, (size_t)(r.io.T * r.io.I) * 4);
      const hot_status st = run_backward(&r);
      const unsigned after = _mm_getcsr();
      _mm_setcsr(csr);
      ck_assert_msg(st == HOT_OK, "%s", hot_errmsg(r.ctx));
      ck_assert_msg((after & 0x8040u) == 0x8040u, "the caller's FTZ/DAZ were not given back");
      ck_assert_msg(run_equal(&r), "%d threads, run %d: FTZ/DAZ on the caller changed the bits",
                    threads, k);
    }
    run_close(&r);
  }
  unsetenv("HOT_CPU_THREADS");
#else
  printf("ftz_daz_caller_gives_the_twins_bits: not x86-64 (no MXCSR)\n");
#endif
}
END_TEST

int main(void) {
  setenv("HOT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  unsetenv("HOT_CPU_THREADS");
  unsetenv("HOT_CPU_ISA");
  Suite *s = suite_create("cpu_process");
  TCase *tc = tcase_create("process");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, threads_fixed_at_creation);
  tcase_add_test(tc, isa_cap_fixed_at_creation);
  tcase_add_test(tc, fork_after_threaded_backward);
  tcase_add_test(tc, ftz_daz_caller_gives_the_twins_bits);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

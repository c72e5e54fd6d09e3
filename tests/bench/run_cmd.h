/* run_cmd.h — for the bench tests: run a command line under sh and collect its output. */
#ifndef HOT_TEST_RUN_CMD_H
#define HOT_TEST_RUN_CMD_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Runs cmd under sh; its stdout (add 2>&1 for stderr) into a malloc'd string the caller frees;
 * *status is the exit status (or -1). Fails the current check on popen/allocation failure. */
static char *run(const char *cmd, int *status) {
  FILE *p = popen(cmd, "r");
  ck_assert_msg(p != NULL, "popen %s", cmd);
  size_t cap = 1 << 16, n = 0, k;
  char *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += k;
    if (cap - n < 4096) {
      cap *= 2;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
  }
  buf[n] = 0;
  int st = pclose(p);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return buf;
}

#endif

/* fuzz_spec.c — a libFuzzer target over the generator's front half: any bytes as a spec
 * (spec_load_string, sandboxed, with small limits) -> every layer planned for every target arch
 * (plan_layer) -> CUDA source emitted (emit_layer). It must never crash, hang, leak or trip a
 * sanitizer, whatever the input.
 *
 * Two builds (tests/fuzz/CMakeLists.txt):
 *   - clang with -fsanitize=fuzzer: a real libFuzzer binary (with ASan and UBSan), run by CTest for
 *     a bounded time over a copy of tests/fuzz/corpus/;
 *   - any other compiler: the same entry point driven by the main() below, which feeds every file
 *     of the given folders/files once (a regression run over the corpus), so the test never
 *     silently does nothing.
 * Each build prints which mode ran. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diag.h"
#include "emit.h"
#include "plan.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static hot_layer_plan g_plan; /* large: static, reused */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  spec_limits lim = spec_default_limits();
  lim.memory_bytes = 16u << 20;
  lim.instructions = 2000000;
  lim.seconds = 2.0;
  hot_model m;
  hot_diag d = {0};
  if (spec_load_string("fuzz.lua", (const char *)data, size, &lim, &m, &d) == 0) {
    for (int a = 0; a < m.n_archs; ++a)
      for (int l = 0; l < m.n_layers; ++l) {
        const hot_layer_spec *s = &m.layers[l];
        char err[512];
        int64_t tokens = s->tokens ? s->tokens : m.tokens;
        if (plan_layer(s, m.batch, tokens, m.recipe, m.archs[a], l, &g_plan, err, sizeof err) != 0)
          continue;
        hot_emitted e;
        if (emit_layer(&g_plan, &e, err, sizeof err) == 0) emit_free(&e);
      }
  }
  /* Every message is one line naming the spec, within the bound of every message (diag.h). */
  for (int i = 0; i < d.count; ++i)
    if (strchr(d.lines[i], '\n') || strncmp(d.lines[i], "fuzz.lua", 8) != 0 ||
        strlen(d.lines[i]) >= HOT_MSG_MAX) {
      fprintf(stderr, "fuzz_spec: bad message: %s\n", d.lines[i]);
      abort();
    }
  spec_model_free(&m);
  diag_free(&d);
  return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  printf("fuzz_spec: mode libFuzzer (coverage-guided, ASan + UBSan)\n");
  fflush(stdout);
  return 0;
}

#ifndef HOT_FUZZ_LIBFUZZER
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  char chunk[65536];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n > cap) {
      cap = (len + n) * 2;
      char *g = realloc(buf, cap);
      if (!g) {
        free(buf);
        fclose(f);
        return -1;
      }
      buf = g;
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  fclose(f);
  LLVMFuzzerTestOneInput((const uint8_t *)(buf ? buf : ""), len);
  free(buf);
  return 0;
}

/* Regression driver: feeds every regular file of each argument (a file or a folder) once. */
int main(int argc, char **argv) {
  const char *under = getenv("HOT_FUZZ_UNDER");
  printf("fuzz_spec: mode regression driver (no libFuzzer: the compiler is not clang with "
         "-fsanitize=fuzzer); every corpus file runs once%s%s\n",
         under && *under ? ", under " : "", under && *under ? under : "");
  int inputs = 0, errors = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "fuzz_spec: %s: cannot stat\n", argv[i]);
      ++errors;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      errors += run_file(argv[i]) != 0;
      ++inputs;
      continue;
    }
    DIR *dir = opendir(argv[i]);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
      errors += run_file(path) != 0;
      ++inputs;
    }
    if (dir) closedir(dir);
  }
  printf("fuzz_spec: %d inputs, %d unreadable\n", inputs, errors);
  return inputs == 0 || errors ? 1 : 0;
}
#endif

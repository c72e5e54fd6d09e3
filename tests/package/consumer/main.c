/* main.c — the application around consumer.c. It defines functions with the names of some of
 * libhot's internal functions (plan_layer, buf_add, hash_sha256_init, emit_layer): with libhot.a
 * they would be duplicate definitions if libhot kept those names global, and the executables are
 * linked with their symbols exported (ENABLE_EXPORTS / -rdynamic), so that a libhot.so calling
 * its internals through exported names would be handed these instead.
 *
 * usage: consumer [SPEC [--compile]] */
#include <stdio.h>
#include <string.h>

int consumer_run(const char *spec_path, int compile);

int plan_layer(void);
int buf_add(int v);
void hash_sha256_init(int *s);
const char *emit_layer(void);

int plan_layer(void) { return 7; }
int buf_add(int v) { return v + 1; }
void hash_sha256_init(int *s) { *s = 42; }
const char *emit_layer(void) { return "application"; }

int main(int argc, char **argv) {
  int s = 0;
  hash_sha256_init(&s);
  if (plan_layer() != 7 || buf_add(1) != 2 || s != 42 || strcmp(emit_layer(), "application") != 0) {
    fprintf(stderr, "consumer: the application's own plan_layer/buf_add/hash_sha256_init/emit_layer "
                    "were replaced\n");
    return 1;
  }
  const char *spec = argc > 1 ? argv[1] : NULL;
  int compile = argc > 2 && strcmp(argv[2], "--compile") == 0;
  int r = consumer_run(spec, compile);
  printf("consumer: %s\n", r == 0 ? "ok" : "FAILED");
  return r;
}

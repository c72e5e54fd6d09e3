/* hot_py_helper.c — the C side of the Python tests (python/tests), linked against libhot's static
 * runtime, so that the Python package's ctypes mirror and results can be checked against C:
 *
 *   hot_py_helper abi
 *       prints one line "<name> <offset> <size>" per field of every struct the Python package
 *       mirrors (hot_options, hot_stats, hot_layer_info, hot_kernel_time, hot_layer_spec with its
 *       nested structs, hot_quant, hot_tile), "<type> sizeof <size>" per struct, and
 *       "<CONSTANT> <value>" per enum value and limit; python/tests/test_abi.py compares them with
 *       the ctypes declarations of python/hot/_lib.py, so a change of hot.h that the Python side
 *       does not follow fails a test.
 *
 *   hot_py_helper run DTYPE B L O I SEED STEP IN OUT
 *       one layer with the `hot` recipe's defaults (bias on) on the CPU backend, seed SEED: reads
 *       x (T x I), w (O x I), g_y (T x O) of DTYPE (0 f32, 1 bf16, 2 f16; T = B * L) from IN,
 *       calibrates (LQS) on g_y at STEP, saves x, runs the backward at STEP and writes the saved
 *       buffer, g_x, g_w and g_b to OUT, raw, in that order. Exit status 0, or 1 with
 *       "hot_py_helper: <status>: <message>" on stderr.
 *
 *   hot_py_helper capture FILE OUT
 *       reads the capture FILE through libhot's reader (runtime/capture.h), prints
 *       "<name>|<B>|<L>|<O>|<I>|<T>|<dtype>" and writes the fp32 copies of x, w and g_y to OUT,
 *       raw, in that order. Exit status 0, or 1 with "hot_py_helper: <status>: <message>". */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "hot.h"

#define FIELD(T, f) printf("%s.%s %zu %zu\n", #T, #f, offsetof(T, f), sizeof(((T *)0)->f))
#define SIZE(T) printf("%s sizeof %zu\n", #T, sizeof(T))
#define CONST(c) printf("%s %lld\n", #c, (long long)(c))

static void dump_abi(void) {
  SIZE(hot_options);
  FIELD(hot_options, backend);
  FIELD(hot_options, device);
  FIELD(hot_options, arch);
  FIELD(hot_options, cache_dir);
  FIELD(hot_options, disk_cache);
  FIELD(hot_options, seed_set);
  FIELD(hot_options, seed);
  FIELD(hot_options, jit_debug);
  FIELD(hot_options, debug_dir);

  SIZE(hot_stats);
  FIELD(hot_stats, backend);
  FIELD(hot_stats, fell_back);
  FIELD(hot_stats, fallback_reason);
  FIELD(hot_stats, device_name);
  FIELD(hot_stats, arch);
  FIELD(hot_stats, cache_dir);
  FIELD(hot_stats, compiles);
  FIELD(hot_stats, compile_failures);
  FIELD(hot_stats, memory_hits);
  FIELD(hot_stats, disk_hits);
  FIELD(hot_stats, disk_rejects);
  FIELD(hot_stats, compile_ms);
  FIELD(hot_stats, layers);
  FIELD(hot_stats, saves);
  FIELD(hot_stats, backwards);
  FIELD(hot_stats, calibrations);
  FIELD(hot_stats, launches);
  FIELD(hot_stats, saved_bytes);
  FIELD(hot_stats, saved_fp32_bytes);
  FIELD(hot_stats, workspace_bytes);

  SIZE(hot_layer_info);
  FIELD(hot_layer_info, name);
  FIELD(hot_layer_info, layer_id);
  FIELD(hot_layer_info, T);
  FIELD(hot_layer_info, O);
  FIELD(hot_layer_info, I);
  FIELD(hot_layer_info, B);
  FIELD(hot_layer_info, L);
  FIELD(hot_layer_info, dtype);
  FIELD(hot_layer_info, bias);
  FIELD(hot_layer_info, gran);
  FIELD(hot_layer_info, gran_auto);
  FIELD(hot_layer_info, calibrated);
  FIELD(hot_layer_info, lqs_e_tensor);
  FIELD(hot_layer_info, lqs_e_token);
  FIELD(hot_layer_info, saved_bytes);
  FIELD(hot_layer_info, fp32_bytes);
  FIELD(hot_layer_info, compiled);
  FIELD(hot_layer_info, arch);
  FIELD(hot_layer_info, seed);
  FIELD(hot_layer_info, tiles);

  SIZE(hot_kernel_time);
  FIELD(hot_kernel_time, name);
  FIELD(hot_kernel_time, role);
  FIELD(hot_kernel_time, phase);
  FIELD(hot_kernel_time, ms);

  SIZE(hot_quant);
  FIELD(hot_quant, bits);
  FIELD(hot_quant, round);
  FIELD(hot_quant, gran);
  FIELD(hot_quant, rule);

  SIZE(hot_tile);
  FIELD(hot_tile, tile_m);
  FIELD(hot_tile, tile_n);
  FIELD(hot_tile, tile_k);
  FIELD(hot_tile, warps_m);
  FIELD(hot_tile, warps_n);
  FIELD(hot_tile, stages);

  SIZE(hot_layer_spec);
  FIELD(hot_layer_spec, name);
  FIELD(hot_layer_spec, line);
  FIELD(hot_layer_spec, tokens);
  FIELD(hot_layer_spec, in_features);
  FIELD(hot_layer_spec, out_features);
  FIELD(hot_layer_spec, bias);
  FIELD(hot_layer_spec, dtype);
  FIELD(hot_layer_spec, hq);
  FIELD(hot_layer_spec, hq.enabled);
  FIELD(hot_layer_spec, hq.block);
  FIELD(hot_layer_spec, hq.g);
  FIELD(hot_layer_spec, hq.w);
  FIELD(hot_layer_spec, hq.pad);
  FIELD(hot_layer_spec, hla);
  FIELD(hot_layer_spec, hla.enabled);
  FIELD(hot_layer_spec, hla.block);
  FIELD(hot_layer_spec, hla.selection);
  FIELD(hot_layer_spec, hla.keep);
  FIELD(hot_layer_spec, hla.rank);
  FIELD(hot_layer_spec, hla.layout);
  FIELD(hot_layer_spec, hla.pad);
  FIELD(hot_layer_spec, hla.g);
  FIELD(hot_layer_spec, hla.x);
  FIELD(hot_layer_spec, abc);
  FIELD(hot_layer_spec, abc.enabled);
  FIELD(hot_layer_spec, tile_gx);
  FIELD(hot_layer_spec, tile_gw);

  CONST(HOT_NAME_MAX);
  CONST(HOT_MAX_KERNEL_TIMES);
  CONST(HOT_MAX_CPU_THREADS);
  CONST(HOT_OK);
  CONST(HOT_ERR_INVALID);
  CONST(HOT_ERR_NOMEM);
  CONST(HOT_ERR_IO);
  CONST(HOT_ERR_NO_DRIVER);
  CONST(HOT_ERR_NO_DEVICE);
  CONST(HOT_ERR_NO_NVRTC);
  CONST(HOT_ERR_COMPILE);
  CONST(HOT_ERR_BAD_BINARY);
  CONST(HOT_ERR_NOT_FOUND);
  CONST(HOT_ERR_DEVICE_OOM);
  CONST(HOT_ERR_LAUNCH);
  CONST(HOT_ERR_CUDA);
  CONST(HOT_ERR_SPEC);
  CONST(HOT_ERR_PLAN);
  CONST(HOT_ERR_SHAPE);
  CONST(HOT_ERR_MISUSE);
  CONST(HOT_ERR_UNSUPPORTED);
  CONST(HOT_ERR_NONFINITE);
  CONST(HOT_ERR_INTERNAL);
  CONST(HOT_ERR_RANGE);
  CONST(HOT_STATUS_COUNT);
  CONST(HOT_BACKEND_DEFAULT);
  CONST(HOT_BACKEND_AUTO);
  CONST(HOT_BACKEND_CUDA);
  CONST(HOT_BACKEND_CPU);
  CONST(HOT_DT_F32);
  CONST(HOT_DT_BF16);
  CONST(HOT_DT_F16);
  CONST(HOT_ROUND_RTN);
  CONST(HOT_ROUND_SR);
  CONST(HOT_GRAN_TENSOR);
  CONST(HOT_GRAN_ROW);
  CONST(HOT_GRAN_AUTO);
  CONST(HOT_GRAN_SAMPLE);
  CONST(HOT_RULE_ABSMAX);
  CONST(HOT_RULE_SAWB);
  CONST(HOT_SEL_TRI);
  CONST(HOT_SEL_PREFIX);
  CONST(HOT_SEL_FULL);
  CONST(HOT_LAYOUT_SAMPLE);
  CONST(HOT_LAYOUT_FLAT);
  CONST(HOT_LAYOUT_AUTO);
  CONST(HOT_RECIPE_HOT);
  CONST(HOT_RECIPE_PAPER);
  CONST(HOT_RECIPE_PAPER_CODE);
  CONST(HOT_RECIPE_NVFP4);
}

static int fail(hot_status st, hot_ctx *ctx) {
  fprintf(stderr, "hot_py_helper: %s: %s\n", hot_status_name(st), hot_errmsg(ctx));
  hot_ctx_destroy(ctx);
  return 1;
}

static int read_all(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n ? 0 : -1; }

static int run(char **argv) {
  int dt = atoi(argv[0]);
  int64_t B = atoll(argv[1]), L = atoll(argv[2]), O = atoll(argv[3]), I = atoll(argv[4]);
  uint64_t seed = strtoull(argv[5], NULL, 0);
  uint32_t step = (uint32_t)strtoul(argv[6], NULL, 0);
  if (dt < 0 || dt > 2 || B < 1 || L < 1 || O < 1 || I < 1) {
    fprintf(stderr, "hot_py_helper: bad sizes or dtype\n");
    return 1;
  }
  int64_t T = B * L;
  size_t es = dt == 0 ? 4 : 2;
  size_t nx = (size_t)(T * I) * es, nw = (size_t)(O * I) * es, ng = (size_t)(T * O) * es;
  char *x = malloc(nx), *w = malloc(nw), *gy = malloc(ng);
  float *gx = malloc((size_t)(T * I) * 4), *gw = malloc((size_t)(O * I) * 4), *gb = malloc((size_t)O * 4);
  FILE *in = fopen(argv[7], "rb");
  if (!x || !w || !gy || !gx || !gw || !gb || !in || read_all(in, x, nx) || read_all(in, w, nw) ||
      read_all(in, gy, ng)) {
    fprintf(stderr, "hot_py_helper: cannot read %s\n", argv[7]);
    return 1;
  }
  fclose(in);

  hot_options o;
  hot_options_init(&o);
  o.backend = HOT_BACKEND_CPU;
  o.seed_set = 1;
  o.seed = seed;
  hot_ctx *ctx = NULL;
  hot_status st = hot_ctx_create(&ctx, &o);
  if (st != HOT_OK) return fail(st, ctx);
  hot_layer_spec spec;
  if (hot_layer_spec_defaults(&spec, HOT_RECIPE_HOT) != HOT_OK) return 1;
  snprintf(spec.name, sizeof spec.name, "helper");
  spec.in_features = I;
  spec.out_features = O;
  spec.dtype = (hot_dtype)dt;
  hot_layer *layer = NULL;
  st = hot_layer_create(ctx, &spec, B, L, HOT_RECIPE_HOT, &layer);
  if (st == HOT_OK) st = hot_layer_calibrate(layer, gy, (hot_dtype)dt, step, NULL);
  if (st == HOT_OK) st = hot_layer_save(layer, x, (hot_dtype)dt, NULL, NULL);
  if (st == HOT_OK)
    st = hot_layer_backward(layer, gy, w, (hot_dtype)dt, NULL, gx, gw, gb, step, NULL);
  if (st != HOT_OK) return fail(st, ctx);
  /* The layer's own saved buffer: a second save into a caller buffer gives the same bytes. */
  size_t sb = hot_layer_saved_bytes(layer);
  void *saved = aligned_alloc(16, (sb + 15) / 16 * 16);
  if (!saved) return 1;
  st = hot_layer_save(layer, x, (hot_dtype)dt, saved, NULL);
  if (st != HOT_OK) return fail(st, ctx);
  FILE *out = fopen(argv[8], "wb");
  if (!out || fwrite(saved, 1, sb, out) != sb || fwrite(gx, 4, (size_t)(T * I), out) != (size_t)(T * I) ||
      fwrite(gw, 4, (size_t)(O * I), out) != (size_t)(O * I) || fwrite(gb, 4, (size_t)O, out) != (size_t)O ||
      fclose(out) != 0) {
    fprintf(stderr, "hot_py_helper: cannot write %s\n", argv[8]);
    return 1;
  }
  hot_ctx_destroy(ctx);
  free(x); free(w); free(gy); free(gx); free(gw); free(gb); free(saved);
  return 0;
}

static int capture(char **argv) {
  hot_capture c;
  char err[1024];
  int st = capture_read(argv[0], &c, err, sizeof err);
  if (st != HOT_OK) {
    fprintf(stderr, "hot_py_helper: %s: %s\n", hot_status_name((hot_status)st), err);
    return 1;
  }
  printf("%s|%lld|%lld|%lld|%lld|%lld|%d\n", c.name, (long long)c.B, (long long)c.L,
         (long long)c.O, (long long)c.I, (long long)c.T, (int)c.dtype);
  size_t n[3] = {(size_t)(c.T * c.I), (size_t)(c.O * c.I), (size_t)(c.T * c.O)};
  const float *t[3] = {c.x, c.w, c.g_y};
  FILE *out = fopen(argv[1], "wb");
  int ok = out != NULL;
  for (int i = 0; ok && i < 3; ++i) ok = fwrite(t[i], sizeof(float), n[i], out) == n[i];
  if (out && fclose(out) != 0) ok = 0;
  capture_free(&c);
  if (!ok) {
    fprintf(stderr, "hot_py_helper: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "abi") == 0) {
    dump_abi();
    return 0;
  }
  if (argc == 11 && strcmp(argv[1], "run") == 0) return run(argv + 2);
  if (argc == 4 && strcmp(argv[1], "capture") == 0) return capture(argv + 2);
  fprintf(stderr, "usage: hot_py_helper abi | run DTYPE B L O I SEED STEP IN OUT | capture FILE OUT\n");
  return 2;
}

/* test_nvrtc.c — real NVRTC compiles to CUBIN (sm_80, sm_90, sm_90a), ptxas info parsing,
 * clear compile errors with the log kept, request validation. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api.h" /* cuda_nvrtc_get */
#include "nvrtc.h"

static const char *SRC =
    "extern \"C\" __global__ void axpy(float *y, const float *x, float a, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] += a * x[i];\n"
    "}\n"
    "extern \"C\" __global__ void rev(float *y) {\n"
    "  __shared__ float s[256];\n"
    "  s[threadIdx.x] = y[threadIdx.x];\n"
    "  __syncthreads();\n"
    "  y[threadIdx.x] = s[255 - threadIdx.x];\n"
    "}\n";
static const char *NAMES[] = {"axpy", "rev"};

static void compile_for(const char *arch) {
  hot_kernel_source src = {"tiny.cu", SRC, NAMES, 2, arch, NULL, 0};
  hot_compile_result r;
  char err[512] = "";
  rt_status st = nvrtc_compile(&src, &r, err, sizeof err);
  ck_assert_msg(st == RT_OK, "%s: %s\n%s", arch, err, r.log ? r.log : "");
  ck_assert_ptr_nonnull(r.cubin);
  ck_assert_uint_gt(r.cubin_size, 100);
  ck_assert_mem_eq(r.cubin, "\177ELF", 4);  /* CUBIN is an ELF image, never PTX text */
  ck_assert_uint_eq(r.n_kernels, 2);
  for (size_t i = 0; i < 2; i++) {
    const hot_kernel_info *k = &r.kernels[i];
    ck_assert_str_eq(k->name, NAMES[i]);
    ck_assert_int_eq(k->found, 1);
    ck_assert_int_gt(k->registers, 0);
    ck_assert_int_eq(k->spill_store_bytes, 0);
    ck_assert_int_eq(k->spill_load_bytes, 0);
    ck_assert_int_eq(k->stack_bytes, 0);
  }
  ck_assert_int_eq(r.kernels[1].shared_bytes, 1024);
  ck_assert_ptr_nonnull(strstr(r.log, arch));
  ck_assert(r.compile_ms > 0.0);
  const cuda_nvrtc *nv = NULL;
  ck_assert_int_eq(cuda_nvrtc_get(&nv, err, sizeof err), RT_OK);
  if (nv->major * 100 + nv->minor >= 1208) { /* NVRTC's own phase report was read back */
    ck_assert_int_eq(r.phases_known, 1);
    ck_assert(r.nvvm_ms > 0.0 || r.ptxas_ms > 0.0 || r.front_ms > 0.0);
    ck_assert(r.front_ms + r.nvvm_ms + r.ptxas_ms <= r.compile_ms + 5.0);
  }
  printf("nvrtc %s: %zu-byte cubin in %.1f ms; axpy %d regs, rev %d regs\n", arch, r.cubin_size,
         r.compile_ms, r.kernels[0].registers, r.kernels[1].registers);
  nvrtc_result_free(&r);
  ck_assert_ptr_null(r.cubin);
}

START_TEST(compile_sm80) { compile_for("sm_80"); }
END_TEST
START_TEST(compile_sm90) { compile_for("sm_90"); }
END_TEST
START_TEST(compile_sm90a) { compile_for("sm_90a"); }
END_TEST

START_TEST(compile_error_kept) {
  const char *bad = "extern \"C\" __global__ void broken(int *p) {\n  int x = ;\n}\n";
  const char *names[] = {"broken"};
  hot_kernel_source src = {"broken.cu", bad, names, 1, "sm_80", NULL, 0};
  hot_compile_result r;
  char err[512] = "";
  rt_status st = nvrtc_compile(&src, &r, err, sizeof err);
  ck_assert_int_eq(st, RT_ERR_COMPILE);
  ck_assert_ptr_null(strchr(err, '\n'));                   /* one line */
  ck_assert_ptr_nonnull(strstr(err, "broken.cu"));         /* names the program */
  ck_assert_ptr_nonnull(strstr(err, "sm_80"));             /* and the arch */
  ck_assert_ptr_nonnull(strstr(err, "expected an expression"));
  ck_assert_ptr_nonnull(r.log);
  ck_assert_ptr_nonnull(strstr(r.log, "broken.cu(2): error"));
  ck_assert_ptr_null(r.cubin);
  nvrtc_result_free(&r);
}
END_TEST

START_TEST(missing_kernel_is_an_error) {
  /* A name that is not an extern "C" entry point fails at compile time, not at lookup. */
  const char *src_text = "__global__ void mangled(int *p) { *p = 1; }\n";
  const char *names[] = {"mangled"};
  hot_kernel_source src = {"m.cu", src_text, names, 1, "sm_80", NULL, 0};
  hot_compile_result r;
  char err[512] = "";
  ck_assert_int_eq(nvrtc_compile(&src, &r, err, sizeof err), RT_ERR_COMPILE);
  ck_assert_ptr_nonnull(strstr(err, "no kernel 'mangled'"));
  ck_assert_ptr_null(r.cubin);
  nvrtc_result_free(&r);
}
END_TEST

START_TEST(extra_options_used) {
  const char *src_text =
      "extern \"C\" __global__ void k(int *p) {\n#ifndef HOT_TEST_DEFINE\n#error missing\n#endif\n"
      "  *p = HOT_TEST_DEFINE; }\n";
  const char *names[] = {"k"};
  const char *opts[] = {"-DHOT_TEST_DEFINE=7"};
  hot_kernel_source src = {"opt.cu", src_text, names, 1, "sm_86", opts, 1};
  hot_compile_result r;
  char err[512] = "";
  ck_assert_msg(nvrtc_compile(&src, &r, err, sizeof err) == RT_OK, "%s", err);
  nvrtc_result_free(&r);
  src.n_options = 0;
  ck_assert_int_eq(nvrtc_compile(&src, &r, err, sizeof err), RT_ERR_COMPILE);
  ck_assert_ptr_nonnull(strstr(r.log, "missing"));
  nvrtc_result_free(&r);
}
END_TEST

START_TEST(fp16_header_via_include_path) {
  /* cuda_fp16.h lives in the toolkit's include folder: the default --include-path finds it. */
  const char *src_text = "#include <cuda_fp16.h>\n"
                         "extern \"C\" __global__ void h(__half *p) { p[0] = __hadd(p[0], p[1]); }\n";
  const char *names[] = {"h"};
  hot_kernel_source src = {"fp16.cu", src_text, names, 1, "sm_89", NULL, 0};
  hot_compile_result r;
  char err[512] = "";
  rt_status st = nvrtc_compile(&src, &r, err, sizeof err);
  ck_assert_msg(st == RT_OK, "%s\n%s", err, r.log ? r.log : "");
  nvrtc_result_free(&r);
}
END_TEST

START_TEST(requests_checked) {
  const char *names[] = {"k"};
  const char *null_name[] = {NULL};
  hot_compile_result r;
  char err[256];
  hot_kernel_source ok = {"x.cu", "extern \"C\" __global__ void k(){}", names, 1, "sm_80", NULL, 0};
  hot_kernel_source s = ok;
  s.source = NULL;
  ck_assert_int_eq(nvrtc_compile(&s, &r, err, sizeof err), RT_ERR_INVALID);
  nvrtc_result_free(&r);
  s = ok;
  s.n_kernels = 0;
  ck_assert_int_eq(nvrtc_compile(&s, &r, err, sizeof err), RT_ERR_INVALID);
  s = ok;
  s.kernels = null_name;
  ck_assert_int_eq(nvrtc_compile(&s, &r, err, sizeof err), RT_ERR_INVALID);
  s = ok;
  s.arch = "compute_90";
  ck_assert_int_eq(nvrtc_compile(&s, &r, err, sizeof err), RT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "compute_90"));
  s = ok;
  s.n_options = 2;
  ck_assert_int_eq(nvrtc_compile(&s, &r, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(nvrtc_compile(&ok, NULL, err, sizeof err), RT_ERR_INVALID);
  ck_assert_int_eq(nvrtc_compile(NULL, &r, NULL, 0), RT_ERR_INVALID);
  nvrtc_result_free(&r);
  nvrtc_result_free(NULL);
}
END_TEST

START_TEST(arch_names) {
  const char *good[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100f", "sm_120"};
  const char *bad[] = {NULL, "", "sm_8", "sm_9000", "compute_80", "sm_90b", "SM_90", "sm_90 ",
                       "sm_"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) ck_assert(nvrtc_arch_valid(good[i]));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) ck_assert(!nvrtc_arch_valid(bad[i]));
}
END_TEST

START_TEST(parse_ptxas_lines) {
  /* A device function's properties must not be credited to the entry around it. */
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     48 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'gemm_s8' for 'sm_90'\n"
      "ptxas info    : Function properties for gemm_s8\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 49152 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'quant' for 'sm_90'\n"
      "ptxas info    : Function properties for quant\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers\n";
  hot_kernel_info k[3] = {{.name = "quant"}, {.name = "gemm_s8"}, {.name = "absent"}};
  ck_assert_uint_eq(nvrtc_parse_ptxas(log, k, 3), 2);
  ck_assert_int_eq(k[0].registers, 40);
  ck_assert_int_eq(k[0].spill_store_bytes, 0);
  ck_assert_int_eq(k[0].shared_bytes, 0);
  ck_assert_int_eq(k[1].registers, 168);
  ck_assert_int_eq(k[1].stack_bytes, 16);
  ck_assert_int_eq(k[1].spill_store_bytes, 4);
  ck_assert_int_eq(k[1].spill_load_bytes, 12);
  ck_assert_int_eq(k[1].shared_bytes, 49152);
  ck_assert_int_eq(k[2].found, 0);
  ck_assert_int_eq(k[2].registers, -1);
  ck_assert_uint_eq(nvrtc_parse_ptxas(NULL, k, 3), 0);
}
END_TEST

START_TEST(parse_time_report) {
  hot_compile_result r;
  memset(&r, 0, sizeof r);
  const char *csv = "File name, phase name, metric, unit\n"
                    "hot.cu, CUDA C++ Frontend, 48, ms\n"
                    "hot.cu, NVVM Optimizer, 1040.5, ms\n"
                    "a,b.cu, PTX Translation, 1315, ms\r\n"  /* a comma in the program name */
                    "hot.cu, Something New, 7, ms\n"          /* unknown phase: ignored */
                    "hot.cu, NVVM Optimizer, x12, ms\n"       /* not a number: ignored */
                    "hot.cu, PTX Translation, 3, s\n"         /* not ms: ignored */
                    "garbage line\n";
  ck_assert_int_eq(nvrtc_parse_time_csv(csv, &r), 3);
  ck_assert_int_eq(r.phases_known, 1);
  ck_assert(r.front_ms == 48.0 && r.nvvm_ms == 1040.5 && r.ptxas_ms == 1315.0);
  hot_compile_result z;
  memset(&z, 0, sizeof z);
  ck_assert_int_eq(nvrtc_parse_time_csv("File name, phase name, metric, unit\n", &z), 0);
  ck_assert_int_eq(z.phases_known, 0);
  ck_assert_int_eq(nvrtc_parse_time_csv(NULL, &z), 0);
  ck_assert_int_eq(nvrtc_parse_time_csv("", &z), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_nvrtc");
  TCase *pure = tcase_create("pure");
  tcase_add_test(pure, arch_names);
  tcase_add_test(pure, parse_ptxas_lines);
  tcase_add_test(pure, parse_time_report);
  tcase_add_test(pure, requests_checked);
  suite_add_tcase(s, pure);
  char err[1024];
  if (cuda_nvrtc_get(NULL, err, sizeof err) == RT_OK) {
    TCase *real = tcase_create("nvrtc");
    tcase_set_timeout(real, 60);
    tcase_add_test(real, compile_sm80);
    tcase_add_test(real, compile_sm90);
    tcase_add_test(real, compile_sm90a);
    tcase_add_test(real, compile_error_kept);
    tcase_add_test(real, missing_kernel_is_an_error);
    tcase_add_test(real, extra_options_used);
    tcase_add_test(real, fp16_header_via_include_path);
    suite_add_tcase(s, real);
  } else {
    printf("SKIP: real NVRTC compiles: %s\n", err);
  }
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

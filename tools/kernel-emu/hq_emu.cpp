// hq_emu.cpp — runs templates/hadamard_quant.cu (operand g' or w', set by HOT_OPERAND) in the SIMT
// model of kemu.h with the arguments and phases the runtime uses, and compares codes and scales
// with the CPU twins ref_hq_quant_g / ref_hq_quant_w (and, for SAWB, the w' math tensor
// with ref_hq_transform_w), bit for bit. The plan comes from the real planner (plan_layer).
// Built by tools/kernel-emu.sh with -DHOT_GENERATED -DHOT_KNAME -DHOT_OPERAND -DHOT_DTYPE -DHOT_B
// -DHOT_BITS -DHOT_CODES (as the generator would).
// Usage: hq_emu B L O I arch(sm_80|sm_90) gran(0 tensor, 1 row, 2 sample; g' only) sawb(0|1; w' only)
//               seed step layer_id
#include "kemu.h"

// CUDA vector types the template uses (host stand-ins).
#ifdef EMU_MEMSTAT
#define EMU_VEC_ALIGN(n) alignas(n)
#else
#define EMU_VEC_ALIGN(n)
#endif
struct EMU_VEC_ALIGN(16) float4 {
  float x, y, z, w;
#ifdef EMU_MEMSTAT
  float4(float a, float b, float c, float d) : x(a), y(b), z(c), w(d) {}
  EMU_VEC_COPY(float4)
#endif
};
struct EMU_VEC_ALIGN(16) uint4 {
  unsigned x, y, z, w;
#ifdef EMU_MEMSTAT
  EMU_VEC_COPY(uint4)
#endif
};
struct uint2 { unsigned x, y; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }

#include "hot_math.cuh"
extern "C" {
#include "plan.h"
#include "ref.h"
}
#include "hadamard_quant.cu"

static int emu_run(int argc, char **argv) {
  if (argc < 11) emu_die("usage: hq_emu B L O I arch gran sawb seed step layer");
  long long B = atoll(argv[1]), L = atoll(argv[2]), O = atoll(argv[3]), I = atoll(argv[4]);
  hot_arch arch;
  if (plan_arch_parse(argv[5], &arch)) emu_die("arch");
  int gran_arg = atoi(argv[6]), sawb = atoi(argv[7]);
  if (gran_arg < 0 || gran_arg > 2) emu_die("gran: 0 tensor, 1 row, 2 sample");
  unsigned long long seed = strtoull(argv[8], 0, 0);
  unsigned step = (unsigned)atoi(argv[9]);
  int layer = atoi(argv[10]);

  static hot_layer_spec spec;
  plan_spec_defaults(&spec, HOT_RECIPE_HOT);
  std::snprintf(spec.name, sizeof spec.name, "emu");
  spec.in_features = I;
  spec.out_features = O;
  spec.dtype = (hot_dtype)HOT_DTYPE;
  spec.hq.block = HOT_B;
  spec.hq.pad = HOT_B > 1; /* b = 1 (no transform) exists only unpadded: paper_code's shrinking b */
  spec.hq.g.bits = HOT_BITS;
  spec.hq.w.bits = HOT_BITS;
  spec.hq.w.rule = sawb ? HOT_RULE_SAWB : HOT_RULE_ABSMAX;
  if (HOT_OPERAND == 0) spec.hq.g.round = HOT_ROUND ? HOT_ROUND_SR : HOT_ROUND_RTN;
  static hot_layer_plan pl;
  char err[256];
  if (plan_layer(&spec, B, L, HOT_RECIPE_HOT, arch, layer, &pl, err, sizeof err)) emu_die(err);
  if ((int)pl.hq.codes != HOT_CODES) emu_die("HOT_CODES does not match the arch's plan");
  const long long T = pl.T, o_pad = pl.hq.o_pad, k_pad = pl.hq.gemm.k_pad;
  const int ld_codes = (int)(pl.hq.codes == HOT_CODES_S4_PACKED ? k_pad / 2 : k_pad);
  const size_t esz = HOT_DTYPE == 0 ? 4 : 2;
  const hot_dtype dt = (hot_dtype)HOT_DTYPE;
  bool ok = true;

#if HOT_OPERAND == 0
  std::vector<unsigned char> gy((size_t)(T * O) * esz);
  for (long long t = 0; t < T; ++t)
    for (long long o = 0; o < O; ++o) emu_fill(gy.data(), HOT_DTYPE, t * O + o, (o % 37 == 5) || (t % 53 == 7));
  const hot_gran gran = gran_arg == 1 ? HOT_GRAN_ROW : gran_arg == 2 ? HOT_GRAN_SAMPLE : HOT_GRAN_TENSOR;
  std::vector<unsigned char> q_ref((size_t)(T * ld_codes)), q_k((size_t)(T * ld_codes), 0xA5);
  std::vector<float> s_ref((size_t)T), s_k((size_t)T, -7.0f);
  if (ref_hq_quant_g(&pl, gy.data(), dt, gran, seed, step, q_ref.data(), s_ref.data()))
    emu_die("twin failed");
  std::vector<unsigned> amax((size_t)B, 0u); // per sample: B words (segmented amax); else word 0
  unsigned tag = (unsigned)layer * 16u + HOT_TENSOR_HQ_G;
  int rows = (int)T, cols = (int)O, ld = (int)O, op = (int)o_pad, kp = (int)k_pad;
  int group_rows = gran == HOT_GRAN_SAMPLE ? (int)L : rows; // as launch_hq passes it
  emu_dim3 grid = {pl.kernels[plan_kernel_index(&pl, HOT_K_HQ_G)].grid[0], 1, 1};
  auto run = [&](int phase) {
    EMU_PHASE(phase);
    emu_launch(grid, 256, [&] {
      HOT_KNAME(gy.data(), rows, cols, ld, op, kp, q_k.data(), ld_codes, s_k.data(), amax.data(),
                group_rows, nullptr, nullptr, phase, seed, tag, step);
    });
  };
  if (gran == HOT_GRAN_ROW) run(2);
  else { run(0); run(1); }
  for (size_t i = 0; i < q_ref.size() && ok; ++i)
    if (q_ref[i] != q_k[i]) {
      std::printf("  codes differ at byte %zu (row %zu): kernel 0x%02x, twin 0x%02x\n", i,
                  i / (size_t)ld_codes, q_k[i], q_ref[i]);
      ok = false;
    }
  if (ok && std::memcmp(s_ref.data(), s_k.data(), s_ref.size() * 4) != 0) {
    std::printf("  scales differ\n");
    ok = false;
  }
  std::printf("hq g' dt=%d b=%d bits=%d codes=%d T=%lld O=%lld (o_pad %lld, k_pad %lld) %s: %s\n",
              HOT_DTYPE, HOT_B, HOT_BITS, HOT_CODES, T, O, o_pad, k_pad, plan_gran_name(gran),
              ok ? "ok" : "FAIL");
#else
  std::vector<unsigned char> w((size_t)(O * I) * esz);
  for (long long o = 0; o < O; ++o)
    for (long long i = 0; i < I; ++i) emu_fill(w.data(), HOT_DTYPE, o * I + i, (i % 41 == 3));
  std::vector<unsigned char> q_ref((size_t)(I * ld_codes)), q_k((size_t)(I * ld_codes), 0xA5);
  float s_ref = -1, s_k = -2;
  if (ref_hq_quant_w(&pl, w.data(), dt, q_ref.data(), &s_ref)) emu_die("twin failed");
  unsigned amax = 0;
  int rows = (int)O, cols = (int)I, ld = (int)I, op = (int)o_pad, kp = (int)k_pad;
  const hot_kernel_plan &kw = pl.kernels[plan_kernel_index(&pl, HOT_K_HQ_W)];
  emu_dim3 grid = {kw.grid[0], kw.grid[1], 1};
  std::vector<float> math;
  float s_sawb = 0.0f;
  const float *scale_in = nullptr;
  if (sawb) math.assign((size_t)(o_pad * I), std::nanf(""));
  EMU_PHASE(0);
  emu_launch(grid, 256, [&] {
    HOT_KNAME(w.data(), rows, cols, ld, op, kp, q_k.data(), ld_codes, &s_k, &amax, rows, nullptr,
              sawb ? math.data() : nullptr, 0, 0ull, 0u, 0u);
  });
  if (sawb) { // the math tensor must equal the twin's w'; the scale then comes from sawb.cu's rule
    std::vector<float> wt((size_t)(o_pad * I));
    if (ref_hq_transform_w(&pl, w.data(), dt, wt.data())) emu_die("twin transform failed");
    if (std::memcmp(wt.data(), math.data(), wt.size() * 4) != 0) {
      std::printf("  w' math tensor differs\n");
      ok = false;
    }
    hot_quant q = {HOT_BITS, HOT_ROUND_RTN, HOT_GRAN_TENSOR, HOT_RULE_SAWB};
    std::vector<int8_t> tmp(wt.size());
    if (ref_quantize(math.data(), o_pad, I, &q, HOT_GRAN_TENSOR, 0, 0, 0, tmp.data(), &s_sawb))
      emu_die("sawb rule failed");
    scale_in = &s_sawb;
  }
  EMU_PHASE(1);
  emu_launch(grid, 256, [&] {
    HOT_KNAME(w.data(), rows, cols, ld, op, kp, q_k.data(), ld_codes, &s_k, &amax, rows, scale_in,
              nullptr, 1, 0ull, 0u, 0u);
  });
  for (size_t i = 0; i < q_ref.size() && ok; ++i)
    if (q_ref[i] != q_k[i]) {
      std::printf("  codes differ at byte %zu (column %zu): kernel 0x%02x, twin 0x%02x\n", i,
                  i / (size_t)ld_codes, q_k[i], q_ref[i]);
      ok = false;
    }
  if (ok && std::memcmp(&s_ref, &s_k, 4) != 0) {
    std::printf("  s_w differs: kernel %.9g, twin %.9g\n", s_k, s_ref);
    ok = false;
  }
  std::printf("hq w' dt=%d b=%d bits=%d codes=%d O=%lld I=%lld (o_pad %lld, k_pad %lld) %s: %s\n",
              HOT_DTYPE, HOT_B, HOT_BITS, HOT_CODES, O, I, o_pad, k_pad, sawb ? "sawb" : "absmax",
              ok ? "ok" : "FAIL");
#endif
  return ok ? 0 : 1;
}
EMU_MAIN()

// hla_emu.cpp — runs templates/hla_project.cu (and templates/sawb.cu for the SAWB rule) in the
// SIMT model of kemu.h and compares codes (every position of [0, k_pad) of every code row, the
// zero tails included), all `groups` scales and (SAWB) the fp32 math tensor with the CPU twins
// ref_hla_quant_x / ref_hla_quant_g / ref_hla_transform, bit for bit.
// Built by tools/kernel-emu.sh with params.h defining HOT_KNAME HOT_MODE HOT_ROUND HOT_DTYPE
// HOT_P HOT_R HOT_BITS HOT_ROWS (as the generator would).
// Usage: hla_emu B L cols layout(0 sample, 1 flat) rule(0 absmax, 1 sawb) ld_extra kpad_step
//                seed step layer_id [gran_self gran_other]
//   gran_self / gran_other: 0 per tensor, 1 per sample, for the quantizer under test (x^ for
//   HOT_MODE 0, g^ for 1) and the other one. Either per sample (layout sample) makes the plan's
//   scale groups = B: group_k = K / B, group_k_pad = group_k rounded up to kpad_step,
//   k_pad = B * group_k_pad (a segmented g_w GEMM); else one group, k_pad = K rounded up to
//   kpad_step.
#include "kemu.h"

#include "hot_math.cuh"
extern "C" {
#include "ref.h"
}
#include "params.h"

namespace k_hla {
#include "hla_project.cu"
}
#undef HOT_KNAME
#undef HOT_BITS
#define HOT_KNAME emu_sawb
#define HOT_BITS HLA_BITS_FOR_SAWB
namespace k_sawb {
#include "sawb.cu"
}

static const unsigned short k_rows[] = {HOT_ROWS};

static int emu_run(int argc, char **argv) {
  if (argc < 11)
    emu_die("usage: hla_emu B L cols layout rule ld_extra kpad_step seed step layer [gran_self "
            "gran_other]");
  long long B = atoll(argv[1]), L = atoll(argv[2]);
  int cols = atoi(argv[3]), layout = atoi(argv[4]), rule = atoi(argv[5]);
  int ld_extra = atoi(argv[6]), kpad_step = atoi(argv[7]);
  unsigned long long seed = strtoull(argv[8], 0, 0);
  unsigned step = (unsigned)atoi(argv[9]);
  int layer = atoi(argv[10]);
  int gran_self = argc > 11 ? atoi(argv[11]) : 0, gran_other = argc > 12 ? atoi(argv[12]) : 0;
  const int p = HOT_P, r = HOT_R, dt = HOT_DTYPE;
  long long T = B * L;

  // the plan, by hand (ref_plan_check validates it)
  static hot_layer_plan pl;
  std::memset(&pl, 0, sizeof pl);
  pl.layer_id = layer;
  pl.B = B; pl.L = L; pl.T = T; pl.O = cols; pl.I = cols;
  pl.hla.enabled = 1;
  pl.hla.block = p;
  pl.hla.rank = r;
  for (int j = 0; j < r; ++j) pl.hla.rows[j] = k_rows[j];
  pl.hla.layout = layout ? HOT_LAYOUT_FLAT : HOT_LAYOUT_SAMPLE;
  long long seg = layout ? T : L;
  pl.hla.segments = layout ? 1 : B;
  pl.hla.seg_len = (seg + p - 1) / p * p;
  pl.hla.blocks = pl.hla.segments * (pl.hla.seg_len / p);
  pl.hla.k = pl.hla.blocks * r;
  pl.hla.gemm.k = pl.hla.k;
  hot_quant q = {HOT_BITS_VALUE, HOT_ROUND ? HOT_ROUND_SR : HOT_ROUND_RTN, HOT_GRAN_TENSOR,
                 rule ? HOT_RULE_SAWB : HOT_RULE_ABSMAX};
  hot_quant qo = q;
  q.gran = gran_self ? HOT_GRAN_SAMPLE : HOT_GRAN_TENSOR;
  qo.gran = gran_other ? HOT_GRAN_SAMPLE : HOT_GRAN_TENSOR;
  pl.hla.g = HOT_MODE ? q : qo;
  pl.hla.x = HOT_MODE ? qo : q;
  // scale groups (CONTRACT.md 9): the segments when either quantizer is per sample
  const long long G = (gran_self || gran_other) ? pl.hla.segments : 1;
  pl.hla.groups = G;
  pl.hla.group_k = pl.hla.k / G;
  if (G > 1) {
    pl.hla.group_k_pad = (pl.hla.group_k + kpad_step - 1) / kpad_step * kpad_step;
    pl.hla.gemm.k_pad = G * pl.hla.group_k_pad;
    pl.hla.gemm.segmented = 1;
    pl.hla.gemm.seg_k_pad = pl.hla.group_k_pad;
  } else {
    pl.hla.gemm.k_pad = (pl.hla.k + kpad_step - 1) / kpad_step * kpad_step;
    pl.hla.group_k_pad = pl.hla.gemm.k_pad;
    pl.hla.gemm.seg_k_pad = pl.hla.gemm.k_pad;
  }
  if (ref_plan_check(&pl) != HOT_REF_OK) emu_die("plan check failed");
  const long long K = pl.hla.k, k_pad = pl.hla.gemm.k_pad;
  const int per_sample = gran_self != 0;
  const int words = per_sample ? (int)G : 1; // amax words and scale_in entries of this tensor
  hot_dtype hdt = dt == 0 ? HOT_DT_F32 : dt == 1 ? HOT_DT_BF16 : HOT_DT_F16;
  const size_t esz = dt == 0 ? 4 : 2;

  // input: contiguous for the twin, strided copy (ld_src = cols + ld_extra) for the kernel;
  // a few outlier columns and tokens
  std::vector<unsigned char> src((size_t)(T * cols) * esz);
  for (long long t = 0; t < T; ++t)
    for (int c = 0; c < cols; ++c)
      emu_fill(src.data(), dt, t * cols + c, (c % 37 == 5) || (t % 53 == 7));
  const int ld_src = cols + ld_extra;
  std::vector<unsigned char> srck((size_t)(T * ld_src) * esz, 0xEE);
  for (long long t = 0; t < T; ++t)
    std::memcpy(&srck[(size_t)(t * ld_src) * esz], &src[(size_t)(t * cols) * esz], cols * esz);

  // twin
  std::vector<signed char> q_ref((size_t)(cols * k_pad));
  std::vector<float> s_ref((size_t)G, -1.0f);
  int rc = HOT_MODE
               ? ref_hla_quant_g(&pl, src.data(), hdt, seed, step, q_ref.data(), s_ref.data())
               : ref_hla_quant_x(&pl, src.data(), hdt, q_ref.data(), s_ref.data());
  if (rc != HOT_REF_OK) { std::printf("twin failed: %s\n", ref_status_name(rc)); return 2; }
  // per sample: the samples' scales must differ, else a scale of the wrong group would pass
  if (per_sample && G > 1) {
    bool differ = false;
    for (long long j = 1; j < G; ++j) differ |= s_ref[(size_t)j] != s_ref[0];
    if (!differ) emu_die("the twin's per-sample scales are all equal: inputs too weak");
  }

  // kernel; every output buffer has a guard entry after the last one the kernel may write
  const unsigned kGuardBits = 0x7fc0dead;
  const int ld_codes = (int)k_pad;
  // garbage: every position the kernel must write, the zero tails included, starts as 0xAB
  std::vector<unsigned char> codes((size_t)(cols * ld_codes), 0xAB);
  std::vector<float> math(rule ? (size_t)(K * cols) : 1, std::nanf("1"));
  std::vector<unsigned> amax_bits((size_t)words + 1, 0u); // the caller zeroes `words` words
  amax_bits[(size_t)words] = kGuardBits;
  std::vector<float> s_k((size_t)G + 1, std::nanf("2")), s_sawb((size_t)words + 1, std::nanf("3"));
  std::memcpy(&s_k[(size_t)G], &kGuardBits, 4);
  std::memcpy(&s_sawb[(size_t)words], &kGuardBits, 4);
  const unsigned tag = (unsigned)layer * 16u + (HOT_MODE ? HOT_TENSOR_HLA_G : 0u);
  emu_dim3 grid = {(unsigned)pl.hla.blocks, (unsigned)((cols + HLA_COLS - 1) / HLA_COLS), 1};
  auto run = [&](int phase, const float *scale_in, float *math_out) {
    EMU_PHASE(phase);
    emu_launch(grid, 256, [&] {
      k_hla::HOT_KNAME_HLA(srck.data(), (int)T, cols, ld_src, (int)L, layout, pl.hla.seg_len,
                           pl.hla.segments, (int)K, (int)k_pad, (int)pl.hla.group_k,
                           (int)pl.hla.group_k_pad, (int)G, per_sample, codes.data(), ld_codes,
                           s_k.data(), amax_bits.data(), scale_in, math_out, phase, seed, tag,
                           step);
    });
  };
  run(0, nullptr, rule ? math.data() : nullptr);
  long bad = 0;
  // phase 0's amax words against the groups' max |v| of the twin's math tensor
  std::vector<float> t_ref((size_t)(K * cols));
  if (ref_hla_transform(&pl, src.data(), hdt, cols, t_ref.data()) != HOT_REF_OK)
    emu_die("twin transform failed");
  for (int w = 0; w < words; ++w) {
    const long long n_w = K * cols / words;
    float m = 0.0f;
    for (long long i = w * n_w; i < (w + 1) * n_w; ++i)
      m = std::fmax(m, std::fabs(t_ref[(size_t)i]));
    if (amax_bits[(size_t)w] != __float_as_uint(m) && bad++ < 5)
      std::printf("  amax word %d: got %.9g want %.9g\n", w, __uint_as_float(amax_bits[(size_t)w]),
                  m);
  }
  if (rule) {
    // sawb.cu over this tensor's groups: per sample the G groups of group_k*cols elements
    long long n = K * cols / words, nch = (n + 1023) / 1024;
    std::vector<double> part((size_t)(2 * nch * words), std::nan("4"));
    emu_launch({(unsigned)((nch * words + 7) / 8), 1, 1}, 256, [&] {
      k_sawb::emu_sawb(math.data(), n, words, part.data(), amax_bits.data(), s_sawb.data(), 0);
    });
    emu_launch({2, 1, 1}, 256, [&] {
      k_sawb::emu_sawb(math.data(), n, words, part.data(), amax_bits.data(), s_sawb.data(), 1);
    });
    run(1, s_sawb.data(), nullptr);
    // the math tensor against the twin's transform
    for (long long i = 0; i < K * cols; ++i)
      if (std::memcmp(&t_ref[(size_t)i], &math[(size_t)i], 4) != 0 && bad++ < 5)
        std::printf("  math mismatch at k=%lld c=%lld: got %.9g want %.9g\n", i / cols, i % cols,
                    math[(size_t)i], t_ref[(size_t)i]);
    if (std::memcmp(&s_sawb[(size_t)words], &kGuardBits, 4) != 0 && bad++ < 5)
      std::printf("  sawb.cu wrote past its %d scale(s)\n", words);
  } else {
    run(1, nullptr, nullptr);
  }
  for (long long j = 0; j < G; ++j)
    if (std::memcmp(&s_k[(size_t)j], &s_ref[(size_t)j], 4) != 0 && bad++ < 5)
      std::printf("  scale[%lld] mismatch: got %.9g want %.9g\n", j, s_k[(size_t)j],
                  s_ref[(size_t)j]);
  if (std::memcmp(&s_k[(size_t)G], &kGuardBits, 4) != 0 && bad++ < 5)
    std::printf("  scale written past its %lld entries\n", G);
  if (amax_bits[(size_t)words] != kGuardBits && bad++ < 5)
    std::printf("  amax word %d (past the tensor's %d) written\n", words, words);
  for (long long i = 0; i < cols * k_pad; ++i)
    if ((unsigned char)q_ref[(size_t)i] != codes[(size_t)i] && bad++ < 5)
      std::printf("  code mismatch at row c=%lld k=%lld: got %d want %d\n", i / k_pad, i % k_pad,
                  (int)(signed char)codes[(size_t)i], (int)q_ref[(size_t)i]);
  long nz = 0;
  for (long long i = 0; i < cols * k_pad; ++i) nz += q_ref[(size_t)i] != 0;
  std::printf("%s B=%lld L=%lld cols=%d %s %s ld+%d K=%lld k_pad=%lld groups=%lld group_k=%lld "
              "group_k_pad=%lld %s s[0]=%.6g s[last]=%.6g nonzero=%ld: %s\n",
              HOT_STR(HOT_KNAME_HLA), B, L, cols, layout ? "flat" : "sample",
              rule ? "sawb" : "absmax", ld_extra, K, k_pad, G, (long long)pl.hla.group_k,
              (long long)pl.hla.group_k_pad, per_sample ? "per-sample" : "per-tensor", s_ref[0],
              s_ref[(size_t)G - 1], nz, bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}
EMU_MAIN()

// lqs_emu.cpp — runs templates/lqs.cu (three phases) in the SIMT model of kemu.h and compares
// e_tensor, e_token (fp64 bits) and the choice with the CPU twin ref_lqs.
// Built by tools/kernel-emu.sh with -DHOT_GENERATED -DHOT_KNAME=emu_lqs -DHOT_DTYPE -DHOT_BITS.
// Usage: lqs_emu B L O kind(0 gaussian-like, 1 token outliers) ld_extra seed step layer_id grid
//        (grid 0: the planner's ceil(T/8))
#include "kemu.h"

#include "hot_math.cuh"
extern "C" {
#include "ref.h"
}
#include "lqs.cu"

#define STR2(x) #x
#define STR(x) STR2(x)

static int emu_run(int argc, char **argv) {
  if (argc < 10) emu_die("usage: lqs_emu B L O kind ld_extra seed step layer grid");
  long long B = atoll(argv[1]), L = atoll(argv[2]);
  int O = atoi(argv[3]), kind = atoi(argv[4]), ld_extra = atoi(argv[5]);
  unsigned long long seed = strtoull(argv[6], 0, 0);
  unsigned step = (unsigned)atoi(argv[7]);
  int layer = atoi(argv[8]), gx = atoi(argv[9]);
  const int dt = HOT_DTYPE;
  long long T = B * L;
  static hot_layer_plan pl;
  std::memset(&pl, 0, sizeof pl);
  pl.layer_id = layer;
  pl.B = B; pl.L = L; pl.T = T; pl.O = O; pl.I = 1;
  pl.hq.g.bits = HOT_BITS;
  pl.hq.g.round = HOT_ROUND ? HOT_ROUND_SR : HOT_ROUND_RTN; // as the plan passes it
  hot_dtype hdt = dt == 0 ? HOT_DT_F32 : dt == 1 ? HOT_DT_BF16 : HOT_DT_F16;
  const size_t esz = dt == 0 ? 4 : 2;
  std::vector<unsigned char> src((size_t)(T * O) * esz);
  for (long long t = 0; t < T; ++t)
    for (int o = 0; o < O; ++o)
      emu_fill(src.data(), dt, t * O + o, kind == 1 && t % 32 == 3); // a few loud tokens
  const int ld = O + ld_extra;
  std::vector<unsigned char> srck((size_t)(T * ld) * esz, 0xEE);
  for (long long t = 0; t < T; ++t)
    std::memcpy(&srck[(size_t)(t * ld) * esz], &src[(size_t)(t * O) * esz], O * esz);

  hot_ref_lqs_result want;
  int rc = ref_lqs(&pl, src.data(), hdt, seed, step, &want);
  if (rc != HOT_REF_OK) { std::printf("twin failed: %s\n", ref_status_name(rc)); return 2; }

  std::vector<unsigned> amax_bits((size_t)B, 0u); // one word per sample (groups of L rows)
  std::vector<float> row_scale((size_t)T, std::nanf("3"));
  long long nch = (T * O + 1023) / 1024;
  std::vector<double> part((size_t)(2 * nch), std::nan("4"));
  // on the heap, not the stack: the counting build's sectors must not move with the stack's
  // alignment (which depends on the environment's size)
  std::vector<double> result_v(2, -1.0);
  std::vector<int> choice_v(1, -1);
  double *result = result_v.data();
  int &choice = choice_v[0];
  const unsigned tag = (unsigned)layer * 16u + HOT_TENSOR_LQS;
  emu_dim3 grid = {(unsigned)(gx ? gx : (T + 7) / 8), 1, 1};
  for (int phase = 0; phase < 3; ++phase) {
    EMU_PHASE(phase);
    emu_launch(grid, 256, [&] {
      HOT_KNAME(srck.data(), (int)T, O, ld, amax_bits.data(), (int)L, row_scale.data(), part.data(),
                result, &choice, phase, seed, tag, step);
    });
  }
  long bad = 0;
  if (std::memcmp(&result[0], &want.e_tensor, 8)) { bad++; std::printf("  e_tensor got %.17g want %.17g\n", result[0], want.e_tensor); }
  if (std::memcmp(&result[1], &want.e_token, 8)) { bad++; std::printf("  e_token got %.17g want %.17g\n", result[1], want.e_token); }
  if (choice != (want.choice == HOT_GRAN_ROW ? 1 : 0)) { bad++; std::printf("  choice got %d\n", choice); }
  std::printf("%s dt=%d bits=%d T=%lld O=%d ld+%d kind=%d grid=%u: e_tensor %.6g e_token %.6g -> %s: %s\n",
              STR(HOT_KNAME), dt, HOT_BITS, T, O, ld_extra, kind, grid.x, want.e_tensor,
              want.e_token, plan_gran_name(want.choice), bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}
EMU_MAIN()

// bias_count.cpp — runs templates/bias.cu in the SIMT model of kemu.h (so that tools/memstat.sh
// can count its accesses; tools/gemm-emu/bias_emu.cpp is the schedule-exploring check) and
// compares g_b with the CPU twin ref_bias, bit for bit.
// Built by tools/memstat.sh with -DHOT_GENERATED -DHOT_KNAME=<entry> -DHOT_DTYPE (0 f32, 1 bf16,
// 2 f16). Usage: bias_count T O   (grid ceil(O / 4) blocks of 256 threads, as gen/plan.c plans)
#include "kemu.h"

#include "hot_math.cuh"
extern "C" {
#include "ref.h"
}
static inline int min(int a, int b) { return a < b ? a : b; }
#include "bias.cu"

#define STR2(x) #x
#define STR(x) STR2(x)

static int emu_run(int argc, char **argv) {
  if (argc < 3) emu_die("usage: bias_count T O");
  const int T = atoi(argv[1]), O = atoi(argv[2]);
  if (T < 0 || O < 1) emu_die("bias_count: T >= 0 and O >= 1");
  const size_t esz = HOT_DTYPE == 0 ? 4 : 2;
  std::vector<unsigned char> gy((size_t)T * (size_t)O * esz + 4);
  for (long long i = 0; i < (long long)T * O; ++i) emu_fill(gy.data(), HOT_DTYPE, i, (int)(i % 29 == 3));
  static hot_layer_plan pl;
  std::memset(&pl, 0, sizeof pl);
  pl.T = T; pl.O = O; pl.I = 1; pl.B = 1; pl.L = T;
  std::vector<float> want((size_t)O), got((size_t)O, std::nanf("1"));
  const hot_dtype dt = HOT_DTYPE == 0 ? HOT_DT_F32 : HOT_DTYPE == 1 ? HOT_DT_BF16 : HOT_DT_F16;
  const int rc = ref_bias(&pl, gy.data(), dt, want.data());
  if (rc != HOT_REF_OK) { std::printf("twin failed: %s\n", ref_status_name(rc)); return 2; }
  EMU_PHASE(0);
  emu_launch({(unsigned)((O + HOT_BIAS_COLS - 1) / HOT_BIAS_COLS), 1, 1}, HOT_BIAS_THREADS,
             [&] { HOT_KNAME(gy.data(), got.data(), T, O); });
  const bool ok = std::memcmp(want.data(), got.data(), (size_t)O * 4) == 0;
  std::printf("%s T=%d O=%d: %s\n", STR(HOT_KNAME), T, O, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
EMU_MAIN()

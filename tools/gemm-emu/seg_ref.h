// seg_ref.h — the reference both GEMM emulators (tools/gemm-emu/emu.cpp, tools/tma-emu/tma_emu.cpp)
// compare a (segmented) GEMM with, CONTRACT.md 13 and 14: per segment j of seg_k codes the int32
// sum modulo 2^32, v_j = (float)acc_j * factor(m, j), C = v_0, then C = C + v_j for j = 1 .. G-1
// in segment order. Included after the kernel (HOT_MUL, HOT_ADD, HOT_I2F of hot_math.cuh).
#include <cmath>
#include <vector>

// accs[j * M * N + m * N + n]: segment j's int32 sum of a(m, k) * b(n, k) over its codes.
template <class CodeA, class CodeB>
static std::vector<int> seg_ref_sums(int M, int N, int G, int seg_k, CodeA a, CodeB b) {
  const size_t MN = (size_t)M * (size_t)N;
  std::vector<int> accs((size_t)G * MN);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int j = 0; j < G; ++j) {
        unsigned acc = 0;
        for (int k = j * seg_k; k < (j + 1) * seg_k; ++k) acc += (unsigned)(a(m, k) * b(n, k));
        accs[(size_t)j * MN + (size_t)m * N + n] = (int)acc;
      }
  return accs;
}

// want[m * N + n] from the sums and factor(m, j); returns whether some output is not finite.
template <class Factor>
static bool seg_ref_out(const std::vector<int> &accs, int M, int N, int G, Factor factor,
                        std::vector<float> &want) {
  const size_t MN = (size_t)M * (size_t)N;
  want.assign(MN, 0.0f);
  bool nonfinite = false;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float out = 0.0f;
      for (int j = 0; j < G; ++j) {
        const float v = HOT_MUL(HOT_I2F(accs[(size_t)j * MN + (size_t)m * N + n]), factor(m, j));
        out = j == 0 ? v : HOT_ADD(out, v);
      }
      want[(size_t)m * N + n] = out;
      nonfinite |= !std::isfinite(out);
    }
  return nonfinite;
}

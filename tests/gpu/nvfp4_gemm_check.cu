// nvfp4_gemm_check.cu — the device check of templates/gemm_nvfp4.cu on an sm_120 GPU
// (CONTRACT.md 20.9): the kernel against the twin nvfp4_gemm (templates/nvfp4_ref.c), element by
// element, on raw-code and quantised operands. Prints, per case, how many outputs are
// bit-identical to the twin and the largest |gpu - twin| as a fraction of 20.9's bound
// n_b * 2^-22 * |c| * sum_b |P_b|, and the probe of the instruction's accumulation (block
// products 2^24, 1, -2^24, 1 in one MMA: 1 when it adds them in K order in fp32, 2 when exactly).
// Exit 0 when every output is within the bound; 1 otherwise; 77 (skip, with a SKIP line) when
// there is no GPU or it is not compute capability 12.0.
// Built by tools/device-check.sh with nvcc -arch=sm_120a (the template included with its
// parameters; the twin compiled as C by the C compiler and linked). Usage: nvfp4_gemm_check
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "nvfp4_ref.h"
}

#define HOT_GENERATED
#define HOT_KNAME hot_gemm_nvfp4_check
#define HOT_TILE_M 64
#define HOT_TILE_N 64
#define HOT_TILE_K 128
#define HOT_WARPS_M 2
#define HOT_WARPS_N 2
#include "gemm_nvfp4.cu"

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "nvfp4_gemm_check: %s: %s\n", #x, cudaGetErrorString(e_));          \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

static unsigned g_rng = 4242;
static unsigned rnd() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return g_rng >> 8;
}

static int e2m1_x2(unsigned c) {
  static const int mag[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  return (c & 8u) ? -mag[c & 7u] : mag[c & 7u];
}

struct operand {
  std::vector<uint8_t> codes, scales; // Kpad layout
  float s_t = 1.0f;
};

// rows x Kpad operand: mode 0 raw codes and scales (ue4m3 0 .. 0x7E), mode 1 the twin's quantiser
static operand make(int mode, int rows, int Kpad) {
  operand o;
  o.codes.assign((size_t)rows * Kpad / 2, 0);
  o.scales.assign((size_t)rows * Kpad / 16, 0);
  if (mode == 1) {
    std::vector<float> v((size_t)rows * Kpad);
    for (float &x : v) x = ((float)(int)(rnd() & 0xFFFF) - 32768.0f) * (1.0f + (float)(rnd() % 97));
    if (nvfp4_quantize(v.data(), rows, Kpad, 0, nullptr, o.codes.data(), o.scales.data(), &o.s_t)) {
      std::fprintf(stderr, "nvfp4_gemm_check: nvfp4_quantize failed\n");
      std::exit(1);
    }
    return o;
  }
  for (auto &b : o.codes) b = (uint8_t)rnd();
  for (auto &s : o.scales) s = (uint8_t)(rnd() % 0x7F);
  o.s_t = 0.75f + (float)(rnd() % 1000) / 512.0f;
  return o;
}

// Runs the kernel on a (M rows) and b (N rows); out[M * N].
static void run(const operand &a, const operand &b, int M, int N, int Kpad, int div,
                std::vector<float> &out) {
  unsigned char *dA, *dSA, *dB, *dSB;
  float *dC, *dst;
  CK(cudaMalloc(&dA, a.codes.size()));
  CK(cudaMalloc(&dSA, a.scales.size()));
  CK(cudaMalloc(&dB, b.codes.size()));
  CK(cudaMalloc(&dSB, b.scales.size()));
  CK(cudaMalloc(&dC, (size_t)M * N * 4));
  CK(cudaMalloc(&dst, 8));
  CK(cudaMemcpy(dA, a.codes.data(), a.codes.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dSA, a.scales.data(), a.scales.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, b.codes.data(), b.codes.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dSB, b.scales.data(), b.scales.size(), cudaMemcpyHostToDevice));
  const float st[2] = {a.s_t, b.s_t};
  CK(cudaMemcpy(dst, st, 8, cudaMemcpyHostToDevice));
  dim3 grid((unsigned)((N + HOT_TILE_N - 1) / HOT_TILE_N), (unsigned)((M + HOT_TILE_M - 1) / HOT_TILE_M));
  HOT_KNAME<<<grid, HOT_THREADS>>>(dA, dSA, dst, dB, dSB, dst + 1, div, dC, M, N, Kpad, N);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  out.resize((size_t)M * N);
  CK(cudaMemcpy(out.data(), dC, (size_t)M * N * 4, cudaMemcpyDeviceToHost));
  cudaFree(dA), cudaFree(dSA), cudaFree(dB), cudaFree(dSB), cudaFree(dC), cudaFree(dst);
}

// One case against the twin; returns 0 when every output is within the bound.
static int check_case(int mode, int M, int N, int Kpad, int div) {
  operand a = make(mode, M, Kpad), b = make(mode, N, Kpad);
  std::vector<float> got, want((size_t)M * N);
  run(a, b, M, N, Kpad, div, got);
  nvfp4_gemm(a.codes.data(), a.scales.data(), a.s_t, b.codes.data(), b.scales.data(), b.s_t, M, N,
             Kpad, div, want.data());
  const int nb = Kpad / 16;
  const double c = (double)((a.s_t * b.s_t) / (float)(4 * div));
  long same = 0, over = 0;
  double worst = 0.0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double sum = 0.0; // sum_b |P_b| in the twin's units
      for (int j = 0; j < nb; ++j) {
        long S = 0;
        for (int t = 16 * j; t < 16 * j + 16; ++t)
          S += e2m1_x2((a.codes[(size_t)m * Kpad / 2 + t / 2] >> (4 * (t & 1))) & 15u) *
               e2m1_x2((b.codes[(size_t)n * Kpad / 2 + t / 2] >> (4 * (t & 1))) & 15u);
        sum += std::fabs((double)S) * nvfp4_e4m3_decode(a.scales[(size_t)m * nb + j]) *
               nvfp4_e4m3_decode(b.scales[(size_t)n * nb + j]);
      }
      const float g = got[(size_t)m * N + n], w = want[(size_t)m * N + n];
      if (std::memcmp(&g, &w, 4) == 0) { ++same; continue; }
      const double bound = nb * std::ldexp(1.0, -22) * std::fabs(c) * sum;
      const double r = std::fabs((double)g - (double)w) / (bound > 0 ? bound : 1e-300);
      if (!(r <= 1.0)) ++over;
      if (r > worst || std::isnan(r)) worst = r;
    }
  std::printf("nvfp4 gemm %s M=%d N=%d K=%d div=%d: %ld of %ld outputs bit-identical to the twin, "
              "max |gpu - twin| / bound = %.3g, %ld over the bound: %s\n",
              mode ? "quantised" : "raw codes", M, N, Kpad, div, same, (long)M * N, worst, over,
              over ? "FAIL" : "ok");
  return over ? 1 : 0;
}

// One MMA whose block products are 2^24, 1, -2^24, 1 (hardware units; s_t = 1, div = 1).
static float probe() {
  operand a, b;
  a.codes.assign(32, 0), b.codes.assign(32, 0);
  a.scales.assign(4, 0x38), b.scales.assign(4, 0x38); // 1.0
  for (int t = 0; t < 16; ++t) a.codes[t / 2] |= (uint8_t)(0x6u << (4 * (t & 1)));       // +4
  for (int t = 32; t < 48; ++t) a.codes[t / 2] |= (uint8_t)(0xEu << (4 * (t & 1)));      // -4
  for (int t = 0; t < 48; ++t)                                                          // +4 in
    if (t < 16 || t >= 32) b.codes[t / 2] |= (uint8_t)(0x6u << (4 * (t & 1)));         // blocks 0, 2
  a.codes[16 / 2] |= 0x2u, b.codes[16 / 2] |= 0x2u; // block 1: 1.0 * 1.0
  a.codes[48 / 2] |= 0x2u, b.codes[48 / 2] |= 0x2u; // block 3: 1.0 * 1.0
  a.scales[0] = a.scales[2] = 0x78, b.scales[0] = b.scales[2] = 0x78; // 256: 256 * 2^16 = 2^24
  std::vector<float> out;
  run(a, b, 1, 1, 64, 1, out);
  return out[0];
}

int main() {
  int dev = 0, major = 0, minor = 0, n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major != 12 || minor != 0) {
    std::printf("SKIP: the GPU is sm_%d%d, not sm_120 (the kernel is sm_120a's)\n", major, minor);
    return 77;
  }
  const float p = probe();
  std::printf("nvfp4 probe: one MMA with block products 2^24, 1, -2^24, 1 gives %.9g (fp32 in K "
              "order: 1; exact: 2)\n", (double)p);
  int bad = 0;
  bad |= check_case(0, 200, 136, 1024, 16);
  bad |= check_case(1, 200, 136, 1024, 16);
  bad |= check_case(1, 96, 320, 4096, 64);
  return bad;
}

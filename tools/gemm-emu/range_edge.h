// range_edge.h — the overflow flag in the GEMM emulators (tools/gemm-emu/emu.cpp,
// tools/tma-emu/tma_emu.cpp), included before the kernel.
//
// mkemu.py turns the kernel's HOT_RANGE_CHECK(v) into emu_range_check(v), which raises
// g_range_flag as the device's hot_range_flag is raised (CONTRACT.md 19). The drivers compare the
// flag after every run with the reference's "some output of the M x N window is not finite", so
// a check that is missing, looks at the wrong values, or raises the flag for finite outputs fails
// the run. The edge runs (over=J / under=J) put one output just past / just below the largest
// finite float: the smallest scale that makes some output non-finite, and the float below it.
#include <cstdint>
#include <cstring>

static unsigned g_range_flag = 0;

static void emu_range_check(float v) {
  if (!(std::fabs(v) <= 3.40282347e+38f)) g_range_flag = 1u;
}

// The edge of pred on the positive floats above lo (pred(lo) false, pred true from some point
// on, at +inf at the latest): *below = the largest float with pred false found, *above = the
// next float up, with pred true. Returns false when pred(lo) holds or pred(+inf) does not.
template <class Pred>
static bool range_edge(float lo, Pred pred, float *below, float *above) {
  if (!(lo > 0.0f) || pred(lo)) return false;
  float hi = lo;
  while (!pred(hi)) {
    if (hi > 3.40282347e+38f) return false; // +inf and still finite: no edge
    hi = hi * 2.0f;
  }
  uint32_t a, b;
  std::memcpy(&a, &lo, 4);
  std::memcpy(&b, &hi, 4);
  while (b - a > 1) { // positive floats are ordered like their bit patterns (+inf included)
    const uint32_t mid = a + (b - a) / 2;
    float x;
    std::memcpy(&x, &mid, 4);
    if (pred(x)) b = mid;
    else a = mid;
  }
  std::memcpy(below, &a, 4);
  std::memcpy(above, &b, 4);
  return true;
}

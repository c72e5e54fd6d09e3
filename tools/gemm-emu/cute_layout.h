// cute_layout.h — CuTe layouts written as shapes and strides, for the block-scaled MMA emulators'
// --layout checks (nvfp4_emu.cpp, mxfp8_emu.cpp): a layout maps (thread, value) to an index, each
// mode evaluated the CuTe way (a flat coordinate split colexicographically over the mode's shape,
// dotted with its strides); layout_expect prints the first ten disagreements and counts them all.
#ifndef HOT_EMU_CUTE_LAYOUT_H
#define HOT_EMU_CUTE_LAYOUT_H

#include <cstdio>

struct cute_mode {
  int n, shape[3], stride[3];
};
struct cute_layout {
  const char *name;
  cute_mode t, v;
};
static int cute_eval(const cute_mode &md, int x) {
  int idx = 0;
  for (int i = 0; i < md.n; ++i) {
    idx += (x % md.shape[i]) * md.stride[i];
    x /= md.shape[i];
  }
  return idx;
}
static int cute_at(const cute_layout &L, int t, int v) { return cute_eval(L.t, t) + cute_eval(L.v, v); }

static long g_layout_bad = 0; // disagreements found by layout_expect
static void layout_expect(const char *what, int lane, int v, int got0, int got1, int want0, int want1) {
  if (got0 == want0 && got1 == want1) return;
  if (g_layout_bad++ < 10)
    std::printf("  %s: lane %d value %d: ours (%d, %d), CuTe's (%d, %d)\n", what, lane, v, got0, got1,
                want0, want1);
}

#endif

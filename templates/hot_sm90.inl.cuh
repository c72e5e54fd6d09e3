/* hot_sm90.inl.cuh — the wgmma wrappers of the two sm_90a GEMM templates (gemm_wgmma.cu, fed by
 * cp.async, and gemm_tma.cu, fed by the TMA): fence, commit, wait, the accumulator register
 * fence, the shared-memory matrix descriptor and the m64nNk32 .s32.s8.s8 instruction for the
 * kernel's HOT_TILE_N; and what the two kernels share beyond them: the tile rules they
 * static_assert, one K slab of wgmmas (hot_wg_mma_slab), the epilogue that writes C
 * (hot_wg_epilogue) and a segment's end (hot_wg_seg_flush). It uses the including kernel's
 * parameters and the template's macros (HOT_TILE_*, HOT_WARPS_*, HOT_CODES, HOT_SEGS, HOT_KB,
 * HOT_WG_PATH, and HOT_NREG = HOT_TILE_N / 2; the store helpers of hot_gemm.cuh), so the generator splices it into every kernel
 * instance where the template includes it (a "*.inl.cuh" file: docs/emit rules in gen/emit.h)
 * instead of hoisting it once above the kernels; no include guard. The emulators replace the
 * bodies of these wrappers by name (tools/gemm-emu/mkemu.py). */

static __device__ __forceinline__ void hot_wgmma_fence(void) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ void hot_wgmma_commit(void) {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N>
static __device__ __forceinline__ void hot_wgmma_wait(void) {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Register dependency after a wait: the accumulators are "rewritten" here, so no read of them
 * can be scheduled before the wait (registers are not memory: the clobber alone would not do). */
static __device__ __forceinline__ void hot_acc_fence(int (&d)[HOT_NREG]) {
#pragma unroll
  for (int i = 0; i < HOT_NREG; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

/* Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address >> 4 in
 * bits 0-13, LBO >> 4 in 16-29 (1: unused for swizzled K-major), SBO >> 4 in 32-45 (1024 bytes),
 * base offset 0 in 49-51, layout type 1 = 128B swizzle in 62-63. */
static __device__ __forceinline__ unsigned long long hot_wgmma_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) |
         (1ull << 62);
}

/* d (64 x HOT_TILE_N of this warpgroup) += A (64 x 32 bytes at da) . B (HOT_TILE_N x 32 at db)^T */
static __device__ __forceinline__ void hot_wgmma(int (&d)[HOT_NREG], unsigned long long da,
                                                 unsigned long long db) {
#if HOT_TILE_N == 64
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
               "}, %32, %33, 1;\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                 "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
                 "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
                 "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                 "+r"(d[30]), "+r"(d[31])
               : "l"(da), "l"(db)
               : "memory");
#elif HOT_TILE_N == 128
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
               "}, %64, %65, 1;\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                 "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
                 "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
                 "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                 "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
                 "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
                 "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
                 "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
                 "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
                 "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
               : "l"(da), "l"(db)
               : "memory");
#elif HOT_TILE_N == 256
  asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
               "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
               "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
               "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
               "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
               "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
               "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
               "}, %128, %129, 1;\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
                 "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
                 "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
                 "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
                 "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
                 "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
                 "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
                 "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
                 "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
                 "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
                 "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]),
                 "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
                 "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]),
                 "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
                 "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]),
                 "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]),
                 "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]),
                 "+r"(d[102]), "+r"(d[103]), "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]),
                 "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]),
                 "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]),
                 "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]),
                 "+r"(d[126]), "+r"(d[127])
               : "l"(da), "l"(db)
               : "memory");
#endif
}

/* The tile rules both templates share (their rows of the GEMM-path table, gen/plan_tables.c);
 * HOT_WG_PATH names the template in the messages. */
static_assert(HOT_CODES == 0, HOT_WG_PATH ": int8 codes only");
static_assert(HOT_TILE_K == 128, HOT_WG_PATH ": HOT_TILE_K must be 128 (one 128B-swizzle slab)");
static_assert(HOT_TILE_M == 64 || HOT_TILE_M == 128, HOT_WG_PATH ": HOT_TILE_M must be 64 or 128");
static_assert(HOT_TILE_N == 64 || HOT_TILE_N == 128 || HOT_TILE_N == 256,
              HOT_WG_PATH ": HOT_TILE_N must be 64, 128 or 256");
static_assert(HOT_WARPS_M == HOT_TILE_M / 16 && HOT_WARPS_N == 1,
              HOT_WG_PATH ": HOT_WARPS_M = HOT_TILE_M / 16, HOT_WARPS_N = 1 (4 warps per warpgroup)");
static_assert(HOT_SEGS == 0 || HOT_SEGS == 1, "HOT_SEGS must be 0 (one K sum) or 1 (K segments)");

/* One K slab of a stage on this warpgroup's accumulators: A rows at shared address ta, B rows at
 * tb, HOT_KB / 32 wgmmas of 32 bytes of K each between the fence and the commit. */
static __device__ __forceinline__ void hot_wg_mma_slab(int (&acc)[HOT_NREG], unsigned ta,
                                                       unsigned tb) {
  hot_wgmma_fence();
#pragma unroll
  for (int k = 0; k < HOT_KB / 32; ++k)
    hot_wgmma(acc, hot_wgmma_desc(ta + 32 * k), hot_wgmma_desc(tb + 32 * k));
  hot_wgmma_commit();
}

/* The epilogue of both GEMMs: converts this thread's accumulators into C with factor alpha
 * (CONTRACT 14): HOT_SEGS = 0 stores HOT_MUL(HOT_I2F(acc), factor(m)); HOT_SEGS = 1 stores
 * (add = false) or adds (add = true) HOT_MUL(HOT_I2F(acc), alpha) of one segment. Register i of
 * this thread (g = lane / 4, t = lane % 4) is output row mb + g + 8 * ((i / 2) % 2), column
 * n0 + 8 * (i / 4) + 2 * t + i % 2. */
static __device__ __forceinline__ void hot_wg_epilogue(const int (&acc)[HOT_NREG], float *C,
                                                       const float *row_scale, float alpha, int mb,
                                                       int n0, int g, int t, int M, int N, int ldc,
                                                       bool vec, bool add) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m = mb + g + 8 * h;
    if (m >= M) continue;
    float *crow = C + (long long)m * ldc;
    /* overflow check (CONTRACT 19): HOT_SEGS = 0 once for the row's stored columns
     * (hot_row_range_check; columns past N hold acc = 0: cp.async zero-fills their B rows, the
     * TMA's out-of-bounds fill gives zeros for them), HOT_SEGS = 1 element by element in
     * hot_store_or_add_pair */
    if (HOT_SEGS) {
#pragma unroll
      for (int j = 0; j < HOT_TILE_N / 8; ++j)
        hot_store_or_add_pair(crow, n0 + 8 * j + 2 * t, N, acc[4 * j + 2 * h],
                              acc[4 * j + 2 * h + 1], alpha, vec, add);
    } else {
      const float factor = hot_row_factor(row_scale, m, alpha);
      float amax = 0.0f;
#pragma unroll
      for (int j = 0; j < HOT_TILE_N / 8; ++j) {
        hot_store_pair(crow, n0 + 8 * j + 2 * t, N, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1],
                       factor, vec);
        amax = hot_row_amax_pair(amax, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
      hot_row_range_check(amax, factor);
    }
  }
}

/* HOT_SEGS = 1, at the end of segment `seg` (seg_tiles K tiles; its wgmmas waited for): C (+)=
 * acc * c for this thread's registers (rows from mb, columns from n0), acc = 0, and the next
 * segment begins (seg_end advances). */
static __device__ __forceinline__ void hot_wg_seg_flush(int (&acc)[HOT_NREG], int &seg_end,
                                                        int seg_tiles, int seg, float c, float *C,
                                                        int mb, int n0, int lane, int M, int N,
                                                        int ldc, bool vec) {
  hot_wg_epilogue(acc, C, nullptr, c, mb, n0, lane >> 2, lane & 3, M, N, ldc, vec, seg > 0);
#pragma unroll
  for (int i = 0; i < HOT_NREG; ++i) acc[i] = 0;
  seg_end += seg_tiles;
}

/* hot_gemm.cuh — what the GEMM templates (gemm_int.cu, gemm_wgmma.cu, gemm_tma.cu) share: the
 * cp.async wrappers (shared-state addresses, 16-byte global -> shared copies with zero fill,
 * commit and wait) and the dequantization epilogue (alpha, row factor, the store of two adjacent
 * outputs, the overflow check of a stored row, and the store-or-accumulate of a segmented GEMM).
 * tools/gemm-emu/mkemu.py inlines this file and replaces the wrappers' bodies with its
 * emulator's. */

/* 32-bit shared-state address of a generic pointer into shared memory. */
static __device__ __forceinline__ unsigned hot_smem_u32(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

/* cp.async.cg: 16 bytes global -> shared, bypassing L1; src_bytes = 0 writes 16 zero bytes and
 * reads nothing (PTX ISA 9.7.9.25.3.1 cp.async: "src-size ... remaining bytes are zero-filled"). */
static __device__ __forceinline__ void hot_cp_async16(unsigned dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}

static __device__ __forceinline__ void hot_cp_async_commit(void) {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Waits until at most N of this thread's committed groups are still in flight. */
template <int N>
static __device__ __forceinline__ void hot_cp_async_wait(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* threadIdx.x, read so that the compiler cannot move the read (or what is computed from it) out
 * of a loop: a segment end inside the K loop recomputes its output addresses from it instead of
 * keeping them in registers across the whole loop. */
static __device__ __forceinline__ int hot_tid_opaque(void) {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

/* ---- the epilogue of CONTRACT 14, once for every GEMM path (single-rounding fp32 steps in the
 * twin's order, never fused; needs hot_math.cuh, included before this file) ---------------------
 * alpha = (*alpha_a * (alpha_b ? *alpha_b : 1)) / alpha_div, computed on the device from the
 * scales the operand kernels wrote (x * 1.0f == x, so HQ's alpha is s_w / b exactly). */
static __device__ __forceinline__ float hot_epilogue_alpha(const float *alpha_a, const float *alpha_b,
                                                           float alpha_div) {
  return HOT_DIV(HOT_MUL(*alpha_a, alpha_b ? *alpha_b : 1.0f), alpha_div);
}

/* factor(m) = row_scale ? row_scale[m] * alpha : alpha */
static __device__ __forceinline__ float hot_row_factor(const float *row_scale, int m, float alpha) {
  return row_scale ? HOT_MUL(row_scale[m], alpha) : alpha;
}

/* C[n], C[n + 1] of one output row (crow = &C[m * ldc]) = (float)acc * factor where they are
 * inside N: one 8-byte store when vec (ldc even and C 8-byte aligned) and both are inside, else
 * scalars. No overflow check here: the caller checks the whole row once (hot_row_amax_pair,
 * hot_row_range_check). */
static __device__ __forceinline__ void hot_store_pair(float *crow, int n, int N, int acc0, int acc1,
                                                      float factor, bool vec) {
  const float v0 = HOT_MUL(HOT_I2F(acc0), factor), v1 = HOT_MUL(HOT_I2F(acc1), factor);
  if (vec && n + 1 < N) {
    *reinterpret_cast<float2 *>(crow + n) = make_float2(v0, v1);
  } else {
    if (n < N) crow[n] = v0;
    if (n + 1 < N) crow[n + 1] = v1;
  }
}

/* ---- the overflow check of a stored output row (CONTRACT 19) --------------------------------
 * A thread that stores v = HOT_MUL(HOT_I2F(acc_n), factor) for its columns n of one output row
 * (one factor for the whole row) checks the row once: amax = max over its columns of
 * |HOT_I2F(acc_n)| (hot_row_amax_pair, from 0), then HOT_RANGE_CHECK(HOT_MUL(amax, |factor|))
 * (hot_row_range_check). It raises hot_range_flag exactly when one of the stored v is not finite:
 * HOT_I2F is exact or rounds monotonically and is always finite, and a round-to-nearest product
 * is symmetric in the signs and monotone in |a|, so HOT_MUL(amax, |factor|) is the largest |v|
 * of the row (and a NaN or infinite factor makes it NaN or infinite, as it makes every v, acc = 0
 * included). The columns past N that the thread holds but does not store must hold acc = 0 (every
 * GEMM path zero-fills the B rows past N: cp.async src-size 0, the TMA's out-of-bounds fill):
 * they never raise amax (|0| = 0) and change the check only when the factor is not finite, and
 * then column 0 of the same row, stored by some thread, is not finite either: the flag word ends
 * the same. Only for a factor that depends on the row alone; the segmented store-or-add checks
 * element by element. */
static __device__ __forceinline__ float hot_row_amax_pair(float amax, int acc0, int acc1) {
  return fmaxf(amax, fmaxf(fabsf(HOT_I2F(acc0)), fabsf(HOT_I2F(acc1))));
}

static __device__ __forceinline__ void hot_row_range_check(float amax, float factor) {
  HOT_RANGE_CHECK(HOT_MUL(amax, fabsf(factor)));
}

/* The segmented epilogue of CONTRACT 14 (HOT_SEGS = 1) for C[n], C[n + 1] of one output row
 * (crow = &C[m * ldc]): v = HOT_MUL(HOT_I2F(acc), factor) with factor = c_j of the segment just
 * finished; add = false (segment 0) stores v, add = true stores HOT_ADD(C_old, v) where C_old is
 * what this same thread stored there at the previous segment end (each output element has one
 * owner thread; its own earlier store is ordered before this load by program order). Same
 * vector / scalar choice as hot_store_pair. Every stored value is range-checked, element by
 * element (a sum of two finite values can overflow, so a row check cannot cover the adds; one
 * for the plain stores of segment 0 alone made the kernels larger, see docs/cold-start.md): a
 * running sum that is not finite stays so, hence this flags exactly the outputs whose final
 * value is not. */
static __device__ __forceinline__ void hot_store_or_add_pair(float *crow, int n, int N, int acc0,
                                                             int acc1, float factor, bool vec,
                                                             bool add) {
  float v0 = HOT_MUL(HOT_I2F(acc0), factor), v1 = HOT_MUL(HOT_I2F(acc1), factor);
  if (vec && n + 1 < N) {
    float2 *p = reinterpret_cast<float2 *>(crow + n);
    if (add) {
      const float2 old = *p;
      v0 = HOT_ADD(old.x, v0);
      v1 = HOT_ADD(old.y, v1);
    }
    HOT_RANGE_CHECK(v0);
    HOT_RANGE_CHECK(v1);
    *p = make_float2(v0, v1);
  } else {
    if (n < N) {
      if (add) v0 = HOT_ADD(crow[n], v0);
      HOT_RANGE_CHECK(v0);
      crow[n] = v0;
    }
    if (n + 1 < N) {
      if (add) v1 = HOT_ADD(crow[n + 1], v1);
      HOT_RANGE_CHECK(v1);
      crow[n + 1] = v1;
    }
  }
}

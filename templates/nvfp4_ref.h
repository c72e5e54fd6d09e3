/* nvfp4_ref.h — the CPU twin of the NVFP4 recipe (templates/CONTRACT.md section 20): the E2M1
 * and E4M3 codes, the NVFP4 and MXFP8 block quantisers, the block-scaled GEMMs and the whole
 * backward of one layer (HQ g_x, HLA g_w). No GPU kernel implements it yet; the twin fixes the
 * bits such kernels must produce.
 *
 * Conventions (as templates/ref.h): row-major fp32 inputs, only read; outputs in buffers the
 * caller owns, sized as stated; scratch from malloc, freed before returning; no global state,
 * no printing. Status values are hot_ref_status's (0 ok, -1 bad argument, -3 no memory,
 * -4 non-finite input); on an error the outputs are unspecified. The file depends on
 * hot_math.cuh only, so a tool can compile it alone. */
#ifndef HOT_NVFP4_REF_H
#define HOT_NVFP4_REF_H

#include <stdint.h>

#define NVFP4_BLOCK 16            /* values per E4M3 block scale */
#define MXFP8_BLOCK 32            /* values per E8M0 block scale */
#define NVFP4_TENSOR_DIV 2688.0f  /* s_t = amax / (6 * 448) */

/* ---- scalar codes (section 20.1, 20.2) ------------------------------------------------------ */

/* E2M1 code (low 4 bits of `code`: sign bit 3, exponent bits 2..1, mantissa bit 0) to its value:
 * +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}; 0x8 is -0.0. */
float nvfp4_e2m1_decode(unsigned code);
/* u to an E2M1 code: |u| clamped to 6, nearest grid value, ties to the even code; sign bit set
 * iff u < 0 and the magnitude code is not 0 (so 0 and -0 give 0x0). u must not be NaN. */
unsigned nvfp4_e2m1_rtn(float u);
/* The same with stochastic rounding: lo = the largest grid value <= |u| (|u| clamped to 6), hi the
 * next; hi iff hot_rho(word) < (|u| - lo) / (hi - lo) (exact: hi - lo is 0.5, 1 or 2). */
unsigned nvfp4_e2m1_sr(float u, uint32_t word);

typedef enum { NVFP4_ROUND_RTN = 0, NVFP4_ROUND_UP = 1, NVFP4_ROUND_SR = 2 } nvfp4_round;

/* E4M3 (OCP FN: bias 7, no infinities, NaN = S.1111.111, max 448) code to its value; NaN for
 * 0x7F and 0xFF. */
float nvfp4_e4m3_decode(unsigned code);
/* v to an E4M3 code: the magnitude rounded on the E4M3 grid (RTN ties to even, UP toward
 * larger magnitude, SR with hot_rho(word) as nvfp4_e2m1_sr), then saturated to 448; the sign bit
 * copied from v (-0.0 and negative values that round to 0 give 0x80). NaN gives 0x7F, +-Inf
 * +-448 (saturating, as cvt.satfinite). `word` is read by SR only. */
unsigned nvfp4_e4m3_encode(float v, nvfp4_round mode, uint32_t word);

/* ---- block quantisers (section 20.3, 20.4) ------------------------------------------------ */

/* Where the SR draws of a quantised tensor come from: Philox (seed, tag, step) of hot_math.cuh,
 * element (r, c) of the rows x k tensor drawing word idx = r * idx_row + c * idx_col. */
typedef struct {
  uint64_t seed;
  uint32_t tag, step;
  int64_t idx_row, idx_col;
} nvfp4_stream;

/* NVFP4 of the rows x k fp32 tensor v, blocks of 16 along k (k_pad = k rounded up to 16, the
 * padding zeros): codes[rows * k_pad / 2] (element 2j in the low nibble of byte j of its row),
 * scales[rows * k_pad / 16] (E4M3 codes, rounded UP), *s_t the fp32 tensor scale. sr = 0: RTN
 * (st ignored, may be NULL); sr = 1: SR drawn from *st. Errors: -1 (NULL, sizes <= 0),
 * -4 (NaN/Inf in v). */
int nvfp4_quantize(const float *v, int64_t rows, int64_t k, int sr, const nvfp4_stream *st,
                   uint8_t *codes, uint8_t *scales, float *s_t);

/* The pieces of nvfp4_quantize, for callers that split the rows among threads (same bits):
 * nvfp4_tensor_scale(amax_t) = s_t of 20.3 (0 for amax_t = 0); nvfp4_quantize_rows writes rows
 * [r0, r1) of codes and scales given s_t (v finite; sr and st as nvfp4_quantize). */
float nvfp4_tensor_scale(float amax);
void nvfp4_quantize_rows(const float *v, int64_t r0, int64_t r1, int64_t k, float s_t, int sr,
                         const nvfp4_stream *st, uint8_t *codes, uint8_t *scales);

/* MXFP8 of the rows x k tensor v, blocks of 32 along k (k_pad = k rounded up to 32): codes[rows *
 * k_pad] (E4M3), scales[rows * k_pad / 32] (E8M0: the biased exponent e + 127 of X = 2^e), RTN
 * or SR as nvfp4_quantize. Errors as nvfp4_quantize. */
int mxfp8_quantize(const float *v, int64_t rows, int64_t k, int sr, const nvfp4_stream *st,
                   uint8_t *codes, uint8_t *scales);

/* Rows [r0, r1) of mxfp8_quantize (v finite; no tensor-wide state, so rows may be split). */
void mxfp8_quantize_rows(const float *v, int64_t r0, int64_t r1, int64_t k, int sr,
                         const nvfp4_stream *st, uint8_t *codes, uint8_t *scales);

/* ---- block-scaled GEMMs (section 20.5) ---------------------------------------------------- */

/* out[m, n] = c * sum over blocks b (in order, fp32 from 0) of P_b, P_b = S_b * (sa_b * sb_b)
 * with S_b the integer sum of the 16 products of doubled E2M1 values (exact), c = (s_ta * s_tb)
 * / (4 * div). a: M rows of k_pad codes (nvfp4_quantize's layout) with scales sa and tensor scale
 * s_ta; b: N rows likewise. div is a power of two (16 for HQ, p for HLA). Writes out[M * N].
 * Errors: -1. */
int nvfp4_gemm(const uint8_t *a, const uint8_t *sa, float s_ta, const uint8_t *b,
               const uint8_t *sb, float s_tb, int64_t M, int64_t N, int64_t k_pad, int div,
               float *out);

/* The same for MXFP8: S_b = the exact sum of the 32 products in units of 2^-18 (int64), P_b =
 * (float)S_b (one rounding) * 2^(ea + eb - 18) (ldexpf), blocks in order from 0 in fp32, out =
 * acc / div. Errors: -1. */
int mxfp8_gemm(const uint8_t *a, const uint8_t *sa, const uint8_t *b, const uint8_t *sb,
               int64_t M, int64_t N, int64_t k_pad, int div, float *out);

/* ---- one layer (section 20.6) ------------------------------------------------------------- */

typedef enum { NVFP4_HLA_NVFP4 = 0, NVFP4_HLA_MXFP8 = 1 } nvfp4_hla_fmt;

/* The layer's sizes and HLA basis: T = B * L tokens; HLA blocks of p tokens (power of two,
 * 1..1024) per sample (`flat` = 0, needs nothing of L) or across the flat batch (`flat` = 1),
 * zero-padded; rows[0..r) the natural rows of H_p kept, in the order of K. */
typedef struct {
  int64_t B, L, O, I;
  int p, r, flat;
  const int *rows;
  nvfp4_hla_fmt hla_fmt;
  uint32_t layer_id;
} nvfp4_layer;

/* K = blocks * r of the layer (0 when the layer is invalid). */
int64_t nvfp4_layer_k(const nvfp4_layer *ly);

/* o_pad = O rounded up to 16 (0 when the layer is invalid). */
int64_t nvfp4_layer_o_pad(const nvfp4_layer *ly);

/* The HQ operands alone (what nvfp4_hq_gx quantises). g' = g_y (I (x) H_16), T x o_pad, NVFP4
 * along O: SR (sr = 1; tag layer_id * 16 + 1, idx = t * o_pad + o) or RTN (sr = 0, no draw);
 * codes[T * o_pad / 2], scales[T * o_pad / 16], *s_t. w' = (I (x) H_16) w stored as I rows of
 * o_pad, NVFP4 RTN: codes[I * o_pad / 2], scales[I * o_pad / 16], *s_t. Errors: -1, -3, -4. */
int nvfp4_hq_quant_g(const nvfp4_layer *ly, const float *g_y, int sr, uint64_t seed,
                     uint32_t step, uint8_t *codes, uint8_t *scales, float *s_t);
int nvfp4_hq_quant_w(const nvfp4_layer *ly, const float *w, uint8_t *codes, uint8_t *scales,
                     float *s_t);

/* An HLA operand alone (what nvfp4_hla_gw quantises): H_r src (src T x cols) stored transposed,
 * cols rows of K, quantised along K in the layer's format (k_pad = K rounded up to the block):
 * is_g = 1 draws with tag layer_id * 16 + 2 and idx = kk * cols + o when sr = 1. MXFP8:
 * codes[cols * k_pad], scales[cols * k_pad / 32], s_t unused (may be NULL); NVFP4:
 * codes[cols * k_pad / 2], scales[cols * k_pad / 16], *s_t. Errors: -1, -3, -4. */
int nvfp4_hla_quant(const nvfp4_layer *ly, const float *src, int64_t cols, int is_g, int sr,
                    uint64_t seed, uint32_t step, uint8_t *codes, uint8_t *scales, float *s_t);

/* g_x[T * I] of HQ in NVFP4: g' = g_y (I (x) H_16) (O padded to o_pad = 16k) SR with tag
 * layer_id * 16 + 1 and idx = t * o_pad + o; w' = (I (x) H_16) w stored as I rows of o_pad, RTN;
 * nvfp4_gemm with div = 16. Errors: -1, -3, -4. */
int nvfp4_hq_gx(const nvfp4_layer *ly, const float *g_y, const float *w, uint64_t seed,
                uint32_t step, float *g_x);

/* g_w[O * I] of HLA: g^ = H_r g_y and x^ = H_r x per token block (K x O, K x I; section 4 with
 * the butterflies of section 2), stored transposed (O, I rows of K), quantised along K in the
 * layer's format: g^ SR with tag layer_id * 16 + 2 and idx = kk * O + o, x^ RTN; the GEMM with
 * div = p. Errors: -1, -3, -4. */
int nvfp4_hla_gw(const nvfp4_layer *ly, const float *g_y, const float *x, uint64_t seed,
                 uint32_t step, float *g_w);

/* The projection alone: out[K * cols] = H_r src (src T x cols), block-major, r rows per block.
 * nvfp4_hla_project_blocks: only token blocks [b0, b1) (rows b0 * r .. b1 * r of out), of
 * nvfp4_layer_blocks(ly) in all. Errors: -1, -3, -4 (a non-finite input value). */
int nvfp4_hla_project(const nvfp4_layer *ly, const float *src, int64_t cols, float *out);
int nvfp4_hla_project_blocks(const nvfp4_layer *ly, const float *src, int64_t cols, int64_t b0,
                             int64_t b1, float *out);
int64_t nvfp4_layer_blocks(const nvfp4_layer *ly);

#endif /* HOT_NVFP4_REF_H */

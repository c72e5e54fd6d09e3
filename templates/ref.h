/* ref.h — the CPU reference of HOT: one C twin per GPU kernel (templates/<kernel>_ref.c beside
 * templates/<kernel>.cu), whole-layer operations built from them, and an fp64 exact path for
 * tests and error reports. Everything follows templates/CONTRACT.md; the
 * twins and the kernels agree bit for bit on codes, scales and outputs.
 *
 * Conventions of every function below:
 *  - `pl` is a plan from plan_layer (or built by hand with the same invariants); it is only read,
 *    and it is checked with ref_plan_check first (HOT_REF_ESHAPE when inconsistent);
 *  - input tensors are row-major, of dtype `dt` (f32, bf16 or f16 bit patterns), converted to
 *    fp32 on load; x is T x I, w is O x I, g_y is T x O; they are only read; another dt value
 *    gives HOT_REF_EARG;
 *  - outputs are written by the function into buffers the caller owns and sized as stated;
 *    on an error their contents are unspecified (partially written);
 *  - scratch memory is allocated with malloc and freed before returning (HOT_REF_ENOMEM when
 *    it cannot be had); no function keeps a pointer past its return;
 *  - inputs must be finite: a NaN or Inf (also one produced by the transform) gives
 *    HOT_REF_ENONFINITE;
 *  - the functions never print and never exit; they are reentrant (no global state).
 */
#ifndef HOT_REF_H
#define HOT_REF_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* ---- status ------------------------------------------------------------------------------- */

typedef enum {
  HOT_REF_OK = 0,
  HOT_REF_EARG = -1,       /* NULL pointer, zero or negative size, unsupported enum value */
  HOT_REF_ESHAPE = -2,     /* plan fields inconsistent (T != B*L, o_pad, k_pad, rank, rows, ...) */
  HOT_REF_ENOMEM = -3,     /* scratch allocation failed */
  HOT_REF_ENONFINITE = -4  /* NaN or Inf in an input or a transformed tensor */
} hot_ref_status;

/* Static name of a status ("ok", "bad argument", ...); "unknown status" for other values. */
const char *ref_status_name(int status);

/* Checks the fields of `pl` the twins read: T = B*L > 0, O, I > 0; when HQ is enabled
 * 1 <= b <= 256 a power of two, o_pad = ceil(O/b)*b, gemm.k_pad >= o_pad (even for packed
 * codes), bits 2..8; when HLA is enabled 1 <= p <= 1024 a power of two, 1 <= rank <= p, rows
 * distinct and < p, seg_len/segments/blocks/k consistent with the layout, gemm.k_pad >= k.
 * Returns HOT_REF_OK, HOT_REF_EARG (pl NULL) or HOT_REF_ESHAPE. */
int ref_plan_check(const hot_layer_plan *pl);

/* ---- buffer sizes (bytes) of the stored codes; 0 when pl is NULL ------------------------- */

int64_t ref_hq_g_bytes(const hot_layer_plan *pl);  /* q_g': T rows of k_pad (or k_pad/2) */
int64_t ref_hq_w_bytes(const hot_layer_plan *pl);  /* q_w': I rows of k_pad (or k_pad/2) */
int64_t ref_hla_g_bytes(const hot_layer_plan *pl); /* q_g^: O x hla.gemm.k_pad int8 */
int64_t ref_hla_x_bytes(const hot_layer_plan *pl); /* q_x^: I x hla.gemm.k_pad int8 */

/* ---- the quantizer of CONTRACT.md section 6 (quant_ref.c) ------------------------------------- */

/* Quantizes the row-major rows x cols fp32 tensor v (the "math" tensor; linear index
 * idx = r*cols + c is the Philox element index) with q->bits, q->round, q->rule and the
 * granularity `gran` (HOT_GRAN_TENSOR: one scale; HOT_GRAN_ROW: one per row). SR draws use
 * (seed, tag, step); RTN ignores them. Writes codes[rows*cols] (int8, in [-qmax, qmax]) and
 * scales[1] or scales[rows]. Errors: EARG (NULL, sizes <= 0, bits outside 2..8, gran AUTO or
 * SAMPLE: a sample is a group of rows, see ref_quantize_groups), ENONFINITE. */
int ref_quantize(const float *v, int64_t rows, int64_t cols, const hot_quant *q, hot_gran gran,
                     uint64_t seed, uint32_t tag, uint32_t step, int8_t *codes, float *scales);

/* The same quantizer with one scale per group of `group_rows` consecutive rows (rows must be a
 * multiple of it): group_rows = rows is per tensor, 1 per row, L per sample (T = B*L rows).
 * Writes scales[rows / group_rows]; the Philox index is the linear index, whatever the groups.
 * Errors: EARG (also group_rows <= 0 or not dividing rows), ENONFINITE. */
int ref_quantize_groups(const float *v, int64_t rows, int64_t cols, int64_t group_rows,
                            const hot_quant *q, uint64_t seed, uint32_t tag, uint32_t step,
                            int8_t *codes, float *scales);

/* ---- HQ, the g_x path (hadamard_quant_ref.c; kernels HOT_K_HQ_G and HOT_K_HQ_W) ---------- */

/* g' in fp32: every row of g_y zero-padded to o_pad and transformed by H_b block by block.
 * Writes g_t[T * o_pad]. Errors: EARG, ESHAPE (also when HQ is disabled), ENONFINITE. */
int ref_hq_transform_g(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, float *g_t);

/* w' in fp32, math layout o_pad x I: the rows of w zero-padded to o_pad, every group of b rows
 * transformed column by column by H_b. Writes w_t[o_pad * I]. Errors as above. */
int ref_hq_transform_w(const hot_layer_plan *pl, const void *w, hot_dtype dt, float *w_t);

/* Twin of HOT_K_HQ_G: q_g' (SR, pl->hq.g bits and rule, granularity `gran`, which must be
 * TENSOR, ROW or SAMPLE: resolve a plan's AUTO with ref_lqs first) and its scales.
 * q_g: ref_hq_g_bytes(pl) bytes, T rows of hq.gemm.k_pad int8 codes, or of k_pad/2 bytes
 * when hq.codes is HOT_CODES_S4_PACKED; zero beyond o_pad. s_g: T floats (per tensor: the same
 * value T times; per sample: the scale of sample t / L in entry t). Philox: tag = layer_id*16 + HOT_TENSOR_HQ_G, idx = t*o_pad + o. */
int ref_hq_quant_g(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, hot_gran gran,
                       uint64_t seed, uint32_t step, void *q_g, float *s_g);

/* Twin of HOT_K_HQ_W: q_w' (RTN, pl->hq.w bits, per tensor, absmax or SAWB) stored transposed,
 * I rows of k_pad codes (or k_pad/2 bytes packed), zero beyond o_pad; *s_w its scale.
 * q_w: ref_hq_w_bytes(pl) bytes. */
int ref_hq_quant_w(const hot_layer_plan *pl, const void *w, hot_dtype dt, void *q_w,
                       float *s_w);

/* ---- HLA / ABC, the g_w path (hla_project_ref.c; HOT_K_ABC_X and HOT_K_HLA_G) ----------- */

/* The projection H_r per token block of a T x cols tensor src (cols = I for x, O for g_y):
 * writes out[hla.k * cols] fp32, block-major, r rows per block in ascending sequency (row
 * k = block*r + j is natural row pl->hla.rows[j] of H_p applied to the block's tokens; padded
 * tokens are zero). Errors: EARG, ESHAPE (also when HLA is disabled), ENONFINITE. */
int ref_hla_transform(const hot_layer_plan *pl, const void *src, hot_dtype dt, int64_t cols,
                          float *out);

/* Twin of HOT_K_ABC_X: x^ quantized with pl->hla.x (8-bit RTN, per tensor or per sample,
 * absmax or SAWB), stored transposed: q_x[I * hla.gemm.k_pad], math row kk at position
 * (kk / hla.group_k) * hla.group_k_pad + kk % hla.group_k, zeros elsewhere; s_x[hla.groups]
 * its scales (per tensor: one value repeated). */
int ref_hla_quant_x(const hot_layer_plan *pl, const void *x, hot_dtype dt, int8_t *q_x,
                        float *s_x);

/* Twin of HOT_K_HLA_G: g^ quantized with pl->hla.g (8-bit SR, per tensor or per sample),
 * stored transposed like q_x: q_g[O * hla.gemm.k_pad]; s_g[hla.groups] its scales. Philox:
 * tag = layer_id*16 + HOT_TENSOR_HLA_G, idx = k*O + o in the K x O math tensor (whatever the
 * groups). */
int ref_hla_quant_g(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, uint64_t seed,
                        uint32_t step, int8_t *q_g, float *s_g);

/* ---- the saved codes of ABC (abc_unpack_ref.c; HOT_K_ABC_UNPACK) ------------------------- */

/* Twin of HOT_K_ABC_UNPACK: the saved codes (plan_saved_scale_offset's layout: I rows of hla.k
 * int8, group j's group_k codes at j * group_k) into the g_w GEMM's operand layout, as
 * ref_hla_quant_x writes it: q_x[I * hla.gemm.k_pad], group j at j * group_k_pad, zeros in each
 * group's tail. Errors: EARG (NULL), ESHAPE (no ABC, or groups / group_k / k_pad inconsistent). */
int ref_abc_unpack(const hot_layer_plan *pl, const int8_t *codes, int8_t *q_x);
/* The inverse: the codes of q_x (GEMM layout) into the saved layout, codes[I * hla.k]. What
 * HOT_K_ABC_X writes in the save (it is launched with k_pad = group_k_pad = K per group).
 * Errors as ref_abc_unpack. */
int ref_abc_pack(const hot_layer_plan *pl, const int8_t *q_x, int8_t *codes);

/* ---- integer GEMMs with the fused epilogues (gemm_ref.c) -------------------------------- */

/* Twin of HOT_K_GEMM_GX: acc[t,i] = sum_k q_g[t,k] * q_w[i,k] over k < hq.gemm.k_pad in int32,
 * g_x[t,i] = (float)acc * (s_g[t] * c_w), c_w = s_w / b (fp32). Operands as written by
 * ref_hq_quant_g/_w (layout per hq.codes); writes g_x[T * I]. The int32 sums wrap modulo
 * 2^32 like the tensor cores' (CONTRACT 13). */
int ref_gemm_gx(const hot_layer_plan *pl, const void *q_g, const float *s_g, const void *q_w,
                    float s_w, float *g_x);

/* Twin of HOT_K_GEMM_GW: acc[o,i] = sum_k q_g[o,k] * q_x[i,k] over k < hla.gemm.k_pad in int32
 * (modulo 2^32), g_w[o,i] = (float)acc * c, c = (s_g[0] * s_x[0]) / p (fp32, product first).
 * Segmented (hla.gemm.segmented: groups > 1): acc_j over the codes of group j, v_j =
 * (float)acc_j * c_j with c_j = (s_g[j] * s_x[j]) / p, g_w = ((v_0 + v_1) + v_2) + ... in group
 * order. s_g, s_x: hla.groups floats. Writes g_w[O * I]. */
int ref_gemm_gw(const hot_layer_plan *pl, const int8_t *q_g, const float *s_g,
                    const int8_t *q_x, const float *s_x, float *g_w);

/* ---- bias (bias_ref.c; HOT_K_BIAS) ------------------------------------------------------- */

/* g_b[o] = sum over t of g_y[t,o] in fp32, in the blocked order of CONTRACT.md (chunks of
 * HOT_REF_BIAS_CHUNK tokens). Writes g_b[O]. */
#define HOT_REF_BIAS_CHUNK 256
int ref_bias(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, float *g_b);

/* ---- LQS (lqs_ref.c; HOT_K_LQS) ---------------------------------------------------------- */

typedef struct {
  double e_tensor;  /* ||g - deq(Q_sample(g))||_F: one scale per sample (B = 1: per tensor) */
  double e_token;   /* ||g - deq(Q_row(g))||_F */
  hot_gran choice;  /* HOT_GRAN_ROW iff e_token < 0.5 * e_tensor, else plan_lqs_coarse(pl):
                       HOT_GRAN_SAMPLE when B > 1, HOT_GRAN_TENSOR when B = 1 */
} hot_ref_lqs_result;

/* Layer-wise quantizer selection on the raw T x O g_y with pl->hq.g.bits, g's rounding and
 * absmax, per token against per sample (both quantizations share the draws tag = layer_id*16 +
 * HOT_TENSOR_LQS, idx = t*O + o). Works whether or not HQ is enabled. Writes *out. */
int ref_lqs(const hot_layer_plan *pl, const void *g_y, hot_dtype dt, uint64_t seed,
                uint32_t step, hot_ref_lqs_result *out);

/* ---- fp64 exact and quantization-free paths (exact_ref.c; tests and error reports) ------ */

/* g_x[t,i] = sum_o g_y[t,o] w[o,i] in fp64 (g_y T x O, w O x I, fp32). Writes g_x[T*I]. */
int ref_exact_gx(int64_t T, int64_t O, int64_t I, const float *g_y, const float *w,
                     double *g_x);
/* g_w[o,i] = sum_t g_y[t,o] x[t,i] in fp64 (g_y T x O, x T x I). Writes g_w[O*I]. */
int ref_exact_gw(int64_t T, int64_t O, int64_t I, const float *g_y, const float *x,
                     double *g_w);
/* HQ without quantization, all in fp64: g' w' / b with g' = g_y (I (x) H_b) and
 * w' = (I (x) H_b) w on O padded to o_pad; equals ref_exact_gx up to fp64 round-off.
 * Writes g_x[T*I]. */
int ref_hq_gx_f64(const hot_layer_plan *pl, const float *g_y, const float *w, double *g_x);
/* HLA without quantization, all in fp64: g^T x^ / p = g_y^T P x with the plan's basis and
 * blocking (exact for `full`). Writes g_w[O*I]. */
int ref_hla_gw_f64(const hot_layer_plan *pl, const float *g_y, const float *x, double *g_w);
/* ||a - ref||_F / ||ref||_F over n entries (0 when both are 0; +Inf when only ref is 0; NaN
 * for NULL or n <= 0). */
double ref_rel_err(const float *a, const double *ref, int64_t n);
/* The same with a fp64 `a`. */
double ref_rel_err_f64(const double *a, const double *ref, int64_t n);

/* ---- whole layer (layer_ref.c) ----------------------------------------------------------- */

/* What the forward pass keeps for the backward. With HLA and ABC enabled: q_x, the saved codes
 * (I x hla.k int8, unpadded: ref_abc_pack's layout) and s_x (hla.groups floats); otherwise x
 * (T x I fp32 copy, dt converted). `bytes` = plan_buffer_bytes(HOT_BUF_SAVED), the bytes of the
 * runtime's flat saved buffer. Owned by the struct: release with ref_saved_free. */
typedef struct {
  int8_t *q_x;
  float *s_x;
  float *x;
  int64_t bytes;
} hot_ref_saved;

/* Forward (ABC): fills *out (previous contents ignored and overwritten). On error *out is
 * left empty (all NULL). */
int ref_layer_save(const hot_layer_plan *pl, const void *x, hot_dtype dt, hot_ref_saved *out);
/* Frees what *s holds and empties it; NULL-safe, idempotent. */
void ref_saved_free(hot_ref_saved *s);

/* Backward of one layer: g_x[T*I] (HQ: quant g' with granularity `gran` — TENSOR or ROW —
 * and w', GEMM; HQ disabled: fp64 product rounded to fp32), g_w[O*I] (HLA: q_g^ and the saved
 * or freshly projected q_x^, GEMM; HLA disabled: fp64 g_y^T x rounded to fp32, which needs a
 * saved x), and g_b[O], each only when its pointer is not NULL (at least one must be): the
 * steps of an output not asked for do not run (kernel_desc.h's `out`), and `saved` is read only
 * for g_w (it may then be empty). Each output's bits do not depend on which others are asked
 * for. x, w and g_y share dtype dt (the saved buffer is already fp32/int8). */
int ref_layer_backward(const hot_layer_plan *pl, const hot_ref_saved *saved, const void *g_y,
                           const void *w, hot_dtype dt, hot_gran gran, uint64_t seed,
                           uint32_t step, float *g_x, float *g_w, float *g_b);

/* Calibration: ref_lqs on g_y; out->choice is the granularity to pass to backward. */
int ref_layer_calibrate(const hot_layer_plan *pl, const void *g_y, hot_dtype dt,
                            uint64_t seed, uint32_t step, hot_ref_lqs_result *out);

/* ---- internal helpers shared by the twins (not for the runtime) ------------------------- */

/* 1 when dt is f32, bf16 or f16. */
int ref_dt_ok(hot_dtype dt);
/* Element i of a dtype-tagged array, as fp32. */
float ref_load(const void *p, hot_dtype dt, int64_t i);
/* Canonical fp64 sum (CONTRACT.md): chunks of HOT_REF_SUM_CHUNK terms summed sequentially,
 * chunk partials summed sequentially. Init with ref_sum_init, feed terms in index order. */
#define HOT_REF_SUM_CHUNK 1024
typedef struct {
  double total, chunk;
  int64_t n;
} ref_sum;
void ref_sum_init(ref_sum *s);
void ref_sum_add(ref_sum *s, double v);
double ref_sum_end(const ref_sum *s);
/* The Philox word of element idx, caching the last 4-word block (sequential access is cheap). */
typedef struct {
  uint64_t seed, block;
  uint32_t tag, step, w[4];
  int valid;
} ref_rng;
void ref_rng_init(ref_rng *r, uint64_t seed, uint32_t tag, uint32_t step);
uint32_t ref_rng_word(ref_rng *r, uint64_t idx);
/* Stores the rows x cols int8 math tensor `codes` as GEMM operand rows of k_pad codes (int8,
 * or packed nibbles, k_pad/2 bytes a row, when packed != 0): transpose = 0 gives `rows` rows
 * along cols, transpose = 1 gives `cols` rows along rows; zeros past the math extent. */
void ref_store_codes(const int8_t *codes, int64_t rows, int64_t cols, int transpose,
                     int64_t k_pad, int packed, void *dst);
/* In-place length-n FWHT (CONTRACT.md 2 stage order) of every column of the n x cols row-major m:
 * the same operations per column as hot_fwht, vectorized across columns. */
void ref_fwht_rows(float *m, int n, int64_t cols);
/* Code k of a stored row (int8 or packed nibbles). */
int ref_code_at(const void *row, int packed, int64_t k);

#endif /* HOT_REF_H */

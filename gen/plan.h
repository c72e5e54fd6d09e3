/* plan.h — the plain C structures that describe a model (as loaded from a spec) and the plan of
 * each layer (everything the kernels, their CPU twins and the runtime need).
 *
 * Pipeline: spec.c (Lua -> hot_model) -> plan.c (hot_model -> hot_layer_plan, pure C) ->
 * emit.c (plan -> CUDA source). The CPU twins in templates/ and the runtime read the same structs.
 *
 * Storage conventions (see templates/CONTRACT.md for the full list):
 *  - all matrices are row-major; x is T x I, w is O x I, g_y is T x O, T = batch * tokens;
 *  - HQ codes of g' are T x hq.k_pad (K = O along the row), codes of w' are stored transposed,
 *    I x hq.k_pad, so both GEMM operands are K-contiguous;
 *  - HLA codes of g^ are stored O x hla.k_pad and those of x^ as I x hla.k_pad (the token axis,
 *    block-major, contiguous); entries past the real K are zero;
 *  - packed INT4 rows hold element 2j in the low nibble of byte j.
 */
#ifndef HOT_PLAN_H
#define HOT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define HOT_NAME_MAX 64     /* longest model/layer name, including the NUL */
#define HOT_PATH_MAX 512    /* longest spec path kept for messages */
#define HOT_MAX_P 1024      /* largest HLA block */
#define HOT_MAX_ARCHS 8     /* archs per target list */
#define HOT_MAX_KERNELS 12  /* kernels per layer plan */
#define HOT_MAX_SWEEP 16    /* values per sweep axis */

/* ---- enumerations (each has a static name, see plan_*_name in plan.c) --------------------- */

typedef enum { HOT_DT_F32 = 0, HOT_DT_BF16, HOT_DT_F16 } hot_dtype;
typedef enum { HOT_ROUND_RTN = 0, HOT_ROUND_SR } hot_round;
/* Scale granularity: one scale per tensor, one per row (token), or chosen by LQS (g_x path only). */
typedef enum { HOT_GRAN_TENSOR = 0, HOT_GRAN_ROW, HOT_GRAN_AUTO } hot_gran;
typedef enum { HOT_RULE_ABSMAX = 0, HOT_RULE_SAWB } hot_rule;
typedef enum { HOT_SEL_TRI = 0, HOT_SEL_PREFIX, HOT_SEL_FULL } hot_selection;
/* Token blocking of HLA. AUTO (spec only; the plan resolves it): sample when p divides L, else flat. */
typedef enum { HOT_LAYOUT_SAMPLE = 0, HOT_LAYOUT_FLAT, HOT_LAYOUT_AUTO } hot_layout;
typedef enum { HOT_RECIPE_HOT = 0, HOT_RECIPE_PAPER, HOT_RECIPE_PAPER_CODE } hot_recipe;
typedef enum {
  HOT_ARCH_SM80 = 0, HOT_ARCH_SM86, HOT_ARCH_SM89, HOT_ARCH_SM90, HOT_ARCH_SM90A, HOT_ARCH_COUNT
} hot_arch;
/* How a GEMM runs: INT4 mma.sync on packed nibbles, INT8 mma.sync, or INT8 wgmma (sm_90a). */
typedef enum { HOT_GEMM_MMA_S4 = 0, HOT_GEMM_MMA_S8, HOT_GEMM_WGMMA_S8 } hot_gemm_path;
/* How codes are stored: one int8 per element, or two's-complement nibbles, two per byte. */
typedef enum { HOT_CODES_S8 = 0, HOT_CODES_S4_PACKED } hot_codes;

/* What an architecture can do; one row per hot_arch (plan_arch_caps). */
typedef struct {
  hot_arch arch;
  const char *name;       /* "sm_80", ..., "sm_90a" */
  int sm;                 /* 80, 86, 89, 90, 90 */
  int int4_mma;           /* mma.sync .s4 runs natively on tensor cores */
  int wgmma;              /* wgmma .s8 available (sm_90a only) */
  int max_threads;        /* threads per block */
  int max_smem_optin;     /* dynamic shared memory per block after opt-in, bytes */
  int smem_per_sm;        /* shared memory per SM, bytes */
  int regs_per_thread;    /* register ceiling per thread */
} hot_arch_caps;

/* One quantizer: bits, rounding, scale granularity and scale rule. */
typedef struct {
  int bits;          /* 2..8; qmax = 2^(bits-1) - 1 */
  hot_round round;
  hot_gran gran;
  hot_rule rule;
} hot_quant;

/* ---- the model as written in the spec (spec.c fills it from the validated Lua tables) ----- */

typedef struct {
  int tile_m, tile_n, tile_k;  /* GEMM block tile; 0 = planner default */
  int warps_m, warps_n;        /* warps per block along M and N; 0 = default */
  int stages;                  /* cp.async pipeline depth; 0 = default */
} hot_tile;

typedef struct {
  char name[HOT_NAME_MAX];
  int line;                 /* line of the spec that declared the layer (for messages) */
  int64_t tokens;           /* L of this layer; 0 = the model's (convolutions set their own) */
  int64_t in_features;      /* I */
  int64_t out_features;     /* O */
  int bias;                 /* compute g_b */
  hot_dtype dtype;          /* dtype of x, w and g_y as handed to the kernels */
  struct {
    int enabled;            /* 0: g_x is an fp32 product (for ablations and tests) */
    int block;              /* b, power of two 2..256 (1 allowed only when pad = 0) */
    hot_quant g;            /* g' quantizer: bits (default 4), SR, gran tensor/row/auto */
    hot_quant w;            /* w' quantizer: bits (default 4), RTN, per tensor, absmax/sawb */
    int pad;                /* 1: zero-pad O to a multiple of b; 0: shrink b to divide O (paper code) */
  } hq;
  struct {
    int enabled;            /* 0: g_w is an fp32 product */
    int block;              /* p, power of two 2..1024; 0 = derived (paper_code: largest 2^k | L) */
    hot_selection selection;
    int keep;               /* tri: percentage 1..50 */
    int rank;               /* prefix: r in 1..p */
    hot_layout layout;
    int pad;                /* 1: zero-pad tokens to a multiple of p; 0: no padding (p must divide) */
    hot_quant g;            /* g^ quantizer: 8-bit SR per tensor */
    hot_quant x;            /* x^ quantizer: 8-bit RTN per tensor, absmax/sawb */
  } hla;
  struct {
    int enabled;            /* keep q_x^ instead of x in the forward pass */
  } abc;
  hot_tile tile_gx;         /* GEMM tiles of the g_x product */
  hot_tile tile_gw;         /* GEMM tiles of the g_w product */
} hot_layer_spec;

/* A sweep axis (declared in specs, consumed by the tuner): a field path and its values. */
typedef struct {
  char field[HOT_NAME_MAX];
  int n;
  int64_t values[HOT_MAX_SWEEP];
} hot_sweep_axis;

typedef struct {
  char name[HOT_NAME_MAX];
  char file[HOT_PATH_MAX];  /* the spec's path as given */
  int64_t batch;            /* B */
  int64_t tokens;           /* L, tokens per sample */
  hot_recipe recipe;
  uint64_t seed;            /* Philox key */
  int n_archs;
  hot_arch archs[HOT_MAX_ARCHS];
  int n_layers;
  hot_layer_spec *layers;   /* owned by the model: free with spec_model_free */
  int n_sweep;
  hot_sweep_axis *sweep;    /* owned by the model */
} hot_model;

/* ---- the plan of one layer for one arch (plan.c; pure function of spec + arch) ----------- */

/* Kernel roles, in launch order of one training step. */
typedef enum {
  HOT_K_ABC_X = 0,   /* forward: x -> HLA projection -> q_x^ (RTN int8) + s_x^ */
  HOT_K_HQ_G,        /* backward: g_y -> block FWHT along O -> q_g' (SR) + s_g */
  HOT_K_HQ_W,        /* backward: w -> block FWHT along O -> q_w' (RTN) + s_w */
  HOT_K_HLA_G,       /* backward: g_y -> HLA projection -> q_g^ (SR int8) + s_g^ */
  HOT_K_GEMM_GX,     /* g_x = q_g' . q_w' with the HQ epilogue */
  HOT_K_GEMM_GW,     /* g_w = q_g^T . q_x^ with the HLA epilogue */
  HOT_K_BIAS,        /* g_b = column sums of g_y */
  HOT_K_LQS,         /* calibration: both errors of CONTRACT.md section 6 */
  HOT_K_SAWB_W,      /* SAWB scale of w' (when hq.w.rule = sawb) from its fp32 math tensor */
  HOT_K_SAWB_X,      /* SAWB scale of x^ (when hla.x.rule = sawb) */
  HOT_K_ROLE_COUNT
} hot_kernel_role;

typedef struct {
  hot_kernel_role role;
  char name[128];           /* extern "C" entry point; encodes the parameters */
  const char *templ;        /* template file, e.g. "templates/hadamard_quant.cu" */
  unsigned grid[3];
  unsigned block[3];
  unsigned smem;            /* dynamic shared memory, bytes */
  int max_spills;           /* spill bytes the plan allows (0 unless stated) */
} hot_kernel_plan;

typedef struct {
  int64_t m, n, k;          /* logical sizes */
  int64_t k_pad;            /* k rounded up to the tile's K step (zero codes beyond k) */
  hot_gemm_path path;
  hot_codes codes;
  int tile_m, tile_n, tile_k, warps_m, warps_n, stages;
  unsigned smem;            /* bytes of the pipeline buffers */
} hot_gemm_plan;

typedef struct {
  const hot_layer_spec *spec;  /* borrowed from the model */
  hot_arch arch;
  int layer_id;             /* index in the model; Philox tag = layer_id * 16 + tensor */

  int64_t T, L, B, O, I;    /* T = B * L */

  struct {
    int enabled;
    int block;              /* b actually used */
    int64_t o_pad;          /* O rounded up to b: the quantized tensor g' is T x o_pad */
    hot_quant g, w;         /* g.gran may be HOT_GRAN_AUTO: decided by LQS at run time */
    hot_codes codes;        /* storage of q_g' and q_w' */
    hot_gemm_plan gemm;     /* m = T, n = I, k = o_pad */
  } hq;

  struct {
    int enabled;
    int block;              /* p actually used */
    hot_selection selection;
    int keep;
    hot_layout layout;
    int rank;               /* r */
    uint16_t rows[HOT_MAX_P]; /* the r selected natural-order rows of H_p, ascending sequency */
    int64_t seg_len;        /* tokens per padded segment: L_p (sample) or T_p (flat) */
    int64_t segments;       /* B (sample) or 1 (flat) */
    int64_t blocks;         /* token blocks in all: segments * seg_len / p */
    int64_t k;              /* blocks * r: rows of g^ and x^ */
    hot_quant g, x;
    hot_gemm_plan gemm;     /* m = O, n = I, k = blocks * r */
  } hla;

  struct {
    int enabled;
    int64_t bytes;          /* q_x^ codes (hla.k x I int8) + one fp32 scale */
    int64_t fp32_bytes;     /* T * I * 4 */
    int64_t bf16_bytes;     /* T * I * 2 */
  } abc;

  struct {                  /* operation counts of one backward (integer MACs, adds) */
    int64_t gx_macs, gw_macs, fp32_gx_macs, fp32_gw_macs, fwht_adds;
  } ops;

  int n_kernels;
  hot_kernel_plan kernels[HOT_MAX_KERNELS];
} hot_layer_plan;


/* ---- planner API (plan.c: pure C, no Lua, no allocation) --------------------------------- */

/* Capabilities of `arch` (static storage), or NULL for an out-of-range value. */
const hot_arch_caps *plan_arch_caps(hot_arch arch);
/* Parses "sm_80" ... "sm_90a" into *out. Returns 0, or -1 for an unknown name (*out untouched). */
int plan_arch_parse(const char *name, hot_arch *out);

/* Static names of enumeration values ("f32", "sr", "row", "sawb", "tri", "flat", ...). */
const char *plan_dtype_name(hot_dtype v);
const char *plan_round_name(hot_round v);
const char *plan_gran_name(hot_gran v);
const char *plan_rule_name(hot_rule v);
const char *plan_selection_name(hot_selection v);
const char *plan_layout_name(hot_layout v);
const char *plan_recipe_name(hot_recipe v);
const char *plan_gemm_path_name(hot_gemm_path v);
const char *plan_codes_name(hot_codes v);
const char *plan_role_name(hot_kernel_role v);

/* Fills *spec with the defaults of `recipe` (name empty, features 0: the caller sets them).
 * The same defaults the Lua DSL applies (lua/hot/schema.lua); tests keep the two in step. */
void plan_spec_defaults(hot_layer_spec *spec, hot_recipe recipe);

/* Plans one layer for one arch. `spec` must outlive *out (out->spec borrows it).
 * Returns 0, or -1 with a one-line reason in err (an illegal request is an error, never a
 * silent change). */
int plan_layer(const hot_layer_spec *spec, int64_t batch, int64_t tokens, hot_recipe recipe,
               hot_arch arch, int layer_id, hot_layer_plan *out, char *err, size_t errlen);

/* Index of the kernel with `role` in plan->kernels, or -1 when the plan has none. */
int plan_kernel_index(const hot_layer_plan *plan, hot_kernel_role role);

/* Bytes of dynamic shared memory a GEMM tile configuration needs (the formula in the header of
 * templates/gemm_int.cu, or of templates/gemm_wgmma.cu for path wgmma_s8). */
unsigned plan_gemm_smem(hot_gemm_path path, hot_codes codes, int tile_m, int tile_n, int tile_k,
                        int stages);

#endif /* HOT_PLAN_H */

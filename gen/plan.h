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

/* The public enumerations and hot_layer_spec (hot_dtype ... hot_recipe, hot_quant, hot_tile,
 * HOT_NAME_MAX) live in libhot's public header; this file adds the internal structures. */
#include "../runtime/include/hot_types.h"

#define HOT_PATH_MAX 512    /* longest spec path kept for messages */
#define HOT_MAX_P 1024      /* largest HLA block */
#define HOT_MAX_ARCHS 8     /* archs per target list */
#define HOT_MAX_KERNELS 12  /* kernels per layer plan */
#define HOT_MAX_SWEEP 16    /* values per sweep axis */

/* What the kernels can address (templates/CONTRACT.md, "Size limits"); plan_layer refuses a
 * layer that exceeds one, naming the size, its value and the limit:
 *  - HOT_LIMIT_INT: every size a kernel takes as an int argument or indexes with int arithmetic
 *    (T, L, O, I, o_pad, both k_pad, the HLA K, the per-sample segment length);
 *  - HOT_LIMIT_GRID_X / HOT_LIMIT_GRID_YZ: CUDA's launch limits on gridDim.x and gridDim.y/z;
 *  - byte counts of every buffer and tensor, and the operation counts, must fit int64_t. */
#define HOT_LIMIT_INT 2147483647LL      /* 2^31 - 1 */
#define HOT_LIMIT_GRID_X 2147483647LL   /* 2^31 - 1 */
#define HOT_LIMIT_GRID_YZ 65535LL

/* ---- enumerations (each has a static name, see plan_*_name in plan.c) --------------------- */

/* hot_dtype, hot_round, hot_gran, hot_rule, hot_selection, hot_layout, hot_recipe: hot_types.h */
typedef enum {
  HOT_ARCH_SM80 = 0, HOT_ARCH_SM86, HOT_ARCH_SM89, HOT_ARCH_SM90, HOT_ARCH_SM90A, HOT_ARCH_SM120A,
  HOT_ARCH_COUNT
} hot_arch;
/* The target of a spec without hot.target. */
#define HOT_ARCH_DEFAULT HOT_ARCH_SM90
/* The storage layout of the CPU backend when no arch is forced (INT4 codes packed). */
#define HOT_ARCH_CPU_STORAGE HOT_ARCH_SM80
/* How a GEMM runs: INT4 mma.sync on packed nibbles, INT8 mma.sync, INT8 wgmma fed by cp.async, or
 * INT8 wgmma fed by the TMA, warp-specialised and persistent (asked for with tile_*.warps_n = 2;
 * docs/gemm-paths.md). One row each in the GEMM-path table (plan_gemm_path_info). */
/* The block-scaled paths of recipe nvfp4 (NVFP4 x NVFP4 for g_x, MXFP8 x MXFP8 for g_w,
 * templates/CONTRACT.md 20.5) need a block-scaled MMA no arch of the table has: they have no
 * template and run on the CPU backend only (plan_layer_cpu). mma_nvfp4 is the NVFP4 GEMM on
 * sm_120a's block-scaled mma.sync (templates/gemm_nvfp4.cu, CONTRACT.md 20.9), mma_mxfp8 the MXFP8
 * g_w GEMM there (templates/gemm_mxfp8.cu, CONTRACT.md 20.10, reading ABC's saved x^ in place);
 * plan_layer takes them on sm_120a (plan_block_path_choose names them) with HQ's and HLA's
 * quantisers (gen/kernels/hq_nvfp4.c, hla_mxfp8.c, gemm_nvfp4.c, gemm_mxfp8.c). */
typedef enum {
  HOT_GEMM_MMA_S4 = 0, HOT_GEMM_MMA_S8, HOT_GEMM_WGMMA_S8, HOT_GEMM_TMA_S8, HOT_GEMM_BS_NVFP4,
  HOT_GEMM_BS_MXFP8, HOT_GEMM_MMA_NVFP4, HOT_GEMM_MMA_MXFP8, HOT_GEMM_PATH_COUNT
} hot_gemm_path;
/* How codes are stored: one int8 per element, or two's-complement nibbles, two per byte; NVFP4
 * (E2M1 nibbles, element 2j in the low one, with an E4M3 scale byte per 16 and an fp32 tensor
 * scale) and MXFP8 (E4M3 bytes with an E8M0 scale byte per 32). One row each in the
 * operand-format table (plan_codes_info). */
typedef enum {
  HOT_CODES_S8 = 0, HOT_CODES_S4_PACKED, HOT_CODES_NVFP4, HOT_CODES_MXFP8, HOT_CODES_COUNT
} hot_codes;
/* The tensor-core instruction families a GEMM path issues (bits of hot_codes_info.mma):
 * mma.sync, wgmma, and a block-scaled MMA (kind::mxf4nvf4 / mxf8f6f4; no arch of the table yet). */
typedef enum { HOT_MMA_SYNC = 1, HOT_MMA_WGMMA = 2, HOT_MMA_BLOCK_SCALED = 4 } hot_mma_kind;
/* The code format of a plan: the integer codes of Parts I-II of templates/CONTRACT.md, or the
 * NVFP4 recipe's block formats (section 20: NVFP4 for HQ, MXFP8 for HLA and ABC). */
typedef enum { HOT_FMT_INT = 0, HOT_FMT_NVFP4 } hot_fmt;

/* What an architecture can do; one row per hot_arch in the arch table (gen/plan_tables.c,
 * plan_arch_caps). The table is the one list of archs: names, messages, the DSL's schema and the
 * runtime's device match all come from it. */
typedef struct {
  hot_arch arch;
  const char *name;       /* the sm_XY name specs, options and kernel caches use */
  int sm;                 /* compute capability, major * 10 + minor */
  int int4_mma;           /* mma.sync .s4 runs natively on tensor cores */
  int wgmma;              /* wgmma .s8 available */
  int max_threads;        /* threads per block */
  int max_smem_optin;     /* dynamic shared memory per block after opt-in, bytes */
  int smem_per_sm;        /* shared memory per SM, bytes */
  int regs_per_thread;    /* register ceiling per thread */
  int tma;                /* the Tensor Memory Accelerator (cp.async.bulk.tensor) */
  int arch_specific;      /* cubins run only on exactly this compute capability ("a" archs); else
                             on the same major with a minor >= this one's */
  int threads_per_sm;     /* resident threads per SM */
  int block_scaled_mma;   /* a block-scaled FP4/FP8 MMA hot has kernels for (none yet) */
  int mma_sync_nvfp4;     /* warp-level block-scaled mma.sync, kind::mxf4nvf4 and kind::mxf8f6f4
                             (sm_120a) */
} hot_arch_caps;

/* One operand format of the integer GEMMs (plan_codes_info). */
typedef struct {
  hot_codes codes;
  const char *name;       /* "s8", ... (plan_codes_name) */
  int bits;               /* widest code it holds */
  int per_byte;           /* elements per byte (2: packed nibbles, element 2j in the low one) */
  int block;              /* values per block scale (0: none, the scales are fp32 per row/tensor) */
  unsigned mma;           /* hot_mma_kind bits of the instructions that take it */
} hot_codes_info;

/* How a GEMM path shapes its warps (the tile rules of plan.c). */
typedef enum {
  HOT_WARPS_FREE = 0,     /* warps_m x warps_n as asked (default 2 x 2), each a grid of mma tiles */
  HOT_WARPS_WARPGROUP     /* tile_m / 16 warps (4 per 64-row warpgroup) x the row's warps_n */
} hot_warps_rule;

/* One GEMM path (plan_gemm_path_info): its kernel, what it needs of the arch, and its tile rules
 * as plan.c applies them. Values lists end at the first 0. */
typedef struct {
  hot_gemm_path path;
  const char *name;       /* kernel-name component and --gemm-paths label (plan_gemm_path_name) */
  const char *templ;      /* its CUDA template (twin templates/gemm_ref.c) */
  const char *emulator;   /* the emulator script that runs its template (tests label emu) */
  hot_mma_kind mma;
  hot_codes codes;        /* the operand format both operands use */
  int need_int4_mma, need_wgmma, need_tma; /* hot_arch_caps fields it requires */
  int need_block_scaled;  /* hot_arch_caps.block_scaled_mma (no template: CPU only so far) */
  int need_mma_sync_nvfp4; /* hot_arch_caps.mma_sync_nvfp4 */
  int warps_select;       /* 0: any tile warps_n request; else the warps_n value that asks for it */
  int warps_n;            /* HOT_WARPS_WARPGROUP: the plan's warps_n (the kernel name's and the
                             value a tile request must match) */
  int preference;         /* the planner takes the available path with the highest */
  int tile_m[4], tile_n[4];         /* allowed values */
  int tile_m_def[2], tile_n_def[2]; /* defaults for {small, big} problems */
  int k_step, k_max_steps;          /* tile_k: a multiple of k_step in [k_step, k_max_steps * k_step] */
  int tile_k_def;
  hot_warps_rule warps;
  int stages_min, stages_max, stages_def[2];
  unsigned smem_extra;    /* bytes beyond stages (tile_m + tile_n) rows of tile_k codes */
  int k_ragged;           /* 1: the template takes any K padded to its format's block (its last
                             K tile zero-filled), so k_pad is K rounded up to the block; 0: k_pad
                             is K rounded up to tile_k */
} hot_gemm_path_info;

/* hot_quant, hot_tile and hot_layer_spec (the model as written in the spec): hot_types.h */

/* A sweep axis (declared in specs, searched by hot-tune): a field path of gen/fields.h and its
 * values as spec text ("16", "true", "token"). */
typedef struct {
  char field[HOT_NAME_MAX];
  int n;
  char values[HOT_MAX_SWEEP][24];
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

/* Kernel roles: R(constant, name) in enumeration order (the values are the role numbers of
 * hot_kernel_time.role: append only), generated from the "@hot-role" lines of the descriptors
 * under gen/kernels/ (cmake/families.cmake), which say what implements each and where it runs in
 * a step (kernel_desc.h). */
#include "hot_roles.inc"
#define HOT_ROLE_ENUM_(c, name) c,
typedef enum { HOT_KERNEL_ROLES(HOT_ROLE_ENUM_) HOT_K_ROLE_COUNT } hot_kernel_role;
#undef HOT_ROLE_ENUM_

struct hot_kernel_desc; /* gen/kernel_desc.h */

typedef struct {
  hot_kernel_role role;
  const struct hot_kernel_desc *desc; /* what implements it (NULL in hand-built plans: kd_of) */
  char name[128];           /* extern "C" entry point; encodes the parameters */
  const char *templ;        /* template file, e.g. "templates/hadamard_quant.cu" */
  unsigned grid[3];         /* phase 0's grid; plan_kernel_grid gives every phase's */
  unsigned block[3];
  unsigned smem;            /* dynamic shared memory, bytes */
  int max_spills;           /* spill bytes the plan allows (0 unless stated) */
  int persistent;           /* 1: grid[0] is the tile count; the launch uses min(grid[0], SMs) */
} hot_kernel_plan;

typedef struct {
  int64_t m, n, k;          /* logical sizes */
  int64_t k_pad;            /* k rounded up to tile_k (zero codes beyond k), or on a k_ragged
                               path to its format's block (recipe nvfp4's MXFP8 g_w GEMM: the
                               template zero-fills its last K tile); for a segmented GEMM
                               segments * (segment K rounded up to tile_k) */
  int segmented;            /* 0: one int32 sum over all of K; 1: K is cut into k_pad / seg_k_pad
                               segments with a scale each (HOT_SEGS, the HLA scale groups) */
  int64_t seg_k_pad;        /* K of one segment, a multiple of tile_k when segmented (= k_pad
                               when not) */
  hot_gemm_path path;
  hot_codes codes;
  int tile_m, tile_n, tile_k, warps_m, warps_n, stages;
  unsigned smem;            /* bytes of the pipeline buffers */
} hot_gemm_plan;

typedef struct hot_layer_plan { /* tagged: hot.h declares it as an opaque type */
  const hot_layer_spec *spec;  /* borrowed from the model */
  hot_arch arch;
  int layer_id;             /* index in the model; Philox tag = layer_id * 16 + tensor */
  hot_fmt fmt;              /* HOT_FMT_NVFP4: recipe nvfp4 (plan_layer_cpu, plan_layer on sm_120a) */

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
    hot_quant g, x;         /* gran: HOT_GRAN_TENSOR or HOT_GRAN_SAMPLE (AUTO is resolved) */
    /* Scale groups (CONTRACT.md 6, 9, 14). groups = segments (B) when g^ or x^ has one scale per
     * sample, else 1. Group j owns the group_k = k / groups math rows j*group_k ... (one
     * sample's blocks); math row kk is stored at code position
     *   (kk / group_k) * group_k_pad + kk % group_k      (groups = 1: position kk)
     * of its code row, zeros elsewhere. With groups > 1, group_k_pad is group_k rounded up to
     * the GEMM's tile_k and gemm.k_pad = groups * group_k_pad: the g_w GEMM sums each group in
     * int32 on its own (gemm.segmented) and adds the dequantized group sums in group order.
     * With groups = 1: group_k = k, group_k_pad = gemm.k_pad, gemm.segmented = 0. s_g^ and
     * s_x^ are arrays of `groups` floats (a per-tensor quantizer repeats its one scale). */
    int64_t groups, group_k, group_k_pad;
    hot_gemm_plan gemm;     /* m = O, n = I, k = blocks * r (k_pad: see groups) */
  } hla;

  struct {
    int enabled;
    int64_t bytes;          /* the saved buffer: plan_buffer_bytes(HOT_BUF_SAVED) */
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

/* ---- the arch, operand-format and GEMM-path tables (plan_tables.c; static storage) ------- */

/* Capabilities of `arch` (static storage), or NULL for an out-of-range value. */
const hot_arch_caps *plan_arch_caps(hot_arch arch);
/* Parses an arch name of the table into *out. Returns 0, or -1 for an unknown name (*out
 * untouched). */
int plan_arch_parse(const char *name, hot_arch *out);
/* Writes the table's arch names, separated by `sep` (", " when NULL), into buf (always
 * terminated when n > 0; cut short when it does not fit). Returns buf, for use in messages. */
const char *plan_arch_list(char *buf, size_t n, const char *sep);
/* The arch whose cubins a device of compute capability major.minor runs by default: the
 * portable (not arch_specific) row of that major with the highest minor <= `minor`. Returns 0, or
 * -1 when no row fits (*out untouched). */
int plan_arch_for_device(int major, int minor, hot_arch *out);
/* Whether cubins for `arch` run on a device of compute capability major.minor: same major and a
 * minor >= the arch's, or exactly it for an arch_specific row. 0 for an unknown arch. */
int plan_arch_runs_on(hot_arch arch, int major, int minor);

/* The operand format `codes` / the GEMM path `path` (static storage), or NULL out of range. */
const hot_codes_info *plan_codes_info(hot_codes codes);
const hot_gemm_path_info *plan_gemm_path_info(hot_gemm_path path);
/* Parses a GEMM path name into *out. Returns 0, or -1 for an unknown name (*out untouched). */
int plan_gemm_path_parse(const char *name, hot_gemm_path *out);
/* Whether `caps` has everything `path` needs (its MMA kind, the TMA). */
int plan_gemm_path_available(const hot_gemm_path_info *path, const hot_arch_caps *caps);
/* The path a GEMM takes on `caps` when its tile asks for warps_n = `warps_n` and its codes need
 * `bits` bits: of the available paths whose selector accepts warps_n and whose format holds
 * `bits`, the one of highest preference (CONTRACT.md 7). Every arch has mma_s8, the fallback. */
hot_gemm_path plan_gemm_path_choose(const hot_arch_caps *caps, int warps_n, int bits);
/* The GPU path of a block-scaled GEMM of operand format `codes` (HOT_CODES_NVFP4 / _MXFP8) on
 * `caps`: of the available paths with a template taking that format, the one of highest
 * preference; HOT_GEMM_PATH_COUNT when `caps` has none (sm_120a: mma_nvfp4 for NVFP4, mma_mxfp8 for
 * MXFP8; no other arch has one). Pure: no allocation. */
hot_gemm_path plan_block_path_choose(const hot_arch_caps *caps, hot_codes codes);
/* What recipe nvfp4's GPU plan on `caps` lacks, as one line of text into buf (n bytes, n > 0;
 * truncated to fit): "not written for that arch yet: " and the kernels `caps` has none of (its
 * two block-scaled GEMM paths, plan_block_path_choose, and the recipe's other kernels of the table
 * in gen/plan_tables.c: HQ's NVFP4 quantisers, HLA's MXFP8 quantisers, which exist only for the
 * archs with the block-scaled mma.sync), then, were the descriptors of those kernels not wired
 * (k_nvfp4_plan_wired), "its kernels are not wired into a GPU plan yet". ABC needs no kernel
 * (the MXFP8 g_w GEMM reads the saved x^ in place). "" when nothing is missing (sm_120a).
 * Returns buf. Pure: no allocation. */
const char *plan_nvfp4_missing(const hot_arch_caps *caps, char *buf, size_t n);

/* Static names of enumeration values ("f32", "sr", "token", "sawb", "tri", "flat", ...); "?" out
 * of range. The spec's enumerations (dtype ... recipe) use field_list.h's one list of names. */
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
 * The columns hot, paper, paper_code of gen/field_list.h (fields_defaults): one source for specs
 * and for layers described directly in C. */
void plan_spec_defaults(hot_layer_spec *spec, hot_recipe recipe);

/* The C API's checks and recipe merge (hot_layer_create), driven by the field table of
 * gen/field_list.h; defined in gen/fields.c. */
/* Checks every BOOL and ENUM member of *s (and `recipe`): 0, or -1 with "spec.<member> = <v> is
 * not a <type> (0 .. <max>)" / "spec.<member> = <v>: expected 0 or 1" (or "recipe = ...") in err.
 * Integers are the planner's to check. */
int fields_check_enums(const hot_layer_spec *s, hot_recipe recipe, char *err, size_t n);
/* hot_layer_create's recipe merge: every member still at the project default (recipe hot) takes
 * `recipe`'s default; a member set to anything else is the caller's and stays. */
void fields_apply_recipe(hot_layer_spec *s, hot_recipe recipe);

/* Plans one layer for one arch. `spec` must outlive *out (out->spec borrows it).
 * Returns 0, or -1 with a one-line reason in err (an illegal request is an error, never a
 * silent change; recipe nvfp4 on an arch without its kernels, i.e. every arch of the table but
 * sm_120a, is refused naming the arch, the recipe and what the arch lacks (plan_layer_cpu plans
 * it); on sm_120a a layer its kernels cannot take is refused naming why: dtype other than f32,
 * out_features rounded up to 16 not a multiple of 64, a tile_gx.tile_k that does not divide it). */
int plan_layer(const hot_layer_spec *spec, int64_t batch, int64_t tokens, hot_recipe recipe,
               hot_arch arch, int layer_id, hot_layer_plan *out, char *err, size_t errlen);

/* The fields recipe nvfp4 fixes (templates/CONTRACT.md 20.8: hq.block 16 with padding, 4-bit
 * g'/w', 8-bit g^/x^, absmax rules, per-tensor hq.scale and hla.scale) checked on *spec alone,
 * as plan_layer and plan_layer_cpu check them for that recipe. Returns 0, or -1 with "recipe
 * nvfp4 needs <field = value> (templates/CONTRACT.md 20)" in err (also for a NULL spec). Reads
 * nothing else; owns nothing. */
int plan_nvfp4_check(const hot_layer_spec *spec, char *err, size_t errlen);

/* Plans one layer for the CPU backend (no GPU kernel will run it): as plan_layer for the CPU's
 * storage arch (HOT_ARCH_CPU_STORAGE), and recipe nvfp4 too (templates/CONTRACT.md 20) with the
 * block-scaled paths without a template (bs_nvfp4, bs_mxfp8) and every dtype. Same ownership,
 * returns and errors as plan_layer. */
int plan_layer_cpu(const hot_layer_spec *spec, int64_t batch, int64_t tokens, hot_recipe recipe,
                   int layer_id, hot_layer_plan *out, char *err, size_t errlen);

/* Buffers of a layer whose size the plan decides (plan_buffer_bytes). */
typedef enum {
  HOT_BUF_Q_G = 0,  /* q_g': T rows of hq.gemm.k_pad codes (k_pad / 2 bytes when packed) */
  HOT_BUF_S_G,      /* s_g: T fp32 row scales */
  HOT_BUF_Q_W,      /* q_w': I rows of hq.gemm.k_pad codes (k_pad / 2 bytes when packed) */
  HOT_BUF_Q_HG,     /* q_g^: O rows of hla.gemm.k_pad int8 */
  HOT_BUF_Q_HX,     /* q_x^: I rows of hla.gemm.k_pad int8 (the GEMM reads whole k_pad rows) */
  HOT_BUF_SAVED,    /* the saved buffer: with ABC the saved codes, then s_x^ (fp32) at
                       plan_saved_scale_offset; else x as T x I fp32 */
  HOT_BUF_GY,       /* g_y: T x O in the layer's dtype */
  HOT_BUF_X,        /* x: T x I in the layer's dtype */
  HOT_BUF_W,        /* w: O x I in the layer's dtype */
  HOT_BUF_GX,       /* g_x: T x I fp32 */
  HOT_BUF_GW,       /* g_w: O x I fp32 */
  HOT_BUF_SAVED_CODES, /* the codes of the saved buffer (ABC): I rows of hla.k int8, unpadded */
  HOT_BUF_COUNT
} hot_buffer;

/* Bytes of buffer `b` of `plan` (0 for a role the plan does not have), computed from the plan's
 * fields only, so that hand-built plans of tests get the same answer. The one definition of
 * every buffer size: the planner, both backends, the twins and the cost model use it. Returns
 * -1 when the size does not fit int64_t (plan_layer refuses such plans) or plan/b is invalid. */
int64_t plan_buffer_bytes(const hot_layer_plan *plan, hot_buffer b);

/* The method's own count of ABC's saved bytes: K = blocks·r int8 codes per input column (no
 * padding of K) plus one fp32 scale per scale group; 0 without ABC, -1 on overflow or NULL. The
 * saved buffer (plan_buffer_bytes(HOT_BUF_SAVED)) is compared with it. */
int64_t plan_abc_method_bytes(const hot_layer_plan *plan);

/* The saved buffer under ABC (templates/CONTRACT.md 5, "the saved buffer"): I code rows of
 * exactly hla.k = blocks·r int8 codes (row c = column c of x^, math row kk at byte kk: the
 * scale groups are consecutive runs of group_k and nothing is padded), then s_x^ (hla.groups
 * fp32) at this offset, the codes' bytes rounded up to 16. -1 without ABC, on overflow or NULL. */
int64_t plan_saved_scale_offset(const hot_layer_plan *plan);
/* 1 when the g_w GEMM cannot read the saved codes in place (its operand layout, I rows of
 * hla.gemm.k_pad with zero tails per group, differs: k_pad != K), so the backward unpacks them
 * into a workspace buffer first (role abc_unpack); 0 otherwise (also without ABC or NULL). */
int plan_saved_unpacked(const hot_layer_plan *plan);

/* Bytes of one code row of k codes stored as `codes` (int8: k; packed int4: k / 2). */
int64_t plan_code_bytes(hot_codes codes, int64_t k);
/* Static name of a buffer ("q_g", "saved", ...). */
const char *plan_buffer_name(hot_buffer b);

/* Elements of the fp32 tensor a SAWB role reads (o_pad * I for sawb_w, K * I for sawb_x; 0 for
 * other roles). */
int64_t plan_sawb_elems(const hot_layer_plan *plan, hot_kernel_role role);

/* Scale groups of a SAWB role: the groups of x^ when x^ is per sample (sawb.cu then sums each
 * group's plan_sawb_elems / groups elements on its own), else 1; 0 for other roles. */
int64_t plan_sawb_groups(const hot_layer_plan *plan, hot_kernel_role role);

/* The grid of the kernel plan->kernels[k] for launch argument `phase`: the planned grid, except
 * where the template documents its own grid for a phase (its descriptor's one_block_phase:
 * sawb.cu phase 1). A persistent kernel's grid[0] is its tile count (the launch caps it at the
 * SM count). Zeros for an invalid k. */
void plan_kernel_grid(const hot_layer_plan *plan, int k, int phase, unsigned grid[3]);

/* Index of the kernel with `role` in plan->kernels, or -1 when the plan has none. */
int plan_kernel_index(const hot_layer_plan *plan, hot_kernel_role role);

/* The coarse candidate of LQS (CONTRACT.md 6) and the granularity of scale = "auto" before any
 * calibration: one scale per sample (HOT_GRAN_SAMPLE) when the call has B > 1 samples, else per
 * tensor (HOT_GRAN_TENSOR, the same groups). LQS picks per token (HOT_GRAN_ROW) or this. */
hot_gran plan_lqs_coarse(const hot_layer_plan *plan);

/* Bytes of dynamic shared memory a GEMM tile configuration needs (the formula in the header of
 * templates/gemm_int.cu, of templates/gemm_wgmma.cu for path wgmma_s8, of templates/gemm_tma.cu
 * for path tma_s8). */
unsigned plan_gemm_smem(hot_gemm_path path, hot_codes codes, int tile_m, int tile_n, int tile_k,
                        int stages);

#endif /* HOT_PLAN_H */

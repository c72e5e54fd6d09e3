/* kernel_desc.h — one descriptor per kernel family: everything the generator and the CUDA backend
 * know about a kernel role, kept together in one file under gen/kernels/ (hq.c, hla.c, sawb.c,
 * gemm.c, gemm_tma.c, bias.c, lqs.c, abc_unpack.c; recipe nvfp4 on sm_120a: hq_nvfp4.c,
 * hla_mxfp8.c, gemm_nvfp4.c, gemm_mxfp8.c):
 *
 *   template file      templ
 *   whether planned    planned(spec, plan, role)  (the first descriptor that says yes implements
 *                      the role: gemm.c and gemm_tma.c split the GEMM roles by path; the
 *                      nvfp4 families take their roles where kd_block_gpu(plan))
 *   launch geometry    geom(plan, role)           (plan.c checks it against CUDA's limits)
 *   entry-point name   name(plan, role)           (encodes every parameter of the code)
 *   #defines           params(plan, role)         (emit.c writes them; the template checks the
 *                                                  geometry it is handed with static_asserts)
 *   launch arguments   sig + args(plan, role, phase, layer buffers)
 *                      (runtime/launch.c turns them into the kernelParams array)
 *   tensor maps        tmaps(...)                 (TMA kernels only)
 *   cost               cost(plan, role, phase)    (gen/cost.c)
 *   step order         steps[]                    (the step table of a call, in seq order)
 *   scratch            scratch[], views[]         (the workspace pieces its launches use)
 *
 * kernel_launch.c builds the per-layer tables from them once (kd_scratch_layout, kd_launch_list):
 * the CUDA backend replays them; the CPU paths (templates/layer_ref.c, runtime/cpu/fast_layer.c)
 * walk kd_steps through each family's step functions (ref_step_<family>, fast_step_<family>).
 * plan.c, emit.c, cost.c, runtime/launch.c and runtime/cuda_backend.c iterate over the descriptors
 * (kernel_desc.c's registry, generated from the files of gen/kernels/ with the roles their
 * "@hot-role" lines declare: cmake/families.cmake) and switch on no role. Adding a kernel family:
 * docs/adding.md.
 *
 * Pure C (no CUDA, no allocation): device addresses are uint64_t. */
#ifndef HOT_KERNEL_DESC_H
#define HOT_KERNEL_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "cost.h"
#include "plan.h"

/* ---- #defines (emit.c owns the list; a descriptor adds to it) ------------------------------- */

typedef struct hot_params hot_params;
/* Adds "#define name <printf text>" to the kernel's parameters (emit.c). Errors (out of memory,
 * more parameters than emit.c's table takes, a name too long) are kept in p and reported by the
 * emitter after params() returns. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void kd_param(hot_params *p, const char *name, const char *fmt, ...);
/* Marks p as failed for lack of memory (a descriptor's own allocation failed). */
void kd_param_oom(hot_params *p);

/* ---- geometry -------------------------------------------------------------------------------- */

typedef struct {
  int64_t grid_x, grid_y;   /* phase 0's grid; plan.c refuses grids beyond CUDA's limits */
  unsigned block;           /* threads (x) */
  unsigned smem;            /* dynamic shared memory, bytes */
  int persistent;           /* 1: grid_x is the tile count, the launch uses min(grid_x, SMs)
                               (plan.c caps it at the grid.x limit instead of refusing it) */
} hot_kernel_geom;

/* ---- launch arguments ----------------------------------------------------------------------- */

/* The device buffers of one call (runtime/cuda_backend.c fills them; 0 = none). Role-specific
 * amax words are resolved by the backend (its word layout), so a descriptor picks, never
 * computes, an address. */
typedef enum {
  HOT_LB_X = 0, HOT_LB_SAVED, HOT_LB_S_X,   /* x; saved buffer (q_x^), its s_x^ */
  HOT_LB_GY, HOT_LB_W, HOT_LB_GX, HOT_LB_GW, HOT_LB_GB,
  HOT_LB_Q_G, HOT_LB_S_G, HOT_LB_Q_W, HOT_LB_S_W, HOT_LB_Q_HG, HOT_LB_S_HG,
  HOT_LB_AMAX,              /* every amax word of a call (the words below are views into it) */
  HOT_LB_AMAX_G,            /* g': the per-tensor word, or the B per-sample words */
  HOT_LB_AMAX_W, HOT_LB_AMAX_HG, HOT_LB_AMAX_X, /* w', g^, x^ (the group words when per sample) */
  HOT_LB_AMAX_LQS,          /* the B per-sample words LQS fills */
  HOT_LB_S_SAWB_W, HOT_LB_S_SAWB_X, /* SAWB scales of w' and x^ (0 without SAWB) */
  HOT_LB_MATH, HOT_LB_PARTIALS, HOT_LB_LQS_RS, HOT_LB_LQS_RES, HOT_LB_LQS_CHOICE,
  HOT_LB_Q_HX,              /* q_x^ in the g_w GEMM's layout: abc_unpack's output, or the saved
                               buffer itself when the plan has no abc_unpack */
  HOT_LB_SF_G, HOT_LB_SF_W, /* recipe nvfp4 on the GPU: the E4M3 block scales of g' and w' (views
                               into Q_G and Q_W past their codes, templates/nvfp4_plan.h) */
  HOT_LB_BAD,               /* recipe nvfp4 on the GPU: the word its quantisers set when an input
                               or transformed value is not finite (a view into the amax words) */
  HOT_LB_COUNT
} hot_lbuf;

typedef struct {
  uint64_t buf[HOT_LB_COUNT];
  uint64_t seed;            /* Philox key */
  uint32_t step;
  int per_sample_g;         /* g' has one scale per sample in this backward */
  const void *tmap[2];      /* encoded tensor maps (128 bytes each) of a TMA kernel, else NULL */
} hot_launch_in;

typedef enum { HOT_ARG_PTR = 0, HOT_ARG_I32, HOT_ARG_U32, HOT_ARG_I64, HOT_ARG_U64, HOT_ARG_F32,
               HOT_ARG_MAP } hot_arg_type;
/* Where a value comes from when a launch is replayed with other buffers (kd_launch_list): 0 the
 * value itself; HOT_SYM_BUF + b the call's buffer b; HOT_SYM_STEP the call's step;
 * HOT_SYM_MAP + i the i-th encoded tensor map. */
enum { HOT_SYM_VALUE = 0, HOT_SYM_BUF = 1, HOT_SYM_STEP = HOT_SYM_BUF + HOT_LB_COUNT,
       HOT_SYM_MAP };
typedef struct {
  hot_arg_type type;
  int sym;                  /* HOT_SYM_* */
  uint64_t u;               /* PTR, U32, U64 */
  int64_t i;                /* I32, I64 */
  float f;                  /* F32 */
  const void *map;          /* MAP: 128 bytes passed by value (__grid_constant__) */
} hot_arg;

#define HOT_MAX_ARGS 32
typedef struct {
  int n;
  int bad;                  /* 1: a value does not fit its type, or more than HOT_MAX_ARGS */
  hot_arg a[HOT_MAX_ARGS];
} hot_argv;

/* Appenders (kernel_desc.c): each sets v->bad instead of overflowing or truncating. */
void kd_ptr(hot_argv *v, uint64_t p);
void kd_i32(hot_argv *v, int64_t x);
void kd_u32(hot_argv *v, uint64_t x);
void kd_i64(hot_argv *v, int64_t x);
void kd_u64(hot_argv *v, uint64_t x);
void kd_f32(hot_argv *v, float x);
/* The call's buffer b (its address now, and marked as buffer b for a replay); kd_buf_if: b when
 * cond, else a NULL pointer. kd_step: the call's step (u32). kd_map: tensor map i of the launch
 * (in->tmap[i], 128 bytes by value). */
void kd_buf(hot_argv *v, const hot_launch_in *in, hot_lbuf b);
void kd_buf_if(hot_argv *v, const hot_launch_in *in, int cond, hot_lbuf b);
void kd_step(hot_argv *v, const hot_launch_in *in);
void kd_map(hot_argv *v, const hot_launch_in *in, int i);

/* A tensor map a TMA kernel needs: rank 2, uint8, globalDim {dims[0], dims[1]}, one stride
 * (bytes of a row), boxDim {box[0], box[1]}, 128B swizzle, zero fill (runtime/launch.c encodes
 * it with cuTensorMapEncodeTiled). */
typedef struct {
  const char *what;         /* "A (q_g')" ... for messages */
  hot_lbuf slot;            /* the buffer it maps (addr = that buffer's address in the call) */
  uint64_t addr;
  uint64_t dims[2];
  uint64_t stride;
  uint32_t box[2];
} hot_tmap_req;

/* ---- steps ----------------------------------------------------------------------------------- */

typedef enum { HOT_CALL_SAVE = 0, HOT_CALL_BACKWARD, HOT_CALL_CALIBRATE } hot_call;
/* When a step runs: always (the role must be planned), when its role is planned, when g' is per
 * token / not per token in this backward. */
typedef enum { HOT_WHEN_ALWAYS = 0, HOT_WHEN_PLANNED, HOT_WHEN_GRAN_ROW, HOT_WHEN_GRAN_NOT_ROW
} hot_step_when;
/* The outputs of a backward (hot_layer_backward's g_x, g_w, g_b): a backward step names the one
 * its work ends in, and runs only when the caller asked for that output (a NULL pointer asks for
 * none: a frozen weight needs no g_w, an input that needs no gradient no g_x). */
enum { HOT_OUT_GX = 1u, HOT_OUT_GW = 2u, HOT_OUT_GB = 4u, HOT_OUT_ALL = 7u };
/* One launch of a call. seq orders the launches of a call across descriptors (and the kernels of
 * a plan: a role's place is its smallest seq):
 *   save 10 abc_x 0, 11-12 sawb_x 0/1, 13 abc_x 1;
 *   backward 20-22 hq_g (2 | 0, 1), 30 hq_w 0, 31-32 sawb_w 0/1, 33 hq_w 1, 40-41 hla_g 0/1,
 *   45 abc_unpack, 50 gemm_gx, 51 gemm_gw, 60 bias;  calibrate 70-72 lqs 0/1/2. */
typedef struct {
  hot_call call;
  int seq;
  hot_kernel_role role;
  int phase;
  hot_step_when when;
  unsigned out;             /* backward: the output its work ends in (one HOT_OUT_* bit); save
                               and calibrate steps: 0 (they serve every later backward) */
} hot_step;

/* The HOT_OUT_* bits of a backward's output pointers: each that is not NULL is asked for. */
static inline unsigned kd_outputs(const void *g_x, const void *g_w, const void *g_b) {
  return (g_x ? HOT_OUT_GX : 0u) | (g_w ? HOT_OUT_GW : 0u) | (g_b ? HOT_OUT_GB : 0u);
}

/* Whether a step runs in a call, given its role is planned (the callers check that): its `when`
 * against the call's g' granularity (gran_row: per token in this backward) and its `out`
 * against the outputs the caller asked for (HOT_OUT_* bits; a step with out 0 runs in any call).
 * The one rule of the reference path, the fast CPU path and the CUDA backend. */
static inline int kd_step_runs(hot_step_when when, unsigned out, int gran_row, unsigned outputs) {
  if (out && !(out & outputs)) return 0;
  switch (when) {
  case HOT_WHEN_GRAN_ROW: return gran_row != 0;
  case HOT_WHEN_GRAN_NOT_ROW: return gran_row == 0;
  case HOT_WHEN_ALWAYS:
  case HOT_WHEN_PLANNED: return 1;
  }
  return 0;
}

/* ---- scratch: the device memory a family's launches use within one call ------------------- */

/* A piece of the call's workspace a family declares: it backs buffer `slot`; its bytes follow
 * from the plan (0: none in this plan; -1: overflow); 1 << hot_call bits say in which calls it is
 * used (`calls`) and in which it is zeroed before the first launch (`zero`). Pieces carry nothing
 * from one call to the next (the saved buffer is the caller's or the layer's, never scratch), so
 * every layer's calls share one allocation (oneDNN's scratchpad): kd_scratch_layout merges the
 * planned families' pieces (the largest request of a slot wins) and lays them out in hot_lbuf
 * order, each at its alignment. */
typedef struct {
  hot_lbuf slot;
  const char *name;         /* "q_g", "amax", ... (messages, tests) */
  int64_t (*bytes)(const hot_layer_plan *p);
  unsigned align;           /* a power of two */
  unsigned calls;           /* bit per hot_call that uses it */
  unsigned zero;            /* bit per hot_call that zeroes it first (whole 32-bit words) */
} hot_scratch;

/* A buffer that is a place inside another: slot = base + offset(p, per_sample_g) bytes (-1: the
 * slot stays NULL). A piece of the slot's own wins over a view (q_x^: unpacked when planned, else
 * the saved buffer in place). */
typedef struct {
  hot_lbuf slot, base;
  int64_t (*offset)(const hot_layer_plan *p, int per_sample_g);
} hot_view;

/* The amax words of a call (piece HOT_LB_AMAX, zeroed by every call; kernel_args.c): one word
 * per per-tensor amax (kd_amax_word), then B words for the per-sample amax of g' (HQ; LQS uses
 * the same B words in a calibration), then hla.groups words each for x^ and g^ where they are
 * per sample. */
enum { HOT_AMAX_HQ_G = 0, HOT_AMAX_HQ_W, HOT_AMAX_HLA_G, HOT_AMAX_ABC_X, HOT_AMAX_BAD,
       HOT_AMAX_WORDS = 8 };
int64_t kd_amax_bytes(const hot_layer_plan *p);
/* Byte offset in the amax piece of the first word of x^ (is_g 0) or g^ (is_g 1): the
 * per-tensor word, or the group words. */
int64_t kd_amax_hla(const hot_layer_plan *p, int is_g);

#define HOT_CALL_BIT(c) (1u << (c))
#define HOT_CALLS_ALL (HOT_CALL_BIT(HOT_CALL_SAVE) | HOT_CALL_BIT(HOT_CALL_BACKWARD) | \
                       HOT_CALL_BIT(HOT_CALL_CALIBRATE))

/* ---- the descriptor -------------------------------------------------------------------------- */

typedef struct hot_kernel_desc {
  const char *family;       /* "hq", "gemm_tma", ... (messages, tests) */
  unsigned roles;           /* bit per hot_kernel_role it implements */
  const char *templ;        /* "templates/hadamard_quant.cu" */
  /* When set, the template of a planned kernel (a family with one template per path); NULL: templ.
   */
  const char *(*templ_for)(const hot_layer_plan *p, hot_kernel_role role);
  /* 1 when this descriptor implements `role` in plan p (spec s): its feature is on and, for a
   * family with variants, the plan chose this one. */
  int (*planned)(const hot_layer_spec *s, const hot_layer_plan *p, hot_kernel_role role);
  /* Phase 0's geometry into *g. Returns 0. */
  int (*geom)(const hot_layer_plan *p, hot_kernel_role role, hot_kernel_geom *g);
  int one_block_phase;      /* the phase launched on a single block (sawb: 1), -1: none */
  /* The entry name into out (n bytes): snprintf's result (>= n: does not fit). */
  int (*name)(const hot_layer_plan *p, hot_kernel_role role, char *out, size_t n);
  /* The template's #defines but HOT_KNAME (emit.c adds it first). */
  void (*params)(const hot_layer_plan *p, hot_kernel_role role, hot_params *out);
  /* The entry point's parameter names, comma-joined in order (tests compare them with the
   * template's entry: emit_entry_params), and the values of one launch in that order. args
   * returns 0, or -1 when the plan cannot be launched (a size beyond an int argument). */
  const char *sig;
  int (*args)(const hot_layer_plan *p, hot_kernel_role role, int phase, const hot_launch_in *in,
              hot_argv *out);
  /* TMA kernels: the maps of one launch into out[0..]; returns how many (0: none). NULL: none. */
  int (*tmaps)(const hot_layer_plan *p, hot_kernel_role role, const hot_launch_in *in,
               hot_tmap_req out[2]);
  /* plan_kernel_cost (cost.h) of one launch; -1 for a phase the role does not have. */
  int (*cost)(const hot_layer_plan *p, hot_kernel_role role, int phase, int gran_row,
              hot_kernel_cost *c);
  /* The backward output this role stores and watches for overflow ("g_x", ...), or NULL. */
  const char *(*output)(hot_kernel_role role);
  const hot_step *steps;
  int n_steps;
  /* The workspace pieces and the views its launches use (none: NULL, 0). */
  const hot_scratch *scratch;
  int n_scratch;
  const hot_view *views;
  int n_views;
} hot_kernel_desc;

/* ---- the registry (kernel_desc.c) ------------------------------------------------------------ */

/* Every descriptor, in a fixed order; *n receives the count. Static storage. */
const hot_kernel_desc *const *kd_all(int *n);
/* The descriptor that implements `role` in plan p of spec s (the first whose planned() says
 * yes), or NULL when the plan has no such kernel. */
const hot_kernel_desc *kd_select(const hot_layer_spec *s, const hot_layer_plan *p,
                                 hot_kernel_role role);
/* The descriptor of a planned kernel: k->desc, or for a hand-built kernel without one the first
 * descriptor that lists k->role. NULL for an unknown role. */
const hot_kernel_desc *kd_of(const hot_kernel_plan *k);
/* The roles in plan order (each role's smallest step seq), HOT_K_ROLE_COUNT of them. */
const hot_kernel_role *kd_plan_order(void);
/* The steps of `call` from every descriptor, sorted by seq, into out (max entries); returns how
 * many (at most max). */
int kd_steps(hot_call call, hot_step *out, int max);
/* 1 when plan p runs recipe nvfp4's sm_120a kernels (fmt NVFP4 and a g_x GEMM path with a
 * template: mma_nvfp4), so the families hq_nvfp4, hla_mxfp8, gemm_nvfp4 and gemm_mxfp8 implement
 * its roles; 0 for every other plan, the CPU backend's plans of recipe nvfp4 included (their
 * block-scaled paths have no template: the hq, hla and gemm families keep them). */
int kd_block_gpu(const hot_layer_plan *p);
/* The output of a family that stores none the backend watches (every role): NULL. */
const char *kd_no_output(hot_kernel_role role);
/* Number of names in a comma-joined signature ("a,b,c": 3; "": 0). */
int kd_sig_count(const char *sig);

/* ---- per-layer tables, built once when a layer is loaded (kernel_launch.c) ------------------ */

/* Where every buffer of a call lies: a workspace piece (off >= 0, relative to the workspace), a
 * view (base >= 0, view_off bytes past the base's address, for per_sample_g 0 / 1), or neither
 * (the caller's pointer, or NULL). */
typedef struct {
  int64_t bytes;                        /* the workspace the layer needs */
  int64_t off[HOT_LB_COUNT], size[HOT_LB_COUNT];  /* pieces: -1 / 0 where none */
  unsigned zero[HOT_LB_COUNT];          /* bit per hot_call that zeroes the piece first */
  int base[2][HOT_LB_COUNT];            /* views: the base slot, -1 where none */
  int64_t view_off[2][HOT_LB_COUNT];
} hot_scratch_layout;

/* The layout of plan p's workspace from the planned families' pieces and views. Returns 0, or -1
 * when a size overflows or a piece's alignment is not a power of two (err names it). */
int kd_scratch_layout(const hot_layer_plan *p, hot_scratch_layout *out, char *err, size_t n);

/* plan_kernel_grid (plan.h), defined here. */
void kd_kernel_grid(const hot_layer_plan *pl, int k, int phase, unsigned grid[3]);

/* One launch of a call, ready to replay: the plan's kernel, its geometry for the phase, its
 * arguments (HOT_SYM_* marks what each call fills in) for per_sample_g 0 and 1, and the tensor
 * maps it needs (addr unset: the call's buffer `slot`). kernel = -1: the step's role is not
 * planned (the call fails naming role_name). */
typedef struct {
  int kernel;
  hot_kernel_role role;
  const char *role_name;
  int phase;
  hot_step_when when;
  unsigned out;                         /* the step's (HOT_OUT_*) */
  int ok;                               /* arguments built for both variants */
  unsigned grid[3], block[3], smem;
  int persistent;
  int n_sig;                            /* the descriptor's parameter count */
  hot_argv args[2];
  int n_maps;
  hot_tmap_req maps[2];
} hot_launch;

#define HOT_MAX_LAUNCHES 16
typedef struct {
  int n;
  hot_launch l[HOT_MAX_LAUNCHES];
} hot_launch_list;

/* The launches of `call` for plan p with workspace layout L and Philox key seed, in step order:
 * every step of the descriptors for that call but those whose role is not planned and that ask
 * for nothing else (HOT_WHEN_PLANNED); the other `when`s are left to the call. Pure: no
 * allocation. Returns 0, or -1 when more steps than HOT_MAX_LAUNCHES. */
int kd_launch_list(const hot_layer_plan *p, const hot_scratch_layout *L, hot_call call,
                   uint64_t seed, hot_launch_list *out);

#endif

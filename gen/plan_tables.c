/* plan_tables.c — the arch table, the operand-format table and the GEMM-path table: the one place
 * that names archs, operand formats and GEMM paths. The planner, the emitter's GEMM descriptors,
 * the runtime's device match, hot-tune's search space and every message that lists them ask these
 * tables (tests/layering/tables.py checks that no other product file spells an arch or a GEMM path
 * out). A new sm_XY is a row of k_caps plus its kernels; a new operand format (FP8, say) a row of
 * k_codes plus the GEMM path rows and templates that take it. Pure C: no allocation, no I/O. */
#include <stdio.h>
#include <string.h>

#include "plan.h"

/* ---- archs ------------------------------------------------------------------------------- */

/* Shared memory figures are the CUDA programming guide's per-arch limits (opt-in maximum per
 * block, and per SM); threads_per_sm its resident-thread limit. Rows in hot_arch order. */
static const hot_arch_caps k_caps[HOT_ARCH_COUNT] = {
    /* arch, name, sm, int4_mma, wgmma, max_threads, max_smem_optin, smem_per_sm, regs, tma,
     * arch_specific, threads_per_sm, block_scaled_mma, mma_sync_nvfp4 */
    {HOT_ARCH_SM80, "sm_80", 80, 1, 0, 1024, 166912, 167936, 255, 0, 0, 2048, 0, 0},
    {HOT_ARCH_SM86, "sm_86", 86, 1, 0, 1024, 101376, 102400, 255, 0, 0, 1536, 0, 0},
    {HOT_ARCH_SM89, "sm_89", 89, 1, 0, 1024, 101376, 102400, 255, 0, 0, 1536, 0, 0},
    /* Hopper has no INT4 tensor cores: mma.sync .s4 compiles but is emulated (CONTRACT.md 7). */
    {HOT_ARCH_SM90, "sm_90", 90, 0, 0, 1024, 232448, 233472, 255, 1, 0, 2048, 0, 0},
    {HOT_ARCH_SM90A, "sm_90a", 90, 0, 1, 1024, 232448, 233472, 255, 1, 1, 2048, 0, 0},
    /* RTX 50-series / RTX PRO Blackwell: 99 KiB of shared memory per block, 1536 threads per SM;
     * no wgmma; no INT4 mma.sync is assumed; the warp-level block-scaled mma.sync
     * (kind::mxf4nvf4), which only the "a" target compiles. No portable sm_120 row: nothing hot
     * runs there is verified on such a GPU, so a 12.x device stays unsupported (the CPU backend
     * with a warning) and sm_120a is only ever asked for by name. */
    {HOT_ARCH_SM120A, "sm_120a", 120, 0, 0, 1024, 101376, 102400, 255, 1, 1, 1536, 0, 1},
};

const hot_arch_caps *plan_arch_caps(hot_arch arch) {
  return ((int)arch >= 0 && arch < HOT_ARCH_COUNT) ? &k_caps[arch] : NULL;
}

int plan_arch_parse(const char *name, hot_arch *out) {
  if (!name) return -1;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a)
    if (strcmp(name, k_caps[a].name) == 0) {
      *out = (hot_arch)a;
      return 0;
    }
  return -1;
}

const char *plan_arch_list(char *buf, size_t n, const char *sep) {
  if (!buf || n == 0) return buf;
  buf[0] = '\0';
  size_t used = 0;
  for (int a = 0; a < HOT_ARCH_COUNT && used < n; ++a) {
    const int w = snprintf(buf + used, n - used, "%s%s", a ? (sep ? sep : ", ") : "", k_caps[a].name);
    if (w < 0) break;
    used += (size_t)w;
  }
  return buf;
}

int plan_arch_for_device(int major, int minor, hot_arch *out) {
  int best = -1;
  for (int a = 0; a < HOT_ARCH_COUNT; ++a) {
    const hot_arch_caps *c = &k_caps[a];
    if (c->arch_specific || c->sm / 10 != major || c->sm % 10 > minor) continue;
    if (best < 0 || c->sm > k_caps[best].sm) best = a;
  }
  if (best < 0) return -1;
  *out = (hot_arch)best;
  return 0;
}

int plan_arch_runs_on(hot_arch arch, int major, int minor) {
  const hot_arch_caps *c = plan_arch_caps(arch);
  if (!c || c->sm / 10 != major) return 0;
  return c->arch_specific ? minor == c->sm % 10 : minor >= c->sm % 10;
}

/* ---- operand formats --------------------------------------------------------------------- */

/* Rows: codes, name, bits, per_byte, block (values per block scale), mma. NVFP4 and MXFP8 are
 * recipe nvfp4's (templates/CONTRACT.md 20.1-20.4). */
static const hot_codes_info k_codes[HOT_CODES_COUNT] = {
    {HOT_CODES_S8, "s8", 8, 1, 0, HOT_MMA_SYNC | HOT_MMA_WGMMA},
    {HOT_CODES_S4_PACKED, "s4_packed", 4, 2, 0, HOT_MMA_SYNC},
    {HOT_CODES_NVFP4, "nvfp4", 4, 2, 16, HOT_MMA_BLOCK_SCALED},
    {HOT_CODES_MXFP8, "mxfp8", 8, 1, 32, HOT_MMA_BLOCK_SCALED},
};

const hot_codes_info *plan_codes_info(hot_codes codes) {
  return ((int)codes >= 0 && codes < HOT_CODES_COUNT) ? &k_codes[codes] : NULL;
}

const char *plan_codes_name(hot_codes v) {
  const hot_codes_info *c = plan_codes_info(v);
  return c ? c->name : "?";
}

/* ---- GEMM paths -------------------------------------------------------------------------- */

/* Tile rules: mma.sync tiles of 64..256 rows, K a multiple of one instruction's K (32 INT8 codes,
 * 64 INT4) up to four of them, 2..6 cp.async stages, 3 (big problems) or 4; the wgmma paths:
 * warpgroups of 64 rows, one 128-byte swizzled K slab per stage, the warps following from tile_m
 * (templates/gemm_wgmma.cu: +1024 bytes to align the window; templates/gemm_tma.cu: +1024 and
 * 128 bytes of mbarriers). Rows in hot_gemm_path order. */
static const hot_gemm_path_info k_paths[HOT_GEMM_PATH_COUNT] = {
    {.path = HOT_GEMM_MMA_S4, .name = "mma_s4", .templ = "templates/gemm_int.cu",
     .emulator = "tools/gemm-emu.sh", .mma = HOT_MMA_SYNC, .codes = HOT_CODES_S4_PACKED,
     .need_int4_mma = 1, .preference = 1, .tile_m = {64, 128, 256}, .tile_n = {64, 128, 256},
     .tile_m_def = {64, 128}, .tile_n_def = {64, 128}, .k_step = 64, .k_max_steps = 4,
     .tile_k_def = 128, .warps = HOT_WARPS_FREE, .stages_min = 2, .stages_max = 6,
     .stages_def = {4, 3}},
    {.path = HOT_GEMM_MMA_S8, .name = "mma_s8", .templ = "templates/gemm_int.cu",
     .emulator = "tools/gemm-emu.sh", .mma = HOT_MMA_SYNC, .codes = HOT_CODES_S8, .preference = 0,
     .tile_m = {64, 128, 256}, .tile_n = {64, 128, 256}, .tile_m_def = {64, 128},
     .tile_n_def = {64, 128}, .k_step = 32, .k_max_steps = 4, .tile_k_def = 64,
     .warps = HOT_WARPS_FREE, .stages_min = 2, .stages_max = 6, .stages_def = {4, 3}},
    {.path = HOT_GEMM_WGMMA_S8, .name = "wgmma_s8", .templ = "templates/gemm_wgmma.cu",
     .emulator = "tools/gemm-emu.sh", .mma = HOT_MMA_WGMMA, .codes = HOT_CODES_S8, .need_wgmma = 1,
     .warps_n = 1, .preference = 2, .tile_m = {64, 128}, .tile_n = {64, 128, 256},
     .tile_m_def = {128, 128}, .tile_n_def = {128, 256}, .k_step = 128, .k_max_steps = 1,
     .tile_k_def = 128, .warps = HOT_WARPS_WARPGROUP, .stages_min = 3, .stages_max = 8,
     .stages_def = {4, 4}, .smem_extra = 1024},
    {.path = HOT_GEMM_TMA_S8, .name = "tma_s8", .templ = "templates/gemm_tma.cu",
     .emulator = "tools/tma-emu.sh", .mma = HOT_MMA_WGMMA, .codes = HOT_CODES_S8, .need_wgmma = 1,
     .need_tma = 1, .warps_select = 2, .warps_n = 2, .preference = 3, .tile_m = {64, 128},
     .tile_n = {64, 128, 256}, .tile_m_def = {128, 128}, .tile_n_def = {128, 256}, .k_step = 128,
     .k_max_steps = 1, .tile_k_def = 128, .warps = HOT_WARPS_WARPGROUP, .stages_min = 2,
     .stages_max = 8, .stages_def = {4, 4}, .smem_extra = 1024 + 128},
    /* Recipe nvfp4's block-scaled GEMMs (CONTRACT.md 20.5) as the CPU backend runs them
     * (plan_layer_cpu): no arch has block_scaled_mma, so no GPU plan takes these rows and they
     * have no template (sm_120a's kernels are the rows mma_nvfp4 and mma_mxfp8 below).
     * K steps are one scale block, so k_pad is K rounded up to the block. */
    {.path = HOT_GEMM_BS_NVFP4, .name = "bs_nvfp4", .mma = HOT_MMA_BLOCK_SCALED,
     .codes = HOT_CODES_NVFP4, .need_block_scaled = 1, .preference = -1, .tile_m = {64, 128, 256},
     .tile_n = {64, 128, 256}, .tile_m_def = {64, 128}, .tile_n_def = {64, 128}, .k_step = 16,
     .k_max_steps = 1, .tile_k_def = 16, .warps = HOT_WARPS_FREE, .stages_min = 2,
     .stages_max = 6, .stages_def = {4, 3}},
    {.path = HOT_GEMM_BS_MXFP8, .name = "bs_mxfp8", .mma = HOT_MMA_BLOCK_SCALED,
     .codes = HOT_CODES_MXFP8, .need_block_scaled = 1, .preference = -1, .tile_m = {64, 128, 256},
     .tile_n = {64, 128, 256}, .tile_m_def = {64, 128}, .tile_n_def = {64, 128}, .k_step = 32,
     .k_max_steps = 1, .tile_k_def = 32, .warps = HOT_WARPS_FREE, .stages_min = 2,
     .stages_max = 6, .stages_def = {4, 3}},
    /* The NVFP4 GEMM on sm_120a's block-scaled mma.sync (templates/gemm_nvfp4.cu, CONTRACT.md
     * 20.9): K steps of 64 (four scale blocks), K tiles of one or two of them, one shared-memory
     * stage (static shared memory), warps free. */
    {.path = HOT_GEMM_MMA_NVFP4, .name = "mma_nvfp4", .templ = "templates/gemm_nvfp4.cu",
     .emulator = "tools/nvfp4-emu.sh", .mma = HOT_MMA_BLOCK_SCALED, .codes = HOT_CODES_NVFP4,
     .need_mma_sync_nvfp4 = 1, .preference = 0, .tile_m = {64, 128}, .tile_n = {64, 128},
     .tile_m_def = {64, 128}, .tile_n_def = {64, 128}, .k_step = 64, .k_max_steps = 2,
     .tile_k_def = 128, .warps = HOT_WARPS_FREE, .stages_min = 1, .stages_max = 1,
     .stages_def = {1, 1}},
    /* The MXFP8 g_w GEMM on the same arch's block-scaled mma.sync (kind::mxf8f6f4, one 32-value
     * block per instruction; templates/gemm_mxfp8.cu, CONTRACT.md 20.10): K steps of 32, K tiles
     * of one to four of them, one shared-memory stage, warps free; K padded to the 32-value block
     * only (k_ragged: the last K tile zero-filled), so it reads the saved x^ in place. */
    {.path = HOT_GEMM_MMA_MXFP8, .name = "mma_mxfp8", .templ = "templates/gemm_mxfp8.cu",
     .emulator = "tools/nvfp4-emu.sh", .mma = HOT_MMA_BLOCK_SCALED, .codes = HOT_CODES_MXFP8,
     .need_mma_sync_nvfp4 = 1, .preference = 0, .tile_m = {64, 128}, .tile_n = {64, 128},
     .tile_m_def = {64, 128}, .tile_n_def = {64, 128}, .k_step = 32, .k_max_steps = 4,
     .tile_k_def = 128, .warps = HOT_WARPS_FREE, .stages_min = 1, .stages_max = 1,
     .stages_def = {1, 1}, .k_ragged = 1},
};

const hot_gemm_path_info *plan_gemm_path_info(hot_gemm_path path) {
  return ((int)path >= 0 && path < HOT_GEMM_PATH_COUNT) ? &k_paths[path] : NULL;
}

const char *plan_gemm_path_name(hot_gemm_path v) {
  const hot_gemm_path_info *g = plan_gemm_path_info(v);
  return g ? g->name : "?";
}

int plan_gemm_path_parse(const char *name, hot_gemm_path *out) {
  if (!name) return -1;
  for (int i = 0; i < HOT_GEMM_PATH_COUNT; ++i)
    if (strcmp(name, k_paths[i].name) == 0) {
      *out = k_paths[i].path;
      return 0;
    }
  return -1;
}

int plan_gemm_path_available(const hot_gemm_path_info *path, const hot_arch_caps *caps) {
  if (!path || !caps) return 0;
  return (!path->need_int4_mma || caps->int4_mma) && (!path->need_wgmma || caps->wgmma) &&
         (!path->need_tma || caps->tma) && (!path->need_block_scaled || caps->block_scaled_mma) &&
         (!path->need_mma_sync_nvfp4 || caps->mma_sync_nvfp4);
}

/* A path with a selector takes only that warps_n request; one without takes any request (the
 * preference order lets a selected path win over it). */
static int path_selected(const hot_gemm_path_info *g, int warps_n) {
  return !g->warps_select || warps_n == g->warps_select;
}

hot_gemm_path plan_gemm_path_choose(const hot_arch_caps *caps, int warps_n, int bits) {
  const hot_gemm_path_info *best = NULL;
  for (int i = 0; i < HOT_GEMM_PATH_COUNT; ++i) {
    const hot_gemm_path_info *g = &k_paths[i];
    if (!plan_gemm_path_available(g, caps) || bits > k_codes[g->codes].bits ||
        k_codes[g->codes].block || !path_selected(g, warps_n))
      continue;
    if (!best || g->preference > best->preference) best = g;
  }
  return best ? best->path : HOT_GEMM_MMA_S8;
}

hot_gemm_path plan_block_path_choose(const hot_arch_caps *caps, hot_codes codes) {
  const hot_gemm_path_info *best = NULL;
  for (int i = 0; i < HOT_GEMM_PATH_COUNT; ++i) {
    const hot_gemm_path_info *g = &k_paths[i];
    if (g->codes != codes || !g->templ || !plan_gemm_path_available(g, caps)) continue;
    if (!best || g->preference > best->preference) best = g;
  }
  return best ? best->path : HOT_GEMM_PATH_COUNT;
}

/* ---- recipe nvfp4's other GPU kernels ------------------------------------------------------ */

/* What a GPU plan of recipe nvfp4 runs besides its two GEMMs (CONTRACT.md 20.6), for the archs
 * with the block-scaled mma.sync (the kernels are written and compiled for those only); a row
 * without a template would be a kernel not written yet. ABC needs no kernel of its own: the
 * MXFP8 g_w GEMM reads the saved x^ in place (templates/gemm_mxfp8.cu takes any Kpad that is a
 * multiple of 32, zero-filling its last K tile past Kpad). */
static const struct {
  const char *what, *templ;
} k_nvfp4_kernels[] = {
    {"HQ's NVFP4 quantisers", "templates/hq_nvfp4.cu"},
    {"HLA's MXFP8 quantisers", "templates/hla_mxfp8.cu"},
};

/* Whether a GPU plan runs the recipe's kernels: the descriptors gen/kernels/hq_nvfp4.c,
 * hla_mxfp8.c, gemm_nvfp4.c and gemm_mxfp8.c plan them on every arch that has the paths and the
 * kernels above (sm_120a); the other archs refuse the recipe naming what they lack. */
static const int k_nvfp4_plan_wired = 1;

/* Appends sep (when buf is not empty) and item to buf (used bytes so far in *used). */
static void missing_add(char *buf, size_t n, size_t *used, const char *sep, const char *item) {
  if (*used >= n) return;
  const int w = snprintf(buf + *used, n - *used, "%s%s", *used ? sep : "", item);
  *used += w > 0 ? (size_t)w : 0;
}

const char *plan_nvfp4_missing(const hot_arch_caps *caps, char *buf, size_t n) {
  if (!buf || n == 0) return buf;
  buf[0] = '\0';
  const char *absent[2 + sizeof k_nvfp4_kernels / sizeof k_nvfp4_kernels[0]];
  size_t na = 0, used = 0;
  if (plan_block_path_choose(caps, HOT_CODES_NVFP4) == HOT_GEMM_PATH_COUNT)
    absent[na++] = "the NVFP4 g_x GEMM";
  if (plan_block_path_choose(caps, HOT_CODES_MXFP8) == HOT_GEMM_PATH_COUNT)
    absent[na++] = "the MXFP8 g_w GEMM";
  for (size_t i = 0; i < sizeof k_nvfp4_kernels / sizeof k_nvfp4_kernels[0]; ++i)
    if (!caps || !caps->mma_sync_nvfp4 || !k_nvfp4_kernels[i].templ)
      absent[na++] = k_nvfp4_kernels[i].what;
  for (size_t i = 0; i < na; ++i) {
    if (i == 0) missing_add(buf, n, &used, "", "not written for that arch yet: ");
    missing_add(buf, n, &used, i ? ", " : "", absent[i]);
  }
  if (!k_nvfp4_plan_wired)
    missing_add(buf, n, &used, "; ", "its kernels are not wired into a GPU plan yet");
  return buf;
}

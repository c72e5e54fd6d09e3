-- hot/schema.lua — every field a spec may set: its type, range and one-line doc.
-- Defaults are not written here: they come from the C planner (plan_spec_defaults), one source
-- of truth for specs and for layers described directly in C; `hot-gen --help-spec` prints both.
--
-- Field kinds: int (optional min/max/pow2), bool, enum (values), string, list, table (sub-schema).

local S = {}

local function f(kind, doc, t)
  t = t or {}
  t.kind, t.doc = kind, doc
  return t
end

S.quant_rules = { "absmax", "sawb" }
S.archs = { "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a" }
S.recipes = { "hot", "paper", "paper_code" }

S.tile = {
  order = { "tile_m", "tile_n", "tile_k", "warps_m", "warps_n", "stages" },
  fields = {
    tile_m = f("int", "GEMM block tile along M (64, 128 or 256; sm_90a wgmma: 64 or 128; 0 = planner's choice)", { min = 0, max = 256 }),
    tile_n = f("int", "GEMM block tile along N (64, 128 or 256; 0 = planner's choice)", { min = 0, max = 256 }),
    tile_k = f("int", "GEMM block tile along K in elements (a multiple of the MMA's K; sm_90a wgmma: 128; 0 = default)", { min = 0, max = 512 }),
    warps_m = f("int", "warps per block along M (0 = default 2; sm_90a wgmma: tile_m / 16, the planner's)", { min = 0, max = 8 }),
    warps_n = f("int", "warps per block along N (0 = default 2; sm_90a wgmma: 1)", { min = 0, max = 8 }),
    stages = f("int", "cp.async pipeline stages (0 = default; 2..6; sm_90a wgmma: 3..6)", { min = 0, max = 6 }),
  },
}

S.hq = {
  order = { "enabled", "block", "bits", "round", "w_bits", "scale", "w_scale", "pad" },
  fields = {
    enabled = f("bool", "quantize the g_x GEMM with HQ (false: fp32 product, for ablations)"),
    block = f("int", "Hadamard block b along O (power of two in [2, 256])", { min = 2, max = 256, pow2 = true }),
    bits = f("int", "bits of the g' codes", { min = 2, max = 8 }),
    round = f("enum", "rounding of the g' codes: sr (stochastic, unbiased) or rtn (to nearest, ties to even)", { values = { "sr", "rtn" } }),
    w_bits = f("int", "bits of the w' codes (round to nearest)", { min = 2, max = 8 }),
    scale = f("enum", "scale granularity of g': per tensor (all samples), per sample, per token, or auto (LQS decides)", { values = { "auto", "tensor", "sample", "token" } }),
    w_scale = f("enum", "scale rule of w': absmax or sawb", { values = S.quant_rules }),
    pad = f("bool", "zero-pad O to a multiple of b (false: shrink b to divide O, as the paper's code)"),
  },
}

S.hla = {
  order = { "enabled", "block", "selection", "keep", "rank", "layout", "pad", "scale", "bits", "round", "x_bits", "x_scale" },
  fields = {
    enabled = f("bool", "project the g_w GEMM with HLA (false: fp32 product)"),
    block = f("int", "token block p (power of two in [2, 1024]; 0 = largest power of two dividing L)", { min = 0, max = 1024, pow2 = true, zero_ok = true }),
    selection = f("enum", "Walsh basis kept: tri (LBP-WHT triangle), prefix (lowest sequencies), full", { values = { "tri", "prefix", "full" } }),
    keep = f("int", "tri: percentage P of the low-pass triangle (only with selection tri)", { min = 1, max = 50 }),
    rank = f("int", "prefix: number r of lowest sequencies kept (only with selection prefix)", { min = 1, max = 1024 }),
    layout = f("enum", "token blocking: per sample, across the flat batch, or auto (sample when p divides L)", { values = { "sample", "flat", "auto" } }),
    pad = f("bool", "zero-pad the token axis to a multiple of p (false: p must divide it)"),
    scale = f("enum", "scale granularity of g^ and x^: per tensor (all samples), per sample (layout sample only), or auto (sample under layout sample, else tensor)", { values = { "auto", "tensor", "sample" } }),
    bits = f("int", "bits of the g^ codes", { min = 2, max = 8 }),
    round = f("enum", "rounding of the g^ codes: sr (stochastic, unbiased) or rtn (to nearest, ties to even)", { values = { "sr", "rtn" } }),
    x_bits = f("int", "bits of the x^ codes saved by ABC (round to nearest)", { min = 2, max = 8 }),
    x_scale = f("enum", "scale rule of x^: absmax or sawb", { values = S.quant_rules }),
  },
}

S.abc = {
  order = { "enabled" },
  fields = {
    enabled = f("bool", "keep the int8 HLA projection of x in the forward pass instead of x"),
  },
}

S.linear = {
  order = { "name", "in_features", "out_features", "tokens", "bias", "dtype", "hq", "hla", "abc", "tile_gx", "tile_gw" },
  required = { "name", "in_features", "out_features" },
  fields = {
    name = f("string", "layer name, unique in the model: [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (a file-name component)"),
    in_features = f("int", "I: input features (for an im2col convolution C_in * k * k)", { min = 1, max = 1 << 29 }),
    out_features = f("int", "O: output features", { min = 1, max = 1 << 29 }),
    tokens = f("int", "L of this layer when it differs from the model's (im2col: H_out * W_out)", { min = 1, max = 1 << 29 }),
    bias = f("bool", "compute the bias gradient g_b"),
    dtype = f("enum", "dtype of x, w and g_y as the kernels receive them", { values = { "f32", "bf16", "f16" } }),
    hq = f("table", "HQ, the g_x path (see hq.*)", { schema = S.hq }),
    hla = f("table", "HLA, the g_w path (see hla.*)", { schema = S.hla }),
    abc = f("table", "ABC, the forward buffer (see abc.*)", { schema = S.abc }),
    tile_gx = f("table", "GEMM tiles of the g_x product (see tile.*)", { schema = S.tile }),
    tile_gw = f("table", "GEMM tiles of the g_w product (see tile.*)", { schema = S.tile }),
  },
}

S.target = {
  order = { "arch" },
  required = { "arch" },
  fields = {
    arch = f("list", "target archs: one name or a list of sm_80, sm_86, sm_89, sm_90, sm_90a", { values = S.archs }),
  },
}

S.model = {
  order = { "name", "batch", "tokens", "recipe", "seed", "target", "layers", "sweep" },
  required = { "name", "batch", "tokens", "layers" },
  fields = {
    name = f("string", "model name: [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (a file-name component)"),
    batch = f("int", "B: samples per step", { min = 1, max = 1 << 24 }),
    tokens = f("int", "L: tokens per sample (T = B * L)", { min = 1, max = 1 << 29 }),
    recipe = f("enum", "defaults: hot (project), paper (the contract's defaults), paper_code (the authors' code)", { values = S.recipes }),
    seed = f("int", "64-bit Philox key of the stochastic rounding", { min = 0 }),
    target = f("table", "hot.target { arch = ... } (default sm_90)", { schema = S.target }),
    layers = f("layers", "list of hot.linear { ... }"),
    sweep = f("sweep", "hot.sweep { [\"field.path\"] = { values... } }: the search space of hot-tune (hq.*, hla.*, abc.* and tile_gx.* / tile_gw.* fields)"),
  },
}

return S

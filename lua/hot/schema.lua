-- hot/schema.lua — every field a spec may set: its type, range and one-line doc.
-- The fields of hq, hla, abc, tile and the layer's bias and dtype are not written here: they, their
-- ranges, docs and defaults come from gen/field_list.h (see below); `hot-gen --help-spec` prints
-- them. What is written here: the model, its target and the layer's sizes and sub-tables.
--
-- Field kinds: int (optional min/max/pow2), key (a 64-bit unsigned integer: the seed), bool, enum
-- (values), string, list, table (sub-schema).

local S = {}
local sub, ipairs, error, concat = string.sub, ipairs, error, table.concat

local function f(kind, doc, t)
  t = t or {}
  t.kind, t.doc = kind, doc
  return t
end

-- The target archs: the names of the C arch table (gen/plan_tables.c), handed over by the loader.
S.archs = spec_fields.archs
S.recipes = spec_fields.enums.recipe

-- The fields of a layer come from the C table gen/field_list.h (the loader hands its rows over as
-- spec_fields): one declaration per field for the DSL, the C copy, sweeps and the C API. A row
-- "hq.block" is field block of S.hq; "bias" is a field of hot.linear itself; the rows of tile_gx
-- describe hot.tile (tile_gw has the same ones). Rows keep the table's order.
local function group(name)
  local g = { order = {}, fields = {} }
  local plen = #name + 1
  for _, row in ipairs(spec_fields.rows) do
    if sub(row.path, 1, plen) == name .. "." then
      local key = sub(row.path, plen + 1)
      g.order[#g.order + 1] = key
      g.fields[key] = f(row.kind, row.doc, { min = row.min, max = row.max, pow2 = row.pow2 or nil,
                                           zero_ok = row.zero_ok or nil, values = row.values })
    end
  end
  return g
end
local function layer_row(key)
  for _, row in ipairs(spec_fields.rows) do
    if row.path == key then return f(row.kind, row.doc, { values = row.values }) end
  end
  error("schema: no row " .. key .. " in spec_fields")
end

S.tile = group("tile_gx")
S.hq = group("hq")
S.hla = group("hla")
S.abc = group("abc")

S.linear = {
  order = { "name", "in_features", "out_features", "tokens", "bias", "dtype", "hq", "hla", "abc", "tile_gx", "tile_gw" },
  required = { "name", "in_features", "out_features" },
  fields = {
    name = f("string", "layer name, unique in the model: [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (a file-name component)"),
    in_features = f("int", "I: input features (for an im2col convolution C_in * k * k)", { min = 1, max = 1 << 29 }),
    out_features = f("int", "O: output features", { min = 1, max = 1 << 29 }),
    tokens = f("int", "L of this layer when it differs from the model's (im2col: H_out * W_out)", { min = 1, max = 1 << 29 }),
    bias = layer_row("bias"),
    dtype = layer_row("dtype"),
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
    arch = f("list", "target archs: one name or a list of " .. concat(S.archs, ", "), { values = S.archs }),
  },
}

S.model = {
  order = { "name", "batch", "tokens", "recipe", "seed", "target", "layers", "sweep" },
  required = { "name", "batch", "tokens", "layers" },
  fields = {
    name = f("string", "model name: [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (a file-name component)"),
    batch = f("int", "B: samples per step", { min = 1, max = 1 << 24 }),
    tokens = f("int", "L: tokens per sample (T = B * L)", { min = 1, max = 1 << 29 }),
    recipe = f("enum", "defaults: hot (project), paper (the contract's defaults), paper_code (the authors' code), nvfp4 (NVFP4/MXFP8 codes, CPU backend only)", { values = S.recipes }),
    seed = f("key", "64-bit Philox key of the stochastic rounding (above 2^63 - 1: a string, \"0x...\" or decimal)"),
    target = f("table", "hot.target { arch = ... } (default " .. spec_fields.default_arch .. ")", { schema = S.target }),
    layers = f("layers", "list of hot.linear { ... }"),
    sweep = f("sweep", "hot.sweep { [\"field.path\"] = { values... } }: the search space of hot-tune (hq.*, hla.*, abc.* and tile_gx.* / tile_gw.* fields)"),
  },
}

return S

-- hot-tune's test spec: two small layers and a sweep of both kinds of axes (accuracy: HQ block,
-- g' scale, HLA keep; speed: the g_x GEMM's tile_m and pipeline depth), small enough that an
-- accuracy sweep runs in seconds on the CPU twins.
local hot = require "hot"

return hot.model {
  name = "tune_tiny",
  batch = 2,
  tokens = 64,
  target = hot.target { arch = "sm_90" },
  layers = {
    hot.linear { name = "a", in_features = 64, out_features = 96 },
    hot.linear { name = "b", in_features = 80, out_features = 48, dtype = "bf16" },
  },
  sweep = hot.sweep {
    ["hq.block"] = { 8, 16 },
    ["hq.scale"] = { "tensor", "token" },
    ["hla.keep"] = { 25, 50 },
    ["tile_gx.tile_m"] = { 64, 128 },
    ["tile_gx.stages"] = { 3, 4 },
  },
}

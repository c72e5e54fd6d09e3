-- hot-tune's test spec for recipe nvfp4 (CPU backend only): one small layer and a sweep of the
-- knobs the format leaves free (HLA block p and keep), small enough for seconds on the CPU twins.
local hot = require "hot"

return hot.model {
  name = "tune_nvfp4",
  batch = 2,
  tokens = 64,
  recipe = hot.recipe.nvfp4,
  target = hot.target { arch = "sm_90" },
  layers = {
    hot.linear { name = "a", in_features = 64, out_features = 96 },
  },
  sweep = hot.sweep {
    ["hla.block"] = { 32, 64 },
    ["hla.keep"] = { 25, 50 },
  },
}

-- expect: sweep_bad.lua:4: model: sweep: "hla.blok" is not an integer field of a layer
-- known-issue: model-level messages name lua/hot/init.lua:252 instead of the spec line (return hot.model {...} is a tail call)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
  },
  sweep = hot.sweep { ["hla.blok"] = { 16, 32 } },
}

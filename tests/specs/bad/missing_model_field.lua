-- expect: missing_model_field.lua:4: model: missing field tokens
-- known-issue: model-level messages name lua/hot/init.lua:252 instead of the spec line (return hot.model {...} is a tail call)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
  },
}

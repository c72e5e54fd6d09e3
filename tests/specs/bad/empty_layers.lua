-- expect: empty_layers.lua:4: model: layers must be a non-empty list of hot.linear { ... }
-- known-issue: model-level messages name lua/hot/init.lua:252 instead of the spec line (return hot.model {...} is a tail call)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {},
}

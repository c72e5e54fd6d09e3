-- expect: empty_layers.lua:5: model: layers must be a non-empty list of hot.linear { ... }
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {},
}

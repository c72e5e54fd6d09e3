-- expect: sweep_empty.lua:3: model: sweep: hot.sweep {} names no field (give at least one axis, or leave sweep out)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
  },
  sweep = hot.sweep {},
}

-- expect: negative_batch.lua:4: model: batch must be in [1, 16777216] (got -4)
local hot = require "hot"
return hot.model {
  name = "m", batch = -4, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
  },
}

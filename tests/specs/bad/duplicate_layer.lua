-- expect: duplicate_layer.lua:7: layer 'fc': duplicate layer name (first declared at line 6)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
    hot.linear { name = "fc", in_features = 64, out_features = 128 },
  },
}

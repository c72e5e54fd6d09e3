-- expect: not_integer.lua:6: layer 'fc': out_features must be an integer (got 64.5)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64.5 },
  },
}

-- expect: out_of_range.lua:7: layer 'fc': hq.bits must be in [2, 8] (got 9)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64,
                 hq = hot.hq { bits = 9 } },
  },
}

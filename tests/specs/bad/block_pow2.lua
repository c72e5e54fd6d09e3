-- expect: block_pow2.lua:7: layer 'fc': hq.block must be a power of two in [2, 256] (got 24)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 96,
                 hq = hot.hq { block = 24 } },
  },
}

-- expect: hla_block_range.lua:7: layer 'fc': hla.block must be 0 or a power of two in [2, 1024] (got 2048)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64,
                 hla = hot.hla { block = 2048 } },
  },
}

-- expect: prefix_rank.lua:7: layer 'fc': hla.rank must be in [1, 16] for hla.block 16 (got 32)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  target = hot.target { arch = "sm_80" },
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64,
                 hla = hot.hla { block = 16, selection = "prefix", rank = 32 } },
  },
}

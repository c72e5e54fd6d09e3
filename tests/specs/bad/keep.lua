-- expect: keep.lua:7: layer 'fc2': hla.keep must be in [1, 50] (got 60)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc2", in_features = 64, out_features = 64,
                 hla = hot.hla { block = 64, keep = 60 } },
  },
}

-- expect: bad_enum.lua:7: layer 'fc': hq.scale must be one of auto, tensor, sample, token (got "channel")
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64,
                 hq = hot.hq { scale = "channel" } },
  },
}

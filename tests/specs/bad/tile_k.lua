-- expect: tile_k.lua:7: layer 'fc': tile_gx.tile_k must be a multiple of 64 in [64, 256] for mma_s4 (got 96)
local hot = require "hot"
return hot.model {
  name = "m", batch = 8, tokens = 64,
  target = hot.target { arch = "sm_86" },
  layers = {
    hot.linear { name = "fc", in_features = 256, out_features = 256,
                 tile_gx = hot.tile { tile_k = 96 } },
  },
}

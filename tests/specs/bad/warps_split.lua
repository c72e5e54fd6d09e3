-- expect: warps_split.lua:7: layer 'fc': tile_gx: tile 64x64 does not split into 8x1 warps of mma tiles
local hot = require "hot"
return hot.model {
  name = "m", batch = 8, tokens = 64,
  target = hot.target { arch = "sm_80" },
  layers = {
    hot.linear { name = "fc", in_features = 256, out_features = 256,
                 tile_gx = hot.tile { tile_m = 64, tile_n = 64, warps_m = 8, warps_n = 1 } },
  },
}

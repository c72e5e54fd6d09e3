-- expect: sweep_bad.lua:3: model: sweep: "hla.blok" is not a sweepable field of a layer (an int, bool or enum field of hq, hla, abc, tile_gx or tile_gw)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
  },
  sweep = hot.sweep { ["hla.blok"] = { 16, 32 } },
}

-- expect: conv_bad.lua:6: layer 'c1': kernel must be an integer in [1, 536870912] (got 0)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.conv2d { name = "c1", in_channels = 3, out_channels = 64, kernel = 0, out_h = 8, out_w = 8 },
  },
}

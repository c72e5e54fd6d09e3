-- expect: conv_overflow.lua:7: layer 'c1': in_channels must be an integer in [1, 536870912] (got 4611686018427387905)
-- expect: conv_overflow.lua:8: layer 'c2': in_channels * kernel^2 = 536870912 * 2^2 exceeds 536870912 (the largest in_features)
-- expect: conv_overflow.lua:9: layer 'c3': out_h * out_w = 65536 * 65536 exceeds 536870912 (the largest tokens)
-- expect-lines: 3
local hot = require "hot"
return hot.model { name = "m", batch = 2, tokens = 64, layers = {
  hot.conv2d { name = "c1", in_channels = (1 << 62) + 1, out_channels = 8, kernel = 2, out_h = 4, out_w = 4 },
  hot.conv2d { name = "c2", in_channels = 1 << 29, out_channels = 8, kernel = 2, out_h = 4, out_w = 4 },
  hot.conv2d { name = "c3", in_channels = 8, out_channels = 8, kernel = 3, out_h = 65536, out_w = 65536 },
} }

-- expect: conv_derived.lua:4: layer 'c': in_features cannot be set on hot.conv2d (it is derived from the convolution's sizes)
local hot = require "hot"
return hot.model { name = "m", batch = 2, tokens = 64, layers = {
  hot.conv2d { name = "c", in_channels = 8, out_channels = 8, kernel = 3, out_h = 4, out_w = 4, in_features = 5 },
} }

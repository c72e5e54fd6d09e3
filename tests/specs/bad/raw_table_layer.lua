-- expect: raw_table_layer.lua:3: model: layers[1] must be hot.linear { ... } or hot.conv2d { ... } (got a table)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    { name = "fc", in_features = 64, out_features = 64 },
  },
}

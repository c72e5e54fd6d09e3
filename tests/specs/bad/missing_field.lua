-- expect: missing_field.lua:6: layer 'fc': missing field out_features
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64 },
  },
}

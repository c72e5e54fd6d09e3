-- expect: missing_model_field.lua:3: model: missing field tokens
local hot = require "hot"
return hot.model {
  name = "m", batch = 2,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
  },
}

-- expect: wrong_type.lua:6: layer 'fc': in_features must be an integer (got "768")
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = "768", out_features = 64 },
  },
}

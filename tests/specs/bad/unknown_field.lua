-- expect: unknown_field.lua:6: layer 'fc': unknown field in_featurs (did you mean 'in_features'?)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_featurs = 64, out_features = 64 },
  },
}

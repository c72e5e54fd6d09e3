-- expect: bad_name.lua:6: layer 'fc 1': name must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (got "fc 1")
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc 1", in_features = 64, out_features = 64 },
  },
}

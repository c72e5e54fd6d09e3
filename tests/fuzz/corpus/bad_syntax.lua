-- expect: syntax.lua:7: '}' expected (to close '{' at line 5) near 'hot'
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 }
    hot.linear { name = "fc2", in_features = 64, out_features = 64 },
  },
}

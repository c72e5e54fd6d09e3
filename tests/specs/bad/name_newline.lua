-- expect: name_newline.lua:6: layer 'fc\010evil.lua:1: fake': name must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (got "fc\010evil.lua:1: fake")
-- expect-lines: 1
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64, layers = {
    hot.linear { name = "fc\nevil.lua:1: fake", in_features = 64, out_features = 64 },
  },
}

-- expect: name_dotdot.lua:6: model: name must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (got "..")
-- expect: name_dotdot.lua:8: layer '.': name must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (got ".")
-- expect: name_dotdot.lua:9: layer '-rf': name must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,62} (got "-rf")
-- expect-lines: 3
local hot = require "hot"
return hot.model {
  name = "..", batch = 2, tokens = 64, layers = {
    hot.linear { name = ".", in_features = 64, out_features = 64 },
    hot.linear { name = "-rf", in_features = 64, out_features = 64 },
  },
}

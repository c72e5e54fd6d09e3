-- expect: three_errors.lua:8: layer 'a': hq.block must be a power of two in [2, 256] (got 12)
-- expect: three_errors.lua:9: layer 'b': bias must be true or false (got "yes")
-- expect: three_errors.lua:10: layer 'c': hla.keep must be in [1, 50] (got 75)
-- expect-lines: 3
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64, layers = {
    hot.linear { name = "a", in_features = 64, out_features = 64, hq = { block = 12 } },
    hot.linear { name = "b", in_features = 64, out_features = 64, bias = "yes" },
    hot.linear { name = "c", in_features = 64, out_features = 64, hla = { keep = 75 } },
  },
}

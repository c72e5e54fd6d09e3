-- expect: huge_float.lua:6: model: batch must be in [1, 16777216] (got 1e+300)
-- expect: huge_float.lua:6: model: seed must be an integer in [0, 9223372036854775807], or a string for the whole 64-bit range [0, 18446744073709551615] (e.g. "0xFFFFFFFFFFFFFFFF") (got 9.2233720368548e+18)
-- expect: huge_float.lua:7: layer 'fc': out_features must be in [1, 536870912] (got -1e+20)
local hot = require "hot"
return hot.model {
  name = "m", batch = 1e300, tokens = 64, seed = 2^63,
  layers = { hot.linear { name = "fc", in_features = 64, out_features = -1e20 } },
}

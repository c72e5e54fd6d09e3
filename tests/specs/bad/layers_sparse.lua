-- expect: layers_sparse.lua:4: model: layers has a hole: layers[2] is nil but index 1099511627776 is set (2 entries); write a list without nil
-- expect-lines: 1
local hot = require "hot"
return hot.model { name = "m", batch = 2, tokens = 64, layers = {
  hot.linear { name = "a", in_features = 64, out_features = 64 },
  [2^40] = hot.linear { name = "b", in_features = 64, out_features = 64 } } }

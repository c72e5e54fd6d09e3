-- expect: layers_hole.lua:6: model: layers has a hole: layers[2] is nil but index 3 is set (2 entries); write a list without nil
-- expect-lines: 1
local hot = require "hot"
local a = hot.linear { name = "a", in_features = 64, out_features = 64 }
local c = hot.linear { name = "c", in_features = 64, out_features = 64 }
return hot.model { name = "m", batch = 2, tokens = 64, layers = { a, nil, c } }

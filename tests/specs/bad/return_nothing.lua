-- expect: return_nothing.lua:4: the spec must return hot.model { ... } (got nil)
-- expect-lines: 1
local hot = require "hot"
local m = hot.model { name = "m", batch = 1, tokens = 1, layers = { hot.linear { name = "fc", in_features = 8, out_features = 8 } } }

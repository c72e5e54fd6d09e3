-- expect: readonly_pairs.lua:8: a validated hot.model is read-only
-- expect-lines: 1
-- pairs() on a validated model used to hand out the real table (its second result).
local hot = require "hot"
local m = hot.model { name = "m", batch = 2, tokens = 64,
  layers = { hot.linear { name = "fc", in_features = 64, out_features = 64 } } }
local _, inner = pairs(m)
inner.name = "x"
return m

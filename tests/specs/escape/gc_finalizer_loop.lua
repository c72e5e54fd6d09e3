-- expect: gc_finalizer_loop.lua:4:
-- A finalizer runs with hooks off (lgc.c GCTM), so neither the instruction nor the time limit stops it.
local hot = require "hot"
setmetatable({}, { __gc = function() while true do end end })
return hot.model { name = "m", batch = 1, tokens = 1,
                   layers = { hot.linear { name = "fc", in_features = 8, out_features = 8 } } }

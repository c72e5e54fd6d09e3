-- expect: error_level0.lua:4: no location from the spec
-- expect-lines: 1
local hot = require "hot"
local function refuse() error("no location from the spec", 0) end
refuse()
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

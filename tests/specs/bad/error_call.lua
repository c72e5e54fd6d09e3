-- expect: error_call.lua:4: this spec refuses to load
local hot = require "hot"
local function check(ok) if not ok then error("this spec refuses to load", 2) end end
check(false)
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

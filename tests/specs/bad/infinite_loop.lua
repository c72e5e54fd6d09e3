-- expect: infinite_loop.lua:4: spec exceeded its 
local hot = require "hot"
local n = 0
while true do n = n + 1 end
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

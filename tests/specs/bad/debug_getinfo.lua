-- expect: debug_getinfo.lua:3: attempt to index a nil value (global 'debug')
local hot = require "hot"
local info = debug.getinfo(1)
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

-- expect: load.lua:3: attempt to call a nil value (global 'load')
local hot = require "hot"
local f = load("return 1")
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

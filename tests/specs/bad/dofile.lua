-- expect: dofile.lua:3: attempt to call a nil value (global 'dofile')
local hot = require "hot"
dofile("/etc/passwd")
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

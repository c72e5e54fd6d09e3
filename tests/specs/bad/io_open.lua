-- expect: io_open.lua:3: attempt to index a nil value (global 'io')
local hot = require "hot"
local f = io.open("/etc/passwd")
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

-- expect: string_dump.lua:3: attempt to call a nil value (field 'dump')
local hot = require "hot"
local code = string.dump(function() return 1 end)
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

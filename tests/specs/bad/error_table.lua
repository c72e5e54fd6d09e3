-- expect: error_table.lua:4: error object is a table value
-- expect-lines: 1
local hot = require "hot"
error({ code = 7 })
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

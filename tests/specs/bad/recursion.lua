-- expect: recursion.lua:3: stack overflow
local hot = require "hot"
local function f(n) return 1 + f(n + 1) end
f(1)
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

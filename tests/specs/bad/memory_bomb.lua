-- expect: memory_bomb.lua:4: spec exceeded its memory limit of 64 MiB
local hot = require "hot"
local t = {}
for i = 1, 1e9 do t[i] = { i, i, i, i } end
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

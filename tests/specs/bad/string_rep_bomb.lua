-- expect: string_rep_bomb.lua:3: spec exceeded its memory limit of 64 MiB
local hot = require "hot"
local s = string.rep("x", 1 << 30)
return hot.model { name = s, batch = 1, tokens = 1, layers = {} }

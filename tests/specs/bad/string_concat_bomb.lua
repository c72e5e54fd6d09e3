-- expect: string_concat_bomb.lua:4: spec exceeded its memory limit of 64 MiB
local hot = require "hot"
local s = "0123456789abcdef"
while true do s = s .. s end
return hot.model { name = s, batch = 1, tokens = 1, layers = {} }

-- expect: pattern_bomb.lua:5:
-- string.find/match/gmatch/gsub are removed from the spec's `string`, but the string metatable's
-- __index is the real string table: s:find(...) backtracks inside one C call, beyond the hook.
local hot = require "hot"
local r = ("a"):rep(3000):find(".-.-.-.-b")
return hot.model { name = "m", batch = 1, tokens = 1,
                   layers = { hot.linear { name = "fc", in_features = 8, out_features = 8 } } }

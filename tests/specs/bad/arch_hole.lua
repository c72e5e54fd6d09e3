-- expect: arch_hole.lua:4: model: target.arch has a hole: target.arch[2] is nil but index 3 is set (2 entries); write a list without nil
local hot = require "hot"
return hot.model { name = "m", batch = 2, tokens = 64,
  target = hot.target { arch = { "sm_80", nil, "sm_86" } },
  layers = { hot.linear { name = "a", in_features = 64, out_features = 64 } } }

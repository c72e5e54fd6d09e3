-- expect: hot_internal_read.lua:3: hot._errors does not exist
local hot = require "hot"
local e = hot._errors
return hot.model { name = "m", batch = 2, tokens = 64,
  layers = { hot.linear { name = "fc", in_features = 64, out_features = 64 } } }

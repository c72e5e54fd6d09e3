-- expect: no_model.lua:3: the spec must return hot.model { ... } (got a table not made by hot.model)
local hot = require "hot"
return { name = "m", batch = 1, tokens = 1, layers = { hot.linear { name = "fc", in_features = 8, out_features = 8 } } }

-- expect: recipe_write.lua:3: hot.recipe is read-only
local hot = require "hot"
hot.recipe.fast = "hot"
return hot.model { name = "m", batch = 2, tokens = 64,
  layers = { hot.linear { name = "fc", in_features = 64, out_features = 64 } } }

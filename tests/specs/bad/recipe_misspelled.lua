-- expect: recipe_misspelled.lua:5: hot.recipe.hott does not exist (did you mean hot.recipe.hot?)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  recipe = hot.recipe.hott,
  layers = { hot.linear { name = "fc", in_features = 64, out_features = 64 } },
}

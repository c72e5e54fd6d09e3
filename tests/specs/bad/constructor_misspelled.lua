-- expect: constructor_misspelled.lua:6: hot.linaer does not exist (did you mean hot.linear?)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linaer { name = "fc", in_features = 64, out_features = 64 },
  },
}

-- expect: not_a_table.lua:6: hot.linear expects a table { ... } (got "fc")
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear "fc",
  },
}

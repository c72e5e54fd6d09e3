-- expect: hide_errors.lua:7: layer 'fc': bias must be true or false (got "yes")
-- The spec shares the DSL's module table: replacing hot._errors hides every diagnostic and an
-- invalid model loads.
local hot = require "hot"
hot._errors = function() return {} end
return hot.model { name = "m", batch = 1, tokens = 1, layers = {
  hot.linear { name = "fc", in_features = 8, out_features = 8, bias = "yes" } } }

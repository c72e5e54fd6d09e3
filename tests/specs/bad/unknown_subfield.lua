-- expect: unknown_subfield.lua:7: layer 'fc': unknown field hla.kep (did you mean 'keep'?)
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64,
                 hla = hot.hla { kep = 25 } },
  },
}

-- expect: rank_ignored.lua:6: layer 'fc': hla.rank is used only with hla.selection = "prefix" (selection is tri)
-- expect: rank_ignored.lua:8: layer 'fc2': hla.keep is used only with hla.selection = "tri" (selection is full)
-- expect-lines: 2
local hot = require "hot"
return hot.model { name = "m", batch = 2, tokens = 64, layers = {
  hot.linear { name = "fc", in_features = 64, out_features = 64,
               hla = hot.hla { block = 16, rank = 8 } },
  hot.linear { name = "fc2", in_features = 64, out_features = 64, hla = { selection = "full", keep = 25 } },
} }

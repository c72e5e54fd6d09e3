-- expect: paper_code_nopad.lua:8: layer 'qkv': hla.block 64 does not divide the sample length 197 and padding is off
local hot = require "hot"
return hot.model {
  name = "vit", batch = 4, tokens = 197,
  recipe = hot.recipe.paper_code,
  target = hot.target { arch = "sm_90" },
  layers = {
    hot.linear { name = "qkv", in_features = 768, out_features = 2304,
                 hla = hot.hla { block = 64 } },
  },
}

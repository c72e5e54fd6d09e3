-- Recipe nvfp4 on sm_120a (the arch with the block-scaled mma.sync): the NVRTC test plans every
-- layer of this spec there and compiles its kernels; every other GPU arch refuses the recipe.
-- Three layers: ragged T, I and O with the g_x GEMM's K tile 64 (o_pad 64); whole tiles with HLA
-- per sample (L = 70 padded to the block in each sample); a flat HLA layout with p = 16 and g^
-- rounded to nearest.
local hot = require "hot"

return hot.model {
  name = "nvfp4_sm120a",
  batch = 2,
  tokens = 70,
  recipe = hot.recipe.nvfp4,
  target = hot.target { arch = "sm_120a" },
  layers = {
    hot.linear { name = "ragged", in_features = 45, out_features = 50 },
    hot.linear { name = "square", in_features = 256, out_features = 256,
                 hla = hot.hla { layout = "sample" } },
    hot.linear { name = "flat", in_features = 129, out_features = 250,
                 hla = hot.hla { layout = "flat", block = 16, round = "rtn" } },
  },
}

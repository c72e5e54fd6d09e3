-- ViT-B/16 on 224x224 images: 196 patches + the class token = 197 tokens per sample.
-- The four linear layers of one encoder block, the shapes of the paper's latency table (CONTRACT.md 8).
local hot = require "hot"

return hot.model {
  name = "vit_b16",
  batch = 32,
  tokens = 197,
  recipe = hot.recipe.hot,
  target = hot.target { arch = "sm_90" },
  layers = {
    hot.linear { name = "qkv",  in_features = 768,  out_features = 2304 },
    hot.linear { name = "proj", in_features = 768,  out_features = 768 },
    hot.linear { name = "fc1",  in_features = 768,  out_features = 3072 },
    hot.linear { name = "fc2",  in_features = 3072, out_features = 768,
                 hq = hot.hq { block = 16, bits = 4, scale = "auto" },
                 hla = hot.hla { block = 64, keep = 50 } },
  },
}

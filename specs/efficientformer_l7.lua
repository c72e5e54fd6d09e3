-- EfficientFormer-L7 on 224x224 images, batch 32: its stages' linear, MLP and attention layers,
-- convolutions as im2col linear layers (CONTRACT.md 1).
--
-- Shapes: Li et al., "EfficientFormer: Vision Transformers at MobileNet Speed" (arXiv 2206.01191)
-- and its code (snap-research/EfficientFormer, models/efficientformer.py, as vendored in the
-- HOT authors' repository, model/efficientformer.py): widths 96/192/384/768, depths 6/6/18/8,
-- vit_num = 8 (all blocks of stage 4 are Meta3D), MLP ratio 4.
--  - stem: two 3x3 stride-2 convolutions, 3 -> 48 (112x112) -> 96 (56x56);
--  - stages 1-3 (Meta4D, 56x56 / 28x28 / 14x14 tokens): pooling token mixer (no weights), MLP of
--    two 1x1 convolutions dim -> 4 dim -> dim;
--  - between stages: 3x3 stride-2 convolution, dim_i -> dim_{i+1};
--  - stage 4 (Meta3D, 7x7 = 49 tokens): attention with key_dim 32, 8 heads, attn_ratio 4, so
--    qkv: 768 -> 8*32*2 + 8*128 = 1536 and proj: 1024 -> 768; MLP 768 -> 3072 -> 768;
--  - classifier 768 -> 1000 on the pooled token.
-- One layer per distinct shape (the repeated blocks of a stage share their shapes). The paper's
-- timing script (cuda_measure/measure.py) uses 49 tokens x (O, I) = (3072, 768): stage 4's fc1.
local hot = require "hot"

return hot.model {
  name = "efficientformer_l7",
  batch = 32,
  tokens = 49,                    -- stage 4 (Meta3D): 7x7 tokens per sample
  recipe = hot.recipe.hot,
  target = hot.target { arch = { "sm_80", "sm_86", "sm_89", "sm_90" } },
  layers = {
    hot.conv2d { name = "stem1", in_channels = 3, out_channels = 48, kernel = 3, out_h = 112, out_w = 112 },
    hot.conv2d { name = "stem2", in_channels = 48, out_channels = 96, kernel = 3, out_h = 56, out_w = 56 },
    -- stage 1 (Meta4D, dim 96, 56x56)
    hot.conv2d { name = "s1_fc1", in_channels = 96, out_channels = 384, kernel = 1, out_h = 56, out_w = 56 },
    hot.conv2d { name = "s1_fc2", in_channels = 384, out_channels = 96, kernel = 1, out_h = 56, out_w = 56 },
    hot.conv2d { name = "down12", in_channels = 96, out_channels = 192, kernel = 3, out_h = 28, out_w = 28 },
    -- stage 2 (Meta4D, dim 192, 28x28)
    hot.conv2d { name = "s2_fc1", in_channels = 192, out_channels = 768, kernel = 1, out_h = 28, out_w = 28 },
    hot.conv2d { name = "s2_fc2", in_channels = 768, out_channels = 192, kernel = 1, out_h = 28, out_w = 28 },
    hot.conv2d { name = "down23", in_channels = 192, out_channels = 384, kernel = 3, out_h = 14, out_w = 14 },
    -- stage 3 (Meta4D, dim 384, 14x14)
    hot.conv2d { name = "s3_fc1", in_channels = 384, out_channels = 1536, kernel = 1, out_h = 14, out_w = 14 },
    hot.conv2d { name = "s3_fc2", in_channels = 1536, out_channels = 384, kernel = 1, out_h = 14, out_w = 14 },
    hot.conv2d { name = "down34", in_channels = 384, out_channels = 768, kernel = 3, out_h = 7, out_w = 7 },
    -- stage 4 (Meta3D, dim 768, 49 tokens)
    hot.linear { name = "s4_qkv",  in_features = 768,  out_features = 1536 },
    hot.linear { name = "s4_proj", in_features = 1024, out_features = 768 },
    hot.linear { name = "s4_fc1",  in_features = 768,  out_features = 3072 },
    hot.linear { name = "s4_fc2",  in_features = 3072, out_features = 768 },
    -- classifier on the pooled token
    hot.linear { name = "head", in_features = 768, out_features = 1000, tokens = 1 },
  },
}

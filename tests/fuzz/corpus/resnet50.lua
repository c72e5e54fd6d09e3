-- ResNet-50 (torchvision v1.5: stride 2 in the 3x3 convolution of each stage's first block) on
-- 224x224 images, batch 32. Convolutions enter as im2col linear layers (CONTRACT.md 1): hot.conv2d
-- gives T = batch * out_h * out_w, I = in_channels * kernel^2, O = out_channels.
--
-- Shapes: He et al., "Deep Residual Learning for Image Recognition" (arXiv 1512.03385), Table 1,
-- and torchvision's resnet.py (Bottleneck, expansion 4). The paper's latency table (CONTRACT.md 8)
-- times per-layer backward GEMMs of these shapes; we keep one layer per distinct shape of each
-- stage: the stem, the first block's reduce / 3x3 / expand / downsample convolutions and the
-- repeated blocks' reduce convolution (the repeated 3x3 and expand convolutions have the same
-- shapes as the first block's), and the classifier.
local hot = require "hot"

return hot.model {
  name = "resnet50",
  batch = 32,
  tokens = 1,                     -- the classifier's (after global pooling); convolutions set their own
  recipe = hot.recipe.hot,
  target = hot.target { arch = { "sm_80", "sm_86", "sm_89", "sm_90" } },
  layers = {
    -- stem: 7x7/2, 3 -> 64, output 112x112
    hot.conv2d { name = "conv1", in_channels = 3, out_channels = 64, kernel = 7, out_h = 112, out_w = 112 },
    -- conv2_x (56x56), 3 blocks
    hot.conv2d { name = "conv2_1_reduce", in_channels = 64, out_channels = 64, kernel = 1, out_h = 56, out_w = 56 },
    hot.conv2d { name = "conv2_1_3x3", in_channels = 64, out_channels = 64, kernel = 3, out_h = 56, out_w = 56 },
    hot.conv2d { name = "conv2_1_expand", in_channels = 64, out_channels = 256, kernel = 1, out_h = 56, out_w = 56 },
    hot.conv2d { name = "conv2_2_reduce", in_channels = 256, out_channels = 64, kernel = 1, out_h = 56, out_w = 56 },
    -- conv3_x (28x28), 4 blocks
    hot.conv2d { name = "conv3_1_reduce", in_channels = 256, out_channels = 128, kernel = 1, out_h = 56, out_w = 56 },
    hot.conv2d { name = "conv3_1_3x3", in_channels = 128, out_channels = 128, kernel = 3, out_h = 28, out_w = 28 },
    hot.conv2d { name = "conv3_1_expand", in_channels = 128, out_channels = 512, kernel = 1, out_h = 28, out_w = 28 },
    hot.conv2d { name = "conv3_1_down", in_channels = 256, out_channels = 512, kernel = 1, out_h = 28, out_w = 28 },
    hot.conv2d { name = "conv3_2_reduce", in_channels = 512, out_channels = 128, kernel = 1, out_h = 28, out_w = 28 },
    -- conv4_x (14x14), 6 blocks
    hot.conv2d { name = "conv4_1_reduce", in_channels = 512, out_channels = 256, kernel = 1, out_h = 28, out_w = 28 },
    hot.conv2d { name = "conv4_1_3x3", in_channels = 256, out_channels = 256, kernel = 3, out_h = 14, out_w = 14 },
    hot.conv2d { name = "conv4_1_expand", in_channels = 256, out_channels = 1024, kernel = 1, out_h = 14, out_w = 14 },
    hot.conv2d { name = "conv4_1_down", in_channels = 512, out_channels = 1024, kernel = 1, out_h = 14, out_w = 14 },
    hot.conv2d { name = "conv4_2_reduce", in_channels = 1024, out_channels = 256, kernel = 1, out_h = 14, out_w = 14 },
    -- conv5_x (7x7), 3 blocks
    hot.conv2d { name = "conv5_1_reduce", in_channels = 1024, out_channels = 512, kernel = 1, out_h = 14, out_w = 14 },
    hot.conv2d { name = "conv5_1_3x3", in_channels = 512, out_channels = 512, kernel = 3, out_h = 7, out_w = 7 },
    hot.conv2d { name = "conv5_1_expand", in_channels = 512, out_channels = 2048, kernel = 1, out_h = 7, out_w = 7 },
    hot.conv2d { name = "conv5_1_down", in_channels = 1024, out_channels = 2048, kernel = 1, out_h = 7, out_w = 7 },
    hot.conv2d { name = "conv5_2_reduce", in_channels = 2048, out_channels = 512, kernel = 1, out_h = 7, out_w = 7 },
    -- classifier on the pooled features: one token per sample
    hot.linear { name = "fc", in_features = 2048, out_features = 1000 },
  },
}

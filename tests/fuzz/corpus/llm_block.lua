-- One decoder block of a LLaMA-7B-sized language model: hidden 4096, SwiGLU MLP 11008, one
-- sequence of 4096 tokens (batch 1). Shapes: Touvron et al., "LLaMA" (arXiv 2302.13971), 7B
-- (d_model 4096, FFN 11008); q, k, v, o projections 4096 -> 4096, gate/up 4096 -> 11008,
-- down 11008 -> 4096.
local hot = require "hot"

return hot.model {
  name = "llm_block",
  batch = 1,
  tokens = 4096,
  recipe = hot.recipe.hot,
  target = hot.target { arch = { "sm_80", "sm_86", "sm_89", "sm_90" } },
  layers = {
    hot.linear { name = "q_proj",    in_features = 4096,  out_features = 4096, bias = false },
    hot.linear { name = "k_proj",    in_features = 4096,  out_features = 4096, bias = false },
    hot.linear { name = "v_proj",    in_features = 4096,  out_features = 4096, bias = false },
    hot.linear { name = "o_proj",    in_features = 4096,  out_features = 4096, bias = false },
    hot.linear { name = "gate_proj", in_features = 4096,  out_features = 11008, bias = false },
    hot.linear { name = "up_proj",   in_features = 4096,  out_features = 11008, bias = false },
    hot.linear { name = "down_proj", in_features = 11008, out_features = 4096, bias = false },
  },
}

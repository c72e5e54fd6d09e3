-- Large layers for hot-bench's headline measurement: T = 8192 tokens per step, as
-- batch 8 x 1024 tokens — a usual training micro-batch of 1024-token sequences. With L = 1024 the
-- HLA block (p = 64) divides every sample, so token blocks never straddle two samples and no
-- padding is added (ABC keeps exactly r/p = 36/64 of the token rows: 0.141 of fp32 bytes); the
-- same T as batch 1 x 8192 for every GEMM (M of g_x, K of g_w = 8192).
-- Shapes: a square 4096 x 4096 layer (LLaMA-7B's q/k/v/o projections, with a bias so the bias
-- kernel is timed too) and the LLaMA-7B MLP (Touvron et al., arXiv 2302.13971): gate/up
-- 4096 -> 11008, down 11008 -> 4096.
local hot = require "hot"

return hot.model {
  name = "bench_large",
  batch = 8,
  tokens = 1024,
  recipe = hot.recipe.hot,
  target = hot.target { arch = "sm_90" },
  layers = {
    hot.linear { name = "square",  in_features = 4096,  out_features = 4096 },
    hot.linear { name = "gate_up", in_features = 4096,  out_features = 11008, bias = false },
    hot.linear { name = "down",    in_features = 11008, out_features = 4096,  bias = false },
  },
}

-- hot-bench's test spec: small layers at awkward sizes (L = 197 is prime, O = 100 pads to
-- 112 for b = 16, I = 137), one with f16 inputs, small enough for the CPU reference to run in
-- well under a second.
local hot = require "hot"

return hot.model {
  name = "bench_tiny",
  batch = 2,
  tokens = 197,
  recipe = hot.recipe.hot,
  target = hot.target { arch = "sm_90" },
  layers = {
    hot.linear { name = "a", in_features = 96,  out_features = 128 },
    hot.linear { name = "b", in_features = 137, out_features = 100, bias = false,
                 hla = hot.hla { block = 16, keep = 50 } },
    hot.linear { name = "c", in_features = 64, out_features = 48, dtype = "f16" },
  },
}

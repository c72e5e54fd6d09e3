-- expect: unknown_arch.lua:5: model: target.arch[2]: unknown arch "sm_75"
local hot = require "hot"
return hot.model {
  name = "m", batch = 2, tokens = 64,
  target = hot.target { arch = { "sm_80", "sm_75" } },
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64 },
  },
}

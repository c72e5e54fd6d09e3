-- expect: plan_and_spec_errors.lua:7: layer 'bad': bias must be true or false (got "yes")
-- expect: plan_and_spec_errors.lua:8: layer 'fc': tile_gw: tile 256x128x128 with 3 stages needs 147456 bytes of shared memory, sm_86 allows 101376 (planning for sm_86)
-- expect-lines: 2
local hot = require "hot"
return hot.model { name = "m", batch = 8, tokens = 256,
  target = hot.target { arch = { "sm_80", "sm_86" } }, layers = {
  hot.linear { name = "bad", in_features = 64, out_features = 64, bias = "yes" },
  hot.linear { name = "fc", in_features = 1024, out_features = 1024,
               tile_gw = hot.tile { tile_m = 256, tile_n = 128, tile_k = 128, stages = 3 } },
} }

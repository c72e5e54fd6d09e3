-- expect: field_line.lua:13: model: tokens must be an integer (got "64")
-- expect: field_line.lua:18: layer 'fc': hq.block must be a power of two in [2, 256] (got 12)
-- expect: field_line.lua:21: layer 'fc': hla.keep must be in [1, 50] (got 75)
-- expect: field_line.lua:24: layer 'fc': unknown field tile_gx.tile_q (did you mean 'tile_m'?)
-- expect: field_line.lua:27: model: target.arch[1]: unknown arch "sm_99" (known: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_120a)
-- expect-lines: 5
-- Type errors point at the field's own line, not at the constructor's (strings and comments that
-- mention a field name, and nested tables, do not mislead the search).
local hot = require "hot"
return hot.model {
  name = "m", -- tokens = 1 in a comment
  batch = 2,
  tokens = "64",
  layers = {
    hot.linear { name = "fc", in_features = 64, out_features = 64,
      doc_ = nil,
      hq = { pad = true,
             block = 12 },
      hla = hot.hla {
        block = 16, selection = "tri", --[[ keep = 1 ]]
        keep = 75 },
      tile_gx = {
        tile_m = 128,
        tile_q = 4 } },
  },
  target = hot.target {
    arch = { "sm_99" } },
}

-- expect: seed_range.lua:12: model: seed must be an integer in [0, 9223372036854775807], or a string for the whole 64-bit range [0, 18446744073709551615] (e.g. "0xFFFFFFFFFFFFFFFF") (got -1)
-- expect: seed_range.lua:13: model: seed must be an integer in [0, 9223372036854775807], or a string for the whole 64-bit range [0, 18446744073709551615] (e.g. "0xFFFFFFFFFFFFFFFF") (got -1)
-- expect: seed_range.lua:14: model: seed must be an integer in [0, 9223372036854775807], or a string for the whole 64-bit range [0, 18446744073709551615] (e.g. "0xFFFFFFFFFFFFFFFF") (got 1.844674407371e+19)
-- expect: seed_range.lua:15: model: seed must be an integer in [0, 9223372036854775807], or a string for the whole 64-bit range [0, 18446744073709551615] (e.g. "0xFFFFFFFFFFFFFFFF") (got nan)
-- expect: seed_range.lua:16: model: seed='18446744073709551616': expected an integer in [0, 18446744073709551615]
-- expect: seed_range.lua:17: model: seed='0x1_0000': expected an integer in [0, 18446744073709551615]
-- expect: seed_range.lua:18: model: seed='-1': expected an integer in [0, 18446744073709551615]
-- expect-lines: 7
-- The seed takes HOT_SEED's range, [0, 2^64 - 1]: above 2^63 - 1 as a string, parsed as HOT_SEED is.
local hot = require "hot"
local function m(seed) return hot.model { name = "m", batch = 1, tokens = 16, seed = seed, layers = { hot.linear { name = "fc", in_features = 16, out_features = 16 } } } end
m(-1)                     -- 12
m(0xFFFFFFFFFFFFFFFF)     -- 13: a Lua integer literal above 2^63 - 1 wraps to -1
m(2^64 - 1)               -- 14: a float (2^64): no 64-bit key is exact as one
m(0/0)                    -- 15
m("18446744073709551616") -- 16
m("0x1_0000")             -- 17
m("-1")                   -- 18
return m("0xFFFFFFFFFFFFFFFF")

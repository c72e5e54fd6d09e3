-- expect: c_stack_runtime.lua:6: C stack overflow
-- expect-lines: 1
-- Nested C calls (table.sort calling back into the spec) run out of C stack at run time.
local hot = require "hot"
local function deep(n)
  local t = { 2, 1 } table.sort(t, function(a, b) deep(n + 1) return a < b end)
end
deep(1)
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

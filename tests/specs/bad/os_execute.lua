-- expect: os_execute.lua:3: attempt to index a nil value (global 'os')
local hot = require "hot"
os.execute("touch /tmp/hot_spec_escaped")
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

-- expect: require_os.lua:3: module 'os' not found (specs may only require "hot")
local hot = require "hot"
local os = require "os"
return hot.model { name = "m", batch = 1, tokens = 1, layers = {} }

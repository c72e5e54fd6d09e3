-- hot — the spec language. A spec is a Lua 5.4 text chunk that returns hot.model { ... }.
--
--   local hot = require "hot"
--   return hot.model {
--     name = "vit_b16", batch = 32, tokens = 197, recipe = hot.recipe.hot,
--     target = hot.target { arch = { "sm_80", "sm_90" } },
--     layers = {
--       hot.linear { name = "qkv", in_features = 768, out_features = 2304 },
--       hot.linear { name = "fc2", in_features = 3072, out_features = 768,
--                    hq = hot.hq { block = 16 }, hla = hot.hla { block = 64, keep = 50 } },
--     },
--   }
--
-- Constructors only record what was written and where (file:line); hot.model validates the
-- whole spec against hot/schema.lua and collects every error, so all mistakes of a spec are
-- reported together. Defaults and cross-field rules live in the C planner (gen/plan.c).
-- This module is loaded by gen/spec.c with the standard `debug.getinfo` available; specs
-- themselves run in an environment holding only string, table, math and this module.

local S = require "hot.schema"
local getinfo = debug.getinfo
local fmt, concat, sort = string.format, table.concat, table.sort
-- Captured once: specs see a string metatable without the pattern functions, so the DSL calls
-- them as locals (never as methods on spec-provided strings).
local match, sub = string.match, string.sub
local setmetatable, spec_line, spec_commit = setmetatable, spec_line, spec_commit
local spec_field_line, spec_layers, spec_fields = spec_field_line, spec_layers, spec_fields
local spec_quiet, spec_key = spec_quiet, spec_key
local unpack = table.unpack
local byte, char = string.byte, string.char
local tointeger, mtype = math.tointeger, math.type

local hot = {}
local errors = {}        -- every diagnostic of the spec, in the order found
-- What each constructor recorded (kind, file, line), keyed by its result. Kept here, not in the
-- spec's table, so a spec can neither read nor forge it.
local tags = setmetatable({}, { __mode = "k" })
hot._spec_source = nil   -- "@path" of the spec chunk, set by the loader

-- The spec's own line that is running the current constructor: the innermost stack frame whose
-- source is the spec chunk.
local function where()
  local file, line = spec_line()  -- the spec's path as given, and the line that ran last
  for level = 3, 40 do
    local info = getinfo(level, "Sl")
    if not info then break end
    if info.source == hot._spec_source then return file, info.currentline end
  end
  -- No spec frame: `return hot.model { ... }` is a tail call. The loader's line hook knows the
  -- spec line that ran last.
  return file, line
end

-- A spec-provided string as one printable line: control and non-ASCII bytes as \ddd, at most
-- 64 bytes shown (so a name holding a newline cannot split a message).
local function printable(s)
  local out, n = {}, #s
  if n <= 64 and match(s, '^[ !#-%[%]-~]*$') then return s end -- nothing to escape (the usual case)
  for i = 1, math.min(n, 64) do
    local b = byte(s, i)
    if b < 32 or b > 126 or b == 34 or b == 92 then
      out[#out + 1] = (b == 34 or b == 92) and ("\\" .. char(b)) or fmt("\\%03d", b)
    else
      out[#out + 1] = char(b)
    end
  end
  if n > 64 then out[#out + 1] = fmt("...(%d bytes)", n) end
  return concat(out)
end

local function report(ctx, msg)
  local who = ctx.layer and fmt("layer '%s': ", printable(ctx.layer)) or (ctx.what and (ctx.what .. ": ") or "")
  errors[#errors + 1] = fmt("%s:%d: %s%s", ctx.file, ctx.line, who, msg)
end

-- ctx moved to the line where field `key` of ctx's table is written (the loader finds it in the
-- spec's text: Lua keeps no line per field); ctx itself when it cannot be found.
local function at_field(ctx, key)
  if not ctx.ctor or type(key) ~= "string" then return ctx end
  local keys = { unpack(ctx.keys or {}) }
  keys[#keys + 1] = key
  local line = spec_field_line(ctx.line, ctx.ctor, unpack(keys))
  if not line or line == ctx.line then return ctx end
  return { file = ctx.file, line = line, layer = ctx.layer, what = ctx.what }
end

local function show(v)
  if type(v) == "string" then return '"' .. printable(v) .. '"' end
  if type(v) == "table" then return "a table" end
  if v ~= v then return "nan" end -- not the C library's "-nan" for 0/0
  if mtype(v) == "float" then return fmt("%.14g", v) end
  if type(v) == "number" or type(v) == "boolean" or v == nil then return tostring(v) end
  return "a " .. type(v)
end

-- Sorts a list of table keys by how messages show them (each shown once, not per comparison).
local function sort_keys(keys)
  local shown = {}
  for _, k in ipairs(keys) do shown[k] = show(k) end
  sort(keys, function(a, b) return shown[a] < shown[b] end)
end

-- Levenshtein distance, for "did you mean" suggestions.
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = sub(a, i, i) == sub(b, j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

local function suggest(name, schema)
  local best, bd = nil, math.huge
  for _, k in ipairs(schema.order) do
    local d = distance(name, k)
    if d < bd then best, bd = k, d end
  end
  if best and bd <= math.max(2, #name // 3) then return fmt(" (did you mean '%s'?)", best) end
  return ""
end

-- v as a Lua integer when it is a number with an integral value inside the 64-bit range, else nil.
local function as_int(v)
  if type(v) ~= "number" then return nil end
  return tointeger(v)
end
-- True for a float with an integral value outside the 64-bit range (1e300, 2^63).
local function is_huge_integral(v)
  return mtype(v) == "float" and v == v and v ~= math.huge and v ~= -math.huge and v == math.floor(v)
end

-- Checks that v is a list 1..n without holes or other keys; reports the first defect and returns
-- false when it is not. (ipairs and # would silently stop at a hole.)
local function check_list(v, path, ctx)
  local count, top = 0, 0
  for k in pairs(v) do
    if mtype(k) ~= "integer" or k < 1 then
      report(ctx, fmt("%s must be a list (indices 1..n), but has the key %s", path, show(k)))
      return false
    end
    count = count + 1
    if k > top then top = k end
  end
  if top ~= count then
    local hole = 1
    while v[hole] ~= nil do hole = hole + 1 end
    report(ctx, fmt("%s has a hole: %s[%d] is nil but index %d is set (%d entries); write a list without nil",
                    path, path, hole, top, count))
    return false
  end
  return true
end
local function is_pow2(v) return v >= 1 and (v & (v - 1)) == 0 end

local function in_list(v, list)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

-- One checker per field kind: each takes (v, fd, path, at) and returns the normalized value or
-- nil after reporting; `at()` looks up the line of the field (only then: the lookup reads the text).
local CHECK = {}

local function int_range(fd)
  local lo, hi = fd.min, fd.max
  if fd.pow2 then
    return (fd.zero_ok and "0 or " or "") .. "a power of two in " .. fmt("[%d, %d]", math.max(lo, 2), hi)
  end
  return hi and fmt("in [%d, %d]", lo, hi) or fmt(">= %d", lo)
end

function CHECK.int(v, fd, path, at)
  local iv = as_int(v)
  local lo, hi = fd.min, fd.max
  if not iv and is_huge_integral(v) then
    report(at(), fmt("%s must be %s (got %s)", path,
                     hi and fmt("in [%d, %d]", lo, hi) or fmt("an integer in [%d, %d]", lo, math.maxinteger),
                     show(v)))
    return nil
  end
  if not iv then report(at(), fmt("%s must be an integer (got %s)", path, show(v))); return nil end
  local bad = (lo and iv < lo) or (hi and iv > hi)
  if fd.pow2 and not (fd.zero_ok and iv == 0) and not is_pow2(iv) then bad = true end
  if bad then report(at(), fmt("%s must be %s (got %d)", path, int_range(fd), iv)); return nil end
  return iv
end

-- A 64-bit key (the seed): the full range [0, 2^64 - 1] that HOT_SEED takes. A Lua integer holds
-- at most 2^63 - 1 (a hex literal above it wraps to a negative number), so a larger key is written
-- as a string, parsed as HOT_SEED is (decimal or 0x hex: gen/spec_sandbox.c, base/num.h).
local KEY_MAX = "18446744073709551615"
function CHECK.key(v, _, path, at)
  if type(v) == "string" then
    local iv, err = spec_key(path, v)
    if iv == nil then report(at(), err) end
    return iv
  end
  local iv = as_int(v)
  if iv and iv >= 0 then return iv end
  report(at(), fmt("%s must be an integer in [0, %d], or a string for the whole 64-bit range [0, %s] "
                   .. "(e.g. \"0xFFFFFFFFFFFFFFFF\") (got %s)", path, math.maxinteger, KEY_MAX, show(v)))
  return nil
end

function CHECK.bool(v, _, path, at)
  if type(v) ~= "boolean" then report(at(), fmt("%s must be true or false (got %s)", path, show(v))); return nil end
  return v
end

function CHECK.string(v, _, path, at)
  if type(v) ~= "string" then report(at(), fmt("%s must be a string (got %s)", path, show(v))); return nil end
  return v
end

function CHECK.enum(v, fd, path, at)
  if type(v) ~= "string" or not in_list(v, fd.values) then
    report(at(), fmt("%s must be one of %s (got %s)", path, concat(fd.values, ", "), show(v))); return nil
  end
  return v
end

function CHECK.list(v, fd, path, at)
  if type(v) == "string" then v = { v } end
  if type(v) ~= "table" or #v == 0 then
    report(at(), fmt("%s must be a name or a non-empty list of names (got %s)", path, show(v))); return nil
  end
  if not check_list(v, path, at()) then return nil end
  local out = {}
  for i, x in ipairs(v) do
    if not in_list(x, fd.values) then
      report(at(), fmt("%s[%d]: unknown arch %s (known: %s)", path, i, show(x), concat(fd.values, ", ")))
      return nil
    end
    out[#out + 1] = x
  end
  return out
end

-- Checks one value against its field descriptor; returns the normalized value or nil. An error
-- names the line of field `key` of ctx's table.
local function check_value(v, fd, path, ctx, key)
  local check = CHECK[fd.kind]
  if not check then error("schema: unknown kind " .. tostring(fd.kind)) end
  return check(v, fd, path, function() return at_field(ctx, key) end)
end

-- Checks a table against a sub-schema; unknown fields suggest the closest known name.
local function check_table(t, schema, prefix, ctx)
  if type(t) ~= "table" then
    report(ctx, fmt("%s must be a table (got %s)", prefix, show(t))); return nil
  end
  local out, keys = {}, {}
  for key in pairs(t) do keys[#keys + 1] = key end
  sort_keys(keys)
  for _, key in ipairs(keys) do
    local fd = type(key) == "string" and schema.fields[key]
    local kname = type(key) == "string" and printable(key) or ("[" .. show(key) .. "]")
    local path = prefix and (prefix .. "." .. kname) or kname
    if not fd then
      local hint = type(key) == "string" and suggest(key, schema) or ""
      report(at_field(ctx, key), fmt("unknown field %s%s", path, hint))
    elseif fd.kind == "table" then
      local sub = t[key]
      local tag = type(sub) == "table" and tags[sub]
      local sctx
      if tag then -- hot.hla { ... }: its own line
        sctx = { file = tag.file, line = tag.line, layer = ctx.layer, what = ctx.what, ctor = tag.kind, keys = {} }
      else        -- a plain { ... } inside ctx's table
        local keys = { unpack(ctx.keys or {}) }
        keys[#keys + 1] = key
        sctx = { file = ctx.file, line = ctx.line, layer = ctx.layer, what = ctx.what, ctor = ctx.ctor, keys = keys }
        if type(sub) ~= "table" then sctx = at_field(ctx, key) end
      end
      out[key] = check_table(sub, fd.schema, path, sctx)
    elseif fd.kind ~= "layers" and fd.kind ~= "sweep" then
      out[key] = check_value(t[key], fd, path, ctx, key)
    end
  end
  for _, key in ipairs(schema.required or {}) do
    if t[key] == nil then
      report(ctx, fmt("missing field %s", prefix and (prefix .. "." .. key) or key))
    end
  end
  return out
end

local function record(kind, t)
  local file, line = where()
  if type(t) ~= "table" then
    errors[#errors + 1] = fmt("%s:%d: hot.%s expects a table { ... } (got %s)", file, line, kind, show(t))
    t = {}
  elseif tags[t] and tags[t].kind ~= kind then
    errors[#errors + 1] = fmt("%s:%d: hot.%s: this table was already given to hot.%s (line %d)", file,
                              line, kind, tags[t].kind, tags[t].line)
    t = {}
  elseif tags[t] then
    return t
  end
  tags[t] = { kind = kind, file = file, line = line }
  return t
end

-- Constructors: each records its arguments and the spec line; hot.model validates.
function hot.linear(t) return record("linear", t) end
function hot.hq(t) return record("hq", t) end
function hot.hla(t) return record("hla", t) end
function hot.abc(t) return record("abc", t) end
function hot.tile(t) return record("tile", t) end
function hot.target(t) return record("target", t) end
function hot.sweep(t) return record("sweep", t) end

-- A convolution as an im2col linear layer: T = B * H_out * W_out, I = C_in * k * k.
-- Each size and each product must stay within the linear layer's limits (checked by division, so
-- nothing wraps: in_channels = 2^62 + 1 with kernel = 2 is an error, not I = 4).
local CONV_MAX = 1 << 29
local CONV_FIELDS = { "in_channels", "out_channels", "kernel", "out_h", "out_w" }
function hot.conv2d(t)
  local r = record("conv2d", t)
  local info = tags[r]
  local ctx = { file = info.file, line = info.line, layer = type(r.name) == "string" and r.name or "?" }
  local lin = { name = r.name, bias = r.bias, dtype = r.dtype, hq = r.hq, hla = r.hla, abc = r.abc,
                tile_gx = r.tile_gx, tile_gw = r.tile_gw }
  local v, ok = {}, true
  for _, key in ipairs(CONV_FIELDS) do
    local iv = as_int(r[key])
    if not iv or iv < 1 or iv > CONV_MAX then
      report(ctx, fmt("%s must be an integer in [1, %d] (got %s)", key, CONV_MAX, show(r[key]))); ok = false
    end
    v[key] = iv
  end
  for key in pairs(r) do
    local derived = in_list(key, { "in_features", "out_features", "tokens" })
    if derived then
      report(ctx, fmt("%s cannot be set on hot.conv2d (it is derived from the convolution's sizes)", key))
    elseif not (type(key) == "string" and (S.linear.fields[key] or in_list(key, CONV_FIELDS))) then
      report(ctx, fmt("unknown field %s", type(key) == "string" and printable(key) or ("[" .. show(key) .. "]")))
    end
  end
  if ok then
    local kk = v.kernel * v.kernel -- both <= 2^29: no wrap
    if v.kernel > CONV_MAX // v.kernel or v.in_channels > CONV_MAX // kk then
      report(ctx, fmt("in_channels * kernel^2 = %d * %d^2 exceeds %d (the largest in_features)",
                      v.in_channels, v.kernel, CONV_MAX)); ok = false
    end
    if v.out_h > CONV_MAX // v.out_w then
      report(ctx, fmt("out_h * out_w = %d * %d exceeds %d (the largest tokens)", v.out_h, v.out_w, CONV_MAX)); ok = false
    end
  end
  if ok then
    lin.in_features = v.in_channels * v.kernel * v.kernel
    lin.out_features = v.out_channels
    lin.tokens = v.out_h * v.out_w
  else -- errors are reported; keep the layer well-formed so the others are still checked
    lin.in_features, lin.out_features = 1, 1
  end
  tags[lin] = { kind = "linear", ctor = "conv2d", file = info.file, line = info.line, conv_ok = ok }
  return lin
end

-- Reading a name a table of the DSL does not have is an error naming it, with the closest name
-- (a misspelled hot.recipe.hott or hot.linaer must not pass for nil). `names`: the table's keys.
local function unknown(tname, key, names)
  local shown = type(key) == "string" and ("." .. printable(key)) or ("[" .. show(key) .. "]")
  local hint = ""
  if type(key) == "string" then
    local best, bd = nil, math.huge
    for _, k in ipairs(names) do
      local d = distance(key, k)
      if d < bd then best, bd = k, d end
    end
    if best and bd <= math.max(2, #key // 3) then hint = fmt(" (did you mean %s.%s?)", tname, best) end
  end
  error(fmt("%s%s does not exist%s", tname, shown, hint), 0)
end

-- t, with reads of a missing key refused (unknown) and writes refused.
local function strict(tname, t)
  local names = {}
  for k in pairs(t) do names[#names + 1] = k end
  sort(names)
  return setmetatable(t, {
    __index = function(_, k) unknown(tname, k, names) end,
    __newindex = function() error(tname .. " is read-only", 2) end,
    __metatable = false,
  })
end

hot.recipe = {}
for _, r in ipairs(S.recipes) do hot.recipe[r] = r end
hot.recipe = strict("hot.recipe", hot.recipe)

-- A name the spec's view of hot lacks (gen/spec_sandbox.c calls it): the error.
function hot._unknown(tname, key)
  local names = {}
  for k in pairs(hot) do
    if type(k) == "string" and sub(k, 1, 1) ~= "_" then names[#names + 1] = k end
  end
  sort(names)
  unknown(tname, key, names)
end

-- Model and layer names become file-name components (hot-gen --emit writes
-- <model>.<layer>.<arch>.cu): a letter, digit or '_' first (so never "", ".", ".." or an option),
-- then letters, digits, '_', '.', '-'; at most 63 characters. gen/spec.c checks the same rule.
local NAME_PATTERN = "^[%w_][%w_.%-]*$"
local NAME_RULE = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}"
local function name_ok(s) return #s <= 63 and match(s, NAME_PATTERN) ~= nil end

-- The sweepable fields: the rows of gen/field_list.h marked so ("hq.block", "tile_gx.stages");
-- the values are handed to C as their spec text (gen/fields.c parses them with the same names).
local SWEEPABLE = {}
for _, row in ipairs(spec_fields.rows) do
  if row.sweep then
    local head, tail = match(row.path, "^([%w_]+)%.([%w_]+)$")
    SWEEPABLE[row.path] = S.linear.fields[head].schema.fields[tail]
  end
end
local function check_sweep(t, ctx)
  local axes = {}
  if type(t) ~= "table" then report(ctx, fmt("sweep must be hot.sweep { ... } (got %s)", show(t))); return axes end
  local keys = {}
  for key in pairs(t) do keys[#keys + 1] = key end
  if #keys == 0 then
    report(ctx, "sweep: hot.sweep {} names no field (give at least one axis, or leave sweep out)")
  end
  sort_keys(keys)
  for _, key in ipairs(keys) do
    local fd, path = nil, type(key) == "string" and printable(key) or show(key)
    if type(key) == "string" then fd = SWEEPABLE[key] end
    if not fd or (fd.kind ~= "int" and fd.kind ~= "bool" and fd.kind ~= "enum") then
      report(ctx, fmt("sweep: %s is not a sweepable field of a layer (an int, bool or enum field of hq, hla, abc, tile_gx or tile_gw)", show(key)))
    elseif type(t[key]) ~= "table" or #t[key] == 0 or #t[key] > 16 then
      report(ctx, fmt("sweep[%s] must be a list of 1 to 16 values", path))
    elseif check_list(t[key], fmt("sweep[%s]", path), ctx) then
      local vals, seen = {}, {}
      for i, v in ipairs(t[key]) do
        local cv = check_value(v, fd, fmt("sweep[%s][%d]", path, i), ctx)
        if cv ~= nil then
          local text = tostring(cv)
          if seen[text] then report(ctx, fmt("sweep[%s][%d]: %s is listed twice", path, i, text)) end
          seen[text] = true
          vals[#vals + 1] = text
        end
      end
      axes[#axes + 1] = { field = path, values = vals }
    end
  end
  return axes
end

-- A validated model is copied at once into C structs (spec_commit, gen/spec.c): the loader uses
-- that copy only, so nothing a spec does after hot.model returns can change what was validated.
-- The spec gets a read-only view (deep) whose metamethods never hand out the tables behind it.
local validated = setmetatable({}, { __mode = "k" })  -- view -> the C copy (a userdata)
local function readonly() error("a validated hot.model is read-only", 2) end
-- One metatable serves every view: the table behind a view is found in `behind` (weak keys).
local behind = setmetatable({}, { __mode = "k" })
local VIEW = {
  __index = function(v, k) return behind[v][k] end,
  __newindex = readonly,
  __len = function(v) return #behind[v] end,
  __pairs = function(v)
    local t = behind[v]
    return function(_, k) return next(t, k) end, v, nil
  end,
  __metatable = false,
}
local function freeze(t)
  local view = {}
  for k, v in pairs(t) do
    if type(v) == "table" then t[k] = freeze(v) end
  end
  behind[view] = t
  return setmetatable(view, VIEW)
end

-- Checks layer i (a hot.linear / hot.conv2d table) and appends it to m.layers; `seen` maps the
-- names so far to their lines (duplicates are reported).
local function check_layer(i, lt, m, seen, mctx)
  local li = type(lt) == "table" and tags[lt] or nil
  if not li or li.kind ~= "linear" then
    report(mctx, fmt("layers[%d] must be hot.linear { ... } or hot.conv2d { ... } (got %s)", i, show(lt)))
    return
  end
  local lname = type(lt.name) == "string" and lt.name or fmt("#%d", i)
  local ctx = { file = li.file, line = li.line, layer = lname, ctor = li.ctor or "linear", keys = {} }
  local e1 = #errors
  local l = check_table(lt, S.linear, nil, ctx)
  if not l then return end
  if l.name and not name_ok(l.name) then
    report(at_field(ctx, "name"), fmt("name must match %s (got %s)", NAME_RULE, show(l.name)))
  end
  if l.name and seen[l.name] then
    report(ctx, fmt("duplicate layer name (first declared at line %d)", seen[l.name]))
  elseif l.name then
    seen[l.name] = li.line
  end
  l.line = li.line
  m.layers[#m.layers + 1] = l
  m.layer_ok[#m.layers] = #errors == e1 and li.conv_ok ~= false
end

-- Checks every layer of the list; the spec's limits grow with the number of distinct tables.
local function check_layers(layers, m, mctx)
  local count, distinct = 0, {}
  for _, lt in pairs(layers) do
    if type(lt) == "table" and not distinct[lt] then distinct[lt] = true; count = count + 1 end
  end
  spec_layers(count)  -- the limits grow with the model (gen/spec.h)
  local seen = {}
  for i, lt in ipairs(layers) do check_layer(i, lt, m, seen, mctx) end
end

-- Validates the whole model; returns a read-only view of the normalized model.
local function validate_model(t)
  local r = record("model", t)
  local info = tags[r]
  t = r
  local mctx = { file = info.file, line = info.line, what = "model", ctor = "model", keys = {} }
  local e0 = #errors
  local m = check_table(t, S.model, nil, mctx) or {}
  m.line = info.line
  m.layers = {}
  m.layer_ok = {}
  if t.target ~= nil and type(t.target) == "table" then
    m.archs = m.target and m.target.arch or nil
  end
  m.target = nil
  if m.name and not name_ok(m.name) then
    report(at_field(mctx, "name"), fmt("name must match %s (got %s)", NAME_RULE, show(m.name)))
  end
  if type(t.layers) ~= "table" or #t.layers == 0 then
    if t.layers ~= nil then report(at_field(mctx, "layers"), "layers must be a non-empty list of hot.linear { ... }") end
  else
    check_list(t.layers, "layers", at_field(mctx, "layers"))
  end
  local model_ok = #errors == e0
  if type(t.layers) == "table" then check_layers(t.layers, m, mctx) end
  if t.sweep ~= nil then
    local sw = tags[t.sweep]
    m.sweep_line = sw and sw.line or info.line
    m.sweep = check_sweep(t.sweep, mctx)
  end
  m.model_ok = model_ok
  local copy = spec_commit(m)  -- the C copy, made before the spec runs again
  local view = freeze(m)
  validated[view] = copy
  return view
end

function hot.model(t)
  spec_quiet(true)   -- no spec code runs while the DSL validates: no line tracking
  local view = validate_model(t)
  spec_quiet(false)
  return view
end

-- Every diagnostic of the spec (a copy: the loader reads it after the spec has run).
function hot._errors()
  local copy = {}
  for i, e in ipairs(errors) do copy[i] = e end
  return copy
end

-- The C copy of the model whose view is t (what hot.model returned), or nil for any other value.
function hot._validated(t) return validated[t] end

-- The text of `hot-gen --help-spec`: every field with kind, range, default and doc.
-- `defaults` is a table built by the C loader from plan_spec_defaults (per recipe).
function hot._help(defaults)
  local out = {}
  local function range(fd)
    if fd.kind == "int" then
      local r = fd.max and fmt("%d..%d", fd.min, fd.max) or fmt(">=%d", fd.min)
      return fd.pow2 and ("2^k " .. r) or r
    elseif fd.kind == "key" then
      return "0.." .. KEY_MAX
    elseif fd.kind == "enum" or fd.kind == "list" then
      return concat(fd.values, "|")
    end
    return fd.kind
  end
  local function section(title, schema, prefix, dflt)
    out[#out + 1] = title
    for _, key in ipairs(schema.order) do
      local fd = schema.fields[key]
      if fd.kind ~= "table" then
        local d = dflt and dflt[key]
        local ds = d == nil and ((schema.required and in_list(key, schema.required)) and "required" or "-") or tostring(d)
        out[#out + 1] = fmt("  %-22s %-8s %-26s %-12s %s", prefix .. key, fd.kind, range(fd), ds, fd.doc)
      end
    end
  end
  out[#out + 1] = "Spec fields (kind, range, default for recipe 'hot', doc). A spec returns hot.model { ... }."
  section("hot.model", S.model, "", defaults.model)
  section("hot.target", S.target, "", defaults.target)
  section("hot.linear (also hot.conv2d: in_channels, out_channels, kernel, out_h, out_w)", S.linear, "", defaults.linear)
  section("hot.hq", S.hq, "hq.", defaults.hq)
  section("hot.hla", S.hla, "hla.", defaults.hla)
  section("hot.abc", S.abc, "abc.", defaults.abc)
  section("hot.tile (tile_gx, tile_gw)", S.tile, "tile.", defaults.tile)
  out[#out + 1] = "Rules: names (model, layers) are [A-Za-z0-9_][A-Za-z0-9_.-]{0,62}, never \"\", \".\" or \"..\": they"
  out[#out + 1] = "       name the files hot-gen --emit writes. Lists (layers, target.arch, sweep values) are 1..n"
  out[#out + 1] = "       without holes. Integers must fit in 64 bits (1e300 and 2^63 are out of range); a"
  out[#out + 1] = "       seed above 2^63 - 1 is a string, as HOT_SEED takes it (\"0xFFFFFFFFFFFFFFFF\")."
  out[#out + 1] = "       hla.keep is read with selection tri only, hla.rank with prefix only; writing either"
  out[#out + 1] = "       for another selection is an error. sweep: the space hot-tune searches."
  out[#out + 1] = "Recipes: hot (project default: templates/CONTRACT.md, padding so HLA works for every L, layout auto),"
  out[#out + 1] = "         paper (the contract's defaults), paper_code (b shrinks to divide O, p = largest power of"
  out[#out + 1] = "         two dividing L without padding, refused where it exceeds 1024, SAWB scales, 4-bit g^,"
  out[#out + 1] = "         per-sample scales of g^ and x^), nvfp4 (hot's with NVFP4 codes for HQ and MXFP8 for HLA"
  out[#out + 1] = "         and ABC, templates/CONTRACT.md 20: no GPU arch has its GEMMs, the CPU backend runs it)."
  for _, r in ipairs(S.recipes) do
    local d = defaults.recipes and defaults.recipes[r]
    if d then out[#out + 1] = fmt("  %-11s %s", r, d) end
  end
  return concat(out, "\n") .. "\n"
end

return hot

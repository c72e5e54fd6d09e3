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
local setmetatable, spec_line = setmetatable, spec_line

local hot = {}
local errors = {}        -- every diagnostic of the spec, in the order found
local TAG = {}           -- private key marking constructor results
hot._spec_source = nil   -- "@path" of the spec chunk, set by the loader

-- The spec's own line that is running the current constructor: the innermost stack frame whose
-- source is the spec chunk.
local function where()
  for level = 3, 40 do
    local info = getinfo(level, "Sl")
    if not info then break end
    if info.source == hot._spec_source then return info.short_src, info.currentline end
  end
  -- No spec frame: `return hot.model { ... }` is a tail call. The loader's line hook knows the
  -- spec line that ran last.
  local file, line = spec_line()
  return file, line
end

local function report(ctx, msg)
  local who = ctx.layer and fmt("layer '%s': ", ctx.layer) or (ctx.what and (ctx.what .. ": ") or "")
  errors[#errors + 1] = fmt("%s:%d: %s%s", ctx.file, ctx.line, who, msg)
end

local function show(v)
  if type(v) == "string" then return fmt("%q", v) end
  if type(v) == "table" then return "a table" end
  return tostring(v)
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

local function is_int(v) return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v) and v == v and v ~= math.huge and v ~= -math.huge) end
local function is_pow2(v) return v >= 1 and (v & (v - 1)) == 0 end

local function in_list(v, list)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

-- Checks one value against its field descriptor; returns the normalized value or nil.
local function check_value(v, fd, path, ctx)
  local k = fd.kind
  if k == "int" then
    if not is_int(v) then
      report(ctx, fmt("%s must be an integer (got %s)", path, show(v))); return nil
    end
    v = math.tointeger(v)
    local lo, hi = fd.min, fd.max
    local bad = (lo and v < lo) or (hi and v > hi)
    if fd.pow2 and not (fd.zero_ok and v == 0) and not is_pow2(v) then bad = true end
    if bad then
      local range = hi and fmt("[%d, %d]", lo, hi) or fmt(">= %d", lo)
      if fd.pow2 then
        range = (fd.zero_ok and "0 or " or "") .. "a power of two in " ..
                fmt("[%d, %d]", math.max(lo, 2), hi)
      end
      report(ctx, fmt("%s must be %s%s (got %d)", path, fd.pow2 and "" or "in ", range, v))
      return nil
    end
    return v
  elseif k == "bool" then
    if type(v) ~= "boolean" then report(ctx, fmt("%s must be true or false (got %s)", path, show(v))); return nil end
    return v
  elseif k == "string" then
    if type(v) ~= "string" then report(ctx, fmt("%s must be a string (got %s)", path, show(v))); return nil end
    return v
  elseif k == "enum" then
    if type(v) ~= "string" or not in_list(v, fd.values) then
      report(ctx, fmt("%s must be one of %s (got %s)", path, concat(fd.values, ", "), show(v))); return nil
    end
    return v
  elseif k == "list" then
    if type(v) == "string" then v = { v } end
    if type(v) ~= "table" or #v == 0 then
      report(ctx, fmt("%s must be a name or a non-empty list of names (got %s)", path, show(v))); return nil
    end
    local out = {}
    for i, x in ipairs(v) do
      if not in_list(x, fd.values) then
        report(ctx, fmt("%s[%d]: unknown arch %s (known: %s)", path, i, show(x), concat(fd.values, ", ")))
        return nil
      end
      out[#out + 1] = x
    end
    return out
  end
  error("schema: unknown kind " .. tostring(k))
end

-- Checks a table against a sub-schema; unknown fields suggest the closest known name.
local function check_table(t, schema, prefix, ctx)
  if type(t) ~= "table" then
    report(ctx, fmt("%s must be a table (got %s)", prefix, show(t))); return nil
  end
  local out, keys = {}, {}
  for key in pairs(t) do
    if key ~= TAG then keys[#keys + 1] = key end
  end
  sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, key in ipairs(keys) do
    local fd = type(key) == "string" and schema.fields[key]
    local path = prefix and (prefix .. "." .. tostring(key)) or tostring(key)
    if not fd then
      local hint = type(key) == "string" and suggest(key, schema) or ""
      report(ctx, fmt("unknown field %s%s", path, hint))
    elseif fd.kind == "table" then
      local sub, sctx = t[key], ctx
      if type(sub) == "table" and sub[TAG] then -- hot.hla { ... }: its own line
        sctx = { file = sub[TAG].file, line = sub[TAG].line, layer = ctx.layer, what = ctx.what }
      end
      out[key] = check_table(sub, fd.schema, path, sctx)
    elseif fd.kind ~= "layers" and fd.kind ~= "sweep" then
      out[key] = check_value(t[key], fd, path, ctx)
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
  if type(t) ~= "table" then
    local file, line = where()
    errors[#errors + 1] = fmt("%s:%d: hot.%s expects a table { ... } (got %s)", file, line, kind, show(t))
    t = {}
  end
  local file, line = where()
  t[TAG] = { kind = kind, file = file, line = line }
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
function hot.conv2d(t)
  local r = record("conv2d", t)
  local info = r[TAG]
  local ctx = { file = info.file, line = info.line, layer = type(t.name) == "string" and t.name or "?" }
  local lin = { name = t.name, bias = t.bias, dtype = t.dtype, hq = t.hq, hla = t.hla, abc = t.abc,
                tile_gx = t.tile_gx, tile_gw = t.tile_gw }
  local ok = true
  for _, key in ipairs({ "in_channels", "out_channels", "kernel", "out_h", "out_w" }) do
    if not is_int(t[key]) or t[key] < 1 then
      report(ctx, fmt("%s must be an integer >= 1 (got %s)", key, show(t[key]))); ok = false
    end
  end
  for key in pairs(t) do
    if key ~= TAG and type(key) == "string" and not S.linear.fields[key] and
       not in_list(key, { "in_channels", "out_channels", "kernel", "out_h", "out_w" }) then
      report(ctx, fmt("unknown field %s", key))
    end
  end
  if ok then
    lin.in_features = t.in_channels * t.kernel * t.kernel
    lin.out_features = t.out_channels
    lin.tokens = t.out_h * t.out_w
  end
  lin[TAG] = { kind = "linear", file = info.file, line = info.line }
  return lin
end

hot.recipe = { hot = "hot", paper = "paper", paper_code = "paper_code" }

local NAME_PATTERN = "^[%w_.%-]+$"

local function check_sweep(t, ctx)
  local axes = {}
  if type(t) ~= "table" then report(ctx, fmt("sweep must be hot.sweep { ... } (got %s)", show(t))); return axes end
  local keys = {}
  for key in pairs(t) do if key ~= TAG then keys[#keys + 1] = key end end
  sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, key in ipairs(keys) do
    local fd, path = nil, tostring(key)
    local head, tail = match(path, "^([%w_]+)%.([%w_]+)$")
    if head and S.linear.fields[head] and S.linear.fields[head].kind == "table" then
      fd = S.linear.fields[head].schema.fields[tail]
    elseif S.linear.fields[path] and S.linear.fields[path].kind == "int" then
      fd = S.linear.fields[path]
    end
    if not fd or fd.kind ~= "int" then
      report(ctx, fmt("sweep: %s is not an integer field of a layer", show(key)))
    elseif type(t[key]) ~= "table" or #t[key] == 0 or #t[key] > 16 then
      report(ctx, fmt("sweep[%s] must be a list of 1 to 16 values", path))
    else
      local vals = {}
      for i, v in ipairs(t[key]) do
        vals[i] = check_value(v, fd, fmt("sweep[%s][%d]", path, i), ctx)
      end
      axes[#axes + 1] = { field = path, values = vals }
    end
  end
  return axes
end

-- A validated model is handed back read-only (deep), so a spec cannot change it after the
-- checks; the loader accepts only models produced here.
local validated = setmetatable({}, { __mode = "k" })
local function readonly() error("a validated hot.model is read-only", 2) end
local function freeze(t)
  for k, v in pairs(t) do
    if type(v) == "table" then t[k] = freeze(v) end
  end
  return setmetatable({}, { __index = t, __newindex = readonly, __len = function() return #t end,
                            __pairs = function() return next, t, nil end, __metatable = false })
end

-- Validates the whole model; returns the normalized model, read-only.
function hot.model(t)
  local r = record("model", t)
  local info = r[TAG]
  local mctx = { file = info.file, line = info.line, what = "model" }
  local m = check_table(t, S.model, nil, mctx) or {}
  m.line = info.line
  m.layers = {}
  if t.target ~= nil and type(t.target) == "table" then
    m.archs = m.target and m.target.arch or nil
  end
  m.target = nil
  if type(t.layers) ~= "table" or #t.layers == 0 then
    if t.layers ~= nil then report(mctx, "layers must be a non-empty list of hot.linear { ... }") end
  else
    local seen = {}
    for i, lt in ipairs(t.layers) do
      local li = type(lt) == "table" and lt[TAG] or nil
      if not li or li.kind ~= "linear" then
        report(mctx, fmt("layers[%d] must be hot.linear { ... } or hot.conv2d { ... } (got %s)", i, show(lt)))
      else
        local lname = type(lt.name) == "string" and lt.name or fmt("#%d", i)
        local ctx = { file = li.file, line = li.line, layer = lname }
        local l = check_table(lt, S.linear, nil, ctx)
        if l then
          if l.name and (#l.name >= 64 or not match(l.name, NAME_PATTERN)) then
            report(ctx, fmt("name must match [A-Za-z0-9_.-]{1,63} (got %q)", l.name))
          end
          if l.name and seen[l.name] then
            report(ctx, fmt("duplicate layer name (first declared at line %d)", seen[l.name]))
          elseif l.name then
            seen[l.name] = li.line
          end
          l.line = li.line
          m.layers[#m.layers + 1] = l
        end
      end
    end
  end
  if m.name and (#m.name >= 64 or not match(m.name, NAME_PATTERN)) then
    report(mctx, fmt("name must match [A-Za-z0-9_.-]{1,63} (got %q)", m.name))
  end
  if t.sweep ~= nil then m.sweep = check_sweep(t.sweep, mctx) end
  local frozen = freeze(m)
  validated[frozen] = true
  return frozen
end

-- Every diagnostic of the spec (a copy: the loader reads it after the spec has run).
function hot._errors()
  local copy = {}
  for i, e in ipairs(errors) do copy[i] = e end
  return copy
end

-- true when t is a model returned by hot.model (and not a table the spec made up).
function hot._validated(t) return validated[t] == true end

-- The text of `hot-gen --help-spec`: every field with kind, range, default and doc.
-- `defaults` is a table built by the C loader from plan_spec_defaults (per recipe).
function hot._help(defaults)
  local out = {}
  local function range(fd)
    if fd.kind == "int" then
      local r = fd.max and fmt("%d..%d", fd.min, fd.max) or fmt(">=%d", fd.min)
      return fd.pow2 and ("2^k " .. r) or r
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
  out[#out + 1] = "Recipes: hot (project default: templates/CONTRACT.md, padding so HLA works for every L, layout auto),"
  out[#out + 1] = "         paper (the contract's defaults), paper_code (b shrinks to divide O, p = largest power of"
  out[#out + 1] = "         two dividing L without padding, SAWB scales)."
  for _, r in ipairs(S.recipes) do
    local d = defaults.recipes and defaults.recipes[r]
    if d then out[#out + 1] = fmt("  %-11s %s", r, d) end
  end
  return concat(out, "\n") .. "\n"
end

return hot

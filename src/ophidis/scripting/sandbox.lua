-- Ophidis Lua sandbox (runs once per Lua state, with full privileges).
--
-- Redis ships a patched Lua with read-only tables; stock Lua 5.1 has none,
-- so every protected table is an empty proxy whose metatable reads from
-- the real table and refuses writes.  Built-ins that bypass metatables
-- (rawset, rawget, next, pairs, ipairs, setmetatable, unpack and the
-- table.* functions) are wrapped to see through proxies.
--
-- Arguments: the mode ("eval" or "function") and a table of Python
-- callables.  Returns a table of privileged helpers used from Python.

local mode, py = ...

local dbg = debug
local _setfenv, _getmetatable, _setmetatable = setfenv, getmetatable, setmetatable
local _rawget, _rawset, _next, _pairs, _ipairs = rawget, rawset, next, pairs, ipairs
local _type, _error, _tostring, _tonumber, _select = type, error, tostring, tonumber, select
local _unpack, _pcall, _xpcall, _loadstring = unpack, pcall, xpcall, loadstring
local _sfmt, _sgsub, _ssub, _sfind, _tconcat = string.format, string.gsub, string.sub, string.find, table.concat
local _cocreate, _coresume = coroutine.create, coroutine.resume
local _floor, _ceil = math.floor, math.ceil

local INTERNAL = "=ophidis"
local pyinterrupt = py.interrupt
local pyd2string = py.d2string   -- a double reply's text (dtoa.d2string)
local RO = "Attempt to modify a readonly table"
local HOOK_COUNT = 100000

local real_of = _setmetatable({}, {__mode = "k"})   -- proxy -> real table
local sandboxed   -- set once the globals proxy exists

local function ro_newindex()
  _error(RO, 2)
end

local function proxy(real, mt_value)
  local p = {}
  local mt = {__index = real, __newindex = ro_newindex}
  if mt_value ~= nil then mt.__metatable = mt_value end
  _setmetatable(p, mt)
  real_of[p] = real
  return p, mt
end

local function lib(t)
  local real = {}
  for k, v in _pairs(t) do real[k] = v end
  local p = proxy(real, false)
  return p, real
end

-- Python library functions become real Lua functions: lupa's as_function
-- wraps each callable in a C closure, so type() says "function", indexing
-- one fails with Lua's own error ("attempt to index field 'encode' (a
-- function value)"), tostring prints "function: 0x...", and a C function in
-- "return lib.f(...)" keeps the caller's frame for error positions.  The
-- closure's upvalue is not visible to debug.getupvalue: no Python object is
-- reachable from user code.  Errors still arrive as LuaError userdata.
local as_function = python.as_function
python = nil
local function pylib(t)
  local real = {}
  for k, v in _pairs(t) do
    if _type(v) == "userdata" and k ~= "null" then v = as_function(v) end
    real[k] = v
  end
  return (proxy(real, false))
end

-- Proxy-aware built-ins ------------------------------------------------------
local function s_next(t, k)
  local r = real_of[t]
  if r then return _next(r, k) end
  return _next(t, k)
end

local function s_pairs(t)
  if real_of[t] then return s_next, t, nil end
  return _pairs(t)
end

local function s_ipairs(t)
  local r = real_of[t]
  if r then return _ipairs(r) end
  return _ipairs(t)
end

local function s_rawget(t, k)
  local r = real_of[t]
  if r then return _rawget(r, k) end
  return _rawget(t, k)
end

local function s_rawset(t, k, v)
  if real_of[t] then _error(RO, 0) end
  return _rawset(t, k, v)
end

local function s_setmetatable(t, mt)
  if real_of[t] then _error(RO, 0) end
  return _setmetatable(t, mt)
end

-- Arguments passed on as given: unpack's result room (LUAI_MAXCSTACK)
-- counts its arguments, so unpack(t) must get one argument, not three.
local function s_unpack(t, ...)
  local r = real_of[t]
  if r then return _unpack(r, ...) end
  return _unpack(t, ...)
end

local function table_mutator(f)
  return function(t, ...)
    if real_of[t] then _error(RO, 0) end
    return f(t, ...)
  end
end

local function table_reader(f)
  return function(t, ...)
    local r = real_of[t]
    if r then return f(r, ...) end
    return f(t, ...)
  end
end

-- Redis 7's pcall: an error table {err=...} is returned as its message.
local unwrap_error
local function s_pcall(f, ...)
  local function finish(ok, ...)
    if not ok then
      local e = unwrap_error((...))
      if _type(e) == "table" then
        if _rawget(e, "liberr") then return false, _rawget(e, "liberr") end
        local m = _rawget(e, "err")
        if _type(m) == "string" or _type(m) == "number" then return false, m end
      end
      return false, e
    end
    return true, ...
  end
  return finish(_pcall(f, ...))
end

-- User code never gets the sandbox's chunk name: the interrupt hook and the
-- error handler recognise the sandbox's own frames by it.  Lua keeps a chunk
-- name up to its first NUL, so "=ophidis\0..." is the same name.
local function user_chunkname(name)
  if _type(name) ~= "string" then return name end
  local z = _sfind(name, "\0", 1, true)
  local eff = z and _ssub(name, 1, z - 1) or name
  if eff == INTERNAL then return "=" .. eff end
  return name
end

-- Binary chunks are refused, as in Redis.
local function s_loadstring(s, name)
  if _type(s) == "string" and _ssub(s, 1, 1) == "\27" then
    return nil, "binary chunks are not allowed"
  end
  return sandboxed(_loadstring(s, user_chunkname(name)))
end

local function s_load(f, name)
  local first = true
  local function reader()
    local piece = f()
    if first and _type(piece) == "string" and _ssub(piece, 1, 1) == "\27" then
      _error("binary chunks are not allowed", 0)
    end
    first = false
    return piece
  end
  name = user_chunkname(name)
  if _type(f) ~= "function" then return sandboxed(load(f, name)) end
  return sandboxed(load(reader, name))
end

-- Interruption hook (busy scripts, SCRIPT KILL, FUNCTION LOAD timeout) -------
local hook
local kill_msg = nil
hook = function()
  -- The busy state, the other clients and SCRIPT KILL are served wherever
  -- the hook fires; only the raise waits for a frame of user code (the
  -- sandbox's own code is never interrupted half-way).
  if not kill_msg then
    local msg = pyinterrupt()
    if not msg then return end
    kill_msg = msg
    dbg.sethook(hook, "l")
  end
  local info = dbg.getinfo(2, "S")
  if info and info.source == INTERNAL then return end
  -- Killed: raise again on every line of user code until the script ends.
  _error({err = kill_msg})
end

-- The error that kills a script reaches an xpcall handler with Lua's hooks
-- off (the handler is called from inside the hook that raised): a user
-- handler would then run unstoppable, so it is skipped once the script is
-- killed.  (redis-server 7.0 freezes on such a handler after SCRIPT KILL.)
local function s_xpcall(f, handler)
  if _type(handler) ~= "function" then return _xpcall(f, handler) end
  return _xpcall(f, function(e)
    if kill_msg then return e end
    return handler(e)
  end)
end

local function s_cocreate(f)
  local co = _cocreate(f)
  dbg.sethook(co, hook, "", HOOK_COUNT)
  return co
end

local function pack_n(...)
  return {n = _select("#", ...), ...}
end

local function s_cowrap(f)
  local co = s_cocreate(f)
  return function(...)
    local r = pack_n(_coresume(co, ...))
    if r[1] then return _unpack(r, 2, r.n) end
    local e = r[2]
    if _type(e) == "string" then _error(e, 2) end
    _error(e, 0)
  end
end

-- Error handler: attach the user code position to the error object ----------
local function err_handler(err)
  err = unwrap_error(err)
  local lvl = 2
  local i
  while true do
    i = dbg.getinfo(lvl, "Sl")
    if not i then break end
    if i.what ~= "C" and i.source ~= INTERNAL and i.source ~= "=(tail call)" then break end
    lvl = lvl + 1
  end
  if _type(err) == "table" and _rawget(err, "liberr") then
    local where = ""
    if i and i.currentline > 0 then where = i.short_src .. ":" .. i.currentline .. ": " end
    err = {err = "ERR " .. where .. _rawget(err, "liberr")}
  end
  if _type(err) ~= "table" then
    err = {err = "ERR " .. _tostring(err)}
  end
  if i then
    err["source"] = i.source
    err["line"] = i.currentline
  end
  return err
end

-- redis.* API --------------------------------------------------------------------

-- redis.call / redis.pcall: C functions (the compiled layer's own, or the
-- Python callables through as_function, see pylib) so that "return
-- redis.call(...)" keeps the caller's frame for error positions; Python
-- raises errors as LuaError(table).
local function c_function(v)
  if _type(v) == "function" then return v end
  return as_function(v)
end
local redis_call, redis_pcall = c_function(py.raw.call), c_function(py.raw.pcall)

unwrap_error = function(e)
  if _type(e) == "userdata" then
    local t = py.unwrap(e)
    if t ~= nil then return t end
  end
  return e
end

local function s_getmetatable(v)
  if _type(v) == "userdata" then return nil end
  return _getmetatable(v)
end

local function push_error(s)
  -- luaPushErrorBuff: "-CODE msg" keeps its code, anything else gets ERR.
  local code, msg
  if _ssub(s, 1, 1) == "-" then
    local sp = _sfind(s, " ", 1, true)
    if sp then
      code, msg = _ssub(s, 2, sp - 1), _ssub(s, sp + 1)
    else
      code, msg = "ERR", _ssub(s, 2)
    end
  else
    code, msg = "ERR", s
  end
  msg = _sgsub(_sgsub(msg, "^[\r\n]+", ""), "[\r\n]+$", "")
  return {err = code .. " " .. msg}
end

local function error_reply(...)
  local n = _select("#", ...)
  local s = (_select(n > 0 and n or 1, ...))
  if n ~= 1 or _type(s) ~= "string" then
    return {err = "ERR wrong number or type of arguments"}
  end
  if _ssub(s, 1, 1) ~= "-" then s = "-" .. s end
  return push_error(s)
end

local function status_reply(...)
  local n = _select("#", ...)
  local s = (_select(n > 0 and n or 1, ...))
  if n ~= 1 or _type(s) ~= "string" then
    return {err = "ERR wrong number or type of arguments"}
  end
  return {ok = s}
end

local function sha1hex(...)
  if _select("#", ...) ~= 1 then
    _error({err = "ERR wrong number of arguments"})
  end
  local s = ...
  if _type(s) == "number" then s = _tostring(s)
  elseif _type(s) ~= "string" then s = "" end
  return py.sha1hex(s)
end

local function redis_log(...)
  local n = _select("#", ...)
  if n < 2 then _error({err = "ERR redis.log() requires two arguments or more."}) end
  local level = _tonumber((...))
  if not level then _error({err = "ERR First argument must be a number (log level)."}) end
  level = level >= 0 and _floor(level) or _ceil(level)
  if level < 0 or level > 3 then _error({err = "ERR Invalid debug level."}) end
  local parts = {}
  for j = 2, n do
    local s = _select(j, ...)
    local t = _type(s)
    if t == "string" or t == "number" then parts[#parts + 1] = _tostring(s) end
  end
  py.log(level, _tconcat(parts, " "))
end

local function to_int(v)
  v = _tonumber(v) or 0
  if v >= 0 then return _floor(v) end
  return _ceil(v)
end

local function setresp(...)
  if not py.running() then _error({err = "ERR redis.setresp can only be called inside a script invocation"}) end
  if _select("#", ...) ~= 1 then _error({err = "ERR redis.setresp() requires one argument."}) end
  local r = to_int((...))
  if r ~= 2 and r ~= 3 then _error({err = "ERR RESP version must be 2 or 3."}) end
  py.setresp(r)
end

local function set_repl(...)
  if not py.running() then _error({err = "ERR redis.set_repl can only be called inside a script invocation"}) end
  if _select("#", ...) ~= 1 then _error({err = "ERR redis.set_repl() requires two arguments."}) end
  local f = to_int((...))
  if f < 0 or f > 3 then
    _error({err = "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."})
  end
  py.set_repl(f)
end

local function acl_check_cmd(...)
  local k, v = py.acl_check(...)
  if k == 0 then return v end
  _error({err = v})
end

local redis_real = {
  call = redis_call,
  pcall = redis_pcall,
  log = redis_log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = py.version, REDIS_VERSION_NUM = py.version_num,
  setresp = setresp,
  sha1hex = as_function(py.raw.sha1hex),
  error_reply = error_reply,
  status_reply = status_reply,
  set_repl = set_repl,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  acl_check_cmd = acl_check_cmd,
}
if mode == "eval" then
  redis_real.replicate_commands = function() return true end
end
local redis_p = proxy(redis_real, false)

-- Libraries -------------------------------------------------------------------
local tbl = {}
for k, v in _pairs(table) do tbl[k] = v end
for _, name in _ipairs({"insert", "remove", "sort", "setn"}) do
  tbl[name] = table_mutator(tbl[name])
end
for _, name in _ipairs({"concat", "getn", "maxn", "foreach", "foreachi"}) do
  tbl[name] = table_reader(tbl[name])
end
local co = {}
for k, v in _pairs(coroutine) do co[k] = v end
co.create = s_cocreate
co.wrap = s_cowrap

local string_p, string_real = lib(string)
local G = {
  string = string_p,
  math = (lib(math)),
  table = (lib(tbl)),
  coroutine = (lib(co)),
  -- os: only clock, the process's CPU time (Redis 7.4)
  os = (lib({clock = os.clock})),
  bit = pylib(py.bit),
  cjson = pylib(py.cjson),
  cmsgpack = pylib(py.cmsgpack),
  struct = pylib(py.struct),
  redis = redis_p,
  xpcall = s_xpcall, tostring = _tostring, setmetatable = s_setmetatable,
  next = s_next, assert = assert, tonumber = _tonumber, rawequal = rawequal,
  collectgarbage = collectgarbage, getmetatable = s_getmetatable, rawset = s_rawset,
  pcall = s_pcall, type = _type, select = _select, unpack = s_unpack,
  gcinfo = gcinfo, pairs = s_pairs, rawget = s_rawget, loadstring = s_loadstring,
  ipairs = s_ipairs, _VERSION = _VERSION, load = s_load, error = _error,
}
if mode == "eval" then
  G.__redis__err__handler = err_handler
end

-- The string metatable is shared by all strings: protect it as well.
local smt = _getmetatable("")
local smt_real = {}
for k, v in _pairs(smt) do smt_real[k] = v end
smt_real.__index = string_p
for k in _pairs(smt) do smt[k] = nil end
smt.__index = string_p
smt.__metatable = (proxy(smt_real, false))

local function missing_global(t, k)
  _error("Script attempted to access nonexistent global variable '" .. _tostring(k) .. "'", 2)
end
_setmetatable(G, {__index = missing_global})
local G_p, G_mt = proxy(G, (proxy({__index = missing_global}, false)))
G._G = G_p

-- The Lua debugger (SCRIPT DEBUG, eval only) ---------------------------------
-- ldb.py holds the session; what needs the Lua stack is here: the line
-- hook, print, eval, redis, trace, abort, and redis.debug/breakpoint.
-- Levels: each helper gets the level of the user function being debugged
-- as seen from itself.
local ldb_hook
if mode == "eval" then
  local LDB_MAX_DEPTH = 10     -- LUA_MINSTACK / 2
  local _smatch = string.match

  local function ldb_cat(v, level)
    if level == LDB_MAX_DEPTH then return "<max recursion level reached! Nested table?>" end
    level = level + 1
    local t = _type(v)
    if t == "string" then return py.ldb_repr(v) end
    if t == "boolean" then return v and "true" or "false" end
    if t == "number" then return _sfmt("%g", v) end
    if t == "nil" then return "nil" end
    if t == "table" then
      local expected, is_array = 1, true
      local r1, r2 = {}, {}
      for k, val in _next, v, nil do
        if is_array and (_type(k) ~= "number" or k ~= expected) then is_array = false end
        r1[#r1 + 1] = ldb_cat(val, level)
        r2[#r2 + 1] = "[" .. ldb_cat(k, level) .. "]=" .. ldb_cat(val, level)
        expected = expected + 1
      end
      return "{" .. _tconcat(is_array and r1 or r2, "; ") .. "}"
    end
    local addr = _smatch(_tostring(v), ": (.*)$") or "?"
    if t == "function" or t == "userdata" or t == "thread" then
      return '"' .. t .. "@" .. addr .. '"'
    end
    return '"<unknown-lua-type>"'
  end

  local function ldb_print(lvl, name)
    local l = lvl
    while true do
      local info = dbg.getinfo(l, "S")
      if not info then break end
      if info.source ~= INTERNAL then
        local i = 1
        while true do
          local n, v = dbg.getlocal(l, i)
          if not n then break end
          if n == name then
            py.ldb_log_max("<value> " .. ldb_cat(v, 0))
            return
          end
          i = i + 1
        end
      end
      l = l + 1
    end
    if name == "ARGV" or name == "KEYS" then
      py.ldb_log_max("<value> " .. ldb_cat(_rawget(G, name), 0))
    else
      py.ldb_log("No such variable.")
    end
  end

  local function ldb_print_all(lvl)
    local vars, i = 0, 1
    while true do
      local n, v = dbg.getlocal(lvl, i)
      if not n then break end
      if not _sfind(n, "(*temporary)", 1, true) then
        py.ldb_log_max("<value> " .. n .. " = " .. ldb_cat(v, 0))
        vars = vars + 1
      end
      i = i + 1
    end
    if vars == 0 then py.ldb_log("No local variables in the current context.") end
  end

  local function ldb_trace(lvl)
    local level = 0
    while true do
      local info = dbg.getinfo(lvl + level, "Snl")
      if not info then break end
      if _sfind(info.short_src, "user_script", 1, true) then
        py.ldb_log((level == 0 and "In " or "From ") .. (info.name or "top level") .. ":")
        py.ldb_source_line(info.currentline)
      end
      level = level + 1
    end
    if level == 0 then py.ldb_log("<error> Can't retrieve Lua stack.") end
  end

  local function ldb_eval(args)
    local code = _tconcat(args, " ")
    local f = _loadstring("return " .. code, "@ldb_eval")
    if not f then
      local err
      f, err = _loadstring(code, "@ldb_eval")
      if not f then
        py.ldb_log("<error> " .. _tostring(err))
        return
      end
    end
    sandboxed(f)
    local ok, v = _pcall(f)
    if not ok then
      py.ldb_log("<error> " .. _tostring(unwrap_error(v)))
      return
    end
    py.ldb_log_max("<retval> " .. ldb_cat(v, 0))
  end

  -- ldbRepl: commands until one resumes the script; false once the client is gone.
  local function ldb_repl(lvl)
    while true do
      local verb, args = py.ldb_next()
      if verb == "closed" then return false end
      if verb == "error" then _error({err = "ERR " .. args}) end
      if verb == "step" or verb == "continue" then return true end
      if verb == "abort" then _error({err = "ERR script aborted for user request"}) end
      if verb == "trace" then
        ldb_trace(lvl + 1)
      elseif verb == "eval" then
        ldb_eval(args)
      elseif verb == "redis" then
        _pcall(redis_call, _unpack(args))
      elseif verb == "print" then
        if args[1] ~= nil and args[2] == nil then ldb_print(lvl + 1, args[1]) else ldb_print_all(lvl + 1) end
      end
      py.ldb_done(verb)
    end
  end

  ldb_hook = function(event)
    local info = dbg.getinfo(2, "Sl")
    -- Only the script's lines count (the sandbox's Lua code, as redis.debug
    -- or the wrappers of Python functions, is C code in Redis).
    if not info or not _sfind(info.short_src, "user_script", 1, true) then return end
    local stop = py.ldb_line(event == "count", info.currentline)
    if stop == 0 then return end
    local ok = ldb_repl(3)
    if not ok and stop == 2 then
      _error({err = "ERR timeout during Lua debugging with client closing connection"})
    end
    py.ldb_resumed()
  end

  redis_real.debug = function(...)
    if not py.ldb_active() then return end
    local parts = {}
    for i = 1, _select("#", ...) do parts[i] = ldb_cat((_select(i, ...)), 0) end
    py.ldb_debug(_tconcat(parts, ", "))
  end
  redis_real.breakpoint = function() return py.ldb_breakpoint() end
end

-- Functions: the library API seen while FUNCTION LOAD runs the code.
local register_function
local loadapi_redis = {
  log = redis_log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = py.version, REDIS_VERSION_NUM = py.version_num,
}
_setmetatable(loadapi_redis, {__index = missing_global})
local loadapi = {redis = (proxy(loadapi_redis, false))}
_setmetatable(loadapi, {__index = missing_global})

-- User chunks (and what they load) run with the proxy globals as their
-- environment; the thread's own globals stay private (lupa uses them).
sandboxed = function(f, err)
  if f then _setfenv(f, G_p) end
  return f, err
end
dbg.sethook(hook, "", HOOK_COUNT)

-- Reply encoding (Lua value -> RESP), run in Lua to use C's conversions ------
local NULL2, NULL3 = "$-1\r\n", "_\r\n"
local MAXDEPTH = 1000

local function bulk(out, s)
  out[#out + 1] = _sfmt("$%d\r\n", #s)
  out[#out + 1] = s
  out[#out + 1] = "\r\n"
end

local function nolines(s)
  return (_sgsub(s, "[\r\n]", " "))
end

local encode
encode = function(v, out, cresp, sresp, depth)
  local t = _type(v)
  if t == "string" then
    bulk(out, v)
  elseif t == "number" then
    out[#out + 1] = _sfmt(":%d\r\n", v)
  elseif t == "boolean" then
    if sresp == 2 then
      out[#out + 1] = v and ":1\r\n" or (cresp == 2 and NULL2 or NULL3)
    elseif cresp == 2 then
      out[#out + 1] = v and ":1\r\n" or ":0\r\n"
    else
      out[#out + 1] = v and "#t\r\n" or "#f\r\n"
    end
  elseif t == "table" then
    if depth > MAXDEPTH then
      out[#out + 1] = "-ERR reached lua stack limit\r\n"
      return
    end
    local e = _rawget(v, "err")
    if _type(e) == "string" then
      out[#out + 1] = "-" .. nolines(e) .. "\r\n"
      return
    end
    local s = _rawget(v, "ok")
    if _type(s) == "string" then
      out[#out + 1] = "+" .. nolines(s) .. "\r\n"
      return
    end
    local d = _rawget(v, "double")
    if _type(d) == "number" then
      -- (lupa hands -0 over as the integer 0)
      local txt = (d == 0 and 1 / d < 0) and "-0" or pyd2string(d)
      if cresp == 2 then bulk(out, txt) else out[#out + 1] = "," .. txt .. "\r\n" end
      return
    end
    local b = _rawget(v, "big_number")
    if _type(b) == "string" then
      b = nolines(b)
      if cresp == 2 then bulk(out, b) else out[#out + 1] = "(" .. b .. "\r\n" end
      return
    end
    local vs = _rawget(v, "verbatim_string")
    if _type(vs) == "table" then
      local fmt, str = _rawget(vs, "format"), _rawget(vs, "string")
      if _type(fmt) == "string" and _type(str) == "string" then
        if cresp == 2 then
          bulk(out, str)
        else
          out[#out + 1] = _sfmt("=%d\r\n", #str + 4)
          out[#out + 1] = _ssub(fmt .. "\0\0\0", 1, 3) .. ":" .. str .. "\r\n"
        end
        return
      end
    end
    local m = _rawget(v, "map")
    if _type(m) == "table" then
      local pos = #out + 1
      out[pos] = ""
      local n = 0
      for k, x in _next, m, nil do
        encode(k, out, cresp, sresp, depth + 1)
        encode(x, out, cresp, sresp, depth + 1)
        n = n + 1
      end
      out[pos] = cresp == 2 and _sfmt("*%d\r\n", n * 2) or _sfmt("%%%d\r\n", n)
      return
    end
    local st = _rawget(v, "set")
    if _type(st) == "table" then
      local pos = #out + 1
      out[pos] = ""
      local n = 0
      for k in _next, st, nil do
        encode(k, out, cresp, sresp, depth + 1)
        n = n + 1
      end
      out[pos] = cresp == 2 and _sfmt("*%d\r\n", n) or _sfmt("~%d\r\n", n)
      return
    end
    local pos = #out + 1
    out[pos] = ""
    local j = 1
    while true do
      local x = _rawget(v, j)
      if x == nil then break end
      encode(x, out, cresp, sresp, depth + 1)
      j = j + 1
    end
    out[pos] = _sfmt("*%d\r\n", j - 1)
  else
    out[#out + 1] = cresp == 2 and NULL2 or NULL3
  end
end

local function encode_reply(v, cresp, sresp)
  local out = {}
  encode(v, out, cresp, sresp, 0)
  local ign = false
  if _type(v) == "table" and _type(_rawget(v, "err")) == "string" then
    ign = _rawget(v, "ignore_error_stats_update") == true
  end
  return _tconcat(out), ign
end

-- Running ---------------------------------------------------------------------
local function error_info(e)
  if _type(e) ~= "table" then
    return false, nil, _tostring(e)
  end
  local msg = e.err
  if _type(msg) == "number" then msg = _tostring(msg) end
  if _type(msg) ~= "string" then msg = nil end
  local src, line = e.source, e.line
  if _type(src) == "number" then src = _tostring(src) end
  if _type(line) == "number" then line = _tostring(line) end
  if _type(src) ~= "string" then src = nil end
  if _type(line) ~= "string" then line = nil end
  return false, msg, src, line, _rawget(e, "ignore_error_stats_update") == true
end

local function finish(ok, v)
  if ok then return true, v end
  return error_info(v)
end

-- KEYS and ARGV from one argument list (the first nkeys are the keys).
local function split(nkeys, ...)
  local keys = {...}
  local argv = {_select(nkeys + 1, ...)}
  for i = _select("#", ...), nkeys + 1, -1 do keys[i] = nil end
  return keys, argv
end

local helpers = {}

function helpers.compile(body, name)
  local f, err = _loadstring(body, name)
  if not f then return nil, err end
  return (sandboxed(f))
end

-- A run: run_prep, then fn called under err_handler, then finish.  The
-- compiled layer (scripting/_bridge.pyx, _lc_exec) takes the same steps on
-- a thread of its own: run_prep_t's (below), fn through lua_pcall with
-- err_handler as its message handler, error_info on an error.
local function run_prep(keys, argv)
  if mode == "eval" then
    _rawset(G, "KEYS", keys)
    _rawset(G, "ARGV", argv)
  end
  kill_msg = nil
  dbg.sethook(hook, "", HOOK_COUNT)
end
local run_t
if mode == "eval" then
  run_t = function(fn, keys, argv)
    run_prep(keys, argv)
    return finish(_xpcall(fn, err_handler))
  end
else
  run_t = function(fn, keys, argv)
    run_prep(keys, argv)
    return finish(_xpcall(function() return fn(keys, argv) end, err_handler))
  end
end
-- run_prep for the compiled layer's own thread (_lc_exec), which nothing
-- but its runs use: its count hook, set once, stays between runs (the
-- count goes on across them; the hook only polls).  _lc_exec calls it
-- for its first run and for the first after pyinterrupt returned a kill
-- (kill_msg set, the hook on every line: LuaEngine._interrupt disarms the
-- link); for the others it sets KEYS and ARGV into G itself.
local function run_prep_t(keys, argv)
  if mode == "eval" then
    _rawset(G, "KEYS", keys)
    _rawset(G, "ARGV", argv)
  end
  kill_msg = nil
  dbg.sethook(hook, "", HOOK_COUNT)
end
helpers.run_t = run_t
helpers.run_prep = run_prep
helpers.run_prep_t = run_prep_t
helpers.G = G
helpers.err_handler = err_handler
helpers.error_info = error_info
if mode == "eval" then
  -- A run under the debugger: its line hook stops the script (no busy state).
  helpers.ldb_run_t = function(fn, keys, argv)
    _rawset(G, "KEYS", keys)
    _rawset(G, "ARGV", argv)
    kill_msg = nil
    dbg.sethook(ldb_hook, "l", HOOK_COUNT)
    return finish(_xpcall(fn, err_handler))
  end
end
function helpers.run(fn, nkeys, ...)
  return run_t(fn, split(nkeys, ...))
end
if mode ~= "eval" then

  -- FUNCTION LOAD: run the library code with the library API as globals.
  local registered
  local function read_flags(t)
    local flags = {}
    local j = 1
    while true do
      local f = t[j]
      if f == nil then break end
      if _type(f) ~= "string" and _type(f) ~= "number" then return nil end
      f = _tostring(f)
      local ok = py.valid_flag(f)
      if not ok then return nil end
      flags[#flags + 1] = ok
      j = j + 1
    end
    return flags
  end

  register_function = function(...)
    if not registered then
      _error({err = "ERR redis.register_function can only be called on FUNCTION LOAD command"})
    end
    local n = _select("#", ...)
    if n < 1 or n > 2 then
      _error({err = "ERR wrong number of arguments to redis.register_function"})
    end
    local name, desc, cb, flags
    if n == 1 then
      local t = ...
      if _type(t) ~= "table" then
        _error({err = "ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."})
      end
      for k, v in _next, t, nil do
        if _type(k) ~= "string" and _type(k) ~= "number" then
          _error({err = "ERR named argument key given to redis.register_function is not a string"})
        end
        local key = string.lower(_tostring(k))
        if key == "function_name" then
          if _type(v) ~= "string" and _type(v) ~= "number" then
            _error({err = "ERR function_name argument given to redis.register_function must be a string"})
          end
          name = _tostring(v)
        elseif key == "description" then
          if _type(v) ~= "string" and _type(v) ~= "number" then
            _error({err = "ERR description argument given to redis.register_function must be a string"})
          end
          desc = _tostring(v)
        elseif key == "callback" then
          if _type(v) ~= "function" then
            _error({err = "ERR callback argument given to redis.register_function must be a function"})
          end
          cb = v
        elseif key == "flags" then
          if _type(v) ~= "table" then
            _error({err = "ERR flags argument to redis.register_function must be a table representing function flags"})
          end
          flags = read_flags(v)
          if not flags then _error({err = "ERR unknown flag given"}) end
        else
          _error({err = "ERR unknown argument given to redis.register_function"})
        end
      end
      if not name then
        _error({err = "ERR redis.register_function must get a function name argument"})
      end
      if not cb then
        _error({err = "ERR redis.register_function must get a callback argument"})
      end
    else
      local a, b = ...
      if _type(a) ~= "string" and _type(a) ~= "number" then
        _error({err = "ERR first argument to redis.register_function must be a string"})
      end
      if _type(b) ~= "function" then
        _error({err = "ERR second argument to redis.register_function must be a function"})
      end
      name, cb = _tostring(a), b
    end
    local err = py.register(name, cb, desc, flags or {})
    if err then _error({err = err}) end
  end
  loadapi_redis.register_function = register_function

  function helpers.load_library(code, timeout_check)
    local f, err = _loadstring(code, "@user_function")
    if not f then return false, "compile", err end
    sandboxed(f)
    registered = true
    kill_msg = nil
    dbg.sethook(hook, "", HOOK_COUNT)
    G_mt.__index = loadapi
    local ok, e = _pcall(f)
    G_mt.__index = G
    registered = false
    kill_msg = nil
    dbg.sethook(hook, "", HOOK_COUNT)
    if not ok then
      e = unwrap_error(e)
      local _, msg = error_info(e)
      if msg == nil and _type(e) ~= "table" then msg = "ERR " .. _tostring(e) end
      return false, "run", msg
    end
    return true
  end
end

helpers.encode_reply = encode_reply
helpers.push_error = push_error
helpers.mk_ok = function(s) return {ok = s} end
-- n fresh {ok = "OK"} tables at once (engine.py hands them out one a reply).
helpers.mk_oks = function(n)
  local t = {}
  for i = 1, n do t[i] = {ok = "OK"} end
  return _unpack(t, 1, n)
end
helpers.mk_err = function(s) return {err = s, ignore_error_stats_update = true} end
helpers.mk_double = function(d) return {double = d} end
helpers.mk_big = function(s) return {big_number = s} end
helpers.mk_verbatim = function(f, s) return {verbatim_string = {format = f, string = s}} end
helpers.mk_map = function(...)
  local t = {}
  local n = _select("#", ...)
  local a = {...}
  for i = 1, n, 2 do
    local k = a[i]
    if k ~= nil then t[k] = a[i + 1] end
  end
  return {map = t}
end
helpers.mk_set = function(...)
  local t = {}
  local n = _select("#", ...)
  local a = {...}
  for i = 1, n do
    local k = a[i]
    if k ~= nil then t[k] = true end
  end
  return {set = t}
end
helpers.mk_array = function(n, ...)
  local a = {...}
  return a
end
helpers.kill_hook = function() dbg.sethook(hook, "l") end
helpers.is_table = function(v) return _type(v) == "table" end
helpers.lua_type = _type
return helpers

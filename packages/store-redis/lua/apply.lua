--[[
apply.lua: every write of the Redis store (DESIGN §4 "decide in core, commit
in the store"). The TypeScript side reads, lets core decide, and sends the
decided records here as groups of guards and writes; this script checks the
guards and applies the writes in one atomic step, keeping every index of a
job in line with its columns. It decides nothing about OJS itself: which
state comes next, when a retry is due, who holds a unique key is decided in
core; the guards only make sure that what was decided on is still what is
stored (rev, state, lock holder) and that a claim stays within the limits.

KEYS[1] = '<prefix>:seq' (every key shares the prefix's hash tag).
ARGV[1] = mode: 'all' (every guard of every group is checked before any
          write; one failed guard applies nothing) or 'each' (groups are
          independent: a group whose guards pass is applied, in order).
ARGV[2] = now (epoch ms, the store's Redis-synced clock)
ARGV[3] = now as an ISO 8601 string (queue created_at, paused_at)
ARGV[4] = wanted: in 'each' mode, stop after this many applied groups (0: all)
ARGV[5..] = records: an opcode and its fixed number of arguments; 'E' ends
          a group.

Returns { statuses, seqs }: statuses[i] is 1 (applied), 0 (not attempted)
or the reason its guard failed; seqs lists id, seq of each job inserted.
Numbers are passed as strings and compared with tonumber; they are never
concatenated (Lua prints numbers with 14 digits).
--]]
local P = string.sub(KEYS[1], 1, -5)
local mode = ARGV[1]
local now = tonumber(ARGV[2])
local nowIso = ARGV[3]
local wanted = tonumber(ARGV[4])

local ARITY = {
  Gjob = 3, Gabsent = 1, Gunique = 2, Gqueue = 1,
  Gkconc = 2, Gkrate = 3, Gwf = 2, Gcron = 2, Gset = 3,
  Wput = 17, Wdel = 1, Wlock = 3, Wqrate = 1, Wkrate = 2, Wwf = 3, Wcron = 5,
  Wcrondel = 1, Wset = 4, Wsetdel = 2, Wev = 2, Wqpause = 2, Wqconf = 4, E = 0,
}
-- The job columns kept in its hash beside the document, in Wput's order.
local FIELDS = { 'q', 'st', 'p', 't', 'rev', 'att', 'wid', 'ra', 'dl', 'ex', 'fin', 'dead', 'wf', 'rk', 'uk' }
local UNSTARTED = { scheduled = true, available = true, pending = true, retryable = true }
local TERMINAL = { completed = true, cancelled = true, discarded = true }
-- Priority descending, then seq: (100 - priority) * 2^44 + seq stays below 2^53.
local PRIORITY_SPAN = 17592186044416

local function key(...) return P .. ':' .. table.concat({ ... }, ':') end
local function jobKey(id) return P .. ':j:' .. id end

-- The index entries (sorted set key -> score) a job with columns c and seq has.
local function entries(c, seq)
  local e = {}
  if c == nil then return e end
  local st, q = c.st, c.q
  e[key('all')] = seq
  e[key('st', st)] = seq
  e[key('qs', q, st)] = seq
  e[key('ty', c.t)] = seq
  if st == 'available' then e[key('av', q)] = (100 - tonumber(c.p)) * PRIORITY_SPAN + seq end
  if (st == 'scheduled' or st == 'retryable') and c.ra ~= '' then e[key('due')] = tonumber(c.ra) end
  if c.ex ~= '' and UNSTARTED[st] then
    if c.wf == '' then e[key('exp')] = tonumber(c.ex) else e[key('wexp')] = tonumber(c.ex) end
  end
  if st == 'active' and c.dl ~= '' then e[key('lease')] = tonumber(c.dl) end
  if c.dead == '1' then
    e[key('dead')] = seq
    e[key('dead', q)] = seq
  end
  if TERMINAL[st] and c.fin ~= '' then
    local fin = tonumber(c.fin)
    e[key('fin', q, st)] = fin
    if c.wf == '' then
      local class = st
      if st == 'discarded' and c.dead == '1' then class = 'dead_letter' end
      e[key('ret', q, class)] = fin
    end
  end
  if c.rk ~= '' then
    if st == 'active' then e[key('rka', c.rk)] = seq end
    if st == 'available' then e[key('rkw', c.rk)] = seq end
  end
  if c.wf ~= '' then e[key('wfj', c.wf)] = seq end
  return e
end

local function reindex(id, old, new, seq)
  local before, after = entries(old, seq), entries(new, seq)
  for k, _ in pairs(before) do
    if after[k] == nil then redis.call('ZREM', k, id) end
  end
  for k, score in pairs(after) do
    if before[k] ~= score then redis.call('ZADD', k, score, id) end
  end
end

local function columns(id)
  local values = redis.call('HMGET', jobKey(id), 's', unpack(FIELDS))
  if not values[1] then return nil, nil end
  local c = {}
  for i, f in ipairs(FIELDS) do c[f] = values[i + 1] or '' end
  return c, tonumber(values[1])
end

local seqs = {}
local wake = false

local function ensureQueue(q)
  if redis.call('ZADD', key('queues'), 'NX', 0, q) == 1 then
    redis.call('HSETNX', key('q', q), 'created_at', nowIso)
  end
end

-- Fixed rate window: one starts at the first start after the previous ended.
local function rateAllows(k, limit, period)
  local w = redis.call('HMGET', key('rate', k), 'start', 'count')
  if not w[1] then return true end
  if now >= tonumber(w[1]) + period then return true end
  return tonumber(w[2]) < limit
end

local function rateTake(k, period)
  local rk = key('rate', k)
  local w = redis.call('HMGET', rk, 'start', 'count')
  if not w[1] or now >= tonumber(w[1]) + period then
    redis.call('HSET', rk, 'start', ARGV[2], 'count', 1)
  else
    redis.call('HINCRBY', rk, 'count', 1)
  end
  -- A window nobody reads after it ended is garbage: it expires (ms).
  redis.call('PEXPIRE', rk, period * 2 + 60000)
end

local function queueLimits(q)
  local v = redis.call('HMGET', key('q', q), 'paused', 'conc', 'rate', 'period')
  return v[1] == '1', tonumber(v[2]), tonumber(v[3]), tonumber(v[4])
end

-- A failed guard's reason, and whether it stops every later claim of its queue.
local function check(op, a)
  if op == 'Gjob' then
    local v = redis.call('HMGET', jobKey(a[1]), 'rev', 'st')
    if not v[1] then return 'missing' end
    if a[2] ~= '' and v[1] ~= a[2] then return 'stale' end
    if a[3] ~= '' and v[2] ~= a[3] then return 'stale' end
  elseif op == 'Gabsent' then
    if redis.call('EXISTS', jobKey(a[1])) == 1 then return 'dup:' .. a[1] end
  elseif op == 'Gunique' then
    local holder = redis.call('HGET', key('u', a[1]), 'id') or ''
    if holder ~= a[2] then return 'unique' end
  elseif op == 'Gqueue' then
    -- The queue is open, below its concurrency and within its rate window.
    local paused, conc, rate, period = queueLimits(a[1])
    if paused then return 'paused', a[1] end
    if conc ~= nil and redis.call('ZCARD', key('qs', a[1], 'active')) >= conc then return 'qconc', a[1] end
    if rate ~= nil and not rateAllows('queue-config:' .. a[1], rate, period) then return 'qrate', a[1] end
  elseif op == 'Gkconc' then
    if redis.call('ZCARD', key('rka', a[1])) >= tonumber(a[2]) then return 'kconc' end
  elseif op == 'Gkrate' then
    if not rateAllows(a[1], tonumber(a[2]), tonumber(a[3])) then return 'krate' end
  elseif op == 'Gwf' then
    local rev = redis.call('HGET', key('wf', a[1]), 'rev')
    if a[2] == '' then
      if rev then return 'stale' end
    elseif rev ~= a[2] then return 'stale' end
  elseif op == 'Gcron' then
    local rev = redis.call('HGET', key('cron', a[1]), 'rev')
    if a[2] == '' then
      if rev then return 'stale' end
    elseif rev ~= a[2] then return 'stale' end
  elseif op == 'Gset' then
    local rev = redis.call('HGET', key('sr', a[1]), a[2])
    if a[3] == '' then
      if rev then return 'stale' end
    elseif rev ~= a[3] then return 'stale' end
  end
  return nil
end

local function write(op, a)
  if op == 'Wput' then
    local id = a[1]
    local old, seq = columns(id)
    local new = {}
    local pairs_ = { 'd', a[2] }
    for i, f in ipairs(FIELDS) do
      new[f] = a[i + 2]
      pairs_[#pairs_ + 1] = f
      pairs_[#pairs_ + 1] = a[i + 2]
    end
    if seq == nil then
      seq = redis.call('INCR', KEYS[1])
      pairs_[#pairs_ + 1] = 's'
      pairs_[#pairs_ + 1] = seq
      seqs[#seqs + 1] = id
      seqs[#seqs + 1] = seq
      ensureQueue(new.q)
    end
    redis.call('HSET', jobKey(id), unpack(pairs_))
    reindex(id, old, new, seq)
    if new.st == 'available' and (old == nil or old.st ~= 'available') then wake = true end
  elseif op == 'Wdel' then
    local id = a[1]
    local old, seq = columns(id)
    if old ~= nil then
      reindex(id, old, nil, seq)
      redis.call('DEL', jobKey(id))
      if old.uk ~= '' and redis.call('HGET', key('u', old.uk), 'id') == id then
        redis.call('DEL', key('u', old.uk))
      end
    end
  elseif op == 'Wlock' then
    redis.call('HSET', key('u', a[1]), 'id', a[2], 'at', a[3])
  elseif op == 'Wqrate' then
    local _, _, rate, period = queueLimits(a[1])
    if rate ~= nil then rateTake('queue-config:' .. a[1], period) end
  elseif op == 'Wkrate' then
    rateTake(a[1], tonumber(a[2]))
  elseif op == 'Wwf' then
    redis.call('HSET', key('wf', a[1]), 'rev', a[2], 'd', a[3])
  elseif op == 'Wcron' then
    local name = a[1]
    redis.call('HSET', key('cron', name), 'rev', a[2], 'd', a[5])
    redis.call('ZADD', key('crons'), 0, name)
    if a[3] == '1' and a[4] ~= '' then
      redis.call('ZADD', key('crondue'), tonumber(a[4]), name)
    else
      redis.call('ZREM', key('crondue'), name)
    end
  elseif op == 'Wcrondel' then
    redis.call('DEL', key('cron', a[1]))
    redis.call('ZREM', key('crons'), a[1])
    redis.call('ZREM', key('crondue'), a[1])
  elseif op == 'Wset' then
    redis.call('HSET', key('sr', a[1]), a[2], a[3])
    redis.call('HSET', key('sv', a[1]), a[2], a[4])
    redis.call('ZADD', key('sk', a[1]), 0, a[2])
  elseif op == 'Wsetdel' then
    redis.call('HDEL', key('sr', a[1]), a[2])
    redis.call('HDEL', key('sv', a[1]), a[2])
    redis.call('ZREM', key('sk', a[1]), a[2])
  elseif op == 'Wev' then
    local seq = redis.call('INCR', key('evseq'))
    redis.call('ZADD', key('ev'), seq, a[1])
    redis.call('HSET', key('evd'), a[1], a[2])
  elseif op == 'Wqpause' then
    ensureQueue(a[1])
    if a[2] == '1' then
      redis.call('HSET', key('q', a[1]), 'paused', '1', 'paused_at', nowIso)
    else
      redis.call('HDEL', key('q', a[1]), 'paused', 'paused_at')
      wake = true
    end
  elseif op == 'Wqconf' then
    -- '-' keeps a value, '' clears it.
    ensureQueue(a[1])
    local qk = key('q', a[1])
    if a[2] == '' then redis.call('HDEL', qk, 'conc') elseif a[2] ~= '-' then redis.call('HSET', qk, 'conc', a[2]) end
    if a[3] == '' then
      redis.call('HDEL', qk, 'rate', 'period')
    elseif a[3] ~= '-' then
      redis.call('HSET', qk, 'rate', a[3], 'period', a[4])
    end
    wake = true
  end
end

-- Parse the records into groups of guards and writes.
local groups = {}
local current = { guards = {}, writes = {} }
local i = 5
while i <= #ARGV do
  local op = ARGV[i]
  local n = ARITY[op]
  if n == nil then return redis.error_reply('ojs apply: unknown opcode ' .. tostring(op)) end
  local args = {}
  for j = 1, n do args[j] = ARGV[i + j] end
  i = i + n + 1
  if op == 'E' then
    groups[#groups + 1] = current
    current = { guards = {}, writes = {} }
  elseif string.sub(op, 1, 1) == 'G' then
    current.guards[#current.guards + 1] = { op, args }
  else
    current.writes[#current.writes + 1] = { op, args }
  end
end
if #current.guards > 0 or #current.writes > 0 then groups[#groups + 1] = current end

local statuses = {}
for g = 1, #groups do statuses[g] = 0 end

if mode == 'all' then
  for g, group in ipairs(groups) do
    for _, guard in ipairs(group.guards) do
      local reason = check(guard[1], guard[2])
      if reason ~= nil then
        statuses[g] = reason
        return { statuses, {} }
      end
    end
  end
  for g, group in ipairs(groups) do
    for _, w in ipairs(group.writes) do write(w[1], w[2]) end
    statuses[g] = 1
  end
else
  local applied = 0
  local stopped = {}
  for g, group in ipairs(groups) do
    if wanted > 0 and applied >= wanted then break end
    local reason = nil
    for _, guard in ipairs(group.guards) do
      local args = guard[2]
      -- A queue already found paused or at a limit is not looked at again.
      local op = guard[1]
      if op == 'Gqueue' and stopped[args[1]] then
        reason = stopped[args[1]]
        break
      end
      local why, stopQueue = check(op, args)
      if why ~= nil then
        reason = why
        if stopQueue ~= nil then stopped[stopQueue] = why end
        break
      end
    end
    if reason == nil then
      for _, w in ipairs(group.writes) do write(w[1], w[2]) end
      statuses[g] = 1
      applied = applied + 1
    else
      statuses[g] = reason
    end
  end
end

if wake then redis.call('PUBLISH', key('wake'), '1') end
return { statuses, seqs }

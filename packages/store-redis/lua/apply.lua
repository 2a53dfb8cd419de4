--[[
apply.lua (function ojs_apply of the store's function library, lib.ts):
every write of the Redis store (DESIGN §4 "decide in core, commit
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
ARGV[5..] = records: an opcode and its fixed number of arguments (ARITY);
          'E' ends a group.

A job is one string, `rev \31 state \31 seq \31 base \31 life`
(src/records.ts): its rev and state for the guards, its FIFO sequence
number (given here at insert), and its JSON document, the source of truth,
in two parts: base, the fields an enqueue sets, and life, the lifecycle. A
transition whose base is unchanged sends only life (this function keeps
the stored base). JSON never holds a raw \31, so the separators are safe.
One string takes about 30 % less memory than a hash of the same values
(a hash with a value over 64 bytes leaves Redis's compact encoding). Indexes are sorted sets whose members are job ids; which sets
a job is in is decided in TypeScript (src/indexes.ts) for the job before
and after the write, and a Wput or Wdel carries the difference: the sets
to leave, and the sets to enter with their scores ('s<n>': the job's seq
plus n). The write's guard on the job's rev makes that "before" exact.

Returns { statuses, seqs }: statuses[i] is 1 (applied), 0 (not attempted)
or the reason its guard failed; seqs lists id, seq of each job inserted.
Numbers arrive as strings and are compared with tonumber; large ones are
never concatenated (Lua prints numbers with 14 digits).

This function runs on every job transition, so it is written for few
redis.call()s (each costs about 1-2 us): a job's columns and a queue's
limits are read once per call, sequence numbers are reserved with one
INCRBY, index changes and events are written once per key at the end; everything that
does not change between calls (tables, helpers) is built once, when the
library is loaded, not on every call as an EVAL script's body would be.
--]]
-- Per call (set by apply(); Redis runs one function at a time).
local KEYS, ARGV, P, now, nowIso

local ARITY = {
  Gjob = 3, Gabsent = 1, Gunique = 2, Gqueue = 1, Gkconc = 2, Gkrate = 3, Gtconc = 2,
  Gwf = 2, Gcron = 2, Gset = 3,
  Wput = 8, Wdel = 3, Wlock = 3, Wqrate = 1, Wkrate = 2, Wwf = 3, Wcron = 5,
  Wcrondel = 1, Wset = 4, Wsetdel = 2, Wev = 2, Wqpause = 2, Wqconf = 4, E = 0,
}
local PJ, PQS, PRKA
local function usePrefix(prefix)
  if P == prefix then return end
  P = prefix
  PJ, PQS, PRKA = P .. ':j:', P .. ':qs:', P .. ':rka:'
end

-- Sorted set changes are buffered per key (member -> score, or false for a
-- removal; the last change of a member wins) and written with one ZADD and
-- one ZREM per key at the end of the call: a batch of 50 claims moves 50
-- members of each index in two calls instead of a hundred. A key is
-- flushed early before anything reads it (ZCARD of a limit).
local zbuf, zkeys
local function zset(k, id, score)
  local b = zbuf[k]
  if b == nil then
    b = {}
    zbuf[k] = b
    zkeys[#zkeys + 1] = k
  end
  b[id] = score
end

-- Lua's unpack() is bounded by its C stack: arguments go in slices.
local SLICE = 2000
local function callSliced(cmd, k, list)
  for from = 1, #list, SLICE do
    redis.call(cmd, k, unpack(list, from, math.min(from + SLICE - 1, #list)))
  end
end

local function zflush(k)
  local b = zbuf[k]
  if b == nil then return end
  zbuf[k] = nil
  local adds, rems = {}, {}
  for m, score in pairs(b) do
    if score == false then
      rems[#rems + 1] = m
    else
      adds[#adds + 1] = score
      adds[#adds + 1] = m
    end
  end
  if #rems > 0 then callSliced('ZREM', k, rems) end
  -- Pairs: an even slice size keeps each score with its member.
  if #adds > 0 then callSliced('ZADD', k, adds) end
end

local function zcard(k)
  zflush(k)
  return redis.call('ZCARD', k)
end

-- Applies a Wput's or Wdel's index changes (records from ARGV[i]): the
-- sets to leave, then the sets to enter with their scores.
local function reindex(id, seq, i, nLeave, nEnter)
  for k = i, i + nLeave - 1 do zset(P .. ':' .. ARGV[k], id, false) end
  local j = i + nLeave
  for k = j, j + 2 * nEnter - 1, 2 do
    local score = ARGV[k + 1]
    if string.byte(score, 1) == 115 then -- 's': relative to the seq
      zset(P .. ':' .. ARGV[k], id, tonumber(string.sub(score, 2)) + seq)
    else
      zset(P .. ':' .. ARGV[k], id, tonumber(score))
    end
  end
end

-- A stored job's fields: rev, state, seq, and where its base document is.
local function parseJob(v)
  local a = string.find(v, '\31', 1, true)
  local b = string.find(v, '\31', a + 1, true)
  local c = string.find(v, '\31', b + 1, true)
  local d = string.find(v, '\31', c + 1, true)
  return {
    rev = string.sub(v, 1, a - 1),
    st = string.sub(v, a + 1, b - 1),
    s = tonumber(string.sub(v, b + 1, c - 1)),
    raw = v,
    from = c + 1,
    to = d - 1,
  }
end

-- Jobs as this call has seen them: id -> parseJob() or false.
local jobs
local function stored(id)
  local j = jobs[id]
  if j == nil then
    local v = redis.call('GET', PJ .. id)
    if v then j = parseJob(v) else j = false end
    jobs[id] = j
  end
  return j
end

-- Sequence numbers: the first one a call needs reserves as many as the call
-- can use (its Wput records: an update takes none, leaving a gap FIFO
-- order does not mind) with one INCRBY.
local putCount, seqNext, seqTop
local function nextSeq()
  if seqNext == nil or seqNext > seqTop then
    seqTop = redis.call('INCRBY', KEYS[1], putCount)
    seqNext = seqTop - putCount + 1
  end
  local seq = seqNext
  seqNext = seqNext + 1
  return seq
end

-- Events of the call, written together at its end: one INCRBY, one ZADD
-- (id by sequence) and one HSET (id -> envelope).
local events
local function flushEvents()
  if #events == 0 then return end
  local top = redis.call('INCRBY', P .. ':evseq', #events / 2)
  local first = top - #events / 2
  local ranked = {}
  for n = 1, #events, 2 do
    ranked[#ranked + 1] = first + (n + 1) / 2
    ranked[#ranked + 1] = events[n]
  end
  callSliced('ZADD', P .. ':ev', ranked)
  callSliced('HSET', P .. ':evd', events)
end

local seqs, wake, queuesSeen
local function ensureQueue(q)
  if queuesSeen[q] then return end
  queuesSeen[q] = true
  if redis.call('ZADD', P .. ':queues', 'NX', 0, q) == 1 then
    redis.call('HSETNX', P .. ':q:' .. q, 'created_at', nowIso)
  end
end

local limits
local function queueLimits(q)
  local l = limits[q]
  if l == nil then
    local v = redis.call('HMGET', P .. ':q:' .. q, 'paused', 'conc', 'rate', 'period')
    l = { paused = v[1] == '1', conc = tonumber(v[2]), rate = tonumber(v[3]), period = tonumber(v[4]) }
    limits[q] = l
  end
  return l
end

-- Fixed rate window: one starts at the first start after the previous ended.
local function rateAllows(k, limit, period)
  local w = redis.call('HMGET', P .. ':rate:' .. k, 'start', 'count')
  if not w[1] then return true end
  if now >= tonumber(w[1]) + period then return true end
  return tonumber(w[2]) < limit
end

local function rateTake(k, period)
  local rk = P .. ':rate:' .. k
  local w = redis.call('HMGET', rk, 'start', 'count')
  if not w[1] or now >= tonumber(w[1]) + period then
    redis.call('HSET', rk, 'start', ARGV[2], 'count', 1)
  else
    redis.call('HINCRBY', rk, 'count', 1)
  end
  -- A window nobody reads after it ended is garbage: it expires (ms).
  redis.call('PEXPIRE', rk, period * 2 + 60000)
end

local function guardRev(k, want)
  local rev = redis.call('HGET', k, 'rev')
  if want == '' then
    if rev then return 'stale' end
  elseif rev ~= want then
    return 'stale'
  end
  return nil
end

-- A failed guard's reason (and the queue it stops, for a claim), or nil.
local function check(op, i)
  local a1, a2, a3 = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if op == 'Gjob' then
    local j = stored(a1)
    if not j then return 'missing' end
    if a2 ~= '' and j.rev ~= a2 then return 'stale' end
    if a3 ~= '' and j.st ~= a3 then return 'stale' end
  elseif op == 'Gabsent' then
    if stored(a1) then return 'dup:' .. a1 end
  elseif op == 'Gunique' then
    local holder = redis.call('HGET', P .. ':u:' .. a1, 'id') or ''
    if holder ~= a2 then return 'unique' end
  elseif op == 'Gqueue' then
    -- The queue is open, below its concurrency and within its rate window.
    local l = queueLimits(a1)
    if l.paused then return 'paused', a1 end
    if l.conc ~= nil and zcard(PQS .. a1 .. ':active') >= l.conc then return 'qconc', a1 end
    if l.rate ~= nil and not rateAllows('queue-config:' .. a1, l.rate, l.period) then return 'qrate', a1 end
  elseif op == 'Gkconc' then
    if zcard(PRKA .. a1) >= tonumber(a2) then return 'kconc' end
  elseif op == 'Gtconc' then
    -- The tenant is below its max_concurrency (active jobs in ta:<tenant>).
    if zcard(P .. ':ta:' .. a1) >= tonumber(a2) then return 'tconc' end
  elseif op == 'Gkrate' then
    if not rateAllows(a1, tonumber(a2), tonumber(a3)) then return 'krate' end
  elseif op == 'Gwf' then
    return guardRev(P .. ':wf:' .. a1, a2)
  elseif op == 'Gcron' then
    return guardRev(P .. ':cron:' .. a1, a2)
  elseif op == 'Gset' then
    local rev = redis.call('HGET', P .. ':sr:' .. a1, a2)
    if a3 == '' then
      if rev then return 'stale' end
    elseif rev ~= a3 then
      return 'stale'
    end
  end
  return nil
end

local function write(op, i)
  local a1, a2, a3, a4 = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  if op == 'Wput' then
    -- id, base ('' unchanged), life, rev, state, queue, #leave, #enter,
    -- leave..., (enter, score)...
    local j = stored(a1)
    local rev, st = a4, ARGV[i + 5]
    local seq
    local base = a2
    if j then
      seq = j.s
      if base == '' then base = string.sub(j.raw, j.from, j.to) end
    else
      seq = nextSeq()
      seqs[#seqs + 1] = a1
      seqs[#seqs + 1] = seq
      ensureQueue(ARGV[i + 6])
    end
    local value = rev .. '\31' .. st .. '\31' .. string.format('%.0f', seq) .. '\31' .. base .. '\31' .. a3
    redis.call('SET', PJ .. a1, value)
    reindex(a1, seq, i + 9, tonumber(ARGV[i + 7]), tonumber(ARGV[i + 8]))
    jobs[a1] = parseJob(value)
    if st == 'available' and (not j or j.st ~= 'available') then wake = true end
  elseif op == 'Wdel' then
    -- id, unique key ('' none), #leave, leave...
    local j = stored(a1)
    if j then
      reindex(a1, j.s, i + 4, tonumber(a3), 0)
      redis.call('DEL', PJ .. a1)
      if a2 ~= '' and redis.call('HGET', P .. ':u:' .. a2, 'id') == a1 then
        redis.call('DEL', P .. ':u:' .. a2)
      end
      jobs[a1] = false
    end
  elseif op == 'Wlock' then
    redis.call('HSET', P .. ':u:' .. a1, 'id', a2, 'at', a3)
  elseif op == 'Wqrate' then
    local l = queueLimits(a1)
    if l.rate ~= nil then rateTake('queue-config:' .. a1, l.period) end
  elseif op == 'Wkrate' then
    rateTake(a1, tonumber(a2))
  elseif op == 'Wwf' then
    redis.call('HSET', P .. ':wf:' .. a1, 'rev', a2, 'd', a3)
  elseif op == 'Wcron' then
    redis.call('HSET', P .. ':cron:' .. a1, 'rev', a2, 'd', ARGV[i + 5])
    redis.call('ZADD', P .. ':crons', 0, a1)
    if a3 == '1' and a4 ~= '' then
      redis.call('ZADD', P .. ':crondue', tonumber(a4), a1)
    else
      redis.call('ZREM', P .. ':crondue', a1)
    end
  elseif op == 'Wcrondel' then
    redis.call('DEL', P .. ':cron:' .. a1)
    redis.call('ZREM', P .. ':crons', a1)
    redis.call('ZREM', P .. ':crondue', a1)
  elseif op == 'Wset' then
    redis.call('HSET', P .. ':sr:' .. a1, a2, a3)
    redis.call('HSET', P .. ':sv:' .. a1, a2, a4)
    redis.call('ZADD', P .. ':sk:' .. a1, 0, a2)
  elseif op == 'Wsetdel' then
    redis.call('HDEL', P .. ':sr:' .. a1, a2)
    redis.call('HDEL', P .. ':sv:' .. a1, a2)
    redis.call('ZREM', P .. ':sk:' .. a1, a2)
  elseif op == 'Wev' then
    events[#events + 1] = a1
    events[#events + 1] = a2
  elseif op == 'Wqpause' then
    ensureQueue(a1)
    limits[a1] = nil
    if a2 == '1' then
      redis.call('HSET', P .. ':q:' .. a1, 'paused', '1', 'paused_at', nowIso)
    else
      redis.call('HDEL', P .. ':q:' .. a1, 'paused', 'paused_at')
      wake = true
    end
  elseif op == 'Wqconf' then
    -- '-' keeps a value, '' clears it.
    ensureQueue(a1)
    limits[a1] = nil
    local qk = P .. ':q:' .. a1
    if a2 == '' then redis.call('HDEL', qk, 'conc') elseif a2 ~= '-' then redis.call('HSET', qk, 'conc', a2) end
    if a3 == '' then
      redis.call('HDEL', qk, 'rate', 'period')
    elseif a3 ~= '-' then
      redis.call('HSET', qk, 'rate', a3, 'period', a4)
    end
    wake = true
  end
end

-- The number of ARGV entries of the record at i (Wput and Wdel carry their
-- index changes after their fixed arguments).
local function span(op, i)
  if op == 'Wput' then return 9 + tonumber(ARGV[i + 7]) + 2 * tonumber(ARGV[i + 8]) end
  if op == 'Wdel' then return 4 + tonumber(ARGV[i + 3]) end
  return ARITY[op] + 1
end

-- Groups: the ARGV index of each group's first record and of its end marker.
local starts, ends
local function parseGroups()
  starts, ends = {}, {}
  putCount = 0
  local i, first = 5, 5
  local n = #ARGV
  while i <= n do
    local op = ARGV[i]
    local arity = ARITY[op]
    if arity == nil then return 'ojs apply: unknown opcode ' .. tostring(op) end
    if op == 'Wput' then putCount = putCount + 1 end
    if i + arity > n then return 'ojs apply: truncated record ' .. op end
    if op == 'E' then
      starts[#starts + 1] = first
      ends[#ends + 1] = i
      first = i + 1
    end
    i = i + span(op, i)
  end
  if first <= n then
    starts[#starts + 1] = first
    ends[#ends + 1] = n + 1
  end
  return nil
end

-- Checks the guards of group g; its reason and the queue it stops, or nil.
local function checkGroup(g, stopped)
  local i, last = starts[g], ends[g]
  while i < last do
    local op = ARGV[i]
    if string.byte(op, 1) == 71 then -- 'G'
      if op == 'Gqueue' and stopped ~= nil and stopped[ARGV[i + 1]] then return stopped[ARGV[i + 1]] end
      local why, queue = check(op, i)
      if why ~= nil then return why, queue end
    end
    i = i + span(op, i)
  end
  return nil
end

local function applyGroup(g)
  local i, last = starts[g], ends[g]
  while i < last do
    local op = ARGV[i]
    if string.byte(op, 1) == 87 then write(op, i) end -- 'W'
    i = i + span(op, i)
  end
end

local function apply(keys, args)
  KEYS, ARGV = keys, args
  usePrefix(string.sub(KEYS[1], 1, -5))
  now, nowIso = tonumber(ARGV[2]), ARGV[3]
  local mode, wanted = ARGV[1], tonumber(ARGV[4])
  jobs, seqs, wake, queuesSeen, limits = {}, {}, false, {}, {}
  zbuf, zkeys, events, seqNext, seqTop = {}, {}, {}, nil, nil
  local bad = parseGroups()
  if bad ~= nil then return redis.error_reply(bad) end

  local statuses = {}
  for g = 1, #starts do statuses[g] = 0 end

  if mode == 'all' then
    for g = 1, #starts do
      local reason = checkGroup(g, nil)
      if reason ~= nil then
        statuses[g] = reason
        return { statuses, {} }
      end
    end
    for g = 1, #starts do
      applyGroup(g)
      statuses[g] = 1
    end
  else
    local applied = 0
    -- A queue found paused or at a limit is not looked at again.
    local stopped = {}
    for g = 1, #starts do
      if wanted > 0 and applied >= wanted then break end
      local reason, queue = checkGroup(g, stopped)
      if reason == nil then
        applyGroup(g)
        statuses[g] = 1
        applied = applied + 1
      else
        statuses[g] = reason
        if queue ~= nil then stopped[queue] = reason end
      end
    end
  end

  for _, k in ipairs(zkeys) do zflush(k) end
  flushEvents()
  if wake then redis.call('PUBLISH', P .. ':wake', '1') end
  return { statuses, seqs }
end

redis.register_function('ojs_apply__V__', apply)

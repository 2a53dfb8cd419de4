--[[
read.lua (function ojs_read of the store's function library, lib.ts,
flagged no-writes): the reads of the Redis store that need more than one command,
answered in one round trip (the documents of the jobs an index names, a
claim's candidates with their queues' limits). Reads only.

KEYS[1] = '<prefix>:seq'. ARGV[1] = the read, then its arguments:

  jobs ID...                       -> the stored job per id (nil when missing)
  range KEY MIN MAX OFFSET LIMIT DIR [BY]
                                   -> id, stored job of the members of the
                                      sorted set KEY with MIN <= score <= MAX
                                      (Redis score syntax: '(' excludes),
                                      DIR 'asc' or 'desc'
  claim WANTED TENANT (QUEUE CURSOR)...
                                   -> per queue: paused, then id, score,
                                      stored job of up to WANTED available jobs
                                      (of the named TENANT only, from
                                      avt:QUEUE:TENANT, when not '') after
                                      CURSOR (an exclusive score), in claim
                                      order; fewer queues are read once WANTED
                                      candidates were found
  scores KEY MIN MAX LIMIT         -> id, score of the first LIMIT members in range
  locks KEY...                     -> per unique key: holder id, locked_at,
                                      stored job (nils when free)
  queue NAME                       -> created_at, paused, conc, rate, period
  counts STATE...                  -> queue, state, count of every non-zero pair
  qstats QUEUE NOW STATE...        -> paused, completed in the last minute
                                      and hour, discarded in the last hour,
                                      then the count of each STATE
  queues                           -> name, created_at, paused, conc, rate, period
  rate KEY                         -> active, waiting, window start, count,
                                      the newest active or waiting job as
                                      stored (its rate_limit)
  cron NAME...                     -> doc per cron
  crondue NOW                      -> docs of due crons
  crons                            -> docs of every cron, by name
  settings NS PREFIX               -> key, rev, record per setting
  events AFTER_ID CURSOR DIR LIMIT -> seq, id, stored event of up to LIMIT events after
                                      the event AFTER_ID (all when '' or
                                      unknown), continuing past the seq
                                      CURSOR ('' none) in direction DIR
--]]
local P
local function key(...) return P .. ':' .. table.concat({ ... }, ':') end
-- The set of a queue's jobs in a state (available jobs live in the claim index).
local function stateKey(q, st)
  if st == 'available' then return key('av', q) end
  return key('qs', q, st)
end

-- A job as stored: rev, state, seq, base and life in one string (src/records.ts).
local function doc(id)
  return redis.call('GET', P .. ':j:' .. id)
end

local function read(KEYS, ARGV)
  P = string.sub(KEYS[1], 1, -5)
  local op = ARGV[1]
  if op == 'jobs' then
    local out = {}
    for i = 2, #ARGV do
      out[#out + 1] = doc(ARGV[i])
    end
    return out
  elseif op == 'range' then
    local k, min, max, offset, limit, dir = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
    local ids
    if dir == 'desc' then
      ids = redis.call('ZREVRANGEBYSCORE', k, max, min, 'LIMIT', offset, limit)
    else
      ids = redis.call('ZRANGEBYSCORE', k, min, max, 'LIMIT', offset, limit)
    end
    local out = {}
    for _, id in ipairs(ids) do
      out[#out + 1] = id
      out[#out + 1] = doc(id)
    end
    return out
  elseif op == 'claim' then
    local wanted = tonumber(ARGV[2])
    local tenant = ARGV[3]
    local found = 0
    local out = {}
    local i = 4
    while i <= #ARGV do
      local q, cursor = ARGV[i], ARGV[i + 1]
      i = i + 2
      local queue = {}
      if found >= wanted then
        queue[1] = 'unread'
      else
        local paused = redis.call('HGET', key('q', q), 'paused')
        queue[1] = paused == '1' and 'paused' or 'open'
        if paused ~= '1' then
          local set = tenant == '' and key('av', q) or key('avt', q, tenant)
          local ids = redis.call('ZRANGEBYSCORE', set, '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, wanted - found)
          for j = 1, #ids, 2 do
            queue[#queue + 1] = ids[j]
            queue[#queue + 1] = ids[j + 1]
            queue[#queue + 1] = doc(ids[j])
            found = found + 1
          end
        end
      end
      out[#out + 1] = queue
    end
    return out
  elseif op == 'scores' then
    return redis.call('ZRANGEBYSCORE', ARGV[2], ARGV[3], ARGV[4], 'WITHSCORES', 'LIMIT', 0, ARGV[5])
  elseif op == 'locks' then
    local out = {}
    for i = 2, #ARGV do
      local lock = redis.call('HMGET', key('u', ARGV[i]), 'id', 'at')
      out[#out + 1] = lock[1]
      out[#out + 1] = lock[2]
      out[#out + 1] = lock[1] and doc(lock[1]) or false
    end
    return out
  elseif op == 'queue' then
    local v = redis.call('HMGET', key('q', ARGV[2]), 'created_at', 'paused', 'conc', 'rate', 'period')
    local out = {}
    for j = 1, 5 do out[j] = v[j] or '' end
    return out
  elseif op == 'counts' then
    local out = {}
    for _, q in ipairs(redis.call('ZRANGE', key('queues'), 0, -1)) do
      for k = 2, #ARGV do
        local st = ARGV[k]
        local n = redis.call('ZCARD', stateKey(q, st))
        if n > 0 then
          out[#out + 1] = q
          out[#out + 1] = st
          out[#out + 1] = n
        end
      end
    end
    return out
  elseif op == 'qstats' then
    local q, now = ARGV[2], tonumber(ARGV[3])
    local out = { redis.call('HGET', key('q', q), 'paused') or '' }
    out[#out + 1] = redis.call('ZCOUNT', key('fin', q, 'completed'), now - 60000, '+inf')
    out[#out + 1] = redis.call('ZCOUNT', key('fin', q, 'completed'), now - 3600000, '+inf')
    out[#out + 1] = redis.call('ZCOUNT', key('fin', q, 'discarded'), now - 3600000, '+inf')
    for i = 4, #ARGV do out[#out + 1] = redis.call('ZCARD', stateKey(q, ARGV[i])) end
    return out
  elseif op == 'queues' then
    local out = {}
    for _, q in ipairs(redis.call('ZRANGE', key('queues'), 0, -1)) do
      local v = redis.call('HMGET', key('q', q), 'created_at', 'paused', 'conc', 'rate', 'period')
      out[#out + 1] = q
      for j = 1, 5 do out[#out + 1] = v[j] or '' end
    end
    return out
  elseif op == 'rate' then
    local rk = ARGV[2]
    local active, waiting = redis.call('ZCARD', key('rka', rk)), redis.call('ZCARD', key('rkw', rk))
    local w = redis.call('HMGET', key('rate', rk), 'start', 'count')
    local newest, newestSeq = nil, -1
    for _, k in ipairs({ key('rka', rk), key('rkw', rk) }) do
      local top = redis.call('ZREVRANGE', k, 0, 0, 'WITHSCORES')
      if top[1] and tonumber(top[2]) > newestSeq then
        newest, newestSeq = top[1], tonumber(top[2])
      end
    end
    local d = newest and doc(newest) or ''
    return { active, waiting, w[1] or '', w[2] or '', d }
  elseif op == 'cron' then
    local out = {}
    for i = 2, #ARGV do out[#out + 1] = redis.call('HGET', key('cron', ARGV[i]), 'd') or '' end
    return out
  elseif op == 'crondue' then
    local out = {}
    for _, name in ipairs(redis.call('ZRANGEBYSCORE', key('crondue'), '-inf', ARGV[2])) do
      out[#out + 1] = redis.call('HGET', key('cron', name), 'd')
    end
    return out
  elseif op == 'crons' then
    local out = {}
    for _, name in ipairs(redis.call('ZRANGE', key('crons'), 0, -1)) do
      out[#out + 1] = redis.call('HGET', key('cron', name), 'd')
    end
    return out
  elseif op == 'settings' then
    local ns, prefix = ARGV[2], ARGV[3]
    local keys
    if prefix == '' then
      keys = redis.call('ZRANGE', key('sk', ns), 0, -1)
    else
      keys = redis.call('ZRANGEBYLEX', key('sk', ns), '[' .. prefix, '[' .. prefix .. '\255')
    end
    local out = {}
    for _, k in ipairs(keys) do
      out[#out + 1] = k
      out[#out + 1] = redis.call('HGET', key('sr', ns), k)
      out[#out + 1] = redis.call('HGET', key('sv', ns), k)
    end
    return out
  elseif op == 'events' then
    local after, cursor, dir, limit = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
    local from = '0'
    if after ~= '' then from = redis.call('ZSCORE', key('ev'), after) or '0' end
    local ids
    if dir == 'desc' then
      local top = cursor ~= '' and '(' .. cursor or '+inf'
      ids = redis.call('ZREVRANGEBYSCORE', key('ev'), top, '(' .. from, 'WITHSCORES', 'LIMIT', 0, limit)
    else
      local bottom = from
      if cursor ~= '' and tonumber(cursor) > tonumber(from) then bottom = cursor end
      ids = redis.call('ZRANGEBYSCORE', key('ev'), '(' .. bottom, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
    end
    local out = {}
    for j = 1, #ids, 2 do
      out[#out + 1] = ids[j + 1]
      out[#out + 1] = ids[j]
      out[#out + 1] = redis.call('HGET', key('evd'), ids[j])
    end
    return out
  end
  return redis.error_reply('ojs read: unknown read ' .. tostring(op))
end

redis.register_function({ function_name = 'ojs_read__V__', callback = read, flags = { 'no-writes' } })

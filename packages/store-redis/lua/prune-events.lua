--[[
prune-events.lua (function ojs_prune_events of the store's function
library, lib.ts): deletes the oldest events beyond the newest KEEP (by
sequence number, as the other stores do), at most LIMIT of them (-1: all),
in steps that stay within Lua's argument limit.

KEYS[1] = '<prefix>:seq'. ARGV[1] = KEEP, ARGV[2] = LIMIT. Returns the count.
--]]
local function pruneEvents(KEYS, ARGV)
  local P = string.sub(KEYS[1], 1, -5)
  local ev, evd = P .. ':ev', P .. ':evd'
  local keep, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
  local top = redis.call('ZREVRANGE', ev, 0, 0, 'WITHSCORES')
  if not top[1] then return 0 end
  local cut = tonumber(top[2]) - keep
  local removed = 0
  while limit < 0 or removed < limit do
    local step = 1000
    if limit >= 0 and limit - removed < step then step = limit - removed end
    local ids = redis.call('ZRANGEBYSCORE', ev, '-inf', string.format('%.0f', cut), 'LIMIT', 0, step)
    if #ids == 0 then break end
    redis.call('ZREM', ev, unpack(ids))
    redis.call('HDEL', evd, unpack(ids))
    removed = removed + #ids
  end
  return removed
end

redis.register_function('ojs_prune_events__V__', pruneEvents)

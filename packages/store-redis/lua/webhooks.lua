--[[
webhooks.lua (functions ojs_wh_insert, ojs_wh_update and ojs_wh_prune of
the store's function library): the webhook delivery log's writes. Each
delivery is a JSON document in the hash '<prefix>:whd' (id -> doc) with
its rev in '<prefix>:whrev'; '<prefix>:whdue' holds the deliveries a
process may claim, scored by when (next attempt or lease end);
'<prefix>:whlog' lists them in insertion order (score: '<prefix>:whseq');
'<prefix>:whdone:delivered' and '<prefix>:whdone:dead' hold the settled
ones by when they settled, for pruning. Core decides each record; these
only check that the id is new (insert) or that the stored rev is the
expected one (update).

KEYS[1] = '<prefix>:seq'.
ojs_wh_insert ARGV: groups of (id, rev, due ('' none), state, settled ('' none), doc).
  Returns how many were new.
ojs_wh_update ARGV: id, expected rev, rev, due ('' none), state, settled ('' none), doc.
  Returns 1 or 0.
ojs_wh_prune ARGV: delivered before, dead before, limit. Returns how many were deleted.
--]]
local function whIndex(P, id, due, state, settled)
  if due == '' then
    redis.call('ZREM', P .. ':whdue', id)
  else
    redis.call('ZADD', P .. ':whdue', due, id)
  end
  redis.call('ZREM', P .. ':whdone:delivered', id)
  redis.call('ZREM', P .. ':whdone:dead', id)
  if settled ~= '' then redis.call('ZADD', P .. ':whdone:' .. state, settled, id) end
end

local function whInsert(KEYS, ARGV)
  local P = string.sub(KEYS[1], 1, -5)
  local inserted = 0
  for i = 1, #ARGV, 6 do
    local id = ARGV[i]
    if redis.call('HSETNX', P .. ':whd', id, ARGV[i + 5]) == 1 then
      redis.call('HSET', P .. ':whrev', id, ARGV[i + 1])
      redis.call('ZADD', P .. ':whlog', redis.call('INCR', P .. ':whseq'), id)
      whIndex(P, id, ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
      inserted = inserted + 1
    end
  end
  return inserted
end

local function whUpdate(KEYS, ARGV)
  local P = string.sub(KEYS[1], 1, -5)
  local id = ARGV[1]
  if redis.call('HGET', P .. ':whrev', id) ~= ARGV[2] then return 0 end
  redis.call('HSET', P .. ':whd', id, ARGV[7])
  redis.call('HSET', P .. ':whrev', id, ARGV[3])
  whIndex(P, id, ARGV[4], ARGV[5], ARGV[6])
  return 1
end

local function whPrune(KEYS, ARGV)
  local P = string.sub(KEYS[1], 1, -5)
  local limit = tonumber(ARGV[3])
  local removed = 0
  for i, state in ipairs({ 'delivered', 'dead' }) do
    if removed >= limit then break end
    local set = P .. ':whdone:' .. state
    local ids = redis.call('ZRANGEBYSCORE', set, '-inf', '(' .. ARGV[i], 'LIMIT', 0, limit - removed)
    for _, id in ipairs(ids) do
      redis.call('HDEL', P .. ':whd', id)
      redis.call('HDEL', P .. ':whrev', id)
      redis.call('ZREM', P .. ':whlog', id)
      redis.call('ZREM', P .. ':whdue', id)
      redis.call('ZREM', set, id)
    end
    removed = removed + #ids
  end
  return removed
end

redis.register_function('ojs_wh_insert__V__', whInsert)
redis.register_function('ojs_wh_update__V__', whUpdate)
redis.register_function('ojs_wh_prune__V__', whPrune)

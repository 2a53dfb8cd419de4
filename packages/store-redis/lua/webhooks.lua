--[[
webhooks.lua (functions ojs_wh_insert and ojs_wh_update of the store's
function library): the webhook delivery log's two writes. Each delivery is
a JSON document in the hash '<prefix>:whd' (id -> doc) with its rev in
'<prefix>:whrev'; '<prefix>:whdue' holds the deliveries a process may
claim, scored by when (next attempt or lease end); '<prefix>:whlog' lists
them in insertion order (score: '<prefix>:whseq'). Core decides each
record; these only check that the id is new (insert) or that the stored
rev is the expected one (update).

KEYS[1] = '<prefix>:seq'.
ojs_wh_insert ARGV: groups of (id, rev, due ('' none), doc). Returns how many were new.
ojs_wh_update ARGV: id, expected rev, rev, due ('' none), doc. Returns 1 or 0.
--]]
local function whInsert(KEYS, ARGV)
  local P = string.sub(KEYS[1], 1, -5)
  local inserted = 0
  for i = 1, #ARGV, 4 do
    local id = ARGV[i]
    if redis.call('HSETNX', P .. ':whd', id, ARGV[i + 3]) == 1 then
      redis.call('HSET', P .. ':whrev', id, ARGV[i + 1])
      redis.call('ZADD', P .. ':whlog', redis.call('INCR', P .. ':whseq'), id)
      if ARGV[i + 2] ~= '' then redis.call('ZADD', P .. ':whdue', ARGV[i + 2], id) end
      inserted = inserted + 1
    end
  end
  return inserted
end

local function whUpdate(KEYS, ARGV)
  local P = string.sub(KEYS[1], 1, -5)
  local id = ARGV[1]
  if redis.call('HGET', P .. ':whrev', id) ~= ARGV[2] then return 0 end
  redis.call('HSET', P .. ':whd', id, ARGV[5])
  redis.call('HSET', P .. ':whrev', id, ARGV[3])
  if ARGV[4] == '' then
    redis.call('ZREM', P .. ':whdue', id)
  else
    redis.call('ZADD', P .. ':whdue', ARGV[4], id)
  end
  return 1
end

redis.register_function('ojs_wh_insert__V__', whInsert)
redis.register_function('ojs_wh_update__V__', whUpdate)

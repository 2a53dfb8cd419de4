-- wrk script of the bench's wrk phase (src/wrk.ts, decision 0095): one OJS
-- request per call, -t1 only (the ids file is one thread's).
--   OP=enqueue  POST /ojs/v1/jobs, the body of ../shared/bench-anchors/wrk-op.lua
--   OP=fetch    POST /ojs/v1/workers/fetch, count 1, wait_ms 0; each claimed
--               job's "id attempt" is written to IDS
--   OP=ack      POST /ojs/v1/workers/ack of the jobs listed in IDS, each once,
--               as the worker that claimed them; stops when the list is used up
-- Prints one JSON line (done).
local op = os.getenv("OP") or "enqueue"
local ids_path = os.getenv("IDS")
local worker = os.getenv("WORKER_ID") or "wrk-bench"
local queue = os.getenv("QUEUE") or "default"
local ids = {}
local next_id = 0
local out = nil
local connections = tonumber(os.getenv("CONNECTIONS") or "50")
local written = 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if op == "enqueue" then
  wrk.path = "/ojs/v1/jobs"
  wrk.body = '{"type":"email.send","args":[{"to":"user@example.com","subject":"hi"}],"options":{"queue":"' .. queue .. '"}}'
elseif op == "fetch" then
  wrk.path = "/ojs/v1/workers/fetch"
  wrk.body = '{"queues":["' .. queue .. '"],"worker_id":"' .. worker .. '","count":1,"wait_ms":0}'
  out = assert(io.open(ids_path, "w"))
elseif op == "ack" then
  for line in io.lines(ids_path) do
    local id, attempt = line:match("^(%S+) (%d+)$")
    if id then ids[#ids + 1] = '{"job_id":"' .. id .. '","worker_id":"' .. worker .. '","attempt":' .. attempt .. '}' end
  end
end

request = function()
  if op == "ack" then
    next_id = next_id + 1
    -- Past the end of the list: the thread is being stopped, this request is not sent twice.
    local body = ids[next_id] or ids[#ids]
    return wrk.format("POST", "/ojs/v1/workers/ack", nil, body)
  end
  return wrk.format(nil, wrk.path)
end

if op == "fetch" then
  response = function(status, headers, body)
    local id = body:match('"id":"([^"]+)"')
    if status == 200 and id then
      out:write(id, " ", body:match('"attempt":(%d+)') or "1", "\n")
      written = written + 1
      if written % 1000 == 0 then out:flush() end
    end
  end
elseif op == "ack" then
  response = function(status, headers, body)
    -- Stopped while up to `connections` requests are in flight, so that none
    -- goes past the list (a second ACK of a job would be a 409).
    if next_id + connections >= #ids then wrk.thread:stop() end
  end
end

done = function(summary, latency, requests)
  if out then out:close() end
  local s = summary.duration / 1e6
  io.write(string.format('{"op":"%s","requests":%d,"duration_s":%.3f,"rps":%.1f,"errors":%d,"non2xx":%d,"ok_rps":%.1f,"lat_p50_ms":%.3f,"lat_p99_ms":%.3f,"ids":%d}\n',
    op, summary.requests, s, summary.requests / s,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status, (summary.requests - summary.errors.status) / s,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, #ids))
end

-- wrk script for bench/load.sh: POSTs one SystemOne request (the model card's example) to
-- /v1/decisions, counts statuses, and stops each thread after CLEF_MAX_REQUESTS answers when
-- that variable is set (wrk itself only bounds by time).

local max_requests = tonumber(os.getenv("CLEF_MAX_REQUESTS") or "0")
answered = 0  -- globals: done() reads them with thread:get()
non_200 = 0

wrk.method = "POST"
wrk.path = "/v1/decisions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"state":"Production database is down, customers cannot log in",' ..
  '"questions":{"department":{"type":"choice","criteria":{"engineering":"Backend, infrastructure",' ..
  '"sales":"Pricing, contracts","support":"Customer help"}},' ..
  '"urgency":{"type":"score","criteria":["low","medium","high","critical"]},' ..
  '"outage":{"type":"noul"}}}'

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function response(status, headers, body)
  answered = answered + 1
  if status ~= 200 then non_200 = non_200 + 1 end
  if max_requests > 0 and answered >= max_requests then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + (t:get("non_200") or 0) end
  io.write(string.format("CLEF non_200=%d requests=%d p50_ms=%.3f p99_ms=%.3f rps=%.1f\n",
    bad, summary.requests, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests / (summary.duration / 1e6)))
end

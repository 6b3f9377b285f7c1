-- wrk script for bench/soak.sh: cycles through the request mix in $CLEF_MIX_DIR (N.body: the
-- request; N.status and N.answer: what a solo run of it returned on a cold reference server),
-- tags each request with X-Request-Id "soak-N-i" (the server echoes it), and checks every answer
-- against the solo one: the same status and, byte for byte, the same body.

local dir = os.getenv("CLEF_MIX_DIR")
local mix = {}

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

for n = 0, 10000 do
  local body = slurp(dir .. "/" .. n .. ".body")
  if not body then break end
  mix[#mix + 1] = {
    body = body,
    status = tonumber(slurp(dir .. "/" .. n .. ".status")),
    answer = slurp(dir .. "/" .. n .. ".answer"),
  }
end

-- Globals: done() reads them from each thread.
answered = 0
mismatched = 0
unexpected_status = 0
first_problem = ""
local sent = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function request()
  sent = sent + 1
  local k = (sent % #mix) + 1
  return wrk.format("POST", "/v1/decisions",
    {["Content-Type"] = "application/json", ["X-Request-Id"] = "soak-" .. k .. "-" .. sent},
    mix[k].body)
end

function response(status, headers, body)
  answered = answered + 1
  local id = headers["X-Request-Id"] or headers["x-request-id"] or ""
  local k = tonumber(string.match(id, "^soak%-(%d+)%-"))
  if not k then
    unexpected_status = unexpected_status + 1
    if first_problem == "" then first_problem = "status " .. status .. " without our id" end
    return
  end
  local want = mix[k]
  if status ~= want.status then
    unexpected_status = unexpected_status + 1
    if first_problem == "" then first_problem = id .. ": status " .. status .. " not " .. want.status end
  elseif body ~= want.answer then
    mismatched = mismatched + 1
    if first_problem == "" then first_problem = id .. ": body differs from the solo run" end
  end
end

function done(summary, latency, requests)
  local a, m, u, p = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    a = a + (t:get("answered") or 0)
    m = m + (t:get("mismatched") or 0)
    u = u + (t:get("unexpected_status") or 0)
    if p == "" then p = t:get("first_problem") or "" end
  end
  io.write(string.format(
    "CLEF_SOAK answered=%d mismatched=%d unexpected_status=%d socket_errors=%d rps=%.1f p50_ms=%.2f p99_ms=%.2f first_problem=%q\n",
    a, m, u, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, p))
end

-- wrk script: POSTs one GraphQL request per call, with a fresh pseudo-random value for the
-- query's variable (or session header), and prints the figures as one JSON line at the end.
-- Configured by environment variables (set by bench.py):
--   BENCH_BODY    the JSON body, with the placeholder __VALUE__ where the value goes
--   BENCH_MIN/MAX the value range (inclusive)
--   BENCH_HEADER  when set, the value goes into this header instead of the body
--   BENCH_HEADERS extra headers, "Name: value" separated by "\n"
--   BENCH_PATH    when set, a GET of this path (the value in place of __VALUE__) instead

local body = os.getenv("BENCH_BODY")
local lo = tonumber(os.getenv("BENCH_MIN"))
local hi = tonumber(os.getenv("BENCH_MAX"))
local value_header = os.getenv("BENCH_HEADER")
local path = os.getenv("BENCH_PATH")
local headers = { ["Content-Type"] = "application/json" }
for line in (os.getenv("BENCH_HEADERS") or ""):gmatch("[^\n]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  if name then headers[name] = value end
end

local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("seed", counter)
end

function init(args)
  -- Deterministic per thread: runs are repeatable.
  math.randomseed(tonumber(seed) or 1)
end

function request()
  local value = tostring(math.random(lo, hi))
  if path and path ~= "" then
    return wrk.format("GET", (path:gsub("__VALUE__", value)), headers)
  end
  if value_header and value_header ~= "" then
    headers[value_header] = value
    return wrk.format("POST", nil, headers, body)
  end
  return wrk.format("POST", nil, headers, (body:gsub("__VALUE__", value)))
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "socket_errors": %d, "status_errors": %d, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end

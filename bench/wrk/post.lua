-- wrk script for the gateway benchmark: POSTs one or more JSON bodies (cycled per request) and
-- prints the run's summary as one JSON line, so bench/run.ts needs no text scraping.
--   wrk ... -s bench/wrk/post.lua URL -- KEY[,KEY…] BODYFILE[,BODYFILE…] ["NAME: VALUE|NAME: VALUE…"]
-- Each body file holds "PATH\n" on its first line and the JSON body after it. Several keys (one per
-- account, bench/pg-ab.ts --accounts) are taken in turn, every body with each. The optional third
-- argument adds headers (another gateway's routing headers, bench/lib/peer.ts).

local requests = {}
local n = 0

function init(args)
  for key in string.gmatch(args[1], "[^,]+") do
    for file in string.gmatch(args[2], "[^,]+") do
      local f = assert(io.open(file, "rb"))
      local path = f:read("*l")
      local body = f:read("*a")
      f:close()
      local headers = {
        ["content-type"] = "application/json",
        ["authorization"] = "Bearer " .. key,
        ["anthropic-version"] = "2023-06-01",
      }
      for name, value in string.gmatch(args[3] or "", "([^|:]+):%s*([^|]*)") do
        headers[name] = value
      end
      table.insert(requests, wrk.format("POST", path, headers, body))
    end
  end
end

function request()
  n = n + 1
  return requests[(n - 1) % #requests + 1]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"lat_p50_us":%d,"lat_p90_us":%d,"lat_p99_us":%d,"lat_mean_us":%.1f,"lat_max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end

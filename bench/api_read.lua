-- bench/api_read.lua: wrk script for fatiad: GETs one path. args: PATH DELAY_MS
function init(args)
   path = args[1]
   pause = tonumber(args[2] or "0")
   headers = {["Authorization"] = "Bearer " .. os.getenv("FATIA_TOKEN")}
end

function delay()
   return pause
end

function request()
   return wrk.format("GET", path, headers)
end

function done(summary, latency, requests)
   io.write(string.format("RESULT rps=%.1f p50=%.3f p99=%.3f max=%.3f non2xx=%d errors=%d bytes=%d\n",
      summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
      latency:percentile(99) / 1000, latency.max / 1000, summary.errors.status,
      summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
      summary.bytes))
end

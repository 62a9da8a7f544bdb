-- bench/api_write.lua: wrk script for fatiad: creates LocalQueues of about 2 KB, unique names.
-- args: NAMESPACE DELAY_MS [LIMIT]: DELAY_MS paces each connection (the rate is then about
-- connections * 1000 / (DELAY_MS + latency)); after LIMIT creates, further ones repeat a name
-- (409) so that a namespace can be filled with an exact number of objects.
local threads = {}

function setup(thread)
   thread:set("tid", #threads)
   table.insert(threads, thread)
end

function init(args)
   ns = args[1] or "bench"
   pause = tonumber(args[2] or "0")
   limit = tonumber(args[3] or "0")
   token = os.getenv("FATIA_TOKEN")
   pad = string.rep("x", 1800)
   n = 0
   math.randomseed(os.time() * 1000 + tid)
   path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/" .. ns .. "/localqueues"
   headers = {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}
end

function delay()
   return pause
end

function request()
   n = n + 1
   local name
   if limit > 0 and n > limit then
      name = first -- exists already: 409
   else
      name = string.format("q-%d-%d-%d", tid, math.random(1, 1000000000), n)
      first = first or name
   end
   local body = '{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"name":"'
      .. name .. '","namespace":"' .. ns .. '","annotations":{"bench.fatia.dev/pad":"' .. pad
      .. '"}},"spec":{"clusterQueue":"team-a"}}'
   return wrk.format("POST", path, headers, body)
end

function done(summary, latency, requests)
   io.write(string.format("RESULT rps=%.1f p50=%.3f p99=%.3f max=%.3f non2xx=%d errors=%d\n",
      summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
      latency:percentile(99) / 1000, latency.max / 1000, summary.errors.status,
      summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end

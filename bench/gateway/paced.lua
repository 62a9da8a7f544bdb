-- bench/gateway/paced.lua: wrk at a fixed rate. Each connection waits an exponentially
-- distributed time (mean WRK_GAP_MS) before its next request, so C connections offer a Poisson
-- stream of C / gap requests per second; wrk's latencies run from send to the last byte and leave
-- the waits out. The body is a small completions request (WRK_BODY to change it).
local gap = tonumber(os.getenv("WRK_GAP_MS") or "0")
wrk.method = "POST"
wrk.path = "/v1/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("WRK_BODY") or
    '{"model":"llama-3.1-8b","prompt":"Say hello to the gateway benchmark, please.","max_tokens":1}'

function delay()
    if gap <= 0 then
        return 0
    end
    return -math.log(1 - math.random()) * gap
end

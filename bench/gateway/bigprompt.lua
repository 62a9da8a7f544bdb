-- bench/gateway/bigprompt.lua: completions with 100k-token prompts (400,000 characters at GIE's
-- 4 characters per token) for the CPU-per-request measurement. Sixteen prompts that differ from
-- their first block on, sent in turn, so that the gateway hashes and indexes new blocks as well
-- as known ones. Paced like paced.lua (WRK_GAP_MS per connection).
local gap = tonumber(os.getenv("WRK_GAP_MS") or "0")
local bodies = {}
local n = 0

local words = {" abc", " def", " ghi", " jkl", " mno", " pqr", " stu", " vwx"}
for i = 1, 16 do
    local head = string.format(" p%02d", i)
    local parts = {head}
    for k = 1, 99999 do
        parts[#parts + 1] = words[(k * 7 + i) % 8 + 1]
    end
    bodies[i] = '{"model":"llama-3.1-8b","prompt":"' .. table.concat(parts) ..
        '","max_tokens":1}'
end

request = function()
    n = n % 16 + 1
    return wrk.format("POST", "/v1/completions", {["Content-Type"] = "application/json"},
        bodies[n])
end

function delay()
    if gap <= 0 then
        return 0
    end
    return -math.log(1 - math.random()) * gap
end

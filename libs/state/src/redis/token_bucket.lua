-- Token bucket, atomic on the server. Time comes from the server (TIME), so replicas with
-- skewed clocks share one consistent bucket.
-- KEYS[1] bucket hash {tokens, ts (microseconds)}
-- ARGV capacity, refill_per_sec, cost
-- returns {allowed (0/1), whole tokens remaining, retry_after_ms}
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end
if now > ts then
  tokens = math.min(capacity, tokens + (now - ts) / 1000000 * rate)
end

local allowed = 0
local retry_ms = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry_ms = math.ceil((cost - tokens) * 1000 / rate)
end

-- '%.0f' keeps all 16 digits of the microsecond clock; tostring would round to 14.
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', string.format('%.0f', now))
-- Once full again the bucket equals a missing one, so let it expire then (plus a margin).
local full_in_ms = math.ceil((capacity - tokens) * 1000 / rate)
redis.call('PEXPIRE', KEYS[1], full_in_ms + 1000)
return {allowed, math.floor(tokens), retry_ms}

/**
 * The Lua scripts of the Redis limiter. Each runs atomically on the server in one round trip (EVALSHA through
 * ioredis `defineCommand`), so any number of gateway instances share one budget per subject without races.
 *
 * Time comes from the Redis server (`TIME`), not from the callers: instances with skewed clocks then still
 * agree on what "the last 60 seconds" is, and every admission is stamped on one timeline. Needs Redis ≥ 5
 * (effects replication, so a script that reads TIME may write).
 */

/** Milliseconds since the epoch on the Redis server; shared prelude of every script. */
const SERVER_NOW = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`;

/**
 * Strict rolling window over a sorted set of admissions (score = admission ms, member = unique request id).
 *
 * KEYS[1] the subject's sorted set · ARGV[1] limit · ARGV[2] window ms · ARGV[3] unique member for this call
 * Returns { allowed 0|1, admissions in the window after this call, ms until room for one more (0 if room) }.
 *
 * 1. Drop admissions at or before now − window (the window is (now − window, now]).
 * 2. Fewer than `limit` left: admit, ZADD at max(now, newest) so a server clock stepping back never lets a
 *    later admission leave before an earlier one, and PEXPIRE so the key vanishes when its newest entry leaves
 *    the window (Redis memory stays bounded with idle subjects). Refused calls write nothing.
 * 3. Full (after admitting or when refusing): room returns when the entry at index used − limit leaves,
 *    i.e. at its score + window; that is the oldest admission when used = limit.
 */
export const SLIDING_WINDOW_SCRIPT = `${SERVER_NOW}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)
local allowed = 0
if used < limit then
  local at = now
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest[2] ~= nil and tonumber(newest[2]) > at then at = tonumber(newest[2]) end
  redis.call('ZADD', key, at, ARGV[3])
  redis.call('PEXPIRE', key, at - now + window)
  used = used + 1
  allowed = 1
end
local reset = 0
if used >= limit then
  local blocking = redis.call('ZRANGE', key, used - limit, used - limit, 'WITHSCORES')
  reset = tonumber(blocking[2]) + window - now
end
return { allowed, used, reset }
`;

/**
 * Tokens per window, summed in a hash of buckets (field = bucket number, value = tokens); the same bucket
 * arithmetic as `token-log.ts`: bucket = floor(now / bucketMs), bucketMs = max(1, floor(window / 60)), and a
 * bucket counts until (bucket + 1) · bucketMs − 1 + window.
 *
 * KEYS[1] the subject's hash · ARGV[1] tokens · ARGV[2] window ms. Returns 1.
 */
export const RECORD_TOKENS_SCRIPT = `${SERVER_NOW}
local key = KEYS[1]
local window = tonumber(ARGV[2])
local bucketMs = math.max(1, math.floor(window / 60))
local bucket = math.floor(now / bucketMs)
redis.call('HINCRBY', key, string.format('%d', bucket), ARGV[1])
redis.call('PEXPIRE', key, (bucket + 1) * bucketMs - 1 + window - now)
return 1
`;

/**
 * KEYS[1] the subject's hash · ARGV[1] limit · ARGV[2] window ms.
 * Drops expired buckets; returns { allowed 0|1 (tokens in window < limit), tokens in window, ms until below
 * the limit (0 if already) }.
 */
export const CHECK_TOKENS_SCRIPT = `${SERVER_NOW}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local bucketMs = math.max(1, math.floor(window / 60))
local fields = redis.call('HGETALL', key)
local buckets = {}
local tokens = {}
local used = 0
for i = 1, #fields, 2 do
  local bucket = tonumber(fields[i])
  if (bucket + 1) * bucketMs - 1 + window <= now then
    redis.call('HDEL', key, fields[i])
  else
    local count = tonumber(fields[i + 1])
    table.insert(buckets, bucket)
    tokens[bucket] = count
    used = used + count
  end
end
if used < limit then return { 1, used, 0 } end
table.sort(buckets)
local left = used
for _, bucket in ipairs(buckets) do
  left = left - tokens[bucket]
  if left < limit then return { 0, used, (bucket + 1) * bucketMs - 1 + window - now } end
end
return { 0, used, 0 }
`;

"""The circuit breaker's Lua scripts: ``core.breaker.Circuits`` run atomically in Redis.

They follow the local breaker step for step (a test drives both with the same outcomes and
compares them). Time is Redis's own (``TIME``), in milliseconds, so hosts never compare
their clocks. ARGV[1..8] are the settings (``settings_args``); a circuit is one hash:
``s`` state (0 closed, 1 open, 2 half-open), ``c`` failed attempts in a row, ``u`` until
(ms), ``p`` probes out, and per window bucket i: ``e<i>`` its number, ``n<i>`` calls that
ended, ``f<i>`` of them those that ended failed.
"""

from __future__ import annotations

from ..core.breaker import BUCKETS, BreakerSettings

__all__ = ["ALLOW", "RECORD", "STATE", "settings_args"]


def settings_args(settings: BreakerSettings, expiry: float) -> list[str]:
    return [
        str(settings.failure_threshold),
        repr(settings.failure_ratio),
        str(settings.min_calls),
        repr(settings.window * 1000),
        str(round(settings.open_for * 1000)),
        str(round(settings.max_open_for * 1000)),
        str(settings.probes),
        str(max(1, round(expiry * 1000))),
    ]


_PRELUDE = f"""
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local threshold, ratio, min_calls = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local window, open_for, max_open = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local probes, ttl = tonumber(ARGV[7]), ARGV[8]
local buckets = {BUCKETS}
"""

RECORD = (
    _PRELUDE
    + """
-- ARGV[9..14]: attempts that succeeded, attempts that failed, failed attempts after the
-- batch's last success, the largest Retry-After in ms (-1: none), calls that ended, calls
-- that ended failed. Attempts feed the run of failures (c), calls the window.
-- KEYS[1]: the circuit.
local nok, nfail, tail, ra = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]),
  tonumber(ARGV[12])
local ncalls, ncallfail = tonumber(ARGV[13]), tonumber(ARGV[14])
local h = redis.call('HMGET', KEYS[1], 's', 'c', 'u')
if not h[1] and nfail == 0 then return {0, 0} end
local s, c, u = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0
local function open_ms()
  if ra < 0 then return open_for end
  return math.min(max_open, math.max(open_for, ra))
end
local function reopen()
  redis.call('DEL', KEYS[1])
  s, u = 1, now + open_ms()
  redis.call('HSET', KEYS[1], 's', 1, 'c', 0, 'u', u, 'p', 0)
end
if s == 2 then
  if nok > 0 then
    redis.call('DEL', KEYS[1])
    return {0, 0}
  end
  reopen()
elseif s == 1 then
  if nfail > 0 and ra >= 0 then
    u = math.max(u, now + open_ms())
    redis.call('HSET', KEYS[1], 'u', u)
  end
else
  if nok > 0 then c = tail else c = c + nfail end
  local cur = math.floor(now * buckets / window)
  local fields = {}
  for i = 0, buckets - 1 do
    fields[#fields + 1] = 'e' .. i
    fields[#fields + 1] = 'n' .. i
    fields[#fields + 1] = 'f' .. i
  end
  local b = redis.call('HMGET', KEYS[1], unpack(fields))
  local slot = cur % buckets
  local sn, sf, calls, fails = ncalls, ncallfail, 0, 0
  for i = 0, buckets - 1 do
    local e = tonumber(b[3 * i + 1]) or -1
    local n, f = tonumber(b[3 * i + 2]) or 0, tonumber(b[3 * i + 3]) or 0
    if i == slot then
      if e == cur then sn, sf = sn + n, sf + f end
    elseif e > cur - buckets then
      calls, fails = calls + n, fails + f
    end
  end
  calls, fails = calls + sn, fails + sf
  redis.call('HSET', KEYS[1], 's', 0, 'c', c, 'e' .. slot, cur, 'n' .. slot, sn, 'f' .. slot, sf)
  -- core.breaker.should_trip
  if nfail > 0 and (c >= threshold or (calls >= min_calls and fails >= ratio * calls)) then
    reopen()
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
if s == 1 then return {1, u - now} end
return {s, 0}
"""
)

ALLOW = (
    _PRELUDE
    + """
-- KEYS[1]: the circuit. Returns {allowed, state, ms until the answer may change}.
local h = redis.call('HMGET', KEYS[1], 's', 'u', 'p')
local s, u, p = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0
if s == 0 then return {1, 0, 0} end
if s == 1 then
  if now < u then return {0, 1, u - now} end
  s, p = 2, 0
elseif now >= u then
  p = 0
end
if p >= probes then return {0, 2, u - now} end
p, u = p + 1, now + open_for
redis.call('HSET', KEYS[1], 's', 2, 'p', p, 'u', u)
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, 2, 0}
"""
)

STATE = """
-- KEYS: circuits. Returns {state, ms until it may change} for each.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local h = redis.call('HMGET', key, 's', 'u', 'p')
  local s, u = tonumber(h[1]) or 0, tonumber(h[2]) or 0
  out[#out + 1] = s
  out[#out + 1] = math.max(0, u - now)
end
return out
"""

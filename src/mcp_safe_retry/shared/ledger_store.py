"""The call ledger as Redis holds it: one key per call, its Lua scripts, and the reads a
person's review makes (``RedisCallLedger`` and ``mcp-safe-retry ledger`` both use these).

A call is the key ``mcp-safe-retry:ledger:<name>:<sha256(server + "\\n" + digest)>`` holding
the JSON of ``EarlierCall.to_dict()`` with its server and digest (never the arguments, never
an answer), with a TTL of the window (``PX``). A call a person said did not run leaves a
marker ``<key>:resolved`` holding its owner for the rest of that TTL, so that the process
that sent it forgets its own copy too (``RedisCallLedger.claim``). The functions here raise
redis-py's errors: the ledger turns them into its fallback, the command into one line.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import attrs
import redis

from ..core.duplicate import EarlierCall
from .link import KEY_PREFIX

__all__ = [
    "CLAIM",
    "FORGET",
    "RESOLVE",
    "RESOLVED",
    "Stored",
    "decode",
    "delete_all",
    "encode",
    "entries",
    "key_of",
    "prefix_of",
    "resolve",
]

RESOLVED = ":resolved"
"""The suffix of a resolved call's marker (``RESOLVE``)."""

# KEYS[1]: the call, KEYS[2]: its marker. ARGV: the new call's JSON, its TTL in ms.
# A call kept: {1, it}, nothing written; else the call written in: {0, the marker or ''}.
CLAIM = """
local v = redis.call('GET', KEYS[1])
if v then return {1, v} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {0, redis.call('GET', KEYS[2]) or ''}
"""

# KEYS[1]: the call. ARGV[1]: an owner. Deletes the call only if that owner wrote it.
FORGET = """
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, t = pcall(cjson.decode, v)
if ok and type(t) == 'table' and t['owner'] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""

# KEYS[1]: the call, KEYS[2]: its marker. ARGV[1]: '1' it ran (state "ran", its TTL kept),
# '0' it did not (deleted; the marker names its owner for the rest of its TTL). 0: no call.
RESOLVE = """
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if ARGV[1] == '1' then
  local s = string.gsub(v, '"state":"[a-z_]*"', '"state":"ran"', 1)
  redis.call('SET', KEYS[1], s, 'KEEPTTL')
  return 1
end
local ttl = redis.call('PTTL', KEYS[1])
local ok, t = pcall(cjson.decode, v)
redis.call('DEL', KEYS[1])
if ttl > 0 and ok and type(t) == 'table' and type(t['owner']) == 'string' then
  redis.call('SET', KEYS[2], t['owner'], 'PX', ttl)
end
return 1
"""


def prefix_of(name: str) -> str:
    """Where the calls of the ledger ``name`` live."""
    return f"{KEY_PREFIX}:ledger:{name}:"


def key_of(name: str, server: str, digest: str) -> str:
    """A call's key: a hash of its server and digest (the server's URL is never a key)."""
    hashed = hashlib.sha256(f"{server}\n{digest}".encode()).hexdigest()
    return prefix_of(name) + hashed


def encode(server: str, digest: str, call: EarlierCall) -> str:
    """What Redis holds of a call: compact JSON (``RESOLVE`` rewrites its ``state``)."""
    return json.dumps({**call.to_dict(), "server": server, "digest": digest}, separators=(",", ":"))


@attrs.frozen
class Stored:
    """A call as Redis holds it: its key, server, digest, the call, its TTL (seconds)."""

    key: str
    server: str
    digest: str
    call: EarlierCall
    expires_in: float


def decode(raw: Any) -> tuple[str, str, EarlierCall] | None:
    """A stored call's server, digest and call; None for a value another program wrote."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    server, digest = data.get("server"), data.get("digest")
    call = EarlierCall.from_dict(data)
    if call is None or type(server) is not str or type(digest) is not str:
        return None
    return server, digest, call


def _match(name: str) -> str:
    """A SCAN pattern for every key of ``name`` (its glob characters escaped)."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", prefix_of(name)) + "*"


def _keys(client: redis.Redis, name: str) -> list[bytes]:
    found = client.scan_iter(match=_match(name), count=1000)
    return [k for k in found if not k.endswith(RESOLVED.encode())]


def entries(client: redis.Redis, name: str) -> list[Stored]:
    """Every call the ledger ``name`` keeps in Redis, oldest first (values that are not
    calls left out)."""
    keys = _keys(client, name)
    found = []
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.get(key)
            pipe.pttl(key)
        replies = pipe.execute()
        for key, raw, ttl in zip(batch, replies[::2], replies[1::2], strict=True):
            decoded = None if raw is None else decode(raw)
            if decoded is not None:
                left = max(0.0, int(ttl) / 1000) if int(ttl) >= 0 else float("inf")
                found.append(Stored(key.decode(), *decoded, left))
    found.sort(key=lambda stored: stored.call.started_at)
    return found


def resolve(client: redis.Redis, key: str, *, ran: bool, script: Any = None) -> bool:
    """A person's verdict on the call under ``key``; False when there is none."""
    script = script if script is not None else client.register_script(RESOLVE)
    return bool(script(keys=[key, key + RESOLVED], args=["1" if ran else "0"], client=client))


def delete_all(client: redis.Redis, name: str) -> int:
    """Forget every call of the ledger ``name`` (and its markers); how many keys went."""
    keys = list(client.scan_iter(match=_match(name), count=1000))
    gone = 0
    for start in range(0, len(keys), 500):
        gone += int(client.delete(*keys[start : start + 500]))
    return gone

"""The Redis cache backend Ladder uses in production (``CACHE_URL=redis://...``): Django's own, with one client
object per connection pool instead of a new one per operation.

Django's ``RedisCacheClient.get_client`` builds a ``redis.Redis`` for every call, and redis-py builds its table of
response callbacks in each constructor: on the gateway's per-request check that cost more than the check's own
work (three cache operations, each paying for a fresh client). A ``redis.Redis`` is safe to share between threads
(each command takes a connection from the pool and gives it back), so one per pool is kept.

``counter_incr`` is the one atomic count every rate limit needs, in one round trip on Redis (INCR, and EXPIRE only
when the key has none, pipelined), and Django's portable ``add``/``incr`` on any other backend. ``samples_append``
keeps the last samples of something under one key, atomically on Redis (RPUSH and LTRIM, pipelined), so a burst of
requests ending together loses none of them; on any other backend, under a process-wide lock.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient
from django.db import transaction


class _SharedClients(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]
        client = self._clients.get(index)
        if client is None:
            pool = self._get_connection_pool(write)  # type: ignore[attr-defined]  # Django's, not in its stubs
            client = self._clients[index] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _SharedClients


def counter_incr(name: str, *, timeout: int, by: int = 1) -> int:
    """Add ``by`` to the counter ``name`` (created at ``by``, living ``timeout`` seconds from its first count)."""
    backend = caches[DEFAULT_CACHE_ALIAS]
    if isinstance(backend, DjangoRedisCache):
        key = backend.make_and_validate_key(name)
        pipe = backend._cache.get_client(key, write=True).pipeline(transaction=False)
        pipe.incr(key, by)
        pipe.expire(key, timeout, nx=True)
        count, _ = pipe.execute()
        return int(count)
    try:
        return int(cache.incr(name, by))
    except ValueError:  # the counter's first count (or it expired)
        # Another process may have created it in between: then count on in it.
        return by if cache.add(name, by, timeout=timeout) else int(cache.incr(name, by))


_samples_lock = threading.Lock()


def samples_append(name: str, sample: Any, *, keep: int, timeout: int) -> None:
    """Add one JSON-able ``sample`` to the list ``name``, which keeps its last ``keep`` and lives ``timeout``
    seconds from its latest."""
    backend = caches[DEFAULT_CACHE_ALIAS]
    if isinstance(backend, DjangoRedisCache):
        key = backend.make_and_validate_key(name)
        pipe = backend._cache.get_client(key, write=True).pipeline(transaction=False)
        pipe.rpush(key, json.dumps(sample))
        pipe.ltrim(key, -keep, -1)
        pipe.expire(key, timeout)
        pipe.execute()
        return
    with _samples_lock:  # one process's threads; another backend shared by processes may drop a sample in a race
        kept = cache.get(name) or []
        kept.append(sample)
        cache.set(name, kept[-keep:], timeout)


def samples_read(name: str) -> list[Any]:
    """The samples ``samples_append`` kept under ``name``, oldest first."""
    backend = caches[DEFAULT_CACHE_ALIAS]
    if isinstance(backend, DjangoRedisCache):
        key = backend.make_and_validate_key(name)
        return [json.loads(item) for item in backend._cache.get_client(key).lrange(key, 0, -1)]
    return list(cache.get(name) or [])


def cache_forget(*keys: str) -> None:
    """Drop ``keys`` from the shared cache now, and again once the current transaction commits: a request that read
    the database in between would otherwise put the old value back until it expires."""
    cache.delete_many(list(keys))
    transaction.on_commit(lambda: cache.delete_many(list(keys)))


_MEMOS: list[LocalMemo] = []


def local_memos_clear() -> None:
    """Forget everything every memo holds (a test's database starts over: nothing of the last may be believed)."""
    for memo in _MEMOS:
        memo._entries.clear()


class LocalMemo:
    """A process's own short memory of a few shared-cache reads that every request of a hot path makes (the
    gateway's check: the key, the endpoint). An entry lives ``seconds`` here at most; ``forget`` drops it in this
    process at once, other processes within ``seconds``, which every user of this states as part of its bound."""

    def __init__(self, seconds: float, size: int = 4096) -> None:
        self.seconds = seconds
        self.size = size
        self._entries: dict[str, tuple[float, Any]] = {}
        _MEMOS.append(self)

    def get(self, key: str, now: float) -> tuple[bool, Any]:
        found = self._entries.get(key)
        if found is None or found[0] <= now:
            return False, None
        return True, found[1]

    def put(self, key: str, value: Any, now: float) -> None:
        if len(self._entries) >= self.size:
            self._entries.clear()  # a flood of distinct keys costs a re-read, never memory
        self._entries[key] = (now + self.seconds, value)

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)

"""The Redis transport Celery publishes tasks through (``redis://`` brokers, set in ``config/celery.py``): kombu's
own, with one client object per connection pool instead of a new one per command.

kombu's Redis channel builds a ``redis.Redis`` for every message it sends, and redis-py builds its table of
response callbacks in each constructor: on an allocation's POST that cost a fifth of queuing its provisioning task.
A ``redis.Redis`` is safe to share between threads (each command takes a connection from the pool and gives it
back), so the channel keeps one for its pool, as ``core.cache.RedisCache`` does for the cache. When kombu drops the
pool (the channel closed, or the process forked: kombu resets its pools in the child), the next command gets a new
client for the new pool, so no client outlives its pool or crosses a fork.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis


class Channel(redis.Channel):
    _kept: Any = None  # the client of ``_kept_pool``
    _kept_pool: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consumer's own client (BRPOP), which kombu keeps already
            return super()._create_client(asynchronous=True)  # type: ignore[misc]  # not in kombu's stubs
        pool = self.pool
        if self._kept is None or self._kept_pool is not pool:
            self._kept, self._kept_pool = super()._create_client(), pool  # type: ignore[misc]
        return self._kept


class Transport(redis.Transport):
    Channel = Channel

"""The judge cache under another connection's write lock (a real SQLite lock, taken by a
second connection as another process would): reads go on, a write waits only the short
busy timeout, then writes are refused at once for a growing interval."""

from __future__ import annotations

import sqlite3
import time

import pytest

from custom_metrics.judge import config as conf
from custom_metrics.judge.cache import CacheLocked, JudgeCache, usable_cache
from custom_metrics.judge.config import JudgeConfig
from custom_metrics.judge.stats import JudgeStats


def _lock(path) -> sqlite3.Connection:
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_reads_are_served_and_writes_refused_quickly_while_locked(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = JudgeCache(path)
    cache.put("k1", "e", "m", {}, {"choices": [], "n": 1})
    holder = _lock(path)
    t0 = time.monotonic()
    assert cache.get("k1") == {"choices": [], "n": 1} and cache.known(["k1", "k2"]) == {"k1"}
    assert cache.claim("k1", "me", 30.0) == ("answer", {"choices": [], "n": 1})  # a cached answer needs no write
    assert time.monotonic() - t0 < conf.CACHE_BUSY_TIMEOUT_S  # WAL: readers are never blocked
    with pytest.raises(CacheLocked) as first:
        cache.put("k2", "e", "m", {}, {"choices": []})
    assert conf.CACHE_BUSY_TIMEOUT_S * 0.5 <= first.value.waited_s < conf.CACHE_BUSY_TIMEOUT_S + 1.0
    assert cache.locked()
    t0 = time.monotonic()
    for _ in range(20):  # within the interval: refused without waiting again
        with pytest.raises(CacheLocked) as again:
            cache.claim("k3", "me", 30.0)
        assert again.value.waited_s == 0.0
    assert time.monotonic() - t0 < 0.1
    holder.execute("ROLLBACK")
    cache.put_many([("k2", "e", "m", {}, {"choices": []})], force=True)  # forced: tried at once
    assert not cache.locked() and len(cache) == 2
    holder.close()


def test_the_refusal_interval_doubles_while_the_lock_stays_held(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = JudgeCache(path)
    holder = _lock(path)
    intervals = []
    for _ in range(3):
        with pytest.raises(CacheLocked):
            cache.put_many([("k", "e", "m", {}, {})], force=True)
        intervals.append(cache._retry_s)
    assert intervals == [conf.CACHE_RETRY_MIN_S, 2 * conf.CACHE_RETRY_MIN_S, 4 * conf.CACHE_RETRY_MIN_S]
    holder.execute("ROLLBACK")
    holder.close()


def test_an_existing_cache_opens_under_a_lock_and_a_new_one_is_unusable_at_once(tmp_path):
    old = tmp_path / "old.sqlite"
    JudgeCache(old).close()
    holder = _lock(old)
    t0 = time.monotonic()
    JudgeCache(old).close()  # tables there: opening writes nothing
    assert time.monotonic() - t0 < conf.CACHE_BUSY_TIMEOUT_S
    holder.execute("ROLLBACK")
    holder.close()

    new = tmp_path / "new.sqlite"
    holder = _lock(new)  # a new file, locked before any table exists
    stats = JudgeStats()
    t0 = time.monotonic()
    assert usable_cache(JudgeConfig(model="m", cache=str(new)), stats) is None
    assert time.monotonic() - t0 < conf.CACHE_BUSY_TIMEOUT_S + 1.0  # not SQLite's 30 s
    assert stats.cache_unusable is not None and "locked by another process" in stats.cache_unusable
    holder.close()

"""The judge's SQLite cache: keys over everything that changes an answer, answers
written (and committed) as they arrive, and claims so that two runs sharing one cache
never both pay for an item.

* **Keys.** A SHA-256 of (endpoint, model, messages, every sampling parameter sent,
  parse attempt), so an interrupted run resumes without paying twice and an identical
  second run makes zero HTTP calls. The harness's own ``--use_cache`` keys on the
  request only, not on the model; this one keys on everything that changes the answer.
* **Claims.** Right before its first request, a run *claims* the item: in the same
  SQLite transaction that finds the answer missing it writes a ``pending`` row (owner
  id, claimed-at time, expiry). Another run that meets a live claim waits for the
  answer instead of paying again. A claim is abandoned and may be taken over when its
  expiry passes (kept fresh by a heartbeat while its owner runs) or at once when its
  owner process is gone (same host, pid not running: a killed run).
* **Locked by another process.** Readers are never blocked (WAL). A write waits at
  most :data:`~custom_metrics.judge.config.CACHE_BUSY_TIMEOUT_S` for the lock, not
  SQLite's usual 30 s; while the lock stays held, writes are not even tried for a
  growing interval (:class:`CacheLocked` at once), so a locked cache costs a run a
  fraction of a second, answers already cached are still served, and new ones are
  kept in memory by the engine and written when the lock goes.
* **A new file opened by several processes at once** (the ranks of a data-parallel
  run): the WAL switch and the tables are tried again within the busy timeout, so every
  process gets the cache; SQLite refuses one of two such writers at once, without
  waiting, and the other is done in milliseconds.
* **Unusable cache.** A corrupt or read-only file, or a new one whose lock another
  process holds past the busy timeout before its tables exist, makes
  :func:`usable_cache` return None: judging goes on without a cache, said once and
  recorded.

The file format (tables ``answers`` and ``claims``, :data:`CACHE_SCHEMA` in every key)
is what earlier runs wrote: their answers still hit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from custom_metrics.judge import config as conf
from custom_metrics.judge.config import CACHE_SCHEMA, JudgeConfig, JudgeError, normalize_endpoint
from custom_metrics.judge.stats import JudgeStats

log = logging.getLogger(__name__)

# key, endpoint, model, request, response (each a JSON-like value or its JSON text)
Entry = tuple[str, str, str, Mapping[str, Any] | str, Mapping[str, Any] | str]


class CacheLocked(JudgeError):
    """Another process holds the cache's write lock: this write was not made.

    Never fatal: the engine requests the item without a claim, or keeps the answer in
    memory until the lock goes. ``waited_s``: how long this attempt waited (0 when
    writes were skipped without trying, in the interval after a failed attempt).
    """

    def __init__(self, path: Path, waited_s: float) -> None:
        super().__init__(f"the judge cache {path} is locked by another process")
        self.waited_s = waited_s


def _text(value: Mapping[str, Any] | str) -> str:
    """A row's JSON column: text already serialized, or the value serialized."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock we need."""
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))

def cache_key(endpoint: str | None, model: str, messages: Sequence[Mapping[str, Any]],
              params: Mapping[str, Any], attempt: int = 0, draw: int = 0) -> str:
    """SHA-256 over everything that changes the answer, in canonical JSON.

    ``draw`` tells apart the single-choice requests that make up a sampled reply
    with fewer choices than asked (1, 2, ...): the same request, a different sample.
    It is part of the key only when set, so every key of earlier runs stays valid.
    """
    payload: dict[str, Any] = {
        "schema": CACHE_SCHEMA,
        "endpoint": normalize_endpoint(endpoint),
        "model": model,
        "messages": [dict(m) for m in messages],
        "params": dict(params),
        "attempt": attempt,
    }
    if draw:
        payload["draw"] = draw
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


ClaimState = Literal["answer", "claimed", "taken_over", "pending"]

_LIVE_OWNERS: set[str] = set()  # claim owners of this process whose batch is still running
_LIVE_OWNERS_LOCK = threading.Lock()
_HOST = socket.gethostname()


def new_owner_id() -> str:
    """A claim owner id: ``host:pid:random``, so that a waiter on the same host can
    tell a killed owner (pid gone) from a slow one."""
    owner = f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
    with _LIVE_OWNERS_LOCK:
        _LIVE_OWNERS.add(owner)
    return owner


def retire_owner(owner: str) -> None:
    with _LIVE_OWNERS_LOCK:
        _LIVE_OWNERS.discard(owner)


def owner_alive(owner: str) -> bool:
    """False only when we know the owner is gone: a finished batch of this process,
    or a pid on this host that no longer runs. Other hosts: assume alive (the
    claim's expiry then decides)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _HOST or not pid_text.isdigit() or os.name != "posix":
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        with _LIVE_OWNERS_LOCK:
            return owner in _LIVE_OWNERS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class JudgeCache:
    """SQLite store of judge answers (JSON), one row per cache key, and of claims.

    WAL mode lets other processes read while we write (and us read while they
    write). ``synchronous=NORMAL``: a commit appends to the WAL file without waiting for
    the disk (the WAL is synced at checkpoints), at a fraction of the cost of a sync per
    commit. What it may lose: nothing when the process is killed (the OS holds what was
    written); after a power cut or an OS crash, the transactions of the last moments.
    Why that never makes one run pay twice: the runs that could have used those answers
    or honoured those claims stopped with the machine; a rerun finds the items missing and
    requests them once each (claims lost with them belong to owners that no longer run).
    What such a cut costs is those answers paid again, once, as an interruption before
    their commit would.
    One connection per path and process, guarded by a lock, so the event loop and
    worker threads may share it. Transactions are explicit (``BEGIN IMMEDIATE``):
    a claim must be decided under the write lock, or two runs could both find an
    item missing and both pay for it.

    ``claims`` rows (``status`` ``pending``, ``owner``, ``claimed_at``,
    ``expires_at``) mark items whose request is in flight somewhere; storing the
    answer deletes the claim in the same transaction.

    Writes go through :meth:`_write`: a short busy timeout, then :class:`CacheLocked`
    and an interval (doubling while the lock stays held) in which writes fail at once
    instead of each waiting again.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._retry_at = 0.0  # monotonic time before which writes are not tried (locked)
        self._retry_s = 0.0   # the current interval: doubles while the lock stays held
        self._conn = sqlite3.connect(str(self.path), timeout=conf.CACHE_BUSY_TIMEOUT_S,
                                     check_same_thread=False, isolation_level=None)
        try:
            with self._lock:
                self._open()
        except BaseException:
            self._conn.close()
            raise

    def _open(self) -> None:
        """WAL mode and the tables; with no write at all when both are there already, so
        that a cache another process holds locked opens at once and is read.

        Why retried: processes that create one new file at the same moment (the ranks of
        a data-parallel run, each opening the cache at its first judge call) contend for
        its first write, and SQLite answers one of them "database is locked" at once,
        without waiting its busy timeout, where waiting could deadlock (two connections
        each holding a read lock and asking for the write lock). The contender finishes
        in milliseconds, so the whole step (WAL switch, table check, table creation) is
        tried again from the start until :data:`~conf.CACHE_BUSY_TIMEOUT_S` has passed;
        a lock still held then is another process's for good: :class:`CacheLocked`.
        """
        t0 = time.monotonic()
        while True:
            try:
                self._open_once()
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                waited = time.monotonic() - t0
                if waited >= conf.CACHE_BUSY_TIMEOUT_S:
                    raise CacheLocked(self.path, waited) from None
            time.sleep(random.uniform(0.002, 0.02))  # apart from the contender, not in step with it

    def _open_once(self) -> None:
        """One try of :meth:`_open`; SQLite's busy error as it comes."""
        self._conn.execute("PRAGMA journal_mode=WAL")  # kept in the file: a no-op once set
        self._conn.execute("PRAGMA synchronous=NORMAL")
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if {"answers", "claims"} <= tables:
            return
        with self._tx() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, endpoint TEXT, "
                         "model TEXT, request TEXT, response TEXT NOT NULL, created REAL)")
            conn.execute("CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, "
                         "status TEXT NOT NULL DEFAULT 'pending', owner TEXT NOT NULL, "
                         "claimed_at REAL NOT NULL, expires_at REAL NOT NULL)")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (the caller holds ``self._lock``)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def locked(self) -> bool:
        """Whether writes are being skipped now (a recent attempt found the lock held)."""
        return time.monotonic() < self._retry_at

    def _write(self, body: Any, force: bool = False) -> Any:
        """``body(conn)`` in a write transaction (the caller holds ``self._lock``).

        Why not SQLite's busy handler alone: another process may hold the lock for
        minutes, and every write waiting its full busy timeout would stall the run
        once per item. One attempt waits :data:`~conf.CACHE_BUSY_TIMEOUT_S`; after a
        failed one, writes raise :class:`CacheLocked` at once for an interval that
        doubles while the lock stays held (``force``: try anyway, at a batch's end).
        """
        t0 = time.monotonic()
        if not force and t0 < self._retry_at:
            raise CacheLocked(self.path, 0.0)
        try:
            with self._tx() as conn:
                result = body(conn)
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
            now = time.monotonic()
            self._retry_s = min(conf.CACHE_RETRY_MAX_S, max(conf.CACHE_RETRY_MIN_S, self._retry_s * 2))
            self._retry_at = now + self._retry_s
            raise CacheLocked(self.path, now - t0) from None
        self._retry_s, self._retry_at = 0.0, 0.0
        return result

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM answers WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def known(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` have an answer (no answer read: the estimate before a batch)."""
        found: set[str] = set()
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for i in range(0, len(unique), 500):  # SQLite's bound on parameters per statement
                part = unique[i:i + 500]
                rows = self._conn.execute(f"SELECT key FROM answers WHERE key IN ({','.join('?' * len(part))})",
                                          part).fetchall()
                found.update(r[0] for r in rows)
        return found

    def claim(self, key: str, owner: str, ttl_s: float, force: bool = False) -> tuple[ClaimState, dict | None]:
        """Find the answer or claim the item, atomically.

        Returns ``("answer", response)`` when answered; ``("pending", None)`` when a
        live claim of another owner stands (wait, then ask again); else the claim is
        now ours: ``("claimed", None)``, or ``("taken_over", None)`` when we replaced
        an expired claim, one of a dead owner, or (``force``) one we waited on too long.
        """
        with self._lock:
            # read-only fast path: waiters poll without taking the write lock
            row = self._conn.execute("SELECT response FROM answers WHERE key = ?", (key,)).fetchone()
            if row:
                return "answer", json.loads(row[0])
            other = self._conn.execute("SELECT owner, expires_at FROM claims WHERE key = ?", (key,)).fetchone()
            if not force and other and other[0] != owner and other[1] > time.time() and owner_alive(other[0]):
                return "pending", None
            return self._write(lambda conn: self._claim_tx(conn, key, owner, ttl_s, force))

    @staticmethod
    def _claim_tx(conn: sqlite3.Connection, key: str, owner: str, ttl_s: float,
                  force: bool) -> tuple[ClaimState, dict | None]:
        """:meth:`claim`'s decision, under the write lock."""
        row = conn.execute("SELECT response FROM answers WHERE key = ?", (key,)).fetchone()
        if row:
            return "answer", json.loads(row[0])
        other = conn.execute("SELECT owner, expires_at FROM claims WHERE key = ?", (key,)).fetchone()
        now = time.time()
        live = other is not None and other[0] != owner and other[1] > now and owner_alive(other[0])
        if live and not force:
            return "pending", None
        conn.execute("INSERT OR REPLACE INTO claims VALUES (?, 'pending', ?, ?, ?)", (key, owner, now, now + ttl_s))
        return ("taken_over" if other is not None and other[0] != owner else "claimed"), None

    def refresh(self, owner: str, ttl_s: float) -> int:
        """Extend every claim of ``owner`` (the heartbeat); returns how many."""
        with self._lock:
            return self._write(lambda conn: conn.execute("UPDATE claims SET expires_at = ? WHERE owner = ?",
                                                         (time.time() + ttl_s, owner)).rowcount)

    def release(self, key: str | None, owner: str) -> None:
        """Drop ``owner``'s claim on ``key`` (all its claims when ``key`` is None), so
        that another run may take the item at once instead of waiting for expiry."""
        with self._lock:
            if key is None:
                self._write(lambda conn: conn.execute("DELETE FROM claims WHERE owner = ?", (owner,)))
            else:
                self._write(lambda conn: conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?",
                                                      (key, owner)))

    def pending(self) -> list[tuple[str, str, float]]:
        """Open claims as (key, owner, claimed_at): what a killed run left in flight."""
        with self._lock:
            return [tuple(r) for r in self._conn.execute("SELECT key, owner, claimed_at FROM claims")]

    def put(self, key: str, endpoint: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        """Insert and commit at once (the answer must survive an interruption), and
        drop the item's claim in the same transaction: waiters see the answer."""
        self.put_many([(key, endpoint, model, request, response)])

    def put_many(self, entries: Sequence[Entry], force: bool = False) -> None:
        """:meth:`put` for several answers in one transaction (those kept in memory while
        the cache was locked); :class:`CacheLocked` when the lock is still held."""
        self.write(entries, (), "", 0.0, force=force)

    def write(self, entries: Sequence[Entry], claims: Sequence[str], owner: str, ttl_s: float,
              force: bool = False) -> list[tuple[ClaimState, dict | None]]:
        """Store ``entries`` (as :meth:`put_many`), then decide a claim by ``owner`` on each
        key of ``claims`` (as :meth:`claim` under the write lock), all in one transaction;
        returns the claims' states in order. :class:`CacheLocked` when the lock is held:
        then nothing is written and no claim is made.

        Why one transaction: a commit costs more than the statements it commits, and a
        batch's answers arrive, and the next items claim, in the same moments
        (:class:`~custom_metrics.judge.writes.WriteQueue` gathers them). Entries whose
        request or response is already JSON text (``str``) are stored as given.
        """
        def body(conn: sqlite3.Connection) -> list[tuple[ClaimState, dict | None]]:
            now = time.time()
            if entries:
                conn.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                                 [(key, endpoint, model, _text(request), _text(response), now)
                                  for key, endpoint, model, request, response in entries])
                conn.executemany("DELETE FROM claims WHERE key = ?", [(e[0],) for e in entries])
            return [self._claim_tx(conn, key, owner, ttl_s, False) for key in claims]

        with self._lock:
            return self._write(body, force=force)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_CACHES: dict[str, JudgeCache] = {}
_CACHES_LOCK = threading.Lock()


def open_cache(path: str | os.PathLike) -> JudgeCache:
    """The process-wide :class:`JudgeCache` for ``path``."""
    resolved = str(Path(path).expanduser().resolve())
    with _CACHES_LOCK:
        cache = _CACHES.get(resolved)
        if cache is None:
            cache = _CACHES[resolved] = JudgeCache(resolved)
        return cache


def usable_cache(config: JudgeConfig, stats: JudgeStats) -> JudgeCache | None:
    """The judge cache, or None (judging goes on without it) when it cannot be used.

    Why not an error: a cache that is corrupt, read-only, a folder, or new and locked would
    otherwise stop the run after generation and cost the user their generations; without
    a cache every request is still made and scored, only not kept for a rerun. Said once
    on the log and recorded (``cache_unusable`` in the judge's usage).
    """
    if not config.cache:
        return None
    try:
        return open_cache(config.cache)
    except (sqlite3.Error, OSError, CacheLocked) as exc:
        why = "locked by another process before its tables were made" if isinstance(exc, CacheLocked) \
            else f"{type(exc).__name__}: {exc}"
        if stats.cache_unusable is None:
            log.warning("judge: the cache %s cannot be used (%s); judging without a cache, so replies are "
                        "not kept for a rerun. Fix or remove the file, or set judge_cache to another path "
                        "(or off).", config.cache, why)
        stats.cache_unusable = f"{config.cache}: {why}"
        return None

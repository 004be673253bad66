"""A judge cache locked by another process, a new cache created by several processes at
once, and a judge that drips its reply, through the real ``domsum rescore`` against the
stub server on 127.0.0.1.

The lock is real: a second process holds ``BEGIN EXCLUSIVE`` on the cache file for the
whole run. Before, each such run stalled 30 s (SQLite's busy timeout), then judged
without the cache: answers already paid for were paid again, and nothing was counted.
The creation is real too: processes released by one barrier open the same new file, as
the ranks of a data-parallel run do at their first judge call.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import subprocess_env
from custom_metrics.judge import judge_scores
from custom_metrics.judge.cache import open_cache
from helpers.judge_server import Drip, StubJudgeServer, Text, clear_judge_env, rating_request, stub_config
from helpers.rescore import _outputs

_clean_judge_env = pytest.fixture(autouse=True, name="_clean_judge_env")(clear_judge_env)

#: holds the write lock of the SQLite file argv[1] until its stdin closes
_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def _open_in_step(folder: str, rounds: int, barrier, results) -> None:
    """One of the processes of the creation test: each round, open that round's new cache
    when every process is released, write an answer of its own, and once every process
    has written, count the answers it reads (its own and every other's)."""
    import os

    from custom_metrics.judge.cache import JudgeCache

    for r in range(rounds):
        barrier.wait()
        try:
            cache = JudgeCache(Path(folder) / f"round{r}.sqlite")
            cache.put(f"{os.getpid()}", "e", "m", {}, {"choices": [], "pid": os.getpid()})
            outcome: object = "written"
        except Exception as exc:  # noqa: BLE001 - reported to the test, which names it
            cache, outcome = None, f"{type(exc).__name__}: {exc}"
        barrier.wait()
        if cache is not None:
            mode = cache._conn.execute("PRAGMA journal_mode").fetchone()[0]
            outcome = (len(cache), mode)
            cache.close()
        results.put((r, outcome))


def test_processes_creating_one_new_cache_at_once_all_use_it(tmp_path):
    """Four processes, 60 rounds of a new file each. Before, some process was answered
    "database is locked" in several rounds of every run (SQLite says so at once, without
    its busy wait, to one of two connections that both hold the read lock of the WAL
    switch) and judged without a cache; now every process gets the cache, in WAL mode,
    and reads every process's answer."""
    procs, rounds = 4, 60
    ctx = multiprocessing.get_context("fork")  # started in milliseconds; this process opened no cache
    barrier, results = ctx.Barrier(procs, timeout=60), ctx.Queue()
    workers = [ctx.Process(target=_open_in_step, args=(str(tmp_path), rounds, barrier, results))
               for _ in range(procs)]
    for w in workers:
        w.start()
    try:
        got = [results.get(timeout=120) for _ in range(procs * rounds)]
    finally:
        for w in workers:
            w.join(timeout=30)
    assert [w.exitcode for w in workers] == [0] * procs
    failed = sorted(((r, o) for r, o in got if o != (procs, "wal")), key=str)
    assert not failed, f"{len(failed)} of {procs * rounds} opens: {failed[:4]}"
    assert sorted(r for r, _ in got) == sorted(list(range(rounds)) * procs)


def _samples(folder: Path, seconds: str, ids: range) -> Path:
    """An adapteval harness samples file; document ``i`` is the same in every file."""
    path = folder / f"samples_adapteval_pubmed_2024-06-01T10-20-{seconds}.jsonl"
    path.write_text("".join(json.dumps({
        "doc_id": i, "doc": {"id": f"adapteval/pubmed/test/{i}", "document": f"Trial {i} of drug A.",
                             "summary": "Drug A helped."},
        "target": "Drug A helped.", "resps": [[f"Drug A helped patient {i}."]],
        "filtered_resps": [f"Drug A helped patient {i}."], "filter": "none"}) + "\n" for i in ids))
    return path


def _rescore(samples: Path, url: str, cache: Path, out: Path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    exe = Path(sys.executable).with_name("domsum")
    t0 = time.monotonic()
    proc = subprocess.run([str(exe), "rescore", str(samples), "--metrics", "coherence", "--judge-model", "stub-judge",
                           "--judge-base-url", url, "--judge-cache", str(cache), "--out", str(out)],
                          env=subprocess_env(OPENAI_API_KEY="test", **env), capture_output=True, text=True,
                          timeout=120)
    return proc, time.monotonic() - t0


def test_a_locked_cache_costs_no_stall_serves_its_answers_and_counts_the_unsaved(tmp_path):
    cache = tmp_path / "judge.sqlite"
    first, second = _samples(tmp_path, "30", range(3)), _samples(tmp_path, "31", range(6))
    with StubJudgeServer(time_limit_s=120, default=(Text("4"),)) as srv:
        proc, unlocked_s = _rescore(first, srv.url, cache, tmp_path / "o1")
        assert proc.returncode == 0, proc.stderr
        assert srv.received == 3
        holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(cache)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "locked"
            srv.reset_counts()
            proc, locked_s = _rescore(second, srv.url, cache, tmp_path / "o2")
            locked_out = proc.stdout
        finally:
            holder.communicate(input="", timeout=30)  # closing stdin ends the lock
        assert proc.returncode == 0, proc.stderr
        assert srv.received == 3  # documents 3-5 only: 0-2 were served from the locked cache
        srv.reset_counts()
        proc, _ = _rescore(second, srv.url, cache, tmp_path / "o3")
        assert proc.returncode == 0, proc.stderr
        rerun_paid = srv.received
    # no 30 s stall: the lock costs the claim wait and the flush at the batch's end, about 2 s
    print(f"\nrescore of 6 items: {unlocked_s:.1f} s (3 items, unlocked), {locked_s:.1f} s with the cache locked")
    assert locked_s < unlocked_s + 10
    scores, summary = _outputs(tmp_path / "o2", second)
    assert [s["coherence"] for s in scores] == [4.0] * 6
    calls = summary["judge_calls"]
    assert (calls["cache_hits"], calls["answers"], calls["http_calls"]) == (3, 3, 3)
    assert calls["cache_unsaved"] == 3 and calls["cache_unclaimed"] == 3
    assert 0 < calls["cache_lock_wait_s"] < 5 and calls["cache_locked_writes"] >= 1
    assert calls["cache_unusable"] is None
    assert "locked by another process" in calls["summary"] and "3 answers not saved" in calls["summary"]
    assert f"judge: {calls['summary']}" in locked_out
    # the three answers that could not be saved are paid again once the lock is gone, and kept
    assert rerun_paid == 3
    assert len(open_cache(cache)) == 6


def test_answers_received_while_locked_are_written_once_the_lock_goes(tmp_path):
    """A lock held through the requests and released before the batch ends: the answers
    kept in memory are written then, none is counted unsaved, and a rerun pays nothing."""
    n = 5
    path = tmp_path / "judge.sqlite"
    open_cache(path)  # tables made, as by an earlier run
    holder = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    items = [rating_request(f"late{i}") for i in range(n)]
    with StubJudgeServer(time_limit_s=60, latency_s=0.3, default=(Text("4"),)) as srv:
        def release_when_answered() -> None:
            deadline = time.monotonic() + 30
            while srv.statuses[200] < n and time.monotonic() < deadline:
                time.sleep(0.01)
            holder.execute("ROLLBACK")

        releaser = threading.Thread(target=release_when_answered)
        releaser.start()
        res = judge_scores(items, (1, 5), stub_config(srv, path))
        releaser.join(timeout=30)
        assert res.scores == [4.0] * n and srv.received == n
        assert res.stats.cache_unclaimed == n and res.stats.cache_unsaved == 0
        assert len(open_cache(path)) == n and open_cache(path).pending() == []
        again = judge_scores(items, (1, 5), stub_config(srv, path))
        assert srv.received == n and again.stats.cache_hits == n  # nothing paid twice
    holder.close()


def test_a_dripping_judge_ends_within_its_deadline_with_the_item_counted_failed(tmp_path):
    """One byte every 2 s keeps every read under a 5 s timeout; the deadline bounds the
    whole attempt, so the run ends after 2 attempts x 5 s (+ backoff), not ~600 s."""
    samples = _samples(tmp_path, "32", range(3))
    with StubJudgeServer(time_limit_s=120, default=(Text("4"),)) as srv:
        srv.on("patient 1.", Drip(interval_s=2.0, max_s=90))
        proc, elapsed = _rescore(samples, srv.url, tmp_path / "judge.sqlite", tmp_path / "o",
                                 DOMSUM_JUDGE_TIMEOUT="5", DOMSUM_JUDGE_MAX_RETRIES="1")
        dripped = srv.statuses["drip"]
    print(f"\nrescore against a dripping judge (timeout 5 s, 1 retry): {elapsed:.1f} s")
    assert proc.returncode == 0, proc.stderr
    assert dripped == 2  # the first attempt and its one retry
    assert 10 <= elapsed < 10 + 1 + 8  # 2 deadlines, backoff <= 1 s, start-up
    scores, summary = _outputs(tmp_path / "o", samples)
    assert [s["coherence"] for s in scores] == [4.0, None, 4.0]  # never scored, never a 0
    assert summary["metrics"]["coherence"] == pytest.approx(4.0)
    calls = summary["judge_calls"]
    assert calls["failed"]["timeout"] == 1 and calls["failed_tries"]["timeout"] == 2 and calls["scored"] == 2
    assert "1 of 3 judge items failed: 1 timeout after 2 tries" in proc.stdout

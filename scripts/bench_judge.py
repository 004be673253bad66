"""Benchmark the judge core: bounded concurrency vs a sequential loop.

Against the local stub server (``tests/helpers/judge_server.py``) with a fixed latency per
request (default 100 ms), N judge calls (default 200, all distinct prompts, so
neither the cache nor in-flight sharing can help) run

1. sequentially: the same engine with ``concurrency=1`` (one request at a
   time — what a plain loop over the items does);
2. concurrently: ``concurrency`` requests in flight (default 32).

Both runs write every answer to a fresh SQLite cache, so the cost of caching (and
of claiming each item before its request) is included. Goal (issue 3): the
concurrent run under 3 s and at least 8x faster.

3. shared: two concurrent runs of the same N items on one fresh cache (two
   threads): claims must keep the total at N requests, not 2N.

    python scripts/bench_judge.py [--calls 200] [--concurrency 32] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "tests"):  # run from the checkout: the packages and the test helpers
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from custom_metrics.judge import JudgeConfig, JudgeResult, ask  # noqa: E402
from helpers.judge_server import StubJudgeServer, Text  # noqa: E402


def _requests(n: int, tag: str) -> list[list[dict[str, str]]]:
    return [[{"role": "system", "content": "Rate the summary from 1 to 5."},
             {"role": "user", "content": f"Summary {tag}-{i}: a short text.\n\n- Score (1-5):"}]
            for i in range(n)]


def _run(url: str, n: int, concurrency: int, cache_dir: str, tag: str) -> tuple[float, JudgeResult]:
    config = JudgeConfig(model="stub-judge", base_url=url, api_key="bench", concurrency=concurrency,
                         cache=str(Path(cache_dir) / f"{tag}.sqlite"), progress=False)
    t0 = time.perf_counter()
    result = ask(config, _requests(n, tag), scale=(1, 5))
    return time.perf_counter() - t0, result


def _shared(url: str, n: int, concurrency: int, cache_dir: str) -> tuple[float, list[JudgeResult]]:
    """Two runs of the same items at once on one cache; (wall time, both results)."""
    results: list[JudgeResult] = []
    start = threading.Barrier(2)

    def run() -> None:
        start.wait(timeout=30)
        results.append(_run(url, n, concurrency, cache_dir, "shared")[1])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return time.perf_counter() - t0, results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.1, help="server latency per request, seconds")
    ap.add_argument("--skip-sequential", action="store_true", help="only the concurrent run")
    args = ap.parse_args(argv)

    with StubJudgeServer(latency_s=args.latency, time_limit_s=600, default=(Text("4"),)) as server, \
            tempfile.TemporaryDirectory() as cache_dir:
        _run(server.url, 2, 2, cache_dir, "warmup")  # imports and first connection, not measured
        server.reset_counts()
        conc_s, conc = _run(server.url, args.calls, args.concurrency, cache_dir, "concurrent")
        conc_served, peak = server.received, server.max_in_flight
        assert conc.n_scored == args.calls, f"only {conc.n_scored} of {args.calls} scored"
        print(f"concurrent ({args.concurrency} in flight): {args.calls} calls in {conc_s:.2f} s "
              f"({conc_served} HTTP requests, peak {peak} in flight at the server)")
        server.reset_counts()
        shared_s, shared = _shared(server.url, args.calls, args.concurrency, cache_dir)
        shared_ok = server.received == args.calls and all(r.n_scored == args.calls for r in shared) \
            and len(shared) == 2
        print(f"shared cache (2 runs at once): {args.calls} items each in {shared_s:.2f} s, "
              f"{server.received} HTTP requests in all (goal: {args.calls}: {'met' if shared_ok else 'NOT met'}; "
              f"waited on the other run's claim: {sum(r.stats.claim_waits for r in shared)})")
        if args.skip_sequential:
            return 0 if conc_s < 3.0 and shared_ok else 1
        server.reset_counts()
        seq_s, seq = _run(server.url, args.calls, 1, cache_dir, "sequential")
        assert seq.n_scored == args.calls
        print(f"sequential (1 in flight):  {args.calls} calls in {seq_s:.2f} s "
              f"({server.received} HTTP requests)")
    speedup = seq_s / conc_s
    ok = conc_s < 3.0 and speedup >= 8.0 and shared_ok
    print(f"speed-up: {speedup:.1f}x  (goal: concurrent < 3 s and >= 8x: {'met' if ok else 'NOT met'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

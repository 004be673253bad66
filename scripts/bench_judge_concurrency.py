"""Benchmark the judge's adaptive concurrency against a plain ``openai`` async client.

Two stub servers model a server's capacity (``tests/helpers/judge_server.py``, each in
its own process on 127.0.0.1, so that the client's CPU time is the client's alone):

* ``batching``: 16 slots, ``--latency`` each, flat up to 16 in flight, queued beyond
  (vLLM, ``transformers serve --continuous-batching``);
* ``serial``: one request at a time (``transformers serve`` without batching, a model
  on a CPU).

Against each, N distinct one-reply requests (temperature 0, ``max_tokens`` 5) are sent
by a plain ``AsyncOpenAI`` client with an ``asyncio.Semaphore`` at several
concurrencies, then by the suite (``judge_texts``, concurrency and timeout unset, a
fresh SQLite cache: the default path, cache writes and claims included), in the same
process and thread. Printed: wall time, requests per second, CPU ms per call, and the
ratios the goal is stated in: suite throughput / the plain client's best, and suite CPU
per call / the plain client's at that concurrency (goal: >= 0.9 and <= 1.1).

``--transformers-serve`` measures ``transformers serve`` instead, with the SmolLM2-135M-Instruct
checkpoint of ``scripts/smollm2_checkpoint.py`` preloaded on the CPU (offline, as the
real-model tests start it), once without and once with ``--continuous-batching``;
``--serve`` measures a server already running.

    OMP_NUM_THREADS=1 python scripts/bench_judge_concurrency.py [--calls 400] [--latency 0.2]
    OMP_NUM_THREADS=1 python scripts/bench_judge_concurrency.py --transformers-serve --calls 40
    python scripts/bench_judge_concurrency.py --serve http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-0.5B-Instruct
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "tests"):  # run from the checkout: the packages and the test helpers
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

PLAIN_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)


def _requests(n: int, tag: str) -> list[list[dict[str, str]]]:
    return [[{"role": "system", "content": "Rate the summary from 1 to 5."},
             {"role": "user", "content": f"Summary {tag}-{i}: a short text about a trial.\n\n- Score (1-5):"}]
            for i in range(n)]


def _serve_stub(latency: float, slots: int) -> int:
    """Child process: a stub server; prints its URL, stops when stdin closes."""
    from helpers.judge_server import StubJudgeServer, Text

    with StubJudgeServer(latency_s=latency, slots=slots, time_limit_s=3600, default=(Text("4"),)) as srv:
        print(srv.url, flush=True)
        sys.stdin.read()
    return 0


async def _plain(url: str, model: str, requests: list, concurrency: int) -> tuple[float, float]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="bench", base_url=url, max_retries=0, timeout=600)
    sem = asyncio.Semaphore(concurrency)

    async def one(messages: list) -> str:
        async with sem:
            r = await client.chat.completions.create(model=model, messages=messages, temperature=0.0,
                                                     max_tokens=5, n=1)
            return r.choices[0].message.content or ""

    c0, t0 = time.process_time(), time.perf_counter()
    out = await asyncio.gather(*(one(m) for m in requests))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await client.close()
    assert len(out) == len(requests)
    return wall, cpu


def _suite(url: str, model: str, requests: list, cache_dir: str, tag: str) -> tuple[float, float, dict]:
    from custom_metrics.judge import JudgeConfig, judge_texts

    config = JudgeConfig(model=model, base_url=url, api_key="bench", cache=str(Path(cache_dir) / f"{tag}.sqlite"),
                         progress=False, max_tokens=5)
    c0, t0 = time.process_time(), time.perf_counter()
    res = judge_texts(requests, lambda text: text, config)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert res.n_scored == len(requests), res.stats.summary_line()
    return wall, cpu, res.stats.sizing[0]


def compare(name: str, url: str, model: str, calls: int, concurrencies: tuple[int, ...]) -> tuple[float, float]:
    """Plain client at each concurrency, then the suite; (throughput ratio, CPU ratio)."""
    plain: dict[int, tuple[float, float]] = {}
    asyncio.run(_plain(url, model, _requests(4, f"{name}-warm"), 4))  # connections, imports
    for c in concurrencies:
        plain[c] = asyncio.run(_plain(url, model, _requests(calls, f"{name}-plain{c}"), c))
        wall, cpu = plain[c]
        print(f"  {name}: plain AsyncOpenAI, {c:>2} in flight: {wall:6.2f} s, {calls / wall:7.1f} req/s, "
              f"{1000 * cpu / calls:5.2f} ms CPU per call")
    best = min(plain, key=lambda c: plain[c][0])
    with tempfile.TemporaryDirectory() as cache_dir:
        _suite(url, model, _requests(4, f"{name}-suitewarm"), cache_dir, "warm")
        wall, cpu, sizing = _suite(url, model, _requests(calls, f"{name}-suite"), cache_dir, name)
    ratio, cpu_ratio = plain[best][0] / wall, (cpu / calls) / (plain[best][1] / calls)
    print(f"  {name}: suite (adaptive, cache on): {wall:6.2f} s, {calls / wall:7.1f} req/s, "
          f"{1000 * cpu / calls:5.2f} ms CPU per call; in flight {sizing['start_concurrency']} -> peak "
          f"{sizing['peak_concurrency']}, end {sizing['max_concurrency']}")
    print(f"  {name}: throughput {ratio:.2f}x the plain client's best ({best} in flight; goal >= 0.9), "
          f"CPU per call {cpu_ratio:.2f}x its ({best} in flight; goal <= 1.1)")
    return ratio, cpu_ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--latency", type=float, default=0.2, help="stub seconds per request (batching server)")
    ap.add_argument("--serial-latency", type=float, default=0.02, help="stub seconds per request (serial server)")
    ap.add_argument("--serial-calls", type=int, default=100)
    ap.add_argument("--serve", help="an OpenAI-compatible URL to measure instead of the stubs")
    ap.add_argument("--model", default="stub-judge")
    ap.add_argument("--transformers-serve", action="store_true",
                    help="measure `transformers serve` (SmolLM2-135M-Instruct on the CPU), without and with "
                         "--continuous-batching")
    ap.add_argument("--serve-threads", type=int, default=1, help="the server's threads (--transformers-serve)")
    ap.add_argument("--stub-server", nargs=2, type=float, metavar=("LATENCY", "SLOTS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stub_server:
        return _serve_stub(args.stub_server[0], int(args.stub_server[1]))
    if args.serve:
        compare("server", args.serve, args.model, args.calls, PLAIN_CONCURRENCY)
        return 0
    if args.transformers_serve:
        results = _transformers_serve(args.calls, args.serve_threads)
        print(_goal(results, "both servers"))
        return 0  # a real server's figures are reported, never a failure (the stubs are the check)
    results = []
    for name, latency, slots, calls in (("batching-16", args.latency, 16, args.calls),
                                        ("serial", args.serial_latency, 1, args.serial_calls)):
        child = subprocess.Popen([sys.executable, __file__, "--stub-server", str(latency), str(slots)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            url = child.stdout.readline().strip()  # type: ignore[union-attr]
            print(f"{name}: stub with {slots} slot(s), {latency:g} s a request, {calls} calls")
            results.append(compare(name, url, args.model, calls, PLAIN_CONCURRENCY))
        finally:
            child.stdin.close()  # type: ignore[union-attr]
            child.wait(timeout=30)
    print(_goal(results, "both servers"))
    return 0 if _met(results) else 1


def _met(results: list[tuple[float, float]]) -> bool:
    return all(r >= 0.9 and c <= 1.1 for r, c in results)


def _goal(results: list[tuple[float, float]], what: str) -> str:
    return f"goal (throughput >= 0.9x, CPU per call <= 1.1x, {what}): {'met' if _met(results) else 'NOT met'}"


def _transformers_serve(calls: int, threads: int) -> list[tuple[float, float]]:
    """``transformers serve`` with SmolLM2 on the CPU, without then with continuous batching."""
    from helpers.real_models import converted_checkpoint, serve

    checkpoint = converted_checkpoint((Path.home() / ".cache" / "domsum" / "models").resolve())
    results = []
    with tempfile.TemporaryDirectory() as logs:
        for name, batching in (("transformers-serve", False), ("transformers-serve-cb", True)):
            with serve(checkpoint, Path(logs) / f"{name}.log", threads=threads, continuous_batching=batching) as srv:
                print(f"{name}: SmolLM2-135M-Instruct on the CPU, {threads} thread(s), "
                      f"{'with' if batching else 'without'} --continuous-batching, {calls} calls")
                results.append(compare(name, srv.base_url, srv.model, calls, PLAIN_CONCURRENCY))
    return results


if __name__ == "__main__":
    sys.exit(main())

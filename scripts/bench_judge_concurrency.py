"""Benchmark the judge's adaptive concurrency against a plain ``openai`` async client.

Two stub servers model a server's capacity (``tests/helpers/judge_server.py``, each in
its own process on 127.0.0.1, so that the client's CPU time is the client's alone):

* ``batching``: 16 slots, ``--latency`` each, flat up to 16 in flight, queued beyond
  (vLLM, ``transformers serve --continuous-batching``); measured at each ``--calls``
  (96 and 400: a small batch shows what the first round trips cost, a large one the
  steady state);
* ``serial``: one request at a time (``transformers serve`` without batching, a model
  on a CPU).

Against each, N distinct one-reply requests (temperature 0, ``max_tokens`` 5, ``n`` 1)
are sent by a plain ``AsyncOpenAI`` client with an ``asyncio.Semaphore`` (timed from its
construction to its close), and by the
suite (``judge_texts``, concurrency and timeout unset, a SQLite cache made by a warm-up
batch: cache writes and claims included, every request new to it), in the same process
and thread. One cache file serves all of a case's batches, as the default one serves a
run's: a new file per batch would charge each batch the 15-30 ms of creating it, which a
user pays once. The plain client is first run once at each ``--concurrency``; the
concurrencies within 25 % of the fastest are then run ``--repeat`` times, interleaved
with the suite (the order alternating each round), so that a shared machine's load
falls on both alike. Printed: medians of wall time, requests per second and CPU ms per
call, and the ratios the goal is stated in: the suite's throughput / the plain client's
at its best concurrency (the lowest median; goal >= 0.9, >= 0.98 against the serial
server) and the suite's CPU per call / the plain client's there (goal <= 1.0), with
each round's ratios.

``--transformers-serve`` measures ``transformers serve`` instead, with the SmolLM2-135M-Instruct
checkpoint of ``scripts/smollm2_checkpoint.py`` preloaded on the CPU (offline, as the
real-model tests start it), once without and once with ``--continuous-batching``;
``--serve`` measures a server already running.

    OMP_NUM_THREADS=1 python scripts/bench_judge_concurrency.py [--calls 96 400] [--repeat 3] [--latency 0.2]
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
from dataclasses import dataclass
from pathlib import Path
from statistics import median

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

    # timed from the client's construction to its close, as the suite's batch is timed whole
    c0, t0 = time.process_time(), time.perf_counter()
    client = AsyncOpenAI(api_key="bench", base_url=url, max_retries=0, timeout=600)
    sem = asyncio.Semaphore(concurrency)

    async def one(messages: list) -> str:
        async with sem:
            r = await client.chat.completions.create(model=model, messages=messages, temperature=0.0,
                                                     max_tokens=5, n=1)
            return r.choices[0].message.content or ""

    out = await asyncio.gather(*(one(m) for m in requests))
    await client.close()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(out) == len(requests)
    return wall, cpu


def _suite(url: str, model: str, requests: list, cache: Path) -> tuple[float, float, dict]:
    from custom_metrics.judge import JudgeConfig, judge_texts

    config = JudgeConfig(model=model, base_url=url, api_key="bench", cache=str(cache),
                         progress=False, max_tokens=5)
    c0, t0 = time.process_time(), time.perf_counter()
    res = judge_texts(requests, lambda text: text, config)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert res.n_scored == len(requests), res.stats.summary_line()
    return wall, cpu, res.stats.sizing[0]


@dataclass
class Case:
    """One measured case: its name and calls, the goals it is held to, the ratios measured."""

    name: str
    calls: int
    goal: float = 0.9  # the suite's throughput / the plain client's best, at least
    cpu_goal: float = 1.0  # the suite's CPU per call / the plain client's, at most
    ratio: float = float("nan")
    cpu_ratio: float = float("nan")

    @property
    def met(self) -> bool:
        return self.ratio >= self.goal and self.cpu_ratio <= self.cpu_goal


def compare(case: Case, url: str, model: str, concurrencies: tuple[int, ...], repeat: int) -> Case:
    """Plain client at each concurrency, then the fastest ones and the suite, interleaved
    ``repeat`` times; fills the case's median ratios."""
    name, calls = case.name, case.calls
    asyncio.run(_plain(url, model, _requests(4, f"{name}-warm"), 4))  # connections, imports
    scan = {c: asyncio.run(_plain(url, model, _requests(calls, f"{name}-scan{c}"), c)) for c in concurrencies}
    for c, (wall, cpu) in scan.items():
        print(f"  {name}: plain AsyncOpenAI, {c:>2} in flight, once: {wall:6.2f} s, {1000 * cpu / calls:5.2f} ms CPU "
              f"per call")
    fastest = min(wall for wall, _ in scan.values())
    candidates = [c for c in concurrencies if scan[c][0] <= 1.25 * fastest]
    plain: dict[int, list[tuple[float, float]]] = {c: [] for c in candidates}
    suite: list[tuple[float, float, dict]] = []
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = Path(cache_dir) / "judge.sqlite"  # one file, as a run's batches share one
        _suite(url, model, _requests(4, f"{name}-suitewarm"), cache)
        for r in range(repeat):
            def run_plain() -> None:
                for c in candidates:
                    plain[c].append(asyncio.run(_plain(url, model, _requests(calls, f"{name}-plain{c}-{r}"), c)))

            def run_suite() -> None:
                suite.append(_suite(url, model, _requests(calls, f"{name}-suite-{r}"), cache))

            for step in ((run_plain, run_suite) if r % 2 else (run_suite, run_plain)):
                step()
    for c in candidates:
        walls, cpus = [w for w, _ in plain[c]], [u for _, u in plain[c]]
        print(f"  {name}: plain AsyncOpenAI, {c:>2} in flight, median of {repeat}: {median(walls):6.2f} s, "
              f"{calls / median(walls):7.1f} req/s, {1000 * median(cpus) / calls:5.2f} ms CPU per call")
    best = min(candidates, key=lambda c: median(w for w, _ in plain[c]))
    best_wall, best_cpu = median(w for w, _ in plain[best]), median(u for _, u in plain[best])
    wall, cpu = median(w for w, _, _ in suite), median(u for _, u, _ in suite)
    sizing = sorted(suite, key=lambda run: run[0])[(len(suite) - 1) // 2][2]  # the median run's
    case.ratio, case.cpu_ratio = best_wall / wall, cpu / best_cpu
    print(f"  {name}: suite (adaptive, cache on), median of {repeat}: {wall:6.2f} s, {calls / wall:7.1f} req/s, "
          f"{1000 * cpu / calls:5.2f} ms CPU per call; in flight {sizing['start_concurrency']} -> peak "
          f"{sizing['peak_concurrency']}, end {sizing['max_concurrency']}")
    rounds = " ".join(f"{pw / sw:.2f}/{sc / pc:.2f}" for (pw, pc), (sw, sc, _) in zip(plain[best], suite))
    print(f"  {name}: throughput {case.ratio:.2f}x the plain client's best ({best} in flight; goal >= "
          f"{case.goal:g}), CPU per call {case.cpu_ratio:.2f}x its (goal <= {case.cpu_goal:g}); "
          f"per round (throughput/CPU): {rounds}")
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, nargs="+", default=[96, 400], help="calls per case (batching server)")
    ap.add_argument("--latency", type=float, default=0.2, help="stub seconds per request (batching server)")
    ap.add_argument("--serial-latency", type=float, default=0.02, help="stub seconds per request (serial server)")
    ap.add_argument("--serial-calls", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved runs of the suite and the fastest plain "
                                                          "concurrencies; medians are reported")
    ap.add_argument("--concurrency", type=int, nargs="+", default=list(PLAIN_CONCURRENCY),
                    help="the plain client's requests in flight to try")
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
    conc = tuple(args.concurrency)
    if args.serve:
        for calls in args.calls:
            compare(Case(f"server-{calls}", calls), args.serve, args.model, conc, args.repeat)
        return 0
    if args.transformers_serve:
        results = _transformers_serve(args.calls[0], args.serve_threads, conc, args.repeat)
        print(_goal(results))
        return 0  # a real server's figures are reported, never a failure (the stubs are the check)
    results = []
    servers = (("batching-16", args.latency, 16, [Case(f"batching-16 x{n}", n) for n in args.calls]),
               ("serial", args.serial_latency, 1, [Case("serial", args.serial_calls, goal=0.98)]))
    for name, latency, slots, cases in servers:
        child = subprocess.Popen([sys.executable, __file__, "--stub-server", str(latency), str(slots)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            url = child.stdout.readline().strip()  # type: ignore[union-attr]
            for case in cases:
                print(f"{case.name}: stub with {slots} slot(s), {latency:g} s a request, {case.calls} calls")
                results.append(compare(case, url, args.model, conc, args.repeat))
        finally:
            child.stdin.close()  # type: ignore[union-attr]
            child.wait(timeout=30)
    print(_goal(results))
    return 0 if all(c.met for c in results) else 1


def _goal(results: list[Case]) -> str:
    return "goal (" + "; ".join(f"{c.name}: throughput >= {c.goal:g}x {c.ratio:.2f}, CPU per call <= "
                                f"{c.cpu_goal:g}x {c.cpu_ratio:.2f}" for c in results) + "): " + \
        ("met" if all(c.met for c in results) else "NOT met")


def _transformers_serve(calls: int, threads: int, concurrencies: tuple[int, ...], repeat: int) -> list[Case]:
    """``transformers serve`` with SmolLM2 on the CPU, without then with continuous batching."""
    from helpers.real_models import converted_checkpoint, serve

    checkpoint = converted_checkpoint((Path.home() / ".cache" / "domsum" / "models").resolve())
    results = []
    with tempfile.TemporaryDirectory() as logs:
        for name, batching in (("transformers-serve", False), ("transformers-serve-cb", True)):
            with serve(checkpoint, Path(logs) / f"{name}.log", threads=threads, continuous_batching=batching) as srv:
                print(f"{name}: SmolLM2-135M-Instruct on the CPU, {threads} thread(s), "
                      f"{'with' if batching else 'without'} --continuous-batching, {calls} calls")
                results.append(compare(Case(name, calls), srv.base_url, srv.model, concurrencies, repeat))
    return results


if __name__ == "__main__":
    sys.exit(main())

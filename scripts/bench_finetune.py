"""Training throughput of ``python -m finetune``: tokens/s and optimizer steps/s.

By default it builds the tiny test models (GPT-2 and T5 with a BPE tokenizer trained
on the fixtures, ``lm_eval_tasks/tiny_models.py``) and trains each configuration for a fixed
number of steps on a fixture task, with evaluation, checkpoint cleanup and logging
integrations off, through the same code path as the CLI. Figures come from the run
card: tokens are non-padding input tokens in optimizer steps, time is the wall time
of those steps (evaluation and saving excluded)::

    python scripts/bench_finetune.py                       # tiny models, CPU
    python scripts/bench_finetune.py --steps 50 --batch-size 8 --threads 0   # torch's threads
    python scripts/bench_finetune.py --base gpt2 --configs causal-lora --data-dir DIR

``--configs`` picks from ``causal-lora``, ``seq2seq-full``, ``seq2seq-lora``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CONFIGS = {
    "causal-lora": ("causal", "lora"),
    "seq2seq-full": ("seq2seq", "full"),
    "seq2seq-lora": ("seq2seq", "lora"),
}


def bench(kind: str, method: str, base: str, data_dir: str, task: str, steps: int, batch_size: int,
          out: Path, precision: str | None = None) -> dict:
    from finetune import resolve_config, run

    overrides = {
        "task": task, "base": base, "method": method, "preset": "domainsum",
        "output": str(out), "max_steps": steps, "batch_size": batch_size,
        "eval_strategy": "no", "best_by_validation": False, "report_to": "none",
        "logging_steps": max(1, steps // 5), "metadata": {"data_dir": data_dir},
        "load_in_8bit": False,
    }
    if precision:
        overrides["precision"] = precision
    card = run(resolve_config(overrides), overwrite=True)
    m = card["metrics"]
    return {
        "config": f"{kind}-{method}", "base": base, "steps": m["steps_this_run"], "batch_size": batch_size,
        "tokens_per_step": round(m["train_tokens_this_run"] / max(1, m["steps_this_run"]), 1),
        "tokens_per_s": m["tokens_per_second"], "steps_per_s": m["steps_per_second"],
        "step_time_s": m["step_time_s"], "trainable_params": card["base_model"]["trainable_parameters"],
        "params": card["base_model"]["parameters"], "device": card["environment"]["device"],
        "precision": card["decisions"]["precision"],
    }


def main(argv: list[str] | None = None) -> list[dict]:
    from lm_eval_tasks import sample_data_dir

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"comma list of {', '.join(CONFIGS)}")
    p.add_argument("--base", help="model to train (default: a tiny model built per config)")
    p.add_argument("--data-dir", default=str(sample_data_dir()),
                   help="mirror root (default: the package's sample data)")
    p.add_argument("--task", default="domainsum_samsum")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: tiny matmuls on shared cores slow down with more; "
                        "0 = torch's default)")
    p.add_argument("--precision", help="fp32, bf16, fp16 (default: auto)")
    p.add_argument("--json", help="also write the figures to this JSON file")
    a = p.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    print(f"torch threads: {torch.get_num_threads()}")
    from lm_eval_tasks.tiny_models import build_causal_lm, build_seq2seq_lm

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_finetune_") as tmp:
        tmpd = Path(tmp)
        tiny: dict[str, str] = {}
        for name in [c.strip() for c in a.configs.split(",") if c.strip()]:
            if name not in CONFIGS:
                raise SystemExit(f"unknown config {name!r}: choose from {', '.join(CONFIGS)}")
            kind, method = CONFIGS[name]
            base = a.base
            if base is None:
                if kind not in tiny:
                    build = build_causal_lm if kind == "causal" else build_seq2seq_lm
                    tiny[kind] = str(build(tmpd / f"tiny_{kind}", [Path(a.data_dir)]))
                base = tiny[kind]
            rows.append(bench(kind, method, base, a.data_dir, a.task, a.steps, a.batch_size,
                              tmpd / f"out_{name}", a.precision))
    print()
    print("| config | device | precision | params (trainable) | batch | tokens/step | tokens/s | steps/s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['config']} | {r['device']} | {r['precision']} | {r['params']:,} ({r['trainable_params']:,}) "
              f"| {r['batch_size']} | {r['tokens_per_step']} | {r['tokens_per_s']:,.0f} | {r['steps_per_s']:.2f} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()

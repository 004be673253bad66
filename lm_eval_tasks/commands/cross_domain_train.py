"""``domsum cross-domain-train``: fine-tune on each source domain of a level, evaluate on all.

For one level (DomainSum ``genre``, ``style`` or ``topic``; AdaptEval's three domains
as level ``all``) this fine-tunes the base model on every source domain's train split
with ``python -m finetune`` and evaluates each checkpoint with the real ``lm_eval``
CLI on the zero-shot task of every domain of the level (in-domain on the diagonal,
cross-domain off it). ``--include-base`` also evaluates the base model once, the
zero-shot row of the papers' tables.

Usage::

    domsum cross-domain-train --benchmark domainsum --level genre \\
        --base meta-llama/Llama-2-7b-hf --method lora --preset domainsum \\
        --out out/xdomain-genre --data-dir data/ [--include-base] [--limit 100] \\
        [--finetune-args "--bf16 --gradient-checkpointing"] \\
        [--launcher "accelerate launch --config_file finetune/configs/accelerate_ddp.yaml"]

Levels, domains and task names come from the task catalogue: the zero-shot plain task
of each (benchmark, domain) is what is trained on and evaluated.

Output layout (what the cross-domain report reads)::

    OUT/
      cross_domain.json              manifest (schema domsum-cross-domain/1): benchmark,
                                     level, base, method, preset, metadata, sources,
                                     targets, and per row ("base" and every source):
                                     model_args, the run card path, the results JSON
                                     path, the target tasks, and status
      base/                          with --include-base
        eval/<model>/results_<timestamp>.json         lm_eval's own output format
        eval/<model>/samples_<task>_<timestamp>.jsonl (with --log-samples, default on)
      <source>/                      one per source domain, e.g. samsum/
        model/                       the finetune output: adapter (LoRA) or model (full)
          run_card.json              base, task, preset, hyper-parameters, data hash,
                                     seed, eval loss per epoch, versions
        eval/<model>/results_<timestamp>.json
        eval/<model>/samples_<task>_<timestamp>.jsonl
        finetune.log, lm_eval.log    the subprocesses' output

``<model>`` is lm_eval's sanitised model name; a reader should take the newest
``OUT/<row>/eval/**/results_*.json`` (the manifest names it). In each results file,
``results["<benchmark>_<target>"]["rouge1,none"]`` etc. hold the scores of the row's
model on target domain ``<target>``.

The loop is restartable: a source whose ``model/run_card.json`` exists is not trained
again, an unfinished one resumes from its last checkpoint (``finetune --resume``), and
a row whose results exist is not evaluated again; ``--force`` redoes everything.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from lm_eval_tasks import catalog, include_path
from lm_eval_tasks.commands import HARNESS_CLI, parse_metadata, subprocess_env

SCHEMA = "domsum-cross-domain/1"


def levels(benchmark: str) -> dict[str, tuple[str, ...]]:
    """The levels of a benchmark and their domains (DomainSum's three; ``all`` otherwise)."""
    specs = catalog.select(benchmark, shots=0, variant="")
    if not specs:
        raise SystemExit(f"cross_domain_train: unknown benchmark {benchmark!r} "
                         f"({', '.join(catalog.BENCHMARKS)})")
    out: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        level = spec.level or "all"
        out[level] = out.get(level, ()) + (spec.subset,)
    return out


def train_task(benchmark: str, domain: str) -> str:
    """The zero-shot plain task of ``benchmark``/``domain`` (what fine-tuning trains on)."""
    return catalog.select(benchmark, shots=0, variant="", subsets=(domain,))[0].name


def pick(all_domains: tuple[str, ...], chosen: str | None, what: str) -> list[str]:
    if not chosen:
        return list(all_domains)
    out = [d.strip() for d in chosen.split(",") if d.strip()]
    bad = [d for d in out if d not in all_domains]
    if bad:
        raise SystemExit(f"cross_domain_train: {what} {bad} not in this level ({', '.join(all_domains)})")
    return out


def model_kind(base: str, model_type: str) -> str:
    if model_type != "auto":
        return model_type
    from transformers import AutoConfig

    return "seq2seq" if getattr(AutoConfig.from_pretrained(base), "is_encoder_decoder", False) else "causal"


def model_args(base: str, model_dir: Path | None, method: str, kind: str, extra: str = "") -> str:
    if model_dir is None:
        margs = f"pretrained={base}"
    elif method == "lora":
        margs = f"pretrained={base},peft={model_dir}"
    else:
        margs = f"pretrained={model_dir}"
    if kind == "seq2seq":
        margs += ",backend=seq2seq"
    return margs + (f",{extra}" if extra else "")


def newest_results(eval_dir: Path) -> str | None:
    files = sorted(glob.glob(str(eval_dir / "**" / "results_*.json"), recursive=True), key=os.path.getmtime)
    return files[-1] if files else None


def run_logged(cmd: list[str], log_path: Path, dry_run: bool, env: dict) -> None:
    print("+ " + shlex.join(cmd), flush=True)
    if dry_run:
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with open(log_path, "w", encoding="utf-8") as fh:
        proc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"cross_domain_train: command failed ({proc.returncode}), see {log_path}:\n{tail}")
    print(f"  done in {time.time() - t0:.0f}s ({log_path})", flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="domsum cross-domain-train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See the module docstring for the output layout.")
    p.add_argument("--benchmark", default="domainsum", help="domainsum (default) or adapteval")
    p.add_argument("--level", default=None, help="domainsum: genre, style or topic; adapteval: all")
    p.add_argument("--base", required=True)
    p.add_argument("--method", default="lora")
    p.add_argument("--preset", default=None, help="default: the benchmark's own preset")
    p.add_argument("--model-type", default="auto")
    p.add_argument("--out", "--output", dest="out", required=True,
                   help="output folder (layout: see the module docstring)")
    p.add_argument("--data-dir", "--data_dir", dest="data_dir", help="local mirror (task metadata data_dir) for training and evaluation")
    p.add_argument("--metadata", default="{}", help="task metadata JSON for both finetune and lm_eval")
    p.add_argument("--sources", help="comma list of source domains (default: all of the level)")
    p.add_argument("--targets", help="comma list of target domains (default: all of the level)")
    p.add_argument("--include-base", action="store_true", help="also evaluate the base model (zero-shot row)")
    p.add_argument("--limit", type=int, help="lm_eval --limit per target task")
    p.add_argument("--batch-size", default="auto", help="lm_eval --batch_size")
    p.add_argument("--no-log-samples", action="store_true", help="do not pass --log_samples to lm_eval")
    p.add_argument("--finetune-args", default="", help="extra arguments for python -m finetune")
    p.add_argument("--lm-eval-args", default="", help="extra arguments for lm_eval")
    p.add_argument("--model-args-extra", default="", help="extra lm_eval --model_args (e.g. dtype=bfloat16)")
    p.add_argument("--launcher", default="", help='prefix for training, e.g. "accelerate launch --config_file X"')
    p.add_argument("--force", action="store_true", help="retrain and re-evaluate everything")
    p.add_argument("--dry-run", action="store_true", help="print the commands and the layout, run nothing")
    return p


def run(argv: list[str] | None = None) -> dict:
    """Plan (``--dry-run``) or run the loop; returns the manifest."""
    a = build_parser().parse_args(argv)
    lv = levels(a.benchmark)
    level = a.level or ("all" if a.benchmark == "adapteval" else None)
    if level not in lv:
        raise SystemExit(f"cross_domain_train: --level must be one of {', '.join(lv)} for {a.benchmark}")
    sources = pick(lv[level], a.sources, "sources")
    targets = pick(lv[level], a.targets, "targets")
    preset = a.preset or a.benchmark
    metadata = parse_metadata(a.metadata, "cross_domain_train")
    if a.data_dir:
        metadata["data_dir"] = str(Path(a.data_dir).resolve())
    out = Path(a.out).resolve()
    kind = model_kind(a.base, a.model_type)
    tasks = [train_task(a.benchmark, t) for t in targets]
    env = subprocess_env()

    manifest: dict = {
        "schema": SCHEMA, "benchmark": a.benchmark, "level": level, "base": a.base,
        "method": a.method, "preset": preset, "kind": kind, "metadata": metadata,
        "sources": sources, "targets": targets, "tasks": tasks, "rows": {},
    }

    def save_manifest() -> None:
        if not a.dry_run:
            out.mkdir(parents=True, exist_ok=True)
            (out / "cross_domain.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")

    def evaluate(row: str, model_dir: Path | None) -> None:
        eval_dir = out / row / "eval"
        entry = manifest["rows"].setdefault(row, {})
        margs = model_args(a.base, model_dir, a.method, kind, a.model_args_extra)
        entry.update({"model_args": margs, "eval_dir": str(eval_dir), "tasks": tasks})
        done = newest_results(eval_dir)
        if done and not a.force:
            print(f"= {row}: results exist ({done})")
        else:
            cmd = [*HARNESS_CLI, "--model", "hf", "--model_args", margs,
                   "--include_path", include_path(), "--tasks", ",".join(tasks),
                   "--batch_size", a.batch_size, "--output_path", str(eval_dir)]
            if metadata:
                cmd += ["--metadata", json.dumps(metadata)]
            if a.limit:
                cmd += ["--limit", str(a.limit)]
            if not a.no_log_samples:
                cmd.append("--log_samples")
            cmd += shlex.split(a.lm_eval_args)
            run_logged(cmd, out / row / "lm_eval.log", a.dry_run, env)
        entry["results"] = newest_results(eval_dir)
        entry["status"] = "evaluated" if entry["results"] else ("planned" if a.dry_run else "missing")
        save_manifest()

    if a.include_base:
        evaluate("base", None)
    for src in sources:
        model_dir = out / src / "model"
        entry = manifest["rows"].setdefault(src, {})
        entry.update({"train_task": train_task(a.benchmark, src), "model_dir": str(model_dir),
                      "run_card": str(model_dir / "run_card.json")})
        if (model_dir / "run_card.json").is_file() and not a.force:
            print(f"= {src}: trained ({model_dir / 'run_card.json'})")
        else:
            cmd = shlex.split(a.launcher) if a.launcher else [sys.executable]
            cmd += ["-m", "finetune", "--task", train_task(a.benchmark, src), "--base", a.base,
                    "--method", a.method, "--preset", preset, "--model-type", a.model_type,
                    "--output", str(model_dir), "--metadata", json.dumps(metadata)]
            cmd += ["--overwrite"] if a.force else ["--resume"]
            cmd += shlex.split(a.finetune_args)
            run_logged(cmd, out / src / "finetune.log", a.dry_run, env)
        evaluate(src, model_dir)
    save_manifest()
    if a.dry_run:
        print(json.dumps(manifest, indent=2))
    else:
        print(f"manifest: {out / 'cross_domain.json'}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0

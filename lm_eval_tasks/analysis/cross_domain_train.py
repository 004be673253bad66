"""Fine-tune on each source domain of a level, evaluate on all: the loop of ``domsum cross-domain-train``.

For one level (DomainSum ``genre``, ``style`` or ``topic``; AdaptEval's three domains
as level ``all``) this fine-tunes the base model on every source domain's train split
with ``python -m finetune`` and evaluates each checkpoint with the real ``lm_eval``
CLI on the zero-shot task of every domain of the level (in-domain on the diagonal,
cross-domain off it). ``--include-base`` also evaluates the base model once, the
zero-shot row of the papers' tables.

Why in the suite's library (the command parses flags into a :class:`TrainPlan` and
calls :func:`run_cross_domain_train`): the loop reads the task catalogue and starts
``python -m finetune`` and the harness as child processes, which neither the command
layer nor ``finetune`` (trained from one task at a time) should hold.

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
        model/                       the finetune output: adapter (LoRA, prefix) or model (full)
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

import glob
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError
from lm_eval_tasks import catalog, include_path
from lm_eval_tasks.benchmarks.suite import DOMAIN_STUDY
from lm_eval_tasks.runtime import HARNESS_CLI, subprocess_env

SCHEMA = "domsum-cross-domain/1"


class CrossDomainTrainError(SuiteError, RuntimeError):
    """A plan the catalogue cannot run, or a child process that failed."""


@dataclass
class TrainPlan:
    """What to train and evaluate (the flags of ``domsum cross-domain-train``)."""

    base: str
    out: str
    benchmark: str = DOMAIN_STUDY.name
    level: str | None = None
    method: str = "lora"
    preset: str | None = None
    model_type: str = "auto"
    data_dir: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    sources: str | None = None
    targets: str | None = None
    include_base: bool = False
    limit: int | None = None
    batch_size: str = "auto"
    no_log_samples: bool = False
    finetune_args: str = ""
    lm_eval_args: str = ""
    model_args_extra: str = ""
    launcher: str = ""
    force: bool = False
    dry_run: bool = False


def levels(benchmark: str) -> dict[str, tuple[str, ...]]:
    """The levels of a benchmark and their domains (DomainSum's three; ``all`` otherwise)."""
    specs = catalog.select(benchmark, shots=0, variant="")
    if not specs:
        raise CrossDomainTrainError(f"cross_domain_train: unknown benchmark {benchmark!r} "
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
    """The comma-separated ``chosen`` domains (all of the level when empty), each checked."""
    if not chosen:
        return list(all_domains)
    out = [d.strip() for d in chosen.split(",") if d.strip()]
    bad = [d for d in out if d not in all_domains]
    if bad:
        raise CrossDomainTrainError(f"cross_domain_train: {what} {bad} not in this level ({', '.join(all_domains)})")
    return out


def model_kind(base: str, model_type: str) -> str:
    """``causal`` or ``seq2seq``: ``model_type`` unless ``auto``, else the base model's config."""
    if model_type != "auto":
        return model_type
    from transformers import AutoConfig

    return "seq2seq" if getattr(AutoConfig.from_pretrained(base), "is_encoder_decoder", False) else "causal"


def model_args(base: str, model_dir: Path | None, method: str, kind: str, extra: str = "") -> str:
    """lm_eval ``--model_args`` of a row: the base, the base + its adapter (LoRA, prefix), or the full model."""
    from finetune.config import PEFT_METHODS

    if model_dir is None:
        margs = f"pretrained={base}"
    elif method in PEFT_METHODS:
        margs = f"pretrained={base},peft={model_dir}"
    else:
        margs = f"pretrained={model_dir}"
    if kind == "seq2seq":
        margs += ",backend=seq2seq"
    return margs + (f",{extra}" if extra else "")


def newest_results(eval_dir: Path) -> str | None:
    """The newest ``results_*.json`` under ``eval_dir``, or None."""
    files = sorted(glob.glob(str(eval_dir / "**" / "results_*.json"), recursive=True), key=os.path.getmtime)
    return files[-1] if files else None


def run_logged(cmd: list[str], log_path: Path, dry_run: bool, env: dict) -> None:
    """Run ``cmd`` with its output in ``log_path`` (only print it when ``dry_run``)."""
    print("+ " + shlex.join(cmd), flush=True)
    if dry_run:
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with open(log_path, "w", encoding="utf-8") as fh:
        proc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise CrossDomainTrainError(f"cross_domain_train: command failed ({proc.returncode}), see {log_path}:\n{tail}")
    print(f"  done in {time.time() - t0:.0f}s ({log_path})", flush=True)


def run_cross_domain_train(plan: TrainPlan) -> dict:
    """Plan (``dry_run``) or run the loop; returns the manifest (also written to
    ``OUT/cross_domain.json`` after every row)."""
    a = plan
    lv = levels(a.benchmark)
    level = a.level or (next(iter(lv)) if len(lv) == 1 else None)  # a benchmark without levels has one
    if level not in lv:
        raise CrossDomainTrainError(f"cross_domain_train: --level must be one of {', '.join(lv)} for {a.benchmark}")
    sources = pick(lv[level], a.sources, "sources")
    targets = pick(lv[level], a.targets, "targets")
    preset = a.preset or a.benchmark
    metadata = dict(a.metadata)
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



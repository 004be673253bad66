"""CCSBench attribute dependency (flip one control, regenerate, compare), as ``domsum change-amplitude`` runs it.

For a seeded sample of ``--n`` rows of a CCSBench subset (default ``compositional``),
this writes one mirror per changed attribute in which only that control is flipped,
runs the real ``lm_eval`` CLI on the original and on each flipped mirror with the
given model, and reports, per (changed attribute, affected metric),

    CA = |m_new - m| / |m|      (NaN when m == 0 or either value is NaN)

as a matrix (JSON + CSV) and, when matplotlib is installed, a heatmap PNG.

Flips: ``length`` bin b -> b + 2 if b <= 2 else b - 2; ``keywords`` -> the keywords of
the next sampled row (cyclic); ``readability`` normal <-> high; ``focus`` high <-> low.
Affected metrics are measured on the generated summaries (from ``--log_samples``) and
always against the *original* row's controls, so that a change shows as a change:
``length`` = mean generated length bin, ``keywords`` = keyword SR of the original
keywords, ``readability`` = mean FKGL, ``focus`` = share judged empirical (only with
``--judge``; needs a configured judge), ``quality`` = ROUGE-L against the reference.

Why in the suite's library (the command parses flags and calls
:func:`run_change_amplitude`): it reads CCSBench records and writes mirrors in the
suite's layout; the harness runs as a child process, never imported.

    domsum change-amplitude --model hf --model-args pretrained=MODEL \\
        --data-dir ~/ccs_mirror --n 50 --out ca_out
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from custom_metrics.cells import write_csv
from custom_metrics.errors import SuiteError
from lm_eval_tasks import catalog, include_path
from lm_eval_tasks.data.loader import seeded_sample
from lm_eval_tasks.results import Sample, read_samples, samples_name, task_from_samples_name
from lm_eval_tasks.runtime import HARNESS_CLI, subprocess_env

ATTRIBUTES = ("length", "keywords", "readability", "focus")


class HarnessRunError(SuiteError, RuntimeError):
    """An ``lm_eval`` run that failed or left no samples file."""


class AttributeNotSet(SuiteError, ValueError):
    """A control to flip that some sampled rows do not have."""


def flip(rec: dict, attr: str, nxt: dict) -> dict:
    """A copy of canonical record ``rec`` with control ``attr`` flipped (see module doc)."""
    r = copy.deepcopy(rec)
    if attr == "length":
        b = r["length_bin"]
        r["length_bin"] = b + 2 if b <= 2 else b - 2
    elif attr == "keywords":
        r["keywords"] = nxt["keywords"]
    elif attr == "readability":
        r["readability"] = {"normal": "high", "high": "normal"}[r["readability"]]
    elif attr == "focus":
        r["focus"] = {"high": "low", "low": "high"}[r["focus"]]
    return r


def to_row(rec: dict) -> dict:
    """Canonical record -> mirror row (the loader's canonical column names)."""
    return {"id": rec["id"], "document": rec["document"], "summary": rec["summary"],
            "length": None if rec["length_bin"] < 0 else rec["length_bin"],
            "keywords": json.loads(rec["keywords"]), "readability": rec["readability"] or None,
            "focus": rec["focus"] or None}


def write_mirror(root: Path, subset: str, test: list[dict], train: list[dict]) -> None:
    """A CCSBench mirror of ``subset``: ``test``, ``train`` and a one-row validation split."""
    d = root / "ccsbench" / subset
    d.mkdir(parents=True, exist_ok=True)
    for split, recs in (("test", test), ("train", train), ("validation", test[:1])):
        with open(d / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            for r in recs:
                fh.write(json.dumps(to_row(r)) + "\n")


def run_harness(model: str, model_args: str, metadata: dict, lm_eval_args: Sequence[str], data_dir: Path,
                out: Path, task: str) -> list[Sample]:
    """One ``lm_eval`` run of ``task`` on the mirror ``data_dir``; its samples."""
    # the flipped mirror; no bars, since the run's output is captured and shown only on failure
    meta = {**metadata, "data_dir": str(data_dir), "progress": False}
    cmd = [*HARNESS_CLI, "--model", model, "--model_args", model_args,
           "--include_path", include_path(), "--tasks", task, "--log_samples",
           "--output_path", str(out), "--metadata", json.dumps(meta), *lm_eval_args]
    proc = subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise HarnessRunError(f"lm_eval failed ({proc.returncode}) for {data_dir}:\n{proc.stderr[-4000:]}")
    files = sorted(p for p in out.rglob(samples_name(task, "*")) if task_from_samples_name(p) == task)
    if not files:
        raise HarnessRunError(f"no samples file under {out}")
    return read_samples(files[-1])


def measure(samples: list[Sample], original: dict[str, dict], judge=None, spec=None) -> dict[str, float]:
    """Affected metrics of one run, against the original controls (see module doc).

    ``spec`` (a CCSBench ``PromptSpec``) supplies the focus judge's instruction, so the
    measurement asks the judge what the tasks ask it.
    """
    from custom_metrics.ccs import fkgl, keyword_success_rate, length_bin
    from custom_metrics.rouge import rouge_scores

    preds = [s.prediction for s in samples]
    orig = [original[s.id] for s in samples]
    out = {"length": sum(length_bin(p) for p in preds) / len(preds),
           "keywords": keyword_success_rate(preds, [json.loads(o["keywords"]) for o in orig]),
           "readability": sum(fkgl(p) for p in preds) / len(preds),
           "quality": rouge_scores(preds, [o["summary"] for o in orig])["rougeL"]}
    if judge is not None:
        from custom_metrics.ccs import focus_messages, judge_focus

        labels, _ = judge_focus(preds, judge, messages=spec.focus_messages if spec else focus_messages)
        got = [x for x in labels if x is not None]
        out["focus"] = sum(x == "high" for x in got) / len(got) if got else float("nan")
    return out


def amplitude(new: float, base: float) -> float:
    """CA = |new - base| / |base|; NaN when base is 0 or a value is NaN."""
    if base == 0 or any(isinstance(v, float) and math.isnan(v) for v in (new, base)):
        return float("nan")
    return abs(new - base) / abs(base)


def heatmap(matrix: dict, path: Path) -> bool:
    """The matrix as a heat map PNG; False (nothing drawn) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = list(matrix)
    cols = list(next(iter(matrix.values())))
    data = [[matrix[r][c] for c in cols] for r in rows]
    fig, ax = plt.subplots(figsize=(1.4 * len(cols) + 2, 0.7 * len(rows) + 1.5))
    im = ax.imshow(data, cmap="viridis")
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), [f"flip {r}" for r in rows])
    for i, row in enumerate(data):
        for j, v in enumerate(row):
            ax.text(j, i, "nan" if math.isnan(v) else f"{v:.2f}", ha="center", va="center", color="w")
    fig.colorbar(im, ax=ax, label="change amplitude")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def run_change_amplitude(out: Path, *, model: str, model_args: str, subset: str, attributes: Sequence[str],
                         n: int, seed: int, shots: int, metadata: dict[str, Any], judge: Any = None,
                         lm_eval_args: Sequence[str] = ()) -> dict:
    """Sample ``n`` test rows (seeded), run the harness on the original mirror and on one
    flipped mirror per attribute under ``out``, write ``change_amplitude.json``/``.csv``
    (and ``.png`` with matplotlib); return the report. ``metadata`` (the task metadata,
    ``data_dir`` included) goes to every run; ``judge``: a judge config to measure focus."""
    from lm_eval_tasks.benchmarks.ccsbench import load_records
    from lm_eval_tasks.benchmarks.ccsbench_prompts import resolve_prompt_spec

    test = load_records(subset, "test", dict(metadata), "change_amplitude")
    train = load_records(subset, "train", dict(metadata), "change_amplitude") if shots else test[:0]
    test = seeded_sample(test, n, seed)
    for a in attributes:
        key = {"length": "length_bin"}.get(a, a)
        if any(r[key] in (-1, "", "[]") for r in test):
            raise AttributeNotSet(f"attribute {a!r} is not set on every sampled row of {subset!r}")
    original = {r["id"]: r for r in test}
    task = catalog.select("ccsbench", shots=shots, variant="", subsets=(subset,))[0].name
    run_meta = {k: v for k, v in metadata.items() if k != "data_dir"}
    spec = resolve_prompt_spec(metadata, "change_amplitude")

    def run(name: str, rows: list[dict]) -> dict[str, float]:
        write_mirror(out / f"mirror_{name}", subset, rows, train)
        samples = run_harness(model, model_args, run_meta, lm_eval_args, out / f"mirror_{name}",
                              out / f"run_{name}", task)
        return measure(samples, original, judge, spec)

    base = run("original", test)
    matrix, raw = {}, {"original": base}
    for a in attributes:
        m = run(a, [flip(r, a, test[(i + 1) % len(test)]) for i, r in enumerate(test)])
        raw[f"flip_{a}"] = m
        matrix[a] = {k: amplitude(m[k], base[k]) for k in base}
    report = {"n": len(test), "seed": seed, "subset": subset, "task": task,
              "prompt_source": spec.source,
              "metrics": raw, "change_amplitude": matrix}
    (out / "change_amplitude.json").write_text(json.dumps(report, indent=2))
    cols = list(base)
    write_csv(out / "change_amplitude.csv", ["changed_attribute", *cols],
              ([a, *[row[c] for c in cols]] for a, row in matrix.items()))
    report["png"] = heatmap(matrix, out / "change_amplitude.png") if matrix else False
    return report

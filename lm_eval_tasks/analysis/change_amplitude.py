"""CCSBench attribute dependency (flip one control, regenerate, compare), as ``domsum change-amplitude`` runs it.

For a seeded sample of ``--n`` rows (default :data:`PAPER_N`, the paper's 300; all of them
when the split holds fewer) of a CCSBench subset (default ``compositional``),
this writes one mirror per changed attribute in which only that control is flipped,
runs the real ``lm_eval`` CLI on the original and on each flipped mirror with the
given model, and reports the paper's Figure 4: per (changed attribute, affected
controllability metric)

    CA = |m_new - m| / |m|

computed from each run's logged per-document scores (:mod:`lm_eval_tasks.analysis.amplitude`,
which defines the columns and writes an undefined value as null, counted), as JSON + CSV
and, when matplotlib is installed, a heatmap PNG.

Flips: ``length`` bin b -> b + 2 if b <= 2 else b - 2; ``keywords`` -> the keywords of
the next sampled row (cyclic); ``readability`` normal <-> high; ``focus`` high <-> low.
Each run's metrics are the benchmark's, against the controls that run requested:
length PCC and MAD, keyword SR, ΔFKGL and, only with ``--judge`` (a configured judge
scores the runs' focus), focus macro F1.

Each flipped run records the control it flipped in its task metadata
(:data:`FLIP_KEY`, a settings row): its scores answer requests the benchmark never
made, so ``domsum report`` takes it as that variant of the model, never as the model's
CCSBench run (:func:`flipped_control`, which also knows a study written before the
runs recorded it by the folders this module writes). The original run is a plain run
of the model on the sampled documents.

Why in the suite's library (the command parses flags and calls
:func:`run_change_amplitude`): it reads CCSBench records and writes mirrors in the
suite's layout; the harness runs as a child process, never imported.

    domsum change-amplitude --model hf --model-args pretrained=MODEL \\
        --data-dir ~/ccs_mirror --out ca_out
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from custom_metrics.cells import write_csv
from custom_metrics.errors import SuiteError
from lm_eval_tasks import catalog, include_path
from lm_eval_tasks.analysis.amplitude import ATTRIBUTES, FLIP_KEY, control_ability, figure4
from lm_eval_tasks.benchmarks.suite import CONTROL_STUDY
from lm_eval_tasks.data.loader import seeded_sample
from lm_eval_tasks.results import Sample, read_samples, samples_name, task_from_samples_name
from lm_eval_tasks.runtime import HARNESS_CLI, subprocess_env


#: the study's report, written beside its runs
STUDY_FILE = "change_amplitude.json"
#: rows sampled per attribute by default: CCSBench, Section 5 ("we randomly select 300
#: samples from the test set ... for each attribute"); ``--n`` takes fewer for a quick run
PAPER_N = 300
#: name of the original run in the study's layout (its flipped runs are named by their control)
ORIGINAL = "original"


def run_folder(out: Path, name: str) -> Path:
    """Where the study in ``out`` writes run ``name`` (:data:`ORIGINAL` or a control)."""
    return out / f"run_{name}"


def flipped_control(meta: Mapping[str, Any], results_file: Path | None = None) -> str | None:
    """The control a change-amplitude run flipped on every document; None for any other run.

    As the run recorded it (:data:`FLIP_KEY` in its task metadata); else, for a study
    written before runs recorded it, from the study's layout: a results file under
    ``<study>/run_<control>/`` with ``<study>/change_amplitude.json`` beside that folder.
    """
    value = meta.get(FLIP_KEY)
    if value not in (None, ""):
        return str(value)
    if results_file is None:
        return None
    for folder in list(Path(results_file).parents)[:3]:  # lm_eval writes <output_path>/<model>/results_*.json
        control = folder.name.removeprefix("run_")
        if folder.name.startswith("run_") and control in ATTRIBUTES and (folder.parent / STUDY_FILE).is_file():
            return control
    return None


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
    d = root / CONTROL_STUDY.name / subset
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


def measure(samples: list[Sample], focus: bool) -> dict[str, float | None]:
    """The run's controllability metrics from its logged per-document scores; focus only
    when ``focus`` (a judge scored it)."""
    got = control_ability([s.logged for s in samples])
    return got if focus else {k: v for k, v in got.items() if k != "focus_macro_f1"}


def heatmap(fig4: dict, path: Path) -> bool:
    """Figure 4 as a heat map PNG (an undefined cell blank, marked ``null``); False
    (nothing drawn) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    cols = [f"{c['attribute']}\n({c['key']})" for c in fig4["columns"]]
    data = [[math.nan if v is None else v for v in line] for line in fig4["cells"]]
    fig, ax = plt.subplots(figsize=(1.6 * len(cols) + 2, 0.7 * len(data) + 1.5))
    im = ax.imshow(data, cmap="viridis")
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(data)), [f"changed: {r}" for r in fig4["rows"]])
    ax.set_xlabel("affected attribute (controllability metric)")
    for i, line in enumerate(fig4["cells"]):
        for j, v in enumerate(line):
            ax.text(j, i, "null" if v is None else f"{v:.2f}", ha="center", va="center", color="w")
    fig.colorbar(im, ax=ax, label="change amplitude |m_new - m| / |m|")
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
    ``data_dir`` included) goes to every run, each flipped run's with :data:`FLIP_KEY`;
    ``judge``: a judge config (focus is measured only with one)."""
    from lm_eval_tasks.benchmarks.ccsbench.build import load_records
    from lm_eval_tasks.benchmarks.ccsbench.build import resolve_prompt_spec

    test = load_records(subset, "test", dict(metadata), "change_amplitude")
    train = load_records(subset, "train", dict(metadata), "change_amplitude") if shots else test[:0]
    test = seeded_sample(test, n, seed)
    for a in attributes:
        key = {"length": "length_bin"}.get(a, a)
        if any(r[key] in (-1, "", "[]") for r in test):
            raise AttributeNotSet(f"attribute {a!r} is not set on every sampled row of {subset!r}")
    task = catalog.select(CONTROL_STUDY.name, shots=shots, variant="", subsets=(subset,))[0].name
    run_meta = {k: v for k, v in metadata.items() if k not in ("data_dir", FLIP_KEY)}
    spec = resolve_prompt_spec(metadata, "change_amplitude")

    def run(name: str, rows: list[dict]) -> dict[str, float | None]:
        write_mirror(out / f"mirror_{name}", subset, rows, train)
        meta = run_meta if name == ORIGINAL else {**run_meta, FLIP_KEY: name}
        samples = run_harness(model, model_args, meta, lm_eval_args, out / f"mirror_{name}",
                              run_folder(out, name), task)
        return measure(samples, focus=judge is not None)

    base = run(ORIGINAL, test)
    changed = {a: run(a, [flip(r, a, test[(i + 1) % len(test)]) for i, r in enumerate(test)])
               for a in attributes}
    fig4 = figure4(base, changed)
    report = {"n": len(test), "n_requested": n, "seed": seed, "subset": subset, "task": task, "prompt_source": spec.source,
              "control_ability": {"original": base, **{f"changed_{a}": m for a, m in changed.items()}},
              "figure4": {k: fig4[k] for k in ("rows", "columns", "cells")},
              "change_amplitude": fig4["matrix"], "undefined": fig4["undefined"],
              "undefined_cells": fig4["undefined_cells"]}
    (out / STUDY_FILE).write_text(json.dumps(report, indent=2, allow_nan=False))
    keys = [c["key"] for c in fig4["columns"]]
    write_csv(out / "change_amplitude.csv", ["changed_attribute", *keys],
              ([a, *["null" if row[k] is None else row[k] for k in keys]] for a, row in fig4["matrix"].items()))
    report["png"] = heatmap(fig4, out / "change_amplitude.png") if fig4["rows"] and keys else False
    return report

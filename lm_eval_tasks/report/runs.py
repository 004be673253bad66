"""Harness output folders as runs: who produced the summaries, on which task, with which
per-document scores.

Built on :mod:`lm_eval_tasks.results` (the files themselves), since a report needs
more than the tidy frame of reported numbers: it must pair documents across systems
and resample them, so it needs each run's logged per-document scores (``--log_samples``
lines carry one value, or one corpus item, per metric key) and a readable name for the
system — the folder name ``__models__llama`` hides legend entries in matplotlib and says
nothing about a LoRA adapter.

The system behind each run (a model plus every setting that changes what a run's tables
show) and its label come from :mod:`lm_eval_tasks.report.systems`; only runs of the
same system on the same task are de-duplicated (the latest is kept).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_tasks import catalog
from lm_eval_tasks.results import ResultsError, parse_folder_spec, read_results_files, read_samples, samples_file
from lm_eval_tasks.report.systems import System, label_systems, same_model_notes, system_of


@dataclass
class Run:
    """One task evaluated by one system (the latest results file holding it)."""

    system: System
    task: str
    spec: catalog.TaskSpec | None
    shots: int
    values: dict[str, float]
    stderr: dict[str, float | None]
    results_file: Path
    timestamp: str
    record: dict[str, Any] = field(default_factory=dict)
    samples: list[Any] = field(default_factory=list)

    @property
    def benchmark(self) -> str:
        return self.spec.benchmark if self.spec else ""

    @property
    def subset(self) -> str:
        return self.spec.subset if self.spec else self.task

    @property
    def setting(self) -> str:
        return setting_label(self.shots)

    @property
    def series(self) -> str:
        """System and setting, as a legend or row label names them."""
        return f"{self.system.label} ({self.setting})"

    @property
    def n(self) -> int:
        """Documents the run logged (0: no samples file)."""
        return len(self.samples)

    def doc_keys(self) -> list[str]:
        return [doc_key(s) for s in self.samples]

    def per_doc(self, key: str) -> dict[str, Any]:
        """Document -> the logged score of ``key`` (documents without one left out)."""
        return {doc_key(s): s.logged[key] for s in self.samples if key in s.logged}


def setting_label(shots: int) -> str:
    """``0-shot``, ``2-shot``, ``3-shot``: the demonstrations in the prompt."""
    return f"{shots}-shot"


def doc_key(sample: Any) -> str:
    """A document's identity across runs: the record id, else the harness's ``doc_id``."""
    return str(sample.id) if sample.id not in (None, "") else f"#{sample.doc_id}"


def shared_documents(a: Run, b: Run) -> list[str]:
    """The documents both runs logged, in ``a``'s order."""
    other = set(b.doc_keys())
    return [d for d in a.doc_keys() if d in other]


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out


@dataclass
class Runs:
    runs: list[Run]
    problems: list[str]

    def systems(self) -> list[System]:
        return list({r.system.identity: r.system for r in self.runs}.values())

    def benchmarks(self) -> list[str]:
        present = {r.benchmark for r in self.runs if r.benchmark}
        return [b for b in catalog.ALL_BENCHMARKS if b in present]

    def of(self, benchmark: str) -> list[Run]:
        return [r for r in self.runs if r.benchmark == benchmark]

    def find(self, system: System, benchmark: str, subset: str, shots: int, variant: str = "") -> Run | None:
        for r in self.runs:
            if (r.system.identity == system.identity and r.spec and r.spec.benchmark == benchmark
                    and r.spec.subset == subset and r.shots == shots and r.spec.variant == variant):
                return r
        return None


def load_runs(folders: Sequence[str | Path], with_samples: bool = True) -> Runs:
    """Every suite task of every results file under ``folders`` (latest per system and task).

    Tasks outside the catalogue and group rows are left out (listed in ``problems``
    where they are not groups): a report pairs documents, and a group has none.
    """
    problems: list[str] = []
    latest: dict[tuple, tuple[str, Path, dict, dict, System]] = {}
    repeated: dict[tuple, list[Path]] = {}
    groups = catalog.all_groups()
    for path, ts, label, data in read_results_files([parse_folder_spec(str(f)) for f in folders], problems):
        config = data.get("config") or {}
        for task, metrics in data["results"].items():
            if task in groups or not isinstance(metrics, dict):
                continue
            if task not in catalog.all_tasks():
                problems.append(f"{path}: task {task} is not a suite task; left out")
                continue
            system = system_of(config, marked_fine_tuned=label == "fine-tuned", results=data, task=task)
            key = (system.identity, task)
            if key in latest and latest[key][0] != ts:
                repeated.setdefault(key, [latest[key][1]]).append(path)
            if key not in latest or ts >= latest[key][0]:
                meta = ((data.get("configs") or {}).get(task) or {}).get("metadata") or {}
                latest[key] = (ts, path, metrics, meta, system)
    labels = label_systems(v[4] for v in latest.values())
    for key, paths in repeated.items():
        problems.append(f"{labels[key[0]]}: {key[1]} appears in {len(paths)} results files of the same "
                        f"system and settings; the latest ({latest[key][1]}) is used")
    problems += same_model_notes([v[4] for v in latest.values()], labels)
    runs = []
    for (identity, task), (ts, path, metrics, meta, system) in sorted(latest.items(), key=lambda kv: str(kv[0])):
        system = dataclasses.replace(system, label=labels[identity])
        spec = catalog.lookup(task)
        values: dict[str, float] = {}
        stderr: dict[str, float | None] = {}
        for name, value in metrics.items():
            if "," not in name:
                continue
            metric, _, _filter = name.partition(",")
            if metric.endswith("_stderr"):
                stderr[metric.removesuffix("_stderr")] = _num(value)
                continue
            num = _num(value)
            values.setdefault(metric, num if num is not None else math.nan)
        run = Run(system=system, task=task, spec=spec, shots=spec.shots, values=values,
                  stderr=stderr, results_file=path, timestamp=ts, record=meta)
        if with_samples:
            sample_path = samples_file(path, ts, task)
            if sample_path is None:
                problems.append(f"{system.label}: {task} has no samples file (run lm_eval with "
                                "--log_samples for intervals and significance tests)")
            else:
                try:
                    run.samples = read_samples(sample_path)
                except (ResultsError, OSError) as exc:
                    problems.append(f"{sample_path}: unreadable ({exc})")
        runs.append(run)
    return Runs(runs=runs, problems=problems)


__all__ = ["Run", "Runs", "doc_key", "load_runs", "setting_label", "shared_documents"]

"""Harness output folders as runs: who produced the summaries, on which task, with which
per-document scores.

Why a reader of its own beside :mod:`lm_eval_tasks.commands.results` (a tidy frame of
the reported numbers): a report must pair documents across systems and resample them,
so it needs each run's logged per-document scores (``--log_samples`` lines carry one
value, or one corpus item, per metric key) and a readable name for the system — the
folder name ``__models__llama`` hides legend entries in matplotlib and says nothing
about a LoRA adapter.

A *system* is the model of ``config.model_args``: ``pretrained`` plus, for a LoRA run,
``peft``. Its fine-tuning task comes from the ``run_card.json`` that ``domsum finetune``
writes into its output (the adapter folder, or the model folder of a full fine-tune), so
the report can pair an adapter with its base model and place it in a cross-domain
matrix. A folder given as ``DIR=fine-tuned`` marks systems without a run card as
fine-tuned.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_tasks import catalog
from lm_eval_tasks.commands.results import parse_folder_spec, read_results_files, samples_file

CARD_NAME = "run_card.json"


@dataclass(frozen=True)
class System:
    """The model that produced a run's summaries."""

    base: str
    adapter: str | None = None
    #: catalogue task the system was fine-tuned on (run card), if known
    trained_on: str | None = None
    #: fine-tuned without a known task (a folder labelled ``=fine-tuned``)
    marked_fine_tuned: bool = False
    label: str = ""
    #: the model a full fine-tune started from (its run card), to pair it with that model
    started_from: str | None = None

    @property
    def base_identity(self) -> tuple[str, str | None] | None:
        """The system this one was fine-tuned from, for deltas (None: not fine-tuned)."""
        if self.adapter:
            return (self.base, None)
        if self.started_from:
            return (self.started_from, None)
        return None

    @property
    def fine_tuned(self) -> bool:
        return bool(self.adapter or self.trained_on or self.marked_fine_tuned)

    @property
    def identity(self) -> tuple[str, str | None]:
        return (self.base, self.adapter)


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


def model_args(config: dict) -> dict[str, str]:
    """``model_args`` of a results file's config as a dict (the CLI string or a dict)."""
    margs = config.get("model_args") or {}
    if isinstance(margs, dict):
        return {str(k): str(v) for k, v in margs.items()}
    out = {}
    for part in str(margs).split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def short_name(name: str) -> str:
    """A local path's last component; a hub id (``org/model``) as it is."""
    if not name:
        return "model"
    looks_local = name.startswith(("/", ".", "~")) or os.sep in name and Path(name).exists()
    return Path(name.rstrip("/")).name if looks_local else name


def read_card(folder: str | None) -> dict[str, Any] | None:
    if not folder:
        return None
    path = Path(folder).expanduser() / CARD_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def system_of(config: dict, marked_fine_tuned: bool = False) -> System:
    """The :class:`System` of a results file's ``config`` (label filled in later)."""
    margs = model_args(config)
    base = margs.get("pretrained") or str(config.get("model") or "model")
    adapter = margs.get("peft") or None
    card = read_card(adapter) or read_card(base)
    trained_on = str(card["task"]) if card and card.get("task") else None
    if card and not adapter:  # a full fine-tune: the card names the model it started from
        base_of = ((card.get("base_model") or {}).get("name_or_path")
                   or (card.get("hyperparameters") or {}).get("base"))
        if base_of:
            return System(base=base, trained_on=trained_on, marked_fine_tuned=True,
                          label=f"{short_name(str(base_of))} → {short_name(base)}",
                          started_from=str(base_of))
    return System(base=base, adapter=adapter, trained_on=trained_on, marked_fine_tuned=marked_fine_tuned)


def _label(system: System, depth: int) -> str:
    def tail(path: str) -> str:
        parts = Path(path.rstrip("/")).parts
        return "/".join(parts[-depth:]) if short_name(path) != path else path

    text = tail(system.base)
    if system.adapter:
        text += f" + {tail(system.adapter)}"
    return text


def label_systems(systems: Iterable[System]) -> dict[tuple[str, str | None], str]:
    """Readable, distinct labels: last path components, more of them where two collide."""
    systems = list({s.identity: s for s in systems}.values())
    labels: dict[tuple[str, str | None], str] = {}
    for depth in range(1, 8):
        labels = {s.identity: s.label or _label(s, depth) for s in systems}
        if len(set(labels.values())) == len(labels):
            break
    return {k: v.lstrip("_") or "model" for k, v in labels.items()}


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
        return [b for b in catalog.BENCHMARKS if b in present]

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
    from lm_eval_tasks.commands.rescore import ScoreError, read_samples

    problems: list[str] = []
    latest: dict[tuple, tuple[str, Path, dict, dict, System]] = {}
    groups = catalog.all_groups()
    for path, ts, label, data in read_results_files([parse_folder_spec(str(f)) for f in folders], problems):
        system = system_of(data.get("config") or {}, marked_fine_tuned=label == "fine-tuned")
        for task, metrics in data["results"].items():
            if task in groups or not isinstance(metrics, dict):
                continue
            if task not in catalog.all_tasks():
                problems.append(f"{path}: task {task} is not a suite task; left out")
                continue
            key = (system.identity, task)
            if key in latest and latest[key][0] != ts:
                problems.append(f"{system.base}: {task} appears in more than one results file; "
                                "the latest is used")
            if key not in latest or ts >= latest[key][0]:
                meta = ((data.get("configs") or {}).get(task) or {}).get("metadata") or {}
                latest[key] = (ts, path, metrics, meta, system)
    labels = label_systems(v[4] for v in latest.values())
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
                except (ScoreError, OSError) as exc:
                    problems.append(f"{sample_path}: unreadable ({exc})")
        runs.append(run)
    return Runs(runs=runs, problems=problems)


__all__ = ["CARD_NAME", "Run", "Runs", "System", "doc_key", "label_systems", "load_runs",
           "model_args", "setting_label", "short_name", "system_of"]

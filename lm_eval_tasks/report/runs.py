"""Harness output folders as runs: who produced the summaries, on which task, with which
per-document scores.

Built on :mod:`lm_eval_tasks.results` (the files themselves), since a report needs
more than the tidy frame of reported numbers: it must pair documents across systems
and resample them, so it needs each run's logged per-document scores (``--log_samples``
lines carry one value, or one corpus item, per metric key) and a readable name for the
system — the folder name ``__models__llama`` hides legend entries in matplotlib and says
nothing about a LoRA adapter.

The system behind each run (a model plus every setting that changes what a run's tables
show, and the name the user gave it) and its label come from
:mod:`lm_eval_tasks.report.systems`. Which results file stands for a system's task is
decided here, never by which file is newest alone: a study's variant is left out, and
among files of one system and task the one that evaluated the most documents is used
(the later of repeats); every file left out is named with its reason (:class:`LeftOut`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_tasks import catalog
from lm_eval_tasks.analysis.change_amplitude import STUDY_FILE
from lm_eval_tasks.results import (
    ResultsError,
    documents_of,
    parse_folder_spec,
    read_results_files,
    read_samples,
    samples_file,
)
from lm_eval_tasks.report.systems import System, label_systems, same_model_notes, system_of


@dataclass
class Run:
    """One task evaluated by one system (the results file the report uses for it, :func:`load_runs`)."""

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
class LeftOut:
    """A task of a results file that the report does not use, and why (shown on the page
    and written as ``tables/runs_left_out.csv``)."""

    results_file: Path
    task: str
    system: str
    reason: str


@dataclass
class Runs:
    runs: list[Run]
    problems: list[str]
    left_out: list[LeftOut] = field(default_factory=list)

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


@dataclass
class _Found:
    """One task of one results file, before the report decides whether it uses it."""

    timestamp: str
    path: Path
    task: str
    metrics: dict
    meta: dict
    system: System
    #: documents the run evaluated, as its results record them (``n-samples``); None: not recorded
    documents: int | None

    @property
    def source(self) -> str:
        return str(self.meta.get("data_source") or self.meta.get("data_dir") or "")


def parse_labels(specs: Sequence[str]) -> dict[str, str]:
    """``domsum report --label RUN_FOLDER=NAME`` options as folder -> name.

    RUN_FOLDER is the text before the first ``=`` whose left part is an existing path (else
    before the first ``=``), so a name may hold ``=`` and so may a folder's path. A name is
    checked as the ``run_label`` setting checks it (one line, at most 80 characters), and a
    folder is named once; one that names no run is refused when the runs are read
    (:func:`load_runs`).
    """
    from lm_eval_tasks.settings import SETTINGS

    row = SETTINGS["run_label"]
    out: dict[str, str] = {}
    for spec in specs:
        cuts = [i for i, c in enumerate(spec) if c == "="]
        cut = next((i for i in cuts if Path(spec[:i]).expanduser().exists()), cuts[0] if cuts else -1)
        if cut <= 0:
            raise ResultsError(f"--label {spec!r}: give RUN_FOLDER=NAME")
        folder, name = spec[:cut], spec[cut + 1:]
        try:
            name = row.kind(name)
        except ValueError:
            raise ResultsError(f"--label {spec!r}: NAME must be {row.type_name}") from None
        key = str(Path(folder).expanduser().resolve())
        if out.get(key, name) != name:
            raise ResultsError(f"--label {spec!r}: {folder} is already named {out[key]!r}")
        out[key] = name
    return out


class _Names:
    """The names ``domsum report --label FOLDER=NAME`` gives the runs under each folder (the
    deepest folder naming a results file wins); a folder naming no results file is an error."""

    def __init__(self, labels: Mapping[str | Path, str] | None) -> None:
        self.folders = {Path(f).expanduser().resolve(): name for f, name in (labels or {}).items()}
        self.used: set[Path] = set()

    def of(self, path: Path) -> str | None:
        resolved = path.resolve()
        for folder in sorted(self.folders, key=lambda f: len(f.parts), reverse=True):
            if resolved.is_relative_to(folder):
                self.used.add(folder)
                return self.folders[folder]
        return None

    def check(self) -> None:
        unused = [f"{f}={n}" for f, n in self.folders.items() if f not in self.used]
        if unused:
            raise ResultsError(f"--label {unused[0]}: names no run (no results file of a suite task under that "
                               "folder, or a deeper --label names each); give a folder that holds, or is inside, "
                               "one of the folders reported")


def _adopt_names(found: dict[tuple, list[_Found]]) -> dict[tuple, list[_Found]]:
    """Runs without a name join the one named system of their setup, so a name given to the
    0-shot run also names its 2-shot run; where a setup has several names, an unnamed run
    stays a system of its own."""
    names: dict[tuple, set[str]] = {}
    for items in found.values():
        for f in items:
            if f.system.name:
                names.setdefault(f.system.setup, set()).add(f.system.name)
    out: dict[tuple, list[_Found]] = {}
    for (_, task), items in found.items():
        for f in items:
            given = names.get(f.system.setup, set())
            if not f.system.name and len(given) == 1:
                f.system = dataclasses.replace(f.system, name=next(iter(given)))
            out.setdefault((f.system.identity, task), []).append(f)
    return out


def _choose(items: list[_Found]) -> tuple[_Found, dict[Path, str]]:
    """The run the report uses among results files of one system on one task, and why each
    other one is left out.

    Rule: the run that evaluated the most documents (of a ``--limit`` trial and the full
    run, the full run, whichever came last); among runs of as many documents, which are
    repeats of one run, the later one. Where two read their documents from different
    places (different document sets, perhaps under the same ids), the reason says so and
    how to report both.
    """
    used = max(items, key=lambda f: (-1 if f.documents is None else f.documents, f.timestamp))
    why: dict[Path, str] = {}
    for f in items:
        if f is used:
            continue
        if f.documents != used.documents and used.documents is not None:
            text = (f"it evaluated the most documents ({used.documents}; this run "
                    f"{'did not record how many' if f.documents is None else f.documents})")
        else:
            count = "number not recorded" if used.documents is None else str(used.documents)
            text = f"a repeat on as many documents ({count}), of which the later run is used"
        text = f"same system, settings and task as {used.path}, which is used: {text}"
        if f.source != used.source:
            text += (f"; the two read their documents from different places ({f.source or 'not recorded'}; "
                     f"{used.source or 'not recorded'}): give each run a name (--metadata run_label, or "
                     "domsum report --label FOLDER=NAME) to report both")
        why[f.path] = text
    return used, why


def _as_run(f: _Found, system: System, with_samples: bool, problems: list[str]) -> Run:
    """The :class:`Run` of a results file's task: its reported values and, ``with_samples``,
    its logged documents (a missing or unreadable samples file is a problem, not an error)."""
    spec = catalog.lookup(f.task)
    values: dict[str, float] = {}
    stderr: dict[str, float | None] = {}
    for name, value in f.metrics.items():
        if "," not in name:
            continue
        metric, _, _filter = name.partition(",")
        if metric.endswith("_stderr"):
            stderr[metric.removesuffix("_stderr")] = _num(value)
            continue
        num = _num(value)
        values.setdefault(metric, num if num is not None else math.nan)
    run = Run(system=system, task=f.task, spec=spec, shots=spec.shots, values=values,
              stderr=stderr, results_file=f.path, timestamp=f.timestamp, record=f.meta)
    if with_samples:
        sample_path = samples_file(f.path, f.timestamp, f.task)
        if sample_path is None:
            problems.append(f"{system.label}: {f.task} has no samples file (run lm_eval with "
                            "--log_samples for intervals and significance tests)")
        else:
            try:
                run.samples = read_samples(sample_path)
            except (ResultsError, OSError) as exc:
                problems.append(f"{sample_path}: unreadable ({exc})")
    return run


def load_runs(folders: Sequence[str | Path], with_samples: bool = True,
              labels: Mapping[str | Path, str] | None = None) -> Runs:
    """Every suite task of every results file under ``folders``, one run per system and task.

    A system is what :func:`~lm_eval_tasks.report.systems.system_of` reads (``labels``:
    folder -> the name its runs are given, ``domsum report --label``); runs that differ
    in it are different systems, wherever their files lie. A study's variant (a
    change-amplitude run with a control flipped) is left out, and where several results
    files hold one system's task, :func:`_choose` picks the one used; each run left out is
    in ``left_out`` with the reason. Tasks outside the catalogue and group rows are left
    out too (listed in ``problems`` where they are not groups): a report pairs documents,
    and a group has none.
    """
    problems: list[str] = []
    names = _Names(labels)
    found: dict[tuple, list[_Found]] = {}
    groups = catalog.all_groups()
    for path, ts, mark, data in read_results_files([parse_folder_spec(str(f)) for f in folders], problems):
        config = data.get("config") or {}
        name = names.of(path)
        for task, metrics in data["results"].items():
            if task in groups or not isinstance(metrics, dict):
                continue
            if task not in catalog.all_tasks():
                problems.append(f"{path}: task {task} is not a suite task; left out")
                continue
            system = system_of(config, marked_fine_tuned=mark == "fine-tuned", results=data, task=task,
                               results_file=path, name=name)
            meta = ((data.get("configs") or {}).get(task) or {}).get("metadata") or {}
            found.setdefault((system.identity, task), []).append(
                _Found(ts, path, task, metrics, meta, system, documents_of(data, task)))
    names.check()
    found = _adopt_names(found)
    chosen: dict[tuple, _Found] = {}
    dropped: list[tuple[_Found, str]] = []
    for key, items in found.items():
        if items[0].system.variant:  # one identity: one variant
            dropped += [(f, f"{f.system.variant} on every document: a run of a change-amplitude study, not "
                            f"the model's run of {key[1]} (the study's numbers are in its {STUDY_FILE})")
                        for f in items]
            continue
        chosen[key], why = _choose(items)
        dropped += [(f, why[f.path]) for f in items if f.path in why]
    labels_of = label_systems(f.system for f in chosen.values())
    every = label_systems([*(f.system for f in chosen.values()), *(f.system for f, _ in dropped)])
    left_out = [LeftOut(f.path, f.task, labels_of.get(f.system.identity) or every[f.system.identity], reason)
                for f, reason in dropped]
    problems += same_model_notes([f.system for f in chosen.values()], labels_of)
    runs = [_as_run(f, dataclasses.replace(f.system, label=labels_of[identity]), with_samples, problems)
            for (identity, _), f in sorted(chosen.items(), key=lambda kv: str(kv[0]))]
    left_out.sort(key=lambda x: (str(x.results_file), x.task))
    return Runs(runs=runs, problems=problems, left_out=left_out)


__all__ = ["LeftOut", "Run", "Runs", "doc_key", "load_runs", "parse_labels", "setting_label", "shared_documents"]

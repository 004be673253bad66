"""Reader of lm-evaluation-harness (0.4.13) output folders, shared by the report commands.

``lm_eval --output_path DIR --log_samples`` writes
``DIR/<model_name_sanitized>/results_<timestamp>.json`` and, next to it,
``samples_<task>_<timestamp>.jsonl``. :func:`load_results` walks one or more such
folders (recursively), keeps the latest value per (model, setting, task) and returns a
tidy :class:`pandas.DataFrame` with one row per metric value:

``model, task, benchmark, level, domain, setting, shots, metric, filter, value, source``

* ``benchmark``, ``domain``, ``level``, ``shots``: from the task catalogue
  (:func:`lm_eval_tasks.catalog.lookup`), never parsed from the name. ``level`` is the
  DomainSum level, or the benchmark for the other benchmarks. A group's row gets its
  members' benchmark, and their shots and level where all members agree; a name
  outside the suite keeps ``benchmark``/``level`` empty and ``domain`` = the name.
* ``setting``: ``fine-tuned`` when the run's ``model_args`` contain ``peft=`` or the
  folder was labelled fine-tuned (``fine_tuned=[...]`` / ``DIR=fine-tuned`` on the
  command line), else ``zero-shot`` or ``<k>shot`` from the task's demonstrations.
* ``value``: floats; "N/A" standard errors are dropped; non-numeric or NaN values
  become NaN and are listed in :attr:`Results.problems` (never an exception).

Samples: :func:`samples_file` finds the ``--log_samples`` file written with a results
file (the report reads it with :mod:`lm_eval_tasks.report.runs`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from custom_metrics import registry
from lm_eval_tasks import catalog

LEVELS = catalog.DOMAINSUM_LEVELS
ADAPTEVAL_DOMAINS = catalog.ADAPTEVAL_DOMAINS
SETTINGS = ("zero-shot", "2shot", "3shot", "fine-tuned")
COLUMNS = ["model", "task", "benchmark", "level", "domain", "setting", "shots", "metric",
           "filter", "value", "source"]

_RESULTS = re.compile(r"^results_(?P<ts>.+)\.json$")
_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.\-:]+)\.jsonl$")


def task_facts(task: str) -> tuple[str | None, str, str | None, int]:
    """(benchmark, domain, level, shots) of a results entry, from the catalogue.

    ``domainsum_cnndm_2shot`` -> ``("domainsum", "cnndm", "genre", 2)``;
    ``adapteval_pubmed_judged`` -> ``("adapteval", "pubmed", "adapteval", 0)``.
    """
    tasks, groups = catalog.all_tasks(), catalog.all_groups()
    if task in tasks:
        spec = tasks[task]
        return spec.benchmark, spec.subset, spec.level or spec.benchmark, spec.shots
    if task in groups:
        members = [tasks[t] for t in catalog.expand([task])]
        benches = {m.benchmark for m in members}
        shots = {m.shots for m in members}
        levels = {m.level or m.benchmark for m in members}
        return (benches.pop() if len(benches) == 1 else None, task,
                levels.pop() if len(levels) == 1 else None, shots.pop() if len(shots) == 1 else 0)
    return None, task, None, 0


def setting_of(shots: int) -> str:
    """The setting label of an evaluation with ``shots`` demonstrations."""
    return f"{shots}shot" if shots else "zero-shot"


def scale(metric: str) -> float:
    """Factor that puts ``metric`` on the papers' 0-100 scale."""
    return registry.display_scale(metric)


def _model_args_text(config: dict) -> str:
    margs = config.get("model_args", "")
    if isinstance(margs, dict):
        return ",".join(f"{k}={v}" for k, v in margs.items())
    return str(margs or "")


def _num(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def parse_folder_spec(spec: str) -> tuple[Path, str | None]:
    """``DIR`` or ``DIR=fine-tuned`` (a user label for every run below DIR)."""
    if "=" in spec:
        path, label = spec.rsplit("=", 1)
        if label not in SETTINGS:
            raise SystemExit(f"unknown setting label {label!r} in {spec!r}; use one of "
                             f"{', '.join(SETTINGS)}")
        return Path(path), label
    return Path(spec), None


@dataclass
class Results:
    frame: pd.DataFrame
    problems: list[str] = field(default_factory=list)

    def metric(self, name: str) -> pd.DataFrame:
        return self.frame[self.frame["metric"] == name]


def samples_file(results_path: Path, ts: str, task: str) -> Path | None:
    """The ``samples_<task>_<ts>.jsonl`` written with a results file, else the latest one
    for ``task`` in the same folder (a run resumed into the folder)."""
    exact = results_path.parent / f"samples_{task}_{ts}.jsonl"
    if exact.is_file():
        return exact
    found = sorted(p for p in results_path.parent.glob(f"samples_{task}_*.jsonl")
                   if (m := _SAMPLES.match(p.name)) and m.group("task") == task)
    return found[-1] if found else None


def find_results_files(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("results_*.json") if _RESULTS.match(p.name))


def read_results_files(folders: Iterable[tuple[Path, str | None]], problems: list[str]):
    """``(path, timestamp, label, parsed JSON)`` of every readable results file under the
    labelled folders; what cannot be read is appended to ``problems`` (never raised)."""
    for folder, label in folders:
        if not folder.is_dir():
            problems.append(f"{folder}: not a folder")
            continue
        files = find_results_files(folder)
        if not files:
            problems.append(f"{folder}: no results_*.json files")
        for path in files:
            ts = _RESULTS.match(path.name).group("ts")
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                problems.append(f"{path}: unreadable ({exc})")
                continue
            if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
                problems.append(f"{path}: no 'results' object")
                continue
            yield path, ts, label, data


def load_results(folders: Iterable[str | Path | tuple[Path, str | None]],
                 fine_tuned: Sequence[str | Path] = ()) -> Results:
    """Tidy frame of every metric value under ``folders`` (latest per model+setting+task).

    ``folders`` items are paths, ``"DIR=label"`` strings or (path, label) tuples;
    folders in ``fine_tuned`` are labelled ``fine-tuned``.
    """
    ft = {Path(p).resolve() for p in fine_tuned}
    problems: list[str] = []
    latest: dict[tuple[str, str, str], tuple[str, Path, dict]] = {}
    labelled = []
    for item in folders:
        folder, label = (Path(item[0]), item[1]) if isinstance(item, tuple) else parse_folder_spec(str(item))
        labelled.append((folder, label or ("fine-tuned" if folder.resolve() in ft else None)))
    for path, ts, label, data in read_results_files(labelled, problems):
        config = data.get("config") or {}
        model = path.parent.resolve().name or "model"
        peft = "peft=" in _model_args_text(config)
        for task, metrics in data["results"].items():
            if not isinstance(metrics, dict):
                continue
            _, _, _, shots = task_facts(task)
            setting = label or ("fine-tuned" if peft else setting_of(shots))
            key = (model, setting, task)
            if key not in latest or ts >= latest[key][0]:
                latest[key] = (ts, path, metrics)
    rows = []
    for (model, setting, task), (ts, path, metrics) in sorted(latest.items()):
        benchmark, domain, level, shots = task_facts(task)
        for key, value in metrics.items():
            # Metric entries are "<metric>,<filter>"; the harness also stores
            # bookkeeping keys without a filter ("alias", "name", "sample_count").
            if "," not in key or "_stderr" in key:
                continue
            metric, _, filt = key.partition(",")
            num = _num(value)
            if num is None or not math.isfinite(num):
                problems.append(f"{model} / {setting} / {task}: {metric} = {value!r} "
                                "(not a finite number; treated as missing)")
                num = math.nan
            rows.append({"model": model, "task": task, "benchmark": benchmark,
                         "level": level, "domain": domain, "setting": setting,
                         "shots": shots, "metric": metric, "filter": filt or "none",
                         "value": num, "source": str(path)})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return Results(frame=frame, problems=problems)


def fmt(value: float, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def md_escape(text: Any) -> str:
    """A table cell's text made safe for a Markdown table: ``|`` would end the cell and a
    line break the row. Backslashes right before a ``|`` are doubled, so the user's own
    ``\\|`` cannot undo the escape; other backslashes are left as written."""
    out = re.sub(r"(\\*)\|", lambda m: m.group(1) * 2 + "\\|", str(text))
    return " ".join(out.splitlines())


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]],
                   align: Sequence[str] | None = None) -> str:
    """A Markdown table; every cell escaped (model, adapter and task names are the user's)."""
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


_TEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 "±": r"$\pm$", "Δ": r"$\Delta$", "\n": " "}
_TEX_RE = re.compile("|".join(re.escape(k) for k in _TEX_SPECIALS))


def _tex_escape(text: Any) -> str:
    """Text made safe for LaTeX in one pass (so an escape is never escaped again)."""
    return _TEX_RE.sub(lambda m: _TEX_SPECIALS[m.group()], str(text))


def latex_table(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    spec = "l" + "r" * (len(header) - 1)
    lines = [r"\begin{table}[t]", r"\centering", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(_tex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(_tex_escape(c) for c in r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{_tex_escape(caption)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_table(out: Path, stem: str, header: Sequence[str], rows: Sequence[Sequence[str]],
                caption: str = "") -> tuple[Path, Path, Path, str]:
    """Writes ``stem.csv``, ``stem.md`` and ``stem.tex``; returns them and the Markdown."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    md = (f"{caption}\n\n" if caption else "") + markdown_table(header, rows)
    (out / f"{stem}.md").write_text(md, encoding="utf-8")
    (out / f"{stem}.tex").write_text(latex_table(header, rows, caption), encoding="utf-8")
    return out / f"{stem}.csv", out / f"{stem}.md", out / f"{stem}.tex", md

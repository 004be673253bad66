"""THE reader of lm-evaluation-harness (0.4.13) output: results files and samples files.

``lm_eval --output_path DIR --log_samples`` writes
``DIR/<model_name_sanitized>/results_<timestamp>.json`` and, next to it, one
``samples_<task>_<timestamp>.jsonl`` per task (in a data-parallel run rank 0 writes
the ranks' merged samples). The suite's own generations, saved before judging, follow
the same rule with the rank appended (``..._rank<r>.jsonl``): :func:`samples_name` is
that rule, :data:`SAMPLES_STEM` its reading, for every writer and reader.

Results: :func:`load_results` walks one or more folders (recursively), keeps the
latest value per (model, setting, task) and returns a tidy :class:`pandas.DataFrame`
with one row per metric value:

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

Samples: :func:`samples_file` finds the samples file written with a results file;
:func:`read_samples` reads one filter's lines as :class:`Sample` records (the texts,
the CCSBench controls, the harness's logged per-document scores), strictly: a line
that is not what the harness writes is a :class:`ResultsError` naming file, line and
field, since a misread field gives plausible wrong numbers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from custom_metrics.errors import SuiteError
from lm_eval_tasks import catalog

if TYPE_CHECKING:  # pandas is imported where a frame is built (the harness imports this module)
    import pandas as pd

SETTINGS = ("zero-shot", "2shot", "3shot", "fine-tuned")
COLUMNS = ["model", "task", "benchmark", "level", "domain", "setting", "shots", "metric",
           "filter", "value", "source"]

_RESULTS = re.compile(r"^results_(?P<ts>.+)\.json$")
#: the stem of a samples file: ``samples_<task>_<timestamp>[_rank<r>]``
SAMPLES_STEM = re.compile(r"^samples_(?P<task>.+?)_(?P<ts>\d{4}-\d{2}-\d{2}T[0-9.\-:]+?)(?:_rank(?P<rank>\d+))?$")


class ResultsError(SuiteError, RuntimeError):
    """Harness output (or a file claiming to be) that cannot be read; the message names
    the file and, where there is one, the line and field."""


# ---------------------------------------------------------------------- names and catalogue facts


def samples_name(task: str, timestamp: str, rank: int | None = None) -> str:
    """The file name of ``task``'s samples written at ``timestamp`` (by ``rank``, for files
    each rank writes itself)."""
    return f"samples_{task}_{timestamp}" + (f"_rank{rank}" if rank is not None else "") + ".jsonl"


def task_from_samples_name(path: str | Path) -> str | None:
    """``samples_<task>_<timestamp>[_rank<r>].jsonl`` -> the task (None: not that form)."""
    m = SAMPLES_STEM.match(Path(path).stem)
    return m.group("task") if m else None


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


def parse_folder_spec(spec: str) -> tuple[Path, str | None]:
    """``DIR`` or ``DIR=fine-tuned`` (a user label for every run below DIR)."""
    if "=" in spec:
        path, label = spec.rsplit("=", 1)
        if label not in SETTINGS:
            raise ResultsError(f"unknown setting label {label!r} in {spec!r}; use one of "
                               f"{', '.join(SETTINGS)}")
        return Path(path), label
    return Path(spec), None


# ---------------------------------------------------------------------- results files


def _model_args_text(config: dict) -> str:
    margs = config.get("model_args", "")
    if isinstance(margs, dict):
        return ",".join(f"{k}={v}" for k, v in margs.items())
    return str(margs or "")


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@dataclass
class Results:
    frame: pd.DataFrame
    problems: list[str] = field(default_factory=list)

    def metric(self, name: str) -> pd.DataFrame:
        return self.frame[self.frame["metric"] == name]


def samples_file(results_path: Path, ts: str, task: str) -> Path | None:
    """The samples file written with a results file, else the latest one for ``task`` in
    the same folder (a run resumed into the folder)."""
    exact = results_path.parent / samples_name(task, ts)
    if exact.is_file():
        return exact
    found = sorted(p for p in results_path.parent.glob(f"samples_{task}_*.jsonl")
                   if (m := SAMPLES_STEM.match(p.stem)) and m.group("task") == task and m.group("rank") is None)
    return found[-1] if found else None


def find_results_files(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("results_*.json") if _RESULTS.match(p.name))


def read_results_files(folders: Iterable[tuple[Path, str | None]],
                       problems: list[str]) -> Iterator[tuple[Path, str, str | None, dict]]:
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
                text = path.read_text(encoding="utf-8")
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                problems.append(f"{path}: {json_error(exc, text)}")
                continue
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{path}: unreadable ({exc})")
                continue
            if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
                problems.append(f"{path}: no 'results' object")
                continue
            register_user_tasks(data, path, problems)
            yield path, ts, label, data


def json_error(exc: json.JSONDecodeError, text: str) -> str:
    """Where a file's JSON breaks, in words: line, column and character of the file, and
    whether the file ends there (a write cut short by a kill or a full disk)."""
    cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
    return (f"not valid JSON at line {exc.lineno}, column {exc.colno} (character {exc.pos} of {len(text)}): "
            f"{exc.msg}" + ("; the file ends before its JSON does (cut short?)" if cut else ""))


def register_user_tasks(data: dict, path: Path, problems: list[str]) -> None:
    """Put the user domains a results file evaluated into the catalogue, from the task
    configurations it records (:mod:`lm_eval_tasks.benchmarks.own.configs`), so that its rows get
    their benchmark, domain, level and shots like the suite's."""
    from lm_eval_tasks.benchmarks.own.configs import is_user_config, spec_from_config

    for name, config in (data.get("configs") or {}).items():
        if isinstance(config, dict) and is_user_config(config):
            try:
                catalog.register(spec_from_config(config, str(path)))
            except SuiteError as exc:
                problems.append(f"{path}: task {name}: {exc}")


def documents_of(data: dict, task: str) -> int | None:
    """The documents a results file (``data``) says ``task`` evaluated (``n-samples``: the
    effective count, else the original); None where it records none."""
    counts = (data.get("n-samples") or {}).get(task) or {}
    value = counts.get("effective", counts.get("original")) if isinstance(counts, dict) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def load_results(folders: Iterable[str | Path | tuple[Path, str | None]],
                 fine_tuned: Sequence[str | Path] = ()) -> Results:
    """Tidy frame of every metric value under ``folders`` (latest per model+setting+task).

    ``folders`` items are paths, ``"DIR=label"`` strings or (path, label) tuples;
    folders in ``fine_tuned`` are labelled ``fine-tuned``.
    """
    import pandas as pd

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
    return Results(frame=pd.DataFrame(rows, columns=COLUMNS), problems=problems)


# ---------------------------------------------------------------------- samples files


@dataclass
class Sample:
    """One document's prediction, read from a samples file or a table of predictions."""

    doc_id: Any
    id: str | None
    #: the harness filter the prediction went through (None: a table has no filters)
    filter: str | None
    document: str
    reference: str
    prediction: str
    #: per-document fields the families read beyond the texts (``Batch.extras``)
    extras: dict[str, Any] = field(default_factory=dict)
    #: numbers the input already carries per document (a release's own ROUGE columns)
    given: dict[str, Any] = field(default_factory=dict)
    #: the harness's own per-document scores of a ``--log_samples`` line (key -> value or
    #: corpus item), so reports can resample and pair documents without scoring again
    logged: dict[str, Any] = field(default_factory=dict)


def first_text(value: Any) -> str:
    """The first string inside (possibly nested) lists: the generated text of a sample
    (``resps`` is ``[[text]]``, ``filtered_resps`` ``[text]``)."""
    while isinstance(value, (list, tuple)):
        if not value:
            return ""
        value = value[0]
    return "" if value is None else str(value)


def read_text(path: Path) -> str:
    """The file as text; bytes that are not UTF-8 become lone surrogates (``surrogateescape``).

    Why not a strict decode: it would fail on the first bad byte without saying which
    row and field hold it; :func:`checked_text` reports exactly that for the fields read,
    and bad bytes in fields never read do no harm.
    """
    try:
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return text[1:] if text.startswith("\ufeff") else text


_SURROGATE = re.compile("[\udc80-\udcff]")


def checked_text(value: Any, where: str, name: str) -> str:
    """``value`` as the text of one field; None is empty, a non-string or invalid UTF-8 is an error."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ResultsError(f"{where}, field {name!r}: expected a string, got {type(value).__name__} "
                           f"({json.dumps(value, default=str)[:60]})")
    if _SURROGATE.search(value):
        raise ResultsError(f"{where}, field {name!r}: invalid UTF-8")
    return value


def logged_scores(rec: dict, where: str) -> dict[str, Any]:
    """The harness's per-document scores of one samples line (the keys its ``metrics``
    lists). A score that is text, not a number (``"rouge1": "abc"``), is an error naming
    the line and key: the report would otherwise fail in its statistics with a bare
    ``ValueError``. Corpus items (lists, pairs) are left as they are."""
    logged = {k: rec[k] for k in rec.get("metrics", ()) if isinstance(k, str) and k in rec}
    for key, value in logged.items():
        if isinstance(value, str) and _num(value) is None:
            raise ResultsError(f"{where}, key {key!r}: the score {json.dumps(value)[:40]} is not a number")
    return logged


def read_samples(path: Path, filter_key: str | None = None, limit: int | None = None,
                 text: str | None = None) -> list[Sample]:
    """Samples of one filter (default: the file's first) from a ``--log_samples`` file."""
    from custom_metrics import registry

    samples: list[Sample] = []
    task = task_from_samples_name(path)
    # split on "\n" only: JSON written with ensure_ascii=False may hold U+2028 inside strings
    for lineno, line in enumerate((read_text(path) if text is None else text).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or "doc" not in rec:
            raise ResultsError(f"{where}: no 'doc' field; is this a --log_samples file?")
        filt = str(rec.get("filter", "none"))
        if filter_key is None:
            filter_key = filt
        if filt != filter_key:
            continue
        doc = rec["doc"] if isinstance(rec["doc"], dict) else {}
        resps = rec.get("filtered_resps", rec.get("resps"))
        if resps is None:
            raise ResultsError(f"{where}: neither 'filtered_resps' nor 'resps'")
        try:
            extras = registry.extras_of(doc, task)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{where}: doc 'keywords' is not a JSON list ({exc.msg})") from None
        samples.append(Sample(
            doc_id=rec.get("doc_id", lineno - 1),
            id=doc.get("id"),
            filter=filt,
            document=checked_text(doc.get("document", "") or "", where, "doc.document"),
            reference=checked_text(doc.get("summary", rec.get("target", "")) or "", where, "doc.summary"),
            prediction=checked_text(first_text(resps), where, "filtered_resps").strip(),
            extras=extras,
            logged=logged_scores(rec, where),
        ))
        if limit is not None and len(samples) >= limit:
            break
    if not samples:
        raise ResultsError(f"{path}: no samples" + (f" for filter {filter_key!r}" if filter_key else ""))
    return samples


def task_of_samples(path: Path) -> str | None:
    """The task a harness samples file says it holds (each record's ``doc.suite_task``),
    or None (an older file, or a prediction table).

    Why not the file name alone: a renamed or copied file would be scored as another
    task, with another domain's vocabulary and another benchmark's ROUGE convention.
    """
    if path.suffix.lower() != ".jsonl":
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    doc = rec.get("doc") if isinstance(rec, dict) else None
                    task = doc.get("suite_task") if isinstance(doc, dict) else None
                    return task if isinstance(task, str) and task else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # read_samples names the problem with its line
    return None


__all__ = ["COLUMNS", "Results", "ResultsError", "SAMPLES_STEM", "SETTINGS", "Sample",
           "checked_text", "documents_of", "find_results_files", "first_text", "json_error", "load_results",
           "parse_folder_spec",
           "read_results_files", "read_samples", "read_text", "samples_file", "samples_name",
           "setting_of", "task_facts", "task_from_samples_name", "task_of_samples"]

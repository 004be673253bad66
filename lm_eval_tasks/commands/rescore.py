"""``domsum rescore``: re-score generated summaries with suite metrics, no regeneration.

The harness cannot do this: its metrics run only inside an evaluation. Two kinds of
input are read, told apart by extension and content (:func:`detect_format`):

* a harness ``--log_samples`` file. lm-eval 0.4.13 writes
  ``samples_<task>_<timestamp>.jsonl``, one line per document and filter, with
  ``doc`` (our docs carry ``document`` and ``summary``), ``target``, ``resps`` (a list
  per request of generated strings), ``filtered_resps`` (one per request, after the
  filter) and ``doc_id``. The prediction is ``filtered_resps`` (what the task scored).
* a table of predictions: CSV / TSV, JSON lines, or a JSON list of records, such as
  the AdaptEval release's prediction CSVs (``doc_id, prompt_0, prediction, reference,
  rouge1, rouge2, rougeL, article``) or DomainSum-style output records (``summary`` =
  the reference, ``prediction``). Columns: ``--prediction-column`` etc., else the one
  conventional name present (:data:`PREDICTION_COLUMNS`, :data:`REFERENCE_COLUMNS`,
  :data:`DOCUMENT_COLUMNS`, :data:`ID_COLUMNS`). Why strict: a missing column, two
  candidate columns, a non-string or non-UTF-8 field, or a line that is not JSON is an
  error naming the file, row/line and field, since a silently misread column gives
  plausible wrong numbers; a row with an empty prediction or reference is skipped and
  listed with why (``skipped_rows``), never scored as 0.

Predictions are stripped as the tasks strip them and scored through the metric
registry (:mod:`custom_metrics.registry`), so a re-scored number is the number a
harness run of the same predictions reports.

``--metrics`` takes any registry family (``rouge``, ``bertscore``, ``dvo``, ``judge``,
``fm``, ``ccs_length``, ``ccs_keywords``, ``ccs_readability``, ``ccs_focus``,
``medqsum``) or any single key of one (``rouge1``, ``coherence``, ``fm_vanilla``,
``meteor``, ...): a key selects its family and restricts the output, and the cost,
to the chosen keys. A name that is both a family and one of its keys (``fm``,
``dvo``) means the key, so ``fm`` alone makes no vanilla-rating calls, as before.
Without ``--metrics`` the task's catalogue families are scored (``--task``, or the
task a samples file name names): the paper's metrics for that benchmark.

* ``dvo`` reads ``--vocabulary FILE``, or the domain's vocabulary under
  ``--vocab-dir`` / ``DOMSUM_VOCAB_DIR``.
* judge families (``judge`` and its three ratings, ``fm`` / ``fm_vanilla``,
  ``ccs_focus``) use the judge of ``--judge-model`` / ``DOMSUM_JUDGE_MODEL`` etc.; no
  judge configured = skipped with one notice, as in the tasks. Answers are cached, so
  a re-run costs nothing. Only the chosen judge ratings are requested.
* ``fm`` keeps, per sample, the four facet fractions, ratings and extracted segments
  (``fm_detail``), so every score is explainable.
* CCSBench families read the record's control fields (``length_bin``, ``keywords``,
  ``readability``, ``focus``).

Writes, next to each input (or into ``--out``): ``<stem>.scores.jsonl`` (one line
per sample: ``doc_id``, ``id``, ``filter`` (samples files), ``prediction`` and its
per-document values; NaN written as null) and ``<stem>.summary.json``: corpus scores
aggregated as the harness does; ``intervals``, a seeded percentile bootstrap 95%
interval per key over documents (``--bootstrap N``, ``--seed``, recorded under
``bootstrap``; corpus keys recompute their corpus function per resample, except the
slow ones in :data:`NOT_BOOTSTRAPPED`, null with the reason); ``agreement`` where the
input carries its own per-document scores (max |file - ours| per column, the evidence
that a release's numbers are reproduced row for row); judge parse failures / mode /
usage, what each family recorded, the settings and columns used.

    domsum rescore out/model/samples_adapteval_pubmed_*.jsonl \\
        --metrics rouge,dvo,judge --judge-model gpt-4o-mini --vocab-dir ~/vocab
    domsum rescore release/pubmed_predictions.csv --task adapteval_pubmed --metrics rouge \\
        --out out/rescored

Progress bars (one per family: ROUGE and DVO per document, BERTScore per encoder batch,
judge requests) go to stderr; ``--no-progress`` or ``DOMSUM_PROGRESS=0`` turns them off.

The task is looked up in the task catalogue for its benchmark and domain
(``--benchmark`` / ``--domain`` override them; an input of no suite task needs them
only for DVO's vocabulary and the judge's domain). Every setting (flags, then
``--metadata``, then the environment) is resolved by :mod:`lm_eval_tasks.settings`, as
in a harness run.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics import battery, judge_metrics, registry, secrets
from custom_metrics.hf_models import ModelUnavailable
from custom_metrics.errors import SuiteError
from lm_eval_tasks import settings
from lm_eval_tasks.catalog import UnknownTask
from lm_eval_tasks.commands import json_safe, parse_metadata, task_target, with_flags, write_atomically
from lm_eval_tasks.settings import SettingError

log = logging.getLogger("rescore")

_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)$")
#: doc fields handed to families as ``Batch.extras`` (the CCSBench controls)
NO_JUDGE = "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"


class ScoreError(SuiteError, RuntimeError):
    """A requested metric cannot run (missing module, vocabulary, bad input)."""


# =========================================================================== input

#: column names taken, in this order, when no ``--*-column`` flag names one (the DomainSum
#: paper names no release field; these are the names its and AdaptEval's releases use)
PREDICTION_COLUMNS = ("prediction", "output", "generated")
REFERENCE_COLUMNS = ("summary", "reference", "target")
DOCUMENT_COLUMNS = ("document", "article", "source", "text")
ID_COLUMNS = ("id", "doc_id")
#: input formats: a harness --log_samples file, or a table of predictions
FORMATS = ("harness", "csv", "tsv", "jsonl", "json")


@dataclass
class Sample:
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


@dataclass
class Loaded:
    """What one input file holds, and how it was read (recorded in the summary)."""

    samples: list[Sample]
    format: str
    #: role -> column read (tables only)
    columns: dict[str, str | None] = field(default_factory=dict)
    #: rows left out because they are empty: where, and the id when the row has one
    skipped_rows: list[dict[str, Any]] = field(default_factory=list)


def first_text(value: Any) -> str:
    """The first string inside (possibly nested) lists: the generated summary."""
    while isinstance(value, (list, tuple)):
        if not value:
            return ""
        value = value[0]
    return "" if value is None else str(value)


def read_text(path: Path) -> str:
    """The file as text; bytes that are not UTF-8 become lone surrogates (``surrogateescape``).

    Why not a strict decode: it would fail on the first bad byte without saying which
    row and field hold it; :func:`checked_text` reports exactly that for the fields read,
    and bad bytes in columns the scores never read do no harm.
    """
    try:
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        raise ScoreError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return text[1:] if text.startswith("\ufeff") else text


_SURROGATE = re.compile("[\udc80-\udcff]")


def checked_text(value: Any, where: str, name: str) -> str:
    """``value`` as the text of one field; None is empty, a non-string or invalid UTF-8 is an error."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScoreError(f"{where}, field {name!r}: expected a string, got {type(value).__name__} "
                         f"({json.dumps(value, default=str)[:60]})")
    if _SURROGATE.search(value):
        raise ScoreError(f"{where}, field {name!r}: invalid UTF-8")
    return value


def detect_format(path: Path, text: str) -> str:
    """One of :data:`FORMATS`, from the extension and then the content.

    A JSON-lines file whose first record has ``doc`` and ``resps`` / ``filtered_resps``
    is a harness samples file, whatever its name; ``.csv`` / ``.tsv`` are tables;
    ``.json`` is one JSON value (a list of records), unless it only parses line by line;
    any other name is read by its first character (``[``: a JSON list, ``{``: JSON lines,
    else a CSV, tab-separated when its header line has tabs and no commas).
    """
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return suffix[1:]
    head = text.lstrip()
    first_record = None
    if head.startswith("{"):
        try:
            first_record = json.loads(head.split("\n", 1)[0])
        except json.JSONDecodeError:
            pass
        if isinstance(first_record, dict) and "doc" in first_record and (
                "filtered_resps" in first_record or "resps" in first_record):
            return "harness"
    if suffix == ".json":
        if first_record is None or "\n" not in head.strip():
            return "json"
        try:
            json.loads(head)
            return "json"
        except json.JSONDecodeError:
            return "jsonl"  # JSON lines under a .json name
    if suffix in (".jsonl", ".ndjson") or head.startswith("{"):
        return "jsonl"
    if head.startswith("["):
        return "json"
    header = head.split("\n", 1)[0]
    return "tsv" if "\t" in header and "," not in header else "csv"


def read_input(path: Path, args: argparse.Namespace, task: str | None) -> Loaded:
    """Samples of one input: a harness samples file or a table of predictions."""
    text = read_text(path)
    fmt = detect_format(path, text)
    if fmt == "harness":
        return Loaded(read_samples(path, args.filter, args.limit, text=text), fmt)
    return read_table(path, text, fmt, args, task)


def read_samples(path: Path, filter_key: str | None = None, limit: int | None = None,
                 text: str | None = None) -> list[Sample]:
    """Samples of one filter (default: the file's first) from a ``--log_samples`` file."""
    samples: list[Sample] = []
    task = task_from_filename(path)
    # split on "\n" only: JSON written with ensure_ascii=False may hold U+2028 inside strings
    for lineno, line in enumerate((read_text(path) if text is None else text).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScoreError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or "doc" not in rec:
            raise ScoreError(f"{where}: no 'doc' field; is this a --log_samples file?")
        filt = str(rec.get("filter", "none"))
        if filter_key is None:
            filter_key = filt
        if filt != filter_key:
            continue
        doc = rec["doc"] if isinstance(rec["doc"], dict) else {}
        resps = rec.get("filtered_resps", rec.get("resps"))
        if resps is None:
            raise ScoreError(f"{where}: neither 'filtered_resps' nor 'resps'")
        try:
            extras = registry.extras_of(doc, task)
        except json.JSONDecodeError as exc:
            raise ScoreError(f"{where}: doc 'keywords' is not a JSON list ({exc.msg})") from None
        samples.append(Sample(
            doc_id=rec.get("doc_id", lineno - 1),
            id=doc.get("id"),
            filter=filt,
            document=checked_text(doc.get("document", "") or "", where, "doc.document"),
            reference=checked_text(doc.get("summary", rec.get("target", "")) or "", where, "doc.summary"),
            prediction=checked_text(first_text(resps), where, "filtered_resps").strip(),
            extras=extras,
            logged={k: rec[k] for k in rec.get("metrics", ()) if isinstance(k, str) and k in rec},
        ))
        if limit is not None and len(samples) >= limit:
            break
    if not samples:
        raise ScoreError(f"{path}: no samples" + (f" for filter {filter_key!r}" if filter_key else ""))
    return samples


def table_records(path: Path, text: str, fmt: str) -> tuple[list[tuple[str, dict | None]], list[str]]:
    """(where, record) per row of a CSV / TSV / JSON-lines / JSON-list file, and every column name.

    A blank JSON line is a ``None`` record (an empty row, counted, not an error); a line
    that is not JSON, or a record that is not an object, is an error naming its line.
    """
    rows: list[tuple[str, dict | None]] = []
    columns: dict[str, None] = {}
    if fmt in ("csv", "tsv"):
        csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # whole articles in one cell
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if fmt == "tsv" else ",")
        columns.update(dict.fromkeys(reader.fieldnames or []))
        try:
            for i, rec in enumerate(reader, start=1):
                where = f"{path}, row {i} (line {reader.line_num})"
                if None in rec:
                    raise ScoreError(f"{where}: {len(rec) - 1 + len(rec[None])} fields, the header has "
                                     f"{len(reader.fieldnames or [])}")
                short = [k for k, v in rec.items() if v is None]
                if short and any(v not in (None, "") for v in rec.values()):  # not a blank row
                    raise ScoreError(f"{where}: {len(rec) - len(short)} fields, the header has {len(rec)} "
                                     f"(no {', '.join(map(repr, short))}); a short row would score an empty "
                                     f"{short[-1]}")
                rows.append((where, rec))
        except csv.Error as exc:
            raise ScoreError(f"{path}, line {reader.line_num}: not CSV ({exc})") from None
        return rows, list(columns)
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScoreError(f"{path}, line {exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(data, list):
            raise ScoreError(f"{path}: expected a JSON list of records, got a {type(data).__name__}")
        items = [(f"{path}, item [{i}]", rec) for i, rec in enumerate(data)]
    else:
        items = []
        lines = text.split("\n")
        if lines and not lines[-1].strip():
            lines.pop()  # the newline that ends the last record
        for lineno, line in enumerate(lines, start=1):
            where = f"{path}, line {lineno}"
            if not line.strip():
                items.append((where, None))
                continue
            try:
                items.append((where, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ScoreError(f"{where}: invalid JSON ({exc.msg})") from None
    for where, rec in items:
        if rec is not None and not isinstance(rec, dict):
            raise ScoreError(f"{where}: a record must be a JSON object, got {type(rec).__name__}")
        columns.update(dict.fromkeys(rec or {}))
        rows.append((where, rec))
    return rows, list(columns)


def choose_columns(path: Path, present: list[str], args: argparse.Namespace) -> dict[str, str | None]:
    """role -> column: the ``--*-column`` flag, else the one conventional name present.

    A named or required column that is absent is an error listing the columns present;
    so is a role with two conventional names present (``summary`` and ``target``): the
    scores must not depend on which one a rule happened to prefer. Only ``id`` takes the
    first of several (it names rows, it changes no score).
    """
    listing = ", ".join(present) or "none"
    chosen: dict[str, str | None] = {}
    for role, flag, names, required in (
            ("prediction", args.prediction_column, PREDICTION_COLUMNS, True),
            ("reference", args.reference_column, REFERENCE_COLUMNS, True),
            ("document", args.document_column, DOCUMENT_COLUMNS, False),
            ("id", args.id_column, ID_COLUMNS, False)):
        if flag:
            if flag not in present:
                raise ScoreError(f"{path}: no column {flag!r} (--{role}-column); columns: {listing}")
            chosen[role] = flag
            continue
        found = [n for n in names if n in present]
        if len(found) > 1 and role != "id":
            raise ScoreError(f"{path}: columns {', '.join(found)} could each be the {role}; choose one with "
                             f"--{role}-column (columns: {listing})")
        if not found and required:
            raise ScoreError(f"{path}: no {role} column (looked for {', '.join(names)}; give "
                             f"--{role}-column); columns: {listing}")
        chosen[role] = found[0] if found else None
    return chosen


def read_table(path: Path, text: str, fmt: str, args: argparse.Namespace, task: str | None) -> Loaded:
    """Samples of a table of predictions; rows with an empty prediction or reference are
    skipped and listed, any other bad row is an error naming file, row and field."""
    rows, present = table_records(path, text, fmt)
    cols = choose_columns(path, present, args)
    known = {k for f in registry.all_families() for k in f.key_names}
    given_cols = [c for c in present if c in known and c not in cols.values()]
    loaded = Loaded([], fmt, cols)
    for index, (where, rec) in enumerate(rows):
        rec = rec or {}
        ident = rec.get(cols["id"]) if cols["id"] else None
        if ident is not None and not isinstance(ident, (str, int, float)):
            raise ScoreError(f"{where}, field {cols['id']!r}: expected a string or number, "
                             f"got {type(ident).__name__}")
        ident = None if ident in (None, "") else checked_text(str(ident), where, str(cols["id"]))
        prediction = checked_text(rec.get(cols["prediction"]), where, str(cols["prediction"])).strip()
        reference = checked_text(rec.get(cols["reference"]), where, str(cols["reference"]))
        if not prediction or not reference.strip():  # nothing to compare: counted, never a score of 0
            why = "empty row" if not prediction and not reference.strip() else (
                "empty prediction" if not prediction else "empty reference")
            loaded.skipped_rows.append({"where": where.removeprefix(f"{path}, "), "id": ident, "why": why})
            continue
        document = checked_text(rec.get(cols["document"]), where, str(cols["document"])) if cols["document"] else ""
        try:
            extras = registry.extras_of({k: v for k, v in rec.items() if v not in (None, "")}, task)
            if isinstance(extras.get("length_bin"), str):  # CSV cells are text
                extras["length_bin"] = int(float(extras["length_bin"]))
        except (json.JSONDecodeError, ValueError) as exc:
            raise ScoreError(f"{where}: a control field (keywords, length_bin) is malformed ({exc})") from None
        extras["id"] = ident
        loaded.samples.append(Sample(doc_id=ident if ident is not None else index, id=ident, filter=None,
                                     document=document, reference=reference, prediction=prediction,
                                     extras=extras, given={c: rec.get(c) for c in given_cols}))
        if args.limit is not None and len(loaded.samples) >= args.limit:
            break
    if not loaded.samples:
        raise ScoreError(f"{path}: no rows with a prediction or a reference")
    return loaded


def task_from_filename(path: Path) -> str | None:
    """``samples_<task>_<timestamp>.jsonl`` -> task name."""
    m = _SAMPLES_NAME.match(path.stem)
    return m.group("task") if m else None


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
        return None  # read_input names the problem with its line
    return None


def target_of(task: str | None) -> tuple[str | None, str | None, str | None]:
    """(benchmark, domain, why not) of a samples file's task, from the catalogue.

    A task outside the suite (or no task) gives ``(None, None, reason)``; the reason
    becomes the error only when a metric needs the domain.
    """
    if not task:
        return None, None, "no task: give --task, or --benchmark/--domain (a harness file names its task " \
                           "as samples_<task>_<timestamp>.jsonl)"
    try:
        benchmark, domain = task_target(task)
    except UnknownTask as exc:
        return None, None, str(exc)
    return benchmark, domain, None


# =========================================================================== metric selection


def parse_metrics(spec: str) -> dict[str, list[str]]:
    """``rouge,dvo,coherence`` -> {family: the keys chosen}, in the registry's key order.

    A family name chooses all its keys; a key chooses itself (and so its family). A
    name that is both a family and one of its keys (``fm``, ``dvo``) is the key: the
    long-standing meaning of ``--metrics fm`` is the facet score without the vanilla
    rating's calls.
    """
    chosen: dict[str, set[str]] = {}
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        try:
            fam = registry.family_of(name)
            keys = {name}
        except KeyError:
            try:
                fam = registry.get(name)
            except KeyError:
                raise ScoreError(f"unknown metric {name!r}; choose a family ({', '.join(registry.names())}) "
                                 f"or one of its keys") from None
            keys = set(fam.key_names)
        chosen.setdefault(fam.name, set()).update(keys)
    return {name: [k for k in registry.get(name).key_names if k in keys] for name, keys in chosen.items()}


def task_selection(task: str | None) -> dict[str, list[str]]:
    """The catalogue's metric families of ``task`` (all their keys): what ``--metrics`` defaults to,
    so a re-scored file reports what a harness run of that task reports."""
    from lm_eval_tasks.catalog import lookup

    if not task:
        raise ScoreError("give --metrics, or --task NAME for the task's own metrics")
    try:
        spec = lookup(task)
    except UnknownTask as exc:
        raise ScoreError(f"--metrics omitted and the task has no catalogue metrics: {exc}") from None
    return {name: list(registry.get(name).key_names) for name in spec.families}


def family_options(name: str, keys: list[str], args: argparse.Namespace, task: str | None,
                   benchmark: str) -> dict[str, Any]:
    """``Context.options`` of one family: what the chosen keys and the flags ask of it."""
    if name == "judge":
        wanted = [k for k in judge_metrics.JUDGE_METRICS if k in keys] or list(judge_metrics.JUDGE_METRICS)
        return {"judge_metrics": wanted, "max_document_words": args.max_document_words}
    if name == "fm":
        # details always: they carry the scored/failure counts of the summary's fm_judge
        vanilla = "fm_vanilla" in keys
        return {"fm_facets": "fm" in keys or not vanilla, "fm_vanilla": vanilla, "keep_details": True}
    if name == "dvo" and args.vocabulary:
        return {"vocabulary_file": args.vocabulary}
    if task and benchmark:  # what the task's own benchmark gives the family (CCSBench's focus prompt)
        from lm_eval_tasks.benchmarks import family_options as benchmark_options
        from lm_eval_tasks.catalog import lookup

        try:
            spec = lookup(task)
        except UnknownTask:
            return {}
        if spec.benchmark == benchmark:
            return benchmark_options(spec, name, args.metadata)
    return {}


def family_settings(fam: registry.Family, keys: list[str], meta: dict) -> dict[str, Any]:
    """The family's resolved settings."""
    return settings.resolve_many(meta, fam.settings)


# =========================================================================== scoring


def judge_summary(ctx: registry.Context, values: dict[str, list]) -> dict[str, Any]:
    """Per-rating parse failures, scored items and judge mode of the AdaptEval judge, from its
    per-document values and what it recorded (no second call)."""
    wanted = ctx.options["judge_metrics"]
    nan = {m: sum(1 for v in values[m] if math.isnan(v)) for m in wanted}
    failed = ctx.record.get("judge_failed", {})
    return {"parse_failures": {m: failed.get(m, {}).get("parse", 0) for m in wanted},
            "failed": {m: failed.get(m, {}) for m in wanted},
            "n_scored": {m: len(values[m]) - nan[m] for m in wanted},
            "judge_mode": ctx.record.get("judge_mode", {}), "usage": ctx.record.get("judge_usage"),
            "judge": ctx.judge.describe()}


def _context(name: str, keys: list[str], args: argparse.Namespace, task: str | None, benchmark: str,
             domain: str | None) -> registry.Context:
    fam = registry.get(name)
    return registry.Context(
        benchmark=benchmark, subset=domain or "",
        settings=family_settings(fam, keys, args.metadata),
        judge=settings.judge_config(args.metadata) if "judge" in fam.needs else None,
        options=family_options(name, keys, args, task, benchmark),
        progress=settings.resolve(args.metadata, "progress"))


def _preflight(fam: registry.Family, ctx: registry.Context, args: argparse.Namespace, why: str | None) -> dict:
    """Everything that can fail cheaply, before any family scores; returns what ``describe`` says."""
    if "vocabulary" in fam.needs and not ctx.options.get("vocabulary_file") and not ctx.subset:
        raise ScoreError(f"metric '{fam.name}': give --vocabulary FILE or --benchmark/--domain ({why})")
    if fam.name == "judge" and not ctx.subset:
        raise ScoreError(f"judge metrics: give --domain ({why})")
    try:
        if fam.check is not None and settings.resolve(args.metadata, "preflight"):
            fam.check(ctx)
        return fam.describe(ctx) if fam.describe is not None else {}
    except registry.ScorerUnavailable as exc:
        raise ScoreError(str(exc)) from None


#: corpus keys whose interval is not computed: each resample would recompute the metric from
#: the texts (corpus BLEU / chrF re-tokenise every text: ~0.1 s per 500 short questions, so
#: minutes per 1000 resamples; MAUVE refits its clustering: hours); numeric items are cheap
NOT_BOOTSTRAPPED = {
    "sacrebleu": "corpus BLEU recomputed from the texts per resample: too slow for a default run",
    "chrf": "corpus chrF recomputed from the texts per resample: too slow for a default run",
    "mauve": "MAUVE refits its feature clustering per resample: too slow for a default run",
}


def intervals(fam: registry.Family, keys: list[str], scored: dict[str, list], ctx: registry.Context,
              n_boot: int, seed: int) -> tuple[dict[str, Any], dict[str, str]]:
    """(key -> [low, high] or None, key -> why None): the percentile bootstrap 95% interval of
    every chosen key, documents resampled (:mod:`custom_metrics.analysis.stats.bootstrap`).

    ``mean`` / ``nanmean`` keys resample the per-document values; a ``corpus`` key
    recomputes its corpus function (:func:`registry.aggregate`) on the resampled items,
    unless :data:`NOT_BOOTSTRAPPED` says that is too slow; a ``sum`` key is a count of
    events in this file, not an estimate, and gets none.
    """
    from custom_metrics.analysis.stats.bootstrap import bootstrap_interval

    out: dict[str, Any] = {}
    why: dict[str, str] = {}
    for key in keys:
        agg = fam.key(key).aggregation
        if agg in ("mean", "nanmean"):
            out[key] = list(bootstrap_interval(scored[key], agg, n_boot, seed))
        elif agg == "corpus" and key not in NOT_BOOTSTRAPPED:
            out[key] = list(bootstrap_interval(
                scored[key], lambda items, k=key: registry.aggregate(fam, k, items, ctx), n_boot, seed))
        else:
            out[key] = None
            why[key] = NOT_BOOTSTRAPPED.get(key, "a count of events in this file, not an estimate")
    return out, why


def agreement(samples: list[Sample], per_sample: list[dict]) -> dict[str, dict[str, Any]]:
    """Per score column the input carries (a release's ``rouge1``...): how far it is from ours.

    ``max_abs_diff`` over the rows with a number in both; ``file_scale`` is 100 where the
    file writes percentages of our fractions (whichever scale agrees better), so a
    release's rounding shows as a small difference and not as a factor.
    """
    out: dict[str, dict[str, Any]] = {}
    for col in (samples[0].given if samples else {}):
        if col not in per_sample[0]:
            continue
        pairs, bad = [], 0
        for s, row in zip(samples, per_sample):
            raw, ours = s.given.get(col), row.get(col)
            if raw in (None, "") or not isinstance(ours, (int, float)) or math.isnan(ours):
                continue
            try:
                pairs.append((float(raw), float(ours), s.doc_id))
            except (TypeError, ValueError):
                bad += 1
        best: dict[str, Any] | None = None
        for scale in (1, 100):
            diffs = [(abs(f - scale * o), d) for f, o, d in pairs if not math.isnan(f)]
            worst = max(diffs, default=(math.nan, None), key=lambda t: t[0])
            if best is None or worst[0] < best["max_abs_diff"]:
                best = {"max_abs_diff": worst[0], "worst_doc_id": worst[1], "file_scale": scale}
        out[col] = {**(best or {}), "n_compared": len(pairs), "n_not_numeric": bad}
    return out


def reads_document(selection: dict[str, list[str]]) -> list[str]:
    """The chosen keys whose scorer reads the source document (the judge's prompts, BLANC)."""
    return [k for name, keys in selection.items() for k in keys
            if name == "judge" or k in ("blanc_help", "blanc_tune")]


def score_file(path: Path, explicit: dict[str, list[str]] | None, args: argparse.Namespace) -> dict:
    """Score one input with the chosen families (default: its task's); write its two outputs;
    return the summary."""
    if args.task:
        try:
            task_target(args.task)
        except UnknownTask as exc:
            raise ScoreError(f"--task: {exc}") from None
    named, recorded = task_from_filename(path), task_of_samples(path)
    task = args.task or recorded or named
    if not args.task and recorded and named and recorded != named:
        log.warning("%s: the file name says task %s, its samples say %s; scoring as %s", path, named, recorded,
                    recorded)
    selection = explicit or task_selection(task)
    loaded = read_input(path, args, task)
    samples = loaded.samples
    if loaded.format != "harness" and loaded.columns.get("document") is None and reads_document(selection):
        raise ScoreError(f"{path}: {', '.join(reads_document(selection))} read the source document and no "
                         f"document column was found (looked for {', '.join(DOCUMENT_COLUMNS)}; give "
                         f"--document-column)")
    benchmark, domain, why = target_of(task)
    benchmark = args.benchmark or benchmark or "adapteval"
    domain = args.domain or domain
    summary: dict[str, Any] = {"samples_file": str(path), "input_format": loaded.format, "task": task,
                               "benchmark": benchmark, "domain": domain, "n_samples": len(samples),
                               "filter": samples[0].filter, "metrics": {}, "skipped": {}, "record": {},
                               "settings": {}}
    if loaded.format != "harness":
        del summary["filter"]
        summary["columns"] = loaded.columns
        summary["skipped_rows"] = {"count": len(loaded.skipped_rows), "rows": loaded.skipped_rows}
    from custom_metrics.judge import JudgeStats

    judge_stats = JudgeStats()  # one tally for the file's judge calls: what failed and why
    contexts: dict[str, registry.Context] = {}
    for name, keys in selection.items():
        fam = registry.get(name)
        ctx = _context(name, keys, args, task, benchmark, domain)
        if "judge" in fam.needs:
            ctx.options = {**ctx.options, "judge_stats": judge_stats}
        if "judge" in fam.needs and ctx.judge is None:
            from custom_metrics.judge import notice_judge_skipped

            notice_judge_skipped(f"{name} metrics (rescore)")
            summary["skipped"][name] = NO_JUDGE
            continue
        summary["record"].update(_preflight(fam, ctx, args, why))
        summary["settings"].update(ctx.settings)
        contexts[name] = ctx

    batch = registry.Batch(predictions=[s.prediction for s in samples],
                           references=[s.reference for s in samples],
                           documents=[s.document for s in samples],
                           extras=[s.extras for s in samples])
    per_sample: list[dict] = [{"doc_id": s.doc_id, "id": s.id, "filter": s.filter,
                               "prediction": s.prediction} for s in samples]
    if loaded.format != "harness":
        for row in per_sample:
            del row["filter"]
    ci: dict[str, Any] = {}
    ci_why: dict[str, str] = {}
    for name, ctx in contexts.items():
        fam, keys = registry.get(name), selection[name]
        try:
            scored = fam.score(batch, ctx)
        except registry.ScorerUnavailable as exc:
            raise ScoreError(str(exc)) from None
        except ModelUnavailable as exc:  # a battery family whose model is missing: skipped, the others run
            if not fam.optional:
                raise
            summary["skipped"][name] = battery.skip_notice(fam, str(exc))["reason"]
            scored = battery.missing_values(fam, len(batch))
        # the chosen keys, plus per-document lists beyond the family's keys (fm_detail,
        # which explains the facet score and so goes with it)
        shown = keys + [k for k in scored if k not in fam.key_names and (k != "fm_detail" or "fm" in keys)]
        for i, row in enumerate(per_sample):
            row.update({k: scored[k][i] for k in shown})
        for key in keys:
            summary["metrics"][key] = registry.aggregate(fam, key, scored[key], ctx)
        if args.bootstrap > 0:
            fam_ci, fam_why = intervals(fam, keys, scored, ctx, args.bootstrap, args.seed)
            ci.update(fam_ci)
            ci_why.update(fam_why)
        record = dict(ctx.record)
        if name == "judge":
            summary["judge"] = judge_summary(ctx, scored)
        elif name == "fm":
            summary["fm_judge"] = {**record.pop("fm_judge", {}), "judge": ctx.judge.describe()}
        summary["record"].update(record)
    summary["bootstrap"] = {"resamples": args.bootstrap, "seed": args.seed, "confidence": 0.95,
                            "method": "percentile; documents resampled with replacement, the same resamples "
                                      "for every key"}
    summary["intervals"] = ci
    summary["intervals_not_computed"] = ci_why
    agree = agreement(samples, per_sample)
    if agree:
        summary["agreement"] = agree
    if judge_stats.items:
        summary["judge_calls"] = {**judge_stats.as_dict(), "summary": judge_stats.summary_line(),
                                  "any_unscored": bool(judge_stats.n_failed or judge_stats.empty_skipped)}

    # NaN (a metric that does not apply to a document) is written as null: strict JSON
    scores_path, summary_path = output_paths(path, Path(args.out) if args.out else None)
    # the rows are texts and scores, written as they are (masking could alter a document's text)
    write_atomically(scores_path, "".join(json.dumps(json_safe(row), ensure_ascii=False) + "\n"
                                          for row in per_sample))
    summary["outputs"] = {"scores": str(scores_path), "summary": str(summary_path)}
    summary = secrets.mask_obj(json_safe(summary))
    write_atomically(summary_path, json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n")
    return summary


def output_paths(path: Path, out_dir: Path | None) -> tuple[Path, Path]:
    """``<stem>.scores.jsonl`` and ``<stem>.summary.json`` next to the input (or in ``out_dir``)."""
    directory = out_dir or path.parent
    return directory / f"{path.stem}.scores.jsonl", directory / f"{path.stem}.summary.json"


def check_outputs(inputs: Sequence[Path], out_dir: Path | None, overwrite: bool) -> None:
    """Before anything is scored: no two inputs write the same file, and nothing an
    earlier run wrote (judge scores that were paid for) is replaced unless asked."""
    planned: dict[Path, Path] = {}
    for path in inputs:
        for out in output_paths(path, out_dir):
            key = out.resolve()
            if key in planned and planned[key] != path.resolve():
                raise ScoreError(f"{planned[key]} and {path} would both write {out}; score them into different "
                                 f"--out folders")
            planned[key] = path.resolve()
            if out.is_dir():
                raise ScoreError(f"{out} is a folder; the scores of {path} are written to a file of that name")
            if out.exists() and not overwrite:
                raise ScoreError(f"{out} already exists (an earlier rescore, perhaps with paid judge scores); pass "
                                 f"--overwrite to replace it, or --out another folder")


# =========================================================================== command line


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum rescore",
                                 description="Re-score lm-eval --log_samples files, or CSV / JSON-lines / JSON "
                                             "tables of predictions, with suite metrics.")
    ap.add_argument("samples", nargs="+", type=Path, metavar="INPUT",
                    help="samples_<task>_<timestamp>.jsonl file(s), or prediction tables (.csv, .tsv, .jsonl, "
                         ".json list) with prediction / reference (/ document) columns")
    ap.add_argument("--metrics",
                    help="comma list of metric families (" + ", ".join(registry.names())
                         + ") or single keys of them (e.g. rouge1, coherence, fm_vanilla, meteor); "
                           "default: the task's catalogue families")
    ap.add_argument("--task", help="suite task the predictions are for (benchmark, domain, default metrics); "
                                   "default: the one a samples file name names")
    ap.add_argument("--bootstrap", type=int, default=1000,
                    help="bootstrap resamples for the 95%% intervals (0 = none; default 1000)")
    ap.add_argument("--seed", type=int, default=1234, help="bootstrap seed (default 1234)")
    g = ap.add_argument_group("prediction tables (default: the conventional name present)")
    g.add_argument("--prediction-column", help="generated summary (prediction, output, generated)")
    g.add_argument("--reference-column", help="reference summary (summary, reference, target)")
    g.add_argument("--document-column", help="source document (document, article, source, text)")
    g.add_argument("--id-column", help="row id (id, doc_id; default: the row index)")
    ap.add_argument("--out", "--out-dir", dest="out", help="output folder (default: next to each input)")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace outputs an earlier rescore wrote (default: stop and say which)")
    ap.add_argument("--domain", help="domain for DVO vocabulary and judge prompts (default: the task's, "
                                     "from the catalogue)")
    ap.add_argument("--metadata", default="{}", type=lambda text: parse_metadata(text, "rescore"),
                    help="settings JSON as for lm_eval --metadata (flags below win over it)")
    ap.add_argument("--filter", help="filter key to score (default: the file's first)")
    ap.add_argument("--limit", type=int, help="score only the first N samples")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars (stderr) while scoring")
    g = ap.add_argument_group("BERTScore")
    g.add_argument("--bertscore-model", help="encoder (default: DOMSUM_BERTSCORE_MODEL, else roberta-large)")
    g.add_argument("--bertscore-layers", type=int)
    g.add_argument("--bertscore-batch-size", type=int, help="default 64")
    g = ap.add_argument_group("DVO")
    g.add_argument("--vocabulary", help="vocabulary file (default: VOCAB_DIR/<benchmark>/<domain>.tsv)")
    g.add_argument("--vocab-dir", help="vocabulary root (default: DOMSUM_VOCAB_DIR)")
    g.add_argument("--benchmark", help="benchmark under the vocabulary root (default: the task's, else adapteval)")
    g = ap.add_argument_group("judge (each falls back to the environment, as in the tasks)")
    g.add_argument("--judge-model", help="judge model (DOMSUM_JUDGE_MODEL)")
    g.add_argument("--judge-base-url", help="OpenAI-compatible endpoint (OPENAI_BASE_URL)")
    g.add_argument("--judge-concurrency", type=int, help="requests in flight (default: sized from the first request's latency)")
    g.add_argument("--judge-cache", help="SQLite cache path, or 'off' (DOMSUM_JUDGE_CACHE)")
    g.add_argument("--judge-logprobs", choices=("on", "off", "auto"))
    g.add_argument("--judge-n-samples", type=int, help="replies per item without logprobs (default 20)")
    g.add_argument("--max-document-words", type=int, help="truncate sources in judge prompts")
    g.add_argument("--fm-variant", choices=("zero", "few"),
                   help="FM alignment prompts: zero-shot rules (default) or with the paper's examples")
    return ap


def main(argv: list[str] | None = None) -> int:
    from custom_metrics.judge import JudgeError

    args = build_parser().parse_args(argv)
    args.metadata = with_flags(
        args.metadata, bertscore_model=args.bertscore_model, bertscore_layers=args.bertscore_layers,
        bertscore_batch_size=args.bertscore_batch_size, vocab_dir=args.vocab_dir,
        judge_model=args.judge_model, judge_base_url=args.judge_base_url,
        judge_concurrency=args.judge_concurrency, judge_cache=args.judge_cache,
        judge_logprobs=args.judge_logprobs, judge_n_samples=args.judge_n_samples,
        fm_variant=args.fm_variant, progress=False if args.no_progress else None)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        explicit = parse_metrics(args.metrics) if args.metrics is not None else None
        if explicit is not None and not explicit:
            raise ScoreError("--metrics names no metric")
        if args.bootstrap < 0:
            raise ScoreError("--bootstrap must be >= 0")
        check_outputs(args.samples, Path(args.out) if args.out else None, args.overwrite)
        for path in args.samples:
            summary = score_file(path, explicit, args)
            shown = {k: v for k, v in summary["metrics"].items() if isinstance(v, (int, float))}
            rows = summary.get("skipped_rows", {}).get("count")
            print(f"{path.name}: {summary['n_samples']} samples"
                  + (f" ({rows} rows with an empty prediction or reference skipped)" if rows else "") + "; "
                  + ", ".join(f"{k}={v:.4f}" for k, v in shown.items())
                  + (f"; skipped: {', '.join(summary['skipped'])}" if summary["skipped"] else ""))
            if summary.get("agreement"):
                print("  the file's own scores vs ours, max |diff|: " + ", ".join(
                    f"{k}={a['max_abs_diff']:.2g}" if a["max_abs_diff"] is not None else f"{k}=n/a"
                    for k, a in summary["agreement"].items()))
            calls = summary.get("judge_calls")
            if calls and calls["any_unscored"]:
                print(f"  judge: {calls['summary']}")
            print(f"  -> {summary['outputs']['scores']}\n  -> {summary['outputs']['summary']}")
    except (ScoreError, JudgeError, SettingError) as exc:
        print(f"rescore: error: {exc}", file=sys.stderr)
        return 2
    return 0

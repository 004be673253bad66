"""Reading meta-evaluation inputs: the metric table (FD release or long format) and
per-annotator ratings, into long tables of one row per (document, system).

Why one module: every check of the input (a repeated pair, a human score that is not a
number, a ratings file without its columns) happens here, before any statistic, and
fails with :class:`~custom_metrics.analysis.errors.MetaEvalError` naming the file and
rows; everything after reads clean numeric columns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from custom_metrics.analysis.errors import MetaEvalError

_FD_SUFFIX_SKIP = ("human", "human_list", "aspect")
RATING_COLUMNS = ("doc_id", "system", "annotator", "aspect", "rating")


def _read_records(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        return pd.read_csv(path).to_dict("records")
    stripped = text.lstrip()
    if stripped.startswith("["):
        return json.loads(stripped)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def detect_format(records: list[dict]) -> str:
    return "fd" if any(isinstance(r, dict) and any(str(k).endswith("_human") for k in r) for r in records) else "long"


def _num(v: Any) -> float:
    if v is None or isinstance(v, bool):
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def fd_to_long(records: list[dict]) -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per (paper, system) from the FD release format, plus counts."""
    systems: list[str] = []
    for r in records:
        for k in r:
            if k.endswith("_human") and k[: -len("_human")] not in systems and k[: -len("_human")]:
                systems.append(k[: -len("_human")])
    rows = []
    missing = 0
    for d, r in enumerate(records):
        doc = r.get("id", r.get("doc_id", d))
        for s in systems:
            if s not in r and f"{s}_human" not in r:
                missing += 1
                continue
            row: dict[str, Any] = {"doc_id": doc, "system": s, "reference": r.get("human") or "",
                                   "summary": r.get(s) if isinstance(r.get(s), str) else "",
                                   "human": _num(r.get(f"{s}_human"))}
            lst = r.get(f"{s}_human_list")
            if isinstance(lst, str):
                try:
                    lst = json.loads(lst)
                except ValueError:
                    lst = None
            row["human_list"] = lst if isinstance(lst, list) else None
            for k, v in r.items():
                if k.startswith(s + "_"):
                    metric = k[len(s) + 1:]
                    if metric in _FD_SUFFIX_SKIP or any(metric.startswith(x) for x in ("human_", "aspect")):
                        continue
                    if isinstance(v, (int, float)) and not isinstance(v, bool) or v is None:
                        # a metric prefix of a longer system name (e.g. "longt5" vs "longt5_block")
                        if any(k.startswith(o + "_") and len(o) > len(s) for o in systems):
                            continue
                        row[metric] = _num(v)
            rows.append(row)
    return pd.DataFrame(rows), {"systems": len(systems), "missing_cells": missing}


def rename_columns(df: pd.DataFrame, columns: Mapping[str, str] | None) -> pd.DataFrame:
    """``columns`` maps our names (doc_id, system, annotator, aspect, rating) to the file's."""
    if not columns:
        return df
    return df.rename(columns={theirs: ours for ours, theirs in columns.items() if theirs in df.columns})


def load_table(path: str | Path, fmt: str = "auto", human: str = "human",
               require_human: bool = True, columns: Mapping[str, str] | None = None) -> tuple[pd.DataFrame, dict]:
    """A long table (doc_id, system, reference, summary, human, metric columns) and counts.

    ``require_human=False`` (human ratings come from ``--ratings``) accepts a table
    without a human column; ``columns`` names the file's columns where they differ
    (:func:`rename_columns`).
    """
    path = Path(path)
    records = _read_records(path)
    fmt = detect_format(records) if fmt == "auto" else fmt
    if fmt == "fd":
        df, counts = fd_to_long(records)
    else:
        df = rename_columns(pd.DataFrame(records), columns)
        for col in ("doc_id", "system"):
            if col not in df.columns:
                raise MetaEvalError(f"long table {path} lacks the column {col!r}")
        if human in df.columns:
            df = df.rename(columns={human: "human"})
        elif require_human:
            raise MetaEvalError(f"no human column {human!r} in {path} "
                             "(name it with --human, or give per-annotator ratings with --ratings)")
        _check_long_table(df, path)
        n_docs, n_sys = df["doc_id"].nunique(), df["system"].nunique()
        counts = {"systems": n_sys,
                  "missing_cells": int(n_docs * n_sys - len(df.drop_duplicates(["doc_id", "system"])))}
    counts["format"] = fmt
    counts["rows"] = len(df)
    if "summary" in df.columns:
        counts["empty_summaries"] = int(sum(not (isinstance(s, str) and s.strip()) for s in df["summary"]))
    return df, counts


def _check_long_table(df: pd.DataFrame, path: Path) -> None:
    """One row per (document, system) and numeric human scores, or an error naming the rows.

    Why: a pair given twice would be correlated twice (a silent weight), and a human
    score such as ``"good"`` used to crash deep inside the correlation. An empty human
    score is allowed (that pair is left out where human scores are needed).
    """
    dup = df[df.duplicated(["doc_id", "system"], keep=False)]
    if len(dup):
        pairs = dup.groupby(["doc_id", "system"], sort=False).groups
        shown = "; ".join(f"document {d!r}, system {sy!r} on rows {', '.join(str(i + 1) for i in rows)}"
                          for (d, sy), rows in list(pairs.items())[:3])
        more = f" (and {len(pairs) - 3} more pairs)" if len(pairs) > 3 else ""
        raise MetaEvalError(f"{path}: {len(pairs)} (document, system) pairs appear more than once: "
                         f"{shown}{more}. Keep one row per pair (average repeated ratings first).")
    if "human" in df.columns:
        given = df["human"].map(lambda v: not (v is None or (isinstance(v, float) and math.isnan(v))
                                                or (isinstance(v, str) and not v.strip())))
        numbers = pd.to_numeric(df["human"].where(given), errors="coerce")
        bad = df.index[given & (numbers.isna() | df["human"].map(lambda v: isinstance(v, bool)))]
        if len(bad):
            shown = ", ".join(f"row {i + 1} ({df.at[i, 'human']!r})" for i in bad[:3])
            raise MetaEvalError(f"{path}: {len(bad)} human score(s) are not numbers: {shown}"
                             f"{' ...' if len(bad) > 3 else ''}. Fix them, or leave them empty to leave those "
                             f"pairs out.")
        df["human"] = numbers


def metric_columns(df: pd.DataFrame, exclude: Sequence[str] = ()) -> list[str]:
    skip = {"doc_id", "system", "reference", "summary", "human", "human_list", "article", *exclude}
    cols = []
    for c in df.columns:
        if c in skip:
            continue
        vals = pd.to_numeric(df[c], errors="coerce")
        if vals.notna().any():
            cols.append(c)
    return cols


def flatten_ratings(values: Sequence[Any]) -> list[Any]:
    """One annotator column's ratings as a flat list: a cell holding a list (JSON text or a
    list of facet ratings) gives one item per facet; anything not a number is NaN."""
    out: list[Any] = []
    for v in values:
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                v = _num(v)
        if isinstance(v, (list, tuple)):
            out.extend(_num(x) for x in v)
        else:
            out.append(_num(v))
    return out


def load_ratings(path: str | Path | pd.DataFrame,
                 columns: Mapping[str, str] | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Human ratings as a long table: doc_id, system, annotator, aspect, rating.

    ``system`` may be empty for an aspect rated once per sample (e.g. the speciality
    of a question); such a rating applies to every system's summary of that sample.
    ``annotator`` may be absent (one annotator). Non-numeric ratings are counted and
    dropped. A wide file (``annotator`` but no ``aspect`` and ``rating`` columns) has one
    row per annotator and summary and one column per aspect: every column other than
    doc_id, system and annotator. ``columns`` names the file's columns where they differ. A
    data frame (from a converter) is taken as it is.
    """
    if isinstance(path, pd.DataFrame):
        df, path = path.copy(), "the converted ratings"
    else:
        path = Path(path)
        df = rename_columns(pd.DataFrame(_read_records(path)), columns)
    if "aspect" not in df.columns and "rating" not in df.columns and {"doc_id", "annotator"} <= set(df.columns):
        keys = [c for c in ("doc_id", "system", "annotator") if c in df.columns]
        df = df.melt(id_vars=keys, var_name="aspect", value_name="rating")
    missing = [c for c in ("doc_id", "aspect", "rating") if c not in df.columns]
    if missing:
        raise MetaEvalError(f"ratings file {path} lacks the column(s) {missing}; "
                         f"expected {', '.join(RATING_COLUMNS)}")
    if "annotator" not in df.columns:
        df["annotator"] = "a1"
    if "system" not in df.columns:
        df["system"] = ""
    df["system"] = df["system"].fillna("").astype(str)
    df["annotator"] = df["annotator"].astype(str)
    df["aspect"] = df["aspect"].astype(str)
    df["rating"] = pd.to_numeric(df["rating"], errors="coerce")
    bad = int(df["rating"].isna().sum())
    df = df[df["rating"].notna()].copy()
    return df, {"rating_rows": len(df) + bad, "unusable_ratings": bad,
                "annotators": df["annotator"].nunique(), "aspects": df["aspect"].nunique()}


def load_inputs(path: str | Path, fmt: str = "auto", human: str = "human", ratings: str | Path | None = None,
                columns: Mapping[str, str] | None = None, annotators: str = "expert",
                scores: str | Path | None = None) -> tuple[pd.DataFrame, dict, pd.DataFrame | None]:
    """(metric table, counts, ratings or None) from any input meta-eval reads.

    ``fmt`` ``summeval`` / ``dialsummeval`` converts a release
    (:mod:`.converters`), whose ratings come with it; otherwise the table is
    :func:`load_table`'s and the ratings ``ratings``'s. ``scores`` adds metric
    columns: a long CSV/JSONL table joined on (doc_id, system), or for DialSummEval
    its ``models_eval_new`` folder.
    """
    from custom_metrics.analysis.meta_eval import converters

    rdf = None
    if fmt in converters.FORMATS:
        df, rdf = converters.summeval(path, annotators) if fmt == "summeval" else converters.dialsummeval(path)
        if df.empty:
            raise MetaEvalError(f"{path}: no summaries in the {fmt} file")
        _check_long_table(df, Path(path))
        counts = {"systems": int(df["system"].nunique()), "missing_cells": int(
            df["doc_id"].nunique() * df["system"].nunique() - len(df)), "format": fmt, "rows": len(df)}
    else:
        df, counts = load_table(path, fmt, human, require_human=ratings is None, columns=columns)
    if scores is not None:
        if Path(scores).is_dir():
            df = converters.dialsummeval_scores(scores, df)
        else:
            extra = rename_columns(pd.DataFrame(_read_records(Path(scores))), columns)
            _check_long_table(extra, Path(scores))
            df = df.merge(extra.drop(columns=[c for c in extra.columns if c in df.columns
                                              and c not in ("doc_id", "system")]),
                          on=["doc_id", "system"], how="left")
    if ratings is not None:
        if rdf is not None:
            raise MetaEvalError(f"a {fmt} file brings its own ratings; --ratings is for the fd and long formats")
        rdf = ratings
    if rdf is not None:
        rdf, rcounts = load_ratings(rdf, columns)
        counts.update(rcounts)
    return df, counts, rdf


__all__ = ["RATING_COLUMNS", "detect_format", "fd_to_long", "flatten_ratings", "load_inputs", "load_ratings",
           "load_table", "metric_columns", "rename_columns"]

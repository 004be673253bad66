"""Public human-judgment releases into meta-eval's two tables: the metric table (one row
per (document, system)) and the ratings (one row per annotator, aspect and summary).

Why converters instead of asking users to reshape: the releases nest their ratings
(a list of annotator dicts per summary) and keep metric scores apart from them, and a
hand-written reshaping is where annotators get swapped or summaries dropped. Each
converter checks the layout it takes and fails with
:class:`~custom_metrics.analysis.errors.MetaEvalError` naming the line.

* **summeval** — SummEval's ``model_annotations.aligned.jsonl`` (Fabbri et al. 2021):
  one JSON object per line with ``id`` (the CNN/DM story), ``model_id`` (``M0`` ...
  ``M23``), ``decoded`` (the summary), ``references`` (list; the first becomes
  ``reference``), optional ``text`` (the article, as ``article``), and
  ``expert_annotations`` (3) and ``turker_annotations`` (5): lists of
  ``{coherence, consistency, fluency, relevance}``. Annotators are named by position,
  ``expert1``-``expert3`` and ``turker1``-``turker5`` (the release does not name them, so a
  position is the same person only within a summary; alpha does not need more).
  ``annotators`` picks ``expert`` (the default, what SummEval reports), ``turker`` or
  ``all``. A ``metric_scores_1`` / ``metric_scores_11`` dict (the release's ``scored``
  files, scores against 1 or 11 references) becomes metric columns named by their leaf
  key (``rouge_1_f_score``, ``bert_score_f1``; ``ref11_`` before those against 11).
* **dialsummeval** — DialSummEval's ``annotation_campus/human_judgment.jsonl`` (Gao and
  Wan 2022): one line per (dialogue, model) with ``id`` (the SAMSum id), ``dialogue``
  (turns joined by ``|``, as ``article``), ``summary``, ``model_id`` (``A`` ... ``N``) and
  ``annotations``: a list of 3 dicts ``{consistency, relevance, fluency, coherence}``,
  the first annotator's first. Annotators are ``ann1``-``ann3``. Metric scores come from
  the release's ``reproduce/analysis/models_eval_new`` folder (``--scores DIR``,
  :func:`dialsummeval_scores`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from custom_metrics.analysis.errors import MetaEvalError

FORMATS = ("summeval", "dialsummeval")
SUMMEVAL_ANNOTATORS = ("expert", "turker", "all")
#: metric columns of the releases read here that rank lower-first, under the release's own
#: names: DialSummEval's ``ppl`` (GPT-2 perplexity; ``models_eval_new/<system>/metrics.csv``
#: and ``ppl.csv``, read by :func:`dialsummeval_scores`)
LOWER_IS_BETTER_COLUMNS = ("ppl",)


def _lines(path: Path) -> list[dict]:
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise MetaEvalError(f"{path}: line {i} is not JSON ({exc.msg})") from None
        if not isinstance(rec, dict):
            raise MetaEvalError(f"{path}: line {i} is not a JSON object")
        out.append(rec)
    return out


def _require(rec: dict, keys: tuple[str, ...], path: Path, i: int, layout: str) -> None:
    missing = [k for k in keys if k not in rec]
    if missing:
        raise MetaEvalError(f"{path}: line {i} lacks {', '.join(missing)}: not the {layout} layout "
                            f"(see docs/meta_eval.md)")


def _rating_rows(doc: Any, system: Any, names: list[str], annotations: Any, path: Path, i: int) -> list[dict]:
    if not isinstance(annotations, list) or not all(isinstance(a, dict) for a in annotations):
        raise MetaEvalError(f"{path}: line {i}: annotations must be a list of {{aspect: rating}} objects")
    return [{"doc_id": doc, "system": system, "annotator": name, "aspect": aspect, "rating": value}
            for name, ann in zip(names, annotations) for aspect, value in ann.items()]


def _flatten(prefix: str, value: dict, row: dict, path: str = "") -> None:
    """Numeric leaves of ``value`` into ``row`` as ``prefix + leaf key`` (the path joined
    with ``_`` where a leaf key repeats)."""
    for k, v in value.items():
        here = f"{path}_{k}" if path else str(k)
        if isinstance(v, dict):
            _flatten(prefix, v, row, here)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            row[prefix + (str(k) if prefix + str(k) not in row else here)] = float(v)


def summeval(path: str | Path, annotators: str = "expert") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(metric table, ratings) from SummEval's ``model_annotations.aligned.jsonl``."""
    if annotators not in SUMMEVAL_ANNOTATORS:
        raise MetaEvalError(f"annotators must be one of {', '.join(SUMMEVAL_ANNOTATORS)}, not {annotators!r}")
    path = Path(path)
    rows, ratings = [], []
    for i, rec in enumerate(_lines(path), 1):
        _require(rec, ("id", "model_id", "decoded", "expert_annotations"), path, i, "SummEval")
        refs = rec.get("references") or []
        row = {"doc_id": rec["id"], "system": rec["model_id"], "summary": rec["decoded"],
               "reference": refs[0] if isinstance(refs, list) and refs else ""}
        if isinstance(rec.get("text"), str):
            row["article"] = rec["text"]
        for key in ("metric_scores_1", "metric_scores_11"):
            if isinstance(rec.get(key), dict):
                _flatten("" if key == "metric_scores_1" else "ref11_", rec[key], row)
        rows.append(row)
        for kind in ("expert", "turker"):
            if annotators in (kind, "all"):
                anns = rec.get(f"{kind}_annotations") or []
                names = [f"{kind}{j + 1}" for j in range(len(anns))]
                ratings += _rating_rows(rec["id"], rec["model_id"], names, anns, path, i)
    return pd.DataFrame(rows), pd.DataFrame(ratings, columns=["doc_id", "system", "annotator", "aspect", "rating"])


def dialsummeval(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(metric table without metrics, ratings) from DialSummEval's ``human_judgment.jsonl``."""
    path = Path(path)
    rows, ratings = [], []
    for i, rec in enumerate(_lines(path), 1):
        _require(rec, ("id", "model_id", "summary", "annotations"), path, i, "DialSummEval")
        rows.append({"doc_id": str(rec["id"]), "system": rec["model_id"], "summary": rec["summary"],
                     "article": rec.get("dialogue", "")})
        names = [f"ann{j + 1}" for j in range(len(rec["annotations"] or []))]
        ratings += _rating_rows(str(rec["id"]), rec["model_id"], names, rec["annotations"], path, i)
    return pd.DataFrame(rows), pd.DataFrame(ratings, columns=["doc_id", "system", "annotator", "aspect", "rating"])


def dialsummeval_scores(folder: str | Path, table: pd.DataFrame) -> pd.DataFrame:
    """Metric columns for ``table`` from DialSummEval's ``models_eval_new`` folder.

    The folder holds ``dials.txt`` (one dialogue per line, in the order of every score
    file) and one sub-folder per ``model_id`` with CSV files, one row per dialogue and
    one column per metric (``rouge.csv``: ``rouge-1,rouge-2,rouge-l``; ``metrics.csv``
    all of them). Rows are matched to the judgments by the dialogue text (the judgment
    file's order differs from ``dials.txt``); a column name seen in an earlier CSV (in
    name order, ``metrics.csv`` first) is not read again.
    """
    folder = Path(folder)
    dials_file = folder / "dials.txt"
    if not dials_file.is_file():
        raise MetaEvalError(f"{folder} has no dials.txt: not DialSummEval's models_eval_new folder")
    dials = [d.strip() for d in dials_file.read_text(encoding="utf-8").splitlines() if d.strip()]
    line_of = {d: n for n, d in enumerate(dials)}
    doc_line: dict[str, int] = {}
    for doc, dialogue in table[["doc_id", "article"]].drop_duplicates("doc_id").itertuples(index=False):
        if str(dialogue).strip() not in line_of:
            raise MetaEvalError(f"{dials_file}: the dialogue of {doc!r} is not one of its lines")
        doc_line[doc] = line_of[str(dialogue).strip()]
    parts = []
    for system in table["system"].drop_duplicates():
        sub = folder / str(system)
        csvs = sorted(sub.glob("*.csv"), key=lambda p: (p.name != "metrics.csv", p.name))
        if not csvs:
            raise MetaEvalError(f"{sub} holds no score CSV for system {system!r}")
        frame = pd.DataFrame(index=range(len(dials)))
        for csv in csvs:
            scores = pd.read_csv(csv)
            if len(scores) != len(dials):
                raise MetaEvalError(f"{csv} has {len(scores)} rows, dials.txt {len(dials)} dialogues")
            for col in scores.columns:
                if col not in frame.columns:
                    frame[col] = pd.to_numeric(scores[col], errors="coerce")
        frame["doc_id"] = [None] * len(dials)
        for doc, n in doc_line.items():
            frame.at[n, "doc_id"] = doc
        parts.append(frame.dropna(subset=["doc_id"]).assign(system=system))
    scores = pd.concat(parts, ignore_index=True)
    return table.merge(scores, on=["doc_id", "system"], how="left")


__all__ = ["FORMATS", "LOWER_IS_BETTER_COLUMNS", "SUMMEVAL_ANNOTATORS", "dialsummeval", "dialsummeval_scores", "summeval"]

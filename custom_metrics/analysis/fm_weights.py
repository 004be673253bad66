"""FM's facet weights fitted to human scores: least squares of the overall score on the facets.

Source: the Facet-aware Metric paper, Section 4.2: "one annotator assigned overall scores
to each summary. These scores were used to derive the weights of individual components
through linear fitting, resulting in weights of [0.1, 0.3, 0.3, 0.3] and a mean squared
error of 0.005". The components are the four facets in FM's order (background, method,
result, conclusion), each scored as rating / scale maximum (Eq. 1); those are the weights
:func:`custom_metrics.judge.fm.fm_aggregate` uses unless the setting ``fm_weights`` names
others.

The fit
-------
``y ≈ X w (+ b)``: ``X`` the per-summary facet fractions (n x 4), ``y`` the overall human
scores on the same 0-1 scale. Default: the paper's form, **no intercept and weights
summing to 1**. Why the sum: FM divides by the sum of the weights of the facets a
reference has, so only weights that sum to 1 give, on a summary with every facet, the
total the fit describes; the paper's weights sum to 1.0 and it prints no intercept.
Options: ``intercept`` (a constant term; FM has none, so such weights describe your data
but FM cannot reproduce the fit), ``sum_to_one=False`` (free least squares) and
``nonneg`` (every weight >= 0: :func:`scipy.optimize.nnls` for the free fit; with an
intercept or the sum constraint, the exact optimum over the facets' supports — the
non-negative least-squares optimum is the least-squares fit on the facets it keeps, and
with four facets all 15 supports are tried). Reported: the weights, the intercept, MSE
(residual sum of squares / n), R² (1 - RSS / the total sum of squares about the mean),
n, the rank of the facet matrix, and the MSE the paper's weights give on the same rows.

Input (:func:`read_rows`): the ``(where, record)`` lines of CSV or JSON-lines files, read by
the caller (the command reads them as every table a command takes is read:
:func:`lm_eval_tasks.data.user_files.table_lines`), one summary per row, in one of three layouts,
told apart per row: four facet columns (``background``, ``method``, ``result``,
``conclusion``, or the names given) beside a human-score column; FM's ``fm_details`` rows
(``fractions`` [4], as a run with the setting ``fm_details`` writes them), with the human scores from a second file
joined on the document id; the ScholarSum / FD release (``{system}_human_list`` and
``{system}_human``, one row per system of each paper). Rows FM or the annotators did not
score (an ``fm_details`` row whose ``failure`` is set, a release system whose list and total
are null) are skipped and counted (``not_scored``). A facet that is empty, null, NaN
or 0 is one the reference lacks (FM's convention): FM renormalises the other weights for
such a summary, which the four-weight linear model does not describe, so the row is
skipped and counted (``skipped``), never filled in. A value that is not a number, out of
range, or a column that is not there is an :class:`AnalysisError` naming file, line and
field.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from custom_metrics.analysis.errors import AnalysisError
from custom_metrics.judge.fm import FACET_SCALES, FACET_WEIGHTS, FACETS

#: how a facet value is given: a fraction (rating / scale maximum, as FM combines them) or the rating itself
SCALES = ("fraction", "rating")


class FitError(AnalysisError):
    """An input the facet-weight fit cannot use; the message names the file, line and field."""


@dataclass
class Rows:
    """The fit's input: facet fractions, human scores, where each row came from, and the skips."""

    X: np.ndarray
    y: np.ndarray
    where: list[str]
    read: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: {"missing_facet": 0, "not_scored": 0})


#: the ``(where, record)`` lines of one file; ``where`` names the file and line
Lines = Iterable[tuple[str, Any]]


def _objects(lines: Lines) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The lines' records, each a JSON object (a CSV row is one)."""
    for where, rec in lines:
        if not isinstance(rec, Mapping):
            raise FitError(f"{where}: a JSON object per line is expected, got {type(rec).__name__}")
        yield where, rec


def _number(value: Any, where: str, name: str) -> float | None:
    """``value`` as a float; None when empty (``""``, null, NaN); not a number: :class:`FitError`."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise FitError(f"{where}: field {name!r} is not a number: {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise FitError(f"{where}: field {name!r} is not a number: {value!r}") from None
    if math.isinf(number):
        raise FitError(f"{where}: field {name!r} is not a finite number: {value!r}")
    return None if math.isnan(number) else number


def _fractions(values: Sequence[Any], names: Sequence[str], where: str, scale: str) -> list[float] | None:
    """The four facet fractions, or None when the reference lacks a facet (empty or 0)."""
    out = []
    for facet, name, value in zip(FACETS, names, values):
        x = _number(value, where, name)
        if x is None or x == 0:
            return None
        top = FACET_SCALES[facet][1]
        if scale == "rating":
            if not FACET_SCALES[facet][0] <= x <= top:
                raise FitError(f"{where}: field {name!r} = {x:g} is outside the {facet} scale "
                               f"{FACET_SCALES[facet][0]}-{top}")
            x /= top
        elif not 0 < x <= 1:
            raise FitError(f"{where}: field {name!r} = {x:g} is not a fraction in (0, 1] (ratings on the "
                           f"paper's scales are read with scale='rating')")
        out.append(x)
    return out


def _human_table(lines: Lines, id_column: str, human: str) -> dict[str, tuple[Any, str]]:
    """document id -> (human score, where) from the file joined to ``fm_details`` rows."""
    table: dict[str, tuple[Any, str]] = {}
    for where, rec in _objects(lines):
        for name in (id_column, human):
            if name not in rec:
                raise FitError(f"{where}: no field {name!r}")
        key = str(rec[id_column])
        if key in table:
            raise FitError(f"{where}: document id {key!r} again (first at {table[key][1]})")
        table[key] = (rec[human], where)
    return table


def _row_items(rec: Mapping[str, Any], where: str, facets: Sequence[str], human: str,
               joined: Mapping[str, tuple[Any, str]] | None, id_column: str
               ) -> Iterator[tuple[str, Sequence[Any] | None, list[str], Any, str, str]]:
    """(kind, facet values or None for a failed FM row, their field names, human value, its
    field name, where) of each summary of one record."""
    listed = [f"fractions[{i}]" for i in range(len(FACETS))]
    if "fractions" in rec:  # fm_details
        if joined is None and human not in rec:
            raise FitError(f"{where}: an fm_details row has no human score; give the human scores' file "
                           f"(joined on {id_column!r})")
        if joined is not None:
            key = str(rec.get(id_column))
            if key not in joined:
                raise FitError(f"{where}: document id {key!r} has no human score in the joined file")
            score, _ = joined[key]
        else:
            score = rec[human]
        fr = rec["fractions"]
        if rec.get("failure") is not None or fr is None:
            yield "fm_details", None, listed, score, human, where
            return
        if not isinstance(fr, list) or len(fr) != len(FACETS):
            raise FitError(f"{where}: field 'fractions' must be a list of {len(FACETS)} numbers")
        yield "fm_details", fr, listed, score, human, where
        return
    systems = [k[: -len("_human_list")] for k in rec if k.endswith("_human_list")]
    if systems:  # the ScholarSum / FD release
        for s in systems:
            lst = rec[f"{s}_human_list"]
            if lst is None and rec.get(f"{s}_human") is None:
                yield "fd", None, [], None, f"{s}_human", where  # a system without a summary here
                continue
            if isinstance(lst, str):
                try:
                    lst = json.loads(lst)
                except ValueError:
                    lst = None
            if not isinstance(lst, list) or len(lst) != len(FACETS):
                raise FitError(f"{where}: field '{s}_human_list' must be a list of {len(FACETS)} numbers")
            if f"{s}_human" not in rec:
                raise FitError(f"{where}: no field '{s}_human' beside '{s}_human_list'")
            yield ("fd", lst, [f"{s}_human_list[{i}]" for i in range(len(FACETS))], rec[f"{s}_human"],
                   f"{s}_human", where)
        return
    for name in (*facets, human):
        if name not in rec:
            raise FitError(f"{where}: no field {name!r} (fields present: {', '.join(map(str, rec))}; name the "
                           "columns with the facet and human options)")
    yield "table", [rec[f] for f in facets], list(facets), rec[human], human, where


def read_rows(files: Iterable[Lines], facets: Sequence[str] = FACETS, human: str = "human",
              human_lines: Lines | None = None, id_column: str = "id", scale: str = "fraction",
              human_max: float = 1.0) -> Rows:
    """The fit's rows from the lines of ``files`` (module docstring: layouts, skips, errors).

    ``facets``: the four facet columns of a plain table, in FM's order; ``human``: its
    human-score column (also of ``human_lines``, a file joined to ``fm_details`` rows on
    ``id_column``); ``scale``: ``fraction`` or ``rating`` (the paper's 1-3 / 1-4 scales,
    divided by their maximum); ``human_max``: the human scores are divided by it (5 for
    scores on 1-5), as the fit needs them on the facets' 0-1 scale.
    """
    if len(facets) != len(FACETS):
        raise FitError(f"four facet columns are needed ({', '.join(FACETS)}), got {len(facets)}")
    if scale not in SCALES:
        raise FitError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if not human_max > 0:
        raise FitError(f"the human scores' maximum must be > 0, got {human_max!r}")
    joined = _human_table(human_lines, id_column, human) if human_lines is not None else None
    X: list[list[float]] = []
    y: list[float] = []
    rows = Rows(np.empty((0, 4)), np.empty(0), [])
    for lines in files:
        for at, rec in _objects(lines):
            for kind, values, names, score, score_name, where in _row_items(
                    rec, at, facets, human, joined, id_column):
                rows.read += 1
                if values is None:
                    rows.skipped["not_scored"] += 1
                    continue
                fr = _fractions(values, names, where, scale if kind == "table" else "fraction")
                h = _number(score, where, score_name)
                if h is None:
                    raise FitError(f"{where}: no human score (field {score_name!r} is empty)")
                if fr is None:
                    rows.skipped["missing_facet"] += 1
                    continue
                if h / human_max > 1 + 1e-9:  # FM's score is at most 1: such a fit would describe the wrong scale
                    raise FitError(f"{where}: human score {h:g} is above 1 once divided by the human scores' "
                                   f"maximum {human_max:g}; the fit needs them on FM's 0-1 scale (--human-max 5 "
                                   f"for scores on 1-5)")
                X.append(fr)
                y.append(h / human_max)
                rows.where.append(where)
    rows.X, rows.y = np.asarray(X, dtype=float).reshape(-1, 4), np.asarray(y, dtype=float)
    return rows


def _solve(X: np.ndarray, y: np.ndarray, support: Sequence[int], intercept: bool,
           sum_to_one: bool) -> tuple[np.ndarray, float]:
    """Least squares on the facets in ``support`` (the others weigh 0): (weights [4], intercept)."""
    w = np.zeros(X.shape[1])
    cols = list(support)
    if sum_to_one:  # w_last = 1 - sum(others): y - x_last = sum_i w_i (x_i - x_last) (+ b)
        last, rest = cols[-1], cols[:-1]
        target = y - X[:, last]
        A = X[:, rest] - X[:, [last]]
    else:
        rest, target, A = cols, y, X[:, cols]
    if intercept:
        A = np.column_stack([A, np.ones(len(y))])
    coef = np.linalg.lstsq(A, target, rcond=None)[0] if A.shape[1] else np.zeros(0)
    w[rest] = coef[: len(rest)]
    if sum_to_one:
        w[cols[-1]] = 1.0 - w[rest].sum()
    return w, float(coef[-1]) if intercept else 0.0


def _nonneg(X: np.ndarray, y: np.ndarray, intercept: bool, sum_to_one: bool) -> tuple[np.ndarray, float]:
    """The non-negative optimum: NNLS for the free fit, else the best feasible support (module docstring)."""
    if not intercept and not sum_to_one:
        from scipy.optimize import nnls

        return nnls(X, y)[0], 0.0
    best: tuple[float, np.ndarray, float] | None = None
    k = X.shape[1]
    supports = [s for r in range(0 if intercept and not sum_to_one else 1, k + 1)
                for s in itertools.combinations(range(k), r)]
    for support in supports:
        w, b = _solve(X, y, support, intercept, sum_to_one)
        if (w < -1e-12).any():
            continue
        w = np.clip(w, 0.0, None)
        rss = float(np.sum((y - X @ w - b) ** 2))
        if best is None or rss < best[0] - 1e-15:
            best = (rss, w, b)
    assert best is not None  # a single facet with weight 1 (or all zero with an intercept) is feasible
    return best[1], best[2]


def fit_weights(X: np.ndarray, y: np.ndarray, *, intercept: bool = False, sum_to_one: bool = True,
                nonneg: bool = False) -> dict[str, Any]:
    """The facet weights of ``y ≈ X w (+ b)`` (module docstring), with MSE, R², n and the paper's
    weights' MSE on the same rows. Fewer rows than parameters: :class:`FitError`."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    n, k = X.shape if X.ndim == 2 else (0, len(FACETS))
    params = k + int(intercept) - int(sum_to_one)
    if n < max(params, 1):
        raise FitError(f"the fit has {params} free parameters and {n} usable row(s): give more rows")
    if nonneg:
        w, b = _nonneg(X, y, intercept, sum_to_one)
    else:
        w, b = _solve(X, y, range(k), intercept, sum_to_one)
    resid = y - X @ w - b
    rss = float(resid @ resid)
    tss = float(np.sum((y - y.mean()) ** 2))
    paper = np.array([FACET_WEIGHTS[f] for f in FACETS])
    return {
        "weights": {f: float(v) for f, v in zip(FACETS, w)},
        "intercept": b if intercept else None,
        "mse": rss / n,
        "r2": 1.0 - rss / tss if tss > 0 else None,
        "n": int(n),
        "rank": int(np.linalg.matrix_rank(X)),
        "form": {"intercept": intercept, "sum_to_one": sum_to_one, "nonneg": nonneg},
        "paper_weights": {f: FACET_WEIGHTS[f] for f in FACETS},
        "mse_paper_weights": float(np.mean((y - X @ paper) ** 2)),
        "usable_by_fm": not intercept and bool((w >= 0).all()) and bool(w.any()),
    }


__all__ = ["SCALES", "FitError", "Lines", "Rows", "fit_weights", "read_rows"]

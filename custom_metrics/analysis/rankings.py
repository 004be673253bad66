"""Expert ranking studies: several annotators rank the summaries several systems wrote of
the same documents; how often each system is ranked near the top, and how far the
annotators agree.

The study this follows is AdaptEval's manual evaluation (Section 3.3), quoted:

    "We ask the annotators to rank the generated summaries according to how well the
    vocabulary and style of the outputs adapt to the scientific domain. [...] Therefore,
    we focus on the relative performance of the models; that is, their agreement on an
    output being ranked higher than the other. The final Cohen's κ inter-annotator
    agreement is 0.4. The results show that the annotators consistently rated the outputs
    of both Llama2 7b and 70b in the two-shot scenario among the top two positions of the
    ranking—60% and 52%, respectively—whereas the fine-tuned models were the least
    preferred—only 12% (Llama2 7b) and 16% (Pegasus-X) rated on top."

Input: one record per (annotator, document, system) with the system's ``rank`` in that
annotator's ranking of that document; a lower rank is better (1 = best); equal ranks are
ties; only the order of the numbers matters, so dense (1, 1, 2) and competition
(1, 1, 3) numbering mean the same ranking. :func:`read_rankings` checks the records:

* a missing or empty field, or a rank that is not a finite number: an error naming the
  file, line and field;
* a (annotator, document, system) given twice: an error naming both lines;
* an annotator who ranked a document without every system ranked on it (by any
  annotator): an error, not a skip. Why: a share's denominator and the pairs kappa is
  computed on would silently change with a partial ranking, and a dropped row is more
  often an export fault than a choice. A document ranked by only some annotators is kept
  (counted in ``counts``): its rankings count in the shares, and the pairs of annotators
  who both ranked it in kappa and W.

Computed (:func:`analyse`):

* **top-k share** of a system: the share of all rankings (every annotator's ranking of
  every document) that place it in the top ``k``, i.e. with fewer than ``k`` systems
  ranked strictly better (its competition rank is at most ``k``; a tie at the boundary
  counts as inside, as "among the top two positions" reads). Beside it, the **share of
  documents on which every annotator** who ranked it placed it in the top ``k`` (the
  paper's "consistently rated ... among the top two positions" may mean either; it does not
  say, and its four numbers sum to 140 %, which the pooled shares of four systems cannot:
  those sum to k x 100 % = 200 % without ties);
* **pairwise preference agreement**: for every document and every pair of its systems
  (A, B), each annotator's label is "A ranked higher", "B ranked higher" or "tie" (a third
  category, not dropped: dropping a pair one annotator tied would hide a disagreement; the
  paper reports no ties, where both choices agree). **Cohen's kappa** between two
  annotators over the items both labelled: ``(p_o - p_e) / (1 - p_e)``, ``p_o`` the share
  of items with the same label, ``p_e = sum_c p_A(c) p_B(c)`` from each annotator's label
  shares (Cohen 1960; :func:`custom_metrics.analysis.stats.agreement.kappa_of_table`). With
  more than two annotators, every pair, and their mean (Light's kappa, Light 1971);
* **Kendall's W** with the tie correction (Kendall & Babington Smith 1939; Siegel &
  Castellan 1988, eq. 9.18): for ``m`` rankings of ``n`` systems, ranks turned into
  mid-ranks, ``R_i`` the sum of system ``i``'s ranks,
  ``W = 12 S / (m^2 (n^3 - n) - m sum_j T_j)``, ``S = sum_i (R_i - m (n + 1) / 2)^2``,
  ``T_j = sum over tie groups of ranking j of (t^3 - t)``. Per document (its annotators'
  rankings), their mean over documents, and once over all rankings as raters (whether
  documents and annotators agree on one order of the systems; only where every ranking
  holds the same systems).

Intervals: 95 % percentile bootstrap over documents (:mod:`.stats.bootstrap`'s resampling,
seeded), not a Wilson interval: the rankings of one document by two annotators are not
independent draws, and resampling documents keeps them together (the same resamples for
every share, kappa and W of a call).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from custom_metrics.analysis.errors import AnalysisError
from custom_metrics.analysis.stats.agreement import kappa_of_table
from custom_metrics.analysis.stats.bootstrap import percentile_interval, resample_indices

#: the fields of a record
FIELDS = ("annotator", "document", "system", "rank")
#: the pairwise labels, in the order of kappa's tables (A, B: a pair's systems in sorted order)
LABELS = ("A ranked higher", "tie", "B ranked higher")
#: bad lines a message shows in full
SHOWN = 10


class RankingError(AnalysisError):
    """A rankings file an analysis cannot use; the message names the file, line and field."""


@dataclass(frozen=True)
class Ranking:
    """One annotator's ranking of one document: system -> rank (lower is better); ``where``:
    the file and line of its first record."""

    annotator: str
    document: str
    ranks: Mapping[str, float]
    where: str


def _field(rec: Mapping[str, Any], name: str, where: str) -> tuple[Any, str | None]:
    """(value, None) or (None, why the field is unusable)."""
    if name not in rec or rec[name] is None or (isinstance(rec[name], str) and not rec[name].strip()):
        return None, f"{where}: missing field {name!r}" + ("" if name in rec else f" (fields present: {sorted(rec)})")
    value = rec[name]
    if name != "rank":
        if isinstance(value, (dict, list, bool)):
            return None, f"{where}: field {name!r} must be text or a number, got {type(value).__name__}"
        return str(value).strip(), None
    if isinstance(value, bool):
        return None, f"{where}: field 'rank' is not a number: {value!r}"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None, f"{where}: field 'rank' is not a number: {value!r}"
    if not math.isfinite(number):
        return None, f"{where}: field 'rank' is not a finite number: {value!r}"
    return number, None


def _raise(problems: list[str], source: str) -> None:
    """One :class:`RankingError` for every problem found: one line, or the first :data:`SHOWN` and a count."""
    if problems:
        shown = problems[:SHOWN] + ([f"... and {len(problems) - SHOWN} more"] if len(problems) > SHOWN else [])
        raise RankingError(shown[0] if len(problems) == 1 else
                           f"{source}: {len(problems)} bad lines:\n  " + "\n  ".join(shown))


def read_rankings(lines: Iterable[tuple[str, Any]], source: str = "the rankings") -> tuple[list[Ranking], dict]:
    """The rankings of ``lines`` (``(where, record)``, where = ``"FILE, line N"``) and counts.

    Every bad line is found in one pass; :class:`RankingError` says each (the first
    :data:`SHOWN`, then how many more), one line apiece (module docstring for the rules).
    """
    problems: list[str] = []
    seen: dict[tuple[str, str, str], str] = {}
    grouped: dict[tuple[str, str], dict[str, float]] = {}
    first: dict[tuple[str, str], str] = {}
    n_lines = 0
    for where, rec in lines:
        n_lines += 1
        if not isinstance(rec, Mapping):
            problems.append(f"{where}: expected an object with {', '.join(FIELDS)}, got {type(rec).__name__}")
            continue
        values = {}
        for name in FIELDS:
            values[name], why = _field(rec, name, where)
            if why:
                problems.append(why)
                break
        else:
            key = (values["annotator"], values["document"], values["system"])
            if key in seen:
                problems.append(f"{where}: field 'system': annotator {key[0]!r} already ranked system {key[2]!r} "
                                f"of document {key[1]!r} at {seen[key].rsplit(', ', 1)[-1]}; one rank per "
                                "(annotator, document, system)")
                continue
            seen[key] = where
            grouped.setdefault(key[:2], {})[key[2]] = values["rank"]
            first.setdefault(key[:2], where)
    _raise(problems, source)  # a ranking a bad line left short is no second fault
    doc_systems: dict[str, set[str]] = {}
    for (_, doc), ranks in grouped.items():
        doc_systems.setdefault(doc, set()).update(ranks)
    for (ann, doc), ranks in grouped.items():
        missing = sorted(doc_systems[doc] - set(ranks))
        if missing:
            by = next(a for (a, d), r in grouped.items() if d == doc and missing[0] in r)
            problems.append(f"{first[(ann, doc)]}: field 'system': annotator {ann!r} ranked document {doc!r} without "
                            f"system(s) {', '.join(map(repr, missing))} (ranked there by annotator {by!r}); an "
                            "annotator ranks every system of a document it ranks")
    _raise(problems, source)
    if not grouped:
        raise RankingError(f"{source}: no rankings (expected records with {', '.join(FIELDS)})")
    rankings = [Ranking(a, d, dict(r), first[(a, d)]) for (a, d), r in grouped.items()]
    annotators_per_doc = {d: sum(1 for (_, dd) in grouped if dd == d) for d in doc_systems}
    counts = {"lines": n_lines, "rankings": len(rankings), "documents": len(doc_systems),
              "annotators": len({a for a, _ in grouped}), "systems": len(set().union(*doc_systems.values())),
              "rankings_with_ties": sum(len(set(r.ranks.values())) < len(r.ranks) for r in rankings),
              "documents_with_one_annotator": sum(n == 1 for n in annotators_per_doc.values())}
    return rankings, counts


def strictly_better(ranks: Mapping[str, float]) -> dict[str, int]:
    """For each system, how many systems of the ranking are ranked strictly better."""
    values = list(ranks.values())
    return {s: sum(v < r for v in values) for s, r in ranks.items()}


def preference(ranks: Mapping[str, float], a: str, b: str) -> int:
    """0 when ``a`` is ranked higher (a lower rank), 2 when ``b`` is, 1 for a tie (:data:`LABELS`)."""
    return 1 if ranks[a] == ranks[b] else (0 if ranks[a] < ranks[b] else 2)


def kendall_terms(ranks: Sequence[Sequence[float]] | np.ndarray) -> tuple[np.ndarray, int, float]:
    """``(R, m, T)`` of ``m`` rankings (rows) of the same systems (columns): ``R`` the sums of
    the systems' mid-ranks (tied systems share the mean of their positions), ``T`` the sum
    over rankings and their tie groups of ``t^3 - t``. Sums, so that the terms of several
    documents add up (a bootstrap resample adds those of the documents it draws)."""
    r = np.asarray(ranks, dtype=float)
    if r.ndim != 2 or not r.size:
        return np.zeros(r.shape[-1] if r.ndim == 2 else 0), 0, 0.0
    less = (r[:, None, :] < r[:, :, None]).sum(-1)  # per ranking and system: systems ranked strictly better
    equal = (r[:, None, :] == r[:, :, None]).sum(-1)  # ... and ranked equal, itself included (t)
    mid = less + (equal + 1) / 2  # mid-rank: tied systems share the mean of their positions
    return mid.sum(0), r.shape[0], float((equal ** 2 - 1).sum())  # each of a tie's t systems adds t^2 - 1


def w_of_terms(rank_sums: np.ndarray, m: Any, ties: Any) -> Any:
    """Kendall's W from :func:`kendall_terms` (arrays of them: one W per row), with the tie
    correction: ``12 S / (m^2 (n^3 - n) - m T)``, ``S = sum_i (R_i - m (n + 1) / 2)^2``;
    NaN for fewer than two rankings or systems, or when every ranking ties every system."""
    rank_sums, m, ties = np.asarray(rank_sums, dtype=float), np.asarray(m, dtype=float), np.asarray(ties, dtype=float)
    n = rank_sums.shape[-1]
    s = ((rank_sums - m[..., None] * (n + 1) / 2) ** 2).sum(-1)
    denominator = m ** 2 * (n ** 3 - n) - m * ties
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where((m < 2) | (n < 2) | (denominator <= 0), np.nan, 12 * s / denominator)
    return float(w) if w.ndim == 0 else w


def kendall_w(ranks: Sequence[Sequence[float]] | np.ndarray) -> float:
    """Kendall's W of ``m`` rankings (rows) of the same ``n`` systems (columns), with the tie
    correction (module docstring)."""
    return w_of_terms(*kendall_terms(ranks))


def _interval(dist: np.ndarray, alpha: float) -> list[float | None]:
    lo, hi = percentile_interval(dist, alpha)
    return [None if math.isnan(lo) else lo, None if math.isnan(hi) else hi]


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class _Tally:
    """The per-document counts every statistic (and every bootstrap resample) sums."""

    docs: list[str]
    systems: list[str]
    annotators: list[str]
    by_doc: dict[str, dict[str, Ranking]]
    top: np.ndarray  # documents x systems: rankings placing the system in the top k
    held: np.ndarray  # documents x systems: rankings holding the system
    agreed: np.ndarray  # documents x systems: 1 where every ranking of the document places it in the top k
    pairs: list[tuple[str, str]]  # annotator pairs
    tables: np.ndarray  # pairs x documents x 3 x 3: the pair's label table on the document
    w_doc: np.ndarray  # documents: Kendall's W among the document's rankings
    terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # per document (R, m, T), where all hold the same systems

    @property
    def present(self) -> np.ndarray:
        return self.held > 0


def _tally(rankings: Sequence[Ranking], top_k: int) -> _Tally:
    docs = list(dict.fromkeys(r.document for r in rankings))  # the file's order
    systems = list(dict.fromkeys(s for r in rankings for s in r.ranks))
    annotators = list(dict.fromkeys(r.annotator for r in rankings))
    di, si = {d: i for i, d in enumerate(docs)}, {s: i for i, s in enumerate(systems)}
    by_doc: dict[str, dict[str, Ranking]] = {}
    for r in rankings:
        by_doc.setdefault(r.document, {})[r.annotator] = r
    top, held = np.zeros((len(docs), len(systems))), np.zeros((len(docs), len(systems)))
    for r in rankings:
        for s, better in strictly_better(r.ranks).items():
            top[di[r.document], si[s]] += better < top_k
            held[di[r.document], si[s]] += 1
    agreed = ((top == held) & (held > 0)).astype(float)
    pairs = list(itertools.combinations(annotators, 2))
    tables = np.zeros((len(pairs), len(docs), 3, 3))
    for p, (a, b) in enumerate(pairs):
        for d in docs:
            ra, rb = by_doc[d].get(a), by_doc[d].get(b)
            for x, y in itertools.combinations(sorted(ra.ranks), 2) if ra and rb else ():
                tables[p, di[d], preference(ra.ranks, x, y), preference(rb.ranks, x, y)] += 1
    terms = [kendall_terms([[x.ranks[s] for s in systems if s in x.ranks] for _, x in sorted(by_doc[d].items())])
             for d in docs]
    same_systems = len({tuple(sorted(r.ranks)) for r in rankings}) == 1  # then the documents' terms add up
    return _Tally(docs, systems, annotators, by_doc, top, held, agreed, pairs, tables,
                  np.array([w_of_terms(*t) for t in terms]),
                  tuple(np.array([t[i] for t in terms]) for i in range(3)) if same_systems else None)


def _resampled(t: _Tally, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Each statistic on each of ``n_boot`` resamples of documents (rows; a column per
    system or annotator pair), all on the same resamples."""
    dists: dict[str, list] = {"share": [], "agreed": [], "kappa": [], "w_mean": [], "w_all": []}
    for block in resample_indices(len(t.docs), n_boot, seed) if n_boot > 0 else ():
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN resample of W: NaN, left out
            dists["share"].append(t.top[block].sum(1) / t.held[block].sum(1))
            dists["agreed"].append(t.agreed[block].sum(1) / t.present[block].sum(1))
            dists["w_mean"].append(np.nanmean(t.w_doc[block], axis=1))
        dists["kappa"].append(np.moveaxis(kappa_of_table(t.tables[:, block].sum(2)), 0, -1))  # rows x pairs
        if t.terms is not None:
            dists["w_all"].append(w_of_terms(*(x[block].sum(1) for x in t.terms)))
    return {k: np.concatenate(v) if v else np.empty((0, 0)) for k, v in dists.items()}


def _column(dist: np.ndarray, j: int) -> np.ndarray:
    return dist[:, j] if dist.ndim == 2 and dist.shape[1] > j else np.empty(0)


def _shares(t: _Tally, dist: dict[str, np.ndarray], alpha: float) -> list[dict[str, Any]]:
    with np.errstate(invalid="ignore", divide="ignore"):
        share, agreed_share = t.top.sum(0) / t.held.sum(0), t.agreed.sum(0) / t.present.sum(0)
    return [{"system": s, "rankings": int(t.held[:, j].sum()), "in_top_k": int(t.top[:, j].sum()),
             "share": _num(share[j]), "ci": _interval(_column(dist["share"], j), alpha),
             "documents": int(t.present[:, j].sum()), "documents_all_annotators_top_k": int(t.agreed[:, j].sum()),
             "all_annotators_share": _num(agreed_share[j]),
             "all_annotators_ci": _interval(_column(dist["agreed"], j), alpha)} for j, s in enumerate(t.systems)]


def _agreement(t: _Tally, dist: dict[str, np.ndarray], alpha: float) -> dict[str, Any]:
    kappas = []
    for p, (a, b) in enumerate(t.pairs):
        table = t.tables[p].sum(0)
        n = table.sum()
        kappas.append({"annotators": [a, b], "items": int(n), "kappa": _num(kappa_of_table(table)),
                       "ci": _interval(_column(dist["kappa"], p), alpha),
                       "observed_agreement": _num(np.trace(table) / n) if n else None,
                       "chance_agreement": _num(float((table.sum(0) * table.sum(1)).sum()) / n ** 2) if n else None,
                       "table": {"rows": a, "columns": b, "labels": list(LABELS),
                                 "counts": table.astype(int).tolist()}})
    finite = [k["kappa"] for k in kappas if k["kappa"] is not None]
    if len(kappas) > 1 and dist["kappa"].size:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_ci = _interval(np.nanmean(dist["kappa"], axis=1), alpha)
    else:
        mean_ci = kappas[0]["ci"] if kappas else [None, None]
    return {"labels": "for every document and pair (A, B) of its systems (sorted by name): " + ", ".join(LABELS)
                      + "; ties are a category of their own",
            "pairs": kappas, "kappa_mean": float(np.mean(finite)) if finite else None, "kappa_mean_ci": mean_ci,
            **({} if kappas else {"why": "one annotator: no pair of annotators to compare"})}


def _kendall(t: _Tally, dist: dict[str, np.ndarray], alpha: float, n_rankings: int) -> dict[str, Any]:
    finite = t.w_doc[np.isfinite(t.w_doc)]
    overall = _num(w_of_terms(*(x.sum(0) for x in t.terms))) if t.terms is not None else None
    why = ("the rankings do not all hold the same systems" if t.terms is None else
           "fewer than two rankings, or every ranking ties every system" if overall is None else None)
    return {"per_document": [{"document": d, "rankings": len(t.by_doc[d]), "w": _num(w)}
                             for d, w in zip(t.docs, t.w_doc)],
            "mean": _num(float(finite.mean())) if len(finite) else None,
            "mean_ci": _interval(dist["w_mean"].ravel(), alpha),
            "documents": int(len(finite)), "undefined": int(len(t.docs) - len(finite)),
            "all_rankings": {"w": overall, "ci": _interval(dist["w_all"].ravel(), alpha), "rankings": n_rankings,
                             **({"why": why} if why else {})}}


def analyse(rankings: Sequence[Ranking], top_k: int = 2, n_boot: int = 1000, seed: int = 1234,
            alpha: float = 0.05) -> dict[str, Any]:
    """Top-k shares, pairwise kappa and Kendall's W of ``rankings`` (:func:`read_rankings`),
    with percentile bootstrap intervals over documents, as a JSON-ready dict."""
    if top_k < 1:
        raise RankingError(f"--top-k must be at least 1, got {top_k}")
    tally = _tally(rankings, top_k)
    if top_k >= len(tally.systems):  # every system is in the top k of every ranking: shares of 100 % say nothing
        raise RankingError(f"--top-k {top_k} puts each of the {len(tally.systems)} systems in the top {top_k} of "
                           f"every ranking; choose a K below {len(tally.systems)}")
    dist = _resampled(tally, n_boot, seed)
    return {"top_k": top_k, "annotators": tally.annotators, "systems": tally.systems,
            "interval": {"method": "percentile bootstrap over documents", "level": 1 - alpha, "resamples": n_boot,
                         "seed": seed},
            "shares": _shares(tally, dist, alpha), "agreement": _agreement(tally, dist, alpha),
            "kendall_w": _kendall(tally, dist, alpha, len(rankings))}


__all__ = ["FIELDS", "LABELS", "Ranking", "RankingError", "analyse", "kendall_w", "kendall_terms", "preference",
           "read_rankings", "strictly_better", "w_of_terms"]

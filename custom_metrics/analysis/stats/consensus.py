"""One human score per item from several annotators' ratings: mean, median, or the
majority filter.

Why more than the mean: studies differ in how they pool their annotators, and a
correlation can only be compared with a study's own number when the human scores are
formed the same way. DialSummEval (Gao and Wan, NAACL 2022) filters noise: when two of
the three annotators give the same rating and the third differs, the item's score is
the shared rating; otherwise it is the mean of the three. :data:`CONSENSUS_METHODS`:

* ``mean`` — the mean of the ratings given (missing ones left out);
* ``median`` — their median;
* ``majority`` — the value given by more than half of the annotators who rated the
  item, else the mean. With three annotators that is exactly DialSummEval's rule (two
  agreeing outvote the third; three different ratings give the mean); with two, agreeing
  ratings are their mean anyway. Ratings are compared after rounding to 6 decimals, as
  :mod:`.agreement` compares categories.

The mean is a sum divided by a count over each item's own ratings, so integer ratings
give the same float whatever the annotators' order.
"""

from __future__ import annotations

import numpy as np

CONSENSUS_METHODS = ("mean", "median", "majority")


def consensus(ratings: np.ndarray, method: str = "mean") -> np.ndarray:
    """One score per row of ``ratings`` (items x annotators, NaN where not rated).

    An item nobody rated is NaN. Raises ``ValueError`` for an unknown ``method``.
    """
    r = np.asarray(ratings, dtype=float)
    if r.ndim != 2:
        raise ValueError("ratings must be a 2-D array: one row per item, one column per annotator")
    if method not in CONSENSUS_METHODS:
        raise ValueError(f"unknown consensus {method!r}; expected one of {', '.join(CONSENSUS_METHODS)}")
    given = np.isfinite(r)
    n = given.sum(1)
    total = np.where(given, r, 0.0).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    if method == "mean":
        return mean
    if method == "median":
        out = np.full(len(r), np.nan)
        rows = n > 0
        if rows.any():
            out[rows] = np.nanmedian(r[rows], axis=1)
        return out
    rounded = np.round(r, 6)
    # how many annotators of the item gave the same rating as each annotator (NaN never equal)
    same = (rounded[:, :, None] == rounded[:, None, :]).sum(2)
    best = same.argmax(1)
    top = same[np.arange(len(r)), best]
    majority = 2 * top > n
    return np.where(majority, r[np.arange(len(r)), best], mean)


__all__ = ["CONSENSUS_METHODS", "consensus"]

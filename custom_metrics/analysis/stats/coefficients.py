"""Batched, weighted correlation coefficients: Pearson, Spearman, Kendall tau-b and tau-c.

Why weighted: a bootstrap resample draws systems and documents with replacement, so it
is the original (system, document) cells each taken a whole number of times. Carrying
those multiplicities as weights gives exactly the coefficient of the expanded resample
(what ``nlpstats`` computes after indexing) without building it, and lets a thousand
resamples be one array operation: ``x`` and ``y`` are ``(..., k)`` arrays (or ``(k,)``
shared by every resample), ``w`` the ``(..., k)`` multiplicities (0 = not in the
resample, or a pair with a missing value), and the result has shape ``w.shape[:-1]``.

* Pearson — weighted moments.
* Spearman — Pearson of mid-ranks, where an item of weight ``w`` after ``C`` weight of
  smaller values and in a tie group of total weight ``T`` has rank ``C + (T + 1) / 2``
  (scipy's ``rankdata(method="average")`` on the expanded sample).
* Kendall tau-b / tau-c — ``S = sum_{i<j} w_i w_j sign(dx) sign(dy)`` over pairs of
  distinct items; copies of one item are tied in both. tau-b = ``S / sqrt((n0 - n1)(n0 - n2))``
  and tau-c = ``2 S / (N^2 (m - 1) / m)`` (``m`` the fewer distinct values of the two
  sides), as ``scipy.stats.kendalltau(variant="b"|"c")``. Values shared by every
  resample (a bootstrap): one matrix product for all resamples (:data:`SHARED_MAX`);
  otherwise pairwise for up to :data:`PAIRWISE_MAX` items, and above that scipy per
  resample on the expanded sample (O(k log k) each).

A coefficient is NaN with fewer than :data:`~.correlation.MIN_PAIRS` pairs (counting
copies) or when a side does not vary (scipy's NaN for constant input).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from custom_metrics.analysis.stats.correlation import MIN_PAIRS

COEFFICIENTS = ("pearson", "spearman", "kendall_b", "kendall_c")
#: above this many items, Kendall goes through scipy per resample (the pairwise arrays
#: would be k^2 / 2 per resample)
PAIRWISE_MAX = 200
#: Kendall of values shared by every resample (a bootstrap) goes through one k x k matrix
#: product up to this many items (the matrix takes k^2 * 4 bytes)
SHARED_MAX = 6000
#: significant digits means are rounded to: equal multisets of values give equal means
#: whatever the summation order (3.5 vs 3.5000000000000004), so a tie stays a tie
MEAN_DIGITS = 12


def round_sig(a: np.ndarray | float, digits: int = MEAN_DIGITS) -> np.ndarray:
    """``a`` rounded to ``digits`` significant digits (NaN and 0 kept)."""
    a = np.asarray(a, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.floor(np.log10(np.abs(a)))
    mag = np.where(np.isfinite(mag), mag, 0.0)
    scale = 10.0 ** (digits - 1 - mag)
    return np.round(a * scale) / scale


def tie_safe_mean(values) -> float:
    """The mean of ``values`` (NaN left out) correctly rounded (``math.fsum``), then to
    :data:`MEAN_DIGITS` significant digits: the same multiset gives the same float."""
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return float(round_sig(math.fsum(vals) / len(vals))) if vals else math.nan


def _clean(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values broadcast to the weights' shape, 0 where the weight is 0 (NaN * 0 is NaN)."""
    w = np.asarray(w, dtype=float)
    x = np.broadcast_to(np.asarray(x, dtype=float), w.shape)
    return np.where(w > 0, x, 0.0), w


def _undefined(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """True where there are fewer than MIN_PAIRS weighted pairs or a side is constant."""
    present = w > 0
    const = [np.where(present, v, np.inf).min(-1) == np.where(present, v, -np.inf).max(-1) for v in (x, y)]
    return (w.sum(-1) < MIN_PAIRS) | const[0] | const[1]


def _pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    n = w.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = x - (w * x).sum(-1, keepdims=True) / n
        dy = y - (w * y).sum(-1, keepdims=True) / n
        r = (w * dx * dy).sum(-1) / np.sqrt((w * dx * dx).sum(-1) * (w * dy * dy).sum(-1))
    return np.clip(r, -1.0, 1.0)


def _tie_groups(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sort order, first and last sorted position of each item's tie group) along the last axis."""
    order = np.argsort(x, axis=-1, kind="stable")
    xs = np.take_along_axis(x, order, -1)
    k = x.shape[-1]
    idx = np.arange(k)
    new = np.ones(xs.shape, dtype=bool)
    new[..., 1:] = xs[..., 1:] != xs[..., :-1]
    last = np.ones(xs.shape, dtype=bool)
    last[..., :-1] = new[..., 1:]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    end = np.flip(np.minimum.accumulate(np.flip(np.where(last, idx, k - 1), -1), axis=-1), -1)
    return order, start, end


def _pearson_shared(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson of values shared by every resample: the six weighted moments of all
    resamples are one matrix product (values centred first, against cancellation)."""
    xc = x - x.mean(-1, keepdims=True)
    yc = y - y.mean(-1, keepdims=True)
    feats = np.stack([np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc], -1)  # (..., k, 6)
    lead = x.ndim - 1
    mom = np.matmul(np.moveaxis(w, 0, lead) if lead else w, feats)
    mom = np.moveaxis(mom, lead, 0) if lead else mom
    n, sx, sy, sxx, syy, sxy = np.moveaxis(mom, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip((sxy - sx * sy / n) / np.sqrt((sxx - sx * sx / n) * (syy - sy * sy / n)), -1.0, 1.0)


def _gather(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``take_along_axis(a, idx, -1)`` for an index shared by every resample (``a`` has one
    leading resample axis more than ``idx``): one flat ``take``, no broadcast index array."""
    if a.ndim != idx.ndim + 1:
        return np.take_along_axis(a, np.broadcast_to(idx, a.shape), -1)
    k = idx.shape[-1]
    flat = (idx.reshape(-1, k) + k * np.arange(idx.size // k)[:, None]).ravel()
    return np.take(a.reshape(len(a), -1), flat, axis=1).reshape(a.shape)


def midranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks of every item in the expanded sample (module docstring), shape of ``w``.

    ``x`` may have fewer leading axes than ``w`` (values shared by every resample): it is
    then sorted and grouped once, and each resample costs a gather and a cumulative sum.
    """
    x = np.asarray(x, dtype=float)
    w = np.asarray(w, dtype=float)
    order, start, end = _tie_groups(x)
    cum = np.cumsum(_gather(w, order), -1)
    before = np.where(start > 0, _gather(cum, np.maximum(start - 1, 0)), 0.0)
    total = _gather(cum, end) - before
    return _gather(before + (total + 1) / 2, np.argsort(order, axis=-1))


def _distinct(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Number of distinct values among the items of positive weight."""
    s = np.sort(np.where(w > 0, x, np.nan), -1)
    fin = np.isfinite(s)
    return fin[..., 0].astype(int) + (fin[..., 1:] & (s[..., 1:] != s[..., :-1])).sum(-1)


def _kendall_pairwise(x: np.ndarray, y: np.ndarray, w: np.ndarray, variant: str) -> np.ndarray:
    k = w.shape[-1]
    i, j = np.triu_indices(k, 1)
    sx = np.sign(x[..., i] - x[..., j])
    sy = np.sign(y[..., i] - y[..., j])
    ww = w[..., i] * w[..., j]
    s = (ww * sx * sy).sum(-1)
    n = w.sum(-1)
    if variant == "c":
        m = np.minimum(_distinct(x, w), _distinct(y, w))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.clip(2 * s / (n ** 2 * (m - 1) / m), -1.0, 1.0)
    self_ties = (w * (w - 1) / 2).sum(-1)
    n0 = n * (n - 1) / 2
    n1 = (ww * (sx == 0)).sum(-1) + self_ties
    n2 = (ww * (sy == 0)).sum(-1) + self_ties
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(s / np.sqrt((n0 - n1) * (n0 - n2)), -1.0, 1.0)


def _group_weights(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Total weight of each tie group of ``v`` (shared by the rows of ``w``), one entry per
    group (0 elsewhere), shape of ``w``."""
    order, start, end = _tie_groups(v)
    cum = np.cumsum(_gather(w, order), -1)
    before = np.where(start > 0, _gather(cum, np.maximum(start - 1, 0)), 0.0)
    return np.where(start == np.arange(w.shape[-1]), _gather(cum, end) - before, 0.0)


def _kendall_shared(x: np.ndarray, y: np.ndarray, w: np.ndarray, variant: str) -> np.ndarray:
    """Kendall of values shared by every resample (``x``, ``y`` with fewer leading axes
    than ``w``): ``S = sum_i w_i (w @ M)_i`` with the fixed ``M[j, i] = [x_j < x_i] sign(y_i - y_j)``,
    one matrix product for all resamples (exact in float32: whole numbers below 2^24)."""
    lead = x.ndim - 1
    m = ((x[..., None, :] > x[..., :, None]) * np.sign(y[..., None, :] - y[..., :, None])).astype(np.float32)
    wt = np.moveaxis(w, 0, lead) if lead else w  # (*docs, resamples, k)
    s = (np.matmul(wt.astype(np.float32), m).astype(float) * wt).sum(-1)
    s = np.moveaxis(s, lead, 0) if lead else s
    n = w.sum(-1)
    gx, gy = _group_weights(x, w), _group_weights(y, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        if variant == "c":
            k = np.minimum((gx > 0).sum(-1), (gy > 0).sum(-1))
            return np.clip(2 * s / (n ** 2 * (k - 1) / k), -1.0, 1.0)
        n0 = n * (n - 1) / 2
        return np.clip(s / np.sqrt((n0 - (gx * (gx - 1) / 2).sum(-1)) * (n0 - (gy * (gy - 1) / 2).sum(-1))), -1.0, 1.0)


def _kendall_scipy(x: np.ndarray, y: np.ndarray, w: np.ndarray, variant: str) -> np.ndarray:
    from scipy import stats as sps

    flat_x, flat_y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
    flat_w = np.rint(w.reshape(-1, w.shape[-1])).astype(int)
    out = np.empty(len(flat_w))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r, (a, b, c) in enumerate(zip(flat_x, flat_y, flat_w)):
            out[r] = sps.kendalltau(np.repeat(a, c), np.repeat(b, c), variant=variant)[0]
    return out.reshape(w.shape[:-1])


def weighted_corr(x, y, w, coefficient: str) -> np.ndarray:
    """``coefficient`` of ``x`` and ``y`` with multiplicities ``w`` over the last axis."""
    if coefficient not in COEFFICIENTS:
        raise ValueError(f"coefficient must be one of {', '.join(COEFFICIENTS)}, got {coefficient!r}")
    raw = [np.asarray(v, dtype=float) for v in (x, y)]
    w = np.asarray(w, dtype=float)
    w = np.broadcast_to(w, np.broadcast_shapes(raw[0].shape, raw[1].shape, w.shape))
    x, w = _clean(x, w)
    y, _ = _clean(y, w)
    bad = _undefined(x, y, w)
    shared = raw[0].ndim == raw[1].ndim < w.ndim  # values the same in every resample
    if coefficient == "pearson" and shared:
        r = _pearson_shared(np.nan_to_num(raw[0]), np.nan_to_num(raw[1]), w)
    elif coefficient == "pearson":
        r = _pearson(x, y, w)
    elif coefficient == "spearman":
        # a side shared by every row (k,) is sorted once; NaN cells carry no weight
        rx, ry = (midranks(np.nan_to_num(v) if v.ndim < w.ndim else c, w) for v, c in zip(raw, (x, y)))
        r = _pearson(rx, ry, w)
    elif shared and w.shape[-1] <= SHARED_MAX and w.sum(-1).max(initial=0) < 2 ** 24:
        r = _kendall_shared(np.nan_to_num(raw[0]), np.nan_to_num(raw[1]), w, coefficient[-1])
    elif w.shape[-1] <= PAIRWISE_MAX:
        r = _kendall_pairwise(x, y, w, coefficient[-1])
    else:
        r = _kendall_scipy(x, y, w, coefficient[-1])
    return np.where(bad, np.nan, r)


__all__ = ["COEFFICIENTS", "MEAN_DIGITS", "PAIRWISE_MAX", "midranks", "round_sig", "tie_safe_mean",
           "weighted_corr"]

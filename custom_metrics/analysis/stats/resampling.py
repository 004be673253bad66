"""Resampling statistics of metric-human correlations (Deutsch, Dror & Roth, TACL 2021).

Why a module of its own: a correlation computed on one sample of systems and documents
says nothing of how it would move on another; the literature now answers "is metric A
better than B?" with these resampling methods, implemented by the same authors in
``nlpstats`` (our tests compare every number with it on shared inputs and resamples):

* :func:`bootstrap_ci` — percentile 95% interval from resampling ``systems``,
  ``documents`` or ``both`` (the paper's recommendation) with replacement;
* :func:`permutation_test` — the paired permutation test of ``H0: r(A, human) =
  r(B, human)``: standardise A, B and the human matrix, swap A's and B's scores for a
  random half of the systems, documents or both, and count how often ``|r(A*) - r(B*)|``
  reaches the observed ``|r(A) - r(B)|`` (p = count / resamples, nlpstats' convention;
  differences within :data:`TIE_TOLERANCE` count as reaching it);
* :func:`williams_test` — Williams' t-test for two dependent correlations sharing the
  human side (as ``psych::r.test`` and nlpstats), the parametric second option.

Vectorised: a bootstrap resample is a vector of multiplicities per system and per
document (:func:`bootstrap_counts`), so every resample of a level is one weighted array
operation (:func:`.levels.level_corr`); the permutation test builds its swapped matrices
as one ``(resamples, systems, documents)`` array per block. Resamples come from
``numpy.random.default_rng(seed)``: the same seed gives the same resamples, and every
metric of one table is resampled identically (paired intervals).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from custom_metrics.analysis.stats.bootstrap import percentile_interval
from custom_metrics.analysis.stats.coefficients import PAIRWISE_MAX, round_sig, weighted_corr
from custom_metrics.analysis.stats.levels import Matrices, level_corr, system_means

RESAMPLING = ("systems", "documents", "both")
TESTS = ("permutation", "williams")
#: differences of correlations closer than this count as equal in the permutation test:
#: Kendall's tau takes few values, and 0.6 - 0.4667 vs 0.7333 - 0.6 differ by float noise
TIE_TOLERANCE = 1e-12
#: array cells one block of resamples may hold (bounds memory, not results)
BLOCK_CELLS = 3_000_000


#: glibc's mallopt parameters (malloc.h) and the values :func:`kept_heap` sets
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's upper bound on 64-bit
_TRIM_KEPT = 1 << 30
_TRIM_DEFAULT = 128 * 1024


def _libc() -> object | None:
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


@contextlib.contextmanager
def kept_heap() -> Iterator[None]:
    """Resample with the memory of one block's arrays reused by the next (glibc only).

    Why: every block of resamples allocates and frees arrays of megabytes. glibc serves
    those from fresh ``mmap`` pages or trims them off the heap when freed, so the next
    block faults every page in again: half of the meta-evaluation benchmark's CPU time
    was system time spent on page faults (390,000 per run). Inside this context blocks
    up to 32 MB come from the heap and freed memory stays there (about 20,000 faults,
    system time under 5 %); on leaving, the heap is trimmed, so nothing is held after.
    Elsewhere (macOS, musl) it does nothing.
    """
    libc = _libc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)  # type: ignore[attr-defined]
    libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_KEPT)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_DEFAULT)  # type: ignore[attr-defined]
        libc.malloc_trim(0)  # type: ignore[attr-defined]


def bootstrap_indices(m: int, n: int, n_boot: int, method: str, seed) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Drawn system indices ``(n_boot, m)`` and document indices ``(n_boot, n)`` (None
    for the side ``method`` keeps), from ``default_rng(seed)``: systems first."""
    if method not in RESAMPLING:
        raise ValueError(f"resampling must be one of {', '.join(RESAMPLING)}, got {method!r}")
    rng = np.random.default_rng(seed)
    sys_idx = rng.integers(0, m, size=(n_boot, m)) if method in ("systems", "both") else None
    doc_idx = rng.integers(0, n, size=(n_boot, n)) if method in ("documents", "both") else None
    return sys_idx, doc_idx


def _counts(idx: np.ndarray | None, size: int) -> np.ndarray | None:
    if idx is None:
        return None
    out = np.zeros((len(idx), size))
    np.add.at(out, (np.arange(len(idx))[:, None], idx), 1.0)
    return out


def bootstrap_counts(m: int, n: int, n_boot: int, method: str, seed) -> tuple[np.ndarray | None, np.ndarray | None]:
    """How many times each system ``(n_boot, m)`` and document ``(n_boot, n)`` is drawn."""
    sys_idx, doc_idx = bootstrap_indices(m, n, n_boot, method, seed)
    return _counts(sys_idx, m), _counts(doc_idx, n)


def _block(m: int, n: int, level: str, coefficient: str) -> int:
    """Resamples per block: the pairwise Kendall of the summary level holds m^2/2 per document."""
    per = m * n * (max(m, 2) // 2 if coefficient.startswith("kendall") and level == "summary" else 1)
    if coefficient.startswith("kendall") and level == "global" and m * n <= PAIRWISE_MAX:
        per = (m * n) ** 2 // 2
    return max(1, BLOCK_CELLS // max(per, 1))


def bootstrap_distribution(mats: Matrices, level: str, coefficient: str, cs: np.ndarray | None,
                           cd: np.ndarray | None) -> np.ndarray:
    """The coefficient of every resample given by the multiplicities ``cs`` / ``cd``."""
    rows = len(cs if cs is not None else cd)
    size = _block(*mats.X.shape, level, coefficient)
    out = [level_corr(mats.X, mats.Z, mats.V, level, coefficient,
                      None if cs is None else cs[i:i + size], None if cd is None else cd[i:i + size])
           for i in range(0, rows, size)]
    return np.concatenate(out) if out else np.empty(0)


def bootstrap_ci(mats: Matrices, level: str, coefficient: str, cs: np.ndarray | None, cd: np.ndarray | None,
                 alpha: float = 0.05) -> tuple[float, float]:
    """Percentile ``1 - alpha`` interval; n/a when fewer than ``max(10, resamples // 10)``
    resamples give a defined coefficient (e.g. three systems resampled)."""
    if cs is None and cd is None:
        return math.nan, math.nan
    dist = bootstrap_distribution(mats, level, coefficient, cs, cd)
    if np.isfinite(dist).sum() < max(10, len(dist) // 10):
        return math.nan, math.nan
    return percentile_interval(dist, alpha)


@dataclass(frozen=True)
class PairTest:
    """One metric-vs-metric test: the observed difference of correlations and its p-value."""

    delta: float
    p_value: float
    test: str
    resamples: int


def _standardise(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    vals = a[v]
    sd = vals.std() if len(vals) else 0.0
    return np.where(v, (a - vals.mean()) / sd if sd > 0 else a - (vals.mean() if len(vals) else 0.0), 0.0)


def _swapped_pearson(X: np.ndarray, Y: np.ndarray, Z: np.ndarray, V: np.ndarray, level: str,
                     swap: np.ndarray) -> np.ndarray:
    """``r(X*, Z) - r(Y*, Z)`` for a block of swap masks ``(b, m, n)``, Pearson at the global or
    system level: swapping adds ``swap * (Y - X)`` to X, so the moments (global) or system
    sums of every swapped matrix are one product with the fixed differences."""
    D = np.where(V, Y - X, 0.0)
    if level == "system":
        cnt = V.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = np.einsum("bmn,mn->bm", swap.astype(float), D) / cnt
            mx = round_sig((V * X).sum(1) / cnt + shift)
            my = round_sig((V * Y).sum(1) / cnt - shift)
        mz, _ = system_means(Z, V)
        ws = (cnt > 0).astype(float)
        return weighted_corr(np.nan_to_num(mx), mz, ws, "pearson") - weighted_corr(np.nan_to_num(my), mz, ws, "pearson")
    v = V.ravel().astype(float)
    x, y, z = (np.where(V, a, 0.0).ravel() for a in (X, Y, Z))
    d = D.ravel()
    moves = swap.reshape(len(swap), -1).astype(float) @ np.stack([d, y * y - x * x, d * z], 1)  # (b, 3)
    n, sz, szz = v.sum(), (v * z).sum(), (v * z * z).sum()
    out = []
    for sign, base in ((1.0, x), (-1.0, y)):
        sx = (v * base).sum() + sign * moves[:, 0]
        sxx = (v * base * base).sum() + sign * moves[:, 1]
        sxz = (v * base * z).sum() + sign * moves[:, 2]
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append((sxz - sx * sz / n) / np.sqrt((sxx - sx * sx / n) * (szz - sz * sz / n)))
    return out[0] - out[1]


def permutation_test(X: np.ndarray, Y: np.ndarray, Z: np.ndarray, V: np.ndarray, level: str, coefficient: str,
                     method: str = "both", n_resamples: int = 1000, seed=0) -> PairTest:
    """Two-sided paired permutation test of ``r(X, Z) - r(Y, Z)`` (module docstring).

    ``V``: the cells scored by both metrics and the human. Swap masks are drawn as
    ``rng.random((resamples, m)) > 0.5`` for systems, then ``(resamples, n)`` for
    documents; with ``both`` a cell is swapped when exactly one of its system and
    document is (a system swap then a document swap, as nlpstats applies them).
    """
    if method not in RESAMPLING:
        raise ValueError(f"permutation must be one of {', '.join(RESAMPLING)}, got {method!r}")
    X, Y, Z = (_standardise(a, V) for a in (X, Y, Z))
    observed = float(level_corr(X, Z, V, level, coefficient) - level_corr(Y, Z, V, level, coefficient))
    if not math.isfinite(observed) or n_resamples <= 0:
        return PairTest(observed, math.nan, "permutation", 0)
    m, n = X.shape
    rng = np.random.default_rng(seed)
    sys_mask = rng.random((n_resamples, m)) > 0.5 if method in ("systems", "both") else np.zeros((n_resamples, m), bool)
    doc_mask = rng.random((n_resamples, n)) > 0.5 if method in ("documents", "both") else np.zeros((n_resamples, n), bool)
    size = _block(m, n, level, coefficient)
    hits = used = 0
    for i in range(0, n_resamples, size):
        swap = sys_mask[i:i + size, :, None] ^ doc_mask[i:i + size, None, :]
        if coefficient == "pearson" and level in ("global", "system"):
            diff = _swapped_pearson(X, Y, Z, V, level, swap)
        else:
            xp, yp = np.where(swap, Y, X), np.where(swap, X, Y)
            diff = level_corr(xp, Z, V, level, coefficient) - level_corr(yp, Z, V, level, coefficient)
        diff = diff[np.isfinite(diff)]
        hits += int((np.abs(diff) >= abs(observed) - TIE_TOLERANCE).sum())
        used += len(diff)
    return PairTest(observed, hits / used if used else math.nan, "permutation", used)


def williams_test(X: np.ndarray, Y: np.ndarray, Z: np.ndarray, V: np.ndarray, level: str,
                  coefficient: str) -> PairTest:
    """Two-sided Williams t-test of ``r(X, Z) = r(Y, Z)`` with ``r(X, Y)`` known.

    ``n``: scored systems (system level), the most systems scored on one document
    (summary level) or scored pairs (global), as nlpstats; correlations in absolute value.
    """
    from scipy import stats as sps

    r12, r13, r23 = (abs(float(level_corr(a, b, V, level, coefficient))) for a, b in ((X, Z), (Y, Z), (X, Y)))
    n = {"system": int(V.any(1).sum()), "summary": int(V.sum(0).max(initial=0)), "global": int(V.sum())}[level]
    if n <= 3 or not all(map(math.isfinite, (r12, r13, r23))):
        return PairTest(r12 - r13, math.nan, "williams", 0)
    det = 1 - r12 ** 2 - r23 ** 2 - r13 ** 2 + 2 * r12 * r23 * r13
    av = (r12 + r13) / 2
    cube = (1 - r23) ** 3
    with np.errstate(invalid="ignore", divide="ignore"):
        t2 = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / ((2 * (n - 1) / (n - 3)) * det + av ** 2 * cube))
    return PairTest(r12 - r13, float(sps.t.sf(abs(t2), n - 3) * 2), "williams", 0)


def significance_matrix(mats: Mapping[str, Matrices], level: str, coefficient: str, *, test: str = "permutation",
                        method: str = "both", n_resamples: int = 1000, seed: int = 0,
                        progress: bool | None = False) -> pd.DataFrame:
    """p-value of "row metric and column metric correlate equally with the human scores"
    for every two metrics (NaN on the diagonal); each pair over the cells all three scored."""
    from custom_metrics.progress import bar

    names = list(mats)
    out = pd.DataFrame(np.nan, index=names, columns=names)
    pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    with bar(len(pairs), f"meta-eval: {test} tests", unit="pair", enabled=progress) as ticks, kept_heap():
        for i, j in pairs:
            a, b = mats[names[i]], mats[names[j]]
            v = a.V & b.V
            if test == "williams":
                res = williams_test(a.X, b.X, a.Z, v, level, coefficient)
            else:
                res = permutation_test(a.X, b.X, a.Z, v, level, coefficient, method, n_resamples, [seed, i, j])
            out.iloc[i, j] = out.iloc[j, i] = res.p_value
            ticks.update(1)
    return out


__all__ = ["RESAMPLING", "TESTS", "PairTest", "bootstrap_ci", "bootstrap_counts", "bootstrap_distribution",
           "bootstrap_indices", "kept_heap", "permutation_test", "significance_matrix", "williams_test"]

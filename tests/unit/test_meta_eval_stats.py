"""Meta-evaluation statistics (custom_metrics.analysis.stats: coefficients, levels,
resampling) on hand-computed cases, against scipy and against nlpstats (Deutsch, Dror &
Roth's own implementation) on shared inputs and shared resamples."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import nlpstats.correlations as nlpstats  # the dev extra: the authors' own implementation
import pytest
from scipy import stats as sps

from custom_metrics.analysis.stats.coefficients import COEFFICIENTS, round_sig, tie_safe_mean, weighted_corr
from custom_metrics.analysis.stats.levels import LEVELS, level_corr, level_counts, matrices, metric_matrix
from custom_metrics.analysis.stats.resampling import (
    bootstrap_ci,
    bootstrap_counts,
    bootstrap_distribution,
    bootstrap_indices,
    permutation_test,
    significance_matrix,
    williams_test,
)


NLP_LEVEL = {"summary": "input", "system": "system", "global": "global"}


def _scipy(coef):
    def f(a, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if coef == "pearson":
                return sps.pearsonr(a, b)[0]
            if coef == "spearman":
                return sps.spearmanr(a, b)[0]
            return sps.kendalltau(a, b, variant=coef[-1])[0]
    return f


def _data(m=6, n=8, seed=3):
    rng = np.random.default_rng(seed)
    quality = rng.random(m)
    X = np.round(quality[:, None] + rng.normal(0, 0.4, (m, n)), 2)
    Z = np.round(np.clip(quality[:, None] * 4 + 1 + rng.normal(0, 1, (m, n)), 1, 5))  # Likert: many ties
    Y = np.round(quality[:, None] + rng.normal(0, 0.8, (m, n)), 2)
    return X, Y, Z


def _long(X, Z, name="m"):
    return pd.DataFrame([{"doc_id": f"d{d}", "system": f"s{s}", name: X[s, d], "human": Z[s, d]}
                         for s in range(X.shape[0]) for d in range(X.shape[1])])


@pytest.mark.parametrize("coef", COEFFICIENTS)
def test_weighted_coefficient_is_the_expanded_sample(coef):
    """Multiplicities give exactly the coefficient of the sample with copies (scipy)."""
    rng = np.random.default_rng(0)
    x, y = np.round(rng.random(9) * 4) / 2, np.round(rng.random(9) * 5)
    w = rng.integers(0, 3, (6, 9)).astype(float)
    got = weighted_corr(x, y, w, coef)
    want = [_scipy(coef)(np.repeat(x, r.astype(int)), np.repeat(y, r.astype(int))) for r in w]
    assert got == pytest.approx(want, abs=1e-12)


def test_hand_computed_levels():
    """2 documents x 3 systems, worked by hand."""
    # systems s0, s1, s2 (rows); documents d0, d1 (columns)
    X = np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 3.0]])
    Z = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    V = np.ones_like(X, bool)
    # summary: d0 ranks agree fully (r = 1), d1 metric 2,1,3 vs human 1,2,3: pearson 0.5, tau 1/3
    assert level_corr(X, Z, V, "summary", "pearson") == pytest.approx((1 + 0.5) / 2)
    assert level_corr(X, Z, V, "summary", "kendall_b") == pytest.approx((1 + 1 / 3) / 2)
    # system: means 1.5, 1.5, 3 vs 1, 2, 3; tau-b = (2 - 0) / sqrt((3 - 1) * 3)
    assert level_corr(X, Z, V, "system", "kendall_b") == pytest.approx(2 / math.sqrt(6))
    assert level_corr(X, Z, V, "system", "spearman") == pytest.approx(sps.spearmanr([1.5, 1.5, 3], [1, 2, 3])[0])
    # global: six pairs pooled
    assert level_corr(X, Z, V, "global", "pearson") == pytest.approx(sps.pearsonr(X.ravel(), Z.ravel())[0])
    assert level_corr(X, Z, V, "global", "kendall_c") == pytest.approx(
        sps.kendalltau(X.ravel(), Z.ravel(), variant="c")[0])


def test_exact_ties_stay_ties_after_averaging():
    """The issue's case: two systems whose mean rating is exactly 3.5 sum to 3.5 and
    3.5000000000000004 in document order; they must rank as a tie."""
    a = [4.5, 4.5, 3.3333333333333335, 1.6666666666666667]
    b = [4.5, 1.6666666666666667, 4.5, 3.3333333333333335]
    assert sum(a) / 4 == 3.5 and sum(b) / 4 == 3.5000000000000004  # the float noise
    assert tie_safe_mean(a) == tie_safe_mean(b) == 3.5
    assert round_sig(np.array([sum(a) / 4, sum(b) / 4])).tolist() == [3.5, 3.5]
    Z = np.array([a, b, [2.0] * 4, [5.0] * 4])
    X = np.array([[0.6] * 4, [0.5] * 4, [0.2] * 4, [0.9] * 4])
    V = np.ones_like(X, bool)
    tied = [3.5, 3.5, 2.0, 5.0]
    noisy = [3.5, 3.5000000000000004, 2.0, 5.0]
    for coef in ("spearman", "kendall_b", "kendall_c"):
        want = _scipy(coef)([0.6, 0.5, 0.2, 0.9], tied)
        assert level_corr(X, Z, V, "system", coef) == pytest.approx(want, abs=1e-12)
        assert want != pytest.approx(_scipy(coef)([0.6, 0.5, 0.2, 0.9], noisy))  # what the noise did


def test_constant_documents_are_left_out_and_counted():
    X = np.array([[0.1, 0.5, 0.3], [0.2, 0.5, 0.1], [0.3, 0.5, 0.2]])  # d1: metric constant
    Z = np.array([[1.0, 1.0, 2.0], [2.0, 2.0, 2.0], [3.0, 3.0, 2.0]])  # d2: human constant
    df = _long(X, Z)
    m = matrices(df, "m")
    assert level_corr(m.X, m.Z, m.V, "summary", "pearson") == pytest.approx(1.0)  # d0 only
    assert level_counts(m, "summary", "pearson") == (1, 2)
    # nlpstats skips them the same way (scipy's NaN for constant input)
    assert nlpstats.correlate(X, Z, "input", "pearson") == pytest.approx(1.0)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("coef", COEFFICIENTS)
def test_levels_match_nlpstats(level, coef):
    X, _, Z = _data()
    V = np.ones_like(X, bool)
    want = nlpstats.correlate(X, Z, NLP_LEVEL[level], _scipy(coef))
    assert level_corr(X, Z, V, level, coef) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_missing_cells_drop_only_their_pairs():
    X, _, Z = _data()
    X[1, 2] = np.nan
    Z[4, 5] = np.nan
    df = _long(X, Z).drop(index=3)  # a (document, system) never scored
    m = matrices(df, "m")
    assert m.V.sum() == X.size - 3 and m.dropped == 2
    Xn, Zn = np.where(m.V, m.X, np.nan), np.where(m.V, m.Z, np.nan)
    for level in LEVELS:
        assert level_corr(m.X, m.Z, m.V, level, "spearman") == pytest.approx(
            nlpstats.correlate(Xn, Zn, NLP_LEVEL[level], "spearman"), rel=1e-9)


@pytest.mark.parametrize("method", ["systems", "documents", "both"])
@pytest.mark.parametrize("level", LEVELS)
def test_vectorised_bootstrap_equals_a_loop_over_resamples(method, level):
    X, _, Z = _data(5, 7)
    m = matrices(_long(X, Z), "m")
    sys_idx, doc_idx = bootstrap_indices(5, 7, 40, method, 9)
    cs, cd = bootstrap_counts(5, 7, 40, method, 9)
    for coef in COEFFICIENTS:
        got = bootstrap_distribution(m, level, coef, cs, cd)
        rows = sys_idx if sys_idx is not None else np.tile(np.arange(5), (40, 1))
        cols = doc_idx if doc_idx is not None else np.tile(np.arange(7), (40, 1))
        want = [nlpstats.correlate(m.X[r][:, c], m.Z[r][:, c], NLP_LEVEL[level], _scipy(coef))
                for r, c in zip(rows, cols)]
        assert np.allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True), (level, coef)


@pytest.mark.parametrize("method", ["systems", "documents", "both"])
def test_bootstrap_interval_equals_nlpstats_on_the_same_resamples(method, monkeypatch):
    X, _, Z = _data(6, 9)
    m = matrices(_long(X, Z), "m")
    sys_idx, doc_idx = bootstrap_indices(6, 9, 300, method, 5)
    draws = iter([d for b in range(300) for d in ((sys_idx[b],) if sys_idx is not None else ())
                  + ((doc_idx[b],) if doc_idx is not None else ())])
    monkeypatch.setattr(np.random, "choice", lambda *a, **k: next(draws))
    cs, cd = bootstrap_counts(6, 9, 300, method, 5)
    for level in LEVELS:
        want = nlpstats.bootstrap(X, Z, NLP_LEVEL[level], "kendall", method.replace("documents", "inputs"),
                                  n_resamples=300) if level == "system" else None
        if want is not None:
            assert bootstrap_ci(m, level, "kendall_b", cs, cd) == pytest.approx((want.lower, want.upper), rel=1e-9)
    draws = iter([d for b in range(300) for d in ((sys_idx[b],) if sys_idx is not None else ())
                  + ((doc_idx[b],) if doc_idx is not None else ())])
    monkeypatch.setattr(np.random, "choice", lambda *a, **k: next(draws))
    want = nlpstats.bootstrap(X, Z, "global", "pearson", method.replace("documents", "inputs"), n_resamples=300)
    assert bootstrap_ci(m, "global", "pearson", cs, cd) == pytest.approx((want.lower, want.upper), rel=1e-9)


@pytest.mark.parametrize("method", ["systems", "documents", "both"])
@pytest.mark.parametrize("level,coef", [("global", "pearson"), ("system", "pearson"), ("summary", "spearman"),
                                        ("summary", "kendall_b")])
def test_permutation_test_equals_nlpstats_on_the_same_swaps(method, level, coef, monkeypatch):
    X, Y, Z = _data(6, 10)
    V = np.ones_like(X, bool)
    rng = np.random.default_rng(21)
    n_res = 200
    rs = rng.random((n_res, 6)) if method in ("systems", "both") else None
    rd = rng.random((n_res, 10)) if method in ("documents", "both") else None
    draws = iter([d for b in range(n_res) for d in ((rs[b].reshape(6, 1),) if rs is not None else ())
                  + ((rd[b].reshape(1, 10),) if rd is not None else ())])
    monkeypatch.setattr(np.random, "rand", lambda *shape: next(draws))
    want = nlpstats.permutation_test(X, Y, Z, NLP_LEVEL[level], _scipy(coef), method.replace("documents", "inputs"),
                                     n_resamples=n_res)
    got = permutation_test(X, Y, Z, V, level, coef, method, n_res, 21)
    assert got.p_value == pytest.approx(want.pvalue, abs=1.5 / n_res)
    assert got.resamples == n_res


@pytest.mark.parametrize("level", LEVELS)
def test_williams_test_equals_nlpstats(level):
    X, Y, Z = _data(8, 12)
    V = np.ones_like(X, bool)
    for coef in ("pearson", "kendall_b"):
        want = nlpstats.williams_test(X, Y, Z, NLP_LEVEL[level], _scipy(coef)).pvalue
        assert williams_test(X, Y, Z, V, level, coef).p_value == pytest.approx(want, rel=1e-6)


def test_a_better_metric_is_significantly_better():
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(10, 40))
    good = Z + rng.normal(0, 0.3, Z.shape)
    bad = Z + rng.normal(0, 3.0, Z.shape)
    df = _long(good, Z, "good").assign(bad=_long(bad, Z)["m"])
    mats = {k: matrices(df, k) for k in ("good", "bad")}
    sig = significance_matrix(mats, "global", "pearson", n_resamples=500, seed=1)
    assert sig.loc["good", "bad"] == sig.loc["bad", "good"] < 0.01 and math.isnan(sig.loc["good", "good"])
    assert significance_matrix(mats, "global", "pearson", test="williams").loc["good", "bad"] < 0.01


def test_metric_matrix_default_is_global_pearson_like_numpy_corrcoef():
    """The FM release's Figure 3: numpy.corrcoef over every (paper, system) pair."""
    X, Y, Z = _data()
    df = _long(X, Z).assign(other=_long(Y, Z)["m"])
    got = metric_matrix(df, ["human", "m", "other"])
    want = np.corrcoef(np.vstack([Z.ravel(), X.ravel(), Y.ravel()]))
    assert np.allclose(got.to_numpy(), want, atol=1e-12)

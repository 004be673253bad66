"""Paired permutation and bootstrap tests (custom_metrics.analysis.stats.significance) against
scipy and hand cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from custom_metrics import registry
from custom_metrics.analysis.stats.significance import paired_bootstrap_test, paired_permutation_test
from helpers.report import _scipy_paired


@pytest.mark.parametrize("n,seed", [(4, 0), (7, 1), (10, 2)])
def test_permutation_test_equals_scipy_on_means(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = a + rng.normal(0.08, 0.1, n)
    ours = paired_permutation_test(list(a), list(b), "mean", n_resamples=10_000)
    assert ours.exact and ours.resamples == 2 ** n
    assert ours.delta == pytest.approx(a.mean() - b.mean())
    assert ours.p_value == pytest.approx(_scipy_paired(a, b, lambda v: float(np.mean(v))), abs=1e-12)


def test_permutation_test_equals_scipy_with_tied_documents():
    """Documents both systems score alike (difference 0) tie in every swap pattern: with
    two such documents out of three, half the patterns equal the observed difference and
    half its negation, so the two-sided p is 1 (a float-rounding slip would give 0)."""
    a = [0.327, 0.931, 0.791]
    b = [0.327, 0.931, 0.804]
    ours = paired_permutation_test(a, b, "mean", n_resamples=10_000)
    assert ours.p_value == 1.0 == pytest.approx(_scipy_paired(a, b, lambda v: float(np.mean(v))))
    # differences 0.05, 0, -0.013, 0.05, 0, -0.1 (three decimals): in exact arithmetic every
    # swap pattern's |sum| is at least 0.013 (= |observed|), so p = 1; in binary floating point
    # 0.349 - 0.299 != 0.816 - 0.766, which the widened tie tolerance absorbs
    a = [0.349, 0.46, 0.673, 0.816, 0.378, 0.708]
    b = [0.299, 0.46, 0.686, 0.766, 0.378, 0.808]
    from fractions import Fraction
    from itertools import product

    d = [Fraction(str(x)) - Fraction(str(y)) for x, y in zip(a, b)]
    obs = abs(sum(d))
    exact_p = sum(abs(sum(s * v for s, v in zip(signs, d))) >= obs for signs in product((1, -1), repeat=6)) / 64
    assert paired_permutation_test(a, b, "mean").p_value == exact_p == 1.0


def test_permutation_test_equals_scipy_on_a_corpus_metric():
    """DomainSum's ROUGE (geometric mean of the corpus ROUGE-1/2/L means) through the registry."""
    rng = np.random.default_rng(3)
    a = [list(rng.random(3) * 0.5) for _ in range(8)]
    b = [list(np.clip(np.array(x) + rng.normal(0.05, 0.1, 3), 0, 1)) for x in a]
    fam = registry.family_of("rouge_geo")
    ctx = registry.Context(benchmark="domainsum", subset="cnndm")

    def geo(items):
        return registry.aggregate(fam, "rouge_geo", items, ctx)

    ours = paired_permutation_test(a, b, geo, n_resamples=10_000)
    by_hand = math.prod(np.mean(a, axis=0)) ** (1 / 3) - math.prod(np.mean(b, axis=0)) ** (1 / 3)
    assert ours.delta == pytest.approx(by_hand)
    assert ours.p_value == pytest.approx(_scipy_paired(a, b, geo), abs=1e-12)


def test_permutation_test_monte_carlo_is_seeded_and_close_to_exact():
    rng = np.random.default_rng(5)
    a = rng.random(14)
    b = a - 0.05 + rng.normal(0, 0.05, 14)
    exact = paired_permutation_test(list(a), list(b), "mean", n_resamples=2 ** 14)
    mc = paired_permutation_test(list(a), list(b), "mean", n_resamples=4000, seed=9)
    assert exact.exact and not mc.exact
    assert mc == paired_permutation_test(list(a), list(b), "mean", n_resamples=4000, seed=9)
    assert abs(mc.p_value - exact.p_value) < 0.03


def test_paired_bootstrap_test_hand_cases():
    # B is A shifted by a constant on every document: every resample shows the same
    # difference, so a difference twice as large never occurs: p = 0
    a = [0.1, 0.4, 0.3, 0.8]
    r = paired_bootstrap_test(a, [x - 0.1 for x in a], "mean", n_resamples=500)
    assert r.delta == pytest.approx(0.1) and r.p_value == 0.0
    # identical systems: delta 0, every resample ties (>= 0): p = 1
    assert paired_bootstrap_test(a, a, "mean", n_resamples=200).p_value == 1.0
    with pytest.raises(ValueError, match="same documents"):
        paired_permutation_test([1.0], [1.0, 2.0])

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


def test_holm_on_a_hand_computed_family():
    """Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; made
    non-decreasing: 0.02, 0.03, 0.06, 0.06; returned in the input order."""
    from custom_metrics.analysis.stats.significance import holm

    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    nan_first = holm([math.nan, 0.02, 0.5])  # a NaN p is no test: the family has 2
    assert math.isnan(nan_first[0]) and nan_first[1:] == pytest.approx([0.04, 0.5])
    assert holm([0.6, 0.7]) == [1.0, 1.0] and holm([]) == []


def test_min_detectable_difference_on_a_hand_computed_case():
    """Differences 1..10: sd = sqrt(82.5 / 9) = 3.02765, SE = sd / sqrt(10) = 0.957427; from a
    t table, t(0.975, 9) = 2.2622 and t(0.80, 9) = 0.8834, so MDD = 3.1456 * 0.957427 = 3.0117."""
    from custom_metrics.analysis.stats.significance import min_detectable_difference, paired_interval

    a, b = [float(v) for v in range(1, 11)], [0.0] * 10
    _, _, se = paired_interval(a, b, "mean", n_boot=0)
    assert se == pytest.approx(0.957427, abs=1e-6)
    assert min_detectable_difference(se, 10) == pytest.approx(3.0117, abs=2e-4)
    # many documents: the t quantiles approach the normal ones, (1.95996 + 0.84162) * SE
    assert min_detectable_difference(1.0, 100_000) == pytest.approx(2.80158, abs=1e-3)
    assert math.isnan(min_detectable_difference(se, 1)) and math.isnan(min_detectable_difference(math.nan, 5))


def test_paired_interval_resamples_the_same_documents_on_both_sides():
    """For a mean, the paired interval of S(a) - S(b) is the bootstrap interval of the
    per-document differences with the same seed (each resample draws the same documents)."""
    from custom_metrics.analysis.stats.bootstrap import bootstrap_interval
    from custom_metrics.analysis.stats.significance import paired_interval

    rng = np.random.default_rng(3)
    a = rng.random(12)
    b = a - rng.normal(0.05, 0.05, 12)
    low, high, se = paired_interval(list(a), list(b), "mean", n_boot=500, seed=7)
    assert (low, high) == pytest.approx(bootstrap_interval(list(a - b), "mean", 500, 7), abs=1e-12)
    assert se == pytest.approx(np.std(a - b, ddof=1) / math.sqrt(12))
    # a corpus statistic: the SE is the resampled differences' spread, the interval contains delta
    geo = registry.key("rouge_geo").corpus
    items_a = [[x, x / 2, x * 0.8] for x in a]
    items_b = [[x, x / 2, x * 0.8] for x in b]
    stat = lambda items: geo(items, registry.Context())  # noqa: E731
    low, high, se = paired_interval(items_a, items_b, stat, n_boot=300, seed=7)
    delta = stat(items_a) - stat(items_b)
    assert low <= delta <= high and 0 < se < high - low


def test_smallest_p_of_each_test():
    from custom_metrics.analysis.stats.significance import PairedResult, smallest_p

    assert smallest_p(paired_permutation_test([0.1, 0.2, 0.3], [0.0, 0.0, 0.0])) == 0.25  # 2 of 2^3 patterns
    assert smallest_p(PairedResult(0.1, 0.5, 40, 999, False, "permutation")) == pytest.approx(2 / 1000)
    assert smallest_p(PairedResult(0.1, 0.5, 40, 999, False, "bootstrap")) == 0.0


def test_a_standard_error_at_the_level_of_rounding_is_zero_and_gives_no_detectable_difference():
    """Scores 0.1 apart on every document differ in their last bits (0.1 and 0.09999999999999998):
    an SD of 1e-17 is rounding, not spread, so the SE is 0 and no minimum detectable difference
    is given; nor at 2 documents, whatever their spread."""
    from custom_metrics.analysis.stats.significance import (min_detectable_difference, no_detectable_difference,
                                                            paired_resamples)

    a = [0.3, 0.7, 0.9, 0.6]
    b = [x - 0.1 for x in a]
    assert np.std(np.asarray(a) - np.asarray(b), ddof=1) > 0
    dist, se = paired_resamples(a, b, "mean", n_boot=50, seed=1)
    assert se == 0.0 and len(dist) == 50 and np.allclose(dist, 0.1)
    assert no_detectable_difference(se, 4) == ("the differences have no spread (every document differs by the "
                                               "same amount)")
    assert math.isnan(min_detectable_difference(se, 4))
    # a corpus statistic whose resampled differences are all the same: the same rule
    geo = registry.key("rouge_geo").corpus
    stat = lambda items: geo(items, registry.Context())  # noqa: E731
    _, se = paired_resamples([[x, x, x] for x in a], [[x - 0.1, 0.2, 0.3] for x in a], stat, n_boot=50, seed=1)
    assert se > 1e-3  # the geometric mean of one shifted mean is not a shift: real spread stays
    _, se = paired_resamples([[0.5, 0.5, 0.5]] * 4, [[0.4, 0.4, 0.4]] * 4, stat, n_boot=50, seed=1)
    assert se == 0.0
    # two documents with real spread: none either (one degree of freedom)
    _, se2 = paired_resamples([0.9, 0.1], [0.2, 0.3], "mean", n_boot=0)
    assert se2 == pytest.approx(np.std([0.7, -0.2], ddof=1) / math.sqrt(2))
    assert no_detectable_difference(se2, 2) == "fewer than 3 documents (2)"
    assert math.isnan(min_detectable_difference(se2, 2))
    # scores all near 0: a relative bound would be as small as they are; the metric's unit is the floor
    _, se3 = paired_resamples([0.0] * 8 + [1.192092896e-10], [0.0] * 9, "mean", n_boot=50, seed=1)
    assert se3 == 0.0 and math.isnan(min_detectable_difference(se3, 9))

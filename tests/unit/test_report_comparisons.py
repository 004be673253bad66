"""The report's comparisons on hand-made per-document scores (lm_eval_tasks/report/stats.py and
verdicts.py): only documents with a value on both sides are paired, a comparison with none is
"not computed", the interval shown is the family's simultaneous one and excludes 0 exactly when
the verdict names a side, and no minimum detectable difference is given at the level of rounding.

Every expected number is recomputed here from the values written in the test (numpy, scipy and
the Holm rule written out in tests/helpers/report.py), never taken from the report's functions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings as hsettings, strategies as st
from scipy import stats as sps

from helpers.report import _scipy_paired, hand_run, holm_adjusted
from lm_eval_tasks.report.stats import estimate, paired
from lm_eval_tasks.report.verdicts import ALPHA, POWER, verdicts

N_BOOT, SEED = 400, 1234
SIDES = ("a better", "b better")


def _run(label: str, values: list, key: str = "bertscore_f1", **kw):
    return hand_run(label, {f"doc/{i}": {key: v} for i, v in enumerate(values)}, **kw)


def _boot_interval(first: list[float], second: list[float], alpha: float) -> tuple[float, float]:
    """The paired percentile interval of mean(first) − mean(second), resampled as the suite's
    bootstrap draws (rows of default_rng(seed).integers(0, n, (n_boot, n)), the same rows on
    both sides), written out here."""
    d = np.asarray(first) - np.asarray(second)
    rows = np.random.default_rng(SEED).integers(0, len(d), size=(N_BOOT, len(d)))
    means = np.asarray([np.mean(np.asarray(first)[r]) - np.mean(np.asarray(second)[r]) for r in rows])
    return tuple(np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)]))


def test_a_nan_document_is_left_out_of_both_sides():
    """BERTScore NaN for one of 4 documents on one side (a failed scorer): n is 3, Δ and p are
    over the other 3, and a score logged as null is no value either."""
    xa = [0.91, 0.88, 0.86, 0.90]
    xb = [0.85, math.nan, 0.80, 0.84]
    c = paired(_run("A", xa), _run("B", xb), "bertscore_f1", n_resamples=1000, seed=SEED, n_boot=N_BOOT)
    assert c.computed and c.n == c.result.n == 3 and c.docs == ("doc/0", "doc/2", "doc/3")
    first, second = [0.91, 0.86, 0.90], [0.85, 0.80, 0.84]
    assert c.result.delta == pytest.approx(sum(first) / 3 - sum(second) / 3, abs=1e-12)
    assert c.result.p_value == pytest.approx(_scipy_paired(first, second, np.mean), abs=1e-12)
    # null in the samples file (None) is the same as NaN; a NaN on both sides too
    nulled = paired(_run("A", [None, *xa[1:]]), _run("B", [0.85, 0.82, math.nan, 0.84]), "bertscore_f1",
                    n_boot=0)
    assert nulled.docs == ("doc/1", "doc/3") and nulled.n == 2
    # a corpus item with a missing part (ROUGE-2 NaN) leaves its document out of the geometric mean
    geo_a = [[0.4, 0.2, 0.3], [0.5, 0.25, 0.4], [0.3, 0.1, 0.2]]
    geo_b = [[0.3, 0.1, 0.2], [0.4, math.nan, 0.3], [0.2, 0.1, 0.1]]
    g = paired(_run("A", geo_a, "rouge_geo"), _run("B", geo_b, "rouge_geo"), "rouge_geo", n_boot=0)

    def geo(items):
        means = np.mean(np.asarray(items), axis=0)
        return float(np.prod(means) ** (1 / 3))

    assert g.docs == ("doc/0", "doc/2")
    assert g.result.delta == pytest.approx(geo([geo_a[0], geo_a[2]]) - geo([geo_b[0], geo_b[2]]), abs=1e-12)


def test_no_document_with_a_value_on_both_sides_is_not_computed_and_joins_no_family():
    """One comparison whose scorer failed on every document of one side, beside one that was
    computed: the first is "not computed" with its reason and null numbers, the second's Holm
    family and interval level count only itself."""
    good_a, good_b = _run("A", [0.9] * 6), _run("B", [0.8, 0.81, 0.79, 0.8, 0.82, 0.78])
    failed = _run("C", [math.nan] * 6)
    shown = {"significance": {1: paired(good_a, failed, "bertscore_f1", n_boot=N_BOOT),
                              2: paired(good_a, good_b, "bertscore_f1", n_resamples=1000, n_boot=N_BOOT)}}
    lost, found = verdicts(shown)["significance"]
    assert lost.verdict == "not computed" and lost.n == 0
    assert lost.reason == "no document has a value on both sides (of the 6 documents both runs logged)"
    record = lost.record()
    assert all(record[k] is None for k in ("delta", "ci_low", "ci_high", "p", "p_corrected", "min_detectable_delta"))
    assert lost.sentence() == ("cnndm, BERTScore: not computed between A (0-shot) and C (0-shot): no document has a "
                               "value on both sides (of the 6 documents both runs logged).")
    assert found.family_size == 1 and found.ci_level == pytest.approx(0.95) and found.p_corrected == found.p
    assert found.verdict == "a better" and found.n == 6


def test_two_documents_give_no_minimum_detectable_difference():
    """FKGL differences of 11.8 on both of 2 documents (floats that differ in their last bits: an
    SD of 1.8e-15, from which the t formula would make a "detectable" 1.8e-14): no minimum
    detectable difference at n = 2, and none either when 4 documents all differ by the same
    amount."""
    a, b = [20.1, 25.4], [8.3, 13.6]
    assert a[0] - b[0] != a[1] - b[1]  # 11.8 in theory, not in binary floating point
    [v] = verdicts({"significance": {1: paired(_run("A", a, "fkgl_normal"), _run("B", b, "fkgl_normal"),
                                               "fkgl_normal", n_boot=N_BOOT)}})["significance"]
    assert v.n == 2 and math.isnan(v.min_detectable_delta) and v.record()["min_detectable_delta"] is None
    assert v.min_detectable_reason == "fewer than 3 documents (2)"
    assert "minimum detectable difference n/a (fewer than 3 documents (2))" in v.sentence()
    # 2 documents: the exact test cannot give p below 0.5, so no side, and the interval (11.8 on
    # every resample) is shown reaching 0, with the reason
    assert v.verdict == "no difference detected" and v.ci_extended and v.ci_low == 0.0
    assert v.ci_high == pytest.approx(11.8)
    assert "(extended to 0)" in v.sentence()
    assert "the Holm-corrected p is not below 0.05" in v.sentence()
    same = [0.3, 0.7, 0.9, 0.6]
    [w] = verdicts({"significance": {1: paired(_run("A", same), _run("B", [x - 0.1 for x in same]),
                                               "bertscore_f1", n_boot=N_BOOT)}})["significance"]
    assert np.ptp(np.asarray(same) - np.asarray([x - 0.1 for x in same])) > 0  # rounding, not spread
    assert math.isnan(w.min_detectable_delta)
    assert w.min_detectable_reason == "the differences have no spread (every document differs by the same amount)"


def test_the_minimum_detectable_difference_is_at_the_familys_level():
    """Differences 1..10 in a family of 2: (t(1 − 0.05/4, 9) + t(0.8, 9)) × sd / √10."""
    d = np.arange(1.0, 11.0)
    other = np.asarray([0.5, -0.2, 0.1, 0.3, -0.1, 0.2, 0.0, 0.4, -0.3, 0.1])
    base = [0.0] * 10
    shown = {"significance": {1: paired(_run("A", list(d)), _run("B", base), "bertscore_f1", n_boot=0),
                              2: paired(_run("C", list(other)), _run("B", base), "bertscore_f1", n_boot=0)}}
    first, _ = verdicts(shown)["significance"]
    t = sps.t.ppf(1 - ALPHA / 4, 9) + sps.t.ppf(POWER, 9)
    assert first.min_detectable_delta == pytest.approx(t * np.std(d, ddof=1) / math.sqrt(10), rel=1e-12)
    assert first.min_detectable_reason is None


@st.composite
def _families(draw):
    """A table's family of 1-4 comparisons of one key: per comparison, n documents (2-12), a
    shift, a noise scale (0: every document differs by the same amount) and some documents
    without a value; the key a mean (higher or lower is better)."""
    key = draw(st.sampled_from(["bertscore_f1", "length_mad"]))
    table = draw(st.sampled_from(["significance", "domainsum_settings"]))
    test = draw(st.sampled_from(["permutation", "bootstrap"]))
    members = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(2, 12))
        shift = draw(st.sampled_from([0.0, 0.01, -0.05, 0.2, -0.4, 1.0]))
        noise = draw(st.sampled_from([0.0, 0.001, 0.05, 0.3]))
        base = draw(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=n, max_size=n))
        eps = draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=n, max_size=n))
        gaps = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [False] * n
        other = [b + shift + noise * e for b, e in zip(base, eps)]
        members.append(([math.nan if g else x for x, g in zip(other, gaps)], base))
    return key, table, test, members


@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_families())
def test_the_shown_interval_excludes_zero_exactly_when_the_verdict_names_a_side(case):
    """For every comparison of generated families: the interval is the paired bootstrap interval
    at 1 − 0.05/m (recomputed), the verdict names a side exactly when the Holm-corrected p
    (recomputed) is below 0.05 and that interval excludes 0 on Δ's side, the interval shown
    excludes 0 exactly when a side is named (extended to 0 otherwise), the named side is the
    better one by the metric's direction, the scores beside Δ are over the paired documents, and
    n < 3 gives no minimum detectable difference."""
    key, table, test, members = case
    compared = {}
    for i, (first, second) in enumerate(members):
        a, b = _run(f"S{i}", first, key), _run(f"T{i}", second, key)
        compared[i] = paired(a, b, key, test, n_resamples=500, seed=SEED, n_boot=N_BOOT)
    made = verdicts({table: compared})[table]
    computed = [i for i, c in compared.items() if c.computed]
    expected_p = dict(zip(computed, holm_adjusted([compared[i].result.p_value for i in computed])))
    m = len(computed)
    for i, (v, (first, second)) in enumerate(zip(made, members)):
        paired_docs = [j for j, x in enumerate(first) if not math.isnan(x)]
        assert v.n == len(paired_docs)
        event(v.verdict + (" (interval extended to 0)" if v.ci_extended else ""))
        if not paired_docs:
            assert v.verdict == "not computed" and v.reason and math.isnan(v.ci_low) and math.isnan(v.delta)
            continue
        fa, fb = [first[j] for j in paired_docs], [second[j] for j in paired_docs]
        # the scores beside Δ: each side over the paired documents, whose difference is Δ
        c = compared[i]
        assert c.docs == tuple(f"doc/{j}" for j in paired_docs)
        beside = [estimate(run, key, n_boot=0, docs=c.docs).value for run in (c.a, c.b)]
        assert beside == pytest.approx([np.mean(fa), np.mean(fb)], abs=1e-12)
        # Δ is S(first) − S(second) in both directions: the settings tables compare(later, earlier)
        assert v.delta == pytest.approx(np.mean(fa) - np.mean(fb), abs=1e-12)
        assert v.p_corrected == pytest.approx(expected_p[i]) and v.family_size == m
        assert v.ci_level == pytest.approx(1 - ALPHA / m)
        low, high = _boot_interval(fa, fb, ALPHA / m)
        excludes = (low > 0 and v.delta > 0) or (high < 0 and v.delta < 0)
        assert (v.verdict in SIDES) == (expected_p[i] < ALPHA and excludes), (v, low, high)
        # the one rule: the interval shown excludes 0 exactly when the verdict names a side
        assert (v.ci_low > 0 or v.ci_high < 0) == (v.verdict in SIDES)
        if v.ci_extended:
            assert not low <= 0 <= high and v.ci_low == pytest.approx(min(low, 0.0), abs=1e-12)
            assert v.ci_high == pytest.approx(max(high, 0.0), abs=1e-12)
        else:
            assert (v.ci_low, v.ci_high) == pytest.approx((low, high), abs=1e-12)
        if v.verdict in SIDES:
            higher = v.a if (v.delta > 0) == (v.direction == "a-b") else v.b
            better = higher if v.higher_is_better else (v.b if higher == v.a else v.a)
            assert v.verdict == ("a better" if better == v.a else "b better")
        if v.n < 3:
            assert math.isnan(v.min_detectable_delta) and v.min_detectable_reason
        if math.isfinite(v.min_detectable_delta):
            assert v.min_detectable_delta > 1e-9


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(2, 9), st.sampled_from([0.0, 0.02, -0.1, 0.3]),
                          st.sampled_from([0.0, 0.01, 0.2]), st.integers(0, 10_000)), min_size=1, max_size=3))
def test_a_corpus_metrics_interval_and_verdict_agree_too(members):
    """The geometric-mean ROUGE (a corpus statistic, whose percentile interval need not hold Δ):
    for every comparison the interval shown excludes 0 exactly when the verdict names a side,
    and a named side is the one the interval lies on."""
    compared = {}
    for i, (n, shift, noise, seed) in enumerate(members):
        rng = np.random.default_rng(seed)
        base = rng.uniform(0.1, 0.6, size=(n, 3))
        other = np.clip(base + shift + noise * rng.normal(size=(n, 3)), 0.0, 1.0)
        a = _run(f"S{i}", [list(map(float, r)) for r in other], "rouge_geo")
        b = _run(f"T{i}", [list(map(float, r)) for r in base], "rouge_geo")
        compared[i] = paired(a, b, "rouge_geo", n_resamples=200, seed=SEED, n_boot=200)
    for v in verdicts({"significance": compared})["significance"]:
        event(v.verdict + (" (interval extended to 0)" if v.ci_extended else ""))
        assert v.ci_level == pytest.approx(1 - ALPHA / len(members))
        assert (v.ci_low > 0 or v.ci_high < 0) == (v.verdict in SIDES), v
        if v.verdict in SIDES:
            assert (v.ci_low > 0) == (v.delta > 0) == (v.verdict == "a better")
        if v.n < 3:
            assert v.min_detectable_reason == f"fewer than 3 documents ({v.n})"

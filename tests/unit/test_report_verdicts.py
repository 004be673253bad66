"""The verdict rule of the report's comparisons (lm_eval_tasks/report/verdicts.py): which side
wins in either direction and for lower-is-better metrics, no winner when the interval holds 0
or the corrected p is not small, and the sentence's reason when documents are too few."""

from __future__ import annotations

import math

import pytest

from lm_eval_tasks.report.verdicts import Verdict, decide


@pytest.mark.parametrize("delta,direction,higher,expected", [
    (0.1, "b-a", True, "b better"), (-0.1, "b-a", True, "a better"),
    (0.1, "a-b", True, "a better"), (-0.1, "a-b", True, "b better"),
    (0.1, "b-a", False, "a better"), (-0.1, "a-b", False, "a better"),  # lower is better: the lower side wins
])
def test_the_better_side_follows_direction_and_metric_direction(delta, direction, higher, expected):
    low, high = sorted((delta / 2, delta * 2))
    assert decide(delta, low, high, 0.01, higher, direction) == expected


def test_no_winner_when_the_interval_holds_zero_or_the_corrected_p_is_large():
    assert decide(0.1, -0.01, 0.2, 0.001, True, "b-a") == "no difference detected"
    assert decide(0.1, 0.05, 0.2, 0.05, True, "b-a") == "no difference detected"
    assert decide(0.1, 0.05, 0.2, math.nan, True, "b-a") == "no difference detected"
    assert decide(0.1, math.nan, math.nan, 0.01, True, "b-a") == "b better"  # no interval: p alone


def _verdict(**changes) -> Verdict:
    base = dict(table="significance", benchmark="domainsum", subset="cnndm", a="M (0-shot)", b="N (0-shot)",
                task="domainsum_cnndm", metric="bertscore_f1", metric_name="BERTScore", higher_is_better=True,
                direction="a-b", delta_of="M (0-shot) − N (0-shot)", n=20, delta=0.01, ci_low=-0.01,
                ci_high=0.03, p=0.3, p_corrected=0.6, correction="holm", family_size=2,
                min_detectable_delta=0.025, smallest_possible_p=2 / 2 ** 20, verdict="no difference detected",
                display_scale=100.0)
    return Verdict(**{**base, **changes})


def test_sentences_say_why_nothing_was_found():
    text = _verdict().sentence()
    assert text.startswith("cnndm, BERTScore: no difference detected between M (0-shot) and N (0-shot). "
                           "Δ (M (0-shot) − N (0-shot)) = +1.00, 95 % CI [-1.00, 3.00], p = 0.300, "
                           "Holm-corrected p = 0.600 over 2 comparisons, n = 20 shared documents; "
                           "minimum detectable difference 2.50.")
    assert text.endswith(" Too few documents to detect a difference smaller than 2.50.")
    three = _verdict(n=3, smallest_possible_p=0.25).sentence()
    assert three.endswith("Too few documents to detect any difference: with 3 the permutation test cannot "
                          "give p below 0.250.")
    family = _verdict(n=8, smallest_possible_p=2 / 256, family_size=14).sentence()
    assert "Too few documents to detect any difference among 14 comparisons" in family
    corrected = _verdict(p=0.01, p_corrected=0.08, ci_low=0.005, delta=0.03).sentence()
    assert "p is below 0.05 only before the correction for the 2 comparisons." in corrected
    assert "smaller than" not in corrected  # |Δ| 3.00 is above the MDD 2.50
    won = _verdict(verdict="a better", p=0.001, p_corrected=0.002, ci_low=0.005, delta=0.03).sentence()
    assert "M (0-shot) is better than N (0-shot)." in won and "Too few" not in won
    lower = _verdict(metric_name="Length MAD", higher_is_better=False, verdict="b better").sentence()
    assert "Length MAD (lower is better): N (0-shot) is better than M (0-shot)." in lower


def test_the_json_record_writes_nan_as_null():
    record = _verdict(ci_low=math.nan, ci_high=math.nan).record()
    assert record["ci_low"] is None and record["ci_high"] is None and record["verdict"] == "no difference detected"


def test_a_clear_difference_names_the_better_system_in_json_and_page(tmp_path):
    """Two hand-written systems 30 ROUGE-1 points apart on 20 documents: the report names the
    one whose logged mean is higher, in comparisons.json and in the page's sentence."""
    import html
    import json
    import re

    from helpers.report_page import write_system
    from lm_eval_tasks.commands import report

    strong = write_system(tmp_path / "runs", "org/strong", {"cnndm": 0.42}, shots=(0,), n_docs=20)
    weak = write_system(tmp_path / "runs", "org/weak", {"cnndm": 0.12}, shots=(0,), n_docs=20)
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r"), "--no-plots", "--no-progress"]) == 0
    comparisons = json.loads((tmp_path / "r" / "comparisons.json").read_text())["comparisons"]
    text = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    said = {int(i): html.unescape(s) for i, s in re.findall(r'<li data-comparison="(\d+)">(.*?)</li>', text)}
    means = {}
    for label, results in (("org/strong", strong), ("org/weak", weak)):
        rows = [json.loads(line) for line in next(results.parent.glob("samples_*.jsonl")).read_text().splitlines()]
        means[label] = sum(r["bertscore_f1"] for r in rows) / len(rows)
    [c] = [c for c in comparisons if c["metric"] == "bertscore_f1"]
    assert c["table"] == "significance" and c["direction"] == "a-b" and c["n"] == 20 and c["family_size"] == 1
    assert c["delta"] == pytest.approx(means[c["a"].split(" (")[0]] - means[c["b"].split(" (")[0]])
    winner = max(means, key=means.get)
    assert c["verdict"] == ("a better" if c["a"].startswith(winner) else "b better")
    assert c["p_corrected"] == c["p"] < 0.05 and not c["ci_low"] <= 0 <= c["ci_high"]
    loser = min(means, key=means.get)
    assert said[comparisons.index(c)].startswith(f"cnndm, BERTScore: {winner} (0-shot) is better than "
                                                 f"{loser} (0-shot). ")

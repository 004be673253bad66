"""The verdict rule of the report's comparisons (lm_eval_tasks/report/verdicts.py): which side
wins in either direction and for lower-is-better metrics, no winner when the interval holds 0
or the corrected p is not small, and the sentence's reason when documents are too few."""

from __future__ import annotations

import math

import pytest

from lm_eval_tasks.report.verdicts import Verdict, decide, shown_interval


@pytest.mark.parametrize("delta,direction,higher,expected", [
    (0.1, "b-a", True, "b better"), (-0.1, "b-a", True, "a better"),
    (0.1, "a-b", True, "a better"), (-0.1, "a-b", True, "b better"),
    (0.1, "b-a", False, "a better"), (-0.1, "a-b", False, "a better"),  # lower is better: the lower side wins
])
def test_the_better_side_follows_direction_and_metric_direction(delta, direction, higher, expected):
    low, high = sorted((delta / 2, delta * 2))
    assert decide(delta, low, high, 0.01, higher, direction) == expected


@pytest.mark.parametrize("delta,direction,expected", [
    (0.1, "b-a", "b higher"), (-0.1, "b-a", "a higher"), (0.1, "a-b", "a higher"), (-0.1, "a-b", "b higher"),
])
def test_a_metric_with_no_better_direction_names_the_higher_side_never_a_better_one(delta, direction, expected):
    low, high = sorted((delta / 2, delta * 2))
    assert decide(delta, low, high, 0.01, None, direction) == expected
    assert decide(delta, -abs(delta), abs(delta), 0.01, None, direction) == "no difference detected"


def test_no_winner_when_the_interval_holds_zero_or_the_corrected_p_is_large():
    assert decide(0.1, -0.01, 0.2, 0.001, True, "b-a") == "no difference detected"
    assert decide(0.1, 0.05, 0.2, 0.05, True, "b-a") == "no difference detected"
    assert decide(0.1, 0.05, 0.2, math.nan, True, "b-a") == "no difference detected"
    assert decide(0.1, -0.3, -0.05, 0.001, True, "b-a") == "no difference detected"  # interval on the other side
    assert decide(0.1, math.nan, math.nan, 0.01, True, "b-a") == "b better"  # no interval: p alone


def test_an_interval_beside_no_difference_reaches_zero():
    """The interval shown beside "no difference detected" holds 0: one that excluded it is
    extended to 0 (a superset keeps its coverage); beside a side, or holding 0, it is unchanged."""
    assert shown_interval(-15.46, -0.51, "no difference detected") == (-15.46, 0.0, True)
    assert shown_interval(0.00075, 0.0137, "no difference detected") == (0.0, 0.0137, True)
    assert shown_interval(-0.2, 0.3, "no difference detected") == (-0.2, 0.3, False)
    assert shown_interval(0.1, 0.3, "a better") == (0.1, 0.3, False)
    assert shown_interval(math.nan, math.nan, "no difference detected")[2] is False


def _verdict(**changes) -> Verdict:
    base = dict(table="significance", benchmark="domainsum", subset="cnndm", a="M (0-shot)", b="N (0-shot)",
                task="domainsum_cnndm", metric="bertscore_f1", metric_name="BERTScore", higher_is_better=True,
                direction="a-b", delta_of="M (0-shot) − N (0-shot)", n=20, delta=0.01, ci_low=-0.01,
                ci_high=0.03, p=0.3, p_corrected=0.6, correction="holm", family_size=2,
                min_detectable_delta=0.025, smallest_possible_p=2 / 2 ** 20, verdict="no difference detected",
                display_scale=100.0, ci_level=0.975)
    return Verdict(**{**base, **changes})


def test_a_sentence_of_a_metric_with_no_better_direction_says_higher_and_that_no_direction_is_better():
    found = _verdict(metric="fkgl_normal", metric_name="FKGL normal", higher_is_better=None, verdict="b higher",
                     delta=-2.0, ci_low=-3.0, ci_high=-1.0, p=0.001, p_corrected=0.002, display_scale=1.0)
    text = found.sentence()
    assert text.startswith("cnndm, FKGL normal (no direction is better): N (0-shot) is higher than M (0-shot). "
                           "Δ (M (0-shot) − N (0-shot)) = -2.00, 97.5 % CI [-3.00, -1.00]")
    assert "better" not in text.replace("no direction is better", "")
    assert _verdict(higher_is_better=False, verdict="a better").sentence().startswith(
        "cnndm, BERTScore (lower is better): M (0-shot) is better than N (0-shot). ")


def test_sentences_say_why_nothing_was_found():
    text = _verdict().sentence()
    assert text.startswith("cnndm, BERTScore: no difference detected between M (0-shot) and N (0-shot). "
                           "Δ (M (0-shot) − N (0-shot)) = +1.00, 97.5 % CI [-1.00, 3.00], p = 0.300, "
                           "Holm-corrected p = 0.600 over 2 comparisons, n = 20 documents scored on both sides; "
                           "minimum detectable difference 2.50.")
    assert text.endswith(" Too few documents to detect a difference smaller than 2.50.")
    three = _verdict(n=3, smallest_possible_p=0.25).sentence()
    assert three.endswith("Too few documents to detect any difference: with 3 the permutation test cannot "
                          "give p below 0.250.")
    family = _verdict(n=8, smallest_possible_p=2 / 256, family_size=14).sentence()
    assert "Too few documents to detect any difference among 14 comparisons" in family
    corrected = _verdict(p=0.01, p_corrected=0.08, ci_low=0.0, delta=0.03, ci_extended=True).sentence()
    assert "97.5 % CI [0.00, 3.00] (extended to 0), p = 0.010" in corrected
    assert ("The bootstrap interval alone excluded 0; it is shown extended to 0 because the Holm-corrected p is "
            "not below 0.05. p is below 0.05 only before the correction for the 2 comparisons.") in corrected
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


def _fail_scorer(results: Path, docs: set[int]) -> None:
    """BERTScore of ``docs`` NaN in a hand-written run's samples (a scorer that failed on them),
    and the results file's value refolded over the others, as the harness's mean folds."""
    import json

    [samples] = results.parent.glob("samples_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    for r in rows:
        if r["doc_id"] in docs:
            r["bertscore_f1"] = math.nan
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = json.loads(results.read_text())
    kept = [r["bertscore_f1"] for r in rows if r["doc_id"] not in docs]
    [task] = data["results"]
    data["results"][task]["bertscore_f1,none"] = sum(kept) / len(kept) if kept else math.nan
    results.write_text(json.dumps(data))


def _column(rows: list[dict], key: str, ids: list[int]) -> list[float]:
    return [r[key] for r in rows if r["doc_id"] in ids]


def test_a_failed_document_is_left_out_of_the_comparison_through_the_report(tmp_path):
    """Three hand-written systems on 8 documents: BERTScore failed on document 3 of one and on
    every document of another. comparisons.json pairs the first over the 7 others (n 7, Δ
    recomputed), the significance table's two scores beside that Δ are the means over the same
    7, every comparison with the broken system is "not computed" with its reason (and n/a in
    the table), the shown interval excludes 0 exactly when a side is named, and the page and
    the file's header state the rule once."""
    import csv
    import html
    import json
    import re

    from helpers.report_page import write_system
    from lm_eval_tasks.commands import report
    from lm_eval_tasks.report.verdicts import RULE

    runs = tmp_path / "runs"
    strong = write_system(runs, "org/strong", {"cnndm": 0.42}, shots=(0,), n_docs=8)
    weak = write_system(runs, "org/weak", {"cnndm": 0.12}, shots=(0,), n_docs=8)
    broken = write_system(runs, "org/broken", {"cnndm": 0.30}, shots=(0,), n_docs=8)
    _fail_scorer(strong, {3})
    _fail_scorer(broken, set(range(8)))
    assert report.main([str(runs), "--out", str(tmp_path / "r"), "--no-plots", "--no-progress"]) == 0
    data = json.loads((tmp_path / "r" / "comparisons.json").read_text())
    assert data["rule"] == RULE and data["verdicts"] == ["a better", "b better", "a higher", "b higher",
                                                         "no difference detected", "not computed"]
    comparisons = data["comparisons"]
    rows = {name: [json.loads(line) for line in next(p.parent.glob("samples_*.jsonl")).read_text().splitlines()]
            for name, p in (("strong", strong), ("weak", weak))}
    kept = [i for i in range(8) if i != 3]
    bert = [c for c in comparisons if c["metric"] == "bertscore_f1"]
    [pair] = [c for c in bert if {c["a"], c["b"]} == {"org/strong (0-shot)", "org/weak (0-shot)"}]
    means = {f"org/{k} (0-shot)": sum(_column(v, "bertscore_f1", kept)) / 7 for k, v in rows.items()}
    assert pair["n"] == 7 and pair["family_size"] == 1 and pair["ci_level"] == pytest.approx(0.95)
    assert pair["delta"] == pytest.approx(means[pair["a"]] - means[pair["b"]], abs=1e-12)
    lost = [c for c in bert if "org/broken (0-shot)" in (c["a"], c["b"])]
    assert len(lost) == 2 and all(c["verdict"] == "not computed" and c["delta"] is None and c["n"] == 0
                                  and c["reason"].startswith("no document has a value on both sides") for c in lost)
    for c in comparisons:
        if c["verdict"] == "not computed":
            continue
        names_side = c["verdict"] in ("a better", "b better")
        assert (c["ci_low"] > 0 or c["ci_high"] < 0) == names_side, c
    with open(tmp_path / "r" / "tables" / "significance.csv", newline="", encoding="utf-8") as f:
        table = [r for r in csv.DictReader(f) if r["Key"] == "BERTScore"]
    [row] = [r for r in table if {r["A"], r["B"]} == {"org/strong (0-shot)", "org/weak (0-shot)"}]
    side = {row["A"]: float(row["A score"]), row["B"]: float(row["B score"])}
    assert side == {k: pytest.approx(100 * v, abs=0.005) for k, v in means.items()}
    assert row["n shared"] == "7"
    assert float(row["A − B"]) == pytest.approx(100 * (means[row["A"]] - means[row["B"]]), abs=0.005)
    broken_rows = [r for r in table if "org/broken (0-shot)" in (r["A"], r["B"])]
    assert len(broken_rows) == 2 and all(r["A − B"] == "n/a" and r["p"] == "n/a" for r in broken_rows)
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    said = {int(i): html.unescape(s) for i, s in re.findall(r'<li data-comparison="(\d+)">(.*?)</li>', page)}
    assert "n = 7 documents scored on both sides" in said[comparisons.index(pair)]
    assert said[comparisons.index(lost[0])].endswith(f"not computed between {lost[0]['a']} and {lost[0]['b']}: "
                                                     f"{lost[0]['reason']}.")
    assert html.unescape(page).count(RULE) == 1


def test_the_page_names_the_higher_side_and_says_no_direction_is_better():
    """The page's verdict row, its question sentence and its definition of a metric whose record
    declares no better direction (CCSBench's FKGL of normal-readability requests)."""
    from lm_eval_tasks.report import page
    from lm_eval_tasks.report.tables import Table

    found = _verdict(metric="fkgl_normal", metric_name="FKGL normal", higher_is_better=None, verdict="b higher",
                     delta=-2.0, ci_low=-3.0, ci_high=-1.0, p=0.001, p_corrected=0.002, display_scale=1.0)
    table = Table("significance", "Significance", ["Subset"], [["cnndm"]])
    numbered = {"significance": [(0, found)]}
    _, [row] = page.verdict_table([table], numbered)
    assert row[2] == "FKGL normal (no direction is better)" and row[-1] == "N (0-shot) higher"
    [(_, rest)] = page.questions([table], numbered)
    assert rest == ", FKGL normal (no direction is better), 1 comparison: N (0-shot) higher than M (0-shot) on cnndm."
    [(term, text)] = page.definitions(["fkgl_normal"], False)
    assert term == "FKGL normal" and text.endswith("(key fkgl_normal; no direction is better: comparisons name "
                                                   "the higher side)")
    better = _verdict(verdict="b better", p_corrected=0.002, ci_low=0.005)
    _, [row] = page.verdict_table([table], {"significance": [(0, better)]})
    assert row[2] == "BERTScore" and row[-1] == "N (0-shot) better"

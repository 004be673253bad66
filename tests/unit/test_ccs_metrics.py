"""CCSBench controllability metrics, against hand-computed values and the paper's texts."""

import math

import pytest

from custom_metrics.families.ccs import pearson
from custom_metrics.families.ccs import (
    bin_bounds,
    focus_f1,
    fkgl,
    keyword_hits,
    keyword_success_rate,
    length_bin,
    length_scores,
    readability_scores,
)
from helpers.ccs_metrics import FKGL_TEXTS


def words(n: int) -> str:
    return " ".join(["w"] * n)


@pytest.mark.parametrize("n,expected", [(0, 0), (1, 0), (50, 0), (51, 1), (100, 1), (101, 2), (150, 2), (151, 3), (250, 4), (251, 5)])
def test_length_bin_edges(n, expected):
    assert length_bin(words(n)) == expected


@pytest.mark.parametrize("b,expected", [(0, (0, 50)), (1, (51, 100)), (2, (101, 150)), (4, (201, 250))])
def test_bin_bounds_by_hand_and_inverse_of_length_bin(b, expected):
    assert bin_bounds(b) == expected
    lo, hi = expected
    assert length_bin(words(lo)) == b and length_bin(words(hi)) == b
    assert length_bin(words(hi + 1)) == b + 1


def test_length_bin_whitespace_words_and_cap():
    assert length_bin("  a\tb\n" + words(48)) == 0      # 2 + 48 = 50 whitespace tokens
    assert length_bin("a\n\nb " + words(49)) == 1
    assert length_bin(words(400), max_bin=4) == 4


def test_length_pcc_and_mad_by_hand():
    # generated bins 0, 1, 3 ; targets 0, 2, 2
    gens = [words(10), words(60), words(160)]
    res = length_scores(gens, [0, 2, 2])
    # x = (0,1,3), mean 4/3; y = (0,2,2), mean 4/3
    # sxy = (-4/3)(-4/3) + (-1/3)(2/3) + (5/3)(2/3) = 16/9 - 2/9 + 10/9 = 24/9
    # sxx = 16/9 + 1/9 + 25/9 = 42/9 ; syy = 16/9 + 4/9 + 4/9 = 24/9
    assert res["length_pcc"] == pytest.approx((24 / 9) / math.sqrt(42 / 9 * 24 / 9))
    assert res["length_mad"] == pytest.approx((0 + 1 + 1) / 3)
    assert res["length_n"] == 3


def test_length_rows_without_target_and_constant():
    res = length_scores([words(10), words(60)], [None, 1])
    assert res["length_mad"] == 0 and res["length_n"] == 1 and math.isnan(res["length_pcc"])
    assert math.isnan(pearson([1, 1, 1], [0, 1, 2]))
    import scipy.stats as scipy_stats
    x, y = [0, 1, 3, 2], [1, 1, 2, 4]
    assert pearson(x, y) == pytest.approx(scipy_stats.pearsonr(x, y)[0])


def test_keywords_inflections_and_multiword():
    summary = "We trained transformers and evaluated the Graph Neural Network on proteins."
    # "transformer" ~ "transformers", "evaluation"? no: evaluat vs evalu -> check hits by hand
    hits = keyword_hits(summary, ["transformer", "graph neural networks", "protein", "neural graph", "training"])
    # training -> train == trained -> train ; "neural graph" is not a contiguous sequence
    assert hits == [True, True, True, False, True]


def test_keyword_success_rate_averages_rows_with_keywords():
    summaries = ["Sparse attention reduces memory.", "Nothing relevant here.", "No keywords row."]
    keywords = [["sparse attention", "memories", "latency"], ["dropout"], []]
    # row 1: 2/3 (memories -> memori == memory -> memori), row 2: 0/1, row 3 ignored
    assert keyword_success_rate(summaries, keywords) == pytest.approx((2 / 3 + 0) / 2)
    assert math.isnan(keyword_success_rate(["x"], [None]))
    with pytest.raises(ValueError):
        keyword_success_rate(["a"], [])


def pyphen_only_fkgl(text: str) -> float:
    """textstat with no CMUdict (pyphen for every word): the old offline value."""
    import textstat
    from textstat.backend.counts import _count_syllables as cs
    from textstat.backend.metrics import _flesch_kincaid_grade, _syllables_per_word

    caches = (cs.count_syllables, _syllables_per_word.syllables_per_word, _flesch_kincaid_grade.flesch_kincaid_grade)
    saved, cs.get_cmudict = cs.get_cmudict, (lambda lang: None)
    for fn in caches:
        fn.cache_clear()
    try:
        return textstat.flesch_kincaid_grade(text)
    finally:
        cs.get_cmudict = saved
        for fn in caches:
            fn.cache_clear()


def test_fkgl_formula_by_hand():
    import pyphen

    # monosyllabic words: CMUdict and pyphen agree, so the hand count holds either way
    text = "The cat sat. The dog ran."
    dic = pyphen.Pyphen(lang="en_US")
    syl = sum(len(dic.positions(w)) + 1 for w in ["the", "cat", "sat", "the", "dog", "ran"])
    assert syl == 6  # all monosyllabic
    # 6 words, 2 sentences, 6 syllables: 0.39*3 + 11.8*1 - 15.59 = -2.62
    assert fkgl(text) == pytest.approx(0.39 * 3 + 11.8 - 15.59, abs=0.01)


def test_fkgl_cmudict_differs_from_pyphen_only():
    # "idea": CMUdict AY0 D IY1 AH0 = 3 syllables; pyphen does not split it (1)
    text = "The idea is good."
    # 4 words, 1 sentence; syllables the 1 + idea 3 + is 1 + good 1 = 6
    assert fkgl(text) == pytest.approx(0.39 * 4 + 11.8 * 6 / 4 - 15.59)
    assert pyphen_only_fkgl(text) == pytest.approx(0.39 * 4 + 11.8 * 4 / 4 - 15.59)
    assert fkgl(text) != pytest.approx(pyphen_only_fkgl(text))
    assert fkgl(text) == pytest.approx(0.39 * 4 + 11.8 * 6 / 4 - 15.59)  # caches not polluted


def test_fkgl_delta():
    hard, easy = FKGL_TEXTS[0], FKGL_TEXTS[1]
    res = readability_scores([hard, easy, "ignored text here."], ["normal", "high", None])
    assert res["fkgl_normal"] == pytest.approx(fkgl(hard))
    assert res["fkgl_high"] == pytest.approx(fkgl(easy))
    assert res["delta_fkgl"] == pytest.approx(fkgl(hard) - fkgl(easy)) and res["delta_fkgl"] > 0
    assert math.isnan(readability_scores([easy], ["high"])["fkgl_normal"])


def test_focus_f1_small_confusion():
    # targets:   high high high low low  low(None pred)
    # predicted: high high low  low high None
    pred = ["high", "high", "low", "low", "high", None]
    tgt = ["high", "high", "high", "low", "low", "low"]
    res = focus_f1(pred, tgt)
    # high: TP 2, FP 1, FN 1 -> 4/6 ; low: TP 1, FP 1, FN 1 -> 2/4
    assert res["focus_f1_high"] == pytest.approx(4 / 6)
    assert res["focus_f1_low"] == pytest.approx(0.5)
    assert res["focus_macro_f1"] == pytest.approx((4 / 6 + 0.5) / 2)
    assert focus_f1(["high"], ["high"])["focus_f1_low"] == 0.0


# CCSBench Appendix C.3 (Focus Evaluation), as printed; the judge's system text is the
# line after "# System", the user message everything after that.
C3_BLOCK = """# System
You are a NLP expert. Please help me analyze some scientific abstracts.
# Instruction
Help me decide whether this abstract is more empirically-focused or more conceptually-focused. The output should be ’empirical’ or ’conceptual’.
Definition:
The empirically-focused abstract emphasizes the experimental, data-driven aspects of a study. It highlights data collection, experimental settings, performance metrics and concrete results obtained from the research, especially when it comes to statistics and data.
The conceptually-focused abstract emphasizes the theoretical and innovative aspects of a study. It highlights the motivation, the challenge, the underlying theoretical framework, the description of the proposed method or algorithm, and broader implications of the research.
Abstract: {abstract}"""


def test_focus_messages_are_appendix_c3():
    from custom_metrics.families.ccs import focus_messages

    lines = C3_BLOCK.split("\n")
    assert lines[0] == "# System"
    user = "\n".join(lines[2:]).replace("{abstract}", "We ran {many} experiments.")
    assert focus_messages("We ran {many} experiments.") == [
        {"role": "system", "content": lines[1]}, {"role": "user", "content": user}]


@pytest.mark.parametrize("reply, label", [
    ("empirical", "high"), ("conceptual", "low"), ("Empirical", "high"), ("’conceptual’.", "low"),
    ("'empirical'", "high"), ("Answer: conceptual", "low"), ("empirical or conceptual", None),
    ("empirically-focused", None), ("non-empirical", None), ("garbage", None), ("", None), (None, None),
])
def test_parse_focus_label(reply, label):
    from custom_metrics.families.ccs import parse_focus_label

    assert parse_focus_label(reply) == label


def test_public_exports():
    import custom_metrics

    assert custom_metrics.length_bin is length_bin
    assert custom_metrics.keyword_success_rate is keyword_success_rate and custom_metrics.fkgl is fkgl

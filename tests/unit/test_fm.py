"""FM (facet-aware metric): parsing, aggregation, and the batch API against the stub judge."""

from __future__ import annotations

import json
import math

import pytest

from custom_metrics.judge.fm import alignment_messages, extraction_messages, fm_aggregate, fm_scores, parse_facets
from custom_metrics.judge import JudgeConfig
from helpers.fm import JUDGE_ENV


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("fractions, expected", [
    ([1.0, 0.5, 0.25, 1 / 3], 0.425),             # the released human total
    ([1.0, 1.0, 1.0, 1.0], 1.0),
    ([0, 1.0, 0.5, 0], (0.3 * 1.0 + 0.3 * 0.5) / 0.6),  # reference lacks background, conclusion
    ([1 / 3, 0, 0, 0], 1 / 3),                    # only background: weight renormalised to 1
    ([2 / 3, 0.75, 0.75, 2 / 3], 0.1 * 2 / 3 + 0.3 * 0.75 + 0.3 * 0.75 + 0.3 * 2 / 3),
])
def test_fm_aggregate_hand_cases(fractions, expected):
    assert fm_aggregate(fractions) == pytest.approx(expected)


def test_fm_aggregate_edges():
    assert math.isnan(fm_aggregate([0, 0, 0, 0]))
    assert fm_aggregate([None, 0.5, float("nan"), 0]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        fm_aggregate([1.0, 0.5])


def test_importable_from_package_top_level():
    from custom_metrics import fm_aggregate as top_level
    from custom_metrics import fm_scores as top_scores

    assert top_level([1.0, 0.5, 0.25, 1 / 3]) == pytest.approx(0.425)
    assert top_scores is fm_scores


SEG = {"background": "B", "method": "M", "result": "R", "conclusion": "C"}


@pytest.mark.parametrize("reply", [
    json.dumps(SEG),
    "```json\n" + json.dumps(SEG, indent=2) + "\n```",
    "Sure! Here is the answer:\n" + json.dumps(SEG) + "\nHope this helps.",
    "{'background': 'B', 'method': 'M', 'result': 'R', 'conclusion': 'C'}",
    "```\n{'Background': 'B', 'Method': ['M'], 'Result': 'R', 'Conclusion': 'C'}\n```",
])
def test_parse_facets_is_robust(reply):
    assert parse_facets(reply) == SEG


def test_parse_facets_missing_keys_are_empty_and_garbage_is_none():
    assert parse_facets('{"method": "M"}') == {"background": "", "method": "M", "result": "", "conclusion": ""}
    assert parse_facets("I cannot do that.") is None
    assert parse_facets('{"foo": 1}') is None
    assert parse_facets("") is None
    assert parse_facets(None) is None


def test_prompts_follow_the_paper():
    ext = extraction_messages("ABS")[0]["content"]
    assert "background/method/result/conclusion" in ext and ext.endswith("Input: ABS")
    bg = alignment_messages("background", "a", "b")[0]["content"]
    assert "(1-3)" in bg and "Example" not in bg
    assert bg.endswith("Only return the number. \n\n Input1: 'a' \n Input2: 'b'")  # the release's layout
    me = alignment_messages("method", "a", "b", variant="few")[0]["content"]
    assert "(1-4)" in me and "Example 4" in me


def test_fm_without_judge_is_skipped_and_bad_args_raise():
    assert fm_scores(["a"], ["b"], None) is None
    with pytest.raises(ValueError):
        fm_scores(["a"], ["b", "c"], JudgeConfig(model="m", base_url="http://127.0.0.1:9", cache=None))
    with pytest.raises(ValueError):
        fm_scores(["a"], ["b"], JudgeConfig(model="m", base_url="http://127.0.0.1:9", cache=None),
                  variant="three")

"""Fault handling that needs no server: secret masking and a focus F1 with no parsed label."""

from __future__ import annotations

import math

import pytest

from custom_metrics.secrets import MASK, mask
from custom_metrics.judge import JudgeConfig
from helpers.judge_server import clear_judge_env
from helpers.judge_faults import KEY


_clean_judge_env = pytest.fixture(autouse=True, name="_clean_judge_env")(clear_judge_env)


def test_mask_secrets_helper(monkeypatch):
    config = JudgeConfig(model="m", base_url="http://h/v1", api_key=KEY, cache=None)
    assert mask(f"Bearer {KEY}!", config) == f"Bearer {MASK}!"
    monkeypatch.setenv("OPENAI_API_KEY", "env-key-456789")
    monkeypatch.setenv("DOMSUM_JUDGE_API_KEY", "judge-key-987654")
    assert mask("a env-key-456789 b judge-key-987654 c") == f"a {MASK} b {MASK} c"
    assert mask("the test suite", JudgeConfig(model="m", api_key="test", cache=None)) == "the test suite"
    assert mask(42) == "42"


def test_focus_f1_is_nan_when_no_label_was_parsed():
    from custom_metrics.families.ccs import _focus_key

    macro = _focus_key("focus_macro_f1")
    assert math.isnan(macro([[None, "high"], [None, "low"], None], None))
    assert math.isnan(_focus_key("focus_f1_high")([], None))
    assert macro([["high", "high"], [None, "low"]], None) == pytest.approx(0.5)

"""The LLM-judge package without a server: reply parsing, log-prob scores, the cache key,
settings resolution, the prompts, and rescoring that needs no judge.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from custom_metrics.judge import JudgeConfig, JudgeConfigError, judge_scores, notice_judge_skipped
from custom_metrics.judge import config as judge_conf
from custom_metrics.judge.cache import cache_key
from custom_metrics.judge.config import reset_judge_notice
from custom_metrics.judge.parse import parse_score, score_from_logprobs
from custom_metrics.judge.prompts import ADAPTEVAL_METRICS, adapteval_judge, build_messages
from lm_eval_tasks.settings import judge_config
from helpers.judge import JUDGE_ENV, _write_samples, req


@pytest.fixture(autouse=True)
def _clean_judge_env(monkeypatch):
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("text,expected", [
    ("4", 4.0), (" 5\n", 5.0), ("Score: 3 - coherent", 3.0), ("4/5", 4.0), ("3.5", 3.5),
    ("Coherence (1-5): 2", 2.0), ("Rated 1 to 5: 5", 5.0), ("7", None), ("0", None),
    ("I cannot rate this.", None), ("", None), (None, None),
    # off the scale or on another one: unparsable, never clipped or rescaled onto 1-5
    ("-1", None), ("Score: -2", None), ("\u22123", None), ("5/10", None), ("4 / 10", None),
    ("5 out of 10", None), ("80%", None), ("Coherence (1-5): 5/10", None),
    ("3 out of 5", 3.0), ("Score: 2 of 5", 2.0),
])
def test_parse_score(text, expected):
    assert parse_score(text, (1, 5)) == expected


def test_parse_score_respects_each_scale():
    assert parse_score("2/3", (1, 3)) == 2.0 and parse_score("2/5", (1, 3)) is None
    assert parse_score("4", (1, 3)) is None and parse_score("4/4", (1, 4)) == 4.0


def test_logprob_score_needs_a_reply_on_the_scale():
    def pos(token, p, alts=()):
        return {"token": token, "logprob": math.log(p),
                "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in [(token, p), *alts]]}

    # greedy "7" on 1-5: off the scale, whatever mass the valid alternatives carry
    assert score_from_logprobs([pos("7", 0.6, [("4", 0.4)])], (1, 5)) is None
    # "-1": the digit's alternatives are not read as a positive score
    assert score_from_logprobs([pos("-", 1.0), pos("1", 0.9, [("2", 0.1)])], (1, 5)) is None
    # "5/10": another scale
    assert score_from_logprobs([pos("5", 1.0), pos("/", 1.0), pos("1", 1.0), pos("0", 1.0)], (1, 5)) is None
    # the score position is where the reply's score is, not the echoed scale before it
    content = [pos("(", 1.0), pos("1", 1.0), pos("-", 1.0), pos("5", 1.0), pos("):", 1.0),
               pos(" 4", 0.5, [(" 3", 0.5)])]
    assert score_from_logprobs(content, (1, 5), text="(1-5): 4") == pytest.approx(3.5)


def test_logprob_weighted_mean_matches_hand_computation():
    # valid mass: 1:.05 2:.10 3:.20 4:.40 5:.15 (=0.90); "The" is not a score.
    content = [{"token": "4", "logprob": math.log(0.40), "top_logprobs": [
        {"token": "4", "logprob": math.log(0.40)}, {"token": "3", "logprob": math.log(0.20)},
        {"token": "5", "logprob": math.log(0.15)}, {"token": "2", "logprob": math.log(0.10)},
        {"token": "The", "logprob": math.log(0.10)}, {"token": "1", "logprob": math.log(0.05)}]}]
    expected = (1 * .05 + 2 * .10 + 3 * .20 + 4 * .40 + 5 * .15) / 0.90  # 3.5556
    assert score_from_logprobs(content, (1, 5)) == pytest.approx(expected, abs=1e-9)
    # " 4" and "4" are the same score; tokens before the first number are skipped
    content2 = [{"token": "Score", "logprob": 0.0, "top_logprobs": []},
                {"token": " 4", "logprob": math.log(0.3), "top_logprobs": [
                    {"token": " 4", "logprob": math.log(0.3)}, {"token": "4", "logprob": math.log(0.3)},
                    {"token": " 2", "logprob": math.log(0.4)}]}]
    assert score_from_logprobs(content2, (1, 5)) == pytest.approx((4 * .6 + 2 * .4) / 1.0)
    # no valid score at the score position: None, never 0
    assert score_from_logprobs([{"token": "9", "logprob": 0.0, "top_logprobs": []}], (1, 5)) is None


def test_cache_key_covers_everything_that_changes_the_answer():
    msgs = req("x")
    params = {"temperature": 0.0, "max_tokens": 5, "n": 1, "logprobs": True, "top_logprobs": 20}
    base = cache_key("http://h/v1", "m", msgs, params)
    assert base == cache_key("http://h/v1/", "m", [dict(m) for m in msgs], dict(reversed(params.items())))
    variants = [
        cache_key("http://other/v1", "m", msgs, params),
        cache_key("http://h/v1", "m2", msgs, params),
        cache_key("http://h/v1", "m", req("y"), params),
        cache_key("http://h/v1", "m", msgs, params, attempt=1),
        cache_key(None, "m", msgs, params),
    ]
    for name, value in [("temperature", 1.0), ("max_tokens", 6), ("n", 20), ("logprobs", False),
                        ("top_logprobs", 5), ("seed", 1)]:
        variants.append(cache_key("http://h/v1", "m", msgs, {**params, name: value}))
    assert len(set(variants + [base])) == len(variants) + 1


def test_no_judge_configured_gives_none_and_one_notice(caplog):
    reset_judge_notice()
    assert judge_config(None) is None
    assert judge_config({"judge_base_url": "http://h/v1"}) is None
    with caplog.at_level(logging.WARNING, logger="custom_metrics.judge"):
        assert notice_judge_skipped() is True
        assert notice_judge_skipped() is False
        assert adapteval_judge(["d"], ["s"], "pubmed", None) is None
    notices = [r for r in caplog.records if "no judge configured" in r.getMessage()]
    assert len(notices) == 1


def test_resolve_metadata_first_then_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DOMSUM_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env-host/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    c = judge_config({})
    assert (c.model, c.base_url, c.api_key) == ("env-model", "http://env-host/v1", "sk-env")
    c = judge_config({"judge_model": "meta-model", "judge_base_url": "http://meta/v1/",
                      "judge_concurrency": "16", "judge_cache": str(tmp_path / "j.sqlite"),
                      "judge_logprobs": False})
    assert (c.model, c.endpoint, c.concurrency) == ("meta-model", "http://meta/v1", 16)
    assert c.cache == str(tmp_path / "j.sqlite") and c.logprobs == "off"
    assert "sk-env" not in repr(c) and "api_key" not in c.describe()
    assert judge_config({"judge_model": "m", "judge_cache": "off"}).cache is None
    monkeypatch.setenv("DOMSUM_JUDGE_API_KEY", "judge-only-key")
    assert judge_config({}).api_key == "judge-only-key"
    monkeypatch.setenv("DOMSUM_JUDGE_CACHE", str(tmp_path / "env.sqlite"))
    assert judge_config({}).cache == str(tmp_path / "env.sqlite")
    with pytest.raises(JudgeConfigError, match="judge_concurrency"):
        judge_config({"judge_model": "m", "judge_concurrency": "many"})
    with pytest.raises(JudgeConfigError, match="'judge_concurrency' .* must be >= 1, got 0"):
        judge_config({"judge_model": "m", "judge_concurrency": 0})


def test_every_judge_setting_fills_the_field_of_its_name(monkeypatch, tmp_path):
    """Each row set to a value other than its default arrives in the field named as the row
    without ``judge_`` (``progress`` as itself): the namespace rule, end to end."""
    given = {"judge_model": "m", "judge_base_url": "http://h/v1", "judge_concurrency": 3,
             "judge_cache": str(tmp_path / "c.sqlite"), "judge_logprobs": "off", "judge_n_samples": 4,
             "judge_timeout": 7.5, "judge_max_retries": 1, "judge_max_requests": 9, "judge_sample": 5,
             "judge_price_prompt": 0.5, "judge_price_completion": 1.5, "progress": False}
    monkeypatch.setenv("DOMSUM_JUDGE_API_KEY", "sk-judge")
    assert sorted([*given, "judge_api_key"]) == sorted(judge_conf.SETTINGS)  # every row is exercised
    c = judge_config(given)
    assert {key: getattr(c, key.removeprefix("judge_")) for key in given} == given
    assert c.api_key == "sk-judge"


def test_config_errors_name_the_setting_users_set():
    with pytest.raises(JudgeConfigError, match=r"concurrency \(setting judge_concurrency\) must be >= 1 \(got 0\)"):
        JudgeConfig(model="m", concurrency=0)
    with pytest.raises(JudgeConfigError) as err:
        JudgeConfig(model="m", timeout=0.0, top_logprobs=30, max_requests=-1)
    message = str(err.value)
    assert "timeout (setting judge_timeout) must be > 0 (got 0.0)" in message
    assert "top_logprobs must be in 1..20 (got 30)" in message  # no setting: the field alone
    assert "max_requests (setting judge_max_requests) must be >= 0 (got -1)" in message


def test_openai_endpoint_without_key_is_a_clear_error():
    with pytest.raises(JudgeConfigError, match="OPENAI_API_KEY"):
        judge_scores([req("x")], (1, 5), JudgeConfig(model="gpt-4o-mini", cache=None, progress=False))


def test_the_package_reads_no_environment_variable(monkeypatch, tmp_path):
    """The cache path and the key come from the configuration (the settings resolver
    fills them from the environment); the package itself reads neither."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-only")
    monkeypatch.setenv("DOMSUM_JUDGE_CACHE", str(tmp_path / "env.sqlite"))
    assert JudgeConfig(model="m").cache == judge_conf.DEFAULT_CACHE_PATH
    with pytest.raises(JudgeConfigError, match="OPENAI_API_KEY"):
        judge_scores([req("x")], (1, 5), JudgeConfig(model="gpt-4o-mini", cache=None, progress=False))
    resolved = judge_config({"judge_model": "m"})
    assert resolved.api_key == "sk-env-only" and resolved.cache == str(tmp_path / "env.sqlite")
    monkeypatch.delenv("DOMSUM_JUDGE_CACHE")
    assert judge_config({"judge_model": "m"}).cache == judge_conf.DEFAULT_CACHE_PATH
    package = Path(judge_conf.__file__).parent
    for module in package.glob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert "os.environ" not in text and "getenv" not in text, module.name
        assert len(text.splitlines()) <= 500, module.name


def test_adapteval_prompts_follow_their_sources():
    msgs = build_messages(ADAPTEVAL_METRICS["domain_adaptation"], "DOC TEXT", "SUMMARY TEXT", "pubmed", variant="suite")
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert "biomedical research article (PubMed)" in system
    assert "employs domain-specific terminology" in system and "Evaluation Steps" in system
    assert "DOC TEXT" in user and user.endswith("- Domain Adaptation (1-5):")
    flu = build_messages(ADAPTEVAL_METRICS["fluency"], "DOC TEXT", "SUMMARY TEXT", "arxiv", variant="suite")
    assert "DOC TEXT" not in flu[1]["content"]  # G-Eval's fluency judge sees the summary only
    assert "- 3: Good." in flu[0]["content"] and flu[1]["content"].endswith("- Fluency (1-3):")
    coh = build_messages(ADAPTEVAL_METRICS["coherence"], "DOC TEXT", "S", "govreport", variant="suite")
    assert "DUC quality question of structure and coherence" in coh[0]["content"]


def test_rescore_dvo_and_skipped_judge(tmp_path, caplog):
    from lm_eval_tasks.commands.rescore import main

    samples = tmp_path / "samples_adapteval_arxiv_2024-06-01T10-20-30.jsonl"
    _write_samples(samples)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("inhibitor\ntumour\nvaccine\nblood\npressure\n")
    reset_judge_notice()
    assert main([str(samples), "--metrics", "dvo,judge", "--vocabulary", str(vocab)]) == 0
    summary = json.loads((tmp_path / f"{samples.stem}.summary.json").read_text())
    assert summary["skipped"] == {"judge": "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"}
    scores = [json.loads(x) for x in (tmp_path / f"{samples.stem}.scores.jsonl").read_text().splitlines()]
    from custom_metrics.families.dvo import dvo

    assert scores[1]["dvo"] == pytest.approx(dvo(["Patients got two doses of vaccine."], vocab.read_text().split()))
    assert summary["metrics"]["dvo"] == pytest.approx(sum(s["dvo"] for s in scores) / 3)


def test_rescore_clear_errors(tmp_path, capsys):
    from lm_eval_tasks.commands.rescore import main

    samples = tmp_path / "samples_x_2024-06-01T10-20-30.jsonl"
    _write_samples(samples)
    assert main([str(samples), "--metrics", "rouge,bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'bogus'" in err and "ccs_length" in err and "blanc_tune" in err
    assert main([str(samples), "--metrics", "dvo", "--vocabulary", str(tmp_path / "none.txt")]) == 2
    assert "task 'x' is neither a suite task nor" in capsys.readouterr().err  # no benchmark's conventions guessed
    assert main([str(samples), "--metrics", "dvo", "--vocabulary", str(tmp_path / "none.txt"),
                 "--benchmark", "adapteval"]) == 2
    assert "vocabulary file" in capsys.readouterr().err

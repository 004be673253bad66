"""The judge family sends the prompt variant it records (stub judge server)."""

import pytest

from custom_metrics import registry
from custom_metrics.registry import Batch, Context
from helpers.conventions import RELEASE_DA_SYSTEM, RELEASE_DA_USER, TABLE8_SYSTEM, TABLE8_USER


@pytest.mark.parametrize("variant", [None, "release"])
def test_judge_family_sends_the_variant_it_records(tmp_path, monkeypatch, variant):
    from custom_metrics.judge import JudgeConfig
    from helpers.judge_server import JUDGE_ENV, StubJudgeServer, Text

    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)
    with StubJudgeServer(time_limit_s=60) as srv:
        srv.set_default(Text("4"))
        judge = JudgeConfig(model="stub-judge", base_url=srv.url, api_key="test", cache=None,
                            logprobs="off", n_samples=1, progress=False)
        ctx = Context(benchmark="adapteval", subset="pubmed", judge=judge,
                      settings={"judge_prompt_variant": variant},
                      options={"judge_metrics": ["domain_adaptation"]})
        out = registry.get("judge").score(Batch(["SUMM"], ["ref"], ["DOC"], [{}]), ctx)
        sent = [b["messages"] for b in srv.bodies]
    assert out["domain_adaptation"] == [4.0]
    assert ctx.record["judge_prompt_variant_used"] == (variant or "paper")
    want = (TABLE8_SYSTEM, TABLE8_USER) if variant is None else (RELEASE_DA_SYSTEM, RELEASE_DA_USER)
    assert [(m[0]["content"], m[1]["content"]) for m in sent] == [want]

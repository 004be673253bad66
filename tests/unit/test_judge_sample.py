"""``judge_sample``: the seeded draw by document id, the setting, and what a judged family's
documents outside the sample carry (no value, counted as not sampled, never as failures).
Against the stub judge: tests/integration/test_judge_sample_stub.py."""

from __future__ import annotations

import hashlib
import math

import pytest

from custom_metrics import registry
from custom_metrics.judge import JudgeConfig, JudgeConfigError
from custom_metrics.judge.sample import draw, score_sample
from lm_eval_tasks import settings

IDS = [f"adapteval/pubmed/test/{i}" for i in range(40)]


def smallest_hashes(ids, n, seed):
    """The rule the docs state, recomputed here: the n ids of smallest sha256("<seed>:<id>")."""
    return sorted(sorted(set(ids), key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())[:n])


def test_the_draw_is_exactly_n_deterministic_and_order_free():
    first = draw(IDS, 7, 42)
    assert len(first) == 7 == len(set(first)) and set(first) <= set(IDS)
    assert first == smallest_hashes(IDS, 7, 42) == draw(IDS, 7, 42)
    assert draw(list(reversed(IDS)), 7, 42) == first  # any order
    assert draw(IDS + IDS[:10], 7, 42) == first  # a document scored twice (two generations) is one document
    assert draw(IDS, 7, 43) != first and draw(IDS, 7, 43) == smallest_hashes(IDS, 7, 43)  # the seed moves it
    assert draw(IDS, 0, 42) == sorted(IDS) == draw(IDS, 40, 42) == draw(IDS, 100, 42)  # 0 or >= all: all
    # a larger sample of the same documents holds the smaller one (the ranking is one order)
    assert set(first) <= set(draw(IDS, 20, 42))


def test_the_setting_row_fills_the_judge_config():
    assert settings.SETTINGS["judge_sample"].default == 0
    assert settings.judge_config({"judge_model": "m"}).sample == 0
    assert settings.judge_config({"judge_model": "m", "judge_sample": "25"}).sample == 25
    with pytest.raises(JudgeConfigError, match="'judge_sample'.*must be >= 0, got -1"):
        settings.judge_config({"judge_model": "m", "judge_sample": -1})
    with pytest.raises(JudgeConfigError, match=r"sample \(setting judge_sample\) must be >= 0"):
        type(settings.judge_config({"judge_model": "m"}))(model="m", sample=-2)


def test_documents_outside_the_sample_carry_no_value_and_count_as_not_sampled():
    """The sample wrapper around a scorer that records what it was handed: it sees the
    sampled items only (a document with two generations twice), and every other item gets
    NaN for a mean key, 0 for a count of failures, None for a corpus item or detail."""
    fam = registry.get("judge")
    ids = IDS[:10] + IDS[:3]  # 13 items: the first three documents have a second generation
    batch = registry.Batch(predictions=[f"p{k}" for k in range(13)], references=["r"] * 13,
                           documents=[f"d {i}" for i in ids], extras=[{"id": i} for i in ids])
    seen: list[str] = []

    def scorer(sub, ctx):
        seen.extend(e["id"] for e in sub.extras)
        return {"domain_adaptation": [4.0] * len(sub), "coherence": [5.0] * len(sub), "fluency": [2.0] * len(sub),
                "judge_parse_failures": [1.0] * len(sub), "detail": ["x"] * len(sub)}

    ctx = registry.Context(settings={"sample_seed": 3}, judge=JudgeConfig(model="m", sample=4))
    out = score_sample(fam, scorer, batch, ctx, 4)
    sample = draw(ids, 4, 3)
    inside = [k for k, i in enumerate(ids) if i in sample]
    assert sorted(set(seen)) == sample and len(seen) == len(inside)
    for k in range(13):
        if k in inside:
            assert (out["coherence"][k], out["judge_parse_failures"][k], out["detail"][k]) == (5.0, 1.0, "x")
        else:
            assert math.isnan(out["coherence"][k]) and out["judge_parse_failures"][k] == 0.0
            assert out["detail"][k] is None
    assert ctx.record["judge_not_sampled"] == 13 - len(inside)
    assert (ctx.record["judge_sample_size"], ctx.record["judge_sample_from"], ctx.record["judge_sample_seed"]) == (4, 10, 3)
    assert ctx.record["judge_sample_ids"] == sample
    # the parse failures of the sampled documents are summed; the others add nothing
    assert registry.aggregate(fam, "judge_parse_failures", out["judge_parse_failures"], ctx) == len(inside)
    assert registry.aggregate(fam, "coherence", out["coherence"], ctx) == 5.0
    # a focus item outside the sample is None (left out of the corpus F1)
    assert score_sample(registry.get("ccs_focus"), lambda sub, c: {k: [["high", "high"]] * len(sub) for k in
                        registry.get("ccs_focus").key_names}, batch, ctx, 4)["focus_macro_f1"].count(None) == 13 - len(inside)


def test_a_document_scored_alone_later_is_judged_only_if_in_the_runs_sample():
    """The harness scores a document outside its shard alone (no gather): the sample drawn
    for the shard decides, not a new draw over that one document."""
    fam = registry.get("judge")
    batch = registry.Batch(predictions=["p"] * 10, references=["r"] * 10, documents=["d"] * 10,
                           extras=[{"id": i} for i in IDS[:10]])
    scorer = lambda sub, ctx: {k: [1.0] * len(sub) for k in fam.key_names}  # noqa: E731
    ctx = registry.Context(settings={"sample_seed": 42}, judge=JudgeConfig(model="m", sample=2))
    score_sample(fam, scorer, batch, ctx, 2)
    sample = draw(IDS[:10], 2, 42)
    outside = next(i for i in IDS[:10] if i not in sample)
    one = lambda i: registry.Batch(predictions=["q"], references=["r"], documents=["d"], extras=[{"id": i}])  # noqa: E731
    assert math.isnan(score_sample(fam, scorer, one(outside), ctx, 2)["coherence"][0])
    assert score_sample(fam, scorer, one(sample[0]), ctx, 2)["coherence"][0] == 1.0
    assert ctx.record["judge_not_sampled"] == 8 + 1


def test_no_seed_is_a_clear_error():
    ctx = registry.Context(settings={}, judge=JudgeConfig(model="m", sample=2))
    with pytest.raises(ValueError, match="judge_sample 2 needs the setting sample_seed"):
        score_sample(registry.get("fm"), lambda s, c: {}, registry.Batch(["p"], ["r"], ["d"], [{"id": "a"}]), ctx, 2)

"""``judge_sample`` against the stub judge, in process: the judged families score only the
seeded sample (the server's requests name only sampled documents), the others are NaN and
counted as not sampled, never as failures; the estimate and ``judge_max_requests`` count
only the sample; data-parallel ranks draw one sample of exactly n over the whole run."""

from __future__ import annotations

import math

import pytest
from helpers.judge_server import StubJudgeServer, Text, clear_judge_env, stub_config

from custom_metrics import registry
from custom_metrics.judge import JudgeStats, budget
from custom_metrics.judge.sample import draw
from lm_eval_tasks.harness_parts.ranks import merge_counts


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    clear_judge_env(monkeypatch)
    budget.reset()
    yield
    budget.reset()


def _judge_batch(n_docs: int, doubled: int = 0) -> registry.Batch:
    """``n_docs`` documents (the first ``doubled`` with a second, different generation)."""
    ids = [f"adapteval/pubmed/test/{i}" for i in range(n_docs)] + [f"adapteval/pubmed/test/{i}" for i in range(doubled)]
    return registry.Batch(predictions=[f"Summary {k} of the trial." for k in range(len(ids))],
                          references=["The trial found a benefit."] * len(ids),
                          documents=[f"Document <<{i}>> reports a randomized trial." for i in ids],
                          extras=[{"id": i, "task": "adapteval_pubmed_judged"} for i in ids])


def _context(srv, sample: int, seed: int = 42, **judge) -> registry.Context:
    return registry.Context(benchmark="adapteval", subset="pubmed", settings={"sample_seed": seed},
                            judge=stub_config(srv, logprobs="on", sample=sample, **judge),
                            options={"judge_stats": JudgeStats()}, progress=False)


def test_only_the_sample_is_judged_the_rest_not_sampled_never_failed():
    fam = registry.get("judge")
    batch = _judge_batch(10, doubled=2)  # 12 items, 10 documents
    with StubJudgeServer(time_limit_s=60, default=(Text("3"),)) as srv:
        ctx = _context(srv, sample=4, max_requests=3 * 5)
        out = fam.score(batch, ctx)
        bodies = list(srv.bodies)
    ids = [e["id"] for e in batch.extras]
    sample = draw(ids, 4, 42)
    inside = [i for i, d in enumerate(ids) if d in sample]
    assert ctx.record["judge_sample_ids"] == sample and ctx.record["judge_sample_size"] == 4
    assert ctx.record["judge_sample_from"] == 10 and ctx.record["judge_sample_seed"] == 42
    assert ctx.record["judge_not_sampled"] == len(batch) - len(inside)
    for i in range(len(batch)):
        for key in ("domain_adaptation", "coherence", "fluency"):
            assert (out[key][i] == 3.0) if i in inside else math.isnan(out[key][i])
        assert out["judge_parse_failures"][i] == 0.0  # a document not sampled is no failure
    assert not any(ctx.record["judge_failed"].values())  # no failure of any kind was counted
    # the requests: the sampled items' only (three ratings each), each naming a sampled document
    asked = {text.split("<<")[1].split(">>")[0] for b in bodies for m in b["messages"] for text in [m["content"]]
             if "<<" in text}
    assert asked == set(sample)
    stats = ctx.options["judge_stats"]
    assert srv.received == 3 * len(inside) == sum(e["requests"] for e in stats.estimates)
    assert stats.budget_skipped == 0  # the cap of 15 fits the sample's 3 x 4-or-5 items, not 12 x 3
    # the harness's aggregation (nanmean) averages the sampled documents only
    assert registry.aggregate(fam, "coherence", out["coherence"], ctx) == 3.0
    assert registry.aggregate(fam, "judge_parse_failures", out["judge_parse_failures"], ctx) == 0.0


def test_zero_is_every_document():
    fam = registry.get("judge")
    batch = _judge_batch(3)
    with StubJudgeServer(time_limit_s=60, default=(Text("3"),)) as srv:
        ctx = _context(srv, sample=0)
        out = fam.score(batch, ctx)
        assert srv.received == 9
    assert out["coherence"] == [3.0] * 3 and "judge_not_sampled" not in ctx.record
    assert "judge_sample_ids" not in ctx.record


def test_ranks_draw_exactly_n_over_the_whole_run_and_record_it_once():
    """Two data-parallel ranks, each with its shard: the gathered identities give one sample
    of exactly n for the run, the same on both ranks, and the merged record holds it once."""
    fam = registry.get("judge")
    whole = _judge_batch(9)
    shards = [[0, 2, 4, 6, 8], [1, 3, 5, 7]]
    parts = [[whole.extras[i]["id"] for i in s] for s in shards]
    records, judged = [], []
    with StubJudgeServer(time_limit_s=60, default=(Text("3"),)) as srv:
        for rank, shard in enumerate(shards):
            batch = registry.Batch(*[[getattr(whole, f)[i] for i in shard]
                                     for f in ("predictions", "references", "documents", "extras")])
            ctx = _context(srv, sample=5, seed=7)
            ctx.gather = lambda part, rank=rank: [part if r == rank else sorted(parts[r]) for r in range(2)]
            out = fam.score(batch, ctx)
            judged += [batch.extras[i]["id"] for i in range(len(batch)) if not math.isnan(out["coherence"][i])]
            records.append(dict(ctx.record))
    sample = draw([e["id"] for e in whole.extras], 5, 7)
    assert sorted(judged) == sample and len(judged) == 5
    assert records[0]["judge_sample_ids"] == records[1]["judge_sample_ids"] == sample
    merged = merge_counts(records)
    assert merged["judge_sample_ids"] == sample and merged["judge_sample_size"] == 5
    assert merged["judge_sample_from"] == 9 and merged["judge_sample_seed"] == 7
    assert merged["judge_not_sampled"] == 4


def test_focus_corpus_keys_leave_the_unsampled_out_of_f1():
    fam = registry.get("ccs_focus")
    ids = [f"ccsbench/focus/test/{i}" for i in range(6)]
    focus = ["high", "low", "high", "low", "high", "low"]
    batch = registry.Batch(predictions=[f"Summary <<{i}>>." for i in ids], references=["r"] * 6,
                           documents=["d"] * 6, extras=[{"id": i, "focus": f} for i, f in zip(ids, focus)])
    with StubJudgeServer(time_limit_s=60, default=(Text("empirical"),)) as srv:
        ctx = registry.Context(benchmark="ccsbench", subset="focus", settings={"sample_seed": 42},
                               judge=stub_config(srv, sample=3), progress=False)
        out = fam.score(batch, ctx)
        assert srv.received == 3
    sample = set(draw(ids, 3, 42))
    for i, d in enumerate(ids):
        assert (out["focus_macro_f1"][i] is not None) == (d in sample)
        assert out["focus_parse_failures"][i] == 0.0
    # F1 over the sampled pairs only, recomputed: every label "high"
    wanted = [f for d, f in zip(ids, focus) if d in sample]
    tp = wanted.count("high")
    f1_high = 2 * tp / (len(wanted) + tp)
    expected = (f1_high + 0.0) / 2
    assert registry.aggregate(fam, "focus_macro_f1", out["focus_macro_f1"], ctx) == pytest.approx(expected)
    assert ctx.record["judge_not_sampled"] == 3


def test_rescore_judges_the_sample_and_records_it(tmp_path):
    """``domsum rescore --judge-sample``: the same draw over a samples file's ids, only the
    sample's requests sent, the ids and the not-sampled count in the summary's record."""
    import json
    import subprocess
    import sys

    from conftest import ROOT, subprocess_env
    from helpers.rescore import _outputs

    samples = tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl"
    ids = [f"adapteval/pubmed/test/{i}" for i in range(7)]
    samples.write_text("".join(json.dumps({"doc_id": i, "doc": {"id": d, "document": f"Trial <<{d}>> of drug A.",
                                                                  "summary": "Drug A helped."},
                                           "target": "Drug A helped.", "filtered_resps": [f"Drug A helped {i}."],
                                           "filter": "none"}) + "\n" for i, d in enumerate(ids)))
    with StubJudgeServer(time_limit_s=120, default=(Text("4"),)) as srv:
        proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "rescore", str(samples), "--metrics",
                               "coherence", "--judge-model", "stub-judge", "--judge-base-url", srv.url,
                               "--judge-cache", "off", "--judge-logprobs", "on", "--judge-sample", "3",
                               "--no-progress", "--overwrite", "--metadata", '{"sample_seed": 5}'],
                              cwd=ROOT, env=subprocess_env(OPENAI_API_KEY="test"), capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        asked = {m["content"].split("<<")[1].split(">>")[0] for b in srv.bodies for m in b["messages"]
                 if "<<" in m["content"]}
        sent = srv.received
    scores, summary = _outputs(tmp_path, samples)
    sample = draw(ids, 3, 5)
    assert asked == set(sample) and sent == 3
    assert "3 requests for 3 items" in proc.stderr
    assert [s["coherence"] is not None for s in scores] == [d in sample for d in ids]
    record = summary["record"]
    assert record["judge_sample_ids"] == sample and record["judge_not_sampled"] == 4
    assert (record["judge_sample_size"], record["judge_sample_from"], record["judge_sample_seed"]) == (3, 7, 5)
    assert summary["metrics"]["coherence"] == 4.0

"""``domsum rescore`` of judge families against the stub judge server."""

from __future__ import annotations

import json

import pytest

from helpers.judge_server import StubJudgeServer, Text
from lm_eval_tasks.commands.rescore import main
from helpers.rescore import _outputs


def test_a_judge_rating_key_requests_only_that_rating(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    samples = tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl"
    samples.write_text("".join(json.dumps({
        "doc_id": i, "doc": {"id": f"adapteval/pubmed/test/{i}", "document": f"Trial {i} of drug A.",
                             "summary": "Drug A helped."},
        "target": "Drug A helped.", "resps": [[pred]], "filtered_resps": [pred], "filter": "none"}) + "\n"
        for i, pred in enumerate(["Drug A helped patients.", "unparseable-case drug A"])))
    with StubJudgeServer(time_limit_s=60) as srv:
        srv.on("unparseable-case", Text("??"))
        srv.set_default(Text("4"))
        assert main([str(samples), "--metrics", "coherence", "--judge-model", "stub-judge",
                     "--judge-base-url", srv.url, "--judge-cache", "off"]) == 0
        prompts = [m["content"] for b in srv.bodies for m in b["messages"]]
    assert any("Coherence" in p for p in prompts)
    assert not any("Fluency" in p or "Domain Adaptation" in p for p in prompts)
    scores, summary = _outputs(tmp_path, samples)
    assert [s["coherence"] for s in scores] == [4.0, None] and "fluency" not in scores[0]
    assert summary["metrics"] == {"coherence": 4.0}
    assert summary["judge"]["parse_failures"] == {"coherence": 1}
    assert summary["judge"]["n_scored"] == {"coherence": 1}
    assert summary["judge"]["judge_mode"]["coherence"] == "logprobs"
    assert summary["judge"]["judge"]["model"] == "stub-judge"


def test_vanilla_only_makes_no_facet_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    samples = tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl"
    samples.write_text(json.dumps({"doc_id": 0, "doc": {"id": "a/0", "document": "d", "summary": "Reference."},
                                   "target": "Reference.", "filtered_resps": ["Candidate."],
                                   "filter": "none"}) + "\n")
    with StubJudgeServer(time_limit_s=60) as srv:
        srv.set_default(Text("3"))
        assert main([str(samples), "--metrics", "fm_vanilla", "--judge-model", "stub-judge",
                     "--judge-base-url", srv.url, "--judge-cache", "off"]) == 0
        assert srv.received == 1  # one vanilla rating, no facet extraction
    scores, summary = _outputs(tmp_path, samples)
    assert scores[0]["fm_vanilla"] == pytest.approx(0.75) and "fm_detail" not in scores[0]
    assert set(summary["metrics"]) == {"fm_vanilla"}
    assert summary["fm_judge"]["variant"] == "zero" and summary["fm_judge"]["judge"]["model"] == "stub-judge"
    assert summary["fm_judge"]["usage"]["http_calls"] == 1

"""``domsum rescore`` dispatches through the metric registry.

Why these tests: re-scoring a ``--log_samples`` file must report exactly what the
registry (and so a harness run) reports for the same predictions, for every family,
CCSBench controls included, and a key choice must restrict both the output and the
judge calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from custom_metrics import registry
from helpers.judge_server import StubJudgeServer, Text
from lm_eval_tasks.commands.rescore import main

WORDS = "seed banks store samples and germination tests measure viability of crops".split()

#: (prediction words, requested length bin, keywords, readability)
ROWS = [(30, 0, ["seed banks"], "normal"), (80, 1, ["germination", "viability"], "high"),
        (130, 2, ["crops"], "normal"), (60, 2, ["absent keyword"], "high")]


def _text(n: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n))


def _write_ccs_samples(path: Path) -> registry.Batch:
    """A CCSBench samples file as lm-eval writes it; returns the batch the tasks would score."""
    lines, preds, refs, docs, extras = [], [], [], [], []
    for i, (n, length_bin, keywords, readability) in enumerate(ROWS):
        doc = {"id": f"ccs-compositional-test-{i}", "document": f"Document {i}. " + _text(200),
               "summary": _text(40 + 10 * i), "length_bin": length_bin, "keywords": json.dumps(keywords),
               "readability": readability, "focus": "high"}
        pred = _text(n)
        lines.append(json.dumps({"doc_id": i, "doc": doc, "target": doc["summary"], "resps": [[f" {pred} "]],
                                 "filtered_resps": [f" {pred} "], "filter": "none"}))
        preds.append(pred)
        refs.append(doc["summary"])
        docs.append(doc["document"])
        extras.append({"id": doc["id"], "task": "ccsbench_compositional", "length_bin": length_bin,
                       "keywords": keywords, "readability": readability, "focus": "high"})
    path.write_text("\n".join(lines) + "\n")
    return registry.Batch(predictions=preds, references=refs, documents=docs, extras=extras)


def _outputs(out: Path, samples: Path) -> tuple[list[dict], dict]:
    scores = [json.loads(x) for x in (out / f"{samples.stem}.scores.jsonl").read_text().splitlines()]
    return scores, json.loads((out / f"{samples.stem}.summary.json").read_text())


def test_rescore_equals_registry_score_corpus(tmp_path, monkeypatch):
    monkeypatch.delenv("DOMSUM_JUDGE_MODEL", raising=False)
    samples = tmp_path / "samples_ccsbench_compositional_2024-06-01T10-20-30.123456.jsonl"
    batch = _write_ccs_samples(samples)
    families = ["rouge", "ccs_length", "ccs_keywords", "ccs_readability"]
    argv = [str(samples), "--metrics", ",".join(families + ["ccs_focus"]), "--out-dir", str(tmp_path / "o")]
    assert main(argv) == 0
    scores, summary = _outputs(tmp_path / "o", samples)

    ctx = registry.Context(benchmark="ccsbench", subset="compositional")
    assert summary["metrics"] == registry.score_corpus(families, batch, ctx)
    assert summary["benchmark"] == "ccsbench" and summary["domain"] == "compositional"
    # the judged control is skipped without a judge, as in the tasks
    assert summary["skipped"] == {"ccs_focus": "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"}
    per = registry.get("ccs_length").score(batch, ctx)
    assert [s["length_mad"] for s in scores] == per["length_mad"]
    assert [s["length_pcc"] for s in scores] == per["length_pcc"]
    # NaN per-document values (readability not asked of that document) are written as null
    assert [s["fkgl_high"] is None for s in scores] == [True, False, True, False]
    assert summary["record"]["rouge_stemming"] is True


def test_a_key_restricts_the_output_to_it(tmp_path):
    samples = tmp_path / "samples_ccsbench_compositional_2024-06-01T10-20-30.jsonl"
    batch = _write_ccs_samples(samples)
    assert main([str(samples), "--metrics", "rouge1,length_mad,meteor"]) == 0
    scores, summary = _outputs(tmp_path, samples)
    assert set(summary["metrics"]) == {"rouge1", "length_mad", "meteor"}
    assert set(scores[0]) == {"doc_id", "id", "filter", "prediction", "rouge1", "length_mad", "meteor"}
    ctx = registry.Context(benchmark="ccsbench", subset="compositional")
    assert summary["metrics"]["rouge1"] == registry.score_corpus(["rouge"], batch, ctx)["rouge1"]
    # a battery key runs only its battery family (each loads a model)
    skipped = {s["metric"]: s["reason"] for s in summary["record"]["medqsum_skipped"]}
    assert "meteor" not in skipped and skipped["bertscore"] == "not requested"


def test_unknown_metric_lists_the_registry_families(tmp_path, capsys):
    samples = tmp_path / "samples_ccsbench_compositional_2024-06-01T10-20-30.jsonl"
    _write_ccs_samples(samples)
    assert main([str(samples), "--metrics", "rouge,nonsense"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'nonsense'" in err
    assert all(name in err for name in registry.names())


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

"""Per-document values of the medqsum battery aggregate to its corpus numbers.

The harness scores the battery document by document (through the metric registry)
and folds the values with ``mean`` / ``nanmean`` / :func:`corpus_value`;
:func:`medqsum_battery` reports corpus numbers directly. These tests pin the two to
the same numbers, the skip semantics of the per-document view, and the one key whose
corpus value is not linear in documents (``rouge_geo``) against a hand computation.
"""

from __future__ import annotations

import json
import math

import pytest

from conftest import FIXTURE_DATA
from helpers.battery_documents import _aggregation, _mean


def _config(minilm_path, tiny_mlm, tiny_causal_lm, **extra) -> dict:
    """Local substitutes for every default model (as the battery tests configure it)."""
    return {"bertscore_model": minilm_path, "bertscore_layers": 6, "sci_bertscore_model": minilm_path,
            "sci_bertscore_layers": 6, "blanc_model": str(tiny_mlm), "ppl_model": str(tiny_causal_lm),
            "mauve_model": str(tiny_causal_lm), "blanc_tune_epochs": 2, **extra}


def _fixture() -> tuple[list[str], list[str]]:
    path = FIXTURE_DATA / "medqsum" / "hcm" / "test.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [r["document"] for r in rows], [r["summary"] for r in rows]


def test_per_document_values_aggregate_to_battery(minilm_path, tiny_mlm, tiny_causal_lm):
    from custom_metrics.battery import battery_documents, corpus_value, medqsum_battery

    docs, refs = _fixture()
    # a shifted pairing plus one empty prediction: perplexity has no value for it (nanmean)
    preds = [""] + refs[2:] + refs[:1]
    cfg = _config(minilm_path, tiny_mlm, tiny_causal_lm)
    values, facts = battery_documents(preds, refs, docs, config=cfg)
    corpus = medqsum_battery(preds, refs, docs, config=cfg)

    assert facts["skipped"] == corpus["skipped"] == []
    # the reference cache's counters say what earlier calls stored (the second call hits), the rest is equal
    history = ("bertscore_reference_cache",)
    assert ({k: v for k, v in facts["details"].items() if k not in history}
            == {k: v for k, v in corpus["details"].items() if k not in history})
    assert set(facts["timings"]) == set(corpus["timings"])
    json.dumps(values)  # items travel through the harness's sample logs
    for key, how in _aggregation().items():
        per = values[key]
        assert len(per) == len(docs), key
        if how == "mean":
            assert all(math.isfinite(v) for v in per), key
            got = _mean(per)
        elif how == "nanmean":
            finite = [v for v in per if not math.isnan(v)]
            got = _mean(finite)
        else:
            assert all(it is not None for it in per), key
            got = corpus_value(key, per, cfg)
        assert math.isfinite(corpus[key]), key
        assert got == pytest.approx(corpus[key], rel=1e-9, abs=1e-9), key

    assert math.isnan(values["perplexity"][0])  # the empty prediction
    assert facts["details"]["perplexity_scored"] == len(docs) - 1
    assert values["sacrebleu"][1] == [preds[1], refs[1]]


def test_per_document_values_match_the_metric_modules(minilm_path, tiny_mlm, tiny_causal_lm):
    from custom_metrics.battery import battery_documents
    from custom_metrics.families.bertscore import bertscore_per_document
    from custom_metrics.families.bleu import sentence_bleu_scores
    from custom_metrics.families.meteor import meteor_per_document

    docs, refs = _fixture()
    preds = refs[1:] + refs[:1]
    cfg = _config(minilm_path, tiny_mlm, tiny_causal_lm, metrics=["bleu", "meteor", "bertscore"])
    values, _ = battery_documents(preds, refs, docs, config=cfg)
    assert values["bleu"] == sentence_bleu_scores(preds, refs)
    assert values["meteor"] == meteor_per_document(preds, refs)
    assert values["bertscore_f1"] == [f for _, _, f in bertscore_per_document(preds, refs, minilm_path, 6)]


def test_missing_model_gives_nan_values_and_a_skip(tmp_path, caplog, minilm_path, tiny_mlm, tiny_causal_lm):
    from custom_metrics.battery import battery_documents, corpus_value, medqsum_battery

    docs, refs = _fixture()
    preds = refs[1:] + refs[:1]
    cfg = _config(minilm_path, tiny_mlm, tiny_causal_lm, ppl_model=str(tmp_path / "no-gpt2"),
                  mauve_model=str(tmp_path / "no-gpt2-large"), metrics=["rouge", "chrf", "perplexity", "mauve"])
    with caplog.at_level("WARNING"):
        values, facts = battery_documents(preds, refs, docs, config=cfg)
    n = len(docs)
    assert all(math.isnan(v) for v in values["perplexity"]) and len(values["perplexity"]) == n
    assert values["mauve"] == [None] * n
    assert math.isnan(corpus_value("mauve", values["mauve"], cfg))  # no model needed for no items
    skip = {s["metric"]: s for s in facts["skipped"]}
    assert skip["perplexity"]["keys"] == ["perplexity"] and skip["mauve"]["keys"] == ["mauve"]
    assert "no-gpt2" in skip["perplexity"]["reason"] and "DOMSUM_PPL_MODEL" in skip["perplexity"]["reason"]
    assert "mauve_model" in skip["mauve"]["reason"] and "DOMSUM_MAUVE_MODEL" in skip["mauve"]["reason"]
    assert "NOTICE: perplexity skipped" in caplog.text and "NOTICE: mauve skipped" in caplog.text
    # not requested: NaN / None values, listed as such
    assert skip["bleu"]["reason"] == "not requested"
    assert all(math.isnan(v) for v in values["bleu"]) and values["sacrebleu"] == [None] * n
    # every other family still runs
    for key in ("rouge1", "rouge2", "rougeL", "rouge_mean"):
        assert all(math.isfinite(v) for v in values[key]), key
    assert math.isfinite(corpus_value("rouge_geo", values["rouge_geo"], cfg))
    assert math.isfinite(corpus_value("chrf", values["chrf"], cfg))
    assert set(facts["timings"]) == {"rouge", "chrf", "perplexity", "mauve"}
    res = medqsum_battery(preds, refs, docs, config=cfg)
    assert math.isnan(res["perplexity"]) and math.isnan(res["mauve"]) and math.isnan(res["sacrebleu"])
    assert res["skipped"] == facts["skipped"]

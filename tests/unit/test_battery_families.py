"""The medqsum battery as a list of registry families, and its corpus values by hand (no model)."""

from __future__ import annotations

import math

import pytest

from helpers.battery_documents import _aggregation, _mean


def test_battery_is_a_list_of_registry_families():
    from custom_metrics import registry
    from custom_metrics.battery import MEDQSUM
    from lm_eval_tasks import catalog

    aggregation = _aggregation()
    assert set(aggregation.values()) <= {"mean", "nanmean", "corpus"}
    # linear in documents -> mean; corpus statistics, ratios of means, distributions -> corpus
    assert {k for k, a in aggregation.items() if a == "corpus"} == {"sacrebleu", "rouge_geo", "chrf", "mauve"}
    assert aggregation["perplexity"] == "nanmean"
    assert not registry.higher_is_better(["perplexity"])["perplexity"]
    # the catalogue's medqsum tasks report exactly the battery's families
    assert catalog.lookup("medqsum_hcm").families == MEDQSUM == catalog.lookup("medqsum_hcm_2shot").families
    # every output key belongs to exactly one family; general and scientific BERTScore say which
    owners = [registry.family_of(k).name for k in aggregation]
    assert len(owners) == len(set(aggregation))
    assert registry.family_of("bertscore_sci_f1").name == "bertscore_sci"
    assert registry.family_of("bertscore_f1").name == "bertscore"


def test_rouge_geo_corpus_value_by_hand():
    from custom_metrics.battery import battery_documents, corpus_value, medqsum_battery
    from custom_metrics.families.rouge import rouge_per_document

    preds = ["What causes a dry cough at night?", "How is eczema on the hands treated?"]
    refs = ["What causes a nighttime cough in a child?", "What is the treatment for eczema?"]
    per = rouge_per_document(preds, refs)
    m1, m2, ml = ((per[0][k] + per[1][k]) / 2 for k in ("rouge1", "rouge2", "rougeL"))
    assert min(m1, m2, ml) > 0  # otherwise the geometric mean is 0 and the check is weak
    expected = (m1 * m2 * ml) ** (1 / 3)

    cfg = {"metrics": ["rouge"]}
    values, _ = battery_documents(preds, refs, config=cfg)
    assert values["rouge_geo"] == [[d["rouge1"], d["rouge2"], d["rougeL"]] for d in per]
    assert corpus_value("rouge_geo", values["rouge_geo"], cfg) == pytest.approx(expected, rel=1e-12)
    assert medqsum_battery(preds, refs, config=cfg)["rouge_geo"] == pytest.approx(expected, rel=1e-12)
    # not the mean of per-document geometric means
    per_doc_geo = [(d["rouge1"] * d["rouge2"] * d["rougeL"]) ** (1 / 3) for d in per]
    assert _mean(per_doc_geo) != pytest.approx(expected, rel=1e-6)
    assert _mean(values["rouge_mean"]) == pytest.approx((m1 + m2 + ml) / 3, rel=1e-12)
    # a skipped document (None item) is left out
    doc0 = per[0]
    alone = (doc0["rouge1"] * doc0["rouge2"] * doc0["rougeL"]) ** (1 / 3)
    assert corpus_value("rouge_geo", [values["rouge_geo"][0], None], cfg) == pytest.approx(alone, rel=1e-12)


def test_corpus_bleu_and_chrf_items_and_errors():
    import sacrebleu

    from custom_metrics.battery import battery_documents, corpus_value

    preds, refs = ["the cat sat on the mat", "a dog", "unused"], ["the cat sat on a mat", "a dog barked", "x"]
    values, facts = battery_documents(preds, refs, config={"metrics": ["bleu", "chrf"]})
    assert facts["details"]["sacrebleu_signature"].startswith("nrefs:1")
    assert "nc:6" in facts["details"]["chrf_signature"]
    # corpus statistics over the documents that have items
    items = values["sacrebleu"][:2] + [None]
    assert corpus_value("sacrebleu", items) == pytest.approx(sacrebleu.corpus_bleu(preds[:2], [refs[:2]]).score)
    chrf_items = values["chrf"][:2] + [None]
    assert corpus_value("chrf", chrf_items) == pytest.approx(sacrebleu.corpus_chrf(preds[:2], [refs[:2]]).score)
    assert math.isnan(corpus_value("chrf", [None, None]))
    assert math.isnan(corpus_value("sacrebleu", []))
    with pytest.raises(ValueError, match="not a corpus key"):
        corpus_value("bleu", values["bleu"])
    with pytest.raises(ValueError, match="unknown metric families"):
        battery_documents(preds, refs, config={"metrics": ["bleurt"]})
    with pytest.raises(ValueError, match="2 references"):
        battery_documents(preds, refs[:2])

"""Unit tests of the medqsum metric battery and task glue (hand-computed cases, offline)."""

import math

import numpy as np
import pytest


def test_sentence_bleu_hand_case():
    from custom_metrics.families.bleu import sentence_bleu_scores

    # precisions 5/6, 3/5, 2/4, 1/3; equal lengths so BP = 1
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    got = sentence_bleu_scores(["the cat sat on the mat"], ["the cat sat on a mat"])
    assert got[0] == pytest.approx(expected, abs=1e-9)


def test_sentence_bleu_exp_smoothing_and_effective_order():
    from custom_metrics.families.bleu import sentence_bleu_scores

    # 2-token candidate: orders 1-2 only; p1 = 1/2, p2 = 0 -> (1/2**1)/1 = 1/2
    assert sentence_bleu_scores(["the cat"], ["the dog"])[0] == pytest.approx(50.0, abs=1e-9)
    assert sentence_bleu_scores([""], ["the dog"])[0] == 0.0


def test_corpus_sacrebleu_hand_case_and_signature():
    import sacrebleu

    from custom_metrics.families.bleu import corpus_sacrebleu

    preds, refs = ["the cat sat on the mat", "a dog"], ["the cat sat on a mat", "a dog barked"]
    # summed counts: 1-gram 7/8, 2-gram 4/6, 3-gram 2/4, 4-gram 1/3; c = 8, r = 9
    expected = 100 * math.exp(1 - 9 / 8) * (7 / 8 * 4 / 6 * 2 / 4 * 1 / 3) ** 0.25
    res = corpus_sacrebleu(preds, refs)
    assert res["sacrebleu"] == pytest.approx(expected, abs=1e-9)
    assert res["sacrebleu"] == pytest.approx(sacrebleu.corpus_bleu(preds, [refs]).score)
    sig = res["sacrebleu_signature"]
    assert "tok:13a" in sig and "smooth:exp" in sig and "nrefs:1" in sig and "version:" in sig


def test_chrf_identity_and_reference_agreement():
    import sacrebleu

    from custom_metrics.families.bleu import chrf_scores, sentence_chrf_scores

    assert chrf_scores(["What causes a cough?"], ["What causes a cough?"])["chrf"] == pytest.approx(100.0)
    preds = ["What causes night cough?", "How is eczema treated?"]
    refs = ["What causes a nighttime cough in a child?", "What is the treatment for a scaly rash?"]
    res = chrf_scores(preds, refs)
    assert res["chrf"] == pytest.approx(sacrebleu.corpus_chrf(preds, [refs]).score)
    assert "nc:6" in res["chrf_signature"]
    per = sentence_chrf_scores(preds, refs)
    assert per[0] == pytest.approx(sacrebleu.sentence_chrf(preds[0], [refs[0]]).score)


def test_meteor_hand_cases_exact_and_stem():
    from custom_metrics.families.meteor import meteor_per_document

    got = meteor_per_document(["the cat sat", "cats sat the", "the cat"],
                              ["the cat sat", "the cat sat", "the cat sat on mat"], use_wordnet=False)
    # identical: m = 3, 1 chunk -> 1 - 0.5 * (1/3)**3
    assert got[0] == pytest.approx(1 - 0.5 / 27)
    # cats~cat by stem; chunks (cats sat)(the) -> 1 - 0.5 * (2/3)**3
    assert got[1] == pytest.approx(1 - 0.5 * (2 / 3) ** 3)
    # P = 1, R = 2/5: Fmean = P R / (0.9 P + 0.1 R); 1 chunk of 2 -> penalty 0.5 * (1/2)**3
    f = 0.4 / (0.9 + 0.04)
    assert got[2] == pytest.approx(f * (1 - 0.5 / 8))


def test_meteor_agrees_with_nltk_and_reports_matching():
    from nltk.translate.meteor_score import meteor_score

    from custom_metrics.families.meteor import MATCH_STEM, _NoSynonyms, meteor_per_document, meteor_scores, wordnet_reader
    from custom_metrics.tokenize import word_tokenize

    preds = ["What causes morning headaches?", "How are swollen ankles treated in pregnancy?"]
    refs = ["What causes morning headaches that improve during the day?",
            "Is sudden swelling of hands and ankles normal at 28 weeks of pregnancy?"]
    wn = wordnet_reader() or _NoSynonyms()
    for p, r, got in zip(preds, refs, meteor_per_document(preds, refs)):
        ref = meteor_score([word_tokenize(r, lowercase=False)], word_tokenize(p, lowercase=False), wordnet=wn)
        assert got == pytest.approx(ref)
    res = meteor_scores(preds, refs, use_wordnet=False)
    assert res["meteor_matching"] == MATCH_STEM
    expected = "exact+stem+wordnet" if wordnet_reader() is not None else "exact+stem"
    assert meteor_scores(preds, refs)["meteor_matching"] == expected
    assert meteor_per_document([""], ["x y"]) == [0.0]


def test_mauve_from_histograms_hand_cases():
    from custom_metrics.families.mauve import divergence_curve, mauve_from_histograms

    p = np.array([0.5, 0.5])
    assert mauve_from_histograms(p, p) == pytest.approx(1.0)
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    # disjoint: points ((1-w)**5, w**5): a thin curve hugging the axes
    v = mauve_from_histograms(a, b)
    assert 0.0 < v < 0.05
    assert v == pytest.approx(mauve_from_histograms(b, a))
    curve = divergence_curve(a, b)
    assert tuple(curve[0]) == (1.0, 0.0) and tuple(curve[-1]) == (0.0, 1.0)
    w = np.linspace(1e-6, 1 - 1e-6, 25)
    assert np.allclose(curve[1:-1, 0], (1 - w) ** 5) and np.allclose(curve[1:-1, 1], w ** 5)
    # closer histograms score higher
    assert mauve_from_histograms(np.array([0.6, 0.4]), np.array([0.4, 0.6])) > \
        mauve_from_histograms(np.array([0.9, 0.1]), np.array([0.1, 0.9]))


def test_mauve_quantize_numpy_and_sklearn_agree():
    from custom_metrics.families.mauve import mauve_from_features, quantize

    rng = np.random.default_rng(0)
    p = np.vstack([rng.normal([5, 0, 0], 0.1, (30, 3)), rng.normal([0, 5, 0], 0.1, (10, 3))])
    q = np.vstack([rng.normal([5, 0, 0], 0.1, (10, 3)), rng.normal([0, 5, 0], 0.1, (30, 3))])
    hp, hq = quantize(p, q, num_clusters=2, impl="numpy")
    assert sorted(hp.tolist()) == pytest.approx([0.25, 0.75]) and sorted(hq.tolist()) == pytest.approx([0.25, 0.75])
    assert np.argmax(hp) != np.argmax(hq)
    pytest.importorskip("sklearn")
    assert mauve_from_features(p, q, 2, impl="numpy") == pytest.approx(mauve_from_features(p, q, 2, impl="sklearn"))
    assert mauve_from_features(p, p.copy(), 2, impl="numpy") == pytest.approx(1.0)


def test_battery_hub_id_unavailable_offline(monkeypatch):
    from custom_metrics.battery import medqsum_battery

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = medqsum_battery(["What causes a cough?"], ["What causes a cough?"], ["I cough."],
                          config={"mauve_model": "no-such-org/no-such-model", "metrics": ["mauve", "chrf"]})
    reason = next(s["reason"] for s in res["skipped"] if s["metric"] == "mauve")
    assert "no-such-org/no-such-model" in reason and "hf download no-such-org/no-such-model" in reason
    assert res["chrf"] == pytest.approx(100.0)


def test_patient_question_strips_doctor_reply():
    from lm_eval_tasks.benchmarks.medqsum.build import patient_question

    src = "Patient: I get cramps in my forearm when I bend it. Could a pinched nerve cause this? Doctor: Hi there. It may be an entrapment."
    assert patient_question(src) == "I get cramps in my forearm when I bend it. Could a pinched nerve cause this?"
    assert patient_question("My knee hurts after running.") == "My knee hurts after running."
    assert patient_question("patient:  Why do I cough?") == "Why do I cough?"


def test_prompts_and_few_shot_are_seeded(fixture_data_dir):
    from lm_eval_tasks.catalog import task_examples
    from lm_eval_tasks.benchmarks.medqsum.build import INSTRUCTION, build_docs

    meta = {"data_dir": str(fixture_data_dir)}
    zero, _ = build_docs("hcm", 0, "medqsum_hcm", dict(meta))
    assert len(zero) == 8
    assert zero[0]["prompt"] == f"{INSTRUCTION}\nQuestion: {zero[0]['document']}\nSummary:"
    two, facts = build_docs("hcm", 2, "medqsum_hcm_2shot", dict(meta))
    assert facts == {"fewshot_seed_used": 1234}
    assert two[0]["prompt"].count("\nSummary:") == 3 and two[0]["prompt"].endswith("\nSummary:")
    assert two[0]["prompt"].count("Question:") == 3 and len(two[0]["demo_ids"]) == 2
    assert [d["demo_ids"] for d in two] == [d["demo_ids"] for d in build_docs("hcm", 2, "x", dict(meta))[0]]
    assert all(i.startswith("hcm-train-") for d in two for i in d["demo_ids"])
    short, _ = build_docs("hcm", 0, "medqsum_hcm", {**meta, "max_doc_words": 5})
    assert short[0]["prompt"].endswith("Question: Hi doctor, for the past\nSummary:")
    ex = task_examples("medqsum_hcm_2shot", metadata=meta)
    assert ex[0]["prompt"] == two[0]["prompt"]
    assert task_examples("medqsum_hcm", split="train", metadata=meta)[0]["summary"].startswith("Does ringing")


def test_hub_source_strips_doctor_reply(monkeypatch):
    import datasets

    from lm_eval_tasks.benchmarks.sources import HUB_SOURCES
    from lm_eval_tasks.benchmarks.medqsum.build import load_records

    src = HUB_SOURCES[("medqsum", "hcm")]
    assert (src.path, src.name, src.document, src.summary) == ("lighteval/med_dialog", "healthcaremagic", "src", "tgt")
    calls = []

    def fake_load(path, name=None, split=None):
        calls.append((path, name, split))
        return datasets.Dataset.from_list([
            {"src": "Patient: My ear rings after a concert. Will it stop? Doctor: Usually it fades in days.",
             "tgt": "Does ringing in the ear after loud noise go away?"},
            {"src": "Patient:  Doctor: nothing asked", "tgt": "Empty question?"},
        ])

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.delenv("DOMSUM_DATA_DIR", raising=False)
    recs = load_records("hcm", "test", "medqsum_hcm", {})
    assert calls == [("lighteval/med_dialog", "healthcaremagic", "test")]
    assert [r["document"] for r in recs] == ["My ear rings after a concert. Will it stop?"]
    assert recs[0]["summary"].startswith("Does ringing")


def test_task_settings_from_metadata_then_env(monkeypatch):
    from custom_metrics import battery, registry
    from lm_eval_tasks import settings

    monkeypatch.setenv("DOMSUM_PPL_MODEL", "/env/gpt2")
    monkeypatch.setenv("DOMSUM_MAUVE_MODEL", "/env/gpt2-large")
    meta = {"mauve_model": "/meta/lm", "medqsum_metrics": "bleu, mauve", "metric_batch_size": 4}
    ppl = settings.resolve_many(meta, registry.get("perplexity").settings)
    mauve = settings.resolve_many(meta, registry.get("mauve").settings)
    assert registry.get("perplexity").model(registry.Context(settings=ppl)) == "/env/gpt2"
    assert registry.get("mauve").model(registry.Context(settings=mauve)) == "/meta/lm"
    assert mauve["metric_batch_size"] == 4
    assert battery.requested(battery.MEDQSUM, settings.resolve(meta, "medqsum_metrics")) == ["bleu", "mauve"]

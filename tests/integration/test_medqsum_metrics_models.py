"""MedQSum metrics that load a model: perplexity and MAUVE on the tiny GPT-2, BLANC on
MiniLM's tokenizer and the tiny BERT, and the whole battery with substitute models.
"""

import json
import math

import numpy as np
import pytest

from conftest import FIXTURE_DATA


def test_perplexity_batched_matches_per_text_loss(tiny_causal_lm):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from custom_metrics.families.perplexity import perplexity_per_text, perplexity_scores

    texts = ["What causes a cough?", "", "How should tingling feet be managed in a patient with diabetes?", "Why?"]
    got = perplexity_per_text(texts, str(tiny_causal_lm), batch_size=3)
    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    lm = AutoModelForCausalLM.from_pretrained(tiny_causal_lm).eval()
    for t, g in zip(texts, got):
        if not t:
            assert math.isnan(g)
            continue
        ids = torch.tensor([[tok.bos_token_id] + tok(t, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            loss = lm(input_ids=ids, labels=ids).loss
        assert g == pytest.approx(math.exp(float(loss)), rel=1e-4)
    agg = perplexity_scores(texts, str(tiny_causal_lm))
    finite = [g for g in got if not math.isnan(g)]
    assert agg["perplexity_scored"] == 3
    assert agg["perplexity"] == pytest.approx(sum(finite) / 3, rel=1e-6)


def test_mauve_on_texts(tiny_causal_lm):
    from custom_metrics.families.mauve import featurize, mauve_scores

    texts = ["What causes a cough?", "How is eczema treated?", "Why do my knees swell?", "Is this rash serious?"]
    feats = featurize(texts + [""], str(tiny_causal_lm))
    assert feats.shape[0] == 4 and np.isfinite(feats).all()
    res = mauve_scores(texts, list(reversed(texts)), str(tiny_causal_lm))
    assert res["mauve"] == pytest.approx(1.0)  # same multiset of texts
    assert res["mauve_texts"] == [4, 4]
    assert math.isnan(mauve_scores(["one"], ["two"], str(tiny_causal_lm))["mauve"])


class _FirstTokenMLM:
    """Fake MLM: at every position predicts the first input token that is not special/filler."""

    def __init__(self, ignore, vocab):
        import torch

        self.ignore, self.vocab = set(ignore), vocab
        self._p = torch.nn.Parameter(torch.zeros(1))

    def parameters(self):
        return iter([self._p])

    def __call__(self, input_ids, attention_mask):
        import torch

        b, n = input_ids.shape
        logits = torch.zeros(b, n, self.vocab)
        for i in range(b):
            first = next(int(t) for t in input_ids[i] if int(t) not in self.ignore)
            logits[i, :, first] = 1.0

        class Out:
            pass

        out = Out()
        out.logits = logits
        return out


def test_blanc_help_hand_cases(monkeypatch, minilm_path):
    from transformers import AutoTokenizer

    from custom_metrics.families import blanc

    tok = AutoTokenizer.from_pretrained(minilm_path)
    fake = _FirstTokenMLM({tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.mask_token_id,
                           tok.convert_tokens_to_ids(".")}, len(tok))
    monkeypatch.setattr(blanc, "_setup", lambda model: (tok, fake, 512))
    # source "diabetes causes fatigue": every token is >= 4 characters, one mask per offset 0-2.
    # summary "diabetes": offset 0 helped right / base ("causes") wrong; offsets 1, 2 both wrong -> 1/3
    # summary "heart", source "diabetes diabetes causes": base right twice, helped never -> -2/3
    got = blanc.blanc_help_per_document(["diabetes", "heart", ""],
                                        ["diabetes causes fatigue", "diabetes diabetes causes", "diabetes causes"])
    assert got == pytest.approx([1 / 3, -2 / 3, 0.0])


def test_blanc_maskable_tokens(minilm_path):
    from transformers import AutoTokenizer

    from custom_metrics.families.blanc import BlancParams, _masked, _Tokens, split_sentences

    tok = AutoTokenizer.from_pretrained(minilm_path)
    t = _Tokens(tok, "the metformin dose is high", BlancParams())
    # the(3) no; met(lead, 3 >= 2) yes; ##form, ##in (continuations) no; dose(4) yes; is no; high(4) yes
    assert t.ok == [False, True, False, False, True, False, True]
    ids, pos = _masked(t, 1, 6, tok.mask_token_id)
    assert pos == [1] and ids[1] == tok.mask_token_id
    assert _masked(t, 0, 6, tok.mask_token_id)[1] == [6]  # position 0 "the" too short; 6 "high"
    assert split_sentences("I have a cough. Is it serious? Yes!") == ["I have a cough.", "Is it serious?", "Yes!"]


def test_blanc_on_tiny_mlm(tiny_mlm):
    from custom_metrics.families.blanc import BlancParams, blanc_help_per_document, blanc_tune_per_document

    summ = ["diabetes causes fatigue and thirst"]
    src = ["Patients with diabetes describe fatigue and thirst. Doctors check glucose levels."]
    h = blanc_help_per_document(summ, src, str(tiny_mlm))
    assert -1.0 <= h[0] <= 1.0
    assert blanc_tune_per_document(summ, src, str(tiny_mlm), BlancParams(tune_epochs=0)) == [0.0]
    # a strong, seeded fine-tuning on the summary teaches the tiny MLM the summary's words,
    # so the tuned copy fills more of the source's masks than the random original
    strong = BlancParams(tune_epochs=30, tune_lr=1e-2)
    t1 = blanc_tune_per_document(summ, ["diabetes causes fatigue and thirst."], str(tiny_mlm), strong)
    t2 = blanc_tune_per_document(summ, ["diabetes causes fatigue and thirst."], str(tiny_mlm), strong)
    assert t1 == t2 and t1[0] > 0


def test_blanc_head_only_at_masked_positions_matches_full_logits(tiny_mlm):
    from transformers import AutoModelForMaskedLM

    from custom_metrics.families.blanc import _head, _predict

    mlm = AutoModelForMaskedLM.from_pretrained(tiny_mlm).eval()

    class FullLogits:  # no base_model: the full-vocabulary path
        def parameters(self):
            return mlm.parameters()

        def __call__(self, **kw):
            return mlm(**kw)

    inputs = [[101, 2000, 103, 2003, 103, 102], [101, 103, 2001, 102], [101, 2001, 102]]
    positions = [[2, 4], [1], []]
    assert _head(mlm) is not None and _head(FullLogits()) is None
    assert _predict(mlm, inputs, positions, 0, 2) == _predict(FullLogits(), inputs, positions, 0, 2)
    # the fine-tuning loss on masked positions only equals the MLM's own labelled loss
    import torch

    x = torch.tensor([[101, 2000, 103, 2003, 103, 102]])
    y = torch.tensor([[-100, -100, 2001, -100, 2002, -100]])
    with torch.no_grad():
        ref = mlm(input_ids=x, labels=y).loss
        hidden = mlm.base_model(input_ids=x)[0]
        ours = torch.nn.functional.cross_entropy(_head(mlm)(hidden[y != -100]), y[y != -100])
    assert float(ours) == pytest.approx(float(ref), rel=1e-5)


def _substitutes(minilm_path, tiny_mlm, tiny_causal_lm, **extra):
    return {"bertscore_model": minilm_path, "bertscore_layers": 6, "sci_bertscore_model": minilm_path,
            "sci_bertscore_layers": 3, "blanc_model": str(tiny_mlm), "ppl_model": str(tiny_causal_lm),
            "mauve_model": str(tiny_causal_lm), "blanc_tune_epochs": 2, **extra}


def _fixture():
    rows = [json.loads(x) for x in (FIXTURE_DATA / "medqsum" / "hcm" / "test.jsonl").read_text().splitlines()]
    return [r["document"] for r in rows], [r["summary"] for r in rows]


def test_battery_every_metric_with_substitutes(minilm_path, tiny_mlm, tiny_causal_lm):
    from custom_metrics import registry
    from custom_metrics.battery import MEDQSUM, medqsum_battery
    from custom_metrics.families.bertscore import bertscore
    from custom_metrics.families.rouge import rouge_scores

    docs, refs = _fixture()
    preds = refs[1:] + refs[:1]
    res = medqsum_battery(preds, refs, docs, config=_substitutes(minilm_path, tiny_mlm, tiny_causal_lm))
    assert res["skipped"] == []
    for k in (k for name in MEDQSUM for k in registry.family_keys(name)):
        assert math.isfinite(res[k]), k
    assert set(res["timings"]) == set(MEDQSUM)
    assert res["rouge1"] == pytest.approx(rouge_scores(preds, refs)["rouge1"])
    assert res["bertscore_f1"] == pytest.approx(bertscore(preds, refs, minilm_path, 6)["bertscore_f1"])
    assert res["bertscore_sci_f1"] == pytest.approx(bertscore(preds, refs, minilm_path, 3)["bertscore_f1"])
    assert res["bertscore_sci_f1"] != pytest.approx(res["bertscore_f1"])
    assert res["mauve"] == pytest.approx(1.0)  # a permutation of the references
    assert res["details"]["sacrebleu_signature"].startswith("nrefs:1")
    assert res["details"]["meteor_matching"] in ("exact+stem", "exact+stem+wordnet")
    assert res["details"]["models"]["perplexity"] == str(tiny_causal_lm)


def test_battery_skips_missing_model_with_notice(tmp_path, caplog, minilm_path, tiny_mlm, tiny_causal_lm):
    from custom_metrics.battery import medqsum_battery

    docs, refs = _fixture()
    cfg = _substitutes(minilm_path, tiny_mlm, tiny_causal_lm, ppl_model=str(tmp_path / "no-gpt2"),
                       metrics=["bleu", "perplexity", "mauve"])
    with caplog.at_level("WARNING"):
        res = medqsum_battery(refs, refs, docs, config=cfg)
    assert math.isnan(res["perplexity"])
    assert math.isfinite(res["bleu"]) and math.isfinite(res["mauve"])
    assert math.isnan(res["rouge1"])  # not requested
    skip = {s["metric"]: s["reason"] for s in res["skipped"]}
    assert "no-gpt2" in skip["perplexity"] and "ppl_model" in skip["perplexity"]
    assert "DOMSUM_PPL_MODEL" in skip["perplexity"]
    assert skip["rouge"] == "not requested"
    assert "NOTICE: perplexity skipped" in caplog.text
    with pytest.raises(ValueError, match="unknown metric families"):
        medqsum_battery(refs, refs, docs, config={"metrics": ["bleurt"]})

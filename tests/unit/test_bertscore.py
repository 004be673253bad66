"""BERTScore without an encoder: the library's default layer and the batching rule."""

from importlib import import_module

import pytest

from custom_metrics.families.bertscore import scorer_signature


@pytest.fixture(autouse=True)
def _private_reference_cache(tmp_path, monkeypatch):
    """Reference embeddings go to this test's folder, not ~/.cache (tests/test_reference_cache.py tests the cache)."""
    monkeypatch.setenv("DOMSUM_SCORE_CACHE", str(tmp_path / "scores"))


def test_library_default_is_roberta_large_layer_17():
    sig = scorer_signature()
    assert (sig["bertscore_model"], sig["bertscore_layers"]) == ("roberta-large", 17)


def test_batches_respect_count_and_token_budget():
    bs = import_module("custom_metrics.families.bertscore")
    order = ["a", "b", "c", "d", "e"]
    lengths = [10, 10, 20, 30, 600]
    assert list(bs._batches(order, lengths, 64, None)) == [order]
    assert list(bs._batches(order, lengths, 2, None)) == [["a", "b"], ["c", "d"], ["e"]]
    # padded tokens (width x texts) <= 60: a, b, c (3 x 20); d (d, e would be 2 x 600);
    # e alone although 600 > 60: a batch always holds at least one text
    assert list(bs._batches(order, lengths, 64, 60)) == [["a", "b", "c"], ["d"], ["e"]]

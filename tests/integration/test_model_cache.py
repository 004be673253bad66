"""The bounded scorer-model cache (custom_metrics.model_cache): bound, LRU order, keys,
release, holders, threads; and the metrics that load through it."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from custom_metrics import devices, model_cache
from custom_metrics.model_cache import MAX_MODELS, ModelCache


class Model:
    """A stand-in for a loaded model (weakly referenceable, so freeing can be observed)."""

    def __init__(self, name: str) -> None:
        self.name = name


def _loader(calls: list, name: str):
    def load() -> Model:
        calls.append(name)
        return Model(name)
    return load


def test_bound_evicts_the_least_recently_used():
    cache, calls = ModelCache(2), []
    a = cache.get(("kind", "a"), _loader(calls, "a"))
    cache.get(("kind", "b"), _loader(calls, "b"))
    assert cache.get(("kind", "a"), _loader(calls, "a")) is a  # a is now the most recent
    cache.get(("kind", "c"), _loader(calls, "c"))
    assert cache.loaded() == [("kind", "a"), ("kind", "c")]
    assert calls == ["a", "b", "c"]
    assert cache.stats == model_cache.CacheStats(loads=3, hits=1, evictions=1, released=0)
    cache.get(("kind", "b"), _loader(calls, "b"))  # evicted: loaded again, a goes now
    assert calls[-1] == "b" and cache.loaded() == [("kind", "c"), ("kind", "b")]


def test_the_process_cache_has_the_documented_small_bound():
    assert model_cache.MODELS.max_entries == MAX_MODELS == 4
    with pytest.raises(ValueError):
        ModelCache(0)


def test_keys_separate_kind_model_and_settings():
    cache, calls = ModelCache(8), []
    keys = [("bertscore", "m", 6), ("bertscore", "m", 5), ("bertscore", "n", 6), ("causal", "m"), ("masked", "m")]
    got = [cache.get(k, _loader(calls, str(k))) for k in keys]
    assert len({id(g) for g in got}) == len(keys) and len(calls) == len(keys)
    assert [cache.get(k, _loader(calls, "again")) for k in keys] == got
    assert cache.stats.loads == len(keys) and cache.stats.hits == len(keys)


def test_release_drops_and_frees_and_keeps_what_is_named():
    cache = ModelCache()
    refs = {k: weakref.ref(cache.get(k, lambda k=k: Model(k[1]))) for k in
            [("bertscore", "enc", 6), ("causal", "gpt2"), ("masked", "bert")]}
    assert sorted(cache.release(keep=["enc"])) == [("causal", "gpt2"), ("masked", "bert")]
    assert cache.loaded() == [("bertscore", "enc", 6)]
    assert refs[("causal", "gpt2")]() is None and refs[("masked", "bert")]() is None  # freed
    assert refs[("bertscore", "enc", 6)]() is not None
    assert cache.release() == [("bertscore", "enc", 6)] and cache.loaded() == []
    assert refs[("bertscore", "enc", 6)]() is None and cache.stats.released == 3


def test_release_empties_the_gpu_cache_when_cuda_is_in_use(monkeypatch):
    import torch

    emptied = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    cache = ModelCache()
    cache.get(("causal", "x"), lambda: Model("x"))
    cache.release()
    assert emptied == [1]
    assert cache.release() == [] and emptied == [1]  # nothing dropped: nothing to free


def test_release_without_an_accelerator_runs_no_full_collection(monkeypatch):
    """CPU only: dropped models go by reference counting; no gc.collect, no cache emptying."""
    import torch

    collected, emptied = [], []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    monkeypatch.setattr(model_cache.gc, "collect", lambda *a: collected.append(1) or 0)
    cache = ModelCache()
    ref = weakref.ref(cache.get(("causal", "x"), lambda: Model("x")))
    assert model_cache.accelerator_in_use() is False
    assert cache.release() == [("causal", "x")]
    assert ref() is None and collected == [] and emptied == []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert model_cache.free_accelerator_memory() is True and collected == [1] and emptied == [1]


def test_a_failed_load_caches_nothing():
    cache, calls = ModelCache(), []

    def broken():
        calls.append(1)
        raise OSError("no such model")

    for _ in range(2):
        with pytest.raises(OSError):
            cache.get(("causal", "missing"), broken)
    assert calls == [1, 1] and cache.loaded() == [] and cache.stats.loads == 0


def test_threads_asking_for_one_model_load_it_once():
    cache, calls = ModelCache(), []
    gate = threading.Event()

    def slow() -> Model:
        calls.append(1)
        gate.wait(5)
        return Model("enc")

    got: list = []
    threads = [threading.Thread(target=lambda: got.append(cache.get(("bertscore", "enc", 6), slow)))
               for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    # another model is served while the first is still loading
    assert cache.get(("causal", "other"), lambda: Model("other")).name == "other"
    gate.set()
    for t in threads:
        t.join(10)
    assert calls == [1] and len(got) == 8 and len({id(g) for g in got}) == 1
    assert cache.stats.loads == 2 and cache.stats.hits == 7


def test_threads_under_a_small_bound_stay_consistent(monkeypatch):
    monkeypatch.setattr(model_cache, "free_accelerator_memory", lambda: None)  # gc.collect per eviction
    cache = ModelCache(2)
    errors: list = []

    def work(i: int) -> None:
        try:
            for j in range(200):
                key = ("causal", f"m{(i + j) % 5}")
                assert cache.get(key, lambda key=key: Model(key[1])).name == key[1]
                if j % 50 == 0:
                    cache.release(keep=["m0"])
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(cache.loaded()) <= 2
    s = cache.stats  # every load is one entry: none loaded twice at once, none lost
    assert s.loads + s.hits == 6 * 200 and s.loads - s.evictions - s.released == len(cache.loaded())


class Owner:
    """A task-like holder (hashable, weakly referenceable)."""


def test_holders_keep_their_models_until_the_last_lets_go():
    cache = ModelCache()
    first, second = Owner(), Owner()
    cache.hold(first, ["enc"])
    cache.hold(second, ["enc", "gpt2"])
    for k in [("bertscore", "enc", 6), ("causal", "gpt2"), ("causal", "unheld")]:
        cache.get(k, lambda k=k: Model(k[1]))
    assert cache.let_go(first) == [("causal", "unheld")]  # the second task still needs both
    assert cache.held() == {"enc", "gpt2"}
    assert sorted(cache.let_go(second, keep=["gpt2"])) == [("bertscore", "enc", 6)]
    assert cache.loaded() == [("causal", "gpt2")]  # kept for the second's corpus aggregation
    del second
    gc.collect()
    assert cache.held() == set()  # a holder that is gone holds nothing
    assert cache.let_go(Owner()) == [("causal", "gpt2")]


def test_family_models_names_what_a_task_holds():
    from custom_metrics import registry

    ctx = registry.Context(settings={"bertscore_model": "enc", "mauve_model": "lm"})
    both = {"rouge": registry.Context(), "bertscore": ctx, "mauve": ctx}
    assert registry.family_models(both) == {"enc", "lm"}
    assert registry.family_models(both, corpus_only=True) == {"lm"}  # MAUVE featurizes at aggregation


# --------------------------------------------------------------------------- the metrics use it


def test_bertscore_encoders_come_from_the_one_cache(minilm_path):
    from custom_metrics.families.bertscore import get_scorer

    model_cache.release()
    before = model_cache.stats()
    enc = get_scorer(minilm_path, 6)
    assert get_scorer(minilm_path, 6) is enc
    assert ("bertscore", minilm_path, 6, enc.device) in model_cache.loaded()  # keyed by the scorers' device
    after = model_cache.stats()
    assert after.loads - before.loads == 1 and after.hits - before.hits == 1
    ref = weakref.ref(enc)
    del enc
    model_cache.release()
    assert ref() is None and model_cache.loaded() == []


def test_language_models_come_from_the_one_cache(tiny_causal_lm):
    from custom_metrics.hf_models import load_model

    model_cache.release()
    tok, lm = load_model("causal", str(tiny_causal_lm), metric="perplexity")
    assert load_model("causal", str(tiny_causal_lm), metric="mauve")[1] is lm
    assert model_cache.loaded() == [("causal", str(tiny_causal_lm), devices.current())]  # keyed by the device
    model_cache.release()

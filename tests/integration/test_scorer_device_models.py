"""The scorer models load on the device setting ``scorer_device`` chose (CPU here: CI has no GPU),
and the model cache keeps one copy per device."""

from __future__ import annotations

from custom_metrics import devices, model_cache
from custom_metrics.families.bertscore import get_scorer
from custom_metrics.hf_models import load_model, model_device


def test_encoder_and_language_models_load_on_the_chosen_device(minilm_path):
    devices.use("cpu")
    try:
        enc = get_scorer(minilm_path, 6)
        _, lm = load_model("masked", minilm_path, metric="blanc")
        assert enc.device == "cpu" and model_device(enc.model).type == "cpu"
        assert model_device(lm).type == "cpu"
        keys = model_cache.loaded()
        assert ("bertscore", minilm_path, 6, "cpu") in keys and ("masked", minilm_path, "cpu") in keys
    finally:
        devices.use(None)
        model_cache.release()

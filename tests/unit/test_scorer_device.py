"""Setting ``scorer_device``: its values, the device ``auto`` chooses beside a sharded model,
and explicit devices that cannot be used, each a one-line error naming the setting."""

from __future__ import annotations

import pytest

from custom_metrics import devices
from custom_metrics.families.bertscore import default_device
from lm_eval_tasks import catalog, settings
from lm_eval_tasks.harness_parts.devices import occupied_gpus, scorer_device
from lm_eval_tasks.harness_parts.scoring import ShardScoring

ONE_PROCESS: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _default_device(monkeypatch):
    monkeypatch.delenv("DOMSUM_SCORER_DEVICE", raising=False)
    yield
    devices.use(None)


@pytest.mark.parametrize("given,parsed", [("auto", "auto"), ("CPU", "cpu"), ("cuda", "cuda:0"), ("cuda:3", "cuda:3"),
                                          (" mps ", "mps")])
def test_values_accepted(given, parsed):
    assert settings.resolve({"scorer_device": given}, "scorer_device") == parsed


@pytest.mark.parametrize("bad", ["gpu0", "cuda:x", "tpu", "cuda:-1"])
def test_an_invalid_device_is_one_line_naming_the_key(bad, monkeypatch):
    with pytest.raises(settings.SettingError) as exc:
        settings.resolve({"scorer_device": bad}, "scorer_device")
    msg = str(exc.value)
    assert "'scorer_device'" in msg and repr(bad) in msg and "cuda:N" in msg and "\n" not in msg
    monkeypatch.setenv("DOMSUM_SCORER_DEVICE", bad)
    with pytest.raises(settings.SettingError, match=r"\$DOMSUM_SCORER_DEVICE"):
        settings.resolve({}, "scorer_device")


@pytest.mark.parametrize("meta,gpus,environ,expected", [
    ({}, 0, ONE_PROCESS, "cpu"),                                       # no GPU
    ({}, 2, ONE_PROCESS, "cuda:0"),                                    # an unsharded model shares its GPU
    ({"parallelize": "True"}, 4, ONE_PROCESS, "cpu"),                  # HF sharded over every GPU
    ({"parallelize": "False"}, 4, ONE_PROCESS, "cuda:0"),
    ({"tensor_parallel_size": 2}, 4, ONE_PROCESS, "cuda:2"),           # vLLM holds its first 2 GPUs
    ({"tensor_parallel_size": 2, "data_parallel_size": 2}, 4, ONE_PROCESS, "cpu"),
    ({"tensor_parallel_size": 1, "gpu_memory_utilization": 0.8}, 2, ONE_PROCESS, "cuda:1"),
    ({}, 2, {"WORLD_SIZE": "2", "LOCAL_RANK": "1"}, "cuda:1"),         # accelerate: the rank's own GPU
    ({"scorer_device": "cpu", "parallelize": True}, 4, ONE_PROCESS, "cpu"),
    ({"scorer_device": "cuda:3", "tensor_parallel_size": 2}, 4, ONE_PROCESS, "cuda:3"),
])
def test_auto_never_shares_a_sharded_model_s_gpus(meta, gpus, environ, expected):
    assert scorer_device(meta, (gpus, False), environ) == expected
    if expected.startswith("cuda:"):
        assert int(expected[5:]) not in occupied_gpus(meta, gpus)


@pytest.mark.parametrize("meta,gpus,words", [
    ({"scorer_device": "cuda:0", "parallelize": True}, 2, "sharded model occupies"),
    ({"scorer_device": "cuda:1", "tensor_parallel_size": 2}, 2, "sharded model occupies"),
    ({"scorer_device": "cuda"}, 0, "has 0 CUDA device"),
    ({"scorer_device": "mps"}, 0, "no MPS device"),
])
def test_an_unusable_explicit_device_is_one_line_naming_the_key(meta, gpus, words):
    with pytest.raises(devices.DeviceError) as exc:
        scorer_device(meta, (gpus, False), ONE_PROCESS)
    assert "'scorer_device'" in str(exc.value) and words in str(exc.value) and "\n" not in str(exc.value)


def test_the_harness_sets_and_records_the_scorers_device():
    spec = catalog.lookup("domainsum_cnndm")  # BERTScore: a model-based family
    scoring = ShardScoring(spec, {"scorer_device": "cpu"})
    assert scoring.device == "cpu" and devices.current() == "cpu" and default_device() == "cpu"
    record = scoring.record({"scorer_device": "cpu"}, bypass=False)
    assert record["settings_used"]["scorer_device"] == {"value": "cpu", "from": "metadata"}
    gpus, _ = devices.machine()
    with pytest.raises(devices.DeviceError, match="'scorer_device'"):
        ShardScoring(spec, {"scorer_device": f"cuda:{gpus}"})  # one past this machine's GPUs


def test_tasks_without_a_model_choose_no_device():
    scoring = ShardScoring(catalog.lookup("ccsbench_length"), {"scorer_device": "cuda:7"})
    assert scoring.device is None and "scorer_device" not in scoring.record({}, bypass=False)["settings_used"]

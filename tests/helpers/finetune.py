"""Helpers shared by the unit and integration tests of finetune (tests/unit, tests/integration)."""

from __future__ import annotations

from pathlib import Path

import pytest

TASK = "domainsum_samsum"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Training on one torch thread: the tiny models train faster so on a 2-core machine, and
    a module importing this fixture gets it for each of its tests."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def train(tmp: Path, base: Path, data: Path, **kw):
    """Resolve a config like the CLI does and train; return the run card."""
    from finetune import resolve_config, run

    overrides = {
        "task": TASK, "base": str(base), "method": "lora", "preset": "domainsum",
        "output": str(tmp), "metadata": {"data_dir": str(data)}, "batch_size": 2,
        "logging_steps": 1, "report_to": "none", "max_steps": 4,
    }
    resume = kw.pop("resume", None)
    overwrite = kw.pop("overwrite", False)
    overrides.update(kw)
    return run(resolve_config(overrides), resume=resume, overwrite=overwrite)


def model_arg(results: dict, key: str):
    """One ``--model_args`` value as the results JSON records it (a dict or a string)."""
    ma = results["config"]["model_args"]
    if isinstance(ma, str):
        ma = dict(kv.split("=", 1) for kv in ma.split(","))
    return ma.get(key)

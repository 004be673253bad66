"""The scorers' device for a run: setting ``scorer_device`` and what the evaluated model occupies.

Why here: the GPUs a sharded model occupies are read from the model's arguments, which
lm-eval 0.4.13 merges into every task's metadata (``parallelize`` for ``--model hf``;
``tensor_parallel_size`` and ``data_parallel_size`` for ``--model vllm``); the choice
itself is :func:`custom_metrics.devices.choose`, where the rule is written down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from custom_metrics import devices
from lm_eval_tasks import settings


def _true(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def occupied_gpus(meta: Mapping[str, Any], gpus: int) -> set[int]:
    """The CUDA devices a sharded evaluated model holds: every one under ``parallelize=True``,
    the first ``tensor_parallel_size x data_parallel_size`` under vLLM (which reserves most
    of each GPU's memory), none for an unsharded model."""
    if _true(meta.get("parallelize", False)):
        return set(range(gpus))
    if "tensor_parallel_size" in meta or "data_parallel_size" in meta or "gpu_memory_utilization" in meta:
        used = int(meta.get("tensor_parallel_size") or 1) * int(meta.get("data_parallel_size") or 1)
        return set(range(min(used, gpus)))
    return set()


def scorer_device(meta: Mapping[str, Any], machine: tuple[int, bool] | None = None,
                  environ: Mapping[str, str] | None = None) -> str:
    """The device the scorers of this run use (``machine``: CUDA devices and MPS, ``environ``:
    the process environment, both read from this process unless given)."""
    asked = settings.resolve(meta, "scorer_device")
    gpus, mps = machine if machine is not None else devices.machine()
    env = os.environ if environ is None else environ
    local = int(env["LOCAL_RANK"]) if int(env.get("WORLD_SIZE") or 1) > 1 and env.get("LOCAL_RANK") else None
    return devices.choose(asked, gpus, occupied_gpus(meta, gpus), local, mps)


__all__ = ["occupied_gpus", "scorer_device"]

"""Where the scorer models run (BERTScore's encoder, BLANC, perplexity, MAUVE): one device a process.

Why a setting: on a GPU machine the scorers used to go to the default CUDA device, beside
an evaluated model that may be sharded over every GPU (``--model hf`` with
``parallelize=True``) or hold most of each GPU's memory (vLLM reserves
``gpu_memory_utilization`` of every GPU it uses). ``scorer_device`` (setting, metadata key
and ``DOMSUM_SCORER_DEVICE``) names the device; ``auto`` (the default) chooses by
:func:`choose`:

* the GPUs a sharded model occupies are never chosen: ``parallelize=True`` spreads the HF
  model over every visible GPU; vLLM uses its first ``tensor_parallel_size x
  data_parallel_size`` GPUs;
* under ``accelerate launch`` (data parallel, an unsharded model per rank) a rank scores on
  its own GPU, ``cuda:LOCAL_RANK``, beside its model, as one process does on ``cuda:0``;
* otherwise the first GPU no sharded model occupies, else the CPU.

An explicit device that a sharded model occupies, or that this machine lacks, is an error
naming the setting. The harness resolves the setting once per task (:func:`use`); the
model loaders ask :func:`current`. A direct library call without the harness gets the
first GPU when PyTorch sees one, else the CPU.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from custom_metrics.errors import SuiteError

#: the values ``scorer_device`` accepts (``cuda:N`` for any N)
FORMS = ("auto", "cpu", "cuda", "cuda:N", "mps")
_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")

_CURRENT: str | None = None


class DeviceError(SuiteError, ValueError):
    """A scorer device this machine lacks, or one a sharded model occupies."""


def parse(value: object) -> str:
    """``value`` as a device name (lower case, ``cuda`` is ``cuda:0``); ValueError if it is none."""
    text = str(value).strip().lower()
    if not _PATTERN.match(text):
        raise ValueError(value)
    return "cuda:0" if text == "cuda" else text


def choose(asked: str, gpus: int, occupied: Collection[int] = (), local_rank: int | None = None,
           mps: bool = False) -> str:
    """The scorers' device for setting value ``asked`` (:func:`parse`d) on a machine with ``gpus``
    CUDA devices, of which a sharded model ``occupied`` some; ``local_rank``: this process's
    GPU under data parallelism (no sharded model); ``mps``: Apple's accelerator is there."""
    if asked == "auto":
        if local_rank is not None and not occupied and local_rank < gpus:
            return f"cuda:{local_rank}"
        free = [i for i in range(gpus) if i not in occupied]
        if free:
            return f"cuda:{free[0]}"
        return "mps" if mps and not gpus else "cpu"
    if asked.startswith("cuda:"):
        index = int(asked.split(":")[1])
        if index >= gpus:
            raise DeviceError(f"setting 'scorer_device' ($DOMSUM_SCORER_DEVICE) is {asked!r}, but this machine "
                              f"has {gpus} CUDA device(s); use cpu, auto or cuda:0..cuda:{max(gpus - 1, 0)}")
        if index in occupied:
            raise DeviceError(f"setting 'scorer_device' ($DOMSUM_SCORER_DEVICE) is {asked!r}, a GPU the sharded "
                              f"model occupies (GPUs {sorted(occupied)}); choose another GPU, cpu or auto")
    if asked == "mps" and not mps:
        raise DeviceError("setting 'scorer_device' ($DOMSUM_SCORER_DEVICE) is 'mps', but PyTorch sees no MPS device")
    return asked


def machine() -> tuple[int, bool]:
    """(CUDA devices PyTorch sees, whether Apple's MPS is there), without starting CUDA."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    return gpus, mps


def use(device: str | None) -> None:
    """Make ``device`` where this process loads scorer models from now on (None: the default)."""
    global _CURRENT
    _CURRENT = device


def current() -> str:
    """Where scorer models load: the device :func:`use` set, else the first GPU, else the CPU."""
    if _CURRENT is not None:
        return _CURRENT
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


__all__ = ["FORMS", "DeviceError", "choose", "current", "machine", "parse", "use"]

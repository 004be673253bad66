"""Lazy Hugging Face models for the model-based metrics.

Why: perplexity, MAUVE and BLANC each need a language model; loading one is the
expensive part, so each (class, name) is loaded once and kept in the process's bounded
model cache (:mod:`custom_metrics.model_cache`), which frees it after scoring. A model
that cannot be loaded (not a local directory, not in the local cache, no network)
raises :class:`ModelUnavailable`, whose message names the model and says how to
point the metric at a local copy, so callers can skip that metric and run the rest.
"""

from __future__ import annotations

from typing import Any

from custom_metrics import model_cache
from custom_metrics.errors import SuiteError


class ModelUnavailable(SuiteError, RuntimeError):
    """A metric's model (or data) is missing; the message says what and how to provide it."""


def unavailable_message(metric: str, model: str, key: str | None, env: str | None, exc: BaseException) -> str:
    how = []
    if key:
        how.append(f"--metadata '{{\"{key}\": \"/path/to/model\"}}'")
    if env:
        how.append(f"${env}")
    where = " or ".join(how) if how else "the metric's model argument"
    import os

    looks_local = model.startswith(("/", ".", "~")) or os.sep in model and not _hub_like(model)
    if looks_local and not os.path.isdir(os.path.expanduser(model)):
        first = f"no such local directory {model}"
    else:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    fetch = "" if looks_local else f"Download it once (`hf download {model}`) or set "
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    # without internet the hub libraries retry for tens of seconds per file unless told they are offline
    retry = "" if looks_local or offline else " Without internet, set HF_HUB_OFFLINE=1 to read only the local cache."
    return (f"{metric}: model {model!r} is not available ({first[:300]}). "
            + (fetch or "Set ") + f"{where} to a local model directory." + retry)


def _hub_like(name: str) -> bool:
    """``owner/name`` with no further slashes: what a hub id looks like."""
    return name.count("/") == 1 and not name.startswith(("/", ".", "~"))


def load_model(kind: str, name: str, *, metric: str, key: str | None = None,
               env: str | None = None) -> tuple[Any, Any]:
    """(tokenizer, model in eval mode) for ``kind`` in {"causal", "masked"} on the scorers'
    device (setting ``scorer_device``), from the process's model cache (key ``(kind, name, device)``)."""
    from custom_metrics import devices

    device = devices.current()
    return model_cache.get((kind, str(name), device), lambda: _load(kind, str(name), metric, key, env, device))


def _load(kind: str, name: str, metric: str, key: str | None, env: str | None, device: str) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    cls = {"causal": AutoModelForCausalLM, "masked": AutoModelForMaskedLM}[kind]
    try:
        tok = AutoTokenizer.from_pretrained(name)
        model = cls.from_pretrained(name)
    except (OSError, ValueError) as exc:  # hub errors are OSError subclasses
        raise ModelUnavailable(unavailable_message(metric, name, key, env, exc)) from exc
    model.eval()
    model.to(device)
    return tok, model


def model_device(model: Any) -> Any:
    return next(model.parameters()).device


def right_pad(seqs: list[list[int]], pad_id: int) -> tuple[Any, Any]:
    """``(input_ids, attention_mask)`` long tensors of ``seqs`` right-padded to the longest.

    Callers sort by length before batching, so the padding per batch stays small.
    """
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for k, s in enumerate(seqs):
        ids[k, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[k, : len(s)] = 1
    return ids, mask


#: config attributes holding a model's position limit, in the order lm-eval's HF backend reads them
CONTEXT_ATTRS = ("n_positions", "max_position_embeddings", "n_ctx")


def context_length(config: Any) -> int | None:
    """A model's position limit from its config (None when it states none).

    Why lm-eval's attributes and order: the harness truncates prompts to this window, so
    prompt fitting, fine-tuning lengths and the metrics' own models all read the limit
    the evaluated model is run with.
    """
    for name in CONTEXT_ATTRS:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None

"""Teacher-forced next-token logits of two settings over one summary (the token-shift runner's models).

Why a module of its own: :mod:`custom_metrics.analysis.token_shift` holds the formulas (logit
tensors in, numbers out); this one loads the models (hub id or path, PEFT adapter,
dtype, device), checks that both settings share a tokenizer, encodes prompts as
lm-eval's HF backend does, fits prompt + summary into the context, and computes the
summary positions' logits in ONE forward pass per setting and document
(:class:`Runner`). It reads no suite fact: ``lm_eval_tasks.analysis.token_shift`` feeds
it the prompts and summaries of a samples file. ``torch``, ``transformers`` and
``peft`` are imported lazily.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError
from custom_metrics.hf_models import context_length


class TokenizerMismatchError(SuiteError, ValueError):
    """The two settings tokenize differently, so positions cannot be compared."""


@dataclass(frozen=True)
class ModelSpec:
    """A model: hub id or local path, optional PEFT adapter, optional tokenizer source."""

    path: str
    peft: str | None = None
    tokenizer: str | None = None

    def label(self) -> str:
        return self.path + (f" + {self.peft}" if self.peft else "")


def resolve_dtype(name: str, device: str) -> Any:
    import torch

    if name == "auto":
        if device.startswith("cuda") or device == "balanced":
            if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
                return torch.bfloat16
            return torch.float16 if torch.cuda.is_available() else torch.float32
        return torch.float32
    table = {"float32": torch.float32, "float": torch.float32, "bfloat16": torch.bfloat16,
             "float16": torch.float16, "half": torch.float16}
    if name not in table:
        raise ValueError(f"--dtype must be auto, float32, bfloat16 or float16; got {name!r}")
    return table[name]


def load_tokenizer(spec: ModelSpec, trust_remote_code: bool = False):
    """The tokenizer of ``spec``: ``spec.tokenizer``, else the adapter's directory when
    it has one (adapters trained with added tokens save it), else the model's."""
    from transformers import AutoTokenizer

    source = spec.tokenizer
    if source is None and spec.peft and (Path(spec.peft) / "tokenizer_config.json").is_file():
        source = spec.peft
    return AutoTokenizer.from_pretrained(source or spec.path, trust_remote_code=trust_remote_code)


def load_model(spec: ModelSpec, dtype: Any, device: str, trust_remote_code: bool = False,
               merge: bool = True):
    """A causal LM in eval mode; a PEFT adapter is applied (and merged when ``merge``)."""
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    if device == "balanced":  # spread over the visible GPUs (accelerate)
        kwargs["device_map"] = "auto"
    model = AutoModelForCausalLM.from_pretrained(spec.path, **kwargs)
    if device != "balanced":
        model = model.to(device)
    if spec.peft:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, spec.peft)
        if merge:
            model = model.merge_and_unload()
    model.eval()
    return model


def check_same_tokenizer(tok_a, tok_b, name_a: str = "base", name_b: str = "adapted") -> None:
    """Raise :class:`TokenizerMismatchError` unless both map the same strings to ids."""
    if tok_a is tok_b:
        return
    va, vb = tok_a.get_vocab(), tok_b.get_vocab()
    if va != vb:
        diff = sorted(set(va.items()) ^ set(vb.items()), key=lambda kv: kv[1])[:3]
        raise TokenizerMismatchError(
            f"the {name_a} and {name_b} tokenizers differ ({len(va)} vs {len(vb)} tokens; "
            f"e.g. {diff}): token shift compares the two next-token distributions id by id "
            f"at the same summary positions, so both models must share one tokenizer "
            f"(same family and vocabulary). Pass --base-tokenizer/--adapted-tokenizer if "
            f"a checkpoint ships a different but equivalent copy."
        )


def has_bos_prefix(text: str, tok) -> bool:
    bos = getattr(tok, "bos_token", None)
    return bool(bos) and text.startswith(bos)


def encode_prompt(tok, prompt: str, add_bos: bool | None = None) -> list[int]:
    """Prompt ids as lm-eval's HF backend makes them: the tokenizer's default special
    tokens (BOS for Llama-style tokenizers) unless the prompt already starts with the
    BOS text (chat templates) or ``add_bos`` says otherwise."""
    if add_bos is None:
        kwargs = {"add_special_tokens": False} if has_bos_prefix(prompt, tok) else {}
    else:
        kwargs = {"add_special_tokens": add_bos}
    return list(tok(prompt, **kwargs)["input_ids"])


def encode_summary(tok, summary: str, need_offsets: bool = True) -> tuple[list[int], list[tuple[int, int]] | None]:
    """Summary ids (no special tokens) and their character offsets in ``summary``."""
    if not need_offsets:
        return list(tok(summary, add_special_tokens=False)["input_ids"]), None
    if not getattr(tok, "is_fast", False):
        raise TokenizerMismatchError(
            f"{type(tok).__name__} is a slow tokenizer without character offsets; "
            f"domain-vocabulary positions need a fast tokenizer (or pass --no-vocab)"
        )
    enc = tok(summary, add_special_tokens=False, return_offsets_mapping=True)
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def fit_length(prompt_ids: list[int], summary_ids: list[int], max_len: int | None
               ) -> tuple[list[int], list[int], int]:
    """Left-truncate the prompt (as the harness does) so prompt + summary fit
    ``max_len``; the summary is cut only if it alone does not fit (1 prompt token
    kept). Returns the ids and the number of tokens dropped."""
    if max_len is None or len(prompt_ids) + len(summary_ids) <= max_len:
        return prompt_ids, summary_ids, 0
    dropped = 0
    if len(summary_ids) > max_len - 1:
        dropped += len(summary_ids) - (max_len - 1)
        summary_ids = summary_ids[: max_len - 1]
    keep = max_len - len(summary_ids)
    dropped += max(0, len(prompt_ids) - keep)
    return prompt_ids[-keep:], summary_ids, dropped


def fitting_window(max_length: int | None, runs: Sequence[tuple[str, Runner]]) -> tuple[int | None, str]:
    """The exact window (tokens) prompt + summary are fitted into, and where it comes from:
    the smallest of ``--max-length`` and each model's context length (lm-eval's order of
    config attributes, :func:`custom_metrics.hf_models.context_length`); None when none is
    known (nothing is cut)."""
    known = [(max_length, "--max-length")] if max_length else []
    for label, run in runs:
        n = context_length(getattr(run.model, "config", None))
        if n:
            known.append((n, f"context length of {label}"))
    if not known:
        return None, "none known: nothing cut"
    return min(known, key=lambda x: x[0])


class Runner:
    """One setting's forward passes: a model, optionally with its adapter switched off."""

    def __init__(self, model, disable_adapter: bool = False) -> None:
        self.model = model
        self.disable_adapter = disable_adapter
        self._keep_kw: bool | None = None
        self.forward_passes = 0

    @property
    def device(self):
        return next(self.model.parameters()).device

    def _forward(self, ids, keep: int):
        import torch

        ctx = self.model.disable_adapter() if self.disable_adapter else contextlib.nullcontext()
        with torch.inference_mode(), ctx:
            self.forward_passes += 1
            kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": False}
            if self._keep_kw is not False:
                try:
                    out = self.model(**kwargs, logits_to_keep=keep)
                    self._keep_kw = True
                    return out.logits
                except TypeError:  # a model class without logits_to_keep
                    if self._keep_kw:
                        raise
                    self._keep_kw = False
            return self.model(**kwargs).logits

    def summary_logits(self, prompt_ids: Sequence[int], summary_ids: Sequence[int]):
        """``[len(summary), vocab]`` logits predicting each summary token: ONE pass."""
        import torch

        if not prompt_ids:
            raise ValueError("empty prompt: the first summary token has no context")
        n = len(summary_ids)
        ids = torch.tensor([list(prompt_ids) + list(summary_ids)], device=self.device)
        logits = self._forward(ids, n + 1)  # only the last n + 1 positions are projected
        return logits[0, -(n + 1):-1] if n else logits[0, :0]

    def per_prefix_logits(self, prompt_ids: Sequence[int], summary_ids: Sequence[int]):
        """The same logits the release's way: one pass per summary prefix (slow)."""
        import torch

        rows = []
        for j in range(len(summary_ids)):
            ids = torch.tensor([list(prompt_ids) + list(summary_ids[:j])], device=self.device)
            rows.append(self._forward(ids, 1)[0, -1])
        return torch.stack(rows) if rows else None


def align_vocab(base, adapted, n_tokens: int):
    """Same-width logits: models padded to different embedding sizes keep the
    tokenizer's ids only (softmax renormalised over them)."""
    if base.shape[-1] == adapted.shape[-1]:
        return base, adapted
    if min(base.shape[-1], adapted.shape[-1]) >= n_tokens:
        return base[..., :n_tokens], adapted[..., :n_tokens]
    raise TokenizerMismatchError(
        f"output vocabularies differ ({base.shape[-1]} vs {adapted.shape[-1]} logits) and the "
        f"tokenizer has {n_tokens} tokens: the models do not share a vocabulary"
    )

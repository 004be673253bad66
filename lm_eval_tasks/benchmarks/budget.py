"""Fit each prompt into the evaluated model's context, cutting the document, never the instruction.

Why: the harness's HF backend left-truncates a prompt longer than the model's context,
so with the default word budgets a 1,024-position BART or a 2,048-position model loses
the instruction and sees a bare document tail. When the evaluated model is known (its
``pretrained`` / ``tokenizer`` reach the task metadata through ``--model_args``), the
prompts are measured in its tokens; if any would leave no room for the generation, the
document inside every prompt gets a token ceiling (``doc_token_cap``) computed from
the largest fixed part (instruction, demonstrations, cues) of that task's prompts.

What is recorded (``prompt_budget`` in the results): the tokenizer, the context, the
tokens kept for the generation, the ceiling (or None when everything fitted), how
many prompts overflowed before fitting, and how many documents the prompt holds only
in part (cut by the word budget or the ceiling).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

#: smallest document ceiling worth running: below it the prompt is nearly all template
MIN_DOC_TOKENS = 32
#: config attributes that hold a model's position limit, in the order transformers uses them
_CONTEXT_ATTRS = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length")


@dataclass(frozen=True)
class Window:
    """The evaluated model's token budget for one prompt."""

    tokenizer: str
    context: int
    generation: int  # tokens kept free for the summary (0 for an encoder-decoder)

    @property
    def prompt(self) -> int:
        return self.context - self.generation


@lru_cache(maxsize=4)
def _tokenizer(name: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name)


def count_tokens(text: str, tokenizer: str) -> int:
    """Tokens of ``text`` as the model reads it (special tokens included)."""
    return len(_tokenizer(tokenizer)(text)["input_ids"])


def model_window(metadata: Mapping[str, Any], max_gen_toks: int) -> Window | None:
    """The window of the model named in ``metadata``, or None when it cannot be told.

    Context: ``max_length`` of ``--model_args`` when given, else the model config's
    position limit, else the tokenizer's ``model_max_length`` when it is a real limit.
    ``max_gen_toks`` is the task's configured budget (a later ``--gen_kwargs`` override
    is not known when the records are built).
    """
    model = metadata.get("pretrained") or metadata.get("model")
    name = metadata.get("prompt_tokenizer") or metadata.get("tokenizer") or model
    if not name:
        return None
    try:
        tok = _tokenizer(str(name))
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(str(model or name))
    except Exception as exc:  # noqa: BLE001 - an unknown model keeps the word budgets
        log.info("prompt budget: cannot load %s (%s); documents keep their word budgets", name, exc)
        return None
    context = metadata.get("max_length")
    if not context:
        context = next((getattr(cfg, a) for a in _CONTEXT_ATTRS if isinstance(getattr(cfg, a, None), int)), None)
    if not context and 0 < int(getattr(tok, "model_max_length", 0) or 0) < 1_000_000:
        context = int(tok.model_max_length)
    if not context:
        return None
    encoder_decoder = bool(getattr(cfg, "is_encoder_decoder", False)) or metadata.get("backend") == "seq2seq"
    return Window(str(name), int(context), 0 if encoder_decoder else int(max_gen_toks))


def fit(task: str, build: Callable[[dict], tuple[list[dict], dict]], metadata: dict,
        window: Window | None, built: tuple[list[dict], dict] | None = None) -> tuple[list[dict], dict]:
    """``build(metadata)`` (or the records already ``built``), rebuilt with a document
    ceiling if a prompt overflows the window."""
    from lm_eval_tasks.data.loader import DataError

    docs, report = built if built is not None else build(metadata)
    budget: dict[str, Any] = {}
    if window is not None:
        over = sum(count_tokens(d["prompt"], window.tokenizer) > window.prompt for d in docs)
        cap = metadata.get("doc_token_cap")
        if over and cap in (None, ""):
            probe, _ = build({**metadata, "prompt_tokenizer": window.tokenizer, "doc_token_cap": 1})
            fixed = max(count_tokens(d["prompt"], window.tokenizer) for d in probe) - 1
            cap = window.prompt - fixed
            if cap < MIN_DOC_TOKENS:
                raise DataError(
                    f"task {task!r}: the fixed part of the prompt (instruction and demonstrations) takes "
                    f"{fixed} of the model's {window.context} tokens, with {window.generation} kept for the "
                    f"summary; lower max_demo_words / max_demo_tokens, run the zero-shot task, or raise "
                    f"max_length in --model_args if the model allows it")
            log.warning("%s: %d prompt(s) exceed the model's %d-token context minus %d for the summary; "
                        "documents are cut to %d tokens inside the prompt", task, over, window.context,
                        window.generation, cap)
            docs, report = build({**metadata, "prompt_tokenizer": window.tokenizer, "doc_token_cap": cap})
        budget = {"tokenizer": window.tokenizer, "context": window.context, "generation": window.generation,
                  "doc_token_cap": cap, "overflowing_before_fit": over}
    budget["truncated_in_prompt"] = sum(str(d.get("document", "")).strip() not in d["prompt"] for d in docs)
    return docs, {**report, "prompt_budget": budget}

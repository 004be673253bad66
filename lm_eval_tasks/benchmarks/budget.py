"""Fit each prompt, as the model receives it, into the evaluated model's window.

Why: every backend of the harness (``hf``, ``vllm``, the API models) left-truncates a
context longer than its window minus ``max_gen_toks``, so the instruction is the first
thing lost and the model sees ``ization. Summarize the following text...``. The word
budgets of the benchmarks keep most prompts short, but only the model's own tokenizer,
applied to the context the harness will send (chat template, system message,
generation prompt, BOS), can tell whether a prompt fits.

How: a :class:`Meter` counts the tokens of a rendered context exactly as the backend
will (``hf``/``vllm``: the backend's own ``tok_encode``; an API model with a tokenizer:
that tokenizer, with its chat template for chat requests; an API model without one: a
stated characters-per-token bound). :func:`fit_prompt` measures each document's own
prompt; if it does not fit, it cuts *that* document's tail inside the prompt (never
the instruction, the demonstrations or the closing cue) until the rendered context
fits, and reports by how many tokens. A prompt whose fixed part alone leaves fewer
than :data:`MIN_DOC_TOKENS` for the document is a :class:`PromptDoesNotFit` error
naming the task, the window and the settings to change.

This module imports no ``lm_eval``: the harness adapter hands it the backend object
(duck-typed: ``tokenizer``, ``max_length``, ``tok_encode``, ``backend``) or, when the
backend cannot be reached, the task metadata (``--model_args``).
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from custom_metrics.hf_models import context_length
from lm_eval_tasks.benchmarks.prompting import load_tokenizer
from lm_eval_tasks.data.loader import DataError
from lm_eval_tasks.settings import SETTINGS, resolve

log = logging.getLogger(__name__)

#: smallest document worth running: below it the prompt is nearly all template
MIN_DOC_TOKENS = 32
#: characters per token assumed for an API model whose tokenizer cannot be had (the
#: ``chars_per_token`` setting's default). English BPE averages about 4; 3 over-counts
#: tokens, so a prompt fitted with it fits.
DEFAULT_CHARS_PER_TOKEN = float(SETTINGS["chars_per_token"].default)
#: lm-eval's default window for API models and models that state none
DEFAULT_API_WINDOW = 2048
#: tokens a chat request adds per message beyond its text, when only a bound is known
CHAT_OVERHEAD_PER_MESSAGE = 8
#: a tokenizer's ``model_max_length`` when it states no real limit
_UNSET_MAX_LENGTH = 1_000_000


class PromptDoesNotFit(DataError):
    """The fixed part of a prompt (instruction, demonstrations, cues) overflows the window."""


@dataclass
class Meter:
    """Counts a rendered context's tokens as the evaluated backend will.

    ``count(context)``: tokens of the whole context (a string, or a JSON chat string);
    ``offsets(text)``: character end offset of each token of a document text, used to
    cut the document on a token boundary (None: cut by characters).
    """

    source: str  # e.g. "hf backend tokenizer /path", "chars-per-token bound 3.0"
    context: int  # the backend's window (max_length)
    generation: int  # tokens kept for the summary (0 for an encoder-decoder)
    count: Callable[[Any], int]
    offsets: Callable[[str], list[int]] | None = None
    chars_per_token: float | None = None

    def text_tokens(self, text: str) -> int | None:
        """Tokens of a bare text (a generation) in the model's tokenizer; None without one."""
        return None if self.offsets is None else len(self.offsets(text))

    @property
    def limit(self) -> int:
        return self.context - self.generation


def _ends(tokenizer: Any, text: str) -> list[int]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [end for _, end in enc["offset_mapping"]]


def _chat_messages(context: Any) -> list[dict] | None:
    """The messages of a JSON chat string (what API backends build), else None."""
    if not isinstance(context, str) or not context.startswith("["):
        return None
    try:
        messages = json.loads(context)
    except ValueError:
        return None
    if isinstance(messages, list) and all(isinstance(m, dict) and "content" in m for m in messages):
        return messages
    return None


def _bound_meter(source: str, context: int, generation: int, cpt: float) -> Meter:
    def count(ctx: Any) -> int:
        messages = _chat_messages(ctx)
        if messages is not None:
            return sum(math.ceil(len(str(m["content"])) / cpt) + CHAT_OVERHEAD_PER_MESSAGE for m in messages) \
                + CHAT_OVERHEAD_PER_MESSAGE
        return math.ceil(len(str(ctx)) / cpt)

    return Meter(f"{source}: no tokenizer, characters-per-token bound {cpt:g}", context, generation, count,
                 None, cpt)


def _tokenizer_meter(source: str, tokenizer: Any, context: int, generation: int,
                     encode: Callable[[str], list[int]]) -> Meter:
    def count(ctx: Any) -> int:
        messages = _chat_messages(ctx)
        if messages is not None and getattr(tokenizer, "chat_template", None):
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if isinstance(ids, Mapping):  # newer tokenizers return a BatchEncoding
                ids = ids["input_ids"]
            return len(ids)
        return len(encode(str(ctx)))

    return Meter(source, int(context), int(generation), count, lambda text: _ends(tokenizer, text))


def meter_from_backend(lm: Any, max_gen_toks: int, chars_per_token: float | None = None) -> Meter | None:
    """The meter of a harness backend object (``HFLM``, ``VLLM``, ``TemplateAPI``...).

    Why the backend and not ``--model_args``: it holds the tokenizer and window it will
    truncate with (``max_length``, ``add_bos_token``, a GGUF's or adapter's tokenizer),
    so what is measured here is what it does.
    """
    tokenizer = getattr(lm, "tokenizer", None)
    try:
        context = int(getattr(lm, "max_length"))
    except Exception:  # noqa: BLE001 - a backend without a window cannot be fitted
        return None
    api = hasattr(lm, "base_url")
    encoder_decoder = str(getattr(lm, "backend", "")) == "seq2seq" or bool(
        getattr(getattr(getattr(lm, "model", None), "config", None), "is_encoder_decoder", False))
    generation = 0 if encoder_decoder else int(max_gen_toks)
    name = type(lm).__name__
    if tokenizer is None or not callable(tokenizer):
        return _bound_meter(f"{name} backend", context, generation, chars_per_token or DEFAULT_CHARS_PER_TOKEN)
    if api:
        def encode(text: str) -> list[int]:
            return tokenizer(text, add_special_tokens=False)["input_ids"]
    else:
        def encode(text: str) -> list[int]:
            return list(lm.tok_encode(text))
    label = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    return _tokenizer_meter(f"{name} backend, tokenizer {label}", tokenizer, context, generation, encode)


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in {"1", "true", "yes"}


def meter_from_metadata(metadata: Mapping[str, Any], max_gen_toks: int,
                        chars_per_token: float | None = None) -> Meter | None:
    """A meter built from ``--model_args`` (which lm-eval copies into task metadata).

    Used when the backend object cannot be reached. Mirrors lm-eval's HF backend:
    window = ``max_length``, else the config's ``n_positions``/``max_position_embeddings``/
    ``n_ctx``, else the tokenizer's ``model_max_length``, else 2048; special tokens are
    added for encoder-decoders or with ``add_bos_token``. An API model (``base_url``)
    without ``tokenizer`` is measured by the characters-per-token bound.
    """
    gguf = metadata.get("gguf_file") or None
    model = metadata.get("pretrained") or metadata.get("model")
    name = metadata.get("tokenizer") or model
    api = bool(metadata.get("base_url"))
    if api and not metadata.get("tokenizer"):
        context = int(metadata.get("max_length") or DEFAULT_API_WINDOW)
        return _bound_meter("API model", context, int(max_gen_toks), chars_per_token or DEFAULT_CHARS_PER_TOKEN)
    if not name:
        return None
    try:
        tok = load_tokenizer(str(name), str(gguf) if gguf and name == model else None)
        cfg = None
        if not api and model:
            from transformers import AutoConfig

            cfg = AutoConfig.from_pretrained(str(model), **({"gguf_file": gguf} if gguf else {}))
    except Exception as exc:  # noqa: BLE001 - an unknown model keeps the word budgets
        log.info("prompt budget: cannot load %s (%s); documents keep their word budgets", name, exc)
        return None
    context = metadata.get("max_length")
    if not context and cfg is not None:
        context = context_length(cfg)
    if not context:
        limit = int(getattr(tok, "model_max_length", 0) or 0)
        context = limit if 0 < limit < _UNSET_MAX_LENGTH else (DEFAULT_API_WINDOW if api else 2048)
    encoder_decoder = bool(getattr(cfg, "is_encoder_decoder", False)) or metadata.get("backend") == "seq2seq"
    special = encoder_decoder or _flag(metadata.get("add_bos_token", False))

    def encode(text: str) -> list[int]:
        return tok(text, add_special_tokens=special)["input_ids"]

    return _tokenizer_meter(f"model_args tokenizer {name}", tok, int(context),
                            0 if encoder_decoder else int(max_gen_toks), encode)


def document_span(prompt: str, document: str) -> tuple[int, int] | None:
    """(start, end) of the test document's text inside its prompt, or None.

    The benchmarks put a prefix of the document (the word or token budget's cut) into
    the prompt, after any demonstrations. The longest prefix of ``document`` found in
    ``prompt`` is that text (a binary search: a shorter prefix of a found one is found
    too); its last occurrence is the test document's, since it comes last.
    """
    if not document or document[:1] not in prompt:
        return None
    lo, hi = 1, len(document)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if document[:mid] in prompt:
            lo = mid
        else:
            hi = mid - 1
    start = prompt.rfind(document[:lo])
    return start, start + lo


@dataclass
class Fitted:
    """One prompt after fitting: the context to send and what fitting did."""

    context: Any
    tokens: int  # tokens of ``context`` as the backend counts them
    cut_tokens: int = 0  # document tokens removed (0: the prompt fitted as built)


def fit_prompt(task: str, render: Callable[[str], Any], prompt: str, document: str, meter: Meter) -> Fitted:
    """Render ``prompt``; if the context overflows, cut the document's tail until it fits.

    ``render(prompt)`` gives the context as the harness will send it (chat template,
    system message, description). The cut is in the model's tokens when the meter has
    a tokenizer, else in characters at the meter's bound; it is repeated (at most a few
    times) because re-tokenizing at a cut may merge tokens differently.
    """
    ctx = render(prompt)
    n = meter.count(ctx)
    if n <= meter.limit:
        return Fitted(ctx, n)
    span = document_span(prompt, document)
    if span is None:
        raise PromptDoesNotFit(_no_fit_message(task, meter, n, "its document could not be located in it"))
    start, end = span
    kept = prompt[start:end]
    head, tail = prompt[:start], prompt[end:]
    if meter.offsets is not None:
        ends = meter.offsets(kept)
        total, keep = len(ends), len(ends) - (n - meter.limit)

        def cut(k: int) -> str:
            return kept[: ends[k - 1]] if k > 0 else ""
    else:
        cpt = meter.chars_per_token or DEFAULT_CHARS_PER_TOKEN
        total = math.ceil(len(kept) / cpt)
        keep = total - (n - meter.limit)

        def cut(k: int) -> str:
            return kept[: int(k * cpt)] if k > 0 else ""
    for _ in range(8):
        if keep < MIN_DOC_TOKENS:
            raise PromptDoesNotFit(_no_fit_message(task, meter, n - total, None))
        ctx = render(head + cut(keep) + tail)
        n2 = meter.count(ctx)
        if n2 <= meter.limit:
            return Fitted(ctx, n2, total - keep)
        keep -= max(1, n2 - meter.limit)
    raise PromptDoesNotFit(_no_fit_message(task, meter, n, "cutting the document did not converge"))


def _no_fit_message(task: str, meter: Meter, fixed: int, why: str | None) -> str:
    reason = f" ({why})" if why else ""
    return (
        f"task {task}: the prompt does not fit the model's window{reason}. Its fixed part (instruction, "
        f"demonstrations, chat template) takes about {fixed} tokens of {meter.context}, with "
        f"{meter.generation} kept for the summary, leaving less than {MIN_DOC_TOKENS} tokens for the document "
        f"[{meter.source}]. Raise max_length in --model_args if the model allows it, lower max_gen_toks "
        f"(--gen_kwargs), lower max_demo_words / max_demo_tokens in --metadata, or run the zero-shot task.")


@dataclass
class FitLog:
    """What fitting did to the prompts of the documents a run evaluated (per task)."""

    meter: Meter | None = None
    per_doc: dict[Any, Fitted] = field(default_factory=dict)

    def record(self, meta_source: str) -> dict[str, Any]:
        """``prompt_budget`` in the results: window, meter, counts and cut sizes."""
        if self.meter is None:
            return {"window": None, "note": f"no tokenizer or window could be had ({meta_source}); "
                                            "documents keep their word budgets"}
        cuts = [f.cut_tokens for f in self.per_doc.values() if f.cut_tokens]
        lengths = [f.tokens for f in self.per_doc.values()]
        out: dict[str, Any] = {
            "window": self.meter.context, "generation": self.meter.generation, "prompt_limit": self.meter.limit,
            "measured_with": self.meter.source, "documents": len(self.per_doc), "cut_to_fit": len(cuts),
            "cut_tokens_median": statistics.median(cuts) if cuts else 0, "cut_tokens_max": max(cuts, default=0),
            "prompt_tokens_max": max(lengths, default=0),
            # what a document's prompt costs on average (CCSBench Table 7's #Tokens column)
            "prompt_tokens_mean": round(statistics.fmean(lengths), 1) if lengths else 0}
        if self.meter.chars_per_token is not None:
            out["chars_per_token"] = self.meter.chars_per_token
        return out


def word_budget(metadata: Mapping[str, Any] | None, part: str, default_words: Any) -> dict[str, Any]:
    """The truncation budget of one prompt part, ``part`` = ``doc`` (the document) or ``demo``
    (a demonstration's document): settings ``max_<part>_words`` (default ``default_words``,
    the benchmark's), ``max_<part>_tokens`` and ``prompt_tokenizer``, as the prompt
    builders take them (``max_words``, ``max_tokens``, ``tokenizer_name``)."""
    return {"max_words": resolve(metadata, f"max_{part}_words", default_words),
            "max_tokens": resolve(metadata, f"max_{part}_tokens"),
            "tokenizer_name": resolve(metadata, "prompt_tokenizer")}

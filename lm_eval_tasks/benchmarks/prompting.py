"""Prompt building with the document truncated *inside* the prompt.

Why: the harness's HF backend left-truncates a prompt longer than the model's
context, so the instruction is the first thing lost and the model sees a bare
document tail. We cut the document itself to a budget so the instruction, the
demonstrations' structure and the final ``SUMMARY:``/``Summary:`` cue always survive.

Budget: in tokens of a given tokenizer (metadata ``prompt_tokenizer``: the evaluated
model's hub id or path, with ``max_doc_tokens``), else in whitespace words
(``max_doc_words``). Cuts keep the original whitespace up to the cut point.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD_RE = re.compile(r"\S+")


def truncate_words(text: str, max_words: int | None) -> str:
    """The first ``max_words`` whitespace-delimited words of ``text``."""
    if not max_words or max_words <= 0:
        return text
    for i, m in enumerate(_WORD_RE.finditer(text)):
        if i == max_words - 1:
            return text[: m.end()]
    return text


@lru_cache(maxsize=4)
def load_tokenizer(name: str, gguf_file: str | None = None):
    """A transformers tokenizer, loaded once per process (also a GGUF file's own tokenizer)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name, **({"gguf_file": gguf_file} if gguf_file else {}))


def truncate_tokens(text: str, max_tokens: int, tokenizer_name: str) -> str:
    """The longest prefix of ``text`` that is at most ``max_tokens`` tokens."""
    tok = load_tokenizer(tokenizer_name)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = enc["offset_mapping"]
    if len(offsets) <= max_tokens:
        return text
    return text[: offsets[max_tokens - 1][1]]


def truncate(text: str, max_words: int | None = None, max_tokens: int | None = None,
             tokenizer_name: str | None = None) -> str:
    """Token budget when a tokenizer is given, else word budget.

    The result is always a prefix of ``text``: fitting the rendered prompt into the
    evaluated model's window (:mod:`lm_eval_tasks.benchmarks.budget`) finds it in the
    prompt and cuts it further when needed.
    """
    if max_tokens and tokenizer_name:
        return truncate_tokens(text, int(max_tokens), tokenizer_name)
    return truncate_words(text, max_words)

"""Prompt fitting as the harness adapter runs it: which backend measures the prompts, the
``prompt_budget`` record of the documents evaluated, and what the prompts' lengths tell a
``--batch_size auto`` run before it probes.

Why a module of its own: the fitting itself is :mod:`lm_eval_tasks.benchmarks.budget`;
finding the evaluated backend (lm-eval hands it over only under a chat template) and
counting cut prompts across data-parallel ranks need no ``lm_eval`` import.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from lm_eval_tasks import settings
from lm_eval_tasks.benchmarks.budget import FitLog, Fitted, document_span, meter_from_backend, meter_from_metadata

log = logging.getLogger(__name__)


def calling_backend(chat_template: Any) -> Any:
    """The harness's model object for this run, or None.

    Why: lm-eval 0.4.13 hands ``build_all_requests`` the backend's ``apply_chat_template``
    (a bound method, so the backend itself) only under ``--apply_chat_template``; for a
    plain prompt it hands nothing, yet the backend's tokenizer and window decide what it
    truncates. Its evaluator holds the backend in a local named ``lm``, two frames up
    (called from ``build_all_requests``); when that is not found the prompt is measured
    from ``--model_args`` instead.
    """
    owner = getattr(chat_template, "__self__", None)
    if owner is not None and hasattr(owner, "generate_until"):
        return owner
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            break
        lm = frame.f_locals.get("lm")
        if lm is not None and hasattr(lm, "generate_until") and hasattr(lm, "max_length"):
            return lm
        frame = frame.f_back
    return None


def start_fitting(backend: Any, meta: Mapping[str, Any], max_gen_toks: int) -> tuple[FitLog, str]:
    """The fit log of a run and where its meter comes from: the evaluated backend, else ``--model_args``."""
    cpt = settings.resolve(meta, "chars_per_token")
    meter = meter_from_backend(backend, max_gen_toks, cpt) if backend is not None else None
    source = "the evaluated backend" if meter is not None else "--model_args"
    if meter is None:
        meter = meter_from_metadata(meta, max_gen_toks, cpt)
    return FitLog(meter), source


def cut_by_word_budget(doc: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(words of the document, words of it the prompt holds)`` when the document budget
    (``max_doc_words``, or ``max_doc_tokens`` with ``prompt_tokenizer``) cut the record's
    document before any fitting; None when its prompt holds the whole document."""
    document = str(doc.get("document", "")).strip()
    prompt = str(doc.get("prompt", ""))
    if document in prompt:
        return None
    span = document_span(prompt, document)
    kept = prompt[span[0]:span[1]] if span else ""
    return len(document.split()), len(kept.split())


def rank_fits(fit: FitLog, evaluated: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """This rank's prompt fitting of the documents it evaluated, small enough to gather."""
    return {"fits": {k: Fitted(None, f.tokens, f.cut_tokens) for k, f in fit.per_doc.items() if k in evaluated},
            "words": {k: cut_by_word_budget(d) for k, d in evaluated.items()}}


def merge_fits(parts: list[dict]) -> dict[str, Any]:
    """Every rank's :func:`rank_fits`, as one."""
    return {"fits": {k: f for p in parts for k, f in p["fits"].items()},
            "words": {k: w for p in parts for k, w in p["words"].items()}}


def budget_report(fit: FitLog, source: str, merged: dict[str, Any] | None,
                  evaluated: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``prompt_budget`` for the documents evaluated: every rank's (``merged``, a data-parallel
    run after scoring), else this rank's (``evaluated``, document key -> record)."""
    if merged is not None:
        record = FitLog(fit.meter, merged["fits"]).record(source)
        words = merged["words"]
    else:
        record = fit.record(source)
        words = {k: cut_by_word_budget(d) for k, d in evaluated.items()}
    cuts = [w for w in words.values() if w is not None]
    record["documents"] = len(words)
    record["cut_by_word_budget"] = len(cuts)
    # the longest document the budget cut and the most words it kept of one, in words
    record["word_budget_words_before_max"] = max((before for before, _ in cuts), default=0)
    record["word_budget_words_kept_max"] = max((kept for _, kept in cuts), default=0)
    return record


def cut_warning(task: str, record: Mapping[str, Any]) -> str | None:
    """The line a run prints when prompts were cut to fit the window; it says the document
    budget's cut before it too, so that "by 480 tokens at most" is not read as all that
    was cut of a 50,000-word document."""
    if not record.get("cut_to_fit"):
        return None
    line = (f"task {task}: {record['cut_to_fit']} of {record['documents']} prompt(s) exceeded the model's window "
            f"({record['window']} tokens, {record['generation']} kept for the summary); their documents were cut "
            f"inside the prompt, by {record['cut_tokens_max']} tokens at most")
    if record.get("cut_by_word_budget"):
        line += (f", after the document budget (max_doc_words, or max_doc_tokens) had cut "
                 f"{record['cut_by_word_budget']} document(s) of the task to at most "
                 f"{record['word_budget_words_kept_max']:,} words (the longest had "
                 f"{record['word_budget_words_before_max']:,})")
    return line


#: a window at least this many times the longest fitted prompt plus ``max_gen_toks`` is
#: "far larger": ``--batch_size auto`` would probe at lengths no request of the run has
FAR_LARGER = 2
#: the ``max_length`` advised is rounded up to a multiple of this many tokens
ADVICE_STEP = 256
#: the longest fitted prompt plus ``max_gen_toks`` of the suite's tasks built so far, by backend
_NEEDED: dict[int, int] = {}


def batch_size_advice(window: int, needed: int) -> str | None:
    """The line said before generation when ``--batch_size auto`` would probe the model's
    whole window although no prompt of the run's suite tasks (plus ``max_gen_toks``) needs
    more than ``needed`` tokens; None when the window is not far larger.

    Why: lm-eval's HF backend finds its batch size by running batches as long as
    ``max_length`` (the model's window unless given): an 8B model of 8,192 positions took
    batch 40 at 136.9 of 140 GiB on one H200 and had not finished its first batch after
    100 s, and Llama-3.1's 131,072 would probe at that length. A ``max_length`` of the
    prompts' own need probes at that length and fits every prompt as it is.
    """
    advised = -(-needed // ADVICE_STEP) * ADVICE_STEP
    if needed <= 0 or window < FAR_LARGER * needed or window <= advised:  # already what it would advise
        return None
    return (f"--batch_size auto probes batches as long as the model's window ({window} tokens), while the longest "
            f"prompt of this run's suite tasks plus max_gen_toks is {needed} tokens: pass max_length={advised} in "
            f"--model_args to probe at that length (every prompt fits as it is; other tasks of the run are not "
            f"measured), or a fixed --batch_size (docs/running.md#on-gpus)")


def advise_batch_size(backend: Any, record: Mapping[str, Any]) -> None:
    """Note this task's need; before the run's first generation, say :func:`batch_size_advice`
    once for every suite task built (a backend whose ``batch_size`` is ``auto`` and that
    probes it, lm-eval's HF one).

    Why at the first generation: lm-eval builds every task's requests before it generates,
    so only then is the longest prompt of all of them known; the backend's
    ``generate_until`` is wrapped for that one call and put back as it was.
    """
    if backend is None or not hasattr(backend, "_detect_batch_size") or not record.get("window"):
        return
    if not str(getattr(backend, "batch_size", "")).startswith("auto"):
        return
    needed = int(record.get("prompt_tokens_max") or 0) + int(record.get("generation") or 0)
    key = id(backend)
    if key in _NEEDED:
        _NEEDED[key] = max(_NEEDED[key], needed)
        return
    _NEEDED[key] = needed
    inner = backend.generate_until

    def generate_until(requests: Any, *args: Any, **kwargs: Any) -> Any:
        backend.generate_until = inner
        line = batch_size_advice(int(record["window"]), _NEEDED.pop(key, 0))
        if line and int(getattr(backend, "rank", 0) or 0) == 0:
            log.warning("%s", line)
        return inner(requests, *args, **kwargs)

    backend.generate_until = generate_until


__all__ = ["ADVICE_STEP", "FAR_LARGER", "advise_batch_size", "batch_size_advice", "budget_report", "calling_backend", "cut_by_word_budget", "cut_warning", "merge_fits", "rank_fits",
           "start_fitting"]

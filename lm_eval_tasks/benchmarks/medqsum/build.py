"""Biomedical question summarization (HealthCareMagic): data, prompts, metric battery.

Paper: Yuan et al., "Revisiting Automatic Question Summarization Evaluation in the
Biomedical Domain". A patient's question from HealthCareMagic (MedDialog) is
summarized into one short, formal question. Source = the patient's question only:
the raw data (hub ``lighteval/med_dialog``, config ``healthcaremagic``, column
``src``) holds ``Patient: ... Doctor: ...``; the doctor's reply is removed by
:func:`patient_question`. Target = ``tgt`` (the question summary).

Every family of the battery (:data:`custom_metrics.battery.MEDQSUM`) is scored once per task, batched,
in the aggregation step (:class:`MedQSumTask`).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from lm_eval_tasks.benchmarks.budget import word_budget
from lm_eval_tasks.benchmarks.medqsum.record import RECORD
from lm_eval_tasks.data.loader import DataError, draw_demos, load_split, sampled_test
from lm_eval_tasks.benchmarks.prompting import truncate
from lm_eval_tasks.settings import resolve

log = logging.getLogger(__name__)

INSTRUCTION = ("Summarize the patient's question below into one short, formal question "
               "that a doctor could answer.")
TURN = "Question: {question}\nSummary:"
DEFAULT_SEED = 1234
DEFAULT_QUESTION_WORDS = 400   # zero-shot; HealthCareMagic questions are rarely longer
DEFAULT_DEMO_WORDS = 200       # per demonstration question (few-shot)

_PATIENT_RE = re.compile(r"^\s*patient\s*:\s*", re.IGNORECASE)
_DOCTOR_RE = re.compile(r"(?:^|\s)Doctor\s*:")


def patient_question(src: str) -> str:
    """The patient's turn of a ``Patient: ... Doctor: ...`` dialogue (labels removed).

    Text without a ``Doctor:`` turn is returned whole (the mirror already holds
    questions only), minus a leading ``Patient:`` label.
    """
    text = src or ""
    m = _DOCTOR_RE.search(text)
    if m is not None:
        text = text[: m.start()]
    return _PATIENT_RE.sub("", text).strip()


def zero_shot_prompt(question: str, **budget: Any) -> str:
    """``{INSTRUCTION}\\nQuestion: {question}\\nSummary:`` with the question truncated."""
    return f"{INSTRUCTION}\n" + TURN.format(question=truncate(question, **budget))


def few_shot_prompt(question: str, demos: list[dict], budget: dict, demo_budget: dict) -> str:
    """The instruction, solved examples in the same format (blank line between), the query."""
    parts = [TURN.format(question=truncate(d["document"], **demo_budget)) + " " + d["summary"].strip()
             for d in demos]
    parts.append(TURN.format(question=truncate(question, **budget)))
    return f"{INSTRUCTION}\n" + "\n\n".join(parts)


def load_records(subset: str, split: str, task: str, metadata: dict) -> list[dict]:
    """Records with ``document`` = the patient's question only and ``summary``."""
    recs = load_split(RECORD.name, subset, split, resolve(metadata, "data_dir"), task,
                      hub_path=resolve(metadata, "hub_path"), hub=RECORD.hub_sources.get(subset))
    out = []
    for r in recs:
        q = patient_question(r["document"])
        s = (r["summary"] or "").strip()
        if q and s:
            out.append({**r, "document": q, "summary": s})
    if len(out) < len(recs):
        log.info("%s: %d of %d %s records had an empty question or summary and were left out",
                 task, len(recs) - len(out), len(recs), split)
    return out


def build_docs(subset: str, shots: int, task: str, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
    """Records of ``split`` with the task's ``prompt`` (zero- or few-shot)."""
    docs = load_records(subset, split, task, metadata)
    docs = sampled_test(docs, metadata)
    budget = word_budget(metadata, "doc", DEFAULT_QUESTION_WORDS)
    if shots == 0:
        for d in docs:
            d["prompt"] = zero_shot_prompt(d["document"], **budget)
        return docs, {}
    demo_budget = word_budget(metadata, "demo", DEFAULT_DEMO_WORDS)
    pool = load_records(subset, "train", task, metadata)
    if len(pool) < shots:
        raise DataError(f"task {task!r}: {len(pool)} usable train records; {shots} demonstrations needed")
    seed = resolve(metadata, "fewshot_seed", DEFAULT_SEED)
    for d in docs:
        demos = draw_demos(pool, d["id"], seed, shots)
        d["prompt"] = few_shot_prompt(d["document"], demos, budget, demo_budget)
        d["demo_ids"] = [x["id"] for x in demos]
    return docs, {"fewshot_seed_used": seed}

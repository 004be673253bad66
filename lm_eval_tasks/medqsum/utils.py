"""Biomedical question summarization (HealthCareMagic): data, prompts, metric battery.

Paper: Yuan et al., "Revisiting Automatic Question Summarization Evaluation in the
Biomedical Domain". A patient's question from HealthCareMagic (MedDialog) is
summarized into one short, formal question. Source = the patient's question only:
the raw data (hub ``lighteval/med_dialog``, config ``healthcaremagic``, column
``src``) holds ``Patient: ... Doctor: ...``; the doctor's reply is removed by
:func:`patient_question`. Target = ``tgt`` (the question summary).

Every metric of :mod:`custom_metrics.battery` is computed once per task, batched,
in the aggregation step (:class:`MedQSumTask`).
"""

from __future__ import annotations

import logging
import os
import random
import re
from typing import Any

from lm_eval_tasks.common.data import DataError, load_split
from lm_eval_tasks.common.prompts import truncate
from lm_eval_tasks.common.settings import int_setting, setting
from lm_eval_tasks.common.task import SummarizationTask, clean_prediction

log = logging.getLogger(__name__)

SUBSETS = ("hcm",)
INSTRUCTION = ("Summarize the patient's question below into one short, formal question "
               "that a doctor could answer.")
TURN = "Question: {question}\nSummary:"
DEFAULT_SEED = 1234
DEFAULT_QUESTION_WORDS = 400   # zero-shot; HealthCareMagic questions are rarely longer
DEFAULT_DEMO_WORDS = 200       # per demonstration question (few-shot)

# metadata key -> environment variable (fallback after the metadata, as in common.settings)
ENV_FALLBACKS = {
    "bertscore_model": "DOMSUM_BERTSCORE_MODEL",
    "bertscore_layers": "DOMSUM_BERTSCORE_LAYERS",
    "sci_bertscore_model": "DOMSUM_SCI_BERTSCORE_MODEL",
    "sci_bertscore_layers": "DOMSUM_SCI_BERTSCORE_LAYERS",
    "blanc_model": "DOMSUM_BLANC_MODEL",
    "blanc_tune_epochs": "DOMSUM_BLANC_TUNE_EPOCHS",
    "ppl_model": "DOMSUM_PPL_MODEL",
    "mauve_model": "DOMSUM_MAUVE_MODEL",
    "metric_batch_size": "DOMSUM_METRIC_BATCH_SIZE",
    "medqsum_metrics": "DOMSUM_MEDQSUM_METRICS",
}

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


def medqsum_setting(metadata: dict | None, key: str, default: Any = None) -> Any:
    """Metadata first, then the key's environment variable, then ``default``."""
    value = setting(metadata, key)
    if value not in (None, ""):
        return value
    env = ENV_FALLBACKS.get(key)
    if env and os.environ.get(env, "") != "":
        return os.environ[env]
    return default


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
    if subset not in SUBSETS:
        raise DataError(f"task {task!r}: unknown medqsum subset {subset!r}; known: {SUBSETS}")
    recs = load_split("medqsum", subset, split, setting(metadata, "data_dir"), task,
                      hub_path=setting(metadata, "hub_path"))
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


def build_docs(subset: str, shots: int, task: str, metadata: dict, split: str = "test") -> list[dict]:
    """Records of ``split`` with the task's ``prompt`` (zero- or few-shot)."""
    docs = load_records(subset, split, task, metadata)
    n = int_setting(metadata, "sample_test")
    if n is not None and n < len(docs):
        rng = random.Random(int_setting(metadata, "sample_seed", 42))
        docs = [docs[i] for i in sorted(rng.sample(range(len(docs)), n))]
    tok = setting(metadata, "prompt_tokenizer")
    budget = {"max_words": int_setting(metadata, "max_doc_words", DEFAULT_QUESTION_WORDS),
              "max_tokens": int_setting(metadata, "max_doc_tokens"), "tokenizer_name": tok}
    if shots == 0:
        for d in docs:
            d["prompt"] = zero_shot_prompt(d["document"], **budget)
        return docs
    demo_budget = {"max_words": int_setting(metadata, "max_demo_words", DEFAULT_DEMO_WORDS),
                   "max_tokens": int_setting(metadata, "max_demo_tokens"), "tokenizer_name": tok}
    pool = load_records(subset, "train", task, metadata)
    if len(pool) < shots:
        raise DataError(f"task {task!r}: {len(pool)} usable train records; {shots} demonstrations needed")
    seed = int_setting(metadata, "fewshot_seed", DEFAULT_SEED)
    for d in docs:
        demos = random.Random(f"{seed}:{d['id']}").sample(pool, shots)
        d["prompt"] = few_shot_prompt(d["document"], demos, budget, demo_budget)
        d["demo_ids"] = [x["id"] for x in demos]
    return docs


def load(**kwargs: Any):
    """``custom_dataset`` entry point (metadata + dataset_kwargs from the YAML)."""
    import datasets

    subset = kwargs.pop("subset")
    shots = int(kwargs.pop("shots", 0))
    task = kwargs.pop("task", f"medqsum_{subset}")
    docs = build_docs(subset, shots, task, kwargs)
    if not docs:
        raise DataError(f"task {task!r}: the test split has no usable record")
    return {"test": datasets.Dataset.from_list(docs)}


def battery_config(meta: dict) -> dict:
    """The metric-battery configuration resolved from metadata / environment."""
    cfg: dict[str, Any] = {}
    for key in ("bertscore_model", "bertscore_layers", "sci_bertscore_model", "sci_bertscore_layers",
                "blanc_model", "blanc_tune_epochs", "ppl_model", "mauve_model"):
        v = medqsum_setting(meta, key)
        if v not in (None, ""):
            cfg[key] = v
    bs = medqsum_setting(meta, "metric_batch_size")
    if bs not in (None, ""):
        cfg["batch_size"] = int(bs)
    metrics = medqsum_setting(meta, "medqsum_metrics")
    if metrics:
        cfg["metrics"] = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else list(metrics)
    return cfg


class MedQSumTask(SummarizationTask):
    """HealthCareMagic question summarization scored by the full metric battery.

    One family, ``battery``: BLEU, SacreBLEU, ROUGE-1/2/L, METEOR, chrF, BERTScore
    (general + scientific encoder), BLANC-help/-tune, perplexity and MAUVE in one
    batched pass per task. A metric whose model is missing is NaN in the results and
    listed, with the reason, under the task metadata's ``medqsum_skipped``; timings,
    signatures and models used are recorded beside it.
    """

    FAMILIES = ("battery",)

    def _record_scorer_settings(self, meta: dict) -> None:
        from custom_metrics.battery import resolved_models

        cfg = battery_config(meta)
        meta["medqsum_models_used"] = resolved_models(cfg)

    def family_keys(self, family: str) -> tuple[str, ...]:
        if family == "battery":
            from custom_metrics.battery import METRIC_KEYS

            return METRIC_KEYS
        return super().family_keys(family)

    def higher_is_better(self) -> dict[str, bool]:
        from custom_metrics.battery import LOWER_IS_BETTER

        return {k: k not in LOWER_IS_BETTER for k in self.metric_names()}

    def process_results(self, doc: dict, results: list) -> dict:
        pred = clean_prediction(results[0] if results else "")
        item = (str(doc.get("id", "")), pred, doc.get("summary", ""), doc.get("document", ""))
        return {name: item for name in self.metric_names()}

    def score_family(self, family: str, items):
        if family != "battery":
            return super().score_family(family, items)
        from custom_metrics.battery import METRIC_KEYS, medqsum_battery

        res = medqsum_battery([it[1] for it in items], [it[2] for it in items], [it[3] for it in items],
                              config=battery_config(self.meta))
        self.meta["medqsum_skipped"] = [s for s in res["skipped"]]
        self.meta["medqsum_timings_s"] = {k: round(v, 4) for k, v in res["timings"].items()}
        self.meta["medqsum_details"] = res["details"]
        return {k: res[k] for k in METRIC_KEYS}

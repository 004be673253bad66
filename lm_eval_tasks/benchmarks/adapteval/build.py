"""AdaptEval glue: data filters, the paper's prompts, DVO and judge metrics.

Paper: Afzal, Chalumattu, Matthes, Mascarell, "AdaptEval: Evaluating Large Language
Models on Domain Adaptation for Text Summarization" (2024). Two prompt variants
(setting ``adapteval_prompt_variant``, recorded in the results as
``prompt_variant_used``); where the paper and its release disagree the default follows
the paper:

* ``paper`` (default): Table 7 (Appendix B) word for word. Zero-shot::

      You are an expert at summarization. Proceed to summarize the following text.
      TEXT: {article}
      SUMMARY:

  Few-shot: the first solved example opens with the same instruction, each further one
  with "Proceed to summarize the following text.", each is
  ``TEXT: {article}\\nSUMMARY: {summary}``, lines joined by newlines; the query is
  ``TEXT: {article}\\nSUMMARY:`` with no instruction of its own.
* ``release``: ``prompt_0`` of the release's prediction files
  (``anum94/AdaptEval`` ``data/predictions/*.csv``). It differs from Table 7 in three
  places: "text. TEXT:" on one line (a space, not a newline), "SUMMARY:{summary}" with
  no space, and the query turn repeats "Proceed to summarize the following text.".
  Where the logged query should end in ``\\nSUMMARY:`` it ends in a literal
  ``max_lengthrequest_suffix`` (placeholders left unformatted); the suite ends the query
  with ``\\nSUMMARY:`` as every other turn.
"""

from __future__ import annotations

import logging
from typing import Any

from lm_eval_tasks.benchmarks.adapteval.record import RECORD
from lm_eval_tasks.benchmarks.budget import word_budget
from lm_eval_tasks.data.loader import DataError, draw_demos, load_split, sampled_test
from lm_eval_tasks.benchmarks.prompting import truncate
from custom_metrics.tokenize import tokenizer_info
from lm_eval_tasks.settings import resolve

log = logging.getLogger(__name__)

INSTRUCTION = "You are an expert at summarization."
PROMPT_VARIANTS = ("paper", "release")
#: variant -> (a turn that asks, the few-shot query turn, text between "SUMMARY:" and a solved summary)
PROMPT_FORMATS: dict[str, tuple[str, str, str]] = {
    "paper": ("Proceed to summarize the following text.\nTEXT: {document}\nSUMMARY:",
              "TEXT: {document}\nSUMMARY:", " "),
    "release": ("Proceed to summarize the following text. TEXT: {document}\nSUMMARY:",
                "Proceed to summarize the following text. TEXT: {document}\nSUMMARY:", ""),
}
PROMPT_SOURCES = {"paper": "AdaptEval paper, Table 7",
                  "release": "AdaptEval release, prompt_0 of data/predictions/*.csv"}
DEFAULT_SEED = 1234

# Word budgets that fit a 4,096-token window (about 0.75 words per Llama token) with
# the generation budget (256 tokens; GovReport 1,024) and, two-shot, two examples.
BUDGETS: dict[tuple[str, int], dict[str, int]] = {
    ("arxiv", 0): {"doc": 2600}, ("pubmed", 0): {"doc": 2600}, ("govreport", 0): {"doc": 2200},
    ("arxiv", 2): {"doc": 1400, "demo_doc": 450, "demo_summary": 200},
    ("pubmed", 2): {"doc": 1400, "demo_doc": 450, "demo_summary": 200},
    ("govreport", 2): {"doc": 800, "demo_doc": 300, "demo_summary": 300},
}

# Filters of the paper's data cleaning (Section 3): extractive references and extremely long
# sources or summaries. Thresholds are ours (the paper gives only the removed shares: 3% arXiv,
# 4% PubMed, 0.4% GovReport); each is a setting (``filter_*``, declared in the record, papers/adapteval.py).


def _format(variant: str) -> tuple[str, str, str]:
    if variant not in PROMPT_FORMATS:
        raise ValueError(f"adapteval_prompt_variant must be one of {', '.join(PROMPT_VARIANTS)}, got {variant!r}")
    return PROMPT_FORMATS[variant]


def zero_shot_prompt(document: str, variant: str = "paper", **budget: Any) -> str:
    """Zero-shot prompt of ``variant`` (Table 7 by default), document truncated to the budget."""
    turn, _, _ = _format(variant)
    return f"{INSTRUCTION} " + turn.format(document=truncate(document, **budget))


def few_shot_prompt(document: str, demos: list[dict], budget: dict, demo_budget: dict,
                    demo_summary_words: int | None, variant: str = "paper") -> str:
    """Few-shot prompt of ``variant`` (Table 7 by default): solved examples, then the query."""
    turn, query, sep = _format(variant)
    parts = []
    for d in demos:
        summary = truncate(d["summary"], max_words=demo_summary_words)
        if variant == "paper":
            summary = summary.strip()
        parts.append(turn.format(document=truncate(d["document"], **demo_budget)) + sep + summary)
    parts.append(query.format(document=truncate(document, **budget)))
    return f"{INSTRUCTION} " + "\n".join(parts)


def trigram_overlap(document: str, summary: str) -> float:
    """Share of the summary's distinct word trigrams that occur in the document.

    Words: lowercased ``nltk.word_tokenize`` (:func:`custom_metrics.tokenize.word_tokenize`),
    the tokenizer of the AdaptEval release; the paper (filter after Shaham et al., 2022)
    does not name one.
    """
    from custom_metrics.tokenize import word_tokenize

    s, d = word_tokenize(summary), word_tokenize(document)
    grams = {tuple(s[i : i + 3]) for i in range(len(s) - 2)}
    if not grams:
        return 0.0
    dgrams = {tuple(d[i : i + 3]) for i in range(len(d) - 2)}
    return len(grams & dgrams) / len(grams)


def filter_records(records: list[dict], domain: str, metadata: dict, task: str) -> tuple[list[dict], dict[str, int]]:
    """Apply the paper's filters; return kept records and removal counts per filter."""
    def opt(key: str):
        v = resolve(metadata, key)
        return v.get(domain) if isinstance(v, dict) else v

    max_overlap = opt("filter_extractive_overlap")
    max_doc, max_sum, min_sum = opt("filter_max_doc_words"), opt("filter_max_summary_words"), opt("filter_min_summary_words")
    removed = {"empty": 0, "extractive": 0, "long_document": 0, "long_summary": 0, "short_summary": 0}
    kept = []
    for r in records:
        doc, summ = r["document"], r["summary"]
        nd, ns = len(doc.split()), len(summ.split())
        if nd == 0 or ns == 0:
            removed["empty"] += 1
        elif max_doc is not None and nd > max_doc:
            removed["long_document"] += 1
        elif max_sum is not None and ns > max_sum:
            removed["long_summary"] += 1
        elif min_sum is not None and ns < min_sum:
            removed["short_summary"] += 1
        elif max_overlap is not None and trigram_overlap(doc, summ) >= max_overlap:
            removed["extractive"] += 1
        else:
            kept.append(r)
    log.info("%s: kept %d of %d records; removed %s", task, len(kept), len(records), removed)
    return kept, removed


def build_docs(domain: str, shots: int, task: str, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
    """Filtered records of ``split`` with prompts; plus a report of what was removed."""
    data_dir = resolve(metadata, "data_dir")
    hub_path = resolve(metadata, "hub_path")  # another hub copy of the same dataset
    hub = RECORD.hub_sources.get(domain)
    docs, removed = filter_records(load_split(RECORD.name, domain, split, data_dir, task, hub_path=hub_path, hub=hub),
                                   domain, metadata, task)
    docs = sampled_test(docs, metadata)
    b = BUDGETS[(domain, shots)]
    variant = str(resolve(metadata, "adapteval_prompt_variant")).strip().lower()
    _format(variant)
    facts: dict[str, Any] = {"filter_removed": removed, "filter_tokenizer": tokenizer_info("nltk"),
                             "prompt_variant_used": variant, "prompt_source": PROMPT_SOURCES[variant]}
    budget = word_budget(metadata, "doc", b["doc"])
    if shots == 0:
        for d in docs:
            d["prompt"] = zero_shot_prompt(d["document"], variant, **budget)
        return docs, facts
    demo_budget = word_budget(metadata, "demo", b["demo_doc"])
    pool, _ = filter_records(load_split(RECORD.name, domain, "train", data_dir, task, hub_path=hub_path, hub=hub),
                             domain, metadata, task)
    if len(pool) < shots:
        raise DataError(f"task {task!r}: {len(pool)} usable train records; {shots} demonstrations needed")
    seed = resolve(metadata, "fewshot_seed", DEFAULT_SEED)
    demo_sum = resolve(metadata, "max_demo_summary_words", b["demo_summary"])
    for d in docs:
        demos = draw_demos(pool, d["id"], seed, shots)
        d["prompt"] = few_shot_prompt(d["document"], demos, budget, demo_budget, demo_sum, variant)
        d["demo_ids"] = [x["id"] for x in demos]
    return docs, {**facts, "fewshot_seed_used": seed}

"""AdaptEval glue: data filters, the paper's prompts, DVO and judge metrics.

Paper: Afzal, Chalumattu, Matthes, Mascarell, "AdaptEval: Evaluating Large Language
Models on Domain Adaptation for Text Summarization" (2024). Prompts are the paper's
Table 7, as its release logs them (``prompt_0`` of the released prediction files):
an instruction, ``TEXT: {article}``, a newline and ``SUMMARY:``; the few-shot prompt
repeats "Proceed to summarize the following text. TEXT: ...\\nSUMMARY:..." for each
solved example before the query.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from lm_eval_tasks.common.data import DataError, load_split, report_load
from lm_eval_tasks.common.prompts import truncate
from lm_eval_tasks.common.settings import int_setting, setting
from lm_eval_tasks.common.task import SummarizationTask

log = logging.getLogger(__name__)

DOMAINS = ("arxiv", "pubmed", "govreport")
INSTRUCTION = "You are an expert at summarization."
TURN = "Proceed to summarize the following text. TEXT: {document}\nSUMMARY:"
DEFAULT_SEED = 1234

# Word budgets that fit a 4,096-token window (about 0.75 words per Llama token) with
# the generation budget (256 tokens; GovReport 1,024) and, two-shot, two examples.
BUDGETS: dict[tuple[str, int], dict[str, int]] = {
    ("arxiv", 0): {"doc": 2600}, ("pubmed", 0): {"doc": 2600}, ("govreport", 0): {"doc": 2200},
    ("arxiv", 2): {"doc": 1400, "demo_doc": 450, "demo_summary": 200},
    ("pubmed", 2): {"doc": 1400, "demo_doc": 450, "demo_summary": 200},
    ("govreport", 2): {"doc": 800, "demo_doc": 300, "demo_summary": 300},
}

# Filters of the paper's data cleaning (Section 3): extractive references and
# extremely long sources or summaries. Thresholds are ours (the paper gives only
# the removed shares: 3% arXiv, 4% PubMed, 0.4% GovReport); every one is a metadata key.
DEFAULT_FILTERS = {
    "filter_extractive_overlap": 0.9,   # share of the summary's trigrams found in the document
    "filter_max_doc_words": 15000,
    "filter_max_summary_words": {"arxiv": 500, "pubmed": 500, "govreport": 1500},
    "filter_min_summary_words": 5,
}


def zero_shot_prompt(document: str, **budget: Any) -> str:
    """Table 7 zero-shot prompt, document truncated to the budget."""
    return f"{INSTRUCTION} " + TURN.format(document=truncate(document, **budget))


def few_shot_prompt(document: str, demos: list[dict], budget: dict, demo_budget: dict,
                    demo_summary_words: int | None) -> str:
    """Table 7 few-shot prompt: solved examples in the same format, then the query."""
    parts = []
    for d in demos:
        summary = truncate(d["summary"], max_words=demo_summary_words)
        parts.append(TURN.format(document=truncate(d["document"], **demo_budget)) + summary)
    parts.append(TURN.format(document=truncate(document, **budget)))
    return f"{INSTRUCTION} " + "\n".join(parts)


def trigram_overlap(document: str, summary: str) -> float:
    """Share of the summary's distinct word trigrams that occur in the document."""
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
        v = metadata.get(key, DEFAULT_FILTERS[key])
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
    if domain not in DOMAINS:
        raise DataError(f"task {task!r}: unknown AdaptEval domain {domain!r}; known: {DOMAINS}")
    data_dir = setting(metadata, "data_dir")
    hub_path = setting(metadata, "hub_path")  # another hub copy of the same dataset
    docs, removed = filter_records(load_split("adapteval", domain, split, data_dir, task, hub_path=hub_path),
                                   domain, metadata, task)
    n = int_setting(metadata, "sample_test")
    if n is not None and n < len(docs):
        rng = random.Random(int_setting(metadata, "sample_seed", 42))
        docs = [docs[i] for i in sorted(rng.sample(range(len(docs)), n))]
    b = BUDGETS[(domain, shots)]
    tok = setting(metadata, "prompt_tokenizer")
    budget = {"max_words": int_setting(metadata, "max_doc_words", b["doc"]),
              "max_tokens": int_setting(metadata, "max_doc_tokens"), "tokenizer_name": tok}
    if shots == 0:
        for d in docs:
            d["prompt"] = zero_shot_prompt(d["document"], **budget)
        return docs, removed
    demo_budget = {"max_words": int_setting(metadata, "max_demo_words", b["demo_doc"]),
                   "max_tokens": int_setting(metadata, "max_demo_tokens"), "tokenizer_name": tok}
    pool, _ = filter_records(load_split("adapteval", domain, "train", data_dir, task, hub_path=hub_path),
                             domain, metadata, task)
    if len(pool) < shots:
        raise DataError(f"task {task!r}: {len(pool)} usable train records; {shots} demonstrations needed")
    seed = int_setting(metadata, "fewshot_seed", DEFAULT_SEED)
    demo_sum = int_setting(metadata, "max_demo_summary_words", b["demo_summary"])
    for d in docs:
        demos = random.Random(f"{seed}:{d['id']}").sample(pool, shots)
        d["prompt"] = few_shot_prompt(d["document"], demos, budget, demo_budget, demo_sum)
        d["demo_ids"] = [x["id"] for x in demos]
    return docs, removed


def load(**kwargs: Any):
    """``custom_dataset`` entry point (metadata + dataset_kwargs from the YAML)."""
    import datasets

    domain = kwargs.pop("domain")
    shots = int(kwargs.pop("shots", 0))
    task = kwargs.pop("task", f"adapteval_{domain}")
    docs, removed = build_docs(domain, shots, task, kwargs)
    report_load(task, filter_removed=removed)  # test-split removals, into the results metadata
    if not docs:
        raise DataError(f"task {task!r}: every test record was removed by the filters")
    return {"test": datasets.Dataset.from_list(docs)}


class AdaptEvalTask(SummarizationTask):
    """AdaptEval: ROUGE, BERTScore and Domain Vocabulary Overlap."""

    FAMILIES = ("rouge", "bertscore", "dvo")

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        # Fail before generation, not after: the vocabulary must exist.
        self._vocab = None
        self.vocabulary()

    def _domain(self) -> str:
        return (self.config.dataset_kwargs or {})["domain"]

    def vocabulary(self) -> list[str]:
        if self._vocab is None:
            from custom_metrics.dvo import load_vocabulary, vocabulary_path

            path = vocabulary_path("adapteval", self._domain(), setting(self.meta, "vocab_dir"))
            self._vocab = load_vocabulary(path)
            self.meta["vocabulary_used"] = str(path)
        return self._vocab

    def family_keys(self, family: str) -> tuple[str, ...]:
        if family == "dvo":
            return ("dvo",)
        return super().family_keys(family)

    #: failure counts reported beside the scores (lower is better)
    COUNTS: tuple[str, ...] = ()

    def higher_is_better(self) -> dict[str, bool]:
        out = super().higher_is_better()
        for key in self.COUNTS:
            if key in out:
                out[key] = False
        return out

    def _setup_judge(self, what: str, family: str) -> Any:
        """The task's judge config, recorded in the results; None drops ``family`` with a notice."""
        from custom_metrics.judge import notice_judge_skipped, resolve_judge_config

        config = resolve_judge_config(self.meta)
        if config is None:
            notice_judge_skipped(f"task {self.config.task}: {what}")
            self.FAMILIES = tuple(f for f in self.FAMILIES if f != family)
        else:
            self.meta["judge_model_used"] = config.model
            self.meta["judge_base_url_used"] = config.base_url
        return config

    def score_family(self, family: str, items):
        if family == "dvo":
            from custom_metrics.dvo import dvo

            return {"dvo": dvo([it[1] for it in items], self.vocabulary())}
        return super().score_family(family, items)


JUDGE_KEYS = ("domain_adaptation", "coherence", "fluency", "judge_parse_failures")


class AdaptEvalJudgedTask(AdaptEvalTask):
    """AdaptEval plus the LLM-judge scores (opt-in task variants ``..._judged``).

    Judge metrics (1-5 Domain Adaptation, 1-5 Coherence, 1-3 Fluency) need the source
    document, so their per-document items carry it; they are computed in one batch
    per task through :func:`custom_metrics.judge_prompts.adapteval_judge` (bounded
    concurrency, retries, SQLite cache). ``judge_parse_failures`` counts the replies
    that held no valid score after one retry (excluded from the means, never 0).
    Without a configured judge the judge metrics are left out with one notice.
    """

    FAMILIES = ("rouge", "bertscore", "dvo", "judge")
    COUNTS = ("judge_parse_failures",)

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self._judge_config = self._setup_judge("judge metrics", "judge")

    def family_keys(self, family: str) -> tuple[str, ...]:
        if family == "judge":
            return JUDGE_KEYS
        return super().family_keys(family)

    def process_results(self, doc: dict, results: list) -> dict:
        out = super().process_results(doc, results)
        if "judge" in self.FAMILIES:
            item = out["rouge1"]
            judge_item = (item[0], item[1], doc.get("document", ""))
            for key in JUDGE_KEYS:
                out[key] = judge_item
        return out

    def score_family(self, family: str, items):
        if family != "judge":
            return super().score_family(family, items)
        from custom_metrics.judge_prompts import adapteval_judge

        res = adapteval_judge([it[2] for it in items], [it[1] for it in items],
                              self._domain(), self._judge_config)
        failures = res["parse_failures"]
        self.meta["judge_mode"] = res["judge_mode"]
        self.meta["judge_usage"] = res["usage"]
        out: dict[str, float] = {}
        for key in ("domain_adaptation", "coherence", "fluency"):
            value = res.get(key)
            out[key] = float("nan") if value is None else float(value)
        out["judge_parse_failures"] = float(sum(failures.values()) if isinstance(failures, dict) else failures)
        return out


FM_KEYS = ("fm", "fm_vanilla", "fm_failures")


class AdaptEvalFMTask(AdaptEvalTask):
    """AdaptEval plus the Facet-aware Metric (opt-in variants ``adapteval_{arxiv,pubmed}_fm``).

    FM (Chen et al.) grades a scientific abstract against the reference abstract facet
    by facet (background / method / result / conclusion); ``fm_vanilla`` is its
    one-rating baseline; ``fm_failures`` counts pairs whose facet extraction or
    rating held no valid answer after one retry (left out of the means, never 0).
    Both run in one batch per task through :func:`custom_metrics.fm.fm_scores` with
    the suite's judge (cache, bounded concurrency). Metadata: ``fm_variant``
    (``zero`` default, ``few`` = the paper's in-context examples) and ``fm_details``
    (a JSONL path receiving each document's facet fractions, ratings and segments).
    Without a configured judge the FM metrics are left out with one notice.
    """

    FAMILIES = ("rouge", "bertscore", "dvo", "fm")
    COUNTS = ("fm_failures",)

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self._fm_variant = str(setting(self.meta, "fm_variant") or "zero")
        if self._fm_variant not in ("zero", "few"):
            raise ValueError(f"task {self.config.task}: metadata fm_variant must be 'zero' or 'few', "
                             f"got {self._fm_variant!r}")
        self._judge_config = self._setup_judge("FM metrics", "fm")
        if self._judge_config is not None:
            self.meta["fm_variant_used"] = self._fm_variant

    def family_keys(self, family: str) -> tuple[str, ...]:
        if family == "fm":
            return FM_KEYS
        return super().family_keys(family)

    def score_family(self, family: str, items):
        if family != "fm":
            return super().score_family(family, items)
        from custom_metrics.fm import fm_scores

        res = fm_scores([it[2] for it in items], [it[1] for it in items], self._judge_config,
                        variant=self._fm_variant)
        self.meta["fm_usage"] = res["usage"]
        self.meta["fm_failures_by_kind"] = res["failures"]
        details = setting(self.meta, "fm_details")
        if details:
            import json
            from pathlib import Path

            path = Path(details).expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                for it, detail in zip(items, res["per_item"]):
                    fh.write(json.dumps({"task": self.config.task, "id": it[0], **detail},
                                        ensure_ascii=False) + "\n")
        return {
            "fm": float("nan") if res["fm"] is None else float(res["fm"]),
            "fm_vanilla": float("nan") if res["fm_vanilla"] is None else float(res["fm_vanilla"]),
            "fm_failures": float(sum(res["failures"].values())),
        }

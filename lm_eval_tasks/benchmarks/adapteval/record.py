"""AdaptEval (Afzal et al., 2024): every fact of the benchmark.

arXiv, PubMed and GovReport (the ``ccdv/*-summarization`` copies, with the paper's
filters), zero- and two-shot prompts (Table 7, :mod:`lm_eval_tasks.benchmarks.adapteval.build`),
ROUGE, BERTScore and Domain Vocabulary Overlap; opt-in LLM-judge (domain adaptation,
coherence, fluency) and Facet-aware Metric variants.
"""

from __future__ import annotations

from custom_metrics.setting import Setting, as_float, as_int, words_or_map
from lm_eval_tasks.benchmarks.layout import Column, Layout, ReportPieces
from lm_eval_tasks.benchmarks.record import Benchmark, Convention, Variant
from lm_eval_tasks.data.records import HubSource

NAME = "adapteval"


def _adapteval_columns() -> tuple[Column, ...]:
    """AdaptEval Table 3's columns: BERTScore, DVO and ROUGE per domain, in the paper's order."""
    domains = (("Medical", "pubmed"), ("Science", "arxiv"), ("Government", "govreport"))
    keys = (("BERTScore", "bertscore_f1", 3), ("DVO", "dvo", 2), ("ROUGE", "rouge_geo", 2))
    return tuple(Column(f"{d} {m}", key, subset, digits) for d, subset in domains for m, key, digits in keys)


def _adapteval_judge_columns() -> tuple[Column, ...]:
    """AdaptEval Table 5's columns: each judge rating per domain, in the paper's order."""
    domains = (("arXiv", "arxiv"), ("PubMed", "pubmed"), ("GovReport", "govreport"))
    keys = (("DA", "domain_adaptation"), ("Coherence", "coherence"), ("Fluency", "fluency"))
    return tuple(Column(f"{m} {d}", key, subset) for m, key in keys for d, subset in domains)


RECORD = Benchmark(
    name=NAME,
    title="AdaptEval",
    citation="AdaptEval (Afzal et al., 2024)",
    # 3.0: Table 7/8 prompts by default
    version=3.0,
    subsets=("arxiv", "pubmed", "govreport"),
    families=("rouge", "bertscore", "dvo"),
    variants=(Variant(0, group="adapteval"), Variant(2, group="adapteval_2shot"),
              Variant(0, "judged", ("judge",)), Variant(0, "fm", ("fm",), subsets=("arxiv", "pubmed"))),
    # the paper's budgets: 256 new tokens; GovReport 1,024
    max_gen_toks={"arxiv": 256, "pubmed": 256, "govreport": 1024},
    until=("Proceed to summarize the following text.", "\nTEXT:", "\n\n\n\n"),
    headline=("bertscore_f1", "dvo", "rouge_geo", "domain_adaptation", "coherence", "fluency", "fm"),
    hub_sources={
        "arxiv": HubSource("ccdv/arxiv-summarization", "document", "article", "abstract"),
        "pubmed": HubSource("ccdv/pubmed-summarization", "document", "article", "abstract"),
        "govreport": HubSource("ccdv/govreport-summarization", None, "report", "summary"),
    },
    conventions={
        "rouge_stemming": Convention(True, "release anum94/AdaptEval data/predictions/*.csv: rouge1/2/rougeL "
                                           "columns reproduced row for row by rouge-score with use_stemmer=True"),
    },
    settings=(
        Setting("max_demo_summary_words", None, as_int, None, "AdaptEval: per-demonstration summary budget.", "data",
                low=1, after="max_demo_tokens", system="prompt"),
        Setting("filter_extractive_overlap", None, as_float, 0.9,
                "AdaptEval filter: drop pairs with at least this share of summary trigrams in the document "
                "(> 1: off).", "data", low=0, after="max_demo_summary_words"),
        Setting("filter_max_doc_words", None, as_int, 15000, "AdaptEval filter: longest document kept.", "data",
                low=1, after="filter_extractive_overlap"),
        Setting("filter_max_summary_words", None, words_or_map, {"arxiv": 500, "pubmed": 500, "govreport": 1500},
                "AdaptEval filter: longest summary kept (a number or `{domain: n}`).", "data",
                after="filter_max_doc_words"),
        Setting("filter_min_summary_words", None, as_int, 5, "AdaptEval filter: shortest summary kept.", "data",
                low=0, after="filter_max_summary_words"),
        # the last row of the data settings
        Setting("adapteval_prompt_variant", "DOMSUM_ADAPTEVAL_PROMPT_VARIANT", str, "paper",
                "AdaptEval generation prompt: `paper` (Table 7) or `release` (`prompt_0` of the released "
                "prediction files).", "data", choices=("paper", "release"), system="prompt",
                used="prompt_variant_used"),
    ),
    report=ReportPieces(layouts=(
        Layout(NAME, "Table 3", f"{NAME}_table3",
               "AdaptEval Table 3 layout: BERTScore, DVO and ROUGE per domain and setting", _adapteval_columns()),
        Layout(NAME, "Table 5", f"{NAME}_table5",
               "AdaptEval Table 5 layout: judge ratings (Domain Adaptation, coherence, fluency) per domain",
               _adapteval_judge_columns(), variants=("judged",)),
    )),
    # fine-tuning (``python -m finetune --preset adapteval``): the paper's setup, LoRA r=64,
    # alpha=16, dropout 0.1, paged AdamW (32-bit), beta2 0.999, learning rate 2e-4 with a
    # constant schedule, 1 epoch, training subsets of 1k / 5k / 10k instances that fit a
    # 4,096-token window without truncation; batch 4, gradient checkpointing and
    # ``train_size`` 1000 as the default subset are ours
    finetune_preset={
        "lora": {
            "lora_r": 64,
            "lora_alpha": 16,
            "lora_dropout": 0.1,
            "optim": "paged_adamw_32bit",
            "adam_beta2": 0.999,
            "learning_rate": 2e-4,
            "lr_scheduler": "constant",
            "epochs": 1.0,
            "train_size": 1000,
            "max_length": 4096,
            "overlong": "drop",
            "require_full_document": True,
            "batch_size": 4,
            "gradient_checkpointing": True,
        },
    },
)

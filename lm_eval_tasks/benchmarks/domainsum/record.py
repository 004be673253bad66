"""DomainSum (Yuan & Zhang, Findings of NAACL 2025): every fact of the benchmark.

Fifteen domains in three levels of domain shift (Section 3), zero- and two-shot prompts
(Appendix B, :mod:`lm_eval_tasks.benchmarks.domainsum.build`), ROUGE and BERTScore (Table 2).
Data: the genre level from the hub as the paper samples it (500 test, 500 validation,
10,000 train per domain); style and topic from the authors' release or Newsroom's manual
download, through a local mirror.
"""

from __future__ import annotations

from lm_eval_tasks.benchmarks.layout import ReportPieces, ShotTable
from lm_eval_tasks.benchmarks.record import Benchmark, Convention, Variant
from lm_eval_tasks.data.records import HubSource

#: the paper's per-split sample of a genre domain (Section 3.1)
SAMPLE = {"test": 500, "validation": 500, "train": 10000}
#: a hub dataset with one split: ours are a seeded disjoint partition of it
ONE_SPLIT = {"train": "train", "validation": "train", "test": "train"}
#: the column names of its domains (Table 2's headings)
DOMAIN_NAMES = {"cnndm": "CNN/DM", "pubmed": "PubMed", "reddit": "Reddit", "samsum": "SAMSum", "wikihow": "WikiHow",
                "cnn": "CNN", "fox": "Fox", "nydaily": "NYDaily", "nytimes": "NYTimes", "wapo": "WaPo",
                "soccer": "Soccer", "crime": "Crime", "family": "Family", "media": "Media", "law": "Law"}

RECORD = Benchmark(
    name="domainsum",
    title="DomainSum",
    citation="DomainSum (Yuan & Zhang, Findings of NAACL 2025)",
    # 3.0: ROUGE without stemming, as its release scores (2.0: per-document scores with
    # standard errors, NLTK's own tokenizer)
    version=3.0,
    levels={
        "genre": ("cnndm", "pubmed", "reddit", "samsum", "wikihow"),
        "style": ("cnn", "fox", "nydaily", "nytimes", "wapo"),
        "topic": ("soccer", "crime", "family", "media", "law"),
    },
    families=("rouge", "bertscore"),
    # a group per level and setting; the whole benchmark lists both settings (never averaged)
    variants=(Variant(0, group="domainsum_{level}"), Variant(2, group="domainsum_{level}_2shot")),
    whole_group=True,
    # new-token budgets: about twice the mean reference length of Table 5 in Llama tokens,
    # rounded up (PubMed abstracts are long, SAMSum and Reddit one line)
    max_gen_toks={
        "cnndm": 128, "pubmed": 384, "reddit": 64, "samsum": 64, "wikihow": 160,
        "cnn": 96, "fox": 96, "nydaily": 96, "nytimes": 96, "wapo": 96,
        "soccer": 128, "crime": 128, "family": 128, "media": 128, "law": 128,
    },
    # stops end a run-on generation at the next prompt marker; none is "\n\n", which would
    # cut multi-line summaries (CNN/DM highlights, WikiHow steps)
    until={
        0: ("\n\n\n", "SUMMARY:", "You are an expert at summarization"),
        2: ("\n\n\n", "Example 3:", "\nDocument:", "Now, summarize the following text"),
    },
    headline=("rouge_geo", "rouge_mean", "bertscore_f1"),
    hub_sources={
        "cnndm": HubSource("abisee/cnn_dailymail", "3.0.0", "article", "highlights", sample=SAMPLE),
        "pubmed": HubSource("ccdv/pubmed-summarization", "document", "article", "abstract", sample=SAMPLE),
        "reddit": HubSource("ctr4si/reddit_tifu", "long", "documents", "tldr", splits=ONE_SPLIT, sample=SAMPLE,
                            note="Reddit TIFU (long) has one split; ours are a seeded disjoint partition."),
        "samsum": HubSource("knkarthick/samsum", None, "dialogue", "summary", sample=SAMPLE),
        "wikihow": HubSource("gursi26/wikihow-cleaned", None, "text", "headline", splits=ONE_SPLIT, sample=SAMPLE,
                             note="WikiHow's official loader needs a manual download; this mirror has one split."),
    },
    conventions={
        "rouge_stemming": Convention(False, "release hpzhang94/DomainSum scripts/json_evaluation.py: evaluate's "
                                            "load('rouge').compute() with its default use_stemmer=False"),
    },
    report=ReportPieces(
        # Table 2's two columns per domain: the paper's text defines its "ROUGE" as the
        # geometric mean of ROUGE-1/2/L
        shot_table=ShotTable("Table 2", ("rouge_geo", "bertscore_f1"), DOMAIN_NAMES),
        # the release's get_statistics.py measures (Table 5, Figure 3), correlated with the
        # models' performance in Table 4
        measure_profile="domainsum",
        statistics_table="Table 5",
        correlation_table="Table 4",
    ),
    # fine-tuning (``python -m finetune --preset domainsum``): LLMs with LoRA, learning rate
    # 5e-4, batch size 4, 20 epochs, 8-bit base weights (paper); BART / PEGASUS-X full
    # fine-tuning with AdamW, learning rate 5e-5, batch 12, 4 epochs, best checkpoint by
    # validation (paper). LoRA r=8 / alpha 16 / dropout 0.05 (the ``peft`` defaults of the
    # time) are ours
    finetune_preset={
        "lora": {
            "learning_rate": 5e-4,
            "batch_size": 4,
            "epochs": 20.0,
            "load_in_8bit": "auto",
            "lora_r": 8,
            "lora_alpha": 16,
            "lora_dropout": 0.05,
            "max_length": 4096,
        },
        "full": {
            "optim": "adamw_torch",
            "learning_rate": 5e-5,
            "batch_size": 12,
            "epochs": 4.0,
            "best_by_validation": True,
            "max_length": 1024,
        },
    },
)

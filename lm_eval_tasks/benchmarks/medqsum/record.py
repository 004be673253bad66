"""Revisiting Automatic Question Summarization Evaluation in the Biomedical Domain
(Yuan et al.): every fact of the benchmark.

HealthCareMagic question summarization (the BioBART/HELM preprocessing of
``lighteval/med_dialog``, the patient's question kept), zero- and two-shot prompts
(:mod:`lm_eval_tasks.benchmarks.medqsum.build`), and the paper's metric battery
(:data:`custom_metrics.battery.MEDQSUM`): every family of it optional (a missing model
skips it, counted, and the others score) and :data:`METRICS` picking which run.
"""

from __future__ import annotations

from custom_metrics.battery import MEDQSUM
from custom_metrics.setting import Setting, json_or_str
from lm_eval_tasks.benchmarks.record import Benchmark, Convention, Variant
from lm_eval_tasks.data.records import HubSource

#: the row that picks which battery families a run scores (the others "not requested")
METRICS = Setting("medqsum_metrics", "DOMSUM_MEDQSUM_METRICS", json_or_str, None,
                  "medqsum: comma list of battery families to run (default all).", "scorers",
                  after="metric_batch_size")

RECORD = Benchmark(
    name="medqsum",
    title="Medical question summarization",
    citation="Revisiting Automatic Question Summarization Evaluation in the Biomedical Domain (Yuan et al.)",
    version=2.0,
    subsets=("hcm",),
    families=MEDQSUM,
    optional_families=MEDQSUM,
    family_choice=METRICS,
    variants=(Variant(0, group="medqsum"), Variant(2, group="medqsum_2shot")),
    # question summaries are one short sentence
    max_gen_toks=64,
    until=("\n", "Question:"),
    hub_sources={
        # ``src`` is the whole "Patient: ... Doctor: ..." dialogue; splits 181,122 / 22,641 / 22,642
        "hcm": HubSource("lighteval/med_dialog", "healthcaremagic", "src", "tgt",
                         note="src holds the doctor's reply too; lm_eval_tasks.medqsum strips it."),
    },
    conventions={
        "rouge_stemming": Convention(True, "unknown: the paper does not say and no scoring code is released; "
                                           "the suite's stemming kept"),
    },
    settings=(
        METRICS,
    ),
    # fine-tuning (``python -m finetune --preset medqsum``), Section 2.2: "We finetune the
    # baseline models for 3 epochs [on the] HealthCareMagic dataset, with batch size 16,
    # learning rate 5e-5, and an AdamW optimizer", full fine-tuning of the large Pegasus,
    # BART, T5 and BioBART (paper). A 1,024-token source window (BART's positions; the
    # dialogues average 78 words) is ours; the paper states no schedule, warm-up or
    # checkpoint choice, so the library's defaults apply and the run card lists them
    finetune_preset={
        "full": {
            "optim": "adamw_torch",
            "learning_rate": 5e-5,
            "batch_size": 16,
            "epochs": 3.0,
            "max_length": 1024,
        },
    },
)

"""CCSBench (Ding et al., 2024): every fact of the benchmark.

Compositional controllable summarization of scientific abstracts: length, keywords,
readability and focus, alone and composed (Section 3); zero-shot (Appendix C.4),
three-shot (C.5) and ``Attribute: Value`` (Appendix A) prompts with the paper's system
message (:mod:`lm_eval_tasks.benchmarks.ccsbench.prompts`); controllability metrics. The
``_fulltext`` tasks give the C.4 prompt the paper's full text instead of its introduction
and conclusion (Section 7, Table 7).
"""

from __future__ import annotations

from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT_UNTIL
from custom_metrics.setting import Setting, json_or_str
from lm_eval_tasks.benchmarks.layout import PROMPT_TOKENS, Column, Layout, ReportPieces
from lm_eval_tasks.benchmarks.record import Benchmark, Convention, Variant

NAME = "ccsbench"
#: the attributes a compositional summary controls at once
CONTROLS = ("length", "keywords", "readability", "focus")
#: CCSBench Tables 4 and 7's columns (the text drops the Δ heading; see ccsbench.json)
_CCS = (("Quality ROUGE-L", "rougeL"), ("Length PCC", "length_pcc"), ("Length MAD", "length_mad"),
        ("Keywords SR", "keyword_sr"), ("Readability Fnormal", "fkgl_normal"), ("Readability Fhigh", "fkgl_high"),
        ("Readability Δ", "delta_fkgl"), ("Focus F1", "focus_macro_f1"))
#: words of the document kept in the prompt by default (``max_doc_words``), by shots: the
#: introduction + conclusion rarely reach 1,500 words; with three demonstrations less is kept
DOC_WORDS = {0: 1500, 3: 700}
#: the ``_fulltext`` tasks' default document budget, in words. Section 7 reports 6.78k input
#: tokens on average for the full papers (about 5,000 words at the usual ~1.3 tokens per word),
#: so 8,000 words keeps nearly every paper whole while bounding the cost of an outlier (an
#: appendix-heavy paper); the model's window still cuts the document further where needed
FULLTEXT_DOC_WORDS = 8000

RECORD = Benchmark(
    name=NAME,
    title="CCSBench",
    citation="CCSBench (Ding et al., 2024)",
    # 3.0: Appendix C prompts, C.3 focus judge, CMUdict syllables
    version=3.0,
    subsets=(*CONTROLS, "compositional"),
    families=("rouge",),
    subset_families={**{c: (f"ccs_{c}",) for c in CONTROLS},
                     "compositional": tuple(f"ccs_{c}" for c in CONTROLS)},
    variants=(Variant(0, group="ccsbench"), Variant(3, group="ccsbench_3shot"),
              Variant(0, "hard", group="ccsbench_hard"), Variant(0, "fulltext", group="ccsbench_fulltext")),
    # the abstracts are at most about 250 words
    max_gen_toks=300,
    until=DEFAULT_UNTIL,
    headline=("length_pcc", "length_mad", "keyword_sr", "fkgl_normal", "fkgl_high", "delta_fkgl",
              "focus_macro_f1", "rouge_geo"),
    conventions={
        "rouge_stemming": Convention(True, "unknown: the paper does not say and no scoring code is released; "
                                           "the suite's stemming kept"),
    },
    system_prompt=True,
    settings=(
        Setting("column_map", None, json_or_str, None, "CCSBench: `{canonical: column}` for other column names.",
                "data", after="fewshot_seed"),
        Setting("ccs_prompt_file", "DOMSUM_CCS_PROMPT_FILE", str, None,
                "CCSBench: JSON file replacing the built-in prompt texts.", "data", before="adapteval_prompt_variant",
                system="prompt"),
    ),
    report=ReportPieces(
        layouts=(
            Layout(NAME, "Table 4", f"{NAME}_table4",
                   "CCSBench Table 4 layout: compositional control (quality, explicit and implicit attributes)",
                   tuple(Column(h, k, "compositional") for h, k in _CCS), variants=("", "hard")),
            Layout(NAME, "Table 5", f"{NAME}_table5",
                   "CCSBench Table 5 layout: each single-attribute task vs the compositional task",
                   (Column("Readability", "delta_fkgl", "readability"), Column("Length PCC", "length_pcc", "length"),
                    Column("Length MAD", "length_mad", "length"), Column("Keywords SR", "keyword_sr", "keywords"),
                    Column("Focus F1", "focus_macro_f1", "focus")),
                   kinds=(("Single", None), ("Compositional", "compositional")), variants=("", "hard")),
            Layout(NAME, "Table 7", f"{NAME}_table7", "CCSBench Table 7 layout: I+C vs Full",
                   (*(Column(h, k, "compositional") for h, k in _CCS),
                    Column("#Tokens", PROMPT_TOKENS, "compositional", 0)),
                   variants=("", "fulltext"), variant_rows=(("", "I+C"), ("fulltext", "Full")),
                   note=(f" I+C: the task {NAME}_compositional (introduction and conclusion); Full: "
                         f"{NAME}_compositional_fulltext (the record's full_text). #Tokens: this run's mean prompt "
                         "tokens per document as its prompt fitting counted them on the context as sent (prompt_budget."
                         "prompt_tokens_mean in the results; ~: a characters-per-token bound, the run had no "
                         "tokenizer); n/a where the run recorded none (no tokenizer or window could be had, or results "
                         "written before the suite recorded it). The paper's #Tokens are GPT-4o's input tokens: another "
                         "tokenizer, so compare each table's Full / I+C ratio (the paper: I+C uses 23.7% of Full's "
                         "tokens), not the counts. The paper's documents are \"the first 200 samples of CCSBench\", the "
                         "split not named (not compared): these tasks read the test split, --limit 200 its first 200.")),
        ),
        amplitude_figure="Figure 4",
    ),
    # fine-tuning (``python -m finetune --preset ccsbench``): LoRA learning rate 1e-4, at most
    # 20 epochs (paper), read as early stopping on the validation loss with patience 3,
    # keeping the best checkpoint (ours). ``prefix``: Appendix A.2 gives 1e-4 and 20 epochs
    # "for all PEFT models" and sends soft prefix tuning (its SP baseline, Table 4 row C2,
    # per-attribute prefixes with the whole Flan-T5-Large trained) to MACSum's setup, which
    # it does not restate; it leaves the prefix length unstated. We apply the PEFT values to
    # peft's prefix tuning (one task prefix, base frozen, the control attributes in the
    # prompt), with 20 virtual tokens, the same early stopping as for LoRA (ours)
    finetune_preset={
        "lora": {
            "learning_rate": 1e-4,
            "epochs": 20.0,
            "best_by_validation": True,
            "early_stopping_patience": 3,
            "max_length": 4096,
        },
        "prefix": {
            "learning_rate": 1e-4,
            "epochs": 20.0,
            "best_by_validation": True,
            "early_stopping_patience": 3,
            "max_length": 4096,
            "num_virtual_tokens": 20,
        },
    },
)

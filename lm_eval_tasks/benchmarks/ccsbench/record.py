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
from lm_eval_tasks.benchmarks.record import Benchmark, Convention, Variant

#: the attributes a compositional summary controls at once
CONTROLS = ("length", "keywords", "readability", "focus")
#: words of the document kept in the prompt by default (``max_doc_words``), by shots: the
#: introduction + conclusion rarely reach 1,500 words; with three demonstrations less is kept
DOC_WORDS = {0: 1500, 3: 700}
#: the ``_fulltext`` tasks' default document budget, in words. Section 7 reports 6.78k input
#: tokens on average for the full papers (about 5,000 words at the usual ~1.3 tokens per word),
#: so 8,000 words keeps nearly every paper whole while bounding the cost of an outlier (an
#: appendix-heavy paper); the model's window still cuts the document further where needed
FULLTEXT_DOC_WORDS = 8000

RECORD = Benchmark(
    name="ccsbench",
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
)

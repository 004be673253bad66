"""Generate the AdaptEval leaf and group YAMLs.

``python lm_eval_tasks/adapteval/_generate_configs.py``. Generation budgets are the
paper's: 256 new tokens for arXiv and PubMed, 1,024 for GovReport. Stops end at the
next "Proceed to summarize" turn; none is "\\n\\n" (GovReport summaries have several
paragraphs).
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_tasks.common.configgen import group_yaml, leaf_yaml, write

HERE = Path(__file__).resolve().parent
DOMAINS = ("arxiv", "pubmed", "govreport")
MAX_GEN_TOKS = {"arxiv": 256, "pubmed": 256, "govreport": 1024}
UNTIL = ["Proceed to summarize the following text.", "\nTEXT:", "\n\n\n\n"]
METRICS = ["rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean",
           "bertscore_p", "bertscore_r", "bertscore_f1", "dvo"]
# variant suffix -> (task class, shots)
VARIANTS = {"": ("AdaptEvalTask", 0), "_2shot": ("AdaptEvalTask", 2),
            "_judged": ("AdaptEvalJudgedTask", 0), "_fm": ("AdaptEvalFMTask", 0)}
# FM grades scientific abstracts: only the arXiv and PubMed tasks have the variant.
VARIANT_DOMAINS = {"_fm": ("arxiv", "pubmed")}


def leaf(domain: str, suffix: str) -> str:
    cls, shots = VARIANTS[suffix]
    name = f"adapteval_{domain}{suffix}"
    return write(HERE, name, leaf_yaml(
        template="_adapteval_template_yaml", cls=cls, name=name,
        dataset_kwargs={"domain": domain, "shots": shots, "task": name},
        until=UNTIL, max_gen_toks=MAX_GEN_TOKS[domain]))


def main() -> None:
    for suffix in VARIANTS:
        members = [leaf(d, suffix) for d in VARIANT_DOMAINS.get(suffix, DOMAINS)]
        if suffix not in ("_judged", "_fm"):
            write(HERE, f"adapteval{suffix}", group_yaml(f"adapteval{suffix}", members, METRICS))


if __name__ == "__main__":
    main()

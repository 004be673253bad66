"""Generate the DomainSum leaf and group YAMLs from one table.

Run from anywhere: ``python lm_eval_tasks/domainsum/_generate_configs.py``.
The harness convention for large task families: the template
(``_domainsum_template_yaml``) holds everything shared, each leaf only its domain,
setting and generation budget.

``max_gen_toks`` per domain is sized to the reference summaries: about twice the
mean reference length reported in DomainSum's Table 5, in tokens of a Llama-style
tokenizer, rounded up (PubMed abstracts are long, SAMSum/Reddit summaries one line).
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_tasks.common.configgen import group_yaml, leaf_yaml, write

HERE = Path(__file__).resolve().parent

LEVELS = {
    "genre": ("cnndm", "pubmed", "reddit", "samsum", "wikihow"),
    "style": ("cnn", "fox", "nydaily", "nytimes", "wapo"),
    "topic": ("soccer", "crime", "family", "media", "law"),
}
MAX_GEN_TOKS = {
    "cnndm": 128, "pubmed": 384, "reddit": 64, "samsum": 64, "wikihow": 160,
    "cnn": 96, "fox": 96, "nydaily": 96, "nytimes": 96, "wapo": 96,
    "soccer": 128, "crime": 128, "family": 128, "media": 128, "law": 128,
}
# Stops end a run-on generation at the next prompt marker; none is "\n\n", which
# would cut multi-line summaries (CNN/DM highlights, WikiHow steps).
UNTIL = {
    0: ["\n\n\n", "SUMMARY:", "You are an expert at summarization"],
    2: ["\n\n\n", "Example 3:", "\nDocument:", "Now, summarize the following text"],
}
METRICS = ["rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean",
           "bertscore_p", "bertscore_r", "bertscore_f1"]

def leaf(domain: str, shots: int) -> str:
    name = f"domainsum_{domain}{'' if shots == 0 else f'_{shots}shot'}"
    return write(HERE, name, leaf_yaml(
        template="_domainsum_template_yaml", name=name,
        dataset_kwargs={"domain": domain, "shots": shots, "task": name},
        until=UNTIL[shots], max_gen_toks=MAX_GEN_TOKS[domain]))


def main() -> None:
    all_groups = []
    for shots in (0, 2):
        suffix = "" if shots == 0 else f"_{shots}shot"
        for level, domains in LEVELS.items():
            members = [leaf(d, shots) for d in domains]
            all_groups.append(write(HERE, f"domainsum_{level}{suffix}",
                                    group_yaml(f"domainsum_{level}{suffix}", members, METRICS)))
    write(HERE, "domainsum", group_yaml("domainsum", all_groups, METRICS))


if __name__ == "__main__":
    main()

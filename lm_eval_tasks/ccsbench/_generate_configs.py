"""Generate the CCSBench leaf and group YAMLs.

``python lm_eval_tasks/ccsbench/_generate_configs.py``. Variants: zero-shot (the
instruction prompt), ``_3shot`` (three seeded train demonstrations) and ``_hard``
(``Attribute: Value`` control lines). Targets are abstracts of at most ~250 words, so
300 new tokens; stops end at the next "Paper:" turn or a new instruction, never "\\n\\n"
alone.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_tasks.ccsbench.prompts import DEFAULT_UNTIL
from lm_eval_tasks.common.configgen import group_yaml, leaf_yaml, write

HERE = Path(__file__).resolve().parent
SUBSETS = ("length", "keywords", "readability", "focus", "compositional")
UNTIL = list(DEFAULT_UNTIL)  # a prompt file's "until" replaces these at run time
MAX_GEN_TOKS = 300
METRICS = ["rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean"]
VARIANTS = {"": 0, "_3shot": 3, "_hard": 0}


def leaf(subset: str, suffix: str) -> str:
    name = f"ccsbench_{subset}{suffix}"
    return write(HERE, name, leaf_yaml(
        template="_ccsbench_template_yaml", cls="CCSBenchTask", name=name,
        dataset_kwargs={"domain": subset, "shots": VARIANTS[suffix], "task": name},
        until=UNTIL, max_gen_toks=MAX_GEN_TOKS))


def main() -> None:
    for suffix in VARIANTS:
        members = [leaf(s, suffix) for s in SUBSETS]
        write(HERE, f"ccsbench{suffix}", group_yaml(f"ccsbench{suffix}", members, METRICS))


if __name__ == "__main__":
    main()

"""Generate the medqsum leaf and group YAMLs.

``python lm_eval_tasks/medqsum/_generate_configs.py``. Question summaries are one
short sentence: 64 new tokens, greedy; generation stops at the end of the line or at
the next ``Question:`` marker (the few-shot format), so it ends at the summary.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_tasks.common.configgen import group_yaml, leaf_yaml, write

HERE = Path(__file__).resolve().parent
SUBSETS = ("hcm",)
MAX_GEN_TOKS = 64
UNTIL = ["\n", "Question:"]
# variant suffix -> shots
VARIANTS = {"": 0, "_2shot": 2}


def metrics() -> list[str]:
    import sys

    sys.path.insert(0, str(HERE.parent.parent))
    from custom_metrics.battery import METRIC_KEYS

    return list(METRIC_KEYS)


def leaf(subset: str, suffix: str) -> str:
    name = f"medqsum_{subset}{suffix}"
    return write(HERE, name, leaf_yaml(
        template="_medqsum_template_yaml", cls="MedQSumTask", name=name,
        dataset_kwargs={"subset": subset, "shots": VARIANTS[suffix], "task": name},
        until=UNTIL, max_gen_toks=MAX_GEN_TOKS))


def main() -> None:
    for suffix in VARIANTS:
        members = [leaf(s, suffix) for s in SUBSETS]
        write(HERE, f"medqsum{suffix}", group_yaml(f"medqsum{suffix}", members, metrics()))


if __name__ == "__main__":
    main()

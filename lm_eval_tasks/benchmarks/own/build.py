"""What a user domain's task does: its records with their prompts, and the options its
metric families need; the hooks of :data:`lm_eval_tasks.benchmarks.own.BENCHMARK`.

Why apart from :mod:`~lm_eval_tasks.benchmarks.own.configs` (which reads task YAMLs
into catalogue rows and registers them): the catalogue holds this record's hooks, so
what they import must not import the catalogue. They take the task's row itself, which
holds the domain's source.
"""

from __future__ import annotations

from typing import Any

from lm_eval_tasks.benchmarks.own.record import RECORD, RecordError
from lm_eval_tasks.benchmarks.record import TaskSpec


def family_options(spec: TaskSpec, family: str, metadata: dict) -> dict[str, Any]:
    """A family that needs a domain vocabulary (DVO) reads the one of this domain's own train
    file (its name carries the file's fingerprint,
    :func:`lm_eval_tasks.data.user_files.domain_vocabulary_path`), not the
    ``<benchmark>/<subset>.tsv`` a suite domain's is: its ``vocabulary_file`` option."""
    from custom_metrics import registry

    record = registry.get(family)
    if "vocabulary" not in record.needs or "vocabulary_file" not in record.options:
        return {}
    from lm_eval_tasks.data.user_files import domain_vocabulary_path
    from lm_eval_tasks.settings import resolve

    return {"vocabulary_file": str(domain_vocabulary_path(spec.benchmark, spec.subset, resolve(metadata, "vocab_dir")))}


def build_docs(spec: TaskSpec, shots: int, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
    """Records of ``split`` with their prompts (DomainSum's, or the record's own)."""
    from lm_eval_tasks.benchmarks.domainsum import build as domainsum
    from lm_eval_tasks.benchmarks.prompting import truncate
    from lm_eval_tasks.data.loader import draw_demos, load_split
    from lm_eval_tasks.settings import resolve

    task, subset, source = spec.name, spec.subset, spec.source
    docs = load_split(RECORD.name, subset, split, task=task)
    doc_budget, demo_budget = domainsum.budgets(metadata, shots)
    if shots == 0:
        template = source.prompt or domainsum.ZERO_SHOT
        for d in docs:
            d["prompt"] = template.replace("{document}", truncate(d["document"], **doc_budget))
        return docs, {"data_source": source.where(split)}
    if "train" not in source.splits:
        raise RecordError(f"task {task!r}: two-shot prompts draw demonstrations from a 'train' split; add "
                          f"one to dataset_kwargs.data_files")
    from lm_eval_tasks.benchmarks import drop_empty

    pool, empty = drop_empty(load_split(RECORD.name, subset, "train", task=task))  # as the test split's
    seed = resolve(metadata, "fewshot_seed", domainsum.DEFAULT_SEED)
    template = source.fewshot_prompt or domainsum.TWO_SHOT
    pool_ids = {p["id"] for p in pool}
    for d in docs:
        candidates = pool if d["id"] not in pool_ids else [p for p in pool if p["id"] != d["id"]]
        demos = draw_demos(candidates, d["id"], seed)
        values = {"example1_document": truncate(demos[0]["document"], **demo_budget),
                  "example1_summary": demos[0]["summary"],
                  "example2_document": truncate(demos[1]["document"], **demo_budget),
                  "example2_summary": demos[1]["summary"],
                  "document": truncate(d["document"], **doc_budget)}
        text = template
        for key, value in values.items():  # plain replacement: braces in the user's text stay as written
            text = text.replace("{" + key + "}", value)
        d["prompt"] = text
        d["demo_ids"] = [x["id"] for x in demos]
    report = {"fewshot_seed_used": seed, "demo_pool": "train", "data_source": source.where(split)}
    return docs, report | ({"demo_pool_skipped_empty": {"count": len(empty), "ids": empty}} if empty else {})

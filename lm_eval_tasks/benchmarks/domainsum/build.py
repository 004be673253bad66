"""DomainSum glue: dataset loading with the paper's prompts, for the harness.

Paper: Yuan & Zhang, "DomainSum: A Hierarchical Benchmark for Fine-Grained Domain
Shift in Abstractive Text Summarization" (Findings of NAACL 2025), Appendix B.
The prompts below are the paper's (as in its release, ``run_0shot.py`` and
``run_2shot.py``; the release's triple-quoted two-shot string carries source-code
indentation, which we drop).

Each test document's prompt is built here, with the document truncated inside the
prompt, so the YAML's ``doc_to_text`` is just ``{{prompt}}`` and fine-tuning can
reuse :func:`zero_shot_prompt` verbatim.
"""

from __future__ import annotations

import logging
from typing import Any

from lm_eval_tasks.benchmarks.domainsum.record import RECORD
from lm_eval_tasks.data.loader import draw_demos, load_split, split_exists
from lm_eval_tasks.benchmarks.prompting import truncate
from lm_eval_tasks.settings import resolve

log = logging.getLogger(__name__)

ZERO_SHOT = (
    "You are an expert at summarization. Summarize the following text: "
    "\n\n{document}\n\nSUMMARY:"
)
TWO_SHOT = (
    "You are an expert at summarization. Here are two examples of how to summarize "
    "a text:\n\n"
    "Example 1:\nDocument: {example1_document}\nSummary: {example1_summary}\n\n"
    "Example 2:\nDocument: {example2_document}\nSummary: {example2_summary}\n\n"
    "Now, summarize the following text:\n\nDocument: {document}\n\nSummary:"
)

#: demonstration pool split name in the mirror (the release's *_train_sampled_20.json)
POOL_SPLIT = "train_pool20"
DEFAULT_SEED = 1234
# Word budgets: a 4,096-token window holds ~3,000 English words; leave room for the
# generation and, in the two-shot setting, for two demonstrations.
DEFAULT_MAX_DOC_WORDS = {0: 1500, 2: 1000}
DEFAULT_MAX_DEMO_WORDS = 400


def zero_shot_prompt(document: str, **budget: Any) -> str:
    """The paper's zero-shot prompt with the document truncated to the budget."""
    return ZERO_SHOT.format(document=truncate(document, **budget))


def two_shot_prompt(document: str, demos: list[dict], budget: dict, demo_budget: dict) -> str:
    """The paper's two-shot prompt; demonstrations' documents truncated too."""
    if len(demos) != 2:
        raise ValueError(f"two-shot prompt needs 2 demonstrations, got {len(demos)}")
    return TWO_SHOT.format(
        example1_document=truncate(demos[0]["document"], **demo_budget),
        example1_summary=demos[0]["summary"],
        example2_document=truncate(demos[1]["document"], **demo_budget),
        example2_summary=demos[1]["summary"],
        document=truncate(document, **budget),
    )


def budgets(metadata: dict, shots: int) -> tuple[dict, dict]:
    """(document budget, demonstration budget) from metadata, in words or tokens."""
    tok = resolve(metadata, "prompt_tokenizer")
    doc = {
        "max_words": resolve(metadata, "max_doc_words", DEFAULT_MAX_DOC_WORDS.get(shots, 1000)),
        "max_tokens": resolve(metadata, "max_doc_tokens"),
        "tokenizer_name": tok,
    }
    demo = {
        "max_words": resolve(metadata, "max_demo_words", DEFAULT_MAX_DEMO_WORDS),
        "max_tokens": resolve(metadata, "max_demo_tokens"),
        "tokenizer_name": tok,
    }
    return doc, demo


def demo_pool(domain: str, data_dir: Any, task: str, hub_path: str | None = None) -> tuple[list[dict], str]:
    """The domain's demonstration pool: ``train_pool20`` if the mirror has it, else train."""
    if data_dir is not None and split_exists(RECORD.name, domain, POOL_SPLIT, data_dir):
        return load_split(RECORD.name, domain, POOL_SPLIT, data_dir, task), POOL_SPLIT
    return load_split(RECORD.name, domain, "train", data_dir, task, hub_path=hub_path,
                      hub=RECORD.hub_sources.get(domain)), "train"


def build_docs(domain: str, shots: int, task: str, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
    """Records of ``split`` with their ``prompt`` (and demonstration ids); plus load facts."""
    data_dir = resolve(metadata, "data_dir")
    hub_path = resolve(metadata, "hub_path")  # another hub copy of the same dataset
    docs = load_split(RECORD.name, domain, split, data_dir, task, hub_path=hub_path, hub=RECORD.hub_sources.get(domain))
    doc_budget, demo_budget = budgets(metadata, shots)
    if shots == 0:
        for d in docs:
            d["prompt"] = zero_shot_prompt(d["document"], **doc_budget)
        return docs, {}
    pool, pool_name = demo_pool(domain, data_dir, task, hub_path)
    seed = resolve(metadata, "fewshot_seed", DEFAULT_SEED)
    pool_ids = {p["id"] for p in pool}
    for d in docs:
        candidates = pool if d["id"] not in pool_ids else [p for p in pool if p["id"] != d["id"]]
        demos = draw_demos(candidates, d["id"], seed)
        d["prompt"] = two_shot_prompt(d["document"], demos, doc_budget, demo_budget)
        d["demo_ids"] = [x["id"] for x in demos]
    log.info("%s: two-shot demonstrations from %s (seed %d)", task, pool_name, seed)
    return docs, {"fewshot_seed_used": seed, "demo_pool": pool_name}

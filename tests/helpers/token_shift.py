"""Helpers shared by the unit and integration tests of token_shift (tests/unit, tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


INSTRUCTION = "You are an expert at summarization."
TURN = "Proceed to summarize the following text. TEXT: {document}\nSUMMARY:"
DOCS = [
    ("Researchers measured the effect of the treatment on patients in a small trial.",
     " The treatment improved outcomes for patients in the trial."),
    ("The committee reviewed the report and summarized its findings for the public.",
     " The committee summarized the report for the public."),
    ("Step one: gather the tools. Step two: clean the surface before you paint it.",
     ""),  # an empty generation
]
DEMO = ("The agency reviewed the report.", "A short summary of the report.")


def _sample(doc_id: int, prompt: str, document: str, generated: str, filt: str = "none") -> dict:
    """One line as lm-eval 0.4.x's EvaluationTracker writes it for generate_until."""
    return {
        "doc_id": doc_id,
        "doc": {"document": document, "summary": "reference summary", "id": f"t/{doc_id}"},
        "target": "reference summary",
        "arguments": {"gen_args_0": {"arg_0": prompt,
                                     "arg_1": {"until": ["\n\n"], "max_gen_toks": 256, "do_sample": False}}},
        "resps": [[generated]],
        "filtered_resps": [generated.strip()],
        "filter": filt,
        "metrics": ["rouge1", "dvo"],
        "doc_hash": "0" * 64, "prompt_hash": "1" * 64, "target_hash": "2" * 64,
        "rouge1": 0.5, "dvo": 10.0,
    }


def zero_shot(document: str) -> str:
    return f"{INSTRUCTION} " + TURN.format(document=document)


def two_shot(document: str) -> str:
    demo = TURN.format(document=DEMO[0]) + " " + DEMO[1]
    return f"{INSTRUCTION} " + "\n".join([demo, demo, TURN.format(document=document)])


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("token_shift")


@pytest.fixture(scope="module")
def samples_2shot(work) -> Path:
    path = work / "samples_adapteval_pubmed_2shot_2025-01-02T03-04-05.678901.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, (doc, gen) in enumerate(DOCS):
            fh.write(json.dumps(_sample(i, two_shot(doc), doc, gen)) + "\n")
        # a second filter's line for doc 0: must be ignored (first line per doc_id)
        fh.write(json.dumps(_sample(0, two_shot(DOCS[0][0]), DOCS[0][0], " other", "strip")) + "\n")
    return path

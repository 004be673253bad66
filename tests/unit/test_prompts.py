"""DomainSum prompts equal the paper's text; truncation keeps instruction and cue."""

import pytest

from lm_eval_tasks.benchmarks.prompting import truncate_words
from lm_eval_tasks.benchmarks.domainsum import build as ds


PAPER_ZERO_SHOT = "You are an expert at summarization. Summarize the following text: \n\nDOC\n\nSUMMARY:"
PAPER_TWO_SHOT = (
    "You are an expert at summarization. Here are two examples of how to summarize a text:\n\n"
    "Example 1:\nDocument: D1\nSummary: S1\n\n"
    "Example 2:\nDocument: D2\nSummary: S2\n\n"
    "Now, summarize the following text:\n\nDocument: DOC\n\nSummary:"
)


def test_zero_shot_prompt_is_papers():
    assert ds.zero_shot_prompt("DOC", max_words=100) == PAPER_ZERO_SHOT


def test_two_shot_prompt_is_papers():
    demos = [{"document": "D1", "summary": "S1"}, {"document": "D2", "summary": "S2"}]
    budget = {"max_words": 100}
    assert ds.two_shot_prompt("DOC", demos, budget, budget) == PAPER_TWO_SHOT


def test_truncation_keeps_instruction_and_cue():
    long_doc = " ".join(f"w{i}" for i in range(5000))
    prompt = ds.zero_shot_prompt(long_doc, max_words=300)
    assert prompt.startswith("You are an expert at summarization. Summarize the following text:")
    assert prompt.endswith("\n\nSUMMARY:")
    assert "w299" in prompt and "w300" not in prompt
    demos = [{"document": long_doc, "summary": "S1"}, {"document": long_doc, "summary": "S2"}]
    p2 = ds.two_shot_prompt(long_doc, demos, {"max_words": 200}, {"max_words": 50})
    assert p2.endswith("Document: " + " ".join(f"w{i}" for i in range(200)) + "\n\nSummary:")
    examples = p2.split("Now, summarize")[0]
    assert examples.count("w49\nSummary:") == 2 and "w50" not in examples


def test_truncate_words_keeps_whitespace():
    assert truncate_words("a  b\n\nc d e", 3) == "a  b\n\nc"
    assert truncate_words("a b", 5) == "a b"
    assert truncate_words("a b", None) == "a b"


def test_demos_are_seeded_per_document():
    pool = [{"id": f"p{i}", "document": f"d{i}", "summary": f"s{i}"} for i in range(20)]
    a = ds.draw_demos(pool, "doc-7", seed=1)
    assert a == ds.draw_demos(pool, "doc-7", seed=1)
    assert len({x["id"] for x in a}) == 2
    draws = {tuple(x["id"] for x in ds.draw_demos(pool, f"doc-{i}", seed=1)) for i in range(10)}
    assert len(draws) > 1


def test_build_docs_two_shot_uses_pool(fixture_data_dir):
    docs, facts = ds.build_docs("samsum", 2, "domainsum_samsum_2shot", {"data_dir": str(fixture_data_dir)})
    assert facts == {"fewshot_seed_used": 1234, "demo_pool": "train_pool20"}
    assert all(len(d["demo_ids"]) == 2 for d in docs)
    assert all(i.startswith("domainsum/samsum/train_pool20/") for d in docs for i in d["demo_ids"])
    assert all(d["prompt"].endswith("\n\nSummary:") for d in docs)


def test_unknown_domain_is_clear_error(fixture_data_dir):
    from lm_eval_tasks.catalog import load_task

    with pytest.raises(KeyError, match="unknown suite task 'domainsum_mars'"):
        load_task("domainsum_mars", metadata={"data_dir": str(fixture_data_dir)})

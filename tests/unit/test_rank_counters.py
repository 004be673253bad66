"""Counters of a data-parallel run: every rank's family record merged into the whole run's.

The integration test (tests/integration/test_data_parallel_counters.py) runs two gloo
ranks; here the merge rules themselves are checked on the records the families and the
judge client really produce, each rule against a value recomputed by hand.
"""

from __future__ import annotations

from helpers.thread_ranks import score_on_ranks

from custom_metrics import registry
from custom_metrics.judge import JudgeStats
from lm_eval_tasks.harness_parts.ranks import merge_counts


def _stats(items: int, scored: int, timeouts: int, tries: int, calls: int, tokens: int) -> dict:
    s = JudgeStats(items=items, scored=scored, http_calls=calls, prompt_tokens=tokens, completion_tokens=1)
    s.count_failure("timeout", tries, timeouts)
    s.estimates.append({"requests": calls})
    return s.as_dict()


def test_judge_usage_sums_counts_keeps_most_tries_and_every_batch():
    a, b = _stats(3, 2, 1, 3, 5, 100), _stats(2, 1, 1, 2, 4, 70)
    merged = merge_counts([a, b])
    for key in ("items", "scored", "http_calls", "prompt_tokens", "total_tokens", "completion_tokens"):
        assert merged[key] == a[key] + b[key], key
    assert merged["failed"] == {"parse": 0, "timeout": 2, "empty_skipped": 0}
    assert merged["failed_tries"] == {"timeout": 3}  # the most attempts a rank needed, not 5
    assert merged["estimates"] == [{"requests": 5}, {"requests": 4}]  # one entry per batch, rank order
    assert merged["cache_unusable"] is None


def test_the_summary_line_is_said_from_the_summed_counters():
    fields = set(JudgeStats.__dataclass_fields__)
    a = {k: v for k, v in vars(JudgeStats(items=2, scored=1, failed={"timeout": 1},
                                          failed_tries={"timeout": 3})).items() if k in fields}
    b = {k: v for k, v in vars(JudgeStats(items=3, scored=3)).items() if k in fields}
    line = JudgeStats(**merge_counts([a, b])).summary_line()
    assert line.startswith("1 of 5 judge items failed: 1 timeout after 3 tries"), line


def test_rouge_share_is_recomputed_from_the_summed_counts():
    records = []
    for refs in (["新闻摘要", "a b c", "d e f"], ["x y", "文本"]):  # 1 of 3, then 1 of 2
        ctx = registry.Context()
        n = len(refs)
        registry.get("rouge").score(registry.Batch(["s"] * n, refs, [""] * n, [{}] * n), ctx)
        records.append(ctx.record)
    merged = merge_counts(records)
    assert merged["rouge_references_without_tokens"] == {"count": 2, "references": 5, "share": 2 / 5}
    assert merged["rouge_stemming"] == records[0]["rouge_stemming"]  # a flag the ranks share is kept


def test_counts_by_kind_vectors_texts_and_absent_ranks():
    merged = merge_counts([
        {"fm_failures_by_kind": {"candidate_extraction": 1}, "mauve_texts": [3, 2], "fm_variant_used": "zero",
         "fm_details_written": "/x/fm.jsonl", "bertscore_truncated_inputs": 2},
        {"fm_failures_by_kind": {"vanilla_rating": 2}, "mauve_texts": [1, 1], "fm_variant_used": "zero",
         "fm_details_written": "/x/fm.2.jsonl"},
    ])
    assert merged == {"fm_failures_by_kind": {"candidate_extraction": 1, "vanilla_rating": 2},
                      "mauve_texts": [4, 3], "fm_variant_used": "zero",
                      "fm_details_written": {"per_rank": ["/x/fm.jsonl", "/x/fm.2.jsonl"]},
                      "bertscore_truncated_inputs": 2}
    assert merge_counts([{"flag": True}, {"flag": True}]) == {"flag": True}  # a flag is not a number
    assert merge_counts([{"flag": True}, {"flag": False}]) == {"flag": {"per_rank": [True, False]}}


def test_a_figure_gathered_for_the_whole_run_is_kept_once_not_summed():
    """CIDEr-D's idf documents are the whole run's on every rank (gathered while scoring):
    summing them would count each document once per rank. The battery's details hold the
    same figure one level down."""
    shards = [(["a b", "c d"], ["a b", "e f"]), (["x y"], ["x z"])]
    details = [d for _, d in score_on_ranks("cider", shards)]
    assert [d["cider_idf_documents"] for d in details] == [3, 3]
    assert merge_counts(details)["cider_idf_documents"] == 3
    assert merge_counts([{"details": d} for d in details])["details"]["cider_idf_documents"] == 3
    assert merge_counts([{"bertscore_truncated_inputs": 2}, {"bertscore_truncated_inputs": 1}]) == \
        {"bertscore_truncated_inputs": 3}  # a rank's own count is still summed

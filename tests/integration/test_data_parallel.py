"""Data-parallel evaluation: two CPU ranks give the results of one process.

``accelerate launch -m lm_eval ...`` shards each task's documents over the ranks
(rank ``r`` evaluates documents ``r, r + W, r + 2W, ...``); every rank's
:class:`~lm_eval_tasks.harness.SuiteTask` scores its own shard on its first
``process_results`` call, and lm-eval's evaluator gathers the per-document scores and
logged samples to rank 0 (``lm.gather_object``), which aggregates them and writes the
results. lm-eval's HF backend shards only across GPUs, so here the path runs on two CPU
processes joined by ``torch.distributed`` (gloo, 127.0.0.1) through
:class:`helpers.dp_lm.DataParallelEchoLM`, a registered backend that provides exactly
what the evaluator asks of a backend when ``world_size > 1`` (``rank``, ``world_size``,
``device``, ``all_gather``, ``gather_object``, ``barrier``) and generates a deterministic
text of each prompt.

The same tasks on the same documents are then run in one process, and the two results
must agree: every logged sample (by ``doc_id``: its document, prompt, generation and
scores), the reported means, their standard errors and every count (``n-samples``,
``sample_len``, the ``generation`` and ``prompt_budget`` counts the suite writes into
``configs.<task>.metadata``). Three documents a task: rank 0 gets two, rank 1 one, and
rank 1's only samsum document gets an empty generation, so a count taken from rank 0's
shard alone cannot pass.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.dp_lm import run_ranks

from conftest import same_values, subprocess_env

pytestmark = pytest.mark.slow

TASKS = ("domainsum_cnndm", "domainsum_samsum")
N_DOCS = 3  # each task's test split in the fixture mirror: odd, so the shards differ in size
WORLD = 2
MAX_GEN_TOKS = 24
#: the opening of samsum test document 1 (rank 1's only samsum document): its generation is empty
BLANK_IF = "Mia: Mum, did you see my blue folder"
#: scores logged per document; rouge_geo is the corpus key's per-document triple
PER_DOC_KEYS = ("rouge1", "rouge2", "rougeL", "rouge_mean", "rouge_geo", "bertscore_p", "bertscore_r",
                "bertscore_f1")
MEAN_KEYS = ("rouge1", "rouge2", "rougeL", "rouge_mean", "bertscore_p", "bertscore_r", "bertscore_f1")
#: per-run facts that are not about the documents (timestamps, paths of this run)
RUN_ONLY = {"date", "pretty_env_info", "git_hash", "upper_git_hash", "config", "samples"}
TIMEOUT = 240


def _run(out: Path, world: int, data_dir: Path, minilm: str) -> dict:
    meta = {"data_dir": str(data_dir), "bertscore_model": minilm, "bertscore_layers": 6}
    model_args = {"tokenizer": minilm, "max_length": 2048, "blank_if": BLANK_IF}
    return run_ranks(out, world, TASKS, meta, model_args, subprocess_env(),
                     gen_kwargs=f"max_gen_toks={MAX_GEN_TOKS}", timeout=TIMEOUT)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, fixture_data_dir, minilm_path) -> dict:
    """The one-process run and the two-rank run of the same tasks and documents."""
    base = tmp_path_factory.mktemp("dp")
    single = _run(base / "single", 1, fixture_data_dir, minilm_path)
    dp = _run(base / "dp", WORLD, fixture_data_dir, minilm_path)
    return {"single": single, "dp": dp}


def _shard(rank: int) -> list[int]:
    """The documents lm-eval gives ``rank`` (``islice(docs, rank, None, world_size)``)."""
    return list(range(rank, N_DOCS, WORLD))


def _by_doc(samples: list[dict]) -> dict[int, dict]:
    return {s["doc_id"]: s for s in samples}


def test_each_rank_generates_for_its_own_shard_only(runs):
    dp_ranks, single = runs["dp"]["ranks"], runs["single"]["ranks"]
    assert [(r["rank"], r["world_size"]) for r in dp_ranks] == [(0, 2), (1, 2)]
    assert (single[0]["rank"], single[0]["world_size"]) == (0, 1)
    for task in TASKS:
        asked = [[d for t, d in r["asked"] if t == task] for r in dp_ranks]
        for rank in range(WORLD):
            # the evaluator pads the shorter shard with copies of its last request, so that
            # every rank makes the same number of calls: distinct documents are the shard
            assert sorted(set(asked[rank])) == _shard(rank), (task, rank, asked[rank])
        assert sorted(d for t, d in single[0]["asked"] if t == task) == list(range(N_DOCS))


def test_merged_samples_are_every_document_once_in_rank_order(runs):
    dp, single = runs["dp"]["results"], runs["single"]["results"]
    for task in TASKS:
        merged = [s["doc_id"] for s in dp["samples"][task]]
        # lm-eval 0.4.13 concatenates the ranks' samples (rank 0's shard, then rank 1's); each
        # rank's part in document order, and the doc_ids are the global ones, exactly 0..n-1
        assert merged == [d for r in range(WORLD) for d in _shard(r)], (task, merged)
        assert sorted(merged) == list(range(N_DOCS)), (task, merged)
        assert [s["doc_id"] for s in single["samples"][task]] == list(range(N_DOCS))
        ones, many = _by_doc(single["samples"][task]), _by_doc(dp["samples"][task])
        for doc_id in range(N_DOCS):
            a, b = ones[doc_id], many[doc_id]
            # the same document under the same doc_id: a shard mislabelled by its local index
            # would pair rank 1's document with another document's scores
            for field in ("doc", "target", "doc_hash", "prompt_hash", "target_hash", "arguments",
                          "filtered_resps", "filter", "metrics"):
                assert a[field] == b[field], (task, doc_id, field)
            assert a["resps"][0][0] == b["resps"][0][0], (task, doc_id)


def test_per_document_scores_equal_the_single_process_run(runs):
    dp, single = runs["dp"]["results"], runs["single"]["results"]
    blank_seen = False
    for task in TASKS:
        ones, many = _by_doc(single["samples"][task]), _by_doc(dp["samples"][task])
        for doc_id in range(N_DOCS):
            a, b = ones[doc_id], many[doc_id]
            for key in PER_DOC_KEYS:
                assert key in a and key in b, (task, doc_id, key)
                assert same_values(a[key], b[key]), (task, doc_id, key, a[key], b[key])
            blank_seen |= a["filtered_resps"] == [""]
        # the documents differ in score (a fixed score for all would hide a shuffled merge)
        assert len({json.dumps(s["rouge1"]) + json.dumps(s["bertscore_f1"]) for s in ones.values()}) == N_DOCS
    assert blank_seen, "the blank generation was not produced; the counts below would test nothing"


def test_reported_means_and_stderrs_equal_the_single_process_run(runs):
    dp, single = runs["dp"]["results"], runs["single"]["results"]
    for task in TASKS:
        a, b = single["results"][task], dp["results"][task]
        assert set(a) == set(b), (task, set(a) ^ set(b))
        assert a["sample_len"] == b["sample_len"] == N_DOCS, task
        for key in MEAN_KEYS:
            per_doc = [s[key] for s in sorted(dp["samples"][task], key=lambda s: s["doc_id"])]
            # the merged list is in rank order, so its float sums may differ in the last bit
            assert b[f"{key},none"] == pytest.approx(a[f"{key},none"], rel=1e-12, abs=1e-15), (task, key)
            assert b[f"{key},none"] == pytest.approx(math.fsum(per_doc) / N_DOCS, rel=1e-12, abs=1e-15)
            sa, sb = a[f"{key}_stderr,none"], b[f"{key}_stderr,none"]
            assert isinstance(sb, float) and math.isfinite(sb), (task, key, sb)
            assert sb == pytest.approx(sa, rel=1e-9, abs=1e-15), (task, key, sa, sb)
        # the corpus key aggregates the gathered triples of all ranks
        assert b["rouge_geo,none"] == pytest.approx(a["rouge_geo,none"], rel=1e-12, abs=1e-15), task
        assert a["rouge_geo_stderr,none"] == b["rouge_geo_stderr,none"] == "N/A"
    assert dp["n-samples"] == single["n-samples"] == {t: {"original": N_DOCS, "effective": N_DOCS} for t in TASKS}
    assert dp["n-shot"] == single["n-shot"] and dp["higher_is_better"] == single["higher_is_better"]


def test_recorded_counts_cover_every_rank(runs):
    """``configs.<task>.metadata`` is written by rank 0: its counts must be the whole run's."""
    dp, single = runs["dp"]["results"], runs["single"]["results"]
    for task in TASKS:
        a, b = single["configs"][task]["metadata"], dp["configs"][task]["metadata"]
        gen = a["generation"]
        assert gen["generations"] == N_DOCS and gen["max_gen_toks"] == MAX_GEN_TOKS, (task, gen)
        assert a["prompt_budget"]["documents"] == N_DOCS, (task, a["prompt_budget"])
        # the reference cache's hits and stores are summed over ranks, and the single run filled the
        # cache the two ranks then read; the two-rank run says its counters are summed over 2 ranks
        local = {"bertscore_reference_cache", "counted_over_ranks"}
        assert b["counted_over_ranks"]["ranks"] == WORLD and "counted_over_ranks" not in a, task
        differing = {k: (a.get(k), b.get(k)) for k in (set(a) | set(b)) - local if not same_values(a.get(k), b.get(k))}
        assert not differing, f"{task}: the 2-rank run records other metadata than the 1-rank run: {differing}"
    assert single["configs"]["domainsum_samsum"]["metadata"]["generation"]["empty_ids"] == ["domainsum/samsum/test/1"]
    # everything else the results hold (results and configs are compared above, with the
    # results' float sums allowed their last bit: the merged values come in rank order)
    rest = {k for k in set(single) | set(dp) if k not in RUN_ONLY | {"results", "configs"}}
    assert {k: single.get(k) for k in rest} == {k: dp.get(k) for k in rest}
    for task in TASKS:
        a, b = dict(single["configs"][task]), dict(dp["configs"][task])
        a.pop("metadata"), b.pop("metadata")
        assert a == b, task

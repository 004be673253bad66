"""Data parallelism: every family counter and usage figure the results record is the whole run's.

Two gloo ranks (:func:`helpers.dp_lm.run_ranks`, the backend that shards documents over
ranks as lm-eval's HF backend does over GPUs) run two real suite tasks, each judged
against the stub OpenAI-compatible server (:mod:`helpers.judge_server`):
``adapteval_arxiv_judged`` (the AdaptEval judge: ``judge_usage``, ``judge_parse_failures``)
and ``adapteval_pubmed_fm`` (FM: ``fm_usage``, ``fm_failures_by_kind``,
``fm_vanilla_failures``), besides ROUGE, BERTScore and DVO. Rank ``r`` evaluates
documents ``r, r + 2, ...``; each rank has something only it counts: rank 1's arXiv
document gets replies without a rating (parse failures) and its PubMed reference
unparsable facets (an FM failure), rank 0's last arXiv document an empty generation
(an item not sent). Every counter in ``configs.<task>.metadata`` is then recomputed from
both ranks' logged samples and from the stub server's log of requests.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.dp_lm import run_ranks
from helpers.judge_server import StubJudgeServer, Text

from conftest import ROOT, subprocess_env
from custom_metrics.families.rouge import rouge_tokens

pytestmark = pytest.mark.slow

JUDGED, FM = "adapteval_arxiv_judged", "adapteval_pubmed_fm"
WORLD, N_DOCS = 2, 3
#: arXiv test document 2 opens so (rank 0's second document): its generation is empty
BLANK_IF = "Consider the online bipartite matching problem"
#: arXiv test document 1 (rank 1's only one): every judge reply about it holds no rating
NO_RATING_FOR = "We study the ground state of the antiferromagnetic Heisenberg"
#: PubMed test reference 1 (rank 1's): its facet extraction is unparsable
BAD_FACETS_FOR = "Input: In a 12-month randomized trial in primary care"
FACETS = {"background": "bg", "method": "m", "result": "r", "conclusion": "c"}
FM_MARKERS = ("background/method/result/conclusion of this work", "alignment (1-3)", "alignment (1-4)")
JUDGE_KEYS = ("domain_adaptation", "coherence", "fluency")


@pytest.fixture(scope="module")
def run(tmp_path_factory, fixture_data_dir, minilm_path) -> dict:
    import subprocess
    import sys

    base = tmp_path_factory.mktemp("dp_counters")
    vocab = base / "vocab"
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "build-vocab", "--benchmark", "adapteval",
                           "--subsets", "arxiv,pubmed", "--data-dir", str(fixture_data_dir), "--vocab-dir", str(vocab),
                           "--no-progress"], cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    with StubJudgeServer(time_limit_s=400) as server:
        server.on(BAD_FACETS_FOR, Text("Sorry, I cannot extract that."))
        server.on(FM_MARKERS[0], Text(json.dumps(FACETS)))
        server.on(FM_MARKERS[1], Text("3"))
        server.on(FM_MARKERS[2], Text("2"))
        server.on(NO_RATING_FOR, Text("I would rather not rate this."))
        server.on("Fluency", Text("2"))  # Fluency is rated 1-3
        server.set_default(Text("4"))
        meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6,
                "vocab_dir": str(vocab), "judge_model": "stub-judge", "judge_base_url": server.url,
                # no judge cache: every request is paid, so the stub's log is the whole count (two ranks
                # creating one fresh SQLite cache at the same moment may find it locked)
                "judge_cache": "off", "fm_details": str(base / "fm.jsonl"),
                "generations_dir": str(base / "generations")}
        model_args = {"tokenizer": minilm_path, "max_length": 2048, "blank_if": BLANK_IF}
        out = run_ranks(base / "dp", WORLD, (JUDGED, FM), meta, model_args,
                        subprocess_env(OPENAI_API_KEY="test-key"), gen_kwargs="max_gen_toks=24", timeout=400)
        out["bodies"] = list(server.bodies)
    return out


def _text(body: dict) -> str:
    return json.dumps(body.get("messages", []), ensure_ascii=False)


def _bodies(run: dict, fm: bool) -> list[dict]:
    """The stub's log of one task's requests (FM's prompts carry FM's markers)."""
    return [b for b in run["bodies"] if any(m in _text(b) for m in FM_MARKERS) == fm]


def _prompt_tokens(bodies: list[dict]) -> int:
    """What the stub reports as prompt tokens: whitespace words of every message."""
    return sum(len(str(m.get("content", "")).split()) for b in bodies for m in b["messages"])


def _samples(run: dict, task: str) -> list[dict]:
    samples = run["results"]["samples"][task]
    assert sorted(s["doc_id"] for s in samples) == list(range(N_DOCS)), task
    return samples


def _value(sample: dict, key: str) -> float | None:
    v = sample.get(key)
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def _meta(run: dict, task: str) -> dict:
    meta = run["results"]["configs"][task]["metadata"]
    assert meta["counted_over_ranks"]["ranks"] == WORLD, task
    return meta


def test_the_ranks_each_had_their_own_shard(run):
    for task in (JUDGED, FM):
        asked = [sorted({d for t, d in r["asked"] if t == task}) for r in run["ranks"]]
        assert asked == [[0, 2], [1]], (task, asked)
    by_doc = {s["doc_id"]: s for s in _samples(run, JUDGED)}
    assert by_doc[2]["filtered_resps"] == [""] and by_doc[0]["filtered_resps"] != [""]


def test_judge_usage_is_every_rank_s(run):
    meta, samples, bodies = _meta(run, JUDGED), _samples(run, JUDGED), _bodies(run, fm=False)
    usage = meta["judge_usage"]
    # every request the stub answered for this task, from both ranks (no cache: all paid)
    assert usage["http_calls"] == usage["answers"] == len(bodies) > 0
    assert usage["prompt_tokens"] == _prompt_tokens(bodies)
    assert usage["cache_hits"] == 0
    # rank 1's document: every reply about it lacks a rating; its unrated items, each asked again
    unrated = sum(_value(s, k) is None for s in samples if s["doc_id"] == 1 for k in JUDGE_KEYS)
    parse = int(sum(s["judge_parse_failures"] for s in samples))
    assert usage["parse_failures"] == usage["failed"]["parse"] == parse == unrated > 0
    assert usage["parse_retries"] >= parse and any(NO_RATING_FOR in _text(b) for b in bodies)
    assert run["results"]["results"][JUDGED]["judge_parse_failures,none"] == parse
    # rank 0's empty generation: its ratings are never asked
    scored = sum(_value(s, k) is not None for s in samples for k in JUDGE_KEYS)
    empty = sum(s["filtered_resps"] == [""] for s in samples)
    assert usage["scored"] == scored and usage["empty_skipped"] == empty * len(JUDGE_KEYS) > 0
    assert usage["items"] == usage["scored"] + usage["parse_failures"] + usage["empty_skipped"] == N_DOCS * 3
    assert len(usage["estimates"]) == WORLD  # one estimate per rank's batch, both kept
    assert meta["judge_summary"] == (f"{parse} of {N_DOCS * 3} judge items failed: {parse} without a valid score "
                                     f"(asked twice); {empty * 3} empty summaries skipped (not sent)")


def test_fm_counters_are_every_rank_s(run):
    meta, samples, bodies = _meta(run, FM), _samples(run, FM), _bodies(run, fm=True)
    usage = meta["fm_usage"]
    assert usage["http_calls"] == usage["answers"] == len(bodies) > 0
    assert usage["prompt_tokens"] == _prompt_tokens(bodies)
    failures = sum(s["fm_failures"] for s in samples)
    assert failures == 1 and run["results"]["results"][FM]["fm_failures,none"] == failures
    assert sum(meta["fm_failures_by_kind"].values()) == failures
    assert meta["fm_failures_by_kind"]["reference_extraction"] == failures
    assert meta["fm_vanilla_failures"] == sum(_value(s, "fm_vanilla") is None for s in samples)
    # each rank appended to its own details file: both are named, and hold every document once
    written = meta["fm_details_written"]["per_rank"]
    rows = [json.loads(line) for path in written for line in Path(path).read_text().splitlines()]
    assert len(written) == WORLD and sorted(r["id"] for r in rows) == sorted(s["doc"]["id"] for s in samples)


def test_scorer_counters_and_saved_generations_cover_both_ranks(run, minilm_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(minilm_path)
    for task in (JUDGED, FM):
        meta, samples = _meta(run, task), _samples(run, task)
        refs = [s["target"] for s in samples]
        blank = sum(not rouge_tokens(r, meta["rouge_stemming"]) for r in refs if r.strip())
        assert meta["rouge_references_without_tokens"] == {"count": blank, "references": N_DOCS,
                                                           "share": blank / N_DOCS}
        texts = {s["filtered_resps"][0].strip() for s in samples} | set(refs)
        cut = sum(len(tok(t)["input_ids"]) >= tok.model_max_length for t in texts)
        assert meta["bertscore_truncated_inputs"] == cut, task
        saved = meta["generations_saved"]["per_rank"]
        assert len(saved) == WORLD and all(Path(p).is_file() for p in saved), task
        assert sum(len(Path(p).read_text().splitlines()) for p in saved) >= N_DOCS

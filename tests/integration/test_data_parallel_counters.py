"""Data parallelism: every family counter and usage figure the results record is the whole run's.

Two gloo ranks (:func:`helpers.dp_lm.run_ranks`, the backend that shards documents over
ranks as lm-eval's HF backend does over GPUs) run three real suite tasks, two of them
judged against the stub OpenAI-compatible server (:mod:`helpers.judge_server`):
``adapteval_arxiv_judged`` (the AdaptEval judge: ``judge_usage``, ``judge_parse_failures``)
and ``adapteval_pubmed_fm`` (FM: ``fm_usage``, ``fm_failures_by_kind``,
``fm_vanilla_failures``), besides ROUGE, BERTScore and DVO, and ``medqsum_hcm`` for
CIDEr-D, whose idf is a statistic of every rank's references. Rank ``r`` evaluates
documents ``r, r + 2, ...``; each rank has something only it counts: rank 1's arXiv
document gets replies without a rating (parse failures) and its PubMed reference
unparsable facets (an FM failure), rank 0's last arXiv document an empty generation
(an item not sent). Every counter in ``configs.<task>.metadata`` is then recomputed from
both ranks' logged samples and from the stub server's log of requests.

Both ranks open one judge cache file that does not exist yet, at the same moment; a
second two-rank run of the judged tasks is then answered from it with no request.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from helpers.dp_lm import run_ranks
from helpers.judge_server import StubJudgeServer, Text

from conftest import ROOT, subprocess_env
from custom_metrics.families.rouge import rouge_tokens

pytestmark = pytest.mark.slow

JUDGED, FM, MEDQSUM = "adapteval_arxiv_judged", "adapteval_pubmed_fm", "medqsum_hcm"
WORLD, N_DOCS = 2, 3
#: medqsum_hcm's test documents in the fixture mirror: rank 0 scores 0, 2, 4, 6 and rank 1 the others
MEDQSUM_DOCS = 8
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
    with StubJudgeServer(time_limit_s=600) as server:
        server.on(BAD_FACETS_FOR, Text("Sorry, I cannot extract that."))
        server.on(FM_MARKERS[0], Text(json.dumps(FACETS)))
        server.on(FM_MARKERS[1], Text("3"))
        server.on(FM_MARKERS[2], Text("2"))
        server.on(NO_RATING_FOR, Text("I would rather not rate this."))
        server.on("Fluency", Text("2"))  # Fluency is rated 1-3
        server.set_default(Text("4"))
        runs = {}
        for name, tasks in (("first", (JUDGED, FM, MEDQSUM)), ("again", (JUDGED, FM))):
            meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6,
                    "vocab_dir": str(vocab), "judge_model": "stub-judge", "judge_base_url": server.url,
                    # one cache file, new at the first run: both ranks create it at their first judge call
                    "judge_cache": str(base / "judge.sqlite"), "medqsum_metrics": "cider",
                    "fm_details": str(base / name / "fm.jsonl"), "generations_dir": str(base / name / "generations")}
            model_args = {"tokenizer": minilm_path, "max_length": 2048, "blank_if": BLANK_IF}
            server.reset_counts()
            runs[name] = run_ranks(base / name / "dp", WORLD, tasks, meta, model_args,
                                   subprocess_env(OPENAI_API_KEY="test-key"), gen_kwargs="max_gen_toks=24",
                                   timeout=400)
            runs[name]["bodies"] = list(server.bodies)
    out = runs["first"]
    out["again"], out["cache"] = runs["again"], base / "judge.sqlite"
    return out


def _text(body: dict) -> str:
    return json.dumps(body.get("messages", []), ensure_ascii=False)


def _bodies(run: dict, fm: bool) -> list[dict]:
    """The stub's log of one task's requests (FM's prompts carry FM's markers)."""
    return [b for b in run["bodies"] if any(m in _text(b) for m in FM_MARKERS) == fm]


def _prompt_tokens(bodies: list[dict]) -> int:
    """What the stub reports as prompt tokens: whitespace words of every message."""
    return sum(len(str(m.get("content", "")).split()) for b in bodies for m in b["messages"])


def _samples(run: dict, task: str, docs: int = N_DOCS) -> list[dict]:
    """Both ranks' logged samples of ``task``, in document order."""
    samples = sorted(run["results"]["samples"][task], key=lambda s: s["doc_id"])
    assert [s["doc_id"] for s in samples] == list(range(docs)), task
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


def _request(messages: list, params: dict) -> str:
    return json.dumps([messages, params], sort_keys=True, ensure_ascii=False)


def test_both_ranks_created_one_judge_cache_and_every_request_was_paid_once(run):
    with sqlite3.connect(run["cache"]) as conn:
        stored = [json.loads(r[0]) for r in conn.execute("SELECT request FROM answers")]
        claims = conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
    # every request either rank sent is in the cache once, and nothing else is (the key is the
    # table's primary key; a parse retry is the same request under another attempt index)
    sent = Counter(_request(b["messages"], {k: v for k, v in b.items() if k not in ("model", "messages")})
                   for b in run["bodies"])
    assert Counter(_request(r["messages"], r["params"]) for r in stored) == sent and claims == 0
    keys = Counter((_request(r["messages"], r["params"]), r["attempt"]) for r in stored)
    assert max(keys.values()) == 1  # no item paid twice, by one rank or by both
    # FM's alignment prompts are the same for every document here (the stub gives every text the
    # same facets): asked on both ranks, paid once, the other asks answered from the cache
    for task, usage in ((JUDGED, "judge_usage"), (FM, "fm_usage")):
        counted = _meta(run, task)[usage]
        assert counted["cache_unusable"] is None and counted["cache_unsaved"] == 0, task  # on both ranks
        assert counted["answers"] == counted["http_calls"], task
    assert sum(_meta(run, t)[u]["http_calls"] for t, u in ((JUDGED, "judge_usage"), (FM, "fm_usage"))) \
        == len(stored) == len(run["bodies"])
    # both ranks' documents were judged and kept: every non-empty generation is in a stored request
    texts = [json.dumps(r["messages"], ensure_ascii=False) for r in stored]
    for task in (JUDGED, FM):
        for s in _samples(run, task):
            generated = s["filtered_resps"][0].strip()
            assert not generated or any(json.dumps(generated, ensure_ascii=False)[1:-1] in t for t in texts), \
                (task, s["doc_id"])


def _same(a: object, b: object) -> bool:
    return a == b or all(isinstance(v, float) and math.isnan(v) for v in (a, b))


def test_a_second_two_rank_run_is_answered_from_the_cache(run):
    again = run["again"]
    assert again["bodies"] == []  # not one request reached the server
    for task, usage in ((JUDGED, "judge_usage"), (FM, "fm_usage")):
        first, second = _meta(run, task)[usage], _meta(again, task)[usage]
        assert first["http_calls"] > 0 and second["http_calls"] == 0, task
        assert second["cache_hits"] == first["http_calls"] + first["cache_hits"], task  # every request of the first
        for one, two in zip(_samples(run, task), _samples(again, task), strict=True):
            assert one["filtered_resps"] == two["filtered_resps"]
            assert all(_same(one[k], two[k]) for k in one["metrics"]), (task, one["doc_id"])


def test_cider_idf_is_every_rank_s_as_in_one_process(run):
    """Each document's CIDEr-D equals the coco-caption scorer's over all documents at once
    (SummEval's tokenization, NLTK's RegexpTokenizer): one process's number."""
    from nltk.tokenize import RegexpTokenizer
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    asked = [sorted({d for t, d in r["asked"] if t == MEDQSUM}) for r in run["ranks"]]
    assert asked == [list(range(0, MEDQSUM_DOCS, 2)), list(range(1, MEDQSUM_DOCS, 2))]
    samples = _samples(run, MEDQSUM, MEDQSUM_DOCS)
    words = RegexpTokenizer(r"\w+").tokenize
    whole = CiderScorer(n=4, sigma=6.0)
    for s in samples:
        whole += (" ".join(words(s["filtered_resps"][0])), [" ".join(words(s["target"]))])
    mean, per_document = whole.compute_score()
    logged = [s["cider"] for s in samples]
    assert logged == pytest.approx(list(per_document), abs=1e-9)
    assert run["results"]["results"][MEDQSUM]["cider,none"] == pytest.approx(float(mean), abs=1e-9)
    assert _meta(run, MEDQSUM)["medqsum_details"]["cider_idf_documents"] == MEDQSUM_DOCS
    shard = CiderScorer(n=4, sigma=6.0)  # rank 0's shard alone: the idf each rank had before
    for s in samples[0::2]:
        shard += (" ".join(words(s["filtered_resps"][0])), [" ".join(words(s["target"]))])
    assert list(shard.compute_score()[1]) != pytest.approx(logged[0::2], abs=1e-9)

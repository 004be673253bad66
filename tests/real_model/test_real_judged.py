"""AdaptEval (DVO and the LLM judge), FM and CCSBench focus with a real model, through
the real ``lm_eval`` CLI, judged by the same model under ``transformers serve``.

One ``lm_eval`` run generates with SmolLM2-135M-Instruct (chat template, 2 documents
per task) and sends every judge request to the session's ``transformers serve``. The
judge is a weak model on a slow server: most ratings are unparsable. What the tests
check is the accounting, recomputed from the logged samples and the server's own log:

* every reported mean equals the mean of the logged per-document scores (judge keys:
  over the documents that were scored; DVO and ROUGE: over all);
* every document is scored or counted (``judge_parse_failures``, ``fm_failures``,
  ``focus_parse_failures``) and the counts equal what the samples show;
* the judge's request counts in the results add up to the requests the server logged;
* rescoring the logged generations is paid by the judge cache: no request reaches the server.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from conftest import FIXTURE_DATA, ROOT, minilm_dir, own_samples, run_lm_eval, subprocess_env

JUDGED, FM, FOCUS = "adapteval_pubmed_judged", "adapteval_pubmed_fm", "ccsbench_focus"
TASKS = (JUDGED, FM, FOCUS)
LIMIT, GEN = 2, 32


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("vocab")
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "build-vocab", "--task", "adapteval_pubmed",
                           "--data-dir", str(FIXTURE_DATA), "--vocab-dir", str(out), "--no-progress"],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def judged(smollm2_checkpoint, smollm2_server, vocab_dir, tmp_path_factory):
    """The three judged tasks in one run; (folder, results, requests the server logged, environment)."""
    folder = tmp_path_factory.mktemp("smollm2_judged")
    meta = {"data_dir": str(FIXTURE_DATA), "bertscore_model": minilm_dir(), "bertscore_layers": 6,
            "vocab_dir": str(vocab_dir), "judge_model": smollm2_server.model,
            "judge_base_url": smollm2_server.base_url, "judge_cache": str(folder / "judge.sqlite"),
            "judge_n_samples": 1, "fm_extract_max_tokens": 64, "fm_details": str(folder / "fm_details.jsonl")}
    args = ["--model", "hf", "--model_args", f"pretrained={smollm2_checkpoint},max_length=2048",
            "--apply_chat_template", "--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--log_samples",
            "--gen_kwargs", f"max_gen_toks={GEN}", "--metadata", json.dumps(meta)]
    env = subprocess_env(OMP_NUM_THREADS="2", OPENAI_API_KEY="local", OPENAI_BASE_URL="")
    before = smollm2_server.requests_logged()
    res = run_lm_eval(args, folder / "run1", env=env)
    return folder, res, smollm2_server.requests_logged() - before, env


def score(sample: dict, key: str) -> float:
    """A logged per-document score; a document left out of a key's mean (nothing
    scored for it while others were) has no entry."""
    return float(sample.get(key, math.nan))


def _mean_of_scored(values: list[float]) -> float:
    scored = [v for v in values if not math.isnan(v)]
    return sum(scored) / len(scored) if scored else math.nan


def _same(reported: float, expected: float) -> bool:
    return (math.isnan(reported) and math.isnan(expected)) or reported == pytest.approx(expected, abs=1e-12)


def test_reported_means_are_the_logged_scores(judged):
    folder, res, _, _ = judged
    for task, keys in ((JUDGED, ("rouge1", "rougeL", "bertscore_f1", "dvo", "domain_adaptation", "coherence",
                                 "fluency")),
                       (FM, ("rouge1", "dvo", "fm", "fm_vanilla")),
                       (FOCUS, ("rouge1", "rougeL"))):
        samples = own_samples(folder / "run1", task)
        assert [s["doc_id"] for s in samples] == list(range(LIMIT)), task
        for key in keys:
            per_doc = [score(s, key) for s in samples]
            assert _same(res["results"][task][f"{key},none"], _mean_of_scored(per_doc)), (task, key, per_doc)
    # DVO with the vocabulary built from the mirror: a real summary shares domain words
    assert res["configs"][JUDGED]["metadata"]["vocabulary_used"].endswith("pubmed.tsv")


def test_every_document_is_judged_or_counted(judged):
    folder, res, _, _ = judged
    # AdaptEval judge: a rating is a score or a counted unparsable reply, never both
    samples = own_samples(folder / "run1", JUDGED)
    r, meta = res["results"][JUDGED], res["configs"][JUDGED]["metadata"]
    failed = sum(float(s["judge_parse_failures"]) for s in samples)
    unscored = sum(math.isnan(score(s, k)) for s in samples for k in ("domain_adaptation", "coherence", "fluency"))
    other = sum(n for by_reason in meta["judge_failed"].values() for why, n in by_reason.items() if why != "parse")
    assert r["judge_parse_failures,none"] == failed == unscored - other
    for key in ("domain_adaptation", "coherence", "fluency"):
        scored = sum(not math.isnan(score(s, key)) for s in samples)
        if scored == 0:  # nothing judged: NaN, never NaN ± NaN
            assert math.isnan(r[f"{key},none"]) and r[f"{key}_stderr,none"] == "N/A"
            assert meta["scored_documents"][key] == f"0 of {LIMIT} documents scored"
    # FM: a pair without a score is a counted failure, by kind; the details file has every pair
    fm_samples = own_samples(folder / "run1", FM)
    fm_meta = res["configs"][FM]["metadata"]
    details = [json.loads(line) for line in (folder / "fm_details.jsonl").read_text().splitlines()]
    assert len(details) == LIMIT and [d["task"] for d in details] == [FM] * LIMIT
    fm_failures = sum(float(s["fm_failures"]) for s in fm_samples)
    assert res["results"][FM]["fm_failures,none"] == fm_failures == sum(d["failure"] is not None for d in details)
    assert sum(fm_meta["fm_failures_by_kind"].values()) == fm_failures
    assert [d["fm"] is None for d in details] == [math.isnan(score(s, "fm")) for s in fm_samples]
    assert [d["fm_vanilla"] is None for d in details] == [math.isnan(score(s, "fm_vanilla")) for s in fm_samples]
    assert fm_meta["fm_vanilla_failures"] == sum(d["vanilla_failure"] is not None for d in details)
    assert fm_meta["fm_vanilla_failures"] == sum(math.isnan(score(s, "fm_vanilla")) for s in fm_samples)
    # CCSBench focus: each summary labelled or counted; F1 over the labelled pairs only
    focus = own_samples(folder / "run1", FOCUS)
    rf = res["results"][FOCUS]
    assert rf["focus_parse_failures,none"] == sum(float(s["focus_parse_failures"]) for s in focus)
    focus_failed = res["configs"][FOCUS]["metadata"]["focus_failed"]
    if rf["focus_parse_failures,none"] + sum(v for k, v in focus_failed.items() if k != "parse") == LIMIT:
        assert math.isnan(rf["focus_macro_f1,none"])  # nothing labelled: not an F1 of 0


def test_judge_requests_add_up_to_what_the_server_logged(judged):
    _, res, logged, _ = judged
    calls = 0
    for task in TASKS:
        meta = res["configs"][task]["metadata"]
        usage = meta["fm_usage"] if task == FM else meta["judge_usage"]
        assert usage["scored"] + usage["parse_failures"] + usage["empty_skipped"] + sum(
            v for k, v in usage["failed"].items() if k not in ("parse", "empty_skipped")) == usage["items"], task
        assert usage["retries"] == 0 and usage["answers"] == usage["http_calls"], task
        assert all(b["timeout_source"] == "auto" for b in usage["sizing"]), task
        calls += usage["http_calls"]
    # the preflight asks the endpoint once before generation; everything else is the judge's
    assert logged in (calls, calls + 1), (logged, calls)


def test_rescoring_the_saved_generations_is_paid_by_the_cache(judged, smollm2_server, tmp_path):
    """The resume path of docs/troubleshooting.md: ``domsum rescore`` over the logged generations with the same
    judge and cache asks the server nothing new and gives the logged scores back."""
    folder, res, _, env = judged
    [samples] = (folder / "run1").rglob(f"samples_{JUDGED}_*.jsonl")
    before = smollm2_server.requests_logged()
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "rescore", str(samples), "--metrics", "judge",
                           "--judge-model", smollm2_server.model, "--judge-base-url", smollm2_server.base_url,
                           "--judge-cache", str(folder / "judge.sqlite"), "--judge-n-samples", "1",
                           "--out", str(tmp_path), "--no-progress"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert smollm2_server.requests_logged() - before <= 1  # the endpoint check at most
    summary = json.loads(next(tmp_path.glob("*.summary.json")).read_text())
    assert summary["judge_calls"]["http_calls"] == 0
    assert summary["judge_calls"]["cache_hits"] == res["configs"][JUDGED]["metadata"]["judge_usage"]["answers"]
    rows = [json.loads(line) for line in next(tmp_path.glob("*.scores.jsonl")).read_text().splitlines()]
    logged = own_samples(folder / "run1", JUDGED)
    assert [r["doc_id"] for r in rows] == [s["doc_id"] for s in logged]
    for key in ("domain_adaptation", "coherence", "fluency", "judge_parse_failures"):
        again = [math.nan if r[key] is None else r[key] for r in rows]
        assert all(_same(a, score(s, key)) for a, s in zip(again, logged)), key

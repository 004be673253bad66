"""The bill before paying, through the real ``domsum rescore`` CLI against the stub judge:
the estimate line, ``judge_max_requests`` stopping at the cap and a second run with a
higher cap and the same cache judging only the rest (the stub's log counts every request)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, subprocess_env
from helpers.judge_server import StubJudgeServer, Text
from helpers.rescore import _outputs


def _samples(path: Path, n: int) -> Path:
    rows = [{"doc_id": i, "doc": {"id": f"adapteval/pubmed/test/{i}", "document": f"Trial {i} of drug A.",
                                  "summary": "Drug A helped."},
             "target": "Drug A helped.", "filtered_resps": [f"Drug A helped patient group {i}."], "filter": "none"}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _rescore(samples: Path, srv: StubJudgeServer, cache: Path, *flags: str, **env: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "lm_eval_tasks.cli", "rescore", str(samples), "--metrics", "coherence",
           "--judge-model", "stub-judge", "--judge-base-url", srv.url, "--judge-cache", str(cache),
           "--no-progress", "--overwrite", *flags]
    proc = subprocess.run(cmd, cwd=ROOT, env=subprocess_env(OPENAI_API_KEY="test", **env), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _estimates(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "judge estimate for" in line]


def test_a_capped_run_stops_at_the_cap_and_a_second_run_judges_only_the_rest(tmp_path):
    samples, cache = _samples(tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl", 6), tmp_path / "j.sqlite"
    with StubJudgeServer(time_limit_s=120, default=(Text("4"),)) as srv:
        first = _rescore(samples, srv, cache, "--judge-logprobs", "on", DOMSUM_JUDGE_MAX_REQUESTS="4",
                         DOMSUM_JUDGE_PRICE_PROMPT="0.5", DOMSUM_JUDGE_PRICE_COMPLETION="1.5")
        sent_first = srv.received
        scores1, summary1 = _outputs(tmp_path, samples)
        srv.reset_counts()
        second = _rescore(samples, srv, cache, "--judge-logprobs", "on", "--judge-max-requests", "100")
        sent_second = srv.received
        scores2, summary2 = _outputs(tmp_path, samples)
    # the estimate, one line before any request, and recorded: 6 requests, none cached, a cost
    (line,) = _estimates(first.stderr)
    assert "6 requests for 6 items, 0 cached" in line and "4 of judge_max_requests (4) left" in line
    (est,) = summary1["judge_calls"]["estimates"]
    assert est["requests"] == 6 and est["items_cached"] == 0
    assert est["cost"] == pytest.approx(est["prompt_tokens"] / 1000 * 0.5 + est["completion_tokens"] / 1000 * 1.5)
    assert est["completion_tokens"] == 6 * 5  # max_tokens 5, one choice
    # the cap: exactly 4 requests sent; the other 2 items not judged (null, never 0), counted as budget
    assert sent_first == 4
    judged1 = [s["coherence"] for s in scores1 if s["coherence"] is not None]
    assert judged1 == [4.0] * 4 and sum(s["coherence"] is None for s in scores1) == 2
    assert summary1["judge_calls"]["budget_skipped"] == 2 == summary1["judge_calls"]["failed"]["budget"]
    assert "2 of 6 items of" in first.stderr and "DOMSUM_JUDGE_MAX_REQUESTS" in first.stderr
    assert "judge_max_requests" in summary1["judge_calls"]["summary"]
    # the second run: 4 answers from the cache, only the 2 missing items sent
    (line2,) = _estimates(second.stderr)
    assert "2 requests for 2 items, 4 cached" in line2
    assert sent_second == 2 and summary2["judge_calls"]["budget_skipped"] == 0
    assert summary2["judge_calls"]["cache_hits"] == 4 and summary2["judge_calls"]["http_calls"] == 2
    assert [s["coherence"] for s in scores2] == [4.0] * 6
    assert summary2["metrics"]["coherence"] == 4.0 and not math.isnan(summary2["metrics"]["coherence"])


def test_a_server_that_ignores_n_is_named_once_and_multiplies_the_requests(tmp_path):
    """Samples mode, 3 samples, a server that answers one choice: each item takes 3 requests;
    the cap counts them all, and the re-run pays only for what the cache lacks."""
    samples, cache = _samples(tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl", 4), tmp_path / "j.sqlite"
    flags = ("--judge-logprobs", "off", "--judge-n-samples", "3")
    with StubJudgeServer(time_limit_s=120, default=(Text("4"),), max_choices=1) as srv:
        first = _rescore(samples, srv, cache, *flags, DOMSUM_JUDGE_MAX_REQUESTS="7")
        sent_first = srv.received
        scores1, summary1 = _outputs(tmp_path, samples)
        srv.reset_counts()
        _rescore(samples, srv, cache, *flags, DOMSUM_JUDGE_MAX_REQUESTS="100")
        sent_second = srv.received
        scores2, summary2 = _outputs(tmp_path, samples)
    warned = [line for line in first.stderr.splitlines() if "ignores n" in line]
    assert len(warned) == 1 and "each item now takes 3 requests" in warned[0]
    assert sent_first == 7 and summary1["judge_calls"]["http_calls"] == 7
    judged = sum(s["coherence"] is not None for s in scores1)
    assert judged <= 2 and summary1["judge_calls"]["budget_skipped"] == 4 - judged
    # 4 items x 3 requests in all, each paid once over the two runs
    assert sent_first + sent_second == 12
    assert [s["coherence"] for s in scores2] == [4.0] * 4 and summary2["judge_calls"]["budget_skipped"] == 0
    assert re.search(r"judge estimate for .*: \d+ requests", first.stderr)


def test_the_estimate_bounds_the_worst_case_it_names(tmp_path):
    """Log-probabilities probed (``auto``) on a server that omits them and answers one choice
    per request, and every reply unparsable: the first-attempt count is exceeded (a probe,
    3 single-choice requests per sampled attempt, one re-ask each), and ``requests_at_most``,
    printed before the first request, is exactly what the stub receives."""
    samples, cache = _samples(tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl", 3), tmp_path / "j.sqlite"
    with StubJudgeServer(time_limit_s=120, default=(Text("no rating here"),), max_choices=1,
                         logprobs_support="omit") as srv:
        run = _rescore(samples, srv, cache, "--judge-logprobs", "auto", "--judge-n-samples", "3")
        sent = srv.received
        _scores, summary = _outputs(tmp_path, samples)
    (line,) = _estimates(run.stderr)
    (est,) = summary["judge_calls"]["estimates"]
    # first attempts: 3 items, one log-probability request each; at most: 1 probe + 3 items x
    # 3 single-choice requests x 2 attempts
    assert (est["requests"], est["requests_at_most"]) == (3, 1 + 3 * 3 * 2)
    assert "3 requests for 3 items" in line and "at most 19 if every reply is asked again" in line
    assert "no log-probabilities" in line
    assert sent == summary["judge_calls"]["http_calls"] == est["requests_at_most"]

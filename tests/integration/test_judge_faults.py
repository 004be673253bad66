"""Judge faults end to end: every bad reply and every broken request becomes a counted,
explained skip or a clear error — never a crash without context, never a 0, never a
leaked key, never a paid call lost or paid twice.

All against the stub OpenAI-compatible server on 127.0.0.1 (tests/helpers/judge_server.py),
with short timeouts, few retries and tiny backoff so that no test can hang.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest

from custom_metrics.secrets import MASK
from custom_metrics.judge import JudgeConfig, JudgeRequestError, JudgeStats, judge_scores
from custom_metrics.judge.cache import cache_key, new_owner_id, open_cache, retire_owner
from lm_eval_tasks.settings import resolve
from conftest import sigint_default
from helpers.judge_server import (
    EchoKey,
    RawBody,
    Reset,
    Stall,
    Status,
    StubJudgeServer,
    Text,
    clear_judge_env,
    marked,
    rating_request,
    running_server,
    stub_config,
)
from helpers.judge_faults import KEY


ROOT = Path(__file__).resolve().parents[2]
cfg = stub_config
M = marked
req = rating_request

_clean_judge_env = pytest.fixture(autouse=True, name="_clean_judge_env")(clear_judge_env)
server = pytest.fixture(name="server")(running_server)


def sent(srv: StubJudgeServer, marker: str) -> int:
    """Requests the server received for one item."""
    return sum(M(marker) in json.dumps(b) for b in srv.bodies)


@pytest.mark.parametrize("body", [
    RawBody("{not json"),                                          # JSON content type, broken body
    RawBody("<html>502 Bad Gateway</html>", content_type="text/html"),  # a proxy's page
    RawBody('{"error": {"message": "overloaded"}}'),               # JSON, but no completion
], ids=["broken-json", "html", "no-choices"])
def test_invalid_json_200_is_retried_then_a_counted_failure(server, caplog, body):
    server.on(M("good1"), Text("4"))
    server.on(M("bad"), body)
    server.on(M("good2"), Text("2"))
    with caplog.at_level(logging.WARNING, logger="custom_metrics.judge"):
        res = judge_scores([req("good1"), req("bad"), req("good2")], (1, 5), cfg(server))
    assert res.scores == [4.0, None, 2.0]
    assert res.mean == 3.0  # left out, never averaged in as 0
    assert res.reasons == [None, "invalid_json", None]
    assert sent(server, "bad") == 3  # retried with backoff: 1 + max_retries
    assert res.stats.failed == {"invalid_json": 1} and res.stats.parse_failures == 0
    assert res.stats.as_dict()["failed"]["invalid_json"] == 1
    logged = [r.getMessage() for r in caplog.records if "invalid_json" in r.getMessage()]
    assert len(logged) == 1 and server.url in logged[0]  # the endpoint named in the reason
    assert res.stats.summary_line() == "1 of 3 judge items failed: 1 invalid JSON after 3 tries"


def test_invalid_json_then_valid_recovers(server):
    server.on(M("x"), RawBody("{truncated"), Text("5"))
    res = judge_scores([req("x")], (1, 5), cfg(server))
    assert res.scores == [5.0] and res.stats.retries == 1 and res.stats.failed == {}


def test_no_item_answered_is_a_clear_error_not_a_decode_error(server):
    server.on(M("bad"), RawBody("not json at all"))
    with pytest.raises(JudgeRequestError) as info:
        judge_scores([req("bad")], (1, 5), cfg(server, max_retries=1))
    msg = str(info.value)
    assert server.url in msg and "stub-judge" in msg and "not a JSON chat completion" in msg
    assert "still failing after 2 attempts" in msg and info.value.reason == "invalid_json"
    assert not isinstance(info.value, json.JSONDecodeError)


def test_endpoint_down_fails_fast_instead_of_retrying_every_item(server):
    server.set_default(Status(503))
    with pytest.raises(JudgeRequestError) as info:
        judge_scores([req(f"d{i}") for i in range(10)], (1, 5), cfg(server, max_retries=1))
    assert "answered none of the first 3 items" in str(info.value)
    assert "giving up on the other 7" in str(info.value) and server.url in str(info.value)
    # three items, two tries each (+ at most the next probe's first try, already under
    # way when the batch stops); not 10 items x 2 tries
    assert 6 <= server.received <= 7


def test_stall_reset_429_and_500_each_fail_one_item_with_its_reason(server):
    server.on(M("ok"), Text("3"))
    server.on(M("stall"), Stall(max_s=10))
    server.on(M("reset"), Reset())
    server.on(M("busy"), Status(429, "slow down", retry_after=0.2))
    server.on(M("down"), Status(500))
    items = [req(m) for m in ("ok", "stall", "reset", "busy", "down")]
    t0 = time.perf_counter()
    res = judge_scores(items, (1, 5), cfg(server, timeout=0.5, max_retries=1))
    elapsed = time.perf_counter() - t0
    assert res.scores == [3.0, None, None, None, None]
    assert res.reasons == [None, "timeout", "connection", "http_429", "http_500"]
    assert res.stats.failed == {"timeout": 1, "connection": 1, "http_429": 1, "http_500": 1}
    assert elapsed >= 0.2  # Retry-After honoured
    assert elapsed < 5.0   # the stall was cut by the client's timeout, twice
    for marker in ("stall", "reset", "busy", "down"):
        assert sent(server, marker) == 2
    line = res.stats.summary_line()
    assert line.startswith("4 of 5 judge items failed: ")
    for part in ("1 timeout after 2 tries", "1 connection error after 2 tries", "1 HTTP 429 after 2 tries",
                 "1 HTTP 500 after 2 tries"):
        assert part in line


def test_summary_line_and_failed_counts_by_reason(server):
    """The shape a command prints after re-scoring: "3 of 29 judge items failed: ..."."""
    server.on(M("bad0"), RawBody("{"))
    server.on(M("bad1"), RawBody("{"))
    server.on(M("slow"), Stall(max_s=10))
    server.set_default(Text("4"))
    items = [req(f"fine{i}") for i in range(26)] + [req("bad0"), req("bad1"), req("slow")]
    res = judge_scores(items, (1, 5), cfg(server, timeout=0.4))
    assert res.n_scored == 26
    assert res.stats.summary_line() == (
        "3 of 29 judge items failed: 2 invalid JSON after 3 tries, 1 timeout after 3 tries; to avoid timeouts "
        "raise judge_timeout / DOMSUM_JUDGE_TIMEOUT (seconds per request) or lower judge_concurrency / "
        "DOMSUM_JUDGE_CONCURRENCY (requests in flight; 1 for a CPU-served model)")
    # one request hanging on every retry is no sign of load: the set timeout stays, and so
    # does the sized concurrency
    (sizing,) = res.stats.sizing
    assert sizing["timeout_s"] == 0.4 and sizing["timeout_source"] == "set"
    assert sizing["concurrency_source"] == "auto" and sizing["concurrency_decreases"] == 0
    assert sizing["timeout_adaptations"] == 0 and sizing["requests"] == res.stats.http_calls == server.received
    failed = res.stats.as_dict()["failed"]
    assert failed == {"parse": 0, "invalid_json": 2, "timeout": 1, "empty_skipped": 0}
    assert JudgeStats(items=4).summary_line() == "all 4 judge items scored"


def _leaks(text: str) -> bool:
    return KEY in text or KEY[8:24] in text


def test_key_echoed_in_401_is_masked_in_error_traceback_and_logs(server, caplog):
    server.on(M("x"), EchoKey(401))
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(JudgeRequestError) as info:
            judge_scores([req("x")], (1, 5), cfg(server, api_key=KEY))
    assert MASK in str(info.value) and "401" in str(info.value) and server.url in str(info.value)
    assert not _leaks(str(info.value))
    assert not _leaks(json.dumps(info.value.body))
    assert not _leaks("".join(traceback.format_exception(info.value)))  # no unmasked cause chained
    assert not any(_leaks(r.getMessage()) for r in caplog.records)


@pytest.mark.parametrize("source", ["config", "OPENAI_API_KEY", "DOMSUM_JUDGE_API_KEY"])
def test_key_echoed_by_a_retryable_error_is_masked_in_logs_stats_and_cache(server, tmp_path, caplog,
                                                                         monkeypatch, source):
    if source == "config":
        api_key = KEY
    else:
        monkeypatch.setenv(source, KEY)
        api_key = resolve({}, "judge_api_key")  # the settings resolver reads either variable
        assert api_key == KEY
    server.on(M("echo"), EchoKey(503))
    server.on(M("reply"), Text(f"4 (your key was {KEY})"))  # a reply that repeats the key
    path = tmp_path / "masked.sqlite"
    with caplog.at_level(logging.DEBUG):
        res = judge_scores([req("echo"), req("reply")], (1, 5), cfg(server, path, api_key=api_key))
    assert res.reasons == ["http_503", None] and res.scores[1] == 4.0
    assert any(MASK in r.getMessage() for r in caplog.records)
    assert not any(_leaks(r.getMessage()) for r in caplog.records)
    assert not _leaks(json.dumps(res.replies)) and not _leaks(json.dumps(res.stats.as_dict()))
    open_cache(path)._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for f in tmp_path.iterdir():  # the database and any WAL/SHM beside it
        assert KEY.encode() not in f.read_bytes(), f.name


def test_empty_generations_are_not_sent_and_counted(server):
    server.set_default(Text("4"))
    items = [req("a"), req("b"), req("c")]
    res = judge_scores(items, (1, 5), cfg(server), generations=["A fine summary.", "", "  \n\t"])
    assert server.received == 1
    assert res.scores == [4.0, None, None] and res.reasons == [None, "empty", "empty"]
    assert res.stats.empty_skipped == 2 and res.stats.parse_failures == 0 and res.parse_failures == 0
    assert res.mean == 4.0
    assert res.stats.summary_line() == "all 1 judge items scored; 2 empty summaries skipped (not sent)"
    # nothing to judge at all: no request, no client, no key needed
    none = judge_scores([req("z")], (1, 5), JudgeConfig(model="gpt-4o-mini", cache=None, progress=False),
                        generations=[""])
    assert none.scores == [None] and none.stats.http_calls == 0


def test_adapteval_empty_summary_left_out_and_counted(server):
    from custom_metrics.judge.prompts import adapteval_judge

    server.set_default(Text("3"))
    out = adapteval_judge(["Doc one.", "Doc two."], ["A summary.", "   "], "pubmed", cfg(server))
    assert server.received == 3  # one per metric, for the non-empty summary only
    for metric in ("domain_adaptation", "coherence", "fluency"):
        assert out["per_item"][metric] == [3.0, None] and out[metric] == 3.0
        assert out["empty_skipped"][metric] == 1 and out["parse_failures"][metric] == 0
        assert out["failed"][metric] == {"empty": 1}
    assert out["usage"]["empty_skipped"] == 3


def test_fm_empty_candidate_costs_no_call_and_is_counted(server):
    from custom_metrics.judge.fm import fm_scores

    ref = "REF-ABSTRACT on drug X."
    server.on("Input: " + ref, Text(json.dumps({"background": "bg", "method": "m", "result": "r",
                                                 "conclusion": "c"})))
    server.set_default(Text("3"))
    out = fm_scores([ref], [" "], cfg(server))
    item = out["per_item"][0]
    # every facet of the reference gets its scale's lowest rating, and vanilla its lowest, 1/4
    assert item["ratings"] == {"background": 1.0, "method": 1.0, "result": 1.0, "conclusion": 1.0}
    assert item["fm_vanilla"] == pytest.approx(0.25) and item["failure"] is None
    assert out["n_scored"] == 1 and out["fm"] == pytest.approx(item["fm"])
    assert out["usage"]["empty_skipped"] == 1
    # only the reference's facet extraction was asked; nothing about the empty candidate
    assert server.received == 1


def _run_in_threads(n_runs: int, fn) -> list:
    results: list = [None] * n_runs
    errors: list = []
    barrier = threading.Barrier(n_runs)

    def worker(k: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[k] = fn(k)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a run did not finish"
    assert not errors, errors
    return results


def test_two_runs_sharing_one_cache_pay_once_per_item(tmp_path):
    n = 29
    items = [req(f"shared{i}") for i in range(n)]
    path = tmp_path / "shared.sqlite"
    with StubJudgeServer(latency_s=0.05, default=(Text("4"),), time_limit_s=60) as srv:
        config = cfg(srv, path, concurrency=4)
        runs = _run_in_threads(2, lambda k: judge_scores(items, (1, 5), config))
        assert srv.received == n  # not 2n
    for res in runs:
        assert res.scores == [4.0] * n
    assert sum(r.stats.answers for r in runs) == n
    assert sum(r.stats.claim_waits for r in runs) >= 1  # someone waited instead of paying
    assert open_cache(path).pending() == []


def test_run_waits_for_a_live_claim_then_reads_its_answer(server, tmp_path):
    path = tmp_path / "wait.sqlite"
    config = cfg(server, path, logprobs="on")
    cache = open_cache(path)
    params = {"temperature": 0.0, "max_tokens": 5, "n": 1, "logprobs": True, "top_logprobs": 20}
    key = cache_key(config.endpoint, config.model, req("w"), params, 0)
    other = new_owner_id()  # another run of this process, still running
    try:
        assert cache.claim(key, other, 30.0)[0] == "claimed"
        answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "2"},
                               "logprobs": {"content": [{"token": "2", "logprob": 0.0, "top_logprobs": []}]}}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
        timer = threading.Timer(0.3, cache.put, args=(key, config.endpoint, config.model, {}, answer))
        timer.start()
        res = judge_scores([req("w")], (1, 5), config)
        timer.join()
    finally:
        retire_owner(other)
    assert res.scores == [2.0] and server.received == 0
    assert res.stats.claim_waits == 1 and res.stats.cache_hits == 1


def test_expired_or_orphaned_claims_are_taken_over(server, tmp_path):
    path = tmp_path / "stale.sqlite"
    config = cfg(server, path, logprobs="on", claim_ttl_s=30.0)
    cache = open_cache(path)
    params = {"temperature": 0.0, "max_tokens": 5, "n": 1, "logprobs": True, "top_logprobs": 20}
    expired, orphan = (cache_key(config.endpoint, config.model, req(m), params, 0) for m in ("exp", "orph"))
    cache.claim(expired, "another-host:1:abc", 0.001)  # its owner stopped beating long ago
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid on this host that no longer runs: a killed run
    cache.claim(orphan, f"{os.uname().nodename}:{dead.pid}:deadbeef", 3600.0)
    time.sleep(0.01)
    t0 = time.perf_counter()
    res = judge_scores([req("exp"), req("orph")], (1, 5), config)
    assert time.perf_counter() - t0 < 5.0  # no waiting out the hour-long claim
    assert res.scores == [3.0, 3.0] and server.received == 2
    assert res.stats.claims_taken_over == 2 and cache.pending() == []


def test_failed_request_releases_its_claim(server, tmp_path):
    server.on(M("down"), Status(503))
    server.on(M("up"), Text("4"))
    path = tmp_path / "release.sqlite"
    res = judge_scores([req("down"), req("up")], (1, 5), cfg(server, path, max_retries=1))
    assert res.reasons == ["http_503", None]
    assert open_cache(path).pending() == []  # another run may take the failed item at once


_CHILD = """
import json, sys
from custom_metrics.judge import JudgeConfig, judge_scores
url, path, items = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
config = JudgeConfig(model="stub-judge", base_url=url, api_key="test", cache=path,
                     concurrency=4, timeout=5.0, max_retries=1, backoff_base_s=0.01,
                     backoff_cap_s=0.05, progress=False)
res = judge_scores(items, (1, 5), config)
print(json.dumps({"n_scored": res.n_scored, "answers": res.stats.answers}), flush=True)
"""


def _child(url: str, path: Path, items_file: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", _CHILD, url, str(path), str(items_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=sigint_default)


def test_a_process_and_a_thread_sharing_one_cache_pay_once(tmp_path):
    n = 29
    items = [req(f"proc{i}") for i in range(n)]
    items_file = tmp_path / "items.json"
    items_file.write_text(json.dumps(items))
    path = tmp_path / "procs.sqlite"
    with StubJudgeServer(latency_s=0.1, default=(Text("4"),), time_limit_s=60) as srv:
        proc = _child(srv.url, path, items_file)
        try:
            deadline = time.monotonic() + 30
            while srv.received == 0 and time.monotonic() < deadline:  # the child is under way
                time.sleep(0.01)
            res = judge_scores(items, (1, 5), cfg(srv, path, concurrency=4))
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == 0, err
        assert srv.received == n
    assert json.loads(out)["n_scored"] == n and res.scores == [4.0] * n
    assert json.loads(out)["answers"] + res.stats.answers == n


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_interrupted_process_rerun_repeats_only_in_flight_requests(tmp_path, sig):
    """Kill a run mid-way; a re-run pays only for what had no answer yet.

    Repeated requests (paid twice) can only be those in flight at the kill: at most
    ``concurrency``. A killed owner's claims are taken over at once (its pid is
    gone), not after their expiry; an interrupted (SIGINT) run releases them itself.
    """
    n = 24
    items = [req(f"kill{i}") for i in range(n)]
    items_file = tmp_path / "items.json"
    items_file.write_text(json.dumps(items))
    path = tmp_path / "kill.sqlite"
    cache = open_cache(path)
    with StubJudgeServer(latency_s=0.2, default=(Text("4"),), time_limit_s=60) as srv:
        proc = _child(srv.url, path, items_file)
        try:
            deadline = time.monotonic() + 30
            while len(cache) < 6 and time.monotonic() < deadline:
                time.sleep(0.01)
            proc.send_signal(sig)
            proc.communicate(timeout=30)
        finally:
            proc.kill()
        assert proc.returncode != 0
        stored, pending, sent_first = len(cache), len(cache.pending()), srv.received
        assert 6 <= stored < n
        assert pending <= 4 and (sig == signal.SIGKILL or pending == 0)
        srv.reset_counts()
        t0 = time.perf_counter()
        res = judge_scores(items, (1, 5), cfg(srv, path, concurrency=4, claim_ttl_s=600))
        assert time.perf_counter() - t0 < 10  # orphaned claims were not waited out
        rerun = srv.received
    assert res.scores == [4.0] * n
    assert rerun == n - stored  # only the unanswered items
    repeated = sent_first + rerun - n
    assert 0 <= repeated <= 4  # at most the requests in flight at the kill
    print(f"\n{sig.name}: first run sent {sent_first}, stored {stored}, left {pending} claims; "
          f"re-run sent {rerun}; repeated {repeated}")


def test_fm_extraction_that_keeps_failing_is_a_counted_failure_not_a_crash(server):
    """A facet extraction whose requests keep failing (HTTP 500) fails that pair only."""
    from custom_metrics.judge.fm import fm_scores

    ref, good, bad = "REF-ABSTRACT on drug Y.", "CAND-GOOD abstract.", "CAND-DOWN abstract."
    facets = Text(json.dumps({"background": "bg", "method": "m", "result": "r", "conclusion": "c"}))
    server.on("Input: " + ref, facets)
    server.on("Input: " + good, facets)
    server.on("Input: " + bad, Status(500))
    server.set_default(Text("3"))
    out = fm_scores([ref, ref], [good, bad], cfg(server, max_retries=1), vanilla=False)
    assert out["per_item"][0]["failure"] is None and out["per_item"][0]["fm"] is not None
    assert out["per_item"][1]["failure"] == "candidate_extraction" and out["per_item"][1]["fm"] is None
    assert out["usage"]["failed"]["http_500"] == 1


def test_adapteval_judge_counts_timeouts_and_off_scale_replies_exactly(server):
    from custom_metrics.judge.prompts import adapteval_judge

    server.on("summary-two", Stall(max_s=5))  # every request about the second summary hangs
    server.on("Fluency (1-3):", Text("5/10"))  # fluency of the first: another scale
    server.set_default(Text("4"))
    out = adapteval_judge(["Doc one.", "Doc two."], ["summary-one: fine.", "summary-two: hangs."], "pubmed",
                          cfg(server, timeout=0.4, max_retries=1), prompt_variant="suite")
    assert out["per_item"]["domain_adaptation"] == [4.0, None] and out["per_item"]["coherence"] == [4.0, None]
    assert out["per_item"]["fluency"] == [None, None]
    assert out["failed"] == {"domain_adaptation": {"timeout": 1}, "coherence": {"timeout": 1},
                             "fluency": {"parse": 1, "timeout": 1}}
    usage = out["usage"]
    assert usage["failed"]["timeout"] == 3 and usage["parse_failures"] == 1 and usage["scored"] == 2
    assert usage["scored"] + 3 + 1 == usage["items"] == 6
    # 2 scored + the 5/10 asked twice + 3 hanging items x 2 attempts
    assert usage["http_calls"] == server.received == 2 + 2 + 6
    # three requests timed out under a set timeout: only the unset concurrency adapted
    (sizing,) = usage["sizing"]
    assert sizing["timeout_s"] == 0.4 and sizing["timeout_adaptations"] >= 1 and sizing["concurrency_decreases"] >= 1


def test_ccs_focus_counts_timeouts_and_garbage_exactly(server):
    from custom_metrics.families.ccs import judge_focus

    server.on("SUMMARY-E", Text("empirical"))
    server.on("SUMMARY-STALL", Stall(max_s=5))
    server.on("SUMMARY-G", Text("5/10 conceptual and empirical"))  # names both labels: unparsable
    labels, res = judge_focus(["SUMMARY-E numbers.", "SUMMARY-STALL", "SUMMARY-G odd.", ""],
                              cfg(server, timeout=0.4, max_retries=1))
    assert labels == ["high", None, None, None]
    assert res.reasons == [None, "timeout", "parse", "empty"]
    st = res.stats
    assert (st.scored, st.parse_failures, st.failed, st.empty_skipped) == (1, 1, {"timeout": 1}, 1)
    assert st.accounted == st.items == 4
    assert st.http_calls == server.received == 1 + 2 + 2

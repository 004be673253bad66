"""Tests of the LLM-judge core against a real local HTTP server (tests/helpers/judge_server.py).

Everything runs offline on 127.0.0.1: the ``openai`` client talks HTTP to the stub,
which scripts 429s, 500s, hangs, garbage and log-probabilities per request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from pathlib import Path

import pytest

from custom_metrics.judge import JudgeConfig, JudgeRequestError, JudgeStats, judge_scores, judge_scores_async
from custom_metrics.judge import config as judge_conf
from custom_metrics.judge.cache import open_cache
from custom_metrics.judge.prompts import adapteval_judge
from helpers.judge_server import Hang, Logprobs, Samples, Stall, Status, StubJudgeServer, Text
from helpers.judge import JUDGE_ENV, M, _write_samples, req


@pytest.fixture(autouse=True)
def _clean_judge_env(monkeypatch):
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    with StubJudgeServer(time_limit_s=60) as srv:
        yield srv


def cfg(srv: StubJudgeServer, cache: Path | None = None, **kw) -> JudgeConfig:
    """A fast-retrying config for the stub (tiny backoff, short timeout)."""
    base = dict(model="stub-judge", base_url=srv.url, api_key="test", cache=str(cache) if cache else None,
                backoff_base_s=0.01, backoff_cap_s=0.05, timeout=5.0, progress=False)
    base.update(kw)
    return JudgeConfig(**base)


def test_scores_parsed_in_logprob_mode(server):
    server.on(M("a"), Text("4"))
    server.on(M("b"), Text("2"))
    res = judge_scores([req("a"), req("b")], (1, 5), cfg(server))
    assert res.scores == [4.0, 2.0]
    assert res.modes == ["logprobs", "logprobs"] and res.mode == "logprobs"
    assert res.mean == 3.0
    body = server.bodies[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 5
    assert res.stats.http_calls == 2 and res.stats.answers == 2
    assert res.stats.prompt_tokens > 0 and res.stats.completion_tokens == 2


def test_logprob_mode_over_http_weighted_mean(server):
    dist = {"1": 0.05, "2": 0.10, "3": 0.20, "4": 0.40, "5": 0.15, "The": 0.10}
    server.on(M("lp"), Logprobs(dist, prefix=("Score", ":", " ")))
    res = judge_scores([req("lp")], (1, 5), cfg(server))
    assert res.scores[0] == pytest.approx(3.2 / 0.9, abs=1e-9)
    assert res.modes == ["logprobs"]
    assert res.replies == [["Score: 4"]]


@pytest.mark.parametrize("support", ["refuse", "omit"])
def test_falls_back_to_sampling_without_logprobs(support):
    with StubJudgeServer(logprobs_support=support, default=(Samples("4", "5", "3", "4"),)) as srv:
        items = [req(f"s{i}") for i in range(5)]
        res = judge_scores(items, (1, 5), cfg(srv, n_samples=4))
    assert res.scores == [4.0] * 5
    assert res.mode == "samples" and res.stats.logprobs_fallbacks == 1
    sampled = [b for b in srv.bodies if not b.get("logprobs")]
    assert len(sampled) == 5 and all(b["n"] == 4 and b["temperature"] == 1.0 for b in sampled)
    # one probe only: the other items waited for its verdict instead of probing too
    assert srv.received == 6


def test_logprobs_on_requires_them():
    with StubJudgeServer(logprobs_support="refuse") as srv:
        with pytest.raises(JudgeRequestError, match="logprobs"):
            judge_scores([req("x")], (1, 5), cfg(srv, logprobs="on"))


def test_sampling_mode_off(server):
    server.on(M("x"), Samples("2", "3", "garbage"))
    res = judge_scores([req("x")], (1, 5), cfg(server, logprobs="off", n_samples=3))
    assert res.scores == [2.5] and res.modes == ["samples"]
    assert "logprobs" not in server.bodies[0]


def test_429_then_success_honours_retry_after(server):
    server.on(M("r"), Status(429, "slow down", retry_after=0.3), Text("4"))
    t0 = time.perf_counter()
    res = judge_scores([req("r")], (1, 5), cfg(server))
    assert time.perf_counter() - t0 >= 0.3
    assert res.scores == [4.0]
    assert res.stats.retries == 1 and res.stats.http_calls == 2
    assert server.statuses[429] == 1 and server.statuses[200] == 1


def test_500_then_success(server):
    server.on(M("e"), Status(500), Status(502), Text("3"))
    res = judge_scores([req("e")], (1, 5), cfg(server))
    assert res.scores == [3.0] and res.stats.retries == 2
    assert server.received == 3


def test_timeout_then_success(server):
    server.on(M("t"), Hang(1.5), Text("5"))
    t0 = time.perf_counter()
    res = judge_scores([req("t")], (1, 5), cfg(server, timeout=0.3))
    assert res.scores == [5.0] and res.stats.retries == 1
    assert time.perf_counter() - t0 < 1.5  # the client gave up on the hung request
    assert server.received == 2


def test_client_error_fails_fast_with_clear_message(server):
    server.on(M("bad"), Status(401, "invalid api key"))
    with pytest.raises(JudgeRequestError) as info:
        judge_scores([req("bad")], (1, 5), cfg(server))
    msg = str(info.value)
    assert "401" in msg and server.url in msg and "stub-judge" in msg and "invalid api key" in msg
    assert info.value.status == 401
    assert server.received == 1  # no retry


def test_retries_exhausted(server):
    server.on(M("down"), Status(503))
    with pytest.raises(JudgeRequestError, match="still failing after 3 attempts"):
        judge_scores([req("down")], (1, 5), cfg(server, max_retries=2))
    assert server.received == 3


def test_garbage_retried_once_then_counted_not_zero(server):
    server.on(M("good1"), Text("4"))
    server.on(M("junk"), Text("I am not able to judge this."))
    server.on(M("good2"), Text("2"))
    res = judge_scores([req("good1"), req("junk"), req("good2")], (1, 5), cfg(server))
    assert res.scores == [4.0, None, 2.0]
    assert res.mean == 3.0  # the failure is excluded, not averaged in as 0
    assert res.parse_failures == 1 and res.stats.parse_failures == 1 and res.stats.parse_retries == 1
    junk = [b for b in server.bodies if "junk" in json.dumps(b)]
    assert len(junk) == 2  # asked exactly twice
    assert len(res.replies[1]) == 2


def test_garbage_then_valid_on_retry(server):
    server.on(M("once"), Text("nonsense"), Text("3"))
    res = judge_scores([req("once")], (1, 5), cfg(server))
    assert res.scores == [3.0] and res.stats.parse_retries == 1 and res.stats.parse_failures == 0


def test_out_of_scale_is_a_parse_failure(server):
    server.on(M("high"), Text("9"))
    res = judge_scores([req("high")], (1, 3), cfg(server))
    assert res.scores == [None] and res.mean is None and res.mode == "none"


@pytest.mark.parametrize("logprobs", ["auto", "off"])
def test_replies_in_another_scale_are_counted_never_coerced(server, logprobs):
    server.on(M("neg"), Text("-1"))
    server.on(M("ten"), Text("5/10"))
    server.on(M("pct"), Samples("80%"))
    server.on(M("ok"), Text("4/5"))
    items = [req("ok"), req("neg"), req("ten"), req("pct")]
    res = judge_scores(items, (1, 5), cfg(server, logprobs=logprobs, n_samples=2))
    assert res.scores == [4.0, None, None, None]
    assert res.reasons == [None, "parse", "parse", "parse"]
    st = res.stats
    assert st.parse_failures == 3 and st.parse_retries == 3 and st.scored == 1
    assert st.accounted == st.items == 4
    # each bad item asked exactly twice; the good one once
    assert server.received == 7 == st.http_calls


def test_short_sampled_reply_is_made_up_with_single_choice_calls(tmp_path):
    """A server that ignores ``n`` (transformers serve): the missing samples are asked
    one by one, so the score is the mean of n_samples replies, and all is counted."""
    with StubJudgeServer(max_choices=1, time_limit_s=60) as srv:
        srv.on(M("s"), Text("2"), Text("4"), Text("4"), Text("5"))
        config = cfg(srv, tmp_path / "short.sqlite", logprobs="off", n_samples=4)
        res = judge_scores([req("s")], (1, 5), config)
        # the first reply, then the three extra samples in whatever order they were answered
        assert res.scores == [pytest.approx(3.75)] and res.replies[0][0] == "2"
        assert sorted(res.replies[0]) == ["2", "4", "4", "5"]
        assert [b["n"] for b in srv.bodies] == [4, 1, 1, 1]
        st = res.stats
        assert (st.choices_short, st.choices_missing, st.sample_topups) == (1, 3, 3)
        assert st.http_calls == srv.received == 4 and st.answers == 4
        assert "1 judge replies held fewer choices than asked (3 missing, made up with 3" in st.summary_line()
        assert st.as_dict()["choices_short"] == 1
        # each extra sample has its own cache key: a second run pays nothing, same score
        srv.reset_counts()
        again = judge_scores([req("s")], (1, 5), config)
        assert srv.received == 0 and again.scores == res.scores and again.stats.cache_hits == 4


def test_server_honouring_n_needs_no_extra_calls(server):
    server.on(M("full"), Samples("3", "5"))
    res = judge_scores([req("full")], (1, 5), cfg(server, logprobs="off", n_samples=4))
    assert res.scores == [4.0] and server.received == 1
    assert (res.stats.choices_short, res.stats.sample_topups) == (0, 0)


def test_transformers_serve_like_server_auto_mode_counts_everything():
    """No logprobs, one choice per reply, greedy: the judge falls back to samples and
    makes up every sampled reply; the counts equal what the server saw."""
    with StubJudgeServer(max_choices=1, logprobs_support="omit", time_limit_s=60) as srv:
        srv.on(M("a"), Text("3"))
        srv.on(M("b"), Text("no score here"))
        res = judge_scores([req("a"), req("b")], (1, 5), cfg(srv, n_samples=3))
    assert res.scores == [3.0, None] and res.reasons == [None, "parse"] and res.mode == "samples"
    st = res.stats
    # 1 logprobs probe + a: 1 + 2 top-ups; b: (1 + 2) x 2 attempts
    assert st.http_calls == srv.received == 1 + 3 + 6
    assert (st.choices_short, st.choices_missing, st.sample_topups) == (3, 6, 6)
    assert st.logprobs_fallbacks == 1 and st.accounted == st.items == 2


def test_default_sizing_starts_the_whole_batch_in_flight_without_a_probe():
    """A batch smaller than the first wave's most goes out before the first answer: 8 at
    once, the other 4 when the wave widens 0.1 s later (0.5 s a request: margin for a
    loaded machine). Before, the other 4 waited for answers."""
    assert judge_conf.START_CONCURRENCY < 12 <= judge_conf.FIRST_WAVE_MAX
    with StubJudgeServer(latency_s=0.5, time_limit_s=60) as srv:
        res = judge_scores([req(f"p{i}") for i in range(12)], (1, 5), cfg(srv, timeout=None, logprobs="on"))
    assert res.n_scored == 12
    assert srv.arrivals_in_flight == list(range(1, 13))  # no request went alone to measure the latency
    (sizing,) = res.stats.sizing
    assert sizing["timeout_source"] == sizing["concurrency_source"] == "auto"
    assert sizing["start_concurrency"] == 12 <= sizing["peak_concurrency"]
    assert sizing["timeout_s"] == judge_conf.AUTO_TIMEOUT_FLOOR_S and 0.49 < sizing["floor_latency_s"] < 3
    assert sizing["requests"] == srv.received == 12 and sizing["concurrency_decreases"] == 0
    assert res.config["timeout"] == "auto" and res.config["concurrency"] == "auto"


def test_the_first_round_trip_fills_a_batching_server():
    """16 slots, 64 items, 0.5 s a request: the first wave (8, widened to 16 when 0.1 s
    passes without an answer) reaches the server before any answer comes back, so no
    slot idles after the first step. Counted at the server: before, the 9th request
    was sent only after an answer, so at most 8 were in flight among the first 16
    arrivals."""
    start = judge_conf.FIRST_WAVE_MAX
    assert start >= 16 > judge_conf.START_CONCURRENCY
    with StubJudgeServer(latency_s=0.5, slots=16, time_limit_s=60) as srv:
        res = judge_scores([req(f"w{i}") for i in range(64)], (1, 5), cfg(srv, timeout=None, logprobs="on"))
    assert res.n_scored == 64 and srv.received == 64
    (sizing,) = res.stats.sizing
    assert sizing["start_concurrency"] == start and sizing["concurrency_decreases"] == 0
    assert max(srv.arrivals_in_flight[:16]) == 16  # the old ramp: 8 at most


def test_pacing_fills_a_batching_server_beyond_the_start():
    """64 slots, flat latency up to 64 in flight, wider than the first wave: answers stay
    near the fastest, so the bound grows past its start. (0.5 s a request: on a loaded
    machine the client takes a good part of 0.2 s to post a wave of 32.)"""
    start = judge_conf.FIRST_WAVE_MAX
    with StubJudgeServer(latency_s=0.5, slots=64, time_limit_s=60) as srv:
        res = judge_scores([req(f"b{i}") for i in range(3 * start)], (1, 5), cfg(srv, timeout=None, logprobs="on"))
    assert res.n_scored == 3 * start
    (sizing,) = res.stats.sizing
    assert sizing["start_concurrency"] == start
    assert sizing["peak_concurrency"] > start and srv.max_in_flight > start
    assert sizing["concurrency_decreases"] == 0 and srv.received == 3 * start


@pytest.fixture
def slow_scale(monkeypatch):
    """Sizing constants shrunk ~100x, so that a 0.2 s-a-request server is "slow"."""
    monkeypatch.setattr(judge_conf, "AUTO_TIMEOUT_FLOOR_S", 0.5)
    monkeypatch.setattr(judge_conf, "FIRST_TIMEOUT_S", 5.0)


def test_pacing_holds_against_a_one_at_a_time_server(slow_scale):
    """A serialising server queues from the second request on: answers come slower than
    the first, so the bound holds (more would only lengthen the queue)."""
    with StubJudgeServer(latency_s=0.05, serialize=True, time_limit_s=60) as srv:
        res = judge_scores([req(f"q{i}") for i in range(30)], (1, 5), cfg(srv, timeout=None, logprobs="on"))
    assert res.n_scored == 30 and res.stats.failed == {} and res.stats.retries == 0
    (sizing,) = res.stats.sizing
    assert sizing["floor_latency_s"] >= 0.05
    # the wave widened (25 ms steps) until the first answer (50 ms)
    assert judge_conf.START_CONCURRENCY <= sizing["start_concurrency"] <= 30
    assert sizing["peak_concurrency"] <= sizing["start_concurrency"] + 2
    assert srv.max_in_flight <= sizing["peak_concurrency"]
    # the first answer sized the wait for the whole queue in flight, with margin
    assert sizing["timeout_s"] >= judge_conf.AUTO_LATENCY_FACTOR * 0.05 * sizing["start_concurrency"] - 0.01


def test_the_first_wave_waits_for_the_queue_its_first_answer_shows(monkeypatch):
    """8 at once against a one-at-a-time server, 0.1 s each, the first wait 0.4 s: the back
    of the queue answers at 0.8 s. The first answer sizes the wait for a queue of 8
    (3 x 0.1 x 8 = 2.4 s) and the requests already in flight get it too: none times out
    and none is sent twice (before, those answering after 0.4 s timed out)."""
    monkeypatch.setattr(judge_conf, "FIRST_TIMEOUT_S", 0.4)
    monkeypatch.setattr(judge_conf, "AUTO_TIMEOUT_FLOOR_S", 0.4)
    with StubJudgeServer(latency_s=0.1, serialize=True, time_limit_s=60) as srv:
        res = judge_scores([req(f"f{i}") for i in range(8)], (1, 5),
                           cfg(srv, timeout=None, max_retries=0, logprobs="on"))
        received = srv.received
    assert res.n_scored == 8 and res.stats.failed == {} and res.stats.retries == 0
    assert received == res.stats.http_calls == 8
    (sizing,) = res.stats.sizing
    assert sizing["start_concurrency"] == 8 and sizing["timeout_adaptations"] == 0
    assert sizing["timeout_s"] >= judge_conf.AUTO_LATENCY_FACTOR * 0.1 * 8 - 0.01


def test_429s_of_one_burst_halve_the_requests_in_flight_once(server, caplog):
    """Three 429s of one burst halve the bound once: the batch of 3 starts with 3 in
    flight and goes on with 1. Read where it is said, not from the bound at the end: the
    retries' answers, one at a time with others waiting, raise it again (+1 per round trip)."""
    for i in range(3):
        server.on(M(f"busy{i}"), Status(429, "slow down", retry_after=0), Text("4"))
    items = [req(f"busy{i}") for i in range(3)]
    with caplog.at_level(logging.INFO, logger="custom_metrics.judge.client"):
        res = judge_scores(items, (1, 5), cfg(server, logprobs="on"))
    assert res.scores == [4.0] * 3 and res.stats.retries == 3
    (sizing,) = res.stats.sizing
    assert sizing["concurrency_decreases"] == 1 and sizing["start_concurrency"] == 3
    halved = [r.getMessage() for r in caplog.records if "HTTP 429" in r.getMessage()]
    assert len(halved) == 1 and "judge now sends 1 request(s) at once" in halved[0]
    assert sizing["max_concurrency"] <= 3


def test_set_values_are_used_as_given_and_timeouts_counted(slow_scale):
    """The same server with "8 in flight, 0.6 s each" set: nothing is adapted, the
    queue times out, and every timeout is counted, the message naming the settings."""
    with StubJudgeServer(latency_s=0.25, serialize=True, time_limit_s=60) as srv:
        res = judge_scores([req(f"t{i}") for i in range(8)], (1, 5),
                           cfg(srv, timeout=0.6, concurrency=8, max_retries=0, logprobs="on"))
        time.sleep(0.25 * 8)  # let the server drain what the client gave up on
        received = srv.received
    st = res.stats
    # logprobs "on": no mode probe; all 8 at once, as set
    assert srv.arrivals_in_flight[1] >= 2 and srv.max_in_flight >= 4
    assert received == st.http_calls == 8
    assert st.failed.get("timeout", 0) >= 1 and st.scored + st.failed["timeout"] == 8
    assert res.reasons.count("timeout") == st.failed["timeout"] and st.accounted == st.items
    (sizing,) = st.sizing
    assert (sizing["timeout_s"], sizing["max_concurrency"]) == (0.6, 8)
    assert sizing["timeout_source"] == sizing["concurrency_source"] == "set"
    assert sizing["concurrency_decreases"] == 0 and sizing["timeout_adaptations"] == 0
    assert "judge_timeout / DOMSUM_JUDGE_TIMEOUT" in st.summary_line()
    assert "DOMSUM_JUDGE_CONCURRENCY" in st.summary_line()


def test_set_timeout_with_paced_concurrency_halves_it_when_the_queue_times_out(slow_scale):
    """8 at once against a one-at-a-time server, 1.0 s each: the back of the queue times
    out, and the timeouts of two requests halve the requests in flight; the set timeout stays."""
    with StubJudgeServer(latency_s=0.2, serialize=True, time_limit_s=60) as srv:
        res = judge_scores([req(f"c{i}") for i in range(8)], (1, 5), cfg(srv, timeout=1.0, logprobs="on"))
    (sizing,) = res.stats.sizing
    assert sizing["timeout_s"] == 1.0 and sizing["timeout_source"] == "set"
    assert sizing["start_concurrency"] == 8
    assert sizing["concurrency_decreases"] >= 1 and sizing["max_concurrency"] < 8
    assert res.n_scored == 8 and res.stats.retries >= 2


def test_set_concurrency_is_kept_and_the_timeout_sized(server):
    res = judge_scores([req(f"k{i}") for i in range(6)], (1, 5), cfg(server, timeout=None, concurrency=3))
    (sizing,) = res.stats.sizing
    assert sizing["max_concurrency"] == 3 and sizing["concurrency_source"] == "set"
    assert sizing["timeout_source"] == "auto" and sizing["timeout_s"] == judge_conf.AUTO_TIMEOUT_FLOOR_S
    assert server.max_in_flight <= 3


def test_timeouts_of_two_requests_double_the_timeout_and_halve_concurrency(monkeypatch, server):
    monkeypatch.setattr(judge_conf, "AUTO_TIMEOUT_FLOOR_S", 0.3)
    monkeypatch.setattr(judge_conf, "FIRST_TIMEOUT_S", 0.3)
    monkeypatch.setattr(judge_conf, "AUTO_LATENCY_FACTOR", 0.01)  # the sized wait: the floor, 0.3 s
    server.on(M("h1"), Hang(0.5), Text("4"))
    server.on(M("h2"), Hang(0.5), Text("4"))
    items = [req("fine0"), req("fine1"), req("h1"), req("h2")]
    res = judge_scores(items, (1, 5), cfg(server, timeout=None))
    assert res.scores == [3.0, 3.0, 4.0, 4.0] and res.stats.retries == 2
    (sizing,) = res.stats.sizing
    assert sizing["timeout_adaptations"] == 1
    assert sizing["timeout_s"] == pytest.approx(0.6)
    assert sizing["start_concurrency"] == 4
    assert sizing["max_concurrency"] == 4 // 2 and sizing["concurrency_decreases"] == 1


def test_no_answer_within_the_first_wait_stops_the_batch_and_names_the_settings(monkeypatch, server):
    monkeypatch.setattr(judge_conf, "FIRST_TIMEOUT_S", 0.3)
    server.set_default(Stall(max_s=5))
    stats = JudgeStats()
    t0 = time.perf_counter()
    with pytest.raises(JudgeRequestError) as info:
        judge_scores([req(f"x{i}") for i in range(5)], (1, 5), cfg(server, timeout=None, logprobs="on"),
                     stats=stats)
    assert time.perf_counter() - t0 < 3
    msg = str(info.value)
    assert "judge_timeout / DOMSUM_JUDGE_TIMEOUT" in msg and "judge_concurrency" in msg and "0.3 s" in msg
    assert server.received == 5  # the first requests, once each: no retry after the first wait
    assert set(stats.failed) <= {"timeout", "abandoned"} and stats.failed["timeout"] >= 1
    assert sum(stats.failed.values()) == 5 and stats.accounted == stats.items == 5
    assert "giving up on the other -" not in msg


def test_in_flight_requests_bounded():
    with StubJudgeServer(latency_s=0.05) as srv:
        res = judge_scores([req(f"c{i}") for i in range(12)], (1, 5), cfg(srv, concurrency=3))
    assert res.n_scored == 12
    assert 2 <= srv.max_in_flight <= 3


def test_identical_requests_share_one_call(server):
    res = judge_scores([req("same")] * 4, (1, 5), cfg(server))
    assert res.scores == [3.0] * 4
    assert server.received == 1


def test_sync_entry_point_inside_running_loop(server):
    server.on(M("loop"), Text("5"))

    async def caller():
        return judge_scores([req("loop")], (1, 5), cfg(server))  # sync call, loop running

    assert asyncio.run(caller()).scores == [5.0]


def test_second_identical_run_served_from_cache(server, tmp_path):
    server.on(M("k1"), Text("4"))
    server.on(M("k2"), Logprobs({"2": 0.5, "3": 0.5}))
    server.on(M("k3"), Text("junk"))
    items = [req("k1"), req("k2"), req("k3")]
    first = judge_scores(items, (1, 5), cfg(server, tmp_path / "c.sqlite"))
    assert server.received == 4  # 3 + one parse retry
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 4
    server.reset_counts()
    second = judge_scores(items, (1, 5), cfg(server, tmp_path / "c.sqlite"))
    assert server.received == 0
    assert second.stats.http_calls == 0 and second.stats.cache_hits == 4
    assert second.scores == first.scores == [4.0, 2.5, None]
    assert second.stats.parse_failures == 1  # still reported
    assert second.stats.cached_prompt_tokens == first.stats.prompt_tokens
    assert second.stats.prompt_tokens == 0
    # a different model is a different answer: not served from this cache
    judge_scores(items[:1], (1, 5), cfg(server, tmp_path / "c.sqlite", model="other-judge"))
    assert server.received == 1


def test_interrupted_run_loses_no_answered_call(tmp_path):
    n = 24
    items = [req(f"i{k}") for k in range(n)]
    path = tmp_path / "interrupt.sqlite"
    with StubJudgeServer(latency_s=0.1, default=(Text("4"),)) as srv:
        config = cfg(srv, path, concurrency=4)
        stats = JudgeStats()

        async def interrupted():
            task = asyncio.ensure_future(judge_scores_async(items, (1, 5), config, stats=stats))
            while stats.answers < 6:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(interrupted())
        stored = len(open_cache(path))
        assert 6 <= stored < n
        assert stored == stats.answers  # every answer received was committed
        srv.reset_counts()
        res = judge_scores(items, (1, 5), config)
        assert res.scores == [4.0] * n
        assert srv.received == n - stored  # resumed: nothing answered was paid twice
        assert res.stats.cache_hits == stored


def test_ask_is_the_one_entry_for_ratings_and_texts(server, tmp_path):
    from custom_metrics.judge import ask

    server.on(M("rate"), Text("4"))
    server.on(M("word"), Text("Empirical."))
    config = cfg(server, tmp_path / "ask.sqlite")
    rated = ask(config, [req("rate")], scale=(1, 5))
    assert rated.scores == [4.0] and rated.stats.http_calls == 1 and rated.stats.scored == 1
    texts = ask(config, [req("word"), req("empty")], parse=lambda t: t.strip(".").lower() or None,
                score=lambda v: float(v == "empirical"), mode="label", generations=["a summary", " "])
    assert texts.values == ["empirical", None] and texts.scores == [1.0, None]
    assert texts.modes == ["label", None] and texts.reasons == [None, "empty"]
    assert texts.stats.empty_skipped == 1 and texts.stats.http_calls == 1
    again = ask(config, [req("rate")], scale=(1, 5), progress=False)
    assert again.scores == [4.0] and again.stats.http_calls == 0 and again.stats.cache_hits == 1
    for bad in ({}, {"scale": (1, 5), "parse": str}):
        with pytest.raises(ValueError, match="exactly one of scale= .* or parse="):
            ask(config, [req("rate")], **bad)


def test_adapteval_judge_end_to_end(server, tmp_path):
    server.on("Domain Adaptation (1-5):", Logprobs({"4": 0.5, "5": 0.5}))
    server.on("Coherence (1-5):", Text("4"))
    server.on("summary-two", Text("no idea"))  # fluency of the 2nd summary: unparseable
    server.on("Fluency (1-3):", Text("3"))
    docs = ["Randomised trial of drug A in 200 patients.", "Cohort study of statin use."]
    summs = ["summary-one: drug A reduced mortality.", "summary-two: statins were studied."]
    out = adapteval_judge(docs, summs, "pubmed", cfg(server, tmp_path / "a.sqlite"), prompt_variant="suite")
    assert out["per_item"]["domain_adaptation"] == [4.5, 4.5]
    # rules match in order: only the fluency request of summary-two hits "no idea"
    assert out["domain_adaptation"] == 4.5 and out["coherence"] == 4.0
    assert out["per_item"]["fluency"] == [3.0, None]
    assert out["fluency"] == 3.0 and out["parse_failures"] == {"domain_adaptation": 0, "coherence": 0,
                                                               "fluency": 1}
    assert out["judge_mode"] == {"domain_adaptation": "logprobs", "coherence": "logprobs",
                                 "fluency": "logprobs"}
    assert out["usage"]["http_calls"] == 7 and out["usage"]["prompt_tokens"] > 0
    assert out["judge"]["model"] == "stub-judge"


def test_rescore_cli(server, tmp_path):
    from lm_eval_tasks.commands.rescore import main

    samples = tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.123456.jsonl"
    rows = _write_samples(samples)
    server.on("unparseable-case", Text("??"))
    server.on("Fluency (1-3):", Text("2"))
    server.set_default(Text("4"))
    argv = [str(samples), "--metrics", "rouge,judge", "--out-dir", str(tmp_path / "out"),
            "--judge-model", "stub-judge", "--judge-base-url", server.url,
            "--judge-cache", str(tmp_path / "cli.sqlite"), "--judge-concurrency", "4"]
    assert main(argv) == 0
    scores = [json.loads(line) for line in
              (tmp_path / "out" / f"{samples.stem}.scores.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "out" / f"{samples.stem}.summary.json").read_text())
    assert [s["doc_id"] for s in scores] == [0, 1, 2]
    assert scores[2]["id"] == "adapteval/pubmed/test/2"
    assert scores[0]["prediction"] == "The inhibitor reduced tumour growth in mice."
    assert summary["task"] == "adapteval_pubmed" and summary["domain"] == "pubmed"

    from custom_metrics import rouge_scores

    preds = [r["filtered_resps"][0].strip() for r in rows]
    refs = [r["doc"]["summary"] for r in rows]
    expected = rouge_scores(preds, refs)
    for key in ("rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean"):
        assert summary["metrics"][key] == pytest.approx(expected[key])
    assert sum(s["rouge1"] for s in scores) / 3 == pytest.approx(expected["rouge1"])

    assert [s["coherence"] for s in scores] == [4.0, 4.0, None]
    assert [s["fluency"] for s in scores] == [2.0, 2.0, None]
    assert summary["metrics"]["coherence"] == 4.0 and summary["metrics"]["fluency"] == 2.0
    assert summary["judge"]["parse_failures"]["domain_adaptation"] == 1
    assert summary["judge"]["judge_mode"]["coherence"] == "logprobs"
    served = server.received
    # re-scoring again is free: every judge answer comes from the cache
    assert main([*argv, "--overwrite"]) == 0
    assert server.received == served

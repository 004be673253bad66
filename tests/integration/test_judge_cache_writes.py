"""The judge cache's writes gathered per turn of the event loop
(``custom_metrics.judge.writes``), against the stub server on 127.0.0.1.

Every statement the cache's connection runs is traced, so that the transactions are
read from what SQLite was told, not from the engine's own counts: the claims of the
first requests go in one transaction, answers share transactions with the claims of
the items that take their slots, and still every answer is committed, no claim is left
behind and a rerun pays nothing.
"""

from __future__ import annotations

import pytest

from custom_metrics.judge import config as judge_conf
from custom_metrics.judge import judge_scores
from custom_metrics.judge.cache import open_cache
from helpers.judge_server import StubJudgeServer, Text, clear_judge_env, rating_request, stub_config

_clean_judge_env = pytest.fixture(autouse=True, name="_clean_judge_env")(clear_judge_env)


def _transactions(statements: list[str]) -> list[list[str]]:
    """The statements between each ``BEGIN IMMEDIATE`` and its ``COMMIT``."""
    out: list[list[str]] = []
    current: list[str] | None = None
    for sql in statements:
        if sql.startswith("BEGIN"):
            current = []
        elif sql == "COMMIT":
            assert current is not None
            out.append(current)
            current = None
        elif current is not None:
            current.append(sql)
    return out


def test_answers_and_claims_share_transactions_and_every_answer_is_kept(tmp_path):
    n = 40
    items = [rating_request(f"w{i}") for i in range(n)]
    path = tmp_path / "judge.sqlite"
    cache = open_cache(path)
    statements: list[str] = []
    cache._conn.set_trace_callback(statements.append)
    try:
        with StubJudgeServer(latency_s=0.05, slots=4, default=(Text("4"),), time_limit_s=60) as srv:
            res = judge_scores(items, (1, 5), stub_config(srv, path, logprobs="off", n_samples=1))
            assert res.n_scored == n and res.stats.http_calls == n
            txs = _transactions(statements)
            claims = [sum(s.startswith("INSERT OR REPLACE INTO claims") for s in tx) for tx in txs]
            answers = [sum(s.startswith("INSERT OR REPLACE INTO answers") for s in tx) for tx in txs]
            # each item claimed once and answered once, in fewer transactions than the two per item before
            assert sum(claims) == n and sum(answers) == n
            assert len(txs) < 2 * n
            # the batch's first requests claim together (they take their slots in one turn)
            assert claims[0] == judge_conf.START_CONCURRENCY
            # an answer and the claim of the item that takes its slot: one transaction
            assert any(c and a for c, a in zip(claims, answers))
            assert len(cache) == n and cache.pending() == []  # all committed, no claim left behind
            statements.clear()
            again = judge_scores(items, (1, 5), stub_config(srv, path, logprobs="off", n_samples=1))
            assert again.stats.http_calls == 0 and again.stats.cache_hits == n
            assert again.scores == res.scores
            # served from the cache: no claim, no answer written (only the batch's end releasing its claims)
            assert not any(s.startswith("INSERT") for s in statements)
    finally:
        cache._conn.set_trace_callback(None)

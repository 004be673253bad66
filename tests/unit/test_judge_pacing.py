"""The judge's pacing (custom_metrics.judge.pacing) and estimate (custom_metrics.judge.budget),
without a server: the bound's moves and the estimate's arithmetic."""

from __future__ import annotations

import heapq
import math
from collections import deque

import pytest

from custom_metrics.judge import JudgeConfig, budget
from custom_metrics.judge import config as conf
from custom_metrics.judge.client import Slots
from custom_metrics.judge.pacing import Pacer


def test_slow_start_grows_by_one_per_fast_answer_while_slots_are_full():
    pacer = Pacer(Slots(8), None)
    for _ in range(8):
        pacer.on_answer(0.1, saturated=True)
    assert pacer.slots.limit == 16 and pacer.peak == 16


def test_no_growth_without_demand_and_a_queue_holds_the_bound():
    pacer = Pacer(Slots(8), None)
    pacer.on_answer(0.1, saturated=False)
    assert pacer.slots.limit == 8
    pacer.on_answer(0.1 * conf.LATENCY_TOLERANCE * 1.1, saturated=True)  # a queue: hold
    assert pacer.slots.limit == 8 and not pacer.slow_start
    for _ in range(8):  # after slow start: +1 per round trip (8 answers at 8 in flight)
        pacer.on_answer(0.1, saturated=True)
    assert pacer.slots.limit == 9


def test_congestion_halves_once_per_burst_and_a_set_bound_never_moves():
    pacer = Pacer(Slots(8), None)
    gen = pacer.generation
    assert pacer.on_congestion(gen) and pacer.slots.limit == 4
    assert not pacer.on_congestion(gen) and pacer.slots.limit == 4  # same burst: once
    assert pacer.on_congestion(pacer.generation) and pacer.slots.limit == 2 and pacer.decreases == 2
    fixed = Pacer(Slots(3), 3)
    fixed.on_answer(0.1, saturated=True)
    assert not fixed.on_congestion(0) and fixed.slots.limit == 3


def test_the_bound_stays_within_one_and_the_maximum():
    low = Pacer(Slots(1), None)
    low.on_congestion(0)
    assert low.slots.limit == 1
    pacer = Pacer(Slots(8), None)
    for _ in range(200):
        pacer.on_answer(0.1, saturated=True)
    assert pacer.slots.limit == conf.AUTO_CONCURRENCY_MAX


def test_the_first_wave_is_the_batch_up_to_the_ceiling_and_a_set_bound_is_kept():
    for items, wave in ((1, 1), (5, 5), (conf.START_CONCURRENCY, conf.START_CONCURRENCY),
                        (10 * conf.START_CONCURRENCY, conf.START_CONCURRENCY), (0, 1)):
        pacer = Pacer(Slots(conf.START_CONCURRENCY), None)
        pacer.first_wave(items)
        assert (pacer.slots.limit, pacer.start, pacer.peak) == (wave, wave, wave)
    fixed = Pacer(Slots(3), 3)
    fixed.first_wave(100)
    assert (fixed.slots.limit, fixed.start) == (3, 3)


def simulate(items: int, server_slots: int, latency: float) -> tuple[float, list[int]]:
    """The pacer of one batch against a model server, on a simulated clock: the client
    sends while a slot is free (as :class:`~custom_metrics.judge.client.Client` does,
    ``saturated`` as it reads it); the server answers ``server_slots`` requests at a time,
    each in ``latency``, the rest queued in order of arrival. Returns when the last
    answer came and the bound at the start and after each round trip (``latency``) but the last."""
    slots = Slots(conf.START_CONCURRENCY)
    pacer = Pacer(slots, None)
    pacer.first_wave(items)
    waiting, now, seq = items, 0.0, 0
    queued: deque[float] = deque()  # sent, waiting for a server slot: when sent
    serving: list[tuple[float, int, float]] = []  # (answered at, order, sent at)
    bounds = [slots.limit]

    def send() -> None:
        nonlocal waiting, seq
        while waiting and slots.in_use < slots.limit:
            waiting -= 1
            slots.in_use += 1
            queued.append(now)
        while queued and len(serving) < server_slots:
            seq += 1
            heapq.heappush(serving, (now + latency, seq, queued.popleft()))

    send()
    while serving:
        now, _, sent = heapq.heappop(serving)
        while now > len(bounds) * latency + 1e-9:  # the answers of round trip len(bounds) are in
            bounds.append(slots.limit)
        saturated = slots.in_use + waiting >= slots.limit
        slots.release()
        pacer.on_answer(now - sent, saturated)
        send()
    return now, bounds


@pytest.mark.parametrize("items", [96, 400])
def test_the_ramp_leaves_no_slot_of_a_batching_server_idle(items):
    """16 slots, 0.2 s each: the server is busy from the first request to the last, so the
    batch takes items / 16 round trips, the least any client can. (Starting at 8 and
    doubling per round trip left 8 slots idle in the first round trip: 96 items took 7
    round trips of 6, 1.3 s for 1.2 s.)"""
    finish, bounds = simulate(items, 16, 0.2)
    assert finish == pytest.approx(math.ceil(items / 16) * 0.2)
    assert bounds[0] == conf.START_CONCURRENCY and max(bounds) <= conf.AUTO_CONCURRENCY_MAX


def test_the_ramp_doubles_each_round_trip_against_a_wider_server():
    """A server wider than the first wave answers the whole wave near the fastest latency:
    the bound doubles in that round trip (to the most pacing allows), not +1 per round trip."""
    start = conf.START_CONCURRENCY
    finish, bounds = simulate(3 * start, 128, 0.2)
    assert bounds[:2] == [start, min(2 * start, conf.AUTO_CONCURRENCY_MAX)]
    assert finish == pytest.approx(0.2 + math.ceil(2 * start / bounds[1]) * 0.2)  # the wave, then the rest


def test_the_ramp_keeps_a_one_at_a_time_server_busy_and_holds_its_bound():
    """One slot: from the second answer on, each comes a latency later than the one
    before (a queue), so the bound holds at the first wave; the server never idles."""
    finish, bounds = simulate(100, 1, 0.02)
    assert finish == pytest.approx(100 * 0.02)
    assert max(bounds) <= conf.START_CONCURRENCY + 1  # the first answer, the fastest, adds one


def test_estimate_counts_uncached_unique_requests_tokens_and_cost():
    budget.reset()
    config = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1", price_prompt=1.0, price_completion=2.0,
                         max_requests=10)
    msgs = [[{"role": "user", "content": "x" * 40}]] * 3 + [[{"role": "user", "content": "y" * 80}]]
    keys = ["a", "a", "b", "c"]  # the first two are one request
    est = budget.estimate(config, msgs, {"max_tokens": 5, "n": 1}, keys, {"b"}, "t")
    # a (once) and c: 40/4 + 4 and 80/4 + 4 prompt tokens; 2 x 5 completion tokens
    assert (est["requests"], est["items_cached"]) == (2, 2)
    assert est["requests_at_most"] == 2 * 2 and not est["fallback"]  # one re-ask each, n 1
    assert (est["prompt_tokens"], est["completion_tokens"]) == (14 + 24, 10)
    assert est["cost"] == pytest.approx(38 / 1000 * 1.0 + 10 / 1000 * 2.0)
    assert est["requests_left"] == 10 and "10 of judge_max_requests (10) left" in budget.estimate_line(config, est)


def test_a_server_known_to_ignore_n_multiplies_the_estimate_and_the_cap_stops_requests():
    budget.reset()
    config = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1", max_requests=2)
    budget.note_short_choices(config, 1)
    est = budget.estimate(config, [[{"role": "user", "content": "z"}]], {"max_tokens": 5, "n": 20}, ["k"], set(), "t")
    assert est["requests_per_item"] == 20 and est["requests"] == 20 and est["completion_tokens"] == 100
    assert est["requests_at_most"] == 2 * 20
    budget.take(config)
    budget.take(config)
    with pytest.raises(budget.BudgetExhausted):
        budget.take(config)
    assert budget.spent() == 2
    budget.reset()


def test_the_bound_assumes_one_choice_per_request_until_the_server_is_known_and_counts_the_probe():
    budget.reset()
    config = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1")
    msgs = [[{"role": "user", "content": "z"}]] * 4
    sampled = {"max_tokens": 5, "n": 5}
    est = budget.estimate(config, msgs, sampled, ["a", "b", "c", "d"], set(), "t")
    # unknown server: 4 first requests; at most 4 items x 5 single-choice requests x 2 attempts
    assert (est["requests"], est["requests_at_most"]) == (4, 40)
    assert "at most 40 if every reply is asked again, one choice per request" in budget.estimate_line(config, est)
    probe = budget.estimate(config, msgs, {"max_tokens": 5, "n": 1, "logprobs": True}, ["a", "b", "c", "d"],
                            {"d"}, "t", fallback=sampled)
    # 3 uncached items: log-probabilities first; at most a probe and then 3 x 5 x 2 sampled requests
    assert (probe["requests"], probe["requests_at_most"], probe["fallback"]) == (3, 31, True)
    assert "and the endpoint has no log-probabilities" in budget.estimate_line(config, probe)
    budget.note_short_choices(config, 5)  # a server known to return every choice asked
    assert budget.estimate(config, msgs, sampled, ["a", "b", "c", "d"], set(), "t")["requests_at_most"] == 8
    budget.reset()

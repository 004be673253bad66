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
        pacer.on_answer(0.1, saturated=True, posted=pacer.slots.limit)
    assert pacer.slots.limit == 16 and pacer.peak == 16


def test_no_growth_without_demand_and_a_queue_holds_the_bound():
    pacer = Pacer(Slots(8), None)
    pacer.on_answer(0.1, saturated=False, posted=pacer.slots.limit)
    assert pacer.slots.limit == 8
    pacer.on_answer(0.1 * conf.LATENCY_TOLERANCE * 1.1, saturated=True, posted=8)  # a queue: hold
    assert pacer.slots.limit == 8 and not pacer.slow_start
    for _ in range(8):  # after slow start: +1 per round trip (8 answers at 8 in flight)
        pacer.on_answer(0.1, saturated=True, posted=pacer.slots.limit)
    assert pacer.slots.limit == 9


def test_congestion_halves_once_per_burst_and_a_set_bound_never_moves():
    pacer = Pacer(Slots(8), None)
    gen = pacer.generation
    assert pacer.on_congestion(gen) and pacer.slots.limit == 4
    assert not pacer.on_congestion(gen) and pacer.slots.limit == 4  # same burst: once
    assert pacer.on_congestion(pacer.generation) and pacer.slots.limit == 2 and pacer.decreases == 2
    fixed = Pacer(Slots(3), 3)
    fixed.on_answer(0.1, saturated=True, posted=3)
    assert not fixed.on_congestion(0) and fixed.slots.limit == 3


def test_the_bound_stays_within_one_and_the_maximum():
    low = Pacer(Slots(1), None)
    low.on_congestion(0)
    assert low.slots.limit == 1
    pacer = Pacer(Slots(8), None)
    for _ in range(200):
        pacer.on_answer(0.1, saturated=True, posted=pacer.slots.limit)
    assert pacer.slots.limit == conf.AUTO_CONCURRENCY_MAX


def test_the_first_wave_widens_to_the_batch_until_the_first_answer_and_a_set_bound_is_kept():
    start, most = conf.START_CONCURRENCY, conf.FIRST_WAVE_MAX
    for items in (0, 1, 5, start, start + 3, most, 10 * most):
        pacer = Pacer(Slots(start), None)
        pacer.first_wave(items)
        opened = min(start, max(1, items))
        assert (pacer.slots.limit, pacer.start, pacer.peak) == (opened, opened, opened)
        steps = []
        while pacer.widen():
            steps.append(pacer.slots.limit)
        assert pacer.slots.limit == pacer.start == min(most, max(1, items))
        assert all(b == min(2 * a, pacer.wave) for a, b in zip([opened] + steps, steps + [pacer.slots.limit]))
    answered = Pacer(Slots(start), None)
    answered.first_wave(10 * most)
    answered.on_answer(0.1, saturated=True, posted=1)
    assert not answered.widen() and answered.slots.limit == start + 1  # the first answer ends the widening
    congested = Pacer(Slots(start), None)
    congested.first_wave(10 * most)
    congested.on_congestion(congested.generation)
    assert not congested.widen() and congested.slots.limit == start // 2  # so does a 429/503
    fixed = Pacer(Slots(3), 3)
    fixed.first_wave(100)
    assert not fixed.widen() and (fixed.slots.limit, fixed.start) == (3, 3)


def simulate(items: int, server_slots: int, latency: float) -> tuple[float, list[int], Pacer]:
    """The pacer of one batch against a model server, on a simulated clock: the client
    sends while a slot is free (as :class:`~custom_metrics.judge.client.Client` does,
    ``saturated`` and ``posted`` as it reads them) and widens the first wave every
    ``FIRST_WAVE_STEP_S``; the server answers ``server_slots`` requests at a time, each
    in ``latency``, the rest queued in order of arrival. Returns when the last answer
    came, the bound at the start and after each round trip (``latency``) but the last,
    and the pacer."""
    slots = Slots(conf.START_CONCURRENCY)
    pacer = Pacer(slots, None)
    pacer.first_wave(items)
    waiting, now, seq = items, 0.0, 0
    queued: deque[tuple[float, int]] = deque()  # sent, waiting for a server slot: (when sent, posted)
    events: list[tuple[float, int, float, int]] = [(conf.FIRST_WAVE_STEP_S, 0, 0.0, 0)]  # (when, order, sent, posted)
    serving = 0  # server slots busy
    bounds = [slots.limit]

    def send() -> None:
        nonlocal waiting, seq, serving
        while waiting and slots.in_use < slots.limit:
            waiting -= 1
            slots.in_use += 1
            queued.append((now, slots.in_use))
        while queued and serving < server_slots:
            seq += 1
            serving += 1
            heapq.heappush(events, (now + latency, seq, *queued.popleft()))

    send()
    while events:
        now, order, sent, posted = heapq.heappop(events)
        while now > len(bounds) * latency + 1e-9:  # the answers of round trip len(bounds) are in
            bounds.append(slots.limit)
        if order == 0:  # the first wave's widening step
            if pacer.widen():
                heapq.heappush(events, (now + conf.FIRST_WAVE_STEP_S, 0, 0.0, 0))
        else:
            serving -= 1
            saturated = slots.in_use + waiting >= slots.limit
            slots.release()
            pacer.on_answer(now - sent, saturated, posted)
        send()
    return now, bounds, pacer


@pytest.mark.parametrize("items", [96, 400])
def test_the_ramp_leaves_a_batching_server_idle_one_step_at_most(items):
    """16 slots, 0.2 s each: the first wave (8) widens to 16 after one step (0.1 s), to 32
    after two, before the first answer, so half the slots idle for one step and then
    none: the batch takes items / 16 round trips and one step, where the least any client
    can is items / 16 round trips. (Starting at 8 and doubling only per round trip left
    8 slots idle for the whole first round trip, then under-filled the second: 96 items
    took 1.4 s for 1.2 s.) The overshoot (+1 for each of the answers the server gives at
    once) is trimmed to twice the width after a round trip of queued answers."""
    assert 16 <= 2 * conf.START_CONCURRENCY and 2 * conf.FIRST_WAVE_STEP_S <= 0.2
    finish, bounds, pacer = simulate(items, 16, 0.2)
    least = math.ceil(items / 16) * 0.2
    assert least <= finish <= least + conf.FIRST_WAVE_STEP_S + 1e-9
    assert pacer.start == conf.FIRST_WAVE_MAX
    assert max(bounds) <= conf.AUTO_CONCURRENCY_MAX
    if items > 200:  # trimmed below the overshoot, to about twice the width (+1 per round trip after)
        assert round(conf.QUEUE_GAIN * 16) <= bounds[-1] <= round(conf.QUEUE_GAIN * 16) + 1 < max(bounds)


def test_the_ramp_doubles_each_round_trip_against_a_wider_server():
    """A server wider than the first wave answers the whole wave near the fastest latency:
    the bound doubles as the wave's answers come (to the most pacing allows), not +1 per
    round trip."""
    most, doubled = conf.FIRST_WAVE_MAX, min(2 * conf.FIRST_WAVE_MAX, conf.AUTO_CONCURRENCY_MAX)
    latency = 2 * conf.FIRST_WAVE_STEP_S  # slow enough for the wave to widen to its most
    finish, bounds, pacer = simulate(3 * most, 128, latency)
    assert pacer.start == most and bounds[2] >= doubled
    assert finish <= 3 * latency + 1e-9  # the first wave, the widened one and the doubled one


def test_the_ramp_keeps_a_one_at_a_time_server_busy_and_trims_its_queue():
    """One slot, slower than a widening step: the first wave widens to 32; from the second
    answer on, each comes a latency later than the one before (a queue), so the bound holds,
    and once a round trip of answers has shown the queue it is trimmed to the floor. The
    server never idles."""
    latency = 2.5 * conf.FIRST_WAVE_STEP_S  # two widening steps before the first answer
    finish, bounds, pacer = simulate(100, 1, latency)
    assert finish == pytest.approx(100 * latency)
    assert pacer.start == conf.FIRST_WAVE_MAX and max(bounds) <= conf.FIRST_WAVE_MAX + 1
    assert pacer.trims >= 1 and bounds[-1] == conf.QUEUE_FLOOR


def test_a_server_that_answers_within_a_step_gets_no_deep_queue():
    """One slot, 20 ms a request: the first answer comes before the first widening step,
    so the wave stays at its start and the queue never deepens (more in flight would
    cost a burst of connections and a deeper queue for nothing)."""
    assert 0.02 < conf.FIRST_WAVE_STEP_S / 2
    finish, bounds, pacer = simulate(100, 1, 0.02)
    assert finish == pytest.approx(100 * 0.02)
    assert pacer.start == conf.START_CONCURRENCY and max(bounds) <= conf.START_CONCURRENCY + 1


def _widened(items: int = 10_000) -> Pacer:
    pacer = Pacer(Slots(conf.START_CONCURRENCY), None)
    pacer.first_wave(items)
    while pacer.widen():
        pass
    return pacer


def test_a_latency_that_varies_without_a_queue_does_not_trim():
    """Answers from 1x to 3x the fastest latency in no relation to the requests in flight
    (a hosted API): in each round trip one answer near the fastest shows the bound served
    at once, so the bound is never trimmed; a queue (every answer slower in proportion to
    its place) is."""
    pacer = _widened()
    limit = pacer.slots.limit
    for i in range(20 * limit):
        pacer.on_answer(0.1 * (1 + (i * 7 % 11) / 5), saturated=True, posted=pacer.slots.limit)
    assert pacer.trims == 0 and pacer.slots.limit >= limit
    queue = _widened()
    queue.on_answer(0.1, saturated=True, posted=1)
    for k in range(2, 3 * limit):  # a one-at-a-time server: the k-th posted answers after k latencies
        queue.on_answer(0.1 * min(k, queue.slots.limit), saturated=True, posted=min(k, queue.slots.limit))
    assert queue.trims >= 1 and queue.slots.limit == conf.QUEUE_FLOOR


def test_no_trim_without_requests_waiting():
    """At the batch's end (no request waits for a slot) ``posted`` is the demand left, not
    the server's width: slow answers then trim nothing."""
    pacer = _widened()
    pacer.on_answer(0.1, saturated=True, posted=1)
    for k in range(2, 3 * pacer.slots.limit):
        pacer.on_answer(0.1 * k, saturated=False, posted=1)
    assert pacer.trims == 0 and pacer.slots.limit == conf.FIRST_WAVE_MAX + 1


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

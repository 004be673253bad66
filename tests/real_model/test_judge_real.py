"""The LLM judge against a real, slow, imperfect server: SmolLM2-135M-Instruct under
``transformers serve`` (the session fixture ``smollm2_server``).

What the stub server cannot show: a real OpenAI-compatible server that ignores ``n``
(one choice per reply, whatever is asked), omits log-probabilities, answers one
request at a time at CPU speed, and a judge model too weak to follow the rating
instructions, whose replies are mostly unparsable. FM with given reference facets
(candidate extraction and facet rating) and sampled scoring run here as library calls
with the default timeout, concurrency, retries and log-probability setting (sized from
the first request's latency); the AdaptEval judge, FM from raw references and the
CCSBench focus judge run through the ``lm_eval`` CLI in ``test_real_judged.py``. Every
test checks the accounting, not the model:

* every item is scored or counted as a failure with a reason (scored + failed = total);
* the requests the judge counted (``http_calls``) equal the requests the server logged
  (``Served.requests_logged``);
* the server's single choice per sampled reply is recorded (``choices_short``) and
  made up with single-choice requests (``sample_topups``).

Cost: ``judge_n_samples`` is 3 (each sample is a separate ~0.6 s request on this
server) and replies are short; the file takes well under a minute after the server
is up.
"""

from __future__ import annotations

import pytest
from helpers.judge_server import clear_judge_env

from custom_metrics.judge.fm import FACETS, fm_scores
from custom_metrics.judge import JudgeConfig, JudgeStats, judge_scores
from custom_metrics.judge.config import AUTO_CONCURRENCY_MAX, AUTO_TIMEOUT_FLOOR_S, FIRST_WAVE_MAX
from lm_eval_tasks.settings import judge_config

N_SAMPLES = 3

DOCUMENTS = [
    "Randomised trial of drug A in 200 adults with hypertension. Drug A lowered systolic blood pressure "
    "by 12 mmHg versus placebo over 12 weeks; adverse events were similar.",
    "Cohort study of 50 students using wrist actigraphy. Students slept 6.1 hours a night on average, "
    "and short sleep was linked to lower grades.",
]
SUMMARIES = ["Drug A lowered blood pressure in a trial of 200 adults.",
             "Short sleep went with lower grades in 50 students."]
#: ScholarSum-style rows: a reference abstract with its facet segments (``ground_aspect``)
REFERENCE_FACETS = [
    {"background": "Hypertension is common.", "method": "200 adults were randomised to drug A or placebo.",
     "result": "Systolic pressure fell by 12 mmHg.", "conclusion": "Drug A lowers blood pressure."},
    {"background": "Sleep may affect learning.", "method": "Wrist actigraphy in 50 students.",
     "result": "Students slept 6.1 hours on average.", "conclusion": "Short sleep goes with lower grades."},
]
REFERENCES = [" ".join(f[k] for k in FACETS) for f in REFERENCE_FACETS]


@pytest.fixture
def config(smollm2_server, tmp_path, monkeypatch) -> JudgeConfig:
    """The judge as a user configures it (metadata through the settings resolver):
    model and endpoint, a fresh cache, fewer samples; everything else the default."""
    clear_judge_env(monkeypatch)
    cfg = judge_config({"judge_model": smollm2_server.model, "judge_base_url": smollm2_server.base_url,
                        "judge_cache": str(tmp_path / "judge.sqlite"), "judge_n_samples": N_SAMPLES,
                        "progress": False})
    assert cfg is not None and cfg.timeout is None and cfg.concurrency is None  # sized, not fixed
    assert cfg.logprobs == "auto" and cfg.max_retries == JudgeConfig.__dataclass_fields__["max_retries"].default
    return cfg


def check_accounting(stats: JudgeStats | dict, logged: int) -> dict:
    """The invariants every entry point must keep against this server; returns the stats dict."""
    st = stats.as_dict() if isinstance(stats, JudgeStats) else stats
    failed = {k: v for k, v in st["failed"].items() if k not in ("parse", "empty_skipped")}
    assert st["scored"] + st["parse_failures"] + sum(failed.values()) + st["empty_skipped"] == st["items"]
    assert st["http_calls"] == logged, "the judge's request count differs from the server's log"
    # a local model answering in seconds: the sized 60 s timeout never fires, nothing is retried
    assert failed == {} and st["retries"] == 0 and st["answers"] == st["http_calls"]
    for batch in st["sizing"]:
        assert batch["timeout_source"] == batch["concurrency_source"] == "auto"
        assert batch["floor_latency_s"] > 0 and batch["timeout_s"] >= AUTO_TIMEOUT_FLOOR_S
        assert 1 <= batch["start_concurrency"] <= FIRST_WAVE_MAX  # no serial probe: several from the start
        assert 1 <= batch["max_concurrency"] <= AUTO_CONCURRENCY_MAX
    assert sum(b["requests"] for b in st["sizing"]) == st["http_calls"]
    # the server answers one choice per request: each sampled reply lacks n - 1, asked one by one
    assert st["choices_missing"] == st["sample_topups"] == (N_SAMPLES - 1) * st["choices_short"]
    return st


def test_fm_on_two_scholarsum_rows_with_defaults(config, smollm2_server):
    before = smollm2_server.requests_logged()
    out = fm_scores(REFERENCES, SUMMARIES, config, reference_facets=REFERENCE_FACETS, extract_max_tokens=32)
    st = check_accounting(out["usage"], smollm2_server.requests_logged() - before)
    fm_kinds = {"reference_extraction", "candidate_extraction", "no_reference_facets", "rating"}
    for item in out["per_item"]:
        assert (item["fm"] is None) == (item["failure"] in fm_kinds)
        assert (item["failure"] is None) == (item["reason"] is None)
        assert (item["fm_vanilla"] is None) == (item["vanilla_failure"] is not None)
    assert out["n_scored"] + sum(out["failures"][k] for k in fm_kinds) == 2
    assert out["n_scored_vanilla"] + out["vanilla_failures"] == 2
    # what the harness reports as fm_failures: one per pair with any failure, never 0 when FM failed
    fm_failures = sum(item["failure"] is not None for item in out["per_item"])
    assert fm_failures == sum(out["failures"].values())
    assert out["errors"] == []
    # two candidates extracted (each maybe asked twice), no reference extraction (given)
    assert st["items"] >= 2 + 2


def test_samples_mode_records_the_servers_single_choice(config, smollm2_server):
    """n > 1 against a server that answers one choice: the shortfall is recorded and
    made up, so each score is the mean of N_SAMPLES replies."""
    import dataclasses

    sampled = dataclasses.replace(config, logprobs="off")
    request = [{"role": "user", "content": "Rate this summary from 1 to 5. Summary: cats are nice. Score (1-5):"}]
    before = smollm2_server.requests_logged()
    res = judge_scores([request], (1, 5), sampled)
    st = check_accounting(res.stats, smollm2_server.requests_logged() - before)
    attempts = 1 + st["parse_retries"]
    assert st["choices_short"] == attempts and st["sample_topups"] == (N_SAMPLES - 1) * attempts
    assert st["http_calls"] == N_SAMPLES * attempts
    # the replies scored: N_SAMPLES of the attempt that scored, or of both attempts when none did
    assert len(res.replies[0]) == (N_SAMPLES if res.scores[0] is not None else 2 * N_SAMPLES)
    assert (res.scores[0] is None) == (res.reasons[0] == "parse")
    assert "fewer choices than asked" in res.stats.summary_line()

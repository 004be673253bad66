"""FM (facet matching) against the stub OpenAI-compatible judge server on 127.0.0.1."""

from __future__ import annotations

import json
import math

import pytest
from helpers.judge_server import StubJudgeServer, Text

from custom_metrics.judge.fm import FACETS, fm_scores
from custom_metrics.judge import JudgeConfig
from helpers.fm import JUDGE_ENV


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


def cfg(srv, **kw):
    base = dict(model="stub-judge", base_url=srv.url, api_key="test", cache=None,
                backoff_base_s=0.01, backoff_cap_s=0.05, timeout=5.0, progress=False)
    base.update(kw)
    return JudgeConfig(**base)


REF = "REFERENCE-ABSTRACT about drug X."
CAND = "CANDIDATE-ONE about drug X."
CAND_BAD = "CANDIDATE-GARBAGE abstract."
REF_FACETS = {"background": "ref bg", "method": "ref method", "result": "ref result", "conclusion": ""}
CAND_FACETS = {"background": "cand bg", "method": "cand method", "result": "", "conclusion": "cand concl"}


def _script(srv):
    srv.on("Input: " + REF, Text("```json\n" + json.dumps(REF_FACETS) + "\n```"))
    srv.on("Input: " + CAND, Text("Here you go: " + json.dumps(CAND_FACETS)))
    srv.on("Input: " + CAND_BAD, Text("Sorry, I cannot extract that."))
    srv.on("Input1: 'ref bg'", Text("3"))
    srv.on("Input1: 'ref method'", Text("2"))
    srv.on("Input1: '" + REF, Text("3"))  # vanilla
    srv.set_default(Text("1"))


def test_fm_scores_against_stub():
    with StubJudgeServer(time_limit_s=60) as srv:
        _script(srv)
        out = fm_scores([REF, REF], [CAND, CAND_BAD], cfg(srv))
    good, bad = out["per_item"]
    # background 3/3, method 2/4, result missing in candidate -> 1/4, conclusion absent in reference -> 0
    assert good["ratings"] == {"background": 3.0, "method": 2.0, "result": 1.0, "conclusion": None}
    assert good["fractions"] == pytest.approx([1.0, 0.5, 0.25, 0.0])
    assert good["fm"] == pytest.approx((0.1 * 1 + 0.3 * 0.5 + 0.3 * 0.25) / 0.7)
    assert good["reference_facets"] == REF_FACETS and good["candidate_facets"] == CAND_FACETS
    assert good["fm_vanilla"] == pytest.approx(0.75)
    # the non-JSON reply: retried once, then a counted failure, never a 0
    assert bad["fm"] is None and bad["failure"] == "candidate_extraction"
    assert out["failures"]["candidate_extraction"] == 1
    assert out["usage"]["parse_failures"] >= 1 and out["usage"]["parse_retries"] >= 1
    assert out["n_scored"] == 1 and out["fm"] == pytest.approx(good["fm"])


def test_fm_reference_extraction_deduplicated_and_empty_candidate():
    with StubJudgeServer(time_limit_s=60) as srv:
        _script(srv)
        out = fm_scores([REF, REF, REF], [CAND, CAND, ""], cfg(srv), vanilla=False)
        ext_calls = sum("Input: " in m["content"] for b in srv.bodies for m in b["messages"])
    assert ext_calls == 2  # one per distinct non-empty abstract; the empty one costs nothing
    empty = out["per_item"][2]
    # empty candidate: every facet the reference has gets the lowest rating
    assert empty["fractions"] == pytest.approx([1 / 3, 0.25, 0.25, 0.0])
    assert out["fm_vanilla"] is None


def test_fm_few_variant_and_reference_facets_given():
    with StubJudgeServer(time_limit_s=60) as srv:
        _script(srv)
        out = fm_scores(["any"], [CAND], cfg(srv), variant="few", vanilla=False,
                        reference_facets=[REF_FACETS])
        assert any("Example 1" in m["content"] for b in srv.bodies for m in b["messages"])
    assert out["per_item"][0]["fm"] is not None


def test_second_run_served_from_cache(tmp_path):
    with StubJudgeServer(time_limit_s=60) as srv:
        _script(srv)
        c = cfg(srv, cache=str(tmp_path / "j.sqlite"))
        first = fm_scores([REF], [CAND], c)
        n = srv.received
        second = fm_scores([REF], [CAND], c)
        assert srv.received == n
    assert second["per_item"][0]["fm"] == pytest.approx(first["per_item"][0]["fm"])
    assert FACETS == ("background", "method", "result", "conclusion")


def test_rescore_fm_and_vanilla(tmp_path, monkeypatch):
    """domsum rescore --metrics fm,fm_vanilla on a --log_samples file."""
    from lm_eval_tasks.commands.rescore import main

    rows = [(0, CAND, REF), (1, CAND_BAD, REF), (2, "", REF)]
    samples = tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.123456.jsonl"
    samples.write_text("".join(json.dumps({
        "doc_id": i, "doc": {"id": f"adapteval/pubmed/test/{i}", "document": "doc", "summary": ref},
        "target": ref, "resps": [[pred]], "filtered_resps": [pred], "filter": "none"}) + "\n"
        for i, pred, ref in rows))
    with StubJudgeServer(time_limit_s=60) as srv:
        _script(srv)
        argv = [str(samples), "--metrics", "fm,fm_vanilla", "--out-dir", str(tmp_path / "out"),
                "--judge-model", "stub-judge", "--judge-base-url", srv.url, "--judge-cache", "off"]
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        assert main(argv) == 0
    scores = [json.loads(line) for line in (tmp_path / "out" / f"{samples.stem}.scores.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "out" / f"{samples.stem}.summary.json").read_text())
    good = (0.1 * 1 + 0.3 * 0.5 + 0.3 * 0.25) / 0.7
    empty = (0.1 / 3 + 0.3 * 0.25 + 0.3 * 0.25) / 0.7
    assert scores[0]["fm"] == pytest.approx(good) and scores[0]["fm_detail"]["ratings"]["method"] == 2.0
    assert scores[1]["fm"] is None and scores[1]["fm_detail"]["failure"] == "candidate_extraction"
    assert scores[2]["fm"] == pytest.approx(empty)
    assert summary["metrics"]["fm"] == pytest.approx((good + empty) / 2)
    assert summary["fm_judge"]["failures"]["candidate_extraction"] == 1
    assert scores[0]["fm_vanilla"] == pytest.approx(0.75)


def test_vanilla_only_makes_no_facet_calls():
    with StubJudgeServer(time_limit_s=60) as srv:
        _script(srv)
        out = fm_scores([REF], [CAND], cfg(srv), facets=False)
        assert not any("of this work" in m["content"] for b in srv.bodies for m in b["messages"])
        with pytest.raises(ValueError):
            fm_scores([REF], [CAND], cfg(srv), facets=False, vanilla=False)
    assert out["fm"] is None and out["fm_vanilla"] == pytest.approx(0.75)


CAND_STALL = "CANDIDATE-STALL abstract."
CAND_OFF = "CANDIDATE-OFFSCALE abstract."
OFF_FACETS = {"background": "off bg", "method": "off method", "result": "off result", "conclusion": ""}


def test_fm_counts_timeouts_and_garbage_exactly():
    """One stalled extraction, one garbage extraction, one rating on another scale
    ("5/10" on 1-4) and one vanilla "-1": each counted once, with its reason, and the
    requests counted equal the requests the server saw."""
    from helpers.judge_server import Stall

    with StubJudgeServer(time_limit_s=60) as srv:
        srv.on("Input: " + REF, Text(json.dumps(REF_FACETS)))
        srv.on("Input: " + CAND, Text(json.dumps(CAND_FACETS)))
        srv.on("Input: " + CAND_STALL, Stall(max_s=5))
        srv.on("Input: " + CAND_BAD, Text("Sorry, I cannot extract that."))
        srv.on("Input: " + CAND_OFF, Text(json.dumps(OFF_FACETS)))
        srv.on("Input2: 'off method'", Text("5/10"))
        srv.on("Input2: '" + CAND_BAD, Text("-1"))  # its vanilla rating
        srv.set_default(Text("3"))
        out = fm_scores([REF] * 4, [CAND, CAND_STALL, CAND_BAD, CAND_OFF], cfg(srv, timeout=0.4, max_retries=1))
        received = srv.received
    good, stall, bad, off = out["per_item"]
    assert good["failure"] is None and good["fm"] is not None and good["fm_vanilla"] == pytest.approx(0.75)
    assert (stall["failure"], stall["reason"]) == ("candidate_extraction", "timeout")
    assert (bad["failure"], bad["reason"], bad["vanilla_failure"]) == ("candidate_extraction", "parse", "parse")
    assert (off["failure"], off["reason"], off["ratings"]["method"]) == ("rating", "parse", None)
    assert out["failures"] == {"reference_extraction": 0, "candidate_extraction": 2, "no_reference_facets": 0,
                               "rating": 1, "vanilla_rating": 0}
    assert out["n_scored"] == 1 and out["n_scored_vanilla"] == 3 and out["vanilla_failures"] == 1
    assert out["n_scored"] + sum(out["failures"].values()) == 4  # scored + failed = pairs
    usage = out["usage"]
    assert usage["failed"]["timeout"] == 1 and usage["failed_tries"]["timeout"] == 2
    assert usage["parse_failures"] == 3  # the garbage extraction, the 5/10 rating, the -1 vanilla
    assert usage["scored"] + usage["parse_failures"] + 1 + usage["empty_skipped"] == usage["items"]
    # extraction: ref 1 + cand 1 + stall 2 + bad 2 + off 1; ratings: good 2 + off 3 + the 5/10 again;
    # vanilla: 4 + the -1 again
    assert usage["http_calls"] == received == 7 + 6 + 5
    assert out["errors"] == []


def test_fm_endpoint_that_stops_answering_counts_every_pair(caplog):
    """Every candidate extraction times out: the judge stops the batch; FM does not
    crash (which left fm_failures at 0) nor report "the other -1": both pairs fail
    with reason "timeout", the vanilla step is not sent, the error names the setting."""
    import logging

    from helpers.judge_server import Stall

    from custom_metrics.judge import JudgeStats
    from custom_metrics.registry import Batch, Context, aggregate, get

    with StubJudgeServer(time_limit_s=60) as srv:
        srv.on("Input: " + REF, Text(json.dumps(REF_FACETS)))
        srv.on("Input: CANDIDATE", Stall(max_s=5))
        srv.set_default(Text("3"))
        stats = JudgeStats()
        ctx = Context(settings={"fm_variant": "zero"}, judge=cfg(srv, timeout=0.3, max_retries=0),
                      options={"judge_stats": stats})
        family = get("fm")
        with caplog.at_level(logging.ERROR, logger="custom_metrics.judge.fm"):
            values = family.score(Batch(predictions=[CAND, CAND_BAD], references=[REF, REF],
                                        documents=["d", "d"]), ctx)
        received = srv.received
    assert values["fm_failures"] == [1.0, 1.0] and aggregate(family, "fm_failures", values["fm_failures"], ctx) == 2
    assert all(math.isnan(v) for v in values["fm"] + values["fm_vanilla"])
    assert received == 3 == stats.http_calls  # the reference once, each candidate once; no vanilla
    assert stats.failed == {"timeout": 2} and stats.accounted == stats.items == 3
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "judge_timeout / DOMSUM_JUDGE_TIMEOUT" in logged and "-1" not in logged
    assert ctx.record["fm_failures_by_kind"]["candidate_extraction"] == 2


def test_fm_reference_without_facets_is_a_counted_failure():
    with StubJudgeServer(time_limit_s=60) as srv:
        srv.on("Input: " + REF, Text(json.dumps(dict.fromkeys(FACETS, ""))))  # valid JSON, no facet
        srv.set_default(Text("3"))
        out = fm_scores([REF, ""], [CAND, CAND], cfg(srv))
        # no candidate extraction where FM cannot exist
        assert not any("Input: " + CAND in m["content"] for b in srv.bodies for m in b["messages"])
    assert [p["failure"] for p in out["per_item"]] == ["no_reference_facets", "no_reference_facets"]
    assert out["per_item"][1]["vanilla_failure"] == "empty_reference"
    assert out["n_scored"] == 0 and out["failures"]["no_reference_facets"] == 2

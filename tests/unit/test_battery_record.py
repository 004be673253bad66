"""A benchmark's battery is what its record lists: the optional families and the settings row
that picks among them. Harness scoring reads both from the task's record (no benchmark or
setting named in the harness), the metric library learns it from ``Context.battery``, and
the record fields a family reads come from the families' own records (``Family.fields``)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from custom_metrics import battery, registry
from custom_metrics.families.bleu import sentence_bleu_scores
from custom_metrics.families.ccs import keyword_success_rate
from custom_metrics.families.rouge import rouge_scores
from custom_metrics.hf_models import ModelUnavailable
from custom_metrics.setting import Setting
from lm_eval_tasks import settings
from lm_eval_tasks.benchmarks.medqsum import BENCHMARK as MEDQSUM_BENCHMARK
from lm_eval_tasks.benchmarks.record import Benchmark, TaskSpec, Variant
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS
from lm_eval_tasks.harness_parts.scoring import ShardScoring

#: the settings row the toy benchmark's family choice is (a row the settings table holds)
CHOICE = MEDQSUM_BENCHMARK.family_choice
TOY = Benchmark(name="toybattery", title="Toy", citation="none", version=1.0, subsets=("x",),
                families=("rouge", "bleu", "chrf"), variants=(Variant(0),), max_gen_toks=8, until=("\n",),
                settings=(CHOICE,), optional_families=("bleu", "chrf"), family_choice=CHOICE)
DOCS = {("0", "the cat sat on a mat"): {"summary": "the cat sat on the mat", "document": "a cat. a mat."},
        ("1", "dogs bark loudly"): {"summary": "the dogs bark at night", "document": "dogs. night."}}


@pytest.fixture
def toy(monkeypatch) -> TaskSpec:
    """A task of a benchmark whose battery is two families without a model, none ``optional``."""
    monkeypatch.setitem(ALL_RECORDS, TOY.name, TOY)
    return TaskSpec(name="toybattery_x", benchmark=TOY.name, subset="x", shots=0, variant="",
                    families=TOY.families, max_gen_toks=8, until=("\n",), record=TOY)


def test_the_medqsum_record_lists_the_library_battery_and_its_choice_row():
    assert MEDQSUM_BENCHMARK.optional_families == battery.MEDQSUM
    # the choice is the row the settings table collected from the record, not a copy
    assert settings.SETTINGS[CHOICE.key] is CHOICE and CHOICE in MEDQSUM_BENCHMARK.settings
    assert not any(registry.get(f).optional for f in TOY.optional_families)


def test_the_battery_of_a_task_is_its_records_optional_families(toy):
    meta = {CHOICE.key: "chrf"}
    scoring = ShardScoring(toy, meta)
    assert scoring.battery is not None and scoring.battery["wanted"] == ["rouge", "chrf"]
    assert {n: c.battery for n, c in scoring.ctx.items()} == {"rouge": False, "bleu": True, "chrf": True}
    scoring.scores = {}
    scoring.score_items(DOCS)
    preds = [k[1] for k in DOCS]
    refs = [d["summary"] for d in DOCS.values()]
    for i, key in enumerate(DOCS):
        got = scoring.scores[key]
        assert got["rougeL"] == pytest.approx(rouge_scores([preds[i]], [refs[i]])["rougeL"])
        assert math.isnan(got["bleu"]) and got["sacrebleu"] is None  # left out by the choice
        assert got["chrf"] == [preds[i], refs[i]]
    record = scoring.record(meta, bypass=False)
    # the record's keys are named after the benchmark, as medqsum's are
    assert record["toybattery_skipped"] == [{"metric": "bleu", "keys": ["bleu", "sacrebleu"],
                                             "reason": "not requested"}]
    assert set(record["toybattery_timings_s"]) == {"rouge", "bleu", "chrf"}
    assert record["toybattery_details"]["models"] == {} and "chrf_signature" in record["toybattery_details"]
    assert record["settings_used"][CHOICE.key] == {"value": "chrf", "from": "metadata"}


def test_no_choice_scores_every_optional_family(toy):
    scoring = ShardScoring(toy, {})
    assert scoring.battery["wanted"] == ["rouge", "bleu", "chrf"]
    scoring.scores = {}
    scoring.score_items(DOCS)
    preds, refs = [k[1] for k in DOCS], [d["summary"] for d in DOCS.values()]
    assert [scoring.scores[k]["bleu"] for k in DOCS] == pytest.approx(sentence_bleu_scores(preds, refs))
    assert scoring.record({}, bypass=False)["toybattery_skipped"] == []


def test_the_choice_names_the_task_and_its_row_and_lists_the_optional_families(toy):
    with pytest.raises(ValueError, match=r"task toybattery_x: medqsum_metrics: unknown metric families "
                                         r"\['rouge'\]; known: \['bleu', 'chrf'\]"):
        ShardScoring(toy, {CHOICE.key: "rouge,chrf"})


def test_a_task_without_optional_families_has_no_battery(toy, monkeypatch):
    plain = replace(TOY, optional_families=(), family_choice=None)
    monkeypatch.setitem(ALL_RECORDS, TOY.name, plain)
    scoring = ShardScoring(replace(toy, record=plain), {CHOICE.key: "not-a-family"})
    assert scoring.battery is None and not any(c.battery for c in scoring.ctx.values())
    record = scoring.record({}, bypass=False)
    assert not any(k.startswith("toybattery_") for k in record) and CHOICE.key not in record["settings_used"]


def test_a_missing_model_skips_a_battery_family_with_a_model_only():
    bertscore, rouge = registry.get("bertscore"), registry.get("rouge")
    missing = ModelUnavailable("no such model")
    unavailable = registry.ScorerUnavailable("no such model")
    assert not bertscore.optional
    assert battery.skips_missing_model(bertscore, missing, True)
    assert battery.skips_missing_model(bertscore, unavailable, True)  # the preflight's finding too
    assert not battery.skips_missing_model(bertscore, missing, False)
    assert not battery.skips_missing_model(rouge, missing, True)  # no model: a failure, never a skip
    assert not battery.skips_missing_model(bertscore, RuntimeError("boom"), True)
    # an ``optional`` family is skipped for a model missing at scoring time, battery or not
    assert battery.skips_missing_model(registry.get("mauve"), missing, False)


def test_a_record_refuses_a_battery_it_does_not_report_or_a_choice_it_does_not_own():
    with pytest.raises(ValueError, match=r"benchmark toybattery: optional_families \['meteor'\]"):
        replace(TOY, optional_families=("bleu", "meteor"))
    other = Setting("toy_choice", None, str, None, "toy.", "scorers")
    with pytest.raises(ValueError, match="benchmark toybattery: family_choice 'toy_choice'"):
        replace(TOY, family_choice=other)
    # a family a variant adds may be optional
    assert replace(TOY, variants=(Variant(0, extra_families=("meteor",)),), optional_families=("meteor",))


def test_the_record_fields_handed_to_families_are_those_the_families_declare(monkeypatch):
    doc = {"id": 7, "document": "d", "summary": "s", "length_bin": 1, "keywords": '["cat", "mat"]',
           "readability": "high", "focus": "empirical", "speciality": "cardiology", "other": 3}
    extras = registry.extras_of(doc, "t")
    assert extras == {"id": "7", "task": "t", "length_bin": 1, "keywords": ["cat", "mat"],
                      "readability": "high", "focus": "empirical"}
    # each field reaches the family that declares it: keyword SR from the record's own list
    fam = registry.get("ccs_keywords")
    assert fam.fields == ("keywords",)
    batch = registry.Batch(["the cat sat"], ["r"], ["d"], [extras])
    assert fam.score(batch, registry.Context())["keyword_sr"] == [keyword_success_rate(["the cat sat"],
                                                                                      [json.loads(doc["keywords"])])]
    # a new family's field is handed over with no other edit
    reads = registry.Family(name="toy_speciality", keys=(registry.Key("toy_speciality_n"),),
                            score=lambda b, c: {"toy_speciality_n": [float(len(e["speciality"])) for e in b.extras]},
                            description="toy", source="tests", fields=("speciality",))
    monkeypatch.setattr(registry, "_TABLE", {**{f.name: f for f in registry.all_families()}, reads.name: reads})
    assert registry.extra_fields()[-1] == "speciality"
    assert registry.extras_of(doc, "t")["speciality"] == "cardiology"

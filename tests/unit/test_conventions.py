"""Each benchmark's conventions: ROUGE stemming per release, AdaptEval prompts per paper.

Expected prompt strings are copied from the papers (AdaptEval Appendix B, Tables 7
and 8) and from the release files, not produced by the code under test.
"""

import pytest

from custom_metrics import battery, registry
from custom_metrics.registry import Batch, Context
from lm_eval_tasks.scoring_context import family_context
from helpers.conventions import RELEASE_DA_SYSTEM, RELEASE_DA_USER, TABLE8_SYSTEM, TABLE8_USER


# Porter stemming maps running -> run, dogs -> dog: ROUGE-1 is 1 stemmed, 0 unstemmed
STEM_PRED, STEM_REF = "running dogs", "run dog"


def _rouge1(ctx: Context) -> float:
    batch = Batch([STEM_PRED], [STEM_REF], [""], [{}])
    return registry.get("rouge").score(batch, ctx)["rouge1"][0]


@pytest.mark.parametrize("benchmark, stemmed", [("domainsum", False), ("adapteval", True),
                                                ("ccsbench", True), ("medqsum", True), ("", True)])
def test_rouge_family_follows_each_release(benchmark, stemmed):
    ctx = family_context("rouge", benchmark=benchmark)
    assert _rouge1(ctx) == (1.0 if stemmed else 0.0)
    assert ctx.record["rouge_stemming"] is stemmed
    assert ctx.record["rouge_stemming_source"] == (
        f"release convention of {benchmark}" if benchmark else "library default")


@pytest.mark.parametrize("benchmark", ["domainsum", "adapteval"])
@pytest.mark.parametrize("setting", [False, True])
def test_rouge_stemming_setting_overrides_the_convention(benchmark, setting):
    ctx = family_context("rouge", {"rouge_stemming": setting}, benchmark=benchmark)
    assert _rouge1(ctx) == (1.0 if setting else 0.0)
    described = registry.get("rouge").describe(ctx)
    assert described["rouge_stemming"] is setting and described["rouge_stemming_source"] == "setting"


def test_rouge_describe_records_the_convention_before_scoring():
    fam = registry.get("rouge")
    assert "rouge_stemming" in fam.settings
    d = fam.describe(family_context("rouge", benchmark="domainsum"))
    assert d["rouge_stemming"] is False and d["rouge_stemming_source"] == "release convention of domainsum"
    assert fam.describe(family_context("rouge", benchmark="adapteval"))["rouge_stemming"] is True
    # the metric library alone names no benchmark: a bare context gets the library default
    assert fam.describe(Context(benchmark="domainsum"))["rouge_stemming_source"] == "library default"


def test_every_benchmark_record_says_where_its_stemming_comes_from():
    from custom_metrics.families.rouge import stemming_for
    from lm_eval_tasks.catalog import RECORDS

    papers = {"domainsum": False, "adapteval": True, "ccsbench": True, "medqsum": True}
    assert {n: RECORDS[n].conventions["rouge_stemming"].value for n in papers} == papers
    assert "json_evaluation.py" in RECORDS["domainsum"].conventions["rouge_stemming"].source
    # any benchmark reporting ROUGE, a new one included, says where its stemming comes from
    silent = [n for n, r in RECORDS.items() if "rouge" in r.families
              and not (r.conventions.get("rouge_stemming") and r.conventions["rouge_stemming"].source)]
    assert silent == [], f"records without a rouge_stemming convention and its source: {silent}"
    assert stemming_for(None, (False, "release convention of domainsum")) == (False, "release convention of domainsum")
    assert stemming_for() == (True, "library default")
    with pytest.raises(ValueError, match="rouge_stemming"):
        stemming_for("false")  # settings convert strings; a raw string is a mistake

def test_domainsum_fixture_scores_change_with_the_default(fixture_data_dir):
    """The DomainSum family's default equals rouge-score without stemming, AdaptEval's with it."""
    import json

    from rouge_score import rouge_scorer

    recs = [json.loads(line) for f in sorted((fixture_data_dir / "domainsum").glob("*/test.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]
    preds = [r["document"].split(". ")[0] for r in recs]
    refs = [r["summary"] for r in recs]
    batch = Batch(preds, refs, [""] * len(recs), [{}] * len(recs))
    for benchmark, stem in (("domainsum", False), ("adapteval", True)):
        scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stem)
        want = {k: sum(scorer.score(r, p)[k].fmeasure for p, r in zip(preds, refs)) / len(recs)
                for k in ("rouge1", "rouge2", "rougeL")}
        got = registry.score_corpus(["rouge"], batch, family_context("rouge", benchmark=benchmark))
        for k, v in want.items():
            assert got[k] == pytest.approx(v, abs=1e-12), (benchmark, k)
        assert got["rouge_mean"] == pytest.approx(sum(want.values()) / 3)
        assert got["rouge_geo"] == pytest.approx((want["rouge1"] * want["rouge2"] * want["rougeL"]) ** (1 / 3))


def test_rouge_stemming_setting_row(monkeypatch):
    from lm_eval_tasks import settings

    row = settings.SETTINGS["rouge_stemming"]
    assert row.env == "DOMSUM_ROUGE_STEMMING" and row.type_name == "bool" and row.default is None
    monkeypatch.delenv("DOMSUM_ROUGE_STEMMING", raising=False)
    assert settings.resolve({}, "rouge_stemming") is None
    monkeypatch.setenv("DOMSUM_ROUGE_STEMMING", "false")
    assert settings.resolve({}, "rouge_stemming") is False
    assert settings.resolve({"rouge_stemming": True}, "rouge_stemming") is True


def test_medqsum_battery_takes_the_convention_through_its_config():
    from custom_metrics.battery import battery_documents

    assert "rouge" in battery.MEDQSUM  # the battery's ROUGE is the ROUGE family, medqsum's convention
    for config, r1 in (({}, 1.0), ({"rouge_stemming": False}, 0.0), ({"rouge_stemming": True}, 1.0)):
        values, facts = battery_documents([STEM_PRED], [STEM_REF], config={**config, "metrics": ["rouge"]})
        assert values["rouge1"] == [r1]
        assert facts["details"]["rouge_stemming"] is (r1 == 1.0)
        # the library alone applies its default (stemming, the value of medqsum's convention too);
        # medqsum's tasks pass their record's convention and record it as such
        assert facts["details"]["rouge_stemming_source"] == ("setting" if config else "library default")


# Table 7, 0-SHOT PROMPT
TABLE7_ZERO = ("You are an expert at summarization. Proceed to summarize the following text.\n"
               "TEXT: ARTICLE\n"
               "SUMMARY:")
# Table 7, FEW-SHOT PROMPT
TABLE7_FEW = ("You are an expert at summarization. Proceed to summarize the following text.\n"
              "TEXT: A1\n"
              "SUMMARY: S1\n"
              "Proceed to summarize the following text.\n"
              "TEXT: A2\n"
              "SUMMARY: S2\n"
              "TEXT: ARTICLE\n"
              "SUMMARY:")
# prompt_0 of the release's data/predictions/*2-SHOT*.csv (documents replaced)
RELEASE_ZERO = "You are an expert at summarization. Proceed to summarize the following text. TEXT: ARTICLE\nSUMMARY:"
RELEASE_FEW = ("You are an expert at summarization. Proceed to summarize the following text. TEXT: A1\nSUMMARY:S1\n"
               "Proceed to summarize the following text. TEXT: A2\nSUMMARY:S2\n"
               "Proceed to summarize the following text. TEXT: ARTICLE\nSUMMARY:")
DEMOS = [{"document": "A1", "summary": "S1"}, {"document": "A2", "summary": "S2"}]


def test_adapteval_default_prompts_are_table_7():
    from lm_eval_tasks.benchmarks.adapteval.build import few_shot_prompt, zero_shot_prompt

    assert zero_shot_prompt("ARTICLE", max_words=100) == TABLE7_ZERO
    assert few_shot_prompt("ARTICLE", DEMOS, {"max_words": 100}, {"max_words": 100}, None) == TABLE7_FEW


def test_adapteval_release_prompts_are_the_prediction_files():
    from lm_eval_tasks.benchmarks.adapteval.build import few_shot_prompt, zero_shot_prompt

    assert zero_shot_prompt("ARTICLE", "release", max_words=100) == RELEASE_ZERO
    assert few_shot_prompt("ARTICLE", DEMOS, {"max_words": 100}, {"max_words": 100}, None, "release") == RELEASE_FEW
    with pytest.raises(ValueError, match="adapteval_prompt_variant"):
        zero_shot_prompt("ARTICLE", "table9")


def test_adapteval_build_docs_records_the_prompt_variant(fixture_data_dir):
    from lm_eval_tasks.benchmarks.adapteval.build import build_docs

    meta = {"data_dir": str(fixture_data_dir)}
    docs, facts = build_docs("arxiv", 0, "adapteval_arxiv", meta)
    assert facts["prompt_variant_used"] == "paper" and "Table 7" in facts["prompt_source"]
    assert all(d["prompt"].startswith("You are an expert at summarization. Proceed to summarize the following "
                                      "text.\nTEXT: ") for d in docs)
    docs, facts = build_docs("arxiv", 2, "adapteval_arxiv_2shot", {**meta, "adapteval_prompt_variant": "release"})
    assert facts["prompt_variant_used"] == "release" and facts["fewshot_seed_used"] == 1234
    assert all(d["prompt"].count("Proceed to summarize the following text. TEXT: ") == 3 for d in docs)


def test_judge_default_domain_adaptation_prompt_is_table_8():
    from custom_metrics.judge.prompts import ADAPTEVAL_METRICS, build_messages

    msgs = build_messages(ADAPTEVAL_METRICS["domain_adaptation"], "DOC", "SUMM", "pubmed")
    assert msgs == [{"role": "system", "content": TABLE8_SYSTEM}, {"role": "user", "content": TABLE8_USER}]


def test_judge_default_coherence_and_fluency_are_geval():
    """The paper: "we use the prompts introduced by Liu et al. (2023) for Coherence and Fluency"."""
    from custom_metrics.judge.prompts import ADAPTEVAL_METRICS, build_messages

    coh = build_messages(ADAPTEVAL_METRICS["coherence"], "DOC", "SUMM", "arxiv")
    assert coh[0]["content"].startswith("You will be given one summary written for an article.\n\n")
    assert coh[1]["content"] == ("Example:\n\n\nSource Text:\n\nDOC\n\nSummary:\n\nSUMM\n\n\n"
                                 "Evaluation Form (scores ONLY):\n\n- Coherence:")
    flu = build_messages(ADAPTEVAL_METRICS["fluency"], "DOC", "SUMM", "arxiv")
    assert "Evaluation Steps" not in flu[0]["content"]  # G-Eval's fluency prompt has none
    assert flu[1]["content"] == "Example:\n\nSummary:\n\nSUMM\n\n\nEvaluation Form (scores ONLY):\n\n- Fluency (1-3):"


def test_judge_release_variant_is_gpt4_eval_py():
    from custom_metrics.judge.prompts import ADAPTEVAL_METRICS, build_messages

    msgs = build_messages(ADAPTEVAL_METRICS["domain_adaptation"], "DOC", "SUMM", "pubmed", variant="release")
    assert msgs == [{"role": "system", "content": RELEASE_DA_SYSTEM}, {"role": "user", "content": RELEASE_DA_USER}]
    coh = build_messages(ADAPTEVAL_METRICS["coherence"], "DOC", "SUMM", "pubmed", variant="release")
    assert "build from sentence to acoherent body" in coh[0]["content"]
    assert coh[1]["content"].endswith("- Coherence\n")
    flu = build_messages(ADAPTEVAL_METRICS["fluency"], "DOC", "SUMM", "pubmed", variant="release")
    assert "Source Text:\n\nDOC" in flu[1]["content"]  # the release shows every metric the source
    with pytest.raises(ValueError, match="judge_prompt_variant"):
        build_messages(ADAPTEVAL_METRICS["fluency"], "DOC", "SUMM", "pubmed", variant="table8")


def test_judge_family_reads_and_records_the_prompt_variant():
    from lm_eval_tasks import settings

    fam = registry.get("judge")
    assert "judge_prompt_variant" in fam.settings
    assert settings.SETTINGS["judge_prompt_variant"].default == "paper"
    assert settings.SETTINGS["adapteval_prompt_variant"].default == "paper"
    assert fam.describe(Context())["judge_prompt_variant_used"] == "paper"
    ctx = Context(settings={"judge_prompt_variant": "release"})
    assert fam.describe(ctx)["judge_prompt_variant_used"] == "release"
    with pytest.raises(ValueError, match="judge_prompt_variant"):
        fam.describe(Context(settings={"judge_prompt_variant": "nope"}))

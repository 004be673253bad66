"""ROUGE on hand-computed cases, with and without stemming (rouge-score is the reference we call)."""

import math

import pytest

from custom_metrics import rouge_scores
from custom_metrics.families.rouge import geometric_mean, rouge_per_document


def test_hand_computed_corpus():
    # doc 1: ref "the cat sat", pred "the cat ran"
    #   R1: 2 shared unigrams of 3/3 -> P=R=F=2/3
    #   R2: bigrams {the cat, cat sat} vs {the cat, cat ran} -> 1/2
    #   RL: LCS "the cat" = 2 -> 2/3
    # doc 2: identical -> 1, 1, 1
    preds = ["the cat ran", "dogs bark loudly"]
    refs = ["the cat sat", "dogs bark loudly"]
    s = rouge_scores(preds, refs)
    r1, r2, rl = 5 / 6, 3 / 4, 5 / 6
    assert s["rouge1"] == pytest.approx(r1)
    assert s["rouge2"] == pytest.approx(r2)
    assert s["rougeL"] == pytest.approx(rl)
    assert s["rouge_geo"] == pytest.approx((r1 * r2 * rl) ** (1 / 3))
    assert s["rouge_mean"] == pytest.approx((r1 + r2 + rl) / 3)


def test_unequal_lengths_precision_recall():
    # ref "a b c d" (4 tokens), pred "a b" (2 tokens): R1 P=1, R=1/2 -> F=2/3
    # R2: ref bigrams ab bc cd, pred ab -> P=1, R=1/3 -> F=1/2; RL: LCS 2 -> F=2/3
    s = rouge_per_document(["alpha beta"], ["alpha beta gamma delta"])[0]
    assert s["rouge1"] == pytest.approx(2 / 3)
    assert s["rouge2"] == pytest.approx(1 / 2)
    assert s["rougeL"] == pytest.approx(2 / 3)


def test_stemming_is_on_by_default_and_can_be_turned_off():
    # Porter stemming: running -> run, dogs -> dog; without it no unigram is shared
    assert rouge_per_document(["running dogs"], ["run dog"])[0]["rouge1"] == pytest.approx(1.0)
    assert rouge_per_document(["running dogs"], ["run dog"], use_stemmer=False)[0]["rouge1"] == 0.0
    # "the cats ran" vs "the cat runs": stemmed {the, cat} shared (ran stays ran, runs -> run):
    # P = R = 2/3; unstemmed only "the": P = R = 1/3
    assert rouge_per_document(["the cats ran"], ["the cat runs"])[0]["rouge1"] == pytest.approx(2 / 3)
    assert rouge_per_document(["the cats ran"], ["the cat runs"], use_stemmer=False)[0]["rouge1"] == (
        pytest.approx(1 / 3))


def test_empty_prediction_scores_zero_and_geo_is_zero():
    s = rouge_scores(["", "  "], ["a reference", "another one"])
    assert s == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0, "rouge_geo": 0.0, "rouge_mean": 0.0}


def test_non_latin_text_has_no_rouge_tokens():
    s = rouge_scores(["東京は大きい"], ["東京は大きい"])
    assert s["rouge1"] == 0.0


def test_geometric_mean():
    assert geometric_mean([0.5, 0.5, 0.5]) == pytest.approx(0.5)
    assert geometric_mean([0.2, 0.4, 0.8]) == pytest.approx(0.4)
    assert geometric_mean([0.3, 0.0, 0.9]) == 0.0
    assert math.isfinite(geometric_mean([1e-12, 1e-12, 1e-12]))


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        rouge_scores(["a", "b"], ["a"])


def test_agrees_with_plain_rouge_score_on_fixtures(fixture_data_dir):
    """Memoised stemming must not change a single score versus rouge-score itself."""
    import json

    from rouge_score import rouge_scorer

    recs = [json.loads(l) for f in sorted(fixture_data_dir.rglob("*.jsonl")) for l in f.read_text().splitlines() if l.strip()]
    preds = [r["document"][:300] for r in recs]
    refs = [r["summary"] for r in recs]
    ref_scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    ours = rouge_per_document(preds, refs)
    for p, r, o in zip(preds, refs, ours):
        s = ref_scorer.score(r, p)
        assert o == {k: s[k].fmeasure for k in ("rouge1", "rouge2", "rougeL")}


def _domainsum_leads(fixture_data_dir):
    """DomainSum fixture references and their documents' first sentence (a fixed prediction)."""
    import json

    recs = [json.loads(line) for f in sorted((fixture_data_dir / "domainsum").glob("*/test.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]
    return [r["document"].split(". ")[0] for r in recs], [r["summary"] for r in recs]


@pytest.mark.parametrize("stem", [False, True])
def test_agrees_with_rouge_score_with_and_without_stemming(fixture_data_dir, stem):
    from rouge_score import rouge_scorer

    preds, refs = _domainsum_leads(fixture_data_dir)
    ref_scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stem)
    for p, r, o in zip(preds, refs, rouge_per_document(preds, refs, use_stemmer=stem)):
        s = ref_scorer.score(r, p)
        assert o == {k: s[k].fmeasure for k in ("rouge1", "rouge2", "rougeL")}


def test_bootstrap_mid_is_rouge_scores_aggregator(fixture_data_dir):
    """What evaluate's ROUGE returns (BootstrapAggregator mid), reproduced under one seed."""
    import numpy as np
    from rouge_score import rouge_scorer, scoring

    from custom_metrics.families.rouge import aggregate_rouge, aggregate_rouge_bootstrap

    preds, refs = _domainsum_leads(fixture_data_dir)
    # evaluate's default rouge_types, in its order: the aggregator resamples type after type
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=False)
    agg = scoring.BootstrapAggregator()
    for p, r in zip(preds, refs):
        agg.add_scores(scorer.score(r, p))
    np.random.seed(11)
    theirs = agg.aggregate()
    per = rouge_per_document(preds, refs, use_stemmer=False)
    ours = aggregate_rouge_bootstrap(per, seed=11)
    for k in ("rouge1", "rouge2", "rougeL"):
        assert ours[k] == pytest.approx(theirs[k].mid.fmeasure, abs=1e-12)
    assert ours["rouge_mean"] == pytest.approx(sum(ours[k] for k in ("rouge1", "rouge2", "rougeL")) / 3)
    plain = aggregate_rouge(per)
    assert all(abs(ours[k] - plain[k]) < 0.01 for k in plain)  # resampling noise only
    assert aggregate_rouge_bootstrap([], seed=1) == aggregate_rouge([])


def test_agrees_with_rouge_score_on_random_texts():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from rouge_score import rouge_scorer

    scorers = {stem: rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stem)
               for stem in (False, True)}
    words = st.sampled_from(["the", "cats", "running", "ran", "dog", "a", "b", "mat", "sat", "x1", "!"])
    text = st.lists(words, max_size=40).map(" ".join)

    @settings(max_examples=300, deadline=None)
    @given(text, text, st.booleans())
    def check(pred, ref, stem):
        s = scorers[stem].score(ref, pred)
        assert rouge_per_document([pred], [ref], use_stemmer=stem)[0] == {
            k: s[k].fmeasure for k in ("rouge1", "rouge2", "rougeL")}

    check()


def test_lcs_length_hand_cases():
    from custom_metrics.families.rouge import lcs_length

    assert lcs_length("a b c d".split(), "a c d".split()) == 3
    assert lcs_length("x y".split(), "a b".split()) == 0
    assert lcs_length("a b a b".split(), "b a b a".split()) == 3
    assert lcs_length([], ["a"]) == 0

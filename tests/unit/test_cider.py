"""CIDEr-D (custom_metrics/families/cider.py): hand-computed cases, the coco-caption scorer, the table."""

from __future__ import annotations

import math
import random

import pytest
from helpers.thread_ranks import score_on_ranks

from custom_metrics import registry
from custom_metrics.families.cider import cider, cider_documents, cider_tokens


def test_hand_computed_two_documents():
    # N = 2 documents, so every n-gram seen in one reference has idf ln 2 - ln 1 = ln 2.
    # Document 1 repeats its reference: cosine 1 for unigrams and bigrams, no 3/4-grams
    # (norm 0, value 0), no length penalty: 10 * (1 + 1 + 0 + 0) / 4 = 5.
    # Document 2 shares nothing with its reference: 0.
    assert cider_documents(["a b", "c d"], ["a b", "e f"]) == pytest.approx([5.0, 0.0])
    assert cider(["a b", "c d"], ["a b", "e f"]) == pytest.approx(2.5)


def test_hand_computed_length_penalty_and_clipping():
    # "a a b" against "a b" over the corpus {"a b", "x y"}: idf(a) = idf(b) = idf(a b) = ln 2,
    # idf(a a) = ln 2 (unseen: log N - log 1). Unigrams: cand (2w, w), ref (w, w) with w = ln 2;
    # clipped dot = min(2w, w)*w + w*w = 2w^2, norms sqrt(5)w and sqrt(2)w -> 2/sqrt(10).
    # Bigrams: cand {a a: w, a b: w}, ref {a b: w} -> w^2 / (sqrt(2)w * w) = 1/sqrt(2).
    # Lengths (the scorer's bigram counts) 2 and 1: penalty exp(-1/72).
    expected = 10 * math.exp(-1 / 72) * (2 / math.sqrt(10) + 1 / math.sqrt(2)) / 4
    assert cider_documents(["a a b", "q"], ["a b", "x y"])[0] == pytest.approx(expected)


def test_one_document_and_empty_inputs():
    assert cider_documents(["a b"], ["a b"]) == [0.0]   # one document: every idf is log 1 - log 1 = 0
    assert cider_documents([], []) == [] and math.isnan(cider([], []))
    assert cider_documents(["", "a"], ["a", "b"])[0] == 0.0
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        cider_documents(["a", "b"], ["a"])


def test_tokens_follow_summeval_regexp_tokenizer():
    from nltk.tokenize import RegexpTokenizer

    text = "The patient's BP (140/90) wasn't high, e.g. naïve-type."
    assert cider_tokens(text) == RegexpTokenizer(r"\w+").tokenize(text)
    assert cider_tokens("Case Kept") == ["Case", "Kept"]


def test_equals_the_coco_caption_scorer():
    """pycocoevalcap's CiderScorer (what SummEval runs) on SummEval-tokenized text."""
    from pycocoevalcap.cider.cider_scorer import CiderScorer

    rng = random.Random(7)
    words = "the a cat dog sat on mat Mat ran fast slow , big . small red".split()
    for _ in range(100):
        n = rng.randint(2, 7)
        preds = [" ".join(rng.choices(words, k=rng.randint(0, 14))) for _ in range(n)]
        refs = [" ".join(rng.choices(words, k=rng.randint(1, 14))) for _ in range(n)]
        scorer = CiderScorer(n=4, sigma=6.0)
        for p, r in zip(preds, refs):
            scorer += (" ".join(cider_tokens(p)), [" ".join(cider_tokens(r))])
        mean, per = scorer.compute_score()
        assert cider_documents(preds, refs) == pytest.approx(list(per), abs=1e-12)
        assert cider(preds, refs) == pytest.approx(float(mean), abs=1e-12)


def test_the_record_is_in_the_table_and_the_battery():
    from custom_metrics.battery import MEDQSUM, medqsum_battery

    fam = registry.family_of("cider")
    assert fam.name == "cider" and registry.display_name("cider") == "CIDEr-D"
    assert registry.higher_is_better(["cider"]) == {"cider": True}
    assert "cider" in MEDQSUM
    out = medqsum_battery(["a b", "c d"], ["a b", "e f"], config={"metrics": "cider"})
    assert out["cider"] == pytest.approx(2.5) and out["details"]["cider_idf_documents"] == 2


def test_meta_eval_computes_any_family_of_the_table():
    import pandas as pd

    from custom_metrics.analysis.meta_eval import computable, compute_metrics

    assert {"cider", "bleu", "rouge", "fm", "chrf"} <= set(computable())
    assert "judge" not in computable()
    df = pd.DataFrame({"reference": ["a b", "e f"], "summary": ["a b", "c d"]})
    compute_metrics(df, ["cider"])
    assert list(df["our_cider"]) == pytest.approx([5.0, 0.0])


def test_shards_scored_with_gathered_frequencies_equal_the_whole_corpus():
    """Each shard alone has its own idf (a one-document shard scores 0); gathered, every
    document's value is the single-process value over all documents."""
    rng = random.Random(11)
    words = "the a cat dog sat on mat Mat ran fast slow , big . small red".split()
    preds = [" ".join(rng.choices(words, k=rng.randint(0, 12))) for _ in range(7)]
    refs = [" ".join(rng.choices(words, k=rng.randint(1, 12))) for _ in range(7)]
    whole = cider_documents(preds, refs)
    shards = [([preds[i] for i in range(r, 7, 3)], [refs[i] for i in range(r, 7, 3)]) for r in range(3)]
    scored = score_on_ranks("cider", shards)
    for r, (values, details) in enumerate(scored):
        assert values["cider"] == pytest.approx(whole[r::3], abs=1e-12)
        assert details["cider_idf_documents"] == 7  # the whole run's, on every rank
    assert cider_documents(*shards[0]) != pytest.approx(whole[0::3])  # not what one shard's idf gives


def test_a_rank_with_no_documents_or_a_failed_count_still_joins_the_gather():
    values = score_on_ranks("cider", [(["a b", "c d"], ["a b", "e f"]), ([], [])])
    assert values[0][0]["cider"] == pytest.approx([5.0, 0.0]) and values[1][0]["cider"] == []
    assert values[1][1]["cider_idf_documents"] == 2

    class Unreadable:
        def __str__(self) -> str:  # a reference whose text cannot be read, on rank 1 only
            raise UnicodeError("unreadable reference")

    with pytest.raises(ExceptionGroup) as failed:
        score_on_ranks("cider", [(["a b"], ["a b"]), (["c"], [Unreadable()])])
    # rank 1's failure is raised on both ranks, after both joined: none waits for the other
    assert [str(e) for e in failed.value.exceptions] == [
        "cider: counting the references' n-grams failed: UnicodeError: unreadable reference"] * 2

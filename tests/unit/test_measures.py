"""Domain-characteristic measures: hand-computed cases for both profiles, property
tests of the fast paths against the reference scans, bad input, the benchmark script."""

from __future__ import annotations

import json
import math
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from custom_metrics.analysis import fragments as F
from custom_metrics.analysis import measures as M
from custom_metrics.analysis import pair_values as P
from custom_metrics.analysis.measures import (
    MEASURES,
    domain_measures,
    domainsum_fragments,
    longest_match_fragments,
    measure_pairs,
    measure_token_pairs,
    newsroom_fragments,
    ngram_coverage,
    ngram_diversity,
    novel_ngram_ratio,
    pair_measures,
)

approx = pytest.approx

# ------------------------------------------------------------------ fragments


def test_newsroom_quirk_and_longest_match():
    article, summary = "x x x y".split(), "x x y".split()
    # Newsroom: s=0, t=0 matches "x x" (k=2), scan resumes at t=2 where "x" then "y"!="x"
    # gives k=1; t=3 "y"!="x". Best 2. Then s=2 "y" matches at t=3 (k=1): [2, 1].
    assert newsroom_fragments(article, summary) == [2, 1]
    assert F.reference_newsroom_fragments(article, summary) == [2, 1]
    # Longest match tries t=1 too: "x x y" (k=3).
    assert longest_match_fragments(article, summary) == [3]
    assert F._reference_longest_match_fragments(article, summary) == [3]


def test_domainsum_scan_stops_at_missing_token():
    # i=0 "a"!="b"; i=1 "b c" matches (k=2) -> i=3, j=2; "a" is not at i>=3: scan ends,
    # so the final "d" is never matched.
    assert domainsum_fragments("a b c d".split(), "b c a d".split()) == [2]
    assert F.reference_domainsum_fragments("a b c d".split(), "b c a d".split()) == [2]
    # Newsroom walks every summary position: "b c" (2), "a" (1), "d" (1).
    assert newsroom_fragments("a b c d".split(), "b c a d".split()) == [2, 1, 1]


def test_fragments_degenerate():
    for fn in (newsroom_fragments, longest_match_fragments, domainsum_fragments):
        assert fn([], []) == []
        assert fn(["a"], []) == []
        assert fn([], ["a"]) == []
        assert fn(["a"], ["b"]) == []
        assert fn(["a"], ["a"]) == [1]


# ------------------------------------------------------------------ hand-computed pairs

# Pair 1. D = the cat sat on the mat (6 tokens), S = the cat lay on the mat (6 tokens)
#   unique n-grams of S:  1: {the, cat, lay, on, mat} (5)   in D: the cat on mat (4)
#                         2: the-cat cat-lay lay-on on-the the-mat (5)  in D: the-cat on-the the-mat (3)
#                         3: the-cat-lay cat-lay-on lay-on-the on-the-mat (4)  in D: on-the-mat (1)
#   DomainSum coverage = (4/5 + 3/5 + 1/4) / 3 = 0.55
#   novel n-grams: 1/5, 2/5, 3/4 -> abstractiveness 0.75
#   diversity of D (and of S, same shape): (5/6 + 5/5 + 4/4) / 3 = 17/18
#   DomainSum scan: "the cat" (2) then "lay" not found after i=2 -> [2]; density 4/6
#   Newsroom: s=0 best "the cat" (2); "lay" absent; s=3 "on the mat" (3) -> [2, 3]
#             coverage 5/6, density (4 + 9)/6 = 13/6
#   compression 6/6 = 1
# Pair 2. D = a b c d, S = b c x
#   S n-grams: 1: {b, c, x} 2 in D; 2: {b-c, c-x} 1 in D; 3: {b-c-x} 0 in D
#   DomainSum coverage = (2/3 + 1/2 + 0) / 3 = 7/18; abstractiveness 1/1 = 1
#   novel 1-grams 1/3, 2-grams 1/2
#   diversity D = (4/4 + 3/3 + 2/2)/3 = 1, S = (3/3 + 2/2 + 1/1)/3 = 1
#   both scans: "b c" (2), then "x" absent -> [2]; density 4/3; Newsroom coverage 2/3
#   compression 4/3
PAIR1 = ("the cat sat on the mat", "the cat lay on the mat")
PAIR2 = ("a b c d", "b c x")


def toks(text):
    return text.split()


def test_pair_measures_domainsum_by_hand():
    m = pair_measures(toks(PAIR1[0]), toks(PAIR1[1]), "domainsum")
    assert m["doc_length"] == 6 and m["summary_length"] == 6
    assert m["compression"] == approx(1.0)
    assert m["density"] == approx(4 / 6)
    assert m["coverage"] == approx(0.55)
    assert m["abstractiveness"] == approx(0.75)
    assert m["novel_1gram"] == approx(0.2) and m["novel_2gram"] == approx(0.4)
    assert m["doc_diversity"] == approx(17 / 18)
    assert m["summary_diversity"] == approx(17 / 18)

    m = pair_measures(toks(PAIR2[0]), toks(PAIR2[1]), "domainsum")
    assert (m["compression"], m["density"]) == (approx(4 / 3), approx(4 / 3))
    assert m["coverage"] == approx(7 / 18)
    assert m["abstractiveness"] == approx(1.0)
    assert (m["novel_1gram"], m["novel_2gram"]) == (approx(1 / 3), approx(0.5))
    assert (m["doc_diversity"], m["summary_diversity"]) == (approx(1.0), approx(1.0))


def test_pair_measures_newsroom_by_hand():
    m = pair_measures(toks(PAIR1[0]), toks(PAIR1[1]), "newsroom")
    assert m["coverage"] == approx(5 / 6)
    assert m["density"] == approx(13 / 6)
    assert m["compression"] == approx(1.0)
    # Newsroom defines no diversity / abstractiveness: the domainsum values are used.
    assert m["abstractiveness"] == approx(0.75)
    assert m["doc_diversity"] == approx(17 / 18)

    m = pair_measures(toks(PAIR2[0]), toks(PAIR2[1]), "newsroom")
    assert (m["coverage"], m["density"]) == (approx(2 / 3), approx(4 / 3))


def test_profiles_differ_where_the_scans_differ():
    # D = a b c d e, S = c d a b e.
    # DomainSum: "c d" at i=2 (k=2) -> i=4, j=2; "a" not at i>=4: stop. [2] -> density 4/5.
    #   coverage: unigrams 5/5; bigrams c-d d-a a-b b-e: c-d, a-b in D -> 2/4;
    #   trigrams c-d-a d-a-b a-b-e: none in D -> 0/3. (1 + 0.5 + 0) / 3 = 0.5
    # Newsroom: "c d" (2), "a b" (2), "e" (1) -> coverage 5/5 = 1, density 9/5.
    d, s = toks("a b c d e"), toks("c d a b e")
    ds, nr = pair_measures(d, s, "domainsum"), pair_measures(d, s, "newsroom")
    assert ds["density"] == approx(4 / 5) and ds["coverage"] == approx(0.5)
    assert nr["density"] == approx(9 / 5) and nr["coverage"] == approx(1.0)
    # The quirk pair: x x x y / x x y. Newsroom [2, 1]: coverage 3/3, density 5/3.
    # (The longest match [3] would give density 9/3.) DomainSum scan: [2, 1] too.
    d, s = toks("x x x y"), toks("x x y")
    assert pair_measures(d, s, "newsroom")["density"] == approx(5 / 3)
    assert pair_measures(d, s, "domainsum")["density"] == approx(5 / 3)


def test_corpus_means_by_hand():
    docs, sums = [PAIR1[0], PAIR2[0]], [PAIR1[1], PAIR2[1]]
    r = domain_measures(docs, sums)
    # lengths 6, 4 -> mean 5, population std 1; summaries 6, 3 -> 4.5, std 1.5
    assert (r["doc_length"], r["doc_length_std"]) == (approx(5.0), approx(1.0))
    assert (r["summary_length"], r["summary_length_std"]) == (approx(4.5), approx(1.5))
    assert r["compression"] == approx((1 + 4 / 3) / 2)  # 7/6
    assert r["density"] == approx((4 / 6 + 4 / 3) / 2)  # 1
    assert r["coverage"] == approx((0.55 + 7 / 18) / 2)
    assert r["doc_diversity"] == approx((17 / 18 + 1) / 2)
    assert r["summary_diversity"] == approx((17 / 18 + 1) / 2)
    assert r["abstractiveness"] == approx((0.75 + 1) / 2)
    assert r["profile"] == "domainsum" and r["n_pairs"] == 2 and r["n_used"] == 2
    assert set(MEASURES) <= set(r)

    n = domain_measures(docs, sums, profile="newsroom")
    assert n["coverage"] == approx((5 / 6 + 2 / 3) / 2)  # 0.75
    assert n["density"] == approx((13 / 6 + 4 / 3) / 2)  # 1.75
    assert n["compression"] == approx(7 / 6)
    assert n["profile"] == "newsroom"


def test_tokenization_is_lowercased_nltk_style():
    # "The CAT's" -> the cat 's ; "mat." -> mat .  (see custom_metrics.tokenize)
    r = domain_measures(["The CAT's mat."], ["the cat's MAT."])
    assert r["doc_length"] == 5 and r["summary_length"] == 5
    assert r["coverage"] == approx(1.0) and r["abstractiveness"] == 0.0
    assert r["density"] == approx(25 / 5)


def test_ngram_helpers_by_hand():
    # a a b: unigrams 2/3, bigrams a-a a-b 2/2, trigram 1/1 -> (2/3 + 1 + 1)/3 = 8/9
    assert ngram_diversity(["a", "a", "b"]) == approx(8 / 9)
    assert ngram_diversity([]) == 0
    # 2-token summary fully copied: (1 + 1 + 0)/3 -- the trigram term is 0, still /3
    assert ngram_coverage(["a", "b", "c"], ["a", "b"]) == approx(2 / 3)
    assert novel_ngram_ratio(["a", "b", "c"], ["a", "b"], 3) == 0
    assert novel_ngram_ratio(["a", "b", "c"], ["b", "a"], 2) == 1.0


# ------------------------------------------------------------------ properties

small_tokens = st.lists(st.sampled_from("abc"), max_size=40)
tiny_tokens = st.lists(st.sampled_from("ab"), max_size=30)
any_tokens = st.one_of(small_tokens, tiny_tokens,
                       st.lists(st.sampled_from(["x", "y", "z", "w", "v", "u"]), max_size=60))
PROPS = settings(max_examples=400, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(article=any_tokens, summary=any_tokens)
def test_fast_fragments_equal_reference(article, summary):
    assert newsroom_fragments(article, summary) == F.reference_newsroom_fragments(article, summary)
    assert (longest_match_fragments(article, summary)
            == F._reference_longest_match_fragments(article, summary))
    assert domainsum_fragments(article, summary) == F.reference_domainsum_fragments(article, summary)


@PROPS
@given(article=any_tokens, summary=any_tokens)
def test_fragment_invariants(article, summary):
    for frags in (newsroom_fragments(article, summary), longest_match_fragments(article, summary),
                  domainsum_fragments(article, summary)):
        assert all(f >= 1 for f in frags)
        assert sum(frags) <= len(summary)
    # Newsroom's walk covers exactly the summary tokens that occur in the article (a
    # fragment starts at each such position not already inside one), so its coverage
    # is the token-level unigram coverage; likewise for the longest-match walk.
    present = sum(1 for t in summary if t in set(article))
    assert sum(newsroom_fragments(article, summary)) == present
    assert sum(longest_match_fragments(article, summary)) == present


@PROPS
@given(doc=any_tokens, summ=any_tokens)
def test_fast_pair_values_identical_to_reference(doc, summ):
    for profile in M.PROFILES:
        assert P.fast_pair_values(doc, summ, profile) == P.reference_pair_values(doc, summ, profile)


@settings(max_examples=150, deadline=None)
@given(doc=any_tokens, summ=any_tokens)
def test_rank_reduced_trigram_codes_identical(doc, summ):
    # Force the large-vocabulary branch (bigram ranks instead of V**3 codes).
    with mock.patch.object(F, "_MAX_DENSE_VOCAB", 1):
        for profile in M.PROFILES:
            assert (P.fast_pair_values(doc, summ, profile)
                    == P.reference_pair_values(doc, summ, profile))


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(small_tokens, small_tokens), max_size=8))
def test_corpus_fast_equals_reference(pairs):
    docs = [" ".join(d) for d, _ in pairs]
    sums = [" ".join(s) for _, s in pairs]
    for profile in M.PROFILES:
        fast = measure_pairs(docs, sums, profile)
        ref = measure_pairs(docs, sums, profile, impl="reference")
        for k in fast:
            assert np.array_equal(fast[k], ref[k])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            a = M.summarize_pairs(fast, profile)
            b = M.summarize_pairs(ref, profile)
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k])
                                    and math.isnan(b[k]))


def test_realistic_pairs_fast_equals_reference():
    from custom_metrics.analysis.synthetic import synthetic_pairs
    from custom_metrics.tokenize import word_tokenize

    docs, sums = synthetic_pairs(12, 600, 60, seed=7)
    dt = [word_tokenize(d) for d in docs]
    st_ = [word_tokenize(s) for s in sums]
    for profile in M.PROFILES:
        fast = measure_token_pairs(dt, st_, profile)
        ref = measure_token_pairs(dt, st_, profile, impl="reference")
        for k in fast:
            assert np.array_equal(fast[k], ref[k]), k
    assert all(newsroom_fragments(d, s) == F.reference_newsroom_fragments(d, s)
               for d, s in zip(dt, st_))


# ------------------------------------------------------------------ bad input


def test_bad_input_counted_never_raises():
    docs = ["", "a b", "a b", None, "Café naïve 東京 — “quoted”", "x", "the cat sat", "the cat sat", "  "]
    sums = ["x", "", "a b", "a", "naïve 東京", "x y z", "cat sat", "cat sat", ""]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = domain_measures(docs, sums)
    # pair 0: empty document; 1: empty summary; 3: None document (empty);
    # 8: whitespace document and empty summary -> counted once, as empty_document
    assert r["n_pairs"] == 9
    assert r["skipped_empty_document"] == 3
    assert r["skipped_empty_summary"] == 1
    assert r["skipped_duplicate"] == 0
    assert r["n_used"] == 5 and r["n_skipped"] == 4
    assert r["n_duplicate"] == 1  # pair 7 repeats pair 6 (kept by default)
    assert r["n_doc_shorter_than_summary"] == 1  # "x" vs "x y z"
    assert r["n_non_ascii"] == 1
    assert all(math.isfinite(r[m]) for m in MEASURES)

    d = domain_measures(docs, sums, drop_duplicates=True)
    assert d["skipped_duplicate"] == 1 and d["n_used"] == 4 and d["n_duplicate"] == 1


def test_keep_empty_uses_release_zero_conventions():
    # ("", "a b c"): compression 0/3 = 0, density 0, coverage 0, novel trigram 1/1 = 1,
    # doc diversity 0 (no n-grams); ("a b", ""): every summary-based ratio is 0.
    r = domain_measures(["", "a b"], ["a b c", ""], skip_empty=False)
    assert r["n_used"] == 2 and r["n_skipped"] == 0
    assert r["compression"] == 0 and r["density"] == 0 and r["coverage"] == 0
    assert r["abstractiveness"] == approx(0.5)  # (1 + 0) / 2
    # doc diversity: (0 + (2/2 + 1/1 + 0)/3) / 2 = 1/3
    assert r["doc_diversity"] == approx(1 / 3)
    for profile in M.PROFILES:
        p = pair_measures([], [], profile)
        assert all(v == 0 for v in p.values())


def test_all_skipped_gives_nan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = domain_measures(["", "x"], ["a", ""])
        e = domain_measures([], [])
    assert r["n_used"] == 0 and e["n_pairs"] == 0
    assert all(math.isnan(r[m]) for m in MEASURES)
    assert all(math.isnan(e[m]) for m in MEASURES)


def test_argument_errors():
    with pytest.raises(ValueError, match="profile"):
        domain_measures(["a"], ["a"], profile="bogus")
    with pytest.raises(ValueError, match="2 documents but 1 summaries"):
        domain_measures(["a", "b"], ["a"])
    with pytest.raises(TypeError, match="strings"):
        domain_measures([3], ["a"])


def test_token_counts_in_the_same_pass():
    from collections import Counter

    c: Counter = Counter()
    measure_pairs(["a b", "c"], ["b", "d d"], token_counts=c, count_mask=[True, False])
    assert c == Counter({"b": 2, "a": 1})


# ------------------------------------------------------------------ benchmark script


def test_bench_measures_quick(tmp_path, capsys):
    from helpers.scripts import load_script

    bench_measures = load_script("bench_measures")

    out = tmp_path / "bench.json"
    assert bench_measures.main(["--quick", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    whats = {(r["length"], r["what"]) for r in rows}
    assert ("long", "newsroom fragments") in whats and ("news", "all measures (domainsum)") in whats
    for r in rows:
        assert r["fast_pairs_per_s"] > 0
        if r["reference_pairs_per_s"] is not None:
            assert r["speedup"] == approx(r["fast_pairs_per_s"] / r["reference_pairs_per_s"])
    assert "| long (6000/270) | newsroom fragments |" in capsys.readouterr().out

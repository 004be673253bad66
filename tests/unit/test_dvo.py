"""Domain Vocabulary Overlap: vocabulary building, scoring, files, resolver, CLI.

Expected values are computed by hand in the comments; the release's formula
(``len(set(vocab).intersection(tokens)) / len(tokens) * 100``) is restated inline as
the reference.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from custom_metrics.families.dvo import (
    DVO,
    DEFAULT_VOCAB_DIR,
    VocabularyBuilder,
    VocabularyError,
    VocabularyNotFoundError,
    build_vocabulary,
    build_vocabulary_counts,
    dvo,
    dvo_scores,
    dvo_token,
    dvo_token_scores,
    is_vocabulary_word,
    load_vocabulary,
    read_vocabulary,
    vocabulary_dir,
    vocabulary_path,
    write_vocabulary,
)
from custom_metrics.stopwords import ENGLISH_STOPWORDS, NLTK_2025_ADDITIONS
from custom_metrics.tokenize import count_tokens, word_tokenize
from helpers.dvo import _mirror


ROOT = Path(__file__).resolve().parents[2]


def test_stopwords_are_nltks_english_list():
    assert len(ENGLISH_STOPWORDS) == 198
    assert len(ENGLISH_STOPWORDS - NLTK_2025_ADDITIONS) == 179
    for w in ("i", "the", "of", "and", "ourselves", "don't", "mustn", "y", "ain", "won't"):
        assert w in ENGLISH_STOPWORDS
    for w in ("also", "however", "would", "one", "two", "study"):  # not in NLTK's list
        assert w not in ENGLISH_STOPWORDS


def test_2025_additions_cannot_match_a_token():
    # Both NLTK versions filter the same tokens: the additions are contractions,
    # which the tokenizer always splits.
    for w in NLTK_2025_ADDITIONS:
        assert w not in word_tokenize(f"so {w} here")


DOCS = [
    "The Protein binds the receptor. The protein, again: 3 times!",
    "A receptor (the second) and 3 cells; cells don't bind proteins.",
    "",
]


def test_build_vocabulary_hand_counts():
    counts = dict(build_vocabulary_counts(DOCS, size=100))
    assert counts == {
        "protein": 2, "receptor": 2, "3": 2, "cells": 2, "binds": 1, "times": 1,
        "second": 1, "bind": 1, "proteins": 1, "n't": 1,
    }


def test_build_vocabulary_order_and_ties():
    # most frequent first; equal counts by code point ("3" < "cells" < ...)
    assert build_vocabulary(DOCS, size=6) == ["3", "cells", "protein", "receptor", "bind", "binds"]
    assert build_vocabulary(list(reversed(DOCS)), size=6) == build_vocabulary(DOCS, size=6)


def test_vocabulary_word_rules():
    assert is_vocabulary_word("protein") and is_vocabulary_word("3") and is_vocabulary_word("0.5")
    assert is_vocabulary_word("covid-19") and is_vocabulary_word("\\frac")
    for tok in ("the", "and", ".", ",", "...", "--", "''", "?", "(", "%"):
        assert not is_vocabulary_word(tok)


def test_size_and_errors():
    assert build_vocabulary(["alpha beta gamma"], size=2) == ["alpha", "beta"]
    assert build_vocabulary(["the of and"], size=5) == []
    with pytest.raises(ValueError):
        build_vocabulary(["x"], size=0)


def test_builder_stats_and_none():
    b = VocabularyBuilder().add_many(["Hello world.", None, "", "hello  again"])
    assert (b.documents, b.words) == (4, 4)
    assert b.counts()["hello"] == 2 and b.tokens == 5  # hello world . hello again


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("abcAB1 .,'-()\n\tçİ")), max_size=40),
                max_size=12),
       st.integers(min_value=1, max_value=4))
def test_builder_counts_exactly_like_word_tokenize(texts, max_chunks):
    # flushing every few chunks must not change anything
    naive = Counter(t for text in texts for t in word_tokenize(text))
    builder = VocabularyBuilder(max_chunks=max_chunks).add_many(texts)
    assert +builder.counts() == +naive == +count_tokens(texts)
    assert builder.tokens == sum(naive.values())


VOCAB = ["protein", "cells", "binding", "3"]


def release_dvo(text: str, vocab: list[str]) -> float:
    tokens = word_tokenize(str(text).lower())
    overlap = len(set(vocab).intersection(tokens))
    return overlap / len(tokens) * 100 if len(tokens) > 0 else 0


def test_dvo_hand_computed():
    preds = [
        "The protein binds the protein.",  # the protein binds the protein . -> 1 distinct / 6
        "Binding cells: 3 cells.",  # binding cells : 3 cells . -> {binding, cells, 3} 3 / 6
        "",  # no tokens -> 0
        "Nothing here",  # 0 / 2
    ]
    scores = dvo_scores(preds, VOCAB)
    assert scores == pytest.approx([100 / 6, 50.0, 0.0, 0.0])
    assert dvo(preds, VOCAB) == pytest.approx((100 / 6 + 50) / 4)
    assert scores == pytest.approx([release_dvo(p, VOCAB) for p in preds])
    # token level: protein x2 of 6; binding, cells, 3, cells = 4 of 6
    assert dvo_token_scores(preds, VOCAB) == pytest.approx([200 / 6, 400 / 6, 0.0, 0.0])
    assert dvo_token(preds, VOCAB) == pytest.approx((200 / 6 + 400 / 6) / 4)


def test_dvo_edge_cases():
    assert dvo_scores(["   ", None], VOCAB) == [0.0, 0.0]
    assert math.isnan(dvo([], VOCAB)) and math.isnan(dvo_token([], VOCAB))
    assert dvo(["PROTEIN"], set(VOCAB)) == 100.0  # lowercased; sets accepted
    with pytest.raises(VocabularyError):
        dvo(["protein"], [])
    with pytest.raises(TypeError):
        dvo(["protein"], "protein")


def test_write_and_read_round_trip(tmp_path):
    entries = build_vocabulary_counts(DOCS, size=5)
    path = write_vocabulary(tmp_path / "v" / "pubmed.tsv", entries, benchmark="adapteval",
                            subset="pubmed", source="hand", documents=3, words=21)
    voc = read_vocabulary(path)
    assert voc.words == [w for w, _ in entries] == load_vocabulary(path)
    assert voc.counts == [n for _, n in entries]
    h = voc.header
    assert h["format"] == "domsum-vocab/1" and h["size"] == 5 and h["documents"] == 3
    assert h["source"] == "hand" and h["date"] and "word_tokenize" in h["tokenizer"]
    import nltk

    assert h["tokenizer_info"]["nltk_version"] == nltk.__version__  # releases differ by version
    first = path.read_text(encoding="utf-8").splitlines()[:2]
    assert first[0].startswith("# {") and first[1] == "3\t2"


def test_reads_release_format(tmp_path):
    # the AdaptEval release ships one word per line, no header, no counts
    path = tmp_path / "arxiv_top10000_vocabulary.txt"
    path.write_text("xcite\none\nfig\n?\n", encoding="utf-8")
    voc = read_vocabulary(path)
    assert voc.words == ["xcite", "one", "fig", "?"] and voc.counts == [None] * 4
    assert voc.header == {}


def test_malformed_files(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("alpha\t3\nbeta\tmany\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match="line 2"):
        load_vocabulary(bad)
    dup = tmp_path / "dup.tsv"
    dup.write_text("alpha\nalpha\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match="more than once"):
        load_vocabulary(dup)
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(VocabularyError, match="no words"):
        load_vocabulary(empty)
    with pytest.raises(VocabularyNotFoundError):
        load_vocabulary(tmp_path / "nope.tsv")
    with pytest.raises(VocabularyError):
        write_vocabulary(tmp_path / "x.tsv", [("two words", 1)])


def test_vocabulary_dir_precedence(tmp_path, monkeypatch):
    """metadata > $DOMSUM_VOCAB_DIR > default, decided by the settings resolver alone: the
    metric library takes the resolved folder and reads no environment variable."""
    from lm_eval_tasks.settings import resolve

    def folder(meta):
        return vocabulary_dir(resolve(meta, "vocab_dir"))

    monkeypatch.setenv("DOMSUM_VOCAB_DIR", str(tmp_path / "env"))
    assert folder({"vocab_dir": str(tmp_path / "meta")}) == (tmp_path / "meta").resolve()
    assert folder(None) == (tmp_path / "env").resolve()
    assert folder({"vocab_dir": ""}) == (tmp_path / "env").resolve()
    assert vocabulary_dir(None) == vocabulary_dir("") == Path(DEFAULT_VOCAB_DIR).expanduser().resolve()
    monkeypatch.delenv("DOMSUM_VOCAB_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert folder(None) == (tmp_path / "home" / ".cache" / "domsum" / "vocab").resolve()


def test_vocabulary_path_found_and_missing(tmp_path):
    with pytest.raises(VocabularyNotFoundError) as err:
        vocabulary_path("adapteval", "pubmed", tmp_path)
    msg = str(err.value)
    assert "domsum build-vocab --benchmark adapteval --subsets pubmed" in msg
    assert str(tmp_path / "adapteval" / "pubmed.tsv") in msg and "DOMSUM_VOCAB_DIR" in msg
    assert isinstance(err.value, FileNotFoundError)
    target = vocabulary_path("adapteval", "pubmed", tmp_path, must_exist=False)
    write_vocabulary(target, [("protein", 1)])
    assert vocabulary_path("adapteval", "pubmed", tmp_path) == target


def test_build_vocab_cli_one_task(tmp_path, capsys):
    from lm_eval_tasks.commands.build_vocab import main

    texts = _mirror(tmp_path / "data")
    rc = main(["--task", "adapteval_pubmed_2shot", "--data-dir", str(tmp_path / "data"),
               "--vocab-dir", str(tmp_path / "vocab"), "--size", "5", "--no-progress"])
    assert rc == 0
    path = vocabulary_path("adapteval", "pubmed", tmp_path / "vocab")
    voc = read_vocabulary(path)
    # patients 3; then 2, 40, clinics, enrolled (1 each, code-point order)
    assert voc.words == ["patients", "2", "40", "clinics", "enrolled"]
    assert voc.words == build_vocabulary(texts["pubmed"], size=5)
    assert voc.counts[0] == 3
    h = voc.header
    assert (h["benchmark"], h["subset"], h["split"], h["documents"]) == ("adapteval", "pubmed", "train", 2)
    assert h["words"] == 14 and h["source"].endswith("train.jsonl")
    assert "adapteval/pubmed" in capsys.readouterr().out


def test_build_vocab_cli_all_and_errors(tmp_path, capsys):
    from lm_eval_tasks.commands.build_vocab import main

    _mirror(tmp_path / "data")
    out = tmp_path / "vocab"
    assert main(["--all", "--data-dir", str(tmp_path / "data"), "--vocab-dir", str(out),
                 "--no-progress"]) == 0
    assert sorted(p.name for p in (out / "adapteval").iterdir()) == [
        "arxiv.tsv", "govreport.tsv", "pubmed.tsv"]
    assert load_vocabulary(out / "adapteval" / "arxiv.tsv")[0] == "lattice"
    # a split that is not in the mirror: exit 1 with the path and the prepare hint
    assert main(["--benchmark", "adapteval", "--subset", "pubmed", "--split", "validation",
                 "--data-dir", str(tmp_path / "data"), "--vocab-dir", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "validation.jsonl" in err and "domsum prepare-data" in err
    with pytest.raises(SystemExit):
        main(["--subset", "pubmed"])  # --subset without --benchmark
    with pytest.raises(SystemExit):
        main([])


def test_bench_corpus_is_exactly_counted():
    from helpers.corpus import synthetic_corpus

    docs = synthetic_corpus(20000, seed=1)
    assert 20000 <= sum(len(d.split()) for d in docs) < 21000
    naive = Counter(t for d in docs for t in word_tokenize(d))
    assert +VocabularyBuilder(max_chunks=500).add_many(docs).counts() == +naive
    top = build_vocabulary(docs, size=50)
    assert len(top) == 50 and not set(top) & ENGLISH_STOPWORDS


def test_the_run_records_the_vocabulary_and_its_size(tmp_path):
    """What a harness run records about DVO (the family's ``describe``): the file and its number
    of words, against which a paper's "top 10k words" is checked (lm_eval_tasks/published/protocol.py)."""
    from lm_eval_tasks.scoring_context import family_context

    words = [("protein", 9), ("cell", 4), ("dose", 2)]
    path = write_vocabulary(vocabulary_path("adapteval", "pubmed", tmp_path, must_exist=False), words)
    ctx = family_context("dvo", {"vocab_dir": str(tmp_path)}, benchmark="adapteval", subset="pubmed")
    described = DVO.describe(ctx)
    assert described["vocabulary_used"] == str(path) and described["vocabulary_words"] == len(words)

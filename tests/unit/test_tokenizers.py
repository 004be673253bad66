"""Tokenizers: ``word_tokenize`` is NLTK's (offline, bundled Punkt data), spaCy's
tokenizer gives SummEval's ``data_stats`` numbers, the compat tokenizer is separate.

Why: the DomainSum and AdaptEval releases call ``nltk.word_tokenize(text.lower())``;
a look-alike tokenizer moved DomainSum density by 3 % and DVO by up to 1.7 points on
CNN/DailyMail. Newsroom and SummEval tokenize with spaCy.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest import approx

from conftest import FIXTURE_DATA
from custom_metrics import tokenize as T
from custom_metrics.analysis.fragments import newsroom_fragments
from custom_metrics.analysis.measures import PROFILE_TOKENIZERS, domain_measures, pair_measures


HAND_CASES = {
    "Obama's plan": ["obama", "'s", "plan"],
    "obama 's plan": ["obama", "'s", "plan"],  # CNN/DailyMail's pre-split clitic
    "Mr. Smith went to Washington.": ["mr.", "smith", "went", "to", "washington", "."],
    "The U.S. Senate voted. It passed.": ["the", "u.s.", "senate", "voted", ".", "it", "passed", "."],
    "He moved to the U.S.": ["he", "moved", "to", "the", "u.s", "."],
    "You cannot go.": ["you", "can", "not", "go", "."],
    "Let \\frac{a}{b} be given.": ["let", "\\frac", "{", "a", "}", "{", "b", "}", "be", "given", "."],
    'He said "no" twice.': ["he", "said", "``", "no", "''", "twice", "."],
    '"Yes," she said.': ["``", "yes", ",", "''", "she", "said", "."],
    "It's the dogs' bone, isn't it?": ["it", "'s", "the", "dogs", "'", "bone", ",", "is", "n't", "it", "?"],
    "Costs rose 3.5% to $1,000.50 (est.) -- wait...": [
        "costs", "rose", "3.5", "%", "to", "$", "1,000.50", "(", "est", ".", ")", "--", "wait", "..."],
}


@pytest.mark.parametrize("text", list(HAND_CASES))
def test_word_tokenize_is_nltk_on_hand_cases(text):
    assert T.word_tokenize(text) == nltk.word_tokenize(text.lower()) == HAND_CASES[text]


def test_case_is_kept_on_request():
    text = 'Mr. Smith said "Cannot" in the U.S. Senate.'
    assert T.word_tokenize(text, lowercase=False) == nltk.word_tokenize(text)
    assert T.tokenize_many([text, ""]) == [nltk.word_tokenize(text.lower()), []]


def _fixture_texts() -> list[str]:
    texts = []
    for path in sorted(FIXTURE_DATA.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line) if line.strip() else {}
            texts += [v for v in rec.values() if isinstance(v, str) and v.strip()]
    return texts


def test_word_tokenize_is_nltk_on_every_fixture_text():
    texts = _fixture_texts()
    assert len(texts) > 300
    for text in texts:
        assert T.word_tokenize(text) == nltk.word_tokenize(text.lower()), text[:80]
        assert T.word_tokenize(text, lowercase=False) == nltk.word_tokenize(text), text[:80]
    assert T.count_tokens(texts) == Counter(t for x in texts for t in nltk.word_tokenize(x.lower()))


# The characters NLTK's rules treat specially, sentence-final material, clitics and
# the MacIntyre contractions, with every kind of whitespace (NLTK >= 3.10 compiles
# most rules with the ``regex`` engine, whose ``\s`` lacks \x1c-\x1f).
PIECES = [*"ab.,'\"`()[]{}<>»”’“‘«:;-!?*$%&#@", " ", " ", " ", "\n", "\t", "\r", "\u00a0",
          "\u2028", "\x1c", "\x1f", "wanna\x1c",  # \x1c-\x1f: str.split() only
          "\ue000", "x\ue000y", "cannot.", "wanna)", "a.)", "a:", "1,", "(a.", "a..",
          "Cannot", "gonna", "wanna", "'s", "n't", "'ll", "Mr.", "U.S.", "''", "``", "--",
          "...", "'tis", " 't", "Dr. Who", ". ", ".\" ", ".) ", "e.g. ", "1,000", "3.5"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_word_tokenize_is_nltk_on_generated_text(text):
    assert T.word_tokenize(text, lowercase=False) == nltk.word_tokenize(text)
    assert T.word_tokenize(text) == nltk.word_tokenize(text.lower())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), max_size=6))
def test_count_tokens_counts_word_tokenize(texts):
    assert T.count_tokens(texts) == Counter(t for x in texts for t in T.word_tokenize(x))


def test_compat_tokenizer_is_separate_and_differs():
    assert T.TOKENIZERS["nltk"] is T.word_tokenize
    assert T.get_tokenizer("compat") is T.word_tokenize_compat
    assert T.word_tokenize_compat("obama 's u.s. plan cannot") == [
        "obama", "'", "s", "u.s", ".", "plan", "cannot"]
    assert T.word_tokenize("obama 's u.s. plan cannot") == [
        "obama", "'s", "u.s.", "plan", "can", "not"]
    with pytest.raises(ValueError, match="unknown tokenizer"):
        T.get_tokenizer("whitespace")


def test_tokenizer_info_names_nltk_version_and_data():
    info = T.tokenizer_info()
    assert info["name"] == "nltk" and info["nltk_version"] == nltk.__version__
    assert info["punkt"] == "tokenizers/punkt_tab/english/"
    assert info["punkt_source"] in ("bundled", "user nltk_data")
    assert Path(info["punkt_path"]).is_dir()
    assert str(T.NLTK_DATA_DIR) in nltk.data.path
    spacy_info = T.tokenizer_info("spacy")
    assert spacy_info["name"] == "spacy" and spacy_info["spacy_version"]
    json.dumps(info), json.dumps(spacy_info)  # recordable as is


def test_bundled_data_is_english_punkt_tab_only():
    root = T.NLTK_DATA_DIR
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == ["LICENSE", "README.md", *(f"tokenizers/punkt_tab/english/{n}" for n in (
        "abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt"))]
    assert sum((root / f).stat().st_size for f in files) < 300_000
    from nltk.tokenize.punkt import load_punkt_params

    params = load_punkt_params(nltk.data.FileSystemPathPointer(
        str(root / "tokenizers/punkt_tab/english")))
    assert (len(params.abbrev_types), len(params.collocations), len(params.sent_starters),
            len(params.ortho_context)) == (156, 37, 39, 20366)
    assert {"mr", "u.s", "dr", "inc"} <= params.abbrev_types


def test_no_download_in_process(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("download attempted")

    monkeypatch.setattr(nltk, "download", refuse)
    monkeypatch.setattr(nltk.downloader.Downloader, "download", refuse)
    T._cache.clear()
    assert T.word_tokenize("Dr. Who left. Then what?") == ["dr.", "who", "left", ".", "then", "what", "?"]


def test_spacy_tokens_are_summeval_style():
    # spaCy splits infix hyphens, keeps "u.s." and '"', keeps whitespace tokens, and
    # Newsroom/SummEval lowercase *after* tokenizing.
    assert T.spacy_tokenize('The well-known "U.S." policy.') == [
        "the", "well", "-", "known", '"', "u.s.", '"', "policy", "."]
    assert T.spacy_tokenize("Cats sleep.\n\nDogs bark.") == [
        "cats", "sleep", ".", "\n\n", "dogs", "bark", "."]
    assert T.spacy_tokenize("Mr. Smith", lowercase=False) == ["Mr.", "Smith"]
    assert PROFILE_TOKENIZERS == {"domainsum": "nltk", "newsroom": "spacy"}


# (document, summary, fragments, coverage, density, compression) with spaCy tokens
SPACY_CASES = [
    # D: the well - known " u.s. " policy changed .  (10)
    # S: a well - known u.s. policy .                 (7)
    # "a" is absent; "well - known" (3), "u.s." (1), "policy" (1), "." (1)
    ('The well-known "U.S." policy changed.', "A well-known U.S. policy.",
     [3, 1, 1, 1], 6 / 7, 12 / 7, 10 / 7),
    # D: cats sleep . \n\n dogs bark .  (7, the whitespace token counts as in SummEval)
    # S: dogs bark .                     (3) -> one fragment of 3
    ("Cats sleep.\n\nDogs bark.", "Dogs bark.", [3], 1.0, 3.0, 7 / 3),
    # D: mr. smith did n't go to washington .  (8);  S: smith did n't go .  (5)
    ("Mr. Smith didn't go to Washington.", "Smith didn't go.", [4, 1], 1.0, 17 / 5, 8 / 5),
]


@pytest.mark.parametrize("doc,summ,frags,coverage,density,compression", SPACY_CASES)
def test_newsroom_profile_with_spacy_by_hand(doc, summ, frags, coverage, density, compression):
    d, s = T.spacy_tokenize(doc), T.spacy_tokenize(summ)
    assert newsroom_fragments(d, s) == frags
    p = pair_measures(d, s, "newsroom")
    assert (p["coverage"], p["density"], p["compression"]) == (
        approx(coverage), approx(density), approx(compression))
    for kwargs in ({}, {"tokenizer": "spacy"}, {"tokenizer": T.spacy_tokenize}):
        r = domain_measures([doc], [summ], "newsroom", **kwargs)
        assert (r["coverage"], r["density"], r["compression"]) == (
            approx(coverage), approx(density), approx(compression))


def test_tokenizer_choice_changes_newsroom_numbers():
    doc, summ = SPACY_CASES[0][:2]
    # NLTK: D the well-known `` u.s. '' policy changed . (8); S a well-known u.s. policy . (5)
    r = domain_measures([doc], [summ], "newsroom", tokenizer="nltk")
    assert (r["coverage"], r["density"], r["compression"]) == (approx(4 / 5), approx(4 / 5),
                                                               approx(8 / 5))
    doc, summ = SPACY_CASES[1][:2]
    assert domain_measures([doc], [summ], "newsroom", tokenizer="nltk")["compression"] == approx(2)
    assert domain_measures([doc], [summ], "domainsum", tokenizer="spacy")["compression"] == approx(7 / 3)
    with pytest.raises(ValueError, match="unknown tokenizer"):
        domain_measures([doc], [summ], tokenizer="bogus")

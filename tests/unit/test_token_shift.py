"""Token distribution shift: the math by hand, the vocabulary mask, lm-eval samples,
and the CLI on tiny local GPT-2s (identical copy, perturbed copy, LoRA adapters)."""

from __future__ import annotations

import math

import pytest
import torch

from custom_metrics.analysis.token_shift import (
    MARGINAL,
    SHIFTED,
    UNSHIFTED,
    aggregate_shift,
    domain_word_mask,
    position_shift,
    summarize_shift,
    word_spans,
)
from custom_metrics.analysis.shift_models import fit_length
from lm_eval_tasks.analysis.token_shift import (
    SamplesError,
    iter_samples,
    sample_prompt,
    sample_summary,
    zero_shot_from_last_turn,
)
from lm_eval_tasks.results import task_from_samples_name
from helpers.token_shift import DOCS, two_shot, zero_shot
from helpers import token_shift as shared


samples_2shot = shared.samples_2shot  # a fixture, shared with the other half of these tests
work = shared.work  # a fixture, shared with the other half of these tests


def test_kl_hand_computed():
    # P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 0.143841...
    p = torch.log(torch.tensor([[0.5, 0.5]]))
    q = torch.log(torch.tensor([[0.25, 0.75]]))
    kl, _, _ = position_shift(p, q)
    assert kl.item() == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(2 / 3), rel=1e-6)
    assert position_shift(p, p)[0].item() == 0.0
    # a token with zero base probability contributes nothing (0 log 0 = 0)
    p0 = torch.tensor([[0.0, -math.inf]])
    assert position_shift(p0, torch.zeros(1, 2))[0].item() == pytest.approx(math.log(2))


def test_categories_hand_made():
    base = torch.tensor([[4.0, 3.0, 2.0, 1.0, 0.0]] * 4)  # base top-3 = ids 0, 1, 2
    adapted = torch.full((4, 5), 0.0)
    adapted[0, 0] = 9  # top-1 = base top-1 -> unshifted
    adapted[1, 2] = 9  # base rank 3 -> marginal
    adapted[2, 3] = 9  # not in base top-3 -> shifted
    adapted[3, 4] = 9  # shifted
    kl, cat, top1 = position_shift(base, adapted)
    assert cat.tolist() == [UNSHIFTED, MARGINAL, SHIFTED, SHIFTED]
    assert top1.tolist() == [0, 2, 3, 4]
    stats = summarize_shift(kl, cat, [True, True, False, True])
    assert stats["positions_all_positions"] == 4 and stats["shift_rate_all_positions"] == 50.0
    assert stats["marginal_rate_all_positions"] == 25.0 and stats["unshifted_rate_all_positions"] == 25.0
    # the plain names are the paper's: over the domain-vocabulary positions
    assert stats["positions"] == 3
    assert stats["shift_rate"] == pytest.approx(100 / 3)
    assert stats["kl"] == pytest.approx((kl[0] + kl[1] + kl[3]).item() / 3, rel=1e-6)
    assert stats["kl_all_positions"] == pytest.approx(kl.mean().item(), rel=1e-6)
    # without a vocabulary the paper's statistics are not computed: null, never the all-position ones
    bare = summarize_shift(kl, cat)
    assert bare["kl"] is None and bare["shift_rate"] is None and bare["positions"] is None
    assert bare["shift_rate_all_positions"] == 50.0
    # ties: identical logits always unshifted, even with every token tied
    flat = torch.zeros(3, 5)
    assert position_shift(flat, flat.clone())[1].tolist() == [UNSHIFTED] * 3


def test_aggregate_mean_and_pooled():
    d1 = summarize_shift([1.0, 3.0], [SHIFTED, UNSHIFTED], [True, False])
    d2 = summarize_shift([0.0, 0.0, 0.0, 0.0], [UNSHIFTED] * 4, [False] * 4)
    empty = summarize_shift([], [], [])
    agg = aggregate_shift([d1, d2, empty])
    assert agg["documents"] == 3 and agg["documents_with_positions_all_positions"] == 2
    assert agg["kl_all_positions"] == pytest.approx((2.0 + 0.0) / 2)  # mean over documents
    assert agg["shift_rate_all_positions"] == pytest.approx((50 + 0) / 2)
    assert agg["pooled"]["kl_all_positions"] == pytest.approx(4.0 / 6)  # over positions
    assert agg["pooled"]["shift_rate_all_positions"] == pytest.approx(100 / 6)
    # only d1 has a domain-vocabulary position (its first, KL 1.0, shifted)
    assert agg["documents_with_positions"] == 1 and agg["positions"] == 1
    assert agg["kl"] == 1.0 and agg["shift_rate"] == 100.0 and agg["pooled"]["kl"] == 1.0
    assert empty["kl_all_positions"] is None and empty["shift_rate"] is None


def test_word_spans():
    assert word_spans("Protein-binding (Kinase) didn't.") == [
        ("protein-binding", 0, 15), ("(", 16, 17), ("kinase", 17, 23), (")", 23, 24),
        ("did", 25, 28), ("n't", 28, 31), (".", 31, 32)]


def test_domain_word_mask_hand_made():
    text = " The Protein-binding (kinase) cells' kinases."
    # a hand-made BPE-like segmentation with GPT-2 style leading spaces
    pieces = [" The", " Prot", "ein", "-", "binding", " (", "kin", "ase", ")", " cells", "'",
              " kin", "ases", "."]
    assert "".join(pieces) == text
    offsets, pos = [], 0
    for piece in pieces:
        offsets.append((pos, pos + len(piece)))
        pos += len(piece)
    vocab = {"protein-binding", "kinase", "cells"}  # not "kinases", not "protein"
    mask = domain_word_mask(text, offsets, vocab)
    assert [p for p, m in zip(pieces, mask) if m] == [" Prot", "kin", " cells"]
    # offsets that exclude the leading space (sentencepiece style) give the same mask
    trimmed = [(s + 1, e) if text[s] == " " else (s, e) for s, e in offsets]
    assert domain_word_mask(text, trimmed, vocab) == mask
    # a token that merges "(" with the word still begins the word
    merged = [(0, 4), (4, 20), (20, 25), (25, len(text))]  # " The", ..., " (kin", ...
    assert domain_word_mask(text, merged, {"kinase"}) == [False, False, True, False]
    # special tokens (zero-width) never count
    assert domain_word_mask("cells", [(0, 0), (0, 5)], {"cells"}) == [False, True]


def test_samples_parsing(samples_2shot):
    rows = list(iter_samples(samples_2shot))
    assert [s["doc_id"] for _, s in rows] == [0, 1, 2]  # duplicate doc_id 0 ignored
    where, s0 = rows[0]
    assert sample_prompt(s0) == two_shot(DOCS[0][0])
    assert sample_summary(s0) == DOCS[0][1]
    assert sample_summary(s0, "filtered") == DOCS[0][1].strip()
    assert sample_summary(s0, "reference") == "reference summary"
    assert [s["filter"] for _, s in iter_samples(samples_2shot, "strip")] == ["strip"]
    # the in-memory form of Instance.args is accepted too
    assert sample_prompt({"arguments": [["ctx", {"until": []}]]}) == "ctx"
    with pytest.raises(SamplesError, match="gen_args_0"):
        sample_prompt({"arguments": {"x": 1}})
    assert task_from_samples_name(samples_2shot) == "adapteval_pubmed_2shot"
    assert task_from_samples_name("results.jsonl") is None


def test_bad_samples_file(tmp_path):
    bad = tmp_path / "s.jsonl"
    bad.write_text('{"doc_id": 0}\n{not json\n', encoding="utf-8")
    with pytest.raises(SamplesError, match="line 2"):
        list(iter_samples(bad))
    with pytest.raises(SamplesError, match="not found"):
        list(iter_samples(tmp_path / "missing.jsonl"))


def test_zero_shot_rebuild():
    doc = DOCS[0][0]
    assert zero_shot_from_last_turn(two_shot(doc)) == zero_shot(doc)
    assert zero_shot_from_last_turn(zero_shot(doc)) == zero_shot(doc)
    chat = "<|user|>\n" + two_shot(doc) + "\n<|assistant|>\n"
    assert zero_shot_from_last_turn(chat) == "<|user|>\n" + zero_shot(doc) + "\n<|assistant|>\n"
    with pytest.raises(SamplesError, match="turn marker"):
        zero_shot_from_last_turn("no marker here")


def test_fit_length():
    assert fit_length([1, 2, 3], [4, 5], 10) == ([1, 2, 3], [4, 5], 0)
    assert fit_length([1, 2, 3], [4, 5], 4) == ([2, 3], [4, 5], 1)  # prompt cut on the left
    assert fit_length([1, 2, 3], [4, 5, 6, 7], 3) == ([3], [4, 5], 4)  # summary cut too


def test_word_spans_map_nltk_quote_tokens_back_to_the_text():
    text = 'He said "stop now" and ``left\'\' today.'
    spans = word_spans(text)
    assert [t for t, _, _ in spans][:3] == ["he", "said", "``"]
    assert [text[a:b] for _, a, b in spans] == ["He", "said", '"', "stop", "now", '"', "and", "``", "left", "''",
                                                "today", "."]


# --------------------------------------------------------------------------- the release's POS positions

TAGS = {"The": "DT", "protein": "NN", "binds": "VBZ", "receptors": "NNS", "quickly": "RB", ".": ".",
        "Proteins": "NNS", "bind": "VBP", "A": "DT", "(": "(", "big": "JJ", ")": ")", "cat": "NN"}


def tagger(tokens):
    """A fixed tag table standing in for NLTK's perceptron tagger (whose data is a download)."""
    return [(t, TAGS[t]) for t in tokens]


def test_release_pos_indices_by_hand():
    from custom_metrics.analysis.token_shift import release_pos_word_indices

    # NLTK tokens The/DT protein/NN binds/VBZ receptors/NNS quickly/RB ./. ; the release's
    # order is nouns (1, 3), adjectives (none), verbs (2), each index minus one
    assert release_pos_word_indices("The protein binds receptors quickly.", tagger) == [0, 2, 1]
    # the first token a noun: index -1; verbs after nouns
    assert release_pos_word_indices("Proteins bind .", tagger) == [-1, 0]


def test_release_pos_mask_by_hand():
    from custom_metrics.analysis.token_shift import release_pos_mask

    text = "The protein binds receptors quickly."
    # model tokens: "The", " protein", " binds", " rec", "eptors", " quickly", "."
    offsets = [(0, 3), (3, 11), (11, 17), (17, 20), (20, 27), (27, 35), (35, 36)]
    # words 0, 2, 1 (The, binds, protein) -> the tokens that begin them
    assert release_pos_mask(text, offsets, tagger) == ([True, True, True, False, False, False, False], 0)
    # -1 is the last whitespace word ("."), as the release's words[:-1] prefix predicts it
    assert release_pos_mask("Proteins bind .", [(0, 8), (8, 13), (13, 15)], tagger) == ([True, False, True], 0)
    # NLTK splits "(big)" and "cat." into more tokens than whitespace words: the noun "cat"
    # (token 4) gives word 3, past the 3 words "A", "(big)", "cat.": dropped and counted
    mask, dropped = release_pos_mask("A (big) cat.", [(0, 1), (1, 3), (3, 6), (6, 7), (7, 11), (11, 12)], tagger)
    assert (mask, dropped) == ([False, True, False, False, False, False], 1)


def test_summary_over_selected_positions_by_hand():
    kl, cat = [0.1, 0.2, 0.3, 0.4], [UNSHIFTED, SHIFTED, MARGINAL, SHIFTED]
    out = summarize_shift(kl, cat, vocab_mask=[False, True, False, False], selected=[True, False, True, True])
    assert out["positions_all_positions"] == 3 and out["kl_all_positions"] == pytest.approx((0.1 + 0.3 + 0.4) / 3)
    assert (out["shift_rate_all_positions"], out["marginal_rate_all_positions"],
            out["unshifted_rate_all_positions"]) == pytest.approx((100 / 3,) * 3)
    # the vocabulary positions are not narrowed by the selection
    assert (out["positions"], out["kl"], out["shift_rate"]) == (1, 0.2, 100.0)
    with pytest.raises(ValueError, match="selected has 2 entries for 4 positions"):
        summarize_shift(kl, cat, selected=[True, False])


def test_missing_tagger_data_is_one_suite_error(monkeypatch):
    import nltk

    from custom_metrics.errors import SuiteError
    from custom_metrics.analysis.token_shift import release_pos_word_indices

    def no_data(tokens):
        raise LookupError("Resource averaged_perceptron_tagger_eng not found.")

    monkeypatch.setattr(nltk, "pos_tag", no_data)
    with pytest.raises(SuiteError, match="nltk.downloader averaged_perceptron_tagger_eng"):
        release_pos_word_indices("The protein binds.")


def test_protocol_settings_default_to_the_paper(monkeypatch):
    from lm_eval_tasks.settings import SettingError, resolve

    monkeypatch.delenv("DOMSUM_TOKEN_SHIFT_POSITIONS", raising=False)
    monkeypatch.delenv("DOMSUM_TOKEN_SHIFT_SAMPLES", raising=False)
    assert resolve({}, "token_shift_positions") == "paper" and resolve({}, "token_shift_samples") == 10
    monkeypatch.setenv("DOMSUM_TOKEN_SHIFT_POSITIONS", "release")
    assert resolve({}, "token_shift_positions") == "release"
    assert resolve({"token_shift_positions": "paper"}, "token_shift_positions") == "paper"  # flag/metadata first
    with pytest.raises(SettingError, match="token_shift_samples.*>= 0"):
        resolve({"token_shift_samples": -1}, "token_shift_samples")


def test_the_outputs_state_each_unit_and_table_4s_caveat():
    """The paper's statistics carry the plain names and every output says its unit; what
    AdaptEval Table 4 leaves unstated about its KL is said beside it, not guessed."""
    from custom_metrics.analysis.token_shift import ALL_POSITIONS, STAT_KEYS
    from lm_eval_tasks.analysis.token_shift import CSV_COLUMNS, TABLE4_UNITS, format_summary, units

    paper, release = units("paper"), units("release")
    assert set(paper) == {f"{k}{sfx}" for k in STAT_KEYS for sfx in ("", ALL_POSITIONS)}
    assert paper["kl"] == ("nats per position: KL(P_base || P_adapted) with the natural logarithm at each position, "
                           "averaged over a document's positions, then over documents; over the domain-vocabulary "
                           "positions (AdaptEval Section 4's)")
    assert paper["shift_rate"].startswith("percent of positions whose adapted top-1 token is not in the base top-3")
    assert paper["kl_all_positions"].endswith("over every summary position")
    assert release["kl_all_positions"].endswith("(token_shift_positions=release)")
    assert "neither the logarithm base" in TABLE4_UNITS and "0.18 to 21.49" in TABLE4_UNITS
    assert {"kl", "shift_rate", "kl_all_positions", "shift_rate_all_positions"} <= set(CSV_COLUMNS)
    assert not [c for c in CSV_COLUMNS if c.endswith("_vocab")]

    docs = [summarize_shift([0.5, 1.5, 0.25], [SHIFTED, UNSHIFTED, MARGINAL], [True, False, False])]
    overall = {**aggregate_shift(docs), "forward_passes": 2, "seconds": 0.1}
    text = format_summary({"overall": overall, "config": {"base_label": "b", "adapted_label": "a",
                                                          "documents_available": 1, "seed": 42, "positions": "paper"}})
    lines = text.splitlines()
    assert "3 paper summary positions (1 at domain words)" in lines[1]
    assert lines[3].split() == ["domain", "words", "0.5", "100", "0", "0"]  # the paper's row first
    assert lines[4].split() == ["all", "positions", "0.75", "33.33", "33.33", "33.33"]
    assert lines[5].startswith("KL in nats per position")

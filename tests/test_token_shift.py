"""Token distribution shift: the math by hand, the vocabulary mask, lm-eval samples,
and the CLI on tiny local GPT-2s (identical copy, perturbed copy, LoRA adapters)."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from custom_metrics.token_shift import (
    MARGINAL,
    SHIFTED,
    UNSHIFTED,
    aggregate_shift,
    domain_word_mask,
    position_shift,
    summarize_shift,
    word_spans,
)
from custom_metrics.analysis.shift_models import (
    ModelSpec,
    Runner,
    TokenizerMismatchError,
    encode_prompt,
    encode_summary,
    fit_length,
    load_model,
    load_tokenizer,
)
from lm_eval_tasks.analysis.token_shift import (
    SamplesError,
    ShiftConfig,
    compute_shift,
    iter_samples,
    sample_prompt,
    sample_summary,
    zero_shot_from_last_turn,
)
from lm_eval_tasks.commands.token_shift import main
from lm_eval_tasks.results import task_from_samples_name

INSTRUCTION = "You are an expert at summarization."
TURN = "Proceed to summarize the following text. TEXT: {document}\nSUMMARY:"
DOCS = [
    ("Researchers measured the effect of the treatment on patients in a small trial.",
     " The treatment improved outcomes for patients in the trial."),
    ("The committee reviewed the report and summarized its findings for the public.",
     " The committee summarized the report for the public."),
    ("Step one: gather the tools. Step two: clean the surface before you paint it.",
     ""),  # an empty generation
]
DEMO = ("The agency reviewed the report.", "A short summary of the report.")
VOCAB = ["treatment", "patients", "trial", "committee", "report", "public", "outcomes"]


# --------------------------------------------------------------------------- fixtures


def _sample(doc_id: int, prompt: str, document: str, generated: str, filt: str = "none") -> dict:
    """One line as lm-eval 0.4.x's EvaluationTracker writes it for generate_until."""
    return {
        "doc_id": doc_id,
        "doc": {"document": document, "summary": "reference summary", "id": f"t/{doc_id}"},
        "target": "reference summary",
        "arguments": {"gen_args_0": {"arg_0": prompt,
                                     "arg_1": {"until": ["\n\n"], "max_gen_toks": 256, "do_sample": False}}},
        "resps": [[generated]],
        "filtered_resps": [generated.strip()],
        "filter": filt,
        "metrics": ["rouge1", "dvo"],
        "doc_hash": "0" * 64, "prompt_hash": "1" * 64, "target_hash": "2" * 64,
        "rouge1": 0.5, "dvo": 10.0,
    }


def zero_shot(document: str) -> str:
    return f"{INSTRUCTION} " + TURN.format(document=document)


def two_shot(document: str) -> str:
    demo = TURN.format(document=DEMO[0]) + " " + DEMO[1]
    return f"{INSTRUCTION} " + "\n".join([demo, demo, TURN.format(document=document)])


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("token_shift")


@pytest.fixture(scope="module")
def base_dir(work) -> Path:
    from lm_eval_tasks.tiny_models import build_causal_lm

    corpus = work / "corpus" / "x" / "y"
    corpus.mkdir(parents=True)
    with open(corpus / "train.jsonl", "w", encoding="utf-8") as fh:
        for doc, summ in DOCS * 3:
            fh.write(json.dumps({"document": doc, "summary": summ}) + "\n")
    return build_causal_lm(work / "base", [work / "corpus"])


@pytest.fixture(scope="module")
def noisy_dir(work, base_dir) -> Path:
    """A perturbed copy: Gaussian noise on every weight, saved to another directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base_dir)
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    out = work / "noisy"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_dir).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def samples_2shot(work) -> Path:
    path = work / "samples_adapteval_pubmed_2shot_2025-01-02T03-04-05.678901.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, (doc, gen) in enumerate(DOCS):
            fh.write(json.dumps(_sample(i, two_shot(doc), doc, gen)) + "\n")
        # a second filter's line for doc 0: must be ignored (first line per doc_id)
        fh.write(json.dumps(_sample(0, two_shot(DOCS[0][0]), DOCS[0][0], " other", "strip")) + "\n")
    return path


@pytest.fixture(scope="module")
def samples_0shot(work) -> Path:
    path = work / "samples_adapteval_pubmed_2025-01-02T03-04-05.678901.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, (doc, gen) in enumerate(DOCS):
            fh.write(json.dumps(_sample(i, zero_shot(doc), doc, " zero-shot output")) + "\n")
    return path


def cfg(samples: Path, base: Path, adapted: Path | None = None, **kw) -> ShiftConfig:
    return ShiftConfig(samples=str(samples), base=ModelSpec(str(base)),
                       adapted=ModelSpec(str(adapted or base)), device="cpu", **kw)


# --------------------------------------------------------------------------- math by hand


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
    assert stats["positions"] == 4 and stats["shift_rate"] == 50.0
    assert stats["marginal_rate"] == 25.0 and stats["unshifted_rate"] == 25.0
    assert stats["positions_vocab"] == 3
    assert stats["shift_rate_vocab"] == pytest.approx(100 / 3)
    assert stats["kl_vocab"] == pytest.approx((kl[0] + kl[1] + kl[3]).item() / 3, rel=1e-6)
    # ties: identical logits always unshifted, even with every token tied
    flat = torch.zeros(3, 5)
    assert position_shift(flat, flat.clone())[1].tolist() == [UNSHIFTED] * 3


def test_aggregate_mean_and_pooled():
    d1 = summarize_shift([1.0, 3.0], [SHIFTED, UNSHIFTED], [True, False])
    d2 = summarize_shift([0.0, 0.0, 0.0, 0.0], [UNSHIFTED] * 4, [False] * 4)
    empty = summarize_shift([], [], [])
    agg = aggregate_shift([d1, d2, empty])
    assert agg["documents"] == 3 and agg["documents_with_positions"] == 2
    assert agg["kl"] == pytest.approx((2.0 + 0.0) / 2)  # mean over documents
    assert agg["shift_rate"] == pytest.approx((50 + 0) / 2)
    assert agg["pooled"]["kl"] == pytest.approx(4.0 / 6)  # over positions
    assert agg["pooled"]["shift_rate"] == pytest.approx(100 / 6)
    assert agg["positions_vocab"] == 1 and agg["kl_vocab"] == 1.0 and agg["shift_rate_vocab"] == 100.0
    assert empty["kl"] is None and empty["shift_rate_vocab"] is None


# --------------------------------------------------------------------------- vocabulary mask


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


def test_domain_word_mask_with_real_tokenizer(base_dir):
    tok = load_tokenizer(ModelSpec(str(base_dir)))
    summary = DOCS[0][1]  # " The treatment improved outcomes for patients in the trial."
    ids, offsets = encode_summary(tok, summary)
    mask = domain_word_mask(summary, offsets, VOCAB)
    begun = [summary[s:e].strip() for (s, e), m in zip(offsets, mask) if m]
    # each vocabulary word is begun by exactly one token, which starts that word
    assert len(begun) == 4
    for piece, word in zip(begun, ["treatment", "outcomes", "patients", "trial"]):
        assert word.startswith(piece.lower()) and piece


# --------------------------------------------------------------------------- samples


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


# --------------------------------------------------------------------------- models


def test_one_pass_equals_per_prefix(base_dir, noisy_dir):
    tok = load_tokenizer(ModelSpec(str(base_dir)))
    run = Runner(load_model(ModelSpec(str(noisy_dir)), torch.float32, "cpu"))
    prompt = encode_prompt(tok, two_shot(DOCS[1][0]))
    summary, _ = encode_summary(tok, DOCS[1][1], need_offsets=False)
    fast = run.summary_logits(prompt, summary)
    assert run.forward_passes == 1 and fast.shape == (len(summary), len(tok))
    slow = run.per_prefix_logits(prompt, summary)
    assert run.forward_passes == 1 + len(summary)
    torch.testing.assert_close(torch.log_softmax(fast, -1), torch.log_softmax(slow, -1),
                               atol=1e-4, rtol=1e-4)


def test_identical_models_give_zero(base_dir, samples_2shot):
    res = compute_shift(cfg(samples_2shot, base_dir), VOCAB)
    o = res["overall"]
    assert o["documents"] == 3 and o["documents_with_positions"] == 2  # doc 2 is empty
    assert o["kl"] == 0.0 and o["shift_rate"] == 0.0 and o["marginal_rate"] == 0.0
    assert o["unshifted_rate"] == 100.0
    assert o["kl_vocab"] == 0.0 and o["shift_rate_vocab"] == 0.0 and o["positions_vocab"] >= 6
    assert o["forward_passes"] == 4  # one per model per non-empty document
    assert res["documents"][2]["positions"] == 0 and res["documents"][2]["kl"] is None
    assert res["top_shifted_tokens"] == []


def test_perturbed_copy_gives_positive_kl(base_dir, noisy_dir, samples_2shot):
    res = compute_shift(cfg(samples_2shot, base_dir, noisy_dir), VOCAB)
    o = res["overall"]
    assert o["kl"] > 0 and o["kl_vocab"] > 0
    for d in res["documents"][:2]:
        assert d["kl"] > 0
        assert d["shift_rate"] + d["marginal_rate"] + d["unshifted_rate"] == pytest.approx(100)
        assert d["summary_tokens"] == d["positions"]
    # reversing the roles changes KL(P||Q) into KL(Q||P): generally different
    rev = compute_shift(cfg(samples_2shot, noisy_dir, base_dir), VOCAB)
    assert rev["overall"]["kl"] > 0 and rev["overall"]["kl"] != pytest.approx(o["kl"], rel=1e-6)


def test_lora_adapters(work, base_dir, samples_2shot):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    def adapter(name: str, init: bool) -> Path:
        model = AutoModelForCausalLM.from_pretrained(base_dir)
        torch.manual_seed(3)
        peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"],
                                                      init_lora_weights=init, fan_in_fan_out=True))
        peft_model.save_pretrained(work / name)
        return work / name

    zero = adapter("lora_zero", True)  # B = 0: the adapter changes nothing
    rand = adapter("lora_rand", False)
    base = ModelSpec(str(base_dir))
    same = compute_shift(ShiftConfig(samples=str(samples_2shot), base=base,
                                     adapted=ModelSpec(str(base_dir), peft=str(zero)), device="cpu"), VOCAB)
    assert same["overall"]["kl"] == pytest.approx(0.0, abs=1e-9)
    assert same["overall"]["shift_rate"] == 0.0
    moved = compute_shift(ShiftConfig(samples=str(samples_2shot), base=base,
                                      adapted=ModelSpec(str(base_dir), peft=str(rand)), device="cpu"), VOCAB)
    assert moved["overall"]["kl"] > 0


def test_prompt_vs_prompt(base_dir, samples_2shot, samples_0shot):
    one = ModelSpec(str(base_dir))
    # zero-shot prompts from the 0-shot run's samples vs the 2-shot prompts
    res = compute_shift(ShiftConfig(samples=str(samples_2shot), mode="prompt", base=one,
                                    base_samples=str(samples_0shot), device="cpu"), VOCAB)
    o = res["overall"]
    assert o["kl"] > 0
    d0 = res["documents"][0]
    assert d0["prompt_tokens_base"] < d0["prompt_tokens_adapted"]
    # the rebuilt zero-shot prompt is the same text, so the same numbers
    rebuilt = compute_shift(ShiftConfig(samples=str(samples_2shot), mode="prompt", base=one,
                                        rebuild_zero_shot=True, device="cpu"), VOCAB)
    assert rebuilt["overall"]["kl"] == pytest.approx(o["kl"], rel=1e-6)
    assert rebuilt["overall"]["shift_rate"] == o["shift_rate"]
    # the same prompts on both sides: no shift
    flat = compute_shift(ShiftConfig(samples=str(samples_2shot), mode="prompt", base=one,
                                     base_samples=str(samples_2shot), device="cpu"), VOCAB)
    assert flat["overall"]["kl"] == 0.0 and flat["overall"]["shift_rate"] == 0.0


def test_different_tokenizers_are_an_error(work, base_dir, samples_2shot):
    from lm_eval_tasks.tiny_models import train_tokenizer

    other = work / "other_tok"
    shutil.copytree(base_dir, other)
    train_tokenizer(["completely different text for another vocabulary"] * 3,
                    vocab_size=300).save_pretrained(other)
    with pytest.raises(TokenizerMismatchError, match="share one tokenizer"):
        compute_shift(cfg(samples_2shot, base_dir, other), VOCAB)


def test_cli_outputs_and_vocab_resolution(work, base_dir, noisy_dir, samples_2shot, capsys):
    from custom_metrics.dvo import vocabulary_path, write_vocabulary

    vocab_dir = work / "vocab"
    write_vocabulary(vocabulary_path("adapteval", "pubmed", vocab_dir, must_exist=False),
                     [(w, 1) for w in VOCAB])
    out, table = work / "shift.json", work / "shift.csv"
    # the vocabulary comes from the task named in the samples file name
    rc = main(["--samples", str(samples_2shot), "--base", str(base_dir), "--adapted", str(noisy_dir),
               "--vocab-dir", str(vocab_dir), "--limit", "2", "--dtype", "float32", "--device", "cpu",
               "--output", str(out), "--csv", str(table), "--no-progress"])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["overall"]["documents"] == 2 and res["overall"]["kl"] > 0
    assert res["config"]["vocab"].endswith("pubmed.tsv") and res["config"]["vocabulary_size"] == len(VOCAB)
    rows = list(csv.DictReader(open(table, encoding="utf-8")))
    assert [r["doc_id"] for r in rows] == ["0", "1"]
    assert float(rows[0]["kl"]) == pytest.approx(res["documents"][0]["kl"])
    printed = capsys.readouterr().out
    assert "domain words" in printed and "shift %" in printed
    # a missing vocabulary names the build command
    with pytest.raises(SystemExit):
        main(["--samples", str(samples_2shot), "--base", str(base_dir),
              "--vocab-dir", str(work / "nowhere"), "--device", "cpu"])
    assert "domsum build-vocab" in capsys.readouterr().err
    # argument errors
    with pytest.raises(SystemExit):
        main(["--samples", str(samples_2shot), "--mode", "prompt", "--model", str(base_dir), "--no-vocab"])
    with pytest.raises(SystemExit):
        main(["--samples", str(samples_2shot), "--no-vocab"])


def test_word_spans_map_nltk_quote_tokens_back_to_the_text():
    text = 'He said "stop now" and ``left\'\' today.'
    spans = word_spans(text)
    assert [t for t, _, _ in spans][:3] == ["he", "said", "``"]
    assert [text[a:b] for _, a, b in spans] == ["He", "said", '"', "stop", "now", '"', "and", "``", "left", "''",
                                                "today", "."]

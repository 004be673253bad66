"""Token shift on tiny GPT-2 models built in the test: one pass against per-prefix passes,
identical, perturbed and LoRA models, prompt against prompt, and the command line.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch

from custom_metrics.analysis.token_shift import domain_word_mask
from custom_metrics.analysis.shift_models import (
    ModelSpec,
    Runner,
    TokenizerMismatchError,
    encode_prompt,
    encode_summary,
    load_model,
    load_tokenizer,
)
from lm_eval_tasks.analysis.token_shift import TABLE4_UNITS, ShiftConfig, compute_shift
from lm_eval_tasks.commands.token_shift import main
from helpers.token_shift import DOCS, _sample, two_shot, zero_shot
from helpers import token_shift as shared


samples_2shot = shared.samples_2shot  # a fixture, shared with the other half of these tests
work = shared.work  # a fixture, shared with the other half of these tests


VOCAB = ["treatment", "patients", "trial", "committee", "report", "public", "outcomes"]


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
def samples_0shot(work) -> Path:
    path = work / "samples_adapteval_pubmed_2025-01-02T03-04-05.678901.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, (doc, gen) in enumerate(DOCS):
            fh.write(json.dumps(_sample(i, zero_shot(doc), doc, " zero-shot output")) + "\n")
    return path


def cfg(samples: Path, base: Path, adapted: Path | None = None, **kw) -> ShiftConfig:
    return ShiftConfig(samples=str(samples), base=ModelSpec(str(base)),
                       adapted=ModelSpec(str(adapted or base)), device="cpu", **kw)


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
    assert o["documents"] == 3 and o["documents_with_positions_all_positions"] == 2  # doc 2 is empty
    assert o["kl_all_positions"] == 0.0 and o["shift_rate_all_positions"] == 0.0
    assert o["marginal_rate_all_positions"] == 0.0
    assert o["unshifted_rate_all_positions"] == 100.0
    assert o["kl"] == 0.0 and o["shift_rate"] == 0.0 and o["positions"] >= 6
    assert o["forward_passes"] == 4  # one per model per non-empty document
    assert res["documents"][2]["positions_all_positions"] == 0 and res["documents"][2]["kl_all_positions"] is None
    assert res["top_shifted_tokens"] == []


def test_perturbed_copy_gives_positive_kl(base_dir, noisy_dir, samples_2shot):
    res = compute_shift(cfg(samples_2shot, base_dir, noisy_dir), VOCAB)
    o = res["overall"]
    assert o["kl_all_positions"] > 0 and o["kl"] > 0
    for d in res["documents"][:2]:
        assert d["kl_all_positions"] > 0
        rates = ("shift_rate_all_positions", "marginal_rate_all_positions", "unshifted_rate_all_positions")
        assert sum(d[k] for k in rates) == pytest.approx(100)
        assert d["summary_tokens"] == d["positions_all_positions"]
    # reversing the roles changes KL(P||Q) into KL(Q||P): generally different
    rev = compute_shift(cfg(samples_2shot, noisy_dir, base_dir), VOCAB)
    reversed_kl = rev["overall"]["kl_all_positions"]
    assert reversed_kl > 0 and reversed_kl != pytest.approx(o["kl_all_positions"], rel=1e-6)


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
    assert same["overall"]["kl_all_positions"] == pytest.approx(0.0, abs=1e-9)
    assert same["overall"]["shift_rate_all_positions"] == 0.0
    moved = compute_shift(ShiftConfig(samples=str(samples_2shot), base=base,
                                      adapted=ModelSpec(str(base_dir), peft=str(rand)), device="cpu"), VOCAB)
    assert moved["overall"]["kl_all_positions"] > 0


def test_prompt_vs_prompt(base_dir, samples_2shot, samples_0shot):
    one = ModelSpec(str(base_dir))
    # zero-shot prompts from the 0-shot run's samples vs the 2-shot prompts
    res = compute_shift(ShiftConfig(samples=str(samples_2shot), mode="prompt", base=one,
                                    base_samples=str(samples_0shot), device="cpu"), VOCAB)
    o = res["overall"]
    assert o["kl_all_positions"] > 0
    d0 = res["documents"][0]
    assert d0["prompt_tokens_base"] < d0["prompt_tokens_adapted"]
    # the rebuilt zero-shot prompt is the same text, so the same numbers
    rebuilt = compute_shift(ShiftConfig(samples=str(samples_2shot), mode="prompt", base=one,
                                        rebuild_zero_shot=True, device="cpu"), VOCAB)
    assert rebuilt["overall"]["kl_all_positions"] == pytest.approx(o["kl_all_positions"], rel=1e-6)
    assert rebuilt["overall"]["shift_rate_all_positions"] == o["shift_rate_all_positions"]
    # the same prompts on both sides: no shift
    flat = compute_shift(ShiftConfig(samples=str(samples_2shot), mode="prompt", base=one,
                                     base_samples=str(samples_2shot), device="cpu"), VOCAB)
    assert flat["overall"]["kl_all_positions"] == 0.0 and flat["overall"]["shift_rate_all_positions"] == 0.0


def test_different_tokenizers_are_an_error(work, base_dir, samples_2shot):
    from lm_eval_tasks.tiny_models import train_tokenizer

    other = work / "other_tok"
    shutil.copytree(base_dir, other)
    train_tokenizer(["completely different text for another vocabulary"] * 3,
                    vocab_size=300).save_pretrained(other)
    with pytest.raises(TokenizerMismatchError, match="share one tokenizer"):
        compute_shift(cfg(samples_2shot, base_dir, other), VOCAB)


def test_cli_outputs_and_vocab_resolution(work, base_dir, noisy_dir, samples_2shot, capsys):
    from custom_metrics.families.dvo import vocabulary_path, write_vocabulary

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
    assert res["overall"]["documents"] == 2 and res["overall"]["kl_all_positions"] > 0
    assert res["config"]["vocab"].endswith("pubmed.tsv") and res["config"]["vocabulary_size"] == len(VOCAB)
    rows = list(csv.DictReader(open(table, encoding="utf-8")))
    assert [r["doc_id"] for r in rows] == ["0", "1"]
    assert float(rows[0]["kl_all_positions"]) == pytest.approx(res["documents"][0]["kl_all_positions"])
    assert float(rows[0]["kl"]) == pytest.approx(res["documents"][0]["kl"])
    assert res["units"]["kl"].startswith("nats per position") and "domain-vocabulary" in res["units"]["kl"]
    assert "every summary position" in res["units"]["shift_rate_all_positions"]
    assert res["published_comparison"] == TABLE4_UNITS
    printed = capsys.readouterr().out
    assert "domain words" in printed and "shift %" in printed and "KL in nats per position" in printed
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


# --------------------------------------------------------------------------- the paper's protocol


@pytest.fixture(scope="module")
def samples_12(work) -> Path:
    """Twelve documents, so that the paper's 10-sample draw leaves two out."""
    path = work / "samples_adapteval_pubmed_2shot_2025-02-03T04-05-06.000000.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(12):
            doc, gen = DOCS[i % 2]
            fh.write(json.dumps(_sample(i, two_shot(f"{doc} Case {i}."), doc, f"{gen} Case {i} of twelve.")) + "\n")
    return path


def test_ten_sample_mean_is_the_mean_of_the_ten(work, base_dir, noisy_dir, samples_12):
    import random

    res = compute_shift(cfg(samples_12, base_dir, noisy_dir, sample_count=10, seed=7), VOCAB)
    drawn = sorted(random.Random(7).sample(range(12), 10))  # the draw, recomputed
    assert res["config"]["doc_ids"] == drawn and res["config"]["documents_available"] == 12
    assert res["overall"]["documents"] == 10 and res["config"]["sample_count"] == 10
    # each drawn document scored again on its own (a one-document file, every document kept)
    lines = samples_12.read_text(encoding="utf-8").splitlines()
    alone = []
    for i in drawn:
        one = work / f"samples_adapteval_pubmed_2shot_2025-02-04T04-05-06.{i:06d}.jsonl"
        one.write_text(lines[i] + "\n", encoding="utf-8")
        alone.append(compute_shift(cfg(one, base_dir, noisy_dir, sample_count=0), VOCAB)["documents"][0])
    for key in ("kl_all_positions", "shift_rate_all_positions", "kl", "shift_rate"):
        assert res["overall"][key] == pytest.approx(sum(d[key] for d in alone) / 10, rel=1e-5)
        assert res["overall"][key] == pytest.approx(sum(d[key] for d in res["documents"]) / 10)
    # 0 = every document
    assert compute_shift(cfg(samples_12, base_dir, noisy_dir, sample_count=0), None)["overall"]["documents"] == 12


def test_window_recorded_is_the_one_used(base_dir, noisy_dir, samples_2shot):
    from transformers import AutoConfig

    res = compute_shift(cfg(samples_2shot, base_dir, noisy_dir), None)
    n_positions = AutoConfig.from_pretrained(base_dir).n_positions
    assert (res["config"]["window"], res["config"]["window_from"]) == (n_positions, f"context length of {base_dir}")
    longest = max(d["prompt_tokens_base"] + d["summary_tokens"] for d in res["documents"])
    window = longest - 5  # cuts the longest document's prompt
    cut = compute_shift(cfg(samples_2shot, base_dir, noisy_dir, max_length=window), None)
    assert (cut["config"]["window"], cut["config"]["window_from"]) == (window, "--max-length")
    sizes = [d["prompt_tokens_base"] + d["summary_tokens"] for d in cut["documents"]]
    assert max(sizes) == window and all(s <= window for s in sizes)
    assert max(d["truncated"] for d in cut["documents"]) == 5


def test_release_positions_with_a_real_tokenizer(monkeypatch, base_dir, noisy_dir, samples_2shot):
    import nltk

    from custom_metrics.analysis.token_shift import release_pos_mask

    # NLTK's tagger data is a download: a rule tagger stands in (every word a noun)
    monkeypatch.setattr(nltk, "pos_tag", lambda toks: [(t, "NN" if t.isalpha() else ".") for t in toks])
    paper = compute_shift(cfg(samples_2shot, base_dir, noisy_dir), VOCAB)
    release = compute_shift(cfg(samples_2shot, base_dir, noisy_dir, positions="release"), VOCAB)
    assert release["config"]["positions"] == "release" and paper["config"]["positions"] == "paper"
    tok = load_tokenizer(ModelSpec(str(base_dir)))
    for (doc_id, (_, gen)), p, r in zip(enumerate(DOCS), paper["documents"], release["documents"]):
        _, offsets = encode_summary(tok, gen, need_offsets=True)
        mask, dropped = release_pos_mask(gen, offsets)
        assert r["positions_all_positions"] == sum(mask) and r["positions_dropped"] == dropped
        assert p["positions"] == r["positions"]  # the vocabulary positions do not change
        if r["positions_all_positions"]:
            # continuation pieces are never word beginnings
            assert r["positions_all_positions"] < p["positions_all_positions"]


def test_table4_beside_the_run_with_the_unit_caveat(work, base_dir, noisy_dir, samples_2shot, capsys):
    """A run of an AdaptEval domain gets Table 4's values of that domain beside its kl and
    shift_rate, cited, with the differences named: the documents averaged against the paper's
    10, KL's unit (the paper states none), the tokens (a 7-word vocabulary, not the paper's
    10k) and the models of the paper's row."""
    from lm_eval_tasks import published

    vocab = work / "vocab_beside.tsv"
    vocab.write_text("".join(f"{w}\t1\n" for w in VOCAB), encoding="utf-8")
    out = work / "beside.json"
    assert main(["--samples", str(samples_2shot), "--base", str(base_dir), "--adapted", str(noisy_dir),
                 "--vocabulary", str(vocab), "--device", "cpu", "--dtype", "float32", "--output", str(out),
                 "--no-progress"]) == 0
    res = json.loads(out.read_text())
    data = json.loads(published.data_file("adapteval").read_text(encoding="utf-8"))
    expected = [v for v in data["values"] if v["table"] == "Table 4" and v["subset"] == "pubmed"
                and v["block"] in ("base FT", "2-shot 2-shot")]  # two different models
    records = res["published"]
    assert expected and len(records) == len(expected)
    printed = capsys.readouterr().out
    assert "Beside AdaptEval Table 4" in printed and "neither the logarithm base" in printed
    for r in records:
        v = next(v for v in expected if (v["block"], v["row"], v["column"]) == (r["setting"], r["row"], r["column"]))
        assert r["published"] == v["value"] and r["cite"] == f"AdaptEval Table 4, row {v['row']}, column {v['column']}"
        assert r["run_value"] == res["overall"]["kl" if v["metric"] == "KL" else "shift_rate"]
        diffs = {d["field"]: d for d in r["differences"]}
        assert diffs["test documents"]["run"] == len(DOCS) and diffs["test documents"]["paper"] == 10
        assert diffs["comparison"] == {"field": "comparison", "run": "two models", "paper": v["block"]}
        assert diffs[f"{v['metric']} tokens"]["run"] == f"the {len(VOCAB)} words of {vocab}"
        assert ("KL unit" in diffs) == (v["metric"] == "KL")
        if v["metric"] == "KL":
            assert diffs["KL unit"]["run"] == "nats per position" and "unknown" in diffs["KL unit"]["paper"]
        assert "decoding" not in diffs  # the samples were generated greedily, as the paper's
        assert r["comparable"] is False and r["sentence"] in printed

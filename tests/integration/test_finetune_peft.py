"""finetune/: prefix tuning and fixed-weight LoRA combination (CCSBench's PEFT baselines),
trained on the tiny models and loaded back by the real harness with ``peft=``.

What is checked against a recomputation: the harness's generation with the adapter equals
the same adapter's greedy generation in this process (and differs from the base model's),
so the harness did apply it; the combined adapter's tensors equal LoRAHub's weighted sums
of the parts' tensors on a layer, and its update equals ``s (sum w B)(sum w A)``.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from conftest import own_samples, run_lm_eval

from finetune.cli import main as cli_main
from finetune.combine import main as combine_main
from helpers.finetune import TASK, model_arg, one_thread, train  # noqa: F401 (one_thread: an autouse fixture)

LAYER = "base_model.model.transformer.h.0.attn.c_attn"


def greedy(model, tok, prompt: str, until: list[str], n: int) -> str:
    """Greedy continuation of ``prompt`` cut at the task's stop strings, as the harness does."""
    import torch

    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=n, do_sample=False, pad_token_id=tok.pad_token_id)
    text = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    for stop in until:
        text = text.split(stop)[0]
    return text


def harness_applied(out_dir: Path, base: Path, adapter: Path) -> None:
    """The harness's logged generation is the adapter's (recomputed here), not the base model's."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    [row] = own_samples(out_dir, TASK)
    args = row["arguments"]["gen_args_0"]
    prompt, gen = args["arg_0"], args["arg_1"]
    tok = AutoTokenizer.from_pretrained(base)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    plain = AutoModelForCausalLM.from_pretrained(base).eval()
    before = greedy(plain, tok, prompt, gen["until"], gen["max_gen_toks"])
    tuned = PeftModel.from_pretrained(plain, str(adapter)).eval()
    after = greedy(tuned, tok, prompt, gen["until"], gen["max_gen_toks"])
    assert row["resps"] == [[after]] and after != before, (row["resps"], after, before)


def lm_eval_with(base: Path, adapter: Path, data: Path, out: Path) -> dict:
    return run_lm_eval(["--model", "hf", "--model_args", f"pretrained={base},peft={adapter}",
                        "--include_path", "lm_eval_tasks", "--tasks", TASK, "--limit", "1", "--predict_only",
                        "--log_samples", "--gen_kwargs", "max_gen_toks=8",
                        "--metadata", json.dumps({"data_dir": str(data)})], out)


@pytest.mark.slow
def test_prefix_tuned_model_trains_and_loads_in_lm_eval(tmp_path, tiny_causal_lm, fixture_data_dir, capsys):
    out = tmp_path / "prefix"
    card = cli_main(["--task", TASK, "--base", str(tiny_causal_lm), "--method", "prefix", "--preset", "ccsbench",
                     "--num-virtual-tokens", "4", "--out", str(out), "--data-dir", str(fixture_data_dir),
                     "--max-steps", "3", "--batch-size", "2", "--limit", "2", "--lr", "3e-2", "--report-to", "none", "--logging-steps", "1"])
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("finetune: ")]
    acfg = json.loads((out / "adapter_config.json").read_text())
    assert (acfg["peft_type"], acfg["task_type"], acfg["num_virtual_tokens"]) == ("PREFIX_TUNING", "CAUSAL_LM", 4)
    assert acfg["prefix_projection"] is False and acfg["num_layers"] == 2
    # the card: the method, its setting, CCSBench's PEFT values under the flags given
    assert card["method"] == "prefix" and card["output"]["format"] == "peft_adapter"
    hp = card["hyperparameters"]
    assert (hp["num_virtual_tokens"], hp["epochs"], hp["learning_rate"]) == (4, 20.0, 3e-2)
    assert card["decisions"]["prefix"] == {"peft_type": "PREFIX_TUNING", "num_virtual_tokens": 4,
                                           "prefix_projection": False}
    assert card["decisions"]["quantisation"] == "none" and len(card["metrics"]["train_loss_history"]) == 3
    assert [e["epoch"] for e in card["metrics"]["eval_loss_per_epoch"]] == [1.0, 2.0, 3.0]   # 2 examples, batch 2
    # 4 virtual tokens x 2 layers x (key, value) x 64 dims, nothing else trainable
    assert card["base_model"]["trainable_parameters"] == 4 * 2 * 2 * 64
    assert printed[-3] == f"finetune: saved the prefix-tuning adapter to {out.resolve()}"
    command = shlex.split(printed[-2].removeprefix("finetune: evaluate it with: "))
    assert command[command.index("--model_args") + 1] == f"pretrained={tiny_causal_lm},peft={out.resolve()}"
    # the harness loads it with peft=, as a LoRA adapter, and generates with the prefix
    res = lm_eval_with(tiny_causal_lm, out, fixture_data_dir, tmp_path / "eval")
    assert model_arg(res, "peft") == str(out)
    harness_applied(tmp_path / "eval", tiny_causal_lm, out)
    # nothing to merge into the base
    from finetune.merge import merge_adapter

    with pytest.raises(SystemExit, match="holds a PREFIX_TUNING adapter; only LoRA adapters merge into the base"):
        merge_adapter(out)


def test_prefix_tuning_trains_a_seq2seq_model(tmp_path, tiny_seq2seq_lm, fixture_data_dir):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    out = tmp_path / "s2s_prefix"
    card = train(out, tiny_seq2seq_lm, fixture_data_dir, method="prefix", preset="ccsbench", max_steps=2,
                 num_virtual_tokens=3, limit=2)
    acfg = json.loads((out / "adapter_config.json").read_text())
    assert (acfg["peft_type"], acfg["task_type"], acfg["num_virtual_tokens"]) == ("PREFIX_TUNING", "SEQ_2_SEQ_LM", 3)
    assert "pretrained=" in card["output"]["evaluate_with"] and ",backend=seq2seq" in card["output"]["evaluate_with"]
    assert f",peft={out.resolve()}," in card["output"]["evaluate_with"]
    tok = AutoTokenizer.from_pretrained(tiny_seq2seq_lm)
    enc = tok(["A: hi\n\nSUMMARY:"], return_tensors="pt")
    dec = torch.tensor([[tok.pad_token_id]])
    base = AutoModelForSeq2SeqLM.from_pretrained(tiny_seq2seq_lm).eval()
    with torch.no_grad():
        before = base(**enc, decoder_input_ids=dec).logits
        after = PeftModel.from_pretrained(base, str(out)).eval()(**enc, decoder_input_ids=dec).logits
    assert not torch.allclose(before, after)


@pytest.fixture(scope="module")
def lora_parts(tmp_path_factory, tiny_causal_lm, fixture_data_dir):
    """Three LoRA adapters of the tiny GPT-2: two of rank 4 (other seeds), one of rank 8."""
    root = tmp_path_factory.mktemp("parts")
    for name, seed, r in (("a", 1, 4), ("b", 2, 4), ("r8", 3, 8)):
        train(root / name, tiny_causal_lm, fixture_data_dir, max_steps=2, limit=2, seed=seed, lora_r=r,
              learning_rate=5e-2, eval_strategy="no")
    return root


def _tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


@pytest.mark.slow
def test_lorahub_combination_is_the_weighted_sum_and_loads_in_lm_eval(tmp_path, lora_parts, tiny_causal_lm,
                                                                      fixture_data_dir, capsys):
    import torch

    a, b, out = lora_parts / "a", lora_parts / "b", tmp_path / "combined"
    w = (0.7, 0.3)
    card = combine_main(["--adapters", str(a), str(b), "--weights", *map(str, w), "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"finetune.combine: saved the combined LoRA adapter to {out.resolve()}"
    ta, tb, tc = _tensors(a), _tensors(b), _tensors(out)
    assert tc.keys() == ta.keys()
    # LoRA alpha 16 over rank 4: the parts' scaling s = 4; the combination's is 1 (alpha = r)
    s = json.loads((a / "adapter_config.json").read_text())["lora_alpha"] / 4
    acfg = json.loads((out / "adapter_config.json").read_text())
    assert (acfg["peft_type"], acfg["r"], acfg["lora_alpha"]) == ("LORA", 4, 4)
    A = [t[f"{LAYER}.lora_A.weight"] for t in (ta, tb)]
    B = [t[f"{LAYER}.lora_B.weight"] for t in (ta, tb)]
    # peft's linear rule given w**2: sqrt(s) sum(w A), sqrt(s) sum(w B)
    assert torch.allclose(tc[f"{LAYER}.lora_A.weight"], s ** 0.5 * (w[0] * A[0] + w[1] * A[1]), atol=1e-6)
    assert torch.allclose(tc[f"{LAYER}.lora_B.weight"], s ** 0.5 * (w[0] * B[0] + w[1] * B[1]), atol=1e-6)
    # LoRAHub's update: s (sum w B)(sum w A), cross terms included; not the sum of the updates
    update = tc[f"{LAYER}.lora_B.weight"] @ tc[f"{LAYER}.lora_A.weight"]
    lorahub = s * (w[0] * B[0] + w[1] * B[1]) @ (w[0] * A[0] + w[1] * A[1])
    assert torch.allclose(update, lorahub, atol=1e-6)
    assert not torch.allclose(update, s * (w[0] * B[0] @ A[0] + w[1] * B[1] @ A[1]), atol=1e-6)
    # the card names the parts and weights, and the command for their common task
    on_disk = json.loads((out / "run_card.json").read_text())
    assert on_disk == json.loads(json.dumps(card))
    assert [(p["adapter"], p["weight"], p["r"], p["task"]) for p in card["parts"]] == [
        (str(a.resolve()), 0.7, 4, TASK), (str(b.resolve()), 0.3, 4, TASK)]
    assert (card["combination"], card["peft_combination_type"]) == ("lorahub", "linear")
    assert card["peft_weights"] == pytest.approx([0.49, 0.09])
    assert f"pretrained={tiny_causal_lm},peft={out.resolve()}" in card["output"]["evaluate_with"]
    # loaded by the harness like any LoRA adapter
    res = lm_eval_with(tiny_causal_lm, out, fixture_data_dir, tmp_path / "eval")
    assert model_arg(res, "peft") == str(out)
    harness_applied(tmp_path / "eval", tiny_causal_lm, out)


def test_cat_combination_takes_other_ranks_and_sums_the_updates(tmp_path, lora_parts):
    import torch

    a, r8, out = lora_parts / "a", lora_parts / "r8", tmp_path / "cat"
    card = combine_main(["--adapters", str(a), str(r8), "--weights", "0.5", "-0.25", "--combination", "cat",
                         "--out", str(out)])
    acfg = json.loads((out / "adapter_config.json").read_text())
    assert (acfg["r"], acfg["lora_alpha"]) == (12, 12) and card["peft_combination_type"] == "cat"
    ta, t8, tc = _tensors(a), _tensors(r8), _tensors(out)
    delta = tc[f"{LAYER}.lora_B.weight"] @ tc[f"{LAYER}.lora_A.weight"]
    expect = (0.5 * 16 / 4 * ta[f"{LAYER}.lora_B.weight"] @ ta[f"{LAYER}.lora_A.weight"]
              - 0.25 * 16 / 8 * t8[f"{LAYER}.lora_B.weight"] @ t8[f"{LAYER}.lora_A.weight"])
    assert torch.allclose(delta, expect, atol=1e-6)


def test_parts_that_cannot_combine_are_refused_in_one_line(tmp_path, lora_parts, capsys):
    a, b, r8 = (str(lora_parts / n) for n in ("a", "b", "r8"))
    other = tmp_path / "other_base"
    shutil.copytree(lora_parts / "b", other)
    cfg = json.loads((other / "adapter_config.json").read_text())
    cfg["base_model_name_or_path"] = str(tmp_path / "another_model")
    (other / "adapter_config.json").write_text(json.dumps(cfg))
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "adapter_config.json").write_text(json.dumps({"peft_type": "PREFIX_TUNING"}))
    (tmp_path / "empty").mkdir()
    out = ["--out", str(tmp_path / "never")]
    cases = [
        (["--adapters", a, str(other), "--weights", "0.5", "0.5"], "were trained on different base models ("),
        (["--adapters", a, r8, "--weights", "0.5", "0.5"],
         f"needs equal ranks and alphas ({a}: r=4 alpha=16, {r8}: r=8 alpha=16); use --combination cat"),
        (["--adapters", a, b, "--weights", "0.5"], "--weights gives 1 weight(s) for 2 adapters"),
        (["--adapters", a, str(tmp_path / "empty"), "--weights", "1", "1"],
         f"{tmp_path / 'empty'} is not an adapter folder (no adapter_config.json)"),
        (["--adapters", a, str(prefix), "--weights", "1", "1"],
         f"{prefix} holds a PREFIX_TUNING adapter; only LoRA adapters combine"),
        (["--adapters", a, b, "--weights", "0.5", "-0.5"], "takes weights of one sign"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exc:
            combine_main([*argv, *out])
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.value.code == 2 and len(err) == 1, err
        assert err[0].startswith("finetune.combine: error: ") and message in err[0], err
    assert not (tmp_path / "never").exists()
    # an earlier output is kept unless --overwrite
    with pytest.raises(SystemExit):
        combine_main(["--adapters", a, b, "--weights", "0.5", "0.5", "--out", r8])
    assert f"{r8} is not empty (an earlier run's output?); pass --overwrite" in capsys.readouterr().err
    assert json.loads((lora_parts / "r8" / "adapter_config.json").read_text())["r"] == 8


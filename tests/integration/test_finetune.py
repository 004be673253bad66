"""finetune/: LoRA and seq2seq training on the fixtures, loaded back by the real harness.

Offline and CPU-only: tiny GPT-2 / T5 models from conftest, the fixture mirror, a few
optimizer steps each. Training runs in-process with one torch thread (the 2 shared CI
cores make multi-threaded tiny matmuls slower, not faster); ``lm_eval``,
``accelerate launch``, ``torchrun`` and the cross-domain script run as subprocesses.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_lm_eval, sample_files, subprocess_env

from finetune import ConfigError, resolve_config, run
from finetune.cli import main as cli_main
from lm_eval_tasks.data.loader import DataError
from helpers.finetune import TASK, model_arg, one_thread, train  # noqa: F401 (one_thread: an autouse fixture)


def lm_eval_meta(data: Path, minilm: str) -> str:
    return json.dumps({"data_dir": str(data), "bertscore_model": minilm, "bertscore_layers": 6})


def logged(out_dir: Path, task: str) -> list[dict]:
    files = sample_files(out_dir, task)
    assert files, f"no samples for {task} under {out_dir}"
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["doc_id"])


@pytest.fixture(scope="module")
def causal_adapter(tmp_path_factory, tiny_causal_lm, fixture_data_dir):
    """A LoRA adapter trained hard on two repeated examples (high lr, constant), and what
    the run printed."""
    out = tmp_path_factory.mktemp("causal_lora")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        card = train(out, tiny_causal_lm, fixture_data_dir, limit=2, max_steps=30, learning_rate=3e-2,
                     lora_r=16, lr_scheduler="constant")
    return out, card, printed.getvalue()


def test_causal_lora_loss_goes_down_and_card_is_complete(causal_adapter, tiny_causal_lm):
    out, card, _ = causal_adapter
    hist = [h["loss"] for h in card["metrics"]["train_loss_history"]]
    assert len(hist) == 30
    assert hist[-1] < hist[0] - 0.1, hist
    assert min(hist[-5:]) < min(hist[:5]) - 0.1, hist
    # the adapter peft loads, on the auto-detected GPT-2 attention projection
    acfg = json.loads((out / "adapter_config.json").read_text())
    assert acfg["target_modules"] == ["c_attn"] and acfg["r"] == 16
    assert (out / "adapter_model.safetensors").is_file()
    # the run card beside it
    on_disk = json.loads((out / "run_card.json").read_text())
    assert on_disk["metrics"]["global_step"] == 30
    assert on_disk["base_model"]["name_or_path"] == str(tiny_causal_lm)
    assert on_disk["task"] == TASK and on_disk["preset"] == "domainsum" and on_disk["seed"] == 42
    hp = on_disk["hyperparameters"]
    assert hp["learning_rate"] == 3e-2 and hp["batch_size"] == 2 and hp["epochs"] == 20.0
    assert len(on_disk["data_sha256"]) == 64
    assert on_disk["data"]["train"]["examples"] == 2 and on_disk["data"]["train"]["dropped"] == {}
    assert on_disk["data"]["validation"]["examples"] == 2
    assert on_disk["decisions"]["optim"] == "adamw_torch"
    assert on_disk["decisions"]["quantisation"] == "none"    # 8-bit 'auto' without bitsandbytes
    assert on_disk["versions"]["transformers"] and on_disk["versions"]["peft"]
    # eval loss once per epoch (2 examples / batch 2 = 1 step per epoch)
    per_epoch = on_disk["metrics"]["eval_loss_per_epoch"]
    assert len(per_epoch) == 30 and all(math.isfinite(e["eval_loss"]) for e in per_epoch)
    assert per_epoch[-1]["eval_loss"] < per_epoch[0]["eval_loss"]
    assert on_disk["metrics"]["tokens_per_second"] > 0 and on_disk["metrics"]["steps_per_second"] > 0
    assert not (out / "checkpoints").exists()                # removed after a finished run
    assert "peft=" in on_disk["output"]["evaluate_with"]


def test_run_ends_with_where_the_adapter_is_and_the_command_to_evaluate_it(causal_adapter, tiny_causal_lm,
                                                                           fixture_data_dir):
    from lm_eval_tasks import include_path

    out, card, printed = causal_adapter
    last = printed.strip().splitlines()[-3:]
    assert last[0] == f"finetune: saved the LoRA adapter to {out.resolve()}"
    base_command = last[2].split(": ", 2)[2].split("; give --baseline")[0]
    assert last[2] == "finetune: " + card["output"]["compare_with"] and last[2].startswith(
        "finetune: compare it with the base model evaluated without a chat template, as training used none")
    assert shlex.split(base_command)[:5] == ["lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}"]
    assert base_command.endswith(f"--output_path {out.resolve() / 'eval_base'} --metadata "
                                 f"'{json.dumps({'data_dir': str(fixture_data_dir)})}'")
    prefix = "finetune: evaluate it with: "
    assert last[1].startswith(prefix)
    command = last[1][len(prefix):]
    assert command == card["output"]["evaluate_with"]
    args = shlex.split(command)
    assert args[0] == "lm_eval"
    opt = {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--") and not args[i + 1].startswith("--")}
    margs = dict(kv.split("=", 1) for kv in opt["--model_args"].split(","))
    assert margs == {"pretrained": str(tiny_causal_lm), "peft": str(out.resolve())}
    assert Path(margs["peft"], "adapter_model.safetensors").is_file()
    # the installed task folders, by absolute path: the command runs from any directory
    assert opt["--include_path"] == include_path() and Path(opt["--include_path"], "domainsum").is_dir()
    assert opt["--tasks"] == TASK and "--log_samples" in args
    assert opt["--output_path"] == str(out.resolve() / "eval")     # what `domsum report` reads
    assert json.loads(opt["--metadata"]) == {"data_dir": str(fixture_data_dir)}


def test_baseline_run_settings_go_into_the_evaluation_command(tmp_path, tiny_causal_lm, fixture_data_dir,
                                                             minilm_path, capsys):
    """The base model's run was given its BERTScore encoder in --metadata, the fine-tuning run
    was not: given --baseline, the printed command carries that run's settings (pasted
    offline it scores with MiniLM, not roberta-large) and names the run to compare with."""
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6}
    base_run = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--include_path",
                            "lm_eval_tasks", "--tasks", TASK, "--limit", "1", "--gen_kwargs", "max_gen_toks=8",
                            "--predict_only", "--log_samples", "--metadata", json.dumps(meta)], tmp_path / "base")
    assert base_run["chat_template"] is None
    [results_file] = (tmp_path / "base").rglob("results_*.json")
    out = tmp_path / "tuned"
    card = cli_main(["--task", TASK, "--base", str(tiny_causal_lm), "--method", "lora", "--preset", "domainsum",
                     "--out", str(out), "--baseline", str(tmp_path / "base"), "--max-steps", "2", "--batch-size",
                     "2", "--limit", "2", "--report-to", "none", "--eval-strategy", "no"])
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("finetune: ")]
    assert printed[0] == (f"finetune: --baseline {results_file}: its settings taken: data_dir={fixture_data_dir}, "
                          f"bertscore_model={minilm_path}, bertscore_layers=6")
    command = printed[-2].removeprefix("finetune: evaluate it with: ")
    args = shlex.split(command)
    assert json.loads(args[args.index("--metadata") + 1]) == meta and command == card["output"]["evaluate_with"]
    assert printed[-1] == f"finetune: compare it with the base model's run in {results_file} (no chat template, as in training)"
    assert card["baseline"] == {"results_file": str(results_file), "settings_taken": meta, "chat_template": False}
    assert card["hyperparameters"]["metadata"] == meta


def test_causal_examples_supervise_the_summary_only(tiny_causal_lm, fixture_data_dir):
    from transformers import AutoTokenizer

    from finetune.data import Encoder, build_split
    from lm_eval_tasks.catalog import task_examples

    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    meta = {"data_dir": str(fixture_data_dir)}
    data = build_split(TASK, "train", meta, Encoder(tok, "causal", 2048, 512, "drop"))
    recs = {r["id"]: r for r in task_examples(TASK, "train", meta, shots=0)}
    assert len(data.examples) == len(recs) == 4 and data.boundary_fallbacks == 0
    for ex in data.examples:
        rec = recs[ex.id]
        n_prompt = sum(1 for x in ex.labels if x == -100)
        # the prompt is the task's zero-shot prompt, encoded as the harness encodes a context
        assert ex.input_ids[:n_prompt] == tok(rec["prompt"])["input_ids"]
        assert rec["prompt"].startswith("You are an expert at summarization.")
        assert rec["prompt"].endswith("SUMMARY:")
        target = [x for x in ex.labels if x != -100]
        assert ex.input_ids[n_prompt:] == target
        assert target[-1] == tok.eos_token_id
        assert tok.decode(target[:-1]) == " " + rec["summary"]


@pytest.mark.slow
def test_adapter_loads_in_lm_eval_and_changes_generations(tmp_path, causal_adapter, tiny_causal_lm,
                                                          fixture_data_dir, minilm_path):
    out, _, _ = causal_adapter
    common = ["--include_path", "lm_eval_tasks", "--tasks", TASK, "--limit", "2", "--log_samples",
              "--gen_kwargs", "max_gen_toks=24", "--metadata", lm_eval_meta(fixture_data_dir, minilm_path)]
    base = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", *common],
                       tmp_path / "base")
    tuned = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm},peft={out}", *common],
                        tmp_path / "tuned")
    for res in (base, tuned):
        v = res["results"][TASK]["rouge1,none"]
        assert isinstance(v, float) and 0.0 <= v <= 1.0
    assert model_arg(tuned, "peft") == str(out) and model_arg(base, "peft") is None
    b, t = logged(tmp_path / "base", TASK), logged(tmp_path / "tuned", TASK)
    assert [r["doc_id"] for r in b] == [r["doc_id"] for r in t] == [0, 1]
    # same prompts (the task's own), different generations
    assert [r["arguments"]["gen_args_0"]["arg_0"] for r in b] == [r["arguments"]["gen_args_0"]["arg_0"] for r in t]
    assert [r["resps"] for r in b] != [r["resps"] for r in t]
    # the evaluated prompt is exactly the zero-shot prompt training uses
    from lm_eval_tasks.catalog import task_examples

    test_prompts = [r["prompt"] for r in task_examples(TASK, "test", {"data_dir": str(fixture_data_dir)}, shots=0)]
    assert b[0]["arguments"]["gen_args_0"]["arg_0"] == test_prompts[0]


@pytest.mark.slow
def test_seq2seq_full_finetune_loads_with_seq2seq_backend(tmp_path, tiny_seq2seq_lm, fixture_data_dir,
                                                          minilm_path):
    out = tmp_path / "s2s_full"
    card = train(out, tiny_seq2seq_lm, fixture_data_dir, method="full", max_steps=4, learning_rate=1e-3)
    assert card["base_model"]["kind"] == "seq2seq" and card["output"]["format"] == "model"
    hp = card["hyperparameters"]   # DomainSum's BART / PEGASUS-X values, flags on top
    assert hp["batch_size"] == 2 and hp["epochs"] == 4.0 and hp["best_by_validation"] is True
    for name in ("config.json", "model.safetensors", "tokenizer.json", "run_card.json"):
        assert (out / name).is_file(), name
    assert card["metrics"]["final_eval_loss"] is not None
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={out},backend=seq2seq",
                       "--include_path", "lm_eval_tasks", "--tasks", TASK, "--limit", "1",
                       "--gen_kwargs", "max_gen_toks=16",
                       "--metadata", lm_eval_meta(fixture_data_dir, minilm_path)], tmp_path / "eval")
    assert math.isfinite(res["results"][TASK]["rougeL,none"])
    assert math.isfinite(res["results"][TASK]["bertscore_f1,none"])


def test_seq2seq_lora_adapter_loads_and_changes_outputs(tmp_path, tiny_seq2seq_lm, fixture_data_dir):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    out = tmp_path / "s2s_lora"
    card = train(out, tiny_seq2seq_lm, fixture_data_dir, max_steps=5, learning_rate=5e-2, lora_r=8,
                 limit=2, lr_scheduler="constant")
    acfg = json.loads((out / "adapter_config.json").read_text())
    assert acfg["task_type"] == "SEQ_2_SEQ_LM" and sorted(acfg["target_modules"]) == ["q", "v"]
    assert card["decisions"]["lora_target_modules"] == ["q", "v"]
    tok = AutoTokenizer.from_pretrained(tiny_seq2seq_lm)
    enc = tok(["You are an expert at summarization. Summarize the following text: \n\nA: hi\n\nSUMMARY:"],
              return_tensors="pt")
    dec = torch.tensor([[tok.pad_token_id]])
    base = AutoModelForSeq2SeqLM.from_pretrained(tiny_seq2seq_lm).eval()
    with torch.no_grad():
        before = base(**enc, decoder_input_ids=dec).logits
        tuned = PeftModel.from_pretrained(base, str(out)).eval()
        after = tuned(**enc, decoder_input_ids=dec).logits
    assert not torch.allclose(before, after)
    # how lm_eval loads it: pretrained=BASE,peft=OUT,backend=seq2seq
    assert "backend=seq2seq" in card["output"]["evaluate_with"] and "peft=" in card["output"]["evaluate_with"]


def test_checkpointing_accumulation_packing_bf16_merge_and_best_checkpoint(tmp_path, tiny_causal_lm,
                                                                          fixture_data_dir):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "combo"
    card = train(out, tiny_causal_lm, fixture_data_dir, max_steps=2, grad_accum=2, gradient_checkpointing=True,
                 packing=True, precision="bf16", merge=True, learning_rate=5e-2)
    d = card["decisions"]
    assert d["precision"] == "bf16" and d["packed_sequences"] == 1       # 4 short examples, one window
    assert card["hyperparameters"]["grad_accum"] == 2 and card["metrics"]["global_step"] == 2
    assert all(math.isfinite(h["loss"]) for h in card["metrics"]["train_loss_history"])
    # the merged model equals base + adapter
    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    ids = tok(["Anna: are you coming tonight?"], return_tensors="pt")
    merged = AutoModelForCausalLM.from_pretrained(out / "merged", dtype=torch.float32).eval()
    base = AutoModelForCausalLM.from_pretrained(tiny_causal_lm, dtype=torch.float32)
    peft = PeftModel.from_pretrained(base, str(out)).eval()
    with torch.no_grad():
        assert torch.allclose(merged(**ids).logits, peft(**ids).logits, atol=1e-4)
    # CCSBench: at most N epochs, early stopping on the validation loss, best checkpoint kept
    cc = train(tmp_path / "cc", tiny_causal_lm, fixture_data_dir, preset="ccsbench", max_steps=None, epochs=2.0)
    m = cc["metrics"]
    assert [e["epoch"] for e in m["eval_loss_per_epoch"]] == [1.0, 2.0]
    assert m["best_checkpoint"] in ("checkpoint-2", "checkpoint-4")
    assert m["best_eval_loss"] == min(e["eval_loss"] for e in m["eval_loss_per_epoch"])
    assert m["final_eval_loss"] == pytest.approx(m["best_eval_loss"], abs=1e-6)


def test_resume_continues_from_the_last_checkpoint(tmp_path, tiny_causal_lm, fixture_data_dir):
    from safetensors.torch import load_file

    kw = dict(eval_strategy="no", lr_scheduler="constant", learning_rate=1e-2)
    out = tmp_path / "interrupted"
    first = train(out, tiny_causal_lm, fixture_data_dir, max_steps=3, save_steps=3, keep_checkpoints=True, **kw)
    assert first["metrics"]["global_step"] == 3 and (out / "checkpoints" / "checkpoint-3").is_dir()
    # without --resume or --overwrite the run refuses to clobber the earlier one
    with pytest.raises(ConfigError, match="--resume to continue"):
        train(out, tiny_causal_lm, fixture_data_dir, max_steps=6, **kw)
    second = train(out, tiny_causal_lm, fixture_data_dir, max_steps=6, save_steps=3, resume=True, **kw)
    m = second["metrics"]
    assert second["resumed_from"].endswith("checkpoint-3")
    assert m["global_step"] == 6 and m["steps_this_run"] == 3
    assert [h["step"] for h in m["train_loss_history"]] == [1, 2, 3, 4, 5, 6]
    # an uninterrupted 6-step run ends with the same adapter (state, RNG and data order restored)
    straight = tmp_path / "straight"
    third = train(straight, tiny_causal_lm, fixture_data_dir, max_steps=6, **kw)
    a = load_file(str(out / "adapter_model.safetensors"))
    b = load_file(str(straight / "adapter_model.safetensors"))
    assert a.keys() == b.keys()
    import torch

    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-6), k
    assert [h["loss"] for h in m["train_loss_history"]] == pytest.approx(
        [h["loss"] for h in third["metrics"]["train_loss_history"]], abs=1e-5)


def test_resume_refuses_another_base_or_lora_rank_in_one_line(tmp_path, tiny_causal_lm, fixture_data_dir):
    """A checkpoint resumed on a base of the same shape (a copy of the tiny model in another
    folder) would train on silently; another LoRA rank fails deep in transformers. Both are
    refused by the real CLI before any model loads: exit 2, one line naming both values."""
    out = tmp_path / "run"
    train(out, tiny_causal_lm, fixture_data_dir, max_steps=2, save_steps=2, keep_checkpoints=True,
          eval_strategy="no")
    assert json.loads((out / "checkpoints" / "run_card.json").read_text())["hyperparameters"]["lora_r"] == 8
    other = tmp_path / "same-shape-base"
    shutil.copytree(tiny_causal_lm, other)
    argv = [sys.executable, "-m", "finetune", "--task", TASK, "--preset", "domainsum", "--output", str(out),
            "--data-dir", str(fixture_data_dir), "--max-steps", "4", "--report-to", "none", "--resume"]
    for extra, named in ((["--base", str(other)], [f"base '{Path(tiny_causal_lm).resolve()}'",
                                                   f"(given '{other.resolve()}')"]),
                         (["--base", str(tiny_causal_lm), "--lora-r", "4"], ["lora_r 8 (given 4)"])):
        proc = subprocess.run(argv + extra, env=subprocess_env(), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("finetune: error: --resume: "), proc.stderr
        for text in named:
            assert text in lines[0]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-2", "run_card.json"]


def test_damaged_checkpoints_and_unwritable_output_are_named_before_training(tmp_path, tiny_causal_lm,
                                                                            fixture_data_dir):
    kw = dict(eval_strategy="no", lr_scheduler="constant")
    out = tmp_path / "run"
    train(out, tiny_causal_lm, fixture_data_dir, max_steps=2, save_steps=2, keep_checkpoints=True, **kw)
    ckpt = out / "checkpoints" / "checkpoint-2"
    (ckpt / "adapter_model.safetensors").write_bytes(b"\x00" * 10)  # cut short by a killed job
    with pytest.raises(ConfigError, match=r"checkpoint .*checkpoint-2 is damaged \(adapter_model.safetensors "
                                          r"unreadable.*remove that folder"):
        train(out, tiny_causal_lm, fixture_data_dir, max_steps=4, resume=True, **kw)
    (ckpt / "trainer_state.json").write_text('{"global_step": 2, ')
    with pytest.raises(ConfigError, match="trainer_state.json unreadable"):
        train(out, tiny_causal_lm, fixture_data_dir, max_steps=4, resume=True, **kw)
    blocked = tmp_path / "a_file"
    blocked.write_text("x")
    with pytest.raises(ConfigError, match="cannot write to the output folder"):
        train(blocked / "out", tiny_causal_lm, fixture_data_dir, max_steps=1, **kw)


def _cli_fails(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        cli_main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_bad_preset_unknown_task_and_missing_train_split_fail_clearly(tmp_path, capsys, tiny_causal_lm,
                                                                      fixture_data_dir):
    base = ["--base", str(tiny_causal_lm), "--output", str(tmp_path / "o"), "--data-dir", str(fixture_data_dir)]
    err = _cli_fails(capsys, ["--task", TASK, "--preset", "nosuch", *base])
    assert "unknown preset 'nosuch'" in err and "adapteval, ccsbench, domainsum" in err
    err = _cli_fails(capsys, ["--task", TASK, "--preset", "adapteval", "--method", "full", *base])
    assert "preset 'adapteval' has no values for method 'full'" in err
    err = _cli_fails(capsys, ["--task", "nosuchbench_samsum", "--preset", "domainsum", *base])
    assert "unknown suite task 'nosuchbench_samsum'" in err
    err = _cli_fails(capsys, ["--task", "domainsum_atlantis", "--preset", "domainsum", *base])
    assert "unknown suite task 'domainsum_atlantis'" in err and "domsum tasks" in err
    # a mirror whose samsum has only a test split
    mirror = tmp_path / "mirror"
    (mirror / "domainsum" / "samsum").mkdir(parents=True)
    shutil.copy(fixture_data_dir / "domainsum" / "samsum" / "test.jsonl", mirror / "domainsum" / "samsum")
    err = _cli_fails(capsys, ["--task", TASK, "--preset", "domainsum", "--base", str(tiny_causal_lm),
                              "--output", str(tmp_path / "o"), "--data-dir", str(mirror)])
    assert f"task '{TASK}' has no 'train' split" in err and "train.jsonl" in err
    assert not (tmp_path / "o").exists()      # nothing written, no model loaded
    # the same errors through the Python API
    with pytest.raises(ConfigError, match="unknown preset"):
        resolve_config({"task": TASK, "base": "x", "output": "y", "preset": "paper"})
    with pytest.raises(DataError, match="no 'train' split"):
        run(resolve_config({"task": TASK, "base": str(tiny_causal_lm), "output": str(tmp_path / "o"),
                            "preset": "domainsum", "metadata": {"data_dir": str(mirror)}}))
    err = _cli_fails(capsys, ["--task", TASK, "--preset", "domainsum", "--set", "lora_rank=4", *base])
    assert "unknown configuration key 'lora_rank'" in err


def test_adapteval_window_drops_and_subsets(tiny_causal_lm, fixture_data_dir):
    from transformers import AutoTokenizer

    from finetune.data import Encoder, build_split

    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    meta = {"data_dir": str(fixture_data_dir)}
    full = build_split("adapteval_pubmed", "train", meta, Encoder(tok, "causal", 4096, 512, "drop"))
    lengths = sorted(len(e) for e in full.examples)
    assert full.dropped == {} and len(lengths) >= 3
    # a window between the shortest and longest example drops (and counts) the long ones
    window = lengths[len(lengths) // 2]
    cut = build_split("adapteval_pubmed", "train", meta, Encoder(tok, "causal", window, 512, "drop"))
    n_long = sum(1 for n in lengths if n > window)
    assert cut.dropped == {"too_long": n_long} and len(cut.examples) == len(lengths) - n_long
    assert all(len(e) <= window for e in cut.examples)
    # ... or keeps them with the target cut (counted)
    kept = build_split("adapteval_pubmed", "train", meta, Encoder(tok, "causal", window, 512, "truncate"))
    assert len(kept.examples) + kept.dropped.get("too_long", 0) == len(lengths)
    assert kept.truncated.get("target", 0) >= 1 and all(len(e) <= window for e in kept.examples)
    # seeded subset of the examples that fit; the same seed gives the same subset
    sub1 = build_split("adapteval_pubmed", "train", meta, Encoder(tok, "causal", 4096, 512, "drop"), size=2, seed=7)
    sub2 = build_split("adapteval_pubmed", "train", meta, Encoder(tok, "causal", 4096, 512, "drop"), size=2, seed=7)
    assert len(sub1.examples) == 2 and sub1.sha256 == sub2.sha256 != full.sha256
    # "without truncation": records whose document the prompt's word budget cut are dropped
    from lm_eval_tasks.catalog import task_examples

    words = sorted(len(r["document"].split()) for r in task_examples("adapteval_pubmed", "train", meta, shots=0))
    budget = words[len(words) // 2]
    n_cut = sum(1 for w in words if w > budget)
    part = build_split("adapteval_pubmed", "train", {**meta, "max_doc_words": budget},
                       Encoder(tok, "causal", 4096, 512, "drop"), require_full_document=True)
    assert n_cut >= 1 and part.dropped == {"truncated_document": n_cut}
    assert len(part.examples) == len(words) - n_cut
    with pytest.raises(DataError, match="no usable 'train' examples"):
        build_split("adapteval_pubmed", "train", {**meta, "max_doc_words": 5},
                    Encoder(tok, "causal", 4096, 512, "drop"), require_full_document=True)
    # the arXiv glue's extractive filter already removed one record before fine-tuning sees it
    arxiv = build_split("adapteval_arxiv", "train", meta, Encoder(tok, "causal", 4096, 512, "drop"))
    assert arxiv.source_records == 4


def _run(cmd: list[str], timeout: int = 600, **env) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=ROOT, env=subprocess_env(OMP_NUM_THREADS="1", **env),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.slow
def test_accelerate_launch_and_two_process_ddp(tmp_path, tiny_causal_lm, fixture_data_dir):
    args = ["-m", "finetune", "--task", TASK, "--base", str(tiny_causal_lm), "--method", "lora",
            "--preset", "domainsum", "--data-dir", str(fixture_data_dir), "--batch-size", "1",
            "--max-steps", "2", "--report-to", "none"]
    bindir = Path(sys.executable).parent
    _run([str(bindir / "accelerate"), "launch", "--cpu", "--num_processes", "1", "--num_machines", "1",
          "--mixed_precision", "no", "--dynamo_backend", "no", *args, "--output", str(tmp_path / "acc")])
    card = json.loads((tmp_path / "acc" / "run_card.json").read_text())
    assert card["metrics"]["global_step"] == 2 and (tmp_path / "acc" / "adapter_model.safetensors").is_file()
    # two data-parallel processes (gloo on CPU): one card, written once, world size 2;
    # 4 train examples / (1 per device x 2 devices) = 2 steps per epoch
    _run([str(bindir / "torchrun"), "--nproc_per_node", "2", "--master_port", "29561", *args,
          "--output", str(tmp_path / "ddp")])
    ddp = json.loads((tmp_path / "ddp" / "run_card.json").read_text())
    assert ddp["environment"]["world_size"] == 2
    assert ddp["metrics"]["global_step"] == 2 and ddp["metrics"]["epochs_completed"] == 1.0
    assert (tmp_path / "ddp" / "adapter_model.safetensors").is_file()


@pytest.mark.slow
def test_cross_domain_loop_layout(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path):
    out = tmp_path / "xdomain"
    script = [sys.executable, "-m", "lm_eval_tasks.cli", "cross-domain-train", "--benchmark", "domainsum", "--level", "genre",
              "--base", str(tiny_causal_lm), "--method", "lora", "--preset", "domainsum",
              "--output", str(out), "--data-dir", str(fixture_data_dir), "--sources", "samsum",
              "--targets", "samsum,reddit", "--limit", "1", "--batch-size", "1",
              "--metadata", json.dumps({"bertscore_model": minilm_path, "bertscore_layers": 6}),
              "--finetune-args", "--max-steps 2 --batch-size 2 --report-to none",
              "--lm-eval-args", "--gen_kwargs max_gen_toks=8"]
    plan = _run([*script, "--dry-run"])
    assert "-m finetune" in plan.stdout and "-m lm_eval" in plan.stdout and not out.exists()
    _run(script)
    manifest = json.loads((out / "cross_domain.json").read_text())
    assert manifest["schema"] == "domsum-cross-domain/1" and manifest["level"] == "genre"
    assert manifest["tasks"] == ["domainsum_samsum", "domainsum_reddit"]
    row = manifest["rows"]["samsum"]
    assert row["status"] == "evaluated" and Path(row["run_card"]).is_file()
    assert Path(row["model_dir"]) == out / "samsum" / "model"
    results = json.loads(Path(row["results"]).read_text())
    assert Path(row["results"]).is_relative_to(out / "samsum" / "eval")
    for t in ("domainsum_samsum", "domainsum_reddit"):
        assert math.isfinite(results["results"][t]["rouge1,none"])
    assert model_arg(results, "peft") == str(out / "samsum" / "model")
    assert sample_files(out / "samsum" / "eval", "domainsum_reddit")
    # restartable: a second call trains and evaluates nothing
    again = _run(script)
    assert "= samsum: trained" in again.stdout and "results exist" in again.stdout

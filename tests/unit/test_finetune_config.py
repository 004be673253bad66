"""Fine-tuning settings without training: presets and override precedence, the shipped
configs, and optional pieces that fall back with a notice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT

from finetune import ConfigError, resolve_config
from helpers.finetune import TASK


def test_presets_and_override_precedence(tmp_path):
    common = {"task": TASK, "base": "b", "output": "o"}
    ae = resolve_config({**common, "preset": "adapteval"})
    assert (ae.lora_r, ae.lora_alpha, ae.lora_dropout) == (64, 16, 0.1)
    assert (ae.optim, ae.adam_beta2, ae.learning_rate, ae.lr_scheduler, ae.epochs) == (
        "paged_adamw_32bit", 0.999, 2e-4, "constant", 1.0)
    assert ae.train_size == 1000 and ae.max_length == 4096 and ae.overlong == "drop"
    assert ae.require_full_document is True
    ds = resolve_config({**common, "preset": "domainsum"})
    assert (ds.learning_rate, ds.batch_size, ds.epochs, ds.load_in_8bit) == (5e-4, 4, 20.0, "auto")
    full = resolve_config({**common, "preset": "domainsum", "method": "full"})
    assert (full.optim, full.learning_rate, full.batch_size, full.epochs, full.best_by_validation) == (
        "adamw_torch", 5e-5, 12, 4.0, True)
    cc = resolve_config({**common, "preset": "ccsbench"})
    assert (cc.learning_rate, cc.epochs, cc.early_stopping_patience) == (1e-4, 20.0, 3)
    # biomedical question summarization, Section 2.2: "3 epochs ... batch size 16, learning rate 5e-5,
    # and an AdamW optimizer", full fine-tuning only
    mq = resolve_config({**common, "preset": "medqsum", "method": "full"})
    assert (mq.method, mq.optim, mq.learning_rate, mq.batch_size, mq.epochs) == ("full", "adamw_torch", 5e-5, 16, 3.0)
    with pytest.raises(ConfigError, match="preset 'medqsum' has no values for method 'lora'"):
        resolve_config({**common, "preset": "medqsum"})
    assert not any(c.packing for c in (ae, ds, full, cc, mq))             # packing is opt-in
    # preset < YAML < flags (strings from --set are typed)
    y = tmp_path / "c.yaml"
    y.write_text("preset: adapteval\nlearning-rate: 1e-3\nbatch_size: 8\nmetadata: {max_doc_words: 100}\n")
    c = resolve_config({**common, "batch_size": "3", "metadata": {"data_dir": "d"}}, y)
    assert (c.preset, c.learning_rate, c.batch_size, c.lora_r) == ("adapteval", 1e-3, 3, 64)
    assert c.metadata == {"max_doc_words": 100, "data_dir": "d"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("preset: domainsum\nwarmup: 3\n")
    with pytest.raises(ConfigError, match="unknown configuration key 'warmup'"):
        resolve_config(common, bad)
    with pytest.raises(ConfigError, match="bad value for batch_size"):
        resolve_config({**common, "preset": "domainsum", "batch_size": "four"})


def test_shipped_configs_parse():
    from accelerate.commands.config.config_args import load_config_from_file

    from finetune.config import load_yaml

    cfg_dir = ROOT / "finetune" / "configs"
    accel = sorted(cfg_dir.glob("accelerate_*.yaml"))
    ours = sorted(set(cfg_dir.glob("*.yaml")) - set(accel))
    assert len(accel) >= 3 and len(ours) >= 2
    kinds = {load_config_from_file(str(p)).distributed_type for p in accel}
    assert {"MULTI_GPU", "FSDP", "DEEPSPEED"} <= {str(getattr(k, "value", k)) for k in kinds}
    for p in ours:
        values = load_yaml(p)
        resolve_config({"task": TASK, "base": "b", "output": "o", "preset": values.get("preset", "domainsum")}, p)


def test_optional_pieces_fall_back_with_a_notice(capsys):
    from finetune.model import resolve_optim, resolve_quantisation

    decisions: dict = {}
    cfg = resolve_config({"task": TASK, "base": "b", "output": "o", "preset": "adapteval"})
    assert resolve_optim(cfg, decisions) == "adamw_torch"
    assert "paged_adamw_32bit needs bitsandbytes and CUDA" in capsys.readouterr().out
    cfg = resolve_config({"task": TASK, "base": "b", "output": "o", "preset": "domainsum"})
    assert resolve_quantisation(cfg, decisions) is None and decisions["quantisation"] == "none"
    assert "8-bit base weights need bitsandbytes" in capsys.readouterr().out
    cfg = resolve_config({"task": TASK, "base": "b", "output": "o", "preset": "domainsum", "load_in_8bit": "true"})
    with pytest.raises(ConfigError, match="need bitsandbytes and a CUDA"):
        resolve_quantisation(cfg, {})


def test_baseline_takes_the_base_runs_given_settings_and_says_what_to_compare_with(tmp_path):
    """The latest run of the task by the base model itself (not an adapter, not another model);
    the settings it was given (metadata, environment), not what a scorer recorded it used, nor a
    folder setting; a run with a chat template is named as not like-for-like."""
    import json

    from finetune.baseline import compare_line, read_baseline
    from finetune.errors import ConfigError

    def write(name: str, stamp: str, model_args: str, chat: str | None, meta: dict) -> Path:
        path = tmp_path / "runs" / name / f"results_{stamp}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"results": {"domainsum_samsum": {"rouge1,none": 0.2}},
                                    "config": {"model": "hf", "model_args": model_args}, "chat_template": chat,
                                    "configs": {"domainsum_samsum": {"metadata": meta}}}))
        return path

    given = {"data_dir": "/data", "bertscore_model": "/minilm", "bertscore_layers": 6, "pretrained": "base",
             "rouge_stemming": False, "generation_journal": "/j", "score_cache_dir": "/c",
             "settings_used": {"bertscore_model": {"value": "/minilm", "from": "metadata"},
                               "bertscore_layers": {"value": 6, "from": "metadata"},
                               "rouge_stemming": {"value": None, "from": "default"},
                               "bertscore_batch_size": {"value": 8, "from": "environment"}}}
    older = write("base", "2025-01-01T00-00-00.000001", "pretrained=base", None, given)
    write("base", "2025-02-01T00-00-00.000001", "pretrained=base,peft=/adapter", None, given)
    write("other", "2025-03-01T00-00-00.000001", "pretrained=other", None, given)
    found = read_baseline(tmp_path / "runs", "domainsum_samsum", "base")
    assert found.results_file == older and not found.chat_template
    assert found.settings == {"data_dir": "/data", "bertscore_model": "/minilm", "bertscore_layers": 6,
                              "bertscore_batch_size": 8}
    assert compare_line("CMD", found) == (f"compare it with the base model's run in {older} (no chat template, as "
                                          f"in training)")
    chat = write("base", "2025-04-01T00-00-00.000001", "pretrained=base", "{{ messages }}", given)
    found = read_baseline(tmp_path / "runs", "domainsum_samsum", "base")
    assert found.results_file == chat and found.chat_template
    assert compare_line("CMD", found) == (f"the base model's run in {chat} used a chat template, which training did "
                                          f"not: for a like-for-like baseline evaluate the base model without one: CMD")
    assert compare_line("CMD", None).startswith("compare it with the base model evaluated without a chat template, "
                                                "as training used none (and with the same --metadata as above): CMD; ")
    with pytest.raises(ConfigError, match=r"^--baseline .*: no results of task 'domainsum_cnndm' by the base model base"):
        read_baseline(tmp_path / "runs", "domainsum_cnndm", "base")


def test_prefix_method_takes_its_own_settings_and_refuses_lora_ones(tmp_path, capsys):
    """Prefix tuning trains key/value positions, not low-rank weight updates: a LoRA rank,
    targets, merge or quantised base given to a prefix run are refused in one line (a run
    that dropped them would not be the run asked for), and the prefix length only applies
    to prefix runs. CCSBench's preset gives prefix runs its PEFT values (Appendix A.2)."""
    from finetune.cli import build_parser, main

    common = {"task": TASK, "base": "b", "output": "o", "preset": "ccsbench", "method": "prefix"}
    cfg = resolve_config(common)
    assert (cfg.method, cfg.learning_rate, cfg.epochs, cfg.num_virtual_tokens) == ("prefix", 1e-4, 20.0, 20)
    assert (cfg.best_by_validation, cfg.early_stopping_patience) == (True, 3)
    assert resolve_config({**common, "num_virtual_tokens": "8"}).num_virtual_tokens == 8
    refused = [({"lora_r": 16}, "lora_r applies to --method lora only; drop it for --method prefix"),
               ({"lora_alpha": 32, "lora_target_modules": "q,v"},
                "lora_alpha, lora_target_modules apply to --method lora only; drop them for --method prefix"),
               ({"merge": True}, "merge applies to --method lora only (a prefix is extra key/value positions"),
               ({"load_in_8bit": True}, "8-bit / 4-bit base weights need --method lora"),
               ({"load_in_4bit": True}, "8-bit / 4-bit base weights need --method lora"),
               ({"num_virtual_tokens": 0}, "num_virtual_tokens must be >= 1, got 0"),
               ({"gradient_checkpointing": True}, "gradient checkpointing does not work with --method prefix")]
    for extra, message in refused:
        with pytest.raises(ConfigError) as exc:
            resolve_config({**common, **extra})
        assert message in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(ConfigError, match=r"^num_virtual_tokens applies to --method prefix only \(given with "
                                          r"--method lora\)$"):
        resolve_config({**common, "method": "lora", "num_virtual_tokens": 8})
    with pytest.raises(ConfigError, match="lora_r applies to --method lora only; drop it for --method full"):
        resolve_config({**common, "preset": "domainsum", "method": "full", "lora_r": 4})
    with pytest.raises(ConfigError, match="preset 'domainsum' has no values for method 'prefix'"):
        resolve_config({**common, "preset": "domainsum"})
    # the command line: --help offers the method and its flag; a refusal is one line, exit 2
    text = build_parser().format_help()
    assert "prefix (peft prefix tuning" in text and "--num-virtual-tokens" in text
    with pytest.raises(SystemExit) as exc:
        main(["--task", TASK, "--base", "b", "--out", str(tmp_path / "o"), "--preset", "ccsbench",
              "--method", "prefix", "--lora-r", "4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and err == ["finetune: error: lora_r applies to --method lora only; drop it for "
                                           "--method prefix"]
    assert not (tmp_path / "o").exists()
    # the cross-domain loop evaluates a prefix run's output as an adapter
    from lm_eval_tasks.analysis.cross_domain_train import model_args

    assert model_args("b", Path("m"), "prefix", "seq2seq") == "pretrained=b,peft=m,backend=seq2seq"
    assert model_args("b", Path("m"), "full", "seq2seq") == "pretrained=m,backend=seq2seq"
    # --resume keeps the prefix length as it keeps a LoRA rank
    from finetune.card import CARD_NAME, check_resume, write_card

    ckpt = tmp_path / "run" / "checkpoints" / "checkpoint-2"
    write_card(ckpt.parent / CARD_NAME, {"hyperparameters": cfg.to_dict()})   # what a run's start card holds
    check_resume(cfg, ckpt, tmp_path / "run")
    with pytest.raises(ConfigError, match=r"was trained with num_virtual_tokens 20 \(given 8\); resume with"):
        check_resume(resolve_config({**common, "num_virtual_tokens": 8}), ckpt, tmp_path / "run")

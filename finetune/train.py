"""One fine-tuning run with the ``transformers`` Trainer.

Why the Trainer and not a hand-written loop: it gives, tested upstream, exactly what
the issue asks for and what ``accelerate launch`` needs (DDP, FSDP and DeepSpeed come
from the accelerate config; gradient accumulation, bf16/fp16 autocast, gradient
checkpointing, resumable checkpoints with optimizer, scheduler, RNG and data position,
per-epoch evaluation, best-checkpoint selection, tensorboard / W&B reporting). This
module adds what is ours: examples from the suite's tasks (``finetune/data.py``),
presets, guarded optional pieces (``finetune/model.py``), the output layout and the
run card.

Output layout (``OUTPUT``)::

    adapter_config.json, adapter_model.safetensors   LoRA, prefix: lm_eval ... peft=OUTPUT
    config.json, model.safetensors, tokenizer files  full: lm_eval ... pretrained=OUTPUT
    run_card.json                                    the run card (finetune/card.py)
    merged/                                          LoRA with merge: the merged model
    logs/                                            tensorboard events (when installed)
    checkpoints/checkpoint-<step>/                   resumable state; removed after a
                                                     finished run unless keep_checkpoints
    eval/                                            results of the lm_eval command the run
                                                     prints at its end (card: evaluate_with)
    eval_base/                                       the base model's, by the baseline command
                                                     it prints without --baseline (compare_with)

Every process of a distributed run prepares the same data (seeded, deterministic);
only the main process writes the card, deletes checkpoints and prints notices.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from custom_metrics.hf_models import context_length
from custom_metrics.progress import is_enabled as progress_enabled
from finetune.baseline import compare_line, read_baseline
from finetune.card import CARD_NAME, base_card, check_resume, eval_command, loss_curves, now, write_card
from finetune.config import PEFT_METHODS, ConfigError, FinetuneConfig
from finetune.data import (Collator, Encoder, TokenDataset, build_split, check_task, has_split, pack)
from finetune.model import (bitsandbytes_available, cuda_available, load_model, load_tokenizer,
                            model_kind, notice, resolve_optim)

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
#: what a run of each method saves, as its last lines name it
OUTPUT_NAMES = {"lora": "LoRA adapter", "prefix": "prefix-tuning adapter", "full": "model"}
_USER_TB_DIR = os.environ.get("TENSORBOARD_LOGGING_DIR")   # a user's own choice wins
WEIGHT_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin",
                "config.json", "model.safetensors", "pytorch_model.bin", "generation_config.json")


# ---------------------------------------------------------------------- helpers


def resolve_report_to(value: str, decisions: dict) -> list[str]:
    """``auto``: tensorboard when installed, W&B when installed and configured."""
    import importlib.util

    if value == "none":
        out: list[str] = []
    elif value != "auto":
        out = [v.strip() for v in value.split(",") if v.strip()]
    else:
        out = []
        if importlib.util.find_spec("tensorboard") or importlib.util.find_spec("tensorboardX"):
            out.append("tensorboard")
        wandb_configured = any(os.environ.get(k) for k in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_PROJECT"))
        if importlib.util.find_spec("wandb") and wandb_configured:
            out.append("wandb")
        if not out:
            notice("no tensorboard / W&B installed: the loss goes to the console and the run card")
    decisions["report_to"] = out
    return out


def check_checkpoint(path: Path) -> None:
    """A checkpoint the Trainer can resume from, or a ConfigError naming what is damaged.

    Why before training: a checkpoint cut short by a killed job (an empty or truncated
    weights file, a broken ``trainer_state.json``) otherwise fails deep inside the
    Trainer with a traceback about tensors.
    """
    def damaged(why: str) -> ConfigError:
        return ConfigError(f"checkpoint {path} is damaged ({why}); remove that folder to resume from the one "
                           f"before it, or pass --overwrite to start over")

    state = path / "trainer_state.json"
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise damaged("no trainer_state.json") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise damaged(f"trainer_state.json unreadable: {exc}") from None
    weights = sorted([*path.glob("*.safetensors"), *path.glob("pytorch_model*.bin"), *path.glob("adapter_model.bin")])
    if not weights:
        raise damaged("no weights file (*.safetensors, pytorch_model*.bin, adapter_model.bin)")
    for w in weights:
        if w.suffix == ".safetensors":
            try:
                from safetensors import safe_open

                with safe_open(str(w), framework="pt") as fh:
                    list(fh.keys())
            except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
                raise damaged(f"{w.name} unreadable: {exc}") from None


def ensure_writable(out: Path) -> None:
    """The output folder exists and takes files, or a ConfigError before any model loads."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot write to the output folder {out} ({exc.strerror or exc}); choose another "
                          f"--output") from None


def prepare_output(out: Path, resume: str | bool | None, overwrite: bool, is_main: bool) -> str | None:
    """Check the output directory; return the checkpoint to resume from (or None)."""
    from transformers.trainer_utils import get_last_checkpoint

    ckpts = out / CHECKPOINTS
    last = get_last_checkpoint(str(ckpts)) if ckpts.is_dir() else None
    if resume:
        if isinstance(resume, str) and resume not in ("auto", "last"):
            p = Path(resume)
            if not p.is_absolute() and not p.exists():
                p = ckpts / resume
            if not p.is_dir():
                raise ConfigError(f"--resume {resume}: no such checkpoint directory")
            check_checkpoint(p)
            return str(p)
        if last is None:
            notice(f"--resume: no checkpoint under {ckpts}; starting from the base model")
        else:
            check_checkpoint(Path(last))
            notice(f"resuming from {last}")
        return last
    finished = (out / CARD_NAME).is_file()
    if (last or finished) and not overwrite:
        what = "checkpoints of an earlier run" if last else "a finished run (run_card.json)"
        raise ConfigError(
            f"{out} holds {what}: pass --resume to continue it or --overwrite to start over"
        )
    if overwrite and is_main:
        if ckpts.is_dir():
            shutil.rmtree(ckpts)
        for name in (CARD_NAME, *WEIGHT_FILES):
            if (out / name).is_file():
                (out / name).unlink()
    return None


def training_arguments(cfg: FinetuneConfig, out: Path, optim: str, precision: str,
                       report_to: list[str], has_eval: bool) -> Any:
    """``TrainingArguments`` for this run, adapting to the installed transformers."""
    from transformers import TrainingArguments

    params = set(inspect.signature(TrainingArguments.__init__).parameters)
    eval_strategy = cfg.eval_strategy if has_eval else "no"
    best = bool(cfg.best_by_validation and has_eval)
    if cfg.save_steps is not None:
        save_strategy, save_steps = "steps", cfg.save_steps
    elif eval_strategy == "steps":
        save_strategy, save_steps = "steps", cfg.eval_steps
    else:
        save_strategy, save_steps = "epoch", None
    if best and save_strategy != eval_strategy:
        raise ConfigError(
            "best checkpoint by validation needs checkpoints at the evaluations: drop save_steps, "
            "or use eval_strategy: steps with save_steps a multiple of eval_steps"
        )
    kw: dict[str, Any] = dict(
        output_dir=str(out / CHECKPOINTS),
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.eval_batch_size or cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler,
        weight_decay=cfg.weight_decay,
        adam_beta1=cfg.adam_beta1,
        adam_beta2=cfg.adam_beta2,
        max_grad_norm=cfg.max_grad_norm,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps if cfg.max_steps else -1,
        optim=optim,
        seed=cfg.seed,
        data_seed=cfg.seed,
        logging_steps=cfg.logging_steps,
        logging_first_step=True,
        save_strategy=save_strategy,
        save_total_limit=cfg.save_total_limit,
        load_best_model_at_end=best,
        report_to=report_to or "none",
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        remove_unused_columns=False,
        label_names=["labels"],
        dataloader_num_workers=cfg.num_workers,
        dataloader_pin_memory=cuda_available(),
        ddp_find_unused_parameters=False,     # LoRA, prefix and full runs use every trainable weight
        # CPU-only machines: use_cpu makes torchrun / accelerate multi-process runs real
        # DDP (gloo) instead of independent copies
        use_cpu=not cuda_available(),
        disable_tqdm=not progress_enabled(),
    )
    if save_steps is not None:
        kw["save_steps"] = save_steps
    if best:
        kw.update(metric_for_best_model="eval_loss", greater_is_better=False)
    key = "eval_strategy" if "eval_strategy" in params else "evaluation_strategy"
    kw[key] = eval_strategy
    if eval_strategy == "steps":
        kw["eval_steps"] = cfg.eval_steps
    if cfg.warmup_ratio:
        if "warmup_ratio" in params:
            kw["warmup_ratio"] = cfg.warmup_ratio
        else:  # transformers >= 5: a float below 1 is a ratio
            kw["warmup_steps"] = cfg.warmup_ratio
    if cfg.gradient_checkpointing:
        if "activation_checkpointing" in params:
            kw["activation_checkpointing"] = True
            kw["activation_checkpointing_kwargs"] = {"use_reentrant": False}
        else:
            kw["gradient_checkpointing"] = True
            kw["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    if "logging_dir" in params:
        kw["logging_dir"] = str(out / "logs")
    elif "tensorboard" in (report_to or []) and _USER_TB_DIR is None:
        # transformers >= 5 reads the directory from the environment only
        os.environ["TENSORBOARD_LOGGING_DIR"] = str(out / "logs")
    unknown = [k for k in kw if k not in params]
    for k in unknown:  # an older / newer transformers without the argument
        log.warning("TrainingArguments has no %r in this transformers version; ignored", k)
        kw.pop(k)
    return TrainingArguments(**kw)


def _trainer_classes():
    from transformers import Trainer, TrainerCallback

    class StepTimer(TrainerCallback):
        """Wall time spent in optimizer steps (evaluation and saving excluded)."""

        def __init__(self):
            self.seconds = 0.0
            self.steps = 0
            self._t0: float | None = None

        def on_step_begin(self, args, state, control, **kw):
            self._t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            if self._t0 is not None:
                self.seconds += time.perf_counter() - self._t0
                self.steps += 1
                self._t0 = None

    class CountingTrainer(Trainer):
        """The Trainer, counting the tokens of the micro-batches it trains on."""

        tokens = 0
        supervised = 0

        def training_step(self, model, inputs, *args, **kwargs):
            if "attention_mask" in inputs:
                self.tokens += int(inputs["attention_mask"].sum())
            if "labels" in inputs:
                self.supervised += int((inputs["labels"] != -100).sum())
            return super().training_step(model, inputs, *args, **kwargs)

    return CountingTrainer, StepTimer


def combined_sha256(*parts: str) -> str:
    """One hash over the training and validation texts (each split's own is in ``data``)."""
    import hashlib

    return hashlib.sha256("\n".join(parts).encode("ascii")).hexdigest()


def _device_info() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"world_size": int(os.environ.get("WORLD_SIZE", "1"))}
    if torch.cuda.is_available():
        info["device"] = torch.cuda.get_device_name(0)
        info["cuda_peak_memory_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
    else:
        info["device"] = "cpu"
        info["torch_threads"] = torch.get_num_threads()
    info["optional_packages"] = available_extras()
    return info


# ---------------------------------------------------------------------- the run


def run(cfg: FinetuneConfig, resume: str | bool | None = None, overwrite: bool = False,
        argv: list[str] | None = None) -> dict[str, Any]:
    """Fine-tune ``cfg.base`` on ``cfg.task``; write the output and return the run card."""
    from accelerate import PartialState
    from transformers import EarlyStoppingCallback, set_seed

    cfg.validate()
    baseline = read_baseline(cfg.baseline, cfg.task, cfg.base) if cfg.baseline else None
    if baseline is not None:  # the base run's settings, under what this run was given
        cfg.metadata = {**baseline.settings, **cfg.metadata}
        cfg.validate()
        notice(f"--baseline {baseline.results_file}: its settings taken: "
               + (", ".join(f"{k}={v}" for k, v in baseline.settings.items()) or "none beyond the defaults"))
    check_task(cfg.task, "train", cfg.metadata)      # fail before loading any model
    state = PartialState(cpu=not cuda_available())
    is_main = state.is_main_process
    out = Path(cfg.output).resolve()
    if is_main:
        ensure_writable(out)
    resume_from = prepare_output(out, resume, overwrite, is_main)
    card = base_card(cfg, argv)
    if resume_from:
        check_resume(cfg, Path(resume_from), out)
    elif is_main:  # the record a later --resume checks its settings against
        write_card(out / CHECKPOINTS / CARD_NAME, card)
    state.wait_for_everyone()
    set_seed(cfg.seed)

    # ---- data (tokenizer only: data problems surface before the model loads)
    kind, config = model_kind(cfg.base, cfg.model_type)
    if cfg.packing and kind != "causal":
        raise ConfigError("packing applies to causal LMs only")
    tokenizer = load_tokenizer(cfg.base, kind)
    decisions: dict[str, Any] = {"model_kind": kind}
    ctx = context_length(config)
    max_length = min(cfg.max_length, ctx) if ctx else cfg.max_length
    if max_length < cfg.max_length:
        notice(f"max_length {cfg.max_length} exceeds the model's {ctx} positions; using {ctx}")
    decisions["max_length"] = max_length
    encoder = Encoder(tokenizer, kind, max_length, cfg.max_target_length, cfg.overlong, cfg.add_bos_token)
    train = build_split(cfg.task, "train", cfg.metadata, encoder, size=cfg.train_size, limit=cfg.limit,
                        seed=cfg.seed, require_full_document=cfg.require_full_document)
    val = None
    if cfg.eval_strategy != "no" or cfg.best_by_validation:
        if has_split(cfg.task, "validation", cfg.metadata):
            eval_cap = cfg.eval_limit or cfg.limit
            val = build_split(cfg.task, "validation", cfg.metadata, encoder, limit=eval_cap, seed=cfg.seed,
                              require_full_document=False)
        else:
            notice(f"{cfg.task} has no validation split: no evaluation loss, no best-checkpoint selection")
    train_examples = pack(train.examples, max_length, cfg.seed) if cfg.packing else train.examples
    if cfg.packing:
        decisions["packed_sequences"] = len(train_examples)
    card["data"] = {
        "train": train.summary(),
        "validation": val.summary() if val else None,
        "metadata": cfg.metadata,
        "prompt": "the task's zero-shot prompt (lm_eval_tasks.catalog.task_examples, shots=0)",
    }
    notice(f"{cfg.task}: {len(train.examples)} train examples (dropped {train.dropped or 'none'})"
           + (f", {len(val.examples)} validation" if val else ""))

    # ---- model
    loaded = load_model(cfg, kind, config, tokenizer)
    decisions.update(loaded.decisions)
    optim = resolve_optim(cfg, decisions)
    report_to = resolve_report_to(cfg.report_to, decisions)
    best = bool(cfg.best_by_validation or cfg.early_stopping_patience) and val is not None
    if cfg.early_stopping_patience and not cfg.best_by_validation and val is not None:
        decisions["best_by_validation"] = "on (early stopping needs it)"
    cfg_for_args = FinetuneConfig(**{**cfg.to_dict(), "best_by_validation": best})
    args = training_arguments(cfg_for_args, out, optim, decisions["precision"], report_to, val is not None)

    Trainer, StepTimer = _trainer_classes()
    timer = StepTimer()
    callbacks: list[Any] = [timer]
    if cfg.early_stopping_patience and val is not None:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=cfg.early_stopping_patience))
    collator = Collator(tokenizer.pad_token_id, kind,
                        pad_to_multiple_of=8 if decisions["precision"] in ("bf16", "fp16") else None)
    trainer = Trainer(model=loaded.model, args=args, data_collator=collator,
                      train_dataset=TokenDataset(train_examples),
                      eval_dataset=TokenDataset(val.examples) if val else None,
                      callbacks=callbacks)
    if is_main:
        card["started"] = now()
        card["resumed_from"] = resume_from
    result = trainer.train(resume_from_checkpoint=resume_from)
    st = trainer.state
    curves = loss_curves(st.log_history)      # before the final evaluate() adds to the log
    final_eval = None
    evals_at = [e.get("step") for e in st.log_history if "eval_loss" in e]
    if val is not None and (args.load_best_model_at_end or not evals_at or evals_at[-1] != st.global_step):
        final_eval = trainer.evaluate().get("eval_loss")
    elif val is not None:
        final_eval = [e["eval_loss"] for e in st.log_history if "eval_loss" in e][-1]

    # ---- outputs
    if getattr(trainer, "is_fsdp_enabled", False):
        # one loadable file set, not per-rank shards (checkpoints may stay sharded)
        trainer.accelerator.state.fsdp_plugin.set_state_dict_type("FULL_STATE_DICT")
    trainer.save_model(str(out))
    if is_main and kind == "seq2seq" and cfg.method == "full":
        tokenizer.save_pretrained(str(out))
    if cfg.merge and state.num_processes > 1:
        notice("merge skipped in a multi-process run (weights may be sharded); merge afterwards "
               f"with: python -m finetune.merge --adapter {out}")
    elif cfg.merge and is_main:
        from finetune.merge import merge_adapter

        decisions["merged"] = str(merge_adapter(out, out / "merged", base=cfg.base))
    state.wait_for_everyone()

    per_epoch = curves["eval_loss_history"]
    metrics = {
        "train_loss": result.metrics.get("train_loss"),
        "first_logged_loss": curves["train_loss_history"][0]["loss"] if curves["train_loss_history"] else None,
        "last_logged_loss": curves["train_loss_history"][-1]["loss"] if curves["train_loss_history"] else None,
        "eval_loss_per_epoch": per_epoch if cfg.eval_strategy == "epoch" else [],
        "eval_loss_history": per_epoch,
        "final_eval_loss": final_eval,
        "best_checkpoint": Path(st.best_model_checkpoint).name if st.best_model_checkpoint else None,
        "best_eval_loss": st.best_metric,
        "global_step": st.global_step,
        "epochs_completed": st.epoch,
        "steps_this_run": timer.steps,
        "train_runtime_s": result.metrics.get("train_runtime"),
        "step_time_s": round(timer.seconds, 3),
        "train_tokens_this_run": trainer.tokens,
        "supervised_tokens_this_run": trainer.supervised,
        "tokens_per_second": round(trainer.tokens / timer.seconds, 2) if timer.seconds else None,
        "steps_per_second": round(timer.steps / timer.seconds, 4) if timer.seconds else None,
        "train_loss_history": curves["train_loss_history"],
    }
    card.update({
        "finished": now(),
        "base_model": {"name_or_path": cfg.base, "model_type": loaded.model_type, "kind": kind,
                       "parameters": loaded.total_params, "trainable_parameters": loaded.trainable_params},
        "output": {
            "dir": str(out),
            "format": "peft_adapter" if cfg.method in PEFT_METHODS else "model",
            "evaluate_with": eval_command(cfg.base, str(out), cfg.task, kind, cfg.method, cfg.metadata),
            "compare_with": compare_line(eval_command(cfg.base, str(out), cfg.task, kind, cfg.method, cfg.metadata,
                                                      baseline=True), baseline),
        },
        "baseline": None if baseline is None else {"results_file": str(baseline.results_file),
                                                   "settings_taken": baseline.settings,
                                                   "chat_template": baseline.chat_template},
        "decisions": decisions,
        "data_sha256": combined_sha256(train.sha256, val.sha256 if val else ""),
        "metrics": metrics,
        "environment": _device_info(),
        "notes": ("tokens_per_second counts non-padding input tokens of this process in optimizer "
                  "steps (evaluation excluded); multiply by world_size for a data-parallel run"),
    })
    if is_main:
        write_card(out / CARD_NAME, card)
        if not cfg.keep_checkpoints and (out / CHECKPOINTS).is_dir():
            shutil.rmtree(out / CHECKPOINTS)
    state.wait_for_everyone()
    # the run's last words say where its result is and how to evaluate it (main process only)
    notice(f"saved the {OUTPUT_NAMES[cfg.method]} to {out}"
           + (f" (merged model: {decisions['merged']})" if decisions.get("merged") else ""))
    notice(f"evaluate it with: {card['output']['evaluate_with']}")
    notice(card["output"]["compare_with"])
    return card


def available_extras() -> dict[str, bool]:
    """Optional packages that change what a run does (for ``--help`` and the card)."""
    import importlib.util

    return {name: importlib.util.find_spec(name) is not None
            for name in ("bitsandbytes", "tensorboard", "wandb", "deepspeed")} | {
        "bitsandbytes_usable": bitsandbytes_available()}

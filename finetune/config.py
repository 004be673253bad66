"""The resolved configuration of one fine-tuning run.

Precedence, lowest first: the defaults below < the preset's values for the method
(``finetune/presets.py``, collected from the benchmark records) < a YAML file (``--config``:
a flat mapping of these field names; ``-`` and ``_`` are interchangeable) < command-line flags (including
``--set key=value`` for any field). The resolved values go into the run card.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finetune.errors import ConfigError

METHODS = ("lora", "full", "prefix")
#: methods whose output is a peft adapter over frozen base weights (``lm_eval ... peft=OUTPUT``)
PEFT_METHODS = ("lora", "prefix")
#: LoRA-only keys: set to other than their defaults with another method, they are refused
#: (a rank or target list given to a prefix run would otherwise be dropped without a word)
LORA_ONLY = ("lora_r", "lora_alpha", "lora_dropout", "lora_target_modules")
MODEL_TYPES = ("auto", "causal", "seq2seq")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
OVERLONG = ("drop", "truncate")
STRATEGIES = ("epoch", "steps", "no")
SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")


@dataclass
class FinetuneConfig:
    # --- what to train
    task: str = ""
    base: str = ""
    method: str = "lora"
    preset: str = ""
    output: str = ""
    model_type: str = "auto"          # auto: encoder-decoder configs are seq2seq
    metadata: dict = field(default_factory=dict)  # task metadata (as lm_eval --metadata)
    baseline: str = ""                # lm_eval output folder of the base model's run: its settings are taken
    # --- data
    train_size: int | None = None     # seeded subset of the examples that fit
    limit: int | None = None          # smoke runs: cap train (and validation) examples
    eval_limit: int | None = None     # cap validation examples
    max_length: int = 4096            # causal: prompt+target tokens; seq2seq: source tokens
    max_target_length: int = 512      # seq2seq label tokens
    overlong: str = "drop"            # drop (counted) or truncate (counted)
    require_full_document: bool = False  # drop records whose document the prompt cut
    packing: bool = False             # causal only: concatenate examples into windows
    add_bos_token: bool | None = None  # None: the tokenizer's default, as lm_eval
    # --- method
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    lora_target_modules: Any = "auto"  # auto | all-linear | list of names
    load_in_8bit: Any = False         # False | True | "auto" (when bitsandbytes + CUDA)
    load_in_4bit: bool = False
    merge: bool = False               # LoRA: also save the merged model under OUTPUT/merged
    num_virtual_tokens: int = 20      # prefix: trainable key/value positions per layer
    # --- optimisation
    learning_rate: float = 2e-4
    lr_scheduler: str = "linear"
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    optim: str = "adamw_torch"
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    max_grad_norm: float = 1.0
    batch_size: int = 4
    eval_batch_size: int | None = None
    grad_accum: int = 1
    epochs: float = 1.0
    max_steps: int | None = None
    precision: str = "auto"
    gradient_checkpointing: bool = False
    seed: int = 42
    # --- evaluation, checkpoints, logging
    eval_strategy: str = "epoch"
    eval_steps: int | None = None
    best_by_validation: bool = False
    early_stopping_patience: int | None = None
    save_steps: int | None = None     # None: save at every evaluation / epoch
    save_total_limit: int | None = 2
    keep_checkpoints: bool = False    # keep OUTPUT/checkpoints after a finished run
    logging_steps: int = 10
    report_to: str = "auto"           # auto | none | tensorboard | wandb | comma list
    num_workers: int = 0

    # ------------------------------------------------------------------ helpers

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> "FinetuneConfig":
        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise ConfigError(msg)

        need(bool(self.task), "no task: pass --task <suite task>, e.g. domainsum_samsum")
        need(bool(self.base), "no base model: pass --base <hub id or local path>")
        need(bool(self.output), "no output directory: pass --out DIR")
        need(self.method in METHODS, f"unknown method {self.method!r}: choose one of {', '.join(METHODS)}")
        need(self.model_type in MODEL_TYPES, f"model_type must be one of {MODEL_TYPES}, got {self.model_type!r}")
        need(self.precision in PRECISIONS, f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        need(self.overlong in OVERLONG, f"overlong must be one of {OVERLONG}, got {self.overlong!r}")
        need(self.eval_strategy in STRATEGIES, f"eval_strategy must be one of {STRATEGIES}, got {self.eval_strategy!r}")
        need(self.lr_scheduler in SCHEDULERS, f"lr_scheduler must be one of {SCHEDULERS}, got {self.lr_scheduler!r}")
        need(isinstance(self.metadata, dict), "metadata must be a JSON object")
        from lm_eval_tasks.settings import SettingError, check_metadata

        try:
            check_metadata(self.metadata, "finetune metadata")
        except SettingError as exc:
            raise ConfigError(str(exc)) from None
        for name in ("batch_size", "grad_accum", "max_length", "max_target_length", "lora_r",
                     "logging_steps", "num_virtual_tokens"):
            need(int(getattr(self, name)) >= 1, f"{name} must be >= 1, got {getattr(self, name)!r}")
        for name in ("train_size", "limit", "eval_limit", "max_steps", "save_steps", "eval_steps",
                     "eval_batch_size", "early_stopping_patience", "save_total_limit"):
            v = getattr(self, name)
            need(v is None or int(v) >= 1, f"{name} must be >= 1 (or unset), got {v!r}")
        need(self.learning_rate > 0, f"learning_rate must be > 0, got {self.learning_rate}")
        need(self.epochs > 0, f"epochs must be > 0, got {self.epochs}")
        need(0 <= self.lora_dropout < 1, f"lora_dropout must be in [0, 1), got {self.lora_dropout}")
        need(0 <= self.warmup_ratio < 1, f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        need(self.load_in_8bit in (True, False, "auto"),
             f"load_in_8bit must be true, false or auto, got {self.load_in_8bit!r}")
        need(not (self.load_in_8bit is True and self.load_in_4bit), "choose load_in_8bit or load_in_4bit, not both")
        need(self.method == "lora" or not (self.load_in_8bit is True or self.load_in_4bit),
             "8-bit / 4-bit base weights need --method lora (quantised weights cannot be trained fully, "
             "and prefix tuning here loads the base unquantised)")
        need(not (self.merge and self.method != "lora"),
             "merge applies to --method lora only (a prefix is extra key/value positions, not a weight "
             "update that folds into the base)")
        if self.method != "lora":
            defaults = FinetuneConfig()
            given = [k for k in LORA_ONLY if getattr(self, k) != getattr(defaults, k)]
            need(not given, f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to --method lora only; "
                            f"drop {'it' if len(given) == 1 else 'them'} for --method {self.method}")
        need(not (self.method == "prefix" and self.gradient_checkpointing),
             "gradient checkpointing does not work with --method prefix: transformers drops the key/value "
             "cache in checkpointed layers, and the prefix is that cache; drop --gradient-checkpointing")
        if self.method != "prefix":
            need(self.num_virtual_tokens == FinetuneConfig.num_virtual_tokens,
                 f"num_virtual_tokens applies to --method prefix only (given with --method {self.method})")
        if self.early_stopping_patience is not None:
            need(self.eval_strategy != "no", "early stopping needs an evaluation strategy (epoch or steps)")
        if self.best_by_validation:
            need(self.eval_strategy != "no",
                 "best checkpoint by validation needs an evaluation strategy (epoch or steps); "
                 "pass --no-best-by-validation to train without evaluation")
        if self.eval_strategy == "steps":
            need(self.eval_steps is not None, "eval_strategy 'steps' needs eval_steps")
        return self


# ---------------------------------------------------------------------- coercion

_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_FALSE = {"0", "false", "no", "off"}


def _field_types() -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(FinetuneConfig)}


def coerce(name: str, value: Any) -> Any:
    """A YAML / CLI value converted to the field's type (strings from ``--set``)."""
    types = _field_types()
    if name not in types:
        raise ConfigError(
            f"unknown configuration key {name!r}; known keys: {', '.join(sorted(types))}"
        )
    t = types[name]
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("none", "null", "") and ("None" in t or t == "Any"):
            return None
    try:
        if name == "load_in_8bit":
            if isinstance(value, str):
                low = value.strip().lower()
                if low == "auto":
                    return "auto"
                return _to_bool(name, low)
            return bool(value) if value is not None else False
        if name == "add_bos_token":
            return None if value is None else _to_bool(name, value)
        if name == "metadata":
            if isinstance(value, str):
                value = json.loads(value)
            if not isinstance(value, dict):
                raise ConfigError(f"metadata must be a JSON object, got {value!r}")
            return value
        if name == "lora_target_modules":
            if isinstance(value, str) and value not in ("auto", "all-linear"):
                return [v.strip() for v in value.split(",") if v.strip()]
            return value
        if t.startswith("bool"):
            return _to_bool(name, value)
        if t.startswith("int"):
            if value is None:
                return None
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if t.startswith("float"):
            return float(value)
        if t.startswith("str"):
            return str(value)
        return value
    except ConfigError:
        raise
    except (TypeError, ValueError, json.JSONDecodeError):
        raise ConfigError(f"bad value for {name}: {value!r} (expected {t})") from None


def _to_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in _BOOL_TRUE:
        return True
    if low in _BOOL_FALSE:
        return False
    raise ConfigError(f"bad value for {name}: {value!r} (expected true or false)")


def normalise_keys(values: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for k, v in values.items():
        key = str(k).replace("-", "_")
        try:
            out[key] = coerce(key, v)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return out


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A flat YAML mapping of configuration keys."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {p} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of keys to values")
    return normalise_keys(data, str(p))


def resolve_config(overrides: dict[str, Any], config_file: str | Path | None = None) -> FinetuneConfig:
    """Defaults < preset[method] < YAML < ``overrides`` (already typed or strings)."""
    from finetune.presets import preset_values

    file_values = load_yaml(config_file) if config_file else {}
    cli = normalise_keys({k: v for k, v in overrides.items() if v is not None}, "command line")
    preset = cli.get("preset") or file_values.get("preset")
    method = cli.get("method") or file_values.get("method") or FinetuneConfig.method
    if not preset:
        raise ConfigError("no preset: pass --preset adapteval, domainsum or ccsbench")
    merged: dict[str, Any] = {}
    merged.update(preset_values(preset, method))
    merged.update(file_values)
    merged.update(cli)
    merged["preset"], merged["method"] = preset, method
    meta = dict(file_values.get("metadata") or {})
    meta.update(cli.get("metadata") or {})
    merged["metadata"] = meta
    return FinetuneConfig(**merged).validate()

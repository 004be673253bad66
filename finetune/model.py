"""Base model, tokenizer, precision, optional quantisation and peft wrapping (LoRA or
prefix tuning).

Optional pieces are guarded: 8-bit / 4-bit base weights need ``bitsandbytes`` and a
CUDA device; ``load_in_8bit: auto`` (the DomainSum LoRA preset) uses them when both are
present and otherwise trains on unquantised weights, saying so once. The same holds
for paged AdamW (AdaptEval): without bitsandbytes + CUDA the run uses ``adamw_torch``
with a notice. Every such decision is written to the run card (``decisions``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from finetune.config import PEFT_METHODS, ConfigError, FinetuneConfig

log = logging.getLogger(__name__)

#: model_type -> LoRA target modules (attention query/value projections)
LORA_TARGETS: dict[str, list[str]] = {
    "gpt2": ["c_attn"],
    "gpt_neox": ["query_key_value"],
    "gptj": ["q_proj", "v_proj"],
    "llama": ["q_proj", "v_proj"],
    "mistral": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"],
    "qwen2": ["q_proj", "v_proj"],
    "qwen3": ["q_proj", "v_proj"],
    "gemma": ["q_proj", "v_proj"],
    "gemma2": ["q_proj", "v_proj"],
    "phi3": ["qkv_proj"],
    "falcon": ["query_key_value"],
    "opt": ["q_proj", "v_proj"],
    "t5": ["q", "v"],
    "mt5": ["q", "v"],
    "umt5": ["q", "v"],
    "longt5": ["q", "v"],
    "bart": ["q_proj", "v_proj"],
    "mbart": ["q_proj", "v_proj"],
    "pegasus": ["q_proj", "v_proj"],
    "pegasus_x": ["q_proj", "v_proj"],
    "led": ["q_proj", "v_proj"],
}
#: names tried when the model type is unknown to both tables
_GENERIC = (["q_proj", "v_proj"], ["query", "value"], ["c_attn"], ["query_key_value"], ["q", "v"])


@dataclass
class Loaded:
    model: Any
    tokenizer: Any
    kind: str                                  # causal | seq2seq
    model_type: str
    decisions: dict[str, Any] = field(default_factory=dict)
    trainable_params: int = 0
    total_params: int = 0


def notice(msg: str) -> None:
    """A one-line notice on the main process only (quiet on other ranks)."""
    if int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0) == 0:
        print(f"finetune: {msg}", flush=True)


def cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # pragma: no cover - torch is a dependency
        return False


def bitsandbytes_available() -> bool:
    return importlib.util.find_spec("bitsandbytes") is not None


def model_kind(base: str, requested: str) -> tuple[str, Any]:
    """``causal`` or ``seq2seq`` from the config (``is_encoder_decoder``), unless forced."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(base)
    except Exception as exc:
        raise ConfigError(f"cannot load the base model's config from {base!r}: {exc}") from None
    if requested != "auto":
        return requested, config
    return ("seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"), config


def resolve_precision(cfg: FinetuneConfig, decisions: dict) -> str:
    """fp32 / bf16 / fp16; ``auto`` = bf16 on a bf16-capable GPU, fp16 on other GPUs, else fp32."""
    import torch

    p = cfg.precision
    if p == "auto":
        if cuda_available():
            p = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        else:
            p = "fp32"
    if p == "fp16" and not cuda_available():
        raise ConfigError("fp16 mixed precision needs a CUDA GPU; use --bf16 or fp32 on CPU")
    decisions["precision"] = p
    return p


def resolve_quantisation(cfg: FinetuneConfig, decisions: dict) -> str | None:
    want8 = cfg.load_in_8bit
    ok = bitsandbytes_available() and cuda_available()
    if cfg.load_in_4bit or want8 is True:
        if not ok:
            raise ConfigError(
                f"{'4' if cfg.load_in_4bit else '8'}-bit base weights need bitsandbytes and a CUDA "
                "GPU (pip install bitsandbytes); set load_in_8bit: auto to fall back"
            )
        q = "4bit" if cfg.load_in_4bit else "8bit"
    elif want8 == "auto" and cfg.method == "lora":
        if ok:
            q = "8bit"
        else:
            notice("8-bit base weights need bitsandbytes and CUDA; training on unquantised weights")
            q = None
    else:
        q = None
    decisions["quantisation"] = q or "none"
    return q


def resolve_optim(cfg: FinetuneConfig, decisions: dict) -> str:
    name = cfg.optim
    needs_bnb = "bnb" in name or "8bit" in name or name.startswith("paged_")
    if needs_bnb and not (bitsandbytes_available() and cuda_available()):
        notice(f"optimizer {name} needs bitsandbytes and CUDA; using adamw_torch instead")
        name = "adamw_torch"
    decisions["optim"] = name
    return name


def load_tokenizer(base: str, kind: str):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(base)
    except Exception as exc:
        raise ConfigError(f"cannot load the tokenizer of {base!r}: {exc}") from None
    if tok.pad_token_id is None:
        # Only for padding in batches: padded positions are masked and unlabelled, and
        # the vocabulary is unchanged, so the adapter matches the base's embeddings.
        tok.pad_token = tok.eos_token
    return tok


def detect_targets(model, model_type: str, requested: Any) -> Any:
    """LoRA target modules: the family table, then peft's table, then common names."""
    if requested not in (None, "auto"):
        return requested
    names = {n.split(".")[-1] for n, _ in model.named_modules()}
    candidates: list[list[str]] = []
    if model_type in LORA_TARGETS:
        candidates.append(LORA_TARGETS[model_type])
    try:
        from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as PEFT_MAP

        if model_type in PEFT_MAP:
            candidates.append(list(PEFT_MAP[model_type]))
    except Exception:  # pragma: no cover - peft moved its table
        pass
    candidates.extend(list(c) for c in _GENERIC)
    for c in candidates:
        if all(x in names for x in c):
            return c
    raise ConfigError(
        f"cannot tell LoRA target modules for model type {model_type!r}; pass "
        f"--target-modules NAME[,NAME] (module names in this model include "
        f"{sorted(names)[:40]}) or all-linear"
    )


def load_model(cfg: FinetuneConfig, kind: str, config: Any, tok: Any) -> Loaded:
    """The base model for ``kind`` (from :func:`model_kind`), prepared for ``cfg.method``."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    decisions: dict[str, Any] = {"model_kind": kind}
    if cfg.packing and kind != "causal":
        raise ConfigError("packing applies to causal LMs only")
    precision = resolve_precision(cfg, decisions)
    quant = resolve_quantisation(cfg, decisions) if cfg.method == "lora" else None
    if cfg.method != "lora":
        decisions["quantisation"] = "none"
        if cfg.load_in_8bit == "auto":
            notice(f"load_in_8bit auto ignored: 8-bit base weights are for --method lora, not {cfg.method}")

    kwargs: dict[str, Any] = {}
    # LoRA, prefix: frozen base weights in the training precision (halves memory); the
    # adapter weights stay fp32 (peft's autocast_adapter_dtype). Full: fp32 master weights + AMP.
    if cfg.method in PEFT_METHODS and precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    else:
        dtype = torch.float32
    from packaging.version import Version

    dtype_key = "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"
    kwargs[dtype_key] = dtype
    if quant:
        from transformers import BitsAndBytesConfig

        if quant == "4bit":
            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                bnb_4bit_compute_dtype=torch.bfloat16 if precision == "bf16" else torch.float16)
        else:
            kwargs["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        # one full copy per process (DDP under accelerate launch)
        kwargs["device_map"] = {"": int(os.environ.get("LOCAL_RANK", "0"))}
    cls = AutoModelForCausalLM if kind == "causal" else AutoModelForSeq2SeqLM
    try:
        model = cls.from_pretrained(cfg.base, **kwargs)
    except Exception as exc:
        raise ConfigError(f"cannot load {cfg.base!r} as a {kind} LM: {exc}") from None
    model_type = getattr(config, "model_type", "unknown")
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tok.pad_token_id

    if quant:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=cfg.gradient_checkpointing,
            gradient_checkpointing_kwargs={"use_reentrant": False})
    if cfg.gradient_checkpointing:
        model.config.use_cache = False
        if cfg.method in PEFT_METHODS and hasattr(model, "enable_input_require_grads"):
            # frozen embeddings: make the checkpointed blocks' inputs require grad
            model.enable_input_require_grads()

    if cfg.method == "lora":
        from peft import LoraConfig, TaskType, get_peft_model

        targets = detect_targets(model, model_type, cfg.lora_target_modules)
        decisions["lora_target_modules"] = targets
        lcfg = LoraConfig(
            task_type=TaskType.CAUSAL_LM if kind == "causal" else TaskType.SEQ_2_SEQ_LM,
            r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
            target_modules=targets, bias="none",
            fan_in_fan_out=model_type == "gpt2",   # GPT-2's Conv1D stores weights transposed
        )
        model = get_peft_model(model, lcfg)
    elif cfg.method == "prefix":
        model = wrap_prefix(model, kind, model_type, cfg.num_virtual_tokens, decisions)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return Loaded(model, tok, kind, model_type, decisions, trainable, total)


def wrap_prefix(model: Any, kind: str, model_type: str, num_virtual_tokens: int, decisions: dict) -> Any:
    """The frozen base with peft's prefix tuning (Li and Liang, 2021): ``num_virtual_tokens``
    trainable key/value positions prepended in every attention layer.

    Why the prefix is trained directly (peft's ``prefix_projection`` off) and not through
    the paper's MLP re-parametrisation: the saved adapter is then exactly what was
    trained, and ``lm_eval ... peft=OUTPUT`` loads it like a LoRA adapter.
    """
    from peft import PrefixTuningConfig, TaskType, get_peft_model

    pcfg = PrefixTuningConfig(task_type=TaskType.CAUSAL_LM if kind == "causal" else TaskType.SEQ_2_SEQ_LM,
                              num_virtual_tokens=num_virtual_tokens, prefix_projection=False)
    try:
        model = get_peft_model(model, pcfg)
    except Exception as exc:  # noqa: BLE001 - peft raises several types for unsupported models
        raise ConfigError(f"peft's prefix tuning does not support the {model_type!r} {kind} model: {exc}") from None
    decisions["prefix"] = {"peft_type": "PREFIX_TUNING", "num_virtual_tokens": num_virtual_tokens,
                           "prefix_projection": False}
    return model

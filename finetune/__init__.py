"""Fine-tuning on the suite's tasks: LoRA and prefix tuning for causal LMs and seq2seq
models, full fine-tuning for seq2seq models, with the papers' presets; trained LoRA
adapters combine with fixed weights (``python -m finetune.combine``, LoRAHub's rule).

Checkpoints load in the harness as models::

    lm_eval --model hf --model_args pretrained=BASE,peft=OUTPUT ...          # LoRA, prefix
    lm_eval --model hf --model_args pretrained=OUTPUT,backend=seq2seq ...    # full seq2seq

Python use::

    from finetune import resolve_config, run
    cfg = resolve_config({"task": "domainsum_samsum", "base": "gpt2", "method": "lora",
                          "preset": "domainsum", "output": "out/samsum", "max_steps": 10})
    card = run(cfg)          # the run card (also written to out/samsum/run_card.json)
"""

from finetune.config import ConfigError, FinetuneConfig, resolve_config
from finetune.presets import PRESETS, preset_values

__all__ = ["ConfigError", "FinetuneConfig", "PRESETS", "preset_values", "resolve_config", "run", "main"]


def run(cfg, resume=None, overwrite=False, argv=None):
    """Train; see :func:`finetune.train.run` (imported lazily: torch is heavy)."""
    from finetune.train import run as _run

    return _run(cfg, resume=resume, overwrite=overwrite, argv=argv)


def main(argv=None):
    from finetune.cli import main as _main

    return _main(argv)

"""Hyper-parameter presets from the papers of the suite.

A preset maps a *method* (``lora``, ``prefix`` or ``full``) to configuration values; what a
preset does not set comes from :class:`finetune.config.FinetuneConfig`'s defaults,
and YAML files and command-line flags override both (see ``finetune/config.py``).

Sources (values marked "paper" are the papers'; the others are ours, chosen so the
preset runs as the paper describes, and listed in the presets table of docs/finetune.md):

* ``adapteval``: Afzal et al., *AdaptEval* (2024), fine-tuning setup: LoRA r=64,
  alpha=16, dropout 0.1, paged AdamW (32-bit), beta2 0.999, learning rate 2e-4 with a
  constant schedule, 1 epoch, training subsets of 1k / 5k / 10k instances that fit a
  4,096-token window without truncation (paper). Batch 4, gradient checkpointing and
  ``train_size`` 1000 as the default subset are ours.
* ``domainsum``: Yuan & Zhang, *DomainSum* (Findings of NAACL 2025): LLMs with LoRA,
  learning rate 5e-4, batch size 4, 20 epochs, 8-bit base weights (paper); BART /
  PEGASUS-X full fine-tuning with AdamW, learning rate 5e-5, batch 12, 4 epochs, best
  checkpoint by validation (paper). LoRA r=8 / alpha 16 / dropout 0.05 (the ``peft``
  defaults of the time) are ours.
* ``ccsbench``: *CCSBench* (compositional controllable summarization): LoRA learning
  rate 1e-4, at most 20 epochs (paper). We read "at most" as early stopping on the
  validation loss with patience 3, keeping the best checkpoint (ours). ``prefix``: the
  paper's Appendix A.2 gives 1e-4 and 20 epochs "for all PEFT models" and sends soft
  prefix tuning (its SP baseline, Table 4 row C2, per-attribute prefixes with the whole
  Flan-T5-Large trained) to MACSum's setup, which it does not restate; it leaves the
  prefix length unstated. We apply the PEFT values to peft's prefix tuning (one task
  prefix, base frozen, the control attributes in the prompt), with 20 virtual tokens,
  the same early stopping as for LoRA (ours).
* ``medqsum``: *Biomedical question summarization* (HealthCareMagic), Section 2.2:
  "We finetune the baseline models for 3 epochs [on the] HealthCareMagic dataset, with
  batch size 16, learning rate 5e-5, and an AdamW optimizer", full fine-tuning of the
  large Pegasus, BART, T5 and BioBART (paper). A 1,024-token source window (BART's
  positions; the dialogues average 78 words) is ours; the paper states no schedule,
  warm-up or checkpoint choice, so the library's defaults apply and the run card lists
  them.
"""

from __future__ import annotations

from typing import Any

from finetune.errors import ConfigError

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "adapteval": {
        "lora": {
            "lora_r": 64,
            "lora_alpha": 16,
            "lora_dropout": 0.1,
            "optim": "paged_adamw_32bit",
            "adam_beta2": 0.999,
            "learning_rate": 2e-4,
            "lr_scheduler": "constant",
            "epochs": 1.0,
            "train_size": 1000,
            "max_length": 4096,
            "overlong": "drop",
            "require_full_document": True,
            "batch_size": 4,
            "gradient_checkpointing": True,
        },
    },
    "domainsum": {
        "lora": {
            "learning_rate": 5e-4,
            "batch_size": 4,
            "epochs": 20.0,
            "load_in_8bit": "auto",
            "lora_r": 8,
            "lora_alpha": 16,
            "lora_dropout": 0.05,
            "max_length": 4096,
        },
        "full": {
            "optim": "adamw_torch",
            "learning_rate": 5e-5,
            "batch_size": 12,
            "epochs": 4.0,
            "best_by_validation": True,
            "max_length": 1024,
        },
    },
    "medqsum": {
        "full": {
            "optim": "adamw_torch",
            "learning_rate": 5e-5,
            "batch_size": 16,
            "epochs": 3.0,
            "max_length": 1024,
        },
    },
    "ccsbench": {
        "lora": {
            "learning_rate": 1e-4,
            "epochs": 20.0,
            "best_by_validation": True,
            "early_stopping_patience": 3,
            "max_length": 4096,
        },
        "prefix": {
            "learning_rate": 1e-4,
            "epochs": 20.0,
            "best_by_validation": True,
            "early_stopping_patience": 3,
            "max_length": 4096,
            "num_virtual_tokens": 20,
        },
    },
}

#: the papers' subset sizes for AdaptEval (``--train-size``)
ADAPTEVAL_TRAIN_SIZES = (1000, 5000, 10000)


def preset_names() -> list[str]:
    return sorted(PRESETS)


def preset_values(preset: str, method: str) -> dict[str, Any]:
    """The values ``preset`` sets for ``method``; a clear error for unknown ones."""
    if preset not in PRESETS:
        raise ConfigError(
            f"unknown preset {preset!r}: choose one of {', '.join(preset_names())}"
        )
    methods = PRESETS[preset]
    if method not in methods:
        raise ConfigError(
            f"preset {preset!r} has no values for method {method!r} (it defines "
            f"{', '.join(sorted(methods))}); pick another preset or method"
        )
    return dict(methods[method])

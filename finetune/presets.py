"""Hyper-parameter presets from the papers of the suite, one per benchmark.

A preset maps a *method* (``lora``, ``prefix`` or ``full``) to configuration values; what a
preset does not set comes from :class:`finetune.config.FinetuneConfig`'s defaults,
and YAML files and command-line flags override both (see ``finetune/config.py``).

Why collected here and not written here: a paper's training settings are a fact of its
benchmark, declared in its record (:attr:`lm_eval_tasks.benchmarks.record.Benchmark.finetune_preset`,
beside the paper's citation, with the source of each value: the paper's, or ours, chosen
so the preset runs as the paper describes, and listed in the presets table of
docs/finetune.md); a benchmark added to the suite brings its preset with it.
"""

from __future__ import annotations

from typing import Any

from finetune.errors import ConfigError
from lm_eval_tasks.benchmarks.suite import RECORDS

#: benchmark -> method -> values, read from the records of the benchmarks that declare one
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    rec.name: {method: dict(values) for method, values in rec.finetune_preset.items()}
    for rec in RECORDS.values() if rec.finetune_preset}


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

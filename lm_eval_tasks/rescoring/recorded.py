"""The scoring settings a harness run recorded, so that re-scoring its samples keeps them.

Why: a re-scored number must be the run's number. A run scored with MiniLM at layer 6
and the release's unstemmed ROUGE gives other values under roberta-large or stemming;
re-scoring its samples file with the environment's or the suite's defaults silently
changes the convention (and, offline, fails after minutes of hub retries for an encoder
the run never used). The results file written with a samples file
(``results_<timestamp>.json`` beside ``samples_<task>_<timestamp>.jsonl``) holds, per task,
``settings_used`` (every setting of the task's metric families, resolved) and what the
scorers actually used (``bertscore_model_used``, ``bertscore_layers_used``,
``judge_model_used``, and ``rouge_stemming``, the stemming the benchmark's convention
chose). :func:`recorded_settings` reads them; the command puts them under
its flags and ``--metadata`` (a flag still wins) and says which it took.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from custom_metrics import registry
from lm_eval_tasks.results import SAMPLES_STEM


def used() -> dict[str, str]:
    """What a scorer recorded it used -> the setting that chooses it (the resolved value, which
    a ``settings_used`` entry of ``None``, "the scorer's default", does not name), as every
    family's record declares it (``Family.recorded``)."""
    return {k: v for fam in registry.all_families() for k, v in fam.recorded.items()}


def results_of(samples: Path) -> Path | None:
    """The results file written in the same run as ``samples`` (same folder and timestamp)."""
    m = SAMPLES_STEM.match(samples.stem)
    if not m:
        return None
    path = samples.parent / f"results_{m.group('ts')}.json"
    return path if path.is_file() else None


def recorded_settings(samples: Path, task: str | None) -> tuple[Path | None, dict[str, Any]]:
    """(the run's results file, setting -> value it scored ``task`` with); ``(None, {})``
    when there is no such file or it records nothing for the task."""
    path = results_of(samples)
    if path is None or not task:
        return None, {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, {}
    meta = ((data.get("configs") or {}).get(task) or {}).get("metadata") or {}
    if not isinstance(meta, dict):
        return None, {}
    out = {key: entry["value"] for key, entry in (meta.get("settings_used") or {}).items()
           if isinstance(entry, dict) and entry.get("value") is not None}
    out.update({setting: meta[key] for key, setting in used().items() if meta.get(key) is not None})
    out.pop("score_cache_dir", None)  # where answers are cached changes no number
    return (path, out) if out else (None, {})


def taken(metadata: dict[str, Any], recorded: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata with the recorded settings under it, the recorded settings it took): a
    flag or ``--metadata`` key keeps its value; every other recorded setting is taken."""
    took = {k: v for k, v in recorded.items() if k not in metadata}
    return {**took, **metadata}, took


__all__ = ["recorded_settings", "results_of", "taken", "used"]

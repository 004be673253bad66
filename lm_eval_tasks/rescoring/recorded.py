"""The scoring settings a rescore keeps: those the harness run recorded, else the task YAML's.

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

Without such a file (a table of predictions, or samples copied away from their run) a
user's own task (``domsum new-task``) is scored with the settings its YAML's ``metadata``
gives (:func:`task_yaml_settings`; e.g. ``rouge_stemming: false``), as the harness would
have: its task metadata are settings there too. A suite task's conventions come from its
catalogue record (:mod:`lm_eval_tasks.scoring_context`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from custom_metrics import registry
from lm_eval_tasks.results import SAMPLES_STEM, register_user_tasks

log = logging.getLogger("rescore")


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
    when there is no such file or it records nothing for the task.

    The user domains the file evaluated are put into the catalogue from the task
    configurations it records (:func:`lm_eval_tasks.results.register_user_tasks`), so a
    user task's samples beside their results file need no ``--include_path``.
    """
    path = results_of(samples)
    if path is None or not task:
        return None, {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, {}
    if not isinstance(data, dict):
        return None, {}
    problems: list[str] = []
    register_user_tasks(data, path, problems)
    for problem in problems:
        log.warning("%s", problem)
    meta = ((data.get("configs") or {}).get(task) or {}).get("metadata") or {}
    if not isinstance(meta, dict):
        return None, {}
    out = {key: entry["value"] for key, entry in (meta.get("settings_used") or {}).items()
           if isinstance(entry, dict) and entry.get("value") is not None}
    out.update({setting: meta[key] for key, setting in used().items() if meta.get(key) is not None})
    out = scoring_only(out)
    return (path, out) if out else (None, {})


def scoring_only(found: dict[str, Any]) -> dict[str, Any]:
    """The settings that can change a score (where answers are cached changes none)."""
    return {k: v for k, v in found.items() if k != "score_cache_dir"}


def task_yaml_settings(task: str | None) -> tuple[Path | None, dict[str, Any]]:
    """(the YAML of user task ``task``, setting -> value its ``metadata`` gives); ``(None, {})``
    for a suite task, an unknown one, or a user task not read from a YAML (one registered
    from a results file).

    The YAML's metadata are checked as the harness checks them (an unknown or out-of-range
    key is a :class:`~lm_eval_tasks.settings.SettingError` naming the file).
    """
    from lm_eval_tasks.benchmarks.own.configs import read_task_yaml
    from lm_eval_tasks.catalog import UnknownTask, lookup
    from lm_eval_tasks.settings import SETTINGS, check_metadata

    if not task:
        return None, {}
    try:
        spec = lookup(task)
    except UnknownTask:
        return None, {}
    origin = Path(spec.source.origin).resolve() if spec.source is not None and spec.source.origin else None
    if origin is None or origin.suffix not in (".yaml", ".yml") or not origin.is_file():
        return None, {}
    meta = read_task_yaml(origin).get("metadata") or {}
    if not isinstance(meta, dict):
        return None, {}
    check_metadata(meta, f"{origin}: metadata", allowed=None)
    found = scoring_only({k: v for k, v in meta.items() if k in SETTINGS and v not in (None, "")})
    return (origin, found) if found else (None, {})


def taken(metadata: dict[str, Any], recorded: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata with the recorded settings under it, the recorded settings it took): a
    flag or ``--metadata`` key keeps its value; every other recorded setting is taken."""
    took = {k: v for k, v in recorded.items() if k not in metadata}
    return {**took, **metadata}, took


__all__ = ["recorded_settings", "results_of", "scoring_only", "taken", "task_yaml_settings", "used"]

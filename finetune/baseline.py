"""The base model's run that a fine-tuned output is compared with, and the settings it carries.

Why: the evaluation command a fine-tuning run prints is pasted as printed. Settings the
base model's run was given in ``--metadata`` (its BERTScore encoder, a document budget,
``data_dir``) and the fine-tuning run was not would be missing there: the adapter would
be scored with roberta-large (offline: not at all), and its numbers would not compare
with the base model's. ``--baseline DIR`` names that run's ``lm_eval`` output folder; its
results file records the settings each task ran with, and :func:`read_baseline` takes
them for the fine-tuning run and its printed command (a setting given to the fine-tuning
run keeps its value). Training applies no chat template, so the like-for-like baseline is
the base model evaluated without one (:func:`compare_line`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finetune.errors import ConfigError

#: settings groups that change no number of a run (folders, progress bars), left behind
_NOT_CARRIED_GROUPS = ("run",)
_NOT_CARRIED = ("score_cache_dir",)


@dataclass
class Baseline:
    """One base-model run of the task: where it is, the settings it ran with, how it prompted."""

    results_file: Path
    settings: dict[str, Any] = field(default_factory=dict)
    chat_template: bool = False


def _carried(meta: dict[str, Any]) -> dict[str, Any]:
    """The settings a task ran with, as its results record them: the keys of its metadata that
    are settings (given in ``--metadata`` or its YAML) and those of its scorers given in
    metadata or the environment (``settings_used``); never a secret, nor what changes no number."""
    from lm_eval_tasks.settings import SETTINGS, SettingError, resolve

    def kept(key: str, value: Any) -> bool:
        row = SETTINGS.get(key)
        if (row is None or row.secret or row.group in _NOT_CARRIED_GROUPS or key in _NOT_CARRIED
                or value in (None, "")):
            return False
        try:
            resolve({key: value}, key)  # what a record holds under a setting's name is that setting's value
        except SettingError:
            return False
        return True

    used = meta.get("settings_used") or {}
    # a scorer's setting is taken where its source says it was given; beside it the metadata
    # holds what the scorer recorded it used (the ROUGE convention's stemming), not given
    out = {k: v for k, v in meta.items() if k not in used and kept(k, v)}
    for key, entry in used.items():
        if isinstance(entry, dict) and entry.get("from") in ("metadata", "environment") and kept(key, entry.get("value")):
            out[key] = entry["value"]
    return out


def read_baseline(folder: str | Path, task: str, base: str) -> Baseline:
    """The latest run of ``task`` by the base model ``base`` (no ``peft=``) under ``folder``;
    :class:`ConfigError` naming the folder when there is none."""
    from finetune.card import model_identity
    from lm_eval_tasks.report.systems import model_args
    from lm_eval_tasks.results import read_results_files

    problems: list[str] = []
    found = []
    for path, ts, _, data in read_results_files([(Path(folder), None)], problems):
        margs = model_args(data.get("config") or {})
        meta = (((data.get("configs") or {}).get(task) or {}).get("metadata"))
        if task not in data["results"] or not isinstance(meta, dict) or "peft" in margs:
            continue
        pretrained = str(margs.get("pretrained") or margs.get("model") or "")
        if model_identity(pretrained) == model_identity(base):
            chat = data.get("chat_template") is not None or bool(data.get("chat_template_sha"))
            found.append((ts, str(path), Baseline(path, _carried(meta), chat)))
    if not found:
        said = "; ".join(problems[:3])
        raise ConfigError(f"--baseline {folder}: no results of task {task!r} by the base model {base} there"
                          + (f" ({said})" if said else "") + "; give the --output_path of its lm_eval run")
    return max(found, key=lambda f: f[:2])[2]


def compare_line(base_command: str, baseline: Baseline | None) -> str:
    """What the fine-tuned output's scores are to be compared with, in one line."""
    if baseline is None:
        return (f"compare it with the base model evaluated without a chat template, as training used none (and "
                f"with the same --metadata as above): {base_command}; give --baseline the folder of an earlier "
                f"base-model run of the task to carry that run's settings into the command above")
    if baseline.chat_template:
        return (f"the base model's run in {baseline.results_file} used a chat template, which training did not: "
                f"for a like-for-like baseline evaluate the base model without one: {base_command}")
    return f"compare it with the base model's run in {baseline.results_file} (no chat template, as in training)"


__all__ = ["Baseline", "compare_line", "read_baseline"]

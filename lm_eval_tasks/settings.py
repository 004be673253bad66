"""THE settings resolver: task metadata, then the environment, then the default.

Why one resolver: the harness hands ``--metadata`` to the task config, not to metric
functions, and the same knob (BERTScore encoder, judge endpoint, data mirror) is read
by the tasks, re-scoring, fine-tuning and the analysis commands. Each knob is one
:class:`~custom_metrics.setting.Setting` row, declared by its owner (a metric family beside
its function, the judge beside ``JudgeConfig``, a benchmark in its record, the run-wide
rows in :mod:`lm_eval_tasks.setting_table`, which collects them all into :data:`SETTINGS`,
in the order of docs/settings.md); the results JSON records the values a run actually used.

Precedence: ``--metadata '{"key": value}'`` (or a command's flag) > the row's
environment variable > the row's default. An empty string counts as unset. A value
that does not convert to the row's type, or falls outside its range or choices, is an
error naming the key, the value and what is allowed; an unknown key is an error naming
the nearest setting (:func:`check_metadata`). Secrets (the judge API key) are read from
the environment only: given in metadata, which is written into results files, they are
an error.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Collection, Mapping
from typing import Any

import custom_metrics
from custom_metrics.errors import SuiteError
from custom_metrics.setting import Setting
from lm_eval_tasks.setting_table import ANALYSES, GROUPS, OWNER, RUN_WIDE, SETTINGS, markdown_table


class SettingError(SuiteError, ValueError):
    """A setting's value cannot be used; the message names the key and its variable."""


def _raw(metadata: Mapping[str, Any] | None, row: Setting) -> tuple[Any, str]:
    if not row.secret and metadata and metadata.get(row.key) not in (None, ""):
        return metadata[row.key], "metadata"
    env = next((e for e in (row.env, row.env_also) if e and os.environ.get(e, "") != ""), None)
    return (os.environ[env], "environment") if env else (None, "default")


def resolve(metadata: Mapping[str, Any] | None, key: str, default: Any = None) -> Any:
    """The value of setting ``key``: metadata > environment > ``default`` or the row's default."""
    row = SETTINGS.get(key)
    if row is None:
        raise KeyError(f"unknown setting {key!r}; settings are listed in docs/settings.md (lm_eval_tasks/settings.py)")
    value, source = _raw(metadata, row)
    if source == "default":
        return row.default if default is None else default
    env = row.env if row.env and os.environ.get(row.env, "") != "" else row.env_also
    where = f"metadata {key!r}" if source == "metadata" else f"${env}"
    shown = "(hidden)" if row.secret else repr(value)
    try:
        converted = row.kind(value)
    except (TypeError, ValueError, json.JSONDecodeError):
        raise SettingError(f"setting {key!r} ({where}) must be {row.type_name}, got {shown}") from None
    problem = row.check(converted)
    if problem:
        raise SettingError(f"setting {key!r} ({where}) must be {problem}, got {shown}")
    return converted


#: keys a task's metadata holds beside the settings: the task YAMLs' own (``domain``: a user
#: domain's record, :mod:`lm_eval_tasks.benchmarks.own.configs`), and lm-eval's
TASK_METADATA_KEYS = frozenset({"version", "paper", "config_source", "domain"})


def check_metadata(metadata: Mapping[str, Any] | None, where: str,
                   allowed: Collection[str] | None = frozenset()) -> None:
    """Every key given is a known setting with a value of its type and range.

    Why: a misspelled key (``data_dri``) or an out-of-range value (``max_doc_words``
    0) used to be ignored or used as given, and the run went on with numbers nobody
    asked for. ``allowed``: other keys that belong there (the model's arguments, which
    lm-eval merges into every task's metadata); None when they cannot be known, and
    then only a key that is a near miss of a setting is an error.
    """
    for key, value in (metadata or {}).items():
        if key in SETTINGS and SETTINGS[key].secret:
            from custom_metrics import secrets

            secrets.register(value)  # whatever prints this run's arguments hides it from now on
            raise SettingError(f"{where}: {key!r} must not be given in metadata, which is written into "
                               f"results files and run cards; set ${SETTINGS[key].env} (or $OPENAI_API_KEY) "
                               f"in the environment instead.")
        if key in SETTINGS:
            if value not in (None, ""):
                try:
                    resolve({key: value}, key)
                except SettingError as exc:  # where it was given: --metadata, a task YAML
                    raise SettingError(f"{where}: {exc}") from None
            continue
        if key in TASK_METADATA_KEYS or (allowed is not None and key in allowed):
            continue
        near = difflib.get_close_matches(key, list(SETTINGS), n=1, cutoff=0.75)
        if allowed is None and not near:
            continue
        hint = f"; did you mean {near[0]!r}?" if near else "."
        raise SettingError(f"{where}: unknown setting {key!r}{hint} The settings are listed in "
                           f"docs/settings.md and in lm_eval_tasks/settings.py.")


def source_of(metadata: Mapping[str, Any] | None, key: str) -> str:
    """Where ``key``'s value comes from: ``metadata``, ``environment`` or ``default``."""
    return _raw(metadata, SETTINGS[key])[1]


def resolve_many(metadata: Mapping[str, Any] | None, keys: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Several settings at once (plain values for the metric functions)."""
    return {k: resolve(metadata, k) for k in keys}


def judge_config(metadata: Mapping[str, Any] | None, **overrides: Any):
    """The judge's :class:`~custom_metrics.judge.JudgeConfig`, or None when no judge model is set.

    The one place the judge's settings are read (metadata, then the environment, then
    the defaults), the cache path and the API key included: the judge package reads none.
    Each field is filled from the row it declares (``JudgeConfig.from_settings``).
    """
    return custom_metrics.JudgeConfig.from_settings(lambda key: resolve(metadata, key),
                                                    lambda key: source_of(metadata, key) != "default", **overrides)


__all__ = ["ANALYSES", "GROUPS", "OWNER", "RUN_WIDE", "SETTINGS", "SettingError", "TASK_METADATA_KEYS",
           "check_metadata", "judge_config", "markdown_table", "resolve", "resolve_many", "source_of"]

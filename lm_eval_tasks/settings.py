"""THE settings resolver: task metadata, then the environment, then the default.

Why one resolver: the harness hands ``--metadata`` to the task config, not to metric
functions, and the same knob (BERTScore encoder, judge endpoint, data mirror) is read
by the tasks, re-scoring, fine-tuning and the analysis commands. Each knob is one
:class:`~custom_metrics.setting.Setting` row, declared by its owner: the run-wide rows below,
a metric family's beside its function and the judge's beside ``JudgeConfig``
(:func:`custom_metrics.registry.setting_rows`), a benchmark's in its record. :data:`SETTINGS`
gathers them in the order of docs/settings.md, generated from it (:func:`markdown_table`);
the results JSON records the values a run actually used.

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
from custom_metrics import devices, registry
from custom_metrics.errors import SuiteError
from custom_metrics.progress import ENV as PROGRESS_ENV
from custom_metrics.reference_cache import is_off
from custom_metrics.setting import Setting, arrange, as_bool, as_float, as_int, one_line
from custom_metrics.analysis import token_shift
from lm_eval_tasks.analysis import amplitude
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS


class SettingError(SuiteError, ValueError):
    """A setting's value cannot be used; the message names the key and its variable."""


#: the groups of the settings table, in its order
GROUPS = ("data", "scorers", "judge", "analysis", "run")
S = Setting
#: the run-wide rows, which no one family or benchmark owns
RUN_WIDE = (
    S("data_dir", "DOMSUM_DATA_DIR", str, None,
      "Local mirror root `DIR/<benchmark>/<subset>/<split>.jsonl`; unset = the hub.", "data"),
    S("include_path", "DOMSUM_INCLUDE_PATH", str, None,
      "Folders of your own task YAMLs (`domsum new-task`), separated by `os.pathsep`, that `domsum` "
      "commands know besides the suite's tasks (docs/own_domain.md).", "data"),
    S("hub_path", None, str, None, "Another hub copy of a subset's dataset (same columns).", "data"),
    S("sample_test", None, as_int, None, "Seeded sample of the test split (AdaptEval, CCSBench, medqsum).",
      "data", low=1),
    S("sample_seed", None, as_int, 42, "Seed of `sample_test`, of `token_shift_samples` and of `judge_sample`.", "data"),
    S("fewshot_seed", None, as_int, 1234, "Seed of the per-document demonstration draw.", "data", system="prompt"),
    S("prompt_tokenizer", "DOMSUM_PROMPT_TOKENIZER", str, None,
      "Tokenizer (hub id or path) whose tokens budget the document inside the prompt.", "data", system="prompt"),
    S("max_doc_words", None, as_int, None, "Document budget in words (default: per benchmark).", "data", low=1,
      system="prompt"),
    S("max_doc_tokens", None, as_int, None, "Document budget in `prompt_tokenizer` tokens.", "data", low=1,
      system="prompt"),
    S("chars_per_token", "DOMSUM_CHARS_PER_TOKEN", as_float, 3.0,
      "Characters per token assumed when fitting prompts for an API model without a tokenizer "
      "(lower is safer).", "data", low=0, low_open=True, system="prompt"),
    S("max_demo_words", None, as_int, None, "Per-demonstration budget in words (default: per benchmark).",
      "data", low=1, system="prompt"),
    S("max_demo_tokens", None, as_int, None, "Per-demonstration budget in `prompt_tokenizer` tokens.", "data", low=1,
      system="prompt"),
    S("scorer_device", "DOMSUM_SCORER_DEVICE", devices.parse, "auto",
      "Device of the scorer models (BERTScore, BLANC, perplexity, MAUVE): `auto` = the rank's own GPU "
      "under `accelerate launch`, else the first GPU no sharded model occupies (`parallelize=True` takes "
      "every GPU, vLLM its first tensor x data parallel ones), else `cpu`; or `cpu`, `cuda`, `cuda:N`, "
      "`mps`.", "scorers", kind_name=f"device: {' / '.join(devices.FORMS)}"),
    S("score_cache_dir", "DOMSUM_SCORE_CACHE", str, "~/.cache/domsum/scores",
      "Folder caching reference-side work across runs (BERTScore reference embeddings, keyed by "
      "encoder, weights, layer, max length and text); `off` disables.", "scorers"),
    S("preflight", "DOMSUM_PREFLIGHT", as_bool, True,
      "Check encoders, vocabularies and the judge endpoint before any generation.", "run"),
    S("generations_dir", "DOMSUM_GENERATIONS_DIR", str, "~/.cache/domsum/generations",
      "Folder where judged tasks save their generations before judging starts (a samples file "
      "`domsum rescore` reads; `off` disables).", "run"),
    S("generation_journal", "DOMSUM_GENERATION_JOURNAL", str, "~/.cache/domsum/journal",
      "Folder of the generation journal: each generation of a suite task is committed as it finishes, "
      "keyed by the model's identity and the exact request, so the same command run again after an "
      "interruption generates only what is missing (docs/troubleshooting.md); `off` disables.", "run"),
    S("run_label", None, one_line, None,
      "A name for the system this run evaluates: `domsum report` shows it in place of the model's "
      "folder name (`domsum report --label FOLDER=NAME` names a folder's runs after the fact). Runs given "
      "different names are reported as different systems; a run without one joins the one named system "
      "of its model and settings (docs/reports.md).", "run"),
    S("progress", PROGRESS_ENV, as_bool, True,
      "Progress bars on stderr while metrics are scored (the commands' `--no-progress`).", "run"),
)
del S

#: the benchmark that owns a row, for the rows a benchmark's record declares
OWNER: dict[str, str] = {row.key: rec.name for rec in ALL_RECORDS.values() for row in rec.settings}
#: the analysis modules that declare rows (``SETTING_ROWS``) beside the code reading them
ANALYSES = (token_shift, amplitude)
#: every row, by key, in the order of the settings table
SETTINGS: dict[str, Setting] = arrange((*RUN_WIDE, *registry.setting_rows(), *(r for m in ANALYSES for r in m.SETTING_ROWS),
                                        *(row for rec in ALL_RECORDS.values() for row in rec.settings)), GROUPS)


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


def markdown_table() -> str:
    """The settings table of docs/settings.md, generated from :data:`SETTINGS`."""
    head = ["| metadata key | environment variable | type | default | meaning |", "|---|---|---|---|---|"]
    return "\n".join(head + [s.table_row for s in SETTINGS.values()])

"""THE settings resolver: task metadata, then the environment, then the default.

Why one table: the harness hands ``--metadata`` to the task config, not to metric
functions, and the same knob (BERTScore encoder, judge endpoint, data mirror) is read
by the tasks, re-scoring, fine-tuning and the analysis commands. Each knob is one
:class:`Setting` row below; the settings table of docs/settings.md is generated from it
(:func:`markdown_table`, checked by a test), and the results JSON records the values a
run actually used.

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
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from custom_metrics import devices
from custom_metrics.errors import SuiteError


class SettingError(SuiteError, ValueError):
    """A setting's value cannot be used; the message names the key and its variable."""


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


def _int(value: Any) -> int:
    """An integer, strictly: ``2.5``, ``"2.5"`` and ``True`` are not silently truncated."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError(value)
    text = str(value).strip(" \t\r\n")
    if not re.fullmatch(r"[+-]?[0-9]+", text):  # int() would also take "1_000" and control characters
        raise ValueError(value)
    return int(text)


def _float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    return float(value)


def _words_or_map(value: Any) -> int | dict[str, int]:
    """A word count, or ``{name: count}`` (JSON text or a mapping), every count >= 1."""
    value = _json_or_str(value)
    if isinstance(value, Mapping):
        out = {str(k): _int(v) for k, v in value.items()}
        if any(v < 1 for v in out.values()):
            raise ValueError(value)
        return out
    n = _int(value)
    if n < 1:
        raise ValueError(value)
    return n


def _label(value: Any) -> str:
    """A run's name (``run_label``): one line of printable text, at most 80 characters, so it
    can head a table row, a legend entry and a CSV cell as given."""
    text = str(value).strip()
    if not text or len(text) > 80 or not text.isprintable():
        raise ValueError(value)
    return text


def _fm_weights(value: Any) -> tuple[float, ...]:
    from custom_metrics.judge.fm import facet_weights

    return facet_weights(value)


def _json_or_str(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in "[{":
        return json.loads(value)
    return value


@dataclass(frozen=True)
class Setting:
    """One knob: its metadata key, environment variable, type, default and meaning."""

    key: str
    env: str | None
    kind: Callable[[Any], Any]
    default: Any
    doc: str
    group: str
    secret: bool = False
    #: inclusive bounds for numbers, or the allowed values (compared lower-case)
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    #: the lowest value is excluded (a ratio that must be positive)
    low_open: bool = False

    def check(self, value: Any) -> str | None:
        """Why ``value`` (already of the row's type) is out of range; None when it is fine."""
        if self.secret:  # sent in an HTTP header: checked before the first request
            from custom_metrics.secrets import key_problem

            return key_problem(value)
        if self.choices is not None and str(value).strip().lower() not in self.choices:
            return f"one of {', '.join(self.choices)}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
            too_high = self.high is not None and value > self.high
            if too_low or too_high or value != value:  # NaN is in no range
                return self.range_text
        return None

    @property
    def range_text(self) -> str:
        lo = "" if self.low is None else (f"> {self.low:g}" if self.low_open else f">= {self.low:g}")
        hi = "" if self.high is None else f"<= {self.high:g}"
        if self.choices is not None:
            return f"one of {', '.join(self.choices)}"
        return " and ".join(x for x in (lo, hi) if x) or "any value"

    @property
    def type_name(self) -> str:
        name = {_int: "int", _float: "float", str: "str", _bool: "bool", _json_or_str: "json/str",
                _words_or_map: "int or {name: int}", _label: "text (one line, at most 80 characters)", _fm_weights: "4 numbers >= 0 (JSON list, or a `domsum fm-weights` file)", devices.parse: f"device: {' / '.join(devices.FORMS)}"}.get(self.kind, getattr(self.kind, "__name__", "value"))
        if self.choices is not None:
            return f"{name}: {' / '.join(self.choices)}"
        return name if self.range_text == "any value" else f"{name} {self.range_text}"


def _rows() -> list[Setting]:
    from custom_metrics.families.bertscore import DEFAULT_SCI_BERTSCORE_MODEL
    from custom_metrics.families.blanc import DEFAULT_MODEL as BLANC_MODEL
    from custom_metrics.families.dvo import DEFAULT_VOCAB_DIR, ENV_VOCAB_DIR
    from custom_metrics.judge.fm import EXTRACT_MAX_TOKENS as FM_EXTRACT_MAX_TOKENS
    from custom_metrics.judge.fm import FACET_WEIGHTS as FM_FACET_WEIGHTS
    from custom_metrics.judge import DEFAULT_CACHE_PATH, JudgeConfig
    from custom_metrics.families.mauve import DEFAULT_MODEL as MAUVE_MODEL
    from custom_metrics.families.perplexity import DEFAULT_MODEL as PPL_MODEL
    from custom_metrics.progress import ENV as PROGRESS_ENV
    from lm_eval_tasks.analysis.amplitude import ATTRIBUTES, FLIP_KEY

    judge = JudgeConfig.__dataclass_fields__
    S = Setting
    return [
        # data and prompts
        S("data_dir", "DOMSUM_DATA_DIR", str, None,
          "Local mirror root `DIR/<benchmark>/<subset>/<split>.jsonl`; unset = the hub.", "data"),
        S("include_path", "DOMSUM_INCLUDE_PATH", str, None,
          "Folders of your own task YAMLs (`domsum new-task`), separated by `os.pathsep`, that `domsum` "
          "commands know besides the suite's tasks (docs/own_domain.md).", "data"),
        S("hub_path", None, str, None, "Another hub copy of a subset's dataset (same columns).", "data"),
        S("sample_test", None, _int, None, "Seeded sample of the test split (AdaptEval, CCSBench, medqsum).",
          "data", low=1),
        S("sample_seed", None, _int, 42, "Seed of `sample_test` and of `token_shift_samples`.", "data"),
        S("fewshot_seed", None, _int, 1234, "Seed of the per-document demonstration draw.", "data"),
        S("column_map", None, _json_or_str, None, "CCSBench: `{canonical: column}` for other column names.",
          "data"),
        S("prompt_tokenizer", "DOMSUM_PROMPT_TOKENIZER", str, None,
          "Tokenizer (hub id or path) whose tokens budget the document inside the prompt.", "data"),
        S("max_doc_words", None, _int, None, "Document budget in words (default: per benchmark).", "data", low=1),
        S("max_doc_tokens", None, _int, None, "Document budget in `prompt_tokenizer` tokens.", "data", low=1),
        S("chars_per_token", "DOMSUM_CHARS_PER_TOKEN", _float, 3.0,
          "Characters per token assumed when fitting prompts for an API model without a tokenizer "
          "(lower is safer).", "data", low=0, low_open=True),
        S("max_demo_words", None, _int, None, "Per-demonstration budget in words (default: per benchmark).",
          "data", low=1),
        S("max_demo_tokens", None, _int, None, "Per-demonstration budget in `prompt_tokenizer` tokens.", "data", low=1),
        S("max_demo_summary_words", None, _int, None, "AdaptEval: per-demonstration summary budget.", "data", low=1),
        S("filter_extractive_overlap", None, _float, 0.9,
          "AdaptEval filter: drop pairs with at least this share of summary trigrams in the document (> 1: off).",
          "data", low=0),
        S("filter_max_doc_words", None, _int, 15000, "AdaptEval filter: longest document kept.", "data", low=1),
        S("filter_max_summary_words", None, _words_or_map, {"arxiv": 500, "pubmed": 500, "govreport": 1500},
          "AdaptEval filter: longest summary kept (a number or `{domain: n}`).", "data"),
        S("filter_min_summary_words", None, _int, 5, "AdaptEval filter: shortest summary kept.", "data", low=0),
        S("ccs_prompt_file", "DOMSUM_CCS_PROMPT_FILE", str, None,
          "CCSBench: JSON file replacing the built-in prompt texts.", "data"),
        S("adapteval_prompt_variant", "DOMSUM_ADAPTEVAL_PROMPT_VARIANT", str, "paper",
          "AdaptEval generation prompt: `paper` (Table 7) or `release` (`prompt_0` of the released "
          "prediction files).", "data", choices=("paper", "release")),
        # encoders and models
        S("bertscore_model", "DOMSUM_BERTSCORE_MODEL", str, None,
          "BERTScore encoder (hub id or local dir); unset = bert-score's English default (roberta-large).",
          "scorers"),
        S("bertscore_layers", "DOMSUM_BERTSCORE_LAYERS", _int, None,
          "BERTScore layer; unset = bert-score's tuned layer for the model.", "scorers", low=1),
        S("bertscore_batch_size", "DOMSUM_BERTSCORE_BATCH_SIZE", _int, 64, "BERTScore batch size.", "scorers", low=1),
        S("scorer_device", "DOMSUM_SCORER_DEVICE", devices.parse, "auto",
          "Device of the scorer models (BERTScore, BLANC, perplexity, MAUVE): `auto` = the rank's own GPU "
          "under `accelerate launch`, else the first GPU no sharded model occupies (`parallelize=True` takes "
          "every GPU, vLLM its first tensor x data parallel ones), else `cpu`; or `cpu`, `cuda`, `cuda:N`, "
          "`mps`.", "scorers"),
        S("score_cache_dir", "DOMSUM_SCORE_CACHE", str, "~/.cache/domsum/scores",
          "Folder caching reference-side work across runs (BERTScore reference embeddings, keyed by "
          "encoder, weights, layer, max length and text); `off` disables.", "scorers"),
        S("rouge_stemming", "DOMSUM_ROUGE_STEMMING", _bool, None,
          "ROUGE Porter stemming; unset = the benchmark release's convention (DomainSum off; AdaptEval, "
          "CCSBench, medqsum on).", "scorers"),
        S("use_wordnet", "DOMSUM_METEOR_WORDNET", _bool, None,
          "METEOR's WordNet-synonym stage: unset = when NLTK's WordNet data is installed (never downloaded); "
          "`false` = exact + stem on every machine, so scores compare across machines (results record "
          "`meteor_matching`).", "scorers"),
        S("vocab_dir", ENV_VOCAB_DIR, str, DEFAULT_VOCAB_DIR,
          "Folder of the domain vocabularies DVO reads (`domsum build-vocab`).", "scorers"),
        S("sci_bertscore_model", "DOMSUM_SCI_BERTSCORE_MODEL", str, DEFAULT_SCI_BERTSCORE_MODEL,
          "medqsum: scientific BERTScore encoder.", "scorers"),
        S("sci_bertscore_layers", "DOMSUM_SCI_BERTSCORE_LAYERS", _int, None,
          "medqsum: scientific BERTScore layer.", "scorers", low=1),
        S("blanc_model", "DOMSUM_BLANC_MODEL", str, BLANC_MODEL, "medqsum: BLANC masked LM.", "scorers"),
        S("blanc_tune_epochs", "DOMSUM_BLANC_TUNE_EPOCHS", _int, None, "medqsum: BLANC-tune epochs.", "scorers", low=0),
        S("ppl_model", "DOMSUM_PPL_MODEL", str, PPL_MODEL, "medqsum: perplexity language model.", "scorers"),
        S("mauve_model", "DOMSUM_MAUVE_MODEL", str, MAUVE_MODEL, "medqsum: MAUVE featurizer.", "scorers"),
        S("metric_batch_size", "DOMSUM_METRIC_BATCH_SIZE", _int, 16, "medqsum: model batch size.", "scorers", low=1),
        S("medqsum_metrics", "DOMSUM_MEDQSUM_METRICS", _json_or_str, None,
          "medqsum: comma list of battery families to run (default all).", "scorers"),
        S("fm_variant", None, str, "zero", "FM: `zero` or `few` (the paper's in-context examples).", "scorers", choices=("zero", "few")),
        S("fm_weights", "DOMSUM_FM_WEIGHTS", _fm_weights, list(FM_FACET_WEIGHTS.values()),
          "FM: facet weights (background, method, result, conclusion), a JSON list of four numbers >= 0 or "
          "the path of the `fm_weights.json` that `domsum fm-weights` writes; default the paper's fit "
          "(Section 4.2). Renormalised over the facets a reference has; results record `fm_weights_used`.",
          "scorers"),
        S("fm_extract_max_tokens", "DOMSUM_FM_EXTRACT_MAX_TOKENS", _int, FM_EXTRACT_MAX_TOKENS,
          "FM: reply budget of one facet extraction (the release's 1024); lower it to bound the cost of a "
          "slow or rambling judge.", "scorers", low=1),
        S("fm_details", None, str, None, "FM: JSONL path receiving each document's facets and ratings.",
          "scorers"),
        # judge
        S("judge_model", "DOMSUM_JUDGE_MODEL", str, None,
          "Judge model; unset = no judge (judge metrics left out, never a surprise paid call).", "judge"),
        S("judge_base_url", "OPENAI_BASE_URL", str, None,
          "OpenAI-compatible endpoint of the judge; unset = the openai client's default.", "judge"),
        S("judge_concurrency", "DOMSUM_JUDGE_CONCURRENCY", _int, judge["concurrency"].default,
          "Judge requests in flight, fixed; unset = adapted per batch: starts at 8 (16 when 0.1 s pass "
          "without an answer), grows while answers stay near the fastest latency, trimmed to twice the "
          "server's width once a round trip shows a queue, halves on 429/503/timeouts (at most 64).",
          "judge", low=1),
        S("judge_cache", "DOMSUM_JUDGE_CACHE", str, DEFAULT_CACHE_PATH,
          "SQLite cache of judge replies (`off` disables).", "judge"),
        S("judge_logprobs", "DOMSUM_JUDGE_LOGPROBS", str, judge["logprobs"].default,
          "Score from the rating's token probabilities: on, off, auto.", "judge", choices=("on", "off", "auto", "true", "false", "1", "0", "yes", "no")),
        S("judge_n_samples", "DOMSUM_JUDGE_N_SAMPLES", _int, judge["n_samples"].default, "Sampled replies when logprobs are off.",
          "judge", low=1),
        S("judge_timeout", "DOMSUM_JUDGE_TIMEOUT", _float, judge["timeout"].default,
          "Seconds per judge request attempt, in total (connect, send and every read: a reply dripped "
          "byte by byte is cut too); unset = 3 x the slowest answer, at least 60 (requests sent before "
          "any answer wait up to 300).", "judge", low=0, low_open=True),
        S("judge_max_requests", "DOMSUM_JUDGE_MAX_REQUESTS", _int, judge["max_requests"].default,
          "Most judge requests one run sends; items beyond are not judged (counted as `budget_skipped`, "
          "NaN); re-run with a higher cap and the same cache to judge only those.", "judge", low=0),
        S("judge_price_prompt", "DOMSUM_JUDGE_PRICE_PROMPT", _float, judge["price_prompt"].default,
          "Price per 1,000 prompt tokens: the estimate printed before judging shows a cost.", "judge", low=0),
        S("judge_price_completion", "DOMSUM_JUDGE_PRICE_COMPLETION", _float, judge["price_completion"].default,
          "Price per 1,000 completion tokens (see `judge_price_prompt`).", "judge", low=0),
        S("judge_max_retries", "DOMSUM_JUDGE_MAX_RETRIES", _int, judge["max_retries"].default, "Retries on 429/5xx/timeouts.", "judge", low=0),
        S("judge_prompt_variant", "DOMSUM_JUDGE_PROMPT_VARIANT", str, "paper",
          "AdaptEval judge prompts: `paper` (Table 8; G-Eval for coherence and fluency), `release` "
          "(`gpt4-eval.py`) or `suite` (G-Eval layout for all three, score only).", "judge", choices=("paper", "release", "suite")),
        S("judge_api_key", "DOMSUM_JUDGE_API_KEY", str, None,
          "Judge key, environment only (else `OPENAI_API_KEY`); never written anywhere.", "judge", secret=True),
        # analysis commands
        S("token_shift_positions", "DOMSUM_TOKEN_SHIFT_POSITIONS", str, "paper",
          "`domsum token-shift` positions scored: `paper` (default; every summary position, as AdaptEval "
          "Section 4 describes) or `release` (the release's part-of-speech selection: the nouns, adjectives "
          "and verbs NLTK's tagger finds, by the release's word indices; needs NLTK's "
          "`averaged_perceptron_tagger_eng` data): the positions of the `*_all_positions` statistics; the "
          "plain `kl`, `shift_rate` are over the domain-vocabulary positions either way.",
          "analysis", choices=("paper", "release")),
        S("token_shift_samples", "DOMSUM_TOKEN_SHIFT_SAMPLES", _int, 10,
          "`domsum token-shift` documents drawn (seeded by `sample_seed`, file order kept) and averaged: "
          "default 10, the paper's Table 4 protocol (\"calculated over 10 samples\"); `0` = every document.",
          "analysis", low=0),
        S(FLIP_KEY, None, str, None,
          "Recorded by `domsum change-amplitude` in each run whose control it flipped on every document: "
          "that control. `domsum report` makes it part of the run's system and names such a run as left out "
          "(its scores are the study's, never the model's CCSBench row); not for ordinary runs.",
          "analysis", choices=ATTRIBUTES),
        # run behaviour
        S("preflight", "DOMSUM_PREFLIGHT", _bool, True,
          "Check encoders, vocabularies and the judge endpoint before any generation.", "run"),
        S("generations_dir", "DOMSUM_GENERATIONS_DIR", str, "~/.cache/domsum/generations",
          "Folder where judged tasks save their generations before judging starts (a samples file "
          "`domsum rescore` reads; `off` disables).", "run"),
        S("generation_journal", "DOMSUM_GENERATION_JOURNAL", str, "~/.cache/domsum/journal",
          "Folder of the generation journal: each generation of a suite task is committed as it finishes, "
          "keyed by the model's identity and the exact request, so the same command run again after an "
          "interruption generates only what is missing (docs/troubleshooting.md); `off` disables.", "run"),
        S("run_label", None, _label, None,
          "A name for the system this run evaluates: `domsum report` shows it in place of the model's "
          "folder name (`domsum report --label FOLDER=NAME` names a folder's runs after the fact). Runs given "
          "different names are reported as different systems; a run without one joins the one named system "
          "of its model and settings (docs/reports.md).", "run"),
        S("progress", PROGRESS_ENV, _bool, True,
          "Progress bars on stderr while metrics are scored (the commands' `--no-progress`).", "run"),
    ]


SETTINGS: dict[str, Setting] = {s.key: s for s in _rows()}


def _raw(metadata: Mapping[str, Any] | None, row: Setting) -> tuple[Any, str]:
    if not row.secret and metadata and metadata.get(row.key) not in (None, ""):
        return metadata[row.key], "metadata"
    if row.env and os.environ.get(row.env, "") != "":
        return os.environ[row.env], "environment"
    if row.key == "judge_api_key" and os.environ.get("OPENAI_API_KEY", "") != "":
        return os.environ["OPENAI_API_KEY"], "environment"
    return None, "default"


def resolve(metadata: Mapping[str, Any] | None, key: str, default: Any = None) -> Any:
    """The value of setting ``key``: metadata > environment > ``default`` or the row's default."""
    row = SETTINGS.get(key)
    if row is None:
        raise KeyError(f"unknown setting {key!r}; settings are listed in docs/settings.md (lm_eval_tasks/settings.py)")
    value, source = _raw(metadata, row)
    if source == "default":
        return row.default if default is None else default
    env = row.env if row.env and os.environ.get(row.env, "") != "" else "OPENAI_API_KEY"  # judge_api_key's fallback
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
#: domain's record, :mod:`lm_eval_tasks.benchmarks.own`), and lm-eval's
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
    Each field is filled from its row by the judge's namespace rule
    (:func:`custom_metrics.judge.config.setting_of`: ``judge_concurrency`` -> ``concurrency``).
    """
    from custom_metrics.judge import JudgeConfig, JudgeConfigError
    from custom_metrics.judge.config import FIELDS, setting_of

    model = overrides.pop("model", None) or resolve(metadata, "judge_model")
    if not model:
        return None
    kwargs: dict[str, Any] = {"model": str(model)}
    for name in FIELDS:
        key = setting_of(name)
        if name == "model" or key is None:
            continue
        if source_of(metadata, key) == "default" and name != "cache":
            continue  # JudgeConfig's own default (the row shows it)
        # the cache path is always passed: the judge package reads no environment variable
        try:
            kwargs[name] = resolve(metadata, key)
        except SettingError as exc:
            raise JudgeConfigError(str(exc)) from None
    if "cache" in kwargs and is_off(kwargs["cache"]):
        kwargs["cache"] = None
    if "logprobs" in kwargs:
        v = str(kwargs["logprobs"]).strip().lower()
        kwargs["logprobs"] = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}.get(v, v)
    kwargs.update({k: v for k, v in overrides.items() if v is not None})
    return JudgeConfig(**kwargs)


def is_off(value: Any) -> bool:
    """A folder or file setting switched off: empty, or one of the score cache's words
    (``off``, ``none``, ``false``, ``no``, ``0``), so every such setting reads them alike."""
    from custom_metrics.reference_cache import CACHE_OFF

    text = "" if value is None else str(value).strip().lower()
    return not text or text in CACHE_OFF


def markdown_table() -> str:
    """The settings table of docs/settings.md, generated from :data:`SETTINGS`."""
    lines = ["| metadata key | environment variable | type | default | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS.values():
        key = "(environment only)" if s.secret else f"`{s.key}`"
        env = f"`{s.env}`" if s.env else "–"
        if s.key == "judge_api_key":
            env += " / `OPENAI_API_KEY`"
        default = "–" if s.default is None else f"`{s.default}`"
        lines.append(f"| {key} | {env} | {s.type_name} | {default} | {s.doc} |")
    return "\n".join(lines)

"""The settings table: every row of the suite, collected from the code that declares it.

Why apart from the resolver (:mod:`lm_eval_tasks.settings`): the rows are declared by their
owners (a family beside its function, the judge beside ``JudgeConfig``, a benchmark in its
record, an analysis beside its code), and the owners' code resolves its values through the
resolver. A module that gathers the owners' declarations therefore cannot be one the
owners import: this table reads the owners' *declarations* (records, ``SETTING_ROWS``),
the resolver reads this table, and the owners' *behaviour* reads the resolver, so every
import runs one way. The rows no single owner has (the data mirror, the scorer device,
the journal) are declared here, as the run-wide rows.
"""

from __future__ import annotations

from custom_metrics import devices, registry
from custom_metrics.progress import ENV as PROGRESS_ENV
from custom_metrics.setting import Setting, arrange, as_bool, as_float, as_int, one_line
from custom_metrics.analysis import token_shift
from lm_eval_tasks.analysis import amplitude
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS

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


def markdown_table() -> str:
    """The settings table of docs/settings.md, generated from :data:`SETTINGS`."""
    head = ["| metadata key | environment variable | type | default | meaning |", "|---|---|---|---|---|"]
    return "\n".join(head + [s.table_row for s in SETTINGS.values()])


__all__ = ["ANALYSES", "GROUPS", "OWNER", "RUN_WIDE", "SETTINGS", "markdown_table"]

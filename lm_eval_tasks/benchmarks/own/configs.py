"""A user's own summarization domain, declared in plain harness YAML.

Why a record read from YAML: a researcher evaluates legal, clinical or support-ticket
summaries without editing the package. ``domsum new-task`` writes a folder of ordinary
lm-eval task YAML (see ``docs/own_domain.md``); its harness fields say where the data
is (``dataset_path`` ``json``/``csv`` with ``dataset_kwargs.data_files``, or a hub
dataset with ``dataset_name``), how many demonstrations (``num_fewshot``) and the
generation budget (``generation_kwargs``), and one block under ``metadata.domain`` says
what only the suite needs (field names, level, metric families, a prompt of the user's
own). :func:`spec_from_config` turns such a configuration into a catalogue row
(:class:`~lm_eval_tasks.benchmarks.record.TaskSpec` of benchmark :data:`BENCHMARK`) wherever one
is met: in the harness when the task is built, in ``domsum`` commands given the folder
(``--include_path``), and in the readers of results files, whose task configuration
holds the same fields. From then on the domain is one more catalogue subset, and every
command that works on a DomainSum domain works on it.

Prompts: DomainSum's zero- and two-shot prompts (Appendix B) unless the block gives
``prompt`` (zero-shot, with ``{document}``) or ``fewshot_prompt`` (with
``{example1_document}``, ``{example1_summary}``, ``{example2_document}``,
``{example2_summary}`` and ``{document}``). Demonstrations are drawn from the train
split per document, seeded, as DomainSum's are.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError
from lm_eval_tasks.benchmarks.own.record import RECORD as USER, RecordError

log = logging.getLogger(__name__)

#: the benchmark name of every user domain in the catalogue, results and reports
BENCHMARK = USER.name
#: the key under the YAML's ``metadata`` that holds the suite's part of the record
RECORD_KEY = "domain"
#: the families a new domain reports unless its block lists others (the user record's)
DEFAULT_FAMILIES = USER.families
#: ``dataset_path`` values read from local files; anything else is a hub dataset
FILE_FORMATS = ("json", "csv")
#: fields of the ``metadata.domain`` block, and what each means (the YAML's comments)
RECORD_FIELDS = {
    "name": "the domain's name in tables and file names",
    "level": "the group the domain belongs to in domain-stats and reports",
    "document_field": "the field (column) holding the source text",
    "summary_field": "the field (column) holding the reference summary",
    "id_field": "a field with a unique id per record (null: numbered by position)",
    "families": "metric families (domsum tasks, docs/metrics.md); judge families need a judge endpoint",
    "prompt": "null: DomainSum's zero-shot prompt; else a text with {document}",
    "fewshot_prompt": "null: DomainSum's two-shot prompt; else a text with {example1_document} ... {document}",
    "citation": "what a report cites for this domain's data",
}


@dataclass(frozen=True)
class DomainSource:
    """Where a user's domain comes from and how its records read.

    ``files`` maps a split to a local file (``format`` ``json`` or ``csv``); for a hub
    dataset (``format`` ``hub``) it maps a split to the hub split and ``hub_path`` /
    ``hub_name`` name the dataset.
    """

    name: str
    format: str
    files: tuple[tuple[str, str], ...]
    document_field: str = "document"
    summary_field: str = "summary"
    id_field: str | None = None
    hub_path: str | None = None
    hub_name: str | None = None
    prompt: str | None = None
    fewshot_prompt: str | None = None
    citation: str = ""
    #: the task YAML the record was read from ("" when unknown): its folder is the
    #: ``--include_path`` that finds the task again (fine-tuning's evaluation command)
    origin: str = ""

    @property
    def splits(self) -> dict[str, str]:
        return dict(self.files)

    def where(self, split: str) -> str:
        """The file (or hub split) of ``split``, for messages and provenance."""
        if self.format == "hub":
            return f"{self.hub_path}" + (f" ({self.hub_name})" if self.hub_name else "") + f" split {self.splits[split]!r}"
        return self.splits[split]


def _text(value: Any, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{where} must be a non-empty text, got {value!r}")
    return value


def spec_from_config(config: Mapping[str, Any], origin: str = "") -> Any:
    """The catalogue row of a user task from its harness configuration (a parsed YAML,
    or a task's configuration as a results file records it).

    ``origin`` (a YAML path) is where relative ``data_files`` are read from and what
    error messages name.
    """
    from lm_eval_tasks.benchmarks.own import BENCHMARK as OWN
    from lm_eval_tasks.benchmarks.record import TaskSpec

    task = config.get("task")
    where = f"task {task!r}" + (f" ({origin})" if origin else "")
    if not isinstance(task, str) or not task:
        raise RecordError(f"{origin or 'a task YAML'}: field 'task' must name the task")
    meta = config.get("metadata") or {}
    block = meta.get(RECORD_KEY) if isinstance(meta, Mapping) else None
    if not isinstance(block, Mapping):
        raise RecordError(f"{where}: metadata.{RECORD_KEY} must be a mapping (docs/own_domain.md)")
    unknown = sorted(set(block) - set(RECORD_FIELDS))
    if unknown:
        import difflib

        near = [m for k in unknown for m in difflib.get_close_matches(k, list(RECORD_FIELDS), n=1)]
        raise RecordError(f"{where}: metadata.{RECORD_KEY} has unknown field(s) {', '.join(unknown)}"
                          + (f"; did you mean {', '.join(near)}?" if near else "")
                          + f" (fields: {', '.join(RECORD_FIELDS)})")
    name = _text(block.get("name", task), f"{where}: metadata.{RECORD_KEY}.name")
    source = _source(config, block, name, where, origin)
    families = tuple(block.get("families") or DEFAULT_FAMILIES)
    check_families(families, where)
    gen = config.get("generation_kwargs") or {}
    try:
        shots = int(config.get("num_fewshot") or 0)
        max_gen = int(gen.get("max_gen_toks") or USER.gen_budget(""))
    except (TypeError, ValueError):
        raise RecordError(f"{where}: num_fewshot and generation_kwargs.max_gen_toks must be integers") from None
    if shots not in (0, 2):
        raise RecordError(f"{where}: num_fewshot {shots} is not available; a domain has zero-shot (0) and "
                          f"two-shot (2) prompts")
    until = gen.get("until") or ()
    until = (until,) if isinstance(until, str) else tuple(str(u) for u in until)
    return TaskSpec(name=task, benchmark=BENCHMARK, subset=name, shots=shots, variant="", families=families,
                    max_gen_toks=max_gen, until=until, level=str(block.get("level") or BENCHMARK),
                    source=source, record=OWN)


def _source(config: Mapping[str, Any], block: Mapping[str, Any], name: str, where: str,
            origin: str) -> DomainSource:
    path = config.get("dataset_path")
    kwargs = config.get("dataset_kwargs") or {}
    files = kwargs.get("data_files") if isinstance(kwargs, Mapping) else None
    fields = {k: _text(block.get(k, d), f"{where}: metadata.{RECORD_KEY}.{k}")
              for k, d in (("document_field", "document"), ("summary_field", "summary"))}
    common = dict(id_field=_text(block.get("id_field"), f"{where}: id_field", optional=True),
                  prompt=_text(block.get("prompt"), f"{where}: prompt", optional=True),
                  fewshot_prompt=_text(block.get("fewshot_prompt"), f"{where}: fewshot_prompt", optional=True),
                  citation=str(block.get("citation") or ""), origin=origin, **fields)
    label = f"{where}: metadata.{RECORD_KEY}."
    if path in FILE_FORMATS:
        if not isinstance(files, Mapping) or "test" not in files:
            raise RecordError(f"{where}: dataset_kwargs.data_files must map split names to files, with a "
                              f"'test' file at least (and 'train' for two-shot prompts and DVO)")
        return domain_source(name, str(path), files, label, base=Path(origin).parent if origin else None, **common)
    if not isinstance(path, str) or not path:
        raise RecordError(f"{where}: dataset_path must be json, csv or a hub dataset id")
    splits = files if isinstance(files, Mapping) else {"test": config.get("test_split") or "test", "train": "train"}
    return domain_source(name, "hub", splits, label, hub_path=path, hub_name=config.get("dataset_name"), **common)


def domain_source(name: str, format: str, files: Mapping[str, Any], label: str, *, base: Path | None = None,
                  **fields: Any) -> DomainSource:
    """The one place a :class:`DomainSource` is assembled, from a task YAML
    (:func:`spec_from_config`) or from ``domsum new-task``'s flags
    (:mod:`~lm_eval_tasks.benchmarks.own.folder`): local files resolved against ``base``
    (the YAML's folder; None: the working directory), hub splits kept as named, and each
    prompt checked for its ``{document}`` placeholder (``label`` + the field in the message).
    """
    for key in ("prompt", "fewshot_prompt"):
        text = fields.get(key)
        if text is not None and "{document}" not in text:
            raise RecordError(f"{label}{key} has no {{document}} placeholder")
    if format == "hub":
        return DomainSource(name=name, format="hub", files=tuple((str(s), str(v)) for s, v in files.items()),
                            **fields)
    root = base or Path.cwd()
    resolved = tuple((str(s), str((root / os.path.expanduser(str(f))).resolve())) for s, f in files.items())
    return DomainSource(name=name, format=format, files=resolved, **fields)


def check_families(families: tuple[str, ...], where: str) -> None:
    """Every family of a user's record exists; :class:`RecordError` naming the YAML and the
    close names otherwise."""
    from custom_metrics import registry

    for fam in families:
        try:
            registry.get(fam)
        except registry.UnknownFamily as exc:
            raise RecordError(f"{where}: {exc}") from None


def is_user_config(config: Mapping[str, Any]) -> bool:
    """Whether a task configuration declares a user domain (``metadata.domain``)."""
    meta = config.get("metadata")
    return isinstance(meta, Mapping) and isinstance(meta.get(RECORD_KEY), Mapping)


# --------------------------------------------------------------------------- records


# --------------------------------------------------------------------------- task YAMLs


def read_task_yaml(path: str | os.PathLike, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """A task YAML as lm-eval reads it: ``include:`` merged under the file's own keys
    (relative to the file), ``!function`` kept as its text (nothing is imported)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    path = Path(path).resolve()
    if str(path) in _seen:
        raise RecordError(f"{path}: include loop ({' -> '.join(_seen)})")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RecordError(f"{path}: not a readable task YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: a task YAML must be a mapping")
    include = data.pop("include", None)
    if include:
        base = read_task_yaml(path.parent / str(include), (*_seen, str(path)))
        data = {**base, **data}
    return data


def check_settings(config: Mapping[str, Any], where: str) -> None:
    """Every setting a task YAML's ``metadata`` holds (besides ``metadata.domain``) is a known
    setting of its type and range; :class:`RecordError` naming ``where`` (the YAML) otherwise.

    Why here and not only in the harness: the harness sees the YAML's metadata merged with
    ``--metadata`` and the model's arguments, after the model has loaded, and cannot say
    which of them holds the typo; read from the file, the typo is named with its file
    before anything loads, as a mistyped family is.
    """
    from lm_eval_tasks.settings import SettingError, check_metadata

    meta = config.get("metadata") or {}
    if not isinstance(meta, Mapping):
        return
    try:
        check_metadata({k: v for k, v in meta.items() if k != RECORD_KEY}, f"{where}: metadata")
    except SettingError as exc:
        raise RecordError(str(exc)) from None


def task_configs(folder: str | os.PathLike) -> list[tuple[Path, dict[str, Any]]]:
    """``(path, configuration)`` of every user-domain task YAML under ``folder``."""
    root = Path(os.path.expanduser(str(folder)))
    if not root.is_dir():
        raise RecordError(f"include path {root} is not a folder")
    out = []
    for path in sorted(root.rglob("*.yaml")):
        config = read_task_yaml(path)
        if is_user_config(config):
            out.append((path, config))
    return out

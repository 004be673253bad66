"""THE table of suite tasks: every leaf task and group, and the YAMLs generated from it.

Why one table: data loading, the harness adapter, fine-tuning, vocabulary building,
token shift, re-scoring and the results readers all need to know what a task name
means (benchmark, subset, level, demonstrations, variant, metric families, generation
budget, hub source). They look it up here with :func:`lookup` instead of parsing the
name, so a new task is one row and no consumer can disagree with another.

``python -m lm_eval_tasks.catalog`` (or ``domsum tasks --write-yaml``) regenerates
every task folder's YAMLs; a test checks that the committed YAMLs equal the output.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError
from lm_eval_tasks.benchmarks import adapteval, ccsbench, domainsum, medqsum, own, suite
from lm_eval_tasks.benchmarks.ccsbench.record import CONTROLS as CCSBENCH_CONTROLS
from lm_eval_tasks.benchmarks.record import Benchmark, TaskSpec, task_name

TASKS_DIR = Path(__file__).resolve().parent
log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- records

_OBJECTS: dict[str, Benchmark] = {b.name: b for b in (adapteval.BENCHMARK, ccsbench.BENCHMARK, domainsum.BENCHMARK,
                                                     medqsum.BENCHMARK, own.BENCHMARK)}
if _OBJECTS != suite.ALL_RECORDS:  # the packages above and the records below the settings (docs/architecture.md)
    raise ImportError("the benchmarks of catalog.py and of lm_eval_tasks/benchmarks/suite.py differ: "
                      f"{sorted(set(_OBJECTS) ^ set(suite.ALL_RECORDS)) or 'a package holds another record'}")
#: every benchmark of the suite (its facts and its behaviour's hooks), in table order
#: (:data:`lm_eval_tasks.benchmarks.suite.RECORDS`)
RECORDS: dict[str, Benchmark] = {name: _OBJECTS[name] for name in suite.RECORDS}
#: the suite's benchmarks and the user's, in the order reports list them
ALL_RECORDS: dict[str, Benchmark] = {name: _OBJECTS[name] for name in suite.ALL_RECORDS}
BENCHMARKS = tuple(RECORDS)
#: the benchmark of every user domain (task YAMLs written by ``domsum new-task``,
#: :mod:`lm_eval_tasks.benchmarks.own.configs`); its subsets are the user's domains
USER_BENCHMARK = own.BENCHMARK.name
#: the suite's benchmarks and the user's, in the order reports list them
ALL_BENCHMARKS = tuple(ALL_RECORDS)

# names the tools and tests use for the records' subsets (read from the records)
DOMAINSUM_LEVELS: dict[str, tuple[str, ...]] = dict(domainsum.BENCHMARK.levels)
ADAPTEVAL_DOMAINS = adapteval.BENCHMARK.subsets
CCSBENCH_SUBSETS = ccsbench.BENCHMARK.subsets
MEDQSUM_SUBSETS = medqsum.BENCHMARK.subsets


def record(benchmark: str) -> Benchmark:
    """The record of ``benchmark`` (the user's record for ``own``); an unknown name is a
    suite error naming the benchmarks."""
    try:
        return ALL_RECORDS[benchmark]
    except KeyError:
        raise UnknownTask(f"unknown benchmark {benchmark!r}; benchmarks: {', '.join(ALL_BENCHMARKS)}") from None


@dataclass(frozen=True)
class GroupSpec:
    """A group of tasks; the keys of ``families`` are averaged unweighted over members (as
    the papers report), or nothing is when empty (a group of mixed settings is a list, not
    a mean)."""

    name: str
    members: tuple[str, ...]
    families: tuple[str, ...] = field(default=())

    @property
    def metrics(self) -> tuple[str, ...]:
        return _metric_keys(self.families)


class UnknownTask(SuiteError, KeyError):
    """A task name the catalogue does not hold; the message lists the close ones."""

    def __str__(self) -> str:  # KeyError quotes its argument; ours is a sentence
        return str(self.args[0])


# --------------------------------------------------------------------------- the table


def _metric_keys(families: Iterable[str]) -> tuple[str, ...]:
    from custom_metrics.registry import family_keys

    return tuple(k for f in families for k in family_keys(f))


def _build() -> tuple[dict[str, TaskSpec], dict[str, GroupSpec]]:
    """Every record expanded: a task per variant and subset, a group per variant (per level
    where the variant's group names one), and the whole-benchmark list where declared."""
    tasks: dict[str, TaskSpec] = {}
    groups: dict[str, GroupSpec] = {}
    for rec in RECORDS.values():
        listed: list[str] = []  # the whole benchmark lists every group; it never averages them together
        for v in rec.variants:
            subsets = [s for s in rec.all_subsets() if v.subsets is None or s in v.subsets]
            parts = ({lv: [s for s in subs if s in subsets] for lv, subs in rec.levels.items()}
                     if v.group and "{level}" in v.group else {None: subsets})
            for level, members in parts.items():
                names = []
                for subset in members:
                    spec = TaskSpec(task_name(rec.name, subset, v.shots, v.variant), rec.name, subset, v.shots,
                                    v.variant, rec.task_families(subset, v), rec.gen_budget(subset),
                                    rec.stops(v.shots), rec.level_of(subset), record=rec)
                    tasks[spec.name] = spec
                    names.append(spec.name)
                if v.group:
                    name = v.group.format(level=level)
                    groups[name] = GroupSpec(name, tuple(names), rec.families)
                    listed.append(name)
        if rec.whole_group:
            groups[rec.name] = GroupSpec(rec.name, tuple(listed))
    return tasks, groups


_TABLE: tuple[dict[str, TaskSpec], dict[str, GroupSpec]] | None = None


def _table() -> tuple[dict[str, TaskSpec], dict[str, GroupSpec]]:
    global _TABLE
    if _TABLE is None:
        _TABLE = _build()
    return _TABLE


def register(spec: TaskSpec) -> TaskSpec:
    """Add a user domain's task (:mod:`lm_eval_tasks.benchmarks.own.configs`) to the table.

    Why: from then on every consumer that looks a task up (loading, scoring, rescoring,
    reports, domain statistics, fine-tuning) treats it as one more subset. A name the
    suite already uses is an error; registering the same user task again replaces it
    (its YAML may have been edited).
    """
    tasks = _table()[0]
    held = tasks.get(spec.name)
    if (held is not None and held.source is None) or spec.name in _table()[1]:
        raise UnknownTask(f"task {spec.name!r} is already a task or group of the suite; give your own "
                          f"domain another name")
    tasks[spec.name] = spec
    from lm_eval_tasks.data.user_files import register_source

    register_source(spec.benchmark, spec.subset, spec.source)
    return spec


def register_folder(folder: str | os.PathLike) -> list[Any]:
    """Register every user-domain task YAML under ``folder`` (what ``lm_eval --include_path
    FOLDER`` indexes) in the catalogue; a folder that does not exist is an error naming it."""
    from lm_eval_tasks.benchmarks.own.configs import check_settings, spec_from_config, task_configs

    specs = []
    for path, cfg in task_configs(folder):
        spec = spec_from_config(cfg, str(path))
        check_settings(cfg, f"task {spec.name!r} ({path})")
        specs.append(register(spec))
    return specs


def register_folders(folders: Iterable[str] | None = None) -> None:
    """Register the task folders ``folders`` (each value split at ``os.pathsep``), by default
    those of the ``include_path`` setting (``$DOMSUM_INCLUDE_PATH``).

    Why the entry points call this and the catalogue's lookups do not: the table of the
    suite reads no file by itself; ``domsum``, ``python -m finetune`` and ``domsum run``
    add the user's folders to it before they look a task up.
    """
    if folders is None:
        from lm_eval_tasks.settings import resolve

        folders = [resolve({}, "include_path") or ""]
    for folder in folders:
        for item in str(folder).split(os.pathsep):
            if item.strip():
                register_folder(item.strip())


def check_new_task(name: str) -> None:
    """A new user domain's name and its two-shot twin are none of the suite's tasks or groups
    (:class:`UnknownTask` naming the clash); what ``domsum new-task`` asks before it writes."""
    for task in (name, f"{name}_2shot"):
        if task in all_groups() or (task in all_tasks() and all_tasks()[task].source is None):
            raise UnknownTask(f"task name {task!r} is already one of the suite's (`domsum tasks`); choose another")


def all_tasks() -> dict[str, TaskSpec]:
    """Every leaf task, by name, in catalogue order."""
    return _table()[0]


def all_groups() -> dict[str, GroupSpec]:
    """Every group, by name."""
    return _table()[1]


def lookup(name: str) -> TaskSpec:
    """The leaf task called ``name``; an unknown name is an error listing close names."""
    tasks = all_tasks()
    if name in tasks:
        return tasks[name]
    import difflib

    close = difflib.get_close_matches(name, list(tasks) + list(all_groups()), n=5, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    if name in all_groups():
        raise UnknownTask(f"{name!r} is a group of the suite, not a task; its tasks: "
                          f"{', '.join(expand([name]))}")
    raise UnknownTask(f"unknown suite task {name!r}{hint} (`domsum tasks` lists all; a task of your own "
                      f"needs its folder: --include_path FOLDER or $DOMSUM_INCLUDE_PATH)")


def task_target(task: str) -> tuple[str, str]:
    """(benchmark, subset) of a suite task; an unknown name raises :class:`UnknownTask`."""
    spec = lookup(task)
    return spec.benchmark, spec.subset


def expand(names: Iterable[str]) -> list[str]:
    """Leaf task names of ``names`` (tasks kept, groups expanded recursively), in order."""
    out: list[str] = []
    for name in names:
        if name in all_groups():
            out.extend(t for t in expand(all_groups()[name].members) if t not in out)
        else:
            spec = lookup(name)
            if spec.name not in out:
                out.append(spec.name)
    return out


def select(benchmark: str | None = None, *, level: str | None = None, shots: int | None = None,
           variant: str | None = None, subsets: Sequence[str] | None = None) -> list[TaskSpec]:
    """Leaf tasks matching every given field."""
    return [t for t in all_tasks().values()
            if (benchmark is None or t.benchmark == benchmark) and (level is None or t.level == level)
            and (shots is None or t.shots == shots) and (variant is None or t.variant == variant)
            and (subsets is None or t.subset in subsets)]


def zero_shot(spec: TaskSpec) -> TaskSpec:
    """The zero-shot task of the same benchmark and subset as ``spec`` (what fine-tuning trains on)."""
    found = select(spec.benchmark, shots=0, variant="", subsets=(spec.subset,))
    if not found:
        raise UnknownTask(f"{spec.name}: the catalogue has no zero-shot task of {spec.benchmark}/{spec.subset}")
    return found[0]


def subsets(benchmark: str) -> tuple[str, ...]:
    """The subsets (domains) of a benchmark, in catalogue order."""
    seen: dict[str, None] = {}
    for t in all_tasks().values():
        if t.benchmark == benchmark:
            seen.setdefault(t.subset)
    if not seen:
        raise UnknownTask(f"unknown benchmark {benchmark!r}; the suite has {', '.join(BENCHMARKS)}")
    return tuple(seen)


def level_of(benchmark: str, subset: str) -> str | None:
    """DomainSum level of a subset (None for the other benchmarks)."""
    for t in all_tasks().values():
        if t.benchmark == benchmark and t.subset == subset:
            return t.level
    return None


def metric_keys(spec: TaskSpec) -> tuple[str, ...]:
    """Every metric key a task reports, in family order."""
    return _metric_keys(spec.families)


# --------------------------------------------------------------------------- records of a task


@dataclass
class Loaded:
    """A task's records of one split and what loading them found (for the results)."""

    spec: TaskSpec
    split: str
    docs: list[dict]
    report: dict[str, Any] = field(default_factory=dict)


def load_task(task: str | TaskSpec, split: str = "test", metadata: dict | None = None,
              shots: int | None = None) -> Loaded:
    """Records of ``split`` for ``task`` with the task's ``prompt`` and ``summary``.

    ``shots=0`` gives the zero-shot prompt of the same benchmark and subset (what
    fine-tuning trains on); None keeps the task's own. The prompts hold each document
    within the benchmark's word (or token) budget; fitting a prompt into the evaluated
    model's window happens per document when the harness renders it
    (:mod:`~lm_eval_tasks.benchmarks.budget`).
    """
    spec = lookup(task) if isinstance(task, str) else task
    n = spec.shots if shots is None else shots

    docs, report = spec.record.build_docs(spec, n, dict(metadata or {}), split)
    if "data_source" not in report:  # where the documents came from, for the report's provenance
        from lm_eval_tasks.data.loader import split_source

        report = {**report, "data_source": split_source(spec.benchmark, spec.subset, split,
                                                        (metadata or {}).get("data_dir"), hub=spec.hub_source)}
    from lm_eval_tasks.benchmarks import drop_empty

    kept, empty = drop_empty(docs)
    if empty:
        log.warning("%s: %d %s record(s) with an empty document or reference summary left out: %s",
                    spec.name, len(empty), split, ", ".join(empty[:10]) + (" ..." if len(empty) > 10 else ""))
        report = {**report, "skipped_empty": {"split": split, "count": len(empty), "ids": empty}}
    return Loaded(spec, split, kept, report)


def task_examples(task: str | TaskSpec, split: str = "test", metadata: dict | None = None,
                  shots: int | None = None) -> list[dict]:
    """The records of :func:`load_task` alone."""
    return load_task(task, split, metadata, shots).docs


# --------------------------------------------------------------------------- YAMLs

HEADER = ("# Generated from the benchmark records (lm_eval_tasks/benchmarks/) by lm_eval_tasks/catalog.py;\n"
          "# edit the record, not this file.\n")


def _yaml_list(items: Iterable[str], indent: str = "  ") -> str:
    """Block list of JSON-quoted strings (safe for newlines, colons, quotes)."""
    return "".join(f"{indent}- {json.dumps(x)}\n" for x in items)


def leaf_yaml(spec: TaskSpec) -> str:
    """A leaf: the benchmark's template, greedy ``generate_until``, the real shot count."""
    return (
        HEADER + f"include: _{spec.benchmark}_template_yaml\n"
        + f"task: {spec.name}\n"
        + (f"num_fewshot: {spec.shots}\n" if spec.shots else "")
        + "generation_kwargs:\n  until:\n" + _yaml_list(spec.until, "    ")
        + f"  max_gen_toks: {spec.max_gen_toks}\n  do_sample: false\n  temperature: 0.0\n"
    )


def group_yaml(group: GroupSpec) -> str:
    """A group; with metrics, each averaged over its members unweighted."""
    agg = "".join(f"  - metric: {m}\n    aggregation: mean\n    weight_by_size: false\n" for m in group.metrics)
    return (HEADER + f"group: {group.name}\ntask:\n" + _yaml_list(group.members)
            + ("aggregate_metric_list:\n" + agg if agg else "") + "metadata:\n  version: 2.0\n")


def template_yaml(benchmark: str) -> str:
    """What every leaf of a benchmark shares: the task class and the record fields."""
    return (
        HEADER + "# The task class loads the records itself (download()), from the mirror or the hub.\n"
        + "class: !function utils.SuiteTask\n"
        + "output_type: generate_until\n"
        + "test_split: test\n"
        + 'doc_to_text: "{{prompt}}"\n'
        + 'doc_to_target: "{{summary}}"\n'
        + ('description: "{{system}}"\n' if record(benchmark).system_prompt else "")
        + f"metadata:\n  version: {record(benchmark).version}\n"
        + f"  paper: {json.dumps(record(benchmark).citation)}\n"
    )


def folder_package(benchmark: str) -> dict[str, str]:
    """The Python files of a benchmark's task folder: the same glue for every benchmark, so
    generated with its YAMLs rather than written by hand for a new one."""
    return {
        "__init__.py": f'''"""Task folder {benchmark} (YAML configs and their glue in ``utils.py``), generated by
``python -m lm_eval_tasks.catalog``.

A regular package so that a wheel (``pip install .``, not only ``pip install -e .``)
carries ``utils.py``, whose class the YAMLs load with ``!function utils.SuiteTask``.
"""
''',
        "utils.py": '''"""Harness entry point of this task folder: the YAMLs name ``utils.SuiteTask``."""

from lm_eval_tasks.harness import SuiteTask  # noqa: F401
''',
    }


def rendered_yamls() -> dict[Path, str]:
    """Every generated file of the task folders (YAMLs, and each folder's package glue): path -> text."""
    out: dict[Path, str] = {}
    for bench in BENCHMARKS:
        out.update({TASKS_DIR / bench / name: text for name, text in folder_package(bench).items()})
        out[TASKS_DIR / bench / f"_{bench}_template_yaml"] = template_yaml(bench)
    for spec in all_tasks().values():
        if spec.source is None:  # a user's own task lives in the user's folder
            out[TASKS_DIR / spec.benchmark / f"{spec.name}.yaml"] = leaf_yaml(spec)
    for g in all_groups().values():
        out[TASKS_DIR / g.name.split("_")[0] / f"{g.name}.yaml"] = group_yaml(g)
    return out


def write_yamls() -> list[Path]:
    """Write every generated YAML; remove stale generated ones. Returns the written paths."""
    files = rendered_yamls()
    for bench in BENCHMARKS:
        for old in (TASKS_DIR / bench).glob("*.yaml"):
            if old not in files and old.read_text().startswith(HEADER):
                old.unlink()
    for path, text in files.items():
        path.parent.mkdir(exist_ok=True)  # a new benchmark's task folder
        path.write_text(text)
    return list(files)


def iter_tasks() -> Iterator[TaskSpec]:
    yield from all_tasks().values()


if __name__ == "__main__":
    for p in write_yamls():
        print(p.relative_to(TASKS_DIR))

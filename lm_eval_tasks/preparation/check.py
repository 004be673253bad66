"""Is every requested task's data there? Asked before a model loads.

Why: lm-eval builds the model before it builds the tasks, so a wrong ``data_dir``, a
missing split or an unreachable hub used to surface only after the model had loaded
(minutes for an 8B model). ``domsum run`` asks :func:`data_problems` for every suite and
user task of the command line first, and stops with one line per problem. The checks
are cheap: a mirror file's existence and its first record (the loader validates the
rest when the task loads), a registered hub source and a 3 s reachability probe. A
user domain's own files are read whole (they are the user's, and small next to a
model's load): a repeated id stops the run, a record with an empty document or summary
is one note line (it is left out and counted when the task loads).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from custom_metrics import registry
from lm_eval_tasks.catalog import TaskSpec
from lm_eval_tasks.data.loader import DEFAULT_FIELDS, DataError, json_lines, mirror_path, resolve_data_dir, \
    validate_record
from lm_eval_tasks.settings import resolve


def _mirror_problem(spec: TaskSpec, split: str, root: Any, metadata: Mapping[str, Any]) -> str | None:
    path = mirror_path(root, spec.benchmark, spec.subset, split)
    if not path.is_file():
        return (f"task {spec.name!r}: missing split {split!r}: expected {path} (data_dir {root}); prepare the "
                f"mirror with `domsum prepare-data --help`")
    check_fields = spec.record.check_fields if spec.record is not None else None
    try:
        for where, rec in json_lines(path, f"task {spec.name!r}: "):
            validate_record(rec, DEFAULT_FIELDS, where)
            if check_fields is not None:  # the benchmark's own columns (CCSBench's controls, full text)
                check_fields(spec, list(rec), dict(metadata), where)
            return None
    except DataError as exc:
        return str(exc)
    return f"task {spec.name!r}: {path} holds no records"


@lru_cache(maxsize=1)
def _hub_down() -> str | None:
    """The probe's answer, asked once per process however many tasks come from the hub."""
    from lm_eval_tasks.data.hub import unreachable

    return unreachable("the data of the requested tasks")


def _hub_problem(spec: TaskSpec) -> str | None:
    src = spec.hub_source
    if src is None:
        return (f"task {spec.name!r}: {spec.benchmark}/{spec.subset} has no hub source: set data_dir "
                f"(--metadata '{{\"data_dir\": \"DIR\"}}' or $DOMSUM_DATA_DIR) to a mirror holding it")
    from lm_eval_tasks.data.hub import OFFLINE_HINT, offline_mode, one_line

    if not offline_mode():
        return _hub_down()
    # offline, the libraries read their local cache: is the dataset there? (fails in about a second)
    try:
        import datasets

        datasets.load_dataset_builder(resolve({}, "hub_path") or src.path, src.name)
    except Exception as exc:  # not cached, or a broken cache
        return (f"task {spec.name!r}: {src.path} ({src.name}) is not in the local Hugging Face cache and the hub "
                f"is off (HF_HUB_OFFLINE): {one_line(exc)}; {OFFLINE_HINT}")
    return None


def _user_problems(spec: TaskSpec, notes: list[str]) -> list[str]:
    """A user domain's splits: a local file read whole (every bad line a problem, the first
    :data:`~lm_eval_tasks.data.records.BAD_LINES_SHOWN` in full; an empty record a note, as
    ``domsum new-task`` says them), a hub split by its first record."""
    from lm_eval_tasks.data.records import BAD_LINES_SHOWN, BadLines, capped
    from lm_eval_tasks.data.user_files import FieldInNoRecord, first_problem, read_split

    problems = []
    absent: set[tuple[str, str]] = set()
    vocabulary = any("vocabulary" in registry.get(f).needs for f in spec.families)  # built from the train split
    for split in ["test"] + (["train"] if spec.shots or vocabulary else []):
        if spec.source.format != "hub":
            try:
                # no task in the lines: a file that two tasks read (NAME, NAME_2shot) is said once
                records, empty = read_split(spec.source, split)
            except BadLines as exc:
                problems += capped(exc.problems, BAD_LINES_SHOWN, "bad line(s)")
                continue
            except FieldInNoRecord as exc:  # one line, not one per record, nor again for the train file
                if (exc.role, exc.name) not in absent:
                    problems.append(f"task {spec.name!r}: {exc}")
                absent.add((exc.role, exc.name))
                continue
            except DataError:
                records = []  # the file itself (missing, unreadable): said below with the task's name
            else:
                notes += capped(empty)
            if records:
                continue
        problem = first_problem(spec.source, split, spec.name)
        if problem:
            problems.append(problem)
    return problems


def data_problems(spec: TaskSpec, metadata: Mapping[str, Any] | None = None,
                  notes: list[str] | None = None) -> list[str]:
    """Why ``spec``'s data cannot be read, one line each (empty: it can, as far as a
    cheap check can tell); what is read but left out when the task loads (records with
    an empty document or summary) is added to ``notes``, one line each."""
    if spec.source is not None:
        return _user_problems(spec, [] if notes is None else notes)
    root = resolve_data_dir(resolve(dict(metadata or {}), "data_dir"))
    problem = _mirror_problem(spec, "test", root, metadata or {}) if root is not None else _hub_problem(spec)
    return [problem] if problem else []


def harness_data_problem(name: str, tasks: list[tuple[str, Mapping[str, Any]]]) -> str | None:
    """Why the data of ``name``, a task, group or tag of the harness's own (not the suite's),
    cannot be had, in one line; None when it can, as far as a cheap check can tell.

    Why: lm-eval loads a task's dataset after the model, so ``--tasks mine,hellaswag``
    offline loaded the model and then ended in a 35-line hub traceback. ``tasks`` are the
    ``(task, configuration)`` of its tasks; each hub dataset among them (``dataset_path``
    and ``dataset_name``; local files and folders are not checked) is looked up in the local
    Hugging Face cache when offline mode is on (about a millisecond each), else the hub's
    reachability is probed once.
    """
    from lm_eval_tasks.data.hub import offline_variables, one_line

    sources = list(dict.fromkeys(src for _, cfg in tasks if (src := _hub_dataset(cfg)) is not None))
    if not sources:
        return None
    what = f"task {name!r} is a harness task, not the suite's"
    offline = offline_variables()
    if not offline:
        found = _hub_probe()
        if found is None:
            return None
        host, reason = found
        return (f"{what}; its data ({_named(sources)}) comes from the hub, which cannot be reached ({host}: "
                f"{reason}): with {_OFFLINE_RERUN} it is read from the local Hugging Face cache if it was "
                f"downloaded before, or leave it out of --tasks")
    import datasets

    missing = []
    for path, config in sources:
        try:
            datasets.load_dataset_builder(path, config)
        except Exception as exc:  # noqa: BLE001 - not cached, or a broken cache
            missing.append(((path, config), one_line(exc)))
    if not missing:
        return None
    return (f"{what}; its data ({_named([m for m, _ in missing])}) is not in the local Hugging Face cache and "
            f"offline mode is on ({', '.join(offline)}): run it once where the hub is reachable, or leave it out "
            f"of --tasks ({missing[0][1]})")


#: what turns the libraries' offline mode on, said where the hub cannot be reached
_OFFLINE_RERUN = "HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1"


@lru_cache(maxsize=1)
def _hub_probe() -> tuple[str, str] | None:
    """The hub's reachability, probed once per process however many tasks ask."""
    from lm_eval_tasks.data.hub import down

    return down()


def _hub_dataset(config: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """``(dataset_path, dataset_name)`` of a harness task that reads a hub dataset, else None
    (no dataset, a local file or folder, a packaged builder such as ``json`` reading local files)."""
    from pathlib import Path

    path, config_name = config.get("dataset_path"), config.get("dataset_name")
    if not isinstance(path, str) or not path.strip() or Path(path).expanduser().exists():
        return None
    from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES

    if path in _PACKAGED_DATASETS_MODULES:
        return None
    return path, (config_name if isinstance(config_name, str) and config_name else None)


def _named(sources: list[tuple[str, str | None]], shown: int = 3) -> str:
    names = [path + (f" ({config})" if config else "") for path, config in sources]
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


__all__ = ["data_problems", "harness_data_problem"]

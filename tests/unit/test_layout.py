"""The project's layout rules, the ``domsum`` command, and every tool over every catalogue task.

Why: the harness adapter is the one place that may import ``lm_eval``, the metric
library must stay usable without the task suite, and the wheel ships no scripts or
tests; a task name means what the catalogue says in every tool that takes one.
"""

from __future__ import annotations

import ast
import configparser
import sys
from pathlib import Path

import pytest

from conftest import FIXTURE_DATA, ROOT
from lm_eval_tasks import catalog


PACKAGES = ("custom_metrics", "lm_eval_tasks", "finetune")
TASKS = list(catalog.all_tasks())


def _imports(path: Path) -> set[str]:
    """Every module a file imports (absolute names; relative ones resolved in the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _package_files() -> dict[str, set[str]]:
    return {p.relative_to(ROOT).as_posix(): _imports(p)
            for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py")) if "__pycache__" not in p.parts}


def _hits(imports: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in imports if any(m == r or m.startswith(r + ".") for r in roots))


def test_only_the_harness_adapter_imports_lm_eval():
    allowed = {"lm_eval_tasks/harness.py"} | {f"lm_eval_tasks/{b}/utils.py" for b in catalog.BENCHMARKS}
    offenders = {f: _hits(i, ("lm_eval",)) for f, i in _package_files().items() if f not in allowed}
    assert not {f: h for f, h in offenders.items() if h}
    for bench in catalog.BENCHMARKS:  # the task folders' glue is one import line
        code = [ln for ln in (ROOT / "lm_eval_tasks" / bench / "utils.py").read_text().splitlines()
                if ln.strip() and not ln.startswith(('"""', "#"))]
        assert code == ["from lm_eval_tasks.harness import SuiteTask  # noqa: F401"], bench


def test_metric_library_imports_no_suite_code():
    offenders = {f: _hits(i, ("lm_eval_tasks", "finetune", "tests", "helpers"))
                 for f, i in _package_files().items() if f.startswith("custom_metrics/")}
    assert not {f: h for f, h in offenders.items() if h}


def test_packages_import_no_tests_and_no_cli():
    offenders = {f: _hits(i, ("tests", "helpers", "conftest", "lm_eval_tasks.cli", "scripts"))
                 for f, i in _package_files().items()}
    assert not {f: h for f, h in offenders.items() if h}


def test_library_imports_no_command():
    """Commands sit on top of the library: nothing outside ``commands/`` (and the entry
    points that dispatch to them) imports a command module, and ``report/`` least of all.
    The package itself is the subcommand table, which the CLI reference is generated from."""
    entry_points = {"lm_eval_tasks/cli.py", "lm_eval_tasks/__main__.py"}
    table = {"lm_eval_tasks.commands", "lm_eval_tasks.commands.COMMANDS", "lm_eval_tasks.commands.build_parser"}
    offenders = {f: [m for m in _hits(i, ("lm_eval_tasks.commands",)) if m not in table]
                 for f, i in _package_files().items()
                 if not f.startswith("lm_eval_tasks/commands/") and f not in entry_points}
    assert not {f: h for f, h in offenders.items() if h}


def test_commands_are_thin():
    """A subcommand parses flags, resolves settings and calls one library function."""
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines())
             for p in (ROOT / "lm_eval_tasks" / "commands").glob("*.py")}
    from lm_eval_tasks.commands import COMMANDS

    assert sum(sizes.values()) <= 75 * len(COMMANDS), sizes  # a new command brings its own budget
    assert {n: k for n, k in sizes.items() if k > 150} == {}
    for path in (ROOT / "lm_eval_tasks" / "commands").glob("*.py"):  # no command imports another's logic
        hits = [m for m in _imports(path) if m.startswith("lm_eval_tasks.commands.")
                and m.split(".")[2] not in ("COMMANDS", "FLAG_ALIASES", "build_parser", "parse_metadata",
                                             "add_include_path", "with_flags")]
        assert not hits, (path.name, hits)


FAMILIES = ROOT / "custom_metrics" / "families"
#: what a family module may import at module level: the registry's record types and the
#: light text helpers its formula runs on (everything else inside the functions that use it)
FAMILY_MODULE_IMPORTS = ("custom_metrics.registry", "custom_metrics.errors", "custom_metrics.tokenize",
                         "custom_metrics.stopwords", "custom_metrics.setting", "custom_metrics.families")


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements that run on import (``if TYPE_CHECKING:`` blocks do not)."""
    out: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.extend(node.orelse)
        elif isinstance(node, (ast.If, ast.Try)):
            out.extend(n for block in (node.body, node.orelse, *(h.body for h in getattr(node, "handlers", ())))
                       for n in block)
        else:
            out.append(node)
    return out


def _declares_families(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets = [t for n in _module_level(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    return any(isinstance(t, ast.Name) and t.id == "METRIC_FAMILIES" for t in targets)


def test_metric_families_live_in_their_package_and_nothing_else_does():
    """The registry scans ``custom_metrics/families/`` only: a family declared elsewhere
    would be missing from the table, and another module there would be imported by
    every lookup."""
    declaring = {p.relative_to(ROOT).as_posix() for p in (ROOT / "custom_metrics").rglob("*.py")
                 if "__pycache__" not in p.parts and _declares_families(p)}
    in_package = {p.relative_to(ROOT).as_posix() for p in FAMILIES.glob("*.py") if p.name != "__init__.py"}
    assert declaring == in_package
    assert not [p for p in FAMILIES.iterdir() if p.is_dir() and p.name != "__pycache__"]  # no subpackages


def test_family_modules_import_heavy_machinery_only_where_they_use_it():
    """Building the table imports every family module: at module level each may import
    the standard library and the light core only, so that a ROUGE-only run loads no
    judge client, FM, statistics, scorer model or array library."""
    offenders = {}
    for path in sorted(FAMILIES.glob("*.py")):
        names = set()
        for node in _module_level(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names.add(node.module or "")
        bad = sorted(n for n in names if n.split(".")[0] not in sys.stdlib_module_names
                     and not any(n == a or n.startswith(a + ".") for a in FAMILY_MODULE_IMPORTS))
        if bad:
            offenders[path.name] = bad
    assert offenders == {}


#: the modules of the core, the only ones at the top level of custom_metrics/, and why each is core
CORE_MODULES = {
    "__init__": "the public names, each bound on first use from the module that defines it",
    "registry": "THE metric table: family records, scoring context, lookup over families/",
    "setting": "the settings row type each family, the judge and each benchmark declares its knobs with",
    "errors": "SuiteError, the base every package of the library raises from",
    "tokenize": "the papers' word tokenizers, shared by families and analysis",
    "stopwords": "the bundled NLTK stopword list, shared by DVO and the domain statistics",
    "cells": "the CSV/Markdown cell escapes every table writer uses",
    "outputs": "THE writer of output files, for every package and the harness side",
    "devices": "the one device the scorer models of a process run on",
    "hf_models": "lazy Hugging Face loading for the model-based families and the shift models",
    "model_cache": "the one bounded cache of loaded scorer models, released after scoring",
    "reference_cache": "BERTScore's on-disk reference embeddings: infrastructure, not a family (settings read it)",
    "progress": "the progress bar every long loop draws, families, judge and statistics alike",
    "secrets": "THE mask of keys, for the judge, FM and every written file",
    "battery": "runs a list of families (medqsum) for the harness and rescoring; not a family itself",
}
#: the packages beside the core: metric families, the judge and its pipelines, statistics
#: and corpus analysis, NLTK's bundled data
CORE_PACKAGES = {"families", "judge", "analysis", "nltk_data"}


def test_the_metric_library_top_level_is_the_core_and_the_packages_by_kind():
    """A module of another kind (a family, a judge pipeline, a statistic or corpus
    measure) at the top level would be one the layout does not explain: families/ is
    the only package the registry scans, judge/ holds what asks a judge, and analysis/
    imports the metrics and is never imported by them."""
    top = ROOT / "custom_metrics"
    modules = {p.stem for p in top.glob("*.py")}
    packages = {p.name for p in top.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert modules == set(CORE_MODULES)
    assert packages == CORE_PACKAGES
    assert all((top / pkg / "__init__.py").is_file() for pkg in CORE_PACKAGES - {"nltk_data"})


def test_every_public_name_of_the_metric_library_resolves_where_its_kind_lives():
    """``from custom_metrics import X`` keeps working whichever package X moved to; the
    names bound on first use resolve, and FM comes from the judge package, the domain
    measures and the token shift from analysis."""
    import custom_metrics

    assert len(custom_metrics.__all__) == len(set(custom_metrics.__all__))
    assert set(custom_metrics.__all__) <= set(dir(custom_metrics))
    homes = {}
    for name in custom_metrics.__all__:
        value = getattr(custom_metrics, name)
        homes[name] = getattr(value, "__module__", None)
    assert homes["fm_scores"] == "custom_metrics.judge.fm"
    assert homes["domain_measures"] == "custom_metrics.analysis.measures"
    assert homes["newsroom_fragments"] == "custom_metrics.analysis.fragments"
    assert homes["position_shift"] == "custom_metrics.analysis.token_shift"
    assert homes["rouge_scores"] == "custom_metrics.families.rouge"
    # every function or class is served from a core module or a package by kind
    top = {m.split(".")[1] for m in homes.values() if m and m.count(".") == 1}
    assert top and top <= set(CORE_MODULES) | CORE_PACKAGES, top


def test_no_module_over_500_lines():
    long = {p.relative_to(ROOT).as_posix(): n for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}


# ------------------------------------------------------------------ packaging


def test_setup_cfg_ships_no_scripts_and_one_command():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    include = cfg["options.packages.find"]["include"].split()
    assert not [p for p in include if p.split(".")[0] in ("scripts", "tests")]
    scripts = [ln.strip() for ln in cfg["options.entry_points"]["console_scripts"].splitlines() if ln.strip()]
    assert scripts == ["domsum = lm_eval_tasks.cli:main"]
    assert not (ROOT / "scripts" / "__init__.py").exists()
    wrappers = {"smollm2_checkpoint.py"}  # thin wrappers over the test kit, run from the checkout
    assert sorted(p.name for p in (ROOT / "scripts").glob("*.py") if p.name not in wrappers) == sorted(
        p.name for p in (ROOT / "scripts").glob("bench_*.py")), "scripts/ holds benchmarks and thin wrappers only"


@pytest.mark.parametrize("task", TASKS)
def test_name_lookups_agree_with_the_catalogue(task):
    from finetune.data import task_spec
    from lm_eval_tasks.catalog import task_target
    from lm_eval_tasks.rescoring.inputs import target_of
    from lm_eval_tasks.results import task_facts

    spec = catalog.lookup(task)
    # build-vocab (--task), token-shift (--task / samples name) and rescore share task_target
    assert task_target(task) == (spec.benchmark, spec.subset)
    assert target_of(task) == (spec.benchmark, spec.subset, None)
    assert task_facts(task) == (spec.benchmark, spec.subset, spec.level or spec.benchmark, spec.shots)
    assert task_spec(task) is spec


@pytest.mark.parametrize("task", TASKS)
def test_finetune_reads_every_task_from_the_fixture_mirror(task):
    from finetune.data import check_task, has_split, task_records

    spec = catalog.lookup(task)
    meta = {"data_dir": str(FIXTURE_DATA)}
    assert (FIXTURE_DATA / spec.benchmark / spec.subset / "train.jsonl").is_file()
    check_task(task, "train", meta)
    assert has_split(task, "validation", meta)
    recs = task_records(task, "train", meta)
    assert recs and all(r["prompt"] and r["summary"] for r in recs)
    # a few-shot task trains on the zero-shot prompt of its benchmark, subset and variant
    zero = catalog.select(spec.benchmark, shots=0, variant=spec.variant, subsets=(spec.subset,))[0]
    assert [r["prompt"] for r in recs] == [r["prompt"] for r in task_records(zero.name, "train", meta)]


def test_build_vocab_takes_every_task(tmp_path, capsys):
    from lm_eval_tasks.commands.build_vocab import main

    data = tmp_path / "data"
    for bench, subset in {(s.benchmark, s.subset) for s in catalog.all_tasks().values()}:
        (data / bench / subset).mkdir(parents=True)
        (data / bench / subset / "train.jsonl").write_text(f'{{"document": "{subset} words", "summary": "s"}}\n')
    args = [a for t in TASKS for a in ("--task", t)]
    assert main([*args, "--data-dir", str(data), "--vocab-dir", str(tmp_path / "vocab"), "--no-progress"]) == 0
    built = {p.relative_to(tmp_path / "vocab").as_posix() for p in (tmp_path / "vocab").rglob("*.tsv")}
    assert built == {f"{s.benchmark}/{s.subset}.tsv" for s in catalog.all_tasks().values()}
    capsys.readouterr()


def test_unknown_names_are_clear_errors(tmp_path, capsys):
    from finetune.data import check_task
    from lm_eval_tasks.catalog import task_target
    from lm_eval_tasks.commands.build_vocab import main as build_vocab
    from lm_eval_tasks.data.loader import DataError
    from lm_eval_tasks.rescoring.inputs import target_of

    with pytest.raises(catalog.UnknownTask, match=r"unknown suite task 'adapteval_arxv'.*adapteval_arxiv"):
        task_target("adapteval_arxv")
    with pytest.raises(catalog.UnknownTask, match="is a group of the suite"):
        task_target("domainsum_genre")
    with pytest.raises(DataError, match="unknown suite task 'domainsum_mars'.*domsum tasks"):
        check_task("domainsum_mars", "train", {"data_dir": str(FIXTURE_DATA)})
    benchmark, domain, why = target_of("cnn_dailymail")
    assert (benchmark, domain) == (None, None) and "unknown suite task 'cnn_dailymail'" in why
    with pytest.raises(SystemExit) as exc:
        build_vocab(["--task", "adapteval_arxv", "--vocab-dir", str(tmp_path)])
    assert exc.value.code == 2 and "did you mean adapteval_arxiv" in capsys.readouterr().err


def test_every_error_class_of_the_library_derives_from_the_one_base():
    """Library code raises typed errors with one base; only ``domsum`` prints them."""
    import importlib

    from custom_metrics.errors import SuiteError

    internal = {"InvalidReply"}  # a judge reply to retry, never leaves the judge package
    found = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name not in internal and any(
                        isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception")) or b.id == "SuiteError")
                        for b in node.bases):
                    module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                    found.append(getattr(importlib.import_module(module), node.name))
    assert len(found) >= 20
    assert [c.__qualname__ for c in found if not issubclass(c, SuiteError)] == []


def test_domsum_turns_a_suite_error_into_one_line_and_status_2(monkeypatch, capsys):
    import types

    from lm_eval_tasks import cli
    from lm_eval_tasks.settings import SettingError

    def main(argv):
        raise SettingError("'metric_batch_size' must be an int >= 1, got 0")

    monkeypatch.setitem(sys.modules, "fake_command", types.SimpleNamespace(main=main))
    monkeypatch.setitem(cli.COMMANDS, "tasks", ("fake_command", "x"))
    assert cli.main(["tasks"]) == 2
    err = capsys.readouterr().err
    assert err == "domsum tasks: error: 'metric_batch_size' must be an int >= 1, got 0\n"

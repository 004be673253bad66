"""No module outside ``lm_eval_tasks/benchmarks/`` holds a suite benchmark's, task's or group's
name as a string constant (docstrings, the generated task folders and the sample data aside).

Why: a name written in a command's default, a loader's registry or a preset table is a
second place a benchmark's fact lives; renaming or adding a benchmark then misses it. A
consumer holds the record (``spec.record``, ``suite.DOMAIN_STUDY``) and says ``.name``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGES = ("lm_eval_tasks", "finetune", "custom_metrics")

#: the modules that still hold a name, each to lose it: DomainSum's statistics and
#: correlations, the report's paper tables and layouts, and the metric library's measures
#: and battery, which name the benchmark whose conventions they follow
NAMES_LEFT = {
    "custom_metrics/analysis/domains.py", "custom_metrics/analysis/measures.py", "custom_metrics/battery.py",
    "lm_eval_tasks/analysis/domain_stats.py", "lm_eval_tasks/commands/domain_stats.py",
    "lm_eval_tasks/report/domain_correlation.py", "lm_eval_tasks/report/figures.py",
    "lm_eval_tasks/report/paper_layouts.py", "lm_eval_tasks/report/paper_tables.py",
}


def _names() -> set[str]:
    from lm_eval_tasks import catalog

    return set(catalog.BENCHMARKS) | {n for n, s in catalog.all_tasks().items() if s.benchmark in catalog.BENCHMARKS} \
        | {n for n in catalog.all_groups() if n.split("_")[0] in catalog.BENCHMARKS}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, kinds) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _holding(names: set[str]) -> dict[str, list[str]]:
    """Module path -> the names it holds as string constants (line: name)."""
    from lm_eval_tasks import catalog

    skipped = {"benchmarks", "sample_data", *catalog.BENCHMARKS}  # lm_eval_tasks/<benchmark>/: generated folders
    out: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if pkg == "lm_eval_tasks" and len(rel.parts) > 2 and rel.parts[1] in skipped:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docs = _docstrings(tree)
            found = [f"{node.lineno}: {node.value}" for node in ast.walk(tree) if isinstance(node, ast.Constant)
                     and isinstance(node.value, str) and id(node) not in docs and node.value in names]
            if found:
                out[rel.as_posix()] = sorted(found)
    return out


def test_the_scan_finds_a_name_and_skips_a_docstring():
    tree = ast.parse('"""domainsum"""\nX = "domainsum"\ndef f():\n    """adapteval"""\n    return "adapteval"\n')
    docs = _docstrings(tree)
    held = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs]
    assert held == ["domainsum", "adapteval"]


def test_no_module_outside_the_benchmarks_holds_a_benchmark_name():
    names = _names()
    assert {"domainsum", "adapteval", "ccsbench", "medqsum", "domainsum_genre"} <= names
    held = _holding(names)
    assert sorted(set(held) - NAMES_LEFT) == [], {m: held[m] for m in set(held) - NAMES_LEFT}
    assert sorted(NAMES_LEFT - set(held)) == []  # a module that lost its names leaves the list
